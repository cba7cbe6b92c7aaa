"""The link-wise discrete Lagrangian, the tree method's step on models with a ball joint (tree/linkwise.py): its
Newton matrix in tree form is the exact Jacobian of its rows (rope, free hub with ball branches, hinge chain,
springs, dampers and a loop), a rod keeps its spin, a rope of slender links keeps every link's spin at a step where
the chart midpoint's twist grows, a floating tree keeps its momentum, and it follows the maximal method at second
order."""

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.tree import articulated, linkwise, midpoint
from addon.solver.tree.ball_springs import so3_log
from addon.solver.tree.compile import PRIMITIVES, compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.step_charts import left_jacobian
from tools.generate import ball_chain
from tools.generate import pendulum_chain

from .test_ball_chains import tumbling_tree
from .test_step_charts import XI, spinning_rod


def spins(R1: np.ndarray, R2: np.ndarray, dt: float) -> np.ndarray:
    """Each rod's spin rate about its own axis (body Z, tools.generate.pendulum_chain) over a step, (nbody,)."""
    return so3_log(np.transpose(R1, (0, 2, 1)) @ R2)[:, 2] / dt


def test_inverse_left_jacobian_transpose_and_its_derivative():
    y = np.array([0.3, -1.2, 0.5])
    for xi in XI:
        JinvT = linkwise.inverse_left_jacobian_transpose(xi)
        assert np.allclose(JinvT @ left_jacobian(xi).T, np.eye(3), atol=1e-13)
        eps = 1e-6
        fd = np.column_stack([(linkwise.inverse_left_jacobian_transpose(xi + eps * e) @ y
                               - linkwise.inverse_left_jacobian_transpose(xi - eps * e) @ y) / (2 * eps)
                              for e in np.eye(3)])
        assert np.allclose(linkwise._dinv_transpose(xi, y), fd, atol=1e-8)


def _sprung_damped(mechanism):
    """The mechanism with springs (off their rest) and dampers on every joint: every forcing term counts."""
    joints = tuple(replace(j, stiffness=3.0, damping=0.4, rest=(0.1,) * len(PRIMITIVES[j.type]))
                   for j in mechanism.joints)
    return mechanism.replace(joints=joints)


@pytest.mark.parametrize("mechanism", [ball_chain(4), tumbling_tree(0), pendulum_chain(3),
                                       _sprung_damped(ball_chain(3)), _sprung_damped(tumbling_tree(1))],
                         ids=["rope", "free hub with ball branches", "hinge chain", "sprung damped rope",
                              "sprung damped free hub"])
def test_tree_form_newton_matrix_is_the_jacobian_of_the_rows(mechanism):
    model = compile_tree(mechanism)
    state = midpoint.initial_state(model)[0]
    dt = 0.01
    for _ in range(3):
        midpoint.step(model, state, 0.0025, use_native=False)
    rng = np.random.default_rng(0)
    p = state.p + rng.normal(size=state.p.shape)  # away from the solution: every term of the rows counts
    u = state.q + 0.3 * rng.normal(size=state.q.shape)
    k1 = forward(model, state.q, state.charts)

    def rows(v):
        forcing = midpoint.nonconservative_forces(model, (v - state.q) / dt, state.t + 0.5 * dt)
        return linkwise.rows(model, state.q, state.charts, p, k1, v, dt, state.t + 0.5 * dt, forcing)

    link = rows(u)
    J = articulated.dense(model, link.jacobian)
    eps = 1e-6
    fd = np.column_stack([(rows(u + eps * e).F - rows(u - eps * e).F) / (2 * eps) for e in np.eye(len(u))])
    assert np.max(np.abs(J - fd)) < 1e-8 * np.max(np.abs(J))
    # and the O(n) elimination solves it
    fac = articulated.factor(model, link.jacobian, np.ones(len(u), dtype=bool))
    assert np.allclose(articulated.solve(model, fac, link.F[:, None])[:, 0], np.linalg.solve(J, link.F), rtol=1e-9)


@pytest.mark.heavy
def test_floating_tree_keeps_its_momentum():
    # a free hub with two branches of ball-jointed boxes, no gravity (test_ball_chains.tumbling_tree, a fast
    # tumbler: steps of up to 0.2 rad); D2Ld's total wrench is the momentum the symmetry keeps
    model = compile_tree(tumbling_tree(0))
    state = midpoint.initial_state(model)[0]
    momenta = []
    dt = 0.0025
    for _ in range(100):
        q1, charts, p1, t = state.q.copy(), state.charts.copy(), state.p.copy(), state.t
        assert midpoint.step(model, state, dt, tol=1e-12, halvings=0).iterations <= 4
        u = q1 + dt * state.velocity_guess  # the step's unknowns (a chart's xi)
        momenta.append(linkwise.rows(model, q1, charts, p1, forward(model, q1, charts), u, dt, t + 0.5 * dt,
                                     np.zeros(model.nq)).momentum)
    momenta = np.array(momenta)
    for part in (momenta[:, :3], momenta[:, 3:]):
        assert np.max(np.abs(part - part[0])) < 1e-9 * np.linalg.norm(part[0])


def test_rod_on_a_ball_joint_keeps_its_spin():
    # 2.63 rad/s about its axis, tumbling; the axial Noether momentum is kept to Newton's tolerance (at tol 1e-10
    # the spin walks 9e-12 rad/s a step here); the chart midpoint of Euler angles drifted 7.1e-3 rad/s in 200 steps
    # at dt = 0.01
    model = compile_tree(spinning_rod())
    state = midpoint.initial_state(model)[0]
    dt = 0.04
    prev = forward(model, state.q, state.charts)
    axis0 = prev.body_R[0][:, 2].copy()
    spin, swept = [], 0.0
    for _ in range(60):
        assert midpoint.step(model, state, dt, tol=1e-12, halvings=0).iterations <= 4
        k = forward(model, state.q, state.charts)
        spin.append(spins(prev.body_R, k.body_R, dt)[0])
        swept = max(swept, float(np.arccos(np.clip(k.body_R[0][:, 2] @ axis0, -1, 1))))
        prev = k
    spin = np.array(spin)
    assert abs(spin[0]) > 2.0 and swept > 1.0
    assert np.max(np.abs(spin - spin[0])) < 1e-9


def test_20_link_rope_at_dt_001_keeps_every_spin_and_takes_every_step_whole():
    # the chart midpoint's rope twists from step 35 here and fails at step 41 (docs/benchmarks_ball_charts.md);
    # measured over 400 steps: 2 Newton iterations each, largest spin 1.6e-10 rad/s, energy band 1.5e-2 J
    model = compile_tree(ball_chain(20))
    state = midpoint.initial_state(model)[0]
    dt = 0.01
    prev = forward(model, state.q, state.charts)
    energies, worst = [], 0.0
    for _ in range(45):
        result = midpoint.step(model, state, dt, halvings=0)
        assert result.iterations == 2
        k = forward(model, state.q, state.charts)
        worst = max(worst, float(np.max(np.abs(spins(prev.body_R, k.body_R, dt)))))
        energies.append(result.energy)
        prev = k
    assert worst < 1e-8
    assert max(energies) - min(energies) < 1e-4 * abs(energies[0])


@pytest.mark.heavy
def test_linkwise_rope_follows_the_maximal_method_at_second_order():
    # measured on 5 links at t = 0.5 s: 3.0e-7 m (dt 0.01), 7.4e-8 (0.005), 1.9e-8 (0.0025)
    diffs = []
    for dt in (0.01, 0.005):
        steps = round(0.5 / dt)
        tree = make_integrator(ball_chain(5), "tree", dt)
        maximal = make_integrator(ball_chain(5), "maximal", dt)
        for _ in range(steps):
            tree.step()
            maximal.step()
        diffs.append(np.max(np.abs(tree.trajectory().poses[-1, :, :3] - maximal.trajectory().poses[-1, :, :3])))
    assert diffs[0] / diffs[1] > 3.0 and diffs[1] < 1e-6, diffs

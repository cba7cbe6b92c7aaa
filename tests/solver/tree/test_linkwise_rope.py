"""The link-wise discrete Lagrangian on trees (benchmarks/linkwise_rope.py, the decided fix of the rope twist): its
Newton matrix in tree form is the exact Jacobian of its rows (rope, free hub with ball branches, hinge chain), a rod
keeps its spin, a rope of slender links keeps every link's spin at a step where the chart midpoint's twist grows, a
floating tree keeps its momentum, and it follows the maximal method at second order."""

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.tree import articulated
from addon.solver.tree.compile import compile_tree
from benchmarks.linkwise_rope import (
    LinkwiseStepper,
    _dinv_transpose,
    inverse_left_jacobian_transpose,
    spins,
)
from benchmarks.maximal import ball_chain
from tools.generate import pendulum_chain

from .test_ball_chains import tumbling_tree
from .test_step_charts import XI, spinning_rod


def test_inverse_left_jacobian_transpose_and_its_derivative():
    from addon.solver.tree.step_charts import left_jacobian

    y = np.array([0.3, -1.2, 0.5])
    for xi in XI:
        JinvT = inverse_left_jacobian_transpose(xi)
        assert np.allclose(JinvT @ left_jacobian(xi).T, np.eye(3), atol=1e-13)
        eps = 1e-6
        fd = np.column_stack([(inverse_left_jacobian_transpose(xi + eps * e) @ y
                               - inverse_left_jacobian_transpose(xi - eps * e) @ y) / (2 * eps) for e in np.eye(3)])
        assert np.allclose(_dinv_transpose(xi, y), fd, atol=1e-8)


@pytest.mark.parametrize("mechanism", [ball_chain(4), tumbling_tree(0), pendulum_chain(3)],
                         ids=["rope", "free hub with ball branches", "hinge chain"])
def test_tree_form_newton_matrix_is_the_jacobian_of_the_rows(mechanism):
    stepper = LinkwiseStepper(compile_tree(mechanism))
    state = stepper.initial_state()
    for _ in range(5):
        stepper.step(state, 0.0025)
    rng = np.random.default_rng(0)
    state.p = state.p + rng.normal(size=state.p.shape)  # away from the solution: every term of the rows counts
    u = state.u + 0.3 * rng.normal(size=state.u.shape)
    k1 = stepper.kinematics(state)
    F, jac, _ = stepper.rows(state, u, 0.01, k1)
    J = articulated.dense(stepper.model, jac)
    eps = 1e-6
    fd = np.column_stack([
        (stepper.rows(state, u + eps * e, 0.01, k1)[0] - stepper.rows(state, u - eps * e, 0.01, k1)[0]) / (2 * eps)
        for e in np.eye(len(F))])
    assert np.max(np.abs(J - fd)) < 1e-8 * np.max(np.abs(J))
    # and the O(n) elimination solves it
    fac = articulated.factor(stepper.model, jac, np.ones(len(F), dtype=bool))
    assert np.allclose(articulated.solve(stepper.model, fac, F[:, None])[:, 0], np.linalg.solve(J, F), rtol=1e-9)


@pytest.mark.heavy
def test_floating_tree_keeps_its_momentum():
    # a free hub with two branches of ball-jointed boxes, no gravity (test_ball_chains.tumbling_tree, a fast
    # tumbler: steps of up to 0.2 rad); D2Ld's total wrench is the momentum the symmetry keeps. Measured over 150
    # steps at dt = 0.0025, tol 1e-12: relative drift 1e-11 (angular, linear)
    stepper = LinkwiseStepper(compile_tree(tumbling_tree(0)))
    state = stepper.initial_state()
    momenta = []
    for _ in range(150):
        stepper.step(state, 0.0025, tol=1e-12)
        momenta.append(state.momentum.copy())
    momenta = np.array(momenta)
    for part in (momenta[:, :3], momenta[:, 3:]):
        assert np.max(np.abs(part - part[0])) < 1e-9 * np.linalg.norm(part[0])


@pytest.mark.slow  # 17 s: 1000 numpy steps of the prototype
def test_rod_on_a_ball_joint_keeps_its_spin_over_1000_steps():
    # measured 1.6e-11 rad/s off its start over 1000 steps at dt = 0.01 (2.72 rad/s, tumbling)
    stepper = LinkwiseStepper(compile_tree(spinning_rod()))
    state = stepper.initial_state()
    dt = 0.01
    prev = stepper.kinematics(state)
    axis0 = prev.body_R[0][:, 2].copy()
    spin, swept = [], 0.0
    for _ in range(1000):
        assert stepper.step(state, dt) <= 3
        k = stepper.kinematics(state)
        spin.append(spins(prev.body_R, k.body_R, dt)[0])
        swept = max(swept, float(np.arccos(np.clip(k.body_R[0][:, 2] @ axis0, -1, 1))))
        prev = k
    spin = np.array(spin)
    assert abs(spin[0]) > 2.0 and swept > 1.0
    # the Noether momentum AXIAL * spin is kept to Newton's tolerance (1e-10 of momenta ~ 0.6 here, over AXIAL
    # 3e-7 rad/s a step at worst); the chart midpoint of Euler angles drifted 7.1e-3 rad/s in 200 of these steps
    assert np.max(np.abs(spin - spin[0])) < 1e-9


def test_20_link_rope_at_dt_001_keeps_every_spin_and_takes_every_step_whole():
    # the chart midpoint's rope twists from step 35 here and fails at step 41 (docs/benchmarks_ball_charts.md);
    # measured over 400 steps: 2 Newton iterations each, largest spin 1.6e-10 rad/s, energy band 1.5e-2 J
    stepper = LinkwiseStepper(compile_tree(ball_chain(20)))
    state = stepper.initial_state()
    dt = 0.01
    prev = stepper.kinematics(state)
    energies, worst = [], 0.0
    for _ in range(60):
        assert stepper.step(state, dt) == 2
        k = stepper.kinematics(state)
        worst = max(worst, float(np.max(np.abs(spins(prev.body_R, k.body_R, dt)))))
        energies.append(stepper.energy(prev, k, dt))
        prev = k
    assert worst < 1e-8
    assert max(energies) - min(energies) < 1e-4 * abs(energies[0])


@pytest.mark.heavy
def test_linkwise_rope_follows_the_maximal_method_at_second_order():
    # measured on 5 links at t = 0.5 s: 3.0e-7 m (dt 0.01), 7.4e-8 (0.005), 1.9e-8 (0.0025)
    diffs = []
    for dt in (0.01, 0.005):
        steps = round(0.5 / dt)
        stepper = LinkwiseStepper(compile_tree(ball_chain(5)))
        state = stepper.initial_state()
        for _ in range(steps):
            stepper.step(state, dt)
        maximal = make_integrator(ball_chain(5), "maximal", dt)
        for _ in range(steps):
            maximal.step()
        origins = stepper.kinematics(state).body_origin
        diffs.append(np.max(np.abs(origins - maximal.trajectory().poses[-1, :, :3])))
    assert diffs[0] / diffs[1] > 3.0 and diffs[1] < 1e-6, diffs

"""Long ball-joint chains (ropes) in the tree method: Newton on the chart rows, plain and in body axes.

The chart rows are F = J_L(xi)^T G (tree/lie_rows.py, per-step exponential charts). Newton on G = 0
(midpoint.body_frame_blocks) has the same roots; it is the fallback of midpoint.step after the last halving.
With the Euler charts these rows replaced, plain Newton overshot on ropes (20 links, dt = 0.005: 6-8
iterations a step) and a 1000-link chain's first step from rest diverged at any dt; the Euler midpoint also
gave every link a spurious spin about its own axis. The exponential charts' midpoint is equivariant, and
plain Newton takes 2 iterations a step there.
"""

from dataclasses import replace

import numpy as np
import pytest

from addon.solver import native
from addon.solver.integrator import simulate
from addon.solver.tree import articulated, midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.step_charts import left_jacobian
from tools.generate import ball_chain
from tools.generate import pendulum_chain

from .random_mechanisms import random_iterate, random_tree, rows_by_central_differences


def body_rows(model, state, Dh1, q2, lam, dt):
    """The DEL residual with every chart's rows in body axes, G = J_L(xi)^-T F."""
    f = midpoint.del_system(model, state, Dh1, q2, lam, dt).f.copy()
    at = (np.cumsum(~model.dof_prescribed) - 1)[model.ball_dofs]
    JL = left_jacobian(q2[model.ball_dofs])
    f[at] = np.linalg.solve(np.transpose(JL, (0, 2, 1)), f[at][..., None])[..., 0]
    return f


@pytest.mark.parametrize("seed, loops", [(0, 0), (1, 1), (7, 2)])
def test_body_frame_newton_matrix_is_the_jacobian_of_the_body_rows(seed, loops):
    # J_L^T dG/dx by central differences, at an iterate far from the root (the correction is ~ G there)
    model = compile_tree(random_tree(seed, loops=loops))
    dt = 0.01
    state, dyn, Dh1, q2, lam, system = random_iterate(model, seed, dt)
    nd, k = int(dyn.sum()), len(lam)
    plain = articulated.dense(model, system.jacobian)
    body = articulated.dense(model, replace(system.jacobian, blocks=midpoint.body_frame_blocks(model, system, nd)))
    assert np.max(np.abs(body - plain)) > 1e-3 * np.abs(plain).max()  # the correction is seen
    J = np.block([[body[np.ix_(dyn, dyn)], -system.G1.T], [system.G2, np.zeros((k, k))]])
    fd = rows_by_central_differences(lambda q, mu: body_rows(model, state, Dh1, q, mu, dt), q2, lam, dyn)
    at = (np.cumsum(dyn) - 1)[model.ball_dofs]
    JL = left_jacobian(q2[model.ball_dofs])
    for b, rows in enumerate(at):
        fd[rows] = JL[b].T @ fd[rows]
    np.testing.assert_allclose(J, fd, rtol=0, atol=1e-9 * np.abs(J).max())


@pytest.mark.heavy
def test_plain_and_body_frame_newton_find_the_same_steps_in_2_iterations():
    # the Euler-chart rows took 6-8 plain iterations a step here, their residual growing at every other iterate
    model = compile_tree(ball_chain(20))
    runs = {}
    for body_frame in (False, True):
        state, *_ = midpoint.initial_state(model)
        iterations = [midpoint.step(model, state, 0.005, use_native=False, body_frame=body_frame).iterations
                      for _ in range(20)]
        runs[body_frame] = (iterations, forward(model, state.q, state.charts).body_origin, state)
    assert max(runs[True][0]) <= 3 and max(runs[False][0]) <= 3, runs
    np.testing.assert_allclose(runs[True][1], runs[False][1], rtol=0, atol=1e-9)
    trace: list[float] = []
    midpoint.step(model, runs[False][2], 0.005, trace=trace)
    assert len(trace) <= 4 and all(b < 0.1 * a for a, b in zip(trace, trace[1:])), trace


@pytest.mark.slow
def test_first_step_of_a_1000_link_rope_from_rest():
    # plain Newton converges at the full step, quadratically (the Euler-chart rows diverged from their first
    # iterate, 3e14, and needed the body-axes fallback: 7 iterations)
    model = compile_tree(ball_chain(1000))
    state, *_ = midpoint.initial_state(model)
    trace: list[float] = []
    result = midpoint.step(model, state, 0.005, trace=trace, halvings=0)
    assert len(trace) == result.iterations + 1 <= 4 and all(b < 1e-3 * a for a, b in zip(trace, trace[1:])), trace
    assert state.t == 0.005


def test_revolute_chain_still_takes_2_iterations():
    traj = simulate(pendulum_chain(20), 0.01, 50, "tree")
    assert traj.status == "finished" and np.all(traj.newton_iterations == 2), traj.newton_iterations


@pytest.mark.slow
@pytest.mark.skipif(not native.NATIVE, reason="the C kernel is not built (make kernels)")
def test_200_link_rope_runs_and_follows_the_maximal_method():
    # before: failed at the first step, even halved 4 times
    dt, steps = 0.005, 20
    mech = ball_chain(200)
    tree = simulate(mech, dt, steps, "tree")
    maximal = simulate(mech, dt, steps, "maximal")
    assert tree.status == maximal.status == "finished", tree.message
    # energy: measured band 4.8e-6 of |E| = 1.7e5 J (the maximal method: 8e-8)
    assert np.ptp(tree.energy) < 2e-5 * abs(tree.energy[0])
    # positions: measured 9.4e-4 m at most, 5.3e-4 m after the first step, which falls ~ dt^2 (2.9e-5 m
    # after one step of dt / 4, with the Euler charts these exponential charts replaced); the maximal method
    # is within 4e-6 m of its own dt / 8 run.
    assert np.max(np.abs(tree.poses[:, :, :3] - maximal.poses[:, :, :3])) < 2e-3
    # Newton iterations summed over the half steps a step is redone as
    assert tree.newton_iterations.max() <= 150, tree.newton_iterations

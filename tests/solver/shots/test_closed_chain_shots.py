"""Shots of a closed chain (the four-bar, its loop closed by the coupler pin): the shipped four_bar_swing shot
converges and meets its keys, every loop row holds at every step, the solved crank torque replays through the
plain tree simulator, the linkage ends at rest, the NLP's exact Jacobian equals central differences, the
inverse-kinematics start path closes the loops, and a key outside the rocker's range fails naming itself."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import scipy.linalg

from addon.solver.integrator import simulate
from addon.solver.presets import list_shot_presets, shot_preset_path
from addon.solver.shots.mechanism_shots import (_nlp, _problem, initial_guess, key_errors, keyed_coordinates,
                                                solve_mechanism_shot, solved_trajectory, torque_mechanism)
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.spec import MechanismKey
from addon.solver.shots.tree_dynamics import interval_terms
from addon.solver.tree import constraints
from addon.solver.tree.kinematics import body_poses_batch, forward

ROCKER_RANGE = (-0.5522, 0.1451)  # rad, swept over a full crank turn (the key below lies outside it)


@pytest.fixture(scope="module")
def swing():
    shot = load_shot(shot_preset_path("four_bar_swing"))
    return shot, solve_mechanism_shot(shot)


def _loop_residuals(P, Q: np.ndarray) -> np.ndarray:
    """max |h| over every loop row (kept or dropped) at each configuration of Q."""
    return np.array([np.max(np.abs(constraints.evaluate(P.model, forward(P.model, q, P.tx.charts), False)[0]))
                     for q in Q])


def test_four_bar_shot_converges_and_meets_its_keys(swing):
    shot, result = swing
    assert "four_bar_swing" in list_shot_presets("mechanism")
    assert _problem(shot).tx.nr == 2  # a planar loop: two of the pin's five rows are independent
    assert result.status == "solved", result.report
    for key in shot.keys:
        assert result.key_errors[key.name] <= key.tolerance, (key.name, result.key_errors)
        assert abs(result.trajectory.q[key.frame, 1] - key.value) < 1e-6, key.name  # in the replay too
    u = result.controls["crank_pivot"]
    assert np.all(np.abs(u) <= 1.0 + 1e-9)
    # the exact Hessian takes the 6 iterations the differenced one took, to the same optimum, every KKT matrix
    # factorised by the stage recursion (no pivot block singular: none left to sparse LU, whatever the BLAS)
    assert result.iterations <= 6
    assert "stage recursion" in result.kkt and "sparse LU" not in result.kkt, result.kkt
    assert result.objective == pytest.approx(0.013014570993078851, rel=1e-7)


def test_every_loop_row_holds_at_every_step(swing):
    shot, result = swing
    P = _problem(shot)
    assert np.max(_loop_residuals(P, result.states)) <= 1e-9
    assert np.max(solved_trajectory(shot, result).constraint_residual) <= 1e-9
    assert np.max(result.trajectory.constraint_residual) <= 1e-9


def test_solved_torque_replays_through_the_tree_simulator(swing):
    """The crank torque keyed at the interval midpoints drives integrator.simulate(..., "tree"), which meets
    the same DEL and loop rows: every body position within 1e-8 m of the solved motion. The motion amplifies
    round-off (about 1.25x per step here: 1e-12 after the first steps, 1.4e-9 m at the end)."""
    shot, result = swing
    P = _problem(shot)
    run = simulate(torque_mechanism(shot, result), shot.dt, shot.steps, "tree", tol=1e-12)
    assert run.status == "finished", run.message
    solved = body_poses_batch(P.model, result.states,
                              np.broadcast_to(P.tx.charts, (shot.steps + 1,) + P.tx.charts.shape))
    assert np.max(np.abs(run.poses[..., :3] - solved[..., :3])) < 1e-8
    assert np.max(np.abs(run.q - result.states)) < 1e-7
    assert result.replay_error < 1e-8


def test_the_linkage_ends_at_rest(swing):
    """p_N = Dh(q_N)^T mu: the momentum after the last step has no component along the motions that keep the
    loop closed (it only pushes against the pin), while it had one at the start (the crank turning at 6 rad/s)."""
    shot, result = swing
    P = _problem(shot)
    Q, dt, N = result.states, shot.dt, shot.steps
    last = interval_terms(P.model, P.tx.charts, Q[N - 1], Q[N], (N - 1) * dt, dt)
    p_end = last.D2 + 0.5 * dt * np.eye(P.model.nq)[:, P.tx.actuated] @ result.controls["crank_pivot"][-1:]

    def free_part(q, p):
        Z = scipy.linalg.null_space(constraints.evaluate(P.model, forward(P.model, q, P.tx.charts))[1])
        return np.abs(Z.T @ p).max()

    assert free_part(Q[N], p_end) < 1e-10
    assert free_part(P.tx.q0, P.tx.p0) > 1e-3


@pytest.mark.heavy
def test_exact_jacobian_equals_central_differences_on_the_four_bar(swing):
    """DEL rows with the loop forces Dh^T lam, loop rows, rest rows with p_N = Dh^T mu and the key rows, at a
    point off the solution (random torques and multipliers, a closed start path shaken by 1e-2)."""
    shot, _ = swing
    P = _problem(replace(swing[0], steps=8, keys=(replace(shot.keys[1], frame=8),)))
    nlp = _nlp(P)
    rng = np.random.default_rng(3)
    x = initial_guess(P, keyed_coordinates(P)) + 1e-2 * rng.normal(size=P.tx.n)
    J = nlp.jacobian(x).toarray()
    eps = 1e-6
    fd = np.array([(nlp.constraints(x + eps * e) - nlp.constraints(x - eps * e)) / (2 * eps)
                   for e in np.eye(P.tx.n)]).T
    assert np.max(np.abs(fd)) > 0.5
    np.testing.assert_allclose(J, fd, rtol=0, atol=1e-7 * np.max(np.abs(fd)))
    mu = P.tx.mu_slice
    assert mu.stop - mu.start == 2 and np.any(J[:, mu] != 0)


@pytest.mark.heavy
def test_start_path_closes_the_loops_and_meets_the_keys(swing):
    """The warm start of a closed chain driven in its one independent coordinate: each keyed frame solved by
    inverse kinematics on the loop, the path eased between keys and projected onto h(q) = 0 at every step."""
    P = _problem(swing[0])
    Q = keyed_coordinates(P)
    assert Q is not None
    assert np.max(_loop_residuals(P, Q)) <= 1e-12
    for name, error in key_errors(P, Q).items():
        assert error < 1e-9, name


@pytest.mark.heavy
def test_key_outside_the_rockers_range_fails_naming_it(swing):
    shot, _ = swing
    far = MechanismKey("rocker too high", 20, coordinate="rocker_pivot", value=0.3)
    result = solve_mechanism_shot(replace(shot, keys=(far, shot.keys[1])), max_iter=5)
    assert result.status != "solved"
    line = result.report.splitlines()[1]
    assert "'rocker too high'" in line, result.report
    missed = float(re.search(r"(?:missed by|closer than) ([0-9.e+-]+)", line).group(1))
    assert abs(missed - (0.3 - ROCKER_RANGE[1])) < 2e-3, line
    assert result.trajectory is None

"""DMOC constraints of the tree model: slot derivatives of the discrete Lagrangian, the constraint
force derivative and the whole sparse Jacobian against central differences; the constraints vanish
on a trajectory the plain simulator produced with keyed torques."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Curve, MechanismError, Motor
from addon.solver.shots.tree_dynamics import (TreeTranscription, constraint_force_dq, interval_terms,
                                              transcribe_tree)
from addon.solver.tree import constraints
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward

from ..tree.random_mechanisms import random_tree

CHAIN_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "planar", "fixed", "revolute")


def _fd(fun, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences: (len(fun(x)), len(x))."""
    cols = []
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((fun(x + e) - fun(x - e)) / (2 * eps))
    return np.array(cols).T


def _model(seed: int, loops: int = 0, forces: bool = True):
    return compile_tree(random_tree(seed, types=CHAIN_TYPES, loops=loops, forces=forces))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interval_slot_derivatives_match_finite_differences(seed):
    model = _model(seed)
    rng = np.random.default_rng(seed)
    charts = np.array(model.ball_chart0)
    q1, q2 = rng.normal(size=model.nq), rng.normal(size=model.nq)
    dt, t1 = 0.05, 0.3
    it = interval_terms(model, charts, q1, q2, t1, dt)
    for name, fun, x in (
        ("D1_q1", lambda x: interval_terms(model, charts, x, q2, t1, dt).D1, q1),
        ("D1_q2", lambda x: interval_terms(model, charts, q1, x, t1, dt).D1, q2),
        ("D2_q1", lambda x: interval_terms(model, charts, x, q2, t1, dt).D2, q1),
        ("D2_q2", lambda x: interval_terms(model, charts, q1, x, t1, dt).D2, q2),
    ):
        fd = _fd(fun, x)
        scale = max(1.0, np.max(np.abs(fd)))
        np.testing.assert_allclose(getattr(it, name), fd, atol=1e-6 * scale, err_msg=name)


@pytest.mark.parametrize("seed", [0, 3])
def test_slots_are_the_gradients_of_the_midpoint_discrete_lagrangian(seed):
    """Without forcing, D1 = dLd/dq1 and D2 = dLd/dq2 for Ld = dt L((q1+q2)/2, (q2-q1)/dt)."""
    mech = random_tree(seed, types=CHAIN_TYPES, forces=False)
    mech = mech.replace(joints=tuple(replace(j, damping=0.0) for j in mech.joints))
    model = compile_tree(mech)
    rng = np.random.default_rng(seed + 10)
    charts = np.array(model.ball_chart0)
    q1, q2 = rng.normal(size=model.nq), rng.normal(size=model.nq)
    dt = 0.04

    def Ld(a, b):
        tr = terms(model, forward(model, 0.5 * (a + b), charts), (b - a) / dt, 0.0, second=False)
        return np.array([dt * (tr.kinetic - tr.potential)])

    it = interval_terms(model, charts, q1, q2, 0.0, dt)
    np.testing.assert_allclose(it.D1, _fd(lambda x: Ld(x, q2), q1)[0], atol=1e-6)
    np.testing.assert_allclose(it.D2, _fd(lambda x: Ld(q1, x), q2)[0], atol=1e-6)


@pytest.mark.parametrize("seed", [0, 5])
def test_constraint_force_derivative_matches_finite_differences(seed):
    model = _model(seed, loops=3)
    assert model.nrow > 0
    rng = np.random.default_rng(seed)
    charts = np.array(model.ball_chart0)
    q = rng.normal(size=model.nq)
    rows = np.arange(model.nrow)
    lam = rng.normal(size=model.nrow)

    def force(x):
        return constraints.evaluate(model, forward(model, x, charts))[1].T @ lam

    exact = constraint_force_dq(model, forward(model, q, charts), lam, rows)
    np.testing.assert_allclose(exact, _fd(force, q), atol=1e-6)


@pytest.mark.parametrize("rest_at_end", [False, True])
def test_shot_jacobian_matches_finite_differences(rest_at_end):
    model = _model(7, loops=2)
    rng = np.random.default_rng(1)
    nq = model.nq
    actuated = np.array([0, 2, nq - 1])
    charts = np.array(model.ball_chart0)
    q0, qd0 = rng.normal(size=nq), rng.normal(size=nq)
    p0 = terms(model, forward(model, q0, charts), qd0, 0.0, second=False).p
    shot = TreeTranscription(model, 0.05, 4, actuated, q0, qd0, p0, charts, np.array([0, 2, 4, 7]), rest_at_end)
    x = rng.normal(size=shot.n)
    c, J = shot.evaluate(x)
    assert J.shape == (shot.m, shot.n) and c.shape == (shot.m,)
    fd = _fd(lambda y: shot.evaluate(y, jacobian=False)[0], x)
    np.testing.assert_allclose(J.toarray(), fd, atol=1e-6 * max(1.0, np.max(np.abs(fd))))
    # the sparsity is the banded DMOC pattern: no DEL row touches a q two steps away
    dense = J.toarray()
    assert np.all(dense[:nq, shot.q_slice(3)] == 0.0)


def test_constraints_vanish_on_a_simulated_trajectory_with_keyed_torques():
    """Torques keyed at the interval midpoints drive the simulator; the DMOC residual of its q is ~ 0."""
    mech = load_mechanism("presets/double_pendulum.toml")
    dt, steps = 0.02, 50
    mid = (np.arange(steps) + 0.5) * dt
    torque = 2.0 * np.sin(3.0 * mid)
    hinge = mech.joints[1]
    keyed = replace(hinge, motor=Motor("torque", Curve(tuple(mid), tuple(torque))))
    mech = mech.replace(joints=(mech.joints[0], keyed))
    traj = simulate(mech, dt, steps)
    assert traj.status == "finished"
    model = compile_tree(mech.replace(joints=(mech.joints[0], hinge)))
    shot = transcribe_tree(model, dt, steps, np.array([1]))
    x = shot.pack(traj.q, torque[:, None])
    c, _ = shot.evaluate(x, jacobian=False)
    assert np.max(np.abs(c)) < 1e-9
    # and the torque is really felt: without it the residual is of the size of dt/2 * torque
    c0, _ = shot.evaluate(shot.pack(traj.q, np.zeros((steps, 1))), jacobian=False)
    assert np.max(np.abs(c0)) > 1e-3


def test_ball_joints_are_refused_with_the_joint_name():
    model = compile_tree(random_tree(0, types=("revolute", "ball")))
    with pytest.raises(MechanismError, match="'j1'.*ball"):
        transcribe_tree(model, 0.01, 10, np.array([0]))

"""Two independent writings of the tree DMOC agree: our rows, Jacobian and Hessian of the Lagrangian
(shots/tree_dynamics.py over tree_batch.py, tree_hessian.py, mechanism_shots.py) against the CasADi model of
benchmarks/shots_casadi_tree.py (kinematics composed from the primitives, velocities and the discrete
Lagrangian's slot derivatives by CasADi's differentiation), at random points of the closed-chain four-bar shot
and of a random 3-link tree with a loop, springs, dampers, a servo, a keyed torque and a keyed point force."""

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.model import Curve, Motor
from addon.solver.shots import mechanism_shots
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.tree_dynamics import TreeTranscription
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward
from benchmarks.shots_casadi_tree import mechanism_problem, tree_rows

from ..tree.random_mechanisms import random_tree

ca = pytest.importorskip("casadi")


def _random_transcription() -> TreeTranscription:
    mech = random_tree(11, types=("revolute", "prismatic", "revolute"), loops=1, forces=True)
    joints = list(mech.joints)
    joints[1] = replace(joints[1], motor=Motor("velocity", target_velocity=0.3, gain=0.7))
    joints[2] = replace(joints[2], motor=Motor("torque", Curve((0.0, 0.2), (1.0, -2.0))))
    forces = tuple(replace(f, scale=Curve((0.0, 0.2), (0.5, 1.5))) for f in mech.forces)
    model = compile_tree(mech.replace(joints=tuple(joints), forces=forces))
    assert model.nrow and len(model.force_frame) and model.dof_stiffness.any() and model.dof_damping.any()
    rng = np.random.default_rng(3)
    charts = np.array(model.ball_chart0)
    q0, qd0 = rng.normal(size=model.nq), rng.normal(size=model.nq)
    p0 = terms(model, forward(model, q0, charts), qd0, 0.0, second=False).p
    return TreeTranscription(model, 0.05, 4, np.array([0, 2]), q0, qd0, p0, charts, np.arange(model.nrow), True)


def _scale(a: np.ndarray) -> float:
    return max(1.0, float(np.max(np.abs(a))))


def test_casadi_del_rows_and_jacobian_equal_ours_on_a_random_tree():
    tx = _random_transcription()
    x = ca.SX.sym("x", tx.n)
    g = tree_rows(ca, tx, x)
    f = ca.Function("f", [x], [g, ca.jacobian(g, x)])
    rng = np.random.default_rng(4)
    for _ in range(3):
        point = rng.normal(size=tx.n)
        rows, jac = (np.asarray(ca.DM(v), float) for v in f(point))
        ours, our_jac = tx.evaluate(point)
        assert rows.shape == (tx.m, 1)
        assert np.max(np.abs(rows.ravel() - ours)) < 1e-10 * _scale(ours)
        assert np.max(np.abs(jac - our_jac.toarray())) < 1e-10 * _scale(jac)


def test_casadi_four_bar_shot_equals_ours_rows_keys_costs_bounds_and_hessian():
    """The closed-chain shot whole: DEL, loop and rest rows, keys, effort, bounds, and the Hessian of the
    Lagrangian (ours exact over jets, CasADi's by AD) at random points and multipliers."""
    shot = load_shot("four_bar_swing")  # shortened to 6 steps (keys at 3 and 6): the same rows, a cheaper test
    P = mechanism_shots._problem(replace(shot, steps=6, keys=(replace(shot.keys[0], frame=3),
                                                              replace(shot.keys[1], frame=6))))
    assert P.tx.nr and P.tx.rest_at_end
    nlp = mechanism_shots._nlp(P)
    problem, lbg, ubg, lbx, ubx = mechanism_problem(ca, P)
    assert np.array_equal(lbx, nlp.x_lower) and np.array_equal(ubx, nlp.x_upper)
    assert np.array_equal(lbg, nlp.c_lower) and np.array_equal(ubg, nlp.c_upper)
    x, y = problem["x"], ca.SX.sym("y", len(lbg))
    f = ca.Function("f", [x, y], [problem["f"], problem["g"], ca.hessian(problem["f"] + ca.dot(y, problem["g"]), x)[0]])
    rng = np.random.default_rng(5)
    for _ in range(2):
        point, mult = rng.normal(size=P.tx.n), rng.normal(size=len(lbg))
        obj, rows, hess = (np.asarray(ca.DM(v), float) for v in f(point, mult))
        ours = nlp.constraints(point)
        assert np.max(np.abs(rows.ravel() - ours)) < 1e-10 * _scale(ours)
        assert obj[0, 0] == pytest.approx(nlp.objective(point), rel=1e-12)
        H = nlp.hessian(point, mult, 1.0).toarray()
        assert np.max(np.abs(H - hess)) < 1e-9 * _scale(hess)

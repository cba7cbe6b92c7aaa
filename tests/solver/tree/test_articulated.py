"""The O(n) Newton direction (tree/articulated.py) against dense solves, and its operation count."""

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.model import Curve, Joint
from addon.solver.tree import articulated, midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward
from tools.generate import pendulum_chain

from .random_mechanisms import random_tree


def _iterate(model, seed: int, dt: float = 0.01):
    """A DEL system at a perturbed, unconverged iterate of the first step, with its dense Jacobian."""
    state, *_ = midpoint.initial_state(model)
    dyn = ~model.dof_prescribed
    Dh1 = state.Dh[state.rows][:, dyn]
    rng = np.random.default_rng(seed)
    q2 = state.q + dt * state.velocity_guess + 1e-2 * rng.normal(size=model.nq)
    q2[model.dof_prescribed] = state.q[model.dof_prescribed]
    lam = rng.normal(size=len(state.rows))
    system = midpoint.del_system(model, state, Dh1, q2, lam, dt)
    k = len(lam)
    J = np.block([[articulated.dense(model, system.jacobian)[np.ix_(dyn, dyn)], -system.G1.T],
                  [system.G2, np.zeros((k, k))]])
    return system, J, int(dyn.sum())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tree_form_equals_the_dense_newton_matrix(seed):
    # J11 = dt/4 (B + Q_q) + (A^T - A)/2 - M/dt - diag(c + gain)/2 from dynamics.terms' matrices (checked
    # against finite differences in test_dynamics.py) equals the tree form entry by entry, zeros included
    model = compile_tree(random_tree(seed, loops=2))
    rng = np.random.default_rng(seed)
    q, qd, dt = 0.5 * rng.normal(size=model.nq), rng.normal(size=model.nq), 0.013
    tm = terms(model, forward(model, q, np.array(model.ball_chart0)), qd, 0.2, second=True)
    J11 = 0.25 * dt * (tm.B + tm.Q_q) + 0.5 * (tm.A.T - tm.A) - tm.M / dt
    J11 -= 0.5 * np.diag(model.dof_damping + model.dof_motor_gain)
    np.testing.assert_allclose(articulated.dense(model, articulated.tree_jacobian(model, tm, dt)), J11,
                               rtol=0, atol=1e-12 * np.abs(J11).max())


def _prescribed_tree(seed: int, loops: int):
    """A random tree with every joint type whose first revolute joint follows a keyed curve."""
    mech = random_tree(seed, loops=loops)
    joints = list(mech.joints)
    i = next(i for i, j in enumerate(joints) if j.type == "revolute")
    joints[i] = replace(joints[i], prescribed=Curve((0.0, 1.0), (0.1, 0.4)))
    return replace(mech, joints=tuple(joints))


CASES = {
    "tree0": lambda: random_tree(0),
    "tree1_loops2": lambda: random_tree(1, loops=2),
    "tree3_loops3": lambda: random_tree(3, loops=3),
    "tree4_prescribed_loop": lambda: _prescribed_tree(4, loops=1),
    "tree5_prescribed": lambda: _prescribed_tree(5, loops=0),
    "chain_30": lambda: pendulum_chain(30),
}


@pytest.mark.parametrize("name", CASES)
def test_recursive_direction_equals_dense_solve(name):
    model = compile_tree(CASES[name]())
    for seed in range(3):
        system, J, nd = _iterate(model, seed)
        fac = articulated.factor(model, system.jacobian, ~model.dof_prescribed)
        delta = articulated.newton_direction(model, fac, system.f[:nd], system.f[nd:], system.G1, system.G2)
        ref = np.linalg.solve(J, -system.f)
        # solved to rounding: backward error at round-off, forward error within what the conditioning allows
        # (tree5_prescribed: cond 2e5, 2.7e-10 relative; the elimination is unpivoted, LU is not)
        assert np.max(np.abs(J @ delta + system.f)) <= 1e-12 * np.max(np.abs(J)) * np.max(np.abs(delta)), name
        assert np.max(np.abs(delta - ref)) <= max(1e-10, 1e-14 * np.linalg.cond(J)) * np.max(np.abs(ref)), name
        # and the single-right-hand-side solve is J11^-1 itself
        r = np.random.default_rng(seed).normal(size=(model.nq, 2))
        r[model.dof_prescribed] = 0.0
        x = articulated.solve(model, fac, r)
        J11 = articulated.dense(model, system.jacobian)
        dyn = ~model.dof_prescribed
        np.testing.assert_allclose(J11[np.ix_(dyn, dyn)] @ x[dyn], r[dyn], rtol=0,
                                   atol=1e-10 * np.abs(J11).max() * np.abs(x).max())
        assert np.all(x[model.dof_prescribed] == 0.0)


def test_least_squares_schur_keeps_multipliers_bounded_on_repeated_rows():
    # the same loop row twice: the Schur system is singular; least squares gives the minimum-norm split
    model = compile_tree(random_tree(1, loops=1))
    system, _, nd = _iterate(model, 0)
    G1, G2 = np.vstack([system.G1, system.G1[:1]]), np.vstack([system.G2, system.G2[:1]])
    f2 = np.append(system.f[nd:], system.f[nd])
    fac = articulated.factor(model, system.jacobian, ~model.dof_prescribed)
    step = articulated.newton_direction(model, fac, system.f[:nd], f2, G1, G2, least_squares=True)
    assert np.all(np.isfinite(step))
    assert abs(step[nd] - step[-1]) < 1e-8 * max(1.0, abs(step[nd]))  # the two copies share the impulse
    np.testing.assert_allclose(G2 @ step[:nd], -f2, atol=1e-10)


def _direction_flops(model) -> int:
    system, _, nd = _iterate(model, 0)
    articulated.OPS.clear()
    fac = articulated.factor(model, system.jacobian, ~model.dof_prescribed)
    articulated.newton_direction(model, fac, system.f[:nd], system.f[nd:], system.G1, system.G2)
    return articulated.OPS["flops"]


def test_operation_count_grows_linearly_in_n():
    sizes = (25, 50, 100, 200)
    per_link = [_direction_flops(compile_tree(pendulum_chain(n))) / n for n in sizes]
    assert max(per_link) == pytest.approx(min(per_link), rel=1e-12)  # exactly linear: the same work per link


def test_operation_count_with_loop_rows_is_linear_in_n_and_k():
    # an n-link chain whose last link is pinned to the world by a hinge (a planar loop: its independent rows)
    def pinned(n):
        mech = pendulum_chain(n)
        tip = mech.bodies[-1]
        pin = Joint("pin", "revolute", "world", tip.name, anchor=tuple(np.array(tip.position) + (0.5, 0.0, -0.5)),
                    axis=mech.joints[0].axis)
        return mech.replace(joints=mech.joints + (pin,))

    base = {n: _direction_flops(compile_tree(pendulum_chain(n))) for n in (20, 40, 80)}
    loop = {n: _direction_flops(compile_tree(pinned(n))) for n in (20, 40, 80)}
    extra = [(loop[n] - base[n]) / n for n in (20, 40, 80)]
    # each kept loop row adds one right-hand side: the same work per link for every n
    assert max(extra) == pytest.approx(min(extra), rel=1e-12) and min(extra) > 0

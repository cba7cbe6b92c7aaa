"""Exact derivatives of the tree Lagrangian terms against central finite differences."""

import numpy as np
import pytest

from addon.solver.tree import constraints
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward

from .random_mechanisms import random_tree

EPS = 1e-6


def _eval(model, q, qd, charts, second=False):
    return terms(model, forward(model, q, charts), qd, 0.3, second=second)


def _fd(fun, x):
    cols = []
    for k in range(len(x)):
        e = np.zeros_like(x)
        e[k] = EPS
        cols.append((fun(x + e) - fun(x - e)) / (2 * EPS))
    return np.array(cols).T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lagrangian_derivatives_match_finite_differences(seed):
    model = compile_tree(random_tree(seed, loops=2))
    rng = np.random.default_rng(seed + 10)
    q = rng.normal(size=model.nq) * 0.5
    qd = rng.normal(size=model.nq)
    charts = np.array(model.ball_chart0)
    T = _eval(model, q, qd, charts, second=True)

    def kinetic_q(x):
        return _eval(model, x, qd, charts).kinetic

    def potential_q(x):
        return _eval(model, x, qd, charts).potential

    # first derivatives of scalar energies
    g_fd = _fd(lambda x: np.array([kinetic_q(x)]), q)[0]
    np.testing.assert_allclose(T.g, g_fd, atol=1e-7, rtol=1e-7)
    Q_fd = -_fd(lambda x: np.array([potential_q(x)]), q)[0]
    # user force is not part of `potential`, so compare gravity+springs by removing it: use Q_q instead below
    p_fd = _fd(lambda x: np.array([_eval(model, q, x, charts).kinetic]), qd)[0]
    np.testing.assert_allclose(T.p, p_fd, atol=1e-7, rtol=1e-7)
    # second derivatives
    np.testing.assert_allclose(T.M, _fd(lambda x: _eval(model, q, x, charts).p, qd), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(T.A, _fd(lambda x: _eval(model, x, qd, charts).p, q), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(T.B, _fd(lambda x: _eval(model, x, qd, charts).g, q), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(T.Q_q, _fd(lambda x: _eval(model, x, qd, charts).Q, q), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(T.M, T.M.T, atol=1e-12)
    np.testing.assert_allclose(T.B, T.B.T, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(T.M) > 0)
    assert np.isfinite(Q_fd).all()


def test_gravity_generalized_force_is_minus_potential_gradient():
    model = compile_tree(random_tree(4, forces=False))
    rng = np.random.default_rng(3)
    q = rng.normal(size=model.nq)
    charts = np.array(model.ball_chart0)
    T = _eval(model, q, np.zeros(model.nq), charts)
    grad = _fd(lambda x: np.array([_eval(model, x, np.zeros(model.nq), charts).potential]), q)[0]
    np.testing.assert_allclose(T.Q, -grad, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 5])
def test_constraint_jacobian_matches_finite_differences(seed):
    model = compile_tree(random_tree(seed, loops=3))
    assert model.nrow > 0
    q = np.random.default_rng(seed).normal(size=model.nq)
    charts = np.array(model.ball_chart0)
    _, Dh = constraints.evaluate(model, forward(model, q, charts))
    fd = _fd(lambda x: constraints.evaluate(model, forward(model, x, charts), jacobian=False)[0], q)
    np.testing.assert_allclose(Dh, fd, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 3])
def test_frame_velocities_and_axes_match_finite_differences_of_poses(seed):
    from addon.solver.tree.kinematics import frame_velocities

    model = compile_tree(random_tree(seed))
    rng = np.random.default_rng(seed)
    q, qd = rng.normal(size=model.nq), rng.normal(size=model.nq)
    charts = np.array(model.ball_chart0)
    kin = forward(model, q, charts)
    V = frame_velocities(model, kin, qd)
    dM = (forward(model, q + EPS * qd, charts).world_M_frame - forward(model, q - EPS * qd, charts).world_M_frame)
    twist_hat = (dM / (2 * EPS)) @ np.linalg.inv(kin.world_M_frame)
    omega = np.stack([twist_hat[:, 2, 1], twist_hat[:, 0, 2], twist_hat[:, 1, 0]], axis=1)
    np.testing.assert_allclose(V[:, :3], omega, atol=1e-7)
    np.testing.assert_allclose(V[:, 3:], twist_hat[:, :3, 3], atol=1e-7)

"""Continuous forward dynamics of a TreeModel and the classical RK4 integrator on it (the baseline).

Seed 000 eqs. (28)-(29) and (36): M qddot = dT/dq + Q + f_c - A qdot, with loop constraints
enforced only at the acceleration level, [M Dh^T; Dh 0] [qddot; mu] = [rhs; -dDh/dt qdot], so
constraint drift and energy drift are left in: that is what this baseline is for. dDh/dt qdot is
taken by a central difference of Dh along qdot. Prescribed coordinates are not supported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import constraints
from .compile import TreeModel
from .dynamics import terms
from .kinematics import Kinematics, fold_charts, forward
from .midpoint import nonconservative_forces


@dataclass
class RK4State:
    t: float
    q: np.ndarray
    qd: np.ndarray
    charts: np.ndarray


def acceleration(model: TreeModel, q: np.ndarray, qd: np.ndarray, t: float, charts: np.ndarray) -> np.ndarray:
    """qddot (nq,) of the constrained continuous dynamics at (q, qd, t)."""
    if model.dof_prescribed.any():
        raise ValueError("the RK4 baseline does not support prescribed joints; use the 'tree' method")
    kin = forward(model, q, charts)
    tm = terms(model, kin, qd, t, second=True)
    rhs = tm.g + tm.Q + nonconservative_forces(model, qd, t) - tm.A @ qd
    if model.nrow == 0:
        return np.linalg.solve(tm.M, rhs)
    _, Dh = constraints.evaluate(model, kin)
    eps = 1e-6 / max(1.0, float(np.max(np.abs(qd))))
    _, Dh_plus = constraints.evaluate(model, forward(model, q + eps * qd, charts))
    _, Dh_minus = constraints.evaluate(model, forward(model, q - eps * qd, charts))
    gamma = (Dh_plus - Dh_minus) @ qd / (2 * eps)
    n, m = model.nq, model.nrow
    K = np.zeros((n + m, n + m))
    K[:n, :n] = tm.M
    K[:n, n:] = Dh.T
    K[n:, :n] = Dh
    sol, *_ = np.linalg.lstsq(K, np.concatenate([rhs, -gamma]), rcond=None)
    return sol[:n]


def rk4_step(model: TreeModel, state: RK4State, dt: float) -> None:
    """Advance state by one classical RK4 step of size dt, then fold ball charts."""
    q, qd, t, ch = state.q, state.qd, state.t, state.charts
    k1q, k1v = qd, acceleration(model, q, qd, t, ch)
    k2q, k2v = qd + 0.5 * dt * k1v, acceleration(model, q + 0.5 * dt * k1q, qd + 0.5 * dt * k1v, t + 0.5 * dt, ch)
    k3q, k3v = qd + 0.5 * dt * k2v, acceleration(model, q + 0.5 * dt * k2q, qd + 0.5 * dt * k2v, t + 0.5 * dt, ch)
    k4q, k4v = qd + dt * k3v, acceleration(model, q + dt * k3q, qd + dt * k3v, t + dt, ch)
    state.q = q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
    state.qd = qd + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    state.t = t + dt
    if len(model.ball_dofs):
        charts, J = fold_charts(model, state.q, ch)
        for b, dofs in enumerate(model.ball_dofs):
            state.qd[dofs] = np.linalg.solve(J[b], state.qd[dofs])
            state.q[dofs] = 0.0
        state.charts = charts


def rk4_energy(model: TreeModel, state: RK4State, kin: Kinematics) -> float:
    tm = terms(model, kin, state.qd, state.t, second=False)
    return tm.kinetic + tm.potential

"""Classical RK4 on the continuous SE(3) equations of a holonomic vehicle: the baseline of seed 001 §3.3.

Quaternion attitude renormalised after every stage and every step, as the seed's comparison did.
State (quat (..., 4) w x y z, x (..., 3), xi (..., 6) body twist); dynamics I xi' = ad_xi^T I xi + f
(seed eq. 8), R' = R hat(w), x' = R v (eq. 7). Owns nothing the variational step uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import groups
from ..lie import cross, matrix_to_quat, quat_to_matrix
from .holonomic import HolonomicModel


@dataclass
class RK4State:
    t: float
    quat: np.ndarray
    x: np.ndarray
    xi: np.ndarray

    def pose(self) -> np.ndarray:
        """Pose matrices (..., 4, 4)."""
        return groups.se3_element(quat_to_matrix(self.quat), self.x)


def start(g0: np.ndarray, xi0: np.ndarray, t0: float = 0.0) -> RK4State:
    g0 = np.asarray(g0, dtype=float)
    return RK4State(float(t0), matrix_to_quat(g0[..., :3, :3]), g0[..., :3, 3].copy(), np.array(xi0, dtype=float))


def _normalise(q: np.ndarray) -> np.ndarray:
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _derivative(model: HolonomicModel, t: float, q: np.ndarray, x: np.ndarray, xi: np.ndarray):
    R = quat_to_matrix(q)
    f, _ = model.wrench(t, groups.se3_element(R, x), xi)
    mu = xi @ model.inertia
    xi_dot = (np.einsum("...ji,...j->...i", groups.se3_ad(xi), mu) + f) @ model.inertia_inv
    w, qv = xi[..., :3], q[..., 1:]
    q_dot = 0.5 * np.concatenate([-np.sum(qv * w, -1, keepdims=True), q[..., :1] * w + cross(qv, w)], -1)
    x_dot = np.einsum("...ij,...j->...i", R, xi[..., 3:])
    return q_dot, x_dot, xi_dot


def step(model: HolonomicModel, state: RK4State, h: float) -> None:
    """One RK4 step of size h; the quaternion is renormalised at every stage and at the end."""
    t, q, x, xi = state.t, state.quat, state.x, state.xi
    k1 = _derivative(model, t, q, x, xi)
    k2 = _derivative(model, t + h / 2, _normalise(q + h / 2 * k1[0]), x + h / 2 * k1[1], xi + h / 2 * k1[2])
    k3 = _derivative(model, t + h / 2, _normalise(q + h / 2 * k2[0]), x + h / 2 * k2[1], xi + h / 2 * k2[2])
    k4 = _derivative(model, t + h, _normalise(q + h * k3[0]), x + h * k3[1], xi + h * k3[2])
    incr = [h / 6 * (a + 2 * b + 2 * c + d) for a, b, c, d in zip(k1, k2, k3, k4)]
    state.quat = _normalise(q + incr[0])
    state.x = x + incr[1]
    state.xi = xi + incr[2]
    state.t = t + h


def energy(model: HolonomicModel, state: RK4State) -> np.ndarray:
    return 0.5 * np.sum(state.xi * (state.xi @ model.inertia), -1) + model.potential(state.pose())


def spatial_momentum(model: HolonomicModel, state: RK4State) -> np.ndarray:
    mu = state.xi @ model.inertia
    return np.einsum("...ji,...j->...i", groups.se3_Ad(groups.se3_inverse(state.pose())), mu)

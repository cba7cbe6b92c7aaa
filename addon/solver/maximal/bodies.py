"""Rigid bodies in maximal coordinates: batched quaternion algebra, the discrete rotation update and
the per-body inertial terms of seed 003's discrete Euler-Lagrange equations.

State of body i (seed 003 §3.1): centre-of-mass position x (world), unit
quaternion q = (w, x, y, z) body-to-world, and the velocities on the interval [t_k, t_k+1]:
translational v (world) and angular omega (body axes), with

    x_k+1 = x_k + dt v_k                                                   (7), (11)
    q_k+1 = q_k (x) [sqrt(1 - (dt/2)^2 |omega_k|^2) ; (dt/2) omega_k]       (13), (17)

so |q| = 1 is kept exactly (needs |omega| dt < 2). Rotational rows are the paper's rows halved, i.e.
in torque units: with phi a small body-axes rotation (q -> q (x) [1; phi/2]), the paper's rotational
gradient is 2 d/dphi (docs/seeds.md 003-B), and here every rotational derivative is d/dphi.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import cross, hat
from ..mass import inertia_matrix
from ..model import Mechanism

# Zero principal moments (point masses, slender rods) make a body block singular. They are raised to
# INERTIA_FLOOR times the body's largest moment (or m * (1 m)^2 if all are zero); the kinetic energy
# this adds is that fraction of the body's rotational energy (documented in docs/maximal.md).
INERTIA_FLOOR = 1e-7


def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products a (x) b of quaternions (..., 4)."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def qconj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def lmat(q: np.ndarray) -> np.ndarray:
    """L(q) with q (x) p = L(q) p, shape (..., 4, 4)."""
    out = np.empty(q.shape[:-1] + (4, 4))
    out[..., 0, 0] = q[..., 0]
    out[..., 0, 1:] = -q[..., 1:]
    out[..., 1:, 0] = q[..., 1:]
    out[..., 1:, 1:] = q[..., 0, None, None] * np.eye(3) + hat(q[..., 1:])
    return out


def rmat(q: np.ndarray) -> np.ndarray:
    """R(q) with p (x) q = R(q) p, shape (..., 4, 4)."""
    out = lmat(q)
    out[..., 1:, 1:] -= 2.0 * hat(q[..., 1:])
    return out


class SpinTooFastError(ValueError):
    """An angular speed reached 2/dt, where the rotation update (13) is undefined; `bodies` (indices) did."""

    def __init__(self, bodies: np.ndarray):
        super().__init__("angular speed reached 2/dt: the rotation update (seed 003 eq. 13) is undefined")
        self.bodies = bodies


def half_step(omega: np.ndarray, dt: float) -> np.ndarray:
    """The unit quaternion [sqrt(1 - |a|^2); a], a = dt/2 omega, that advances q over one step (13)."""
    a = 0.5 * dt * omega
    c2 = 1.0 - np.sum(a * a, axis=-1, keepdims=True)
    if np.any(c2 <= 0.0):
        raise SpinTooFastError(np.flatnonzero(c2[..., 0] <= 0.0))
    return np.concatenate([np.sqrt(c2), a], axis=-1)


def advance(x: np.ndarray, q: np.ndarray, v: np.ndarray, omega: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """(x, q) one step on with interval velocities (v, omega): eqs. (7) and (13)."""
    return x + dt * v, qmul(q, half_step(omega, dt))


def rotation_jacobian(omega: np.ndarray, dt: float) -> np.ndarray:
    """d phi_k+1 / d omega_k (..., 3, 3): how the body-axes rotation of q_k+1 moves with omega_k.

    With w = [c; a] = half_step(omega), delta phi = 2 vec(w^-1 (x) delta w) = dt (c I + a a^T / c - [a]x) delta omega.
    """
    a = 0.5 * dt * omega
    c = np.sqrt(1.0 - np.sum(a * a, axis=-1))[..., None, None]
    return dt * (c * np.eye(3) + a[..., :, None] * a[..., None, :] / c - hat(a))


def twists_from_quaternions(q0: np.ndarray, q1: np.ndarray, dt: float) -> np.ndarray:
    """Inverse of the rotation update: omega = (2/dt) vec(q0^-1 (x) q1), sign chosen with scalar >= 0."""
    rel = qmul(qconj(q0), q1)
    rel *= np.where(rel[..., :1] < 0, -1.0, 1.0)
    return 2.0 / dt * rel[..., 1:]


@dataclass(frozen=True)
class BodySet:
    """Masses (B,), inertias J (B, 3, 3) about the centre of mass in body axes (floored, see
    INERTIA_FLOOR), frame-origin offsets com (B, 3) in body axes, gravity (3,), names."""

    names: tuple[str, ...]
    mass: np.ndarray
    inertia: np.ndarray
    com: np.ndarray
    gravity: np.ndarray

    @property
    def count(self) -> int:
        return len(self.mass)


def body_set(mech: Mechanism) -> BodySet:
    mass, inertia, com = [], [], []
    for b in mech.bodies:
        values, vectors = np.linalg.eigh(inertia_matrix(b.inertia))
        floor = INERTIA_FLOOR * (values.max() if values.max() > 0 else b.mass * 1.0)
        J = vectors @ np.diag(np.maximum(values, floor)) @ vectors.T
        mass.append(b.mass)
        inertia.append(J)
        com.append(b.com)
    ro = lambda a: np.array(a, dtype=float)  # noqa: E731
    return BodySet(tuple(b.name for b in mech.bodies), ro(mass), ro(inertia).reshape(-1, 3, 3),
                   ro(com).reshape(-1, 3), ro(mech.gravity))


def rotational_momentum(J: np.ndarray, omega: np.ndarray, dt: float, side: int) -> np.ndarray:
    """Half of seed 003's rotational momentum terms: (s J w + side * w x J w) / 2, s = sqrt(4/dt^2 - |w|^2).

    The discrete equation (16), halved, is rotational_momentum(w1, +1) - rotational_momentum(w0, -1) - tau = 0
    (the old interval carries +w0 x J w0: docs/seeds.md 003-A).
    """
    Jw = np.einsum("bij,bj->bi", J, omega)
    s = np.sqrt(4.0 / dt**2 - np.sum(omega * omega, axis=-1))[:, None]
    return 0.5 * (s * Jw + side * cross(omega, Jw))


def rotational_momentum_jacobian(J: np.ndarray, omega: np.ndarray, dt: float, side: int) -> np.ndarray:
    """d rotational_momentum / d omega: (s J - J w w^T / s + side ([w]x J - [J w]x)) / 2, (B, 3, 3)."""
    Jw = np.einsum("bij,bj->bi", J, omega)
    s = np.sqrt(4.0 / dt**2 - np.sum(omega * omega, axis=-1))[:, None, None]
    return 0.5 * (s * J - Jw[:, :, None] * omega[:, None, :] / s + side * (hat(omega) @ J - hat(Jw)))

"""Joint springs on ball and free-joint rotations: V = k/2 |theta|^2, theta = log(R_rest^T R_rel), and its derivatives.

R_rel = C Phi(q) is the rotation of the joint's child frame relative to its parent frame (C the ball's chart,
Phi = Rx Ry Rz the chart's Euler chain, kinematics.euler_chain); R_rest = exp(hat(rest)) with `rest` (the last
three values of the joint's `rest`) a rotation vector in joint-frame axes, the convention of the joint's q0
(model.py), so a ball started at q0 = rest sits at rest. theta is the principal rotation vector, |theta| <= pi:
V is isotropic and depends on the rotation only, not on where the chart was last restarted.

Body-frame perturbations R -> R exp(xi) move theta by J_r^-1(theta) xi + O(xi^2), and J_r^-1(theta)^T theta =
theta (the hat(theta) terms annihilate theta), so
  dV/dxi = k theta,   d(k theta)/dxi = k J_r^-1(theta),
  J_r^-1(theta) = I + hat(theta)/2 + (1/t^2 - 1/(2 t tan(t/2))) hat(theta)^2,  t = |theta|.
In chart coordinates (R = C Phi(q), Phi^-1 dPhi = hat(Jb dq), u_i = column i of Jb, d u_i/dq_j = u_i x u_j for
j > i and 0 otherwise) the generalized force and its derivative are
  Q = -dV/dq = -k Jb^T theta,   dQ_i/dq_j = -k ((u_i x u_j) . theta [j > i] + u_i . J_r^-1 u_j).
The Lie group rows of lie_rows.py read the spring at chart coordinates 0 (Jb = I): its torque in body axes
Q = -k theta and d(k theta)/dxi = k J_r^-1(theta) for body-frame turns. V has a cusp at |theta| = pi (the rotation farthest from the rest, where theta
flips to -theta): a body spinning through it gets an O(dt) energy error per crossing that does not accumulate
(measured: band 6.3 % at dt = 0.01, 2.7 % at 0.005, no drift over 40 s). Every formula is checked against
finite differences in tests/solver/tree/test_ball_spring.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import cross, hat, matrix_to_quat
from .compile import TreeModel
from .kinematics import euler_chain

_SMALL = 1e-6  # below this |theta| (or sin of half of it), the series are exact to round-off


def so3_log(R: np.ndarray) -> np.ndarray:
    """Principal rotation vectors (..., 3), |theta| <= pi, of rotation matrices (..., 3, 3) (via the quaternion
    with w >= 0: theta = 2 atan2(|v|, w) v / |v|, the series 2 / w (1 - |v|^2 / (3 w^2)) for small |v|)."""
    quat = matrix_to_quat(R)
    w, v = quat[..., 0], quat[..., 1:]
    s = np.linalg.norm(v, axis=-1)
    small = s < _SMALL
    safe = np.where(small, 1.0, s)
    factor = np.where(small, 2.0 / w * (1.0 - s * s / (3.0 * w * w)), 2.0 * np.arctan2(s, w) / safe)
    return factor[..., None] * v


def right_jacobian_inverse(theta: np.ndarray) -> np.ndarray:
    """J_r^-1(theta) (..., 3, 3) for rotation vectors (..., 3), |theta| <= pi (module docstring)."""
    t = np.linalg.norm(theta, axis=-1)
    small = t < _SMALL
    safe = np.where(small, 1.0, t)
    c = np.where(small, 1.0 / 12.0 + t * t / 720.0, 1.0 / safe**2 - 1.0 / (2.0 * safe * np.tan(0.5 * safe)))
    T = hat(theta)
    return np.eye(3) + 0.5 * T + c[..., None, None] * (T @ T)


@dataclass(frozen=True)
class ChartSpring:
    """The springs of every ball chart at chart coordinates q (nball, 3): theta (nball, 3); Phi(q), its Euler
    axes J_L(q) and body Jacobian Jb = Phi^T J_L (nball, 3, 3); Jri = J_r^-1(theta); the generalized force Q
    (nball, 3) on the chart coordinates and its derivative Q_q (nball, 3, 3); the potential energy."""

    theta: np.ndarray
    Phi: np.ndarray
    JL: np.ndarray
    Jb: np.ndarray
    Jri: np.ndarray
    Q: np.ndarray
    Q_q: np.ndarray
    potential: float


def has_springs(model: TreeModel) -> bool:
    return bool(np.any(model.ball_stiffness != 0.0))


def chart_springs(model: TreeModel, charts: np.ndarray, q: np.ndarray) -> ChartSpring:
    """Evaluate the ball springs at chart coordinates q (nball, 3) in charts (nball, 3, 3)."""
    k = model.ball_stiffness
    Phi, JL = euler_chain(q)
    Jb = np.transpose(Phi, (0, 2, 1)) @ JL
    theta = so3_log(np.transpose(model.ball_rest, (0, 2, 1)) @ charts @ Phi)
    Jri = right_jacobian_inverse(theta)
    Q = -k[:, None] * np.einsum("bji,bj->bi", Jb, theta)
    u = np.transpose(Jb, (0, 2, 1))  # u[:, i] = column i of Jb
    Q_q = np.einsum("bki,bkl,blj->bij", Jb, Jri, Jb)
    for i in range(3):
        for j in range(i + 1, 3):
            Q_q[:, i, j] += np.einsum("bi,bi->b", cross(u[:, i], u[:, j]), theta)
    Q_q *= -k[:, None, None]
    potential = 0.5 * float(np.sum(k * np.einsum("bi,bi->b", theta, theta)))
    return ChartSpring(theta, Phi, JL, Jb, Jri, Q, Q_q, potential)

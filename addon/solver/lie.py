"""Rotation and rigid-motion utilities: hat maps, adjoints, quaternions, rotation vectors.

Knows no mechanism (like MuJoCo's mju_ utilities). Twists are (angular, linear), quaternions
(w, x, y, z). Functions broadcast over leading axes where noted.
"""

from __future__ import annotations

import numpy as np


def hat(w: np.ndarray) -> np.ndarray:
    """Skew matrix of 3-vectors, shape (..., 3) -> (..., 3, 3), so hat(w) @ x = w x x."""
    w = np.asarray(w, dtype=float)
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1] = -w[..., 2]
    out[..., 0, 2] = w[..., 1]
    out[..., 1, 0] = w[..., 2]
    out[..., 1, 2] = -w[..., 0]
    out[..., 2, 0] = -w[..., 1]
    out[..., 2, 1] = w[..., 0]
    return out


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of 3-vectors broadcast over leading axes (much cheaper than np.cross on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def ad_twist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lie bracket ad_a b of twists (..., 6) in (angular, linear) order: [wa x wb, wa x vb + va x wb]."""
    wa, va = a[..., :3], a[..., 3:]
    wb, vb = b[..., :3], b[..., 3:]
    return np.concatenate([cross(wa, wb), cross(wa, vb) + cross(va, wb)], axis=-1)


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) from quaternions (..., 4) in (w, x, y, z); normalises first."""
    q = np.asarray(quat, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - w * z)
    out[..., 0, 2] = 2 * (x * z + w * y)
    out[..., 1, 0] = 2 * (x * y + w * z)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - w * x)
    out[..., 2, 0] = 2 * (x * z - w * y)
    out[..., 2, 1] = 2 * (y * z + w * x)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Quaternions (..., 4) (w, x, y, z) with w >= 0 from rotation matrices (..., 3, 3).

    Shepperd's method, vectorised: each matrix uses the largest of (trace, R00, R11, R22) as pivot.
    """
    R = np.asarray(R, dtype=float)
    m = R.reshape(-1, 3, 3)
    d0, d1, d2 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    pivot = np.argmax(np.stack([d0 + d1 + d2, d0, d1, d2], axis=1), axis=1)
    sign = np.array([[1, 1, 1, 1], [1, 1, -1, -1], [1, -1, 1, -1], [1, -1, -1, 1]], dtype=float)[pivot]
    # 4 |q_pivot|^2 = 1 + (signed diagonal sum); the other components from off-diagonal sums
    big = 0.5 * np.sqrt(np.maximum(1.0 + sign[:, 1] * d0 + sign[:, 2] * d1 + sign[:, 3] * d2, 0.0))
    s = 0.25 / big
    a21, a12 = m[:, 2, 1], m[:, 1, 2]
    a02, a20 = m[:, 0, 2], m[:, 2, 0]
    a10, a01 = m[:, 1, 0], m[:, 0, 1]
    candidates = np.stack([
        np.stack([big, (a21 - a12) * s, (a02 - a20) * s, (a10 - a01) * s], axis=1),
        np.stack([(a21 - a12) * s, big, (a01 + a10) * s, (a02 + a20) * s], axis=1),
        np.stack([(a02 - a20) * s, (a01 + a10) * s, big, (a12 + a21) * s], axis=1),
        np.stack([(a10 - a01) * s, (a02 + a20) * s, (a12 + a21) * s, big], axis=1),
    ], axis=1)
    q = candidates[np.arange(len(m)), pivot]
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return q.reshape(R.shape[:-2] + (4,))


def rotvec_to_matrix(rv: np.ndarray) -> np.ndarray:
    """Rodrigues' formula: exp(hat(rv)) for one rotation vector (3,)."""
    rv = np.asarray(rv, dtype=float)
    theta = float(np.linalg.norm(rv))
    K = hat(rv)
    if theta < 1e-8:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + np.sin(theta) / theta * K + (1 - np.cos(theta)) / theta**2 * K @ K


def axis_rotation(axis: int, angle: float | np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) about coordinate axis 0 (x), 1 (y) or 2 (z) by angles (...) (rad)."""
    angle = np.asarray(angle, dtype=float)
    c, s = np.cos(angle), np.sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R = np.zeros(angle.shape + (3, 3))
    R[..., axis, axis] = 1.0
    R[..., i, i] = c
    R[..., j, j] = c
    R[..., i, j] = -s
    R[..., j, i] = s
    return R


def frame_from_axis(axis: np.ndarray, hint: np.ndarray | None = None) -> np.ndarray:
    """A right-handed rotation whose third column is the unit `axis` (and first column near `hint`)."""
    z = np.asarray(axis, dtype=float)
    z = z / np.linalg.norm(z)
    if hint is not None:
        x = np.asarray(hint, dtype=float) - z * np.dot(hint, z)
    else:
        x = np.zeros(3)
    if np.linalg.norm(x) < 1e-9:
        helper = np.eye(3)[int(np.argmin(np.abs(z)))]
        x = helper - z * np.dot(helper, z)
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def pose_matrix(position: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Homogeneous transforms (..., 4, 4) from positions (..., 3) and rotation matrices (..., 3, 3), broadcast
    over their leading axes."""
    position, rotation = np.asarray(position, dtype=float), np.asarray(rotation, dtype=float)
    M = np.zeros(np.broadcast_shapes(position.shape[:-1], rotation.shape[:-2]) + (4, 4))
    M[..., :3, :3] = rotation
    M[..., :3, 3] = position
    M[..., 3, 3] = 1.0
    return M


def inverse_pose(M: np.ndarray) -> np.ndarray:
    """Inverse of a 4x4 rigid transform."""
    out = np.eye(4)
    R = M[:3, :3]
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ M[:3, 3]
    return out

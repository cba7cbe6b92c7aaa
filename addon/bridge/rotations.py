"""Vectorised rotation conversions for baking: numpy only (no bpy), one row per frame.

Owns the maths that turns world poses into Blender channel values (quaternion <-> matrix comes from
solver.lie and is re-exported here), matrix ->
Euler (every Blender order) and axis-angle, and the continuity fixes (quaternion sign, Euler branch
and 2 pi unwrapping) so baked curves never jump. Quaternions are (w, x, y, z). Blender Euler order
"XYZ" means X is applied first: R = Rz(z) @ Ry(y) @ Rx(x); angles are stored by axis (x, y, z).
"""

from __future__ import annotations

import math

import numpy as np

from ..solver.lie import matrix_to_quat, quat_to_matrix  # noqa: F401 (re-exported for the bridge)

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def quat_continuous(q: np.ndarray, previous: np.ndarray | None = None) -> np.ndarray:
    """Flip signs of rows of (N, 4) `q` so consecutive rows (and `previous` -> row 0) have dot >= 0."""
    q = np.array(q, dtype=float)
    if len(q) == 0:
        return q
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    first = 1.0 if previous is None or np.dot(q[0], previous) >= 0 else -1.0
    signs = np.cumprod(np.concatenate([[first], np.where(dots < 0, -1.0, 1.0)]))
    return q * signs[:, None]


def _order_axes(order: str) -> tuple[int, int, int, float]:
    i, j, k = ("XYZ".index(c) for c in order)
    parity = 1.0 if (j - i) % 3 == 1 else -1.0
    return i, j, k, parity


def matrix_to_euler(r: np.ndarray, order: str) -> np.ndarray:
    """(N, 3, 3) rotation matrices -> (N, 3) Euler angles (x, y, z) for Blender order `order`.

    The principal branch: the middle angle lies in [-pi/2, pi/2].
    """
    i, j, k, par = _order_axes(order)
    r = np.asarray(r, dtype=float)
    e = np.empty(r.shape[:-2] + (3,))
    e[..., i] = np.arctan2(par * r[..., k, j], r[..., k, k])
    e[..., j] = np.arctan2(-par * r[..., k, i], np.hypot(r[..., i, i], r[..., j, i]))
    e[..., k] = np.arctan2(par * r[..., j, i], r[..., i, i])
    # Near gimbal lock the first and last angles are coupled; put the whole turn into the first.
    lock = np.hypot(r[..., i, i], r[..., j, i]) < 1e-12
    if np.any(lock):
        rl = r[lock]
        e[lock, k] = 0.0
        e[lock, i] = np.arctan2(-par * rl[:, j, k], rl[:, j, j])
    return e


def euler_continuous(e: np.ndarray, order: str, previous: np.ndarray | None = None) -> np.ndarray:
    """Choose, row by row, the equivalent Euler triple closest to the previous row (or `previous`).

    Each rotation has two Euler branches, (a, b, c) and (a + pi, pi - b, c + pi) (by axis role), and
    every angle may shift by 2 pi; the closest combination keeps the curves smooth. The choice is
    sequential, so it runs on plain floats; the arrays are built once at the end.
    """
    i, j, k, _ = _order_axes(order)
    e = np.asarray(e, dtype=float)
    other = e.copy()
    other[:, i] += math.pi
    other[:, j] = math.pi - other[:, j]
    other[:, k] += math.pi
    two_pi = 2.0 * math.pi
    if previous is None:
        start = (e[0] + math.pi) % two_pi - math.pi
        alt = (other[0] + math.pi) % two_pi - math.pi
        previous = start if np.abs(start).sum() <= np.abs(alt).sum() + 1e-12 else alt
    px, py, pz = (float(v) for v in previous)
    out = []
    for row, alt in zip(e.tolist(), other.tolist()):
        best = None
        for x, y, z in (row, alt):
            x -= two_pi * round((x - px) / two_pi)
            y -= two_pi * round((y - py) / two_pi)
            z -= two_pi * round((z - pz) / two_pi)
            dist = abs(x - px) + abs(y - py) + abs(z - pz)
            if best is None or dist < best[0] - 1e-12:
                best = (dist, x, y, z)
        _, px, py, pz = best
        out.append((px, py, pz))
    return np.array(out).reshape(e.shape)


def quat_to_axis_angle(q: np.ndarray, previous_axis: np.ndarray | None = None) -> np.ndarray:
    """(N, 4) continuous quaternions -> (N, 4) Blender axis-angle rows (angle, x, y, z).

    (angle, axis) and (-angle, -axis) are the same rotation, as are angle and angle + 2 pi; the axis
    sign is chosen so that it never flips between rows (nor against `previous_axis`), the angle
    changes sign instead and is unwrapped.
    """
    q = np.asarray(q, dtype=float)
    v = q[:, 1:]
    s = np.linalg.norm(v, axis=1)
    angle = 2.0 * np.arctan2(s, q[:, 0])
    axis = np.empty_like(v)
    moving = s > 1e-12
    axis[moving] = v[moving] / s[moving, None]
    # At the identity the axis is undefined: carry the last defined one (or Blender's default Y).
    last = np.array([0.0, 1.0, 0.0]) if previous_axis is None else np.asarray(previous_axis, dtype=float)
    for n in np.flatnonzero(~moving):
        axis[n] = axis[n - 1] if n > 0 else last
    reference = np.concatenate([[last], axis[:-1]])
    signs = np.cumprod(np.where(np.einsum("ij,ij->i", axis, reference) < 0, -1.0, 1.0))
    angle = np.unwrap(angle * signs)  # a full turn about the same axis is the same rotation
    return np.concatenate([angle[:, None], axis * signs[:, None]], axis=1)


def rotation_channels(r: np.ndarray, mode: str, previous: np.ndarray | None = None) -> tuple[str, np.ndarray]:
    """Rotation matrices (N, 3, 3) -> (channel property name, (N, n) continuous values) for `mode`.

    mode is a Blender rotation_mode: QUATERNION, AXIS_ANGLE or an Euler order. `previous` is the
    channel's current value, so the first key continues from what the artist sees.
    """
    if mode == "QUATERNION":
        return "rotation_quaternion", quat_continuous(matrix_to_quat(r), previous)
    if mode == "AXIS_ANGLE":
        prev_q = prev_axis = None
        if previous is not None and np.linalg.norm(previous[1:]) > 1e-12:
            prev_axis = np.asarray(previous[1:]) / np.linalg.norm(previous[1:])
            half = 0.5 * previous[0]
            prev_q = np.concatenate([[math.cos(half)], math.sin(half) * prev_axis])
        return "rotation_axis_angle", quat_to_axis_angle(quat_continuous(matrix_to_quat(r), prev_q), prev_axis)
    if mode in EULER_ORDERS:
        return "rotation_euler", euler_continuous(matrix_to_euler(r, mode), mode, previous)
    raise ValueError(f"unknown rotation mode {mode!r}")


def affine_inverse(m: np.ndarray) -> np.ndarray:
    """Inverses of (..., 4, 4) affine matrices (last row 0 0 0 1), in closed form (adjugate)."""
    m = np.asarray(m, dtype=float)
    c0, c1, c2 = m[..., :3, 0], m[..., :3, 1], m[..., :3, 2]
    rows = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=-2)
    inv_r = rows / np.einsum("...i,...i->...", c0, rows[..., 0, :])[..., None, None]
    out = np.zeros_like(m)
    out[..., :3, :3] = inv_r
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", inv_r, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def pose_matrices(poses: np.ndarray) -> np.ndarray:
    """(..., 7) poses (x y z qw qx qy qz) -> (..., 4, 4) homogeneous matrices."""
    poses = np.asarray(poses, dtype=float)
    m = np.zeros(poses.shape[:-1] + (4, 4))
    m[..., :3, :3] = quat_to_matrix(poses[..., 3:7])
    m[..., :3, 3] = poses[..., :3]
    m[..., 3, 3] = 1.0
    return m

"""Signed distances from points to shot obstacles (sphere, box, cylinder, convex hull) with gradients.

Owns the geometry only. Each function maps world points (K, 3) to (distance (K,), gradient (K, 3)),
positive outside. Outside a box or cylinder the exact Euclidean distance is used (continuously
differentiable there); inside, the largest face distance (negative). A convex hull uses its face planes
n_j . p <= b_j (scipy ConvexHull) through a smooth maximum that never exceeds the true distance:
LSE_beta(n_j . p - b_j) - log(faces) / beta <= max_j(n_j . p - b_j) <= distance, beta = 50 / hull size,
so a cleared bound clears the hull.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.spatial import ConvexHull

from ..lie import quat_to_matrix
from .spec import Obstacle

Distance = Callable[..., tuple]  # (p (K, 3), second=False) -> (d (K,), g (K, 3)[, H (K, 3, 3) with second])


def _soft_norm(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|v| (K,) and v / |v| (K, d), with a zero gradient at v = 0."""
    n = np.linalg.norm(v, axis=-1)
    return n, v / np.where(n > 0, n, 1.0)[..., None]


def _norm_hessian(n: np.ndarray, u: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Hessian (K, d, d) of |o| in the active components of o (K, d) (the others clamped at zero), |o| = n,
    o / |o| = u: (diag(active) - u u^T) / n, zero where n = 0."""
    eye = active[:, :, None] * np.eye(active.shape[1])
    return (eye - u[:, :, None] * u[:, None, :]) / np.where(n > 0, n, np.inf)[:, None, None]


def _sphere(radius: float) -> Distance:
    def distance(p, second=False):
        n, u = _soft_norm(p)
        if not second:
            return n - radius, u
        return n - radius, u, _norm_hessian(n, u, np.ones(p.shape, bool))
    return distance


def _box(half: np.ndarray) -> Distance:
    def distance(p, second=False):
        q = np.abs(p) - half
        outside = np.maximum(q, 0.0)
        n, u = _soft_norm(outside)
        inside = np.max(q, axis=-1)
        i = np.argmax(q, axis=-1)
        grad_in = np.zeros_like(p)
        grad_in[np.arange(len(p)), i] = 1.0
        is_out = inside > 0
        d = np.where(is_out, n, inside)
        sign = np.sign(np.where(p == 0, 1.0, p))
        g = np.where(is_out[:, None], u, grad_in) * sign
        if not second:
            return d, g
        # outside: |max(|p| - half, 0)|, the signs of p on both sides; inside: one face, linear
        H = _norm_hessian(n, u, q > 0) * sign[:, :, None] * sign[:, None, :] * is_out[:, None, None]
        return d, g, H
    return distance


def _cylinder(radius: float, half_height: float) -> Distance:
    def distance(p, second=False):
        rho, radial = _soft_norm(p[:, :2])
        q = np.stack([rho - radius, np.abs(p[:, 2]) - half_height], -1)
        n, u = _soft_norm(np.maximum(q, 0.0))
        inside = np.max(q, axis=-1)
        is_out = inside > 0
        d_dq = np.where(is_out[:, None], u, np.eye(2)[np.argmax(q, axis=-1)])
        sz = np.sign(np.where(p[:, 2] == 0, 1.0, p[:, 2]))
        g = np.concatenate([d_dq[:, :1] * radial, (d_dq[:, 1] * sz)[:, None]], -1)
        d = np.where(is_out, n, inside)
        if not second:
            return d, g
        # d(q(p)): dq/dp rows (radial, 0) and (0, 0, sz); q_0 = rho curves as (I - r r^T) / rho in x, y
        Jq = np.zeros((len(p), 2, 3))
        Jq[:, 0, :2], Jq[:, 1, 2] = radial, sz
        H = np.einsum("kai,kab,kbj->kij", Jq, _norm_hessian(n, u, q > 0) * is_out[:, None, None], Jq)
        H[:, :2, :2] += d_dq[:, 0, None, None] * _norm_hessian(rho, radial, np.ones((len(p), 2), bool))
        return d, g, H
    return distance


_QHULL_LARGEST = 1e150


def hull_planes(vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The hull's face planes n_j . p <= b_j: normals (F, 3), offsets (F,), the smooth maximum's beta and the
    shift log(F) / beta of the module docstring."""
    vertices = np.asarray(vertices, dtype=float)
    largest = float(np.max(np.abs(vertices)))
    scale = largest if largest > _QHULL_LARGEST else 1.0  # qhull squares coordinates: beyond ~1e154 they overflow
    hull = ConvexHull(vertices / scale)
    normals, offsets = hull.equations[:, :3], -hull.equations[:, 3] * scale  # n . p <= b inside
    beta = 50.0 / float(np.max(np.ptp(vertices, axis=0)))
    return normals, offsets, beta, float(np.log(len(offsets)) / beta)


def _hull(vertices: np.ndarray) -> Distance:
    normals, offsets, beta, shift = hull_planes(vertices)

    def distance(p, second=False):
        s = p @ normals.T - offsets
        top = np.max(s, axis=-1, keepdims=True)
        w = np.exp(beta * (s - top))
        total = w.sum(-1)
        d = top[:, 0] + np.log(total) / beta - shift
        w = w / total[:, None]
        g = w @ normals
        if not second:
            return d, g
        # log-sum-exp: beta (sum_j w_j n_j n_j^T - g g^T)
        H = beta * (np.einsum("kj,ja,jb->kab", w, normals, normals) - g[:, :, None] * g[:, None, :])
        return d, g, H
    return distance


def obstacle_frame(obstacle: Obstacle) -> tuple[np.ndarray, np.ndarray]:
    """The obstacle's centre (3,) and orientation R (3, 3, world from local): world point p is (p - c) @ R locally."""
    return np.asarray(obstacle.position, dtype=float), quat_to_matrix(np.asarray(obstacle.orientation, dtype=float))


def shape_parameters(obstacle: Obstacle) -> tuple[int, np.ndarray]:
    """The obstacle's shape for the C clearance rows (native/planar_clearance.c): kind 0 sphere [radius], 1 box
    [half extents], 2 cylinder [radius, half height], 3 hull [faces, beta, shift, normals (F, 3), offsets (F,)]."""
    if obstacle.shape == "hull":
        normals, offsets, beta, shift = hull_planes(obstacle.vertices)
        return 3, np.concatenate([[len(offsets), beta, shift], normals.ravel(), offsets])
    kind = {"sphere": 0, "box": 1, "cylinder": 2}[obstacle.shape]
    return kind, np.asarray(obstacle.size, dtype=float)[:(1, 3, 2)[kind]]


def distance_function(obstacle: Obstacle) -> Distance:
    """World signed distance (K, 3) -> ((K,), (K, 3)) of `obstacle`; with second=True also its Hessian
    (K, 3, 3) (exact where the distance is twice differentiable: away from a box's or cylinder's edges
    and faces inside, where one branch is linear)."""
    c, R = obstacle_frame(obstacle)
    if obstacle.shape == "sphere":
        local = _sphere(float(obstacle.size[0]))
    elif obstacle.shape == "box":
        local = _box(np.asarray(obstacle.size, dtype=float))
    elif obstacle.shape == "cylinder":
        local = _cylinder(float(obstacle.size[0]), float(obstacle.size[1]))
    else:
        local = _hull(np.asarray(obstacle.vertices, dtype=float))

    def distance(p, second=False):
        out = local((np.asarray(p, dtype=float) - c) @ R, second)
        if not second:
            return out[0], out[1] @ R.T
        return out[0], out[1] @ R.T, R @ out[2] @ R.T
    return distance

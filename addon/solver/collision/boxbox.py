"""Box-box contacts by the separating axis test (SAT), vectorised over all box pairs.

The 15 candidate axes of each pair (3 face normals of each box, 9 edge-edge cross products) give
separations |L . d| - r_A(L) - r_B(L); the largest is a lower bound of the distance, so every pair
whose best separation exceeds the margin is dropped at once. Overlapping pairs take the best axis,
oriented from A to B, as the normal and its separation as the depth (exact). Face axes are
preferred to edge axes (and A's faces to B's) unless the other is larger by a small tolerance, so a
resting box keeps one reference face. The points come from the features along the normal
(convex.along_normal): clipped faces (up to 4 points), an edge clipped by a face, or the closest
points of two crossing edges.
Pairs apart by at most the margin keep the SAT result when it is attained (a point of each box, both
inside their boxes, exactly the separation apart along the normal: then the lower bound is the
distance, as for resting faces and crossing edges); otherwise (vertex-vertex, vertex-edge nearest
features) they go to GJK (convex.convex_pair).
"""

from __future__ import annotations

import numpy as np

from ..lie import cross
from .boxface import face_contacts
from .convex import along_normal, convex_pair
from .primitives import Batch, concatenate
from .shapes import Shapes

_FACE_PREFERENCE = 1e-6  # relative to the boxes' size: B's faces, then edges, must beat A's faces by this
_EDGE_PREFERENCE = 1e-4
_DEGENERATE_EDGE = 1e-6  # |a x b| below this: parallel edges, the axis is one of the face axes


def separating_axes(rot: np.ndarray, origin: np.ndarray, size: np.ndarray, ia: np.ndarray, ib: np.ndarray):
    """(separation (K,), unit normal A to B (K, 3), axis index (K,): 0-2 A's faces, 3-5 B's, 6-14 edges)."""
    ra_, rb_ = rot[ia], rot[ib]
    ha, hb = size[ia], size[ib]
    faces_a = np.swapaxes(ra_, 1, 2)  # rows are A's axes
    faces_b = np.swapaxes(rb_, 1, 2)
    edges = cross(faces_a[:, :, None, :], faces_b[:, None, :, :]).reshape(-1, 9, 3)
    axes = np.concatenate([faces_a, faces_b, edges], axis=1)  # (K, 15, 3)
    norm = np.linalg.norm(axes, axis=2)
    valid = norm > _DEGENERATE_EDGE
    axes = axes / np.where(valid, norm, 1.0)[:, :, None]
    extent_a = np.einsum("kli,ki->kl", np.abs(np.einsum("klj,kji->kli", axes, ra_)), ha)
    extent_b = np.einsum("kli,ki->kl", np.abs(np.einsum("klj,kji->kli", axes, rb_)), hb)
    centre = np.einsum("klj,kj->kl", axes, origin[ib] - origin[ia])
    sep = np.where(valid, np.abs(centre) - extent_a - extent_b, -np.inf)
    scale = np.maximum(ha.max(axis=1), hb.max(axis=1))
    rows = np.arange(len(ia))
    best_a = np.argmax(sep[:, 0:3], axis=1)
    best_b = 3 + np.argmax(sep[:, 3:6], axis=1)
    best_e = 6 + np.argmax(sep[:, 6:], axis=1)
    choice = np.where(sep[rows, best_b] > sep[rows, best_a] + _FACE_PREFERENCE * scale, best_b, best_a)
    choice = np.where(sep[rows, best_e] > sep[rows, choice] + _EDGE_PREFERENCE * scale, best_e, choice)
    normal = axes[rows, choice] * np.where(centre[rows, choice] >= 0, 1.0, -1.0)[:, None]
    return sep[rows, choice], normal, choice


def _inside(half: np.ndarray, rot: np.ndarray, origin: np.ndarray, point: np.ndarray, tol: float) -> bool:
    return bool(np.all(np.abs(rot.T @ (point - origin)) <= half + tol))


def _attains(shapes: Shapes, rot: np.ndarray, origin: np.ndarray, found: Batch, sep: float) -> bool:
    """Whether the contacts include a point pair of the two boxes exactly `sep` apart (then the SAT
    separation, a lower bound of the distance, is the distance)."""
    if not len(found):
        return False
    k = int(np.argmin(found.distance))
    a, b = int(found.a[k]), int(found.b[k])
    tol = 1e-9 * float(max(shapes.size[a].max(), shapes.size[b].max()))
    pa, pb = found.point_a[k], found.point_b[k]
    return (abs(float(np.linalg.norm(pb - pa)) - sep) <= tol and abs(float(found.distance[k]) - sep) <= tol
            and _inside(shapes.size[a], rot[a], origin[a], pa, tol) and _inside(shapes.size[b], rot[b], origin[b], pb, tol))


def box_box(shapes: Shapes, rot: np.ndarray, origin: np.ndarray, ia: np.ndarray, ib: np.ndarray,
            margin: float) -> Batch:
    sep, normal, axis = separating_axes(rot, origin, shapes.size, ia, ib)
    close = np.flatnonzero(sep <= margin)
    face = close[axis[close] < 6]
    batch, pair, handled = face_contacts(rot, origin, shapes.size, ia[face], ib[face], normal[face], axis[face],
                                         margin)
    # Done in the vectorised pass: a face shown to a face, with contacts, and (when apart) the deepest
    # of them attaining the SAT separation, which makes it the distance.
    deepest = np.full(len(face), np.inf)
    np.minimum.at(deepest, pair, batch.distance)
    scale = np.maximum(shapes.size[ia[face]].max(axis=1), shapes.size[ib[face]].max(axis=1))
    done = handled & np.isfinite(deepest) & ((sep[face] <= 0) | (np.abs(deepest - sep[face]) <= 1e-9 * scale))
    parts = [batch.where(done[pair])]
    for k in np.concatenate([close[axis[close] >= 6], face[~done]]):
        a, b, n = int(ia[k]), int(ib[k]), normal[k]
        found = along_normal(shapes, a, b, rot, origin, n, float(sep[k]), margin)
        if found is None or not len(found) or (sep[k] > 0 and not _attains(shapes, rot, origin, found, float(sep[k]))):
            found = convex_pair(shapes, a, b, rot, origin, margin)
        parts.append(found)
    return concatenate(parts)

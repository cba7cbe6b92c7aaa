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
features) they need the true nearest points (GJK, convex.convex_pair).
All of this runs over all pairs at once (boxface.py: faces shown to faces or edges; boxsingle.py: a
vertex or crossing edges, and the nearest points of separated boxes); what is left (parallel edges,
edge or face clipped against a face apart from the face pass, overlapping pairs needing EPA) runs per
pair through `pair_contacts`, the reference the vectorised passes reproduce.
"""

from __future__ import annotations

import numpy as np

from ..lie import cross
from .boxface import face_contacts
from .boxsingle import along_axis, apart, edge_on_face
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
    rest = np.concatenate([close[axis[close] >= 6], face[~done]])
    single, settled, nearest = along_axis(rot, origin, shapes.size, ia[rest], ib[rest], normal[rest], sep[rest],
                                          margin)
    parts.append(single)
    far = rest[~settled & (sep[rest] > 0)]
    found, gjk, done_far, close_points = apart(rot, origin, shapes.size, ia[far], ib[far], sep[far],
                                               nearest[~settled & (sep[rest] > 0)], margin)
    parts.append(found)
    deep = rest[~settled & (sep[rest] <= 0) & ~nearest]
    clipped, done_deep = edge_on_face(rot, origin, shapes.size, ia[deep], ib[deep], normal[deep], margin)
    parts.append(clipped)
    for k in np.concatenate([deep[~done_deep], far[~gjk]]):
        parts.append(pair_contacts(shapes, rot, origin, int(ia[k]), int(ib[k]), normal[k], float(sep[k]), margin))
    for k in rest[~settled & (sep[rest] <= 0) & nearest]:  # overlapping: EPA
        parts.append(convex_pair(shapes, int(ia[k]), int(ib[k]), rot, origin, margin))
    for k in np.flatnonzero(gjk & ~done_far):  # apart: the features along the nearest points, as after GJK
        p = close_points
        parts.append(along_normal(shapes, int(p.a[k]), int(p.b[k]), rot, origin, p.normal[k], float(p.distance[k]),
                                  margin, (p.point_a[k], p.point_b[k])))
    return concatenate(parts)


def pair_contacts(shapes: Shapes, rot: np.ndarray, origin: np.ndarray, a: int, b: int, n: np.ndarray, sep: float,
                  margin: float) -> Batch:
    """Contacts of boxes a, b with SAT normal n and separation sep, one pair at a time (the reference the
    vectorised passes reproduce): the features along n, then GJK when they give nothing within the
    margin or, apart, no point pair attaining the separation."""
    found = along_normal(shapes, a, b, rot, origin, n, sep, margin)
    if found is None or not len(found) or (sep > 0 and not _attains(shapes, rot, origin, found, sep)):
        found = convex_pair(shapes, a, b, rot, origin, margin)
    return found

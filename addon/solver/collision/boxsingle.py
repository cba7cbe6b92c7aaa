"""One-point box-box contacts for many pairs at once: what box_box left to the per-pair path when a
vertex or two crossing edges touch, and box pairs apart whose nearest features include a vertex.

Both passes give what the per-pair path gives (convex.along_normal, then convex.convex_pair's GJK),
vectorised over the pairs, and return a mask of the pairs they settled; the rest stay per pair:

* `along_axis`: pairs with a SAT normal n and separation s. The features along n are found as
  manifold.feature does (face within FACE_ANGLE, else edge, else vertex). A vertex on either side is
  the contact (the other point s away along n), as manifold.single_contact; two edges crossing (not
  within manifold's parallel test) give their closest points (primitives.segment_closest). Apart
  (s > 0), the result stands only when its points lie on both boxes exactly s apart (then the SAT lower
  bound is the distance, boxbox._attains); otherwise the pair needs the true nearest points.
* `apart`: the nearest points of separated boxes by brute force over candidate features, exact for
  polytopes: every vertex of each box against the other box (clamped in its frame) and every edge of
  one against every edge of the other (segment_closest), the closest of all. With n along them, a
  vertex feature on either side, or two crossing edges, make the contact those two points
  (along_normal's witness case). Pairs whose features along n would be clipped (parallel edges, an
  edge or a face against a face) stay per pair.
"""

from __future__ import annotations

import numpy as np

from .manifold import FACE_ANGLE
from .primitives import Batch, segment_closest

_COS_FACE, _SIN_FACE = np.cos(FACE_ANGLE), np.sin(FACE_ANGLE)
# a true distance this far (relative to the boxes' size) beyond the SAT bound: no point pair found along the SAT
# normal attains it (boxbox._attains allows 1e-9 on the distance and on each point's box), the pair needs GJK
_UNATTAINED = 1e-8
_PARALLEL_BAND = (0.99e-3, 1.01e-3)  # manifold's parallel-segment test (1e-3): near it, leave to the per-pair path
_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
# the 12 edges as (start corner, end corner) indices into _CORNERS: pairs differing in one coordinate
_EDGES = np.array([(i, j) for i in range(8) for j in range(i + 1, 8) if np.sum(_CORNERS[i] != _CORNERS[j]) == 1])


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def _features(rot: np.ndarray, origin: np.ndarray, half: np.ndarray, direction: np.ndarray):
    """Kind (K,) (1 vertex, 2 edge, 3 face) of each box's extreme feature along `direction` (K, 3), as
    manifold.feature decides, and its first two points (K, 2, 3): the vertex twice, or the edge's ends."""
    rows = np.arange(len(rot))
    local = np.einsum("kji,kj->ki", rot, direction)
    mags = np.abs(local)
    top, low = np.argmax(mags, axis=1), np.argmin(mags, axis=1)
    kind = np.where(mags[rows, top] >= _COS_FACE, 3, np.where(mags[rows, low] <= _SIN_FACE, 2, 1))
    corner = np.where(local >= 0, half, -half)
    ends = np.repeat(corner[:, None, :], 2, axis=1)
    edge = kind == 2
    ends[rows[edge], 0, low[edge]] = -half[edge, low[edge]]
    ends[rows[edge], 1, low[edge]] = half[edge, low[edge]]
    return kind, origin[:, None, :] + np.einsum("kij,kmj->kmi", rot, ends)


def _tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """manifold._tangent_basis for many normals (K, 3)."""
    x, y, z = n[:, 0], n[:, 1], n[:, 2]
    zero = np.zeros_like(x)
    e1 = np.where((np.abs(x) < 0.9)[:, None], np.stack([zero, z, -y], axis=1), np.stack([-z, zero, x], axis=1))
    e1 = e1 / np.sqrt(_dot(e1, e1))[:, None]
    a, b, c = e1[:, 0], e1[:, 1], e1[:, 2]
    return e1, np.stack([y * c - z * b, z * a - x * c, x * b - y * a], axis=1)


def _inside(rot, origin, half, point, tol) -> np.ndarray:
    local = np.einsum("kji,kj->ki", rot, point - origin)
    return np.all(np.abs(local) <= half + tol[:, None], axis=1)


def _crossing(normal, kind_a, ends_a, kind_b, ends_b) -> np.ndarray:
    """Pairs whose features along the normal are two edges crossing across it: manifold's parallel test
    (2-D cross product of the projected edges against 1e-3 of their lengths) clearly failed."""
    e1, e2 = _tangent_basis(normal)
    da, db = ends_a[:, 1] - ends_a[:, 0], ends_b[:, 1] - ends_b[:, 0]
    fa = np.stack([_dot(da, e1), _dot(da, e2)], axis=1)
    fb = np.stack([_dot(db, e1), _dot(db, e2)], axis=1)
    la, lb = np.linalg.norm(fa, axis=1), np.linalg.norm(fb, axis=1)
    turn = np.abs(fa[:, 0] * fb[:, 1] - fa[:, 1] * fb[:, 0])
    return (kind_a == 2) & (kind_b == 2) & (la > 0) & (lb > 0) & (turn > _PARALLEL_BAND[1] * la * lb)


def along_axis(rot, origin, size, ia, ib, normal, sep, margin) -> tuple[Batch, np.ndarray, np.ndarray]:
    """One-point contacts of box pairs (ia, ib) (K,) along their SAT normals (K, 3) at separations sep (K,).
    Returns (contacts, settled (K,), needs_nearest (K,)): settled pairs are done (with a contact or,
    if its distance exceeds the margin, none); needs_nearest marks the apart pairs whose point pair does
    not attain the separation (the per-pair path then runs GJK)."""
    ra, rb, ha, hb = rot[ia], rot[ib], size[ia], size[ib]
    kind_a, ends_a = _features(ra, origin[ia], ha, normal)
    kind_b, ends_b = _features(rb, origin[ib], hb, -normal)
    vertex_b, vertex_a = kind_b == 1, (kind_a == 1) & (kind_b != 1)
    pa = np.where(vertex_b[:, None], ends_b[:, 0] - sep[:, None] * normal, ends_a[:, 0])
    pb = np.where(vertex_b[:, None], ends_b[:, 0], ends_a[:, 0] + sep[:, None] * normal)
    crossing = _crossing(normal, kind_a, ends_a, kind_b, ends_b)
    da, db = ends_a[:, 1] - ends_a[:, 0], ends_b[:, 1] - ends_b[:, 0]
    s, t = segment_closest(ends_a[:, 0], ends_a[:, 1], ends_b[:, 0], ends_b[:, 1])
    pa = np.where(crossing[:, None], ends_a[:, 0] + s[:, None] * da, pa)
    pb = np.where(crossing[:, None], ends_b[:, 0] + t[:, None] * db, pb)
    dist = _dot(pb - pa, normal)
    point = vertex_b | vertex_a | crossing
    tol = 1e-9 * np.maximum(ha.max(axis=1), hb.max(axis=1))
    attains = ((np.abs(np.linalg.norm(pb - pa, axis=1) - sep) <= tol) & (np.abs(dist - sep) <= tol)
               & _inside(ra, origin[ia], ha, pa, tol) & _inside(rb, origin[ib], hb, pb, tol))
    # the per-pair path: a point beyond the margin, or apart without attaining the separation, goes to GJK
    needs_nearest = point & ((dist > margin) | ((sep > 0) & ~attains))
    settled = point & ~needs_nearest
    keep = settled
    return Batch(ia[keep], ib[keep], pa[keep], pb[keep], normal[keep], dist[keep]), settled, needs_nearest


def nearest_points(rot, origin, size, ia, ib) -> tuple[np.ndarray, np.ndarray]:
    """The nearest points (K, 3) on box ia and on box ib of separated box pairs, by brute force over
    vertex-box and edge-edge candidates (exact for two disjoint boxes)."""
    k = len(ia)
    ra, rb, ha, hb = rot[ia], rot[ib], size[ia], size[ib]
    oa, ob = origin[ia], origin[ib]
    corners_a = oa[:, None, :] + np.einsum("kij,kcj->kci", ra, _CORNERS[None] * ha[:, None, :])  # (K, 8, 3)
    corners_b = ob[:, None, :] + np.einsum("kij,kcj->kci", rb, _CORNERS[None] * hb[:, None, :])

    def clamp_onto(rot_, origin_, half, points):
        local = np.einsum("kji,kcj->kci", rot_, points - origin_[:, None, :])
        return origin_[:, None, :] + np.einsum("kij,kcj->kci", rot_, np.clip(local, -half[:, None, :], half[:, None, :]))

    on_b = clamp_onto(rb, ob, hb, corners_a)  # A's corners against B
    on_a = clamp_onto(ra, oa, ha, corners_b)
    ea0, ea1 = corners_a[:, _EDGES[:, 0]], corners_a[:, _EDGES[:, 1]]  # (K, 12, 3)
    eb0, eb1 = corners_b[:, _EDGES[:, 0]], corners_b[:, _EDGES[:, 1]]
    p1, q1 = np.repeat(ea0, 12, axis=1), np.repeat(ea1, 12, axis=1)  # (K, 144, 3): A's edge i with B's edge j
    p2, q2 = np.tile(eb0, (1, 12, 1)), np.tile(eb1, (1, 12, 1))
    s, t = segment_closest(p1.reshape(-1, 3), q1.reshape(-1, 3), p2.reshape(-1, 3), q2.reshape(-1, 3))
    edge_a = (p1 + s.reshape(k, 144, 1) * (q1 - p1))
    edge_b = (p2 + t.reshape(k, 144, 1) * (q2 - p2))
    cand_a = np.concatenate([corners_a, on_a, edge_a], axis=1)  # (K, 160, 3)
    cand_b = np.concatenate([on_b, corners_b, edge_b], axis=1)
    gap = cand_b - cand_a
    best = np.argmin(_dot(gap, gap), axis=1)
    rows = np.arange(k)
    return cand_a[rows, best], cand_b[rows, best]


def apart(rot, origin, size, ia, ib, sep, nearest, margin) -> tuple[Batch, np.ndarray, np.ndarray, Batch]:
    """One-point contacts of box pairs (ia, ib) (K,) apart by the SAT bound sep (K,) > 0 whose per-pair
    path ends in GJK: those marked `nearest` (K,) by along_axis and those whose true distance exceeds
    sep (no point pair can attain it). Returns (contacts, gjk, settled): gjk (K,) marks the pairs that
    go to GJK, settled (K,) those of them done here (a contact from their nearest points when a vertex
    is on either side or two edges cross, or none beyond the margin); gjk & ~settled are left to the
    caller to clip per pair along their nearest points (returned as the last Batch, one row per pair: what
    GJK would give them), ~gjk to the per-pair path whole."""
    pa, pb = nearest_points(rot, origin, size, ia, ib)
    gap = pb - pa
    dist = np.sqrt(_dot(gap, gap))
    scale = np.maximum(size[ia].max(axis=1), size[ib].max(axis=1))
    gjk = nearest | (dist > sep + _UNATTAINED * scale)
    normal = gap / np.where(dist > 0, dist, 1.0)[:, None]
    kind_a, ends_a = _features(rot[ia], origin[ia], size[ia], normal)
    kind_b, ends_b = _features(rot[ib], origin[ib], size[ib], -normal)
    point = ((kind_a == 1) | (kind_b == 1) | _crossing(normal, kind_a, ends_a, kind_b, ends_b)) & (dist > 0)
    within = gjk & point & (_dot(gap, normal) <= margin)
    settled = gjk & (point | (dist > margin))
    nearest = Batch(ia, ib, pa, pb, normal, dist)
    return Batch(ia[within], ib[within], pa[within], pb[within], normal[within], dist[within]), gjk, settled, nearest

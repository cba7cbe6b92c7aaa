"""Box-box contacts for many pairs at once beyond the face pass (boxface.py): a vertex or two crossing
edges along the SAT normal, box pairs apart (nearest points), an edge of one box on a face of the other.

Each pass gives what the per-pair path gives (convex.along_normal, then convex.convex_pair's GJK),
vectorised over the pairs, and returns a mask of the pairs it settled; the rest stay per pair:

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
* `edge_on_face`: overlapping pairs whose SAT normal is an edge-edge axis but whose features along it
  are an edge and a face (the face within FACE_ANGLE of the normal): the edge clipped to the face
  across n and lifted onto both, manifold.manifold's segment clip as one parameter interval (unless
  the face behind the edge rises by at most the margin: manifold.face_behind_edge clips that face).
Face against face along an edge-edge axis, and the apart pairs clipped along their nearest points,
stay per pair.
"""

from __future__ import annotations

import numpy as np

from .manifold import FACE_ANGLE, rise_behind_edge
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


_BOX_FACE = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)  # manifold's face corner order


def _face_polygon(rot, origin, half, direction):
    """Corners (K, 4, 3) and outward normal (K, 3) of each box's face along `direction`, in manifold's order."""
    rows = np.arange(len(rot))
    local = np.einsum("kji,kj->ki", rot, direction)
    axis = np.argmax(np.abs(local), axis=1)
    sign = np.where(local[rows, axis] >= 0, 1.0, -1.0)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    corners = np.zeros((len(rot), 4, 3))
    corners[rows, :, axis] = (sign * half[rows, axis])[:, None]
    corners[rows, :, i] = _BOX_FACE[None, :, 0] * half[rows, i][:, None]
    corners[rows, :, j] = _BOX_FACE[None, :, 1] * (half[rows, j] * sign)[:, None]
    return origin[:, None, :] + np.einsum("kij,kmj->kmi", rot, corners), sign[:, None] * rot[rows, :, axis]


def edge_on_face(rot, origin, size, ia, ib, normal, margin) -> tuple[Batch, np.ndarray]:
    """Overlapping box pairs (K,) whose features along the normal (A to B) are an edge of one and a face of
    the other: the edge clipped to the face across the normal and lifted back onto both, as
    manifold.manifold does one pair at a time (its segment clip as an interval of the edge's parameter).
    Returns the contacts and settled (K,); pairs with an end of the edge on a side line of the face, with
    no clipped point within the margin, or whose edge's face behind it rises by at most the margin (then
    manifold.face_behind_edge clips that face), are left to the per-pair path."""
    kind_a, ends_a = _features(rot[ia], origin[ia], size[ia], normal)
    kind_b, ends_b = _features(rot[ib], origin[ib], size[ib], -normal)
    face_a = kind_a == 3
    case = (face_a & (kind_b == 2)) | ((kind_a == 2) & (kind_b == 3))
    # an edge whose face behind it is clipped instead (manifold.face_behind_edge) stays per pair
    mags_a = np.abs(np.einsum("kji,kj->ki", rot[ia], normal))
    mags_b = np.abs(np.einsum("kji,kj->ki", rot[ib], normal))
    rise = np.where(face_a, rise_behind_edge(mags_b, size[ib]), rise_behind_edge(mags_a, size[ia]))
    case &= rise > margin
    poly_a, m_a = _face_polygon(rot[ia], origin[ia], size[ia], normal)
    poly_b, m_b = _face_polygon(rot[ib], origin[ib], size[ib], -normal)
    poly = np.where(face_a[:, None, None], poly_a, poly_b)
    plane = np.where(face_a[:, None], m_a, m_b)
    seg = np.where(face_a[:, None, None], ends_b, ends_a)
    e1, e2 = _tangent_basis(normal)
    flat_poly = np.stack([np.einsum("kmi,ki->km", poly, e1), np.einsum("kmi,ki->km", poly, e2)], axis=2)
    flat_seg = np.stack([np.einsum("kmi,ki->km", seg, e1), np.einsum("kmi,ki->km", seg, e2)], axis=2)
    nxt = np.roll(flat_poly, -1, axis=1)
    area = np.sum(flat_poly[..., 0] * nxt[..., 1] - nxt[..., 0] * flat_poly[..., 1], axis=1)
    orient = np.where(area >= 0, 1.0, -1.0)
    edge = nxt - flat_poly  # (K, 4, 2)
    rel = flat_seg[:, None, :, :] - flat_poly[:, :, None, :]  # (K, 4 edges, 2 ends, 2)
    side = orient[:, None, None] * (edge[:, :, None, 0] * rel[..., 1] - edge[:, :, None, 1] * rel[..., 0])
    s0, s1 = side[..., 0], side[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = s0 / (s0 - s1)
    t = np.where(np.isfinite(t), t, 0.0)  # no crossing (rows that are not an edge and a face)
    t_lo = np.max(np.where(s0 < 0, t, 0.0), axis=1)
    t_hi = np.min(np.where(s1 < 0, t, 1.0), axis=1)
    scale = np.linalg.norm(edge, axis=2)[:, :, None] * np.linalg.norm(flat_seg[:, 1] - flat_seg[:, 0], axis=1)[:, None, None]
    sharp = np.all(np.abs(side) > 1e-9 * scale, axis=(1, 2)) & (t_hi - t_lo > 1e-9)
    ok = case & sharp & ~np.any((s0 < 0) & (s1 < 0), axis=1)
    d2 = flat_seg[:, 1] - flat_seg[:, 0]
    flat = flat_seg[:, None, 0] + np.stack([t_lo, t_hi], axis=1)[:, :, None] * d2[:, None, :]  # (K, 2, 2)
    base = flat[..., :1] * e1[:, None, :] + flat[..., 1:] * e2[:, None, :]
    lift = (_dot(poly[:, 0], plane)[:, None] - np.einsum("kmi,ki->km", base, plane)) / _dot(normal, plane)[:, None]
    on_face = base + lift[..., None] * normal[:, None, :]
    lam = np.einsum("kmi,ki->km", flat - flat_seg[:, None, 0], d2) / np.maximum(_dot(d2, d2), 1e-300)[:, None]
    on_edge = seg[:, None, 0] + lam[..., None] * (seg[:, 1] - seg[:, 0])[:, None, :]
    pa = np.where(face_a[:, None, None], on_face, on_edge)
    pb = np.where(face_a[:, None, None], on_edge, on_face)
    dist = np.einsum("kmi,ki->km", pb - pa, normal)
    close = dist <= margin
    ok &= close.any(axis=1)
    # primitives.reduce_points on two points: both, unless they coincide (then the deepest)
    flat_b = pb - np.einsum("kmi,ki->km", pb, normal)[..., None] * normal[:, None, :]
    gap = flat_b[:, 1] - flat_b[:, 0]
    near = 1e-9 * np.max(np.abs(pb), axis=(1, 2))  # primitives.COINCIDENT x the points' magnitude
    one = _dot(gap, gap) <= near**2
    deepest = np.where(dist[:, 1] < dist[:, 0], 1, 0)
    keep = close & ok[:, None]
    both = close.all(axis=1)
    twice = np.flatnonzero(both & one)
    keep[twice, 1 - deepest[twice]] = False
    row, col = np.nonzero(keep)
    return Batch(ia[row], ib[row], pa[row, col], pb[row, col], normal[row], dist[row, col]), ok

"""Face-on-face box contacts for many box pairs at once (the resting and stacking case of box_box).

For every pair whose SAT axis is a face normal of the reference box and whose other (incident) box
shows a face or an edge to it (within manifold.FACE_ANGLE, as manifold.feature decides), the
incident face quad (or edge segment; or, for an edge whose face behind it rises by at most the margin,
that face, as manifold.face_behind_edge) is clipped against the reference face rectangle with
fixed-size candidate sets, all pairs in one array pass: the incident corners inside the rectangle
(4), the rectangle corners inside the incident quad (4, faces only) and the crossings of the quad's
sides with the rectangle's edges (16). Each candidate's distance is its
height above the reference face along the normal; candidates beyond the margin are dropped and at
most 4 kept per pair by the same rule as primitives.reduce_points, vectorised. This is the same
point set the per-pair Sutherland-Hodgman clip (manifold.py) gives.
"""

from __future__ import annotations

import numpy as np

from .manifold import FACE_ANGLE, rise_behind_edge
from .primitives import COINCIDENT, Batch

_COS_FACE, _SIN_FACE = np.cos(FACE_ANGLE), np.sin(FACE_ANGLE)
_QUAD = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)
_RECT = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)
# candidate layout: 4 incident corners, 4 rectangle corners, then 4 rectangle edges x 4 incident sides
_EDGE_KEEP = np.concatenate([[True, True, False, False], [False] * 4, np.tile([True, False, False, False], 4)])


def _cross2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _pick(score: np.ndarray) -> np.ndarray:
    """Row-wise argmax of a masked score (-inf where not allowed)."""
    return np.argmax(score, axis=1)


def reduce_batched(flat: np.ndarray, dist: np.ndarray, valid: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Mask (K, M) of at most 4 valid candidates per row spanning the patch (flat (K, M, 2) in-plane
    coordinates), chosen as primitives.reduce_points does: the deepest, the farthest from it, the
    largest triangle, the farthest outside that triangle; candidates within COINCIDENT x `magnitude`
    (K,) (of the candidates' world coordinates) of a chosen one, or of the line through two, add none."""
    rows = np.arange(len(flat))
    chosen = np.zeros_like(valid)
    has = valid.any(axis=1)
    first = _pick(np.where(valid, -dist, -np.inf))
    chosen[rows, first] = has
    rel = flat - flat[rows, first][:, None, :]
    length2 = np.einsum("kmi,kmi->km", rel, rel)
    second = _pick(np.where(valid, length2, -np.inf))
    near = COINCIDENT * magnitude
    spread = has & (length2[rows, second] > near**2)
    chosen[rows, second] |= spread
    side = _cross2(rel[rows, second][:, None, :], rel)
    tol = np.maximum(1e-12 * length2[rows, second], near * np.sqrt(length2[rows, second]))
    third_score = np.where(valid, np.abs(side), -np.inf)
    third = _pick(third_score)
    ok3 = spread & (third_score[rows, third] > tol)
    chosen[rows, third] |= ok3
    corners = np.stack([flat[rows, first], flat[rows, second], flat[rows, third]], axis=1)  # (K, 3, 2)
    orient = np.sign(_cross2(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]))
    beyond = np.max([-orient[:, None] * _cross2((corners[:, (k + 1) % 3] - corners[:, k])[:, None, :],
                                                 flat - corners[:, k][:, None, :]) for k in range(3)], axis=0)
    fourth_score = np.where(valid & ~chosen, beyond, -np.inf)
    fourth = _pick(fourth_score)
    chosen[rows, fourth] |= ok3 & (fourth_score[rows, fourth] > tol)
    return chosen & valid


def face_contacts(rot: np.ndarray, origin: np.ndarray, size: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                  normal: np.ndarray, axis: np.ndarray, margin: float) -> tuple[Batch, np.ndarray, np.ndarray]:
    """Contacts of box pairs (ia, ib) whose SAT axis index `axis` (K,) is a face (0-2 of A, 3-5 of B),
    `normal` (K, 3) from A to B. Returns the contacts, the pair (0..K-1) of each, and the handled mask
    (K,): pairs whose incident box shows a vertex get no contacts here and are left to the caller."""
    k_rows = np.arange(len(ia))
    ref_is_a = axis < 3
    ref = np.where(ref_is_a, ia, ib)
    inc = np.where(ref_is_a, ib, ia)
    ax = np.where(ref_is_a, axis, axis - 3)
    n_out = np.where(ref_is_a[:, None], normal, -normal)  # reference face's outward normal, towards inc
    r_ref, r_inc = rot[ref], rot[inc]
    h_ref, h_inc = size[ref], size[inc]
    ax1, ax2 = (ax + 1) % 3, (ax + 2) % 3
    u1, u2 = r_ref[k_rows, :, ax1], r_ref[k_rows, :, ax2]
    e = np.stack([h_ref[k_rows, ax1], h_ref[k_rows, ax2]], axis=1)  # (K, 2)
    centre = origin[ref] + n_out * h_ref[k_rows, ax][:, None]
    local = np.einsum("kji,kj->ki", r_inc, n_out)
    kf = np.argmax(np.abs(local), axis=1)
    is_face = np.abs(local[k_rows, kf]) >= _COS_FACE
    low = np.argmin(np.abs(local), axis=1)
    is_edge = ~is_face & (np.abs(local[k_rows, low]) <= _SIN_FACE)
    handled = is_face | is_edge
    is_edge &= rise_behind_edge(np.abs(local), h_inc) > margin  # else the face behind the edge (manifold.face_behind_edge)
    is_face = handled & ~is_edge
    sign = np.where(local[k_rows, kf] >= 0, -1.0, 1.0)
    k1, k2 = (kf + 1) % 3, (kf + 2) % 3
    face_centre = origin[inc] + (sign * h_inc[k_rows, kf])[:, None] * r_inc[k_rows, :, kf]
    span1 = h_inc[k_rows, k1][:, None] * r_inc[k_rows, :, k1]
    span2 = h_inc[k_rows, k2][:, None] * r_inc[k_rows, :, k2]
    quad = face_centre[:, None, :] + _QUAD[None, :, :1] * span1[:, None, :] + _QUAD[None, :, 1:] * span2[:, None, :]
    # An edge shown to the face: the quad degenerates to the segment [e0, e1, e1, e0] (its repeated
    # points and zero-length sides add no new candidates).
    corner = np.where(local >= 0, -h_inc, h_inc)  # incident box axes: the corner deepest towards the face
    ends = np.repeat(corner[:, None, :], 2, axis=1)
    ends[k_rows, 0, low], ends[k_rows, 1, low] = -h_inc[k_rows, low], h_inc[k_rows, low]
    segment = origin[inc][:, None, :] + np.einsum("kij,kmj->kmi", r_inc, ends)
    quad = np.where(is_edge[:, None, None], segment[:, [0, 1, 1, 0]], quad)
    rel = quad - centre[:, None, :]
    q2 = np.stack([np.einsum("kmi,ki->km", rel, u1), np.einsum("kmi,ki->km", rel, u2)], axis=2)  # (K, 4, 2)
    qz = np.einsum("kmi,ki->km", rel, n_out)  # heights above the reference face
    # (1) incident corners inside the rectangle
    inside1 = np.all(np.abs(q2) <= e[:, None, :] * (1 + 1e-12), axis=2)
    # (2) rectangle corners inside the incident quad (same side of every edge)
    rect = _RECT[None] * e[:, None, :]  # (K, 4, 2)
    edge = np.roll(q2, -1, axis=1) - q2  # (K, 4, 2)
    side = _cross2(edge[:, None, :, :], rect[:, :, None, :] - q2[:, None, :, :])  # (K, rect 4, edge 4)
    orient = np.sign(np.sum(_cross2(q2, np.roll(q2, -1, axis=1)), axis=1))  # quad winding
    inside2 = np.all(side * orient[:, None, None] >= -1e-12 * np.max(e, axis=1)[:, None, None] ** 2, axis=2)
    inside2 &= is_face[:, None]
    face_normal = sign[:, None] * r_inc[k_rows, :, kf]
    denom = np.where(is_face, np.einsum("ki,ki->k", face_normal, n_out), -1.0)
    rect3 = centre[:, None, :] + rect[..., :1] * u1[:, None, :] + rect[..., 1:] * u2[:, None, :]
    rz = np.einsum("ki,kmi->km", face_normal, face_centre[:, None, :] - rect3) / denom[:, None]
    # (3) quad edges crossing the rectangle's edges x = +-e1 and y = +-e2
    p, d = q2, edge
    cross_pts, cross_z, cross_ok = [], [], []
    for coord in (0, 1):
        for bound in (-1.0, 1.0):
            target = bound * e[:, coord][:, None]
            other = 1 - coord
            with np.errstate(divide="ignore", invalid="ignore"):  # sides parallel to the edge: no crossing
                t = (target - p[..., coord]) / d[..., coord]
                at = p[..., other] + t * d[..., other]
            ok = (t >= 0) & (t <= 1) & np.isfinite(t) & (np.abs(at) <= e[:, other][:, None] * (1 + 1e-12))
            t = np.where(ok, t, 0.0)
            pt = np.empty_like(p)
            pt[..., coord] = target
            pt[..., other] = np.where(ok, at, 0.0)
            cross_pts.append(pt)
            cross_z.append(qz + t * (np.roll(qz, -1, axis=1) - qz))
            cross_ok.append(ok)
    flat = np.concatenate([q2, rect] + cross_pts, axis=1)  # (K, 24, 2)
    height = np.concatenate([qz, rz] + cross_z, axis=1)
    valid = np.concatenate([inside1, inside2] + cross_ok, axis=1) & (height <= margin) & handled[:, None]
    # an edge's quad [e0, e1, e1, e0] repeats its corners (2, 3) and its side (sides 1-3): drop those
    valid[is_edge] &= _EDGE_KEEP
    magnitude = np.max(np.abs(centre), axis=1) + np.hypot(e[:, 0], e[:, 1])  # bounds the face's coordinates
    chosen = reduce_batched(flat, height, valid, magnitude)
    row, col = np.nonzero(chosen)
    on_ref = centre[row] + flat[row, col, :1] * u1[row] + flat[row, col, 1:] * u2[row]
    on_inc = on_ref + height[row, col][:, None] * n_out[row]
    a_first = ref_is_a[row][:, None]
    batch = Batch(ia[row], ib[row], np.where(a_first, on_ref, on_inc), np.where(a_first, on_inc, on_ref),
                  normal[row], height[row, col])
    return batch, row, handled

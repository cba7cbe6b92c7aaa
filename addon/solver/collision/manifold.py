"""Contact manifolds of convex pairs: several points where two flat or straight features touch.

Given the contact normal n (A to B) of a pair, `feature` finds the part of each shape that is
extreme along it: a face polygon (box face, hull face, cylinder end disc as an octagon) when a face
normal is within FACE_ANGLE of n, a segment (box edge, capsule or cylinder side line) when an axis
is within FACE_ANGLE of perpendicular, else a single point. `manifold` clips the two features
against each other in the plane across n (Sutherland-Hodgman for polygons, interval overlap for a
segment) and lifts every clipped point back onto both features; the signed distance of each point
is measured along n. A box lying on a box thus gets its (up to 4) corner contacts, a cylinder lying
on a box the two ends of its side line. A point feature on either side means a single contact,
which the caller takes from GJK/EPA or SAT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .primitives import MAX_POINTS, reduce_points, segment_closest
from .shapes import BOX, CAPSULE, CYLINDER, HULL, SPHERE, Shapes, support

FACE_ANGLE = 0.1  # rad: how far a face (or a side line) may tilt from the contact plane and still count
_COS_FACE, _SIN_FACE = np.cos(FACE_ANGLE), np.sin(FACE_ANGLE)
_DISC_SIDES = 8
_DISC = np.stack([np.cos(np.arange(_DISC_SIDES) * 2 * np.pi / _DISC_SIDES),
                  np.sin(np.arange(_DISC_SIDES) * 2 * np.pi / _DISC_SIDES)], axis=1)
_BOX_FACE = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)  # CCW about the face's own axis


@dataclass(frozen=True)
class Feature:
    """World points of a shape's extreme feature: 1 (vertex), 2 (segment) or >= 3 (convex polygon,
    in order) with the polygon's plane normal (outward), else None."""

    points: np.ndarray
    plane_normal: np.ndarray | None = None


def _face_of_box(rot, origin, half, axis: int, sign: float) -> Feature:
    i, j = (axis + 1) % 3, (axis + 2) % 3
    local = np.zeros((4, 3))
    local[:, axis] = sign * half[axis]
    local[:, i] = _BOX_FACE[:, 0] * half[i]
    local[:, j] = _BOX_FACE[:, 1] * half[j] * sign  # keeps the order counter-clockwise seen from outside
    return Feature(origin + local @ rot.T, sign * rot[:, axis])


def feature(shapes: Shapes, i: int, rot: np.ndarray, origin: np.ndarray, direction: np.ndarray,
            edge_face: bool = False) -> Feature:
    """The extreme feature of collider i (world frame rot, origin) along the unit `direction`; with
    `edge_face`, a box's edge is replaced by the face behind it (see face_behind_edge)."""
    code = shapes.shape[i]
    r, hl = shapes.size[i, 0], shapes.size[i, 1]
    if code == BOX:
        half = shapes.size[i]
        local = rot.T @ direction
        mags = np.abs(local)
        axis = int(np.argmax(mags))
        if mags[axis] >= _COS_FACE or (edge_face and mags.min() <= _SIN_FACE):
            return _face_of_box(rot, origin, half, axis, 1.0 if local[axis] >= 0 else -1.0)
        low = int(np.argmin(mags))
        if mags[low] <= _SIN_FACE:
            corner = np.where(local >= 0, half, -half)
            ends = np.array([corner, corner])
            ends[0, low], ends[1, low] = -half[low], half[low]
            return Feature(origin + ends @ rot.T)
        return Feature(support(shapes, i, rot, origin, direction)[None])
    if code == HULL:
        hull = shapes.hulls[i]
        local = rot.T @ direction
        k = int(np.argmax(hull.normals @ local))
        if hull.normals[k] @ local >= _COS_FACE:
            return Feature(origin + hull.vertices[hull.faces[k]] @ rot.T, rot @ hull.normals[k])
        # An edge: from the support vertex, the vertex reached by the least downward slope, if that
        # slope is within FACE_ANGLE of level. The support vertex itself is no candidate: for an edge
        # exactly across the direction (any edge-edge contact) the other end's slope is 0 up to
        # round-off, and it must not lose to the support vertex's own 0.
        top = int(np.argmax(hull.vertices @ local))
        rel = hull.vertices - hull.vertices[top]
        length = np.linalg.norm(rel, axis=1)
        length[top] = 1.0
        slope = rel @ local / length
        slope[top] = -np.inf
        other = int(np.argmax(slope))
        ends = [top] if slope[other] < -_SIN_FACE else [top, other]
        return Feature(origin + hull.vertices[ends] @ rot.T)
    if code in (CAPSULE, CYLINDER):
        axis = rot[:, 2]
        along = float(axis @ direction)
        radial = direction - along * axis
        rn = float(np.linalg.norm(radial))
        if code == CYLINDER and abs(along) >= _COS_FACE:
            sign = 1.0 if along >= 0 else -1.0
            # End disc as a polygon, counter-clockwise about its outward normal sign * axis.
            disc = _DISC[:, 0:1] * rot[:, 0] + sign * _DISC[:, 1:2] * rot[:, 1]
            return Feature(origin + sign * hl * axis + r * disc, sign * axis)
        if abs(along) <= _SIN_FACE and hl > 0 and rn > 0:
            offset = (r / rn) * radial
            return Feature(np.array([origin - hl * axis + offset, origin + hl * axis + offset]))
    if code == SPHERE or code in (CAPSULE, CYLINDER):
        return Feature(support(shapes, i, rot, origin, direction)[None])
    raise ValueError(f"collider {shapes.names[i]!r}: no contact feature for shape code {code}")


def rise_behind_edge(mags: np.ndarray, half: np.ndarray) -> np.ndarray:
    """How far the face behind each box's edge along a direction (the one of the two beside the edge that
    faces the direction more) rises from the edge along it, for boxes (K,) with mags = |R^T direction| (K, 3)
    and half sizes half (K, 3): its width across the edge times the slope. Rows with no edge (equal
    magnitudes) take axis 0."""
    rows = np.arange(len(mags))
    top, low = np.argmax(mags, axis=1), np.argmin(mags, axis=1)
    across = np.where(top == low, 0, 3 - top - low)
    return 2.0 * half[rows, across] * mags[rows, across]


def _rise_behind_edge(shapes: Shapes, i: int, rot: np.ndarray, direction: np.ndarray) -> float:
    """rise_behind_edge of box i (world rotation rot) along `direction`."""
    return float(rise_behind_edge(np.abs(rot.T @ direction)[None], shapes.size[i][None])[0])


def face_behind_edge(shapes: Shapes, a: int, b: int, rot: np.ndarray, origin: np.ndarray, n: np.ndarray,
                     fa: Feature, fb: Feature, margin: float) -> tuple[Feature, Feature]:
    """The features of a, b along n (A to B), with a box's edge shown to a face replaced by the face
    behind it when that face rises from the edge by at most the margin. Clipping that face keeps its
    corners within the margin, not only the edge's ends: a box landing tilted on its edge gets rows at
    the corners that will touch within the step. A steeper face keeps the edge, whose ends alone are
    stable (a leaning domino's face, flush with the other's sides, would add slivers of clipped points
    at 1e-9 perturbations)."""
    if (len(fa.points) >= 3 and len(fb.points) == 2 and shapes.shape[b] == BOX
            and _rise_behind_edge(shapes, b, rot[b], n) <= margin):
        fb = feature(shapes, b, rot[b], origin[b], -n, edge_face=True)
    elif (len(fb.points) >= 3 and len(fa.points) == 2 and shapes.shape[a] == BOX
            and _rise_behind_edge(shapes, a, rot[a], n) <= margin):
        fa = feature(shapes, a, rot[a], origin[a], n, edge_face=True)
    return fa, fb


def _tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y, z = float(n[0]), float(n[1]), float(n[2])
    if abs(x) < 0.9:  # n x (1, 0, 0)
        e1 = np.array([0.0, z, -y])
    else:  # n x (0, 1, 0)
        e1 = np.array([-z, 0.0, x])
    e1 /= np.sqrt(e1 @ e1)
    a, b, c = e1
    return e1, np.array([y * c - z * b, z * a - x * c, x * b - y * a])


def _ccw(poly: np.ndarray) -> np.ndarray:
    """The 2-D polygon in counter-clockwise order."""
    nxt = np.concatenate([poly[1:], poly[:1]])
    area = np.sum(poly[:, 0] * nxt[:, 1] - nxt[:, 0] * poly[:, 1])
    return poly if area >= 0 else poly[::-1]


def _clip_polygon(subject: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Sutherland-Hodgman: the part of 2-D polygon (or segment, 2 points) `subject` inside the convex
    counter-clockwise polygon `clip`."""
    out = subject
    closed = len(subject) >= 3
    for k in range(len(clip)):
        if len(out) == 0:
            break
        a, b = clip[k], clip[(k + 1) % len(clip)]
        edge = b - a
        side = edge[0] * (out[:, 1] - a[1]) - edge[1] * (out[:, 0] - a[0])  # >= 0 inside
        if not closed:  # a segment: clip its parameter interval
            if side[0] < 0 and side[1] < 0:
                return np.zeros((0, 2))
            if side[0] < 0 or side[1] < 0:
                t = side[0] / (side[0] - side[1])
                cut = out[0] + t * (out[1] - out[0])
                out = np.array([cut, out[1]]) if side[0] < 0 else np.array([out[0], cut])
            continue
        kept = []
        for m in range(len(out)):
            p, q = out[m], out[(m + 1) % len(out)]
            sp, sq = side[m], side[(m + 1) % len(out)]
            if sp >= 0:
                kept.append(p)
            if (sp >= 0) != (sq >= 0):
                kept.append(p + sp / (sp - sq) * (q - p))
        out = np.array(kept) if kept else np.zeros((0, 2))
    return out


def _lift(feat: Feature, flat: np.ndarray, e1: np.ndarray, e2: np.ndarray, n: np.ndarray) -> np.ndarray:
    """World points of feature `feat` that project to the 2-D points `flat` (m, 2)."""
    base = flat[:, :1] * e1 + flat[:, 1:] * e2
    if feat.plane_normal is not None:  # on the polygon's plane, moving along n
        m = feat.plane_normal
        s = (feat.points[0] @ m - base @ m) / (n @ m)
        return base + s[:, None] * n
    p, q = feat.points
    p2, q2 = np.array([p @ e1, p @ e2]), np.array([q @ e1, q @ e2])
    d = q2 - p2
    lam = (flat - p2) @ d / max(float(d @ d), 1e-300)
    return p + lam[:, None] * (q - p)


def manifold(fa: Feature, fb: Feature, n: np.ndarray, margin: float):
    """Contact points (point_a (m, 3), point_b (m, 3), distance (m,)) of features fa (of A, extreme
    along n) and fb (of B, extreme along -n), at most MAX_POINTS of them, with distance <= margin
    (m = 0 when the features overlap but no point is that close); None when either feature is a
    single point, when two segments cross, or when the features do not overlap across n."""
    na, nb = len(fa.points), len(fb.points)
    if na == 1 or nb == 1:
        return None
    e1, e2 = _tangent_basis(n)
    flat_a = np.stack([fa.points @ e1, fa.points @ e2], axis=1)
    flat_b = np.stack([fb.points @ e1, fb.points @ e2], axis=1)
    if na >= 3:
        clipped = _clip_polygon(_ccw(flat_b) if nb >= 3 else flat_b, _ccw(flat_a))
    elif nb >= 3:
        clipped = _clip_polygon(flat_a, _ccw(flat_b))
    else:  # two segments: only parallel ones touch along a line
        da, db = flat_a[1] - flat_a[0], flat_b[1] - flat_b[0]
        la, lb = np.linalg.norm(da), np.linalg.norm(db)
        if la == 0 or lb == 0 or abs(da[0] * db[1] - da[1] * db[0]) > 1e-3 * la * lb:
            return None
        u = da / la
        ta, tb = (flat_a - flat_a[0]) @ u, (flat_b - flat_a[0]) @ u
        lo, hi = max(ta.min(), tb.min()), min(ta.max(), tb.max())
        if hi < lo:
            return None
        offset = (flat_b[0] - flat_a[0]) - ((flat_b[0] - flat_a[0]) @ u) * u  # across, B's line from A's
        clipped = flat_a[0] + np.outer([lo, hi], u) + 0.5 * offset
    if len(clipped) == 0:
        return None
    pa, pb = _lift(fa, clipped, e1, e2, n), _lift(fb, clipped, e1, e2, n)
    dist = (pb - pa) @ n
    close = dist <= margin
    pa, pb, dist = pa[close], pb[close], dist[close]
    if not close.any():
        return pa, pb, dist
    keep = reduce_points(pb, dist, n, MAX_POINTS)
    return pa[keep], pb[keep], dist[keep]


def single_contact(fa: Feature, fb: Feature, n: np.ndarray, distance: float) -> tuple[np.ndarray, np.ndarray]:
    """Witness points of the one-point contact of features fa, fb at separation `distance` along n
    (a vertex against anything, or two crossing segments)."""
    if len(fb.points) == 1:
        return fb.points[0] - distance * n, fb.points[0]
    if len(fa.points) == 1:
        return fa.points[0], fa.points[0] + distance * n
    if len(fa.points) == 2 and len(fb.points) == 2:
        (p1, q1), (p2, q2) = fa.points, fb.points
        s, t = segment_closest(p1[None], q1[None], p2[None], q2[None])
        return p1 + s[0] * (q1 - p1), p2 + t[0] * (q2 - p2)
    raise ValueError("single_contact needs a point or two segments")


"""Closed-form contacts between simple shapes, vectorised over all pairs of one kind at once.

Each function takes the world frames of every collider (rot (n, 3, 3), origin (n, 3)), the sizes
(n, 3), the colliders of each pair (ia, ib, arrays (K,)) and the margin, and returns a `Batch` of the
contacts whose signed distance is <= margin, with normals from A (ia) to B (ib):

  plane-sphere, plane-box (every corner), plane-capsule (both end spheres), plane-cylinder (four rim
  points per end circle, starting at the deepest), plane-hull (every vertex, at most 4 kept per
  pair), sphere-sphere, sphere-box, sphere-capsule, capsule-capsule (two points when the axes are
  parallel and overlap, so a capsule can lie on another).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import cross

_PARALLEL = 1e-6  # |sin| between capsule axes below which they are treated as parallel
_BOX_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
_RIM_ANGLES = np.arange(4) * (np.pi / 2)
MAX_POINTS = 4  # contact points kept per pair of a many-point feature (hull vertices, clipped faces)
# Contact points closer than this, relative to the magnitude of their coordinates, are one point:
# ~4.5e6 machine epsilons, far above the round-off of a clipped point (a few eps, more where a clip
# edge nearly follows a polygon side) and far below any contact spacing that matters (1 nm at 1 m).
COINCIDENT = 1e-9


@dataclass(frozen=True)
class Batch:
    """Contacts as arrays: collider indices a, b (k,), world witness points (k, 3), unit normals from A
    to B (k, 3) and signed distances (k,)."""

    a: np.ndarray
    b: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:
        return len(self.a)

    def flipped(self) -> "Batch":
        return Batch(self.b, self.a, self.point_b, self.point_a, -self.normal, self.distance)

    def where(self, keep: np.ndarray) -> "Batch":
        return Batch(self.a[keep], self.b[keep], self.point_a[keep], self.point_b[keep], self.normal[keep],
                     self.distance[keep])


def empty_batch() -> Batch:
    return Batch(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)),
                 np.zeros(0))


def concatenate(batches: list[Batch]) -> Batch:
    batches = [b for b in batches if len(b)]
    if not batches:
        return empty_batch()
    return Batch(*(np.concatenate([getattr(b, f) for b in batches]) for f in
                   ("a", "b", "point_a", "point_b", "normal", "distance")))


def _batch(ia, ib, pa, pb, normal, dist, margin: float) -> Batch:
    """Flattened contacts (pair axes broadcast over any point axes) with distance <= margin."""
    shape = dist.shape
    ia = np.broadcast_to(ia.reshape(ia.shape + (1,) * (len(shape) - 1)), shape).ravel()
    ib = np.broadcast_to(ib.reshape(ib.shape + (1,) * (len(shape) - 1)), shape).ravel()
    normal = np.broadcast_to(normal.reshape(normal.shape[:1] + (1,) * (len(shape) - 1) + (3,)), shape + (3,))
    out = Batch(ia, ib, pa.reshape(-1, 3), pb.reshape(-1, 3), normal.reshape(-1, 3), dist.ravel())
    return out.where(out.distance <= margin)


def _unit(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Rows of v normalised; rows of (near) zero length replaced by the fallback rows."""
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    ok = norm > 1e-12
    return np.where(ok, v / np.where(ok, norm, 1.0), fallback)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def _plane(rot, origin, ia):
    return rot[ia][:, :, 2], origin[ia]


def plane_points(ia, ib, points_b, radius_b, rot, origin, margin) -> Batch:
    """Points (K, m, 3) of B with rounding radius (K, m) against the planes of ia."""
    n, p0 = _plane(rot, origin, ia)
    n_ = n[:, None, :]
    centre_dist = _dot(points_b - p0[:, None, :], n_)
    dist = centre_dist - radius_b
    pb = points_b - radius_b[..., None] * n_
    pa = points_b - centre_dist[..., None] * n_
    return _batch(ia, ib, pa, pb, n, dist, margin)


def plane_sphere(rot, origin, size, ia, ib, margin) -> Batch:
    return plane_points(ia, ib, origin[ib][:, None, :], size[ib, :1], rot, origin, margin)


def plane_box(rot, origin, size, ia, ib, margin) -> Batch:
    corners = origin[ib][:, None, :] + np.einsum("kij,kcj->kci", rot[ib], _BOX_CORNERS[None] * size[ib][:, None, :])
    return plane_points(ia, ib, corners, np.zeros(corners.shape[:2]), rot, origin, margin)


def capsule_ends(rot, origin, size, idx) -> np.ndarray:
    """End points (K, 2, 3) of the segments of capsules or cylinders idx."""
    axis = rot[idx][:, :, 2] * size[idx, 1:2]
    return np.stack([origin[idx] - axis, origin[idx] + axis], axis=1)


def plane_capsule(rot, origin, size, ia, ib, margin) -> Batch:
    ends = capsule_ends(rot, origin, size, ib)
    return plane_points(ia, ib, ends, np.repeat(size[ib, :1], 2, axis=1), rot, origin, margin)


def plane_cylinder(rot, origin, size, ia, ib, margin) -> Batch:
    n, _ = _plane(rot, origin, ia)
    axis = rot[ib][:, :, 2]
    deepest = -(n - _dot(n, axis)[:, None] * axis)  # towards the plane, across the axis
    first = _unit(deepest, rot[ib][:, :, 0])
    second = cross(axis, first)
    ring = (np.cos(_RIM_ANGLES)[None, :, None] * first[:, None, :]
            + np.sin(_RIM_ANGLES)[None, :, None] * second[:, None, :]) * size[ib, :1][:, None, :]
    ends = capsule_ends(rot, origin, size, ib)
    rim = (ends[:, :, None, :] + ring[:, None, :, :]).reshape(len(ib), -1, 3)
    return plane_points(ia, ib, rim, np.zeros(rim.shape[:2]), rot, origin, margin)


def reduce_points(points: np.ndarray, distance: np.ndarray, normal: np.ndarray, keep: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most `keep` (3 or 4) of the contact points (m, 3) of one pair that span the contact
    patch: the deepest, the farthest from it, the one making the largest triangle with those two, and
    the one farthest outside that triangle (a point on the triangle or inside it is not added).

    The rule applies to any m, so a point that coincides with a chosen one (within COINCIDENT of the
    coordinates' magnitude: a clipped vertex on the other polygon's side comes out twice, once as a
    vertex and once as a crossing, as round-off decides) or lies on the segment between two is never
    a contact of its own, and the count does not depend on round-off."""
    if not len(points):
        return np.arange(0)
    flat = points - np.outer(points @ normal, normal)
    first = int(np.argmin(distance))
    rel = flat - flat[first]
    length2 = np.einsum("mi,mi->m", rel, rel)
    second = int(np.argmax(length2))
    near = COINCIDENT * float(np.max(np.abs(points)))
    if length2[second] <= near * near:
        return np.array([first])
    side = cross(rel[second], rel) @ normal
    third = int(np.argmax(np.abs(side)))
    tol = max(1e-12 * float(length2[second]), near * float(np.sqrt(length2[second])))
    if abs(side[third]) <= tol:
        return np.array(sorted({first, second}))
    chosen = [first, second, third]
    if keep >= 4:
        outside = _outside_triangle(flat, flat[chosen], normal)
        outside[chosen] = -np.inf
        fourth = int(np.argmax(outside))
        if outside[fourth] > tol:
            chosen.append(fourth)
    return np.array(sorted(chosen))


def _outside_triangle(flat: np.ndarray, corners: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """How far (twice the area beyond the nearest-crossed edge) each point lies outside a triangle."""
    orient = np.sign(cross(corners[1] - corners[0], corners[2] - corners[0]) @ normal)
    beyond = [-orient * (cross(corners[(k + 1) % 3] - corners[k], flat - corners[k]) @ normal) for k in range(3)]
    return np.max(beyond, axis=0)


def plane_hull(rot, origin, hull_vertices, ia, ib, margin) -> Batch:
    """Planes ia against hulls ib; hull_vertices[j] are the collider-frame vertices of hull ib[j]."""
    n, p0 = _plane(rot, origin, ia)
    parts = []
    for k in range(len(ia)):
        world = origin[ib[k]] + hull_vertices[k] @ rot[ib[k]].T
        dist = (world - p0[k]) @ n[k]
        close = dist <= margin
        if not close.any():
            continue
        world, dist = world[close], dist[close]
        sel = reduce_points(world, dist, n[k])
        m = len(sel)
        parts.append(Batch(np.full(m, ia[k]), np.full(m, ib[k]), world[sel] - np.outer(dist[sel], n[k]), world[sel],
                           np.tile(n[k], (m, 1)), dist[sel]))
    return concatenate(parts)


def _spheres(ia, ib, ca, cb, ra, rb, margin, fallback) -> Batch:
    """Spheres (centres ca, cb (K, 3), radii (K,)) against each other."""
    delta = cb - ca
    length = np.linalg.norm(delta, axis=1)
    n = _unit(delta, fallback)
    dist = length - ra - rb
    return _batch(ia, ib, ca + ra[:, None] * n, cb - rb[:, None] * n, n, dist, margin)


_UP = np.array([0.0, 0.0, 1.0])


def sphere_sphere(rot, origin, size, ia, ib, margin) -> Batch:
    return _spheres(ia, ib, origin[ia], origin[ib], size[ia, 0], size[ib, 0], margin, _UP)


def sphere_box(rot, origin, size, ia, ib, margin) -> Batch:
    """Spheres ia against boxes ib: closest point of the box to the centre, or (centre inside) the
    nearest face."""
    rb, half = rot[ib], size[ib]
    local = np.einsum("kji,kj->ki", rb, origin[ia] - origin[ib])
    clamped = np.clip(local, -half, half)
    outside = np.any(np.abs(local) > half, axis=1)
    gap = local - clamped
    depth_to_face = half - np.abs(local)
    face = np.argmin(depth_to_face, axis=1)
    rows = np.arange(len(ia))
    face_normal = np.zeros_like(local)
    face_normal[rows, face] = np.where(local[rows, face] >= 0, 1.0, -1.0)
    inside_point = local.copy()
    inside_point[rows, face] = face_normal[rows, face] * half[rows, face]
    normal_box_local = np.where(outside[:, None], _unit(gap, face_normal), face_normal)  # box -> sphere
    surface_local = np.where(outside[:, None], clamped, inside_point)
    centre_dist = np.where(outside, np.linalg.norm(gap, axis=1), -depth_to_face[rows, face])
    r = size[ia, 0]
    normal = -np.einsum("kij,kj->ki", rb, normal_box_local)  # sphere -> box
    pb = origin[ib] + np.einsum("kij,kj->ki", rb, surface_local)
    pa = origin[ia] + r[:, None] * normal
    return _batch(ia, ib, pa, pb, normal, centre_dist - r, margin)


def segment_closest(p1, q1, p2, q2) -> tuple[np.ndarray, np.ndarray]:
    """Parameters s, t in [0, 1] of the closest points p1 + s (q1 - p1), p2 + t (q2 - p2) of segment
    pairs (K, 3) (Ericson, Real-Time Collision Detection 5.1.9; zero-length segments allowed)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    c, b = _dot(d1, r), _dot(d1, d2)
    tiny = 1e-300
    denom = a * e - b * b
    s = np.where(denom > 1e-12 * a * e, np.clip((b * f - c * e) / np.maximum(denom, tiny), 0.0, 1.0), 0.0)
    t = np.where(e > tiny, (b * s + f) / np.maximum(e, tiny), 0.0)
    low, high = t < 0.0, t > 1.0
    t = np.clip(t, 0.0, 1.0)
    s = np.where(low, np.clip(-c / np.maximum(a, tiny), 0.0, 1.0), s)
    s = np.where(high, np.clip((b - c) / np.maximum(a, tiny), 0.0, 1.0), s)
    s = np.where(a > tiny, s, 0.0)
    return s, t


def sphere_capsule(rot, origin, size, ia, ib, margin) -> Batch:
    ends = capsule_ends(rot, origin, size, ib)
    seg = ends[:, 1] - ends[:, 0]
    t = np.clip(_dot(origin[ia] - ends[:, 0], seg) / np.maximum(_dot(seg, seg), 1e-300), 0.0, 1.0)
    centre = ends[:, 0] + t[:, None] * seg
    return _spheres(ia, ib, origin[ia], centre, size[ia, 0], size[ib, 0], margin, rot[ib][:, :, 0])


def capsule_capsule(rot, origin, size, ia, ib, margin) -> Batch:
    ea, eb = capsule_ends(rot, origin, size, ia), capsule_ends(rot, origin, size, ib)
    s, t = segment_closest(ea[:, 0], ea[:, 1], eb[:, 0], eb[:, 1])
    ca = ea[:, 0] + s[:, None] * (ea[:, 1] - ea[:, 0])
    cb = eb[:, 0] + t[:, None] * (eb[:, 1] - eb[:, 0])
    ra, rb = size[ia, 0], size[ib, 0]
    fallback = _unit(cross(rot[ia][:, :, 2], rot[ib][:, :, 0]), rot[ia][:, :, 0])
    single = _spheres(ia, ib, ca, cb, ra, rb, margin, fallback)
    # Parallel, overlapping axes: the two ends of the overlap instead of one arbitrary point.
    ua, ub = rot[ia][:, :, 2], rot[ib][:, :, 2]
    hla, hlb = size[ia, 1], size[ib, 1]
    along_b = _dot(origin[ib] - origin[ia], ua)
    lo = np.maximum(-hla, along_b - hlb)
    hi = np.minimum(hla, along_b + hlb)
    parallel = (np.linalg.norm(cross(ua, ub), axis=1) < _PARALLEL) & (hi - lo > 1e-9 * (hla + hlb)) & (hla > 0)
    if not parallel.any():
        return single
    keep_single = single.where(~np.isin(single.a * (len(rot) + 1) + single.b,
                                        ia[parallel] * (len(rot) + 1) + ib[parallel]))
    k = np.flatnonzero(parallel)
    offset = origin[ib][k] - origin[ia][k] - along_b[k, None] * ua[k]  # from A's axis to B's, across
    ends_a = origin[ia][k][:, None, :] + np.stack([lo[k], hi[k]], axis=1)[:, :, None] * ua[k][:, None, :]
    ends_b = ends_a + offset[:, None, :]
    n = _unit(offset, fallback[k])
    pair = _spheres(np.repeat(ia[k], 2), np.repeat(ib[k], 2), ends_a.reshape(-1, 3), ends_b.reshape(-1, 3),
                    np.repeat(ra[k], 2), np.repeat(rb[k], 2), margin, np.repeat(n, 2, axis=0))
    return concatenate([keep_single, pair])

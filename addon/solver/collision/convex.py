"""Contacts of any two convex colliders (no planes): a normal from GJK/EPA (or from the caller, e.g.
box-box SAT), then a multi-point manifold from the features along it, else one point.

Used for the pairs without a closed form (anything with a cylinder or a hull, box-capsule) and, with
the SAT normal, for box-box.
"""

from __future__ import annotations

import numpy as np

from .gjk import closest_points
from .manifold import face_behind_edge, feature, manifold, single_contact
from .primitives import Batch, concatenate, empty_batch
from .shapes import CAPSULE, SPHERE, Shapes, core_radius, support


def _contact_batch(a: int, b: int, pa: np.ndarray, pb: np.ndarray, n: np.ndarray, dist: np.ndarray) -> Batch:
    m = len(dist)
    return Batch(np.full(m, a), np.full(m, b), pa, pb, np.tile(n, (m, 1)), dist)


def along_normal(shapes: Shapes, a: int, b: int, rot: np.ndarray, origin: np.ndarray, n: np.ndarray,
                 distance: float, margin: float, witness: tuple[np.ndarray, np.ndarray] | None = None) -> Batch | None:
    """Contacts of colliders a, b whose unit normal (A to B) is n and separation `distance`: the
    manifold of their features along n, else one point (`witness`, or from the features); None when
    neither applies (features that do not overlap across n and no witness)."""
    fa = feature(shapes, a, rot[a], origin[a], n)
    fb = feature(shapes, b, rot[b], origin[b], -n)
    fa, fb = face_behind_edge(shapes, a, b, rot, origin, n, fa, fb, margin)
    many = manifold(fa, fb, n, margin)
    if many is not None:
        pa, pb, dist = many
        return _contact_batch(a, b, pa, pb, n, dist)
    if witness is None:
        try:
            witness = single_contact(fa, fb, n, distance)
        except ValueError:
            return None
    pa, pb = witness
    dist = float((pb - pa) @ n)
    if dist > margin:
        return empty_batch()
    return _contact_batch(a, b, pa[None], pb[None], n, np.array([dist]))


def convex_pair(shapes: Shapes, a: int, b: int, rot: np.ndarray, origin: np.ndarray, margin: float) -> Batch:
    """Contacts of two convex colliders by GJK/EPA on their support maps."""
    def full(i):
        return lambda d: support(shapes, i, rot[i], origin[i], d)

    def core(i):
        return lambda d: support(shapes, i, rot[i], origin[i], d, core=True)

    rounded = (SPHERE, CAPSULE)
    found = closest_points(full(a), full(b), origin[a] - origin[b], core_radius(shapes, a), core_radius(shapes, b),
                           core(a) if shapes.shape[a] in rounded else None,
                           core(b) if shapes.shape[b] in rounded else None, cutoff=margin)
    if found is None:
        return empty_batch()
    return along_normal(shapes, a, b, rot, origin, found.normal, found.distance, margin,
                        (found.point_a, found.point_b))


def convex_pairs(shapes: Shapes, rot: np.ndarray, origin: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                 margin: float) -> Batch:
    return concatenate([convex_pair(shapes, int(a), int(b), rot, origin, margin) for a, b in zip(ia, ib)])

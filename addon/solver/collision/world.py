"""CollisionWorld: every contact of a mechanism's colliders at given body poses.

Built once per mechanism (compiled shapes, which body pairs may touch); `contacts(positions,
quaternions, margin)` runs the broad phase (sort-and-sweep on world AABBs, planes against all),
drops the pairs that never collide, sorts the rest by shape pair and runs each kind of pair at once
(primitives.py closed forms, boxbox.py SAT, convex.py GJK/EPA + manifold). With the C kernels loaded the
query runs in native/collide.c, its twin, which hands the pairs it does not finish back to those kernels.

Pairs that never collide: two colliders on the same body, two world colliders, and colliders on
two bodies joined directly by a joint other than 'free' (a free joint constrains nothing, so a
body hanging from the world by one still lands on world colliders; a body on a hinge to the world
does not collide with world colliders).

Friction of a contact is the geometric mean sqrt(mu_a mu_b) of the two colliders' coefficients
(0 when either is 0, mu when both are mu).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import quat_to_matrix
from ..model import WORLD, Mechanism
from ..native import collide_binding
from ..native.collide_binding import NativeQuery
from .boxbox import box_box
from .broadphase import plane_pairs, sweep_pairs
from .convex import convex_pairs
from .primitives import (
    Batch,
    capsule_capsule,
    concatenate,
    plane_box,
    plane_capsule,
    plane_cylinder,
    plane_hull,
    plane_sphere,
    sphere_box,
    sphere_capsule,
    sphere_sphere,
)
from .shapes import (
    BOX,
    CAPSULE,
    CYLINDER,
    HULL,
    PLANE,
    SPHERE,
    aabbs,
    compile_shapes,
    world_frames,
)


@dataclass(frozen=True, eq=False)
class ContactPoint:
    """One contact point between colliders collider_a and collider_b (indices into Mechanism.colliders).

    body_a, body_b index Mechanism.bodies (-1: the world). point_a, point_b (3,) are the witness
    points in the body frame of a / b (world frame for the world); normal (3,) is the world unit
    normal from A to B; distance = normal . (world point_b - world point_a), > 0 apart, < 0
    penetrating; friction the combined coefficient sqrt(mu_a mu_b).
    """

    collider_a: int
    collider_b: int
    body_a: int
    body_b: int
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    distance: float
    friction: float


@dataclass(frozen=True)
class Contacts:
    """All contacts of one query as arrays (k contacts), the same fields as ContactPoint, plus the
    witness points in world axes (point_a_world, point_b_world)."""

    collider_a: np.ndarray
    collider_b: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    distance: np.ndarray
    friction: np.ndarray
    point_a_world: np.ndarray
    point_b_world: np.ndarray

    def __len__(self) -> int:
        return len(self.distance)

    def points(self) -> list[ContactPoint]:
        return [ContactPoint(int(self.collider_a[k]), int(self.collider_b[k]), int(self.body_a[k]),
                             int(self.body_b[k]), self.point_a[k], self.point_b[k], self.normal[k],
                             float(self.distance[k]), float(self.friction[k])) for k in range(len(self))]


def _closed_form(kernel):
    def run(shapes, rot, origin, ia, ib, margin):
        return kernel(rot, origin, shapes.size, ia, ib, margin)
    return run


def _plane_hull(shapes, rot, origin, ia, ib, margin):
    return plane_hull(rot, origin, [shapes.hulls[int(i)].vertices for i in ib], ia, ib, margin)


# Shape pair (code of A, code of B), A first as listed, -> kernel. Pairs not listed (box-capsule,
# anything with a cylinder or a hull) go to the GJK/EPA path with A the lower shape code.
_KERNELS = {
    (PLANE, SPHERE): _closed_form(plane_sphere),
    (PLANE, BOX): _closed_form(plane_box),
    (PLANE, CAPSULE): _closed_form(plane_capsule),
    (PLANE, CYLINDER): _closed_form(plane_cylinder),
    (PLANE, HULL): _plane_hull,
    (SPHERE, SPHERE): _closed_form(sphere_sphere),
    (SPHERE, BOX): _closed_form(sphere_box),
    (SPHERE, CAPSULE): _closed_form(sphere_capsule),
    (CAPSULE, CAPSULE): _closed_form(capsule_capsule),
    (BOX, BOX): box_box,
}


def _first(code_a: np.ndarray, code_b: np.ndarray) -> np.ndarray:
    """True where the pair (a, b) is already in kernel order: a plane first, else the lower code first."""
    return np.where(code_b == PLANE, False, np.where(code_a == PLANE, True, code_a <= code_b))


class CollisionWorld:
    """Contacts between the colliders of one mechanism (immutable after construction).

    With the C kernels loaded (native.collide_binding.LIB) and no hull colliders, `detect` runs the query in
    collide.c, which finishes the pairs it has a closed form or a box pass for and hands the rest (cylinders,
    box-capsule, box pairs it cannot settle exactly as numpy would) back to the numpy kernels; native=False (or
    SYMPLEX_NO_NATIVE=1) keeps the whole query in numpy, the reference. `native_query` is the C query's
    binding (native.collide_binding.NativeQuery), None on the numpy path.
    """

    def __init__(self, mechanism: Mechanism, native: bool = True):
        self.mechanism = mechanism
        self.shapes = compile_shapes(mechanism)
        self.nbody = len(mechanism.bodies)
        index = {b.name: i for i, b in enumerate(mechanism.bodies)}
        index[WORLD] = -1
        keys = [self._key(index[j.parent], index[j.child]) for j in mechanism.joints if j.type != "free"]
        self._joined = np.unique(np.array(keys, dtype=np.int64))
        self._planes = np.flatnonzero(self.shapes.shape == PLANE)
        self._solids = np.flatnonzero(self.shapes.shape != PLANE)
        shapes = self.shapes
        native = native and collide_binding.LIB is not None and not shapes.hulls
        self.native_query = NativeQuery(shapes.shape, shapes.body, shapes.rotation_local, shapes.position_local,
                                        shapes.size, shapes.friction, self.nbody, self._joined,
                                        Contacts) if native else None

    def _key(self, body_a, body_b):
        """An integer per unordered body pair (the world is -1)."""
        lo, hi = np.minimum(body_a, body_b) + 1, np.maximum(body_a, body_b) + 1
        return lo * (self.nbody + 1) + hi

    def margins(self, margin: float | np.ndarray) -> np.ndarray:
        """Each collider's margin (n,) from one margin for all, or from one per body (B,) (world colliders 0)."""
        if np.ndim(margin) == 0:
            return np.full(self.shapes.count, float(margin))
        margin = np.asarray(margin, dtype=float)
        if margin.shape != (self.nbody,):
            raise ValueError(f"collision query: a margin per body ({self.nbody}) expected, got shape {margin.shape}")
        body = self.shapes.body
        return np.where(body >= 0, margin[np.maximum(body, 0)], 0.0)

    def candidate_pairs(self, rot: np.ndarray, origin: np.ndarray,
                        margin: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Collider pairs (i, j) that may collide and whose bounding boxes, each grown by its collider's margin
        (one for all, or (n,)), meet; a plane's pairs, the boxes within the plane's margin beyond their own (a
        pair's contacts are those within the larger of its two margins)."""
        margin = np.broadcast_to(np.asarray(margin, dtype=float), (self.shapes.count,))
        lower, upper = aabbs(self.shapes, rot, origin)
        solids = self._solids
        grow = margin[solids][:, None]
        lower_s, upper_s = lower[solids] - grow, upper[solids] + grow
        i, j = sweep_pairs(lower_s, upper_s)
        i, j = solids[i], solids[j]
        if len(self._planes):
            reach = np.maximum(margin[self._planes][None, :] - grow, 0.0)  # (solids, planes): beyond the box's own
            p, s = plane_pairs(rot[self._planes][:, :, 2], origin[self._planes], lower_s, upper_s, reach)
            i, j = np.concatenate([i, self._planes[p]]), np.concatenate([j, solids[s]])
        body = self.shapes.body
        ba, bb = body[i], body[j]
        keep = (ba != bb) & ~np.isin(self._key(ba, bb), self._joined)
        return i[keep], j[keep]

    def detect(self, positions: np.ndarray, quaternions: np.ndarray, margin: float | np.ndarray = 0.0) -> Contacts:
        """Every contact with signed distance <= margin, as arrays (see Contacts and ContactPoint),
        sorted by (collider_a, collider_b): the same pairs in the same numbers give the same order from
        one configuration to the next (the points of one pair keep their detection order).

        positions (B, 3) and quaternions (B, 4) (w x y z) are the world poses of the body frames, in the
        order of Mechanism.bodies (as in Trajectory.poses). margin: one for every pair, or one per body (B,),
        when a pair's margin is the larger of its two bodies' (the world's 0).
        """
        positions = np.asarray(positions, dtype=float).reshape(-1, 3)
        quaternions = np.asarray(quaternions, dtype=float).reshape(-1, 4)
        margin = self.margins(margin)
        if self.native_query is not None:
            native, leftover = self.native_query.run(positions, quaternions, margin)
            if not len(leftover):
                return native
            # the rest in numpy, with numpy's own frames: GJK/EPA's answers move with their inputs' round-off
            rot, origin = world_frames(self.shapes, positions, quaternions)
            rest = self._narrow(rot, origin, leftover[:, 0], leftover[:, 1], margin)
            both = [native, self._to_bodies(rest, positions, quaternions)]
            merged = {f: np.concatenate([getattr(c, f) for c in both]) for f in Contacts.__dataclass_fields__}
            order = np.lexsort((merged["collider_b"], merged["collider_a"]))
            return Contacts(**{f: v[order] for f, v in merged.items()})
        rot, origin = world_frames(self.shapes, positions, quaternions)
        i, j = self.candidate_pairs(rot, origin, margin)
        code = self.shapes.shape
        ordered = _first(code[i], code[j])
        batch = self._narrow(rot, origin, np.where(ordered, i, j), np.where(ordered, j, i), margin)
        return self._to_bodies(batch.where(np.lexsort((batch.b, batch.a))), positions, quaternions)

    def _narrow(self, rot: np.ndarray, origin: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                margin: np.ndarray) -> Batch:
        """Contacts of collider pairs (ia, ib) in kernel order within the larger margin (n,) of their colliders,
        each kind of pair with the same margin at once (per-body margins come in a few levels:
        maximal/interior_point.query_margins)."""
        code = self.shapes.shape
        kind = code[ia] * 8 + code[ib]
        pair_margin = np.maximum(margin[ia], margin[ib])
        parts = []
        for k in np.unique(kind):
            of_kind = kind == k
            kernel = _KERNELS.get((int(k) // 8, int(k) % 8)) or convex_pairs
            for m in np.unique(pair_margin[of_kind]):
                sel = of_kind & (pair_margin == m)
                parts.append(kernel(self.shapes, rot, origin, ia[sel], ib[sel], float(m)))
        return concatenate(parts)

    def contacts(self, positions: np.ndarray, quaternions: np.ndarray, margin: float = 0.0) -> list[ContactPoint]:
        """Every contact with signed distance <= margin (see `detect` for the arguments)."""
        return self.detect(positions, quaternions, margin).points()

    def _to_bodies(self, batch: Batch, positions, quaternions) -> Contacts:
        body = self.shapes.body
        ba, bb = body[batch.a], body[batch.b]
        rot_body = quat_to_matrix(quaternions) if len(quaternions) else np.zeros((0, 3, 3))
        mu = self.shapes.friction
        return Contacts(
            collider_a=batch.a, collider_b=batch.b, body_a=ba, body_b=bb,
            point_a=_in_body(batch.point_a, ba, positions, rot_body),
            point_b=_in_body(batch.point_b, bb, positions, rot_body),
            normal=batch.normal, distance=batch.distance, friction=np.sqrt(mu[batch.a] * mu[batch.b]),
            point_a_world=batch.point_a, point_b_world=batch.point_b,
        )


def _in_body(points: np.ndarray, body: np.ndarray, positions: np.ndarray, rot_body: np.ndarray) -> np.ndarray:
    """World points (k, 3) in the frames of bodies (k,) (-1: left in world axes)."""
    out = points.copy()
    on = body >= 0
    b = body[on]
    out[on] = np.einsum("kji,kj->ki", rot_body[b], points[on] - positions[b])
    return out

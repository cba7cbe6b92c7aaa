"""Compiled collider shapes: flat read-only arrays, world frames, bounding boxes and support points.

`compile_shapes(mechanism)` turns Mechanism.colliders into a `Shapes` (shape codes, owning body
index, local frames, sizes, friction, convex hulls with merged faces) once. Per configuration,
`world_frames` gives every collider's world rotation and origin (vectorised over colliders) and
`aabbs` their world bounding boxes; `body_reach` how far each body's colliders reach from its centre of
mass (what bounds a point's speed, for the query margin of a step); `support` is the farthest point of one collider along a
direction, the only thing GJK/EPA needs. Shapes are described in docs/collision.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull

from ..lie import quat_to_matrix
from ..model import WORLD, Mechanism

SPHERE, BOX, CAPSULE, CYLINDER, PLANE, HULL = range(6)
SHAPE_CODES = {"sphere": SPHERE, "box": BOX, "capsule": CAPSULE, "cylinder": CYLINDER, "plane": PLANE, "hull": HULL}
_COPLANAR = 1e-6  # hull facets whose unit normals and offsets (relative to size) agree to this form one face


@dataclass(frozen=True)
class Hull:
    """A convex polytope in its collider frame: vertices (V, 3), faces as CCW vertex index lists
    (seen from outside) with outward unit normals (F, 3) and offsets (F,) (normal . x <= offset inside)."""

    vertices: np.ndarray
    faces: tuple[np.ndarray, ...]
    normals: np.ndarray
    offsets: np.ndarray


@dataclass(frozen=True)
class Shapes:
    """Every collider of a mechanism as arrays (n colliders, index space of Mechanism.colliders)."""

    names: tuple[str, ...]
    shape: np.ndarray  # (n,) SHAPE_CODES values
    body: np.ndarray  # (n,) index into Mechanism.bodies, -1 for the world
    rotation_local: np.ndarray  # (n, 3, 3) collider axes in the body frame (world frame for the world)
    position_local: np.ndarray  # (n, 3)
    size: np.ndarray  # (n, 3): sphere (r, 0, 0), box (hx, hy, hz), capsule/cylinder (r, half_length, 0)
    friction: np.ndarray  # (n,)
    hulls: dict[int, Hull]  # collider index -> hull, for HULL colliders

    @property
    def count(self) -> int:
        return len(self.names)


def half_thickness(shapes: Shapes) -> np.ndarray:
    """Half the thinnest extent of each collider (n,) in m: a sphere's, capsule's or cylinder's radius, a box's
    smallest half-size, half the thinnest side of a hull's bounding box in its frame; inf for a plane."""
    out = np.full(shapes.count, np.inf)
    for i, code in enumerate(shapes.shape):
        if code == BOX:
            out[i] = float(np.min(shapes.size[i]))
        elif code in (SPHERE, CAPSULE, CYLINDER):
            out[i] = float(shapes.size[i, 0])
        elif code == HULL:
            vertices = shapes.hulls[i].vertices
            out[i] = 0.5 * float(np.min(vertices.max(axis=0) - vertices.min(axis=0)))
    return out


def body_reach(shapes: Shapes, com: np.ndarray) -> np.ndarray:
    """How far any point of each body's colliders lies from its centre of mass (B,) in m, com (B, 3) in the body
    frames (0 for a body without colliders): a point of body i moves by at most |v_i| + reach_i |w_i| per
    second. A collider reaches |its origin - com| plus its bounding radius: a sphere's r, a box's |half sizes|, a
    capsule's r + half length, a cylinder's sqrt(r^2 + half length^2), a hull's farthest vertex."""
    size, code = shapes.size, shapes.shape
    radius = np.zeros(shapes.count)
    radius[code == SPHERE] = size[code == SPHERE, 0]
    radius[code == BOX] = np.linalg.norm(size[code == BOX], axis=1)
    radius[code == CAPSULE] = size[code == CAPSULE, 0] + size[code == CAPSULE, 1]
    radius[code == CYLINDER] = np.hypot(size[code == CYLINDER, 0], size[code == CYLINDER, 1])
    for i, hull in shapes.hulls.items():
        radius[i] = float(np.max(np.linalg.norm(hull.vertices, axis=1)))
    on = np.nonzero(shapes.body >= 0)[0]
    body = shapes.body[on]
    out = np.zeros(len(com))
    np.maximum.at(out, body, np.linalg.norm(shapes.position_local[on] - com[body], axis=1) + radius[on])
    return out


def convex_hull(points: np.ndarray) -> Hull:
    """The convex hull of points (k, 3) with coplanar triangles merged into polygon faces."""
    points = np.asarray(points, dtype=float)
    qh = ConvexHull(points)
    vertices = points[qh.vertices]
    remap = {int(v): i for i, v in enumerate(qh.vertices)}
    scale = float(np.max(np.abs(vertices))) or 1.0
    groups: list[tuple[np.ndarray, float, set[int]]] = []
    for simplex, eq in zip(qh.simplices, qh.equations):
        normal, offset = eq[:3], -eq[3]
        for g_normal, g_offset, members in groups:
            if np.abs(g_normal - normal).max() < _COPLANAR and abs(g_offset - offset) < _COPLANAR * scale:
                members.update(remap[int(v)] for v in simplex)
                break
        else:
            groups.append((normal, offset, {remap[int(v)] for v in simplex}))
    faces, normals, offsets = [], [], []
    for normal, offset, members in groups:
        idx = np.array(sorted(members))
        centre = vertices[idx].mean(axis=0)
        e1 = vertices[idx[0]] - centre
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(normal, e1)
        rel = vertices[idx] - centre
        faces.append(idx[np.argsort(np.arctan2(rel @ e2, rel @ e1))])
        normals.append(normal)
        offsets.append(offset)
    arrays = [vertices, np.array(normals), np.array(offsets)]
    for a in arrays:
        a.flags.writeable = False
    return Hull(arrays[0], tuple(faces), arrays[1], arrays[2])


def compile_shapes(mechanism: Mechanism) -> Shapes:
    """Shapes of `mechanism.colliders` (assumed validated by mechfile.validate.validate_mechanism)."""
    index = {b.name: i for i, b in enumerate(mechanism.bodies)}
    colliders = mechanism.colliders
    n = len(colliders)
    size = np.zeros((n, 3))
    hulls = {}
    for i, c in enumerate(colliders):
        size[i, : len(c.size)] = c.size
        if c.shape == "hull":
            hulls[i] = convex_hull(np.array(c.vertices, dtype=float))
    arrays = [
        np.array([SHAPE_CODES[c.shape] for c in colliders], dtype=np.int64),
        np.array([-1 if c.body == WORLD else index[c.body] for c in colliders], dtype=np.int64),
        quat_to_matrix(np.array([c.orientation for c in colliders], dtype=float).reshape(n, 4)),
        np.array([c.position for c in colliders], dtype=float).reshape(n, 3),
        size,
        np.array([c.friction for c in colliders], dtype=float),
    ]
    for a in arrays:
        a.flags.writeable = False
    return Shapes(tuple(c.name for c in colliders), *arrays, hulls)


def world_frames(shapes: Shapes, positions: np.ndarray, quaternions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World rotation (n, 3, 3) and origin (n, 3) of every collider frame.

    positions (B, 3) and quaternions (B, 4) (w x y z) are the world poses of the body frames.
    """
    rot_body = quat_to_matrix(np.asarray(quaternions, dtype=float).reshape(-1, 4))
    positions = np.asarray(positions, dtype=float).reshape(-1, 3)
    on_body = shapes.body >= 0
    rot = shapes.rotation_local.copy()
    origin = shapes.position_local.copy()
    b = shapes.body[on_body]
    rot[on_body] = rot_body[b] @ shapes.rotation_local[on_body]
    origin[on_body] = positions[b] + np.einsum("kij,kj->ki", rot_body[b], shapes.position_local[on_body])
    return rot, origin


def hull_vertices_world(hull: Hull, rot: np.ndarray, origin: np.ndarray) -> np.ndarray:
    return origin + hull.vertices @ rot.T


def aabbs(shapes: Shapes, rot: np.ndarray, origin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World bounding boxes (lower (n, 3), upper (n, 3)); planes get infinite boxes."""
    code, size = shapes.shape, shapes.size
    half = np.zeros_like(origin)
    axis = rot[:, :, 2]
    r, hl = size[:, :1], size[:, 1:2]
    sel = code == SPHERE
    half[sel] = r[sel]
    sel = code == BOX
    half[sel] = np.einsum("kij,kj->ki", np.abs(rot[sel]), size[sel])
    sel = code == CAPSULE
    half[sel] = np.abs(axis[sel]) * hl[sel] + r[sel]
    sel = code == CYLINDER
    half[sel] = np.abs(axis[sel]) * hl[sel] + r[sel] * np.sqrt(np.clip(1.0 - axis[sel] ** 2, 0.0, 1.0))
    lower, upper = origin - half, origin + half
    for i, hull in shapes.hulls.items():
        world = hull_vertices_world(hull, rot[i], origin[i])
        lower[i], upper[i] = world.min(axis=0), world.max(axis=0)
    sel = code == PLANE
    lower[sel], upper[sel] = -np.inf, np.inf
    return lower, upper


def core_radius(shapes: Shapes, i: int) -> float:
    """Radius of the rounding of collider i: spheres are points and capsules segments inflated by it."""
    return float(shapes.size[i, 0]) if shapes.shape[i] in (SPHERE, CAPSULE) else 0.0


def support(shapes: Shapes, i: int, rot: np.ndarray, origin: np.ndarray, direction: np.ndarray,
            core: bool = False) -> np.ndarray:
    """The point of collider i (world frame rot (3, 3), origin (3,)) farthest along `direction`.

    With `core`, spheres and capsules are their centre point and segment (no radius).
    """
    code = shapes.shape[i]
    r, hl = shapes.size[i, 0], shapes.size[i, 1]
    d = np.asarray(direction, dtype=float)
    norm = float(np.linalg.norm(d))
    unit = d / norm if norm > 0 else np.zeros(3)
    if code == SPHERE:
        return origin if core else origin + r * unit
    if code == BOX:
        local = rot.T @ d
        return origin + rot @ np.where(local >= 0, shapes.size[i], -shapes.size[i])
    if code == HULL:
        hull = shapes.hulls[i]
        return origin + rot @ hull.vertices[int(np.argmax(hull.vertices @ (rot.T @ d)))]
    axis = rot[:, 2]
    along = float(axis @ d)
    end = origin + (hl if along >= 0 else -hl) * axis
    if code == CAPSULE:
        return end if core else end + r * unit
    if code == CYLINDER:
        radial = d - along * axis
        rn = float(np.linalg.norm(radial))
        return end + (r / rn) * radial if rn > 1e-12 * max(norm, 1e-300) else end
    raise ValueError(f"collider {shapes.names[i]!r}: a plane has no support point")

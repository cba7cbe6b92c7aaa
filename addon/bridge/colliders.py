"""Rigid body collision shapes -> Colliders (read by read._read_rigid_bodies for the 'maximal' method).

Blender centres a rigid body's collision shape on the object origin, in the object's axes, sized by
its dimensions (dx, dy, dz, scale included). The collider follows:
  BOX          box, half extents (dx, dy, dz) / 2
  SPHERE       sphere, radius max(dx, dy, dz) / 2
  CAPSULE      capsule along local Z, radius max(dx, dy) / 2, half length max(dz / 2 - radius, 0)
  CYLINDER     cylinder along local Z, radius max(dx, dy) / 2, half length dz / 2
  CONE         hull of a 24-sided base disc at -dz/2 (radius max(dx, dy) / 2) and the apex at +dz/2
  CONVEX_HULL  hull of the mesh vertices (scale included; only the hull's corners are kept)
  MESH         the same hull, with a warning (concave meshes are not simulated as such)
  COMPOUND     refused (the error names the object)
A passive (or disabled) object is a collider of the world, fixed at its start-frame pose. A flat
passive object (a plane mesh: one dimension zero, or hull vertices all in one plane) becomes an
infinite plane through its vertices, its normal the side its faces point to; a flat active object
is refused (it has no volume to collide with). Friction is bullet.collider_friction of the rigid
body's friction, so contacts combine it as Bullet does (the product of the two coefficients).
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from mathutils import Matrix

from ..solver.lie import frame_from_axis, matrix_to_quat, quat_to_matrix
from ..solver.collision.shapes import convex_hull
from ..solver.model import WORLD, Collider
from . import bullet, reference

CONE_SIDES = 24
FLAT = 1e-6  # a thickness below this fraction of the largest dimension is flat


def _mesh_vertices(obj: bpy.types.Object, to_body: np.ndarray) -> np.ndarray:
    co = np.empty(3 * len(obj.data.vertices), dtype=np.float64)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3) @ to_body[:3, :3].T + to_body[:3, 3]


def _face_side(obj: bpy.types.Object, to_body: np.ndarray) -> np.ndarray:
    """Sum of the mesh's polygon normals in body axes (the side a flat mesh faces)."""
    normals = np.empty(3 * len(obj.data.polygons), dtype=np.float64)
    obj.data.polygons.foreach_get("normal", normals)
    total = normals.reshape(-1, 3).sum(axis=0)
    # normals transform with the inverse transpose of the scale/shear part
    return np.linalg.inv(to_body[:3, :3]).T @ total


def _flat_plane(name: str, body: str, points: np.ndarray, facing: np.ndarray, friction: float) -> Collider:
    """An infinite plane through coplanar points (k, 3), its normal on the `facing` side."""
    centre = points.mean(axis=0)
    normal = np.linalg.svd(points - centre)[2][2]
    if normal @ facing < 0:
        normal = -normal
    return Collider(name, body, "plane", (), _tuple(centre), _tuple(matrix_to_quat(frame_from_axis(normal))),
                    friction=friction)


def _tuple(v) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


def _cone(dims: np.ndarray) -> tuple[tuple[float, float, float], ...]:
    r, half = max(dims[0], dims[1]) / 2.0, dims[2] / 2.0
    ring = [(r * math.cos(2 * math.pi * k / CONE_SIDES), r * math.sin(2 * math.pi * k / CONE_SIDES), -half)
            for k in range(CONE_SIDES)]
    return tuple(ring) + ((0.0, 0.0, half),)


def _in_world(collider: Collider, matrix: Matrix) -> Collider:
    """A collider given in the object's body axes placed in the world at the object's rigid pose."""
    rigid = np.array(reference.rigid_part(matrix))
    rot = rigid[:3, :3]
    local = np.array(collider.position)
    quat = matrix_to_quat(rot @ quat_to_matrix(np.asarray(collider.orientation, dtype=float)))
    return Collider(collider.name, WORLD, collider.shape, collider.size, _tuple(rigid[:3, 3] + rot @ local),
                    _tuple(quat), collider.vertices, collider.friction)


def object_collider(obj: bpy.types.Object, matrix: Matrix, to_body: np.ndarray, static: bool,
                    errors: list[str], warnings: list[str]) -> Collider | None:
    """The collider of rigid body `obj` (world matrix `matrix` at the start frame; `to_body` (4, 4)
    maps its own coordinates to body axes), attached to the world when `static`; None after
    recording an error."""
    rb = obj.rigid_body
    shape = rb.collision_shape
    friction = bullet.collider_friction(float(str(np.float32(rb.friction))))
    dims = np.array(obj.dimensions, dtype=float)
    name = obj.name
    what = f"rigid body {obj.name!r}"
    flat = dims.min() <= FLAT * max(dims.max(), 1e-300)
    points = None
    if shape in ("CONVEX_HULL", "MESH"):
        if obj.type != "MESH" or len(obj.data.vertices) == 0:
            errors.append(f"{what}: collision shape {shape.replace('_', ' ').title()} needs a mesh with vertices; "
                          "use a Box, Sphere, Capsule or Cylinder shape")
            return None
        points = _mesh_vertices(obj, to_body)
        spread = np.linalg.svd(points - points.mean(axis=0), compute_uv=False) if len(points) >= 3 else np.zeros(3)
        flat = len(points) < 4 or spread[-1] <= FLAT * max(spread[0], 1e-300)
    if flat:
        if not static:
            errors.append(f"{what}: its collision shape is flat ({shape.lower()} of dimensions "
                          f"{', '.join(f'{d:g}' for d in dims)} m); an active body needs thickness to collide")
            return None
        if points is None and obj.type == "MESH" and len(obj.data.vertices) >= 3:
            points = _mesh_vertices(obj, to_body)
        if points is None or len(points) < 3:
            errors.append(f"{what}: a flat passive collider needs a mesh with at least 3 vertices to define its plane")
            return None
        facing = _face_side(obj, to_body) if len(obj.data.polygons) else to_body[:3, 2]
        collider = _flat_plane(name, WORLD, points, facing, friction)
        return _in_world(collider, matrix)
    if shape == "BOX":
        collider = Collider(name, name, "box", _tuple(dims / 2.0), friction=friction)
    elif shape == "SPHERE":
        collider = Collider(name, name, "sphere", (float(dims.max()) / 2.0,), friction=friction)
    elif shape in ("CAPSULE", "CYLINDER"):
        radius = max(dims[0], dims[1]) / 2.0
        half = dims[2] / 2.0 - radius if shape == "CAPSULE" else dims[2] / 2.0
        collider = Collider(name, name, shape.lower(), (float(radius), float(max(half, 0.0))), friction=friction)
    elif shape == "CONE":
        collider = Collider(name, name, "hull", (), vertices=_cone(dims), friction=friction)
    elif shape in ("CONVEX_HULL", "MESH"):
        if shape == "MESH":
            warnings.append(f"{what}: collision shape Mesh is simulated as the mesh's convex hull")
        extreme = convex_hull(points).vertices  # only the hull's corners are kept
        collider = Collider(name, name, "hull", (), vertices=tuple(_tuple(p) for p in extreme), friction=friction)
    else:
        errors.append(f"{what}: collision shape {shape.title()} is not supported; use Box, Sphere, Capsule, "
                      "Cylinder, Cone, Convex Hull or Mesh")
        return None
    return _in_world(collider, matrix) if static else collider

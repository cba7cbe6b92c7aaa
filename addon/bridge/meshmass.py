"""Mass properties from meshes in the scene: an object's own mesh, or the meshes bound to a bone.

Collects closed triangle surfaces (Blender's own tessellation of each polygon) in a body's axes and
hands them to solver.mass, which integrates them exactly. Reads bpy, never writes it. Mesh data is
read as stored (modifiers are not applied), in the reference configuration of read.py.

- An object: its whole mesh, scaled as the object is.
- A bone: every mesh object parented to the bone (its whole mesh), plus, from every mesh in the
  scene deformed by the armature (an Armature modifier naming it, using vertex groups), each island
  (connected part) whose vertices all weigh at least BOUND_WEIGHT in the vertex group named after
  the bone, taken in the rest pose: the separate solid parts of a mechanical rig. Islands shared
  between bones (skin blending between them) belong to none. Each part must be a closed surface;
  the parts add up.
"""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix

from ..solver.mass import MassProperties, combine, polyhedron
from ..solver.model import MechanismError
from . import reference

BOUND_WEIGHT = 0.5


def _mesh_arrays(mesh: bpy.types.Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices (V, 3), triangles (T, 3) of vertex indices, polygon of each triangle (T,))."""
    co = np.empty(3 * len(mesh.vertices), dtype=np.float64)
    mesh.vertices.foreach_get("co", co)
    tris = mesh.loop_triangles
    corners = np.empty(3 * len(tris), dtype=np.int64)
    tris.foreach_get("vertices", corners)
    polygon = np.empty(len(tris), dtype=np.int64)
    tris.foreach_get("polygon_index", polygon)
    return co.reshape(-1, 3), corners.reshape(-1, 3), polygon


def _transformed(matrix: Matrix | np.ndarray, vertices: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)
    return vertices @ m[:3, :3].T + m[:3, 3]


def _solid(what: str, mesh: bpy.types.Mesh, to_body: np.ndarray, density: float,
           faces: np.ndarray | None = None) -> MassProperties:
    """Mass properties of `mesh` (or of its polygons where `faces` (P,) is True) with vertices mapped by to_body."""
    vertices, triangles, polygon = _mesh_arrays(mesh)
    if faces is not None:
        triangles = triangles[faces[polygon]]
    return polyhedron(_transformed(to_body, vertices), triangles, density, what)


def object_mass(obj: bpy.types.Object, density: float, to_body: np.ndarray) -> MassProperties:
    """Mass properties of `obj`'s own mesh; to_body (4, 4) maps object coordinates to body axes.

    Raises MechanismError naming the object when it has no mesh or the mesh bounds no solid.
    """
    what = f"rigid body {obj.name!r}"
    if obj.type != "MESH":
        raise MechanismError(f"{what}: Mass Properties 'Mesh' needs a mesh object, not a {obj.type.lower()}")
    return _solid(f"{what} (mesh {obj.data.name!r})", obj.data, to_body, density)


def islands(nvert: int, edges: np.ndarray) -> np.ndarray:
    """Island label (V,) of every vertex: the smallest vertex index it is connected to by edges (E, 2)."""
    labels = np.arange(nvert)
    if not len(edges):
        return labels
    while True:
        low = np.minimum(labels[edges[:, 0]], labels[edges[:, 1]])
        new = labels.copy()
        np.minimum.at(new, edges[:, 0], low)
        np.minimum.at(new, edges[:, 1], low)
        new = new[new]  # jump to the label's own label: O(log diameter) rounds
        if np.array_equal(new, labels):
            return labels
        labels = new


def _group_faces(obj: bpy.types.Object, group: str) -> np.ndarray:
    """(P,) True for the polygons of the islands of obj's mesh lying wholly in vertex group `group`."""
    mesh = obj.data
    index = obj.vertex_groups[group].index
    weighted = np.zeros(len(mesh.vertices), dtype=bool)
    for vertex in mesh.vertices:
        for element in vertex.groups:
            if element.group == index and element.weight >= BOUND_WEIGHT:
                weighted[vertex.index] = True
    edges = np.empty(2 * len(mesh.edges), dtype=np.int64)
    mesh.edges.foreach_get("vertices", edges)
    labels = islands(len(mesh.vertices), edges.reshape(-1, 2))
    inside = ~np.isin(labels, labels[~weighted])
    loop_vertex = np.empty(len(mesh.loops), dtype=np.int64)
    mesh.loops.foreach_get("vertex_index", loop_vertex)
    start = np.empty(len(mesh.polygons), dtype=np.int64)
    mesh.polygons.foreach_get("loop_start", start)
    return inside[loop_vertex[start]]


def _deforms(obj: bpy.types.Object, arm: bpy.types.Object) -> bool:
    return any(m.type == "ARMATURE" and m.object == arm and m.use_vertex_groups for m in obj.modifiers)


def bone_mass(scene: bpy.types.Scene, arm: bpy.types.Object, pose_bone: bpy.types.PoseBone, density: float,
              bone_to_body: np.ndarray, frame: float) -> MassProperties:
    """Mass properties of the meshes bound to `pose_bone`, in its body's axes.

    bone_to_body (4, 4) maps the bone's own axes (origin at its head) to the body axes: the scale
    the body frame drops. Raises MechanismError naming the bone (and the mesh at fault).
    """
    name = pose_bone.name
    what = f"bone {name!r}"
    parts = []
    arm_world = reference.object_matrix(arm, frame)
    for obj in scene.objects:
        if obj.type != "MESH":
            continue
        if obj.parent == arm and obj.parent_type == "BONE" and obj.parent_bone == name:
            if pose_bone.bone.use_relative_parent:
                raise MechanismError(
                    f"{what}: child object {obj.name!r} uses Relative Parenting, which is not supported")
            # Blender places a bone's child at the bone's tail: pose matrix @ T(0, length, 0).
            to_bone = (Matrix.Translation((0.0, pose_bone.bone.length, 0.0)) @ obj.matrix_parent_inverse
                       @ reference.basis_at(obj, "", obj.rotation_mode, frame))
            parts.append(_solid(f"{what}: child object {obj.name!r}", obj.data, bone_to_body @ np.array(to_bone),
                                density))
        elif name in obj.vertex_groups and _deforms(obj, arm):
            faces = _group_faces(obj, name)
            if not faces.any():
                continue
            rest = pose_bone.bone.matrix_local.inverted() @ arm_world.inverted() @ reference.object_matrix(obj, frame)
            parts.append(_solid(f"{what}: faces of {obj.name!r} in vertex group {name!r}", obj.data,
                                bone_to_body @ np.array(rest), density, faces))
    if not parts:
        raise MechanismError(
            f"{what}: Mass Properties 'Bound Mesh' found no mesh: parent a closed mesh object to the bone, or give a "
            f"mesh deformed by armature {arm.name!r} a vertex group {name!r} weighing {BOUND_WEIGHT} or more on "
            "every vertex of a closed part"
        )
    return combine(parts)

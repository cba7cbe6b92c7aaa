"""The reference configuration of objects and bones, and the record a bake leaves on its action.

A bake replaces an ID's action with a new "Symplex <name>" action. That action remembers, in its
custom properties, everything needed to undo it and to read the scene as it was before it:

- ``symplex_setup``: name of the setup that baked it (its presence marks a Symplex action);
- ``symplex_previous`` / ``symplex_previous_slot``: the action (and slot) the ID played before;
- ``symplex_saved``: the pre-bake value of every channel the bake owns ("data_path|index" -> value);
- ``symplex_kinematic``: the rigid body "Animated" flag before the bake (-1: not a rigid body);
- ``symplex_properties``: custom properties the bake created on the ID (removed by Free Bake).

`start_value` reads a channel as the artist set it up: the original action's F-curve at the start
frame, else the saved pre-bake value, else the property itself. Reference matrices are built from
those channel values rather than from matrix_world, so neither a bake nor Blender's own rigid body
simulation of the current frame changes what the scene reads as.
"""

from __future__ import annotations

import bpy
from mathutils import Euler, Matrix, Quaternion, Vector

from . import compat

MARK = "symplex_setup"
PREVIOUS = "symplex_previous"
PREVIOUS_SLOT = "symplex_previous_slot"
SAVED = "symplex_saved"
KINEMATIC = "symplex_kinematic"
PROPERTIES = "symplex_properties"


def baked_channels(owner: bpy.types.ID) -> compat.ActionChannels | None:
    """The Symplex bake `owner` currently plays, or None."""
    channels = compat.assigned(owner)
    if channels is None or channels.action.get(MARK) is None:
        return None
    return channels


def original_channels(owner: bpy.types.ID) -> compat.ActionChannels | None:
    """The artist's own action (and slot) of `owner`: the one before a Symplex bake, if baked."""
    baked = baked_channels(owner)
    if baked is None:
        return compat.assigned(owner)
    previous = baked.action.get(PREVIOUS)
    if previous is None:
        return None
    return compat.slot_by_identifier(previous, baked.action.get(PREVIOUS_SLOT, ""))


def channel_key(data_path: str, index: int) -> str:
    return f"{data_path}|{index}"


def saved_values(owner: bpy.types.ID) -> dict[str, float]:
    baked = baked_channels(owner)
    if baked is None:
        return {}
    return {k: float(v) for k, v in baked.action.get(SAVED, {}).items()}


def current_value(owner: bpy.types.ID, data_path: str, index: int) -> float:
    value = owner.path_resolve(data_path)
    return float(value[index]) if hasattr(value, "__len__") else float(value)


def start_value(owner: bpy.types.ID, data_path: str, index: int, frame: float) -> float:
    """The value channel (data_path, index) of `owner` has at `frame` without any Symplex bake."""
    fcurve = compat.find_fcurve(original_channels(owner), data_path, index)
    if fcurve is not None:
        return float(fcurve.evaluate(frame))
    saved = saved_values(owner)
    key = channel_key(data_path, index)
    if key in saved:
        return saved[key]
    return current_value(owner, data_path, index)


def rotation_path(mode: str) -> tuple[str, int]:
    """The rotation property and its number of channels for a Blender rotation_mode."""
    if mode == "QUATERNION":
        return "rotation_quaternion", 4
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle", 4
    return "rotation_euler", 3


def rotation_from_values(mode: str, values: list[float]) -> Matrix:
    """3x3 rotation matrix from channel values in `mode`."""
    if mode == "QUATERNION":
        q = Quaternion(values)
        if q.magnitude < 1e-12:
            return Matrix.Identity(3)
        return q.normalized().to_matrix()
    if mode == "AXIS_ANGLE":
        axis = Vector(values[1:])
        if axis.length < 1e-12:
            return Matrix.Identity(3)
        return Matrix.Rotation(values[0], 3, axis.normalized())
    return Euler(values, mode).to_matrix()


def basis_at(owner: bpy.types.ID, prefix: str, mode: str, frame: float) -> Matrix:
    """Local transform T @ R @ S from the channels `prefix`location/rotation/scale at `frame`."""
    loc = Vector([start_value(owner, prefix + "location", i, frame) for i in range(3)])
    path, n = rotation_path(mode)
    rot = rotation_from_values(mode, [start_value(owner, prefix + path, i, frame) for i in range(n)])
    scale = Vector([start_value(owner, prefix + "scale", i, frame) for i in range(3)])
    return Matrix.LocRotScale(loc, rot, scale)


def object_matrix(obj: bpy.types.Object, frame: float) -> Matrix:
    """World matrix of `obj` in the reference configuration (its pre-bake channels at `frame`)."""
    basis = basis_at(obj, "", obj.rotation_mode, frame)
    if obj.parent is None:
        return basis
    if obj.parent_type != "OBJECT":
        # Bone, vertex or other parenting: take the parent space Blender evaluates now.
        return obj.matrix_world @ obj.matrix_basis.inverted_safe() @ basis
    return object_matrix(obj.parent, frame) @ obj.matrix_parent_inverse @ basis


def bone_prefix(bone_name: str) -> str:
    return f'pose.bones["{bpy.utils.escape_identifier(bone_name)}"].'


def bone_basis(arm: bpy.types.Object, pose_bone: bpy.types.PoseBone, frame: float) -> Matrix:
    """matrix_basis of `pose_bone` in the reference configuration at `frame`."""
    return basis_at(arm, bone_prefix(pose_bone.name), pose_bone.rotation_mode, frame)


def rest_offset(pose_bone: bpy.types.PoseBone) -> Matrix:
    """The bone's rest matrix relative to its parent's rest (armature space for a root bone)."""
    bone = pose_bone.bone
    if bone.parent is None:
        return bone.matrix_local.copy()
    return bone.parent.matrix_local.inverted() @ bone.matrix_local


def rigid_part(matrix: Matrix) -> Matrix:
    """`matrix` with scale removed: orthonormal rotation, same translation."""
    loc, rot, _scale = matrix.decompose()
    return Matrix.LocRotScale(loc, rot, None)


def has_delta_transform(obj: bpy.types.Object) -> bool:
    return (
        Vector(obj.delta_location).length > 0.0
        or any(abs(a) > 0.0 for a in obj.delta_rotation_euler)
        or abs(Quaternion(obj.delta_rotation_quaternion).angle) > 0.0
        or any(abs(s - 1.0) > 0.0 for s in obj.delta_scale)
    )


def original_kinematic(obj: bpy.types.Object, frame: float | None = None) -> bool:
    """The rigid body "Animated" flag as the artist set it (a bake switches it on while it plays); at `frame`
    when the artist keyed it (Blender's hand-over: Animated until the simulation takes the body)."""
    if frame is not None:
        fcurve = compat.find_fcurve(original_channels(obj), "rigid_body.kinematic", 0)
        if fcurve is not None:
            return fcurve.evaluate(frame) >= 0.5
    baked = baked_channels(obj)
    if baked is not None and baked.action.get(KINEMATIC, -1) >= 0:
        return bool(baked.action[KINEMATIC])
    return bool(obj.rigid_body.kinematic)

"""Armatures -> bodies and joints: the reader of an ARMATURE setup (read.py dispatches to it).

Armatures (kind ARMATURE): pose bones with Symplex "Simulate" are bodies, framed at the bone head
  with the bone's orientation, in the rest pose of the simulated bones (other bones keep their start
  pose). The joint to the nearest simulated ancestor (else the world) follows the rotation mode and
  locks: one free rotation axis revolute, two universal (Euler modes; the later-applied axis is the
  outer one), three ball; free location axes add prismatic, cylindrical, planar or free. Its
  coordinates start from the bone's pose at the start frame. Mass properties are a rod from head to
  tail, typed in, or the closed meshes bound to the bone filled with a density (meshmass.py).
  IK limits (use_ik_limit_x with ik_min_x / ik_max_x, ...) become the limits of the joint's
  rotation coordinates (not on ball joints), IK stiffness the joint stiffness (N m/rad; on a
  three-axis bone the isotropic rotation spring toward the rest pose). Keyed,
  unsimulated ancestors of simulated bones become prescribed joints sampled at every solver step.
  Loops from the armature's loop list close chains.

Which joint a bone's channels make, and its coordinates in a pose, are layouts.py's (no bpy).
"""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ..solver.model import WORLD, Body, Curve, Joint
from . import compat, meshmass, reference
from .layouts import AXES, JointLayout, channel_layout, dof_limits, layout_coordinates
from .read_common import Problems, Target, clean, direction, frame_of, mesh_mass, num, scale_part, vec
from .shape_inertia import rod_mass_properties


def bone_layout(pose_bone) -> JointLayout | str:
    """The joint a pose bone's rotation mode and locks describe (layouts.channel_layout), or a reason it has none."""
    rot = [i for i in range(3) if not pose_bone.lock_rotation[i]]
    loc = [] if pose_bone.bone.use_connect else [i for i in range(3) if not pose_bone.lock_location[i]]
    return channel_layout(pose_bone.rotation_mode, rot, loc, pose_bone.bone.use_local_location)


def _keyed_bones(arm) -> set[str]:
    """Names of bones whose transform channels the artist's own action animates."""
    names = set()
    for fc in compat.fcurves(reference.original_channels(arm)):
        path = fc.data_path
        if path.startswith('pose.bones["') and path.rsplit(".", 1)[-1] in (
            "location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle",
        ):
            names.add(bpy.utils.unescape_identifier(path[len('pose.bones["') : path.rindex('"]')]))
    return names


def _ik_limits(pose_bone, layout: JointLayout, name: str, problems: Problems) -> tuple[tuple | None, tuple | None]:
    def limit(kind: str, i: int) -> tuple[float, float] | None:
        axis = "xyz"[i]
        if kind == "ang" and getattr(pose_bone, f"use_ik_limit_{axis}"):
            return num(getattr(pose_bone, f"ik_min_{axis}")), num(getattr(pose_bone, f"ik_max_{axis}"))
        return None

    lower, upper = dof_limits(layout, limit)
    if lower is not None and layout.type in ("ball", "free"):
        problems.errors.append(f"bone {name!r}: IK limits on a {layout.type} joint are not supported")
        return None, None
    return lower, upper


def _ik_stiffness(pose_bone, layout: JointLayout, name: str, problems: Problems) -> float:
    values = {num(getattr(pose_bone, f"ik_stiffness_{'xyz'[i]}")) for kind, i in layout.dofs if kind == "ang"}
    if len(values) > 1:
        problems.errors.append(f"bone {name!r}: IK stiffness must be the same on every free rotation axis")
    return max(values) if values else 0.0


def read_armature(scene, setup, frame: float, fps: float, dt: float, steps: int, problems: Problems):
    arm = setup.armature
    if arm is None or arm.type != "ARMATURE":
        problems.errors.append(f"setup {setup.name!r}: choose its armature")
        return [], [], [], ""
    if reference.has_delta_transform(arm):
        problems.errors.append(f"armature {arm.name!r} has delta transforms; apply or clear them")
    pose_bones = arm.pose.bones
    simulated = [pb for pb in pose_bones if pb.symplex.simulate]
    if not simulated:
        problems.errors.append(f"armature {arm.name!r}: no bone is marked Simulate")
        return [], [], [], ""
    keyed = _keyed_bones(arm)
    in_mechanism = {pb.name for pb in simulated}
    for pb in simulated:
        parent = pb.parent
        while parent is not None:
            if parent.name not in in_mechanism and parent.name in keyed:
                in_mechanism.add(parent.name)
            parent = parent.parent
    prescribed = {n for n in in_mechanism if not pose_bones[n].symplex.simulate}

    arm_matrix = reference.object_matrix(arm, frame)
    pose_ref: dict[str, Matrix] = {}

    def reference_pose(pb) -> Matrix:
        """Armature-space matrix of pb with mechanism bones at rest and the others at their start pose."""
        if pb.name not in pose_ref:
            basis = Matrix.Identity(4) if pb.name in in_mechanism else reference.bone_basis(arm, pb, frame)
            parent = reference_pose(pb.parent) if pb.parent is not None else Matrix.Identity(4)
            pose_ref[pb.name] = parent @ reference.rest_offset(pb) @ basis
        return pose_ref[pb.name]

    def mechanism_body(pb) -> str:
        while pb is not None and pb.name not in in_mechanism:
            pb = pb.parent
        return WORLD if pb is None else pb.name

    scale = arm_matrix.to_scale()
    length_scale = (abs(scale.x) + abs(scale.y) + abs(scale.z)) / 3.0
    sample_frames = frame + np.arange(steps + 1) * dt * fps
    bodies, joints, targets = [], [], []
    for pb in pose_bones:
        if pb.name not in in_mechanism:
            continue
        name = pb.name
        if any(getattr(c, "enabled", not getattr(c, "mute", False)) for c in pb.constraints):
            problems.errors.append(f"bone {name!r}: bone constraints on a simulated bone are not supported")
        if pb.parent is not None and (not pb.bone.use_inherit_rotation or pb.bone.inherit_scale != "FULL"):
            problems.errors.append(f"bone {name!r}: a simulated bone must inherit rotation and scale fully")
        layout = bone_layout(pb)
        if isinstance(layout, str):
            problems.errors.append(f"bone {name!r} ({pb.rotation_mode}): {layout}")
            continue
        world = arm_matrix @ reference_pose(pb)
        position, quat, rot = frame_of(world)
        settings = pb.symplex
        mass = num(settings.mass)
        if settings.mass_source == "ROD":
            com, inertia = rod_mass_properties(settings.mass, pb.bone.length * length_scale, settings.radius)
        elif settings.mass_source == "MESH":
            mass, com, inertia = mesh_mass(
                lambda: meshmass.bone_mass(scene, arm, pb, num(settings.density), scale_part(world), frame), problems)
        else:
            com, inertia = vec(settings.com), vec(settings.inertia)
        bodies.append(Body(name, mass, position, quat, com, inertia))
        lower, upper = _ik_limits(pb, layout, name, problems)
        ndof = len(layout.dofs)
        prescribed_curve = None
        if name in prescribed:
            if ndof != 1:
                problems.errors.append(
                    f"bone {name!r} is keyed and drives simulated bones, so it needs exactly one free channel "
                    f"(a {layout.type} joint has {ndof})"
                )
                continue
            bases = np.array([np.array(reference.bone_basis(arm, pb, f)) for f in sample_frames])
            values = layout_coordinates(layout, bases, rot)[:, 0]
            if layout.type == "revolute":
                values = np.unwrap(values)
            prescribed_curve = Curve(tuple(float(t) for t in np.arange(steps + 1) * dt), tuple(map(float, values)))
        q0 = layout_coordinates(layout, np.array(reference.bone_basis(arm, pb, frame)), rot)
        joints.append(
            Joint(
                name=name,
                type=layout.type,
                parent=mechanism_body(pb.parent),
                child=name,
                anchor=position,
                axis=direction(rot[:, layout.axis]),
                axis2=direction(rot[:, layout.axis2]) if layout.type in ("universal", "planar") else None,
                q0=tuple(float(x) for x in q0),
                v0=vec(settings.v0[:ndof]),
                lower=lower,
                upper=upper,
                stiffness=_ik_stiffness(pb, layout, name, problems),
                damping=0.0,
                prescribed=prescribed_curve,
            )
        )
        targets.append(Target(name, arm.name, name, write=name not in prescribed))
        if layout.type == "free" and joints[-1].parent == WORLD:
            problems.warnings += _free_root_warning(pb, in_mechanism)
    joints += _read_loops(arm, arm_matrix, reference_pose, mechanism_body, keyed, frame, problems)
    root = setup.root.name if setup.root is not None else arm.name
    return bodies, joints, targets, root


def _free_root_warning(pb, in_mechanism: set[str]) -> list[str]:
    """A warning when simulated bone `pb`, free in the world, carries simulated bones: the whole chain falls."""
    carried = [b.name for b in pb.bone.children_recursive if b.name in in_mechanism]
    if not carried:
        return []
    return [f"bone {pb.name!r} carries {len(carried)} simulated bone(s) (e.g. {carried[0]!r}) but its location is "
            "free (a free joint), so the whole chain can fall out of the rig; to pin its head, lock its location "
            "(Bone Properties > Transform > Lock Location X, Y, Z): it then turns on a ball joint there"]


def _read_loops(arm, arm_matrix, reference_pose, mechanism_body, keyed, frame, problems) -> list[Joint]:
    joints = []
    bone_names = {pb.name for pb in arm.pose.bones}
    for loop in arm.data.symplex.loops:
        what = f"loop {loop.name!r} of armature {arm.name!r}"
        if loop.bone_a not in bone_names:
            problems.errors.append(f"{what}: bone A {loop.bone_a!r} does not exist")
            continue
        if loop.name in bone_names:
            problems.errors.append(f"{what}: a loop may not share its name with a bone")
            continue
        pb_a = arm.pose.bones[loop.bone_a]
        body_a = mechanism_body(pb_a)
        if body_a == WORLD:
            problems.errors.append(f"{what}: bone A {loop.bone_a!r} is not simulated and has no simulated parent")
            continue
        if loop.target == "BONE":
            if loop.bone_b not in bone_names:
                problems.errors.append(f"{what}: bone B {loop.bone_b!r} does not exist")
                continue
            pb_b = arm.pose.bones[loop.bone_b]
            body_b = mechanism_body(pb_b)
            chain = pb_b
            while body_b == WORLD and chain is not None:
                if chain.name in keyed:
                    problems.errors.append(f"{what}: bone B {loop.bone_b!r} is keyed but neither simulated nor driving")
                    break
                chain = chain.parent
        elif loop.target == "OBJECT":
            if loop.object_b is None:
                problems.errors.append(f"{what}: choose its target object")
                continue
            if reference.original_channels(loop.object_b) is not None:
                problems.errors.append(f"{what}: target object {loop.object_b.name!r} is animated; it must stay still")
                continue
            body_b = WORLD
        else:
            body_b = WORLD
        if body_a == body_b:
            problems.errors.append(f"{what}: both ends are on body {body_a!r}")
            continue
        world_a = arm_matrix @ reference_pose(pb_a)
        anchor = world_a @ Vector(loop.point)
        _pos, _quat, rot = frame_of(world_a)
        if loop.type == "HINGE":
            joint = Joint(loop.name, "revolute", body_a, body_b, clean(anchor), direction(rot[:, AXES.index(loop.axis)]))
        else:
            joint = Joint(loop.name, "ball", body_a, body_b, clean(anchor), direction(rot[:, 2]))
        joints.append(joint)
    return joints

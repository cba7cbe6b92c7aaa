"""Parts of a vehicle rig: an object, or a pose bone of an armature, seen the same way by readers and bakers.

Owns what the rig modules need of a part: its world matrix as the artist set it up (reference.py: the
pre-bake channels at a frame), its centre and radius (a wheel's: the world bounding box of the geometry
it moves, its own mesh for an object; for a bone, the meshes parented to it and the vertices an Armature
modifier moves with it; else a bone's head and its `radius` custom property), its name in messages, its
bake target, and the search for parts by a name classifier (bones of the rig's armature; else children of
the chassis, then the scene's objects), and how every rig names its owner and its parts (RigParts).

Names are classified by what follows the rig's own name ('Car Trailer wheel_fl' of rig 'Car Trailer' reads
as 'wheel_fl'), so words of the rig's name never give a part a role. A bone that copies another by a Copy
Transforms constraint (a deformation bone 'DEF-Wheel.Ft.L' copying a mechanism bone 'MCH-Wheel.Ft.L')
is not a bake target: keys on it would be overridden. The bone it copies (followed down the chain) is; a
bone moved by any other constraint or by a driver is refused with the constraint or driver named. Parts
the artist picked are stored on the rig's owner (PICKS_PROPERTY), so every bake of the rig (buttons,
command line, shots) finds the same parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import bpy
import numpy as np

from . import reference
from .read_common import Target

RADIUS_PROPERTY = "radius"  # pose-bone custom property: a wheel or rotor bone's radius, m
PRESET_PROPERTY = "symplex_vehicle_preset"  # on a rig's owner (chassis or armature): the preset it bakes with
PICKS_PROPERTY = "symplex_parts"  # rig owner's custom property: {role: object or bone name} picked by the artist
TRANSFORMS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


class RigError(ValueError):
    """A rig that cannot be read; the message names the chassis, the object, bone, property or frame at fault."""


@dataclass(frozen=True)
class Part:
    """Object `object`, or its pose bone `bone` when set."""

    object: str
    bone: str = ""

    @property
    def key(self) -> str:
        """The part's body name in a trajectory of the rig's parts (bone name, else object name)."""
        return self.bone or self.object

    def label(self) -> str:
        return f"bone {self.bone!r} of {self.object!r}" if self.bone else repr(self.object)

    def target(self) -> Target:
        return Target(body=self.key, object=self.object, bone=self.bone)


class RigParts:
    """What every rig (vehicle_rig.VehicleRig, vehicle_body_rig.BodyRig) says of its parts: its owner and
    each part by name. Mixed into a dataclass with the fields `chassis` (object, or bone of `armature`) and
    `armature` (empty for an object rig)."""

    chassis: str
    armature: str

    @property
    def owner(self) -> str:
        """The object holding the rig's controls and settings and its bake's record: armature or chassis."""
        return self.armature or self.chassis

    def part(self, name: str) -> Part:
        """The part `name`: a bone of the armature, else an object."""
        return Part(self.armature, name) if self.armature else Part(name)


def _armature_pose(arm: bpy.types.Object, pose_bone: bpy.types.PoseBone, frame: float) -> np.ndarray:
    """Armature-space matrix (4, 4) of `pose_bone` in the reference configuration at `frame`."""
    local = np.array(reference.rest_offset(pose_bone)) @ np.array(reference.bone_basis(arm, pose_bone, frame))
    return local if pose_bone.parent is None else _armature_pose(arm, pose_bone.parent, frame) @ local


def world(scene: bpy.types.Scene, part: Part, frame: float, rigid: bool = False) -> np.ndarray:
    """World matrix (4, 4) of `part` as the artist set it up at `frame` (scale removed when `rigid`)."""
    if part.object not in scene.objects:
        raise RigError(f"vehicle rig: no object {part.object!r} in scene {scene.name!r}")
    obj = scene.objects[part.object]
    matrix = np.array(reference.object_matrix(obj, frame))
    if part.bone:
        if obj.type != "ARMATURE" or part.bone not in obj.pose.bones:
            raise RigError(f"vehicle rig: {obj.name!r} has no bone {part.bone!r}")
        matrix = matrix @ _armature_pose(obj, obj.pose.bones[part.bone], frame)
    if rigid:
        u, _, vt = np.linalg.svd(matrix[:3, :3])
        matrix = matrix.copy()
        matrix[:3, :3] = u @ vt
    return matrix


def _moves(arm: bpy.types.Object, bone: str, part: Part) -> bool:
    """Whether bone `bone` of `arm` follows `part`'s bone (is it, or copies it: mover)."""
    if bone not in arm.pose.bones:
        return False
    try:
        return mover(arm, bone) == part.bone
    except RigError:
        return False


def _bone_child_world(scene: bpy.types.Scene, part: Part, child: bpy.types.Object, frame: float) -> np.ndarray:
    """World matrix of `child` (bone-parented to a bone that copies `part`) with `part` in its pre-bake pose:
    Blender places a bone's child at the bone's tail, through the child's parent inverse."""
    arm = scene.objects[part.object]
    tail = np.eye(4)
    tail[1, 3] = arm.data.bones[child.parent_bone].length
    basis = np.array(reference.basis_at(child, "", child.rotation_mode, frame))
    return world(scene, part, frame) @ tail @ np.array(child.matrix_parent_inverse) @ basis


def _corners(obj: bpy.types.Object, matrix: np.ndarray) -> list[np.ndarray]:
    """The 8 corners of `obj`'s bounding box placed by `matrix`, or nothing when it has no extent."""
    corners = np.array([list(c) for c in obj.bound_box], dtype=float)
    if not corners.size or np.ptp(corners, axis=0).max() <= 0.0:
        return []
    return [corners @ matrix[:3, :3].T + matrix[:3, 3]]


def _deformed(scene: bpy.types.Scene, part: Part, mesh: bpy.types.Object, frame: float) -> list[np.ndarray]:
    """World positions of the vertices of `mesh` (deformed by an Armature modifier on `part`'s armature) that
    weigh 0.5 or more in the vertex group of a bone following `part`, with `part` in its pre-bake pose: Blender
    moves them by (pose @ rest^-1) of that bone in armature space; the bone's pose is `part`'s (it copies it)."""
    arm = scene.objects[part.object]
    if not any(m.type == "ARMATURE" and m.object == arm for m in mesh.modifiers):
        return []
    groups = {g.index: g.name for g in mesh.vertex_groups if _moves(arm, g.name, part)}
    if not groups:
        return []
    out = []
    for index, name in groups.items():
        coords = np.array([list(v.co) for v in mesh.data.vertices
                           if any(g.group == index and g.weight >= 0.5 for g in v.groups)], dtype=float)
        if not len(coords):
            continue
        deform = (world(scene, part, frame) @ np.linalg.inv(np.array(arm.data.bones[name].matrix_local))
                  @ np.linalg.inv(np.array(reference.object_matrix(arm, frame)))
                  @ np.array(reference.object_matrix(mesh, frame)))
        out.append(coords @ deform[:3, :3].T + deform[:3, 3])
    return out


def moved_points(scene: bpy.types.Scene, part: Part, frame: float) -> list[np.ndarray]:
    """World points (arrays (K, 3)) of the geometry `part` moves at `frame` in its pre-bake pose: an object's
    own bounding box; for a bone, the bounding boxes of the objects parented to it or to a bone that copies
    it, and the vertices an Armature modifier moves with it (_deformed)."""
    obj = scene.objects[part.object]
    if not part.bone:
        return _corners(obj, world(scene, part, frame)) if obj.type in ("MESH", "CURVE", "SURFACE", "FONT") else []
    out = []
    for child in obj.children:
        if child.name in scene.objects and child.parent_type == "BONE" and _moves(obj, child.parent_bone, part):
            out += _corners(child, _bone_child_world(scene, part, child, frame))
    for mesh in scene.objects:
        if mesh.type == "MESH":
            out += _deformed(scene, part, mesh, frame)
    return out


def shape(scene: bpy.types.Scene, part: Part, frame: float, axle: np.ndarray, rig: str,
          what: str) -> tuple[np.ndarray, float]:
    """Centre (3,) and radius (m) of a wheel or rotor `part` spinning about `axle` (world unit vector) at
    `frame`: the middle and half the extent across the axle of the world bounding box of the geometry it
    moves (moved_points); a bone moving no geometry: its head and its `radius` property."""
    points = moved_points(scene, part, frame)
    if part.bone and not points:
        pose_bone = scene.objects[part.object].pose.bones[part.bone]
        value = pose_bone.get(RADIUS_PROPERTY)
        try:
            value = float(value)
        except (TypeError, ValueError):
            value = None
        if value is None or not value > 0:
            raise RigError(f"vehicle rig {rig!r}: {what} {part.label()} moves no mesh (none is parented to it or "
                           f"weighted to it) and needs a custom property {RADIUS_PROPERTY!r} (m, > 0) on its pose "
                           f"bone, got {pose_bone.get(RADIUS_PROPERTY)!r}")
        return world(scene, part, frame)[:3, 3], value
    if not points:
        raise RigError(f"vehicle rig {rig!r}: {what} {part.label()} has no geometry to measure a radius from; "
                       f"give it a mesh")
    placed = np.vstack(points)
    up = np.array([0.0, 0.0, 1.0]) if abs(axle[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    ahead = np.cross(axle, up)
    ahead /= np.linalg.norm(ahead)
    frame_axes = np.column_stack([ahead, axle, np.cross(ahead, axle)])  # columns: across, along, across
    local = placed @ frame_axes
    low, high = local.min(axis=0), local.max(axis=0)
    return frame_axes @ (0.5 * (low + high)), 0.5 * float(max(high[0] - low[0], high[2] - low[2]))


def radius(scene: bpy.types.Scene, part: Part, frame: float, axle: np.ndarray, rig: str, what: str) -> float:
    """Radius (m) of a wheel or rotor `part` about `axle` (shape)."""
    return shape(scene, part, frame, axle, rig, what)[1]


def _drivers(arm: bpy.types.Object, bone: str) -> list[str]:
    """Data paths of the drivers on the transform channels of pose bone `bone`."""
    prefix = reference.bone_prefix(bone)
    drivers = arm.animation_data.drivers if arm.animation_data is not None else ()
    return [f"{d.data_path}[{d.array_index}]" for d in drivers
            if d.data_path.startswith(prefix) and d.data_path[len(prefix):] in TRANSFORMS and not d.mute]


def mover(arm: bpy.types.Object, bone: str) -> str:
    """The bone of `arm` whose keys move bone `bone`: itself, or the bone it copies by an (only, full
    influence, world space, replacing) Copy Transforms constraint, followed down the chain. Raises RigError
    naming the constraint or driver that would override keys on the bone."""
    chain = [bone]
    while True:
        pose_bone = arm.pose.bones[chain[-1]]
        active = [c for c in pose_bone.constraints if not c.mute and c.influence > 0]
        copy = active[0] if len(active) == 1 else None
        if (copy is not None and copy.type == "COPY_TRANSFORMS" and copy.influence == 1.0 and copy.target == arm
                and copy.subtarget in arm.pose.bones and copy.subtarget not in chain and copy.mix_mode == "REPLACE"
                and copy.target_space == "WORLD" and copy.owner_space == "WORLD"):
            chain.append(copy.subtarget)
            continue
        via = f" (which bone {chain[0]!r} copies)" if len(chain) > 1 else ""
        if active:
            named = ", ".join(f"{c.name!r} ({c.type.replace('_', ' ').title()})" for c in active)
            raise RigError(f"bone {chain[-1]!r}{via} of {arm.name!r} is moved by constraint {named}; keys on it would "
                           f"not move it: pick the bone that moves it, or mute the constraint")
        drivers = _drivers(arm, chain[-1])
        if drivers:
            raise RigError(f"bone {chain[-1]!r}{via} of {arm.name!r} is moved by driver(s) on {', '.join(drivers)}; "
                           f"keys on it would not move it: pick the bone that moves it, or remove the driver")
        return chain[-1]


def own_name(name: str, owner: str) -> str:
    """`name` without the rig owner's name (or its base name before a '.001' suffix) in front: what says the
    part's role ('Car Trailer wheel_fl' of rig 'Car Trailer': ' wheel_fl')."""
    base = owner.rsplit(".", 1)[0] if owner.rsplit(".", 1)[-1].isdigit() else owner
    for prefix in (owner, base):
        if prefix and name.startswith(prefix) and name != prefix:
            return name[len(prefix):]
    return name


def stored_picks(owner: bpy.types.Object) -> dict[str, str]:
    """The parts picked for the rig and stored on its owner (PICKS_PROPERTY): {role: object or bone name}."""
    stored = owner.get(PICKS_PROPERTY)
    if stored is None:
        return {}
    try:
        return {str(k): str(v) for k, v in stored.items() if v}
    except AttributeError:
        raise RigError(f"vehicle rig {owner.name!r}: property {PICKS_PROPERTY!r} must map roles to part names, "
                       f"got {stored!r}") from None


def store_picks(owner: bpy.types.Object, picked: dict[str, str]) -> None:
    """Remember the parts picked for the rig on its owner (none picked: the property is removed)."""
    picked = {k: v for k, v in picked.items() if v}
    if picked:
        owner[PICKS_PROPERTY] = picked
    elif PICKS_PROPERTY in owner.keys():
        del owner[PICKS_PROPERTY]


def candidates(scene: bpy.types.Scene, owner: bpy.types.Object) -> list[list[Part]]:
    """Pools of parts to search, in order: the armature's bones (an armature owner), else the owner's
    children, then the scene's other objects that are not another rig's (an owner storing a preset, or
    below one)."""
    if owner.type == "ARMATURE":
        return [[Part(owner.name, b.name) for b in owner.pose.bones]]
    children = [o for o in owner.children_recursive if o.name in scene.objects]
    others = [o for o in scene.objects if o != owner and o not in children and not _rigged(o)]
    return [[Part(o.name) for o in children], [Part(o.name) for o in others]]


def _rigged(obj: bpy.types.Object) -> bool:
    """Whether `obj` is a rig's owner or below one."""
    while obj is not None:
        if PRESET_PROPERTY in obj.keys():
            return True
        obj = obj.parent
    return False


def bake_target(scene: bpy.types.Scene, part: Part) -> Part:
    """The part to key for `part`: a bone's mover (raises RigError), an object itself."""
    return Part(part.object, mover(scene.objects[part.object], part.bone)) if part.bone else part


def find_parts(scene: bpy.types.Scene, owner: bpy.types.Object, classify: Callable[[str], str | None],
               labels: dict[str, str], picked: dict[str, Part] | None = None) -> tuple[dict[str, Part], list[str]]:
    """Parts by role: `picked` first, then the first pool (candidates) holding parts whose own name (own_name)
    `classify` maps to a role of `labels`; bones are replaced by their movers (a DEF bone by the bone it
    copies), so a role several bones of one chain claim is found once; of several bones claiming a role, the
    one only that moves a mesh (moved_points) is taken. Returns (found, problems); a role two parts claim in
    one pool, or one whose bones that could be keyed move no mesh while others are driven (their constraint
    or driver named), is a problem."""
    problems = []
    found: dict[str, Part] = {}
    for role, part in (picked or {}).items():
        try:
            found[role] = bake_target(scene, part)
        except RigError as err:
            problems.append(f"the {labels[role]} ({role}): {err}")
    taken = set(found.values())
    for pool in candidates(scene, owner):
        matches: dict[str, list[Part]] = {}
        refused: dict[str, list[str]] = {}
        for part in pool:
            role = classify(own_name(part.key, owner.name))
            if role not in labels or role in found:
                continue
            try:
                target = bake_target(scene, part)
            except RigError as err:
                refused.setdefault(role, []).append(str(err))
                continue
            if target not in taken and target not in matches.get(role, []):
                matches.setdefault(role, []).append(target)
        for role in {*matches, *refused}:
            parts = matches.get(role, [])
            moving = [p for p in parts if p.bone and moved_points(scene, p, scene.frame_start)]
            if role in refused and not moving:  # the bones that move the mesh are driven: say so
                problems.append(f"the {labels[role]} ({role}): {refused[role][0]}")
                continue
            if len(parts) > 1 and len(moving) == 1:  # of the bones named for the role, the one moving a mesh
                parts = moving
            if len(parts) > 1:
                names = ", ".join(sorted(p.key for p in parts))
                problems.append(f"{len(parts)} {'bones' if parts[0].bone else 'objects'} look like the "
                                f"{labels[role]} ({role}): {names}; rename all but one or pick it")
            found[role] = sorted(parts, key=lambda p: p.key)[0]
            taken.add(found[role])
    return found, problems

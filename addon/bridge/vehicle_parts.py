"""Parts of a vehicle rig: an object, or a pose bone of an armature, seen the same way by readers and bakers.

Owns what the rig modules need of a part: its world matrix as the artist set it up (reference.py: the
pre-bake channels at a frame), its radius (a wheel's, measured from an object's mesh or read from a
bone's `radius` custom property), its name in messages, its bake target, and the search for parts by a
name classifier (bones of the rig's armature; else children of the chassis, then the scene's objects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import bpy
import numpy as np

from . import reference
from .read import Target

RADIUS_PROPERTY = "radius"  # pose-bone custom property: a wheel or rotor bone's radius, m


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


def radius(scene: bpy.types.Scene, part: Part, matrix: np.ndarray, axle: np.ndarray, rig: str, what: str) -> float:
    """Radius (m) of a wheel or rotor `part` about `axle` (world unit vector): half its mesh's extent across
    the axle (its bounding box placed by `matrix`, with scale), or a bone's `radius` property."""
    if part.bone:
        pose_bone = scene.objects[part.object].pose.bones[part.bone]
        value = pose_bone.get(RADIUS_PROPERTY)
        try:
            value = float(value)
        except (TypeError, ValueError):
            value = None
        if value is None or not value > 0:
            raise RigError(f"vehicle rig {rig!r}: {what} {part.label()} needs a custom property {RADIUS_PROPERTY!r} "
                           f"(m, > 0) on its pose bone, got {pose_bone.get(RADIUS_PROPERTY)!r}")
        return value
    obj = scene.objects[part.object]
    corners = np.array([list(c) for c in obj.bound_box], dtype=float)
    if not corners.size or np.ptp(corners, axis=0).max() <= 0.0:
        raise RigError(f"vehicle rig {rig!r}: {what} {part.label()} has no geometry to measure a radius from; "
                       f"give it a mesh")
    placed = corners @ matrix[:3, :3].T
    across = placed - np.outer(placed @ axle, axle)
    return 0.5 * float(np.max(np.ptp(across, axis=0)))


def candidates(scene: bpy.types.Scene, owner: bpy.types.Object) -> list[list[Part]]:
    """Pools of parts to search, in order: the armature's bones (an armature owner), else the owner's
    children, then the scene's other objects."""
    if owner.type == "ARMATURE":
        return [[Part(owner.name, b.name) for b in owner.pose.bones]]
    children = [o for o in owner.children_recursive if o.name in scene.objects]
    others = [o for o in scene.objects if o != owner and o not in children]
    return [[Part(o.name) for o in children], [Part(o.name) for o in others]]


def find_parts(scene: bpy.types.Scene, owner: bpy.types.Object, classify: Callable[[str], str | None],
               labels: dict[str, str], picked: dict[str, Part] | None = None) -> tuple[dict[str, Part], list[str]]:
    """Parts by role: `picked` first, then the first pool (candidates) holding parts whose name `classify`
    maps to a role of `labels`. Returns (found, problems); a role two parts claim in one pool is a problem."""
    found: dict[str, Part] = dict(picked or {})
    taken = set(found.values())
    problems = []
    for pool in candidates(scene, owner):
        matches: dict[str, list[Part]] = {}
        for part in pool:
            role = classify(part.key)
            if role in labels and role not in found and part not in taken:
                matches.setdefault(role, []).append(part)
        for role, parts in matches.items():
            if len(parts) > 1:
                names = ", ".join(sorted(p.key for p in parts))
                problems.append(f"{len(parts)} {'bones' if parts[0].bone else 'objects'} look like the "
                                f"{labels[role]} ({role}): {names}; rename all but one or pick it")
            found[role] = sorted(parts, key=lambda p: p.key)[0]
            taken.add(found[role])
    return found, problems

"""Start From Animation: the velocity each keyed body arrives with at the start frame, read off its keys.

A part (an object, or a pose bone of an armature) is keyed when an F-curve of the artist's own action that
places it (its own location and rotation channels, its parent objects', for a bone also its armature's
and its parent bones') has a key before the start frame: keys only at or after the start pose the start,
they say nothing of how it is reached. A keyed part's world poses at the two frames before the start and
at the start give its twist (solver/start_velocity.twist_from_samples); the solver projects those twists
onto the mechanism (project_start_velocity) or a vehicle rig reads its chassis' (chassis_twist).
"""

from __future__ import annotations

from collections.abc import Iterable

import bpy
import numpy as np

from ..solver.start_velocity import twist_from_samples
from . import compat, reference
from .read_common import Target
from .vehicle_parts import TRANSFORMS, Part, world

SAMPLES = 3  # poses at the start frame and the frames before it


def _keyed_paths(owner: bpy.types.ID, prefixes: Iterable[str], frame: float) -> bool:
    """Whether `owner`'s own action keys a transform channel `prefix + transform` before `frame`."""
    paths = {prefix + name for prefix in prefixes for name in TRANSFORMS}
    return any(fcurve.data_path in paths and len(fcurve.keyframe_points) and fcurve.keyframe_points[0].co[0] < frame
               for fcurve in compat.fcurves(reference.original_channels(owner)))  # keys are in frame order


def keyed_before(scene: bpy.types.Scene, part: Part, frame: float) -> bool:
    """Whether `part`'s world placement is keyed before `frame` (module docstring)."""
    obj = scene.objects[part.object]
    if part.bone:
        bone = obj.pose.bones[part.bone]
        chain = [bone, *bone.parent_recursive]
        if _keyed_paths(obj, [reference.bone_prefix(b.name) for b in chain], frame):
            return True
    while obj is not None:
        if _keyed_paths(obj, [""], frame):
            return True
        obj = obj.parent
    return False


def part_twist(scene: bpy.types.Scene, part: Part, frame: float, fps: float) -> np.ndarray:
    """(angular velocity, origin velocity) (6,), world axes, of `part` arriving at `frame` along its keys."""
    frames = frame - np.arange(SAMPLES - 1, -1, -1)
    return twist_from_samples(np.array([world(scene, part, f, rigid=True) for f in frames]), 1.0 / fps)


def keyed_twists(scene: bpy.types.Scene, targets: Iterable[Target], frame: float, fps: float) -> dict[str, np.ndarray]:
    """Body name -> twist at `frame` for every target keyed before it."""
    out = {}
    for target in targets:
        part = Part(target.object, target.bone)
        if keyed_before(scene, part, frame):
            out[target.body] = part_twist(scene, part, frame, fps)
    return out


def chassis_twist(scene: bpy.types.Scene, owner: bpy.types.Object, chassis: Part, frame: float,
                  fps: float) -> np.ndarray | None:
    """The twist the vehicle rig of `owner` hands over at `frame`: its chassis part's (part_twist) when the
    owner's Start From Animation is on and the chassis is keyed before `frame`; None otherwise."""
    if not owner.symplex.start_from_animation or not keyed_before(scene, chassis, frame):
        return None
    return part_twist(scene, chassis, frame, fps)

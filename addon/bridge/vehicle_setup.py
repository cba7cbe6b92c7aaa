"""A vehicle rig's settings and record, kept on the rig: find, bake and free it the same way everywhere.

Owns what a rig's owner (its chassis object, or the armature of a bone rig) carries besides its keyed
controls: the preset (vehicle_rig.PRESET_PROPERTY), the forward axis (FORWARD_PROPERTY), the chassis bone
(CHASSIS_BONE_PROPERTY), the parts picked by hand (vehicle_parts.PICKS_PROPERTY) and the summary of its
last bake (RESULT_PROPERTY); its bake range and blend are the owner's Object.symplex settings (`span`, read
as a setup's). The buttons (ui/vehicle_operators.py) and the command line (job.py) both bake
through `bake_rig`, so a saved file bakes the rig the buttons bake: what a caller gives overrides what is
stored, and a bake that succeeds stores what it used and its summary; one that fails changes nothing.
Solve Shot (shot.py) finds its rig with `find` too.
"""

from __future__ import annotations

import dataclasses

import bpy

from ..solver.mechfile.read import vehicle_presets
from ..solver.vehicles.spec import CarTrailerSpec
from .read import bake_range
from .vehicle_bake import VehicleBakeReport, bake_vehicle, free_vehicle_bake
from .vehicle_body_rig import BODY_PRESETS, BodyBakeReport, BodyRig, bake_body_rig, find_body_rig, vehicle_type
from .vehicle_parts import RigError, own_name, store_picks, stored_picks
from .vehicle_rig import (CAR_PRESETS, FORWARD_PROPERTY, PRESET_PROPERTY, VehicleRig, find_rig, forward_from_wheels,
                          steering_position, trailer_part, wheel_position)

CHASSIS_BONE_PROPERTY = "symplex_chassis_bone"  # on a bone rig's armature: its chassis bone (else found by name)
RESULT_PROPERTY = "symplex_last_bake"  # on the rig's owner: the summary of its last bake
DEFAULT_PRESET = CAR_PRESETS[0]  # a rig storing no preset (an artist's car) bakes as this
DRIVABLE = ("car", "car + trailer", "helicopter", "boat", "hovercraft", "tank")  # live driving's (vehicle_live.py)


def kind(owner: bpy.types.Object) -> str | None:
    """What `owner` rigs, by its stored preset: 'car', 'car + trailer', 'helicopter', 'boat', 'hovercraft',
    'tank', 'snakeboard'; None when it stores no known preset."""
    preset = owner.get(PRESET_PROPERTY)
    if preset in CAR_PRESETS:
        return "car + trailer" if isinstance(vehicle_presets()[preset], CarTrailerSpec) else "car"
    return vehicle_type(preset) if preset in BODY_PRESETS else None


def rig_owner(obj: bpy.types.Object) -> bpy.types.Object:
    """The rig owner for a selected object: the object or its nearest ancestor storing a preset, else the
    parent of a part named like a wheel, trailer or steering part, else the object itself."""
    for candidate in (obj, *_ancestors(obj)):
        if PRESET_PROPERTY in candidate.keys():
            return candidate
    parent = obj.parent
    if parent is not None:
        name = own_name(obj.name, parent.name)
        if wheel_position(name) or trailer_part(name) or steering_position(name):
            return parent
    return obj


def _ancestors(obj: bpy.types.Object) -> list[bpy.types.Object]:
    out = []
    while obj.parent is not None:
        obj = obj.parent
        out.append(obj)
    return out


def find(scene: bpy.types.Scene, owner: bpy.types.Object, preset: str = "", forward: str = "", bone: str = "",
         picked: dict[str, str] | None = None) -> tuple[VehicleRig | BodyRig, str]:
    """The rig `owner` holds and its preset: each setting as given, else as stored on the owner, else the
    default (preset DEFAULT_PRESET; forward: a car's from its wheels (forward_from_wheels), else +X; chassis
    bone found by name). Raises RigError naming what is missing ("... is not a vehicle rig" for an object
    with no stored preset and no wheels)."""
    source = f"preset {preset!r}" if preset else f"property {PRESET_PROPERTY!r} is {owner.get(PRESET_PROPERTY)!r},"
    preset = preset or owner.get(PRESET_PROPERTY, DEFAULT_PRESET)
    forward = forward or owner.get(FORWARD_PROPERTY, "")
    bone = bone or owner.get(CHASSIS_BONE_PROPERTY, "")
    if preset in BODY_PRESETS:
        return find_body_rig(scene, owner, preset, forward or "+X", bone, picked), preset
    if preset in CAR_PRESETS:
        rig = find_rig(scene, owner, forward or "+X", picked, bone)
        return (rig if forward else dataclasses.replace(rig, forward=forward_from_wheels(scene, rig))), preset
    raise RigError(f"vehicle rig {owner.name!r}: {source} not a vehicle preset: one of "
                   f"{', '.join(CAR_PRESETS + BODY_PRESETS)}")


def span(scene: bpy.types.Scene, owner: bpy.types.Object) -> tuple[int, int, int]:
    """(first frame, last frame, blend frames) the rig `owner` holds bakes: its own Bake Range (read.bake_range:
    else the scene's frame range) and Blend Frames, as a setup's."""
    settings = owner.symplex
    first, last = bake_range(scene, settings)
    if last <= first:
        raise RigError(f"vehicle rig {owner.name!r}: its bake range {first}-{last} must span at least two frames")
    return first, last, int(settings.blend_frames)


def bake_rig(scene: bpy.types.Scene, owner: bpy.types.Object, preset: str = "", forward: str = "", bone: str = "",
             picked: dict[str, str] | None = None, substeps: int = 1,
             ground: str | None = None, frames: tuple[int, int, int] | None = None
             ) -> VehicleBakeReport | BodyBakeReport:
    """Find (see find) and bake the rig `owner` holds over `frames` (first, last, blend; default its own, see
    span); on success store on the owner the preset, forward axis, chassis bone and picks it used and the bake's
    summary. Raises RigError (nothing changed) otherwise."""
    picked = {k: v for k, v in (picked or {}).items() if v}
    rig, preset = find(scene, owner, preset, forward, bone, picked)
    frames = frames or span(scene, owner)
    if isinstance(rig, BodyRig):
        report: VehicleBakeReport | BodyBakeReport = bake_body_rig(scene, rig, preset, substeps, frames)
    else:
        report = bake_vehicle(scene, rig, preset, substeps, ground, frames)
    owner[PRESET_PROPERTY] = preset
    owner[FORWARD_PROPERTY] = rig.forward
    if rig.armature:
        owner[CHASSIS_BONE_PROPERTY] = rig.chassis
    store_picks(owner, {**stored_picks(owner), **picked})
    owner[RESULT_PROPERTY] = report.summary()
    return report


def free_rig(scene: bpy.types.Scene, owner: bpy.types.Object) -> int:
    """Undo the bake of the rig `owner` holds and forget its summary; returns how many objects were restored."""
    freed = free_vehicle_bake(scene, owner.name)
    if RESULT_PROPERTY in owner.keys():
        del owner[RESULT_PROPERTY]
    return freed

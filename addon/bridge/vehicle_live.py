"""Drive a car rig live in the viewport: start a LiveDrive from the rig, show it, keep or drop the take.

`start` reads the rig as a bake would (vehicle_rig.read_rig at one step per frame, so the live drive starts
where the bake starts: start pose, Start From Animation speed) and binds the keyboard to the controls the rig
records in (its keyed or set 'drive_torque' or else 'throttle', 'brake_torque' or else 'brake', 'steer').
`show` puts the rig's objects on the drive's last node (their transforms only; a bone rig shows nothing
live); `restore` puts them back where they were, so a cancelled drive leaves the scene as it was. `keep`
frees the rig's bake, keys the take on the owner's control properties at every half frame (linear keys,
replacing the keys of those properties inside the take's frames), ends the scene's frame range one frame
after the take and bakes the rig: the bake reads the keys back into the same Curves the drive stepped
with (solver/vehicles/live.py), so it repeats the drive bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
from mathutils import Matrix

from ..solver.model import Mechanism
from ..solver.vehicles.live import LiveDrive, car_bindings
from . import compat, reference
from .rotations import pose_matrices
from .vehicle_bake import VehicleBakeReport, object_trajectory
from .vehicle_rig import (
    CONTROL_PROPERTIES,
    PATH_PROPERTY,
    RigError,
    VehicleRig,
    read_rig,
)
from .vehicle_setup import bake_rig, find, free_rig


@dataclass
class DriveSession:
    """A live drive of the rig `owner` holds: the drive, the reading it started from and the transforms (matrix_basis) of
    the rig's objects before it (restored at its end)."""

    owner: str
    drive: LiveDrive
    reading: object
    saved: dict[str, object]


def recorded_properties(owner: bpy.types.Object) -> dict[str, str]:
    """Control -> the property the take records it in: the one the rig keys or sets, else the last option
    (throttle and brake as fractions, steer in rad)."""
    channels = reference.original_channels(owner)
    out = {}
    for control, options in CONTROL_PROPERTIES.items():
        names = [prop for prop, _ in options]
        present = [p for p in names if p in owner or compat.find_fcurve(channels, f'["{p}"]', 0) is not None]
        out[control] = present[0] if present else names[-1]
    return out


def start(scene: bpy.types.Scene, owner: bpy.types.Object, now: float) -> DriveSession:
    """A live drive of the car rig `owner` holds, its clock starting at wall-clock `now`. Raises RigError for
    a rig that is not a car, or one that follows a path."""
    rig, preset = find(scene, owner)
    if not isinstance(rig, VehicleRig):
        raise RigError(f"vehicle rig {owner.name!r}: live driving drives cars (with or without trailer); "
                       f"{preset!r} is not one")
    if owner.get(PATH_PROPERTY):
        raise RigError(f"vehicle rig {owner.name!r}: it follows path {owner[PATH_PROPERTY]!r}; clear "
                       f"{PATH_PROPERTY!r} to drive it")
    reading = read_rig(scene, rig, preset, 1, scene.frame_start, max(scene.frame_end, scene.frame_start + 1))
    spec = reading.vehicle.spec
    mech = Mechanism(name=f"vehicle rig {owner.name}", bodies=(), joints=(), gravity=tuple(scene.gravity),
                     vehicle=reading.vehicle, source=f"vehicle rig {owner.name!r}")
    bindings = car_bindings(spec.max_steer, spec.max_drive_torque, spec.max_brake_torque, recorded_properties(owner))
    names = [rig.chassis, *(name for _, name in rig.wheels), *(name for _, name in rig.steering),
             *(name for _, name in rig.trailer)]
    saved = {} if rig.armature else {n: scene.objects[n].matrix_basis.copy() for n in names}
    return DriveSession(owner.name, LiveDrive(mech, reading.dt, bindings, now), reading, saved)


def show(scene: bpy.types.Scene, session: DriveSession) -> None:
    """Put the rig's objects on the drive's last node."""
    if not session.saved:
        return
    objects = object_trajectory(session.reading, session.drive.trajectory())
    for name, matrix in zip(objects.bodies, pose_matrices(objects.poses[-1])):
        scene.objects[name].matrix_world = Matrix(matrix.tolist())


def restore(scene: bpy.types.Scene, session: DriveSession) -> None:
    """Put the rig's objects back where they were before the drive."""
    for name, matrix in session.saved.items():
        scene.objects[name].matrix_basis = matrix


def keep(scene: bpy.types.Scene, session: DriveSession) -> VehicleBakeReport:
    """Key the take on the owner's control properties and bake it (see the module docstring)."""
    restore(scene, session)
    owner = scene.objects[session.owner]
    free_rig(scene, owner)
    frame_start = scene.frame_start
    take = session.drive.take()
    for prop, values in take.items():
        _key(owner, prop, frame_start, values)
    scene.frame_end = frame_start + session.drive.steps + 1
    return bake_rig(scene, owner)


def _key(owner: bpy.types.Object, prop: str, frame_start: int, values: list[float]) -> None:
    """Key `values` on property `prop` at frames frame_start + 0, 0.5, 1, ... (linear), replacing its keys
    in between."""
    last = frame_start + 0.5 * (len(values) - 1)
    channels = reference.original_channels(owner)
    fcurve = compat.find_fcurve(channels, f'["{prop}"]', 0)
    if fcurve is not None:
        for point in reversed(list(fcurve.keyframe_points)):
            if frame_start <= point.co[0] <= last:
                fcurve.keyframe_points.remove(point)
    for i, value in enumerate(values):
        owner[prop] = value
        owner.keyframe_insert(f'["{prop}"]', frame=frame_start + 0.5 * i)
    fcurve = compat.find_fcurve(reference.original_channels(owner), f'["{prop}"]', 0)
    for point in fcurve.keyframe_points:
        if frame_start <= point.co[0] <= last:
            point.interpolation = "LINEAR"

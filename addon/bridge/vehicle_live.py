"""Drive a vehicle rig live in the viewport: start a LiveDrive from the rig, show it, keep or drop the take.

`start` reads the rig as a bake would (vehicle_rig.read_rig or vehicle_body_rig.read_body_rig at one step per
frame, so the live drive starts where the bake starts: start pose, Start From Animation speed) and binds the
keyboard to the controls the rig records in: a car's keyed or set 'drive_torque' or else 'throttle',
'brake_torque' or else 'brake', 'steer'; a helicopter's, boat's, hovercraft's or tank's own control names
(solver/vehicles/live.body_bindings).
`show` puts the rig's objects on the drive's last node (their transforms only; a bone rig shows nothing
live); `restore` puts them back where they were, so a cancelled drive leaves the scene as it was. `keep`
frees the rig's bake, keys the take on the owner's control properties at every half frame (linear keys,
replacing the keys of those properties inside the take's frames), ends the scene's frame range one frame
after the take and bakes the rig: the bake reads the keys back into the same Curves the drive stepped
with (solver/vehicles/live.py), so it repeats the drive bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix

from ..solver.model import Mechanism
from ..solver.trajectory import Trajectory
from ..solver.vehicles.live import LiveDrive, body_bindings, car_bindings
from . import compat, reference
from .rotations import pose_matrices
from .vehicle_bake import VehicleBakeReport
from .vehicle_bake import object_trajectory as car_parts
from .vehicle_body_rig import BodyBakeReport, BodyReading, read_body_rig
from .vehicle_body_rig import object_trajectory as body_parts
from .vehicle_rig import CONTROL_PROPERTIES, PATH_PROPERTY, RigError, RigReading, VehicleRig, read_rig
from .vehicle_setup import bake_rig, find, free_rig


@dataclass
class DriveSession:
    """A live drive of the rig `owner` holds: the drive, the reading it started from, how a run puts the rig's
    parts (object_trajectory of vehicle_bake or vehicle_body_rig) and the transforms (matrix_basis) of the
    rig's objects before it (restored at its end)."""

    owner: str
    drive: LiveDrive
    reading: RigReading | BodyReading
    parts: Callable[[RigReading | BodyReading, Trajectory], Trajectory]
    saved: dict[str, Matrix]


def recorded_properties(owner: bpy.types.Object) -> dict[str, str]:
    """Car control -> the property the take records it in: the one the rig keys or sets, else the last option
    (throttle and brake as fractions, steer in rad)."""
    channels = reference.original_channels(owner)
    out = {}
    for control, options in CONTROL_PROPERTIES.items():
        names = [prop for prop, _ in options]
        present = [p for p in names if p in owner or compat.find_fcurve(channels, f'["{p}"]', 0) is not None]
        out[control] = present[0] if present else names[-1]
    return out


def start(scene: bpy.types.Scene, owner: bpy.types.Object, now: float) -> DriveSession:
    """A live drive of the rig `owner` holds (a car, helicopter, boat, hovercraft or tank), its clock starting at
    wall-clock `now`. Raises RigError for a snakeboard or a rig that follows a path."""
    rig, preset = find(scene, owner)
    frame_end = max(scene.frame_end, scene.frame_start + 1)
    if owner.get(PATH_PROPERTY):
        raise RigError(f"vehicle rig {owner.name!r}: it follows path {owner[PATH_PROPERTY]!r}; clear "
                       f"{PATH_PROPERTY!r} to drive it")
    if isinstance(rig, VehicleRig):
        reading = read_rig(scene, rig, preset, 1, scene.frame_start, frame_end)
        spec = reading.vehicle.spec
        bindings = car_bindings(spec.max_steer, spec.max_drive_torque, spec.max_brake_torque,
                                recorded_properties(owner))
        names = [rig.chassis, *(name for _, name in rig.wheels), *(name for _, name in rig.steering),
                 *(name for _, name in rig.trailer)]
        parts = car_parts
    else:
        reading = read_body_rig(scene, rig, preset, 1)
        try:
            bindings = body_bindings(rig.kind, reading.vehicle.spec, -float(scene.gravity[2]))
        except ValueError as err:
            raise RigError(f"vehicle rig {owner.name!r}: {err}") from None
        names = [rig.chassis, *(name for _, name in rig.spinners)]
        parts = body_parts
    mech = Mechanism(name=f"vehicle rig {owner.name}", bodies=(), joints=(), gravity=tuple(scene.gravity),
                     vehicle=reading.vehicle, source=f"vehicle rig {owner.name!r}")
    saved = {} if rig.armature else {n: scene.objects[n].matrix_basis.copy() for n in names}
    return DriveSession(owner.name, LiveDrive(mech, reading.dt, bindings, now), reading, parts, saved)


def show(scene: bpy.types.Scene, session: DriveSession) -> float:
    """Put the rig's objects on the drive's last node; returns the chassis' speed over the last step (m/s)."""
    objects = session.parts(session.reading, session.drive.trajectory())
    if session.saved:
        for name, matrix in zip(objects.bodies, pose_matrices(objects.poses[-1])):
            scene.objects[name].matrix_basis = Matrix(matrix.tolist())
    if len(objects.t) < 2:
        return 0.0
    return float(np.linalg.norm(objects.poses[-1, 0, :3] - objects.poses[-2, 0, :3]) / session.drive.dt)


def restore(scene: bpy.types.Scene, session: DriveSession) -> None:
    """Put the rig's objects back where they were before the drive."""
    for name, matrix in session.saved.items():
        scene.objects[name].matrix_basis = matrix


def keep(scene: bpy.types.Scene, session: DriveSession) -> VehicleBakeReport | BodyBakeReport:
    """Key the take on the owner's control properties and bake it (see the module docstring)."""
    restore(scene, session)
    owner = scene.objects[session.owner]
    free_rig(scene, owner)
    frame_start = scene.frame_start
    take = session.drive.take()
    for prop, values in take.items():
        _key(owner, prop, frame_start, values)
    scene.frame_end = frame_start + session.drive.steps + 1
    return bake_rig(scene, owner, frames=(frame_start, scene.frame_end, 0))  # the take's frames, not a bake range


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

"""Ground following for car rigs: ray-cast each wheel onto a ground mesh, run the chassis suspension on it.

The planar car solve (flat ground) gives the chassis' path; this module adds the vertical: for every
time node each wheel's footprint is ray-cast straight down onto the ground object (its mesh data placed
by its pre-bake world matrix at the start frame; modifiers are not applied), giving the wheel's height
above the rig's own ground plane. Those heights and the chassis' planar accelerations drive
solver.vehicles.suspension (heave, roll, pitch on four spring-dampers). The rig names its ground with
the chassis custom property `symplex_ground` (or the bake operator's Ground field) and may tune its
springs with `suspension_frequency` (Hz) and `suspension_damping` (fraction of critical).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np
from mathutils.bvhtree import BVHTree

from ..solver.trajectory import Trajectory
from ..solver.vehicles.suspension import (DEFAULT_DAMPING, DEFAULT_FREQUENCY, Suspension, SuspensionRun,
                                          car_suspension, simulate_suspension)
from . import reference
from .vehicle_rig import RigError, RigReading

GROUND_PROPERTY = "symplex_ground"
FREQUENCY_PROPERTY = "suspension_frequency"
DAMPING_PROPERTY = "suspension_damping"
FOOTPRINT = np.linspace(-0.95, 0.95, 9)  # ray offsets along the wheel's heading, in wheel radii


@dataclass(frozen=True)
class Ride:
    """Ground following of a rig's run: wheel heights road (N+1, 4) above the rig's ground plane (car.WHEELS
    order) and the suspension's run (q = z, roll, pitch of the chassis from its rest pose)."""

    ground: str
    suspension: Suspension
    road: np.ndarray
    run: SuspensionRun

    def chassis_offsets(self) -> np.ndarray:
        """(N+1, 4, 4): the chassis in the planar solver's chassis frame: lifted by z, then pitched and rolled
        about its centre of mass."""
        z, roll, pitch = self.run.q.T
        cr, sr, cp, sp = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch)
        out = np.zeros((len(z), 4, 4))
        # R_y(pitch) @ R_x(roll)
        out[:, 0, 0], out[:, 0, 1], out[:, 0, 2] = cp, sp * sr, sp * cr
        out[:, 1, 1], out[:, 1, 2] = cr, -sr
        out[:, 2, 0], out[:, 2, 1], out[:, 2, 2] = -sp, cp * sr, cp * cr
        out[:, 2, 3], out[:, 3, 3] = z, 1.0
        return out


def ground_name(chassis: bpy.types.Object, name: str | None = None) -> str | None:
    """The ground object's name: `name` when given (non-empty), else the chassis' symplex_ground property."""
    if name:
        return name
    value = chassis.get(GROUND_PROPERTY)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RigError(f"vehicle rig {chassis.name!r}: property {GROUND_PROPERTY!r} must name the ground object, "
                       f"got {value!r}")
    return value


def ground_tree(scene: bpy.types.Scene, rig: str, name: str, frame: float) -> tuple[BVHTree, float]:
    """A ray-cast tree of ground object `name` in world space, and the top of its bounding box (world z)."""
    obj = scene.objects.get(name)
    if obj is None:
        raise RigError(f"vehicle rig {rig!r}: ground object {name!r} is not in scene {scene.name!r}")
    if obj.type != "MESH" or not len(obj.data.polygons):
        raise RigError(f"vehicle rig {rig!r}: ground object {name!r} must be a mesh with faces, it is a "
                       f"{obj.type.lower()}" + (" without faces" if obj.type == "MESH" else ""))
    matrix = np.array(reference.object_matrix(obj, frame))
    local = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", local)
    world = local.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
    tree = BVHTree.FromPolygons([tuple(v) for v in world], [tuple(p.vertices) for p in obj.data.polygons])
    return tree, float(world[:, 2].max())


def road_heights(scene: bpy.types.Scene, reading: RigReading, trajectory: Trajectory, ground: str) -> np.ndarray:
    """(N+1, 4) height of each wheel above the rig's ground plane: the lowest its centre can sit over the
    ground seen along its footprint (9 rays within its radius, ahead and behind) less its radius."""
    rig = reading.rig.owner
    tree, top = ground_tree(scene, rig, ground, reading.frame_start)
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = 2.0 * np.arctan2(poses[:, 6], poses[:, 3])
    c, s = np.cos(theta), np.sin(theta)
    mounts = reading.wheel_mounts[:, :2]
    cx = poses[:, 0, None] + c[:, None] * mounts[:, 0] - s[:, None] * mounts[:, 1]  # (N+1, 4)
    cy = poses[:, 1, None] + s[:, None] * mounts[:, 0] + c[:, None] * mounts[:, 1]
    start = top + 1.0
    road = np.empty(cx.shape)
    for k in range(len(theta)):
        for i, radius in enumerate(reading.wheel_radii):
            best = -np.inf
            for f in FOOTPRINT:
                d = f * radius
                hit = tree.ray_cast((cx[k, i] + d * c[k], cy[k, i] + d * s[k], start), (0.0, 0.0, -1.0))[0]
                if hit is not None:
                    best = max(best, hit[2] + radius * np.sqrt(1.0 - f * f) - radius)
            if best == -np.inf:
                frame = reading.frame_start + trajectory.t[k] * reading.fps
                key, obj = reading.rig.wheels[i]
                raise RigError(f"vehicle rig {rig!r}: wheel {obj!r} ({key}) is off ground object {ground!r} at "
                               f"frame {frame:g} (nothing below ({cx[k, i]:.3f}, {cy[k, i]:.3f}))")
            road[k, i] = best - reading.ground
    return road


def planar_acceleration(trajectory: Trajectory) -> np.ndarray:
    """(N+1, 2) acceleration of the chassis' centre of mass in its own axes (forward, left), by second
    order differences of the solved positions (central inside, one-sided at the ends)."""
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    h = float(trajectory.t[1] - trajectory.t[0])
    accel = np.gradient(np.gradient(poses[:, :2], h, axis=0, edge_order=2), h, axis=0, edge_order=2)
    theta = 2.0 * np.arctan2(poses[:, 6], poses[:, 3])
    c, s = np.cos(theta), np.sin(theta)
    return np.column_stack([c * accel[:, 0] + s * accel[:, 1], -s * accel[:, 0] + c * accel[:, 1]])


def _number(chassis: bpy.types.Object, prop: str, default: float) -> float:
    value = chassis.get(prop, default)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RigError(f"vehicle rig {chassis.name!r}: property {prop!r} must be a number, got {value!r}") from None


def ride(scene: bpy.types.Scene, reading: RigReading, trajectory: Trajectory, ground: str,
         gravity: float = 9.81) -> Ride:
    """Follow `ground` with the rig's run: road heights, then the suspension started at rest over them."""
    chassis = scene.objects[reading.rig.owner]  # the chassis object, or a bone rig's armature
    frequency = _number(chassis, FREQUENCY_PROPERTY, DEFAULT_FREQUENCY)
    damping = _number(chassis, DAMPING_PROPERTY, DEFAULT_DAMPING)
    try:
        susp = car_suspension(reading.vehicle.spec, reading.wheel_mounts[:, :2], frequency, damping)
    except ValueError as err:
        raise RigError(f"vehicle rig {chassis.name!r}: {err}") from None
    road = road_heights(scene, reading, trajectory, ground)
    run = simulate_suspension(susp, trajectory.t, road, planar_acceleration(trajectory), gravity=gravity)
    return Ride(ground, susp, road, run)

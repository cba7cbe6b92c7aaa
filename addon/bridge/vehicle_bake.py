"""Bake a car rig: simulate its Vehicle, put the chassis and wheel objects on the result, key them with bake.py.

The chassis follows the solver's chassis rigidly. Each wheel stays at its mount on the chassis and turns
by its own steering angle (front wheels: the Ackermann angle of its mount, so it points along its own
velocity) and its own rolling angle: the arc its centre travels in each step, divided by its measured
radius. A wheel's centre is its mesh's (vehicle_parts.shape); a part whose origin lies off that centre (a
bone's head beside its wheel mesh) turns about the centre, keeping its offset in its own axes. A car step
is an exact circular arc of the chassis, so with d_s the rear-axle arc and d_theta the heading change, a
wheel mounted at (px, py) from the rear-axle centre travels the displacement (d_s - d_theta py,
d_theta px) in chassis axes, of length exactly its arc. The Ackermann angle and the arcs are the solver's
own (solver/vehicles/car.py: ackermann_steer, wheel_arcs), taken at the rig's measured mounts; rotations
and transforms come from solver/lie.py. The keys are written by bake.write_trajectory into new actions
(undo with free_vehicle_bake), all or nothing.

With a ground object (bridge/suspension.py) the chassis also heaves, pitches and rolls on its springs
about its centre of mass, and each wheel centre rises by its road height over the ground it crosses
(its orientation follows the chassis).

Front steering parts (knuckles, uprights: reading.steering) turn with their wheel's steering angle about
the vertical through their own origin, without rolling. A car towing a trailer (reading.trailer) also
bakes the trailer body on the solver's trailer and its two wheels, each rolling by its own arc over its
own measured radius. A bone rig is baked the same way onto its pose bones (vehicle_parts.Part.target).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import bpy
import numpy as np

from ..solver.integrator import simulate
from ..solver.lie import axis_rotation, pose_matrix
from ..solver.model import Mechanism
from ..solver.trajectory import Trajectory
from ..solver.vehicles.car import ackermann_steer, wheel_arcs
from ..solver.vehicles.drift import simulate_drifting
from ..solver.vehicles.driver import simulate_driving
from ..solver.vehicles.pursuit import simulate_following
from ..solver.vehicles.trailer import TRAILER_WHEELS
from .bake import BakeOptions, baked_objects, free_bake, write_trajectory
from .rotations import matrix_to_quat, pose_matrices
from .suspension import Ride, ground_name, ride
from .vehicle_rig import FRONT, RigError, RigReading, VehicleRig, read_rig

SETUP_PREFIX = "vehicle:"


def setup_name(chassis: str) -> str:
    """The setup name a vehicle bake records on its actions (bake.baked_objects finds them by it)."""
    return SETUP_PREFIX + chassis


@dataclass(frozen=True)
class VehicleBakeReport:
    chassis: str
    steps: int
    keys: int
    seconds: float
    max_side_slip: float  # m/s at the rear axle, the solver's constraint residual
    distance: float  # m rolled by the rear-axle centre
    warnings: tuple[str, ...] = ()
    ground: str | None = None  # the ground object followed, if any
    ride: Ride | None = None

    def summary(self) -> str:
        text = (f"Baked vehicle {self.chassis!r}: {self.steps} steps, {self.keys} keys in {self.seconds:.2f} s; "
                f"{self.distance:.1f} m driven, rear-axle side slip {self.max_side_slip:.1e} m/s")
        if self.ride is not None:
            q = np.degrees(np.abs(self.ride.run.q[:, 1:]).max(axis=0))
            text += f"; on {self.ground!r}: roll up to {q[0]:.1f} deg, pitch up to {q[1]:.1f} deg"
        return text


def simulate_rig(reading: RigReading, gravity=(0.0, 0.0, -9.81)) -> Trajectory:
    """The solver's run of the rig's Vehicle over its frame range (steered along its path, if it has one: by
    pure pursuit, as a driver with the rig's limits, or drifting on tyres that slip at its drift angle).
    Raises RigError naming the frame if it fails."""
    name = reading.rig.owner
    mech = Mechanism(name=f"vehicle rig {name}", bodies=(), joints=(), gravity=tuple(gravity),
                     vehicle=reading.vehicle, source=f"vehicle rig {name!r}")
    if reading.path is None:
        trajectory = simulate(mech, reading.dt, reading.steps, method="vehicle")
    elif reading.drift is not None:
        trajectory, _ = simulate_drifting(mech, reading.path, reading.limits, reading.drift, reading.dt, reading.steps,
                                          speed=reading.path_speed)
    elif reading.limits is not None:
        trajectory, _ = simulate_driving(mech, reading.path, reading.limits, reading.dt, reading.steps,
                                         speed=reading.path_speed)
    else:
        trajectory, _ = simulate_following(mech, reading.path, reading.path_speed, reading.dt, reading.steps)
    if trajectory.status != "finished":
        frame = reading.frame_start + trajectory.t[-1] * reading.fps
        raise RigError(f"vehicle rig {name!r}: the solver stopped after frame {frame:g}: {trajectory.message}")
    return trajectory


def _heading(poses: np.ndarray) -> np.ndarray:
    """Unwrapped heading (N+1,) of yaw-only chassis poses (N+1, 7)."""
    return np.unwrap(2.0 * np.arctan2(poses[:, 6], poses[:, 3]))


def wheel_motion(reading: RigReading, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """Steering and rolling angles (N+1, 4) of the rig's wheels (car.WHEELS order), in rad.

    Steering: car.ackermann_steer of the front wheels at their measured mounts (px, py) from the rear-axle
    centre for the solver's steer at each node; 0 for the rear wheels. Rolling: the running sum of each
    step's arc of the wheel centre (car.wheel_arcs of the step's rear-axle arc and heading change) over
    the wheel's radius.
    """
    spec = reading.vehicle.spec
    names = trajectory.coordinate_names
    psi = trajectory.q[:, names.index("wheel_angle")]
    sigma = np.tan(trajectory.q[:, names.index("steer")])
    theta = _heading(trajectory.poses[:, trajectory.body_index("chassis")])
    mounts = reading.wheel_mounts[:, :2] + np.array([spec.com_ahead_of_rear_axle, 0.0])
    front = np.array([key in FRONT for key, _ in reading.rig.wheels])
    steer = np.where(front, ackermann_steer(sigma, mounts, spec.wheelbase), 0.0)
    arcs = wheel_arcs(mounts, spec.wheel_radius * np.diff(psi), np.diff(theta), front)
    spin = np.vstack([np.zeros((1, 4)), np.cumsum(arcs / reading.wheel_radii, axis=0)])
    return steer, spin


def object_trajectory(reading: RigReading, trajectory: Trajectory, follow: Ride | None = None) -> Trajectory:
    """`trajectory` restated as world poses of the rig's objects (bodies named after the objects), with the
    suspension's chassis motion and wheel heights of `follow` when given."""
    lift = np.eye(4)
    lift[2, 3] = reading.ground
    body = lift @ pose_matrices(trajectory.poses[:, trajectory.body_index("chassis")])  # (N+1, 4, 4)
    sprung = body if follow is None else body @ follow.chassis_offsets()
    steer, spin = wheel_motion(reading, trajectory)
    worlds = [sprung @ reading.chassis_offset]
    for i in range(len(reading.rig.wheels)):
        world = sprung @ pose_matrix(np.zeros(3), axis_rotation(2, steer[:, i]) @ axis_rotation(1, spin[:, i])
                                     @ reading.wheel_rest[i])
        world[:, :, 3] = body @ np.append(reading.wheel_mounts[i], 1.0)  # the centre stays over its planar path
        if follow is not None:
            world[:, 2, 3] += follow.road[:, i]
        worlds.append(world @ pose_matrix(reading.wheel_offsets[i], np.eye(3)))  # the part's origin, off its centre
    names = [reading.rig.chassis, *(obj for _, obj in reading.rig.wheels)]
    wheel_index = {key: i for i, (key, _) in enumerate(reading.rig.wheels)}
    for (key, rest), (_, name) in zip(reading.steering, reading.rig.steering):
        turn = axis_rotation(2, steer[:, wheel_index["wheel_" + key[-2:]]])  # with its wheel, no roll
        worlds.append(sprung @ pose_matrix(rest[:3, 3], turn @ rest[:3, :3]))
        names.append(name)
    if reading.trailer is not None:
        worlds += _trailer_worlds(reading, trajectory, lift)
        names += [dict(reading.rig.trailer)[key] for key in ("trailer", *TRAILER_WHEELS)]
    worlds_arr = np.stack(worlds, axis=1)  # (N+1, B, 4, 4)
    poses = np.concatenate([worlds_arr[..., :3, 3], matrix_to_quat(worlds_arr[..., :3, :3])], axis=-1)
    return Trajectory(t=trajectory.t, bodies=names, poses=poses, q=trajectory.q,
                      coordinate_names=list(trajectory.coordinate_names), energy=trajectory.energy,
                      constraint_residual=trajectory.constraint_residual,
                      newton_iterations=trajectory.newton_iterations, method=trajectory.method,
                      status=trajectory.status, message=trajectory.message, info=dict(trajectory.info))


def _trailer_worlds(reading: RigReading, trajectory: Trajectory, lift: np.ndarray) -> list[np.ndarray]:
    """World matrices (N+1, 4, 4) of the trailer body and its two wheels: the body rigidly on the solver's
    trailer, each wheel at its mount turned by its rolling angle, the solver's (whose wheels have the
    preset's mean radius) rescaled to the wheel's own measured radius, so each rolls its own arc."""
    trailer = reading.trailer
    body = lift @ pose_matrices(trajectory.poses[:, trajectory.body_index("trailer")])
    out = [body @ trailer.offset]
    rho = reading.vehicle.spec.trailer_wheel_radius
    for i, key in enumerate(TRAILER_WHEELS):
        spin = trajectory.q[:, trajectory.coordinate_names.index(f"{key}_spin")] * rho / trailer.radii[i]
        local = pose_matrix(trailer.mounts[i], axis_rotation(1, spin) @ trailer.rest[i])
        out.append(body @ local @ pose_matrix(trailer.offsets[i], np.eye(3)))
    return out


def bake_vehicle(scene: bpy.types.Scene, rig: VehicleRig, preset: str = "sedan", substeps: int = 1,
                 ground: str | None = None, span: tuple[int, int, int] | None = None) -> VehicleBakeReport:
    """Read, simulate and bake `rig` over the scene's frame range (one key per frame), or over `span` (first
    frame, last frame, blend frames: the artist's keys outside kept, the blend frames after the last blended
    into them, handback.py), following the ground object `ground` (default: the chassis' symplex_ground
    property; none: flat ground). A new bake replaces the rig's previous one; on any error nothing in the
    scene changes."""
    started = time.perf_counter()
    first, last, blend = span or (scene.frame_start, scene.frame_end, 0)
    reading = read_rig(scene, rig, preset, substeps, first, last + blend)
    trajectory = simulate_rig(reading, scene.gravity)
    ground = ground_name(scene.objects[rig.owner], ground)
    if ground is not None and reading.trailer is not None:
        raise RigError(f"vehicle rig {rig.owner!r}: ground following (ground {ground!r}) drives cars without a "
                       f"trailer only; clear the ground or pick a car preset")
    follow = None if ground is None else ride(scene, reading, trajectory, ground, -float(scene.gravity[2]))
    objects = object_trajectory(reading, trajectory, follow)
    targets = [rig.part(name).target() for name in objects.bodies]
    options = BakeOptions(setup_name(rig.owner), reading.frame_start, reading.fps, reading.substeps,
                          blend_frames=blend)
    keys = write_trajectory(objects, targets, options, root=rig.owner)
    psi = trajectory.q[:, trajectory.coordinate_names.index("wheel_angle")]
    return VehicleBakeReport(rig.owner, trajectory.nsteps, keys, time.perf_counter() - started,
                             float(np.max(trajectory.constraint_residual)),
                             float(np.sum(np.abs(np.diff(psi))) * reading.vehicle.spec.wheel_radius),
                             reading.warnings, ground, follow)


def free_vehicle_bake(scene: bpy.types.Scene, chassis: str) -> int:
    """Undo the vehicle bake of `chassis` on every object it keyed; returns how many were restored."""
    return free_bake(baked_objects(scene, setup_name(chassis)))

"""Optimal-control shots of vehicle rigs in the scene: keyed chassis poses in, solved controls and motion out.

`ShotJob(scene, owner)` (car rigs) and `BodyShotJob(scene, owner)` (helicopter, boat and hovercraft rigs of
vehicle_body_rig.py) read everything in the main thread: the rig (found as a bake finds it,
vehicle_setup.find: stored settings, else defaults, a car's forward axis from its wheels), the chassis'
keyed poses as shot keys (the frames where the artist's own action keys them, after the start frame:
location keys -> position, rotation keys -> heading; a car's and a boat's or hovercraft's position is
horizontal, a helicopter's 3-D; the last key at rest with End at Rest), obstacles from a collection (sphere, box, cylinder or convex hull
from each object's bounds or mesh), and for a car a warm start from the rig's current Symplex bake.
`run()` solves (solver/shots, no bpy: safe in a worker thread; `cancel()` stops it). `finish(scene)`
writes, all or nothing: the solved controls become keyed custom properties on the rig, named as the
vehicle bake reads them (car: drive_torque, steer; helicopter: collective, tail, blade_pitch, blade_roll;
boat, hovercraft: thrust_right, thrust_left), replacing its own control keys so the artist can edit them
and re-bake with Bake Vehicle; then the existing vehicle bake (vehicle_bake.bake_vehicle,
vehicle_body_rig.bake_body_rig) simulates and keys the rig, and the solved path is drawn as a curve
object. A cancelled or failed solve changes nothing.

A boat's or hovercraft's position key holds x and y only (its height is the water's or cushion's): the
shot Key has no partial positions, so it becomes a Corridor of one step, x and y fixed and z free within
+-FREE_HEIGHT, named as the key, plus a Key at the keyed position with radius FREE_HEIGHT that only guides
the solver's start path through it.

`MechanismShotJob(scene, setup, effector)` does the same for a Symplex setup (tree method): the effector
object's location keys (after the start frame; the axes keyed at a frame make a partial key) become
body-position keys, every single-dof joint without a motor is driven within +-max_force, joint limits
come from the setup; the solved motion is baked with bake.write_trajectory and the torques are keyed as
custom properties `symplex_torque_<joint>` in the effector's bake (Free Bake removes them).

All three share `SolveJob`: progress, cancel, the solve kept on the job for a worker thread, and the check
that finish() only writes a converged solve.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable

import bpy
import numpy as np

from ..solver.lie import matrix_to_quat
from ..solver.model import Mechanism, Vehicle
from ..solver.shots.solve import solve_shot
from ..solver.shots.spec import (Control, Corridor, Costs, Key, MechanismKey, MechanismShot, Obstacle, Shot, ShotError,
                                 ShotResult)
from ..solver.trajectory import Trajectory
from ..solver.vehicles.spec import CONTROL_NAMES
from . import compat, reference, vehicle_setup
from .bake import LINEAR, BakeOptions, write_trajectory
from .read import SceneMechanism, find_setup, read_setup
from .vehicle_bake import bake_vehicle
from .vehicle_body_rig import BODY_PRESETS, BodyReading, BodyRig, bake_body_rig, read_body_rig, vehicle_type
from .vehicle_parts import RigError, world
from .vehicle_rig import (CAR_PRESETS, CONTROL_PROPERTIES, FORWARD_AXES, PATH_PROPERTY, PRESET_PROPERTY, RigReading,
                          VehicleRig, read_rig)

SHAPE_PROPERTY = "symplex_shape"  # on an obstacle object: sphere, box, cylinder or hull (default: by name, else box)
PATH_SUFFIX = " shot path"
SOLVED_CONTROLS = ("drive_torque", "steer")
SHOT_BODY_TYPES = ("helicopter", "boat", "hovercraft")  # body rigs with shot dynamics (solver/shots/holonomic.py)
FREE_HEIGHT = 100.0  # m: a boat's or hovercraft's key leaves its height free by this much either way


@dataclass
class ShotSettings:
    """What the operator passes in (ui/shot_properties.py mirrors it)."""

    obstacles: str = ""  # collection name
    clearance: float = 0.2
    use_heading: bool = True
    end_at_rest: bool = True
    max_iterations: int = 300
    smoothness: float = 0.01  # weight of spec.Costs.smoothness (the rates of the controls)
    max_force: float = 1000.0  # mechanism shots: bound on every driven joint's torque (N m) or force (N)
    joint_speed: float = 0.0  # mechanism shots: weight of spec.MechanismShot.speed (the joints' rates)


class SolveJob:
    """What every Solve Shot job shares: the iteration and solver info for the status bar, cancel, a run()
    that keeps the result or the exception (so it can run in a worker thread), and _solved(), the result
    finish() may write, else a RigError saying the solve failed or was cancelled and nothing changed.
    Subclasses set owner_name and implement _solve(progress) (no bpy) and finish(scene)."""

    owner_name: str

    def _reset(self) -> None:
        self.iteration, self.info, self.cancelled = 0, {}, False
        self.result: ShotResult | None = None
        self.error: BaseException | None = None

    def _owner(self, scene: bpy.types.Scene) -> bpy.types.Object:
        """The rig object named owner_name, or a RigError naming it and the scene."""
        owner = scene.objects.get(self.owner_name)
        if owner is None:
            raise RigError(f"no rig object {self.owner_name!r} in scene {scene.name!r}")
        return owner

    def cancel(self) -> None:
        self.cancelled = True

    def _progress(self, iteration: int, info: dict) -> bool:
        self.iteration, self.info = iteration, info
        return not self.cancelled

    def _solve(self, progress: Callable[[int, dict], bool]) -> ShotResult:
        raise NotImplementedError

    def run(self) -> ShotResult:
        """Solve (no bpy access: may run in a worker thread). Keeps the result or the exception."""
        try:
            self.result = self._solve(self._progress)
        except BaseException as err:  # handed to the main thread by finish()
            self.error = err
            raise
        return self.result

    def _solved(self, label: str) -> ShotResult:
        if self.error is not None:
            raise RigError(f"Solve Shot {label!r}: {self.error}") from self.error
        result = self.result
        if result is None or result.status != "solved":
            status = "cancelled" if self.cancelled or (result and result.status == "cancelled") else "failed"
            report = result.report if result is not None else "no result"
            raise RigError(f"Solve Shot {label!r} {status}; nothing was changed. {report}")
        return result


def _rig_of(scene: bpy.types.Scene, owner: bpy.types.Object) -> tuple[VehicleRig, str]:
    """The car rig `owner` holds and its preset, found as a bake finds it (vehicle_setup.find: its stored
    settings, else the defaults; a forward axis never stored is inferred from the wheels)."""
    preset = owner.get(PRESET_PROPERTY, vehicle_setup.DEFAULT_PRESET)
    if preset not in CAR_PRESETS:
        raise RigError(f"vehicle rig {owner.name!r}: this job drives car rigs ({', '.join(CAR_PRESETS)}); its "
                       f"preset is {preset!r}")
    _no_path(owner)
    return vehicle_setup.find(scene, owner)


def _no_path(owner: bpy.types.Object) -> None:
    """Raise RigError when `owner` follows a path (a shot goes through its keyed poses instead)."""
    if PATH_PROPERTY in owner.keys():
        raise RigError(f"vehicle rig {owner.name!r}: it follows path {owner[PATH_PROPERTY]!r}; remove the "
                       f"{PATH_PROPERTY!r} property to solve a shot through its keyed poses")


def _keyed_frames(owner: bpy.types.Object, prefix: str, rotation_path: str,
                  axes: tuple[int, ...]) -> tuple[set[float], set[float]]:
    """Frames keyed in the artist's action: (frames keying one of the location `axes`, rotation frames)."""
    channels = reference.original_channels(owner)
    location, rotation = set(), set()
    for fcurve in compat.fcurves(channels):
        frames = {round(float(k.co[0]), 6) for k in fcurve.keyframe_points}
        if fcurve.data_path == prefix + "location" and fcurve.array_index in axes:
            location |= frames
        elif fcurve.data_path == prefix + rotation_path:
            rotation |= frames
    return location, rotation


def keyed_steps(owner: bpy.types.Object, bone: str, grid, use_heading: bool,
                axes: tuple[int, ...]) -> list[tuple[float, int, bool, bool]]:
    """(frame, step, location keyed, rotation keyed) for every frame after the start frame (and within the
    frame range of `grid`, a read.FrameGrid) where the artist's action keys the chassis (object `owner`, or
    its pose bone `bone`)."""
    if bone:
        prefix, mode = reference.bone_prefix(bone), owner.pose.bones[bone].rotation_mode
    else:
        prefix, mode = "", owner.rotation_mode
    location, rotation = _keyed_frames(owner, prefix, reference.rotation_path(mode)[0], axes)
    if not use_heading:
        rotation = set()
    last = grid.frame_start + grid.steps / grid.substeps
    out = [(frame, int(round((frame - grid.frame_start) * grid.substeps)), frame in location, frame in rotation)
           for frame in sorted(location | rotation) if grid.frame_start < frame <= last]
    if not out:
        raise RigError(f"vehicle rig {owner.name!r}: no keyed chassis pose after the start frame "
                       f"{grid.frame_start}; key its location (and rotation) at the frames to hit")
    return out


def body_matrix(reading: RigReading, chassis_world: np.ndarray) -> np.ndarray:
    """The solver's chassis frame (4, 4) for a chassis part at `chassis_world` (reading.chassis_offset)."""
    return chassis_world @ np.linalg.inv(reading.chassis_offset)


def read_keys(scene: bpy.types.Scene, reading: RigReading, use_heading: bool) -> tuple[Key, ...]:
    """The car chassis' keyed poses after the start frame as shot keys, named 'frame N'."""
    rig = reading.rig
    keys = []
    for frame, step, located, rotated in keyed_steps(scene.objects[rig.owner], rig.chassis if rig.armature else "",
                                                     reading, use_heading, (0, 1)):
        body = body_matrix(reading, world(scene, rig.part(rig.chassis), frame, rigid=True))
        position = tuple(float(v) for v in body[:3, 3]) if located else None
        heading = math.atan2(body[1, 0], body[0, 0]) if rotated else None
        keys.append(Key(step, "", position, heading, name=f"frame {frame:g}"))
    return tuple(keys)


def read_body_keys(scene: bpy.types.Scene, reading: BodyReading,
                   use_heading: bool) -> tuple[tuple[Key, ...], tuple[Corridor, ...]]:
    """A body rig's keyed chassis poses after the start frame as shot keys named 'frame N' (the position of
    its origin, the centre of mass; the heading of its forward axis), and for a boat or hovercraft the
    corridors that hold its keyed x, y (see the module docstring)."""
    rig = reading.rig
    vertical = rig.kind == "helicopter"
    keys, corridors = [], []
    for frame, step, located, rotated in keyed_steps(scene.objects[rig.owner], rig.chassis if rig.armature else "",
                                                     reading, use_heading, (0, 1, 2) if vertical else (0, 1)):
        chassis = world(scene, rig.part(rig.chassis), frame, rigid=True)
        name = f"frame {frame:g}"
        ahead = chassis[:3, :3] @ np.array(FORWARD_AXES[rig.forward])
        heading = math.atan2(ahead[1], ahead[0]) if rotated else None
        position = tuple(float(v) for v in chassis[:3, 3]) if located else None
        radius = 0.0
        if position is not None and not vertical:
            x, y, z = position
            corridors.append(Corridor(name, step, step, (x, y, z - FREE_HEIGHT), (x, y, z + FREE_HEIGHT)))
            radius = FREE_HEIGHT
        keys.append(Key(step, "", position, heading, radius=radius, name=name))
    return tuple(keys), tuple(corridors)


def _shape_of(obj: bpy.types.Object) -> str:
    shape = str(obj.get(SHAPE_PROPERTY, "")).lower()
    if shape:
        return shape
    name = obj.name.lower()
    return "sphere" if re.search(r"sphere|ball", name) else "cylinder" if re.search(r"cyl|pole|post", name) else "box"


def read_obstacles(collection: bpy.types.Collection | None, clearance: float, frame: float) -> tuple[Obstacle, ...]:
    """Obstacles from the mesh objects of `collection`, each placed as the artist set it up at `frame`
    (reference.object_matrix; scale folded into the sizes)."""
    if collection is None:
        return ()
    out = []
    for obj in sorted(collection.all_objects, key=lambda o: o.name):
        if obj.type != "MESH":
            continue
        world_matrix = np.array(reference.object_matrix(obj, frame))
        scale = np.linalg.norm(world_matrix[:3, :3], axis=0)
        rotation = world_matrix[:3, :3] / scale
        corners = np.array([tuple(c) for c in obj.bound_box]) * scale
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        centre_local = 0.5 * (lo + hi)
        half = np.maximum(0.5 * (hi - lo), 1e-6)
        position = tuple(float(v) for v in world_matrix[:3, :3] @ (centre_local / scale) + world_matrix[:3, 3])
        quat = tuple(float(v) for v in matrix_to_quat(rotation))
        shape = _shape_of(obj)
        if shape == "sphere":
            kw = {"size": (float(half.max()),)}
        elif shape == "cylinder":
            kw = {"size": (float(max(half[0], half[1])), float(half[2]))}
        elif shape == "hull":
            verts = np.array([tuple(v.co) for v in obj.data.vertices]) * scale - centre_local
            kw = {"vertices": tuple(tuple(float(x) for x in v) for v in verts)}
        elif shape == "box":
            kw = {"size": tuple(float(h) for h in half)}
        else:
            raise RigError(f"obstacle {obj.name!r}: property {SHAPE_PROPERTY!r} must be sphere, box, cylinder or "
                           f"hull, got {shape!r}")
        out.append(Obstacle(obj.name, shape, position, quat, clearance=clearance, **kw))
    return tuple(out)


def body_spheres(scene: bpy.types.Scene, reading: RigReading) -> tuple[tuple[float, float, float, float], ...]:
    """Three spheres along the car (rear, centre, front) covering its wheel footprint, in the solver's body frame."""
    mounts = reading.wheel_mounts  # (4, 3) wheel centres in the chassis frame: rl rr fl fr
    rear, front = float(mounts[:2, 0].mean()), float(mounts[2:, 0].mean())
    half_width = 0.5 * float(abs(mounts[0, 1] - mounts[1, 1])) + float(reading.wheel_radii.max())
    radius = max(half_width, 0.25 * (front - rear))
    return tuple((x, 0.0, 0.0, radius) for x in (rear, 0.5 * (rear + front), front))


def body_rig_spheres(reading: BodyReading) -> tuple[tuple[float, float, float, float], ...]:
    """The spheres a body rig meets obstacles with, in its body frame: a helicopter one of its rotor radius
    at the centre of mass; a boat or hovercraft three along its hull or skirt (aft, centre, bow) covering it."""
    spec = reading.vehicle.spec
    if reading.rig.kind == "helicopter":
        return ((0.0, 0.0, 0.0, float(spec.rotor_radius)),)
    length, width = ((spec.hull_length, spec.hull_beam) if reading.rig.kind == "boat"
                     else (spec.skirt_length, spec.skirt_width))
    radius = max(0.5 * width, length / 6)
    return tuple((x, 0.0, 0.0, float(radius)) for x in (-length / 3, 0.0, length / 3))


def vehicle_shot(scene: bpy.types.Scene, owner: bpy.types.Object, vehicle: Vehicle, grid, keys: tuple[Key, ...],
                 settings: ShotSettings, spheres, corridors: tuple[Corridor, ...] = ()) -> Shot:
    """The Shot of a vehicle rig `owner`: `keys` (plus the last key at rest with settings.end_at_rest) on the
    time grid `grid` up to the last key, obstacles from settings.obstacles, the vehicle's own control bounds.
    A bad shot raises RigError."""
    if settings.end_at_rest:
        last = max(keys, key=lambda k: k.step)
        keys += (Key(last.step, "", velocity=(0.0, 0.0, 0.0), name=f"{last.name} at rest"),)
    collection = bpy.data.collections.get(settings.obstacles) if settings.obstacles else None
    if settings.obstacles and collection is None:
        raise RigError(f"Solve Shot: no collection named {settings.obstacles!r} for the obstacles")
    mech = Mechanism(name=f"vehicle rig {owner.name}", bodies=(), joints=(), gravity=tuple(scene.gravity),
                     vehicle=vehicle, source=f"vehicle rig {owner.name!r}")
    try:
        return Shot(mech, grid.dt, max(k.step for k in keys), keys=keys,
                    obstacles=read_obstacles(collection, settings.clearance, grid.frame_start),
                    corridors=corridors, body_spheres=spheres, costs=Costs(smoothness=settings.smoothness),
                    name=owner.name, source=f"scene {scene.name!r}")
    except ShotError as err:
        raise RigError(str(err)) from None


def _played_matrix(owner: bpy.types.Object, channels, frame: float) -> np.ndarray:
    """World matrix (4, 4, rigid) of unparented `owner` from the action it plays (`channels`) at `frame`."""
    def value(path: str, index: int) -> float:
        fcurve = compat.find_fcurve(channels, path, index)
        return float(fcurve.evaluate(frame)) if fcurve is not None else reference.current_value(owner, path, index)

    path, n = reference.rotation_path(owner.rotation_mode)
    matrix = np.eye(4)
    matrix[:3, :3] = np.array(reference.rotation_from_values(owner.rotation_mode, [value(path, i) for i in range(n)]))
    matrix[:3, 3] = [value("location", i) for i in range(3)]
    return matrix


def _played_trajectory(scene: bpy.types.Scene, reading: RigReading) -> Trajectory | None:
    """The rig's current Symplex bake as a Trajectory of the solver's chassis (a warm start), else None
    (also for bone rigs and parented chassis, whose baked poses are not read back)."""
    rig = reading.rig
    owner = scene.objects[rig.owner]
    baked = reference.baked_channels(owner)
    if baked is None or rig.armature or owner.parent is not None:
        return None
    frames = reading.frame_start + np.arange(reading.steps + 1) / reading.substeps
    poses = []
    for frame in frames:
        body = body_matrix(reading, _played_matrix(owner, baked, frame))
        poses.append(np.concatenate([body[:3, 3] - (0.0, 0.0, reading.ground), matrix_to_quat(body[:3, :3])]))
    n = len(frames)
    return Trajectory(frames - frames[0], ["chassis"], np.array(poses)[:, None, :], np.zeros((n, 0)), [],
                      np.zeros(n), np.zeros(n), np.zeros(n - 1, dtype=np.int64), method="vehicle")


def _summary(label: str, result: ShotResult, errors: dict[str, float], bake: str, path: bpy.types.Object) -> str:
    listed = ", ".join(f"{k} {v:.2g}" for k, v in errors.items())
    return (f"Solved shot {label!r} in {result.iterations} iterations ({result.wall_time:.1f} s); "
            f"key errors: {listed}; {bake}; path {path.name!r}")


def write_then_bake(owner: bpy.types.Object, props: list[str], write: Callable[[], None], bake: Callable[[], object]):
    """write() the solved controls on `owner`, then bake(); if either fails, `owner`'s control properties
    `props` and their F-curves are put back (the bakes change nothing when they fail) and the error raised."""
    undo = _ControlSnapshot(owner, props)
    try:
        write()
        return bake()
    except BaseException:
        undo.restore()
        raise


@dataclass
class ShotJob(SolveJob):
    """Solve Shot for one car rig: construct (reads bpy), run() (no bpy), finish(scene) (writes)."""

    scene: bpy.types.Scene
    owner_name: str
    settings: ShotSettings = field(default_factory=ShotSettings)

    def __post_init__(self):
        scene = self.scene
        owner = self._owner(scene)
        self.rig, self.preset = _rig_of(scene, owner)
        self.reading = read_rig(scene, self.rig, self.preset)
        keys = read_keys(scene, self.reading, self.settings.use_heading)
        self.shot = vehicle_shot(scene, owner, self.reading.vehicle, self.reading, keys, self.settings,
                                 body_spheres(scene, self.reading))
        self.warm_start = _played_trajectory(scene, self.reading)
        self._reset()

    @property
    def keys(self) -> tuple[Key, ...]:
        return self.shot.keys

    def _solve(self, progress) -> ShotResult:
        return solve_shot(self.shot, self.warm_start, progress, max_iter=self.settings.max_iterations)

    def finish(self, scene: bpy.types.Scene) -> str:
        """Write controls, bake and draw the path; returns the summary. Raises RigError (scene unchanged)
        when the solve failed or was cancelled."""
        result = self._solved(self.owner_name)
        owner = scene.objects[self.rig.owner]
        bake = write_then_bake(owner, _control_props(), lambda: write_controls(owner, self.reading, result),
                               lambda: bake_vehicle(scene, self.rig, self.preset, self.reading.substeps))
        path = draw_path(scene, self.rig.owner, result, self.reading.ground)
        return _summary(self.owner_name, result, result.key_errors, bake.summary(), path)


def _body_rig_of(scene: bpy.types.Scene, owner: bpy.types.Object) -> tuple[BodyRig, str]:
    """The helicopter, boat or hovercraft rig `owner` holds and its preset (vehicle_setup.find)."""
    preset = owner.get(PRESET_PROPERTY, "")
    if preset not in BODY_PRESETS or vehicle_type(preset) not in SHOT_BODY_TYPES:
        shot_presets = [p for p in BODY_PRESETS if vehicle_type(p) in SHOT_BODY_TYPES]
        raise RigError(f"vehicle rig {owner.name!r}: Solve Shot drives car rigs ({', '.join(CAR_PRESETS)}) and "
                       f"helicopter, boat and hovercraft rigs ({', '.join(shot_presets)}); its preset is {preset!r}")
    _no_path(owner)
    return vehicle_setup.find(scene, owner)


@dataclass
class BodyShotJob(SolveJob):
    """Solve Shot for one helicopter, boat or hovercraft rig: construct (reads bpy), run() (no bpy),
    finish(scene) (writes the controls, bakes with vehicle_body_rig.bake_body_rig, draws the path)."""

    scene: bpy.types.Scene
    owner_name: str
    settings: ShotSettings = field(default_factory=ShotSettings)

    def __post_init__(self):
        scene = self.scene
        owner = self._owner(scene)
        self.rig, self.preset = _body_rig_of(scene, owner)
        self.reading = read_body_rig(scene, self.rig, self.preset)
        keys, self.corridors = read_body_keys(scene, self.reading, self.settings.use_heading)
        self.shot = vehicle_shot(scene, owner, self.reading.vehicle, self.reading, keys, self.settings,
                                 body_rig_spheres(self.reading), self.corridors)
        self._reset()

    @property
    def keys(self) -> tuple[Key, ...]:
        return self.shot.keys

    @property
    def control_names(self) -> tuple[str, ...]:
        return CONTROL_NAMES[self.rig.kind]

    def _solve(self, progress) -> ShotResult:
        result = solve_shot(self.shot, None, progress, max_iter=self.settings.max_iterations)
        if result.status in ("solved", "cancelled") or not self.corridors:
            return result
        # The solver's diagnosis makes the keys soft but keeps corridors hard, so it cannot name a horizontal key
        # out of reach: diagnose the same keys held at their keyed height (out of reach horizontally is out of
        # reach at any height; met there, the free-height shot is feasible and the solver failed on it).
        held = {c.name for c in self.corridors}
        keys = tuple(replace(k, radius=0.0) if k.name in held and k.position is not None else k
                     for k in self.shot.keys)
        check = solve_shot(replace(self.shot, keys=keys, corridors=()), None, progress,
                           max_iter=self.settings.max_iterations)
        found = ("the keys can be met at their keyed heights, so this shot is feasible: the solver failed on it"
                 if check.status == "solved" else "\n".join(check.report.splitlines()[:3]))
        return replace(result, report=f"{result.report}\n  diagnosis with the keys at their keyed heights: {found}")

    def key_errors(self, result: ShotResult) -> dict[str, float]:
        """The solver's key errors, a boat's or hovercraft's horizontal keys measured on the replayed motion (m)."""
        errors = dict(result.key_errors)
        body = result.trajectory.poses[:, 0, :2]
        for c in self.corridors:
            errors[c.name] = max(errors.get(c.name, 0.0), float(np.linalg.norm(body[c.first] - c.lower[:2])))
        return errors

    def finish(self, scene: bpy.types.Scene) -> str:
        """Write controls, bake and draw the path; returns the summary. Raises RigError (scene unchanged)
        when the solve failed or was cancelled."""
        result = self._solved(self.owner_name)
        owner = scene.objects[self.rig.owner]
        bake = write_then_bake(owner, list(self.control_names),
                               lambda: write_body_controls(owner, self.reading, result),
                               lambda: bake_body_rig(scene, self.rig, self.preset, self.reading.substeps))
        path = draw_path(scene, self.rig.owner, result)
        return _summary(self.owner_name, result, self.key_errors(result), bake.summary(), path)


class _ControlSnapshot:
    """The control custom properties `props` and their F-curves in the rig's own action, to put back on failure."""

    def __init__(self, owner: bpy.types.Object, props: list[str]):
        self.owner = owner
        self.names = props
        self.props = {p: owner[p] for p in props if p in owner.keys()}
        self.curves = {}
        channels = reference.original_channels(owner)
        for prop in props:
            fcurve = compat.find_fcurve(channels, f'["{prop}"]', 0)
            if fcurve is not None:
                n = len(fcurve.keyframe_points)
                co = np.empty(2 * n, dtype=np.float32)
                fcurve.keyframe_points.foreach_get("co", co)
                self.curves[prop] = co

    def restore(self) -> None:
        owner = self.owner
        channels = reference.original_channels(owner)
        for prop in self.names:
            _remove_control(owner, channels, prop)
        for prop, value in self.props.items():
            owner[prop] = value
        for prop, co in self.curves.items():
            _key_property(owner, channels, prop, co[0::2], co[1::2])


def _control_props() -> list[str]:
    return [prop for options in CONTROL_PROPERTIES.values() for prop, _ in options]


def _remove_control(owner: bpy.types.Object, channels, prop: str) -> None:
    fcurve = compat.find_fcurve(channels, f'["{prop}"]', 0)
    if fcurve is not None:
        compat._fcurve_collection(channels, create=False).remove(fcurve)  # compat has no public remove yet
    if prop in owner.keys():
        del owner[prop]


def _key_property(owner: bpy.types.Object, channels, prop: str, frames: np.ndarray, values: np.ndarray) -> None:
    """Key custom property `prop` of `owner` at `frames` (LINEAR keys, written in bulk)."""
    owner[prop] = float(values[0])
    fcurve = compat.new_fcurve(channels, f'["{prop}"]', 0, "Symplex controls")
    points = fcurve.keyframe_points
    points.add(len(frames))
    co = np.empty(2 * len(frames), dtype=np.float32)
    co[0::2], co[1::2] = frames, values
    for name in ("co", "handle_left", "handle_right"):
        points.foreach_set(name, co)
    points.foreach_set("interpolation", np.full(len(frames), LINEAR, dtype=np.int32))
    fcurve.update()


def _own_channels(owner: bpy.types.Object):
    channels = reference.original_channels(owner)
    if channels is None:
        raise RigError(f"vehicle rig {owner.name!r}: it has no action of its own to key the controls in")
    return channels


def write_controls(owner: bpy.types.Object, reading: RigReading, result: ShotResult) -> None:
    """Replace the rig's control properties by the solved drive torque and steer, keyed in its own action."""
    channels = _own_channels(owner)
    for prop in _control_props():
        _remove_control(owner, channels, prop)
    for prop in SOLVED_CONTROLS:
        times = np.asarray(result.control_times[prop], dtype=float)
        values = np.asarray(result.controls[prop], dtype=float)
        if prop == "drive_torque":  # after the shot's last step no more drive: the car stays where it ended
            times, values = np.append(times, times[-1] + reading.dt), np.append(values, 0.0)
        _key_property(owner, channels, prop, reading.frame_start + times * reading.fps, values)


def write_body_controls(owner: bpy.types.Object, reading: BodyReading, result: ShotResult) -> None:
    """Replace a body rig's control properties (spec.CONTROL_NAMES of its type, the names its bake reads) by
    the solved controls, keyed LINEAR in its own action at the times the simulator samples them. After the
    shot's last step a helicopter holds its last controls; a boat's or hovercraft's thrusts go to zero one
    step later (as a car's drive torque), so it does not keep pushing where it stopped."""
    channels = _own_channels(owner)
    kind = reading.rig.kind
    for prop in CONTROL_NAMES[kind]:
        _remove_control(owner, channels, prop)
    for prop in CONTROL_NAMES[kind]:
        times = np.asarray(result.control_times[prop], dtype=float)
        values = np.asarray(result.controls[prop], dtype=float)
        if kind != "helicopter":
            times, values = np.append(times, times[-1] + reading.dt), np.append(values, 0.0)
        _key_property(owner, channels, prop, reading.frame_start + times * reading.fps, values)


def draw_path(scene: bpy.types.Scene, owner: str, result: ShotResult, lift: float = 0.0) -> bpy.types.Object:
    """A poly curve object '<rig> shot path' through the solved body positions raised by `lift` (a car's
    ground height), replacing an older one."""
    name = owner + PATH_SUFFIX
    old = bpy.data.objects.get(name)
    if old is not None:
        data = old.data
        bpy.data.objects.remove(old)
        if data is not None and data.users == 0:
            bpy.data.curves.remove(data)
    points = np.array(result.trajectory.poses[:, 0, :3])
    points[:, 2] += lift
    curve = bpy.data.curves.new(name, "CURVE")
    curve.dimensions = "3D"
    spline = curve.splines.new("POLY")
    spline.points.add(len(points) - 1)
    co = np.concatenate([points, np.ones((len(points), 1))], axis=1).astype(np.float32)
    spline.points.foreach_set("co", co.ravel())
    obj = bpy.data.objects.new(name, curve)
    scene.collection.objects.link(obj)
    return obj


TORQUE_PREFIX = "symplex_torque_"  # custom property per driven joint on a mechanism shot's effector


def read_effector_keys(scene: bpy.types.Scene, read: SceneMechanism, effector: str) -> tuple[MechanismKey, ...]:
    """The effector object's location keys after the start frame as body-position keys named 'frame N';
    the axes keyed at a frame are the key's components."""
    if not any(t.object == effector and not t.bone for t in read.targets):
        raise RigError(f"setup {read.setup!r}: object {effector!r} is not one of its bodies; pick a body object "
                       f"as the effector")
    obj = scene.objects[effector]
    axes: dict[float, str] = {}
    for fcurve in compat.fcurves(reference.original_channels(obj)):
        if fcurve.data_path == "location":
            for k in fcurve.keyframe_points:
                frame = round(float(k.co[0]), 6)
                axes[frame] = "".join(sorted(set(axes.get(frame, "")) | {"xyz"[fcurve.array_index]}))
    last = read.frame_start + read.steps / read.substeps
    keys = []
    for frame in sorted(axes):
        if read.frame_start < frame <= last:
            step = int(round((frame - read.frame_start) * read.substeps))
            position = tuple(float(v) for v in reference.object_matrix(obj, frame).translation)
            keys.append(MechanismKey(f"frame {frame:g}", step, body=effector, position=position,
                                     components=axes[frame], tolerance=1e-4))
    if not keys:
        raise RigError(f"setup {read.setup!r}: effector {effector!r} has no location key after the start frame "
                       f"{read.frame_start}; key where it should be")
    return tuple(keys)


@dataclass
class MechanismShotJob(SolveJob):
    """Solve Shot for a Symplex setup with a keyed effector object: construct (reads bpy), run(), finish()."""

    scene: bpy.types.Scene
    setup_name: str
    effector: str
    settings: ShotSettings = field(default_factory=ShotSettings)

    def __post_init__(self):
        self.read = read_setup(self.scene, find_setup(self.scene, self.setup_name))
        keys = read_effector_keys(self.scene, self.read, self.effector)
        mech = self.read.mechanism
        bound = float(self.settings.max_force)
        controls = tuple(Control(j.name, -bound, bound) for j in mech.joints
                         if j.ndof == 1 and j.motor is None and j.prescribed is None)
        self.shot = MechanismShot(f"{self.setup_name} shot", mech, self.read.dt, max(k.frame for k in keys), controls,
                                  keys, rest_at_end=self.settings.end_at_rest, speed=self.settings.joint_speed,
                                  source=f"setup {self.setup_name!r}")
        self.owner_name = self.effector
        self._reset()

    @property
    def keys(self) -> tuple[MechanismKey, ...]:
        return self.shot.keys

    def _solve(self, progress) -> ShotResult:
        return solve_shot(self.shot, None, progress, max_iter=self.settings.max_iterations)

    def finish(self, scene: bpy.types.Scene) -> str:
        """Bake the motion and key the torques; raises RigError (scene unchanged) for a failed or cancelled solve."""
        result = self._solved(self.setup_name)
        read = self.read
        options = BakeOptions(read.setup, read.frame_start, read.fps, read.substeps)
        keys = write_trajectory(result.trajectory, read.targets, options, read.root or None)
        effector = scene.objects[self.effector]
        baked = reference.baked_channels(effector)
        created = list(baked.action.get(reference.PROPERTIES, []))
        for joint, times in result.control_times.items():
            prop = TORQUE_PREFIX + joint
            _key_property(effector, baked, prop, read.frame_start + np.asarray(times) * read.fps,
                          np.asarray(result.controls[joint]))
            created.append(prop)
        baked.action[reference.PROPERTIES] = created
        errors = ", ".join(f"{k} {v:.2g}" for k, v in result.key_errors.items())
        return (f"Solved shot {self.setup_name!r} in {result.iterations} iterations ({result.wall_time:.1f} s); key "
                f"errors: {errors}; replay error {result.replay_error:.2g} m; baked {keys} keys")


def shot_job(scene: bpy.types.Scene, name: str, settings: ShotSettings,
             setup: str = "") -> ShotJob | BodyShotJob | MechanismShotJob:
    """The job for object `name`: a vehicle rig's (it carries the vehicle preset property: a car, else a
    helicopter, boat or hovercraft), else the effector of Symplex setup `setup`."""
    obj = scene.objects.get(name)
    if obj is None:
        raise RigError(f"no object {name!r} in scene {scene.name!r}")
    if PRESET_PROPERTY in obj.keys():
        if obj[PRESET_PROPERTY] in BODY_PRESETS:
            return BodyShotJob(scene, name, settings)
        return ShotJob(scene, name, settings)
    if not setup:
        raise RigError(f"object {name!r} is neither a vehicle rig nor in a Symplex setup; add a setup or a vehicle rig")
    return MechanismShotJob(scene, setup, name, settings)

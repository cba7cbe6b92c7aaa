"""Optimal-control shots of car rigs in the scene: keyed chassis poses in, solved controls and motion out.

`ShotJob(scene, owner)` reads everything in the main thread: the car rig (vehicle_rig.read_rig), the
chassis' keyed poses as shot keys (location keys -> position, rotation keys -> heading; the frames where
the artist's own action keys them, after the start frame), obstacles from a collection (sphere, box,
cylinder or convex hull from each object's bounds or mesh), and a warm start from the rig's current
Symplex bake. `run()` solves (solver/shots, no bpy: safe in a worker thread; `cancel()` stops it).
`finish(scene)` writes, all or nothing: the solved drive torque and steer become keyed custom properties
on the rig (replacing its throttle/brake/steer keys, so the artist can edit them and re-bake with Bake
Vehicle), then the existing vehicle bake (vehicle_bake.bake_vehicle) simulates and keys chassis and wheels,
and the solved path is drawn as a curve object. A cancelled or failed solve changes nothing.

`MechanismShotJob(scene, setup, effector)` does the same for a Symplex setup (tree method): the effector
object's location keys (after the start frame; the axes keyed at a frame make a partial key) become
body-position keys, every single-dof joint without a motor is driven within +-max_force, joint limits
come from the setup; the solved motion is baked with bake.write_trajectory and the torques are keyed as
custom properties `symplex_torque_<joint>` in the effector's bake (Free Bake removes them).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..solver.lie import matrix_to_quat
from ..solver.model import Mechanism
from ..solver.shots.mechanism_shots import Control, MechanismKey, MechanismShot, solve_mechanism_shot
from ..solver.shots.spec import Costs, Key, Obstacle, Shot, ShotError, ShotResult, solve_shot
from ..solver.trajectory import Trajectory
from . import compat, reference
from .bake import LINEAR, BakeOptions, write_trajectory
from .read import SceneMechanism, find_setup, read_setup
from .vehicle_bake import bake_vehicle
from .vehicle_parts import RigError
from .vehicle_rig import (CAR_PRESETS, CONTROL_PROPERTIES, FORWARD_PROPERTY, PATH_PROPERTY, PRESET_PROPERTY,
                          RigReading, VehicleRig, find_rig, read_rig)

SHAPE_PROPERTY = "symplex_shape"  # on an obstacle object: sphere, box, cylinder or hull (default: by name, else box)
CHASSIS_BONE_PROPERTY = "symplex_chassis_bone"
PATH_SUFFIX = " shot path"
SOLVED_CONTROLS = ("drive_torque", "steer")


@dataclass
class ShotSettings:
    """What the operator passes in (ui/shot_properties.py mirrors it)."""

    obstacles: str = ""  # collection name
    clearance: float = 0.2
    use_heading: bool = True
    end_at_rest: bool = True
    max_iterations: int = 300
    smoothness: float = 0.01  # weight of spec.Costs.smoothness (steer and drive torque rates)
    max_force: float = 1000.0  # mechanism shots: bound on every driven joint's torque (N m) or force (N)


def _rig_of(scene: bpy.types.Scene, owner: bpy.types.Object) -> tuple[VehicleRig, str]:
    preset = owner.get(PRESET_PROPERTY, "sedan")
    if preset not in CAR_PRESETS:
        raise RigError(f"vehicle rig {owner.name!r}: Solve Shot drives car rigs ({', '.join(CAR_PRESETS)}); its "
                       f"preset is {preset!r}")
    if PATH_PROPERTY in owner.keys():
        raise RigError(f"vehicle rig {owner.name!r}: it follows path {owner[PATH_PROPERTY]!r}; remove the "
                       f"{PATH_PROPERTY!r} property to solve a shot through its keyed poses")
    rig = find_rig(scene, owner, owner.get(FORWARD_PROPERTY, "+X"), bone=owner.get(CHASSIS_BONE_PROPERTY, ""))
    return rig, preset


def _keyed_frames(owner: bpy.types.Object, prefix: str, rotation_path: str) -> tuple[set[float], set[float]]:
    """Frames keyed in the artist's action: (location frames, rotation frames)."""
    channels = reference.original_channels(owner)
    location, rotation = set(), set()
    for fcurve in compat.fcurves(channels):
        frames = {round(float(k.co[0]), 6) for k in fcurve.keyframe_points}
        if fcurve.data_path == prefix + "location" and fcurve.array_index < 2:
            location |= frames
        elif fcurve.data_path == prefix + rotation_path:
            rotation |= frames
    return location, rotation


def body_matrix(reading: RigReading, chassis_world: np.ndarray) -> np.ndarray:
    """The solver's chassis frame (4, 4) for a chassis part at `chassis_world` (reading.chassis_offset)."""
    return chassis_world @ np.linalg.inv(reading.chassis_offset)


def read_keys(scene: bpy.types.Scene, reading: RigReading, use_heading: bool) -> tuple[Key, ...]:
    """The chassis' keyed poses after the start frame as shot keys, named 'frame N'."""
    from .vehicle_parts import world
    rig = reading.rig
    owner = scene.objects[rig.owner]
    if rig.armature:
        pose_bone = owner.pose.bones[rig.chassis]
        prefix, mode = reference.bone_prefix(rig.chassis), pose_bone.rotation_mode
    else:
        prefix, mode = "", owner.rotation_mode
    location, rotation = _keyed_frames(owner, prefix, reference.rotation_path(mode)[0])
    if not use_heading:
        rotation = set()
    keys = []
    last = reading.frame_start + reading.steps / reading.substeps
    for frame in sorted(location | rotation):
        if frame <= reading.frame_start or frame > last:
            continue
        step = int(round((frame - reading.frame_start) * reading.substeps))
        body = body_matrix(reading, world(scene, rig.part(rig.chassis), frame, rigid=True))
        position = tuple(float(v) for v in body[:3, 3]) if frame in location else None
        heading = math.atan2(body[1, 0], body[0, 0]) if frame in rotation else None
        keys.append(Key(step, "", position, heading, name=f"frame {frame:g}"))
    if not keys:
        raise RigError(f"vehicle rig {rig.owner!r}: no keyed chassis pose after the start frame "
                       f"{reading.frame_start}; key its location (and rotation) at the frames to hit")
    return tuple(keys)


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
        world = np.array(reference.object_matrix(obj, frame))
        scale = np.linalg.norm(world[:3, :3], axis=0)
        rotation = world[:3, :3] / scale
        corners = np.array([tuple(c) for c in obj.bound_box]) * scale
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        centre_local = 0.5 * (lo + hi)
        half = np.maximum(0.5 * (hi - lo), 1e-6)
        position = tuple(float(v) for v in world[:3, :3] @ (centre_local / scale) + world[:3, 3])
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


@dataclass
class ShotJob:
    """Solve Shot for one car rig: construct (reads bpy), run() (no bpy), finish(scene) (writes)."""

    scene: bpy.types.Scene
    owner_name: str
    settings: ShotSettings = field(default_factory=ShotSettings)

    def __post_init__(self):
        scene = self.scene
        owner = scene.objects.get(self.owner_name)
        if owner is None:
            raise RigError(f"no rig object {self.owner_name!r} in scene {scene.name!r}")
        self.rig, self.preset = _rig_of(scene, owner)
        self.reading = read_rig(scene, self.rig, self.preset)
        keys = read_keys(scene, self.reading, self.settings.use_heading)
        if self.settings.end_at_rest:
            last = max(keys, key=lambda k: k.step)
            keys += (Key(last.step, "", velocity=(0.0, 0.0, 0.0), name=f"{last.name} at rest"),)
        collection = bpy.data.collections.get(self.settings.obstacles) if self.settings.obstacles else None
        if self.settings.obstacles and collection is None:
            raise RigError(f"Solve Shot: no collection named {self.settings.obstacles!r} for the obstacles")
        mech = Mechanism(name=f"vehicle rig {owner.name}", bodies=(), joints=(), gravity=tuple(scene.gravity),
                         vehicle=self.reading.vehicle, source=f"vehicle rig {owner.name!r}")
        last_step = max(k.step for k in keys)
        try:
            self.shot = Shot(mech, self.reading.dt, last_step, keys=keys,
                             obstacles=read_obstacles(collection, self.settings.clearance, self.reading.frame_start),
                             body_spheres=body_spheres(scene, self.reading),
                             costs=Costs(smoothness=self.settings.smoothness), name=owner.name,
                             source=f"scene {scene.name!r}")
        except ShotError as err:
            raise RigError(str(err)) from None
        self.warm_start = _played_trajectory(scene, self.reading)
        self.iteration = 0
        self.info: dict = {}
        self.cancelled = False
        self.result: ShotResult | None = None
        self.error: BaseException | None = None

    @property
    def keys(self) -> tuple[Key, ...]:
        return self.shot.keys

    def cancel(self) -> None:
        self.cancelled = True

    def _progress(self, iteration: int, info: dict) -> bool:
        self.iteration, self.info = iteration, info
        return not self.cancelled

    def run(self) -> ShotResult:
        """Solve (no bpy access: may run in a worker thread). Keeps the result or the exception."""
        try:
            self.result = solve_shot(self.shot, self.warm_start, self._progress,
                                     max_iter=self.settings.max_iterations)
        except BaseException as err:  # handed to the main thread by finish()
            self.error = err
            raise
        return self.result

    def finish(self, scene: bpy.types.Scene) -> str:
        """Write controls, bake and draw the path; returns the summary. Raises RigError (scene unchanged)
        when the solve failed or was cancelled."""
        if self.error is not None:
            raise RigError(f"Solve Shot {self.owner_name!r}: {self.error}") from self.error
        result = self.result
        if result is None or result.status != "solved":
            status = "cancelled" if self.cancelled or (result and result.status == "cancelled") else "failed"
            report = result.report if result is not None else "no result"
            raise RigError(f"Solve Shot {self.owner_name!r} {status}; nothing was changed. {report}")
        owner = scene.objects[self.rig.owner]
        undo = _ControlSnapshot(owner)
        try:
            write_controls(owner, self.reading, result)
            bake = bake_vehicle(scene, self.rig, self.preset, self.reading.substeps)
        except BaseException:
            undo.restore()
            raise
        path = draw_path(scene, self.rig.owner, self.reading, result)
        errors = ", ".join(f"{k} {v:.2g}" for k, v in result.key_errors.items())
        return (f"Solved shot {self.owner_name!r} in {result.iterations} iterations ({result.wall_time:.1f} s); "
                f"key errors: {errors}; {bake.summary()}; path {path.name!r}")


class _ControlSnapshot:
    """The control custom properties and their F-curves in the rig's own action, to put back on failure."""

    def __init__(self, owner: bpy.types.Object):
        self.owner = owner
        self.props = {p: owner[p] for p in _control_props() if p in owner.keys()}
        self.curves = {}
        channels = reference.original_channels(owner)
        for prop in _control_props():
            fcurve = compat.find_fcurve(channels, f'["{prop}"]', 0)
            if fcurve is not None:
                n = len(fcurve.keyframe_points)
                co = np.empty(2 * n, dtype=np.float32)
                fcurve.keyframe_points.foreach_get("co", co)
                self.curves[prop] = co

    def restore(self) -> None:
        owner = self.owner
        channels = reference.original_channels(owner)
        for prop in _control_props():
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


def write_controls(owner: bpy.types.Object, reading: RigReading, result: ShotResult) -> None:
    """Replace the rig's control properties by the solved drive torque and steer, keyed in its own action."""
    channels = reference.original_channels(owner)
    if channels is None:
        raise RigError(f"vehicle rig {owner.name!r}: it has no action of its own to key the controls in")
    for prop in _control_props():
        _remove_control(owner, channels, prop)
    for prop in SOLVED_CONTROLS:
        times = np.asarray(result.control_times[prop], dtype=float)
        values = np.asarray(result.controls[prop], dtype=float)
        if prop == "drive_torque":  # after the shot's last step no more drive: the car stays where it ended
            times, values = np.append(times, times[-1] + reading.dt), np.append(values, 0.0)
        _key_property(owner, channels, prop, reading.frame_start + times * reading.fps, values)


def draw_path(scene: bpy.types.Scene, owner: str, reading: RigReading, result: ShotResult) -> bpy.types.Object:
    """A poly curve object '<rig> shot path' through the solved chassis positions (replaces an older one)."""
    name = owner + PATH_SUFFIX
    old = bpy.data.objects.get(name)
    if old is not None:
        data = old.data
        bpy.data.objects.remove(old)
        if data is not None and data.users == 0:
            bpy.data.curves.remove(data)
    points = np.array(result.trajectory.poses[:, 0, :3])
    points[:, 2] += reading.ground
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
class MechanismShotJob:
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
                                  keys, rest_at_end=self.settings.end_at_rest, source=f"setup {self.setup_name!r}")
        self.owner_name = self.effector
        self.iteration, self.info, self.cancelled = 0, {}, False
        self.result: ShotResult | None = None
        self.error: BaseException | None = None

    @property
    def keys(self) -> tuple[MechanismKey, ...]:
        return self.shot.keys

    def cancel(self) -> None:
        self.cancelled = True

    def _progress(self, iteration: int, info: dict) -> bool:
        self.iteration, self.info = iteration, info
        return not self.cancelled

    def run(self) -> ShotResult:
        """Solve (no bpy access). Keeps the result or the exception."""
        try:
            self.result = solve_mechanism_shot(self.shot, None, self._progress, max_iter=self.settings.max_iterations)
        except BaseException as err:
            self.error = err
            raise
        return self.result

    def finish(self, scene: bpy.types.Scene) -> str:
        """Bake the motion and key the torques; raises RigError (scene unchanged) for a failed or cancelled solve."""
        if self.error is not None:
            raise RigError(f"Solve Shot {self.setup_name!r}: {self.error}") from self.error
        result = self.result
        if result is None or result.status != "solved":
            status = "cancelled" if self.cancelled or (result and result.status == "cancelled") else "failed"
            raise RigError(f"Solve Shot {self.setup_name!r} {status}; nothing was changed. "
                           f"{result.report if result is not None else ''}")
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


def shot_job(scene: bpy.types.Scene, name: str, settings: ShotSettings, setup: str = "") -> ShotJob | MechanismShotJob:
    """The job for object `name`: a car rig's (it carries the vehicle preset property), else the effector of
    Symplex setup `setup`."""
    obj = scene.objects.get(name)
    if obj is None:
        raise RigError(f"no object {name!r} in scene {scene.name!r}")
    if PRESET_PROPERTY in obj.keys():
        return ShotJob(scene, name, settings)
    if not setup:
        raise RigError(f"object {name!r} is neither a car rig nor in a Symplex setup; add a setup or a car rig")
    return MechanismShotJob(scene, setup, name, settings)

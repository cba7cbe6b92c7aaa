"""Rigs of the one-body vehicles: helicopter, boat, hovercraft, tank and snakeboard, with their parts; read and bake.

A rig is a chassis object (or a chassis bone of an armature) whose origin is the vehicle's centre of mass,
its forward axis chosen by the artist (local +Z up), plus spinning parts found by name below it (or among
the armature's bones): a helicopter's main and tail rotor ('Main rotor', 'Tail rotor'), a boat's
propellers or a hovercraft's fans ('Prop.L', 'fan_right'; one without a side turns with both thrusts'
mean), a tank's road wheels, sprockets and idlers of each track ('Road wheel 3.L', 'sprocket_right'), a
snakeboard's wheel sets and rider ('Front wheels', 'Rear truck', 'Rider': the solver's front_wheels,
rear_wheels and rotor bodies). Part names are read after the chassis' own name (vehicle_parts.own_name).
Controls are custom properties of the chassis (or armature), keyed or set, in the vehicle's units
(spec.CONTROL_NAMES: collective N, tail N, blade_pitch rad, ...; thrust_left N; force_left N), plus
`initial_speed` (m/s forward; a chassis keyed before the start frame instead hands over the body twist its
keys arrive with, unless the owner's Start From Animation is off: start_motion.chassis_twist); mass
properties come from the preset named by `symplex_vehicle_preset`.
A helicopter whose chassis names a curve in `symplex_path` flies it (solver/vehicles/pilot.py) instead of its
keyed controls: the driver's speed profile from the car's properties (`path_speed` caps it; `lateral_accel`,
`accel_limit`, `brake_limit`, defaults 4, 2.5, 5 m/s^2) and `bank_limit` (rad, default 30 degrees), all
keyable, climbing and descending from its start height as the curve does. A boat or hovercraft with a path follows it by differential thrust
(solver/vehicles/helmsman.py) with the same properties but no bank_limit (refused: nothing it controls rolls
it). On a path the rotors, propellers or fans spin with the controls the pilot or helmsman chose, not the keyed
ones. A tank or snakeboard refuses a path.
A boat's water surface and a hovercraft's ground are the world plane z = 0, as in the solver; a tank
drives on the plane under its chassis at the start (its chassis keeps its height).

The solver moves the chassis; each part stays at its place on it and turns about its own centre:
- helicopter rotors at the governed speed while the collective is above zero (the collective changes
  blade pitch, not speed; at zero collective the rotor is taken as stopped): main rotor at a 218 m/s tip
  speed about the body's up axis (Bo 105: 424 rpm on a 4.92 m radius [from memory]), the tail rotor
  2220 / 424 times faster about the body's y axis (Bo 105 tail rotor 2220 rpm [from memory]);
- propellers and fans at fixed pitch, whose thrust goes as the square of their speed (T = C_T rho A
  (Omega R)^2): Omega = sign(T) Omega_max sqrt(|T| / max_thrust), about the body's x axis (Omega_max:
  boat propeller 2750 rpm, a 90 hp outboard at 5500 rpm through a 2:1 gearbox [estimate]; hovercraft fan
  2800 rpm [estimate]);
- tank wheels roll with their track: spin = the track's travel (solver) / the wheel's own radius, about
  the body's y axis, so a wheel in contact with the track rolls without slipping on it.
- a snakeboard's wheel sets and rider follow the solver's bodies of the same name rigidly (turned by the
  keyed foot angle and twist).
Spin angles are the trapezoidal integrals of the rates over the solver's time grid, keyed every frame.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import bpy
import numpy as np

from ..solver.integrator import simulate
from ..solver.model import Curve, Mechanism, Vehicle
from ..solver.trajectory import Trajectory
from ..solver.vehicles.controls import signal
from ..solver.vehicles.driver import Limits
from ..solver.vehicles.helmsman import CRAFT, simulate_steering
from ..solver.vehicles.pilot import DEFAULT_BANK_LIMIT, Pilot, simulate_flying
from ..solver.vehicles.snakeboard import BODIES as SNAKEBOARD_BODIES
from ..solver.mechfile.read import vehicle_presets
from ..solver.vehicles.spec import CONTROL_NAMES, VEHICLE_TYPES
from . import compat, reference
from .bake import BakeOptions, write_trajectory
from .read import FrameGrid
from .rotations import matrix_to_quat, pose_matrices
from .start_motion import chassis_twist
from .vehicle_parts import RigError, RigParts, bake_target, candidates, own_name, radius, stored_picks, world
from .vehicle_bake import setup_name
from .vehicle_rig import (FORWARD_AXES, FORWARD_PROPERTY, INITIAL_SPEED, PATH_PROPERTY, PRESET_PROPERTY, box_mesh,
                          chassis_bone, driver_limits, free_name, read_path, read_path_speed, sample_curve, wheel_mesh)

BANK_LIMIT = "bank_limit"  # chassis custom property (rad, keyable): a helicopter's largest bank on a path

BODY_TYPES = ("helicopter", "boat", "hovercraft", "tank", "snakeboard")
BODY_PRESETS = tuple(name for name, spec in vehicle_presets().items()
                     if type(spec) in {VEHICLE_TYPES[t] for t in BODY_TYPES})
TIP_SPEED = 218.0  # m/s, main rotor tip speed (Bo 105: 424 rpm x 2 pi / 60 x 4.92 m) [from memory]
TAIL_RATIO = 2220.0 / 424.0  # tail rotor over main rotor speed (Bo 105) [from memory]
PROP_MAX_RATE = {"boat": 2750.0 * np.pi / 30, "hovercraft": 2800.0 * np.pi / 30}  # rad/s at max_thrust [estimate]
_SIDES = {"l": "left", "left": "left", "r": "right", "right": "right"}
_AXES = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}
_PROP_WORDS = re.compile(r"prop|propeller|screw|thruster|fan")
_TRACK_WORDS = re.compile(r"wheel|sprocket|idler|roller")
_BOARD_WORDS = re.compile(r"wheel|truck|caster|footplate")
_RIDER_WORDS = re.compile(r"rider|rotor|torso")


def vehicle_type(preset: str) -> str:
    """The vehicle type of a one-body preset ('helicopter', 'boat', 'hovercraft', 'tank')."""
    return next(kind for kind, cls in VEHICLE_TYPES.items() if type(vehicle_presets()[preset]) is cls)


def part_role(kind: str, name: str) -> str | None:
    """The role of a part named `name` on a vehicle of type `kind`: 'rotor_main', 'rotor_tail'; 'prop_left',
    'prop_right', 'prop'; 'track_left', 'track_right' (tank wheels); 'front_wheels', 'rear_wheels', 'rotor'
    (a snakeboard's wheel sets and rider); None when the name says none."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    words = re.findall(r"[a-z]+", spaced)
    side = next((_SIDES[w] for w in words if w in _SIDES), None)
    if kind == "helicopter":
        if "rotor" not in spaced:
            return None
        return "rotor_tail" if any(w in ("tail", "rear", "anti") for w in words) else "rotor_main"
    if kind in ("boat", "hovercraft"):
        if not _PROP_WORDS.search(spaced):
            return None
        return "prop" if side is None else f"prop_{side}"
    if kind == "tank" and _TRACK_WORDS.search(spaced) and side is not None:
        return f"track_{side}"
    if kind == "snakeboard":
        if _RIDER_WORDS.search(spaced):
            return "rotor"
        end = next((e for e in ("front", "rear", "back") if e in words), None)
        if _BOARD_WORDS.search(spaced) and end is not None:
            return "front_wheels" if end == "front" else "rear_wheels"
    return None


@dataclass(frozen=True)
class BodyRig(RigParts):
    """The chassis (object, or a bone of `armature`), its forward axis, and the spinning parts by role."""

    kind: str
    chassis: str
    forward: str = "+X"
    armature: str = ""
    spinners: tuple[tuple[str, str], ...] = ()  # (role, object or bone name)


PICKABLE = {"rotor_main": "main rotor", "rotor_tail": "tail rotor", "prop_left": "left propeller or fan",
            "prop_right": "right propeller or fan"}


def find_body_rig(scene: bpy.types.Scene, chassis: bpy.types.Object, preset: str, forward: str = "+X",
                  bone: str = "", picked: dict[str, str] | None = None) -> BodyRig:
    """The rig of `chassis` for a one-body preset: its spinning parts picked (role -> object or bone name,
    roles of PICKABLE), else found by name (below the chassis, else in the scene; an armature's bones, each
    keyed through the bone it copies: vehicle_parts.bake_target). A helicopter needs a main rotor; at most
    one part per role, except a tank's wheels (any number per side)."""
    if preset not in BODY_PRESETS:
        raise RigError(f"vehicle rig {chassis.name!r}: preset must be one of {', '.join(BODY_PRESETS)}, got {preset!r}")
    if forward not in FORWARD_AXES:
        raise RigError(f"vehicle rig {chassis.name!r}: forward axis must be one of {', '.join(FORWARD_AXES)}, "
                       f"got {forward!r}")
    kind = vehicle_type(preset)
    armature = chassis.name if chassis.type == "ARMATURE" else ""
    if armature:
        bone = bone or chassis_bone(chassis)
    picked = {**stored_picks(chassis), **{k: v for k, v in (picked or {}).items() if v}}
    for role, part_name in picked.items():
        exists = part_name in chassis.pose.bones if armature else part_name in scene.objects
        if role not in PICKABLE or not exists:
            what = f"not a role ({', '.join(PICKABLE)})" if role not in PICKABLE else "not found"
            raise RigError(f"vehicle rig {chassis.name!r}: picked {role} {part_name!r}: {what}")
    spinners: list[tuple[str, str]] = []
    for pool in candidates(scene, chassis):
        found = set()
        for part in pool:
            role = part_role(kind, own_name(part.key, chassis.name))
            if role is None or part.key == bone:
                continue
            try:  # a bone copying another (DEF-*) is keyed through the bone it copies
                found.add((role, bake_target(scene, part).key))
            except RigError as err:
                raise RigError(f"vehicle rig {chassis.name!r}: the {role} part: {err}") from None
        if found:
            spinners = sorted(found)
            break
    spinners = sorted([(r, n) for r, n in spinners if r not in picked and n not in picked.values()]
                      + list(picked.items()))
    if kind != "tank":
        roles = [r for r, _ in spinners]
        twice = sorted({r for r in roles if roles.count(r) > 1})
        if twice:
            names = ", ".join(n for r, n in spinners if r in twice)
            raise RigError(f"vehicle rig {chassis.name!r}: several parts look like the {twice[0]}: {names}; "
                           f"rename all but one")
    if kind == "helicopter" and "rotor_main" not in dict(spinners):
        raise RigError(f"vehicle rig {chassis.name!r}: no main rotor: no part below {chassis.name!r} or in scene "
                       f"{scene.name!r} is named like 'Main rotor' or 'rotor'")
    return BodyRig(kind, bone or chassis.name, forward, armature, tuple(spinners))


@dataclass(frozen=True)
class BodyReading(FrameGrid):
    """A body rig read at its start frame: the Vehicle and each part's rest place on the chassis."""

    rig: BodyRig
    vehicle: Vehicle
    frame_start: int
    frame_end: int
    fps: float
    substeps: int
    chassis_world: np.ndarray  # (4, 4) rigid world matrix of the chassis part at the start
    parts_world: np.ndarray  # (P, 4, 4) rigid world matrices of the spinning parts at the start
    radii: np.ndarray  # (P,) tank wheels' radii (else 0)
    path: np.ndarray | None = None  # (M, 3) world points the craft follows (solver/vehicles/pilot.py, helmsman.py)
    path_speed: Curve | float = 0.0  # m/s, its speed cap
    limits: Limits | Callable[[float], Limits] | None = None  # the pilot's speed profile limits
    bank_limit: Curve | float = DEFAULT_BANK_LIMIT  # rad


def _controls(owner: bpy.types.Object, kind: str, frame_start: float, fps: float,
              times: np.ndarray) -> tuple[tuple[str, Curve | float], ...]:
    """Every control of `kind` keyed or set as a custom property of `owner`, sampled at `times` into Curves."""
    channels = reference.original_channels(owner)
    out = []
    for name in CONTROL_NAMES[kind]:
        fcurve = compat.find_fcurve(channels, f'["{name}"]', 0)
        if fcurve is not None:
            value: Curve | float = sample_curve(fcurve, frame_start, fps, times, 1.0)
            samples = np.array(value.values)
        elif name in owner.keys():
            try:
                value = float(owner[name])
            except (TypeError, ValueError):
                raise RigError(f"vehicle rig {owner.name!r}: property {name!r} must be a number, "
                               f"got {owner[name]!r}") from None
            samples = np.array([value])
        else:
            continue
        if not np.all(np.isfinite(samples)):
            raise RigError(f"vehicle rig {owner.name!r}: property {name!r} must be finite")
        out.append((name, value))
    return tuple(out)


def read_body_rig(scene: bpy.types.Scene, rig: BodyRig, preset: str, substeps: int = 1,
                  frame_start: int | None = None, frame_end: int | None = None) -> BodyReading:
    """Read `rig` at `frame_start` (default the scene's) into a Vehicle of `preset`, to run until `frame_end`
    (default the scene's) (see the module docstring)."""
    name = rig.owner
    frame_start = scene.frame_start if frame_start is None else int(frame_start)
    frame_end = scene.frame_end if frame_end is None else int(frame_end)
    if frame_end <= frame_start or int(substeps) < 1:
        raise RigError(f"vehicle rig {name!r}: needs a frame range (got {frame_start}-{frame_end}) and substeps >= 1")
    fps = scene.render.fps / scene.render.fps_base
    owner = scene.objects[name]
    chassis = world(scene, rig.part(rig.chassis), frame_start, rigid=True)
    ahead = chassis[:3, :3] @ np.array(FORWARD_AXES[rig.forward])
    up = chassis[:3, 2]
    R = np.column_stack([ahead, np.cross(up, ahead), up])
    if rig.kind in ("tank", "snakeboard"):  # the heading only; it stays level
        theta = np.arctan2(ahead[1], ahead[0])
        R = np.array([[np.cos(theta), -np.sin(theta), 0.0], [np.sin(theta), np.cos(theta), 0.0], [0.0, 0.0, 1.0]])
    quat = tuple(float(v) for v in matrix_to_quat(R))
    steps = (frame_end - frame_start) * int(substeps)
    dt = 1.0 / (fps * int(substeps))
    times = 0.5 * dt * np.arange(2 * steps + 1)
    speed = float(reference.start_value(owner, f'["{INITIAL_SPEED}"]', 0, frame_start)) \
        if INITIAL_SPEED in owner.keys() else 0.0
    spec = vehicle_presets()[preset]
    twist = chassis_twist(scene, owner, rig.part(rig.chassis), frame_start, fps)
    velocity = (0.0, 0.0, 0.0, speed, 0.0, 0.0) if twist is None else \
        tuple(float(v) for v in np.concatenate([R.T @ twist[:3], R.T @ twist[3:]]))  # body twist
    vehicle = Vehicle(rig.kind, spec, position=tuple(float(v) for v in chassis[:3, 3]), orientation=quat,
                      velocity=velocity,
                      controls=_controls(owner, rig.kind, frame_start, fps, times), name=name)
    parts, radii = [], []
    for role, part_name in rig.spinners:
        part = rig.part(part_name)
        parts.append(world(scene, part, frame_start, rigid=True))
        if rig.kind == "tank":
            axle = R[:, 1]
            radii.append(radius(scene, part, frame_start, axle, name, f"{role} wheel"))
        else:
            radii.append(0.0)
    reading = BodyReading(rig, vehicle, frame_start, frame_end, fps, int(substeps), chassis,
                          np.array(parts).reshape(-1, 4, 4), np.array(radii))
    return _with_path(scene, owner, reading, times)


def _with_path(scene: bpy.types.Scene, owner: bpy.types.Object, reading: BodyReading,
               times: np.ndarray) -> BodyReading:
    """The reading with the path a helicopter's, boat's or hovercraft's symplex_path names, its path_speed, the
    driver's limits (vehicle_rig.driver_limits; Limits' defaults without lateral_accel) and a helicopter's
    bank_limit (rad; keyable). Raises RigError for a path on a tank or snakeboard, and for a bank_limit on a
    boat or hovercraft: nothing they control rolls them (solver/vehicles/helmsman.py)."""
    path = read_path(scene, owner, reading.frame_start)
    if path is None:
        return reading
    kind = reading.rig.kind
    if kind not in ("helicopter", *CRAFT):
        raise RigError(f"vehicle rig {owner.name!r}: a {kind} does not follow a path (property "
                       f"{PATH_PROPERTY!r}; the helicopter, boat and hovercraft do); remove it")
    if kind != "helicopter" and (BANK_LIMIT in owner.keys() or
                                 compat.find_fcurve(reference.original_channels(owner), f'["{BANK_LIMIT}"]', 0)):
        raise RigError(f"vehicle rig {owner.name!r}: a {kind} cannot bank: its thrusters push along its hull on "
                       f"its centre plane, so nothing it controls rolls it; remove {BANK_LIMIT!r}")
    args = (reading.frame_start, reading.fps, times)
    path_speed = read_path_speed(owner, *args)
    limits = driver_limits(owner, *args, path_speed)
    if limits is None:
        top = float(max(path_speed.values) if isinstance(path_speed, Curve) else path_speed)
        limits = Limits(top_speed=top)
    if kind != "helicopter":
        return dataclasses.replace(reading, path=path, path_speed=path_speed, limits=limits)
    fcurve = compat.find_fcurve(reference.original_channels(owner), f'["{BANK_LIMIT}"]', 0)
    bank = sample_curve(fcurve, *args, 1.0) if fcurve is not None else float(owner.get(BANK_LIMIT, DEFAULT_BANK_LIMIT))
    values = np.array(bank.values if isinstance(bank, Curve) else [bank])
    if not np.all((values > 0) & (values < np.pi / 2)):
        raise RigError(f"vehicle rig {owner.name!r}: {BANK_LIMIT!r} must lie between 0 and pi/2 rad")
    return dataclasses.replace(reading, path=path, path_speed=path_speed, limits=limits, bank_limit=bank)


def steered(vehicle: Vehicle, controller: Pilot) -> Vehicle:
    """`vehicle` with the controls its path's pilot or helmsman chose at each node (linear between the nodes) in
    place of the keyed ones, so its rotors, propellers or fans spin with them."""
    names = [name for name, _ in controller.controls()]
    t, *columns = np.array(controller.history).T
    chosen = {name: Curve(tuple(t), tuple(values)) for name, values in zip(names, columns)}
    kept = tuple((name, value) for name, value in vehicle.controls if name not in chosen)
    return dataclasses.replace(vehicle, controls=kept + tuple(chosen.items()))


def spin_rates(reading: BodyReading, t: np.ndarray) -> np.ndarray:
    """(len(t), P) spin rate (rad/s) of each rotor or propeller at times t (s after the start frame)."""
    v, spec, kind = reading.vehicle, reading.vehicle.spec, reading.rig.kind
    roles = [r for r, _ in reading.rig.spinners]
    out = np.zeros((len(t), len(roles)))
    if kind == "helicopter":
        collective = np.array([signal(v.control("collective"))(tk) for tk in t])
        main = TIP_SPEED / spec.rotor_radius * (collective > 0)
        for i, role in enumerate(roles):
            out[:, i] = main * (TAIL_RATIO if role == "rotor_tail" else 1.0)
    elif kind in PROP_MAX_RATE:
        thrust = {side: np.array([signal(v.control(f"thrust_{side}"))(tk) for tk in t]) for side in ("left", "right")}
        thrust[""] = 0.5 * (thrust["left"] + thrust["right"])
        for i, role in enumerate(roles):
            T = np.clip(thrust[role[5:]], -spec.max_thrust, spec.max_thrust)
            out[:, i] = np.sign(T) * PROP_MAX_RATE[kind] * np.sqrt(np.abs(T) / spec.max_thrust)
    return out


def spin_angles(reading: BodyReading, trajectory: Trajectory) -> np.ndarray:
    """(N+1, P) spin angle of each part: trapezoidal integral of its rate; tank wheels: travel / radius."""
    if reading.rig.kind == "tank":
        names = trajectory.coordinate_names
        travel = {side: trajectory.q[:, names.index(f"track_{side}")] for side in ("left", "right")}
        return np.column_stack([travel[role[6:]] / r for (role, _), r in zip(reading.rig.spinners, reading.radii)]) \
            if reading.rig.spinners else np.zeros((len(trajectory.t), 0))
    rates = spin_rates(reading, trajectory.t)
    steps = 0.5 * (rates[1:] + rates[:-1]) * np.diff(trajectory.t)[:, None]
    return np.vstack([np.zeros((1, rates.shape[1])), np.cumsum(steps, axis=0)])


def _axis(kind: str, role: str) -> np.ndarray:
    if kind == "helicopter":
        return _AXES["y" if role == "rotor_tail" else "z"]
    return _AXES["y" if kind == "tank" else "x"]


def _rotation(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotations (N, 3, 3) by `angle` about the unit `axis` (Rodrigues)."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    a = np.asarray(angle)[:, None, None]
    return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * (K @ K)


def object_trajectory(reading: BodyReading, trajectory: Trajectory) -> Trajectory:
    """`trajectory` restated as world poses of the rig's parts: the chassis rigidly on the solver's body,
    each spinning part at its rest place turned about its own centre by its spin angle; a snakeboard's parts
    rigidly on their own solver bodies."""
    body = pose_matrices(trajectory.poses[:, 0])  # (N+1, 4, 4)
    to_body = np.linalg.inv(body[0])
    worlds = [body @ (to_body @ reading.chassis_world)]
    angles = spin_angles(reading, trajectory)
    for i, (role, _) in enumerate(reading.rig.spinners):
        if reading.rig.kind == "snakeboard":
            own = pose_matrices(trajectory.poses[:, SNAKEBOARD_BODIES.index(role)])
            worlds.append(own @ (np.linalg.inv(own[0]) @ reading.parts_world[i]))
            continue
        rest = to_body @ reading.parts_world[i]
        local = np.zeros((len(body), 4, 4))
        local[:, :3, :3] = _rotation(_axis(reading.rig.kind, role), angles[:, i]) @ rest[:3, :3]
        local[:, :3, 3] = rest[:3, 3]
        local[:, 3, 3] = 1.0
        worlds.append(body @ local)
    stacked = np.stack(worlds, axis=1)
    poses = np.concatenate([stacked[..., :3, 3], matrix_to_quat(stacked[..., :3, :3])], axis=-1)
    names = [reading.rig.chassis, *(n for _, n in reading.rig.spinners)]
    return Trajectory(t=trajectory.t, bodies=names, poses=poses, q=angles,
                      coordinate_names=[f"{n}_spin" for _, n in reading.rig.spinners], energy=trajectory.energy,
                      constraint_residual=trajectory.constraint_residual,
                      newton_iterations=trajectory.newton_iterations, method=trajectory.method,
                      status=trajectory.status, message=trajectory.message, info=dict(trajectory.info))


@dataclass(frozen=True)
class BodyBakeReport:
    chassis: str
    kind: str
    steps: int
    keys: int
    seconds: float
    max_residual: float
    distance: float  # m travelled by the centre of mass

    def summary(self) -> str:
        return (f"Baked {self.kind} {self.chassis!r}: {self.steps} steps, {self.keys} keys in {self.seconds:.2f} s; "
                f"{self.distance:.1f} m travelled, solver residual {self.max_residual:.1e}")


def simulate_body_rig(reading: BodyReading, gravity=(0.0, 0.0, -9.81)) -> tuple[Trajectory, BodyReading]:
    """The solver's run of the rig's Vehicle over its frame range (flown or steered along its path, if it has
    one), and the reading with the controls the run used (on a path: the pilot's or helmsman's, `steered`).
    Raises RigError naming the frame if it fails."""
    owner = reading.rig.owner
    mech = Mechanism(name=f"vehicle rig {owner}", bodies=(), joints=(), gravity=tuple(gravity),
                     vehicle=reading.vehicle, source=f"vehicle rig {owner!r}")
    controller = None
    if reading.path is None:
        trajectory = simulate(mech, reading.dt, reading.steps, method="vehicle")
    elif reading.rig.kind == "helicopter":
        trajectory, controller = simulate_flying(mech, reading.path, reading.limits, reading.dt, reading.steps,
                                                 reading.bank_limit, speed=reading.path_speed)
    else:
        trajectory, controller = simulate_steering(mech, reading.path[:, :2], reading.limits, reading.dt,
                                                   reading.steps, speed=reading.path_speed)
    if trajectory.status != "finished":
        frame = reading.frame_start + trajectory.t[-1] * reading.fps
        raise RigError(f"vehicle rig {owner!r}: the solver stopped after frame {frame:g}: {trajectory.message}")
    if controller is not None:
        reading = dataclasses.replace(reading, vehicle=steered(reading.vehicle, controller))
    return trajectory, reading


def bake_body_rig(scene: bpy.types.Scene, rig: BodyRig, preset: str, substeps: int = 1,
                  span: tuple[int, int, int] | None = None) -> BodyBakeReport:
    """Read, simulate and bake `rig` over the scene's frame range, or over `span` (first frame, last frame,
    blend frames: as vehicle_bake.bake_vehicle's); on any error nothing changes."""
    started = time.perf_counter()
    first, last, blend = span or (scene.frame_start, scene.frame_end, 0)
    reading = read_body_rig(scene, rig, preset, substeps, first, last + blend)
    trajectory, reading = simulate_body_rig(reading, scene.gravity)
    objects = object_trajectory(reading, trajectory)
    targets = [rig.part(name).target() for name in objects.bodies]
    options = BakeOptions(setup_name(rig.owner), reading.frame_start, reading.fps, reading.substeps,
                          blend_frames=blend)
    keys = write_trajectory(objects, targets, options, root=rig.owner)
    path = trajectory.poses[:, 0, :3]
    return BodyBakeReport(rig.owner, rig.kind, trajectory.nsteps, keys, time.perf_counter() - started,
                          float(np.max(trajectory.constraint_residual)),
                          float(np.sum(np.linalg.norm(np.diff(path, axis=0), axis=1))))


# ----------------------------------------------------------------------------------------------
# Authoring


def _place(collection: bpy.types.Collection, parent: bpy.types.Object | None, name: str, mesh: bpy.types.Mesh,
           location: tuple[float, float, float]) -> bpy.types.Object:
    obj = bpy.data.objects.new(name, mesh)
    obj.rotation_mode = "QUATERNION"  # bounded channels keep float32 keys exact to ~1e-7 rad
    obj.parent = parent
    obj.location = location
    collection.objects.link(obj)
    return obj


def build_body_rig(scene: bpy.types.Scene, preset: str, name: str,
                   location: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> BodyRig:
    """Add a box chassis (origin at its centre of mass, facing +X, resting where the preset rests: a
    helicopter 10 m above location.z, a boat at its design draft on the water z = 0, a hovercraft on its
    cushion over the ground z = 0, a tank or a snakeboard on the plane z = location.z) with its spinning
    parts (a snakeboard: its wheel sets and rider) as children, named after the chassis, and key a short
    manoeuvre on it."""
    if preset not in BODY_PRESETS:
        raise RigError(f"one-body preset must be one of {', '.join(BODY_PRESETS)}, got {preset!r}")
    kind, spec = vehicle_type(preset), vehicle_presets()[preset]
    name = free_name(name)  # the chassis' name: its parts are named after it
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    x, y, z = location
    parts: list[tuple[str, tuple[float, float, float], bpy.types.Mesh]] = []
    if kind == "helicopter":
        body, height = box_mesh(name, (8.0, 1.6, 1.8)), z + 10.0
        r = spec.rotor_radius
        parts = [(f"{name} main rotor", (0.0, 0.0, spec.rotor_height), box_mesh(f"{name} rotor", (2 * r, 0.3, 0.05))),
                 (f"{name} tail rotor", (-spec.tail_arm, -0.3, 0.6), box_mesh(f"{name} tail", (1.9, 0.05, 0.2)))]
    elif kind in ("boat", "hovercraft"):
        if kind == "boat":
            body = box_mesh(name, (spec.hull_length, spec.hull_beam, spec.hull_height))
            height = spec.keel_below_com - spec.design_draft
            place, size = (-spec.thruster_behind_com, -spec.thruster_below_com), 0.35
        else:
            body = box_mesh(name, (spec.skirt_length, spec.skirt_width, 1.0))
            height = spec.rest_height
            place, size = (-spec.thruster_behind_com, spec.thruster_above_com), 1.0
        for side, sign in (("L", 1.0), ("R", -1.0)):
            word = "Prop" if kind == "boat" else "Fan"
            parts.append((f"{name} {word}.{side}", (place[0], sign * spec.thruster_spacing / 2, place[1]),
                          box_mesh(f"{name} {word} {side}", (0.05, size, size / 3))))
    elif kind == "snakeboard":
        body, height, l = box_mesh(name, (2 * spec.half_length + 0.3, 0.25, 0.03)), z + 0.1, spec.half_length
        parts = [(f"{name} front wheels", (l, 0.0, -0.06), box_mesh(f"{name} front", (0.08, 0.2, 0.08))),
                 (f"{name} rear wheels", (-l, 0.0, -0.06), box_mesh(f"{name} rear", (0.08, 0.2, 0.08))),
                 (f"{name} rider", (0.0, 0.0, 0.9), box_mesh(f"{name} rider", (0.25, 0.45, 1.6)))]
    else:
        body, height = box_mesh(name, (7.7, spec.track_gauge - 0.6, 1.2)), z + spec.com_height
        r = spec.road_wheel_radius
        for side, sign in (("L", 1.0), ("R", -1.0)):
            for i, px in enumerate(np.linspace(-spec.track_length / 2, spec.track_length / 2, 6)):
                parts.append((f"{name} road wheel {i}.{side}", (px, sign * spec.track_gauge / 2, r - spec.com_height),
                              wheel_mesh(f"{name} wheel {i} {side}", r, 0.3)))
    chassis = _place(collection, None, name, body, (x, y, height))
    chassis[PRESET_PROPERTY] = preset
    chassis[FORWARD_PROPERTY] = "+X"
    for part_name, offset, mesh in parts:
        _place(collection, chassis, part_name, mesh, offset)
    _key_manoeuvre(chassis, kind, spec, scene.frame_start, scene.render.fps / scene.render.fps_base)
    return find_body_rig(scene, chassis, preset)


def _key_manoeuvre(chassis: bpy.types.Object, kind: str, spec, frame_start: int, fps: float) -> None:
    """Key a few seconds of controls: a helicopter hovers then climbs, boat and hovercraft open up and turn
    left, a tank drives off and pivots left, a snakeboard pushed off at 1 m/s rides the drive gait (twist
    0.8 rad and foot angle 0.3 rad in phase, period 2 s, first foot lobe half height:
    presets/vehicles/snakeboard.toml)."""
    if kind == "helicopter":
        weight = spec.mass * 9.81
        keys = {"collective": ((0.0, weight), (1.0, 1.1 * weight), (2.0, weight))}
    elif kind in ("boat", "hovercraft"):
        low = 0.3 if kind == "boat" else 0.2
        keys = {"thrust_right": ((0.0, 0.0), (1.0, spec.max_thrust)),
                "thrust_left": ((0.0, 0.0), (1.0, spec.max_thrust), (2.0, low * spec.max_thrust))}
    elif kind == "snakeboard":
        chassis[INITIAL_SPEED] = 1.0
        lobes = [(0.5 * i, (0.0, 1.0, 0.0, -1.0)[i % 4]) for i in range(17)]
        keys = {"rotor": tuple((t, 0.8 * v) for t, v in lobes),
                "steer": tuple((t, (0.15 if t < 1 else 0.3) * v) for t, v in lobes)}
    else:
        f = spec.max_track_force
        keys = {"force_left": ((0.0, 0.0), (0.5, 0.3 * f), (2.0, 0.3 * f), (2.3, -0.7 * f)),
                "force_right": ((0.0, 0.0), (0.5, 0.3 * f), (2.0, 0.3 * f), (2.3, 0.7 * f))}
    for prop, points in keys.items():
        for t, value in points:
            chassis[prop] = float(value)
            chassis.keyframe_insert(f'["{prop}"]', frame=frame_start + t * fps)

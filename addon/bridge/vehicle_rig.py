"""Car rigs in the scene: find the chassis and wheel parts, read their keyed controls, build the Vehicle.

A rig is a chassis object plus four wheel objects (found by name or picked), or an armature with a
chassis bone and four wheel bones (each with a `radius` property), with the chassis' forward axis chosen
by the artist (+X, -X, +Y, -Y; its local +Z is up). A car-with-trailer preset adds a trailer body and two
trailer wheels (named like 'Trailer', 'Trailer wheel L'), standing behind the car's tow ball at the start,
in line or at a hitch angle (the trailer turned about the ball, up to 90 degrees either way).
`read_rig` reads the scene once at the start frame (the pre-bake pose, see reference.py) and returns
plain data: a `Vehicle` whose geometry (wheelbase, track, wheel radius; the trailer's drawbar, track and
wheel radius) is measured from the rig and whose mass properties come from a car preset, the controls
keyed as custom properties on the chassis (a bone rig: on its armature) sampled into Curves, and the
offsets that place each part on the solver's bodies. A chassis whose `symplex_path` property names a
curve object follows that curve (its first spline, flattened onto the ground) at the keyed `path_speed`
(m/s) instead of its keyed steer and throttle (solver/vehicles/pursuit.py; with a `lateral_accel` property it
drives like a driver, solver/vehicles/driver.py: DRIVER_PROPERTIES, path_speed then caps; with a `drift_angle`
(rad, keyable) it drives on tyres that slip and drifts with its rear axle at that slip angle,
solver/vehicles/drift.py).
A chassis keyed before the start
frame starts at the speed its keys arrive with (start_motion.chassis_twist; its yaw rate follows from the
steering, so a car without trailer or path takes the speed nearest its keyed speed and yaw rate,
solver/start_velocity.car_start_speed; its wheels spin with the distance rolled), unless the owner's
Start From Animation is off; else at its `initial_speed`. `build_car_rig` authors a
simple rig with a keyed slalom. Baking lives in vehicle_bake.py; this module never writes keys of a bake.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import bpy
import numpy as np

from ..solver.model import MAX_START_HITCH_ANGLE, Curve, Vehicle
from ..solver.start_velocity import car_start_speed
from ..solver.vehicles.car import WHEELS, compile_car
from ..solver.mechfile.read import vehicle_presets
from ..solver.vehicles.controls import signal
from ..solver.vehicles.drift import MAX_DRIFT
from ..solver.vehicles.driver import Limits
from ..solver.vehicles.spec import CarSpec, CarTrailerSpec
from ..solver.vehicles.trailer import TRAILER_WHEELS
from . import compat, reference
from .read import FrameGrid
from .start_motion import chassis_twist
from .vehicle_parts import PRESET_PROPERTY, RigError, RigParts, find_parts, mover, shape, stored_picks, world

FORWARD_AXES = {"+X": (1.0, 0.0, 0.0), "-X": (-1.0, 0.0, 0.0), "+Y": (0.0, 1.0, 0.0), "-Y": (0.0, -1.0, 0.0)}
CAR_PRESETS = tuple(name for name, spec in vehicle_presets().items() if isinstance(spec, CarSpec))
WHEEL_LABELS = {"wheel_rl": "rear left", "wheel_rr": "rear right", "wheel_fl": "front left", "wheel_fr": "front right"}
TRAILER_LABELS = {"trailer": "trailer body", "trailer_wheel_l": "trailer's left wheel",
                  "trailer_wheel_r": "trailer's right wheel"}
STEERING_LABELS = {"steer_fl": "front left steering part", "steer_fr": "front right steering part"}
FRONT = ("wheel_fl", "wheel_fr")
# Custom properties on the chassis read as controls: solver control -> (property, scale name or None).
# throttle and brake are fractions of the preset's max_drive_torque and max_brake_torque.
CONTROL_PROPERTIES = {
    "drive_torque": (("drive_torque", None), ("throttle", "max_drive_torque")),
    "brake_torque": (("brake_torque", None), ("brake", "max_brake_torque")),
    "steer": (("steer", None),),
}
INITIAL_SPEED = "initial_speed"  # chassis custom property: forward speed (m/s) at the start frame
FORWARD_PROPERTY = "symplex_forward_axis"  # chassis custom properties remembering the rig's settings
PATH_PROPERTY = "symplex_path"  # chassis custom property: name of a curve object to follow
PATH_SPEED = "path_speed"  # chassis custom property (keyable): target speed along the path, m/s
# chassis custom properties (m/s^2, keyable) making a path follower drive like a driver
# (solver/vehicles/driver.py); lateral_accel switches it on
DRIVER_PROPERTIES = {"lateral_accel": "lateral", "accel_limit": "accel", "brake_limit": "brake"}
# chassis custom property (rad, keyable): the rear axle's slip angle a car following its path drifts at (the tail
# out of the turn; 0: grip); it puts the car on tyres that slip, driven by solver/vehicles/drift.py
DRIFT_ANGLE = "drift_angle"
BEZIER_SAMPLES = 16  # points per Bezier segment of a path
SQUARE_TOLERANCE = 0.5  # degrees a trailer's wheel axle may stand off square to its drawbar

_WHEEL_WORDS = re.compile(r"wheel|tire|tyre")
_NEAR_WHEEL_WORDS = re.compile(r"bumper|damper|brake|caliper|fender|arch|steering")  # 'WheelBumper.Ft.L'... no wheel
_CHASSIS_WORDS = re.compile(r"chassis|body|hull")
_STEER_WORDS = re.compile(r"knuckle|upright|steer(?!ing)")
_ENDS = {"front": "f", "rear": "r", "back": "r", "ft": "f", "bk": "r", "f": "f", "b": "r"}
_SIDES = {"left": "l", "right": "r", "l": "l", "r": "r"}
_CODES = {"fl": "fl", "fr": "fr", "rl": "rl", "rr": "rr", "lf": "fl", "rf": "fr", "lr": "rl", "bl": "rl", "br": "rr"}


@dataclass(frozen=True)
class VehicleRig(RigParts):
    """Which parts make the car: the chassis, the wheels by solver wheel name, the forward axis; for a bone
    rig the armature whose bones these names are; the trailer's parts when the rig has them."""

    chassis: str
    wheels: tuple[tuple[str, str], ...]  # (solver wheel, object or bone name) in car.WHEELS order
    forward: str = "+X"
    armature: str = ""
    trailer: tuple[tuple[str, str], ...] = ()  # (role, name) in TRAILER_LABELS order, when found
    steering: tuple[tuple[str, str], ...] = ()  # (role, name) of front steering parts (STEERING_LABELS), if any

    def wheel(self, key: str) -> str:
        return dict(self.wheels)[key]


@dataclass(frozen=True)
class TrailerReading:
    """A rig's trailer at its start frame: trailer body (rigid part) in the solver's trailer frame (its
    centre of mass, heading along the trailer), wheel centres mounts (2, 3) and rest orientations (2, 3, 3)
    in that frame, measured radii (2,), part origins from their centres offsets (2, 3); wheels in
    trailer.TRAILER_WHEELS order (left, right); the hitch angle theta - beta it stands at (rad, + the
    trailer swung to the car's left)."""

    offset: np.ndarray
    mounts: np.ndarray
    rest: np.ndarray
    radii: np.ndarray
    offsets: np.ndarray
    hitch_angle: float


@dataclass(frozen=True)
class RigReading(FrameGrid):
    """A rig read at its start frame: the Vehicle, the time grid and where each object sits on the bodies.

    ground: world z of the road under the rear wheels (the solver's ground is z = 0). chassis_offset
    (4, 4): chassis object (rigid part) in the solver's chassis frame. wheel_mounts (4, 3): wheel centres
    in the chassis frame; wheel_rest (4, 3, 3): wheel orientations in that frame with no steer or spin;
    wheel_radii (4,): measured radii; wheel_offsets (4, 3): each wheel part's origin from its centre, in
    the part's axes (a bone's head beside its wheel mesh); all in car.WHEELS order.
    """

    rig: VehicleRig
    vehicle: Vehicle
    frame_start: int
    frame_end: int
    fps: float
    substeps: int
    ground: float
    chassis_offset: np.ndarray
    wheel_mounts: np.ndarray
    wheel_rest: np.ndarray
    wheel_radii: np.ndarray
    wheel_offsets: np.ndarray
    warnings: tuple[str, ...] = ()
    path: np.ndarray | None = None  # (M, 2) world xy of the curve to follow, or None
    path_speed: Curve | float = 0.0  # target speed along it, m/s
    trailer: TrailerReading | None = None
    steering: tuple[tuple[str, np.ndarray], ...] = ()  # (role, rest matrix (4, 4) in the chassis frame)
    limits: Limits | Callable[[float], Limits] | None = None  # a driver's (limits(t) when keyed), or pure pursuit
    drift: Curve | float | None = None  # drift_angle (rad; keyed: a Curve): the drift driver on tyres, or None


def wheel_position(name: str) -> str | None:
    """'wheel_fl' ... for an object name that says it is a wheel and where ('Wheel.FL', 'wheel_front_left',
    'WheelRearRight', 'tyre_rr.001', 'Wheel.Ft.L', 'Wheel.Bk.R', 'FL_wheel', 'DEF-Wheel.Ft.L'); None when it
    does not, or names a part beside a wheel ('WheelBumper.Ft.L', 'Brake.Wheel.FL', 'Wheel arch FL')."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    if not _WHEEL_WORDS.search(spaced) or "trailer" in spaced or _NEAR_WHEEL_WORDS.search(spaced):
        return None
    corner = _corner(_WHEEL_WORDS.sub(" ", spaced))
    return None if corner is None else f"wheel_{corner}"


def steering_position(name: str) -> str | None:
    """'steer_fl' or 'steer_fr' for a name that says it is a front steering part that turns with its wheel but
    does not roll ('Knuckle.FL', 'steer_front_right', 'Upright.FR'); None otherwise."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    if not _STEER_WORDS.search(spaced) or _WHEEL_WORDS.search(spaced) or "trailer" in spaced:
        return None
    corner = _corner(_STEER_WORDS.sub(" ", spaced))
    return f"steer_{corner}" if corner in ("fl", "fr") else None


def _corner(spaced: str) -> str | None:
    """'fl', 'fr', 'rl' or 'rr' from the words of a lower-case name (its part word removed), or None."""
    words = re.findall(r"[a-z]+", spaced)
    end = next((_ENDS[w] for w in words if w in _ENDS), None)
    side = next((_SIDES[w] for w in words if w in _SIDES), None)
    if end is not None and side is not None:
        return f"{end}{side}"
    for word in words:
        if word in _CODES:
            return _CODES[word]
    joined = "".join(words)
    for end_word, e in _ENDS.items():
        for side_word, s in (("left", "l"), ("right", "r")):
            if end_word + side_word in joined or side_word + end_word in joined:
                return f"{e}{s}"
    return None


def trailer_part(name: str) -> str | None:
    """'trailer', 'trailer_wheel_l' or 'trailer_wheel_r' for a name that says it is the trailer's body or one
    of its wheels ('Trailer', 'trailer_body', 'Trailer wheel.L', 'TrailerWheelRight'); None otherwise."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    if "trailer" not in spaced:
        return None
    if not _WHEEL_WORDS.search(spaced):
        return "trailer"
    words = re.findall(r"[a-z]+", _WHEEL_WORDS.sub(" ", spaced.replace("trailer", " ")))
    side = next((_SIDES[w] for w in words if w in _SIDES), None)
    return None if side is None else f"trailer_wheel_{side}"


def _role(name: str) -> str | None:
    return trailer_part(name) or wheel_position(name) or steering_position(name)


def chassis_bone(armature: bpy.types.Object) -> str:
    """The chassis bone of a bone rig: the one bone named like 'chassis', 'body' or 'hull' (not a trailer's), or
    the one such bones copy ('DEF-Body' copying 'MCH-Body': vehicle_parts.mover)."""
    named = [b.name for b in armature.pose.bones
             if _CHASSIS_WORDS.search(b.name.lower()) and trailer_part(b.name) is None]
    names, refused = [], []
    for bone in named:
        try:
            moving = mover(armature, bone)
        except RigError as err:
            refused.append(str(err))
            continue
        if moving not in names:
            names.append(moving)
    if not names and refused:
        raise RigError(f"vehicle rig {armature.name!r}: chassis {refused[0]}")
    if len(names) != 1:
        found = f"{len(names)} bones ({', '.join(sorted(names))})" if names else "no bone"
        raise RigError(f"vehicle rig {armature.name!r}: {found} named like 'chassis', 'body' or 'hull'; name the "
                       f"chassis bone so or pick it")
    return names[0]


def find_rig(scene: bpy.types.Scene, chassis: bpy.types.Object, forward: str = "+X",
             picked: dict[str, str] | None = None, bone: str = "") -> VehicleRig:
    """The rig of `chassis`: picked wheels first, then objects named like wheels below the chassis, then in
    the scene; for an armature, its bones (chassis bone `bone`, else the one named like 'chassis'). Trailer
    parts are found the same way, when present. Raises RigError naming every wheel it cannot find or finds
    twice."""
    if forward not in FORWARD_AXES:
        raise RigError(f"vehicle rig {chassis.name!r}: forward axis must be one of {', '.join(FORWARD_AXES)}, "
                       f"got {forward!r}")
    armature = chassis.name if chassis.type == "ARMATURE" else ""
    if armature:
        bone = bone or chassis_bone(chassis)
        if bone not in chassis.pose.bones:
            raise RigError(f"vehicle rig {chassis.name!r}: the armature has no chassis bone {bone!r}")
    picked = {**stored_picks(chassis), **{k: v for k, v in (picked or {}).items() if v}}
    labels = {**WHEEL_LABELS, **TRAILER_LABELS, **STEERING_LABELS}
    for key, name in picked.items():
        if key not in labels:
            raise RigError(f"vehicle rig {chassis.name!r}: unknown wheel {key!r}; wheels: {', '.join(WHEELS)}")
        exists = name in chassis.pose.bones if armature else name in scene.objects
        if not exists:
            where = f"a bone of armature {chassis.name!r}" if armature else f"an object of scene {scene.name!r}"
            raise RigError(f"vehicle rig {chassis.name!r}: the {labels[key]} {name!r} is not {where}")
    rig = VehicleRig(bone or chassis.name, (), forward, armature)
    found, problems = find_parts(scene, chassis, _role, labels, {k: rig.part(v) for k, v in picked.items()})
    if problems:
        raise RigError(f"vehicle rig {chassis.name!r}: " + "; ".join(problems))
    missing = [k for k in WHEELS if k not in found]
    if len(missing) == len(WHEELS) and PRESET_PROPERTY not in chassis.keys():
        raise RigError(f"{chassis.name!r} is not a vehicle rig: it has no {PRESET_PROPERTY!r} property (Add Vehicle "
                       f"Rig stores the preset there) and no wheels: no {'bone' if armature else 'object'} is named "
                       f"like 'wheel_fl', 'Wheel.Ft.L' or 'FL_wheel'; add a rig with Add Vehicle Rig, or name or pick "
                       f"its four wheels")
    if missing:
        listed = ", ".join(f"{WHEEL_LABELS[k]} ({k})" for k in missing)
        pool = f"No bone of armature {chassis.name!r}" if armature else \
            f"No object below {chassis.name!r} or in scene {scene.name!r}"
        raise RigError(f"vehicle rig {chassis.name!r}: missing wheel(s): {listed}. {pool} "
                       f"is named like 'wheel_{missing[0][-2:]}', "
                       f"'Wheel.{missing[0][-2:].upper()}' or 'wheel_{_spelled(missing[0])}'; rename one or pick it")
    trailer = tuple((k, found[k].key) for k in TRAILER_LABELS if k in found)
    steering = tuple((k, found[k].key) for k in STEERING_LABELS if k in found)
    return dataclasses.replace(rig, wheels=tuple((k, found[k].key) for k in WHEELS), trailer=trailer,
                               steering=steering)


def forward_from_wheels(scene: bpy.types.Scene, rig: VehicleRig) -> str:
    """The chassis axis of FORWARD_AXES nearest the direction from the rear wheels' centre to the front
    wheels' at the scene's start frame: the forward axis of a rig that stores none."""
    frame = scene.frame_start
    chassis = world(scene, rig.part(rig.chassis), frame, rigid=True)
    centres = np.array([world(scene, rig.part(name), frame)[:3, 3] for _, name in rig.wheels])
    ahead = chassis[:3, :3].T @ (centres[2:].mean(axis=0) - centres[:2].mean(axis=0))
    return max(FORWARD_AXES, key=lambda axis: float(np.dot(FORWARD_AXES[axis], ahead)))


def _spelled(key: str) -> str:
    end, side = key[-2], key[-1]
    return f"{'front' if end == 'f' else 'rear'}_{'left' if side == 'l' else 'right'}"


def sample_curve(fcurve, frame_start: float, fps: float, times: np.ndarray, scale: float) -> Curve:
    values = np.array([fcurve.evaluate(frame_start + t * fps) for t in times]) * scale
    return Curve(tuple(float(t) for t in times), tuple(float(v) for v in values), "linear")


def read_controls(chassis: bpy.types.Object, spec: CarSpec, frame_start: float, fps: float,
                  times: np.ndarray) -> tuple[tuple[tuple[str, Curve | float], ...], list[str]]:
    """The car controls keyed (or set) as custom properties on `chassis`, sampled at `times` (s after
    frame_start) into linear Curves. Returns (controls, warnings); raises RigError naming the property and
    the frame of a bad value."""
    channels = reference.original_channels(chassis)
    controls, warnings = [], []
    for control, options in CONTROL_PROPERTIES.items():
        present = [(prop, scale) for prop, scale in options
                   if prop in chassis.keys() or compat.find_fcurve(channels, f'["{prop}"]', 0) is not None]
        if len(present) > 1:
            raise RigError(f"vehicle rig {chassis.name!r}: properties {present[0][0]!r} and {present[1][0]!r} both "
                           f"set the {control}; keep one")
        if not present:
            continue
        prop, scale_name = present[0]
        scale = 1.0 if scale_name is None else float(getattr(spec, scale_name))
        fcurve = compat.find_fcurve(channels, f'["{prop}"]', 0)
        if fcurve is not None:
            value: Curve | float = sample_curve(fcurve, frame_start, fps, times, scale)
            samples = np.array(value.values)
        else:
            try:
                value = float(chassis[prop]) * scale
            except (TypeError, ValueError):
                raise RigError(f"vehicle rig {chassis.name!r}: property {prop!r} must be a number, "
                               f"got {chassis[prop]!r}") from None
            samples = np.array([value])
        frames = frame_start + times * fps if fcurve is not None else np.array([frame_start])
        _check_samples(chassis.name, prop, control, spec, samples / scale, samples, frames, warnings)
        controls.append((control, value))
    return tuple(controls), warnings


def _check_samples(rig: str, prop: str, control: str, spec: CarSpec, raw: np.ndarray, values: np.ndarray,
                   frames: np.ndarray, warnings: list[str]) -> None:
    def first(bad: np.ndarray) -> str:
        i = int(np.argmax(bad))
        return f"property {prop!r} is {raw[i]:g} at frame {frames[i]:g}"

    if not np.all(np.isfinite(values)):
        raise RigError(f"vehicle rig {rig!r}: {first(~np.isfinite(values))}; it must be a finite number")
    if control == "brake_torque" and np.any(values < 0):
        raise RigError(f"vehicle rig {rig!r}: {first(values < 0)}; the brake must be >= 0")
    if prop in ("throttle", "brake") and np.any(np.abs(raw) > 1.0):
        raise RigError(f"vehicle rig {rig!r}: {first(np.abs(raw) > 1.0)}; {prop} is a fraction of the "
                       f"{spec.name} preset's maximum, between {-1 if prop == 'throttle' else 0} and 1")
    if control == "steer" and np.any(np.abs(values) > spec.max_steer):
        warnings.append(f"vehicle rig {rig!r}: {first(np.abs(values) > spec.max_steer)} rad, beyond the "
                        f"{spec.name} preset's steering lock {spec.max_steer:g} rad; the steering stops there")


def _bezier(points, cyclic: bool) -> np.ndarray:
    """World-independent samples (K, 3) of a Bezier spline's points (local coordinates)."""
    pairs = list(zip(points[:-1], points[1:])) + ([(points[-1], points[0])] if cyclic else [])
    u = np.linspace(0.0, 1.0, BEZIER_SAMPLES, endpoint=False)[:, None]
    out = []
    for a, b in pairs:
        p0, p1, p2, p3 = (np.array(v, float) for v in (a.co, a.handle_right, b.handle_left, b.co))
        out.append((1 - u) ** 3 * p0 + 3 * (1 - u) ** 2 * u * p1 + 3 * (1 - u) * u**2 * p2 + u**3 * p3)
    out.append(np.array([points[0].co if cyclic else points[-1].co], float))
    return np.vstack(out)


def read_path(scene: bpy.types.Scene, chassis: bpy.types.Object, frame: float) -> np.ndarray | None:
    """World points (M, 3) of the first spline of the curve named by the chassis' symplex_path property (Bezier
    segments sampled, poly and NURBS splines through their control points), or None without the property.
    Cars, boats and hovercraft follow its xy; a helicopter also flies its climbs."""
    name = chassis.get(PATH_PROPERTY)
    if name is None or name == "":
        return None
    obj = scene.objects.get(name) if isinstance(name, str) else None
    if obj is None or obj.type != "CURVE":
        what = "not an object of the scene" if obj is None else f"a {obj.type.lower()}, not a curve"
        raise RigError(f"vehicle rig {chassis.name!r}: property {PATH_PROPERTY!r} names {name!r}, which is {what}")
    if not len(obj.data.splines):
        raise RigError(f"vehicle rig {chassis.name!r}: path curve {name!r} has no spline")
    spline = obj.data.splines[0]
    if spline.type == "BEZIER":
        local = _bezier(spline.bezier_points, spline.use_cyclic_u)
    else:
        local = np.array([tuple(p.co)[:3] for p in spline.points], float)
        if spline.use_cyclic_u and len(local):
            local = np.vstack([local, local[:1]])
    matrix = np.array(reference.object_matrix(obj, frame))
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    if len(world) < 2 or np.linalg.norm(np.ptp(world[:, :2], axis=0)) <= 0:
        raise RigError(f"vehicle rig {chassis.name!r}: path curve {name!r} needs at least two distinct points")
    return world


def read_rig(scene: bpy.types.Scene, rig: VehicleRig, preset: str = "sedan", substeps: int = 1,
             frame_start: int | None = None, frame_end: int | None = None) -> RigReading:
    """Read `rig` at the start frame: geometry, start pose and controls into a Vehicle (see RigReading).

    The chassis' local +Z is up and the forward axis is rig.forward; wheels' origins are their centres.
    Raises RigError naming the object or property at fault.
    """
    name = rig.owner
    if preset not in CAR_PRESETS:
        raise RigError(f"vehicle rig {name!r}: preset must be one of {', '.join(CAR_PRESETS)}, got {preset!r}")
    if name not in scene.objects:
        raise RigError(f"vehicle rig {name!r}: no chassis object {name!r} in scene {scene.name!r}")
    frame_start = scene.frame_start if frame_start is None else int(frame_start)
    frame_end = scene.frame_end if frame_end is None else int(frame_end)
    if frame_end <= frame_start:
        raise RigError(f"vehicle rig {name!r}: the frame range {frame_start}-{frame_end} is empty")
    if int(substeps) < 1:
        raise RigError(f"vehicle rig {name!r}: substeps must be >= 1, got {substeps}")
    fps = scene.render.fps / scene.render.fps_base
    chassis = scene.objects[name]  # the owner: chassis object or armature, holding controls and settings
    chassis_world = world(scene, rig.part(rig.chassis), frame_start, rigid=True)
    forward = chassis_world[:3, :3] @ np.array(FORWARD_AXES[rig.forward])
    if math.hypot(forward[0], forward[1]) < 0.5:
        raise RigError(f"vehicle rig {name!r}: the forward axis {rig.forward} of the chassis points "
                       f"{'up' if forward[2] > 0 else 'down'} at frame {frame_start}; pick the axis the car drives along")
    theta = math.atan2(forward[1], forward[0])
    ahead = np.array([math.cos(theta), math.sin(theta), 0.0])
    left = np.array([-math.sin(theta), math.cos(theta), 0.0])

    matrices, centres, radii = [], [], []
    for key, part_name in rig.wheels:
        part = rig.part(part_name)
        if not rig.armature and part_name not in scene.objects:
            raise RigError(f"vehicle rig {name!r}: the {WHEEL_LABELS[key]} wheel {part_name!r} is not in scene "
                           f"{scene.name!r}")
        centre, r = shape(scene, part, frame_start, left, name, f"{WHEEL_LABELS[key]} wheel")
        matrices.append(world(scene, part, frame_start, rigid=True))
        centres.append(centre)
        radii.append(r)
    centres_arr, radii_arr = np.array(centres), np.array(radii)
    offsets = _offsets(np.array(matrices), centres_arr)
    rear = 0.5 * (centres_arr[0] + centres_arr[1])
    front = 0.5 * (centres_arr[2] + centres_arr[3])
    wheelbase = float((front - rear) @ ahead)
    if wheelbase <= 0:
        raise RigError(f"vehicle rig {name!r}: the front wheels ({rig.wheel('wheel_fl')}, {rig.wheel('wheel_fr')}) "
                       f"are not ahead of the rear ones along the forward axis {rig.forward}; check the forward axis "
                       f"or the wheel names")
    tracks = [float((centres_arr[0] - centres_arr[1]) @ left), float((centres_arr[2] - centres_arr[3]) @ left)]
    for (a, b), track in zip((("wheel_rl", "wheel_rr"), ("wheel_fl", "wheel_fr")), tracks):
        if track <= 0:
            raise RigError(f"vehicle rig {name!r}: wheel {rig.wheel(a)!r} ({WHEEL_LABELS[a]}) is not left of "
                           f"{rig.wheel(b)!r} ({WHEEL_LABELS[b]}) seen along the forward axis {rig.forward}; "
                           f"swap them or check the forward axis")

    base = vehicle_presets()[preset]
    spec = dataclasses.replace(base, name=f"{base.name} ({name})", wheelbase=wheelbase, track=0.5 * sum(tracks),
                               wheel_radius=0.5 * float(radii_arr[0] + radii_arr[1]),
                               com_ahead_of_rear_axle=base.com_ahead_of_rear_axle / base.wheelbase * wheelbase)
    ground = float(rear[2]) - spec.wheel_radius
    com = rear + spec.com_ahead_of_rear_axle * ahead
    trailer_reading = None
    if isinstance(spec, CarTrailerSpec):
        spec, trailer_reading = _trailer_geometry(scene, rig, preset, spec, frame_start, rear, ahead, ground)
    steps = (frame_end - frame_start) * int(substeps)
    dt = 1.0 / (fps * int(substeps))
    times = 0.5 * dt * np.arange(2 * steps + 1)
    controls, warnings = read_controls(chassis, spec, frame_start, fps, times)
    path = read_path(scene, chassis, frame_start)
    path = None if path is None else path[:, :2]
    path_speed: Curve | float = 0.0
    limits, drift = None, None
    if path is None and DRIFT_ANGLE in chassis:
        warnings.append(f"vehicle rig {name!r}: property {DRIFT_ANGLE!r} is read only by a car following a path "
                        f"({PATH_PROPERTY!r}); it is ignored")
    if path is not None:
        path_speed = read_path_speed(chassis, frame_start, fps, times)
        limits = driver_limits(chassis, frame_start, fps, times, path_speed)
        drift = read_drift(chassis, frame_start, fps, times, trailer_reading is not None)
        if drift is not None and limits is None:  # drifting is driving: the driver's default limits
            limits = Limits(top_speed=float(max(path_speed.values) if isinstance(path_speed, Curve) else path_speed))
        replaced = [c for c, _ in controls if c in ("steer", "drive_torque")]
        if replaced:
            warnings.append(f"vehicle rig {name!r}: follows path {chassis[PATH_PROPERTY]!r}; its keyed "
                            f"{' and '.join(replaced)} are replaced by the path controller")
    speed = float(reference.start_value(chassis, f'["{INITIAL_SPEED}"]', 0, frame_start)) \
        if INITIAL_SPEED in chassis.keys() else 0.0
    vehicle = Vehicle("car" if trailer_reading is None else "car_trailer", spec,
                      position=(float(com[0]), float(com[1]), spec.com_height),
                      orientation=(math.cos(theta / 2), 0.0, 0.0, math.sin(theta / 2)),
                      velocity=(0.0, 0.0, 0.0, speed, 0.0, 0.0), controls=controls, name=name,
                      hitch_angle=0.0 if trailer_reading is None else trailer_reading.hitch_angle)
    twist = chassis_twist(scene, chassis, rig.part(rig.chassis), frame_start, fps)
    if twist is not None:  # the keyed chassis' speed along its heading at the centre of mass
        speed = float((twist[3:] + np.cross(twist[:3], com - chassis_world[:3, 3])) @ ahead)
        if vehicle.type == "car" and path is None:  # and its yaw rate, as far as its keyed steering allows
            speed = car_start_speed(compile_car(vehicle), speed, float(twist[2]))
        vehicle = dataclasses.replace(vehicle, velocity=(0.0, 0.0, 0.0, speed, 0.0, 0.0))

    body = np.eye(4)  # the solver's chassis frame at the start, lifted onto the rig's ground
    body[:3, :3] = np.column_stack([ahead, left, (0.0, 0.0, 1.0)])
    body[:3, 3] = (com[0], com[1], ground + spec.com_height)
    to_body = np.linalg.inv(body)
    local = np.array([to_body @ m for m in matrices])
    local[:, :3, 3] = centres_arr @ to_body[:3, :3].T + to_body[:3, 3]
    steering = tuple((key, to_body @ world(scene, rig.part(part), frame_start, rigid=True))
                     for key, part in rig.steering)
    return RigReading(rig, vehicle, frame_start, frame_end, fps, int(substeps), ground, to_body @ chassis_world,
                      local[:, :3, 3], local[:, :3, :3], radii_arr, offsets, tuple(warnings), path, path_speed,
                      trailer_reading, steering, limits, drift)


def _offsets(matrices: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(P, 3) origins of parts with rigid world matrices (P, 4, 4) from their centres (P, 3), in part axes."""
    return np.einsum("pji,pj->pi", matrices[:, :3, :3], matrices[:, :3, 3] - centres)


def _trailer_geometry(scene: bpy.types.Scene, rig: VehicleRig, preset: str, base: CarTrailerSpec, frame: int,
                      rear: np.ndarray, ahead: np.ndarray, ground: float) -> tuple[CarTrailerSpec, TrailerReading]:
    """The preset with the trailer's drawbar, track and wheel radius measured from the rig, the hitch angle it
    stands at, and where the trailer's parts sit on its solver frame. The trailer's heading is its drawbar's,
    from the axle centre (between its wheels) to the tow ball, measured in the ground plane: the axle must stand
    behind the ball (hitch angle within +-90 degrees) with the wheels left and right of the drawbar."""
    name = rig.owner
    parts = dict(rig.trailer)
    missing = [k for k in TRAILER_LABELS if k not in parts]
    if missing:
        listed = ", ".join(f"{TRAILER_LABELS[k]} ({k})" for k in missing)
        raise RigError(f"vehicle rig {name!r}: preset {preset!r} tows a trailer, but the rig has no {listed}; "
                       f"name them like 'Trailer', 'Trailer wheel L', 'Trailer wheel R' or pick a car preset")
    body_world = world(scene, rig.part(parts["trailer"]), frame, rigid=True)
    wheels = [rig.part(parts[k]) for k in TRAILER_WHEELS]
    rigid = np.array([world(scene, p, frame, rigid=True) for p in wheels])
    centres = np.array([shape(scene, p, frame, np.cross((0.0, 0.0, 1.0), ahead), name, TRAILER_LABELS[k])[0]
                        for p, k in zip(wheels, TRAILER_WHEELS)])
    axle = 0.5 * (centres[0] + centres[1])
    ball = rear - base.hitch_behind_rear_axle * ahead
    drawbar = (ball - axle)[:2]
    length = float(np.linalg.norm(drawbar))
    between = f"the trailer's axle (between {wheels[0].key!r} and {wheels[1].key!r})"
    where = f"the tow ball {base.hitch_behind_rear_axle:g} m behind the rear axle at frame {frame}"
    if not length > 0:
        raise RigError(f"vehicle rig {name!r}: {between} stands on {where}; it must stand behind it")
    beta = math.atan2(float(drawbar[1]), float(drawbar[0]))
    hitch = math.remainder(math.atan2(float(ahead[1]), float(ahead[0])) - beta, 2 * math.pi)
    if not abs(hitch) < MAX_START_HITCH_ANGLE:
        raise RigError(f"vehicle rig {name!r}: {between} must stand behind {where}; its drawbar is "
                       f"{math.degrees(hitch):.4g} degrees off the car's centre line, beyond the "
                       f"{math.degrees(MAX_START_HITCH_ANGLE):g} a trailer can start at")
    heading = np.array([math.cos(beta), math.sin(beta), 0.0])
    left = np.array([-math.sin(beta), math.cos(beta), 0.0])
    across = centres[0] - centres[1]
    track = float(across @ left)
    if track <= 0:
        raise RigError(f"vehicle rig {name!r}: trailer wheel {wheels[0].key!r} is not left of {wheels[1].key!r} "
                       f"seen along the trailer's drawbar (from its axle to the tow ball) at frame {frame}")
    skew = math.degrees(math.atan2(float(across @ heading), track))
    if abs(skew) > SQUARE_TOLERANCE:
        raise RigError(f"vehicle rig {name!r}: trailer wheels {wheels[0].key!r} and {wheels[1].key!r} must sit left "
                       f"and right of the trailer's drawbar (from their axle centre to {where}); their axle is "
                       f"{skew:.3g} degrees off square to it (the tow ball is not on the trailer's centre line)")
    radii = np.array([shape(scene, p, frame, left, name, TRAILER_LABELS[k])[1] for p, k in zip(wheels,
                                                                                             TRAILER_WHEELS)])
    spec = dataclasses.replace(base, hitch_to_trailer_axle=length, trailer_track=track,
                               trailer_wheel_radius=float(radii.mean()),
                               trailer_com_ahead_of_axle=base.trailer_com_ahead_of_axle / base.hitch_to_trailer_axle
                               * length)
    frame_matrix = np.eye(4)  # the solver's trailer frame at the start (centre of mass, heading beta)
    frame_matrix[:3, :3] = np.column_stack([heading, left, (0.0, 0.0, 1.0)])
    frame_matrix[:3, 3] = (*(axle[:2] + spec.trailer_com_ahead_of_axle * heading[:2]), ground + spec.trailer_com_height)
    to_frame = np.linalg.inv(frame_matrix)
    local = np.array([to_frame @ m for m in rigid])
    mounts = centres @ to_frame[:3, :3].T + to_frame[:3, 3]
    return spec, TrailerReading(to_frame @ body_world, mounts, local[:, :3, :3], radii, _offsets(rigid, centres),
                                hitch)


def read_path_speed(chassis: bpy.types.Object, frame_start: float, fps: float, times: np.ndarray) -> Curve | float:
    """The path_speed property (m/s): sampled into a Curve when keyed, else its value."""
    fcurve = compat.find_fcurve(reference.original_channels(chassis), f'["{PATH_SPEED}"]', 0)
    if fcurve is not None:
        return sample_curve(fcurve, frame_start, fps, times, 1.0)
    if PATH_SPEED not in chassis.keys():
        raise RigError(f"vehicle rig {chassis.name!r}: it follows path {chassis[PATH_PROPERTY]!r} but has no "
                       f"{PATH_SPEED!r} property (target speed, m/s); add and key one")
    try:
        return float(chassis[PATH_SPEED])
    except (TypeError, ValueError):
        raise RigError(f"vehicle rig {chassis.name!r}: property {PATH_SPEED!r} must be a number, "
                       f"got {chassis[PATH_SPEED]!r}") from None


def read_drift(chassis: bpy.types.Object, frame_start: float, fps: float, times: np.ndarray,
               trailer: bool) -> Curve | float | None:
    """The drift_angle property (rad): sampled into a Curve when keyed, its value when set, None when absent.
    Raises RigError for a value outside [0, MAX_DRIFT] (naming the frame) or a car with a trailer."""
    fcurve = compat.find_fcurve(reference.original_channels(chassis), f'["{DRIFT_ANGLE}"]', 0)
    if fcurve is None and DRIFT_ANGLE not in chassis:
        return None
    where = f"vehicle rig {chassis.name!r}: property {DRIFT_ANGLE!r}"
    if trailer:
        raise RigError(f"{where}: a car towing a trailer does not drift (its trailer rolls without slipping); "
                       f"remove the property or pick a car preset")
    if fcurve is not None:
        value: Curve | float = sample_curve(fcurve, frame_start, fps, times, 1.0)
        samples = np.asarray(value.values, dtype=float)
    else:
        try:
            value = float(chassis[DRIFT_ANGLE])
        except (TypeError, ValueError):
            raise RigError(f"{where} must be a number of rad, got {chassis[DRIFT_ANGLE]!r}") from None
        samples = np.array([value])
    bad = np.flatnonzero(~((samples >= 0.0) & (samples <= MAX_DRIFT)))
    if len(bad):
        at = "" if fcurve is None else f" at frame {frame_start + times[bad[0]] * fps:g}"
        raise RigError(f"{where} must lie between 0 (no drift) and {MAX_DRIFT:.4g} rad "
                       f"({math.degrees(MAX_DRIFT):g} degrees){at}, got {samples[bad[0]]!r} rad")
    return value


def driver_limits(chassis: bpy.types.Object, frame_start: float, fps: float, times: np.ndarray,
                  path_speed: Curve | float) -> Limits | Callable[[float], Limits] | None:
    """The driver's Limits from the DRIVER_PROPERTIES (unset ones: Limits' defaults), its top speed the highest
    path_speed; limits(t) when any of them is keyed (sampled at `times`, s after frame_start); None when the
    chassis has no lateral_accel (pure pursuit). Raises RigError for a limit that is not positive."""
    if "lateral_accel" not in chassis:
        return None
    channels = reference.original_channels(chassis)
    values: dict[str, Curve | float] = {}
    for prop, field in DRIVER_PROPERTIES.items():
        fcurve = compat.find_fcurve(channels, f'["{prop}"]', 0)
        if fcurve is not None:
            values[field] = sample_curve(fcurve, frame_start, fps, times, 1.0)
        elif prop in chassis:
            values[field] = float(chassis[prop])
    top = float(max(path_speed.values) if isinstance(path_speed, Curve) else path_speed)
    samples = [v for curve in values.values() if isinstance(curve, Curve) for v in curve.values]
    if min([*samples, *(v for v in values.values() if not isinstance(v, Curve)), top]) <= 0:
        raise RigError(f"vehicle rig {chassis.name!r}: the driver's limits ({', '.join(DRIVER_PROPERTIES)}) "
                       f"and path_speed must be > 0")
    if not samples:
        return Limits(**values, top_speed=top)
    signals = {field: signal(v) for field, v in values.items()}
    return lambda t: Limits(**{field: u(t) for field, u in signals.items()}, top_speed=top)


# ----------------------------------------------------------------------------------------------
# Authoring


def box_mesh(name: str, size: tuple[float, float, float]) -> bpy.types.Mesh:
    hx, hy, hz = (0.5 * s for s in size)
    verts = [(sx * hx, sy * hy, sz * hz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    return mesh


def wheel_mesh(name: str, radius: float, width: float, segments: int = 24) -> bpy.types.Mesh:
    """A cylinder with its axle along local Y."""
    verts = []
    for y in (-0.5 * width, 0.5 * width):
        for i in range(segments):
            a = 2 * math.pi * i / segments
            verts.append((radius * math.cos(a), y, radius * math.sin(a)))
    faces = [(i, (i + 1) % segments, segments + (i + 1) % segments, segments + i) for i in range(segments)]
    faces += [tuple(reversed(range(segments))), tuple(range(segments, 2 * segments))]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    return mesh


def free_name(name: str) -> str:
    """`name`, or the first of 'name.001', 'name.002', ... no object has yet (Blender's own numbering)."""
    if name not in bpy.data.objects:
        return name
    i = 1
    while f"{name}.{i:03d}" in bpy.data.objects:
        i += 1
    return f"{name}.{i:03d}"


def build_car_rig(scene: bpy.types.Scene, preset: str = "sedan", name: str = "Car",
                  location: tuple[float, float, float] = (0.0, 0.0, 0.0), slalom: bool = True) -> VehicleRig:
    """Add a box chassis named `name` (made unique) with four cylinder wheels (children, quaternion rotation,
    named after the chassis) sized from `preset`, standing on the plane z = location.z, facing +X (with a box
    trailer on two wheels behind it for a car-with-trailer preset). With `slalom`, key on the chassis a drive
    torque that accelerates it for 3 s and a steer that weaves through a slalom. Returns the rig."""
    if preset not in CAR_PRESETS:
        raise RigError(f"car preset must be one of {', '.join(CAR_PRESETS)}, got {preset!r}")
    spec = vehicle_presets()[preset]
    r, l, b, w = spec.wheel_radius, spec.wheelbase, spec.com_ahead_of_rear_axle, spec.track
    name = free_name(name)  # the chassis' name: its parts are named after it
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    chassis = bpy.data.objects.new(name, box_mesh(f"{name} body", (l + 2.2 * r, w, 0.8 * spec.com_height + r)))
    chassis.location = (location[0] + b, location[1], location[2] + spec.com_height)  # origin at the COM
    collection.objects.link(chassis)
    chassis[PRESET_PROPERTY] = preset
    chassis[FORWARD_PROPERTY] = "+X"
    wheels = []
    for key, (x, y) in zip(WHEELS, ((0.0, 0.5 * w), (0.0, -0.5 * w), (l, 0.5 * w), (l, -0.5 * w))):
        wheel = bpy.data.objects.new(f"{name} {key}", wheel_mesh(f"{name} {key}", r, 0.6 * r))
        wheel.rotation_mode = "QUATERNION"  # bounded channels keep float32 keys exact to ~1e-7 rad
        wheel.parent = chassis
        wheel.location = (x - b, y, r - spec.com_height)
        collection.objects.link(wheel)
        wheels.append((key, wheel.name))
    trailer = _build_trailer(collection, chassis, spec, name) if isinstance(spec, CarTrailerSpec) else ()
    if slalom:
        _key_slalom(chassis, spec, scene.frame_start, scene.render.fps / scene.render.fps_base)
    return VehicleRig(chassis.name, tuple(wheels), "+X", trailer=trailer)


def _build_trailer(collection: bpy.types.Collection, chassis: bpy.types.Object, spec: CarTrailerSpec,
                   name: str) -> tuple[tuple[str, str], ...]:
    """A box trailer (a child of the chassis, in line behind it) on two cylinder wheels (its children)."""
    d, L, c = spec.hitch_behind_rear_axle, spec.hitch_to_trailer_axle, spec.trailer_com_ahead_of_axle
    r, w, h = spec.trailer_wheel_radius, spec.trailer_track, spec.trailer_com_height
    axle_x = -spec.com_ahead_of_rear_axle - d - L  # in the chassis frame (origin at the car's centre of mass)
    body = bpy.data.objects.new(f"{name} trailer", box_mesh(f"{name} trailer", (0.85 * L, w, 0.6 * h)))
    body.parent = chassis
    body.location = (axle_x + c, 0.0, h - spec.com_height)  # origin at the trailer's centre of mass
    collection.objects.link(body)
    parts = [("trailer", body.name)]
    for key, y, side in (("trailer_wheel_l", 0.5 * w, "L"), ("trailer_wheel_r", -0.5 * w, "R")):
        wheel = bpy.data.objects.new(f"{name} trailer wheel {side}", wheel_mesh(f"{name} trailer {side}", r, 0.6 * r))
        wheel.rotation_mode = "QUATERNION"
        wheel.parent = body
        wheel.location = (-c, y, r - h)
        collection.objects.link(wheel)
        parts.append((key, wheel.name))
    return tuple(parts)


def _key_slalom(chassis: bpy.types.Object, spec: CarSpec, frame_start: int, fps: float) -> None:
    """Drive torque ramped up for 3 s (about 0.35 g), then coasting; steer weaving from 1.5 s, period 2.4 s."""
    drive = 0.35 * 9.81 * spec.mass * spec.wheel_radius
    chassis["drive_torque"] = 0.0
    chassis["steer"] = 0.0
    for t, value in ((0.0, 0.0), (0.5, drive), (3.0, drive), (3.5, 0.0)):
        chassis["drive_torque"] = value
        chassis.keyframe_insert('["drive_torque"]', frame=frame_start + t * fps)
    amplitude = min(0.1, 0.5 * spec.max_steer)
    for i, value in enumerate((0.0, 0.5, 0.0, -1.0, 0.0, 1.0, 0.0, -1.0, 0.0, 0.5, 0.0)):
        chassis["steer"] = value * amplitude
        chassis.keyframe_insert('["steer"]', frame=frame_start + (1.5 + 0.6 * i) * fps)
    chassis["drive_torque"] = 0.0
    chassis["steer"] = 0.0

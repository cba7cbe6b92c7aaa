"""Mechanism files (``format = 1``, TOML): read, validate and write a Mechanism; find the presets.

Owns the file format of DESIGN.md "Mechanism files" and the checks every Mechanism must pass
(`validate_mechanism`, usable for mechanisms built in code or by the bridge too). It does not own the
data types (model.py) or any dynamics. Every error is a MechanismError whose message names the file,
the table, the entry (by name, or by number when it has no name) and the field, and says what was
expected and what came.

The format, one table per kind of element (units SI, Z up, quaternions w x y z)::

    format = 1                        # required; no other version exists
    [model]                           # required
    name = "single pendulum"          # required
    gravity = [0.0, 0.0, -9.81]       # optional, this is the default

    [[body]]                          # one or more
    name = "bob"                      # required, unique, not "world"
    mass = 1.0                        # required, finite, >= 0
    position = [0.0, 0.0, -1.0]       # world position of the body frame at the reference (default 0)
    orientation = [1.0, 0.0, 0.0, 0.0]  # world orientation at the reference; default identity
    com = [0.0, 0.0, 0.0]             # centre of mass in body axes (default 0)
    inertia = [0.001, 0.001, 0.001]   # about the COM in body axes: 3 principal moments
                                      # or 6 values Ixx Iyy Izz Ixy Ixz Iyz (default 0: point mass)

    [[joint]]
    name = "hinge"                    # required, unique
    type = "revolute"                 # required: one of model.JOINT_TYPES
    parent = "world"                  # required: a body name or "world"
    child = "bob"                     # required: a body name or "world", not the parent
    anchor = [0.0, 0.0, 0.0]          # world point at the reference; required unless the type is
                                      # prismatic, fixed or free
    axis = [1.0, 0.0, 0.0]            # world direction; required for revolute prismatic cylindrical
                                      # universal planar; normalised on load
    axis2 = [0.0, 1.0, 0.0]           # universal: second axis; planar: in-plane direction (required
                                      # for those two, refused for the others)
    q0 = 0.5                          # coordinates relative to the reference, order of model.JOINT_DOFS;
    v0 = 0.0                          # a number is accepted for a one-dof joint; absent means zeros
    lower = -1.0                      # optional per-dof limits (lower may be -inf, upper +inf)
    upper = 1.0
    stiffness = 0.0                   # optional spring towards `rest` (per dof) and viscous damping
    rest = 0.0
    damping = 0.0
    motor = {mode = "velocity", target_velocity = 2.0, gain = 5.0}
    # or motor = {mode = "torque", torque = {times = [0.0, 1.0], values = [0.0, 2.0], interpolation = "linear"}}
    # prescribed = {times = [...], values = [...], interpolation = "linear" | "cubic"}

    [[spring]]  name, body_a, body_b (bodies or "world"), point_a, point_b (body frames),
                stiffness, rest_length, damping
    [[force]]   name, body, point (body frame), force (world axes), scale (optional curve)

    [[collider]]                      # contact shapes, used by the 'maximal' method (docs/collision.md)
    name = "ground"                   # required, unique
    body = "world"                    # required: a body name or "world" (fixed)
    shape = "plane"                   # required: one of model.COLLIDER_SHAPES
    size = [0.25]                     # per shape (model.COLLIDER_SIZES): sphere [radius] (a bare number
                                      # is accepted), box [hx, hy, hz] half extents, capsule and cylinder
                                      # [radius, half_length] along the collider's z; absent for plane, hull
    position = [0.0, 0.0, 0.0]        # collider frame in the body frame (world frame for "world"); default 0
    orientation = [1.0, 0.0, 0.0, 0.0]  # default identity; a plane is the frame's z = 0 plane, normal +z
    vertices = [[0.0, 0.0, 0.0], ...] # hull only: >= 4 points in the collider frame spanning a volume
    friction = 0.5                    # Coulomb coefficient, >= 0 (default 0.5)

    [vehicle]                         # optional: the input of the 'vehicle' method (vehicles/spec.py)
    type = "car"                      # required: one of vehicles.spec.VEHICLE_TYPES
    name = "sedan"                    # optional, default the [model] name
    preset = "sedan"                  # optional: start from vehicles.spec.PRESETS[preset] (same type)
    position = [0.0, 0.0, 0.55]       # world position of the body frame at t = 0 (default 0)
    orientation = [1.0, 0.0, 0.0, 0.0]  # world orientation at t = 0 (default identity)
    velocity = [0.0, 0.0, 0.0, 10.0, 0.0, 0.0]  # body twist at t = 0: wx wy wz vx vy vz (default 0)
    current = [0.0, 0.0, 0.0]         # uniform world water velocity, boats (default 0)
    hitch_angle = 0.0                 # car_trailer: hitch angle theta - beta at t = 0, rad, |.| < pi/2 (default 0)
    [vehicle.parameters]              # fields of the type's spec dataclass (CarSpec, BoatSpec, ...);
    mass = 1575.0                     # they override the preset; without a preset all are required
    [vehicle.controls]                # names from vehicles.spec.CONTROL_NAMES[type]; absent means 0
    drive_torque = 500.0              # a constant, or a curve table as for motors:
    steer = {times = [0.0, 2.0], values = [0.0, 0.3], interpolation = "cubic"}

Rules worth knowing:
- The reference configuration (body poses) must be assembled: a joint that closes a loop has one
  world anchor shared by both bodies, so the file itself fixes where it sits on each body. q = 0 is
  the reference for every joint, loop joints included; q0 and v0 of all joints (tree or loop) should
  describe one consistent state, because the compiler, not the file, decides which joints close loops.
- A curve needs at least one key, strictly increasing times and as many values as times.
- Quaternions within 1e-6 of unit norm and non-zero axes are normalised; other quaternions are refused.
- Inertia products are entries of the tensor, I = [[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]
  (not their negatives); the tensor must be positive semi-definite and its principal moments must
  satisfy the triangle inequality A + B >= C of a rigid body.
- Zero mass and zero inertia are accepted: a massless body, for example a marker leaf or the cross of a
  universal joint. A massless leaf that is free to move gives a singular mass matrix to a tree method;
  refusing or fixing it is the compiler's job, not the file's.
- Every body must be reachable from "world" through joints (either direction); a body may be the child
  of two joints (that is a loop). Springs and forces do not connect bodies.
- A file with a [vehicle] table may have no [[body]] entries (a vehicle-only file). The tree and maximal
  methods ignore the vehicle, the vehicle method ignores the bodies; `check_method` refuses a method
  that finds nothing to simulate. Vehicle messages name the table "[vehicle]" and nested fields by
  their dotted path ('parameters.mass', 'controls.steer.times'); the spec's own checks (VehicleError)
  come back as MechanismErrors naming the file and "[vehicle.parameters]".
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import tomllib
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .mass import inertia_matrix
from .model import (
    JOINT_DOFS,
    JOINT_TYPES,
    WORLD,
    COLLIDER_SHAPES,
    COLLIDER_SIZES,
    Body,
    Collider,
    Curve,
    Force,
    Joint,
    Mechanism,
    MechanismError,
    Motor,
    Spring,
)
from .vehicles.spec import CONTROL_NAMES, PRESETS, VEHICLE_TYPES, Spec, Vehicle, VehicleError

FORMAT_VERSION = 1
PRESET_DIR = Path(__file__).resolve().parents[2] / "presets"
VEHICLE_PRESET_DIR = PRESET_DIR / "vehicles"  # vehicle-only files, apart from the mechanism presets

INTERPOLATIONS = ("linear", "cubic")
MOTOR_MODES = ("torque", "velocity")
QUATERNION_TOLERANCE = 1e-6  # |norm - 1| accepted (and normalised away) for orientations
_EXACT_UNIT = 1e-15  # norms this close to 1 are kept as written, so load/dump/load is exact
_ZERO_LENGTH = 1e-12
_PERPENDICULAR = 1e-6  # |cos| allowed between a planar joint's normal and its in-plane axis

_AXIS_TYPES = frozenset({"revolute", "prismatic", "cylindrical", "universal", "planar"})
_AXIS2_TYPES = frozenset({"universal", "planar"})
_ANCHOR_TYPES = frozenset({"revolute", "cylindrical", "universal", "planar", "ball"})

_TOP_KEYS = ("format", "model", "vehicle", "body", "joint", "spring", "force", "collider")
_MODEL_KEYS = ("name", "gravity")
_BODY_KEYS = tuple(f.name for f in dataclasses.fields(Body))
_JOINT_KEYS = tuple(f.name for f in dataclasses.fields(Joint))
_SPRING_KEYS = tuple(f.name for f in dataclasses.fields(Spring))
_FORCE_KEYS = tuple(f.name for f in dataclasses.fields(Force))
_COLLIDER_KEYS = tuple(f.name for f in dataclasses.fields(Collider))
_CURVE_KEYS = tuple(f.name for f in dataclasses.fields(Curve))
_MOTOR_KEYS = {"torque": ("mode", "torque"), "velocity": ("mode", "target_velocity", "gain")}
_ENTRY_TABLES = ("body", "joint", "spring", "force", "collider")
_VEHICLE_KEYS = ("type", "name", "preset", "position", "orientation", "velocity", "current", "hitch_angle",
                 "parameters", "controls")
_VEHICLE_VECTORS = {"position": 3, "orientation": 4, "velocity": 6, "current": 3}
_VEHICLE = "[vehicle]"
_PARAMETER_SIZES = {"inertia": (3, 6)}
_SIZE_NAMES = {"sphere": "radius", "box": "half extents hx, hy, hz", "capsule": "radius, half_length",
               "cylinder": "radius, half_length"}
_FLAT_HULL = 1e-9  # a hull's vertices must spread at least this fraction of their extent in every direction  # spec tuples of variable length: the lengths a file may give

_REQUIRED = object()


# ----------------------------------------------------------------------------------------------
# Public interface


def load_mechanism(path: str | Path) -> Mechanism:
    """Read and validate a mechanism file.

    Parameters
    ----------
    path : str or Path
        A ``format = 1`` TOML file. Messages name it as given.

    Returns
    -------
    Mechanism
        Validated, with normalised axes and orientations, and ``source`` set to ``str(path)``.

    Raises
    ------
    MechanismError
        The text is not TOML or not a valid mechanism (the message says where and why).
    OSError
        The file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    return loads_mechanism(text, source=str(path))


def loads_mechanism(text: str, source: str = "<string>") -> Mechanism:
    """Parse and validate the text of a mechanism file; `source` names it in messages.

    Raises
    ------
    MechanismError
        As `load_mechanism`.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MechanismError(f"{source}: not valid TOML: {exc}") from None
    return validate_mechanism(_parse_document(data, source))


def dumps_mechanism(mech: Mechanism, header: str | None = None) -> str:
    """The ``format = 1`` TOML text of a mechanism, validated first.

    Parameters
    ----------
    mech : Mechanism
        Written as `validate_mechanism` returns it, so ``loads_mechanism(dumps_mechanism(m))``
        equals ``validate_mechanism(m)`` (floats are written with ``repr``, which round-trips).
    header : str, optional
        Written first as ``#`` comment lines.

    Raises
    ------
    MechanismError
        `mech` is not valid.
    """
    mech = validate_mechanism(mech)
    lines: list[str] = []
    if header:
        lines += [("# " + line).rstrip() for line in header.splitlines()]
        lines.append("")
    lines += [f"format = {FORMAT_VERSION}", "", "[model]"]
    lines += _assignments({"name": mech.name, "gravity": mech.gravity})
    if mech.vehicle is not None:
        lines += _vehicle_lines(mech.vehicle)
    for table, entries in (("body", mech.bodies), ("joint", mech.joints),
                           ("spring", mech.springs), ("force", mech.forces), ("collider", mech.colliders)):
        for entry in entries:
            lines += ["", f"[[{table}]]"]
            lines += _assignments(_entry_fields(entry))
    return "\n".join(lines) + "\n"


def save_mechanism(mech: Mechanism, path: str | Path, header: str | None = None) -> None:
    """Validate `mech` and write it to `path` as ``format = 1`` TOML (see `dumps_mechanism`)."""
    text = dumps_mechanism(mech, header)
    Path(path).write_text(text, encoding="utf-8")


def list_presets() -> list[str]:
    """Names of the shipped mechanism presets (file stems in PRESET_DIR, not its subfolders), sorted.

    Vehicle presets live in VEHICLE_PRESET_DIR and are listed by `list_vehicle_presets`: they have no
    bodies to build, so whatever builds mechanism presets never sees them.
    """
    return _stems(PRESET_DIR)


def preset_path(name: str) -> Path:
    """The file of mechanism preset `name` ("four_bar" or "four_bar.toml").

    Raises
    ------
    FileNotFoundError
        No such preset; the message lists the ones there are.
    """
    return _preset_file(PRESET_DIR, name)


def list_vehicle_presets() -> list[str]:
    """Names of the shipped vehicle presets (file stems in VEHICLE_PRESET_DIR), sorted."""
    return _stems(VEHICLE_PRESET_DIR)


def vehicle_preset_path(name: str) -> Path:
    """The file of vehicle preset `name` ("sedan" or "sedan.toml").

    Raises
    ------
    FileNotFoundError
        No such preset; the message lists the ones there are.
    """
    return _preset_file(VEHICLE_PRESET_DIR, name)


def _stems(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.toml"))


def _preset_file(directory: Path, name: str) -> Path:
    path = directory / (name if name.endswith(".toml") else name + ".toml")
    if not path.is_file():
        raise FileNotFoundError(
            f"no preset named {name!r} in {directory} (available: {', '.join(_stems(directory))})")
    return path


def check_method(mech: Mechanism, method: str) -> None:
    """Refuse a method that finds nothing to simulate in `mech`, naming its source and what is missing.

    The 'vehicle' method needs a [vehicle] table; every other method needs [[body]] entries (a
    vehicle-only file has none). Method names are not checked here: the integrator registry does that.

    Raises
    ------
    MechanismError
        `mech` has nothing for `method`.
    """
    if method == "vehicle" and mech.vehicle is None:
        raise MechanismError(
            f"{mech.source}: no [vehicle] table: the 'vehicle' method simulates the vehicle a file describes "
            f"in [vehicle] (type, parameters, controls), and mechanism {mech.name!r} has none; its "
            f"{len(mech.bodies)} [[body]] entries are for the other methods (tree)")
    if method != "vehicle" and not mech.bodies:
        kind = f" (a {mech.vehicle.type!r})" if mech.vehicle is not None else ""
        raise MechanismError(
            f"{mech.source}: no [[body]] entries for the {method!r} method: this file describes only a "
            f"vehicle{kind} in its [vehicle] table; simulate it with the 'vehicle' method")


def validate_mechanism(mech: Mechanism) -> Mechanism:
    """Check a Mechanism from any source and return it with unit axes and orientations.

    Checks values (finite numbers, non-negative masses, a positive semi-definite inertia obeying the
    triangle inequality, unit quaternions, non-zero axes, coordinate counts per joint type, limits,
    curves, motors, the vehicle's vectors, parameters and controls) and structure (unique names,
    known bodies, no self-joints, every body connected to "world" through joints) and colliders (shape,
    sizes, a hull spanning a volume). Messages read
    "<source>: [[joint]] 'hinge': field 'axis' must be ..., got ...", with ``mech.source`` as the source.

    Returns
    -------
    Mechanism
        Equal to `mech` except that orientations and axes are normalised (no change when they
        already are to 1e-15, so validating twice gives the same object values).

    Raises
    ------
    MechanismError
        The first problem found.
    """
    src = mech.source
    _check_name(src, "[model]", "name", mech.name)
    _check_vector(src, "[model]", "gravity", mech.gravity, 3)
    if not mech.bodies and mech.vehicle is None:
        raise MechanismError(f"{src}: no [[body]] entries; a mechanism needs at least one body "
                             f"(or a {_VEHICLE} table, for the vehicle method)")
    vehicle = None if mech.vehicle is None else _checked_vehicle(src, mech.vehicle)
    bodies = tuple(_checked_body(src, i, b) for i, b in enumerate(mech.bodies))
    _check_unique_names(src, "body", mech.bodies)
    body_names = {b.name for b in bodies}
    joints = tuple(_checked_joint(src, i, j, body_names) for i, j in enumerate(mech.joints))
    _check_unique_names(src, "joint", mech.joints)
    for i, spring in enumerate(mech.springs):
        _check_spring(src, i, spring, body_names)
    _check_unique_names(src, "spring", mech.springs)
    for i, force in enumerate(mech.forces):
        _check_force(src, i, force, body_names)
    _check_unique_names(src, "force", mech.forces)
    colliders = tuple(_checked_collider(src, i, c, body_names) for i, c in enumerate(mech.colliders))
    _check_unique_names(src, "collider", mech.colliders)
    _check_connected(src, bodies, joints)
    return dataclasses.replace(mech, bodies=bodies, joints=joints, colliders=colliders, vehicle=vehicle)


# ----------------------------------------------------------------------------------------------
# Semantic checks on Mechanism values


def _where(table: str, index: int, name: object) -> str:
    """How messages name entry `index` (0-based) of `table`: by its name, or by number if it has none."""
    if isinstance(name, str) and name:
        return f"[[{table}]] {name!r}"
    return f"[[{table}]] number {index + 1}"


def _fail(src: str, where: str, field: str, expected: str, got: object) -> MechanismError:
    return MechanismError(f"{src}: {where}: field '{field}' must be {expected}, got {_brief(got)}")


def _is_number(x: object) -> bool:
    """A real number (numpy scalars included), but not a boolean."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _check_number(src: str, where: str, field: str, value: object, minimum: float | None = None) -> None:
    if not _is_number(value) or not math.isfinite(value):
        raise _fail(src, where, field, "a finite number", value)
    if minimum is not None and value < minimum:
        raise _fail(src, where, field, f"a finite number >= {minimum:g}", value)


def _check_vector(src: str, where: str, field: str, value: object, n: int) -> None:
    if (not isinstance(value, (tuple, list)) or len(value) != n
            or not all(_is_number(x) and math.isfinite(x) for x in value)):
        raise _fail(src, where, field, f"{n} finite numbers", value)


def _unit(src: str, where: str, field: str, value: Sequence[float], n: int) -> tuple[float, ...]:
    """`value` as a unit vector; a zero-length one is refused."""
    _check_vector(src, where, field, value, n)
    norm = math.sqrt(sum(x * x for x in value))
    if norm < _ZERO_LENGTH:
        raise _fail(src, where, field, f"a non-zero {n}-vector", value)
    if abs(norm - 1.0) <= _EXACT_UNIT:
        return tuple(float(x) for x in value)
    return tuple(float(x) / norm for x in value)


def _check_name(src: str, where: str, field: str, name: object) -> None:
    if not isinstance(name, str) or not name:
        raise _fail(src, where, field, "a non-empty string", name)


def _checked_body(src: str, index: int, body: Body) -> Body:
    where = _where("body", index, body.name)
    _check_name(src, where, "name", body.name)
    if body.name == WORLD:
        raise _fail(src, where, "name", f"a name other than {WORLD!r} (it means the fixed world)",
                    body.name)
    _check_number(src, where, "mass", body.mass, minimum=0.0)
    _check_vector(src, where, "position", body.position, 3)
    _check_vector(src, where, "com", body.com, 3)
    orientation = _unit_quaternion(src, where, "orientation", body.orientation)
    _check_inertia(src, where, body.inertia)
    return dataclasses.replace(body, orientation=orientation)


def _unit_quaternion(src: str, where: str, field: str, value: object) -> tuple[float, ...]:
    """`value` as a unit quaternion; one further than QUATERNION_TOLERANCE from unit norm is refused."""
    _check_vector(src, where, field, value, 4)
    norm = math.sqrt(sum(x * x for x in value))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise _fail(src, where, field,
                    f"a unit quaternion [w, x, y, z] (norm 1 within {QUATERNION_TOLERANCE:g}; "
                    f"this one has norm {norm:.6g})", value)
    return _unit(src, where, field, value, 4)


def _check_inertia(src: str, where: str, inertia: Sequence[float]) -> None:
    _check_vector(src, where, "inertia", inertia, 6)
    tensor = inertia_matrix(inertia)
    moments = np.linalg.eigvalsh(tensor)  # ascending
    tol = 1e-9 * float(np.max(np.abs(tensor)))
    shown = "[" + ", ".join(f"{m:.6g}" for m in moments) + "]"
    if moments[0] < -tol:
        raise _fail(src, where, "inertia",
                    f"positive semi-definite (its principal moments are {shown})", inertia)
    if moments[0] + moments[1] < moments[2] - tol:
        raise _fail(src, where, "inertia",
                    "a rigid body's inertia, whose principal moments A <= B <= C satisfy A + B >= C "
                    f"(these are {shown})", inertia)


def _check_coordinates(src: str, where: str, joint: Joint, field: str, value: object,
                       allow_empty: bool = False, infinite: float | None = None) -> None:
    """One number per dof of `joint`, finite except for `infinite` (-inf for lower, +inf for upper).

    With `allow_empty`, an empty tuple (meaning zeros) is accepted too.
    """
    if allow_empty and value == ():
        return
    n = joint.ndof
    kind = "finite" if infinite is None else f"finite or {infinite:g}"
    expected = f"{n} {kind} number{'s' if n != 1 else ''} (one per dof of a {joint.type!r} joint)"
    if allow_empty:
        expected += ", or none for zeros"
    if not (isinstance(value, tuple) and len(value) == n and all(
            _is_number(x) and (math.isfinite(x) or x == infinite) for x in value)):
        raise _fail(src, where, field, expected, value)


def _checked_joint(src: str, index: int, joint: Joint, body_names: set[str]) -> Joint:
    where = _where("joint", index, joint.name)
    _check_name(src, where, "name", joint.name)
    if joint.type not in JOINT_DOFS:
        raise _fail(src, where, "type", f"one of {', '.join(JOINT_TYPES)}", joint.type)
    for field in ("parent", "child"):
        name = getattr(joint, field)
        if name != WORLD and name not in body_names:
            raise _fail(src, where, field,
                        f"a [[body]] name or {WORLD!r} (bodies: {', '.join(sorted(body_names))})", name)
    if joint.parent == joint.child:
        raise MechanismError(f"{src}: {where}: field 'child' must differ from field 'parent', "
                             f"got {_brief(joint.child)} for both (a joint connects two bodies)")
    _check_vector(src, where, "anchor", joint.anchor, 3)
    axis = _unit(src, where, "axis", joint.axis, 3)
    axis2 = joint.axis2
    if joint.type in _AXIS2_TYPES:
        if axis2 is None:
            raise MechanismError(f"{src}: {where}: field 'axis2' is required for a {joint.type!r} joint")
        axis2 = _unit(src, where, "axis2", axis2, 3)
        cos = abs(float(np.dot(axis, axis2)))
        if joint.type == "planar" and cos > _PERPENDICULAR:
            raise _fail(src, where, "axis2", "perpendicular to 'axis' (the plane normal)", joint.axis2)
        if joint.type == "universal" and cos > 1.0 - _PERPENDICULAR:
            raise _fail(src, where, "axis2", "not parallel to 'axis'", joint.axis2)
    elif axis2 is not None:
        raise _fail(src, where, "axis2", "absent (only universal and planar joints have a second axis)",
                    axis2)
    _check_coordinates(src, where, joint, "q0", joint.q0, allow_empty=True)
    _check_coordinates(src, where, joint, "v0", joint.v0, allow_empty=True)
    if joint.lower is not None:
        _check_coordinates(src, where, joint, "lower", joint.lower, infinite=-math.inf)
    if joint.upper is not None:
        _check_coordinates(src, where, joint, "upper", joint.upper, infinite=math.inf)
    if joint.lower is not None and joint.upper is not None:
        for lo, hi in zip(joint.lower, joint.upper):
            if lo > hi:
                raise _fail(src, where, "lower", f"<= field 'upper' {_brief(joint.upper)}", joint.lower)
    for k, q in enumerate(joint.q0):
        lo = joint.lower[k] if joint.lower is not None else -math.inf
        hi = joint.upper[k] if joint.upper is not None else math.inf
        if not lo <= q <= hi:
            raise _fail(src, where, "q0", f"within the limits [{lo:g}, {hi:g}]", joint.q0)
    if joint.rest is not None:
        _check_coordinates(src, where, joint, "rest", joint.rest)
    _check_number(src, where, "stiffness", joint.stiffness, minimum=0.0)
    _check_number(src, where, "damping", joint.damping, minimum=0.0)
    if joint.motor is not None:
        _check_motor(src, where, joint)
    if joint.prescribed is not None:
        if joint.ndof != 1:
            raise _fail(src, where, "prescribed", f"absent on a {joint.type!r} joint (prescribed motion "
                        "needs a single-dof joint: revolute or prismatic)", joint.prescribed)
        if joint.motor is not None:
            raise MechanismError(f"{src}: {where}: fields 'motor' and 'prescribed' exclude each other "
                                 "(a prescribed coordinate cannot also be driven); remove one")
        _check_curve(src, where, "prescribed", joint.prescribed)
    return dataclasses.replace(joint, axis=axis, axis2=axis2)


def _check_motor(src: str, where: str, joint: Joint) -> None:
    motor = joint.motor
    if joint.ndof != 1:
        raise _fail(src, where, "motor", f"absent on a {joint.type!r} joint (a motor needs a "
                    "single-dof joint: revolute or prismatic)", motor)
    if motor.mode not in MOTOR_MODES:
        raise _fail(src, where, "motor.mode", f"one of {', '.join(MOTOR_MODES)}", motor.mode)
    if motor.mode == "torque":
        if motor.torque is None:
            raise MechanismError(f"{src}: {where}: field 'motor.torque' is required when "
                                 "motor.mode is \"torque\"")
        _check_curve(src, where, "motor.torque", motor.torque)
    else:
        if motor.torque is not None:
            raise _fail(src, where, "motor.torque", 'absent when motor.mode is "velocity"', motor.torque)
        _check_number(src, where, "motor.target_velocity", motor.target_velocity)
        _check_number(src, where, "motor.gain", motor.gain, minimum=0.0)


def _check_curve(src: str, where: str, field: str, curve: Curve) -> None:
    for part in ("times", "values"):
        value = getattr(curve, part)
        if (not isinstance(value, tuple) or not value
                or not all(_is_number(x) and math.isfinite(x) for x in value)):
            raise _fail(src, where, f"{field}.{part}", "a non-empty list of finite numbers", value)
    if len(curve.values) != len(curve.times):
        raise _fail(src, where, f"{field}.values",
                    f"as many numbers as {field}.times ({len(curve.times)})", curve.values)
    if any(b <= a for a, b in zip(curve.times, curve.times[1:])):
        raise _fail(src, where, f"{field}.times", "strictly increasing", curve.times)
    if curve.interpolation not in INTERPOLATIONS:
        raise _fail(src, where, f"{field}.interpolation", f"one of {', '.join(INTERPOLATIONS)}",
                    curve.interpolation)


def _check_spring(src: str, index: int, spring: Spring, body_names: set[str]) -> None:
    where = _where("spring", index, spring.name)
    _check_name(src, where, "name", spring.name)
    for field in ("body_a", "body_b"):
        name = getattr(spring, field)
        if name != WORLD and name not in body_names:
            raise _fail(src, where, field,
                        f"a [[body]] name or {WORLD!r} (bodies: {', '.join(sorted(body_names))})", name)
    if spring.body_a == spring.body_b:
        raise MechanismError(f"{src}: {where}: field 'body_b' must differ from field 'body_a', "
                             f"got {_brief(spring.body_b)} for both")
    _check_vector(src, where, "point_a", spring.point_a, 3)
    _check_vector(src, where, "point_b", spring.point_b, 3)
    for field in ("stiffness", "rest_length", "damping"):
        _check_number(src, where, field, getattr(spring, field), minimum=0.0)


def _check_force(src: str, index: int, force: Force, body_names: set[str]) -> None:
    where = _where("force", index, force.name)
    _check_name(src, where, "name", force.name)
    if force.body not in body_names:
        raise _fail(src, where, "body", f"a [[body]] name (bodies: {', '.join(sorted(body_names))})",
                    force.body)
    _check_vector(src, where, "point", force.point, 3)
    _check_vector(src, where, "force", force.force, 3)
    if force.scale is not None:
        _check_curve(src, where, "scale", force.scale)


def _checked_collider(src: str, index: int, collider: Collider, body_names: set[str]) -> Collider:
    where = _where("collider", index, collider.name)
    _check_name(src, where, "name", collider.name)
    if collider.body != WORLD and collider.body not in body_names:
        raise _fail(src, where, "body",
                    f"a [[body]] name or {WORLD!r} (bodies: {', '.join(sorted(body_names))})", collider.body)
    shape = collider.shape
    if shape not in COLLIDER_SIZES:
        raise _fail(src, where, "shape", f"one of {', '.join(COLLIDER_SHAPES)}", shape)
    n = COLLIDER_SIZES[shape]
    size = collider.size
    if n == 0:
        if size != ():
            raise _fail(src, where, "size", f"absent for a {shape!r} collider", size)
    else:
        # A capsule of half_length 0 is a sphere; every other size must be positive.
        zero_ok = (False, True) if shape == "capsule" else (False,) * n
        expected = f"{n} finite number{'s' if n > 1 else ''} ({_SIZE_NAMES[shape]}) for a {shape!r} collider, " + (
            "radius > 0 and half_length >= 0" if shape == "capsule" else "each > 0")
        if not (isinstance(size, tuple) and len(size) == n and all(
                _is_number(x) and math.isfinite(x) and (x > 0 or (ok and x == 0)) for x, ok in zip(size, zero_ok))):
            raise _fail(src, where, "size", expected, size)
    _check_vector(src, where, "position", collider.position, 3)
    orientation = _unit_quaternion(src, where, "orientation", collider.orientation)
    if shape == "hull":
        _check_hull(src, where, collider.vertices)
    elif collider.vertices != ():
        raise _fail(src, where, "vertices", f"absent for a {shape!r} collider (only hulls have vertices)",
                    collider.vertices)
    _check_number(src, where, "friction", collider.friction, minimum=0.0)
    return dataclasses.replace(collider, orientation=orientation)


def _check_hull(src: str, where: str, vertices: object) -> None:
    """At least 4 finite 3-D points that do not all lie in one plane."""
    if not (isinstance(vertices, tuple) and len(vertices) >= 4 and all(
            isinstance(v, (tuple, list)) and len(v) == 3 and all(_is_number(x) and math.isfinite(x) for x in v)
            for v in vertices)):
        raise _fail(src, where, "vertices", "at least 4 points [x, y, z] of finite numbers for a 'hull' collider",
                    vertices)
    points = np.array(vertices, dtype=float)
    spread = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    if spread[2] <= _FLAT_HULL * max(spread[0], _ZERO_LENGTH):
        flat = "all on one line" if spread[1] <= _FLAT_HULL * max(spread[0], _ZERO_LENGTH) else "all in one plane"
        raise _fail(src, where, "vertices", f"points spanning a volume (these {len(points)} are {flat}: a degenerate "
                    "hull)", vertices)


def _check_unique_names(src: str, table: str, entries: Sequence[object]) -> None:
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry.name in first:
            raise MechanismError(
                f"{src}: {_where(table, i, entry.name)}: field 'name' must be unique among [[{table}]] "
                f"entries, got {_brief(entry.name)} for entries {first[entry.name] + 1} and {i + 1}")
        first[entry.name] = i


def _check_connected(src: str, bodies: Sequence[Body], joints: Sequence[Joint]) -> None:
    """Every body reachable from the world in the undirected joint graph."""
    neighbours: dict[str, list[str]] = {WORLD: [], **{b.name: [] for b in bodies}}
    for joint in joints:
        neighbours[joint.parent].append(joint.child)
        neighbours[joint.child].append(joint.parent)
    reached = {WORLD}
    stack = [WORLD]
    while stack:
        for other in neighbours[stack.pop()]:
            if other not in reached:
                reached.add(other)
                stack.append(other)
    lost = [b.name for b in bodies if b.name not in reached]
    if lost:
        names = ", ".join(repr(n) for n in lost)
        these, it = ("these bodies are", "them") if len(lost) > 1 else ("this body is", "it")
        raise MechanismError(
            f"{src}: [[body]] {names}: {these} not connected to {WORLD!r} through joints; "
            f"add a [[joint]] linking {it} (directly or through other bodies) to the world")


def _checked_vehicle(src: str, vehicle: Vehicle) -> Vehicle:
    """The checks a Vehicle and its spec leave to the file: finite numbers, a unit orientation
    (normalised as a body's), control values, each control given once."""
    _check_name(src, _VEHICLE, "name", vehicle.name)
    for field, n in _VEHICLE_VECTORS.items():
        _check_vector(src, _VEHICLE, field, getattr(vehicle, field), n)
    orientation = _unit_quaternion(src, _VEHICLE, "orientation", vehicle.orientation)
    for f in dataclasses.fields(vehicle.spec):
        key, value = f"parameters.{f.name}", getattr(vehicle.spec, f.name)
        if f.name == "name":
            _check_name(src, _VEHICLE, key, value)
        elif isinstance(value, tuple):
            if not all(_is_number(x) and math.isfinite(x) for x in value):
                raise _fail(src, _VEHICLE, key, "finite numbers", value)
        else:
            _check_number(src, _VEHICLE, key, value)
    seen: set[str] = set()
    for name, value in vehicle.controls:
        key = f"controls.{name}"
        if name in seen:
            raise MechanismError(f"{src}: {_VEHICLE}: control '{key}' is given twice; give each control once")
        seen.add(name)
        if isinstance(value, Curve):
            _check_curve(src, _VEHICLE, key, value)
        elif not (_is_number(value) and math.isfinite(value)):
            raise _fail(src, _VEHICLE, key, "a finite number or a curve", value)
    return dataclasses.replace(vehicle, orientation=orientation)


# ----------------------------------------------------------------------------------------------
# Parsing: TOML tables to Mechanism values (types, keys and shapes only; values are checked above)


class _Table:
    """One TOML table being read, with the words that locate it in messages."""

    def __init__(self, src: str, where: str, data: Mapping[str, object], prefix: str = ""):
        self.src = src
        self.where = where
        self.data = data
        self.prefix = prefix  # "motor." for fields of a nested table

    def fail(self, key: str, expected: str, got: object) -> MechanismError:
        return _fail(self.src, self.where, self.prefix + key, expected, got)

    def check_keys(self, allowed: Sequence[str], what: str = "") -> None:
        for key in self.data:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{self.prefix}{close[0]}'?)" if close else ""
                raise MechanismError(
                    f"{self.src}: {self.where}: unknown field '{self.prefix}{key}'{what}{hint}; "
                    f"valid fields: {', '.join(allowed)}")

    def require(self, key: str, why: str = "") -> None:
        if key not in self.data:
            raise MechanismError(f"{self.src}: {self.where}: field '{self.prefix}{key}' is required{why}")

    def _get(self, key: str, default: object) -> object:
        if key not in self.data and default is _REQUIRED:
            self.require(key)
        return self.data.get(key, default)

    def string(self, key: str, default: object = _REQUIRED) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self.fail(key, "a string", value)
        return value

    def number(self, key: str, default: object = _REQUIRED) -> float:
        value = self._get(key, default)
        if not _is_number(value):
            raise self.fail(key, "a number", value)
        return float(value)

    def numbers(self, key: str, sizes: Sequence[int] | None = None, default: object = _REQUIRED,
                scalar: bool = False) -> tuple[float, ...] | None:
        """A list of numbers (of one of `sizes` when given); a bare number when `scalar`."""
        value = self._get(key, default)
        if value is None:
            return None
        if scalar and _is_number(value):
            return (float(value),)
        if not isinstance(value, (list, tuple)) or not all(_is_number(x) for x in value) or (
                sizes is not None and len(value) not in sizes):
            if sizes is None:
                expected = "a list of numbers" + (" or a number" if scalar else "")
            else:
                expected = f"a list of {' or '.join(str(n) for n in sizes)} numbers"
            raise self.fail(key, expected, value)
        return tuple(float(x) for x in value)

    def points(self, key: str) -> tuple[tuple[float, float, float], ...]:
        """A list of [x, y, z] lists; absent means none."""
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(
                isinstance(p, list) and len(p) == 3 and all(_is_number(x) for x in p) for p in value):
            raise self.fail(key, "a list of points [x, y, z]", value)
        return tuple(tuple(float(x) for x in p) for p in value)

    def table(self, key: str, allow_missing: bool = True) -> _Table | None:
        """A nested (inline) table, or None when absent."""
        if key not in self.data:
            if not allow_missing:
                self.require(key)
            return None
        value = self.data[key]
        if not isinstance(value, Mapping):
            raise self.fail(key, "a table", value)
        return _Table(self.src, self.where, value, prefix=f"{self.prefix}{key}.")


def _parse_document(data: Mapping[str, object], src: str) -> Mechanism:
    top = _Table(src, "top level", data)
    top.check_keys(_TOP_KEYS)
    if "format" not in data:
        raise MechanismError(f"{src}: top level: field 'format' is required: start the file with "
                             f"'format = {FORMAT_VERSION}'")
    fmt = data["format"]
    if type(fmt) is not int or fmt != FORMAT_VERSION:
        raise top.fail("format", f"{FORMAT_VERSION} (the only mechanism file version this Symplex "
                       "reads)", fmt)
    if "model" not in data:
        raise MechanismError(f"{src}: [model] table is required (with at least name = \"...\")")
    if not isinstance(data["model"], Mapping):
        raise top.fail("model", "a table written [model]", data["model"])
    model = _Table(src, "[model]", data["model"])
    model.check_keys(_MODEL_KEYS)
    name = model.string("name")
    vehicle = None
    if "vehicle" in data:
        if not isinstance(data["vehicle"], Mapping):
            raise top.fail("vehicle", f"a table written {_VEHICLE}", data["vehicle"])
        vehicle = _parse_vehicle(_Table(src, _VEHICLE, data["vehicle"]), name)
    entries: dict[str, list[_Table]] = {}
    for table in _ENTRY_TABLES:
        raw = data.get(table, [])
        if not isinstance(raw, list) or not all(isinstance(e, Mapping) for e in raw):
            raise top.fail(table, f"an array of tables, each written [[{table}]]", raw)
        entries[table] = [_Table(src, _where(table, i, e.get("name")), e) for i, e in enumerate(raw)]
    return Mechanism(
        name=name,
        gravity=model.numbers("gravity", (3,), default=(0.0, 0.0, -9.81)),
        bodies=tuple(_parse_body(t) for t in entries["body"]),
        joints=tuple(_parse_joint(t) for t in entries["joint"]),
        springs=tuple(_parse_spring(t) for t in entries["spring"]),
        forces=tuple(_parse_force(t) for t in entries["force"]),
        colliders=tuple(_parse_collider(t) for t in entries["collider"]),
        vehicle=vehicle,
        source=src,
    )


def _parse_body(t: _Table) -> Body:
    t.check_keys(_BODY_KEYS)
    inertia = t.numbers("inertia", (3, 6), default=(0.0, 0.0, 0.0))
    return Body(
        name=t.string("name"),
        mass=t.number("mass"),
        position=t.numbers("position", (3,), default=(0.0, 0.0, 0.0)),
        orientation=t.numbers("orientation", (4,), default=(1.0, 0.0, 0.0, 0.0)),
        com=t.numbers("com", (3,), default=(0.0, 0.0, 0.0)),
        inertia=inertia + (0.0, 0.0, 0.0) if len(inertia) == 3 else inertia,
    )


def _parse_joint(t: _Table) -> Joint:
    t.check_keys(_JOINT_KEYS)
    kind = t.string("type")
    if kind not in JOINT_DOFS:
        raise t.fail("type", f"one of {', '.join(JOINT_TYPES)}", kind)
    if kind in _ANCHOR_TYPES:
        t.require("anchor", f" for a {kind!r} joint (world point at the reference configuration)")
    if kind in _AXIS_TYPES:
        t.require("axis", f" for a {kind!r} joint (world direction at the reference configuration)")
    motor = t.table("motor")
    prescribed = t.table("prescribed")
    return Joint(
        name=t.string("name"),
        type=kind,
        parent=t.string("parent"),
        child=t.string("child"),
        anchor=t.numbers("anchor", (3,), default=(0.0, 0.0, 0.0)),
        axis=t.numbers("axis", (3,), default=(1.0, 0.0, 0.0)),
        axis2=t.numbers("axis2", (3,), default=None),
        q0=t.numbers("q0", default=(), scalar=True),
        v0=t.numbers("v0", default=(), scalar=True),
        lower=t.numbers("lower", default=None, scalar=True),
        upper=t.numbers("upper", default=None, scalar=True),
        stiffness=t.number("stiffness", default=0.0),
        rest=t.numbers("rest", default=None, scalar=True),
        damping=t.number("damping", default=0.0),
        motor=None if motor is None else _parse_motor(motor),
        prescribed=None if prescribed is None else _parse_curve(prescribed),
    )


def _parse_motor(t: _Table) -> Motor:
    mode = t.string("mode")
    if mode not in MOTOR_MODES:
        raise t.fail("mode", f"one of {', '.join(MOTOR_MODES)}", mode)
    t.check_keys(_MOTOR_KEYS[mode], what=f" for motor.mode = {_toml_string(mode)}")
    if mode == "torque":
        return Motor(mode=mode, torque=_parse_curve(t.table("torque", allow_missing=False)))
    return Motor(mode=mode, target_velocity=t.number("target_velocity"), gain=t.number("gain"))


def _parse_curve(t: _Table) -> Curve:
    t.check_keys(_CURVE_KEYS)
    return Curve(times=t.numbers("times"), values=t.numbers("values"),
                 interpolation=t.string("interpolation", default="linear"))


def _parse_spring(t: _Table) -> Spring:
    t.check_keys(_SPRING_KEYS)
    return Spring(
        name=t.string("name"),
        body_a=t.string("body_a"),
        body_b=t.string("body_b"),
        point_a=t.numbers("point_a", (3,), default=(0.0, 0.0, 0.0)),
        point_b=t.numbers("point_b", (3,), default=(0.0, 0.0, 0.0)),
        stiffness=t.number("stiffness", default=0.0),
        rest_length=t.number("rest_length", default=0.0),
        damping=t.number("damping", default=0.0),
    )


def _parse_force(t: _Table) -> Force:
    t.check_keys(_FORCE_KEYS)
    scale = t.table("scale")
    return Force(
        name=t.string("name"),
        body=t.string("body"),
        point=t.numbers("point", (3,), default=(0.0, 0.0, 0.0)),
        force=t.numbers("force", (3,)),
        scale=None if scale is None else _parse_curve(scale),
    )


def _parse_collider(t: _Table) -> Collider:
    t.check_keys(_COLLIDER_KEYS)
    return Collider(
        name=t.string("name"),
        body=t.string("body"),
        shape=t.string("shape"),
        size=t.numbers("size", default=(), scalar=True),
        position=t.numbers("position", (3,), default=(0.0, 0.0, 0.0)),
        orientation=t.numbers("orientation", (4,), default=(1.0, 0.0, 0.0, 0.0)),
        vertices=t.points("vertices"),
        friction=t.number("friction", default=0.5),
    )


def _parse_vehicle(t: _Table, model_name: str) -> Vehicle:
    """The [vehicle] table; its spec starts from the preset, if any, and takes [vehicle.parameters] over it."""
    t.check_keys(_VEHICLE_KEYS)
    kind = t.string("type")
    if kind not in VEHICLE_TYPES:
        raise t.fail("type", f"one of {', '.join(VEHICLE_TYPES)}", kind)
    name = t.string("name", default=model_name)
    preset = _parse_preset(t, kind)
    parameters = t.table("parameters") or _Table(t.src, t.where, {}, prefix="parameters.")
    fields = _parse_parameters(parameters, kind, preset, name)
    controls = t.table("controls")
    defaults = {f.name: f.default for f in dataclasses.fields(Vehicle)}
    vectors = {key: t.numbers(key, (n,), default=defaults[key]) for key, n in _VEHICLE_VECTORS.items()}
    try:
        spec = VEHICLE_TYPES[kind](**fields)
    except VehicleError as exc:  # the spec's own checks: "car 'sedan': field 'mass' must be ..."
        raise MechanismError(f"{t.src}: [vehicle.parameters]: {exc}") from None
    # Vehicle's own checks (type, vector lengths, control names) are made above; the hitch angle's range is its own.
    try:
        return Vehicle(type=kind, spec=spec, name=name, hitch_angle=t.number("hitch_angle", default=0.0),
                       controls=() if controls is None else _parse_controls(controls, kind), **vectors)
    except VehicleError as exc:  # "vehicle 'x': field 'hitch_angle' must be ..."
        raise MechanismError(f"{t.src}: {_VEHICLE}: {exc}") from None


def _presets_of(kind: str) -> list[str]:
    return [name for name, spec in PRESETS.items() if type(spec) is VEHICLE_TYPES[kind]]


def _parse_preset(t: _Table, kind: str) -> Spec | None:
    if "preset" not in t.data:
        return None
    name = t.string("preset")
    names = _presets_of(kind)
    if name not in names:
        expected = f"a {kind!r} preset: one of {', '.join(names)}" if names else f"absent (no {kind!r} presets exist)"
        other = PRESETS.get(name)
        if other is not None:
            expected += f" ({_toml_string(name)} is a {_type_of(other)!r} preset)"
        raise t.fail("preset", expected, name)
    return PRESETS[name]


def _type_of(spec: Spec) -> str:
    return next(kind for kind, cls in VEHICLE_TYPES.items() if type(spec) is cls)


def _parse_parameters(t: _Table, kind: str, preset: Spec | None, vehicle_name: str) -> dict[str, object]:
    """Keyword arguments for the spec of `kind`: each field from the table, else the preset, else its default.

    The spec's name defaults to the preset's, or to the vehicle's without a preset.
    """
    cls = VEHICLE_TYPES[kind]
    fields = dataclasses.fields(cls)
    t.check_keys([f.name for f in fields], what=f" for a {kind!r} ({cls.__name__})")
    hints = typing.get_type_hints(cls)
    values: dict[str, object] = {}
    missing = []
    for f in fields:
        if f.name in t.data:
            values[f.name] = _parse_parameter(t, f.name, hints[f.name])
        elif f.name == "name":
            values[f.name] = vehicle_name if preset is None else preset.name
        elif preset is not None:
            values[f.name] = getattr(preset, f.name)
        elif f.default is dataclasses.MISSING:
            missing.append(f"'{t.prefix}{f.name}'")
    if missing:
        names = _presets_of(kind)
        alternative = f" (or set preset to one of {', '.join(names)})" if names else ""
        raise MechanismError(
            f"{t.src}: {t.where}: field{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} required for a {kind!r} without a preset{alternative}")
    return values


def _parse_parameter(t: _Table, key: str, hint: object) -> object:
    """One spec field by its annotation: str, float, tuple[float, ...] or a fixed-length tuple of floats."""
    if hint is str:
        return t.string(key)
    if hint is float:
        return t.number(key)
    args = typing.get_args(hint)
    return t.numbers(key, _PARAMETER_SIZES.get(key) if args[-1] is Ellipsis else (len(args),))


def _parse_controls(t: _Table, kind: str) -> tuple[tuple[str, Curve | float], ...]:
    allowed = CONTROL_NAMES[kind]
    for key in t.data:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean '{t.prefix}{close[0]}'?)" if close else ""
            valid = ", ".join(allowed) or f"none, a {kind!r} has no controls"
            raise MechanismError(f"{t.src}: {t.where}: unknown control '{t.prefix}{key}' for a {kind!r}{hint}; "
                                 f"valid controls: {valid}")
    controls = []
    for key, value in t.data.items():
        if isinstance(value, Mapping):
            controls.append((key, _parse_curve(t.table(key))))
        elif _is_number(value):
            controls.append((key, float(value)))
        else:
            raise t.fail(key, "a number or a curve {times = [...], values = [...], interpolation = ...}", value)
    return tuple(controls)


# ----------------------------------------------------------------------------------------------
# Writing: a small TOML emitter for the values a Mechanism holds


def _vehicle_lines(vehicle: Vehicle) -> list[str]:
    """The [vehicle] tables. A spec named after a preset of its type is written as that preset plus the
    fields that differ from it; any other spec is written in full."""
    spec = vehicle.spec
    preset = PRESETS.get(spec.name)
    if preset is not None and type(preset) is not type(spec):
        preset = None
    head: dict[str, object] = {"type": vehicle.type, "name": vehicle.name}
    if preset is not None:
        head["preset"] = spec.name
    for key in _VEHICLE_VECTORS:
        if key != "current" or any(vehicle.current):
            head[key] = getattr(vehicle, key)
    if vehicle.hitch_angle:
        head["hitch_angle"] = vehicle.hitch_angle
    parameters = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)
                  if preset is None or getattr(spec, f.name) != getattr(preset, f.name)}
    if preset is None and spec.name == vehicle.name:
        del parameters["name"]
    lines = ["", f"{_VEHICLE}", *_assignments(head)]
    if parameters:
        lines += ["", "[vehicle.parameters]", *_assignments(parameters)]
    if vehicle.controls:
        lines += ["", "[vehicle.controls]", *_assignments(dict(vehicle.controls))]
    return lines


def _entry_fields(entry: Body | Joint | Spring | Force | Collider) -> dict[str, object]:
    """The key/value pairs written for one entry: every field, minus optional ones left at default."""
    if isinstance(entry, Body):
        fields = dataclasses.asdict(entry)
        if not any(entry.inertia[3:]):
            fields["inertia"] = entry.inertia[:3]
        return fields
    if isinstance(entry, Joint):
        fields = {f.name: getattr(entry, f.name) for f in dataclasses.fields(Joint)}
        for key in ("q0", "v0", "lower", "upper", "rest"):
            value = fields[key]
            if value is None or value == ():
                del fields[key]
            elif len(value) == 1:
                fields[key] = value[0]
        for key in ("axis2", "motor", "prescribed"):
            if fields[key] is None:
                del fields[key]
        for key in ("stiffness", "damping"):
            if fields[key] == 0.0:
                del fields[key]
        if "motor" in fields:
            motor = entry.motor
            fields["motor"] = ({"mode": motor.mode, "torque": motor.torque} if motor.mode == "torque"
                               else {"mode": motor.mode, "target_velocity": motor.target_velocity,
                                     "gain": motor.gain})
        return fields
    fields = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)}
    if isinstance(entry, Collider):
        for key in ("size", "vertices"):
            if fields[key] == ():
                del fields[key]
    if isinstance(entry, Force) and entry.scale is None:
        del fields["scale"]
    return fields


def _assignments(fields: Mapping[str, object]) -> list[str]:
    return [f"{key} = {_show(value)}" for key, value in fields.items()]


def _show(value: object) -> str:
    """TOML text of a value (also how messages quote what came)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, float):
        return repr(float(value))  # shortest text giving the same double (inf, nan are TOML too)
    if isinstance(value, Curve):
        return _show(dataclasses.asdict(value))
    if isinstance(value, Motor):
        return _show({k: v for k, v in dataclasses.asdict(value).items() if v is not None})
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def _brief(value: object, limit: int = 160) -> str:
    text = _show(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _toml_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)

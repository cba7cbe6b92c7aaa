"""The checks every Mechanism must pass, from a file, from code or from the bridge; errors naming file and field.

Every error is a MechanismError whose message names the source (file), the table, the entry (by name, or by
number when it has no name) and the field, and says what was expected and what came; read.py words its
own messages with `field_error` and `entry_label` from here. The rules are listed in format.py.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence

import numpy as np

from ..mass import inertia_matrix
from ..model import (
    COLLIDER_SHAPES,
    COLLIDER_SIZES,
    JOINT_DOFS,
    JOINT_TYPES,
    ORDERS,
    WORLD,
    Body,
    Collider,
    Curve,
    Force,
    Joint,
    Mechanism,
    MechanismError,
    Spring,
    Vehicle,
)
from .format import AXIS2_TYPES, INTERPOLATIONS, MOTOR_MODES, SIZE_NAMES, VEHICLE_TABLE, VEHICLE_VECTORS
from .toml_text import brief

QUATERNION_TOLERANCE = 1e-6  # |norm - 1| accepted (and normalised away) for orientations
_EXACT_UNIT = 1e-15  # norms this close to 1 are kept as written, so load/dump/load is exact
_ZERO_LENGTH = 1e-12
_PERPENDICULAR = 1e-6  # |cos| allowed between a planar joint's normal and its in-plane axis
_FLAT_HULL = 1e-9  # a hull's vertices must spread at least this fraction of their extent in every direction


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
    if type(mech.order) is not int or mech.order not in ORDERS:
        raise MechanismError(f"{src}: [setup]: field 'order' must be one of {', '.join(map(str, ORDERS))} (the tree "
                             f"method's accuracy order), got {mech.order!r}")
    if not mech.bodies and mech.vehicle is None:
        raise MechanismError(f"{src}: no [[body]] entries; a mechanism needs at least one body "
                             f"(or a {VEHICLE_TABLE} table, for the vehicle method)")
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


def entry_label(table: str, index: int, name: object) -> str:
    """How messages name entry `index` (0-based) of `table`: by its name, or by number if it has none."""
    if isinstance(name, str) and name:
        return f"[[{table}]] {name!r}"
    return f"[[{table}]] number {index + 1}"


def field_error(src: str, where: str, field: str, expected: str, got: object) -> MechanismError:
    return MechanismError(f"{src}: {where}: field '{field}' must be {expected}, got {brief(got)}")


def is_number(x: object) -> bool:
    """A real number (numpy scalars included), but not a boolean."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _check_number(src: str, where: str, field: str, value: object, minimum: float | None = None) -> None:
    if not is_number(value) or not math.isfinite(value):
        raise field_error(src, where, field, "a finite number", value)
    if minimum is not None and value < minimum:
        raise field_error(src, where, field, f"a finite number >= {minimum:g}", value)


def _check_vector(src: str, where: str, field: str, value: object, n: int) -> None:
    if (not isinstance(value, (tuple, list)) or len(value) != n
            or not all(is_number(x) and math.isfinite(x) for x in value)):
        raise field_error(src, where, field, f"{n} finite numbers", value)


def _unit(src: str, where: str, field: str, value: Sequence[float], n: int) -> tuple[float, ...]:
    """`value` as a unit vector; a zero-length one is refused."""
    _check_vector(src, where, field, value, n)
    norm = math.sqrt(sum(x * x for x in value))
    if norm < _ZERO_LENGTH:
        raise field_error(src, where, field, f"a non-zero {n}-vector", value)
    if abs(norm - 1.0) <= _EXACT_UNIT:
        return tuple(float(x) for x in value)
    if not math.isfinite(norm):  # components so large that their squares overflow: scaled down first
        largest = max(abs(x) for x in value)
        value = tuple(x / largest for x in value)
        norm = math.sqrt(sum(x * x for x in value))
    return tuple(float(x) / norm for x in value)


def _check_name(src: str, where: str, field: str, name: object) -> None:
    if not isinstance(name, str) or not name:
        raise field_error(src, where, field, "a non-empty string", name)


def _checked_body(src: str, index: int, body: Body) -> Body:
    where = entry_label("body", index, body.name)
    _check_name(src, where, "name", body.name)
    if body.name == WORLD:
        raise field_error(src, where, "name", f"a name other than {WORLD!r} (it means the fixed world)",
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
        raise field_error(src, where, field,
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
        raise field_error(src, where, "inertia",
                          f"positive semi-definite (its principal moments are {shown})", inertia)
    if moments[0] + moments[1] < moments[2] - tol:
        raise field_error(src, where, "inertia",
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
            is_number(x) and (math.isfinite(x) or x == infinite) for x in value)):
        raise field_error(src, where, field, expected, value)


def _check_ends(src: str, where: str, entry: Joint | Spring, fields: tuple[str, str], body_names: set[str],
                why: str = "") -> None:
    """The two ends of a joint or spring (the fields named) are bodies or the world, and not the same one."""
    for field in fields:
        name = getattr(entry, field)
        if name != WORLD and name not in body_names:
            raise field_error(src, where, field,
                              f"a [[body]] name or {WORLD!r} (bodies: {', '.join(sorted(body_names))})", name)
    first, second = (getattr(entry, field) for field in fields)
    if first == second:
        raise MechanismError(f"{src}: {where}: field '{fields[1]}' must differ from field '{fields[0]}', "
                             f"got {brief(second)} for both{why}")


def _checked_joint(src: str, index: int, joint: Joint, body_names: set[str]) -> Joint:
    where = entry_label("joint", index, joint.name)
    _check_name(src, where, "name", joint.name)
    if joint.type not in JOINT_DOFS:
        raise field_error(src, where, "type", f"one of {', '.join(JOINT_TYPES)}", joint.type)
    _check_ends(src, where, joint, ("parent", "child"), body_names, " (a joint connects two bodies)")
    _check_vector(src, where, "anchor", joint.anchor, 3)
    axis = _unit(src, where, "axis", joint.axis, 3)
    axis2 = joint.axis2
    if joint.type in AXIS2_TYPES:
        if axis2 is None:
            raise MechanismError(f"{src}: {where}: field 'axis2' is required for a {joint.type!r} joint")
        axis2 = _unit(src, where, "axis2", axis2, 3)
        cos = abs(float(np.dot(axis, axis2)))
        if joint.type == "planar" and cos > _PERPENDICULAR:
            raise field_error(src, where, "axis2", "perpendicular to 'axis' (the plane normal)", joint.axis2)
        if joint.type == "universal" and cos > 1.0 - _PERPENDICULAR:
            raise field_error(src, where, "axis2", "not parallel to 'axis'", joint.axis2)
    elif axis2 is not None:
        raise field_error(src, where, "axis2", "absent (only universal and planar joints have a second axis)",
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
                raise field_error(src, where, "lower", f"<= field 'upper' {brief(joint.upper)}", joint.lower)
    for k, q in enumerate(joint.q0):
        lo = joint.lower[k] if joint.lower is not None else -math.inf
        hi = joint.upper[k] if joint.upper is not None else math.inf
        if not lo <= q <= hi:
            raise field_error(src, where, "q0", f"within the limits [{lo:g}, {hi:g}]", joint.q0)
    if joint.rest is not None:
        _check_coordinates(src, where, joint, "rest", joint.rest)
    _check_number(src, where, "stiffness", joint.stiffness, minimum=0.0)
    _check_number(src, where, "damping", joint.damping, minimum=0.0)
    if joint.motor is not None:
        _check_motor(src, where, joint)
    if joint.prescribed is not None:
        if joint.ndof != 1:
            raise field_error(src, where, "prescribed", f"absent on a {joint.type!r} joint (prescribed motion "
                              "needs a single-dof joint: revolute or prismatic)", joint.prescribed)
        if joint.motor is not None:
            raise MechanismError(f"{src}: {where}: fields 'motor' and 'prescribed' exclude each other "
                                 "(a prescribed coordinate cannot also be driven); remove one")
        _check_curve(src, where, "prescribed", joint.prescribed)
    return dataclasses.replace(joint, axis=axis, axis2=axis2)


def _check_motor(src: str, where: str, joint: Joint) -> None:
    motor = joint.motor
    if joint.ndof != 1:
        raise field_error(src, where, "motor", f"absent on a {joint.type!r} joint (a motor needs a "
                          "single-dof joint: revolute or prismatic)", motor)
    if motor.mode not in MOTOR_MODES:
        raise field_error(src, where, "motor.mode", f"one of {', '.join(MOTOR_MODES)}", motor.mode)
    if motor.mode == "torque":
        if motor.torque is None:
            raise MechanismError(f"{src}: {where}: field 'motor.torque' is required when "
                                 "motor.mode is \"torque\"")
        _check_curve(src, where, "motor.torque", motor.torque)
    else:
        if motor.torque is not None:
            raise field_error(src, where, "motor.torque", 'absent when motor.mode is "velocity"', motor.torque)
        _check_number(src, where, "motor.target_velocity", motor.target_velocity)
        _check_number(src, where, "motor.gain", motor.gain, minimum=0.0)


def _check_curve(src: str, where: str, field: str, curve: Curve) -> None:
    for part in ("times", "values"):
        value = getattr(curve, part)
        if (not isinstance(value, tuple) or not value
                or not all(is_number(x) and math.isfinite(x) for x in value)):
            raise field_error(src, where, f"{field}.{part}", "a non-empty list of finite numbers", value)
    if len(curve.values) != len(curve.times):
        raise field_error(src, where, f"{field}.values",
                          f"as many numbers as {field}.times ({len(curve.times)})", curve.values)
    if any(b <= a for a, b in zip(curve.times, curve.times[1:])):
        raise field_error(src, where, f"{field}.times", "strictly increasing", curve.times)
    if curve.interpolation not in INTERPOLATIONS:
        raise field_error(src, where, f"{field}.interpolation", f"one of {', '.join(INTERPOLATIONS)}",
                          curve.interpolation)


def _check_spring(src: str, index: int, spring: Spring, body_names: set[str]) -> None:
    where = entry_label("spring", index, spring.name)
    _check_name(src, where, "name", spring.name)
    _check_ends(src, where, spring, ("body_a", "body_b"), body_names)
    _check_vector(src, where, "point_a", spring.point_a, 3)
    _check_vector(src, where, "point_b", spring.point_b, 3)
    for field in ("stiffness", "rest_length", "damping"):
        _check_number(src, where, field, getattr(spring, field), minimum=0.0)


def _check_force(src: str, index: int, force: Force, body_names: set[str]) -> None:
    where = entry_label("force", index, force.name)
    _check_name(src, where, "name", force.name)
    if force.body not in body_names:
        raise field_error(src, where, "body", f"a [[body]] name (bodies: {', '.join(sorted(body_names))})",
                          force.body)
    _check_vector(src, where, "point", force.point, 3)
    _check_vector(src, where, "force", force.force, 3)
    if force.scale is not None:
        _check_curve(src, where, "scale", force.scale)


def _checked_collider(src: str, index: int, collider: Collider, body_names: set[str]) -> Collider:
    where = entry_label("collider", index, collider.name)
    _check_name(src, where, "name", collider.name)
    if collider.body != WORLD and collider.body not in body_names:
        raise field_error(src, where, "body",
                          f"a [[body]] name or {WORLD!r} (bodies: {', '.join(sorted(body_names))})", collider.body)
    shape = collider.shape
    if shape not in COLLIDER_SIZES:
        raise field_error(src, where, "shape", f"one of {', '.join(COLLIDER_SHAPES)}", shape)
    n = COLLIDER_SIZES[shape]
    size = collider.size
    if n == 0:
        if size != ():
            raise field_error(src, where, "size", f"absent for a {shape!r} collider", size)
    else:
        # A capsule of half_length 0 is a sphere; every other size must be positive.
        zero_ok = (False, True) if shape == "capsule" else (False,) * n
        expected = f"{n} finite number{'s' if n > 1 else ''} ({SIZE_NAMES[shape]}) for a {shape!r} collider, " + (
            "radius > 0 and half_length >= 0" if shape == "capsule" else "each > 0")
        if not (isinstance(size, tuple) and len(size) == n and all(
                is_number(x) and math.isfinite(x) and (x > 0 or (ok and x == 0)) for x, ok in zip(size, zero_ok))):
            raise field_error(src, where, "size", expected, size)
    _check_vector(src, where, "position", collider.position, 3)
    orientation = _unit_quaternion(src, where, "orientation", collider.orientation)
    if shape == "hull":
        _check_hull(src, where, collider.vertices)
    elif collider.vertices != ():
        raise field_error(src, where, "vertices", f"absent for a {shape!r} collider (only hulls have vertices)",
                          collider.vertices)
    _check_number(src, where, "friction", collider.friction, minimum=0.0)
    return dataclasses.replace(collider, orientation=orientation)


def _check_hull(src: str, where: str, vertices: object) -> None:
    """At least 4 finite 3-D points that do not all lie in one plane."""
    if not (isinstance(vertices, tuple) and len(vertices) >= 4 and all(
            isinstance(v, (tuple, list)) and len(v) == 3 and all(is_number(x) and math.isfinite(x) for x in v)
            for v in vertices)):
        raise field_error(src, where, "vertices", "at least 4 points [x, y, z] of finite numbers for a 'hull' collider",
                          vertices)
    flat = hull_degeneracy(vertices)
    if flat is not None:
        raise field_error(src, where, "vertices",
                          f"points spanning a volume (these {len(vertices)} are {flat}: a degenerate hull)", vertices)


def hull_degeneracy(vertices: Sequence[Sequence[float]]) -> str | None:
    """None when finite 3-D points span a volume (their convex hull is a solid), else "all on one line" or
    "all in one plane". Also the check of a shot's hull obstacles (shots/spec.py)."""
    points = np.array(vertices, dtype=float)
    points /= max(1.0, float(np.max(np.abs(points))))  # huge coordinates would overflow the mean and the SVD
    spread = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    if spread[2] > _FLAT_HULL * max(spread[0], _ZERO_LENGTH):
        return None
    return "all on one line" if spread[1] <= _FLAT_HULL * max(spread[0], _ZERO_LENGTH) else "all in one plane"


def _check_unique_names(src: str, table: str, entries: Sequence[object]) -> None:
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry.name in first:
            raise MechanismError(
                f"{src}: {entry_label(table, i, entry.name)}: field 'name' must be unique among [[{table}]] "
                f"entries, got {brief(entry.name)} for entries {first[entry.name] + 1} and {i + 1}")
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
    _check_name(src, VEHICLE_TABLE, "name", vehicle.name)
    for field, n in VEHICLE_VECTORS.items():
        _check_vector(src, VEHICLE_TABLE, field, getattr(vehicle, field), n)
    orientation = _unit_quaternion(src, VEHICLE_TABLE, "orientation", vehicle.orientation)
    for f in dataclasses.fields(vehicle.spec):
        key, value = f"parameters.{f.name}", getattr(vehicle.spec, f.name)
        if f.name == "name":
            _check_name(src, VEHICLE_TABLE, key, value)
        elif isinstance(value, tuple):
            if not all(is_number(x) and math.isfinite(x) for x in value):
                raise field_error(src, VEHICLE_TABLE, key, "finite numbers", value)
        else:
            _check_number(src, VEHICLE_TABLE, key, value)
    seen: set[str] = set()
    for name, value in vehicle.controls:
        key = f"controls.{name}"
        if name in seen:
            raise MechanismError(f"{src}: {VEHICLE_TABLE}: control '{key}' is given twice; give each control once")
        seen.add(name)
        if isinstance(value, Curve):
            _check_curve(src, VEHICLE_TABLE, key, value)
        elif not (is_number(value) and math.isfinite(value)):
            raise field_error(src, VEHICLE_TABLE, key, "a finite number or a curve", value)
    return dataclasses.replace(vehicle, orientation=orientation)

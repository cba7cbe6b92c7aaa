"""Reading mechanism files: TOML text to a validated Mechanism.

Parses the tables of format.py into model values (types, keys and shapes only), then hands the Mechanism to
validate.py for the value checks. A [vehicle] table naming a preset starts from that preset's spec.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from ..model import (JOINT_DOFS, JOINT_TYPES, ORDERS, Body, Collider, Curve, Force, Joint, Mechanism, MechanismError, Motor,
                     Spring, Vehicle, VehicleError)
from ..presets import VEHICLE_PRESET_ORDER, list_vehicle_presets, vehicle_preset_path
from ..tomlfile import TomlFileError, parse_toml, read_toml
from ..vehicles.spec import CONTROL_NAMES, VEHICLE_TYPES, Spec
from .format import (
    ANCHOR_TYPES,
    AXIS_TYPES,
    BODY_KEYS,
    COLLIDER_KEYS,
    CURVE_KEYS,
    ENTRY_TABLES,
    FORCE_KEYS,
    FORMAT_VERSION,
    JOINT_KEYS,
    MODEL_KEYS,
    MOTOR_KEYS,
    MOTOR_MODES,
    PARAMETER_SIZES,
    SETUP_KEYS,
    SPRING_KEYS,
    TOP_KEYS,
    VEHICLE_KEYS,
    VEHICLE_TABLE,
    VEHICLE_VECTORS,
)
from .toml_text import toml_string
from .validate import entry_label, field_error, is_number, validate_mechanism

_REQUIRED = object()


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
        The file cannot be read, is not UTF-8 TOML (tomlfile.read_toml's checks) or not a valid mechanism
        (the message says where and why).
    """
    try:
        data = read_toml(path, "mechanism file")
    except TomlFileError as exc:
        raise MechanismError(str(exc)) from None
    return validate_mechanism(_parse_document(data, str(path)))


def loads_mechanism(text: str, source: str = "<string>") -> Mechanism:
    """Parse and validate the text of a mechanism file; `source` names it in messages.

    Raises
    ------
    MechanismError
        As `load_mechanism`.
    """
    try:
        data = parse_toml(text, source)
    except TomlFileError as exc:
        raise MechanismError(str(exc)) from None
    return validate_mechanism(_parse_document(data, source))


class _Table:
    """One TOML table being read, with the words that locate it in messages."""

    def __init__(self, src: str, where: str, data: Mapping[str, object], prefix: str = ""):
        self.src = src
        self.where = where
        self.data = data
        self.prefix = prefix  # "motor." for fields of a nested table

    def fail(self, key: str, expected: str, got: object) -> MechanismError:
        return field_error(self.src, self.where, self.prefix + key, expected, got)

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
        if not is_number(value):
            raise self.fail(key, "a number", value)
        return float(value)

    def numbers(self, key: str, sizes: Sequence[int] | None = None, default: object = _REQUIRED,
                scalar: bool = False) -> tuple[float, ...] | None:
        """A list of numbers (of one of `sizes` when given); a bare number when `scalar`."""
        value = self._get(key, default)
        if value is None:
            return None
        if scalar and is_number(value):
            return (float(value),)
        if not isinstance(value, (list, tuple)) or not all(is_number(x) for x in value) or (
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
                isinstance(p, list) and len(p) == 3 and all(is_number(x) for x in p) for p in value):
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
    top.check_keys(TOP_KEYS)
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
    model.check_keys(MODEL_KEYS)
    name = model.string("name")
    order = 2
    if "setup" in data:
        if not isinstance(data["setup"], Mapping):
            raise top.fail("setup", "a table written [setup]", data["setup"])
        setup = _Table(src, "[setup]", data["setup"])
        setup.check_keys(SETUP_KEYS)
        value = setup._get("order", 2)
        if type(value) is not int or value not in ORDERS:
            raise setup.fail("order", f"one of {', '.join(map(str, ORDERS))} (the tree method's accuracy order)", value)
        order = value
    vehicle = None
    if "vehicle" in data:
        if not isinstance(data["vehicle"], Mapping):
            raise top.fail("vehicle", f"a table written {VEHICLE_TABLE}", data["vehicle"])
        vehicle = _parse_vehicle(_Table(src, VEHICLE_TABLE, data["vehicle"]), name)
    entries: dict[str, list[_Table]] = {}
    for table in ENTRY_TABLES:
        raw = data.get(table, [])
        if not isinstance(raw, list) or not all(isinstance(e, Mapping) for e in raw):
            raise top.fail(table, f"an array of tables, each written [[{table}]]", raw)
        entries[table] = [_Table(src, entry_label(table, i, e.get("name")), e) for i, e in enumerate(raw)]
    return Mechanism(
        name=name,
        gravity=model.numbers("gravity", (3,), default=(0.0, 0.0, -9.81)),
        bodies=tuple(_parse_body(t) for t in entries["body"]),
        joints=tuple(_parse_joint(t) for t in entries["joint"]),
        springs=tuple(_parse_spring(t) for t in entries["spring"]),
        forces=tuple(_parse_force(t) for t in entries["force"]),
        colliders=tuple(_parse_collider(t) for t in entries["collider"]),
        vehicle=vehicle,
        order=order,
        source=src,
    )


def _parse_body(t: _Table) -> Body:
    t.check_keys(BODY_KEYS)
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
    t.check_keys(JOINT_KEYS)
    kind = t.string("type")
    if kind not in JOINT_DOFS:
        raise t.fail("type", f"one of {', '.join(JOINT_TYPES)}", kind)
    if kind in ANCHOR_TYPES:
        t.require("anchor", f" for a {kind!r} joint (world point at the reference configuration)")
    if kind in AXIS_TYPES:
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
    t.check_keys(MOTOR_KEYS[mode], what=f" for motor.mode = {toml_string(mode)}")
    if mode == "torque":
        return Motor(mode=mode, torque=_parse_curve(t.table("torque", allow_missing=False)))
    return Motor(mode=mode, target_velocity=t.number("target_velocity"), gain=t.number("gain"))


def _parse_curve(t: _Table) -> Curve:
    t.check_keys(CURVE_KEYS)
    return Curve(times=t.numbers("times"), values=t.numbers("values"),
                 interpolation=t.string("interpolation", default="linear"))


def _parse_spring(t: _Table) -> Spring:
    t.check_keys(SPRING_KEYS)
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
    t.check_keys(FORCE_KEYS)
    scale = t.table("scale")
    return Force(
        name=t.string("name"),
        body=t.string("body"),
        point=t.numbers("point", (3,), default=(0.0, 0.0, 0.0)),
        force=t.numbers("force", (3,)),
        scale=None if scale is None else _parse_curve(scale),
    )


def _parse_collider(t: _Table) -> Collider:
    t.check_keys(COLLIDER_KEYS)
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
    t.check_keys(VEHICLE_KEYS)
    kind = t.string("type")
    if kind not in VEHICLE_TYPES:
        raise t.fail("type", f"one of {', '.join(VEHICLE_TYPES)}", kind)
    name = t.string("name", default=model_name)
    preset = _parse_preset(t, kind)
    parameters = t.table("parameters") or _Table(t.src, t.where, {}, prefix="parameters.")
    fields = _parse_parameters(parameters, kind, preset, name)
    controls = t.table("controls")
    defaults = {f.name: f.default for f in dataclasses.fields(Vehicle)}
    vectors = {key: t.numbers(key, (n,), default=defaults[key]) for key, n in VEHICLE_VECTORS.items()}
    try:
        spec = VEHICLE_TYPES[kind](**fields)
    except VehicleError as exc:  # the spec's own checks: "car 'sedan': field 'mass' must be ..."
        raise MechanismError(f"{t.src}: [vehicle.parameters]: {exc}") from None
    # Vehicle's own checks (type, vector lengths, control names) are made above; the hitch angle's range is its own.
    try:
        return Vehicle(type=kind, spec=spec, name=name, hitch_angle=t.number("hitch_angle", default=0.0),
                       controls=() if controls is None else _parse_controls(controls, kind), **vectors)
    except VehicleError as exc:  # "vehicle 'x': field 'hitch_angle' must be ..."
        raise MechanismError(f"{t.src}: {VEHICLE_TABLE}: {exc}") from None


def _presets_of(kind: str) -> list[str]:
    return [name for name, spec in vehicle_presets().items() if type(spec) is VEHICLE_TYPES[kind]]


def _parse_preset(t: _Table, kind: str) -> Spec | None:
    if "preset" not in t.data:
        return None
    name = t.string("preset")
    names = _presets_of(kind)
    if name not in names:
        expected = f"a {kind!r} preset: one of {', '.join(names)}" if names else f"absent (no {kind!r} presets exist)"
        other = vehicle_presets().get(name)
        if other is not None:
            expected += f" ({toml_string(name)} is a {_type_of(other)!r} preset)"
        raise t.fail("preset", expected, name)
    return vehicle_presets()[name]


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
    return t.numbers(key, PARAMETER_SIZES.get(key) if args[-1] is Ellipsis else (len(args),))


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
        elif is_number(value):
            controls.append((key, float(value)))
        else:
            raise t.fail(key, "a number or a curve {times = [...], values = [...], interpolation = ...}", value)
    return tuple(controls)


@functools.cache
def vehicle_presets() -> Mapping[str, Spec]:
    """The spec of every shipped vehicle preset by name (its file stem), in presets.VEHICLE_PRESET_ORDER.

    Read from the files once; a [vehicle] table's ``preset = "sedan"`` starts from these.

    Raises
    ------
    MechanismError
        A shipped vehicle file is not valid (the message names it).
    """
    stems = list_vehicle_presets()
    order = VEHICLE_PRESET_ORDER
    names = [n for n in order if n in stems] + [n for n in stems if n not in order]
    return MappingProxyType({name: load_mechanism(vehicle_preset_path(name)).vehicle.spec for name in names})

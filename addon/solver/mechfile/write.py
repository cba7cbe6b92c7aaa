"""Writing mechanism files: a validated Mechanism to ``format = 1`` TOML text that reads back equal."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from ..model import Body, Collider, Force, Joint, Mechanism, Spring, Vehicle
from .format import FORMAT_VERSION, VEHICLE_TABLE, VEHICLE_VECTORS
from .read import vehicle_presets
from .toml_text import show
from .validate import validate_mechanism


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
    if mech.order != 2:
        lines += ["", "[setup]"] + _assignments({"order": mech.order})
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


def _vehicle_lines(vehicle: Vehicle) -> list[str]:
    """The [vehicle] tables. A spec named after a preset of its type is written as that preset plus the
    fields that differ from it; any other spec is written in full."""
    spec = vehicle.spec
    preset = vehicle_presets().get(spec.name)
    if preset is not None and type(preset) is not type(spec):
        preset = None
    head: dict[str, object] = {"type": vehicle.type, "name": vehicle.name}
    if preset is not None:
        head["preset"] = spec.name
    for key in VEHICLE_VECTORS:
        if key != "current" or any(vehicle.current):
            head[key] = getattr(vehicle, key)
    if vehicle.hitch_angle:
        head["hitch_angle"] = vehicle.hitch_angle
    parameters = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)
                  if preset is None or getattr(spec, f.name) != getattr(preset, f.name)}
    if preset is None and spec.name == vehicle.name:
        del parameters["name"]
    lines = ["", f"{VEHICLE_TABLE}", *_assignments(head)]
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
    return [f"{key} = {show(value)}" for key, value in fields.items()]

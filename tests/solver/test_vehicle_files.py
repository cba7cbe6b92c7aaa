"""Vehicles in mechanism files: the [vehicle] table, its messages, round trips, check_method and the presets."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism, loads_mechanism
from addon.solver.mechfile.validate import check_method, validate_mechanism
from addon.solver.mechfile.write import dumps_mechanism
from addon.solver.model import Body, Curve, Joint, Mechanism, MechanismError, Vehicle
from addon.solver.presets import vehicle_preset_path
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles.spec import (
    CONTROL_NAMES,
    VEHICLE_TYPES,
    BoatSpec,
    CarSpec,
    CarTrailerSpec,
    HelicopterSpec,
    HovercraftSpec,
    RigidBodySpec,
    SnakeboardSpec,
    TankSpec,
)

SEDAN, KART, HELICOPTER, SPEEDBOAT, SNAKEBOARD = (
    vehicle_presets()[name] for name in ("sedan", "kart", "helicopter", "speedboat", "snakeboard"))

BASE = """\
format = 1

[model]
name = "slalom test"

[vehicle]
type = "car"
name = "test car"
preset = "sedan"
position = [0.0, 0.0, 0.55]
orientation = [1.0, 0.0, 0.0, 0.0]
velocity = [0.0, 0.0, 0.0, 10.0, 0.0, 0.0]
current = [0.0, 0.0, 0.0]

[vehicle.parameters]
mass = 1600
track = 1.6

[vehicle.controls]
steer = {times = [0.0, 2.0, 4.0], values = [0.0, 0.3, -0.3], interpolation = "cubic"}
drive_torque = 500.0
"""

PRESET_TYPES = {"sedan": CarSpec, "kart": CarSpec, "helicopter": HelicopterSpec, "speedboat": BoatSpec,
                "snakeboard": SnakeboardSpec, "truck": CarSpec, "hovercraft": HovercraftSpec,
                "car_trailer": CarTrailerSpec, "tank": TankSpec}
PRESET_FILES = tuple(PRESET_TYPES)


def edit(*pairs: str, text: str = BASE) -> str:
    """BASE with each (old, new) replacement applied once; `old` must be present."""
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def error_of(text: str, source: str = "car.toml") -> str:
    with pytest.raises(MechanismError) as info:
        loads_mechanism(text, source=source)
    return str(info.value)


def vehicle_file(vehicle_lines: str, model: str = "v") -> str:
    return f'format = 1\n[model]\nname = "{model}"\n[vehicle]\n{vehicle_lines}\n'


# ------------------------------------------------------------------------------------------------------
# Reading


def test_base_document_loads_the_preset_with_overrides_and_controls_in_order():
    mech = loads_mechanism(BASE, source="car.toml")
    assert mech.bodies == () and mech.joints == ()
    v = mech.vehicle
    assert v.type == "car" and v.name == "test car"
    assert v.spec == dataclasses.replace(SEDAN, mass=1600.0, track=1.6)  # the preset's name stays the spec's
    assert isinstance(v.spec.mass, float)
    assert v.position == (0.0, 0.0, 0.55) and v.velocity == (0.0, 0.0, 0.0, 10.0, 0.0, 0.0)
    assert v.controls == (("steer", Curve((0.0, 2.0, 4.0), (0.0, 0.3, -0.3), "cubic")), ("drive_torque", 500.0))
    assert v.control("brake_torque") == 0.0


def test_defaults_name_the_vehicle_after_the_model_and_the_spec_after_the_vehicle():
    lines = "\n".join(f"{f.name} = {getattr(KART, f.name)!r}" for f in dataclasses.fields(CarSpec)
                      if f.name != "name")
    mech = loads_mechanism(vehicle_file(f'type = "car"\n[vehicle.parameters]\n{lines}', model="go kart"))
    v = mech.vehicle
    assert v.name == "go kart" and v.spec == dataclasses.replace(KART, name="go kart")
    assert v.position == (0.0, 0.0, 0.0) and v.orientation == (1.0, 0.0, 0.0, 0.0)
    assert v.velocity == (0.0,) * 6 and v.current == (0.0,) * 3 and v.controls == ()


def test_spec_defaults_and_tuple_parameters():
    boat = {f.name: getattr(SPEEDBOAT, f.name) for f in dataclasses.fields(BoatSpec)
            if f.name not in ("name", "water_density")}
    lines = "\n".join(f"{k} = {list(v) if isinstance(v, tuple) else v!r}" for k, v in boat.items())
    v = loads_mechanism(vehicle_file(f'type = "boat"\n[vehicle.parameters]\n{lines}')).vehicle
    assert v.spec.water_density == 1000.0  # the dataclass default
    assert v.spec.drag == (400.0, 3000.0, 6000.0) and isinstance(v.spec.inertia, tuple)


def test_a_file_may_hold_a_mechanism_and_a_vehicle():
    text = edit('[vehicle]', '[[body]]\nname = "bob"\nmass = 1.0\nposition = [0.0, 0.0, -1.0]\n\n'
                '[[joint]]\nname = "hinge"\ntype = "revolute"\nparent = "world"\nchild = "bob"\n'
                'anchor = [0.0, 0.0, 0.0]\naxis = [1.0, 0.0, 0.0]\n\n[vehicle]')
    mech = loads_mechanism(text)
    assert [b.name for b in mech.bodies] == ["bob"] and mech.vehicle.type == "car"
    check_method(mech, "tree")
    check_method(mech, "vehicle")
    assert simulate(mech, 0.01, 3, method="tree").bodies == ["bob"]
    assert simulate(mech, 0.01, 3, method="vehicle").bodies[0] == "chassis"
    assert loads_mechanism(dumps_mechanism(mech)) == mech


def test_messages_name_the_file(tmp_path):
    path = tmp_path / "car.toml"
    path.write_text(edit("mass = 1600", "mass = -1600"), encoding="utf-8")
    with pytest.raises(MechanismError) as info:
        load_mechanism(path)
    assert str(info.value) == (f"{path}: [vehicle.parameters]: car 'sedan': field 'mass' must be a finite "
                               "number > 0, got -1600.0")


# ------------------------------------------------------------------------------------------------------
# Messages. Each case: an edit of BASE and the fragments its message must contain; every message also
# starts with the source "car.toml: ".

STEER = 'steer = {times = [0.0, 2.0, 4.0], values = [0.0, 0.3, -0.3], interpolation = "cubic"}'
CAR_FIELDS = ", ".join(f.name for f in dataclasses.fields(CarSpec))

ERROR_CASES = {
    # the table and its keys
    "vehicle array": (("[vehicle]\n", "[[vehicle]]\n", "[vehicle.parameters]", "[vehicle.parameters_]",
                       "[vehicle.controls]", "[vehicle.controls_]"),
                      ["top level", "field 'vehicle' must be a table written [vehicle]"]),
    "unknown key": (('name = "test car"', 'name = "test car"\ncolor = "red"'),
                    ["[vehicle]", "unknown field 'color'", "valid fields: type, name, preset"]),
    "type missing": (('type = "car"\n', ""), ["[vehicle]", "field 'type' is required"]),
    "unknown type": (('type = "car"', 'type = "tractor"'),
                     ["[vehicle]", "field 'type' must be one of " + ", ".join(VEHICLE_TYPES), 'got "tractor"']),
    "type not a string": (('type = "car"', "type = 1"), ["field 'type' must be a string", "got 1"]),
    "name not a string": (('name = "test car"', "name = 2.0"), ["[vehicle]", "field 'name' must be a string"]),
    "empty name": (('name = "test car"', 'name = ""'), ["[vehicle]", "field 'name' must be a non-empty string"]),
    # presets
    "unknown preset": (('preset = "sedan"', 'preset = "limousine"'),
                       ["field 'preset' must be a 'car' preset: one of sedan, kart", 'got "limousine"']),
    "preset of another type": (('preset = "sedan"', 'preset = "speedboat"'),
                               ["field 'preset' must be a 'car' preset", "(\"speedboat\" is a 'boat' preset)"]),
    "missing parameters without a preset": (('preset = "sedan"\n', ""),
                                            ["[vehicle]", "fields 'parameters.yaw_inertia', 'parameters.wheelbase'",
                                             "are required for a 'car' without a preset",
                                             "(or set preset to one of sedan, kart, truck)"]),
    # parameters
    "unknown parameter": (("track = 1.6", "trak = 1.6"),
                          ["[vehicle]", "unknown field 'parameters.trak' for a 'car' (CarSpec)",
                           "did you mean 'parameters.track'", f"valid fields: {CAR_FIELDS}"]),
    "parameter of another type": (("track = 1.6", "hull_length = 5.0"),
                                  ["unknown field 'parameters.hull_length' for a 'car' (CarSpec)"]),
    "parameter not a number": (("mass = 1600", 'mass = "heavy"'),
                               ["[vehicle]", "field 'parameters.mass' must be a number", 'got "heavy"']),
    "parameter bool": (("mass = 1600", "mass = true"), ["field 'parameters.mass' must be a number", "got true"]),
    "parameters not a table": (("[vehicle.parameters]\nmass = 1600\ntrack = 1.6\n", "",
                                "current = [0.0, 0.0, 0.0]", "current = [0.0, 0.0, 0.0]\nparameters = 3"),
                               ["[vehicle]", "field 'parameters' must be a table", "got 3"]),
    "spec name not a string": (("mass = 1600", "mass = 1600\nname = 5"),
                               ["field 'parameters.name' must be a string"]),
    # VehicleError from the spec and the Vehicle, with the file in front
    "negative mass": (("mass = 1600", "mass = -1.0"),
                      ["car.toml: [vehicle.parameters]: car 'sedan': field 'mass' must be a finite number > 0, "
                       "got -1.0"]),
    "nan mass": (("mass = 1600", "mass = nan"), ["car 'sedan': field 'mass' must be a finite number > 0, got nan"]),
    "steering lock": (("track = 1.6", "track = 1.6\nmax_steer = 1.6"),
                      ["car 'sedan': field 'max_steer' must be below pi/2"]),
    # vectors
    "position length": (("position = [0.0, 0.0, 0.55]", "position = [0.0, 0.55]"),
                        ["[vehicle]", "field 'position' must be a list of 3 numbers", "got [0.0, 0.55]"]),
    "velocity length": (("velocity = [0.0, 0.0, 0.0, 10.0, 0.0, 0.0]", "velocity = [10.0, 0.0, 0.0]"),
                        ["[vehicle]", "field 'velocity' must be a list of 6 numbers", "got [10.0, 0.0, 0.0]"]),
    "orientation length": (("orientation = [1.0, 0.0, 0.0, 0.0]", "orientation = [0.0, 0.0, 0.0]"),
                           ["field 'orientation' must be a list of 4 numbers"]),
    "current length": (("current = [0.0, 0.0, 0.0]", "current = [1.5, 0.0]"),
                       ["field 'current' must be a list of 3 numbers"]),
    "current not a list": (("current = [0.0, 0.0, 0.0]", "current = 1.5"),
                           ["field 'current' must be a list of 3 numbers", "got 1.5"]),
    "position not finite": (("position = [0.0, 0.0, 0.55]", "position = [0.0, inf, 0.55]"),
                            ["[vehicle]", "field 'position' must be 3 finite numbers"]),
    "orientation not unit": (("orientation = [1.0, 0.0, 0.0, 0.0]", "orientation = [1.0, 1.0, 0.0, 0.0]"),
                             ["[vehicle]", "field 'orientation' must be a unit quaternion", "norm 1.41421"]),
    "tuple parameter length": (('type = "car"', 'type = "helicopter"', 'preset = "sedan"', 'preset = "helicopter"',
                                "mass = 1600\ntrack = 1.6", "inertia = [1.0, 2.0, 3.0, 4.0]",
                                STEER + "\ndrive_torque = 500.0", ""),
                               ["field 'parameters.inertia' must be a list of 3 or 6 numbers",
                                "got [1.0, 2.0, 3.0, 4.0]"]),
    "fixed tuple length": (('type = "car"', 'type = "boat"', 'preset = "sedan"', 'preset = "speedboat"',
                            "mass = 1600\ntrack = 1.6", "drag = [400.0, 3000.0]",
                            STEER + "\ndrive_torque = 500.0", ""),
                           ["field 'parameters.drag' must be a list of 3 numbers", "got [400.0, 3000.0]"]),
    "sinking boat": (('type = "car"', 'type = "boat"', 'preset = "sedan"', 'preset = "speedboat"',
                      "mass = 1600\ntrack = 1.6", "mass = 9000.0", STEER + "\ndrive_torque = 500.0", ""),
                     ["car.toml: [vehicle.parameters]: boat 'speedboat': mass 9000.0 kg sinks the hull"]),
    # controls
    "unknown control": (("drive_torque = 500.0", "throttle = 500.0"),
                        ["[vehicle]", "unknown control 'controls.throttle' for a 'car'",
                         "valid controls: drive_torque, brake_torque, steer"]),
    "misspelt control": (("drive_torque = 500.0", "stear = 0.1"),
                         ["unknown control 'controls.stear'", "did you mean 'controls.steer'"]),
    "control of another type": (("drive_torque = 500.0", "collective = 500.0"),
                                ["unknown control 'controls.collective' for a 'car'"]),
    "control not a number": (("drive_torque = 500.0", 'drive_torque = "full"'),
                             ["[vehicle]", "field 'controls.drive_torque' must be a number or a curve", 'got "full"']),
    "control not finite": (("drive_torque = 500.0", "drive_torque = nan"),
                           ["field 'controls.drive_torque' must be a finite number or a curve", "got nan"]),
    "curve times": (("times = [0.0, 2.0, 4.0]", "times = [0.0, 4.0, 2.0]"),
                    ["[vehicle]", "field 'controls.steer.times' must be strictly increasing", "got [0.0, 4.0, 2.0]"]),
    "curve lengths": (("values = [0.0, 0.3, -0.3]", "values = [0.0, 0.3]"),
                      ["field 'controls.steer.values' must be as many numbers as controls.steer.times (3)"]),
    "curve values missing": ((", values = [0.0, 0.3, -0.3]", ""), ["field 'controls.steer.values' is required"]),
    "curve key": (('interpolation = "cubic"', 'interp = "cubic"'),
                  ["unknown field 'controls.steer.interp'", "did you mean 'controls.steer.interpolation'"]),
    "curve interpolation": (('interpolation = "cubic"', 'interpolation = "bezier"'),
                            ["field 'controls.steer.interpolation' must be one of linear, cubic", 'got "bezier"']),
    "empty curve": (("times = [0.0, 2.0, 4.0], values = [0.0, 0.3, -0.3]", "times = [], values = []"),
                    ["field 'controls.steer.times' must be a non-empty list of finite numbers"]),
    "controls not a table": (("[vehicle.controls]\n" + STEER + "\ndrive_torque = 500.0\n", "",
                              "current = [0.0, 0.0, 0.0]", 'current = [0.0, 0.0, 0.0]\ncontrols = "none"'),
                             ["field 'controls' must be a table"]),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_messages(case):
    pairs, fragments = ERROR_CASES[case]
    message = error_of(edit(*pairs))
    assert message.startswith("car.toml: "), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_a_rigid_body_has_no_controls_and_no_presets():
    body = 'type = "rigid_body"\n[vehicle.parameters]\nmass = 2.0\ninertia = [1.0, 2.0, 2.5]\n'
    assert loads_mechanism(vehicle_file(body)).vehicle.spec == RigidBodySpec("v", 2.0, (1.0, 2.0, 2.5))
    message = error_of(vehicle_file(body + "[vehicle.controls]\nsteer = 0.1"))
    assert "unknown control 'controls.steer' for a 'rigid_body'; valid controls: none, a 'rigid_body' has no " \
           "controls" in message
    message = error_of(vehicle_file('type = "rigid_body"\npreset = "sedan"'))
    assert "field 'preset' must be absent (no 'rigid_body' presets exist) (\"sedan\" is a 'car' preset)" in message
    message = error_of(vehicle_file('type = "rigid_body"\n[vehicle.parameters]\nmass = 2.0'))
    assert "field 'parameters.inertia' is required for a 'rigid_body' without a preset" in message


def test_snakeboard_inertia_check_comes_back_with_the_file():
    message = error_of(vehicle_file('type = "snakeboard"\npreset = "snakeboard"\n[vehicle.parameters]\n'
                                    "rotor_inertia = 2.0"))
    assert message.startswith("car.toml: [vehicle.parameters]: snakeboard 'snakeboard': field 'rotor_inertia' "
                              "(2.0) must be below 'yaw_inertia' (1.6)")


def test_no_bodies_and_no_vehicle_is_still_refused():
    message = error_of('format = 1\n[model]\nname = "empty"\n')
    assert "no [[body]] entries; a mechanism needs at least one body (or a [vehicle] table" in message


# ------------------------------------------------------------------------------------------------------
# Vehicles built in code


def test_validate_checks_code_built_vehicles():
    ok = Mechanism("m", (), (), vehicle=Vehicle("car", SEDAN), source="scene 'Cars'")
    assert validate_mechanism(ok) == ok
    bad_inertia = dataclasses.replace(HELICOPTER, inertia=(1.0, math.nan, 1.0))  # the spec lets nan through
    with pytest.raises(MechanismError, match=r"^scene 'Cars': \[vehicle\]: field 'parameters.inertia' must be "
                                             r"finite numbers, got \[1.0, nan, 1.0\]"):
        validate_mechanism(ok.replace(vehicle=Vehicle("helicopter", bad_inertia)))
    twice = Vehicle("car", SEDAN, controls=(("steer", 0.1), ("steer", 0.2)))
    with pytest.raises(MechanismError, match="control 'controls.steer' is given twice"):
        validate_mechanism(ok.replace(vehicle=twice))
    callable_control = Vehicle("car", SEDAN, controls=(("steer", math.sin),))
    with pytest.raises(MechanismError, match="field 'controls.steer' must be a finite number or a curve"):
        dumps_mechanism(ok.replace(vehicle=callable_control))
    bad_curve = Vehicle("car", SEDAN, controls=(("steer", Curve((0.0, 1.0), (0.0,))),))
    with pytest.raises(MechanismError, match=r"field 'controls.steer.values' must be as many numbers"):
        validate_mechanism(ok.replace(vehicle=bad_curve))
    with pytest.raises(MechanismError, match=r"field 'position' must be 3 finite numbers"):
        validate_mechanism(ok.replace(vehicle=Vehicle("car", SEDAN, position=(0.0, math.nan, 0.0))))
    with pytest.raises(MechanismError, match=r"field 'name' must be a non-empty string"):
        validate_mechanism(ok.replace(vehicle=Vehicle("car", SEDAN, name="")))


def test_validate_normalises_a_nearly_unit_orientation():
    v = Vehicle("boat", SPEEDBOAT, orientation=(1.0000004, 0.0, 0.0, 0.0))
    mech = validate_mechanism(Mechanism("m", (), (), vehicle=v))
    assert mech.vehicle.orientation == (1.0, 0.0, 0.0, 0.0)


def round_trip_cases() -> dict[str, Vehicle]:
    steer = Curve((0.0, 0.5, 1.0), (0.0, 0.1, -0.05), "cubic")
    q = (math.cos(0.3), 0.0, 0.0, math.sin(0.3))
    return {
        "preset as it is": Vehicle("car", KART, name="kart"),
        "preset with overrides": Vehicle("car", dataclasses.replace(SEDAN, mass=1700.0, max_steer=0.5),
                                         position=(1.0, -2.0, 0.55), orientation=q, name="heavy sedan",
                                         velocity=(0.0, 0.0, 0.0, 12.5, 0.0, 0.0),
                                         controls=(("steer", steer), ("brake_torque", 10.0))),
        "spec named after the vehicle": Vehicle("car", dataclasses.replace(KART, name="custom"), name="custom"),
        "spec named apart": Vehicle("car", dataclasses.replace(KART, name="chassis \"B\"\t"), name="custom"),
        "spec named after a preset of another type": Vehicle("car", dataclasses.replace(SEDAN, name="speedboat")),
        "helicopter with products of inertia": Vehicle(
            "helicopter", dataclasses.replace(HELICOPTER, inertia=(1433.0, 4973.0, 4099.0, 0.0, 660.0, 0.0)),
            controls=(("collective", 21582.0), ("blade_roll", Curve((0.0,), (0.01,))))),
        "boat in a current": Vehicle("boat", dataclasses.replace(SPEEDBOAT, water_density=1025.0),
                                     position=(0.0, 0.0, 0.21), current=(0.3, 1.5, 0.0),
                                     controls=(("thrust_left", 900.0), ("thrust_right", 1000.0))),
        "snakeboard": Vehicle("snakeboard", SNAKEBOARD, velocity=(0.0, 0.0, 0.0, 1.0, 0.0, 0.0),
                              controls=(("rotor", Curve((0.0, 1.0), (0.0, 0.8))), ("steer", 0.2))),
        "free rigid body": Vehicle("rigid_body", RigidBodySpec("box", 2.0, (1.0, 2.0, 3.5)),
                                   velocity=(0.05, 3.0, 0.1, 0.5, -0.2, 0.3), name="box"),
    }


@pytest.mark.parametrize("case", sorted(round_trip_cases()))
def test_code_built_vehicles_round_trip(case):
    vehicle = round_trip_cases()[case]
    mech = Mechanism("round trip", (), (), gravity=(0.0, 0.0, -1.62), vehicle=vehicle)
    text = dumps_mechanism(mech)
    again = loads_mechanism(text)
    assert again == mech
    assert dumps_mechanism(again) == text


def test_writer_uses_the_preset_and_writes_only_what_differs():
    mech = Mechanism("m", (), (), vehicle=Vehicle("car", dataclasses.replace(SEDAN, mass=1700.0), name="s"))
    text = dumps_mechanism(mech)
    assert '[vehicle]\ntype = "car"\nname = "s"\npreset = "sedan"\n' in text
    assert "[vehicle.parameters]\nmass = 1700.0\n" in text
    assert "wheelbase" not in text and "current" not in text and "[vehicle.controls]" not in text
    full = dumps_mechanism(mech.replace(vehicle=Vehicle("car", dataclasses.replace(SEDAN, name="s"), name="s")))
    assert "preset" not in full and "wheelbase = 2.825" in full and "\nname = \"s\"\n" in full


# ------------------------------------------------------------------------------------------------------
# check_method


def test_check_method_names_the_file_and_what_is_missing():
    mechanism = Mechanism("pendulum", (Body("bob", 1.0),), (Joint("hinge", "revolute", "world", "bob"),),
                          source="presets/pendulum.toml")
    check_method(mechanism, "tree")
    with pytest.raises(MechanismError) as info:
        check_method(mechanism, "vehicle")
    message = str(info.value)
    assert message.startswith("presets/pendulum.toml: no [vehicle] table: the 'vehicle' method")
    assert "'pendulum' has none" in message and "1 [[body]] entries" in message

    vehicle_only = loads_mechanism(BASE, source="car.toml")
    check_method(vehicle_only, "vehicle")
    for method in ("tree", "tree-rk4", "maximal"):
        with pytest.raises(MechanismError) as info:
            check_method(vehicle_only, method)
        assert str(info.value) == (f"car.toml: no [[body]] entries for the {method!r} method: this file describes "
                                   "only a vehicle (a 'car') in its [vehicle] table; simulate it with the 'vehicle' "
                                   "method")


# ------------------------------------------------------------------------------------------------------
# The shipped vehicle presets


@pytest.mark.parametrize("name", PRESET_FILES)
def test_vehicle_preset_loads_round_trips_and_is_the_catalogue_spec(name):
    mech = load_mechanism(vehicle_preset_path(name))
    assert mech.bodies == () and mech.vehicle is not None and mech.gravity == (0.0, 0.0, -9.81)
    assert loads_mechanism(dumps_mechanism(mech)) == mech
    spec = mech.vehicle.spec
    assert type(spec) is PRESET_TYPES[name] and spec.name == name
    assert vehicle_presets()[name] == spec  # the catalogue serves the file's parameters: they exist only there
    assert {key for key, _ in mech.vehicle.controls} <= set(CONTROL_NAMES[mech.vehicle.type])


@pytest.mark.parametrize("name", PRESET_FILES)
def test_vehicle_preset_states_its_units_and_a_source_for_every_parameter(name):
    lines = vehicle_preset_path(name).read_text(encoding="utf-8").splitlines()
    header = lines[: lines.index("format = 1")]
    assert len(header) >= 6 and all(line.startswith("#") or not line for line in header)
    assert "Units" in "\n".join(header) and "--method vehicle" in "\n".join(header)
    start = lines.index("[vehicle.parameters]") + 1
    parameters = lines[start: lines.index("", start)]
    assert len(parameters) == len(dataclasses.fields(PRESET_TYPES[name])) - 1  # every field but the name
    for line in parameters:
        assert "#" in line and len(line.split("#", 1)[1].strip()) > 10, line


def run_preset(name: str):
    trajectory = simulate(load_mechanism(vehicle_preset_path(name)), 0.0416667, 240, method="vehicle")
    assert trajectory.status == "finished", trajectory.message
    assert trajectory.t.shape == (241,) and np.isclose(trajectory.t[-1], 10.0, atol=1e-4)
    assert trajectory.poses.shape == (241, len(trajectory.bodies), 7)
    assert trajectory.energy.shape == trajectory.constraint_residual.shape == (241,)
    assert trajectory.newton_iterations.shape == (240,)
    assert np.allclose(np.linalg.norm(trajectory.poses[..., 3:], axis=-1), 1.0, atol=1e-12)
    return trajectory, trajectory.poses[:, 0]


def yaw(chassis: np.ndarray) -> np.ndarray:
    return np.unwrap(2 * np.arctan2(chassis[:, 6], chassis[:, 3]))


def test_sedan_preset_weaves_through_the_slalom_and_brakes_to_a_stop():
    trajectory, chassis = run_preset("sedan")
    assert np.all(trajectory.constraint_residual < 1e-10)  # no side slip
    heading = yaw(chassis)
    assert np.degrees(heading.max()) > 8 and np.degrees(heading.min()) < -8  # swings both ways
    assert np.sum(np.diff(np.sign(np.diff(chassis[:, 1]))) != 0) >= 3  # the path weaves
    assert abs(heading[-1]) < 0.01  # and comes out of the slalom straight
    assert np.allclose(chassis[-10:, :3], chassis[-1, :3])  # stopped
    assert trajectory.energy[-1] == 0.0 and np.isclose(trajectory.energy[0], 0.5 * 10.0**2 * (
        SEDAN.mass + 2 * (SEDAN.rear_wheel_inertia + SEDAN.front_wheel_inertia) / SEDAN.wheel_radius**2))


def test_kart_preset_takes_the_hairpin():
    trajectory, chassis = run_preset("kart")
    assert np.all(trajectory.constraint_residual < 1e-10)
    assert np.degrees(yaw(chassis)[-1]) > 140
    speed = np.linalg.norm(np.diff(chassis[:, :2], axis=0), axis=1) / 0.0416667
    assert speed[0] < 0.1 and 15 < speed.max() < 30  # from rest, at kart speeds


def test_helicopter_preset_hovers_then_climbs_and_flies_forward():
    trajectory, chassis = run_preset("helicopter")
    assert np.allclose(chassis[:24, :3], (0.0, 0.0, 10.0), atol=1e-9)  # the first second is an exact hover
    assert chassis[-1, 2] > 15 and chassis[-1, 0] > 20  # climbed and moved forward
    assert np.all(trajectory.constraint_residual < 1e-12)


@pytest.mark.heavy
def test_speedboat_preset_floats_and_crabs_across_the_current():
    trajectory, chassis = run_preset("speedboat")
    assert np.all(np.abs(chassis[:, 2] - 0.21) < 0.05)  # stays afloat near its design trim
    assert chassis[-1, 0] > 40  # crossed, heading +x
    assert np.degrees(yaw(chassis)[-1]) < -5  # bow turned upstream
    drift = chassis[:, 1]
    assert drift.max() > 3 and drift[-1] < drift.max()  # carried downstream, then gaining back


def test_snakeboard_preset_gait_speeds_the_board_up():
    trajectory, board = run_preset("snakeboard")
    assert np.all(trajectory.constraint_residual < 1e-12)
    speed = np.linalg.norm(np.diff(board[:, :2], axis=0), axis=1) / 0.0416667
    assert np.isclose(speed[0], 1.0, atol=0.05) and speed[-24:].mean() > 1.2

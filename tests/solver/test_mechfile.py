"""Mechanism files: parsing, validation messages (file, table, entry, field, expected, got) and round trips."""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest

from addon.solver.mechfile.read import load_mechanism, loads_mechanism
from addon.solver.mechfile.validate import validate_mechanism
from addon.solver.mechfile.write import dumps_mechanism, save_mechanism
from addon.solver.model import JOINT_TYPES, Body, Curve, Force, Joint, Mechanism, MechanismError, Motor, Spring

BASE = """\
format = 1

[model]
name = "test rig"
gravity = [0.0, 0.0, -9.81]

[[body]]
name = "arm"
mass = 2.0
position = [0.0, 0.0, -0.5]
orientation = [1.0, 0.0, 0.0, 0.0]
com = [0.0, 0.0, -0.25]
inertia = [0.1, 0.1, 0.01]

[[body]]
name = "tip"
mass = 1
position = [0.0, 0.0, -1.0]
inertia = [0.01, 0.01, 0.01, 0.0, 0.0, 0.0]

[[joint]]
name = "shoulder"
type = "revolute"
parent = "world"
child = "arm"
anchor = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
q0 = 0.5
v0 = 0.0
lower = -1.0
upper = 1.0
motor = {mode = "torque", torque = {times = [0.0, 1.0], values = [0.0, 2.0], interpolation = "linear"}}

[[joint]]
name = "elbow"
type = "cylindrical"
parent = "arm"
child = "tip"
anchor = [0.0, 0.0, -0.5]
axis = [0.0, 0.0, 1.0]
q0 = [0.1, 0.2]
v0 = [0.0, 0.0]
stiffness = 3.0
rest = [0.0, 0.0]
damping = 0.1

[[spring]]
name = "bungee"
body_a = "world"
body_b = "tip"
point_a = [1.0, 0.0, 0.0]
point_b = [0.0, 0.0, 0.0]
stiffness = 10.0
rest_length = 0.5
damping = 0.2

[[force]]
name = "push"
body = "tip"
point = [0.0, 0.0, 0.0]
force = [1.0, 0.0, 0.0]
scale = {times = [0.0, 1.0, 2.0], values = [0.0, 1.0, 0.0], interpolation = "cubic"}
"""

SHOULDER_MOTOR = 'motor = {mode = "torque", torque = {times = [0.0, 1.0], values = [0.0, 2.0], interpolation = "linear"}}'


def edit(*pairs: str, text: str = BASE) -> str:
    """BASE with each (old, new) replacement applied once; `old` must be present."""
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def error_of(text: str, source: str = "rig.toml") -> str:
    with pytest.raises(MechanismError) as info:
        loads_mechanism(text, source=source)
    return str(info.value)


def test_base_document_loads_with_conversions():
    mech = loads_mechanism(BASE, source="rig.toml")
    assert mech.name == "test rig" and mech.source == "rig.toml"
    arm, tip = mech.bodies
    assert arm.inertia == (0.1, 0.1, 0.01, 0.0, 0.0, 0.0)  # 3 principal values -> 6
    assert tip.mass == 1.0 and isinstance(tip.mass, float)
    assert tip.orientation == (1.0, 0.0, 0.0, 0.0) and tip.com == (0.0, 0.0, 0.0)  # defaults
    shoulder, elbow = mech.joints
    assert shoulder.q0 == (0.5,) and shoulder.v0 == (0.0,)  # scalars on a one-dof joint
    assert shoulder.lower == (-1.0,) and shoulder.upper == (1.0,)
    assert shoulder.motor == Motor(mode="torque", torque=Curve((0.0, 1.0), (0.0, 2.0), "linear"))
    assert elbow.q0 == (0.1, 0.2) and elbow.rest == (0.0, 0.0) and elbow.axis2 is None
    assert mech.springs == (Spring("bungee", "world", "tip", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0), 10.0, 0.5, 0.2),)
    assert mech.forces[0].scale == Curve((0.0, 1.0, 2.0), (0.0, 1.0, 0.0), "cubic")


def test_base_document_round_trips():
    mech = loads_mechanism(BASE)
    text = dumps_mechanism(mech)
    assert loads_mechanism(text) == mech
    assert dumps_mechanism(loads_mechanism(text)) == text


def test_setup_order_round_trips_and_defaults_to_2():
    assert loads_mechanism(BASE).order == 2
    assert "[setup]" not in dumps_mechanism(loads_mechanism(BASE))  # the default is not written
    mech = loads_mechanism(BASE.replace("[model]", "[setup]\norder = 6\n\n[model]"))
    assert mech.order == 6
    text = dumps_mechanism(mech)
    assert "[setup]\norder = 6" in text and loads_mechanism(text) == mech
    with pytest.raises(MechanismError, match=r"\[setup\]: field 'order' must be one of 2, 4, 6, 8 .*got 5"):
        dumps_mechanism(mech.replace(order=5))


def test_omitted_coordinates_stay_empty_and_mean_zeros():
    mech = loads_mechanism(edit("q0 = [0.1, 0.2]\nv0 = [0.0, 0.0]\n", ""))
    assert mech.joint("elbow").q0 == () and mech.joint("elbow").v0 == ()
    assert loads_mechanism(dumps_mechanism(mech)) == mech


def test_messages_name_the_file(tmp_path):
    path = tmp_path / "rig.toml"
    path.write_text(edit("mass = 2.0", "mass = -2.0"), encoding="utf-8")
    with pytest.raises(MechanismError) as info:
        load_mechanism(path)
    assert str(info.value) == f"{path}: [[body]] 'arm': field 'mass' must be a finite number >= 0, got -2.0"


def test_the_example_message_of_the_style_guide():
    message = error_of(edit("axis = [0.0, 1.0, 0.0]", "axis = [0, 0, 0]"), source="presets/lift.toml")
    assert message == ("presets/lift.toml: [[joint]] 'shoulder': field 'axis' must be a non-zero 3-vector, "
                       "got [0.0, 0.0, 0.0]")


# Each case: an edit of BASE and the fragments its message must contain. Every message also starts with
# the source "rig.toml: ".
ERROR_CASES = {
    # format
    "format missing": (("format = 1\n", ""), ["top level", "field 'format' is required", "format = 1"]),
    "format 2": (("format = 1", "format = 2"), ["field 'format' must be 1", "got 2"]),
    "format string": (("format = 1", 'format = "1"'), ["field 'format' must be 1", 'got "1"']),
    "format float": (("format = 1", "format = 1.0"), ["field 'format' must be 1", "got 1.0"]),
    # unknown keys, at every level
    "top-level key": (("format = 1", "format = 1\nversion = 2"), ["top level", "unknown field 'version'"]),
    "top-level table": (("[model]", "[vehicles]\ntype = \"car\"\n\n[model]"),
                        ["unknown field 'vehicles'", "did you mean 'vehicle'"]),
    "model key": (("gravity = [", "gravty = ["), ["[model]", "unknown field 'gravty'", "did you mean 'gravity'"]),
    "body key": (("mass = 2.0", "mass = 2.0\ncolour = \"red\""), ["[[body]] 'arm'", "unknown field 'colour'"]),
    "joint key": (('child = "arm"', 'child = "arm"\naxes = [1, 0, 0]'),
                  ["[[joint]] 'shoulder'", "unknown field 'axes'", "did you mean 'axis'"]),
    "motor key": (('mode = "torque",', 'mode = "torque", gain = 1.0,'),
                  ["[[joint]] 'shoulder'", "unknown field 'motor.gain'", 'motor.mode = "torque"']),
    "torque curve key": (('interpolation = "linear"}', 'interpolation = "linear", extrapolate = true}'),
                         ["[[joint]] 'shoulder'", "unknown field 'motor.torque.extrapolate'"]),
    "spring key": (("rest_length = 0.5", "restlength = 0.5"),
                   ["[[spring]] 'bungee'", "unknown field 'restlength'", "did you mean 'rest_length'"]),
    "force key": (("point = [0.0, 0.0, 0.0]\nforce", "where = [0.0, 0.0, 0.0]\nforce"),
                  ["[[force]] 'push'", "unknown field 'where'"]),
    "scale curve key": (('interpolation = "cubic"', 'interp = "cubic"'),
                        ["[[force]] 'push'", "unknown field 'scale.interp'"]),
    # types and lengths
    "mass type": (("mass = 2.0", 'mass = "heavy"'), ["[[body]] 'arm'", "field 'mass' must be a number", 'got "heavy"']),
    "mass bool": (("mass = 2.0", "mass = true"), ["field 'mass' must be a number", "got true"]),
    "position length": (("position = [0.0, 0.0, -0.5]", "position = [0.0, -0.5]"),
                        ["[[body]] 'arm'", "field 'position' must be a list of 3 numbers", "got [0.0, -0.5]"]),
    "inertia length": (("inertia = [0.1, 0.1, 0.01]", "inertia = [0.1, 0.1, 0.01, 0.0]"),
                       ["field 'inertia' must be a list of 3 or 6 numbers", "got [0.1, 0.1, 0.01, 0.0]"]),
    "name type": (('name = "tip"', "name = 7"), ["[[body]] number 2", "field 'name' must be a string", "got 7"]),
    "name missing": (('name = "tip"\n', ""), ["[[body]] number 2", "field 'name' is required"]),
    "q0 type": (("q0 = 0.5", 'q0 = "half"'), ["[[joint]] 'shoulder'", "field 'q0' must be a list of numbers or a number"]),
    "motor type": ((SHOULDER_MOTOR, 'motor = "fast"'), ["field 'motor' must be a table", 'got "fast"']),
    "misspelt table": (("[[body]]\nname = \"arm\"", "[[bodies]]\nname = \"arm\""),
                       ["top level", "unknown field 'bodies'", "did you mean 'body'"]),
    "gravity length": (("gravity = [0.0, 0.0, -9.81]", "gravity = [-9.81]"),
                       ["[model]", "field 'gravity' must be a list of 3 numbers"]),
    "required mass": (("mass = 2.0\n", ""), ["[[body]] 'arm'", "field 'mass' is required"]),
    "required anchor": (("anchor = [0.0, 0.0, 0.0]\n", ""),
                        ["[[joint]] 'shoulder'", "field 'anchor' is required for a 'revolute' joint"]),
    "required axis": (("axis = [0.0, 1.0, 0.0]\n", ""),
                      ["[[joint]] 'shoulder'", "field 'axis' is required for a 'revolute' joint"]),
    "required force": (("force = [1.0, 0.0, 0.0]\n", ""), ["[[force]] 'push'", "field 'force' is required"]),
    # unknown bodies
    "joint child": (('child = "tip"', 'child = "tipp"'),
                    ["[[joint]] 'elbow'", "field 'child' must be a [[body]] name or 'world'", "arm, tip",
                     'got "tipp"']),
    "joint parent": (('parent = "arm"', 'parent = "Arm"'), ["[[joint]] 'elbow'", "field 'parent'", 'got "Arm"']),
    "spring body": (('body_b = "tip"', 'body_b = "top"'), ["[[spring]] 'bungee'", "field 'body_b'", 'got "top"']),
    "force body": (('body = "tip"', 'body = "world"'),
                   ["[[force]] 'push'", "field 'body' must be a [[body]] name", 'got "world"']),
    "body named world": (('name = "tip"', 'name = "world"'),
                         ["[[body]] 'world'", "field 'name' must be a name other than 'world'"]),
    # quaternions
    "zero quaternion": (("orientation = [1.0, 0.0, 0.0, 0.0]", "orientation = [0, 0, 0, 0]"),
                        ["[[body]] 'arm'", "field 'orientation' must be a unit quaternion", "norm 0",
                         "got [0.0, 0.0, 0.0, 0.0]"]),
    "long quaternion": (("orientation = [1.0, 0.0, 0.0, 0.0]", "orientation = [2.0, 0.0, 0.0, 0.0]"),
                        ["field 'orientation' must be a unit quaternion", "norm 2"]),
    # mass and inertia
    "negative mass": (("mass = 2.0", "mass = -2.0"), ["[[body]] 'arm'", "field 'mass' must be a finite number >= 0",
                                                     "got -2.0"]),
    "nan mass": (("mass = 2.0", "mass = nan"), ["field 'mass' must be a finite number", "got nan"]),
    "infinite mass": (("mass = 2.0", "mass = inf"), ["field 'mass' must be a finite number", "got inf"]),
    "indefinite inertia": (("inertia = [0.01, 0.01, 0.01, 0.0, 0.0, 0.0]", "inertia = [1.0, 1.0, 1.0, 2.0, 0.0, 0.0]"),
                           ["[[body]] 'tip'", "field 'inertia' must be positive semi-definite", "-1"]),
    "negative moment": (("inertia = [0.1, 0.1, 0.01]", "inertia = [0.1, 0.1, -0.01]"),
                        ["[[body]] 'arm'", "field 'inertia' must be positive semi-definite"]),
    "triangle inequality": (("inertia = [0.1, 0.1, 0.01]", "inertia = [0.01, 0.1, 0.01]"),
                            ["[[body]] 'arm'", "A + B >= C", "got [0.01, 0.1, 0.01, 0.0, 0.0, 0.0]"]),
    "nan com": (("com = [0.0, 0.0, -0.25]", "com = [0.0, nan, -0.25]"), ["field 'com' must be 3 finite numbers"]),
    # joints
    "zero axis": (("axis = [0.0, 0.0, 1.0]", "axis = [0.0, 0.0, 0.0]"),
                  ["[[joint]] 'elbow'", "field 'axis' must be a non-zero 3-vector"]),
    "q0 too long": (("q0 = 0.5", "q0 = [0.5, 0.1]"),
                    ["[[joint]] 'shoulder'", "field 'q0' must be 1 finite number (one per dof of a 'revolute' joint)",
                     "got [0.5, 0.1]"]),
    "q0 too short": (("q0 = [0.1, 0.2]", "q0 = 0.1"), ["[[joint]] 'elbow'", "field 'q0' must be 2 finite numbers",
                                                       "'cylindrical'", "got [0.1]"]),
    "v0 length": (("v0 = [0.0, 0.0]", "v0 = [0.0, 0.0, 0.0]"), ["[[joint]] 'elbow'", "field 'v0' must be 2"]),
    "lower length": (("lower = -1.0", "lower = [-1.0, -1.0]"), ["[[joint]] 'shoulder'", "field 'lower' must be 1"]),
    "upper length": (("upper = 1.0", "upper = []"), ["[[joint]] 'shoulder'", "field 'upper' must be 1"]),
    "rest length": (("rest = [0.0, 0.0]", "rest = 0.0"), ["[[joint]] 'elbow'", "field 'rest' must be 2"]),
    "lower above upper": (("lower = -1.0\nupper = 1.0", "lower = 1.0\nupper = -1.0"),
                          ["[[joint]] 'shoulder'", "field 'lower' must be <= field 'upper' [-1.0]", "got [1.0]"]),
    "upper -inf": (("upper = 1.0", "upper = -inf"), ["field 'upper' must be 1 finite or inf number"]),
    "q0 outside limits": (("q0 = 0.5", "q0 = 1.5"), ["[[joint]] 'shoulder'", "field 'q0' must be within the limits [-1, 1]",
                                                     "got [1.5]"]),
    "joint type": (('type = "revolute"', 'type = "hinge"'),
                   ["[[joint]] 'shoulder'", "field 'type' must be one of " + ", ".join(JOINT_TYPES), 'got "hinge"']),
    "axis2 on revolute": (("axis = [0.0, 1.0, 0.0]", "axis = [0.0, 1.0, 0.0]\naxis2 = [1.0, 0.0, 0.0]"),
                          ["[[joint]] 'shoulder'", "field 'axis2' must be absent"]),
    "universal needs axis2": (('type = "cylindrical"', 'type = "universal"'),
                              ["[[joint]] 'elbow'", "field 'axis2' is required for a 'universal' joint"]),
    "planar axis2 not perpendicular": (('type = "cylindrical"', 'type = "planar"', "q0 = [0.1, 0.2]\nv0 = [0.0, 0.0]\n",
                                        "axis2 = [0.0, 1.0, 1.0]\n", "rest = [0.0, 0.0]\n", ""),
                                       ["[[joint]] 'elbow'", "field 'axis2' must be perpendicular to 'axis'"]),
    "negative stiffness": (("stiffness = 3.0", "stiffness = -3.0"), ["[[joint]] 'elbow'", "field 'stiffness' must be"]),
    "duplicate body": (('name = "tip"', 'name = "arm"'),
                       ["[[body]] 'arm'", "field 'name' must be unique among [[body]] entries", "entries 1 and 2"]),
    "duplicate joint": (('name = "elbow"', 'name = "shoulder"'),
                        ["[[joint]] 'shoulder'", "field 'name' must be unique among [[joint]] entries"]),
    "self joint": (('parent = "arm"', 'parent = "tip"'),
                   ["[[joint]] 'elbow'", "field 'child' must differ from field 'parent'", 'got "tip" for both']),
    "disconnected body": (("[[joint]]\nname = \"shoulder\"", "[[body]]\nname = \"loose\"\nmass = 1.0\n\n"
                                                              "[[joint]]\nname = \"shoulder\""),
                          ["[[body]] 'loose'", "not connected to 'world' through joints"]),
    "disconnected chain": (('parent = "world"\nchild = "arm"', 'parent = "tip"\nchild = "arm"'),
                           ["[[body]] 'arm', 'tip'", "these bodies are not connected to 'world'"]),
    # curves and motors
    "times not increasing": (("times = [0.0, 1.0]", "times = [0.0, 0.0]"),
                             ["[[joint]] 'shoulder'", "field 'motor.torque.times' must be strictly increasing",
                              "got [0.0, 0.0]"]),
    "times decreasing": (("times = [0.0, 1.0, 2.0]", "times = [0.0, 2.0, 1.0]"),
                         ["[[force]] 'push'", "field 'scale.times' must be strictly increasing"]),
    "curve lengths": (("values = [0.0, 2.0]", "values = [0.0, 2.0, 4.0]"),
                      ["field 'motor.torque.values' must be as many numbers as motor.torque.times (2)",
                       "got [0.0, 2.0, 4.0]"]),
    "empty curve": (("times = [0.0, 1.0], values = [0.0, 2.0]", "times = [], values = []"),
                    ["field 'motor.torque.times' must be a non-empty list of finite numbers"]),
    "interpolation": (('interpolation = "cubic"', 'interpolation = "spline"'),
                      ["[[force]] 'push'", "field 'scale.interpolation' must be one of linear, cubic"]),
    "motor mode": (('mode = "torque"', 'mode = "servo"'), ["field 'motor.mode' must be one of torque, velocity",
                                                           'got "servo"']),
    "torque curve missing": ((SHOULDER_MOTOR, 'motor = {mode = "torque"}'), ["field 'motor.torque' is required"]),
    "velocity motor gain": ((SHOULDER_MOTOR, 'motor = {mode = "velocity", target_velocity = 1.0}'),
                            ["field 'motor.gain' is required"]),
    "motor on two dofs": (("damping = 0.1", 'damping = 0.1\nmotor = {mode = "velocity", target_velocity = 1.0, gain = 2.0}'),
                          ["[[joint]] 'elbow'", "field 'motor' must be absent on a 'cylindrical' joint",
                           "single-dof"]),
    "prescribed on two dofs": (("damping = 0.1", "damping = 0.1\nprescribed = {times = [0.0], values = [0.0]}"),
                               ["[[joint]] 'elbow'", "field 'prescribed' must be absent on a 'cylindrical' joint"]),
    "prescribed and motor": ((SHOULDER_MOTOR, SHOULDER_MOTOR + "\nprescribed = {times = [0.0], values = [0.0]}"),
                             ["[[joint]] 'shoulder'", "'motor' and 'prescribed' exclude each other"]),
    # springs
    "spring to itself": (('body_a = "world"', 'body_a = "tip"'), ["[[spring]] 'bungee'", "field 'body_b' must differ"]),
    "negative rest length": (("rest_length = 0.5", "rest_length = -0.5"),
                             ["[[spring]] 'bungee'", "field 'rest_length' must be a finite number >= 0"]),
    # whole document
    "not toml": (("[model]", "[model"), ["not valid TOML"]),
    "model missing": (('[model]\nname = "test rig"\ngravity = [0.0, 0.0, -9.81]\n', ""), ["[model] table is required"]),
    "model name missing": (('name = "test rig"\n', ""), ["[model]", "field 'name' is required"]),
    # setup
    "order 3": (("[model]", "[setup]\norder = 3\n\n[model]"), ["[setup]", "field 'order' must be one of 2, 4, 6, 8",
                                                                "got 3"]),
    "order float": (("[model]", "[setup]\norder = 4.0\n\n[model]"), ["[setup]", "field 'order'", "got 4.0"]),
    "setup key": (("[model]", "[setup]\nordr = 4\n\n[model]"), ["[setup]", "unknown field 'ordr'"]),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_messages(case):
    pairs, fragments = ERROR_CASES[case]
    message = error_of(edit(*pairs))
    assert message.startswith("rig.toml: "), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_no_bodies():
    text = 'format = 1\n[model]\nname = "empty"\n'
    assert "no [[body]] entries" in error_of(text)


def test_single_body_table_is_refused():
    text = 'format = 1\n[model]\nname = "m"\n[body]\nname = "b"\nmass = 1.0\n'
    message = error_of(text)
    assert "top level: field 'body' must be an array of tables, each written [[body]]" in message


def test_nearly_unit_quaternion_and_long_axis_are_normalised():
    mech = loads_mechanism(edit("orientation = [1.0, 0.0, 0.0, 0.0]", "orientation = [1.0000005, 0.0, 0.0, 0.0]",
                                "axis = [0.0, 1.0, 0.0]", "axis = [0, 3, 4]"))
    assert mech.body("arm").orientation == (1.0, 0.0, 0.0, 0.0)
    assert mech.joint("shoulder").axis == pytest.approx((0.0, 0.6, 0.8), abs=1e-16)
    assert loads_mechanism(dumps_mechanism(mech)) == mech  # normalising twice changes nothing


def test_a_loop_and_a_joint_pointing_towards_the_world_are_fine():
    # tip is the child of two joints (a loop); the extra joint names the world as its child.
    extra = '\n[[joint]]\nname = "tether"\ntype = "ball"\nparent = "tip"\nchild = "world"\nanchor = [0.0, 0.0, -1.0]\n'
    mech = loads_mechanism(edit("[[spring]]", extra + "\n[[spring]]"))
    assert [j.name for j in mech.joints] == ["shoulder", "elbow", "tether"]
    # arm reachable only against a joint's parent -> child direction: still connected
    reversed_chain = edit('parent = "arm"', 'parent = "tip"', 'child = "tip"', 'child = "arm"',
                          'parent = "world"\nchild = "arm"', 'parent = "world"\nchild = "tip"',
                          "anchor = [0.0, 0.0, 0.0]", "anchor = [0.0, 0.0, -1.0]")
    assert loads_mechanism(reversed_chain).joint("elbow").parent == "tip"


def test_massless_leaf_marker_is_accepted():
    marker = '[[body]]\nname = "marker"\nmass = 0.0\n\n'
    fixed = '\n[[joint]]\nname = "mount"\ntype = "fixed"\nparent = "tip"\nchild = "marker"\n'
    mech = loads_mechanism(edit("[[joint]]\nname = \"shoulder\"", marker + "[[joint]]\nname = \"shoulder\"",
                                "[[spring]]", fixed + "\n[[spring]]"))
    assert mech.body("marker").mass == 0.0 and mech.body("marker").inertia == (0.0,) * 6
    assert mech.joint("mount").q0 == ()


def every_joint_type() -> Mechanism:
    """One chain using every joint type and every optional field, with awkward names and numbers."""
    y, z = (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
    kinds = {
        "revolute": dict(axis=y, q0=(0.1,), v0=(0.2,), lower=(-math.inf,), upper=(1.0,),
                         motor=Motor("velocity", target_velocity=2.0, gain=5.0)),
        "prescribed slide": dict(axis=z, prescribed=Curve((0.0, 0.5, 1.0), (0.0, 0.1, 0.0), "cubic")),
        "cylindrical": dict(axis=z, q0=(0.1, 0.2), stiffness=3.0, rest=(0.0, 0.1), damping=0.5),
        "universal": dict(axis=y, axis2=(1.0, 0.0, 0.0), q0=(0.1, -0.1), v0=(1.0, 2.0)),
        "planar": dict(axis=z, axis2=(1.0, 0.0, 0.0), q0=(0.1, 0.2, 0.3), lower=(-1.0, -1.0, -math.inf),
                       upper=(1.0, 1.0, math.inf)),
        "ball": dict(q0=(0.1, 0.2, 0.3), v0=(0.0, 0.0, 1e-300)),
        "free": dict(q0=(1.0, 2.0, 3.0, 0.1, 0.2, 0.3), v0=(0.0,) * 6),
        "fixed": dict(),
    }
    bodies, joints = [], []
    parent = "world"
    for i, (label, extra) in enumerate(kinds.items()):
        kind = "prismatic" if label == "prescribed slide" else label
        name = f'bödy "{label}" \\ {i}'
        bodies.append(Body(name=name, mass=1.0 + i / 3, position=(0.1 * i, -0.0, -i / 7),
                           orientation=(0.5, 0.5, 0.5, 0.5), com=(1e-17, 0.0, 2.5e8),
                           inertia=(2.0, 3.0, 4.0, 0.1, -0.2, 0.05)))
        joints.append(Joint(name=f"{label}\tjoint\n", type=kind, parent=parent, child=name,
                            anchor=(0.0, 0.0, -i / 7), **extra))
        parent = name
    springs = (Spring("s", "world", bodies[-1].name, (0.0, 0.0, 1.0), (0.1, 0.0, 0.0), 5.0, 0.3, 0.1),)
    forces = (Force("wind", bodies[2].name, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
              Force("gust", bodies[3].name, (0.1, 0.0, 0.0), (0.0, 2.0, 0.0), Curve((0.0,), (1.0,))))
    return Mechanism(name="all joints", bodies=tuple(bodies), joints=tuple(joints), gravity=(0.0, 0.0, -1.62),
                     springs=springs, forces=forces)


def test_every_joint_type_and_field_round_trips(tmp_path):
    mech = every_joint_type()
    assert {j.type for j in mech.joints} == set(JOINT_TYPES)
    path = tmp_path / "all.toml"
    save_mechanism(mech, path, header="every joint type\nsecond line")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# every joint type\n# second line\n\nformat = 1\n")
    loaded = load_mechanism(path)
    assert loaded == validate_mechanism(mech) == mech
    assert loaded.source == str(path)


def test_validate_mechanism_checks_code_built_mechanisms():
    bob = Body("bob", 1.0, position=(0.0, 0.0, -1.0))
    ok = Mechanism("m", (bob,), (Joint("hinge", "revolute", "world", "bob"),), source="scene 'Scene'")
    assert validate_mechanism(ok) == ok  # defaults (q0 = (), axis X) are valid
    bad = ok.replace(joints=(Joint("hinge", "revolute", "world", "bob", axis=(0.0, 0.0, 0.0)),))
    with pytest.raises(MechanismError, match=r"^scene 'Scene': \[\[joint\]\] 'hinge': field 'axis'"):
        validate_mechanism(bad)
    with pytest.raises(MechanismError, match="field 'mass'"):
        dumps_mechanism(ok.replace(bodies=(Body("bob", -1.0),)))
    # numpy scalars (as a bridge may produce) are numbers, and are written as plain TOML numbers
    numpy_bob = Body("bob", np.float64(1.5), position=(np.float64(0.1), np.int64(0), -1.0))
    text = dumps_mechanism(ok.replace(bodies=(numpy_bob,)))
    assert "mass = 1.5\nposition = [0.1, 0, -1.0]\n" in text
    assert loads_mechanism(text).body("bob") == numpy_bob


def test_huge_components_normalise_without_overflow():
    # 1.7e308 squared is inf: a norm by sum of squares made this axis (0, 0, 0) (fuzz finding). Files hold
    # numbers within +-1e15 (tomlfile.MAX_MAGNITUDE); a Mechanism built in code may hold any finite number.
    mech = loads_mechanism(BASE)
    joints = tuple(dataclasses.replace(j, axis=(0.0, 1.7e308, 1.7e308)) if j.name == "shoulder" else j
                   for j in mech.joints)
    axis = validate_mechanism(dataclasses.replace(mech, joints=joints)).joint("shoulder").axis
    assert axis == pytest.approx((0.0, math.sqrt(0.5), math.sqrt(0.5)))


def test_numbers_beyond_the_files_range_are_refused_by_field():
    message = error_of(edit("axis = [0.0, 1.0, 0.0]", "axis = [0.0, 1.7e308, 0.0]"), source="rig.toml")
    assert message == "rig.toml: field 'joint[0].axis[1]' must be within +-1e+15 (SI units), got 1.7e+308"


@pytest.mark.parametrize("damage,expected", [
    (b"\xff\xfe", "not UTF-8 text (byte 0xff at offset"),
    (b"gravity = " + b"[" * 3000 + b"]" * 3000, "nested too deeply"),
    (b"x = " + b"9" * 400, "field 'x': integer of 400 digits is too large for a floating-point number"),
    (b"[model\n", "not valid TOML"),
])
def test_unreadable_files_are_mechanism_errors_naming_the_file(tmp_path, damage, expected):
    path = tmp_path / "rig.toml"
    path.write_bytes(damage + b"\n" + BASE.encode())
    with pytest.raises(MechanismError) as info:
        load_mechanism(path)
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)


@pytest.mark.parametrize("make,expected", [
    (lambda p: None, "mechanism file not found"),
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: os.mkfifo(p), r"not a regular file \(a device or pipe\)"),
])
def test_a_path_that_is_no_regular_file_is_named_without_reading_it(tmp_path, make, expected):
    path = tmp_path / "rig.toml"
    make(path)  # a pipe would block a reader for ever
    with pytest.raises(MechanismError, match=expected):
        load_mechanism(path)

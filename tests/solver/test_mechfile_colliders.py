"""[[collider]] tables: parsing, validation messages (file, table, entry, field, expected, got), round trips."""

from __future__ import annotations

import dataclasses

import pytest

from addon.solver.mechfile.read import loads_mechanism
from addon.solver.mechfile.validate import validate_mechanism
from addon.solver.mechfile.write import dumps_mechanism
from addon.solver.model import Body, Collider, Joint, Mechanism, MechanismError

BASE = """\
format = 1

[model]
name = "contact rig"

[[body]]
name = "cube"
mass = 1.0
position = [0.0, 0.0, 0.65]
inertia = [0.0416667, 0.0416667, 0.0416667]

[[joint]]
name = "cube free"
type = "free"
parent = "world"
child = "cube"

[[collider]]
name = "ground"
body = "world"
shape = "plane"
friction = 0.8

[[collider]]
name = "cube box"
body = "cube"
shape = "box"
size = [0.25, 0.25, 0.25]
position = [0.0, 0.0, 0.0]
orientation = [1.0, 0.0, 0.0, 0.0]
friction = 0.5

[[collider]]
name = "knob"
body = "cube"
shape = "sphere"
size = 0.1
position = [0.0, 0.0, 0.3]

[[collider]]
name = "handle"
body = "cube"
shape = "capsule"
size = [0.05, 0.2]
orientation = [0.7071067811865476, 0.7071067811865476, 0.0, 0.0]

[[collider]]
name = "can"
body = "cube"
shape = "cylinder"
size = [0.1, 0.05]
position = [0.3, 0.0, 0.0]

[[collider]]
name = "wedge"
body = "cube"
shape = "hull"
vertices = [[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]]
"""


def edit(*pairs: str, text: str = BASE) -> str:
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def error_of(text: str) -> str:
    with pytest.raises(MechanismError) as info:
        loads_mechanism(text, source="rig.toml")
    return str(info.value)


def test_colliders_load_with_defaults_and_conversions():
    mech = loads_mechanism(BASE, source="rig.toml")
    ground, box, knob, handle, can, wedge = mech.colliders
    assert ground == Collider("ground", "world", "plane", (), friction=0.8)
    assert box.size == (0.25, 0.25, 0.25) and box.friction == 0.5
    assert knob.size == (0.1,) and knob.position == (0.0, 0.0, 0.3)  # bare number -> 1-tuple
    assert knob.orientation == (1.0, 0.0, 0.0, 0.0) and knob.friction == 0.5  # defaults
    assert handle.shape == "capsule" and abs(sum(x * x for x in handle.orientation) - 1.0) < 1e-15
    assert can.size == (0.1, 0.05)
    assert wedge.vertices[1] == (0.2, 0.0, 0.0) and wedge.size == ()
    assert mech.collider("knob") is knob


def test_colliders_round_trip_exactly():
    mech = loads_mechanism(BASE)
    text = dumps_mechanism(mech)
    assert loads_mechanism(text) == mech
    assert dumps_mechanism(loads_mechanism(text)) == text
    assert "vertices" not in text.split("name = \"can\"")[1].split("[[collider]]")[0]  # only hulls write them


def test_a_file_without_colliders_has_none():
    text = BASE.split("[[collider]]")[0]
    assert loads_mechanism(text).colliders == ()
    assert "[[collider]]" not in dumps_mechanism(loads_mechanism(text))


CASES = [
    (("body = \"world\"\nshape = \"plane\"", "body = \"crate\"\nshape = \"plane\""),
     "rig.toml: [[collider]] 'ground': field 'body' must be a [[body]] name or 'world' (bodies: cube), got \"crate\""),
    (("shape = \"plane\"", "shape = \"cone\""),
     "rig.toml: [[collider]] 'ground': field 'shape' must be one of sphere, box, capsule, cylinder, plane, hull, "
     "got \"cone\""),
    (("size = [0.25, 0.25, 0.25]", "size = [0.25, 0.25]"),
     "rig.toml: [[collider]] 'cube box': field 'size' must be 3 finite numbers (half extents hx, hy, hz) for a 'box' "
     "collider, each > 0, got [0.25, 0.25]"),
    (("size = [0.25, 0.25, 0.25]", "size = [0.25, 0.0, 0.25]"),
     "rig.toml: [[collider]] 'cube box': field 'size' must be 3 finite numbers (half extents hx, hy, hz) for a 'box' "
     "collider, each > 0, got [0.25, 0.0, 0.25]"),
    (("size = 0.1", "size = -0.1"),
     "rig.toml: [[collider]] 'knob': field 'size' must be 1 finite number (radius) for a 'sphere' collider, each > 0, "
     "got [-0.1]"),
    (("size = [0.05, 0.2]", "size = [0.0, 0.2]"),
     "rig.toml: [[collider]] 'handle': field 'size' must be 2 finite numbers (radius, half_length) for a 'capsule' "
     "collider, radius > 0 and half_length >= 0, got [0.0, 0.2]"),
    (("size = [0.1, 0.05]", "size = [0.1, inf]"),
     "rig.toml: [[collider]] 'can': field 'size' must be 2 finite numbers (radius, half_length) for a 'cylinder' "
     "collider, each > 0, got [0.1, inf]"),
    (("friction = 0.8", "friction = 0.8\nsize = [1.0]"),
     "rig.toml: [[collider]] 'ground': field 'size' must be absent for a 'plane' collider, got [1.0]"),
    (("friction = 0.8", "friction = -0.8"),
     "rig.toml: [[collider]] 'ground': field 'friction' must be a finite number >= 0, got -0.8"),
    (("friction = 0.8", "friction = 0.8\nvertices = [[0.0, 0.0, 0.0]]"),
     "rig.toml: [[collider]] 'ground': field 'vertices' must be absent for a 'plane' collider (only hulls have "
     "vertices), got [[0.0, 0.0, 0.0]]"),
    (("[0.0, 0.0, 0.2]]", "[0.1, 0.1, 0.0]]"),
     "rig.toml: [[collider]] 'wedge': field 'vertices' must be points spanning a volume (these 4 are all in one "
     "plane: a degenerate hull), got [[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.1, 0.1, 0.0]]"),
    (("[0.0, 0.2, 0.0], [0.0, 0.0, 0.2]]", "[0.4, 0.0, 0.0], [0.6, 0.0, 0.0]]"),
     "rig.toml: [[collider]] 'wedge': field 'vertices' must be points spanning a volume (these 4 are all on one "
     "line: a degenerate hull), got [[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.4, 0.0, 0.0], [0.6, 0.0, 0.0]]"),
    (("vertices = [[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], ", "vertices = ["),
     "rig.toml: [[collider]] 'wedge': field 'vertices' must be at least 4 points [x, y, z] of finite numbers for a "
     "'hull' collider, got [[0.0, 0.2, 0.0], [0.0, 0.0, 0.2]]"),
    (("vertices = [[0.0, 0.0, 0.0]", "vertices = [[0.0, 0.0]"),
     "rig.toml: [[collider]] 'wedge': field 'vertices' must be a list of points [x, y, z], got "
     "[[0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]]"),
    (("orientation = [1.0, 0.0, 0.0, 0.0]\nfriction = 0.5", "orientation = [2.0, 0.0, 0.0, 0.0]\nfriction = 0.5"),
     "rig.toml: [[collider]] 'cube box': field 'orientation' must be a unit quaternion [w, x, y, z] (norm 1 within "
     "1e-06; this one has norm 2), got [2.0, 0.0, 0.0, 0.0]"),
    (("name = \"knob\"", "name = \"ground\""),
     "rig.toml: [[collider]] 'ground': field 'name' must be unique among [[collider]] entries, got \"ground\" for "
     "entries 1 and 3"),
    (("name = \"knob\"\n", ""),
     "rig.toml: [[collider]] number 3: field 'name' is required"),
    (("friction = 0.8", "friction = 0.8\nradius = 1.0"),
     "rig.toml: [[collider]] 'ground': unknown field 'radius'; valid fields: name, body, shape, size, position, "
     "orientation, vertices, friction"),
    (("position = [0.0, 0.0, 0.3]", "position = [0.0, 0.3]"),
     "rig.toml: [[collider]] 'knob': field 'position' must be a list of 3 numbers, got [0.0, 0.3]"),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_error_messages(case):
    pairs, message = case
    assert error_of(edit(*pairs)) == message


def test_collider_table_must_be_an_array_of_tables():
    text = BASE.split("[[collider]]")[0].replace("[model]", "collider = 3\n\n[model]")
    assert error_of(text) == "rig.toml: top level: field 'collider' must be an array of tables, each written " \
                             "[[collider]], got 3"


def test_validate_mechanism_checks_code_built_colliders():
    body = Body("ball", 1.0, inertia=(0.01, 0.01, 0.01, 0.0, 0.0, 0.0))
    free = Joint("free", "free", "world", "ball")
    ok = Mechanism("m", (body,), (free,), colliders=(Collider("ball shape", "ball", "sphere", (0.1,)),),
                   source="scene 'Scene'")
    assert validate_mechanism(ok) == ok
    bad = ok.replace(colliders=(Collider("ball shape", "ball", "sphere", (0.1, 0.2)),))
    with pytest.raises(MechanismError, match=r"^scene 'Scene': \[\[collider\]\] 'ball shape': field 'size'"):
        validate_mechanism(bad)
    # a nearly unit orientation is normalised, as for bodies
    tilted = ok.replace(colliders=(Collider("ball shape", "ball", "sphere", (0.1,), orientation=(1.0000001, 0, 0, 0)),))
    assert validate_mechanism(tilted).colliders[0].orientation == (1.0, 0.0, 0.0, 0.0)


def test_a_hull_of_huge_coordinates_is_judged_without_overflow():
    # Their mean overflowed, the spreads were NaN and a flat hull passed as a solid; files hold numbers
    # within +-1e15, a Mechanism built in code any finite number.
    mech = loads_mechanism(BASE)
    huge = ((0.0, 0.0, 0.0), (1.7e308, 0.0, 0.0), (0.0, 1.7e308, 0.0), (0.0, 0.0, -1.7e308))
    wedge = dataclasses.replace(mech.colliders[-1], vertices=huge)
    checked = validate_mechanism(dataclasses.replace(mech, colliders=mech.colliders[:-1] + (wedge,)))
    assert checked.colliders[-1] == wedge
    flat = dataclasses.replace(wedge, vertices=huge[:3] + ((1.7e308, 1.7e308, 0.0),))
    with pytest.raises(MechanismError, match="a degenerate hull"):
        validate_mechanism(dataclasses.replace(mech, colliders=mech.colliders[:-1] + (flat,)))
    overflowing = dataclasses.replace(wedge, vertices=((1.7e308, 0.0, 0.0), (1.7e308, 1.0, 0.0), (0.0, 1.7e308, 0.0),
                                                       (1.0, 1.0, 0.0)))  # the x column's sum overflows
    with pytest.raises(MechanismError, match="all in one plane: a degenerate hull"):
        validate_mechanism(dataclasses.replace(mech, colliders=mech.colliders[:-1] + (overflowing,)))

"""orient.orient_from_world: a scene's joints turned so every body hangs from the world (no Blender)."""

from __future__ import annotations

from addon.bridge.orient import orient_from_world
from addon.solver.joint_reverse import reversed_joint
from addon.solver.model import WORLD, Joint

HINGE = Joint("hinge", "revolute", WORLD, "a", axis=(1.0, 0.0, 0.0))


def test_a_universal_constraint_written_towards_the_world_is_reversed_with_its_limits_on_their_axes():
    cross = Joint("cross", "universal", "b", "a", (0.0, 0.0, -1.0), axis=(0.0, 1.0, 0.0), axis2=(1.0, 0.0, 0.0),
                  lower=(-0.1, -0.5), upper=(0.2, 0.6))
    errors: list[str] = []
    hinge, turned = orient_from_world(["a", "b"], [HINGE, cross], errors, "rigid body constraint")
    assert errors == [] and hinge == HINGE
    assert turned == reversed_joint(cross)
    assert (turned.parent, turned.child) == ("a", "b")
    assert (turned.axis, turned.axis2) == ((-1.0, -0.0, -0.0), (-0.0, -1.0, -0.0))
    assert (turned.lower, turned.upper) == ((-0.5, -0.1), (0.6, 0.2))  # each limit stays on its axis


def test_a_planar_constraint_towards_the_world_is_an_error_naming_it():
    slide = Joint("slide", "planar", "a", WORLD, axis=(0.0, 0.0, 1.0), axis2=(1.0, 0.0, 0.0))
    errors: list[str] = []
    joints = orient_from_world(["a"], [slide], errors, "rigid body constraint")
    assert errors == ["rigid body constraint 'slide': a planar joint from 'a' to 'world' must be turned round to "
                      "hang from the world; swap its two objects"]
    assert (joints[0].parent, joints[0].child) == (WORLD, "a")  # swapped as it stands, so reading goes on


def test_a_body_no_joint_reaches_gets_a_free_joint_and_its_chain_hangs_from_it():
    link = Joint("link", "revolute", "c", "b", axis=(0.0, 1.0, 0.0))
    errors: list[str] = []
    joints = orient_from_world(["a", "b", "c"], [HINGE, link], errors, "rigid body constraint")
    assert errors == []
    # b, the first body left, floats; c hangs from it through the reversed link
    assert [(j.name, j.type, j.parent, j.child) for j in joints] == [
        ("hinge", "revolute", WORLD, "a"), ("link", "revolute", "b", "c"), ("b (free)", "free", WORLD, "b")]
    assert joints[1].axis == (-0.0, -1.0, -0.0)

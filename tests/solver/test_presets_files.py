"""The shipped presets: they load and round-trip, generated ones match their generator, and every closed
chain is assembled at its reference configuration with a consistent initial velocity.

The geometry checks use only the file data (body poses, joint anchors, axes, v0) against each
mechanism's design (link lengths and where each joint sits on each link), which the tables below
restate independently of the files.
"""

from __future__ import annotations

import math
import re
from collections import deque

import numpy as np
import pytest

from addon.solver.mechfile.read import load_mechanism, loads_mechanism
from addon.solver.mechfile.write import dumps_mechanism
from addon.solver.model import WORLD, Mechanism
from addon.solver.presets import list_presets, preset_path
from tools.generate import generated_presets, pendulum_chain, rod_inertia, scissor_lift

PRESETS = ("pendulum", "double_pendulum", "chain_5", "closed_chain_device", "four_bar", "scissor_lift",
           "slider_crank")


def rotation(quat) -> np.ndarray:
    w, x, y, z = quat
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def world_point(mech: Mechanism, body: str, local) -> np.ndarray:
    """World position at the reference of a body-frame point (the world's frame is the identity)."""
    if body == WORLD:
        return np.asarray(local, dtype=float)
    b = mech.body(body)
    return np.asarray(b.position) + rotation(b.orientation) @ np.asarray(local, dtype=float)


def spanning_tree(mech: Mechanism) -> tuple[list[tuple[int, bool]], list[int]]:
    """Breadth-first tree of the undirected joint graph from the world.

    Returns the tree joints in visiting order as (joint index, traversed parent->child), and the
    remaining (loop-closing) joint indices.
    """
    incident: dict[str, list[int]] = {}
    for i, j in enumerate(mech.joints):
        incident.setdefault(j.parent, []).append(i)
        incident.setdefault(j.child, []).append(i)
    reached, tree, queue = {WORLD}, [], deque([WORLD])
    while queue:
        here = queue.popleft()
        for i in incident.get(here, []):
            j = mech.joints[i]
            forward = j.parent == here
            other = j.child if forward else j.parent
            if other not in reached:
                reached.add(other)
                tree.append((i, forward))
                queue.append(other)
    assert reached == {WORLD} | {b.name for b in mech.bodies}
    in_tree = {i for i, _ in tree}
    return tree, [i for i in range(len(mech.joints)) if i not in in_tree]


def joint_twist(joint) -> np.ndarray:
    """World twist (angular, velocity of the point at the world origin) of the child relative to the parent
    at the reference configuration, from the joint's v0 (revolute and prismatic joints)."""
    axis, anchor = np.asarray(joint.axis), np.asarray(joint.anchor)
    rate = joint.v0[0] if joint.v0 else 0.0
    if joint.type == "revolute":
        return rate * np.concatenate([axis, np.cross(anchor, axis)])
    if joint.type == "prismatic":
        return rate * np.concatenate([np.zeros(3), axis])
    if joint.type == "fixed":
        return np.zeros(6)
    raise NotImplementedError(joint.type)


# ------------------------------------------------------------------------------------------------------
# Every preset


@pytest.mark.parametrize("name", list_presets())
def test_preset_loads_and_round_trips(name):
    mech = load_mechanism(preset_path(name))
    assert mech.source.endswith(f"{name}.toml")
    assert mech.gravity == (0.0, 0.0, -9.81)
    text = dumps_mechanism(mech)
    again = loads_mechanism(text)
    assert again == mech
    assert dumps_mechanism(again) == text


def test_the_mechanism_presets_are_shipped():
    assert set(PRESETS) <= set(list_presets())


@pytest.mark.parametrize("name", list_presets())
def test_preset_starts_with_a_comment_header(name):
    lines = preset_path(name).read_text(encoding="utf-8").splitlines()
    header = lines[: lines.index("format = 1")]
    assert len(header) >= 4 and all(line.startswith("#") or not line for line in header)
    assert "Units" in "\n".join(header)


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _numbers_and_shape(text: str) -> tuple[np.ndarray, str]:
    """The numbers of a preset file's text, and the text with each number replaced by '#'."""
    return np.array([float(n) for n in _NUMBER.findall(text)]), _NUMBER.sub("#", text)


@pytest.mark.parametrize("stem", sorted(generated_presets()))
def test_generated_preset_file_equals_its_generator(stem):
    """The file is what its generator writes: the same text, numbers to 1e-12 relative (generators that turn
    bodies by numpy's sin and cos differ in the last bits between CPUs: its SIMD kernels are chosen per
    machine)."""
    mech, header = generated_presets()[stem]
    path = preset_path(stem)
    stale = f"{path} is stale: run python -m tools.generate"
    file_numbers, file_shape = _numbers_and_shape(path.read_text(encoding="utf-8"))
    made_numbers, made_shape = _numbers_and_shape(dumps_mechanism(mech, header=header))
    assert file_shape == made_shape, stale
    np.testing.assert_allclose(file_numbers, made_numbers, rtol=1e-12, atol=1e-12, err_msg=stale)


# ------------------------------------------------------------------------------------------------------
# Open chains


def test_pendulum_matches_its_description():
    mech = load_mechanism(preset_path("pendulum"))
    (bob,), (hinge,) = mech.bodies, mech.joints
    assert bob.mass == 1.0 and bob.position == (0.0, 0.0, -1.0)
    assert bob.inertia[:3] == pytest.approx([0.4 * 1.0 * 0.05**2] * 3, rel=1e-15)  # solid sphere
    assert (hinge.parent, hinge.axis, hinge.anchor, hinge.q0) == (WORLD, (1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.5,))


def test_pendulum_chain_geometry_and_rod_inertia():
    n, length, mass, radius = 4, 0.7, 2.0, 0.03
    mech = pendulum_chain(n, link_length=length, link_mass=mass, radius=radius, top_angle=0.3)
    assert [b.name for b in mech.bodies] == [f"link_{i}" for i in range(1, n + 1)]
    for i, (body, joint) in enumerate(zip(mech.bodies, mech.joints)):
        assert body.position == pytest.approx((0.0, 0.0, -i * length))
        assert joint.anchor == body.position and joint.axis == (0.0, 1.0, 0.0)
        assert joint.parent == (WORLD if i == 0 else f"link_{i}") and joint.child == body.name
        assert body.com == pytest.approx((0.0, 0.0, -length / 2))
        assert joint.q0 == ((0.3,) if i == 0 else (0.0,))
        # solid cylinder about its centre: (1/12) m (3 r^2 + L^2) across, (1/2) m r^2 along
        perpendicular = mass * (3 * radius**2 + length**2) / 12
        assert body.inertia == pytest.approx((perpendicular, perpendicular, mass * radius**2 / 2, 0, 0, 0),
                                             rel=1e-15)
    assert rod_inertia(1.0, 1.0, 0.0) == (1.0 / 12, 1.0 / 12, 0.0)
    with pytest.raises(ValueError, match="n must be >= 1"):
        pendulum_chain(0)


def test_double_pendulum_is_the_two_link_chain():
    mech = load_mechanism(preset_path("double_pendulum"))
    assert mech == pendulum_chain(2).replace(name="double pendulum")


# ------------------------------------------------------------------------------------------------------
# Closed chains: design tables, restated from the mechanisms' descriptions (not read from the files)

def _scissor_design(segments: int = 5) -> dict[str, list[tuple[str, tuple[float, float, float]]]]:
    """Where each scissor-lift joint sits on its two bodies: link frames at the link's top end, +X along it."""
    end, centre, top = (1.0, 0.0, 0.0), (0.5, 0.0, 0.0), (0.0, 0.0, 0.0)
    design = {"top_pin": [(WORLD, top), ("seg1_a", top)],
              "slider_track": [(WORLD, (math.cos(0.3), 0.0, 0.0)), ("slider", top)],
              "slider_pin": [("slider", top), ("seg1_b", top)]}
    for n in range(1, segments + 1):
        design[f"seg{n}_centre"] = [(f"seg{n}_a", centre), (f"seg{n}_b", centre)]
        if n > 1:
            design[f"seg{n}_left"] = [(f"seg{n - 1}_b", end), (f"seg{n}_a", top)]
            design[f"seg{n}_right"] = [(f"seg{n - 1}_a", end), (f"seg{n}_b", top)]
    return design


ORIGIN = (0.0, 0.0, 0.0)

# joint -> [(body, where the joint sits in that body's frame)], for both bodies of every joint.
DESIGNS = {
    # seed 000 Listing 1: links run along body -Z from their pivots
    "closed_chain_device": {
        "J": [(WORLD, ORIGIN), ("link_J", ORIGIN)],
        "H": [("link_J", (0, 0, -1.0)), ("link_H", ORIGIN)],
        "K": [(WORLD, (-1.5, 0, 0)), ("link_K", ORIGIN)],
        "M": [("link_K", (0, 0, -2.0)), ("link_M", ORIGIN)],
        "A": [(WORLD, (1.5, 0, 0)), ("link_A", ORIGIN)],
        "C": [("link_A", (0, 0, -2.0)), ("link_C", ORIGIN)],
        "E": [("link_C", (0, 0, -0.75)), ("link_E", ORIGIN)],
        "G_G2": [("link_H", (0, 0, -1.0)), ("link_E", (0, 0, -1.0))],
        "O_O2": [("link_H", (0, 0, -2.0)), ("link_M", (0, 0, -1.0))],
    },
    # ground 0.4, crank 0.1, coupler 0.35, rocker 0.3; link frames at the pivot, +X along the link
    "four_bar": {
        "crank_pivot": [(WORLD, ORIGIN), ("crank", ORIGIN)],
        "crank_pin": [("crank", (0.1, 0, 0)), ("coupler", ORIGIN)],
        "rocker_pivot": [(WORLD, (0.4, 0, 0)), ("rocker", ORIGIN)],
        "coupler_pin": [("coupler", (0.35, 0, 0)), ("rocker", (0.3, 0, 0))],
    },
    # crank 0.05, rod 0.15, piston on the Z axis
    "slider_crank": {
        "crank": [(WORLD, ORIGIN), ("crank", ORIGIN)],
        "crank_pin": [("crank", (0.05, 0, 0)), ("rod", ORIGIN)],
        "wrist_pin": [("rod", (0.15, 0, 0)), ("piston", ORIGIN)],
    },
    "scissor_lift": _scissor_design(),
}
LOOPS = {"closed_chain_device": 2, "four_bar": 1, "slider_crank": 1, "scissor_lift": 5}


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_every_joint_sits_where_the_design_puts_it_on_both_bodies(name):
    """At the reference, each joint's world anchor is the designed point of each of its two bodies, so
    the loops are assembled (this is the anchor-matching check of loop joints, done for every joint)."""
    mech = load_mechanism(preset_path(name))
    design = DESIGNS[name]
    assert set(design) <= {j.name for j in mech.joints}
    for joint_name, attachments in design.items():
        joint = mech.joint(joint_name)
        assert {body for body, _ in attachments} == {joint.parent, joint.child}
        for body, local in attachments:
            np.testing.assert_allclose(world_point(mech, body, local), joint.anchor, rtol=0, atol=1e-12,
                                       err_msg=f"{name}: joint {joint_name!r} on {body!r}")


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_closed_chain_has_its_loops_and_starts_at_the_reference(name):
    mech = load_mechanism(preset_path(name))
    _, loops = spanning_tree(mech)
    assert len(loops) == LOOPS[name]
    assert len(mech.joints) - len(mech.bodies) == LOOPS[name]
    for joint in mech.joints:
        assert joint.q0 == (0.0,), f"{name}: {joint.name} must start at the (assembled) reference"
        assert joint.axis == ((0.0, 1.0, 0.0) if joint.type == "revolute" else joint.axis)
    for i in loops:
        loop = mech.joints[i]
        # the loop joint's anchor, expressed in each body's frame and mapped back, is one world point
        points = []
        for body in (loop.parent, loop.child):
            b = mech.body(body)
            local = rotation(b.orientation).T @ (np.asarray(loop.anchor) - np.asarray(b.position))
            points.append(world_point(mech, body, local))
        np.testing.assert_allclose(points[0], points[1], atol=1e-12)


@pytest.mark.parametrize("name", PRESETS)
def test_initial_velocities_are_consistent_around_every_loop(name):
    """Propagate v0 down a spanning tree as world twists; each loop joint's v0 must equal the relative
    twist of its two bodies, so the state is consistent whichever joints a solver cuts."""
    mech = load_mechanism(preset_path(name))
    tree, loops = spanning_tree(mech)
    twist = {WORLD: np.zeros(6)}
    for i, forward in tree:
        j = mech.joints[i]
        if forward:
            twist[j.child] = twist[j.parent] + joint_twist(j)
        else:
            twist[j.parent] = twist[j.child] - joint_twist(j)
    for i in loops:
        j = mech.joints[i]
        np.testing.assert_allclose(twist[j.child] - twist[j.parent], joint_twist(j), rtol=0, atol=1e-12,
                                   err_msg=f"{name}: loop joint {j.name!r}")


def test_four_bar_numbers():
    mech = load_mechanism(preset_path("four_bar"))
    for body, length in (("crank", 0.1), ("coupler", 0.35), ("rocker", 0.3)):
        b = mech.body(body)
        assert b.mass == pytest.approx(0.5 * length, rel=1e-15)
        assert b.com == pytest.approx((length / 2, 0.0, 0.0))
        assert b.inertia == pytest.approx((0.0, b.mass * length**2 / 12, b.mass * length**2 / 12, 0, 0, 0))
    assert mech.joint("crank_pivot").v0 == (6.0,)
    assert mech.joint("coupler_pin").anchor[2] > 0  # the upper (open) assembly branch


def test_slider_crank_numbers():
    mech = load_mechanism(preset_path("slider_crank"))
    assert [mech.body(n).mass for n in ("crank", "rod", "piston")] == [0.5, 0.3, 0.4]
    crank = mech.joint("crank")
    assert crank.prescribed.times == (0.0, 10.0) and crank.prescribed.values == (0.0, 125.66370614359172)
    assert crank.prescribed.values[1] / crank.prescribed.times[1] == pytest.approx(4 * math.pi)  # 2 rev/s
    assert crank.v0 == pytest.approx((4 * math.pi,))
    cylinder = mech.joint("cylinder")
    assert (cylinder.type, cylinder.parent, cylinder.axis) == ("prismatic", WORLD, (0.0, 0.0, 1.0))


def test_closed_chain_device_numbers():
    """Seed 000 Listing 1: 1 kg point masses at the listed points, and the notes' assembled angles."""
    mech = load_mechanism(preset_path("closed_chain_device"))
    masses = {"link_J": -0.5, "link_H": -1.0, "link_K": -1.0, "link_M": -0.5, "link_A": -1.0,
              "link_C": -0.375, "link_E": -0.5}
    for body, z in masses.items():
        b = mech.body(body)
        assert (b.mass, b.com, b.inertia) == (1.0, (0.0, 0.0, z), (0.0,) * 6)

    def angle(body):  # rotation about +Y of the body frame, from its quaternion
        w, x, y, z = mech.body(body).orientation
        assert x == 0.0 and z == 0.0
        return 2.0 * math.atan2(y, w)

    relative = {"J": (WORLD, "link_J"), "H": ("link_J", "link_H"), "K": (WORLD, "link_K"),
                "M": ("link_K", "link_M"), "A": (WORLD, "link_A"), "C": ("link_A", "link_C"),
                "E": ("link_C", "link_E")}
    notes = {"J": -0.4362, "H": 0.8616, "K": -0.5227, "M": 0.4238, "A": 0.0208, "C": 0.9888, "E": 1.1817}
    for joint, (parent, child) in relative.items():
        theta = angle(child) - (0.0 if parent == WORLD else angle(parent))
        assert theta == pytest.approx(notes[joint], abs=5e-4), joint


def test_scissor_lift_generator_other_sizes():
    for segments in (1, 2, 3):
        mech = scissor_lift(segments=segments, theta=0.5)
        assert len(mech.bodies) == 2 * segments + 1
        assert len(mech.joints) - len(mech.bodies) == segments  # one loop per segment
        assert loads_mechanism(dumps_mechanism(mech)) == mech
        lowest = mech.body(f"seg{segments}_a")
        assert lowest.position[2] == pytest.approx(-(segments - 1) * math.sin(0.5))
    with pytest.raises(ValueError, match="segments must be >= 1"):
        scissor_lift(segments=0)

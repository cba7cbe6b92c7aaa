"""The presets with colliders start in a consistent contact state: nothing interpenetrates, resting
pieces touch where they stand, and the moving pieces are clear of what they will hit."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from addon.solver.collision import CollisionWorld
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path

# preset -> {(collider name prefix of A, of B): contacts at the start (distance 0)}
RESTING = {
    "box_drop": {},
    "sphere_chain": {},
    "dominoes": {("ground", "domino_1"): 2, **{("ground", f"domino_{i}"): 4 for i in range(2, 9)}},  # 1 on its edge
    "wrecking_ball": {("ground", "crate_1"): 4, ("crate_1", "crate_2"): 4, ("crate_2", "crate_3"): 4},
    "dominoes_100": {("ground", "domino_1"): 2, **{("ground", f"domino_{i}"): 4 for i in range(2, 101)}},
    "box_pile": {},  # every box 1 cm or more from everything
    # the bottom row on the ground, every brick on the one or two below it that its 0.2 m overlaps (running bond)
    "wrecking_wall": {**{("ground", f"brick_1_{k}"): 4 for k in range(1, 11)},
                      **{(f"brick_{r}_{k}", f"brick_{r + 1}_{j}"): 4 for r in range(1, 10) for k in range(1, 11)
                         for j in ((k - 1, k) if r % 2 else (k, k + 1)) if 1 <= j <= 10}},
}


@pytest.mark.parametrize("name", list(RESTING))
def test_preset_starts_touching_only_where_it_rests(name):
    mech = load_mechanism(preset_path(name))
    world = CollisionWorld(mech)
    positions = np.array([b.position for b in mech.bodies])
    quats = np.array([b.orientation for b in mech.bodies])
    contacts = world.detect(positions, quats, 1e-3)
    assert np.all(np.abs(contacts.distance) < 1e-12)
    names = [c.name.split()[0] for c in mech.colliders]
    pairs = Counter((names[a], names[b]) for a, b in zip(contacts.collider_a, contacts.collider_b))
    assert dict(pairs) == RESTING[name]


def test_box_drop_is_the_papers_cube():
    mech = load_mechanism(preset_path("box_drop"))
    (cube,) = mech.bodies
    box = mech.collider("cube box")
    assert cube.mass == 1.0 and box.size == (0.25, 0.25, 0.25)
    assert cube.position[2] - box.size[2] == pytest.approx(0.4)  # bottom face 0.4 m above the ground
    world = CollisionWorld(mech)
    c = world.detect(np.array([cube.position]), np.array([cube.orientation]), 0.5)
    assert len(c) == 4 and np.allclose(c.distance, 0.4)


def test_wrecking_ball_reaches_the_stack_at_the_bottom_of_its_swing():
    """The chain swung down to vertical (rigid, every link below the pivot): the ball overlaps the
    middle crate, and only that one."""
    mech = load_mechanism(preset_path("wrecking_ball"))
    world = CollisionWorld(mech)
    pivot = np.array(mech.joint("joint_1").anchor)
    positions = np.array([b.position for b in mech.bodies])
    quats = np.array([b.orientation for b in mech.bodies])
    swung = positions.copy()
    hanging = [i for i, b in enumerate(mech.bodies) if not b.name.startswith("crate")]
    radius = np.linalg.norm(positions[hanging] - pivot, axis=1)
    swung[hanging] = pivot + radius[:, None] * np.array([0.0, 0.0, -1.0])
    quats[hanging] = (1.0, 0.0, 0.0, 0.0)
    contacts = world.detect(swung, quats, 0.0)
    names = [c.name for c in mech.colliders]
    hit = {names[b] if names[a] == "ball sphere" else names[a]
           for a, b in zip(contacts.collider_a, contacts.collider_b) if "ball sphere" in (names[a], names[b])}
    assert hit == {"crate_2 box"}
    assert contacts.distance.min() == pytest.approx(-0.01)  # 1 cm deep: it strikes just before the bottom


def test_wrecking_wall_stands_in_the_balls_path():
    """The chain swung down to vertical: the ball overlaps bricks of the wall, and only bricks of its middle
    rows (the ball's centre is 0.65 m up, the wall 1 m high)."""
    mech = load_mechanism(preset_path("wrecking_wall"))
    world = CollisionWorld(mech)
    pivot = np.array(mech.joint("joint_1").anchor)
    positions = np.array([b.position for b in mech.bodies])
    quats = np.array([b.orientation for b in mech.bodies])
    hanging = [i for i, b in enumerate(mech.bodies) if not b.name.startswith("brick")]
    positions[hanging] = pivot + np.linalg.norm(positions[hanging] - pivot, axis=1)[:, None] * (0.0, 0.0, -1.0)
    quats[hanging] = (1.0, 0.0, 0.0, 0.0)
    contacts = world.detect(positions, quats, 0.0)
    names = [c.name for c in mech.colliders]
    hit = {names[b] for a, b in zip(contacts.collider_a, contacts.collider_b) if names[a] == "ball sphere"}
    rows = {int(name.split("_")[1]) for name in hit}
    assert hit and all(name.startswith("brick") for name in hit) and rows <= {6, 7, 8}, hit

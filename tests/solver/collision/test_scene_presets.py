"""The artist-scale contact presets (tools/contact_scenes.py) run with the maximal method: a few steps from the
file, the contacts that matter engaged, no contact deeper than 1 mm, and the expected first motion."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from addon.solver.collision import CollisionWorld
from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path
from tools import contact_scenes

DT = 0.01
DEPTH = 1e-3  # m


def _run(name, steps: int):
    """The preset (or a file), its maximal run of `steps` steps and the contacts (within 0.1 mm) at every stored pose."""
    mech = load_mechanism(name if isinstance(name, Path) else preset_path(name))
    traj = simulate(mech, DT, steps, method="maximal")
    assert traj.status == "finished", traj.message
    world = CollisionWorld(mech)
    return mech, traj, [world.detect(pose[:, :3], pose[:, 3:], 1e-4) for pose in traj.poses]


def _deepest(contacts) -> float:
    return max((-float(c.distance.min()) for c in contacts if len(c)), default=0.0)


def _tilt(quat: np.ndarray) -> float:
    """Angle (rad) between the body's z axis and the world's."""
    _, x, y, _ = quat
    return float(np.arccos(np.clip(1 - 2 * (x * x + y * y), -1.0, 1.0)))


def test_a_hundred_dominoes_stand_while_the_first_falls():
    _, traj, contacts = _run("dominoes_100", 5)
    assert _deepest(contacts) < DEPTH
    first = [_tilt(q) for q in traj.poses[:, 0, 3:]]
    assert np.all(np.diff(first) > 0)  # tipping on, from 10 degrees
    rest = traj.poses[-1, 2:, :]
    assert max(_tilt(q) for q in rest[:, 3:]) < 1e-6 and np.abs(rest[:, 2] - 0.25).max() < DEPTH
    assert len(contacts[-1]) >= 4 * 98  # the standing ones on their four corners


def test_the_box_piles_lowest_layer_lands_on_the_bin_floor():
    """The lowest layer starts 1 cm above the floor: all of it touches down within 0.08 s (0.045 s of free fall,
    then a turned box lands on a corner and tips over onto an edge or a face)."""
    mech, traj, contacts = _run("box_pile", 8)
    assert _deepest(contacts) < DEPTH
    names = [c.name for c in mech.colliders]
    on_floor = {names[b] for c in contacts for a, b in zip(c.collider_a, c.collider_b) if names[a] == "bin floor"}
    assert on_floor == {f"box_{k} box" for k in range(1, 26)}, on_floor  # the whole lowest layer touched down
    assert not any(len(c) for c in contacts[:4])  # nothing touches before 0.04 s
    top = traj.poses[:, -1, 2]
    assert top[0] - top[-1] == pytest.approx(0.5 * 9.81 * (8 * DT) ** 2, rel=1e-6)  # the top layer still falls freely


@pytest.mark.slow
def test_the_wrecking_wall_stands_and_a_thousand_dominoes_run(tmp_path):
    """One step of the 100-brick wall (181 stacked pairs, 724 contact points, where the sparse LU fills in) and two
    of 1000 dominoes written by tools.contact_scenes: no contact deeper than 1 mm, the wall stays up."""
    mech, traj, contacts = _run("wrecking_wall", 1)
    assert _deepest(contacts) < DEPTH
    bricks = [i for i, b in enumerate(mech.bodies) if b.name.startswith("brick")]
    assert np.abs(traj.poses[-1, bricks, :3] - traj.poses[0, bricks, :3]).max() < DEPTH
    path = tmp_path / "dominoes_1000.toml"
    assert contact_scenes.main(["--dominoes", "1000", "--out", str(path)]) == 0
    mech, traj, contacts = _run(path, 2)
    assert len(mech.bodies) == 1000 and _deepest(contacts) < DEPTH and len(contacts[-1]) >= 4 * 998

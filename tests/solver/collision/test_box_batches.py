"""Box-box contacts over all pairs at once (boxbox.py, boxface.py, boxsingle.py) equal the per-pair reference
(boxbox.pair_contacts: features along the SAT normal, GJK/EPA when needed) on random scenes, and contact
manifolds are stable: the same contact set under 1e-9 perturbations of degenerate resting poses, and no
flicker in the number of points of a resting stack over a run of steps."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from addon.solver.collision import CollisionWorld, boxbox
from addon.solver.collision.boxbox import box_box, pair_contacts, separating_axes
from addon.solver.collision.primitives import concatenate
from addon.solver.collision.shapes import world_frames
from addon.solver.integrator import simulate
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism

from .pairs import quat

MARGIN = 0.02


def _boxes(halves, positions=None, quats=None, ground: bool = False) -> Mechanism:
    n = len(halves)
    positions = np.zeros((n, 3)) if positions is None else positions
    quats = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)) if quats is None else quats
    bodies = tuple(Body(f"b{i}", 1.0, position=tuple(map(float, positions[i])), orientation=tuple(map(float, quats[i])),
                        inertia=(0.01, 0.01, 0.01, 0.0, 0.0, 0.0)) for i in range(n))
    joints = tuple(Joint(f"f{i}", "free", WORLD, f"b{i}") for i in range(n))
    colliders = ((Collider("ground", WORLD, "plane"),) if ground else ()) + tuple(
        Collider(f"c{i}", f"b{i}", "box", tuple(map(float, halves[i]))) for i in range(n))
    return Mechanism("boxes", bodies, joints, colliders=colliders)


def _sorted(batch):
    """Contacts ordered by pair, then by point (rounded well above round-off, below any spacing)."""
    key = np.round(batch.point_b / 1e-6)
    order = np.lexsort((key[:, 2], key[:, 1], key[:, 0], batch.b, batch.a))
    return batch.where(order)


def _scene(rng, kind: str, n: int = 12):
    halves = rng.uniform(0.05, 0.2, (n, 3))
    if kind == "cloud":  # random poses, many overlapping or close pairs of every kind
        positions = rng.normal(0.0, 0.25, (n, 3))
        quats = np.array([quat(rng.normal(0.0, 2.0, 3)) for _ in range(n)])
    elif kind == "heap":  # cubes on a grid 2.1 half sizes apart, turned up to ~20 degrees: edges and faces cross
        halves = np.full((n, 3), 0.1)
        positions = np.array([(i % 3, (i // 3) % 3, i // 9) for i in range(n)]) * 0.21 + rng.uniform(-5e-3, 5e-3, (n, 3))
        quats = np.array([quat(rng.normal(0.0, 0.2, 3)) for _ in range(n)])
    else:  # columns of boxes stacked on each other, slightly turned, from 1 mm deep to 1 mm apart
        positions = np.zeros((n, 3))
        quats = np.array([quat(rng.normal(0.0, 0.05, 3)) for _ in range(n)])
        for i in range(n):
            col, level = divmod(i, 5)
            below = positions[i - 1, 2] + halves[i - 1, 2] if level else 0.0
            positions[i] = (0.5 * col + rng.normal(0, 0.03), rng.normal(0, 0.03),
                            below + halves[i, 2] + rng.uniform(-1e-3, 1e-3))
    return halves, positions, quats


@pytest.mark.parametrize("kind", ["cloud", "stack", "heap"])
def test_box_pairs_at_once_equal_the_per_pair_reference(kind, monkeypatch):
    """Points, normals and distances to 1e-9 m (GJK's stopping accuracy where the reference uses it); the
    same number of points for every pair; and most pairs never reach the per-pair path."""
    rng = np.random.default_rng({"cloud": 15, "stack": 16, "heap": 17}[kind])
    per_pair, pairs = Counter(), 0

    def count(*args, **kw):
        per_pair["calls"] += 1
        return pair_contacts(*args, **kw)

    for _ in range(12):
        halves, positions, quats = _scene(rng, kind)
        world = CollisionWorld(_boxes(halves, positions, quats))
        rot, origin = world_frames(world.shapes, positions, quats)
        ia, ib = np.triu_indices(len(halves), 1)
        sep, normal, _ = separating_axes(rot, origin, world.shapes.size, ia, ib)
        close = np.flatnonzero(sep <= MARGIN)
        reference = _sorted(concatenate([pair_contacts(world.shapes, rot, origin, int(ia[k]), int(ib[k]), normal[k],
                                                       float(sep[k]), MARGIN) for k in close]))
        monkeypatch.setattr(boxbox, "pair_contacts", count)
        fast = _sorted(box_box(world.shapes, rot, origin, ia, ib, MARGIN))
        monkeypatch.undo()
        pairs += len(close)
        assert np.array_equal(fast.a, reference.a) and np.array_equal(fast.b, reference.b)
        assert np.allclose(fast.distance, reference.distance, rtol=0, atol=1e-9)
        assert np.allclose(fast.point_a, reference.point_a, rtol=0, atol=1e-9)
        assert np.allclose(fast.point_b, reference.point_b, rtol=0, atol=1e-9)
        assert np.allclose(fast.normal, reference.normal, rtol=0, atol=1e-7)
    assert pairs >= 80 and per_pair["calls"] < 0.5 * pairs, (per_pair, pairs)


def _leaning_domino_centre() -> np.ndarray:
    """Centre of a 0.05 x 0.5 domino turned by 0.3 rad about +y whose far top edge touches, 0.4 m up, the
    face x = 0.275 of an upright domino centred at x = 0.3 (no ground: only the pair)."""
    lean, hx, hz = 0.3, 0.025, 0.25
    c, s = np.cos(lean), np.sin(lean)
    top = np.array([hx * c + hz * s, 0.0, -hx * s + hz * c])  # the corner (+hx, +hz) of the turned box, from its centre
    return np.array([0.275, 0.0, 0.0]) - top + np.array([0.0, 0.0, 0.4])


def _resting_poses():
    """Degenerate resting poses (name, mechanism): faces flush edge to edge, an edge on a face, a corner
    on a face, a box balanced on its edge on the ground, a domino leaning on the next along its top edge."""
    cube = np.full((2, 3), 0.1)
    tipped = quat((0.0, np.pi / 4, 0.0))
    corner_down = quat(np.arctan(np.sqrt(2.0)) * np.array([1.0, -1.0, 0.0]) / np.sqrt(2.0))  # a diagonal vertical
    domino = np.array([[0.025, 0.125, 0.25]] * 2)
    return {
        "flush faces": _boxes(cube, np.array([[0, 0, 0.1], [0, 0, 0.3]]), ground=True),
        "edge on face": _boxes(cube, np.array([[0, 0, 0.1], [0.03, 0, 0.2 + 0.1 * np.sqrt(2)]]),
                               np.array([[1.0, 0, 0, 0], tipped]), ground=True),
        "corner on face": _boxes(cube, np.array([[0, 0, 0.1], [0, 0, 0.2 + 0.1 * np.sqrt(3)]]),
                                 np.array([[1.0, 0, 0, 0], corner_down]), ground=True),
        "edge on ground": _boxes(cube[:1], np.array([[0, 0, 0.1 * np.sqrt(2)]]), np.array([tipped]), ground=True),
        "leaning domino": _boxes(domino, np.array([_leaning_domino_centre(), [0.3, 0, 0.25]]),
                                 np.array([quat((0.0, 0.3, 0.0)), [1.0, 0, 0, 0]])),
    }


@pytest.mark.parametrize("name", list(_resting_poses()))
def test_degenerate_resting_contacts_survive_1e9_perturbations(name):
    """Every body moved by up to 1e-9 m and turned by up to 1e-9 rad, 40 times: the same pairs with the
    same number of points, each point within 1e-8 m of where it was."""
    mech = _resting_poses()[name]
    world = CollisionWorld(mech)
    positions = np.array([b.position for b in mech.bodies])
    quats = np.array([b.orientation for b in mech.bodies])
    exact = world.detect(positions, quats, 1e-3)
    assert len(exact) and np.abs(exact.distance).min() < 1e-12
    counts = Counter(zip(exact.collider_a, exact.collider_b))
    rng = np.random.default_rng(9)
    for _ in range(40):
        turn = np.array([quat(rng.uniform(-1e-9, 1e-9, 3)) for _ in quats])
        moved_q = np.array([_qmul(t, q) for t, q in zip(turn, quats)])
        moved = world.detect(positions + rng.uniform(-1e-9, 1e-9, positions.shape), moved_q, 1e-3)
        assert Counter(zip(moved.collider_a, moved.collider_b)) == counts
        a, b = _sorted_world(exact), _sorted_world(moved)
        assert np.abs(a - b).max() < 1e-8


def _qmul(p, q):
    w1, x1, y1, z1 = p
    w2, x2, y2, z2 = q
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _sorted_world(contacts) -> np.ndarray:
    key = np.round(contacts.point_b_world / 1e-6)
    order = np.lexsort((key[:, 2], key[:, 1], key[:, 0], contacts.collider_b, contacts.collider_a))
    return np.concatenate([contacts.point_a_world[order], contacts.point_b_world[order]], axis=1)


def test_a_resting_stack_keeps_its_contact_points_step_after_step():
    """Three equal cubes stacked flush on the ground (every face pair degenerate: coincident edges) for 20
    steps of the maximal method: every pair keeps exactly 4 points at every step, nothing sinks."""
    cube = np.full((3, 3), 0.1)
    mech = _boxes(cube, np.array([[0, 0, 0.1], [0, 0, 0.3], [0, 0, 0.5]]), ground=True)
    traj = simulate(mech, 0.01, 20, method="maximal")
    assert traj.status == "finished"
    world = CollisionWorld(mech)
    for pose in traj.poses:
        found = world.detect(pose[:, :3], pose[:, 3:], 1e-6)
        assert Counter(zip(found.collider_a, found.collider_b)) == {(0, 1): 4, (1, 2): 4, (2, 3): 4}
        assert found.distance.min() > -1e-6

"""The collision query in C (native/collide.c) gives the numpy query's contact set (native=False, the
reference): the same collider pairs in the same order with the same number of points, the same points,
normals and distances to 1e-12 m, on random scenes of every shape, box stacks and heaps, every preset with colliders,
and degenerate resting poses under 1e-9 perturbations; and a maximal run of the box drop and the dominoes
takes the same steps with either query."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.collision import CollisionWorld, Contacts
from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from addon.solver.native import collide_binding
from addon.solver.presets import list_presets, preset_path

from .pairs import quat
from .test_box_batches import _boxes, _qmul, _resting_poses, _scene

pytestmark = pytest.mark.skipif(collide_binding.LIB is None, reason="C kernels not built (make kernels)")

_SHAPES = (("sphere", (0.15,)), ("box", (0.1, 0.15, 0.2)), ("capsule", (0.08, 0.15)), ("cylinder", (0.1, 0.12)))


def _within_pairs(contacts: Contacts) -> np.ndarray:
    """An order of the contacts by pair, then by point (rounded to 1e-6 m, far above round-off): the order of
    the points of one pair follows a polygon clip's starting vertex, which round-off picks in degenerate poses."""
    key = np.round(contacts.point_b_world / 1e-6)
    return np.lexsort((key[:, 2], key[:, 1], key[:, 0], contacts.collider_b, contacts.collider_a))


def _same(native: Contacts, reference: Contacts, tol: float = 1e-12) -> None:
    assert np.array_equal(native.collider_a, reference.collider_a)
    assert np.array_equal(native.collider_b, reference.collider_b)
    assert np.array_equal(native.body_a, reference.body_a) and np.array_equal(native.body_b, reference.body_b)
    mine, theirs = _within_pairs(native), _within_pairs(reference)
    for field in ("point_a", "point_b", "point_a_world", "point_b_world", "normal", "distance", "friction"):
        gap = getattr(native, field)[mine] - getattr(reference, field)[theirs]
        assert np.abs(gap).max(initial=0.0) <= tol, field


def _both(mech: Mechanism, positions, quats, margin: float | np.ndarray) -> tuple[Contacts, Contacts]:
    native, reference = CollisionWorld(mech), CollisionWorld(mech, native=False)
    assert native.native_query is not None and reference.native_query is None
    return native.detect(positions, quats, margin), reference.detect(positions, quats, margin)


def _mixed_scene(rng, n: int = 30) -> tuple[Mechanism, np.ndarray, np.ndarray]:
    """n bodies in a 1.6 m box above two ground planes, one or two colliders of every solid shape each (at an
    offset, turned), some pairs hinged together (never collide), a world box post."""
    names = [f"b{k}" for k in range(n)]
    bodies = tuple(Body(name, 1.0, inertia=(0.01, 0.01, 0.01, 0.0, 0.0, 0.0)) for name in names)
    hinged = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(4)}
    joints = tuple(Joint(f"{names[a]}-{names[b]}", "revolute", names[a], names[b]) for a, b in hinged)
    joints += tuple(Joint(f"{name} free", "free", WORLD, name) for name in names)
    colliders = [Collider("ground", WORLD, "plane", friction=0.8),
                 Collider("slope", WORLD, "plane", position=(0.0, 0.0, 0.2), orientation=tuple(quat([0.3, 0.0, 0.0]))),
                 Collider("post", WORLD, "box", (0.1, 0.1, 1.0), position=(0.2, 0.0, 0.5))]
    for k, name in enumerate(names):
        for m in range(1 + k % 2):
            shape, size = _SHAPES[int(rng.integers(len(_SHAPES)))]
            colliders.append(Collider(f"{name}.{m}", name, shape, size, friction=float(rng.uniform(0.2, 1.0)),
                                      position=tuple(rng.uniform(-0.1, 0.1, 3)) if m else (0.0, 0.0, 0.0),
                                      orientation=tuple(quat(rng.normal(0, 1, 3)))))
    positions = rng.uniform([-0.8, -0.8, 0.0], [0.8, 0.8, 0.8], (n, 3))
    quats = np.array([quat(rng.normal(0.0, 1.5, 3)) for _ in range(n)])
    return Mechanism("mixed", bodies, joints, colliders=tuple(colliders)), positions, quats


def test_random_scenes_of_every_shape_give_the_numpy_contacts():
    rng = np.random.default_rng(21)
    kinds = set()
    for _ in range(3):
        mech, positions, quats = _mixed_scene(rng)
        native, reference = _both(mech, positions, quats, 0.02)
        _same(native, reference)
        shape = [c.shape for c in mech.colliders]
        kinds |= {tuple(sorted((shape[a], shape[b]))) for a, b in zip(native.collider_a, native.collider_b)}
    # every pair kind the C kernel finishes itself was met, and some it hands back to numpy
    assert {("plane", "sphere"), ("box", "plane"), ("capsule", "plane"), ("sphere", "sphere"), ("box", "sphere"),
            ("capsule", "sphere"), ("capsule", "capsule"), ("box", "box"), ("cylinder", "plane")} <= kinds, kinds


@pytest.mark.heavy
def test_a_margin_per_body_gives_the_numpy_contacts_within_each_pairs_larger_margin():
    """Margins per body in levels (maximal/interior_point.query_margins: 1 mm times a power of 2, the world's 0):
    C and numpy agree, and every pair's contacts are the one-margin query's at its larger margin."""
    rng = np.random.default_rng(23)
    mech, positions, quats = _mixed_scene(rng)
    margin = 1e-3 * 2.0 ** rng.integers(0, 6, len(mech.bodies))
    native, reference = _both(mech, positions, quats, margin)
    _same(native, reference)
    wide = CollisionWorld(mech).detect(positions, quats, float(margin.max()))
    body_margin = np.append(margin, 0.0)  # the world (-1) last
    within = wide.distance <= np.maximum(body_margin[wide.body_a], body_margin[wide.body_b])
    pairs = set(zip(wide.collider_a[within].tolist(), wide.collider_b[within].tolist()))
    assert set(zip(reference.collider_a.tolist(), reference.collider_b.tolist())) == pairs
    assert len(pairs) >= 10 and len(pairs) < len(set(zip(wide.collider_a.tolist(), wide.collider_b.tolist())))


@pytest.mark.parametrize("kind", ["cloud", "stack", "heap"])
def test_box_stacks_heaps_and_clouds_give_the_numpy_contacts(kind):
    rng = np.random.default_rng({"cloud": 31, "stack": 32, "heap": 33}[kind])
    total = 0
    for _ in range(8):
        halves, positions, quats = _scene(rng, kind)
        native, reference = _both(_boxes(halves, positions, quats, ground=True), positions, quats, 0.02)
        _same(native, reference)
        total += len(native)
    assert total >= 100


def test_a_layer_of_equal_boxes_within_a_wide_margin_gives_the_numpy_contacts():
    """Equal cubes turned about z only (their tops and bottoms coplanar: faces' sides along each other, the
    degenerate poses of a pile's layer) 0-8 cm apart, queried with a falling pile's 0.2 m margin: most box
    pairs are separated and settled in C from their nearest points or their SAT manifold."""
    rng = np.random.default_rng(51)
    left = pairs = 0
    for _ in range(4):
        n = 16
        grid = np.array([(i % 4, i // 4, 0) for i in range(n)], dtype=float) * 0.25
        positions = grid + np.c_[rng.uniform(-0.02, 0.02, (n, 2)), np.full(n, 0.1)]
        quats = np.array([quat((0.0, 0.0, rng.uniform(-0.4, 0.4))) for _ in range(n)])
        mech = _boxes(np.full((n, 3), 0.1), positions, quats, ground=True)
        native, reference = _both(mech, positions, quats, 0.2)
        _same(native, reference)
        _, leftover = CollisionWorld(mech).native_query.run(positions, quats, 0.2)
        left += len(leftover)
        pairs += len(set(zip(native.collider_a.tolist(), native.collider_b.tolist())))
    assert pairs >= 200 and left < 0.5 * pairs, (left, pairs)


@pytest.mark.parametrize("name", [n for n in list_presets() if load_mechanism(preset_path(n)).colliders])
def test_every_preset_with_colliders_gives_the_numpy_contacts(name):
    """At the preset's start and with every body shifted by up to 2 cm and turned by up to 0.1 rad."""
    mech = load_mechanism(preset_path(name))
    positions = np.array([b.position for b in mech.bodies])
    quats = np.array([b.orientation for b in mech.bodies])
    rng = np.random.default_rng(41)
    moved_q = np.array([_qmul(quat(rng.uniform(-0.1, 0.1, 3)), q) for q in quats])
    for pos, q in ((positions, quats), (positions + rng.uniform(-0.02, 0.02, positions.shape), moved_q)):
        _same(*_both(mech, pos, q, 1e-3))


@pytest.mark.parametrize("name", list(_resting_poses()))
def test_degenerate_resting_poses_give_the_numpy_contacts_under_1e9_perturbations(name):
    mech = _resting_poses()[name]
    positions = np.array([b.position for b in mech.bodies])
    quats = np.array([b.orientation for b in mech.bodies])
    native, reference = CollisionWorld(mech), CollisionWorld(mech, native=False)
    rng = np.random.default_rng(7)
    for k in range(20):
        turn = np.array([quat(rng.uniform(-1e-9, 1e-9, 3)) for _ in quats]) if k else np.tile([1.0, 0, 0, 0], (len(quats), 1))
        pos = positions + (rng.uniform(-1e-9, 1e-9, positions.shape) if k else 0.0)
        q = np.array([_qmul(t, qq) for t, qq in zip(turn, quats)])
        _same(native.detect(pos, q, 1e-3), reference.detect(pos, q, 1e-3))


@pytest.mark.heavy
@pytest.mark.parametrize("name, steps", [("box_drop", 40), ("dominoes", 60)])
def test_a_maximal_run_takes_the_same_steps_with_either_query(name, steps, monkeypatch):
    """The box lands and rests, the first dominoes topple onto the next: poses equal to 1e-12 m."""
    mech = load_mechanism(preset_path(name))
    native = simulate(mech, 0.01, steps, method="maximal")
    monkeypatch.setattr(collide_binding, "LIB", None)
    reference = simulate(mech, 0.01, steps, method="maximal")
    assert native.status == reference.status == "finished"
    assert np.abs(native.poses - reference.poses).max() <= 1e-12
    world = CollisionWorld(mech, native=False)
    last = world.detect(native.poses[-1][:, :3], native.poses[-1][:, 3:], 1e-3)
    touching = last.body_a >= 0 if name == "dominoes" else last.body_b >= 0  # domino on domino; cube on ground
    assert touching.any()

"""Properties every pair must have: GJK/EPA agrees with the closed forms, swapping A and B flips the
normal only, a rigid motion of everything moves the contacts with it; broad phase and pair filter."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from addon.solver.collision import CollisionWorld
from addon.solver.collision.boxbox import box_box, separating_axes
from addon.solver.collision.broadphase import sweep_pairs
from addon.solver.collision.convex import convex_pair
from addon.solver.collision.primitives import (capsule_capsule, reduce_points, sphere_box, sphere_capsule,
                                               sphere_sphere)
from addon.solver.collision.shapes import aabbs, support, world_frames
from addon.solver.lie import quat_to_matrix
from addon.solver.model import Body, Collider, Joint, Mechanism

from .pairs import pair_world, quat

SHAPES = {
    "sphere": ((0.2,), ()),
    "box": ((0.3, 0.2, 0.15), ()),
    "capsule": ((0.1, 0.25), ()),
    "cylinder": ((0.15, 0.2), ()),
    "hull": ((), ((0.0, 0.0, 0.0), (0.4, 0.0, 0.05), (0.0, 0.35, 0.0), (0.05, 0.0, 0.4), (0.3, 0.3, 0.3))),
}
SOLIDS = list(SHAPES)


def world_of(shape_a, shape_b, swap=False):
    (sa, va), (sb, vb) = SHAPES[shape_a], SHAPES[shape_b]
    return pair_world(shape_a, sa, shape_b, sb, va, vb, swap=swap)


def random_poses(rng, spread=0.45):
    positions = np.array([[0.0, 0.0, 0.0], rng.normal(0.0, spread, 3)])
    quats = np.array([quat(rng.normal(0.0, 1.5, 3)) for _ in range(2)])
    return positions, quats


def frames(world, positions, quats):
    return world_frames(world.shapes, positions, quats)


CLOSED_FORMS = {("sphere", "sphere"): sphere_sphere, ("sphere", "box"): sphere_box,
                ("sphere", "capsule"): sphere_capsule, ("capsule", "capsule"): capsule_capsule}


@pytest.mark.parametrize("pair", list(CLOSED_FORMS))
def test_gjk_and_epa_agree_with_closed_forms(pair):
    """Nearest distance and its normal by GJK (apart) and EPA (overlapping) against the closed form."""
    rng = np.random.default_rng(7)
    world = world_of(*pair)
    kernel = CLOSED_FORMS[pair]
    checked = {"apart": 0, "overlapping": 0}
    for _ in range(60):
        positions, quats = random_poses(rng)
        rot, origin = frames(world, positions, quats)
        exact = kernel(rot, origin, world.shapes.size, np.array([0]), np.array([1]), 10.0)
        general = convex_pair(world.shapes, 0, 1, rot, origin, 10.0)
        k, g = int(np.argmin(exact.distance)), int(np.argmin(general.distance))
        assert abs(exact.distance[k] - general.distance[g]) < 1e-8
        if exact.distance[k] > -0.9 * SHAPES[pair[0]][0][0]:  # the normal is unique unless a centre is deep inside
            assert np.allclose(exact.normal[k], general.normal[g], atol=1e-4)
        checked["apart" if exact.distance[k] > 0 else "overlapping"] += 1
    assert min(checked.values()) >= 5, checked


def test_box_box_sat_against_gjk():
    """Overlapping: the SAT depth equals EPA's; apart: box_box hands the pair to GJK."""
    rng = np.random.default_rng(3)
    world = world_of("box", "box")
    seen = {"apart": 0, "overlap": 0, "edge": 0}
    for _ in range(80):
        positions, quats = random_poses(rng, spread=0.4)
        rot, origin = frames(world, positions, quats)
        sat = box_box(world.shapes, rot, origin, np.array([0]), np.array([1]), 10.0)
        gjk = convex_pair(world.shapes, 0, 1, rot, origin, 10.0)
        d_sat, d_gjk = sat.distance.min(), gjk.distance.min()
        assert abs(d_sat - d_gjk) < 1e-8
        k, m = int(np.argmin(sat.distance)), int(np.argmin(gjk.distance))
        assert np.allclose(sat.normal[k], gjk.normal[m], atol=1e-5)
        seen["overlap" if d_gjk < 0 else "apart"] += 1
        seen["edge"] += int(separating_axes(rot, origin, world.shapes.size, np.array([0]), np.array([1]))[2][0] >= 6)
    assert min(seen.values()) >= 5, seen


def _sorted_contacts(batch):
    order = np.lexsort(np.round(np.column_stack([batch.distance, batch.point_a]), 9).T[::-1])
    return batch.distance[order], batch.normal[order], batch.point_a[order], batch.point_b[order]


@pytest.mark.parametrize("pair", list(itertools.combinations_with_replacement(SOLIDS, 2)))
def test_swapping_a_and_b_flips_only_the_normal(pair):
    rng = np.random.default_rng(11)
    world = world_of(*pair)
    for _ in range(25):
        positions, quats = random_poses(rng)
        rot, origin = frames(world, positions, quats)
        ab = convex_pair(world.shapes, 0, 1, rot, origin, 0.2)
        ba = convex_pair(world.shapes, 1, 0, rot, origin, 0.2)
        assert len(ab) == len(ba)
        if not len(ab):
            continue
        assert abs(ab.distance.min() - ba.distance.min()) < 1e-8
        k, m = int(np.argmin(ab.distance)), int(np.argmin(ba.distance))
        assert np.allclose(ab.normal[k], -ba.normal[m], atol=1e-4)
        # every point: distance = normal . (point_b - point_a), whichever is A
        for batch in (ab, ba):
            assert np.allclose(np.einsum("ki,ki->k", batch.normal, batch.point_b - batch.point_a), batch.distance)


@pytest.mark.parametrize("pair", list(itertools.product(["plane"] + SOLIDS, SOLIDS)))
def test_world_query_does_not_depend_on_collider_order(pair):
    rng = np.random.default_rng(5)
    size_a, verts_a = SHAPES.get(pair[0], ((), ()))
    size_b, verts_b = SHAPES[pair[1]]
    one = pair_world(pair[0], size_a, pair[1], size_b, verts_a, verts_b)
    two = pair_world(pair[0], size_a, pair[1], size_b, verts_a, verts_b, swap=True)
    for _ in range(10):
        positions, quats = random_poses(rng)
        c1, c2 = one.detect(positions, quats, 0.2), two.detect(positions, quats, 0.2)
        assert len(c1) == len(c2)
        assert np.allclose(np.sort(c1.distance), np.sort(c2.distance), atol=1e-12)


def test_reduce_points_keeps_no_point_twice():
    """A clipped vertex lying on the other polygon's side comes out of the clip twice, a round-off
    apart: it is one contact (as is a point on the segment between two), however few points there are."""
    n = np.array([0.0, 0.0, 1.0])
    square = np.array([[1.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [-1.0, -1.0, 0.0], [1.0, -1.0, 0.0]]) + [10.0, -20.0, 5.0]
    twice = np.vstack([square[:3], square[2] * (1 + 4 * np.finfo(float).eps)])
    depth = np.array([0.0, -1e-3, 0.0, 0.0])
    kept = set(reduce_points(twice, depth, n).tolist())
    assert len(kept) == 3 and {0, 1} < kept  # either of the twins
    assert len(reduce_points(square, np.zeros(4), n)) == 4
    on_segment = np.vstack([square[:2], 0.5 * (square[0] + square[1])])
    assert sorted(reduce_points(on_segment, np.zeros(3), n)) == [0, 1]
    assert len(reduce_points(np.vstack([square[:1], square[:1] * (1 - 2 * np.finfo(float).eps)]), np.zeros(2), n)) == 1


@pytest.mark.parametrize("pair", list(itertools.product(["plane"] + SOLIDS, SOLIDS)))
def test_contacts_do_not_depend_on_round_off(pair):
    """Poses changed by a few ulps (what another BLAS kernel's rounding does to every product) give
    the same contact count and the same distances, to the accuracy EPA stops at (1e-9 of the size)."""
    rng, ulps = np.random.default_rng(5), np.random.default_rng(1)
    size_a, verts_a = SHAPES.get(pair[0], ((), ()))
    size_b, verts_b = SHAPES[pair[1]]
    world = pair_world(pair[0], size_a, pair[1], size_b, verts_a, verts_b)
    wiggle = 4 * np.finfo(float).eps
    for _ in range(10):
        positions, quats = random_poses(rng)
        exact = world.detect(positions, quats, 0.2)
        for _ in range(2):
            moved = world.detect(positions * (1 + wiggle * ulps.uniform(-1, 1, positions.shape)),
                                 quats * (1 + wiggle * ulps.uniform(-1, 1, quats.shape)), 0.2)
            assert len(moved) == len(exact)
            assert np.allclose(np.sort(moved.distance), np.sort(exact.distance), rtol=0, atol=1e-8)


def test_epa_against_a_flat_cylinder_end_survives_round_off():
    """A hull sunk 6.7 cm into a cylinder's end: EPA's support points on the flat end share a plane,
    so whether a new point is beyond a face there is decided by round-off. The polytope must stay
    convex whatever the rounding: the same two contacts for 20 poses a few ulps apart (a folded
    polytope gave one contact at +0.14 m, or none)."""
    rng, ulps = np.random.default_rng(5), np.random.default_rng(1)
    world = world_of("cylinder", "hull")
    positions, quats = [random_poses(rng) for _ in range(4)][-1]
    exact = world.detect(positions, quats, 0.2)
    assert len(exact) == 2 and np.all(exact.distance < -0.06)
    wiggle = 4 * np.finfo(float).eps
    for _ in range(20):
        moved = world.detect(positions * (1 + wiggle * ulps.uniform(-1, 1, positions.shape)),
                             quats * (1 + wiggle * ulps.uniform(-1, 1, quats.shape)), 0.2)
        assert len(moved) == 2 and np.allclose(np.sort(moved.distance), np.sort(exact.distance), rtol=0, atol=1e-8)


@pytest.mark.parametrize("pair", list(itertools.product(["plane"] + SOLIDS, SOLIDS)))
def test_rigid_motion_moves_contacts_along(pair):
    """Moving both bodies by one rigid motion leaves distances and body-frame points unchanged and
    rotates the normals."""
    rng = np.random.default_rng(13)
    size_a, verts_a = SHAPES.get(pair[0], ((), ()))
    size_b, verts_b = SHAPES[pair[1]]
    world = pair_world(pair[0], size_a, pair[1], size_b, verts_a, verts_b)
    found = 0
    for _ in range(15):
        positions, quats = random_poses(rng)
        motion_q, motion_t = quat(rng.normal(0.0, 2.0, 3)), rng.normal(0.0, 3.0, 3)
        motion_r = quat_to_matrix(motion_q)
        moved_pos = positions @ motion_r.T + motion_t
        moved_q = np.array([_quat_mul(motion_q, q) for q in quats])
        before, after = world.detect(positions, quats, 0.1), world.detect(moved_pos, moved_q, 0.1)
        assert len(before) == len(after)
        if not len(before):
            continue
        found += 1
        d0, n0, a0, b0 = _sorted_contacts(before)
        d1, n1, a1, b1 = _sorted_contacts(after)
        assert np.allclose(d0, d1, atol=1e-9)
        # GJK/EPA stop when the distance is converged to ~1e-12 (relative); on curved pieces (cylinder
        # rims) the witness points and the normal are then known to about the square root of that
        assert np.allclose(a0, a1, atol=1e-5) and np.allclose(b0, b1, atol=1e-5)
        assert np.allclose(n0 @ motion_r.T, n1, atol=1e-5)
    assert found >= 3


def _quat_mul(p, q):
    w1, x1, y1, z1 = p
    w2, x2, y2, z2 = q
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def test_sweep_finds_exactly_the_overlapping_boxes():
    rng = np.random.default_rng(2)
    centre = rng.uniform(-3, 3, (300, 3)) * np.array([1.0, 0.3, 0.1])
    half = rng.uniform(0.05, 0.4, (300, 3))
    lower, upper = centre - half, centre + half
    i, j = sweep_pairs(lower, upper)
    found = set(zip(i.tolist(), j.tolist()))
    brute = {(a, b) for a in range(300) for b in range(a + 1, 300)
             if np.all(lower[a] <= upper[b]) and np.all(lower[b] <= upper[a])}
    assert found == brute and len(found) > 50



def test_candidate_pairs_are_exactly_the_brute_force_pairs_on_random_scenes():
    """CollisionWorld.candidate_pairs (sort-and-sweep, planes against all boxes, pair filter; no per-pair
    Python) against every collider pair tested one by one: bounding boxes grown by half the margin meet,
    a plane within half the margin of a grown box's nearest corner, never two colliders of one body,
    two world colliders or two bodies joined by anything but a free joint."""
    rng = np.random.default_rng(11)
    corners = np.array(list(itertools.product((0, 1), repeat=3)))
    for scene in range(3):
        n = 40
        names = [f"b{k}" for k in range(n)]
        bodies = tuple(Body(name, 1.0, position=tuple(rng.uniform([-2, -1, 0], [2, 1, 1.0]))) for name in names)
        hinged = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(10)}
        joints = tuple(Joint(f"{names[a]}-{names[b]}", "revolute", names[a], names[b]) for a, b in hinged)
        joints += tuple(Joint(f"{name} free", "free", "world", name) for name in names)
        colliders = [Collider("ground", "world", "plane"),
                     Collider("slope", "world", "plane", position=(0.0, 0.0, 0.3), orientation=quat([0.4, 0.0, 0.0])),
                     Collider("post", "world", "box", (0.1, 0.1, 1.0))]
        for k, name in enumerate(names):
            for m in range(1 + k % 2):
                shape = SOLIDS[int(rng.integers(3))]  # sphere, box, capsule
                colliders.append(Collider(f"{name}.{m}", name, shape, SHAPES[shape][0],
                                          position=tuple(rng.uniform(-0.2, 0.2, 3)), orientation=quat(rng.normal(0, 1, 3))))
        world = CollisionWorld(Mechanism(f"scene {scene}", bodies, joints, colliders=tuple(colliders)))
        positions = np.array([b.position for b in bodies])
        quats = np.array([quat(rng.normal(0.0, 1.5, 3)) for _ in range(n)])
        margin = 0.1
        rot, origin = world_frames(world.shapes, positions, quats)
        i, j = world.candidate_pairs(rot, origin, margin)
        found = {tuple(sorted(p)) for p in zip(i.tolist(), j.tolist())}
        assert len(found) == len(i)  # no pair twice
        lower, upper = aabbs(world.shapes, rot, origin)
        lower, upper = lower - margin, upper + margin  # each box grown by its margin
        body = world.shapes.body.tolist()
        plane = [c.shape == "plane" for c in colliders]
        joined = {(a, b) for a, b in hinged}
        brute = set()
        for a, b in itertools.combinations(range(len(colliders)), 2):
            ba, bb = body[a], body[b]
            if ba == bb or tuple(sorted((ba, bb))) in joined:
                continue
            if plane[a] or plane[b]:
                p, box = (a, b) if plane[a] else (b, a)
                normal = rot[p][:, 2]
                reach = np.min((lower[box] + corners * (upper[box] - lower[box])) @ normal - normal @ origin[p])
                meets = reach <= 0.0  # the grown box reaches the plane
            else:
                meets = np.all(lower[a] <= upper[b]) and np.all(lower[b] <= upper[a])
            if meets:
                brute.add((a, b))
        assert found == brute
        assert sum(plane[a] for a, _ in brute) >= 10 and len(brute) >= 40

def test_aabbs_contain_every_support_point():
    rng = np.random.default_rng(4)
    for shape in SOLIDS:
        world = world_of(shape, shape)
        positions, quats = random_poses(rng)
        rot, origin = frames(world, positions, quats)
        lower, upper = aabbs(world.shapes, rot, origin)
        for d in np.vstack([np.eye(3), -np.eye(3)]):
            p = support(world.shapes, 0, rot[0], origin[0], d)
            assert np.all(p >= lower[0] - 1e-12) and np.all(p <= upper[0] + 1e-12)
            axis = int(np.argmax(np.abs(d)))
            assert abs(p[axis] - (upper[0, axis] if d[axis] > 0 else lower[0, axis])) < 1e-12  # tight


def _chain_mechanism(joint_type: str) -> Mechanism:
    bodies = (Body("A", 1.0, inertia=(0.1,) * 3 + (0.0,) * 3), Body("B", 1.0, inertia=(0.1,) * 3 + (0.0,) * 3))
    joints = (Joint("A free", "free", "world", "A"), Joint("AB", joint_type, "A", "B", anchor=(0.0, 0.0, 0.0)))
    colliders = (Collider("ground", "world", "plane"), Collider("ground box", "world", "box", (1.0, 1.0, 0.1)),
                 Collider("a", "A", "sphere", (0.3,)), Collider("a2", "A", "sphere", (0.3,)),
                 Collider("b", "B", "sphere", (0.3,)))
    return Mechanism("m", bodies, joints, colliders=colliders)


def test_pair_filter():
    """Same body and directly jointed bodies never collide; the world's colliders never meet each
    other; a free joint to the world does not stop a body landing on the ground."""
    poses = np.zeros((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1))
    pairs = {tuple(sorted((c.collider_a, c.collider_b)))
             for c in CollisionWorld(_chain_mechanism("ball")).contacts(*poses, 0.0)}
    assert pairs == {(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4)}  # ground, box vs every sphere
    world = CollisionWorld(_chain_mechanism("free"))
    pairs = {tuple(sorted((c.collider_a, c.collider_b))) for c in world.contacts(*poses, 0.0)}
    assert {(2, 4), (3, 4)} <= pairs and (2, 3) not in pairs and (0, 1) not in pairs


def test_friction_is_the_geometric_mean():
    world = pair_world("sphere", (0.1,), "sphere", (0.1,), friction=(0.9, 0.4))
    positions, quats = np.array([[0, 0, 0], [0, 0, 0.19]]), np.tile([1.0, 0, 0, 0], (2, 1))
    (contact,) = world.contacts(positions, quats)
    assert abs(contact.friction - 0.6) < 1e-15 and contact.body_a in (0, 1) and contact.distance < 0


def test_a_chain_of_100_spheres_costs_linear_work():
    """100 spheres in a row on the ground: the broad phase hands on only neighbours (not 4950 pairs),
    jointed neighbours are dropped, and every sphere touches the ground once."""
    n, r = 100, 0.25
    bodies = tuple(Body(f"s{i}", 1.0, position=(2 * r * i, 0.0, r), inertia=(0.025,) * 3 + (0.0,) * 3)
                   for i in range(n))
    joints = (Joint("free", "free", "world", "s0"),) + tuple(
        Joint(f"j{i}", "ball", f"s{i - 1}", f"s{i}", anchor=(2 * r * i - r, 0.0, r)) for i in range(1, n))
    colliders = (Collider("ground", "world", "plane"),) + tuple(
        Collider(f"c{i}", f"s{i}", "sphere", (r,)) for i in range(n))
    world = CollisionWorld(Mechanism("chain", bodies, joints, colliders=colliders))
    positions, quats = np.array([b.position for b in bodies]), np.tile([1.0, 0, 0, 0], (n, 1))
    rot, origin = world_frames(world.shapes, positions, quats)
    i, _ = world.candidate_pairs(rot, origin, 0.01)
    assert len(i) == n  # the ground under each sphere; touching neighbours are jointed
    contacts = world.detect(positions, quats, 0.01)
    assert len(contacts) == n and np.allclose(contacts.distance, 0.0) and set(contacts.body_a) == {-1}


@pytest.mark.parametrize("incident", ["face", "edge"])
def test_vectorised_box_faces_equal_the_per_pair_clip(incident):
    """Boxes stacked with random turns and offsets, overlapping on the lower box's top face, the upper
    one showing it a face (small tilts) or an edge (tipped about 45 degrees): the vectorised face pass
    gives the per-pair Sutherland-Hodgman points. (Apart, a pair leaves the vectorised pass unless a
    point pair attains the SAT separation; the SAT-vs-GJK test covers that.)"""
    from addon.solver.collision.convex import along_normal

    rng = np.random.default_rng(21)
    world = world_of("box", "box")
    compared = 0
    for _ in range(100):
        if incident == "face":
            rot_b, height = [*rng.normal(0, 0.03, 2), rng.uniform(-3, 3)], 0.29
        else:
            rot_b, height = [np.pi / 4 + rng.normal(0, 0.02), rng.normal(0, 0.02), 0.0], 0.15 + 0.17
        positions = np.array([[0.0, 0.0, 0.0], [rng.normal(0, 0.15), rng.normal(0, 0.1), height + rng.normal(0, 0.005)]])
        quats = np.array([quat(rng.normal(0, 0.03, 3)), quat(rot_b)])
        rot, origin = frames(world, positions, quats)
        sep, normal, axis = separating_axes(rot, origin, world.shapes.size, np.array([0]), np.array([1]))
        if axis[0] >= 6 or sep[0] > 0:
            continue
        fast = box_box(world.shapes, rot, origin, np.array([0]), np.array([1]), 0.02)
        slow = along_normal(world.shapes, 0, 1, rot, origin, normal[0], float(sep[0]), 0.02)
        d0, n0, a0, b0 = _sorted_contacts(fast)
        d1, n1, a1, b1 = _sorted_contacts(slow)
        assert len(d0) == len(d1) and np.allclose(d0, d1, atol=1e-12)
        assert np.allclose(a0, a1, atol=1e-12) and np.allclose(b0, b1, atol=1e-12) and np.allclose(n0, n1)
        compared += 1
    assert compared >= 30


@pytest.mark.heavy
@pytest.mark.parametrize("pair", list(itertools.product(["plane"] + SOLIDS, SOLIDS)))
def test_degenerate_poses_give_well_formed_contacts(pair):
    """Concentric, deeply overlapping, exactly stacked and random poses: finite distances, unit
    normals and distance = normal . (point_b - point_a) for every contact, never an exception."""
    rng = np.random.default_rng(99)
    size_a, verts_a = SHAPES.get(pair[0], ((), ()))
    size_b, verts_b = SHAPES[pair[1]]
    world = pair_world(pair[0], size_a, pair[1], size_b, verts_a, verts_b)
    found = 0
    for trial in range(40):
        kind = trial % 4
        offset = [np.zeros(3), rng.normal(0, 0.05, 3), rng.normal(0, 0.4, 3), np.array([0.0, 0.0, 0.35])][kind]
        turns = np.zeros((2, 3)) if kind == 3 else rng.normal(0, 1, (2, 3))
        contacts = world.detect(np.array([np.zeros(3), offset]), np.array([quat(t) for t in turns]), 0.05)
        found += len(contacts) > 0
        assert np.all(np.isfinite(contacts.distance))
        assert np.allclose(np.linalg.norm(contacts.normal, axis=1), 1.0)
        gap = np.einsum("ki,ki->k", contacts.normal, contacts.point_b_world - contacts.point_a_world)
        assert np.allclose(gap, contacts.distance, atol=1e-9)
    assert found >= 10


def test_contacts_come_sorted_by_collider_pair_whatever_the_sweep_order():
    """Boxes on the ground moved so the sweep visits them in another order: the same pairs come in
    the same order (a warm-started contact solver can match them)."""
    n = 6
    bodies = tuple(Body(f"b{i}", 1.0, position=(0.5 * i, 0.0, 0.1), inertia=(0.01,) * 3 + (0.0,) * 3) for i in range(n))
    joints = tuple(Joint(f"f{i}", "free", "world", f"b{i}") for i in range(n))
    colliders = (Collider("ground", "world", "plane"),) + tuple(Collider(f"c{i}", f"b{i}", "box", (0.1,) * 3)
                                                               for i in range(n))
    world = CollisionWorld(Mechanism("row", bodies, joints, colliders=colliders))
    quats = np.tile([1.0, 0, 0, 0], (n, 1))
    first = world.detect(np.array([b.position for b in bodies]), quats, 1e-3)
    shuffled = np.array([b.position for b in bodies])[::-1]  # body i where body n-1-i was: reversed sweep
    second = world.detect(shuffled, quats, 1e-3)
    key = first.collider_a * 10 + first.collider_b
    assert np.all(np.diff(key) >= 0) and np.array_equal(key, second.collider_a * 10 + second.collider_b)

"""Narrow phase, every pair type against closed-form distances, normals and contact counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.lie import rotvec_to_matrix

from .pairs import CUBE, oriented, pair_world, query

TOL = 1e-12


def one(contacts, world):
    dist, normal = oriented(contacts, world)
    assert len(dist) == 1, dist
    return dist[0], normal[0]


# ---------------------------------------------------------------------------------------------
# Planes (the plane is the collider frame's z = 0 plane of body A, here tilted to test the frame)

TILT = (0.3, -0.2, 0.1)


def plane_frame():
    rot = rotvec_to_matrix(np.array(TILT))
    return rot, rot[:, 2]


def test_plane_sphere():
    world = pair_world("plane", (), "sphere", (0.3,))
    rot, n = plane_frame()
    centre = 0.5 * rot[:, 0] - 0.2 * rot[:, 1] + 0.7 * n
    d, normal = one(query(world, (0, 0, 0), centre, rot_a=TILT, margin=1.0), world)
    assert abs(d - 0.4) < TOL and np.allclose(normal, n, atol=TOL)
    assert len(query(world, (0, 0, 0), centre, rot_a=TILT, margin=0.39)) == 0


@pytest.mark.parametrize("angle", [0.0, 0.3, -0.7])
def test_plane_box_corners(angle):
    """A box turned about its z over a level plane: 4 bottom corners at h - hz; tilted about x by
    a: the lowest edge (2 corners) at h - (hz cos a + hy sin |a|)."""
    half = (0.25, 0.15, 0.1)
    world = pair_world("plane", (), "box", half)
    c = query(world, (0, 0, 0), (0.3, 0.1, 0.5), rot_b=(0, 0, angle), margin=0.0 + 0.41)
    assert len(c) == 4 and np.allclose(c.distance, 0.4, atol=TOL)
    assert np.allclose(c.normal, [0, 0, 1], atol=TOL)
    assert np.allclose(np.sort(np.abs(c.point_b), axis=0), np.tile(half, (4, 1)), atol=TOL)  # body-frame corners
    tilted = query(world, (0, 0, 0), (0, 0, 0.5), rot_b=(angle, 0, 0), margin=0.0)
    assert len(tilted) == 0
    deep = 0.5 - (0.1 * math.cos(angle) + 0.15 * math.sin(abs(angle)))
    c = query(world, (0, 0, 0), (0, 0, 0.5), rot_b=(angle, 0, 0), margin=deep + 1e-9)
    assert len(c) == (4 if angle == 0 else 2) and np.allclose(c.distance, deep, atol=TOL)


def test_plane_capsule_lying_and_standing():
    world = pair_world("plane", (), "capsule", (0.1, 0.3))
    lying = query(world, (0, 0, 0), (0, 0, 0.12), rot_b=(math.pi / 2, 0, 0), margin=0.05)
    assert len(lying) == 2 and np.allclose(lying.distance, 0.02, atol=TOL)
    standing = query(world, (0, 0, 0), (0, 0, 0.5), margin=0.2)
    assert len(standing) == 1 and abs(standing.distance[0] - 0.1) < TOL
    assert np.allclose(standing.point_b[0], [0, 0, -0.4], atol=TOL)


def test_plane_cylinder_upright_rests_on_rim_points_lying_on_a_line():
    world = pair_world("plane", (), "cylinder", (0.2, 0.3))
    upright = query(world, (0, 0, 0), (0, 0, 0.3 - 1e-4), margin=1e-3)
    assert len(upright) == 4 and np.allclose(upright.distance, -1e-4, atol=TOL)
    assert np.allclose(np.linalg.norm(upright.point_b[:, :2], axis=1), 0.2) and np.allclose(upright.point_b[:, 2], -0.3)
    lying = query(world, (0, 0, 0), (0, 0, 0.2), rot_b=(math.pi / 2, 0, 0), margin=1e-3)
    assert len(lying) == 2 and np.allclose(lying.distance, 0.0, atol=TOL)
    tilt = 0.2  # on its rim: the deepest point at h - (hl cos t + r sin t)
    c = query(world, (0, 0, 0), (0, 0, 1.0), rot_b=(tilt, 0, 0), margin=1.0)
    assert abs(c.distance.min() - (1.0 - 0.3 * math.cos(tilt) - 0.2 * math.sin(tilt))) < TOL


def test_plane_hull_vertices():
    tetra = [(0, 0, 0), (0.4, 0, 0), (0, 0.4, 0), (0, 0, 0.4)]
    world = pair_world("plane", (), "hull", (), vertices_b=tetra)
    c = query(world, (0, 0, 0), (0, 0, 0.05), margin=0.1)
    assert len(c) == 3 and np.allclose(c.distance, 0.05, atol=TOL)
    cube = [tuple(0.2 * x for x in v) for v in CUBE] + [(0.0, 0.0, -0.2), (0.1, 0.05, -0.2)]  # coplanar extras
    world = pair_world("plane", (), "hull", (), vertices_b=cube)
    c = query(world, (0, 0, 0), (0, 0, 0.2), margin=1e-6)
    assert len(c) == 4 and np.allclose(c.distance, 0.0, atol=TOL)  # reduced to the 4 corners


# ---------------------------------------------------------------------------------------------
# Rounded shapes


def test_sphere_sphere():
    world = pair_world("sphere", (0.2,), "sphere", (0.3,))
    offset = np.array([0.3, -0.4, 0.1])
    d, n = one(query(world, (1, 1, 1), np.add((1, 1, 1), offset), margin=1.0), world)
    assert abs(d - (np.linalg.norm(offset) - 0.5)) < TOL and np.allclose(n, offset / np.linalg.norm(offset))


@pytest.mark.parametrize("centre, distance, normal", [
    ((0.0, 0.0, 0.5), 0.5 - 0.2 - 0.1, (0, 0, -1)),  # above the top face (normal from the sphere to the box)
    ((0.0, 0.0, 0.25), 0.25 - 0.2 - 0.1, (0, 0, -1)),
    ((0.7, 0.0, 0.6), math.hypot(0.7 - 0.3, 0.6 - 0.2) - 0.1, (-0.4 / math.hypot(0.4, 0.4), 0, -0.4 / math.hypot(0.4, 0.4))),
    ((0.5, 0.45, 0.4), math.sqrt(0.2**2 + 0.2**2 + 0.2**2) - 0.1, (-1 / math.sqrt(3),) * 3),  # corner region
    ((0.1, 0.05, 0.15), -(0.2 - 0.15) - 0.1, (0, 0, -1)),  # centre inside, nearest face z+
])
def test_sphere_box(centre, distance, normal):
    world = pair_world("sphere", (0.1,), "box", (0.3, 0.25, 0.2))
    d, n = one(query(world, centre, (0, 0, 0), margin=1.0), world)
    assert abs(d - distance) < TOL and np.allclose(n, normal, atol=TOL)


def test_sphere_capsule_side_and_end():
    world = pair_world("sphere", (0.1,), "capsule", (0.2, 0.5))
    d, n = one(query(world, (0.6, 0, 0.3), (0, 0, 0), margin=1.0), world)
    assert abs(d - 0.3) < TOL and np.allclose(n, [-1, 0, 0])
    d, n = one(query(world, (0.3, 0, 0.9), (0, 0, 0), margin=1.0), world)
    assert abs(d - (0.5 - 0.3)) < TOL and np.allclose(n, [-0.6, 0, -0.8])


def test_capsule_capsule_crossing_and_parallel():
    world = pair_world("capsule", (0.1, 0.5), "capsule", (0.15, 0.4))
    d, n = one(query(world, (0, 0, 0), (0.1, 0.2, 0.6), rot_a=(0, math.pi / 2, 0), rot_b=(math.pi / 2, 0, 0),
                     margin=1.0), world)
    assert abs(d - (0.6 - 0.25)) < TOL and np.allclose(n, [0, 0, 1], atol=TOL)
    # parallel, side by side, overlapping over [0.1 - 0.4, 0.5] along z: two contacts at the overlap ends
    c = query(world, (0, 0, 0), (0.3, 0, 0.1), margin=0.1)
    dist, normal = oriented(c, world)
    assert len(c) == 2 and np.allclose(dist, 0.05) and np.allclose(normal, [1, 0, 0])
    world_z = np.sort(np.where(c.body_a[:, None] == 0, c.point_a, c.point_b)[:, 2])
    assert np.allclose(world_z, [-0.3, 0.5])


# ---------------------------------------------------------------------------------------------
# Boxes (SAT)


def test_box_on_box_face_contact_four_points():
    world = pair_world("box", (0.5, 0.5, 0.2), "box", (0.25, 0.25, 0.25))
    c = query(world, (0, 0, 0), (0.1, 0.05, 0.45 + 1e-3), margin=2e-3)
    dist, normal = oriented(c, world)
    assert len(c) == 4 and np.allclose(dist, 1e-3, atol=TOL) and np.allclose(normal, [0, 0, 1], atol=TOL)
    turned = query(world, (0, 0, 0), (0, 0, 0.45 - 1e-3), rot_b=(0, 0, math.pi / 4), margin=0.0)
    dist, normal = oriented(turned, world)
    assert len(turned) == 4 and np.allclose(dist, -1e-3, atol=TOL)  # an octagon of clipped points, 4 kept


def test_box_box_turned_face_overlap_is_clipped():
    """A small box turned 45 degrees on a big one: every kept point lies inside both faces."""
    world = pair_world("box", (0.3, 0.3, 0.1), "box", (0.3, 0.3, 0.1))
    c = query(world, (0, 0, 0), (0.0, 0.0, 0.2), rot_b=(0, 0, math.pi / 4), margin=1e-9)
    assert len(c) == 4 and np.allclose(c.distance, 0.0, atol=TOL)
    world_points = c.point_a_world
    assert np.all(np.abs(world_points[:, :2]) <= 0.3 + 1e-12)
    turned = world_points[:, :2] @ np.array([[1, 1], [-1, 1]]) / math.sqrt(2)
    assert np.all(np.abs(turned) <= 0.3 + 1e-12)


def test_box_box_edge_on_edge():
    """A's top edge along x (turned 45 deg about x) under B's bottom edge along y (45 deg about y)."""
    world = pair_world("box", (0.2, 0.2, 0.2), "box", (0.1, 0.1, 0.1))
    gap = 0.01
    z = 0.2 * math.sqrt(2) + 0.1 * math.sqrt(2) + gap
    c = query(world, (0, 0, 0), (0.03, -0.02, z), rot_a=(math.pi / 4, 0, 0), rot_b=(0, math.pi / 4, 0), margin=0.02)
    d, n = one(c, world)
    assert abs(d - gap) < 1e-12 and np.allclose(n, [0, 0, 1], atol=1e-12)
    assert np.allclose(c.point_a_world[0], [0.03, 0, 0.2 * math.sqrt(2)], atol=1e-12)
    assert np.allclose(c.point_b_world[0], [0.03, 0.0, z - 0.1 * math.sqrt(2)], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# General convex pairs (GJK/EPA + manifold)


def test_cylinder_on_box_lying_and_upright():
    world = pair_world("box", (0.5, 0.5, 0.1), "cylinder", (0.2, 0.3))
    lying = query(world, (0, 0, 0), (0, 0, 0.3 + 1e-3), rot_b=(math.pi / 2, 0, 0), margin=2e-3)
    dist, normal = oriented(lying, world)
    assert len(lying) == 2 and np.allclose(dist, 1e-3, atol=1e-9) and np.allclose(normal, [0, 0, 1], atol=1e-9)
    upright = query(world, (0, 0, 0), (0, 0, 0.4 - 1e-3), margin=0.0)
    dist, normal = oriented(upright, world)
    assert len(upright) == 4 and np.allclose(dist, -1e-3, atol=1e-9) and np.allclose(normal, [0, 0, 1], atol=1e-9)


def test_cylinder_cylinder_side_by_side():
    world = pair_world("cylinder", (0.2, 0.3), "cylinder", (0.1, 0.3))
    c = query(world, (0, 0, 0), (0.35, 0, 0), margin=0.1)
    dist, normal = oriented(c, world)
    assert len(c) == 2 and np.allclose(dist, 0.05, atol=1e-9) and np.allclose(normal, [1, 0, 0], atol=1e-9)


def test_hull_cube_on_hull_cube_matches_boxes():
    cube = [tuple(0.25 * x for x in v) for v in CUBE]
    hulls = pair_world("hull", (), "hull", (), vertices_a=cube, vertices_b=cube)
    boxes = pair_world("box", (0.25,) * 3, "box", (0.25,) * 3)
    for pose_b, rot_b in [((0.1, 0.0, 0.5 + 1e-3), (0, 0, 0.3)), ((0.1, 0.2, 0.52), (0.2, 0.1, 0.0))]:
        h = query(hulls, (0, 0, 0), pose_b, rot_b=rot_b, margin=0.05)
        b = query(boxes, (0, 0, 0), pose_b, rot_b=rot_b, margin=0.05)
        assert len(h) == len(b) > 0
        assert np.allclose(np.sort(h.distance), np.sort(b.distance), atol=1e-9)


def test_hull_edge_across_the_contact_normal_is_that_edge():
    """Along a direction exactly across a hull cube's edge (as in every edge-edge contact) both ends
    of the edge are extreme, tied up to round-off: the feature is the edge, never one end twice."""
    from addon.solver.collision.manifold import feature

    cube = [tuple(0.25 * x for x in v) for v in CUBE]
    world = pair_world("hull", (), "hull", (), vertices_a=cube, vertices_b=cube)
    for direction in ((1.0, 0.0, 1.0), (0.0, -1.0, 1.0), (-1.0, 1.0, 0.0)):
        d = np.array(direction) / np.linalg.norm(direction)
        points = feature(world.shapes, 0, np.eye(3), np.zeros(3), d).points
        assert len(points) == 2 and abs(np.linalg.norm(points[1] - points[0]) - 0.5) < TOL
        assert np.allclose(points @ d, 0.25 * np.sum(np.abs(d)), atol=TOL)  # both ends extreme along d


def test_capsule_on_box_lying():
    world = pair_world("box", (0.5, 0.5, 0.1), "capsule", (0.05, 0.2))
    c = query(world, (0, 0, 0), (0, 0, 0.15 + 1e-3), rot_b=(0, math.pi / 2, 0), margin=2e-3)
    dist, _ = oriented(c, world)
    assert len(c) == 2 and np.allclose(dist, 1e-3, atol=1e-9)


def test_sphere_hull_and_cylinder_distances():
    tetra = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    world = pair_world("sphere", (0.1,), "hull", (), vertices_b=tetra)
    d, n = one(query(world, (1, 1, 1), (0, 0, 0), margin=2.0), world)  # nearest the face x + y + z = 1
    assert abs(d - (3 / math.sqrt(3) - 1 / math.sqrt(3) - 0.1)) < 1e-9 and np.allclose(n, -np.ones(3) / math.sqrt(3))
    world = pair_world("sphere", (0.1,), "cylinder", (0.2, 0.3))
    d, n = one(query(world, (0.5, 0, 0.5), (0, 0, 0), margin=2.0), world)  # nearest the top rim
    assert abs(d - (math.hypot(0.3, 0.2) - 0.1)) < 1e-9
    d, n = one(query(world, (0.1, 0, 0.1), (0, 0, 0), margin=2.0), world)  # centre inside: EPA
    # EPA polytopes approach a curved side from inside: the depth error is second order in the normal's
    assert abs(d - (-0.1 - 0.1)) < 1e-9 and np.allclose(n, [-1, 0, 0], atol=1e-4)


def test_domino_leaning_on_the_next_touches_along_its_top_edge():
    """A 0.05 x 0.25 x 0.5 m domino tipped 30 degrees about its front bottom edge reaches
    hx + 2 hz sin 30 = 0.275 m: its top edge lies on the back face of a standing one at 0.3 + gap."""
    hx, hy, hz, gap = 0.025, 0.125, 0.25, 1e-3
    world = pair_world("box", (hx, hy, hz), "box", (hx, hy, hz))
    tilt = math.pi / 6
    centre_a = np.array([hx, 0.0, 0.0]) + rotvec_to_matrix(np.array([0.0, tilt, 0.0])) @ np.array([-hx, 0.0, hz])
    c = query(world, centre_a, (0.3 + gap, 0.0, hz), rot_a=(0.0, tilt, 0.0), margin=2e-3)
    dist, normal = oriented(c, world)
    assert len(c) == 2 and np.allclose(dist, gap, atol=1e-12) and np.allclose(normal, [1, 0, 0], atol=1e-12)
    assert np.allclose(np.sort(c.point_a_world[:, 1]), [-hy, hy], atol=1e-12)
    assert np.allclose(c.point_b_world[:, 0], 0.3 + gap - hx, atol=1e-12)


CUBE_HULL = [tuple(0.25 * x for x in v) for v in CUBE]


@pytest.mark.parametrize("shape, size, rot, height, points", [
    ("box", (0.1, 0.1, 0.1), (0.0, 0.0, 0.4), 0.1, 4),  # face on face, turned
    ("capsule", (0.05, 0.15), (0.0, math.pi / 2, 0.0), 0.05, 2),  # lying across: its side line
    ("cylinder", (0.1, 0.2), (0.0, 0.0, 0.0), 0.2, 4),  # standing: end octagon inside the face, 4 kept
    ("cylinder", (0.1, 0.2), (math.pi / 2, 0.0, 0.0), 0.1, 2),  # lying: its side line
    ("hull", (), (0.0, 0.0, 0.3), 0.25, 4),
])
@pytest.mark.parametrize("gap", [1e-3, -1e-3])
def test_shapes_resting_on_a_hull_cube(shape, size, rot, height, points, gap):
    """General (GJK/EPA + manifold) pairs against closed-form gaps: a shape whose lowest extent is
    `height` below its centre, placed gap above the top face (z = 0.25) of a 0.5 m cube hull."""
    world = pair_world("hull", (), shape, size, vertices_a=CUBE_HULL, vertices_b=CUBE_HULL if shape == "hull" else ())
    c = query(world, (0, 0, 0), (0.02, -0.03, 0.25 + height + gap), rot_b=rot, margin=2e-3)
    dist, normal = oriented(c, world)
    assert len(c) == points and np.allclose(dist, gap, atol=1e-9) and np.allclose(normal, [0, 0, 1], atol=1e-9)


def test_capsule_on_an_upright_cylinder_and_cylinder_edge_on_box():
    world = pair_world("cylinder", (0.3, 0.2), "capsule", (0.05, 0.1))
    c = query(world, (0, 0, 0), (0.05, 0.0, 0.2 + 0.05 + 1e-3), rot_b=(0.0, math.pi / 2, 0.0), margin=2e-3)
    dist, normal = oriented(c, world)
    assert len(c) == 2 and np.allclose(dist, 1e-3, atol=1e-9) and np.allclose(normal, [0, 0, 1], atol=1e-9)
    # a cylinder tipped 0.5 rad on its rim over a box: the lowest rim point, hl sin + r cos below
    world = pair_world("box", (0.5, 0.5, 0.1), "cylinder", (0.1, 0.2))
    low = 0.2 * math.sin(0.5) + 0.1 * math.cos(0.5)
    c = query(world, (0, 0, 0), (0.0, 0.0, 0.1 + low + 1e-3), rot_b=(math.pi / 2 - 0.5, 0.0, 0.0), margin=2e-3)
    d, n = one(c, world)
    assert abs(d - 1e-3) < 1e-9 and np.allclose(n, [0, 0, 1], atol=1e-6)

"""Rigid body collision shapes read into Colliders (real bpy, 5.0 and 4.2), and a cube baked onto a
passive plane with the 'maximal' method."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest

from addon.bridge import job, read
from addon.bridge.build import ensure_rigidbody_world
from addon.solver.collision import CollisionWorld
from addon.solver.lie import quat_to_matrix
from addon.solver.model import WORLD
from tests.blender.scenes import (
    add_setup,
    box_object,
    evaluated,
    new_scene,
    read_scene,
    set_frame,
    symplex,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.usefixtures("symplex")


def plane_object(scene, collection, name: str, size: float, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0)):
    """A passive square plane mesh (faces up, +Z) like Add > Mesh > Plane."""
    h = size / 2
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(-h, -h, 0.0), (h, -h, 0.0), (h, h, 0.0), (-h, h, 0.0)], [], [(0, 1, 2, 3)])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    obj.location, obj.rotation_euler = location, rotation
    ensure_rigidbody_world(scene).collection.objects.link(obj)
    obj.rigid_body.type = "PASSIVE"
    obj.rigid_body.collision_shape = "MESH"
    return obj


def cube_on_plane(frames: int = 50, method: str = "maximal", height: float = 0.4):
    """A 0.5 m, 1 kg cube with its bottom `height` above a passive 4 m plane, in a setup of both."""
    scene = new_scene("contact", frames=frames)
    coll = bpy.data.collections.new(f"{scene.name} bodies")
    scene.collection.children.link(coll)
    ground = plane_object(scene, coll, f"{scene.name} ground", 4.0)
    cube = box_object(scene, coll, f"{scene.name} cube", (0.5, 0.5, 0.5), (0.0, 0.0, 0.25 + height))
    cube.rigid_body.friction = 0.7
    setup = add_setup(scene, "drop", "RIGID_BODIES", collection=coll)
    setup.method = method
    return scene, setup, ground, cube


def test_cube_above_passive_plane_reads_a_world_plane_and_a_box():
    scene, _setup, ground, cube = cube_on_plane()
    reading = read_scene(scene, "drop")
    mech = reading.mechanism
    assert [b.name for b in mech.bodies] == [cube.name]
    shapes = {c.name: c for c in mech.colliders}
    assert set(shapes) == {ground.name, cube.name}
    plane, box = shapes[ground.name], shapes[cube.name]
    # collider friction mu^2, so that contacts (geometric mean) get Bullet's product mu_a mu_b (bullet.py)
    assert plane.body == WORLD and plane.shape == "plane" and plane.friction == 0.25
    assert np.allclose(plane.position, 0.0) and np.allclose(plane.orientation[1:3], 0.0, atol=1e-12)
    assert box.body == cube.name and box.shape == "box" and box.friction == pytest.approx(0.49)
    assert np.allclose(box.size, 0.25) and box.position == (0.0, 0.0, 0.0)
    # the flat Mesh shape is a plane, not a (warned) hull
    assert not any("convex hull" in w for w in reading.warnings)
    # the geometry works: the cube floats 0.4 m above the plane on 4 corners
    world = CollisionWorld(mech)
    c = world.detect(np.array([mech.bodies[0].position]), np.array([mech.bodies[0].orientation]), 0.45)
    assert len(c) == 4 and np.allclose(c.distance, 0.4, atol=1e-6)


def test_tilted_and_raised_plane_keeps_its_pose_and_upward_normal():
    scene, _setup, ground, _cube = cube_on_plane()
    ground.location, ground.rotation_euler = (0.0, 0.0, -0.3), (0.2, 0.0, 0.0)
    plane = {c.name: c for c in read_scene(scene, "drop").mechanism.colliders}[ground.name]
    normal = quat_to_matrix(np.array(plane.orientation))[:, 2]
    assert np.allclose(normal, [0.0, -math.sin(0.2), math.cos(0.2)], atol=1e-6)
    assert abs(np.dot(np.array(plane.position) - [0.0, 0.0, -0.3], normal)) < 1e-6


def test_every_collision_shape():
    scene = new_scene("shapes")
    coll = bpy.data.collections.new(f"{scene.name} bodies")
    scene.collection.children.link(coll)
    dims = (0.4, 0.2, 1.0)
    objs = {}
    for k, shape in enumerate(("BOX", "SPHERE", "CAPSULE", "CYLINDER", "CONE", "CONVEX_HULL", "MESH")):
        obj = box_object(scene, coll, f"{scene.name} {shape}", dims, (2.0 * k, 0.0, 1.0))
        obj.rigid_body.collision_shape = shape
        objs[shape] = obj
    objs["SCALED"] = box_object(scene, coll, f"{scene.name} scaled", (1.0, 1.0, 1.0), (0.0, 3.0, 1.0))
    objs["SCALED"].scale = (0.4, 0.2, 1.0)
    objs["SCALED"].rigid_body.collision_shape = "CONVEX_HULL"
    add_setup(scene, "shapes", "RIGID_BODIES", collection=coll).method = "maximal"
    reading = read_scene(scene, "shapes")
    got = {c.name: c for c in reading.mechanism.colliders}
    assert got[objs["BOX"].name].size == pytest.approx((0.2, 0.1, 0.5))
    assert got[objs["SPHERE"].name].size == pytest.approx((0.5,))
    assert got[objs["CAPSULE"].name].size == pytest.approx((0.2, 0.3))
    assert got[objs["CYLINDER"].name].size == pytest.approx((0.2, 0.5))
    cone = np.array(got[objs["CONE"].name].vertices)
    assert got[objs["CONE"].name].shape == "hull" and np.allclose(cone[-1], (0, 0, 0.5)) and np.allclose(cone[:-1, 2], -0.5)
    for key in ("CONVEX_HULL", "MESH", "SCALED"):  # hull of the mesh corners, scale included
        verts = np.array(got[objs[key].name].vertices)
        assert got[objs[key].name].shape == "hull"
        assert np.allclose(np.sort(np.abs(verts), axis=0), np.tile([0.2, 0.1, 0.5], (8, 1)))
    assert [w for w in reading.warnings if "convex hull" in w] == [
        f"rigid body {objs['MESH'].name!r}: collision shape Mesh is simulated as the mesh's convex hull"]


def test_bad_shapes_are_refused_naming_the_object():
    scene = new_scene("bad_shapes")
    coll = bpy.data.collections.new(f"{scene.name} bodies")
    scene.collection.children.link(coll)
    compound = box_object(scene, coll, f"{scene.name} compound", (0.5, 0.5, 0.5), (0.0, 0.0, 1.0))
    compound.rigid_body.collision_shape = "COMPOUND"
    flat = plane_object(scene, coll, f"{scene.name} sheet", 1.0, location=(2.0, 0.0, 1.0))
    flat.rigid_body.type = "ACTIVE"
    add_setup(scene, "bad", "RIGID_BODIES", collection=coll).method = "maximal"
    errors, _ = read.validate_setup(scene, read.find_setup(scene, "bad"))
    assert any(e.startswith(f"rigid body {compound.name!r}: collision shape Compound is not supported") for e in errors)
    assert any(e.startswith(f"rigid body {flat.name!r}: its collision shape is flat") for e in errors)


def test_tree_method_reads_no_shapes_and_passive_pieces_of_the_rigid_body_world_are_colliders():
    scene, setup, ground, _cube = cube_on_plane(method="tree")
    assert read_scene(scene, "drop").mechanism.colliders == ()
    # a passive object outside the setup's collection, in the scene's Rigid Body World
    other = bpy.data.collections.new(f"{scene.name} set dressing")
    scene.collection.children.link(other)
    wall = box_object(scene, other, f"{scene.name} wall", (0.2, 4.0, 2.0), (1.5, 0.0, 1.0), passive=True)
    setup.method = "maximal"
    shapes = {c.name: c for c in read_scene(scene, "drop").mechanism.colliders}
    assert set(shapes) == {ground.name, wall.name, _cube.name}
    assert shapes[wall.name].body == WORLD and shapes[wall.name].position == pytest.approx((1.5, 0.0, 1.0))


def test_maximal_bake_drops_the_cube_onto_the_plane_and_it_rests():
    """The 0.5 m cube falls 0.4 m (0.29 s), lands and rests on the plane by the end of 2 s: keys are
    written for every frame, no key is more than 1 mm into the plane, and the last second is still."""
    scene, setup, _ground, cube = cube_on_plane(frames=51)
    setup.substeps = 4
    report = job.bake_setup(scene, "drop")
    assert report.keys > 0
    heights = []
    for frame in range(scene.frame_start, scene.frame_end + 1):
        set_frame(scene, frame)
        matrix = evaluated(scene, cube).matrix_world
        corners = [matrix @ v.co for v in cube.data.vertices]
        heights.append(min(c.z for c in corners))
    heights = np.array(heights)
    assert heights.min() > -1e-3, heights.min()
    assert abs(heights[0] - 0.4) < 1e-6
    # free fall until it lands (0.2 s = frame 6 of 25 fps): 0.4 - g t^2 / 2 (the method's second-order
    # start makes the knots of a uniform fall exact; keys are single precision)
    assert abs(heights[5] - (0.4 - 0.5 * 9.81 * 0.2**2)) < 1e-5, heights[5]
    assert np.all(np.abs(heights[-25:]) < 1e-3), heights[-25:]



def test_convex_hull_keeps_only_the_corners_of_a_dense_mesh():
    """A subdivided box (corners, edge and face points) reads as the hull of its 8 corners."""
    scene = new_scene("dense")
    coll = bpy.data.collections.new(f"{scene.name} bodies")
    scene.collection.children.link(coll)
    obj = box_object(scene, coll, f"{scene.name} dense", (0.4, 0.2, 1.0), (0.0, 0.0, 1.0))
    grid = [(x, y, z) for x in (-0.2, 0.0, 0.2) for y in (-0.1, 0.0, 0.1) for z in (-0.5, 0.0, 0.5)]
    obj.data.clear_geometry()
    obj.data.from_pydata(grid, [], [])
    obj.rigid_body.collision_shape = "CONVEX_HULL"
    add_setup(scene, "dense", "RIGID_BODIES", collection=coll).method = "maximal"
    (hull,) = read_scene(scene, "dense").mechanism.colliders
    assert len(hull.vertices) == 8 and np.allclose(np.abs(hull.vertices), [0.2, 0.1, 0.5])

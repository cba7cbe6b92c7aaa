"""Add Preset on the collider presets (real bpy, 5.0 and 4.2): the scene reads back as the file's
bodies and colliders, and a maximal bake of the built box drop follows the solver run on the file; a
maximal bake past the method's time-step limit restarts with more substeps."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest

from addon.bridge import job
from addon.bridge.build import BuildError, build_rigid_bodies
from addon.solver.integrator import simulate
from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from addon.solver.presets import list_presets, preset_path
from demo.contact import TOUCH, penetration
from tests.blender.scenes import (  # noqa: F401
    bake_to_end,
    new_scene,
    object_world,
    read_scene,
    scene_state,
    set_frame,
    symplex,
)
from tools.generate import pendulum_chain

pytestmark = pytest.mark.usefixtures("symplex")

COLLIDER_PRESETS = sorted(p for p in list_presets() if load_mechanism(preset_path(p)).colliders)
F32 = 1e-6  # single-precision Blender properties, relative to O(1) values


def test_the_collider_presets_are_all_here():
    assert {"box_drop", "sphere_chain", "dominoes", "wrecking_ball"} <= set(COLLIDER_PRESETS)


def _rotation(quat) -> np.ndarray:
    return quat_to_matrix(np.asarray(quat, dtype=float))


@pytest.mark.parametrize("preset", COLLIDER_PRESETS)
def test_add_preset_reads_back_the_files_bodies_and_colliders(preset):
    mech = load_mechanism(preset_path(preset))
    scene = new_scene(preset)
    built = build_rigid_bodies(scene, mech)
    reading = read_scene(scene, built.setup)
    assert reading.method == "maximal"
    got = reading.mechanism
    assert not reading.warnings
    # bodies: same mass properties and start poses
    bodies = {b.name: b for b in got.bodies}
    assert len(got.bodies) == len(mech.bodies)
    for body in mech.bodies:
        read_body = bodies[built.objects[body.name]]
        assert read_body.mass == pytest.approx(body.mass, rel=F32)
        assert np.allclose(read_body.position, body.position, atol=F32)
        assert np.allclose(_rotation(read_body.orientation), _rotation(body.orientation), atol=F32)
        assert np.allclose(read_body.com, body.com, atol=F32)
        assert np.allclose(read_body.inertia, body.inertia, rtol=F32, atol=1e-12)
    # joints: the same types between the same bodies (build tests check anchors and axes)
    names = {**built.objects, WORLD: WORLD}
    expected = sorted((j.type, names[j.parent], names[j.child]) for j in mech.joints)
    assert sorted((j.type, j.parent, j.child) for j in got.joints) == expected
    # colliders: one object each, same shape, body, size, pose and friction
    shapes = {c.name: c for c in got.colliders}
    assert len(got.colliders) == len(mech.colliders)
    for collider in mech.colliders:
        read_collider = shapes[built.colliders[collider.name]]
        assert read_collider.shape == collider.shape
        assert read_collider.body == names[collider.body]
        # built as sqrt(friction) on the rigid body, read back as its square (Bullet's product rule, bullet.py)
        assert read_collider.friction == pytest.approx(collider.friction, rel=F32)
        assert np.allclose(read_collider.size, collider.size, rtol=F32, atol=F32)
        assert np.allclose(read_collider.position, collider.position, atol=F32)
        rot_read, rot_file = _rotation(read_collider.orientation), _rotation(collider.orientation)
        if collider.shape == "plane":  # the same plane: normal (its turn about the normal is no matter)
            assert np.allclose(rot_read[:, 2], rot_file[:, 2], atol=F32)
        else:
            assert np.allclose(rot_read, rot_file, atol=F32)
        if collider.shape == "hull":
            assert np.allclose(np.sort(read_collider.vertices, axis=0), np.sort(collider.vertices, axis=0), atol=F32)


def test_ground_plane_is_a_passive_mesh_under_every_body_and_beads_are_spheres():
    mech = load_mechanism(preset_path("sphere_chain"))
    scene = new_scene("sphere_chain_objects")
    built = build_rigid_bodies(scene, mech)
    ground = bpy.data.objects[built.colliders["ground"]]
    assert ground.rigid_body.type == "PASSIVE" and ground.type == "MESH" and ground.dimensions.z == 0.0
    half = ground.dimensions.x / 2
    assert all(abs(b.position[0]) + 1.0 < half and abs(b.position[1]) + 1.0 < half for b in mech.bodies)
    bead = bpy.data.objects[built.objects["bead_3"]]
    assert bead.rigid_body.collision_shape == "SPHERE" and bead.rigid_body.friction == pytest.approx(math.sqrt(0.4))
    assert np.allclose(bead.dimensions, 0.2, atol=1e-7)
    assert np.allclose(np.linalg.norm([v.co for v in bead.data.vertices], axis=1), 0.1, atol=1e-7)


def test_add_preset_operator_builds_a_maximal_setup_with_its_ground():
    scene = new_scene("operator")
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_preset(preset="sphere_chain", variant="RIGID_BODIES") == {"FINISHED"}
    setup = scene.symplex.setups[scene.symplex.active_setup]
    assert setup.method == "maximal"
    objects = setup.collection.objects
    assert len(objects) == 10 + 9 + 1  # beads, ball-joint empties, ground
    assert sorted(o.rigid_body.collision_shape for o in objects if o.rigid_body is not None) == ["MESH"] + ["SPHERE"] * 10


def _one_body(colliders: tuple[Collider, ...], joints=None) -> Mechanism:
    body = Body("block", 1.0, position=(0.0, 0.0, 1.0), inertia=(0.1, 0.1, 0.1, 0.0, 0.0, 0.0))
    joints = joints if joints is not None else (Joint("block free", "free", WORLD, "block"),)
    return Mechanism("one block", (body,), joints, colliders=colliders, source="one_block.toml")


@pytest.mark.parametrize("colliders, joints, message", [
    ((Collider("a", "block", "box", (0.1, 0.1, 0.1)), Collider("b", "block", "sphere", (0.1,))), None,
     "body 'block': colliders 'a' and 'b': a Blender rigid body has one collision shape"),
    ((Collider("off", "block", "sphere", (0.1,), position=(0.0, 0.0, 0.2)),), None,
     "collider 'off': a sphere collider must sit at the origin of body 'block'"),
    ((Collider("ground", WORLD, "plane"),), None, "body 'block' has no collider"),
    ((Collider("sheet", "block", "plane"),), None, "collider 'sheet': a plane on body 'block' cannot be built"),
    ((Collider("b", "block", "box", (0.1, 0.1, 0.1)),),
     (Joint("hinge", "revolute", WORLD, "block", anchor=(0.0, 0.0, 2.0), axis=(0.0, 1.0, 0.0)),),
     "one_block.toml: joints to the world need a passive object to hang on"),
])
def test_colliders_blender_cannot_carry_are_refused_by_name(colliders, joints, message):
    scene = new_scene("refused")
    with pytest.raises(BuildError) as err:
        build_rigid_bodies(scene, _one_body(colliders, joints))
    assert str(err.value).startswith(message), str(err.value)
    assert not scene.symplex.setups  # nothing half built


def test_hull_off_the_body_origin_moves_into_the_body_frame():
    cube = tuple((x, y, z) for x in (-0.1, 0.1) for y in (-0.2, 0.2) for z in (-0.3, 0.3))
    turn = (np.cos(0.3), 0.0, 0.0, np.sin(0.3))
    hull = Collider("hull", "block", "hull", vertices=cube, position=(0.05, 0.0, 0.1), orientation=turn)
    scene = new_scene("hull")
    built = build_rigid_bodies(scene, _one_body((hull,)))
    (got,) = read_scene(scene, built.setup).mechanism.colliders
    moved = np.asarray(cube) @ _rotation(turn).T + (0.05, 0.0, 0.1)
    assert got.position == (0.0, 0.0, 0.0)
    assert np.allclose(np.sort(got.vertices, axis=0), np.sort(moved, axis=0), atol=F32)


def _reference(baker: job.BakeJob, mech: Mechanism):
    """simulate() with the maximal method on the bake's own grid and tolerance."""
    return simulate(mech, baker.read.dt, baker.read.steps, method="maximal", tol=baker.read.tolerance)


def test_maximal_bake_of_the_built_box_drop_follows_the_file():
    """20 frames (0.76 s, the landing at 0.29 s included) at dt = 0.01 s: the bake's poses and its keys
    against simulate() on presets/box_drop.toml."""
    mech = load_mechanism(preset_path("box_drop"))
    scene = new_scene("box_drop_bake", frames=20)
    built = build_rigid_bodies(scene, mech)
    setup = scene.symplex.setups[built.setup]
    setup.substeps = 4
    _, baked, baker = bake_to_end(scene, built.setup)
    reference = _reference(baker, mech)
    assert reference.status == "finished" and baked.status == "finished"
    assert np.allclose(baked.t, reference.t)
    cube = built.objects["cube"]
    k = baked.body_index(cube)
    z = reference.poses[:, 0, 2]
    assert z[0] - z.min() > 0.39  # it fell and landed (0.65 -> 0.25)
    assert np.abs(baked.poses[:, k, :3] - reference.poses[:, 0, :3]).max() < 1e-5
    signs = np.sign(np.sum(baked.poses[:, k, 3:] * reference.poses[:, 0, 3:], axis=1))[:, None]
    assert np.abs(baked.poses[:, k, 3:] * signs - reference.poses[:, 0, 3:]).max() < 1e-5
    depth, count = penetration(baker.read.mechanism, baked)  # what the demo plots
    assert depth.max() < 1e-3 and count[0] == 0 and count[-1] == 4, (depth.max(), count)  # rests on 4 corners
    assert np.all(count[baked.t < 0.25] == 0) and np.all(reference.poses[baked.t > 0.6, 0, 2] - 0.25 < TOUCH)
    obj = bpy.data.objects[cube]
    for frame in range(scene.frame_start, scene.frame_end + 1):  # the keys Blender plays
        set_frame(scene, frame)
        step = (frame - scene.frame_start) * setup.substeps
        world = object_world(scene, obj)
        assert np.abs(np.asarray(world)[:3, 3] - reference.poses[step, 0, :3]).max() < 1e-5
        assert np.abs(np.asarray(world)[:3, :3] - quat_to_matrix(reference.poses[step, 0, 3:])).max() < 1e-5


@pytest.mark.heavy
def test_maximal_bake_past_the_time_step_limit_restarts_with_more_substeps():
    """A 20-link rod chain released at 45 degrees, 25 fps and one substep (dt = 0.04 s): as it swings taut,
    its joint forces pass the maximal method's time-step limit about 2 s in. The bake starts again with
    more substeps, finishes, says so in its report, and equals a direct run on the finer grid."""
    mech = pendulum_chain(20)
    scene = new_scene("taut_chain", frames=76)
    built = build_rigid_bodies(scene, mech)
    setup = scene.symplex.setups[built.setup]
    setup.method, setup.substeps = "maximal", 1
    report, baked, baker = bake_to_end(scene, built.setup)
    assert baker.read.substeps >= 2, report.summary()
    assert f"restarted with {baker.read.substeps} substeps per frame (setup: 1)" in report.summary()
    assert setup.substeps == 1  # the setup is the user's: the bake only used more
    assert baked.status == "finished" and baked.nsteps == 75 * baker.read.substeps
    reference = _reference(baker, baker.read.mechanism)
    assert np.abs(baked.poses[:, :, :3] - reference.poses[:, :, :3]).max() < 1e-9


@pytest.mark.heavy
def test_an_artist_scale_preset_bakes_with_progress_and_a_cancel_leaves_the_scene():
    """presets/dominoes_100.toml built as rigid bodies: a bake advanced a few steps at a time reports a growing
    fraction and, dropped half way (what Esc does), leaves the scene as it was; baked to the end, its keys follow
    simulate() on the file, the first domino tipping on while the others stand."""
    mech = load_mechanism(preset_path("dominoes_100"))
    scene = new_scene("dominoes_100_bake", frames=4)
    built = build_rigid_bodies(scene, mech)
    setup = scene.symplex.setups[built.setup]
    setup.substeps = 4
    before = scene_state(scene)
    cancelled = job.BakeJob(scene, built.setup)
    fractions = []
    while len(fractions) < 3:
        cancelled.advance(max_steps=2)
        fractions.append(cancelled.fraction)
    assert 0 < fractions[0] < fractions[1] < fractions[2] < 1, fractions
    del cancelled
    assert scene_state(scene) == before
    _, baked, baker = bake_to_end(scene, built.setup)
    reference = _reference(baker, mech)
    assert baked.status == reference.status == "finished" and baked.nsteps == 12
    index = [baked.body_index(built.objects[b.name]) for b in mech.bodies]
    assert np.abs(baked.poses[:, index, :3] - reference.poses[:, :, :3]).max() < 1e-5
    first = bpy.data.objects[built.objects["domino_1"]]
    set_frame(scene, scene.frame_end)
    assert np.abs(np.asarray(object_world(scene, first))[:3, 3] - reference.poses[-1, 0, :3]).max() < 1e-5
    assert reference.poses[-1, 0, 0] > mech.bodies[0].position[0] + 1e-3  # tipping on
    assert np.abs(reference.poses[-1, 2:, :3] - reference.poses[0, 2:, :3]).max() < 1e-6  # the rest stand

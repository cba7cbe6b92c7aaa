"""The bake writer and bake jobs in real Blender: keys equal the trajectory, nothing else is touched.

Runs under bpy 5.0 (slotted actions) and 4.2 (legacy Action.fcurves). Hand-made trajectories test the
writer alone (every rotation mode, parenting, pose bones, subframes, reduction, atomicity); bakes of
scenes built in code test the whole path through the solver: an armature pendulum chain, an armature
scissor lift closed by loops, and a rigid-body four-bar made only of Blender rigid body constraints.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

from addon.bridge import bake, build, compat, job, reference
from addon.bridge.read import Target
from addon.bridge.rotations import EULER_ORDERS
from addon.solver.model import MechanismError
from addon.solver.trajectory import SolverError, Trajectory
from tests.blender.scenes import (
    add_setup,
    bake_to_end,
    bone_world,
    box_mesh,
    box_object,
    chain_armature,
    constraint_object,
    evaluated,
    fcurve_data,
    new_scene,
    read_scene,
    object_world,
    rigid_four_bar,
    scene_state,
    set_frame,
    symplex,  # noqa: F401  (fixture)
    world_pose_matrices,
)
from tools import generate

pytestmark = pytest.mark.usefixtures("symplex")

FPS = 25.0


def tumbling_trajectory(names: list[str], steps: int = 60, dt: float = 0.02) -> Trajectory:
    """Each body circles the Z axis while spinning about a tilted axis, several turns (flips and wraps)."""
    t = np.arange(steps + 1) * dt
    poses = np.zeros((steps + 1, len(names), 7))
    for b in range(len(names)):
        angle = 4.0 * t + b
        poses[:, b, 0] = np.cos(angle) + b
        poses[:, b, 1] = np.sin(angle)
        poses[:, b, 2] = 0.3 * b
        axis = np.array([1.0, 2.0, 3.0 + b]) / np.linalg.norm([1.0, 2.0, 3.0 + b])
        half = 0.5 * (9.0 * t + 0.7 * b)
        poses[:, b, 3] = np.cos(half)
        poses[:, b, 4:] = np.sin(half)[:, None] * axis
    return Trajectory(t, list(names), poses, np.zeros((steps + 1, 0)), [], np.linspace(1.0, 2.0, steps + 1),
                      np.full(steps + 1, 1e-12), np.full(steps, 2))


def assert_objects_follow(scene, trajectory, names, stride=1, atol=2e-5):
    for k in range(0, len(trajectory.t), stride):
        set_frame(scene, scene.frame_start + trajectory.t[k] * FPS)
        for name in names:
            expected = world_pose_matrices(trajectory, name, [k])[0]
            np.testing.assert_allclose(object_world(scene, bpy.data.objects[name]), expected, atol=atol,
                                       err_msg=f"{name} at sample {k}")


def test_objects_in_every_rotation_mode_follow_the_trajectory():
    scene = new_scene("modes")
    names = []
    for mode in ("QUATERNION", "AXIS_ANGLE") + EULER_ORDERS:
        obj = bpy.data.objects.new(f"{scene.name} {mode}", None)
        scene.collection.objects.link(obj)
        obj.rotation_mode = mode
        obj.scale = (1.0, 2.0, 0.5)
        names.append(obj.name)
    trajectory = tumbling_trajectory(names)
    keys = bake.write_trajectory(trajectory, [Target(n, n) for n in names], bake.BakeOptions("modes", 1, FPS))
    assert keys == sum((3 + (3 if m in EULER_ORDERS else 4)) * 61 for m in ("QUATERNION", "AXIS_ANGLE") + EULER_ORDERS)
    assert_objects_follow(scene, trajectory, names)
    for name in names:  # continuity: no 2 pi wraps, Euler branch flips or quaternion sign flips
        data = fcurve_data(bpy.data.objects[name])
        for (path, _i), co in data.items():
            if path in ("rotation_euler", "rotation_axis_angle"):
                assert np.max(np.abs(np.diff(co[1::2]))) < 1.5, (name, path)
        if ("rotation_quaternion", 0) in data:
            q = np.stack([data[("rotation_quaternion", i)][1::2] for i in range(4)], axis=1)
            assert np.all(np.einsum("ij,ij->i", q[1:], q[:-1]) > 0), name
        obj = bpy.data.objects[name]
        np.testing.assert_allclose(obj.scale, (1.0, 2.0, 0.5), atol=1e-6)  # scale is not a Symplex channel


def test_parented_object_gets_pose_relative_to_its_parent():
    scene = new_scene("parent")
    parent = bpy.data.objects.new(f"{scene.name} parent", None)
    child = bpy.data.objects.new(f"{scene.name} child", None)
    for obj in (parent, child):
        scene.collection.objects.link(obj)
    parent.location = (1.0, 2.0, 3.0)
    parent.rotation_euler = (0.3, 0.2, 0.1)
    parent.scale = (2.0, 2.0, 2.0)
    child.parent = parent
    child.matrix_parent_inverse = Matrix.Translation((0.3, 0.0, 0.0)) @ Matrix.Rotation(0.4, 4, "Z")
    trajectory = tumbling_trajectory([child.name, parent.name])
    bake.write_trajectory(trajectory, [Target(child.name, child.name), Target(parent.name, parent.name)],
                          bake.BakeOptions("parent", 1, FPS))
    assert_objects_follow(scene, trajectory, [child.name, parent.name])


def test_static_parent_is_respected():
    scene = new_scene("static_parent")
    parent = bpy.data.objects.new(f"{scene.name} parent", None)
    child = bpy.data.objects.new(f"{scene.name} child", None)
    for obj in (parent, child):
        scene.collection.objects.link(obj)
    parent.location = (0.0, 1.0, 0.0)
    parent.rotation_euler = (0.0, 0.0, 1.0)
    child.parent = parent
    trajectory = tumbling_trajectory([child.name])
    bake.write_trajectory(trajectory, [Target(child.name, child.name)], bake.BakeOptions("p", 1, FPS))
    assert_objects_follow(scene, trajectory, [child.name])
    assert compat.assigned(parent) is None


def test_pose_bones_follow_the_trajectory_in_every_rotation_mode():
    scene = new_scene("bones")
    arm, _setup = chain_armature(scene, n=len(EULER_ORDERS) + 2, connected=False)
    modes = ("QUATERNION", "AXIS_ANGLE") + EULER_ORDERS
    names = []
    for pb, mode in zip(arm.pose.bones, modes):
        pb.rotation_mode = mode
        pb.lock_location = (False, False, False)  # the test motion moves every bone freely
        names.append(pb.name)
    arm.location = (0.5, -1.0, 2.0)
    arm.rotation_euler = (0.1, 0.2, 0.3)
    trajectory = tumbling_trajectory(names)
    targets = [Target(n, arm.name, n) for n in names]
    bake.write_trajectory(trajectory, targets, bake.BakeOptions("bones", 1, FPS))
    for k in range(0, len(trajectory.t), 3):
        set_frame(scene, 1 + trajectory.t[k] * FPS)
        for name in names:
            np.testing.assert_allclose(bone_world(scene, arm, name), world_pose_matrices(trajectory, name, [k])[0], atol=3e-5)


def test_subframes_reduction_and_diagnostics_curves():
    scene = new_scene("sub")
    obj = bpy.data.objects.new(f"{scene.name} o", None)
    scene.collection.objects.link(obj)
    trajectory = tumbling_trajectory([obj.name], steps=80, dt=0.01)  # 4 samples per frame at 25 fps
    bake.write_trajectory(trajectory, [Target(obj.name, obj.name)], bake.BakeOptions("sub", 1, FPS, stride=4), root=obj.name)
    data = fcurve_data(obj)
    assert len(data[("location", 0)]) == 2 * 21  # one key per frame
    np.testing.assert_allclose(data[('["symplex_energy"]', 0)][1::2], trajectory.energy[::4], rtol=1e-6)
    assert obj["symplex_residual"] == pytest.approx(1e-12)
    bake.free_bake([obj])
    bake.write_trajectory(trajectory, [Target(obj.name, obj.name)], bake.BakeOptions("sub", 1, FPS, stride=1))
    data = fcurve_data(obj)
    assert len(data[("location", 0)]) == 2 * 81  # one key per solver step, on subframes
    np.testing.assert_allclose(data[("location", 0)][0::2], 1 + trajectory.t * FPS, atol=1e-4)
    assert_objects_follow(scene, trajectory, [obj.name], stride=1)
    bake.free_bake([obj])
    tol = 1e-3
    bake.write_trajectory(trajectory, [Target(obj.name, obj.name)], bake.BakeOptions("sub", 1, FPS, reduce_tolerance=tol))
    reduced = fcurve_data(obj)
    assert len(reduced[("location", 2)]) == 2 * 2  # z is constant: only the end keys remain
    assert 2 < len(reduced[("location", 0)]) < 2 * 81
    fc = compat.find_fcurve(compat.assigned(obj), "location", 0)
    for k, t in enumerate(trajectory.t):
        assert abs(fc.evaluate(1 + t * FPS) - trajectory.poses[k, 0, 0]) < tol + 1e-6


def test_reduce_keys_keeps_what_a_line_cannot_reproduce():
    frames = np.arange(10.0)
    values = np.array([0, 1, 2, 3, 3, 3, 3, 2, 1, 0], dtype=float)
    assert bake.reduce_keys(frames, values, 1e-9).tolist() == [0, 3, 6, 9]


def test_previous_action_kept_other_channels_copied_and_restored_by_free_bake():
    scene = new_scene("prev")
    obj = bpy.data.objects.new(f"{scene.name} o", None)
    scene.collection.objects.link(obj)
    obj.location = (0.0, 0.0, 5.0)
    obj.keyframe_insert("location", frame=1)
    obj.scale = (2.0, 2.0, 2.0)
    obj.keyframe_insert("scale", frame=1)
    obj.scale = (3.0, 3.0, 3.0)
    obj.keyframe_insert("scale", frame=10)
    previous = compat.assigned(obj)
    trajectory = tumbling_trajectory([obj.name])
    bake.write_trajectory(trajectory, [Target(obj.name, obj.name)], bake.BakeOptions("prev", 1, FPS))
    baked = compat.assigned(obj)
    assert baked.action.name.startswith("Symplex")
    assert previous.action.users >= 1  # kept alive by the bake's record
    data = fcurve_data(obj)
    assert ("scale", 0) in data and len(data[("scale", 0)]) == 4  # artist's scale keys copied
    set_frame(scene, 10)
    assert tuple(obj.scale) == pytest.approx((3.0, 3.0, 3.0))
    assert bake.free_bake([obj]) == 1
    assert compat.assigned(obj).action == previous.action
    assert previous.action.get(reference.MARK) is None
    set_frame(scene, 1)
    assert tuple(obj.location) == pytest.approx((0.0, 0.0, 5.0))
    assert not [a for a in bpy.data.actions if a.name.startswith(f"Symplex {obj.name}")]


def test_free_bake_without_previous_action_restores_values():
    scene = new_scene("noprev")
    obj = bpy.data.objects.new(f"{scene.name} o", None)
    scene.collection.objects.link(obj)
    obj.location = (1.0, 2.0, 3.0)
    obj.rotation_euler = (0.1, 0.2, 0.3)
    before = scene_state(scene)
    bake.write_trajectory(tumbling_trajectory([obj.name]), [Target(obj.name, obj.name)],
                          bake.BakeOptions("noprev", 1, FPS), root=obj.name)
    set_frame(scene, 30)
    bake.free_bake([obj])
    assert obj.animation_data is None
    assert scene_state(scene) == before


def test_failure_mid_write_leaves_nothing_behind():
    scene = new_scene("atomic")
    objs = []
    for i in range(3):
        obj = bpy.data.objects.new(f"{scene.name} o{i}", None)
        scene.collection.objects.link(obj)
        objs.append(obj)
    before = scene_state(scene)
    trajectory = tumbling_trajectory([o.name for o in objs])
    with pytest.raises(KeyError):
        # the root object does not exist: two actions are written before the third owner fails
        bake.write_trajectory(trajectory, [Target(o.name, o.name) for o in objs], bake.BakeOptions("a", 1, FPS),
                              root="no such object")
    assert scene_state(scene) == before


# ----------------------------------------------------------------------------------------------
# Whole bakes through the solver


def test_armature_pendulum_chain_bake_equals_trajectory():
    scene = new_scene("chain", frames=60)
    arm, setup = chain_armature(scene, n=3, mode="QUATERNION")
    report, trajectory, bake_job = bake_to_end(scene, setup.name)
    assert report.steps == 59 * setup.substeps and report.keys > 0
    assert setup.diagnostics.status == "finished"
    for k in range(0, len(trajectory.t), setup.substeps):
        set_frame(scene, 1 + trajectory.t[k] * FPS)
        for name in trajectory.bodies:
            np.testing.assert_allclose(bone_world(scene, arm, name), world_pose_matrices(trajectory, name, [k])[0], atol=2e-5)
    # the chain really swings
    assert np.ptp(trajectory.q[:, 0]) > 0.3


def test_accuracy_order_4_bakes_the_chain_with_the_galerkin_integrator_and_maximal_refuses_it():
    scene = new_scene("chain order", frames=30)
    arm, setup = chain_armature(scene, n=3, mode="QUATERNION")
    setup.order, setup.substeps = "4", 1
    report, trajectory, bake_job = bake_to_end(scene, setup.name)
    assert bake_job.integrator.order == 4 and setup.diagnostics.status == "finished"
    for k in (0, len(trajectory.t) - 1):
        set_frame(scene, 1 + trajectory.t[k] * FPS)
        for name in trajectory.bodies:
            np.testing.assert_allclose(bone_world(scene, arm, name), world_pose_matrices(trajectory, name, [k])[0],
                                       atol=2e-5)
    energy = np.asarray(trajectory.energy)
    assert np.ptp(energy) < 1e-3 * np.max(np.abs(energy))  # order 4 at frame-rate steps
    setup.method = "maximal"
    with pytest.raises(MechanismError, match="accuracy order 4 is for the 'tree' method"):
        job.BakeJob(scene, setup.name)


def loop_gap(scene, arm, loop) -> float:
    """Distance between the loop point carried by bone A and the same point carried by bone B."""
    arm_eval = evaluated(scene, arm)
    pb_a, pb_b = arm_eval.pose.bones[loop.bone_a], arm_eval.pose.bones[loop.bone_b]
    point = Vector(loop.point)
    point_a = arm_eval.matrix_world @ pb_a.matrix @ point
    # the point's rest position expressed in bone B's rest frame, then carried by B's pose
    in_b = pb_b.bone.matrix_local.inverted() @ pb_a.bone.matrix_local @ point
    point_b = arm_eval.matrix_world @ pb_b.matrix @ in_b
    return (point_a - point_b).length


def test_armature_scissor_lift_loops_stay_closed_in_baked_keys(tmp_path):
    scene = new_scene("scissor", frames=30)
    built, _expected = build.build_armature(scene, generate.scissor_lift(segments=3))
    arm = bpy.data.objects[built.setup]
    loops = list(arm.data.symplex.loops)
    assert loops, "the scissor lift has loop closures"
    report, trajectory, _ = bake_to_end(scene, built.setup)
    assert report.max_residual < 1e-8
    moved = 0.0
    for frame in range(scene.frame_start, scene.frame_end + 1):
        set_frame(scene, frame)
        for loop in loops:
            assert loop_gap(scene, arm, loop) < 1e-6, (frame, loop.name)
        k = (frame - 1) * read_scene(scene, built.setup).substeps
        for name in trajectory.bodies:
            np.testing.assert_allclose(bone_world(scene, arm, name), world_pose_matrices(trajectory, name, [k])[0], atol=2e-5)
        moved = max(moved, abs(trajectory.q[k, 0] - trajectory.q[0, 0]))
    assert moved > 1e-3
    # save, reload: the same values at every frame
    before = {}
    for frame in (1, 10, 30):
        set_frame(scene, frame)
        before[frame] = {pb.name: bone_world(scene, arm, pb.name) for pb in arm.pose.bones}
    path = tmp_path / "scissor.blend"
    scene_name, arm_name = scene.name, arm.name
    bpy.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene, arm = bpy.data.scenes[scene_name], bpy.data.objects[arm_name]
    for frame, poses in before.items():
        set_frame(scene, frame)
        for name, matrix in poses.items():
            np.testing.assert_allclose(bone_world(scene, arm, name), matrix, atol=1e-7)


def test_rigid_four_bar_from_blender_constraints_bakes_exactly():
    scene = new_scene("fourbar", frames=40)
    _coll, setup, bodies, hinges = rigid_four_bar(scene)
    # each hinge point as seen from each moving object it joins, before the bake
    carried = []
    for hinge in hinges:
        anchor = hinge.location.copy()
        rbc = hinge.rigid_body_constraint
        ends = [e for e in (rbc.object1, rbc.object2) if e.rigid_body.type == "ACTIVE"]
        carried.append((hinge.name, anchor, [(e, reference.object_matrix(e, 1).inverted() @ anchor) for e in ends]))
    report, trajectory, _ = bake_to_end(scene, setup.name)
    assert report.max_residual < 1e-8 and "energy check: max |E - E0|" in report.summary()  # audited, passed
    assert_objects_follow(scene, trajectory, [b.name for b in bodies], stride=setup.substeps)
    for frame in range(1, 41):
        set_frame(scene, frame)
        for name, anchor, ends in carried:
            points = [evaluated(scene, end).matrix_world @ local for end, local in ends]
            if len(points) == 1:  # hinged to the ground: the point stays where the hinge is
                points.append(anchor)
            assert (points[0] - points[1]).length < 1e-6, (frame, name)
    # Bullet must not move the baked bodies: they are Animated while the bake plays
    assert all(b.rigid_body.kinematic for b in bodies)
    bake.free_bake(bake.baked_objects(scene, setup.name))
    assert not any(b.rigid_body.kinematic for b in bodies)


def angle_about(rotations: np.ndarray, axis) -> np.ndarray:
    """Signed angle of rotations (N, 3, 3) about unit `axis` (exact for rotations about that axis)."""
    from addon.bridge.rotations import matrix_to_quat

    q = matrix_to_quat(rotations)
    return 2.0 * np.arctan2(q[:, 1:] @ np.asarray(axis, dtype=float), q[:, 0])


def baked_angles(scene, pose_of, times, axis) -> np.ndarray:
    """Angle about world `axis` of the evaluated pose_of() (4x4) at every time, from its pose at the first."""
    rotations = []
    for t in times:
        set_frame(scene, 1 + t * FPS)
        rotations.append(pose_of()[:3, :3])
    rotations = np.array(rotations)
    return angle_about(rotations @ rotations[0].T, axis)


LOWER, UPPER = -0.4, 0.5


def assert_limits_hold_and_are_reached(angles, trajectory):
    """Every key within [LOWER, UPPER] to 1e-6 rad, both stops touched, keys equal to the solver's angle."""
    assert np.max(angles) <= UPPER + 1e-6 and np.min(angles) >= LOWER - 1e-6, (np.min(angles), np.max(angles))
    assert abs(np.max(angles) - UPPER) < 1e-6 and abs(np.min(angles) - LOWER) < 1e-6
    np.testing.assert_allclose(angles, trajectory.q[:, 0], atol=1e-6)


def test_rigid_pendulum_hinge_limits_hold_in_the_baked_keys():
    """A 1 m bar on a HINGE about world Y, limit_ang_z in [-0.4, 0.5] rad, launched at 3 rad/s (free swing ~0.8 rad)."""
    scene = new_scene("hinge_limits", frames=75)
    coll = bpy.data.collections.new(f"{scene.name} c")
    scene.collection.children.link(coll)
    ground = box_object(scene, coll, f"{scene.name} ground", (0.2, 0.2, 0.05), (0.0, 0.0, 0.1), passive=True)
    bar = box_object(scene, coll, f"{scene.name} bar", (0.05, 0.05, 1.0), (0.0, 0.0, -0.5))
    hinge = constraint_object(scene, coll, f"{scene.name} hinge", "HINGE", ground, bar, (0, 0, 0),
                              (-math.pi / 2, 0, 0))
    rbc = hinge.rigid_body_constraint
    rbc.use_limit_ang_z = True
    rbc.limit_ang_z_lower, rbc.limit_ang_z_upper = LOWER, UPPER
    hinge.symplex.v0 = (3.0, 0, 0, 0, 0, 0)
    setup = add_setup(scene, "limited hinge", "RIGID_BODIES", collection=coll)
    setup.subframes = True  # a key per solver step: the step that lands on a stop is keyed
    joint = read_scene(scene, setup.name).mechanism.joint(hinge.name)
    assert (joint.lower, joint.upper) == ((LOWER,), (UPPER,)) and joint.axis == pytest.approx((0, 1, 0))
    report, trajectory, _ = bake_to_end(scene, setup.name)
    assert f"energy check did not apply (not a conservative setup: limits (inelastic stops) on joint {hinge.name!r})" \
        in report.summary()  # the stops absorb energy: nothing to audit
    angles = baked_angles(scene, lambda: object_world(scene, bar), trajectory.t, (0.0, 1.0, 0.0))
    assert_limits_hold_and_are_reached(angles, trajectory)


def test_armature_bone_ik_limits_hold_in_the_baked_keys():
    """The same swing on one bone hinged about its X axis, stopped by its IK limits."""
    scene = new_scene("ik_limits", frames=75)
    arm, setup = chain_armature(scene, n=1, angle=0.0)
    pb = arm.pose.bones["b0"]
    pb.use_ik_limit_x = True
    pb.ik_min_x, pb.ik_max_x = LOWER, UPPER
    pb.symplex.v0 = (3.0, 0, 0, 0, 0, 0)
    setup.subframes = True
    joint = read_scene(scene, setup.name).mechanism.joint("b0")
    assert joint.lower == pytest.approx((LOWER,)) and joint.upper == pytest.approx((UPPER,))
    report, trajectory, _ = bake_to_end(scene, setup.name)
    axis = np.array(arm.data.bones["b0"].matrix_local)[:3, 0]
    angles = baked_angles(scene, lambda: bone_world(scene, arm, "b0"), trajectory.t, axis)
    assert_limits_hold_and_are_reached(angles, trajectory)


def test_pendulum_with_mass_from_its_mesh_swings_at_the_compound_pendulum_period():
    """A 0.1 x 0.1 x 1 m bar hinged at its top face, mass properties from its mesh: T = 2 pi sqrt(I_O / (m g d))."""
    scene = new_scene("mesh_pendulum", frames=101)
    scene.use_gravity, scene.gravity = True, (0.0, 0.0, -9.81)
    coll = bpy.data.collections.new(f"{scene.name} c")
    scene.collection.children.link(coll)
    ground = box_object(scene, coll, f"{scene.name} ground", (0.2, 0.2, 0.05), (0.0, 0.0, 0.1), passive=True)
    bar = box_object(scene, coll, f"{scene.name} bar", (1, 1, 1), (0.0, 0.0, 0.0), mass=99.0)
    bar.data = box_mesh(f"{scene.name} bar", (0.1, 0.1, 1.0), centre=(0.0, 0.0, -0.5))  # origin at the hinge
    bar.symplex.mass_source = "MESH"
    bar.symplex.density = 2700.0
    hinge = constraint_object(scene, coll, f"{scene.name} hinge", "HINGE", ground, bar, (0, 0, 0),
                              (-math.pi / 2, 0, 0))
    hinge.symplex.q0 = (0.05, 0, 0, 0, 0, 0)
    setup = add_setup(scene, "mesh pendulum", "RIGID_BODIES", collection=coll)
    setup.substeps = 4
    _report, trajectory, _ = bake_to_end(scene, setup.name)
    q, t = trajectory.q[:, 0], trajectory.t
    up = np.nonzero((q[:-1] < 0) & (q[1:] >= 0))[0]
    crossings = t[up] - q[up] * (t[up + 1] - t[up]) / (q[up + 1] - q[up])
    period = float(np.mean(np.diff(crossings)))
    d, length, side = 0.5, 1.0, 0.1
    inertia_over_mass = (side * side + length * length) / 12 + d * d  # about the hinge, per kg
    expected = 2 * math.pi * math.sqrt(inertia_over_mass / (9.81 * d)) * (1 + 0.05**2 / 16)  # amplitude correction
    assert len(crossings) >= 2 and period == pytest.approx(expected, rel=1e-3)


def fcurves_of(obj) -> dict:
    return {(fc.data_path, fc.array_index): fc for fc in compat.fcurves(compat.assigned(obj))}


@pytest.mark.parametrize("kind, subframes", [("armature", False), ("rigid", True)])
def test_reduced_bake_reevaluates_to_the_full_bake_within_tolerance(kind, subframes):
    """Every channel Symplex bakes, reduced to 1e-3, stays within 1e-3 of the full bake at every keyed time."""
    scene = new_scene(f"reduce_{kind}", frames=60)
    if kind == "armature":
        arm, setup = chain_armature(scene, n=3, mode="QUATERNION")
        owners = [arm]
    else:
        _coll, setup, bodies, _hinges = rigid_four_bar(scene)
        owners = list(bodies)
    setup.subframes = subframes
    bake_to_end(scene, setup.name)
    full = {}
    for owner in owners:
        for key, co in fcurve_data(owner).items():
            full[owner.name, key] = co
    expected_keys = 59 * (setup.substeps if subframes else 1) + 1
    assert all(len(co) == 2 * expected_keys for co in full.values())
    tol = 1e-3
    setup.reduce, setup.reduce_tolerance = True, tol
    report, _trajectory, _ = bake_to_end(scene, setup.name)
    reduced_keys = 0
    for owner in owners:
        curves = fcurves_of(owner)
        for (name, key), co in full.items():
            if name != owner.name:
                continue
            fc = curves[key]
            reduced_keys += len(fc.keyframe_points)
            frames, values = co[0::2], co[1::2]
            error = max(abs(fc.evaluate(float(f)) - v) for f, v in zip(frames, values))
            assert error <= tol + 1e-6, (owner.name, key, error)  # 1e-6: single-precision keys
    assert report.keys == reduced_keys < 0.5 * sum(len(co) // 2 for co in full.values())


def test_baking_twice_gives_identical_keys():
    scene = new_scene("twice", frames=20)
    arm, setup = chain_armature(scene, n=2)
    bake_to_end(scene, setup.name)
    first = fcurve_data(arm)
    bake_to_end(scene, setup.name)
    second = fcurve_data(arm)
    assert first.keys() == second.keys()
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    assert len([a for a in bpy.data.actions if a.name.startswith(f"Symplex {arm.name}")]) == 1


def test_free_bake_restores_the_previous_action_and_pose():
    scene = new_scene("free", frames=20)
    arm, setup = chain_armature(scene, n=2)
    arm.pose.bones["b1"].keyframe_insert("scale", frame=1)  # the artist's own action
    previous = compat.assigned(arm).action
    before = scene_state(scene)
    bake_to_end(scene, setup.name)
    assert compat.assigned(arm).action != previous
    set_frame(scene, 15)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.free_bake(setup=setup.name) == {"FINISHED"}
    assert compat.assigned(arm).action == previous
    set_frame(scene, 1)
    after = scene_state(scene)
    after.pop(f"setup {setup.name}")
    before.pop(f"setup {setup.name}")
    assert after == before


def test_cancelled_bake_leaves_the_scene_unchanged():
    scene = new_scene("cancel", frames=30)
    _arm, setup = chain_armature(scene, n=3)
    before = scene_state(scene)
    bake_job = job.BakeJob(scene, setup.name)
    bake_job.advance(max_steps=5)
    assert 0 < bake_job.fraction < 1
    del bake_job  # what Esc does: drop the job without finish()
    assert scene_state(scene) == before


def test_failing_bake_leaves_the_scene_unchanged_and_names_the_frame():
    """The rocker of a crank-rocker cannot turn a full circle: driving it round breaks the loop."""
    scene = new_scene("fail", frames=20)
    _coll, setup, (_crank, _coupler, rocker), _hinges = rigid_four_bar(scene)
    pivot = np.array([0.4, 0.0, 0.0])
    start = np.array(reference.object_matrix(rocker, 1))
    frames = np.arange(1.0, 21.0)
    world = []
    for angle in np.linspace(0.0, 2.0 * math.pi, len(frames)):
        turn = np.eye(4)
        turn[:3, :3] = np.array(Matrix.Rotation(-angle, 3, "Y"))
        turn[:3, 3] = pivot - turn[:3, :3] @ pivot
        world.append(turn @ start)
    bake.key_object(rocker, frames, np.array(world), "rocker drive")
    rocker.rigid_body.kinematic = True
    before = scene_state(scene)
    with pytest.raises(SolverError) as err:
        job.bake_setup(scene, setup.name)
    message = str(err.value)
    assert setup.name in message and "frame " in message
    assert not message.startswith(f"setup {setup.name!r}, frame 1:")  # it fails on the way, not at the start
    assert scene_state(scene) == before
    with pytest.raises(RuntimeError, match="frame "), bpy.context.temp_override(scene=scene):
        bpy.ops.symplex.bake(setup=setup.name)
    assert scene_state(scene) == before


# ----------------------------------------------------------------------------------------------
# Rotation conversions against mathutils


def random_rotations(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    from addon.bridge.rotations import quat_to_matrix

    q = np.random.default_rng(4).normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q, quat_to_matrix(q)


def test_matrix_quaternion_euler_axis_angle_agree_with_mathutils():
    from mathutils import Euler, Quaternion

    from addon.bridge.rotations import matrix_to_euler, matrix_to_quat, quat_to_axis_angle, quat_to_matrix

    q, m = random_rotations()
    for k in range(0, len(q), 7):
        np.testing.assert_allclose(np.array(Quaternion(q[k]).to_matrix()), m[k], atol=1e-6)
    back = matrix_to_quat(m)
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", back, q)), 1.0, atol=1e-12)
    for order in EULER_ORDERS:
        e = matrix_to_euler(m, order)
        for k in range(0, len(q), 7):
            np.testing.assert_allclose(np.array(Euler(e[k], order).to_matrix()), m[k], atol=1e-6, err_msg=order)
    aa = quat_to_axis_angle(back)
    for k in range(0, len(q), 7):
        np.testing.assert_allclose(np.array(Matrix.Rotation(aa[k, 0], 3, Vector(aa[k, 1:]))), m[k], atol=1e-6)
    np.testing.assert_allclose(quat_to_matrix(back), m, atol=1e-12)


def test_euler_continuity_matches_mathutils_compatible_euler():
    from addon.bridge.rotations import euler_continuous, matrix_to_euler, quat_to_matrix

    t = np.linspace(0.0, 6.0, 400)
    q = np.stack([np.cos(t), 0.6 * np.sin(t), 0.64 * np.sin(t), 0.48 * np.sin(t)], axis=1)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    m = quat_to_matrix(q)
    for order in EULER_ORDERS:
        ours = euler_continuous(matrix_to_euler(m, order), order)
        theirs, previous = [], None
        for k in range(len(t)):
            mat = Matrix(m[k].tolist())
            previous = mat.to_euler(order, previous) if previous is not None else mat.to_euler(order)
            theirs.append(tuple(previous))
        assert np.max(np.abs(np.diff(ours, axis=0))) <= np.max(np.abs(np.diff(np.array(theirs), axis=0))) + 1e-5
        np.testing.assert_allclose(ours, np.array(theirs), atol=1e-5, err_msg=order)


def test_affine_inverse():
    from addon.bridge.rotations import affine_inverse

    _q, r = random_rotations(10)
    m = np.tile(np.eye(4), (10, 1, 1))
    m[:, :3, :3] = r * 1.7
    m[:, :3, 3] = np.arange(30).reshape(10, 3)
    np.testing.assert_allclose(affine_inverse(m) @ m, np.tile(np.eye(4), (10, 1, 1)), atol=1e-12)

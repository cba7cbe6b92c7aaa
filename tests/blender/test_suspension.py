"""Ground following of car rigs in real Blender: wheels ray-cast onto a ground mesh, the chassis on springs.

Runs under bpy 5.0 and 4.2. World poses are checked on bridge.vehicle_bake.object_trajectory (float64,
exactly what is baked) and, for the chassis, on its float32 keys.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest

from addon.bridge import suspension, vehicle_bake, vehicle_rig
from addon.bridge.rotations import quat_to_matrix
from addon.solver.vehicles import suspension as solver_suspension
from tests.blender.scenes import fcurve_data, new_scene, scene_state, symplex  # noqa: F401

G = 9.81


def _ground(scene, name: str = "Ground", bump: tuple[float, float, float, float, float] | None = None):
    """A 400 m square plane at z = 0, with a box bump (x0, x1, y0, y1, height) on it when given."""
    verts = [(-200.0, -200.0, 0.0), (200.0, -200.0, 0.0), (200.0, 200.0, 0.0), (-200.0, 200.0, 0.0)]
    faces = [(0, 1, 2, 3)]
    if bump is not None:
        x0, x1, y0, y1, h = bump
        base = len(verts)
        verts += [(x, y, z) for z in (0.0, h) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
        faces += [(base + 4, base + 5, base + 6, base + 7)]  # top
        faces += [(base + i, base + (i + 1) % 4, base + 4 + (i + 1) % 4, base + 4 + i) for i in range(4)]
    mesh = bpy.data.meshes.new(f"{scene.name} {name}")
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(f"{scene.name} {name}", mesh)
    scene.collection.objects.link(obj)
    return obj


def _car(scene, speed: float, **controls):
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{scene.name} car", slalom=False)
    chassis = scene.objects[rig.chassis]
    chassis["initial_speed"] = speed
    fps = scene.render.fps
    for prop, keys in controls.items():
        for t, value in keys:
            chassis[prop] = value
            chassis.keyframe_insert(f'["{prop}"]', frame=1 + t * fps)
    return rig, chassis


def _follow(scene, rig, ground):
    reading = vehicle_rig.read_rig(scene, rig, "sedan")
    trajectory = vehicle_bake.simulate_rig(reading)
    follow = suspension.ride(scene, reading, trajectory, ground.name)
    objects = vehicle_bake.object_trajectory(reading, trajectory, follow)
    return reading, follow, objects


def _axes(objects, name: str) -> np.ndarray:
    return quat_to_matrix(objects.poses[:, objects.bodies.index(name), 3:])


def test_flat_ground_rests_at_the_static_sag(symplex):
    scene = new_scene("flat", frames=73, fps=24)
    ground = _ground(scene)
    rig, chassis = _car(scene, 10.0)
    chassis[suspension.GROUND_PROPERTY] = ground.name
    reading, follow, objects = _follow(scene, rig, ground)
    assert np.abs(follow.road).max() < 1e-6  # float32 ray hits on the plane z = 0
    assert np.abs(follow.run.q).max() < 1e-6
    susp = follow.suspension
    loads = solver_suspension.static_loads(susp, G)
    assert loads.sum() == pytest.approx(susp.mass * G, rel=1e-12)
    np.testing.assert_allclose(follow.run.compression, np.broadcast_to(loads / susp.stiffness, (73, 4)), atol=1e-6)
    assert susp.mass * G / (4 * susp.stiffness) == pytest.approx(G / (2 * math.pi * 1.5) ** 2)  # 11 cm at 1.5 Hz

    report = vehicle_bake.bake_vehicle(scene, rig, "sedan")
    assert report.ground == ground.name and "roll up to 0.0 deg" in report.summary()
    z = fcurve_data(chassis)[("location", 2)][1::2].astype(float)
    assert np.abs(z - reading.vehicle.spec.com_height).max() < 1e-6  # does not move vertically
    euler = np.stack([fcurve_data(chassis)[("rotation_euler", i)][1::2] for i in (0, 1)])
    assert np.abs(euler).max() < 1e-6
    xs = fcurve_data(chassis)[("location", 0)][1::2]
    assert xs[-1] - xs[0] > 25.0


def test_braking_pitches_the_nose_down(symplex):
    scene = new_scene("brake", frames=97, fps=24)
    ground = _ground(scene)
    rig, chassis = _car(scene, 20.0, brake=((0.0, 0.0), (1.0, 0.0), (1.2, 0.8)))
    reading, follow, objects = _follow(scene, rig, ground)
    accel = suspension.planar_acceleration(vehicle_bake.simulate_rig(reading))
    braking = accel[:, 0] < -2.0
    assert braking.sum() > 24 and np.abs(accel[:, 1]).max() < 1e-6
    forward = _axes(objects, rig.chassis)[:, :, 0]  # the chassis' +X in the world
    assert np.abs(forward[:20, 2]).max() < 1e-9  # coasting: level (central differences reach 2 nodes ahead)
    assert forward[braking, 2].max() < 0 and forward[braking, 2].min() < -0.02  # nose down while braking
    assert follow.run.q[braking, 2].min() > 0.0
    front = objects.poses[:, objects.bodies.index(rig.wheel("wheel_fl")), 2]
    np.testing.assert_allclose(front, front[0], atol=1e-6)  # the wheels stay on the flat road


def test_steady_left_turn_rolls_the_body_outward(symplex):
    scene = new_scene("turn", frames=121, fps=24)
    ground = _ground(scene)
    rig, chassis = _car(scene, 12.0)
    chassis["steer"] = 0.08  # held: a steady left turn
    reading, follow, objects = _follow(scene, rig, ground)
    left_axis = _axes(objects, rig.chassis)[:, :, 1]  # the chassis' +Y (its left) in the world
    late = slice(72, None)
    assert left_axis[late, 2].min() > 0.01  # left side up: the body rolls right, out of the left turn
    accel = suspension.planar_acceleration(vehicle_bake.simulate_rig(reading))
    susp = follow.suspension
    k_roll = susp.stiffness * np.sum(susp.corners[:, 1] ** 2)
    steady = susp.mass * susp.com_height * accel[late, 1] / k_roll
    np.testing.assert_allclose(follow.run.q[late, 1], steady, rtol=0.02)


def test_bump_lifts_the_wheels_that_cross_it(symplex):
    scene = new_scene("bump", frames=73, fps=24)
    ground = _ground(scene, bump=(8.0, 8.6, 0.2, 3.0, 0.08))  # under the left wheels only
    rig, chassis = _car(scene, 8.0)
    reading, follow, objects = _follow(scene, rig, ground)
    rise = {key: float(np.ptp(objects.poses[:, objects.bodies.index(name), 2])) for key, name in rig.wheels}
    assert rise["wheel_fl"] == pytest.approx(0.08, abs=1e-5) and rise["wheel_rl"] == pytest.approx(0.08, abs=1e-5)
    assert rise["wheel_fr"] < 1e-6 and rise["wheel_rr"] < 1e-6
    front_left = follow.road[:, 0 + 2]
    first = int(np.argmax(front_left > 0.0))
    last = len(front_left) - 1 - int(np.argmax(front_left[::-1] > 0.0))
    assert np.all(np.diff(front_left[first - 1: first + 3]) >= 0)  # rolls up the edge, no step
    assert first < last and follow.road[:, 1].max() < 1e-6
    assert follow.run.q[:, 1].max() > 1e-3  # the left side is lifted: positive roll
    vehicle_bake.bake_vehicle(scene, rig, "sedan", ground=ground.name)
    assert np.ptp(fcurve_data(chassis)[("location", 2)][1::2]) > 0.005


def test_off_the_ground_is_named_and_changes_nothing(symplex):
    scene = new_scene("off", frames=73, fps=24)
    verts = [(-2.0, -2.0, 0.0), (6.0, -2.0, 0.0), (6.0, 2.0, 0.0), (-2.0, 2.0, 0.0)]
    mesh = bpy.data.meshes.new("short road")
    mesh.from_pydata(verts, [], [(0, 1, 2, 3)])
    road = bpy.data.objects.new(f"{scene.name} short road", mesh)
    scene.collection.objects.link(road)
    rig, chassis = _car(scene, 8.0)
    before = scene_state(scene)
    with pytest.raises(vehicle_rig.RigError, match=f"is off ground object '{road.name}' at frame"):
        vehicle_bake.bake_vehicle(scene, rig, "sedan", ground=road.name)
    with pytest.raises(vehicle_rig.RigError, match="ground object 'nowhere' is not in scene"):
        vehicle_bake.bake_vehicle(scene, rig, "sedan", ground="nowhere")
    chassis[suspension.FREQUENCY_PROPERTY] = -1.0
    with pytest.raises(vehicle_rig.RigError, match="frequency must be > 0"):
        vehicle_bake.bake_vehicle(scene, rig, "sedan", ground=road.name)
    del chassis[suspension.FREQUENCY_PROPERTY]
    assert scene_state(scene) == before


def test_bake_operator_takes_a_ground(symplex):
    scene = new_scene("opground", frames=25, fps=24)
    ground = _ground(scene, bump=(1.0, 1.5, 0.2, 3.0, 0.05))
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_vehicle(preset="kart", name="GroundKart", slalom=False) == {"FINISHED"}
        kart = scene.objects["GroundKart"]
        kart["initial_speed"] = 5.0
        with bpy.context.temp_override(scene=scene, active_object=kart, object=kart):
            assert bpy.ops.symplex.bake_vehicle(ground=ground.name) == {"FINISHED"}
            assert np.ptp(fcurve_data(kart)[("location", 2)][1::2]) > 1e-3
            with pytest.raises(RuntimeError, match="ground object 'missing' is not in scene"):
                bpy.ops.symplex.bake_vehicle(ground="missing")

"""Car rigs in real Blender: finding the rig, reading keyed controls, baking chassis and wheels, freeing.

Runs under bpy 5.0 and 4.2. Keys are float32 (Blender stores F-curve keys in single precision), so
comparisons of baked values against the float64 solver allow a few float32 ulps of the value; wheel
rotations are quaternions (components within [-1, 1]), whose float32 error is ~1e-7 rad.
"""

from __future__ import annotations

import math
import textwrap

import bpy
import numpy as np
import pytest
from mathutils import Matrix

from addon.bridge import compat, vehicle_bake, vehicle_rig
from addon.bridge.rotations import quat_to_matrix
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car
from tests.blender.scenes import cylinder_mesh, fcurve_data, new_scene, scene_state, symplex  # noqa: F401
from tests.solver.vehicles.references import hitch_closed_form

F32 = 2.0**-23  # float32 relative spacing: keys carry about |value| * F32 of rounding


def hand_rig(scene, radii=(0.14, 0.14, 0.12, 0.12), names=("Wheel.RL", "Wheel.RR", "Wheel.FL", "Wheel.FR")):
    """A kart-sized rig built by hand: chassis facing its local -Y, turned 30 degrees in the world, its origin
    not at the centre of mass; wheels named Blender-style, axles along their local Z, smaller in front.
    Controls: throttle and brake (fractions), steer, and an initial speed of 6 m/s."""
    chassis = bpy.data.objects.new(f"{scene.name} kart", bpy.data.meshes.new(f"{scene.name} kart"))
    scene.collection.objects.link(chassis)
    chassis.matrix_world = Matrix.Translation((3.0, -2.0, 0.4)) @ Matrix.Rotation(math.radians(30), 4, "Z")
    # Wheel centres in chassis axes: forward is -Y, left is +X (seen driving along -Y with Z up).
    mounts = {"RL": (0.55, 0.45), "RR": (-0.55, 0.45), "FL": (0.5, -0.6), "FR": (-0.5, -0.6)}
    wheels = []
    for name, radius in zip(names, radii):
        code = name.split(".")[-1][-2:].upper()
        x, y = mounts[code]
        wheel = bpy.data.objects.new(name if name not in bpy.data.objects else f"{scene.name} {name}",
                                     cylinder_mesh(name, radius, 0.15))
        scene.collection.objects.link(wheel)
        wheel.parent = chassis
        wheel.rotation_mode = "QUATERNION"
        wheel.rotation_quaternion = Matrix.Rotation(math.pi / 2, 3, "Y").to_quaternion()  # axle along chassis X
        wheel.location = (x, y, radius - 0.4)  # ground at world z = 0
        wheels.append(wheel)
    fps = scene.render.fps
    chassis["initial_speed"] = 6.0
    for frame, throttle in ((1, 0.0), (1 + fps, 0.8), (1 + 2 * fps, 0.0)):
        chassis["throttle"] = throttle
        chassis.keyframe_insert('["throttle"]', frame=frame)
    for frame, brake in ((1, 0.0), (1 + 2.5 * fps, 0.0), (1 + 3 * fps, 0.5)):
        chassis["brake"] = brake
        chassis.keyframe_insert('["brake"]', frame=frame)
    for frame, steer in ((1, 0.0), (1 + 0.5 * fps, 0.15), (1 + 1.5 * fps, -0.2), (1 + 2.5 * fps, 0.1)):
        chassis["steer"] = steer
        chassis.keyframe_insert('["steer"]', frame=frame)
    return chassis, wheels


def _locals(obj, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Baked keys of `obj`: locations (F, 3) and rotation quaternions or Euler angles (F, 3|4), float64."""
    data = fcurve_data(obj)
    loc = np.stack([data[("location", i)][1::2] for i in range(3)], 1).astype(float)
    path = "rotation_quaternion" if obj.rotation_mode == "QUATERNION" else "rotation_euler"
    rot = np.stack([data[(path, i)][1::2] for i in range(4 if path == "rotation_quaternion" else 3)], 1)
    assert len(loc) == frames
    return loc, rot.astype(float)


def _solve(scene, rig, preset, substeps=1):
    reading = vehicle_rig.read_rig(scene, rig, preset, substeps)
    return reading, vehicle_bake.simulate_rig(reading)


def test_wheel_names():
    cases = {"wheel_fl": "wheel_fl", "Wheel.FR": "wheel_fr", "WheelRearLeft": "wheel_rl", "tyre_rr.001": "wheel_rr",
             "Wheel.Front.L": "wheel_fl", "car_wheel_front_right": "wheel_fr", "Tire-LR": "wheel_rl",
             "Body": None, "Wheelbase guide": None, "steering_wheel": None}
    assert {name: vehicle_rig.wheel_position(name) for name in cases} == cases


def test_built_rig_bakes_chassis_on_the_trajectory(symplex):
    scene = new_scene("car", frames=121, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan")
    chassis = scene.objects[rig.chassis]
    assert vehicle_rig.find_rig(scene, chassis) == rig
    reading, trajectory = _solve(scene, rig, "sedan")
    spec, sedan = reading.vehicle.spec, vehicle_presets()["sedan"]
    assert (spec.mass, spec.yaw_inertia, spec.max_steer) == (sedan.mass, sedan.yaw_inertia, sedan.max_steer)
    assert spec.wheelbase == pytest.approx(sedan.wheelbase, abs=1e-6)
    assert spec.wheel_radius == pytest.approx(sedan.wheel_radius, abs=1e-6)
    controls = dict(reading.vehicle.controls)
    assert set(controls) == {"drive_torque", "steer"}
    assert max(controls["steer"].values) == pytest.approx(0.1, abs=1e-6)

    report = vehicle_bake.bake_vehicle(scene, rig, "sedan")
    assert report.steps == 120 and report.max_side_slip < 1e-9 and report.distance > 30.0
    loc, euler = _locals(chassis, 121)
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    # The rig's chassis origin is its centre of mass on a ground at z = 0: keys are the solver's poses.
    assert np.abs(loc - poses[:, :3]).max() <= 4 * F32 * np.abs(poses[:, :3]).max()
    heading = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    assert np.abs(euler[:, 2] - heading).max() < 1e-6 and np.abs(euler[:, :2]).max() < 1e-6
    assert np.ptp(heading) > 0.15  # it really weaves


def _spin_and_steer(chassis_axes: np.ndarray, quats: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Rolling and steering angles from a wheel's local quaternion keys: in chassis-frame axes (body x
    forward, y left) its rotation is Rz(steer) Ry(spin) R_rest, with R_rest its rotation at frame 0."""
    R = chassis_axes @ quat_to_matrix(quats)
    M = np.einsum("fij,kj->fik", R, R[0])  # R_k R_0^T = Rz(steer) Ry(spin)
    spin = np.unwrap(np.arctan2(-M[:, 2, 0], M[:, 2, 2]))
    steer = np.arctan2(-M[:, 0, 1], M[:, 1, 1])
    off_axis = float(np.abs(M[:, 2, 1]).max())  # no tilt out of the steer-and-spin form
    return spin, steer, off_axis


@pytest.mark.parametrize("substeps", [1, 3])
def test_wheel_spin_is_distance_rolled_over_radius(symplex, substeps):
    scene = new_scene("spin", frames=97, fps=24)
    chassis, wheels = hand_rig(scene)
    rig = vehicle_rig.find_rig(scene, chassis, "-Y")
    assert rig.wheels == tuple(zip(car.WHEELS, (w.name for w in wheels)))
    reading, trajectory = _solve(scene, rig, "kart", substeps)
    np.testing.assert_allclose(reading.wheel_radii, (0.14, 0.14, 0.12, 0.12), atol=1e-6)
    vehicle_bake.bake_vehicle(scene, rig, "kart", substeps)

    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    assert abs(theta[0] - math.radians(30) + math.pi / 2) < 1e-6  # -Y of a chassis turned 30 degrees
    axes = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # chassis axes -> (forward, left, up)
    chassis0 = np.array(chassis.matrix_world)
    worst = {}
    for (key, _name), wheel, radius in zip(rig.wheels, wheels, reading.wheel_radii):
        # Where the wheel centre is on the solver's chassis, from the scene alone.
        centre = (chassis0 @ np.array([*wheel.location, 1.0]))[:2] - poses[0, :2]
        c0, s0 = math.cos(theta[0]), math.sin(theta[0])
        mount = np.array([c0 * centre[0] + s0 * centre[1], -s0 * centre[0] + c0 * centre[1]])
        c, s = np.cos(theta), np.sin(theta)
        path = poses[:, :2] + np.stack([c * mount[0] - s * mount[1], s * mount[0] + c * mount[1]], 1)
        # Every point of the chassis moves on a circular arc over a step: arc = chord (a/2) / sin(a/2).
        chord = np.linalg.norm(np.diff(path, axis=0), axis=1)
        turn = np.diff(theta)
        arc = chord * np.where(np.abs(turn) > 1e-12, 0.5 * turn / np.sin(0.5 * np.where(turn == 0, 1, turn)), 1.0)
        ahead = np.einsum("fi,fi->f", np.diff(path, axis=0), np.stack([np.cos(theta[:-1]), np.sin(theta[:-1])], 1))
        distance = np.copysign(arc, ahead).reshape(-1, substeps).sum(axis=1)  # rolled over each frame
        _loc, quats = _locals(wheel, 97)
        spin, steer, off_axis = _spin_and_steer(axes, quats)
        assert off_axis < 1e-6, key
        # A key holds an orientation: spin is compared modulo whole turns (a kart wheel passes pi per frame).
        error = np.diff(spin) - distance / radius
        worst[key] = float(np.abs((error + np.pi) % (2 * np.pi) - np.pi).max())
        if key in vehicle_rig.FRONT:
            assert np.abs(steer).max() > 0.1, key
        else:
            assert np.abs(steer).max() < 1e-6, key
    assert distance.sum() > 10.0
    assert max(worst.values()) < 1e-6, worst


def test_rear_axle_side_slip_from_baked_keys_is_zero(symplex):
    scene = new_scene("slip", frames=121, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan")
    report = vehicle_bake.bake_vehicle(scene, rig, "sedan")
    loc, euler = _locals(scene.objects[rig.chassis], 121)
    b = vehicle_presets()["sedan"].com_ahead_of_rear_axle
    theta = euler[:, 2]
    x, y = loc[:, 0] - b * np.cos(theta), loc[:, 1] - b * np.sin(theta)
    h = 1.0 / 24
    slip = np.array([car.lateral_velocity(theta[k], x[k], y[k], theta[k + 1], x[k + 1], y[k + 1], h)
                     for k in range(120)])
    speed = np.hypot(np.diff(x), np.diff(y)) / h
    assert speed.max() > 8.0
    # float32 keys: positions carry ~|x| F32 of rounding, so a speed from two of them ~2 |x| F32 / h.
    assert np.abs(slip).max() < 4 * np.abs(loc).max() * F32 / h
    assert report.max_side_slip < 1e-9  # the solver's own, in float64


def test_free_restores_previous_animation_and_rebake_is_identical(symplex):
    scene = new_scene("free", frames=49, fps=24)
    chassis, wheels = hand_rig(scene)
    wheels[0].keyframe_insert("rotation_quaternion", frame=1)  # the artist's own wheel key
    before = scene_state(scene)
    rig = vehicle_rig.find_rig(scene, chassis, "-Y")
    vehicle_bake.bake_vehicle(scene, rig, "kart")
    first = {o.name: fcurve_data(o) for o in (chassis, *wheels)}
    assert all(compat.assigned(o).action.name.startswith("Symplex") for o in (chassis, *wheels))
    assert ('["steer"]', 0) in first[chassis.name]  # controls keep playing under the bake
    vehicle_bake.bake_vehicle(scene, rig, "kart")
    second = {o.name: fcurve_data(o) for o in (chassis, *wheels)}
    assert first.keys() == second.keys()
    for name in first:
        assert first[name].keys() == second[name].keys()
        for channel in first[name]:
            assert np.array_equal(first[name][channel], second[name][channel]), (name, channel)
    assert vehicle_bake.free_vehicle_bake(scene, chassis.name) == 5
    assert scene_state(scene) == before
    assert vehicle_bake.free_vehicle_bake(scene, chassis.name) == 0


def test_missing_wheel_is_named(symplex):
    scene = new_scene("missing", frames=10)
    chassis, wheels = hand_rig(scene)
    bpy.data.objects.remove(wheels[3])
    with pytest.raises(vehicle_rig.RigError) as err:
        vehicle_rig.find_rig(scene, chassis, "-Y")
    message = str(err.value)
    assert chassis.name in message and "front right (wheel_fr)" in message
    assert "rear" not in message and "front left" not in message


def test_bad_rigs_are_refused_by_name(symplex):
    scene = new_scene("bad", frames=30, fps=24)
    chassis, wheels = hand_rig(scene)
    with pytest.raises(vehicle_rig.RigError, match="not ahead of the rear ones along the forward axis \\+Y"):
        vehicle_rig.read_rig(scene, vehicle_rig.find_rig(scene, chassis, "+Y"), "kart")
    rig = vehicle_rig.find_rig(scene, chassis, "-Y", {"wheel_rl": wheels[1].name, "wheel_rr": wheels[0].name})
    with pytest.raises(vehicle_rig.RigError, match=f"wheel '{wheels[1].name}' \\(rear left\\) is not left of"):
        vehicle_rig.read_rig(scene, rig, "kart")
    chassis["brake"] = 0.0
    chassis.keyframe_insert('["brake"]', frame=12)
    chassis["brake"] = -0.5
    chassis.keyframe_insert('["brake"]', frame=13)
    rig = vehicle_rig.find_rig(scene, chassis, "-Y")
    with pytest.raises(vehicle_rig.RigError, match="property 'brake' is -0.25 at frame 12.5"):
        vehicle_rig.read_rig(scene, rig, "kart")
    chassis["brake_torque"] = 10.0
    with pytest.raises(vehicle_rig.RigError, match="'brake_torque' and 'brake' both set the brake_torque"):
        vehicle_rig.read_rig(scene, rig, "kart")


def test_operators_add_bake_free(symplex):
    from addon.ui import vehicle_operators as ops

    for cls in ops.CLASSES:
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options) and cls.__doc__
    scene = new_scene("ops", frames=30, fps=24)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_vehicle(preset="kart", name="Kart") == {"FINISHED"}
        kart = scene.view_layers[0].objects.active  # named Kart, or Kart.001 ... when another test made one
        assert kart.name.split(".")[0] == "Kart" and kart.select_get(view_layer=scene.view_layers[0])
        before = scene_state(scene)
        with bpy.context.temp_override(scene=scene, active_object=kart, object=kart):
            assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
            assert compat.assigned(kart).action.name.startswith("Symplex")
            assert len(fcurve_data(kart)[("location", 0)]) == 2 * 30
            assert bpy.ops.symplex.free_vehicle_bake() == {"FINISHED"}
            assert scene_state(scene) == before
            bpy.data.objects.remove(scene.objects[f"{kart.name} wheel_rl"])
            with pytest.raises(RuntimeError, match="missing wheel\\(s\\): rear left \\(wheel_rl\\)"):
                bpy.ops.symplex.bake_vehicle()
        assert scene_state(scene) == {k: v for k, v in before.items() if k != f"{kart.name} wheel_rl"}


def _path_curve(scene, name: str, points: np.ndarray, kind: str = "POLY"):
    data = bpy.data.curves.new(f"{scene.name} {name}", "CURVE")
    data.dimensions = "3D"
    spline = data.splines.new(kind)
    if kind == "BEZIER":
        spline.bezier_points.add(len(points) - 1)
        for p, (x, y) in zip(spline.bezier_points, points):
            p.co = (x, y, 0.0)
            p.handle_left_type = p.handle_right_type = "AUTO"
    else:
        spline.points.add(len(points) - 1)
        for p, (x, y) in zip(spline.points, points):
            p.co = (x, y, 0.0, 1.0)
    obj = bpy.data.objects.new(f"{scene.name} {name}", data)
    scene.collection.objects.link(obj)
    return obj


BEND_RADIUS = 15.0


def _bend_road() -> np.ndarray:
    """A road's plan points: 20 m straight along x, a left quarter turn of BEND_RADIUS, 60 m straight along y."""
    a = np.linspace(-math.pi / 2, 0.0, 46)
    return np.vstack([[[0.0, 0.0], [20.0, 0.0]],
                      np.column_stack([20.0 + BEND_RADIUS * np.cos(a[1:]), BEND_RADIUS + BEND_RADIUS * np.sin(a[1:])]),
                      [[20.0 + BEND_RADIUS, BEND_RADIUS + 60.0]]])


def test_car_follows_a_curve_and_cuts_the_corner(symplex):
    scene = new_scene("path", frames=241, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{scene.name} car")  # keyed slalom: replaced by the path
    chassis = scene.objects[rig.chassis]
    radius = BEND_RADIUS
    points = _bend_road()
    curve = _path_curve(scene, "road", points)
    chassis[vehicle_rig.PATH_PROPERTY] = curve.name
    with pytest.raises(vehicle_rig.RigError, match="has no 'path_speed' property"):
        vehicle_rig.read_rig(scene, rig, "sedan")
    for frame, speed in ((1, 4.0), (49, 10.0)):
        chassis["path_speed"] = speed
        chassis.keyframe_insert('["path_speed"]', frame=frame)
    reading = vehicle_rig.read_rig(scene, rig, "sedan")
    assert any("replaced by the path controller" in w for w in reading.warnings)
    np.testing.assert_allclose(reading.path, points, atol=1e-12)
    report = vehicle_bake.bake_vehicle(scene, rig, "sedan")
    assert report.max_side_slip < 1e-9
    loc, euler = _locals(chassis, 241)
    b = vehicle_presets()["sedan"].com_ahead_of_rear_axle
    rear = loc[:, :2] - b * np.column_stack([np.cos(euler[:, 2]), np.sin(euler[:, 2])])
    assert euler[-1, 2] == pytest.approx(math.pi / 2, abs=0.02) and abs(rear[-1, 0] - 35.0) < 0.05
    in_bend = (rear[:, 0] > 20.0) & (rear[:, 1] < radius)
    cut = radius - np.linalg.norm(rear[in_bend] - (20.0, radius), axis=1).min()
    assert 0.2 < cut < 1.0  # it cuts the corner
    speed = np.linalg.norm(np.diff(rear, axis=0), axis=1) * 24
    assert speed[-24:] == pytest.approx(10.0, abs=0.1)

    bezier = _path_curve(scene, "bezier road", points[[0, 1, 24, 46, -1]], "BEZIER")
    chassis[vehicle_rig.PATH_PROPERTY] = bezier.name
    sampled = vehicle_rig.read_rig(scene, rig, "sedan").path
    assert len(sampled) == 4 * vehicle_rig.BEZIER_SAMPLES + 1
    np.testing.assert_allclose(sampled[[0, -1]], points[[0, -1]], atol=1e-6)
    chassis[vehicle_rig.PATH_PROPERTY] = chassis.name
    with pytest.raises(vehicle_rig.RigError, match="which is a mesh, not a curve"):
        vehicle_rig.read_rig(scene, rig, "sedan")


def test_car_with_driver_limits_slows_for_the_bend_and_keeps_to_the_path(symplex):
    """The same road with lateral_accel set: the rig follows as a driver (solver/vehicles/driver.py)."""
    scene = new_scene("driver", frames=241, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{scene.name} car")
    chassis = scene.objects[rig.chassis]
    radius = BEND_RADIUS
    points = _bend_road()
    chassis[vehicle_rig.PATH_PROPERTY] = _path_curve(scene, "road", points).name
    chassis["path_speed"] = chassis["initial_speed"] = 10.0
    chassis["lateral_accel"], chassis["brake_limit"] = 2.0, 3.0
    reading = vehicle_rig.read_rig(scene, rig, "sedan")
    assert reading.limits.lateral == 2.0 and reading.limits.brake == 3.0 and reading.limits.top_speed == 10.0
    vehicle_bake.bake_vehicle(scene, rig, "sedan")
    loc, euler = _locals(chassis, 241)
    b = vehicle_presets()["sedan"].com_ahead_of_rear_axle
    rear = loc[:, :2] - b * np.column_stack([np.cos(euler[:, 2]), np.sin(euler[:, 2])])
    in_bend = (rear[:, 0] > 22.0) & (rear[:, 1] < radius - 2.0)
    off = np.abs(np.linalg.norm(rear[in_bend] - (20.0, radius), axis=1) - radius)
    assert off.max() < 0.05  # no corner cut (pure pursuit above: 0.2 - 1 m)
    speed = np.linalg.norm(np.diff(rear, axis=0), axis=1) * 24
    cruise = math.sqrt(2.0 * radius)  # v = sqrt(a_lat R) = 5.5 m/s, braked down to from 10 m/s
    assert cruise * 0.85 < speed[in_bend[1:]].min() and speed[in_bend[1:]].max() < cruise + 0.1
    assert speed[-24:] == pytest.approx(10.0, abs=0.01)  # back to path_speed on the exit straight
    assert np.diff(speed).max() * 24 < 1.3 * 2.5  # accel_limit's default (plus the speed loop catching up)
    vehicle_bake.free_vehicle_bake(scene, chassis.name)  # (keys go into the artist's action, not the bake's)
    for frame, value in ((1, 2.0), (121, 4.0)):  # keyed limits: limits(t), sampled as any keyed control
        chassis["lateral_accel"] = value
        chassis.keyframe_insert('["lateral_accel"]', frame=frame)
    limits = vehicle_rig.read_rig(scene, rig, "sedan").limits
    assert (limits(0.0).lateral, limits(5.0).lateral, limits(10.0).lateral) == (2.0, 4.0, 4.0)
    assert limits(5.0).brake == 3.0 and limits(5.0).top_speed == 10.0
    chassis["brake_limit"] = 0.0
    with pytest.raises(vehicle_rig.RigError, match="must be > 0"):
        vehicle_rig.read_rig(scene, rig, "sedan")


def test_car_with_a_drift_angle_drifts_through_the_turn_on_its_path(symplex):
    """drift_angle (keyed) puts the rig on tyres that slip (solver/vehicles/drift.py): in a half turn the baked
    chassis' rear axle slides at the keyed slip angle, tail out, the body slip smaller by about atan(b / R), and
    its centre of mass stays near the path."""
    scene = new_scene("drift", frames=145, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{scene.name} car")
    chassis = scene.objects[rig.chassis]
    radius, angle = 15.0, math.radians(20.0)
    a = np.linspace(-math.pi / 2, math.pi / 2, 61)
    points = np.vstack([[[0.0, 0.0]], np.column_stack([15.0 + radius * np.cos(a), radius + radius * np.sin(a)]),
                        [[-5.0, 2 * radius]]])
    chassis[vehicle_rig.PATH_PROPERTY] = _path_curve(scene, "drift road", points).name
    chassis["path_speed"], chassis["initial_speed"] = 12.0, 10.0
    for frame, value in ((1, 0.0), (13, angle)):  # keyed: no drift on the straight, then 20 degrees
        chassis[vehicle_rig.DRIFT_ANGLE] = value
        chassis.keyframe_insert(f'["{vehicle_rig.DRIFT_ANGLE}"]', frame=frame)
    reading = vehicle_rig.read_rig(scene, rig, "sedan")
    assert reading.limits.lateral == 4.0 and reading.limits.top_speed == 12.0  # the driver's defaults
    report = vehicle_bake.bake_vehicle(scene, rig, "sedan")
    assert report.max_side_slip > 2.0  # the rear axle slides (m/s): it is not the rolling car
    loc, euler = _locals(chassis, 145)  # the rig's chassis origin: the centre of mass, +X forward
    heading = np.unwrap(euler[:, 2])
    behind = reading.vehicle.spec.com_ahead_of_rear_axle  # b: the rear axle lies b behind the origin

    def slip(ahead: float) -> np.ndarray:
        """Slip angle over each frame of the chassis point `ahead` (m) of the origin: its chord's direction less
        the mid heading."""
        point = loc[:, :2] + ahead * np.column_stack([np.cos(heading), np.sin(heading)])
        chord = np.diff(point, axis=0)
        angle = np.arctan2(chord[:, 1], chord[:, 0]) - 0.5 * (heading[1:] + heading[:-1])
        return (angle + math.pi) % (2 * math.pi) - math.pi

    rear, body = slip(-behind), slip(0.0)
    centre = np.linalg.norm(loc[:, :2] - (15.0, radius), axis=1)
    turning = (loc[:, 0] > 15.0) | (loc[:, 1] > 2.0)  # past the straight's end
    around = np.degrees(np.arctan2(loc[1:, 1] - radius, loc[1:, 0] - 15.0))  # -90 at the turn's entry, 90 at its exit
    held = np.flatnonzero(turning[1:] & (around > 0.0) & (around < 70.0))  # settled, before the exit's catch
    assert len(held) > 15
    # tail out of the left turn (-20.1 to -19.9): a rig holding the body slip at 20 degrees has its rear at -26
    assert np.degrees(rear[held]) == pytest.approx(-20.0, abs=0.5)
    # the body slip is the steady turn's, smaller by b r / vx, about atan(b / R) = 6.4 degrees (5.95 to 6.2)
    assert np.degrees(body[held] - rear[held]) == pytest.approx(math.degrees(math.atan(behind / radius)), abs=1.0)
    assert np.abs(centre[1:][held] - radius).max() < 0.1  # 0.02 m
    on_arc = turning & (loc[:, 0] > 15.0 - radius) & (loc[:, 1] < 2 * radius)
    assert np.abs(centre[on_arc] - radius).max() < 0.3  # 0.18 m: entry and exit included

    vehicle_bake.free_vehicle_bake(scene, chassis.name)
    chassis.animation_data_clear()
    chassis[vehicle_rig.DRIFT_ANGLE] = -0.1
    with pytest.raises(vehicle_rig.RigError, match="property 'drift_angle' must lie between 0"):
        vehicle_rig.read_rig(scene, rig, "sedan")


# ----------------------------------------------------------------------------------------------
# One-body vehicles: rotors, propellers, fans and tank wheels


def _spin_about(quats: np.ndarray, axis: int) -> np.ndarray:
    """Unwrapped angle (F,) of local quaternion keys that turn only about body axis `axis` (0 x, 1 y, 2 z)."""
    return np.unwrap(2 * np.arctan2(quats[:, 1 + axis], quats[:, 0]))


def _wrapped(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


def test_helicopter_rotors_spin_at_the_governed_speed_and_the_craft_climbs(symplex):
    from addon.bridge import vehicle_body_rig as body_rig

    scene = new_scene("heli", frames=73, fps=24)
    rig = body_rig.build_body_rig(scene, "helicopter", f"{scene.name} heli")
    assert dict(rig.spinners) == {"rotor_main": f"{scene.name} heli main rotor",
                                  "rotor_tail": f"{scene.name} heli tail rotor"}
    report = body_rig.bake_body_rig(scene, rig, "helicopter")
    assert report.steps == 72 and report.max_residual < 1e-12
    chassis = scene.objects[rig.chassis]
    loc, _ = _locals(chassis, 73)
    assert loc[-1, 2] - loc[0, 2] > 0.5  # 10 % over the weight for a second: it climbs
    t = np.arange(73) / 24
    omega = body_rig.TIP_SPEED / vehicle_presets()["helicopter"].rotor_radius
    for role, axis, rate in (("rotor_main", 2, omega), ("rotor_tail", 1, omega * body_rig.TAIL_RATIO)):
        obj = scene.objects[dict(rig.spinners)[role]]
        _loc, quats = _locals(obj, 73)
        off_axis = np.delete(quats[:, 1:], axis, axis=1)
        assert np.abs(off_axis).max() < 1e-6, role
        assert np.abs(_wrapped(_spin_about(quats, axis) - rate * t)).max() < 1e-5, role
        # the part stays where it was mounted on the chassis
        assert np.abs(_loc - _loc[0]).max() < 1e-6


@pytest.mark.parametrize("preset", ["speedboat", "hovercraft"])
def test_propellers_spin_as_the_square_root_of_their_thrust(symplex, preset):
    from addon.bridge import vehicle_body_rig as body_rig

    scene = new_scene(preset, frames=97, fps=24)
    rig = body_rig.build_body_rig(scene, preset, f"{scene.name} craft")
    assert {r for r, _ in rig.spinners} == {"prop_left", "prop_right"}
    body_rig.bake_body_rig(scene, rig, preset)
    spec = vehicle_presets()[preset]
    full = body_rig.PROP_MAX_RATE[body_rig.vehicle_type(preset)]
    low = 0.3 if preset == "speedboat" else 0.2  # the left thrust after 2 s, a fraction of max_thrust
    for role, tail_rate in (("prop_right", full), ("prop_left", full * math.sqrt(low))):
        _loc, quats = _locals(scene.objects[dict(rig.spinners)[role]], 97)
        per_frame = np.diff(_spin_about(quats, 0))
        assert np.abs(_wrapped(per_frame[48:] - tail_rate / 24)).max() < 1e-5, role  # constant thrust from 2 s
        assert np.all(np.abs(per_frame[:23]) < full / 24)  # spinning up with the keyed thrust ramp
    assert spec.max_thrust > 0


def test_tank_road_wheels_roll_with_their_track(symplex):
    from addon.bridge import vehicle_body_rig as body_rig

    scene = new_scene("tank", frames=97, fps=24)
    rig = body_rig.build_body_rig(scene, "tank", f"{scene.name} tank")
    assert len(rig.spinners) == 12
    body_rig.bake_body_rig(scene, rig, "tank")
    loc, rot = _locals(scene.objects[rig.chassis], 97)
    heading = np.unwrap(2 * np.arctan2(rot[:, 3], rot[:, 0]))
    assert np.ptp(heading) > 0.2 and np.abs(rot[:, 1:3]).max() < 1e-6  # it pivots, staying level
    turn = np.diff(heading)
    chord = np.linalg.norm(np.diff(loc[:, :2], axis=0), axis=1)
    ahead = np.einsum("fi,fi->f", np.diff(loc[:, :2], axis=0), np.column_stack([np.cos(heading[:-1]),
                                                                                   np.sin(heading[:-1])]))
    safe = np.where(np.abs(turn) > 1e-9, turn, 1.0)
    arc = np.copysign(chord * np.where(np.abs(turn) > 1e-9, 0.5 * safe / np.sin(0.5 * safe), 1.0), ahead)
    gauge, radius = vehicle_presets()["tank"].track_gauge, vehicle_presets()["tank"].road_wheel_radius
    for role, name in rig.spinners:
        side = 1.0 if role == "track_left" else -1.0
        travel = arc - side * 0.5 * gauge * turn  # the track's travel over each frame
        _loc, quats = _locals(scene.objects[name], 97)
        assert np.abs(np.delete(quats[:, 1:], 1, axis=1)).max() < 1e-6
        assert np.abs(_wrapped(np.diff(_spin_about(quats, 1)) - travel / radius)).max() < 2e-5, name


# ----------------------------------------------------------------------------------------------
# Bone rigs, trailers, the command line


def bone_car(scene, forward_bone_axis=True):
    """An armature car: a chassis bone along world +X (bone +Y forward, +Z up) at the centre of mass 0.4 m up,
    wheel bones (children, each with a radius property) at kart-like mounts; controls on the armature."""
    from addon.bridge.build import edit_armature

    data = bpy.data.armatures.new(f"{scene.name} rig")
    arm = bpy.data.objects.new(f"{scene.name} rig", data)
    scene.collection.objects.link(arm)
    arm.matrix_world = Matrix.Translation((1.0, 2.0, 0.0)) @ Matrix.Rotation(math.radians(-20), 4, "Z")
    mounts = {"Wheel.RL": (-0.4, 0.55, 0.14), "Wheel.RR": (-0.4, -0.55, 0.14), "Wheel.FL": (0.64, 0.5, 0.12),
              "Wheel.FR": (0.64, -0.5, 0.12)}
    with edit_armature(arm) as bones:
        chassis = bones.new("Chassis")
        chassis.head, chassis.tail, chassis.roll = (0.0, 0.0, 0.4), (0.5, 0.0, 0.4), 0.0
        for name, (x, y, r) in mounts.items():
            bone = bones.new(name)
            bone.head, bone.tail, bone.roll = (x, y, r), (x, y + 0.1 * np.sign(y), r), 0.0
            bone.parent = chassis
    for name, (_x, _y, r) in mounts.items():
        arm.pose.bones[name]["radius"] = r
    arm[vehicle_rig.PRESET_PROPERTY] = "kart"
    arm[vehicle_rig.FORWARD_PROPERTY] = "+Y"  # the chassis bone's own axis
    fps = scene.render.fps
    arm["initial_speed"] = 5.0
    for frame, throttle in ((1, 0.0), (1 + fps, 0.6), (1 + 2 * fps, 0.0)):
        arm["throttle"] = throttle
        arm.keyframe_insert('["throttle"]', frame=frame)
    for frame, steer in ((1, 0.0), (1 + 0.5 * fps, 0.2), (1 + 1.5 * fps, -0.25), (1 + 3 * fps, 0.0)):
        arm["steer"] = steer
        arm.keyframe_insert('["steer"]', frame=frame)
    return arm


def _bone_worlds(scene, arm, bone: str, frames: int) -> np.ndarray:
    """World matrices (F, 4, 4) of a pose bone as Blender evaluates the baked scene, frame by frame."""
    out = []
    for frame in range(scene.frame_start, scene.frame_start + frames):
        scene.frame_set(frame)
        out.append(np.array(arm.matrix_world) @ np.array(arm.pose.bones[bone].matrix))
    return np.array(out)


def test_bone_rig_bakes_pose_bones_with_wheel_spin_equal_to_distance_over_radius(symplex):
    scene = new_scene("bones", frames=97, fps=24)
    window_scene = bpy.context.window.scene if bpy.context.window else None
    arm = bone_car(scene)
    rig = vehicle_rig.find_rig(scene, arm, "+Y")
    assert rig.armature == arm.name and rig.chassis == "Chassis"
    assert rig.wheels == (("wheel_rl", "Wheel.RL"), ("wheel_rr", "Wheel.RR"), ("wheel_fl", "Wheel.FL"),
                          ("wheel_fr", "Wheel.FR"))
    reading, trajectory = _solve(scene, rig, "kart")
    np.testing.assert_allclose(reading.wheel_radii, (0.14, 0.14, 0.12, 0.12), atol=1e-12)
    assert reading.vehicle.spec.wheelbase == pytest.approx(1.04, abs=1e-6)  # bones are float32
    report = vehicle_bake.bake_vehicle(scene, rig, "kart")
    assert report.max_side_slip < 1e-9 and report.distance > 15.0
    assert compat.assigned(arm).action.name.startswith("Symplex")
    keyed = fcurve_data(arm)
    assert ('pose.bones["Chassis"].location', 0) in keyed and ('pose.bones["Wheel.FL"].rotation_quaternion', 0) in keyed

    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    if bpy.context.window:
        bpy.context.window.scene = scene
    try:
        chassis = _bone_worlds(scene, arm, "Chassis", 97)
        # the chassis bone rides the solver's chassis: its head keeps one place in the solver's chassis frame
        c, s = np.cos(theta), np.sin(theta)
        d = chassis[:, :2, 3] - poses[:, :2]
        in_frame = np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]], 1)
        assert np.abs(in_frame - in_frame[0]).max() < 1e-5
        forward = chassis[:, :3, 1]
        assert np.abs(np.arctan2(forward[:, 1], forward[:, 0]) - _wrapped(theta)).max() < 1e-5
        axes = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # bone axes -> (forward, left, up)
        worst = {}
        for i, (key, bone) in enumerate(rig.wheels):
            wheel = _bone_worlds(scene, arm, bone, 97)
            relative = np.einsum("fji,fjk->fik", chassis[:, :3, :3], wheel[:, :3, :3])  # R_chassis^T R_wheel
            R = axes @ relative
            M = np.einsum("fij,kj->fik", R, R[0])
            spin = np.unwrap(np.arctan2(-M[:, 2, 0], M[:, 2, 2]))
            # the wheel centre's path from the solver's float64 chassis poses and the mount the reader measured
            px, py = reading.wheel_mounts[i, :2]
            c, s = np.cos(theta), np.sin(theta)
            path = poses[:, :2] + np.stack([c * px - s * py, s * px + c * py], 1)
            turn = np.diff(theta)
            safe = np.where(turn == 0, 1.0, turn)
            chord = np.linalg.norm(np.diff(path, axis=0), axis=1)
            arc = chord * np.where(np.abs(turn) > 1e-12, 0.5 * safe / np.sin(0.5 * safe), 1.0)
            ahead = np.einsum("fi,fi->f", np.diff(path, axis=0), np.stack([c[:-1], s[:-1]], 1))
            worst[key] = float(np.abs(_wrapped(np.diff(spin) - np.copysign(arc, ahead) / reading.wheel_radii[i])).max())
        assert max(worst.values()) < 1e-6, worst
    finally:
        if window_scene is not None:
            bpy.context.window.scene = window_scene
    assert vehicle_bake.free_vehicle_bake(scene, arm.name) == 1


def test_car_with_trailer_rig_bakes_the_trailer_slip_free(symplex):
    scene = new_scene("towing", frames=121, fps=24)  # (every name with "trailer" in it is a trailer part)
    rig = vehicle_rig.build_car_rig(scene, "car_trailer", f"{scene.name} car")
    assert [k for k, _ in rig.trailer] == ["trailer", "trailer_wheel_l", "trailer_wheel_r"]
    assert vehicle_rig.find_rig(scene, scene.objects[rig.chassis]) == rig
    reading, trajectory = _solve(scene, rig, "car_trailer")
    spec = reading.vehicle.spec
    assert reading.vehicle.type == "car_trailer"
    assert spec.hitch_to_trailer_axle == pytest.approx(vehicle_presets()["car_trailer"].hitch_to_trailer_axle, abs=1e-6)
    report = vehicle_bake.bake_vehicle(scene, rig, "car_trailer")
    assert report.max_side_slip < 1e-10
    names = trajectory.coordinate_names
    assert np.ptp(trajectory.q[:, names.index("hitch_angle")]) > 0.05  # the trailer swings behind the slalom
    parts = dict(rig.trailer)
    body = scene.objects[parts["trailer"]]
    assert compat.assigned(body).action.name.startswith("Symplex")
    # the trailer body's keys (local to the car chassis) put it on the solver's trailer in the world
    chassis = scene.objects[rig.chassis]
    c_loc, c_rot = _locals(chassis, 121)
    t_loc, t_rot = _locals(body, 121)
    solver = trajectory.poses[:, trajectory.body_index("trailer")]
    for k in (0, 60, 120):
        car_world = Matrix.Translation(c_loc[k]) @ Matrix.Rotation(c_rot[k, 2], 4, "Z")
        local = Matrix.Translation(t_loc[k]) @ quat_to_matrix_4(t_rot[k])
        world_pos = np.array((car_world @ local).translation)
        assert np.abs(world_pos[:2] - solver[k, :2]).max() < 1e-5, k
    # each trailer wheel rolls its own arc: spin per frame = arc of its centre / its radius
    beta = np.unwrap(2 * np.arctan2(solver[:, 6], solver[:, 3]))
    for i, key in enumerate(("trailer_wheel_l", "trailer_wheel_r")):
        centre = trajectory.poses[:, trajectory.body_index(key), :2]
        turn = np.diff(beta)
        safe = np.where(turn == 0, 1.0, turn)
        arc = np.linalg.norm(np.diff(centre, axis=0), axis=1) * np.where(np.abs(turn) > 1e-12,
                                                                         0.5 * safe / np.sin(0.5 * safe), 1.0)
        _loc, quats = _locals(scene.objects[parts[key]], 121)
        assert np.abs(_wrapped(np.diff(_spin_about(quats, 1)) - arc / reading.trailer.radii[i])).max() < 1e-6, key


def quat_to_matrix_4(q) -> Matrix:
    from mathutils import Quaternion

    return Quaternion([float(v) for v in q]).to_matrix().to_4x4()


@pytest.mark.heavy
def test_command_line_bake_of_a_saved_file_keys_the_car_rig(symplex, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    # The file is made and saved by a Blender of its own, as an artist's file is: this session holds other tests'
    # scenes, and bpy 5.2.3's libraries.write of one scene segfaults on this rig.
    source, baked = tmp_path / "car.blend", tmp_path / "baked.blend"
    repo = Path(__file__).resolve().parents[2]
    make = textwrap.dedent(f"""
        import os, sys
        import bpy
        import addon
        from addon.bridge import vehicle_rig
        addon.register()
        scene = bpy.context.window.scene if bpy.context.window else bpy.context.scene
        scene.frame_start, scene.frame_end = 1, 49
        scene.render.fps, scene.render.fps_base = 24, 1.0
        rig = vehicle_rig.build_car_rig(scene, "sedan", "CLI car")
        bpy.ops.wm.save_as_mainfile(filepath={str(source)!r}, check_existing=False)
        print("chassis:", rig.chassis)
        sys.stdout.flush()
        os._exit(0)
    """)
    made = subprocess.run([sys.executable, "-c", make], cwd=repo, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert made.returncode == 0 and source.is_file(), made.stdout + made.stderr
    chassis_name = made.stdout.split("chassis:")[-1].strip()
    result = subprocess.run([sys.executable, "-m", "addon", "bake", str(source), "--out", str(baked)], cwd=repo,
                            capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Baked vehicle 'CLI car'" in result.stdout and f"-> {baked}" in result.stdout
    with bpy.data.libraries.load(str(baked)) as (src, dst):
        dst.objects = [name for name in src.objects if name.startswith("CLI car")]
    loaded = {o.name: o for o in dst.objects}
    chassis = next(o for o in loaded.values() if o.name.startswith(chassis_name) and o.type == "MESH"
                   and vehicle_rig.PRESET_PROPERTY in o.keys())
    channels = compat.assigned(chassis)
    assert channels is not None and channels.action.name.startswith("Symplex")
    data = fcurve_data(chassis)
    assert len(data[("location", 0)]) == 2 * 49 and np.ptp(data[("location", 0)][1::2]) > 5.0
    for obj in dst.objects:
        bpy.data.objects.remove(obj)


def test_operators_add_and_bake_a_hovercraft_and_a_bone_rig(symplex):
    scene = new_scene("ops body", frames=25, fps=24)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_vehicle(preset="hovercraft", name="Hover") == {"FINISHED"}
        hover = scene.objects["Hover"]
        with bpy.context.temp_override(scene=scene, active_object=hover, object=hover):
            assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
            fans = [o for o in hover.children if compat.assigned(o) is not None]
            assert len(fans) == 2 and all(compat.assigned(o).action.name.startswith("Symplex") for o in fans)
            assert bpy.ops.symplex.free_vehicle_bake() == {"FINISHED"}
        arm = bone_car(scene)
        with bpy.context.temp_override(scene=scene, active_object=arm, object=arm):
            assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
            assert ('pose.bones["Wheel.RR"].rotation_quaternion', 1) in fcurve_data(arm)
            del arm.pose.bones["Wheel.RR"]["radius"]
            with pytest.raises(RuntimeError, match="rear right wheel bone 'Wheel.RR' of .* needs a custom property "
                                                   "'radius'"):
                bpy.ops.symplex.bake_vehicle()


def test_body_rig_forward_axis_is_the_artists_and_bad_rigs_come_back_named(symplex):
    """A boat whose chassis faces its local -Y (turned 90 degrees in the world, so it heads along world +X)
    moves along world +X under equal thrust; the job dispatcher names the scene and the rig it cannot read."""
    from addon.bridge import job
    from addon.bridge import vehicle_body_rig as body_rig
    from addon.bridge.read import SceneError

    scene = new_scene("forward", frames=49, fps=24)
    rig = body_rig.build_body_rig(scene, "speedboat", f"{scene.name} boat")
    chassis = scene.objects[rig.chassis]
    # rotate the chassis' local axes without moving its parts in the world: its -Y now points along world +X
    turn = Matrix.Rotation(math.radians(90), 4, "Z")
    chassis.rotation_mode = "QUATERNION"
    chassis.rotation_quaternion = turn.to_quaternion()
    for part in chassis.children:
        part.location = turn.inverted() @ part.location
    chassis[vehicle_rig.FORWARD_PROPERTY] = "-Y"
    chassis.animation_data_clear()  # drop the keyed manoeuvre: equal thrust throughout, straight ahead
    for prop in ("thrust_left", "thrust_right"):
        chassis[prop] = 2000.0
    assert job.bake_vehicle_rig(scene, chassis).startswith("Baked boat")
    loc, _ = _locals(chassis, 49)
    assert loc[-1, 0] - loc[0, 0] > 2.0 and abs(loc[-1, 1] - loc[0, 1]) < 1e-3
    chassis[vehicle_rig.PRESET_PROPERTY] = "submarine"
    with pytest.raises(SceneError, match=f"scene '{scene.name}': vehicle rig '{chassis.name}': property "
                                         "'symplex_vehicle_preset' is 'submarine', not a vehicle preset"):
        job.bake_vehicle_rigs(scene)


def test_helicopter_bone_rig_spins_its_rotor_bone(symplex):
    from addon.bridge import vehicle_body_rig as body_rig
    from addon.bridge.build import edit_armature

    scene = new_scene("heli bones", frames=25, fps=24)
    arm = bpy.data.objects.new(f"{scene.name} rig", bpy.data.armatures.new(f"{scene.name} rig"))
    scene.collection.objects.link(arm)
    with edit_armature(arm) as bones:
        body = bones.new("Body")
        body.head, body.tail, body.roll = (0.0, 0.0, 10.0), (2.0, 0.0, 10.0), 0.0
        rotor = bones.new("Main rotor")
        rotor.head, rotor.tail, rotor.roll = (0.0, 0.0, 11.48), (0.0, 0.0, 12.0), 0.0
        rotor.parent = body
    arm["collective"] = vehicle_presets()["helicopter"].mass * 9.81
    rig = body_rig.find_body_rig(scene, arm, "helicopter", "+Y")
    assert (rig.armature, rig.chassis, rig.spinners) == (arm.name, "Body", (("rotor_main", "Main rotor"),))
    body_rig.bake_body_rig(scene, rig, "helicopter")
    chassis = _bone_worlds(scene, arm, "Body", 25)
    rotor = _bone_worlds(scene, arm, "Main rotor", 25)
    assert np.abs(chassis[:, :3, 3] - chassis[0, :3, 3]).max() < 1e-4  # hovering: the weight is held
    relative = np.einsum("fji,fjk->fik", chassis[:, :3, :3], rotor[:, :3, :3])
    M = np.einsum("fij,kj->fik", relative, relative[0])  # a turn about the chassis bone's Z (body up)
    spin = np.unwrap(np.arctan2(M[:, 1, 0], M[:, 0, 0]))
    omega = body_rig.TIP_SPEED / vehicle_presets()["helicopter"].rotor_radius
    assert np.abs(_wrapped(spin - omega * np.arange(25) / 24)).max() < 1e-5
    assert np.abs(rotor[:, :3, 3] - rotor[0, :3, 3]).max() < 1e-4  # it turns about its own centre


def test_trailer_rigs_refuse_missing_or_skewed_trailers_by_name(symplex):
    scene = new_scene("towbar", frames=10, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{scene.name} car", slalom=False)
    with pytest.raises(vehicle_rig.RigError, match="preset 'car_trailer' tows a trailer, but the rig has no trailer "
                                                   "body \\(trailer\\), trailer's left wheel"):
        vehicle_rig.read_rig(scene, rig, "car_trailer")
    towing = vehicle_rig.build_car_rig(scene, "car_trailer", f"{scene.name} van", (0.0, 20.0, 0.0), slalom=False)
    body = scene.objects[dict(towing.trailer)["trailer"]]
    body.location.y += 0.3  # shifted, not turned: the tow ball is off the trailer's centre line
    with pytest.raises(vehicle_rig.RigError, match=f"vehicle rig '{towing.chassis}': trailer wheels "
                                                   f"'{scene.name} van trailer wheel L' and '{scene.name} van trailer "
                                                   "wheel R' must sit left and right of the trailer's drawbar .*"
                                                   r"tow ball 1.15 m behind the rear axle at frame 1\); their axle "
                                                   "is -5.9. degrees off square"):
        vehicle_rig.read_rig(scene, towing, "car_trailer")
    body.location.y -= 0.3
    _turn_about_the_ball(body, math.radians(95.0))  # the trailer's axle now stands ahead of the ball
    with pytest.raises(vehicle_rig.RigError, match=r"the trailer's axle \(between .*\) must stand behind the tow "
                                                   "ball 1.15 m behind the rear axle at frame 1; its drawbar is "
                                                   "-95 degrees off the car's centre line, beyond the 90"):
        vehicle_rig.read_rig(scene, towing, "car_trailer")
    _turn_about_the_ball(body, math.radians(-95.0 + 89.0))  # 89 degrees: a trailer, though nearly jack-knifed
    assert vehicle_rig.read_rig(scene, towing, "car_trailer").vehicle.hitch_angle == pytest.approx(
        math.radians(-89.0), abs=1e-6)


def _turn_about_the_ball(body, angle: float) -> None:
    """Turn a built rig's trailer body (a child of the unrotated chassis, Euler XYZ) about the vertical through the
    tow ball by `angle` (its wheels, its children, turn with it)."""
    spec = vehicle_presets()["car_trailer"]
    ball = np.array([-spec.com_ahead_of_rear_axle - spec.hitch_behind_rear_axle, 0.0])  # in the chassis frame
    c, s = math.cos(angle), math.sin(angle)
    offset = np.array(body.location[:2]) - ball
    body.location[0], body.location[1] = ball + np.array([[c, -s], [s, c]]) @ offset
    body.rotation_euler[2] += angle


def _keyed_worlds(scene, names: list[str], frames: int) -> dict[str, np.ndarray]:
    """World matrices (F, 4, 4) of objects (and their parents) from their baked keys (parent inverses identity)."""
    from mathutils import Euler, Quaternion

    out: dict[str, np.ndarray] = {}

    def world_of(name: str) -> np.ndarray:
        if name not in out:
            obj = scene.objects[name]
            assert obj.matrix_parent_inverse == Matrix.Identity(4)
            loc, rot = _locals(obj, frames)
            turn = Quaternion if rot.shape[1] == 4 else Euler
            local = np.tile(np.eye(4), (frames, 1, 1))
            local[:, :3, :3] = [np.array(turn([float(v) for v in r]).to_matrix()) for r in rot]
            local[:, :3, 3] = loc
            out[name] = local if obj.parent is None else world_of(obj.parent.name) @ local
        return out[name]

    for name in names:
        world_of(name)
    return out


def _sideways(wheel: np.ndarray) -> float:
    """Largest slide (m a frame) of a wheel with world matrices (F, 4, 4), its axle along local y: its centre's
    chord from frame to frame along its mean axle direction (zero when it rolls without side slip)."""
    axle = wheel[1:, :3, 1] + wheel[:-1, :3, 1]
    axle /= np.linalg.norm(axle, axis=1)[:, None]
    return float(np.abs(np.einsum("fi,fi->f", np.diff(wheel[:, :3, 3], axis=0), axle)).max())


def _placed(obj) -> np.ndarray:
    """World matrix (4, 4) of an object from its channels and its parents' as the artist set them."""
    matrix = obj.matrix_parent_inverse @ obj.matrix_basis
    return np.array(matrix if obj.parent is None else Matrix(_placed(obj.parent).tolist()) @ matrix)


def test_trailer_turned_about_the_ball_bakes_from_where_it_stands_and_swings_in(symplex):
    """The built car-with-trailer rig, its trailer turned 20 degrees about the tow ball, coasting straight at 8 m/s:
    at the first frame every trailer part is where the artist put it, the wheels keep their radius, the baked
    trailer wheels do not slip sideways, and the hitch angle swings in as the kinematic trailer's closed form."""
    frames = 97
    scene = new_scene("hitched", frames=frames, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "car_trailer", f"{scene.name} car", slalom=False)
    chassis = scene.objects[rig.chassis]
    chassis["initial_speed"] = 8.0
    parts = dict(rig.trailer)
    names = [parts[k] for k in ("trailer", "trailer_wheel_l", "trailer_wheel_r")]
    _turn_about_the_ball(scene.objects[names[0]], math.radians(20.0))  # the trailer's axle swings to the right
    placed = {name: _placed(scene.objects[name]) for name in names}

    reading = vehicle_rig.read_rig(scene, rig, "car_trailer")
    spec, preset = reading.vehicle.spec, vehicle_presets()["car_trailer"]
    assert reading.vehicle.hitch_angle == pytest.approx(math.radians(-20.0), abs=1e-6)
    assert spec.hitch_to_trailer_axle == pytest.approx(preset.hitch_to_trailer_axle, abs=1e-6)
    assert spec.trailer_track == pytest.approx(preset.trailer_track, abs=1e-6)
    assert np.abs(reading.trailer.radii - preset.trailer_wheel_radius).max() < 1e-6  # measured across its own axle
    report = vehicle_bake.bake_vehicle(scene, rig, "car_trailer")
    assert report.steps == frames - 1 and report.max_side_slip < 1e-10

    worlds = _keyed_worlds(scene, [rig.chassis, *names], frames)
    for name in names:
        assert np.abs(worlds[name][0] - placed[name]).max() < 1e-5, name
    for name in names[1:]:
        assert np.linalg.norm(np.diff(worlds[name][:, :3, 3], axis=0), axis=1).min() > 0.2  # m a frame: it rolls
        assert _sideways(worlds[name]) < 1e-6, name  # m a frame (float32 keys)
    car_heading = np.arctan2(worlds[rig.chassis][:, 1, 0], worlds[rig.chassis][:, 0, 0])
    trailer_heading = np.arctan2(worlds[names[0]][:, 1, 0], worlds[names[0]][:, 0, 0])
    hitch = car_heading - trailer_heading
    assert np.abs(car_heading).max() < 1e-6  # it drives straight
    rolled = np.linalg.norm(worlds[rig.chassis][:, :2, 3] - worlds[rig.chassis][0, :2, 3], axis=1)
    exact = hitch_closed_form(math.radians(-20.0), rolled, 0.0, spec.hitch_behind_rear_axle,
                              spec.hitch_to_trailer_axle)
    assert np.all(np.diff(np.abs(hitch)) < 0) and abs(hitch[-1]) < 1e-3 * abs(hitch[0])
    trajectory = vehicle_bake.simulate_rig(reading)
    assert np.abs(hitch - trajectory.q[:, trajectory.coordinate_names.index("hitch_angle")]).max() < 1e-5
    # the solver's O(h^2) error at h = 1/24 s, 0.33 m a step (tests/solver/vehicles/test_trailer.py): 1.4e-4 rad
    assert np.abs(hitch - exact).max() < 2e-4
    # each wheel turns by its centre's arc over its radius: the arc is the chord times (delta/2) / sin(delta/2),
    # delta the trailer's turn in the frame (the centre runs on a circle tangent to the heading at both ends)
    solver = trajectory.poses[:, trajectory.body_index("trailer")]
    turn = np.diff(np.unwrap(2 * np.arctan2(solver[:, 6], solver[:, 3])))
    for i, (key, name) in enumerate(zip(("trailer_wheel_l", "trailer_wheel_r"), names[1:])):
        chord = np.linalg.norm(np.diff(trajectory.poses[:, trajectory.body_index(key), :2], axis=0), axis=1)
        arc = chord / np.sinc(turn / (2 * np.pi))
        spin = _spin_about(_locals(scene.objects[name], frames)[1], 1)
        assert np.abs(np.diff(spin) - arc / reading.trailer.radii[i]).max() < 1e-6, name


def test_steering_knuckles_turn_with_their_wheel_without_rolling(symplex):
    scene = new_scene("knuckles", frames=73, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{scene.name} car")
    chassis = scene.objects[rig.chassis]
    knuckles = {}
    for key in ("wheel_fl", "wheel_fr"):
        wheel = scene.objects[rig.wheel(key)]
        knuckle = bpy.data.objects.new(f"{scene.name} Knuckle.{key[-2:].upper()}", wheel.data)
        scene.collection.objects.link(knuckle)
        knuckle.parent = chassis
        knuckle.location = wheel.location
        knuckle.rotation_mode = "QUATERNION"
        wheel.parent, wheel.location = knuckle, (0.0, 0.0, 0.0)  # the wheel now hangs on its knuckle
        knuckles[key] = knuckle
    rig = vehicle_rig.find_rig(scene, chassis)
    assert rig.steering == (("steer_fl", knuckles["wheel_fl"].name), ("steer_fr", knuckles["wheel_fr"].name))
    reading, trajectory = _solve(scene, rig, "sedan")
    vehicle_bake.bake_vehicle(scene, rig, "sedan")
    steer, spin = vehicle_bake.wheel_motion(reading, trajectory)
    axes = np.eye(3)  # the built chassis faces +X: its axes are the solver's
    for i, key in ((2, "wheel_fl"), (3, "wheel_fr")):
        _loc, quats = _locals(knuckles[key], 73)
        assert np.abs(quats[:, 1:3]).max() < 1e-7  # a turn about the vertical only: no roll
        assert np.abs(2 * np.arctan2(quats[:, 3], quats[:, 0]) - steer[:, i]).max() < 1e-6, key
        # the wheel's own keys (now local to its knuckle) hold only its rolling
        _wloc, wquats = _locals(scene.objects[rig.wheel(key)], 73)
        rolled, turned, off_axis = _spin_and_steer(axes, wquats)
        assert off_axis < 1e-6 and np.abs(turned).max() < 1e-6
        assert np.abs(_wrapped(rolled - spin[:, i])).max() < 1e-6, key
    assert np.abs(steer[:, 2]).max() > 0.05


def test_rotor_parts_can_be_picked(symplex):
    from addon.bridge import vehicle_body_rig as body_rig

    scene = new_scene("picked", frames=13, fps=24)
    rig = body_rig.build_body_rig(scene, "helicopter", f"{scene.name} heli")
    chassis = scene.objects[rig.chassis]
    odd = bpy.data.objects.new(f"{scene.name} blades", bpy.data.meshes.new(f"{scene.name} blades"))
    scene.collection.objects.link(odd)
    odd.parent = chassis
    picked = body_rig.find_body_rig(scene, chassis, "helicopter", picked={"rotor_main": odd.name})
    assert dict(picked.spinners) == {"rotor_main": odd.name, "rotor_tail": dict(rig.spinners)["rotor_tail"]}
    with pytest.raises(vehicle_rig.RigError, match="picked rotor_main 'nothing': not found"):
        body_rig.find_body_rig(scene, chassis, "helicopter", picked={"rotor_main": "nothing"})
    with bpy.context.temp_override(scene=scene, active_object=chassis, object=chassis):
        assert bpy.ops.symplex.bake_vehicle(rotor_main=odd.name) == {"FINISHED"}
    assert compat.assigned(odd).action.name.startswith("Symplex")
    assert compat.assigned(scene.objects[dict(rig.spinners)["rotor_main"]]) is None  # the named one was not used


def test_trailer_rig_follows_a_path_from_a_hitch_angle(symplex):
    """Path following steers the car of a trailer rig; the trailer, turned 15 degrees about the ball at the start,
    follows without side slip and comes back in line on the exit straight."""
    frames = 241
    scene = new_scene("towed path", frames=frames, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "car_trailer", f"{scene.name} car", slalom=False)
    chassis = scene.objects[rig.chassis]
    parts = dict(rig.trailer)
    names = [parts[k] for k in ("trailer", "trailer_wheel_l", "trailer_wheel_r")]
    _turn_about_the_ball(scene.objects[names[0]], math.radians(-15.0))
    placed = {name: _placed(scene.objects[name]) for name in names}
    a = np.linspace(-math.pi / 2, 0.0, 46)
    points = np.vstack([[[0.0, 0.0], [20.0, 0.0]], np.column_stack([20.0 + 15.0 * np.cos(a[1:]), 15.0 + 15.0 *
                                                                    np.sin(a[1:])]), [[35.0, 75.0]]])
    chassis[vehicle_rig.PATH_PROPERTY] = _path_curve(scene, "towing road", points).name
    chassis["path_speed"] = chassis["initial_speed"] = 8.0
    report = vehicle_bake.bake_vehicle(scene, rig, "car_trailer")
    assert report.max_side_slip < 1e-9

    worlds = _keyed_worlds(scene, [rig.chassis, *names], frames)
    for name in names:
        assert np.abs(worlds[name][0] - placed[name]).max() < 1e-5, name
    for name in names[1:]:
        assert _sideways(worlds[name]) < 1e-5, name  # m a frame (float32 keys some 80 m from the origin)
    heading = [np.unwrap(np.arctan2(worlds[n][:, 1, 0], worlds[n][:, 0, 0])) for n in (rig.chassis, names[0])]
    hitch = heading[0] - heading[1]
    assert hitch[0] == pytest.approx(math.radians(15.0), abs=1e-6)
    assert heading[0][-1] == pytest.approx(math.pi / 2, abs=0.02) and abs(hitch[-1]) < 1e-3
    assert abs(worlds[names[0]][-1, 0, 3] - 35.0) < 0.05  # the trailer runs on the exit straight


def test_snakeboard_rig_bakes_its_wheel_sets_and_rider_on_the_solver_bodies(symplex):
    """The snakeboard Add Vehicle Rig makes rides its keyed gait: the wheel sets stay at their places on the
    board turned by +-the foot angle, the rider by the twist, both as keyed (to float32 key precision)."""
    from addon.bridge import vehicle_body_rig as body_rig
    from addon.solver.vehicles.controls import signal

    frames = 121
    scene = new_scene("snakeboard", frames=frames, fps=24)
    rig = body_rig.build_body_rig(scene, "snakeboard", f"{scene.name} board")
    assert sorted(role for role, _ in rig.spinners) == ["front_wheels", "rear_wheels", "rotor"]
    reading = body_rig.read_body_rig(scene, rig, "snakeboard")
    report = body_rig.bake_body_rig(scene, rig, "snakeboard")
    assert report.distance > 3.0  # pushed off at 1 m/s for 5 s, the gait keeps it rolling
    worlds = _keyed_worlds(scene, [rig.chassis, *(name for _, name in rig.spinners)], frames)
    board = worlds[rig.chassis]
    t = np.arange(frames) / 24.0
    keyed = {"front_wheels": np.array([signal(reading.vehicle.control("steer"))(tk) for tk in t]),
             "rotor": np.array([signal(reading.vehicle.control("rotor"))(tk) for tk in t])}
    keyed["rear_wheels"] = -keyed["front_wheels"]
    assert np.ptp(keyed["front_wheels"]) > 0.5 and np.ptp(keyed["rotor"]) > 1.5
    for role, name in rig.spinners:
        part = worlds[name]
        relative = np.einsum("fji,fjk->fik", board[:, :3, :3], part[:, :3, :3])  # R_board^T R_part
        turn = np.einsum("fij,kj->fik", relative, relative[0])
        np.testing.assert_allclose(np.arctan2(turn[:, 1, 0], turn[:, 0, 0]), keyed[role], atol=2e-5)
        place = np.einsum("fji,fj->fi", board[:, :3, :3], part[:, :3, 3] - board[:, :3, 3])
        assert np.abs(place - place[0]).max() < 2e-5, role


def test_helicopter_with_a_path_flies_it_banked_into_the_turn(symplex):
    """A helicopter rig with symplex_path flies the pilot (solver/vehicles/pilot.py): on the path, at its
    height, slowed to sqrt(a_lat R) in the turn and banked there by atan(v^2 / (g R))."""
    from addon.bridge import vehicle_body_rig as body_rig

    scene = new_scene("pilot", frames=481, fps=24)
    rig = body_rig.build_body_rig(scene, "helicopter", f"{scene.name} heli")
    chassis = scene.objects[rig.chassis]
    start = tuple(chassis.location)
    radius = 60.0
    a = np.linspace(-math.pi / 2, 0.0, 46)
    points = np.vstack([[[0.0, 0.0], [60.0, 0.0]],
                        np.column_stack([60.0 + radius * np.cos(a[1:]), radius + radius * np.sin(a[1:])]),
                        [[60.0 + radius, radius + 200.0]]]) + start[:2]
    chassis[vehicle_rig.PATH_PROPERTY] = _path_curve(scene, "flight", points).name
    chassis["path_speed"] = chassis["initial_speed"] = 20.0
    chassis["lateral_accel"], chassis["brake_limit"], chassis["bank_limit"] = 4.0, 2.5, math.radians(35.0)
    reading = body_rig.read_body_rig(scene, rig, "helicopter")
    assert (reading.limits.lateral, reading.limits.brake, reading.limits.top_speed) == (4.0, 2.5, 20.0)
    assert reading.bank_limit == pytest.approx(math.radians(35.0))
    body_rig.bake_body_rig(scene, rig, "helicopter")
    loc, quats = _locals(chassis, 481)
    centre = np.array([60.0 + start[0], radius + start[1]])
    rel = loc[:, :2] - centre
    in_turn = (rel[:, 0] > 5.0) & (rel[:, 1] < -5.0)
    assert np.abs(np.linalg.norm(rel[in_turn], axis=1) - radius).max() < 0.5
    assert np.abs(loc[:, 2] - start[2]).max() < 1.0  # it holds its height
    speed = np.linalg.norm(np.diff(loc[:, :2], axis=0), axis=1) * 24
    cruise = math.sqrt(4.0 * radius)  # 15.5 m/s, braked down to from 20
    angle = np.arctan2(rel[:, 1], rel[:, 0])
    middle = in_turn & (angle > -1.2) & (angle < -0.4)  # the turn's middle, its entry transient over
    v = speed[middle[1:]]
    assert 0.85 * cruise < v.min() and v.max() < 1.05 * cruise  # (the slower pitch loop settles the speed)
    up = np.array([quat_to_matrix(q)[:, 2] for q in quats[middle]])
    inward = -rel[middle] / np.linalg.norm(rel[middle], axis=1)[:, None]
    lean = np.arctan2(np.einsum("ij,ij->i", up[:, :2], inward), up[:, 2])  # body z toward the centre
    # coordinated: the body z (the thrust) along the acceleration plus g; a from the keys' second differences
    # over +-6 frames (float32 keys make single-frame ones noisy), as the lean averaged over the same frames
    k = np.flatnonzero(middle)
    accel = (loc[k + 6] - 2.0 * loc[k] + loc[k - 6]) * (24 / 6) ** 2
    a_in = np.einsum("ij,ij->i", accel[:, :2], inward)
    lean_mean = np.convolve(np.pad(lean, 6, mode="edge"), np.r_[0.5, np.ones(11), 0.5] / 12, "valid")
    assert lean_mean == pytest.approx(np.arctan2(a_in, 9.81 + accel[:, 2]), abs=math.radians(1.5))
    assert lean == pytest.approx(np.arctan(v**2 / (9.81 * radius)), abs=math.radians(4.0))  # ~ v^2 / R
    chassis["bank_limit"] = 2.0
    with pytest.raises(vehicle_rig.RigError, match="bank_limit"):
        body_rig.read_body_rig(scene, rig, "helicopter")


@pytest.mark.heavy
def test_boat_with_a_path_follows_it_by_differential_thrust(symplex):
    """A speedboat rig with symplex_path steers by its two thrusts (solver/vehicles/helmsman.py): the baked hull
    follows a quarter turn of R = 60 m within 0.5 m at the profile's turn-rate speed turn_rate R (6.0 m/s, the
    lateral limit allowing more), its propellers spin apart as the helmsman splits the thrust, and it heels
    outward by the fraction of a degree its buoyancy allows (no control rolls it). A bank_limit on a boat and a
    path on a tank are refused by name."""
    from addon.bridge import vehicle_body_rig as body_rig
    from addon.solver.vehicles.helmsman import turn_rate

    scene = new_scene("helm", frames=361, fps=24)
    rig = body_rig.build_body_rig(scene, "speedboat", f"{scene.name} boat")
    chassis = scene.objects[rig.chassis]
    start = tuple(chassis.location)
    radius = 60.0
    a = np.linspace(-math.pi / 2, 0.0, 46)
    points = np.vstack([[[0.0, 0.0], [20.0, 0.0]],
                        np.column_stack([20.0 + radius * np.cos(a[1:]), radius + radius * np.sin(a[1:])]),
                        [[20.0 + radius, radius + 100.0]]]) + start[:2]
    chassis[vehicle_rig.PATH_PROPERTY] = _path_curve(scene, "course", points).name
    speed = turn_rate(vehicle_presets()["speedboat"]) * radius
    chassis["path_speed"], chassis["initial_speed"], chassis["lateral_accel"] = 10.0, speed, 2.0
    reading = body_rig.read_body_rig(scene, rig, "speedboat")
    assert (reading.limits.lateral, reading.limits.top_speed) == (2.0, 10.0)
    body_rig.bake_body_rig(scene, rig, "speedboat")
    loc, quats = _locals(chassis, 361)
    centre = np.array([20.0 + start[0], radius + start[1]])
    rel = loc[:, :2] - centre
    in_turn = (rel[:, 0] > 0.0) & (rel[:, 1] < 0.0)
    assert in_turn.sum() > 200 and np.abs(np.linalg.norm(rel[in_turn], axis=1) - radius).max() < 0.5
    angle = np.arctan2(rel[:, 1], rel[:, 0])
    middle = in_turn & (angle > -1.2) & (angle < -0.4)  # its entry over (it sped up on the straight)
    v = np.linalg.norm(np.diff(loc[:, :2], axis=0), axis=1)[middle[1:]] * 24
    assert v == pytest.approx(speed, rel=0.02)
    inward = -rel[in_turn] / np.linalg.norm(rel[in_turn], axis=1)[:, None]
    up = np.array([quat_to_matrix(q)[:, 2] for q in quats[in_turn]])
    lean = np.degrees(np.arctan2(np.einsum("ij,ij->i", up[:, :2], inward), up[:, 2]))
    assert -0.5 < np.median(lean) < -0.1  # outward, by a_lat h / (g GM) = 0.28 degrees (test_helmsman.py)
    spins = [_locals(scene.objects[name], 361)[1] for _, name in rig.spinners]
    assert len(spins) == 2 and not np.allclose(spins[0][-1], spins[1][-1], atol=1e-3)
    chassis["bank_limit"] = 0.3
    with pytest.raises(vehicle_rig.RigError, match="a boat cannot bank.*remove 'bank_limit'"):
        body_rig.read_body_rig(scene, rig, "speedboat")
    tank = body_rig.build_body_rig(scene, "tank", f"{scene.name} tank")
    scene.objects[tank.chassis][vehicle_rig.PATH_PROPERTY] = chassis[vehicle_rig.PATH_PROPERTY]
    with pytest.raises(vehicle_rig.RigError, match="a tank does not follow a path"):
        body_rig.read_body_rig(scene, tank, "tank")

"""VehicleIntegrator: the 'vehicle' method records Trajectories (bodies, poses, q, energy, residual, iterations)."""

import numpy as np
import pytest

from addon.solver.lie import quat_to_matrix
from addon.solver.model import Curve, Mechanism, Vehicle, VehicleError
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car
from addon.solver.vehicles.integrator import VehicleIntegrator
from addon.solver.vehicles.spec import RigidBodySpec

SEDAN, KART, HELICOPTER = (vehicle_presets()[name] for name in ("sedan", "kart", "helicopter"))
EMPTY = Mechanism("vehicle only", (), ())


def run(vehicle, dt, steps, mechanism=EMPTY, tol=1e-12):
    integrator = VehicleIntegrator(mechanism, dt, tol, vehicle=vehicle)
    for _ in range(steps):
        integrator.step()
    return integrator.trajectory()


def test_car_trajectory_layout_and_rolling_outputs():
    slalom = Curve((0.0, 2.0, 4.0, 6.0, 8.0), (0.0, 0.3, -0.3, 0.3, 0.0), "cubic")
    vehicle = Vehicle("car", SEDAN, position=(5.0, -2.0, SEDAN.com_height),
                      controls=(("steer", slalom), ("drive_torque", 1500.0)), name="slalom car")
    traj = run(vehicle, 1 / 24, 240)
    assert traj.method == "vehicle" and traj.status == "finished"
    assert traj.bodies == ["chassis", *car.WHEELS]
    assert traj.poses.shape == (241, 5, 7) and traj.q.shape == (241, 10)
    assert traj.coordinate_names[:2] == ["wheel_angle", "steer"]
    assert np.allclose(traj.poses[0, 0, :3], (5.0, -2.0, SEDAN.com_height))
    assert np.all(traj.constraint_residual < 1e-11)
    assert np.all(traj.newton_iterations == 0)  # the car step is explicit
    # energy starts at rest and grows by the torque's work: positive and increasing
    assert traj.energy[0] == 0.0 and np.all(np.diff(traj.energy) > 0)
    assert np.isclose(traj.t[96], 4.0) and np.isclose(traj.q[96, 1], -0.3)  # the keyed steering angle at 4 s
    # wheel spin per frame equals the distance its centre rolled over that frame divided by the radius
    for w in range(1, 5):
        step = np.linalg.norm(np.diff(traj.poses[:, w, :2], axis=0), axis=1)
        spin = np.diff(traj.q[:, 1 + w])
        assert np.allclose(spin * SEDAN.wheel_radius, step, rtol=1e-3, atol=1e-9)
    # chassis stays level, heading only: its quaternion is a rotation about z
    assert np.allclose(traj.poses[:, 0, 4:6], 0.0)


def test_trajectory_steer_matches_the_keyed_curve():
    slalom = Curve((0.0, 1.0, 2.0), (0.0, 0.3, -0.2), "linear")
    traj = run(Vehicle("car", KART, velocity=(0, 0, 0, 5.0, 0, 0), controls=(("steer", slalom),)), 0.1, 30)
    assert np.allclose(traj.q[:, 1], np.interp(traj.t, slalom.times, slalom.values), atol=1e-15)


def test_free_body_trajectory_conserves_momentum_and_records_newton():
    body = RigidBodySpec("box", 2.0, (1.0, 2.0, 3.5))
    vehicle = Vehicle("rigid_body", body, velocity=(0.05, 3.0, 0.1, 0.5, -0.2, 0.3))
    traj = run(vehicle, 0.1, 300, mechanism=Mechanism("space", (), (), gravity=(0.0, 0.0, 0.0)))
    assert traj.bodies == ["chassis"] and traj.poses.shape == (301, 1, 7) and traj.q.shape == (301, 0)
    assert np.all(traj.newton_iterations >= 1) and traj.newton_iterations.max() <= 4
    assert np.all(traj.constraint_residual < 1e-13)  # attitude stays a rotation
    assert np.ptp(traj.energy) / traj.energy[0] < 0.02
    # The centre of mass is slowed across the spin axis by the SE(3) Cayley step's O((h w)^2) coupling of
    # translation to rotation: factor 1 / (1 + |h w_perp|^2 / 4) (see holonomic.py).
    velocity = np.diff(traj.poses[:, 0, :3], axis=0) / 0.1
    # |w| tumbles between about 3 and 4 rad/s here, so |h w|^2 / 4 stays below 0.04
    start = np.array([0.5, -0.2, 0.3])
    deviation = np.linalg.norm(velocity - start, axis=1) / np.linalg.norm(start)
    assert 0.01 < deviation.max() < 0.04


def test_helicopter_hovers_at_exactly_the_weight():
    vehicle = Vehicle("helicopter", HELICOPTER, position=(0.0, 0.0, 30.0),
                      controls=(("collective", HELICOPTER.mass * 9.81),))
    traj = run(vehicle, 0.05, 100, mechanism=Mechanism("sky", (), ()))
    assert np.allclose(traj.poses[:, 0, :3], (0.0, 0.0, 30.0), atol=1e-12)
    assert traj.coordinate_names == ["blade_pitch", "blade_roll"]


def test_missing_vehicle_is_an_error_naming_the_mechanism():
    with pytest.raises(VehicleError, match="'vehicle only' has no vehicle"):
        VehicleIntegrator(EMPTY, 0.1)


def test_unknown_control_is_refused():
    with pytest.raises(VehicleError, match="unknown control 'throttle'.*drive_torque, brake_torque, steer"):
        Vehicle("car", SEDAN, controls=(("throttle", 1.0),))


def test_a_spec_of_another_type_is_refused():
    with pytest.raises(VehicleError, match="vehicle 'v': field 'spec' must be the spec of a 'helicopter', got a "
                                           "CarSpec, the spec of a 'car'"):
        Vehicle("helicopter", SEDAN, name="v")
    with pytest.raises(VehicleError, match="vehicle 'v': field 'spec' must be a vehicle spec"):
        Vehicle("car", "sedan", name="v")


def test_initial_heading_comes_from_the_orientation():
    yaw = 0.7
    vehicle = Vehicle("car", SEDAN, orientation=(np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)),
                      velocity=(0, 0, 0, 10.0, 0, 0))
    traj = run(vehicle, 0.1, 10)
    R = quat_to_matrix(traj.poses[-1, 0, 3:])
    assert np.isclose(np.arctan2(R[1, 0], R[0, 0]), yaw)
    assert np.allclose(traj.poses[-1, 0, :2], 10.0 * 1.0 * np.array([np.cos(yaw), np.sin(yaw)]), atol=1e-12)


def test_a_capsizing_boat_fails_the_run_with_a_message_instead_of_raising():
    from dataclasses import replace as _replace

    from addon.solver.integrator import simulate
    from addon.solver.mechfile.read import load_mechanism
    from addon.solver.presets import vehicle_preset_path

    mech = load_mechanism(vehicle_preset_path("speedboat"))
    # rolled 70 degrees and rolling further at 4 rad/s: it passes 87 degrees, outside the buoyancy model
    half = np.radians(70) / 2
    rolling = _replace(mech.vehicle, orientation=(np.cos(half), np.sin(half), 0.0, 0.0),
                       velocity=(4.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    traj = simulate(_replace(mech, vehicle=rolling), 1 / 24, 48, method="vehicle")
    assert traj.status == "failed" and "capsized" in traj.message


def test_car_poses_recorded_as_rows_equal_each_nodes_poses():
    """The car records its pose per node as a row and turns all rows into body poses at once (car.pose_rows):
    the same poses as car.poses of the state at each node of a plain stepping loop, and of its slip and energy."""
    slalom = Curve((0.0, 1.0, 2.0, 3.0), (0.0, 0.4, -0.4, 0.2), "cubic")
    drive = Curve((0.0, 1.5, 3.0), (2000.0, -1500.0, 800.0), "linear")
    vehicle = Vehicle("car", SEDAN, position=(1.0, 2.0, SEDAN.com_height), velocity=(0, 0, 0, 4.0, 0, 0),
                      controls=(("steer", slalom), ("drive_torque", drive)))
    h, steps = 0.04, 80
    traj = run(vehicle, h, steps)
    model = car.compile_car(vehicle)
    b = SEDAN.com_ahead_of_rear_axle
    state = car.start(model, 0.0, 1.0 - b, 2.0, 4.0)
    poses, energy = [car.poses(model, state)], [car.energy(model, state, h)]
    for _ in range(steps):
        car.step(model, state, h)
        poses.append(car.poses(model, state))
        energy.append(car.energy(model, state, h))
    np.testing.assert_allclose(traj.poses, np.array(poses), rtol=0, atol=1e-13)
    np.testing.assert_allclose(traj.energy, energy, rtol=1e-14)
    assert np.ptp(traj.poses[:, 0, 0]) > 5.0 and np.ptp(np.array(poses)[:, 1:, 3:]) > 0.5  # it drove and turned

"""The nonholonomic car (seed 001 §5.2.1): no side slip, analytic circles, energy = work, second order, brakes."""

import numpy as np
import pytest

from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car

SEDAN = vehicle_presets()["sedan"]
ZERO = lambda t: 0.0  # noqa: E731


def drive_run(drive, steer, h, t_end, speed=10.0, brake=ZERO, vehicle=SEDAN):
    model = car.CarModel(vehicle, drive, brake, steer)
    state = car.start(model, 0.3, 1.0, 2.0, speed)
    rows, slip, us = [(state.theta, state.x, state.y, car.energy(model, state, h))], [], []
    for _ in range(int(round(t_end / h))):
        before = (state.theta, state.x, state.y)
        us.append(car.step(model, state, h))
        slip.append(car.lateral_velocity(*before, state.theta, state.x, state.y, h))
        rows.append((state.theta, state.x, state.y, car.energy(model, state, h)))
    return np.array(rows), np.array(slip), np.array(us), model, state


def slalom_drive(t):
    return 900.0 * np.sin(0.7 * t) + 300.0


def slalom_steer(t):
    return 0.4 * np.sin(0.5 * t)


def test_no_side_slip_to_round_off_at_every_step():
    rows, slip, *_ = drive_run(slalom_drive, slalom_steer, 0.05, 30.0)
    scale = np.abs(rows[:, 1:3]).max()
    assert np.abs(slip).max() < 1e-15 * scale / 0.05 * 10, np.abs(slip).max()  # round-off of positions over h


@pytest.mark.parametrize("vehicle", [SEDAN, vehicle_presets()["kart"]])
@pytest.mark.parametrize("steer", [0.3, -0.2])
def test_zero_torque_fixed_steering_drives_the_analytic_circle(vehicle, steer):
    rows, slip, us, *_ = drive_run(ZERO, lambda t: steer, 0.1, 60.0, speed=8.0, vehicle=vehicle)
    radius = vehicle.wheelbase / np.tan(steer)
    theta, x, y = rows[:, 0], rows[:, 1], rows[:, 2]
    cx, cy = x - radius * np.sin(theta), y + radius * np.cos(theta)
    assert np.ptp(cx) < 1e-11 and np.ptp(cy) < 1e-11
    assert np.abs(np.hypot(x - cx[0], y - cy[0]) - abs(radius)).max() < 1e-11
    assert np.ptp(us) == 0.0  # constant wheel rate: the speed on the circle never changes
    assert np.ptp(rows[:, 3]) <= 1e-12 * rows[0, 3]
    # and it goes round: 60 s at 8 m/s is 480 m of arc, theta advances by arc / radius
    assert np.isclose(theta[-1] - theta[0], 8.0 * 60.0 / radius, rtol=1e-12)


def test_energy_changes_only_by_the_work_of_the_torque():
    h = 0.05
    model = car.CarModel(SEDAN, slalom_drive, ZERO, lambda t: 0.25)
    state = car.start(model, 0.0, 0.0, 0.0, 5.0)
    inertia = model.rolling_inertia(state.sigma, state.sigma)
    u_prev, work = state.u, 0.0
    for _ in range(400):
        drive, _ = car._impulses(model, state, h)
        u = car.step(model, state, h)
        work += drive * 0.5 * (u + u_prev)  # impulse times the mean wheel rate around the node
        u_prev = u
    # fixed steering: the discrete energy balance is exact (round-off)
    assert abs(0.5 * inertia * (u_prev**2 - (5.0 / SEDAN.wheel_radius) ** 2) - work) < 1e-12 * abs(work)


def test_energy_balance_with_steering_converges_at_second_order():
    t_end, gaps = 10.0, []
    for h in (0.04, 0.02, 0.01):
        model = car.CarModel(SEDAN, slalom_drive, ZERO, slalom_steer)
        state = car.start(model, 0.0, 0.0, 0.0, 5.0)
        e0, work, u_prev = car.energy(model, state, h), 0.0, state.u
        for _ in range(int(round(t_end / h))):
            drive, _ = car._impulses(model, state, h)
            u = car.step(model, state, h)
            work += drive * 0.5 * (u + u_prev)
            u_prev = u
        work += 0.5 * h * slalom_drive(t_end - h / 2) * u_prev  # the last half step's share, in E(t_end)
        gaps.append(abs(car.energy(model, state, h) - e0 - work))
    orders = np.log2(np.array(gaps[:-1]) / gaps[1:])
    assert np.all(orders > 1.8), (gaps, orders)


def test_second_order_convergence_of_the_pose():
    ref, *_ = drive_run(slalom_drive, slalom_steer, 0.0025, 10.0)
    errors = []
    for h in (0.08, 0.04, 0.02, 0.01):
        rows, *_ = drive_run(slalom_drive, slalom_steer, h, 10.0)
        errors.append(np.abs(rows[-1, :3] - ref[-1, :3]).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.1), (errors, orders)


def test_brake_stops_the_car_at_the_analytic_distance_and_holds_it():
    h, speed, brake = 0.01, 20.0, 4000.0
    rows, _, us, model, state = drive_run(ZERO, ZERO, h, 12.0, speed=speed, brake=lambda t: brake)
    inertia = model.rolling_inertia(0.0, 0.0)
    u0 = speed / SEDAN.wheel_radius
    stop_time = inertia * u0 / brake
    distance = SEDAN.wheel_radius * u0 * stop_time / 2
    travelled = np.hypot(rows[-1, 1] - rows[0, 1], rows[-1, 2] - rows[0, 2])
    assert abs(travelled - distance) < 2 * speed * h  # stops within a step of the analytic point
    assert np.all(us >= 0) and np.all(us[int(stop_time / h) + 2:] == 0.0)  # never reverses, then holds


def test_wheels_roll_exactly_their_own_distance():
    h = 0.05
    rows, _, us, model, state = drive_run(slalom_drive, lambda t: 0.35, h, 5.0)
    # with fixed steering each wheel centre runs on its own circle about the turning centre
    R = SEDAN.wheelbase / np.tan(0.35)
    travelled_angle = rows[-1, 0] - rows[0, 0]
    for (px, py), spin in zip(model.wheel_xy, state.wheel_spin):
        arc = np.hypot(px, R - py) * travelled_angle
        assert np.isclose(spin * SEDAN.wheel_radius, arc, rtol=1e-12)
    steer = car.wheel_steer(model, np.tan(0.35))
    assert steer[0] == steer[1] == 0.0 and steer[2] > 0.35 > steer[3] > 0  # inner front wheel turns more


def test_kinetic_energy_is_body_plus_yaw_plus_four_spinning_wheels():
    """The effective inertias against the energy summed part by part from the recorded motion."""
    steer, speed, h = 0.3, 7.0, 0.1
    rows, _, us, model, state = drive_run(ZERO, lambda t: steer, h, 1.0, speed=speed)
    omega = speed * np.tan(steer) / SEDAN.wheelbase  # yaw rate on the circle
    b = SEDAN.com_ahead_of_rear_axle
    body = 0.5 * SEDAN.mass * (speed**2 + (omega * b) ** 2) + 0.5 * SEDAN.yaw_inertia * omega**2
    spin_rates = us[-1] * car.wheel_rates(model, np.tan(steer))  # rad/s of each wheel about its axle
    inertias = [SEDAN.rear_wheel_inertia] * 2 + [SEDAN.front_wheel_inertia] * 2
    wheels = 0.5 * np.sum(np.array(inertias) * spin_rates**2)
    assert np.isclose(rows[-1, 3], body + wheels, rtol=1e-12)
    assert np.isclose(np.diff(rows[:, 0]).mean() / h, omega, rtol=1e-12)


def test_steering_is_limited_to_the_rack():
    model = car.CarModel(SEDAN, ZERO, ZERO, lambda t: 2.0)
    assert np.isclose(model.sigma(0.0), np.tan(SEDAN.max_steer))

"""Path following like a driver (solver/vehicles/driver.py): the curvature speed profile and the tracking
steer, against pure pursuit on the same path, without Blender."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from addon.solver.vehicles import driver, pursuit
from tests.solver.vehicles.test_pursuit import R, _bend, _mechanism, _rear_axle


def cross_track(xy: np.ndarray, path: np.ndarray) -> np.ndarray:
    """Distance (m) of each point (N, 2) from the polyline `path`."""
    seg, out = np.diff(path, axis=0), []
    for p in xy:
        rel = p - path[:-1]
        f = np.clip(np.einsum("ij,ij->i", rel, seg) / np.einsum("ij,ij->i", seg, seg), 0.0, 1.0)
        out.append(np.linalg.norm(rel - f[:, None] * seg, axis=1).min())
    return np.array(out)


def test_the_profile_holds_the_lateral_limit_on_a_circle():
    radius, a_lat = 25.0, 3.0
    a = np.linspace(0.0, 2.0 * math.pi, 361)
    path = np.column_stack([radius * np.cos(a), radius * np.sin(a)])
    kappa = driver.curvature(path)
    assert kappa[1:-1] == pytest.approx(1.0 / radius, rel=1e-12)  # three points on a circle give the circle
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
    v = driver.speed_profile(s, kappa, driver.Limits(lateral=a_lat, accel=1.0, brake=2.0, top_speed=50.0), 0.0)
    cruise = math.sqrt(a_lat * radius)  # v = sqrt(a_lat R)
    assert v[1:-1].max() == pytest.approx(cruise, rel=1e-12)
    assert np.all(v**2 * np.abs(kappa) <= a_lat * (1 + 1e-12))
    # accelerating from rest at 1 m/s^2: v^2 = 2 a s until the cap; the end (curvature 0) is free of the cap
    rising = v[1:] < cruise - 1e-9
    assert v[1:][rising][:20] == pytest.approx(np.sqrt(2.0 * 1.0 * s[1:][rising][:20]), rel=1e-12)


def test_the_profile_keeps_within_the_accel_and_brake_limits():
    path = _bend()
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
    limits = driver.Limits(lateral=3.0, accel=2.0, brake=4.0, top_speed=20.0)
    v = driver.speed_profile(s, driver.curvature(path), limits, 15.0)
    accel = np.diff(v**2) / (2.0 * np.diff(s))  # the constant acceleration between vertices
    assert accel.max() <= limits.accel * (1 + 1e-12) and accel.min() >= -limits.brake * (1 + 1e-12)
    assert accel.min() == pytest.approx(-limits.brake)  # it brakes at the limit into the bend
    in_bend = (path[:, 0] > 30.5) & (path[:, 1] < R - 0.5)
    assert v[in_bend] == pytest.approx(math.sqrt(limits.lateral * R), rel=1e-9)


def test_the_driver_tracks_the_bend_closer_than_pure_pursuit():
    dt, steps = 1.0 / 48, 48 * 10
    path = _bend()
    pp, _ = pursuit.simulate_following(_mechanism(10.0), path, 10.0, dt, steps)
    limits = driver.Limits(lateral=5.0, top_speed=10.0)  # sqrt(5 * 20) = 10 m/s: the same speed as pursuit
    drive, _ = driver.simulate_driving(_mechanism(10.0), path, limits, dt, steps)
    assert drive.status == pp.status == "finished"
    error = {name: cross_track(_rear_axle(t)[0], path) for name, t in (("pp", pp), ("drive", drive))}
    assert error["drive"].max() < 0.05  # pursuit cuts by L^2 / (8 R) = 0.4 m:
    assert error["pp"].max() > 0.3
    xy, theta = _rear_axle(drive)
    speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / dt
    lateral = speed * np.abs(np.diff(theta)) / dt  # v * yaw rate
    assert lateral.max() < limits.lateral * 1.1
    assert drive.constraint_residual.max() < 1e-9


def test_the_driver_slows_for_a_tight_bend_and_keeps_the_lateral_limit():
    dt, steps = 1.0 / 48, 48 * 12
    path = _bend()
    limits = driver.Limits(lateral=3.0, accel=2.0, brake=4.0, top_speed=15.0)
    trajectory, _ = driver.simulate_driving(_mechanism(15.0), path, limits, dt, steps)
    xy, theta = _rear_axle(trajectory)
    speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / dt
    lateral = speed * np.abs(np.diff(theta)) / dt
    assert lateral.max() < limits.lateral * 1.1  # 15 m/s into R = 20 m would be 11 m/s^2
    in_bend = (xy[1:, 0] > 35.0) & (xy[1:, 1] < R - 5.0)
    assert speed[in_bend] == pytest.approx(math.sqrt(limits.lateral * R), abs=0.3)
    assert cross_track(xy[xy[:, 1] < 60.0], path).max() < 0.1  # (beyond the end it drives on straight)


def test_keyed_limits_plan_the_profile_again_when_they_change():
    """On a circle of R = 20 m the lateral limit keyed from 2 to 5 m/s^2 at t = 6 s: sqrt(a_lat R) = 6.32, then
    10 m/s."""
    radius, dt = 20.0, 1.0 / 48
    a = np.linspace(-math.pi / 2, 3.5 * math.pi, 541)
    circle = np.column_stack([radius * np.cos(a), radius + radius * np.sin(a)])
    path = np.vstack([[[-20.0, 0.0]], circle])  # a 20 m run-in along +X onto the circle at its bottom

    def limits(t: float) -> driver.Limits:
        return driver.Limits(lateral=2.0 if t < 6.0 else 5.0, accel=2.0, brake=4.0, top_speed=20.0)

    mech = _mechanism(6.0)
    spec = mech.vehicle.spec
    start = (-20.0 + spec.com_ahead_of_rear_axle, 0.0, spec.com_height)  # the rear axle at the run-in's start
    mech = dataclasses.replace(mech, vehicle=dataclasses.replace(mech.vehicle, position=start))
    trajectory, controller = driver.simulate_driving(mech, path, limits, dt, 48 * 14)
    xy, _ = _rear_axle(trajectory)
    speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / dt
    t = trajectory.t[1:]
    assert speed[(t > 4.0) & (t < 6.0)] == pytest.approx(math.sqrt(2.0 * radius), abs=0.1)
    assert speed[(t > 12.0)] == pytest.approx(math.sqrt(5.0 * radius), abs=0.1)
    assert controller.limits.lateral == 5.0

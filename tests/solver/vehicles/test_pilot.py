"""The helicopter's path follower (solver/vehicles/pilot.py): coordinated turns at the driver's speed profile,
the bank limit, and the comparison with pure pursuit, without Blender."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.model import Mechanism, Vehicle
from addon.solver.vehicles import driver, pilot
from benchmarks.driving import closest, paths

R, HEIGHT, DT, G = 60.0, 20.0, 1.0 / 24, 9.81


def helicopter(speed: float, x: float = -40.0) -> Mechanism:
    """The preset helicopter at (x, 0, HEIGHT) flying along +X at `speed` (m/s)."""
    vehicle = Vehicle("helicopter", vehicle_presets()["helicopter"], position=(x, 0.0, HEIGHT),
                      velocity=(0, 0, 0, speed, 0, 0), name="helicopter")
    return Mechanism(name="helicopter", bodies=(), joints=(), gravity=(0.0, 0.0, -G), vehicle=vehicle, source="test")


def circle() -> np.ndarray:
    """A 40 m run-in along +X onto two turns of a circle of radius R, centre (0, R)."""
    a = np.linspace(-math.pi / 2, 3.5 * math.pi, 721)
    return np.vstack([[[-40.0, 0.0]], np.column_stack([R * np.cos(a), R + R * np.sin(a)])])


def banks(poses: np.ndarray) -> np.ndarray:
    """The lean (rad) of the body z axis toward the circle's centre, in the vertical plane through it."""
    out = []
    for p in poses:
        up = quat_to_matrix(p[3:])[:, 2]
        inward = np.array([-p[0], R - p[1], 0.0]) / math.hypot(p[0], R - p[1])
        out.append(math.atan2(up @ inward, up[2]))
    return np.array(out)


def steady(limits: driver.Limits, bank_limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Poses (N, 7) and speeds (N,) on the circle from 15 s on (the turn entry's transient over)."""
    trajectory, _ = pilot.simulate_flying(helicopter(15.0), circle(), limits, DT, int(30.0 / DT), bank_limit)
    assert trajectory.status == "finished"
    poses = trajectory.poses[:, 0]
    speed = np.linalg.norm(np.diff(poses[:, :3], axis=0), axis=1) / DT
    late = trajectory.t[1:] > 15.0
    return poses[1:][late], speed[late]


def test_a_circle_is_flown_at_the_lateral_limit_banked_for_a_coordinated_turn():
    """v = sqrt(a_lat R) and phi = atan(v^2 / (g R)). Tolerance 0.5 degrees on the bank: the body's z axis
    is not quite the thrust's, the cyclic leans the lift by the blade roll that holds the banked, yawing
    body's gyroscopic torque w x J w (about 0.3 degrees here)."""
    poses, speed = steady(driver.Limits(lateral=4.0, accel=2.0, brake=3.0, top_speed=25.0), math.radians(40.0))
    assert speed == pytest.approx(math.sqrt(4.0 * R), abs=0.05)
    coordinated = np.arctan(speed**2 / (G * R))
    assert np.degrees(np.abs(banks(poses) - coordinated)).max() < 0.5
    assert np.abs(np.hypot(poses[:, 0], poses[:, 1] - R) - R).max() < 0.05  # on the circle
    assert np.abs(poses[:, 2] - HEIGHT).max() < 0.05  # at its height


def test_the_bank_limit_caps_the_lateral_acceleration():
    """bank_limit 15 degrees below the lateral limit's 22: the profile plans a_lat = 0.85 g tan 15 (the margin
    the tracking keeps), v = sqrt(a_lat R), and the bank stays within the limit."""
    limit = math.radians(15.0)
    poses, speed = steady(driver.Limits(lateral=4.0, accel=2.0, brake=3.0, top_speed=25.0), limit)
    assert speed == pytest.approx(math.sqrt(pilot.BANK_MARGIN * G * math.tan(limit) * R), abs=0.1)
    assert np.degrees(banks(poses)).max() < math.degrees(limit) + 0.5


@pytest.mark.parametrize("name", ["bend R 20 m", "hairpin R 8 m"])
def test_the_pilot_tracks_closer_than_pure_pursuit_at_the_top_speed(name):
    """The benchmark's car paths at helicopter scale (x 3: R = 60 and 24 m). Pure pursuit flies the top speed
    into the bend, which needs more than the 30 degree bank limit: it runs wide. The pilot slows to
    sqrt(a_lat R) first and stays on the path."""
    path, top = 3.0 * paths()[name], 25.0
    limits = driver.Limits(lateral=4.0, accel=2.5, brake=4.0, top_speed=top)
    steps = int(30.0 / DT)
    flown, _ = pilot.simulate_flying(helicopter(top, 0.0), path, limits, DT, steps)
    pursued, _ = pilot.simulate_pursuit_flying(helicopter(top, 0.0), path, top, DT, steps)
    end = np.linalg.norm(np.diff(path, axis=0), axis=1).sum() - 1e-6
    errors = []
    for trajectory in (flown, pursued):
        error, arc = closest(trajectory.poses[:, 0, :2], path)
        reached = np.flatnonzero(arc >= end)
        errors.append(error[: reached[0] if len(reached) else len(error)].max())  # (beyond the end it flies on)
    assert errors[0] < 0.5 and errors[1] > 5.0


def test_a_path_with_heights_is_climbed_from_the_start_height():
    """A straight path that climbs 30 m at slope 0.1 between x = 60 and 360 m, drawn 100 m below the helicopter:
    it flies the climb from its own start height (the height loop's rate feed-forward leaves a ramp no lag;
    its corners cost v dz/ds e^-1 / w_z = 0.55 m at 15 m/s), and a flat path with heights flies exactly as
    the same path without them."""
    x = np.linspace(-40.0, 560.0, 601)
    climb = np.clip((x - 60.0) * 0.1, 0.0, 30.0)
    path = np.column_stack([x, np.zeros_like(x), climb - 100.0])
    limits = driver.Limits(lateral=4.0, accel=2.0, brake=3.0, top_speed=15.0)
    steps = int(32.0 / DT)
    flown, _ = pilot.simulate_flying(helicopter(15.0), path, limits, DT, steps)
    assert flown.status == "finished"
    poses = flown.poses[:, 0]
    wanted = HEIGHT + np.interp(poses[:, 0], x, climb)
    assert np.abs(poses[:, 2] - wanted).max() < 0.7
    assert abs(poses[-1, 2] - (HEIGHT + 30.0)) < 0.1 and poses[-1, 0] > 400.0  # settling after the climb (0.04 m)
    flat = np.column_stack([x, np.zeros_like(x), np.full_like(x, -7.0)])
    with_heights, _ = pilot.simulate_flying(helicopter(15.0), flat, limits, DT, 120)
    without, _ = pilot.simulate_flying(helicopter(15.0), flat[:, :2], limits, DT, 120)
    np.testing.assert_array_equal(with_heights.poses, without.poses)

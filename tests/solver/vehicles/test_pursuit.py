"""Pure pursuit path following of the car, with and without trailer (solver/vehicles/pursuit.py), without
Blender."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.model import Mechanism, Vehicle
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import pursuit


R = 20.0  # m, radius of the bend


def _bend() -> np.ndarray:
    """30 m straight along +X, a left quarter circle of radius R about (30, R), 40 m straight along +Y."""
    straight = np.column_stack([np.linspace(0.0, 30.0, 31), np.zeros(31)])
    a = np.linspace(-math.pi / 2, 0.0, 91)
    arc = np.column_stack([30.0 + R * np.cos(a), R + R * np.sin(a)])
    out = np.column_stack([np.full(41, 30.0 + R), R + np.linspace(0.0, 40.0, 41)])
    return np.vstack([straight, arc[1:], out[1:]])


def _mechanism(speed: float = 0.0, y0: float = 0.0) -> Mechanism:
    spec = vehicle_presets()["sedan"]
    vehicle = Vehicle("car", spec, position=(spec.com_ahead_of_rear_axle, y0, spec.com_height),
                      orientation=(1.0, 0.0, 0.0, 0.0), velocity=(0, 0, 0, speed, 0, 0), name="follower")
    return Mechanism(name="follower", bodies=(), joints=(), gravity=(0.0, 0.0, -9.81), vehicle=vehicle,
                     source="test")


def _rear_axle(trajectory, preset: str = "sedan") -> tuple[np.ndarray, np.ndarray]:
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    b = vehicle_presets()[preset].com_ahead_of_rear_axle
    return np.column_stack([poses[:, 0] - b * np.cos(theta), poses[:, 1] - b * np.sin(theta)]), theta


def test_car_follows_a_bend_cutting_the_corner():
    dt, steps = 1.0 / 48, 48 * 10
    trajectory, controller = pursuit.simulate_following(_mechanism(10.0), _bend(), 10.0, dt, steps)
    assert trajectory.status == "finished"
    xy, theta = _rear_axle(trajectory)
    assert theta[-1] == pytest.approx(math.pi / 2, abs=0.02)  # it came round the bend
    assert abs(xy[-1, 0] - (30.0 + R)) < 0.05  # and sits on the exit straight
    centre = np.array([30.0, R])
    in_bend = (xy[:, 0] > 30.0) & (xy[:, 1] < R)
    radius = np.linalg.norm(xy[in_bend] - centre, axis=1)
    cut = controller.lookahead(10.0) ** 2 / (8 * R)  # 0.4 m for an 8 m look-ahead
    assert cut - 0.15 < R - radius.min() < cut  # it cuts inside the bend
    assert radius.max() < R + 0.25  # and swings a little wide where the bend opens into the straight
    assert np.abs(xy[xy[:, 0] < 20.0, 1]).max() < 1e-9  # dead straight on the straight
    speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / dt
    assert speed[-48:] == pytest.approx(10.0, abs=0.05)
    assert trajectory.constraint_residual.max() < 1e-9  # still a rolling car: no side slip


def test_car_pulls_onto_the_path_and_speeds_up():
    dt, steps = 1.0 / 48, 48 * 6
    line = np.array([[0.0, 0.0], [200.0, 0.0]])
    trajectory, _ = pursuit.simulate_following(_mechanism(0.0, y0=2.0), line, 8.0, dt, steps)
    xy, theta = _rear_axle(trajectory)
    assert abs(xy[-1, 1]) < 0.05 and abs(theta[-1]) < 0.01
    assert np.linalg.norm(xy[-1] - xy[-2]) / dt == pytest.approx(8.0, abs=0.1)


def test_bad_paths_are_refused():
    with pytest.raises(ValueError, match="at least two distinct"):
        pursuit.simulate_following(_mechanism(), np.zeros((3, 2)), 5.0, 0.02, 10)


def _towing(speed: float, hitch_angle: float = 0.0) -> Mechanism:
    spec = vehicle_presets()["car_trailer"]
    vehicle = Vehicle("car_trailer", spec, position=(spec.com_ahead_of_rear_axle, 0.0, spec.com_height),
                      velocity=(0, 0, 0, speed, 0, 0), name="towing", hitch_angle=hitch_angle)
    return Mechanism(name="towing", bodies=(), joints=(), gravity=(0.0, 0.0, -9.81), vehicle=vehicle, source="test")


def _trailer_axle(trajectory) -> np.ndarray:
    poses = trajectory.poses[:, trajectory.body_index("trailer")]
    beta = 2 * np.arctan2(poses[:, 6], poses[:, 3])
    c = vehicle_presets()["car_trailer"].trailer_com_ahead_of_axle
    return np.column_stack([poses[:, 0] - c * np.cos(beta), poses[:, 1] - c * np.sin(beta)])


def test_car_with_trailer_follows_a_bend_and_the_trailer_cuts_it_more():
    """The car is steered as without a trailer; the trailer's axle cuts inside the car's path, but not more than
    on the steady circle sqrt(R^2 + d^2 - L^2) of the car's tightest radius R, and comes back in line."""
    dt, steps, spec = 1.0 / 48, 48 * 10, vehicle_presets()["car_trailer"]
    trajectory, _ = pursuit.simulate_following(_towing(10.0), _bend(), 10.0, dt, steps)
    assert trajectory.status == "finished"
    xy, theta = _rear_axle(trajectory, "car_trailer")
    axle = _trailer_axle(trajectory)
    hitch = trajectory.q[:, trajectory.coordinate_names.index("hitch_angle")]
    assert theta[-1] == pytest.approx(math.pi / 2, abs=0.02) and abs(xy[-1, 0] - (30.0 + R)) < 0.05
    assert abs(hitch[-1]) < 1e-3 < 0.1 < np.abs(hitch).max() and abs(axle[-1, 0] - (30.0 + R)) < 0.05
    centre = np.array([30.0, R])
    car_r = np.linalg.norm(xy[(xy[:, 0] > 30.0) & (xy[:, 1] < R)] - centre, axis=1).min()
    trailer_r = np.linalg.norm(axle[(axle[:, 0] > 30.0) & (axle[:, 1] < R)] - centre, axis=1).min()
    steady = math.sqrt(car_r**2 + spec.hitch_behind_rear_axle**2 - spec.hitch_to_trailer_axle**2)
    assert steady < trailer_r < car_r
    speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / dt
    assert speed[-48:] == pytest.approx(10.0, abs=0.05)  # the speed loop pulls the trailer's mass too
    assert trajectory.constraint_residual.max() < 1e-9  # neither axle slips sideways


def test_trailer_started_at_a_hitch_angle_pulls_into_line_on_a_straight_path():
    trajectory, _ = pursuit.simulate_following(_towing(8.0, hitch_angle=0.5), np.array([[0.0, 0.0], [200.0, 0.0]]),
                                               8.0, 1.0 / 48, 48 * 6)
    xy, theta = _rear_axle(trajectory, "car_trailer")
    hitch = trajectory.q[:, trajectory.coordinate_names.index("hitch_angle")]
    assert hitch[0] == 0.5 and abs(hitch[-1]) < 1e-6
    assert np.abs(xy[:, 1]).max() < 1e-12 and np.abs(theta).max() < 1e-12  # the car stays on the line
    assert abs(_trailer_axle(trajectory)[-1, 1]) < 1e-5

"""The drift driver (drift.py) on the slip car: it holds the rear axle's slip angle it is given on a circle (turning
either way) by throttle and counter-steer and stays on the circle; with no drift angle it is the grip driver and
keeps the rear tyres gripping."""

import math

import numpy as np
import pytest

from addon.solver.mechfile.read import vehicle_presets
from addon.solver.model import Mechanism, Vehicle
from addon.solver.vehicles import drift, driver

SEDAN = vehicle_presets()["sedan"]
DT = 1.0 / 48
RADIUS = 20.0
LIMITS = driver.Limits(lateral=4.0, accel=2.5, brake=5.0, top_speed=15.0)


def circle_car(speed: float) -> Mechanism:
    """The sedan with its centre of mass on the circle of RADIUS about (0, RADIUS), heading +x (a left turn)."""
    vehicle = Vehicle("car", SEDAN, position=(0.0, 0.0, SEDAN.com_height), velocity=(0, 0, 0, speed, 0, 0),
                      name="sedan")
    return Mechanism(name="sedan", bodies=(), joints=(), gravity=(0.0, 0.0, -9.81), vehicle=vehicle, source="test")


def circle(turns: float = 1.5, side: float = 1.0) -> np.ndarray:
    """The circle of RADIUS about (0, side RADIUS) from just behind (0, 0): a left turn (side 1) or a right (-1)."""
    a = np.linspace(-math.pi / 2 - 0.3, -math.pi / 2 + 2 * math.pi * turns, int(200 * turns))
    return np.column_stack([RADIUS * np.cos(a), side * (RADIUS + RADIUS * np.sin(a))])


def run(angle, seconds, side: float = 1.0):
    trajectory, controller = drift.simulate_drifting(circle_car(9.0), circle(side=side), LIMITS, angle, DT,
                                                     int(seconds / DT))
    assert trajectory.status == "finished", trajectory.message
    chassis = trajectory.poses[:, 0]
    off = np.abs(np.hypot(chassis[:, 0], chassis[:, 1] - side * RADIUS) - RADIUS)
    return trajectory, controller, slip(chassis, 0.0), off


def slip(chassis: np.ndarray, ahead: float) -> np.ndarray:
    """Slip angle (N,) of the chassis point `ahead` (m) of the centre of mass over each step, from the poses
    (N+1, 7): its chord's direction less the mid heading."""
    theta = np.unwrap(2 * np.arctan2(chassis[:, 6], chassis[:, 3]))
    point = chassis[:, :2] + ahead * np.column_stack([np.cos(theta), np.sin(theta)])
    chord = np.diff(point, axis=0)
    angle = np.arctan2(chord[:, 1], chord[:, 0]) - 0.5 * (theta[1:] + theta[:-1])
    return (angle + math.pi) % (2 * math.pi) - math.pi


@pytest.mark.parametrize("side", [1.0, -1.0], ids=["left", "right"])
def test_a_keyed_drift_angle_is_the_rear_slip_held_on_the_circle_by_throttle_and_counter_steer(side):
    angle = math.radians(25.0)
    trajectory, controller, beta, off = run(angle, 5.0, side)
    later = slice(int(2.5 / DT), None)  # the drift has settled (about 1.5 s to break the rear loose from grip)
    model = controller.model
    rear = slip(trajectory.poses[:, 0], -model.rear)  # the rear axle's slip angle from the poses' chords
    # the tail out of the turn: the rear axle's velocity turned toward the outside by the keyed angle
    assert np.abs(np.degrees(side * rear[later] + angle)).max() < 0.3  # 0.04 degrees measured
    # the body slip is smaller by the steady turn's b r / vx: tan(beta) = tan(alpha_r) + b / (R cos(beta)), 4.4
    # degrees here (about atan(b / R) = 4.8); a driver holding the body slip at the angle would be 4.4 degrees off
    held = -angle
    for _ in range(20):
        held = math.atan(math.tan(-angle) + model.rear / (RADIUS * math.cos(held)))
    assert np.abs(np.degrees(side * beta[later] - held)).max() < 0.3  # 0.06 degrees measured
    assert off.max() < 0.3 and off[later].max() < 0.1  # the centre of mass stays on the circle (0.14, 0.050 m)
    steer = side * trajectory.q[:, trajectory.coordinate_names.index("steer")]
    assert steer[later].max() < -0.1  # counter-steer: the front wheels point out of the turn
    sliding = 3.0 * model.tyres.friction * model.load[1] / model.stiffness[1]
    assert np.tan(np.abs(rear[later])).min() > sliding  # the rear tyres slide: beyond the brush's sliding slip
    assert all(controller.drifting[int(1.0 / DT):])
    assert controller.goals[-1][0] == pytest.approx(-side * angle)  # (alpha_r*, beta*) recorded per step


def test_without_a_drift_angle_it_is_the_grip_driver():
    trajectory, controller, _, off = run(0.0, 4.0)
    later = slice(int(2.0 / DT), None)
    speed = np.hypot(*np.diff(trajectory.poses[:, 0, :2], axis=0).T) / DT
    assert speed[later] == pytest.approx(math.sqrt(LIMITS.lateral * RADIUS), abs=0.3)  # the profile's speed
    assert off[later].max() < 0.06  # course and understeer fed forward: no slip-induced offset (0.043 m)
    assert not any(controller.drifting)


def test_a_drift_angle_out_of_range_is_refused_by_name():
    with pytest.raises(ValueError, match="drift angle"):
        drift.simulate_drifting(circle_car(9.0), circle(), LIMITS, -0.1, DT, 3)

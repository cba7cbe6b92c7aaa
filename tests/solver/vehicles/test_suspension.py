"""The four-corner spring-damper suspension (solver/vehicles/suspension.py), without Blender."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import suspension

G = 9.81


def _sedan(centred: bool = True) -> suspension.Suspension:
    spec = vehicle_presets()["sedan"]
    b = 0.5 * spec.wheelbase if centred else spec.com_ahead_of_rear_axle
    x = np.array([-b, -b, spec.wheelbase - b, spec.wheelbase - b])
    y = 0.5 * spec.track * np.array([1.0, -1.0, 1.0, -1.0])
    return suspension.car_suspension(spec, np.column_stack([x, y]))


def _grid(seconds: float, h: float = 1e-2) -> np.ndarray:
    return h * np.arange(int(round(seconds / h)) + 1)


def test_static_sag_is_m_g_over_4_k():
    susp = _sedan()
    np.testing.assert_allclose(suspension.static_sag(susp, G), susp.mass * G / (4 * susp.stiffness), rtol=1e-12)
    # Released at the springs' free length (sag above rest), it settles sag below it: q -> 0.
    t = _grid(8.0)
    sag = susp.mass * G / (4 * susp.stiffness)
    run = suspension.simulate_suspension(susp, t, np.zeros((len(t), 4)), np.zeros((len(t), 2)),
                                         q0=np.array([sag, 0.0, 0.0]), gravity=G)
    assert abs(run.q[-1, 0]) < 1e-4 * sag
    np.testing.assert_allclose(run.compression[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(run.compression[-1], sag, rtol=1e-4)
    assert run.q[:, 0].min() < -0.1 * sag  # it overshoots: under-damped at ratio 0.4


def test_off_centre_body_rests_level_on_flat_ground():
    susp = _sedan(centred=False)
    loads = suspension.static_loads(susp, G)
    J = susp.jacobian
    np.testing.assert_allclose(J.T @ loads, [susp.mass * G, 0.0, 0.0], atol=1e-9)
    assert loads[2] > loads[0]  # centre of mass ahead of mid-wheelbase: the front carries more
    t = _grid(2.0)
    run = suspension.simulate_suspension(susp, t, np.zeros((len(t), 4)), np.zeros((len(t), 2)))
    assert np.abs(run.q).max() == 0.0 and np.abs(run.qdot).max() == 0.0


def test_braking_dips_the_nose_and_a_left_turn_rolls_right():
    susp = _sedan()
    t = _grid(6.0)
    accel = np.zeros((len(t), 2))
    accel[:, 0] = -6.0  # braking
    run = suspension.simulate_suspension(susp, t, np.zeros((len(t), 4)), accel)
    k_pitch = susp.stiffness * np.sum(susp.corners[:, 0] ** 2)
    expected = susp.mass * susp.com_height * 6.0 / k_pitch
    assert run.q[-1, 2] == pytest.approx(expected, rel=1e-3) and expected > 0  # positive pitch: nose down
    nose = run.q[-1] @ susp.jacobian[2]  # front-left corner moves down
    assert nose < 0
    accel[:, 0], accel[:, 1] = 0.0, 5.0  # centripetal to the left: a left turn
    run = suspension.simulate_suspension(susp, t, np.zeros((len(t), 4)), accel)
    k_roll = susp.stiffness * np.sum(susp.corners[:, 1] ** 2)
    assert run.q[-1, 1] == pytest.approx(susp.mass * susp.com_height * 5.0 / k_roll, rel=1e-3)
    right, left = run.q[-1] @ susp.jacobian[1], run.q[-1] @ susp.jacobian[0]
    assert right < 0 < left  # the outside (right) sinks


def test_free_heave_keeps_its_energy_without_damping_and_decays_at_the_damping_ratio():
    spec = vehicle_presets()["sedan"]
    corners = np.array([[-1.0, 0.8], [-1.0, -0.8], [1.0, 0.8], [1.0, -0.8]])
    undamped = suspension.car_suspension(spec, corners, frequency=1.5, damping_ratio=0.0)
    t = _grid(10.0, 1e-3)
    zero4, zero2 = np.zeros((len(t), 4)), np.zeros((len(t), 2))
    run = suspension.simulate_suspension(undamped, t, zero4, zero2, q0=np.array([0.05, 0.0, 0.0]))
    energy = 0.5 * undamped.mass * run.qdot[:, 0] ** 2 + 0.5 * 4 * undamped.stiffness * run.q[:, 0] ** 2
    assert np.ptp(energy) < 1e-10 * energy[0]  # the trapezoidal rule conserves a linear oscillator's energy
    omega = 2 * math.pi * 1.5
    np.testing.assert_allclose(run.q[:, 0], 0.05 * np.cos(omega * t), atol=0.05 * (omega * 1e-3) ** 2 * omega * 10)
    damped = suspension.car_suspension(spec, corners, frequency=1.5, damping_ratio=0.3)
    run = suspension.simulate_suspension(damped, t, zero4, zero2, q0=np.array([0.05, 0.0, 0.0]))
    envelope = np.abs(run.q[:, 0]) / 0.05
    late = t > 3.0
    assert envelope[late].max() < math.exp(-0.3 * omega * 3.0) * 1.1


def test_bump_under_one_wheel_lifts_that_corner_most():
    susp = _sedan()
    t = _grid(3.0)
    road = np.zeros((len(t), 4))
    road[(t > 1.0) & (t < 1.3), 2] = 0.05  # front-left wheel rides over a 5 cm bump
    run = suspension.simulate_suspension(susp, t, road, np.zeros((len(t), 2)))
    corner = run.q @ susp.jacobian.T
    assert corner[:, 2].max() > corner[:, 3].max() > 0  # the front-left corner rises most
    assert abs(run.q[-1]).max() < 0.01  # and settles back


def test_bad_inputs_are_named():
    susp = _sedan()
    with pytest.raises(ValueError, match="road must be"):
        suspension.simulate_suspension(susp, _grid(1.0), np.zeros((3, 4)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="frequency"):
        suspension.car_suspension(vehicle_presets()["sedan"], susp.corners, frequency=0.0)

"""The snakeboard (seed 001 §5.2.2): frozen shape conserves momentum on a circle; gaits move it; order 2."""

import numpy as np
import pytest

from addon.solver.model import Mechanism, Vehicle
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import snakeboard
from addon.solver.vehicles.integrator import VehicleIntegrator


BOARD = vehicle_presets()["snakeboard"]


def gait(t):
    return 0.8 * np.sin(2.0 * t)


def feet(t):
    return 0.3 * np.sin(2.0 * t)  # in phase with the twist: the drive gait for this model


def simulate(rotor, steer, h, t_end, speed=0.0):
    model = snakeboard.SnakeboardModel(BOARD, rotor, lambda t: (rotor(t + 1e-6) - rotor(t - 1e-6)) / 2e-6, steer)
    state = snakeboard.start(model, 0.2, 1.0, -1.0, speed)
    rows, p = [(state.theta, state.x, state.y)], [snakeboard.momentum(model, state)]
    for _ in range(int(round(t_end / h))):
        before = (state.theta, state.x, state.y, state.t)
        snakeboard.step(model, state, h)
        rows.append((state.theta, state.x, state.y))
        p.append(snakeboard.momentum(model, state))
        assert snakeboard.side_slip(model, *before[:3], state.theta, state.x, state.y, before[3], h) < 1e-12
    return np.array(rows), np.array(p), model, state


@pytest.mark.parametrize("phi", [0.25, -0.4])
def test_frozen_shape_conserves_momentum_and_runs_on_a_circular_arc(phi):
    rows, p, model, state = simulate(lambda t: 0.3, lambda t: phi, 0.05, 20.0, speed=1.5)
    assert np.ptp(p) <= 1e-14 * abs(p[0])
    radius = BOARD.half_length / np.tan(phi)  # instantaneous centre at (0, l / tan phi) in the board frame
    theta, x, y = rows.T
    cx, cy = x - radius * np.sin(theta), y + radius * np.cos(theta)
    assert np.ptp(cx) < 1e-12 and np.ptp(cy) < 1e-12
    assert np.isclose(theta[-1] - theta[0], 1.5 * 20.0 / radius)


def test_a_gait_from_rest_propels_the_board():
    rows, *_ = simulate(gait, feet, 0.02, 6 * np.pi)  # six gait cycles (period pi s)
    distance = np.hypot(rows[:, 1] - rows[0, 1], rows[:, 2] - rows[0, 2])
    assert distance[-1] > 2.0 and distance[-1] > 1.5 * distance[len(distance) // 2]  # and keeps going
    still, *_ = simulate(gait, lambda t: 0.0, 0.02, 6 * np.pi)  # twisting with straight feet goes nowhere
    # (e(0) has no heading component, so the rotor cannot feed the momentum)
    assert np.abs(still[:, 1:] - still[0, 1:]).max() < 1e-12


@pytest.mark.heavy
def test_second_order_convergence_of_a_gait():
    t_end = 3.0
    ref, *_ = simulate(gait, feet, 0.0005, t_end, speed=1.0)
    errors = []
    for h in (0.04, 0.02, 0.01):
        rows, *_ = simulate(gait, feet, h, t_end, speed=1.0)
        errors.append(np.abs(rows[-1] - ref[-1]).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


def test_snakeboard_trajectory():
    vehicle = Vehicle("snakeboard", BOARD, velocity=(0, 0, 0, 1.0, 0, 0), controls=(("rotor", 0.0), ("steer", 0.3)))
    integrator = VehicleIntegrator(Mechanism("park", (), ()), 1 / 24, vehicle=vehicle)
    for _ in range(48):
        integrator.step()
    traj = integrator.trajectory()
    assert traj.bodies == list(snakeboard.BODIES) and traj.poses.shape == (49, 4, 7)
    assert np.allclose(traj.q[:, 1], 0.3) and np.all(traj.constraint_residual < 1e-12)
    assert np.ptp(traj.energy) < 1e-12 * traj.energy[0]  # frozen shape: the kinetic energy is constant too

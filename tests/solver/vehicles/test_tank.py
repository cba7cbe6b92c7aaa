"""The skid-steered tank: straight on equal forces, on the spot on opposite ones, Coulomb turning resistance,
energy = work of the tracks less the resistance's, no side slip, second order."""

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import vehicle_preset_path
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car, tank
from addon.solver.vehicles.spec import TankSpec

G = 9.81
TANK = vehicle_presets()["tank"]
WEIGHT = TANK.mass * G
M_R = TANK.lateral_friction * WEIGHT * TANK.track_length / 4  # Coulomb turning resistance, N m
F_R = TANK.rolling_resistance * WEIGHT


def model(left, right, spec=TANK):
    return tank.TankModel(spec, left, right, G)


def run(m, h, t_end, speed=0.0, yaw_rate=0.0):
    """Rows (theta, x, y, omega, v of the last step, energy, omega, v at the node) per node and side-slip
    speeds per step."""
    state = tank.start(m, 0.4, 3.0, -1.0, speed, yaw_rate)

    def row():
        node = tank.node_momentum(m, state, h) / m.inertia
        return (state.theta, state.x, state.y, *state.xi, tank.energy(m, state, h), *node)

    rows, slips = [row()], []
    for _ in range(int(round(t_end / h))):
        before = (state.theta, state.x, state.y)
        tank.step(m, state, h)
        slips.append(car.lateral_velocity(*before, state.theta, state.x, state.y, h))
        rows.append(row())
    return np.array(rows), np.array(slips), state


def left(t):
    """A hard turn while driving on: the differential moment beats the turning resistance throughout."""
    return -60000.0 + 10000.0 * np.sin(0.8 * t)


def right(t):
    return 183000.0 + 5000.0 * np.cos(0.5 * t)


def _trapezoid(values: np.ndarray, h: float) -> float:
    """The trapezoidal rule on a uniform grid of step h."""
    return float(h * (values.sum() - 0.5 * (values[0] + values[-1])))


def test_equal_track_forces_drive_a_straight_line():
    force = lambda t: 60000.0 * (1 + 0.5 * np.sin(t))  # noqa: E731
    rows, slips, state = run(model(force, force), 0.05, 20.0)
    assert np.all(rows[:, 0] == 0.4) and np.all(rows[:, 3] == 0.0)
    direction = np.array([np.cos(0.4), np.sin(0.4)])
    off_line = (rows[:, 1:3] - [3.0, -1.0]) @ np.array([-direction[1], direction[0]])
    assert np.abs(off_line).max() < 1e-12 and (rows[-1, 1:3] - [3.0, -1.0]) @ direction > 100.0
    assert state.travel[0] == state.travel[1]


def test_opposite_track_forces_turn_on_the_spot():
    force = 150000.0
    rows, slips, state = run(model(lambda t: -force, lambda t: force), 0.05, 6.0)
    assert np.all(rows[:, 4] == 0.0) and np.all(rows[:, 1:3] == rows[0, 1:3])  # the centre never moves
    # K omega' = F B - M_r: omega grows linearly
    rate = (force * TANK.track_gauge - M_R) / TANK.yaw_inertia
    assert rate > 0
    assert np.isclose(rows[-1, 3], rate * (6.0 - 0.025), rtol=1e-12)  # the last step's rate, at t = 6 - h/2
    assert np.isclose(state.travel[0], -state.travel[1], rtol=1e-12) and state.travel[1] > 0


def test_too_little_differential_force_does_not_turn_and_a_free_spin_stops():
    weak = 0.9 * M_R / TANK.track_gauge
    rows, *_ = run(model(lambda t: -weak, lambda t: weak), 0.05, 3.0)
    assert np.all(rows[:, 3] == 0.0) and np.all(rows[:, 0] == rows[0, 0])
    rows, *_ = run(model(lambda t: 0.0, lambda t: 0.0), 0.01, 10.0, yaw_rate=0.5)
    stop = 0.5 * TANK.yaw_inertia / M_R  # Coulomb deceleration from 0.5 rad/s
    stopped = rows[:, 3] == 0.0
    assert abs(np.argmax(stopped) * 0.01 - stop) <= 0.011 and np.all(stopped[np.argmax(stopped):])
    assert np.all(np.diff(rows[:, 3]) <= 0)  # never reverses


def test_energy_changes_by_track_work_less_resistance_exactly_and_resistance_never_does_work():
    h = 0.02
    left = lambda t: 90000.0 + 40000.0 * np.sin(0.8 * t)  # noqa: E731
    right = lambda t: 120000.0 + 60000.0 * np.cos(0.5 * t)  # noqa: E731
    m = model(left, right)
    state = tank.start(m, 0.0, 0.0, 0.0, 2.0, 0.1)
    xi_prev, p_prev, work, loss = state.xi.copy(), state.p.copy(), 0.0, 0.0
    e0 = 0.5 * np.sum(state.p**2 / m.inertia)
    for _ in range(1000):
        drive, resist = tank.impulses(m, state, h)
        tank.step(m, state, h)
        mean = 0.5 * (state.xi + xi_prev)
        applied = drive - (state.p - p_prev)  # the resistance impulse actually removed
        assert np.all(applied * mean >= -1e-9) and np.all(np.abs(applied) <= resist * (1 + 1e-12))
        work += drive @ mean
        loss += applied @ mean
        xi_prev, p_prev = state.xi.copy(), state.p.copy()
    e1 = 0.5 * np.sum(state.p**2 / m.inertia)
    assert loss > 0.05 * work > 0
    assert abs(e1 - e0 - work + loss) < 1e-12 * work


def test_energy_balance_against_the_continuous_resistance_work_second_order():
    """Moving forward and turning one way throughout: the resistance dissipates f_r m g times the distance
    plus M_r times the angle turned; E(T) - E(0) - (track work - that) -> 0 at order 2."""
    gaps = []
    for h in (0.04, 0.02, 0.01):
        rows, _, state = run(model(left, right), h, 8.0, speed=2.0, yaw_rate=0.1)
        assert np.all(rows[:, 3] > 0) and np.all(rows[:, 4] > 0)
        xi = rows[:, 6:8]
        t = np.arange(len(rows)) * h
        power = [((right(tk) - left(tk)) * TANK.track_gauge / 2, left(tk) + right(tk)) for tk in t]
        work = _trapezoid(np.sum(np.array(power) * xi, axis=1), h)
        distance = _trapezoid(xi[:, 1], h)
        dissipated = F_R * distance + M_R * (rows[-1, 0] - rows[0, 0])
        gaps.append(abs(rows[-1, 5] - rows[0, 5] - work + dissipated) / work)
    orders = np.log2(np.array(gaps[:-1]) / gaps[1:])
    assert np.all(orders > 1.8), (gaps, orders)


@pytest.mark.heavy
def test_no_side_slip_and_second_order_convergence():
    ref, *_ = run(model(left, right), 0.0025, 8.0, speed=2.0, yaw_rate=0.1)
    errors = []
    for h in (0.08, 0.04, 0.02, 0.01):
        rows, slips, _ = run(model(left, right), h, 8.0, speed=2.0, yaw_rate=0.1)
        assert np.abs(slips).max() < 1e-14 * np.abs(rows[:, 1:3]).max() / h * 10
        errors.append(np.abs(rows[-1, :3] - ref[-1, :3]).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


def test_track_forces_are_clipped_to_the_adhesion_limit():
    m = model(lambda t: 1e9, lambda t: -1e9)
    assert np.array_equal(m.tracks(0.0), [TANK.max_track_force, -TANK.max_track_force])


def test_the_preset_file_drives_and_pivots():
    mech = load_mechanism(vehicle_preset_path("tank"))
    assert type(mech.vehicle.spec) is TankSpec  # values: tests/solver/test_vehicle_files.py
    traj = simulate(mech, 1 / 24, 240, method="vehicle")
    assert traj.status == "finished" and traj.bodies == ["chassis"]
    assert traj.constraint_residual.max() < 1e-11
    heading = 2 * np.arctan2(traj.poses[:, 0, 6], traj.poses[:, 0, 3])
    assert np.ptp(np.unwrap(heading)) > 1.0


def test_converges_at_second_order_to_the_continuous_equations():
    """Moving forward and turning one way throughout, the Coulomb resistances are constant forces:
    m v' = F_l + F_r - f_r m g, K omega' = (F_r - F_l) B / 2 - M_r (scipy, tol 1e-12)."""
    from scipy.integrate import solve_ivp

    def rhs(t, y):
        theta, _, _, omega, v = y
        torque = (right(t) - left(t)) * TANK.track_gauge / 2 - M_R
        return [omega, v * np.cos(theta), v * np.sin(theta), torque / TANK.yaw_inertia,
                (left(t) + right(t) - F_R) / TANK.mass]

    exact = solve_ivp(rhs, (0.0, 8.0), [0.4, 3.0, -1.0, 0.1, 2.0], method="DOP853", rtol=1e-12, atol=1e-12).y[:3, -1]
    errors = []
    for h in (0.04, 0.02, 0.01):
        rows, *_ = run(model(left, right), h, 8.0, speed=2.0, yaw_rate=0.1)
        assert np.all(rows[:, 3] > 0) and np.all(rows[:, 4] > 0)  # the resistances never change sign
        errors.append(np.abs(rows[-1, :3] - exact).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.1), (errors, orders)

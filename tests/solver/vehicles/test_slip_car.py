"""The car on slipping tyres (slip_car.py): exact Jacobian, force-free conservation, the bicycle model's understeer
gradient, the kinematic car as the stiff-tyre limit, and throttle breaking the rear loose."""

import math

import numpy as np
import pytest

from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car, slip_car

SEDAN = vehicle_presets()["sedan"]
H = 1.0 / 48


def constant(value):
    return lambda t: value


def model(tyres=slip_car.DEFAULT_TYRES, drive=0.0, brake=0.0, steer=0.0):
    return slip_car.SlipCarModel(SEDAN, tyres, constant(drive), constant(brake), constant(steer))


@pytest.mark.parametrize("xi, delta, drive, brake", [
    ((0.35, 8.1, -0.6), 0.1, 2000.0, 500.0),     # both tyres on the rising branch, drive and brake
    ((0.9, 6.0, -2.5), -0.2, 4200.0, 0.0),       # rear sliding (saturated), counter-steered
    ((0.2, 0.6, 0.1), 0.3, 0.0, 3000.0),        # below low_speed: regularised slip, linear brake
])
def test_residual_jacobian_matches_central_differences(xi, delta, drive, brake):
    m = model(drive=drive, brake=brake, steer=delta)
    state = slip_car.start(m, 0.2, 1.0, 2.0, np.array([0.3, 8.0, -0.5]))
    state.k, state.xi_prev = 3, np.array(xi) * 1.01
    state.delta, state.drive, state.brake = delta, drive, brake
    xi = np.array(xi)
    _, J, _ = slip_car.residual(m, state, xi, H)
    eps = 1e-6 * np.abs(xi).max()
    fd = np.column_stack([(slip_car.residual(m, state, xi + e, H)[0] - slip_car.residual(m, state, xi - e, H)[0])
                          / (2 * eps) for e in eps * np.eye(3)])
    assert np.abs(J - fd).max() < 1e-7 * np.abs(J).max()  # central differences' O(eps^2) and round-off / eps


def test_without_tyre_forces_momentum_and_energy_are_conserved():
    m = model(slip_car.Tyres(friction=0.0), drive=3000.0, steer=0.3)  # no grip: drive and steer do nothing
    state = slip_car.start(m, 0.4, 3.0, -1.0, np.array([2.0, 10.0, 1.0]))
    e0, p0 = slip_car.energy(m, state, H), slip_car.spatial_momentum(m, state, H)
    energies, momenta = [], []
    for _ in range(300):
        slip_car.step(m, state, H, tol=1e-14)
        energies.append(slip_car.energy(m, state, H))
        momenta.append(slip_car.spatial_momentum(m, state, H))
    # Newton's tolerance (1e-14 relative) accumulated over 300 steps; the step itself conserves both exactly
    assert np.abs(np.array(energies) / e0 - 1).max() < 1e-10
    assert np.abs(np.array(momenta) - p0).max() < 1e-9 * np.abs(np.array(momenta)).max()


def steady_turn(tyres, delta, speed, seconds=8.0):
    """Twist (r, vx, vy) after `seconds` at a fixed steer, the speed held by the drive torque (set once per step)."""
    m = model(tyres, steer=delta)
    state = slip_car.rolling_start(m, 0.0, 0.0, 0.0, speed)
    hold = lambda t: SEDAN.mass * SEDAN.wheel_radius * 4.0 * (speed - state.xi_prev[1])
    m = slip_car.SlipCarModel(SEDAN, tyres, hold, constant(0.0), constant(delta))
    for _ in range(int(seconds / H)):
        slip_car.step(m, state, H)
    return state.xi_prev


def test_steady_cornering_has_the_bicycle_models_understeer_gradient():
    linear = slip_car.Tyres(friction=100.0)  # the brush curve's linear start at these slips (1e-4 off)
    m = model(linear)
    a, b = m.front, m.rear
    gradient = SEDAN.mass / SEDAN.wheelbase * (b / m.stiffness[0] - a / m.stiffness[1])  # rad per m/s^2
    assert gradient > 0  # the default tyres understeer
    for speed in (10.0, 20.0):
        r, vx, _ = steady_turn(linear, 0.03, speed)
        radius, lateral = vx / r, vx * r  # yaw rate r, speed vx (vy is the body slip's share)
        measured = (0.03 - SEDAN.wheelbase / radius) / lateral
        # 0.13 % measured: small-angle terms and the slow speed loop
        assert measured == pytest.approx(gradient, rel=0.005)


def rear_axle_gap(scale, seconds=6.0, speed=12.0):
    """Largest distance (m) between the rear axles of the kinematic car and the slip car with its cornering
    stiffnesses times `scale`, both coasting through the same slalom from the same start."""
    def steer(t):  # about 3 m/s^2 at the peaks
        return 0.06 * math.sin(1.2 * t)

    rolling = car.CarModel(SEDAN, constant(0.0), constant(0.0), steer)
    tyres = slip_car.Tyres(front_cornering=10.0 * scale, rear_cornering=12.0 * scale)
    sliding = slip_car.SlipCarModel(SEDAN, tyres, constant(0.0), constant(0.0), steer)
    a, b = car.start(rolling, 0.0, 0.0, 0.0, speed), slip_car.rolling_start(sliding, 0.0, 0.0, 0.0, speed)
    gap = 0.0
    for _ in range(int(seconds / H)):
        car.step(rolling, a, H)
        slip_car.step(sliding, b, H)
        gap = max(gap, math.hypot(b.x - a.x, b.y - a.y))  # both states' x, y: the rear-axle centre
    return gap


def test_stiff_tyres_converge_to_the_kinematic_car_as_one_over_the_stiffness():
    soft, stiff = rear_axle_gap(2.0), rear_axle_gap(8.0)
    assert stiff < 0.35  # 0.26 m after 72 m of slalom at 4 x the default stiffness
    assert 3.5 < soft / stiff < 4.5  # slip angles ~ 1/C: the gap is first order in 1/C (3.76 measured)


def test_second_order_in_the_step_with_the_tyres_sliding():
    """A slalom under up to 3000 N m of drive that breaks the rear loose and spins the car (rear slip up to 3 rad,
    both tyre curves through their kinks): successive halvings of h from 1/24 s shrink the pose's change by 4
    (errors against h = 1/1536: 0.27, 0.069, 0.018, 0.0043 m at h = 1/24 ... 1/192)."""
    def pose(h, seconds=3.0):
        m = slip_car.SlipCarModel(SEDAN, slip_car.Tyres(), lambda t: 1500.0 + 1500.0 * math.sin(t), constant(0.0),
                                  lambda t: 0.15 * math.sin(1.5 * t))
        state = slip_car.rolling_start(m, 0.0, 0.0, 0.0, 12.0)
        for _ in range(round(seconds / h)):
            slip_car.step(m, state, h, tol=1e-14)
        return np.array([state.theta, state.g[0, 2], state.g[1, 2]])
    a, b, c = (pose(1.0 / n) for n in (24, 48, 96))
    order = math.log2(np.abs(a - b).max() / np.abs(b - c).max())
    assert 1.8 < order < 2.2

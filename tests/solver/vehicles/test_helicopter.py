"""The seed's helicopter (§4.3.1) on the holonomic step: control matrix, hover, order 2, energy = work."""

import numpy as np
from addon.solver.model import Curve, Vehicle
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import forces, holonomic
from addon.solver.vehicles.helicopter import compile_helicopter, control_matrix


from .references import continuous_solution

HELICOPTER = vehicle_presets()["helicopter"]
WEIGHT = HELICOPTER.mass * 9.81
# climb, pitch forward, bank, yaw: every control keyed and smooth (this undamped model of the seed turns
# 0.01 rad of blade tilt into 0.25 rad/s^2 of pitch, so the tilts are small)
CONTROLS = (
    ("collective", Curve((0.0, 1.0, 2.0, 3.0), (WEIGHT, 1.1 * WEIGHT, 1.02 * WEIGHT, WEIGHT), "cubic")),
    ("tail", Curve((0.0, 1.5, 3.0), (0.0, 400.0, -200.0), "cubic")),
    ("blade_pitch", Curve((0.0, 1.0, 3.0), (0.0, 0.01, -0.005), "cubic")),
    ("blade_roll", Curve((0.0, 2.0, 3.0), (0.0, -0.006, 0.004), "cubic")),
)
START = (0.0, 0.0, 0.0, 5.0, 0.0, 0.0)  # flying forward at 5 m/s


def helicopter(controls=CONTROLS):
    return compile_helicopter(Vehicle("helicopter", HELICOPTER, velocity=START, controls=controls))[0]


def test_control_matrix_is_lift_at_the_hub_and_tail_force_at_the_arm():
    pitch, roll = 0.1, -0.07
    F = control_matrix(HELICOPTER, pitch, roll)
    n = np.array([np.sin(pitch) * np.cos(roll), -np.sin(roll), np.cos(pitch) * np.cos(roll)])
    hub, tail = np.array([0, 0, HELICOPTER.rotor_height]), np.array([-HELICOPTER.tail_arm, 0, 0])
    assert np.allclose(F[:, 0], np.concatenate([np.cross(hub, n), n]))
    assert np.allclose(F[:, 1], np.concatenate([np.cross(tail, [0, -1, 0]), [0, -1, 0]]))


def simulate(model, h, t_end):
    state = holonomic.start(model, np.eye(4), START)
    iterations = [holonomic.step(model, state, h, tol=1e-13) for _ in range(int(round(t_end / h)))]
    return state, np.array(iterations)


def test_second_order_convergence_against_the_continuous_equations():
    model, t_end = helicopter(), 3.0
    ref = continuous_solution(model, np.eye(4), START, t_end)
    errors = []
    for h in (0.04, 0.02, 0.01):
        state, iterations = simulate(model, h, t_end)
        twist = holonomic.node_twist(model, state, h)
        errors.append(max(np.abs(state.g - ref[0]).max(), np.abs(twist - ref[1]).max() / 5.0))
        assert iterations.max() <= 3  # slow rotation: Newton needs at most three updates
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


def test_energy_changes_by_the_work_of_the_rotor_forces():
    """E(T) - E(0) = integral of F(gamma) u . xi dt (gravity is in E as m g z); the gap shrinks as h^2."""
    model, t_end = helicopter(), 3.0
    weight, _ = forces.gravity(HELICOPTER.mass, (0.0, 0.0, -9.81))
    gaps = []
    for h in (0.04, 0.02, 0.01):
        state = holonomic.start(model, np.eye(4), START)
        e0, power = float(holonomic.energy(model, state, h)), []
        for k in range(int(round(t_end / h)) + 1):
            if k:
                holonomic.step(model, state, h, tol=1e-13)
            rotor = model.wrench(state.t, state.g, np.zeros(6))[0] - weight(state.t, state.g, np.zeros(6))[0]
            power.append(rotor @ holonomic.node_twist(model, state, h))
        work = h * (np.sum(power) - 0.5 * (power[0] + power[-1]))  # trapezoid rule, O(h^2) as well
        gaps.append(abs(float(holonomic.energy(model, state, h)) - e0 - work))
    orders = np.log2(np.array(gaps[:-1]) / gaps[1:])
    assert np.all(orders > 1.8), (gaps, orders)


def test_hover_then_forward_tilt_flies_forward_and_pitches_nose_down():
    controls = (("collective", WEIGHT), ("blade_pitch", Curve((0.0, 0.5), (0.0, 0.05), "linear")))
    model = compile_helicopter(Vehicle("helicopter", HELICOPTER, controls=controls))[0]
    state = holonomic.start(model, np.eye(4), np.zeros(6))
    for _ in range(24):
        holonomic.step(model, state, 1 / 24)
    twist = holonomic.node_twist(model, state, 1 / 24)
    assert state.g[0, 3] > 0 and twist[3] > 0  # moving forward
    assert twist[1] > 0  # pitching about +y: nose down

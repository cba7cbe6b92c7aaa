"""The hovercraft on the holonomic step: static cushion height, energy, side slip, exact Jacobian, order 2,
and the truck and hovercraft preset files."""

import dataclasses

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Curve, Vehicle
from addon.solver.presets import vehicle_preset_path
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car, holonomic
from addon.solver.vehicles.hovercraft import compile_hovercraft


from .references import convergence_orders, pose, residual_jacobian_fd, run_holonomic

CRAFT = vehicle_presets()["hovercraft"]
UNDAMPED = dataclasses.replace(CRAFT, cushion_damping=0.0, drag=(0.0, 0.0), yaw_drag=0.0)


def thrust(right, left):
    return (("thrust_right", right), ("thrust_left", left))


def test_settles_at_the_static_cushion_height():
    """At rest the skirt sits m g / k below the cushion height and stays there; dropped from 5 cm higher,
    tilted, the damped cushion brings it back there, level (yaw is free: the tilt leaves a small turn)."""
    model = compile_hovercraft(Vehicle("hovercraft", CRAFT))
    sag = CRAFT.mass * 9.81 / CRAFT.cushion_stiffness
    g, xi, *_ = run_holonomic(model, pose(CRAFT.cushion_height - sag + CRAFT.skirt_below_com), np.zeros(6), 0.02, 200)
    assert np.abs(xi).max() < 1e-12 and np.abs(g[:, 2, 3] - g[0, 2, 3]).max() < 1e-12
    g, xi, *_ = run_holonomic(model, pose(CRAFT.rest_height + 0.05, roll=0.03, pitch=-0.02), np.zeros(6), 0.02, 250,
                         tol=1e-10)
    assert abs(CRAFT.cushion_height - (g[-1, 2, 3] - CRAFT.skirt_below_com) - sag) < 1e-6
    assert np.abs(g[-1, 2, :3] - [0, 0, 1]).max() < 1e-6 and np.abs(xi[-1]).max() < 1e-5


@pytest.mark.heavy
def test_without_thrust_and_drag_energy_stays_bounded():
    """Heave, pitch and roll on the undamped cushion while gliding and turning: the lift is conservative."""
    model = compile_hovercraft(Vehicle("hovercraft", UNDAMPED))
    xi0 = np.array([0.0, 0.0, 0.3, 5.0, 1.0, 0.0])
    g, xi, energy, its = run_holonomic(model, pose(CRAFT.rest_height + 0.03, roll=0.04, pitch=0.02), xi0, 1 / 48, 48 * 30)
    oscillation = energy[0] - model.potential(pose(CRAFT.rest_height)) - 0.5 * xi0 @ model.inertia @ xi0
    assert np.ptp(energy) < 0.05 * oscillation, (np.ptp(energy), oscillation)
    t = np.arange(len(energy)) / 48
    assert abs(np.polyfit(t, energy, 1)[0] * t[-1]) < 0.1 * np.ptp(energy)  # no drift over 30 s
    assert its.max() <= 5


@pytest.mark.heavy
def test_a_steady_turn_slides_outward_unlike_the_car():
    """Differential thrust: the craft turns left and its velocity lags its heading (it points to the right of
    the bow), with the steady side slip the skirt drag allows: m w_z v_x = c_y v_y^2."""
    model = compile_hovercraft(Vehicle("hovercraft", CRAFT, controls=thrust(800.0, 400.0)))
    g, xi, *_ = run_holonomic(model, pose(CRAFT.rest_height), np.zeros(6), 0.05, 1200)
    w, v = xi[-1, :3], xi[-1, 3:]
    assert np.abs(xi[-1] - xi[-2]).max() < 1e-8  # steady
    assert w[2] > 0.1 and v[0] > 0 and v[1] < 0
    slip = np.arctan2(-v[1], v[0])
    assert slip > np.radians(10), np.degrees(slip)
    assert abs(CRAFT.mass * w[2] * v[0] / (CRAFT.drag[1] * v[1] ** 2) - 1) < 0.05
    # the car of the same turn rate has no side slip: its velocity stays along its heading
    sedan = car.compile_car(Vehicle("car", vehicle_presets()["sedan"], controls=(("steer", 0.1),)))
    state = car.start(sedan, 0.0, 0.0, 0.0, 10.0)
    previous = (state.theta, state.x, state.y)
    car.step(sedan, state, 0.05)
    assert abs(car.lateral_velocity(*previous, state.theta, state.x, state.y, 0.05)) < 1e-9


def test_exact_jacobian_equals_finite_differences():
    model = compile_hovercraft(Vehicle("hovercraft", CRAFT, controls=thrust(600.0, 200.0)))
    xi0 = np.array([0.1, -0.2, 0.3, 4.0, -1.5, 0.2])
    state = holonomic.start(model, pose(CRAFT.rest_height - 0.02, roll=0.03, pitch=-0.04, x=1.0), xi0)
    h = 0.05
    holonomic.step(model, state, h)
    xi = state.xi_prev + np.array([0.02, -0.03, 0.05, 0.3, -0.2, 0.1])
    _, J, _ = holonomic.residual(model, state, xi, h)
    fd = residual_jacobian_fd(model, state, xi, h)
    assert np.allclose(J, fd, rtol=1e-6, atol=1e-6 * np.abs(J).max()), np.abs(J - fd).max()


@pytest.mark.heavy
def test_second_order_convergence_in_a_manoeuvre():
    controls = (("thrust_right", Curve((0.0, 1.5, 3.0), (0.0, 800.0, 300.0), "cubic")),
                ("thrust_left", Curve((0.0, 1.5, 3.0), (0.0, 500.0, 700.0), "cubic")))
    model = compile_hovercraft(Vehicle("hovercraft", CRAFT, controls=controls))
    g0, xi0, t_end = pose(CRAFT.rest_height + 0.01, roll=0.02), np.array([0.0, 0.0, 0.0, 3.0, 0.5, 0.0]), 3.0
    errors, orders = convergence_orders(model, g0, xi0, t_end, (0.02, 0.01, 0.005), tol=1e-11)
    assert np.all(np.abs(orders - 2) < 0.2), (errors, orders)


def run_file(name):
    mech = load_mechanism(vehicle_preset_path(name))
    spec = mech.vehicle.spec
    assert spec == vehicle_presets()[name]
    trajectory = simulate(mech, 1 / 24, 240, method="vehicle")
    assert trajectory.status == "finished", trajectory.message
    return trajectory


def test_hovercraft_preset_accelerates_turns_and_slides():
    trajectory = run_file("hovercraft")
    p, q = trajectory.poses[:, 0, :3], trajectory.poses[:, 0, 3:]
    velocity = np.diff(p, axis=0) * 24
    heading = 2 * np.arctan2(q[:, 3], q[:, 0])
    course = np.arctan2(velocity[:, 1], velocity[:, 0])
    lag = np.angle(np.exp(1j * (heading[1:] - course)))
    assert np.linalg.norm(velocity[-1, :2]) > 5 and np.ptp(heading) > np.pi / 2
    assert lag.max() > np.radians(15)  # the velocity lags the heading: it slides
    assert np.abs(p[:, 2] - CRAFT.rest_height).max() < 0.1  # stays on its cushion


def test_truck_preset_drives():
    trajectory = run_file("truck")
    assert np.linalg.norm(trajectory.poses[-1, 0, :2] - trajectory.poses[0, 0, :2]) > 20


def test_at_rest_on_the_cushion_newton_converges_at_once_and_the_craft_stays_put():
    """Momenta and net wrench are ~0 at rest: the weight in the convergence scale keeps Newton from chasing
    the round-off of m g (it took up to 13 updates at tol 1e-12 before the weight joined the scale)."""
    model = compile_hovercraft(Vehicle("hovercraft", CRAFT, position=(0.0, 0.0, CRAFT.rest_height)))
    g, xi, _, iterations = run_holonomic(model, pose(CRAFT.rest_height), np.zeros(6), 1 / 24, 240, tol=1e-12)
    assert iterations.max() <= 1
    assert np.abs(xi).max() < 1e-12 and np.abs(g[-1] - g[0]).max() < 1e-12

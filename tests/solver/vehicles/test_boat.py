"""The seed's boat (§4.3.2) on the holonomic step: flotation, heave period, energy, thrust, currents, order 2."""

import numpy as np
import pytest

from addon.solver.model import Curve, Vehicle
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import holonomic
from addon.solver.vehicles.boat import compile_boat


from .references import convergence_orders, pose, residual_jacobian_fd, run_holonomic

BOAT = vehicle_presets()["speedboat"]
REST_Z = BOAT.keel_below_com - BOAT.design_draft  # centre of mass height when floating level at rest
UNDAMPED = BOAT.__class__(**{**BOAT.__dict__, "drag": (0.0, 0.0, 0.0)})


def test_floats_at_the_design_draft():
    model = compile_boat(Vehicle("boat", BOAT))
    g, xi, *_ = run_holonomic(model, pose(REST_Z), np.zeros(6), 0.05, 100)
    assert np.abs(xi).max() < 1e-12 and np.abs(g[:, 2, 3] - REST_Z).max() < 1e-12


@pytest.mark.heavy
def test_undamped_heave_has_the_box_period_and_bounded_energy():
    """A box floating level bobs at 2 pi sqrt(m / (rho g L B)); buoyancy is conservative (exact potential)."""
    model = compile_boat(Vehicle("boat", UNDAMPED))
    h, steps = 0.01, 1000
    g, xi, energy, _ = run_holonomic(model, pose(REST_Z + 0.03), np.zeros(6), h, steps)
    z = g[:, 2, 3] - REST_Z
    down = np.flatnonzero((z[:-1] > 0) & (z[1:] <= 0))
    crossings = down + z[down] / (z[down] - z[down + 1])  # linear interpolation, in steps
    period = np.diff(crossings).mean() * h
    expected = 2 * np.pi * np.sqrt(BOAT.mass / (BOAT.water_density * 9.81 * BOAT.hull_length * BOAT.hull_beam))
    assert abs(period / expected - 1) < 2e-3, (period, expected)
    assert np.ptp(energy) / (0.5 * 9.81 * BOAT.water_density * BOAT.hull_length * BOAT.hull_beam * 0.03**2) < 1e-2


@pytest.mark.heavy
def test_rolling_and_pitching_without_drag_keeps_energy_bounded():
    model = compile_boat(Vehicle("boat", UNDAMPED))
    g, xi, energy, its = run_holonomic(model, pose(REST_Z + 0.02, roll=0.15, pitch=0.05), np.zeros(6), 1 / 24, 24 * 60)
    oscillation = energy[0] - model.potential(pose(REST_Z))  # energy above floating at rest
    # roll period ~0.65 s, so h w ~ 0.4 at 24 fps: a few per cent of oscillation, and no drift in a minute
    assert np.ptp(energy) < 0.08 * oscillation
    t = np.arange(len(energy)) / 24
    slope = np.polyfit(t, energy, 1)[0]
    assert abs(slope * t[-1]) < 0.1 * np.ptp(energy)  # a fitted trend over the minute: none to speak of
    assert its.max() <= 4


@pytest.mark.heavy
def test_thrust_reaches_a_steady_state_where_the_wrench_vanishes():
    """Constant thrust: the twist becomes constant, the path level, and the discrete momentum equation then
    demands zero total wrench (C(h xi)^T mu = C(-h xi)^T mu for this surge-heave twist): exact force balance."""
    thrust = 1500.0
    model = compile_boat(Vehicle("boat", BOAT, controls=(("thrust_right", thrust), ("thrust_left", thrust))))
    g, xi, *_ = run_holonomic(model, pose(REST_Z), np.zeros(6), 0.1, 600)
    assert np.abs(xi[-1] - xi[-2]).max() < 1e-9
    world = g[-1, :3, :3] @ xi[-1, 3:]
    assert abs(world[2]) < 1e-9 and abs(world[1]) < 1e-9  # level and straight ahead
    # the hull trims slightly nose-up, so heave drag carries a little weight: speed near 2 T / c_surge
    assert abs(np.linalg.norm(world) / (2 * thrust / BOAT.drag[0]) - 1) < 0.02
    wrench, _ = model.wrench(600 * 0.1, g[-1], xi[-1])
    assert np.abs(wrench).max() < 1e-6 * thrust


def test_differential_thrust_turns_towards_the_weaker_side():
    model = compile_boat(Vehicle("boat", BOAT, controls=(("thrust_right", 2000.0), ("thrust_left", 500.0))))
    g, xi, *_ = run_holonomic(model, pose(REST_Z), np.zeros(6), 0.1, 50)
    assert xi[-1, 2] > 0  # more thrust on the right: yaw to the left (+z)


@pytest.mark.heavy
def test_drifts_with_a_uniform_current():
    current = (0.8, -0.5, 0.0)
    model = compile_boat(Vehicle("boat", BOAT, current=current))
    g, xi, *_ = run_holonomic(model, pose(REST_Z), np.zeros(6), 0.1, 600)
    world_velocity = g[-1, :3, :3] @ xi[-1, 3:]
    assert np.allclose(world_velocity, current, atol=1e-6)


def test_exact_jacobian_with_drag_and_a_current_field():
    def swirl(points, t):
        return np.stack([-0.3 * points[..., 1], 0.3 * points[..., 0], 0.0 * points[..., 2]], -1)

    model = compile_boat(Vehicle("boat", BOAT, controls=(("thrust_right", 800.0),)), current=swirl)
    xi0 = np.array([0.1, 0.2, 0.3, 2.0, 0.5, 0.1])
    state = holonomic.start(model, pose(REST_Z + 0.05, roll=0.1, pitch=-0.05, x=2.0), xi0)
    h = 0.1
    holonomic.step(model, state, h)
    xi = state.xi_prev + np.array([0.05, -0.02, 0.04, 0.3, -0.1, 0.2])
    _, J, _ = holonomic.residual(model, state, xi, h)
    fd = residual_jacobian_fd(model, state, xi, h)
    assert np.allclose(J, fd, rtol=1e-6, atol=1e-5 * np.abs(J).max()), np.abs(J - fd).max()


@pytest.mark.heavy
def test_second_order_convergence_in_a_manoeuvre():
    controls = (("thrust_right", Curve((0.0, 2.0, 4.0), (0.0, 2000.0, 500.0), "cubic")),
                ("thrust_left", Curve((0.0, 2.0, 4.0), (0.0, 1000.0, 1500.0), "cubic")))
    model = compile_boat(Vehicle("boat", BOAT, controls=controls, current=(0.3, 0.2, 0.0)))
    g0, xi0, t_end = pose(REST_Z + 0.01, roll=0.05), np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]), 4.0
    errors, orders = convergence_orders(model, g0, xi0, t_end, (0.04, 0.02, 0.01), tol=1e-10)
    assert np.all(np.abs(orders - 2) < 0.2), (errors, orders)

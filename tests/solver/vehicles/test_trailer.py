"""The car towing a trailer (a nonholonomic chain): no side slip at either axle, the analytic steady circle,
energy = work of the torque, exact Jacobian, second order; started at a hitch angle, the closed-form swing-in."""

import dataclasses

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism, loads_mechanism
from addon.solver.mechfile.write import dumps_mechanism
from addon.solver.model import MechanismError, Vehicle, VehicleError
from addon.solver.presets import vehicle_preset_path
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles import car, trailer
from addon.solver.vehicles.spec import CarTrailerSpec

from .references import hitch_closed_form

ZERO = lambda t: 0.0  # noqa: E731
SPEC = vehicle_presets()["car_trailer"]


def drive(t):
    return 900.0 * np.sin(0.7 * t) + 300.0


def weave(t):
    return 0.3 * np.sin(0.5 * t)


def model(drive_fn=ZERO, steer=ZERO, spec=SPEC, brake=ZERO):
    return trailer.TrailerModel(car.CarModel(spec, drive_fn, brake, steer), spec)


def run(m, h, t_end, speed=6.0, beta=0.1):
    """Rows (theta, x, y, beta, energy) per node, side-slip speeds of car and trailer axles per step."""
    state = trailer.start(m, 0.3, 1.0, 2.0, speed, beta=0.3 - beta)
    rows, slips, its = [(state.theta, state.x, state.y, state.beta, trailer.energy(m, state, h))], [], []
    for _ in range(int(round(t_end / h))):
        car_before = (state.theta, state.x, state.y)
        axle_before = (state.beta, *trailer.trailer_axle(m, state))
        its.append(trailer.step(m, state, h))
        slips.append((car.lateral_velocity(*car_before, state.theta, state.x, state.y, h),
                      car.lateral_velocity(*axle_before, state.beta, *trailer.trailer_axle(m, state), h)))
        rows.append((state.theta, state.x, state.y, state.beta, trailer.energy(m, state, h)))
    return np.array(rows), np.array(slips), np.array(its), state


def test_exact_jacobian_equals_finite_differences():
    m, h = model(drive, weave), 0.05
    _, _, _, state = run(m, h, 1.5)
    known = trailer.prepare(m, state, h)
    for z in ([18.0, 0.02], [-5.0, -0.1], [0.0, 0.0], [30.0, 1e-5]):
        z = np.array(z)
        _, J, _ = trailer.residual(m, state, known, *z, h)
        eps = 1e-6
        fd = np.column_stack([(trailer.residual(m, state, known, *(z + d), h)[0]
                               - trailer.residual(m, state, known, *(z - d), h)[0]) / (2 * eps)
                              for d in np.eye(2) * eps])
        assert np.abs(J - fd).max() <= 1e-7 * np.abs(J).max(), (z, J, fd)


def test_no_side_slip_at_either_axle_to_round_off_at_every_step():
    h = 0.05
    rows, slips, its, state = run(model(drive, weave), h, 30.0)
    scale = np.abs(rows[:, 1:3]).max() + SPEC.hitch_to_trailer_axle
    assert np.abs(rows[:, 3] - rows[:, 0]).max() > 0.3  # the trailer really swings behind the weaving car
    assert np.abs(slips).max() < 1e-15 * scale / h * 10, np.abs(slips).max(axis=0)
    assert its.max() <= 4


def test_hitch_length_holds_exactly():
    m = model(drive, weave)
    _, _, _, state = run(m, 0.05, 10.0)
    hitch = np.array([state.x, state.y]) - SPEC.hitch_behind_rear_axle * np.array([np.cos(state.theta),
                                                                                 np.sin(state.theta)])
    assert abs(np.linalg.norm(hitch - trailer.trailer_axle(m, state)) - SPEC.hitch_to_trailer_axle) < 1e-13


@pytest.mark.heavy
@pytest.mark.parametrize("steer", [0.2, -0.35])
@pytest.mark.parametrize("h", [0.1, 0.02])
def test_fixed_steering_trailer_settles_on_the_analytic_circle(steer, h):
    """Steady state: the car's rear axle circles the turning centre at R = l / tan(steer), the ball at
    sqrt(R^2 + d^2); the trailer's axle runs tangent to its own circle with the drawbar L along the
    tangent, so its radius is sqrt(R^2 + d^2 - L^2) (less than the car's: the trailer cuts in)."""
    m = model(steer=lambda t: steer)
    rows, slips, _, state = run(m, h, 80.0, speed=5.0, beta=0.0)
    R = SPEC.wheelbase / np.tan(steer)
    d, L = SPEC.hitch_behind_rear_axle, SPEC.hitch_to_trailer_axle
    expected = np.sqrt(R * R + d * d - L * L)
    centre = np.array([state.x - R * np.sin(state.theta), state.y + R * np.cos(state.theta)])
    radius = np.linalg.norm(trailer.trailer_axle(m, state) - centre)
    assert abs(radius - expected) < 1e-9, (radius, expected)
    # the hitch angle settles where the trailer yaws at the car's rate: L omega = v sin g - d omega cos g
    gamma = state.theta - state.beta
    assert abs(L * np.tan(steer) / SPEC.wheelbase - np.sin(gamma) + d * np.tan(steer) / SPEC.wheelbase
               * np.cos(gamma)) < 1e-9
    assert expected < abs(R)


@pytest.mark.heavy
def test_energy_changes_only_by_the_work_of_the_torque_second_order():
    """E(t) - E(0) - work -> 0 at order 2 with steering and a varying torque; with the torque off and fixed
    steering the energy stays constant to the same order while the trailer swings into line."""
    t_end, gaps, drifts = 10.0, [], []
    for h in (0.04, 0.02, 0.01):
        m = model(drive, weave)
        state = trailer.start(m, 0.0, 0.0, 0.0, 5.0, beta=-0.2)
        e0, work, u_prev = trailer.energy(m, state, h), 0.0, state.u
        for _ in range(int(round(t_end / h))):
            impulse, _ = car._impulses(m.car, state, h)
            trailer.step(m, state, h)
            work += impulse * 0.5 * (state.u + u_prev)
            u_prev = state.u
        work += 0.5 * h * drive(t_end - h / 2) * u_prev  # the last half step's share, in E(t_end)
        gaps.append(abs(trailer.energy(m, state, h) - e0 - work) / abs(work))
        free = model(steer=lambda t: 0.3)
        rows, *_ = run(free, h, t_end, speed=5.0, beta=0.4)
        drifts.append(np.ptp(rows[:, 4]) / rows[0, 4])
    for series in (gaps, drifts):
        orders = np.log2(np.array(series[:-1]) / series[1:])
        assert np.all(orders > 1.8), (series, orders)
    assert gaps[-1] < 1e-4 and drifts[-1] < 1e-4


@pytest.mark.heavy
def test_second_order_convergence_of_car_and_trailer():
    ref, *_ = run(model(drive, weave), 0.0025, 10.0)
    errors = []
    for h in (0.08, 0.04, 0.02, 0.01):
        rows, *_ = run(model(drive, weave), h, 10.0)
        errors.append(np.abs(rows[-1, :4] - ref[-1, :4]).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


def test_trailer_wheels_roll_their_own_circles():
    """In the steady turn each trailer wheel rolls its own circle about the turning centre."""
    m, h, steer = model(steer=lambda t: 0.25), 0.05, 0.25
    state = trailer.start(m, 0.0, 0.0, 0.0, 5.0)
    for _ in range(1600):
        trailer.step(m, state, h)
    spin0, beta0 = state.trailer_spin.copy(), state.beta
    for _ in range(200):
        trailer.step(m, state, h)
    R = SPEC.wheelbase / np.tan(steer)
    r_axle = np.sqrt(R * R + SPEC.hitch_behind_rear_axle**2 - SPEC.hitch_to_trailer_axle**2)
    turned = state.beta - beta0
    for y, spin in zip(m.wheel_y, state.trailer_spin - spin0):
        assert np.isclose(spin * SPEC.trailer_wheel_radius, (r_axle - y) * turned, rtol=1e-9)


def test_the_preset_file_drives_through_the_vehicle_method():
    mech = load_mechanism(vehicle_preset_path("car_trailer"))
    assert type(mech.vehicle.spec) is CarTrailerSpec  # values: tests/solver/test_vehicle_files.py
    traj = simulate(mech, 1 / 24, 240, method="vehicle")
    assert traj.status == "finished" and traj.bodies == list(trailer.BODIES)
    assert traj.constraint_residual.max() < 1e-11
    names = traj.coordinate_names
    assert np.ptp(traj.q[:, names.index("hitch_angle")]) > 0.1


def test_a_massless_trailer_leaves_the_car_as_car_py_drives_it():
    """With the trailer's mass and inertias -> 0 the momentum equation is the car's: same poses, same rates."""
    light = dataclasses.replace(SPEC, trailer_mass=1e-12, trailer_yaw_inertia=1e-12, trailer_wheel_inertia=0.0)
    h = 0.05
    m = model(drive, weave, spec=light)
    state = trailer.start(m, 0.3, 1.0, 2.0, 6.0, beta=0.2)
    alone = car.CarModel(light, drive, ZERO, weave)
    reference = car.start(alone, 0.3, 1.0, 2.0, 6.0)
    for _ in range(200):
        trailer.step(m, state, h)
        car.step(alone, reference, h)
    assert abs(state.u - reference.u) < 1e-9 * abs(reference.u)
    assert max(abs(state.x - reference.x), abs(state.y - reference.y)) < 1e-9 * np.hypot(reference.x, reference.y)


def continuous_chain(m, theta0, x0, y0, beta0, speed, t_end):
    """(theta, x, y, beta) at t_end of the continuous chain: the kinematics of the two no-slip axles and
    the energy balance d/dt (M u^2 / 2) = u f, i.e. M u' = f - (1/2) (dM/dt) u (scipy, tol 1e-12)."""
    from scipy.integrate import solve_ivp

    s = m.spec
    rho = s.wheel_radius

    def inertia(gamma, sigma):
        w = m.direction(gamma, sigma)
        return w @ (m.metric * w)

    def sigma_of(t):
        return np.tan(np.clip(m.car.steer(t), -s.max_steer, s.max_steer))

    def rhs(t, y):
        theta, _, _, beta, u = y
        sigma, gamma = sigma_of(t), theta - beta
        w = m.direction(gamma, sigma)
        d_sigma = (sigma_of(t + 1e-6) - sigma_of(t - 1e-6)) / 2e-6
        d_gamma = (w[1] - w[3]) * u
        eps = 1e-30  # complex-step derivatives of M: exact to round-off
        dM = (inertia(gamma + 1j * eps, sigma).imag * d_gamma + inertia(gamma, sigma + 1j * eps).imag * d_sigma) / eps
        du = (m.car.drive(t) - 0.5 * dM * u) / inertia(gamma, sigma)
        return [w[1] * u, rho * u * np.cos(theta), rho * u * np.sin(theta), w[3] * u, du]

    y = solve_ivp(rhs, (0.0, t_end), [theta0, x0, y0, beta0, speed / rho], method="DOP853", rtol=1e-12,
                  atol=1e-12).y[:, -1]
    return y[:4]


@pytest.mark.heavy
def test_converges_at_second_order_to_the_continuous_chain():
    """Against the continuous equations (not a finer run of the same scheme): the discrete chain is
    consistent with the two no-slip constraints and the energy balance, at order 2."""
    m = model(drive, weave)
    exact = continuous_chain(m, 0.3, 1.0, 2.0, 0.2, 6.0, 10.0)
    errors = []
    for h in (0.04, 0.02, 0.01):
        rows, *_ = run(m, h, 10.0)
        errors.append(np.abs(rows[-1, :4] - exact).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


# ------------------------------------------------------------------------------------------------------
# Starting at a hitch angle


@pytest.mark.parametrize("steer", [0.0, 0.15, -0.2])
def test_the_closed_form_solves_the_hitch_equation(steer):
    """The closed form against central differences of itself: dg/ds = kappa - (sin g - d kappa cos g) / L."""
    kappa, d, L = np.tan(steer) / SPEC.wheelbase, SPEC.hitch_behind_rear_axle, SPEC.hitch_to_trailer_axle
    s, eps = np.linspace(0.0, 20.0, 41), 1e-5
    for gamma0 in (1.2, -0.6, 0.35):
        g = hitch_closed_form(gamma0, s, kappa, d, L)
        ahead, back = (hitch_closed_form(gamma0, s + e, kappa, d, L) for e in (eps, -eps))
        dg = (ahead - back) / (2 * eps)
        assert g[0] == pytest.approx(gamma0, abs=1e-14)
        assert np.abs(dg - (kappa - (np.sin(g) - d * kappa * np.cos(g)) / L)).max() < 1e-9


@pytest.mark.parametrize("steer, gamma0", [(0.0, 1.2), (0.0, -0.6), (0.15, -0.3), (-0.2, 1.0)])
def test_started_at_a_hitch_angle_the_trailer_swings_in_as_the_closed_form_at_second_order(steer, gamma0):
    """Coasting from a hitch angle (the car at 8 m/s, fixed steering): the hitch angle against the car's rolled
    distance s follows hitch_closed_form, with errors at order 2 in h, and neither axle slips sideways
    (side-slip speed at round-off of the positions over h)."""
    errors, slips = [], []
    for h in (0.04, 0.02, 0.01, 0.005):
        m = model(steer=lambda t: steer)
        state = trailer.start(m, 0.3, 1.0, 2.0, 8.0, beta=0.3 - gamma0)
        psi0, slip = state.psi, 0.0
        for _ in range(int(round(1.6 / h))):
            before = (state.beta, *trailer.trailer_axle(m, state))
            trailer.step(m, state, h)
            slip = max(slip, abs(car.lateral_velocity(*before, state.beta, *trailer.trailer_axle(m, state), h)))
        s = SPEC.wheel_radius * (state.psi - psi0)
        exact = hitch_closed_form(gamma0, s, np.tan(steer) / SPEC.wheelbase, SPEC.hitch_behind_rear_axle,
                                  SPEC.hitch_to_trailer_axle)
        errors.append(abs(state.theta - state.beta - exact))
        slips.append(slip * h)  # m per step
        assert abs(exact - gamma0) > 0.3  # it really swings in over the 12.8 m
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2) < 0.05), (errors, orders)
    assert max(slips) < 2e-14, slips  # m per step; positions below 20 m carry 4e-15 m of round-off


def test_a_vehicle_starts_at_its_hitch_angle_and_files_keep_it():
    mech = load_mechanism(vehicle_preset_path("car_trailer"))
    start = mech.replace(vehicle=dataclasses.replace(mech.vehicle, hitch_angle=-0.4))
    traj = simulate(start, 1 / 24, 48, method="vehicle")
    hitch = traj.q[:, traj.coordinate_names.index("hitch_angle")]
    assert hitch[0] == -0.4 and traj.constraint_residual.max() < 1e-11
    assert dumps_mechanism(loads_mechanism(dumps_mechanism(start))) == dumps_mechanism(start)
    assert loads_mechanism(dumps_mechanism(start)).vehicle.hitch_angle == -0.4


def test_hitch_angles_a_trailer_cannot_start_at_are_refused_by_name():
    with pytest.raises(VehicleError, match="vehicle 'v': field 'hitch_angle' must be a number of rad within "
                                           r"\+-pi/2 \(the trailer's axle behind the tow ball\), got 1.6"):
        Vehicle("car_trailer", SPEC, name="v", hitch_angle=1.6)
    with pytest.raises(VehicleError, match="vehicle 'v': field 'hitch_angle' is a car with trailer's start; a car "
                                           "has no trailer"):
        Vehicle("car", vehicle_presets()["sedan"], name="v", hitch_angle=0.1)
    text = dumps_mechanism(load_mechanism(vehicle_preset_path("car_trailer"))).replace(
        "[vehicle]\n", "[vehicle]\nhitch_angle = -2.0\n")
    with pytest.raises(MechanismError, match=r"^f.toml: \[vehicle\]: vehicle 'car_trailer': field 'hitch_angle' "
                                             "must be a number of rad within"):
        loads_mechanism(text, "f.toml")

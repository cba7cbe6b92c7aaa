"""A car towing a single-axle trailer: a nonholonomic chain on SE(2) x shape, one discrete momentum equation.

Owns the car-and-trailer model, its step (Newton on two unknowns with the exact Jacobian), its node
energy and the trailer's outputs (pose, wheel spins). The car is car.py's (rear-axle pose (theta, x, y),
rolling angle psi, keyed sigma = tan(steer)); the trailer adds its heading beta. The tow ball sits d
behind the car's rear-axle centre, the trailer's axle centre L behind the ball: P = X - d e(theta) -
L e(beta) with e(a) = (cos a, sin a). Neither axle slips sideways. With gamma = theta - beta the hitch
angle, continuous motion at wheel rate u has the body rates

    car: v = rho u, omega = rho u sigma / l;   trailer: forward V = rho u a, beta' = rho u b / L,
    a = cos gamma + (d sigma / l) sin gamma,   b = sin gamma - (d sigma / l) cos gamma,

so the chain keeps one velocity, u, and kinetic energy (1/2) M u^2, M = w^T G w, with w = rho (1,
sigma / l, a, b / L) and G = diag(m_car, K_car, m_trailer, K_trailer) (car.py's effective inertias; the
trailer's m_trailer = m_t + 2 I_w / rho_t^2 and K_trailer = K_t + m_t c^2 + I_w track_t^2 / (2 rho_t^2)
about its axle centre, c its centre of mass ahead of the axle). The ideal constraints do no work, so
d/dt (1/2 M u^2) = u f: only the drive and brake torques change the energy.

Step k (the car's scheme with the trailer's share, the seed's e(r_k)^T (mu_k - mu_{k-1}) = h f):

    car: the exact arc at u_k and sigma_{k+a} (car.advance);
    trailer: its axle moves from P_k on the circular arc tangent to its heading at both ends, so the
        chord P_{k+1} - P_k lies along e(beta_k + delta / 2), delta = beta_{k+1} - beta_k, and the hitch
        length holds: P_{k+1} = H_{k+1} - L e(beta_{k+1}), H_{k+1} the ball after the car's arc. Both
        axles therefore roll without side slip to round-off (car.lateral_velocity of either is ~1e-16).
    momentum: w_k^T G xi_k = p_k^+ = p_k^- + impulse_k,  xi_k = (rho u, rho u sigma_{k+a} / l, s_t / h,
        delta / h) the step's twists (s_t the trailer's arc length), p_{k+1}^- = w_{k+1}^T G xi_k.

The unknowns (u_k, delta) solve the momentum equation and the chord condition
    e_perp(beta_k + delta/2) . (H_{k+1}(u_k) - P_k) = L sin(delta / 2)
by Newton with the exact 2 x 2 Jacobian (residual). Without the trailer (m, K of it zero) the step is the
car's. Brake and drive impulses, and their Coulomb clipping, are the car's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import Vehicle
from ..trajectory import ConvergenceError
from . import car
from .car import CarModel, CarState
from .spec import CarTrailerSpec, VehicleStepError

TRAILER_WHEELS = ("trailer_wheel_l", "trailer_wheel_r")
BODIES = ("chassis", *car.WHEELS, "trailer", *TRAILER_WHEELS)
_SMALL = 1e-3  # below this |angle| the sinc-type functions use their series


@dataclass(frozen=True)
class TrailerModel:
    """A compiled car and trailer: the car's model plus the trailer's effective inertias and geometry.

    mass_x (kg) along the trailer's heading and yaw (kg m^2) about its axle centre, both with wheel spin;
    wheel_y (2,): lateral offsets of the trailer wheels (left +, right -) from its axle centre.
    """

    car: CarModel
    spec: CarTrailerSpec
    mass_x: float = field(init=False)
    yaw: float = field(init=False)
    wheel_y: np.ndarray = field(init=False)

    def __post_init__(self):
        s = self.spec
        spin = s.trailer_wheel_inertia / s.trailer_wheel_radius**2
        object.__setattr__(self, "mass_x", s.trailer_mass + 2 * spin)
        object.__setattr__(self, "yaw", s.trailer_yaw_inertia + s.trailer_mass * s.trailer_com_ahead_of_axle**2
                           + spin * s.trailer_track**2 / 2)
        y = np.array([0.5 * s.trailer_track, -0.5 * s.trailer_track])
        y.flags.writeable = False
        object.__setattr__(self, "wheel_y", y)

    @property
    def metric(self) -> np.ndarray:
        """G (4,): the kinetic energy's diagonal on (car speed, car yaw rate, trailer speed, trailer yaw rate)."""
        return np.array([self.car.mass_x, self.car.yaw, self.mass_x, self.yaw])

    def direction(self, gamma: float, sigma: float) -> np.ndarray:
        """w (4,): the four body rates per unit wheel rate u at hitch angle gamma and tan steer sigma."""
        s = self.spec
        rho, l, d, L = s.wheel_radius, s.wheelbase, s.hitch_behind_rear_axle, s.hitch_to_trailer_axle
        k = d * sigma / l
        return rho * np.array([1.0, sigma / l, np.cos(gamma) + k * np.sin(gamma),
                               (np.sin(gamma) - k * np.cos(gamma)) / L])

    def inertia(self, gamma: float, sigma: float) -> float:
        """M = w^T G w (kg m^2 on the wheel rate): the kinetic energy is M u^2 / 2."""
        w = self.direction(gamma, sigma)
        return float(w @ (self.metric * w))


def compile_car_trailer(vehicle: Vehicle, alpha: float = 0.5) -> TrailerModel:
    """The TrailerModel of a Vehicle of type 'car_trailer' (its controls are the car's)."""
    return TrailerModel(car.compile_car(vehicle, alpha), vehicle.spec)


@dataclass
class TrailerState(CarState):
    """The car's node state plus the trailer's heading beta and its two wheels' rolling angles."""

    beta: float = 0.0
    trailer_spin: np.ndarray = field(default_factory=lambda: np.zeros(2))


def start(model: TrailerModel, theta: float, x: float, y: float, speed: float, beta: float | None = None,
          t0: float = 0.0) -> TrailerState:
    """State at t0: the car's rear-axle centre at (x, y) heading theta at forward speed `speed` (m/s), the
    trailer heading beta (default: in line, beta = theta)."""
    c = car.start(model.car, theta, x, y, speed, t0)
    beta = float(theta if beta is None else beta)
    p = model.inertia(theta - beta, c.sigma) * c.u
    return TrailerState(c.k, c.t, c.theta, c.x, c.y, c.psi, c.sigma, p, c.u, c.wheel_spin, beta, np.zeros(2))


def trailer_axle(model: TrailerModel, state: TrailerState) -> np.ndarray:
    """World (x, y) of the trailer's axle centre."""
    s = model.spec
    return (np.array([state.x, state.y]) - s.hitch_behind_rear_axle * _e(state.theta)
            - s.hitch_to_trailer_axle * _e(state.beta))


def _e(angle: float) -> np.ndarray:
    return np.array([np.cos(angle), np.sin(angle)])


def _perp(angle: float) -> np.ndarray:
    return np.array([-np.sin(angle), np.cos(angle)])


def _chord_functions(phi: float) -> tuple[float, float, float, float]:
    """(S, C, S', C') with S = sin(phi)/phi, C = (1 - cos(phi))/phi: an arc of length s turning by phi has
    the chord s (S, C) in its starting frame."""
    if abs(phi) < _SMALL:
        p2 = phi * phi
        return (1 - p2 / 6 + p2 * p2 / 120, phi / 2 - phi * p2 / 24, -phi / 3 + phi * p2 / 30,
                0.5 - p2 / 8 + p2 * p2 / 144)
    sn, cs = np.sin(phi), np.cos(phi)
    return sn / phi, (1 - cs) / phi, (phi * cs - sn) / phi**2, (phi * sn - 1 + cs) / phi**2


def _arc_over_chord(delta: float) -> tuple[float, float]:
    """(q, dq/ddelta), q = (delta/2) / sin(delta/2): an arc turning by delta is q times its chord."""
    z = 0.5 * delta
    if abs(z) < _SMALL:
        z2 = z * z
        return 1 + z2 / 6 + 7 * z2 * z2 / 360, 0.5 * (z / 3 + 7 * z * z2 / 90)
    sn = np.sin(z)
    return z / sn, 0.5 * (sn - z * np.cos(z)) / sn**2


@dataclass(frozen=True)
class StepData:
    """What step k knows before its solve: impulse-updated momentum, steering, the trailer axle."""

    p_plus: float
    sigma_mid: float
    sigma_next: float
    weights: np.ndarray  # G w_k (4,)
    axle: np.ndarray  # P_k (2,)


def residual(model: TrailerModel, state: TrailerState, known: StepData, u: float, delta: float,
             h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R (2,), dR/d(u, delta) (2, 2), xi (4,)) of step k at trial wheel rate u and trailer turn delta.

    R[0] = w_k^T G xi - p_k^+ (momentum, kg m^2/s); R[1] = e_perp(beta_k + delta/2) . (H_{k+1} - P_k)
    - L sin(delta/2) (chord condition, m).
    """
    s = model.spec
    rho, l, d, L = s.wheel_radius, s.wheelbase, s.hitch_behind_rear_axle, s.hitch_to_trailer_axle
    kappa = h * rho * known.sigma_mid / l  # car heading change per unit u
    phi = kappa * u
    S, C, dS, dC = _chord_functions(phi)
    c0, s0 = np.cos(state.theta), np.sin(state.theta)
    rot = np.array([[c0, -s0], [s0, c0]])
    hitch = (np.array([state.x, state.y]) + h * rho * u * (rot @ np.array([S, C]))
             - d * _e(state.theta + phi))
    d_hitch = h * rho * (rot @ np.array([S + phi * dS, C + phi * dC])) - d * kappa * _perp(state.theta + phi)
    D = hitch - known.axle
    mid = state.beta + 0.5 * delta
    n, e = _perp(mid), _e(mid)
    half_s, half_c = np.sin(0.5 * delta), np.cos(0.5 * delta)
    chord = e @ D - L * half_c  # the trailer axle's chord along e(mid)
    q, dq = _arc_over_chord(delta)
    arc = q * chord
    d_arc_du = q * (e @ d_hitch)
    d_arc_dd = q * (0.5 * (n @ D) + 0.5 * L * half_s) + dq * chord
    xi = np.array([rho * u, rho * u * known.sigma_mid / l, arc / h, delta / h])
    R = np.array([known.weights @ xi - known.p_plus, n @ D - L * half_s])
    J = np.array([[known.weights @ np.array([rho, rho * known.sigma_mid / l, d_arc_du / h, 0.0]),
                   known.weights @ np.array([0.0, 0.0, d_arc_dd / h, 1.0 / h])],
                  [n @ d_hitch, -0.5 * (e @ D) - 0.5 * L * half_c]])
    return R, J, xi


def prepare(model: TrailerModel, state: TrailerState, h: float) -> StepData:
    """Step k's knowns: steering at k+1 and k+a, the impulse-updated momentum p_k^+, G w_k and P_k."""
    c, a = model.car, model.car.alpha
    sigma_next = c.sigma(state.t + h)
    sigma_mid = (1 - a) * state.sigma + a * sigma_next
    drive, brake = car._impulses(c, state, h)
    weights = model.metric * model.direction(state.theta - state.beta, state.sigma)
    return StepData(car._apply_impulse(state.p_minus, drive, brake), sigma_mid, sigma_next, weights,
                    trailer_axle(model, state))


def step(model: TrailerModel, state: TrailerState, h: float, tol: float = 1e-8, max_iterations: int = 30) -> int:
    """Advance state by one step of size h; returns the Newton updates taken. Newton stops after an update
    below tol (relative in u, absolute in delta): convergence is quadratic, so the iterate it leaves is
    exact to round-off. Raises ConvergenceError (step, time) when Newton fails and VehicleStepError when
    the chain leaves the model's range; state is then unchanged."""
    known = prepare(model, state, h)
    s = model.spec
    gamma = state.theta - state.beta
    w = model.direction(gamma, state.sigma)
    u = known.p_plus / float(known.weights @ w)
    delta = h * w[3] * u
    for iterations in range(max_iterations + 1):
        R, J, xi = residual(model, state, known, u, delta, h)
        if not np.all(np.isfinite(R)) or iterations == max_iterations:
            raise ConvergenceError(
                f"car with trailer {s.name!r}: Newton did not converge at step {state.k + 1} (t = {state.t:.6g} s) "
                f"after {iterations} iterations: residuals {R[0]:.3g} kg m^2/s, {R[1]:.3g} m; try a smaller time "
                f"step", step=state.k + 1, time=state.t)
        du, dd = np.linalg.solve(J, -R)
        u, delta = u + du, delta + dd
        if abs(du) <= tol * abs(u) and abs(dd) <= tol:
            xi = residual(model, state, known, u, delta, h)[2]
            break
    if abs(delta) >= np.pi / 2:
        raise VehicleStepError(f"car with trailer {s.name!r}: the trailer turns by {np.degrees(delta):.3g} degrees "
                               f"in one step at t = {state.t:.6g} s (jackknifing); use a smaller step")
    arc = xi[2] * h
    car.advance(model.car, state, h, u, known.sigma_mid, known.sigma_next)
    state.trailer_spin = state.trailer_spin + (arc - delta * model.wheel_y) / s.trailer_wheel_radius
    state.beta += delta
    w_next = model.direction(state.theta - state.beta, state.sigma)
    state.p_minus = float((model.metric * w_next) @ xi)
    return iterations + 1


def energy(model: TrailerModel, state: TrailerState, h: float) -> float:
    """Kinetic energy at t_k (J): p^2 / (2 M(gamma_k, sigma_k)) of the node momentum (car.node_momentum)."""
    p = car.node_momentum(model.car, state, h)
    return 0.5 * p * p / model.inertia(state.theta - state.beta, state.sigma)


def poses(model: TrailerModel, state: TrailerState) -> np.ndarray:
    """World poses (8, 7) x y z qw qx qy qz in BODIES order: the car's five (car.poses), the trailer body
    (centre of mass) and its two wheels (centres, turned by beta, then by their rolling angles)."""
    s = model.spec
    out = np.zeros((len(BODIES), 7))
    out[:5] = car.poses(model.car, state)
    axle = trailer_axle(model, state)
    out[5, :2] = axle + s.trailer_com_ahead_of_axle * _e(state.beta)
    out[5, 2] = s.trailer_com_height
    out[5, 3:] = (np.cos(state.beta / 2), 0.0, 0.0, np.sin(state.beta / 2))
    out[6:, :2] = axle + np.outer(model.wheel_y, _perp(state.beta))
    out[6:, 2] = s.trailer_wheel_radius
    out[6:, 3:] = car.wheel_quaternions(np.full(2, state.beta), state.trailer_spin)
    return out

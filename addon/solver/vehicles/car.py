"""The nonholonomic car on SE(2) x shape (seed 001 §5.2.1): explicit discrete connection and momentum step.

Owns the car's reduced model, its step, its node energy and the rolling outputs (wheel spins, Ackermann
angles, poses). Kelly & Murray kinematic car with dynamics: shape r = (psi, sigma), psi the rear-axle
rolling angle, sigma = tan(steer); pose g = (theta, x, y) of the rear-axle centre. The connection
xi = -A(r) u = ((rho/l) sigma u, rho u, 0) makes every step an exact circular arc with no lateral
velocity at the rear axle (rolling without side slip holds to round-off, not to O(h^2)).

Step k (tau = exp, alpha in [0, 1], 1/2 by default, the second-order choice):

    sigma_{k+a} = (1 - a) sigma_k + a sigma_{k+1}            (steering is keyed: sigma_{k+1} = tan(steer(t_{k+1})))
    p_k^+ = p_k^- + impulse_k,  u_k = p_k^+ / (rho^2 m + c sigma_k sigma_{k+a}),   c = rho^2 K / l^2
    g_{k+1} = g_k exp(h ((rho/l) sigma_{k+a} u_k, rho u_k, 0)),  psi_{k+1} = psi_k + h u_k
    p_{k+1}^- = (rho^2 m + c sigma_{k+1} sigma_{k+a}) u_k

the seed's momentum equation (I + rho^2 m)(u_k - u_{k-1}) + c sigma_k (sigma_{k+a} u_k - sigma_{k-1+a} u_{k-1})
= h (a f_{k-1+a} + (1-a) f_{k+a}) written with the rear-wheel inertia moved into m (below). The impulse is
that quadrature of the drive torque; the brake is Coulomb friction on the same impulse: it removes up to
its own impulse from |p| and never reverses it (a held brake keeps a stopped car stopped). The start
gives half the impulse, (1 - a) h f_a, from p_0^- = (rho^2 m + c sigma_0^2) u(0) (leapfrog start).

Inertias: the wheels' spin energy is exactly quadratic in the twist, so it joins the twist inertia:
m = M + 2 (I_r + I_f) / rho^2 along the heading and K = K_com + M b^2 + (I_r + I_f) track^2 / (2 rho^2)
+ 2 I_f l^2 / rho^2 about the rear axle (b: centre of mass ahead of the rear axle). With them the
continuous kinetic energy changes at exactly psi' times the applied torque: steering does no work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import groups
from ..model import Vehicle, VehicleError
from .controls import Signal, signal
from .spec import CarSpec, VehicleStepError

WHEELS = ("wheel_rl", "wheel_rr", "wheel_fl", "wheel_fr")


@dataclass(frozen=True)
class CarModel:
    """A compiled car: effective inertias, wheel geometry and its control signals.

    mass_x: translational inertia along the heading (kg); yaw: rotational inertia about the rear-axle
    centre (kg m^2), both including wheel spin. wheel_xy (4, 2): wheel centres in the rear-axle frame.
    drive(t), brake(t) in N m at the rear-axle rolling angle, steer(t) in rad (clipped to +-max_steer).
    """

    spec: CarSpec
    drive: Signal
    brake: Signal
    steer: Signal
    alpha: float = 0.5
    mass_x: float = field(init=False)
    yaw: float = field(init=False)
    wheel_xy: np.ndarray = field(init=False)

    def __post_init__(self):
        s = self.spec
        spin = s.rear_wheel_inertia + s.front_wheel_inertia
        object.__setattr__(self, "mass_x", s.mass + 2 * spin / s.wheel_radius**2)
        object.__setattr__(self, "yaw", s.yaw_inertia + s.mass * s.com_ahead_of_rear_axle**2
                           + spin * s.track**2 / (2 * s.wheel_radius**2)
                           + 2 * s.front_wheel_inertia * s.wheelbase**2 / s.wheel_radius**2)
        half = 0.5 * s.track
        xy = np.array([[0.0, half], [0.0, -half], [s.wheelbase, half], [s.wheelbase, -half]])
        xy.flags.writeable = False
        object.__setattr__(self, "wheel_xy", xy)
        if not 0.0 <= self.alpha <= 1.0:
            raise VehicleError(f"car {s.name!r}: quadrature point alpha must lie in [0, 1], got {self.alpha!r}")

    @property
    def coupling(self) -> float:
        """c = rho^2 K / l^2, the steering-dependent share of the rolling inertia."""
        s = self.spec
        return s.wheel_radius**2 * self.yaw / s.wheelbase**2

    def rolling_inertia(self, sigma_a: float, sigma_b: float) -> float:
        """rho^2 m + c sigma_a sigma_b: maps the wheel rate u to the momentum p (sigma_a = sigma_b: the energy's)."""
        return self.spec.wheel_radius**2 * self.mass_x + self.coupling * sigma_a * sigma_b

    def sigma(self, t: float) -> float:
        """tan of the keyed steering angle at t, the angle clipped to the rack's +-max_steer."""
        limit = self.spec.max_steer
        return math.tan(min(max(self.steer(t), -limit), limit))


def compile_car(vehicle: Vehicle, alpha: float = 0.5) -> CarModel:
    """The CarModel of a Vehicle of type 'car' (its controls become signals)."""
    return CarModel(vehicle.spec, signal(vehicle.control("drive_torque")), signal(vehicle.control("brake_torque")),
                    signal(vehicle.control("steer")), alpha)


@dataclass
class CarState:
    """Node k: time, rear-axle pose (theta, x, y), rolling angle psi, sigma_k, the left momentum p_k^-,
    the last wheel rate u_{k-1} (u(0) at the start) and the four wheels' own rolling angles (WHEELS order)."""

    k: int
    t: float
    theta: float
    x: float
    y: float
    psi: float
    sigma: float
    p_minus: float
    u: float
    wheel_spin: np.ndarray


def start(model: CarModel, theta: float, x: float, y: float, speed: float, t0: float = 0.0) -> CarState:
    """State at t0 with the rear-axle centre at (x, y), heading theta, forward speed `speed` (m/s)."""
    sigma = model.sigma(t0)
    u = speed / model.spec.wheel_radius
    return CarState(0, float(t0), float(theta), float(x), float(y), 0.0, sigma,
                    model.rolling_inertia(sigma, sigma) * u, u, np.zeros(4))


def _apply_impulse(p: float, drive: float, brake: float) -> float:
    """p + drive, then Coulomb braking: |p| shrinks by up to `brake` (>= 0) and never changes sign."""
    p = p + drive
    return float(np.sign(p) * max(abs(p) - abs(brake), 0.0))


def _impulses(model: CarModel, state: CarState, h: float) -> tuple[float, float]:
    """(drive, brake) impulses at node k: a h f_{k-1+a} + (1-a) h f_{k+a}, without the first term at the start."""
    return (quadrature(model.drive, model.alpha, state.k, state.t, h),
            quadrature(model.brake, model.alpha, state.k, state.t, h))


def quadrature(force: Signal, alpha: float, k: int, t: float, h: float) -> float:
    """The impulse of `force` at node k (time t): a h f(t - (1-a) h) + (1-a) h f(t + a h), the first term
    only after the start (k > 0)."""
    impulse = (1 - alpha) * h * force(t + alpha * h)
    if k > 0:
        impulse += alpha * h * force(t - (1 - alpha) * h)
    return impulse


def arc(theta: float, x: float, y: float, turn: float, length: float) -> tuple[float, float, float]:
    """The planar pose (theta, x, y) after an exact circular arc of `length` turning by `turn` (rad), i.e.
    g exp((turn, length, 0)) on SE(2)."""
    chord_x, chord_y = groups.se2_exp_translation(turn, length, 0.0)
    c, sn = math.cos(theta), math.sin(theta)
    return theta + turn, x + c * chord_x - sn * chord_y, y + sn * chord_x + c * chord_y


def ackermann_steer(sigma: float | np.ndarray, wheel_xy: np.ndarray, wheelbase: float) -> np.ndarray:
    """Ackermann steering angle (..., W) in (-pi/2, pi/2] of wheels at `wheel_xy` (W, 2) (rear-axle frame:
    x ahead, y left) for sigma (...) = tan of the steer on a car of wheelbase l.

    Each wheel points along its centre's velocity (1 - sigma py / l, sigma px / l): angle
    atan(sigma px / (l - sigma py)), the same for every speed; a wheel on the rear axle (px = 0) gets 0.
    """
    sigma = np.asarray(sigma, dtype=float)[..., None]
    px, py = wheel_xy[:, 0], wheel_xy[:, 1]
    angle = np.arctan2(sigma * px, wheelbase - sigma * py)
    return np.where(angle > np.pi / 2, angle - np.pi, np.where(angle <= -np.pi / 2, angle + np.pi, angle))


def wheel_arcs(wheel_xy: np.ndarray, d_s: float | np.ndarray, d_theta: float | np.ndarray,
               steered: bool | np.ndarray) -> np.ndarray:
    """Signed arc (..., W) rolled by wheels at `wheel_xy` (W, 2) (rear-axle frame) while the rear-axle
    centre runs d_s (...) along the heading and the chassis turns by d_theta (...).

    A wheel centre moves (d_s - d_theta py, d_theta px) in chassis axes: over a step that is an exact
    circular arc (car.arc), its displacement, of length exactly its arc; with rates, its velocity. A
    steered wheel (`steered` (W,) or one bool) points along it and rolls its length, signed by its
    component along the heading; a fixed wheel rolls that component.
    """
    d_s, d_theta = np.asarray(d_s, dtype=float)[..., None], np.asarray(d_theta, dtype=float)[..., None]
    along = d_s - d_theta * wheel_xy[:, 1]
    across = d_theta * wheel_xy[:, 0]
    return np.where(steered, np.copysign(np.hypot(along, across), along), along)


def wheel_steer(model: CarModel, sigma: float) -> np.ndarray:
    """Ackermann steering angle of the model's wheels (4,), WHEELS order (ackermann_steer): rear wheels 0."""
    return ackermann_steer(sigma, model.wheel_xy, model.spec.wheelbase)


def wheel_rates(model: CarModel, sigma: float) -> np.ndarray:
    """Rolling rate of each wheel per unit rear-axle rate u, (4,), WHEELS order (signed: negative rolls back):
    its centre's speed along its own Ackermann heading, over rho (wheel_arcs at d_s = rho, d_theta =
    rho sigma / l, over rho)."""
    return wheel_arcs(model.wheel_xy, 1.0, sigma / model.spec.wheelbase, True)


def step(model: CarModel, state: CarState, h: float) -> float:
    """Advance state by one explicit step of size h; returns u_k, the rear-axle rate on the step."""
    s, a = model.spec, model.alpha
    sigma_next = model.sigma(state.t + h)
    sigma_mid = (1 - a) * state.sigma + a * sigma_next
    inertia = model.rolling_inertia(state.sigma, sigma_mid)
    if not inertia > 0:
        raise VehicleStepError(f"car {s.name!r}: steering reverses too fast at t = {state.t:.6g} s "
                           f"(tan steer {state.sigma:.3g} -> {sigma_next:.3g} in one step); use a smaller step")
    drive, brake = _impulses(model, state, h)
    u = _apply_impulse(state.p_minus, drive, brake) / inertia
    advance(model, state, h, u, sigma_mid, sigma_next)
    state.p_minus = model.rolling_inertia(sigma_next, sigma_mid) * u
    return u


def advance(model: CarModel, state: CarState, h: float, u: float, sigma_mid: float, sigma_next: float) -> None:
    """Move the car's pose, rolling angles, steering and clock over step k at wheel rate u: the exact arc
    g_{k+1} = g_k exp(h ((rho/l) sigma_mid u, rho u, 0)). The momentum p_minus is the caller's to set."""
    s = model.spec
    rho, l = s.wheel_radius, s.wheelbase
    state.theta, state.x, state.y = arc(state.theta, state.x, state.y, h * rho / l * sigma_mid * u, h * rho * u)
    state.psi += h * u
    state.wheel_spin = state.wheel_spin + h * u * wheel_rates(model, sigma_mid)
    state.sigma = sigma_next
    state.u = u
    state.k += 1
    state.t += h


def node_momentum(model: CarModel, state: CarState, h: float) -> float:
    """Rolling momentum at t_k: p_k^- plus segment k-1's share a h f_{k-1+a} of its impulse (p(0) at the start)."""
    if state.k == 0:
        return state.p_minus
    a, t = model.alpha, state.t - h
    return _apply_impulse(state.p_minus, a * h * model.drive(t + a * h), a * h * model.brake(t + a * h))


def energy(model: CarModel, state: CarState, h: float) -> float:
    """Kinetic energy at t_k (J), p^2 / (2 (rho^2 m + c sigma_k^2)); the car has no potential energy."""
    p = node_momentum(model, state, h)
    return 0.5 * p * p / model.rolling_inertia(state.sigma, state.sigma)


def lateral_velocity(theta0: float, x0: float, y0: float, theta1: float, x1: float, y1: float, h: float) -> float:
    """Side-slip speed at the rear axle over one step, from two poses (m/s).

    A step with no side slip is a circular arc tangent to the heading, so its chord leaves at half the
    heading change: the chord's component normal to theta0 + (theta1 - theta0)/2, divided by h.
    """
    mid = theta0 + 0.5 * (theta1 - theta0)
    return (-np.sin(mid) * (x1 - x0) + np.cos(mid) * (y1 - y0)) / h


def _quat_z(angle: np.ndarray) -> np.ndarray:
    angle = np.asarray(angle, dtype=float)
    return np.stack([np.cos(angle / 2), 0 * angle, 0 * angle, np.sin(angle / 2)], -1)


def poses(model: CarModel, state: CarState) -> np.ndarray:
    """World poses (5, 7) x y z qw qx qy qz of the chassis (centre of mass) and the WHEELS (wheel centres;
    each turned by its steering angle about z, then by its rolling angle about its axle, body y)."""
    return pose_rows(model, state.theta, state.x, state.y, state.sigma, state.wheel_spin)


def pose_rows(model: CarModel, theta, x, y, sigma, wheel_spin) -> np.ndarray:
    """poses() at many nodes at once: rear-axle poses theta, x, y (...), tan of the steer sigma (...) and wheel
    rolling angles wheel_spin (..., 4) -> (..., 5, 7)."""
    s = model.spec
    theta, x, y = (np.asarray(v, dtype=float)[..., None] for v in (theta, x, y))
    c, sn = np.cos(theta), np.sin(theta)
    out = np.zeros(theta.shape[:-1] + (5, 7))
    b = s.com_ahead_of_rear_axle
    out[..., 0, 0], out[..., 0, 1] = (x + b * c)[..., 0], (y + b * sn)[..., 0]
    out[..., 0, 2] = s.com_height
    out[..., 0, 3:] = _quat_z(theta[..., 0])
    px, py = model.wheel_xy[:, 0], model.wheel_xy[:, 1]
    out[..., 1:, 0] = x + c * px - sn * py
    out[..., 1:, 1] = y + sn * px + c * py
    out[..., 1:, 2] = s.wheel_radius
    out[..., 1:, 3:] = wheel_quaternions(theta + wheel_steer(model, sigma), wheel_spin)
    return out


def wheel_quaternions(yaw: np.ndarray, spin: np.ndarray) -> np.ndarray:
    """World quaternions (..., 4) of wheels turned by `yaw` about z, then by `spin` about their axle (body y)."""
    q = _quat_z(yaw)
    half = 0.5 * np.asarray(spin, dtype=float)
    cs, ss = np.cos(half), np.sin(half)  # spin quaternion (cs, 0, ss, 0) about y; yaw (w, 0, 0, z) about z
    return np.stack([q[..., 0] * cs, -q[..., 3] * ss, q[..., 0] * ss, q[..., 3] * cs], -1)

"""The car on tyres that slip: a planar rigid chassis on SE(2) with brush-model tyre forces, implicit Lie group step.

Owns the slip car's model (chassis inertia, tyres, axle loads), its tyre forces with their exact velocity
Jacobian, its step, node energy and momentum, and its outputs (poses, wheel angles). The kinematic car
(car.py) stays the car of every keyed bake; this one runs where the tyres must slide (the drift driver,
drift.py).

Chassis: body frame at the centre of mass (x ahead, y left), pose g in SE(2), body twist xi = (r, vx, vy),
inertia I = diag(J, m, m). The wheels roll freely on the ground (no wheelspin state: their spin inertia, which
car.py folds into the rolling inertia under its no-slip constraint, is left out).
Axles: front a = l - b ahead of the centre of mass, rear b behind it (b: com_ahead_of_rear_axle); static
loads Fz_f = m g b / l, Fz_r = m g a / l (no load transfer). Each axle is one tyre (the bicycle model) whose
contact moves at (u, w) = P xi in the wheel's own axes, P_r = [[0, 1, 0], [-b, 0, 1]] and
P_f = R(-delta) [[0, 1, 0], [a, 0, 1]]; the axle force F_w in wheel axes gives the body wrench P^T F_w
(torque; force), its power F_w . (u, w) exactly.

Tyre (`axle_force`): the brush model with a parabolic pressure (Fiala; Pacejka, Tyre and Vehicle Dynamics,
ch. 3): with z = tan(alpha) = w / max(|u|, low_speed), cornering stiffness C and grip F_m,
    F_y = -sign(z) F_m (1 - (1 - |z| / z_s)^3) for |z| < z_s = 3 F_m / C,   -sign(z) F_m beyond (sliding).
Combined slip (a friction ellipse, as in Hindiyeh & Gerdes, "A controller framework for autonomous drifting",
2014): the longitudinal force F_x of the axle (drive torque / rho at the driven rear axle, the brake split by
static load, each within 0.99 mu Fz) leaves the lateral grip F_m = sqrt((mu Fz)^2 - F_x^2), so throttle
breaks the rear loose. The brake opposes u, saturating linearly below low_speed. Below low_speed the slip
angle's speed is held at low_speed (the tyre becomes a stiff damper at a standstill).

Step k (the holonomic step of holonomic.py on SE(2), tau = cay, the exact C = se2_dcay_inv; seed 001 §3.1):
    C(h xi_k)^T I xi_k = mu_k^- + h f(t_k, (xi_{k-1} + xi_k) / 2),   mu_k^- = C(-h xi_{k-1})^T I xi_{k-1},
    g_{k+1} = g_k cay(h xi_k),
solved by Newton with the exact Jacobian (the tyres' d f / d xi included); the start gives half the impulse.
Controls are read once per step at t_k. Without forces the spatial momentum is conserved to round-off.
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import groups
from ..model import Vehicle, VehicleError
from ..trajectory import ConvergenceError
from . import car
from .controls import Signal, signal
from .spec import CarSpec

GRAVITY = 9.81
LONGITUDINAL_SHARE = 0.99  # the largest |F_x| / (mu Fz) an axle transmits: the rest of the grip stays lateral


@dataclass(frozen=True)
class Tyres:
    """Tyre parameters: friction coefficient mu, cornering stiffness per unit axle load (1/rad) front and rear,
    and the speed (m/s) below which the slip angle is regularised."""

    friction: float = 1.0  # dry asphalt
    front_cornering: float = 10.0  # C_f / Fz_f, 1/rad (0.17 per degree; Gillespie, Fundamentals of Vehicle Dynamics)
    rear_cornering: float = 12.0  # wider or stiffer rear tyres: the car understeers mildly
    low_speed: float = 1.0

    def __post_init__(self):
        for key in ("friction", "front_cornering", "rear_cornering", "low_speed"):
            value = getattr(self, key)
            if not (math.isfinite(value) and (value >= 0 if key == "friction" else value > 0)):
                bound = ">= 0 (0: ice, no tyre force)" if key == "friction" else "> 0"
                raise VehicleError(f"tyres: field '{key}' must be a finite number {bound}, got {value!r}")


DEFAULT_TYRES = Tyres()


@dataclass(frozen=True)
class SlipCarModel:
    """A compiled slip car: spec, tyres, control signals (drive and brake torque N m at the rear-axle
    coordinate, steer rad) and the derived axle geometry, loads, stiffnesses and inertia (3, 3) on (r, vx, vy)."""

    spec: CarSpec
    tyres: Tyres
    drive: Signal
    brake: Signal
    steer: Signal
    gravity: float = GRAVITY
    front: float = field(init=False)  # a, m
    rear: float = field(init=False)  # b, m
    load: np.ndarray = field(init=False)  # (Fz_f, Fz_r) N
    stiffness: np.ndarray = field(init=False)  # (C_f, C_r) N/rad
    inertia: np.ndarray = field(init=False)
    wheel_xy: np.ndarray = field(init=False)  # (4, 2) wheel centres from the centre of mass, car.WHEELS order

    def __post_init__(self):
        s, t = self.spec, self.tyres
        b = s.com_ahead_of_rear_axle
        a = s.wheelbase - b
        if not a > 0:
            raise VehicleError(f"car {s.name!r}: the centre of mass must lie ahead of the rear axle and behind the "
                               f"front one for tyres to carry it (com_ahead_of_rear_axle {b} of wheelbase "
                               f"{s.wheelbase})")
        load = s.mass * self.gravity * np.array([b, a]) / s.wheelbase
        stiffness = np.array([t.front_cornering, t.rear_cornering]) * load
        inertia = np.diag([s.yaw_inertia, s.mass, s.mass])
        xy = car.CarModel(s, self.drive, self.brake, self.steer).wheel_xy - np.array([b, 0.0])
        for name, value in (("front", a), ("rear", b), ("load", load), ("stiffness", stiffness),
                            ("inertia", inertia), ("wheel_xy", xy)):
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(self, name, value)

    def steer_angle(self, t: float) -> float:
        """The steering angle (rad) at t, clipped to the rack's +-max_steer."""
        return float(np.clip(self.steer(t), -self.spec.max_steer, self.spec.max_steer))

    def axle_maps(self, delta: float) -> np.ndarray:
        """P (2, 2, 3): the front and rear axles' contact velocities (u, w) in wheel axes per body twist."""
        c, s = math.cos(delta), math.sin(delta)
        front = np.array([[c, s], [-s, c]]) @ np.array([[0.0, 1.0, 0.0], [self.front, 0.0, 1.0]])
        return np.array([front, [[0.0, 1.0, 0.0], [-self.rear, 0.0, 1.0]]])

    def longitudinal(self, drive: float, brake: float) -> tuple[np.ndarray, np.ndarray]:
        """(drive force (2,), brake force magnitude (2,)) per axle (front, rear), N: the drive on the rear, the
        brake split by the static loads."""
        rho = self.spec.wheel_radius
        share = self.load / self.load.sum()
        return np.array([0.0, drive / rho]), abs(brake) / rho * share


def compile_slip_car(vehicle: Vehicle, tyres: Tyres = DEFAULT_TYRES, gravity: float = GRAVITY) -> SlipCarModel:
    """The SlipCarModel of a Vehicle of type 'car' on `tyres`."""
    if vehicle.type != "car":
        raise VehicleError(f"vehicle {vehicle.name!r}: tyres that slip are modelled for a car, got a {vehicle.type}")
    return SlipCarModel(vehicle.spec, tyres, signal(vehicle.control("drive_torque")),
                        signal(vehicle.control("brake_torque")), signal(vehicle.control("steer")), gravity)


def lateral_force(z: float, grip: float, stiffness: float) -> tuple[float, float, float]:
    """The brush tyre's lateral force (N) at z = tan(slip angle), grip F_m and cornering stiffness C, with its
    derivatives by z and by F_m."""
    if grip <= 0.0:
        return 0.0, 0.0, 0.0
    z_s = 3.0 * grip / stiffness
    sign = 1.0 if z >= 0 else -1.0
    s = abs(z) / z_s
    if s >= 1.0:
        return -sign * grip, 0.0, -sign
    rest = 1.0 - s
    force = -sign * grip * (1.0 - rest**3)
    d_z = -stiffness * rest**2
    d_grip = -sign * (1.0 - rest**3) + sign * 3.0 * rest**2 * s  # s = |z| C / (3 F_m) falls as F_m grows
    return force, d_z, d_grip


def grip_for(force: float, z: float, stiffness: float) -> float:
    """The grip F_m at which the brush tyre at z = tan(slip angle) gives the lateral force magnitude `force`
    (N): the inverse of lateral_force in F_m, by bisection on its monotone rise (for drift.py)."""
    low, high = abs(force), max(abs(force), abs(z) * stiffness / 3.0 + abs(force))
    if abs(z) * stiffness <= abs(force):  # even infinite grip is linear: C |z| < force
        return math.inf
    for _ in range(60):
        mid = 0.5 * (low + high)
        if abs(lateral_force(z, mid, stiffness)[0]) < abs(force):
            low = mid
        else:
            high = mid
    return high


def slip_of(force: float, grip: float, stiffness: float) -> float:
    """The z = tan(slip angle) at which the brush tyre gives lateral force `force` (N, |force| < grip): the
    inverse of lateral_force on its rising branch."""
    ratio = min(abs(force) / grip, 1.0)
    z = 3.0 * grip / stiffness * (1.0 - (1.0 - ratio) ** (1.0 / 3.0))
    return -math.copysign(z, force)


def axle_force(velocity: np.ndarray, drive: float, brake: float, load: float, stiffness: float,
               tyres: Tyres) -> tuple[np.ndarray, np.ndarray]:
    """Force (2,) in wheel axes (longitudinal, lateral) of one axle whose contact moves at velocity (u, w), and
    its Jacobian (2, 2) by (u, w). drive: driving force (N); brake: braking force magnitude (N), against u."""
    u, w = float(velocity[0]), float(velocity[1])
    low = tyres.low_speed
    most = tyres.friction * load
    if most <= 0.0:
        return np.zeros(2), np.zeros((2, 2))
    brake_fx = -brake * u / low if abs(u) < low else -math.copysign(brake, u)
    dbrake_du = -brake / low if abs(u) < low else 0.0
    fx = drive + brake_fx
    limit = LONGITUDINAL_SHARE * most
    dfx_du = dbrake_du if abs(fx) < limit else 0.0
    fx = float(np.clip(fx, -limit, limit))
    grip = math.sqrt(most * most - fx * fx)
    dgrip_du = -fx / grip * dfx_du
    speed = max(abs(u), low)
    z = w / speed
    dz_dw = 1.0 / speed
    dz_du = -z / speed * math.copysign(1.0, u) if abs(u) > low else 0.0
    fy, dfy_dz, dfy_dgrip = lateral_force(z, grip, stiffness)
    jac = np.array([[dfx_du, 0.0], [dfy_dz * dz_du + dfy_dgrip * dgrip_du, dfy_dz * dz_dw]])
    return np.array([fx, fy]), jac


def wrench(model: SlipCarModel, xi: np.ndarray, delta: float, drive: float,
           brake: float) -> tuple[np.ndarray, np.ndarray]:
    """Body wrench (3,) (torque; force) of both axles at body twist xi (3,) and its Jacobian (3, 3) by xi."""
    maps = model.axle_maps(delta)
    drives, brakes = model.longitudinal(drive, brake)
    f, df = np.zeros(3), np.zeros((3, 3))
    for i in range(2):
        force, jac = axle_force(maps[i] @ xi, drives[i], brakes[i], model.load[i], model.stiffness[i], model.tyres)
        f += maps[i].T @ force
        df += maps[i].T @ jac @ maps[i]
    return f, df


@dataclass
class SlipCarState:
    """Node k: time, pose g (3, 3) of the centre of mass, the last twist xi_{k-1} (the start twist at k = 0),
    the left momentum mu_k^- (3,), the controls of the last step (delta rad, drive and brake N m), the rear
    axle's rolling angle psi (rad) and the four wheels' (car.WHEELS order)."""

    k: int
    t: float
    g: np.ndarray
    xi_prev: np.ndarray
    mu_minus: np.ndarray
    delta: float = 0.0
    drive: float = 0.0
    brake: float = 0.0
    psi: float = 0.0
    wheel_spin: np.ndarray = field(default_factory=lambda: np.zeros(4))

    rear: float = 0.0  # b, m: the rear axle behind the centre of mass (the model's)
    radius: float = 1.0  # m, the wheel radius (for u)

    @property
    def theta(self) -> float:
        """Heading (rad)."""
        return float(math.atan2(self.g[1, 0], self.g[0, 0]))

    @property
    def x(self) -> float:
        """World x (m) of the rear-axle centre, as car.CarState's (the controllers steer it)."""
        return float(self.g[0, 2] - self.rear * self.g[0, 0])

    @property
    def y(self) -> float:
        """World y (m) of the rear-axle centre."""
        return float(self.g[1, 2] - self.rear * self.g[1, 0])

    @property
    def u(self) -> float:
        """The rear axle's speed along the heading over the wheel radius (rad/s), as car.CarState's."""
        return float(self.xi_prev[1] / self.radius)


def start(model: SlipCarModel, theta: float, x: float, y: float, xi: np.ndarray, t0: float = 0.0) -> SlipCarState:
    """State at t0 with the centre of mass at (x, y), heading theta and body twist xi = (r, vx, vy) there."""
    xi = np.asarray(xi, dtype=float)
    return SlipCarState(0, float(t0), groups.se2_element(theta, x, y), xi.copy(), model.inertia @ xi,
                        model.steer_angle(t0), rear=model.rear, radius=model.spec.wheel_radius)


def rolling_start(model: SlipCarModel, theta: float, x: float, y: float, speed: float,
                  t0: float = 0.0) -> SlipCarState:
    """The kinematic car's start (car.start's rear axle at (x, y)): no side slip at the rear axle, the yaw rate
    of the keyed steer, forward speed `speed` (m/s)."""
    b = model.rear
    r = speed * math.tan(model.steer_angle(t0)) / model.spec.wheelbase
    return start(model, theta, x + b * math.cos(theta), y + b * math.sin(theta), np.array([r, speed, b * r]), t0)


def residual(model: SlipCarModel, state: SlipCarState, xi: np.ndarray,
             h: float) -> tuple[np.ndarray, np.ndarray, float]:
    """DEP residual (3,) at node k for a trial xi_k, its exact Jacobian (3, 3) and its scale (see holonomic)."""
    weight, share = (0.5 * h, 0.0) if state.k == 0 else (h, 0.5)
    node = state.xi_prev if state.k == 0 else 0.5 * (state.xi_prev + xi)
    f, df = wrench(model, node, state.delta, state.drive, state.brake)
    mu = model.inertia @ xi
    hx = h * xi
    transported = groups.se2_dcay_inv(hx).T @ mu
    # d/dxi of C(h xi)^T mu at fixed mu: C^T mu = mu - (h/2) ad_xi^T mu + (h^2 r / 4) (xi . mu) e_0
    d_ad = np.array([[0.0, -mu[2], mu[1]], [mu[2], 0.0, 0.0], [-mu[1], 0.0, 0.0]])
    d_cay = -0.5 * h * d_ad
    d_cay[0] += 0.25 * h * h * (hx[0] / h * mu + (xi @ mu) * np.array([1.0, 0.0, 0.0]))
    J = groups.se2_dcay_inv(hx).T @ model.inertia + d_cay - weight * share * df
    R = transported - state.mu_minus - weight * f
    scale = (np.abs(transported).max() + np.abs(state.mu_minus).max()
             + weight * (np.abs(f).max() + model.spec.mass * model.gravity))
    return R, J, float(scale)


def step(model: SlipCarModel, state: SlipCarState, h: float, tol: float = 1e-12, max_iterations: int = 30) -> int:
    """Read the controls at t_k, solve the DEP for xi_k by Newton, move state to node k+1; returns the
    Newton updates. Raises ConvergenceError (step, time, residual) after max_iterations, state unchanged."""
    state.delta = model.steer_angle(state.t)
    state.drive, state.brake = float(model.drive(state.t)), float(model.brake(state.t))
    xi = state.xi_prev.copy()
    for iterations in range(max_iterations + 1):
        R, J, scale = residual(model, state, xi, h)
        error = float(np.abs(R).max())
        if error <= tol * scale:
            break
        if not np.all(np.isfinite(R)) or iterations == max_iterations:
            raise ConvergenceError(
                f"car {model.spec.name!r} on tyres: Newton did not converge at step {state.k + 1} "
                f"(t = {state.t:.6g} s) after {iterations} iterations: momentum residual {error:.3g} (tolerance {tol:g} relative); try a "
                f"smaller time step", step=state.k + 1, time=state.t)
        xi = xi - np.linalg.solve(J, R)
    state.g = state.g @ groups.se2_cay(h * xi)
    state.mu_minus = groups.se2_dcay_inv(-h * xi).T @ (model.inertia @ xi)
    state.xi_prev = xi
    state.psi += h * xi[1] / model.spec.wheel_radius
    state.wheel_spin = state.wheel_spin + h * wheel_rates(model, xi, state.delta)
    state.k += 1
    state.t += h
    return iterations


def wheel_rates(model: SlipCarModel, xi: np.ndarray, delta: float) -> np.ndarray:
    """Rolling rate (4,) (rad/s, car.WHEELS order) of each wheel at body twist xi: its centre's speed along its own
    heading (the front wheels turned by their Ackermann angle of delta) over rho, free rolling (no wheelspin)."""
    r, vx, vy = xi
    px, py = model.wheel_xy[:, 0], model.wheel_xy[:, 1]
    heading = wheel_steer(model, delta)
    along = (vx - r * py) * np.cos(heading) + (vy + r * px) * np.sin(heading)
    return along / model.spec.wheel_radius


def wheel_steer(model: SlipCarModel, delta: float) -> np.ndarray:
    """Ackermann steering angles (4,) of the wheels (car.WHEELS order) for the bicycle angle delta."""
    return car.ackermann_steer(math.tan(delta), model.wheel_xy + np.array([model.rear, 0.0]), model.spec.wheelbase)


def node_momentum(model: SlipCarModel, state: SlipCarState, h: float) -> np.ndarray:
    """Body momentum (3,) at t_k: mu_k^- + (h/2) f(t_k, I^-1 mu_k^-) with the last step's controls (mu(0) at the
    start)."""
    if state.k == 0:
        return state.mu_minus
    xi = np.linalg.solve(model.inertia, state.mu_minus)
    return state.mu_minus + 0.5 * h * wrench(model, xi, state.delta, state.drive, state.brake)[0]


def energy(model: SlipCarModel, state: SlipCarState, h: float) -> float:
    """Kinetic energy (J) of the node momentum; flat ground, no potential."""
    mu = node_momentum(model, state, h)
    return float(0.5 * mu @ np.linalg.solve(model.inertia, mu))


def spatial_momentum(model: SlipCarModel, state: SlipCarState, h: float) -> np.ndarray:
    """World momentum Ad_{g^-1}^T mu (3,) at t_k (angular about the world origin; linear)."""
    return groups.se2_Ad(np.linalg.inv(state.g)).T @ node_momentum(model, state, h)


def body_slip(xi: np.ndarray) -> float:
    """Body slip angle beta = atan2(vy, vx) (rad) of the centre of mass at twist xi: + the velocity left of the nose."""
    return float(math.atan2(xi[2], xi[1]))


def rear_slip(model: SlipCarModel, xi: np.ndarray) -> float:
    """Rear slip angle atan2(vy - b r, vx) (rad) at twist xi."""
    return float(math.atan2(xi[2] - model.rear * xi[0], xi[1]))


def poses(model: SlipCarModel, state: SlipCarState) -> np.ndarray:
    """World poses (5, 7) x y z qw qx qy qz of the chassis (centre of mass) and the WHEELS, as car.poses."""
    s = model.spec
    theta = state.theta
    c, sn = math.cos(theta), math.sin(theta)
    out = np.zeros((5, 7))
    out[0, :3] = (state.g[0, 2], state.g[1, 2], s.com_height)
    out[0, 3:] = (math.cos(theta / 2), 0.0, 0.0, math.sin(theta / 2))
    px, py = model.wheel_xy[:, 0], model.wheel_xy[:, 1]
    out[1:, 0] = state.g[0, 2] + c * px - sn * py
    out[1:, 1] = state.g[1, 2] + sn * px + c * py
    out[1:, 2] = s.wheel_radius
    out[1:, 3:] = car.wheel_quaternions(theta + wheel_steer(model, state.delta), state.wheel_spin)
    return out

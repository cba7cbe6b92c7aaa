"""Path following with a drift: the driver's speed profile where the tyres grip, a held rear slip angle where keyed.

`DriftDriver` drives the slip car (slip_car.py). Where the keyed drift angle is 0 it is the grip driver
(driver.py: speed profile, steer to the curvature kappa_ref - 2 e_theta / L - e / L^2, with e and e_theta now the
offset and course error of the centre of mass, so the tyres' slip is steered out), slowing with the brake on
all four wheels (slip_car.py splits it by load) instead of the driven rear axle alone, whose grip a corner needs.
Where it is set, it is the rear axle's slip angle alpha_r = atan((vy - b r) / vx) (b: the centre of mass to the
rear axle, r: the yaw rate) the car holds, at alpha_r* = -drift(t) sign(kappa_c) (the tail out of the turn; 0 on a
straight, fading in below a curvature of 1 / DRIFT_RADIUS, and 0 below MIN_DRIFT_SPEED; kappa_c the corner's
curvature PREVIEW ahead), by throttle and counter-steer, as a driver drifts (the allocation of Hindiyeh & Gerdes,
"A controller framework for autonomous drifting", 2014, made explicit per step). The controller regulates the body
slip angle beta = atan2(vy, vx) of the centre of mass; each step the rear target becomes its body slip goal in the
corner's steady turn (yaw rate r_c = V kappa_c): tan(beta*) = tan(alpha_r*) + b r_c / vx, the body slip smaller
than the rear's by about atan(b kappa_c). A rear target of 0 is the grip driver (once the rear tyre grips again).

- Path: the course chi = theta + beta of the centre of mass follows the tracking law's curvature
  kappa = kappa_ref - 2 e_chi / L - e / L^2 (e, e_chi: its offset left of the path and its course error), so
  the force normal to the velocity wanted is F_n = m V^2 kappa.
- Slip: beta' = chi' - r, so the yaw rate r* = V kappa - k_beta (beta* - beta) brings beta to beta* at the rate
  k_beta; the yaw moment wanted is M = J k_r (r* - r).
- Allocation: with the rear force (F_xr, F_yr) and the front wheel's lateral force F_yf (wheel axes, steered by
  delta), the normal force and the moment give F_y (body) = (F_n + sin(beta) (F_xr - F_yf sin delta)) / cos(beta),
  F_yf cos(delta) = (M + b F_y) / l and F_yr = (a F_y - M) / l (iterated three times on F_xr).
- Throttle: the rear tyre at its present slip gives F_yr when its grip is F_m = sqrt((mu Fz_r)^2 - F_xr^2)
  (slip_car.grip_for), so F_xr = sqrt((mu Fz_r)^2 - F_m^2): the throttle sets the sliding rear's side force.
- Counter-steer: the front slip that gives F_yf (slip_car.slip_of, within 95 % of the front grip) and the front
  axle's velocity angle gamma_f give delta = gamma_f - atan(z_f): with the tail out gamma_f is far off the
  heading, and delta points the front wheels down the road against the turn.

In a drift the speed is what the slide settles at (a drift of a given slip on a given radius has one speed);
the speed profile takes over again once the rear tyre's slip is back below RECOVERED of its sliding slip.
Controls are computed once per
step from the solved state at node k (the car's one-step delay).
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..model import Control, Mechanism
from ..trajectory import Trajectory
from .controls import signal
from .driver import Driver, Limits
from .pursuit import DEFAULT_LOOKAHEAD_TIME, car_start, follow
from .slip_car import DEFAULT_TYRES, LONGITUDINAL_SHARE, SlipCarModel, Tyres, compile_slip_car, grip_for, slip_of

SLIP_RATE = 2.5  # 1/s: k_beta, the slip angle's rate toward its target
MAX_SLIP_RATE = 0.6  # rad/s: the slip angle turns toward its target at most this fast (a flick, not a spin)
YAW_RATE = 8.0  # 1/s: k_r, the yaw rate loop
PREVIEW = 0.3  # s: the drift target is the corner's this far ahead, so the slip turns as the corner begins
DRIFT_RADIUS = 60.0  # m: below this radius the full drift angle applies; on straighter path it fades to 0
RECOVERED = 0.5  # without a target, the grip driver drives again once the rear slips below this share of sliding
FRONT_USE = 0.95  # the share of the front grip the counter-steer asks for at most
MAX_DRIFT = math.radians(60.0)
MIN_DRIFT_SPEED = 5.0  # m/s: slower, the grip driver drives (from rest it gets the car going first)
DRIFT_GRIP = 0.8  # a drift takes a corner of radius R at most at sqrt(DRIFT_GRIP mu g R): beyond, the rear brakes


class DriftDriver(Driver):
    """Steer, drive and brake torque for the slip car `model` following `path` (M, 2) at the speed profile of
    `limits`, drifting at the rear axle's slip angle `drift(t)` (rad, >= 0; 0: grip) where it is set."""

    def __init__(self, path: np.ndarray, model: SlipCarModel, limits: Limits | Callable[[float], Limits],
                 start: tuple[float, float, float, float], drift: Control = 0.0,
                 lookahead_time: float = DEFAULT_LOOKAHEAD_TIME, speed: Control = math.inf):
        theta, x, y, v = start  # the rear axle's: the driver follows the path with the centre of mass
        start = (theta, x + model.rear * math.cos(theta), y + model.rear * math.sin(theta), v)
        super().__init__(path, model.spec, limits, start, lookahead_time, speed=speed)
        self.model = model
        self.drift = signal(drift)
        self._u = (0.0, 0.0, 0.0)  # steer, drive, brake
        self.drifting: list[bool] = []  # per step: the drift allocation drove it
        self.goals: list[tuple[float, float]] = []  # per step: the rear slip target alpha_r* and body slip's beta*

    def controls(self) -> tuple[tuple[str, Callable[[float], float]], ...]:
        """Steer, drive torque and brake torque, computed together once per step."""
        return tuple((name, lambda _t, i=i: self._node_controls(self._at)[i])
                     for i, name in enumerate(("steer", "drive_torque", "brake_torque")))

    def target(self, t: float, kappa: float) -> float:
        """The rear axle's slip target alpha_r* (rad) on a path of curvature kappa: the keyed angle, tail out of
        the turn."""
        angle = float(self.drift(t))
        if not 0.0 <= angle <= MAX_DRIFT:
            raise ValueError(f"drift driver: the drift angle must lie in [0, {math.degrees(MAX_DRIFT):g}] degrees "
                             f"at t = {t:.4g} s, got {math.degrees(angle):.4g} degrees")
        return -angle * float(np.clip(kappa * DRIFT_RADIUS, -1.0, 1.0))

    def _pose(self) -> tuple[float, float, float, float, float]:
        """(course angle, x, y, speed, t) of the centre of mass: the grip driver's law then steers its velocity,
        which slipping tyres turn off the heading, onto the path."""
        if self._state is None:
            return (*self._start, 0.0)
        st = self._state()
        _, vx, vy = st.xi_prev
        return st.theta + math.atan2(vy, vx), float(st.g[0, 2]), float(st.g[1, 2]), math.hypot(vx, vy), st.t

    def steer_for(self, kappa: float, speed: float) -> float:
        """atan(l kappa) plus the tyres' understeer K V^2 kappa, K = (m / l) (b / C_f - a / C_r) (the linear
        bicycle model's steady turn)."""
        m = self.model
        gradient = m.spec.mass / m.spec.wheelbase * (m.rear / m.stiffness[0] - m.front / m.stiffness[1])
        return math.atan(m.spec.wheelbase * kappa) + gradient * speed * speed * kappa

    def corner(self, s: float) -> float:
        """The curvature (1/m) of the path's segment at arc length s as a corner: the smaller of its two
        vertices' (0 where they turn opposite ways), so a long straight leaving a curve is not drifted."""
        i = self._segment(s)
        k0, k1 = self.kappa[i], self.kappa[i + 1]
        return 0.0 if k0 * k1 <= 0 else float(k0 if abs(k0) < abs(k1) else k1)

    def _at(self, st) -> tuple[float, float, float]:
        """(steer, drive, brake) at the slip car's state `st`: the grip driver's, or the drift allocation's."""
        r, vx, vy = st.xi_prev
        course, x, y, speed, _ = self._pose()
        beta = course - st.theta
        e, e_chi, s = self._frame(x, y, course, speed)
        kappa_ref = float(np.interp(s, self._s, self.kappa))
        m = self.model
        corner = self.corner(s + PREVIEW * speed)
        rear_goal = self.target(st.t, corner) if speed >= MIN_DRIFT_SPEED else 0.0
        # the body slip that puts the rear axle at its target in the corner's steady turn (yaw rate V kappa_c)
        goal = (math.atan(math.tan(rear_goal) + m.rear * speed * corner / max(abs(vx), m.tyres.low_speed))
                if rear_goal != 0.0 else 0.0)
        self.goals.append((rear_goal, goal))
        rear = (vy - m.rear * r) / max(abs(vx), m.tyres.low_speed)  # tan of the rear slip angle
        if goal == 0.0 and abs(rear) < RECOVERED * 3.0 * m.tyres.friction * m.load[1] / m.stiffness[1]:
            steer = self.steer(st.t)
            demand = self._demand()  # on the pedals: drive on the rear, the brake on all four wheels
            self.drifting.append(False)
            return (steer, float(np.clip(demand, 0.0, self.spec.max_drive_torque)),
                    float(np.clip(-demand, 0.0, self.spec.max_brake_torque)))
        ahead = self.lookahead(speed)
        self.targets.append(tuple(float(c) for c in self.point(s + ahead)))
        kappa = kappa_ref - 2.0 * e_chi / ahead - e / ahead**2
        corner = abs(self.corner(s))
        cap = math.sqrt(DRIFT_GRIP * m.tyres.friction * m.gravity / corner) if corner else math.inf
        self.drifting.append(True)
        return self._allocate(st, speed, beta, kappa, goal, 1.0 if speed <= min(cap, self.speed(st.t)) else -1.0)

    def _allocate(self, st, speed: float, beta: float, kappa: float, goal: float,
                  sign: float) -> tuple[float, float, float]:
        """(steer, drive, 0) that give the normal force m V^2 kappa and the yaw moment toward r*, the rear's
        longitudinal force driving (sign +1) or braking (-1)."""
        m = self.model
        r, vx, vy = st.xi_prev
        a, b, l = m.front, m.rear, m.spec.wheelbase
        normal = m.spec.mass * speed * speed * kappa
        turn = float(np.clip(SLIP_RATE * (goal - beta), -MAX_SLIP_RATE, MAX_SLIP_RATE))
        moment = m.inertia[0, 0] * YAW_RATE * (speed * kappa - turn - r)
        grip_f, grip_r = m.tyres.friction * m.load
        delta, fx, f_front = st.delta, abs(st.drive) / m.spec.wheel_radius, 0.0
        z_r = (vy - b * r) / max(abs(vx), m.tyres.low_speed)
        for _ in range(3):  # fx: the rear's longitudinal force magnitude, signed by `sign`
            fy = (normal + math.sin(beta) * (sign * fx - f_front * math.sin(delta))) / math.cos(beta)
            f_front = (moment + b * fy) / l / math.cos(delta)
            f_rear = (a * fy - moment) / l
            if f_rear * z_r > 0:  # the sliding rear pushes the other way: shed its side force with full throttle
                fx = LONGITUDINAL_SHARE * grip_r
            else:
                needed = grip_for(f_rear, z_r, m.stiffness[1])
                fx = math.sqrt(max(grip_r**2 - needed**2, 0.0)) if needed < grip_r else 0.0
            fx = min(fx, LONGITUDINAL_SHARE * grip_r, m.spec.max_drive_torque / m.spec.wheel_radius)
        limit = FRONT_USE * grip_f
        z_f = slip_of(float(np.clip(f_front, -limit, limit)), grip_f, m.stiffness[0])
        gamma_f = math.atan2(vy + a * r, vx)
        delta = float(np.clip(gamma_f - math.atan(z_f), -m.spec.max_steer, m.spec.max_steer))
        return delta, sign * fx * m.spec.wheel_radius, 0.0


def simulate_drifting(mechanism: Mechanism, path: np.ndarray, limits: Limits | Callable[[float], Limits],
                      drift: Control, dt: float, steps: int, tyres: Tyres = DEFAULT_TYRES,
                      speed: Control = math.inf) -> tuple[Trajectory, DriftDriver]:
    """Run the mechanism's car on `tyres` along `path` as a DriftDriver of `limits` drifting at `drift(t)` (rad),
    at most at `speed(t)` (see pursuit.follow)."""
    model = compile_slip_car(mechanism.vehicle, tyres, float(np.linalg.norm(mechanism.gravity)))
    controller = DriftDriver(path, model, limits, car_start(mechanism), drift, speed=speed)
    return follow(mechanism, controller, dt, steps, tyres), controller


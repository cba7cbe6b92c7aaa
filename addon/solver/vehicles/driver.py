"""Path following like a driver: a speed profile from the path's curvature, and steering that tracks the path.

Speed profile (`speed_profile`): the path's curvature kappa(s) at each vertex (the circle through it and its
neighbours) caps the speed at sqrt(a_lat / |kappa|), the lateral acceleration limit (and at the top speed);
a forward pass v_i <= sqrt(v_{i-1}^2 + 2 a_acc ds) keeps each rise within the acceleration limit from the
start speed, and a backward pass v_i <= sqrt(v_{i+1}^2 + 2 a_brake ds) starts each slow-down early enough
for the braking limit. So on a circle of radius R the car drives at sqrt(a_lat R). The profile is sampled
every PROFILE_STEP of arc length (a long straight segment brakes where it must, not from its start).

Steering (`Driver.steer`): with e the rear axle's offset to the left of the path at its closest point,
e_theta its heading relative to the path's and kappa_ref the path's curvature there, the car steers to
the curvature
    kappa = kappa_ref - 2 e_theta / L - e / L^2,
L the look-ahead distance (as pure pursuit's). Linearised, de/ds = e_theta and de_theta/ds = kappa -
kappa_ref, so e'' + (2/L) e' + e/L^2 = 0 in the distance travelled: offsets decay critically damped over
about L, and on a curve the car follows it instead of cutting the corner by L^2 / (8 R) as pure pursuit
does. Speed: drive torque m rho (v dv/ds + gain (v_ref - v)) with v_ref(s) from the profile, the profile's
own acceleration fed forward, within +-max_drive_torque, and the brake (up to max_brake_torque) for what
a slow-down asks beyond; a keyed speed limit speed(t) (the rig's
path_speed) caps v_ref over time.

The drift option (a rear axle slip angle target) drives the car on tyres that slip (drift.py, which reuses this
driver where the tyres grip); banking belongs to the helicopter's follower (pilot.py), which reuses it too.
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Control, Mechanism
from ..trajectory import Trajectory
from .pursuit import DEFAULT_LOOKAHEAD_TIME, SPEED_GAIN, PurePursuit, car_start, follow
from .spec import CarSpec

PROFILE_STEP = 0.25  # m between the speed profile's samples (the path's curvature interpolated between vertices)


@dataclass(frozen=True)
class Limits:
    """A driver's limits: lateral, forward and braking acceleration (m/s^2), top speed (m/s) and turn rate
    (rad/s: a craft turned by its thrust, helmsman.py; unlimited for a car)."""

    lateral: float = 4.0
    accel: float = 2.5
    brake: float = 5.0
    top_speed: float = 30.0
    turn_rate: float = math.inf

    def __post_init__(self):
        for name in ("lateral", "accel", "brake", "top_speed"):
            if not getattr(self, name) > 0:
                raise ValueError(f"driver limits: {name} must be > 0, got {getattr(self, name)!r}")


def curvature(path: np.ndarray) -> np.ndarray:
    """Signed curvature (1/m, + turning left) at each vertex of `path` (M, 2): 1 / the radius of the circle
    through the vertex and its neighbours (0 at the ends)."""
    a, b, c = path[:-2], path[1:-1], path[2:]
    cross = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    sides = np.linalg.norm(b - a, axis=1) * np.linalg.norm(c - b, axis=1) * np.linalg.norm(c - a, axis=1)
    return np.concatenate([[0.0], 2.0 * cross / sides, [0.0]])


def speed_profile(s: np.ndarray, kappa: np.ndarray, limits: Limits, v_start: float) -> np.ndarray:
    """Speeds (m/s) at arc lengths s (M,) of a path of curvature kappa (M,): the curvature's lateral cap
    sqrt(a_lat / |kappa|) and turn-rate cap turn_rate / |kappa|, then the forward (acceleration from v_start)
    and backward (braking) passes."""
    bend = np.maximum(np.abs(kappa), 1e-12)
    v = np.minimum(limits.top_speed, np.minimum(np.sqrt(limits.lateral / bend), limits.turn_rate / bend))
    v[0] = min(v[0], max(v_start, 0.0))
    ds = np.diff(s)
    for i in range(1, len(v)):
        v[i] = min(v[i], math.sqrt(v[i - 1] ** 2 + 2.0 * limits.accel * ds[i - 1]))
    for i in range(len(v) - 2, -1, -1):
        v[i] = min(v[i], math.sqrt(v[i + 1] ** 2 + 2.0 * limits.brake * ds[i]))
    return v


class Driver(PurePursuit):
    """Steer and drive torque for a car following `path` (M, 2) at the speed profile of `limits` (Limits, or
    limits(t) when keyed: the profile is planned again from the car's place and speed whenever they change),
    and at most `speed(t)` (m/s: a keyed speed limit over time)."""

    def __init__(self, path: np.ndarray, spec: CarSpec, limits: Limits | Callable[[float], Limits],
                 start: tuple[float, float, float, float], lookahead_time: float = DEFAULT_LOOKAHEAD_TIME,
                 min_lookahead: float | None = None, speed: Control = math.inf):
        super().__init__(path, spec, speed, start, lookahead_time, min_lookahead)
        self.limits_at = limits if callable(limits) else (lambda _t: limits)
        self.kappa = curvature(self.path)
        self._plan(0.0, start[3], self.limits_at(0.0))
        self._node: int | None = None  # the integrator's node whose controls `_u` holds
        self._u: tuple[float, ...] = ()  # the controls computed together at that node (before it: their start)

    def _node_controls(self, compute: Callable[[Any], tuple[float, ...]]) -> tuple[float, ...]:
        """The controls `compute(state)` gives at the integrator's current node, computed once per node; `_u`
        (the start values) before the integrator is bound."""
        if self._state is None:
            return self._u
        st = self._state()
        if self._node != st.k:
            self._node, self._u = st.k, compute(st)
        return self._u

    def _plan(self, s0: float, v0: float, limits: Limits) -> None:
        """The speed profile from arc length s0 at speed v0 to the path's end, under `limits`."""
        n = max(2, math.ceil((self._s[-1] - s0) / PROFILE_STEP) + 1)
        self.limits, self.grid = limits, np.linspace(s0, max(self._s[-1], s0 + PROFILE_STEP), n)
        self.profile = speed_profile(self.grid, np.interp(self.grid, self._s, self.kappa), limits, v0)

    def _frame(self, x: float, y: float, theta: float, v: float) -> tuple[float, float, float]:
        """(e, e_theta, s) of the rear axle at (x, y) heading theta: left offset, heading error, arc length."""
        self.progress = self.closest(x, y, 2.0 * self.lookahead(v) + 1.0)
        tangent = self.tangent(self.progress)
        rel = np.array([x, y]) - self.point(self.progress)
        e = float(tangent[0] * rel[1] - tangent[1] * rel[0])
        e_theta = (theta - math.atan2(tangent[1], tangent[0]) + math.pi) % (2.0 * math.pi) - math.pi
        return e, e_theta, self.progress

    def steer(self, _t: float) -> float:
        """Steering angle (rad) to the curvature kappa_ref - 2 e_theta / L - e / L^2."""
        theta, x, y, v, _ = self._pose()
        e, e_theta, s = self._frame(x, y, theta, v)
        ahead = self.lookahead(v)
        kappa_ref = float(np.interp(s, self._s, self.kappa))
        kappa = kappa_ref - 2.0 * e_theta / ahead - e / ahead**2
        self.targets.append(tuple(float(c) for c in self.point(s + ahead)))
        return float(np.clip(self.steer_for(kappa, v), -self.spec.max_steer, self.spec.max_steer))

    def steer_for(self, kappa: float, _speed: float) -> float:
        """The steering angle (rad) that turns the car at curvature kappa: atan(wheelbase kappa) when it rolls."""
        return math.atan(self.spec.wheelbase * kappa)

    def controls(self) -> tuple[tuple[str, Callable[[float], float]], ...]:
        """Steer, drive torque and brake torque."""
        return (*super().controls(), ("brake_torque", self.brake))

    def drive(self, _t: float) -> float:
        """Drive torque (N m): the demand, within +-max_drive_torque."""
        return float(np.clip(self._demand(), -self.spec.max_drive_torque, self.spec.max_drive_torque))

    def brake(self, _t: float) -> float:
        """Brake torque (N m): what the demand asks beyond -max_drive_torque, up to max_brake_torque."""
        return float(np.clip(-self._demand() - self.spec.max_drive_torque, 0.0, self.spec.max_brake_torque))

    def _demand(self) -> float:
        """Torque (N m) the speed asks for: m rho times the acceleration (see `acceleration`)."""
        return self.mass * self.spec.wheel_radius * self.acceleration()

    def acceleration(self) -> float:
        """Acceleration (m/s^2) along the path the speed asks for: the profile's own plus the speed loop
        toward its speed (planned again first when keyed limits changed)."""
        _, _, _, v, t = self._pose()
        s = self.progress
        limits = self.limits_at(t)
        if limits != self.limits:  # keyed limits changed: plan again from here
            self._plan(s, v, limits)
        v_ref = self.reference_speed(s)
        slope = float(np.interp(s, self.grid[:-1], np.diff(self.profile) / np.diff(self.grid)))
        cap = self.speed(t)
        feed = v_ref * slope if v_ref < cap else 0.0
        v_ref = min(v_ref, cap)
        return feed + SPEED_GAIN * (v_ref - v)

    def reference_speed(self, s: float) -> float:
        """The profile's speed (m/s) at arc length s."""
        return float(np.interp(s, self.grid, self.profile))


def simulate_driving(mechanism: Mechanism, path: np.ndarray, limits: Limits | Callable[[float], Limits], dt: float,
                     steps: int, lookahead_time: float = DEFAULT_LOOKAHEAD_TIME,
                     speed: Control = math.inf) -> tuple[Trajectory, Driver]:
    """Run the mechanism's car (or car with trailer) on `path` as a Driver of `limits` at most at `speed(t)`
    (see pursuit.follow)."""
    start = car_start(mechanism)
    controller = Driver(path, mechanism.vehicle.spec, limits, start, lookahead_time, speed=speed)
    return follow(mechanism, controller, dt, steps), controller

"""Path following for the car, with or without a trailer: a pure pursuit steering controller and a speed loop,
fed back every step.

The car integrator (car.py) reads its controls as signals of time (controls.signal accepts callables),
so a controller is a pair of callables that ignore their time argument and read the integrator's
current state instead: at step k -> k+1 the steer for node k+1 and the drive torque of the interval
are computed from the solved pose and speed at node k (a one-step feedback delay).

Pure pursuit (rear-axle reference): with the rear-axle centre at distance d from a target point on the
path, seen at angle alpha from the heading, the steer that puts the rear axle on a circle through the
target is atan(2 l sin(alpha) / d) (l: wheelbase), clipped to the steering lock. The target lies a
look-ahead distance L = max(min_lookahead, lookahead_time * speed) along the path beyond the point of
the path closest to the rear axle (searched forward from the last one, so loops and crossings are
followed in order); beyond the path's end it continues straight along the last segment. Because the car
aims at a point ahead, it cuts corners by about L^2 / (8 R) on a curve of radius R.
Speed: drive torque m rho gain (v_target - v), clipped to the spec's +-max_drive_torque; m is the car's
mass plus a towed trailer's. A car towing a trailer is steered the same way (the state is the car's, the
trailer follows on its hitch and cuts corners more; its no-slip constraint and start hitch angle are the
trailer integrator's).
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from ..model import Control, Mechanism
from ..trajectory import SolverError, Trajectory
from .controls import signal
from .integrator import VehicleIntegrator
from .slip_car import Tyres
from .spec import CarSpec, CarTrailerSpec

DEFAULT_LOOKAHEAD_TIME = 0.8  # s of travel at the current speed
SPEED_GAIN = 1.5  # 1/s: the speed error decays at this rate (until the torque limit)


def distinct(path: np.ndarray) -> np.ndarray:
    """The vertices (bool mask) of a path (M, 2) kept by the followers: each apart from the one before."""
    return np.concatenate([[True], np.linalg.norm(np.diff(path, axis=0), axis=1) > 1e-9])


class PurePursuit:
    """Steer and drive torque for a car following `path` (M, 2) world xy at speed `speed(t)` (m/s)."""

    def __init__(self, path: np.ndarray, spec: CarSpec, speed: Control, start: tuple[float, float, float, float],
                 lookahead_time: float = DEFAULT_LOOKAHEAD_TIME, min_lookahead: float | None = None):
        path = np.asarray(path, float)
        path = path[distinct(path)]
        if path.ndim != 2 or path.shape[1] != 2 or len(path) < 2:
            raise ValueError(f"car {spec.name!r}: a path needs at least two distinct (x, y) points")
        if not lookahead_time > 0:
            raise ValueError(f"car {spec.name!r}: lookahead_time must be > 0 s, got {lookahead_time!r}")
        self.path, self.spec = path, spec
        self.speed = signal(speed)
        self.lookahead_time = float(lookahead_time)
        self.mass = spec.mass + (spec.trailer_mass if isinstance(spec, CarTrailerSpec) else 0.0)  # kg pulled
        self.min_lookahead = 1.5 * spec.wheelbase if min_lookahead is None else float(min_lookahead)
        seg = np.diff(path, axis=0)
        self._seg, self._len = seg, np.linalg.norm(seg, axis=1)
        self._s = np.concatenate([[0.0], np.cumsum(self._len)])  # arc length at each vertex
        self.progress = 0.0  # arc length of the last closest point
        self._start = start  # (theta, x, y, speed) of the rear axle before the integrator exists
        self._state: Callable[[], object] | None = None
        self.targets: list[tuple[float, float]] = []  # target point used at each steering update

    def bind(self, state: Callable[[], object]) -> None:
        """Read the car's state (a car.CarState or trailer.TrailerState: theta, x, y, u) through `state()`."""
        self._state = state

    def _pose(self) -> tuple[float, float, float, float, float]:
        if self._state is None:
            theta, x, y, v = self._start
            return theta, x, y, v, 0.0
        st = self._state()
        return st.theta, st.x, st.y, st.u * self.spec.wheel_radius, st.t

    def closest(self, x: float, y: float, window: float) -> float:
        """Arc length of the point of the path nearest (x, y) within [progress, progress + window]."""
        rel = np.array([x, y]) - self.path[:-1]
        f = np.clip(np.einsum("ij,ij->i", rel, self._seg) / self._len**2, 0.0, 1.0)
        s = self._s[:-1] + f * self._len
        dist = np.linalg.norm(rel - f[:, None] * self._seg, axis=1)
        allowed = (s >= self.progress - 1e-9) & (s <= self.progress + window)
        if not allowed.any():
            return self.progress
        i = int(np.argmin(np.where(allowed, dist, np.inf)))
        return float(s[i])

    def _segment(self, s: float) -> int:
        """Index of the path segment at arc length s (the first or last beyond the ends)."""
        return int(np.clip(np.searchsorted(self._s, s, side="right") - 1, 0, len(self._len) - 1))

    def point(self, s: float) -> np.ndarray:
        """The path point at arc length s (straight on along the last segment beyond the end)."""
        i = self._segment(s)
        return self.path[i] + (s - self._s[i]) / self._len[i] * self._seg[i]

    def tangent(self, s: float) -> np.ndarray:
        """The path's unit tangent (2,) at arc length s."""
        i = self._segment(s)
        return self._seg[i] / self._len[i]

    def lookahead(self, speed: float) -> float:
        return max(self.min_lookahead, self.lookahead_time * abs(speed))

    def steer(self, _t: float) -> float:
        """Pure pursuit steering angle (rad) from the current pose."""
        theta, x, y, v, _ = self._pose()
        ahead = self.lookahead(v)
        self.progress = self.closest(x, y, 2.0 * ahead + 1.0)
        target = self.point(self.progress + ahead)
        self.targets.append((float(target[0]), float(target[1])))
        dx, dy = target[0] - x, target[1] - y
        alpha = math.atan2(dy, dx) - theta
        angle = math.atan2(2.0 * self.spec.wheelbase * math.sin(alpha), math.hypot(dx, dy))
        return float(np.clip(angle, -self.spec.max_steer, self.spec.max_steer))

    def controls(self) -> tuple[tuple[str, Callable[[float], float]], ...]:
        """The car controls this controller drives: (control, signal) pairs."""
        return (("steer", self.steer), ("drive_torque", self.drive))

    def drive(self, _t: float) -> float:
        """Drive torque (N m) pulling the speed toward the target speed."""
        _, _, _, v, t = self._pose()
        torque = self.mass * self.spec.wheel_radius * SPEED_GAIN * (self.speed(t) - v)
        return float(np.clip(torque, -self.spec.max_drive_torque, self.spec.max_drive_torque))


def car_start(mechanism: Mechanism) -> tuple[float, float, float, float]:
    """(theta, x, y, speed) of the rear axle of the mechanism's car (with or without trailer) at the start."""
    vehicle = mechanism.vehicle
    if vehicle is None or vehicle.type not in ("car", "car_trailer"):
        raise ValueError(f"{mechanism.source}: path following needs a car vehicle, with or without trailer")
    q = vehicle.orientation
    theta = math.atan2(2.0 * (q[0] * q[3] + q[1] * q[2]), 1.0 - 2.0 * (q[2] ** 2 + q[3] ** 2))
    b = vehicle.spec.com_ahead_of_rear_axle
    return (theta, vehicle.position[0] - b * math.cos(theta), vehicle.position[1] - b * math.sin(theta),
            vehicle.velocity[3])


def follow(mechanism: Mechanism, controller: PurePursuit, dt: float, steps: int,
           tyres: Tyres | None = None) -> Trajectory:
    """Run the mechanism's car with the controls `controller` drives (controller.controls(), replacing any
    keyed ones; pure pursuit leaves a keyed brake), on `tyres` that slip when given (slip_car.py). Returns the
    trajectory (status 'failed' with the message on solver trouble)."""
    vehicle = mechanism.vehicle
    driven = controller.controls()
    controls = tuple((k, v) for k, v in vehicle.controls if k not in dict(driven)) + driven
    mech = dataclasses.replace(mechanism, vehicle=dataclasses.replace(vehicle, controls=controls))
    integrator = VehicleIntegrator(mech, dt, tyres=tyres)
    controller.bind(lambda: integrator.run.state)
    for _ in range(steps):
        try:
            integrator.step()
        except SolverError:
            break
    return integrator.trajectory()


def simulate_following(mechanism: Mechanism, path: np.ndarray, speed: Control, dt: float, steps: int,
                       lookahead_time: float = DEFAULT_LOOKAHEAD_TIME) -> tuple[Trajectory, PurePursuit]:
    """Run the mechanism's car (or car with trailer) on `path` at target `speed`, steered by a PurePursuit
    (see follow). Returns the trajectory and the controller."""
    start = car_start(mechanism)
    controller = PurePursuit(path, mechanism.vehicle.spec, speed, start, lookahead_time)
    return follow(mechanism, controller, dt, steps), controller

"""Path following for the helicopter: the driver's speed profile and look-ahead, flown in coordinated turns.

`Pilot` reuses the car driver (driver.py) for what the path asks: the curvature speed profile (lateral,
accel and brake limits) and the tracking curvature kappa = kappa_ref - 2 e_theta / L - e / L^2, with e the
offset of the helicopter's centre of mass left of the path (xy), e_theta the heading of its ground
velocity relative to the path's and L the look-ahead max(min_lookahead, 0.8 s x speed). It then flies it:

- Acceleration wanted (world): along the path tangent T the profile's v dv/ds plus 1.5/s (v_ref - v), across
  it (left normal N) the turn's v^2 kappa, and up -w_z^2 (z - z_ref) - 2 w_z (z' - v dz/ds). The height
  z_ref(s) is the start height plus the path's own climb since the point closest to the start (a path
  (M, 3) with its z, as the rig's curve gives it; a flat or (M, 2) path holds the start height), flown at
  its slope dz/ds over the ground track.
- Thrust: F = m (a + g e_z). The collective is |F| (within 0..max_collective) and the body's z axis is
  turned onto F / |F|. In a level turn the thrust then leans into it by phi = atan(v^2 kappa / g): the
  coordinated turn (no side force in the body frame; the nose is kept along the path).
- Bank limit: the lateral acceleration is at most g tan(bank_limit). The profile's lateral limit is
  min(lateral, 0.85 g tan(bank_limit)), leaving the tracking law room to steer back onto the path (both
  keyable; the profile is planned again when either changes).
- Attitude: with R_d the attitude of that body z and the path's heading, the torque wanted is
  J (-w_a^2 e_R - 2 w_a (w - w_d)) + w x J w, e_R = vee(R_d^T R - R^T R_d) / 2 (the geometric attitude
  error on SO(3)), w_d the turn's yaw rate in body axes and w_a = 6, 3, 3 rad/s about body x, y, z. The swashplate gives it: roll and pitch torques from the
  lift's tilt at the hub (d_t u_c sin(blade_roll), d_t u_c sin(blade_pitch) cos(blade_roll), within
  +-max_blade_tilt), yaw from the tail rotor (d_r u_tail, within +-max_tail_force).

The controls are read from the integrator's state at node k (the pose g_k and the last twist), once per
step: a one-step feedback delay, as the car's. `PursuitPilot` flies the same way but turns by pure
pursuit's curvature 2 sin(alpha) / d to the point L ahead, at a constant speed: the comparison.

The boat and hovercraft follow a path in helmsman.py (the same law, steered by differential thrust): nothing
they control can bank them.
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from ..lie import hat, quat_to_matrix
from ..model import Control, Mechanism
from ..trajectory import Trajectory
from .controls import signal
from .driver import Driver, Limits
from .pursuit import DEFAULT_LOOKAHEAD_TIME, distinct, follow
from .spec import HelicopterSpec

GRAVITY = 9.81
HEIGHT_RATE = 1.0  # rad/s: the height loop's natural frequency (critically damped)
# rad/s: the attitude loop's natural frequencies about body x, y, z (critically damped); pitch is slower, its
# swashplate reach (1.1 rad/s^2 at hover thrust) a third of roll's
ATTITUDE_RATE = np.array([6.0, 3.0, 3.0])
LAG = 2.0 / ATTITUDE_RATE[0]  # s: the attitude loop's lag (a critically damped loop's mean delay), flown ahead
MIN_LOOKAHEAD = 8.0  # m
DEFAULT_BANK_LIMIT = math.radians(30.0)
BANK_MARGIN = 0.85  # the profile plans 85 % of the bank limit's lateral acceleration: the rest steers back


def vee(skew: np.ndarray) -> np.ndarray:
    """The vector w of a skew matrix hat(w)."""
    return np.array([skew[2, 1], skew[0, 2], skew[1, 0]])


class Pilot(Driver):
    """Collective, tail force and blade pitch/roll for a helicopter following `path` (M, 2), or (M, 3) with the
    heights to climb and descend by, at the driver's speed profile of `limits`, banked at most `bank_limit(t)`
    (rad), at most `speed(t)` (m/s)."""

    lag = LAG  # s: how far ahead (in time at the speed) the path's curvature is read

    def __init__(self, path: np.ndarray, spec: HelicopterSpec, limits: Limits | Callable[[float], Limits],
                 start: tuple[float, float, float, float], bank_limit: Control = DEFAULT_BANK_LIMIT,
                 lookahead_time: float = DEFAULT_LOOKAHEAD_TIME, speed: Control = math.inf,
                 height: float = 0.0):
        keyed = limits if callable(limits) else (lambda _t: limits)
        self.bank_limit = signal(bank_limit)
        path = np.asarray(path, float)
        super().__init__(path[:, :2], spec, self._banked(keyed), start, lookahead_time, MIN_LOOKAHEAD, speed)
        self.height, self.inertia = float(height), np.diag(np.asarray(spec.inertia[:3], float))
        # the path's heights at the followed vertices (flat without them), and where the climb is counted from
        self._z = path[distinct(path[:, :2]), 2] if path.shape[1] == 3 else np.zeros(len(self.path))
        self._z_start: float | None = None
        self._u = (0.0, 0.0, 0.0, 0.0)
        self.history: list[tuple[float, ...]] = []  # (t, *the controls' values) at each node, in controls() order

    def _banked(self, limits: Callable[[float], Limits]) -> Callable[[float], Limits]:
        def at(t: float) -> Limits:
            lim = limits(t)
            bank = float(self.bank_limit(t))
            if not 0.0 < bank < math.pi / 2:
                raise ValueError(f"pilot: bank_limit must be in (0, 90) degrees, got {math.degrees(bank)!r}")
            return dataclasses.replace(lim, lateral=min(lim.lateral, BANK_MARGIN * GRAVITY * math.tan(bank)))
        return at

    def _pose(self) -> tuple[float, float, float, float, float]:
        """(ground track angle, x, y, ground speed, t) of the centre of mass."""
        if self._state is None:
            return (*self._start, 0.0)
        st = self._state()
        v = st.g[:3, :3] @ st.xi_prev[3:]
        return math.atan2(v[1], v[0]), st.g[0, 3], st.g[1, 3], math.hypot(v[0], v[1]), st.t

    def turn(self, x: float, y: float, track: float, v: float) -> float:
        """The curvature (1/m, + left) to fly: the driver's tracking law."""
        e, e_theta, s = self._frame(x, y, track, v)
        ahead = self.lookahead(v)
        self.targets.append(tuple(float(c) for c in self.point(s + ahead)))
        preview = s + v * self.lag  # the path's curvature where the craft will be once banked
        return float(np.interp(preview, self._s, self.kappa)) - 2.0 * e_theta / ahead - e / ahead**2

    def controls(self) -> tuple[tuple[str, Callable[[float], float]], ...]:
        """Collective, tail, blade pitch and blade roll."""
        return tuple((name, lambda _t, i=i: self._node_controls(self._at)[i])
                     for i, name in enumerate(("collective", "tail", "blade_pitch", "blade_roll")))

    def _at(self, st) -> tuple[float, ...]:
        """The four controls at the helicopter's state `st`."""
        R, x = st.g[:3, :3], st.g[:3, 3]
        w, v_world = st.xi_prev[:3], R @ st.xi_prev[3:]
        track, _, _, v, t = self._pose()
        kappa = self.turn(x[0], x[1], track, v)
        tangent = np.append(self.tangent(self.progress), 0.0)
        normal = np.array([-tangent[1], tangent[0], 0.0])
        cap = GRAVITY * math.tan(float(self.bank_limit(t)))
        lateral = float(np.clip(v * v * kappa, -cap, cap))
        climb = self._climb(x[2], v_world[2], v)
        accel = self.acceleration() * tangent + lateral * normal + (GRAVITY + climb) * np.array([0.0, 0.0, 1.0])
        force = self.spec.mass * accel
        up = force / np.linalg.norm(force)
        side = np.cross(up, tangent)
        side /= np.linalg.norm(side)
        R_d = np.column_stack([np.cross(side, up), side, up])
        e_R = 0.5 * vee(R_d.T @ R - R.T @ R_d)
        w_d = R.T @ np.array([0.0, 0.0, v * kappa])
        torque = self.inertia @ (-ATTITUDE_RATE**2 * e_R - 2.0 * ATTITUDE_RATE * (w - w_d)) + hat(w) @ self.inertia @ w
        u = tuple(float(c) for c in swashplate(self.spec, float(np.linalg.norm(force)), torque))
        self.history.append((float(st.t), *u))
        return u


    def _climb(self, z: float, z_rate: float, v: float) -> float:
        """The vertical acceleration (m/s^2) onto the height z_ref(s) at the progress s, at the path's slope."""
        s = self.progress
        if self._z_start is None:
            self._z_start = float(np.interp(s, self._s, self._z))
        z_ref = self.height + float(np.interp(s, self._s, self._z)) - self._z_start
        i = int(np.clip(np.searchsorted(self._s, s, side="right") - 1, 0, len(self._len) - 1))
        slope = (self._z[i + 1] - self._z[i]) / self._len[i]
        return -HEIGHT_RATE**2 * (z - z_ref) - 2.0 * HEIGHT_RATE * (z_rate - v * slope)


def swashplate(spec: HelicopterSpec, thrust: float, torque: np.ndarray) -> np.ndarray:
    """(collective, tail, blade_pitch, blade_roll) giving main-rotor `thrust` (N) and body `torque` (3,), each
    within the spec's limits: the inverse of helicopter.control_matrix's torque rows."""
    collective = float(np.clip(thrust, 0.0, spec.max_collective))
    lever, most = spec.rotor_height * max(collective, 1e-9), math.sin(spec.max_blade_tilt)
    roll = math.asin(float(np.clip(torque[0] / lever, -most, most)))
    pitch = math.asin(float(np.clip(torque[1] / (lever * math.cos(roll)), -most, most)))
    tail = float(np.clip(torque[2] / spec.tail_arm, -spec.max_tail_force, spec.max_tail_force))
    return np.array([collective, tail, pitch, roll])


class PursuitPilot(Pilot):
    """The Pilot turning by pure pursuit instead: curvature 2 sin(alpha) / d to the path point L ahead of the
    closest one (d its distance, alpha its bearing from the ground track), at the constant `speed` (m/s)."""

    def __init__(self, path: np.ndarray, spec: HelicopterSpec, speed: float,
                 start: tuple[float, float, float, float], bank_limit: Control = DEFAULT_BANK_LIMIT,
                 lookahead_time: float = DEFAULT_LOOKAHEAD_TIME, height: float = 0.0):
        free = Limits(lateral=1e6, accel=1e6, brake=1e6, top_speed=speed)  # the profile: speed all along
        super().__init__(path, spec, free, start, bank_limit, lookahead_time, height=height)

    def turn(self, x: float, y: float, track: float, v: float) -> float:
        """Pure pursuit's curvature (1/m, + left)."""
        ahead = self.lookahead(v)
        self.progress = self.closest(x, y, 2.0 * ahead + 1.0)
        target = self.point(self.progress + ahead)
        self.targets.append((float(target[0]), float(target[1])))
        dx, dy = target[0] - x, target[1] - y
        return 2.0 * math.sin(math.atan2(dy, dx) - track) / math.hypot(dx, dy)


def helicopter_start(mechanism: Mechanism) -> tuple[tuple[float, float, float, float], float]:
    """((ground track angle, x, y, ground speed), height) of the mechanism's helicopter at the start."""
    vehicle = mechanism.vehicle
    if vehicle is None or vehicle.type != "helicopter":
        raise ValueError(f"{mechanism.source}: flying a path needs a helicopter vehicle")
    v = quat_to_matrix(np.asarray(vehicle.orientation, float)) @ np.asarray(vehicle.velocity[3:], float)
    x, y, z = vehicle.position
    return (math.atan2(v[1], v[0]), x, y, math.hypot(v[0], v[1])), float(z)


def simulate_flying(mechanism: Mechanism, path: np.ndarray, limits: Limits | Callable[[float], Limits], dt: float,
                    steps: int, bank_limit: Control = DEFAULT_BANK_LIMIT,
                    speed: Control = math.inf) -> tuple[Trajectory, Pilot]:
    """Fly the mechanism's helicopter along `path` (M, 2) or (M, 3) as a Pilot of `limits` and `bank_limit`, at
    most at `speed(t)`, from its start height by the path's climbs (see pursuit.follow)."""
    start, height = helicopter_start(mechanism)
    controller = Pilot(path, mechanism.vehicle.spec, limits, start, bank_limit, speed=speed, height=height)
    return follow(mechanism, controller, dt, steps), controller


def simulate_pursuit_flying(mechanism: Mechanism, path: np.ndarray, speed: float, dt: float, steps: int,
                            bank_limit: Control = DEFAULT_BANK_LIMIT) -> tuple[Trajectory, PursuitPilot]:
    """Fly the mechanism's helicopter along `path` as a PursuitPilot at `speed` (m/s)."""
    start, height = helicopter_start(mechanism)
    controller = PursuitPilot(path, mechanism.vehicle.spec, speed, start, bank_limit, height=height)
    return follow(mechanism, controller, dt, steps), controller

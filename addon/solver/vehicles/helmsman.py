"""Path following for the boat and the hovercraft: the driver's speed profile and tracking law, steered by
differential thrust.

Neither craft has a rudder or a turning fan: both push along the hull's x axis with two thrusters at
y = +-spacing/2 (boat.py, hovercraft.py), so what steers is the difference of their thrusts, a yaw torque
(spacing/2)(u_r - u_l), and what drives is their sum. `Helmsman` reuses the pilot (pilot.py) for what the
path asks, on the ground track (the direction of the horizontal velocity, which slides off the heading in
a turn; below BLEND_SPEED the bow takes over, so a craft at rest starts along its bow): the speed profile
and the tracking curvature kappa = kappa_ref - 2 e_theta / L - e / L^2. Then it steers and drives:

- Force: the acceleration wanted is the pilot's, in the water plane: along the path tangent T the profile's
  v dv/ds plus 1.5/s (v_ref - v), across it (left normal N) v^2 kappa within the lateral limit. The thrust
  must give F = m a minus the hull's drag at the current velocity (`hull_drag`: the boat's column drag at
  the design displacement, linear in surge and sway; the hovercraft's quadratic skirt drag), and only along
  the bow, so the bow is turned onto F, as the helicopter's rotor is tilted onto its thrust. The hull then
  slides into the turn until its own drag and the thrust's sideways part give the turn's force: the boat,
  with a stiff sway drag, by a degree or two; the hovercraft by tens of degrees. Braking (F pointing back
  along the path) reverses the thrust along the path and leaves the turn to the drag.
- Heading: yaw torque I_z (w_h^2 e_psi + 2 w_h (v kappa - r)) plus the hull's own yaw damping at the turn's
  rate v kappa, fed forward (`yaw_damping`: the boat's columns resist a yaw rate r with D_r r, D_r =
  D_sway mean(x_i^2) + D_surge mean(y_i^2); the hovercraft with yaw_drag |r| r); e_psi the angle from the
  bow to F, w_h = HEADING_RATE (critically damped). kappa_ref is read 1 / w_h ahead (the heading loop's time constant),
  and the look-ahead is 2 s of travel (LOOKAHEAD_TIME): the tracking must be slower than the heading loop.
- Thrusters: the sum is F along the bow, the difference the torque: u_r, u_l = (T +- 2 tau / spacing) / 2,
  each within +-max_thrust; the turn comes first (the sum gives way when a thruster would exceed its limit).
- Turn-rate limit: the profile plans at most the yaw rate TURN_MARGIN x (spacing / 2) x max_thrust of
  torque holds against the hull's damping (driver.Limits.turn_rate), on top of the lateral limit, so the
  speed in a bend is min(sqrt(a_lat / |kappa|), turn_rate / |kappa|).

No bank: nothing either craft controls rolls it (the thrust lines lie in the hull's centre plane and push
along x). The boat heels only as its buoyancy lets it: in a steady turn the hull's sideways drag, acting at
the immersed centroid below the centre of mass, heels it outward by about a_lat h / (g GM) (h that depth,
GM the box hull's metacentric height), a fraction of a degree for the speedboat; the hovercraft's skirt drag
acts at its centre of mass and does not heel it. `PursuitHelmsman` steers the same way by pure pursuit's
curvature at a constant speed: the comparison.
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from ..lie import quat_to_matrix
from ..model import Control, Mechanism
from ..trajectory import Trajectory
from .boat import Hull
from .driver import Limits
from .pilot import Pilot, PursuitPilot
from .pursuit import follow
from .spec import BoatSpec, HovercraftSpec

HEADING_RATE = 1.5  # rad/s: the heading loop's natural frequency (critically damped)
TURN_MARGIN = 0.7  # the profile plans 70 % of one thruster's full torque: the rest steers back and drives
LOOKAHEAD_TIME = 2.0  # s: the tracking law's look-ahead, slow beside the heading loop (the craft slides)
BLEND_SPEED = 0.5  # m/s: the ground track is the direction of v + BLEND_SPEED x the bow
CRAFT = ("boat", "hovercraft")


def yaw_damping(spec: BoatSpec | HovercraftSpec, rate: float) -> float:
    """The hull's yaw drag torque (N m, resisting) at yaw rate `rate` (rad/s): the boat's columns at the design
    displacement (linear), the hovercraft's quadratic yaw drag."""
    if isinstance(spec, BoatSpec):
        xy = Hull.of(spec).xy
        return (spec.drag[1] * float(np.mean(xy[:, 0] ** 2)) + spec.drag[0] * float(np.mean(xy[:, 1] ** 2))) * rate
    return spec.yaw_drag * abs(rate) * rate


def hull_drag(spec: BoatSpec | HovercraftSpec, velocity: np.ndarray) -> np.ndarray:
    """The hull's drag force (2,) (N, body x y) at body velocity `velocity` (2,) (m/s) and no yaw rate: the
    boat's columns at the design displacement (linear), the hovercraft's quadratic skirt drag."""
    if isinstance(spec, BoatSpec):
        return -np.asarray(spec.drag[:2]) * velocity
    return -np.asarray(spec.drag) * np.abs(velocity) * velocity


def turn_rate(spec: BoatSpec | HovercraftSpec) -> float:
    """The yaw rate (rad/s) TURN_MARGIN of one thruster's full torque holds against the hull's yaw damping."""
    torque = TURN_MARGIN * 0.5 * spec.thruster_spacing * spec.max_thrust
    if isinstance(spec, BoatSpec):
        return torque / yaw_damping(spec, 1.0)
    return math.sqrt(torque / spec.yaw_drag)


class Helmsman(Pilot):
    """thrust_right and thrust_left for a boat or hovercraft following `path` (M, 2) at the driver's speed profile
    of `limits` (capped at the craft's turn_rate), at most `speed(t)` (m/s)."""

    lag = 1.0 / HEADING_RATE  # s: the curvature read this far ahead (the heading loop's time constant)

    def __init__(self, path: np.ndarray, spec: BoatSpec | HovercraftSpec, limits: Limits | Callable[[float], Limits],
                 start: tuple[float, float, float, float], lookahead_time: float = LOOKAHEAD_TIME,
                 speed: Control = math.inf):
        self.most_turn = turn_rate(spec)
        super().__init__(path, spec, limits, start, lookahead_time=lookahead_time, speed=speed)
        self._u = (0.0, 0.0)

    def _banked(self, limits: Callable[[float], Limits]) -> Callable[[float], Limits]:
        """The limits with the craft's turn rate (the pilot's bank limit does not apply)."""
        return lambda t: dataclasses.replace(limits(t), turn_rate=min(limits(t).turn_rate, self.most_turn))

    def _pose(self) -> tuple[float, float, float, float, float]:
        """(ground track angle, x, y, horizontal speed, t) of the centre of mass; the track is the bow's at rest."""
        if self._state is None:
            return (*self._start, 0.0)
        st = self._state()
        v = (st.g[:3, :3] @ st.xi_prev[3:])[:2]
        bow = st.g[:2, 0] / max(np.linalg.norm(st.g[:2, 0]), 1e-12)
        track = v + BLEND_SPEED * bow
        return math.atan2(track[1], track[0]), st.g[0, 3], st.g[1, 3], float(np.linalg.norm(v)), st.t

    def controls(self) -> tuple[tuple[str, Callable[[float], float]], ...]:
        """thrust_right and thrust_left."""
        return tuple((name, lambda _t, i=i: self._node_controls(self._at)[i])
                     for i, name in enumerate(("thrust_right", "thrust_left")))

    def _at(self, st) -> tuple[float, ...]:
        """The two thrusts at the craft's state `st`."""
        R = st.g[:3, :3]
        track, x, y, v, _ = self._pose()
        kappa = self.turn(x, y, track, v)
        tangent = self.tangent(self.progress)
        normal = np.array([-tangent[1], tangent[0]])
        lateral = float(np.clip(v * v * kappa, -self.limits.lateral, self.limits.lateral))
        wanted = self.spec.mass * (self.acceleration() * tangent + lateral * normal)
        force = wanted - R[:2, :2] @ hull_drag(self.spec, st.xi_prev[3:5])  # what the thrust must give, world xy
        aim = force if force @ tangent > 0.0 else tangent  # braking: reverse thrust along the path, the turn waits
        bow = R[:2, 0] / max(np.linalg.norm(R[:2, 0]), 1e-12)
        heading_error = math.atan2(bow[0] * aim[1] - bow[1] * aim[0], bow @ aim)
        rate_wanted, rate = v * kappa, float(st.xi_prev[2])
        torque = yaw_damping(self.spec, rate_wanted) + self.inertia[2, 2] * (
            HEADING_RATE**2 * heading_error + 2.0 * HEADING_RATE * (rate_wanted - rate))
        thrust = float(force @ bow)
        u = tuple(float(c) for c in split(self.spec, thrust, torque))
        self.history.append((float(st.t), *u))
        return u


def split(spec: BoatSpec | HovercraftSpec, thrust: float, torque: float) -> np.ndarray:
    """(thrust_right, thrust_left) (N) giving the sum `thrust` (N) and yaw `torque` (N m) = (spacing/2)(u_r - u_l),
    each within +-max_thrust; the torque first, the sum within what is left."""
    most = spec.max_thrust
    difference = float(np.clip(2.0 * torque / spec.thruster_spacing, -2.0 * most, 2.0 * most))
    room = 2.0 * most - abs(difference)
    total = float(np.clip(thrust, -room, room))
    return np.array([0.5 * (total + difference), 0.5 * (total - difference)])


class PursuitHelmsman(Helmsman):
    """The Helmsman steering by pure pursuit's curvature instead (pilot.PursuitPilot.turn), at the constant
    `speed` (m/s)."""

    turn = PursuitPilot.turn

    def __init__(self, path: np.ndarray, spec: BoatSpec | HovercraftSpec, speed: float,
                 start: tuple[float, float, float, float], lookahead_time: float = LOOKAHEAD_TIME):
        free = Limits(lateral=1e6, accel=1e6, brake=1e6, top_speed=speed)  # the profile: speed all along
        super().__init__(path, spec, free, start, lookahead_time)

    def _banked(self, limits: Callable[[float], Limits]) -> Callable[[float], Limits]:
        """The limits as given: no turn-rate cap on the constant speed."""
        return limits


def craft_start(mechanism: Mechanism) -> tuple[float, float, float, float]:
    """(ground track angle, x, y, speed) of the mechanism's boat or hovercraft at the start (see Helmsman._pose)."""
    vehicle = mechanism.vehicle
    if vehicle is None or vehicle.type not in CRAFT:
        raise ValueError(f"{mechanism.source}: following a path by thrust needs a boat or hovercraft vehicle")
    R = quat_to_matrix(np.asarray(vehicle.orientation, float))
    v = (R @ np.asarray(vehicle.velocity[3:], float))[:2]
    bow = R[:2, 0] / max(np.linalg.norm(R[:2, 0]), 1e-12)
    track = v + BLEND_SPEED * bow
    x, y, _ = vehicle.position
    return math.atan2(track[1], track[0]), x, y, float(np.linalg.norm(v))


def simulate_steering(mechanism: Mechanism, path: np.ndarray, limits: Limits | Callable[[float], Limits], dt: float,
                      steps: int, speed: Control = math.inf) -> tuple[Trajectory, Helmsman]:
    """Run the mechanism's boat or hovercraft along `path` as a Helmsman of `limits`, at most at `speed(t)` (see
    pursuit.follow)."""
    start = craft_start(mechanism)
    controller = Helmsman(path, mechanism.vehicle.spec, limits, start, speed=speed)
    return follow(mechanism, controller, dt, steps), controller


def simulate_pursuit_steering(mechanism: Mechanism, path: np.ndarray, speed: float, dt: float,
                              steps: int) -> tuple[Trajectory, PursuitHelmsman]:
    """Run the mechanism's boat or hovercraft along `path` as a PursuitHelmsman at `speed` (m/s)."""
    start = craft_start(mechanism)
    controller = PursuitHelmsman(path, mechanism.vehicle.spec, speed, start)
    return follow(mechanism, controller, dt, steps), controller

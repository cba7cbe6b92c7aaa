"""A tracked vehicle steered by skidding (tank, skid-steer loader) on SE(2): explicit discrete momentum step.

Owns the tank's model, its step, its node energy and its outputs (pose, track travel). Model choice:
differential drive on the nonholonomic constraint of no sideways slip at the centre of the tracks (body
frame at the centre of mass, midway between the tracks and over the middle of their ground contact), so
the body twist is xi = (omega, v, 0). The two tracks push with forces F_l, F_r (controls force_left,
force_right) at y = +-B/2; their generalised forces are F = F_l + F_r along the heading and tau =
(F_r - F_l) B / 2 about the vertical. Skidding enters as what it costs: a turning track scrapes sideways
over its whole contact length, a Coulomb yaw moment M_r = mu_t m g L / 4 against the turn (uniform ground
pressure, J. Y. Wong, Theory of Ground Vehicles, ch. 7), and the tracks roll against a Coulomb force
f_r m g. Kinetic energy T = (m v^2 + K omega^2) / 2.

Step k (tau = exp; alpha = 1/2): the projections of the discrete Euler-Poincare equation on the allowed
directions (omega, v) lose their ad* terms for a twist with no sideways part (the seed's simplified car
equation, exact for C = I - ad/2; continuous: the constraint force is purely sideways), leaving two
decoupled momentum balances

    p_k = clip(p_{k-1} + impulse_k, resistance impulse),   p = (K omega, m v),
    g_{k+1} = g_k exp(h (omega_k, v_k, 0)),

impulse the car's quadrature a h f_{k-1+a} + (1-a) h f_{k+a} of (tau, F) and the Coulomb clipping the
car brake's: the resistance removes up to its impulse from |p| and never reverses it, so a tank with
too little differential force to overcome M_r does not turn. Each step is an exact circular arc (no
side slip to round-off), and T_{k} - T_{k-1} = (p_k - p_{k-1}) . (xi_k + xi_{k-1}) / 2 exactly: the
energy changes by the work of the tracks less the resistance's, nothing else.

Limits: the tracks' own longitudinal slip (which real skid steering needs: the inner track runs slower
than its sprocket) is not modelled, the turning resistance does not fall with speed or radius, there is
no side slip of the centre under lateral load (no drifting), and the ground is flat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import Vehicle
from . import car
from .controls import Signal, signal
from .spec import TankSpec

TRACKS = ("track_left", "track_right")


@dataclass(frozen=True)
class TankModel:
    """A compiled tank: spec, track force signals (N, clipped to +-max_track_force), resistances."""

    spec: TankSpec
    force_left: Signal
    force_right: Signal
    gravity: float = 9.81
    alpha: float = 0.5
    inertia: np.ndarray = field(init=False)  # (K, m) on (omega, v)
    resistance: np.ndarray = field(init=False)  # Coulomb (yaw moment N m, force N)

    def __post_init__(self):
        s = self.spec
        weight = s.mass * self.gravity
        inertia = np.array([s.yaw_inertia, s.mass])
        resistance = np.array([s.lateral_friction * weight * s.track_length / 4, s.rolling_resistance * weight])
        inertia.flags.writeable = resistance.flags.writeable = False
        object.__setattr__(self, "inertia", inertia)
        object.__setattr__(self, "resistance", resistance)

    def tracks(self, t: float) -> np.ndarray:
        """(F_l, F_r) at t, N, clipped to the tractive limit."""
        limit = self.spec.max_track_force
        return np.clip([self.force_left(t), self.force_right(t)], -limit, limit)

    def generalised(self, t: float) -> np.ndarray:
        """(tau, F): the tracks' yaw moment (N m) and forward force (N) at t."""
        left, right = self.tracks(t)
        return np.array([(right - left) * self.spec.track_gauge / 2, left + right])


def compile_tank(vehicle: Vehicle, gravity=(0.0, 0.0, -9.81), alpha: float = 0.5) -> TankModel:
    """The TankModel of a Vehicle of type 'tank' under gravity (its magnitude loads the tracks)."""
    return TankModel(vehicle.spec, signal(vehicle.control("force_left")), signal(vehicle.control("force_right")),
                     float(np.linalg.norm(gravity)), alpha)


@dataclass
class TankState:
    """Node k: time, pose (theta, x, y) of the centre, momentum p_k^- = (K omega, m v) of the last step
    (of the start velocity at k = 0), the last twist (omega, v) and each track's travel (m, left, right)."""

    k: int
    t: float
    theta: float
    x: float
    y: float
    p: np.ndarray
    xi: np.ndarray
    travel: np.ndarray = field(default_factory=lambda: np.zeros(2))


def start(model: TankModel, theta: float, x: float, y: float, speed: float = 0.0, yaw_rate: float = 0.0,
          t0: float = 0.0) -> TankState:
    """State at t0 with the centre at (x, y), heading theta, forward speed (m/s) and yaw rate (rad/s)."""
    xi = np.array([yaw_rate, speed], dtype=float)
    return TankState(0, float(t0), float(theta), float(x), float(y), model.inertia * xi, xi)


def _clip(p: np.ndarray, impulse: np.ndarray, resistance: np.ndarray) -> np.ndarray:
    return np.array([car._apply_impulse(a, b, c) for a, b, c in zip(p, impulse, resistance)])


def impulses(model: TankModel, state: TankState, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(track impulse (tau, F), resistance impulse) at node k, the car's quadrature of each."""
    a = model.alpha
    drive = np.array([car.quadrature(lambda t, i=i: model.generalised(t)[i], a, state.k, state.t, h)
                      for i in range(2)])
    share = (1 - a) + (a if state.k > 0 else 0.0)
    return drive, share * h * model.resistance


def step(model: TankModel, state: TankState, h: float) -> np.ndarray:
    """Advance by one explicit step of size h; returns xi_k = (omega, v) on the step."""
    drive, resist = impulses(model, state, h)
    state.p = _clip(state.p, drive, resist)
    xi = state.p / model.inertia
    state.theta, state.x, state.y = car.arc(state.theta, state.x, state.y, h * xi[0], h * xi[1])
    half = 0.5 * model.spec.track_gauge
    state.travel = state.travel + h * np.array([xi[1] - half * xi[0], xi[1] + half * xi[0]])
    state.xi = xi
    state.k += 1
    state.t += h
    return xi


def node_momentum(model: TankModel, state: TankState, h: float) -> np.ndarray:
    """(K omega, m v) at t_k: p_k^- plus segment k-1's share a h of its impulses (p(0) at the start)."""
    if state.k == 0:
        return state.p
    a, t = model.alpha, state.t - h
    return _clip(state.p, a * h * model.generalised(t + a * h), a * h * model.resistance)


def energy(model: TankModel, state: TankState, h: float) -> float:
    """Kinetic energy at t_k (J) of the node momentum; the tank has no potential energy on flat ground."""
    p = node_momentum(model, state, h)
    return float(0.5 * np.sum(p * p / model.inertia))


def poses(model: TankModel, state: TankState) -> np.ndarray:
    """World pose (1, 7) x y z qw qx qy qz of the hull (centre of mass)."""
    return np.array([[state.x, state.y, model.spec.com_height, np.cos(state.theta / 2), 0.0, 0.0,
                      np.sin(state.theta / 2)]])

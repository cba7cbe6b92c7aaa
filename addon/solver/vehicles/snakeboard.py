"""The snakeboard (seed 001 §5.2.2): prescribed rider shape, explicit discrete momentum equation on SE(2).

Owns the snakeboard's reduced model, its step and its outputs. Shape r = (psi, phi): the rider's twist
(rotor angle) and foot angle (front wheel set at +phi, rear at -phi), both keyed, as the seed's Fig. 1
animates them. No side slip at either wheel set leaves one allowed body velocity direction,
e(phi) = (sin phi, l cos phi, 0) (heading rate, forward, sideways), so xi = Omega e(phi) with one
unknown Omega per step (derived from the two wheel constraints; the seed's e_1 = 2 cos(phi) e with its
front and rear swapped, singular where this one is not). Lagrangian (Ostrowski, seed's M):
l = 1/2 [K w^2 + m |v|^2 + 2 I u_psi w + I u_psi^2 + 2 J u_phi^2], mu = dl/dxi = (K w + I u_psi, m v).

Step k (tau = exp, alpha = 1/2): phi_{k+a} = (1 - a) phi_k + a phi_{k+1}, u_psi = (psi_{k+1} - psi_k) / h,

    e(phi_k)^T (mu_k - mu_{k-1}) = 0,  mu_k = M Omega_k e(phi_{k+a}) + (I u_psi, 0, 0)   (linear in Omega_k)
    g_{k+1} = g_k exp(h Omega_k e(phi_{k+a}))

the seed's simplified momentum equation (exact for C = I - ad/2, and with a frozen shape exactly
conserving e^T mu: Omega stays constant and the board runs on a circle of radius l / tan(phi)). The
start uses mu(0) from the initial forward speed and the rotor's keyed rate at t = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import groups
from ..model import Vehicle
from .controls import Signal, rate, signal
from .spec import SnakeboardSpec

BODIES = ("board", "front_wheels", "rear_wheels", "rotor")


@dataclass(frozen=True)
class SnakeboardModel:
    """A compiled snakeboard: its spec, the keyed rotor angle psi(t) and foot angle phi(t) (clipped), rad."""

    spec: SnakeboardSpec
    rotor: Signal
    rotor_rate: Signal
    steer: Signal
    alpha: float = 0.5

    @property
    def inertia(self) -> np.ndarray:
        """M (3, 3) = diag(K, m, m) on twists (w, vx, vy)."""
        s = self.spec
        return np.diag([s.yaw_inertia, s.mass, s.mass])

    def direction(self, phi: float) -> np.ndarray:
        """e(phi) (3,): the only body twist both wheel sets allow, per unit Omega."""
        return np.array([np.sin(phi), self.spec.half_length * np.cos(phi), 0.0])

    def phi(self, t: float) -> float:
        limit = self.spec.max_steer
        return float(np.clip(self.steer(t), -limit, limit))


def compile_snakeboard(vehicle: Vehicle) -> SnakeboardModel:
    rotor = vehicle.control("rotor")
    return SnakeboardModel(vehicle.spec, signal(rotor), rate(rotor), signal(vehicle.control("steer")))


@dataclass
class SnakeboardState:
    """Node k: time, board pose (theta, x, y), the last segment's twist xi (3,) and momentum mu (3,)."""

    k: int
    t: float
    theta: float
    x: float
    y: float
    xi: np.ndarray
    mu: np.ndarray


def start(model: SnakeboardModel, theta: float, x: float, y: float, speed: float, t0: float = 0.0) -> SnakeboardState:
    """State at t0; the board moves forward at `speed` (m/s) along its allowed direction."""
    e = model.direction(model.phi(t0))
    xi = speed / e[1] * e
    mu = model.inertia @ xi + np.array([model.spec.rotor_inertia * model.rotor_rate(t0), 0.0, 0.0])
    return SnakeboardState(0, float(t0), float(theta), float(x), float(y), xi, mu)


def step(model: SnakeboardModel, state: SnakeboardState, h: float) -> None:
    """One explicit step of size h (see the module docstring)."""
    s, a, t = model.spec, model.alpha, state.t
    phi_k, phi_next = model.phi(t), model.phi(t + h)
    e_k, e_mid = model.direction(phi_k), model.direction((1 - a) * phi_k + a * phi_next)
    u_psi = (model.rotor(t + h) - model.rotor(t)) / h
    M = model.inertia
    omega = (e_k @ state.mu - e_k[0] * s.rotor_inertia * u_psi) / (e_k @ M @ e_mid)
    xi = omega * e_mid
    step_g = groups.se2_exp(h * xi)
    c, sn = np.cos(state.theta), np.sin(state.theta)
    state.x += c * step_g[0, 2] - sn * step_g[1, 2]
    state.y += sn * step_g[0, 2] + c * step_g[1, 2]
    state.theta += h * xi[0]
    state.xi = xi
    state.mu = M @ xi + np.array([s.rotor_inertia * u_psi, 0.0, 0.0])
    state.k += 1
    state.t += h


def side_slip(model: SnakeboardModel, theta0: float, x0: float, y0: float, theta1: float, x1: float, y1: float,
              t0: float, h: float) -> float:
    """Largest lateral speed (m/s) of the two wheel sets over one step, from its two poses.

    The step's twist is the SE(2) log of the relative pose over h; each wheel set, turned by +-phi at
    the step's quadrature point, may only move along its own heading.
    """
    c, sn = np.cos(theta0), np.sin(theta0)
    relative = groups.se2_element(theta1 - theta0, c * (x1 - x0) + sn * (y1 - y0), -sn * (x1 - x0) + c * (y1 - y0))
    w, vx, vy = groups.se2_log(relative) / h
    a, l = model.alpha, model.spec.half_length
    phi = (1 - a) * model.phi(t0) + a * model.phi(t0 + h)
    front = -np.sin(phi) * vx + np.cos(phi) * (vy + l * w)
    rear = np.sin(phi) * vx + np.cos(phi) * (vy - l * w)
    return float(max(abs(front), abs(rear)))


def momentum(model: SnakeboardModel, state: SnakeboardState) -> float:
    """e(phi_k)^T mu_{k-1}: the momentum along the allowed direction (constant while the shape is frozen)."""
    return float(model.direction(model.phi(state.t)) @ state.mu)


def energy(model: SnakeboardModel, state: SnakeboardState, h: float) -> float:
    """Kinetic energy (J) of the last step: 1/2 xi^T M xi + I u_psi w + 1/2 I u_psi^2 + J u_phi^2 (the rider works)."""
    s, t = model.spec, state.t
    u_psi = (model.rotor(t) - model.rotor(t - h)) / h if state.k else model.rotor_rate(t)
    u_phi = (model.phi(t) - model.phi(t - h)) / h if state.k else 0.0
    xi = state.xi
    return float(0.5 * xi @ model.inertia @ xi + s.rotor_inertia * u_psi * xi[0] + 0.5 * s.rotor_inertia * u_psi**2
                 + s.wheel_inertia * u_phi**2)


def poses(model: SnakeboardModel, state: SnakeboardState) -> np.ndarray:
    """World poses (4, 7) of BODIES at t_k: board centre, wheel sets at +-l turned by +-phi, rotor turned by psi."""
    l, phi, psi = model.spec.half_length, model.phi(state.t), model.rotor(state.t)
    c, sn = np.cos(state.theta), np.sin(state.theta)
    offsets = np.array([0.0, l, -l, 0.0])
    yaw = state.theta + np.array([0.0, phi, -phi, psi])
    out = np.zeros((4, 7))
    out[:, 0] = state.x + c * offsets
    out[:, 1] = state.y + sn * offsets
    out[:, 3] = np.cos(yaw / 2)
    out[:, 6] = np.sin(yaw / 2)
    return out

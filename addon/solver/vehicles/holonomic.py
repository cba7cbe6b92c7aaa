"""Holonomic vehicles on SE(3): the discrete Euler-Poincare / Lagrange-d'Alembert step with exact Newton.

Seed 001 §3.1 and §4.2, eqs. (9)-(10), with tau = cay and the exact C_cay (docs/seeds.md 001-A, 001-D), so the
spatial momentum of a force-free body is conserved to round-off. Owns the step, its residual and exact
Jacobian, the start (discrete Legendre transform) and the node momentum, energy and spatial momentum;
vehicle models only supply an inertia and a body wrench (helicopter.py, boat.py, rigid_body.py).

Symbols (seed): g_k (4, 4) pose at t_k; xi_k = (w, v) (6,) body twist on [t_k, t_k + h]; I (6, 6) locked
inertia (J on angular, M on linear rows); mu = I xi. One step solves for xi_k

    C(h xi_k)^T I xi_k = mu_k^- + h f_k,     mu_k^- = C(-h xi_{k-1})^T I xi_{k-1},
    g_{k+1} = g_k cay(h xi_k),

f_k = f(t_k, g_k, (xi_{k-1} + xi_k) / 2) the body wrench (torque; force) at node k. Departures from the
seed, each second-order where the seed's choice is first-order (for velocity-dependent forces or a
forced start): the wrench sees the node velocity (xi_{k-1} + xi_k)/2 instead of xi_{k-1} (P9), and the
start gives half the impulse, C(h xi_0)^T I xi_0 = I xi(0) + (h/2) f(t_0, g_0, xi(0)) (P11, leapfrog).
Everything broadcasts over leading batch axes (many vehicles or rollouts at once).

Known property of the SE(3) group (measured, tests/solver/vehicles/test_integrator.py): the Cayley step
screws translation together with rotation, so a spinning free body's centre of mass, though it keeps its
discrete momentum exactly, moves across the spin axis slower by 1 / (1 + |h w|^2 / 4) (6 % for 2 rev/s at
24 fps). Slowly turning vehicles do not notice; a step on SO(3) x R^3 would remove it (not built).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .. import groups
from ..trajectory import ConvergenceError

Wrench = tuple[np.ndarray, Optional[np.ndarray]]
WrenchFn = Callable[[float, np.ndarray, np.ndarray], Wrench]
"""f(t, g (..., 4, 4), xi (..., 6)) -> (body wrench (..., 6) ordered (torque, force),
d wrench / d xi (..., 6, 6), or None when the wrench does not depend on the velocity)."""


@dataclass(frozen=True)
class HolonomicModel:
    """A rigid vehicle body: locked inertia, body wrench and potential energy (for reporting only).

    inertia: (6, 6) symmetric positive definite, rows (angular, linear), about the body frame origin.
    wrench: body-frame wrench of all applied forces (controls, gravity, buoyancy, drag...).
    potential: energy whose gradient is already inside `wrench` (gravity), used only in `energy`.
    force_scale: size (N) of the static forces the wrench balances at rest, the weight m |g| for a vehicle
    under gravity. It joins the Newton convergence scale, so a vehicle hovering or floating at rest (whose
    momenta and net wrench are all near zero) converges against the round-off of its weight instead of
    chasing it.
    """

    inertia: np.ndarray
    wrench: WrenchFn
    potential: Callable[[np.ndarray], np.ndarray]
    name: str = "rigid body"
    force_scale: float = 0.0

    def __post_init__(self):
        inertia = np.array(self.inertia, dtype=float)
        if inertia.shape != (6, 6) or not np.allclose(inertia, inertia.T):
            raise ValueError(f"{self.name}: inertia must be a symmetric 6x6 matrix, got shape {inertia.shape}")
        if np.linalg.eigvalsh(inertia)[0] <= 0:
            raise ValueError(f"{self.name}: inertia must be positive definite (every mass and moment > 0)")
        inertia.flags.writeable = False
        inverse = np.linalg.inv(inertia)
        inverse.flags.writeable = False
        object.__setattr__(self, "inertia", inertia)
        object.__setattr__(self, "inertia_inv", inverse)


@dataclass
class HolonomicState:
    """Where the discrete flow stands at node k: t_k, g_k, and what is known of the velocity.

    g (..., 4, 4): pose g_k. mu_minus (..., 6): the left momentum mu_k^- (I xi(0) at the start).
    xi_prev (..., 6): the last solved twist xi_{k-1}, or the initial twist xi(0) when k == 0.
    """

    k: int
    t: float
    g: np.ndarray
    xi_prev: np.ndarray
    mu_minus: np.ndarray


def start(model: HolonomicModel, g0: np.ndarray, xi0: np.ndarray, t0: float = 0.0) -> HolonomicState:
    """The state at t0 from the pose g0 (..., 4, 4) and the body twist xi0 (..., 6) at t0."""
    xi0 = np.array(xi0, dtype=float)
    return HolonomicState(0, float(t0), np.array(g0, dtype=float), xi0, xi0 @ model.inertia)


def _node_twist(state: HolonomicState, xi: np.ndarray) -> tuple[np.ndarray, float]:
    """(twist the wrench sees, d twist / d xi_k): xi(0) at the start, (xi_{k-1} + xi_k)/2 afterwards."""
    if state.k == 0:
        return state.xi_prev, 0.0
    return 0.5 * (state.xi_prev + xi), 0.5


def residual(model: HolonomicModel, state: HolonomicState, xi: np.ndarray,
             h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DEP residual at node k for a trial xi_k (..., 6), its exact Jacobian (..., 6, 6) and its scale (...).

    R = C(h xi)^T I xi - mu_k^- - w f(t_k, g_k, node twist), w = h (h/2 at the start); the scale is the
    sum of the max norms of the three terms and of w times the model's force_scale (the weight), against
    which convergence is judged.
    """
    weight = 0.5 * h if state.k == 0 else h
    node, dnode = _node_twist(state, xi)
    f, df = model.wrench(state.t, state.g, node)
    mu = xi @ model.inertia
    CT = np.swapaxes(groups.se3_dcay_inv(h * xi), -1, -2)
    transported = np.einsum("...ij,...j->...i", CT, mu)
    R = transported - state.mu_minus - weight * f
    J = CT @ model.inertia + h * groups.se3_dcay_inv_T_dxi(h * xi, mu)
    if df is not None and dnode:
        J = J - (weight * dnode) * df
    scale = (np.max(np.abs(transported), axis=-1) + np.max(np.abs(state.mu_minus), axis=-1)
             + weight * (np.max(np.abs(f), axis=-1) + model.force_scale))
    return R, J, scale


def initial_guess(model: HolonomicModel, state: HolonomicState, h: float) -> np.ndarray:
    """Explicit Euler guess for xi_k from xi_{k-1} (seed Appendix A with erratum P4): a half step at the start."""
    xi = state.xi_prev
    f, _ = model.wrench(state.t, state.g, xi)
    mu = xi @ model.inertia
    coadjoint = np.einsum("...ji,...j->...i", groups.se3_ad(xi), mu)  # ad_xi^T mu
    dt = 0.5 * h if state.k == 0 else h
    return xi + dt * ((coadjoint + f) @ model.inertia_inv)


def step(model: HolonomicModel, state: HolonomicState, h: float, tol: float = 1e-12,
         max_iterations: int = 30) -> int:
    """Solve the DEP for xi_k by Newton with the exact Jacobian, then move state to node k+1.

    Converged when every |R| <= tol * scale (see residual). Returns the number of
    Newton updates. Raises ConvergenceError (step, time, residual) after max_iterations; state is unchanged then.
    """
    xi = initial_guess(model, state, h)
    for iterations in range(max_iterations + 1):
        R, J, scale = residual(model, state, xi, h)
        error = np.max(np.abs(R), axis=-1)
        if np.all(error <= tol * scale):
            break
        if not np.all(np.isfinite(R)) or iterations == max_iterations:
            worst = float(np.max(error))
            raise ConvergenceError(
                f"{model.name}: Newton did not converge at step {state.k + 1} (t = {state.t:.6g} s) after "
                f"{iterations} iterations: momentum residual {worst:.3g} (tolerance {tol:g} relative); "
                f"try a smaller time step", step=state.k + 1, time=state.t)
        xi = xi - np.linalg.solve(J, R[..., None])[..., 0]
    mu = xi @ model.inertia
    state.g = state.g @ groups.se3_cay(h * xi)
    state.mu_minus = groups.se3_dcay_inv_T(-h * xi, mu)
    state.xi_prev = xi
    state.k += 1
    state.t += h
    return iterations


def node_momentum(model: HolonomicModel, state: HolonomicState, h: float) -> np.ndarray:
    """Body momentum at t_k (..., 6): mu_k^- + (h/2) f(t_k, g_k, I^-1 mu_k^-), second-order (mu(0) at the start)."""
    if state.k == 0:
        return state.mu_minus
    f, _ = model.wrench(state.t, state.g, state.mu_minus @ model.inertia_inv)
    return state.mu_minus + 0.5 * h * f


def node_twist(model: HolonomicModel, state: HolonomicState, h: float) -> np.ndarray:
    """Body twist at t_k (..., 6) from the node momentum."""
    return node_momentum(model, state, h) @ model.inertia_inv


def energy(model: HolonomicModel, state: HolonomicState, h: float) -> np.ndarray:
    """Kinetic energy of the node momentum plus the model's potential at g_k, (...)."""
    mu = node_momentum(model, state, h)
    return 0.5 * np.sum(mu * (mu @ model.inertia_inv), axis=-1) + model.potential(state.g)


def spatial_momentum(model: HolonomicModel, state: HolonomicState, h: float) -> np.ndarray:
    """World (spatial) momentum Ad_{g_k^-1}^T mu_k (..., 6), (angular about the world origin; linear).

    Without forces mu_k = mu_k^- = C(h xi_k)^T I xi_k and this is exactly conserved by the step
    (groups test_momentum_transport_identity).
    """
    mu = node_momentum(model, state, h)
    return np.einsum("...ji,...j->...i", groups.se3_Ad(groups.se3_inverse(state.g)), mu)

"""Midpoint variational integrator on a TreeModel: forced, constrained DEL solved by Newton.

Seed 000 §IV-V, eqs. (19)-(22), (43)-(46), alpha = 1/2, as a one-step map (q1, p1) -> (q2, p2):
  f1 = p1 + D1Ld(q1, q2) + fd(q1, q2) - Dh(q1)^T lambda = 0,   f2 = h(q2) = 0,
  D1Ld = dt/2 L_q - L_qdot,  D2Ld = dt/2 L_q + L_qdot, both at (qm, v) = ((q1+q2)/2, (q2-q1)/dt),
  p2 = D2Ld(q1, q2) + fd,   fd = dt/2 f_c(qm, v, tm)  (the paper's half/half split of the forcing).
Exact Jacobian (notes/000.md P4: the mixed terms are A and A^T, not swapped):
  d f1 / d q2 = dt/4 (B + Q_q) + (A^T - A)/2 - M/dt - (c + gain)/2,  d f2 / d q2 = Dh(q2).
Prescribed coordinates are removed from the unknowns and follow their curves. Joint limits are
contacts: a limit the new configuration would cross becomes the row h = s (q2_i - bound) (s = +1
upper, -1 lower) and stays while its impulse pushes (lambda >= 0); this is a perfectly inelastic
stop (the normal speed is absorbed, as by a rigid stop with no restitution). Ball charts are
folded after every step (kinematics.fold_charts), which makes the rotation part a Lie-group step
and keeps the Euler chains far from gimbal lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..curves import evaluate
from ..trajectory import ConvergenceError
from . import constraints
from .assembly import assemble, prescribed_values, worst_joint
from .compile import TreeModel
from .dynamics import Terms, terms
from .kinematics import Kinematics, fold_charts, forward


@dataclass
class MidpointState:
    """Integrator state after step k: q (nq,), p (nq,) discrete momentum, lam (nrow_sel,), charts, t."""

    t: float
    q: np.ndarray
    p: np.ndarray
    charts: np.ndarray
    lam: np.ndarray
    velocity_guess: np.ndarray
    rows: np.ndarray
    Dh: np.ndarray  # (nrow, nq) constraint Jacobian at q, cached from the step that produced q
    dropped_joints: tuple[str, ...] = ()
    step_index: int = 0
    contacts: tuple[tuple[int, int], ...] = ()  # active joint limits: (coordinate, +1 upper / -1 lower)
    lam_contact: np.ndarray = field(default_factory=lambda: np.zeros(0))


def nonconservative_forces(model: TreeModel, qd: np.ndarray, t: float) -> np.ndarray:
    """f_c (nq,): joint damping, velocity servos and keyed torques at velocity qd and time t."""
    f = -model.dof_damping * qd + model.dof_motor_gain * (model.dof_motor_velocity - qd)
    for k, curve in enumerate(model.dof_torque):
        if curve is not None:
            f[k] += evaluate(curve, t)
    return f


def initial_state(model: TreeModel, t0: float = 0.0) -> tuple[MidpointState, Kinematics, Terms, np.ndarray]:
    """Assemble the start, set p0 = dL/dqdot(q0, qdot0). Returns the state, its kinematics, terms, qdot0."""
    charts = np.array(model.ball_chart0)
    start = assemble(model, charts, t0)
    kin = forward(model, start.q, charts)
    tm = terms(model, kin, start.qd, t0, second=False)
    lam = np.zeros(len(start.rows))
    _, Dh = constraints.evaluate(model, kin)
    state = MidpointState(t0, start.q, tm.p.copy(), charts, lam, start.qd.copy(), start.rows, Dh,
                          start.dropped_joints)
    return state, kin, tm, start.qd


@dataclass
class DELSystem:
    """The DEL equations at one Newton iterate: residual f = (f1, f2), Jacobian J over (q2[dyn], lambda),
    and what the step needs afterwards (midpoint terms and forcing, kinematics and all-row h at q2)."""

    f: np.ndarray
    J: np.ndarray
    r1: float
    r2: float
    terms_mid: Terms
    forcing: np.ndarray
    kin2: Kinematics
    h2: np.ndarray
    Dh2: np.ndarray


def contact_rows(model: TreeModel, contacts: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Jacobian rows over the dynamic coordinates (nc, nd) and bounds (nc,) of active joint limits."""
    dyn_index = np.cumsum(~model.dof_prescribed) - 1
    rows = np.zeros((len(contacts), int((~model.dof_prescribed).sum())))
    bounds = np.zeros(len(contacts))
    for r, (dof, side) in enumerate(contacts):
        rows[r, dyn_index[dof]] = side
        bounds[r] = model.dof_upper[dof] if side > 0 else model.dof_lower[dof]
    return rows, bounds


def del_system(model: TreeModel, state: MidpointState, Dh1: np.ndarray, q2: np.ndarray, lam: np.ndarray,
               dt: float, contacts: tuple[tuple[int, int], ...] = ()) -> DELSystem:
    """Evaluate f and its exact Jacobian at (q2, lam).

    Dh1 = Dh(q1) restricted to (state.rows, dyn); lam holds the loop multipliers then one per contact.
    """
    dyn = ~model.dof_prescribed
    q1, rows = state.q, state.rows
    C, bounds = contact_rows(model, contacts)
    G1 = np.vstack([Dh1, C])
    v = (q2 - q1) / dt
    tm = terms(model, forward(model, 0.5 * (q1 + q2), state.charts), v, state.t + 0.5 * dt, second=True)
    f_c = nonconservative_forces(model, v, state.t + 0.5 * dt)
    f1 = (state.p + 0.5 * dt * (tm.g + tm.Q) - tm.p + 0.5 * dt * f_c)[dyn] - G1.T @ lam
    kin2 = forward(model, q2, state.charts)
    h2, Dh2 = constraints.evaluate(model, kin2)
    sides = np.array([side for _, side in contacts], dtype=float)
    f2 = np.concatenate([h2[rows], C @ q2[dyn] - sides * bounds])
    J11 = 0.25 * dt * (tm.B + tm.Q_q) + 0.5 * (tm.A.T - tm.A) - tm.M / dt
    J11 -= 0.5 * np.diag(model.dof_damping + model.dof_motor_gain)
    nd, nr = int(dyn.sum()), len(G1)
    J = np.zeros((nd + nr, nd + nr))
    J[:nd, :nd] = J11[np.ix_(dyn, dyn)]
    J[:nd, nd:] = -G1.T
    J[nd:, :nd] = np.vstack([Dh2[rows][:, dyn], C])
    r1 = float(np.max(np.abs(f1))) if nd else 0.0
    r2 = float(np.max(np.abs(f2))) if nr else 0.0
    return DELSystem(np.concatenate([f1, f2]), J, r1, r2, tm, f_c, kin2, h2, Dh2)


def _newton(model: TreeModel, state: MidpointState, dt: float, tol: float, max_iterations: int,
            q2: np.ndarray, lam: np.ndarray, contacts: tuple[tuple[int, int], ...],
            trace: list[float] | None) -> tuple[DELSystem, int]:
    """Solve the DEL system in place on (q2, lam) for a given contact set. Returns (system, iterations)."""
    dyn = ~model.dof_prescribed
    nd = int(dyn.sum())
    Dh1 = state.Dh[state.rows][:, dyn]
    scale = max(1.0, float(np.max(np.abs(state.p))) if len(state.p) else 1.0)
    t2 = state.t + dt
    iterations = 0
    while True:
        system = del_system(model, state, Dh1, q2, lam, dt, contacts)
        if trace is not None:
            trace.append(max(system.r1, system.r2))
        if system.r1 <= tol * scale and system.r2 <= tol:
            return system, iterations
        if iterations >= max_iterations or not np.isfinite(system.r1 + system.r2):
            worst = (f" worst loop joint {worst_joint(model, system.h2)!r} (|h| = {np.max(np.abs(system.h2)):.3g}),"
                     if len(state.rows) else "")
            raise ConvergenceError(
                f"Newton did not converge at step {state.step_index + 1} (t = {t2:.6g} s) after {iterations} "
                f"iterations: momentum residual {system.r1:.3g},{worst} try a smaller time step",
                step=state.step_index + 1, time=t2,
            )
        try:
            delta = np.linalg.solve(system.J, -system.f)
        except np.linalg.LinAlgError:
            raise ConvergenceError(
                f"singular Newton matrix at step {state.step_index + 1} (t = {t2:.6g} s): a coordinate moves no "
                "mass, or the loop constraints are redundant at this configuration",
                step=state.step_index + 1, time=t2,
            ) from None
        q2[dyn] += delta[:nd]
        lam += delta[nd:]
        iterations += 1


def _update_contacts(model: TreeModel, q2: np.ndarray, lam_contact: np.ndarray,
                     contacts: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Drop contacts whose impulse pulls (lambda < 0); add limits that q2 crosses."""
    keep = [c for c, lam in zip(contacts, lam_contact) if lam >= 0.0]
    active = {dof for dof, _ in keep}
    dyn = ~model.dof_prescribed
    for dof in np.nonzero(dyn & (q2 > model.dof_upper + 1e-12))[0]:
        if dof not in active:
            keep.append((int(dof), 1))
    for dof in np.nonzero(dyn & (q2 < model.dof_lower - 1e-12))[0]:
        if dof not in active:
            keep.append((int(dof), -1))
    return tuple(keep)


def step(model: TreeModel, state: MidpointState, dt: float, tol: float = 1e-10, max_iterations: int = 30,
         trace: list[float] | None = None) -> tuple[Kinematics, Terms, int]:
    """Advance `state` by dt in place. Returns (kinematics at q2, terms at the midpoint, Newton iterations).

    trace, when given, receives max|f| at every iterate. Raises ConvergenceError (with step and time)
    when Newton fails or its matrix is singular.
    """
    pre = model.dof_prescribed
    t2 = state.t + dt
    q2 = state.q + dt * state.velocity_guess
    q2[pre] = prescribed_values(model, t2)[0]
    contacts = state.contacts
    lam = np.concatenate([state.lam, state.lam_contact])
    iterations = 0
    for _ in range(2 * len(model.dof_lower) + 2):
        system, its = _newton(model, state, dt, tol, max_iterations, q2, lam, contacts, trace)
        iterations += its
        nloop = len(state.rows)
        updated = _update_contacts(model, q2, lam[nloop:], contacts)
        if updated == contacts:
            break
        old = dict(zip(contacts, lam[nloop:]))
        lam = np.concatenate([lam[:nloop], [max(old.get(c, 0.0), 0.0) for c in updated]])
        contacts = updated
    state.contacts, state.lam_contact = contacts, lam[len(state.rows):]
    lam = lam[: len(state.rows)]

    tm, f_c, kin2, Dh2 = system.terms_mid, system.forcing, system.kin2, system.Dh2
    p2 = 0.5 * dt * (tm.g + tm.Q) + tm.p + 0.5 * dt * f_c
    v = (q2 - state.q) / dt
    state.velocity_guess = v
    if len(model.ball_dofs):
        charts, J = fold_charts(model, kin2, state.charts)
        for b, dofs in enumerate(model.ball_dofs):
            p2[dofs] = J[b].T @ p2[dofs]
            state.velocity_guess[dofs] = np.linalg.solve(J[b], v[dofs])
            q2[dofs] = 0.0
        state.charts = charts
        kin2 = forward(model, q2, charts)
        _, Dh2 = constraints.evaluate(model, kin2)
    state.Dh = Dh2
    state.q, state.p, state.lam, state.t = q2, p2, lam, t2
    state.step_index += 1
    return kin2, tm, iterations

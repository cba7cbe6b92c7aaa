"""Midpoint variational integrator on a TreeModel: forced, constrained DEL solved by Newton.

Seed 000 §IV-V, eqs. (19)-(22), (43)-(46), alpha = 1/2, as a one-step map (q1, p1) -> (q2, p2):
  f1 = p1 + D1Ld(q1, q2) + fd(q1, q2) - Dh(q1)^T lambda = 0,   f2 = h(q2) = 0,
  D1Ld = dt/2 L_q - L_qdot,  D2Ld = dt/2 L_q + L_qdot, both at (qm, v) = ((q1+q2)/2, (q2-q1)/dt),
  p2 = D2Ld(q1, q2) + fd,   fd = dt/2 f_c(qm, v, tm)  (the paper's half/half split of the forcing).
Exact Jacobian (docs/seeds.md 000-A: the mixed terms are A and A^T, not swapped):
  d f1 / d q2 = dt/4 (B + Q_q) + (A^T - A)/2 - M/dt - (c + gain)/2,  d f2 / d q2 = Dh(q2),
solved in O(n) per Newton iteration (O(n k) with k loop rows) by articulated.py, never formed densely.
Prescribed coordinates are removed from the unknowns and follow their curves. Joint limits are
contacts: a limit the new configuration would cross becomes the row h = s (q2_i - bound) (s = +1
upper, -1 lower) and stays while its impulse pushes (lambda >= 0); this is a perfectly inelastic
stop (the normal speed is absorbed, as by a rigid stop with no restitution). A ball chart's unknown is the
step's rotation vector xi in per-step exponential coordinates (step_charts.py: C2 = C1 exp(xi), midpoint
C1 exp(xi / 2), where the chart's primitives sit at angle 0); its rows are the Lie group rows of lie_rows.py,
so the step is rotation invariant (a floating mechanism keeps its angular momentum to round-off) and
equivariant (a link keeps its spin about its own axis); after the step C2 becomes the chart (ball coordinates
0, the momentum already a body covector there). Springs on ball and free rotations (toward a rest rotation,
ball_springs.py) enter the same rows, in the C kernel too. That is the step of models without a ball joint;
a model with one steps by the link-wise discrete Lagrangian instead (linkwise.py, bordered by linkwise_system
with the same loop rows, limits and prescribed joints), in C (native/tree_step.c) or numpy: its chart midpoints let a slender link's
spin reach its subtree (docs/benchmarks_ball_charts.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import native
from ..curves import evaluate
from ..stamp import ModelStamp, check_state
from ..trajectory import ConvergenceError
from . import articulated, constraints, lie_rows, linkwise
from .assembly import assemble, independent_rows, prescribed_values, worst_joint
from .compile import TreeModel
from .dynamics import Terms, terms, user_force_vectors
from .kinematics import Kinematics, fold_charts, forward
from .step_charts import (
    StepCharts,
    fold,
    left_jacobian_transpose_derivative,
    rotation_at,
    step_charts,
)

LOOP_TOLERANCE_FACTOR = 0.1  # mirrored in native/tree_step.c


@dataclass
class MidpointState:
    """Integrator state after step k: q (nq,), p (nq,) discrete momentum, lam (nrow_sel,), charts, t;
    model: the stamp of the TreeModel that made it (step refuses a state of another)."""

    t: float
    q: np.ndarray
    p: np.ndarray
    charts: np.ndarray
    lam: np.ndarray
    velocity_guess: np.ndarray
    rows: np.ndarray
    Dh: np.ndarray | None  # (nrow, nq) constraint Jacobian at q, cached by the numpy path (None: stale)
    model: ModelStamp
    dropped_joints: tuple[str, ...] = ()
    step_index: int = 0
    contacts: tuple[tuple[int, int], ...] = ()  # active joint limits: (coordinate, +1 upper / -1 lower)
    lam_contact: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stepper: object | None = None  # native.NativeStepper for this model, made on first use
    row_conditioning: float = 0.0  # smallest / largest singular value of the kept loop rows at q (0: unknown)


@dataclass(frozen=True)
class StepResult:
    """What a step leaves for the recorder besides the state: energy at the step's midpoint, Newton
    iterations, and max |h| over every loop row at the new q."""

    energy: float
    iterations: int
    residual: float


def keyed_torques(model: TreeModel, t: float) -> np.ndarray:
    """Generalized forces (nq,) of the keyed torque motors at time t (zero where none)."""
    return np.array([0.0 if c is None else evaluate(c, t) for c in model.dof_torque])


def nonconservative_forces(model: TreeModel, qd: np.ndarray, t: float) -> np.ndarray:
    """f_c (nq,): joint damping, velocity servos and keyed torques at velocity qd and time t."""
    return -model.dof_damping * qd + model.dof_motor_gain * (model.dof_motor_velocity - qd) + keyed_torques(model, t)


def initial_state(model: TreeModel, t0: float = 0.0) -> tuple[MidpointState, Kinematics, Terms, np.ndarray]:
    """Assemble the start, set p0 = dL/dqdot(q0, qdot0). Returns the state, its kinematics, terms, qdot0."""
    charts = np.array(model.ball_chart0)
    start = assemble(model, charts, t0)
    q, qd = start.q.copy(), start.qd.copy()
    kin = forward(model, q, charts)
    if len(model.ball_dofs) and np.any(q[model.ball_dofs] != 0.0):
        # assembly moved ball angles; the Lie group rows (lie_rows.py) start from chart coordinates 0
        charts, J = fold_charts(model, q, charts)
        for b, dofs in enumerate(model.ball_dofs):
            qd[dofs] = np.linalg.solve(J[b], qd[dofs])
            q[dofs] = 0.0
        kin = forward(model, q, charts)
    tm = terms(model, kin, qd, t0, second=False)
    lam = np.zeros(len(start.rows))
    _, Dh = constraints.evaluate(model, kin)
    state = MidpointState(t0, q, tm.p.copy(), charts, lam, qd.copy(), start.rows, Dh, model.stamp,
                          start.dropped_joints)
    return state, kin, tm, qd


@dataclass
class DELSystem:
    """The DEL equations at one Newton iterate: residual f = (f1, f2); the exact Jacobian over
    (q2[dyn], lambda) as [[J11, -G1^T], [G2, 0]] with J11 in tree form (articulated.TreeJacobian) and the
    constraint rows G1 = (Dh(q1) kept rows, contacts), G2 = (Dh(q2) kept rows, contacts) over the dynamic
    coordinates (a ball chart's rows are the Lie group rows of lie_rows.py in its step's rotation vector xi,
    so G1's chart columns are Dh(q1) times J_L(xi) and G2's Dh(q2) times J_R(xi)); and what the step needs
    afterwards (midpoint terms and forcing, kinematics and all-row h at q2, the step's charts and the charts'
    next momenta D2 before forcing)."""

    f: np.ndarray
    jacobian: articulated.TreeJacobian
    G1: np.ndarray
    G2: np.ndarray
    r1: float
    r2: float
    terms_mid: Terms | None  # None on the link-wise rows
    forcing: np.ndarray
    kin2: Kinematics
    h2: np.ndarray
    Dh2: np.ndarray
    charts: StepCharts | None  # None without ball charts
    D2: np.ndarray | None
    chart_residual: float  # max over charts of |F| / BallRows.scale (0 without ball charts)
    scale: float  # the largest of the rows' momentum-like terms (their round-off floor)
    link_rows: linkwise.LinkRows | None = None  # set on the link-wise rows (linkwise_system); terms_mid is None


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
    k = model.ball_dofs
    v = (q2 - q1) / dt  # on a chart: xi / dt, the body angular velocity (q1 = 0 there, folded)
    qm, qe, charts_m, charts_2, sc = 0.5 * (q1 + q2), q2, state.charts, state.charts, None
    if len(k):  # the chart's primitives at angle 0 in C1 exp(xi / 2) and C1 exp(xi) (step_charts.py)
        sc = step_charts(state.charts, q2[k])
        qm, qe, charts_m, charts_2 = qm.copy(), q2.copy(), sc.mid, sc.end
        qm[k] = qe[k] = 0.0
    kin_m = forward(model, qm, charts_m)
    tm = terms(model, kin_m, v, state.t + 0.5 * dt, second=False)
    kin2 = forward(model, qe, charts_2)
    f_c = nonconservative_forces(model, v, state.t + 0.5 * dt)
    f1 = (state.p + 0.5 * dt * (tm.g + tm.Q) - tm.p + 0.5 * dt * f_c)[dyn] - G1.T @ lam
    jacobian = articulated.tree_jacobian(model, tm, dt)
    h2, Dh2 = constraints.evaluate(model, kin2)
    G2 = np.vstack([Dh2[rows][:, dyn], C])
    D2, chart_residual = None, 0.0
    if len(k):  # the chart rows on the rotation group (lie_rows.py)
        at = (np.cumsum(dyn) - 1)[k]
        pbar = (state.p + 0.5 * dt * f_c)[k] - (G1.T @ lam)[at]
        ball = lie_rows.ball_rows(model, sc, tm, dt, pbar)
        f1[at], D2 = ball.F, ball.D2
        chart_residual = float(np.max(np.abs(ball.F) / ball.scale[:, None]))
        U, Yc, x, R = (a.copy() for a in (jacobian.U, jacobian.Yc, jacobian.x, jacobian.R))
        U[k], Yc[k], x[k], R[k] = ball.U, ball.Yc, ball.x, ball.R
        jacobian = replace(jacobian, U=U, Yc=Yc, x=x, R=R, blocks=ball.blocks)
        G1, G2 = G1.copy(), G2.copy()
        G1[:, at] = np.einsum("rbj,bji->rbi", G1[:, at], sc.JL)
        G2[:, at] = np.einsum("rbj,bij->rbi", G2[:, at], sc.JL)  # times J_R(xi) = J_L(xi)^T
    sides = np.array([side for _, side in contacts], dtype=float)
    f2 = np.concatenate([h2[rows], C @ q2[dyn] - sides * bounds])
    r1 = float(np.max(np.abs(f1))) if len(f1) else 0.0
    r2 = float(np.max(np.abs(f2))) if len(f2) else 0.0
    scale = max(float(np.max(np.abs(tm.p))), dt * float(np.max(np.abs(tm.g + tm.Q))))
    return DELSystem(np.concatenate([f1, f2]), jacobian, G1, G2, r1, r2, tm, f_c, kin2, h2, Dh2, sc, D2,
                     chart_residual, scale)


def linkwise_system(model: TreeModel, state: MidpointState, Dh1: np.ndarray, q2: np.ndarray, lam: np.ndarray,
                    dt: float, contacts: tuple[tuple[int, int], ...] = ()) -> DELSystem:
    """del_system for the link-wise discrete Lagrangian (linkwise.py), the tree method's step on models with a
    ball joint: the same unknowns (a chart's xi in q2), loop rows G1 = Dh(q1) on the start's chart axes and
    G2 = Dh(q2) J_R(xi), limits as contacts."""
    dyn = ~model.dof_prescribed
    C, bounds = contact_rows(model, contacts)
    G1 = np.vstack([Dh1, C])
    f_c = nonconservative_forces(model, (q2 - state.q) / dt, state.t + 0.5 * dt)
    k1 = forward(model, state.q, state.charts)
    link = linkwise.rows(model, state.q, state.charts, state.p, k1, q2, dt, state.t + 0.5 * dt, f_c)
    f1 = link.F[dyn] - G1.T @ lam
    h2, Dh2 = constraints.evaluate(model, link.kin2)
    G2 = np.vstack([Dh2[state.rows][:, dyn], C])
    k = model.ball_dofs
    if len(k):
        G2[:, (np.cumsum(dyn) - 1)[k]] = np.einsum("rbj,bji->rbi", G2[:, (np.cumsum(dyn) - 1)[k]], link.JR)
    sides = np.array([side for _, side in contacts], dtype=float)
    f2 = np.concatenate([h2[state.rows], C @ q2[dyn] - sides * bounds])
    r1 = float(np.max(np.abs(f1))) if len(f1) else 0.0
    r2 = float(np.max(np.abs(f2))) if len(f2) else 0.0
    return DELSystem(np.concatenate([f1, f2]), link.jacobian, G1, G2, r1, r2, None, f_c, link.kin2, h2, Dh2,
                     None, None, 0.0, link.scale, link)


def _failure(model: TreeModel, state: MidpointState, dt: float, iterations: int, momentum_residual: float,
             h_all: np.ndarray, singular: bool) -> ConvergenceError:
    """The error for a Newton solve that failed at the step after `state`."""
    k, t2 = state.step_index + 1, state.t + dt
    if singular:
        return ConvergenceError(
            f"singular Newton matrix at step {k} (t = {t2:.6g} s): a coordinate moves no mass, or the loop "
            "constraints are redundant at this configuration", step=k, time=t2)
    worst = (f" worst loop joint {worst_joint(model, h_all)!r} (|h| = {np.max(np.abs(h_all)):.3g}),"
             if len(state.rows) else "")
    return ConvergenceError(
        f"Newton did not converge at step {k} (t = {t2:.6g} s) after {iterations} iterations: momentum "
        f"residual {momentum_residual:.3g},{worst} try a smaller time step", step=k, time=t2)


SLOW_NEWTON = 4  # iterations after which a loop-constrained solve switches to least squares


def body_frame_blocks(model: TreeModel, system: DELSystem, nd: int) -> np.ndarray:
    """The ball nodes' own blocks of the Newton matrix of the chart rows in body axes, G = J_L(xi)^-T F.

    F = J_L^T G (lie_rows.py), so J_L^T dG/dq = dF/dq - d(J_L^T G)/dxi|G on the ball's own columns, and the
    Newton step on G = 0 is the tree solve with those own blocks (O(n), exact: the same roots, quadratic
    convergence). dF/dq carries the turning of J_L times the whole bracket of the row (momenta and impulses
    ~ n^2 at the top of an n-link rope), while G is only the residual
    (tests/solver/tree/test_long_ball_chains.py)."""
    k = model.ball_dofs
    at = (np.cumsum(~model.dof_prescribed) - 1)[k]
    G = np.linalg.solve(np.transpose(system.charts.JL, (0, 2, 1)), system.f[:nd][at][..., None])[..., 0]
    return system.jacobian.blocks - left_jacobian_transpose_derivative(system.charts.xi, G)


def _newton_direction(model: TreeModel, system: DELSystem, nd: int, iterations: int,
                      body_frame: bool = False) -> np.ndarray | None:
    """The exact Newton step -J^-1 f in O(n) (articulated.py); None when J is singular.

    Near a singular configuration of a closed chain (a scissor lift passing its stretched-out
    position) the kept loop rows lose rank for a step: the multipliers are then not unique and an LU
    solve sends them towards 1e15. When Newton is slow there, the k x k Schur system of the loop rows
    is solved by minimum-norm least squares instead, which keeps the multipliers bounded and converges.
    """
    jacobian = system.jacobian
    if body_frame and system.charts is not None:
        jacobian = replace(jacobian, blocks=body_frame_blocks(model, system, nd))
    fac = articulated.factor(model, jacobian, ~model.dof_prescribed)
    if fac is None:
        return None
    least_squares = len(system.f) > nd and iterations >= SLOW_NEWTON
    return articulated.newton_direction(model, fac, system.f[:nd], system.f[nd:], system.G1, system.G2,
                                        least_squares)


def _newton(model: TreeModel, state: MidpointState, dt: float, tol: float, max_iterations: int,
            q2: np.ndarray, lam: np.ndarray, contacts: tuple[tuple[int, int], ...],
            trace: list[float] | None, body_frame: bool = False) -> tuple[DELSystem, int]:
    """Solve the DEL system in place on (q2, lam) for a given contact set (body_frame: Newton on the chart
    rows in body axes, body_frame_blocks). Returns (system, iterations)."""
    dyn = ~model.dof_prescribed
    nd = int(dyn.sum())
    if state.Dh is None:
        state.Dh = constraints.evaluate(model, forward(model, state.q, state.charts))[1]
    Dh1 = state.Dh[state.rows][:, dyn]
    scale = max(1.0, float(np.max(np.abs(state.p))) if len(state.p) else 1.0)
    iterations = 0
    rows_at = linkwise_system if linkwise.applies(model) else del_system
    correction = np.inf
    while True:
        system = rows_at(model, state, Dh1, q2, lam, dt, contacts)
        if trace is not None:
            trace.append(max(system.r1, system.r2))
        scale_it = max(scale, system.scale)  # the round-off floor of f1 scales with its largest momentum-like term
        # loop rows get a tenth of tol, so rows dropped as redundant (which follow the kept ones) stay under tol;
        # chart rows are held to their own terms, else a rope's top momenta set the tolerance of every link's
        # spin, whose axial inertia is small: its error would walk by tol * scale_it / inertia a step. On long
        # ropes the link-wise rows' floor is the top chart's rounding (1e-16 rad) times the rope's inertia over
        # dt: a Newton correction at round-off (linkwise.ROUNDOFF_STEP) ends the solve there
        settled = system.link_rows is not None and correction <= linkwise.ROUNDOFF_STEP
        if ((system.r1 <= tol * scale_it or settled) and system.r2 <= LOOP_TOLERANCE_FACTOR * tol
                and system.chart_residual <= tol):
            return system, iterations
        if iterations >= max_iterations or not np.isfinite(system.r1 + system.r2):
            raise _failure(model, state, dt, iterations, system.r1, system.h2, singular=False)
        delta = _newton_direction(model, system, nd, iterations, body_frame)
        if delta is None:
            raise _failure(model, state, dt, iterations, system.r1, system.h2, singular=True)
        q2[dyn] += delta[:nd]
        lam += delta[nd:]
        correction = float(np.max(np.abs(delta[:nd]))) if nd else 0.0
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


def _fold(model: TreeModel, state: MidpointState, q2: np.ndarray, v: np.ndarray) -> None:
    """Commit the chart fold at q2 (C2 = C1 exp(xi) becomes the chart, ball coordinates -> 0; p2 is already
    a body covector at C2) and the next velocity guess, which repeats each chart's last rotation vector in
    its new chart (the same body rotation, C3 = C2 exp(xi)).
    """
    state.velocity_guess = v.copy()
    if not len(model.ball_dofs):
        return
    state.charts = fold(state.charts, q2[model.ball_dofs])
    q2[model.ball_dofs] = 0.0


RESELECT_BELOW = 1e-2  # kept loop rows are re-picked when their conditioning falls below this
RANK_LOSS = 1e-7  # smallest / largest singular value of the kept loop rows that counts as lost rank


def _check_rank(model: TreeModel, state: MidpointState, dt: float, Dh2: np.ndarray) -> None:
    """Refuse a step that lands on a configuration where the kept loop rows lose rank.

    A closed chain crossing a singular configuration (a scissor lift passing full extension) can
    make Newton converge onto another branch of h = 0 through the singular point, with a jump in
    energy; refusing the step makes step() redo it in halves."""
    sv = np.linalg.svd(Dh2[state.rows][:, ~model.dof_prescribed], compute_uv=False)
    state.row_conditioning = float(sv[-1] / sv[0]) if len(sv) and sv[0] > 0 else 0.0
    if len(sv) and sv[-1] < RANK_LOSS * sv[0]:
        k = state.step_index + 1
        raise ConvergenceError(
            f"at step {k} (t = {state.t + dt:.6g} s) the loop constraints lose rank (the mechanism reached a "
            "singular configuration); try a smaller time step", step=k, time=state.t + dt)


def end_pose(model: TreeModel, state: MidpointState, q2: np.ndarray) -> Kinematics:
    """The kinematics at the end of a step to q2: on a chart C1 exp(xi) with xi = q2 there (step_charts.py)."""
    k = model.ball_dofs
    if not len(k):
        return forward(model, q2, state.charts)
    qe = q2.copy()
    qe[k] = 0.0
    return forward(model, qe, rotation_at(state.charts, q2[k], 1.0))


def _crosses_limit(model: TreeModel, q2: np.ndarray) -> bool:
    return bool(np.any((q2 > model.dof_upper) | (q2 < model.dof_lower)))


def _native_step(model: TreeModel, state: MidpointState, dt: float, tol: float,
                 max_iterations: int) -> StepResult | None:
    """The step with its Newton loop in the C kernel; None when a joint limit is crossed (numpy handles
    contacts) or a loop-constrained solve fails (numpy retries with its least-squares fallback).
    Leaves `state` untouched unless it returns a result."""
    if state.stepper is None:
        state.stepper = native.NativeStepper(model, linkwise.applies(model))
    t2, tmid = state.t + dt, state.t + 0.5 * dt
    q2 = state.q + dt * state.velocity_guess
    q2[model.dof_prescribed] = prescribed_values(model, t2)[0]
    out = state.stepper.step(state.q, state.p, state.lam, state.charts, dt, tol, max_iterations,
                             keyed_torques(model, tmid), q2, user_force_vectors(model, tmid), state.rows)
    if out.status != native.CONVERGED:
        if len(state.rows) and out.status != native.NOT_FINITE:
            return None  # the numpy path's least-squares fallback handles rank-deficient loop rows
        raise _failure(model, state, dt, out.iterations, state.stepper.momentum_residual, state.stepper.h,
                       singular=out.status == native.SINGULAR)
    if _crosses_limit(model, out.q2):
        return None
    if len(state.rows):
        _check_rank(model, state, dt, constraints.evaluate(model, end_pose(model, state, out.q2))[1])
    q2, p2 = out.q2, out.p2
    _fold(model, state, q2, (q2 - state.q) / dt)
    state.q, state.p, state.lam, state.t, state.Dh = q2, p2, out.lam, t2, None
    state.step_index += 1
    return StepResult(out.energy, out.iterations, out.residual_all)


def _reselect_rows(model: TreeModel, state: MidpointState) -> None:
    """Re-pick the independent loop rows at q1 (same count), keeping the multipliers of rows that stay.

    step() calls this when the kept rows' conditioning (measured after the previous step) is poor.

    Which rows of a redundant set are independent changes as a mechanism moves (a scissor lift
    passing its stretched-out position makes the rows kept at the start lose rank)."""
    if state.Dh is None:
        state.Dh = constraints.evaluate(model, forward(model, state.q, state.charts))[1]
    rows = independent_rows(state.Dh[:, ~model.dof_prescribed], rank=len(state.rows))
    if np.array_equal(rows, state.rows):
        return
    previous = dict(zip(state.rows.tolist(), state.lam))
    state.lam = np.array([previous.get(r, 0.0) for r in rows.tolist()])
    state.rows = rows


MAX_HALVINGS = 4  # a step that fails is retried as two half steps, down to dt / 2**MAX_HALVINGS


def step(model: TreeModel, state: MidpointState, dt: float, tol: float = 1e-10, max_iterations: int = 30,
         trace: list[float] | None = None, use_native: bool | None = None, halvings: int = MAX_HALVINGS,
         body_frame: bool = False) -> StepResult:
    """Advance `state` by dt in place.

    A model with a ball joint steps by the link-wise discrete Lagrangian (linkwise.py, linkwise_system);
    the others by the chart midpoint (del_system); both in the C kernel (native/tree_step.c) or numpy. trace, when
    given, receives max|f| at every iterate (numpy path). use_native: None picks the C kernel when it is built, no
    trace is asked for and no joint limit is in contact. A step whose
    Newton solve fails is redone as two half steps (still a variational step sequence, landing at the
    same time), at most `halvings` times deep; this carries closed chains through singular
    configurations they cross at speed. When that fails on a chart midpoint with free-joint charts, the step
    is redone the same way by Newton on the chart rows in body axes (body_frame_blocks, numpy path;
    body_frame=True uses it from the start): the same roots, another iteration. Raises the plain solve's
    ConvergenceError (with step and time) when both fail, `state` as it was; ValueError when `state` was
    made by another model.
    """
    check_state(model.stamp, state.model)
    if body_frame or not len(model.ball_dofs) or linkwise.applies(model):  # no fallback to keep a copy of the state for
        return _halving_step(model, state, dt, tol, max_iterations, trace, use_native, halvings, body_frame)
    start = replace(state)
    try:
        return _halving_step(model, state, dt, tol, max_iterations, trace, use_native, halvings, False)
    except ConvergenceError as error:
        plain = error
    state.__dict__.update(start.__dict__)
    try:
        return _halving_step(model, state, dt, tol, max_iterations, trace, False, halvings, True)
    except ConvergenceError:
        state.__dict__.update(start.__dict__)
        raise plain from None


def _halving_step(model: TreeModel, state: MidpointState, dt: float, tol: float, max_iterations: int,
                  trace: list[float] | None, use_native: bool | None, halvings: int, body_frame: bool) -> StepResult:
    """The step, redone as two half steps when its Newton solve fails, at most `halvings` times deep."""
    try:
        return _step_once(model, state, dt, tol, max_iterations, trace, use_native, body_frame)
    except ConvergenceError:
        if halvings <= 0:
            raise
    index = state.step_index
    first = _halving_step(model, state, 0.5 * dt, tol, max_iterations, trace, use_native, halvings - 1, body_frame)
    state.step_index = index  # both halves are step index + 1 of the requested grid: a failure names that step
    second = _halving_step(model, state, 0.5 * dt, tol, max_iterations, trace, use_native, halvings - 1, body_frame)
    state.step_index = index + 1
    return StepResult(second.energy, first.iterations + second.iterations, max(first.residual, second.residual))


def _step_once(model: TreeModel, state: MidpointState, dt: float, tol: float, max_iterations: int,
               trace: list[float] | None, use_native: bool | None, body_frame: bool = False) -> StepResult:
    """One midpoint step of size dt (see step)."""
    if use_native is None:
        use_native = native.NATIVE and trace is None and not state.contacts
    # the C kernel runs the chart midpoint's and the link-wise rows' plain Newton matrices, never the body-frame one
    use_native = use_native and not body_frame
    if len(state.rows) < model.nrow and state.row_conditioning < RESELECT_BELOW:
        _reselect_rows(model, state)
    if use_native:
        result = _native_step(model, state, dt, tol, max_iterations)
        if result is not None:
            return result
    pre = model.dof_prescribed
    t2 = state.t + dt
    q2 = state.q + dt * state.velocity_guess
    q2[pre] = prescribed_values(model, t2)[0]
    contacts = state.contacts
    lam = np.concatenate([state.lam, state.lam_contact])
    iterations = 0
    for _ in range(2 * model.nq + 2):
        system, its = _newton(model, state, dt, tol, max_iterations, q2, lam, contacts, trace, body_frame)
        iterations += its
        nloop = len(state.rows)
        updated = _update_contacts(model, q2, lam[nloop:], contacts)
        if updated == contacts:
            break
        old = dict(zip(contacts, lam[nloop:]))
        lam = np.concatenate([lam[:nloop], [max(old.get(c, 0.0), 0.0) for c in updated]])
        contacts = updated
    if len(state.rows):
        _check_rank(model, state, dt, system.Dh2)
    state.contacts, state.lam_contact = contacts, lam[len(state.rows):]

    tm, f_c = system.terms_mid, system.forcing
    if system.link_rows is not None:
        p2, energy = system.link_rows.p2, system.link_rows.energy
    else:
        p2 = 0.5 * dt * (tm.g + tm.Q) + tm.p + 0.5 * dt * f_c
        energy = tm.kinetic + tm.potential
    if system.D2 is not None:  # a chart's D2Ld in body axes at C2, plus its f+ (lie_rows.py)
        p2[model.ball_dofs] = system.D2 + 0.5 * dt * f_c[model.ball_dofs]
    _fold(model, state, q2, (q2 - state.q) / dt)
    state.Dh = system.Dh2 if not len(model.ball_dofs) else None
    state.q, state.p, state.lam, state.t = q2, p2, lam[: len(state.rows)], t2
    state.step_index += 1
    residual = float(np.max(np.abs(system.h2))) if len(system.h2) else 0.0
    return StepResult(energy, iterations, residual)

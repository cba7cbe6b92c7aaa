"""Galerkin variational integrators of order 2s (s = 1..4) on a TreeModel, by exact Newton in O(s^3 n).

Seed 004 (Fan, Schultz & Murphey, WAFR 2018, appendix): on each step the path of every coordinate is the
degree-s polynomial through s + 1 control points x^0 = q^k, x^1 .. x^s = q^(k+1) at the Lobatto points tau_a of
[0, 1], and the action is a quadrature sum over nodes c_j with weights w_j (summing to 1):
  Ld = dt sum_j w_j L(q_j, v_j),   q_j = sum_a P[j, a] x^a,   v_j = sum_a D[j, a] x^a / dt,
P[j, a] = l_a(c_j), D[j, a] = l_a'(c_j) (l_a the Lagrange basis of the control points). The seed's rule is
"lobatto": the nodes are the control points (P = I), s + 1 of them. "gauss" (s Gauss-Legendre nodes) is the
same family with the action sampled inside the step; at s = 1 it is exactly midpoint.py's rule (one node at
the middle), which tests use to check this module against it. Lobatto at s = 1 is the trapezoidal rule, a
different order-2 integrator, so order 2 in the product stays midpoint.py. With Z^a = dLd/dx^a plus the
Lagrange-d'Alembert forcing dt sum_j w_j f(q_j, v_j, t_j) . dq_j/dx^a (damping, servos, keyed torques), the
unknowns x^1..x^s (s nq) solve the DEL rows
  r^0 = p^k + Z^0 = 0,   r^a = Z^a = 0 (a = 1..s-1),   and then p^(k+1) = Z^s.
Ball and free-joint rotations use per-step exponential charts as midpoint.py does (step_charts.py): the rotation
on the step is C1 exp(xi(tau)) with xi the polynomial through xi^0 = 0, xi^1..xi^s, body angular velocity
omega_j = J_R(xi_j) xidot_j. The tree is evaluated at each node with the chart's primitives at angle 0 in chart
C1 exp(xi_j) (there, the chart torque gamma_j and momentum eta_j are lie_rows.py's), so
  Z^a = dt sum_j w_j [P[j, a] J_R(xi_j)^T (gamma_j + f_j) + (P[j, a] N_j + D[j, a] / dt J_R(xi_j))^T eta_j],
  N_j = d(J_R(x) xidot_j)/dx at xi_j,  for a >= 1 (C1 fixed);
the start row varies C1 -> C1 exp(e) with the later control points fixed as rotations (which moves xi^a by
-J_L(xi^a)^-1 e), so Z^0 = dt sum_j w_j exp(xi_j) (gamma_j + f_j) - sum_(a >= 1) J_L(xi^a)^-T Z^a, a body
covector at C1; p^(k+1) = J_R(xi^s)^-T Z^s is a body covector at C2 = C1 exp(xi^s), which becomes the next chart.
The discrete action is a function of the control rotations alone, so the scheme is rotation invariant and
equivariant like midpoint.py (a floating mechanism keeps its momenta to the Newton tolerance).

Closed loops: the kept rows h (assembly.py's independent rows) hold at every control point x^1..x^s, with one
multiplier vector per DEL row: r^0 -= Dh(q^k)^T lam^0, r^a -= Dh(x^a)^T lam^a (a = 1..s-1; on charts Dh in
xi^a, i.e. times J_R(xi^a)). Rows at the step ends only leave the interior points off the constraint and lose
the order (docs/architecture.md). Gauss s = 1 is again midpoint.py's loop step.

Newton's step is exact and costs O(s^3 n): galerkin_newton.py holds the Newton matrix in tree form for every
joint type (charts included) and eliminates it leaves to root; loop rows border it (newton_direction), with the
one block d(Dh(x^a)^T lam^a)/dx^a formed by central differences of the constraint rows (loop_blocks). Without loop
rows, an update that follows a 10-fold cut of the rows reuses the last factor (simplified Newton, `newton`: the
factor is most of an update's cost), and on trees without charts a step's first CARRY updates reuse the last
factor made at its dt (the last step's); such an update that grows the rows (GROW) is undone and the next factors
afresh. Each step starts from the last step's interpolant carried on
(galerkin_rule.extrapolation). `newton` is that loop in numpy; when the kernels are built the whole loop runs in C
instead, on every tree, charts and loops included (native/galerkin_step.c through native/galerkin_binding.py,
`newton_native`: the same iterates to round-off, and the energy after a loop-free step), and `newton` stays its
reference and the fallback. Prescribed joints and joint limits are refused at s > 1
(refusals()).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..groups import so3_exp
from ..lie import ad_twist
from ..model import ORDERS, MechanismError
from .. import native
from ..native import galerkin_binding
from ..stamp import ModelStamp, check_state
from ..trajectory import ConvergenceError
from . import constraints, galerkin_newton
from .ball_springs import chart_springs, has_springs
from .compile import TreeModel
from .dynamics import Terms, mass_matrix, terms, user_force_vectors
from .galerkin_newton import ChartNodes
from .galerkin_rule import Rule, extrapolation, rule
from .kinematics import forward
from .midpoint import LOOP_TOLERANCE_FACTOR, initial_state, keyed_torques, nonconservative_forces
from .step_charts import fold, left_jacobian, left_jacobian_transpose_derivative


def refusals(model: TreeModel, order: int) -> None:
    """Raise MechanismError for an order outside ORDERS, or naming the first feature this module cannot yet run at
    `order` > 2 (prescribed joints: their control points would follow the curve; limits: midpoint.py's contact set
    would have to act at every node)."""
    if order not in ORDERS:
        raise MechanismError(f"accuracy order must be one of {', '.join(map(str, ORDERS))}, got {order}")
    if order == 2:
        return
    mech = model.mechanism
    names = model.joint_names
    why = None
    if np.any(model.dof_prescribed):
        why = f"[[joint]] {names[model.dof_joint[np.argmax(model.dof_prescribed)]]!r} is prescribed"
    else:
        limited = np.isfinite(model.dof_lower) | np.isfinite(model.dof_upper)
        if np.any(limited):
            why = f"[[joint]] {names[model.dof_joint[np.argmax(limited)]]!r} has limits ('lower'/'upper')"
    if why is not None:
        raise MechanismError(
            f"{mech.source}: {why}, which the tree method runs at accuracy order 2 only so far; use order 2")


@dataclass
class GalerkinState:
    """After step k: t, q (nq,) (0 on chart coordinates), p (nq,) discrete momentum (body covectors on charts),
    charts (nball, 3, 3), velocity_guess (nq,) for the next warm start, model stamp, kept loop rows and their
    multipliers, step_index and the recently halved steps (step())."""

    t: float
    q: np.ndarray
    p: np.ndarray
    charts: np.ndarray
    velocity_guess: np.ndarray
    model: ModelStamp
    rows: np.ndarray  # the independent loop rows kept (assembly.py), fixed for the run
    lam: np.ndarray  # their multipliers at the last step
    dropped_joints: tuple[str, ...] = ()  # loop joints whose rows the assembly dropped as redundant
    step_index: int = 0
    previous: tuple[float, np.ndarray] | None = None  # the last step's dt and control points (s + 1, nq)
    steppers: dict = field(default_factory=dict)  # the C steps of this run by rule, and whether keyed (newton_native)
    factor: tuple | None = None  # newton's last factor (numpy path): (rule key, dt, galerkin_newton factor)
    halved: tuple[int, ...] = ()  # the steps of the last WINDOW that step() had to halve


def start(model: TreeModel, t0: float = 0.0) -> tuple[GalerkinState, float]:
    """The initial state (midpoint.initial_state's assembly and momentum) and its energy."""
    mid, _, tm, qd = initial_state(model, t0)
    state = GalerkinState(t0, mid.q, mid.p, mid.charts, qd.copy(), model.stamp, mid.rows, mid.lam, mid.dropped_joints)
    return state, tm.kinetic + tm.potential


@dataclass
class Residual:
    """The DEL rows r (s, nq), the kept loop rows h (s nrow) at x^1..x^s, the end momentum Z^s (nq,), node terms
    and the rows' convergence scale."""

    r: np.ndarray
    h: np.ndarray
    p_end: np.ndarray
    nodes: list[Terms]
    scale: float
    charts: ChartNodes | None = None


def _chart_torque(model: TreeModel, tm: Terms, charts: np.ndarray) -> np.ndarray:
    """gamma (nball, 3): each chart's torque in body axes at angle 0 (lie_rows.py's), springs included."""
    k = model.ball_dofs
    base = k[:, 0]
    E = tm.S[k]
    VP = tm.V[model.dof_parent[base]][:, None, :]
    gamma = (np.einsum("bik,bik->bi", ad_twist(VP, E), tm.H[base][:, None])
             + np.einsum("bik,bik->bi", E, tm.W[base][:, None]))
    if has_springs(model):
        gamma += chart_springs(model, charts, np.zeros((len(k), 3))).Q
    return gamma


def residual(model: TreeModel, state: GalerkinState, X: np.ndarray, dt: float, ru: Rule,
             lam: np.ndarray | None = None) -> Residual:
    """The DEL rows at unknowns X (s, nq) = x^1..x^s (chart entries: xi^a) and loop multipliers lam (the kept
    rows'), then the kept loop rows h at the step's end."""
    k = model.ball_dofs
    x = np.vstack([state.q, X])  # (s + 1, nq); chart entries of x^0 are 0
    qn, vn = ru.P @ x, ru.D @ x / dt  # node values and rates
    Z = np.zeros((ru.s + 1, model.nq))
    nodes = []
    Zstart = np.zeros((len(k), 3))
    scale = max(1.0, float(np.max(np.abs(state.p), initial=0.0)))
    spread = float(np.max(np.abs(ru.D)))
    parts: dict[str, list[np.ndarray]] = {"xi": [], "xid": [], "gamma": [], "force": [], "eta": []}
    for j, cj in enumerate(ru.c):
        t = state.t + cj * dt
        q, v, charts = qn[j].copy(), vn[j].copy(), state.charts
        if len(k):
            xi, xid = qn[j][k], vn[j][k]
            charts = state.charts @ so3_exp(xi)
            JR = np.transpose(left_jacobian(xi), (0, 2, 1))
            q[k] = 0.0
            v[k] = np.einsum("bij,bj->bi", JR, xid)
        tm = terms(model, forward(model, q, charts), v, t, second=False)
        nodes.append(tm)
        force = tm.g + tm.Q + nonconservative_forces(model, v, t)
        # round-off floor of the rows: the momenta enter them with the interpolation weights D (up to ~20 at s = 4)
        scale = max(scale, spread * float(np.max(np.abs(tm.p))), dt * float(np.max(np.abs(force))))
        wdt = ru.w[j] * dt
        torque = force[k] - tm.g[k] - tm.Q[k]  # damping, servos and keyed torques on chart rates (body axes)
        momentum = tm.p.copy()
        force[k] = momentum[k] = 0.0  # the chart columns are the Lie group terms below
        Z += wdt * (np.outer(ru.P[j], force) + np.outer(ru.D[j] / dt, momentum))
        if len(k):
            gamma = _chart_torque(model, tm, charts)
            for name, value in zip(parts, (xi, xid, gamma, torque, tm.p[k])):
                parts[name].append(value)
            torque = torque + gamma
            eta = tm.p[k]
            N = left_jacobian_transpose_derivative(xi, xid)
            rot_torque = np.einsum("bji,bj->bi", JR, torque)
            rot_eta = np.einsum("bji,bj->bi", N, eta)
            vel_eta = np.einsum("bji,bj->bi", JR, eta)
            Z[:, k] += wdt * (ru.P[j][:, None, None] * (rot_torque + rot_eta)[None]
                              + (ru.D[j] / dt)[:, None, None] * vel_eta[None])
            Zstart += wdt * np.einsum("bij,bj->bi", so3_exp(xi), torque)
    r = Z[: ru.s].copy()
    r[0] += state.p
    chart_nodes = None
    if len(k):
        chart_nodes = ChartNodes(**{name: np.array(v) for name, v in parts.items()}, charts=state.charts,
                                 Z=Z[1:][:, k].copy())
    p_end = Z[ru.s].copy()
    if len(k):
        for a in range(1, ru.s + 1):
            Zstart -= np.linalg.solve(np.transpose(left_jacobian(x[a][k]), (0, 2, 1)), Z[a][k][..., None])[..., 0]
        r[0][k] = state.p[k] + Zstart
        p_end[k] = np.linalg.solve(left_jacobian(x[ru.s][k]), Z[ru.s][k][..., None])[..., 0]  # J_R^-T = J_L^-1
    h = np.zeros((0,))
    if len(state.rows):  # rows at every control point a = 1..s; multipliers for rows 0..s-1 (module docstring)
        m = len(state.rows)
        Dh = loop_rows(model, state, None)[1]
        rows = []
        for a in range(ru.s):
            r[a] -= Dh.T @ lam[a * m:(a + 1) * m]  # Dh at x^a; on charts in xi^a (a = 0: body axes at C1)
            ha, Dh = loop_rows(model, state, x[a + 1])
            rows.append(ha)
        h = np.concatenate(rows)
    return Residual(r, h, p_end, nodes, scale, chart_nodes)


def loop_rows(model: TreeModel, state: GalerkinState, xa: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The kept loop rows h and their Jacobian Dh at control point xa (None: the step's start q^k, chart columns in
    body axes at C1); on charts Dh is in xi^a: a turn of xi^a turns C1 exp(xi^a) by J_R(xi^a) in body axes."""
    k = model.ball_dofs
    if xa is None:
        q, charts = state.q, state.charts
    else:
        q, charts = xa.copy(), state.charts
        if len(k):
            q[k], charts = 0.0, state.charts @ so3_exp(xa[k])
    h, Dh = constraints.evaluate(model, forward(model, q, charts))
    h, Dh = h[state.rows], Dh[state.rows]
    if xa is not None and len(k):
        for dofs in k:
            Dh[:, dofs] = Dh[:, dofs] @ left_jacobian(xa[dofs]).T
    return h, Dh


def loop_blocks(model: TreeModel, state: GalerkinState, X: np.ndarray, lam: np.ndarray,
                ru: Rule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loop rows' part of Newton's matrix over (X, lam): G1 (s m, s nq) with d r / d lam = -G1^T (Dh(x^a) in
    row block a = 0..s-1), G2 = d h / d X (s m, s nq), and the curvature K (s nq, s nq), d r / d X = J - K with
    K's block (a, a) = d(Dh(x^a)^T lam^a)/dx^a (a = 1..s-1): the one block formed by central differences (of the
    constraint rows only, over the coordinates they depend on)."""
    n, s, m = model.nq, ru.s, len(state.rows)
    G1, G2, K = np.zeros((s * m, s * n)), np.zeros((s * m, s * n)), np.zeros((s * n, s * n))
    G1[:m, :n] = loop_rows(model, state, None)[1]
    for a in range(1, s + 1):
        Dh = loop_rows(model, state, X[a - 1])[1]
        G2[(a - 1) * m:a * m, (a - 1) * n:a * n] = Dh
        if a == s:
            break
        G1[a * m:(a + 1) * m, a * n:(a + 1) * n] = Dh
        mu = lam[a * m:(a + 1) * m]
        for i in np.flatnonzero(np.any(Dh != 0.0, axis=0)):
            step = 1e-6 * max(1.0, abs(X[a - 1][i]))
            up, down = X[a - 1].copy(), X[a - 1].copy()
            up[i] += step
            down[i] -= step
            K[a * n:(a + 1) * n, (a - 1) * n + i] = (loop_rows(model, state, up)[1].T @ mu
                                                     - loop_rows(model, state, down)[1].T @ mu) / (2.0 * step)
    return G1, G2, K


def newton_matrix(model: TreeModel, state: GalerkinState, X: np.ndarray, lam: np.ndarray, res: Residual, dt: float,
                  ru: Rule) -> np.ndarray:
    """Newton's matrix over z = (X, lam), dense (galerkin_newton.tree_form, loop_blocks): the test reference."""
    J = galerkin_newton.dense(galerkin_newton.tree_form(model, res.nodes, X, res.charts, dt, ru))
    if not len(state.rows):
        return J
    G1, G2, K = loop_blocks(model, state, X, lam, ru)
    k = len(G1)
    return np.block([[J - K, -G1.T], [G2, np.zeros((k, k))]])


def newton_direction(model: TreeModel, state: GalerkinState, X: np.ndarray, lam: np.ndarray, res: Residual,
                     dt: float, ru: Rule) -> np.ndarray | None:
    """The exact Newton step (dX.ravel(), dlam) by galerkin_newton's O(s^3 n) elimination, bordered by the loop
    rows; None when the matrix is singular."""
    fac = galerkin_newton.factor(galerkin_newton.tree_form(model, res.nodes, X, res.charts, dt, ru))
    if fac is None:
        return None
    if not len(state.rows):
        return -galerkin_newton.solve(fac, res.r.reshape(-1, 1))[:, 0]
    G1, G2, K = loop_blocks(model, state, X, lam, ru)
    try:
        return galerkin_newton.newton_direction(fac, res.r.ravel(), G1, G2, res.h, K)
    except np.linalg.LinAlgError:
        return None


@dataclass(frozen=True)
class GalerkinResult:
    """Energy after the step (energy()), Newton iterations."""

    energy: float
    iterations: int


@dataclass(frozen=True)
class Newton:
    """Where a step's Newton loop stopped: the last iterate X (s, nq), lam (s nrow), the end momentum Z^s there,
    Newton updates made, the worst scaled row and status: "converged", "not converged" (max_iterations reached or
    a row not finite) or "singular" (a pivot block of the Newton matrix); energy() after the step when the C step
    computed it (no loop rows), else None; the Newton matrices factored (newton's simplified updates reuse one);
    newton's last factor (None from the C step, which keeps it in its scratch)."""

    X: np.ndarray
    lam: np.ndarray
    p_end: np.ndarray
    iterations: int
    worst: float
    status: str
    energy: float | None = None
    factorizations: int = 0
    factor: object = None
    points: np.ndarray | None = None  # the C step's (q^k, X) (s + 1, nq), whose rows 1..s are X (None from numpy)


def newton(model: TreeModel, state: GalerkinState, X: np.ndarray, lam: np.ndarray, dt: float, ru: Rule, tol: float,
           max_iterations: int, carried=None) -> Newton:
    """Newton on the step's DEL and loop rows from the guess (X, lam), in numpy: the reference of the C step.

    Without loop rows, an update that follows one which cut the worst row by REUSE or more solves with the last
    factor (simplified Newton: near the solution the matrix has hardly moved, and the factor is most of an
    update's cost); as soon as an update cuts less, the next one factors again. On a tree without charts or loop
    rows, `carried` (the last factor made at this dt: the last step's) serves the first CARRY updates whatever they
    cut, then on the same rule: on a whipping chain at dt = 1/24 s the warm start is ~1e-2 rad off and its first
    update hardly cuts the rows even when exact (the curvature, not the matrix, holds it back), so a fresh factor
    there is wasted (docs/benchmarks.md). The convergence test is the same for every kind of update, and the stall
    exit (round-off floor) follows exact updates only.

    A carried or reused update that leaves the worst row above GROW times the one before it (or not finite) is
    rejected: the iterate goes back to the one before it (x + delta - delta, as in C) and the next update factors
    afresh there. An old factor far from the iterate can throw it out of exact Newton's reach (chain_1000 at order
    4 and dt = 1/24 s: a carried update took the rows from 3.8e-5 to 3.0e-3 of their scale, the step then failed
    and was halved, where exact Newton from the same start converges in 6 updates). The rejected update counts as
    an iteration."""
    size = X.size
    fac = carried if not len(state.rows) and not len(model.ball_dofs) else None
    iterations, previous, factorizations, exact, moved, fresh = 0, np.inf, 0, True, np.inf, False
    delta = np.zeros(0)
    while True:
        res = residual(model, state, X, dt, ru, lam)
        loop = float(np.max(np.abs(res.h), initial=0.0))
        # relative to the rows' scale, with the loop rows held to a tenth of tol (midpoint.py's choice)
        worst = max(float(np.max(np.abs(res.r))) / res.scale, loop / LOOP_TOLERANCE_FACTOR)
        # converged; or stalled just above tol at the rows' round-off floor (velocities D x / dt, D up to ~13); or
        # at that floor whatever its height once an exact update moved the unknowns by round-off only (ROUNDOFF;
        # tol = 0 runs max_iterations updates whatever they do, the tests' way to compare iterates)
        at_floor = worst <= STALL * tol and worst > 0.5 * previous or tol > 0.0 and moved <= ROUNDOFF
        if worst <= tol or (exact and at_floor):
            return Newton(X, lam, res.p_end, iterations, worst, "converged", factorizations=factorizations, factor=fac)
        if not exact and not fresh and not worst <= GROW * previous:  # rejected: back, and factor there
            X = X - delta[:size].reshape(X.shape)
            lam = lam - delta[size:]
            fresh = True
            continue
        exact = fresh or not (fac is not None
                              and ((iterations < CARRY and not factorizations) or worst <= REUSE * previous))
        fresh = False
        previous = worst
        if iterations >= max_iterations or not np.isfinite(worst):
            return Newton(X, lam, res.p_end, iterations, worst, "not converged", factorizations=factorizations,
                          factor=fac)
        if len(state.rows):
            delta = newton_direction(model, state, X, lam, res, dt, ru)
            factorizations += 1
        else:
            if exact:
                fac = galerkin_newton.factor(galerkin_newton.tree_form(model, res.nodes, X, res.charts, dt, ru))
                factorizations += 1
            delta = None if fac is None else -galerkin_newton.solve(fac, res.r.reshape(-1, 1))[:, 0]
        if delta is None:
            return Newton(X, lam, res.p_end, iterations, worst, "singular", factorizations=factorizations, factor=fac)
        moved = max(_relative_change(delta[:size], X), _relative_change(delta[size:], lam))
        X = X + delta[:size].reshape(X.shape)
        lam = lam + delta[size:]
        iterations += 1


def _relative_change(delta: np.ndarray, x: np.ndarray) -> float:
    """An update's largest entry relative to max(1, the largest unknown it updates): newton's ROUNDOFF test."""
    return float(np.max(np.abs(delta), initial=0.0)) / max(1.0, float(np.max(np.abs(x), initial=0.0)))


_NATIVE_STATUS = {native.CONVERGED: "converged", native.NOT_CONVERGED: "not converged",
                  native.NOT_FINITE: "not converged", native.SINGULAR: "singular"}


def _rule_key(ru: Rule) -> tuple:
    return ru.s, len(ru.c), float(ru.c[0])


def newton_native(model: TreeModel, state: GalerkinState, X: np.ndarray, lam: np.ndarray, dt: float, ru: Rule,
                  tol: float, max_iterations: int, carry: int = 0) -> Newton:
    """newton() in C (native/galerkin_step.c) for a model galerkin_binding.usable() accepts: keyed torques and user
    forces evaluated here at the node times, the rest there; carry: the first `carry` updates solve with the factor
    the rule's stepper last made, when that was at this dt (newton's `carried`)."""
    key = _rule_key(ru)
    if key not in state.steppers:
        keyed = any(c is not None for c in model.dof_torque + model.force_scale)
        state.steppers[key] = galerkin_binding.GalerkinStepper(model, ru), keyed
    stepper, keyed = state.steppers[key]
    torque = forces = None  # unkeyed: the stepper's constants
    if keyed:  # at each node's time
        times = state.t + ru.c * dt
        torque = np.array([keyed_torques(model, t) for t in times])
        forces = np.array([user_force_vectors(model, t) for t in times])
    out = stepper.step(state.rows, torque, forces, state.q, state.p, dt, tol, STALL, REUSE, max_iterations, X, lam,
                       state.charts, carry)
    return Newton(out.X, out.lam, out.p_end, out.iterations, out.worst, _NATIVE_STATUS[out.status],
                  None if math.isnan(out.energy) else out.energy, out.factorizations, points=out.points)


def _step_once(model: TreeModel, state: GalerkinState, dt: float, ru: Rule, tol: float,
               max_iterations: int) -> GalerkinResult:
    k = model.ball_dofs
    if state.previous is not None and state.previous[0] == dt and len(state.previous[1]) == ru.s + 1:
        # the last step's interpolant carried on (on charts to first order: the new chart is C1 exp(xi^s))
        last = state.previous[1]
        X = extrapolation(ru.s) @ last
        if len(k):
            X[:, k] -= last[-1][k]
    else:
        X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess)  # on charts: xi^a = tau_a dt omega
    # the multipliers of the last step's rows, at every control point
    lam = np.tile(state.lam, ru.s) if len(state.rows) else state.lam
    if galerkin_binding.usable(model):
        out = newton_native(model, state, X, lam, dt, ru, tol, max_iterations, CARRY)
    else:
        key = _rule_key(ru)
        carried = state.factor[2] if CARRY and state.factor and state.factor[:2] == (key, dt) else None
        out = newton(model, state, X, lam, dt, ru, tol, max_iterations, carried)
        if out.factor is not None:
            state.factor = (key, dt, out.factor)
    step = state.step_index + 1
    if out.status == "not converged":
        raise ConvergenceError(
            f"Newton did not converge at step {step} (t = {state.t + dt:.6g} s) of the order-{2 * ru.s} tree "
            f"method after {out.iterations} iterations: relative residual {out.worst:.3g}; try a smaller time step",
            step=step, time=state.t + dt)
    if out.status == "singular":
        raise ConvergenceError(f"singular Newton matrix at step {step} (t = {state.t + dt:.6g} s) of the "
                               "tree method: a coordinate moves no mass", step=step, time=state.t + dt)
    X, lam = out.X, out.lam
    q2 = X[-1].copy()
    state.velocity_guess = (q2 - state.q) / dt
    state.previous = (dt, out.points if out.points is not None else np.vstack([state.q, X]))
    if len(k):
        state.charts = fold(state.charts, q2[k])
        q2[k] = 0.0
    state.q, state.p, state.t, state.lam = q2, out.p_end, state.t + dt, lam[:len(state.rows)]
    state.step_index += 1
    return GalerkinResult(energy(model, state) if out.energy is None else out.energy, out.iterations)


def energy(model: TreeModel, state: GalerkinState) -> float:
    """The state's energy v^T M v / 2 + V at (q, p), v = M^-1 p the Legendre transform of the discrete momentum
    (accurate to the method's order; the interpolant's own end slope is only order s), with loops projected onto
    the rows' tangent space, Dh v = 0 (p carries the next step's constraint impulse)."""
    kin = forward(model, state.q, state.charts)
    tm = terms(model, kin, np.zeros(model.nq), state.t, second=False)
    M = mass_matrix(model, tm.S, np.einsum("aij,aj->ai", tm.Ic, tm.S))
    v = np.linalg.solve(M, state.p)
    if len(state.rows):
        Dh = constraints.evaluate(model, kin)[1][state.rows]
        MiDt = np.linalg.solve(M, Dh.T)
        v -= MiDt @ np.linalg.lstsq(Dh @ MiDt, Dh @ v, rcond=None)[0]
    return 0.5 * float(v @ M @ v) + tm.potential


STALL = 100.0  # a Newton iterate within STALL * tol that no longer halves the rows is at their round-off floor
# an exact update within ROUNDOFF of the unknowns (_relative_change) moves them by a few units in the last place: the
# rows left are their round-off floor, whatever its height (it grows like 1/dt and with the chain's inertia: chain_1000
# at order 4 and dt = 1/3072 s stalls at 1e-8 to 1e-7 > STALL * tol after updates of 1e-15). galerkin_step.c's
# GALERKIN_ROUNDOFF is the same number.
ROUNDOFF = 64.0 * np.finfo(float).eps
REUSE = 0.1  # newton: after an update that cut the worst row 10-fold, the next one reuses its factor
CARRY = 2  # newton: a step's first CARRY updates solve with the last factor made at its dt (`carried`; 0: none)
# newton: a carried or reused update that leaves the worst row above GROW times the last is rejected (galerkin_step.c's
# GALERKIN_GROW is the same number). Not 1: from a whip's warm start the first carried update often gains nothing
# and the next still converges; rejecting every growth took chain_100 at order 6, dt = 1/24 s from 0.87 to 1.78
# factorisations a step, 2 takes it to 0.95 and keeps most of the robustness (docs/architecture.md)
GROW = 2.0
MAX_HALVINGS = 4  # as midpoint.py: a failed step is redone as two half steps, down to dt / 16
WINDOW = 16  # step(): a run fails when HALVED of its last WINDOW steps had to be halved
HALVED = 4


def step(model: TreeModel, state: GalerkinState, dt: float, order: int, tol: float = 1e-10,
         max_iterations: int = 30, quadrature: str = "lobatto", halvings: int = MAX_HALVINGS) -> GalerkinResult:
    """Advance `state` by dt in place with the Galerkin rule of the given order (2s). Raises ConvergenceError
    (step and time) when Newton fails even on halved steps, or when this step is the HALVED-th of the last WINDOW
    that had to be halved, `state` as it was.

    The second test is the run's guard against converged steps that do not follow the motion. A step redone in
    halves is the designed answer to a moment the step does not resolve (a whip, a snap of the chain): isolated,
    the halves are as accurate as the run. Recurring, it says dt is beyond the order's reach for this motion: the
    step's equations (a polynomial system of degree s in the control points) then have no root near the motion,
    even exact Newton started from the halves' solution diverges, and the full steps that still converge between
    the halved ones land on roots far from it. Their rows are at tolerance, and their energy error (tens of J on a
    14 kJ chain) stays under the energy audit's bound, so no per-step residual or energy test tells them apart; the
    recurrence does, on every mechanism and without a tuned scale. An isolated halving (one in 80 steps on a
    10-link chain at order 6, dt = 1/8 s, within 0.02 rad of the reference) passes; a quarter of a 16-step window
    (chain_100 at order 4, dt = 1/24 s, whose unguarded run ended far off the reference) fails, naming the step and
    the fix (dt / 2, which the halves show converges, or a higher order). Halving happens here in Python around
    either Newton (numpy or C), so both paths take the same decisions."""
    check_state(model.stamp, state.model)
    ru = rule(order // 2, quadrature)
    saved = GalerkinState(**state.__dict__)
    result, halved = _advance(model, state, dt, ru, tol, max_iterations, halvings)
    if not halved:
        return result
    k = state.step_index
    state.halved = tuple(j for j in state.halved if j > k - WINDOW) + (k,)
    if len(state.halved) >= HALVED:
        state.__dict__.update(saved.__dict__)
        raise ConvergenceError(
            f"the order-{order} tree method at dt = {dt:.6g} s does not resolve the motion at step {k} "
            f"(t = {state.t + dt:.6g} s): {HALVED} of the last {WINDOW} steps failed to converge and were redone in "
            "halves, so the full steps between them may have converged away from the motion; use a smaller time "
            "step or a higher accuracy order", step=k, time=state.t + dt)
    return result


def _advance(model: TreeModel, state: GalerkinState, dt: float, ru: Rule, tol: float, max_iterations: int,
             halvings: int) -> tuple[GalerkinResult, bool]:
    """step()'s step, redone as two half steps (recursively, `halvings` deep) when Newton fails; and whether it was."""
    saved = GalerkinState(**state.__dict__)
    try:
        return _step_once(model, state, dt, ru, tol, max_iterations), False
    except ConvergenceError:
        state.__dict__.update(saved.__dict__)
        if halvings <= 0:
            raise
    index = state.step_index
    first = _advance(model, state, 0.5 * dt, ru, tol, max_iterations, halvings - 1)[0]
    state.step_index = index
    second = _advance(model, state, 0.5 * dt, ru, tol, max_iterations, halvings - 1)[0]
    state.step_index = index + 1
    return GalerkinResult(second.energy, first.iterations + second.iterations), True

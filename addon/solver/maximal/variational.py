"""One step of seed 003's maximal-coordinate variational integrator, solved by Newton's method.

Given the knot z_1 = (x, q) and the previous interval velocities zdot_0, find zdot_1 and the joint
multipliers lambda with (seed 003 eqs. (10), (16), (20a)-(20b))

    m (v_1 - v_0)/dt - F(z_1) - f_damp - G_x^T lambda = 0
    ½[s_1 J w_1 + w_1 x J w_1 - s_0 J w_0 + w_0 x J w_0] - tau(z_1) - tau_damp - G_phi^T lambda = 0
    (g(z_2(zdot_1)) - target(t_2)) / dt = 0

with G = dg/d(x, phi) at z_1 (force side), g at z_2 (velocity side), s_k = sqrt(4/dt^2 - |w_k|^2),
and the rotational rows halved (torque units, docs/seeds.md 003-B). The first step starts from the
continuous velocity zbar of the tree model's initial state: zdot_0 := 2 zbar - zdot_1 there, so that the
knot velocity (zdot_0 + zdot_1)/2 is zbar and the start is second-order accurate.

The Newton matrix is the exact derivative of these residuals (checked against finite differences in
tests/solver/maximal/test_maximal_jacobian.py); linear.py solves it with Baraff's factorisation. When that
factorisation is the whole matrix (no pairs, no bordered loop rows, no damper coupling) and the first Newton
step was full, the second iteration reuses it (a chord step: docs/maximal.md, "One factorisation for the first
two iterations"); later iterations factor again.
Inequalities (joint limits; contacts when the mechanism has colliders) go through
interior_point.py, which adds its rows to the same matrix.

The model is built once and never written; everything a step changes (the knot, velocities,
multipliers, windings, the interior point's iterate and warm start, the solver's scratch) lives in the
MaximalState, which records the model that made it: `step` refuses a state of another model.

With the C kernels built, `step` hands the whole step to native_step.py (native/maximal_step.c, this
module's twin, interior point included; the steps it does not take come back here); setting
state.kernel = False keeps a state on this numpy path, the reference.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse

from ..collision.world import CollisionWorld
from ..lie import quat_to_matrix
from ..model import Mechanism
from ..stamp import check_state, new_stamp
from ..trajectory import ConvergenceError, StepTooLargeError
from . import forces, interior_point, native_step
from .bodies import advance, body_set, rotation_jacobian, rotational_momentum, rotational_momentum_jacobian
from .forces import force_set
from .interior_point import limited_coordinates
from .joints import ANGLE, ANGLES, frames, generic_rows, joint_set, of_kinds, row_targets, unwrap
from .linear import LinearSolver, NewtonMatrix, RowBlocks
from .stability import limit_exceeded
from .state import Evaluation, Knot, MaximalModel, MaximalState

MAX_ITERATIONS = 100  # contact steps with recentring restarts (interior_point.MAX_RESTARTS) may need them
LINE_SEARCH_HALVINGS = 8
STALL_STEPS = 8  # interior-point steps shorter than 0.05 in a row before interior_point.restart()


def _read_only(record: object) -> None:
    """Set every numpy array among the fields of `record` and of its dataclass fields read-only."""
    for f in fields(record):
        value = getattr(record, f.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        elif is_dataclass(value) and not isinstance(value, type):
            _read_only(value)


def compile_maximal(mech: Mechanism, loop_joints: tuple[int, ...]) -> MaximalModel:
    """Model of `mech`; `loop_joints` (the tree compiler's cut joints) become auxiliary rows."""
    bs = body_set(mech)
    js = joint_set(mech)
    fs = force_set(mech, js)
    order, primary = [], []
    world = bs.count
    for j in range(js.count):
        rows = np.nonzero(js.row_joint == j)[0]
        if j in loop_joints or len(rows) == 0:
            continue
        start = len(order)
        order.extend(rows)
        a, b = int(js.parent[j]), int(js.child[j])
        primary.append((slice(start, len(order)), (b,) if a == world else (a, b)))
    n_primary = len(order)
    for j in loop_joints:
        order.extend(np.nonzero(js.row_joint == j)[0])
    model = MaximalModel(mech, bs, js, fs, tuple(loop_joints), np.array(order, dtype=np.int64), n_primary,
                         tuple(primary), CollisionWorld(mech) if mech.colliders else None,
                         limited_coordinates(js.lower, js.upper), new_stamp("maximal", mech.name))
    _read_only(model)
    return model


class StepResult(NamedTuple):
    """What a step reports (a tuple: cheap to make once per step)."""

    iterations: int
    residual: float
    energy: float
    poses: np.ndarray | None = None  # body-frame poses (B, 7) at the new knot, when the C step made them


def knot_terms(model: MaximalModel, state: MaximalState, dt: float) -> Knot:
    js, fs, bs = model.joints, model.forces, model.bodies
    cached = state.frames_at
    if cached is not None and cached[0] is state.x and cached[1] is state.q:
        fr = cached[2]
    else:
        fr = frames(js, state.x, state.q)
    rows = model.order
    angle_rows = js.row_kind[rows] == ANGLE
    val, G = generic_rows(fr, js.row_joint[rows], js.row_kind[rows])
    val[angle_rows] += state.row_winding[rows][angle_rows]
    cval, cjac = forces.coordinates(js, fs, fr, state.x, state.q, state.coord_winding)
    torques = forces.knot_torques(js, state.t, dt)
    wrench = forces.knot_wrench(bs.gravity, bs.mass, fs, quat_to_matrix(state.q), cval, cjac, torques, state.t, dt)
    return Knot(G, cval, cjac, wrench, row_targets(js, state.t + dt)[rows], val,
                forces.potential(bs.gravity, bs.mass, state.x, fs, cval), fr.qrel)


def _velocity_side(jac: np.ndarray, a: np.ndarray, b: np.ndarray, Wr: np.ndarray) -> np.ndarray:
    """d(row at z_2)/d zdot_1 / dt from the row's (x, phi) Jacobian at z_2: phi columns times W(w)/dt."""
    out = jac.copy()
    out[:, 3:6] = np.einsum("ri,rik->rk", jac[:, 3:6], Wr[a])
    out[:, 9:12] = np.einsum("ri,rik->rk", jac[:, 9:12], Wr[b])
    return out


def _damper_wrench(model: MaximalModel, state: MaximalState, knot: Knot, c_eff: np.ndarray,
                   rate: np.ndarray) -> np.ndarray | float:
    """Body wrenches (B, 6) of the dampers and servos at the knot: each interval's force acts through
    its own coordinate's Jacobian at z_1, half each (the previous interval's from state.coord_jac_prev).
    Joint coordinates read the same function on both intervals (one Jacobian); a rotation damper's step
    coordinates restart at every knot, so the two differ (a body impulse dt/2 f_c at both ends of each
    step, as the tree's ball charts take it). At the start, the continuous rate through the knot's."""
    fs = model.forces
    servo = fs.gain * fs.target_velocity
    if state.startup:
        forcing = (-c_eff * state.coord_rate + servo)[:, None] * knot.cjac
    else:
        previous = knot.cjac if state.coord_jac_prev is None else state.coord_jac_prev
        forcing = 0.5 * ((-c_eff * state.coord_rate + servo)[:, None] * previous
                         + (-c_eff * rate + servo)[:, None] * knot.cjac)
    if not np.any(forcing):
        return 0.0
    return forces.scatter(model.bodies.count, fs.coord_a, fs.coord_b, forcing)


def evaluate(model: MaximalModel, state: MaximalState, knot: Knot, V: np.ndarray, lam: np.ndarray,
             active: np.ndarray, dt: float, pairs: bool = False) -> Evaluation:
    """Residual and exact Newton matrix at velocities V (B, 6), multipliers lam (R,) (model.order).

    `active` (R,) bool selects the rows in the system; with `pairs` the inequality pairs' rows are added
    at the current multipliers and slacks of state.interior.
    """
    bs, js, fs = model.bodies, model.joints, model.forces
    nb = bs.count
    v, w = V[:, :3], V[:, 3:]
    x2, q2 = advance(state.x, state.q, v, w, dt)
    fr2 = frames(js, x2, q2)
    rows = model.order
    kind = js.row_kind[rows]
    raw2, jac2 = generic_rows(fr2, js.row_joint[rows], kind)
    angle_rows = kind == ANGLE
    row_winding2 = unwrap(raw2[angle_rows], knot.row_val1[angle_rows])
    raw2[angle_rows] += row_winding2
    Wr = np.concatenate([rotation_jacobian(w, dt) / dt, np.eye(3)[None]], axis=0)
    a_all = js.parent[js.row_joint[rows]]
    b_all = js.child[js.row_joint[rows]]
    C = _velocity_side(jac2, a_all, b_all, Wr)
    cval2, cjac2 = forces.coordinates(js, fs, fr2, x2, q2, state.coord_winding, knot.qrel)
    is_angle = np.concatenate([of_kinds(js.coord_kind, ANGLES), np.zeros(len(fs.spring_a), bool)])
    coord_turns = np.where(is_angle, unwrap(cval2, knot.cval), 0.0)
    cval2 += coord_turns
    rate = (cval2 - knot.cval) / dt
    c_eff = fs.damping + fs.gain
    if state.startup:
        v0 = 2.0 * state.v - v
        w0 = 2.0 * state.w - w
        trans_diag = 2.0 * bs.mass / dt
    else:
        v0, w0 = state.v, state.w
        trans_diag = bs.mass / dt
    damp_wrench = _damper_wrench(model, state, knot, c_eff, rate)
    r = np.empty((nb, 6))
    r[:, :3] = bs.mass[:, None] * (v - v0) / dt
    r[:, 3:] = rotational_momentum(bs.inertia, w, dt, +1) - rotational_momentum(bs.inertia, w0, dt, -1)
    r -= knot.wrench + damp_wrench
    sel = slice(None) if active.all() else active  # views, not copies, when every row is in
    G = knot.G[sel]
    a, b = a_all[sel], b_all[sel]
    r -= forces.scatter(nb, a, b, G * lam[sel, None])
    D = np.zeros((nb, 6, 6))
    D[:, :3, :3] = trans_diag[:, None, None] * np.eye(3)
    D[:, 3:, 3:] = rotational_momentum_jacobian(bs.inertia, w, dt, +1)
    if state.startup:
        D[:, 3:, 3:] += rotational_momentum_jacobian(bs.inertia, w0, dt, -1)
    coupling = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 6, 6)))
    cjac2_velocity = _velocity_side(cjac2, fs.coord_a, fs.coord_b, Wr) if pairs else None
    damped = np.nonzero(c_eff)[0]
    if len(damped) and not state.startup:
        Ct = cjac2_velocity[damped] if pairs else \
            _velocity_side(cjac2[damped], fs.coord_a[damped], fs.coord_b[damped], Wr)
        blocks = 0.5 * c_eff[damped, None, None] * knot.cjac[damped][:, :, None] * Ct[:, None, :]
        ca, cb = fs.coord_a[damped], fs.coord_b[damped]
        ia, ib, K = [], [], []
        for (ra, rs), (cc, cs) in (((ca, slice(0, 6)), (ca, slice(0, 6))), ((cb, slice(6, 12)), (cb, slice(6, 12))),
                                   ((ca, slice(0, 6)), (cb, slice(6, 12))), ((cb, slice(6, 12)), (ca, slice(0, 6)))):
            keep = (ra < nb) & (cc < nb)
            if ra is cc:
                np.add.at(D, ra[keep], blocks[keep][:, rs, cs])
            else:
                ia.append(ra[keep])
                ib.append(cc[keep])
                K.append(blocks[keep][:, rs, cs])
        if ia:
            coupling = (np.concatenate(ia), np.concatenate(ib), np.concatenate(K))
    row_res = (raw2 - knot.targets)[sel] / dt
    na = np.where(a < nb, a, -1)
    nbb = np.where(b < nb, b, -1)
    blocks = RowBlocks(na, nbb, G[:, :6], G[:, 6:], C[sel, :6], C[sel, 6:])
    n_primary = int(np.count_nonzero(active[:model.n_primary]))
    n_aux = len(a) - n_primary
    matrix = NewtonMatrix(D, blocks, n_primary, coupling, scipy.sparse.csr_matrix((n_aux, n_aux)))
    ev = Evaluation(r, row_res, matrix, x2, q2, raw2, cval2, rate, row_winding2,
                    state.coord_winding + coord_turns[:len(js.coord_kind)], cjac2_velocity, cjac2, frames2=fr2)
    if pairs:
        interior_point.extend(model, state, ev, V, dt)
    return ev


def _select_rows(model: MaximalModel, solver: LinearSolver, matrix: NewtonMatrix, active: np.ndarray) -> np.ndarray:
    """Drop auxiliary rows that are redundant (a planar loop closed by a full 3-D joint): pivoted QR of
    the k x k Schur complement of the bordered system with unit body blocks (so that floored inertias
    do not hide the redundancy), rank at 1e-9 relative."""
    r = matrix.rows
    at_knot = RowBlocks(r.a, r.b, r.Ga, r.Gb, r.Ga, r.Gb)  # both sides at z_1: redundancy is a property of z_1
    unit = NewtonMatrix(np.broadcast_to(np.eye(6), matrix.D.shape).copy(), at_knot, matrix.n_primary,
                        matrix.coupling, matrix.E)
    schur = solver.schur(unit)
    if schur is None:
        return active
    _, R, piv = scipy.linalg.qr(schur, pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > 1e-9 * diag[0])) if len(diag) and diag[0] > 0 else 0
    aux_index = np.nonzero(active)[0][model.n_primary:]
    keep = np.zeros(len(active), bool)
    keep[:model.n_primary] = True
    keep[aux_index[np.sort(piv[:rank])]] = True
    return keep


def _merit(ev: Evaluation) -> float:
    return float(np.linalg.norm(ev.body_residual)) + float(np.linalg.norm(ev.row_residual))


def _remaining_error(change: float, previous_change: float, full_newton_step: bool) -> float:
    """Estimated distance of the new iterate from the solution, from the last two step lengths (Hairer &
    Wanner, Solving ODEs II, IV.8): with contraction theta = change / previous_change < 1 it is at most
    theta / (1 - theta) * change; Newton's contraction only improves as it converges, so this is
    conservative. Otherwise (first step, damped or interior-point steps, no contraction) the last
    step's length, which bounds the error of the iterate before it."""
    theta = change / previous_change if 0.0 < previous_change < np.inf else np.inf
    if full_newton_step and theta < 0.5:
        return theta / (1.0 - theta) * change
    return change


def _newton(model: MaximalModel, state: MaximalState, knot: Knot, dt: float,
            tol: float) -> tuple[bool, np.ndarray, np.ndarray, Evaluation, int]:
    """Newton iterations of one step from the previous velocities; returns (converged, V, lam, the last
    evaluation, iterations + 1). Without inequalities the step is globalised by halving it until the
    residual norm decreases (as the reference code's line search); with them (state.interior) the
    fraction-to-the-boundary rule already shortens it."""
    nb = model.bodies.count
    pairs = state.interior is not None
    active = state.aux_active
    V = np.concatenate([state.v, state.w], axis=1) + state.acceleration_guess
    lam = state.lam.copy()
    error = np.inf  # estimated |zdot - zdot*| dt of the current iterate
    previous_change = np.inf
    short_steps = 0
    ev = evaluate(model, state, knot, V, lam, active, dt, pairs)
    factored = ev.matrix
    direct = not pairs and factored.rows.count == factored.n_primary and not len(factored.coupling[0])
    chord = False  # the next solve reuses the factorisation of `factored`
    for iteration in range(1, MAX_ITERATIONS + 1):
        gap = np.max(np.abs(ev.row_residual), initial=0.0) * dt
        if gap <= tol and error <= tol and (not pairs or interior_point.converged(model, state, ev.ip_h, tol)):
            return True, V, lam, ev, iteration
        if not chord:
            factored = ev.matrix
            state.solver.factor(factored)
        rhs = -np.concatenate([ev.body_residual.ravel(), ev.row_residual])
        n_pre = len(rhs)
        if not pairs:
            du = state.solver.solve(factored, rhs)
        else:  # Mehrotra: affine direction, then the corrector with the same factorisation
            du = state.solver.solve(ev.matrix, np.concatenate([rhs, interior_point.rhs(state, ev.ip_h, 0.0)]))
            target = interior_point.corrector_target(state, du[n_pre:]) if np.all(np.isfinite(du)) else 0.0
            du = state.solver.solve(ev.matrix, np.concatenate([rhs, interior_point.rhs(state, ev.ip_h, target)]))
        state.sweeps.append(state.solver.sweeps)
        if not np.all(np.isfinite(du)):
            break
        n_rows = len(ev.row_residual)
        dV = du[:6 * nb].reshape(nb, 6)
        dmu = du[6 * nb:6 * nb + n_rows]
        dpair = du[6 * nb + n_rows:]
        alpha, ds = interior_point.step_length(state, dpair, target) if pairs else (1.0, None)
        spin = np.max(np.linalg.norm(V[:, 3:] + alpha * dV[:, 3:], axis=1), initial=0.0) * dt
        if spin > 1.0:  # keep |omega| dt <= 1 (the update (13) needs < 2; the reference code stops at 1)
            alpha *= 1.0 / spin
        if not pairs:
            merit = _merit(ev)
            for _ in range(LINE_SEARCH_HALVINGS):
                trial_lam = lam.copy()
                trial_lam[active] -= alpha * dmu
                trial = evaluate(model, state, knot, V + alpha * dV, trial_lam, active, dt)
                if _merit(trial) <= (1.0 - 1e-4 * alpha) * merit:
                    break
                alpha *= 0.5
            V, lam, ev = V + alpha * dV, trial_lam, trial
        else:
            V = V + alpha * dV
            lam[active] -= alpha * dmu
            interior_point.update(state, alpha, dpair, ds)
            short_steps = short_steps + 1 if alpha < 0.05 else 0
            if short_steps >= STALL_STEPS and interior_point.restart(state):  # jammed against the boundary
                short_steps = 0
            ev = evaluate(model, state, knot, V, lam, active, dt, pairs)
        change = np.max(np.abs(alpha * dV)) * dt
        error = _remaining_error(change, previous_change, not pairs and alpha == 1.0)
        chord = direct and alpha == 1.0 and iteration == 1
        previous_change = change
    return False, V, lam, ev, MAX_ITERATIONS + 1


def _raise_not_converged(model: MaximalModel, state: MaximalState, knot: Knot, ev: Evaluation, dt: float) -> None:
    """ConvergenceError naming the step, time and worst joint; StepTooLargeError when the joint forces
    put a body past the time-step limit (stability.py), with a time step that works."""
    js = model.joints
    step_index, t = state.step_index + 1, state.t + dt
    gaps = np.abs(ev.row_val2 - knot.targets)
    worst = js.names[js.row_joint[model.order[int(np.argmax(gaps))]]] if len(model.order) else "-"
    where = (f"maximal-coordinate step {step_index} (t = {t:.6g} s): Newton did not converge in {MAX_ITERATIONS} "
             f"iterations (worst joint {worst!r}, max |g| = {np.max(gaps, initial=0.0):.3g})")
    limit = limit_exceeded(model, state.q, frames(js, state.x, state.q), state.lam, dt)
    if limit is not None:
        raise StepTooLargeError(f"{where}; {limit[0]}", step_index, t, limit[1])
    raise ConvergenceError(f"{where}; try a smaller time step", step=step_index, time=t)


def step(model: MaximalModel, state: MaximalState, dt: float, tol: float) -> StepResult:
    """Advance `state` by one step of size dt (Newton to max |g| <= tol and an estimated
    |zdot - zdot*| dt <= tol, see _remaining_error).

    Raises ValueError when `state` was made by another model, ConvergenceError naming the step and time
    when Newton does not converge (StepTooLargeError past the time-step limit).
    """
    check_state(model.stamp, state.model)
    if state.kernel is None:
        state.kernel = native_step.kernel_for(model, state) or False
    if state.kernel:
        done = state.kernel.step(state, dt, tol, MAX_ITERATIONS, LINE_SEARCH_HALVINGS)
        if done is not None:
            return StepResult(*done)
    bs, js = model.bodies, model.joints
    nb = bs.count
    knot = knot_terms(model, state, dt)
    if state.solver is None:
        state.solver = LinearSolver(nb, list(model.primary))
    R = len(model.order)
    if state.aux_active is None:
        state.aux_active = np.ones(R, bool)
        V0 = np.concatenate([state.v, state.w], axis=1)
        ev = evaluate(model, state, knot, V0, state.lam, state.aux_active, dt)
        state.aux_active = _select_rows(model, state.solver, ev.matrix, state.aux_active)
    pairs = state.interior is not None
    if pairs:
        interior_point.begin(model, state, (knot.cval, knot.cjac), dt)
    converged, V, lam, ev, iteration = _newton(model, state, knot, dt, tol)
    while converged and pairs and interior_point.relinearise(model, state, V, dt):  # the gaps along V
        interior_point.begin(model, state, (knot.cval, knot.cjac), dt)
        converged, V, lam, ev, iteration = _newton(model, state, knot, dt, tol)
    if not converged and pairs and interior_point.drop_friction(state, state.step_index + 1):
        # last resort for a stalled interior point: the step again without friction rows (reported)
        converged, V, lam, ev, iteration = _newton(model, state, knot, dt, tol)
    if not converged:
        _raise_not_converged(model, state, knot, ev, dt)
    iteration -= 1
    if pairs:
        interior_point.finish(state)
    v, w = V[:, :3], V[:, 3:]
    kinetic = 0.5 * float(np.sum(bs.mass * np.sum(v * v, axis=1))
                          + np.einsum("bi,bij,bj->", w, bs.inertia, w))
    potential2 = forces.potential(bs.gravity, bs.mass, ev.x2, model.forces, ev.cval2)
    residual = float(np.max(np.abs(ev.row_val2 - knot.targets), initial=0.0))
    rows = model.order
    state.row_winding = state.row_winding.copy()
    state.row_winding[rows[js.row_kind[rows] == ANGLE]] = ev.row_winding2
    state.coord_winding = ev.coord_winding2
    state.acceleration_guess = 0.0 if state.startup or pairs else V - np.concatenate([state.v, state.w], axis=1)
    state.x, state.q, state.v, state.w = ev.x2, ev.q2, v.copy(), w.copy()
    state.frames_at = (ev.x2, ev.q2, ev.frames2)
    state.coord_rate = ev.rate
    state.coord_jac_prev = ev.cjac2
    state.lam = lam
    state.t += dt
    state.startup = False
    state.step_index += 1
    return StepResult(iteration, residual, kinetic + 0.5 * (knot.potential + potential2))


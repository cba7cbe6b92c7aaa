"""Baraff's continuous-time forward dynamics in maximal coordinates, stabilised, and an RK4 step on it.

Seed 002: every body is a free rigid body with state x (centre of mass, world),
q (unit quaternion, body to world), v (world) and w (body axes); with M_b = diag(m I, J) constant in
these coordinates,

    M a = f(t, z, zdot) - (0, w x J w) + G^T lam,      G a = c,       c = -Gdot zdot + T'' - stab

where G = dg/d(x, phi) are the joint rows of joints.py (the variational method's rows: both maximal
methods read the same Mechanism, every joint type, prescribed joints as rows g - T(t)), f is gravity,
user forces and every coordinate force of forces.py (springs, dampers, velocity servos, keyed
torques) and Gdot zdot the rows' velocity product (closed form, `velocity_product`).
Accelerations come from H = [[M, G^T], [G, 0]] by Baraff's O(n) factor (baraff.factor_flat, primary
joints) and, for loop-closing joints, auxiliary rows (baraff.solve_auxiliary, O(nk)); with many loop
rows (FILLIN_ROWS, or solver="fillin") the whole H is factored by the reduced-fill-in LDU instead
(fillin.py, seed 003 §3.3), redundant loop rows dropped once at the start (`_FillinRows`).

Drift control (the paper names stabilisation but gives no formula: docs/seeds.md 002-C):
"projection" (default) projects each step's end back onto g = T (M-orthogonal Gauss-Newton with
the same factor) and its velocities onto G zdot = T' (post-stabilisation); "baumgarte" adds
stab = 2 r (G zdot - T') + r^2 (g - T) (critically damped at rate r); "none" leaves drift in.

Contacts and joint limits are not handled (the preview ignores colliders and limits, like tree-rk4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..curves import derivative
from ..lie import cross, quat_to_matrix
from ..stamp import ModelStamp, check_state
from ..trajectory import SolverError
from . import baraff, fillin, forces
from .bodies import qconj, qmul
from .joints import (ANGLE, ANGLES, Q0, Q2, T2, U, JointFrames, frames, generic_rows, keyed_torques, of_kinds,
                     row_targets, unwrap)
from .state import MaximalModel

STABILISATION = ("projection", "baumgarte", "none")
# Iterative refinement steps per solve: the unpivoted tree order loses digits when bodies have floored
# (near-zero) inertia, e.g. point-mass links (baraff.solve); two steps bring it to rounding level.
REFINE = 2
SOLVERS = ("auto", "tree", "fillin")
# With at least this many loop-closing rows, "auto" factors loops by fill-in instead of auxiliary rows.
# Measured on chains of 4-link loops (5 rows per loop), ms per RK4 step at dt = 0.01, auxiliary rows ->
# fill-in: 5 loops 16.2 -> 14.0, 10 loops 72 -> 16, 20 loops 97 -> 29.
FILLIN_ROWS = 20


@dataclass
class ForwardState:
    """Time t; x, q, v, w (B, 3 | 4); windings of ANGLE coordinates (C,) and rows (R, all rows); model: the
    stamp of the MaximalModel whose dynamics made it (ForwardDynamics.step refuses a state of another)."""

    t: float
    x: np.ndarray
    q: np.ndarray
    v: np.ndarray
    w: np.ndarray
    coord_winding: np.ndarray
    row_winding: np.ndarray
    model: ModelStamp


def rotate(q: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """q (x) exp(phi / 2): turn each body by the body-axes rotation vector phi (B, 3)."""
    angle = np.linalg.norm(phi, axis=1, keepdims=True)
    half = 0.5 * angle
    axis_scale = np.where(angle > 1e-12, np.sin(half) / np.where(angle > 1e-12, angle, 1.0), 0.5 - angle**2 / 48)
    return qmul(q, np.concatenate([np.cos(half), axis_scale * phi], axis=1))


class _FillinRows:
    """H = [[M, G^T], [G, 0]] over the primary rows and the independent loop rows, factored by the
    reduced-fill-in LDU (fillin.py) instead of auxiliary rows: for many loops (k growing with n) it
    stores and costs O(fill) instead of O(n k). Loop rows that are redundant at the configuration it
    is built at (a planar loop closed by a full 3-D joint) are dropped (pivoted QR of the loops'
    anticipated inverse mass Q); the kept rows' blocks are gathered from the row Jacobians each solve."""

    def __init__(self, dyn: "ForwardDynamics", jac: np.ndarray):
        n = dyn.model.bodies.count
        groups = [(np.arange(sl.start, sl.stop), bodies, (0, 6) if len(bodies) == 2 else (6,))
                  for sl, bodies in dyn.model.primary]
        kept = self._independent(dyn, jac)
        for rows, bodies, cols in dyn.auxiliary:
            rows = rows[np.isin(rows, kept)]
            if len(rows):
                groups.append((rows, bodies, cols))
        self.n, self.rows = n, np.concatenate([g[0] for g in groups]) if groups else np.zeros(0, dtype=np.int64)
        shapes = [baraff.Constraint(bodies, tuple(np.zeros((len(rows), 6)) for _ in bodies)) for rows, bodies, _ in groups]
        system = fillin.saddle([np.eye(6)] * n, shapes)
        order = fillin.order_nodes(len(system.dims), system.edges, "min-degree", system.after)
        self.symbolic = fillin.symbolic(system.dims, system.edges, order)
        self.plan = fillin.plan(self.symbolic)
        self.base = np.zeros(self.plan.size)
        for b in range(n):
            self.base[self.plan.diag_offset[b]:self.plan.diag_offset[b] + 36] = dyn.mass_flat[36 * b:36 * b + 36]
        src, dst = [], []
        for i, (rows, bodies, cols) in enumerate(groups):
            for body, col in zip(bodies, cols):
                entries = rows[:, None] * 12 + col + np.arange(6)  # (r, 6): G block of constraint i on body
                src += [entries.ravel(), entries.T.ravel()]
                dst += [self.plan.where[n + i, body] + np.arange(entries.size),
                        self.plan.where[body, n + i] + np.arange(entries.size)]
        self.src, self.dst = np.concatenate(src), np.concatenate(dst)
        self.a, self.b = dyn.a[self.rows], dyn.b[self.rows]
        self.mass = dyn.mass_flat.reshape(n, 6, 6)

    @staticmethod
    def _independent(dyn: "ForwardDynamics", jac: np.ndarray) -> np.ndarray:
        """Loop rows (indices into the rows) that are independent given the primary rows."""
        aux = np.concatenate([rows for rows, _, _ in dyn.auxiliary])
        n = dyn.model.bodies.count
        fac = baraff.factor_flat(dyn.layout, dyn.mass_flat, jac.reshape(-1)[dyn.gather])
        columns = np.zeros((fac.layout.row_offset[-1], len(aux)))
        body = np.zeros((n + 1, 6, len(aux)))
        for side, owner in ((slice(0, 6), dyn.a[aux]), (slice(6, 12), dyn.b[aux])):
            body[owner, :, np.arange(len(aux))] += jac[aux, side]
        columns[:6 * n] = body[:n].reshape(6 * n, len(aux))
        response = baraff.solve(fac, columns, REFINE)[:6 * n].reshape(n, 6, len(aux))
        q_matrix = np.einsum("ki,kij->kj", jac[aux, :6], np.vstack([response, np.zeros((1, 6, len(aux)))])[dyn.a[aux]]) \
            + np.einsum("ki,kij->kj", jac[aux, 6:], np.vstack([response, np.zeros((1, 6, len(aux)))])[dyn.b[aux]])
        _, r, pivots = scipy.linalg.qr(q_matrix, pivoting=True)
        rank = int(np.sum(np.abs(np.diag(r)) > 1e-9 * abs(r[0, 0])))
        return np.sort(aux[pivots[:rank]])

    def solve(self, jac: np.ndarray, force: np.ndarray, rhs_rows: np.ndarray) -> np.ndarray:
        """Body part of H^-1 [force; rhs_rows[kept rows]] with REFINE refinement steps."""
        flat = self.base.copy()
        flat[self.dst] = jac.reshape(-1)[self.src]
        rows = jac[self.rows]
        ldu = fillin.factor_flat(self.symbolic, self.plan, flat)
        rhs = np.concatenate([force.reshape(-1), rhs_rows[self.rows]])
        x = fillin.solve(ldu, rhs)
        for _ in range(REFINE):
            x += fillin.solve(ldu, rhs - self._multiply(rows, x))
        return x[:force.size].reshape(force.shape)

    def _multiply(self, rows: np.ndarray, x: np.ndarray) -> np.ndarray:
        """H x with the kept rows (R', 12)."""
        n = self.n
        u, y = x[:6 * n].reshape(n, 6), x[6 * n:]
        top = np.einsum("bij,bj->bi", self.mass, u) + forces.scatter(n, self.a, self.b, rows * y[:, None])
        return np.concatenate([top.ravel(), ForwardDynamics.apply(rows, self.a, self.b, u)])


class ForwardDynamics:
    """Accelerations, RK4 steps and projections for one MaximalModel (variational.compile_maximal)."""

    def __init__(self, model: MaximalModel, stabilisation: str = "projection", rate: float = 20.0,
                 solver: str = "auto"):
        if stabilisation not in STABILISATION:
            raise ValueError(f"unknown stabilisation {stabilisation!r}; use one of {', '.join(STABILISATION)}")
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; use one of {', '.join(SOLVERS)}")
        self.model, self.stabilisation, self.rate = model, stabilisation, float(rate)
        js, bs = model.joints, model.bodies
        n = bs.count
        self.rows = model.order
        self.row_joint, self.row_kind = js.row_joint[self.rows], js.row_kind[self.rows]
        self.a, self.b = js.parent[self.row_joint], js.child[self.row_joint]
        mass = np.zeros((n, 6, 6))
        mass[:, :3, :3] = bs.mass[:, None, None] * np.eye(3)
        mass[:, 3:, 3:] = bs.inertia
        self.mass_flat = mass.reshape(-1)
        primary = list(model.primary)
        self.layout = baraff.make_layout([6] * n, [bodies for _, bodies in primary],
                                         [sl.stop - sl.start for sl, _ in primary])
        gather = []  # flat index into jac (R, 12) of every entry of baraff's edge array
        for sl, bodies in primary:
            for side in ((0, 6) if len(bodies) == 2 else (6,)):
                gather.append((np.arange(sl.start, sl.stop)[:, None] * 12 + side + np.arange(6)).ravel())
        self.gather = np.concatenate(gather) if gather else np.zeros(0, dtype=np.int64)
        self.auxiliary = []  # (row indices, bodies, column starts) per loop-closing joint
        for j in model.loop_joints:
            rows = np.nonzero(self.row_joint == j)[0]
            if len(rows) == 0:
                continue
            parent, child = int(js.parent[j]), int(js.child[j])
            sides = ([(parent, 0)] if parent != n else []) + [(child, 6)]
            self.auxiliary.append((rows, tuple(b for b, _ in sides), tuple(c for _, c in sides)))
        self.curve_rows = np.nonzero(js.row_curve[self.rows] >= 0)[0]
        self.angles = bool(np.any(of_kinds(js.coord_kind, ANGLES)) or np.any(js.row_kind == ANGLE))  # windings to track
        self._factor: baraff.Factor | None = None
        self._frame_a_transposed = np.swapaxes(quat_to_matrix(js.ca), 1, 2)
        k = sum(len(rows) for rows, _, _ in self.auxiliary)
        if solver == "fillin" and not fillin.NATIVE:
            raise ValueError("solver 'fillin' needs the C kernels (make kernels)")
        self.use_fillin = bool(self.auxiliary) and (solver == "fillin" or (solver == "auto" and fillin.NATIVE
                                                                           and k >= FILLIN_ROWS))
        self._fillin: _FillinRows | None = None

    # -- rows, forces and the linear solve -------------------------------------------------------------

    def targets(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row targets T, T', T'' (R,) at t (prescribed joints; zero elsewhere)."""
        js = self.model.joints
        value = row_targets(js, t)[self.rows]
        rate, accel = np.zeros(len(self.rows)), np.zeros(len(self.rows))
        h = 1e-5
        for r in self.curve_rows:
            curve = js.curves[js.row_curve[self.rows[r]]]
            rate[r] = derivative(curve, t)
            if curve.interpolation != "linear":  # linear keys: zero between keys (no impulse at a key)
                accel[r] = (derivative(curve, t + h) - derivative(curve, t - h)) / (2 * h)
        return value, rate, accel

    def row_values(self, x: np.ndarray, q: np.ndarray, winding: np.ndarray,
                   fr: JointFrames | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row values g (R,) (windings of all rows applied) and Jacobians (R, 12) in model.order."""
        val, jac = generic_rows(fr if fr is not None else frames(self.model.joints, x, q), self.row_joint,
                                self.row_kind)
        return val + winding[self.rows], jac

    @staticmethod
    def apply(jac: np.ndarray, a: np.ndarray, b: np.ndarray, zdot: np.ndarray) -> np.ndarray:
        """Rows (n, 12) over bodies a, b times body velocities zdot (B, 6) (world = index B: zero)."""
        ze = np.vstack([zdot, np.zeros((1, 6))])
        return np.einsum("rk,rk->r", jac[:, :6], ze[a]) + np.einsum("rk,rk->r", jac[:, 6:], ze[b])

    def solve(self, jac: np.ndarray, force: np.ndarray, rhs_rows: np.ndarray) -> np.ndarray:
        """Body part u (B, 6) of H [u; y] = [force (B, 6); rhs_rows (R,)], H factored at rows `jac`."""
        if self.use_fillin:
            if self._fillin is None:
                self._fillin = _FillinRows(self, jac)
            return self._fillin.solve(jac, force, rhs_rows)
        self._factor = baraff.factor_flat(self.layout, self.mass_flat, jac.reshape(-1)[self.gather],
                                          reuse=self._factor)
        npr = self.model.n_primary
        rhs = np.concatenate([force.reshape(-1), rhs_rows[:npr]])
        if not self.auxiliary:
            x = baraff.solve(self._factor, rhs, REFINE)
        else:
            aux = [baraff.Constraint(bodies, tuple(jac[rows, c:c + 6] for c in cols))
                   for rows, bodies, cols in self.auxiliary]
            order = np.concatenate([rows for rows, _, _ in self.auxiliary])
            x, _ = baraff.solve_auxiliary(self._factor, aux, rhs, rhs_rows[order], redundant=True, refine=REFINE)
        return x[:force.size].reshape(force.shape)

    def velocity_product(self, x: np.ndarray, q: np.ndarray, zdot: np.ndarray, fr: JointFrames) -> np.ndarray:
        """Gdot zdot (R,): each row's second time derivative along the free motion (zero accelerations).

        With d = x_B + R_B p_B - x_A - R_A p_A, u = R_A^T d, r = C_A^T u (joints.frames_of) and
        dR/dt = R [w]x: u'' = -w_A x u' - w_A x R_A^T d' + R_A^T d'', d'' = R_B w_B x (w_B x p_B) -
        R_A w_A x (w_A x p_A); with p = q_A^-1 (x) q_B, p' = (p (x) W_B - W_A (x) p)/2, W = (0, w) and
        q_rel = c_A^-1 (x) p (x) c_B. The U and ANGLE rows follow by the chain rule.
        """
        js = self.model.joints
        xe, qe = np.vstack([x, np.zeros((1, 3))]), np.vstack([q, [[1.0, 0.0, 0.0, 0.0]]])
        ze = np.vstack([zdot, np.zeros((1, 6))])
        a, b = js.parent, js.child
        Ra, Rb = quat_to_matrix(qe[a]), quat_to_matrix(qe[b])
        va, wa, vb, wb = ze[a, :3], ze[a, 3:], ze[b, :3], ze[b, 3:]
        RaT = np.swapaxes(Ra, 1, 2)
        rotate_a = lambda m, v: np.einsum("jik,jk->ji", m, v)  # noqa: E731
        d = xe[b] + rotate_a(Rb, js.pb) - xe[a] - rotate_a(Ra, js.pa)
        d1 = vb + rotate_a(Rb, cross(wb, js.pb)) - va - rotate_a(Ra, cross(wa, js.pa))
        d2 = rotate_a(Rb, cross(wb, cross(wb, js.pb))) - rotate_a(Ra, cross(wa, cross(wa, js.pa)))
        u = rotate_a(RaT, d)
        u1 = -cross(wa, u) + rotate_a(RaT, d1)
        u2 = -cross(wa, u1) - cross(wa, rotate_a(RaT, d1)) + rotate_a(RaT, d2)
        r2 = rotate_a(self._frame_a_transposed, u2)
        pure = lambda w: np.concatenate([np.zeros((len(w), 1)), w], axis=1)  # noqa: E731
        p = qmul(qconj(qe[a]), qe[b])
        p1 = 0.5 * (qmul(p, pure(wb)) - qmul(pure(wa), p))
        p2 = 0.5 * (qmul(p1, pure(wb)) - qmul(pure(wa), p1))
        ca_inv = qconj(js.ca)
        q0, q1, q2 = fr.qrel, qmul(qmul(ca_inv, p1), js.cb), qmul(qmul(ca_inv, p2), js.cb)
        joint, kind = self.row_joint, self.row_kind
        out = np.zeros(len(joint))
        t = kind <= T2
        out[t] = r2[joint[t], kind[t]]
        qv = (kind >= Q0) & (kind <= Q2)
        out[qv] = q2[joint[qv], kind[qv] - Q0 + 1]
        (w0, x0, y0, z0), (w1, x1, y1, z1), (w2, x2, y2, z2) = q0.T, q1.T, q2.T
        uni = kind == U
        second = 2 * (x2 * z0 + 2 * x1 * z1 + x0 * z2 - w2 * y0 - 2 * w1 * y1 - w0 * y2)
        out[uni] = second[joint[uni]]
        angle = kind == ANGLE
        norm, rate = w0 * w0 + z0 * z0, w0 * z1 - z0 * w1
        second = 2 * ((w0 * z2 - z0 * w2) * norm - rate * 2 * (w0 * w1 + z0 * z1)) / norm**2
        out[angle] = second[joint[angle]]
        return out

    def applied(self, state: ForwardState, x: np.ndarray, q: np.ndarray, zdot: np.ndarray, t: float,
                fr: JointFrames) -> np.ndarray:
        """Applied wrenches (B, 6): gravity, user forces, coordinate springs, dampers, servos, keyed torques."""
        m, js, fs = self.model, self.model.joints, self.model.forces
        cval, cjac = forces.coordinates(js, fs, fr, x, q, state.coord_winding)
        out = forces.knot_wrench(m.bodies.gravity, m.bodies.mass, fs, quat_to_matrix(q), cval, cjac,
                                 keyed_torques(js, t), t, 0.0)
        if len(cval):
            rate = self.apply(cjac, fs.coord_a, fs.coord_b, zdot)
            generalized = -fs.damping * rate + fs.gain * (fs.target_velocity - rate)
            out += forces.scatter(m.bodies.count, fs.coord_a, fs.coord_b, generalized[:, None] * cjac)
        return out

    def acceleration(self, state: ForwardState, t: float, x: np.ndarray, q: np.ndarray,
                     zdot: np.ndarray) -> np.ndarray:
        """Body accelerations (B, 6) = (dv/dt world, dw/dt body axes) at (t, x, q, zdot = [v, w])."""
        fr = frames(self.model.joints, x, q)
        force = self.applied(state, x, q, zdot, t, fr)
        w = zdot[:, 3:]
        force[:, 3:] -= cross(w, np.einsum("bij,bj->bi", self.model.bodies.inertia, w))
        if len(self.rows) == 0:
            return np.linalg.solve(self.mass_flat.reshape(-1, 6, 6), force[..., None])[..., 0]
        g, jac = self.row_values(x, q, state.row_winding, fr)
        target, target_rate, target_accel = self.targets(t)
        rhs = target_accel - self.velocity_product(x, q, zdot, fr)
        if self.stabilisation == "baumgarte":
            rate = self.apply(jac, self.a, self.b, zdot) - target_rate
            rhs -= 2 * self.rate * rate + self.rate**2 * (g - target)
        return self.solve(jac, force, rhs)

    # -- time stepping ---------------------------------------------------------------------------------

    def step(self, state: ForwardState, dt: float, tol: float = 1e-10) -> None:
        """One classical RK4 step of size dt (quaternions renormalised), then the projection if chosen.
        Raises ValueError when `state` was made by another model."""
        check_state(self.model.stamp, state.model)
        t, x, q = state.t, state.x, state.q
        zdot = np.concatenate([state.v, state.w], axis=1)

        def derivative_of(s: float, xs: np.ndarray, qs: np.ndarray, zs: np.ndarray):
            qdot = 0.5 * qmul(qs, np.concatenate([np.zeros((len(qs), 1)), zs[:, 3:]], axis=1))
            return zs[:, :3], qdot, self.acceleration(state, s, xs, qs / np.linalg.norm(qs, axis=1, keepdims=True), zs)

        k1 = derivative_of(t, x, q, zdot)
        k2 = derivative_of(t + dt / 2, x + dt / 2 * k1[0], q + dt / 2 * k1[1], zdot + dt / 2 * k1[2])
        k3 = derivative_of(t + dt / 2, x + dt / 2 * k2[0], q + dt / 2 * k2[1], zdot + dt / 2 * k2[2])
        k4 = derivative_of(t + dt, x + dt * k3[0], q + dt * k3[1], zdot + dt * k3[2])
        x = x + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        q = q + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        zdot = zdot + dt / 6 * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        state.t = t + dt
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(zdot))):
            raise SolverError(f"t = {state.t:.6g} s: the state is no longer finite; try a smaller time step",
                              time=state.t)
        previous = self.coordinate_values(state) if self.angles else None
        state.x, state.q, state.v, state.w = x, q, zdot[:, :3], zdot[:, 3:]
        if self.stabilisation == "projection":
            self.project(state, tol)
        if self.angles:
            self.rewind(state, previous)

    def coordinate_values(self, state: ForwardState) -> np.ndarray:
        """Joint coordinate values (C,) at the state, windings applied."""
        js = self.model.joints
        raw, _ = generic_rows(frames(js, state.x, state.q), js.coord_joint, js.coord_kind)
        return raw + state.coord_winding

    def rewind(self, state: ForwardState, previous: np.ndarray) -> None:
        """Windings after a step: ANGLE coordinates continue `previous`, ANGLE rows their targets."""
        js = self.model.joints
        fr = frames(js, state.x, state.q)
        raw, _ = generic_rows(fr, js.coord_joint, js.coord_kind)
        state.coord_winding = np.where(of_kinds(js.coord_kind, ANGLES), unwrap(raw, previous), 0.0)
        raw_rows, _ = generic_rows(fr, js.row_joint, js.row_kind)
        state.row_winding = np.where(js.row_kind == ANGLE, unwrap(raw_rows, row_targets(js, state.t)), 0.0)

    def project(self, state: ForwardState, tol: float = 1e-10, iterations: int = 4) -> None:
        """Move (x, q) to g = T by M-orthogonal Gauss-Newton steps, then zdot onto G zdot = T'."""
        if len(self.rows) == 0:
            return
        target, target_rate, _ = self.targets(state.t)
        zero = np.zeros((self.model.bodies.count, 6))
        for _ in range(iterations):
            g, jac = self.row_values(state.x, state.q, state.row_winding)
            if np.max(np.abs(g - target)) <= tol:
                break
            dz = self.solve(jac, zero, target - g)
            state.x = state.x + dz[:, :3]
            state.q = rotate(state.q, dz[:, 3:])
        else:
            g, jac = self.row_values(state.x, state.q, state.row_winding)
        zdot = np.concatenate([state.v, state.w], axis=1)
        dzdot = self.solve(jac, zero, target_rate - self.apply(jac, self.a, self.b, zdot))
        state.v, state.w = state.v + dzdot[:, :3], state.w + dzdot[:, 3:]

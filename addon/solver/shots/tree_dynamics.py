"""Discrete mechanics of a TreeModel as the equality constraints of an optimal-control shot (DMOC).

Seed 001 §6 (discrete mechanics and optimal control) on seed 000's midpoint discrete Lagrangian,
written exactly as tree/midpoint.py steps it, so that torques solved here replay through the plain
simulator. With qm = (q1 + q2)/2, v = (q2 - q1)/dt, L_q = g + Q, p = dT/dqdot (tree/dynamics.py):
  D1Ld(q1, q2) = dt/2 L_q - p,   D2Ld(q1, q2) = dt/2 L_q + p,   fd = dt/2 (f_c(v, tm) + B u)
on every interval (f_c: damping, servos, keyed torques; B u: the shot's joint torques), and
  k = 0:      p0 + D1Ld(q0, q1) + fd_0 - Dh(q0)^T lam_0 = 0            (p0 = dL/dqdot(q0, qdot0))
  0 < k < N:  D2Ld(q_k-1, q_k) + fd_k-1 + D1Ld(q_k, q_k+1) + fd_k - Dh(q_k)^T lam_k = 0
  h(q_k) = 0 (kept loop rows) for k = 1..N;   optionally p_N = D2Ld(q_N-1, q_N) + fd_N-1 = 0 (rest).
Slot derivatives (F(qm, v): d/dq1 = F_q/2 - F_v/dt, d/dq2 = F_q/2 + F_v/dt; L_q,q = B + Q_q,
L_q,qdot = A^T, p_q = A, p_qdot = M):
  D1Ld_q1 = dt/4 (B+Q_q) - (A^T + A)/2 + M/dt     D1Ld_q2 = dt/4 (B+Q_q) + (A^T - A)/2 - M/dt
  D2Ld_q1 = dt/4 (B+Q_q) - (A^T - A)/2 - M/dt     D2Ld_q2 = dt/4 (B+Q_q) + (A^T + A)/2 + M/dt
and fd_q2 = -fd_q1 = -(damping + gain)/2. The constraint force's derivative d(Dh^T lam)/dq is in
constraint_force_dq. Ball and free joints (charts folded per step) and prescribed joints are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..lie import ad_twist, cross
from ..model import MechanismError
from ..tree import constraints
from ..tree.assembly import assemble
from ..tree.compile import TreeModel
from ..tree.dynamics import terms
from ..tree.kinematics import Kinematics, forward
from ..tree.midpoint import nonconservative_forces


@dataclass(frozen=True)
class IntervalTerms:
    """Slot derivatives of the forced discrete Lagrangian on one interval (q1, q2), all (nq,) / (nq, nq).

    D1 = D1Ld + fd and D2 = D2Ld + fd without the shot's controls (they enter linearly as dt/2 B u);
    D1_q1 = dD1/dq1 and so on (None when evaluated without the Jacobian).
    """

    D1: np.ndarray
    D2: np.ndarray
    D1_q1: np.ndarray | None
    D1_q2: np.ndarray | None
    D2_q1: np.ndarray | None
    D2_q2: np.ndarray | None
    energy: float


def interval_terms(model: TreeModel, charts: np.ndarray, q1: np.ndarray, q2: np.ndarray, t1: float,
                   dt: float, jacobian: bool = True) -> IntervalTerms:
    """Evaluate D1, D2 and (jacobian=True) their exact Jacobians on the interval [t1, t1 + dt] from q1 to q2 (nq,)."""
    v = (q2 - q1) / dt
    tm = t1 + 0.5 * dt
    tr = terms(model, forward(model, 0.5 * (q1 + q2), charts), v, tm, second=jacobian)
    fd = 0.5 * dt * nonconservative_forces(model, v, tm)
    Lq = 0.5 * dt * (tr.g + tr.Q)
    if not jacobian:
        return IntervalTerms(D1=Lq - tr.p + fd, D2=Lq + tr.p + fd, D1_q1=None, D1_q2=None, D2_q1=None, D2_q2=None,
                             energy=tr.kinetic + tr.potential)
    curv = 0.25 * dt * (tr.B + tr.Q_q)
    sym, skew = 0.5 * (tr.A.T + tr.A), 0.5 * (tr.A.T - tr.A)
    Mdt = tr.M / dt
    fd_q2 = -0.5 * np.diag(model.dof_damping + model.dof_motor_gain)
    return IntervalTerms(
        D1=Lq - tr.p + fd, D2=Lq + tr.p + fd,
        D1_q1=curv - sym + Mdt - fd_q2, D1_q2=curv + skew - Mdt + fd_q2,
        D2_q1=curv - skew - Mdt - fd_q2, D2_q2=curv + sym + Mdt + fd_q2,
        energy=tr.kinetic + tr.potential,
    )


def constraint_force_dq(model: TreeModel, kin: Kinematics, lam: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """d/dq of Dh(q)[rows]^T lam at kin.q: (nq, nq), entry [k, j] = d(sum_r lam_r Dh[r, k]) / dq_j.

    Dh[r, k] = s_rk (w_r . S_k) (tree/constraints.py) with s_rk = anc[P_r, k] - anc[C_r, k]. Moving q_j
    turns S_k by ad(S_j) S_k when j is an ancestor of k, and the wrench w_r through its points and
    directions: n and a (fixed in P) by anc[P, j] omega_j x, the point p_C and b (fixed in C) by
    anc[C, j] (omega_j x p + v_j) and anc[C, j] omega_j x b.
    """
    nq = model.nq
    out = np.zeros((nq, nq))
    if not len(rows):
        return out
    S = kin.axis_world[:nq]
    omega, lin = S[:, :3], S[:, 3:]
    anc = model.ancestor
    ad_jk = ad_twist(S[:, None, :], S[None, :, :])  # (nq_j, nq_k, 6): ad(S_j) S_k
    for lam_r, r in zip(lam, rows):
        fp, fc = model.row_frame_p[r], model.row_frame_c[r]
        Wp, Wc = kin.world_M_frame[fp], kin.world_M_frame[fc]
        a = Wp[:3, :3] @ model.row_a[r]
        b = Wc[:3, :3] @ model.row_b[r]
        in_p, in_c = anc[fp][:, None], anc[fc][:, None]  # (nq, 1): does q_j move P / C
        if model.row_kind[r] == 0:
            n = Wp[:3, :3] @ model.row_n[r]
            pc = b + Wc[:3, 3]
            wrench = np.concatenate([cross(pc, n), n])
            dn = in_p * cross(omega, n[None, :])
            dpc = in_c * (cross(omega, pc[None, :]) + lin)
            dwrench = np.concatenate([cross(dpc, n[None, :]) + cross(pc[None, :], dn), dn], axis=1)
        else:
            wrench = np.concatenate([cross(a, b), np.zeros(3)])
            da = in_p * cross(omega, a[None, :])
            db = in_c * cross(omega, b[None, :])
            dwrench = np.concatenate([cross(da, b[None, :]) + cross(a[None, :], db), np.zeros((nq, 3))], axis=1)
        side = anc[fp] - anc[fc]  # (nq,) over k
        # wrench . dS_k/dq_j = wrench . ad(S_j) S_k for j an ancestor-or-self of k
        term_s = np.einsum("i,jki->kj", wrench, ad_jk) * anc[:nq]  # anc[k, j]
        term_w = dwrench @ S.T  # (j, k)
        out += lam_r * side[:, None] * (term_w.T + term_s)
    return out


def check_supported(model: TreeModel, where: str) -> None:
    """Refuse joints the shot transcription cannot represent; the message names the joint."""
    for dof in range(model.nq):
        joint = model.mechanism.joints[model.dof_joint[dof]]
        if model.dof_ball[dof] >= 0 or joint.type in ("ball", "free"):
            raise MechanismError(f"{where}: [[joint]] {joint.name!r}: {joint.type} joints are not supported in "
                                 "optimal-control shots (their chart moves every step); use revolute or universal joints")
        if model.dof_prescribed[dof]:
            raise MechanismError(f"{where}: [[joint]] {joint.name!r}: field 'prescribed' is not supported in "
                                 "optimal-control shots; key the joint as a shot target instead")


@dataclass(frozen=True)
class TreeTranscription:
    """The DMOC constraints of one shot on a tree model.

    Unknowns x = [q_1 .. q_N (N, nq), u_0 .. u_N-1 (N, nu), lam_0 .. lam_N-1 (N, nrow), mu (nrow when a closed
    chain ends at rest)], flattened in that order. actuated (nu,): the coordinates the controls drive (u_k acts on interval k, at its midpoint).
    q0, p0 (nq,): the assembled start and its momentum; rows: the kept (independent) loop rows.
    """

    model: TreeModel
    dt: float
    steps: int
    actuated: np.ndarray
    q0: np.ndarray
    qd0: np.ndarray
    p0: np.ndarray
    charts: np.ndarray
    rows: np.ndarray
    rest_at_end: bool = False

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nu(self) -> int:
        return len(self.actuated)

    @property
    def nr(self) -> int:
        return len(self.rows)

    @property
    def n(self) -> int:
        return self.steps * (self.nq + self.nu + self.nr) + self.n_rest

    @property
    def n_rest(self) -> int:
        """Multipliers mu of the rest rows of a closed chain (the momentum at rest is a constraint force)."""
        return self.nr if self.rest_at_end else 0

    @property
    def mu_slice(self) -> slice:
        start = self.steps * (self.nq + self.nu + self.nr)
        return slice(start, start + self.n_rest)

    def q_slice(self, k: int) -> slice:
        """Where q_k (k >= 1) sits in x."""
        return slice((k - 1) * self.nq, k * self.nq)

    def u_slice(self, k: int) -> slice:
        start = self.steps * self.nq + k * self.nu
        return slice(start, start + self.nu)

    def lam_slice(self, k: int) -> slice:
        start = self.steps * (self.nq + self.nu) + k * self.nr
        return slice(start, start + self.nr)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q (N+1, nq) with q0 first, U (N, nu), Lam (N, nrow)) from x."""
        N, nq, nu = self.steps, self.nq, self.nu
        Q = np.vstack([self.q0[None, :], x[: N * nq].reshape(N, nq)])
        U = x[N * nq: N * (nq + nu)].reshape(N, nu)
        Lam = x[N * (nq + nu): N * (nq + nu + self.nr)].reshape(N, self.nr)
        return Q, U, Lam

    def pack(self, Q: np.ndarray, U: np.ndarray, Lam: np.ndarray | None = None) -> np.ndarray:
        """x from Q (N+1, nq) (row 0 ignored), U (N, nu), Lam (N, nrow) (zeros when None)."""
        Lam = np.zeros((self.steps, self.nr)) if Lam is None else Lam
        return np.concatenate([np.asarray(Q)[1:].ravel(), np.asarray(U).ravel(), np.asarray(Lam).ravel(),
                               np.zeros(self.n_rest)])

    @property
    def m(self) -> int:
        """Number of equality rows: N DEL blocks, N loop blocks, and nq rest rows when rest_at_end."""
        return self.steps * (self.nq + self.nr) + (self.nq if self.rest_at_end else 0)

    def evaluate(self, x: np.ndarray, jacobian: bool = True) -> tuple[np.ndarray, sp.csr_matrix | None]:
        """Residual c (m,) and its exact sparse Jacobian dc/dx (m, n) (None when jacobian=False)."""
        c, blocks = self.blocks(x, jacobian)
        return c, (assemble_blocks(blocks, (self.m, self.n)) if jacobian else None)

    def blocks(self, x: np.ndarray, jacobian: bool = True) -> tuple[np.ndarray, list[tuple[int, slice, np.ndarray]]]:
        """Residual c (m,) and the Jacobian as dense blocks (first row, column slice, block)."""
        N, nq, nr = self.steps, self.nq, self.nr
        model, dt = self.model, self.dt
        Q, U, Lam = self.unpack(x)
        Bu = np.zeros((nq, self.nu))
        Bu[self.actuated, np.arange(self.nu)] = 1.0
        half_Bu = 0.5 * dt * Bu
        c = np.zeros(self.m)
        out: list[tuple[int, slice, np.ndarray]] = []

        def put(r0: int, col: slice | None, block: np.ndarray) -> None:
            if jacobian and col is not None:
                out.append((r0, col, block))

        qcol = [None] + [self.q_slice(k) for k in range(1, N + 1)]
        intervals = [interval_terms(model, self.charts, Q[k], Q[k + 1], k * dt, dt, jacobian) for k in range(N)]
        kins = [forward(model, q, self.charts) for q in Q] if nr else []
        loops = [constraints.evaluate(model, kin) for kin in kins]  # (h, Dh) at every q_k, all rows
        for k in range(N):
            r0 = k * nq
            it = intervals[k]
            force = it.D1 + half_Bu @ U[k]
            dq_k = it.D1_q1
            if k == 0:
                force = force + self.p0
            else:
                prev = intervals[k - 1]
                force = force + prev.D2 + half_Bu @ U[k - 1]
                if jacobian:
                    dq_k = dq_k + prev.D2_q2
                put(r0, qcol[k - 1], prev.D2_q1)
                put(r0, self.u_slice(k - 1), half_Bu)
            put(r0, qcol[k + 1], it.D1_q2)
            put(r0, self.u_slice(k), half_Bu)
            if nr:
                Dh = loops[k][1][self.rows]
                force = force - Dh.T @ Lam[k]
                put(r0, self.lam_slice(k), -Dh.T)
                if k and jacobian:
                    dq_k = dq_k - constraint_force_dq(model, kins[k], Lam[k], self.rows)
            put(r0, qcol[k], dq_k)
            c[r0: r0 + nq] = force
        base = N * nq
        for k in range(1, N + 1 if nr else 1):
            h, Dh = loops[k]
            c[base + (k - 1) * nr: base + k * nr] = h[self.rows]
            put(base + (k - 1) * nr, qcol[k], Dh[self.rows])
        if self.rest_at_end:
            r0 = N * (nq + nr)
            last = intervals[-1]
            rest = last.D2 + half_Bu @ U[-1]
            rest_q = last.D2_q2
            if nr:  # at rest the momentum may only push against the loop constraints: p_N = Dh(q_N)^T mu
                mu = x[self.mu_slice]
                Dh = loops[N][1][self.rows]
                rest = rest - Dh.T @ mu
                put(r0, self.mu_slice, -Dh.T)
                if jacobian:
                    rest_q = rest_q - constraint_force_dq(model, kins[N], mu, self.rows)
            c[r0:] = rest
            put(r0, qcol[N - 1], last.D2_q1)
            put(r0, qcol[N], rest_q)
            put(r0, self.u_slice(N - 1), half_Bu)
        return c, out


def assemble_blocks(blocks: list[tuple[int, slice, np.ndarray]], shape: tuple[int, int]) -> sp.csr_matrix:
    """A sparse matrix from dense blocks (first row, column slice, block); overlapping blocks add."""
    if not blocks:
        return sp.csr_matrix(shape)
    rows, cols, vals = [], [], []
    for r0, col, block in blocks:
        nr, nc = block.shape
        rows.append(np.repeat(np.arange(r0, r0 + nr), nc))
        cols.append(np.tile(np.arange(col.start, col.start + nc), nr))
        vals.append(block.ravel())
    return sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape).tocsr()


def transcribe_tree(model: TreeModel, dt: float, steps: int, actuated: np.ndarray, rest_at_end: bool = False,
                    where: str = "<shot>") -> TreeTranscription:
    """Assemble the model's start (as the simulator does) and set up the DMOC constraints of a shot."""
    check_supported(model, where)
    if not dt > 0 or steps < 1:
        raise ValueError(f"{where}: a shot needs dt > 0 and at least one step, got dt = {dt}, steps = {steps}")
    charts = np.array(model.ball_chart0)
    start = assemble(model, charts)
    kin = forward(model, start.q, charts)
    p0 = terms(model, kin, start.qd, 0.0, second=False).p
    return TreeTranscription(model, float(dt), int(steps), np.asarray(actuated, dtype=np.int64), start.q,
                             start.qd, p0, charts, start.rows, rest_at_end)

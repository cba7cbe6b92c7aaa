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

from ..model import MechanismError
from ..tree.assembly import assemble
from ..tree.compile import TreeModel
from ..tree.dynamics import terms
from ..tree.kinematics import Kinematics, forward
from .tree_batch import (
    constraint_force_dq_batch,
    curve_values,
    forward_batch,
    loops_batch,
    terms_batch,
)


@dataclass(frozen=True)
class IntervalTerms:
    """Slot derivatives of the forced discrete Lagrangian on intervals (q1, q2): (..., nq) / (..., nq, nq),
    a leading axis K when evaluated for K intervals at once.

    D1 = D1Ld + fd and D2 = D2Ld + fd without the shot's controls (they enter linearly as dt/2 B u);
    D1_q1 = dD1/dq1 and so on (None when evaluated without the Jacobian); energy at the midpoint (None from
    tree_program.py, which does not compute it).
    """

    D1: np.ndarray
    D2: np.ndarray
    D1_q1: np.ndarray | None
    D1_q2: np.ndarray | None
    D2_q1: np.ndarray | None
    D2_q2: np.ndarray | None
    energy: np.ndarray | float | None


def intervals(model: TreeModel, charts: np.ndarray, Q1: np.ndarray, Q2: np.ndarray, t1: np.ndarray, dt: float,
              jacobian: bool = True) -> IntervalTerms:
    """D1, D2 and (jacobian=True) their exact Jacobians on the K intervals [t1, t1 + dt] from Q1 to Q2 (K, nq),
    all at once (tree_batch.py)."""
    V = (Q2 - Q1) / dt
    tm = np.asarray(t1, float) + 0.5 * dt
    qm = 0.5 * (Q1 + Q2)
    tr = terms_batch(model, forward_batch(model, qm, charts), qm, V, tm, second=jacobian)
    if not jacobian:
        return slot_terms(model, V, tm, dt, tr.g + tr.Q, tr.p, energy=tr.energy)
    return slot_terms(model, V, tm, dt, tr.g + tr.Q, tr.p, (tr.B + tr.Q_q, np.swapaxes(tr.A, 1, 2), tr.A, tr.M),
                      tr.energy)


def slot_terms(model: TreeModel, V: np.ndarray, tm: np.ndarray, dt: float, Lq: np.ndarray, p: np.ndarray,
               derivatives: tuple | None = None, energy: np.ndarray | None = None) -> IntervalTerms:
    """IntervalTerms at velocities V (K, nq) and midpoint times tm (K,) from L_q = g + Q and p (K, nq) at the
    midpoints and (derivatives) their derivatives (L_q,q, L_q,qdot, p_q, p_qdot) (K, nq, nq) by the midpoint and
    the velocity: the slot derivatives of the module docstring, with damping, servos and keyed torques."""
    keyed = curve_values(model.dof_torque, tm, 0.0)
    fd = 0.5 * dt * (-model.dof_damping * V + model.dof_motor_gain * (model.dof_motor_velocity - V) + keyed)
    Lq = 0.5 * dt * Lq
    if derivatives is None:
        return IntervalTerms(D1=Lq - p + fd, D2=Lq + p + fd, D1_q1=None, D1_q2=None, D2_q1=None, D2_q2=None,
                             energy=energy)
    Lqq, Lqv, pq, pv = derivatives
    curv = 0.25 * dt * Lqq
    At = 0.5 * Lqv
    sym, skew = At + 0.5 * pq, At - 0.5 * pq
    Mdt = pv / dt
    fd_q2 = -0.5 * np.diag(model.dof_damping + model.dof_motor_gain)
    return IntervalTerms(
        D1=Lq - p + fd, D2=Lq + p + fd,
        D1_q1=curv - sym + Mdt - fd_q2, D1_q2=curv + skew - Mdt + fd_q2,
        D2_q1=curv - skew - Mdt - fd_q2, D2_q2=curv + sym + Mdt + fd_q2,
        energy=energy,
    )


def interval_terms(model: TreeModel, charts: np.ndarray, q1: np.ndarray, q2: np.ndarray, t1: float,
                   dt: float, jacobian: bool = True) -> IntervalTerms:
    """`intervals` on the one interval [t1, t1 + dt] from q1 to q2 (nq,): (nq,) / (nq, nq), energy a float."""
    it = intervals(model, charts, q1[None], q2[None], np.array([t1]), dt, jacobian)
    return IntervalTerms(*(None if a is None else a[0] for a in (it.D1, it.D2, it.D1_q1, it.D1_q2, it.D2_q1,
                                                                 it.D2_q2)), energy=float(it.energy[0]))


def constraint_force_dq(model: TreeModel, kin: Kinematics, lam: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """d/dq of Dh(q)[rows]^T lam at kin.q: (nq, nq), entry [k, j] = d(sum_r lam_r Dh[r, k]) / dq_j.

    Dh[r, k] = s_rk (w_r . S_k) (tree/constraints.py) with s_rk = anc[P_r, k] - anc[C_r, k]. Moving q_j
    turns S_k by ad(S_j) S_k when j is an ancestor of k, and the wrench w_r through its points and
    directions: n and a (fixed in P) by anc[P, j] omega_j x, the point p_C and b (fixed in C) by
    anc[C, j] (omega_j x p + v_j) and anc[C, j] omega_j x b. Evaluated by tree_batch.constraint_force_dq_batch.
    """
    if not len(rows):
        return np.zeros((model.nq, model.nq))
    return constraint_force_dq_batch(model, forward_batch(model, kin.q[None], kin.charts), lam[None], rows)[0]


@dataclass(frozen=True)
class LoopTerms:
    """The kept loop rows at K configurations with multipliers lam (K, nr): h (K, nr), the constraint force
    Dh^T lam (K, nq) and (with the Jacobian) Dh (K, nr, nq) and d(Dh^T lam)/dq (K, nq, nq), else None."""

    h: np.ndarray
    force: np.ndarray
    Dh: np.ndarray | None
    force_dq: np.ndarray | None


class NumpyTerms:
    """The rows' terms of a tree shot by tree_batch.py (numpy, batched over the stages): the reference of
    tree_program.TreeProgram, which computes the same from programs run in C."""

    def intervals(self, tx: TreeTranscription, Q: np.ndarray, jacobian: bool) -> IntervalTerms:
        """`intervals` on the shot's N intervals of Q (N+1, nq)."""
        N, dt = tx.steps, tx.dt
        return intervals(tx.model, tx.charts, Q[:-1], Q[1:], np.arange(N) * dt, dt, jacobian)

    def loops(self, tx: TreeTranscription, Q: np.ndarray, lam: np.ndarray, jacobian: bool) -> LoopTerms:
        """LoopTerms at the configurations Q (K, nq) with multipliers lam (K, nr)."""
        kin = forward_batch(tx.model, Q, tx.charts)
        h, Dh = loops_batch(tx.model, kin, tx.rows)
        force = np.einsum("krq,kr->kq", Dh, lam)
        if not jacobian:
            return LoopTerms(h, force, None, None)
        return LoopTerms(h, force, Dh, constraint_force_dq_batch(tx.model, kin, lam, tx.rows))


NUMPY_TERMS = NumpyTerms()


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

    def loop_multipliers(self, x: np.ndarray) -> np.ndarray:
        """(N+1, nr): the multipliers of the constraint force at each configuration q_0 .. q_N: lam_0 .. lam_N-1,
        then mu at rest (zeros otherwise)."""
        Lam = self.unpack(x)[2]
        return np.vstack([Lam, x[self.mu_slice][None] if self.rest_at_end else np.zeros((1, self.nr))])

    def blocks(self, x: np.ndarray, jacobian: bool = True,
               terms: NumpyTerms = NUMPY_TERMS) -> tuple[np.ndarray, list[Blocks]]:
        """Residual c (m,) and the Jacobian as groups of dense blocks (first rows (G,), first columns (G,),
        blocks (G, r, c)), every interval and configuration evaluated at once by `terms` (NumpyTerms, or
        tree_program.TreeProgram: the same methods)."""
        N, nq, nr, nu = self.steps, self.nq, self.nr, self.nu
        dt = self.dt
        Q, U, _ = self.unpack(x)
        half_Bu = np.zeros((nq, nu))
        half_Bu[self.actuated, np.arange(nu)] = 0.5 * dt
        it = terms.intervals(self, Q, jacobian)
        Bu = U @ half_Bu.T  # (N, nq)
        force = it.D1 + Bu
        force[0] += self.p0
        force[1:] += it.D2[:-1] + Bu[:-1]
        parts = [force.ravel()]
        if nr:
            loops = terms.loops(self, Q, self.loop_multipliers(x), jacobian)
            force -= loops.force[:N]
            parts.append(loops.h[1:].ravel())
        if self.rest_at_end:
            rest = it.D2[-1] + Bu[-1]
            if nr:  # at rest the momentum may only push against the loop constraints: p_N = Dh(q_N)^T mu
                rest = rest - loops.force[N]
            parts.append(rest)
        c = np.concatenate(parts)
        if not jacobian:
            return c, []
        k = np.arange(N)
        row, qcol = k * nq, (k - 1) * nq  # first DEL row of step k; first column of q_k (k >= 1)
        ucol = N * nq + k * nu
        dq_k = it.D1_q1[1:] + it.D2_q2[:-1]
        if nr:
            dq_k = dq_k - loops.force_dq[1:N]
            Dh = loops.Dh
        Bu_blocks = np.broadcast_to(half_Bu, (N, nq, nu))
        out = [(row, qcol + nq, it.D1_q2), (row[1:], qcol[1:], dq_k), (row[2:], qcol[1:-1], it.D2_q1[1:-1]),
               (row, ucol, Bu_blocks), (row[1:], ucol[:-1], Bu_blocks[1:])]
        if nr:
            lcol = N * (nq + nu) + k * nr
            out += [(row, lcol, -np.swapaxes(Dh[:N], 1, 2)), (N * nq + k * nr, qcol + nq, Dh[1:])]
        if self.rest_at_end:
            r0 = np.array([N * (nq + nr)])
            rest_q = it.D2_q2[-1:]
            if nr:
                rest_q = rest_q - loops.force_dq[N:]
                out.append((r0, np.array([self.mu_slice.start]), -np.swapaxes(Dh[N:], 1, 2)))
            out += [(r0, qcol[-1:] + nq, rest_q), (r0, ucol[-1:], Bu_blocks[-1:])]
            if N > 1:
                out.append((r0, qcol[-1:], it.D2_q1[-1:]))
        return c, out


Blocks = tuple[np.ndarray, np.ndarray, np.ndarray]


def block_triplets(rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COO triplets of dense blocks values (G, r, c) at first rows (G,) and first columns (G,)."""
    _, r, c = values.shape
    i = np.broadcast_to(rows[:, None, None] + np.arange(r)[None, :, None], values.shape)
    j = np.broadcast_to(cols[:, None, None] + np.arange(c)[None, None, :], values.shape)
    return i.ravel(), j.ravel(), values.ravel()


def all_triplets(blocks: list[Blocks]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COO triplets of every group of dense blocks (first rows, first columns, blocks), in order."""
    i, j, v = (np.concatenate(p) for p in zip(*(block_triplets(*b) for b in blocks)))
    return i, j, v


def assemble_blocks(blocks: list[Blocks], shape: tuple[int, int]) -> sp.csr_matrix:
    """A sparse matrix from groups of dense blocks (first rows, first columns, blocks); overlapping blocks add."""
    if not blocks:
        return sp.csr_matrix(shape)
    i, j, v = all_triplets(blocks)
    return sp.coo_matrix((v, (i, j)), shape=shape).tocsr()


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

"""A tree shot's whole evaluation (rows, Jacobian, Hessian of the Lagrangian, body-point keys) from programs
compiled once per model and run in C for all stages (program.py, native/tape_program.c).

tree_hessian.py's generic formulas, recorded once on program nodes:
  phi(qm, v, W, Z) = W . (g + Q) + Z . p    (phi_formula; the point forces' scales are parameters)
  psi(q, y, lam, nu) = -lam . Dh(q) y + nu . h(q)    (configuration_formula, over the kept loop rows)
  chi(q, w) = sum_p w_p . x_p(q)    (points_formula, the body-point keys' points)
with the weights W, Z, the multipliers y, lam, nu and the key weights w as VARIABLES. phi is linear in W and Z,
so its gradient in them is (g + Q, p), whence the DEL rows' D1 = dt/2 (g + Q) - p + fd and
D2 = dt/2 (g + Q) + p + fd, and its second derivatives across (W, Z) and (qm, v) are (B + Q_q, A^T; A, M),
whence their Jacobian (tree_dynamics.slot_terms adds the springs, damping, servos and keyed torques, which
enter linearly); its (qm, v) block at the multipliers' W, Z is the Lagrangian's (tree_hessian.hessian_blocks).
Each pass computes only the block it needs (tape_program_binding.ACROSS, BELOW). Likewise psi's gradient in nu
is h and in y -Dh^T lam, its (lam, y) block -Dh, its (y, q) block -d(Dh^T lam)/dq, its (q, q) and (lam, q)
blocks the Lagrangian's; chi's gradient in w_p is the point x_p, its (w_p, q) block dx_p/dq, its (q, q) block
the keys' curvature. Rows alone (the line search) need no Hessian pass.

`TreeProgram` answers what tree_dynamics.NumpyTerms and tree_hessian.TapeTerms (its references) answer, and
`PointProgram` what mechanism_shots' per-key forward kinematics and tree_hessian.point_hessian answer, to
round-off (tests/solver/shots/test_tree_program.py). Mechanism shots use them when `compiled` (the C kernels
are built and the model has at most COMPILED_MAX_NQ coordinates), else TapeTerms and per-key kinematics.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..native import tape_program_binding
from ..native.tape_program_binding import ACROSS, BELOW, HESSIAN, ROWS
from ..tree.compile import TreeModel
from .program import Recorder
from .tree_dynamics import IntervalTerms, LoopTerms, TreeTranscription, slot_terms
from .tree_hessian import configuration_formula, force_scales, phi_formula, points_formula


class TreeProgram:
    """The compiled phi and psi programs of a model with kept loop rows `rows`."""

    def __init__(self, model: TreeModel, rows: np.ndarray):
        nq, nr = model.nq, len(rows)
        rec = Recorder()
        qm, v, W, Z = (rec.variables(nq) for _ in range(4))
        self.phi = rec.compile(phi_formula(model, qm, v, W, Z, rec.parameters(len(model.force_frame)))).native()
        self.psi = None
        if nr:
            rec = Recorder()
            q, y, lam, nu = rec.variables(nq), rec.variables(nq), rec.variables(nr), rec.variables(nr)
            self.psi = rec.compile(configuration_formula(model, q, y, lam, nu, rows)[0]).native()
        self.nq, self.nr = nq, nr

    def intervals(self, tx: TreeTranscription, Q: np.ndarray, jacobian: bool) -> IntervalTerms:
        """tree_dynamics.NumpyTerms.intervals (no energy): phi at W = Z = 0, its Hessian only across (qm, v) and
        (W, Z)."""
        nq, model, N, dt = self.nq, tx.model, tx.steps, tx.dt
        V = (Q[1:] - Q[:-1]) / dt
        tm = (np.arange(N) + 0.5) * dt
        X = np.hstack([0.5 * (Q[:-1] + Q[1:]), V, np.zeros((N, 2 * nq))])
        _, grad, H = self.phi.run(X, force_scales(model, tm), ACROSS if jacobian else ROWS, 2 * nq)
        Lq = lagrangian_force(model, grad[:, 2 * nq: 3 * nq], X[:, :nq])
        p = grad[:, 3 * nq:]
        if not jacobian:
            return slot_terms(model, V, tm, tx.dt, Lq, p)
        by_W, by_Z = H[:, 2 * nq: 3 * nq], H[:, 3 * nq:]
        across = (by_W[:, :, :nq], by_W[:, :, nq: 2 * nq], by_Z[:, :, :nq], by_Z[:, :, nq: 2 * nq])
        return slot_terms(model, V, tm, tx.dt, Lq, p, lagrangian_derivatives(model, *across))

    def phi_hessian(self, tx: TreeTranscription, qm: np.ndarray, v: np.ndarray, tm: np.ndarray, W: np.ndarray,
                    Z: np.ndarray) -> np.ndarray:
        """tree_hessian.TapeTerms.phi_hessian: phi's Hessian only over (qm, v)."""
        _, _, H = self.phi.run(np.hstack([qm, v, W, Z]), force_scales(tx.model, tm), BELOW, 2 * self.nq)
        return H[:, : 2 * self.nq, : 2 * self.nq]

    def _psi(self, q: np.ndarray, y: np.ndarray, lam: np.ndarray, nu: np.ndarray,
             hessian: bool) -> tuple[np.ndarray, np.ndarray | None]:
        _, grad, H = self.psi.run(np.hstack([q, y, lam, nu]), np.zeros((len(q), 0)), HESSIAN if hessian else ROWS)
        return grad, H

    def loops(self, tx: TreeTranscription, Q: np.ndarray, lam: np.ndarray, jacobian: bool) -> LoopTerms:
        """tree_dynamics.NumpyTerms.loops."""
        nq, nr = self.nq, self.nr
        grad, H = self._psi(Q, np.zeros_like(Q), lam, np.zeros_like(lam), jacobian)
        h, force = grad[:, 2 * nq + nr:], -grad[:, nq: 2 * nq]
        if not jacobian:
            return LoopTerms(h, force, None, None)
        return LoopTerms(h, force, -H[:, 2 * nq: 2 * nq + nr, nq: 2 * nq], -H[:, nq: 2 * nq, :nq])

    def configuration_hessian(self, tx: TreeTranscription, q: np.ndarray, y: np.ndarray, lam: np.ndarray,
                              nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """tree_hessian.TapeTerms.configuration_hessian."""
        nq = self.nq
        _, H = self._psi(q, y, lam, nu, True)
        return H[:, :nq, :nq], -H[:, 2 * nq: 2 * nq + self.nr, :nq]


def lagrangian_force(model: TreeModel, by_W: np.ndarray, qm: np.ndarray) -> np.ndarray:
    """L_q = g + Q with the joint springs (left out of phi) from phi's gradient in W at the midpoints qm."""
    return by_W - model.dof_stiffness * (qm - model.dof_rest)


# The sub-blocks of phi's Hessian across (W, Z) and (qm, v) (first row, first column in units of nq), in the order
# lagrangian_derivatives takes them: (W, qm), (W, v), (Z, qm), (Z, v).
ACROSS_BLOCKS = ((2, 0), (2, 1), (3, 0), (3, 1))


def lagrangian_derivatives(model: TreeModel, W_qm: np.ndarray, W_v: np.ndarray, Z_qm: np.ndarray,
                           Z_v: np.ndarray) -> tuple:
    """(L_q,q, L_q,qdot, p_q, p_qdot) for tree_dynamics.slot_terms from phi's Hessian across (ACROSS_BLOCKS): the
    joint springs (left out of phi) added to L_q,q."""
    return W_qm - np.diag(model.dof_stiffness), W_v, Z_qm, Z_v


class PointProgram:
    """chi(q, w) = sum_p w_p . x_p(q) compiled for points fixed in frames (frame, local coordinates): its gradient
    in w_p is the world position x_p, its (w_p, q) block dx_p/dq, its (q, q) block sum_p w_p . d2x_p/dq2 (a
    shot's body-point keys: their rows, Jacobian and curvature; references: mechanism_shots' per-key forward
    kinematics and tree_hessian.point_hessian)."""

    def __init__(self, model: TreeModel, points: list[tuple[int, np.ndarray]]):
        rec = Recorder()
        q, w = rec.variables(model.nq), rec.variables(3 * len(points))
        self.program = rec.compile(points_formula(model, q, w, points)).native()
        self.nq, self.n_points = model.nq, len(points)

    def run(self, Q: np.ndarray, weights: np.ndarray | None = None,
            hessian: bool = False) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """At configurations Q (K, nq): positions (K, points, 3), their derivatives (K, points, 3, nq) and the
        weighted curvature (K, nq, nq) (weights (K, points, 3), zero when None), the last two when hessian."""
        K, nq = len(Q), self.nq
        w = np.zeros((K, 3 * self.n_points)) if weights is None else weights.reshape(K, -1)
        _, grad, H = self.program.run(np.hstack([Q, w]), np.zeros((K, 0)), HESSIAN if hessian else ROWS)
        positions = grad[:, nq:].reshape(K, self.n_points, 3)
        if not hessian:
            return positions, None, None
        return positions, H[:, nq:, :nq].reshape(K, self.n_points, 3, nq), H[:, :nq, :nq]


# Coordinates up to which the compiled programs are used. Measured faster than the numpy path up to the largest
# benchmark model (chain_30: solver CPU 1.45 -> 0.69 s); beyond, untried: a program's Hessian per instance is
# (4 nq)^2 numbers and its compile time grows with the supports (chain_30: 0.03 s).
COMPILED_MAX_NQ = 64
_CACHE: dict[bytes, TreeProgram | PointProgram] = {}
_CACHE_SIZE = 16


def _fingerprint(model: TreeModel, *extra: np.ndarray) -> bytes:
    """A digest of everything the formulas read from the model, and of the extra arrays (kept rows, points)."""
    digest = hashlib.sha1()
    for name in ("dof_parent", "dof_kind", "dof_placement", "body_frame", "body_offset", "body_mass", "body_com",
                 "body_inertia", "gravity", "force_frame", "force_point", "force_vector", "row_frame_p",
                 "row_frame_c", "row_kind", "row_a", "row_b", "row_n"):
        a = np.ascontiguousarray(getattr(model, name))
        digest.update(f"{name}{a.dtype}{a.shape}".encode())
        digest.update(a.tobytes())
    for a in extra:
        digest.update(np.ascontiguousarray(a).tobytes())
    return digest.digest()


def cached(cache: dict, key, make):
    """What cache keeps under key, made by make() on first use (the last _CACHE_SIZE kept)."""
    if key not in cache:
        if len(cache) >= _CACHE_SIZE:
            del cache[next(iter(cache))]
        cache[key] = make()
    return cache[key]


def tree_program(model: TreeModel, rows: np.ndarray) -> TreeProgram:
    """The model's TreeProgram, compiled on first use and kept."""
    return cached(_CACHE, b"tree" + _fingerprint(model, np.asarray(rows, np.int64)), lambda: TreeProgram(model, rows))


def point_program(model: TreeModel, points: list[tuple[int, np.ndarray]]) -> PointProgram:
    """The PointProgram of the model's points, compiled on first use and kept."""
    frames = np.array([frame for frame, _ in points], np.int64)
    local = np.array([np.asarray(p, float) for _, p in points]).reshape(-1)
    return cached(_CACHE, b"points" + _fingerprint(model, frames, local), lambda: PointProgram(model, points))


def compiled(model: TreeModel) -> bool:
    """Whether a model's shots are evaluated by compiled programs: when the C kernels are built and the model has
    at most COMPILED_MAX_NQ coordinates."""
    return tape_program_binding.LIB is not None and model.nq <= COMPILED_MAX_NQ

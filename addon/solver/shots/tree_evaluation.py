"""A tree shot's compiled evaluation for one solve: the rows, the Jacobian's values and the Lagrangian Hessian's
on their fixed patterns, each pass the programs of tree_program.py run in place between two sparse products.

Every program input is an affine function of x, y and constants (midpoints and velocities, the multipliers'
weights W = dt/2 (a + b) and Z = b - a, configurations, loop multipliers, key weights), and every value an affine
function of the programs' outputs, x and constants: each row of phi's gradient (L_q, p) and psi's (h, Dh^T lam),
the points' positions, the controls and springs, damping and servos through q_k; each Jacobian entry of phi's
Hessian across (W, Z) and (qm, v) (tree_dynamics.slot_terms: D1_q1 = dt/4 (B + Q_q) - ...), psi's Hessian (Dh,
d(Dh^T lam)/dq) and dx_p/dq, with constants (the controls' columns, coordinate keys); each Lagrangian Hessian
entry of phi's (qm, v) block (through the midpoint chain rule), psi's (q, q) and (lam, q) blocks, the points'
curvature and the objective factor. So a pass holds one buffer (x, y, the inputs, the outputs, 1, obj_factor)
and two sparse matrices built once per solve, from where tree_dynamics.TreeTranscription.blocks and
tree_hessian.hessian_blocks put each block, the coefficients of slot_terms and of the springs found by evaluating
them on probes. Their references are those functions on tree_program.TreeProgram, to round-off
(tests/solver/shots/test_tree_evaluation.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..native.sparse_binding import CsrProduct
from ..native.tape_program_binding import ACROSS, BELOW, HESSIAN, ROWS, CProgram, Runner
from ..tree.compile import TreeModel
from .tree_dynamics import TreeTranscription, slot_terms
from .tree_hessian import force_scales, midpoint_chain
from .tree_program import ACROSS_BLOCKS, PointProgram, TreeProgram, lagrangian_derivatives, lagrangian_force

SLOTS = ("D1_q1", "D1_q2", "D2_q1", "D2_q2")


class _Layout:
    """Named sections of a pass's flat float buffer, then a constant 1 and the objective factor: fixed sparse
    matrices times the buffer give the programs' inputs and the values."""

    def __init__(self, sections: dict[str, tuple[int, ...]]):
        self.shape = dict(sections, one=(1,), objective=(1,))
        sizes = [int(np.prod(shape)) for shape in self.shape.values()]
        self.offset = dict(zip(self.shape, np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()))
        self.size = dict(zip(self.shape, sizes))
        self.total = int(sum(sizes))

    def section(self, name: str) -> slice:
        return slice(self.offset[name], self.offset[name] + self.size[name])

    def views(self, data: np.ndarray) -> dict[str, np.ndarray]:
        return {name: data[self.section(name)].reshape(shape) for name, shape in self.shape.items()}


class _AffineMap:
    """Contributions to a sparse matrix's entries: entry (row, col) += coefficient * buffer[source]."""

    def __init__(self):
        self.parts: list[tuple[np.ndarray, ...]] = []

    def blocks(self, rows: np.ndarray, cols: np.ndarray, sources: np.ndarray, shape: tuple[int, int],
               strides: tuple[int, int], coefficient: float | np.ndarray = 1.0, column_step: int = 1) -> None:
        """Dense blocks of `shape` at first rows and columns (G,): entry (i, j) of block g is coefficient (a number,
        (r, c) or per block (G, r, c)) times buffer[sources[g] + i strides[0] + j strides[1]], at column cols[g] +
        j column_step (0: a matrix-vector product's terms summed into one column). Entries whose coefficient is
        zero for every block are left out."""
        G = len(rows)
        if np.ndim(coefficient) == 3:  # per block
            i, j = np.divmod(np.arange(shape[0] * shape[1]), shape[1])
            coefficient = (np.zeros((G,) + tuple(shape)) + coefficient).reshape(G, len(i))
        else:  # the same for every block: its zero entries left out
            coefficient = np.zeros(shape) + coefficient
            i, j = np.nonzero(coefficient)
            coefficient = coefficient[i, j][None, :]
        zero = np.zeros((G, len(i)), np.int64)
        r = zero + np.asarray(rows, np.int64)[:, None] + i
        c = zero + np.asarray(cols, np.int64)[:, None] + j * column_step
        s = zero + np.asarray(sources, np.int64)[:, None] + i * strides[0] + j * strides[1]
        self.parts.append((r.ravel(), c.ravel(), s.ravel(), (zero + coefficient).ravel()))

    def _all(self) -> tuple[np.ndarray, ...]:
        """(rows, cols, sources, coefficients) of every contribution."""
        return tuple(np.concatenate(a) for a in zip(*self.parts))

    def matrix(self, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int], size: int) -> sp.csr_matrix:
        """(pattern entries, size): the contributions gathered onto a CSR pattern's entries (each contribution must
        fall on one; several on one entry add)."""
        r, c, s, coefficient = self._all()
        keys = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr)) * shape[1] + indices
        wanted = r * shape[1] + c
        position = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        if not np.array_equal(keys[position], wanted):
            raise ValueError("tree evaluation: a contribution falls outside the fixed pattern")
        return _gather(position, s, coefficient, len(keys), size)

    def column(self, n: int, size: int) -> sp.csr_matrix:
        """(n, size): the contributions to a vector of n entries (column 0)."""
        r, _, s, coefficient = self._all()
        return _gather(r, s, coefficient, n, size)


def _gather(position: np.ndarray, source: np.ndarray, coefficient: np.ndarray, n: int, size: int) -> sp.csr_matrix:
    """The (n, size) matrix taking buffer[source] times coefficient to entry position (duplicates add)."""
    out = sp.csr_matrix((coefficient, (position, source)), shape=(n, size))
    out.sum_duplicates()
    return out


def slot_coefficients(model: TreeModel, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """c (4 slots, 4 blocks) and constants (4 slots, nq, nq) with slot derivative X (SLOTS) = sum_s c[X, s] H_s +
    constants[X] over the sub-blocks H_s of phi's Hessian across (ACROSS_BLOCKS): slot_terms evaluated on probes
    (all sub-blocks zero, then each alone a fixed non-symmetric matrix), the elementwise form checked."""
    nq = model.nq
    probe = np.arange(1.0, nq * nq + 1.0).reshape(nq, nq)
    sub = np.zeros((5, 4, nq, nq))
    for s in range(4):
        sub[1 + s, s] = probe
    zeros = np.zeros((5, nq))
    it = slot_terms(model, zeros, np.zeros(5), dt, zeros, zeros, lagrangian_derivatives(model, *sub.swapaxes(0, 1)))
    slots = np.stack([getattr(it, name) for name in SLOTS])  # (4, 5, nq, nq)
    constants = slots[:, 0]
    c = (slots[:, 1:, 0, 0] - constants[:, None, 0, 0]) / probe[0, 0]
    if not np.allclose(slots[:, 1:] - constants[:, None], c[:, :, None, None] * probe, rtol=1e-13, atol=0.0):
        raise RuntimeError("slot_terms is not elementwise in phi's Hessian blocks")
    return c, constants


class TreeEvaluation:
    """A shot's compiled evaluation: the plans of its rows (the rows, then the keys'), Jacobian and Hessian passes
    (values on the fixed CSR patterns); passes() gives a solve its three EvaluationPass callables, rows(x),
    jacobian(x), hessian(x, y, obj_factor).

    tx: the transcription; program: its TreeProgram; points: the body-point keys' PointProgram (or None) with
    body_keys (first row, frame, keyed axes, keyed position) in its points' order; coordinate_keys (row, frame,
    coordinate, value); objective_hessian (rows, cols, values): the objective's Hessian at obj_factor 1
    (constant); jacobian_pattern and hessian_pattern (indices, indptr, shape) the fixed CSR patterns."""

    def __init__(self, tx: TreeTranscription, program: TreeProgram, points: PointProgram | None,
                 body_keys: list[tuple[int, int, np.ndarray, tuple]],
                 coordinate_keys: list[tuple[int, int, int, float]],
                 objective_hessian: tuple[np.ndarray, np.ndarray, np.ndarray], jacobian_pattern: tuple,
                 hessian_pattern: tuple):
        N, nq, nr = tx.steps, tx.nq, tx.nr
        self.tx, self.nq, self.nr, self.body_keys = tx, nq, nr, body_keys
        m = jacobian_pattern[2][0]
        phi = [("phi", program.phi, N, ACROSS)]
        others = [("psi", program.psi, N + 1, HESSIAN)] if nr else []
        others += [("points", points.program, len(body_keys), HESSIAN)] if body_keys else []
        self.plans = (
            self._plan([(name, c, K, ROWS) for name, c, K, _ in phi + others], False, m,
                       lambda layout: self._rows_map(layout, coordinate_keys), None),
            self._plan(phi + others, False, m, lambda layout: self._jacobian_map(layout, coordinate_keys),
                       jacobian_pattern),
            self._plan([("phi", program.phi, N, BELOW)] + [(name, c, N if name == "psi" else K, block)
                                                           for name, c, K, block in others],
                       True, m, lambda layout: self._hessian_map(layout, objective_hessian), hessian_pattern))

    def passes(self) -> tuple[EvaluationPass, EvaluationPass, EvaluationPass]:
        """The rows, Jacobian and Hessian passes, with buffers of their own (one solve's)."""
        return tuple(EvaluationPass(plan) for plan in self.plans)

    def _plan(self, programs: list[tuple[str, CProgram, int, int]], hessian: bool, m: int,
              values_map: Callable[[_Layout], _AffineMap], pattern: tuple | None) -> PassPlan:
        """A pass running `programs` (name, program, instances, block) from x (and, for the Hessian, y), with the
        values on `pattern` (indices, indptr, shape; None: the m rows) by values_map."""
        tx = self.tx
        sections = {"x": (tx.n,), "y": (m,)}
        sections |= {"in " + name: (K, c.n_var) for name, c, K, _ in programs}
        sections |= {name: (K, c.n_var) + ((c.n_var,) if block != ROWS else ()) for name, c, K, block in programs}
        layout = _Layout(sections)
        first, last = (layout.section("in " + name) for name in (programs[0][0], programs[-1][0]))
        inputs = slice(first.start, last.stop)
        input_matrix = self._input_map(layout, inputs.start, hessian).column(inputs.stop - inputs.start, layout.total)
        values = values_map(layout)
        values_matrix = values.column(m, layout.total) if pattern is None else values.matrix(*pattern, layout.total)
        scales = force_scales(tx.model, (np.arange(tx.steps) + 0.5) * tx.dt)
        runs = [(name, c, K, block, 2 * self.nq if name == "phi" else 0) for name, c, K, block in programs]
        return PassPlan(layout, runs, scales, inputs, input_matrix, values_matrix)

    # ---------------------------------------------------------------------------------------------- maps

    def _slot(self, out: _AffineMap, layout: _Layout, slot: int, instances: np.ndarray, rows: np.ndarray,
              cols: np.ndarray, coefficients: tuple[np.ndarray, np.ndarray]) -> None:
        """Slot derivative SLOTS[slot] of the intervals `instances` as (nq, nq) blocks at rows, cols."""
        nq = self.nq
        n = 4 * nq
        c, constants = coefficients
        base = layout.offset["phi"] + instances * n * n
        for s, (r0, c0) in enumerate(ACROSS_BLOCKS):
            out.blocks(rows, cols, base + r0 * nq * n + c0 * nq, (nq, nq), (n, 1), c[slot, s])
        self._constant(out, layout, rows, cols, constants[slot])

    @staticmethod
    def _constant(out: _AffineMap, layout: _Layout, rows: np.ndarray, cols: np.ndarray, block: np.ndarray) -> None:
        """The constant block (r, c) at rows, cols."""
        out.blocks(rows, cols, np.full(len(rows), layout.offset["one"]), block.shape, (0, 0), block)

    def _jacobian_map(self, layout: _Layout, coordinate_keys: list[tuple[int, int, int, float]]) -> _AffineMap:
        """Where tree_dynamics.TreeTranscription.blocks and the keys put each Jacobian entry, from what."""
        tx, nq, nr = self.tx, self.nq, self.nr
        N, nu = tx.steps, tx.nu
        out = _AffineMap()
        coefficients = slot_coefficients(tx.model, tx.dt)
        D1_q1, D1_q2, D2_q1, D2_q2 = range(4)
        k = np.arange(N)
        row, qcol, ucol = k * nq, (k - 1) * nq, N * nq + k * nu
        self._slot(out, layout, D1_q2, k, row, qcol + nq, coefficients)
        self._slot(out, layout, D1_q1, k[1:], row[1:], qcol[1:], coefficients)
        self._slot(out, layout, D2_q2, k[:-1], row[1:], qcol[1:], coefficients)
        self._slot(out, layout, D2_q1, k[1:-1], row[2:], qcol[1:-1], coefficients)
        half_Bu = np.zeros((nq, nu))
        half_Bu[tx.actuated, np.arange(nu)] = 0.5 * tx.dt
        self._constant(out, layout, row, ucol, half_Bu)
        self._constant(out, layout, row[1:], ucol[:-1], half_Bu)
        rest = N * (nq + nr)
        if tx.rest_at_end:
            last = np.array([N - 1])
            self._slot(out, layout, D2_q2, last, np.array([rest]), qcol[-1:] + nq, coefficients)
            self._constant(out, layout, np.array([rest]), ucol[-1:], half_Bu)
            if N > 1:
                self._slot(out, layout, D2_q1, last, np.array([rest]), qcol[-1:], coefficients)
        if nr:
            self._loop_jacobian(out, layout, row, qcol)
        for r, frame, index, _ in coordinate_keys:
            self._constant(out, layout, np.array([r]), np.array([tx.q_slice(frame).start + index]), np.ones((1, 1)))
        n_points = nq + 3 * len(self.body_keys)
        for p, (r, frame, axes, _) in enumerate(self.body_keys):
            sources = layout.offset["points"] + (p * n_points + nq + 3 * p + axes) * n_points
            out.blocks(r + np.arange(len(axes)), np.full(len(axes), tx.q_slice(frame).start), sources, (1, nq),
                       (0, 1))
        return out

    def _loop_jacobian(self, out: _AffineMap, layout: _Layout, row: np.ndarray, qcol: np.ndarray) -> None:
        """psi's part (configurations q_0 .. q_N): -d(Dh^T lam)/dq on the DEL (and rest) rows, -Dh^T on the
        multipliers' columns, Dh on the loop rows; psi's Hessian has Dh = -H[lam, y], d(Dh^T lam)/dq = -H[y, q]."""
        tx, nq, nr = self.tx, self.nq, self.nr
        N = tx.steps
        n = 2 * (nq + nr)
        base = layout.offset["psi"] + np.arange(N + 1) * n * n
        lcol = N * (nq + tx.nu) + np.arange(N) * nr
        out.blocks(row[1:], qcol[1:], base[1:N] + nq * n, (nq, nq), (n, 1))
        out.blocks(row, lcol, base[:N] + 2 * nq * n + nq, (nq, nr), (1, n))
        out.blocks(N * nq + np.arange(N) * nr, qcol + nq, base[1:] + 2 * nq * n + nq, (nr, nq), (n, 1), -1.0)
        if tx.rest_at_end:
            rest = np.array([N * (nq + nr)])
            out.blocks(rest, qcol[-1:] + nq, base[N:] + nq * n, (nq, nq), (n, 1))
            out.blocks(rest, np.array([tx.mu_slice.start]), base[N:] + 2 * nq * n + nq, (nq, nr), (1, n))

    def _rows_map(self, layout: _Layout, coordinate_keys: list[tuple[int, int, int, float]]) -> _AffineMap:
        """Where TreeTranscription.blocks and the keys put each row, from what: phi's gradient (L_q, p), psi's (h,
        Dh^T lam), the points' positions, x (springs, damping and servos through q_k, the controls, coordinate
        keys) and constants."""
        tx, nq, nr = self.tx, self.nq, self.nr
        N, nu = tx.steps, tx.nu
        out = _AffineMap()
        k = np.arange(N)
        row, x = k * nq, layout.offset["x"]
        self._slot_rows(out, layout, 0, k, row)
        self._slot_rows(out, layout, 1, k[:-1], row[1:])
        self._constant(out, layout, row[:1], np.zeros(1, np.int64), tx.p0[:, None])
        half_Bu = np.zeros((nq, nu))
        half_Bu[tx.actuated, np.arange(nu)] = 0.5 * tx.dt
        ucol = x + N * nq + k * nu
        out.blocks(row, np.zeros(N), ucol, (nq, nu), (0, 1), half_Bu, column_step=0)
        out.blocks(row[1:], np.zeros(N - 1), ucol[:-1], (nq, nu), (0, 1), half_Bu, column_step=0)
        rest = np.array([N * (nq + nr)])
        if tx.rest_at_end:
            self._slot_rows(out, layout, 1, k[-1:], rest)
            out.blocks(rest, np.zeros(1), ucol[-1:], (nq, nu), (0, 1), half_Bu, column_step=0)
        if nr:  # the constraint force Dh^T lam = -psi's gradient in y; h its gradient in nu
            n = 2 * (nq + nr)
            base = layout.offset["psi"] + np.arange(N + 1) * n
            column = (nq, 1), (1, 0)
            out.blocks(row, np.zeros(N), base[:N] + nq, *column)
            out.blocks(N * nq + k * nr, np.zeros(N), base[1:] + 2 * nq + nr, (nr, 1), (1, 0))
            if tx.rest_at_end:
                out.blocks(rest, np.zeros(1), base[N:] + nq, *column)
        for r, frame, index, value in coordinate_keys:
            one = (np.array([r]), np.zeros(1), np.array([x + tx.q_slice(frame).start + index]), (1, 1), (0, 0))
            out.blocks(*one)
            self._constant(out, layout, np.array([r]), np.zeros(1), np.array([[-value]]))
        n_points = nq + 3 * len(self.body_keys)
        for p, (r, _, axes, target) in enumerate(self.body_keys):
            rows = r + np.arange(len(axes))
            out.blocks(rows, np.zeros(len(axes)), layout.offset["points"] + p * n_points + nq + 3 * p + axes, (1, 1),
                       (0, 0))
            _constant_column(out, layout, rows, -np.asarray(target, float)[axes, None])
        return out

    def _slot_rows(self, out: _AffineMap, layout: _Layout, slot: int, instances: np.ndarray, rows: np.ndarray) -> None:
        """D1 (slot 0) or D2 (1) of the intervals `instances` at rows (nq each): slot_terms' and lagrangian_force's
        coefficients of L_q, p, v and qm (found on probes), constants (keyed torques, servos, spring rests) and
        q_0's part."""
        tx, nq = self.tx, self.nq
        N, dt, model = tx.steps, tx.dt, tx.model
        tm = (np.arange(N) + 0.5) * dt
        zero, one = np.zeros((N, nq)), np.ones((N, nq))
        spring = lagrangian_force(model, zero, zero)[0]
        by_qm = lagrangian_force(model, zero, one)[0] - spring

        def evaluate(V, Lq, p):
            it = slot_terms(model, V, tm, dt, Lq, p)
            return (it.D1, it.D2)[slot]

        none = evaluate(zero, zero, zero)
        by_Lq, by_p, by_v = (evaluate(*probe) - none for probe in ((zero, one, zero), (zero, zero, one),
                                                                   (one, zero, zero)))
        constant = evaluate(zero, zero + spring, zero)
        by_q1 = 0.5 * by_Lq * by_qm - by_v / dt  # (N, nq): q_k, q_k+1 through the midpoint and the velocity
        by_q2 = 0.5 * by_Lq * by_qm + by_v / dt
        phi = layout.offset["phi"] + instances * 4 * nq
        column = np.zeros(len(rows))
        for source, coefficient in ((phi + 2 * nq, by_Lq), (phi + 3 * nq, by_p)):
            out.blocks(rows, column, source, (nq, 1), (1, 0), coefficient[instances, :, None])
        x = layout.offset["x"]
        out.blocks(rows, column, x + instances * nq, (nq, 1), (1, 0), by_q2[instances, :, None])
        later = instances > 0
        out.blocks(rows[later], column[later], x + (instances[later] - 1) * nq, (nq, 1), (1, 0),
                   by_q1[instances[later], :, None])
        constant[0] += by_q1[0] * tx.q0  # q_0 is no unknown
        _constant_column(out, layout, rows, constant[instances])

    def _hessian_map(self, layout: _Layout, objective_hessian: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _AffineMap:
        """Where tree_hessian.hessian_blocks (with the keys' curvature) and the objective put each entry."""
        tx, nq, nr = self.tx, self.nq, self.nr
        N = tx.steps
        out = _AffineMap()
        n = 4 * nq
        chain = midpoint_chain(nq, tx.dt)[::nq, ::nq]  # (qm, v) by (q1, q2): scalar multiples of the identity
        base = layout.offset["phi"] + np.arange(N) * n * n
        col = (np.arange(N) - 1) * nq  # first column of q_k
        for a in range(2):
            for b in range(2):
                first = 0 if a == b == 1 else 1  # the first interval's q_0 is no unknown
                for s in range(2):
                    for t in range(2):
                        out.blocks(col[first:] + a * nq, col[first:] + b * nq, base[first:] + s * nq * n + t * nq,
                                   (nq, nq), (n, 1), chain[s, a] * chain[t, b])
        if nr:
            m = 2 * (nq + nr)
            base = layout.offset["psi"] + np.arange(N) * m * m
            qcol = np.arange(N) * nq
            out.blocks(qcol, qcol, base, (nq, nq), (m, 1))
            has_lam = N if tx.rest_at_end else N - 1
            lam_row = np.array([tx.lam_slice(k).start for k in range(1, N)] + [tx.mu_slice.start])[:has_lam]
            mixed = base[:has_lam] + 2 * nq * m
            out.blocks(lam_row, qcol[:has_lam], mixed, (nr, nq), (m, 1))
            out.blocks(qcol[:has_lam], lam_row, mixed, (nq, nr), (1, m))
        n_points = nq + 3 * len(self.body_keys)
        for p, (_, frame, _, _) in enumerate(self.body_keys):
            first = np.array([(frame - 1) * nq])
            out.blocks(first, first, layout.offset["points"] + np.array([p * n_points * n_points]), (nq, nq),
                       (n_points, 1))
        rows, cols, values = objective_hessian
        out.blocks(rows, cols, np.full(len(rows), layout.offset["objective"]), (1, 1), (0, 0), values[:, None, None])
        return out

    # ---------------------------------------------------------------------------------------------- inputs

    def _input_map(self, layout: _Layout, start: int, hessian: bool) -> _AffineMap:
        """The programs' inputs (rows: their index in the buffer less start) from x, y and constants: phi's midpoints
        and velocities (and for the Hessian its weights W = dt/2 (a + b), Z = b - a from the multipliers a, b of D1
        and D2), psi's configurations and loop multipliers (for the Hessian q_1 .. q_N, y = b and nu the loop
        rows' multipliers; else q_0 .. q_N), the points' configurations at their keys' frames (for the Hessian
        their keys' multipliers as weights)."""
        tx, nq, nr = self.tx, self.nq, self.nr
        N, dt, x, y = tx.steps, tx.dt, layout.offset["x"], layout.offset["y"]
        out = _AffineMap()
        k = np.arange(N)
        phi = layout.offset["in phi"] - start + k * 4 * nq
        for first, (c1, c2) in ((0, (0.5, 0.5)), (nq, (-1.0 / dt, 1.0 / dt))):
            self._configuration(out, layout, phi + first, k, c1)
            self._configuration(out, layout, phi + first, k + 1, c2)
        a = y + k * nq  # where each interval's multipliers a (D1) and b (D2) sit in y (b None: no rest rows)
        b = [y + (j + 1) * nq if j < N - 1 else (y + N * (nq + nr) if tx.rest_at_end else None) for j in k]
        has_b = np.array([j for j in k if b[j] is not None], np.int64)
        b_at = np.array([b[j] for j in has_b], np.int64)
        vector = (nq, 1), (1, 0)
        if hessian:
            for first, (ca, cb) in ((2 * nq, (0.5 * dt, 0.5 * dt)), (3 * nq, (-1.0, 1.0))):
                out.blocks(phi + first, k * 0, a, *vector, ca, column_step=0)
                out.blocks(phi[has_b] + first, has_b * 0, b_at, *vector, cb, column_step=0)
        if nr:
            n = 2 * (nq + nr)
            configurations = k + 1 if hessian else np.arange(N + 1)
            psi = layout.offset["in psi"] - start + np.arange(len(configurations)) * n
            self._configuration(out, layout, psi, configurations, 1.0)
            has_lam = configurations < N if not tx.rest_at_end else configurations >= 0
            lam = np.array([tx.lam_slice(c).start if c < N else tx.mu_slice.start for c in configurations[has_lam]])
            out.blocks(psi[has_lam] + 2 * nq, lam * 0, x + lam, (nr, 1), (1, 0), column_step=0)
            if hessian:
                out.blocks(psi[has_b] + nq, has_b * 0, b_at, *vector, column_step=0)
                out.blocks(psi + 2 * nq + nr, k * 0, y + N * nq + k * nr, (nr, 1), (1, 0), column_step=0)
        n_points = nq + 3 * len(self.body_keys)
        for p, (r, frame, axes, _) in enumerate(self.body_keys):
            at = layout.offset["in points"] - start + p * n_points
            self._configuration(out, layout, np.array([at]), np.array([frame]), 1.0)
            if hessian:
                out.blocks(at + nq + 3 * p + axes, axes * 0, y + r + np.arange(len(axes)), (1, 1), (0, 0),
                           column_step=0)
        return out

    def _configuration(self, out: _AffineMap, layout: _Layout, rows: np.ndarray, configurations: np.ndarray,
                       coefficient: float) -> None:
        """coefficient q_k at rows + (0 .. nq-1) of an input map for the configurations k (G,) (q_0 a constant)."""
        nq, moving = self.nq, configurations > 0
        out.blocks(rows[moving], rows[moving] * 0, layout.offset["x"] + (configurations[moving] - 1) * nq, (nq, 1),
                   (1, 0), coefficient, column_step=0)
        start = rows[~moving]
        _constant_column(out, layout, start, np.tile(coefficient * self.tx.q0, (len(start), 1)))


def _constant_column(out: _AffineMap, layout: _Layout, rows: np.ndarray, values: np.ndarray) -> None:
    """Constants values (G, r) at rows (G,) + (0 .. r-1) of a one-column map (rows or inputs)."""
    out.blocks(rows, np.zeros(len(rows)), np.full(len(rows), layout.offset["one"]), (values.shape[1], 1), (0, 0),
               values[:, :, None])


@dataclass(frozen=True)
class PassPlan:
    """What a pass is, kept between solves of a shot: its buffer's layout, its runs (name, program, instances,
    block, split; the buffer's sections "in name" and name are their inputs and outputs), phi's force scales,
    where the inputs sit, the map from x, y and constants to them and the map to the values."""

    layout: _Layout
    runs: list[tuple[str, CProgram, int, int, int]]
    scales: np.ndarray
    inputs: slice
    input_matrix: sp.csr_matrix
    values_matrix: sp.csr_matrix


class EvaluationPass:
    """One kind of evaluation (the rows, the Jacobian's values or the Hessian's) of one solve: a PassPlan with its
    buffer and the programs' runners on it (not for sharing between threads)."""

    def __init__(self, plan: PassPlan):
        layout = plan.layout
        self.plan, self.data = plan, np.zeros(layout.total)
        self.data[layout.offset["one"]] = 1.0
        view = layout.views(self.data)
        self.runs = []
        for name, program, K, block, split in plan.runs:
            output = {"grad" if block == ROWS else "H": view[name]}
            self.runs.append(Runner(program, K, block, split, X=view["in " + name], **output))
            if name == "phi":
                self.runs[-1].P[:] = plan.scales
        self.x, self.y, self.objective = layout.section("x"), layout.section("y"), layout.offset["objective"]
        start, stop, _ = plan.inputs.indices(len(self.data))
        read = plan.input_matrix.indices
        if np.any((read >= start) & (read < stop)):
            raise ValueError("tree evaluation: the programs' inputs are computed from themselves")
        # into a view of the buffer: the product writes the inputs in place
        self.make_inputs = CsrProduct(plan.input_matrix, self.data, out=self.data[plan.inputs])
        self.make_values = CsrProduct(plan.values_matrix, self.data)

    def __call__(self, x: np.ndarray, y: np.ndarray | None = None, obj_factor: float = 0.0) -> np.ndarray:
        """The values at x (and y, obj_factor for the Hessian)."""
        data = self.data
        data[self.x] = x
        if y is not None:
            data[self.y] = y
            data[self.objective] = obj_factor
        self.make_inputs()
        for run in self.runs:
            run()
        return self.make_values()

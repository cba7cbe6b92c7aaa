"""A tree shot's compiled evaluation for one solve: the programs of tree_program.py run in place (inputs and outputs
allocated once) and the Jacobian's and the Lagrangian Hessian's values on their fixed patterns as one sparse matrix
times the programs' outputs.

Every Jacobian entry is an affine function of phi's Hessian across (W, Z) and (qm, v) (tree_dynamics.slot_terms:
D1_q1 = dt/4 (B + Q_q) - ... with constants from the springs, damping and servos), of psi's Hessian (the loop rows'
Dh and d(Dh^T lam)/dq) and of the keys' points program (dx_p/dq), plus constants (the controls' columns, coordinate
keys); every Lagrangian Hessian entry a linear function of phi's (qm, v) block (through the midpoint chain rule),
psi's (q, q) and (lam, q) blocks, the points' curvature and the objective factor (the effort's and the joint-speed
cost's constant Hessians). The maps are built once per solve from where tree_dynamics.TreeTranscription.blocks and
tree_hessian.hessian_blocks put each block (the coefficients of slot_terms found by evaluating it on unit probes),
so each evaluation is the C runs and one sparse product. Their references are those two functions on
tree_program.TreeProgram, to round-off (tests/solver/shots/test_tree_evaluation.py).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..native.tape_program_binding import ACROSS, BELOW, HESSIAN, ROWS, Runner
from .tree_dynamics import TreeTranscription, slot_terms
from .tree_hessian import _midpoint_chain, force_scales
from .tree_program import ACROSS_BLOCKS, PointProgram, TreeProgram, lagrangian_derivatives, lagrangian_force

SLOTS = ("D1_q1", "D1_q2", "D2_q1", "D2_q2")


class _Buffer:
    """Named sections of one flat float buffer (the programs' outputs side by side, then a constant 1 and the
    objective factor), so that a fixed sparse matrix times it gives a derivative's values."""

    def __init__(self, sections: dict[str, tuple[int, ...]]):
        sections = dict(sections, one=(1,), objective=(1,))
        sizes = [int(np.prod(shape)) for shape in sections.values()]
        self.offset = dict(zip(sections, np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()))
        self.data = np.zeros(int(sum(sizes)))
        self.view = {name: self.data[self.offset[name]: self.offset[name] + size].reshape(shape)
                     for (name, shape), size in zip(sections.items(), sizes)}
        self.data[self.offset["one"]] = 1.0


class _AffineMap:
    """Contributions to a sparse matrix's entries: entry (row, col) += coefficient * buffer[source]."""

    def __init__(self):
        self.parts: list[tuple[np.ndarray, ...]] = []

    def blocks(self, rows: np.ndarray, cols: np.ndarray, sources: np.ndarray, shape: tuple[int, int],
               strides: tuple[int, int], coefficient: float | np.ndarray = 1.0, column_step: int = 1) -> None:
        """Dense blocks of `shape` at first rows and columns (G,): entry (i, j) of block g is coefficient (a number
        or (r, c)) times buffer[sources[g] + i strides[0] + j strides[1]], at column cols[g] + j column_step (0:
        a matrix-vector product's terms summed into one column)."""
        i = np.arange(shape[0])[None, :, None]
        j = np.arange(shape[1])[None, None, :]
        r = np.asarray(rows)[:, None, None] + i
        c = np.asarray(cols)[:, None, None] + j * column_step
        s = np.asarray(sources)[:, None, None] + i * strides[0] + j * strides[1]
        full = np.broadcast_shapes(r.shape, c.shape, s.shape)
        self.parts.append(tuple(np.broadcast_to(a, full).ravel() for a in (r, c, s, coefficient)))

    def matrix(self, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int], size: int) -> sp.csr_matrix:
        """(pattern entries, size): the contributions gathered onto a CSR pattern's entries (each contribution must
        fall on one; several on one entry add)."""
        r, c, s, coefficient = (np.concatenate(a) for a in zip(*self.parts))
        keys = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr)) * shape[1] + indices
        wanted = r.astype(np.int64) * shape[1] + c
        position = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        if not np.array_equal(keys[position], wanted):
            raise ValueError("tree evaluation: a contribution falls outside the fixed pattern")
        out = sp.csr_matrix((coefficient.astype(float), (position, s)), shape=(len(keys), size))
        out.sum_duplicates()
        return out


def slot_coefficients(model, dt: float) -> tuple[np.ndarray, np.ndarray]:
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
        raise AssertionError("slot_terms is not elementwise in phi's Hessian blocks")
    return c, constants


class TreeEvaluation:
    """The compiled Jacobian and Lagrangian Hessian values of one shot on fixed CSR patterns.

    tx: the transcription; program: its TreeProgram; points: the body-point keys' PointProgram (or None) with
    body_keys (first row, frame, keyed axes) in its points' order; coordinate_keys (row, frame, coordinate);
    objective_hessian (rows, cols, values): the objective's Hessian at obj_factor 1 (constant); jacobian_pattern
    and hessian_pattern (indices, indptr, shape) the fixed CSR patterns the values are for."""

    def __init__(self, tx: TreeTranscription, program: TreeProgram, points: PointProgram | None,
                 body_keys: list[tuple[int, int, np.ndarray]], coordinate_keys: list[tuple[int, int, int]],
                 objective_hessian: tuple[np.ndarray, np.ndarray, np.ndarray], jacobian_pattern: tuple,
                 hessian_pattern: tuple):
        N, nq, nr = tx.steps, tx.nq, tx.nr
        self.tx, self.nq, self.nr = tx, nq, nr
        self.Q = np.tile(tx.q0, (N + 1, 1))
        self.frames = np.array([frame for _, frame, _, _ in body_keys], np.int64)
        self.body_keys = body_keys
        n_phi, n_psi = 4 * nq, 2 * (nq + nr)
        n_points = nq + 3 * len(body_keys)
        scales = force_scales(tx.model, (np.arange(N) + 0.5) * tx.dt)
        sections = {"phi": (N, n_phi, n_phi)}
        if nr:
            sections["psi"] = (N + 1, n_psi, n_psi)
        if body_keys:
            sections["points"] = (len(body_keys), n_points, n_points)
        self.jacobian_buffer = _Buffer(sections)
        hessian_sections = dict(sections)
        if nr:
            hessian_sections["psi"] = (N, n_psi, n_psi)
        self.hessian_buffer = _Buffer(hessian_sections)
        jb, hb = self.jacobian_buffer.view, self.hessian_buffer.view
        self.jacobian_runs = [Runner(program.phi, N, ACROSS, 2 * nq, H=jb["phi"])]
        self.hessian_runs = [Runner(program.phi, N, BELOW, 2 * nq, H=hb["phi"])]
        for run in self.jacobian_runs + self.hessian_runs:
            run.P[:] = scales
        if nr:
            self.jacobian_runs.append(Runner(program.psi, N + 1, HESSIAN, H=jb["psi"]))
            self.hessian_runs.append(Runner(program.psi, N, HESSIAN, H=hb["psi"]))
        if body_keys:
            self.jacobian_runs.append(Runner(points.program, len(body_keys), HESSIAN, H=jb["points"]))
            self.hessian_runs.append(Runner(points.program, len(body_keys), HESSIAN, H=hb["points"]))
        self.rows_buffer = _Buffer({name: shape[:2] for name, shape in sections.items()} | {"x": (tx.n,)})
        rb = self.rows_buffer.view
        self.rows_runs = [Runner(program.phi, N, ROWS, grad=rb["phi"])]
        self.rows_runs[0].P[:] = scales
        if nr:
            self.rows_runs.append(Runner(program.psi, N + 1, ROWS, grad=rb["psi"]))
        if body_keys:
            self.rows_runs.append(Runner(points.program, len(body_keys), ROWS, grad=rb["points"]))
        m = jacobian_pattern[2][0]
        self.rows_matrix = self._rows_map(coordinate_keys).matrix(np.zeros(m, np.int64), np.arange(m + 1), (m, 1),
                                                                  len(self.rows_buffer.data))
        jac = self._jacobian_map(coordinate_keys)
        self.jacobian_matrix = jac.matrix(*jacobian_pattern, len(self.jacobian_buffer.data))
        hess = self._hessian_map(objective_hessian)
        self.hessian_matrix = hess.matrix(*hessian_pattern, len(self.hessian_buffer.data))

    # ---------------------------------------------------------------------------------------------- maps

    def _slot(self, out: _AffineMap, buffer: _Buffer, slot: int, instances: np.ndarray, rows: np.ndarray,
              cols: np.ndarray, coefficients: tuple[np.ndarray, np.ndarray]) -> None:
        """Slot derivative SLOTS[slot] of the intervals `instances` as (nq, nq) blocks at rows, cols."""
        nq = self.nq
        n = 4 * nq
        c, constants = coefficients
        base = buffer.offset["phi"] + instances * n * n
        for s, (r0, c0) in enumerate(ACROSS_BLOCKS):
            out.blocks(rows, cols, base + r0 * nq * n + c0 * nq, (nq, nq), (n, 1), c[slot, s])
        self._constant(out, buffer, rows, cols, constants[slot])

    @staticmethod
    def _constant(out: _AffineMap, buffer: _Buffer, rows: np.ndarray, cols: np.ndarray, block: np.ndarray) -> None:
        """The constant block (r, c) at rows, cols."""
        out.blocks(rows, cols, np.full(len(rows), buffer.offset["one"]), block.shape, (0, 0), block)

    def _jacobian_map(self, coordinate_keys: list[tuple[int, int, int]]) -> _AffineMap:
        """Where tree_dynamics.TreeTranscription.blocks and the keys put each Jacobian entry, from what."""
        tx, nq, nr, buffer = self.tx, self.nq, self.nr, self.jacobian_buffer
        N, nu = tx.steps, tx.nu
        out = _AffineMap()
        coefficients = slot_coefficients(tx.model, tx.dt)
        D1_q1, D1_q2, D2_q1, D2_q2 = range(4)
        k = np.arange(N)
        row, qcol, ucol = k * nq, (k - 1) * nq, N * nq + k * nu
        self._slot(out, buffer, D1_q2, k, row, qcol + nq, coefficients)
        self._slot(out, buffer, D1_q1, k[1:], row[1:], qcol[1:], coefficients)
        self._slot(out, buffer, D2_q2, k[:-1], row[1:], qcol[1:], coefficients)
        self._slot(out, buffer, D2_q1, k[1:-1], row[2:], qcol[1:-1], coefficients)
        half_Bu = np.zeros((nq, nu))
        half_Bu[tx.actuated, np.arange(nu)] = 0.5 * tx.dt
        self._constant(out, buffer, row, ucol, half_Bu)
        self._constant(out, buffer, row[1:], ucol[:-1], half_Bu)
        rest = N * (nq + nr)
        if tx.rest_at_end:
            last = np.array([N - 1])
            self._slot(out, buffer, D2_q2, last, np.array([rest]), qcol[-1:] + nq, coefficients)
            self._constant(out, buffer, np.array([rest]), ucol[-1:], half_Bu)
            if N > 1:
                self._slot(out, buffer, D2_q1, last, np.array([rest]), qcol[-1:], coefficients)
        if nr:
            self._loop_jacobian(out, row, qcol)
        for r, frame, index, _ in coordinate_keys:
            self._constant(out, buffer, np.array([r]), np.array([tx.q_slice(frame).start + index]), np.ones((1, 1)))
        n_points = nq + 3 * len(self.body_keys)
        for p, (r, frame, axes, _) in enumerate(self.body_keys):
            sources = buffer.offset["points"] + (p * n_points + nq + 3 * p + axes) * n_points
            out.blocks(r + np.arange(len(axes)), np.full(len(axes), tx.q_slice(frame).start), sources, (1, nq),
                       (0, 1))
        return out

    def _loop_jacobian(self, out: _AffineMap, row: np.ndarray, qcol: np.ndarray) -> None:
        """psi's part (configurations q_0 .. q_N): -d(Dh^T lam)/dq on the DEL (and rest) rows, -Dh^T on the
        multipliers' columns, Dh on the loop rows; psi's Hessian has Dh = -H[lam, y], d(Dh^T lam)/dq = -H[y, q]."""
        tx, nq, nr, buffer = self.tx, self.nq, self.nr, self.jacobian_buffer
        N = tx.steps
        n = 2 * (nq + nr)
        base = buffer.offset["psi"] + np.arange(N + 1) * n * n
        lcol = N * (nq + tx.nu) + np.arange(N) * nr
        out.blocks(row[1:], qcol[1:], base[1:N] + nq * n, (nq, nq), (n, 1))
        out.blocks(row, lcol, base[:N] + 2 * nq * n + nq, (nq, nr), (1, n))
        out.blocks(N * nq + np.arange(N) * nr, qcol + nq, base[1:] + 2 * nq * n + nq, (nr, nq), (n, 1), -1.0)
        if tx.rest_at_end:
            rest = np.array([N * (nq + nr)])
            out.blocks(rest, qcol[-1:] + nq, base[N:] + nq * n, (nq, nq), (n, 1))
            out.blocks(rest, np.array([tx.mu_slice.start]), base[N:] + 2 * nq * n + nq, (nq, nr), (1, n))

    def _rows_map(self, coordinate_keys: list[tuple[int, int, int, float]]) -> _AffineMap:
        """Where TreeTranscription.blocks and the keys put each row, from what: phi's gradient (L_q, p), psi's (h,
        Dh^T lam), the points' positions, x (springs, damping and servos through q_k, the controls, coordinate
        keys) and constants."""
        tx, nq, nr, buffer = self.tx, self.nq, self.nr, self.rows_buffer
        N, nu = tx.steps, tx.nu
        out = _AffineMap()
        k = np.arange(N)
        row, x = k * nq, buffer.offset["x"]
        self._slot_rows(out, 0, k, row)
        self._slot_rows(out, 1, k[:-1], row[1:])
        self._constant(out, buffer, row[:1], np.zeros(1, np.int64), tx.p0[:, None])
        half_Bu = np.zeros((nq, nu))
        half_Bu[tx.actuated, np.arange(nu)] = 0.5 * tx.dt
        ucol = x + N * nq + k * nu
        out.blocks(row, np.zeros(N), ucol, (nq, nu), (0, 1), half_Bu, column_step=0)
        out.blocks(row[1:], np.zeros(N - 1), ucol[:-1], (nq, nu), (0, 1), half_Bu, column_step=0)
        rest = np.array([N * (nq + nr)])
        if tx.rest_at_end:
            self._slot_rows(out, 1, k[-1:], rest)
            out.blocks(rest, np.zeros(1), ucol[-1:], (nq, nu), (0, 1), half_Bu, column_step=0)
        if nr:  # the constraint force Dh^T lam = -psi's gradient in y; h its gradient in nu
            n = 2 * (nq + nr)
            base = buffer.offset["psi"] + np.arange(N + 1) * n
            column = (nq, 1), (1, 0)
            out.blocks(row, np.zeros(N), base[:N] + nq, *column)
            out.blocks(N * nq + k * nr, np.zeros(N), base[1:] + 2 * nq + nr, (nr, 1), (1, 0))
            if tx.rest_at_end:
                out.blocks(rest, np.zeros(1), base[N:] + nq, *column)
        for r, frame, index, value in coordinate_keys:
            one = (np.array([r]), np.zeros(1), np.array([x + tx.q_slice(frame).start + index]), (1, 1), (0, 0))
            out.blocks(*one)
            self._constant(out, buffer, np.array([r]), np.zeros(1), np.array([[-value]]))
        n_points = nq + 3 * len(self.body_keys)
        for p, (r, _, axes, target) in enumerate(self.body_keys):
            rows = r + np.arange(len(axes))
            out.blocks(rows, np.zeros(len(axes)), buffer.offset["points"] + p * n_points + nq + 3 * p + axes, (1, 1),
                       (0, 0))
            self._constant_column(out, rows, -np.asarray(target, float)[axes, None])
        return out

    def _slot_rows(self, out: _AffineMap, slot: int, instances: np.ndarray, rows: np.ndarray) -> None:
        """D1 (slot 0) or D2 (1) of the intervals `instances` at rows (nq each): slot_terms' and lagrangian_force's
        coefficients of L_q, p, v and qm (found on probes), constants (keyed torques, servos, spring rests) and
        q_0's part."""
        tx, nq, buffer = self.tx, self.nq, self.rows_buffer
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
        phi = buffer.offset["phi"] + instances * 4 * nq
        column = np.zeros(len(rows))
        for source, coefficient in ((phi + 2 * nq, by_Lq), (phi + 3 * nq, by_p)):
            out.blocks(rows, column, source, (nq, 1), (1, 0), coefficient[instances, :, None])
        x = buffer.offset["x"]
        out.blocks(rows, column, x + instances * nq, (nq, 1), (1, 0), by_q2[instances, :, None])
        later = instances > 0
        out.blocks(rows[later], column[later], x + (instances[later] - 1) * nq, (nq, 1), (1, 0),
                   by_q1[instances[later], :, None])
        constant[0] += by_q1[0] * tx.q0  # q_0 is no unknown
        self._constant_column(out, rows, constant[instances])

    def _constant_column(self, out: _AffineMap, rows: np.ndarray, values: np.ndarray) -> None:
        """Constant (G, r) at rows (G,) of the rows map."""
        out.blocks(rows, np.zeros(len(rows)), np.full(len(rows), self.rows_buffer.offset["one"]),
                   (values.shape[1], 1), (0, 0), values[:, :, None])

    def _hessian_map(self, objective_hessian: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _AffineMap:
        """Where tree_hessian.hessian_blocks (with the keys' curvature) and the objective put each entry."""
        tx, nq, nr, buffer = self.tx, self.nq, self.nr, self.hessian_buffer
        N = tx.steps
        out = _AffineMap()
        n = 4 * nq
        chain = _midpoint_chain(nq, tx.dt)[::nq, ::nq]  # (qm, v) by (q1, q2): scalar multiples of the identity
        base = buffer.offset["phi"] + np.arange(N) * n * n
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
            base = buffer.offset["psi"] + np.arange(N) * m * m
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
            out.blocks(first, first, buffer.offset["points"] + np.array([p * n_points * n_points]), (nq, nq),
                       (n_points, 1))
        rows, cols, values = objective_hessian
        out.blocks(rows, cols, np.full(len(rows), buffer.offset["objective"]), (1, 1), (0, 0), values[:, None, None])
        return out

    # ---------------------------------------------------------------------------------------------- values

    def _configurations(self, x: np.ndarray, phi: np.ndarray) -> None:
        """Q[1:] (Q[0] = q0) from x, and the midpoints and velocities into phi's inputs (N, 4 nq)."""
        N, nq = self.tx.steps, self.nq
        Q = self.Q
        Q[1:] = x[: N * nq].reshape(N, nq)
        np.add(Q[:-1], Q[1:], out=phi[:, :nq])
        phi[:, :nq] *= 0.5
        np.subtract(Q[1:], Q[:-1], out=phi[:, nq: 2 * nq])
        phi[:, nq: 2 * nq] *= 1.0 / self.tx.dt

    def rows(self, x: np.ndarray) -> np.ndarray:
        """The rows (the DEL, loop and rest rows, then the keys') at x."""
        nq, nr = self.nq, self.nr
        self._configurations(x, self.rows_runs[0].X)
        self._loop_and_point_inputs(x, self.rows_runs[1:])
        self.rows_buffer.view["x"][:] = x
        for run in self.rows_runs:
            run()
        return self.rows_matrix @ self.rows_buffer.data

    def _loop_and_point_inputs(self, x: np.ndarray, runs: list[Runner]) -> None:
        """psi's inputs at q_0 .. q_N (multipliers lam_0 .. lam_N-1, mu) and the points' (each key's frame), y, nu
        and the key weights zero."""
        nq, nr = self.nq, self.nr
        runs = iter(runs)
        if nr:
            run = next(runs)
            run.X[:, :nq] = self.Q
            run.X[:, 2 * nq: 2 * nq + nr] = self.tx.loop_multipliers(x)
        if self.body_keys:
            next(runs).X[:, :nq] = self.Q[self.frames]

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """The Jacobian's values on its pattern at x."""
        nq, nr = self.nq, self.nr
        self._configurations(x, self.jacobian_runs[0].X)
        self._loop_and_point_inputs(x, self.jacobian_runs[1:])
        for run in self.jacobian_runs:
            run()
        return self.jacobian_matrix @ self.jacobian_buffer.data

    def hessian(self, x: np.ndarray, y: np.ndarray, obj_factor: float) -> np.ndarray:
        """The Lagrangian Hessian's values on its pattern at x, multipliers y (rows, then keys) and obj_factor."""
        tx, nq, nr = self.tx, self.nq, self.nr
        N = tx.steps
        phi = self.hessian_runs[0].X
        self._configurations(x, phi)
        a = y[: N * nq].reshape(N, nq)  # multipliers of D1 and D2 on each interval: a_k, b_k = a_k+1 (rest: y_rest)
        b = phi[:, 3 * nq:]  # Z = b - a, W = dt/2 (a + b)
        b[:-1] = a[1:]
        b[-1] = y[N * (nq + nr): N * (nq + nr) + nq] if tx.rest_at_end else 0.0
        np.add(a, b, out=phi[:, 2 * nq: 3 * nq])
        phi[:, 2 * nq: 3 * nq] *= 0.5 * tx.dt
        if nr:
            psi = self.hessian_runs[1].X
            psi[:, :nq] = self.Q[1:]
            psi[:, nq: 2 * nq] = b
            psi[:, 2 * nq: 2 * nq + nr] = tx.loop_multipliers(x)[1:]
            psi[:, 2 * nq + nr:] = y[N * nq: N * (nq + nr)].reshape(N, nr)
        b -= a
        if self.body_keys:
            points = self.hessian_runs[-1].X
            points[:, :nq] = self.Q[self.frames]
            for p, (r, _, axes, _) in enumerate(self.body_keys):
                points[p, nq + 3 * p + axes] = y[r: r + len(axes)]
        self.hessian_buffer.data[self.hessian_buffer.offset["objective"]] = obj_factor
        for run in self.hessian_runs:
            run()
        return self.hessian_matrix @ self.hessian_buffer.data

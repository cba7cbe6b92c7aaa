"""A sparse nonlinear program and its primal-dual interior-point solver (numpy/scipy only).

Owns the NLP description (bounds, objective, constraints, their first derivatives and an optional
Hessian of the Lagrangian) and `solve`, an IPOPT-style method (Waechter & Biegler 2006, simplified):

    min f(x)  s.t.  c_lower <= c(x) <= c_upper,  x_lower <= x <= x_upper

Fixed variables (x_lower == x_upper) are eliminated; each inequality row gets a slack s with the row's
bounds, so the equalities are c_E(x) - c_lower = 0 and c_I(x) - s = 0 and every bound is a barrier term
-mu log(distance). Each iteration solves the primal-dual Newton system

    [[H + Sigma + dw I, A^T], [A, -dc I]] [dz; lambda+] = -[grad phi_mu; c]

factorising the symmetric KKT matrix K. When the NLP gives each variable a stage (time step) and its rows couple
only nearby stages, K is block tridiagonal in stage order and, by default when the C kernel is built, is
factorised by the stage recursion of stage_kkt.py (in C, O(N) in the stages; the slacks and the inequality rows
of one stage eliminated first, stage_kkt.StagePlan); otherwise, and for a matrix whose
pivot blocks break down, by sparse LU (scipy splu; NLPResult.kkt says which). kkt="lu" / "stage" force either.
Neither gives the inertia cheaply, only the parity of the number of negative eigenvalues (the sign of det K),
so the Hessian shift dw grows until two necessary conditions hold: that number has the parity of m, and the
step has positive curvature d^T (H + Sigma + dw I) d > 0 (the inertia-free test of Chiang & Zavala 2016).
Steps stop at a fraction tau = max(0.99, 1 - mu) of the distance to the bounds and are accepted by IPOPT's filter line
search (switching condition, Armijo on the barrier objective, up to four second-order corrections). The
barrier parameter falls superlinearly (mu <- min(0.2 mu, mu^1.5)) once the barrier problem is solved to
10 mu (the default, mu_strategy="monotone"); mu_strategy="adaptive" chooses it each iteration by Mehrotra's
probing with the KKT-error safeguard of Nocedal, Waechter & Waltz 2009 (_BarrierUpdate). Objective and rows are
scaled by min(1, 100 / |gradient|_inf) at the start point (IPOPT's gradient scaling). There is no restoration
phase: when eight line searches in a row fail, the solve stops.

Converged ("solved") when the scaled dual infeasibility and complementarity are below `tol` and every
constraint row is met to `constraint_tol` (absolute, unscaled), or, IPOPT's "acceptable" level, when the
line search cannot improve a feasible point whose dual infeasibility is below 1000 tol. "infeasible" when
the line search stalls while the constraints are still violated (a local minimum of infeasibility).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp
from scipy.sparse import _sparsetools
from scipy.sparse.linalg import splu

from ..native.interior_point_binding import Vectors, step_to_bounds as _step_to_bounds, vectors as _vectors
from ..native.sparse_binding import LIB as _sparse_lib, ScatterAdd, SymmetricHalfSum
from .stage_kkt import (NATIVE, CondensedFactor, Entries, StageBreakdown, StageLayout, StagePlan, entry_rows,
                        kkt_residual, stage_layout, stage_spread)

Progress = Callable[[int, dict], Optional[bool]]
# the ufunc reductions behind ndarray.max and sum, without their Python wrappers
_max, _sum = np.maximum.reduce, np.add.reduce


@dataclass(frozen=True)
class FixedPattern:
    """A sparse derivative whose pattern is fixed for the whole solve: CSR indices, indptr and shape, and
    values(*args) -> its data in that order (the same arguments as the NLP's matrix callback). The solver then
    works out once where each entry goes and each call only gathers numbers (no matrix to check and convert).
    Optionally raw(*args) -> a larger array and picked, the positions of the data in it (values(*args) ==
    raw(*args)[picked]): the solver then composes its own gather with picked once (one gather a call); or raw and
    summed, the entry each of raw's numbers adds to (values(*args) == np.bincount(summed, raw(*args)): COO data in
    the order of its sums): the solver then sums them straight into its own matrix (no values array in between)."""

    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]
    values: Callable[..., np.ndarray]
    raw: Optional[Callable[..., np.ndarray]] = None
    picked: Optional[np.ndarray] = None
    summed: Optional[np.ndarray] = None

    def csr(self, data: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape)


@dataclass(frozen=True)
class NLP:
    """min objective(x) s.t. c_lower <= constraints(x) <= c_upper, x_lower <= x <= x_upper.

    Bounds may be +-inf; c_lower == c_upper marks an equality. jacobian(x) -> scipy.sparse (m, n);
    hessian(x, multipliers (m,), obj_factor) -> scipy.sparse (n, n) of obj_factor * f + sum_i y_i c_i
    (both triangles, or one: an entry whose mirror is absent counts whole; the
    matrix is symmetrised), or None when hessian is None: then a damped BFGS
    matrix is kept instead (dense; for small problems only). stages (n,) int, optional: the stage (time step)
    of each variable, -1 for a variable of no stage (such as a free time step); it lets the KKT matrix be
    factorised stage by stage (stage_kkt.py). jacobian_data, hessian_data, optional: the same matrices as
    values on fixed patterns (the solver then uses them instead of jacobian and hessian).
    """

    x_lower: np.ndarray
    x_upper: np.ndarray
    objective: Callable[[np.ndarray], float]
    gradient: Callable[[np.ndarray], np.ndarray]
    constraints: Callable[[np.ndarray], np.ndarray]
    jacobian: Callable[[np.ndarray], sp.spmatrix]
    c_lower: np.ndarray
    c_upper: np.ndarray
    hessian: Optional[Callable[[np.ndarray, np.ndarray, float], sp.spmatrix]] = None
    stages: Optional[np.ndarray] = None
    jacobian_data: Optional[FixedPattern] = None
    hessian_data: Optional[FixedPattern] = None

    @property
    def n(self) -> int:
        return len(self.x_lower)

    @property
    def m(self) -> int:
        return len(self.c_lower)


@dataclass
class NLPResult:
    """x (n,); status solved | infeasible | max_iter | cancelled | failed; multipliers (m,) of the rows
    (sign: grad f + J^T y = bound multipliers); constraint_violation: max over rows of the distance of
    c(x) to [c_lower, c_upper] (unscaled); wall_time in seconds; timings: CPU seconds per part of the
    solve, summing to the whole solve's (evaluation: objective, rows and their derivatives at the iterates;
    factorisation: KKT assembly, factorisations with the inertia correction, solves; line search: trial points
    and second-order corrections; interior point: the rest, its own set-up and vector algebra); kkt: how the KKT matrices were factorised (stage recursion or sparse LU, and why)."""

    x: np.ndarray
    status: str
    iterations: int
    objective: float
    constraint_violation: float
    multipliers: np.ndarray
    message: str
    wall_time: float
    timings: dict[str, float] = field(default_factory=dict)
    kkt: str = ""


class _Clock:
    """Accumulated CPU (process) time per named part (on a shared machine wall time counts the neighbours), from
    its making to `parts()`: what no named part holds is the interior point's own work."""

    def __init__(self):
        self.total: dict[str, float] = {"evaluation": 0.0, "factorisation": 0.0, "line search": 0.0}
        self._parts: list[tuple[str, float]] = []
        self._start = time.process_time()

    def parts(self) -> dict[str, float]:
        """The named parts and "interior point": the rest of the time since the clock was made (the reduced
        problem's set-up, residuals, barrier terms, steps to the bounds, multiplier updates, the filter)."""
        rest = time.process_time() - self._start - sum(self.total.values())
        return {**self.total, "interior point": max(rest, 0.0)}

    def __call__(self, part: str) -> "_Clock":
        """with clock(part): adds the block's CPU time to part (a plain context manager: no generator per use)."""
        self._parts.append((part, 0.0))
        return self

    def __enter__(self) -> None:
        self._parts[-1] = (self._parts[-1][0], time.process_time())

    def __exit__(self, *exc) -> None:
        part, t0 = self._parts.pop()
        self.total[part] += time.process_time() - t0


def violation(c: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per row distance of c to [lower, upper] (0 inside): max(max(lower - c, c - upper), 0), in one work array."""
    below = lower - c
    np.maximum(below, c - upper, out=below)
    return np.maximum(below, 0.0, out=below)


class _Reduced:
    """The NLP over z = (free x, slacks) with equality rows only, scaled."""

    def __init__(self, nlp: NLP, x0: np.ndarray):
        self.nlp = nlp
        xl, xu = np.asarray(nlp.x_lower, float), np.asarray(nlp.x_upper, float)
        if (xl > xu).any():
            i = int(np.argmax(xl > xu))
            raise ValueError(f"NLP: variable {i} has lower bound {xl[i]} above upper bound {xu[i]}")
        cl, cu = np.asarray(nlp.c_lower, float), np.asarray(nlp.c_upper, float)
        if (cl > cu).any():
            i = int(np.argmax(cl > cu))
            raise ValueError(f"NLP: constraint row {i} has lower bound {cl[i]} above upper bound {cu[i]}")
        self.fixed = xl == xu
        self.free = (~self.fixed).nonzero()[0]
        self.z_index = np.full(len(xl), -1)  # position of each variable in z, -1 when fixed
        self.z_index[self.free] = np.arange(len(self.free))
        self.x_full = np.where(self.fixed, xl, np.clip(np.asarray(x0, float), xl, xu))
        self.eq = cl == cu
        self.ineq = (~self.eq).nonzero()[0]
        self.nx, self.ns, self.m = len(self.free), len(self.ineq), len(cl)
        # the same as slices when each is one run (the car shots' are): views where each evaluation would gather
        self._free_at, self._ineq_at = _run(self.free), _run(self.ineq)
        self.cl, self.cu = cl, cu
        self.zl = np.concatenate([xl[self.free], cl[self.ineq]])
        self.zu = np.concatenate([xu[self.free], cu[self.ineq]])
        self.slack_entries = -np.ones(self.ns)  # the slacks' entries in the reduced Jacobian (inequality row, slack)
        self.target = np.where(self.eq, cl, 0.0)
        x = self.x_full.copy()
        gradient = np.array(nlp.gradient(x), float)  # a copy: kept for the solve's first evaluation (_at_start)
        g = gradient[self.free]
        self.f_scale = min(1.0, 100.0 / max(_max(np.abs(g), initial=0.0), 1e-300))
        row_max = np.zeros(self.m)  # over the free variables' columns
        J, values = self._jacobian_at(x)
        filled = J.indptr[1:] > J.indptr[:-1]
        if filled.any():
            size = np.where(self.z_index[J.indices] >= 0, np.abs(values), 0.0)
            row_max[filled] = np.maximum.reduceat(size, J.indptr[:-1][filled])
        self.c_scale = np.minimum(1.0, 100.0 / np.maximum(row_max, 1e-300))
        # the slacks start at their rows' values, in their bounds (no rows evaluated when there are none)
        self._start = {"x": x, "gradient": gradient, "jacobian": (J, np.array(values, float))}
        if self.ns:
            self._start["constraints"] = np.array(nlp.constraints(x), float)
        c0 = self._start["constraints"][self.ineq] if self.ns else np.zeros(0)
        self.s0 = np.clip(c0, cl[self.ineq], cu[self.ineq])
        self._jac_plan = self._hess_plan = self._free_memo = None

    def _at_start(self, what: str, x: np.ndarray):
        """The NLP's `what` (gradient, jacobian: (pattern, data), constraints) at x when x is the start point, where
        the scaling evaluated it (copies, each handed out once: the solve's first evaluations, the same numbers not
        computed again), else None; the first x that is not the start point drops them all."""
        start = self._start
        if start is None:
            return None
        if not np.array_equal(x, start["x"]):
            self._start = None
            return None
        value = start.pop(what, None)
        if len(start) == 1:
            self._start = None
        return value

    def _jacobian_at(self, x: np.ndarray) -> tuple[FixedPattern | sp.csr_matrix, np.ndarray]:
        """(the NLP's Jacobian's CSR pattern (its FixedPattern when it has one: no matrix built), its data) at x."""
        fixed = self.nlp.jacobian_data
        if fixed is not None:
            return fixed, fixed.values(x)
        J = sp.csr_matrix(self.nlp.jacobian(x))
        return J, J.data

    def full(self, z: np.ndarray, x: np.ndarray | None = None) -> np.ndarray:
        """The NLP's variables at z (fixed ones at their value); x: full(z) when the caller has it (returned)."""
        if x is not None:
            return x
        if self.nx == len(self.x_full):  # no fixed variable (the mechanism shots): z's first nx entries
            return z[:self.nx].copy()
        x = self.x_full.copy()
        x[self._free_at] = z[:self.nx]
        return x

    def grad(self, z, x=None):
        """The scaled objective's gradient over z (x: full(z), when the caller has it: likewise below)."""
        x = self.full(z, x)
        gradient = self._at_start("gradient", x)
        gradient = np.asarray(self.nlp.gradient(x), float) if gradient is None else gradient
        g = np.zeros(self.nx + self.ns)
        np.multiply(gradient[self._free_at], self.f_scale, out=g[:self.nx])
        return g

    def raw_c(self, z, x=None):
        x = self.full(z, x)
        raw = self._at_start("constraints", x)
        return np.asarray(self.nlp.constraints(x), float) if raw is None else raw

    def c(self, z, raw=None):
        raw = self.raw_c(z) if raw is None else raw
        out = raw - self.target
        if self.ns:
            out[self._ineq_at] -= z[self.nx:]
        return np.multiply(out, self.c_scale, out=out)

    def jac(self, z, x=None):
        """Jacobian of the scaled rows over z (CSR, m x (nx+ns)). The NLP's Jacobian keeps its sparsity pattern
        from one call to the next (a transcription's does): the reduced matrix's pattern and where each entry
        comes from are worked out once per pattern, and each call only gathers and scales the values: into the
        same matrix object each time (valid until the next call; the interior point keeps only the latest)."""
        x = self.full(z, x)
        start, fixed = self._at_start("jacobian", x), self.nlp.jacobian_data
        if start is None and fixed is not None and fixed.picked is not None and self._jac_plan is not None:
            _, src, scale, J, (from_raw, slacks) = self._jac_plan
            data = J.data  # the last call's values, written over (the same matrix object each call)
            # the NLP's gather and this one composed (_reduce_jacobian); the indices are in range: "clip" only skips
            # a buffer
            fixed.raw(x).take(from_raw, out=data, mode="clip")
            data[slacks] = -1.0  # slack_entries
            np.multiply(data, scale, out=data)
            return J
        raw, values = start or self._jacobian_at(x)
        if self._jac_plan is None or not (raw is self._jac_plan[0] or _same_pattern(self._jac_plan[0], raw)):
            self._jac_plan = (raw, *self._reduce_jacobian(raw))
        _, src, scale, J, _ = self._jac_plan
        J.data = np.concatenate([values, self.slack_entries])[src] * scale
        return J

    def jt(self, J: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
        """J^T y for a J from jac: J's arrays read as the CSC matrix of J^T by scipy's own kernel for that product
        (each column's entries summed in row order, as J.T @ y does), called without the Python dispatch around it."""
        out = np.zeros(J.shape[1])
        _sparsetools.csc_matvec(J.shape[1], J.shape[0], J.indptr, J.indices, J.data, y, out)
        return out

    def _reduce_jacobian(self, raw: FixedPattern | sp.csr_matrix):
        """(source of each reduced entry in [raw's data, slack -1s], its row scale, the reduced matrix, and for a
        FixedPattern with picked: (each entry's position in its raw array (0 at a slack's), the slacks' entries) else
        None): the free columns of raw (a CSR pattern), then the slacks' -1 at (inequality row, slack), every entry
        scaled by its row's c_scale."""
        nnz, nz = len(raw.indices), self.nx + self.ns
        rows, cols = self._entries(raw)
        kept = np.flatnonzero(cols >= 0)
        rows = np.concatenate([rows.take(kept), self.ineq])
        cols = np.concatenate([cols.take(kept), self.nx + np.arange(self.ns)])
        # row by row, each row's columns in order: lexsort((cols, rows))'s permutation (both stable), by a stable sort
        # of one key, which finds the sorted runs (the raw rows, the slacks)
        order = (rows.astype(np.int64) * nz + cols).argsort(kind="stable")
        src = np.concatenate([kept, nnz + np.arange(self.ns)]).take(order)
        rows, cols = rows.take(order), cols.take(order)
        indptr = rows.searchsorted(np.arange(self.m + 1)).astype(np.int32)
        reduced = sp.csr_matrix((np.zeros(len(src)), _frozen(cols.astype(np.int32)), _frozen(indptr)),
                                shape=(self.m, nz))
        composed = None
        if getattr(raw, "picked", None) is not None:
            slack = src >= nnz
            composed = (np.where(slack, 0, raw.picked.take(np.where(slack, 0, src))), slack.nonzero()[0])
        return src, self.c_scale.take(rows), reduced, composed

    def _entries(self, raw: FixedPattern | sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """(row, position in z of the column) of each entry of a CSR pattern over the NLP's variables (-1 at a fixed
        variable's column)."""
        return entry_rows(raw.indptr), self.z_index.take(raw.indices)

    def hess_data(self, z, y, x=None) -> np.ndarray | None:
        """The data of the Hessian of the scaled Lagrangian f_scale f + (c_scale y)^T c over z ((nx+ns)^2, symmetrised;
        slack rows empty) in the pattern of the CSC matrix plus_diagonal fills (with every diagonal entry in it: W
        = H + Sigma adds to them), or None. Like jac, the pattern and the scatter of the NLP's entries into it are
        worked out once per pattern."""
        if self.nlp.hessian is None:
            return None
        args = (self.full(z, x), self.c_scale * y, self.f_scale)
        fixed = self.nlp.hessian_data
        if fixed is not None:
            summed = fixed.summed if fixed.raw is not None else None  # COO data: summed into W's entries at once
            data = fixed.values(*args) if summed is None else fixed.raw(*args)
            if self._hess_plan is None:
                self._hess_plan = (None, *self._reduce_hessian(fixed, summed))
        else:
            raw = sp.csr_matrix(self.nlp.hessian(*args))
            data = raw.data
            if self._hess_plan is None or not _same_pattern(self._hess_plan[0], raw):
                self._hess_plan = (raw, *self._reduce_hessian(raw))
        _, symmetrised, self._w_matrix, self.diagonal, self._add_diagonal = self._hess_plan
        return symmetrised(data)

    def _free_entries(self, H: FixedPattern | sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position in z of the row, of the column, whether both are free) of each entry of a square CSR pattern over
        the NLP's variables; kept for the last pattern (the fixed Hessian's is read by the layout and the reduction)."""
        if self._free_memo is None or self._free_memo[0] is not H:
            r, j = self._entries(H)
            i = self.z_index.take(r)
            self._free_memo = (H, i, j, (i >= 0) & (j >= 0))
        return self._free_memo[1:]

    def _reduce_hessian(self, raw: FixedPattern | sp.csr_matrix, summed: np.ndarray | None = None):
        """(the map from raw's data to the data of the symmetrised Hessian over z (SymmetricHalfSum: each entry (r, c)
        half the sum of raw's entries at (r, c) and (c, r), the whole of one where the other is absent, 0 where both
        are; summed: raw's data comes as COO data summed into its entries), the CSC matrix W of that pattern, position
        of each diagonal entry, the C kernel adding to them: ScatterAdd, or None without the kernels). raw: a CSR
        pattern."""
        nz, none = self.nx + self.ns, -1
        i, j, free = self._free_entries(raw)
        kept = np.flatnonzero(free)
        i, j = i.take(kept), j.take(kept)
        d = np.arange(nz)
        key = np.concatenate([j, i, d]).astype(np.int64) * nz + np.concatenate([i, j, d])  # column-major: CSC
        unique, inverse = _unique_inverse(key)
        indices = (unique % nz).astype(np.int32)
        indptr = (unique // nz).searchsorted(np.arange(nz + 1)).astype(np.int32)
        upper, lower = np.full(len(unique), none), np.full(len(unique), none)
        upper[inverse[:len(kept)]] = kept  # raw (i, j) at CSC (row i, column j)
        lower[inverse[len(kept):2 * len(kept)]] = kept  # and at (row j, column i)
        # an entry whose mirror the raw pattern lacks (a Hessian given by one triangle) counts whole
        upper, lower = np.where(upper == none, lower, upper), np.where(lower == none, upper, lower)
        pattern = sp.csc_matrix((np.zeros(len(unique)), _frozen(indices), _frozen(indptr)), shape=(nz, nz))
        diagonal = inverse[2 * len(kept):]
        add_diagonal = None if _sparse_lib is None else ScatterAdd(diagonal, len(unique))
        return SymmetricHalfSum(upper, lower, len(raw.indices), summed), pattern, diagonal, add_diagonal

    def plus_diagonal(self, H: np.ndarray, sigma: np.ndarray) -> sp.csc_matrix:
        """W = H + diag(sigma) (CSC) for H's data from hess_data, which becomes W's (sigma added to its diagonal
        entries in place: its pattern holds them); like jac's, the same matrix object each call, valid until the
        next."""
        if self._add_diagonal is None:
            H[self.diagonal] += sigma
        else:
            self._add_diagonal(sigma, H)
        W = self._w_matrix
        W.data = H
        return W

    def _layout_hessian(self, z: np.ndarray) -> sp.coo_matrix:
        """The Hessian over the free variables whose nonzeros the stage layout takes: the NLP's fixed pattern
        itself when its entries couple stages at most one apart (a layout's band is at least one stage: which of
        them are zero cannot change it), else its value at z with every multiplier 1 (a window's pattern is
        dense over three stages; entries that are zero there couple nothing), an evaluation saved on the
        mechanism shots."""
        fixed = self.nlp.hessian_data
        if fixed is not None:
            stage = np.asarray(self.nlp.stages, int)
            if stage_spread(stage, entry_rows(fixed.indptr), fixed.indices) <= 1:
                return self._free_block(fixed, np.ones(len(fixed.indices)))
        H = sp.csr_matrix(self.nlp.hessian(self.full(z), np.ones(self.m), 1.0))
        return self._free_block(H, H.data)

    def _free_block(self, H: FixedPattern | sp.csr_matrix, data: np.ndarray) -> Entries:
        """The block over the free variables (n x n to nx x nx, by their positions in z) of the matrix of CSR pattern H
        and data `data`."""
        i, j, kept = self._free_entries(H)
        return Entries(i[kept], j[kept], data[kept], (self.nx, self.nx))

    def kkt_layout(self, z: np.ndarray, slacks: bool = True, J: sp.csr_matrix | None = None) -> StageLayout | str:
        """The stage layout of the KKT unknowns (z, then the rows' multipliers), or why there is none; the
        Hessian's nonzeros are taken with every multiplier 1 (no entry cancels by chance; _layout_hessian).
        slacks=False: the layout of the free variables and the rows only, for the KKT matrix with its slacks
        eliminated (stage_kkt.StagePlan, stage_kkt.CondensedFactor). J: jac(z), when the caller has it (not
        evaluated again)."""
        if self.nlp.stages is None:
            return "the NLP gives no stages"
        if self.nlp.hessian is None:
            return "quasi-Newton Hessian (dense)"
        var_stage = np.asarray(self.nlp.stages, int)[self.free]
        H = self._layout_hessian(z)
        J = self.jac(z) if J is None else J
        width = self.nx + self.ns if slacks else self.nx
        rows = entry_rows(J.indptr)
        # the pattern's entries that are zero here (a window's) couple nothing; row by row, as J's
        kept = ((J.data != 0) & (J.indices < width)).nonzero()[0]
        J = Entries(rows.take(kept), J.indices.take(kept), J.data.take(kept), (self.m, width))
        if not slacks:
            return stage_layout(var_stage, J, H, np.full(self.nx, -1), soft_rows=~self.eq)
        var_stage = np.concatenate([var_stage, np.full(self.ns, -1)])
        slack_rows = np.concatenate([np.full(self.nx, -1), self.ineq])
        return stage_layout(var_stage, J, H, slack_rows)


def _run(index: np.ndarray) -> slice | np.ndarray:
    """Ascending indices as the slice they equal when they are consecutive (a view where they would gather), else
    themselves."""
    if len(index) and index[-1] - index[0] == len(index) - 1:
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


def _unique_inverse(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_inverse=True) by a stable sort (np.unique's quicksort does not see sorted runs; a
    reduced Hessian's keys are three, two of them in order)."""
    order = key.argsort(kind="stable")
    ordered = key.take(order)
    first = np.empty(len(ordered), bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(len(key), np.intp)
    inverse[order] = first.cumsum() - 1
    return ordered[first], inverse


def _frozen(a: np.ndarray) -> np.ndarray:
    """a made read-only: index arrays shared by every matrix built on one pattern (no caller may change one)."""
    a.flags.writeable = False
    return a


def _same_pattern(a: sp.csr_matrix, b: sp.csr_matrix) -> bool:
    """Whether two CSR matrices have the same sparsity pattern (the same index arrays, or equal ones)."""
    if a.shape != b.shape or len(a.indices) != len(b.indices):
        return False
    return ((a.indices is b.indices or np.array_equal(a.indices, b.indices))
            and (a.indptr is b.indptr or np.array_equal(a.indptr, b.indptr)))


def _push_inside(z, zl, zu, k1=1e-2, k2=1e-2):
    """IPOPT's initial point rule: at least a relative margin from each bound."""
    lo_f, up_f = np.isfinite(zl), np.isfinite(zu)
    pl = np.where(lo_f, k1 * np.maximum(1.0, np.abs(zl)), 0.0)
    pu = np.where(up_f, k1 * np.maximum(1.0, np.abs(zu)), 0.0)
    both = lo_f & up_f
    pl = np.where(both, np.minimum(pl, k2 * (zu - zl)), pl)
    pu = np.where(both, np.minimum(pu, k2 * (zu - zl)), pu)
    z = np.where(lo_f, np.maximum(z, zl + pl), z)
    z = np.where(up_f, np.minimum(z, zu - pu), z)
    return z


def _along(z: np.ndarray, alpha: float, dz: np.ndarray) -> np.ndarray:
    """z + alpha dz, a fresh array (the product written over by the sum: one temporary fewer)."""
    out = np.multiply(dz, alpha)
    return np.add(z, out, out=out)


def _permutation_parity(perm: np.ndarray) -> int:
    """0 for an even permutation, 1 for an odd one: (n - number of cycles) mod 2. Each element learns the
    smallest index on its cycle by pointer doubling; the cycles are the elements that are their own minimum."""
    n = len(perm)
    low = np.arange(n)
    jump = np.asarray(perm)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2))))) + 1):
        low = np.minimum(low, low[jump])
        jump = jump[jump]
    return (n - int(np.sum(low == np.arange(n)))) % 2


def _negative_parity(lu) -> int:
    """Parity of the number of negative eigenvalues of the factorised symmetric matrix: the sign of its
    determinant, sign(det Pr) sign(det Pc) prod sign(U_ii) (L has a unit diagonal). An inertia of (n, m, 0)
    needs parity m mod 2; a mismatch proves wrong inertia (a match does not prove the right one)."""
    negatives = int(np.sum(lu.U.diagonal() < 0))
    return (negatives + _permutation_parity(lu.perm_r) + _permutation_parity(lu.perm_c)) % 2


class _SparseLU:
    """splu (COLAMD) of the assembled KKT matrix: RuntimeError when exactly singular; inertia up to parity."""

    def __init__(self, W: sp.spmatrix, J: sp.csr_matrix, dw: float, dc: float):
        nz, m = W.shape[0], J.shape[0]
        self.W, self.J, self.dw, self.dc = W, J, dw, dc
        self.K = sp.bmat([[W + dw * sp.identity(nz), J.T], [J, -dc * sp.identity(m) if m else None]], format="csc")
        self.K.eliminate_zeros()  # entries of W's and J's fixed patterns that are zero here: no fill for COLAMD
        self.lu = splu(self.K, permc_spec="COLAMD", diag_pivot_thresh=0.1)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return self.lu.solve(rhs)

    def residual(self, sol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return kkt_residual(self.W, self.J, self.dw, self.dc, sol, rhs)

    def inertia_ok(self, m: int) -> bool:
        return _negative_parity(self.lu) == m % 2


def _refined(factor, rhs: np.ndarray) -> tuple[np.ndarray, bool]:
    """factor's solution of K sol = rhs after up to three steps of iterative refinement (stopping at a residual
    of 1e-12 (1 + |rhs|)), and whether the residual came within 1e-9 (1 + |rhs|), round-off for these matrices
    (the sparse LU's solutions are used either way, as they always were)."""
    sol = factor.solve(rhs)
    size = 1 + np.abs(rhs).max()
    for _ in range(3):
        res_k = factor.residual(sol, rhs)
        if np.abs(res_k).max() <= 1e-12 * size:
            return sol, True
        sol = sol + factor.solve(res_k)
    return sol, bool(np.abs(factor.residual(sol, rhs)).max() <= 1e-9 * size)


class _KKT:
    """Factorises each KKT matrix of a solve: by the stage recursion (stage_kkt.py) when the NLP's variables
    have stages and its rows couple only nearby ones, else, or when a pivot block breaks down, by sparse LU.
    Counts which did what, for the report."""

    def __init__(self, layout: StageLayout | str, slacks: tuple[np.ndarray, np.ndarray] | None = None):
        """layout: of the variables and the rows (the slacks left out), or why there is none; slacks: (row of each
        slack, its coefficient), given with a layout. The slacks are eliminated first: in C with the one-stage
        inequality rows through a stage_kkt.StagePlan, else by stage_kkt.CondensedFactor over the numpy twin."""
        self.layout, self.slacks = layout, slacks
        self.plan = StagePlan(layout, *slacks) if NATIVE and isinstance(layout, StageLayout) else None
        self.stage_count = self.lu_count = 0
        self.breakdowns: dict[str, int] = {}

    def factor_solve(self, W: sp.spmatrix, J: sp.csr_matrix, dw: float, dc: float, rhs: np.ndarray):
        """(factor, solution of K sol = rhs with up to three steps of iterative refinement), or (factor, None) when
        the factor's inertia parity already rejects K (m rows: the step would be thrown away, so it is not
        solved). RuntimeError when K is exactly singular (sparse LU)."""
        m = J.shape[0]
        if isinstance(self.layout, StageLayout):
            try:
                if self.plan is not None:  # fill, factor, parity test and refined solve in one C call
                    factor, sol, accurate = self.plan.newton_step(W, J, dw, dc, rhs)  # only the last is kept
                else:
                    factor = CondensedFactor(self.layout, W, J, dw, dc, *self.slacks)
                    sol, accurate = _refined(factor, rhs) if factor.inertia_ok(m) else (None, False)
                if sol is None:
                    self.stage_count += 1
                    return factor, None
                if accurate or not np.isfinite(sol).all():
                    self.stage_count += 1
                    return factor, sol
                raise StageBreakdown("refinement did not reach the LU's accuracy")
            except StageBreakdown as err:
                self.breakdowns[str(err)] = self.breakdowns.get(str(err), 0) + 1
                if self.stage_count == 0 and sum(self.breakdowns.values()) >= 3:
                    self.layout = (f"the stage blocks broke down on the first three matrices ({err}); "
                                   f"{self.layout.describe()}")
        factor = _SparseLU(W, J, dw, dc)
        self.lu_count += 1
        return factor, (_refined(factor, rhs)[0] if factor.inertia_ok(m) else None)

    def describe(self) -> str:
        if not isinstance(self.layout, StageLayout):
            return f"sparse LU ({self.layout})"
        how = self.plan.describe() if self.plan is not None else f"{self.layout.describe()} (slacks eliminated first)"
        text = (f"{how}; {self.stage_count} factorisations ({'C' if NATIVE else 'numpy'})")
        if self.lu_count:
            why = "; ".join(f"{reason}: {count}" for reason, count in self.breakdowns.items())
            text += f", {self.lu_count} by sparse LU instead ({why})"
        return text


def _curvature(factor, W: sp.spmatrix, dz: np.ndarray, dw: float) -> tuple[float, float]:
    """(dz^T (W + dw I) dz, dz^T dz) of the step dz: as the factor's C call worked it out (PlannedFactor from
    StagePlan.newton_step), else here."""
    if getattr(factor, "curvature", None) is not None:
        return factor.curvature
    dd = dz @ dz
    return dz @ (W @ dz) + dw * dd, dd


def _regularised_step(W: sp.spmatrix, J: sp.csr_matrix, rhs: np.ndarray, shift: float, dw_last: float, mu: float,
                      kkt: _KKT):
    """The primal-dual Newton step: solve [[W + dw I, J^T], [J, -dc I]] sol = rhs (kkt's factorisation; W = H +
    Sigma), raising the Hessian shift dw from `shift` until the inertia tests of the module docstring pass (dc > 0
    only for an exactly singular matrix). Returns (sol, factor, dw); factor is None when no shift below 1e40
    works."""
    W = W if W.format == "csc" else sp.csc_matrix(W)
    nz = W.shape[0]
    dw, dc = shift, 0.0
    sol, factor = None, None
    for _ in range(40):
        try:
            factor, sol = kkt.factor_solve(W, J, dw, dc, rhs)
        except RuntimeError:  # exactly singular
            factor = None
            dc = max(dc, 1e-8 * mu**0.25)
            dw = max(1e-4, 10 * dw) if dw else (max(1e-4, dw_last / 3) if dw_last else 1e-4)
            continue
        if sol is None:  # wrong inertia parity (factor_solve did not solve)
            pass
        elif not np.isfinite(sol).all():
            factor = None
        else:
            curvature, dd = _curvature(factor, W, sol[:nz], dw)
            if curvature >= 1e-10 * dd:
                break
        dw = (max(1e-4, dw_last / 3) if dw_last else 1e-4) if dw == 0 else (8 if dw_last else 100) * dw
        if dw > 1e40:
            factor = None
            break
    return sol, (factor if sol is not None else None), dw


class _Point:
    """A point the interior point evaluated: z, the NLP's variables x there (full(z)), its rows (raw and scaled),
    |c| (its sum theta is the filter's violation, its largest entry the primal infeasibility), the objective
    (unscaled; nan where not evaluated: outside the bounds) and the sum of the log barrier terms (-inf outside). The
    line search's accepted trial is the next iterate: its variables, objective, violation and barrier objective are
    not evaluated again (nor at the solve's end). A plain record with slots (a frozen dataclass's __init__ sets each
    field through object.__setattr__: a trial point costs ten of them)."""

    __slots__ = ("z", "x", "raw", "c", "abs_c", "theta", "f", "logs")

    def __init__(self, z: np.ndarray, x: np.ndarray, raw: np.ndarray, c: np.ndarray, abs_c: np.ndarray, theta: float,
                 f: float, logs: float):
        self.z, self.x, self.raw, self.c, self.abs_c = z, x, raw, c, abs_c
        self.theta, self.f, self.logs = theta, f, logs

    def barrier(self, f_scale: float, mu: float) -> float:
        """The scaled barrier objective f_scale f - mu logs (inf outside the bounds)."""
        return np.inf if self.logs == -np.inf else f_scale * self.f - mu * self.logs


def _evaluate(P: _Reduced, V: Vectors, z: np.ndarray) -> _Point:
    """The rows, their violation sum, the log barrier and (inside the bounds) the objective at z."""
    x = P.full(z)
    raw = P.raw_c(z, x)
    c = P.c(z, raw)
    logs = V.log_barrier(z)
    f = np.nan if logs == -np.inf else float(P.nlp.objective(x))
    abs_c = np.abs(c)
    return _Point(z, x, raw, c, abs_c, float(_sum(abs_c)), f, logs)


def _filter_test(filt, theta, phi, theta_t, phi_t, model_decrease, alpha, theta_min, theta_max) -> str:
    """Waechter-Biegler filter acceptance of a trial point: '' (reject), 'f' (Armijo on the barrier objective
    under the switching condition) or 'h' (enough progress in violation or objective; the filter grows)."""
    if not math.isfinite(phi_t) or theta_t > theta_max:
        return ""
    for th, ph in filt:  # a filter entry dominates the trial point
        if theta_t >= th and phi_t >= ph:
            return ""
    if model_decrease < 0 and (-model_decrease) ** 2.3 * alpha ** (1 - 2.3) > theta ** 1.1 and theta <= theta_min:
        return "f" if phi_t <= phi + 1e-4 * model_decrease else ""
    if theta_t <= (1 - 1e-5) * theta or phi_t <= phi - 1e-8 * theta:
        return "h"
    return ""


class _BarrierUpdate:
    """The barrier parameter mu of a solve and its update rule, mu_strategy "monotone" or "adaptive".

    monotone (Fiacco-McCormick, IPOPT's default): mu <- min(0.2 mu, mu^1.5), possibly several times, once the
    barrier problem is solved to 10 mu. adaptive (Nocedal, Waechter & Waltz 2009; IPOPT's mu_strategy adaptive,
    mu_oracle probing, with the KKT-error safeguard): in free mode each iteration's mu comes from Mehrotra's probing
    (`probe`, after the KKT matrix is factorised), within [tol / 10, mu_init]; free mode lasts while the KKT error
    falls below 0.9999 times the largest of its last four values there; otherwise monotone mode from 0.8 times
    the mean complementarity until that barrier problem is solved to 10 mu, then free mode again."""

    def __init__(self, strategy: str, mu_init: float, tol: float):
        if strategy not in ("monotone", "adaptive"):
            raise ValueError(f"NLP solve: mu_strategy must be 'monotone' or 'adaptive', not {strategy!r}")
        self.adaptive = self.free = strategy == "adaptive"
        self.mu, self.mu_max, self.mu_min = mu_init, mu_init, tol / 10
        self.references: list[float] = []  # the KKT errors of the last free-mode iterations

    def update(self, dual_inf: float, primal_inf: float, products: np.ndarray) -> bool:
        """The update before an iteration's step from its scaled dual infeasibility, constraint error and
        complementarity products (each bound's distance times its multiplier): whether mu changed."""
        old = self.mu
        if self.free:
            error = max(dual_inf, primal_inf, float(products.max(initial=0.0)))
            if self.references and error > 0.9999 * max(self.references):
                self.free = False
                self.mu = float(np.clip(0.8 * products.mean(), self.mu_min, self.mu_max)) if len(products) else old
            self.references = (self.references + [error])[-4:] if self.free else []
            return self.mu != old
        while self.mu > self.mu_min and self._solved(dual_inf, primal_inf, products):
            self.mu = max(self.mu_min, min(0.2 * self.mu, self.mu**1.5))
            if self.adaptive:  # this barrier problem is solved: back to free mode
                self.free = True
                break
        return self.mu != old

    def _solved(self, dual_inf: float, primal_inf: float, products: np.ndarray) -> bool:
        """Whether the barrier problem of this mu is solved to 10 mu: its KKT error max(dual_inf, primal_inf,
        max |products - mu|) is within 10 mu (the products' term only when the other two are)."""
        if max(dual_inf, primal_inf) > 10.0 * self.mu:
            return False
        return max(dual_inf, primal_inf, float(_max(np.abs(products - self.mu), initial=0.0))) <= 10.0 * self.mu

    @property
    def probing(self) -> bool:
        """Whether this iteration's mu comes from probing (the adaptive rule's free mode)."""
        return self.free

    def probe(self, products: np.ndarray, mean_product_affine: float) -> float:
        """Mehrotra's probing: mu = sigma * the mean complementarity product, sigma = (its value after the affine
        step to the boundary / its value now)^3, at most 1; within [mu_min, mu_max]. Returns the new mu."""
        mean_product = float(products.mean()) if len(products) else 0.0
        sigma = min((max(mean_product_affine, 0.0) / mean_product) ** 3, 1.0) if mean_product > 0 else 0.0
        self.mu = float(np.clip(sigma * mean_product, self.mu_min, self.mu_max))
        return self.mu


def _affine_products(dz: np.ndarray, z: np.ndarray, dl: np.ndarray, du: np.ndarray, zL: np.ndarray, zU: np.ndarray,
                     zl_dl: np.ndarray, zu_du: np.ndarray, V: Vectors) -> float:
    """The mean complementarity product after the affine-scaling step (the primal-dual Newton step for mu = 0, primal
    part dz): primal and bound multipliers each stepped as far as their bounds allow (fraction 1)."""
    dzL, dzU = -zL - zl_dl * dz, zu_du * dz - zU  # the bound multipliers' Newton steps for mu = 0
    alpha = _step_to_bounds(dl, du, dz, 1.0)
    alpha_dual = min(_step_to_bounds(zL, None, dzL, 1.0), _step_to_bounds(zU, None, dzU, 1.0))
    d_lo, d_up = V.distances(z + alpha * dz)
    zL_new, zU_new = (zL + alpha_dual * dzL)[V.lo], (zU + alpha_dual * dzU)[V.up]
    count = len(d_lo) + len(d_up)
    return float(d_lo @ zL_new + d_up @ zU_new) / count if count else 0.0


def solve(nlp: NLP, x0: np.ndarray, *, tol: float = 1e-8, constraint_tol: float = 1e-9, max_iter: int = 300,
          progress: Progress | None = None, mu_init: float = 0.1, kkt: str = "auto",
          mu_strategy: str = "monotone") -> NLPResult:
    """Solve `nlp` from x0 by the primal-dual interior-point method of this module's docstring.

    progress(iteration, info) is called once per iteration with info keys objective, constraint_violation,
    dual_infeasibility, mu, step, regularization and, after the first step, how that step went: step_max (the
    fraction-to-boundary bound on the primal step), step_dual (the bound multipliers' step) and accepted ('f':
    Armijo on the barrier objective, 'h': filter progress, '': the line search failed); returning False stops
    with status 'cancelled'.
    kkt: "lu" (sparse LU), "stage" (the stage recursion of stage_kkt.py, in C when the kernel is built, else its
    numpy twin, when nlp.stages allows it, else sparse LU; same steps to round-off, see docs/shots.md) or "auto"
    (the default: "stage" when the C kernel is built, else "lu", the faster of the two in numpy).
    mu_strategy: the barrier update, "monotone" (the default) or "adaptive" (probing, from the affine-scaling step:
    one more solve with each factorisation, two when mu rises); see _BarrierUpdate. mu_init is the first mu of either, and the
    adaptive rule's largest.
    """
    if kkt not in ("auto", "lu", "stage"):
        raise ValueError(f"NLP solve: kkt must be 'auto', 'lu' or 'stage', not {kkt!r}")
    why_lu = "kkt='lu'"
    if kkt == "auto":
        kkt, why_lu = ("stage" if NATIVE else "lu"), "the C stage kernel is not built"
    start_time = time.perf_counter()
    clock = _Clock()
    P = _Reduced(nlp, x0)
    nz = P.nx + P.ns
    zl, zu = P.zl, P.zu
    z = _push_inside(np.concatenate([P.x_full[P.free], P.s0]), zl, zu)
    mu = mu_init
    barrier_update = _BarrierUpdate(mu_strategy, mu_init, tol)
    # the distances dl = z - zl, du = zu - z (inf where there is no bound: mu / dl, zL / dl are 0 there), the bound
    # multipliers zL, zU (0 there), their steps, the barrier terms: buffers of the solve, each kernel writes its own
    V = _vectors(zl, zu, P.m)
    V.start(z)
    dl, du, zL, zU = V.dl, V.du, V.zL, V.zU
    y = np.zeros(P.m)
    dw_last = 0.0
    bfgs = np.eye(nz) if nlp.hessian is None else None
    status, message = "max_iter", f"no convergence in {max_iter} iterations"
    stalls = 0
    shift = 0.0  # Hessian shift forced after a failed line search
    last_alpha = 0.0
    last_step: dict = {}  # how the last step went, for progress: its bound on alpha, the dual step, the verdict
    filt: list[tuple[float, float]] = []  # filter entries (constraint violation, barrier objective)
    theta_max = theta_min = None

    with clock("evaluation"):
        point = _evaluate(P, V, z)
        raw, c = point.raw, point.c
        g = P.grad(z, point.x)
        J = P.jac(z, point.x)
    with clock("factorisation"):
        factoriser = (_KKT(P.kkt_layout(z, slacks=False, J=J), (P.ineq, -P.c_scale[P.ineq])) if kkt == "stage"
                      else _KKT(why_lu))
    it = 0
    for it in range(max_iter + 1):
        # max |grad f + J^T y - zL + zU| and the complementarity products (V.products: the lower bounds', then the
        # upper bounds'), with their largest
        dual_max, compl = V.optimality(P.jt(J, y), g)
        products = V.products
        s_d = max(100.0, (_sum(np.abs(y)) + _sum(zL) + _sum(zU)) / max(P.m + nz, 1)) / 100.0
        dual_inf = dual_max / s_d
        raw_viol = float(_max(violation(raw, P.cl, P.cu), initial=0.0))
        f_val = point.f if point.logs != -np.inf else float(nlp.objective(point.x))
        if progress is not None:
            info = {"objective": f_val, "constraint_violation": raw_viol, "dual_infeasibility": dual_inf,
                    "mu": mu, "regularization": dw_last, "step": last_alpha, **last_step}
            if progress(it, info) is False:
                status, message = "cancelled", f"cancelled at iteration {it}"
                break
        if dual_inf <= tol and compl <= tol and raw_viol <= constraint_tol:
            status, message = "solved", f"converged in {it} iterations"
            break
        if it == max_iter:
            break
        primal_inf = float(_max(point.abs_c, initial=0.0))  # max |c|: nan when an entry is (maximum keeps nan)
        if not (math.isfinite(f_val) and math.isfinite(primal_inf)):
            status, message = "failed", f"non-finite objective or constraints at iteration {it}"
            break
        if barrier_update.update(dual_inf, primal_inf, products):
            mu, filt = barrier_update.mu, []
        with clock("evaluation"):
            H = P.hess_data(z, y, point.x)
        with clock("factorisation"):
            # zL / dl, zU / du, sigma (their sum), the barrier terms' gradients mu / dl, mu / du (all 0 where there is
            # no bound: the distance is inf), grad_phi; and the right-hand side -(grad_phi, c)
            terms, rhs = V.barrier_terms(g, mu, c)
            zl_dl, zu_du, sigma, grad_phi = terms[0], terms[1], terms[2], terms[5]
            W = P.plus_diagonal(H, sigma) if H is not None else sp.csr_matrix(bfgs + np.diag(sigma))
            sol, lu, dw = _regularised_step(W, J, rhs, shift, dw_last, mu, factoriser)
            if lu is not None and barrier_update.probing:
                # the affine-scaling step (mu = 0), unrefined: relative residuals up to 2e-9 measured on the shots,
                # 3e-10 in the combined steps below (_refined accepts 1e-9)
                sol_aff = lu.solve(-np.concatenate([g, c]))
                mu_new = barrier_update.probe(products, _affine_products(sol_aff[:nz], z, dl, du, zL, zU, zl_dl, zu_du,
                                                                         V))
                if mu_new != mu:  # the right-hand side is affine in mu: a smaller mu's step is a combination
                    terms, rhs = V.barrier_terms(g, mu_new, c)  # zL / dl, zU / du: the same numbers
                    grad_phi = terms[5]
                    sol = sol_aff + (mu_new / mu) * (sol - sol_aff) if mu_new < mu else _refined(lu, rhs)[0]
                    mu, filt = mu_new, []
        if lu is None:
            status, message = "failed", f"KKT system could not be regularised at iteration {it}"
            break
        dw_last = dw
        tau = max(0.99, 1.0 - mu)
        dz, y_new = sol[:nz], sol[nz:]
        dy = y_new - y
        alpha_max = V.step_to_bounds(dz, tau)
        # the bound multipliers' steps (0 where there is no bound: each term is) and their own bounds zL, zU >= 0
        alpha_z = V.multiplier_steps(dz, tau)[2]

        theta0 = point.theta
        phi0 = point.barrier(P.f_scale, mu)
        slope = float(grad_phi @ dz)
        if theta_max is None:
            theta_max, theta_min = 1e4 * max(1.0, theta0), 1e-4 * max(1.0, theta0)
        alpha = alpha_max
        accepted = None
        with clock("line search"):
            while alpha > 1e-12:
                trial = _evaluate(P, V, _along(z, alpha, dz))
                verdict = _filter_test(filt, theta0, phi0, trial.theta, trial.barrier(P.f_scale, mu), alpha * slope,
                                       alpha, theta_min, theta_max)
                if verdict:
                    accepted = (trial, verdict)
                    break
                if alpha == alpha_max and trial.theta >= theta0:
                    # second-order corrections (IPOPT): re-solve with the constraint values at the trial point
                    c_soc, theta_prev = alpha * c + trial.c, theta0
                    for _ in range(4):
                        d_soc = lu.solve(np.concatenate([-grad_phi, -c_soc]))[:nz]
                        a_soc = V.step_to_bounds(d_soc, tau)
                        soc = _evaluate(P, V, _along(z, a_soc, d_soc))
                        verdict = _filter_test(filt, theta0, phi0, soc.theta, soc.barrier(P.f_scale, mu),
                                               alpha * slope, alpha, theta_min, theta_max)
                        if verdict:
                            accepted = (soc, verdict)
                            break
                        if soc.theta > 0.99 * theta_prev:
                            break
                        c_soc, theta_prev = a_soc * c_soc + soc.c, soc.theta
                    if accepted is not None:
                        break
                alpha *= 0.5
        if accepted is not None and accepted[1] == "h":  # not an Armijo step: the filter grows
            filt.append(((1 - 1e-5) * theta0, phi0 - 1e-8 * theta0))
        if accepted is None:
            stalls += 1
            if stalls >= 8:
                viol = float(violation(raw, P.cl, P.cu).max(initial=0.0))
                if viol > constraint_tol:
                    status = "infeasible"
                    message = (f"line search stalled at iteration {it} with constraint violation {viol:.3g}: "
                               f"no feasible direction found (locally infeasible)")
                elif dual_inf <= 1e3 * tol and compl <= 1e3 * tol:
                    status = "solved"
                    message = (f"solved to an acceptable level at iteration {it}: feasible, dual infeasibility "
                               f"{dual_inf:.2g} (the line search cannot improve further)")
                else:
                    status = "failed"
                    message = f"line search stalled at iteration {it} (feasible, not optimal to tol {tol:g})"
                break
            shift = max(10 * max(dw_last, shift), 1e-2)  # retry with a more convex, shorter step
            last_step = {"step_max": alpha_max, "step_dual": 0.0, "accepted": ""}
            continue
        stalls, last_alpha, shift = 0, alpha, 0.0
        last_step = {"step_max": alpha_max, "step_dual": alpha_z, "accepted": accepted[1]}
        point = accepted[0]
        s_step = point.z - z if bfgs is not None else None
        z, raw, c = point.z, point.raw, point.c
        # dl, du at z and the bound multipliers stepped, kept within a factor of the primal-dual central path (IPOPT
        # kappa_Sigma); where there is no bound, zL, zU, dzL, dzU and both limits are 0
        V.accepted_step(z, alpha_z, mu)
        y = _along(y, alpha_z if alpha_z < alpha else alpha, dy)
        lag_old = g + J.T @ y if bfgs is not None else None  # J is refilled by the next P.jac
        with clock("evaluation"):
            g = P.grad(z, point.x)
            J = P.jac(z, point.x)
        if bfgs is not None:
            yk = (g + J.T @ y) - lag_old
            Bs = bfgs @ s_step
            sBs = float(s_step @ Bs)
            sy = float(s_step @ yk)
            if sBs > 0:
                theta = 1.0 if sy >= 0.2 * sBs else 0.8 * sBs / (sBs - sy)
                r = theta * yk + (1 - theta) * Bs
                bfgs = bfgs - np.outer(Bs, Bs) / sBs + np.outer(r, r) / float(s_step @ r)
    x, raw = point.x, point.raw  # the last iterate's, evaluated there
    f_val = point.f if point.logs != -np.inf else float(nlp.objective(x))
    return NLPResult(x, status, it, f_val, float(violation(raw, P.cl, P.cu).max(initial=0.0)),
                     P.c_scale * y / P.f_scale, message, time.perf_counter() - start_time, clock.parts(),
                     factoriser.describe())

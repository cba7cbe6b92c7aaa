"""Stage-structured factorisation of the interior point's KKT matrix: block-tridiagonal LDL^T over stages.

A transcription whose variables each belong to one stage (time step), with rows coupling only nearby stages,
gives a KKT matrix [[W, J^T], [J, -dc I]] that is block banded once its unknowns (variables, slacks and row
multipliers) are ordered by stage. `stage_layout` finds that order. Each row sits either at the stage of the
variable it pins (the latest stage among its coefficients of at least half its largest, at the start point: a
DMOC step's position and attitude rows go with the next state, its momentum balance with the velocity it
determines) or at the middle of its stages; the placement cheaper to factorise is kept (on the car shots the
middle; on the helicopter and the boat the pinned one, where the middle left the first block singular: its
attitude rows had too few attitude variables). A slack sits at its row's stage; the
band b is the largest stage distance between two coupled unknowns, and chunks of b consecutive stages make the
matrix block tridiagonal (chunks merge where the unknowns so far have more rows than variables, e.g. after a
start state fixed by its bounds, and where a chunk's pivot block is structurally singular: the four-bar's rest
and loop rows at its last step but one). Variables of no stage (the free time step, stage -1) and rows touching only them
form a small border coupled to every chunk (an arrow matrix); so does a last block much larger than the others
(merged from the stages under keys on the end state), which would otherwise set the padded size of every block.

In C (native/stage_kkt.c, the interior point's path through `StagePlan` below when the kernels are built) K goes
into blocks of each chunk's own size and is factorised by the sequential Riccati recursion D_{k+1} = A_{k+1} -
C_k^T D_k^{-1} C_k, dense LU per block, over only the columns of C_k that are not zero. `StageFactor`, the numpy
twin and reference (the same matrix, other pivots), factorises by block cyclic reduction (the stage-wise Riccati
recursion reordered so that each level is a batch of independent small dense problems, which numpy does in one
call each): with A_k the diagonal and C_k the upper off-diagonal blocks, the even blocks are eliminated at once,

    A'_j = A_j - C_{j-1}^T A_{j-1}^{-1} C_{j-1} - C_j A_{j+1}^{-1} C_j^T,   C'_j = -C_j A_{j+1}^{-1} C_{j+1}

for the odd j, leaving a block-tridiagonal matrix of half the size; log2(N) levels, O(N p^3) work for N chunks of
at most p unknowns. Each level's pivot blocks are equilibrated and inverted by batched LU, and the border is
eliminated by its Schur complement S = F - E^T T^{-1} E. This is a block LDL^T of a symmetric permutation of K,
so by Sylvester's law of inertia the negative eigenvalues of K are those of the pivot blocks plus those of S:
the factorisation keeps their parity (the signs of the blocks' determinants, what the interior point tests, as
with the sparse LU), and `negatives()` counts them exactly from the pivot blocks' eigenvalues. No pivoting
crosses blocks: a singular pivot block or border raises `StageBreakdown`, and a solve that iterative refinement
cannot bring to the LU's accuracy is redone by sparse LU (nlp.py); both are counted in the solver's report.

`CondensedFactor` (the numpy path) eliminates the slack unknowns first (each has a positive diagonal and one
row): StageFactor then runs on the variables and rows only, smaller blocks, with a diagonal of its own on each
slack's row. `StagePlan` (the interior point's stage path when the C kernel is built) also eliminates the
inequality rows whose variables lie in one block or two adjacent ones (each a negative pivot), leaving the
variables and the equality rows, and fills the C kernel's blocks from W's and J's data through slots worked out
once per sparsity pattern; its newton_step is the interior point's whole step attempt (fill, factorisation, parity
test, refined solve) in one C call.
"""

from __future__ import annotations

import ctypes
from itertools import accumulate
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..native import address, pointers
from ..native import stage_kkt_binding as _native

_END_TO_BORDER = 200  # most unknowns in the border after moving the last block there
_PIVOT_RCOND = 1e-13  # smallest |eigenvalue| / largest of the equilibrated border Schur complement (else: singular)
NATIVE = _native.LIB is not None  # the C kernel (native/stage_kkt.c) is built and loads
_INT64_MAX = np.iinfo(np.int64).max


class StageBreakdown(RuntimeError):
    """The stage recursion cannot factorise this matrix reliably (use the sparse LU)."""


class StageLayout:
    """Where each KKT unknown (nz variables then m rows) goes: chunk, position in its padded chunk, or border.

    Built once per solve from the stage of each variable and the sparsity patterns of J and H."""

    def __init__(self, chunk: np.ndarray, n_chunks: int, band: int):
        self.n_unknowns = len(chunk)
        self.n_chunks = n_chunks
        self.band = band
        # array methods and ufunc reductions rather than numpy's function wrappers: a layout is built on every solve
        staged = chunk >= 0
        inner = staged.nonzero()[0]
        self.border = (~staged).nonzero()[0]
        inner_chunk = chunk.take(inner)
        order = inner.take(inner_chunk.argsort(kind="stable"))
        sizes = np.bincount(inner_chunk, minlength=n_chunks)
        self.size = int(sizes.max())
        starts = sizes.cumsum() - sizes
        local = np.empty(self.n_unknowns, int)
        local[order] = np.arange(len(order)) - starts.repeat(sizes)
        local[self.border] = np.arange(len(self.border))
        self.chunk, self.local = chunk, local
        self.pad = self.size - sizes  # unused slots per chunk: identity rows, one positive eigenvalue each
        # the C kernel's storage (native/stage_kkt.h): blocks of each chunk's own size, no padding
        self.order = order
        self.sizes = sizes.astype(np.int64)
        self.nb = len(self.border)
        self.r_off = starts.astype(np.int64)
        ends = np.concatenate([sizes**2, sizes[:-1] * sizes[1:], sizes * self.nb]).cumsum()
        offsets = np.concatenate([[0], ends]).astype(np.int64)
        self.a_off = offsets[:n_chunks]
        self.c_off = offsets[n_chunks:2 * n_chunks - 1]
        self.e_off = offsets[2 * n_chunks - 1:3 * n_chunks - 1]
        self.f_off = int(offsets[3 * n_chunks - 1])
        self.n_blk = self.f_off + self.nb**2

    def scratch(self) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
        """The C kernel's work arrays of this layout, allocated once (PlannedFactor: each factorisation in a plan
        overwrites the last; the interior point keeps only its latest factor), and their addresses. Fresh arrays
        of this size come from the system zeroed, page by page: about as dear as a factorisation."""
        if getattr(self, "_scratch", None) is None:
            self._scratch = _work_arrays(self)
        return self._scratch

    def kernel_args(self) -> tuple:
        """The layout's arguments of the C factor and solve calls (stage_kkt_binding.layout_args), kept."""
        if getattr(self, "_kernel_args", None) is None:
            self._kernel_args = _native.layout_args(self)
        return self._kernel_args

    def cost(self, padded: bool) -> int:
        """Flops of a factorisation, up to a constant: every block's inverse and its products with the border's
        columns, and the border's Schur complement; blocks padded to the largest (numpy's batches) or not (C)."""
        return _cost(np.full(self.n_chunks, self.size) if padded else self.sizes, len(self.border))

    def describe(self) -> str:
        return (f"stage recursion: {self.n_chunks} blocks of at most {self.size} unknowns "
                f"({self.band} stage{'s' if self.band > 1 else ''} each), {len(self.border)} coupling unknowns")


class Entries(NamedTuple):
    """A sparse matrix's entries as coordinates, without scipy's checks of a matrix it builds: row, col and data,
    one per entry, and the shape."""

    row: np.ndarray
    col: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


def _entries(M: sp.spmatrix | Entries) -> Entries:
    """M's entries (itself when it is Entries; a scipy matrix's in its coordinate form's order)."""
    if isinstance(M, Entries):
        return M
    coo = _coo(M)
    return Entries(coo.row, coo.col, coo.data, coo.shape)


def _row_major(M: sp.spmatrix | Entries) -> tuple[Entries, np.ndarray]:
    """(M's entries row by row, each row's columns ascending without repeats, its CSR indptr): Entries are taken to
    be in that order already (stage_layout's J), a scipy matrix is brought to it."""
    if not isinstance(M, Entries):
        csr = sp.csr_matrix(_coo(M))
        M = Entries(entry_rows(csr.indptr), csr.indices, csr.data, csr.shape)
    return M, np.concatenate([[0], np.bincount(M.row, minlength=M.shape[0]).cumsum()])


def stage_layout(var_stage: np.ndarray, J: sp.spmatrix | Entries, H: sp.spmatrix | Entries | None,
                 slack_rows: np.ndarray, max_border: int = 20, padded: bool | None = None,
                 soft_rows: np.ndarray | None = None) -> StageLayout | str:
    """The layout for KKT unknowns (variables with stages var_stage (nz,), -1 for none; then J's rows), or the
    reason there is none. slack_rows (nz,): the row of each slack variable, -1 for the other variables.

    Rows go either where they pin a variable or to the middle of their stages (module docstring); of the two
    layouts, the cheaper to factorise is kept (StageLayout.cost: padded for the numpy twin, by default when the C
    kernel is not built); the one whose blocks before the search for singular ones already cost no less than the
    other's layout is not finished (_cost_bound). soft_rows (m,) bool: rows with a negative diagonal of their own
    in K (an eliminated slack's), which leave no block singular however many there are. J and H: scipy matrices
    or their Entries (J's row by row, each row's columns ascending, as a canonical CSR matrix has them)."""
    padded = NATIVE is False if padded is None else padded
    J, indptr = _row_major(J)
    rows, cols, h_band = J.row + len(var_stage), J.col, 0
    if H is not None:
        Hc = _entries(H)
        nonzero = Hc.data != 0  # a window's Hessian pattern is dense; only entries that can be nonzero count
        h_rows, h_cols = Hc.row[nonzero], Hc.col[nonzero]
        # the variables' stages do not depend on where the rows go: the band of W's entries among them is
        # measured once; entries at a slack (its stage is its row's) go with J's to each placement
        on_slack = (slack_rows[h_rows] >= 0) | (slack_rows[h_cols] >= 0)
        h_band = stage_spread(var_stage, h_rows[~on_slack], h_cols[~on_slack])
        rows, cols = np.concatenate([rows, h_rows[on_slack]]), np.concatenate([cols, h_cols[on_slack]])
    hard = np.ones(J.shape[0], bool) if soft_rows is None else ~np.asarray(soft_rows, bool)
    placements = [_placement(var_stage, row_stage, slack_rows, rows, cols, max_border, hard, h_band)
                  for row_stage in _row_stages(J, _PerRow(indptr), var_stage)]
    hard = np.concatenate([np.zeros(len(var_stage), bool), hard])
    # unpadded, merging blocks only adds to the cost: a placement whose blocks so far cost no less than the
    # other's layout cannot win (the pinned one wins a tie), and is not finished
    bounds = [_cost_bound(placement, padded) for placement in placements]
    layouts: list[StageLayout | str | None] = [None, None]
    for k in sorted(range(2), key=lambda k: bounds[k]):
        other = layouts[1 - k]
        if not isinstance(other, StageLayout) or bounds[k] < other.cost(padded) + (k == 0):
            layouts[k] = _layout(placements[k], rows, cols, padded, hard)
    found = [layout for layout in layouts if isinstance(layout, StageLayout)]
    return min(found, key=lambda layout: layout.cost(padded)) if found else layouts[0]


def _coo(M: sp.spmatrix) -> sp.coo_matrix:
    """M in coordinates (itself when it is: scipy's conversion checks it again)."""
    return M if isinstance(M, sp.coo_matrix) else sp.coo_matrix(M)


class _PerRow:
    """Reductions over each row's entries of a CSR pattern (one reduceat call each: ufunc.at is an order of
    magnitude slower), the rows that have entries and where they start found once for all of them."""

    def __init__(self, indptr: np.ndarray):
        self.n_rows = len(indptr) - 1
        self.filled = indptr[1:] > indptr[:-1]
        self.starts = indptr[:-1][self.filled]

    def __call__(self, ufunc: np.ufunc, values: np.ndarray, empty) -> np.ndarray:
        """ufunc reduced over each row's values (one per entry), `empty` for a row without any."""
        out = np.full(self.n_rows, empty, dtype=values.dtype)
        if len(self.starts):
            out[self.filled] = ufunc.reduceat(values, self.starts)
        return out


def _row_span(per_row: _PerRow, indices: np.ndarray, stage: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) stage of each row's columns with stage >= 0 (stage: one per column); -1, -1 for none; for
    the CSR pattern of per_row with column indices `indices`."""
    at = stage.take(indices)
    staged = at >= 0
    lo = per_row(np.minimum, np.where(staged, at, _INT64_MAX), -1)
    hi = per_row(np.maximum, np.where(staged, at, -1), -1)
    return np.where(hi >= 0, lo, -1), hi


def _row_stages(J: Entries, per_row: _PerRow, var_stage: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two placements of each row (-1: touches no staged variable): where it pins a variable, the latest stage
    among its coefficients of at least half its largest (a step's equation x_{k+1} - f(x_k, ...) goes with
    x_{k+1}, a momentum balance with the velocity it determines), and the middle of its stages. J: row by row,
    per_row over its CSR pattern."""
    lo, hi = _row_span(per_row, J.col, var_stage)
    middle = np.where(hi >= 0, (lo + hi) // 2, -1)
    stage = var_stage[J.col]
    size = np.abs(J.data) * (stage >= 0)
    largest = per_row(np.maximum, size, 0.0)
    pins = (size > 0) & (size >= 0.5 * largest[J.row])
    pinned = per_row(np.maximum, np.where(pins, stage, -1), -1)
    return np.where(pinned >= 0, pinned, middle), middle


def stage_spread(stage: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> int:
    """The largest stage distance between the two unknowns of a pair (rows[i], cols[i]) that both have a stage."""
    at_row, at_col = stage.take(rows), stage.take(cols)
    # both >= 0: no sign bit; np.max's ufunc reduction, called directly
    return int(np.maximum.reduce(np.abs(at_row - at_col), where=(at_row | at_col) >= 0, initial=0))


def _placement(var_stage, row_stage, slack_rows, rows, cols, max_border: int, hard: np.ndarray,
               h_band: int) -> tuple[np.ndarray, int, np.ndarray, int] | str:
    """One placement of the rows: (stage of each unknown, band, chunk of each unknown with the groups of `band`
    stages merged by their counts (_merge_groups), number of border unknowns), or why there is no layout.
    (rows, cols): the KKT matrix's coupled pairs whose stages depend on the placement (J's entries, W's at
    slacks), h_band: the largest stage distance of the others."""
    nz = len(var_stage)
    at_slack = row_stage.take(np.maximum(slack_rows, 0))
    stage = np.concatenate([np.where(slack_rows >= 0, at_slack, var_stage), row_stage])
    band = max(1, h_band, stage_spread(stage, rows, cols))
    border = np.count_nonzero(stage < 0)
    if border > max_border:
        return f"{border} unknowns belong to no stage (at most {max_border} allowed)"
    first = int(np.minimum.reduce(stage[stage >= 0], initial=0))
    group = np.where(stage >= 0, (stage - first) // band, -1)
    chunk_of_group = _merge_groups(group, nz, hard)
    return stage, band, np.where(group >= 0, chunk_of_group[np.maximum(group, 0)], -1), border


def _cost(sizes: np.ndarray, nb: int) -> int:
    """StageLayout.cost of blocks of these sizes and nb border unknowns; no more than that of blocks merged from
    them ((a + b)^3 >= a^3 + b^3)."""
    p = sizes.astype(np.int64)  # exact: every term an integer (as in floats, below 2^53)
    return int(np.add.reduce(p * p * (p + nb))) + nb**3


def _cost_bound(placement: tuple[np.ndarray, int, np.ndarray, int] | str, padded: bool) -> int:
    """No more than the cost of the layout finished from this placement (_layout): unpadded, the cost of its
    blocks so far (merging blocks only adds to it); padded (the last block may move to the border) or without a
    placement, 0."""
    if padded or isinstance(placement, str):
        return 0
    _, _, chunk, nb = placement
    return _cost(np.bincount(chunk[chunk >= 0]), nb)


def _layout(placement: tuple[np.ndarray, int, np.ndarray, int] | str, rows: np.ndarray, cols: np.ndarray,
            padded: bool, hard: np.ndarray) -> StageLayout | str:
    """The layout of one placement of the rows (_placement), its structurally singular blocks merged; hard: over
    the unknowns, the rows without a diagonal of their own."""
    if isinstance(placement, str):
        return placement
    stage, band, chunk, _ = placement
    chunk = _merge_singular(chunk, rows, cols, hard)
    if isinstance(chunk, str):
        return chunk
    n_chunks = int(chunk.max(initial=-1)) + 1
    if n_chunks < 3:
        return f"rows couple stages {band} apart: fewer than three stage blocks"
    layout = StageLayout(chunk, n_chunks, band)
    # a last block merged from several stages (keys on the end state) sets the padded size of every block: in
    # the border instead (eliminated last, by its Schur complement) it may cost less. Unpadded (C) it never does:
    # the border's s^3 replaces the block's, and every block's product with it is added
    if padded:
        moved = StageLayout(np.where(chunk == n_chunks - 1, -1, chunk), n_chunks - 1, band)
        if len(moved.border) <= _END_TO_BORDER and moved.cost(padded) < layout.cost(padded):
            layout = moved
    if layout.size * 4 > len(stage):
        return f"a stage block holds {layout.size} of {len(stage)} unknowns"
    return layout


def _merge_groups(group: np.ndarray, nz: int, hard: np.ndarray) -> np.ndarray:
    """Chunk of each group of `band` stages: consecutive groups merge until the unknowns so far hold at least
    as many variables as rows (the leading block of a KKT matrix with more rows than variables is singular:
    a start state fixed by its bounds leaves the first step's rows with too few variables), and the same
    backwards from the last group (keys on the end state). Only the `hard` rows (m,) count."""
    n_groups = int(group.max(initial=-1)) + 1
    var_group, row_group = group[:nz], group[nz:]
    variables = np.bincount(var_group[var_group >= 0], minlength=n_groups)
    surplus = variables - np.bincount(row_group[(row_group >= 0) & hard], minlength=n_groups)
    filled = (variables + np.bincount(row_group[row_group >= 0], minlength=n_groups)) > 0
    closes = (surplus.cumsum() >= 0) & filled  # a chunk ends after group g
    chunk_of_group = closes.cumsum() - closes
    chunk_of_group = np.minimum(chunk_of_group, chunk_of_group[-1])
    # the same from the end: the last block (the end keys on a state) must not have more rows than variables
    tail = 0
    for g in range(n_groups - 1, 0, -1):
        tail += int(surplus[g])
        if tail >= 0 and chunk_of_group[g] != chunk_of_group[g - 1]:
            break
        chunk_of_group[chunk_of_group == chunk_of_group[g]] = chunk_of_group[g - 1]
    # numbered 0, 1, ... (chunk_of_group does not decrease)
    return np.concatenate([[0], (chunk_of_group[1:] != chunk_of_group[:-1]).cumsum()])


def _pairs_within(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (a, b) of positions in the sorted non-negative integers key with key[a] == key[b]."""
    if not len(key):  # no eliminated row (the mechanism shots have no inequality rows)
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    runs = np.bincount(key)
    count = runs.take(key)  # the length of each position's run of equal keys
    first = (runs.cumsum() - runs).take(key)  # where that run starts
    a = np.arange(len(key)).repeat(count)
    # b runs from first[a] on within each a's pairs: their count so far, less where a's pairs start, plus first[a]
    start = count.cumsum()
    start -= count
    start -= first
    b = np.arange(len(a))
    b -= start.repeat(count)
    return a, b


def _singular_chunks(chunk: np.ndarray, rows: np.ndarray, cols: np.ndarray, hard: np.ndarray) -> np.ndarray:
    """The chunks whose pivot block D_k = A_k - C_{k-1}^T D_{k-1}^{-1} C_{k-1} is structurally singular, the
    variables' diagonal (W + dw I) taken as nonzero: those with a row that has no diagonal of its own (`hard`,
    over the unknowns), no coupling to the previous chunk (which would give it one in the Schur complement) and
    no variable of its chunk to itself in a matching of such rows to the variables they touch (by symmetry,
    such a matching is the rows' half of a perfect matching of D_k's pattern, the variables' diagonal the
    rest). One matching over all chunks: it decomposes by chunk. (rows, cols): coupled pairs of K, every row's
    entries among them as (row, variable) only (stage_layout's)."""
    cr, cc = chunk.take(rows), chunk.take(cols)
    inner = (cr >= 0) & (cc >= 0)
    lonely = hard & (chunk >= 0)
    lonely[rows[inner & (cr == cc + 1)]] = False
    if not lonely.any():
        return np.zeros(0, np.int64)
    entry = inner & (cr == cc) & lonely.take(rows)
    pattern = _pattern(rows[entry], cols[entry], len(chunk))
    match = maximum_bipartite_matching(pattern, perm_type="column")
    return np.unique(chunk[lonely & (match < 0)])


def _pattern(rows: np.ndarray, cols: np.ndarray, n: int) -> sp.csr_matrix:
    """The n x n CSR pattern (ones) with entries (rows[i], cols[i]), repeated pairs kept (the matching above sees
    only which entries there are), without scipy's conversion from coordinates."""
    indptr = np.concatenate([[0], np.bincount(rows, minlength=n).cumsum()])
    return sp.csr_matrix((np.ones(len(rows)), cols[rows.argsort(kind="stable")], indptr), shape=(n, n))


def _merge_singular(chunk: np.ndarray, rows: np.ndarray, cols: np.ndarray, hard: np.ndarray) -> np.ndarray | str:
    """chunk (unknowns,) with each structurally singular pivot block (_singular_chunks) merged with the next one
    (the last with the one before), until none is: a leading block whose rows touch fewer of its variables
    than there are rows (the four-bar's rest rows p_N = Dh^T mu and its loop rows at the last step but one,
    five rows on that step's three coordinates and one control) cannot be pivoted on, however the count of
    rows and variables so far (_merge_groups) stands. The reason there is no layout when a merged block would
    hold more than twice the unknowns of the largest before (rows placed ahead of their variables at every stage
    leave every leading block singular: the merges would cascade)."""
    largest = 2 * int(np.maximum.reduce(np.bincount(chunk[chunk >= 0]), initial=0))
    while True:
        n_chunks = int(chunk.max(initial=-1)) + 1
        bad = _singular_chunks(chunk, rows, cols, hard)
        if len(bad) == 0 or n_chunks < 2:
            return chunk
        opens = np.ones(n_chunks, bool)  # whether chunk k starts a merged chunk
        opens[np.minimum(bad + 1, n_chunks - 1)] = False
        opens[0] = True
        new = np.cumsum(opens) - 1
        chunk = np.where(chunk >= 0, new[np.maximum(chunk, 0)], -1)
        if np.maximum.reduce(np.bincount(chunk[chunk >= 0])) > largest:
            return f"stage block {int(bad[0])}'s pivot block is structurally singular"


def kkt_residual(W: sp.spmatrix, J: sp.spmatrix, dw: float, dc: float | np.ndarray, sol: np.ndarray,
                 rhs: np.ndarray) -> np.ndarray:
    """rhs - K sol for K = [[W + dw I, J^T], [J, -diag(dc)]] (dc a number or one per row): the refinement
    residual of every factorisation of the interior point (the sparse LU's, StageFactor's, CondensedFactor's: the
    whole K's; PlannedFactor's is its C twin, symplex_kkt_residual)."""
    nz = W.shape[0]
    dz, y = sol[:nz], sol[nz:]
    return rhs - np.concatenate([W @ dz + dw * dz + J.T @ y, J @ dz - dc * y])


def _parity_ok(factor, m: int) -> bool:
    """The interior point's test of every factorisation here, the same as for the sparse LU: the number of
    negative eigenvalues of K has the parity of m (the exact count, negatives() == m, is IPOPT's test; on the
    parking shot it forced larger shifts and tripled the iterations, so all factorisations keep the LU's test and
    give the same steps)."""
    return factor.parity == m % 2


class StageFactor:
    """Block LDL^T of K = [[W + dw I, J^T], [J, -diag(dc)]] (dc a number or one per row) in a StageLayout:
    solve(rhs), residual(sol, rhs), parity (of the number of negative eigenvalues of K) and negatives() (their
    exact number)."""

    def __init__(self, layout: StageLayout, W: sp.spmatrix, J: sp.spmatrix, dw: float, dc: float | np.ndarray):
        L = layout
        nz, m = W.shape[0], J.shape[0]
        Wc, Jc = sp.coo_matrix(W), sp.coo_matrix(J)
        idx = np.arange(nz + m)
        diag = np.concatenate([np.full(nz, dw), -np.broadcast_to(np.asarray(dc, float), (m,))])
        rows = np.concatenate([Wc.row, Jc.row + nz, Jc.col, idx])
        cols = np.concatenate([Wc.col, Jc.col, Jc.row + nz, idx])
        vals = np.concatenate([Wc.data, Jc.data, Jc.data, diag])
        self.L, self.shape = L, (nz + m, nz + m)
        p, nc, nb = L.size, L.n_chunks, len(L.border)
        cr, cc = L.chunk[rows], L.chunk[cols]
        inner = (cr >= 0) & (cc >= 0)
        far = inner & (np.abs(cr - cc) > 1) & (vals != 0)
        if np.any(far):
            raise StageBreakdown("an entry couples stage blocks more than one apart")
        lr, lc = L.local[rows], L.local[cols]
        same = inner & (cr == cc)
        at = np.where(inner, (cr * p + lr) * p + lc, 0)
        A = np.bincount(at, weights=np.where(same, vals, 0.0), minlength=nc * p * p)
        A = A.reshape(nc, p, p)
        pad = np.arange(p)[None, :] >= (p - L.pad)[:, None]
        A[:, np.arange(p), np.arange(p)] += pad  # unused slots: 1 on the diagonal
        up = inner & (cc == cr + 1)
        C = np.bincount(at, weights=np.where(up, vals, 0.0), minlength=nc * p * p)
        self.C = C.reshape(nc, p, p)[:-1]
        # border: E (chunks, p, nb) couples the chunks to the border unknowns, F (nb, nb) among them
        edge = (cr >= 0) & (cc < 0)
        E = np.bincount(((cr * p + lr) * max(nb, 1) + lc)[edge], weights=vals[edge], minlength=nc * p * max(nb, 1))
        self.E = E.reshape(nc, p, max(nb, 1))[:, :, :nb]
        bb = (cr < 0) & (cc < 0)
        self.F = np.bincount((lr * max(nb, 1) + lc)[bb], weights=vals[bb], minlength=nb * nb).reshape(nb, nb)
        self.A = A
        self._factor()

    def _factor(self):
        """Factorise by block cyclic reduction: the even blocks of the current level are eliminated all at
        once (batched), leaving a block-tridiagonal Schur complement on the odd blocks, the next level."""
        self.parity, self.pivots, self.levels = 0, [], []
        A, C = self.A, self.C
        while True:
            last = len(A) == 1
            Ainv = self._invert(A[0::2] if not last else A)
            if last:
                self.levels.append((Ainv, None))
                break
            left = C[0::2]  # K[2i, 2i+1]: even 2i to odd 2i+1
            right = C[1::2]  # K[2i+1, 2i+2]: odd 2i+1 to even 2i+2
            n_odd = len(A) // 2
            odd = A[1::2] - np.swapaxes(left, 1, 2) @ Ainv[:n_odd] @ left
            odd[:len(right)] -= right @ Ainv[1:len(right) + 1] @ np.swapaxes(right, 1, 2)
            couple = -right[:n_odd - 1] @ Ainv[1:n_odd] @ left[1:n_odd]
            self.levels.append((Ainv, (left, right)))
            A, C = odd, couple
        if self.F.size:
            X = self._solve_inner(self.E)
            S = self.F - np.einsum("kpi,kpj->ij", self.E, X)
            # equilibrated, S -> D S D with D = diag(1/sqrt(max_j |S_ij|)): T = D Q has T^T S T = diag(w)
            scale = 1.0 / np.sqrt(np.maximum(np.abs(S).max(axis=1), 1e-300))
            w, Q = np.linalg.eigh(0.5 * scale[:, None] * (S + S.T) * scale)
            if not np.all(np.isfinite(w)) or np.abs(w).min() <= _PIVOT_RCOND * np.abs(w).max():
                raise StageBreakdown("the coupling unknowns' Schur complement is (nearly) singular")
            self.parity = (self.parity + int(np.sum(w < 0))) % 2
            self.S, self.X = (w, scale[:, None] * Q), X

    def _invert(self, M: np.ndarray) -> np.ndarray:
        """Inverses of the symmetric blocks M (k, p, p) by batched LU of the equilibrated S M S (S = diag(1 /
        sqrt(max_j |M_ij|))), adding the parity of their negative eigenvalues (the sign of det) to `parity`."""
        self.pivots.append(M)
        scale = 1.0 / np.sqrt(np.maximum(np.abs(M).max(axis=2), 1e-300))
        Ms = scale[:, :, None] * M * scale[:, None, :]
        sign, logdet = np.linalg.slogdet(Ms)
        if not np.all(np.isfinite(logdet)):
            raise StageBreakdown("a stage pivot block is singular")
        self.parity = (self.parity + int(np.sum(sign < 0))) % 2
        return scale[:, :, None] * np.linalg.inv(Ms) * scale[:, None, :]

    def negatives(self) -> int:
        """The exact number of negative eigenvalues of K (Sylvester: those of the pivot blocks and the border's
        Schur complement; eigenvalues of every pivot block, so dearer than the factorisation's parity)."""
        count = sum(int(np.sum(np.linalg.eigvalsh(M) < 0)) for M in self.pivots)
        return count + (int(np.sum(self.S[0] < 0)) if self.F.size else 0)

    def _solve_inner(self, b: np.ndarray) -> np.ndarray:
        """T^{-1} b for b (chunks, p, r): reduce the right-hand side level by level, then substitute back."""
        rhs = [np.asarray(b, float)]
        for Ainv, couplings in self.levels[:-1]:
            left, right = couplings
            even = Ainv @ rhs[-1][0::2]
            odd = rhs[-1][1::2] - np.swapaxes(left, 1, 2) @ even[:len(left)]
            odd[:len(right)] -= right @ even[1:len(right) + 1]
            rhs.append(odd)
        x = self.levels[-1][0] @ rhs[-1]
        for (Ainv, (left, right)), r in zip(self.levels[-2::-1], rhs[-2::-1]):
            full = np.empty_like(r)
            full[1::2] = x
            even = r[0::2].copy()
            even[:len(left)] -= left @ x
            even[1:len(right) + 1] -= np.swapaxes(right, 1, 2) @ x[:len(right)]
            full[0::2] = Ainv @ even
            x = full
        return x

    def _split(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        L = self.L
        blocks = np.zeros((L.n_chunks, L.size))
        inner = L.chunk >= 0
        blocks[L.chunk[inner], L.local[inner]] = v[inner]
        return blocks, v[L.border]

    def _join(self, blocks: np.ndarray, border: np.ndarray) -> np.ndarray:
        L = self.L
        out = np.empty(L.n_unknowns)
        inner = L.chunk >= 0
        out[inner] = blocks[L.chunk[inner], L.local[inner]]
        out[L.border] = border
        return out

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        b, bb = self._split(rhs)
        u = self._solve_inner(b[:, :, None])[:, :, 0]
        if not self.F.size:
            return self._join(u, bb)
        w, T = self.S
        xb = T @ ((T.T @ (bb - np.einsum("kpi,kp->i", self.E, u))) / w)
        return self._join(u - np.einsum("kpi,i->kp", self.X, xb), xb)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        b, bb = self._split(v)
        y = np.einsum("kij,kj->ki", self.A, b)
        y[:-1] += np.einsum("kij,kj->ki", self.C, b[1:])
        y[1:] += np.einsum("kji,kj->ki", self.C, b[:-1])
        y += np.einsum("kpi,i->kp", self.E, bb)
        yb = self.F @ bb + np.einsum("kpi,kp->i", self.E, b)
        return self._join(y, yb)

    def residual(self, sol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return rhs - self.matvec(sol)

    inertia_ok = _parity_ok


def _work_arrays(L: StageLayout) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
    """The C kernel's arrays for a factorisation in layout L: blk, g, g_cols, g_count, c_place, x, piv
    (stage_kkt.h) and the parity output, and their addresses."""
    n_inner, i64 = len(L.order), np.int64
    arrays = (np.empty(L.n_blk), np.empty(L.n_blk), np.empty(n_inner, i64), np.empty(L.n_chunks, i64),
              np.empty(n_inner, i64), np.empty(n_inner * L.nb), np.empty(n_inner + L.nb, i64), np.zeros(1, i64))
    return arrays, pointers(*arrays)


def _coupling(L: StageLayout, written: np.ndarray) -> tuple[np.ndarray, ...]:
    """The entries of the blocks C_k in layout L among the slots `written` (the fill's, ascending without repeats):
    (coupling, coupling_off) of symplex_stage_factor (stage_kkt.h), each entry's (position in its C_k, row, rank of
    its column among C_k's columns with an entry, column), row by row, and where each C_k's start; and c_slot of
    symplex_stage_fill, the entries' slots."""
    i64 = np.int64
    slots = written[(written >= L.c_off[0]) & (written < _c_end(L))]
    chunk = np.searchsorted(L.c_off, slots, side="right") - 1
    position = slots - L.c_off.take(chunk)
    width = L.sizes.take(chunk + 1)
    row, col = position // width, position % width
    widest = int(L.sizes.max())
    columns, place = np.unique(chunk * widest + col, return_inverse=True)  # (chunk, column) of each entry
    of_chunk = columns // widest
    count = np.bincount(of_chunk, minlength=L.n_chunks)
    rank = place.reshape(-1) - (count.cumsum() - count).take(chunk)  # less each chunk's first column's number
    coupling = np.ascontiguousarray(np.stack([position, row, rank, col], axis=1), i64)
    return coupling, np.searchsorted(chunk, np.arange(L.n_chunks)).astype(i64), slots


def _c_end(L: StageLayout) -> int:
    """Where the blocks C_k of layout L end in the C kernel's storage (they start at c_off[0])."""
    return int(L.c_off[-1] + L.sizes[-2] * L.sizes[-1])


def _native_factor(L: StageLayout, work: tuple[int, ...], parity: np.ndarray) -> int:
    """Factorise the blocks filled in the work arrays (addresses of blk, g, g_cols, g_count, c_place, coupling,
    coupling_off, x, piv: symplex_stage_factor's) in C; the parity of K's negative eigenvalues, through the one
    int64 of `parity`."""
    failed = _native.factor(L.kernel_args(), _PIVOT_RCOND, work, address(parity))
    if failed >= 0:
        raise StageBreakdown(_BREAKDOWN[_native.BORDER if failed == L.n_chunks else _native.PIVOT])
    return int(parity[0])


# why the C kernel could not factorise K (stage_kkt_binding's outcomes of symplex_stage_newton)
_BREAKDOWN = {
    _native.FAR: "an entry couples stage blocks more than one apart, or a slack to another unknown",
    _native.SLACK: "a slack's diagonal is not positive",
    _native.PIVOT: "a stage pivot block is singular",
    _native.BORDER: "the coupling unknowns' Schur complement is (nearly) singular",
}


class CondensedFactor:
    """K = [[W + dw I, J^T], [J, -dc I]] with its slack unknowns eliminated before the stage factorisation.

    The last ns of the nz variables are slacks: W is diagonal over them (D = W_ss + dw > 0, the barrier's
    Sigma) and slack j enters only row rows[j], with coefficient coef[j]. Eliminating them (positive pivots: no
    change to the negative eigenvalues, Sylvester) leaves [[W_xx + dw I, J_x^T], [J_x, -diag(dc + e)]] with
    e = coef^2 / D on the slacks' rows, factorised by StageFactor in a layout of the variables x and the rows only:
    on the car shots a stage block of 17 unknowns instead of 29. The solve recovers ds = (r_s - coef y_rows) / D;
    the residual is the full K's, so refinement checks the whole system."""

    def __init__(self, layout: StageLayout, W: sp.spmatrix, J: sp.spmatrix, dw: float, dc: float,
                 rows: np.ndarray, coef: np.ndarray):
        W, J = sp.csc_matrix(W), sp.csr_matrix(J)
        nz, ns = W.shape[0], len(rows)
        self.nx, self.rows, self.coef, self.W, self.J, self.dw, self.dc = nz - ns, rows, coef, W, J, dw, dc
        self.D = W.diagonal()[self.nx:] + dw
        if not np.all(self.D > 0):
            raise StageBreakdown("a slack's diagonal is not positive")
        dcs = np.full(J.shape[0], dc)
        dcs[rows] += coef * coef / self.D
        self.inner = StageFactor(layout, _leading(W, self.nx, self.nx), _leading(J, J.shape[0], self.nx), dw, dcs)
        self.parity = self.inner.parity

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        nx, nz = self.nx, self.W.shape[0]
        r_s, r_y = rhs[nx:nz], rhs[nz:].copy()
        r_y[self.rows] -= self.coef * r_s / self.D
        inner = self.inner.solve(np.concatenate([rhs[:nx], r_y]))
        y = inner[nx:]
        return np.concatenate([inner[:nx], (r_s - self.coef * y[self.rows]) / self.D, y])

    def residual(self, sol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return kkt_residual(self.W, self.J, self.dw, self.dc, sol, rhs)

    inertia_ok = _parity_ok


_LEADING: dict[tuple, tuple] = {}  # (ids of the index arrays, rows, cols) -> (them, entries, indices, indptr)


def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns a's memory (scipy's matrices hold views of the index arrays they are built on)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _leading(M: sp.spmatrix, rows: int, cols: int) -> sp.spmatrix:
    """M[:rows, :cols] (CSR or CSC), the entries' positions worked out once for M's index arrays: the
    interior point builds every iteration's matrices on the same read-only arrays (nlp._Reduced)."""
    if M.indices.flags.writeable:  # not a shared pattern: no use keeping it
        return M[:rows, :cols]
    pattern = (_root(M.indices), _root(M.indptr))
    key = (id(pattern[0]), id(pattern[1]), rows, cols)
    hit = _LEADING.get(key)
    if hit is None or hit[0][0] is not pattern[0] or hit[0][1] is not pattern[1]:
        marked = type(M)((np.arange(1.0, M.nnz + 1), M.indices, M.indptr), shape=M.shape)[:rows, :cols]
        if len(_LEADING) > 8:
            _LEADING.clear()
        hit = _LEADING[key] = (pattern, marked.data.astype(np.int64) - 1, marked.indices, marked.indptr)
    _, entries, indices, indptr = hit
    return type(M)((M.data[entries], indices, indptr), shape=(rows, cols))


def _kept_layout(full: StageLayout, nx: int, kept: np.ndarray) -> StageLayout:
    """The layout of the nx variables and the rows `kept` of `full` (variables then rows): each unknown stays in its
    block, the blocks left empty dropped; `full` itself when it keeps every row and has no empty block."""
    if len(kept) == full.n_unknowns - nx and full.sizes.all():
        return full
    chunk = np.concatenate([full.chunk[:nx], full.chunk[nx + kept]])
    renumber = np.cumsum(np.bincount(chunk[chunk >= 0], minlength=full.n_chunks) > 0) - 1  # no empty block
    chunk = np.where(chunk >= 0, renumber[np.maximum(chunk, 0)], -1)
    return StageLayout(chunk, int(renumber[-1]) + 1, full.band)


_BORDER_KEY = 1 << 40  # the border's block number in _slots: farther from every block than any two blocks are
_USES_COLUMN = np.array([0, 0, 1, 1, 0, 1])  # whether a kind of _slots' pair adds the column's place in its block


def _slots(L: StageLayout, *pairs: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """Where K[i, j] goes in the C kernel's blocks of layout L (stage_kkt.h), for each (i, j) of pairs, vectorised:
    the slot, or -1 (the lower twin of a stored coupling between blocks), or -2 (blocks more than one apart).

    The kind of pair comes from the distance d of the blocks (the border far from all): 0 d <= -2 (far; for a
    border i, an inner j: a lower twin), 1 d = -1 (lower twin), 2 d = 0 (same block, or border and border), 3
    d = 1 (next block), 4 d >= 2 (far), 5 (inner i, border j); each unknown's row of slots by kind (worked out
    once for all the pairs), plus the column's place where the kind has one."""
    inner = L.chunk >= 0
    c, local = np.maximum(L.chunk, 0), L.local
    table = np.empty((L.n_unknowns, 6), np.int64)
    table[:, 0] = np.where(inner, -2, -1)
    table[:, 1] = -1
    table[:, 2] = np.where(inner, L.a_off[c] + local * L.sizes[c], L.f_off + local * L.nb)
    table[:, 3] = np.append(L.c_off, 0)[c] + local * np.append(L.sizes[1:], 0)[c]
    table[:, 4] = -2
    table[:, 5] = L.e_off[c] + local * L.nb
    table, key = table.ravel(), np.where(inner, L.chunk, _BORDER_KEY)
    # all the pairs at once (a shot's are a few thousand: each numpy call's overhead counts), then split; four
    # arrays of the pairs' length in all, each written over once its values are used (chain_30 has 230000 pairs:
    # each fresh temporary is megabytes of pages the system maps and zeroes). The gathers into a given array are
    # mode "clip" only so that numpy writes them in place (its default mode copies the output first): every index
    # is in range by construction
    i, j = (np.concatenate(side) for side in zip(*pairs))
    kind = key.take(j)
    slots = key.take(i)
    kind -= slots  # the blocks' distance d
    far_border = kind >= _BORDER_KEY // 2
    np.minimum(np.maximum(kind, -2, out=kind), 2, out=kind)  # np.clip, without its wrappers
    kind += 2
    kind += far_border
    i *= 6
    i += kind
    table.take(i, out=slots, mode="clip")
    column = local.take(j, out=i, mode="clip")
    column *= _USES_COLUMN.take(kind, out=j, mode="clip")
    slots += column
    ends = list(accumulate(len(first) for first, _ in pairs))
    return [slots[start:end] for start, end in zip([0] + ends, ends)]


def entry_rows(indptr: np.ndarray) -> np.ndarray:
    """The row of each entry of a CSR pattern (the column of a CSC one) from its indptr."""
    return np.arange(len(indptr) - 1).repeat(indptr[1:] - indptr[:-1])


class StagePlan:
    """The interior point's stage path in C: K = [[W + dw I, J^T], [J, -dc I]] over z = (x, slacks) and the rows,
    with the slacks and then the inequality rows that touch one stage (or two adjacent ones) eliminated first.

    After the slacks (CondensedFactor), an inequality row i has the diagonal -d_i = -(dc + coef_i^2 / D_i) < 0 of
    its own; eliminating it adds J_i^T J_i / d_i to W_xx (within its stage: no new coupling) and one negative
    eigenvalue (Sylvester), so the blocks hold the variables and the equality rows only: on the car shots 10
    unknowns a stage instead of 16 (the body-sphere clearances are six of a stage's rows). The solve recovers
    y_i = (J_i dx - r_i) / d_i and the slacks as CondensedFactor does; the refinement residual is the whole K's.

    Where each entry of W (CSC over z) and J (CSR over z) goes in the kernel's blocks is worked out once per
    sparsity pattern (the interior point's matrices share their index arrays from one iteration to the next),
    so each factorisation is one fill call (native/stage_kkt.c, symplex_stage_fill) from W.data and J.data, the
    factorisation and a few vector operations: no scipy.sparse matrix is built.

    layout: the StageLayout of the variables x and all of J's rows (nlp._Reduced.kkt_layout(slacks=False)); rows,
    coef: the row of each slack and its coefficient there."""

    def __init__(self, layout: StageLayout, rows: np.ndarray, coef: np.ndarray):
        self.full, self.rows, self.coef = layout, np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(coef, float)
        self._pattern: tuple | None = None

    def describe(self) -> str:
        L = self.layout if self._pattern is not None else self.full
        return (f"{L.describe()} (slacks eliminated first"
                f"{f', and {len(self.elim)} inequality rows' if self._pattern is not None else ''})")

    def factor(self, W: sp.csc_matrix, J: sp.csr_matrix, dw: float, dc: float) -> "PlannedFactor":
        self._fit(W, J)
        return PlannedFactor(self, W, J, dw, dc)

    def _fit(self, W: sp.csc_matrix, J: sp.csr_matrix) -> None:
        """Plan again when W's or J's pattern is not the last one's."""
        last = self._pattern
        if (last is not None and W.indices is last[0] and W.indptr is last[1] and J.indices is last[2]
                and J.indptr is last[3]):  # the interior point's matrices: the same index arrays each iteration
            return
        pattern = (W.indices, W.indptr, J.indices, J.indptr)
        if last is None or not all(a is b or np.array_equal(a, b) for a, b in zip(pattern, last)):
            self._build(W, J)
        self._pattern = pattern

    def _build(self, W: sp.csc_matrix, J: sp.csr_matrix) -> None:
        full, rows = self.full, self.rows
        m, nz = J.shape[0], W.shape[0]
        nx = full.n_unknowns - m
        if nz != nx + len(rows) or W.shape != (nz, nz) or J.shape[1] != nz:
            raise ValueError(f"stage KKT: W {W.shape} and J {J.shape} do not fit a layout of {full.n_unknowns} "
                             f"unknowns and {len(rows)} slacks")
        j_row = entry_rows(J.indptr)
        j_col = J.indices.astype(np.int64)
        in_x = j_col < nx
        slack_of_row = np.full(m, -1)
        slack_of_row[rows] = np.arange(len(rows))
        eliminated = np.zeros(m, bool)
        if len(rows):  # an inequality row is eliminated when its variables lie in one block or two adjacent ones
            x_chunk = np.concatenate([full.chunk[:nx], np.full(len(rows), -1)])
            lo, hi = _row_span(_PerRow(J.indptr), J.indices, x_chunk)
            eliminated = (slack_of_row >= 0) & (hi - lo <= 1)
        kept = (~eliminated).nonzero()[0]
        self.elim = eliminated.nonzero()[0]
        self.elim_slack = slack_of_row[self.elim]
        self.kept, self.kept_slack = kept, slack_of_row[kept]
        L = self.layout = _kept_layout(full, nx, kept)
        new_row = np.full(m, -1)
        new_row[kept] = nx + np.arange(len(kept))
        which = np.full(m, -1)
        which[self.elim] = np.arange(len(self.elim))
        # W's entries over x (both triangles given: the lower twins of couplings are dropped)
        w_col = entry_rows(W.indptr)  # CSC: the column
        w_row = W.indices.astype(np.int64)
        # W over the slacks is diagonal (the barrier's Sigma): where each slack's diagonal entry is, and the
        # entries that must stay zero
        on_slack = (w_row >= nx) | (w_col >= nx)
        diagonal = np.full(nz, -1)
        on_diagonal = (w_row == w_col).nonzero()[0]
        diagonal[w_col.take(on_diagonal)] = on_diagonal
        if (diagonal[nx:] < 0).any():
            raise ValueError("stage KKT: W's pattern lacks a slack's diagonal entry")
        self.slack_diag = diagonal[nx:].astype(np.int64)
        self.w_far = (on_slack & (w_row != w_col)).nonzero()[0]
        wx = (~on_slack).nonzero()[0]
        # J's entries of the kept rows, as K[row, x] and K[x, row]
        j_kept, j_elim = new_row.take(j_row), which.take(j_row)  # the entry's row among the kept, the eliminated
        jk = (in_x & (j_kept >= 0)).nonzero()[0]
        r_k, c_k = j_kept.take(jk), j_col.take(jk)
        # the eliminated rows' entries over x (sorted by row: J is CSR) and their products J_ia J_ib, same row
        je = (in_x & (j_elim >= 0)).nonzero()[0]
        self.e_src, self.e_col, self.e_row = je, j_col.take(je), j_elim.take(je)
        a, b = _pairs_within(self.e_row)
        # diagonal shifts: dw on x, -dc (and a kept inequality row's slack term) on the kept rows
        idx = np.arange(L.n_unknowns)
        w_slot, lower, upper, p_slot, self.d_slot = _slots(
            L, (w_row.take(wx), w_col.take(wx)), (r_k, c_k), (c_k, r_k), (self.e_col.take(a), self.e_col.take(b)),
            (idx, idx))
        self.w_far = np.concatenate([self.w_far, wx[w_slot == -2]])  # entries that must be zero
        stored = w_slot >= 0
        self.w_slot, self.w_src = w_slot[stored], wx[stored]
        self.j_far = jk[lower == -2]
        stored, stored_upper = lower >= 0, upper >= 0
        self.j_slot = np.concatenate([lower[stored], upper[stored_upper]])
        self.j_src = np.concatenate([jk[stored], jk[stored_upper]])
        if (p_slot == -2).any():
            raise StageBreakdown("an eliminated inequality row couples stage blocks more than one apart")
        stored = (p_slot >= 0).nonzero()[0]
        a, b = a.take(stored), b.take(stored)
        self.p_slot, self.p_a, self.p_b, self.p_row = p_slot.take(stored), je.take(a), je.take(b), self.e_row.take(a)
        self.coupling, self.coupling_off, self.c_slot = _coupling(
            L, np.unique(np.concatenate([self.w_slot, self.j_slot, self.p_slot, self.d_slot])))
        self.nx, self.m = nx, m
        self.far = len(self.w_far) > 0 or len(self.j_far) > 0
        self.slack_d, self.weight = np.empty(len(rows)), np.empty(len(self.elim))
        self.where = np.empty(L.n_unknowns, np.int64)  # position of each unknown in the kernel's right-hand side
        self.where[L.order] = np.arange(len(L.order))
        self.where[L.border] = len(L.order) + np.arange(L.nb)
        self.v, self.t, self.z_work = np.empty(L.n_unknowns), np.empty(len(self.elim)), np.empty(nz)
        self.pattern = (W.indptr.astype(np.int64), w_row, J.indptr.astype(np.int64), j_col)  # the indices' int64 copies
        i64 = [np.ascontiguousarray(a, np.int64) for a in (self.w_slot, self.w_src, self.j_slot, self.j_src,
               self.p_slot, self.p_a, self.p_b, self.p_row, self.slack_diag, self.elim_slack, self.kept_slack,
               self.d_slot, self.rows, self.elim, self.e_src, self.e_col, self.e_row, self.kept)]
        (self.w_slot, self.w_src, self.j_slot, self.j_src, self.p_slot, self.p_a, self.p_b, self.p_row,
         self.slack_diag, self.elim_slack, self.kept_slack, self.d_slot, self.rows, self.elim, self.e_src, self.e_col,
         self.e_row, self.kept) = i64
        address = self._plan_kernel_step(L)

        def at(*names: str) -> tuple[int, ...]:
            return tuple(address[name] for name in names)

        self.fill_args = (int(L.c_off[0]), _c_end(L), len(self.c_slot), address["c_slot"], len(self.w_slot),
                          *at("w_slot", "w_src"), len(self.j_slot), *at("j_slot", "j_src"), len(self.p_slot),
                          *at("p_slot", "p_a", "p_b", "p_row"), nx, len(rows),
                          *at("slack_diag", "coef", "slack_d"), len(self.elim), *at("elim_slack", "weight"),
                          len(self.kept), *at("kept_slack", "d_slot"))
        self.solve_args = (nx, len(rows), m, *at("slack_row", "coef", "slack_d"), len(self.elim),
                           *at("elim_row", "weight"), len(self.e_src), *at("e_src", "e_col", "e_row"))
        self.row_args = (len(self.kept), *at("kept_row", "where"))
        self.scratch_args = at("v", "t")
        self.pattern_addresses = at("w_ptr", "w_idx", "j_ptr", "j_idx")
        self.z_work_address = address["z_work"]

    def _plan_kernel_step(self, L: StageLayout) -> dict[str, int]:
        """The symplex_stage_plan of newton_step (stage_kkt_binding.Plan) on this plan's arrays, its address, and
        the arrays it writes beyond the layout's scratch: the refinement's work and the parity. The addresses of
        the plan's arrays by field name (each looked up once)."""
        _, work = L.scratch()
        self.w_far, self.j_far = (np.ascontiguousarray(a, np.int64) for a in (self.w_far, self.j_far))
        self.refine, self.parity_out = np.empty(2 * (len(self.z_work) + self.m)), np.zeros(1, np.int64)
        self.curvature_out = np.zeros(2)
        w_ptr, w_idx, j_ptr, j_idx = self.pattern
        arrays = dict(
            size=L.sizes, a_off=L.a_off, c_off=L.c_off, e_off=L.e_off, r_off=L.r_off, w_slot=self.w_slot,
            w_src=self.w_src, j_slot=self.j_slot, j_src=self.j_src, p_slot=self.p_slot, p_a=self.p_a, p_b=self.p_b,
            p_row=self.p_row, slack_diag=self.slack_diag, coef=self.coef, slack_d=self.slack_d,
            elim_slack=self.elim_slack, weight=self.weight, kept_slack=self.kept_slack, d_slot=self.d_slot,
            w_far=self.w_far, j_far=self.j_far, slack_row=self.rows, elim_row=self.elim, e_src=self.e_src,
            e_col=self.e_col, e_row=self.e_row, kept_row=self.kept, where=self.where, v=self.v, t=self.t,
            w_ptr=w_ptr, w_idx=w_idx, j_ptr=j_ptr, j_idx=j_idx, z_work=self.z_work, refine=self.refine,
            coupling=self.coupling, coupling_off=self.coupling_off, c_slot=self.c_slot)
        address = dict(zip(arrays, pointers(*arrays.values())))
        blk, g, g_cols, g_count, c_place, x, piv, _ = work
        self.work = (blk, g, g_cols, g_count, c_place, address["coupling"], address["coupling_off"], x, piv)
        self.kernel_plan = _native.Plan(
            n_chunks=L.n_chunks, nb=L.nb, f_off=L.f_off, n_blk=L.n_blk, c_begin=int(L.c_off[0]), c_end=_c_end(L),
            n_c=len(self.c_slot), s_rcond=_PIVOT_RCOND, blk=blk, g=g, g_cols=g_cols, g_count=g_count, c_place=c_place,
            x=x, piv=piv, n_w=len(self.w_slot),
            n_j=len(self.j_slot), n_p=len(self.p_slot), nx=self.nx, ns=len(self.rows), m=self.m,
            n_elim=len(self.elim), n_kept=len(self.kept), n_w_far=len(self.w_far), n_j_far=len(self.j_far),
            n_e=len(self.e_src), parity_m=self.m % 2, **address)
        self.kernel_plan_address = ctypes.addressof(self.kernel_plan)
        self.parity_address, self.curvature_address = pointers(self.parity_out, self.curvature_out)
        return address

    def newton_step(self, W: sp.csc_matrix, J: sp.csr_matrix, dw: float, dc: float,
                    rhs: np.ndarray) -> tuple["PlannedFactor", np.ndarray | None, bool]:
        """One attempt of the interior point's Newton step in one C call (symplex_stage_newton): what factor(W, J,
        dw, dc), its parity test and nlp._refined(factor, rhs) do, the same operations. (factor, solution of K sol
        = rhs or None when the parity of K's negative eigenvalues is not m's, whether the refinement reached
        1e-9 (1 + |rhs|)); StageBreakdown as factor. With a solution the factor's curvature is that of its step
        dz = sol[:nz], from the same call: (dz^T (W + dw I) dz, dz^T dz)."""
        self._fit(W, J)
        sol = np.empty(len(rhs))
        outcome = _native.newton(self.kernel_plan_address, np.ascontiguousarray(W.data, float),
                                 np.ascontiguousarray(J.data, float), dw, dc, np.ascontiguousarray(rhs, float), sol,
                                 self.parity_address, self.curvature_address)
        if outcome in _BREAKDOWN:
            raise StageBreakdown(_BREAKDOWN[outcome])
        solved = outcome != _native.INERTIA
        factor = PlannedFactor(self, W, J, dw, dc, parity=int(self.parity_out[0]),
                               curvature=tuple(self.curvature_out.tolist()) if solved else None)
        return factor, (sol if solved else None), outcome == _native.SOLVED


class PlannedFactor:
    """One factorisation through a StagePlan (see there): solve(rhs), residual(sol, rhs) (the whole K's), parity
    of the number of negative eigenvalues of K. The fill, the factorisation and the solve (the slacks' and the
    eliminated rows' parts folded in and recovered) are one C call each. The plan's and its layout's work arrays
    are reused: only the latest factor of a plan is valid. parity given: the factorisation is already in the work
    arrays (StagePlan.newton_step's), with this parity; curvature: (dz^T (W + dw I) dz, dz^T dz) of the step that
    call solved, or None."""

    def __init__(self, plan: StagePlan, W: sp.csc_matrix, J: sp.csr_matrix, dw: float, dc: float,
                 parity: int | None = None, curvature: tuple[float, float] | None = None):
        P, L = plan, plan.layout
        self.plan, self.W, self.J, self.dw, self.dc, self.curvature = plan, W, J, dw, dc, curvature
        self.work = P.work
        if parity is not None:
            self.parity = parity
            return
        if P.far and (np.any(W.data[P.w_far] != 0) or np.any(J.data[P.j_far] != 0)):
            raise StageBreakdown(_BREAKDOWN[_native.FAR])
        if _native.fill(L.n_blk, self.work[0], P.fill_args, np.ascontiguousarray(W.data, float),
                        np.ascontiguousarray(J.data, float), dw, dc):
            raise StageBreakdown(_BREAKDOWN[_native.SLACK])
        self.parity = (_native_factor(L, self.work, L.scratch()[0][-1]) + len(P.elim)) % 2

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        P = self.plan
        out = np.empty(len(rhs))
        _native.condensed_solve(P.layout.kernel_args(), self.work, P.solve_args, self.J.data, P.row_args,
                                np.ascontiguousarray(rhs, float), out, P.scratch_args)
        return out

    def residual(self, sol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """rhs - K sol for the whole K (kkt_residual's C twin, bit for bit, on the plan's copy of the pattern)."""
        sol, rhs = np.ascontiguousarray(sol, float), np.ascontiguousarray(rhs, float)
        return _native.residual(self.W.shape[0], self.J.shape[0], self.plan.pattern_addresses, self.W.data,
                                self.J.data, self.dw, self.dc, sol, rhs, self.plan.z_work_address)

    inertia_ok = _parity_ok

"""The block LU's pattern for the maximal step in C (native/maximal_step.c with symplex_maximal_sparse).

Owns, for one step's system rows (the active joint rows, then the interior-point pairs), the
enumeration of the bordered Newton matrix Pb's structural entries in the kernel's order (D; each row's
force side G and velocity side C on its bodies; the pairs' diagonal -s/lam; E's off-diagonal entries),
the contact_ldu.Pattern built on it (grouping, minimum-degree order, flat layout) with each entry's place
in the flat factor, and the symplex_maximal_sparse struct that hands pattern and scratch to the kernel.
The pattern is kept while the rows' bodies and E's pattern stay the same. A topology whose factor would
cost more than the caller's max_flops (native_step's gate) stops after the symbolic factor.

The joint rows wait for their bodies, the pairs' groups may go first (contact_ldu's condensed order,
whatever the iterate's -s/lam): the order is then fixed for a contact set, and no step has to be redone
for a new order. Earlier every group waited (fixed too, but a box's elimination joined all its
contacts' rows into one clique: the 200-box pile's landing steps went to numpy over MAX_FLOPS), and
before that groups with an equilibrated diagonal >= 0.5 went first, with the kernel rebuilding the
pattern and redoing the step when a row crossed that bound (32 dominoes 18.9 ms per step, 1000
dominoes 627 ms, against 11.0 and 217 with all waiting; OMP_NUM_THREADS=1, load 4.8-5).
"""

from __future__ import annotations

import ctypes

import numpy as np
import scipy.sparse

from ..native import maximal_binding as binding
from . import contact_ldu


def entries(nb: int, a: np.ndarray, b: np.ndarray, npair: int, e_row: np.ndarray,
            e_col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) unknowns of Pb's entries in the kernel's order (symplex_maximal_sparse), for system rows
    on bodies a, b (nb: the world), the last npair of them pairs with E's off-diagonal entries (e_row, e_col)."""
    R = len(a)
    six = np.arange(6)
    d_row = np.repeat(6 * np.arange(nb)[:, None] + six, 6, axis=1).ravel()
    d_col = np.tile(6 * np.arange(nb)[:, None] + six, (1, 6)).ravel()
    u = 6 * nb + np.arange(R)
    body = np.stack([a, b], axis=1)  # (R, 2)
    cols = 6 * body[:, :, None] + six  # the body's unknowns (R, 2, 6)
    unknown = np.broadcast_to(u[:, None, None], (R, 2, 6))
    side_row = np.concatenate([cols, unknown], axis=2)  # G (column u) then C (row u)
    side_col = np.concatenate([unknown, cols], axis=2)
    real = body < nb
    at = 6 * nb + R - npair
    diag = at + np.arange(npair)
    rows = np.concatenate([d_row, side_row[real].ravel(), diag, at + e_row])
    cols_ = np.concatenate([d_col, side_col[real].ravel(), diag, at + e_col])
    return rows.astype(np.int64), cols_.astype(np.int64)


def _world(nb: int, body: np.ndarray) -> np.ndarray:
    """Body indices with the world as -1 (contact_ldu's convention; the kernel's is nb)."""
    return np.where(body >= nb, -1, body)


def _e_matrix(npair: int, e_row: np.ndarray, e_col: np.ndarray) -> scipy.sparse.csr_matrix:
    """E's pattern on the pairs, the diagonal and the cone couplings, in canonical CSR (sorted, no duplicates:
    what scipy makes of the same entries as COO, without the conversion)."""
    keys = np.unique(np.concatenate([np.arange(npair) * (npair + 1), e_row * npair + e_col]).astype(np.int64))
    indptr = np.searchsorted(keys // npair, np.arange(npair + 1)) if npair else np.zeros(1, np.int64)
    return scipy.sparse.csr_matrix((np.ones(len(keys)), keys % max(npair, 1), indptr), shape=(npair, npair))


class KernelPattern:
    """One topology's contact_ldu.Pattern, its entries' places and the kernel's struct and scratch; or, for a
    topology whose factor would take more than max_flops multiply-adds, `pattern` None (nothing else built)."""

    def __init__(self, nb: int, a: np.ndarray, b: np.ndarray, npair: int, e_row: np.ndarray, e_col: np.ndarray,
                 max_flops: float | None = None):
        self.topology = tuple(np.array(x, dtype=np.int64) for x in (a, b, [nb, npair], e_row, e_col))
        R = len(a)
        N = 6 * nb + R
        row, col = entries(nb, a, b, npair, e_row, e_col)
        unique, where = np.unique(row * N + col, return_inverse=True)
        indptr = np.searchsorted(unique // N, np.arange(N + 1)).astype(np.int64)
        indices = unique % N
        E = _e_matrix(npair, e_row, e_col)
        wa, wb = _world(nb, a), _world(nb, b)
        waiting = np.arange(R) < R - npair  # the joint rows (contact_ldu: the pairs' groups may go first)
        self.pattern = contact_ldu.build(nb, wa, wb, R - npair, E, waiting, indptr, indices, max_flops)
        if self.pattern is None:
            return
        plan = self.pattern.plan
        arrays = {"order": plan.order, "dim": plan.dim, "diag_offset": plan.diag_offset, "row_offset": plan.row_offset,
                  "upper_start": plan.upper_start, "upper_node": plan.upper_node, "lower_offset": plan.lower_offset,
                  "upper_offset": plan.upper_offset, "pair_start": plan.pair_start, "pair_offset": plan.pair_offset,
                  "perm": self.pattern.perm, "entry_row": row, "entry_col": col,
                  "target": self.pattern.target[where]}
        self._arrays = {n: np.ascontiguousarray(x, dtype=np.int64) for n, x in arrays.items()}
        self._scratch = {"flat": np.zeros(plan.size), "values": np.zeros(len(row)), "srow": np.zeros(N),
                         "scol": np.zeros(N), "x": np.zeros(N), "piv": np.zeros(N, np.int64)}
        self.struct = binding.Sparse(len(plan.dim), plan.size, len(row),
                                     *(self._arrays[n].ctypes.data for n in binding.SPARSE_ARRAYS),
                                     *(self._scratch[n].ctypes.data for n in binding.SPARSE_SCRATCH))
        self.pointer = ctypes.pointer(self.struct)


def pattern_for(previous: KernelPattern | None, nb: int, a: np.ndarray, b: np.ndarray, npair: int,
                e_row: np.ndarray, e_col: np.ndarray, max_flops: float | None = None) -> KernelPattern:
    """The pattern of this step's system rows: `previous` when its topology (the rows' bodies, the number of
    pairs, E's off-diagonal entries in order) is the same, else a new one (`pattern` None above max_flops)."""
    if previous is not None and all(x.shape == np.shape(y) and np.array_equal(x, y) for x, y in zip(
            previous.topology, (a, b, [nb, npair], e_row, e_col))):
        return previous
    return KernelPattern(nb, a, b, npair, e_row, e_col, max_flops)

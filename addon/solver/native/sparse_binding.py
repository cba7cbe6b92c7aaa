"""ctypes bindings of sparse_sum.c: ScatterAdd (COO data summed into a sparse matrix's values), SymmetricHalfSum
(a matrix's entries, or COO data summed into them, symmetrised into another pattern) and CsrProduct (a fixed CSR
matrix times a vector, without scipy's per-call checks and dispatch).

`LIB` is the kernel library when it is built with sparse_sum.c and loads (native.load_kernels), else None; then
CsrProduct uses scipy's product (the numpy twin: the same sums in the same order), SymmetricHalfSum
symmetric_half_sum_numpy and ScatterAdd's callers np.bincount.
"""

from __future__ import annotations

import ctypes

import numpy as np
import scipy.sparse as sp

from . import address, load_kernels, pointers

_int, _ptr = ctypes.c_int64, ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_csr_matvec"):
        return None
    lib.symplex_scatter_add.argtypes = [_int, _ptr, _ptr, _ptr]
    lib.symplex_scatter_add.restype = None
    lib.symplex_entry_sums.argtypes = [_int] + [_ptr] * 5
    lib.symplex_entry_sums.restype = None
    lib.symplex_symmetric_half_sum.argtypes = [_int] + [_ptr] * 4
    lib.symplex_symmetric_half_sum.restype = None
    lib.symplex_csr_matvec.argtypes = [_int] + [_ptr] * 5
    lib.symplex_csr_matvec.restype = None
    return lib


LIB = _load()


class ScatterAdd:
    """values -> out (size,) with out[target[i]] += values[i], summed in the order of i: np.bincount without its passes
    to check and convert the targets at each call. The fixed targets (any integers in [0, size)) are checked and
    their address looked up once here; the values handed in at each call are checked (made float64 and contiguous
    when they are not)."""

    def __init__(self, target: np.ndarray, size: int):
        target = np.ascontiguousarray(target, np.int64)
        if target.ndim != 1 or (len(target) and (target.min() < 0 or target.max() >= size)):
            raise ValueError(f"ScatterAdd: expected 1-d targets in [0, {size}), got {target.shape} in "
                             f"[{target.min(initial=0)}, {target.max(initial=0)}]")
        self.target, self.size = target, size
        self._target = address(target)

    def __call__(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The sums into a fresh array of zeros, or added in place to out (float64, C-contiguous, (size,)): returned."""
        values = np.ascontiguousarray(values, np.float64)
        if values.shape != self.target.shape:
            raise ValueError(f"ScatterAdd: expected values of the targets' shape {self.target.shape}, got "
                             f"{values.shape}")
        if out is None:
            out = np.zeros(self.size)
        elif out.shape != (self.size,) or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"ScatterAdd: expected a float64 C-contiguous output of length {self.size}, got "
                             f"{out.dtype} {out.shape}")
        LIB.symplex_scatter_add(len(values), self._target, *pointers(values, out))
        return out


def symmetric_half_sum_numpy(data: np.ndarray, upper: np.ndarray, lower: np.ndarray, size: int,
                             summed: np.ndarray | None = None) -> np.ndarray:
    """SymmetricHalfSum's numpy twin: A's entries (data, or the data summed by np.bincount into the entries summed
    names), halved, gathered twice (a -1 takes the zero appended after them) and added."""
    sums = data if summed is None else np.bincount(summed, weights=data, minlength=size)
    half = np.empty(size + 1)
    np.multiply(sums, 0.5, out=half[:-1])
    half[-1] = 0.0
    out = half.take(upper)
    out += half.take(lower)
    return out


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """keys.argsort(kind="stable") for keys >= 0: by numpy's radix sort when they fit in 16 bits (a pattern's entries
    by their position: several times faster than the merge sort on a pattern's entries)."""
    small = len(keys) and keys.max() < 1 << 16
    return (keys.astype(np.uint16) if small else keys).argsort(kind="stable")


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the values, the length of each run of equal values) of a sorted array."""
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]])) if len(ordered) else np.zeros(0, int)
    return ordered.take(starts), np.diff(np.append(starts, len(ordered)))


class SymmetricHalfSum:
    """data -> out with out[k] = 0.5 A[upper[k]] + 0.5 A[lower[k]] (the half of a negative index 0.0): the entries of
    0.5 (A + A^T) in another pattern, A's entry of each and of its mirror named by position among A's size entries.
    A's entries are the data, or for summed given (COO data: an entry of A for each datum) the sums
    A[p] = 0.0 + the data[i] with summed[i] == p, in the order of i. In C (sparse_sum.c) when the kernels are built,
    else by symmetric_half_sum_numpy (the same sums and products in the same order). The C sums take only the entries
    out reads, grouped by their number of terms (_sum_classes), into a scratch array made once: no array in between
    made at each call. The fixed maps are checked once, the data at each call."""

    def __init__(self, upper: np.ndarray, lower: np.ndarray, size: int, summed: np.ndarray | None = None):
        self.upper, self.lower = (np.ascontiguousarray(a, np.int64) for a in (upper, lower))
        for name, a, low in (("upper", self.upper, -1), ("lower", self.lower, -1), ("summed", summed, 0)):
            if a is not None and (a.ndim != 1 or (len(a) and (a.min() < low or a.max() >= size))):
                raise ValueError(f"SymmetricHalfSum: expected 1-d {name} in [{low}, {size}), got {a.shape} in "
                                 f"[{a.min(initial=0)}, {a.max(initial=0)}]")
        if self.upper.shape != self.lower.shape:
            raise ValueError(f"SymmetricHalfSum: upper {self.upper.shape} and lower {self.lower.shape} differ")
        self.size, self.summed = size, None if summed is None else np.ascontiguousarray(summed, np.int64)
        self._data_size = size if summed is None else len(summed)
        if LIB is None:
            return
        upper, lower = self.upper, self.lower
        if self.summed is not None:
            upper, lower, *self._kept = self._sum_classes()
            self._sums = np.empty(int(self._kept[1].sum()))
            self._sum_args = (len(self._kept[0]), *pointers(*self._kept))
            self._sums_at = address(self._sums)
        self._maps = (upper, lower)  # kept alive: the kernel reads them by address
        self._args = (len(upper), *pointers(upper, lower))

    def _sum_classes(self) -> tuple[np.ndarray, ...]:
        """(upper and lower renumbered, the classes' numbers of terms, their numbers of sums, the terms' positions in
        the data): the entries of A that upper or lower name, ordered by their number of terms (stably), each entry's
        terms in the order of the data."""
        counts = np.bincount(self.summed, minlength=self.size)
        named = np.zeros(self.size, bool)
        named[self.upper[self.upper >= 0]] = named[self.lower[self.lower >= 0]] = True
        entries = named.nonzero()[0]
        entries = entries.take(_stable_order(counts.take(entries)))
        position = np.full(self.size + 1, -1)  # position[-1]: a -1 stays -1
        position[entries] = np.arange(len(entries))
        # the data by the position of their entry (those of entries not named, at -1, first), each entry's in order
        source = _stable_order(position.take(self.summed) + 1)[len(self.summed) - counts.take(entries).sum():]
        terms, sums = _runs(counts.take(entries))
        return tuple(np.ascontiguousarray(a, np.int64) for a in (position.take(self.upper), position.take(self.lower),
                                                                 terms, sums, source))

    def __call__(self, data: np.ndarray) -> np.ndarray:
        if data.shape != (self._data_size,):
            raise ValueError(f"SymmetricHalfSum: expected data of shape ({self._data_size},), got {data.shape}")
        if LIB is None:
            return symmetric_half_sum_numpy(data, self.upper, self.lower, self.size, self.summed)
        data = np.ascontiguousarray(data, np.float64)
        out = np.empty(len(self.upper))
        if self.summed is None:
            sums = address(data)
        else:
            LIB.symplex_entry_sums(*self._sum_args, address(data), self._sums_at)
            sums = self._sums_at
        LIB.symplex_symmetric_half_sum(*self._args, sums, address(out))
        return out


class CsrProduct:
    """out = A x for a fixed CSR matrix A and a fixed input vector x (its data read at each call): the addresses
    are looked up once. out is a fixed array given at construction (its address looked up once too), else a fresh
    array, or a given one of A's row count, at each call."""

    def __init__(self, A: sp.csr_matrix, x: np.ndarray, out: np.ndarray | None = None):
        A = sp.csr_matrix(A)  # its entries as they are: duplicates are summed in order, as scipy's product does
        if A.shape[1] != len(x) or x.dtype != np.float64 or not x.flags.c_contiguous:
            raise ValueError(f"CsrProduct: expected a float64 C-contiguous input of length {A.shape[1]}, got "
                             f"{x.dtype} {x.shape}")
        if out is not None and (out.shape != (A.shape[0],) or out.dtype != np.float64 or not out.flags.c_contiguous):
            raise ValueError(f"CsrProduct: expected a float64 C-contiguous output of length {A.shape[0]}, got "
                             f"{out.dtype} {out.shape}")
        self.A, self.x, self.out = A, x, out
        self._arrays = (np.ascontiguousarray(A.indptr, np.int64), np.ascontiguousarray(A.indices, np.int64),
                        np.ascontiguousarray(A.data, np.float64))
        self._args = (A.shape[0], *pointers(*self._arrays, x))
        self._fixed_args = None if out is None else (*self._args, *pointers(out))

    def __call__(self, out: np.ndarray | None = None) -> np.ndarray:
        """A x (into out when given: float64, C-contiguous, not overlapping the entries of x that A reads; else into
        the fixed output, or a fresh array)."""
        if out is None:
            out = np.empty(self.A.shape[0]) if self.out is None else self.out
        if LIB is None:
            out[:] = self.A @ self.x
        elif out is self.out:
            LIB.symplex_csr_matvec(*self._fixed_args)
        else:
            LIB.symplex_csr_matvec(*self._args, address(out))
        return out

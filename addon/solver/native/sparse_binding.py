"""ctypes bindings of sparse_sum.c: scatter_add (COO data summed into a sparse matrix's values) and CsrProduct (a
fixed CSR matrix times a vector, without scipy's per-call checks and dispatch).

`LIB` is the kernel library when it is built with sparse_sum.c and loads (native.load_kernels), else None; then
CsrProduct uses scipy's product (the numpy twin: the same sums in the same order) and scatter_add's callers
np.bincount.
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
    lib.symplex_csr_matvec.argtypes = [_int] + [_ptr] * 5
    lib.symplex_csr_matvec.restype = None
    return lib


LIB = _load()


def scatter_add(target: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """out (size,) with out[target[i]] += values[i], summed in the order of i: np.bincount without its passes to check
    and convert the targets. target: int64, C-contiguous, entries in [0, size) (the caller's fixed map, not checked
    here)."""
    values = np.ascontiguousarray(values, np.float64)
    if target.shape != values.shape or target.dtype != np.int64:
        raise ValueError(f"scatter_add: expected int64 targets of the values' shape {values.shape}, got "
                         f"{target.dtype} {target.shape}")
    out = np.zeros(size)
    LIB.symplex_scatter_add(len(values), *pointers(target, values, out))
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
        if out is None and self.out is not None:
            if LIB is None:
                self.out[:] = self.A @ self.x
            else:
                LIB.symplex_csr_matvec(*self._fixed_args)
            return self.out
        if out is None:
            out = np.empty(self.A.shape[0])
        if LIB is None:
            out[:] = self.A @ self.x
        else:
            LIB.symplex_csr_matvec(*self._args, address(out))
        return out

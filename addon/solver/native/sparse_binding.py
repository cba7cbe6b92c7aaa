"""ctypes bindings of sparse_sum.c: ScatterAdd (COO data summed into a sparse matrix's values) and CsrProduct (a
fixed CSR matrix times a vector, without scipy's per-call checks and dispatch).

`LIB` is the kernel library when it is built with sparse_sum.c and loads (native.load_kernels), else None; then
CsrProduct uses scipy's product (the numpy twin: the same sums in the same order) and ScatterAdd's callers
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

    def __call__(self, values: np.ndarray) -> np.ndarray:
        values = np.ascontiguousarray(values, np.float64)
        if values.shape != self.target.shape:
            raise ValueError(f"ScatterAdd: expected values of the targets' shape {self.target.shape}, got "
                             f"{values.shape}")
        out = np.zeros(self.size)
        LIB.symplex_scatter_add(len(values), self._target, *pointers(values, out))
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

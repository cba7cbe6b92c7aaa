"""ctypes bindings of baraff.c (baraff_kernels.h): the tree block LDL^T and the fill-in block LDU in C.

`LIB` is the kernel library when it is built with baraff.c and loads (native.load_kernels), else None;
addon/solver/maximal/baraff.py and fillin.py then use their numpy twins. The wrappers take the arrays of
those modules' layouts as they are (int64 / float64, C-contiguous; the callers build them so) and do
not re-check them: baraff.py and fillin.py are their only callers.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels

MAX_DIM = 64  # SYMPLEX_BARAFF_MAX_DIM
_int, _ptr = ctypes.c_int64, ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_fillin_solve"):
        return None
    lib.symplex_baraff_factor.argtypes = [_int] + [_ptr] * 12
    lib.symplex_baraff_factor.restype = _int
    lib.symplex_baraff_solve.argtypes = [_int] + [_ptr] * 8 + [_int, _ptr, _ptr]
    lib.symplex_baraff_solve.restype = None
    lib.symplex_baraff_multiply.argtypes = [_int] + [_ptr] * 9 + [_int, _ptr, _ptr]
    lib.symplex_baraff_multiply.restype = None
    lib.symplex_fillin_factor.argtypes = [_int] + [_ptr] * 11
    lib.symplex_fillin_factor.restype = _int
    lib.symplex_fillin_solve.argtypes = [_int] + [_ptr] * 9 + [_int, _ptr, _ptr]
    lib.symplex_fillin_solve.restype = None
    return lib


LIB = _load()


def factor(n_nodes: int, forward: np.ndarray, parent: np.ndarray, dim: np.ndarray, sq_offset: np.ndarray,
           lt_offset: np.ndarray, has_mass: np.ndarray, mass: np.ndarray, edge_offset: np.ndarray,
           edge_transposed: np.ndarray, edges: np.ndarray, dinv: np.ndarray, lt: np.ndarray) -> int:
    """Run symplex_baraff_factor; -1 on success, else the node with a singular pivot (-2: block too big)."""
    return LIB.symplex_baraff_factor(n_nodes, *(a.ctypes.data for a in (
        forward, parent, dim, sq_offset, lt_offset, has_mass, mass, edge_offset, edge_transposed, edges, dinv, lt)))


def solve(n_nodes: int, forward: np.ndarray, parent: np.ndarray, dim: np.ndarray, sq_offset: np.ndarray,
          lt_offset: np.ndarray, row_offset: np.ndarray, dinv: np.ndarray, lt: np.ndarray, x: np.ndarray,
          scratch: np.ndarray) -> None:
    """Run symplex_baraff_solve in place on x (N, ncol)."""
    LIB.symplex_baraff_solve(n_nodes, *(a.ctypes.data for a in (
        forward, parent, dim, sq_offset, lt_offset, row_offset, dinv, lt)), x.shape[1], x.ctypes.data,
        scratch.ctypes.data)


def multiply(n_nodes: int, parent: np.ndarray, dim: np.ndarray, sq_offset: np.ndarray, row_offset: np.ndarray,
             has_mass: np.ndarray, mass: np.ndarray, edge_offset: np.ndarray, edge_transposed: np.ndarray,
             edges: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """Run symplex_baraff_multiply: out = H x, x and out (N, ncol)."""
    LIB.symplex_baraff_multiply(n_nodes, *(a.ctypes.data for a in (
        parent, dim, sq_offset, row_offset, has_mass, mass, edge_offset, edge_transposed, edges)), x.shape[1],
        x.ctypes.data, out.ctypes.data)


def fillin_factor(plan, a: np.ndarray, scratch: np.ndarray) -> int:
    """Run symplex_fillin_factor on a fillin.Plan's arrays; -1, a singular node, or -2."""
    return LIB.symplex_fillin_factor(len(plan.dim), *(x.ctypes.data for x in (
        plan.order, plan.dim, plan.diag_offset, plan.upper_start, plan.upper_node, plan.lower_offset,
        plan.upper_offset, plan.pair_start, plan.pair_offset, a, scratch)))


def fillin_solve(plan, a: np.ndarray, x: np.ndarray, scratch: np.ndarray) -> None:
    """Run symplex_fillin_solve in place on x (N, ncol)."""
    LIB.symplex_fillin_solve(len(plan.dim), *(y.ctypes.data for y in (
        plan.order, plan.dim, plan.diag_offset, plan.upper_start, plan.upper_node, plan.lower_offset,
        plan.upper_offset, plan.row_offset, a)), x.shape[1], x.ctypes.data, scratch.ctypes.data)

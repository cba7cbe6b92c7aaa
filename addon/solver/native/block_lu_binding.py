"""ctypes bindings of block_lu.c (block_lu.h): the block-sparse LU with a static order and pivoting
inside each pivot block.

`LIB` is the kernel library when it is built with block_lu.c and loads (native.load_kernels), else
None; addon/solver/maximal/contact_ldu.py then uses its numpy twin. The wrappers take the arrays of a
fillin.Plan as they are (int64 / float64, C-contiguous; contact_ldu builds them so) and do not re-check
them: contact_ldu.py is their only caller.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels

_int, _ptr = ctypes.c_int64, ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_block_lu_solve"):
        return None
    lib.symplex_block_lu_factor.argtypes = [_int] + [_ptr] * 13
    lib.symplex_block_lu_factor.restype = _int
    lib.symplex_block_lu_solve.argtypes = [_int] + [_ptr] * 10 + [_int, _ptr]
    lib.symplex_block_lu_solve.restype = None
    return lib


LIB = _load()


def factor(plan, a: np.ndarray, piv: np.ndarray) -> tuple[int, float]:
    """symplex_block_lu_factor on a fillin.Plan's arrays: (-1 or the singular node, largest |entry|)."""
    growth = np.zeros(1)
    status = LIB.symplex_block_lu_factor(len(plan.dim), *(x.ctypes.data for x in (
        plan.order, plan.dim, plan.diag_offset, plan.row_offset, plan.upper_start, plan.upper_node,
        plan.lower_offset, plan.upper_offset, plan.pair_start, plan.pair_offset, a, piv, growth)))
    return int(status), float(growth[0])


def solve(plan, a: np.ndarray, piv: np.ndarray, x: np.ndarray) -> None:
    """symplex_block_lu_solve in place on x (N, ncol)."""
    LIB.symplex_block_lu_solve(len(plan.dim), *(y.ctypes.data for y in (
        plan.order, plan.dim, plan.diag_offset, plan.row_offset, plan.upper_start, plan.upper_node,
        plan.lower_offset, plan.upper_offset, a, piv)), x.shape[1], x.ctypes.data)

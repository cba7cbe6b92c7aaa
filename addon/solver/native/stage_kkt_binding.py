"""ctypes bindings of stage_kkt.c (stage_kkt.h): assembly (from CSC/CSR, or through precomputed slots),
block-tridiagonal LDL^T and solve of the shot KKT.

`LIB` is the kernel library when it is built with stage_kkt.c and loads (native.load_kernels), else None;
addon/solver/shots/stage_kkt.py then uses its numpy twin (StageFactor). The wrappers take the arrays of
stage_kkt.NativeStageFactor and stage_kkt.StagePlan as they are (int64 / float64, C-contiguous; they build them
so) and do not re-check them: those are their only callers.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_stage_fill"):
        return None
    lib.symplex_stage_fill.argtypes = [_int, _ptr, _int] + [_ptr] * 3 + [_int] + [_ptr] * 3 + [_int] + [_ptr] * 5 \
        + [_int, _ptr, _ptr]
    lib.symplex_stage_fill.restype = None
    lib.symplex_stage_assemble.argtypes = [_int, _int] + [_ptr] * 6 + [_int, _int] + [_ptr] * 6 \
        + [_double, _double, _int, _ptr]
    lib.symplex_stage_assemble.restype = _int
    lib.symplex_stage_factor.argtypes = [_int, _int] + [_ptr] * 4 + [_int, _ptr, _double] + [_ptr] * 7
    lib.symplex_stage_factor.restype = _int
    lib.symplex_stage_solve.argtypes = [_int, _int] + [_ptr] * 4 + [_int] + [_ptr] * 8
    lib.symplex_stage_solve.restype = None
    return lib


LIB = _load()


def _p(a: np.ndarray) -> int:
    return a.ctypes.data


def assemble(plan, nz: int, m: int, w_ptr, w_idx, w_val, j_ptr, j_idx, j_val, dw: float, dc: float,
             blk: np.ndarray) -> int:
    """Run symplex_stage_assemble into blk; 0, or 1 + the KKT row of an entry that couples far chunks."""
    return LIB.symplex_stage_assemble(nz, m, _p(plan.chunk), _p(plan.local), _p(plan.sizes), _p(plan.a_off),
                                      _p(plan.c_off), _p(plan.e_off), plan.f_off, plan.nb, _p(w_ptr), _p(w_idx),
                                      _p(w_val), _p(j_ptr), _p(j_idx), _p(j_val), dw, dc, len(blk), _p(blk))


def fill(blk: np.ndarray, w_slot, w_src, w_val, j_slot, j_src, j_val, p_slot, p_a, p_b, p_row, row_weight,
         d_slot, d_val) -> None:
    """Run symplex_stage_fill into blk (stage_kkt.StagePlan's slots and this factorisation's values)."""
    LIB.symplex_stage_fill(len(blk), _p(blk), len(w_slot), _p(w_slot), _p(w_src), _p(w_val), len(j_slot), _p(j_slot),
                           _p(j_src), _p(j_val), len(p_slot), _p(p_slot), _p(p_a), _p(p_b), _p(p_row),
                           _p(row_weight), len(d_slot), _p(d_slot), _p(d_val))


def factor(plan, s_rcond: float, blk: np.ndarray, g: np.ndarray, g_cols: np.ndarray, g_count: np.ndarray,
           x: np.ndarray, piv: np.ndarray, parity: np.ndarray) -> int:
    """Run symplex_stage_factor in place; -1, or the chunk with a singular pivot (n_chunks: the border)."""
    return LIB.symplex_stage_factor(plan.n_chunks, plan.nb, _p(plan.sizes), _p(plan.a_off), _p(plan.c_off),
                                    _p(plan.e_off), plan.f_off, _p(plan.r_off), s_rcond, _p(blk), _p(g),
                                    _p(g_cols), _p(g_count), _p(x), _p(piv), _p(parity))


def solve(plan, blk: np.ndarray, g: np.ndarray, g_cols: np.ndarray, g_count: np.ndarray, x: np.ndarray,
          piv: np.ndarray, v: np.ndarray) -> None:
    """Run symplex_stage_solve in place on v (inner unknowns in chunk order, then the border)."""
    LIB.symplex_stage_solve(plan.n_chunks, plan.nb, _p(plan.sizes), _p(plan.a_off), _p(plan.c_off),
                            _p(plan.e_off), plan.f_off, _p(plan.r_off), _p(blk), _p(g), _p(g_cols),
                            _p(g_count), _p(x), _p(piv), _p(v))

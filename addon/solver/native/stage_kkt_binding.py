"""ctypes bindings of stage_kkt.c (stage_kkt.h): assembly through precomputed slots, block-tridiagonal LDL^T and
solve of the shot KKT, and its residual; and the interior point's whole Newton step attempt (fill, factor, parity,
solve and refinement) in one call on a `Plan`, the mirror of symplex_stage_plan.

`LIB` is the kernel library when it is built with stage_kkt.c and loads (native.load_kernels), else None;
addon/solver/shots/stage_kkt.py then uses its numpy twin (StageFactor). The wrappers take the arrays of
stage_kkt.StagePlan as they are (int64 / float64, C-contiguous; it builds them so) and do not re-check them: it
is their only caller.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import address, load_kernels, pointers

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_stage_fill"):
        return None
    lib.symplex_stage_fill.argtypes = [_int, _ptr, _int, _int, _int, _ptr, _int, _ptr, _ptr, _ptr, _int, _ptr,
                                       _ptr, _ptr, _int, _ptr, _ptr, _ptr, _ptr, _int, _int, _ptr, _ptr, _double,
                                       _double, _ptr, _int, _ptr, _ptr, _int, _ptr, _ptr]
    lib.symplex_stage_fill.restype = _int
    lib.symplex_stage_condensed_solve.argtypes = [_int, _int, _ptr, _ptr, _ptr, _ptr, _int, _ptr] + [_ptr] * 9 \
        + [_int, _int, _int, _ptr, _ptr, _ptr, _int, _ptr, _ptr, _int, _ptr, _ptr, _ptr, _ptr, _int, _ptr, _ptr] \
        + [_ptr] * 4
    lib.symplex_stage_condensed_solve.restype = None
    lib.symplex_kkt_residual.argtypes = [_int, _int] + [_ptr] * 6 + [_double, _double] + [_ptr] * 4
    lib.symplex_kkt_residual.restype = None
    lib.symplex_stage_factor.argtypes = [_int, _int] + [_ptr] * 4 + [_int, _ptr, _double] + [_ptr] * 10
    lib.symplex_stage_factor.restype = _int
    lib.symplex_stage_newton.argtypes = [_ptr, _ptr, _ptr, _double, _double, _ptr, _ptr, _ptr, _ptr]
    lib.symplex_stage_newton.restype = _int
    return lib


LIB = _load()

# symplex_stage_plan's fields in header order: name and kind (int64, double or an address)
_PLAN_FIELDS = (
    ("n_chunks", _int), ("nb", _int), ("f_off", _int), ("n_blk", _int), ("c_begin", _int), ("c_end", _int),
    ("n_c", _int), ("c_slot", _ptr), ("size", _ptr), ("a_off", _ptr), ("c_off", _ptr), ("e_off", _ptr),
    ("r_off", _ptr), ("s_rcond", _double), ("blk", _ptr), ("g", _ptr), ("g_cols", _ptr), ("g_count", _ptr),
    ("c_place", _ptr), ("coupling", _ptr), ("coupling_off", _ptr), ("x", _ptr), ("piv", _ptr), ("n_w", _int),
    ("w_slot", _ptr),
    ("w_src", _ptr), ("n_j", _int), ("j_slot", _ptr), ("j_src", _ptr), ("n_p", _int), ("p_slot", _ptr),
    ("p_a", _ptr), ("p_b", _ptr), ("p_row", _ptr), ("nx", _int), ("ns", _int), ("m", _int), ("slack_diag", _ptr),
    ("coef", _ptr), ("slack_d", _ptr), ("n_elim", _int), ("elim_slack", _ptr), ("weight", _ptr), ("n_kept", _int),
    ("kept_slack", _ptr), ("d_slot", _ptr), ("n_w_far", _int), ("n_j_far", _int), ("w_far", _ptr), ("j_far", _ptr),
    ("slack_row", _ptr), ("elim_row", _ptr), ("n_e", _int), ("e_src", _ptr), ("e_col", _ptr), ("e_row", _ptr),
    ("kept_row", _ptr), ("where", _ptr), ("v", _ptr), ("t", _ptr), ("w_ptr", _ptr), ("w_idx", _ptr),
    ("j_ptr", _ptr), ("j_idx", _ptr), ("z_work", _ptr), ("refine", _ptr), ("parity_m", _int),
)


class Plan(ctypes.Structure):
    """Mirror of symplex_stage_plan (stage_kkt.h): built once per StagePlan pattern from the plan's arrays, which
    must outlive it; arrays are passed as numpy arrays (int64 or float64, C-contiguous), their addresses taken
    here once."""

    _fields_ = list(_PLAN_FIELDS)

    def __init__(self, **fields):
        super().__init__(**{name: (address(value) if isinstance(value, np.ndarray) else value)
                            for name, value in fields.items()})


# symplex_stage_newton's outcomes (stage_kkt.h)
SOLVED, INERTIA, INACCURATE, FAR, SLACK, PIVOT, BORDER = range(7)


def layout_args(plan) -> tuple:
    """The layout's part of the factor and solve calls: n_chunks, nb, size, a_off, c_off, e_off, f_off, r_off."""
    sizes, a_off, c_off, e_off, r_off = pointers(plan.sizes, plan.a_off, plan.c_off, plan.e_off, plan.r_off)
    return (plan.n_chunks, plan.nb, sizes, a_off, c_off, e_off, plan.f_off, r_off)


def fill(n_blk: int, blk: int, plan: tuple, w_val: np.ndarray, j_val: np.ndarray, dw: float, dc: float) -> int:
    """Run symplex_stage_fill into blk (n_blk doubles at address blk); plan: the counts and addresses of
    stage_kkt.StagePlan's arrays in the kernel's order without w_val, j_val, dw, dc (StagePlan.fill_args).
    0, or 1 + the slack whose diagonal is not positive."""
    return LIB.symplex_stage_fill(n_blk, blk, *plan[:7], address(w_val), *plan[7:10], address(j_val), *plan[10:19],
                                  dw, dc, *plan[19:])


def condensed_solve(args: tuple, work: tuple, plan: tuple, j_val: np.ndarray, rows: tuple, rhs: np.ndarray,
                    out: np.ndarray, scratch: tuple) -> None:
    """Run symplex_stage_condensed_solve: args, work as for factor; plan: nx, ns, m and the addresses of slack_row
    ... e_row (StagePlan.solve_args); rows: n_kept and the addresses of kept_row, where; scratch: addresses of v
    and t."""
    LIB.symplex_stage_condensed_solve(*args, *work, *plan, address(j_val), *rows, address(rhs), address(out), *scratch)


def residual(nz: int, m: int, pattern: tuple, w_val: np.ndarray, j_val: np.ndarray, dw: float, dc: float,
             sol: np.ndarray, rhs: np.ndarray, work: int) -> np.ndarray:
    """rhs - K sol by symplex_kkt_residual; pattern: addresses of W's indptr and indices (CSC) and J's (CSR), int64;
    work: address of nz doubles."""
    out = np.empty(nz + m)
    w_ptr, w_idx, j_ptr, j_idx = pattern
    LIB.symplex_kkt_residual(nz, m, w_ptr, w_idx, address(w_val), j_ptr, j_idx, address(j_val), dw, dc, address(sol), address(rhs),
                             address(out), work)
    return out


def factor(args: tuple, s_rcond: float, work: tuple, parity: int) -> int:
    """Run symplex_stage_factor in place (args: layout_args; work: addresses of blk, g, g_cols, g_count, c_place,
    coupling, coupling_off, x, piv; parity: address of one int64); -1, or the chunk with a singular pivot
    (n_chunks: the border)."""
    return LIB.symplex_stage_factor(*args, s_rcond, *work, parity)


def newton(plan: int, w_val: np.ndarray, j_val: np.ndarray, dw: float, dc: float, rhs: np.ndarray,
           sol: np.ndarray, parity: int, curvature: int) -> int:
    """Run symplex_stage_newton on the Plan at address plan (ctypes.addressof, kept with it): the outcome (SOLVED ...
    BORDER); sol (nz + m), the int64 at address parity and (with sol) the two doubles at address curvature,
    dz^T (W + dw I) dz and dz^T dz, are written."""
    return LIB.symplex_stage_newton(plan, address(w_val), address(j_val), dw, dc, address(rhs), address(sol), parity,
                                    curvature)

"""ctypes bindings of interior_point.c, the shots' interior point's loops over its bounded vectors, and their numpy
twins (the reference, and what addon/solver/shots/nlp.py uses when the library is not built): step_to_bounds (the
fraction-to-boundary rule) and near_central_path (a bound multiplier's step, clipped near the central path). C and
numpy give the same bits (the same operations in the same order; tests/solver/shots/test_interior_point_native.py).

`LIB` is the kernel library when it is built with interior_point.c and loads (native.load_kernels), else None.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import address, load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
# the ufunc reduction behind fmin's: skips nan, without the ndarray wrapper
_fmin = np.fmin.reduce


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_step_to_bounds"):
        return None
    lib.symplex_step_to_bounds.argtypes = [_int, _ptr, _ptr, _ptr, _double]
    lib.symplex_step_to_bounds.restype = _double
    lib.symplex_near_central_path.argtypes = [_int, _ptr, _double, _ptr, _double, _ptr, _ptr]
    lib.symplex_near_central_path.restype = None
    return lib


LIB = _load()


def step_to_bounds_numpy(dist_lo: np.ndarray, dist_up: np.ndarray | None, dx: np.ndarray, tau: float) -> float:
    """Largest alpha in (0, 1] with x + alpha dx inside (1 - tau) of the way to each bound, from x's distances to
    its lower and upper bounds (inf where there is none, so that entry's ratio is inf; dist_up None: no upper
    bounds). The ratios are taken where dx moves towards a bound, found by index (faster than masks and gathers
    over the bounded entries); fmin: an infinite dx at an unbounded entry (a nan ratio) limits nothing (nor does
    anything when there is no ratio: the reduction's initial inf)."""
    k = (dx < 0).nonzero()[0]
    alpha = min(1.0, float(_fmin(-tau * dist_lo[k] / dx[k], initial=np.inf)))
    if dist_up is not None:
        k = (dx > 0).nonzero()[0]
        alpha = min(alpha, float(_fmin(tau * dist_up[k] / dx[k], initial=np.inf)))
    return alpha


def near_central_path_numpy(z: np.ndarray, alpha: float, dz: np.ndarray, mu: float, dist: np.ndarray) -> np.ndarray:
    """Bound multipliers z + alpha dz (a new array) clipped to [mu / (1e10 dist), 1e10 mu / dist] (IPOPT's
    kappa_Sigma; 0 where dist is inf), as np.clip does it (the larger with the lower limit, then the smaller with the
    upper), without its wrappers."""
    out = z + alpha * dz
    np.maximum(out, mu / (1e10 * dist), out=out)
    return np.minimum(out, 1e10 * mu / dist, out=out)


def _checked(*arrays: np.ndarray) -> int:
    """The common length of float64 C-contiguous vectors (ValueError otherwise: ctypes would read any memory)."""
    n = len(arrays[0])
    for a in arrays:
        if a.dtype != np.float64 or a.ndim != 1 or len(a) != n or not a.flags.c_contiguous:
            raise ValueError(f"interior point kernel: expected float64 C-contiguous vectors of length {n}, got "
                             f"{[(b.dtype, b.shape) for b in arrays]}")
    return n


def _step_to_bounds_c(dist_lo: np.ndarray, dist_up: np.ndarray | None, dx: np.ndarray, tau: float) -> float:
    if dist_up is None:
        return LIB.symplex_step_to_bounds(_checked(dist_lo, dx), address(dist_lo), None, address(dx), tau)
    return LIB.symplex_step_to_bounds(_checked(dist_lo, dist_up, dx), address(dist_lo), address(dist_up), address(dx),
                                      tau)


def _near_central_path_c(z: np.ndarray, alpha: float, dz: np.ndarray, mu: float, dist: np.ndarray) -> np.ndarray:
    out = np.empty(_checked(z, dz, dist))
    LIB.symplex_near_central_path(len(out), address(z), alpha, address(dz), mu, address(dist), address(out))
    return out


# the C kernels when the library is built, else their twins
step_to_bounds, near_central_path = ((_step_to_bounds_c, _near_central_path_c) if LIB is not None else
                                     (step_to_bounds_numpy, near_central_path_numpy))

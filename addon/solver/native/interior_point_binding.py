"""ctypes bindings of interior_point.c, the shots' interior point's loops over its bounded vectors, and their numpy
twins (the reference, and what addon/solver/shots/nlp.py uses when the library is not built): step_to_bounds (the
fraction-to-boundary rule), barrier_terms (a Newton step's barrier terms and right-hand side) and multiplier_steps
(the bound multipliers' steps and how far they may go). C and numpy give the same bits (the same operations in the
same order; tests/solver/shots/test_interior_point_native.py).

`LIB` is the kernel library when it is built with interior_point.c and loads (native.load_kernels), else None.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import address, load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
_CONTIGUOUS = (8,)  # the strides of a C-contiguous float64 vector
# the ufunc reduction behind fmin's: skips nan, without the ndarray wrapper
_fmin = np.fmin.reduce


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_step_to_bounds"):
        return None
    lib.symplex_step_to_bounds.argtypes = [_int, _ptr, _ptr, _ptr, _double]
    lib.symplex_step_to_bounds.restype = _double
    lib.symplex_barrier_terms.argtypes = [_int, _int, _ptr, _ptr, _ptr, _ptr, _ptr, _double, _ptr, _ptr, _ptr]
    lib.symplex_barrier_terms.restype = None
    lib.symplex_multiplier_steps.argtypes = [_int, _ptr, _ptr, _ptr, _ptr, _double, _ptr, _ptr]
    lib.symplex_multiplier_steps.restype = _double
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


def barrier_terms_numpy(g: np.ndarray, zL: np.ndarray, zU: np.ndarray, dl: np.ndarray, du: np.ndarray, mu: float,
                        c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(terms (6, n): zL / dl, zU / du, their sum sigma, mu / dl, mu / du (the barrier terms' gradients), the barrier
    gradient g - mu / dl + mu / du; the Newton step's right-hand side -(that gradient, c)), from the bound multipliers
    zL, zU, the distances dl, du to the bounds (inf where there is none: each term is 0 there), the objective's
    gradient g and the rows c."""
    n = len(g)
    terms, rhs = np.empty((6, n)), np.empty(n + len(c))
    np.divide(zL, dl, out=terms[0])
    np.divide(zU, du, out=terms[1])
    np.add(terms[0], terms[1], out=terms[2])
    np.divide(mu, dl, out=terms[3])
    np.divide(mu, du, out=terms[4])
    np.subtract(g, terms[3], out=terms[5])
    np.add(terms[5], terms[4], out=terms[5])
    np.negative(terms[5], out=rhs[:n])
    np.negative(c, out=rhs[n:])
    return terms, rhs


def multiplier_steps_numpy(zL: np.ndarray, zU: np.ndarray, terms: np.ndarray, dz: np.ndarray,
                           tau: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(dzL, dzU, alpha): the bound multipliers' Newton steps for the primal step dz, from barrier_terms' terms
    (0 where there is no bound: each term is), and the largest fraction alpha <= 1 of them keeping zL, zU within tau
    of the way to 0 (step_to_bounds)."""
    zl_dl, zu_du, _, pull_lo, pull_up, _ = terms
    dzL = pull_lo - zL - zl_dl * dz
    dzU = pull_up - zU + zu_du * dz
    return dzL, dzU, min(step_to_bounds_numpy(zL, None, dzL, tau), step_to_bounds_numpy(zU, None, dzU, tau))


def _checked(*arrays: np.ndarray) -> int:
    """The common length of float64 C-contiguous vectors (ValueError otherwise: ctypes would read any memory)."""
    n = len(arrays[0])
    for a in arrays:
        # strides (8,): one C-contiguous axis (a vector of one entry or none may have any stride)
        if a.dtype.char != "d" or len(a) != n or (a.strides != _CONTIGUOUS and (a.ndim != 1 or n > 1)):
            raise ValueError(f"interior point kernel: expected float64 C-contiguous vectors of length {n}, got "
                             f"{[(b.dtype, b.shape) for b in arrays]}")
    return n


def _step_to_bounds_c(dist_lo: np.ndarray, dist_up: np.ndarray | None, dx: np.ndarray, tau: float) -> float:
    if dist_up is None:
        return LIB.symplex_step_to_bounds(_checked(dist_lo, dx), address(dist_lo), None, address(dx), tau)
    return LIB.symplex_step_to_bounds(_checked(dist_lo, dist_up, dx), address(dist_lo), address(dist_up), address(dx),
                                      tau)


def _barrier_terms_c(g: np.ndarray, zL: np.ndarray, zU: np.ndarray, dl: np.ndarray, du: np.ndarray, mu: float,
                     c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = _checked(g, zL, zU, dl, du)
    _checked(c)
    terms, rhs = np.empty((6, n)), np.empty(n + len(c))
    LIB.symplex_barrier_terms(n, len(c), address(g), address(zL), address(zU), address(dl), address(du), mu,
                              address(c), address(terms), address(rhs))
    return terms, rhs


def _multiplier_steps_c(zL: np.ndarray, zU: np.ndarray, terms: np.ndarray, dz: np.ndarray,
                        tau: float) -> tuple[np.ndarray, np.ndarray, float]:
    n = _checked(zL, zU, dz)
    if terms.shape != (6, n) or terms.dtype != np.float64 or not terms.flags.c_contiguous:
        raise ValueError(f"multiplier_steps: expected float64 C-contiguous terms (6, {n}), got {terms.shape}")
    dzL, dzU = np.empty(n), np.empty(n)
    alpha = LIB.symplex_multiplier_steps(n, address(zL), address(zU), address(terms), address(dz), tau, address(dzL),
                                         address(dzU))
    return dzL, dzU, alpha


# the C kernels when the library is built, else their twins
step_to_bounds, barrier_terms, multiplier_steps = (
    (_step_to_bounds_c, _barrier_terms_c, _multiplier_steps_c) if LIB is not None else
    (step_to_bounds_numpy, barrier_terms_numpy, multiplier_steps_numpy))

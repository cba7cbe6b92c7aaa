"""ctypes bindings of interior_point.c, the shots' interior point's loops over its bounded vectors, and their numpy
twins (the reference, and what addon/solver/shots/nlp.py uses when the library is not built): step_to_bounds (the
fraction-to-boundary rule), and through the solve's vectors, barrier_terms (a Newton step's barrier terms and
right-hand side), multiplier_steps (the bound multipliers' steps and how far they may go), optimality (the dual
infeasibility and the complementarity products), accepted_step (the distances to the bounds and the bound multipliers
at the accepted point) and the log barrier's distances. C and numpy give the same bits (the same operations in the
same order; tests/solver/shots/test_interior_point_native.py).

`vectors(lower, upper, m)` -> the interior point's vectors of one solve (Vectors: distances, bound multipliers, their
steps, barrier terms, right-hand side) in buffers made once, and these kernels on them: in C (NativeVectors: the
buffers' checks and addresses once per solve) when the library is built, else the twins (Vectors).

`LIB` is the kernel library when it is built with interior_point.c and loads (native.load_kernels), else None.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import address, load_kernels, pointers

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
_CONTIGUOUS = (8,)  # the strides of a C-contiguous float64 vector
# the ufunc reductions behind fmin's (skips nan), ndarray.max (nan when an entry is) and np.sum, without the wrappers
_fmin, _max, _sum = np.fmin.reduce, np.maximum.reduce, np.add.reduce


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
    lib.symplex_accepted_step.argtypes = [_int, _ptr, _ptr, _ptr, _double, _ptr, _ptr, _double] + [_ptr] * 4
    lib.symplex_accepted_step.restype = None
    lib.symplex_optimality.argtypes = [_int] + [_ptr] * 6 + [_int, _ptr, _int, _ptr, _ptr, _ptr]
    lib.symplex_optimality.restype = None
    lib.symplex_bound_distances.argtypes = [_int, _ptr, _ptr, _int, _ptr, _ptr, _ptr, _ptr]
    lib.symplex_bound_distances.restype = _double
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


def optimality_numpy(jt_y: np.ndarray, g: np.ndarray, zL: np.ndarray, zU: np.ndarray, dl: np.ndarray, du: np.ndarray,
                     lo: np.ndarray, up: np.ndarray, products: np.ndarray) -> tuple[float, float, float]:
    """An iteration's measures: (max |J^T y + g - zL + zU| (jt_y = J^T y, written over), the largest complementarity
    product over the lower bounds lo (indices), that over the upper bounds up), every maximum from 0 and nan when an
    entry is; the products dl zL over lo, then du zU over up, written into products."""
    np.add(jt_y, g, out=jt_y)
    np.subtract(jt_y, zL, out=jt_y)
    np.add(jt_y, zU, out=jt_y)
    n_lo = len(lo)
    np.multiply(dl.take(lo), zL.take(lo), out=products[:n_lo])
    np.multiply(du.take(up), zU.take(up), out=products[n_lo:])
    return (float(_max(np.abs(jt_y, out=jt_y), initial=0.0)), float(_max(products[:n_lo], initial=0.0)),
            float(_max(products[n_lo:], initial=0.0)))


def near_central_path_numpy(z: np.ndarray, mu: float, dist: np.ndarray) -> np.ndarray:
    """Bound multipliers z clipped in place to [mu / (1e10 dist), 1e10 mu / dist] (IPOPT's kappa_Sigma; 0 where dist
    is inf), as np.clip does it (the larger with the lower limit, then the smaller with the upper), without its
    wrappers; both limits in one work array."""
    limit = np.multiply(dist, 1e10)
    np.maximum(z, np.divide(mu, limit, out=limit), out=z)
    return np.minimum(z, np.divide(1e10 * mu, dist, out=limit), out=z)


def accepted_step_numpy(z: np.ndarray, lower: np.ndarray, upper: np.ndarray, alpha: float, dzL: np.ndarray,
                        dzU: np.ndarray, mu: float, dl: np.ndarray, du: np.ndarray, zL: np.ndarray,
                        zU: np.ndarray) -> None:
    """At the accepted point z, in place: the distances dl = z - lower, du = upper - z (inf where there is no bound)
    and the bound multipliers zL + alpha dzL, zU + alpha dzU kept near the central path over them
    (near_central_path_numpy); dzL and dzU are written over (steps used once)."""
    np.subtract(z, lower, out=dl)
    np.subtract(upper, z, out=du)
    for multiplier, step, dist in ((zL, dzL, dl), (zU, dzU, du)):
        np.multiply(step, alpha, out=step)
        np.add(multiplier, step, out=multiplier)
        near_central_path_numpy(multiplier, mu, dist)


def _vector_address(v: np.ndarray, n: int) -> int:
    """v's address after checking it is a float64 C-contiguous vector of n entries (ValueError otherwise: ctypes would
    read any memory; a vector of one entry or none may have any stride)."""
    if v.dtype.char != "d" or v.shape != (n,) or (v.strides != _CONTIGUOUS and n > 1):
        raise ValueError(f"interior point kernel: expected a float64 C-contiguous vector of length {n}, got "
                         f"{v.dtype} {v.shape} strides {v.strides}")
    return address(v)


def _step_to_bounds_c(dist_lo: np.ndarray, dist_up: np.ndarray | None, dx: np.ndarray, tau: float) -> float:
    n = len(dx)
    up = None if dist_up is None else _vector_address(dist_up, n)
    return LIB.symplex_step_to_bounds(n, _vector_address(dist_lo, n), up, _vector_address(dx, n), tau)


class Vectors:
    """The interior point's vectors over z (n entries) with m rows, for one solve, in buffers made once: lower,
    upper (the bounds, +-inf where there is none), dl, du (z's distances to them), zL, zU (the bound multipliers, 0
    where there is no bound), dzL, dzU (their Newton steps), products (optimality's: the complementarity products over
    the lower bounds, then the upper ones), terms (6, n) and rhs (n + m) (barrier_terms'); lo, up: the indices of the
    entries with a finite lower, upper bound, and the log barrier's distances over them. Each
    method runs one kernel on them (the numpy twins here; NativeVectors: the C kernels) and overwrites its outputs,
    which the caller reads until the next call."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray, m: int):
        n = len(lower)
        self.n, self.m = n, m
        self.lower, self.upper = (np.ascontiguousarray(b, dtype=np.float64) for b in (lower, upper))
        self.dl, self.du, self.zL, self.zU, self.dzL, self.dzU = (np.zeros(n) for _ in range(6))
        self.terms, self.rhs = np.empty((6, n)), np.empty(n + m)
        self.lo, self.up = (np.flatnonzero(np.isfinite(b)).astype(np.int64) for b in (self.lower, self.upper))
        self.lo_value, self.up_value = self.lower[self.lo], self.upper[self.up]
        self.products = np.empty(len(self.lo) + len(self.up))
        # the distances over the lower bounds, then the upper ones: log_barrier's work array (one log call)
        self._d = np.empty(len(self.lo) + len(self.up))
        self._d_lo, self._d_up = self._d[:len(self.lo)], self._d[len(self.lo):]

    def start(self, z: np.ndarray) -> None:
        """The distances at the start point z and the bound multipliers 1 at each bound."""
        np.subtract(z, self.lower, out=self.dl)
        np.subtract(self.upper, z, out=self.du)
        np.copyto(self.zL, np.isfinite(self.lower))
        np.copyto(self.zU, np.isfinite(self.upper))

    def distances(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x - lower over the finite lower bounds, upper - x over the finite upper bounds (new arrays)."""
        return x[self.lo] - self.lo_value, self.up_value - x[self.up]

    def log_barrier(self, x: np.ndarray) -> float:
        """sum of log(distance) over the finite lower bounds plus that over the finite upper bounds (the two sums as
        numpy's of each); -inf when x is on or outside one (a nan distance is skipped, as fmin does)."""
        if self._distances(x) <= 0:
            return -np.inf
        np.log(self._d, out=self._d)
        return float(_sum(self._d_lo) + _sum(self._d_up))

    def _distances(self, x: np.ndarray) -> float:
        """x's distances to its finite bounds into the log barrier's work array, the lower bounds' then the upper
        bounds'; their smallest (inf when there is none; nan skipped, as fmin does)."""
        x.take(self.lo, out=self._d_lo, mode="clip")  # the indices are in range: "clip" only skips a buffer
        np.subtract(self._d_lo, self.lo_value, out=self._d_lo)
        x.take(self.up, out=self._d_up, mode="clip")
        np.subtract(self.up_value, self._d_up, out=self._d_up)
        return _fmin(self._d, initial=np.inf)

    def optimality(self, jt_y: np.ndarray, g: np.ndarray) -> tuple[float, float]:
        """(max |J^T y + g - zL + zU|, the largest complementarity product) from jt_y = J^T y (written over) and the
        gradient g; the products into `products` (optimality_numpy)."""
        dual, lower, upper = optimality_numpy(jt_y, g, self.zL, self.zU, self.dl, self.du, self.lo, self.up,
                                              self.products)
        return dual, max(lower, upper)

    def step_to_bounds(self, dz: np.ndarray, tau: float) -> float:
        """The fraction-to-boundary rule for the step dz from z (step_to_bounds on dl, du)."""
        return step_to_bounds_numpy(self.dl, self.du, dz, tau)

    def barrier_terms(self, g: np.ndarray, mu: float, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(terms, rhs) of barrier_terms for the gradient g, barrier parameter mu and rows c."""
        terms, rhs = barrier_terms_numpy(g, self.zL, self.zU, self.dl, self.du, mu, c)
        self.terms[...], self.rhs[...] = terms, rhs
        return self.terms, self.rhs

    def multiplier_steps(self, dz: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, float]:
        """(dzL, dzU, alpha) of multiplier_steps for the primal step dz and the last barrier_terms."""
        dzL, dzU, alpha = multiplier_steps_numpy(self.zL, self.zU, self.terms, dz, tau)
        self.dzL[...], self.dzU[...] = dzL, dzU
        return self.dzL, self.dzU, alpha

    def accepted_step(self, z: np.ndarray, alpha: float, mu: float) -> None:
        """At the accepted point z: dl, du there and zL, zU stepped by alpha times the last multiplier_steps
        (accepted_step)."""
        accepted_step_numpy(z, self.lower, self.upper, alpha, self.dzL, self.dzU, mu, self.dl, self.du, self.zL,
                            self.zU)


class NativeVectors(Vectors):
    """Vectors whose kernels run in C on the buffers' addresses, looked up once; each call checks and looks up only
    the vectors it is given (g, c, dz, z: made by the caller)."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray, m: int):
        super().__init__(lower, upper, m)
        (self._lower, self._upper, self._dl, self._du, self._zL, self._zU, self._dzL, self._dzU, self._terms,
         self._rhs, self._lo, self._up, self._products, self._lo_value, self._up_value, self._d_at) = pointers(
            self.lower, self.upper, self.dl, self.du, self.zL, self.zU, self.dzL, self.dzU, self.terms, self.rhs,
            self.lo, self.up, self.products, self.lo_value, self.up_value, self._d)
        self._largest = np.empty(3)  # optimality's maxima
        self._largest_at = address(self._largest)

    def _distances(self, x: np.ndarray) -> float:
        return LIB.symplex_bound_distances(len(self.lo), self._lo, self._lo_value, len(self.up), self._up,
                                           self._up_value, _vector_address(x, self.n), self._d_at)

    def optimality(self, jt_y: np.ndarray, g: np.ndarray) -> tuple[float, float]:
        LIB.symplex_optimality(self.n, _vector_address(jt_y, self.n), _vector_address(g, self.n), self._zL, self._zU,
                               self._dl, self._du, len(self.lo), self._lo, len(self.up), self._up, self._products,
                               self._largest_at)
        dual, lower, upper = self._largest.tolist()
        return dual, max(lower, upper)

    def step_to_bounds(self, dz: np.ndarray, tau: float) -> float:
        return LIB.symplex_step_to_bounds(self.n, self._dl, self._du, _vector_address(dz, self.n), tau)

    def barrier_terms(self, g: np.ndarray, mu: float, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        LIB.symplex_barrier_terms(self.n, self.m, _vector_address(g, self.n), self._zL, self._zU, self._dl, self._du, mu,
                                  _vector_address(c, self.m), self._terms, self._rhs)
        return self.terms, self.rhs

    def multiplier_steps(self, dz: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, float]:
        alpha = LIB.symplex_multiplier_steps(self.n, self._zL, self._zU, self._terms, _vector_address(dz, self.n), tau,
                                             self._dzL, self._dzU)
        return self.dzL, self.dzU, alpha

    def accepted_step(self, z: np.ndarray, alpha: float, mu: float) -> None:
        LIB.symplex_accepted_step(self.n, _vector_address(z, self.n), self._lower, self._upper, alpha, self._dzL,
                                  self._dzU, mu, self._dl, self._du, self._zL, self._zU)


# the C kernels when the library is built, else their twins
step_to_bounds = _step_to_bounds_c if LIB is not None else step_to_bounds_numpy
vectors = NativeVectors if LIB is not None else Vectors

"""ctypes bindings of the shots' row kernels: car_step.c (the car's step rows, their Jacobian and exact Hessian over
all steps) and planar_clearance.c (a planar vehicle's body spheres against an obstacle of any shot shape).

`LIB` is the kernel library when it is built with both and loads (native.load_kernels), else None; then
addon/solver/shots/car.py uses its numpy twin (CarDynamics.residual_numpy, residual_hessian_numpy) and
transcription.py the numpy distances of obstacles.py. The wrappers make their inputs float64 / int64 and
C-contiguous and allocate the outputs (or write the rows into given ones).
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels, pointers

_int, _ptr = ctypes.c_int64, ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_planar_clearance"):
        return None
    lib.symplex_planar_clearance.argtypes = [_int, _int, _ptr, _int, _ptr, _int] + [_ptr] * 7
    lib.symplex_planar_clearance.restype = None
    lib.symplex_car_step.argtypes = [_int] + [_ptr] * 6
    lib.symplex_car_step.restype = None
    lib.symplex_car_step_hessian.argtypes = [_int] + [_ptr] * 6
    lib.symplex_car_step_hessian.restype = None
    return lib


LIB = _load()


def _inputs(W: np.ndarray, first: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    K = len(W)
    if W.shape != (K, 3, 6) or first.shape != (K,) or h.shape != (K,):
        raise ValueError(f"car step: expected W (K, 3, 6), first (K,), h (K,); got {W.shape}, {first.shape}, "
                         f"{h.shape}")
    return (np.ascontiguousarray(W, np.float64), np.ascontiguousarray(first, np.int64),
            np.ascontiguousarray(h, np.float64))


def _outputs(out: tuple[np.ndarray, np.ndarray], jacobian_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Given output arrays (values (K, r), Jacobian (K, r, w)) checked for the kernel to write."""
    r, J = out
    if J.shape != jacobian_shape or r.shape != jacobian_shape[:2] or not all(
            a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable for a in out):
        raise ValueError(f"expected writable C-contiguous float64 outputs {jacobian_shape[:2]} and {jacobian_shape}, "
                         f"got {r.dtype} {r.shape} and {J.dtype} {J.shape}")
    return r, J


def hessian(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum_i y[:, i] d2 r_i over the window slots that enter nonlinearly (car.py CarDynamics.hessian_slots):
    (K, 9, 9)."""
    W, first, h = _inputs(W, first, h)
    y = np.ascontiguousarray(y, np.float64)
    if y.shape != (len(W), 4):
        raise ValueError(f"car step Hessian: expected y ({len(W)}, 4), got {y.shape}")
    out = np.empty((len(W), 9, 9))
    LIB.symplex_car_step_hessian(len(W), *pointers(W, first, h, par, y, out))
    return out


def step(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray,
         out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Residuals r (K, 4) and dr / d(window, h) (K, 4, 19): into out = (r, J) when given (float64, C-contiguous)."""
    W, first, h = _inputs(W, first, h)
    r, J = (np.empty((len(W), 4)), np.empty((len(W), 4, 19))) if out is None else _outputs(out, (len(W), 4, 19))
    LIB.symplex_car_step(len(W), *pointers(W, first, h, par, r, J))
    return r, J


class PlanarClearance:
    """The clearance rows of body spheres at planar offsets (m, 2) against one obstacle: kind and shape parameters
    of obstacles.shape_parameters, centre (3,), R (3, 3) world from local."""

    def __init__(self, offsets: np.ndarray, kind: int, shape: np.ndarray, centre: np.ndarray, R: np.ndarray):
        if LIB is None:
            raise RuntimeError("planar clearance: the C kernels are not built (make kernels)")
        self._lib = LIB
        self.offsets = np.ascontiguousarray(offsets, np.float64).reshape(-1, 2)
        self.kind = kind
        self.centre, self.R, self.shape = (np.ascontiguousarray(a, np.float64) for a in (centre, R, shape))
        offsets, centre, R, shape = pointers(self.offsets, self.centre, self.R, self.shape)
        self._args = (len(self.offsets), offsets, self.kind, centre, R, shape)

    def rows(self, S: np.ndarray, out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Distances (K, m) and their gradients over S (K, m, ns): into out = (d, J) when given (float64,
        C-contiguous)."""
        S = np.ascontiguousarray(S, np.float64)
        K, ns = S.shape
        shape = (K, len(self.offsets), ns)
        d, J = (np.empty(shape[:2]), np.empty(shape)) if out is None else _outputs(out, shape)
        s, d_p, j_p = pointers(S, d, J)
        self._lib.symplex_planar_clearance(K, ns, s, *self._args, None, d_p, j_p, None)
        return d, J

    def hessian(self, S: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """sum_j weights[:, j] d2 d_j / dS2 (K, ns, ns)."""
        S = np.ascontiguousarray(S, np.float64)
        weights = np.ascontiguousarray(weights, np.float64)
        K, ns = S.shape
        if weights.shape != (K, len(self.offsets)):
            raise ValueError(f"planar clearance: expected weights {(K, len(self.offsets))}, got {weights.shape}")
        d = np.empty((K, len(self.offsets)))
        H = np.empty((K, ns, ns))
        self._lib.symplex_planar_clearance(K, ns, *pointers(S), *self._args, *pointers(weights, d), None,
                                           *pointers(H))
        return H

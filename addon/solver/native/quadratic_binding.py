"""ctypes binding of quadratic_costs.c: QuadraticHessian, the Hessian's COO data of the vehicle shots' quadratic
costs in one call (numpy twin: addon/solver/shots/transcription.py QuadraticCosts.hessian_into_numpy, the same
products in the same order: the same bits).

`LIB` is the kernel library when it is built with quadratic_costs.c and loads (native.load_kernels), else None.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import address, load_kernels, pointers

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_quadratic_hessian"):
        return None
    lib.symplex_quadratic_hessian.argtypes = [_int, _ptr, _ptr, _ptr, _int, _ptr, _ptr, _ptr] + [_double] * 4 + [_ptr]
    lib.symplex_quadratic_hessian.restype = None
    return lib


LIB = _load()


class QuadraticHessian:
    """(e, d, scale, h, out) -> out[:-1] written with the quadratic costs' Hessian entries but (h, h) (see
    symplex_quadratic_hessian) for the fixed coefficients kee, ke (E,) and kss, ks (S,), whose addresses are looked up
    once here; e (E,), d (S,) and out (3 E + 8 S + 1,) are checked at each call."""

    def __init__(self, kee: np.ndarray, ke: np.ndarray, kss: np.ndarray, ks: np.ndarray):
        self._coefficients = tuple(np.ascontiguousarray(a, np.float64) for a in (kee, ke, kss, ks))
        kee, ke, kss, ks = self._coefficients
        if kee.shape != ke.shape or kss.shape != ks.shape:
            raise ValueError(f"QuadraticHessian: expected kee, ke of one shape and kss, ks of another, got {kee.shape}"
                             f" {ke.shape} {kss.shape} {ks.shape}")
        self.E, self.S = len(kee), len(kss)
        self._effort, self._smooth = pointers(kee, ke), pointers(kss, ks)

    def __call__(self, e: np.ndarray, d: np.ndarray, scale: float, h: float, out: np.ndarray) -> None:
        for name, a, size in (("e", e, self.E), ("d", d, self.S), ("out", out, 3 * self.E + 8 * self.S + 1)):
            if a.shape != (size,) or a.dtype != np.float64 or not a.flags.c_contiguous:
                raise ValueError(f"QuadraticHessian: expected {name} float64 C-contiguous ({size},), got {a.dtype} "
                                 f"{a.shape}")
        LIB.symplex_quadratic_hessian(self.E, *self._effort, address(e), self.S, *self._smooth, address(d), scale,
                                      scale * h, scale / h, scale / (h * h), address(out))

"""ctypes bindings of car_step.c: the car's shot step rows, their Jacobian and exact Hessian over all steps.

`LIB` is the kernel library when it is built with car_step.c and loads (native.load_kernels), else None;
addon/solver/shots/car.py then uses its numpy twin (CarDynamics.residual_numpy, residual_hessian_numpy). The
wrappers make their inputs float64 / int64 and C-contiguous and allocate the outputs.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels

_int, _ptr = ctypes.c_int64, ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_car_step_hessian"):
        return None
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


def step(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray,
         jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Residuals r (K, 4) and, with jacobian, dr / d(window, h) (K, 4, 19)."""
    W, first, h = _inputs(W, first, h)
    r = np.empty((len(W), 4))
    J = np.empty((len(W), 4, 19)) if jacobian else None
    LIB.symplex_car_step(len(W), W.ctypes.data, first.ctypes.data, h.ctypes.data, par.ctypes.data, r.ctypes.data,
                         None if J is None else J.ctypes.data)
    return r, J


def hessian(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum_i y[:, i] d2 r_i over (window, h): (K, 19, 19)."""
    W, first, h = _inputs(W, first, h)
    y = np.ascontiguousarray(y, np.float64)
    if y.shape != (len(W), 4):
        raise ValueError(f"car step Hessian: expected y ({len(W)}, 4), got {y.shape}")
    out = np.empty((len(W), 19, 19))
    LIB.symplex_car_step_hessian(len(W), W.ctypes.data, first.ctypes.data, h.ctypes.data, par.ctypes.data,
                                 y.ctypes.data, out.ctypes.data)
    return out

"""ctypes binding of holonomic_step.c (symplex_kernels.h `symplex_holonomic_step`): the holonomic shot vehicles'
step rows with their Jacobian, and the Hessian of y . r, in C.

`LIB` is the kernel library when it is built with holonomic_step.c and loads (native.load_kernels), else None;
shots/holonomic.py then uses its numpy twin. `HolonomicKernel(...)` keeps the vehicle's parameters in the C
struct; its calls check the window's shape and copy inputs to contiguous float64.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double


class _Holonomic(ctypes.Structure):
    """Mirror of symplex_holonomic in symplex_kernels.h."""

    _fields_ = [("kind", _int), ("nc", _int), ("ncol", _int), ("col_xy", _ptr), ("inertia", _double * 36),
                ("units", _double * 4), ("mass", _double), ("gravity", _double * 3), ("rotor_height", _double),
                ("tail_arm", _double), ("thrust", _double * 12), ("keel", _double), ("hull_height", _double),
                ("hull_area", _double), ("water_density", _double), ("drag", _double * 3), ("current", _double * 3),
                ("corners", _double * 12), ("cushion_height", _double), ("cushion_stiffness", _double),
                ("cushion_damping", _double), ("skirt_drag", _double * 6)]


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_holonomic_step"):
        return None
    lib.symplex_holonomic_struct_size.restype = _int
    if lib.symplex_holonomic_struct_size() != ctypes.sizeof(_Holonomic):
        return None
    lib.symplex_holonomic_step.argtypes = [ctypes.POINTER(_Holonomic), _int, _int] + [_ptr] * 7
    lib.symplex_holonomic_step.restype = _int
    return lib


LIB = _load()
KINDS = {"helicopter": 0, "boat": 1, "hovercraft": 2}


class HolonomicKernel:
    """A holonomic vehicle's parameters as the C struct. kind: a KINDS key; units (nc,) physical control per stage
    variable; helicopter: rotor_height, tail_arm; boat: col_xy (n, 2), keel, hull_height, hull_area,
    water_density, drag (3,), current (3,), thrust (6, nc); hovercraft: corners (4, 3), cushion_height,
    cushion_stiffness, cushion_damping, skirt_drag (6,), thrust (6, nc)."""

    def __init__(self, kind: str, inertia: np.ndarray, units: np.ndarray, mass: float, gravity: np.ndarray,
                 **params) -> None:
        if LIB is None:
            raise RuntimeError("the Symplex C kernels are not loaded (run `make kernels`); use the numpy twin")
        s = _Holonomic()
        s.kind, s.nc = KINDS[kind], len(units)
        s.inertia[:] = np.asarray(inertia, float).ravel()
        s.units[:len(units)] = units
        s.mass, s.gravity[:] = mass, np.asarray(gravity, float)
        if kind == "helicopter":
            s.rotor_height, s.tail_arm = params["rotor_height"], params["tail_arm"]
        elif kind == "hovercraft":
            s.thrust[:6 * len(units)] = np.asarray(params["thrust"], float).ravel()
            s.corners[:] = np.asarray(params["corners"], float).ravel()
            s.cushion_height, s.cushion_stiffness = params["cushion_height"], params["cushion_stiffness"]
            s.cushion_damping, s.skirt_drag[:] = params["cushion_damping"], np.asarray(params["skirt_drag"], float)
        else:
            self._col_xy = np.ascontiguousarray(params["col_xy"], dtype=np.float64)
            s.ncol, s.col_xy = len(self._col_xy), self._col_xy.ctypes.data
            s.thrust[:6 * len(units)] = np.asarray(params["thrust"], float).ravel()
            s.keel, s.hull_height, s.hull_area = params["keel"], params["hull_height"], params["hull_area"]
            s.water_density = params["water_density"]
            s.drag[:], s.current[:] = np.asarray(params["drag"], float), np.asarray(params["current"], float)
        self._struct, self.nw = s, 13 + len(units)
        self._ptr = ctypes.pointer(s)

    def _inputs(self, W: np.ndarray, first: np.ndarray, h: np.ndarray):
        K = len(W)
        if W.shape != (K, 3, self.nw) or first.shape != (K,) or h.shape != (K,):
            raise ValueError(f"holonomic step kernel: expected W (K, 3, {self.nw}), first (K,), h (K,); got "
                             f"{W.shape}, {first.shape}, {h.shape}")
        return (K, np.ascontiguousarray(W, dtype=np.float64), np.ascontiguousarray(first, dtype=np.int64),
                np.ascontiguousarray(h, dtype=np.float64))

    def residual(self, W: np.ndarray, first: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Rows r (K, 13), their Jacobian (K, 13, 3 nw + 1) with h last, and the count of windows outside the
        boat's model (their wrench rows unset)."""
        K, W, first, h = self._inputs(W, first, h)
        r, J = np.empty((K, 13)), np.empty((K, 13, 3 * self.nw + 1))
        outside = LIB.symplex_holonomic_step(self._ptr, K, 1, W.ctypes.data, first.ctypes.data, h.ctypes.data, None,
                                             r.ctypes.data, J.ctypes.data, None)
        return r, J, outside

    def hessian(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
        """sum_i y_i d2 r_i (K, 3 nw + 1, 3 nw + 1) and the count of windows outside the boat's model."""
        K, W, first, h = self._inputs(W, first, h)
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.shape != (K, 13):
            raise ValueError(f"holonomic step kernel: expected y (K, 13), got {y.shape}")
        r, H = np.empty((K, 13)), np.empty((K, 3 * self.nw + 1, 3 * self.nw + 1))
        outside = LIB.symplex_holonomic_step(self._ptr, K, 2, W.ctypes.data, first.ctypes.data, h.ctypes.data,
                                             y.ctypes.data, r.ctypes.data, None, H.ctypes.data)
        return H, outside

"""ctypes bindings of the shots' row kernels: car_step.c (the car's step rows, their Jacobian and exact Hessian over
all steps) and planar_clearance.c (a planar vehicle's body spheres against an obstacle of any shot shape).

`LIB` is the kernel library when it is built with both and loads (native.load_kernels), else None; then
addon/solver/shots/car.py uses its numpy twin (CarDynamics.residual_numpy, residual_hessian_numpy) and
transcription.py the numpy distances of obstacles.py. The wrappers make their inputs float64 / int64 and
C-contiguous (the car step's stage columns and h are read in place when their rows are: the window's (K, 19) columns)
and allocate the outputs (or write the rows into given ones). The *_call functions and PlanarClearance.*_call bind a
kernel to arrays that live as long as their caller's (a transcription's buffers): the checks and the addresses once,
each call of the result only runs the kernel on the arrays' current values.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import Callable

import numpy as np

from . import load_kernels, pointers

_int, _ptr = ctypes.c_int64, ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_planar_clearance"):
        return None
    lib.symplex_planar_clearance.argtypes = [_int, _int, _ptr, _int, _ptr, _int] + [_ptr] * 8 + [_int]
    lib.symplex_planar_clearance.restype = None
    lib.symplex_car_step.argtypes = [_int, _ptr, _int, _ptr, _ptr, _int] + [_ptr] * 3
    lib.symplex_car_step.restype = None
    lib.symplex_car_step_hessian.argtypes = [_int, _ptr, _int, _ptr, _ptr, _int] + [_ptr] * 4 + [_int]
    lib.symplex_car_step_hessian.restype = None
    return lib


LIB = _load()


def _rows_of(a: np.ndarray, inner: tuple[int, ...], size: int) -> tuple[np.ndarray, int]:
    """a (K, ...) float64 as the kernels read it: (a or a C-contiguous copy, the stride in doubles between its rows
    of size doubles). A view whose rows are each contiguous (inner: its strides after the first, in bytes), such as
    the window's stage columns X[:, :18] of X (K, 19), is read in place."""
    if (a.dtype == np.float64 and a.flags.aligned and a.strides[1:] == inner and len(a) and a.strides[0] > 0
            and a.strides[0] % 8 == 0):
        return a, a.strides[0] // 8
    return np.ascontiguousarray(a, np.float64), size


def _inputs(W: np.ndarray, first: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, int]:
    """W (K, 3, 6) and its row stride, first (K,) as int64, h (K,) and its stride, as the kernels read them (strided
    float64 views in place), to be kept alive through the call."""
    K = len(W)
    if W.shape != (K, 3, 6) or first.shape != (K,) or h.shape != (K,):
        raise ValueError(f"car step: expected W (K, 3, 6), first (K,), h (K,); got {W.shape}, {first.shape}, "
                         f"{h.shape}")
    W, w_stride = _rows_of(W, (48, 8), 18)
    h, h_stride = _rows_of(h, (), 1)
    return W, w_stride, np.ascontiguousarray(first, np.int64), h, h_stride


def _arguments(W: np.ndarray, first: np.ndarray, h: np.ndarray, rest: tuple[np.ndarray, ...],
               sizes: tuple[int, ...]) -> tuple[tuple[np.ndarray, ...], tuple]:
    """(the arrays the kernel reads, to be kept alive through its calls; its arguments (K, W, its stride, first, h,
    its stride, *rest, *sizes)) over the inputs as _inputs makes them."""
    W, w_stride, first, h, h_stride = _inputs(W, first, h)
    w_p, first_p, h_p, *rest_p = pointers(W, first, h, *rest)
    return (W, first, h, *rest), (len(W), w_p, w_stride, first_p, h_p, h_stride, *rest_p, *sizes)


def _call(kernel, W: np.ndarray, first: np.ndarray, h: np.ndarray, *rest: np.ndarray, sizes: tuple[int, ...] = ()):
    """kernel(K, W, its stride, first, h, its stride, *rest, *sizes) over the inputs as _inputs makes them."""
    arrays, args = _arguments(W, first, h, rest, sizes)  # arrays: alive until the kernel returns
    kernel(*args)


def _bound(kernel, W: np.ndarray, first: np.ndarray, h: np.ndarray, *rest: np.ndarray,
           sizes: tuple[int, ...] = ()) -> Callable[[], None]:
    """kernel over fixed arrays, its arguments made once: each call reads the current values of W and h (views read in
    place: ValueError for arrays that would be copied, whose copy would not see later values)."""
    kept, args = _arguments(W, first, h, rest, sizes)
    if kept[0] is not W or kept[2] is not h:
        raise ValueError("car step: a bound call reads W and h in place: float64 with contiguous rows, got "
                         f"{W.dtype} strides {W.strides} and {h.dtype} strides {h.strides}")
    return _holding(kernel, args, kept)


def _holding(kernel, args: tuple, arrays: tuple[np.ndarray, ...]) -> Callable[[], None]:
    """kernel(*args) as a call without arguments, holding the arrays whose addresses args pass (alive as long as the
    call is)."""
    call = partial(kernel, *args)
    call.arrays = arrays
    return call


def _fixed(a: np.ndarray, shape: tuple[int, ...], what: str, output: bool = False) -> np.ndarray:
    """a, checked to be a float64 C-contiguous array of the shape (writable: an output), one a bound kernel reads or
    writes in place."""
    if (a.shape != shape or a.dtype != np.float64 or not a.flags.c_contiguous
            or (output and not a.flags.writeable)):
        raise ValueError(f"{what}: expected a {'writable ' if output else ''}float64 C-contiguous array {shape}, got "
                         f"{a.dtype} {a.shape}")
    return a


def _picked(positions: np.ndarray | None, K: int, width: int, what: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """The flat positions (P,) (row width + column) of the entries of each instance's (width, width) Hessian a kernel
    writes, as it reads them, and the output's shape: (K, P), or for positions None every entry in order, (K, width,
    width)."""
    if positions is None:
        return np.arange(width * width, dtype=np.int64), (K, width, width)
    positions = np.ascontiguousarray(positions, np.int64)
    if positions.ndim != 1 or np.any(positions < 0) or np.any(positions >= width * width):
        raise ValueError(f"{what}: expected positions (P,) below {width * width}, got {positions}")
    return positions, (K, len(positions))


def _outputs(out: tuple[np.ndarray, np.ndarray], jacobian_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Given output arrays (values (K, r), Jacobian (K, r, w)) checked for the kernel to write."""
    r, J = out
    return _fixed(r, jacobian_shape[:2], "kernel rows", True), _fixed(J, jacobian_shape, "kernel Jacobian", True)


def hessian(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum_i y[:, i] d2 r_i over the window slots that enter nonlinearly (car.py CarDynamics.hessian_slots):
    (K, 9, 9)."""
    y = np.ascontiguousarray(y, np.float64)
    if y.shape != (len(W), 4):
        raise ValueError(f"car step Hessian: expected y ({len(W)}, 4), got {y.shape}")
    every, shape = _picked(None, len(W), 9, "car step Hessian")
    out = np.empty(shape)
    _call(LIB.symplex_car_step_hessian, W, first, h, par, y, out, every, sizes=(len(every),))
    return out


def step(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray,
         out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Residuals r (K, 4) and dr / d(window, h) (K, 4, 19): into out = (r, J) when given (float64, C-contiguous)."""
    r, J = (np.empty((len(W), 4)), np.empty((len(W), 4, 19))) if out is None else _outputs(out, (len(W), 4, 19))
    _call(LIB.symplex_car_step, W, first, h, par, r, J)
    return r, J


def step_call(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray,
              out: tuple[np.ndarray, np.ndarray]) -> Callable[[], None]:
    """step(W, first, h, par, out) bound to these arrays (W, h read in place: _bound)."""
    return _bound(LIB.symplex_car_step, W, first, h, _fixed(par, (6,), "car step parameters"),
                  *_outputs(out, (len(W), 4, 19)))


def hessian_call(W: np.ndarray, first: np.ndarray, h: np.ndarray, par: np.ndarray, y: np.ndarray,
                 out: np.ndarray, positions: np.ndarray | None = None) -> Callable[[], None]:
    """hessian(W, first, h, par, y) written into out (K, 9, 9), or with positions (P,) its entries at those flat
    positions of each (9, 9) block into out (K, P); bound to these arrays (W, h read in place: _bound; y and out
    C-contiguous)."""
    K = len(W)
    positions, shape = _picked(positions, K, 9, "car step Hessian")
    return _bound(LIB.symplex_car_step_hessian, W, first, h, _fixed(par, (6,), "car step parameters"),
                  _fixed(y, (K, 4), "car step Hessian weights"), _fixed(out, shape, "car step Hessian", True),
                  positions, sizes=(len(positions),))


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
        self._lib.symplex_planar_clearance(K, ns, s, *self._args, None, d_p, j_p, None, None, 0)
        return d, J

    def hessian(self, S: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """sum_j weights[:, j] d2 d_j / dS2 (K, ns, ns)."""
        S = np.ascontiguousarray(S, np.float64)
        weights = np.ascontiguousarray(weights, np.float64)
        K, ns = S.shape
        if weights.shape != (K, len(self.offsets)):
            raise ValueError(f"planar clearance: expected weights {(K, len(self.offsets))}, got {weights.shape}")
        every, shape = _picked(None, K, ns, "planar clearance Hessian")
        H = np.empty(shape)
        s, w, h, p = pointers(S, weights, H, every)
        self._lib.symplex_planar_clearance(K, ns, s, *self._args, w, None, None, h, p, len(every))
        return H

    def rows_call(self, S: np.ndarray, out: tuple[np.ndarray, np.ndarray]) -> Callable[[], None]:
        """rows(S, out) bound to these arrays (S (K, ns) float64 C-contiguous: read at each call)."""
        K, ns = S.shape
        S = _fixed(S, (K, ns), "planar clearance states")
        d, J = _outputs(out, (K, len(self.offsets), ns))
        return _holding(self._lib.symplex_planar_clearance, (K, ns, *pointers(S), *self._args, None, *pointers(d, J),
                                                             None, None, 0), (S, d, J))

    def hessian_call(self, S: np.ndarray, weights: np.ndarray, out: np.ndarray,
                     positions: np.ndarray | None = None) -> Callable[[], None]:
        """hessian(S, weights) written into out (K, ns, ns), or with positions (P,) its entries at those flat
        positions of each (ns, ns) block into out (K, P); bound to these arrays (all float64 C-contiguous: S and
        weights read at each call)."""
        K, ns = S.shape
        positions, shape = _picked(positions, K, ns, "planar clearance Hessian")
        arrays = (_fixed(S, (K, ns), "planar clearance states"),
                  _fixed(weights, (K, len(self.offsets)), "planar clearance weights"),
                  _fixed(out, shape, "planar clearance Hessian", True), positions)
        s, w, h, p = pointers(*arrays)
        return _holding(self._lib.symplex_planar_clearance, (K, ns, s, *self._args, w, None, None, h, p,
                                                             len(positions)), arrays)

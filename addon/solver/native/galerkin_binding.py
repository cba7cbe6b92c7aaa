"""ctypes binding of galerkin_step.c: the whole Newton loop of one Galerkin step (order 2s, s = 2..4) in C.

`LIB` is the kernel library when it is built with galerkin_step.c and loads (native.load_kernels), else None.
`usable(model)` says whether the C step runs the model: every tree of plain joints (rotations, translations),
loops, springs, dampers, servos, keyed torques and user forces included; trees with ball or free joints (per-step
charts) run in numpy. tree/galerkin.py picks `GalerkinStepper` when usable and is its reference and fallback.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

import numpy as np

from . import _Tree, load_kernels, tree_struct

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_galerkin_step"):
        return None
    lib.symplex_galerkin_scratch_size.argtypes = [ctypes.POINTER(_Tree), _int, _int, _int]
    lib.symplex_galerkin_scratch_size.restype = _int
    # tree, s, r, weight, P, D, nsel, rows, torque, force_vector, q1, p1, dt, tol, stall, max_iterations,
    # X, lam, p2, stats, iterations, scratch
    lib.symplex_galerkin_step.argtypes = [ctypes.POINTER(_Tree), _int, _int] + [_ptr] * 3 + [_int] + [_ptr] * 5 \
        + [_double, _double, _double, _int] + [_ptr] * 6
    lib.symplex_galerkin_step.restype = _int
    return lib


LIB = _load()


def usable(model) -> bool:
    """True when the C Galerkin step can run this TreeModel (kernels loaded, no ball or free-joint charts)."""
    return LIB is not None and len(model.ball_dofs) == 0


class GalerkinStep(NamedTuple):
    """Result of one C Galerkin step: the last Newton iterate X (s, nq) = x^1..x^s and lam (s nsel), p_end (nq,)
    = Z^s there, Newton updates made, worst scaled row (galerkin.py's convergence measure), status
    (native.CONVERGED, NOT_CONVERGED, SINGULAR, NOT_FINITE), the directions' multiply-adds and the energy
    after a converged step of a model without loop rows (galerkin.energy; nan otherwise)."""

    X: np.ndarray
    lam: np.ndarray
    p_end: np.ndarray
    iterations: int
    worst: float
    status: int
    flops: int
    energy: float


def _f64(x, shape: tuple[int, ...], name: str) -> np.ndarray:
    out = np.ascontiguousarray(x, dtype=np.float64)
    if out.shape != shape:
        raise ValueError(f"GalerkinStepper.step: {name} must have shape {shape}, got {out.shape}")
    return out


class GalerkinStepper:
    """Galerkin steps of one TreeModel and one rule (galerkin_rule.Rule) in C: the model's arrays, the rule's
    weights and interpolation matrices and the scratch, made once. Raises RuntimeError unless usable(model)."""

    def __init__(self, model, ru) -> None:
        if not usable(model):
            raise RuntimeError("the C Galerkin step needs the Symplex kernels (`make kernels`) and a tree without "
                               "ball or free joints; use tree/galerkin.py's numpy path")
        self.nq, self.nrow, self.nforce = model.nq, model.nrow, len(model.force_frame)
        self.s, self.r = ru.s, len(ru.c)
        self._arrays, self._tree = tree_struct(model)
        self._tree_ptr = ctypes.pointer(self._tree)
        self._rule = [np.ascontiguousarray(a, dtype=np.float64) for a in (ru.w, ru.P, ru.D)]
        self._scratch: dict[int, np.ndarray] = {}

    def step(self, rows: np.ndarray, torque: np.ndarray, force_vector: np.ndarray, q1: np.ndarray, p1: np.ndarray,
             dt: float, tol: float, stall: float, max_iterations: int, X: np.ndarray, lam: np.ndarray) -> GalerkinStep:
        """Newton from the guess (X (s, nq), lam (s nsel)) for the step from (q1, p1) (galerkin._newton);
        torque (r, nq) and force_vector (r, nforce, 3) at the node times; rows (nsel,) the kept loop rows."""
        s, r, nq = self.s, self.r, self.nq
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        nsel = len(rows)
        if nsel and (rows.min() < 0 or rows.max() >= self.nrow):
            raise ValueError(f"GalerkinStepper.step: rows must index the model's {self.nrow} loop rows, got {rows}")
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"GalerkinStepper.step: time step dt must be positive, got {dt}")
        torque = _f64(torque, (r, nq), "torque")
        force_vector = _f64(force_vector, (r, self.nforce, 3), "force_vector")
        q1, p1 = _f64(q1, (nq,), "q1"), _f64(p1, (nq,), "p1")
        X = _f64(X, (s, nq), "X").copy()
        lam = _f64(lam, (s * nsel,), "lam").copy()
        if nsel not in self._scratch:
            self._scratch[nsel] = np.zeros(LIB.symplex_galerkin_scratch_size(self._tree_ptr, s, r, nsel))
        p2, stats, iterations = np.zeros(nq), np.zeros(3), np.zeros(1, dtype=np.int64)
        w, P, D = self._rule
        status = LIB.symplex_galerkin_step(
            self._tree_ptr, s, r, w.ctypes.data, P.ctypes.data, D.ctypes.data, nsel, rows.ctypes.data,
            torque.ctypes.data, force_vector.ctypes.data, q1.ctypes.data, p1.ctypes.data, float(dt), float(tol),
            float(stall), int(max_iterations), X.ctypes.data, lam.ctypes.data, p2.ctypes.data, stats.ctypes.data,
            iterations.ctypes.data, self._scratch[nsel].ctypes.data)
        return GalerkinStep(X, lam, p2, int(iterations[0]), float(stats[0]), int(status), int(stats[1]),
                            float(stats[2]))

"""ctypes binding of galerkin_step.c: the whole Newton loop of one Galerkin step (order 2s, s = 2..4) in C.

`LIB` is the kernel library when it is built with galerkin_step.c and loads (native.load_kernels), else None.
`usable(model)` says whether the C step runs the model: every tree of plain joints (rotations, translations) and
ball and free joints (their per-step exponential charts), loops, springs (ball springs too), dampers, servos,
keyed torques and user forces included. tree/galerkin.py picks `GalerkinStepper` when usable and is its reference
and fallback.
"""

from __future__ import annotations

import ctypes
import math
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
    # tree, s, r, weight, P, D, nsel, rows, torque, force_vector, q1, p1, dt, tol, stall, reuse, max_iterations,
    # carry, X, lam, p2, stats, iterations, scratch
    lib.symplex_galerkin_step.argtypes = [ctypes.POINTER(_Tree), _int, _int] + [_ptr] * 3 + [_int] + [_ptr] * 5 \
        + [_double] * 4 + [_int] * 2 + [_ptr] * 6
    lib.symplex_galerkin_step.restype = _int
    return lib


LIB = _load()


def usable(model) -> bool:
    """True when the C Galerkin step can run this TreeModel (the kernels are loaded)."""
    return LIB is not None


class GalerkinStep(NamedTuple):
    """Result of one C Galerkin step: the last Newton iterate X (s, nq) = x^1..x^s and lam (s nsel), p_end (nq,)
    = Z^s there, Newton updates made, worst scaled row (galerkin.py's convergence measure), status
    (native.CONVERGED, NOT_CONVERGED, SINGULAR, NOT_FINITE), the directions' multiply-adds, the energy
    after a converged step of a model without loop rows (galerkin.energy; nan otherwise), the Newton matrices
    factored (fewer than the updates where the simplified steps reused one) and all the step's control points
    (s + 1, nq) = (q1, X), of which X is a view."""

    X: np.ndarray
    lam: np.ndarray
    p_end: np.ndarray
    iterations: int
    worst: float
    status: int
    flops: int
    energy: float
    factorizations: int
    points: np.ndarray


class GalerkinStepper:
    """Galerkin steps of one TreeModel and one rule (galerkin_rule.Rule) in C: the model's arrays, the rule's
    weights and interpolation matrices, the input and output buffers and the scratch, made once with their
    addresses (numpy's .ctypes costs microseconds per array). `factor_dt`: the step of the factor that the last
    factoring call without loop rows left in the scratch (None before one), which step(carry=k) solves the
    first k updates with at that dt on a tree without charts (galerkin.newton's carried factor). Raises RuntimeError
    unless usable(model)."""

    def __init__(self, model, ru) -> None:
        if not usable(model):
            raise RuntimeError("the C Galerkin step needs the Symplex kernels (`make kernels`); use tree/galerkin.py's "
                               "numpy path")
        self.nq, self.nrow, self.nforce = model.nq, model.nrow, len(model.force_frame)
        self.s, self.r = ru.s, len(ru.c)
        s, r, nq = self.s, self.r, self.nq
        self._arrays, self._tree = tree_struct(model)
        self.nball = len(model.ball_dofs)
        self._placement0 = np.array(model.dof_placement)
        self._ball_first = np.array(model.ball_dofs[:, 0], dtype=np.int64)
        # the kernel reads each chart (C1) from its placement, the rest rotation through the placement at q = 0
        # (symplex_kernels.h ball_rest), as native.NativeStepper
        self._arrays["ball_rest"][...] = self._placement0[self._ball_first, :3, :3] @ model.ball_rest
        self._tree_ptr = ctypes.pointer(self._tree)
        self._rule = [np.ascontiguousarray(a, dtype=np.float64) for a in (ru.w, ru.P, ru.D)]
        self._inputs = {"torque": np.zeros((r, nq)), "force_vector": np.zeros((r, self.nforce, 3)),
                        "q1": np.zeros(nq), "p1": np.zeros(nq)}
        self._force_vector = np.array(model.force_vector, dtype=np.float64).reshape(self.nforce, 3)
        self._inputs["force_vector"][...] = self._force_vector
        self._unkeyed = True  # torque and force_vector hold the unkeyed model's constants (0, model.force_vector)
        self._outputs = {"X": np.zeros((s, nq)), "lam": np.zeros(s * self.nrow), "p2": np.zeros(nq),
                         "stats": np.zeros(4), "iterations": np.zeros(1, dtype=np.int64)}
        self._rows = np.zeros(self.nrow, dtype=np.int64)
        self._rows_address = self._rows.ctypes.data
        self._rule_addresses = [a.ctypes.data for a in self._rule]
        self._in_addresses = [a.ctypes.data for a in self._inputs.values()]
        self._out_addresses = [a.ctypes.data for a in self._outputs.values()]
        self._scratch: dict[int, tuple[np.ndarray, int]] = {}
        self.factor_dt: float | None = None

    def step(self, rows: np.ndarray, torque: np.ndarray | None, force_vector: np.ndarray | None, q1: np.ndarray,
             p1: np.ndarray,
             dt: float, tol: float, stall: float, reuse: float, max_iterations: int, X: np.ndarray,
             lam: np.ndarray, charts: np.ndarray | None = None, carry: int = 0) -> GalerkinStep:
        """Newton from the guess (X (s, nq), lam (s nsel)) for the step from (q1, p1) (galerkin.newton, its stall
        and reuse factors); torque (r, nq) and force_vector (r, nforce, 3) at the node times (both None: no keyed
        torques, the model's constant force vectors: nothing to copy in a step); rows (nsel,) the kept
        loop rows; charts (nball, 3, 3) the step's first charts C1 (chart entries of q1 are 0, of X the xi^a);
        carry: the first `carry` updates solve with the factor left at factor_dt when that is dt (class docstring).
        Inputs of any real dtype and layout are copied in after a shape check; none is modified."""
        rows = np.asarray(rows)
        nsel = len(rows)
        if rows.ndim != 1 or (nsel and rows.dtype.kind not in "iu"):
            raise ValueError(f"GalerkinStepper.step: rows must be a 1-d integer array, got {rows.dtype} {rows.shape}")
        if nsel and (rows.min() < 0 or rows.max() >= self.nrow):
            raise ValueError(f"GalerkinStepper.step: rows must index the model's {self.nrow} loop rows, got {rows}")
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"GalerkinStepper.step: time step dt must be positive, got {dt}")
        ins, outs = self._inputs, self._outputs
        if torque is None and force_vector is None:
            if not self._unkeyed:
                ins["torque"][...] = 0.0
                ins["force_vector"][...] = self._force_vector
                self._unkeyed = True
        else:
            _copy_in(ins["torque"], "torque", torque)
            _copy_in(ins["force_vector"], "force_vector", force_vector)
            self._unkeyed = False
        _copy_in(ins["q1"], "q1", q1)
        _copy_in(ins["p1"], "p1", p1)
        _copy_in(outs["X"], "X", X)
        if nsel:
            _copy_in(outs["lam"][:self.s * nsel], "lam", lam)
            self._rows[:nsel] = rows
        elif np.shape(lam) != (0,):
            raise ValueError(f"GalerkinStepper.step: lam must have shape (0,) without loop rows, got {np.shape(lam)}")
        if self.nball:
            charts = np.asarray(charts)
            if charts.shape != (self.nball, 3, 3):
                raise ValueError(f"GalerkinStepper.step: charts must have shape {(self.nball, 3, 3)}, got "
                                 f"{charts.shape}")
            first = self._ball_first
            self._arrays["dof_placement"][first, :3, :3] = self._placement0[first, :3, :3] @ charts
        if nsel not in self._scratch:
            buffer = np.zeros(LIB.symplex_galerkin_scratch_size(self._tree_ptr, self.s, self.r, nsel))
            self._scratch[nsel] = (buffer, buffer.ctypes.data)
        carry = carry if not nsel and not self.nball and self.factor_dt == dt else 0
        status = LIB.symplex_galerkin_step(self._tree_ptr, self.s, self.r, *self._rule_addresses, nsel,
                                           self._rows_address, *self._in_addresses, float(dt), float(tol),
                                           float(stall), float(reuse), int(max_iterations), int(carry),
                                           *self._out_addresses, self._scratch[nsel][1])
        worst, flops, energy, factorizations = outs["stats"].tolist()
        if factorizations and not nsel:
            self.factor_dt = dt
        points = np.empty((self.s + 1, self.nq))
        points[0] = ins["q1"]
        points[1:] = outs["X"]
        return GalerkinStep(points[1:], outs["lam"][:self.s * nsel].copy(), outs["p2"].copy(),
                            outs["iterations"].item(), worst, status, int(flops), energy, int(factorizations), points)


def _copy_in(buffer: np.ndarray, name: str, value) -> None:
    """Copy value into buffer after checking that its shape is the buffer's (no broadcasting)."""
    value = np.asarray(value)
    if value.shape != buffer.shape:
        raise ValueError(f"GalerkinStepper.step: {name} must have shape {buffer.shape}, got {value.shape}")
    buffer[...] = value

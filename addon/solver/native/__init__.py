"""Optional C kernels behind a plain C ABI (ctypes), each with a numpy twin used as fallback and reference.

`load_kernels()` returns the ctypes library or None. Public names (tree_forward, ...) are bound to
the C version when the library loads and to the numpy twin otherwise; SYMPLEX_NO_NATIVE=1 forces
numpy. Wrappers check dtype, contiguity and shape before every call, because ctypes will not.
`NativeStepper(model).step(...)` runs one whole midpoint step in C (tree_step.c); its numpy twin is
tree/midpoint.py, which picks the stepper when NATIVE is true. The Galerkin step (galerkin_step.c) is bound in
galerkin_binding.py; both share tree_struct and the kinematics and dynamics of tree_common.h.
Build: `make kernels` (cc -O2 -shared -fPIC ... -lm) -> libsymplex_kernels.so beside this file.
"""

from __future__ import annotations

import ctypes
import math
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

ABI_VERSION = 31
_LIB_NAMES = ("libsymplex_kernels.so", "libsymplex_kernels.dylib", "symplex_kernels.dll")
_f64 = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_i64 = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")
_ptr, _int, _double = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double

# symplex_tree's array fields in header order, with their dtypes (model attribute of the same name).
_TREE_ARRAYS = (
    ("dof_parent", np.int64), ("dof_kind", np.int64), ("dof_prescribed", np.int64), ("dof_placement", np.float64),
    ("dof_stiffness", np.float64), ("dof_rest", np.float64), ("dof_damping", np.float64),
    ("dof_motor_gain", np.float64), ("dof_motor_velocity", np.float64),
    ("body_frame", np.int64), ("body_offset", np.float64), ("body_mass", np.float64), ("body_com", np.float64),
    ("body_inertia", np.float64), ("gravity", np.float64),
    ("force_frame", np.int64), ("force_point", np.float64),
    ("row_frame_p", np.int64), ("row_frame_c", np.int64), ("row_kind", np.int64),
    ("row_a", np.float64), ("row_b", np.float64), ("row_n", np.float64), ("ball_dofs", np.int64),
    ("ball_stiffness", np.float64), ("ball_rest", np.float64),
)


class _Tree(ctypes.Structure):
    """Mirror of symplex_tree in symplex_kernels.h (sizes, then one pointer per _TREE_ARRAYS entry)."""

    _fields_ = [("nq", _int), ("nbody", _int), ("nforce", _int), ("nrow", _int), ("nball", _int),
                ("linkwise", _int)] + [
        (name, _ptr) for name, _ in _TREE_ARRAYS
    ]


def tree_struct(model, linkwise: bool = False) -> tuple[dict[str, np.ndarray], _Tree]:
    """Contiguous copies of a TreeModel's _TREE_ARRAYS and the symplex_tree pointing at them (keep both alive;
    the arrays may be rewritten in place between calls); linkwise: step by the link-wise discrete Lagrangian."""
    arrays = {name: np.array(getattr(model, name), dtype=dtype, order="C") for name, dtype in _TREE_ARRAYS}
    addresses = (arrays[name].ctypes.data for name, _ in _TREE_ARRAYS)
    sizes = (model.nq, len(model.body_mass), len(model.force_frame), model.nrow, len(model.ball_dofs), int(linkwise))
    return arrays, _Tree(*sizes, *addresses)


def load_kernels() -> ctypes.CDLL | None:
    """The kernel library if it is built, loads, and has our ABI version; otherwise None."""
    if os.environ.get("SYMPLEX_NO_NATIVE") == "1":
        return None
    here = Path(__file__).resolve().parent
    for name in _LIB_NAMES:
        path = here / name
        if not path.exists():
            continue
        try:
            lib = ctypes.CDLL(str(path))
            lib.symplex_abi_version.restype = _int
            if lib.symplex_abi_version() != ABI_VERSION:
                return None
            lib.symplex_tree_struct_size.restype = _int
            if lib.symplex_tree_struct_size() != ctypes.sizeof(_Tree):
                return None
        except (OSError, AttributeError):
            return None
        lib.symplex_tree_forward.argtypes = [_int, _i64, _f64, _f64]
        lib.symplex_tree_forward.restype = None
        lib.symplex_midpoint_scratch_size.argtypes = [_int, _int, _int, _int]
        lib.symplex_midpoint_scratch_size.restype = _int
        # tree, nsel, rows, torque, force_vector, q1, p1, dt, tol, max_iterations,
        # q2, lam, p2, h2, stats, iterations, scratch (NativeStepper checks every array)
        lib.symplex_midpoint_step.argtypes = [ctypes.POINTER(_Tree), _int] + [_ptr] * 5 + [_double, _double, _int] \
            + [_ptr] * 7
        lib.symplex_midpoint_step.restype = _int
        return lib
    return None


_char_at, _address_of = ctypes.c_char.from_buffer, ctypes.addressof


def address(a: np.ndarray) -> int:
    """a's data address for a kernel call: through the buffer protocol (0.3 us; a.ctypes.data and
    a.__array_interface__ build objects: 2 us), or the array interface for an array that exports no writable
    contiguous buffer (read-only, empty or strided); an empty one's without first raising (a plan passes a dozen)."""
    if not a.size:
        return a.__array_interface__["data"][0]
    try:
        return _address_of(_char_at(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]


def pointers(*arrays: np.ndarray) -> tuple[int, ...]:
    """The arrays' data addresses, to be kept beside the arrays and passed to the kernels (each address costs
    about a microsecond to look up: a factorisation passes a dozen)."""
    return tuple(address(a) for a in arrays)


def tree_forward_numpy(parent: np.ndarray, local: np.ndarray, world: np.ndarray) -> np.ndarray:
    """world[f] = world[parent[f]] @ local[f] in order; world (n+1, 4, 4), world[n] = identity."""
    n = len(parent)
    world[n] = np.eye(4)
    for f in range(n):
        world[f] = world[parent[f]] @ local[f]
    return world


def _tree_forward_c(parent: np.ndarray, local: np.ndarray, world: np.ndarray) -> np.ndarray:
    n = len(parent)
    if parent.dtype != np.int64 or local.shape != (n, 4, 4) or world.shape != (n + 1, 4, 4):
        raise ValueError(f"tree_forward: expected int64 parent (n,), local (n,4,4), world (n+1,4,4); got "
                         f"{parent.dtype} {parent.shape}, {local.shape}, {world.shape}")
    _LIB.symplex_tree_forward(n, np.ascontiguousarray(parent), np.ascontiguousarray(local, dtype=np.float64),
                              world)
    return world


# Status codes of NativeStep.status (symplex_kernels.h).
CONVERGED, NOT_CONVERGED, SINGULAR, NOT_FINITE = 0, 1, 2, 3


class NativeStep(NamedTuple):
    """Result of one C midpoint step, before the chart fold.

    q2, p2 (nq,), lam (nsel,): the last Newton iterate (converged when status == CONVERGED);
    iterations: Newton updates made; energy: kinetic + potential at the last midpoint (dynamics.terms);
    residual_all: max |h| over every loop row at q2; status: CONVERGED, NOT_CONVERGED (max_iterations
    reached), SINGULAR (zero pivot in the Newton matrix) or NOT_FINITE (a residual is inf or nan);
    flops: multiply-adds spent in the O(n) Newton directions (counted like tree.articulated.OPS).
    """

    q2: np.ndarray
    p2: np.ndarray
    lam: np.ndarray
    iterations: int
    energy: float
    residual_all: float
    status: int
    flops: int


class NativeStepper:
    """Midpoint steps of one TreeModel in C (linkwise: by the link-wise discrete Lagrangian of tree/linkwise.py,
    else the chart midpoint): contiguous copies of the model arrays, the placement with
    the ball charts folded in, the kernel's scratch and its input and output buffers, all made once
    here (their addresses too: numpy's .ctypes costs microseconds per array). `step` copies its inputs
    in, checking shapes, and returns copies of the outputs. Raises RuntimeError when the kernels are
    not loaded (check NATIVE first).

    After each step, `h` (nrow,) holds every loop row at q2 and `momentum_residual` max |f1|, for
    error messages (tree.assembly.worst_joint(model, stepper.h)).
    """

    def __init__(self, model, linkwise: bool = False) -> None:
        if _LIB is None:
            raise RuntimeError("the Symplex C kernels are not loaded (not built: run `make kernels`; or "
                               "SYMPLEX_NO_NATIVE=1; or built from other sources); use tree.midpoint's numpy path")
        nq, nrow, nbody = model.nq, model.nrow, len(model.body_mass)
        self.nq, self.nrow, self.nforce, self.nball = nq, nrow, len(model.force_frame), len(model.ball_dofs)
        self._arrays, self._tree = tree_struct(model, linkwise)
        self._placement0 = np.array(model.dof_placement)
        self._ball_first = np.array(model.ball_dofs[:, 0], dtype=np.int64)
        # the kernel reads the rest rotation through the chart's placement (symplex_kernels.h ball_rest)
        self._arrays["ball_rest"][...] = self._placement0[self._ball_first, :3, :3] @ model.ball_rest
        self._tree_ptr = ctypes.pointer(self._tree)
        # buffers in the kernel's argument order after (tree, nsel) and the scalars
        self._inputs = {"rows": np.zeros(nrow, dtype=np.int64), "torque_mid": np.zeros(nq),
                        "force_vectors_mid": np.zeros((self.nforce, 3)), "q1": np.zeros(nq), "p1": np.zeros(nq)}
        self._outputs = {"q2": np.zeros(nq), "lam": np.zeros(nrow), "p2": np.zeros(nq), "h": np.zeros(nrow),
                         "stats": np.zeros(4), "iterations": np.zeros(1, dtype=np.int64),
                         "scratch": np.zeros(_LIB.symplex_midpoint_scratch_size(nq, nbody, self.nforce, nrow))}
        self._in_addresses = [a.ctypes.data for a in self._inputs.values()]
        self._out_addresses = [a.ctypes.data for a in self._outputs.values()]
        self.h = np.zeros(nrow)
        self.momentum_residual = 0.0

    @staticmethod
    def _load(buffer: np.ndarray, name: str, x, shape: tuple[int, ...]) -> None:
        """Copy x (any real dtype and layout) into buffer[:len(x)] after checking its shape."""
        x = np.asarray(x)
        if x.shape != shape:
            raise ValueError(f"NativeStepper.step: {name} must have shape {shape}, got {x.shape}")
        if len(buffer) == shape[0]:
            buffer[...] = x
        else:
            buffer[: shape[0]] = x

    def step(self, q1: np.ndarray, p1: np.ndarray, lam: np.ndarray, charts: np.ndarray, dt: float, tol: float,
             max_iterations: int, torque_mid: np.ndarray, q2_guess: np.ndarray, force_vectors_mid: np.ndarray,
             rows: np.ndarray) -> NativeStep:
        """One step from (q1, p1) like tree.midpoint.step, without its chart fold.

        q1, p1, q2_guess, torque_mid (nq,): state, Newton guess (prescribed coordinates set to their
        values at t2), keyed torques at the midpoint time; lam, rows (nsel,): multiplier guess and the
        independent loop rows (integers); charts (nball, 3, 3); force_vectors_mid (nforce, 3) at the
        midpoint time. Inputs of any real dtype and layout are copied in; none is modified.
        """
        nq, ins, outs = self.nq, self._inputs, self._outputs
        rows = np.asarray(rows)
        nsel = len(rows)
        if rows.ndim != 1 or (nsel and rows.dtype.kind not in "iu"):
            raise ValueError(f"NativeStepper.step: rows must be a 1-d integer array, got {rows.dtype} {rows.shape}")
        if nsel and (nsel > self.nrow or rows.min() < 0 or rows.max() >= self.nrow):
            raise ValueError(f"NativeStepper.step: rows must index the model's {self.nrow} loop rows, got {rows}")
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"NativeStepper.step: time step dt must be positive, got {dt}")
        self._load(ins["rows"], "rows", rows, (nsel,))
        self._load(ins["torque_mid"], "torque_mid", torque_mid, (nq,))
        self._load(ins["force_vectors_mid"], "force_vectors_mid", force_vectors_mid, (self.nforce, 3))
        self._load(ins["q1"], "q1", q1, (nq,))
        self._load(ins["p1"], "p1", p1, (nq,))
        self._load(outs["q2"], "q2_guess", q2_guess, (nq,))
        self._load(outs["lam"], "lam", lam, (nsel,))
        if self.nball:
            charts = np.asarray(charts)
            if charts.shape != (self.nball, 3, 3):
                raise ValueError(f"NativeStepper.step: charts must have shape {(self.nball, 3, 3)}, got {charts.shape}")
            first = self._ball_first
            self._arrays["dof_placement"][first, :3, :3] = self._placement0[first, :3, :3] @ charts
        status = _LIB.symplex_midpoint_step(self._tree_ptr, nsel, *self._in_addresses, float(dt), float(tol),
                                            int(max_iterations), *self._out_addresses)
        self.h = outs["h"].copy()
        energy, self.momentum_residual, residual_all, flops = outs["stats"].tolist()
        return NativeStep(outs["q2"].copy(), outs["p2"].copy(), outs["lam"][:nsel].copy(),
                          outs["iterations"].item(), energy, residual_all, status, int(flops))


_LIB = load_kernels()
NATIVE = _LIB is not None
tree_forward = _tree_forward_c if NATIVE else tree_forward_numpy

"""ctypes binding of tape_program.c: a program compiled by shots/program.py run for K instances in C.

`LIB` is the kernel library when it is built with tape_program.c and loads (native.load_kernels), else None; the
program's callers (shots/tree_program.py) then keep to their numpy twins (tree_dynamics.py, tree_hessian.py on
shots/tape.py). `CProgram` holds the program's arrays and the C struct pointing at them, built once per program (each run
allocates its own scratch and outputs, so threads may run one program at once).
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import load_kernels, pointers

_int, _ptr = ctypes.c_int64, ctypes.c_void_p


class _Program(ctypes.Structure):
    """Mirror of symplex_program in symplex_kernels.h."""

    _fields_ = [("n", _int), ("n_var", _int), ("n_param", _int)] + [
        (name, _ptr) for name in ("op", "args", "number", "support_start", "support", "map_start", "maps")]


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_program_run"):
        return None
    lib.symplex_program_scratch_size.argtypes = [ctypes.POINTER(_Program)]
    lib.symplex_program_scratch_size.restype = _int
    lib.symplex_program_run.argtypes = [ctypes.POINTER(_Program), _int, _int, _int] + [_ptr] * 6
    lib.symplex_program_run.restype = None
    return lib


LIB = _load()

# What a run computes besides the value and gradient (symplex_kernels.h): no Hessian, the whole Hessian, only its
# entries across a split of the variables (one index below it, one not), only those below it.
ROWS, HESSIAN, ACROSS, BELOW = range(4)


class CProgram:
    """A shots/program.py Program ready for C: contiguous int64 / float64 copies of its arrays, the struct and the
    size of its scratch."""

    def __init__(self, program):
        if LIB is None:
            raise RuntimeError("tape program: the C kernels are not built (make kernels)")
        self.arrays = [np.ascontiguousarray(getattr(program, name), dtype)
                       for name, dtype in (("op", np.int64), ("args", np.int64), ("number", np.float64),
                                           ("support_start", np.int64), ("support", np.int64),
                                           ("map_start", np.int64), ("maps", np.int64))]
        self.n_var, self.n_param = program.n_var, program.n_param
        self.struct = _Program(program.size, self.n_var, self.n_param, *pointers(*self.arrays))
        self.scratch_size = LIB.symplex_program_scratch_size(ctypes.byref(self.struct))

    def run(self, X: np.ndarray, P: np.ndarray, block: int = ROWS,
            split: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Value (K,), gradient (K, n_var) and (unless block is ROWS) Hessian (K, n_var, n_var) at X (K, n_var),
        P (K, n_param): the entries `block` asks for (HESSIAN, or ACROSS or BELOW `split`), the others zero."""
        X = np.ascontiguousarray(X, np.float64)
        P = np.ascontiguousarray(P, np.float64)
        K = len(X)
        if X.shape != (K, self.n_var) or P.shape != (K, self.n_param) or block not in (ROWS, HESSIAN, ACROSS, BELOW):
            raise ValueError(f"tape program: expected X ({K}, {self.n_var}), P ({K}, {self.n_param}) and a block; got "
                             f"{X.shape}, {P.shape}, {block}")
        value, grad = np.empty(K), np.empty((K, self.n_var))
        H = np.empty((K, self.n_var, self.n_var) if block != ROWS else (0,))
        scratch = np.empty(self.scratch_size)  # per call: the call releases the GIL, threads may share a program
        LIB.symplex_program_run(ctypes.byref(self.struct), K, block, split, *pointers(X, P, value, grad, H, scratch))
        return value, grad, (H if block != ROWS else None)


class Runner:
    """A CProgram bound to fixed inputs and outputs for K instances (a solve's: built once, run at every iterate).
    X (K, n_var) and P (K, n_param) are filled by the caller between runs; each run writes the value (K,), the
    gradient (K, n_var) and (unless block is ROWS) the Hessian entries `block` asks for into grad and H. X, grad and
    H may be views into a caller's buffer (C-contiguous). Not for sharing between threads (one scratch)."""

    def __init__(self, program: CProgram, K: int, block: int, split: int = 0, X: np.ndarray | None = None,
                 grad: np.ndarray | None = None, H: np.ndarray | None = None):
        self.X = np.zeros((K, program.n_var)) if X is None else X
        self.P = np.zeros((K, program.n_param))
        self.value = np.empty(K)
        self.grad = np.empty((K, program.n_var)) if grad is None else grad
        hessian_shape = (K, program.n_var, program.n_var) if block != ROWS else (0,)
        self.H = np.empty(hessian_shape) if H is None else H
        for name, a, shape in (("X", self.X, (K, program.n_var)), ("grad", self.grad, (K, program.n_var)),
                               ("H", self.H, hessian_shape)):
            if a.shape != shape or a.dtype != np.float64 or not a.flags.c_contiguous:
                raise ValueError(f"tape program runner: {name} must be C-contiguous float64 {shape}, got {a.shape}")
        self._scratch = np.empty(program.scratch_size)
        self._program = program
        self._args = (ctypes.byref(program.struct), K, block, split,
                      *pointers(self.X, self.P, self.value, self.grad, self.H, self._scratch))

    def __call__(self) -> None:
        LIB.symplex_program_run(*self._args)

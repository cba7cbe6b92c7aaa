"""Optional C kernels behind a plain C ABI (ctypes), each with a numpy twin used as fallback and reference.

`load_kernels()` returns the ctypes library or None. Public names (tree_forward, ...) are bound to
the C version when the library loads and to the numpy twin otherwise; SYMPLEX_NO_NATIVE=1 forces
numpy. Wrappers check dtype, contiguity and shape before every call, because ctypes will not.
Build: `make kernels` (cc -O2 -shared -fPIC) -> libsymplex_kernels.so beside this file.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

ABI_VERSION = 1
_LIB_NAMES = ("libsymplex_kernels.so", "libsymplex_kernels.dylib", "symplex_kernels.dll")
_f64 = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_i64 = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")


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
        except OSError:
            return None
        lib.symplex_abi_version.restype = ctypes.c_int64
        if lib.symplex_abi_version() != ABI_VERSION:
            return None
        lib.symplex_tree_forward.argtypes = [ctypes.c_int64, _i64, _f64, _f64]
        lib.symplex_tree_forward.restype = None
        return lib
    return None


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


_LIB = load_kernels()
NATIVE = _LIB is not None
tree_forward = _tree_forward_c if NATIVE else tree_forward_numpy

"""ctypes bindings of maximal_step.c (symplex_kernels.h symplex_maximal_*): the maximal method's step in C.

`LIB` is the kernel library when it is built with maximal_step.c, loads (native.load_kernels) and its
structs match the mirrors here, else None. The only caller is addon/solver/maximal/native_step.py,
which packs the model's arrays (int64 / float64, C-contiguous) in the field order below.
"""

from __future__ import annotations

import ctypes

from . import load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double

# symplex_maximal: sizes, then one pointer per array, in header order
MODEL_SIZES = ("nbody", "njoint", "nrow", "n_primary", "ncoord_joint", "nspring", "nforce", "n_nodes", "flat_size", "n_gather",
               "fill_scratch")
MODEL_ARRAYS = ("mass", "com", "inertia", "gravity", "parent", "child", "pa", "pb", "ca", "cb", "frame_a", "frame_b",
                "row_joint", "row_kind", "coord_joint", "coord_kind", "spring_a", "spring_b", "spring_pa", "spring_pb",
                "coord_a", "coord_b", "stiffness", "rest", "damping", "gain", "target_velocity", "force_body",
                "force_point", "force_vector", "order", "dim", "diag_offset", "upper_start", "upper_node",
                "lower_offset", "upper_offset", "pair_start", "pair_offset", "row_offset", "gather_src",
                "gather_dst")
# symplex_maximal_state: pointers (NULL allowed for coord_jac_prev and acceleration), then startup and
# the pairs (a pointer to symplex_maximal_pairs, NULL without inequalities)
STATE_ARRAYS = ("x", "q", "v", "w", "lam", "active", "row_winding", "coord_winding", "coord_rate", "coord_jac_prev",
                "acceleration", "targets", "torque", "force_scale")
# symplex_maximal_pairs: npair, nentry, then one pointer per array (interior_point.PackedPairs' fields,
# then the iterate lam, s and control, written by the kernel)
PAIR_ARRAYS = ("kind", "a", "b", "coord", "G", "h0", "side", "bound", "weight", "s_cold", "e_row", "e_col", "e_val",
               "lam", "s", "control")
CONTROL = ("mu", "cold", "monotone", "mu_fixed", "restarts", "cold_mu")  # symplex_maximal_pairs.control
# symplex_maximal_sparse: sizes, the pattern's arrays, then the scratch (written by the kernel)
SPARSE_SIZES = ("n_nodes", "flat_size", "nentry")
SPARSE_ARRAYS = ("order", "dim", "diag_offset", "row_offset", "upper_start", "upper_node", "lower_offset", "upper_offset",
                 "pair_start", "pair_offset", "perm", "entry_row", "entry_col", "target")
SPARSE_SCRATCH = ("flat", "values", "srow", "scol", "x", "piv")
# symplex_maximal_outputs: symplex_maximal_step's outputs, then its scratch
OUTPUTS = ("V", "acceleration", "poses", "lam", "x2", "q2", "row_val2", "row_winding2", "coord_winding2", "cval2", "rate", "cjac2", "sweeps",
           "stats")

# status codes (symplex_kernels.h)
CONVERGED, NOT_CONVERGED, SINGULAR, NOT_FINITE, SPIN_TOO_FAST, NEEDS_GMRES = range(6)


class Model(ctypes.Structure):
    """Mirror of symplex_maximal."""

    _fields_ = [(name, _int) for name in MODEL_SIZES] + [(name, _ptr) for name in MODEL_ARRAYS]


class Pairs(ctypes.Structure):
    """Mirror of symplex_maximal_pairs."""

    _fields_ = [("npair", _int), ("nentry", _int)] + [(name, _ptr) for name in PAIR_ARRAYS]


class Sparse(ctypes.Structure):
    """Mirror of symplex_maximal_sparse."""

    _fields_ = [(name, _int) for name in SPARSE_SIZES] + [(name, _ptr) for name in SPARSE_ARRAYS + SPARSE_SCRATCH]


class Outputs(ctypes.Structure):
    """Mirror of symplex_maximal_outputs."""

    _fields_ = [(name, _ptr) for name in OUTPUTS + ("scratch",)]


class State(ctypes.Structure):
    """Mirror of symplex_maximal_state."""

    _fields_ = [(name, _ptr) for name in STATE_ARRAYS] + [("startup", _int), ("pairs", ctypes.POINTER(Pairs)),
                                                         ("sparse", ctypes.POINTER(Sparse))]


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_maximal_step"):
        return None
    lib.symplex_maximal_struct_size.restype = _int
    if lib.symplex_maximal_struct_size() != ctypes.sizeof(Model):
        return None
    lib.symplex_maximal_scratch_size.argtypes = [ctypes.POINTER(Model), _int, _int]
    lib.symplex_maximal_scratch_size.restype = _int
    lib.symplex_maximal_step.argtypes = [ctypes.POINTER(Model), ctypes.POINTER(State), _double, _double, _int, _int,
                                         ctypes.POINTER(Outputs)]
    lib.symplex_maximal_step.restype = _int
    return lib


LIB = _load()

"""ctypes binding of contact_rows.c (symplex_kernels.h symplex_contact_knot, symplex_contact_curvature,
symplex_contact_rows, symplex_contact_drift): the maximal step's contact rows at the knot in C.

`LIB` is the kernel library when it is built with contact_rows.c and loads (native.load_kernels), else None.
`NativeRows(...)` holds one model's buffers: `knot` gives the body-frame origins and the bodies' margins of the
collision query, `rows` turns the query's contacts into the interior point's contact rows (their gaps' curvature
over the step first; copied out: a step's rows outlive the next call), `drift` how far those contacts' curvature
along other velocities is from the rows' own where the step ends with the gap closed. The caller is
maximal/interior_point.py (its numpy functions are the reference), through the NativeRows a
maximal/native_step.py kernel owns.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

import numpy as np

from . import address, load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
_ROWS_PER_CONTACT, _DIRECTIONS_PER_CONTACT, _ENTRIES_PER_CONTACT = 8, 6, 13  # contact_rows.c's bounds


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_contact_rows"):
        return None
    lib.symplex_contact_knot.argtypes = [_int] + [_ptr] * 6 + [_double, _double, _ptr, _ptr, _ptr]
    lib.symplex_contact_knot.restype = None
    lib.symplex_contact_rows.argtypes = [_int, _int, _int] + [_ptr] * 15 + [_double, _double] + [_ptr] * 22
    lib.symplex_contact_rows.restype = _int
    lib.symplex_contact_curvature.argtypes = [_int] + [_ptr] * 14 + [_double, _ptr]
    lib.symplex_contact_curvature.restype = None
    lib.symplex_contact_drift.argtypes = [_int, _int] + [_ptr] * 20 + [_double, _double, _ptr]
    lib.symplex_contact_drift.restype = _double
    return lib


LIB = _load()


class Rows(NamedTuple):
    """symplex_contact_rows' outputs, trimmed to their counts (see the header for each field)."""

    a: np.ndarray
    b: np.ndarray
    key: np.ndarray
    Ja: np.ndarray
    Jb: np.ndarray
    kind: np.ndarray
    owner: np.ndarray
    row_a: np.ndarray
    row_b: np.ndarray
    row_key: np.ndarray
    G: np.ndarray
    h0: np.ndarray
    weight: np.ndarray
    s_cold: np.ndarray
    members: np.ndarray
    member_patch: np.ndarray
    B: np.ndarray
    e_row: np.ndarray
    e_col: np.ndarray
    e_val: np.ndarray
    curvature: np.ndarray


_FOUND = ("collider_a", "collider_b", "body_a", "body_b", "point_a", "point_b", "normal", "distance", "friction")


class NativeRows:
    """symplex_contact_knot's and symplex_contact_rows' inputs and outputs for one model (nbody bodies with
    centres of mass com (B, 3), masses (B,) and colliders reaching `reach` (B,) from the centres of mass
    (collision.shapes.body_reach), its ncollider colliders `shapes` (collision.shapes.Shapes), gravity of norm
    gravity_norm), made once with their addresses (every call's argument tuple is built when the buffers are) and
    grown by doubling when a query finds more contacts than they hold."""

    def __init__(self, nbody: int, ncollider: int, shapes, com: np.ndarray, mass: np.ndarray, reach: np.ndarray,
                 gravity_norm: float):
        self.nbody, self.ncollider, self.gravity_norm = nbody, ncollider, float(gravity_norm)
        self._com, self._mass = np.array(com, dtype=np.float64), np.array(mass, dtype=np.float64)
        self._reach = np.array(reach, dtype=np.float64)
        self._shapes = (np.ascontiguousarray(shapes.shape, dtype=np.int64),
                        np.ascontiguousarray(shapes.rotation_local, dtype=np.float64))
        self._state = [np.zeros((nbody, 3)), np.zeros((nbody, 4)), np.zeros((nbody, 3)), np.zeros((nbody, 3))]
        self.R, self.origin, self.margin = np.zeros((nbody, 3, 3)), np.zeros((nbody, 3)), np.zeros(nbody)
        x, q, v, w = map(address, self._state)
        self._knot_args = (nbody, x, q, v, w, address(self._com), address(self._reach))
        self._knot_out = (address(self.R), address(self.origin), address(self.margin))
        self._body_args = (x, address(self.R), v, w, address(self._com), address(self._mass))
        self._k = 0  # contacts of the last `rows` call, still in the input buffers
        self._predicted = [np.zeros((nbody, 3)), np.zeros((nbody, 3))]  # v, w a step's curvature follows
        self._capacity = -1
        self._reserve(16)

    def _reserve(self, k: int) -> None:
        if k <= self._capacity:
            return
        self._capacity = k = max(k, 2 * self._capacity)
        i64 = np.int64
        self._inputs = [np.zeros(k, i64) for _ in range(4)] + [np.zeros((k, 3)) for _ in range(3)] + \
            [np.zeros(k), np.zeros(k)]
        self._per_contact = [np.zeros(k, i64), np.zeros(k, i64), np.zeros(k, i64), np.zeros((k, 3, 6)),
                             np.zeros((k, 3, 6))]
        m = _ROWS_PER_CONTACT * k
        self._per_row = [np.zeros(m, i64) for _ in range(5)] + [np.zeros((m, 12)), np.zeros(m), np.zeros(m),
                                                               np.zeros(m)]
        self._patches = [np.zeros(k, i64), np.zeros(k, i64), np.zeros((_DIRECTIONS_PER_CONTACT * k, 12))]
        ne = _ENTRIES_PER_CONTACT * k
        self._entries = [np.zeros(ne, i64), np.zeros(ne, i64), np.zeros(ne)]
        self._counts, self._scratch = np.zeros(4, i64), np.zeros(4 * k)
        self._curvature, self._along = np.zeros(k), np.zeros(k)  # the rows' curvature; along other velocities
        outputs = tuple(map(address, self._per_contact + self._per_row + self._patches + self._entries
                            + [self._counts, self._scratch]))
        inputs = tuple(map(address, self._inputs))
        self._rows_args = (*inputs, *self._body_args, self.gravity_norm)
        self._rows_out = outputs
        x, R, v, w, com, _ = self._body_args
        contacts = (*map(address, self._shapes), *inputs[:7])
        self._curvature_args = {False: (*contacts, x, R, v, w, com),  # along the knot's velocities
                                True: (*contacts, x, R, *map(address, self._predicted), com)}  # along predicted ones
        self._curvature_out = address(self._curvature)
        a, b, _, Ja, Jb = map(address, self._per_contact)
        self._drift_args = (*contacts, inputs[7], self._curvature_out, a, b, Ja, Jb,
                            *self._curvature_args[True][-5:])
        self._along_out = address(self._along)

    def knot(self, x: np.ndarray, q: np.ndarray, v: np.ndarray, w: np.ndarray,
             dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Body-frame origins x - R com (B, 3) and each body's collision-query margin (B,) at the knot (x, q, v, w)
        (this object's buffers, rewritten by the next call); keeps the rotations R for `rows`."""
        for buffer, value in zip(self._state, (x, q, v, w)):
            buffer[...] = value
        LIB.symplex_contact_knot(*self._knot_args, self.gravity_norm, dt, *self._knot_out)
        return self.origin, self.margin

    def _gap_curvature(self, dt: float, velocity: np.ndarray | None) -> np.ndarray:
        """The gap curvature (k,) of the contacts in the input buffers along the interval velocities `velocity`
        (B, 6; None: the knot's), kept for `drift` and returned as a fresh array."""
        if velocity is not None:
            self._predicted[0][...], self._predicted[1][...] = velocity[:, :3], velocity[:, 3:]
        LIB.symplex_contact_curvature(self._k, *self._curvature_args[velocity is not None], dt, self._curvature_out)
        return self._curvature[:self._k].copy()

    def drift(self, dt: float, velocity: np.ndarray, close_margin: float) -> float:
        """interior_point.relinearise's measure of the last `rows` call's contacts along the interval velocities
        `velocity` (B, 6): the largest change of their gap curvature from the rows' own over the contacts whose
        gap ends the step within close_margin (0 when none does)."""
        self._predicted[0][...], self._predicted[1][...] = velocity[:, :3], velocity[:, 3:]
        return LIB.symplex_contact_drift(self.nbody, self._k, *self._drift_args, dt, close_margin, self._along_out)

    def rows(self, found, dt: float, velocity: np.ndarray | None = None) -> Rows:
        """The contact rows of `found` (collision.world.Contacts of this model's colliders, sorted by collider
        pair) at the last `knot`, as fresh arrays; their gaps' curvature along the interval velocities
        `velocity` (B, 6), None: the knot's."""
        k = len(found.distance)
        self._reserve(k)
        for buffer, name in zip(self._inputs, _FOUND):
            buffer[:k] = getattr(found, name)
        self._k = k
        curvature = self._gap_curvature(dt, velocity)
        self._inputs[7][:k] += curvature  # the rows start from the distance plus the curvature
        status = LIB.symplex_contact_rows(self.nbody, self.ncollider, k, *self._rows_args, dt, *self._rows_out)
        if status != 0:
            raise ValueError("contact rows: the contacts are not sorted by collider pair")
        m, nmem, nd, ne = self._counts.tolist()
        members, member_patch, B = self._patches
        return Rows(*(a[:k].copy() for a in self._per_contact), *(a[:m].copy() for a in self._per_row),
                    members[:nmem].copy(), member_patch[:nmem].copy(), B[:nd].copy(),
                    *(a[:ne].copy() for a in self._entries), curvature)

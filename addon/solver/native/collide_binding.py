"""ctypes binding of collide.c (symplex_kernels.h symplex_collide): the collision query's C twin.

`LIB` is the kernel library when it is built with collide.c and loads (native.load_kernels), else None.
`NativeQuery(shapes, nbody, joined, contacts)` owns the work buffers of one CollisionWorld (grown when a query
finds more candidate pairs than they hold) and `run(positions, quaternions, margin)` (margin per collider) returns
the C contacts (sorted by collider pair) made by `contacts` (collision.world.Contacts, passed in: this module is below the
collision package) and the pairs left to the numpy path. The only caller is collision/world.py.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np

from . import address, load_kernels

_int, _ptr, _double = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
_MAX_POINTS_PER_PAIR = 8  # a box's corners on a plane (collide.c sizes its contact arrays by this)


def _load() -> ctypes.CDLL | None:
    lib = load_kernels()
    if lib is None or not hasattr(lib, "symplex_collide"):
        return None
    lib.symplex_collide_scratch_size.argtypes = [_int, _int]
    lib.symplex_collide_scratch_size.restype = _int
    lib.symplex_collide.argtypes = [_int] + [_ptr] * 6 + [_int, _ptr, _ptr, _int, _ptr, _ptr, _int] + [_ptr] * 16
    lib.symplex_collide.restype = _int
    return lib


LIB = _load()


class NativeQuery:
    """symplex_collide's inputs and work buffers for one set of shapes (no hulls)."""

    def __init__(self, shape: np.ndarray, body: np.ndarray, rotation_local: np.ndarray, position_local: np.ndarray,
                 size: np.ndarray, friction: np.ndarray, nbody: int, joined: np.ndarray, contacts: Callable):
        self._inputs = [np.ascontiguousarray(a, dtype=dt) for a, dt in (
            (shape, np.int64), (body, np.int64), (rotation_local, np.float64), (position_local, np.float64),
            (size, np.float64), (friction, np.float64))]
        self._joined = np.ascontiguousarray(np.sort(joined), dtype=np.int64)
        self.count, self.nbody, self._contacts = len(shape), nbody, contacts
        self._rot, self._origin = np.empty((self.count, 3, 3)), np.empty((self.count, 3))
        self._positions, self._quaternions = np.zeros((nbody, 3)), np.zeros((nbody, 4))  # the poses, copied in
        self._poses = (address(self._positions), address(self._quaternions))
        self._margin = np.zeros(self.count)  # the colliders' margins, copied in
        self._counts = np.zeros(3, np.int64)
        self._scratch = np.empty(LIB.symplex_collide_scratch_size(self.count, nbody))
        self._allocate(4 * self.count + 16)

    def _allocate(self, capacity: int) -> None:
        self._capacity = capacity
        k = _MAX_POINTS_PER_PAIR * capacity
        self._pairs, self._pair_scratch = np.empty(capacity, np.int64), np.empty(capacity, np.int64)
        self._leftover = np.empty((capacity, 2), np.int64)
        self._colliders, self._bodies = np.empty((k, 2), np.int64), np.empty((k, 2), np.int64)
        self._pa, self._pb, self._normal = np.empty((k, 3)), np.empty((k, 3)), np.empty((k, 3))
        self._distance, self._friction = np.empty(k), np.empty(k)
        self._body_pa, self._body_pb = np.empty((k, 3)), np.empty((k, 3))
        self._before = [self.count, *map(address, self._inputs), self.nbody]
        self._after = [len(self._joined), address(self._joined)]
        self._outputs = [self._capacity] + [address(a) for a in (
            self._pairs, self._pair_scratch, self._colliders, self._bodies, self._pa, self._pb, self._normal,
            self._distance, self._friction, self._body_pa, self._body_pb, self._rot, self._origin, self._leftover,
            self._counts, self._scratch)]

    def run(self, positions: np.ndarray, quaternions: np.ndarray, margin: np.ndarray) -> tuple[object, np.ndarray]:
        """Contacts with distance <= the larger margin (n,) of their two colliders at body poses positions (B, 3),
        quaternions (B, 4): the C contacts
        made by `contacts` (the fields of collision.world.Contacts, in its order) and the leftover (m, 2)
        collider pairs in kernel order for the numpy path."""
        if np.shape(positions) != (self.nbody, 3) or np.shape(quaternions) != (self.nbody, 4):
            raise ValueError(f"collision query: poses of {self.nbody} bodies expected, got positions "
                             f"{np.shape(positions)} and quaternions {np.shape(quaternions)}")
        self._positions[...] = positions
        self._quaternions[...] = quaternions
        self._margin[...] = margin
        while True:
            status = LIB.symplex_collide(*self._before, *self._poses, *self._after, address(self._margin), *self._outputs)
            if status == 0:
                break
            if status != 1:
                raise RuntimeError(f"symplex_collide failed with status {status}")
            self._allocate(2 * int(self._counts[0]))
        k, m = int(self._counts[1]), int(self._counts[2])
        colliders, bodies = self._colliders[:k].T.copy(), self._bodies[:k].T.copy()
        return self._contacts(colliders[0], colliders[1], bodies[0], bodies[1], self._body_pa[:k].copy(),
                              self._body_pb[:k].copy(), self._normal[:k].copy(), self._distance[:k].copy(),
                              self._friction[:k].copy(), self._pa[:k].copy(), self._pb[:k].copy()), \
            self._leftover[:m].copy()

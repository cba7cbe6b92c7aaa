"""Two free bodies A and B carrying one collider each, and helpers to query their contacts."""

from __future__ import annotations

import numpy as np

from addon.solver.collision import CollisionWorld, Contacts
from addon.solver.lie import matrix_to_quat, rotvec_to_matrix
from addon.solver.model import Body, Collider, Joint, Mechanism

INERTIA = (0.1, 0.1, 0.1, 0.0, 0.0, 0.0)
CUBE = tuple((x, y, z) for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0))


def collider(name: str, body: str, shape: str, size=(), vertices=(), **kw) -> Collider:
    return Collider(name, body, shape, tuple(size), vertices=tuple(tuple(v) for v in vertices), **kw)


def pair_world(shape_a: str, size_a, shape_b: str, size_b, vertices_a=(), vertices_b=(), swap: bool = False,
               friction=(0.5, 0.5)) -> CollisionWorld:
    """Bodies A, B (free) with colliders 'a' on A and 'b' on B (listed b first when swap)."""
    bodies = (Body("A", 1.0, inertia=INERTIA), Body("B", 1.0, inertia=INERTIA))
    joints = (Joint("A free", "free", "world", "A"), Joint("B free", "free", "world", "B"))
    ca = collider("a", "A", shape_a, size_a, vertices_a, friction=friction[0])
    cb = collider("b", "B", shape_b, size_b, vertices_b, friction=friction[1])
    return CollisionWorld(Mechanism("pair", bodies, joints, colliders=(cb, ca) if swap else (ca, cb)))


def quat(rotvec=(0.0, 0.0, 0.0)) -> np.ndarray:
    return matrix_to_quat(rotvec_to_matrix(np.asarray(rotvec, dtype=float)))


def query(world: CollisionWorld, pos_a, pos_b, rot_a=(0, 0, 0), rot_b=(0, 0, 0), margin: float = 0.0) -> Contacts:
    positions = np.array([pos_a, pos_b], dtype=float)
    quats = np.array([quat(rot_a), quat(rot_b)])
    return world.detect(positions, quats, margin)


def oriented(contacts: Contacts, world: CollisionWorld) -> tuple[np.ndarray, np.ndarray]:
    """(distances, normals from collider 'a' to 'b') whatever order the world reported them in."""
    names = world.shapes.names
    from_a = np.array([names[i] == "a" for i in contacts.collider_a], dtype=bool)
    return contacts.distance, np.where(from_a[:, None], contacts.normal, -contacts.normal)

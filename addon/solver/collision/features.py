"""Which features of two flat-sided colliders a contact's normal belongs to, so a step can move the normal
with the bodies: the face of A, the face of B, or the cross product of an edge of each.

The narrow phases (boxbox.py SAT, primitives.plane_box) report a face contact's normal as the reference
face's axis exactly and an edge-edge contact's as the unit cross product of the two edges; this module reads
that back from the normal and the colliders' axes alone, so every narrow phase (numpy or native/collide.c)
serves. Only pairs of planes and boxes are classified (a plane is always A): a sphere's or capsule's
witness point follows its centre, not its body's rotation, and GJK/EPA normals of other shapes belong to no
fixed feature; those pairs get NONE. A face wins over the edges, A's face over B's (parallel faces: the
SAT's preference); parallel edges give no normal (NONE). Twin: native/contact_rows.c (normal_owner).
"""

from __future__ import annotations

import numpy as np

from .shapes import BOX, PLANE, Shapes

NONE, FACE_A, FACE_B, EDGES = range(4)
FACE_TOLERANCE = 1e-9  # |axis . n| within this of 1: n is that face's normal; of 0: n is across that edge
PARALLEL = 1e-6  # |e_A x e_B| at most this: parallel edges, whose normal no cross product gives (boxbox.py)


def normal_owners(shapes: Shapes, collider_a: np.ndarray, collider_b: np.ndarray, normal: np.ndarray,
                  rot_a: np.ndarray, rot_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per contact (k of them, world unit normal A to B; rot_a, rot_b (k, 3, 3) the rotations of the bodies
    of A and B, identity for the world): the owner code (NONE, FACE_A, FACE_B or EDGES) and, for EDGES, the
    directions of the two edges in their bodies' frames (k, 3) each (zero elsewhere)."""
    k = len(collider_a)
    code_a, code_b = shapes.shape[collider_a], shapes.shape[collider_b]
    axes_a = rot_a @ shapes.rotation_local[collider_a]  # collider axes in world, as columns
    axes_b = rot_b @ shapes.rotation_local[collider_b]
    along_a = np.abs(np.einsum("kij,ki->kj", axes_a, normal))
    along_b = np.abs(np.einsum("kij,ki->kj", axes_b, normal))
    flat = ((code_a == PLANE) | (code_a == BOX)) & (code_b == BOX)
    face_a = flat & ((code_a == PLANE) | (np.max(along_a, axis=1) >= 1.0 - FACE_TOLERANCE))
    face_b = flat & (np.max(along_b, axis=1) >= 1.0 - FACE_TOLERANCE)
    edge_a, edge_b = np.argmin(along_a, axis=1), np.argmin(along_b, axis=1)
    rows = np.arange(k)
    crossing = np.linalg.norm(np.cross(axes_a[rows, :, edge_a], axes_b[rows, :, edge_b]), axis=1) > PARALLEL
    edges = flat & (code_a == BOX) & (along_a[rows, edge_a] <= FACE_TOLERANCE) & \
        (along_b[rows, edge_b] <= FACE_TOLERANCE) & crossing
    owner = np.where(face_a, FACE_A, np.where(face_b, FACE_B, np.where(edges, EDGES, NONE)))
    on_edges = (owner == EDGES)[:, None]
    dir_a = np.where(on_edges, shapes.rotation_local[collider_a, :, edge_a], 0.0)
    dir_b = np.where(on_edges, shapes.rotation_local[collider_b, :, edge_b], 0.0)
    return owner, dir_a, dir_b

"""Forward kinematics of a TreeModel: frame poses, world twist axes, frame velocities, body poses.

Seed 000 §III-B/C, recast in world (spatial) coordinates: frame k's world twist axis S_k is
(e, o x e) for a rotation about unit axis e through o, (0, e) for a translation; the spatial
velocity of frame f is V_f = sum over ancestors-or-self k of S_k qdot_k; and moving q_k turns every
world quantity downstream of k by the twist S_k (d S_j / d q_k = ad(S_k) S_j for k before j), which
is what dynamics.py differentiates. Arrays indexed by frame have one extra last row for the world
(identity pose, zero twist) so that frame index -1 needs no special case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import cross, matrix_to_quat
from ..native import tree_forward
from .compile import ROT_Z, TreeModel


@dataclass
class Kinematics:
    """Configuration-dependent quantities at one q (and chart set).

    world_M_frame (nq + 1, 4, 4); axis_world (nq + 1, 6) twists S_k; body_R (nbody, 3, 3) world rotation
    of each body frame; body_origin (nbody, 3); body_com_world (nbody, 3).
    """

    q: np.ndarray
    world_M_frame: np.ndarray
    axis_world: np.ndarray
    body_R: np.ndarray
    body_origin: np.ndarray
    body_com_world: np.ndarray


def local_transforms(model: TreeModel, q: np.ndarray, charts: np.ndarray) -> np.ndarray:
    """parent_M_frame for every frame at coordinates q (nq,), charts (nball, 3, 3) -> (nq, 4, 4)."""
    rot, cos_at, sin_at, minus_sin_at, trans, trans_at = model.motion_index
    motion = np.tile(_IDENTITY_FLAT, (model.nq, 1))
    angle = q[rot]
    c = np.cos(angle)
    motion[rot[:, None], cos_at] = c[:, None]
    motion[rot, sin_at] = np.sin(angle)
    motion[rot, minus_sin_at] = -motion[rot, sin_at]
    motion[trans, trans_at] = q[trans]
    placement = model.dof_placement
    if len(model.ball_dofs):
        placement = np.array(placement)
        first = model.ball_dofs[:, 0]
        placement[first, :3, :3] = placement[first, :3, :3] @ charts
    return placement @ motion.reshape(-1, 4, 4)


_IDENTITY_FLAT = np.eye(4).ravel()


def forward(model: TreeModel, q: np.ndarray, charts: np.ndarray) -> Kinematics:
    """Frame and body poses and world twist axes at q. Reads model; allocates the result."""
    nq = model.nq
    local = local_transforms(model, q, charts)
    world = np.empty((nq + 1, 4, 4))
    world[nq] = np.eye(4)
    tree_forward(model.dof_parent, local, world)
    R = world[:nq, :3, :3]
    origin = world[:nq, :3, 3]
    kind = model.dof_kind
    axis_index = kind % 3
    e = R[np.arange(nq), :, axis_index]
    axis = np.zeros((nq + 1, 6))
    rot = kind <= ROT_Z
    axis[:nq][rot, :3] = e[rot]
    axis[:nq][rot, 3:] = cross(origin[rot], e[rot])
    axis[:nq][~rot, 3:] = e[~rot]
    body_M = world[model.body_frame] @ model.body_offset
    body_R = body_M[:, :3, :3]
    body_origin = body_M[:, :3, 3]
    com = body_origin + np.einsum("bij,bj->bi", body_R, model.body_com)
    return Kinematics(q.copy(), world, axis, body_R, body_origin, com)


def frame_velocities(model: TreeModel, kin: Kinematics, qd: np.ndarray) -> np.ndarray:
    """Spatial velocities V_f (nq + 1, 6) of every frame in world coordinates; last row (world) is zero."""
    nq = model.nq
    out = np.zeros((nq + 1, 6))
    out[:nq] = model.ancestor[:nq] @ (kin.axis_world[:nq] * qd[:, None])
    return out


def body_poses_batch(model: TreeModel, q: np.ndarray, charts: np.ndarray) -> np.ndarray:
    """World pose rows (T, nbody, 7) of every body at T configurations q (T, nq), charts (T, nball, 3, 3).

    The same transforms as forward() + body_poses(), vectorised over the T configurations: the tree
    is walked once, each frame composing all T parent poses at a time.
    """
    T, nq = len(q), model.nq
    rot, cos_at, sin_at, minus_sin_at, trans, trans_at = model.motion_index
    motion = np.tile(_IDENTITY_FLAT, (T, nq, 1))
    angle = q[:, rot]
    motion[:, rot[:, None], cos_at] = np.cos(angle)[:, :, None]
    motion[:, rot, sin_at] = np.sin(angle)
    motion[:, rot, minus_sin_at] = -np.sin(angle)
    motion[:, trans, trans_at] = q[:, trans]
    placement = np.broadcast_to(model.dof_placement, (T, nq, 4, 4)).copy()
    if len(model.ball_dofs):
        first = model.ball_dofs[:, 0]
        placement[:, first, :3, :3] = placement[:, first, :3, :3] @ charts
    local = placement @ motion.reshape(T, nq, 4, 4)
    world = np.empty((T, nq + 1, 4, 4))
    world[:, nq] = np.eye(4)
    for f in range(nq):
        world[:, f] = world[:, model.dof_parent[f]] @ local[:, f]
    body_M = world[:, model.body_frame] @ model.body_offset
    return np.concatenate([body_M[..., :3, 3], matrix_to_quat(body_M[..., :3, :3])], axis=-1)


def body_poses(model: TreeModel, kin: Kinematics) -> np.ndarray:
    """World pose rows (nbody, 7): x y z qw qx qy qz of each body frame."""
    return np.concatenate([kin.body_origin, matrix_to_quat(kin.body_R)], axis=1)


def fold_charts(model: TreeModel, kin: Kinematics, charts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold each ball chart's current Euler angles into the chart.

    Returns (new_charts (nball, 3, 3), J (nball, 3, 3)) where J = d q_old / d q_new for the three
    coordinates of each chart at this configuration; momenta transform as p_new = J^T p_old and the
    folded coordinates become 0.
    """
    new = np.empty_like(charts)
    J = np.empty_like(charts)
    for b, dofs in enumerate(model.ball_dofs):
        first, last = dofs[0], dofs[2]
        parent_R = kin.world_M_frame[model.dof_parent[first], :3, :3] @ model.dof_placement[first, :3, :3]
        new[b] = parent_R.T @ kin.world_M_frame[last, :3, :3]
        w_old = kin.axis_world[dofs, :3].T
        w_new = parent_R @ new[b]
        J[b] = np.linalg.solve(w_old, w_new)
    return new, J

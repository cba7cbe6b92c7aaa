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
    of each body frame; body_origin (nbody, 3); body_com_world (nbody, 3); charts (nball, 3, 3) the ball
    charts q was taken in.
    """

    q: np.ndarray
    world_M_frame: np.ndarray
    axis_world: np.ndarray
    body_R: np.ndarray
    body_origin: np.ndarray
    body_com_world: np.ndarray
    charts: np.ndarray


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
    return Kinematics(q.copy(), world, axis, body_R, body_origin, com, charts)


def frame_velocities(model: TreeModel, kin: Kinematics, qd: np.ndarray) -> np.ndarray:
    """Spatial velocities V_f (nq + 1, 6) of every frame in world coordinates; last row (world) is zero."""
    nq = model.nq
    out = np.zeros((nq + 1, 6))
    out[:nq] = model.ancestor[:nq] @ (kin.axis_world[:nq] * qd[:, None])
    return out


def body_poses_batch(model: TreeModel, q: np.ndarray, charts: np.ndarray) -> np.ndarray:
    """World pose rows (T, nbody, 7) of every body at T configurations q (T, nq), charts (T, nball, 3, 3).

    The same transforms as forward() + body_poses(), vectorised over the T configurations.
    """
    world = world_frames_batch(model, q, charts)
    body_M = world[:, model.body_frame] @ model.body_offset
    return np.concatenate([body_M[..., :3, 3], matrix_to_quat(body_M[..., :3, :3])], axis=-1)


def world_frames_batch(model: TreeModel, q: np.ndarray, charts: np.ndarray) -> np.ndarray:
    """world_M_frame (T, nq + 1, 4, 4) (last: the world) at T configurations q (T, nq), charts (T, nball, 3, 3):
    forward()'s frame poses, the tree walked once, each frame composing all T parent poses at a time."""
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
    return world


def body_poses(model: TreeModel, kin: Kinematics) -> np.ndarray:
    """World pose rows (nbody, 7): x y z qw qx qy qz of each body frame."""
    return np.concatenate([kin.body_origin, matrix_to_quat(kin.body_R)], axis=1)


def euler_chain(psi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rx ry rz chain of each ball chart at angles psi (nball, 3): Phi = Rx Ry Rz (nball, 3, 3) and
    J_L (nball, 3, 3), whose column i is primitive i's axis at psi in chart axes (e_x, Rx e_y, Rx Ry e_z)."""
    c, s = np.cos(psi), np.sin(psi)
    n = len(psi)
    Rx, Ry, Rz = (np.tile(np.eye(3), (n, 1, 1)) for _ in range(3))
    for R, axis in ((Rx, 0), (Ry, 1), (Rz, 2)):
        i, j = (axis + 1) % 3, (axis + 2) % 3
        R[:, i, i] = R[:, j, j] = c[:, axis]
        R[:, j, i], R[:, i, j] = s[:, axis], -s[:, axis]
    RxRy = Rx @ Ry
    JL = np.stack([Rx[:, :, 0], Rx[:, :, 1], RxRy[:, :, 2]], axis=2)
    return RxRy @ Rz, JL


def nearest_rotation(R: np.ndarray) -> np.ndarray:
    """One Newton step of the polar decomposition, R (3 I - R^T R) / 2 for R (..., 3, 3) within round-off of a
    rotation: its distance from orthonormality e becomes O(e^2) + round-off, so it cannot accumulate."""
    RtR = np.swapaxes(R, -1, -2) @ R
    return R @ (1.5 * np.eye(3) - 0.5 * RtR)


def fold_charts(model: TreeModel, q: np.ndarray, charts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold each ball chart's current Euler angles into the chart: C_new = C Phi(psi), made orthonormal.

    Returns (new_charts (nball, 3, 3), J (nball, 3, 3)) where J = d q_old / d q_new = J_L(psi)^-1 Phi(psi) for
    the three coordinates of each chart (angular velocity J_L psidot_old = Phi psidot_new in old chart axes);
    momenta transform as p_new = J^T p_old and the folded coordinates become 0.

    Only the chart's own angles enter: composing through world poses (C_new = (parent pose)^T (last frame
    pose)) feeds every ancestor chart's departure from orthonormality into its descendants at each fold,
    which grows like steps^depth (a 20-link ball chain lost its charts after about 30 steps at any dt).
    """
    if not len(model.ball_dofs):
        return np.array(charts), np.zeros((0, 3, 3))
    Phi, JL = euler_chain(q[model.ball_dofs])
    return nearest_rotation(charts @ Phi), np.linalg.solve(JL, Phi)

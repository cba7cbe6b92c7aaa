"""Holonomic loop constraints of a TreeModel: residual h(q) and its exact Jacobian Dh(q).

Seed 000 §IV-D (point constraints, h and Dh only). Rows come from compile.LOOP_ROWS:
translation rows h = n . (p_P - p_C) and rotation rows h = u . w. Moving coordinate k turns
everything downstream of it by the twist S_k, so each row's gradient is one wrench per row,
  translation: (p_C x n, n)     rotation: (u x w, 0),
paired with S_k and signed by which side of the loop k lies on:
  Dh[r, k] = (ancestor[P_r, k] - ancestor[C_r, k]) * (wrench_r . S_k).
"""

from __future__ import annotations

import numpy as np

from ..lie import cross
from .compile import TreeModel
from .kinematics import Kinematics


def evaluate(model: TreeModel, kin: Kinematics, jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Residual h (nrow,) and Jacobian Dh (nrow, nq) at kin.q (Dh None when jacobian=False)."""
    if model.nrow == 0:
        return np.zeros(0), np.zeros((0, model.nq)) if jacobian else None
    Wp = kin.world_M_frame[model.row_frame_p]
    Wc = kin.world_M_frame[model.row_frame_c]
    a = np.einsum("rij,rj->ri", Wp[:, :3, :3], model.row_a)
    b = np.einsum("rij,rj->ri", Wc[:, :3, :3], model.row_b)
    trans = model.row_kind == 0
    point_p = a + Wp[:, :3, 3]
    point_c = b + Wc[:, :3, 3]
    n = np.einsum("rij,rj->ri", Wp[:, :3, :3], model.row_n)
    h = np.where(trans, np.einsum("ri,ri->r", n, point_p - point_c), np.einsum("ri,ri->r", a, b))
    if not jacobian:
        return h, None
    wrench = np.where(
        trans[:, None],
        np.concatenate([cross(point_c, n), n], axis=1),
        np.concatenate([cross(a, b), np.zeros_like(a)], axis=1),
    )
    side = model.ancestor[model.row_frame_p] - model.ancestor[model.row_frame_c]
    Dh = side * (wrench @ kin.axis_world[: model.nq].T)
    return h, Dh

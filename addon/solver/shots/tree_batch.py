"""A TreeModel's kinematics, Lagrangian terms and loop rows at K configurations at once (a shot's stages).

The same formulas as tree/kinematics.forward, tree/dynamics.terms, tree/constraints.evaluate and
tree_dynamics.constraint_force_dq (their docstrings derive them), with a leading axis K over the stages, so
that a shot evaluates its DEL rows and their exact Jacobian in a fixed number of numpy calls instead of one
call per interval. Only what shots use is supported: no ball or free joints (tree_dynamics refuses them),
so no chart springs. tests/solver/shots/test_tree_batch.py checks every output against the per-configuration
functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import evaluate
from ..lie import ad_twist, cross, hat
from ..tree.compile import ROT_Z, TreeModel
from ..tree.kinematics import world_frames_batch


@dataclass
class BatchKinematics:
    """world (K, nq + 1, 4, 4) frame poses (last: the world), S (K, nq, 6) world twist axes,
    body_R (K, nbody, 3, 3), body_com (K, nbody, 3) world centres of mass."""

    world: np.ndarray
    S: np.ndarray
    body_R: np.ndarray
    body_com: np.ndarray


def forward_batch(model: TreeModel, Q: np.ndarray, charts: np.ndarray) -> BatchKinematics:
    """Frame poses and twist axes at configurations Q (K, nq)."""
    K, nq = Q.shape
    world = world_frames_batch(model, Q, np.broadcast_to(charts, (K,) + charts.shape))
    R, origin = world[:, :nq, :3, :3], world[:, :nq, :3, 3]
    axis_index = model.dof_kind % 3
    e = np.swapaxes(R, 2, 3)[:, np.arange(nq), axis_index]  # (K, nq, 3): column axis_index of each R
    rot = model.dof_kind <= ROT_Z
    S = np.zeros((K, nq, 6))
    S[:, rot, :3] = e[:, rot]
    S[:, rot, 3:] = cross(origin[:, rot], e[:, rot])
    S[:, ~rot, 3:] = e[:, ~rot]
    body_M = world[:, model.body_frame] @ model.body_offset
    body_R = body_M[..., :3, :3]
    com = body_M[..., :3, 3] + np.einsum("kbij,bj->kbi", body_R, model.body_com)
    return BatchKinematics(world, S, body_R, com)


def _onto_frames(model: TreeModel, index: np.ndarray) -> np.ndarray:
    """(nq, n) summing matrix of items carried by frames `index` (n,); items on the world (-1) dropped."""
    out = np.zeros((model.nq, len(index)))
    keep = np.flatnonzero(index >= 0)
    out[index[keep], keep] = 1.0
    return out


def _subtree_sum(model: TreeModel, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum over the subtree of each frame of per-item values (K, n, ...) carried by frames index (n,)."""
    shape = values.shape
    flat = values.reshape(shape[0], shape[1], -1)
    out = np.einsum("fn,knx->kfx", model.subtree @ _onto_frames(model, index), flat)
    return out.reshape((shape[0], model.nq) + shape[2:])


def curve_values(curves, t: np.ndarray, default: float) -> np.ndarray:
    """(K, len(curves)): each curve at the times t (K,), `default` where a curve is None."""
    out = np.full((len(t), len(curves)), default)
    for j, c in enumerate(curves):
        if c is not None:
            out[:, j] = [evaluate(c, float(ti)) for ti in t]
    return out


@dataclass
class BatchTerms:
    """tree/dynamics.Terms at K points: p, g, Q (K, nq), energy (K,); M, A, B, Q_q (K, nq, nq) or None."""

    p: np.ndarray
    g: np.ndarray
    Q: np.ndarray
    energy: np.ndarray
    M: np.ndarray | None = None
    A: np.ndarray | None = None
    B: np.ndarray | None = None
    Q_q: np.ndarray | None = None


def terms_batch(model: TreeModel, kin: BatchKinematics, q: np.ndarray, qd: np.ndarray, t: np.ndarray,
                second: bool = True) -> BatchTerms:
    """Lagrangian terms at (q, qd, t) (K, nq), (K, nq), (K,); kin = forward_batch(model, q, ...)."""
    K, nq = qd.shape
    S = kin.S
    V = np.einsum("fj,kjx->kfx", model.ancestor[:nq], S * qd[:, :, None])
    V_parent = np.concatenate([V, np.zeros((K, 1, 6))], axis=1)[:, model.dof_parent]
    m = model.body_mass
    Ib = kin.body_R @ model.body_inertia @ np.swapaxes(kin.body_R, 2, 3)
    C = hat(kin.body_com)
    I_body = np.empty((K, len(m), 6, 6))
    I_body[..., :3, :3] = Ib - m[:, None, None] * (C @ C)
    I_body[..., :3, 3:] = m[:, None, None] * C
    I_body[..., 3:, :3] = -m[:, None, None] * C
    I_body[..., 3:, 3:] = m[:, None, None] * np.eye(3)
    onto = _onto_frames(model, model.body_frame)
    I_frame = np.einsum("fb,kbxy->kfxy", onto, I_body)
    Ic = np.einsum("fg,kgxy->kfxy", model.subtree, I_frame)
    H = np.einsum("fg,kgi->kfi", model.subtree, np.einsum("kfij,kfj->kfi", I_frame, V))
    Sdot = ad_twist(V_parent, S)
    p = np.sum(S * H, axis=2)
    g = np.sum(Sdot * H, axis=2)

    nb = len(m)
    points = [kin.body_com]
    forces = [np.broadcast_to(m[:, None] * np.asarray(model.gravity, float), (K, nb, 3))]
    frames = [np.asarray(model.body_frame)]
    if len(model.force_frame):
        W_f = kin.world[:, model.force_frame]
        points.append(np.einsum("kfij,fj->kfi", W_f[..., :3, :3], model.force_point) + W_f[..., :3, 3])
        forces.append(model.force_vector[None] * curve_values(model.force_scale, t, 1.0)[:, :, None])
        frames.append(np.asarray(model.force_frame))
    points, forces, frames = np.concatenate(points, axis=1), np.concatenate(forces, axis=1), np.concatenate(frames)
    wrench = np.concatenate([cross(points, forces), forces], axis=2)
    W = _subtree_sum(model, frames, wrench)
    stretch = q - model.dof_rest
    Q = np.sum(S * W, axis=2) - model.dof_stiffness * stretch
    potential = -np.sum(forces[:, :nb] * points[:, :nb], axis=(1, 2))
    potential += 0.5 * np.sum(model.dof_stiffness * stretch ** 2, axis=1)
    out = BatchTerms(p, g, Q, 0.5 * np.sum(qd * p, axis=1) + potential)
    if not second:
        return out
    Kf = _subtree_sum(model, frames, points[:, :, :, None] * forces[:, :, None, :])
    a, b = model.pair_deep, model.pair_anc
    IcS = np.einsum("kaij,kaj->kai", Ic, S)
    IcSdot = np.einsum("kaij,kaj->kai", Ic, Sdot)
    Sa, Sb, Sdb = S[:, a], S[:, b], Sdot[:, b]
    M = np.zeros((K, nq, nq))
    M[:, a, b] = np.sum(Sb * IcS[:, a], axis=2)
    M[:, b, a] = M[:, a, b]
    ad_b_a = ad_twist(Sb, Sa)
    A = np.zeros((K, nq, nq))
    A[:, b, a] = np.sum(ad_b_a * H[:, a], axis=2) + np.sum(Sb * IcSdot[:, a], axis=2)
    A[:, a, b] = np.sum(Sdb * IcS[:, a], axis=2)
    B = np.zeros((K, nq, nq))
    B[:, a, b] = np.sum(Sdb * IcSdot[:, a], axis=2) + np.sum(ad_twist(Sdb, Sa) * H[:, a], axis=2)
    B[:, b, a] = B[:, a, b]
    F = W[:, :, 3:]
    w_a, w_b, v_b = Sa[..., :3], Sb[..., :3], Sb[..., 3:]
    trK = np.trace(Kf, axis1=2, axis2=3)
    dW = np.einsum("kpij,kpj->kpi", Kf[:, a], w_b) - w_b * trK[:, a, None] + cross(v_b, F[:, a])
    Q_q = np.zeros((K, nq, nq))
    Q_q[:, a, b] = np.sum(ad_b_a * W[:, a], axis=2) + np.sum(w_a * dW, axis=2)
    Q_q[:, b, a] = Q_q[:, a, b]
    Q_q -= np.diag(model.dof_stiffness)
    out.M, out.A, out.B, out.Q_q = M, A, B, Q_q
    return out


def loops_batch(model: TreeModel, kin: BatchKinematics, rows: np.ndarray,
                jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Loop residuals h (K, len(rows)) and Jacobians Dh (K, len(rows), nq) of the kept rows."""
    Wp = kin.world[:, model.row_frame_p[rows]]
    Wc = kin.world[:, model.row_frame_c[rows]]
    a = np.einsum("krij,rj->kri", Wp[..., :3, :3], model.row_a[rows])
    b = np.einsum("krij,rj->kri", Wc[..., :3, :3], model.row_b[rows])
    trans = model.row_kind[rows] == 0
    pc = b + Wc[..., :3, 3]
    n = np.einsum("krij,rj->kri", Wp[..., :3, :3], model.row_n[rows])
    h = np.where(trans, np.sum(n * (a + Wp[..., :3, 3] - pc), axis=2), np.sum(a * b, axis=2))
    if not jacobian:
        return h, None
    wrench = np.where(trans[:, None], np.concatenate([cross(pc, n), n], axis=2),
                      np.concatenate([cross(a, b), np.zeros_like(a)], axis=2))
    side = model.ancestor[model.row_frame_p[rows]] - model.ancestor[model.row_frame_c[rows]]
    return h, side * np.einsum("kri,kqi->krq", wrench, kin.S)


def constraint_force_dq_batch(model: TreeModel, kin: BatchKinematics, lam: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """d/dq of Dh(q)[rows]^T lam at each configuration: (K, nq, nq), lam (K, len(rows))."""
    K, nq = kin.S.shape[:2]
    out = np.zeros((K, nq, nq))
    S = kin.S
    omega, lin = S[..., :3], S[..., 3:]
    anc = model.ancestor
    ad_jk = ad_twist(S[:, :, None, :], S[:, None, :, :])  # (K, nq_j, nq_k, 6)
    for i, r in enumerate(rows):
        fp, fc = model.row_frame_p[r], model.row_frame_c[r]
        Rp, Rc = kin.world[:, fp, :3, :3], kin.world[:, fc, :3, :3]
        a, b = Rp @ model.row_a[r], Rc @ model.row_b[r]
        in_p, in_c = anc[fp][None, :, None], anc[fc][None, :, None]
        if model.row_kind[r] == 0:
            n = Rp @ model.row_n[r]
            pc = b + kin.world[:, fc, :3, 3]
            wrench = np.concatenate([cross(pc, n), n], axis=1)
            dn = in_p * cross(omega, n[:, None])
            dpc = in_c * (cross(omega, pc[:, None]) + lin)
            dwrench = np.concatenate([cross(dpc, n[:, None]) + cross(pc[:, None], dn), dn], axis=2)
        else:
            wrench = np.concatenate([cross(a, b), np.zeros((K, 3))], axis=1)
            da = in_p * cross(omega, a[:, None])
            db = in_c * cross(omega, b[:, None])
            dwrench = np.concatenate([cross(da, b[:, None]) + cross(a[:, None], db), np.zeros((K, nq, 3))], axis=2)
        side = anc[fp] - anc[fc]
        term_s = np.einsum("bi,bjki->bkj", wrench, ad_jk) * anc[:nq]
        term_w = np.einsum("bji,bki->bkj", dwrench, S)
        out += lam[:, i, None, None] * side[None, :, None] * (term_w + term_s)
    return out

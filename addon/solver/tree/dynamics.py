"""Lagrangian terms of a TreeModel and their exact first and second derivatives, in O(n * depth).

This replaces seed 000's per-frame 4x4 derivative tensors (eqs. 2-10, 23-27) by spatial-algebra
recursions (the structure exploited in seed 004, Props. 3/4). In world coordinates, with S_k the
twist axis of coordinate k, V_f the velocity of frame f, lambda(k) the parent of k, Sdot_k =
ad(V_lambda(k)) S_k, Ic_j the composite spatial inertia of the subtree of j and H_j = sum of
spatial momenta I_f V_f over that subtree, and for every pair b ancestor-or-self of a:

  p_a = dT/dqdot_a = S_a . H_a               g_a = dT/dq_a = Sdot_a . H_a
  M[a, b] = M[b, a] = S_b . Ic_a S_a
  A = d p / d q:   A[a, b] = Sdot_b . Ic_a S_a
                   A[b, a] = ad(S_b) S_a . H_a + S_b . Ic_a Sdot_a
  B = d g / d q:   B[a, b] = B[b, a] = Sdot_b . Ic_a Sdot_a + ad(Sdot_b) S_a . H_a

d(L_q)/d(qdot) is A^T. Point forces F (gravity m g at each com, user forces at body points) enter as
generalized forces Q_a = S_a . W_a, W_a = sum over the subtree of (c x F, F), with
dQ_a/dq_b = ad(S_b) S_a . W_a + w_a . (K_a w_b - w_b tr K_a + v_b x F_a), K_a = sum c F^T
(w, v the angular and linear parts of S). Springs on ball and free rotations add their Q, potential and
Q_q on the chart coordinates (ball_springs.py). Every formula is checked against finite differences in
tests/solver/tree/test_dynamics.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import evaluate
from ..lie import ad_twist, cross, hat
from .ball_springs import chart_springs, has_springs
from .compile import TreeModel
from .kinematics import Kinematics, frame_velocities


@dataclass
class Terms:
    """Lagrangian quantities at one (q, qdot, t). Vectors (nq,), matrices (nq, nq).

    p = dT/dqdot, g = dT/dq, Q = generalized point forces (gravity + user forces) and joint springs
    (-dV/dq for the conservative part), kinetic, potential: scalars. With second derivatives:
    M = d2T/dqdot2, A = dp/dq, B = d2T/dq2, Q_q = dQ/dq.
    Per-coordinate quantities the O(n) Newton direction reads (tree/articulated.py): V (nq + 1, 6) frame
    velocities (last row: the world), S, Sdot (nq, 6) twist axes and their rates, Ic (nq, 6, 6) composite inertias, H, W (nq, 6) subtree momenta and wrenches,
    K (nq, 3, 3) subtree sums of c F^T over the point forces.
    """

    p: np.ndarray
    g: np.ndarray
    Q: np.ndarray
    kinetic: float
    potential: float
    V: np.ndarray
    S: np.ndarray
    Sdot: np.ndarray
    Ic: np.ndarray
    H: np.ndarray
    W: np.ndarray
    K: np.ndarray
    M: np.ndarray | None = None
    A: np.ndarray | None = None
    B: np.ndarray | None = None
    Q_q: np.ndarray | None = None


def _frame_sum(model: TreeModel, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sum per-item values (n, ...) onto their frames (nq, ...); items on the world (-1) are dropped."""
    out = np.zeros((model.nq,) + values.shape[1:])
    keep = index >= 0
    np.add.at(out, index[keep], values[keep])
    return out


def _body_spatial_inertia(model: TreeModel, kin: Kinematics) -> np.ndarray:
    """World spatial inertias about the world origin, (nbody, 6, 6), (angular, linear) order."""
    m = model.body_mass
    Rw = kin.body_R
    Ic = Rw @ model.body_inertia @ np.transpose(Rw, (0, 2, 1))
    C = hat(kin.body_com_world)
    out = np.empty((len(m), 6, 6))
    out[:, :3, :3] = Ic - m[:, None, None] * (C @ C)
    out[:, :3, 3:] = m[:, None, None] * C
    out[:, 3:, :3] = -m[:, None, None] * C
    out[:, 3:, 3:] = m[:, None, None] * np.eye(3)
    return out


def user_force_vectors(model: TreeModel, t: float) -> np.ndarray:
    """World force vectors (nforce, 3) of the user forces at time t (each scaled by its curve, if keyed)."""
    scale = np.array([1.0 if c is None else evaluate(c, t) for c in model.force_scale])
    return model.force_vector * scale[:, None]


def point_forces(model: TreeModel, kin: Kinematics, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World application points (n, 3), forces (n, 3) and carrying frames (n,) of gravity and user forces."""
    g = np.asarray(model.gravity)
    points = [kin.body_com_world]
    forces = [model.body_mass[:, None] * g[None, :]]
    frames = [np.asarray(model.body_frame)]
    if len(model.force_frame):
        world = kin.world_M_frame[model.force_frame]
        points.append(np.einsum("fij,fj->fi", world[:, :3, :3], model.force_point) + world[:, :3, 3])
        forces.append(user_force_vectors(model, t))
        frames.append(np.asarray(model.force_frame))
    return np.concatenate(points), np.concatenate(forces), np.concatenate(frames)


def mass_matrix(model: TreeModel, S: np.ndarray, IcS: np.ndarray) -> np.ndarray:
    """M (nq, nq) from the axes S and the composite inertias applied to them, Ic S (nq, 6): M[a, b] = S_b . Ic_a S_a
    for b an ancestor of a (or a itself), zero between branches."""
    a, b = model.pair_deep, model.pair_anc
    M = np.zeros((model.nq, model.nq))
    M[a, b] = np.einsum("pi,pi->p", S[b], IcS[a])
    M[b, a] = M[a, b]
    return M


def terms(model: TreeModel, kin: Kinematics, qd: np.ndarray, t: float, second: bool = True) -> Terms:
    """Evaluate the Lagrangian terms at (kin.q, qd, t). With second=True also M, A, B and Q_q."""
    nq = model.nq
    S = kin.axis_world[:nq]
    V = frame_velocities(model, kin, qd)
    V_parent = V[model.dof_parent]
    I_body = _body_spatial_inertia(model, kin)
    I_frame = _frame_sum(model, model.body_frame, I_body)
    Ic = (model.subtree @ I_frame.reshape(nq, 36)).reshape(nq, 6, 6)
    h_frame = np.einsum("fij,fj->fi", I_frame, V[:nq])
    H = model.subtree @ h_frame
    Sdot = ad_twist(V_parent, S)

    p = np.einsum("ai,ai->a", S, H)
    g = np.einsum("ai,ai->a", Sdot, H)
    kinetic = 0.5 * float(qd @ p)

    points, forces, frames = point_forces(model, kin, t)
    wrench = np.concatenate([cross(points, forces), forces], axis=1)
    W = model.subtree @ _frame_sum(model, frames, wrench)
    Q = np.einsum("ai,ai->a", S, W) - model.dof_stiffness * (kin.q - model.dof_rest)
    nbody = len(model.body_mass)
    potential = -float(np.sum(forces[:nbody] * points[:nbody]))
    potential += 0.5 * float(np.sum(model.dof_stiffness * (kin.q - model.dof_rest) ** 2))
    springs = None
    if has_springs(model):  # ball and free rotations: toward their rest rotations (ball_springs.py)
        springs = chart_springs(model, kin.charts, kin.q[model.ball_dofs])
        Q[model.ball_dofs] += springs.Q
        potential += springs.potential
    K = model.subtree @ _frame_sum(model, frames, np.einsum("ni,nj->nij", points, forces)).reshape(nq, 9)
    K = K.reshape(nq, 3, 3)
    out = Terms(p=p, g=g, Q=Q, kinetic=kinetic, potential=potential, V=V, S=S, Sdot=Sdot, Ic=Ic, H=H, W=W, K=K)
    if not second:
        return out

    a, b = model.pair_deep, model.pair_anc
    IcS = np.einsum("aij,aj->ai", Ic, S)
    IcSdot = np.einsum("aij,aj->ai", Ic, Sdot)
    M = mass_matrix(model, S, IcS)

    ad_b_a = ad_twist(S[b], S[a])
    A = np.zeros((nq, nq))
    A[b, a] = np.einsum("pi,pi->p", ad_b_a, H[a]) + np.einsum("pi,pi->p", S[b], IcSdot[a])
    A[a, b] = np.einsum("pi,pi->p", Sdot[b], IcS[a])  # overwrites the diagonal with the same value

    B = np.zeros((nq, nq))
    B[a, b] = np.einsum("pi,pi->p", Sdot[b], IcSdot[a]) + np.einsum("pi,pi->p", ad_twist(Sdot[b], S[a]), H[a])
    B[b, a] = B[a, b]

    F = W[:, 3:]
    w_a, w_b, v_b = S[a, :3], S[b, :3], S[b, 3:]
    trK = np.trace(K, axis1=1, axis2=2)
    dW = np.einsum("pij,pj->pi", K[a], w_b) - w_b * trK[a][:, None] + cross(v_b, F[a])
    Q_q = np.zeros((nq, nq))
    Q_q[a, b] = np.einsum("pi,pi->p", ad_b_a, W[a]) + np.einsum("pi,pi->p", w_a, dW)
    Q_q[b, a] = Q_q[a, b]
    Q_q -= np.diag(model.dof_stiffness)
    if springs is not None:
        for b, dofs in enumerate(model.ball_dofs):
            Q_q[np.ix_(dofs, dofs)] += springs.Q_q[b]
    out.M, out.A, out.B, out.Q_q = M, A, B, Q_q
    return out

"""The link-wise discrete Lagrangian of the tree method on trees with ball joints: rows, next momentum, exact O(n)
Newton matrix.

The chart midpoint (midpoint.del_system, lie_rows.py) takes each link's midpoint rotation as the product of its
ancestors' chart midpoints, which lets an axisymmetric link's spin reach its subtree: a rope of slender ball-jointed
links twists up (docs/benchmarks_ball_charts.md). On every model with a ball joint the tree method's step
(midpoint.step) takes instead each link k's own term of its own end poses (COM c, world rotation R, mass m, inertia
I about the COM in body axes):
  l_k = m |c2 - c1|^2 / (2 dt) + Xi^T I Xi / (2 dt),   Xi = log(R1^T R2),
and the potential (gravity, user point forces at the step's mid time, joint and ball springs) as the mean of its
two ends, -dt/2 (V(q1) + V(q2)). The spin of an axisymmetric link about its axis is then a Noether momentum of its
own term (turning it about its axis at both ends, its children's world poses held, changes no term).
The unknowns are the tree's: a ball or free chart's rotation vector xi (C2 = C1 exp(xi), step_charts.py), q2
elsewhere. With w1_k, w2_k the world wrenches of l_k at the start and end poses (variation by a world twist
(w, v): dc = v + w x c, dR = hat(w) R), Q(q) = -dV/dq (dynamics.terms at zero velocity) and f_c the forcing
(damping, servos, keyed torques at v = (q2 - q1) / dt, midpoint.nonconservative_forces), the row of coordinate i
(world axis S_i(q1), a chart at angle 0) and the next momentum are
  F_i = p1_i + S_i(q1) . sum_{k in subtree(i)} w1_k + dt/2 (Q_i(q1) + f_c_i),
  p2_i = S_i(q2) . sum_{k in subtree(i)} w2_k + dt/2 (Q_i(q2) + f_c_i).
Only w1_k and f_c move with the unknowns, w1_k through link k's end pose, which a column j turns by the world
twist S'_j = S(q2) J_R(xi) (S(q2) on a one-coordinate joint) for every k below j. So, with D_k = dw1_k / d(end
twist) (6 x 6) and Dc_a the sum of D_k over the subtree of a,
  dF_i / du_j = S_i(q1)^T Dc_deeper(i, j) S'_j - [i = j] (damping_i + gain_i) / 2   (zero between branches),
exactly the tree form of articulated.TreeJacobian (U = S', x = Dc^T S1, R = S1, Yc = Dc S'), which
articulated.factor and solve eliminate in O(n) with no curvature terms. With f1 = -m (c2 - c1) / dt,
mu = I Xi / dt, w1 = (c1 x f1 - R1 J_L(Xi)^-T mu, f1), dXi = J_L(Xi)^-1 R1^T w2 for an end turn w2,
J_L^-T = I + hat(Xi)/2 + e hat(Xi)^2, e(t) = (1 - (t/2) cot(t/2)) / t^2:
  rotation rows:  m/dt hat(c1) (hat(c2) w2 - v2)  - R1 (dG + J_L^-T I / dt) J_L^-1 R1^T w2,
  force rows:     m/dt (hat(c2) w2 - v2),
dG = d(J_L(Xi)^-T y)/dXi at y = mu (_dinv_transpose). Loop rows and joint limits border this matrix as in
midpoint.py, with G1 = Dh(q1) on the start's chart axes and G2 = Dh(q2) J_R(xi). The end increments c2 - c1 and
Xi are composed down the tree (increments), so their rounding is relative to the step, not to the rope's size.
The step's energy is its links' kinetic energy at the step's velocities plus 2 V(qm) - (V(q1) + V(q2)) / 2, qm the
joint-space midpoint (a chart at angle 0 in C1 exp(xi / 2)). The mean of the ends alone would also estimate the
energy at the step's middle to O(dt^2), but it carries (q2 - q1)^T V'' (q2 - q1) / 4, an oscillation at twice the
motion's frequency that this Lagrangian's flow does not have: on a harmonic oscillator, m v^2 / 2 + k q1 q2 / 2 is its
exact invariant, and that is 2 V(qm) - (V1 + V2) / 2 with the kinetic term. On a 4-link rope at dt = 0.04 the
reported energy's band is 0.0052 J by this rule against 0.041 J by the mean (measured), so the energy audit of a bake
(energy_audit.py) reads the step's error, not that oscillation.
It is, up to the rotation map, the maximal method's per-body Lagrangian restricted to the joints: the two agree
at second order (tests/solver/tree/test_linkwise.py).
The C kernel (native/tree_step.c) runs the same rows, matrix and energy (symplex_tree.linkwise) and gives this
module's iterates to round-off (tests/solver/test_native.py); its factor takes the tree form 6 x 6.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import hat
from . import articulated
from .compile import TreeModel
from .dynamics import terms
from .kinematics import Kinematics, forward, local_transforms
from .step_charts import _outer, left_jacobian, rotation_at

ROUNDOFF_STEP = 1e-13  # rad: a Newton correction this small changes no chart beyond rounding
_SERIES_BELOW = 0.1


def applies(model: TreeModel) -> bool:
    """Whether the tree method steps `model` by this Lagrangian: it has a ball joint (free joints alone keep the
    chart midpoint: a single rigid body's chart has no subtree for its spin to leak into)."""
    joints = model.mechanism.joints
    return any(joints[int(model.dof_joint[k[0]])].type == "ball" for k in model.ball_dofs)


def _e_coefficients(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """e(t) of J_L^-1 = I - hat/2 + e hat^2 and e'(t) / t."""
    small = t < _SERIES_BELOW
    s = np.where(small, 1.0, t)
    t2 = t * t
    e = np.where(small, 1 / 12 + t2 / 720 + t2**2 / 30240, (1.0 - 0.5 * s / np.tan(0.5 * s)) / s**2)
    de = np.where(small, 1 / 360 + t2 / 7560 + t2**2 / 201600,
                  (-2.0 / s**3 + 0.5 / (s**2 * np.tan(0.5 * s)) + 0.25 / (s * np.sin(0.5 * s) ** 2)) / s)
    return e, de


def inverse_left_jacobian_transpose(Xi: np.ndarray) -> np.ndarray:
    """J_L(Xi)^-T (..., 3, 3) = I + hat(Xi) / 2 + e hat(Xi)^2."""
    e, _ = _e_coefficients(np.linalg.norm(Xi, axis=-1))
    X = hat(Xi)
    return np.eye(3) + 0.5 * X + e[..., None, None] * (X @ X)


def _dinv_transpose(Xi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d(J_L(Xi)^-T y)/dXi (..., 3, 3) at fixed y."""
    e, de = _e_coefficients(np.linalg.norm(Xi, axis=-1))
    xy = np.einsum("...i,...i->...", Xi, y)
    XXy = Xi * xy[..., None] - y * np.einsum("...i,...i->...", Xi, Xi)[..., None]
    return (-0.5 * hat(y) + e[..., None, None] * (xy[..., None, None] * np.eye(3) + _outer(Xi, y) - 2.0 * _outer(y, Xi))
            + de[..., None, None] * _outer(XXy, Xi))


def end_configuration(model: TreeModel, q1: np.ndarray, charts: np.ndarray, u: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(q2, charts2) at unknowns u: C2 = C1 exp(xi) on the charts (q2 = 0 there), q2 = u elsewhere."""
    k = model.ball_dofs
    if not len(k):
        return u, charts
    q2 = u.copy()
    q2[k] = 0.0
    return q2, rotation_at(charts, u[k], 1.0)


def _subtree_sum(model: TreeModel, per_body: np.ndarray) -> np.ndarray:
    """Sum over each frame's subtree of per-body arrays (nbody, ...) -> (nq, ...) (frames parents first)."""
    out = np.zeros((model.nq + 1,) + per_body.shape[1:])
    np.add.at(out, model.body_frame, per_body)
    for f in range(model.nq - 1, -1, -1):
        out[model.dof_parent[f]] += out[f]
    return out[:-1]


def increments(model: TreeModel, q1: np.ndarray, charts: np.ndarray, k1: Kinematics, u: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each body's COM displacement c2 - c1 (nbody, 3) and rotation vector Xi = log(R1^T R2) (nbody, 3) over the
    step to unknowns u, composed down the tree as increments (E = R1^T R2 - I per frame, dx = o2 - o1): differences
    of the two ends' positions lose eps |c| / dt of momentum per link (1e-5 on the top rows of a 1000-link rope)."""
    nq = model.nq
    first_of = {int(f): b for b, f in enumerate(model.ball_dofs[:, 0])}
    q2, charts2 = end_configuration(model, q1, charts, u)
    L1 = local_transforms(model, q1, charts)
    L2 = local_transforms(model, q2, charts2)
    E = np.zeros((nq + 1, 3, 3))  # frame nq stands for the world
    dx = np.zeros((nq + 1, 3))
    W1 = k1.world_M_frame[:, :3, :3]
    for f in range(nq):
        p = model.dof_parent[f]
        dx[f] = dx[p] + W1[p] @ (E[p] @ L2[f, :3, 3] + (L2[f, :3, 3] - L1[f, :3, 3]))
        b = first_of.get(f)
        if b is None:  # a fixed placement or a primitive's turn: R1^T R2 - I of the local rotations
            E[f] = L1[f, :3, :3].T @ E[p] @ L2[f, :3, :3] + (L1[f, :3, :3].T @ L2[f, :3, :3] - np.eye(3))
        else:  # the chart's turn exp(xi) - I in closed form (no cancellation against I)
            Q = L1[f, :3, :3]
            xi = u[model.ball_dofs[b]]
            X = hat(xi)
            th = np.linalg.norm(xi)
            a, c = (np.sin(th) / th, (1 - np.cos(th)) / th**2) if th > 1e-4 else (1 - th**2 / 6, 0.5 - th**2 / 24)
            expm1 = a * X + c * (X @ X)
            E[f] = Q.T @ E[p] @ Q @ (np.eye(3) + expm1) + expm1
    frame = model.body_frame
    off_R, off_t = model.body_offset[:, :3, :3], model.body_offset[:, :3, 3]
    r = off_t + np.einsum("bij,bj->bi", off_R, model.body_com)
    dc = dx[frame] + np.einsum("bij,bj->bi", W1[frame], np.einsum("bij,bj->bi", E[frame], r))
    Eb = np.transpose(off_R, (0, 2, 1)) @ E[frame] @ off_R
    A = 0.5 * (Eb - np.transpose(Eb, (0, 2, 1)))
    v = np.stack([A[:, 2, 1], A[:, 0, 2], A[:, 1, 0]], axis=1)
    sin = np.linalg.norm(v, axis=1)
    th = np.arctan2(sin, 1.0 + 0.5 * np.trace(Eb, axis1=1, axis2=2))
    factor = np.where(sin < 1e-8, 1.0 + th**2 / 6, th / np.where(sin < 1e-8, 1.0, sin))
    return dc, factor[:, None] * v


def wrenches(model: TreeModel, k1: Kinematics, k2: Kinematics, dt: float, end: int,
             steps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per-body kinetic wrenches w1 (end 1) or w2 (end 2) (nbody, 6); steps = increments(...)."""
    dc, Xi = steps
    mu = np.einsum("bij,bj->bi", model.body_inertia, Xi) / dt
    JinvT = inverse_left_jacobian_transpose(Xi)
    if end == 1:
        f = -model.body_mass[:, None] * dc / dt
        tau = -np.einsum("bij,bj->bi", k1.body_R, np.einsum("bij,bj->bi", JinvT, mu))
        c = k1.body_com_world
    else:  # J_R^-T = J_L^-1
        f = model.body_mass[:, None] * dc / dt
        tau = np.einsum("bij,bj->bi", k2.body_R, np.einsum("bji,bj->bi", JinvT, mu))
        c = k2.body_com_world
    return np.concatenate([np.cross(c, f) + tau, f], axis=1)


def end_blocks(model: TreeModel, k1: Kinematics, k2: Kinematics, Xi: np.ndarray, dt: float) -> np.ndarray:
    """D_k = dw1_k / d(end twist (w2, v2)) (nbody, 6, 6)."""
    R1, c1, c2 = k1.body_R, k1.body_com_world, k2.body_com_world
    I = model.body_inertia
    m = (model.body_mass / dt)[:, None, None]
    C1, C2 = hat(c1), hat(c2)
    D = np.zeros((len(model.body_mass), 6, 6))
    D[:, 3:, :3] = m * C2
    D[:, 3:, 3:] = -m * np.eye(3)
    D[:, :3, :3] = C1 @ D[:, 3:, :3]
    D[:, :3, 3:] = C1 @ D[:, 3:, 3:]
    mu = np.einsum("bij,bj->bi", I, Xi) / dt
    JinvT = inverse_left_jacobian_transpose(Xi)
    inner = (_dinv_transpose(Xi, mu) + JinvT @ I / dt) @ np.transpose(JinvT, (0, 2, 1))
    D[:, :3, :3] -= R1 @ inner @ np.transpose(R1, (0, 2, 1))
    return D


def mid_potential(model: TreeModel, q1: np.ndarray, charts: np.ndarray, u: np.ndarray, t_mid: float) -> float:
    """V at the step's joint-space midpoint: (q1 + q2) / 2, a chart at angle 0 in C1 exp(xi / 2)."""
    qm = 0.5 * (q1 + u)
    k = model.ball_dofs
    if len(k):
        qm[k] = 0.0
        charts = rotation_at(charts, u[k], 0.5)
    return terms(model, forward(model, qm, charts), np.zeros(model.nq), t_mid, second=False).potential


@dataclass(frozen=True)
class LinkRows:
    """The link-wise rows at one iterate u (module docstring): F (nq,) before loop and limit impulses, their tree
    Jacobian, the end kinematics kin2 (charts C1 exp(xi)), J_R(xi) of the charts (nball, 3, 3) (loop rows' end
    columns), the next momentum p2 (nq,), the kinetic wrench total momentum (6,) (D2Ld's, world axes), the
    step's energy (module docstring) and scale, the largest of the rows' terms (their round-off floor)."""

    F: np.ndarray
    jacobian: articulated.TreeJacobian
    kin2: Kinematics
    JR: np.ndarray
    p2: np.ndarray
    momentum: np.ndarray
    energy: float
    scale: float


def rows(model: TreeModel, q1: np.ndarray, charts: np.ndarray, p1: np.ndarray, k1: Kinematics, u: np.ndarray,
         dt: float, t_mid: float, forcing: np.ndarray) -> LinkRows:
    """The rows, next momentum and tree Jacobian at unknowns u (nq,) from (q1 in charts, p1), k1 = forward(q1);
    forcing (nq,) = f_c at v = (u - q1) / dt and t_mid (midpoint.nonconservative_forces)."""
    k2 = forward(model, *end_configuration(model, q1, charts, u))
    steps = increments(model, q1, charts, k1, u)
    w1 = wrenches(model, k1, k2, dt, 1, steps)
    w2 = wrenches(model, k1, k2, dt, 2, steps)
    nq = model.nq
    zero = np.zeros(nq)
    ends = terms(model, k1, zero, t_mid, second=False), terms(model, k2, zero, t_mid, second=False)
    S1, S2 = k1.axis_world[:-1], k2.axis_world[:-1]
    kinetic1 = np.einsum("ai,ai->a", S1, _subtree_sum(model, w1))
    F = p1 + kinetic1 + 0.5 * dt * (ends[0].Q + forcing)
    p2 = np.einsum("ai,ai->a", S2, _subtree_sum(model, w2)) + 0.5 * dt * (ends[1].Q + forcing)
    Dc = _subtree_sum(model, end_blocks(model, k1, k2, steps[1], dt))  # (nq, 6, 6)
    Sp = S2.copy()  # a column's end twist: S(q2), times J_R(xi) on a chart
    k = model.ball_dofs
    JR = np.transpose(left_jacobian(u[k]), (0, 2, 1)) if len(k) else np.zeros((0, 3, 3))
    if len(k):
        Sp[k] = np.einsum("bmk,bmj->bjk", Sp[k], JR)
    U = np.concatenate([Sp, np.zeros((nq, 6))], axis=1)
    x = np.concatenate([np.einsum("aji,aj->ai", Dc, S1), np.zeros((nq, 6))], axis=1)
    R = np.concatenate([S1, np.zeros((nq, 12))], axis=1)
    DcSp = np.einsum("aij,aj->ai", Dc, Sp)
    Yc = np.concatenate([DcSp, np.zeros((nq, 12))], axis=1)
    friction = 0.5 * (model.dof_damping + model.dof_motor_gain)  # d(dt/2 f_c)/du = -(damping + gain) / 2
    d = np.einsum("ai,ai->a", S1, DcSp) - friction
    blocks = np.einsum("bik,bjk->bij", S1[k], DcSp[k]) - friction[k][:, :, None] * np.eye(3)
    dc, Xi = steps
    kinetic = 0.5 * (model.body_mass @ np.einsum("bi,bi->b", dc, dc)
                     + np.einsum("bi,bij,bj->", Xi, model.body_inertia, Xi)) / dt**2
    energy = float(kinetic + 2.0 * mid_potential(model, q1, charts, u, t_mid)
                   - 0.5 * (ends[0].potential + ends[1].potential))
    # the rows' round-off floor: their largest term (the momenta, or the forces' impulse on a long rope at rest)
    scale = max(float(np.max(np.abs(p1))), float(np.max(np.abs(kinetic1))),
                0.5 * dt * float(np.max(np.abs(ends[0].Q)))) if nq else 0.0
    return LinkRows(F, articulated.TreeJacobian(U, x, R, Yc, d, blocks), k2, JR, p2, w2.sum(axis=0), energy, scale)

"""Lie group DEL rows of ball and free-joint rotations: exact rotation invariance across chart changes.

A ball chart's three coordinates are Euler angles psi in a chart C1 that midpoint.py resets to the
current rotation after every step (q1 = 0). The step's discrete Lagrangian, as a function of the two
rotations, is Ld(C1, C2) = l(C1, psi) with C2 = C1 Phi(psi) (Phi the rx ry rz chain) and
l(C, psi) = dt L(midpoint in chart C at psi / 2, rates psi / dt). It is invariant under rotating
everything, but the plain midpoint row D1 l |C fixed (the chart frozen) is not its derivative in C1, which
is what broke discrete Noether for angular momentum. With body-frame variations C -> C exp(eta) (the
chart coordinates at q1 = 0 are exactly these):
  Ld(C1 exp(eta1), C2 exp(eta2)) moves psi by J_R(psi)^-1 eta2 - J_L(psi)^-1 eta1,
  D_C1 Ld = dl/dC |psi - J_L(psi)^-T dl/dpsi,   D_C2 Ld = J_R(psi)^-T dl/dpsi,
J_L: dPhi Phi^-1 = hat(J_L dpsi) (columns: the primitive axes at psi in chart axes), J_R: Phi^-1 dPhi =
hat(J_R dpsi) (called Jb below). Moving C at fixed psi turns the ball's child and everything below it about the ball centre o
with the relative body velocities unchanged, so, as for a joint axis (dynamics.py), with E_j the twist of
chart axis j through o at the midpoint and V_P the velocity of the ball's parent frame,
  dl/dC_j |psi = dt ((ad(V_P) E_j) . H + E_j . W)      (H, W: the ball subtree's momentum and wrench);
a spring on the ball's rotation (ball_springs.py) depends on C Phi(psi / 2) and adds -dt dV/deta there. The DEL row
p1 + f- + D_C1 Ld - Dh1^T lam = 0 is solved multiplied by J_L(psi)^T, which keeps its Jacobian in tree form:
  F_i = w2_i . A2 pbar + dt ((ad(V_P) Et_i) . H + Et_i . W) - (dt/2 (g + Q)_i + p_i),
  pbar = p1 + dt/2 f_c - Dh1^T lam on the chart's coordinates,
w2_i the world axis of primitive i at q2, A2 the chart frame's world rotation at q2, Et_i the twist
through o of axis Am A2^T w2_i (Am: the chart frame at the midpoint). The next momentum D_C2 Ld is
what midpoint.py's fold already makes (p_new = J^T p_old). Damping, servos and keyed torques on a chart
act at its Cayley velocity w / dt, Phi(psi) = cay(w), as body impulses dt/2 f_c at both ends (f+ reaches
the chart coordinates at q2 as Jb^T dt/2 f_c): the Euler rates psi / dt made this forcing O(psi^2) wrong
per step and the method first order (measured); w(Phi^T) = -w(Phi) keeps it time-symmetric, order 2. Exact Jacobian of F (checked against finite
differences in tests/solver/tree/test_lie_rows.py), in articulated.TreeJacobian's terms:
  above the ball:  x_i = (dt/2 G_E, dt/2 X_E + G_E) - (y_i + (0, t_i))  with (G_E, X_E) of axis Et_i,
  below the ball:  R_i = (2 ad(V_P) Et_i - Sdot_i, 2 Et_i - S_i, Et_i - S_i),
  own 3 x 3 block: the same pairs inside the ball, plus the turning of the axes w2_i and Et_i with psi,
  and the forcing's -1/2 J_L^T diag(damping + gain) dw/dpsi, dw/dpsi = (I + hat(w)/2 + w w^T/4) Jb.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..groups import so3_dcay_inv
from ..lie import ad_twist, cross
from .articulated import TreeJacobian, axis_terms
from .ball_springs import chart_row_terms, chart_springs, has_springs
from .compile import TreeModel
from .dynamics import Terms
from .kinematics import Kinematics


@dataclass(frozen=True)
class ChartIncrements:
    """Each chart's step rotation Phi(psi) = cay(w) as a Cayley vector w (nball, 3) (chart = body axes, the
    same at both ends), dw/dpsi (nball, 3, 3), and Jb (nball, 3, 3) the body Jacobian of Phi at psi
    (Phi^-1 dPhi = hat(Jb dpsi)), which maps a body covector at C2 to the chart coordinates at q2."""

    w: np.ndarray
    dw: np.ndarray
    Jb: np.ndarray


def chart_increments(model: TreeModel, charts: np.ndarray, kin2: Kinematics) -> ChartIncrements:
    """The Cayley increments of the charts at q2 (q1 = 0): w = 2 vee(Phi - Phi^T) / (1 + tr Phi),
    dw/dpsi = (I + hat(w)/2 + w w^T/4) Jb (the inverse body derivative of cay, so3_dcay_inv(-w))."""
    k = model.ball_dofs
    P = model.dof_parent[k[:, 0]]
    A2 = kin2.world_M_frame[P, :3, :3] @ model.dof_placement[k[:, 0], :3, :3] @ charts
    RF = kin2.world_M_frame[k[:, 2], :3, :3]
    Phi = np.transpose(A2, (0, 2, 1)) @ RF
    skew = np.stack([Phi[:, 2, 1] - Phi[:, 1, 2], Phi[:, 0, 2] - Phi[:, 2, 0], Phi[:, 1, 0] - Phi[:, 0, 1]], axis=1)
    w = 2.0 * skew / (1.0 + np.trace(Phi, axis1=1, axis2=2))[:, None]
    Jb = np.transpose(RF, (0, 2, 1)) @ np.transpose(kin2.axis_world[k, :3], (0, 2, 1))
    return ChartIncrements(w, so3_dcay_inv(-w) @ Jb, Jb)


@dataclass(frozen=True)
class BallRows:
    """The Lie group rows of every ball chart: residuals F (nball, 3); couplings x (nball, 3, 12),
    R (nball, 3, 18) and own blocks (nball, 3, 3) for articulated.TreeJacobian; JL (nball, 3, 3) = J_L(psi),
    which maps the rows' loop-constraint columns (Dh1 on the chart's coordinates, times JL)."""

    F: np.ndarray
    x: np.ndarray
    R: np.ndarray
    blocks: np.ndarray
    JL: np.ndarray


def _twists(axes: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Twists (nball, 3, 6) of rotations about axes (nball, 3, 3) (rows) through centre (nball, 3)."""
    return np.concatenate([axes, cross(centre[:, None, :], axes)], axis=-1)


def ball_rows(model: TreeModel, charts: np.ndarray, kin_m: Kinematics, kin2: Kinematics, tm: Terms,
              tj: TreeJacobian, dt: float, pbar: np.ndarray, increments: ChartIncrements) -> BallRows:
    """The rows at the midpoint terms tm (kinematics kin_m) and q2 (kin2); pbar (nball, 3) as above, its
    forcing part taken at the chart velocities increments.w / dt."""
    k = model.ball_dofs
    base = k[:, 0]
    P = model.dof_parent[base]  # -1: the world (last row of the per-frame arrays)
    place = model.dof_placement[base, :3, :3] @ charts
    Am = kin_m.world_M_frame[P, :3, :3] @ place
    A2 = kin2.world_M_frame[P, :3, :3] @ place
    o = kin_m.world_M_frame[base, :3, 3]
    w2 = kin2.axis_world[k, :3]  # (nball, 3, 3), row i: primitive i's world axis at q2
    JL = np.transpose(A2, (0, 2, 1)) @ np.transpose(w2, (0, 2, 1))  # column i: axis i in chart axes
    rel = Am @ np.transpose(A2, (0, 2, 1))
    Et = _twists(np.einsum("bij,bkj->bki", rel, w2), o)
    VP = tm.V[P][:, None, :]
    Etdot = ad_twist(VP, Et)
    H, W = tm.H[base][:, None, :], tm.W[base][:, None, :]
    IcS_E, G_E, X_E = axis_terms(Et, Etdot, tm.Ic[base][:, None], H, W, tm.K[base][:, None])
    a2p = np.einsum("bij,bj->bi", A2, pbar)
    F = (np.einsum("bij,bj->bi", w2, a2p) + dt * (np.einsum("bij,bij->bi", Etdot, H) + np.einsum("bij,bij->bi", Et, W))
         - (0.5 * dt * (tm.g + tm.Q)[k] + tm.p[k]))

    Yc = tj.Yc[k]
    xD2 = Yc[..., :12].copy()  # the rows of dl/dpsi = dt/2 (g + Q) + p: x = y + (0, t)
    xD2[..., 6:] += Yc[..., 12:]
    x = np.concatenate([0.5 * dt * G_E, 0.5 * dt * X_E + G_E], axis=-1) - xD2
    S, Sdot = tm.S[k], tm.Sdot[k]
    R = np.concatenate([2 * Etdot - Sdot, 2 * Et - S, Et - S], axis=-1)

    U = tj.U[k]
    IcS, G, X = axis_terms(S, Sdot, tm.Ic[k], tm.H[k], tm.W[k], tm.K[k])
    dD2 = (0.25 * dt * (np.einsum("bij,bij->bi", Sdot, G) + np.einsum("bij,bij->bi", S, X) - model.dof_stiffness[k])
           + np.einsum("bij,bij->bi", Sdot, IcS) + np.einsum("bij,bij->bi", S, IcS) / dt)
    c = model.dof_damping[k] + model.dof_motor_gain[k]
    forcing = -0.5 * np.einsum("bji,bj,bjk->bik", JL, c, increments.dw)  # J_L^T d(dt/2 f_c)/dpsi
    EE = np.concatenate([Etdot, Et], axis=-1)
    blocks = np.zeros((len(k), 3, 3))
    for i in range(3):
        for j in range(3):
            # Et_i's pairing with the subtree as coordinate j moves it (j below the ball's base)
            value = 2 * np.einsum("bi,bi->b", EE[:, i], Yc[:, j, :12]) + np.einsum("bi,bi->b", Et[:, i], Yc[:, j, 12:])
            value += forcing[:, i, j]  # the damping and servo part of f- = dt/2 f_c(w / dt)
            if j < i:  # coordinate j turns axis i: w2_i and Et_i
                turn = cross(w2[:, j], w2[:, i])
                value += np.einsum("bi,bi->b", turn, a2p)
                dE = _twists(np.einsum("bij,bj->bi", rel, turn)[:, None, :], o)[:, 0]
                value += dt * (np.einsum("bi,bi->b", ad_twist(VP[:, 0], dE), H[:, 0])
                               + np.einsum("bi,bi->b", dE, W[:, 0]))
                value -= np.einsum("bi,bi->b", U[:, j], xD2[:, i])
            elif j > i:
                value -= np.einsum("bi,bi->b", U[:, i], xD2[:, j])
            else:
                value -= dD2[:, i]
            blocks[:, i, j] = value
    if has_springs(model):  # the springs' chart derivative and their own block (ball_springs.py)
        spring_F, spring_blocks = chart_row_terms(model, chart_springs(model, charts, kin_m.q[k]), JL, dt)
        F += spring_F
        blocks += spring_blocks
    return BallRows(F, x, R, blocks, JL)

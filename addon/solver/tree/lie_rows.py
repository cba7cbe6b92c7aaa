"""Lie group DEL rows of ball and free-joint rotations in per-step exponential coordinates (step_charts.py).

Each chart's unknown is the step's rotation vector xi: C2 = C1 exp(xi), the Lagrangian taken at the geodesic
midpoint Cm = C1 exp(xi / 2) with body angular velocity xi / dt, l(C1, xi) = dt L(Cm, xi / dt). The tree
evaluates it with the chart's rx ry rz primitives at angle 0 in chart Cm, where their world axes E_i are Cm's
axes through the ball centre o and their rates are body angular velocities. Varying xi by d turns Cm by the body
vector J_R(xi / 2) d / 2 and changes the body velocity by d / dt; varying C1 -> C1 exp(eta) at fixed C2 moves xi
by -J_L(xi)^-1 eta. With the chart torque gamma_i = (ad(V_P) E_i) . H + E_i . W + (spring torque)_i (H, W the
ball subtree's momentum and wrench, V_P its parent's velocity, ball_springs.py's spring in body axes) and the
momentum eta_i = E_i . H (= the primitives' p), D_C1 Ld = dt exp(xi / 2) gamma - J_L(xi)^-T dl/dxi and
dl/dxi = dt/2 J_R(xi / 2)^T gamma + eta. Multiplied by J_L(xi)^T, and with
exp(-xi / 2) J_L(xi) - J_R(xi / 2) / 2 = J_L(xi / 2) / 2 (both sides act as 1 on xi and as
(e^(i t / 2) - 1) / (i t) on its normal plane), the DEL row p1 + f- + D_C1 Ld - Dh1^T lam = 0 reads
  F = J_L(xi)^T pbar + dt/2 J_L(xi / 2)^T gamma - eta,   pbar = p1 + dt/2 f_c - Dh1^T lam (chart columns),
and the next momentum, a body covector at C2 (the new chart's coordinates at angle 0), is
  p2 = J_R(xi)^-T (dt/2 J_R(xi / 2)^T gamma + eta) + dt/2 f_c.
Damping, servos and keyed torques act at the body velocity xi / dt (time-symmetric: order 2).
Exact Jacobian of F in articulated.TreeJacobian's terms, with Ehat_i = sum_m J_L(xi/2)[m, i] E_m (the row's
axes) and S'_j = sum_m J_R(xi/2)[m, j] E_m (a column's pose twist is S'_j / 2, its velocity twist
E_j / dt + ad(V_P) S'_j / 2, written as S'_j / dt + Sdot'_j / 2):
  columns:  U_j = (Sdot'_j, S'_j),  Sdot'_j = ad(V_P) S'_j + 2 (E_j - S'_j) / dt,  Yc_j = column_vectors(S'_j),
  above:    x_i = (dt/4 G, dt/4 X + G / 2) of axis Ehat_i - (Ic E_i / 2, Ic E_i / dt),
  below:    R_i = (ad(V_P) Ehat_i, Ehat_i, (Ehat_i - E_i) / 2),
  own 3x3:  R_i . Yc_j + d(J_L(xi)^T pbar)/dxi - J_L^T diag(damping + gain) / 2 + dt/4 d(J_L^T gamma)/dxi (xi/2)
            + dt/2 (u_j x J_L(xi/2) e_i) . gamma_dyn - (u_j x e_i) . eta + dt/2 J_L(xi/2)^T dgamma_spring/dxi,
  u_j = J_R(xi/2) e_j / 2 (the turn of Cm), dgamma_spring/dxi = -k J_r^-1(theta) J_R(xi/2) / 2.
Checked against finite differences in tests/solver/tree/test_lie_rows.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import ad_twist, cross
from .articulated import axis_terms, column_vectors
from .ball_springs import chart_springs, has_springs
from .compile import TreeModel
from .dynamics import Terms
from .step_charts import StepCharts, left_jacobian_transpose_derivative


@dataclass(frozen=True)
class BallRows:
    """The Lie group rows of every ball chart: residuals F (nball, 3); the nodes' columns U (nball, 3, 12) and
    Yc (nball, 3, 18), rows x (nball, 3, 12) and R (nball, 3, 18) and own blocks (nball, 3, 3) for
    articulated.TreeJacobian; D2 (nball, 3) = J_R(xi)^-T dl/dxi, the next momentum before forcing; scale
    (nball,) the largest of each chart's terms |pbar|, dt/2 |gamma|, |eta| (at least 1), against which
    midpoint.py measures its rows' convergence."""

    F: np.ndarray
    U: np.ndarray
    Yc: np.ndarray
    x: np.ndarray
    R: np.ndarray
    blocks: np.ndarray
    D2: np.ndarray
    scale: np.ndarray


def _pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a_i . b_j over the last axis: (nball, 3, n) x (nball, 3, n) -> (nball, 3 (i), 3 (j))."""
    return np.einsum("bik,bjk->bij", a, b)


def ball_rows(model: TreeModel, charts: StepCharts, tm: Terms, dt: float, pbar: np.ndarray) -> BallRows:
    """The rows at the midpoint terms tm (ball primitives at angle 0 in charts.mid); pbar (nball, 3) as above."""
    k = model.ball_dofs
    base = k[:, 0]
    E = tm.S[k]  # (nball, 3, 6): Cm's axes through o
    VP = tm.V[model.dof_parent[base]][:, None, :]
    H, W, Ic, K = tm.H[base][:, None], tm.W[base][:, None], tm.Ic[base][:, None], tm.K[base][:, None]
    gamma_dyn = np.einsum("bik,bik->bi", ad_twist(VP, E), H) + np.einsum("bik,bik->bi", E, W)
    gamma = gamma_dyn.copy()
    spring_block = 0.0
    JLh = charts.JL_half
    JRh = np.transpose(JLh, (0, 2, 1))
    if has_springs(model):
        spring = chart_springs(model, charts.mid, np.zeros((len(k), 3)))  # at angle 0: Jb = I
        gamma += spring.Q
        dgamma = -0.5 * model.ball_stiffness[:, None, None] * spring.Jri @ JRh
        spring_block = 0.5 * dt * np.transpose(JLh, (0, 2, 1)) @ dgamma
    eta = tm.p[k]
    JLT = np.transpose(charts.JL, (0, 2, 1))
    F = (np.einsum("bij,bj->bi", JLT, pbar) + 0.5 * dt * np.einsum("bji,bj->bi", JLh, gamma) - eta)
    D2 = np.linalg.solve(charts.JL, (0.5 * dt * np.einsum("bji,bj->bi", JRh, gamma) + eta)[..., None])[..., 0]

    Ehat = np.einsum("bmi,bmk->bik", JLh, E)
    Sp = np.einsum("bmj,bmk->bjk", JRh, E)
    Spdot = ad_twist(VP, Sp) + (2.0 / dt) * (E - Sp)
    U = np.concatenate([Spdot, Sp], axis=-1)
    Yc = column_vectors(*axis_terms(Sp, Spdot, Ic, H, W, K), dt)
    Ehat_dot = ad_twist(VP, Ehat)
    _, G, X = axis_terms(Ehat, Ehat_dot, Ic, H, W, K)
    IcE = np.einsum("bkij,bkj->bki", np.broadcast_to(Ic, E.shape[:2] + (6, 6)), E)
    x = np.concatenate([0.25 * dt * G - 0.5 * IcE, 0.25 * dt * X + 0.5 * G - IcE / dt], axis=-1)
    R = np.concatenate([Ehat_dot, Ehat, 0.5 * (Ehat - E)], axis=-1)

    c = model.dof_damping[k] + model.dof_motor_gain[k]
    u = 0.5 * JRh  # u[:, :, j]: the turn of Cm per unit xi_j
    u_rows = np.transpose(u, (0, 2, 1))  # row j: u_j
    L_rows = np.transpose(JLh, (0, 2, 1))  # row i: J_L(xi/2) e_i
    e = np.broadcast_to(np.eye(3), L_rows.shape)
    turn_gamma = np.einsum("bijk,bk->bij", cross(u_rows[:, None, :, :], L_rows[:, :, None, :]), gamma_dyn)
    turn_eta = np.einsum("bijk,bk->bij", cross(u_rows[:, None, :, :], e[:, :, None, :]), eta)
    blocks = (_pair(R, Yc) + left_jacobian_transpose_derivative(charts.xi, pbar) - 0.5 * JLT * c[:, None, :]
              + 0.25 * dt * left_jacobian_transpose_derivative(0.5 * charts.xi, gamma)
              + 0.5 * dt * turn_gamma - turn_eta + spring_block)
    scale = np.max(np.abs(np.concatenate([pbar, 0.5 * dt * gamma, eta, np.ones_like(eta)], axis=1)), axis=1)
    return BallRows(F, U, Yc, x, R, blocks, D2, scale)

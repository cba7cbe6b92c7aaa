"""O(n) Newton direction of the midpoint DEL on a tree: articulated elimination, Schur complement on loop rows.

Seed 004 (Algorithms B.1/B.2) computes the exact Newton step of a Galerkin variational integrator on a
tree in O(n) by eliminating each body's unknowns leaves-to-root as affine functions of its parent's
variations. Re-derived here for our midpoint rule (tree/midpoint.py): the Newton matrix over q2,
  J11 = dt/4 (B + Q_q) + (A^T - A)/2 - M/dt - diag(damping + gain)/2,
has the tree structure of dynamics.py. With U_b = (Sdot_b, S_b) (12,) for every coordinate b and
  G_a = Ic_a Sdot_a - ad(S_a)^T H_a,   X_a = -ad(S_a)^T W_a + (K_a^T w_a - tr(K_a) w_a, F_a x w_a),
  x_a = (dt/4 G_a - Ic_a S_a / 2,  dt/4 X_a + G_a / 2 - Ic_a S_a / dt),
  y_a = (dt/4 G_a + Ic_a S_a / 2,  dt/4 X_a - G_a / 2 - Ic_a S_a / dt)
(w_a the angular part of S_a, F_a the force part of W_a), for b a strict ancestor of a
  J11[a, b] = U_b . x_a,   J11[b, a] = U_b . y_a,   J11[a, a] = d_a,
  d_a = dt/4 (Sdot_a . G_a + S_a . X_a - k_a) - S_a . Ic_a S_a / dt - (damping_a + gain_a) / 2,
and J11 is zero between branches. Row a of J11 delta = r therefore reads
  d_a delta_a + x_a . z_a + U_a . sum over children j of w_j = r_a,
with z_a = sum over strict ancestors b of U_b delta_b (handed down: the pose variation sum S_b delta_b
and the Sdot part of the velocity variation) and w_j = sum over the subtree of j of y_c delta_c (handed up:
the articulated momentum variation). Leaves to root, each w_j = Omega_j z_j + omega_j is affine in z_j, and
  D_a = d_a + U_a . Obar_a U_a,   X_a = -(x_a + Obar_a^T U_a) / D_a,   c_a = y_a + Obar_a U_a,
  xi_a = (r_a - U_a . obar_a) / D_a,   Omega_a = Obar_a + c_a X_a^T,   omega_a = obar_a + c_a xi_a,
(Obar_a, obar_a: sums over a's children); root to leaves, z_j = z_a + U_a delta_a and
delta_a = X_a . z_a + xi_a. Every step is exact algebra on J11 (no approximation), so the direction
equals the dense solve to rounding and Newton stays quadratic. Cost: 12 x 12 blocks per coordinate,
O(n). Prescribed coordinates have delta = 0 and pass Omega, omega through.

Loop rows (and active joint limits) G1 = Dh(q1), G2 = Dh(q2) on the dynamic coordinates:
  J11 delta - G1^T dlam = -f1,  G2 delta = -f2
  delta = a + Y dlam with a = J11^-1 (-f1), Y = J11^-1 G1^T (one factorisation, k + 1 solves),
  (G2 Y) dlam = -f2 - G2 a   (k x k): O(n k + n k^2 + k^3).
`OPS` counts the multiply-adds of factor, solve and the Schur rows (the C kernel counts the same way), so
tests can assert linear growth.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..lie import cross
from .compile import TreeModel
from .dynamics import Terms

OPS: Counter = Counter()  # "flops": multiply-adds spent in factor(), solve() and the Schur rows


@dataclass(frozen=True)
class TreeJacobian:
    """J11 in tree form: U, x, y (nq, 12), d (nq,) as in the module docstring."""

    U: np.ndarray
    x: np.ndarray
    y: np.ndarray
    d: np.ndarray


def ad_transpose(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ad(s)^T y for twists s and wrenches y (..., 6): (-ws x y1 - vs x y2, -ws x y2)."""
    ws, vs = s[..., :3], s[..., 3:]
    return np.concatenate([-cross(ws, y[..., :3]) - cross(vs, y[..., 3:]), -cross(ws, y[..., 3:])], axis=-1)


def tree_jacobian(model: TreeModel, tm: Terms, dt: float) -> TreeJacobian:
    """The tree form of J11 at the midpoint terms tm (dynamics.terms), O(n)."""
    S, Sdot, Ic = tm.S, tm.Sdot, tm.Ic
    IcS = np.einsum("aij,aj->ai", Ic, S)
    G = np.einsum("aij,aj->ai", Ic, Sdot) - ad_transpose(S, tm.H)
    w = S[:, :3]
    trK = np.trace(tm.K, axis1=1, axis2=2)
    X = -ad_transpose(S, tm.W)
    X[:, :3] += np.einsum("aji,aj->ai", tm.K, w) - trK[:, None] * w
    X[:, 3:] += cross(tm.W[:, 3:], w)
    x = np.concatenate([0.25 * dt * G - 0.5 * IcS, 0.25 * dt * X + 0.5 * G - IcS / dt], axis=1)
    y = np.concatenate([0.25 * dt * G + 0.5 * IcS, 0.25 * dt * X - 0.5 * G - IcS / dt], axis=1)
    d = (0.25 * dt * (np.einsum("ai,ai->a", Sdot, G) + np.einsum("ai,ai->a", S, X) - model.dof_stiffness)
         - np.einsum("ai,ai->a", S, IcS) / dt - 0.5 * (model.dof_damping + model.dof_motor_gain))
    return TreeJacobian(np.concatenate([Sdot, S], axis=1), x, y, d)


def dense(model: TreeModel, tj: TreeJacobian) -> np.ndarray:
    """J11 (nq, nq) assembled from its tree form: the test reference for factor/solve."""
    a, b = model.pair_deep, model.pair_anc
    strict = a != b
    a, b = a[strict], b[strict]
    J = np.diag(tj.d)
    J[a, b] = np.einsum("pi,pi->p", tj.U[b], tj.x[a])
    J[b, a] = np.einsum("pi,pi->p", tj.U[b], tj.y[a])
    return J


@dataclass(frozen=True)
class Factor:
    """Leaves-to-root elimination of J11: pivots D (nq,), X, c (nq, 12), the U it used, the unknown mask."""

    U: np.ndarray
    D: np.ndarray
    X: np.ndarray
    c: np.ndarray
    unknown: np.ndarray


def factor(model: TreeModel, tj: TreeJacobian, unknown: np.ndarray) -> Factor | None:
    """Eliminate J11 restricted to the `unknown` coordinates (bool (nq,)). None when a pivot is zero."""
    nq = model.nq
    parent = model.dof_parent
    Obar = np.zeros((nq, 12, 12))
    D = np.ones(nq)
    X = np.zeros((nq, 12))
    c = np.zeros((nq, 12))
    for a in range(nq - 1, -1, -1):
        Omega = Obar[a]
        if unknown[a]:
            U = tj.U[a]
            OU = Omega @ U
            D[a] = tj.d[a] + U @ OU
            if D[a] == 0.0 or not np.isfinite(D[a]):
                return None
            X[a] = -(tj.x[a] + U @ Omega) / D[a]
            c[a] = tj.y[a] + OU
            Omega = Omega + np.outer(c[a], X[a])
            OPS["flops"] += 3 * 144 + 3 * 12
        if parent[a] >= 0:
            Obar[parent[a]] += Omega
    return Factor(tj.U, D, X, c, unknown)


def solve(model: TreeModel, fac: Factor, r: np.ndarray) -> np.ndarray:
    """J11^-1 r for r (nq, m) (rows of prescribed coordinates ignored; their solution rows are 0)."""
    nq, m = r.shape
    parent = model.dof_parent
    obar = np.zeros((nq, 12, m))
    xi = np.zeros((nq, m))
    for a in range(nq - 1, -1, -1):
        omega = obar[a]
        if fac.unknown[a]:
            xi[a] = (r[a] - fac.U[a] @ omega) / fac.D[a]
            omega = omega + np.outer(fac.c[a], xi[a])
            OPS["flops"] += 25 * m
        if parent[a] >= 0:
            obar[parent[a]] += omega
    delta = np.zeros((nq, m))
    z = np.zeros((nq, 12, m))
    for a in range(nq):
        p = parent[a]
        if p >= 0:
            z[a] = z[p] + np.outer(fac.U[p], delta[p])
        if fac.unknown[a]:
            delta[a] = fac.X[a] @ z[a] + xi[a]
            OPS["flops"] += 24 * m
    return delta


def newton_direction(model: TreeModel, fac: Factor, f1: np.ndarray, f2: np.ndarray, G1: np.ndarray,
                     G2: np.ndarray, least_squares: bool = False) -> np.ndarray | None:
    """The Newton step (delta (nd,), dlam (k,)) concatenated, for residuals f1 (nd,), f2 (k,) and rows
    G1, G2 (k, nd) over the unknown coordinates. The k x k Schur system is solved by LU, or by
    minimum-norm least squares when `least_squares` (or when the LU finds it singular). None: singular."""
    unknown = fac.unknown
    k = len(f2)
    r = np.zeros((model.nq, 1 + k))
    r[unknown, 0] = -f1
    r[unknown, 1:] = G1.T
    sol = solve(model, fac, r)[unknown]
    a, Y = sol[:, 0], sol[:, 1:]
    if k == 0:
        return a
    schur = G2 @ Y
    rhs = -f2 - G2 @ a
    OPS["flops"] += k * k * len(a) + 2 * k * len(a)  # schur, rhs and the back-substitution a + Y dlam
    dlam = None
    if not least_squares:
        try:
            dlam = np.linalg.solve(schur, rhs)
        except np.linalg.LinAlgError:
            pass
    if dlam is None:
        dlam = np.linalg.lstsq(schur, rhs, rcond=1e-13)[0]
    return np.concatenate([a + Y @ dlam, dlam])

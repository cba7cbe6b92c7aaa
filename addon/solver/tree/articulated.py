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
    """J11 in tree form (module docstring), over coordinates grouped into nodes: one per coordinate, except
    the three rotation coordinates of each ball chart (model.ball_dofs), which form one node.

    U (nq, 12): column vectors, J[a, b] = U_b . x_a for b above a's node; x (nq, 12): row vectors for the
    coordinates above a row's node; R (nq, 18): row vectors for the coordinates below, J[a, c] = R_a . Yc_c;
    Yc (nq, 18) = (y_c, t_c) with t_c = G_c + 2 Ic_c S_c / dt (read only by ball rows, tree/lie_rows.py);
    d (nq,): diagonal of the one-coordinate nodes; blocks (nball, 3, 3): the ball nodes' own blocks.
    A plain DEL row a has R_a = (U_a, 0).
    """

    U: np.ndarray
    x: np.ndarray
    R: np.ndarray
    Yc: np.ndarray
    d: np.ndarray
    blocks: np.ndarray


def ad_transpose(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ad(s)^T y for twists s and wrenches y (..., 6): (-ws x y1 - vs x y2, -ws x y2)."""
    ws, vs = s[..., :3], s[..., 3:]
    return np.concatenate([-cross(ws, y[..., :3]) - cross(vs, y[..., 3:]), -cross(ws, y[..., 3:])], axis=-1)


def axis_terms(S: np.ndarray, Sdot: np.ndarray, Ic: np.ndarray, H: np.ndarray, W: np.ndarray,
               K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Ic S, G, X) (..., 6) for axes S with rates Sdot over subtrees with inertia Ic, momentum H, wrench W
    and force moments K (module docstring); a virtual axis at a ball's base uses the base's subtree."""
    IcS = np.einsum("...ij,...j->...i", Ic, S)
    G = np.einsum("...ij,...j->...i", Ic, Sdot) - ad_transpose(S, H)
    w = S[..., :3]
    X = -ad_transpose(S, W)
    X[..., :3] += np.einsum("...ji,...j->...i", K, w) - np.trace(K, axis1=-2, axis2=-1)[..., None] * w
    X[..., 3:] += cross(W[..., 3:], w)
    return IcS, G, X


def column_vectors(IcS: np.ndarray, G: np.ndarray, X: np.ndarray, dt: float) -> np.ndarray:
    """Yc = (y, t) (..., 18) of columns whose variation moves their subtree by the pose twist S / 2 and the
    velocity twist S / dt + Sdot / 2 at the midpoint ((IcS, G, X) = axis_terms of that S, Sdot)."""
    return np.concatenate([0.25 * dt * G + 0.5 * IcS, 0.25 * dt * X - 0.5 * G - IcS / dt, G + 2.0 * IcS / dt],
                          axis=-1)


def tree_jacobian(model: TreeModel, tm: Terms, dt: float) -> TreeJacobian:
    """The tree form of J11 at the midpoint terms tm (dynamics.terms), O(n)."""
    S, Sdot = tm.S, tm.Sdot
    IcS, G, X = axis_terms(S, Sdot, tm.Ic, tm.H, tm.W, tm.K)
    U = np.concatenate([Sdot, S], axis=1)
    x = np.concatenate([0.25 * dt * G - 0.5 * IcS, 0.25 * dt * X + 0.5 * G - IcS / dt], axis=1)
    d = (0.25 * dt * (np.einsum("ai,ai->a", Sdot, G) + np.einsum("ai,ai->a", S, X) - model.dof_stiffness)
         - np.einsum("ai,ai->a", S, IcS) / dt - 0.5 * (model.dof_damping + model.dof_motor_gain))
    R = np.concatenate([U, np.zeros((model.nq, 6))], axis=1)
    Yc = column_vectors(IcS, G, X, dt)
    y = Yc[:, :12]
    # a ball node's own block, plain DEL rows: the chain rx -> ry -> rz inside it is tree-structured too
    k = model.ball_dofs
    blocks = np.zeros((len(k), 3, 3))
    for i in range(3):
        blocks[:, i, i] = d[k[:, i]]
        for j in range(i):
            blocks[:, i, j] = np.einsum("bi,bi->b", U[k[:, j]], x[k[:, i]])
            blocks[:, j, i] = np.einsum("bi,bi->b", U[k[:, j]], y[k[:, i]])
    return TreeJacobian(U, x, R, Yc, d, blocks)


def hand_up_size(model: TreeModel) -> int:
    """Length of the vectors w handed up the tree: (y, t) = 18 when ball rows read t, else y alone, 12."""
    return 18 if len(model.ball_dofs) else 12


def nodes(model: TreeModel) -> list[np.ndarray]:
    """The elimination nodes, parents before children: each coordinate alone, each ball chart's three together."""
    ball_of = {int(k[0]): k for k in model.ball_dofs}
    inner = {int(i) for k in model.ball_dofs for i in k[1:]}
    return [ball_of.get(a, np.array([a])) for a in range(model.nq) if a not in inner]


def dense(model: TreeModel, tj: TreeJacobian) -> np.ndarray:
    """J11 (nq, nq) assembled from its tree form: the test reference for factor/solve."""
    nq = model.nq
    node_of = np.empty(nq, dtype=np.int64)
    for n, members in enumerate(nodes(model)):
        node_of[members] = n
    J = np.diag(tj.d)
    a, b = model.pair_deep, model.pair_anc
    other = node_of[a] != node_of[b]
    a, b = a[other], b[other]
    J[a, b] = np.einsum("pi,pi->p", tj.U[b], tj.x[a])
    J[b, a] = np.einsum("pi,pi->p", tj.R[b], tj.Yc[a])
    for k, block in zip(model.ball_dofs, tj.blocks):
        J[np.ix_(k, k)] = block
    return J


@dataclass(frozen=True)
class Factor:
    """Leaves-to-root elimination of J11: per node (nodes()), members, the inverse of its pivot block
    Dinv (s, s), the gain X (s, 12) and the hand-up c (h, s) (h = hand_up_size); plus U, R and the unknown
    mask it used."""

    members: list[np.ndarray]
    Dinv: list[np.ndarray]
    X: list[np.ndarray]
    c: list[np.ndarray]
    U: np.ndarray
    R: np.ndarray
    unknown: np.ndarray


def _inverse(D: np.ndarray) -> np.ndarray | None:
    """Inverse of a 1 x 1 or 3 x 3 pivot block (adjugate / determinant: np.linalg costs far more at these
    sizes); None when it is singular or not finite."""
    if len(D) == 1:
        det, inv = D[0, 0], np.ones((1, 1))
    else:
        adj = cross(D[[1, 2, 0]], D[[2, 0, 1]])  # rows r1 x r2, r2 x r0, r0 x r1
        det, inv = float(D[0] @ adj[0]), adj.T
    if det == 0.0 or not np.isfinite(det):
        return None
    return inv / det


def factor(model: TreeModel, tj: TreeJacobian, unknown: np.ndarray) -> Factor | None:
    """Eliminate J11 restricted to the `unknown` coordinates (bool (nq,)). None when a pivot block is singular.

    For a node with s unknowns (rows and columns `members`): D = d + R Obar U^T, X = -D^-1 (x + R Obar),
    c = Yc^T + Obar U^T, Omega = Obar + c X, added to the Obar of the parent coordinate."""
    parent = model.dof_parent
    h = hand_up_size(model)
    Obar = np.zeros((model.nq, h, 12))
    members = nodes(model)
    block_of = {int(k[0]): b for b, k in enumerate(model.ball_dofs)}
    Dinv, X, c = [None] * len(members), [None] * len(members), [None] * len(members)
    for n in range(len(members) - 1, -1, -1):
        m = members[n]
        Omega = Obar[m[-1]]
        if unknown[m[0]]:
            s = len(m)
            d = tj.blocks[block_of[int(m[0])]] if s == 3 else tj.d[m][:, None]
            R = tj.R[m][:, :h]
            OU = Omega @ tj.U[m].T
            RO = R @ Omega
            Dinv[n] = _inverse(d + R @ OU)
            if Dinv[n] is None:
                return None
            X[n] = -Dinv[n] @ (tj.x[m] + RO)
            c[n] = tj.Yc[m][:, :h].T + OU
            Omega = Omega + c[n] @ X[n]
            OPS["flops"] += 3 * h * 12 * s + h * s * s + 12 * s * s
        if parent[m[0]] >= 0:
            Obar[parent[m[0]]] += Omega
    return Factor(members, Dinv, X, c, tj.U, tj.R, unknown)


def solve(model: TreeModel, fac: Factor, r: np.ndarray) -> np.ndarray:
    """J11^-1 r for r (nq, m) (rows of prescribed coordinates ignored; their solution rows are 0)."""
    nq, width = r.shape
    parent = model.dof_parent
    h = hand_up_size(model)
    obar = np.zeros((nq, h, width))
    xi = [None] * len(fac.members)
    for n in range(len(fac.members) - 1, -1, -1):
        m = fac.members[n]
        omega = obar[m[-1]]
        if fac.unknown[m[0]]:
            s = len(m)
            xi[n] = fac.Dinv[n] @ (r[m] - fac.R[m][:, :h] @ omega)
            omega = omega + fac.c[n] @ xi[n]
            OPS["flops"] += (2 * h * s + s * s) * width
        if parent[m[0]] >= 0:
            obar[parent[m[0]]] += omega
    delta = np.zeros((nq, width))
    zc = np.zeros((nq, 12, width))  # sum of U_b delta_b over the ancestors-or-self b of a node's last member
    for n, m in enumerate(fac.members):
        p = parent[m[0]]
        z = zc[p] if p >= 0 else np.zeros((12, width))
        if fac.unknown[m[0]]:
            s = len(m)
            delta[m] = fac.X[n] @ z + xi[n]
            z = z + fac.U[m].T @ delta[m]
            OPS["flops"] += 24 * s * width
        zc[m[-1]] = z
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

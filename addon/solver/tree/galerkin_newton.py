"""Exact Newton matrix of tree/galerkin.py's DEL rows in tree form, and its O(s^3 n) articulated solve.

Seed 004 (Algorithms B.1/B.2, with the digest's errata) eliminates a Galerkin step's unknowns body by body,
leaves to root, as affine functions of the parent's pose and velocity variations at the control points. The
same elimination, re-derived on our coordinates (every joint type, ball and free rotations in per-step
exponential charts, nodes c_j that may differ from the control points), as articulated.py does for s = 1:

Columns. Varying control point gamma (1..s) of a plain coordinate i moves its subtree, at node j, by the pose
twist P_jg S_i and the (spatial) velocity twist P_jg Sdot_i + D_jg / dt S_i; stacked over the r nodes this is
the column vector U[g, i] (12 r). A chart (ball) column c of xi^g does the same with the axes
S = (J_R(xi_j)^T E)_c and Sdot = ad(V_P) S + (N_j^T E)_c (E the chart's world axes, V_P the parent's velocity,
N_j = d(J_R(x) xidot_j)/dx at xi_j): the same formulas. The subtree's momentum and wrench change, at node j, by
Ic Sdot' - ad(S')^T H and -ad(S')^T W + (K^T w - tr K w, F x w) for a twist pair (S', Sdot') (dynamics.py), so
  x[g, i] = (w_j dt (P_jg X_i, P_jg G_i + D_jg / dt Ic S_i))_j,  (Ic S, G, X) = articulated.axis_terms,
is what a plain row of an ancestor b reads: J[(a, b), (g, i)] = U[a, b] . x[g, i]. The action's Hessian is
symmetric, so a row (a, i) reads its ancestors' columns the same way, J[(a, i), (g, b)] = U[g, b] . x[a, i], for
a chart's rows 1..s-1 too (they are d Ld / d xi^a). A chart's row 0 varies the step's first rotation C1 at fixed
control rotations: r^0 = p + Z_start - sum_(a>=1) J_L(xi^a)^-T Z^a with Z_start = sum_j w_j dt exp(xi_j) gamma_j,
whose twist pair at node j is (exp(xi_j) E, ad(V_P) exp(xi_j) E) with weight w_j dt; its row vectors are that
pair's minus sum_a J_L(xi^a)^-T times row a's. Own blocks (one coordinate, or one chart's 3 s x 3 s):
  plain: U[g, i] . x[a, i] - sum_j w_j dt (P_ja P_jg k_i + P_ja D_jg / dt c_i)   (stiffness k, damping + gain c);
  chart: the node derivatives of gamma (chart torque, springs included), eta (momentum) and the forcing f at the
  body-axes turn phi and body angular velocity omega of the node (chart_node_derivatives), chained through
  dphi = P J_R dxi, domega = (D / dt J_R + P N) dxi and the chart maps' own derivatives: d(J_R^T g)/dx,
  d(N^T eta)/dxidot = d(J_R^T eta)/dx^T, d(N^T eta)/dx (jacobian_hessian), d(J_L^-T z)/dx = -J_L^-T N(x, y).
Loop rows are not tree-structured: newton_direction borders the tree solve with them (as articulated.py) and
with the loop rows' curvature columns (galerkin.py's loop_blocks), a small dense system.

The elimination (factor/solve): groups are articulated.nodes (a coordinate, or a chart's three), parents
first; a group's unknowns are its s d control values (gamma-major). With z the sum of U^T delta over strict
ancestors (handed down) and w the sum of x^T delta over a subtree (handed up, w = Omega z + omega):
  D = Dloc + R Obar U^T,  X = -D^-1 (x + R Obar),  c = Yc^T + Obar U^T,  Omega = Obar + c X,
(R: the group's row vectors for its descendants, Yc = x of its columns), all 12 r x 12 r at most: O(s^3) per
group, O(s^3 n) per Newton direction. `OPS` counts the multiply-adds as articulated.OPS does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..groups import so3_exp
from ..lie import ad_twist, cross, hat
from .articulated import axis_terms, nodes
from .ball_springs import chart_springs, has_springs
from .compile import TreeModel
from .dynamics import Terms
from .galerkin_rule import Rule
from .step_charts import left_jacobian, left_jacobian_transpose_derivative

OPS: Counter = Counter()  # "flops": multiply-adds of factor() and solve()

_SERIES_TERMS = 40  # the series of (1 - cos t) / t^2 and (t - sin t) / t^3 in u = t^2: exact to round-off, |t| < 10


@dataclass(frozen=True)
class ChartNodes:
    """What a chart's rows are made of at each node j (r, nball, 3): xi_j, xidot_j, the chart torque gamma_j
    (springs included), the forcing torque f_j (damping, servos, keyed torques) and the momentum eta_j; the
    step's first charts C1 (nball, 3, 3); and Z (s, nball, 3), the chart entries of Z^1..Z^s (galerkin.py)."""

    xi: np.ndarray
    xid: np.ndarray
    gamma: np.ndarray
    force: np.ndarray
    eta: np.ndarray
    charts: np.ndarray
    Z: np.ndarray


@dataclass(frozen=True)
class GalerkinTree:
    """The Newton matrix over (X, rows 0..s-1) in tree form, per group (articulated.nodes, parents first):
    members, parent group (-1: root), U and Yc (s d, 12 r) of its columns, R and x (s d, 12 r) of its rows,
    Dloc (s d, s d) its own block (rows alpha-major, columns gamma-major)."""

    s: int
    nq: int
    members: list[np.ndarray]
    parent: np.ndarray
    U: list[np.ndarray]
    Yc: list[np.ndarray]
    R: list[np.ndarray]
    x: list[np.ndarray]
    Dloc: list[np.ndarray]
    index: list[np.ndarray]  # positions of each group's unknowns in X.ravel() (and of its rows in r.ravel())


def _series(u: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f(u) = sum_k (-1)^k u^k / (2k + first)!, f'(u), f''(u) for u (...) >= 0."""
    f, d1, d2 = np.zeros_like(u), np.zeros_like(u), np.zeros_like(u)
    coef = 1.0 / np.prod(np.arange(1, first + 1, dtype=float))
    for k in range(_SERIES_TERMS):
        c = (-1) ** k * coef
        f += c * u**k
        if k >= 1:
            d1 += c * k * u ** (k - 1)
        if k >= 2:
            d2 += c * k * (k - 1) * u ** (k - 2)
        coef /= (2 * k + first + 1) * (2 * k + first + 2)
    return f, d1, d2


def jacobian_hessian(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """d^2 (a . J_R(x) b) / dx^2 (..., 3, 3) for J_R(x) = I - p(u) hat(x) + q(u) hat(x)^2, u = |x|^2
    (step_charts.py), p = (1 - cos t) / t^2, q = (t - sin t) / t^3: a . J_R b = a . b - p x . (b x a)
    + q ((a . x)(b . x) - u a . b)."""
    u = np.einsum("...i,...i->...", x, x)
    p, p1, p2 = _series(u, 2)
    q, q1, q2 = _series(u, 3)
    I = np.eye(3)

    def outer(v, w):
        return v[..., :, None] * w[..., None, :]

    ab = np.einsum("...i,...i->...", a, b)
    ax, bx = np.einsum("...i,...i->...", a, x), np.einsum("...i,...i->...", b, x)
    m = cross(b, a)
    psi1, g1 = np.einsum("...i,...i->...", x, m), m  # x . (b x a): gradient m, Hessian 0
    psi2 = ax * bx - u * ab
    g2 = a * bx[..., None] + b * ax[..., None] - 2.0 * x * ab[..., None]
    h2 = outer(a, b) + outer(b, a) - 2.0 * ab[..., None, None] * I

    def product(phi, d1, d2, psi, grad, hess):  # Hessian of phi(u) psi(x)
        return (phi[..., None, None] * hess + 2.0 * d1[..., None, None] * (outer(x, grad) + outer(grad, x))
                + psi[..., None, None] * (2.0 * d1[..., None, None] * I + 4.0 * d2[..., None, None] * outer(x, x)))

    return -product(p, p1, p2, psi1, g1, np.zeros(h2.shape)) + product(q, q1, q2, psi2, g2, h2)


def _transpose_derivative(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """d(J_R(x)^T g)/dx = d(J_L(x) g)/dx = -N(-x, g) (..., 3, 3)."""
    return -left_jacobian_transpose_derivative(-x, g)


def chart_axes(model: TreeModel, tm: Terms, cn: ChartNodes, j: int) -> tuple[np.ndarray, ...]:
    """At node j: each chart's world axes E (nball, 3, 6), the parent velocity V_P (nball, 6), J_R(xi_j) and N_j
    (nball, 3, 3), and the column axes S = (J_R^T E), Sdot = ad(V_P) S + N^T E (module docstring)."""
    k = model.ball_dofs
    E = tm.S[k]
    VP = tm.V[model.dof_parent[k[:, 0]]]
    JR = np.transpose(left_jacobian(cn.xi[j]), (0, 2, 1))
    N = left_jacobian_transpose_derivative(cn.xi[j], cn.xid[j])
    S = np.einsum("bic,bik->bck", JR, E)
    Sdot = ad_twist(VP[:, None], S) + np.einsum("bic,bik->bck", N, E)
    return E, VP, JR, N, S, Sdot


def chart_node_derivatives(model: TreeModel, tm: Terms, E: np.ndarray, VP: np.ndarray,
                           charts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At one node, per chart (nball, 3, 3): d gamma / d phi, d eta / d phi and d eta / d omega for body-axes turns
    phi of the chart and body angular velocities omega (d gamma / d omega = (d eta / d phi)^T): the subtree turns
    rigidly by sigma = E phi about the ball, its momentum by Ic ad(V_P) sigma - ad(sigma)^T H, so
      d eta_i / d phi_k = E_i . Ic Sd_k,  d eta_i / d omega_k = E_i . Ic E_k  (Sd = ad(V_P) E),
      d gamma_i / d phi_k = ad(Sd_k) E_i . H + Sd_i . Ic Sd_k + ad(E_k) E_i . W + w_i . (K w_k - w_k tr K + v_k x F)
                            - k J_r^-1(theta)[i, k]  (the spring, ball_springs.py)."""
    base = model.ball_dofs[:, 0]
    Ic, H, W, K = tm.Ic[base], tm.H[base], tm.W[base], tm.K[base]
    Sd = ad_twist(VP[:, None], E)
    IcE = np.einsum("bmn,bkn->bkm", Ic, E)
    IcSd = np.einsum("bmn,bkn->bkm", Ic, Sd)
    eta_omega = np.einsum("bin,bkn->bik", E, IcE)
    eta_phi = np.einsum("bin,bkn->bik", E, IcSd)
    gamma = (np.einsum("bkin,bn->bik", ad_twist(Sd[:, :, None], E[:, None, :]), H)
             + np.einsum("bin,bkn->bik", Sd, IcSd)
             + np.einsum("bkin,bn->bik", ad_twist(E[:, :, None], E[:, None, :]), W))
    w, v, F = E[..., :3], E[..., 3:], W[:, 3:]
    trK = np.trace(K, axis1=1, axis2=2)
    moved = (np.einsum("bmn,bkn->bkm", K, w) - w * trK[:, None, None] + cross(v, F[:, None]))  # (b, k, 3)
    gamma += np.einsum("bim,bkm->bik", w, moved)
    if has_springs(model):
        gamma -= model.ball_stiffness[:, None, None] * chart_springs(model, charts, np.zeros((len(base), 3))).Jri
    return gamma, eta_phi, eta_omega


def _chart_own_blocks(model: TreeModel, nodes_: list[Terms], X: np.ndarray, cn: ChartNodes, dt: float,
                      ru: Rule) -> np.ndarray:
    """d r^a / d xi^g (nball, s, s, 3, 3), rows a = 0..s-1, columns g = 1..s, within each chart (module docstring)."""
    s, k = ru.s, model.ball_dofs
    nb = len(k)
    C = (model.dof_damping + model.dof_motor_gain)[k][:, :, None] * np.eye(3)
    dZ = np.zeros((nb, s + 1, s + 1, 3, 3))  # dZ^a / dxi^g, a, g = 0..s (index 0 unused)
    dstart = np.zeros((nb, s + 1, 3, 3))
    for j, tm in enumerate(nodes_):
        wdt = ru.w[j] * dt
        P, Dd = ru.P[j], ru.D[j] / dt
        E, VP, JR, N, _, _ = chart_axes(model, tm, cn, j)
        rot = so3_exp(cn.xi[j])
        gamma_phi, eta_phi, eta_omega = chart_node_derivatives(model, tm, E, VP, cn.charts @ rot)
        g = cn.gamma[j] + cn.force[j]
        eta = cn.eta[j]
        TJg = _transpose_derivative(cn.xi[j], g)
        TJe = _transpose_derivative(cn.xi[j], eta)
        HNe = jacobian_hessian(cn.xi[j], eta, cn.xid[j])
        JRt = np.transpose(JR, (0, 2, 1))
        for b in range(1, s + 1):
            dphi = P[b] * JR
            domega = Dd[b] * JR + P[b] * N
            dgamma = gamma_phi @ dphi + np.transpose(eta_phi, (0, 2, 1)) @ domega - C @ domega
            deta = eta_phi @ dphi + eta_omega @ domega
            for a in range(1, s + 1):
                dZ[:, a, b] += wdt * (P[a] * P[b] * TJg + P[a] * JRt @ dgamma + P[a] * (P[b] * HNe + Dd[b] * np.transpose(TJe, (0, 2, 1)))
                                      + Dd[a] * P[b] * TJe + np.transpose(P[a] * N + Dd[a] * JR, (0, 2, 1)) @ deta)
            dstart[:, b] += wdt * (-P[b] * rot @ hat(g) @ JR + rot @ dgamma)
    out = np.zeros((nb, s, s, 3, 3))
    JLinvT = [None] + [np.linalg.inv(np.transpose(left_jacobian(X[a - 1][k]), (0, 2, 1))) for a in range(1, s + 1)]
    for b in range(1, s + 1):
        row0 = dstart[:, b].copy()
        y = np.einsum("bij,bj->bi", JLinvT[b], cn.Z[b - 1])
        row0 += JLinvT[b] @ left_jacobian_transpose_derivative(X[b - 1][k], y)
        for a in range(1, s + 1):
            row0 -= JLinvT[a] @ dZ[:, a, b]
        out[:, 0, b - 1] = row0
        for a in range(1, s):
            out[:, a, b - 1] = dZ[:, a, b]
    return out


def tree_form(model: TreeModel, nodes_: list[Terms], X: np.ndarray, cn: ChartNodes | None, dt: float,
              ru: Rule) -> GalerkinTree:
    """The Newton matrix d r / d X (rows 0..s-1, unknowns X = x^1..x^s) in tree form (module docstring), from the
    node terms of galerkin.residual and, with charts, its ChartNodes."""
    s, r, nq = ru.s, len(ru.c), model.nq
    k = model.ball_dofs
    U = np.zeros((s + 1, nq, r, 12))
    x = np.zeros((s + 1, nq, r, 12))
    U0 = np.zeros((len(k), 3, r, 12))  # charts' row 0 (the C1 turn)
    x0 = np.zeros((len(k), 3, r, 12))
    for j, tm in enumerate(nodes_):
        S, Sdot, Ic, H, W, K = tm.S.copy(), tm.Sdot.copy(), tm.Ic, tm.H, tm.W, tm.K
        if len(k):
            E, VP, _, _, S[k], Sdot[k] = chart_axes(model, tm, cn, j)
            base = k[:, 0]
            Ic, H, W, K = Ic.copy(), H.copy(), W.copy(), K.copy()
            for field in (Ic, H, W, K):
                field[k] = field[base][:, None]
            sigma0 = np.einsum("bci,bik->bck", so3_exp(cn.xi[j]), E)
            sdot0 = ad_twist(VP[:, None], sigma0)
            _, G0, X0 = axis_terms(sigma0, sdot0, Ic[k], H[k], W[k], K[k])
            U0[:, :, j] = np.concatenate([sigma0, sdot0], axis=-1)
            x0[:, :, j] = ru.w[j] * dt * np.concatenate([X0, G0], axis=-1)
        IcS, G, Xv = axis_terms(S, Sdot, Ic, H, W, K)
        wdt = ru.w[j] * dt
        P, Dd = ru.P[j][:, None, None], ru.D[j][:, None, None] / dt
        U[:, :, j, :6] = P * S
        U[:, :, j, 6:] = P * Sdot + Dd * S
        x[:, :, j, :6] = wdt * P * Xv
        x[:, :, j, 6:] = wdt * (P * G + Dd * IcS)
    U, x = U.reshape(s + 1, nq, 12 * r), x.reshape(s + 1, nq, 12 * r)
    U0, x0 = U0.reshape(len(k), 3, 12 * r), x0.reshape(len(k), 3, 12 * r)
    wdt = ru.w * dt
    stiff = np.einsum("j,ja,jg->ag", wdt, ru.P, ru.P)[:s, 1:]
    damp = np.einsum("j,ja,jg->ag", wdt, ru.P, ru.D / dt)[:s, 1:]
    own = (np.einsum("gin,ain->iag", U[1:], x[:s]) - stiff[None] * model.dof_stiffness[:, None, None]
           - damp[None] * (model.dof_damping + model.dof_motor_gain)[:, None, None])
    chart_blocks = _chart_own_blocks(model, nodes_, X, cn, dt, ru) if len(k) else None
    chart_of = {int(m[0]): b for b, m in enumerate(k)}
    groups = nodes(model)
    group_of = np.empty(nq, dtype=np.int64)
    for g, m in enumerate(groups):
        group_of[m] = g
    parent = np.array([group_of[model.dof_parent[m[0]]] if model.dof_parent[m[0]] >= 0 else -1 for m in groups])
    Us, Ycs, Rs, xs, Ds = [], [], [], [], []
    for m in groups:
        d = len(m)
        Ucol = U[1:, m].reshape(s * d, -1)
        Yc = x[1:, m].reshape(s * d, -1)
        R = U[:s, m].copy()
        xr = x[:s, m].copy()
        if d == 3:
            b = chart_of[int(m[0])]
            JLinvT = [np.linalg.inv(left_jacobian(X[a - 1][m])).T for a in range(1, s + 1)]
            R[0] = U0[b] - sum(JLinvT[a - 1] @ U[a, m] for a in range(1, s + 1))
            xr[0] = x0[b] - sum(JLinvT[a - 1] @ x[a, m] for a in range(1, s + 1))
            Dl = np.transpose(chart_blocks[b], (0, 2, 1, 3)).reshape(3 * s, 3 * s)
        else:
            Dl = own[m[0]]
        Us.append(Ucol)
        Ycs.append(Yc)
        Rs.append(R.reshape(s * d, -1))
        xs.append(xr.reshape(s * d, -1))
        Ds.append(Dl)
    index = [(np.arange(s)[:, None] * nq + m[None, :]).ravel() for m in groups]
    return GalerkinTree(s, nq, groups, parent, Us, Ycs, Rs, xs, Ds, index)


def ancestors(tree: GalerkinTree, g: int) -> list[int]:
    """The strict ancestor groups of group g, nearest first."""
    out, p = [], tree.parent[g]
    while p >= 0:
        out.append(int(p))
        p = tree.parent[p]
    return out


def dense(tree: GalerkinTree) -> np.ndarray:
    """The Newton matrix (s nq, s nq) assembled from its tree form: the reference for tests and small systems."""
    n = tree.s * tree.nq
    J = np.zeros((n, n))
    for g in range(len(tree.members)):
        ig = tree.index[g]
        J[np.ix_(ig, ig)] = tree.Dloc[g]
        for b in ancestors(tree, g):
            ib = tree.index[b]
            J[np.ix_(ig, ib)] = tree.x[g] @ tree.U[b].T
            J[np.ix_(ib, ig)] = tree.R[b] @ tree.Yc[g].T
    return J


@dataclass(frozen=True)
class Factor:
    """Leaves-to-root elimination of a GalerkinTree: per group the inverse pivot Dinv, gain X and hand-up c."""

    tree: GalerkinTree
    Dinv: list[np.ndarray]
    X: list[np.ndarray]
    c: list[np.ndarray]


def factor(tree: GalerkinTree) -> Factor | None:
    """Eliminate the tree (module docstring). None when a pivot block is singular."""
    count = len(tree.members)
    width = tree.U[0].shape[1]
    Obar = [np.zeros((width, width)) for _ in range(count)]
    Dinv, X, c = [None] * count, [None] * count, [None] * count
    for g in range(count - 1, -1, -1):
        U, R = tree.U[g], tree.R[g]
        Omega = Obar[g]
        OU = Omega @ U.T
        RO = R @ Omega
        try:
            Dinv[g] = np.linalg.inv(tree.Dloc[g] + R @ OU)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(Dinv[g])):
            return None
        X[g] = -Dinv[g] @ (tree.x[g] + RO)
        c[g] = tree.Yc[g].T + OU
        n = len(U)
        OPS["flops"] += 3 * width * width * n + width * n * n + n**3 + width * n * n
        if tree.parent[g] >= 0:
            Omega += c[g] @ X[g]
            Obar[tree.parent[g]] += Omega
    return Factor(tree, Dinv, X, c)


def solve(fac: Factor, rhs: np.ndarray) -> np.ndarray:
    """J^-1 rhs for rhs (s nq, m) in r.ravel() order; the answer in X.ravel() order."""
    tree = fac.tree
    count, width = len(tree.members), tree.U[0].shape[1]
    m = rhs.shape[1]
    obar = [np.zeros((width, m)) for _ in range(count)]
    xi = [None] * count
    for g in range(count - 1, -1, -1):
        xi[g] = fac.Dinv[g] @ (rhs[tree.index[g]] - tree.R[g] @ obar[g])
        n = len(xi[g])
        OPS["flops"] += (2 * width * n + n * n) * m
        if tree.parent[g] >= 0:
            obar[tree.parent[g]] += obar[g] + fac.c[g] @ xi[g]
    out = np.zeros_like(rhs)
    z = [None] * count
    for g in range(count):
        p = tree.parent[g]
        zp = z[p] if p >= 0 else np.zeros((width, m))
        delta = fac.X[g] @ zp + xi[g]
        out[tree.index[g]] = delta
        z[g] = zp + tree.U[g].T @ delta
        OPS["flops"] += 2 * width * len(delta) * m
    return out


def newton_direction(fac: Factor, f1: np.ndarray, G1: np.ndarray, G2: np.ndarray, f2: np.ndarray,
                     curvature: np.ndarray | None = None) -> np.ndarray:
    """The step (delta, dlam) solving [[J - K, -G1^T], [G2, 0]] (delta, dlam) = -(f1, f2), J the factored tree
    matrix, K = curvature (s nq, s nq; nonzero on a few columns: the loop rows' second derivatives) or None.
    The loop rows and K's columns border the tree solve: a dense system of their size."""
    size, k = len(f1), len(f2)
    cols = np.zeros(0, dtype=np.int64) if curvature is None else np.flatnonzero(np.any(curvature != 0.0, axis=0))
    rhs = np.concatenate([-f1[:, None], G1.T] + ([curvature[:, cols]] if len(cols) else []), axis=1)
    sol = solve(fac, rhs)
    a, Y = sol[:, 0], sol[:, 1:]
    if k + len(cols) == 0:
        return a
    # unknowns (dlam, u = delta[cols]): delta = a + Y (dlam, u); G2 delta = -f2; delta[cols] - u = 0
    B = np.zeros((k + len(cols), k + len(cols)))
    B[:k] = G2 @ Y
    B[k:] = Y[cols]
    B[k:, k:] -= np.eye(len(cols))
    rhs2 = np.concatenate([-f2 - G2 @ a, -a[cols]])
    OPS["flops"] += (k + len(cols)) ** 2 * size
    coef = np.linalg.solve(B, rhs2)
    return np.concatenate([a + Y @ coef, coef[:k]])

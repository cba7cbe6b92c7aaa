"""Exact Hessian of the Lagrangian of a tree shot's equality rows (tree_dynamics.py), over tape.TapeJet.

Each interval k contributes a_k . D1(q_k, q_k+1) + b_k . D2(q_k, q_k+1) (a_k, b_k: the multipliers of the DEL
rows at steps k and k + 1, the rest rows for the last), which up to terms linear in q is the scalar

    phi(qm, v) = W . (g + Q) + Z . p,   W = dt/2 (a + b),  Z = b - a

of the midpoint qm and velocity v. Written through the frame momenta h_f and wrenches w_f as in
tree/dynamics.py, phi = sum_f h_f . X_f + w_f . Y_f with the accumulated twists
X_f = sum_{j <= f} (W_j ad(V_parent(j)) S_j + Z_j S_j) and Y_f = sum_{j <= f} W_j S_j (j over the ancestors of
f and f itself). Every quantity is a first-order jet over (qm, v) on a tape (tape.py), one instance per
interval, so phi's Hessian is exact (one reverse sweep); the chain rule qm = (q1 + q2)/2, v = (q2 - q1)/dt maps
it onto (q_k, q_k+1).
Each configuration q_k contributes -lam . Dh(q_k) y + nu . h(q_k), where
(Dh y)_r = w_r . (Y_P - Y_C) with Y_f = sum_{j <= f} y_j S_j: its Hessian is the (q, q) block and the
gradients of -(Dh y)_r the (lam_r, q) block. A body-point key's curvature is in closed form (point_hessian).
Damping, servos, springs and the controls enter linearly.
The formulas (phi_formula, configuration_formula) are generic scalar code: on tape jets here (TapeTerms, the
reference), recorded once per model as programs and run in C by tree_program.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..tree.compile import ROT_Z, TreeModel
from . import jets
from .program import Node
from .tape import Tape, TapeJet
from .tree_batch import curve_values, forward_batch
from .tree_dynamics import Blocks, NumpyTerms

Scalar = TapeJet | float | np.ndarray  # an ndarray: a per-instance constant (K,)
Vec = list  # three Scalars


def _mul(a: Scalar, b: Scalar) -> Scalar:
    """a b, an exact zero or one (a float 0 or 1) skipped."""
    if isinstance(a, float):
        if a == 0.0 or a == 1.0:
            return 0.0 if a == 0.0 else b
    elif isinstance(b, float) and (b == 0.0 or b == 1.0):
        return 0.0 if b == 0.0 else a
    return a * b


def _sum(terms) -> Scalar:
    """The sum of Scalars, float zeros skipped."""
    out: Scalar = 0.0
    for t in terms:
        if isinstance(t, float) and t == 0.0:
            continue
        out = t if isinstance(out, float) and out == 0.0 else out + t
    return out


def _matvec(R: list, x: Vec) -> Vec:
    return [_sum(_mul(R[i][k], x[k]) for k in range(3)) for i in range(3)]


def _cross(a: Vec, b: Vec) -> Vec:
    return [_sum([_mul(a[1], b[2]), -_mul(a[2], b[1])]),
            _sum([_mul(a[2], b[0]), -_mul(a[0], b[2])]),
            _sum([_mul(a[0], b[1]), -_mul(a[1], b[0])])]


def _dot(a: Vec, b: Vec) -> Scalar:
    return _sum(_mul(x, y) for x, y in zip(a, b))


def _axpy(c: np.ndarray, x: Vec, y: Vec) -> Vec:
    """y + c x for per-instance numbers c (K,)."""
    return [_sum([yi, _mul(xi, c)]) for xi, yi in zip(x, y)]


def _const(v: np.ndarray) -> Vec:
    return [float(x) for x in v]


@dataclass
class JetFrames:
    """Frame poses and world twist axes over jets: R[f] (3x3), origin[f] (3), axis[f] = (angular, linear)."""

    R: list
    origin: list
    axis: list


def _cos_sin(u: TapeJet | Node) -> tuple:
    """cos u, sin u of a tape jet or of a recorded program node."""
    return (u.cos(), u.sin()) if isinstance(u, Node) else (jets.cos(u), jets.sin(u))


def frames(model: TreeModel, q: list) -> JetFrames:
    """Forward kinematics (tree/kinematics.py) with the coordinates q (nq jets or nodes): world_M_frame = world_M_parent
    placement motion(q), S_f = (e, o x e) for a rotation about e through o, (0, e) for a translation."""
    identity = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    Rs, origins, axes = [], [], []
    for f in range(model.nq):
        parent = int(model.dof_parent[f])
        Rp, op = (identity, [0.0] * 3) if parent < 0 else (Rs[parent], origins[parent])
        P = model.dof_placement[f]
        kind = int(model.dof_kind[f])
        ax = kind % 3
        placed = [[_sum(_mul(Rp[r][k], float(P[k, col])) for k in range(3)) for col in range(3)] for r in range(3)]
        if kind <= ROT_Z:  # placed times the rotation about axis ax: columns i, j turn by q
            i, j = (ax + 1) % 3, (ax + 2) % 3
            c, s = _cos_sin(q[f])
            R = [row[:] for row in placed]
            for r in range(3):
                R[r][i] = _sum([_mul(c, placed[r][i]), _mul(s, placed[r][j])])
                R[r][j] = _sum([_mul(c, placed[r][j]), -_mul(s, placed[r][i])])
            local_t = _const(P[:3, 3])
        else:
            R = placed
            local_t = [_sum([float(P[r, 3]), _mul(float(P[r, ax]), q[f])]) for r in range(3)]
        o = [_sum([a, b]) for a, b in zip(op, _matvec(Rp, local_t))]
        e = [R[r][ax] for r in range(3)]
        axes.append((e, _cross(o, e)) if kind <= ROT_Z else ([0.0] * 3, e))
        Rs.append(R)
        origins.append(o)
    return JetFrames(Rs, origins, axes)


def _point(fr: JetFrames, f: int, local: np.ndarray) -> Vec:
    """World position of a point fixed in frame f (local coordinates), f = -1 the world."""
    if f < 0:
        return _const(local)
    return [_sum([a, b]) for a, b in zip(fr.origin[f], _matvec(fr.R[f], _const(local)))]


def _direction(fr: JetFrames, f: int, local: np.ndarray) -> Vec:
    return _const(local) if f < 0 else _matvec(fr.R[f], _const(local))


def _accumulate(model: TreeModel, per_frame: list) -> list:
    """sum over the ancestors-or-self of each frame of per-frame twists (angular, linear)."""
    out = []
    for f in range(model.nq):
        parent = int(model.dof_parent[f])
        base = ([0.0] * 3, [0.0] * 3) if parent < 0 else out[parent]
        out.append(([_sum([a, b]) for a, b in zip(base[0], per_frame[f][0])],
                    [_sum([a, b]) for a, b in zip(base[1], per_frame[f][1])]))
    return out


def _point_velocity(twist: tuple, point: Vec) -> Vec:
    """Velocity of a world point under a twist (angular, linear at the world origin): v + w x p."""
    return [_sum([a, b]) for a, b in zip(twist[1], _cross(twist[0], point))]


def _frame_bodies(model: TreeModel) -> list[tuple[int, float, np.ndarray, np.ndarray]]:
    """(frame, mass, com in frame axes, inertia about the com in frame axes) of each body on a moving frame."""
    out = []
    for b, f in enumerate(model.body_frame):
        if f < 0:
            continue
        off = model.body_offset[b]
        com = off[:3, 3] + off[:3, :3] @ model.body_com[b]
        out.append((int(f), float(model.body_mass[b]), com, off[:3, :3] @ model.body_inertia[b] @ off[:3, :3].T))
    return out


def phi_formula(model: TreeModel, qm: list, v: list, W: list, Z: list, scales: list) -> Scalar:
    """phi = W . (g + Q) + Z . p at the midpoint qm and velocity v (nq Scalars each), weights W, Z (nq Scalars)
    and the point forces' scales (one Scalar per force), over any scalar type: tape jets with per-instance arrays
    (interval_phi) or recorded program nodes (tree_program.py). Joint springs are left out (linear in qm)."""
    nq = model.nq
    fr = frames(model, qm)
    zero = ([0.0] * 3, [0.0] * 3)
    V = _accumulate(model, [([_mul(a, v[f]) for a in fr.axis[f][0]],
                             [_mul(a, v[f]) for a in fr.axis[f][1]]) for f in range(nq)])
    x_own, y_own = [], []
    for f in range(nq):
        parent = int(model.dof_parent[f])
        Vp = zero if parent < 0 else V[parent]
        Sw, Sv = fr.axis[f]
        ad = (_cross(Vp[0], Sw), [_sum([a, b]) for a, b in zip(_cross(Vp[0], Sv), _cross(Vp[1], Sw))])
        x_own.append((_axpy(Z[f], Sw, _axpy(W[f], ad[0], [0.0] * 3)),
                      _axpy(Z[f], Sv, _axpy(W[f], ad[1], [0.0] * 3))))
        y_own.append(([_mul(a, W[f]) for a in Sw], [_mul(a, W[f]) for a in Sv]))
    X, Y = _accumulate(model, x_own), _accumulate(model, y_own)
    terms: list[Scalar] = []
    g = np.asarray(model.gravity, float)
    for f, mass, com, inertia in _frame_bodies(model):
        c = _point(fr, f, com)
        vc = _point_velocity(V[f], c)
        terms.append(_mul(mass, _dot(vc, _point_velocity(X[f], c))))
        Rt = [[fr.R[f][k][r] for k in range(3)] for r in range(3)]
        w_body, x_body = _matvec(Rt, V[f][0]), _matvec(Rt, X[f][0])
        terms.append(_dot(_matvec([[float(x) for x in row] for row in inertia], w_body), x_body))
        terms.append(_dot(_const(mass * g), _point_velocity(Y[f], c)))
    for i, f in enumerate(model.force_frame):
        if f < 0:
            continue
        force = [_mul(float(F), scales[i]) if F != 0.0 else 0.0 for F in model.force_vector[i]]
        terms.append(_dot(force, _point_velocity(Y[int(f)], _point(fr, int(f), model.force_point[i]))))
    return _sum(terms)


def force_scales(model: TreeModel, tm: np.ndarray) -> np.ndarray:
    """(K, nforce): each point force's scale curve at the times tm (K,), 1 for a force without one."""
    return curve_values(model.force_scale, tm, 1.0)


def interval_phi(model: TreeModel, qm: np.ndarray, v: np.ndarray, tm: np.ndarray, W: np.ndarray,
                 Z: np.ndarray) -> np.ndarray:
    """The Hessian (K, 2 nq, 2 nq) over (qm, v) of phi = W . (g + Q) + Z . p at (qm, v) (K, nq), times tm (K,),
    weights W, Z (K, nq) (phi up to terms linear in qm: joint springs), on a tape."""
    nq = model.nq
    tape = Tape(2 * nq)
    var = tape.variables(np.hstack([qm, v]))
    scales = force_scales(model, tm)
    phi = phi_formula(model, var[:nq], var[nq:], list(W.T), list(Z.T), list(scales.T))
    return tape.hessian(phi, len(qm))


def points_formula(model: TreeModel, q: list, w: list, points: list[tuple[int, np.ndarray]]) -> Scalar:
    """chi = sum_p w_p . x_p(q): the world positions x_p of points fixed in frames (frame, local coordinates) at
    the coordinates q (nq Scalars), weighted by w (3 Scalars per point), over any scalar type (tree_program.py)."""
    fr = frames(model, q)
    return _sum(_dot(_point(fr, frame, local), w[3 * p: 3 * p + 3]) for p, (frame, local) in enumerate(points))


def _gradient(x: Scalar, K: int, n: int) -> np.ndarray:
    """The gradient (K, n) of a tape jet or of a constant (zeros)."""
    return x.grad if isinstance(x, TapeJet) else np.zeros((K, n))


def point_hessian(model: TreeModel, world: np.ndarray, S: np.ndarray, frame: int, local: np.ndarray,
                  weight: np.ndarray) -> np.ndarray:
    """Hessian (nq, nq) over q of weight . p(q) for the point p fixed in `frame` (local coordinates), from the frame
    poses world (nq + 1, 4, 4) and twist axes S (nq, 6) at q (tree_batch.forward_batch): with w_j, v_j the twist
    of coordinate j, dp/dq_j = w_j x p + v_j and d2p/dq_a dq_b = w_a x dp/dq_b for a an ancestor-or-self of b,
    both ancestors-or-self of the frame (the Jacobi identity folds the turning of S_b by q_a into this form)."""
    chain = np.flatnonzero(model.ancestor[frame])
    chain = chain[np.argsort(model.ancestor[chain].sum(axis=1), kind="stable")]  # root first (by depth)
    p = world[frame, :3, 3] + world[frame, :3, :3] @ np.asarray(local, float)
    w, v = S[chain, :3], S[chain, 3:]
    d1 = np.cross(w, p) + v  # (s, 3)
    T = np.cross(w[:, None, :], d1[None, :, :]) @ np.asarray(weight, float)  # (a, b): weight . (w_a x dp/dq_b)
    s = len(chain)
    H = np.where(np.arange(s)[:, None] <= np.arange(s)[None, :], T, T.T)
    out = np.zeros((model.nq, model.nq))
    out[chain[:, None], chain] = H
    return out


def configuration_formula(model: TreeModel, q: list, y: list, lam: list, nu: list,
                          rows: np.ndarray) -> tuple[Scalar, list[Scalar]]:
    """psi = -lam . Dh[rows](q) y + nu . h[rows](q) and the (Dh y)_r of the kept rows, at the coordinates q and
    velocities y (nq Scalars each) with lam, nu (one Scalar per row), over any scalar type (configuration_terms,
    tree_program.py)."""
    nq = model.nq
    fr = frames(model, q)
    Yf = _accumulate(model, [([_mul(a, y[f]) for a in fr.axis[f][0]], [_mul(a, y[f]) for a in fr.axis[f][1]])
                             for f in range(nq)])
    zero = ([0.0] * 3, [0.0] * 3)
    terms, dhy = [], []
    for i, r in enumerate(rows):
        fp, fc = int(model.row_frame_p[r]), int(model.row_frame_c[r])
        dY = [[_sum([a, -b]) for a, b in zip(P, C)]
              for P, C in zip(zero if fp < 0 else Yf[fp], zero if fc < 0 else Yf[fc])]
        if model.row_kind[r] == 0:
            n = _direction(fr, fp, model.row_n[r])
            pc = _point(fr, fc, model.row_b[r])
            pp = _point(fr, fp, model.row_a[r])
            h = _dot(n, [_sum([a, -b]) for a, b in zip(pp, pc)])
            u = _dot(n, _point_velocity((dY[0], dY[1]), pc))
        else:
            a = _direction(fr, fp, model.row_a[r])
            b = _direction(fr, fc, model.row_b[r])
            h = _dot(a, b)
            u = _dot(_cross(a, b), dY[0])
        dhy.append(u)
        terms += [_mul(u, -lam[i]), _mul(h, nu[i])]
    return _sum(terms), dhy


def configuration_terms(model: TreeModel, q: np.ndarray, y: np.ndarray, lam: np.ndarray, nu: np.ndarray,
                        rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At configurations q (K, nq): the Hessian (K, nq, nq) over q of psi = -lam . Dh[rows](q) y + nu . h[rows](q)
    and the gradients (K, nr, nq) of (Dh y)_r for the kept rows, on a tape. y (K, nq), lam, nu (K, nr)."""
    K, nq = q.shape
    tape = Tape(nq)
    psi, dhy = configuration_formula(model, tape.variables(q), list(y.T), list(lam.T), list(nu.T),
                                     rows)
    return tape.hessian(psi, K), np.stack([_gradient(u, K, nq) for u in dhy], axis=1)


@lru_cache(maxsize=64)
def midpoint_chain(nq: int, dt: float) -> np.ndarray:
    """d(qm, v) / d(q1, q2) (2 nq, 2 nq) for qm = (q1 + q2)/2, v = (q2 - q1)/dt."""
    eye = np.eye(nq)
    out = np.block([[0.5 * eye, 0.5 * eye], [-eye / dt, eye / dt]])
    out.setflags(write=False)  # shared by every call
    return out


class TapeTerms(NumpyTerms):
    """The rows' terms by tree_batch.py and the Hessian's by the formulas above on a tape (tape.py): the
    reference of tree_program.TreeProgram."""

    def phi_hessian(self, tx, qm: np.ndarray, v: np.ndarray, tm: np.ndarray, W: np.ndarray,
                    Z: np.ndarray) -> np.ndarray:
        """interval_phi for the shot's model."""
        return interval_phi(tx.model, qm, v, tm, W, Z)

    def configuration_hessian(self, tx, q: np.ndarray, y: np.ndarray, lam: np.ndarray,
                              nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """configuration_terms for the shot's model and kept rows."""
        return configuration_terms(tx.model, q, y, lam, nu, tx.rows)


TAPE_TERMS = TapeTerms()


def hessian_blocks(tx, x: np.ndarray, y: np.ndarray, points: list[tuple[int, int, np.ndarray, np.ndarray]] = (),
                   terms: TapeTerms = TAPE_TERMS) -> list[Blocks]:
    """The exact Hessian (n, n), both triangles, of y . c(x) for the rows c of the TreeTranscription tx (y: (m,))
    plus, for each point (step k, frame, point in frame axes, weights (3,)), weights . position at q_k, as groups
    of dense blocks (first rows, first columns, blocks; overlapping blocks add, tree_dynamics.assemble_blocks),
    the phi and psi terms by `terms` (TapeTerms, or tree_program.TreeProgram: the same methods), the points' in
    closed form.
    Where the blocks sit depends only on tx and the points' steps: the pattern is the same at every x and y."""
    N, nq, nr, dt = tx.steps, tx.nq, tx.nr, tx.dt
    model = tx.model
    Q, _, Lam = tx.unpack(x)
    y_del = y[: N * nq].reshape(N, nq)
    y_loop = y[N * nq: N * (nq + nr)].reshape(N, nr)
    y_rest = y[N * (nq + nr): tx.m] if tx.rest_at_end else np.zeros(nq)
    a, b = y_del, np.vstack([y_del[1:], y_rest[None, :]])  # multipliers of D1 and D2 on each interval
    phi = terms.phi_hessian(tx, 0.5 * (Q[:-1] + Q[1:]), (Q[1:] - Q[:-1]) / dt, (np.arange(N) + 0.5) * dt,
                            0.5 * dt * (a + b), b - a)
    chain = midpoint_chain(nq, dt)
    H = chain.T @ phi @ chain  # batched matmuls: a three-operand einsum would loop over (2 nq)^4 per step
    col = np.arange(N) * nq - nq  # first column of q_k in x (q_0 is not an unknown)
    # (q_k, q_k+1) are adjacent in x: one block per interval, only the (q_1, q_1) part on the first
    parts = [(col[1:], col[1:], H[1:]), (col[:1] + nq, col[:1] + nq, H[:1, nq:, nq:])]
    if nr:
        lam = tx.loop_multipliers(x)[1:]
        psi_hess, dhy = terms.configuration_hessian(tx, Q[1:], b, lam, y_loop)
        qcol = np.arange(N) * nq
        parts.append((qcol, qcol, psi_hess))
        mixed = -dhy  # (N, nr, nq): d(-Dh y)/dq
        has_lam = N if tx.rest_at_end else N - 1
        lam_row = np.array([tx.lam_slice(k).start for k in range(1, N)] + [tx.mu_slice.start])[:has_lam]
        parts.append((lam_row, qcol[:has_lam], mixed[:has_lam]))
        parts.append((qcol[:has_lam], lam_row, np.swapaxes(mixed[:has_lam], 1, 2)))
    if len(points):  # the keyed points' curvature, in closed form
        steps = np.array([step for step, _, _, _ in points])
        kin = forward_batch(model, Q[steps], tx.charts)
        blocks = [point_hessian(model, kin.world[i], kin.S[i], frame, local, weight)
                  for i, (_, frame, local, weight) in enumerate(points)]
        qcol = (steps - 1) * nq
        parts.append((qcol, qcol, np.stack(blocks)))
    return parts

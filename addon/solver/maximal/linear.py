"""The Newton linear system of the maximal-coordinate step, solved with Baraff's O(n) factorisation.

The exact Newton matrix (notes/003.md P11) is not symmetric:

    A = [[D + K, G^T],        D: body blocks (inertial, self-damping; non-symmetric rotational part)
         [C,     E  ]]        K: body-body damper couplings; G: constraint rows at z_1 (force side);
                              C: d g(z_2)/d zdot / dt (velocity side); E: zero on the joint rows, a
                              dense block on the auxiliary rows (interior-point pairs of inequalities).

The primary (tree) part of its symmetric part, P = sym([[D, G^T], [C, 0]]) without K, has the block
pattern Baraff's LDL^T handles and is factored by baraff.factor in O(n) (seed 002 §7, maximal/baraff.py).
Loop-closing joints and inequality rows are k auxiliary rows bordered exactly onto it (one k-column
baraff.solve of their force-side columns, the k x k Schur complement E - C_aux P^-1 G_aux^T; O(nk) +
O(k^3)). The exact Newton step is then obtained by defect correction, u <- u + Pb^-1 (b - A u), where
each A u is O(n): the skew part of A is O(dt |omega|) relative to P, so a few sweeps suffice; GMRES
with the same preconditioner takes over if they stall. Dense solves appear only in tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from . import baraff
from .graph import TreeOrder, order_tree


@dataclass
class RowBlocks:
    """Constraint-type rows (R,): bodies a, b (-1: none), force-side G and velocity-side C blocks (R, 6)
    on each."""

    a: np.ndarray
    b: np.ndarray
    Ga: np.ndarray
    Gb: np.ndarray
    Ca: np.ndarray
    Cb: np.ndarray

    @property
    def count(self) -> int:
        return len(self.a)


@dataclass
class NewtonMatrix:
    """The exact Newton matrix in blocks. Rows [0, n_primary) belong to the primary joints, in
    `primary_slices` order (each joint's rows consecutive); the rest are auxiliary, with the dense
    diagonal block E (k, k)."""

    D: np.ndarray  # (B, 6, 6)
    rows: RowBlocks
    n_primary: int
    coupling: tuple[np.ndarray, np.ndarray, np.ndarray]  # rows a (P,), cols b (P,), blocks (P, 6, 6)
    E: np.ndarray

    def multiply(self, u: np.ndarray) -> np.ndarray:
        """A u for u = [zdot (6B); multipliers (R)] (one sparse product; the matrix is assembled once)."""
        if getattr(self, "_csr", None) is None:
            self._csr = self._assemble()
        return self._csr @ u

    def _assemble(self) -> scipy.sparse.csr_matrix:
        nb = len(self.D)
        rows = self.rows
        R = len(rows.a)
        n = 6 * nb + R
        six = np.arange(6)
        i_parts, j_parts, v_parts = [], [], []

        def blocks(r0: np.ndarray, c0: np.ndarray, values: np.ndarray) -> None:
            """Dense 6x6 blocks at row/col block offsets r0, c0 (body indices times 6)."""
            i_parts.append((r0[:, None, None] + six[None, :, None] + 0 * six[None, None, :]).ravel())
            j_parts.append((c0[:, None, None] + 0 * six[None, :, None] + six[None, None, :]).ravel())
            v_parts.append(values.ravel())

        body = np.arange(nb)
        blocks(6 * body, 6 * body, self.D)
        ia, ib, K = self.coupling
        if len(ia):
            blocks(6 * ia, 6 * ib, K)
        r = np.arange(R)
        for b, G, C in ((rows.a, rows.Ga, rows.Ca), (rows.b, rows.Gb, rows.Cb)):
            has = b >= 0
            cols = 6 * b[has][:, None] + six
            i_parts += [cols.ravel(), np.repeat(6 * nb + r[has], 6)]
            j_parts += [np.repeat(6 * nb + r[has], 6), cols.ravel()]
            v_parts += [G[has].ravel(), C[has].ravel()]
        k = len(self.E)
        if k:
            aux = 6 * nb + self.n_primary + np.arange(k)
            i_parts.append(np.repeat(aux, k))
            j_parts.append(np.tile(aux, k))
            v_parts.append(self.E.ravel())
        return scipy.sparse.csr_matrix((np.concatenate(v_parts), (np.concatenate(i_parts), np.concatenate(j_parts))),
                                       shape=(n, n))


SLOW_SWEEP = 0.2  # defect correction hands over to GMRES when a sweep shrinks the defect less than this


class LinearSolver:
    """Factor the symmetric part once, then solve with the exact matrix by defect correction.

    primary_joint_rows: for each primary joint, (row slice, bodies) with bodies (a, b) or (b,) for a
    world-anchored joint. The topology (TreeOrder) is computed once.
    """

    def __init__(self, n_bodies: int, primary: list[tuple[slice, tuple[int, ...]]]):
        self.n_bodies = n_bodies
        self.primary = primary
        self.order: TreeOrder = order_tree(n_bodies, [bodies for _, bodies in primary])
        self.fac: baraff.Factor | None = None
        self.sweeps = 0
        self.defect = 0.0

    def factor(self, A: NewtonMatrix) -> None:
        """Factor P = sym(A) restricted to bodies and primary rows, and its bordered auxiliary rows."""
        Dsym = 0.5 * (A.D + np.swapaxes(A.D, 1, 2))
        rows = A.rows
        Sa = 0.5 * (rows.Ga + rows.Ca)
        Sb = 0.5 * (rows.Gb + rows.Cb)
        cons = []
        for sl, bodies in self.primary:
            if len(bodies) == 2:
                cons.append(baraff.Constraint(bodies, (Sa[sl], Sb[sl])))
            else:
                cons.append(baraff.Constraint(bodies, (Sb[sl],)))
        self.fac = baraff.factor(list(Dsym), cons, self.order)
        nb, npr = self.n_bodies, A.n_primary
        aux = np.arange(npr, rows.count)
        k = len(aux)
        N = 6 * nb + npr
        self._aux = aux
        self._N = N
        if k == 0:
            self._schur = None
            return
        cols = np.zeros((N, k))
        for body, G in ((rows.a, rows.Ga), (rows.b, rows.Gb)):
            has = body[aux] >= 0
            j = np.nonzero(has)[0]
            idx = 6 * body[aux][has][:, None] + np.arange(6)
            cols[idx, j[:, None]] += G[aux][has]
        self._Y = baraff.solve(self.fac, cols)
        self._aux_C = (rows.Ca[aux], rows.Cb[aux], rows.a[aux], rows.b[aux])
        self._schur = A.E - self._apply_aux(self._Y)
        # equilibrated LU of the Schur complement (interior-point rows range from s/lam ~ 1e-12 to 1e9)
        row = 1.0 / np.maximum(np.max(np.abs(self._schur), axis=1), 1e-300)
        col = 1.0 / np.maximum(np.max(np.abs(self._schur * row[:, None]), axis=0), 1e-300)
        self._schur_lu = (scipy.linalg.lu_factor(self._schur * row[:, None] * col, check_finite=False), row, col)

    def _apply_aux(self, y: np.ndarray) -> np.ndarray:
        """Velocity-side auxiliary rows applied to the body part of y ((N,) or (N, c))."""
        Sa, Sb, a, b = self._aux_C
        nb = self.n_bodies
        zb = y[:6 * nb].reshape((nb, 6) + y.shape[1:])
        out = np.zeros((len(a),) + y.shape[1:])
        for body, S in ((a, Sa), (b, Sb)):
            has = body >= 0
            out[has] += np.einsum("ri,ri...->r...", S[has], zb[body[has]])
        return out

    def precondition(self, rhs: np.ndarray) -> np.ndarray:
        """Pb^-1 rhs, Pb = P bordered by the exact auxiliary rows (one baraff.solve plus the k x k Schur step)."""
        N = self._N
        y0 = baraff.solve(self.fac, rhs[:N])
        if self._schur is None:
            return y0
        lu, row, col = self._schur_lu
        mu = col * scipy.linalg.lu_solve(lu, row * (rhs[N:] - self._apply_aux(y0)), check_finite=False)
        return np.concatenate([y0 - self._Y @ mu, mu])

    def solve(self, A: NewtonMatrix, rhs: np.ndarray, rtol: float = 1e-8, max_sweeps: int = 40) -> np.ndarray:
        """Solve A u = rhs to relative accuracy rtol (an inexact Newton step: Newton keeps its
        convergence when the linear error is small relative to the residual): defect correction
        preconditioned by the factored symmetric part, GMRES when that stalls."""
        u = self.precondition(rhs)
        scale = max(np.max(np.abs(rhs)), 1e-300)
        best, best_u = np.inf, u
        for sweep in range(max_sweeps):
            defect = rhs - A.multiply(u)
            size = np.max(np.abs(defect))
            if size >= best:
                break
            slow = size > SLOW_SWEEP * best
            best, best_u = size, u
            if size <= rtol * scale or slow:  # slow contraction: GMRES does better
                break
            u = u + self.precondition(defect)
        self.sweeps = sweep + 1
        self.defect = best / scale
        if self.defect > rtol:
            best_u = self._gmres(A, rhs, best_u, rtol)
        return best_u

    def _gmres(self, A: NewtonMatrix, rhs: np.ndarray, u0: np.ndarray, rtol: float) -> np.ndarray:
        """When the skew part is too large for defect correction (fast spin, near-singular loops):
        GMRES on the exact matrix, preconditioned by the same factorisation."""
        n = len(rhs)
        op = scipy.sparse.linalg.LinearOperator((n, n), matvec=A.multiply)
        pre = scipy.sparse.linalg.LinearOperator((n, n), matvec=self.precondition)
        u, _ = scipy.sparse.linalg.gmres(op, rhs, x0=u0, M=pre, rtol=rtol, atol=0.0, restart=40, maxiter=5)
        defect = np.max(np.abs(rhs - A.multiply(u))) / max(np.max(np.abs(rhs)), 1e-300)
        if defect < self.defect:
            self.defect = defect
            return u
        return u0

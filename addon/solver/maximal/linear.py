"""The Newton linear system of the maximal-coordinate step, solved with O(n) tree factorisations or
one sparse LU when contacts add many rows.

The exact Newton matrix (docs/seeds.md 003-D) is not symmetric:

    A = [[D + K, G^T],        D: body blocks (inertial, self-damping; non-symmetric rotational part)
         [C,     E  ]]        K: body-body damper couplings; G: constraint rows at z_1 (force side);
                              C: d g(z_2)/d zdot / dt (velocity side); E (sparse): zero on the joint
                              rows, the interior-point pairs' -s/lam and cone couplings on the rest.

Its primary (tree) part P = [[D, G^T], [C, 0]] without K has the block pattern of Baraff's saddle
matrix (seed 002 §7). With the C kernels built it is factored exactly by the block LDU of fillin.py
in the tree's children-first order (no fill-in: O(n), one flat gather per factor, index arrays built
once); without them P is replaced by its symmetric part and factored by baraff.factor. The k
auxiliary rows (loop-closing joints, inequality pairs) are then either bordered exactly onto it (one
k-column solve of their force-side columns, the dense k x k Schur complement E - C_aux P^-1 G_aux^T;
O(nk) + O(k^3)), or, from SPARSE_FROM rows on, the whole bordered matrix Pb = A - K joins one sparse
factorisation after row and column equilibration (Pb is indefinite and not symmetric): the block LU of
contact_ldu.py, whose static elimination order follows the bodies' contact graph (a contact row
touches only its two bodies, so with a bounded number of contacts per body its fill and cost are
linear in bodies + contacts), or SuperLU with partial pivoting and minimum degree on Pb + Pb^T when the
block LU cannot (no C kernel, a singular pivot, defect correction stalling above rounding level:
then for the rest of that contact set; `fallback` says why). SuperLU's free row exchanges destroy its ordering on stacked contacts.
The exact Newton step is then obtained by defect correction, u <- u + Pb^-1
(b - A u), where each A u is O(n) (blockwise, no sparse assembly): with the exact P only K remains in
the defect (none without dampers), with the symmetric part the skew part of A is O(dt |omega|)
relative to P; GMRES with the same preconditioner takes over if the sweeps stall; when A is the
exactly factored P (a tree without dampers' body couplings or auxiliary rows) the factor's solve is
returned as it is. Dense solves of the whole matrix appear only in tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from . import baraff, contact_ldu, fillin
from .forces import scatter, scatter_index
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
    E: scipy.sparse.csr_matrix  # (k, k), k auxiliary rows

    def _force_side(self) -> tuple[np.ndarray, np.ndarray]:
        """Scatter index and [Ga Gb] (R, 12) of the current rows (kept while `rows` is the same object)."""
        cache = getattr(self, "_force_cache", None)
        if cache is None or cache[0] is not self.rows:
            nb, rows = len(self.D), self.rows
            index = scatter_index(np.where(rows.a < 0, nb, rows.a), np.where(rows.b < 0, nb, rows.b))
            cache = (rows, index, np.concatenate([rows.Ga, rows.Gb], axis=1))
            self._force_cache = cache
        return cache[1], cache[2]

    def multiply(self, u: np.ndarray, absolute: bool = False) -> np.ndarray:
        """A u for u = [zdot (6B); multipliers (R)], block by block (O(n), nothing assembled); with
        `absolute`, |A| |u| (the scale of the rounding error in A u)."""
        nb = len(self.D)
        rows = self.rows
        index, G = self._force_side()
        ia, ib, K = self.coupling
        D, Ca, Cb, E = self.D, rows.Ca, rows.Cb, self.E
        if absolute:
            u, G, K, D, Ca, Cb, E = (abs(m) for m in (u, G, K, D, Ca, Cb, E))
        z = u[:6 * nb].reshape(nb, 6)
        mu = u[6 * nb:]
        ze = np.vstack([z, np.zeros((1, 6))])  # body index -1 (none) reads the zero row
        body = np.einsum("bij,bj->bi", D, z)
        if len(ia):
            np.add.at(body, ia, np.einsum("pij,pj->pi", K, z[ib]))
        body += scatter(nb, rows.a, rows.b, G * mu[:, None], index)
        row = np.einsum("ri,ri->r", Ca, ze[rows.a]) + np.einsum("ri,ri->r", Cb, ze[rows.b])
        if E.shape[0]:
            row[self.n_primary:] += E @ mu[self.n_primary:]
        return np.concatenate([body.ravel(), row])


SLOW_SWEEP = 0.2  # defect correction hands over to GMRES when a sweep shrinks the defect less than this
ROUNDING = 1e-13  # a defect below ROUNDING * max(|A| |u|) is rounding error: no solver can shrink it
SPARSE_FROM = 32  # auxiliary rows from which the bordered matrix is factored sparsely as a whole (measured:
# factor + two solves 1.5 ms dense against 3 ms sparse at 11 rows, 3.7-4.4 against 2.8 ms at 44-53 rows)
SPARSE_ORDERING = "MMD_AT_PLUS_A"  # SuperLU's minimum degree on the pattern of Pb + Pb^T


def bordered_matrix(A: NewtonMatrix) -> scipy.sparse.coo_matrix:
    """Pb = [[D, G^T], [C, E]] (A without K) as a sparse matrix: the 6x6 body blocks, each row's
    force side (column) and velocity side (row) on its bodies, E on the auxiliary rows. O(n + rows)."""
    nb = len(A.D)
    rows = A.rows
    N = 6 * nb
    six = np.arange(6)
    first = 6 * np.arange(nb)[:, None, None]
    ii = [np.broadcast_to(first + six[:, None], (nb, 6, 6)).ravel()]
    jj = [np.broadcast_to(first + six, (nb, 6, 6)).ravel()]
    vv = [A.D.ravel()]
    for body, G, C in ((rows.a, rows.Ga, rows.Ca), (rows.b, rows.Gb, rows.Cb)):
        r = np.nonzero(body >= 0)[0]
        cols = (6 * body[r][:, None] + six).ravel()
        at = np.repeat(N + r, 6)
        ii += [cols, at]
        jj += [at, cols]
        vv += [G[r].ravel(), C[r].ravel()]
    E = A.E.tocoo()
    offset = N + A.n_primary
    ii.append(E.row + offset)
    jj.append(E.col + offset)
    vv.append(E.data)
    n = N + rows.count
    return scipy.sparse.coo_matrix((np.concatenate(vv), (np.concatenate(ii), np.concatenate(jj))), shape=(n, n))


class LinearSolver:
    """Factor the primary part once per Newton iteration, then solve with the exact matrix by defect
    correction.

    primary_joint_rows: for each primary joint, (row slice, bodies) with bodies (a, b) or (b,) for a
    world-anchored joint. The topology (TreeOrder) and, with the C kernels, the flat LDU plan and its
    gather indices are computed once.
    """

    def __init__(self, n_bodies: int, primary: list[tuple[slice, tuple[int, ...]]], border: str = "auto"):
        if border not in ("auto", "dense", "sparse", "superlu"):
            raise ValueError(f"LinearSolver border must be 'auto', 'dense', 'sparse' or 'superlu', not {border!r}")
        self.n_bodies = n_bodies
        self.primary = primary
        self.order: TreeOrder = order_tree(n_bodies, [bodies for _, bodies in primary])
        self.border = border
        self.unknowns = 0  # size of the last factored Newton matrix (bodies' 6 + every row)
        self.fac: baraff.Factor | fillin.LDU | None = None
        self._sparse_lu: tuple[scipy.sparse.linalg.SuperLU, np.ndarray, np.ndarray] | None = None
        self._block: tuple[contact_ldu.Pattern, contact_ldu.Factor, np.ndarray, np.ndarray] | None = None
        self._pattern: contact_ldu.Pattern | None = None
        self._distrusted: contact_ldu.Pattern | None = None  # a pattern whose factor defect correction stalled on
        self.fallback: str | None = None  # why the last sparse factor that fell back to SuperLU did
        self.fallbacks = 0  # sparse factors of Pb that fell back to SuperLU
        self.sweeps = 0
        self.defect = 0.0
        if fillin.NATIVE:
            self._plan_exact()

    def _plan_exact(self) -> None:
        """Flat LDU plan of P in the tree's children-first order, and where each block goes: the body
        blocks D, each constraint's velocity-side rows C (constraint row) and force-side G^T (column)."""
        n = self.n_bodies
        shapes = [baraff.Constraint(bodies, tuple(np.zeros((sl.stop - sl.start, 6)) for _ in bodies))
                  for sl, bodies in self.primary]
        system = fillin.saddle([np.eye(6)] * n, shapes)
        self._symbolic = fillin.symbolic(system.dims, system.edges, tuple(self.order.forward))
        plan = fillin.plan(self._symbolic)
        self._plan = plan
        npr = sum(sl.stop - sl.start for sl, _ in self.primary)
        six = np.arange(6)
        src, dst = [], []
        for i, (sl, bodies) in enumerate(self.primary):
            rows = np.arange(sl.start, sl.stop)
            for body, side in zip(bodies, (0, 1) if len(bodies) == 2 else (1,)):
                c_entries = ((2 + side) * npr + rows)[:, None] * 6 + six  # into [Ga; Gb; Ca; Cb] (4 npr, 6)
                g_entries = (side * npr + rows)[:, None] * 6 + six
                src += [c_entries.ravel(), g_entries.T.ravel()]
                dst += [plan.where[n + i, body] + np.arange(c_entries.size),
                        plan.where[body, n + i] + np.arange(g_entries.size)]
        self._src = np.concatenate(src) if src else np.zeros(0, np.int64)
        self._dst = np.concatenate(dst) if dst else np.zeros(0, np.int64)
        self._diag = (plan.diag_offset[:n, None] + np.arange(36)).ravel()
        self._npr = npr

    def _factor_primary(self, A: NewtonMatrix) -> None:
        """P exactly (LDU, C kernel) or its symmetric part (baraff, numpy fallback)."""
        rows = A.rows
        if fillin.NATIVE:
            npr = self._npr
            flat = np.zeros(self._plan.size)
            flat[self._diag] = A.D.ravel()
            blocks = np.concatenate([rows.Ga[:npr], rows.Gb[:npr], rows.Ca[:npr], rows.Cb[:npr]])
            flat[self._dst] = blocks.ravel()[self._src]
            self.fac = fillin.factor_flat(self._symbolic, self._plan, flat)
            return
        Dsym = 0.5 * (A.D + np.swapaxes(A.D, 1, 2))
        Sa = 0.5 * (rows.Ga + rows.Ca)
        Sb = 0.5 * (rows.Gb + rows.Cb)
        cons = [baraff.Constraint(bodies, (Sa[sl], Sb[sl]) if len(bodies) == 2 else (Sb[sl],))
                for sl, bodies in self.primary]
        self.fac = baraff.factor(list(Dsym), cons, self.order)

    def _inverse(self, rhs: np.ndarray) -> np.ndarray:
        """P^-1 rhs ((N,) or (N, c)) with the current factor."""
        if isinstance(self.fac, fillin.LDU):
            return fillin.solve(self.fac, rhs)
        return baraff.solve(self.fac, rhs)

    def factor(self, A: NewtonMatrix) -> None:
        """Factor the bordered matrix Pb (A without the damper couplings K): dense border over the
        tree factor for few auxiliary rows, one sparse LU of the whole of Pb from SPARSE_FROM rows on
        (or as `border` forces)."""
        k = A.rows.count - A.n_primary
        self.unknowns = 6 * len(A.D) + A.rows.count
        sparse = self.border in ("sparse", "superlu") or (self.border == "auto" and k >= SPARSE_FROM)
        if sparse:
            self._factor_sparse(A)
        else:
            self._factor_bordered(A)

    def schur(self, A: NewtonMatrix) -> np.ndarray | None:
        """The dense k x k Schur complement E - C_aux P^-1 G_aux^T of the auxiliary rows (None without
        them), factoring A by the dense border."""
        self._factor_bordered(A)
        return self._schur

    def _factor_bordered(self, A: NewtonMatrix) -> None:
        """P by the tree factor, the auxiliary rows bordered onto it densely: O(nk) + O(k^3)."""
        self._sparse_lu = self._block = None
        self._factor_primary(A)
        rows = A.rows
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
        self._Y = self._inverse(cols)
        self._aux_C = (rows.Ca[aux], rows.Cb[aux], rows.a[aux], rows.b[aux])
        self._schur = A.E.toarray() - self._apply_aux(self._Y)
        # equilibrated LU of the Schur complement (interior-point rows range from s/lam ~ 1e-12 to 1e9)
        row = 1.0 / np.maximum(np.max(np.abs(self._schur), axis=1), 1e-300)
        col = 1.0 / np.maximum(np.max(np.abs(self._schur * row[:, None]), axis=0), 1e-300)
        self._schur_lu = (scipy.linalg.lu_factor(self._schur * row[:, None] * col, check_finite=False), row, col)

    def _factor_sparse(self, A: NewtonMatrix) -> None:
        """Pb assembled sparse (body blocks, every row's force and velocity sides on the bodies it
        touches, E) and equilibrated (rows, then columns), then factored by the block LU of
        contact_ldu.py in an order that follows the bodies' contact graph (C kernel), or by SuperLU when
        that cannot (its kernel not built, a singular pivot; `solve`: defect correction stalls) or `border` is
        "superlu"; `fallback` says why. SuperLU pivots partially (Pb is indefinite and not symmetric: a
        saddle matrix with -s/lam on the pairs' diagonal) with its columns ordered by minimum degree on
        the pattern of Pb + Pb^T; it factors the transpose (Pb's CSR arrays are Pb^T's CSC ones) and
        solves with it transposed."""
        self.fac = None
        self._schur = None
        self._sparse_lu = self._block = None
        M = bordered_matrix(A).tocsr()
        data, indices, indptr = M.data, M.indices, M.indptr
        row = 1.0 / np.maximum(np.maximum.reduceat(np.abs(data), indptr[:-1]), 1e-300)
        data *= np.repeat(row, np.diff(indptr))
        col = np.zeros(M.shape[1])
        np.maximum.at(col, indices, np.abs(data))
        col = 1.0 / np.maximum(col, 1e-300)
        data *= col[indices]
        self._N = M.shape[0]
        self._equilibrated = (M, row, col)
        if self.border == "superlu":
            self._factor_superlu()
            return
        reason = self._factor_block(A, M) if contact_ldu.NATIVE else "the block LU's C kernel is not built"
        if reason is None:
            self._block = (self._pattern, self._block_fac, row, col)
            return
        self._fall_back(reason)

    def _factor_block(self, A: NewtonMatrix, M: scipy.sparse.csr_matrix) -> str | None:
        """contact_ldu's block LU of the equilibrated Pb (its pattern kept while the topology is the
        same); None, or why it cannot factor."""
        rows = A.rows
        waiting = contact_ldu.waiting_rows(len(A.D), M.diagonal())
        key = contact_ldu.key(len(A.D), rows.a, rows.b, A.n_primary, A.E, waiting)
        pattern = self._pattern
        if not contact_ldu.reusable(pattern, key) or not (
                np.array_equal(pattern.csr[0], M.indptr) and np.array_equal(pattern.csr[1], M.indices)):
            pattern = contact_ldu.build(len(A.D), rows.a, rows.b, A.n_primary, A.E.tocsr(), waiting, M.indptr,
                                        M.indices)
            self._pattern = pattern
        if pattern is self._distrusted:
            return "defect correction with the block LU stalled on this contact set"
        try:
            self._block_fac = contact_ldu.factor(pattern, M.data)
        except np.linalg.LinAlgError as err:
            return str(err)
        return None

    def _fall_back(self, reason: str) -> None:
        """SuperLU for the last Pb, saying why (`fallback`, `fallbacks`)."""
        self.fallback = reason
        self.fallbacks += 1
        self._block = None
        self._factor_superlu()

    def _factor_superlu(self) -> None:
        """SuperLU of the last equilibrated Pb (its transpose, columns by minimum degree on Pb + Pb^T)."""
        M, row, col = self._equilibrated
        transposed = scipy.sparse.csc_matrix((M.data, M.indices, M.indptr), shape=M.shape[::-1])
        self._sparse_lu = (scipy.sparse.linalg.splu(transposed, permc_spec=SPARSE_ORDERING), row, col)

    @property
    def factorisation(self) -> str:
        """How the last Pb was factored: "block LU" (contact_ldu), "SuperLU" or "tree" (dense border)."""
        return "block LU" if self._block is not None else "SuperLU" if self._sparse_lu is not None else "tree"

    @property
    def stored_entries(self) -> int:
        """Scalars held by the last sparse factor of Pb (block LDU or SuperLU's L and U; 0 otherwise)."""
        if self._block is not None:
            return self._block[0].stored_entries
        if self._sparse_lu is not None:
            return self._sparse_lu[0].L.nnz + self._sparse_lu[0].U.nnz
        return 0

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
        if self._block is not None:
            pattern, fac, row, col = self._block
            return col * contact_ldu.solve(pattern, fac, row * rhs)
        if self._sparse_lu is not None:
            lu, row, col = self._sparse_lu
            return col * lu.solve(row * rhs, trans="T")
        N = self._N
        y0 = self._inverse(rhs[:N])
        if self._schur is None:
            return y0
        lu, row, col = self._schur_lu
        mu = col * scipy.linalg.lu_solve(lu, row * (rhs[N:] - self._apply_aux(y0)), check_finite=False)
        return np.concatenate([y0 - self._Y @ mu, mu])

    def solve(self, A: NewtonMatrix, rhs: np.ndarray, rtol: float = 1e-8, max_sweeps: int = 40) -> np.ndarray:
        """Solve A u = rhs to relative accuracy rtol (an inexact Newton step: Newton keeps its
        convergence when the linear error is small relative to the residual): defect correction
        preconditioned by the factored primary part, GMRES when that stalls above rounding level."""
        u = self.precondition(rhs)
        if isinstance(self.fac, fillin.LDU) and self._schur is None and not len(A.coupling[0]):
            self.sweeps, self.defect = 1, 0.0  # A is the exactly factored P: nothing to correct
            return u
        scale = max(np.max(np.abs(rhs)), 1e-300)
        best, best_u, noise = np.inf, u, 0.0
        for sweep in range(max_sweeps):
            defect = rhs - A.multiply(u)
            size = np.max(np.abs(defect))
            if size >= best:
                break
            slow = size > SLOW_SWEEP * best
            best, best_u = size, u
            if size <= rtol * scale:
                break
            noise = ROUNDING * np.max(A.multiply(u, absolute=True))
            if slow or size <= noise:  # slow contraction: GMRES does better; rounding: nothing does
                break
            u = u + self.precondition(defect)
        self.sweeps = sweep + 1
        self.defect = best / scale
        if self._block is not None and self.defect > rtol and best > noise:
            # the block LU's static order is not accurate enough for this contact set: SuperLU, which
            # pivots freely, until the pattern changes
            self._distrusted = self._block[0]
            self._fall_back(f"defect correction with the block LU stalled at a defect of {self.defect:.1e} "
                            f"(relative) after {self.sweeps} sweeps")
            return self.solve(A, rhs, rtol, max_sweeps)
        if self.defect > rtol and best > noise:
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

"""Baraff's linear-time block LDL^T of the maximal-coordinate saddle-point matrix, and auxiliary rows.

Owns the sparse linear algebra of seed 002 (§6-8, Appendix A; notes/002.md §2.8, §3.3, §3.6):

    H = [[M, J^T], [J, 0]],   H [v; lam] = [f; g],

with M = blockdiag(M_1..M_n) (SPD body blocks of any size) and J the primary constraint rows, each
constraint acting on one body (anchored to the world) or two, forming a tree over bodies plus world.
`factor` eliminates the nodes of `graph.order_tree` children first, so L has exactly H's block pattern
(no fill-in) and the cost is O(n); `solve` is one forward and one backward sweep, O(n).

Auxiliary rows (loop closures, limits, contacts; any number of bodies each) add
[[M, J^T, A^T], [J, 0, 0], [A, 0, 0]]. `solve_auxiliary` forms the k x k matrix
Q = A Mhat^-1 A^T = sum_nodes W_n^T D_n^-1 W_n with W = L^-1 [A^T; 0] (the symmetric forward-only
form of notes/002.md §3.6, which corrects the paper's sign), solves Q mu = A v0 - g_aux and finishes
with one backward sweep: forward sweeps on k + 1 columns, O(nk), plus the O(k^3) dense k x k solve.

`OPS` counts block products and block inversions so tests can assert the O(n) and O(nk) costs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .graph import TreeOrder, order_tree

OPS: Counter = Counter()  # "product": block matrix products, "inverse": block inversions


@dataclass(frozen=True)
class Constraint:
    """Rows ``sum_b blocks[b] @ v[bodies[b]]`` of a constraint (primary: one or two bodies).

    ``blocks[b]`` has shape ``(rows, dim of body bodies[b])``.
    """

    bodies: tuple[int, ...]
    blocks: tuple[np.ndarray, ...]

    @property
    def rows(self) -> int:
        return self.blocks[0].shape[0]


@dataclass(frozen=True)
class Factor:
    """H = L D L^T stored per node as in seed 002's Appendix A.

    Attributes
    ----------
    masses, constraints
        The factored system, kept for residuals (`multiply`, iterative refinement).
    order : TreeOrder
        Nodes, parents and elimination order.
    dims : tuple of int
        Block size of each node (body dimension or constraint rows).
    dinv : tuple of numpy.ndarray
        Inverse pivot ``D_n^-1`` of each node.
    lt : tuple of numpy.ndarray or None
        ``(L^T)_{n, parent(n)} = D_n^-1 H_{n, parent(n)}``; None at a root.
    """

    masses: tuple[np.ndarray, ...]
    constraints: tuple[Constraint, ...]
    order: TreeOrder
    dims: tuple[int, ...]
    dinv: tuple[np.ndarray, ...]
    lt: tuple[np.ndarray | None, ...]


def _coupling(constraints: list[Constraint], order: TreeOrder, node: int) -> np.ndarray:
    """The block H_{node, parent(node)}: j^T for a body under a constraint, j for a constraint under a body."""
    n = order.n_bodies
    up = int(order.parent[node])
    if order.is_constraint(node):
        con = constraints[node - n]
        return con.blocks[con.bodies.index(up)]
    con = constraints[up - n]
    return con.blocks[con.bodies.index(node)].T


def factor(masses: list[np.ndarray], constraints: list[Constraint], order: TreeOrder | None = None) -> Factor:
    """Factor H = L D L^T blockwise in O(n) (seed 002's `factor`, reconstructed in notes/002.md §2.8).

    Parameters
    ----------
    masses : list of numpy.ndarray
        SPD mass block of each body.
    constraints : list of Constraint
        Primary constraints; a tree over the bodies and the world.
    order : TreeOrder, optional
        Precomputed ordering of the same topology (built when omitted).

    Raises
    ------
    numpy.linalg.LinAlgError
        A singular pivot, naming the node: redundant rows, or a rank-deficient block on the child side.
    """
    n = len(masses)
    if order is None:
        order = order_tree(n, [c.bodies for c in constraints])
    dims = tuple(m.shape[0] for m in masses) + tuple(c.rows for c in constraints)
    dinv: list[np.ndarray | None] = [None] * order.n_nodes
    lt: list[np.ndarray | None] = [None] * order.n_nodes
    coupling: list[np.ndarray | None] = [None] * order.n_nodes
    for node in order.forward:
        pivot = np.array(masses[node], dtype=float) if node < n else np.zeros((dims[node], dims[node]))
        for child in order.children[node]:
            pivot -= coupling[child].T @ lt[child]
            OPS["product"] += 1
        try:
            dinv[node] = np.linalg.inv(pivot)
        except np.linalg.LinAlgError as exc:
            what = f"constraint {node - n}" if node >= n else f"body {node}"
            raise np.linalg.LinAlgError(
                f"{what}: singular pivot in the tree factorisation (redundant constraint rows, or a "
                "rank-deficient Jacobian block on the child side)") from exc
        OPS["inverse"] += 1
        if order.parent[node] >= 0:
            coupling[node] = _coupling(constraints, order, node)
            lt[node] = dinv[node] @ coupling[node]
            OPS["product"] += 1
    return Factor(tuple(masses), tuple(constraints), order, dims, tuple(dinv), tuple(lt))


def _split(fac: Factor, rhs: np.ndarray) -> list[np.ndarray]:
    """Per-node pieces of a stacked right-hand side (bodies then constraints, in index order)."""
    offsets = np.concatenate([[0], np.cumsum(fac.dims)])
    return [rhs[offsets[i]:offsets[i + 1]].astype(float) for i in range(len(fac.dims))]


def _forward(fac: Factor, pieces: list[np.ndarray]) -> list[np.ndarray]:
    """Solve L w = z in place on the per-node pieces (children before parents)."""
    for node in fac.order.forward:
        for child in fac.order.children[node]:
            pieces[node] -= fac.lt[child].T @ pieces[child]
            OPS["product"] += 1
    return pieces


def _backward(fac: Factor, pieces: list[np.ndarray]) -> np.ndarray:
    """Solve D L^T x = w in place on the per-node pieces (parents before children); return x stacked."""
    parent = fac.order.parent
    for node in fac.order.backward:
        pieces[node] = fac.dinv[node] @ pieces[node]
        OPS["product"] += 1
        if parent[node] >= 0:
            pieces[node] -= fac.lt[node] @ pieces[parent[node]]
            OPS["product"] += 1
    return np.concatenate(pieces)


def multiply(fac: Factor, x: np.ndarray) -> np.ndarray:
    """H x in O(n), x stacked as in `solve`."""
    pieces = _split(fac, x)
    out = [np.zeros_like(p) for p in pieces]
    n = len(fac.masses)
    for body, mass in enumerate(fac.masses):
        out[body] += mass @ pieces[body]
    for i, con in enumerate(fac.constraints):
        for body, block in zip(con.bodies, con.blocks):
            out[body] += block.T @ pieces[n + i]
            out[n + i] += block @ pieces[body]
    return np.concatenate(out)


def solve(fac: Factor, rhs: np.ndarray, refine: int = 0) -> np.ndarray:
    """Solve H x = rhs in O(n).

    The elimination order is fixed by the tree (no pivoting), so a nearly rank-deficient block on a
    constraint's child side gives an ill-conditioned pivot and a backward error far above machine
    precision even for a well-conditioned H; each of the ``refine`` steps of iterative refinement
    (one `multiply` and one more sweep pair, O(n)) removes most of it.

    Parameters
    ----------
    fac : Factor
        From `factor`.
    rhs : numpy.ndarray
        ``(N,)`` or ``(N, k)``, rows stacked as body 0..n-1 then constraint 0..m-1.

    Returns
    -------
    numpy.ndarray
        ``[v; lam]`` in the same stacking and shape.
    """
    x = _backward(fac, _forward(fac, _split(fac, rhs)))
    for _ in range(refine):
        x += _backward(fac, _forward(fac, _split(fac, rhs - multiply(fac, x))))
    return x


def _aux_columns(fac: Factor, auxiliary: list[Constraint]) -> list[np.ndarray]:
    """Per-node pieces of [A^T; 0], (dim, k) each."""
    k = sum(a.rows for a in auxiliary)
    pieces = [np.zeros((d, k)) for d in fac.dims]
    row = 0
    for aux in auxiliary:
        for body, block in zip(aux.bodies, aux.blocks):
            pieces[body][:, row:row + aux.rows] += block.T
        row += aux.rows
    return pieces


def solve_auxiliary(fac: Factor, auxiliary: list[Constraint], rhs: np.ndarray,
                    rhs_auxiliary: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve the primary system bordered by k auxiliary equality rows, in O(nk) + O(k^3).

    Solves [[M, J^T, A^T], [J, 0, 0], [A, 0, 0]] [v; lam; mu] = [f; g; g_aux] by constraint
    anticipation (seed 002 §8): Q = A Mhat^-1 A^T from one forward sweep on the k columns of
    [A^T; 0], then Q mu = A v0 - g_aux with v0 the primary-only solution, then one backward sweep.

    Parameters
    ----------
    fac : Factor
        Factorisation of the primary system.
    auxiliary : list of Constraint
        Auxiliary constraints, each on any bodies (the world omitted); k rows in total.
    rhs : numpy.ndarray
        ``(N,)`` primary right-hand side ``[f; g]``.
    rhs_auxiliary : numpy.ndarray
        ``(k,)`` auxiliary right-hand side.

    Returns
    -------
    x : numpy.ndarray
        ``[v; lam]``.
    mu : numpy.ndarray
        ``(k,)`` auxiliary multipliers.
    """
    columns = _forward(fac, _aux_columns(fac, auxiliary))
    w_rhs = _forward(fac, _split(fac, rhs))
    k = len(rhs_auxiliary)
    q_matrix = np.zeros((k, k))
    a_v0 = np.zeros(k)
    for node in range(len(fac.dims)):
        scaled = fac.dinv[node] @ columns[node]
        q_matrix += columns[node].T @ scaled
        a_v0 += scaled.T @ w_rhs[node]
        OPS["product"] += 3
    mu = np.linalg.solve(q_matrix, a_v0 - rhs_auxiliary)
    for node in range(len(fac.dims)):
        w_rhs[node] -= columns[node] @ mu
    return _backward(fac, w_rhs), mu

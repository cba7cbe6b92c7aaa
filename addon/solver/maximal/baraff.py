"""Baraff's linear-time block LDL^T of the maximal-coordinate saddle-point matrix, and auxiliary rows.

Owns the sparse linear algebra of seed 002 (§6-8, Appendix A; notes/002.md §2.8, §3.3):

    H = [[M, J^T], [J, 0]],   H [v; lam] = [f; g],

with M = blockdiag(M_1..M_n) (SPD body blocks of any size) and J the primary constraint rows, each
constraint acting on one body (anchored to the world) or two, forming a tree over bodies plus world.
`factor` eliminates the nodes of `graph.order_tree` children first, so L has exactly H's block pattern
(no fill-in) and the cost is O(n); `solve` is one forward and one backward sweep, O(n).

Auxiliary rows (loop closures, limits, contacts; any number of bodies each) add
[[M, J^T, A^T], [J, 0, 0], [A, 0, 0]]. `solve_auxiliary` forms the k x k matrix
Q = A Mhat^-1 A^T from one `solve` on the k columns of [A^T; 0] (paper §8.2 step 3, O(nk) since each
auxiliary row touches few bodies), solves Q mu = A v0 - g_aux (O(k^3)) and combines the columns.

`OPS` counts block products, their multiply-adds and block inversions, so tests can assert the O(n)
and O(nk) costs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .graph import TreeOrder, order_tree

OPS: Counter = Counter()  # "product": block products, "flops": their multiply-adds, "inverse": block inversions


def _mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b, counted in `OPS`."""
    OPS["product"] += 1
    OPS["flops"] += a.shape[0] * a.shape[1] * (b.shape[1] if b.ndim == 2 else 1)
    return a @ b


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
    ValueError
        A Jacobian block whose shape does not match its constraint's rows and its body's dimension.
    numpy.linalg.LinAlgError
        A singular pivot, naming the node: redundant rows, or a rank-deficient block on the child side.
    """
    n = len(masses)
    if order is None:
        order = order_tree(n, [c.bodies for c in constraints])
    for i, con in enumerate(constraints):
        for body, block in zip(con.bodies, con.blocks, strict=True):
            if block.shape != (con.rows, masses[body].shape[0]):
                raise ValueError(f"constraint {i}: block on body {body} has shape {block.shape}, "
                                 f"expected ({con.rows}, {masses[body].shape[0]})")
    dims = tuple(m.shape[0] for m in masses) + tuple(c.rows for c in constraints)
    dinv: list[np.ndarray | None] = [None] * order.n_nodes
    lt: list[np.ndarray | None] = [None] * order.n_nodes
    coupling: list[np.ndarray | None] = [None] * order.n_nodes
    for node in order.forward:
        pivot = np.array(masses[node], dtype=float) if node < n else np.zeros((dims[node], dims[node]))
        for child in order.children[node]:
            pivot -= _mul(coupling[child].T, lt[child])
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
            lt[node] = _mul(dinv[node], coupling[node])
    return Factor(tuple(masses), tuple(constraints), order, dims, tuple(dinv), tuple(lt))


def _split(fac: Factor, rhs: np.ndarray) -> list[np.ndarray]:
    """Per-node pieces of a stacked right-hand side (bodies then constraints, in index order)."""
    offsets = np.concatenate([[0], np.cumsum(fac.dims)])
    return [rhs[offsets[i]:offsets[i + 1]].astype(float) for i in range(len(fac.dims))]


def _forward(fac: Factor, pieces: list[np.ndarray]) -> list[np.ndarray]:
    """Solve L w = z in place on the per-node pieces (children before parents)."""
    for node in fac.order.forward:
        for child in fac.order.children[node]:
            pieces[node] -= _mul(fac.lt[child].T, pieces[child])
    return pieces


def _backward(fac: Factor, pieces: list[np.ndarray]) -> np.ndarray:
    """Solve D L^T x = w in place on the per-node pieces (parents before children); return x stacked."""
    parent = fac.order.parent
    for node in fac.order.backward:
        pieces[node] = _mul(fac.dinv[node], pieces[node])
        if parent[node] >= 0:
            pieces[node] -= _mul(fac.lt[node], pieces[parent[node]])
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


def _apply_rows(fac: Factor, auxiliary: list[Constraint], x: np.ndarray) -> np.ndarray:
    """A x for stacked ``x`` (``(N,)`` or ``(N, c)``), touching only the auxiliary rows' bodies."""
    offsets = np.concatenate([[0], np.cumsum(fac.dims)])
    out = []
    for aux in auxiliary:
        out.append(sum(_mul(block, x[offsets[body]:offsets[body + 1]]) for body, block in zip(aux.bodies, aux.blocks)))
    return np.concatenate(out)


def solve_auxiliary(fac: Factor, auxiliary: list[Constraint], rhs: np.ndarray,
                    rhs_auxiliary: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve the primary system bordered by k auxiliary equality rows, in O(nk) + O(k^3).

    Solves [[M, J^T, A^T], [J, 0, 0], [A, 0, 0]] [v; lam; mu] = [f; g; g_aux] by constraint
    anticipation (seed 002 §8.2): one multi-column `solve` gives x0 = H^-1 [f; g] and the anticipated
    responses V = H^-1 [A^T; 0] (k columns, O(nk)); Q = A V_body (the workless Jᵃ Mhat^-1 Jᵃᵀ) costs
    O(k^2) block rows since A is sparse; Q mu = A v0 - g_aux is the O(k^3) dense step; x = x0 - V mu.

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

    Raises
    ------
    numpy.linalg.LinAlgError
        Redundant auxiliary rows (singular Q).
    """
    k = len(rhs_auxiliary)
    offsets = np.concatenate([[0], np.cumsum(fac.dims)])
    stacked = np.zeros((offsets[-1], k + 1))
    stacked[:, 0] = rhs
    row = 0
    for aux in auxiliary:
        for body, block in zip(aux.bodies, aux.blocks):
            stacked[offsets[body]:offsets[body + 1], 1 + row:1 + row + aux.rows] += block.T
        row += aux.rows
    solved = solve(fac, stacked)
    x0, responses = solved[:, 0], solved[:, 1:]
    q_matrix = _apply_rows(fac, auxiliary, responses)
    try:
        mu = np.linalg.solve((q_matrix + q_matrix.T) / 2, _apply_rows(fac, auxiliary, x0) - rhs_auxiliary)
    except np.linalg.LinAlgError as exc:
        raise np.linalg.LinAlgError(
            f"the {k} auxiliary rows are redundant (singular {k} x {k} matrix A Mhat^-1 A^T)") from exc
    return x0 - responses @ mu, mu

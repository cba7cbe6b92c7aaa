"""Baraff's linear-time block LDL^T of the maximal-coordinate saddle-point matrix, and auxiliary rows.

Owns the sparse linear algebra of seed 002 (§6-8, Appendix A; docs/seeds.md 002-A):

    H = [[M, J^T], [J, 0]],   H [v; lam] = [f; g],

with M = blockdiag(M_1..M_n) (SPD body blocks of any size) and J the primary constraint rows, each
constraint acting on one body (anchored to the world) or two, forming a tree over bodies plus world.
`factor` eliminates the nodes of `graph.order_tree` children first, so L has exactly H's block pattern
(no fill-in) and the cost is O(n); `solve` is one forward and one backward sweep, O(n).

Auxiliary rows (loop closures, limits, contacts; any number of bodies each) add
[[M, J^T, A^T], [J, 0, 0], [A, 0, 0]]. `solve_auxiliary` forms the k x k matrix
Q = A Mhat^-1 A^T from one `solve` on the k columns of [A^T; 0] (paper §8.2 step 3, O(nk) since each
auxiliary row touches few bodies), solves Q mu = A v0 - g_aux (O(k^3)) and combines the columns.

Both sweeps run in C (native/baraff.c via native/baraff_binding.py) when the kernels are built, on
flat arrays described by a cached `Layout`; the numpy twins (`native=False`) are the fallback and the
test reference, and count block products, their multiply-adds and block inversions in `OPS`, so
tests can assert the O(n) and O(nk) costs. Callers that build their Jacobians vectorised can skip the
per-block lists with `make_layout` + `factor_flat`; Newton loops pass `reuse` to skip fresh pages.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..native import baraff_binding as _native
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
class Layout:
    """Where each node's blocks live in flat arrays, for one topology and one set of block shapes.

    Nodes are numbered as in `graph.TreeOrder` (bodies, then constraints). The flat inputs of
    `factor_flat`: ``mass`` holds every body's ``dim x dim`` mass block, row-major, in body order
    (body b at ``sq_offset[b]``); ``edges`` holds every constraint block, row-major ``rows x dim(body)``,
    constraint by constraint, each constraint's blocks in its ``bodies`` order (constraint i starts at
    ``block_start[i]``). Per node: ``sq_offset`` locates its inverse pivot, ``lt_offset`` its
    ``dim x dim(parent)`` block of L^T, ``row_offset`` its first right-hand-side row (``row_offset[-1]``
    = N), and ``edge_offset`` / ``edge_transposed`` its coupling H_{node,parent} in ``edges`` (a body
    under its constraint reads the constraint's block on it transposed). ``max_dim``: the largest block.
    """

    order: TreeOrder
    dims: tuple[int, ...]
    mass_shapes: list[tuple[int, ...]]
    block_shapes: list[tuple[int, ...]]
    block_start: np.ndarray
    forward: np.ndarray
    parent: np.ndarray
    dim: np.ndarray
    sq_offset: np.ndarray
    lt_offset: np.ndarray
    row_offset: np.ndarray
    has_mass: np.ndarray
    edge_offset: np.ndarray
    edge_transposed: np.ndarray
    n_mass: int
    n_edges: int
    n_sq: int
    n_lt: int
    max_dim: int


_LAYOUTS: dict = {}


@lru_cache(maxsize=32)
def _cached_order(n_bodies: int, bodies: tuple[tuple[int, ...], ...]) -> TreeOrder:
    return order_tree(n_bodies, list(bodies))


def make_layout(body_dims: list[int], constraint_bodies: list[tuple[int, ...]], constraint_rows: list[int],
                order: TreeOrder | None = None) -> Layout:
    """The flat layout of a tree system (bodies of `body_dims`, constraints on one or two bodies each).

    Raises `graph.TopologyError` when the constraints do not form a tree over the bodies and the world.
    """
    n = len(body_dims)
    if order is None:
        order = _cached_order(n, tuple(tuple(b) for b in constraint_bodies))
    dims = tuple(int(d) for d in body_dims) + tuple(int(r) for r in constraint_rows)
    dim = np.array(dims, dtype=np.int64)
    parent = np.ascontiguousarray(order.parent, dtype=np.int64)
    sq_offset = np.concatenate([[0], np.cumsum(dim * dim)]).astype(np.int64)
    row_offset = np.concatenate([[0], np.cumsum(dim)]).astype(np.int64)
    lt_offset = np.concatenate([[0], np.cumsum(np.where(parent >= 0, dim * dim[np.maximum(parent, 0)], 0))])
    sizes = [[r * dims[b] for b in bodies] for bodies, r in zip(constraint_bodies, constraint_rows)]
    block_start = np.concatenate([[0], np.cumsum([sum(s) for s in sizes])]).astype(np.int64)
    edge_offset = np.zeros(len(dims), dtype=np.int64)
    edge_transposed = np.zeros(len(dims), dtype=np.int64)
    for node, up in enumerate(parent.tolist()):
        if up >= 0:
            con, body = (node - n, up) if node >= n else (up - n, node)
            which = list(constraint_bodies[con]).index(body)
            edge_offset[node] = block_start[con] + sum(sizes[con][:which])
            edge_transposed[node] = node < n
    return Layout(order, dims, [(d, d) for d in dims[:n]],
                  [(r, dims[b]) for bodies, r in zip(constraint_bodies, constraint_rows) for b in bodies],
                  block_start[:-1].copy(), np.array(order.forward, dtype=np.int64), parent, dim,
                  sq_offset[:-1].copy(), lt_offset[:-1].astype(np.int64), row_offset,
                  (np.arange(len(dims)) < n).astype(np.int64), edge_offset, edge_transposed,
                  int(sq_offset[n]), int(block_start[-1]), int(sq_offset[-1]), int(lt_offset[-1]),
                  max(dims, default=0))


def _layout_of(masses: list[np.ndarray], constraints: list[Constraint], order: TreeOrder | None) -> Layout:
    """The cached layout of this system, rebuilt when the topology or a block shape changes."""
    bodies = tuple(c.bodies for c in constraints)
    stacked = isinstance(masses, np.ndarray)  # (n, d, d): every body d-dimensional
    mass_shapes = [masses.shape[1:]] * len(masses) if stacked else [m.shape for m in masses]
    block_shapes = [b.shape for c in constraints for b in c.blocks]
    key = (len(masses), bodies, None if order is None else id(order))
    lay = _LAYOUTS.get(key)
    if lay is not None and lay.block_shapes == block_shapes and lay.mass_shapes == mass_shapes \
            and (order is None or lay.order is order):
        return lay
    for body, shape in enumerate(mass_shapes):
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"body {body}: mass block has shape {shape}, expected a square matrix")
    for i, con in enumerate(constraints):
        if len(con.bodies) != len(con.blocks):
            raise ValueError(f"constraint {i}: {len(con.bodies)} bodies but {len(con.blocks)} blocks")
        for body, block in zip(con.bodies, con.blocks):
            if not 0 <= body < len(masses):
                break  # order_tree names it
            if block.shape != (con.rows, mass_shapes[body][0]):
                raise ValueError(f"constraint {i}: block on body {body} has shape {block.shape}, "
                                 f"expected ({con.rows}, {mass_shapes[body][0]})")
    lay = make_layout([s[0] for s in mass_shapes], list(bodies), [c.rows for c in constraints], order)
    if len(_LAYOUTS) >= 32:
        _LAYOUTS.clear()
    _LAYOUTS[key] = lay
    return lay


@dataclass(frozen=True)
class Factor:
    """H = L D L^T stored per node as in seed 002's Appendix A, in the flat arrays of a `Layout`.

    Attributes
    ----------
    layout : Layout
        Block locations; ``layout.order`` holds nodes, parents and the elimination order.
    mass, edges : numpy.ndarray
        The factored system's flat mass and constraint blocks (for `multiply`, refinement).
    dinv_flat, lt_flat : numpy.ndarray
        Inverse pivots D_n^-1 and blocks (L^T)_{n,parent(n)} = D_n^-1 H_{n,parent(n)} (see `dinv`, `lt`).
    native : bool
        The C kernels made this factor, and `solve` uses them too.
    """

    layout: Layout
    mass: np.ndarray
    edges: np.ndarray
    dinv_flat: np.ndarray
    lt_flat: np.ndarray
    native: bool

    @property
    def order(self) -> TreeOrder:
        return self.layout.order

    @property
    def dims(self) -> tuple[int, ...]:
        """Block size of each node (body dimension or constraint rows)."""
        return self.layout.dims

    @property
    def dinv(self) -> tuple[np.ndarray, ...]:
        """Inverse pivot of each node (views)."""
        lay = self.layout
        return tuple(self.dinv_flat[o:o + d * d].reshape(d, d) for o, d in zip(lay.sq_offset, lay.dims))

    @property
    def lt(self) -> tuple[np.ndarray | None, ...]:
        """(L^T)_{n,parent(n)} of each node (views); None at a root."""
        lay = self.layout
        return tuple(None if up < 0 else self.lt_flat[o:o + d * lay.dims[up]].reshape(d, lay.dims[up])
                     for o, d, up in zip(lay.lt_offset, lay.dims, lay.parent.tolist()))

    def coupling(self, node: int) -> np.ndarray:
        """The block H_{node,parent(node)} (a view)."""
        lay = self.layout
        d, dp, o = lay.dims[node], lay.dims[lay.parent[node]], lay.edge_offset[node]
        block = self.edges[o:o + d * dp]
        return block.reshape(dp, d).T if lay.edge_transposed[node] else block.reshape(d, dp)


def _singular(lay: Layout, node: int) -> np.linalg.LinAlgError:
    n = lay.order.n_bodies
    what = f"constraint {node - n}" if node >= n else f"body {node}"
    return np.linalg.LinAlgError(
        f"{what}: singular pivot in the tree factorisation (redundant constraint rows, or a "
        "rank-deficient Jacobian block on the child side)")


def _factor_numpy(fac: Factor) -> None:
    """The numpy twin of symplex_baraff_factor, filling fac's flat arrays (counted in `OPS`)."""
    lay = fac.layout
    pivots = fac.dinv
    for node, pivot in enumerate(pivots):
        o = lay.sq_offset[node]
        pivot[...] = fac.mass[o:o + pivot.size].reshape(pivot.shape) if lay.has_mass[node] else 0.0
    lts = fac.lt
    for node in lay.order.forward:
        try:
            pivots[node][...] = np.linalg.inv(pivots[node])
        except np.linalg.LinAlgError as exc:
            raise _singular(lay, node) from exc
        OPS["inverse"] += 1
        up = lay.parent[node]
        if up >= 0:
            coupling = fac.coupling(node)
            lts[node][...] = _mul(pivots[node], coupling)
            pivots[up][...] -= _mul(coupling.T, lts[node])


def factor_flat(layout: Layout, mass: np.ndarray, edges: np.ndarray, native: bool | None = None,
                reuse: Factor | None = None) -> Factor:
    """`factor` on flat arrays laid out by `layout` (no per-block Python work when native).

    Parameters
    ----------
    layout : Layout
        From `make_layout` (keep it while the topology and block sizes stay the same).
    mass, edges : numpy.ndarray
        ``(layout.n_mass,)`` and ``(layout.n_edges,)`` float64, as described in `Layout`.
    native, reuse
        As in `factor`.
    """
    mass = np.ascontiguousarray(mass, dtype=float).reshape(-1)
    edges = np.ascontiguousarray(edges, dtype=float).reshape(-1)
    if mass.size != layout.n_mass or edges.size != layout.n_edges:
        raise ValueError(f"flat system has {mass.size} mass and {edges.size} constraint-block entries, "
                         f"the layout {layout.n_mass} and {layout.n_edges}")
    use_c = (_native.LIB is not None and layout.max_dim <= _native.MAX_DIM) if native is None \
        else native
    if reuse is not None and reuse.layout is layout:
        dinv, lt = reuse.dinv_flat, reuse.lt_flat
    else:  # fresh pages: about as slow as the C factor itself for 1000 bodies, hence `reuse`
        dinv, lt = np.empty(layout.n_sq), np.empty(layout.n_lt)
    fac = Factor(layout, mass, edges, dinv, lt, bool(use_c))
    if use_c:
        status = _native.factor(len(layout.dims), layout.forward, layout.parent, layout.dim, layout.sq_offset,
                                layout.lt_offset, layout.has_mass, mass, layout.edge_offset,
                                layout.edge_transposed, edges, fac.dinv_flat, fac.lt_flat)
        if status == -2:
            raise ValueError(f"a block larger than {_native.MAX_DIM}: the C kernel cannot factor it")
        if status >= 0:
            raise _singular(layout, int(status))
    else:
        _factor_numpy(fac)
    return fac


def factor(masses: list[np.ndarray] | np.ndarray, constraints: list[Constraint], order: TreeOrder | None = None,
           native: bool | None = None, reuse: Factor | None = None) -> Factor:
    """Factor H = L D L^T blockwise in O(n) (seed 002's `factor`, rebuilt as docs/seeds.md 002-A says).

    Parameters
    ----------
    masses : list of numpy.ndarray, or numpy.ndarray
        SPD mass block of each body; an ``(n, d, d)`` array skips the per-body list work.
    constraints : list of Constraint
        Primary constraints; a tree over the bodies and the world.
    order : TreeOrder, optional
        Precomputed ordering of the same topology (built, and cached per topology, when omitted).
    native : bool, optional
        Use the C kernel (baraff.c); default: when it is built. False: the numpy twin (counts `OPS`).
    reuse : Factor, optional
        A factor of the same topology that is no longer needed (the previous Newton iterate's): its
        arrays are overwritten instead of allocating new ones, and it must not be used afterwards.

    Raises
    ------
    ValueError
        A Jacobian block whose shape does not match its constraint's rows and its body's dimension.
    numpy.linalg.LinAlgError
        A singular pivot, naming the node: redundant rows, or a rank-deficient block on the child side.
    """
    lay = _layout_of(masses, constraints, order)
    blocks = [b for c in constraints for b in c.blocks]
    mass = masses.reshape(-1) if isinstance(masses, np.ndarray) else _flatten(masses)
    return factor_flat(lay, mass, _flatten(blocks), native, reuse)


def _flatten(blocks: list[np.ndarray]) -> np.ndarray:
    """The row-major entries of `blocks`, concatenated (one numpy call when the widths agree)."""
    if not blocks:
        return np.zeros(0)
    try:
        return np.concatenate(blocks, dtype=float).reshape(-1)
    except ValueError:
        return np.concatenate([b.reshape(-1) for b in blocks], dtype=float)


def _solve_numpy(fac: Factor, x: np.ndarray) -> None:
    """The numpy twin of symplex_baraff_solve: in place on x (N, ncol), counted in `OPS`."""
    lay = fac.layout
    pieces = [x[a:b] for a, b in zip(lay.row_offset[:-1], lay.row_offset[1:])]
    dinv, lt, parent = fac.dinv, fac.lt, lay.parent
    for node in lay.order.forward:  # L w = z, children first
        if parent[node] >= 0:
            pieces[parent[node]] -= _mul(lt[node].T, pieces[node])
    for node in reversed(lay.order.forward):  # D L^T x = w, parents first
        pieces[node][...] = _mul(dinv[node], pieces[node])
        if parent[node] >= 0:
            pieces[node] -= _mul(lt[node], pieces[parent[node]])


def _sweep(fac: Factor, rhs: np.ndarray) -> np.ndarray:
    """H^-1 rhs by one forward and one backward sweep, rhs (N, ncol)."""
    x = np.array(rhs, dtype=float, order="C")
    if fac.native:
        lay = fac.layout
        _native.solve(len(lay.dims), lay.forward, lay.parent, lay.dim, lay.sq_offset, lay.lt_offset,
                      lay.row_offset, fac.dinv_flat, fac.lt_flat, x, np.empty(lay.max_dim * x.shape[1]))
    else:
        _solve_numpy(fac, x)
    return x


def multiply(fac: Factor, x: np.ndarray) -> np.ndarray:
    """H x in O(n), x stacked as in `solve` (``(N,)`` or ``(N, k)``)."""
    lay = fac.layout
    rows, n = lay.row_offset, lay.order.n_bodies
    x = np.asarray(x, dtype=float)
    if fac.native:
        columns = np.ascontiguousarray(x.reshape(len(x), -1))
        out = np.empty(columns.shape)
        _native.multiply(len(lay.dims), lay.parent, lay.dim, lay.sq_offset, lay.row_offset, lay.has_mass, fac.mass,
                         lay.edge_offset, lay.edge_transposed, fac.edges, columns, out)
        return out.reshape(x.shape)
    out = np.zeros(x.shape)
    for body, d in enumerate(lay.dims[:n]):
        o = lay.sq_offset[body]
        out[rows[body]:rows[body + 1]] = fac.mass[o:o + d * d].reshape(d, d) @ x[rows[body]:rows[body + 1]]
    for node, up in enumerate(lay.parent.tolist()):
        if up >= 0:
            block = fac.coupling(node)
            out[rows[node]:rows[node + 1]] += block @ x[rows[up]:rows[up + 1]]
            out[rows[up]:rows[up + 1]] += block.T @ x[rows[node]:rows[node + 1]]
    return out


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
    rhs = np.asarray(rhs, dtype=float)
    if rhs.shape[0] != fac.layout.row_offset[-1]:
        raise ValueError(f"right-hand side has {rhs.shape[0]} rows, the system {fac.layout.row_offset[-1]}")
    column = rhs.ndim == 1
    x = _sweep(fac, rhs.reshape(len(rhs), -1))
    for _ in range(refine):
        x += _sweep(fac, rhs.reshape(len(rhs), -1) - multiply(fac, x))
    return x[:, 0] if column else x


def _apply_rows(fac: Factor, auxiliary: list[Constraint], x: np.ndarray) -> np.ndarray:
    """A x for stacked ``x`` (``(N,)`` or ``(N, c)``), touching only the auxiliary rows' bodies."""
    offsets = fac.layout.row_offset
    out = []
    for aux in auxiliary:
        out.append(sum(_mul(block, x[offsets[body]:offsets[body + 1]]) for body, block in zip(aux.bodies, aux.blocks)))
    return np.concatenate(out)


def solve_auxiliary(fac: Factor, auxiliary: list[Constraint], rhs: np.ndarray,
                    rhs_auxiliary: np.ndarray, redundant: bool = False,
                    refine: int = 0) -> tuple[np.ndarray, np.ndarray]:
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
    redundant : bool
        Allow redundant auxiliary rows (a planar loop closed by a full 3-D joint): mu is the
        minimum-norm least-squares solution of Q mu = A v0 - g_aux (exact when the rows agree).
    refine : int
        Iterative refinement steps of the primary solves (`solve`).

    Returns
    -------
    x : numpy.ndarray
        ``[v; lam]``.
    mu : numpy.ndarray
        ``(k,)`` auxiliary multipliers.

    Raises
    ------
    numpy.linalg.LinAlgError
        Redundant auxiliary rows (singular Q) when not `redundant`.
    """
    k = len(rhs_auxiliary)
    offsets = fac.layout.row_offset
    stacked = np.zeros((offsets[-1], k + 1))
    stacked[:, 0] = rhs
    row = 0
    for aux in auxiliary:
        for body, block in zip(aux.bodies, aux.blocks):
            stacked[offsets[body]:offsets[body + 1], 1 + row:1 + row + aux.rows] += block.T
        row += aux.rows
    solved = solve(fac, stacked, refine)
    x0, responses = solved[:, 0], solved[:, 1:]
    q_matrix = _apply_rows(fac, auxiliary, responses)
    q_matrix = (q_matrix + q_matrix.T) / 2
    if redundant:
        mu = np.linalg.lstsq(q_matrix, _apply_rows(fac, auxiliary, x0) - rhs_auxiliary, rcond=1e-12)[0]
        return x0 - responses @ mu, mu
    try:
        mu = np.linalg.solve(q_matrix, _apply_rows(fac, auxiliary, x0) - rhs_auxiliary)
    except np.linalg.LinAlgError as exc:
        raise np.linalg.LinAlgError(
            f"the {k} auxiliary rows are redundant (singular {k} x {k} matrix A Mhat^-1 A^T)") from exc
    return x0 - responses @ mu, mu

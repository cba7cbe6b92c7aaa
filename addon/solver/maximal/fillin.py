"""Reduced-fill-in block LDU for block matrices whose graph has cycles (seed 003 §3.3, Alg. 3-4).

Owns ordering, symbolic and numeric factorisation of a block matrix with a symmetric block pattern
(values may be unsymmetric) given as a graph: one node per block row, an edge where an off-diagonal
block is nonzero. A tree eliminated leaves first has no fill-in (baraff.py); a cycle's nodes are never
leaves, so eliminating one links all its later neighbours (fill). This module:

* `order_nodes`: an elimination order. "dfs" is the seed's depth-first post-order (leaves attached
  to a cycle first); "min-degree" greedily eliminates a node of least current degree (usually less
  fill on nets and crystals). Nodes may wait for others (`after`): in a saddle-point matrix a
  constraint follows the body below it in a spanning tree, a loop-closing constraint all its bodies,
  so no pivot is zero or nearly singular (docs/seeds.md 002-B).
* `symbolic`: the filled pattern once per topology: eliminating v joins all its not yet eliminated
  neighbours (the general form of Alg. 3's loop-opener fill).
* `factor` / `solve`: the numeric block LDU on that pattern, and the forward, diagonal and backward
  sweeps (Alg. 4); equal to a dense solve. In C (native/baraff.c, symplex_fillin_*) on the flat layout
  of `plan` when the kernels are built; the dict-of-blocks numpy code is the fallback and reference.
* `saddle`: the pattern and blocks of Baraff's H = [[M, J^T], [J, 0]] with loops (constraints of
  `baraff.Constraint`, any number of bodies each), so a mechanism with many loops (k growing with n)
  needs no auxiliary rows.
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass

import numpy as np

from ..native import baraff_binding as _native
from .baraff import Constraint
from .graph import order_tree, split_loops

NATIVE = _native.LIB is not None  # the C kernel is built: `factor` uses it, `factor_flat` needs it


@dataclass(frozen=True)
class Symbolic:
    """The filled block pattern of one topology and elimination order.

    Attributes
    ----------
    dims : tuple of int
        Block size of each node.
    order : tuple of int
        Elimination order (every node once).
    upper : tuple of tuple of int
        For each node v, its neighbours in the filled graph eliminated after v, in elimination order.
    fill : int
        Off-diagonal block pairs {i, j} in the filled pattern that are not in the matrix.
    """

    dims: tuple[int, ...]
    order: tuple[int, ...]
    upper: tuple[tuple[int, ...], ...]
    fill: int

    @property
    def stored_entries(self) -> int:
        """Scalars stored by the factor: pivots and the L and U blocks (fill included)."""
        d = self.dims
        return sum(d[v] * d[v] + 2 * sum(d[v] * d[p] for p in up) for v, up in enumerate(self.upper))

    @property
    def flops(self) -> int:
        """Multiply-adds of `factor`: per node v of d unknowns whose later neighbours hold w, an inversion
        (d^3), its L and U blocks (2 d^2 w) and the Schur updates of every later pair (d w^2)."""
        total = 0
        for d, up in zip(self.dims, self.upper):
            w = sum(self.dims[p] for p in up)
            total += d ** 3 + 2 * d * d * w + d * w * w
        return total


def _adjacency(n_nodes: int, edges: list[tuple[int, int]]) -> list[set[int]]:
    adjacency: list[set[int]] = [set() for _ in range(n_nodes)]
    for a, b in edges:
        if a == b or not (0 <= a < n_nodes and 0 <= b < n_nodes):
            raise ValueError(f"edge ({a}, {b}): nodes must be distinct and in 0..{n_nodes - 1}")
        adjacency[a].add(b)
        adjacency[b].add(a)
    return adjacency


def order_nodes(n_nodes: int, edges: list[tuple[int, int]], method: str = "min-degree",
                after: list[tuple[int, ...]] | None = None, root: int | None = None) -> tuple[int, ...]:
    """An elimination order of the graph's nodes.

    Parameters
    ----------
    method : str
        "dfs": iterative depth-first post-order from `root` (default node 0), each further component
        from its lowest node; "min-degree": greedy minimum degree on the elimination graph, ties to the
        lowest node.
    after : list of tuple of int, optional
        ``after[v]``: nodes that must be eliminated before v. Saddle-point matrices need it (`saddle`):
        a constraint's pivot is zero until the bodies below it are eliminated (docs/seeds.md 002-B),
        and a loop-closing constraint eliminated before all its bodies gives a pivot that is
        singular or nearly so. In "dfs" a node waiting for others follows the last of them.

    Raises
    ------
    ValueError
        An edge that is not a pair of distinct nodes, or an `after` that can never be met.
    """
    adjacency = _adjacency(n_nodes, edges)
    wait = [set(a) for a in after] if after is not None else [set() for _ in range(n_nodes)]
    if method == "dfs":
        seen = [False] * n_nodes
        order: list[int] = []
        for start in [root or 0] + list(range(n_nodes)):
            if seen[start]:
                continue
            seen[start] = True
            stack = [(start, iter(sorted(adjacency[start])))]
            while stack:
                node, neighbours = stack[-1]
                for nxt in neighbours:
                    if not seen[nxt]:
                        seen[nxt] = True
                        stack.append((nxt, iter(sorted(adjacency[nxt]))))
                        break
                else:
                    stack.pop()
                    order.append(node)
        return _respecting(order, wait)
    if method != "min-degree":
        raise ValueError(f"unknown ordering {method!r}; use 'min-degree' or 'dfs'")
    graph = [set(a) for a in adjacency]
    waiting_on: list[list[int]] = [[] for _ in range(n_nodes)]
    for v, nodes in enumerate(wait):
        for u in nodes:
            waiting_on[u].append(v)
    eliminated = [False] * n_nodes
    heap = [(len(graph[v]), v) for v in range(n_nodes) if not wait[v]]
    heapq.heapify(heap)
    order = []
    while heap:
        degree, v = heapq.heappop(heap)
        if eliminated[v] or degree != len(graph[v]):
            continue  # stale entry
        eliminated[v] = True
        order.append(v)
        later = graph[v]
        for a in later:
            graph[a].discard(v)
            graph[a] |= later - {a}
        for u in waiting_on[v]:
            wait[u].discard(v)
        for a in later | set(waiting_on[v]):
            if not wait[a] and not eliminated[a]:
                heapq.heappush(heap, (len(graph[a]), a))
    if len(order) != n_nodes:
        stuck = next(v for v in range(n_nodes) if not eliminated[v])
        raise ValueError(f"node {stuck} waits for nodes that are never eliminated: {sorted(wait[stuck])}")
    return tuple(order)


def _respecting(order: list[int], wait: list[set[int]]) -> tuple[int, ...]:
    """`order` with each node that waits for others moved to just after the last of them."""
    final: list[int] = []
    waiting_on: dict[int, list[int]] = {}
    for v, nodes in enumerate(wait):
        for u in nodes:
            waiting_on.setdefault(u, []).append(v)
    left = [len(w) for w in wait]
    emitted = [False] * len(order)
    for v in order:
        if left[v] or emitted[v]:
            continue
        stack = [v]
        while stack:
            u = stack.pop()
            final.append(u)
            emitted[u] = True
            for w in waiting_on.get(u, ()):
                left[w] -= 1
                if left[w] == 0:
                    stack.append(w)
    if len(final) != len(order):
        stuck = next(v for v in range(len(order)) if left[v])
        raise ValueError(f"node {stuck} waits for nodes that are never eliminated: {sorted(wait[stuck])}")
    return tuple(final)


def symbolic(dims: list[int], edges: list[tuple[int, int]], order: tuple[int, ...]) -> Symbolic:
    """The filled pattern of eliminating the nodes in `order` (one pass, O(sum of |upper|^2))."""
    n_nodes = len(dims)
    if sorted(order) != list(range(n_nodes)):
        raise ValueError("order must list every node exactly once")
    graph = _adjacency(n_nodes, edges)
    original = sum(len(a) for a in graph) // 2
    position = {v: i for i, v in enumerate(order)}
    upper: list[tuple[int, ...]] = [()] * n_nodes
    total = 0
    for v in order:
        later = sorted(graph[v], key=position.__getitem__)
        upper[v] = tuple(later)
        total += len(later)
        neighbours = graph[v]
        for a in later:
            graph[a] |= neighbours
            graph[a].discard(a)
            graph[a].discard(v)
    return Symbolic(tuple(int(d) for d in dims), tuple(order), tuple(upper), total - original)


@dataclass(frozen=True)
class Plan:
    """The flat layout of a `Symbolic` pattern for the C kernel (baraff_kernels.h, symplex_fillin_*).

    ``a`` (``size`` doubles) holds every diagonal block (``diag_offset``), and for each elimination
    edge e of v (``upper_start[v] <= e < upper_start[v + 1]``, neighbour ``upper_node[e]``) the blocks
    A_pv (``lower_offset``) and A_vp (``upper_offset``); ``pair_offset`` lists, per v, the block A_pr of
    every ordered pair of its later neighbours; ``where[(i, j)]`` locates the off-diagonal block A_ij.
    """

    order: np.ndarray
    dim: np.ndarray
    diag_offset: np.ndarray
    upper_start: np.ndarray
    upper_node: np.ndarray
    lower_offset: np.ndarray
    upper_offset: np.ndarray
    pair_start: np.ndarray
    pair_offset: np.ndarray
    row_offset: np.ndarray
    where: dict[tuple[int, int], int]
    size: int
    scratch: int

    def block_offsets(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Flat offsets of blocks A_pq (p != q, each in the filled pattern): `where` vectorised."""
        n_nodes = len(self.dim)
        owner = np.repeat(np.arange(n_nodes, dtype=np.int64), np.diff(self.upper_start))
        keys = np.concatenate([self.upper_node * n_nodes + owner, owner * n_nodes + self.upper_node])
        offsets = np.concatenate([self.lower_offset, self.upper_offset])
        sort = np.argsort(keys)
        return offsets[sort][np.searchsorted(keys[sort], p * n_nodes + q)]


def plan(sym: Symbolic) -> Plan:
    """Flat offsets of every block of the filled pattern (once per topology; vectorised over the nodes)."""
    ints = lambda x: np.array(x, dtype=np.int64)  # noqa: E731
    dims, n_nodes = ints(sym.dims), len(sym.dims)
    sq = dims * dims
    diag_offset = np.concatenate([[0], np.cumsum(sq)[:-1]]).astype(np.int64)
    count = ints([len(u) for u in sym.upper])
    upper_start = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    upper_node = ints([p for up in sym.upper for p in up])
    owner = np.repeat(np.arange(n_nodes, dtype=np.int64), count)  # v of each elimination edge, in node order
    sizes = dims[upper_node] * dims[owner]
    lower_offset = int(sq.sum()) + np.concatenate([[0], np.cumsum(2 * sizes)[:-1]]).astype(np.int64)[:len(sizes)]
    upper_offset = lower_offset + sizes
    size = int(sq.sum() + 2 * sizes.sum())
    where: dict[tuple[int, int], int] = {}
    for p, v, lo, up in zip(upper_node.tolist(), owner.tolist(), lower_offset.tolist(), upper_offset.tolist()):
        where[p, v], where[v, p] = lo, up
    # every ordered pair (p, r) of each node's later neighbours: the diagonal block, or the block A_pr
    pair_start = np.concatenate([[0], np.cumsum(count * count)]).astype(np.int64)
    pair_owner = np.repeat(np.arange(n_nodes, dtype=np.int64), count * count)
    k = np.arange(int(pair_start[-1]), dtype=np.int64) - pair_start[pair_owner]
    c = count[pair_owner]
    p = upper_node[upper_start[pair_owner] + k // np.maximum(c, 1)]
    r = upper_node[upper_start[pair_owner] + k % np.maximum(c, 1)]
    layout = Plan(ints(sym.order), dims, diag_offset, upper_start, upper_node, lower_offset, upper_offset,
                  pair_start, np.empty(0, np.int64), np.concatenate([[0], np.cumsum(dims)]).astype(np.int64),
                  where, size, 0)
    pair_offset = diag_offset[p]
    off = p != r
    pair_offset[off] = layout.block_offsets(p[off], r[off])
    nonempty = np.flatnonzero(count)
    scratch = 0
    if len(nonempty):
        width = dims[upper_node]
        starts = upper_start[nonempty]
        scratch = int(np.max(dims[nonempty] * (np.add.reduceat(width, starts) + np.maximum.reduceat(width, starts))))
    return dataclasses.replace(layout, pair_offset=pair_offset, scratch=scratch)


@dataclass(frozen=True)
class LDU:
    """Numeric block factor A = L D U on a `Symbolic` pattern.

    numpy twin: ``dinv[v]`` = D_v^-1; ``lower[(p, v)]`` = L_pv = A_pv D_v^-1 and ``upper[(v, p)]`` =
    U_vp = D_v^-1 A_vp for p in ``symbolic.upper[v]`` (A the partially eliminated matrix). C kernel:
    the same blocks in ``flat`` at the offsets of ``layout`` (a `Plan`).
    """

    symbolic: Symbolic
    dinv: tuple[np.ndarray, ...] = ()
    lower: dict[tuple[int, int], np.ndarray] | None = None
    upper: dict[tuple[int, int], np.ndarray] | None = None
    layout: Plan | None = None
    flat: np.ndarray | None = None


def _singular(v: int) -> np.linalg.LinAlgError:
    return np.linalg.LinAlgError(f"node {v}: singular pivot in the block LDU")


def factor(sym: Symbolic, diagonal: list[np.ndarray], blocks: dict[tuple[int, int], np.ndarray],
           native: bool | None = None, layout: Plan | None = None) -> LDU:
    """Block LDU of the matrix with diagonal blocks `diagonal` and off-diagonal `blocks`.

    ``blocks[(i, j)]`` is A_ij (``dims[i] x dims[j]``); when ``(j, i)`` is absent A_ji = A_ij^T. Every
    pair must be an edge of the graph `sym` was built from. ``native``: the C kernel (default: when
    built) or the numpy twin; ``layout``: `plan(sym)`, kept by callers that factor one topology often.

    Raises
    ------
    numpy.linalg.LinAlgError
        A singular pivot, naming the node.
    """
    use_c = _native.LIB is not None and max(sym.dims, default=0) <= _native.MAX_DIM if native is None else native
    if use_c:
        return _factor_c(sym, diagonal, blocks, layout or plan(sym))
    work: dict[tuple[int, int], np.ndarray] = {}
    for (i, j), block in blocks.items():
        work[i, j] = np.array(block, dtype=float)
        if (j, i) not in blocks:
            work[j, i] = work[i, j].T.copy()
    diag = [np.array(d, dtype=float) for d in diagonal]
    dims = sym.dims
    dinv: list[np.ndarray | None] = [None] * len(diag)
    lower, upper = {}, {}
    for v in sym.order:
        try:
            dinv[v] = np.linalg.inv(diag[v])
        except np.linalg.LinAlgError as exc:
            raise _singular(v) from exc
        later = sym.upper[v]
        row = [work.pop((v, p), None) for p in later]  # A_vp, read by every Schur update below
        for p, a_vp in zip(later, row):
            a_pv = work.pop((p, v), None)
            lower[p, v] = a_pv @ dinv[v] if a_pv is not None else np.zeros((dims[p], dims[v]))
            upper[v, p] = dinv[v] @ a_vp if a_vp is not None else np.zeros((dims[v], dims[p]))
        for p in later:  # A_pr -= L_pv A_vr for every later pair, filling the pattern
            for r, a_vr in zip(later, row):
                if a_vr is None:
                    continue
                update = lower[p, v] @ a_vr
                if p == r:
                    diag[p] -= update
                elif (p, r) in work:
                    work[p, r] -= update
                else:
                    work[p, r] = -update
    return LDU(sym, tuple(dinv), lower, upper)


def _factor_c(sym: Symbolic, diagonal: list[np.ndarray], blocks: dict[tuple[int, int], np.ndarray],
              layout: Plan) -> LDU:
    """The C kernel on the flat layout (symplex_fillin_factor)."""
    flat = np.zeros(layout.size)
    for v, d in enumerate(diagonal):
        flat[layout.diag_offset[v]:layout.diag_offset[v] + d.size] = np.ravel(d)
    for (i, j), block in blocks.items():
        block = np.asarray(block, dtype=float)
        flat[layout.where[i, j]:layout.where[i, j] + block.size] = block.ravel()
        if (j, i) not in blocks:
            flat[layout.where[j, i]:layout.where[j, i] + block.size] = block.T.ravel()
    return factor_flat(sym, layout, flat)


def factor_flat(sym: Symbolic, layout: Plan, flat: np.ndarray) -> LDU:
    """Factor in place a flat array already laid out by `layout` (fill blocks zero): C kernel only
    (`NATIVE`); callers that gather their blocks vectorised skip the per-block dict of `factor`."""
    status = _native.fillin_factor(layout, flat, np.empty(max(layout.scratch, 1)))
    if status == -2:
        raise ValueError(f"a block larger than {_native.MAX_DIM}: the C kernel cannot factor it")
    if status >= 0:
        raise _singular(int(status))
    return LDU(sym, layout=layout, flat=flat)


def solve(fac: LDU, rhs: np.ndarray) -> np.ndarray:
    """Solve A x = rhs, rhs ``(N,)`` or ``(N, k)`` stacked by node index."""
    sym = fac.symbolic
    if fac.flat is not None:
        rhs = np.asarray(rhs, dtype=float)
        x = np.array(rhs.reshape(len(rhs), -1), dtype=float, order="C")
        _native.fillin_solve(fac.layout, fac.flat, x, np.empty(max(sym.dims, default=1) * x.shape[1]))
        return x.reshape(rhs.shape)
    offsets = np.concatenate([[0], np.cumsum(sym.dims)]).astype(int)
    x = np.array(rhs, dtype=float)
    piece = [x[offsets[v]:offsets[v + 1]] for v in range(len(sym.dims))]
    for v in sym.order:  # L z = b
        for p in sym.upper[v]:
            piece[p] -= fac.lower[p, v] @ piece[v]
    for v in sym.order:  # D w = z
        piece[v][...] = fac.dinv[v] @ piece[v]
    for v in reversed(sym.order):  # U x = w
        for p in sym.upper[v]:
            piece[v] -= fac.upper[v, p] @ piece[p]
    return x


@dataclass(frozen=True)
class Saddle:
    """Baraff's H = [[M, J^T], [J, 0]] as a block graph: nodes 0..n-1 bodies, n.. constraints.

    ``after``: the elimination prerequisites (`order_nodes`): each spanning-tree constraint waits for
    the body below it (graph.split_loops, graph.order_tree: the tree order's child), every other
    constraint for all its bodies.
    """

    dims: list[int]
    edges: list[tuple[int, int]]
    after: list[tuple[int, ...]]
    diagonal: list[np.ndarray]
    blocks: dict[tuple[int, int], np.ndarray]


def saddle(masses: list[np.ndarray], constraints: list[Constraint]) -> Saddle:
    """The block graph of H for bodies `masses` and constraints on any number of bodies each."""
    n = len(masses)
    dims = [m.shape[0] for m in masses] + [c.rows for c in constraints]
    edges, blocks = [], {}
    for i, con in enumerate(constraints):
        for body, block in zip(con.bodies, con.blocks, strict=True):
            if block.shape != (con.rows, dims[body]):
                raise ValueError(f"constraint {i}: block on body {body} has shape {block.shape}, "
                                 f"expected ({con.rows}, {dims[body]})")
            edges.append((n + i, body))
            blocks[n + i, body] = block
    bodies = [tuple(c.bodies) for c in constraints]
    primary, _ = split_loops(n, bodies, [c.rows for c in constraints])
    tree = order_tree(n, [bodies[i] for i in primary])
    after = [()] * n + [tuple(b) for b in bodies]
    for k, i in enumerate(primary):
        after[n + i] = tree.children[n + k]
    diagonal = list(masses) + [np.zeros((c.rows, c.rows)) for c in constraints]
    return Saddle(dims, edges, after, diagonal, blocks)


def solve_saddle(masses: list[np.ndarray], constraints: list[Constraint], rhs: np.ndarray,
                 method: str = "min-degree") -> tuple[np.ndarray, Symbolic]:
    """Solve H [v; lam] = rhs with loops in the constraint graph; returns x and the pattern used."""
    system = saddle(masses, constraints)
    order = order_nodes(len(system.dims), system.edges, method, system.after)
    sym = symbolic(system.dims, system.edges, order)
    return solve(factor(sym, system.diagonal, system.blocks), rhs), sym

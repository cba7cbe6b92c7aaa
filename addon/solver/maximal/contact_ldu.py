"""Block LU of the bordered Newton matrix Pb in an elimination order that follows the bodies' contact graph.

Owns the block pattern of Pb = [[D, G^T], [C, E]] (linear.bordered_matrix) as a graph of nodes: one
node per body (6 unknowns) and one per group of rows (a joint's rows, or all interior-point rows
between the same two bodies with the cone rows E couples to them), its minimum-degree elimination
order (fillin.order_nodes, symbolic, plan), and the numeric block LU on that pattern: dense LU with
partial pivoting inside each pivot block, L and U blocks by triangular solves (native/block_lu.c; the
numpy twin here is its reference). Pivot blocks are never inverted explicitly (fillin's LDU does): a
body's block may carry its contacts' stiffness G^T (-E)^-1 C (with every contact eliminated first
and the blocks inverted explicitly, the box pile's factor had a backward error of 1e-3).

The order is static, so no pivot may need a row exchange across blocks. Pb is equilibrated (row, then
column maxima, as for SuperLU). A group of joint rows (zero diagonal) waits for all its bodies
(fillin.order_nodes' `after`): its pivot is then E - C D^-1 G^T. Every group of interior-point rows
may go first whatever its -s/lam (the condensed order): minimum degree takes such a group (degree two)
early, its elimination adds the contact's stiffness D - G^T E^-1 C (lam/s, large on active contacts,
as in the normal equations of interior-point methods) to its two bodies and a 6x6 coupling between
them, so the bodies are left coupled like the contact graph and the fill is the bodies' (each box of
the 200-box pile touches about ten others: a body graph of 1200 unknowns) and not the contact rows'.
Its pivot growth is lam/s (up to 1e13 at the end of a step), but the error stays in the stiff
directions, as for the normal equations: on the pile's landing steps defect correction against the
exact Pb (linear.LinearSolver.solve) meets its 1e-8 in one sweep (a defect of 1e-10 before it), and
the Newton direction agrees with SuperLU's to 2e-7 (docs/benchmarks_maximal.md).

Measured against the bordered order, in which every interior-point group also waited for its bodies
(its pivot E - C D^-1 G^T nearly definite, growth bounded): eliminating a box then joined the rows of
all its contacts into one clique, and the pile's landing steps took 17000 multiply-adds per unknown
(63 million per factorisation) and 10-80 s per step, against 8600 in 6x6 blocks in the condensed order;
dominoes (a chain of contacts) take the same CPU time per step either way (2.6 ms at 32, 8.2 at 128) and
reach the same depth. Between the two,
letting only groups with an equilibrated diagonal of at least 0.5 go first made rows cross that bound
within a step and rebuild the pattern each time (20 builds in one pile step).
The pattern (grouping, order, symbolic factor, flat layout and where each entry of Pb goes) is kept
while the rows' bodies and E's pattern stay the same (a step's Newton iterations, often the next
steps). Whether a factor is good enough is judged by its caller's defect correction
(linear.LinearSolver.solve), which falls back to SuperLU when it is not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

from . import fillin
from ..native import block_lu_binding as _native

NATIVE = _native.LIB is not None


@dataclass(frozen=True)
class Pattern:
    """Block pattern of one topology: the nodes, their order and factor layout, and the gather of Pb.

    key: the rows' bodies and E's pattern it was built for; perm: Pb's unknowns stacked node by node
    (position -> unknown); source/target: CSR entry of equilibrated Pb -> position in the flat factor.
    """

    key: tuple[np.ndarray, ...]
    symbolic: fillin.Symbolic
    plan: fillin.Plan
    perm: np.ndarray
    csr: tuple[np.ndarray, np.ndarray]  # indptr, indices of Pb in CSR, to check the gather still applies
    target: np.ndarray

    @property
    def stored_entries(self) -> int:
        """Scalars the factor stores (pivots, L and U blocks, fill included)."""
        return self.symbolic.stored_entries


def waiting_rows(n_bodies: int, diagonal: np.ndarray) -> np.ndarray:
    """Rows that must follow their bodies: those with a zero diagonal in Pb (`diagonal`, unknowns), the
    joints' (an interior-point pair's is -s/lam, never zero)."""
    return diagonal[6 * n_bodies:] == 0.0


def key(n_bodies: int, a: np.ndarray, b: np.ndarray, n_primary: int, E: scipy.sparse.csr_matrix,
        waiting: np.ndarray) -> tuple:
    """What the pattern depends on: the rows' bodies, E's pattern, which rows wait for their bodies."""
    return (np.array([n_bodies, n_primary]), a.copy(), b.copy(), E.indptr.copy(), E.indices.copy(), waiting.copy())


def reusable(pattern: Pattern | None, key: tuple) -> bool:
    """The pattern applies to a Pb with this key: the same rows' bodies, E pattern and waiting rows."""
    return pattern is not None and len(key) == len(pattern.key) and all(
        x.shape == y.shape and np.array_equal(x, y) for x, y in zip(key, pattern.key))


def group_rows(a: np.ndarray, b: np.ndarray, n_primary: int, E: scipy.sparse.csr_matrix) -> np.ndarray:
    """Node of each row (0-based among the row nodes): rows joined by E, and rows of the same kind
    (joint or interior-point) on the same two bodies, share a node."""
    R = len(a)
    kind = (np.arange(R) >= n_primary).astype(np.int64)
    nb = int(max(a.max(initial=-1), b.max(initial=-1))) + 2
    key = ((a + 1) * nb + (b + 1)) * 2 + kind
    order = np.argsort(key, kind="stable")
    first = np.ones(R, bool)
    first[1:] = key[order[1:]] != key[order[:-1]]
    head = order[np.maximum.accumulate(np.where(first, np.arange(R), 0))]  # first row with the same key
    e_row = np.repeat(np.arange(E.shape[0]), np.diff(E.indptr))
    return components(R, np.concatenate([order, e_row + n_primary]), np.concatenate([head, E.indices + n_primary]))


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Component of each of n nodes joined by edges (i, j), numbered by their lowest node (as
    scipy.sparse.csgraph.connected_components does, without building a sparse matrix): each node takes
    its neighbours' smallest label and its label's label until nothing changes."""
    label = np.arange(n)
    while True:
        low = np.minimum(label[i], label[j])
        new = label.copy()
        np.minimum.at(new, i, low)
        np.minimum.at(new, j, low)
        new = new[new]
        if np.array_equal(new, label):
            return np.unique(label, return_inverse=True)[1]
        label = new


def build(n_bodies: int, a: np.ndarray, b: np.ndarray, n_primary: int, E: scipy.sparse.csr_matrix,
          waiting: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
          max_flops: float | None = None) -> Pattern | None:
    """The pattern of Pb for rows on bodies a, b (-1: none) and auxiliary block E, Pb's CSR pattern
    (indptr, indices) given; None when its factor would take more than `max_flops` multiply-adds (found
    from the symbolic factor, before the flat layout, whose Python cost grows like the flops)."""
    label = group_rows(a, b, n_primary, E)
    groups = int(label.max(initial=-1)) + 1
    size = np.bincount(label, minlength=groups)
    n_nodes = n_bodies + groups
    node = np.concatenate([np.repeat(np.arange(n_bodies), 6), n_bodies + label])  # node of each unknown
    # edges: every row group to its bodies, and between groups coupled by E
    pairs = [np.stack([n_bodies + label[body >= 0], body[body >= 0]], axis=1) for body in (a, b)]
    e_row = np.repeat(np.arange(E.shape[0]), np.diff(E.indptr))
    lr, lc = label[e_row + n_primary], label[E.indices + n_primary]
    off = lr != lc
    pairs.append(np.stack([n_bodies + np.minimum(lr, lc)[off], n_bodies + np.maximum(lr, lc)[off]], axis=1))
    edges = _unique_pairs(np.concatenate(pairs).reshape(-1, 2), n_nodes)
    # groups with a waiting row (joints) wait for all their bodies; interior-point groups do not
    needs_bodies = np.flatnonzero(np.bincount(label, weights=waiting, minlength=groups) > 0)
    group_body = _unique_pairs(np.concatenate(pairs[:2]).reshape(-1, 2), n_nodes)  # by group, then body
    first = np.searchsorted(group_body[:, 0], n_bodies + needs_bodies)
    last = np.searchsorted(group_body[:, 0], n_bodies + needs_bodies, side="right")
    after: list[tuple[int, ...]] = [()] * n_nodes
    for g, i, j in zip(needs_bodies.tolist(), first.tolist(), last.tolist()):
        after[n_bodies + g] = tuple(group_body[i:j, 1].tolist())
    dims = [6] * n_bodies + size.tolist()
    edge_list = [tuple(e) for e in edges.tolist()]
    order = fillin.order_nodes(n_nodes, edge_list, "min-degree", after)
    symbolic = fillin.symbolic(dims, edge_list, order)
    if max_flops is not None and symbolic.flops > max_flops:
        return None
    plan = fillin.plan(symbolic)
    # unknowns stacked node by node, in each node by unknown index
    perm = np.argsort(node, kind="stable")
    local = np.empty(len(node), np.int64)
    local[perm] = np.arange(len(node)) - plan.row_offset[node[perm]]
    row = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    target = _targets(plan, node[row], node[indices], local[row], local[indices])
    return Pattern(key(n_bodies, a, b, n_primary, E, waiting), symbolic, plan, perm, (indptr.copy(), indices.copy()), target)


def _unique_pairs(pairs: np.ndarray, n_nodes: int) -> np.ndarray:
    """The distinct rows of `pairs` (m, 2) of nodes below n_nodes, sorted by first then second node."""
    keys = np.unique(pairs[:, 0].astype(np.int64) * n_nodes + pairs[:, 1])
    return np.stack([keys // n_nodes, keys % n_nodes], axis=1)


def _targets(plan: fillin.Plan, p: np.ndarray, q: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Flat position of entry (i, j) of block (p, q): the row-major block at diag_offset or where."""
    base = plan.diag_offset[p].copy()
    off = p != q
    base[off] = plan.block_offsets(p[off], q[off])
    return base + i * plan.dim[q] + j


@dataclass(frozen=True)
class Factor:
    """The block LU in the plan's flat layout (`flat`, row exchanges `piv` by row offset) and its
    largest |entry| (`growth`: Pb is equilibrated, so this is the pivot growth)."""

    flat: np.ndarray
    piv: np.ndarray
    growth: float


def factor(pattern: Pattern, data: np.ndarray, native: bool | None = None) -> Factor:
    """The block LU of Pb (equilibrated CSR values `data` on the pattern's CSR structure); C kernel
    when built (or `native`), else the numpy twin.

    Raises numpy.linalg.LinAlgError naming the node of an exactly zero or non-finite pivot."""
    flat = np.bincount(pattern.target, weights=data, minlength=pattern.plan.size)
    piv = np.zeros(int(pattern.plan.row_offset[-1]), np.int64)
    if NATIVE if native is None else native:
        status, growth = _native.factor(pattern.plan, flat, piv)
    else:
        status, growth = factor_numpy(pattern.plan, flat, piv)
    if status >= 0:
        raise np.linalg.LinAlgError(f"node {status}: singular pivot in the block LU")
    return Factor(flat, piv, growth)


def _block(flat: np.ndarray, offset: int, rows: int, cols: int) -> np.ndarray:
    return flat[offset:offset + rows * cols].reshape(rows, cols)  # a view: writes go to flat


def factor_numpy(plan: fillin.Plan, flat: np.ndarray, piv: np.ndarray) -> tuple[int, float]:
    """The numpy twin of symplex_block_lu_factor, in place on the same layout: (-1 or node, growth)."""
    growth = 0.0
    for v in plan.order:
        d = int(plan.dim[v])
        dv = _block(flat, plan.diag_offset[v], d, d)
        local = piv[plan.row_offset[v]:plan.row_offset[v] + d]
        for k in range(d):
            p = k + int(np.argmax(np.abs(dv[k:, k])))
            if not (abs(dv[p, k]) > 0.0 and np.isfinite(dv[p, k])):
                return int(v), growth
            local[k] = p
            dv[[k, p]] = dv[[p, k]]
            dv[k + 1:, k] /= dv[k, k]
            dv[k + 1:, k + 1:] -= np.outer(dv[k + 1:, k], dv[k, k + 1:])
        growth = max(growth, float(np.max(np.abs(dv))))
        edges = range(plan.upper_start[v], plan.upper_start[v + 1])
        later = [int(plan.dim[plan.upper_node[e]]) for e in edges]
        lower = [_block(flat, plan.lower_offset[e], dp, d) for e, dp in zip(edges, later)]
        upper = [_block(flat, plan.upper_offset[e], d, dp) for e, dp in zip(edges, later)]
        unit = np.tril(dv, -1) + np.eye(d)
        for lo, up in zip(lower, upper):
            _exchange(local, up)
            up[...] = np.linalg.solve(unit, up)
            lo[...] = np.linalg.solve(np.triu(dv).T, lo.T).T
            growth = max(growth, float(np.max(np.abs(up), initial=0.0)), float(np.max(np.abs(lo), initial=0.0)))
        pair = plan.pair_start[v]
        for lo, dp in zip(lower, later):
            for up, dr in zip(upper, later):
                _block(flat, plan.pair_offset[pair], dp, dr)[...] -= lo @ up
                pair += 1
    return -1, growth


def _exchange(local: np.ndarray, b: np.ndarray) -> None:
    for k, p in enumerate(local):
        if p != k:
            b[[k, p]] = b[[p, k]]


def solve_numpy(plan: fillin.Plan, flat: np.ndarray, piv: np.ndarray, x: np.ndarray) -> None:
    """The numpy twin of symplex_block_lu_solve, in place on x (N, ncol)."""
    off, dim = plan.row_offset, plan.dim
    for v in plan.order:
        d = int(dim[v])
        dv = _block(flat, plan.diag_offset[v], d, d)
        xv = x[off[v]:off[v] + d]
        _exchange(piv[off[v]:off[v] + d], xv)
        xv[...] = np.linalg.solve(np.tril(dv, -1) + np.eye(d), xv)
        for e in range(plan.upper_start[v], plan.upper_start[v + 1]):
            p = plan.upper_node[e]
            x[off[p]:off[p] + dim[p]] -= _block(flat, plan.lower_offset[e], dim[p], d) @ xv
    for v in reversed(plan.order):
        d = int(dim[v])
        xv = x[off[v]:off[v] + d]
        for e in range(plan.upper_start[v], plan.upper_start[v + 1]):
            p = plan.upper_node[e]
            xv -= _block(flat, plan.upper_offset[e], d, dim[p]) @ x[off[p]:off[p] + dim[p]]
        xv[...] = np.linalg.solve(np.triu(_block(flat, plan.diag_offset[v], d, d)), xv)


def solve(pattern: Pattern, fac: Factor, rhs: np.ndarray, native: bool | None = None) -> np.ndarray:
    """Pb^-1 rhs ((N,) or (N, c)) with the factor (unknowns in Pb's own order)."""
    x = np.array(rhs[pattern.perm].reshape(len(rhs), -1), dtype=float, order="C")
    if NATIVE if native is None else native:
        _native.solve(pattern.plan, fac.flat, fac.piv, x)
    else:
        solve_numpy(pattern.plan, fac.flat, fac.piv, x)
    out = np.empty_like(x)
    out[pattern.perm] = x
    return out.reshape(rhs.shape)

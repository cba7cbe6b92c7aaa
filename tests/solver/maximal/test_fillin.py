"""Reduced-fill-in block LDU on cyclic graphs (seed 003 §3.3) against dense solves and fill counts."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.maximal import fillin
from addon.solver.maximal.baraff import Constraint, factor, solve_auxiliary
from addon.solver.maximal.graph import crystal, ladder, loop_chain, net, split_loops
from addon.solver.native import baraff_binding

from .test_baraff import dense_rows, dense_saddle, needs_c, random_block, random_spd, rel_err

GRAPHS = {"ladder": ladder(15), "net": net(6, 7), "crystal": crystal(4)}
KERNELS = [False, pytest.param(True, marks=needs_c)]


def random_graph_matrix(rng, n_nodes, edges, dim=6, symmetric=False):
    """Blocks on the graph's pattern: diagonally dominant pivots, random (unsymmetric) couplings."""
    blocks = {}
    for a, b in edges:
        blocks[a, b] = rng.standard_normal((dim, dim))
        if not symmetric:
            blocks[b, a] = rng.standard_normal((dim, dim))
    degree = np.bincount(np.ravel(edges), minlength=n_nodes)
    diagonal = [random_spd(rng, dim) + 3 * dim * degree[v] * np.eye(dim) for v in range(n_nodes)]
    dense = np.zeros((n_nodes * dim, n_nodes * dim))
    for v, d in enumerate(diagonal):
        dense[v * dim:(v + 1) * dim, v * dim:(v + 1) * dim] = d
    for (a, b), block in blocks.items():
        dense[a * dim:(a + 1) * dim, b * dim:(b + 1) * dim] = block
        if symmetric:
            dense[b * dim:(b + 1) * dim, a * dim:(a + 1) * dim] = block.T
    return diagonal, blocks, dense


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("method", ["dfs", "min-degree"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["ldlt", "ldu"])
@pytest.mark.parametrize("native", KERNELS, ids=["numpy", "c"])
def test_graph_matrices_match_dense(name, method, symmetric, native):
    """Seed 003 Fig. 9 (b)-(d): 6x6 blocks on ladder, net and crystal graphs equal a dense solve."""
    n_nodes, edges = GRAPHS[name]
    rng = np.random.default_rng(n_nodes + symmetric)
    diagonal, blocks, dense = random_graph_matrix(rng, n_nodes, edges, symmetric=symmetric)
    sym = fillin.symbolic([6] * n_nodes, edges, fillin.order_nodes(n_nodes, edges, method))
    rhs = rng.standard_normal((6 * n_nodes, 2))
    fac = fillin.factor(sym, diagonal, blocks, native=native)
    assert (fac.flat is not None) == native
    x = fillin.solve(fac, rhs)
    assert rel_err(x, np.linalg.solve(dense, rhs)) < 1e-9
    assert rel_err(fillin.solve(fac, rhs[:, 0]), np.linalg.solve(dense, rhs[:, 0])) < 1e-9


@needs_c
def test_c_factor_equals_numpy_blocks():
    """The C kernel's pivots and L, U blocks are the numpy twin's (net, min-degree order)."""
    n_nodes, edges = net(5, 5)
    rng = np.random.default_rng(12)
    diagonal, blocks, _ = random_graph_matrix(rng, n_nodes, edges)
    sym = fillin.symbolic([6] * n_nodes, edges, fillin.order_nodes(n_nodes, edges, "min-degree"))
    ref, fac = fillin.factor(sym, diagonal, blocks, native=False), fillin.factor(sym, diagonal, blocks, native=True)
    lay = fac.layout
    for v in range(n_nodes):
        np.testing.assert_allclose(fac.flat[lay.diag_offset[v]:lay.diag_offset[v] + 36].reshape(6, 6), ref.dinv[v],
                                   rtol=1e-12, atol=1e-14)
        for p in sym.upper[v]:
            np.testing.assert_allclose(fac.flat[lay.where[p, v]:lay.where[p, v] + 36].reshape(6, 6), ref.lower[p, v],
                                       rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(fac.flat[lay.where[v, p]:lay.where[v, p] + 36].reshape(6, 6), ref.upper[v, p],
                                       rtol=1e-12, atol=1e-14)


def test_single_cycle_fill_and_trees_have_none():
    """A cycle of m nodes fills m - 3 block pairs in either order; a tree fills none."""
    for m in (4, 5, 9):
        edges = [(i, (i + 1) % m) for i in range(m)]
        for method in ("dfs", "min-degree"):
            assert fillin.symbolic([6] * m, edges, fillin.order_nodes(m, edges, method)).fill == m - 3
    rng = np.random.default_rng(0)
    tree = [(i, int(rng.integers(0, i))) for i in range(1, 40)]
    for method in ("dfs", "min-degree"):
        assert fillin.symbolic([6] * 40, tree, fillin.order_nodes(40, tree, method)).fill == 0


def test_fill_is_what_elimination_creates():
    """The filled pattern equals the nonzero pattern of the dense L of the permuted matrix."""
    n_nodes, edges = net(4, 5)
    rng = np.random.default_rng(4)
    diagonal, blocks, dense = random_graph_matrix(rng, n_nodes, edges, dim=1)
    sym = fillin.symbolic([1] * n_nodes, edges, fillin.order_nodes(n_nodes, edges, "dfs"))
    perm = list(sym.order)
    a = dense[np.ix_(perm, perm)]
    lower = np.eye(n_nodes)
    for k in range(n_nodes):  # dense LU without pivoting
        lower[k + 1:, k] = a[k + 1:, k] / a[k, k]
        a[k + 1:, k:] -= np.outer(lower[k + 1:, k], a[k, k:])
    position = {v: i for i, v in enumerate(perm)}
    pattern = {(position[p], position[v]) for v in range(n_nodes) for p in sym.upper[v]}
    nonzero = {(i, j) for i in range(n_nodes) for j in range(i) if abs(lower[i, j]) > 1e-14}
    assert nonzero <= pattern
    assert len(pattern) == len(edges) + sym.fill


def mechanism(rng, n_bodies, edges, rows=3):
    masses = [random_spd(rng, 6) for _ in range(n_bodies)]
    constraints = [Constraint((0,), (random_block(rng, 6),))]
    constraints += [Constraint(pair, tuple(random_block(rng, rows) for _ in pair)) for pair in edges]
    return masses, constraints


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("method", ["dfs", "min-degree"])
def test_saddle_with_loops_matches_dense_and_auxiliary_rows(name, method):
    """Bodies on the graph's nodes, 3-row joints on its edges (2-row in the crystal: 3 would leave
    more rows than degrees of freedom), body 0 welded to the world."""
    n_bodies, edges = GRAPHS[name]
    rng = np.random.default_rng(n_bodies)
    rows = 2 if name == "crystal" else 3
    masses, constraints = mechanism(rng, n_bodies, edges, rows)
    h = dense_saddle(masses, dense_rows(constraints, n_bodies))
    rhs = rng.standard_normal(h.shape[0])
    x, sym = fillin.solve_saddle(masses, constraints, rhs, method)
    assert rel_err(x, np.linalg.solve(h, rhs)) < 1e-9
    primary, auxiliary = split_loops(n_bodies, [c.bodies for c in constraints])
    k = rows * len(auxiliary)
    ordered = primary + auxiliary
    starts = 6 * n_bodies + np.concatenate([[0], np.cumsum([c.rows for c in constraints])])
    rhs_ordered = np.concatenate([rhs[:6 * n_bodies]] + [rhs[starts[i]:starts[i + 1]] for i in ordered])
    xa, mu = solve_auxiliary(factor(masses, [constraints[i] for i in primary]), [constraints[i] for i in auxiliary],
                             rhs_ordered[:-k], rhs_ordered[-k:])
    assert rel_err(xa[:6 * n_bodies], x[:6 * n_bodies]) < 1e-9


def test_loop_chain_fill_grows_linearly_while_auxiliary_rows_grow_quadratically():
    """Chains of 4-link loops: k grows with n. The fill-in factor's storage is O(n); constraint
    anticipation stores N x k responses, O(n^2)."""
    stored, auxiliary_entries = [], []
    for segments in (5, 10, 20, 40):
        n_bodies, edges = loop_chain(segments)
        rng = np.random.default_rng(segments)
        masses, constraints = mechanism(rng, n_bodies, edges, rows=5)
        system = fillin.saddle(masses, constraints)
        order = fillin.order_nodes(len(system.dims), system.edges, "min-degree", system.after)
        sym = fillin.symbolic(system.dims, system.edges, order)
        stored.append(sym.stored_entries / n_bodies)
        _, auxiliary = split_loops(n_bodies, [c.bodies for c in constraints])
        assert len(auxiliary) == segments
        auxiliary_entries.append(sum(system.dims) * 5 * len(auxiliary) / n_bodies)
    assert max(stored) / min(stored) < 1.2  # per body: constant
    assert auxiliary_entries[-1] / auxiliary_entries[0] > 7  # per body: grows with n


def test_zero_pivot_and_bad_input_are_named():
    for method in ("dfs", "min-degree"):
        with pytest.raises(ValueError, match="node 1 waits for nodes that are never eliminated"):
            fillin.order_nodes(3, [(0, 1)], method, [(), (2,), (1,)])
    with pytest.raises(ValueError, match="edge"):
        fillin.order_nodes(2, [(0, 0)])
    with pytest.raises(ValueError, match="unknown ordering"):
        fillin.order_nodes(2, [(0, 1)], "amd")
    rng = np.random.default_rng(1)
    block = rng.standard_normal((2, 6))
    block[1] = block[0]
    masses = [random_spd(rng, 6) for _ in range(2)]
    system = fillin.saddle(masses, [Constraint((0, 1), (block, block))])
    sym = fillin.symbolic(system.dims, system.edges, fillin.order_nodes(3, system.edges, "dfs", system.after))
    for native in (False, True) if baraff_binding.LIB is not None else (False,):
        with pytest.raises(np.linalg.LinAlgError, match="node 2"):
            fillin.factor(sym, system.diagonal, system.blocks, native=native)


def test_plan_lays_out_every_block_once_and_lists_each_schur_pair():
    """The flat layout of random filled patterns (random block sizes, both orders): the diagonal, lower and
    upper blocks tile 0..size exactly, `where` and `block_offsets` find each off-diagonal block, and each
    node's pair list names, pair by pair of its later neighbours, the block its Schur update goes to (the
    reference enumeration loops over the blocks one by one)."""
    rng = np.random.default_rng(11)
    for name, (n_nodes, edges) in GRAPHS.items():
        for method in ("dfs", "min-degree"):
            dims = rng.integers(1, 8, n_nodes).tolist()
            sym = fillin.symbolic(dims, edges, fillin.order_nodes(n_nodes, edges, method))
            plan = fillin.plan(sym)
            blocks = [(int(plan.diag_offset[v]), d * d) for v, d in enumerate(dims)]
            pairs, scratch = [], 0
            for v, later in enumerate(sym.upper):
                edges_v = range(plan.upper_start[v], plan.upper_start[v + 1])
                assert plan.upper_node[edges_v].tolist() == list(later), (name, method, v)
                for e, p in zip(edges_v, later):
                    assert plan.where[p, v] == plan.lower_offset[e] and plan.where[v, p] == plan.upper_offset[e]
                    blocks += [(int(plan.lower_offset[e]), dims[p] * dims[v]),
                               (int(plan.upper_offset[e]), dims[v] * dims[p])]
                pairs += [plan.diag_offset[p] if p == r else plan.where[p, r] for p in later for r in later]
                if later:
                    width = [dims[p] for p in later]
                    scratch = max(scratch, dims[v] * (sum(width) + max(width)))
            blocks.sort()
            assert [o for o, _ in blocks] == np.cumsum([0] + [s for _, s in blocks[:-1]]).tolist(), (name, method)
            assert plan.size == sum(s for _, s in blocks) and plan.scratch == scratch
            assert plan.pair_offset.tolist() == [int(x) for x in pairs] and plan.pair_start[-1] == len(pairs)
            keys = np.array(list(plan.where), dtype=np.int64).reshape(-1, 2)
            assert plan.block_offsets(keys[:, 0], keys[:, 1]).tolist() == list(plan.where.values())

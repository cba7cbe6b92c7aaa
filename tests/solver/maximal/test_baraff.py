"""Baraff's O(n) tree factorisation and O(nk) auxiliary rows against dense solves (seed 002)."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.maximal import baraff
from addon.solver.maximal.baraff import Constraint, factor, factor_flat, make_layout, solve, solve_auxiliary
from addon.solver.maximal.graph import TopologyError, crystal, ladder, net, order_tree, split_loops
from addon.solver.native import baraff_binding

needs_c = pytest.mark.skipif(baraff_binding.LIB is None, reason="C kernels not built (run `make kernels`) or "
                                                                "SYMPLEX_NO_NATIVE=1: C cases skipped")


def random_spd(rng: np.random.Generator, dim: int) -> np.ndarray:
    a = rng.standard_normal((dim, dim))
    return a @ a.T + dim * np.eye(dim)


def random_block(rng: np.random.Generator, rows: int, dim: int = 6) -> np.ndarray:
    """A full-rank constraint block with singular values in [0.5, 2]: random orthonormal rows, scaled."""
    basis = np.linalg.qr(rng.standard_normal((dim, dim)))[0][:rows]
    return rng.uniform(0.5, 2.0, (rows, 1)) * basis @ np.linalg.qr(rng.standard_normal((dim, dim)))[0]


def random_system(rng, n_bodies, shape="branched", anchored=True, dim=6):
    """n bodies with random SPD masses; body i > 0 joined to an earlier body; body 0 to the world."""
    masses = [random_spd(rng, dim) for _ in range(n_bodies)]
    constraints = []
    for body in range(n_bodies):
        rows = int(rng.integers(1, 6))
        if body == 0:
            if anchored:
                constraints.append(Constraint((0,), (random_block(rng, rows, dim),)))
            continue
        other = body - 1 if shape == "chain" else int(rng.integers(0, body))
        pair = (body, other) if rng.random() < 0.5 else (other, body)
        constraints.append(Constraint(pair, tuple(random_block(rng, rows, dim) for _ in pair)))
    return masses, constraints


def dense_rows(constraints, n_bodies, dim=6):
    rows = []
    for con in constraints:
        row = np.zeros((con.rows, n_bodies * dim))
        for body, block in zip(con.bodies, con.blocks):
            row[:, body * dim:(body + 1) * dim] += block
        rows.append(row)
    return np.vstack(rows) if rows else np.zeros((0, n_bodies * dim))


def dense_saddle(masses, rows):
    nv = sum(m.shape[0] for m in masses)
    mass = np.zeros((nv, nv))
    start = 0
    for m in masses:
        mass[start:start + len(m), start:start + len(m)] = m
        start += len(m)
    nc = rows.shape[0]
    return np.block([[mass, rows.T], [rows, np.zeros((nc, nc))]])


def rel_err(x, ref):
    return np.linalg.norm(x - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("shape", ["chain", "branched"])
@pytest.mark.parametrize("n_bodies", [1, 2, 7, 60, 200])
@pytest.mark.parametrize("anchored", [True, False])
def test_tree_solve_matches_dense(shape, n_bodies, anchored):
    rng = np.random.default_rng(n_bodies * 7 + (shape == "chain") + 2 * anchored)
    masses, constraints = random_system(rng, n_bodies, shape, anchored)
    h = dense_saddle(masses, dense_rows(constraints, n_bodies))
    rhs = rng.standard_normal((h.shape[0], 2))
    x = solve(factor(masses, constraints), rhs)
    assert rel_err(x, np.linalg.solve(h, rhs)) < 1e-10
    assert rel_err(solve(factor(masses, constraints), rhs[:, 0]), np.linalg.solve(h, rhs[:, 0])) < 1e-10


def test_forest_and_mixed_body_dimensions():
    """Two components (one anchored, one free) with 3-, 6- and 7-dimensional bodies."""
    rng = np.random.default_rng(3)
    dims = [3, 6, 7, 6, 3, 7]
    masses = [random_spd(rng, d) for d in dims]
    joints = [((0,), 2), ((1, 0), 3), ((1, 2), 2), ((3, 4), 3), ((5, 3), 4)]
    constraints = [Constraint(b, tuple(rng.standard_normal((r, dims[i])) for i in b)) for b, r in joints]
    rows = np.vstack([np.hstack([next((blk for i, blk in zip(c.bodies, c.blocks) if i == j),
                                      np.zeros((c.rows, dims[j]))) for j in range(6)]) for c in constraints])
    h = dense_saddle(masses, rows)
    rhs = rng.standard_normal(h.shape[0])
    fac = factor(masses, constraints)
    assert sum(fac.order.parent < 0) == 2
    assert rel_err(solve(fac, rhs), np.linalg.solve(h, rhs)) < 1e-10


def test_ordering_children_before_parents_and_no_fill_in():
    """Baraff's Fig. 2 topology: post-order, and L D L^T rebuilt from the stored blocks is exactly H."""
    rng = np.random.default_rng(2)
    pairs = [(0, 1), (1, 2), (1, 3), (0, 4), (4, 5)]
    masses = [random_spd(rng, 6) for _ in range(6)]
    constraints = [Constraint(p, tuple(rng.standard_normal((3, 6)) for _ in p)) for p in pairs]
    fac = factor(masses, constraints)
    order = fac.order
    position = {node: i for i, node in enumerate(order.forward)}
    assert sorted(order.forward) == list(range(11))
    assert all(position[c] < position[int(order.parent[c])] for c in range(11) if order.parent[c] >= 0)
    offsets = np.concatenate([[0], np.cumsum(fac.dims)])
    size = offsets[-1]
    unit_l, diag = np.eye(size), np.zeros((size, size))
    for node in range(11):
        span = slice(offsets[node], offsets[node + 1])
        diag[span, span] = np.linalg.inv(fac.dinv[node])
        up = order.parent[node]
        if up >= 0:
            unit_l[offsets[up]:offsets[up + 1], span] = fac.lt[node].T
    h = dense_saddle(masses, dense_rows(constraints, 6))
    np.testing.assert_allclose(unit_l @ diag @ unit_l.T, h, atol=1e-10)
    # L has a nonzero block only where H has one: the factor stores one block per non-root node.
    assert sum(b is not None for b in fac.lt) == len(pairs) * 2


def test_pivot_signs():
    rng = np.random.default_rng(5)
    masses, constraints = random_system(rng, 40)
    fac = factor(masses, constraints)
    for node, dinv in enumerate(fac.dinv):
        eig = np.linalg.eigvalsh((dinv + dinv.T) / 2)
        assert (eig > 0).all() if node < 40 else (eig < 0).all()


@pytest.mark.parametrize("shape", ["chain", "branched"])
@pytest.mark.parametrize("n_bodies,n_aux", [(2, 1), (30, 4), (200, 12)])
def test_auxiliary_rows_match_dense(shape, n_bodies, n_aux):
    rng = np.random.default_rng(n_bodies + n_aux)
    masses, constraints = random_system(rng, n_bodies, shape)
    auxiliary = []
    for _ in range(n_aux):
        bodies = tuple(int(b) for b in rng.choice(n_bodies, size=int(rng.integers(1, min(3, n_bodies) + 1)),
                                                   replace=False))
        auxiliary.append(Constraint(bodies, tuple(rng.standard_normal((1, 6)) for _ in bodies)))
    rows = dense_rows(constraints + auxiliary, n_bodies)
    h = dense_saddle(masses, rows)
    k = sum(a.rows for a in auxiliary)
    rhs = rng.standard_normal(h.shape[0])
    ref = np.linalg.solve(h, rhs)
    x, mu = solve_auxiliary(factor(masses, constraints), auxiliary, rhs[:-k], rhs[-k:])
    assert rel_err(np.concatenate([x, mu]), ref) < 1e-10


def test_loop_closure_block_row():
    """A 3-row closure between the two ends of a chain (a loop) as one auxiliary constraint."""
    rng = np.random.default_rng(11)
    masses, constraints = random_system(rng, 20, "chain")
    closure = Constraint((0, 19), (rng.standard_normal((3, 6)), rng.standard_normal((3, 6))))
    h = dense_saddle(masses, dense_rows(constraints + [closure], 20))
    rhs = rng.standard_normal(h.shape[0])
    x, mu = solve_auxiliary(factor(masses, constraints), [closure], rhs[:-3], rhs[-3:])
    assert rel_err(np.concatenate([x, mu]), np.linalg.solve(h, rhs)) < 1e-10


def count_ops(fn, *args, **kwargs):
    baraff.OPS.clear()
    out = fn(*args, **kwargs)
    return dict(baraff.OPS), out


@pytest.mark.parametrize("shape", ["chain", "branched"])
def test_factor_and_solve_cost_linear(shape):
    """Exactly 2 block products per tree edge and 1 inversion per node; multiply-adds per body constant."""
    flops_per_body = []
    for n_bodies in (10, 100, 1000):
        rng = np.random.default_rng(n_bodies)
        masses, constraints = random_system(rng, n_bodies, shape)
        n_nodes = 2 * n_bodies  # n bodies + n constraints (one anchors body 0); one root
        ops, fac = count_ops(factor, masses, constraints, native=False)
        assert (ops["product"], ops["inverse"]) == (2 * (n_nodes - 1), n_nodes)
        # each body-constraint edge: <= 6*6*5 (D^-1 H) + 5*6*5 (H^T L) multiply-adds
        assert ops["flops"] <= (n_nodes - 1) * (180 + 150)
        flops_per_body.append(ops["flops"] / n_bodies)
        ops, _ = count_ops(solve, fac, np.ones(sum(fac.dims)))
        assert ops["product"] == 3 * (n_nodes - 1) + 1
    assert max(flops_per_body) / min(flops_per_body) < 1.3


def test_auxiliary_cost_linear_in_n_and_k():
    """Forming and solving k auxiliary rows costs c * n * (k + 1) multiply-adds plus O(k^2)."""
    flops = {}
    for n_bodies in (50, 500):
        rng = np.random.default_rng(n_bodies)
        masses, constraints = random_system(rng, n_bodies, "chain")
        fac = factor(masses, constraints, native=False)
        for k in (1, 4, 16):
            ends = [(int(a), int(b)) for a, b in rng.choice(n_bodies, size=(k, 2), replace=False)]
            auxiliary = [Constraint(e, (random_block(rng, 1), random_block(rng, 1))) for e in ends]
            ops, _ = count_ops(solve_auxiliary, fac, auxiliary, np.ones(sum(fac.dims)), np.zeros(k))
            flops[n_bodies, k] = ops["flops"]
    for k in (1, 4, 16):
        assert 9 < flops[500, k] / flops[50, k] < 11  # linear in n
    for n_bodies in (50, 500):
        ratio = flops[n_bodies, 16] / flops[n_bodies, 1]
        assert 17 / 2 * 0.9 < ratio < 17 / 2 * 1.1  # linear in k + 1 columns


@pytest.mark.parametrize("bodies,message", [
    ([(0, 1), (1, 2), (2, 0)], "closes a loop"),
    ([(0,), (0, 1), (1,)], "second world anchor"),
    ([(0, 1, 2)], "one or two distinct bodies"),
    ([(0, 0)], "one or two distinct bodies"),
    ([(0, 5)], "outside"),
])
def test_topology_errors(bodies, message):
    with pytest.raises(TopologyError, match=message):
        order_tree(3, bodies)


def test_redundant_rows_name_the_constraint():
    rng = np.random.default_rng(1)
    block = rng.standard_normal((2, 6))
    block[1] = block[0]
    masses = [random_spd(rng, 6) for _ in range(2)]
    with pytest.raises(np.linalg.LinAlgError, match="constraint 0"):
        factor(masses, [Constraint((0, 1), (block, block))])


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("native", [False, pytest.param(True, marks=needs_c)], ids=["numpy", "c"])
def test_refinement_recovers_accuracy_with_gaussian_blocks(seed, native):
    """Gaussian 1..5 x 6 blocks: some child-side blocks are nearly rank-deficient, so the unpivoted
    tree factorisation loses digits; one refinement step brings it back to dense-solve accuracy."""
    rng = np.random.default_rng(seed)
    masses = [random_spd(rng, 6) for _ in range(200)]
    constraints = [Constraint((0,), (rng.standard_normal((int(rng.integers(1, 6)), 6)),))]
    for body in range(1, 200):
        rows = int(rng.integers(1, 6))
        constraints.append(Constraint((body, body - 1), tuple(rng.standard_normal((rows, 6)) for _ in range(2))))
    h = dense_saddle(masses, dense_rows(constraints, 200))
    rhs = rng.standard_normal(h.shape[0])
    fac = factor(masses, constraints, native=native)
    np.testing.assert_allclose(baraff.multiply(fac, rhs), h @ rhs, rtol=0, atol=1e-12 * np.abs(h @ rhs).max())
    assert rel_err(solve(fac, rhs, refine=1), np.linalg.solve(h, rhs)) < 1e-10


def test_block_shape_mismatch_names_the_constraint():
    masses = [np.eye(6), np.eye(3)]
    with pytest.raises(ValueError, match="constraint 0: block on body 1 has shape"):
        factor(masses, [Constraint((0, 1), (np.ones((2, 6)), np.ones((2, 6))))])


@needs_c
@pytest.mark.parametrize("shape", ["chain", "branched"])
@pytest.mark.parametrize("anchored", [True, False])
def test_c_kernel_equals_numpy_and_dense(shape, anchored):
    """The C factor's pivots and L blocks equal the numpy twin's; both solves equal the dense solve."""
    rng = np.random.default_rng(40 + 2 * (shape == "chain") + anchored)
    dims = [int(d) for d in rng.choice([3, 6, 7], size=150)]
    masses = [random_spd(rng, d) for d in dims]
    constraints = [Constraint((0,), (random_block(rng, 2, dims[0]),))] if anchored else []
    for body in range(1, 150):
        other = body - 1 if shape == "chain" else int(rng.integers(0, body))
        rows = int(rng.integers(1, min(dims[body], dims[other]) + 1))
        pair = (body, other) if rng.random() < 0.5 else (other, body)
        constraints.append(Constraint(pair, tuple(random_block(rng, rows, dims[b]) for b in pair)))
    fac_c, fac_np = factor(masses, constraints, native=True), factor(masses, constraints, native=False)
    assert fac_c.native and not fac_np.native
    np.testing.assert_allclose(fac_c.dinv_flat, fac_np.dinv_flat, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fac_c.lt_flat, fac_np.lt_flat, rtol=1e-12, atol=1e-12)
    rows = np.vstack([np.hstack([next((blk for i, blk in zip(c.bodies, c.blocks) if i == j),
                                      np.zeros((c.rows, dims[j]))) for j in range(150)]) for c in constraints])
    h = dense_saddle(masses, rows)
    rhs = rng.standard_normal((h.shape[0], 3))
    ref = np.linalg.solve(h, rhs)
    assert rel_err(solve(fac_c, rhs), ref) < 1e-9
    assert rel_err(solve(fac_np, rhs), ref) < 1e-9
    assert rel_err(solve(fac_c, rhs[:, 1]), ref[:, 1]) < 1e-9


def cyclic_system(rng, n_bodies, edges, rows=3):
    """Bodies on the nodes of a graph, a `rows`-row constraint on every edge, body 0 anchored."""
    masses = [random_spd(rng, 6) for _ in range(n_bodies)]
    pairs = [(0,)] + list(edges)
    constraints = [Constraint(p, tuple(random_block(rng, rows) for _ in p)) for p in pairs]
    return masses, constraints


@pytest.mark.parametrize("graph", [ladder(12), net(5, 6), crystal(3)], ids=["ladder", "net", "crystal"])
@pytest.mark.parametrize("native", [False, pytest.param(True, marks=needs_c)], ids=["numpy", "c"])
def test_cyclic_graphs_by_auxiliary_rows_match_dense(graph, native):
    """Ladder, net and crystal (seed 003 Fig. 9): spanning tree primary, loop closers auxiliary, = dense."""
    n_bodies, edges = graph
    rng = np.random.default_rng(n_bodies)
    masses, constraints = cyclic_system(rng, n_bodies, edges, rows=2)
    primary, auxiliary = split_loops(n_bodies, [c.bodies for c in constraints])
    assert len(auxiliary) == len(edges) + 1 - n_bodies  # independent cycles of a connected graph
    ordered = [constraints[i] for i in primary + auxiliary]
    h = dense_saddle(masses, dense_rows(ordered, n_bodies))
    rhs = rng.standard_normal(h.shape[0])
    k = 2 * len(auxiliary)
    fac = factor(masses, [constraints[i] for i in primary], native=native)
    x, mu = solve_auxiliary(fac, [constraints[i] for i in auxiliary], rhs[:-k], rhs[-k:])
    assert rel_err(np.concatenate([x, mu]), np.linalg.solve(h, rhs)) < 1e-9


def test_split_loops_keeps_high_dimensional_joints_in_the_tree():
    """A triangle of a 5-row, a 3-row and a 1-row joint: the 1-row joint closes the loop."""
    primary, auxiliary = split_loops(3, [(0, 1), (1, 2), (2, 0), (0,)], rows=[5, 1, 3, 6])
    assert (primary, auxiliary) == ([0, 2, 3], [1])


@needs_c
def test_c_kernel_reports_the_singular_node():
    rng = np.random.default_rng(1)
    block = rng.standard_normal((2, 6))
    block[1] = block[0]
    masses = [random_spd(rng, 6) for _ in range(2)]
    with pytest.raises(np.linalg.LinAlgError, match="constraint 0"):
        factor(masses, [Constraint((0, 1), (block, block))], native=True)


@pytest.mark.parametrize("native", [False, pytest.param(True, marks=needs_c)], ids=["numpy", "c"])
def test_flat_entry_and_reuse_give_the_same_factor(native):
    """factor_flat on hand-made flat arrays, a factor overwriting an old one, and stacked (n, 6, 6)
    masses equal `factor` on lists."""
    rng = np.random.default_rng(8)
    masses, constraints = random_system(rng, 30, "branched")
    ref = factor(masses, constraints, native=native)
    lay = make_layout([6] * 30, [c.bodies for c in constraints], [c.rows for c in constraints])
    flat = factor_flat(lay, np.concatenate([m.ravel() for m in masses]),
                       np.concatenate([b.ravel() for c in constraints for b in c.blocks]), native=native)
    old = factor([2 * m for m in masses], constraints, native=native)
    again = factor(masses, constraints, native=native, reuse=old)
    assert again.dinv_flat is old.dinv_flat
    stacked = factor(np.array(masses), constraints, native=native)
    rhs = rng.standard_normal(sum(ref.dims))
    for fac in (flat, again, stacked):
        np.testing.assert_allclose(fac.dinv_flat, ref.dinv_flat, rtol=0, atol=0)
        np.testing.assert_allclose(solve(fac, rhs), solve(ref, rhs), rtol=0, atol=0)

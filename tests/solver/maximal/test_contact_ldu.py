"""The block LU of the bordered Newton matrix (maximal/contact_ldu.py, native/block_lu.c): the C kernel
against its numpy twin, the condensed order's Newton direction against a dense solve, fill per unknown that stays bounded as a row of
dominoes grows (the order follows the contact graph), and a pivot the static order cannot take handed
to SuperLU, which says so."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from addon.solver.maximal import contact_ldu, native_border
from addon.solver.maximal.linear import LinearSolver, NewtonMatrix, RowBlocks, bordered_matrix
from addon.solver.integrator import make_integrator
from tools.contact_scenes import box_pile, falling_dominoes

from .test_linear import random_pile, run

EPS = np.finfo(float).eps


def _pile_matrices() -> list:
    matrices: list = []
    run(random_pile(5), "sparse", 16, matrices)
    return [(A, rhs) for A, rhs in matrices if A.rows.count - A.n_primary >= 10]


@pytest.mark.skipif(not contact_ldu.NATIVE, reason="C kernels not built")
def test_c_block_lu_is_its_numpy_twin_and_gives_the_newton_direction():
    """The last contact Newton matrix of a random pile (eight boxes and spheres, the pairs near the solution:
    s/lam down to 1e-12) in the condensed order: the C factor equals its twin, and with defect correction
    the direction is the dense solve's to within the matrix's condition times the solver's tolerance."""
    A, rhs = _pile_matrices()[-1]
    solver = LinearSolver(len(A.D), [], "sparse")
    solver.factor(A)
    assert solver.factorisation == "block LU"
    pattern, c_factor, row, col = solver._block
    M = solver._equilibrated[0]
    twin = contact_ldu.factor(pattern, M.data, native=False)
    scale = np.max(np.abs(c_factor.flat))
    np.testing.assert_allclose(twin.flat, c_factor.flat, rtol=0, atol=1e-12 * scale)
    np.testing.assert_array_equal(twin.piv, c_factor.piv)
    b = row * rhs
    x_c = contact_ldu.solve(pattern, c_factor, b)
    x_np = contact_ldu.solve(pattern, twin, b, native=False)
    # the same operations up to rounding, which the pivot growth (lam/s of the active pairs) amplifies
    np.testing.assert_allclose(x_np, x_c, rtol=0, atol=len(b) * EPS * c_factor.growth * np.max(np.abs(x_c)))
    Md = M.toarray()
    eps = -A.E.diagonal()  # s/lam of the pairs
    assert eps.min() < 1e-8 * eps.max(), "the run's last pairs are not near their solution"
    u = solver.solve(A, rhs)
    assert solver.sweeps <= 3 and solver.defect <= 1e-8, (solver.sweeps, solver.defect)
    # in Pb's equilibrated unknowns (u / col), where the forward error is at most the condition times the
    # backward error (defect correction's 1e-8)
    exact = np.linalg.solve(Md, b)
    assert np.max(np.abs(u / col - exact)) <= np.linalg.cond(Md) * 1e-8 * np.max(np.abs(exact))


def test_fill_per_unknown_is_bounded_as_the_dominoes_grow():
    """n dominoes stand on the ground, each leaning on the next: the block LU's fill follows that chain,
    so the stored entries per unknown of Pb stay the same from 8 to 64 dominoes (a dense border of the
    contact rows would grow with n)."""
    per_unknown = {}
    for n in (8, 64):
        matrices: list = []
        run(falling_dominoes(n), "sparse", 2, matrices)
        A = max((A for A, _ in matrices), key=lambda A: A.rows.count)
        solver = LinearSolver(len(A.D), [], "sparse")
        solver.factor(A)
        assert solver.factorisation == "block LU" and A.rows.count - A.n_primary >= 10 * n
        per_unknown[n] = solver.stored_entries / solver.unknowns
    assert per_unknown[64] <= 1.1 * per_unknown[8], per_unknown


def test_a_pivot_the_static_order_cannot_take_falls_back_to_superlu_and_says_so():
    """A body with a zero mass block held by six world joint rows: joint rows (zero diagonal) wait for their
    body, whose pivot is then exactly zero. The matrix [[0, I], [2 I, 0]] is regular: SuperLU, pivoting
    across blocks, solves it, and the solver names the node that failed."""
    rows = RowBlocks(a=np.full(6, -1), b=np.zeros(6, dtype=np.int64), Ga=np.zeros((6, 6)), Gb=np.eye(6),
                     Ca=np.zeros((6, 6)), Cb=2.0 * np.eye(6))
    A = NewtonMatrix(D=np.zeros((1, 6, 6)), rows=rows, n_primary=0,
                     coupling=(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 6, 6))),
                     E=scipy.sparse.csr_matrix((6, 6)))
    solver = LinearSolver(1, [], "sparse")
    solver.factor(A)
    assert solver.factorisation == "SuperLU" and solver.fallbacks == 1
    assert "node 0" in solver.fallback and "singular pivot" in solver.fallback
    rhs = np.arange(1.0, 13.0)
    u = solver.solve(A, rhs)
    np.testing.assert_allclose(u, np.linalg.solve(bordered_matrix(A).toarray(), rhs), rtol=1e-12)


@pytest.mark.heavy
@pytest.mark.skipif(not contact_ldu.NATIVE, reason="C kernels not built")
def test_a_small_pile_lands_in_c_in_the_condensed_order_like_numpy():
    """50 boxes dropped into the bin (box_pile): at step 20 the boxes of the second layer land on the first (about
    540 pairs, tens of Newton iterations, s/lam down to rounding). The C step takes that step with the
    block LU in the condensed order, cheaper than the order in which every pair waits for its bodies, converges,
    and agrees with the numpy step (the reference, the same order) to Newton's tolerance: a landing moves the
    velocities by far more than rounding for tiny changes (test_native_step's flat landing), so 1e-6 relative,
    and 1e-8 m in positions."""
    mech = box_pile(50)
    c, py = make_integrator(mech, "maximal", 0.01), make_integrator(mech, "maximal", 0.01)
    py.state.kernel = False
    c.step()
    py.step()
    kernel, taken = c.state.kernel, []
    step = kernel.step

    def recording(*args, **kwargs):
        result = step(*args, **kwargs)
        taken.append(result is not None)  # None: the numpy step takes it
        return result
    kernel.step = recording
    for _ in range(19):
        c.step()
        py.step()
    assert all(taken) and len(c.state.interior.lam) > 500
    pattern = kernel._sparse.pattern
    nb, n_primary = pattern.key[0]
    npair = len(pattern.key[1]) - n_primary
    E = scipy.sparse.csr_matrix((np.ones(len(pattern.key[4])), pattern.key[4], pattern.key[3]), shape=(npair, npair))
    bordered = contact_ldu.build(nb, pattern.key[1], pattern.key[2], n_primary, E, np.ones(len(pattern.key[1]), bool),
                                 *pattern.csr)
    assert pattern.symbolic.flops < bordered.symbolic.flops  # 0.61 of it here; 0.5 on the 200-box pile
    V = np.hstack([c.state.v, c.state.w])
    V_np = np.hstack([py.state.v, py.state.w])
    assert np.max(np.abs(V - V_np)) <= 1e-6 * np.max(np.abs(V_np))
    assert np.max(np.abs(c.state.x - py.state.x)) <= 1e-8


@pytest.mark.skipif(native_border.binding.LIB is None, reason="C kernels not built")
def test_kernel_pattern_places_every_entry_of_random_contact_sets():
    """Random contact sets (joints and pairs on random bodies or the world, random cone couplings), as the
    toppling front changes them: Pb's entries scattered through the pattern's targets give, block by block of
    the filled pattern, Pb with its unknowns stacked node by node (fill blocks zero, nothing lost), and every
    group with a joint row is eliminated after all its bodies."""
    rng = np.random.default_rng(15)
    for trial in range(40):
        nb, joints, npair = int(rng.integers(2, 12)), int(rng.integers(0, 4)), int(rng.integers(1, 30))
        a = rng.integers(0, nb, joints + npair)
        b = np.where(rng.random(joints + npair) < 0.4, nb, (a + rng.integers(1, nb, joints + npair)) % nb)
        e_row = rng.integers(0, npair, int(rng.integers(0, npair)))
        e_col = (e_row + rng.integers(1, npair + 1, len(e_row))) % npair
        e_row, e_col = e_row[e_row != e_col], e_col[e_row != e_col]
        kp = native_border.KernelPattern(nb, a, b, npair, e_row, e_col)
        row, col = native_border.entries(nb, a, b, npair, e_row, e_col)
        values = rng.standard_normal(len(row))
        N = 6 * nb + joints + npair
        Pb = np.zeros((N, N))
        np.add.at(Pb, (row, col), values)
        flat = np.bincount(kp._arrays["target"], weights=values, minlength=kp.pattern.plan.size)
        plan, perm = kp.pattern.plan, kp.pattern.perm
        stacked, ro = Pb[np.ix_(perm, perm)], plan.row_offset
        for v in range(len(plan.dim)):
            np.testing.assert_array_equal(flat[plan.diag_offset[v]:plan.diag_offset[v] + plan.dim[v] ** 2],
                                          stacked[ro[v]:ro[v + 1], ro[v]:ro[v + 1]].ravel())
        for (p, q), at in plan.where.items():
            np.testing.assert_array_equal(flat[at:at + plan.dim[p] * plan.dim[q]],
                                          stacked[ro[p]:ro[p + 1], ro[q]:ro[q + 1]].ravel())
        assert np.isclose(np.abs(flat).sum(), np.abs(Pb).sum(), rtol=1e-14), trial
        node = np.concatenate([np.repeat(np.arange(nb), 6), nb + contact_ldu.group_rows(
            np.where(a >= nb, -1, a), np.where(b >= nb, -1, b), joints,
            native_border._e_matrix(npair, e_row, e_col))])
        position = np.empty(len(plan.order), np.int64)
        position[plan.order] = np.arange(len(plan.order))
        for r in range(joints):
            bodies = [x for x in (a[r], b[r]) if x < nb]
            assert all(position[node[6 * nb + r]] > position[x] for x in bodies), trial


def test_row_groups_are_the_components_scipy_finds():
    """contact_ldu.components on random graphs (isolated nodes, repeated edges and loops included) labels
    the nodes as scipy's weak connected components do: the same components, numbered by lowest node."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        n, m = int(rng.integers(1, 60)), int(rng.integers(0, 80))
        i, j = rng.integers(0, n, m), rng.integers(0, n, m)
        graph = scipy.sparse.coo_matrix((np.ones(m), (i, j)), shape=(n, n))
        _, expected = scipy.sparse.csgraph.connected_components(graph, directed=True, connection="weak")
        np.testing.assert_array_equal(contact_ldu.components(n, i, j), expected)

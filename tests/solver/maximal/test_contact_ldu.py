"""The block LU of the bordered Newton matrix (maximal/contact_ldu.py, native/block_lu.c): the C kernel
against its numpy twin, the solve against a dense one, fill per unknown that stays bounded as a row of
dominoes grows (the order follows the contact graph), and a pivot the static order cannot take handed
to SuperLU, which says so."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from addon.solver.maximal import contact_ldu
from addon.solver.maximal.linear import LinearSolver, NewtonMatrix, RowBlocks, bordered_matrix
from tools.contact_scenes import falling_dominoes

from .test_linear import random_pile, run

EPS = np.finfo(float).eps


def _pile_matrices() -> list:
    matrices: list = []
    run(random_pile(5), "sparse", 16, matrices)
    return [(A, rhs) for A, rhs in matrices if A.rows.count - A.n_primary >= 10]


@pytest.mark.skipif(not contact_ldu.NATIVE, reason="C kernels not built")
def test_c_block_lu_is_its_numpy_twin_and_solves_the_newton_matrix():
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
    np.testing.assert_allclose(x_np, x_c, rtol=0, atol=1e-10 * np.max(np.abs(x_c)))
    # the factor solves the equilibrated system to a backward error of a few n eps (pivot growth small)
    Md = M.toarray()
    residual = np.max(np.abs(Md @ x_c - b))
    assert residual <= len(b) * EPS * np.max(np.abs(Md) @ np.abs(x_c) + np.abs(b))
    assert c_factor.growth < 1.0 / contact_ldu.TAU


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
    """A body with a zero mass block held by six world rows with tiny -s/lam: the rows wait for the body
    (s/lam below TAU), whose pivot is then exactly zero. The matrix [[0, I], [I, E]] is regular: SuperLU,
    pivoting across blocks, solves it, and the solver names the node that failed."""
    rows = RowBlocks(a=np.full(6, -1), b=np.zeros(6, dtype=np.int64), Ga=np.zeros((6, 6)), Gb=np.eye(6),
                     Ca=np.zeros((6, 6)), Cb=2.0 * np.eye(6))
    A = NewtonMatrix(D=np.zeros((1, 6, 6)), rows=rows, n_primary=0,
                     coupling=(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 6, 6))),
                     E=scipy.sparse.csr_matrix(-1e-12 * np.eye(6)))
    solver = LinearSolver(1, [], "sparse")
    solver.factor(A)
    assert solver.factorisation == "SuperLU" and solver.fallbacks == 1
    assert "node 0" in solver.fallback and "singular pivot" in solver.fallback
    rhs = np.arange(1.0, 13.0)
    u = solver.solve(A, rhs)
    np.testing.assert_allclose(u, np.linalg.solve(bordered_matrix(A).toarray(), rhs), rtol=1e-12)

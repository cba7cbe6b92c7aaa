"""The interior-point NLP solver on problems with known answers (HS071, bounded QPs, an infeasible one), with both
barrier updates (monotone, adaptive)."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from addon.solver.native import interior_point_binding
from addon.solver.shots.nlp import NLP, solve


def _hs071(hessian: bool) -> NLP:
    def f(x):
        return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]

    def g(x):
        return np.array([x[0] * x[3] + x[3] * (x[0] + x[1] + x[2]), x[0] * x[3], x[0] * x[3] + 1,
                         x[0] * (x[0] + x[1] + x[2])])

    def c(x):
        return np.array([np.prod(x), x @ x])

    def J(x):
        return sp.csr_matrix(np.array([[np.prod(np.delete(x, i)) for i in range(4)], 2 * x]))

    def H(x, y, s):
        Hf = np.array([[2 * x[3], x[3], x[3], 2 * x[0] + x[1] + x[2]], [x[3], 0, 0, x[0]], [x[3], 0, 0, x[0]],
                       [2 * x[0] + x[1] + x[2], x[0], x[0], 0]])
        Hc = np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(4)] for i in range(4)])
        return sp.csr_matrix(s * Hf + y[0] * Hc + y[1] * 2 * np.eye(4))

    return NLP(np.ones(4), 5 * np.ones(4), f, g, c, J, np.array([25.0, 40.0]), np.array([np.inf, 40.0]),
               H if hessian else None)


@pytest.mark.parametrize("mu_strategy", ["monotone", "adaptive"])
@pytest.mark.parametrize("hessian", [True, False])
def test_hs071_reaches_the_published_optimum(hessian, mu_strategy):
    r = solve(_hs071(hessian), np.array([1.0, 5.0, 5.0, 1.0]), mu_strategy=mu_strategy)
    assert r.status == "solved"
    assert r.objective == pytest.approx(17.0140173, abs=1e-6)  # Hock & Schittkowski problem 71
    assert np.allclose(r.x, [1.0, 4.7429996, 3.8211500, 1.3794083], atol=1e-6)
    assert r.constraint_violation < 1e-9


@pytest.mark.parametrize("triangle", [sp.triu, sp.tril])
def test_a_hessian_given_by_one_triangle_is_the_whole_symmetric_matrix(triangle):
    full = _hs071(True)
    one = replace(full, hessian=lambda x, y, s: triangle(full.hessian(x, y, s), format="csr"))
    x0 = np.array([1.0, 5.0, 5.0, 1.0])
    a, b = solve(full, x0), solve(one, x0)
    assert a.iterations == b.iterations and b.status == "solved"
    np.testing.assert_allclose(b.x, a.x, rtol=1e-12, atol=1e-12)


def test_timings_account_for_the_whole_solve():
    """The four parts sum to the solve's CPU time: what no part measures is the interior point's own."""
    import time
    problem = _hs071(True)
    solve(problem, np.array([1.0, 5.0, 5.0, 1.0]))  # imports and first-call costs outside the measured solve
    t0 = time.process_time()
    r = solve(problem, np.array([1.0, 5.0, 5.0, 1.0]))
    whole = time.process_time() - t0
    assert set(r.timings) == {"evaluation", "factorisation", "line search", "interior point"}
    assert min(r.timings.values()) >= 0.0
    assert sum(r.timings.values()) == pytest.approx(whole, rel=0.05, abs=5e-4)


def test_bounded_quadratic_meets_its_kkt_conditions():
    # min |x - a|^2 s.t. sum x = 1, 0 <= x <= 0.4: the projection of a onto a capped simplex
    a = np.array([0.9, 0.5, -0.2, 0.1])
    nlp = NLP(np.zeros(4), np.full(4, 0.4), lambda x: float((x - a) @ (x - a)), lambda x: 2 * (x - a),
              lambda x: np.array([x.sum()]), lambda x: sp.csr_matrix(np.ones((1, 4))), np.ones(1), np.ones(1),
              lambda x, y, s: sp.csr_matrix(2 * s * np.eye(4)))
    r = solve(nlp, np.full(4, 0.25))
    assert r.status == "solved"
    # KKT: x = clip(a - t, 0, 0.4) with the multiplier t making the sum 1 (found by a fine scan)
    ts = np.linspace(-1, 1, 200001)
    sums = np.clip(a[None] - ts[:, None], 0, 0.4).sum(1)
    t = ts[np.argmin(np.abs(sums - 1))]
    assert np.allclose(r.x, np.clip(a - t, 0, 0.4), atol=1e-5)


def _capped_simplex(seed: int) -> tuple[NLP, np.ndarray]:
    """min |x - a|^2 s.t. sum x = 1, 0 <= x <= 0.01 over 200 variables: the projection of a onto a capped simplex,
    convex, with 140 bounds active; and its solution. a is built from the solution x*: 60 entries at the cap, 60
    between (summing to 0.4), 80 at zero, a = x* + t (t = 0.5, the row's multiplier over 2) plus, on the entries at a
    bound, a random 0.1-1 outwards (those bounds' multipliers over 2: strictly complementary, so x has the
    solver's accuracy, tol over a multiplier)."""
    rng = np.random.default_rng(seed)
    inner = 0.4 / 60 + 0.002 * (rng.random(60) - 0.5)
    x_star = np.concatenate([np.full(60, 0.01), inner - inner.mean() + 0.4 / 60, np.zeros(80)])
    push = rng.uniform(0.1, 1.0, 200) * np.concatenate([np.ones(60), np.zeros(60), -np.ones(80)])
    a = x_star + 0.5 + push
    nlp = NLP(np.zeros(200), np.full(200, 0.01), lambda x: float((x - a) @ (x - a)), lambda x: 2 * (x - a),
              lambda x: np.array([x.sum()]), lambda x: sp.csr_matrix(np.ones((1, 200))), np.ones(1), np.ones(1),
              lambda x, y, s: sp.csr_matrix(2 * s * sp.identity(200)))
    return nlp, x_star


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adaptive_barrier_reaches_the_projection_in_fewer_iterations(seed):
    # both barrier updates reach the known solution; the adaptive one (probing) in fewer iterations: the monotone
    # rule takes about one iteration per barrier value from 0.1 down to tol / 10 (10 in all against 8)
    nlp, x_star = _capped_simplex(seed)
    runs = {m: solve(nlp, np.full(200, 1 / 200), mu_strategy=m) for m in ("monotone", "adaptive")}
    for r in runs.values():
        assert r.status == "solved"
        # complementarity to tol 1e-8 leaves inactive bounds' multipliers up to 1e-8 / 0.0057 (the nearest inactive
        # bound), moving x by that over the Hessian's 2: 1e-6
        assert np.abs(r.x - x_star).max() < 1e-5
        assert r.objective == pytest.approx(float(nlp.objective(x_star)), rel=1e-7)
    assert runs["adaptive"].iterations < runs["monotone"].iterations


def test_unknown_barrier_update_is_refused():
    with pytest.raises(ValueError, match="mu_strategy"):
        solve(_hs071(True), np.array([1.0, 5.0, 5.0, 1.0]), mu_strategy="loqo")


def test_infeasible_problem_is_reported_and_progress_can_cancel():
    nlp = NLP(np.full(2, -np.inf), np.full(2, np.inf), lambda x: float(x @ x), lambda x: 2 * x,
              lambda x: np.array([x @ x + 1]), lambda x: sp.csr_matrix(2 * x[None]), np.zeros(1), np.zeros(1),
              lambda x, y, s: sp.csr_matrix((2 * s + 2 * y[0]) * np.eye(2)))
    r = solve(nlp, np.array([1.0, 2.0]))
    assert r.status == "infeasible" and r.constraint_violation >= 1.0 - 1e-9
    seen = []
    r = solve(_hs071(True), np.array([1.0, 5.0, 5.0, 1.0]), progress=lambda i, info: seen.append(i) or i < 2)
    assert r.status == "cancelled" and seen == [0, 1, 2]


def test_permutation_parity_is_the_sign_of_the_permutation_matrix():
    from addon.solver.shots.nlp import _permutation_parity
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 100, 257):
        for _ in range(10):
            p = rng.permutation(n)
            assert _permutation_parity(p) == (0 if np.linalg.det(np.eye(n)[p]) > 0 else 1)


def _random_sparse_nlp(rng, n=12, m=9) -> NLP:
    """A linear-rows NLP with fixed variables (x_lower == x_upper), one-sided and two-sided bounds, equality and
    inequality rows, and a random sparse Jacobian and Hessian (unsorted CSR indices): for the reduction's maps."""
    xl = rng.uniform(-2, -1, n)
    xu = rng.uniform(1, 2, n)
    xl[[1, 6]] = xu[[1, 6]] = 0.5  # fixed
    xl[3], xu[8] = -np.inf, np.inf
    A = sp.random(m, n, density=0.4, random_state=np.random.RandomState(1), format="csr") * 300.0
    A = sp.csr_matrix((A.data[::-1].copy(), A.indices[::-1].copy(), A.indptr), shape=A.shape)  # unsorted rows
    B = sp.random(n, n, density=0.3, random_state=np.random.RandomState(2), format="csr")
    cl = rng.uniform(-1, 0, m)
    cu = np.where(np.arange(m) % 3 == 0, cl, cl + 1.0)
    cu[4] = np.inf
    return NLP(xl, xu, lambda x: float(x @ x), lambda x: 2 * x, lambda x: A @ x, lambda x: A, cl, cu,
               lambda x, y, s: B * s)


def test_reduced_jacobian_and_hessian_are_the_free_columns_with_the_slacks_scaled():
    """_Reduced's index maps against dense algebra: J over z = (free x, slacks) is the free columns of the NLP's
    Jacobian and -1 at each (inequality row, its slack), each row scaled; J^T y; the Hessian's free block."""
    from addon.solver.shots.nlp import _Reduced

    rng = np.random.default_rng(3)
    nlp = _random_sparse_nlp(rng)
    P = _Reduced(nlp, rng.uniform(-0.5, 0.5, nlp.n))
    z = rng.uniform(-0.5, 0.5, P.nx + P.ns)
    dense = np.asarray(nlp.jacobian(P.full(z)).todense())
    slack = np.zeros((P.m, P.ns))
    slack[P.ineq, np.arange(P.ns)] = -1.0
    expected = P.c_scale[:, None] * np.hstack([dense[:, P.free], slack])
    J = P.jac(z)
    np.testing.assert_array_equal(J.toarray(), expected)
    assert np.all(np.diff(J.indices[J.indptr[0]:J.indptr[1]]) > 0)  # each row's columns in order
    y = rng.standard_normal(P.m)
    np.testing.assert_allclose(P.jt(J, y), expected.T @ y, rtol=1e-14, atol=1e-12)
    assert np.array_equal(P.jt(J, y), J.T @ y)  # scipy's product itself: the same sums in the same order
    np.testing.assert_allclose(P.c_scale, np.minimum(1.0, 100.0 / np.maximum(np.abs(dense[:, P.free]).max(1), 1e-300)))
    H = np.asarray(nlp.hessian(None, None, 1.0).todense())
    layout_hessian = P._layout_hessian(z)
    free_block = sp.coo_matrix((layout_hessian.data, (layout_hessian.row, layout_hessian.col)),
                               shape=layout_hessian.shape)
    np.testing.assert_array_equal(free_block.toarray(), H[np.ix_(P.free, P.free)])


def test_reduced_hessian_sums_the_nlps_coo_data_bit_for_bit():
    """A FixedPattern Hessian whose data are COO data summed into its entries (raw, summed: a transcription's blocks'
    Hessians, SparsityPattern.values): _Reduced.hess_data sums raw's data straight into the symmetrised Hessian over
    z, bit for bit as from the values, which is 0.5 (H + H^T) over the free variables (the whole of an entry whose
    mirror is absent; slack rows empty) to round-off."""
    import dataclasses

    from addon.solver.shots.nlp import FixedPattern, _Reduced

    rng = np.random.default_rng(6)
    plain = _random_sparse_nlp(rng)
    B = sp.csr_matrix(plain.hessian(None, None, 1.0))
    parts = rng.integers(1, 4, B.nnz)  # each entry split into 1 to 3 COO data, the COO entries shuffled
    summed = np.repeat(np.arange(B.nnz), parts)
    shuffle = rng.permutation(len(summed))
    summed, weights = summed[shuffle], rng.uniform(0.1, 1.0, len(summed))[shuffle]
    B_of_x = B.data[summed] * weights / np.bincount(summed, weights)[summed]  # summing back to B's entries

    def raw(x, y, s):
        return B_of_x * s * (1.0 + x[B.indices[summed]] ** 2)

    def values(x, y, s):
        return np.bincount(summed, raw(x, y, s), minlength=B.nnz)

    def hessian_data(**composed):
        return FixedPattern(B.indices, B.indptr, B.shape, values, **composed)

    from_values = _Reduced(dataclasses.replace(plain, hessian_data=hessian_data()), np.zeros(plain.n))
    composed = _Reduced(dataclasses.replace(plain, hessian_data=hessian_data(raw=raw, summed=summed)),
                        np.zeros(plain.n))
    for _ in range(3):
        z = rng.uniform(-0.5, 0.5, composed.nx + composed.ns)
        y = rng.standard_normal(composed.m)
        H = composed.hess_data(z, y)
        assert H.tobytes() == from_values.hess_data(z, y).tobytes()
        W = composed.plus_diagonal(H, np.zeros(composed.nx + composed.ns)).toarray()
        x = composed.full(z)
        dense = sp.csr_matrix((values(x, y, composed.f_scale), B.indices, B.indptr), shape=B.shape).toarray()
        has = B.toarray() != 0
        both = np.where(has & has.T, 0.5, 1.0)  # an entry whose mirror is absent counts whole
        expected = np.zeros_like(W)
        expected[:composed.nx, :composed.nx] = (both * (dense + dense.T))[np.ix_(composed.free, composed.free)]
        np.testing.assert_allclose(W, expected, rtol=1e-14, atol=1e-14 * np.abs(expected).max())


def test_reduced_jacobian_composes_the_nlps_gather_bit_for_bit():
    """A FixedPattern Jacobian whose data are raw(x)[picked] (a transcription's window Jacobians:
    SparsityPattern.gather): _Reduced.jac composes picked with its own gather once and takes the reduced matrix straight
    from raw(x); at points after the start (the first Jacobian comes from the values) it is the matrix _Reduced builds
    from values(x), bit for bit, and the free columns of the NLP's Jacobian with the slacks' -1, each row scaled."""
    import dataclasses

    from addon.solver.shots.nlp import FixedPattern, _Reduced

    rng = np.random.default_rng(5)
    plain = _random_sparse_nlp(rng)
    A = sp.csr_matrix(plain.jacobian(None))
    nnz, columns = A.nnz, A.indices
    picked = rng.permutation(4 * nnz)[:nnz]  # the data's positions in a larger raw array, out of order

    def values(x):  # data depending on x (rows no longer linear), in A's CSR order
        return A.data * (1.0 + x[columns] ** 2)

    def raw(x):
        out = rng.standard_normal(4 * nnz)  # the entries the matrix does not pick: anything
        out[picked] = values(x)
        return out

    def jacobian_data(**composed):
        return FixedPattern(A.indices, A.indptr, A.shape, values, **composed)

    from_values = _Reduced(dataclasses.replace(plain, jacobian_data=jacobian_data()), np.zeros(plain.n))
    composed = _Reduced(dataclasses.replace(plain, jacobian_data=jacobian_data(raw=raw, picked=picked)),
                        np.zeros(plain.n))
    assert composed.ns > 0
    for _ in range(3):
        z = rng.uniform(-0.5, 0.5, composed.nx + composed.ns)
        expected = from_values.jac(z).toarray()
        J = composed.jac(z)
        assert J.toarray().tobytes() == expected.tobytes()
        x = composed.full(z)
        dense = sp.csr_matrix((values(x), A.indices, A.indptr), shape=A.shape).toarray()
        slack = np.zeros((composed.m, composed.ns))
        slack[composed.ineq, np.arange(composed.ns)] = -1.0
        expected_scaled = composed.c_scale[:, None] * np.hstack([dense[:, composed.free], slack])
        np.testing.assert_array_equal(J.toarray(), expected_scaled)


_STEP_TO_BOUNDS = [interior_point_binding.step_to_bounds_numpy] + (
    [interior_point_binding.step_to_bounds] if interior_point_binding.LIB is not None else [])


@pytest.mark.parametrize("_step_to_bounds", _STEP_TO_BOUNDS, ids=["numpy", "C"][:len(_STEP_TO_BOUNDS)])
@pytest.mark.parametrize("tau", [0.99, 1.0])
def test_step_to_bounds_stops_at_the_fraction_of_the_nearest_bound(tau, _step_to_bounds):
    """The fraction-to-boundary rule (numpy and C) against its definition, entry by entry: the largest alpha <= 1 with
    every distance to a finite bound kept at least (1 - tau) of itself; entries without a bound (inf) limit nothing."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        dist_lo, dist_up = rng.uniform(0.1, 2.0, 50), rng.uniform(0.1, 2.0, 50)
        dist_lo[rng.random(50) < 0.3] = np.inf
        dist_up[rng.random(50) < 0.3] = np.inf
        dx = rng.standard_normal(50) * rng.choice([0.1, 10.0])
        dx[::7] = 0.0
        expected = min([1.0] + [-tau * d / v for d, v in zip(dist_lo, dx) if v < 0 and np.isfinite(d)]
                       + [tau * d / v for d, v in zip(dist_up, dx) if v > 0 and np.isfinite(d)])
        alpha = _step_to_bounds(dist_lo, dist_up, dx, tau)
        assert alpha == pytest.approx(expected, rel=1e-15)
        lo, up = np.isfinite(dist_lo), np.isfinite(dist_up)
        assert np.all(dist_lo[lo] + alpha * dx[lo] >= (1 - tau) * dist_lo[lo] - 1e-12)
        assert np.all(dist_up[up] - alpha * dx[up] >= (1 - tau) * dist_up[up] - 1e-12)


@pytest.mark.parametrize("_step_to_bounds", _STEP_TO_BOUNDS, ids=["numpy", "C"][:len(_STEP_TO_BOUNDS)])
def test_step_to_bounds_is_one_when_nothing_limits_it(_step_to_bounds):
    """No move towards a bound, or only towards none (an infinite step at an unbounded entry: a nan ratio): alpha 1."""
    assert _step_to_bounds(np.ones(3), np.ones(3), np.zeros(3), 0.99) == 1.0
    with np.errstate(invalid="ignore"):  # inf / inf
        assert _step_to_bounds(np.full(3, np.inf), None, np.array([-np.inf, 1.0, 0.0]), 0.99) == 1.0
        assert _step_to_bounds(np.array([np.inf, 1.0]), None, np.array([-np.inf, -4.0]), 1.0) == 0.25


_VECTORS = [interior_point_binding.Vectors] + (
    [interior_point_binding.NativeVectors] if interior_point_binding.LIB is not None else [])


@pytest.mark.parametrize("vectors", _VECTORS, ids=["numpy", "C"][:len(_VECTORS)])
def test_log_barrier_is_the_sum_of_log_distances_and_minus_inf_on_or_outside_a_bound(vectors):
    """The barrier's log terms over the finite bounds only; -inf as soon as one distance is <= 0, whatever
    another (nan) is."""
    bounds = vectors(np.array([0.0, -np.inf, 1.0]), np.array([np.inf, 2.0, 3.0]), 0)
    assert bounds.log_barrier(np.array([0.5, 1.5, 2.0])) == pytest.approx(np.log(0.5 * 0.5 * 1.0 * 1.0))
    for outside in ([0.0, 1.0, 2.0], [0.5, 2.5, 2.0], [np.nan, 1.0, 0.5]):
        assert bounds.log_barrier(np.array(outside)) == -np.inf


@pytest.mark.parametrize("vectors", _VECTORS, ids=["numpy", "C"][:len(_VECTORS)])
def test_log_barrier_sums_each_kind_of_bound_as_numpy_does(vectors):
    """Vectors.log_barrier (the distances in one array, by the C kernel or its numpy twin, one log call) is numpy's
    sum of the logs over the lower bounds plus that over the upper ones, bit for bit: the iterates depend on these
    sums through the line search."""
    rng = np.random.default_rng(14)
    n = 3000
    lower = np.where(rng.random(n) < 0.7, rng.uniform(-3.0, -1.0, n), -np.inf)
    upper = np.where(rng.random(n) < 0.7, rng.uniform(1.0, 3.0, n), np.inf)
    bounds = vectors(lower, upper, 0)
    lo, up = np.isfinite(lower), np.isfinite(upper)
    for _ in range(10):
        x = rng.uniform(-0.99, 0.99, n) * rng.choice([1.0, 1e-6], n)
        expected = float(np.sum(np.log(x[lo] - lower[lo])) + np.sum(np.log(upper[up] - x[up])))
        assert bounds.log_barrier(x) == expected


def test_multipliers_kept_near_the_central_path_are_clipped_as_by_np_clip():
    """near_central_path_numpy (maximum then minimum in place) is np.clip to [mu / (1e10 d), 1e10 mu / d] bit for bit,
    the zeros of entries without a bound (d inf) included."""
    from addon.solver.native.interior_point_binding import near_central_path_numpy as _near_central_path

    rng = np.random.default_rng(8)
    dist = rng.uniform(1e-6, 10.0, 300)
    dist[::5] = np.inf
    z = rng.uniform(0.0, 1.0, 300) * rng.choice([1e-16, 1.0, 1e16], 300)
    z[::5] = 0.0
    for mu in (1e-1, 1e-9):
        expected = np.clip(z, mu / (1e10 * dist), 1e10 * mu / dist)
        clipped = _near_central_path(z.copy(), mu, dist)
        assert np.array_equal(clipped, expected) and np.array_equal(np.signbit(clipped), np.signbit(expected))
        assert np.any(clipped != z)  # the limits bite on some entries


def test_unique_inverse_is_numpys_unique():
    """_unique_inverse (a stable sort, which finds sorted runs) gives np.unique's keys and inverse, with repeated
    keys, sorted runs and nothing at all."""
    from addon.solver.shots.nlp import _unique_inverse

    rng = np.random.default_rng(9)
    for n in (0, 1, 60, 3000):
        key = np.concatenate([rng.integers(0, n // 3 + 1, n), np.sort(rng.integers(0, 2 * n + 1, n)), np.arange(n)])
        unique, inverse = _unique_inverse(key.astype(np.int64))
        expected_unique, expected_inverse = np.unique(key, return_inverse=True)
        assert np.array_equal(unique, expected_unique) and np.array_equal(inverse, expected_inverse)
        assert np.array_equal(unique[inverse], key)


def test_the_start_point_is_evaluated_once_for_the_scaling_and_the_first_iteration(monkeypatch):
    """_Reduced evaluates the gradient, the Jacobian and (with slacks) the rows at the start point for the scaling;
    the solve's first evaluations there take those numbers (each callback called once at the start point), and the
    iterates are bit for bit those of evaluating them again."""
    from addon.solver.shots import nlp as nlpmod

    x0 = np.array([1.5, 4.5, 3.5, 1.5])  # inside the bounds by more than the push's margin: the start point itself
    calls = {"gradient": 0, "jacobian": 0, "constraints": 0}
    problem = _hs071(True)

    def counted(name):
        def evaluate(x):
            calls[name] += np.array_equal(x, x0)
            return getattr(problem, name)(x)
        return evaluate

    reused = solve(replace(problem, **{name: counted(name) for name in calls}), x0)
    assert calls == {"gradient": 1, "jacobian": 1, "constraints": 1} and reused.status == "solved"
    monkeypatch.setattr(nlpmod._Reduced, "_at_start", lambda self, what, x: None)
    again = solve(problem, x0)
    assert again.iterations == reused.iterations and np.array_equal(again.x, reused.x)



def test_consecutive_indices_read_as_a_slice_select_what_they_index():
    """_run: consecutive ascending indices become the slice that selects (and assigns) the same entries; indices with
    a gap, or none, stay as they are."""
    from addon.solver.shots.nlp import _run

    x = np.arange(10.0) ** 2
    for index in (np.arange(3, 8), np.array([0, 1, 2, 4]), np.arange(10), np.zeros(0, int)):
        at = _run(index)
        assert isinstance(at, slice) == (len(index) > 0 and bool(np.all(np.diff(index) == 1)))
        assert np.array_equal(x[at], x[index])
        y, expected = x.copy(), x.copy()
        y[at] -= 1.0
        expected[index] -= 1.0
        assert np.array_equal(y, expected)

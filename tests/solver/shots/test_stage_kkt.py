"""The stage-structured KKT factorisation (shots/stage_kkt.py, its C kernel native/stage_kkt.c) against the sparse
LU it falls back to and against dense linear algebra."""

import numpy as np
import pytest
import scipy.sparse as sp

from addon.solver.presets import shot_preset_path
from addon.solver.shots import mechanism_shots
from addon.solver.shots import nlp as nlpmod
from addon.solver.shots import stage_kkt
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.stage_kkt import (NATIVE, CondensedFactor, StageBreakdown, StageFactor, StageLayout, StagePlan,
                                         kkt_residual, stage_layout)
from addon.solver.shots.vehicle_shot import transcribe


def _kkt_at_start(name: str, seed: int):
    """The reduced problem of a demo shot at its interior start point, with random multipliers: (W, J, layout,
    condensed), condensed: the layout without the slacks and the slacks' (rows, coefficients)."""
    tr = transcribe(load_shot(name))
    return _kkt_at(tr.nlp, tr.x0(), seed)


def _kkt_at(nlp: nlpmod.NLP, x0: np.ndarray, seed: int):
    """_kkt_at_start for any NLP and start point x0."""
    P = nlpmod._Reduced(nlp, x0)
    z = nlpmod._push_inside(np.concatenate([P.x_full[P.free], P.s0]), P.zl, P.zu)
    layout = P.kkt_layout(z)
    y = np.random.default_rng(seed).standard_normal(P.m)
    sigma = (np.where(np.isfinite(P.zl), 1.0 / np.maximum(z - P.zl, 1e-300), 0.0)
             + np.where(np.isfinite(P.zu), 1.0 / np.maximum(P.zu - z, 1e-300), 0.0))
    W = P.plus_diagonal(P.hess_data(z, y), sigma).copy()
    return W, P.jac(z), layout, (P.kkt_layout(z, slacks=False), P.ineq, -P.c_scale[P.ineq])


needs_native = pytest.mark.skipif(not NATIVE, reason="C kernels not built (make kernels)")


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["parallel_parking", "car_tunnel", "helicopter_canyon_landing", "boat_docking"])
def test_stage_solve_and_inertia_match_the_sparse_lu(name):
    W, J, layout, (condensed, rows, coef) = _kkt_at_start(name, seed=3)
    assert isinstance(layout, StageLayout), layout
    assert isinstance(condensed, StageLayout) and condensed.n_unknowns == layout.n_unknowns - len(rows)
    assert layout.n_chunks >= 95 and layout.band == 1  # one block per stage, not one big block
    lu = nlpmod._SparseLU(W, J, 0.0, 0.0)
    rhs = np.random.default_rng(4).standard_normal(W.shape[0] + J.shape[0])
    b, _ = nlpmod._refined(lu, rhs)
    stage = StageFactor(layout, W, J, 0.0, 0.0)
    # the slacks eliminated first (a smaller block per stage): the same solution and parity
    factors = [stage, CondensedFactor(condensed, W, J, 0.0, 0.0, rows, coef)]
    if NATIVE:  # and the inequality rows of one stage too: blocks of the variables and equality rows only
        plan = StagePlan(condensed, rows, coef)
        factors.append(plan.factor(W, J, 0.0, 0.0))
        assert len(plan.elim) == len(rows) and plan.layout.n_unknowns == condensed.n_unknowns - len(rows)
        sol = factors[-1].solve(rhs)
        assert np.array_equal(factors[-1].residual(sol, rhs), kkt_residual(W, J, 0.0, 0.0, sol, rhs))
    eig = np.linalg.eigvalsh(lu.K.toarray()) if name == "parallel_parking" else None
    for factor in factors:
        a, accurate = nlpmod._refined(factor, rhs)
        assert accurate
        assert factor.parity == nlpmod._negative_parity(lu.lu)
        if eig is None:
            # the residual bound of the refined solve, scaled: both are backward stable
            assert np.max(np.abs(factor.residual(a, rhs))) <= 1e-9 * (1 + np.max(np.abs(rhs)))
            continue
        # two backward-stable solves differ by at most about cond(K) eps (relative)
        cond = np.max(np.abs(eig)) / np.min(np.abs(eig))
        assert np.max(np.abs(a - b)) <= 10 * cond * np.finfo(float).eps * np.max(np.abs(b))
        assert factor.parity == int(np.sum(eig < 0)) % 2
    if eig is not None:
        # the exact count from the pivot blocks is the dense eigenvalue count (Sylvester's law of inertia)
        assert stage.negatives() == int(np.sum(eig < 0))


def test_four_bar_pivot_blocks_solve_its_kkt_to_round_off_without_refinement():
    """The four-bar shot's KKT matrix (a closed loop: loop rows and their multipliers at every step, the rest rows
    p_N = Dh^T mu on the last step) at its start point: every pivot block of the stage recursion is nonsingular,
    so one solve (C and numpy twin) leaves a residual of round-off, as the sparse LU's does. The rest and loop
    rows of the last step but one are five rows on four variables of their stage: in a block of their own its
    pivot was singular (cond 1e17), the first solve's residual 1e-4 to 1, and refinement fell back to sparse LU."""
    P = mechanism_shots._problem(load_shot(shot_preset_path("four_bar_swing")))
    x0 = mechanism_shots.initial_guess(P, mechanism_shots.keyed_coordinates(P))
    W, J, _, (condensed, rows, coef) = _kkt_at(mechanism_shots._nlp(P), x0, seed=5)
    assert isinstance(condensed, StageLayout), condensed
    assert condensed.n_chunks >= P.tx.steps - 2  # one block per step, two merged at most
    rhs = np.random.default_rng(6).standard_normal(W.shape[0] + J.shape[0])
    lu = nlpmod._SparseLU(W, J, 0.0, 0.0)
    scale = np.abs(lu.K).sum(axis=1).max() * np.max(np.abs(lu.solve(rhs)))  # |K| |sol|: backward-stable residual
    factors = [CondensedFactor(condensed, W, J, 0.0, 0.0, rows, coef)]
    if NATIVE:
        factors.append(StagePlan(condensed, rows, coef).factor(W, J, 0.0, 0.0))
    for factor in factors:
        assert np.max(np.abs(factor.residual(factor.solve(rhs), rhs))) <= 1e-13 * scale
        assert factor.parity == nlpmod._negative_parity(lu.lu)


def _layout_calls(name: str, monkeypatch) -> list[tuple[tuple, dict]]:
    """The arguments of every stage_layout call of the interior point's set-up (_Reduced.kkt_layout, with and
    without the slacks) on a demo shot's start point."""
    calls = []
    record = lambda *args, **kw: calls.append((args, kw)) or stage_layout(*args, **kw)  # noqa: E731
    with monkeypatch.context() as m:
        m.setattr(nlpmod, "stage_layout", record)
        if name == "four_bar_swing":
            P = mechanism_shots._problem(load_shot(shot_preset_path(name)))
            _kkt_at(mechanism_shots._nlp(P), mechanism_shots.initial_guess(P, mechanism_shots.keyed_coordinates(P)), 5)
        else:
            _kkt_at_start(name, seed=3)
    return calls


@pytest.mark.parametrize("name", ["parallel_parking", "helicopter_canyon_landing", "four_bar_swing"])
def test_stage_layout_finishes_only_the_placements_that_can_be_cheaper(name, monkeypatch):
    """stage_layout finishes a placement of the rows (its singular blocks merged, its StageLayout) only when its
    cost bound does not rule it out: the layouts (with and without slacks, for C and for the numpy twin) are those
    of finishing both placements and keeping the cheaper (stage_kkt._cost_bound 0)."""
    calls = _layout_calls(name, monkeypatch)
    for (args, kw), padded in [(call, padded) for call in calls for padded in (False, True)]:
        layout = stage_layout(*args, **kw, padded=padded)
        with monkeypatch.context() as m:
            m.setattr(stage_kkt, "_cost_bound", lambda placement, padded: 0)
            both = stage_layout(*args, **kw, padded=padded)
        assert isinstance(layout, StageLayout) and isinstance(both, StageLayout)
        for key, value in vars(both).items():
            assert np.array_equal(vars(layout)[key], value), key


@pytest.mark.parametrize("name", ["parallel_parking", "four_bar_swing"])
def test_stage_layout_of_entries_is_that_of_the_scipy_matrices(name, monkeypatch):
    """The interior point hands stage_layout its matrices as stage_kkt.Entries (no scipy matrix built): the layout
    is the one of the same matrices given as scipy matrices (J in CSR, H in coordinates), array for array."""
    calls = _layout_calls(name, monkeypatch)
    assert len(calls) == 2
    for args, kw in calls:
        var_stage, J, H, *rest = args
        assert isinstance(J, stage_kkt.Entries) and isinstance(H, stage_kkt.Entries)
        matrices = [sp.coo_matrix((M.data, (M.row, M.col)), shape=M.shape) for M in (J, H)]
        layout = stage_layout(*args, **kw)
        expected = stage_layout(var_stage, matrices[0].tocsr(), matrices[1], *rest, **kw)
        assert isinstance(layout, StageLayout) and set(vars(layout)) == set(vars(expected))
        for key, value in vars(expected).items():
            assert np.array_equal(vars(layout)[key], value), key


def _random_stage_system(rng, sizes, nb: int):
    """A random symmetric indefinite KKT matrix K (dense) in a stage layout: each chunk of the given sizes holds a
    third of rows and the rest variables, nb border variables; unknowns shuffled (variables first, then rows),
    coupled only within a chunk, to the next chunk and to the border. Returns (layout, K, nz)."""
    sizes = np.asarray(sizes)
    var = rng.permutation(np.concatenate([np.repeat(np.arange(len(sizes)), sizes - sizes // 3), np.full(nb, -1)]))
    chunk = np.concatenate([var, rng.permutation(np.repeat(np.arange(len(sizes)), sizes // 3))])
    n, nz = len(chunk), len(var)
    K = rng.standard_normal((n, n))
    far = (chunk[:, None] >= 0) & (chunk[None, :] >= 0) & (np.abs(chunk[:, None] - chunk[None, :]) > 1)
    K[far | (rng.random((n, n)) < 0.4)] = 0.0
    K = K + K.T
    K[nz:, nz:] = 0.0  # the rows' block is -dc I
    return StageLayout(chunk, len(sizes), 1), K, nz


def _native(layout, K, nz, dw=0.0, dc=0.0):
    """The C factorisation of K (no slacks: a StagePlan that eliminates nothing, every unknown in its block)."""
    plan = StagePlan(layout, np.zeros(0, np.int64), np.zeros(0))
    return plan.factor(sp.csc_matrix(K[:nz, :nz]), sp.csr_matrix(K[nz:, :nz]), dw, dc)


@needs_native
def test_native_factor_solves_random_stage_systems_with_the_right_inertia_parity():
    rng = np.random.default_rng(7)
    for sizes, nb, dw, dc in (([5, 3, 7, 4, 6, 2, 9], 0, 0.0, 0.0), ([4, 6, 5, 5, 3, 12], 3, 0.5, 1e-3),
                              ([8] * 10, 1, 0.0, 0.0)):
        layout, K, nz = _random_stage_system(rng, sizes, nb)
        native = _native(layout, K, nz, dw, dc)
        twin = StageFactor(layout, sp.csc_matrix(K[:nz, :nz]), sp.csr_matrix(K[nz:, :nz]), dw, dc)
        K += np.diag(np.where(np.arange(len(K)) < nz, dw, -dc))
        rhs = rng.standard_normal(len(K))
        exact = np.linalg.solve(K, rhs)
        bound = 10 * np.linalg.cond(K) * np.finfo(float).eps * np.max(np.abs(exact))
        for factor in (native, twin):
            assert np.max(np.abs(factor.solve(rhs) - exact)) <= bound
            # the residual of the exact solution through the factor's own K is round-off: K is the same matrix
            assert np.max(np.abs(factor.residual(exact, rhs))) <= 1e-13 * np.abs(K).sum(axis=1).max() * np.max(
                np.abs(exact))
        assert native.parity == twin.parity == int(np.sum(np.linalg.eigvalsh(K) < 0)) % 2


@needs_native
def test_native_factor_reports_singular_pivots_far_couplings_and_wrong_shapes():
    rng = np.random.default_rng(8)
    layout, K, nz = _random_stage_system(rng, [4, 4, 4, 4], 0)
    first = layout.chunk == 0
    K[np.ix_(first, first)] = 0.0  # chunk 0's own block is zero: its pivot is singular
    with pytest.raises(StageBreakdown, match="pivot block is singular"):
        _native(layout, K, nz)
    K[np.ix_(first, first)] = np.eye(4)
    i, j = np.flatnonzero(layout.chunk[:nz] == 0)[0], np.flatnonzero(layout.chunk[:nz] == 2)[0]
    K[i, j] = K[j, i] = 1.0  # two variables of chunks 0 and 2
    with pytest.raises(StageBreakdown, match="more than one apart"):
        _native(layout, K, nz)
    with pytest.raises(ValueError, match="do not fit a layout"):
        StagePlan(layout, np.zeros(0, np.int64), np.zeros(0)).factor(
            sp.csc_matrix(K[:nz - 1, :nz - 1]), sp.csr_matrix(K[nz:, :nz - 1]), 0.0, 0.0)


def _random_program_kkt(rng, n_stages: int = 8):
    """A random interior-point KKT system with the shots' structure: 3 variables a stage and one of no stage (a
    border), 2 equality rows a stage coupling it to the next, inequality rows with a slack each touching one
    stage, two adjacent stages, or three (the last kept in the blocks: its fill would span three stages).
    Returns (W over z = (x, slacks) CSC, J over z CSR, layout of x and the rows, slack rows, slack coefficients,
    number of rows spanning three stages)."""
    var_stage = np.concatenate([np.repeat(np.arange(n_stages), 3), [-1]])
    nx = len(var_stage)
    stage_vars = [np.flatnonzero(var_stage == k) for k in range(n_stages)]
    rows, eq = [], []
    for k in range(n_stages):
        near = stage_vars[k] if k + 1 == n_stages else np.concatenate([stage_vars[k], stage_vars[k + 1]])
        rows += [rng.choice(near, min(4, len(near)), replace=False) for _ in range(2 if k + 1 < n_stages else 1)]
        eq += [True] * (2 if k + 1 < n_stages else 1)
        rows += [rng.choice(stage_vars[k], 2, replace=False), np.append(stage_vars[k][:1], nx - 1)]
        eq += [False, False]
        if k == 0:  # an odd number of eliminated rows: each is a negative eigenvalue of K
            rows.append(stage_vars[k][1:])
            eq.append(False)
        if 0 < k < n_stages - 1:
            rows += [np.concatenate([stage_vars[k][:1], stage_vars[k + 1][:1]]),
                     np.concatenate([stage_vars[k - 1][:1], stage_vars[k][:1], stage_vars[k + 1][:1]])]
            eq += [False, False]
    eq = np.array(eq)
    m, ineq = len(rows), np.flatnonzero(~eq)
    ns = len(ineq)
    Jx = np.zeros((m, nx))
    for i, cols in enumerate(rows):
        Jx[i, cols] = rng.standard_normal(len(cols))
    coef = -rng.uniform(0.5, 2.0, ns)
    J = np.hstack([Jx, np.zeros((m, ns))])
    J[ineq, nx + np.arange(ns)] = coef
    near = np.abs(var_stage[:, None] - var_stage[None, :]) <= 1
    Wx = rng.standard_normal((nx, nx)) * (near | (var_stage[:, None] < 0) | (var_stage[None, :] < 0))
    Wx = Wx + Wx.T
    W = np.zeros((nx + ns, nx + ns))
    W[:nx, :nx] = Wx
    W[nx + np.arange(ns), nx + np.arange(ns)] = rng.uniform(0.1, 10.0, ns)
    layout = stage_layout(var_stage, sp.csr_matrix(Jx), sp.csr_matrix(Wx), np.full(nx, -1), soft_rows=~eq)
    assert isinstance(layout, StageLayout), layout
    return sp.csc_matrix(W), sp.csr_matrix(J), layout, ineq, coef, n_stages - 2


@needs_native
def test_planned_factor_eliminates_inequality_rows_and_matches_a_dense_solve():
    """StagePlan: slacks and the inequality rows within two adjacent stages eliminated, a row over three stages
    kept; the solution of the whole K and the parity of its negative eigenvalues equal the dense ones."""
    rng = np.random.default_rng(11)
    W, J, layout, rows, coef, wide = _random_program_kkt(rng)
    plan = StagePlan(layout, rows, coef)
    nz, m = W.shape[0], J.shape[0]
    for dw, dc in ((0.0, 0.0), (0.3, 1e-3)):
        factor = plan.factor(W, J, dw, dc)
        assert len(plan.elim) == len(rows) - wide and plan.layout.n_unknowns == layout.n_unknowns - len(plan.elim)
        K = sp.bmat([[W + dw * sp.identity(nz), J.T], [J, -dc * sp.identity(m)]]).toarray()
        rhs = rng.standard_normal(nz + m)
        exact = np.linalg.solve(K, rhs)
        bound = 10 * np.linalg.cond(K) * np.finfo(float).eps * np.max(np.abs(exact))
        assert np.max(np.abs(factor.solve(rhs) - exact)) <= bound
        assert factor.parity == int(np.sum(np.linalg.eigvalsh(K) < 0)) % 2
        # the C residual is the numpy one's twin, bit for bit (refinement, and so the iterates, must not depend
        # on which ran)
        assert np.array_equal(factor.residual(exact, rhs), kkt_residual(W, J, dw, dc, exact, rhs))
    # a new pattern (one more entry in a kept row) is planned again; a slack's coupling to x breaks the plan
    J2 = J.tolil()
    J2[0, 0] = J2[0, 0] + 1.0
    factor = plan.factor(W, J2.tocsr(), 0.0, 0.0)
    K = sp.bmat([[W, J2.T], [J2, None]]).toarray()
    assert np.allclose(factor.solve(rhs), np.linalg.solve(K, rhs), rtol=0, atol=1e-9 * np.max(np.abs(rhs)))
    W2 = W.tolil()
    W2[0, nz - 1] = W2[nz - 1, 0] = 1.0
    with pytest.raises(StageBreakdown, match="slack"):
        plan.factor(W2.tocsc(), J, 0.0, 0.0)


@needs_native
def test_newton_step_in_one_c_call_matches_the_numpy_factor_and_rejects_the_wrong_inertia_parity():
    """StagePlan.newton_step (fill, factor, parity test, solve and refinement in one C call): where the parity of
    K's negative eigenvalues (dense) is m's, the refined solution of the numpy twin (CondensedFactor + nlp._refined)
    to round-off and that of the separate C calls bit for bit, and its step's curvature numpy's to round-off; where
    it is not, no solution."""
    rng = np.random.default_rng(5)
    W, J, layout, rows, coef, _ = _random_program_kkt(rng)
    plan = StagePlan(layout, rows, coef)
    nz, m = W.shape[0], J.shape[0]
    outcomes = set()
    for dw, dc in ((0.0, 0.0), (0.05, 0.0), (0.3, 1e-3), (1.0, 0.0), (3.0, 0.0), (30.0, 1e-6)):
        K = sp.bmat([[W + dw * sp.identity(nz), J.T], [J, -dc * sp.identity(m)]]).toarray()
        right = int(np.sum(np.linalg.eigvalsh(K) < 0)) % 2 == m % 2
        rhs = rng.standard_normal(nz + m)
        factor, sol, accurate = plan.newton_step(W, J, dw, dc, rhs)
        outcomes.add(right)
        assert factor.parity == int(np.sum(np.linalg.eigvalsh(K) < 0)) % 2
        if not right:
            assert sol is None and not accurate and factor.curvature is None
            continue
        reference, reference_accurate = nlpmod._refined(CondensedFactor(layout, W, J, dw, dc, rows, coef), rhs)
        assert accurate and reference_accurate
        bound = 10 * np.linalg.cond(K) * np.finfo(float).eps * np.max(np.abs(reference))
        assert np.max(np.abs(sol - reference)) <= bound
        separate, _ = nlpmod._refined(plan.factor(W, J, dw, dc), rhs)
        assert np.array_equal(sol, separate)
        # the step's curvature for the inertia-free test, from the same call: numpy's to round-off of its terms
        dz, A = sol[:nz], abs(W)
        scale = abs(dz) @ (A @ abs(dz)) + dw * (dz @ dz)
        wanted = (dz @ (W @ dz) + dw * (dz @ dz), dz @ dz)
        assert np.all(np.abs(np.subtract(factor.curvature, wanted)) <= 1e-13 * np.array([scale, dz @ dz]))
        # the factor it leaves is the one the line search's second-order corrections solve with
        factor, sol, _ = plan.newton_step(W, J, dw, dc, rhs)
        assert np.max(np.abs(factor.solve(rhs) - sol)) <= bound
    assert outcomes == {True, False}  # both outcomes were exercised
    # breakdowns: a slack coupled to x, a slack's diagonal not positive
    W2 = W.tolil()
    W2[0, nz - 1] = W2[nz - 1, 0] = 1.0
    with pytest.raises(StageBreakdown, match="slack to another unknown"):
        plan.newton_step(W2.tocsc(), J, 0.0, 0.0, rhs)
    with pytest.raises(StageBreakdown, match="slack's diagonal"):
        plan.newton_step(W, J, -20.0, 0.0, rhs)


@needs_native
def test_entries_that_are_zero_at_a_point_give_the_steps_of_the_pattern_without_them():
    """The C kernel reads each coupling block C_k at its entries only (the plan's list; the fill zeroes no other
    place of C_k): a column whose entries are all zero at this point (explicit zeros in J) gives the step, parity
    and curvature of the pattern without them, bit for bit, also with NaN elsewhere in the kernel's storage."""
    rng = np.random.default_rng(9)
    W, J, layout, rows, coef, _ = _random_program_kkt(rng)
    nz, m = W.shape[0], J.shape[0]
    dense = J.toarray()
    stage = layout.chunk[:nz - len(rows)]
    near = np.abs(stage[None, :] - stage[:, None]) <= 1
    # explicit zeros of the equality rows at every variable of their stages they do not touch
    equality = np.setdiff1d(np.arange(m), rows)
    touched = dense[equality, :len(stage)] != 0
    extra = (touched @ near > 0) & ~touched
    r, c = equality[extra.nonzero()[0]], extra.nonzero()[1]
    J_zeros = sp.csr_matrix((np.concatenate([J.tocoo().data, np.zeros(len(r))]),
                             (np.concatenate([J.tocoo().row, r]), np.concatenate([J.tocoo().col, c]))), shape=J.shape)
    J_zeros.sort_indices()
    plain, zeros = StagePlan(layout, rows, coef), StagePlan(layout, rows, coef)
    zeros.factor(W, J_zeros, 1.0, 0.0)  # planned: its layout and storage exist
    solved = 0
    for dw, dc in ((0.05, 0.0), (0.3, 1e-3), (30.0, 1e-6)):
        rhs = rng.standard_normal(nz + m)
        f_plain, sol, accurate = plain.newton_step(W, J, dw, dc, rhs)
        for work in zeros.layout.scratch()[0][:2]:  # blk and g
            work[:] = np.nan
        f_zeros, sol_zeros, acc_zeros = zeros.newton_step(W, J_zeros, dw, dc, rhs)
        assert f_plain.parity == f_zeros.parity and accurate == acc_zeros
        assert (sol is None) == (sol_zeros is None) and (sol is None or np.array_equal(sol, sol_zeros))
        assert f_plain.curvature == f_zeros.curvature
        solved += sol is not None
    # some columns of the coupling blocks have entries that are zero at every point
    coupled = [{(k, c) for k, c in zip(np.searchsorted(P.coupling_off, np.arange(len(P.coupling)), "right"),
                                        P.coupling[:, 3])} for P in (plain, zeros)]
    assert solved and coupled[0] < coupled[1]


@needs_native
def test_interior_point_with_the_one_call_newton_step_takes_the_separate_calls_steps(monkeypatch):
    """The parking shot solved with StagePlan.newton_step (one C call per attempt) and with its reference, the
    separate calls it replaces (fill and factor, parity test, nlp._refined): the same iterates, bit for bit."""
    tr = transcribe(load_shot("parallel_parking"))
    x0 = tr.x0()

    def separate_calls(plan, W, J, dw, dc, rhs):
        factor = plan.factor(W, J, dw, dc)
        if not factor.inertia_ok(J.shape[0]):
            return factor, None, False
        return (factor, *nlpmod._refined(factor, rhs))

    runs = []
    for step in (StagePlan.newton_step, separate_calls):
        monkeypatch.setattr(StagePlan, "newton_step", step)
        trace = []
        res = nlpmod.solve(tr.nlp, x0, mu_init=1e-3, progress=lambda it, info: trace.append(sorted(info.items())))
        runs.append((res, trace))
    (one, t_one), (separate, t_separate) = runs
    assert one.status == "solved" and "sparse LU instead" not in one.kkt, one.kkt
    assert t_one == t_separate and np.array_equal(one.x, separate.x)


@pytest.mark.heavy
def test_interior_point_iterates_match_the_sparse_lu_on_parking():
    tr = transcribe(load_shot("parallel_parking"))
    x0 = tr.x0()
    runs = {}
    for kkt in ("lu", "stage"):
        trace = []
        res = nlpmod.solve(tr.nlp, x0, kkt=kkt, progress=lambda it, info: trace.append(
            (info["objective"], info["constraint_violation"], info["regularization"])))
        runs[kkt] = res, np.array(trace)
    (lu, t_lu), (st, t_st) = runs["lu"], runs["stage"]
    assert "stage recursion" in st.kkt and "sparse LU instead" not in st.kkt, st.kkt
    assert st.status == lu.status == "solved" and st.iterations == lu.iterations
    # each step agrees to about cond(K) eps ~ 1e-8 (cond(K) ~ 3e8 at the start, see the test above); over ten
    # iterations that round-off may grow, but far less than the steps themselves
    n = min(10, len(t_lu))
    assert np.allclose(t_st[:n], t_lu[:n], rtol=1e-6, atol=1e-12)
    assert np.max(np.abs(st.x - lu.x)) <= 1e-6 * max(1.0, np.max(np.abs(lu.x)))


def test_no_stage_structure_falls_back_to_sparse_lu_and_says_why():
    """A row spanning every stage (a sum constraint) leaves no band: the solve is the LU's, and the report says so."""
    n = 12
    nlp = nlpmod.NLP(np.full(n, -10.0), np.full(n, 10.0), lambda x: float(x @ x), lambda x: 2 * x,
                     lambda x: np.array([x.sum()]), lambda x: sp.csr_matrix(np.ones((1, n))), np.ones(1), np.ones(1),
                     lambda x, y, f: sp.identity(n, format="csr") * 2 * f, stages=np.arange(n))
    res = nlpmod.solve(nlp, np.zeros(n), kkt="stage")
    assert res.status == "solved" and np.allclose(res.x, 1.0 / n, atol=1e-7)
    assert res.kkt.startswith("sparse LU (") and "stage blocks" in res.kkt
    with pytest.raises(ValueError, match="kkt must be"):
        nlpmod.solve(nlp, np.zeros(n), kkt="riccati")

"""Exact second derivatives of the shots' stage equations (jets.py, StageDynamics.residual_hessian).
The car's rows, Jacobian and Hessian in C (native/car_step.c) equal their numpy twins to round-off.

Each is checked against central differences of the exact first derivatives: the arc functions' second
derivatives (closed form and series), a jet formula, each vehicle's step equations at random windows, and
the whole Lagrangian Hessian of small shots of every vehicle.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from addon import solver  # noqa: F401  (package import order: integrator before vehicles)
from addon.solver.native import quadratic_binding, shot_rows_binding, sparse_binding
from addon.solver.shots import jets, transcription
from addon.solver.shots.car import arc, arc_curvature
from addon.solver.shots.vehicle_shot import transcribe

from .test_vehicle_shots import _small_shot


def test_arc_curvature_is_the_derivative_of_the_arc_slopes():
    """d2A, d2B (series below |w| = 1e-3, closed form above) equal central differences of dA, dB, and the
    two forms agree at the switch."""
    w = np.array([0.0, 3e-4, -9e-4, -0.05, 0.4, 2.5])
    eps = 1e-5
    _, _, dA_p, dB_p = arc(w + eps)
    _, _, dA_m, dB_m = arc(w - eps)
    d2A, d2B = arc_curvature(w)
    assert np.max(np.abs(d2A - (dA_p - dA_m) / (2 * eps))) < 1e-8
    assert np.max(np.abs(d2B - (dB_p - dB_m) / (2 * eps))) < 1e-8
    d2A, d2B = arc_curvature(np.array([0.999999e-3, 1.000001e-3]))  # series, closed form
    assert abs(d2A[0] - d2A[1]) < 1e-9 and abs(d2B[0] - d2B[1]) < 1e-9


def test_jet_gradient_and_hessian_of_a_formula():
    """f = tan(a) b sin(a c) + cos(b) - 2 a + b / (2 + a c) + sqrt(2 + b) - 1 / c (terms on different supports):
    the jet's gradient and Hessian against differences; first-order jets give the same gradient."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-1.0, 1.0, (5, 3))
    X[:, 2] += 3.0

    def f(X, second=True):
        a, b, c = jets.Jet.variables(X, second)
        return (jets.tan(a) * b * jets.sin(a * c) + jets.cos(b) - 2.0 * a + b / (2 + a * c) + jets.sqrt(2 + b)
                - 1 / c)

    out = f(X)
    eps = 1e-6
    for i in range(3):
        e = np.zeros(3)
        e[i] = eps
        fp, fm = f(X + e), f(X - e)
        assert np.allclose(out.grad[:, i], (fp.value - fm.value) / (2 * eps), atol=1e-8)
        assert np.allclose(out.hess[:, :, i], (fp.grad - fm.grad) / (2 * eps), atol=1e-7)
    assert np.allclose(out.hess, np.swapaxes(out.hess, 1, 2), rtol=0, atol=1e-13 * np.abs(out.hess).max())
    first_order = f(X, second=False)
    assert first_order.H is None and np.array_equal(first_order.grad, out.grad)


@pytest.mark.parametrize("preset,speed,rtol", [
    ("sedan", 3.0, 1e-6), ("kart", 0.0, 1e-6), ("car_trailer", 3.0, 1e-6), ("snakeboard", 1.0, 1e-6),
    pytest.param("helicopter", 2.0, 1e-6, marks=pytest.mark.heavy),
])
def test_lagrangian_hessian_equals_differences_of_the_exact_gradient(preset, speed, rtol):
    """The assembled Hessian of the Lagrangian (dynamics, keys, obstacles, costs) against central differences
    of the exact gradient of the Lagrangian at a random point and random multipliers."""
    tr = transcribe(_small_shot(preset, speed))
    rng = np.random.default_rng(5)
    x = tr.x0() + 0.02 * rng.standard_normal(tr.n)
    x[tr.h_index] = 0.1
    y = rng.standard_normal(tr.nlp.m)
    H = tr.nlp.hessian(x, y, 0.7).toarray()

    def grad_lagrangian(z):
        return 0.7 * tr.nlp.gradient(z) + tr.nlp.jacobian(z).T @ y
    eps = 1e-6
    fd = np.column_stack([(grad_lagrangian(x + eps * e) - grad_lagrangian(x - eps * e)) / (2 * eps)
                          for e in np.eye(tr.n)])
    assert np.max(np.abs(H - fd)) < rtol * np.abs(fd).max()


def _random_window(tr, K: int, rng) -> np.ndarray:
    """Random stages k-1, k, k+1 (K, 3, ns + nv) of a vehicle's window: ground vehicles anywhere, with wheel
    rates large enough for the closed-form arcs; rigid bodies near the shot's start guess (afloat, on the
    cushion: the pose terms of the wrench active)."""
    dyn = tr.dyn
    if dyn.planar:
        W = rng.uniform(-0.5, 0.5, (K, 3, dyn.ns + dyn.nv))
        if "wheel_rate" in dyn.segment_names:
            W[:, :, dyn.ns + dyn.segment_names.index("wheel_rate")] *= 20.0
        return W
    S = tr.stages(tr.x0())
    return np.stack([S[i:i + 3] for i in range(K)]) + 0.1 * rng.standard_normal((K, 3, S.shape[1]))


@pytest.mark.parametrize("preset", ["sedan", "car_trailer", "snakeboard", "helicopter", "speedboat", "hovercraft"])
def test_dynamics_hessian_is_exact(preset):
    """A vehicle's residual_hessian (sum_i y_i d2 r_i) against central differences of its exact residual
    Jacobian, every window slot and the step, at random points and multipliers (first step included): the
    difference error is O(eps^2) of the third derivatives, far below the 1e-6 bound relative to the Hessian."""
    tr = transcribe(_small_shot(preset, 3.0))
    dyn = tr.dyn
    rng = np.random.default_rng(2)
    K, nw = 6, dyn.ns + dyn.nv
    W = _random_window(tr, K, rng)
    h = rng.uniform(0.05, 0.2, K)
    first = np.arange(K) == 0
    nr = dyn.residual(W, first, h)[0].shape[1]
    y = rng.standard_normal((K, nr))
    H = dyn.residual_hessian(W, first, h, y)
    X = np.concatenate([W.reshape(K, 3 * nw), h[:, None]], 1)

    def weighted_gradient(X):
        _, dW, dh = dyn.residual(X[:, :-1].reshape(K, 3, nw), first, X[:, -1])
        return np.einsum("kr,krw->kw", y, np.concatenate([dW.reshape(K, nr, 3 * nw), dh[:, :, None]], 2))
    eps = 1e-6
    fd = np.stack([(weighted_gradient(X + eps * e) - weighted_gradient(X - eps * e)) / (2 * eps)
                   for e in np.eye(X.shape[1])], 2)
    assert np.max(np.abs(H - fd)) < 1e-6 * np.abs(fd).max()
    assert np.allclose(H, np.swapaxes(H, 1, 2), rtol=0, atol=1e-13 * np.abs(H).max())


@pytest.mark.parametrize("preset", ["helicopter"])  # a car shot has no differenced block left
def test_batched_differencing_equals_column_by_column(preset, monkeypatch):
    """The differenced block Hessians (perturbed copies stacked into one call of the block's function, in
    chunks of transcription._BATCH instances) equal one call per column, the plain forward differences of the
    exact Jacobian, to round-off; for every differenced block of a small shot, with chunks of one and of all
    columns."""
    tr = transcribe(_small_shot(preset, 2.0))
    rng = np.random.default_rng(6)
    x = tr.x0() + 0.02 * rng.standard_normal(tr.n)
    x[tr.h_index] = 0.1
    differenced = [b for b in tr.blocks + tr.costs if not hasattr(b.fn, "hessian") and len(b.curved)]
    assert differenced
    for b in differenced:
        X = x[b.index]
        weights = rng.standard_normal((len(X), b.rows))
        _, J0 = b.fn(X)
        step = 1.5e-8 * np.maximum(1.0, np.abs(X))
        reference = np.empty((len(X), len(b.curved), len(b.curved)))
        for a, j in enumerate(b.curved):
            Xp = X.copy()
            Xp[:, j] += step[:, j]
            grad = np.einsum("kr,krw->kw", weights, b.fn(Xp)[1])[:, b.curved]
            reference[:, :, a] = (grad - np.einsum("kr,krw->kw", weights, J0)[:, b.curved]) / step[:, j:j + 1]
        reference = 0.5 * (reference + np.swapaxes(reference, 1, 2))
        # round-off of a forward difference: a few ulps of the weighted gradient over the step
        roundoff = 8 * np.finfo(float).eps * np.einsum("kr,krw->k", np.abs(weights), np.abs(J0)) / step.min(axis=1)
        for batch in (len(X), 10**9):
            monkeypatch.setattr(transcription, "_BATCH", batch)
            H = transcription._local_hessian(b.fn, X, weights, b.curved, J0)
            assert np.all(np.abs(H - reference) <= roundoff[:, None, None] + 1e-12)


@pytest.mark.skipif(shot_rows_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_car_step_in_c_equals_numpy():
    """native/car_step.c against CarDynamics' numpy rows, Jacobian and Hessian at random windows, first step and
    turns below the arc series' threshold (|om| < 1e-3) included: equal to round-off of each quantity's size."""
    dyn = transcribe(_small_shot("sedan", 3.0)).dyn
    rng = np.random.default_rng(11)
    K = 40
    W = rng.uniform(-0.5, 0.5, (K, 3, 6))
    W[:, :, 5] *= 20.0
    W[: K // 2, :, 3] *= 1e-4  # nearly straight: the series branch
    h = rng.uniform(0.05, 0.2, K)
    first = np.arange(K) % 7 == 0
    y = rng.standard_normal((K, 4))
    r, dW, dh = dyn.residual(W, first, h)
    r0, dW0, dh0 = dyn.residual_numpy(W, first, h)
    assert np.any(np.abs(h * dyn.rho / dyn.l * W[:, 1, 5] * np.tan(W[:, 1, 3])) < 1e-3)
    for got, want in ((r, r0), (dW, dW0), (dh, dh0), (dyn.residual_hessian(W, first, h, y),
                                                     dyn.residual_hessian_numpy(W, first, h, y))):
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) <= 1e-13 * max(1.0, np.abs(want).max())
    # the transcription's window layout (stages flattened, then h) straight from the kernel: the same numbers as
    # the rows and Jacobian split per stage and joined again
    X = np.concatenate([W.reshape(K, 18), h[:, None]], axis=1)
    for got, want in zip(dyn.window_residual(X, first), transcription.StageDynamics.window_residual(dyn, X, first)):
        assert got.shape == want.shape and np.array_equal(got, want)
    # written into given arrays (the transcription's buffers): the same numbers, through either path
    for window_residual in (dyn.window_residual, lambda *a: transcription.StageDynamics.window_residual(dyn, *a)):
        out = (np.full((K, 4), np.nan), np.full((K, 4, 19), np.nan))
        window_residual(X, first, out)
        assert all(np.array_equal(got, want) for got, want in zip(out, window_residual(X, first)))


@pytest.mark.skipif(shot_rows_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_car_step_reads_trajectory_windows_in_place():
    """The kernels on a trajectory's windows (step k's stages k-1, k, k+1: consecutive steps share two stages, whose
    tan the kernel reuses) read in place from the transcription's window rows (K, 19), strided: bit for bit the
    numbers of packed copies, which agree with the numpy twin to round-off."""
    dyn = transcribe(_small_shot("sedan", 3.0)).dyn
    rng = np.random.default_rng(13)
    K = 30
    Z = rng.uniform(-0.5, 0.5, (K + 2, 6))
    Z[:, 5] *= 20.0
    X = np.concatenate([np.stack([Z[:-2], Z[1:-1], Z[2:]], 1).reshape(K, 18), rng.uniform(0.05, 0.2, (K, 1))], 1)
    W, h = X[:, :18].reshape(K, 3, 6), X[:, 18]
    first, y = np.arange(K) == 0, rng.standard_normal((K, 4))
    assert not W.flags.c_contiguous and not h.flags.c_contiguous
    packed = (W.copy(), first, h.copy())
    for got, want in zip(dyn.residual(W, first, h), dyn.residual(*packed)):
        assert np.array_equal(got, want)
    assert np.array_equal(dyn.residual_hessian(W, first, h, y), dyn.residual_hessian(*packed, y))
    for got, want in zip(dyn.residual(W, first, h), dyn.residual_numpy(W, first, h)):
        assert np.max(np.abs(got - want)) <= 1e-13 * max(1.0, np.abs(want).max())
    want = dyn.residual_hessian_numpy(W, first, h, y)
    assert np.max(np.abs(dyn.residual_hessian(W, first, h, y) - want)) <= 1e-13 * max(1.0, np.abs(want).max())


@pytest.mark.skipif(shot_rows_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_bound_kernels_read_their_buffers_at_each_call():
    """The car step, its Hessian and the planar clearance bound once to a window buffer, weights and outputs (the
    transcription's): after the buffers' values change, a call writes bit for bit what the unbound calls return
    there, which agree with the numpy twin to round-off; a window the kernels would have to copy, and outputs of
    the wrong shape or dtype, are refused when binding."""
    tr = transcribe(_small_shot("sedan", 3.0))
    dyn, rng, K = tr.dyn, np.random.default_rng(17), 25
    X, y = np.empty((K, 19)), np.empty((K, 4))
    first = np.arange(K) == 0
    out, H = (np.empty((K, 4)), np.empty((K, 4, 19))), np.empty((K, 9, 9))
    step, hessian = dyn.window_residual_call(X, first, out), dyn.residual_hessian_slots_call(X, first, y, H)
    for _ in range(2):
        X[:] = rng.uniform(-0.5, 0.5, (K, 19))
        X[:, 18] = rng.uniform(0.05, 0.2, K)
        y[:] = rng.standard_normal((K, 4))
        step()
        hessian()
        W, h = X[:, :18].reshape(K, 3, 6), X[:, 18]
        assert all(np.array_equal(got, want) for got, want in zip(out, dyn.window_residual(X, first)))
        assert np.array_equal(H, dyn.residual_hessian_slots(W, first, h, y))
        want = dyn._hessian_numpy(W, first, h, y)
        assert np.max(np.abs(H - want)) <= 1e-13 * max(1.0, np.abs(want).max())
    with pytest.raises(ValueError):  # h as a column of another dtype's copy: a bound call would not see X change
        shot_rows_binding.step_call(X[:, :18].reshape(K, 3, 6), first, X[:, 18].astype(np.float32), dyn._par, out)
    with pytest.raises(ValueError):
        dyn.residual_hessian_slots_call(X, first, y, np.empty((K, 9, 9), np.float32))
    clearance = shot_rows_binding.PlanarClearance(np.array([[0.3, -0.2], [-1.0, 0.4]]), *transcription.shape_parameters(
        tr.shot.obstacles[0]), *transcription.obstacle_frame(tr.shot.obstacles[0]))
    S, w, d, J, HS = np.empty((K, 4)), np.empty((K, 2)), np.empty((K, 2)), np.empty((K, 2, 4)), np.empty((K, 4, 4))
    rows, curvature = clearance.rows_call(S, (d, J)), clearance.hessian_call(S, w, HS)
    for _ in range(2):
        S[:] = rng.uniform(-2.0, 2.0, (K, 4))
        w[:] = rng.standard_normal((K, 2))
        rows()
        curvature()
        assert all(np.array_equal(got, want) for got, want in zip((d, J), clearance.rows(S)))
        assert np.array_equal(HS, clearance.hessian(S, w))
    with pytest.raises(ValueError):
        clearance.rows_call(S, (d, np.empty((K, 3, 4))))
    with pytest.raises(ValueError):
        clearance.hessian_call(np.asfortranarray(S), w, HS)


@pytest.mark.skipif(shot_rows_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_bound_hessians_write_the_entries_at_given_positions():
    """The car step's and the planar clearance's Hessians bound with flat positions (P,) of each instance's block (as
    the transcription's Hessian keeps them) write into (K, P) bit for bit the whole blocks' entries there, also for
    positions repeated, out of order, or (the clearance) outside the heading and position rows, where they are
    zero; the whole car step block agrees with its numpy twin to round-off. Positions past the block are refused."""
    tr = transcribe(_small_shot("sedan", 3.0))
    dyn, rng, K = tr.dyn, np.random.default_rng(23), 40
    X, y = rng.uniform(-0.5, 0.5, (K, 19)), rng.standard_normal((K, 4))
    X[:, 18] = rng.uniform(0.05, 0.2, K)
    first = np.arange(K) == 0
    W, h = X[:, :18].reshape(K, 3, 6), X[:, 18]
    whole = dyn.residual_hessian_slots(W, first, h, y)
    want = dyn._hessian_numpy(W, first, h, y)
    assert np.max(np.abs(whole - want)) <= 1e-13 * max(1.0, np.abs(want).max())
    positions = np.concatenate([rng.permutation(81)[:30], [40, 40, 0, 80]])
    picked = np.full((K, len(positions)), np.nan)
    dyn.residual_hessian_slots_call(X, first, y, picked, positions)()
    assert np.array_equal(picked, whole.reshape(K, 81)[:, positions])
    with pytest.raises(ValueError):
        dyn.residual_hessian_slots_call(X, first, y, np.empty((K, 2)), np.array([3, 81]))
    clearance = shot_rows_binding.PlanarClearance(np.array([[0.3, -0.2], [-1.0, 0.4], [1.2, 0.3]]),
                                                  *transcription.shape_parameters(tr.shot.obstacles[0]),
                                                  *transcription.obstacle_frame(tr.shot.obstacles[0]))
    S, w = rng.uniform(-2.0, 2.0, (K, 4)), rng.standard_normal((K, 3))
    whole = clearance.hessian(S, w)
    assert np.count_nonzero(whole[:, :3, :3]) > K and not np.any(whole[:, 3]) and not np.any(whole[:, :, 3])
    positions = np.array([10, 0, 5, 3, 12, 15, 1, 4, 2, 8, 6, 9, 5])  # (2, 2), (0, 0), ...; 3, 12, 15: row or column 3
    picked = np.full((K, len(positions)), np.nan)
    clearance.hessian_call(S, w, picked, positions)()
    assert np.array_equal(picked, whole.reshape(K, 16)[:, positions])
    with pytest.raises(ValueError):
        clearance.hessian_call(S, w, np.empty((K, 2)), np.array([0, 16]))


def test_car_step_patterns_hold_their_nonzeros():
    """CarDynamics.residual_pattern and hessian_slot_pattern (the entries the solver's Jacobian and Hessian keep)
    hold every nonzero of the step rows' Jacobian over the window and of the step Hessian over its slots, in C and in
    numpy, at random windows (first steps and nearly straight turns included), and every entry they hold is nonzero
    somewhere: neither a dropped derivative nor a needless entry."""
    dyn = transcribe(_small_shot("sedan", 3.0)).dyn
    rng = np.random.default_rng(12)
    K = 60
    W = rng.uniform(-0.5, 0.5, (K, 3, 6))
    W[:, :, 5] *= 20.0
    W[: K // 3, :, 3] *= 1e-4
    h = rng.uniform(0.05, 0.2, K)
    first = np.arange(K) % 5 == 0
    y = rng.standard_normal((K, 4))
    X = np.concatenate([W.reshape(K, 18), h[:, None]], axis=1)
    jacobians = [dyn.window_residual(X, first)[1],
                 transcription.StageDynamics.window_residual(dyn, X, first)[1]]  # C (when built), numpy below
    _, dW, dh = dyn.residual_numpy(W, first, h)
    jacobians.append(np.concatenate([dW.reshape(K, 4, 18), dh[:, :, None]], axis=2))
    hessians = (dyn.residual_hessian_slots(W, first, h, y), dyn._hessian_numpy(W, first, h, y))
    for pattern, matrices in ((dyn.residual_pattern, jacobians), (dyn.hessian_slot_pattern, hessians)):
        for M in matrices:
            assert not np.any(M[:, ~pattern])
            assert np.all(np.any(M != 0, axis=0) == pattern)


def test_quadratic_costs_equal_the_channel_formulas():
    """The effort and smoothness of every channel as one QuadraticCosts term: its value equals the per-channel
    formulas (effort weight h ((u - trim) / s)^2, smoothness weight ((u_k+1 - u_k) / s)^2 / h summed), its gradient
    central differences of the value and its Hessian (COO data summed) central differences of the gradient, with a
    free step h at a random point."""
    tr = transcribe(_small_shot("helicopter", 2.0))
    q, dyn, costs = tr.quadratic, tr.dyn, tr.shot.costs
    rng = np.random.default_rng(13)
    x = tr.x0() + 0.1 * rng.standard_normal(tr.n)
    x[tr.h_index] = 0.13
    h, st = x[tr.h_index], tr.stages(x)
    want = 0.0
    for ch in dyn.channels:
        u = st[1:tr.N + 1, dyn.ns + ch.index] if ch.where == "segment" else st[1:, ch.index]
        s = ch.scale / ch.unit
        if ch.effort:
            want += costs.effort * h * np.sum(((u - ch.trim / ch.unit) / s) ** 2)
        want += costs.smoothness * np.sum((np.diff(u) / s) ** 2) / h
    assert abs(q.value(x) - want) <= 1e-12 * abs(want)
    eps = 1e-6
    E = np.eye(tr.n)
    fd = np.array([(q.value(x + eps * e) - q.value(x - eps * e)) / (2 * eps) for e in E])
    g = q.gradient(x)
    assert np.max(np.abs(g - fd)) < 1e-6 * np.abs(fd).max()
    H = np.zeros((tr.n, tr.n))
    coo = np.empty(len(q.hess_rows))
    q.hessian_into(x, 0.7, coo)
    np.add.at(H, (q.hess_rows, q.hess_cols), coo)
    fd2 = np.stack([(q.gradient(x + eps * e) - q.gradient(x - eps * e)) / (2 * eps) for e in E], 1)
    assert np.max(np.abs(H - 0.7 * fd2)) < 1e-6 * np.abs(fd2).max()
    assert np.abs(H[tr.h_index]).max() > 0  # the entries with the free step are checked too


@pytest.mark.skipif(quadratic_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_quadratic_hessian_in_c_equals_its_numpy_twin_bit_for_bit():
    """QuadraticCosts.hessian_into in C (native/quadratic_costs.c) writes the COO data of its numpy twin bit for bit
    (the same products in the same order), at random points with a free step and scales; buffers of another length
    are refused."""
    tr = transcribe(_small_shot("helicopter", 2.0))
    q = tr.quadratic
    assert q._hessian_kernel is not None and len(q.ce) and len(q.c0)
    rng = np.random.default_rng(17)
    for _ in range(3):
        x = tr.x0() + 0.1 * rng.standard_normal(tr.n)
        x[tr.h_index] = rng.uniform(0.05, 0.2)
        scale = rng.uniform(0.01, 2.0)
        got, want = np.full(len(q.hess_rows), np.nan), np.full(len(q.hess_rows), np.nan)
        q.hessian_into(x, scale, got)
        q.hessian_into_numpy(x, scale, want)
        assert got.tobytes() == want.tobytes() and np.all(np.isfinite(got))
    with pytest.raises(ValueError):
        q.hessian_into(x, scale, got[:-1])


@pytest.mark.skipif(sparse_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_pattern_sum_in_c_equals_bincount():
    """SparsityPattern.values (native/sparse_sum.c) sums COO data with many duplicates into the CSR values bit for bit
    as its numpy twin (np.bincount, the same order), and both equal the dense sum of the data at their (row,
    column); targets outside the sum and data of another length are refused."""
    rng = np.random.default_rng(14)
    n = 30
    rows, cols = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    pattern = transcription.SparsityPattern(rows, cols, (n, n))
    data = rng.standard_normal(3000)
    got = pattern.values(data)
    assert np.array_equal(got, pattern.values_numpy(data))
    dense = np.zeros((n, n))
    np.add.at(dense, (rows, cols), data)
    csr = sp.csr_matrix((got, pattern.indices, pattern.indptr), shape=(n, n))
    assert np.allclose(csr.toarray(), dense, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):  # the sum's targets are checked once, the values at each call
        sparse_binding.ScatterAdd(np.array([0, 3, 30]), 30)
    with pytest.raises(ValueError):
        pattern.values(data[:-1])


@pytest.mark.skipif(sparse_binding.LIB is None, reason="C kernels not built (make kernels)")
@pytest.mark.parametrize("coo", [True, False], ids=["COO data summed", "entries given"])
def test_symmetric_half_sum_in_c_equals_its_numpy_twin_and_the_definition(coo):
    """SymmetricHalfSum (native/sparse_sum.c) gives out[k] = (A[upper[k]] + A[lower[k]]) / 2, a -1 counting 0, bit for
    bit as its numpy twin (the same sums in the same order), where A's entries are given or are COO data with many
    duplicates summed into them (A: a SparsityPattern's CSR values; some of its entries not read); against the
    definition from the dense matrix's entries to round-off, twice with other data (the scratch sums are refilled);
    maps and data out of range are refused."""
    rng = np.random.default_rng(16)
    n, size_coo = 30, 600  # about half the (row, column) pairs, a quarter of those several times
    rows, cols = rng.integers(0, n, size_coo), rng.integers(0, n, size_coo)
    pattern = transcription.SparsityPattern(rows, cols, (n, n))
    assert pattern.size < 0.8 * size_coo  # duplicates to sum
    # every (r, c) of the pattern and its mirror, plus the diagonal: each entry's position in A, or -1 where A has none
    position = -np.ones((n, n), int)
    position[np.repeat(np.arange(n), np.diff(pattern.indptr)), pattern.indices] = np.arange(pattern.size)
    r, c = np.nonzero((position >= 0) | (position.T >= 0) | np.eye(n, dtype=bool))
    kept = (r % 7 != 3) & (c % 7 != 3)  # A's entries of some rows and columns unread (a reduction's fixed variables)
    r, c = r[kept], c[kept]
    upper, lower = position[r, c], position[c, r]
    assert np.any((upper < 0) & (lower < 0)) and np.any((upper < 0) != (lower < 0))  # both kinds of missing half
    summed = pattern.inverse if coo else None
    half_sum = sparse_binding.SymmetricHalfSum(upper, lower, pattern.size, summed)
    for _ in range(2):
        data = rng.standard_normal(size_coo)
        entries = pattern.values_numpy(data)
        given = data if coo else entries
        got = half_sum(given)
        assert got.tobytes() == sparse_binding.symmetric_half_sum_numpy(given, upper, lower, pattern.size,
                                                                        summed).tobytes()
        dense = np.zeros((n, n))
        np.add.at(dense, (rows, cols), data)
        has = position >= 0
        np.testing.assert_allclose(got, 0.5 * (dense[r, c] * has[r, c] + dense[c, r] * has[c, r]), rtol=0,
                                   atol=1e-12)
    with pytest.raises(ValueError):
        sparse_binding.SymmetricHalfSum(np.array([0, pattern.size]), np.array([0, 0]), pattern.size, summed)
    with pytest.raises(ValueError):
        half_sum(given[:-1])


@pytest.mark.skipif(sparse_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_csr_product_in_c_equals_scipy_bit_for_bit():
    """CsrProduct (native/sparse_sum.c) is scipy's product, each row summed in the same order, on a matrix with
    empty rows and duplicate entries, into a fresh array, into a view of another buffer given at the call and into
    one fixed at construction (returned); a changed input is read at the next call."""
    rng = np.random.default_rng(15)
    counts = rng.integers(0, 8, 43)
    counts[[5, 17, 42]] = 0  # empty rows
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = rng.integers(0, 60, indptr[-1])  # duplicates within a row among them
    A = sp.csr_matrix((rng.standard_normal(indptr[-1]), indices, indptr), shape=(43, 60))
    assert not A.has_canonical_format
    x = rng.standard_normal(60)
    product = sparse_binding.CsrProduct(A, x)
    assert np.array_equal(product(), A @ x)
    x[:] = rng.standard_normal(60)
    buffer = np.zeros(50)
    product(out=buffer[5:48])
    assert np.array_equal(buffer[5:48], A @ x) and not buffer[:5].any() and not buffer[48:].any()
    buffer[:] = 0.0
    fixed = sparse_binding.CsrProduct(A, x, out=buffer[2:45])
    x[:] = rng.standard_normal(60)
    assert fixed() is fixed.out and np.array_equal(buffer[2:45], A @ x) and not buffer[:2].any() and not buffer[45:].any()


def test_evaluations_at_alternating_points_equal_fresh_ones():
    """The NLP's rows, gradient, Jacobian and Hessian (kept for the last point in the assembly's buffers) at points
    visited in turn, and at an array changed in place, equal those of a transcription that never saw another point,
    bit for bit; rows handed out earlier stay as they were (the solver keeps them)."""
    shot = _small_shot("sedan", 3.0)
    tr, fresh = transcribe(shot), transcribe(shot)
    rng = np.random.default_rng(5)
    x1 = tr.x0() + 0.02 * rng.standard_normal(tr.n)
    x2 = x1 + 0.02 * rng.standard_normal(tr.n)
    y = rng.standard_normal(len(tr.nlp.c_lower))

    def evaluations(nlp, x):
        return (nlp.constraints(x), nlp.gradient(x), np.array([nlp.objective(x)]), nlp.jacobian_data.values(x),
                nlp.hessian_data.values(x, y, 0.7))

    first = evaluations(tr.nlp, x1)
    kept = [a.copy() for a in first]
    changed = x1.copy()
    for x in (x2, x1, changed):
        if x is changed:
            changed[tr.n // 2] += 0.05  # the array of the last call, changed in place
        got, want = evaluations(tr.nlp, x), evaluations(transcribe(shot).nlp, x)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
        assert all(np.array_equal(a, b) for a, b in zip(first, kept))
    assert not any(np.array_equal(got[i], kept[i]) for i in (0, 3, 4))  # rows, Jacobian, Hessian: x moved them
    assert all(np.array_equal(a, b) for a, b in zip(evaluations(tr.nlp, x1), evaluations(fresh.nlp, x1)))

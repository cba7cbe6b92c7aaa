"""The interior point's C vector kernels (native/interior_point.c) against their numpy twins, bit for bit: the same
floating-point operations in the same order, on vectors with unbounded entries (inf distances), zero steps, infinite
steps and nan (which the fraction-to-boundary rule skips and the clipping propagates)."""

import numpy as np
import pytest

from addon.solver.native import interior_point_binding as ipk

native = pytest.mark.skipif(ipk.LIB is None, reason="C kernels not built (make kernels)")


def _vectors(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distances to lower and upper bounds (inf where there is none, some zero) and a step over many scales, with
    zero, infinite and nan entries."""
    dist_lo = rng.uniform(0.0, 2.0, n) * rng.choice([1e-12, 1.0, 1e8], n)
    dist_up = rng.uniform(0.0, 2.0, n) * rng.choice([1e-12, 1.0, 1e8], n)
    dist_lo[rng.random(n) < 0.3] = np.inf
    dist_up[rng.random(n) < 0.3] = np.inf
    dist_lo[rng.random(n) < 0.02] = 0.0
    dx = rng.standard_normal(n) * rng.choice([1e-9, 1.0, 1e9], n)
    dx[rng.random(n) < 0.1] = 0.0
    dx[rng.random(n) < 0.02] = -np.inf
    dx[rng.random(n) < 0.02] = np.nan
    return dist_lo, dist_up, dx


def _multipliers(rng: np.random.Generator, dist: np.ndarray) -> np.ndarray:
    """Positive bound multipliers over many scales, 0 where there is no bound (dist inf), as the interior point keeps
    them."""
    z = rng.uniform(0.0, 1.0, len(dist)) * rng.choice([1e-12, 1.0, 1e6], len(dist))
    z[np.isinf(dist)] = 0.0
    return z


@native
@pytest.mark.parametrize("n", [0, 1, 7, 2000])
def test_step_to_bounds_c_is_the_numpy_twin_bit_for_bit(n):
    rng = np.random.default_rng(n + 11)
    for _ in range(30):
        dist_lo, dist_up, dx = _vectors(rng, n)
        for tau in (0.99, 1.0, 1.0 - 1e-9):
            with np.errstate(invalid="ignore", divide="ignore"):
                for up in (dist_up, None):
                    expected = ipk.step_to_bounds_numpy(dist_lo, up, dx, tau)
                    assert ipk.step_to_bounds(dist_lo, up, dx, tau) == expected
                    assert 0.0 <= expected <= 1.0


@native
@pytest.mark.parametrize("n", [0, 1, 7, 2000])
def test_near_central_path_c_is_the_numpy_twin_bit_for_bit(n):
    rng = np.random.default_rng(n + 12)
    for _ in range(30):
        dist, _, dz = _vectors(rng, n)
        z = rng.uniform(0.0, 1.0, n) * rng.choice([1e-16, 1.0, 1e16], n)
        z[np.isinf(dist)] = 0.0
        for mu, alpha in ((0.1, 1.0), (1e-9, 0.37), (1e-3, 0.0)):
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                expected = ipk.near_central_path_numpy(z, alpha, dz, mu, dist)
                got = ipk.near_central_path(z, alpha, dz, mu, dist)
            assert np.array_equal(got, expected, equal_nan=True)
            assert np.array_equal(np.signbit(got), np.signbit(expected))


@native
def test_kernels_refuse_vectors_they_cannot_read():
    """A strided, short or integer vector is refused (ctypes would read past it or misread it)."""
    v = np.ones(10)
    with pytest.raises(ValueError):
        ipk.step_to_bounds(v[::2], None, np.ones(5), 0.99)
    with pytest.raises(ValueError):
        ipk.step_to_bounds(v, v, np.ones(9), 0.99)
    with pytest.raises(ValueError):
        ipk.near_central_path(v, 1.0, np.ones(10, int), 0.1, v)


@native
@pytest.mark.parametrize("n", [0, 1, 7, 2000])
def test_bounded_entries_c_are_the_numpy_twins_bit_for_bit(n):
    """Distances to finite lower then upper bounds and their minimum, with points inside, on and outside the bounds and
    nan entries (skipped by the minimum); the complementarity products over the same entries."""
    rng = np.random.default_rng(n + 13)
    for _ in range(20):
        lower = np.where(rng.random(n) < 0.6, rng.uniform(-3.0, 0.0, n), -np.inf)
        upper = np.where(rng.random(n) < 0.6, rng.uniform(0.0, 3.0, n), np.inf)
        lo, up = np.flatnonzero(np.isfinite(lower)), np.flatnonzero(np.isfinite(upper))
        entries = ipk.BoundedEntries(n, lo, lower[lo], up, upper[up])
        for spread in (0.5, 5.0):
            x = rng.uniform(-spread, spread, n)
            x[rng.random(n) < 0.02] = np.nan
            expected, nearest = entries.numpy_distances(x)
            got, got_nearest = entries.distances(x)
            assert np.array_equal(got, expected, equal_nan=True) and got_nearest == nearest
            assert np.array_equal(expected, np.concatenate([x[lo] - lower[lo], upper[up] - x[up]]), equal_nan=True)
            assert nearest == np.nanmin(np.concatenate([expected, [np.inf]]))
            dl, du = x - lower, upper - x
            zL, zU = _multipliers(rng, dl), _multipliers(rng, du)
            products = entries.numpy_products(dl, zL, du, zU)
            assert np.array_equal(entries.products(dl, zL, du, zU), products, equal_nan=True)
            assert np.array_equal(products, np.concatenate([dl[lo] * zL[lo], du[up] * zU[up]]), equal_nan=True)


def test_log_barrier_sums_each_kind_of_bound_as_numpy_does():
    """_Bounds.log_barrier (the distances in one array, one log) is numpy's sum of the logs over the lower bounds plus
    that over the upper ones, bit for bit: the iterates depend on these sums through the line search."""
    from addon.solver.shots.nlp import _Bounds

    rng = np.random.default_rng(14)
    n = 3000
    lower = np.where(rng.random(n) < 0.7, rng.uniform(-3.0, -1.0, n), -np.inf)
    upper = np.where(rng.random(n) < 0.7, rng.uniform(1.0, 3.0, n), np.inf)
    bounds = _Bounds(lower, upper)
    lo, up = np.isfinite(lower), np.isfinite(upper)
    for _ in range(10):
        x = rng.uniform(-0.99, 0.99, n) * rng.choice([1.0, 1e-6], n)
        expected = float(np.sum(np.log(x[lo] - lower[lo])) + np.sum(np.log(upper[up] - x[up])))
        assert bounds.log_barrier(x) == expected


@pytest.mark.parametrize("n, m", [(0, 0), (1, 3), (7, 2), (2400, 2000)])
def test_barrier_terms_are_their_formulas_bit_for_bit(n, m):
    """barrier_terms (C and the numpy twin) against the interior point's formulas: zL / dl, zU / du, their sum,
    mu / dl, mu / du, g - mu / dl + mu / du and -(that, c), each one division or sum as numpy evaluates it."""
    rng = np.random.default_rng(n + 15)
    dl, du, _ = _vectors(rng, n)
    dl[dl == 0.0] = 1e-300
    zL, zU = _multipliers(rng, dl), _multipliers(rng, du)
    g, c = rng.standard_normal(n) * 1e3, rng.standard_normal(m)
    for mu in (0.1, 1e-9):
        pull = mu / dl, mu / du
        grad_phi = g - pull[0] + pull[1]
        expected = np.array([zL / dl, zU / du, zL / dl + zU / du, pull[0], pull[1], grad_phi]).reshape(6, n)
        implementations = [ipk.barrier_terms_numpy] + ([ipk.barrier_terms] if ipk.LIB is not None else [])
        for barrier_terms in implementations:
            terms, rhs = barrier_terms(g, zL, zU, dl, du, mu, c)
            assert np.array_equal(terms, expected) and np.array_equal(rhs, -np.concatenate([grad_phi, c]))
            assert np.array_equal(np.signbit(terms), np.signbit(expected))


@pytest.mark.parametrize("n", [0, 1, 7, 2400])
def test_multiplier_steps_are_their_formulas_bit_for_bit(n):
    """multiplier_steps (C and the numpy twin) against the interior point's formulas: dzL = mu / dl - zL - (zL / dl) dz,
    dzU = mu / du - zU + (zU / du) dz and the fraction-to-boundary step of each towards 0, the smaller."""
    rng = np.random.default_rng(n + 16)
    for _ in range(10):
        dl, du, dz = _vectors(rng, n)
        dl[dl == 0.0] = 1e-300
        dz[~np.isfinite(dz)] = 1.0
        zL, zU = _multipliers(rng, dl), _multipliers(rng, du)
        with np.errstate(over="ignore", invalid="ignore"):  # products of the extreme scales
            for mu, tau in ((0.1, 0.99), (1e-9, 1.0 - 1e-9)):
                terms, _ = ipk.barrier_terms_numpy(np.zeros(n), zL, zU, dl, du, mu, np.zeros(0))
                dzL = mu / dl - zL - zL / dl * dz
                dzU = mu / du - zU + zU / du * dz
                alpha = min(ipk.step_to_bounds_numpy(zL, None, dzL, tau), ipk.step_to_bounds_numpy(zU, None, dzU, tau))
                implementations = [ipk.multiplier_steps_numpy] + ([ipk.multiplier_steps] if ipk.LIB is not None else [])
                for multiplier_steps in implementations:
                    got_L, got_U, got_alpha = multiplier_steps(zL, zU, terms, dz, tau)
                    assert np.array_equal(got_L, dzL) and np.array_equal(got_U, dzU) and got_alpha == alpha
                    assert 0.0 <= got_alpha <= 1.0

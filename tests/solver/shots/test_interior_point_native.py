"""The interior point's C vector kernels (native/interior_point.c) against their numpy twins and the interior point's
formulas, bit for bit: the same floating-point operations in the same order, on vectors with unbounded entries (inf
distances), zero steps, infinite steps and nan (which the fraction-to-boundary rule skips)."""

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
def test_kernels_refuse_vectors_they_cannot_read():
    """A strided, short or integer vector is refused (ctypes would read past it or misread it)."""
    v = np.ones(10)
    with pytest.raises(ValueError):
        ipk.step_to_bounds(v[::2], None, np.ones(5), 0.99)
    with pytest.raises(ValueError):
        ipk.step_to_bounds(v, v, np.ones(9), 0.99)


_VECTORS = [ipk.Vectors] + ([ipk.NativeVectors] if ipk.LIB is not None else [])


def _loaded(vectors: type, n: int, m: int, **values: np.ndarray) -> ipk.Vectors:
    """A Vectors (or NativeVectors) of n entries without bounds and m rows whose buffers hold the given values (dl,
    du, zL, zU, dzL, dzU, terms)."""
    v = vectors(np.full(n, -np.inf), np.full(n, np.inf), m)
    for name, value in values.items():
        getattr(v, name)[...] = value
    return v


@pytest.mark.parametrize("n, m", [(0, 0), (1, 3), (7, 2), (2400, 2000)])
def test_barrier_terms_are_their_formulas_bit_for_bit(n, m):
    """barrier_terms (C through NativeVectors and the numpy twin through Vectors) against the interior point's
    formulas: zL / dl, zU / du, their sum, mu / dl, mu / du, g - mu / dl + mu / du and -(that, c), each one division or
    sum as numpy evaluates it; odd lengths too (the C kernel takes the entries by pairs)."""
    rng = np.random.default_rng(n + 15)
    dl, du, _ = _vectors(rng, n)
    dl[dl == 0.0] = 1e-300
    zL, zU = _multipliers(rng, dl), _multipliers(rng, du)
    g, c = rng.standard_normal(n) * 1e3, rng.standard_normal(m)
    for mu in (0.1, 1e-9):
        pull = mu / dl, mu / du
        grad_phi = g - pull[0] + pull[1]
        expected = np.array([zL / dl, zU / du, zL / dl + zU / du, pull[0], pull[1], grad_phi]).reshape(6, n)
        for vectors in _VECTORS:
            terms, rhs = _loaded(vectors, n, m, dl=dl, du=du, zL=zL, zU=zU).barrier_terms(g, mu, c)
            assert np.array_equal(terms, expected) and np.array_equal(rhs, -np.concatenate([grad_phi, c]))
            assert np.array_equal(np.signbit(terms), np.signbit(expected))


@pytest.mark.parametrize("n", [0, 1, 7, 2400])
def test_multiplier_steps_are_their_formulas_bit_for_bit(n):
    """multiplier_steps (C through NativeVectors and the numpy twin through Vectors) against the interior point's
    formulas: dzL = mu / dl - zL - (zL / dl) dz, dzU = mu / du - zU + (zU / du) dz and the fraction-to-boundary step of
    each towards 0, the smaller."""
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
                for vectors in _VECTORS:
                    loaded = _loaded(vectors, n, 0, zL=zL, zU=zU, terms=terms)
                    got_L, got_U, got_alpha = loaded.multiplier_steps(dz, tau)
                    assert np.array_equal(got_L, dzL) and np.array_equal(got_U, dzU) and got_alpha == alpha
                    assert 0.0 <= got_alpha <= 1.0


def _bounds(rng: np.random.Generator, n: int, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds below and above z at distances over many scales, -inf / inf (no bound) at some."""
    lower = z - rng.uniform(1e-3, 2.0, n) * rng.choice([1e-6, 1.0, 1e6], n)
    upper = z + rng.uniform(1e-3, 2.0, n) * rng.choice([1e-6, 1.0, 1e6], n)
    lower[rng.random(n) < 0.3] = -np.inf
    upper[rng.random(n) < 0.6] = np.inf
    return lower, upper


@pytest.mark.parametrize("n", [0, 1, 7, 2400])
def test_accepted_step_is_its_formulas_bit_for_bit(n):
    """accepted_step (C through NativeVectors and the numpy twin through Vectors) against the interior point's
    formulas: dl = z - lower, du = upper - z and each bound multiplier z + alpha dz clipped by np.clip to
    [mu / (1e10 d), 1e10 mu / d] (0 where there is no bound), signs of zeros included."""
    rng = np.random.default_rng(n + 17)
    for _ in range(10):
        z = rng.standard_normal(n) * 10.0
        lower, upper = _bounds(rng, n, z)
        dl, du = z - lower, upper - z
        zL, zU = _multipliers(rng, dl), _multipliers(rng, du)
        dzL, dzU = (rng.standard_normal(n) * rng.choice([1e-12, 1.0, 1e8], n) * np.isfinite(d) for d in (dl, du))
        for alpha, mu in ((1.0, 0.1), (0.37, 1e-9)):
            expected = [dl, du] + [np.clip(m + alpha * s, mu / (1e10 * d), 1e10 * mu / d)
                                   for m, s, d in ((zL, dzL, dl), (zU, dzU, du))]
            for vectors in _VECTORS:
                v = vectors(lower, upper, 0)
                v.zL[...], v.zU[...], v.dzL[...], v.dzU[...] = zL, zU, dzL, dzU
                v.accepted_step(z, alpha, mu)
                for a, b in zip((v.dl, v.du, v.zL, v.zU), expected):
                    assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
            assert n < 2400 or np.any(expected[2] != zL + alpha * dzL)  # the limits bite on some entries


@pytest.mark.parametrize("n", [0, 1, 7, 2400])
def test_optimality_is_its_formulas_bit_for_bit(n):
    """optimality (C through NativeVectors, and the numpy twin through Vectors) against the interior point's formulas:
    max |J^T y + g - zL + zU|, the complementarity products dl zL over the lower bounds then du zU over the upper ones,
    and the largest product; a nan entry makes the dual maximum nan."""
    rng = np.random.default_rng(n + 19)
    z = rng.standard_normal(n) * 10.0
    lower, upper = _bounds(rng, n, z)
    for v in (vectors(lower, upper, 0) for vectors in _VECTORS):
        v.start(z)
        v.zL[...], v.zU[...] = _multipliers(rng, v.dl), _multipliers(rng, v.du)
        jt_y, g = rng.standard_normal(n) * 1e3, rng.standard_normal(n)
        lo, up = np.isfinite(lower).nonzero()[0], np.isfinite(upper).nonzero()[0]
        products = np.concatenate([v.dl[lo] * v.zL[lo], v.du[up] * v.zU[up]])
        expected = (float(np.abs(jt_y + g - v.zL + v.zU).max(initial=0.0)), float(products.max(initial=0.0)))
        assert v.optimality(jt_y.copy(), g) == expected and np.array_equal(v.products, products)
        if n:
            jt_y[n // 2] = np.nan
            assert np.isnan(v.optimality(jt_y, g)[0])


@native
@pytest.mark.parametrize("n, m", [(1, 0), (7, 3), (2400, 2000)])
def test_native_vectors_are_the_numpy_vectors_bit_for_bit(n, m):
    """NativeVectors (the C kernels on buffers bound once) give the numpy Vectors' numbers through an interior point's
    sequence of calls: start, barrier terms, step to the bounds, multiplier steps, accepted step, and again."""
    rng = np.random.default_rng(n + 18)
    z = rng.standard_normal(n) * 10.0
    lower, upper = _bounds(rng, n, z)
    twins = ipk.Vectors(lower, upper, m), ipk.NativeVectors(lower, upper, m)
    for v in twins:
        v.start(z)
    for mu in (0.1, 1e-3):
        g, c, dz = rng.standard_normal(n), rng.standard_normal(m), rng.standard_normal(n)
        jt_y = rng.standard_normal(n)
        assert twins[0].optimality(jt_y.copy(), g) == twins[1].optimality(jt_y.copy(), g)
        assert np.array_equal(twins[0].products, twins[1].products)
        results = [(v.barrier_terms(g, mu, c), v.step_to_bounds(dz, 0.99), v.multiplier_steps(dz, 0.99)) for v in twins]
        (terms, rhs), alpha, (dzL, dzU, alpha_z) = results[0]
        (terms_c, rhs_c), alpha_c, (dzL_c, dzU_c, alpha_z_c) = results[1]
        assert np.array_equal(terms, terms_c) and np.array_equal(rhs, rhs_c) and alpha == alpha_c
        assert np.array_equal(dzL, dzL_c) and np.array_equal(dzU, dzU_c) and alpha_z == alpha_z_c
        assert 0.0 < alpha <= 1.0 and 0.0 < alpha_z <= 1.0
        z = z + alpha * dz
        for v in twins:
            v.accepted_step(z, alpha_z, mu)
        for name in ("dl", "du", "zL", "zU"):
            assert np.array_equal(getattr(twins[0], name), getattr(twins[1], name)), name


@native
def test_native_vectors_refuse_vectors_they_cannot_read():
    """A short, strided or integer vector handed to NativeVectors is refused (ctypes would read past it)."""
    v = ipk.NativeVectors(np.zeros(6), np.full(6, np.inf), 2)
    with pytest.raises(ValueError):
        v.barrier_terms(np.ones(5), 0.1, np.ones(2))
    with pytest.raises(ValueError):
        v.barrier_terms(np.ones(6), 0.1, np.ones(3))
    with pytest.raises(ValueError):
        v.step_to_bounds(np.ones(12)[::2], 0.99)
    with pytest.raises(ValueError):
        v.accepted_step(np.ones(6, int), 0.5, 0.1)
    with pytest.raises(ValueError):
        v.log_barrier(np.ones(5))

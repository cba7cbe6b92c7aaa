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
    with pytest.raises(ValueError):
        ipk.barrier_terms(v, v, v, v, np.ones(10, int), 0.1, v)


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

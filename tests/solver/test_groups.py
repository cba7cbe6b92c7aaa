"""SO(3), SE(2), SE(3) maps against matrix exponentials, matrix Cayley formulas and central differences."""

import numpy as np
import pytest
from scipy.linalg import expm

from addon.solver import groups

GROUPS = {
    # name: (hat, vee, exp, cay, dcay, dcay_inv, Ad, ad, dimension)
    "so3": (groups.so3_hat, groups.so3_vee, groups.so3_exp, groups.so3_cay, groups.so3_dcay,
            groups.so3_dcay_inv, groups.so3_Ad, groups.so3_ad, 3),
    "se2": (groups.se2_hat, groups.se2_vee, groups.se2_exp, groups.se2_cay, groups.se2_dcay,
            groups.se2_dcay_inv, groups.se2_Ad, groups.se2_ad, 3),
    "se3": (groups.se3_hat, groups.se3_vee, groups.se3_exp, groups.se3_cay, groups.se3_dcay,
            groups.se3_dcay_inv, groups.se3_Ad, groups.se3_ad, 6),
}


def samples(n, dim, scale=1.5, seed=0):
    return np.random.default_rng(seed).normal(scale=scale, size=(n, dim))


def matrix_cay(X):
    eye = np.eye(X.shape[-1])
    return np.linalg.solve(eye - X / 2, eye + X / 2)


@pytest.mark.parametrize("name", GROUPS)
def test_hat_vee_bracket_and_adjoint(name):
    hat, vee, exp, _, _, _, Ad, ad, n = GROUPS[name]
    for a, b in zip(samples(5, n), samples(5, n, seed=1)):
        A, B = hat(a), hat(b)
        assert np.allclose(vee(A), a, atol=1e-15)
        assert np.allclose(vee(A @ B - B @ A), ad(a) @ b, atol=1e-13)
        g = exp(b)
        assert np.allclose(vee(g @ A @ np.linalg.inv(g)), Ad(g) @ a, atol=1e-12)


@pytest.mark.parametrize("name", GROUPS)
@pytest.mark.parametrize("scale", [1e-6, 1e-4 * 0.999, 1e-4 * 1.001, 0.3, 2.5])
def test_exp_is_the_matrix_exponential(name, scale):
    hat, _, exp, *_ = GROUPS[name]
    for xi in samples(4, GROUPS[name][-1], scale=scale, seed=2):
        # round-off of both sides grows with the angle (sin, cos of |w| ~ 10 at the largest scale)
        assert np.allclose(exp(xi), expm(hat(xi)), rtol=0, atol=1e-14 * max(1.0, xi @ xi))


@pytest.mark.parametrize("name", GROUPS)
def test_cayley_is_the_matrix_cayley_map_and_agrees_with_exp_to_third_order(name):
    hat, _, exp, cay, *_ = GROUPS[name]
    xi = samples(1, GROUPS[name][-1], seed=3)[0]
    assert np.allclose(cay(xi), matrix_cay(hat(xi)), atol=1e-14)
    errors = [np.abs(cay(s * xi) - expm(hat(s * xi))).max() for s in (0.02, 0.01, 0.005)]
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 3) < 0.05), orders


@pytest.mark.parametrize("name", GROUPS)
def test_dcay_is_the_right_trivialised_derivative(name):
    hat, vee, _, cay, dcay, dcay_inv, *_ = GROUPS[name]
    n = GROUPS[name][-1]
    eps = 1e-6
    for xi in samples(4, n, seed=4):
        fd = np.empty((n, n))
        inv = np.linalg.inv(cay(xi))
        for j in range(n):
            d = np.eye(n)[j] * eps
            fd[:, j] = vee((cay(xi + d) - cay(xi - d)) / (2 * eps) @ inv)
        assert np.allclose(dcay(xi), fd, atol=1e-9)
        assert np.allclose(dcay(xi) @ dcay_inv(xi), np.eye(n), atol=1e-14)
        # the independent matrix identity dcay^-1(Z) = (I - X/2) hat(Z) (I + X/2)
        X, eye = hat(xi), np.eye(hat(xi).shape[0])
        for z in np.eye(n):
            assert np.allclose(dcay_inv(xi) @ z, vee((eye - X / 2) @ hat(z) @ (eye + X / 2)), atol=1e-14)


def test_printed_translation_block_and_diagonal_are_wrong():
    """The errata the exact maps fix: the seed's printed B_cay and SE(2) diagonal differ from cay."""
    xi = samples(1, 6, seed=5)[0]
    w, v = xi[:3], xi[3:]
    printed = 2 / (4 + w @ w) * (2 * np.eye(3) + groups.so3_hat(w)) @ v
    assert np.abs(printed - groups.se3_cay(xi)[:3, 3]).max() > 1e-2
    assert np.allclose(groups.so3_dcay(w) @ v, printed)
    c = groups.se2_cay(np.array([0.7, 0.2, -0.1]))
    assert np.isclose(c[0, 0], (4 - 0.49) / 4.49) and np.isclose(np.linalg.det(c[:2, :2]), 1.0)


@pytest.mark.parametrize("name", ["se2", "se3"])
def test_momentum_transport_identity(name):
    """dcay_inv(-xi)^T = Ad_cay(xi)^T dcay_inv(xi)^T: the identity behind discrete Noether conservation."""
    _, _, _, cay, _, dcay_inv, Ad, _, n = GROUPS[name]
    for xi in samples(3, n, seed=6):
        assert np.allclose(dcay_inv(-xi).T, Ad(cay(xi)).T @ dcay_inv(xi).T, atol=1e-13)


def test_dcay_inv_transpose_action_and_its_derivative():
    eps = 1e-6
    for xi, mu in zip(samples(4, 6, seed=7), samples(4, 6, seed=8)):
        assert np.allclose(groups.se3_dcay_inv_T(xi, mu), groups.se3_dcay_inv(xi).T @ mu, atol=1e-13)
        fd = np.column_stack([(groups.se3_dcay_inv_T(xi + d, mu) - groups.se3_dcay_inv_T(xi - d, mu)) / (2 * eps)
                              for d in np.eye(6) * eps])
        assert np.allclose(groups.se3_dcay_inv_T_dxi(xi, mu), fd, atol=1e-8)


@pytest.mark.parametrize("name", GROUPS)
def test_batched_over_leading_axes(name):
    hat, vee, exp, cay, dcay, dcay_inv, Ad, ad, n = GROUPS[name]
    xi = samples(12, n, seed=9).reshape(3, 4, n)
    for f in (hat, exp, cay, dcay, dcay_inv, ad):
        batched = f(xi)
        assert np.allclose(batched[1, 2], f(xi[1, 2]), atol=0)
    g = exp(xi)
    assert np.allclose(Ad(g)[2, 3], Ad(g[2, 3]), atol=0)
    assert np.allclose(vee(hat(xi)), xi, atol=0)


def test_se3_inverse_and_element():
    g = groups.se3_exp(samples(5, 6, seed=10))
    assert np.allclose(groups.se3_inverse(g) @ g, np.eye(4), atol=1e-14)
    assert np.allclose(groups.se3_element(g[..., :3, :3], g[..., :3, 3]), g, atol=0)


def test_se2_log_inverts_exp():
    xi = samples(20, 3, seed=11)
    xi[:, 0] = np.clip(xi[:, 0], -3.0, 3.0)
    xi[:3, 0] = (0.0, 1e-9, -2e-5)
    assert np.allclose(groups.se2_log(groups.se2_exp(xi)), xi, atol=1e-12)


@pytest.mark.parametrize("w", [0.0, 3e-5, -9.9e-5, 1.01e-4, -0.3, 2.9])
def test_se2_exp_translation_is_se2_exps_translation(w):
    """The scalar translation car.arc steps with equals se2_exp's on both sides of the Taylor switch (1e-4)."""
    x, y = groups.se2_exp_translation(w, 1.7, -0.4)
    g = groups.se2_exp(np.array([w, 1.7, -0.4]))
    np.testing.assert_allclose([x, y], g[:2, 2], rtol=1e-15, atol=1e-16)

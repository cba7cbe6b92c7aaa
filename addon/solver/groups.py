"""Matrix Lie groups SO(3), SE(2), SE(3): hat/vee, exp, the Cayley map, its right-trivialised derivative.

Owns the group maps the vehicle integrators need (seed 001 §2.2, eqs. 11-14, Appendix B) and nothing
about vehicles. Vector conventions, all (angular, linear) as in the seed's equations:
  so(3): w (3,);  se(2): (w, vx, vy);  se(3): (wx, wy, wz, vx, vy, vz).
Elements are matrices: SO(3) (3, 3), SE(2) (3, 3) homogeneous, SE(3) (4, 4) homogeneous.
Every function broadcasts over leading axes.

Right-trivialised derivative of a map tau: dtau_xi(d) = (D tau(xi) . d) tau(xi)^-1, as a matrix on
vectors; dcay_inv is its inverse, the seed's C_tau. For the Cayley map cay(X) = (I - X/2)^-1 (I + X/2)
one has dcay_X(D) = (I - X/2)^-1 D (I + X/2)^-1 exactly, so every closed form below is exact (not a
truncated series). Errata applied (docs/seeds.md): the SE(3) translation block is (I - W/2)^-1 v (001-A), the
SE(2) diagonal is 4 - w^2 (001-B).
"""

from __future__ import annotations

import math

import numpy as np

from .lie import cross, hat

_SMALL = 1e-4  # below this angle the sinc-like coefficients use their Taylor series (error < 1e-20)


def _eye(shape: tuple[int, ...], n: int) -> np.ndarray:
    return np.broadcast_to(np.eye(n), shape + (n, n)).copy()


def _outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., :, None] * b[..., None, :]


def _sincos_coefficients(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sin t / t, (1 - cos t) / t^2 and (t - sin t) / t^3, with Taylor series near t = 0."""
    small = theta < _SMALL
    t = np.where(small, 1.0, theta)
    t2 = theta * theta
    a = np.where(small, 1 - t2 / 6 + t2 * t2 / 120, np.sin(t) / t)
    b = np.where(small, 0.5 - t2 / 24 + t2 * t2 / 720, (1 - np.cos(t)) / t**2)
    c = np.where(small, 1 / 6 - t2 / 120 + t2 * t2 / 5040, (t - np.sin(t)) / t**3)
    return a, b, c


# --------------------------------------------------------------------------------------------- SO(3)

def so3_hat(w: np.ndarray) -> np.ndarray:
    """Skew matrices (..., 3, 3) of w (..., 3): so3_hat(w) @ x = w x x."""
    return hat(w)


def so3_vee(W: np.ndarray) -> np.ndarray:
    """Inverse of so3_hat: (..., 3, 3) -> (..., 3) (reads the skew part)."""
    W = np.asarray(W, dtype=float)
    return 0.5 * np.stack([W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0], W[..., 1, 0] - W[..., 0, 1]], -1)


def so3_exp(w: np.ndarray) -> np.ndarray:
    """Rotation matrices exp(hat(w)) (..., 3, 3), Rodrigues' formula (seed eq. 11)."""
    w = np.asarray(w, dtype=float)
    a, b, _ = _sincos_coefficients(np.linalg.norm(w, axis=-1))
    W = hat(w)
    return _eye(w.shape[:-1], 3) + a[..., None, None] * W + b[..., None, None] * (W @ W)


def so3_cay(w: np.ndarray) -> np.ndarray:
    """Cayley rotations (I - W/2)^-1 (I + W/2) = I + 4/(4 + |w|^2) (W + W^2/2) (seed eq. 12)."""
    w = np.asarray(w, dtype=float)
    W = hat(w)
    s = 4.0 / (4.0 + np.sum(w * w, axis=-1))
    return _eye(w.shape[:-1], 3) + s[..., None, None] * (W + 0.5 * (W @ W))


def so3_dcay(w: np.ndarray) -> np.ndarray:
    """Right-trivialised derivative of so3_cay at w: 2 (2 I + W) / (4 + |w|^2), (..., 3, 3)."""
    w = np.asarray(w, dtype=float)
    s = 2.0 / (4.0 + np.sum(w * w, axis=-1))
    return s[..., None, None] * (2.0 * _eye(w.shape[:-1], 3) + hat(w))


def so3_dcay_inv(w: np.ndarray) -> np.ndarray:
    """Inverse of so3_dcay: I - W/2 + w w^T / 4, (..., 3, 3) (seed eq. 14, rotation block)."""
    w = np.asarray(w, dtype=float)
    return _eye(w.shape[:-1], 3) - 0.5 * hat(w) + 0.25 * _outer(w, w)


def so3_Ad(R: np.ndarray) -> np.ndarray:
    """Adjoint of a rotation on so(3) vectors: Ad_R w = vee(R hat(w) R^T) = R w."""
    return np.array(R, dtype=float)


def so3_ad(w: np.ndarray) -> np.ndarray:
    """ad_w as a matrix: ad_w z = vee([hat(w), hat(z)]) = w x z, so ad_w = hat(w)."""
    return hat(w)


# --------------------------------------------------------------------------------------------- SE(2)

def se2_hat(xi: np.ndarray) -> np.ndarray:
    """(w, vx, vy) (..., 3) -> [[0, -w, vx], [w, 0, vy], [0, 0, 0]] (..., 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    out = np.zeros(xi.shape[:-1] + (3, 3))
    out[..., 0, 1] = -xi[..., 0]
    out[..., 1, 0] = xi[..., 0]
    out[..., 0, 2] = xi[..., 1]
    out[..., 1, 2] = xi[..., 2]
    return out


def se2_vee(X: np.ndarray) -> np.ndarray:
    """Inverse of se2_hat: (..., 3, 3) -> (w, vx, vy)."""
    X = np.asarray(X, dtype=float)
    return np.stack([0.5 * (X[..., 1, 0] - X[..., 0, 1]), X[..., 0, 2], X[..., 1, 2]], -1)


def se2_element(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Homogeneous matrices (..., 3, 3) of planar poses (heading theta, position x, y)."""
    theta, x, y = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (theta, x, y)))
    out = _eye(theta.shape, 3)
    c, s = np.cos(theta), np.sin(theta)
    out[..., 0, 0], out[..., 0, 1], out[..., 1, 0], out[..., 1, 1] = c, -s, s, c
    out[..., 0, 2], out[..., 1, 2] = x, y
    return out


def se2_exp(xi: np.ndarray) -> np.ndarray:
    """exp(se2_hat(xi)) (..., 3, 3): rotation by w, translation along the circular arc (Appendix B)."""
    xi = np.asarray(xi, dtype=float)
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    a, b, _ = _sincos_coefficients(np.abs(w))
    out = se2_element(w, a * vx - b * w * vy, b * w * vx + a * vy)
    return out


def se2_exp_translation(w: float, vx: float, vy: float) -> tuple[float, float]:
    """The translation (x, y) of se2_exp((w, vx, vy)) for one twist, in Python floats: the same coefficients
    and Taylor switch as se2_exp without its array overhead, for loops that step one pose at a time."""
    t2 = w * w
    if abs(w) < _SMALL:
        a, b = 1 - t2 / 6 + t2 * t2 / 120, 0.5 - t2 / 24 + t2 * t2 / 720
    else:
        a, b = math.sin(w) / w, (1 - math.cos(w)) / t2
    return a * vx - b * w * vy, b * w * vx + a * vy


def se2_log(g: np.ndarray) -> np.ndarray:
    """Inverse of se2_exp for rotations below pi: (..., 3, 3) -> (w, vx, vy) with the arc's translation."""
    g = np.asarray(g, dtype=float)
    w = np.arctan2(g[..., 1, 0], g[..., 0, 0])
    a, b, _ = _sincos_coefficients(np.abs(w))
    bw, det = b * w, a * a + (b * w) ** 2  # translation = [[a, -b w], [b w, a]] (vx, vy)
    x, y = g[..., 0, 2], g[..., 1, 2]
    return np.stack([w, (a * x + bw * y) / det, (-bw * x + a * y) / det], -1)


def se2_cay(xi: np.ndarray) -> np.ndarray:
    """Cayley map on SE(2) (..., 3, 3), Appendix B with the diagonal 4 - w^2 (erratum P2)."""
    xi = np.asarray(xi, dtype=float)
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    d = 4.0 + w * w
    out = _eye(w.shape, 3)
    out[..., 0, 0] = out[..., 1, 1] = (4.0 - w * w) / d
    out[..., 0, 1] = -4.0 * w / d
    out[..., 1, 0] = 4.0 * w / d
    out[..., 0, 2] = (4.0 * vx - 2.0 * w * vy) / d
    out[..., 1, 2] = (4.0 * vy + 2.0 * w * vx) / d
    return out


def se2_ad(xi: np.ndarray) -> np.ndarray:
    """ad_xi (..., 3, 3): ad_xi eta = vee([hat(xi), hat(eta)]) = [[0,0,0],[vy,0,-w],[-vx,w,0]] eta."""
    xi = np.asarray(xi, dtype=float)
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    out = np.zeros(xi.shape[:-1] + (3, 3))
    out[..., 1, 0], out[..., 1, 2] = vy, -w
    out[..., 2, 0], out[..., 2, 1] = -vx, w
    return out


def se2_Ad(g: np.ndarray) -> np.ndarray:
    """Ad_g (..., 3, 3) for g (..., 3, 3): vee(g hat(xi) g^-1) = [[1,0,0],[y, R],[-x, R]] xi."""
    g = np.asarray(g, dtype=float)
    out = np.zeros(g.shape[:-2] + (3, 3))
    out[..., 0, 0] = 1.0
    out[..., 1:, 1:] = g[..., :2, :2]
    out[..., 1, 0] = g[..., 1, 2]
    out[..., 2, 0] = -g[..., 0, 2]
    return out


def se2_dcay_inv(xi: np.ndarray) -> np.ndarray:
    """C_cay(xi) = I - ad_xi / 2 + (w / 4) [xi, 0, 0]: the exact inverse of se2_dcay (Appendix B)."""
    xi = np.asarray(xi, dtype=float)
    out = _eye(xi.shape[:-1], 3) - 0.5 * se2_ad(xi)
    out[..., :, 0] += 0.25 * xi[..., :1] * xi
    return out


def se2_dcay(xi: np.ndarray) -> np.ndarray:
    """Right-trivialised derivative of se2_cay (..., 3, 3): [[1/a, 0], [-B^-1 c / a, B^-1]] of C = [[a,0],[c,B]]."""
    xi = np.asarray(xi, dtype=float)
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    a = 1.0 + 0.25 * w * w
    c0, c1 = -0.5 * vy + 0.25 * w * vx, 0.5 * vx + 0.25 * w * vy
    out = np.zeros(xi.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1.0 / a
    out[..., 1, 1] = out[..., 2, 2] = 1.0 / a  # B^-1 = [[1, -w/2], [w/2, 1]] / a
    out[..., 1, 2] = -0.5 * w / a
    out[..., 2, 1] = 0.5 * w / a
    out[..., 1, 0] = -(c0 - 0.5 * w * c1) / (a * a)
    out[..., 2, 0] = -(0.5 * w * c0 + c1) / (a * a)
    return out


# --------------------------------------------------------------------------------------------- SE(3)

def se3_hat(xi: np.ndarray) -> np.ndarray:
    """(w, v) (..., 6) -> [[hat(w), v], [0, 0]] (..., 4, 4) (seed eq. 6)."""
    xi = np.asarray(xi, dtype=float)
    out = np.zeros(xi.shape[:-1] + (4, 4))
    out[..., :3, :3] = hat(xi[..., :3])
    out[..., :3, 3] = xi[..., 3:]
    return out


def se3_vee(X: np.ndarray) -> np.ndarray:
    """Inverse of se3_hat: (..., 4, 4) -> (w, v) (..., 6)."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([so3_vee(X[..., :3, :3]), X[..., :3, 3]], -1)


def se3_element(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Homogeneous matrices (..., 4, 4) from rotations (..., 3, 3) and positions (..., 3)."""
    R, x = np.asarray(R, dtype=float), np.asarray(x, dtype=float)
    out = _eye(np.broadcast_shapes(R.shape[:-2], x.shape[:-1]), 4)
    out[..., :3, :3] = R
    out[..., :3, 3] = x
    return out


def se3_inverse(g: np.ndarray) -> np.ndarray:
    """Inverse of rigid transforms (..., 4, 4)."""
    R = np.swapaxes(g[..., :3, :3], -1, -2)
    return se3_element(R, -np.einsum("...ij,...j->...i", R, g[..., :3, 3]))


def se3_exp(xi: np.ndarray) -> np.ndarray:
    """exp(se3_hat(xi)) (..., 4, 4): Rodrigues rotation, translation B_exp(w) v (seed eqs. 11, 13)."""
    xi = np.asarray(xi, dtype=float)
    w = xi[..., :3]
    a, b, c = _sincos_coefficients(np.linalg.norm(w, axis=-1))
    W = hat(w)
    W2 = W @ W
    eye = _eye(w.shape[:-1], 3)
    R = eye + a[..., None, None] * W + b[..., None, None] * W2
    V = eye + b[..., None, None] * W + c[..., None, None] * W2
    return se3_element(R, np.einsum("...ij,...j->...i", V, xi[..., 3:]))


def se3_cay(xi: np.ndarray) -> np.ndarray:
    """Cayley map (I - X/2)^-1 (I + X/2) on SE(3), (..., 4, 4).

    Rotation so3_cay(w); translation (I - W/2)^-1 v = (4 v + 2 w x v + w (w.v)) / (4 + |w|^2), the exact
    block (erratum P1: the seed's printed B_cay is the rotation block of se3_dcay instead).
    """
    xi = np.asarray(xi, dtype=float)
    w, v = xi[..., :3], xi[..., 3:]
    d = 4.0 + np.sum(w * w, axis=-1)
    x = (4.0 * v + 2.0 * cross(w, v) + w * np.sum(w * v, axis=-1)[..., None]) / d[..., None]
    return se3_element(so3_cay(w), x)


def se3_ad(xi: np.ndarray) -> np.ndarray:
    """ad_xi (..., 6, 6) = [[hat(w), 0], [hat(v), hat(w)]] (seed eq. 14): ad_xi eta = vee([hat xi, hat eta])."""
    xi = np.asarray(xi, dtype=float)
    out = np.zeros(xi.shape[:-1] + (6, 6))
    W = hat(xi[..., :3])
    out[..., :3, :3] = W
    out[..., 3:, 3:] = W
    out[..., 3:, :3] = hat(xi[..., 3:])
    return out


def se3_Ad(g: np.ndarray) -> np.ndarray:
    """Ad_g (..., 6, 6) = [[R, 0], [hat(x) R, R]]: vee(g hat(xi) g^-1) = Ad_g xi."""
    g = np.asarray(g, dtype=float)
    R = g[..., :3, :3]
    out = np.zeros(g.shape[:-2] + (6, 6))
    out[..., :3, :3] = R
    out[..., 3:, 3:] = R
    out[..., 3:, :3] = hat(g[..., :3, 3]) @ R
    return out


def se3_dcay(xi: np.ndarray) -> np.ndarray:
    """Right-trivialised derivative of se3_cay, (..., 6, 6) = [[D, 0], [hat(v) D / 2, P]].

    D = so3_dcay(w) and P = (I - W/2)^-1 = (4 I + 2 W + w w^T) / (4 + |w|^2).
    """
    xi = np.asarray(xi, dtype=float)
    w, v = xi[..., :3], xi[..., 3:]
    D = so3_dcay(w)
    d = 4.0 + np.sum(w * w, axis=-1)
    P = (4.0 * _eye(w.shape[:-1], 3) + 2.0 * hat(w) + _outer(w, w)) / d[..., None, None]
    out = np.zeros(xi.shape[:-1] + (6, 6))
    out[..., :3, :3] = D
    out[..., 3:, :3] = 0.5 * hat(v) @ D
    out[..., 3:, 3:] = P
    return out


def se3_dcay_inv(xi: np.ndarray) -> np.ndarray:
    """C_cay(xi) (..., 6, 6) = [[I - W/2 + w w^T/4, 0], [-(I - W/2) hat(v) / 2, I - W/2]] (seed eq. 14, exact)."""
    xi = np.asarray(xi, dtype=float)
    w, v = xi[..., :3], xi[..., 3:]
    B = _eye(w.shape[:-1], 3) - 0.5 * hat(w)
    out = np.zeros(xi.shape[:-1] + (6, 6))
    out[..., :3, :3] = B + 0.25 * _outer(w, w)
    out[..., 3:, 3:] = B
    out[..., 3:, :3] = -0.5 * B @ hat(v)
    return out


def se3_dcay_inv_T(xi: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """C_cay(xi)^T mu (..., 6) without forming matrices (the momentum transport of the DEP, eq. 17).

    With nu = mu_v + w x mu_v / 2: (mu_w + w x mu_w / 2 + w (w.mu_w) / 4 + v x nu / 2, nu).
    """
    w, v = xi[..., :3], xi[..., 3:]
    mw, mv = mu[..., :3], mu[..., 3:]
    nu = mv + 0.5 * cross(w, mv)
    top = mw + 0.5 * cross(w, mw) + 0.25 * w * np.sum(w * mw, axis=-1)[..., None] + 0.5 * cross(v, nu)
    return np.concatenate([top, nu], -1)


def se3_dcay_inv_T_dxi(xi: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Derivative of se3_dcay_inv_T(xi, mu) with respect to xi at fixed mu, (..., 6, 6).

    d nu/d w = -hat(mu_v)/2; d top/d w = -hat(mu_w)/2 + ((w.mu_w) I + w mu_w^T)/4 - hat(v) hat(mu_v)/4;
    d top/d v = -hat(nu)/2; d nu/d v = 0.
    """
    w, v = xi[..., :3], xi[..., 3:]
    mw, mv = mu[..., :3], mu[..., 3:]
    nu = mv + 0.5 * cross(w, mv)
    H = hat(np.stack(np.broadcast_arrays(mw, nu, mv), axis=-2))  # (..., 3, 3, 3): hat(mu_w), hat(nu), hat(mu_v)
    eye = np.eye(3)
    out = np.zeros(H.shape[:-3] + (6, 6))
    # hat(v) hat(mu_v) = mu_v v^T - (v . mu_v) I
    dots = np.sum(w * mw, axis=-1) + np.sum(v * mv, axis=-1)
    out[..., :3, :3] = -0.5 * H[..., 0, :, :] + 0.25 * (dots[..., None, None] * eye + _outer(w, mw) - _outer(mv, v))
    out[..., :3, 3:] = -0.5 * H[..., 1, :, :]
    out[..., 3:, :3] = -0.5 * H[..., 2, :, :]
    return out

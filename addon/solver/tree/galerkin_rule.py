"""The Galerkin rules of tree/galerkin.py: control points, quadrature nodes and weights, interpolation matrices."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.polynomial import legendre

RULES = ("lobatto", "gauss")


@dataclass(frozen=True)
class Rule:
    """Control points tau (s + 1,), nodes c (r,), weights w (r,), P, D (r, s + 1) on the unit step."""

    s: int
    tau: np.ndarray
    c: np.ndarray
    w: np.ndarray
    P: np.ndarray
    D: np.ndarray


def _lobatto_points(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The n-point Lobatto nodes and weights on [0, 1]."""
    m = n - 1
    inner = legendre.Legendre.basis(m).deriv().roots() if m > 1 else np.zeros(0)
    x = np.concatenate([[-1.0], np.sort(np.real(inner)), [1.0]])
    w = 2.0 / (m * (m + 1) * legendre.Legendre.basis(m)(x) ** 2)
    return 0.5 * (x + 1.0), 0.5 * w


@cache
def rule(s: int, quadrature: str = "lobatto") -> Rule:
    """The Galerkin rule of degree s with the given quadrature (module docstring)."""
    if s not in (1, 2, 3, 4) or quadrature not in RULES:
        raise ValueError(f"Galerkin degree s must be 1..4 and quadrature one of {RULES}, got {s}, {quadrature!r}")
    tau, lob_w = _lobatto_points(s + 1)
    if quadrature == "lobatto":
        c, w = tau, lob_w
    else:
        x, gw = legendre.leggauss(s)
        c, w = 0.5 * (x + 1.0), 0.5 * gw
    V = np.vander(tau, s + 1, increasing=True)  # V[a, k] = tau_a^k; basis coefficients = inv(V)
    coef = np.linalg.inv(V)  # coef[k, a]: coefficient of tau^k in l_a
    powers = np.vander(c, s + 1, increasing=True)
    dpowers = np.zeros_like(powers)
    dpowers[:, 1:] = powers[:, :-1] * np.arange(1, s + 1)
    # Lobatto's nodes are the control points, where the Lagrange basis is exactly the unit vectors (P = I); the
    # product powers @ coef leaves round-off there (-1.8e-15 at s = 4), which would hide the end nodes from the
    # steps' shortcuts (galerkin_step.c: a node at x^0 keeps its pose, the one at x^s gives the end energy)
    P = np.eye(s + 1) if quadrature == "lobatto" else powers @ coef
    return Rule(s, tau, c, w, P, dpowers @ coef)




@cache
def extrapolation(s: int) -> np.ndarray:
    """E (s, s + 1): the degree-s interpolant of one step's control points evaluated at the next step's control
    points 1 + tau_1 .. 1 + tau_s (the next step's warm start)."""
    tau = rule(s).tau  # the control points are Lobatto's under either quadrature
    coef = np.linalg.inv(np.vander(tau, s + 1, increasing=True))
    return np.vander(1.0 + tau[1:], s + 1, increasing=True) @ coef

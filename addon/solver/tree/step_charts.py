"""Per-step exponential coordinates of ball and free-joint rotations: R(s) = C1 exp(s xi) across one step.

A step of the midpoint rule (midpoint.py) parametrises each chart's new rotation relative to the previous one,
C2 = C1 exp(xi), and evaluates the Lagrangian at the geodesic midpoint Cm = C1 exp(xi / 2) with body angular
velocity xi / dt (constant along the geodesic). Conjugating by any rotation Q maps exp(xi) to Q^T exp(xi) Q and
exp(xi / 2) to Q^T exp(xi / 2) Q, so this midpoint is equivariant: turning a body about its own axis turns its
midpoint the same way, and the spin of an axisymmetric link is a discrete Noether momentum, kept to the Newton
tolerance. (The Euler angles of the chart, which this replaces, are not equivariant: their midpoint gave slender
links a spurious spin, O(dt^2) per step divided by the small axial inertia.) The tree's kinematics keep the
chart's rx ry rz primitives, evaluated at angle 0 in the chart of interest, where their rates are the body
angular velocity; a later Galerkin step (control points at s in (0, 1)) evaluates the same map at its points.

Jacobians, with X = hat(xi), t = |xi|, b = (1 - cos t) / t^2, c = (t - sin t) / t^3:
  J_L(xi) = I + b X + c X^2  (d exp(xi) exp(-xi) = hat(J_L dxi)),  J_R(xi) = J_L(xi)^T = J_L(-xi),
  d(J_L(xi)^T v)/dxi = b hat(v) + c ((xi . v) I + xi v^T - 2 v xi^T) + (hat(v) xi b' + X^2 v c') xi^T / t,
b', c' their derivatives in t (series below t = 0.1). Checked against finite differences in
tests/solver/tree/test_step_charts.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..groups import so3_exp
from ..lie import hat
from .kinematics import nearest_rotation

_SERIES_BELOW = 0.1  # below this angle the coefficients use their Taylor series (truncation < 1e-15)


def _coefficients(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """b, c and b' / t, c' / t (module docstring) at angles t (...)."""
    small = t < _SERIES_BELOW
    s = np.where(small, 1.0, t)
    t2 = t * t
    b = np.where(small, 0.5 - t2 / 24 + t2**2 / 720 - t2**3 / 40320, 2.0 * np.sin(0.5 * s) ** 2 / s**2)
    c = np.where(small, 1 / 6 - t2 / 120 + t2**2 / 5040 - t2**3 / 362880, (s - np.sin(s)) / s**3)
    db = np.where(small, -1 / 12 + t2 / 180 - t2**2 / 6720 + t2**3 / 453600,
                  np.sin(s) / s**3 - 4.0 * np.sin(0.5 * s) ** 2 / s**4)
    dc = np.where(small, -1 / 60 + t2 / 1260 - t2**2 / 60480 + t2**3 / 4989600,
                  (1.0 - np.cos(s)) / s**4 - 3.0 * (s - np.sin(s)) / s**5)
    return b, c, db, dc


def _outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., :, None] * b[..., None, :]


def left_jacobian(xi: np.ndarray) -> np.ndarray:
    """J_L(xi) (..., 3, 3) for rotation vectors xi (..., 3)."""
    b, c, _, _ = _coefficients(np.linalg.norm(xi, axis=-1))
    X = hat(xi)
    return np.eye(3) + b[..., None, None] * X + c[..., None, None] * (X @ X)


def left_jacobian_transpose_derivative(xi: np.ndarray, v: np.ndarray) -> np.ndarray:
    """d(J_L(xi)^T v)/dxi (..., 3, 3) at fixed covectors v (..., 3) (module docstring)."""
    b, c, db, dc = _coefficients(np.linalg.norm(xi, axis=-1))
    V, X = hat(v), hat(xi)
    xv = np.einsum("...i,...i->...", xi, v)
    Vxi = np.einsum("...ij,...j->...i", V, xi)
    X2v = np.einsum("...ij,...j->...i", X @ X, v)
    return (b[..., None, None] * V
            + c[..., None, None] * (xv[..., None, None] * np.eye(3) + _outer(xi, v) - 2.0 * _outer(v, xi))
            + _outer(db[..., None] * Vxi + dc[..., None] * X2v, xi))


def rotation_at(charts: np.ndarray, xi: np.ndarray, s: float) -> np.ndarray:
    """The rotations C1 exp(s xi) (nball, 3, 3) at fraction s of the step from charts C1 (nball, 3, 3)."""
    return charts @ so3_exp(s * xi)


@dataclass(frozen=True)
class StepCharts:
    """One step's charts at increments xi (nball, 3): mid = C1 exp(xi / 2), end = C1 exp(xi) (nball, 3, 3),
    JL = J_L(xi) and JL_half = J_L(xi / 2) (nball, 3, 3)."""

    xi: np.ndarray
    mid: np.ndarray
    end: np.ndarray
    JL: np.ndarray
    JL_half: np.ndarray


def step_charts(charts: np.ndarray, xi: np.ndarray) -> StepCharts:
    """The charts of a step from C1 = charts by increments xi."""
    return StepCharts(xi, rotation_at(charts, xi, 0.5), rotation_at(charts, xi, 1.0), left_jacobian(xi),
                      left_jacobian(0.5 * xi))


def fold(charts: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """The next step's charts C1 exp(xi), made orthonormal (kinematics.nearest_rotation: no drift)."""
    return nearest_rotation(rotation_at(charts, xi, 1.0))

"""Second-order jets: exact values, gradients and Hessians of small formulas, batched over stages.

Owns `Jet`, a quantity per instance (K,) with its gradient (K, n) and Hessian (K, n, n) over n local
variables, and the arithmetic that propagates them (sum, product, quotient by a jet, and any smooth
function of one jet given its first two derivatives): the chain rule to second order,

    f(u): grad = f'(u) du,  Hess = f'(u) d2u + f''(u) du du^T
    u v:  grad = u dv + v du,  Hess = u d2v + v d2u + du dv^T + dv du^T

A stage's equations written once over jets give exact second derivatives for every stage in one
vectorised pass (no differencing); StageDynamics.residual_hessian uses them.
"""

from __future__ import annotations

import numpy as np


def _add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """Sum of two Hessians, None standing for zero."""
    return b if a is None else (a if b is None else a + b)


class Jet:
    """value (K,), grad (K, n), hess (K, n, n) or None (zero) of one quantity over n local variables."""

    __slots__ = ("value", "grad", "hess")
    __array_ufunc__ = None  # array (op) jet: numpy defers to the jet's reflected operators

    def __init__(self, value: np.ndarray, grad: np.ndarray, hess: np.ndarray | None):
        self.value, self.grad, self.hess = value, grad, hess

    @staticmethod
    def variables(X: np.ndarray) -> list["Jet"]:
        """The columns of X (K, n) as independent jets (unit gradients, zero Hessians)."""
        K, n = X.shape
        eye = np.eye(n)
        return [Jet(X[:, i], np.broadcast_to(eye[i], (K, n)), None) for i in range(n)]

    def apply(self, f: np.ndarray, f1: np.ndarray, f2: np.ndarray) -> "Jet":
        """The jet of g(self) from g's value f, first derivative f1 and second derivative f2 at self.value."""
        g = self.grad
        curvature = f2[:, None, None] * g[:, :, None] * g[:, None, :]
        return Jet(f, f1[:, None] * g, curvature if self.hess is None else f1[:, None, None] * self.hess + curvature)

    def __add__(self, other: "Jet | float | np.ndarray") -> "Jet":
        if isinstance(other, Jet):
            return Jet(self.value + other.value, self.grad + other.grad, _add(self.hess, other.hess))
        return Jet(self.value + other, self.grad, self.hess)

    __radd__ = __add__

    def __neg__(self) -> "Jet":
        return Jet(-self.value, -self.grad, None if self.hess is None else -self.hess)

    def __sub__(self, other: "Jet | float | np.ndarray") -> "Jet":
        return self + (-other)

    def __rsub__(self, other: float | np.ndarray) -> "Jet":
        return (-self) + other

    def __mul__(self, other: "Jet | float | np.ndarray") -> "Jet":
        if isinstance(other, Jet):
            a, b = self.grad, other.grad
            outer = a[:, :, None] * b[:, None, :]
            hess = outer + np.swapaxes(outer, 1, 2)
            if other.hess is not None:
                hess += self.value[:, None, None] * other.hess
            if self.hess is not None:
                hess += other.value[:, None, None] * self.hess
            return Jet(self.value * other.value, self.value[:, None] * b + other.value[:, None] * a, hess)
        c = np.asarray(other, float)
        hess = None if self.hess is None else (c[..., None, None] * self.hess if c.ndim else c * self.hess)
        return Jet(self.value * c, c[..., None] * self.grad if c.ndim else c * self.grad, hess)

    __rmul__ = __mul__


def sin(u: Jet) -> Jet:
    s, c = np.sin(u.value), np.cos(u.value)
    return u.apply(s, c, -s)


def cos(u: Jet) -> Jet:
    s, c = np.sin(u.value), np.cos(u.value)
    return u.apply(c, -s, -c)


def tan(u: Jet) -> Jet:
    t = np.tan(u.value)
    d = 1 + t * t
    return u.apply(t, d, 2 * t * d)


def where(mask: np.ndarray, a: Jet, b: Jet) -> Jet:
    """Per instance a where mask else b."""
    n = a.grad.shape[1]
    ha = np.zeros((len(mask), n, n)) if a.hess is None else a.hess
    hb = np.zeros((len(mask), n, n)) if b.hess is None else b.hess
    return Jet(np.where(mask, a.value, b.value), np.where(mask[:, None], a.grad, b.grad),
               np.where(mask[:, None, None], ha, hb))


def weighted_hessian(rows: list[Jet], weights: np.ndarray) -> np.ndarray:
    """sum_i weights[:, i] Hess(rows[i]) (K, n, n)."""
    K, n = rows[0].grad.shape
    out = np.zeros((K, n, n))
    for i, r in enumerate(rows):
        if r.hess is not None:
            out += weights[:, i, None, None] * r.hess
    return out

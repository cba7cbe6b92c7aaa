"""Second-order jets: exact values, gradients and Hessians of small formulas, batched over stages.

Owns `Jet`, a quantity per instance (K,) with its gradient and Hessian over n local variables, and the
arithmetic that propagates them (sum, product, quotient, any smooth function of one jet given its first two
derivatives): the chain rule to second order,

    f(u): grad = f'(u) du,  Hess = f'(u) d2u + f''(u) du du^T
    u v:  grad = u dv + v du,  Hess = u d2v + v d2u + du dv^T + dv du^T

A jet stores its derivatives only over its support (the variables it depends on), so a formula's
intermediate quantities cost what their own few variables cost, not the whole window's. A jet made with
`second=False` carries first derivatives only: the same formula then gives a residual's exact Jacobian.
A stage's equations written once over jets give exact first and second derivatives for every stage in
one vectorised pass (no differencing); the StageDynamics' residual_hessian methods use them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=4096)
def _merge(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple, tuple]:
    """The union of two supports and, for each, its positions in the union and the flat positions of its
    Hessian entries in the union's Hessian."""
    u = tuple(sorted(set(a) | set(b)))
    places = []
    for part in (a, b):
        pos = np.searchsorted(u, part)
        places.append((pos, (pos[:, None] * len(u) + pos).ravel()))
    return u, places[0], places[1]


def _lift(g: np.ndarray, H: np.ndarray | None, place: tuple, size: int):
    """Gradient (K, s) and Hessian (K, s, s) or None on a support placed at `place` (positions, flat Hessian
    positions) of a wider support of `size` variables."""
    pos, flat = place
    if len(pos) == size:
        return g, H
    K = len(g)
    G = np.zeros((K, size))
    G[:, pos] = g
    if H is None:
        return G, None
    HH = np.zeros((K, size * size))
    HH[:, flat] = H.reshape(K, -1)
    return G, HH.reshape(K, size, size)


def _add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """Sum of two Hessians, None standing for zero."""
    return b if a is None else (a if b is None else a + b)


class Jet:
    """value (K,), gradient g (K, s) and Hessian H (K, s, s) or None (zero) over the support idx (s variables
    of n); `grad` (K, n) and `hess` (K, n, n) give them over all n. second=False: first derivatives only."""

    __slots__ = ("value", "g", "H", "idx", "n", "second")
    __array_ufunc__ = None  # array (op) jet: numpy defers to the jet's reflected operators

    def __init__(self, value: np.ndarray, g: np.ndarray, H: np.ndarray | None, idx: tuple[int, ...], n: int,
                 second: bool = True):
        self.value, self.g, self.H, self.idx, self.n, self.second = value, g, H, idx, n, second

    @staticmethod
    def variables(X: np.ndarray, second: bool = True) -> list["Jet"]:
        """The columns of X (K, n) as independent jets (unit gradients, zero Hessians)."""
        K, n = X.shape
        one = np.ones((K, 1))
        return [Jet(X[:, i], one, None, (i,), n, second) for i in range(n)]

    @property
    def grad(self) -> np.ndarray:
        out = np.zeros((len(self.value), self.n))
        out[:, list(self.idx)] = self.g
        return out

    @property
    def hess(self) -> np.ndarray:
        out = np.zeros((len(self.value), self.n, self.n))
        if self.H is not None:
            i = np.array(self.idx)
            out[:, i[:, None], i] = self.H
        return out

    def _like(self, value: np.ndarray, g: np.ndarray, H: np.ndarray | None, idx=None) -> "Jet":
        return Jet(value, g, H, self.idx if idx is None else idx, self.n, self.second)

    def apply(self, f: np.ndarray, f1: np.ndarray, f2: np.ndarray) -> "Jet":
        """The jet of g(self) from g's value f, first derivative f1 and second derivative f2 at self.value."""
        g = self.g
        if not self.second:
            return self._like(f, f1[:, None] * g, None)
        curvature = f2[:, None, None] * g[:, :, None] * g[:, None, :]
        return self._like(f, f1[:, None] * g, curvature if self.H is None else f1[:, None, None] * self.H + curvature)

    def __add__(self, other: "Jet | float | np.ndarray") -> "Jet":
        if isinstance(other, Jet):
            u, pa, pb = _merge(self.idx, other.idx)
            ga, Ha = _lift(self.g, self.H, pa, len(u))
            gb, Hb = _lift(other.g, other.H, pb, len(u))
            return self._like(self.value + other.value, ga + gb, _add(Ha, Hb), u)
        return self._like(self.value + other, self.g, self.H)

    __radd__ = __add__

    def __neg__(self) -> "Jet":
        return self._like(-self.value, -self.g, None if self.H is None else -self.H)

    def __sub__(self, other: "Jet | float | np.ndarray") -> "Jet":
        return self + (-other)

    def __rsub__(self, other: float | np.ndarray) -> "Jet":
        return (-self) + other

    def __mul__(self, other: "Jet | float | np.ndarray") -> "Jet":
        if isinstance(other, Jet):
            u, pa, pb = _merge(self.idx, other.idx)
            a, Ha = _lift(self.g, self.H, pa, len(u))
            b, Hb = _lift(other.g, other.H, pb, len(u))
            grad = self.value[:, None] * b + other.value[:, None] * a
            if not self.second:
                return self._like(self.value * other.value, grad, None, u)
            outer = a[:, :, None] * b[:, None, :]
            hess = outer + np.swapaxes(outer, 1, 2)
            if Hb is not None:
                hess += self.value[:, None, None] * Hb
            if Ha is not None:
                hess += other.value[:, None, None] * Ha
            return self._like(self.value * other.value, grad, hess, u)
        c = np.asarray(other, float)
        hess = None if self.H is None else (c[..., None, None] * self.H if c.ndim else c * self.H)
        return self._like(self.value * c, c[..., None] * self.g if c.ndim else c * self.g, hess)

    __rmul__ = __mul__

    def repeat(self, n: int) -> "Jet":
        """Each instance n times in a row (K n instances): a per-stage quantity beside per-part ones."""
        return self._like(np.repeat(self.value, n), np.repeat(self.g, n, 0),
                          None if self.H is None else np.repeat(self.H, n, 0))

    def group_sum(self, n: int) -> "Jet":
        """Sums of n consecutive instances (K n -> K): the inverse layout of `repeat`."""
        K, s = len(self.value) // n, len(self.idx)
        return self._like(self.value.reshape(K, n).sum(1), self.g.reshape(K, n, s).sum(1),
                          None if self.H is None else self.H.reshape(K, n, s, s).sum(1))

    def reciprocal(self) -> "Jet":
        r = 1.0 / self.value
        return self.apply(r, -r * r, 2 * r * r * r)

    def __truediv__(self, other: "Jet | float | np.ndarray") -> "Jet":
        if isinstance(other, Jet):
            return self * other.reciprocal()
        return self * (1.0 / np.asarray(other, float))

    def __rtruediv__(self, other: float | np.ndarray) -> "Jet":
        return self.reciprocal() * other


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


def sqrt(u: Jet) -> Jet:
    s = np.sqrt(u.value)
    return u.apply(s, 0.5 / s, -0.25 / (s * u.value))


def dot(a: Sequence, b: Sequence):
    """sum_i a_i b_i of jets and/or numbers."""
    return sum(a[i] * b[i] for i in range(len(a)))


def cross(a: Sequence, b: Sequence) -> list:
    """The cross product of 3-vectors of jets and/or numbers."""
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def where(mask: np.ndarray, a: Jet, b: Jet) -> Jet:
    """Per instance a where mask else b."""
    u, pa, pb = _merge(a.idx, b.idx)
    ga, Ha = _lift(a.g, a.H, pa, len(u))
    gb, Hb = _lift(b.g, b.H, pb, len(u))
    if Ha is None and Hb is None:
        hess = None
    else:
        zero = np.zeros((len(mask), len(u), len(u)))
        hess = np.where(mask[:, None, None], zero if Ha is None else Ha, zero if Hb is None else Hb)
    return a._like(np.where(mask, a.value, b.value), np.where(mask[:, None], ga, gb), hess, u)


def weighted_hessian(rows: list[Jet], weights: np.ndarray) -> np.ndarray:
    """sum_i weights[:, i] Hess(rows[i]) (K, n, n)."""
    K, n = len(rows[0].value), rows[0].n
    out = np.zeros((K, n, n))
    for i, r in enumerate(rows):
        if r.H is not None:
            ix = np.array(r.idx)
            out[:, ix[:, None], ix] += weights[:, i, None, None] * r.H
    return out


def gradients(rows: list[Jet]) -> np.ndarray:
    """The rows' gradients over all n variables (K, len(rows), n)."""
    K, n = len(rows[0].value), rows[0].n
    out = np.zeros((K, len(rows), n))
    for i, r in enumerate(rows):
        out[:, i, list(r.idx)] = r.g
    return out

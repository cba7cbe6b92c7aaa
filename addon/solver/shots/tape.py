"""Exact Hessians of a scalar formula by first-order jets recorded on a tape and one reverse sweep.

A `Tape` records every operation on its `TapeJet`s: each carries a value (K,) and its gradient over its support
(the variables it depends on), batched over K instances, as jets.Jet does with second=False, and remembers its
operands with the local partial derivatives. The Hessian of an output y is then, by the second-order chain rule
summed over the operations i of the formula (Griewank and Walther, "Evaluating Derivatives"),

    Hess y = sum_i ybar_i sum_(j, k) d2 phi_i / du_j du_k  grad u_j grad u_k^T,

ybar_i = dy / dv_i the adjoint of operation i's result (one reverse sweep over the tape); only products
(u v: the pair grad u grad v^T + grad v grad u^T) and smooth functions of one jet (f(u): f'' grad u grad u^T) have
second derivatives. All those rank-one terms are summed by one batched matrix product. Against jets.Jet, no
intermediate quantity carries a Hessian of its own: a formula whose intermediate quantities depend on many
variables (a deep tree's frames) costs gradients and one product instead of a dense Hessian per operation.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=4096)
def _merge(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """The union of two supports and the positions of each in it."""
    u = tuple(sorted(set(a) | set(b)))
    return u, np.searchsorted(u, a), np.searchsorted(u, b)


class Tape:
    """The operations recorded so far: for each result, its operands with their partials ((K,) or float), and
    the second-order pairs (u, v, weight (K,) or float) of the products and functions."""

    def __init__(self, n: int):
        self.n = n
        self.parents: list[tuple] = []
        self.pairs: list[tuple[TapeJet, TapeJet, object, int]] = []  # (u, v, weight, node of the result)

    def node(self, parents: tuple) -> int:
        self.parents.append(parents)
        return len(self.parents) - 1

    def variables(self, X: np.ndarray) -> list[TapeJet]:
        """The columns of X (K, n) as independent variables."""
        K = len(X)
        one = np.ones((K, 1))
        return [TapeJet(X[:, i], one, (i,), self, self.node(())) for i in range(X.shape[1])]

    def hessian(self, y: TapeJet | float | np.ndarray, K: int) -> np.ndarray:
        """Hess y (K, n, n) over all n variables (zeros for a constant y)."""
        H = np.zeros((K, self.n, self.n))
        if not isinstance(y, TapeJet):
            return H
        adjoint: list = [None] * (y.node + 1)
        adjoint[y.node] = np.ones(K)
        parents = self.parents
        for i in range(y.node, -1, -1):
            a = adjoint[i]
            if a is None:
                continue
            for parent, partial in parents[i]:
                add = a if partial.__class__ is float and partial == 1.0 else a * partial
                held = adjoint[parent]
                adjoint[parent] = add if held is None else held + add
        used = [(u, v, weight, adjoint[i]) for u, v, weight, i in self.pairs if i <= y.node and adjoint[i] is not None]
        if not used:
            return H
        scale = np.empty((len(used), K))  # adjoint times weight of each pair
        for p, (_, _, weight, a) in enumerate(used):
            scale[p] = a * weight
        sides = []
        for side in (0, 1):
            operands = [pair[side] for pair in used]
            sizes = [len(jet.idx) for jet in operands]
            rows = np.repeat(np.arange(len(used)), sizes)
            cols = np.fromiter((i for jet in operands for i in jet.idx), np.int64, sum(sizes))
            values = np.concatenate([jet.g for jet in operands], axis=1)
            sides.append((rows, cols, values * scale.T[:, rows] if side == 0 else values))
        chunk = max(1, _CHUNK // (len(used) * self.n))  # instances per product: its operands stay within _CHUNK
        for k0 in range(0, K, chunk):
            k1 = min(K, k0 + chunk)
            A, B = (np.zeros((k1 - k0, len(used), self.n)) for _ in range(2))
            for out, (rows, cols, values) in zip((A, B), sides):
                out[:, rows, cols] = values[k0:k1]
            M = np.swapaxes(A, 1, 2) @ B
            H[k0:k1] = M + np.swapaxes(M, 1, 2)
        return H


_CHUNK = 2_000_000  # numbers in each operand of the Hessian's batched product (16 MB)


class TapeJet:
    """value (K,) and gradient g (K, s) over the support idx (s variables of tape.n), recorded on `tape` as
    result `node`."""

    __slots__ = ("g", "idx", "node", "tape", "value")
    __array_ufunc__ = None  # array (op) jet: numpy defers to the jet's reflected operators

    def __init__(self, value: np.ndarray, g: np.ndarray, idx: tuple[int, ...], tape: Tape, node: int):
        self.value, self.g, self.idx, self.tape, self.node = value, g, idx, tape, node

    @property
    def n(self) -> int:
        return self.tape.n

    @property
    def grad(self) -> np.ndarray:
        out = np.zeros((len(self.value), self.tape.n))
        out[:, list(self.idx)] = self.g
        return out

    def _result(self, value: np.ndarray, g: np.ndarray, idx: tuple[int, ...], parents: tuple) -> TapeJet:
        return TapeJet(value, g, idx, self.tape, self.tape.node(parents))

    def apply(self, f: np.ndarray, f1: np.ndarray, f2: np.ndarray) -> TapeJet:
        """g(self) from g's value f, first derivative f1 and second derivative f2 at self.value."""
        out = self._result(f, f1[:, None] * self.g, self.idx, ((self.node, f1),))
        self.tape.pairs.append((self, self, 0.5 * f2, out.node))  # the pair adds both orders: f2 in all
        return out

    def _widened(self, pos: np.ndarray, size: int) -> np.ndarray:
        if len(pos) == size:
            return self.g
        G = np.zeros((len(self.g), size))
        G[:, pos] = self.g
        return G

    def __add__(self, other: TapeJet | float | np.ndarray) -> TapeJet:
        if isinstance(other, TapeJet):
            u, pa, pb = _merge(self.idx, other.idx)
            g = self._widened(pa, len(u)) + other._widened(pb, len(u))
            return self._result(self.value + other.value, g, u, ((self.node, 1.0), (other.node, 1.0)))
        return self._result(self.value + other, self.g, self.idx, ((self.node, 1.0),))

    __radd__ = __add__

    def __neg__(self) -> TapeJet:
        return self._result(-self.value, -self.g, self.idx, ((self.node, -1.0),))

    def __sub__(self, other: TapeJet | float | np.ndarray) -> TapeJet:
        return self + (-other)

    def __rsub__(self, other: float | np.ndarray) -> TapeJet:
        return (-self) + other

    def __mul__(self, other: TapeJet | float | np.ndarray) -> TapeJet:
        if isinstance(other, TapeJet):
            u, pa, pb = _merge(self.idx, other.idx)
            va, vb = self.value, other.value
            g = va[:, None] * other._widened(pb, len(u)) + vb[:, None] * self._widened(pa, len(u))
            out = self._result(va * vb, g, u, ((self.node, vb), (other.node, va)))
            self.tape.pairs.append((self, other, 1.0, out.node))
            return out
        c = np.asarray(other, float)
        return self._result(self.value * c, (c[:, None] if c.ndim else c) * self.g, self.idx, ((self.node, c),))

    __rmul__ = __mul__

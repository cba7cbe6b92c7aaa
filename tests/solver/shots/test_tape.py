"""The tape's Hessian (shots/tape.py: first-order jets, one reverse sweep) equals the analytic Hessian of a
formula with products, a repeated operand, constants per instance and functions of one jet, and equals the
second-order jets (shots/jets.py) on a formula shaped like the tree's (products of sums over nested supports)."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.shots import jets
from addon.solver.shots import tape as tape_module
from addon.solver.shots.jets import Jet
from addon.solver.shots.tape import Tape


def test_tape_hessian_equals_the_analytic_hessian():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5, 3))
    c = rng.standard_normal(5)
    x0, x1, x2 = Tape(3).variables(X)
    y = jets.sin(x0 * x1) + c * (x0 * x0) * x2 - 3.0 * x1 + x2
    a, b, z = X[:, 0], X[:, 1], X[:, 2]
    s, co = np.sin(a * b), np.cos(a * b)
    H = np.zeros((5, 3, 3))
    H[:, 0, 0] = -s * b * b + 2 * c * z
    H[:, 1, 1] = -s * a * a
    H[:, 0, 1] = H[:, 1, 0] = co - s * a * b
    H[:, 0, 2] = H[:, 2, 0] = 2 * c * a
    hess = x0.tape.hessian(y, 5)
    assert np.allclose(hess, H, rtol=0, atol=1e-13 * np.abs(H).max())
    grad = np.stack([co * b + 2 * c * a * z, co * a - 3.0, c * a * a + 1.0], axis=1)
    assert np.allclose(y.grad, grad, rtol=0, atol=1e-13 * np.abs(grad).max())


def _formula(v: list):
    """A chain-like formula: running sums of products, each term depending on a growing prefix of v."""
    acc, out = 0.0, 0.0
    for i in range(len(v)):
        acc = acc + jets.cos(v[i]) * v[(i + 1) % len(v)]
        out = out + acc * acc * 0.5 - jets.sin(acc) * v[0]
    return out


@pytest.mark.parametrize("chunk", [None, 1])
def test_tape_hessian_equals_second_order_jets(chunk, monkeypatch):
    """Also with the batched product split into single instances (tape._CHUNK: its memory bound)."""
    if chunk is not None:
        monkeypatch.setattr(tape_module, "_CHUNK", chunk)
    X = np.random.default_rng(4).standard_normal((4, 6))
    tape = Tape(6)
    by_tape = tape.hessian(_formula(tape.variables(X)), 4)
    by_jets = _formula(Jet.variables(X)).hess
    assert np.abs(by_jets).max() > 1.0  # not trivially zero
    assert np.allclose(by_tape, by_jets, rtol=0, atol=1e-12 * np.abs(by_jets).max())

"""A recorded program (shots/program.py) run in C (native/tape_program.c) gives the value, gradient and Hessian
of its formula: equal to the tape's (shots/tape.py, the reference) to round-off on a formula with products, a
repeated operand, per-instance parameters, constants and functions of one variable, and on a chain-like formula
with nested supports; its gradient equals central differences of its value and its Hessian central differences
of its gradient; rows alone (no Hessian pass) give the same value and gradient, and the Hessian's entries
across a split of the variables or below it alone equal those of the whole Hessian."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.native import tape_program_binding
from addon.solver.native.tape_program_binding import ACROSS, BELOW, HESSIAN, ROWS
from addon.solver.shots import jets
from addon.solver.shots.program import Node, Recorder
from addon.solver.shots.tape import Tape

pytestmark = pytest.mark.skipif(tape_program_binding.LIB is None, reason="C kernels not built (make kernels)")


def _sin(u):
    return u.sin() if isinstance(u, Node) else jets.sin(u)


def _cos(u):
    return u.cos() if isinstance(u, Node) else jets.cos(u)


def _mixed(v: list, p: list):
    """Products, a square, a parameter, constants that fold, sin and cos of products."""
    x0, x1, x2, x3 = v
    folded = 2.0 * 1.5 - 0.5  # constants only: no node
    return _sin(x0 * x1) + p[0] * (x0 * x0) * x2 - folded * x1 + _cos(x2 - x3 * p[1]) * x3 + (-x0) * 0.25


def _chain(v: list, p: list):
    """Running sums of products, each term depending on a growing prefix of v (tape tests' shape)."""
    acc, out = 0.0, 0.0
    for i in range(len(v)):
        acc = acc + _cos(v[i]) * v[(i + 1) % len(v)] * p[i % len(p)]
        out = out + acc * acc * 0.5 - _sin(acc) * v[0]
    return out


def _run(formula, n: int, n_param: int, X: np.ndarray, P: np.ndarray, block: int = HESSIAN, split: int = 0):
    rec = Recorder()
    program = rec.compile(formula(rec.variables(n), rec.parameters(n_param))).native()
    return program.run(X, P, block, split)


def _random_inputs(seed: int, K: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """K instances of n variables and two parameters."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((K, n)), rng.standard_normal((K, 2))


@pytest.mark.parametrize("formula, n", [(_mixed, 4), (_chain, 7)])
def test_program_equals_the_tape(formula, n):
    K = 6
    X, P = _random_inputs(5, K, n)
    value, grad, H = _run(formula, n, 2, X, P)
    tape = Tape(n)
    y = formula(tape.variables(X), list(P.T))
    reference = tape.hessian(y, K)
    assert np.abs(reference).max() > 1.0  # not trivially zero
    assert np.max(np.abs(value - y.value)) <= 1e-14 * np.abs(y.value).max()
    assert np.max(np.abs(grad - y.grad)) <= 1e-13 * np.abs(y.grad).max()
    assert np.max(np.abs(H - reference)) <= 1e-13 * np.abs(reference).max()
    rows_value, rows_grad, none = _run(formula, n, 2, X, P, ROWS)
    assert none is None and np.array_equal(rows_value, value) and np.array_equal(rows_grad, grad)
    split = n // 2
    low = np.arange(n)[:, None] < split
    across = low != low.T
    for block, wanted in ((ACROSS, across), (BELOW, low & low.T)):
        part = _run(formula, n, 2, X, P, block, split)[2]
        assert np.all(part[:, ~wanted] == 0.0) and np.abs(H[:, wanted]).max() > 0.1
        assert np.max(np.abs(part[:, wanted] - H[:, wanted])) <= 1e-14 * np.abs(H).max()


@pytest.mark.parametrize("formula, n", [(_mixed, 4), (_chain, 7)])
def test_program_derivatives_equal_central_differences(formula, n):
    X, P = _random_inputs(6, 3, n)
    _, grad, H = _run(formula, n, 2, X, P)
    eps = 1e-6
    for j in range(n):
        e = np.zeros(n)
        e[j] = eps
        plus, minus = _run(formula, n, 2, X + e, P), _run(formula, n, 2, X - e, P)
        assert np.allclose(grad[:, j], (plus[0] - minus[0]) / (2 * eps), rtol=0, atol=1e-7 * np.abs(grad).max())
        assert np.allclose(H[:, :, j], (plus[1] - minus[1]) / (2 * eps), rtol=0, atol=1e-6 * np.abs(H).max())


def test_compile_keeps_only_what_the_output_needs():
    rec = Recorder()
    x, y, z = rec.variables(3)
    unused = _sin(z) * x
    program = rec.compile(x * y + 1.0)
    assert unused.index > 0 and program.size == 5  # x, y, x y, 1, x y + 1: z and sin z x dropped
    assert list(program.support[program.support_start[-2]: program.support_start[-1]]) == [0, 1]
    value, grad, H = program.native().run(np.array([[2.0, 3.0, 4.0]]), np.zeros((1, 0)), HESSIAN)
    assert value[0] == 7.0 and list(grad[0]) == [3.0, 2.0, 0.0]
    assert np.array_equal(H[0], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])

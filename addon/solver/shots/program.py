"""Scalar formulas recorded once as programs and run in C for many instances: values, gradients and exact Hessians.

A `Recorder` hands out symbolic scalars (`Node`s): variables (the program's inputs it differentiates by),
parameters (per-instance numbers it does not) and constants. Generic scalar code run on them (tree_hessian.py's
formulas, written for tape.TapeJet) records every operation (add, mul, neg, sin, cos) instead of computing it.
`Recorder.compile(output)` keeps the operations the output depends on and fixes at compile time what tape.Tape
works out at run time: each node's support (the variables it depends on, sorted) and where each operand's support
sits in its result's. The `Program` then runs in C (native/tape_program.c, bound in tape_program_binding.py) for
K instances at once: value and gradient of the output by one forward and one reverse sweep, and on request its
Hessian (whole, or only the entries a caller needs) by tape.py's second-order chain rule (forward gradients
over the supports, the reverse sweep's adjoints, then the pair terms of the products and functions).
tape.Tape on the same formula is the reference (tests/solver/shots/test_program.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..native import tape_program_binding

CONST, PARAM, VAR, ADD, MUL, NEG, SIN, COS = range(8)


class Node:
    """A scalar recorded as operation `index` of `recorder`."""

    __slots__ = ("index", "recorder")
    __array_ufunc__ = None  # array (op) node: numpy defers to the node's reflected operators

    def __init__(self, recorder: Recorder, index: int):
        self.recorder, self.index = recorder, index

    def __add__(self, other: Node | float) -> Node:
        return self.recorder.emit(ADD, self, other)

    __radd__ = __add__

    def __mul__(self, other: Node | float) -> Node:
        return self.recorder.emit(MUL, self, other)

    __rmul__ = __mul__

    def __neg__(self) -> Node:
        return self.recorder.emit(NEG, self)

    def __sub__(self, other: Node | float) -> Node:
        return self + (-other)

    def __rsub__(self, other: float) -> Node:
        return (-self) + other

    def sin(self) -> Node:
        return self.recorder.emit(SIN, self)

    def cos(self) -> Node:
        return self.recorder.emit(COS, self)


class Recorder:
    """The operations recorded so far: op codes, operands (-1: none) and each node's number (a constant's value,
    a parameter's or variable's index)."""

    def __init__(self):
        self.op: list[int] = []
        self.args: list[tuple[int, int]] = []
        self.number: list[float] = []
        self._constants: dict[float, Node] = {}
        self.n_var = self.n_param = 0

    def _node(self, op: int, a: int = -1, b: int = -1, number: float = 0.0) -> Node:
        self.op.append(op)
        self.args.append((a, b))
        self.number.append(number)
        return Node(self, len(self.op) - 1)

    def variables(self, n: int) -> list[Node]:
        """n new variables (indices in order of creation)."""
        out = [self._node(VAR, number=self.n_var + i) for i in range(n)]
        self.n_var += n
        return out

    def parameters(self, n: int) -> list[Node]:
        """n new per-instance parameters."""
        out = [self._node(PARAM, number=self.n_param + i) for i in range(n)]
        self.n_param += n
        return out

    def constant(self, value: float) -> Node:
        value = float(value)
        if value not in self._constants:
            self._constants[value] = self._node(CONST, number=value)
        return self._constants[value]

    def _operand(self, x: Node | float) -> Node:
        if isinstance(x, Node):
            return x
        if isinstance(x, np.ndarray):
            raise TypeError("a program takes per-instance numbers as parameters, not arrays")
        return self.constant(x)

    def emit(self, op: int, a: Node | float, b: Node | float | None = None) -> Node:
        """Record op on a (and b), folding constants."""
        a = self._operand(a)
        b = None if b is None else self._operand(b)
        if self.op[a.index] == CONST and (b is None or self.op[b.index] == CONST):
            x, y = self.number[a.index], (0.0 if b is None else self.number[b.index])
            return self.constant({ADD: x + y, MUL: x * y, NEG: -x, SIN: np.sin(x), COS: np.cos(x)}[op])
        return self._node(op, a.index, -1 if b is None else b.index)

    def compile(self, output: Node | float) -> Program:
        """The program computing `output`: the operations it depends on, in order, with their supports."""
        output = self._operand(output)
        keep = np.zeros(len(self.op), bool)
        keep[output.index] = True
        for i in range(output.index, -1, -1):
            if keep[i]:
                for j in self.args[i]:
                    if j >= 0:
                        keep[j] = True
        order = np.flatnonzero(keep)
        new = np.full(len(self.op), -1, np.int64)
        new[order] = np.arange(len(order))
        op = np.array([self.op[i] for i in order], np.int64)
        args = np.array([self.args[i] for i in order], np.int64).reshape(-1, 2)
        args = np.where(args >= 0, new[np.maximum(args, 0)], -1)
        number = np.array([self.number[i] for i in order], float)
        return _with_supports(op, args, number, self.n_var, self.n_param)


def _with_supports(op: np.ndarray, args: np.ndarray, number: np.ndarray, n_var: int, n_param: int) -> Program:
    """Each node's support (sorted variable indices) and, for each operand of an add or product, the positions
    of its support in the result's (a unary operation keeps its operand's support)."""
    supports: list[tuple[int, ...]] = []
    maps: list[np.ndarray] = []
    map_start = np.full((len(op), 2), -1, np.int64)
    merged: dict[tuple, tuple] = {}
    size = 0
    for i, (o, (a, b)) in enumerate(zip(op.tolist(), args.tolist())):
        if o == VAR:
            s = (int(number[i]),)
        elif o in (CONST, PARAM):
            s = ()
        elif o in (NEG, SIN, COS):
            s = supports[a]
        else:
            sa, sb = supports[a], supports[b]
            key = (sa, sb)
            if key not in merged:
                u = tuple(sorted(set(sa) | set(sb)))
                merged[key] = (u, np.searchsorted(u, sa), np.searchsorted(u, sb))
            s, pa, pb = merged[key]
            for side, pos in enumerate((pa, pb)):
                map_start[i, side] = size
                maps.append(pos)
                size += len(pos)
        supports.append(s)
    lengths = np.array([len(s) for s in supports], np.int64)
    start = np.concatenate([[0], np.cumsum(lengths)])
    support = np.fromiter((j for s in supports for j in s), np.int64, int(start[-1]))
    return Program(op, args, number, start, support, map_start,
                   np.concatenate(maps).astype(np.int64) if maps else np.zeros(0, np.int64), n_var, n_param)


@dataclass
class Program:
    """A compiled program: node i is op[i] on nodes args[i] (-1: none) with number[i] (a constant's value, a
    parameter's or variable's index); its gradient sits at support_start[i]:support_start[i + 1] of the gradient
    buffer, over the variables support[...]; map_start[i, side] is where the positions of operand `side`'s support
    in node i's start in maps (-1 for a unary operation). The output is the last node."""

    op: np.ndarray
    args: np.ndarray
    number: np.ndarray
    support_start: np.ndarray
    support: np.ndarray
    map_start: np.ndarray
    maps: np.ndarray
    n_var: int
    n_param: int

    @property
    def size(self) -> int:
        return len(self.op)

    def native(self) -> tape_program_binding.CProgram:
        """The program ready to run in C (tape_program_binding.CProgram.run: value, gradient, Hessian of the
        output at K instances)."""
        return tape_program_binding.CProgram(self)

"""A mechanism shot's compiled evaluation (shots/tree_evaluation.py: the programs' outputs through fixed sparse maps)
gives the rows, the Jacobian and the Lagrangian Hessian of the reference path (tree_batch.py rows and Jacobian, the
tape's Hessian, per-key forward kinematics) to round-off, on random trees with every kind of forcing, loops or
none, with and without rest rows, with coordinate, body-point and partial keys and the joint-speed cost."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.native import tape_program_binding
from addon.solver.shots import mechanism_shots
from addon.solver.shots.spec import Control, MechanismKey, MechanismShot
from addon.solver.shots.tree_evaluation import EvaluationPass
from addon.solver.tree.compile import compile_tree

from .test_tree_program import CASES, forced_tree

pytestmark = pytest.mark.skipif(tape_program_binding.LIB is None, reason="C kernels not built (make kernels)")


def _shot(seed: int, loops: int, rest_at_end: bool) -> MechanismShot:
    mech = forced_tree(seed, loops)
    last = compile_tree(mech).coordinate_names[-1]
    keys = (MechanismKey("angle", 3, coordinate=last, value=0.3),
            MechanismKey("tip", 5, body="b3", point=(0.1, -0.2, 0.3), position=(0.5, 0.1, -0.2), components="xz"),
            MechanismKey("origin", 2, body="b1", position=(0.2, 0.0, 0.1)))
    return MechanismShot("random", mech, 0.05, 5, (Control("j0", -2.0, 3.0),), keys, effort=0.7,
                         rest_at_end=rest_at_end, speed=0.01)


def _close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert np.abs(b).max() > 0.1, what
    assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, float(np.abs(b).max())), what


@pytest.mark.parametrize("seed, loops, rest_at_end", CASES)
def test_compiled_evaluation_equals_the_reference_path(seed, loops, rest_at_end, monkeypatch):
    P = mechanism_shots._problem(_shot(seed, loops, rest_at_end))
    compiled = mechanism_shots._nlp(P)
    assert isinstance(compiled.constraints, EvaluationPass)
    monkeypatch.setattr(mechanism_shots, "compiled", lambda model: False)
    reference = mechanism_shots._nlp(P)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        x, y = rng.normal(size=P.tx.n), rng.normal(size=reference.m)
        _close(compiled.constraints(x), reference.constraints(x), "rows")
        for name, args in (("jacobian_data", (x,)), ("hessian_data", (x, y, 0.6))):
            ours, theirs = getattr(compiled, name), getattr(reference, name)
            _close(ours.csr(ours.values(*args)).toarray(), theirs.csr(theirs.values(*args)).toarray(), name)

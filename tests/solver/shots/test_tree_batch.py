"""Stage-batched tree kinematics, Lagrangian terms and loop rows (shots/tree_batch.py) against the
per-configuration functions they vectorise (tree/dynamics.terms, tree/constraints.evaluate,
tree_dynamics.constraint_force_dq's reference loop), at random configurations of random trees with loops and
point forces: equal to round-off."""

from __future__ import annotations

import numpy as np

from addon.solver.shots.tree_batch import (
    constraint_force_dq_batch,
    forward_batch,
    loops_batch,
    terms_batch,
)
from addon.solver.tree import constraints
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward

from ..tree.random_mechanisms import random_tree
from .test_tree_dynamics import CHAIN_TYPES, _fd


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))))


def test_batched_terms_and_loop_rows_equal_the_per_configuration_ones():
    model = compile_tree(random_tree(4, types=CHAIN_TYPES, loops=2, forces=True))
    rng = np.random.default_rng(4)
    K, nq = 5, model.nq
    charts = np.array(model.ball_chart0)
    Q, V, t = rng.normal(size=(K, nq)), rng.normal(size=(K, nq)), rng.uniform(0, 1, K)
    kin = forward_batch(model, Q, charts)
    tr = terms_batch(model, kin, Q, V, t)
    rows = np.arange(model.nrow)
    h, Dh = loops_batch(model, kin, rows)
    for k in range(K):
        one = forward(model, Q[k], charts)
        ref = terms(model, one, V[k], float(t[k]))
        for name in ("p", "g", "Q", "M", "A", "B", "Q_q"):
            _close(getattr(tr, name)[k], getattr(ref, name))
        _close(tr.energy[k], ref.kinetic + ref.potential)
        h_ref, Dh_ref = constraints.evaluate(model, one)
        _close(h[k], h_ref)
        _close(Dh[k], Dh_ref)


def test_batched_constraint_force_derivative_matches_finite_differences():
    """d(Dh^T lam)/dq at K configurations at once, each against central differences of Dh^T lam."""
    model = compile_tree(random_tree(5, types=CHAIN_TYPES, loops=3))
    rng = np.random.default_rng(5)
    K, charts, rows = 3, np.array(model.ball_chart0), np.arange(model.nrow)
    Q, lam = rng.normal(size=(K, model.nq)), rng.normal(size=(K, model.nrow))
    exact = constraint_force_dq_batch(model, forward_batch(model, Q, charts), lam, rows)
    for k in range(K):
        def force(q, k=k):
            return constraints.evaluate(model, forward(model, q, charts))[1].T @ lam[k]
        np.testing.assert_allclose(exact[k], _fd(force, Q[k]), atol=1e-6)

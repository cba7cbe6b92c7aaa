"""The exact Lagrangian Hessian of mechanism shots (shots/tree_hessian.py) equals central differences of the
exact gradient of the Lagrangian (the transcription's exact Jacobian^T y plus the effort's gradient) at random
points and multipliers: a closed chain ending at rest (four-bar: DEL, loop, rest rows and their multipliers),
the crane (a body-point key) and the arm (a 3-D chain keyed at a point off its tool's origin)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.presets import shot_preset_path
from addon.solver.shots.mechanism_shots import _nlp, _problem, initial_guess
from addon.solver.shots.shotfile import load_shot

STEPS = 6


def _short(name: str):
    """The shipped shot cut to STEPS steps, its keys moved into them (the Hessian's structure is the same)."""
    shot = load_shot(shot_preset_path(name))
    keys = tuple(replace(key, frame=max(1, key.frame * STEPS // shot.steps)) for key in shot.keys)
    return replace(shot, steps=STEPS, keys=keys)


@pytest.mark.parametrize("name", ["four_bar_swing", "crane_anti_sway", "robot_arm_reach"])
def test_lagrangian_hessian_equals_differences_of_the_exact_gradient(name):
    P = _problem(_short(name))
    tx, nlp = P.tx, _nlp(P)
    rng = np.random.default_rng(7)
    Q = tx.q0 + 0.3 * rng.standard_normal((tx.steps + 1, tx.nq))
    x = initial_guess(P, Q) + 0.1 * rng.standard_normal(tx.n)
    x[tx.mu_slice] = rng.standard_normal(tx.n_rest)
    y = rng.standard_normal(len(nlp.constraints(x)))
    obj_factor = 0.7

    def gradient(x):
        return nlp.jacobian(x).T @ y + obj_factor * nlp.gradient(x)

    H = nlp.hessian(x, y, obj_factor).toarray()
    diff = np.empty_like(H)
    for j in range(tx.n):
        e = np.zeros(tx.n)
        e[j] = 1e-6 * max(1.0, abs(x[j]))
        diff[:, j] = (gradient(x + e) - gradient(x - e)) / (2 * e[j])
    scale = np.max(np.abs(diff))
    assert np.max(np.abs(H - diff)) <= 1e-6 * scale
    assert np.max(np.abs(H - H.T)) <= 1e-13 * scale  # symmetric to round-off
    # the blocks are really there: the test would catch one left out
    assert np.max(np.abs(diff[: tx.steps * tx.nq, : tx.steps * tx.nq])) > 1e-3 * scale
    if tx.nr:  # the (multiplier, q) block of the loop and rest multipliers
        assert np.max(np.abs(diff[tx.lam_slice(1).start: tx.mu_slice.stop])) > 1e-3 * scale

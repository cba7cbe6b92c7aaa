"""The maximal method's model/state split (state.MaximalModel, MaximalState): a state carries every
per-step quantity (the interior point's iterate, warm start and counters included), so one model drives
several states with no coupling and a copied state continues exactly as the original; a state records
the model that made it and is refused by any other."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from addon.solver.maximal.start import start_from_tree
from addon.solver.maximal.state import MaximalModel, MaximalState
from addon.solver.maximal.variational import step
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path
from addon.solver.model import Body, Joint, Mechanism

DT = 0.01
TOL = 1e-10


def rod_on_a_stop() -> Mechanism:
    """A rod swinging from -1 rad into a hinge limit at +0.3 rad (interior-point limit pairs, no contacts)."""
    rod = Body("rod", 1.0, (0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5), inertia=(0.0841, 0.0841, 0.00125, 0.0, 0.0, 0.0))
    hinge = Joint("hinge", "revolute", "world", "rod", axis=(1.0, 0.0, 0.0), q0=(-1.0,), upper=(0.3,))
    return Mechanism("rod on a stop", (rod,), (hinge,))


def run(model: MaximalModel, state: MaximalState, steps: int) -> np.ndarray:
    """Rows (x, q, v, w of every body, flattened) after each of `steps` steps."""
    rows = []
    for _ in range(steps):
        step(model, state, DT, TOL)
        rows.append(np.concatenate([state.x.ravel(), state.q.ravel(), state.v.ravel(), state.w.ravel()]))
    return np.array(rows)


@pytest.mark.parametrize("make", [lambda: load_mechanism(preset_path("box_drop")), rod_on_a_stop],
                         ids=["contacts with friction", "joint limit"])
@pytest.mark.heavy
def test_one_model_drives_two_states_alternately_as_each_alone(make):
    """Two states of one model, stepped in alternation, follow the trajectories each follows alone, to
    the last bit: the interior point keeps nothing between steps outside the state (its warm start from
    one state's contact set would otherwise start the other's step)."""
    model, start = start_from_tree(make())
    ahead = copy.deepcopy(start)
    run(model, ahead, 25)  # the other state: 25 steps later, with a different contact or limit set
    alone_first, alone_second = run(model, copy.deepcopy(start), 30), run(model, copy.deepcopy(ahead), 30)
    first, second = copy.deepcopy(start), copy.deepcopy(ahead)
    together_first, together_second, row_counts = [], [], []
    for _ in range(30):
        together_first.append(run(model, first, 1)[0])
        together_second.append(run(model, second, 1)[0])
        row_counts.append((len(first.interior.rows.kind), len(second.interior.rows.kind)))
    assert not np.array_equal(alone_first, alone_second)
    assert np.array_equal(np.array(together_first), alone_first)
    assert np.array_equal(np.array(together_second), alone_second)
    assert any(a != b for a, b in row_counts)  # the two states' steps did carry different inequality sets


def test_a_copied_state_continues_as_the_original():
    """A copy taken mid-run (resting contacts, warm-started) continues bit for bit as the original: the
    state is the whole of what a step reads besides the model."""
    model, state = start_from_tree(load_mechanism(preset_path("box_drop")))
    run(model, state, 60)
    assert not state.interior.cold  # the box rests: the step warm-started from the last one
    twin = copy.deepcopy(state)
    assert np.array_equal(run(model, state, 20), run(model, twin, 20))


def test_a_state_of_another_model_is_refused_naming_both():
    """Each compile is its own model, even of the same mechanism: its states are refused by another,
    with both named, before anything in the state changes."""
    mech = load_mechanism(preset_path("box_drop"))
    model, state = start_from_tree(mech)
    other, _ = start_from_tree(mech)
    assert state.model == model.stamp and other.stamp != model.stamp
    x = state.x.copy()
    with pytest.raises(ValueError) as caught:
        step(other, state, DT, TOL)
    message = str(caught.value)
    assert str(model.stamp) in message and str(other.stamp) in message
    assert f"#{model.stamp.number} " in message and repr(mech.name) in message
    assert state.step_index == 0 and np.array_equal(state.x, x)
    pendulum, _ = start_from_tree(load_mechanism(preset_path("pendulum")))
    with pytest.raises(ValueError, match="pendulum"):
        step(pendulum, state, DT, TOL)

"""Every state records the compiled model that made it (stamp.py), and every step refuses a state of another
model, naming both, before changing it: the tree's midpoint state and maximal-rk4's forward state here (the
variational maximal state in tests/solver/maximal/test_maximal_state.py)."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from addon.solver.maximal.forward_integrator import ForwardIntegrator
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path
from addon.solver.stamp import ModelStamp
from addon.solver.tree import midpoint
from addon.solver.tree.compile import compile_tree

DT = 0.01


def refusal(model_stamp: ModelStamp, state_stamp: ModelStamp) -> str:
    return re.escape(f"this state was made by {state_stamp}, not by {model_stamp}")


def test_a_midpoint_state_of_another_tree_model_is_refused_naming_both():
    mech = load_mechanism(preset_path("pendulum"))
    model, other = compile_tree(mech), compile_tree(mech)
    state, *_ = midpoint.initial_state(model)
    assert state.model == model.stamp != other.stamp
    before = copy.deepcopy(state)
    with pytest.raises(ValueError, match=refusal(other.stamp, model.stamp)) as caught:
        midpoint.step(other, state, DT)
    assert "tree model #" in str(caught.value) and repr(mech.name) in str(caught.value)
    assert state.step_index == 0 and np.array_equal(state.q, before.q) and np.array_equal(state.p, before.p)
    midpoint.step(model, state, DT)  # its own model steps it
    assert state.t == pytest.approx(DT)


def test_a_forward_state_of_another_maximal_model_is_refused_naming_both():
    mech = load_mechanism(preset_path("pendulum"))
    ours, theirs = ForwardIntegrator(mech, DT), ForwardIntegrator(mech, DT)
    state = theirs.state
    assert state.model == theirs.dynamics.model.stamp != ours.dynamics.model.stamp
    x = state.x.copy()
    with pytest.raises(ValueError, match=refusal(ours.dynamics.model.stamp, state.model)) as caught:
        ours.dynamics.step(state, DT)
    assert "maximal model #" in str(caught.value)
    assert state.t == 0.0 and np.array_equal(state.x, x)
    theirs.dynamics.step(state, DT)
    assert state.t == pytest.approx(DT)

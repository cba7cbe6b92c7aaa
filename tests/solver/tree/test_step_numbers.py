"""A failure inside the tree method's halved sub-steps names the step of the requested grid (issue 19)."""

from __future__ import annotations

import pytest

from addon.solver.model import Body, Joint, Mechanism
from addon.solver.trajectory import ConvergenceError
from addon.solver.tree import midpoint
from addon.solver.tree.integrator import TreeMidpoint

DT = 0.01
FAILING_STEP = 3


def test_a_failure_in_the_second_half_of_a_halved_step_names_the_requested_step(monkeypatch):
    """Step 3 fails whole (so it is redone in halves, and their halves...), and every sub-step past its first
    quarter fails: the error must say step 3, not the count of sub-steps done."""
    mech = Mechanism("pendulum", (Body("bob", 1.0, (0.0, 0.0, -1.0), inertia=(0.01, 0.01, 0.01, 0.0, 0.0, 0.0)),),
                     (Joint("hinge", "revolute", "world", "bob", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), q0=(0.5,)),))
    plain = midpoint._step_once
    start = (FAILING_STEP - 1) * DT

    def failing(model, state, dt, *args, **kwargs):
        if state.t > start - 1e-12 and (dt > 0.99 * DT or state.t > start + 0.2 * DT):
            k = state.step_index + 1
            raise ConvergenceError(f"test failure at step {k}", step=k, time=state.t + dt)
        return plain(model, state, dt, *args, **kwargs)

    monkeypatch.setattr(midpoint, "_step_once", failing)
    integrator = TreeMidpoint(mech, DT)
    for _ in range(FAILING_STEP - 1):
        integrator.step()
    with pytest.raises(ConvergenceError) as failure:
        integrator.step()
    assert failure.value.step == FAILING_STEP, str(failure.value)
    assert start < failure.value.time <= FAILING_STEP * DT + 1e-12

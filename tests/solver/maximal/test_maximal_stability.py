"""The maximal method's time-step limit (maximal/stability.py): the geometric-stiffness estimate against a
closed form, and a taut chain that runs below the limit and fails, explained, above it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.maximal.joints import frames
from addon.solver.maximal.stability import STABLE_OMEGA_DT, rotation_frequencies
from addon.solver.trajectory import StepTooLargeError
from tools.generate import pendulum_chain


def _omega(integrator) -> np.ndarray:
    model, state = integrator.model, integrator.state
    return rotation_frequencies(model, state.q, frames(model.joints, state.x, state.q), state.lam)


def test_hanging_rod_estimate_is_the_tension_stiffness_over_the_inertia():
    """A rod of length l hanging at rest from a pivot carries m g at its top anchor, l/2 from its centre
    of mass: omega^2 = m g (l/2) / I_perp about both axes across the rod."""
    mech = pendulum_chain(1, top_angle=0.0)
    integrator = make_integrator(mech, "maximal", 0.01)
    for _ in range(3):
        integrator.step()
    body = integrator.model.bodies
    perp = float(np.linalg.eigvalsh(body.inertia[0])[-1])
    expected = math.sqrt(body.mass[0] * 9.81 * 0.5 / perp)
    assert _omega(integrator)[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.heavy
def test_taut_chain_runs_below_the_limit_and_fails_named_above_it():
    """A 20-link chain released at 45 degrees: tension ~ 6.9 n N at the top link gives omega ~ 41 rad/s,
    rising as it swings. At dt = 0.02 the estimate stays under the limit and the run finishes; at
    dt = 0.06 Newton fails and the error names the top link, omega dt and a time step."""
    mech = pendulum_chain(20)
    fine = make_integrator(mech, "maximal", 0.02)
    worst = 0.0
    for _ in range(100):
        fine.step()
        worst = max(worst, float(np.max(_omega(fine))) * 0.02)
    assert 0.5 < worst < STABLE_OMEGA_DT, worst
    coarse = make_integrator(mech, "maximal", 0.06)
    with pytest.raises(StepTooLargeError) as failure:
        for _ in range(100):
            coarse.step()
    message = str(failure.value)
    assert "'link_1'" in message and "omega dt = " in message and "time step below" in message, message
    omega_dt = float(message.split("omega dt = ")[1].split()[0])
    assert omega_dt > STABLE_OMEGA_DT, message
    assert failure.value.stable_dt < 0.06 * STABLE_OMEGA_DT / omega_dt  # inside the limit, with a margin

"""Documented inputs the maximal method takes or refuses by name (issue 19): never a traceback."""

from __future__ import annotations

import pytest

from addon.solver.integrator import simulate
from addon.solver.model import Body, Joint, Mechanism, MechanismError

INERTIA = (0.1, 0.1, 0.1, 0.0, 0.0, 0.0)


def test_a_massless_body_is_refused_by_name_in_the_maximal_method():
    """The format accepts massless bodies (mechfile/format.py); the maximal method's factorisation
    cannot take them, so it says so by name instead of a singular pivot (issue 19: LinAlgError).
    The tree method carries the same massless cross between two hinges."""
    bodies = (Body("arm", 1.0, (0.0, 0.0, -0.5), inertia=INERTIA), Body("cross", 0.0, (0.0, 0.0, -1.0)),
              Body("tip", 1.0, (0.0, 0.0, -1.5), inertia=INERTIA))
    joints = (Joint("shoulder", "revolute", "world", "arm", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), q0=(0.3,)),
              Joint("u1", "revolute", "arm", "cross", (0.0, 0.0, -1.0), (1.0, 0.0, 0.0)),
              Joint("u2", "revolute", "cross", "tip", (0.0, 0.0, -1.0), (0.0, 1.0, 0.0)))
    mech = Mechanism("massless cross", bodies, joints)
    with pytest.raises(MechanismError, match=r"\[\[body\]\] 'cross': the maximal method needs a positive mass"):
        simulate(mech, 0.01, 5, "maximal")
    assert simulate(mech, 0.01, 20, "tree").status == "finished"


def test_a_singular_newton_matrix_is_a_solver_error_naming_the_step(monkeypatch):
    """numpy's LinAlgError from a factorisation is solver trouble at a step, not a traceback."""
    import numpy as np

    from addon.solver.maximal import integrator as maximal_integrator

    def singular(*args, **kwargs):
        raise np.linalg.LinAlgError("body 0: singular pivot in the tree factorisation")

    monkeypatch.setattr(maximal_integrator, "step", singular)
    mech = Mechanism("pendulum", (Body("bob", 1.0, (0.0, 0.0, -1.0), inertia=INERTIA),),
                     (Joint("hinge", "revolute", "world", "bob", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), q0=(0.3,)),))
    run = simulate(mech, 0.01, 5, "maximal")
    assert run.status == "failed" and run.nsteps == 0
    assert "maximal-coordinate step 1 (t = 0.01 s): the Newton matrix is singular (body 0: singular" in run.message

"""Two independent writings of the same discretisation agree: our constraint and cost functions against the
CasADi expressions of benchmarks/shots.py (car, helicopter, boat), evaluated at random points."""

import numpy as np
import pytest

from benchmarks.shots import casadi_problem
from addon.solver.shots.vehicle_shot import transcribe

from .test_vehicle_shots import _small_shot

ca = pytest.importorskip("casadi")


@pytest.mark.parametrize("preset,speed", [("sedan", 3.0), ("helicopter", 2.0), ("speedboat", 1.0)])
def test_constraints_and_costs_equal_the_casadi_model(preset, speed):
    tr = transcribe(_small_shot(preset, speed))
    problem, lbg, ubg = casadi_problem(tr)
    f = ca.Function("f", [problem["x"]], [problem["f"], problem["g"]])
    assert np.allclose(lbg, tr.nlp.c_lower) and np.allclose(ubg, tr.nlp.c_upper)
    rng = np.random.default_rng(6)
    for _ in range(3):
        x = tr.x0() + 0.02 * rng.standard_normal(tr.n)
        x[tr.h_index] = 0.1
        obj, g = (np.asarray(v, float).ravel() for v in f(x))
        ours = tr.nlp.constraints(x)
        assert np.max(np.abs(g - ours)) < 1e-9 * max(1.0, np.abs(ours).max())
        assert obj[0] == pytest.approx(tr.nlp.objective(x), rel=1e-12)

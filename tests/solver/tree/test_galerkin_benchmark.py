"""The helpers of benchmarks/galerkin_orders.py that decide what its tables contain (not its timings)."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.tree.compile import compile_tree
from benchmarks import galerkin_orders
from tools.generate import ball_chain, pendulum_chain


def test_closed_chain_presets_are_those_with_loop_rows():
    closed = galerkin_orders.closed_chain_presets()
    assert {"four_bar", "scissor_lift", "slider_crank", "loop_chain"} <= set(closed)
    for name in closed:
        assert compile_tree(galerkin_orders.mechanism(name)).nrow > 0, name
    for name in ("pendulum", "chain_5", "robot_arm", "sphere_chain"):
        assert name not in closed
        assert compile_tree(galerkin_orders.mechanism(name)).nrow == 0, name


def test_mujoco_rows_report_divergence_instead_of_a_reset_state():
    pytest.importorskip("mujoco")
    mech = pendulum_chain(100)
    # RK4 at 1/24 s is unstable on this chain (MuJoCo then resets the state to the start and carries on)
    _, _, positions, why = galerkin_orders.mujoco_run(mech, 24, True)
    assert positions is None and why.startswith("diverged")
    # a run allowed no CPU time stops after its first chunk instead of pretending to reach t = 10 s
    _, _, positions, why = galerkin_orders.mujoco_run(pendulum_chain(3), 24, True, budget=-1.0)
    assert positions is None and "budget" in why


def test_iteration_time_times_iterations_the_steps_made():
    # iteration_time raises unless the capped steps made more than one iteration (the link-wise ball step stops
    # at round-off before its cap, the others run to it)
    for model in (compile_tree(pendulum_chain(8)), compile_tree(ball_chain(4))):
        for s in (1, 2):
            seconds = galerkin_orders.iteration_time(model, s, 1.0 / 24, extra=2, repeats=2)
            assert np.isfinite(seconds) and seconds > 0.0

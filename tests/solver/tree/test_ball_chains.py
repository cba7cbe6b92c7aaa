"""Stacked ball charts (chains and trees of ball joints): charts stay rotations, long chains run, and agree
with the maximal-coordinate method (springs on ball and free joints: test_ball_spring.py).

Regression for the chart fold that composed each new chart through world poses, (parent pose)^T (last
frame pose): every ancestor chart's departure from orthonormality went into its descendants at each
fold, growing like steps^depth, so a 20-link ball chain diverged after about 30 steps whatever dt.
"""

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.tree.integrator import TreeMidpoint
from addon.solver.model import Body, Joint, Mechanism
from addon.solver.tree import midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import euler_chain, fold_charts
from tools.generate import ball_chain

from .random_mechanisms import random_quat
from .test_lie_rows import PATHS, momentum_run


def chart_defect(charts: np.ndarray) -> float:
    """max |C^T C - I| over the charts."""
    return float(np.max(np.abs(np.transpose(charts, (0, 2, 1)) @ charts - np.eye(3))))


def test_fold_jacobian_maps_new_coordinates_to_old_ones():
    # C Phi(psi_old(delta)) = C Phi(psi) Phi(delta) with psi_old(delta) = psi + J delta + O(delta^2)
    rng = np.random.default_rng(3)
    psi = rng.uniform(-1.0, 1.0, size=(4, 3))
    Phi, _ = euler_chain(psi)
    model = compile_tree(ball_chain(4))
    q = np.zeros(model.nq)
    q[model.ball_dofs] = psi
    charts = np.tile(np.eye(3), (4, 1, 1))
    new, J = fold_charts(model, q, charts)
    np.testing.assert_allclose(new, Phi, atol=1e-15)
    for eps in (1e-4, 1e-5):
        delta = eps * rng.normal(size=(4, 3))
        old, _ = euler_chain(psi + np.einsum("bij,bj->bi", J, delta))
        moved = Phi @ euler_chain(delta)[0]
        assert np.max(np.abs(old - moved)) < 10 * eps**2


def test_charts_of_a_20_link_ball_chain_stay_rotations():
    # before the fix the deepest chart's defect reached 1e-1 within 90 steps (10 links, dt = 0.001)
    integ = TreeMidpoint(ball_chain(20), 0.001)
    worst = 0.0
    for _ in range(150):
        integ.step()
        worst = max(worst, chart_defect(integ.state.charts))
    assert worst < 1e-14


@pytest.mark.heavy  # the link-wise step in C: 3 s at load average 9 (its numpy twin: 134 s at 8)
def test_20_link_ball_chain_runs_8_s_at_dt_0005_with_bounded_energy_and_no_trend():
    # 1600 steps; the energy band of each 2 s quarter against a potential energy swing of about 20 J.
    # Measured by the chart midpoint 1.8e-3, 1.5e-3, 1.8e-4, 2.4e-4 J (the Euler charts before: 1.8e-3, 4.2e-2,
    # 0.15, 1.3 J, growing); the link-wise step passes the same bounds.
    traj = simulate(ball_chain(20), 0.005, 1600)
    assert traj.status == "finished", traj.message
    quarters = np.array_split(np.asarray(traj.energy), 4)
    bands = [np.ptp(q) for q in quarters]
    assert max(bands) < 5e-3, bands
    assert bands[-1] < 2.0 * bands[0], bands  # no trend


def test_20_link_rope_at_dt_0005_takes_every_step_whole_in_2_iterations():
    # the Euler charts redid 4 of these 400 steps in halves; per-step exponential charts need no halving
    # (measured: 400 steps, 2 iterations each, energy band 4.5e-4 J)
    model = compile_tree(ball_chain(20))
    state, *_ = midpoint.initial_state(model)
    for _ in range(200):  # the link-wise step (C kernel when built) has no fallback solve: halvings=0 raises
        assert midpoint.step(model, state, 0.005, halvings=0).iterations == 2


@pytest.mark.heavy
def test_ball_chain_follows_the_maximal_method_at_second_order():
    # both methods are second order: their difference at t = 0.5 s falls about 4x per halving of dt
    # (measured 5.8e-5 m at dt = 0.005 and 1.35e-5 m at 0.0025 for 10 links)
    t_end, diffs = 0.5, []
    for dt in (0.005, 0.0025):
        tree = simulate(ball_chain(10), dt, int(round(t_end / dt)), method="tree")
        maximal = simulate(ball_chain(10), dt, int(round(t_end / dt)), method="maximal")
        assert tree.status == maximal.status == "finished"
        assert tree.bodies == maximal.bodies
        diffs.append(np.max(np.abs(tree.poses[-1, :, :3] - maximal.poses[-1, :, :3])))
    assert diffs[1] < 3e-5 and diffs[0] / diffs[1] > 3.0, diffs


def tumbling_tree(seed: int) -> Mechanism:
    """A free hub carrying a chain of five ball-jointed boxes and a branch of two more, no gravity, random
    shapes, orientations and velocities."""
    rng = np.random.default_rng(seed)

    def box(name: str, position) -> Body:
        a, b, c = rng.uniform(0.1, 0.5, size=3)
        m = float(rng.uniform(0.5, 2.0))
        inertia = (m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12, 0.0, 0.0, 0.0)
        return Body(name, m, tuple(position), random_quat(rng), tuple(0.1 * rng.normal(size=3)), inertia)

    bodies = [box("hub", (0.0, 0.0, 0.0))]
    joints = [Joint("float", "free", "world", "hub", v0=tuple(rng.normal(size=6)))]
    for i, parent in enumerate(["hub", "b0", "b1", "b2", "b3", "hub", "b5"]):
        anchor = rng.normal(size=3)
        bodies.append(box(f"b{i}", anchor + 0.2 * rng.normal(size=3)))
        joints.append(Joint(f"ball{i}", "ball", parent, f"b{i}", tuple(anchor), q0=tuple(rng.normal(size=3)),
                            v0=tuple(2.0 * rng.normal(size=3))))
    return Mechanism("tumbling ball tree", tuple(bodies), tuple(joints), gravity=(0.0, 0.0, 0.0))


@pytest.mark.heavy
@pytest.mark.parametrize("use_native", PATHS)
@pytest.mark.parametrize("seed", [0, 1])
def test_tumbling_ball_trees_keep_momentum_energy_and_rotation_charts(seed, use_native):
    # eight charts up to six deep; at dt = 0.0025 over 2 s the energy band is 0.84 % (seed 0, a fast
    # tumbler: 5.1 % at dt = 0.005, 0.26 % at 0.00125) and 0.26 % (seed 1), measured
    steps = 800 if use_native else 300
    J, energy = momentum_run(tumbling_tree(seed), 0.0025, steps, use_native)
    for part in (J[:, :3], J[:, 3:]):
        assert np.max(np.abs(part - part[0])) < 1e-9 * np.linalg.norm(part[0])
    assert np.ptp(energy) < 1.2e-2 * np.mean(energy)

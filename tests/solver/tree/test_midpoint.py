"""Physics of the midpoint variational integrator on tree models (seed 000)."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from addon.solver import native
from addon.solver.integrator import simulate
from addon.solver.tree.integrator import TreeMidpoint
from addon.solver.model import Body, Curve, Joint, Mechanism
from addon.solver.trajectory import AssemblyError
from addon.solver.tree import articulated, midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.constraints import evaluate as constraint_rows
from addon.solver.tree.kinematics import forward
from addon.solver.tree.rk4 import acceleration

from .random_mechanisms import random_tree


def pendulum(q0=0.5, damping=0.0) -> Mechanism:
    bob = Body("bob", 1.0, (0.0, 0.0, -1.0), inertia=(0.004, 0.004, 0.004, 0.0, 0.0, 0.0))
    return Mechanism("pendulum", (bob,), (Joint("hinge", "revolute", "world", "bob", axis=(1, 0, 0), q0=(q0,),
                                                 damping=damping),))


def double_pendulum() -> Mechanism:
    rod = (1.0 / 12, 1.0 / 12, 1e-4, 0.0, 0.0, 0.0)
    a = Body("upper", 1.0, (0, 0, 0), com=(0, 0, -0.5), inertia=rod)
    b = Body("lower", 1.0, (0, 0, -1.0), com=(0, 0, -0.5), inertia=rod)
    return Mechanism("double", (a, b), (
        Joint("shoulder", "revolute", "world", "upper", (0, 0, 0), (1, 0, 0), q0=(1.2,)),
        Joint("elbow", "revolute", "upper", "lower", (0, 0, -1.0), (1, 0, 0), q0=(-0.4,), v0=(1.0,)),
    ))


def test_jacobian_equals_finite_differences_with_loops_and_forcing():
    model = compile_tree(random_tree(7, loops=2))
    state, *_ = midpoint.initial_state(model)
    dt = 0.01
    dyn = ~model.dof_prescribed
    _, Dh1 = constraint_rows(model, forward(model, state.q, state.charts))
    Dh1 = Dh1[state.rows][:, dyn]
    rng = np.random.default_rng(0)
    q2 = state.q + dt * state.velocity_guess + 1e-3 * rng.normal(size=model.nq)
    lam = rng.normal(size=len(state.rows))
    system = midpoint.del_system(model, state, Dh1, q2, lam, dt)
    nd = int(dyn.sum())
    J = np.block([[articulated.dense(model, system.jacobian)[np.ix_(dyn, dyn)], -system.G1.T],
                  [system.G2, np.zeros((len(lam), len(lam)))]])
    x = np.concatenate([q2[dyn], lam])
    eps = 1e-7
    fd = np.zeros_like(J)
    for k in range(len(x)):
        for sign in (1, -1):
            y = x.copy()
            y[k] += sign * eps
            qq = q2.copy()
            qq[dyn] = y[: dyn.sum()]
            fd[:, k] += sign * midpoint.del_system(model, state, Dh1, qq, y[nd:], dt).f / (2 * eps)
    np.testing.assert_allclose(J, fd, atol=2e-6 * np.abs(J).max())


def test_newton_converges_quadratically():
    model = compile_tree(double_pendulum())
    state, *_ = midpoint.initial_state(model)
    ratios = []
    for _ in range(50):
        trace: list[float] = []
        midpoint.step(model, state, 0.01, tol=1e-13, trace=trace)
        r = [x for x in trace if x > 1e-14]
        ratios += [np.log(r[i + 1]) / np.log(r[i]) for i in range(len(r) - 1) if r[i] < 1e-2]
    # quadratic: each residual is about the square of the previous one (log ratio near 2)
    assert len(ratios) > 10 and np.median(ratios) > 1.7


@pytest.mark.slow
@pytest.mark.skipif(not native.NATIVE, reason="100,000 steps need the C step kernel (make kernels)")
def test_pendulum_energy_has_no_trend_while_rk4_drifts():
    dt, t_vi, t_rk4 = 0.01, 1000.0, 40.0
    model = compile_tree(pendulum())
    state, *_ = midpoint.initial_state(model)
    e = np.array([midpoint.step(model, state, dt).energy for _ in range(int(t_vi / dt))])
    t = dt * np.arange(1, len(e) + 1)
    rk = simulate(pendulum(), dt, int(t_rk4 / dt), method="tree-rk4")
    assert rk.status == "finished"
    window = int(100.0 / dt)  # 50 periods: the windows' means differ by 5e-4 of the band
    vi_trend = abs(e[-window:].mean() - e[:window].mean())
    vi_band = np.ptp(e)
    rk_slope = np.polyfit(rk.t, rk.energy, 1)[0]
    vi_slope = np.polyfit(t, e, 1)[0]
    assert vi_band < 1e-3 * abs(e.mean())  # bounded oscillation, O(dt^2)
    assert vi_trend < 1e-3 * vi_band  # window means agree to a thousandth of the band: no secular drift
    assert rk_slope < 0 and abs(rk_slope) > 100 * abs(vi_slope)  # RK4 dissipates steadily


@pytest.mark.heavy
def test_second_order_convergence():
    mech = double_pendulum()
    model = compile_tree(mech)
    state, _, _, qd0 = midpoint.initial_state(model)
    charts = np.array(model.ball_chart0)

    def rhs(_, y):
        n = model.nq
        return np.concatenate([y[n:], acceleration(model, y[:n], y[n:], 0.0, charts)])

    t_end = 1.0
    ref = solve_ivp(rhs, (0, t_end), np.concatenate([state.q, qd0]), method="DOP853", rtol=1e-12, atol=1e-12)
    q_ref = ref.y[: model.nq, -1]
    errors = []
    dts = [0.04, 0.02, 0.01, 0.005]
    for dt in dts:
        traj = simulate(mech, dt, int(round(t_end / dt)))
        errors.append(np.max(np.abs(traj.q[-1] - q_ref)))
    orders = np.diff(np.log(errors)) / np.diff(np.log(dts))
    assert np.all(np.abs(orders - 2.0) < 0.15), orders


@pytest.mark.heavy
def test_ball_joint_turns_through_every_orientation_without_gimbal_lock():
    # A torque-free body on a ball joint at its centre of mass tumbles through pitch +-90 degrees, where a
    # fixed XYZ Euler chain would lock; the per-step chart keeps every coordinate small instead.
    body = Body("tumbler", 2.0, (0, 0, 0), inertia=(0.2, 0.3, 0.1, 0, 0, 0))
    mech = Mechanism("tumbler", (body,), (Joint("pivot", "ball", "world", "tumbler", v0=(0.3, 6.0, 0.5)),),
                     gravity=(0.0, 0.0, 0.0))
    traj = simulate(mech, 0.01, 2000)
    assert traj.status == "finished"
    assert np.max(np.abs(traj.q)) < 0.1  # chart-relative angles stay far from pi/2
    turned = 2 * np.arccos(np.clip(np.abs(traj.poses[:, 0, 3]), 0, 1))  # rotation angle from the start
    assert np.max(turned) > 3.0  # far past where one fixed Euler chart would hold
    assert np.ptp(traj.energy[1:]) < 1e-3 * traj.energy.mean()
    assert np.allclose(np.linalg.norm(traj.poses[:, 0, 3:], axis=1), 1.0)


def test_damped_pendulum_loses_energy_monotonically():
    traj = simulate(pendulum(damping=0.2), 0.01, 1000)
    assert np.all(np.diff(traj.energy[1:]) < 1e-9)
    assert traj.energy[-1] < traj.energy[0] - 0.1


def test_loop_that_cannot_close_names_the_joint():
    mech = double_pendulum()
    # the tip is pinned where it hangs at the reference, but the shoulder is driven to 1.5 rad: the
    # elbow is then sqrt(5) m... too far from the pin for a 1 m lower link, so no configuration closes
    shoulder = replace(mech.joints[0], prescribed=Curve((0.0, 1.0), (1.5, 1.5)))
    pin = Joint("tip_pin", "revolute", "world", "lower", (0.0, 0.0, -2.0), (1, 0, 0))
    with pytest.raises(AssemblyError, match="tip_pin"):
        TreeMidpoint(replace(mech, joints=(shoulder, mech.joints[1], pin)), 0.01)


def test_joint_written_child_to_parent_gives_the_same_motion():
    mech = double_pendulum()
    elbow = mech.joints[1]
    # the same hinge written from the lower link: parent and child swapped, axis reversed
    flipped = replace(elbow, parent=elbow.child, child=elbow.parent, axis=(-1.0, 0.0, 0.0))
    forward_run = simulate(mech, 0.01, 200)
    flipped_run = simulate(replace(mech, joints=(mech.joints[0], flipped)), 0.01, 200)
    np.testing.assert_allclose(flipped_run.poses, forward_run.poses, atol=1e-12)


def test_joint_limit_is_a_rigid_inelastic_stop():
    mech = pendulum(q0=0.0)
    hinge = replace(mech.joints[0], v0=(3.0,), lower=(-0.4,), upper=(0.4,))
    traj = simulate(replace(mech, joints=(hinge,)), 0.01, 1000)
    assert traj.status == "finished"
    q = traj.q[:, 0]
    assert q.max() == pytest.approx(0.4, abs=1e-10) and q.min() > -0.4 - 1e-10  # never through a stop
    hit = int(np.argmax(q >= 0.4 - 1e-10))
    # the stop absorbs the speed: afterwards the energy is the potential at the stop, and it is kept
    # (it swings back and just reaches the other stop)
    at_stop = -9.81 * 1.0 * np.cos(0.4)
    after = traj.energy[hit + 2:]
    assert np.allclose(after, at_stop, atol=2e-3)
    assert traj.energy[1] - at_stop > 1.0  # it had kinetic energy before the hit

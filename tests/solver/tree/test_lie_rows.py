"""Lie group rows of ball and free rotations (tree/lie_rows.py): exact Jacobian, symmetries, order."""

from dataclasses import replace

import numpy as np
import pytest

from addon.solver import native
from addon.solver.integrator import simulate
from addon.solver.tree.integrator import TreeMidpoint
from addon.solver.model import Body, Joint, Mechanism
from addon.solver.tree import articulated, midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.assembly import assemble
from addon.solver.tree.kinematics import forward, frame_velocities

from .random_mechanisms import random_iterate, random_tree, rows_by_central_differences


@pytest.mark.parametrize("springs", [False, True], ids=["", "ball springs"])
@pytest.mark.parametrize("seed, loops", [(0, 0), (1, 1), (7, 2), (11, 0)])
def test_jacobian_of_the_lie_rows_equals_finite_differences(seed, loops, springs):
    # with springs: the ball and free rotations pull toward random rest rotations (tree/ball_springs.py)
    model = compile_tree(random_tree(seed, loops=loops, ball_springs=springs))
    assert len(model.ball_dofs) == 2  # a ball and a free joint
    dt = 0.01
    state, dyn, Dh1, q2, lam, system = random_iterate(model, seed, dt)
    assert np.all(state.q[model.ball_dofs] == 0.0)  # the rows step from chart coordinates 0
    nd, k = int(dyn.sum()), len(lam)
    J = np.block([[articulated.dense(model, system.jacobian)[np.ix_(dyn, dyn)], -system.G1.T],
                  [system.G2, np.zeros((k, k))]])
    fd = rows_by_central_differences(lambda q, mu: midpoint.del_system(model, state, Dh1, q, mu, dt).f, q2, lam, dyn)
    # central differences at eps = 1e-6 are good to about 1e-10 of the largest entry here
    np.testing.assert_allclose(J, fd, rtol=0, atol=1e-9 * np.abs(J).max())
    # and the O(n) direction solves it
    fac = articulated.factor(model, system.jacobian, dyn)
    step = articulated.newton_direction(model, fac, system.f[:nd], system.f[nd:], system.G1, system.G2)
    ref = np.linalg.solve(J, -system.f)
    assert np.max(np.abs(step - ref)) <= 1e-10 * np.max(np.abs(ref))


def floating_mechanism(damping: float = 0.0) -> Mechanism:
    """A free root body with a ball-jointed arm and a hinged arm, a hinged forearm on the ball arm, springs
    on the hinges, no gravity: nothing outside acts on it. `damping` on every hinge and the ball (internal)."""
    def box(name, mass, position, com, sides):
        a, b, c = sides
        return Body(name, mass, position, com=com, inertia=(mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12,
                                                            mass * (a * a + b * b) / 12, 0.0, 0.0, 0.0))
    bodies = (box("hub", 3.0, (0, 0, 0), (0.05, -0.02, 0.03), (0.6, 0.4, 0.3)),
              box("arm", 1.0, (0.3, 0, 0), (0.25, 0.05, 0.0), (0.5, 0.1, 0.1)),
              box("forearm", 0.7, (0.8, 0, 0), (0.2, 0.0, 0.04), (0.4, 0.08, 0.08)),
              box("flap", 0.5, (0, 0.2, 0), (0.0, 0.15, 0.02), (0.3, 0.3, 0.05)))
    joints = (Joint("float", "free", "world", "hub", v0=(0.3, -0.2, 0.1, 0.4, -1.1, 0.7)),
              Joint("shoulder", "ball", "hub", "arm", (0.3, 0, 0), q0=(0.2, -0.3, 0.1), v0=(1.5, 0.8, -2.0),
                    damping=damping),
              Joint("elbow", "revolute", "arm", "forearm", (0.8, 0, 0), (0, 0.3, 1), q0=(0.4,), v0=(-2.5,),
                    stiffness=4.0, damping=damping),
              Joint("hinge", "revolute", "hub", "flap", (0, 0.2, 0), (1, 0, 0), v0=(3.0,), stiffness=2.0,
                    damping=damping))
    return Mechanism("floating", bodies, joints, gravity=(0.0, 0.0, 0.0))


TOL = 1e-12


def momentum_run(mech: Mechanism, dt: float, steps: int, use_native: bool | None = None):
    """Discrete momentum (angular about the start's centre of mass, linear) after every step, and energies."""
    integ = TreeMidpoint(mech, dt, tol=TOL)
    model = integ.model
    mass = np.asarray(model.body_mass)
    com0 = mass @ forward(model, integ.state.q, integ.state.charts).body_com_world / mass.sum()

    def momentum() -> np.ndarray:
        # J(xi) = p . qdot_xi, where the root coordinates' rates qdot_xi move the whole mechanism by twist xi
        root_axes = forward(model, integ.state.q, integ.state.charts).axis_world[:6]
        angular_origin, linear = np.split(np.linalg.solve(root_axes.T, np.eye(6)).T @ integ.state.p[:6], 2)
        return np.concatenate([angular_origin - np.cross(com0, linear), linear])

    out, energy = [momentum()], []
    for _ in range(steps):
        energy.append(midpoint.step(model, integ.state, dt, integ.tol, use_native=use_native).energy)
        out.append(momentum())
    return np.array(out), np.array(energy)


PATHS = [pytest.param(False, id="numpy"),
         pytest.param(True, id="C", marks=pytest.mark.skipif(not native.NATIVE, reason="C kernels not built"))]


def free_shoulder(mech: Mechanism) -> Mechanism:
    """floating_mechanism with its shoulder a free joint: its charts are all free joints', so it steps by the chart
    midpoint of these rows (a ball joint would take the link-wise step, tree/linkwise.py)."""
    shoulder = mech.joints[1]
    joints = list(mech.joints)
    joints[1] = replace(shoulder, type="free", q0=(0.0,) * 3 + shoulder.q0, v0=(0.0,) * 3 + shoulder.v0)
    return mech.replace(joints=tuple(joints))


@pytest.mark.skipif(not native.NATIVE, reason="C kernels not built")
def test_c_kernel_steps_ball_charts_like_numpy():
    # the kernel runs the per-step exponential charts (tree/step_charts.py): from each numpy state it makes
    # the same next state and Newton iteration count, and the two free runs end together
    model = compile_tree(free_shoulder(floating_mechanism(damping=0.3)))
    ref, *_ = midpoint.initial_state(model)
    c = replace(ref)
    for k in range(100):
        step_c = replace(ref)
        c_result = midpoint.step(model, step_c, 0.01, use_native=True)
        assert step_c.stepper is not None, "the C kernel did not step the ball model"
        ref_result = midpoint.step(model, ref, 0.01, use_native=False)
        assert c_result.iterations == ref_result.iterations, k
        np.testing.assert_allclose(step_c.q, ref.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(step_c.p, ref.p, rtol=0, atol=1e-10)
        np.testing.assert_allclose(step_c.charts, ref.charts, rtol=0, atol=1e-12)
        midpoint.step(model, c, 0.01, use_native=True)
    np.testing.assert_allclose(c.charts, ref.charts, rtol=0, atol=1e-10)
    np.testing.assert_allclose(c.p, ref.p, rtol=0, atol=1e-9)


@pytest.mark.heavy
@pytest.mark.parametrize("use_native", PATHS)
def test_floating_mechanism_keeps_angular_and_linear_momentum_to_round_off(use_native):
    # internal damping too: joint forces are equal and opposite, so the total momentum still holds
    steps = 2000 if use_native else 500
    J, _ = momentum_run(floating_mechanism(damping=0.3), 0.01, steps, use_native)
    angular, linear = J[:, :3], J[:, 3:]
    assert np.linalg.norm(angular[0]) > 0.5 and np.linalg.norm(linear[0]) > 0.5
    assert np.max(np.abs(angular - angular[0])) < 1e-10 * np.linalg.norm(angular[0])
    assert np.max(np.abs(linear - linear[0])) < 1e-10 * np.linalg.norm(linear[0])


@pytest.mark.heavy
def test_frozen_chart_rows_would_lose_angular_momentum(monkeypatch):
    # negative control (numpy path): the same run with the chart rows replaced by the plain midpoint rows
    # of a frozen chart (what lie_rows.py fixed) drifts by far more than round-off
    from addon.solver.tree import lie_rows

    def frozen(model, charts, tm, dt, pbar):
        k = model.ball_dofs
        tj = articulated.tree_jacobian(model, tm, dt)
        F = pbar + 0.5 * dt * (tm.g + tm.Q)[k] - tm.p[k]
        D2 = 0.5 * dt * (tm.g + tm.Q)[k] + tm.p[k]
        return lie_rows.BallRows(F, tj.U[k], tj.Yc[k], tj.x[k], tj.R[k], tj.blocks, D2, np.ones(len(k)))

    monkeypatch.setattr(lie_rows, "ball_rows", frozen)
    J, _ = momentum_run(free_shoulder(floating_mechanism()), 0.01, 100, use_native=False)
    assert np.max(np.abs(J[:, :3] - J[0, :3])) > 1e-6 * np.linalg.norm(J[0, :3])


@pytest.mark.heavy
def test_floating_mechanism_energy_is_bounded_without_drift():
    # a ball shoulder: the link-wise step (tree/linkwise.py). O(dt^2) oscillation, measured 6.6e-3 of the
    # energy over 20 s, window means 2.5 % of the band apart (the chart midpoint: 1.1e-3 over 200 s)
    _, energy = momentum_run(floating_mechanism(), 0.01, 2000, use_native=None)
    band = np.ptp(energy)
    assert band < 1e-2 * np.mean(energy)
    # quasi-periodic motion: window means differ by a fraction of the band, a drift would reach the band
    assert abs(energy[-500:].mean() - energy[:500].mean()) < 0.5 * band


@pytest.mark.heavy
def test_floating_mechanism_converges_at_second_order():
    # self-convergence of every body pose at t = 0.5 s against dt = 0.000625 (the chart is per step, so
    # compare poses, not coordinates), damped: damping on a chart's Euler rates psi / dt converged at first
    # order only; at the step's body velocity xi / dt (lie_rows.py) the forcing is time-symmetric again
    mech = floating_mechanism(damping=0.3)
    t_end, dts = 0.5, [0.01, 0.005, 0.0025]

    def poses(dt):
        traj = simulate(mech, dt, int(round(t_end / dt)), tol=1e-12)
        assert traj.status == "finished"
        return traj.poses[-1]

    ref = poses(0.000625)
    errors = []
    for dt in dts:
        p = poses(dt)
        turn = 1 - np.abs(np.einsum("bi,bi->b", p[:, 3:], ref[:, 3:]))
        errors.append(max(np.max(np.abs(p[:, :3] - ref[:, :3])), np.sqrt(2 * np.max(turn))))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 2.0) < 0.2), orders


@pytest.mark.heavy
def test_tumbling_ball_keeps_its_newton_quadratic():
    # exact Jacobian of the Lie rows: residuals square from one iteration to the next
    mech = floating_mechanism()
    model = compile_tree(mech)
    state, *_ = midpoint.initial_state(model)
    ratios = []
    for _ in range(40):
        trace: list[float] = []
        midpoint.step(model, state, 0.01, tol=1e-13, trace=trace)
        r = [x for x in trace if x > 1e-12]
        ratios += [np.log(r[i + 1]) / np.log(r[i]) for i in range(len(r) - 1) if r[i] < 1e-2]
    assert len(ratios) > 10 and np.median(ratios) > 1.7


def test_start_folds_assembled_ball_angles_into_the_charts():
    # closing loops may move ball angles; the start folds them into the charts (the Lie rows step from
    # chart coordinates 0) without moving anything: same poses, same frame velocities
    model = compile_tree(random_tree(7, loops=2))
    start = assemble(model, np.array(model.ball_chart0))
    assert np.any(start.q[model.ball_dofs] != 0.0)
    state, kin, _, qd = midpoint.initial_state(model)
    assert np.all(state.q[model.ball_dofs] == 0.0)
    before = forward(model, start.q, np.array(model.ball_chart0))
    np.testing.assert_allclose(kin.body_R, before.body_R, atol=1e-12)
    np.testing.assert_allclose(kin.body_origin, before.body_origin, atol=1e-12)
    frames = model.body_frame  # (the chart's inner rx, ry frames do move: their angles went to the chart)
    np.testing.assert_allclose(frame_velocities(model, kin, qd)[frames],
                               frame_velocities(model, before, start.qd)[frames], atol=1e-12)

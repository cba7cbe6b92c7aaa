"""Galerkin variational integrators of order 2s on the tree (tree/galerkin.py, seed 004)."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Body, Curve, Joint, Mechanism, MechanismError
from addon.solver.presets import preset_path
from addon.solver.trajectory import ConvergenceError
from addon.solver.tree import constraints, galerkin, galerkin_newton, midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.rk4 import acceleration
from addon.solver.tree.step_charts import left_jacobian_transpose_derivative
from tools.generate import pendulum_chain

from .random_mechanisms import random_tree
from .test_midpoint import pendulum


def double_pendulum() -> Mechanism:
    rod = (1.0 / 12, 1.0 / 12, 1e-4, 0.0, 0.0, 0.0)
    a = Body("upper", 1.0, (0, 0, 0), com=(0, 0, -0.5), inertia=rod)
    b = Body("lower", 1.0, (0, 0, -1.0), com=(0, 0, -0.5), inertia=rod)
    return Mechanism("double", (a, b), (
        Joint("shoulder", "revolute", "world", "upper", (0, 0, 0), (1, 0, 0), q0=(0.6,)),
        Joint("elbow", "revolute", "upper", "lower", (0, 0, -1.0), (1, 0, 0), q0=(-0.4,), v0=(0.5,))))


def run(model, dt: float, t_end: float, order: int, tol: float = 1e-13) -> np.ndarray:
    state, _ = galerkin.start(model)
    for _ in range(int(round(t_end / dt))):
        galerkin.step(model, state, dt, order, tol)
    return state.q


def reference(model, t_end: float) -> np.ndarray:
    state, _ = galerkin.start(model)
    n = model.nq

    def rhs(t, y):
        return np.concatenate([y[n:], acceleration(model, y[:n], y[n:], t, state.charts)])

    y0 = np.concatenate([state.q, state.velocity_guess])
    return solve_ivp(rhs, (0, t_end), y0, method="DOP853", rtol=1e-13, atol=1e-13).y[:n, -1]


def test_rules_integrate_polynomials_and_differentiate_the_interpolant():
    for s in (1, 2, 3, 4):
        for quadrature, exact in (("lobatto", 2 * s - 1), ("gauss", 2 * s - 1)):
            r = galerkin.rule(s, quadrature)
            assert abs(r.w @ r.c**exact - 1.0 / (exact + 1)) < 1e-14
            assert abs(r.w @ r.c ** (exact + 1) - 1.0 / (exact + 2)) > 1e-6  # and no more: the order is 2s
            np.testing.assert_allclose(r.D @ r.tau**s, s * r.c ** (s - 1), atol=1e-12)
            np.testing.assert_allclose(r.P @ r.tau**s, r.c**s, atol=1e-14)


def test_lobatto_end_nodes_are_exactly_the_step_ends():
    """Lobatto's nodes are the control points, so P = I exactly, and its first and last rows are the unit vectors
    e_0, e_s compared with == as galerkin_step.c's shortcuts do (the pose at x^0 kept through the step's residuals,
    the end energy from the last node's terms): at s = 4 the interpolation product left -1.8e-15 there."""
    for s in (1, 2, 3, 4):
        ru = galerkin.rule(s, "lobatto")
        assert np.array_equal(ru.P, np.eye(s + 1)), s


def oscillator_step_growth(s: int, quadrature: str, dt_omega: float) -> float:
    """The spectral radius of the rule's step map (q^k, p^k) -> (q^(k+1), p^(k+1)) on q'' = -omega^2 q (unit mass,
    omega = 1, dt = dt_omega): the DEL rows of galerkin.py's module docstring, linear here."""
    ru = galerkin.rule(s, quadrature)
    dt = dt_omega
    A = sum(w * (np.outer(d, d) / dt - dt * np.outer(p, p)) for w, p, d in zip(ru.w, ru.P, ru.D))  # action Hessian
    start = np.column_stack([A[:s, 0], np.eye(s)[:, 0]])  # rows r^0..r^(s-1) in (q^k, p^k)
    X = -np.linalg.solve(A[:s, 1:], start)  # x^1..x^s in (q^k, p^k)
    step = np.vstack([X[-1], A[s, 1:] @ X + [A[s, 0], 0.0]])  # q^(k+1) = x^s, p^(k+1) = dLd/dx^s
    return float(np.max(np.abs(np.linalg.eigvals(step))))


def test_lobatto_rule_is_stable_on_an_oscillator_below_a_step_bound_and_gauss_at_every_step():
    """The seed's Lobatto rule (partitioned Lobatto IIIA-IIIB) keeps an oscillator's amplitude only for dt omega below
    2 sqrt 2 (s = 2), 3.11 (s = 3), 3.14 (s = 4, stable again up to 6.05), like the trapezoidal rule's 2 at s = 1,
    and grows it beyond: why orders 4 to 8 need dt below ~1/100 s on chain_1000, whose top links swing at up to ~340
    rad/s (docs/architecture.md). Gauss quadrature keeps it at every step (the midpoint rule's A-stability)."""
    for s, stable, unstable in ((1, 1.99, 2.01), (2, 2.82, 2.84), (3, 3.10, 3.13), (4, 3.13, 6.2)):
        grid = np.linspace(0.05, stable, 40)
        assert max(oscillator_step_growth(s, "lobatto", h) for h in grid) < 1.0 + 1e-9, s
        assert oscillator_step_growth(s, "lobatto", unstable) > 1.01, s
        assert max(oscillator_step_growth(s, "gauss", h) for h in np.linspace(0.05, 20.0, 200)) < 1.0 + 1e-9, s


@pytest.mark.heavy
def test_gauss_degree_one_is_the_midpoint_step_on_chart_joints_and_loops():
    # damping is left out on chart rotations: midpoint.py applies it untransported (its half/half split). No ball
    # joints: midpoint.step takes the link-wise Lagrangian there (tree/linkwise.py), which Galerkin's charts do not;
    # free joints' charts keep the chart midpoint that Gauss s = 1 reproduces
    mech = random_tree(7, types=("revolute", "free", "universal"), loops=2, ball_springs=True)
    mech = mech.replace(joints=tuple(replace(j, damping=0.0) if j.type in ("ball", "free") else j
                                     for j in mech.joints))
    model = compile_tree(mech)
    ms, *_ = midpoint.initial_state(model)
    gs, _ = galerkin.start(model)
    for _ in range(3):
        midpoint.step(model, ms, 0.01, tol=1e-13, use_native=False)
        galerkin.step(model, gs, 0.01, 2, tol=1e-13, quadrature="gauss")
    scale = np.max(np.abs(ms.p))
    assert np.max(np.abs(gs.p - ms.p)) < 1e-10 * scale
    assert np.max(np.abs(gs.q - ms.q)) < 1e-11
    assert np.max(np.abs(gs.charts - ms.charts)) < 1e-11
    assert len(gs.rows) == len(ms.rows) > 0 and np.max(np.abs(gs.lam - ms.lam)) < 1e-10 * np.max(np.abs(ms.lam))


def iterate(model, s: int, dt: float = 0.02, spread: float = 1e-3):
    """A Newton iterate of a random tree's first step: the warm start moved by `spread`, random multipliers."""
    state, _ = galerkin.start(model)
    ru = galerkin.rule(s)
    rng = np.random.default_rng(s)
    X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess) + spread * rng.normal(size=(s, model.nq))
    lam = rng.normal(size=s * len(state.rows))
    return state, ru, X, lam, galerkin.residual(model, state, X, dt, ru, lam)


def difference_matrix(model, state, X, lam, dt, ru) -> np.ndarray:
    """d (r, h) / d (X, lam) by central differences of the residual."""
    z = np.concatenate([X.ravel(), lam])
    size = X.size

    def rows(v):
        res = galerkin.residual(model, state, v[:size].reshape(X.shape), dt, ru, v[size:])
        return np.concatenate([res.r.ravel(), res.h])

    columns = []
    for i in range(z.size):
        h = 1e-6 * max(1.0, abs(z[i]))
        up, down = z.copy(), z.copy()
        up[i] += h
        down[i] -= h
        columns.append((rows(up) - rows(down)) / (2.0 * h))
    return np.column_stack(columns)


@pytest.mark.parametrize("s, loops, spread", [
    (1, 0, 0.3), (2, 0, 0.3),
    pytest.param(3, 0, 1e-3, marks=pytest.mark.heavy), pytest.param(4, 0, 1e-3, marks=pytest.mark.heavy),
    pytest.param(2, 2, 1e-3, marks=pytest.mark.heavy)])
def test_newton_matrix_equals_central_differences_for_every_joint_type(s, loops, spread):
    """The tree form's matrix (galerkin_newton.dense), loop blocks bordering it, against differences of the rows
    on a random tree with every joint type, springs on the ball and free rotations, dampers, a point force; at a
    spread of 0.3 the charts' control points are 0.3 rad from the warm start (the chart maps' curvature)."""
    model = compile_tree(random_tree(5, loops=loops, ball_springs=True))
    assert len(model.ball_dofs) == 2
    state, ru, X, lam, res = iterate(model, s, spread=spread)
    J = galerkin.newton_matrix(model, state, X, lam, res, 0.02, ru)
    fd = difference_matrix(model, state, X, lam, 0.02, ru)
    assert np.max(np.abs(J - fd)) < 1e-8 * np.max(np.abs(J))  # central differences at h = 1e-6: ~1e-10


def test_chart_map_hessian_equals_differences_of_its_gradient():
    rng = np.random.default_rng(0)
    for scale in (1e-3, 0.5, 2.5):
        x, a, b = scale * rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
        H = galerkin_newton.jacobian_hessian(x, a, b)
        fd = np.column_stack([(left_jacobian_transpose_derivative(x + e, b).T @ a
                               - left_jacobian_transpose_derivative(x - e, b).T @ a) / 2e-6 for e in 1e-6 * np.eye(3)])
        assert np.max(np.abs(H - fd)) < 1e-8 * max(1.0, np.max(np.abs(H)))


@pytest.mark.parametrize("s", [2, 3, 4])
def test_recursion_gives_the_dense_newton_direction(s):
    """galerkin.newton_direction (O(s^3 n) elimination bordered by the loop rows) against a dense solve of
    newton_matrix, on random trees with every joint type, with and without loops."""
    for seed, loops in ((3, 0), (7, 2)):
        model = compile_tree(random_tree(seed, loops=loops, ball_springs=True))
        state, ru, X, lam, res = iterate(model, s)
        step = galerkin.newton_direction(model, state, X, lam, res, 0.02, ru)
        J = galerkin.newton_matrix(model, state, X, lam, res, 0.02, ru)
        dense = -np.linalg.solve(J, np.concatenate([res.r.ravel(), res.h]))
        scale = np.linalg.norm(dense) * np.linalg.cond(J)
        assert np.max(np.abs(step - dense)) < 1e-14 * scale, (seed, s)
        assert np.max(np.abs(step - dense)) < 1e-6 * np.max(np.abs(dense))


def chain(n: int, kind: str) -> Mechanism:
    rod = (1.0 / 12, 1.0 / 12, 1e-3, 0.0, 0.0, 0.0)
    bodies = tuple(Body(f"l{i}", 1.0, (0, 0, -float(i)), com=(0, 0, -0.5), inertia=rod) for i in range(n))
    v0 = (0.3,) * (3 if kind == "ball" else 1)
    return Mechanism("chain", bodies, tuple(
        Joint(f"j{i}", kind, "world" if i == 0 else f"l{i - 1}", f"l{i}", (0, 0, -float(i)), (1, 0, 0), v0=v0)
        for i in range(n)))


@pytest.mark.parametrize("s", [2, pytest.param(4, marks=pytest.mark.heavy)])
def test_multiply_adds_per_link_are_flat_in_the_number_of_links(s):
    """25 and 200 links here (benchmarks/galerkin_orders.py --ops prints 25 to 1000)."""
    for kind in ("revolute", "ball"):
        per_link = []
        for n in (25, 200):
            model = compile_tree(chain(n, kind))
            state, ru, X, lam, res = iterate(model, s)
            galerkin_newton.OPS.clear()
            galerkin.newton_direction(model, state, X, lam, res, 0.02, ru)
            per_link.append(galerkin_newton.OPS["flops"] / n)
        assert per_link[0] > 0 and abs(per_link[1] / per_link[0] - 1.0) < 0.02, (kind, per_link)


@pytest.mark.heavy
@pytest.mark.parametrize("mech, pairs", [
    (pendulum(1.0), {2: 16, 4: 16, 6: 8, 8: 4}),
    (double_pendulum(), {2: 32, 4: 16, 6: 16, 8: 16}),
], ids=["pendulum", "double_pendulum"])
def test_measured_order_is_2s(mech, pairs):
    """Errors at t = 2 s against DOP853 at 1e-13, at 1/m and 1/(2m) s steps (all errors > 1e-11)."""
    model = compile_tree(mech)
    q_ref = reference(model, 2.0)
    for order, m in pairs.items():
        e = [np.max(np.abs(run(model, 1.0 / n, 2.0, order) - q_ref)) for n in (m, 2 * m)]
        assert min(e) > 1e-11
        measured = np.log2(e[0] / e[1])
        assert measured > order - 0.3, (order, e, measured)


@pytest.mark.slow
def test_closed_chain_measured_order_is_2s_with_its_loop_held():
    """The four-bar preset (3 coordinates, 5 loop rows, 2 kept) at t = 1 s against DOP853 on the constrained
    dynamics (rk4.acceleration), at 1/m and 1/(2m) s steps; the loop rows stay at the Newton tolerance."""
    model = compile_tree(load_mechanism(preset_path("four_bar")))
    q_ref = reference(model, 1.0)
    for order, m in {2: 100, 4: 50, 6: 50, 8: 50}.items():
        e = []
        for n in (m, 2 * m):
            q = run(model, 1.0 / n, 1.0, order)
            e.append(np.max(np.abs(q - q_ref)))
            h = constraints.evaluate(model, forward(model, q, model.ball_chart0))[0]
            assert np.max(np.abs(h)) < 1e-12
        measured = np.log2(e[0] / e[1])
        assert min(e) > 1e-10 and measured > order - 0.3, (order, e, measured)


@pytest.mark.heavy
@pytest.mark.parametrize("order", [4, 6])
def test_energy_bounded_without_trend(order):
    """500 steps of dt = 0.04 s (about 10 periods): the energy error stays in a band that does not grow."""
    model = compile_tree(pendulum(1.0))
    state, e0 = galerkin.start(model)
    err = np.abs([galerkin.step(model, state, 0.04, order, tol=1e-13).energy - e0 for _ in range(500)]) / abs(e0)
    assert err.max() < 0.1 * (0.04 * 3.2) ** order  # (dt omega)^order, omega ~ 3.2 rad/s
    assert err[-100:].max() < 1.5 * err[:100].max()  # no trend: the last 2 periods stay in the first 2's band


def floating() -> Mechanism:
    box = (0.02, 0.03, 0.04, 0.0, 0.0, 0.0)
    bodies = (Body("hull", 2.0, (0, 0, 0), com=(0.1, 0, 0), inertia=box),
              Body("arm", 1.0, (0.3, 0, 0), com=(0.2, 0.05, 0), inertia=box),
              Body("tip", 0.5, (0.6, 0, 0), com=(0.1, 0, 0.02), inertia=box))
    return Mechanism("floating", bodies, (
        Joint("float", "free", "world", "hull", q0=(0, 0, 0, 0.3, -0.2, 0.1), v0=(0.5, -0.2, 0.1, 1.0, 2.0, -1.5)),
        Joint("shoulder", "ball", "hull", "arm", (0.3, 0, 0), q0=(0.2, 0.1, 0.0), v0=(-1.0, 0.5, 2.0),
              stiffness=3.0),
        Joint("elbow", "revolute", "arm", "tip", (0.6, 0, 0), (0, 0, 1), q0=(0.4,), v0=(1.0,), stiffness=2.0)),
        gravity=(0.0, 0.0, 0.0))


def momenta(model, state) -> np.ndarray:
    """World linear and angular momentum (about the origin) of the discrete state: the free joint's translation
    momenta p_t (world axes) and rotation momentum p_r (body axes at the chart C)."""
    p_t, p_r = state.p[:3], state.p[3:6]
    x = state.q[:3]  # the free joint's anchor is the origin
    return np.concatenate([p_t, np.cross(x, p_t) + state.charts[0] @ p_r])


@pytest.mark.heavy
@pytest.mark.parametrize("order", [2, 4, 6, 8])
def test_floating_mechanism_keeps_its_momenta(order):
    model = compile_tree(floating())
    state, _ = galerkin.start(model)
    before = momenta(model, state)
    for _ in range(2):
        galerkin.step(model, state, 0.1, order, tol=1e-12)
    drift = np.max(np.abs(momenta(model, state) - before))
    assert drift < 1e-9 * np.max(np.abs(before))
    assert np.max(np.abs(state.q[:3])) > 0.05  # it moved


def test_refuses_what_it_cannot_run_above_order_two_by_name():
    hinge = pendulum().joints[0]
    for change, why in (({"prescribed": Curve((0.0, 1.0), (0.0, 1.0), "linear")}, "'hinge' is prescribed"),
                        ({"lower": (-1.0,), "upper": (1.0,)}, "'hinge' has limits")):
        model = compile_tree(pendulum().replace(joints=(replace(hinge, **change),)))
        with pytest.raises(MechanismError, match=why + ".*accuracy order 2 only"):
            galerkin.refusals(model, 4)
        galerkin.refusals(model, 2)
    with pytest.raises(MechanismError, match="accuracy order must be one of 2, 4, 6, 8"):
        galerkin.refusals(model, 3)


def test_run_that_keeps_halving_fails_naming_the_step_and_isolated_halvings_pass(monkeypatch):
    """A 10-link chain at dt = 1/8 s: order 4 has to halve steps 8, 9, 11 and 13, and fails there naming step 13,
    its state as it was; let run on (guard off), it ends a radian off. Order 6 halves an isolated step and
    finishes silently within 0.02 rad of order 8 at dt / 4."""
    model = compile_tree(pendulum_chain(10))
    dt, steps = 0.125, 80
    reference = run(model, dt / 4, steps * dt, 8, tol=1e-10)
    state, _ = galerkin.start(model)
    with pytest.raises(ConvergenceError, match=r"order-4 .* step 13 \(t = 1.625 s\).* smaller time step or a "
                                               "higher accuracy order") as failed:
        for _ in range(steps):
            galerkin.step(model, state, dt, 4)
    assert failed.value.step == 13 and state.step_index == 12 and state.halved == (8, 9, 11)
    monkeypatch.setattr(galerkin, "HALVED", steps + 1)
    assert np.max(np.abs(run(model, dt, steps * dt, 4, tol=1e-10) - reference)) > 0.5
    monkeypatch.undo()
    state, _ = galerkin.start(model)
    for _ in range(steps):
        galerkin.step(model, state, dt, 6)
    assert state.halved  # halvings were seen, and judged isolated
    assert np.max(np.abs(state.q - reference)) < 0.02

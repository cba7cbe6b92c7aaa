"""Galerkin variational integrators of order 2s on the tree (tree/galerkin.py, seed 004)."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from addon.solver.model import Body, Curve, Joint, Mechanism, MechanismError
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path
from addon.solver.tree import constraints, galerkin, midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.rk4 import acceleration

from .random_mechanisms import TYPES, random_tree
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


@pytest.mark.parametrize("s", [2])
def test_loop_jacobian_equals_finite_differences(s):
    model = compile_tree(random_tree(7, types=tuple(t for t in TYPES if t not in ("ball", "free")), loops=2))
    state, _ = galerkin.start(model)
    ru = galerkin.rule(s)
    rng = np.random.default_rng(s)
    X = state.q + 0.02 * np.outer(ru.tau[1:], state.velocity_guess) + 1e-3 * rng.normal(size=(s, model.nq))
    lam = rng.normal(size=s * len(state.rows))
    res = galerkin.residual(model, state, X, 0.02, ru, lam, second=True)
    J = galerkin.loop_jacobian(model, state, X, lam, res, 0.02, ru)
    fd = galerkin._difference_jacobian(model, state, np.concatenate([X.ravel(), lam]), 0.02, ru)
    assert np.max(np.abs(J - fd)) < 1e-7 * np.max(np.abs(J))


@pytest.mark.parametrize("s", [1, 2, 3, 4])
def test_exact_jacobian_equals_finite_differences(s):
    model = compile_tree(random_tree(3, types=tuple(t for t in TYPES if t not in ("ball", "free"))))
    state, _ = galerkin.start(model)
    ru = galerkin.rule(s)
    rng = np.random.default_rng(s)
    X = state.q + 0.02 * np.outer(ru.tau[1:], state.velocity_guess) + 1e-3 * rng.normal(size=(s, model.nq))
    res = galerkin.residual(model, state, X, 0.02, ru, second=True)
    J = galerkin.exact_jacobian(model, res, 0.02, ru)
    fd = galerkin._difference_jacobian(model, state, X.ravel(), 0.02, ru)
    assert np.max(np.abs(J - fd)) < 1e-7 * np.max(np.abs(J))  # the damping blocks alone are ~1e-6 of J


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

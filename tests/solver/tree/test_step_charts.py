"""Per-step exponential charts of ball rotations (tree/step_charts.py): the maps against finite differences,
and the physics they are for: a link keeps its spin about its own axis (discrete Noether, equivariant midpoint)."""

import numpy as np
import pytest

from addon.solver.groups import so3_exp, so3_vee
from addon.solver.model import Body, Joint, Mechanism
from addon.solver.tree import midpoint
from addon.solver.tree.ball_springs import so3_log
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward
from addon.solver.tree.step_charts import (
    left_jacobian,
    left_jacobian_transpose_derivative,
    step_charts,
)
from benchmarks import rope_twist
from tools.generate import ball_chain

from .test_lie_rows import PATHS

# angles on both sides of the series switch (0.1) and near pi
XI = np.array([[1e-7, -2e-7, 3e-8], [0.03, -0.05, 0.02], [0.09, 0.04, -0.02], [0.4, -1.1, 0.7], [1.9, 2.0, -1.5]])


def test_left_jacobian_is_the_derivative_of_exp():
    # exp(xi + d) exp(xi)^-1 = exp(J_L(xi) d) + O(d^2)
    eps = 1e-6
    for xi in XI:
        J = left_jacobian(xi)
        fd = np.empty((3, 3))
        for j in range(3):
            d = np.zeros(3)
            d[j] = eps
            turn = (so3_exp(xi + d) - so3_exp(xi - d)) @ so3_exp(xi).T / (2 * eps)
            fd[:, j] = so3_vee(turn)
        np.testing.assert_allclose(J, fd, rtol=0, atol=1e-9)


def test_left_jacobian_transpose_derivative_matches_finite_differences():
    rng = np.random.default_rng(4)
    eps = 1e-6
    for xi in XI:
        v = rng.normal(size=3)
        D = left_jacobian_transpose_derivative(xi, v)
        fd = np.stack([(left_jacobian(xi + eps * e).T @ v - left_jacobian(xi - eps * e).T @ v) / (2 * eps)
                       for e in np.eye(3)], axis=1)
        np.testing.assert_allclose(D, fd, rtol=0, atol=1e-9)


def test_half_step_identity_of_the_rows():
    # lie_rows.py rests on exp(-xi/2) J_L(xi) - J_R(xi/2)/2 = J_L(xi/2)/2
    for xi in XI:
        lhs = so3_exp(-0.5 * xi) @ left_jacobian(xi) - 0.5 * left_jacobian(0.5 * xi).T
        np.testing.assert_allclose(lhs, 0.5 * left_jacobian(0.5 * xi), rtol=0, atol=1e-15)


AXIAL = 0.5 * 1.0 * 0.02**2  # a 1 m, 1 kg rod of radius 2 cm: axial inertia 2e-4 against 0.083 across


def spinning_rod() -> Mechanism:
    """One slender rod hung from a ball joint at its end, no gravity, tumbling and spinning about its axis."""
    across = 1.0 / 12 + 0.02**2 / 4
    rod = Body("rod", 1.0, (0, 0, 0), com=(0, 0, -0.5), inertia=(across, across, AXIAL, 0, 0, 0))
    pivot = Joint("pivot", "ball", "world", "rod", (0, 0, 0), (0, 0, 1), q0=(0.4, -0.2, 0.1), v0=(1.3, -0.7, 3.0))
    return Mechanism("spinning rod", (rod,), (pivot,), gravity=(0.0, 0.0, 0.0))


@pytest.mark.parametrize("use_native", PATHS)
@pytest.mark.parametrize("dt", [0.01, 0.005])
def test_rod_on_a_ball_joint_keeps_its_spin(dt, use_native):
    # the spin about the rod's axis (the chart's z axis: the joint axis is the rod) is the momentum of turning
    # the rod about that axis, a symmetry of the discrete Lagrangian with an equivariant midpoint: kept to the
    # Newton tolerance. Measured 5.8e-12 rad/s over 2 s at both steps; the Euler-chart midpoint drifted
    # 7.1e-3 (dt = 0.01) and 1.8e-3 rad/s (dt = 0.005).
    model = compile_tree(spinning_rod())
    state, *_ = midpoint.initial_state(model)
    k = model.ball_dofs[0]
    spin = [state.p[k][2] / AXIAL]
    directions = [state.charts[0][:, 2].copy()]
    for _ in range(round(2.0 / dt)):
        midpoint.step(model, state, dt, tol=1e-10, use_native=use_native, halvings=0)
        spin.append(state.p[k][2] / AXIAL)
        directions.append(state.charts[0][:, 2].copy())
    assert abs(spin[0]) > 2.0
    assert np.max(np.abs(np.array(spin) - spin[0])) < 1e-9
    # and it does tumble: the rod's axis sweeps more than a radian
    assert np.max(np.arccos(np.clip(np.array(directions) @ directions[0], -1, 1))) > 1.0


def test_chart_rows_are_the_derivatives_of_the_discrete_lagrangian():
    # on a 3-link ball chain with gravity: F = J_L(xi)^T D_C1 Ld (p1 = 0) and D2 = D_C2 Ld, both against central
    # differences of Ld(C1, C2) = dt (T - V) at C1 exp(xi / 2) with body velocity xi / dt, over body-frame turns
    # of one chart at a time with the other end and every other chart fixed
    model = compile_tree(ball_chain(3))
    dt, k = 0.01, model.ball_dofs
    rng = np.random.default_rng(0)
    C1 = so3_exp(0.4 * rng.normal(size=(len(k), 3)))
    xi = 0.2 * rng.normal(size=(len(k), 3))
    C2 = C1 @ so3_exp(xi)

    def Ld(start: np.ndarray, end: np.ndarray) -> float:
        step = so3_log(np.transpose(start, (0, 2, 1)) @ end)
        velocity = np.zeros(model.nq)
        velocity[k] = step / dt
        tm = terms(model, forward(model, np.zeros(model.nq), step_charts(start, step).mid), velocity, 0.0, second=False)
        return dt * (tm.kinetic - tm.potential)

    eps = 1e-6
    D1, D2 = np.zeros((len(k), 3)), np.zeros((len(k), 3))
    for b in range(len(k)):
        for j in range(3):
            turn = so3_exp(eps * np.eye(3)[j])
            for D, end in ((D1, False), (D2, True)):
                plus, minus = (C2 if end else C1).copy(), (C2 if end else C1).copy()
                plus[b], minus[b] = plus[b] @ turn, minus[b] @ turn.T
                D[b, j] = ((Ld(C1, plus) - Ld(C1, minus)) if end else (Ld(plus, C2) - Ld(minus, C2))) / (2 * eps)
    state, *_ = midpoint.initial_state(model)
    state.charts, state.p = C1, np.zeros(model.nq)
    q2 = np.zeros(model.nq)
    q2[k] = xi
    system = midpoint.del_system(model, state, np.zeros((0, model.nq)), q2, np.zeros(0), dt)
    scale = np.abs(D1).max()  # about 400 here; central differences are good to about 1e-9 of it
    np.testing.assert_allclose(system.f[k], np.einsum("bji,bj->bi", system.charts.JL, D1), rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(system.D2, D2, rtol=0, atol=1e-9 * scale)


def test_step_map_of_a_rope_is_symplectic():
    # the DEL of one discrete Lagrangian is a symplectic map: (C, p) -> (C', p') in canonical chart coordinates
    # (C = C0 exp(theta), pi = J_R(theta)^T p) has M^T Omega M = Omega and det M = 1. Central differences are
    # good to ~1e-10 here; a transposed dexp in the momentum transport (D2 with J_L^T for J_L) gives 1.8 and det 718
    model, state = rope_twist.advance(4, 0.005, 10)
    M, _ = rope_twist.step_map_jacobian(model, state, 0.005)
    assert np.max(np.abs(M - np.eye(len(M)))) > 1e-3  # a step that moves the state
    assert rope_twist.symplectic_defect(M) < 1e-7
    assert abs(np.linalg.det(M) - 1.0) < 1e-7

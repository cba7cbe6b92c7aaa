"""Springs on ball and free-joint rotations in the tree method (tree/ball_springs.py): V = k/2 |theta|^2 with
theta = log(R_rest^T R_rel), against analytic torsion, rest, conservation laws and finite differences."""

import numpy as np
import pytest

from addon.solver import native
from addon.solver.groups import so3_exp
from addon.solver.integrator import simulate
from addon.solver.lie import frame_from_axis, quat_to_matrix
from addon.solver.mechfile.read import loads_mechanism
from addon.solver.model import Body, Joint, Mechanism, MechanismError
from addon.solver.tree import midpoint
from addon.solver.tree.ball_springs import (
    chart_springs,
    right_jacobian_inverse,
    so3_log,
)
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward

from .random_mechanisms import random_tree
from .test_lie_rows import PATHS, floating_mechanism, momentum_run

INERTIA = (0.4, 0.25, 0.1)  # principal moments about the centre of mass
K = 3.0
AXIS = (0.3, -0.5, 0.8)  # the joint axis: the joint frame is not the world's
ORIENTATION = (0.9, 0.2, -0.3, 0.25)  # the body's principal axes are not the joint frame's either


def torsion_pendulum(theta0: float, kind: str = "ball", principal: int = 2, rest: np.ndarray | None = None,
                     translation: np.ndarray | None = None) -> tuple[Mechanism, np.ndarray, np.ndarray]:
    """A body on a ball (or free) joint at its centre of mass, no gravity, started turned by theta0 about its
    principal axis `principal` away from the rest rotation. Returns the mechanism, the joint frame's world
    rotation Rj and the principal axis u in joint-frame axes at the rest rotation."""
    Rb = quat_to_matrix(np.array(ORIENTATION))
    Rj = np.eye(3) if kind == "free" else frame_from_axis(np.array(AXIS) / np.linalg.norm(AXIS))  # compile.py
    R_rest = np.eye(3) if rest is None else so3_exp(rest)
    u = Rj.T @ Rb[:, principal]  # principal axis in the child joint frame's axes (fixed in the body)
    start = R_rest @ so3_exp(theta0 * u)  # relative rotation of the child joint frame at the start
    q0 = tuple(so3_log(start))
    body = Body("rotor", 2.0, (0.4, -0.2, 1.0), tuple(ORIENTATION), inertia=INERTIA + (0.0, 0.0, 0.0))
    rest_values = None if rest is None else tuple(rest)
    if kind == "free":
        shift = np.zeros(3) if translation is None else translation
        q0 = tuple(shift) + q0
        rest_values = (0.0, 0.0, 0.0) + (tuple(rest) if rest is not None else (0.0, 0.0, 0.0))
    joint = Joint("gimbal", kind, "world", "rotor", (0.4, -0.2, 1.0), AXIS, q0=q0, stiffness=K, rest=rest_values)
    return Mechanism("torsion", (body,), (joint,), gravity=(0.0, 0.0, 0.0)), Rj, u


def spring_vector(poses: np.ndarray, Rj: np.ndarray, R_rest: np.ndarray = np.eye(3)) -> np.ndarray:
    """theta = log(R_rest^T R_rel) (T, 3) over a run, from the body's world rotations (joint frame Rj)."""
    Rb0 = quat_to_matrix(np.array(ORIENTATION))
    R = quat_to_matrix(poses[:, 0, 3:])  # world rotations of the body frame
    rel = Rj.T @ R @ Rb0.T @ Rj  # the child joint frame relative to the parent's
    return so3_log(R_rest.T @ rel)


@pytest.mark.heavy
@pytest.mark.parametrize("theta0", [0.3, 2.5])
def test_torsion_pendulum_is_harmonic_at_second_order(theta0):
    # the rotation-vector spring about a fixed principal axis is exactly linear: theta0 cos(sqrt(k/I) t)
    mech, Rj, u = torsion_pendulum(theta0)
    w, t_end = np.sqrt(K / INERTIA[2]), 2.0
    errors = []
    for dt in (0.02, 0.01, 0.005):
        traj = simulate(mech, dt, int(round(t_end / dt)), tol=1e-12)
        assert traj.status == "finished", traj.message
        # the whole vector: the discrete motion leaves the axis by O(dt^2) too (Euler-angle midpoints)
        exact = theta0 * np.cos(w * traj.t)[:, None] * u
        errors.append(np.max(np.linalg.norm(spring_vector(traj.poses, Rj) - exact, axis=1)))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(ratios - 4.0) < 0.3), (errors, ratios)
    assert errors[-1] < 2e-3 * theta0


@pytest.mark.parametrize("kind", ["ball", "free"])
def test_body_at_its_rest_rotation_stays_there(kind):
    rest = np.array([0.7, -0.4, 1.1])
    mech, *_ = torsion_pendulum(0.0, kind, rest=rest)
    if kind == "free":  # and its translation at its rest too
        j = mech.joints[0]
        mech = Mechanism("torsion", mech.bodies, (Joint(j.name, "free", "world", "rotor", j.anchor, j.axis,
                                                       q0=(0.1, 0.2, -0.3) + j.q0[3:], stiffness=K,
                                                       rest=(0.1, 0.2, -0.3) + tuple(rest)),), gravity=(0, 0, 0))
    traj = simulate(mech, 0.01, 200, tol=1e-13)
    assert traj.status == "finished", traj.message
    assert np.max(np.abs(traj.poses - traj.poses[0])) < 1e-12
    model = compile_tree(mech)  # and the spring's force there is zero to round-off
    state, kin, tm, _ = midpoint.initial_state(model)
    assert np.max(np.abs(tm.Q)) < 1e-12 and tm.potential < 1e-24


@pytest.mark.heavy
@pytest.mark.parametrize("principal", [0, 1])
def test_small_oscillations_about_the_rest_have_frequency_sqrt_k_over_i(principal):
    rest = np.array([0.7, -0.4, 1.1])
    mech, Rj, u = torsion_pendulum(0.05, rest=rest, principal=principal)
    dt = 0.004  # 8 s: three periods or more
    traj = simulate(mech, dt, 2000, tol=1e-13)
    assert traj.status == "finished", traj.message
    angle = spring_vector(traj.poses, Rj, so3_exp(rest)) @ u
    # frequency from the upward zero crossings of the angle (linear interpolation between steps)
    s = np.sign(angle)
    up = np.nonzero((s[:-1] < 0) & (s[1:] >= 0))[0]
    crossings = traj.t[up] - angle[up] * dt / (angle[up + 1] - angle[up])
    frequency = 2 * np.pi / np.mean(np.diff(crossings))
    expected = np.sqrt(K / INERTIA[principal])
    assert len(up) >= 3
    assert abs(frequency / expected - 1) < 1e-4, (frequency, expected)


def test_free_joint_springs_on_translation_and_rotation_are_harmonic():
    # centre of mass at the anchor: the translation (parent joint-frame axes, here the world's) and the rotation
    # decouple, x = shift cos(sqrt(k/m) t) and theta = theta0 cos(sqrt(k/I) t) u, each at second order
    shift = np.array([0.1, -0.05, 0.2])
    mech, Rj, u = torsion_pendulum(0.4, "free", principal=1, translation=shift)
    w_t, w_r = np.sqrt(K / mech.bodies[0].mass), np.sqrt(K / INERTIA[1])
    errors = []
    for dt in (0.01, 0.005):
        traj = simulate(mech, dt, int(round(2.0 / dt)), tol=1e-12)
        assert traj.status == "finished", traj.message
        x = traj.poses[:, 0, :3] - np.array(mech.joints[0].anchor)
        theta = spring_vector(traj.poses, Rj)
        errors.append((np.max(np.abs(x - np.cos(w_t * traj.t)[:, None] * shift)),
                       np.max(np.linalg.norm(theta - 0.4 * np.cos(w_r * traj.t)[:, None] * u, axis=1))))
    ratios = np.array(errors[0]) / np.array(errors[1])
    assert np.all(np.abs(ratios - 4.0) < 0.3), (errors, ratios)
    assert errors[1][0] < 1e-3 * np.linalg.norm(shift) and errors[1][1] < 2e-3 * 0.4


@pytest.mark.heavy
@pytest.mark.parametrize("use_native", PATHS)
def test_tumbling_hub_with_a_sprung_ball_arm_keeps_momentum_and_energy(use_native):
    # the ball spring is internal and rotation invariant: total angular momentum holds to round-off;
    # the energy oscillates in an O(dt^2) band with no trend
    mech = floating_mechanism()
    shoulder = mech.joints[1]
    joints = list(mech.joints)
    joints[1] = Joint(shoulder.name, "ball", shoulder.parent, shoulder.child, shoulder.anchor, q0=shoulder.q0,
                      v0=shoulder.v0, stiffness=6.0, rest=(-0.3, 0.5, 0.8))
    mech = Mechanism(mech.name, mech.bodies, tuple(joints), gravity=(0.0, 0.0, 0.0))
    steps = 2000 if use_native else 600
    J, energy = momentum_run(mech, 0.01, steps, use_native)
    angular, linear = J[:, :3], J[:, 3:]
    assert np.max(np.abs(angular - angular[0])) < 1e-9 * np.linalg.norm(angular[0])
    assert np.max(np.abs(linear - linear[0])) < 1e-9 * np.linalg.norm(linear[0])
    band = np.ptp(energy)
    # O(dt^2); measured over 6 s at dt = 0.01: 7.0 % by the link-wise step (tree/linkwise.py: the spring's
    # potential is the mean of the step's ends), 2.4 % by the chart midpoint before it (0.48 % at dt = 0.005)
    assert band < 8e-2 * np.mean(energy)
    window = steps // 4
    assert abs(energy[-window:].mean() - energy[:window].mean()) < 0.5 * band


@pytest.mark.heavy
def test_spinning_through_the_farthest_rotation_keeps_the_energy_bounded():
    # 1/2 I w^2 = 45 J > k pi^2 / 2 = 15 J: the body spins through |theta| = pi, V's cusp, every half turn
    mech, Rj, u = torsion_pendulum(0.0)
    joint = mech.joints[0]
    spinning = mech.replace(joints=(Joint(joint.name, "ball", "world", "rotor", joint.anchor, joint.axis,
                                          v0=tuple(30.0 * u), stiffness=K),))
    traj = simulate(spinning, 0.01, 4000, tol=1e-10)
    assert traj.status == "finished", traj.message
    jumps = np.linalg.norm(np.diff(spring_vector(traj.poses, Rj), axis=0), axis=1)
    assert np.sum(jumps > 5.0) >= 20  # it did cross: theta jumps from about pi u to -pi u
    energy = np.array(traj.energy)
    quarter = len(energy) // 4
    assert np.ptp(energy) < 0.1 * energy.mean()  # O(dt) per crossing: 6.3 % measured
    assert abs(energy[-quarter:].mean() - energy[:quarter].mean()) < 0.05 * np.ptp(energy)


def test_log_and_right_jacobian_inverse_match_finite_differences():
    rng = np.random.default_rng(4)
    for t in (1e-9, 1e-3, 0.3, 2.5, 3.1):
        theta = rng.normal(size=3)
        theta *= t / np.linalg.norm(theta)
        R = so3_exp(theta)
        np.testing.assert_allclose(so3_log(R), theta, rtol=0, atol=1e-15)
        eps, fd = 1e-6, np.zeros((3, 3))
        for j in range(3):
            xi = np.zeros(3)
            xi[j] = eps
            fd[:, j] = (so3_log(R @ so3_exp(xi)) - so3_log(R @ so3_exp(-xi))) / (2 * eps)
        np.testing.assert_allclose(right_jacobian_inverse(theta), fd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("seed", [0, 3])
def test_spring_force_and_its_derivative_match_finite_differences(seed):
    model = compile_tree(random_tree(seed, ball_springs=True))
    assert np.all(model.ball_stiffness > 0) and len(model.ball_dofs) == 2
    rng = np.random.default_rng(seed)
    q, qd = rng.normal(size=model.nq), rng.normal(size=model.nq)
    charts = np.array(model.ball_chart0)
    tm = terms(model, forward(model, q, charts), qd, 0.0)
    spring = chart_springs(model, charts, q[model.ball_dofs])
    assert spring.potential > 0.1
    eps = 1e-6
    for b, dofs in enumerate(model.ball_dofs):
        for i, dof in enumerate(dofs):
            e = np.zeros(model.nq)
            e[dof] = eps
            # Q = -dV/dq of the spring alone (one ball moved at a time)
            plus, minus = (chart_springs(model, charts, (q + s * e)[model.ball_dofs]).potential for s in (1, -1))
            assert abs(spring.Q[b, i] + (plus - minus) / (2 * eps)) < 1e-8
            # and the terms' Q_q is the exact derivative of their Q (springs, gravity and forces together)
            plus, minus = (terms(model, forward(model, q + s * e, charts), qd, 0.0, second=False).Q for s in (1, -1))
            # (central differences at eps = 1e-6 of Q up to 20: good to about 1e-8)
            np.testing.assert_allclose(tm.Q_q[:, dof], (plus - minus) / (2 * eps), rtol=0, atol=5e-8)


@pytest.mark.heavy
@pytest.mark.skipif(not native.NATIVE, reason="C kernels not built")
@pytest.mark.parametrize("seed, loops", [(0, 0), (1, 1), (11, 0)])
def test_c_kernel_steps_ball_springs_like_the_numpy_path(seed, loops):
    # same states, energies and Newton iterations (the kernel's spring blocks are the exact Jacobian too)
    model = compile_tree(random_tree(seed, loops=loops, ball_springs=True))
    runs = []
    for use_native in (False, True):
        state, *_ = midpoint.initial_state(model)
        results = [midpoint.step(model, state, 0.005, 1e-12, use_native=use_native) for _ in range(30)]
        runs.append((state.q, state.p, state.charts, np.array([r.energy for r in results]),
                     [r.iterations for r in results]))
    (q, p, charts, energy, its), (q_c, p_c, charts_c, energy_c, its_c) = runs
    assert np.max(np.abs(q - q_c)) < 1e-11 and np.max(np.abs(charts - charts_c)) < 1e-11
    assert np.max(np.abs(p - p_c)) < 1e-10 * max(1.0, np.max(np.abs(p)))
    assert np.max(np.abs(energy - energy_c)) < 1e-10 * np.max(np.abs(energy))
    assert its == its_c


@pytest.mark.heavy
def test_rk4_agrees_with_the_midpoint_rule_on_the_torsion_pendulum():
    mech, Rj, u = torsion_pendulum(2.5)
    dt, steps = 0.005, 400
    w = np.sqrt(K / INERTIA[2])
    angles = {}
    for method in ("tree", "tree-rk4"):
        traj = simulate(mech, dt, steps, method=method, tol=1e-12)
        assert traj.status == "finished", traj.message
        angles[method] = spring_vector(traj.poses, Rj)
    exact = 2.5 * np.cos(w * traj.t)[:, None] * u
    error = {method: np.max(np.linalg.norm(angles[method] - exact, axis=1)) for method in angles}
    assert error["tree-rk4"] < 1e-6, error
    assert error["tree"] < 1e-2, error
    assert np.max(np.linalg.norm(angles["tree"] - angles["tree-rk4"], axis=1)) < 1e-2


@pytest.mark.parametrize("kind, values", [("ball", "[0.1, 0.2]"), ("free", "[0.1, 0.2, 0.3]")])
def test_wrong_rest_length_names_the_joint_and_field(kind, values):
    text = f"""
format = 1
[model]
name = "sprung"
[[body]]
name = "rod"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
[[joint]]
name = "shoulder"
type = "{kind}"
parent = "world"
child = "rod"
anchor = [0.0, 0.0, 0.0]
stiffness = 2.0
rest = {values}
"""
    with pytest.raises(MechanismError, match=r"'shoulder'.*field 'rest'"):
        loads_mechanism(text)
    body = Body("rod", 1.0, (0.0, 0.0, 0.0), inertia=(0.1, 0.1, 0.1, 0.0, 0.0, 0.0))
    joint = Joint("shoulder", kind, "world", "rod", stiffness=2.0, rest=(0.1, 0.2))
    with pytest.raises(MechanismError, match=r"'shoulder': field 'rest' must have"):
        compile_tree(Mechanism("sprung", (body,), (joint,)))

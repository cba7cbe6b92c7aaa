"""Start velocities from keyed motion (solver/start_velocity.py), checked by finite differences of poses."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver import lie
from addon.solver.maximal.joints import frames, generic_rows
from addon.solver.maximal.start import start_from_tree
from addon.solver.mechfile.read import load_mechanism, vehicle_presets
from addon.solver.model import Body, Joint, Mechanism
from addon.solver.presets import preset_path
from addon.solver.start_velocity import (
    body_jacobian,
    car_start_speed,
    kinematic_model,
    project_start_velocity,
    projected_rates,
    twist_from_samples,
)
from addon.solver.tree import constraints
from addon.solver.tree.assembly import assemble
from addon.solver.tree.ball_springs import so3_log
from addon.solver.tree.kinematics import forward
from addon.solver.vehicles.car import compile_car
from addon.solver.model import Vehicle
from tests.solver.tree.random_mechanisms import random_tree

EPS = 1e-6


def _origin_twists(model, kin, qd) -> dict[str, np.ndarray]:
    """Each body's (angular velocity, origin velocity) at rates qd, from the Jacobian."""
    twist = body_jacobian(model, kin) @ qd
    twist[:, 3:] -= np.cross(twist[:, :3], kin.body_com_world - kin.body_origin)
    return {name: twist[b] for b, name in enumerate(model.body_names)}


def _moved(joint: Joint, h: float) -> Joint:
    """`joint` with its coordinates moved along its v0 for a time h (ball rotations: exp(h v0) exp(q0))."""
    q0 = np.zeros(joint.ndof)
    q0[:len(joint.q0)] = joint.q0
    v0 = np.zeros(joint.ndof)
    v0[:len(joint.v0)] = joint.v0
    q = q0 + h * v0
    if joint.type in ("ball", "free"):
        turned = lie.rotvec_to_matrix(h * v0[-3:]) @ lie.rotvec_to_matrix(q0[-3:])
        q[-3:] = so3_log(turned)
    return replace(joint, q0=tuple(q))


def _pose_twists(mech: Mechanism, h: float = EPS) -> dict[str, np.ndarray]:
    """Body twists at the start by central differences of the body poses with every joint moved along v0."""
    poses = []
    for sign in (-1.0, 1.0):
        model = kinematic_model(mech.replace(joints=tuple(_moved(j, sign * h) for j in mech.joints)))
        kin = forward(model, np.array(model.q_init), np.array(model.ball_chart0))
        poses.append((kin.body_R, kin.body_origin))
    (R0, x0), (R1, x1) = poses
    omega = so3_log(R1 @ np.swapaxes(R0, -1, -2)) / (2 * h)
    return {b.name: np.concatenate([omega[i], (x1[i] - x0[i]) / (2 * h)]) for i, b in enumerate(mech.bodies)}


def _zero_v0(mech: Mechanism) -> Mechanism:
    return mech.replace(joints=tuple(replace(j, v0=()) for j in mech.joints))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_body_jacobian_matches_finite_differences_of_the_body_poses(seed):
    model = kinematic_model(random_tree(seed))
    rng = np.random.default_rng(seed)
    q = np.array(model.q_init) + 0.2 * rng.normal(size=model.nq)
    qd = rng.normal(size=model.nq)
    charts = np.array(model.ball_chart0)
    kin = forward(model, q, charts)
    plus, minus = forward(model, q + EPS * qd, charts), forward(model, q - EPS * qd, charts)
    omega = so3_log(plus.body_R @ np.swapaxes(minus.body_R, -1, -2)) / (2 * EPS)
    v_com = (plus.body_com_world - minus.body_com_world) / (2 * EPS)
    J = body_jacobian(model, kin) @ qd
    np.testing.assert_allclose(J[:, :3], omega, atol=1e-7 * max(1.0, np.abs(omega).max()))
    np.testing.assert_allclose(J[:, 3:], v_com, atol=1e-7 * max(1.0, np.abs(v_com).max()))


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_twists_of_a_tree_give_back_every_joints_typed_velocity(seed):
    """Every joint type (ball and free rotations with a start turn): finite-difference twists of the motion
    along v0, projected onto the mechanism with v0 forgotten, give v0 back."""
    mech = random_tree(seed, forces=False)
    found = project_start_velocity(_zero_v0(mech), _pose_twists(mech))
    for joint, got in zip(mech.joints, found.joints):
        want = np.zeros(joint.ndof)
        want[:len(joint.v0)] = joint.v0
        np.testing.assert_allclose(np.zeros(joint.ndof) + got.v0, want, atol=1e-6, err_msg=joint.name)


def test_a_joint_the_tree_crosses_child_first_gets_its_own_velocity_back():
    """A ball joint written from the body to the world is reversed by the spanning tree, then back."""
    body = Body("b", 2.0, (0.0, 0.0, -1.0), tuple(lie.matrix_to_quat(lie.rotvec_to_matrix(np.array([0.3, 0.1, 0.0])))),
                (0.0, 0.0, -0.5), (0.2, 0.2, 0.05, 0.0, 0.0, 0.0))
    joint = Joint("hang", "ball", "b", "world", anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), q0=(0.2, -0.4, 0.1),
                  v0=(1.0, -2.0, 0.5))
    mech = Mechanism("reversed", (body,), (joint,))
    found = project_start_velocity(_zero_v0(mech), _pose_twists(mech))
    np.testing.assert_allclose(found.joints[0].v0, joint.v0, atol=1e-6)


def test_twist_from_samples_is_exact_for_constant_spin_and_constant_acceleration():
    omega, v, a, dt = np.array([0.4, -1.2, 2.0]), np.array([3.0, 0.5, -1.0]), np.array([0.0, 0.0, -9.81]), 1 / 24
    R0 = lie.rotvec_to_matrix(np.array([0.3, 0.2, -0.1]))
    times = np.array([-2 * dt, -dt, 0.0])
    matrices = np.array([lie.pose_matrix(v * t + 0.5 * a * t * t, lie.rotvec_to_matrix(omega * t) @ R0)
                         for t in times])
    np.testing.assert_allclose(twist_from_samples(matrices, dt), np.concatenate([omega, v]), atol=1e-12)


@pytest.mark.parametrize("name", ["four_bar", "slider_crank", "closed_chain_device"])
def test_a_loop_gets_the_nearest_velocity_its_loops_allow(name):
    """Arbitrary twists on every body: the rates (prescribed ones fixed by their curves) keep G v = 0, the
    assembled start keeps them, and they solve the weighted least squares of the module docstring (its KKT
    system)."""
    mech = load_mechanism(preset_path(name))
    rng = np.random.default_rng(7)
    twists = {b.name: rng.normal(size=6) for b in mech.bodies}
    found = project_start_velocity(mech, twists)
    model = kinematic_model(found)
    charts = np.array(model.ball_chart0)
    kin = forward(model, np.array(model.q_init), charts)
    _, G = constraints.evaluate(model, kin)
    qd = np.array(model.v_init)
    scale = max(1.0, float(np.abs(qd).max()))
    assert np.abs(G @ qd).max() < 1e-10 * scale
    np.testing.assert_allclose(assemble(model, charts).qd, qd, atol=1e-8 * scale)
    # optimality: the gradient of the weighted error lies in the row space of G
    J = body_jacobian(model, kin)
    target = np.array([twists[n] for n in model.body_names])
    target[:, 3:] += np.cross(target[:, :3], kin.body_com_world - kin.body_origin)
    M = np.zeros((len(J), 6, 6))
    for b, R in enumerate(kin.body_R):
        M[b, :3, :3] = R @ model.body_inertia[b] @ R.T
        M[b, 3:, 3:] = model.body_mass[b] * np.eye(3)
    gradient = np.einsum("bki,bkl,bl->i", J, M, J @ qd - target)
    dyn = ~np.asarray(model.dof_prescribed)
    multipliers, *_ = np.linalg.lstsq(G[:, dyn].T, gradient[dyn], rcond=None)
    assert np.abs(G[:, dyn].T @ multipliers - gradient[dyn]).max() < 1e-8 * max(1.0, np.abs(gradient).max())


def test_bodies_without_keys_keep_their_typed_velocity_and_no_keys_change_nothing():
    mech = random_tree(8, types=("revolute", "ball", "prismatic"), forces=False)
    model = kinematic_model(mech)
    kin = forward(model, np.array(model.q_init), np.array(model.ball_chart0))
    assert project_start_velocity(mech, {}) is mech
    keyed_body = mech.joints[0].child  # hung from the world: rates of its joint only
    rates = projected_rates(model, kin, {keyed_body: np.zeros(6)}, np.array(model.v_init))
    others = model.ancestor[model.body_frame[model.body_names.index(keyed_body)]] == 0
    np.testing.assert_allclose(rates[others], np.array(model.v_init)[others])


@pytest.mark.parametrize("name", ["four_bar", "closed_chain_device"])
def test_the_maximal_start_moves_along_its_joint_rows(name):
    """The maximal method starts from the projected rates (maximal/start.py): its body velocities satisfy the
    velocity form of every joint row, loop joints included (the joint constraints' tangent space)."""
    mech = load_mechanism(preset_path(name))
    rng = np.random.default_rng(9)
    found = project_start_velocity(mech, {b.name: rng.normal(size=6) for b in mech.bodies})
    model, state = start_from_tree(found)
    js = model.joints
    _, jac = generic_rows(frames(js, state.x, state.q), js.row_joint, js.row_kind)
    z = np.vstack([np.concatenate([state.v, state.w], axis=1), np.zeros((1, 6))])
    rates = np.einsum("rk,rk->r", jac[:, :6], z[js.parent[js.row_joint]]) \
        + np.einsum("rk,rk->r", jac[:, 6:], z[js.child[js.row_joint]])
    assert np.abs(rates).max() < 1e-9 * max(1.0, np.abs(z).max())


@pytest.mark.parametrize("steer", [0.0, 0.2, -0.35])
def test_a_car_keeps_the_keyed_motion_its_steering_allows_and_projects_the_rest(steer):
    """Keyed motion the steering allows (yaw rate = speed tan(steer) / l) is kept; other motion goes to the
    speed whose energy-weighted distance from it is least (the derivative of that distance vanishes)."""
    vehicle = Vehicle("car", vehicle_presets()["sedan"], controls=(("steer", steer),))
    model = compile_car(vehicle)
    kappa = np.tan(steer) / model.spec.wheelbase
    assert car_start_speed(model, 12.0, kappa * 12.0) == pytest.approx(12.0, rel=1e-12)
    v = car_start_speed(model, 12.0, kappa * 12.0 + 0.4)
    gradient = model.mass_x * (v - 12.0) + model.yaw * kappa * (kappa * v - kappa * 12.0 - 0.4)
    assert abs(gradient) < 1e-9 * model.mass_x * 12.0
    assert (v == pytest.approx(12.0)) == (steer == 0.0)

"""Start velocities from keyed motion: body twists measured on an animation, projected onto a mechanism.

An artist's keys before the start frame say how each keyed body arrives there. `twist_from_samples` turns
three world poses one frame apart (the start frame last) into the body frame's twist at the start: angular
velocity from the rotation differences by the log map and the origin's velocity, each as the one-sided
second-order difference 3/2 r(k-1/2) - 1/2 r(k-3/2) of the two per-frame rates (exact for a constant
acceleration; it sees only the motion that arrives, so keys that stop at the start frame are read right).

`project_start_velocity(mech, twists)` finds the joint velocities whose body motion is nearest to those
twists and writes them into the joints' v0:

    minimise  sum over keyed bodies b of |J_b(q0) v - t_b|^2_{M_b}   subject to   G(q0) v = 0, v_p = v_p(0)

J_b maps joint rates to body b's twist (angular velocity, centre-of-mass velocity), M_b is its spatial
inertia, so the distance is the kinetic energy of the difference (a light body's keys weigh little, and
the units of turning and moving are made commensurable by the body itself); G are the loop rows' velocity
constraints and v_p the rates of prescribed joints, which their curves fix. The minimisers differ by rates
that move no keyed body: among them the one nearest the typed v0 is taken, so a body with no keys keeps
the velocity typed into its joint. With a null-space basis N of G the problem is an ordinary least squares
in v = v_typed* + N z (v_typed* the typed v0 projected onto G v = 0), solved for the minimum-norm z.

The tangent space {J v : G v = 0} is exactly the velocities the joints allow, so the maximal method, which
starts from the tree method's start (maximal/start.py), receives the M-orthogonal projection of the twists
onto its joint constraints' tangent space (tests/solver/test_start_velocity.py checks this against the
maximal joint rows).

A car (vehicles/car.py) can only roll along its heading, turning at yaw rate sigma u / l for its start
steering sigma = tan(steer): `car_start_speed` is the same projection on its one free velocity, in the
car's own kinetic energy (its rolling mass and its yaw inertia about the rear axle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import scipy.linalg

from .joint_reverse import reversed_joint
from .lie import cross
from .model import Joint, Mechanism
from .tree import constraints
from .tree.assembly import prescribed_values
from .tree.ball_springs import so3_log
from .tree.compile import TreeModel, _spanning_tree, compile_tree
from .tree.kinematics import Kinematics, forward
from .vehicles.car import CarModel


def twist_from_samples(matrices: np.ndarray, frame_time: float) -> np.ndarray:
    """Twist (6,) = (angular velocity, origin velocity), world axes, at the last of three world poses
    (3, 4, 4) taken `frame_time` seconds apart (rigid: rotation parts orthonormal)."""
    R, x = matrices[:, :3, :3], matrices[:, :3, 3]
    spin = so3_log(R[1:] @ np.swapaxes(R[:-1], -1, -2)) / frame_time  # (2, 3): rates over the two intervals
    move = np.diff(x, axis=0) / frame_time
    return np.concatenate([1.5 * spin[1] - 0.5 * spin[0], 1.5 * move[1] - 0.5 * move[0]])


def kinematic_model(mech: Mechanism) -> TreeModel:
    """The tree model of `mech`'s kinematics (forcing stripped: it does not move the start, and without it
    the tree compiles every joint the maximal method takes)."""
    kinematic = tuple(replace(j, stiffness=0.0, rest=None, damping=0.0, motor=None, lower=None, upper=None)
                      for j in mech.joints)
    return compile_tree(mech.replace(springs=(), joints=kinematic))


def body_jacobian(model: TreeModel, kin: Kinematics) -> np.ndarray:
    """J (nbody, 6, nq): joint rates -> each body's (angular velocity, centre-of-mass velocity), world axes."""
    S = np.einsum("bk,kj->bjk", model.ancestor[model.body_frame], kin.axis_world[:model.nq])  # (nbody, 6, nq)
    omega, v_spatial = S[:, :3], S[:, 3:]
    v_com = v_spatial + np.cross(omega, kin.body_com_world[:, :, None], axis=1)
    return np.concatenate([omega, v_com], axis=1)


def _metric_root(model: TreeModel, kin: Kinematics) -> np.ndarray:
    """A (nbody, 6, 6) with A^T A the spatial inertia about the centre of mass, world axes."""
    out = np.zeros((len(model.body_names), 6, 6))
    for b, (R, inertia, mass) in enumerate(zip(kin.body_R, model.body_inertia, model.body_mass)):
        values, vectors = np.linalg.eigh(R @ inertia @ R.T)
        out[b, :3, :3] = (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
        out[b, 3:, 3:] = np.sqrt(mass) * np.eye(3)
    return out


def projected_rates(model: TreeModel, kin: Kinematics, twists: Mapping[str, np.ndarray],
                    typed: np.ndarray) -> np.ndarray:
    """Joint rates (nq,) at kin: the constrained least squares of the module docstring.

    `twists` maps body names to (angular velocity, origin velocity) (6,) world axes; `typed` (nq,) the rates
    to stay nearest to. Prescribed rates are their curves' at t = 0."""
    pre = np.asarray(model.dof_prescribed)
    dyn = ~pre
    qd = np.array(typed, dtype=float)
    qd[pre] = prescribed_values(model, 0.0)[1]
    _, Dh = constraints.evaluate(model, kin)
    G, Gp = Dh[:, dyn], Dh[:, pre]
    if len(G):
        qd[dyn] -= np.linalg.pinv(G) @ (G @ qd[dyn] + Gp @ qd[pre])
        N = scipy.linalg.null_space(G)
    else:
        N = np.eye(int(dyn.sum()))
    keyed = [i for i, name in enumerate(model.body_names) if name in twists]
    if not keyed or N.shape[1] == 0:
        return qd
    J = body_jacobian(model, kin)[keyed]
    A = _metric_root(model, kin)[keyed]
    target = np.array([twists[model.body_names[i]] for i in keyed], dtype=float)
    target[:, 3:] += cross(target[:, :3], kin.body_com_world[keyed] - kin.body_origin[keyed])  # origin -> com
    residual = target - J @ qd
    lhs = np.einsum("bij,bjk->bik", A, J[:, :, dyn] @ N).reshape(-1, N.shape[1])
    rhs = np.einsum("bij,bj->bi", A, residual).ravel()
    z, *_ = np.linalg.lstsq(lhs, rhs, rcond=None)
    qd[dyn] += N @ z
    return qd


def _joint_v0(tree_joint: Joint, joint: Joint, rates: np.ndarray, chart: np.ndarray | None) -> tuple[float, ...]:
    """`joint`'s v0 from the rates of its tree form `tree_joint` (ball and free rotations: chart-axes angular
    velocity -> the joint's parent axes; a joint the tree crosses child-first is reversed back)."""
    v0 = np.array(rates, dtype=float)
    if chart is not None:
        v0[-3:] = chart @ v0[-3:]
    values = tuple(float(x) for x in v0)
    if tree_joint.parent == joint.parent:
        return values
    return reversed_joint(replace(tree_joint, v0=values)).v0


def project_start_velocity(mech: Mechanism, twists: Mapping[str, np.ndarray]) -> Mechanism:
    """`mech` with the v0 of every joint the tree method's spanning tree uses set to the projection of
    `twists` (body name -> (angular velocity, origin velocity) (6,), world axes, at the start; bodies not
    named keep their typed velocities where the keyed ones leave them free). Prescribed joints and loop
    joints keep theirs. An empty `twists` returns `mech` unchanged."""
    if not twists:
        return mech
    model = kinematic_model(mech)
    charts = np.array(model.ball_chart0)
    kin = forward(model, np.array(model.q_init), charts)
    qd = projected_rates(model, kin, twists, np.array(model.v_init))
    tree_joints = {j.name: j for j in _spanning_tree(model.mechanism)[0]}
    joints = list(mech.joints)
    for ji, joint in enumerate(joints):
        dofs = np.nonzero(model.dof_joint == ji)[0]
        if joint.name not in tree_joints or joint.prescribed is not None or not len(dofs):
            continue
        ball = model.dof_ball[dofs]
        chart = charts[ball[ball >= 0][0]] if np.any(ball >= 0) else None
        joints[ji] = replace(joint, v0=_joint_v0(tree_joints[joint.name], joint, qd[dofs], chart))
    return mech.replace(joints=tuple(joints))


def car_start_speed(model: CarModel, speed: float, yaw_rate: float, t0: float = 0.0) -> float:
    """The car's start speed (m/s along its heading) nearest keyed motion `speed` (along the heading) and
    `yaw_rate` (rad/s) in its kinetic energy: minimise m (v - speed)^2 + K (kappa v - yaw_rate)^2 with
    kappa = sigma(t0) / l the curvature its steering allows (m: rolling mass, K: yaw inertia, car.py)."""
    kappa = model.sigma(t0) / model.spec.wheelbase
    return (model.mass_x * speed + model.yaw * kappa * yaw_rate) / (model.mass_x + model.yaw * kappa * kappa)

"""Exact Newton Jacobian of the maximal-coordinate step against central finite differences, on a
mechanism with every joint type, a loop, joint springs/dampers/servos and a body-to-body spring."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.maximal import variational
from addon.solver.maximal.bodies import qmul
from addon.solver.maximal.start import start_from_tree
from addon.solver.maximal.joints import frames, joint_set
from addon.solver.model import Body, Joint, Mechanism, Motor, Spring

INERTIA = (0.3, 0.2, 0.25, 0.01, -0.02, 0.015)


def every_joint_type() -> Mechanism:
    bodies = tuple(Body(f"b{i}", 1.0 + 0.1 * i, (0.3 * i, 0.1 * i, -0.4 * i), (1.0, 0.0, 0.0, 0.0),
                        (0.05, -0.02, 0.03), INERTIA) for i in range(9))
    joints = (
        Joint("rev", "revolute", "world", "b0", (0.0, 0.0, 0.2), (0.0, 1.0, 0.2), q0=(0.3,), v0=(1.0,),
              stiffness=2.0, damping=0.4, motor=Motor("velocity", target_velocity=0.5, gain=0.3)),
        Joint("pri", "prismatic", "b0", "b1", (0.15, 0.05, -0.2), (1.0, 0.0, 0.3), q0=(0.1,), v0=(0.4,),
              damping=0.7, stiffness=3.0),
        Joint("cyl", "cylindrical", "b1", "b2", (0.45, 0.1, -0.6), (0.0, 0.0, 1.0), q0=(0.2, 0.05), v0=(0.5, 0.1),
              damping=0.2),
        Joint("uni", "universal", "b2", "b3", (0.75, 0.2, -1.0), (1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0),
              q0=(0.1, -0.2), v0=(0.3, 0.6), stiffness=1.5, rest=(0.05, -0.1), damping=0.25),
        Joint("pla", "planar", "b3", "b4", (1.05, 0.3, -1.4), (0.0, 0.0, 1.0), axis2=(1.0, 0.0, 0.0),
              q0=(0.02, 0.03, 0.1), v0=(0.1, 0.2, 0.3), damping=0.3),
        Joint("bal", "ball", "b4", "b5", (1.35, 0.4, -1.8), q0=(0.1, 0.2, -0.1), v0=(0.5, -0.2, 0.3)),
        Joint("fix", "fixed", "b5", "b6", (1.65, 0.5, -2.2)),
        Joint("fre", "free", "world", "b7", v0=(0.1, 0.2, 0.3, 0.4, -0.5, 0.6), damping=0.15, stiffness=1.2,
              rest=(0.05, -0.02, 0.03, 0.1, -0.2, 0.3)),
        Joint("hinge8", "revolute", "b6", "b8", (2.0, 0.6, -2.6), (0.0, 1.0, 0.0), v0=(2.0,)),
    )
    springs = (Spring("s", "b7", "b3", (0.1, 0.0, 0.0), (0.0, 0.1, 0.0), stiffness=5.0, rest_length=0.5,
                      damping=0.8),)
    # b8 hangs from the free body b7 by a sprung, damped ball joint at b7's origin; the loop this closes is cut
    # at 'bal' by the tree method (breadth-first from the world), which therefore takes no spring or damper
    loop = Joint("loop", "ball", "b7", "b8", bodies[7].position, damping=0.35, stiffness=2.5, rest=(0.3, -0.1, 0.2))
    return Mechanism("all joints", bodies, joints + (loop,), springs=springs)


def residual(model, state, knot, V, lam, active, dt):
    ev = variational.evaluate(model, state, knot, V, lam, active, dt)
    return np.concatenate([ev.body_residual.ravel(), ev.row_residual]), ev


def dense(matrix, n):
    return np.column_stack([matrix.multiply(e) for e in np.eye(n)])


@pytest.mark.parametrize("startup", [True, False])
def test_newton_matrix_matches_finite_differences(startup):
    model, state = start_from_tree(every_joint_type())
    state.startup = startup
    rng = np.random.default_rng(3)
    dt = 0.01
    knot = variational.knot_terms(model, state, dt)
    R = len(model.order)
    active = np.ones(R, bool)
    V = np.concatenate([state.v, state.w], axis=1) + 0.3 * rng.normal(size=(len(state.v), 6))
    lam = rng.normal(size=R)
    f0, ev = residual(model, state, knot, V, lam, active, dt)
    nb = len(V)
    A = dense(ev.matrix, 6 * nb + R)
    h = 1e-6
    fd = np.empty_like(A)
    for k in range(6 * nb):
        dV = np.zeros(6 * nb)
        dV[k] = h
        fp, _ = residual(model, state, knot, V + dV.reshape(nb, 6), lam, active, dt)
        fm, _ = residual(model, state, knot, V - dV.reshape(nb, 6), lam, active, dt)
        fd[:, k] = (fp - fm) / (2 * h)
    for k in range(R):
        dl = np.zeros(R)
        dl[k] = h
        fp, _ = residual(model, state, knot, V, lam + dl, active, dt)
        fm, _ = residual(model, state, knot, V, lam - dl, active, dt)
        fd[:, 6 * nb + k] = -(fp - fm) / (2 * h)  # the matrix's multiplier unknown is -lambda
    scale = np.max(np.abs(A))
    assert np.max(np.abs(A - fd)) < 1e-6 * scale, np.unravel_index(np.argmax(np.abs(A - fd)), A.shape)
    # the damper couplings and the startup terms are really exercised
    assert len(ev.matrix.coupling[0]) > 0 or startup


def test_joint_jacobians_match_finite_differences():
    mech = every_joint_type()
    js = joint_set(mech)
    rng = np.random.default_rng(7)
    nb = len(mech.bodies)
    x = rng.normal(size=(nb, 3))
    q = rng.normal(size=(nb, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    fr = frames(js, x, q)
    h = 1e-6
    for body in range(nb):
        for c in range(6):
            xp, xm, qp, qm = x.copy(), x.copy(), q.copy(), q.copy()
            if c < 3:
                xp[body, c] += h
                xm[body, c] -= h
            else:
                phi = np.zeros(3)
                phi[c - 3] = h
                qp[body] = qmul(q[body], np.array([np.sqrt(1 - h * h / 4), *(phi / 2)]))
                qm[body] = qmul(q[body], np.array([np.sqrt(1 - h * h / 4), *(-phi / 2)]))
            fp, fm = frames(js, xp, qp), frames(js, xm, qm)
            for side, col in ((js.parent == body, c), (js.child == body, 6 + c)):
                np.testing.assert_allclose((fp.r - fm.r)[side] / (2 * h), fr.dr[side][:, :, col], atol=1e-8)
                np.testing.assert_allclose((fp.qrel - fm.qrel)[side] / (2 * h), fr.dqrel[side][:, :, col], atol=1e-8)

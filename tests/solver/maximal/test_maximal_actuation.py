"""Joint limits (interior-point pairs), velocity servos, keyed torques, joint springs and dampers of the
maximal method against the tree method on the same Mechanism."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.integrator import make_integrator, simulate
from addon.solver.maximal.joints import frames, generic_rows
from addon.solver.model import Body, Curve, Joint, Mechanism, Motor

ROD = (0.0841, 0.0841, 0.00125, 0.0, 0.0, 0.0)


def hinge_angle(run, body: int = 0) -> np.ndarray:
    """Rotation about +x of a body hanging along -z from the origin (its frame at the pivot)."""
    w, x = run.poses[:, body, 3], run.poses[:, body, 4]
    return 2.0 * np.arctan2(x, w)


@pytest.mark.heavy
def test_joint_limit_stops_the_pendulum():
    bob = Body("rod", 1.0, (0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5), inertia=ROD)
    hinge = Joint("hinge", "revolute", "world", "rod", axis=(1.0, 0.0, 0.0), q0=(-1.0,), upper=(0.3,))
    run = simulate(Mechanism("stop", (bob,), (hinge,)), 0.01, 250, "maximal")
    assert run.status == "finished", run.message
    angle = hinge_angle(run)
    assert np.max(angle) <= 0.3 + 1e-7
    at_stop = np.nonzero(angle > 0.3 - 1e-6)[0]
    assert len(at_stop) > 0  # it does reach the stop (a free swing would go on to +1 rad)
    # a rigid stop without restitution: the rod falls back from rest at the stop and swings to about -0.3
    # (an elastic bounce would swing back to -1)
    assert abs(np.min(angle[at_stop[0]:]) + 0.3) < 0.02, np.min(angle[at_stop[0]:])


def second_order_gap(mech: Mechanism, duration: float = 0.5) -> tuple[float, float]:
    gaps = []
    for dt in (0.02, 0.01):
        steps = int(round(duration / dt))
        a = simulate(mech, dt, steps, "maximal")
        b = simulate(mech, dt, steps, "tree")
        assert a.status == "finished", a.message
        gaps.append(float(np.max(np.abs(a.poses[:, :, :3] - b.poses[:, :, :3]))))
    return gaps[0], gaps[1]


def test_servo_torque_spring_and_damper_agree_with_the_tree_method():
    upper = Body("upper", 1.0, (0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5), inertia=ROD)
    lower = Body("lower", 1.0, (0.0, 0.0, -1.0), com=(0.0, 0.0, -0.5), inertia=ROD)
    torque = Curve((0.0, 0.25, 0.5), (0.0, 3.0, -1.0), "cubic")
    joints = (
        Joint("shoulder", "revolute", "world", "upper", axis=(1.0, 0.0, 0.0), q0=(0.4,),
              motor=Motor("velocity", target_velocity=1.5, gain=4.0), damping=0.3),
        Joint("elbow", "revolute", "upper", "lower", (0.0, 0.0, -1.0), (1.0, 0.0, 0.0), v0=(1.0,),
              motor=Motor("torque", torque=torque), stiffness=6.0, rest=(0.2,)),
    )
    coarse, fine = second_order_gap(Mechanism("arm", (upper, lower), joints))
    assert fine < 2e-3, fine
    assert coarse / fine > 3.0, (coarse, fine)


def test_prismatic_spring_damper_agrees_with_the_tree_method():
    cart = Body("cart", 2.0, (0.0, 0.0, 0.0), inertia=(0.1, 0.1, 0.1, 0.0, 0.0, 0.0))
    slide = Joint("slide", "prismatic", "world", "cart", axis=(1.0, 0.0, 1.0), q0=(0.3,), v0=(-0.5,),
                  stiffness=20.0, damping=1.5)
    coarse, fine = second_order_gap(Mechanism("cart", (cart,), (slide,)))
    assert fine < 1e-3, fine
    assert coarse / fine > 3.0, (coarse, fine)


def test_universal_joint_limit_holds_on_its_second_angle():
    """A rod on a universal joint (a about x, then b about the carried y) swung into an upper limit on b:
    b never passes it (to the interior point's tolerance) and does reach it; a stays free."""
    rod = Body("rod", 1.0, (0.0, 0.0, 0.0), com=(0.0, 0.0, -0.5), inertia=ROD)
    gimbal = Joint("gimbal", "universal", "world", "rod", axis=(1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0),
                   q0=(0.3, 0.0), v0=(0.0, 3.0), lower=(-2.0, -0.4), upper=(2.0, 0.4))
    integrator = make_integrator(Mechanism("gimbal", (rod,), (gimbal,)), "maximal", 0.01)
    js = integrator.model.joints
    angles = []
    for _ in range(150):
        integrator.step()
        s = integrator.state
        value, _ = generic_rows(frames(js, s.x, s.q), js.coord_joint, js.coord_kind, s.coord_winding)
        angles.append(value)
    a, b = np.array(angles).T
    assert np.max(b) <= 0.4 + 1e-7 and np.min(b) >= -0.4 - 1e-7
    assert np.max(b) > 0.4 - 1e-5  # a free swing at 3 rad/s would carry b well past 0.4
    assert np.ptp(a) > 0.1  # the first angle still swings under gravity

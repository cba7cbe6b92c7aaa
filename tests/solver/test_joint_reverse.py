"""joint_reverse.reversed_joint: a joint written child -> parent is the same joint, for every reversible type.

The independent check is the maximal method, which takes every joint as written (limits, rests, springs
and dampers on the reversed joint's own coordinates): a two-link mechanism whose lower joint is written
reversed must move exactly as the forward one. The tree method reverses such a joint back while choosing
its spanning tree, so it must compile to the forward joint's limits, rests and springs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver import lie
from addon.solver.integrator import simulate
from addon.solver.joint_reverse import reversed_joint
from addon.solver.model import Body, Curve, Joint, Mechanism, MechanismError, Motor
from addon.solver.tree.compile import compile_tree

# The lower joint of each type, with every field it takes set to something asymmetric.
LOWER: dict[str, dict] = {
    "revolute": dict(axis=(0.0, 0.6, 0.8), lower=(-0.2,), upper=(0.15,), stiffness=3.0, rest=(0.1,), damping=0.2,
                     q0=(0.05,), v0=(2.0,), motor=Motor("velocity", target_velocity=0.5, gain=0.3)),
    "prismatic": dict(axis=(0.6, 0.0, 0.8), lower=(-0.1,), upper=(0.04,), stiffness=50.0, rest=(0.05,), damping=0.5,
                      q0=(0.02,), v0=(0.3,), motor=Motor("torque", torque=Curve((0.0, 0.5), (0.0, 4.0)))),
    "cylindrical": dict(axis=(0.6, 0.0, 0.8), lower=(-0.5, -0.1), upper=(0.2, 0.05), stiffness=20.0,
                        rest=(0.1, 0.03), damping=0.3, q0=(0.1, 0.0), v0=(1.5, 0.2)),
    # axis2 not perpendicular to axis: the joint's second axis is its projection
    "universal": dict(axis=(1.0, 0.0, 0.0), axis2=(0.2, 1.0, 0.0), lower=(-0.3, -0.15), upper=(0.25, 0.1),
                      stiffness=4.0, rest=(0.1, -0.05), damping=0.2, q0=(0.05, 0.02), v0=(1.0, -2.0)),
    "ball": dict(axis=(0.0, 0.6, 0.8), stiffness=4.0, rest=(0.1, -0.2, 0.05), damping=0.2, q0=(0.1, 0.2, -0.1),
                 v0=(1.0, -0.5, 2.0)),
    "fixed": dict(),
}
TILT = tuple(float(x) for x in np.array((0.96, 0.2, 0.1, 0.16)) / np.linalg.norm((0.96, 0.2, 0.1, 0.16)))


def two_links(kind: str, reverse: bool) -> Mechanism:
    """Link 'a' hinged to the world, link 'b' on `kind` joint 'elbow' below it (written b -> a when reverse)."""
    bodies = (Body("a", 1.0, (0.0, 0.0, -0.5), inertia=(0.09, 0.08, 0.02, 0.0, 0.0, 0.0)),
              Body("b", 0.8, (0.0, 0.1, -1.5), TILT, inertia=(0.05, 0.07, 0.03, 0.0, 0.0, 0.0)))
    shoulder = Joint("shoulder", "revolute", "world", "a", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), q0=(0.3,), v0=(0.5,))
    elbow = Joint("elbow", kind, "a", "b", (0.0, 0.05, -1.0), **LOWER[kind])
    return Mechanism(kind, bodies, (shoulder, reversed_joint(elbow) if reverse else elbow))


@pytest.mark.parametrize("kind", list(LOWER))
def test_reversing_twice_gives_the_joint_back(kind):
    joint = two_links(kind, reverse=False).joint("elbow")
    back = reversed_joint(reversed_joint(joint))
    assert (back.parent, back.child) == ("a", "b")
    for field in ("q0", "v0", "lower", "upper", "rest"):
        assert (getattr(back, field) is None) == (getattr(joint, field) is None), field
        np.testing.assert_allclose(getattr(back, field) or (), getattr(joint, field) or (), atol=1e-15, err_msg=field)
    assert (back.stiffness, back.damping, back.motor) == (joint.stiffness, joint.damping, joint.motor)
    axes = lie.frame_from_axis(np.array(back.axis), None if back.axis2 is None else np.array(back.axis2))
    forward = lie.frame_from_axis(np.array(joint.axis), None if joint.axis2 is None else np.array(joint.axis2))
    np.testing.assert_allclose(axes[:, 2], forward[:, 2], atol=1e-15)
    if kind == "universal":  # the same joint frame: axis2 comes back as its projection
        np.testing.assert_allclose(axes, forward, atol=1e-15)


def test_a_universal_joint_written_child_to_parent_compiles_to_the_forward_limits_rests_and_springs():
    forward = two_links("universal", reverse=False)
    elbow = forward.joint("elbow")
    frame = lie.frame_from_axis(np.array(elbow.axis), np.array(elbow.axis2))
    # as a user writes it from link b: the first coordinate turns about the cross piece's other arm
    by_hand = Joint("elbow", "universal", "b", "a", elbow.anchor, axis=tuple(-frame[:, 0]), axis2=tuple(-frame[:, 2]),
                    q0=(0.02, 0.05), v0=(-2.0, 1.0), lower=(-0.15, -0.3), upper=(0.1, 0.25), stiffness=4.0,
                    rest=(-0.05, 0.1), damping=0.2)
    a, b = compile_tree(forward), compile_tree(forward.replace(joints=(forward.joints[0], by_hand)))
    for field in ("dof_lower", "dof_upper", "dof_rest", "dof_stiffness", "dof_damping", "q_init", "v_init"):
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), atol=1e-15, err_msg=field)
    np.testing.assert_allclose(b.dof_placement, a.dof_placement, atol=1e-15)


@pytest.mark.parametrize("kind", list(LOWER))
def test_the_tree_compiles_a_reversed_joint_to_the_forward_one(kind):
    a, b = compile_tree(two_links(kind, reverse=False)), compile_tree(two_links(kind, reverse=True))
    for field in ("dof_lower", "dof_upper", "dof_rest", "dof_stiffness", "dof_damping", "dof_motor_gain",
                  "dof_motor_velocity", "q_init", "v_init", "dof_placement", "body_offset", "ball_rest",
                  "ball_chart0", "ball_stiffness"):
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), atol=1e-14, err_msg=field)
    assert b.dof_torque == a.dof_torque


def test_a_ball_joint_reversed_turns_the_other_way_at_the_same_rate():
    """q0 and v0 of the reverse, from their definitions: R = exp(q0) is the child joint frame in the
    parent's, and v0 the relative angular velocity in the parent's joint axes (dR/dt = hat(v0) R)."""
    joint = two_links("ball", reverse=False).joint("elbow")
    back = reversed_joint(joint)
    q0, v0, h = np.array(joint.q0), np.array(joint.v0), 1e-6

    def reverse_rotation(t: float) -> np.ndarray:
        return (lie.rotvec_to_matrix(t * v0) @ lie.rotvec_to_matrix(q0)).T

    np.testing.assert_allclose(lie.rotvec_to_matrix(np.array(back.q0)), reverse_rotation(0.0), atol=1e-15)
    rate = (reverse_rotation(h) - reverse_rotation(-h)) / (2 * h) @ reverse_rotation(0.0).T
    np.testing.assert_allclose([rate[2, 1], rate[0, 2], rate[1, 0]], back.v0, atol=1e-8)


@pytest.mark.heavy
@pytest.mark.parametrize("method, atol", [("tree", 1e-12), ("maximal", 1e-8)])
@pytest.mark.parametrize("kind", list(LOWER))
def test_a_reversed_joint_moves_as_the_forward_one(kind, method, atol):
    """Both methods; in the maximal method the reversed joint's limits, rests and springs act as written.
    The tolerance is Newton's (tol 1e-10 on momenta); the tree runs the same compiled model twice."""
    forward = simulate(two_links(kind, reverse=False), 0.01, 60, method)
    reverse = simulate(two_links(kind, reverse=True), 0.01, 60, method)
    assert forward.status == reverse.status == "finished", (forward.message, reverse.message)
    np.testing.assert_allclose(reverse.poses, forward.poses, atol=atol)


@pytest.mark.parametrize("kind", ["planar", "free"])
def test_planar_and_free_joints_have_no_reverse_and_the_tree_names_the_joint(kind):
    joint = Joint("elbow", kind, "a", "b", axis=(0.0, 0.0, 1.0), axis2=(1.0, 0.0, 0.0) if kind == "planar" else None)
    assert reversed_joint(joint) is None
    mech = two_links("fixed", reverse=False)
    mech = mech.replace(joints=(mech.joints[0], replace(joint, parent="b", child="a")))
    with pytest.raises(MechanismError, match=rf"'elbow': body 'b' is reachable from the world only through this "
                                             rf"{kind} joint's child 'a'"):
        compile_tree(mech)


@pytest.mark.parametrize("method, atol", [("tree", 1e-12), ("maximal", 1e-8)])
@pytest.mark.parametrize("kind", list(LOWER))
def test_a_joint_written_with_child_world_moves_as_the_forward_one(kind, method, atol):
    """The format allows child = "world": link 'b' hung from the world by `kind` written b -> world must
    move as when written world -> b (issue 19: the maximal method raised KeyError 'world')."""
    bodies = two_links(kind, reverse=False).bodies[1:]
    hang = Joint("hang", kind, "world", "b", (0.0, 0.05, -1.0), **LOWER[kind])
    forward = simulate(Mechanism(kind, bodies, (hang,)), 0.01, 60, method)
    reverse = simulate(Mechanism(kind, bodies, (reversed_joint(hang),)), 0.01, 60, method)
    assert reversed_joint(hang).child == "world"
    assert forward.status == reverse.status == "finished", (forward.message, reverse.message)
    np.testing.assert_allclose(reverse.poses, forward.poses, atol=atol)


@pytest.mark.parametrize("kind", ["planar", "free"])
def test_planar_and_free_joints_with_child_world_are_refused_by_name_in_the_maximal_method(kind):
    body = Body("b", 1.0, (0.0, 0.0, -1.0), inertia=(0.1, 0.1, 0.1, 0.0, 0.0, 0.0))
    joint = Joint("hang", kind, "b", "world", axis=(0.0, 0.0, 1.0), axis2=(1.0, 0.0, 0.0) if kind == "planar" else None)
    with pytest.raises(MechanismError, match=rf"'hang': a {kind} joint cannot have child 'world'"):
        simulate(Mechanism(kind, (body,), (joint,)), 0.01, 5, "maximal")

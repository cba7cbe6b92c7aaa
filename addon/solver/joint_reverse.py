"""A joint seen from its child: the one definition of reversing a Joint, for every method and the bridge.

Owns `reversed_joint`, which swaps a joint's parent and child and rewrites every field that depends on
the direction (axes, coordinates, velocities, limits, rests; stiffness, damping, motors and keyed curves
keep their meaning) so the reversed joint allows the same relative motion, pulls with the same springs
and stops at the same limits. It is a solver module of its own, not a method on model.Joint, because
model.py holds plain data and no maths (a ball joint's reverse needs rotations from lie.py), and because
two owners that each kept their own copy drifted apart (one swapped a universal joint's limits, the other
its rests). The tree compiler reverses joints its spanning tree crosses child-first; the Blender bridge
reverses rigid body constraints so every body hangs from the world.

The joint frame J is the one tree/compile.py and maximal/joints.py build (z = axis, x = axis2 made
perpendicular to it); the relative motion is J_P^-1 J_C = P(q), P the primitives of the joint type.
Reversed, it is E^-1 P(q)^-1 E with E the turn from J to the reversed joint frame, and:
  revolute, prismatic, cylindrical  axis negated (E turns z to -z): same coordinates
  universal   axis <- -x, axis2 <- -axis (E = [-z, -y, -x]): Rz(a) Rx(b) becomes Rz(b) Rx(a), so
              the two coordinates (and their limits and rests) swap
  ball        axis kept (E = I): exp(q) becomes exp(-q); the relative angular velocity v0, in the
              parent's joint axes, becomes -exp(-q0) v0 in the child's; rest -> -rest, since
              |log(R_rest R^T)| = |log(R_rest^T R)|
  fixed       only the bodies swap
Planar and free joints have translations in the parent's axes that turn with the rotation: their
reverse is not a joint of the same type with the same coordinates, so they have none.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import lie
from .model import WORLD, Joint, Mechanism, MechanismError


def _negated(values: tuple[float, ...] | None) -> tuple[float, ...] | None:
    return None if values is None else tuple(-float(x) for x in values)


def _swapped(values: tuple[float, ...] | None) -> tuple[float, ...] | None:
    return None if values is None else tuple(values[::-1])


def reversed_joint(joint: Joint) -> Joint | None:
    """`joint` with parent and child swapped and its fields rewritten to allow the same motion.

    Returns None for the joint types with no such reverse (planar, free). Reversing twice gives the
    joint back (up to rounding, and with a universal joint's axis2 made perpendicular to its axis).
    """
    flipped = replace(joint, parent=joint.child, child=joint.parent)
    if joint.type in ("revolute", "prismatic", "cylindrical"):
        return replace(flipped, axis=_negated(joint.axis))
    if joint.type == "fixed":
        return flipped
    if joint.type == "universal":
        frame = lie.frame_from_axis(np.array(joint.axis, dtype=float), np.array(joint.axis2, dtype=float))
        return replace(flipped, axis=_negated(frame[:, 0]), axis2=_negated(frame[:, 2]),
                       q0=_swapped(joint.q0), v0=_swapped(joint.v0), lower=_swapped(joint.lower),
                       upper=_swapped(joint.upper), rest=_swapped(joint.rest))
    if joint.type == "ball":
        v0 = joint.v0
        if v0:
            turn = lie.rotvec_to_matrix(np.array(joint.q0 or (0.0,) * 3, dtype=float))
            v0 = tuple(float(x) for x in -turn.T @ np.array(v0, dtype=float))
        return replace(flipped, q0=_negated(joint.q0), v0=v0, rest=_negated(joint.rest))
    return None


def world_as_parent(mech: Mechanism) -> Mechanism:
    """`mech` with every joint written with child "world" reversed, so the world is always a parent.

    The format allows child = "world"; methods that index a joint's child as a body (the maximal method)
    take the mechanism through this. Joint order and names are kept, so joint indices still match.
    Raises MechanismError naming the joint for the types with no reverse (planar, free)."""
    joints = []
    for joint in mech.joints:
        if joint.child == WORLD:
            flipped = reversed_joint(joint)
            if flipped is None:
                raise MechanismError(
                    f"{mech.source}: [[joint]] {joint.name!r}: a {joint.type} joint cannot have child 'world' (its "
                    "reverse has other coordinates); swap its 'parent' and 'child'")
            joint = flipped
        joints.append(joint)
    return mech.replace(joints=tuple(joints))

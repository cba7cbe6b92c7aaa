"""Blender constraint and bone layouts as joints: which joint type, which local axes, which coordinates.

Owns the mapping from a rigid body constraint's type and locked axes, or a pose bone's rotation mode and
free channels, to a joint type with its axis, axis2 and coordinate order (`JointLayout`), and the joint
coordinates of bone poses under a layout. Plain numpy, no bpy: read_rigid.py and read_armature.py read
the Blender values and call these.
"""

from __future__ import annotations

from dataclasses import dataclass

import math
from collections.abc import Callable

import numpy as np

from ..solver.lie import frame_from_axis
from .rotations import matrix_to_euler, matrix_to_quat

AXES = "XYZ"


@dataclass(frozen=True)
class JointLayout:
    """A joint type and which local axes (indices 0..2) carry axis and axis2."""

    type: str
    axis: int = 2
    axis2: int | None = 0
    dofs: tuple[tuple[str, int], ...] = ()  # ("lin" | "ang", axis index) in coordinate order


LAYOUTS = {
    "FIXED": JointLayout("fixed"),
    "POINT": JointLayout("ball", 2, 0, (("ang", 0), ("ang", 1), ("ang", 2))),
    "HINGE": JointLayout("revolute", 2, None, (("ang", 2),)),
    "SLIDER": JointLayout("prismatic", 0, None, (("lin", 0),)),
    "PISTON": JointLayout("cylindrical", 0, None, (("ang", 0), ("lin", 0))),
}


def generic_layout(lin_free: list[int], ang_free: list[int]) -> JointLayout | None:
    """The joint a GENERIC constraint is, from its free linear and angular axes (None: unsupported)."""
    nl, na = len(lin_free), len(ang_free)
    if nl == 0 and na == 0:
        return JointLayout("fixed")
    if nl == 0 and na == 1:
        return JointLayout("revolute", ang_free[0], None, (("ang", ang_free[0]),))
    if nl == 1 and na == 0:
        return JointLayout("prismatic", lin_free[0], None, (("lin", lin_free[0]),))
    if nl == 1 and na == 1 and lin_free == ang_free:
        return JointLayout("cylindrical", lin_free[0], None, (("ang", lin_free[0]), ("lin", lin_free[0])))
    if nl == 0 and na == 2:
        a, b = ang_free
        return JointLayout("universal", a, b, (("ang", a), ("ang", b)))
    if nl == 0 and na == 3:
        return JointLayout("ball", 2, 0, (("ang", 0), ("ang", 1), ("ang", 2)))
    if nl == 2 and na == 1 and ang_free[0] not in lin_free:
        a, b = lin_free
        return JointLayout("planar", ang_free[0], a, (("lin", a), ("lin", b), ("ang", ang_free[0])))
    if nl == 3 and na == 3:
        return JointLayout("free", 2, 0, tuple(("lin", i) for i in range(3)) + tuple(("ang", i) for i in range(3)))
    return None


def dof_limits(layout: JointLayout, limit_of: Callable[[str, int], tuple[float, float] | None]
               ) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """Per-coordinate (lower, upper) of a joint laid out as `layout`: limit_of(kind, axis) for each dof, None
    for a free one (+-inf); (None, None) when no dof is limited."""
    lower, upper, used = [], [], False
    for kind, i in layout.dofs:
        bounds = limit_of(kind, i)
        lower.append(-math.inf if bounds is None else bounds[0])
        upper.append(math.inf if bounds is None else bounds[1])
        used = used or bounds is not None
    return (tuple(lower), tuple(upper)) if used else (None, None)


def limit_state(use_limit: bool, lower: float, upper: float) -> str:
    """'locked', 'limited' or 'free' for one axis of a GENERIC constraint; lower > upper is free, as in Bullet."""
    if not use_limit:
        return "free"
    if abs(upper - lower) <= 1e-12:
        return "locked"
    return "limited" if lower < upper else "free"


def channel_layout(mode: str, rot: list[int], loc: list[int], local_location: bool) -> JointLayout | str:
    """The joint a bone's free channels describe, or a reason they describe none.

    mode: the bone's rotation_mode; rot, loc: indices (0..2) of its unlocked rotation and location axes
    (loc empty for a connected bone); local_location: the bone's Local Location option.
    """
    if mode == "AXIS_ANGLE" and len(rot) not in (0, 3):
        return "an Axis Angle bone must lock all rotation axes or none; use an Euler mode for a hinge"
    if mode == "QUATERNION" and len(rot) == 2:
        return "two free rotation axes need an Euler rotation mode (a universal joint)"
    if loc and not local_location:
        return "a sliding bone needs Local Location enabled"
    nr, nl = len(rot), len(loc)
    if nl == 0:
        if nr == 0:
            return JointLayout("fixed")
        if nr == 1:
            return JointLayout("revolute", rot[0], None, (("ang", rot[0]),))
        if nr == 2:
            # Euler order string lists axes first-applied first; the later one is the outer axis.
            inner, outer = sorted(rot, key=lambda i: mode.index(AXES[i]))
            return JointLayout("universal", outer, inner, (("ang", outer), ("ang", inner)))
        return JointLayout("ball", 2, 0, (("ang", 0), ("ang", 1), ("ang", 2)))
    if nr == 0 and nl == 1:
        return JointLayout("prismatic", loc[0], None, (("lin", loc[0]),))
    if nr == 1 and nl == 1 and rot == loc:
        return JointLayout("cylindrical", loc[0], None, (("ang", loc[0]), ("lin", loc[0])))
    if nr == 1 and nl == 2 and rot[0] not in loc:
        return JointLayout("planar", rot[0], loc[0], (("lin", loc[0]), ("lin", loc[1]), ("ang", rot[0])))
    if nr == 3 and nl == 3:
        return JointLayout("free", 2, 0, tuple(("lin", i) for i in range(3)) + tuple(("ang", i) for i in range(3)))
    names = [f"rotation {AXES[i]}" for i in rot] + [f"location {AXES[i]}" for i in loc]
    return f"free channels {', '.join(names) or 'none'} match no supported joint"


def angle_about(rot: np.ndarray, i: int) -> np.ndarray:
    """Angle of rotations (..., 3, 3) about local axis i (exact when they are such rotations)."""
    j, k = (i + 1) % 3, (i + 2) % 3
    return np.arctan2(rot[..., k, j], rot[..., j, j])


def rotation_vector(rot: np.ndarray) -> np.ndarray:
    q = matrix_to_quat(rot)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    return np.where(s > 1e-15, v / np.where(s > 1e-15, s, 1.0) * angle, 2.0 * v)


def layout_coordinates(layout: JointLayout, basis: np.ndarray, bone_world: np.ndarray) -> np.ndarray:
    """Joint coordinates (..., ndof) of bone basis matrices (..., 4, 4); bone_world is its 3x3 rest rotation.

    Revolute, universal and the planar angle are measured in the bone's axes; a ball joint's
    rotation vector is in the axes of its joint frame (z along the bone's Z, x from
    solver.lie.frame_from_axis) and a free joint's translation and rotation vector in world axes,
    as the tree method defines them.
    """
    rot, loc = basis[..., :3, :3], basis[..., :3, 3]
    t = layout.type
    if t == "fixed":
        return np.zeros(basis.shape[:-2] + (0,))
    if t == "revolute":
        return angle_about(rot, layout.axis)[..., None]
    if t == "prismatic":
        return loc[..., layout.axis : layout.axis + 1]
    if t == "cylindrical":
        return np.stack([angle_about(rot, layout.axis), loc[..., layout.axis]], -1)
    if t == "universal":
        locked = 3 - layout.axis - layout.axis2
        order = AXES[layout.axis2] + AXES[layout.axis] + AXES[locked]
        e = matrix_to_euler(rot.reshape(-1, 3, 3), order).reshape(rot.shape[:-2] + (3,))
        return np.stack([e[..., layout.axis], e[..., layout.axis2]], -1)
    if t == "planar":
        k, i = layout.axis, layout.axis2
        third = np.cross(np.eye(3)[k], np.eye(3)[i])
        return np.stack([loc[..., i], loc @ third, angle_about(rot, k)], -1)
    if t == "ball":
        joint_frame = frame_from_axis(bone_world[:, 2])
        to_joint = joint_frame.T @ bone_world
        return rotation_vector(rot) @ to_joint.T
    # free: world-axis translation of the head and world-axis rotation vector
    world_rot = bone_world @ rot @ bone_world.T
    return np.concatenate([loc @ bone_world.T, rotation_vector(world_rot)], -1)

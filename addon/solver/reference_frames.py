"""A mechanism's frames at its reference configuration, as its file writes them: each body's world pose and
each joint's world frame (origin at the anchor, z along the axis, x toward axis2). Both methods and the
run checks build their joint rows from these, so all three agree on what a joint's frame is."""

from __future__ import annotations

import numpy as np

from . import lie
from .model import Body, Joint


def body_pose(body: Body) -> np.ndarray:
    """World pose (4x4) of `body` at the reference."""
    return lie.pose_matrix(np.array(body.position, dtype=float),
                           lie.quat_to_matrix(np.array(body.orientation, dtype=float)))


def joint_rotation(joint: Joint) -> np.ndarray:
    """World rotation (3x3) of the joint frame at the reference: z = axis, x = axis2 (projected) if given;
    a free joint's frame is the world's."""
    if joint.type == "free":
        return np.eye(3)
    hint = None if joint.axis2 is None else np.array(joint.axis2, dtype=float)
    return lie.frame_from_axis(np.array(joint.axis, dtype=float), hint)


def joint_pose(joint: Joint) -> np.ndarray:
    """World pose (4x4) of the joint frame at the reference."""
    return lie.pose_matrix(np.array(joint.anchor, dtype=float), joint_rotation(joint))

"""layouts: which joint a rigid body constraint's free axes or a bone's free channels make, and the joint
coordinates of bone poses, checked by building poses from known coordinates (no Blender)."""

from __future__ import annotations

import numpy as np
import pytest

from addon.bridge.layouts import LAYOUTS, JointLayout, channel_layout, generic_layout, layout_coordinates, limit_state
from addon.solver.lie import frame_from_axis, rotvec_to_matrix

X, Y, Z = np.eye(3)


def pose(rotation: np.ndarray, location=(0.0, 0.0, 0.0)) -> np.ndarray:
    basis = np.eye(4)
    basis[:3, :3], basis[:3, 3] = rotation, location
    return basis


@pytest.mark.parametrize("lin, ang, expected", [
    ([], [], JointLayout("fixed")),
    ([], [1], JointLayout("revolute", 1, None, (("ang", 1),))),
    ([2], [], JointLayout("prismatic", 2, None, (("lin", 2),))),
    ([0], [0], JointLayout("cylindrical", 0, None, (("ang", 0), ("lin", 0)))),
    ([], [0, 2], JointLayout("universal", 0, 2, (("ang", 0), ("ang", 2)))),
    ([], [0, 1, 2], LAYOUTS["POINT"]),
    ([0, 1], [2], JointLayout("planar", 2, 0, (("lin", 0), ("lin", 1), ("ang", 2)))),
    ([0, 1, 2], [0, 1, 2], JointLayout("free", 2, 0, (("lin", 0), ("lin", 1), ("lin", 2), ("ang", 0), ("ang", 1),
                                                      ("ang", 2)))),
])
def test_generic_constraint_free_axes_name_the_joint(lin, ang, expected):
    assert generic_layout(lin, ang) == expected


@pytest.mark.parametrize("lin, ang", [([0], [1]), ([0, 1], []), ([0, 2], [2]), ([0, 1, 2], [0])])
def test_free_axes_no_joint_allows_have_no_layout(lin, ang):
    assert generic_layout(lin, ang) is None


def test_a_limit_with_equal_ends_locks_and_reversed_ends_free_the_axis_as_in_bullet():
    assert limit_state(False, 0.0, 0.0) == "free"
    assert limit_state(True, 0.3, 0.3) == "locked"
    assert limit_state(True, -0.2, 0.3) == "limited"
    assert limit_state(True, 0.3, -0.2) == "free"


def test_a_bone_with_two_free_euler_axes_is_universal_about_the_later_applied_axis_first():
    # "XYZ": X is applied first, so Z (applied later) is the outer axis, the joint's axis
    assert channel_layout("XYZ", [0, 2], [], True) == JointLayout("universal", 2, 0, (("ang", 2), ("ang", 0)))
    assert channel_layout("ZYX", [0, 2], [], True) == JointLayout("universal", 0, 2, (("ang", 0), ("ang", 2)))


@pytest.mark.parametrize("mode, rot, loc, local, layout_type", [
    ("XYZ", [], [], True, "fixed"),
    ("QUATERNION", [1], [], True, "revolute"),
    ("QUATERNION", [0, 1, 2], [], True, "ball"),
    ("AXIS_ANGLE", [0, 1, 2], [], True, "ball"),
    ("XYZ", [], [1], True, "prismatic"),
    ("XYZ", [1], [1], True, "cylindrical"),
    ("XYZ", [2], [0, 1], True, "planar"),
    ("QUATERNION", [0, 1, 2], [0, 1, 2], True, "free"),
])
def test_bone_channels_name_the_joint(mode, rot, loc, local, layout_type):
    assert channel_layout(mode, rot, loc, local).type == layout_type


@pytest.mark.parametrize("mode, rot, loc, local, reason", [
    ("AXIS_ANGLE", [2], [], True, "an Axis Angle bone must lock all rotation axes or none"),
    ("QUATERNION", [0, 1], [], True, "two free rotation axes need an Euler rotation mode"),
    ("XYZ", [], [1], False, "a sliding bone needs Local Location enabled"),
    ("XYZ", [0], [1], True, "free channels rotation X, location Y match no supported joint"),
])
def test_bone_channels_no_joint_allows_say_why(mode, rot, loc, local, reason):
    assert reason in channel_layout(mode, rot, loc, local)


BONE_WORLD = rotvec_to_matrix(np.array([0.3, -0.4, 0.2]))  # the bone's rest rotation in the world


def test_revolute_prismatic_and_cylindrical_coordinates_are_the_angle_about_and_slide_along_the_axis():
    angle = 2.5  # beyond pi/2, where an arcsine would fold
    basis = pose(rotvec_to_matrix(angle * Y), (0.0, 0.7, 0.0))
    assert layout_coordinates(JointLayout("revolute", 1, None, (("ang", 1),)), basis, BONE_WORLD) == pytest.approx(
        [angle])
    slide = JointLayout("prismatic", 1, None, (("lin", 1),))
    assert layout_coordinates(slide, basis, BONE_WORLD) == pytest.approx([0.7])
    assert layout_coordinates(channel_layout("XYZ", [1], [1], True), basis, BONE_WORLD) == pytest.approx([angle, 0.7])


def test_universal_coordinates_are_the_outer_then_inner_angle():
    a, b = 0.4, -1.1
    layout = channel_layout("XYZ", [0, 2], [], True)  # outer Z, inner X: R = Rz(a) Rx(b), the tree's rz rx
    basis = pose(rotvec_to_matrix(a * Z) @ rotvec_to_matrix(b * X))
    assert layout_coordinates(layout, basis, BONE_WORLD) == pytest.approx([a, b])


def test_planar_coordinates_slide_in_the_plane_and_turn_about_its_normal():
    layout = channel_layout("XYZ", [2], [0, 1], True)  # normal Z, slides along X then Z x X = Y
    basis = pose(rotvec_to_matrix(-0.8 * Z), (0.3, -0.2, 0.0))
    assert layout_coordinates(layout, basis, BONE_WORLD) == pytest.approx([0.3, -0.2, -0.8])


def test_ball_coordinates_are_the_rotation_vector_in_the_joint_frame_axes():
    w_bone = np.array([0.5, -0.3, 0.9])  # rotation vector in the bone's own axes
    coordinates = layout_coordinates(LAYOUTS["POINT"], pose(rotvec_to_matrix(w_bone)), BONE_WORLD)
    to_joint = frame_from_axis(BONE_WORLD[:, 2]).T @ BONE_WORLD  # bone axes -> joint frame axes
    np.testing.assert_allclose(rotvec_to_matrix(coordinates), to_joint @ rotvec_to_matrix(w_bone) @ to_joint.T,
                               atol=1e-12)


def test_free_coordinates_are_world_axis_translation_and_rotation_vector():
    w_bone, loc = np.array([-0.2, 0.6, 0.1]), np.array([0.1, 0.2, -0.3])
    layout = channel_layout("QUATERNION", [0, 1, 2], [0, 1, 2], True)
    coordinates = layout_coordinates(layout, pose(rotvec_to_matrix(w_bone), loc), BONE_WORLD)
    np.testing.assert_allclose(coordinates[:3], BONE_WORLD @ loc, atol=1e-12)
    np.testing.assert_allclose(rotvec_to_matrix(coordinates[3:]),
                               BONE_WORLD @ rotvec_to_matrix(w_bone) @ BONE_WORLD.T, atol=1e-12)


def test_coordinates_of_many_poses_at_once():
    angles = np.linspace(-3.0, 3.0, 7)
    bases = np.array([pose(rotvec_to_matrix(a * X)) for a in angles])
    layout = JointLayout("revolute", 0, None, (("ang", 0),))
    np.testing.assert_allclose(layout_coordinates(layout, bases, BONE_WORLD)[:, 0], angles, atol=1e-12)

"""Rotation utilities against scipy's independent implementation."""

import numpy as np
from scipy.spatial.transform import Rotation

from addon.solver import lie


def test_quaternion_matrix_round_trip_including_half_turns():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(500, 4))
    q[:3] = [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0.6, 0.8]]  # half turns: w = 0, pivot on the diagonal
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    R = lie.quat_to_matrix(q)
    scipy_R = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()
    np.testing.assert_allclose(R, scipy_R, atol=1e-14)
    back = lie.matrix_to_quat(R)
    assert np.all(back[:, 0] >= 0)
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", back, q)), 1.0, atol=1e-14)  # same rotation


def test_rotation_vector_and_axis_rotation_match_scipy():
    rng = np.random.default_rng(1)
    for rv in list(rng.normal(size=(20, 3))) + [np.array([1e-10, 0.0, 0.0])]:
        np.testing.assert_allclose(lie.rotvec_to_matrix(rv), Rotation.from_rotvec(rv).as_matrix(), atol=1e-14)
    for axis in range(3):
        np.testing.assert_allclose(lie.axis_rotation(axis, 0.7),
                                   Rotation.from_rotvec(0.7 * np.eye(3)[axis]).as_matrix(), atol=1e-15)


def test_axis_rotation_and_pose_matrix_broadcast_over_leading_axes():
    angles = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    for axis in range(3):
        R = lie.axis_rotation(axis, angles)
        assert R.shape == (3, 4, 3, 3)
        np.testing.assert_allclose(R.reshape(-1, 3, 3),
                                   Rotation.from_rotvec(angles.reshape(-1, 1) * np.eye(3)[axis]).as_matrix(),
                                   atol=1e-15)
    R = lie.axis_rotation(2, angles[0])  # (4, 3, 3) rotations, one position: every transform holds it
    M = lie.pose_matrix(np.array([1.0, 2.0, 3.0]), R)
    assert M.shape == (4, 4, 4)
    np.testing.assert_array_equal(M[:, :3, :3], R)
    np.testing.assert_array_equal(M[:, :3, 3], np.broadcast_to([1.0, 2.0, 3.0], (4, 3)))
    np.testing.assert_array_equal(M[:, 3], np.broadcast_to([0.0, 0.0, 0.0, 1.0], (4, 4)))
    np.testing.assert_array_equal(lie.pose_matrix(np.array([1.0, 2.0, 3.0]), np.eye(3))[:3, 3], [1.0, 2.0, 3.0])

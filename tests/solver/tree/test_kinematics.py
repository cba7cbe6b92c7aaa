"""Batched body poses (recorded trajectories) against the one-configuration kinematics."""

import numpy as np

from addon.solver.tree.integrator import TreeMidpoint
from addon.solver.tree.kinematics import body_poses, forward

from .random_mechanisms import random_tree


def test_trajectory_poses_equal_forward_kinematics_at_every_step():
    integ = TreeMidpoint(random_tree(3, loops=1), 0.01)  # ball and free charts fold every step
    model = integ.model
    expected = [body_poses(model, forward(model, integ.state.q, integ.state.charts))]
    for _ in range(50):
        integ.step()
        expected.append(body_poses(model, forward(model, integ.state.q, integ.state.charts)))
    np.testing.assert_allclose(integ.trajectory().poses, np.array(expected), atol=1e-14)

"""What a toppling front costs the maximal step: the collision query's margin follows the speed of the
bodies' points (not |w| times 1 m), so a spinning body does not pull far pairs into every step."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism

G = 9.81
HALF = 0.05  # m, the spinning cube's half edge
SPIN = 20.0  # rad/s about z: its corners move 1.7 cm a step of 0.01 s


def spinning_cube(wall_gap: float) -> Mechanism:
    """A 1 kg cube (half edge HALF) spinning about z at SPIN on the ground, and a static wall whose face is
    wall_gap beyond the circle its vertical edges sweep."""
    inertia = 2 * HALF**2 / 3
    body = Body("cube", 1.0, (0.0, 0.0, HALF), inertia=(inertia, inertia, inertia, 0.0, 0.0, 0.0))
    sweep = np.sqrt(2) * HALF
    colliders = (Collider("ground", WORLD, "plane", friction=0.5),
                 Collider("wall", WORLD, "box", (0.05, 0.5, 0.5), position=(sweep + wall_gap + 0.05, 0.0, 0.5)),
                 Collider("box", "cube", "box", (HALF,) * 3, friction=0.5))
    return Mechanism("spinning cube", (body,), (Joint("free", "free", "world", "cube", v0=(0, 0, 0, 0, 0, SPIN)),),
                     colliders=colliders)


@pytest.mark.parametrize("kernel", [None, False])  # the C step (where built) and the numpy step
def test_query_margin_follows_the_fastest_point(kernel):
    """The cube's corners move 2 dt * 1.7 cm = 3.5 cm at most in a step (with the margin's factor 2): a wall
    10 cm beyond their circle is not queried (the margin 2 dt (|v| + |w|) took it in: 40 cm), while a wall 1 cm
    inside their circle is met without a tenth of a millimetre of overlap."""
    far = make_integrator(spinning_cube(0.10), "maximal", 0.01)
    far.state.kernel = kernel
    for _ in range(3):
        far.step()
        found = far.state.interior.rows.contacts.found
        assert not np.any((found.collider_a == 1) | (found.collider_b == 1)), found.distance
    near = make_integrator(spinning_cube(-0.01), "maximal", 0.01)
    near.state.kernel = kernel
    met = False
    for _ in range(10):
        near.step()
        found = near.state.interior.rows.contacts.found
        met |= bool(np.any((found.collider_a == 1) | (found.collider_b == 1)))
    assert met
    assert near.info()["deepest_penetration"] <= 1e-4

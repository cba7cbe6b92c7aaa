"""What a toppling front costs the maximal step: the collision query's margin follows each body's point speed
(not |w| times 1 m, not the fastest body's for every pair), and a contact entering the set restarts only its
own interior-point rows."""

from __future__ import annotations

from dataclasses import replace

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


def resting_boxes_and_a_ball(ball_height: float, ball_speed: float) -> Mechanism:
    """Four 0.2 m boxes resting on the ground 2 cm apart in a row and a 0.1 m ball at ball_height above the
    ground, 1 m beside the row, moving down at ball_speed."""
    inertia = 2 * 0.1**2 / 3
    bodies = [Body(f"box{i}", 1.0, (0.22 * i, 0.0, 0.1), inertia=(inertia, inertia, inertia, 0.0, 0.0, 0.0))
              for i in range(4)]
    bodies.append(Body("ball", 1.0, (0.33, 1.0, ball_height), inertia=(0.004, 0.004, 0.004, 0.0, 0.0, 0.0)))
    joints = [Joint(f"{b.name} free", "free", WORLD, b.name) for b in bodies]
    joints[-1] = replace(joints[-1], v0=(0.0, 0.0, -ball_speed, 0.0, 0.0, 0.0))
    colliders = [Collider("ground", WORLD, "plane", friction=0.5)]
    colliders += [Collider(f"{b.name} box", b.name, "box", (0.1, 0.1, 0.1), friction=0.5) for b in bodies[:4]]
    colliders.append(Collider("ball sphere", "ball", "sphere", (0.1,), friction=0.5))
    return Mechanism("boxes and a ball", tuple(bodies), tuple(joints), colliders=tuple(colliders))


@pytest.mark.parametrize("kernel", [None, False])
def test_a_fast_body_does_not_widen_the_query_of_resting_ones(kernel):
    """A pair's margin is its faster body's: the ball falling at 5 m/s (10 cm a step) leaves the resting boxes
    2 cm apart out of each other's query (one margin for all had put their facing faces in every step)."""
    integ = make_integrator(resting_boxes_and_a_ball(3.0, 5.0), "maximal", 0.01)
    integ.state.kernel = kernel
    for _ in range(3):
        integ.step()
        found = integ.state.interior.rows.contacts.found
        assert np.all(found.body_a < 0), found.body_a  # every contact is a box (or the ball) on the ground
        assert len(found) == 16


@pytest.mark.parametrize("kernel", [None, False])
def test_a_contact_entering_restarts_only_its_own_rows(kernel):
    """The ball drops beside the resting boxes: the step where its contact enters the set starts the boxes'
    rows warm (their pairs from the last step) and only the ball's cold, and takes a warm step's Newton
    iterations (a whole cold start took 6 here); the boxes stay at rest on the ground."""
    integ = make_integrator(resting_boxes_and_a_ball(0.13, 0.0), "maximal", 0.01)
    integ.state.kernel = kernel
    counts, cold = [], []
    for _ in range(12):
        integ.step()
        counts.append(len(integ.state.interior.rows.contacts.distance))
        cold.append(integ.state.interior.cold)
    entered = counts.index(17)
    assert counts[:entered] == [16] * entered and entered >= 2 and not any(cold[1:])
    iterations = integ.trajectory().newton_iterations
    assert iterations[entered] <= max(iterations[1:entered]), iterations
    z = integ.state.x[:4, 2]
    assert np.max(np.abs(z - 0.1)) < 1e-4

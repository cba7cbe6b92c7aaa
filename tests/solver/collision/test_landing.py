"""A box landing tilted on its edge: the query before the step must guard the landing face's far corners.

A 0.2 m cube falls at 2.5 m/s onto a static slab, turned about x so it first meets the slab along one edge.
A manifold of that edge's two ends alone leaves the face's other two corners unguarded during the step,
and the cube slaps flat several mm into the slab (5-7 mm before manifold.face_behind_edge).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.collision.world import CollisionWorld
from addon.solver.integrator import simulate
from addon.solver.lie import quat_to_matrix
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism

HALF = 0.1  # m, the cube's half edge
GAP = 0.005  # m, the lowest edge above the slab at the start


def _landing(tilt: float, spin: float, speed: float = 2.5) -> Mechanism:
    """The cube turned by `tilt` rad about x, falling at `speed` and spinning at `spin` rad/s about x."""
    turn = (math.cos(tilt / 2), math.sin(tilt / 2), 0.0, 0.0)
    reach = HALF * float(np.abs(quat_to_matrix(np.array(turn))[2]).sum())  # lowest corner below the centre
    mass = 600.0 * (2 * HALF) ** 3
    inertia = mass * 2 * HALF**2 / 3
    cube = Body("cube", mass, (0.0, 0.0, reach + GAP), turn, inertia=(inertia,) * 3 + (0.0,) * 3)
    colliders = (Collider("slab", WORLD, "box", (0.3, 0.3, 0.05), position=(0.0, 0.0, -0.05), friction=0.5),
                 Collider("cube", "cube", "box", (HALF,) * 3, friction=0.5))
    free = Joint("free", "free", WORLD, "cube", v0=(0.0, 0.0, -speed, spin, 0.0, 0.0))
    return Mechanism("landing cube", (cube,), (free,), colliders=colliders)


@pytest.mark.parametrize("native", [False, True])
def test_an_edge_over_a_face_brings_the_face_corners_within_the_margin(native):
    """Turned 10 degrees, the cube's lowest edge is GAP above the slab and the far corners of the face
    behind it 2 HALF sin(10 deg) higher, within a 50 mm margin: four points at those heights (numpy and C)."""
    tilt = math.radians(10.0)
    mech = _landing(tilt, 0.0)
    world = CollisionWorld(mech, native=native)
    body = mech.bodies[0]
    found = world.detect(np.array([body.position]), np.array([body.orientation]), 0.05)
    rise = 2 * HALF * math.sin(tilt)
    assert np.allclose(np.sort(found.distance), [GAP, GAP, GAP + rise, GAP + rise], rtol=0, atol=1e-12)
    steep = world.detect(np.array([body.position]), np.array([body.orientation]), 0.5 * rise)  # the edge alone
    assert np.allclose(steep.distance, [GAP, GAP], rtol=0, atol=1e-12)


@pytest.mark.parametrize("tilt_deg", [6.0, 15.0])
def test_a_cube_slapping_flat_onto_a_slab_stays_out_of_it(tilt_deg):
    """Falling at 2.5 m/s and spinning flat at 10 rad/s: the deepest overlap over the landing stays under
    1e-3 of the cube's half edge (0.1 mm)."""
    mech = _landing(math.radians(tilt_deg), -10.0)
    run = simulate(mech, 0.01, 6, "maximal")
    assert run.status == "finished", run.message
    assert run.poses[-1, 0, 2] < HALF + 0.01  # it landed
    world = CollisionWorld(mech)
    deepest = max(-float(np.min(world.detect(p[:, :3], p[:, 3:]).distance, initial=0.0)) for p in run.poses)
    assert deepest < 1e-3 * HALF

"""Friction in the maximal-coordinate step (interior_point.py): a block on a tilted plane sticks exactly
when tan(angle) < mu and slides with a = g (sin - mu cos) when tan(angle) > mu (non-horizontal normals,
tangents built from the plane normal), and the collider presets run with friction on every step
(no step redone frictionless) without penetrating more than 1 mm; a contact patch gets one friction
pyramid."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from addon.solver.collision.world import CollisionWorld
from addon.solver.integrator import simulate
from addon.solver.maximal import interior_point
from addon.solver.maximal.integrator import MaximalIntegrator
from addon.solver.maximal.variational import knot_terms
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from addon.solver.presets import preset_path

G = 9.81
HALF = 0.1  # half edge of the block (m)


def incline(angle: float, mu: float) -> tuple[Mechanism, np.ndarray]:
    """A 1 kg, 0.2 m cube resting on a plane tilted by `angle` about y; returns it and the downhill unit
    vector."""
    c, s = np.cos(angle / 2), np.sin(angle / 2)
    quat = (c, 0.0, s, 0.0)  # rotation about +y: the plane's x axis points downhill
    downhill = np.array([np.cos(angle), 0.0, -np.sin(angle)])
    normal = np.array([np.sin(angle), 0.0, np.cos(angle)])
    centre = tuple(HALF * normal)
    body = Body("block", 1.0, centre, orientation=quat, inertia=(1 / 150, 1 / 150, 1 / 150, 0.0, 0.0, 0.0))
    colliders = (Collider("slope", WORLD, "plane", orientation=quat, friction=mu),
                 Collider("box", "block", "box", (HALF, HALF, HALF), friction=mu))
    return Mechanism("incline", (body,), (Joint("free", "free", "world", "block"),), colliders=colliders), downhill


@pytest.mark.heavy
@pytest.mark.parametrize("degrees", [15.0, 25.0, 35.0, 45.0])
def test_block_on_an_incline_sticks_below_atan_mu_and_slides_above_it(degrees):
    mu, dt, steps = 0.6, 0.01, 100  # atan(0.6) = 31.0 degrees
    angle = np.radians(degrees)
    mech, downhill = incline(angle, mu)
    run = simulate(mech, dt, steps, "maximal")
    assert run.status == "finished", run.message
    assert run.info["steps_without_friction"] == 0
    along = (run.poses[:, 0, :3] - run.poses[0, 0, :3]) @ downhill
    velocity = np.diff(along) / dt
    accel = max(G * (np.sin(angle) - mu * np.cos(angle)), 0.0)
    # interval k's velocity is the rate at its midpoint (k + 1/2) dt (the start is second-order accurate)
    expected = accel * (np.arange(steps) + 0.5) * dt
    assert np.max(np.abs(velocity - expected)) < 1e-6 * max(1.0, expected[-1]), (degrees, velocity[-1], expected[-1])
    normal = np.array([np.sin(angle), 0.0, np.cos(angle)])
    assert np.max(np.abs(run.poses[:, 0, :3] @ normal - HALF)) < 1e-6  # stays on the plane
    if accel == 0.0:
        # sticks: the only creep is the interior point's residual slip, its complementarity tolerance
        # (1e-8 W per pair) over the friction multipliers (~0.1-1 N per pyramid direction): 1.2e-8 m/s
        # measured at 25 degrees, 3.8e-9 at 15
        assert np.max(np.abs(velocity)) < 1e-7


def deepest_penetration(mech: Mechanism, poses: np.ndarray) -> float:
    world = CollisionWorld(mech)
    return min(np.min(world.detect(p[:, :3], p[:, 3:], 0.0).distance, initial=0.0) for p in poses)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["box_drop", "dominoes", "sphere_chain", "wrecking_ball"])
def test_collider_presets_keep_friction_on_every_step(name):
    mech = load_mechanism(preset_path(name))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a frictionless redo warns: make it fail here
        run = simulate(mech, 0.01, 300, "maximal")
    assert run.status == "finished", run.message
    assert run.info["steps_without_friction"] == 0, run.info["friction_dropped_at_steps"]
    assert np.max(run.constraint_residual) < 1e-9
    assert deepest_penetration(mech, run.poses) > -1e-3


def test_a_face_on_a_plane_is_one_friction_patch_and_dropping_it_is_recorded():
    """A box face on the ground: four gap pairs (one per corner) but one friction pyramid with spin
    (+-t1, +-t2, +-spin) and one cone, not four (per-corner pyramids would make the sticking
    multipliers non-unique). The last-resort redo without friction keeps the gaps and records the step
    (the integrator turns `friction_dropped` into its message, warning and info)."""
    mech, _ = incline(0.0, 0.6)
    integrator = MaximalIntegrator(mech, 0.01)
    model, state = integrator.model, integrator.state
    interior_point.begin(model, state, knot_terms(model, state, 0.01), 0.01)
    ip = state.interior
    assert list(ip.rows.kind) == [0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2]
    assert interior_point.drop_friction(state, 7) and ip.friction_dropped == [7]
    assert list(ip.rows.kind) == [0, 0, 0, 0]
    assert not interior_point.drop_friction(state, 7) and ip.friction_dropped == [7]
    assert integrator.info()["friction_dropped_at_steps"] == [7]

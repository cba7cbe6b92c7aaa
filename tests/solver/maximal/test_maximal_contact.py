"""Contacts with friction in the maximal-coordinate step (seed 003 §3.4-3.5): a box dropped on the
ground rests on it, a pushed block sticks below mu m g and slides above it with (F - mu m g)/m, and a
sphere launched sliding rolls at 5/7 of its speed (the friction-torque scale, docs/seeds.md 003-B)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from addon.solver.collision.world import CollisionWorld
from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Force, Joint, Mechanism
from addon.solver.presets import preset_path

G = 9.81


@pytest.mark.heavy
def test_box_drop_comes_to_rest_above_the_ground():
    run = simulate(load_mechanism(preset_path("box_drop")), 0.01, 150, "maximal")
    assert run.status == "finished", run.message
    bottom = run.poses[:, 0, 2] - 0.25  # the cube's frame is at its centre, half edge 0.25 m
    assert np.min(bottom) > -1e-4  # never penetrates more than 0.1 mm
    assert 0.0 <= bottom[-1] < 1e-4
    assert abs(bottom[-1] - bottom[-2]) < 1e-9  # at rest
    assert bottom[30] < 1e-3  # it did fall (0.4 m in about 0.29 s)


def block(force: float, mu: float = 0.5) -> Mechanism:
    """A 1 kg, 0.2 m cube on the ground pushed along x at its centre."""
    body = Body("block", 1.0, (0.0, 0.0, 0.1), inertia=(1 / 150, 1 / 150, 1 / 150, 0.0, 0.0, 0.0))
    colliders = (Collider("ground", WORLD, "plane", friction=mu), Collider("box", "block", "box", (0.1, 0.1, 0.1), friction=mu))
    return Mechanism("block", (body,), (Joint("free", "free", "world", "block"),),
                     forces=(Force("push", "block", force=(force, 0.0, 0.0)),), colliders=colliders)


@pytest.mark.heavy
def test_block_sticks_below_the_friction_limit_and_slides_above_it():
    dt, steps, mu = 0.01, 100, 0.5
    for factor in (0.5, 0.9, 1.5, 2.0):
        force = factor * mu * G
        run = simulate(block(force, mu), dt, steps, "maximal")
        assert run.status == "finished", run.message
        x = run.poses[:, 0, 0]
        velocity = np.diff(x) / dt
        # interval k's velocity is the rate at its midpoint (k + 1/2) dt (the start is second-order accurate)
        expected = max(force - mu * G, 0.0) * (np.arange(steps) + 0.5) * dt
        assert np.max(np.abs(velocity - expected)) < 1e-6 * max(1.0, expected[-1]), factor
        assert np.max(np.abs(run.poses[:, 0, 2] - 0.1)) < 1e-6  # stays on the ground


@pytest.mark.heavy
def test_sphere_launched_sliding_rolls_at_five_sevenths_of_its_speed():
    r, v0, mu, dt = 0.25, 2.0, 0.3, 0.01
    ball = Body("ball", 1.0, (0.0, 0.0, r), inertia=(0.4 * r * r,) * 3 + (0.0, 0.0, 0.0))
    colliders = (Collider("ground", WORLD, "plane", friction=mu), Collider("s", "ball", "sphere", (r,), friction=mu))
    mech = Mechanism("ball", (ball,), (Joint("free", "free", "world", "ball", v0=(v0, 0, 0, 0, 0, 0)),),
                     colliders=colliders)
    run = simulate(mech, dt, 150, "maximal")
    assert run.status == "finished", run.message
    speed = np.diff(run.poses[:, 0, 0]) / dt
    rolling_time = 2 * v0 / (7 * mu * G)  # sliding decelerates at mu g until v = 5/7 v0
    after = int(np.ceil(rolling_time / dt)) + 2
    assert np.allclose(speed[after:], 5 / 7 * v0, rtol=2e-4)
    assert speed[5] < v0 - 4 * mu * G * dt  # it did slide first
    assert np.max(np.abs(run.poses[:, 0, 2] - r)) < 1e-6  # no sinking while rolling (docs/seeds.md 003-C)


@pytest.mark.heavy
@pytest.mark.parametrize("name, steps", [("box_drop", 60), ("dominoes", 60), ("wrecking_ball", 80), ("sphere_chain", 60)])
def test_contact_presets_run(name, steps):
    mech = load_mechanism(preset_path(name))
    run = simulate(mech, 0.01, steps, "maximal")
    assert run.status == "finished", run.message
    assert np.max(run.constraint_residual) < 1e-9
    world = CollisionWorld(mech)
    deepest = min(np.min(world.detect(p[:, :3], p[:, 3:], 0.0).distance, initial=0.0) for p in run.poses)
    assert deepest > -1e-3, deepest


def test_spinning_block_stops_under_the_friction_torque_of_its_corners():
    """The patch's spin pair: four corners at r = sqrt(2) a from the centre each carry mu m g / 4, a
    torque mu m g r, so the discrete spin momentum I w sqrt(1 - (dt w / 2)^2) (bodies.rotational_momentum)
    drops by mu m g r dt a step until the block stops, then it stays at rest."""
    dt, steps, mu, w0, inertia = 0.01, 40, 0.5, 20.0, 1 / 150
    body = Body("block", 1.0, (0.0, 0.0, 0.1), inertia=(inertia, inertia, inertia, 0.0, 0.0, 0.0))
    colliders = (Collider("ground", WORLD, "plane", friction=mu), Collider("box", "block", "box", (0.1, 0.1, 0.1), friction=mu))
    mech = Mechanism("spin", (body,), (Joint("free", "free", "world", "block", v0=(0, 0, 0, 0, 0, w0)),),
                     colliders=colliders)
    run = simulate(mech, dt, steps, "maximal")
    assert run.status == "finished", run.message
    assert run.info["steps_without_friction"] == 0
    q = run.poses[:, 0, 3:]
    yaw = np.unwrap(2 * np.arctan2(q[:, 3], q[:, 0]))
    rate = 2 * np.sin(np.diff(yaw) / 2) / dt  # the interval velocity: q_k+1 = q_k [cos; (dt/2) omega] (13)
    momentum = inertia * rate * np.sqrt(1 - (dt * rate / 2) ** 2)
    torque = mu * G * np.sqrt(2) * 0.1
    stop = int(momentum[0] / (torque * dt))
    assert np.max(np.abs(np.diff(momentum[:stop + 1]) + torque * dt)) < 1e-9, np.diff(momentum[:stop + 1])
    assert np.max(np.abs(rate[stop + 1:])) < 1e-6
    assert np.max(np.abs(run.poses[:, 0, :3] - [0.0, 0.0, 0.1])) < 1e-6  # spins in place on the ground


@pytest.mark.parametrize("sunk", [0.01, 0.04])
def test_an_overlap_deeper_than_a_tenth_of_the_thinner_collider_is_named(sunk):
    """The box drop's cube (half-size 0.25 m) started `sunk` m into the ground: 10 mm is within a tenth of its
    half-thickness (25 mm) and passes silently; 40 mm is named, with both colliders and the depth, in the run's
    message, a RuntimeWarning and info()["deepest_penetration"]."""
    import dataclasses

    from addon.solver.integrator import make_integrator
    from addon.solver.maximal.integrator import PENETRATION_FRACTION

    mech = load_mechanism(preset_path("box_drop"))
    cube = dataclasses.replace(mech.bodies[0], position=(0.0, 0.0, 0.25 - sunk))
    integ = make_integrator(dataclasses.replace(mech, bodies=(cube,)), "maximal", 0.01)
    deep = sunk > PENETRATION_FRACTION * 0.25
    with pytest.warns(RuntimeWarning, match="overlap by 40 mm") if deep else warnings.catch_warnings():
        if not deep:
            warnings.simplefilter("error")
        integ.step()
    assert integ.info()["deepest_penetration"] == pytest.approx(sunk, rel=1e-9)
    if deep:
        assert "colliders 'ground' and 'cube box' overlap by 40 mm at t = 0 s" in integ.message
        assert "more than 10 % of the thinner one's half-thickness (250 mm)" in integ.message
    else:
        assert integ.message == ""

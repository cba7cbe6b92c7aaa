"""Exact second derivatives of the shots' geometric terms: obstacle distances (sphere, box, cylinder, convex
hull), body points, keys, corridors, obstacle clearances and the reference-path cost, each against central differences
of its exact first derivative (obstacles.py, StageDynamics.body_point_hessian, transcription.py)."""

from dataclasses import replace

import numpy as np
import pytest

from addon import solver  # noqa: F401  (package import order: integrator before vehicles)
from addon.solver.shots.obstacles import distance_function
from addon.solver.shots.spec import Corridor, Costs, Obstacle
from addon.solver.shots.vehicle_shot import transcribe

from .test_vehicle_shots import _small_shot

TILT = tuple(np.array([0.9, 0.3, -0.2, 0.43589]) / np.linalg.norm([0.9, 0.3, -0.2, 0.43589]))
SHAPES = (Obstacle("ball", "sphere", (0.5, -0.2, 0.3), size=(1.2,)),
          Obstacle("crate", "box", (-0.4, 0.6, 0.2), TILT, size=(1.0, 0.6, 0.8)),
          Obstacle("post", "cylinder", (0.3, 0.1, -0.5), TILT, size=(0.7, 1.1)),
          Obstacle("rock", "hull", (0.1, 0.4, 0.0), TILT,
                   vertices=((-1, -1, -1), (1, -1, -1), (1, 1, -1), (-1, 1, -1), (0, 0, 1.5))))


@pytest.mark.parametrize("obstacle", SHAPES, ids=[o.shape for o in SHAPES])
def test_distance_hessian_equals_differences_of_its_gradient(obstacle):
    """At random points inside and outside (away from the non-smooth edges, where no Hessian exists)."""
    dist = distance_function(obstacle)
    rng = np.random.default_rng(2)
    p = np.asarray(obstacle.position) + rng.uniform(-3.0, 3.0, (200, 3))
    d, g, H = dist(p, True)
    assert np.array_equal(d, dist(p)[0]) and np.array_equal(g, dist(p)[1])
    assert np.any(d < 0) and np.any(d > 0)
    eps = 1e-6
    fd = np.stack([(dist(p + eps * e)[1] - dist(p - eps * e)[1]) / (2 * eps) for e in np.eye(3)], 2)
    assert np.max(np.abs(H - fd)) < 1e-6 * max(1.0, np.abs(fd).max())
    assert np.any(np.abs(H) > 1e-3)  # curved somewhere: the test could fail


@pytest.mark.parametrize("preset", ["sedan", "hovercraft"])
def test_geometric_and_cost_block_hessians_equal_differences_of_their_jacobians(preset):
    """Each key, obstacle, corridor and reference-cost block with an exact Hessian, at a random point, random weights."""
    shot = _small_shot(preset, 1.0)
    p = np.asarray(shot.mechanism.vehicle.position)
    obstacles = tuple(replace(o, position=tuple(p + np.asarray(o.position) * 3.0)) for o in SHAPES)
    reference = tuple(tuple(p + [0.3 * k, 0.1 * k, 0.0]) for k in range(shot.steps + 1))
    shot = replace(shot, obstacles=obstacles,
                   corridors=(Corridor("lane", 1, shot.steps, tuple(p - 10.0), tuple(p + 10.0)),),
                   costs=Costs(effort=1.0, smoothness=0.3, reference=0.5, reference_path=reference))
    tr = transcribe(shot)
    rng = np.random.default_rng(8)
    x = tr.x0() + 0.05 * rng.standard_normal(tr.n)
    x[tr.h_index] = 0.1
    checked = set()
    for b in tr.blocks + tr.costs:
        if b.kind == "dynamics" or not hasattr(b.fn, "hessian"):
            continue
        X = x[b.index]
        w = rng.standard_normal((len(X), b.rows))
        H = b.fn.hessian(X, w)
        eps = 1e-6
        fd = np.stack([(np.einsum("kr,krw->kw", w, b.fn(X + eps * e)[1]) - np.einsum("kr,krw->kw", w, b.fn(X - eps * e)[1]))
                       / (2 * eps) for e in np.eye(X.shape[1])], 2)
        assert np.max(np.abs(H - fd)) < 1e-6 * max(1.0, np.abs(fd).max()), b.kind
        checked.add(b.kind if isinstance(b.kind, str) else b.kind[0] + (b.kind[1].shape if b.kind[0] == "obstacle" else ""))
    assert {"key", "obstaclesphere", "obstaclebox", "obstaclecylinder", "obstaclehull", "corridor",
            "reference"} <= checked

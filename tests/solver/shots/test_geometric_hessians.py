"""Exact second derivatives of the shots' geometric terms: obstacle distances (sphere, box, cylinder, convex
hull), body points, keys, corridors, obstacle clearances and the reference-path cost, each against central differences
of its exact first derivative (obstacles.py, StageDynamics.body_point_hessian, transcription.py); a car's clearance
rows in C (native/planar_clearance.c) against their numpy twin; a car key's body origin in Python floats (_PlanarPoint)
against body_point (_BodyPoint)."""

from dataclasses import replace

import numpy as np
import pytest

from addon import solver  # noqa: F401  (package import order: integrator before vehicles)
from addon.solver.native import shot_rows_binding
from addon.solver.shots.obstacles import distance_function
from addon.solver.shots.spec import Corridor, Costs, Obstacle
from addon.solver.shots.transcription import _BodyPoint, _PlanarPoint, _wrap, _wrap_float
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


@pytest.mark.skipif(shot_rows_binding.LIB is None, reason="C kernels not built (make kernels)")
def test_car_clearance_rows_in_c_equal_numpy(monkeypatch):
    """The car's body spheres against every obstacle shape (tilted), in C and through obstacles.py: distances,
    gradients and weighted Hessians equal to round-off at random states with spheres inside and outside each."""
    shot = _small_shot("sedan", 1.0)
    p = np.asarray(shot.mechanism.vehicle.position)
    obstacles = tuple(replace(o, position=tuple(p + np.asarray(o.position))) for o in SHAPES)
    shot = replace(shot, obstacles=obstacles, body_spheres=((-1.2, 0.3, 0.0, 0.8), (0.4, -0.2, 0.1, 0.8)))
    in_c = transcribe(shot)
    monkeypatch.setattr(shot_rows_binding, "LIB", None)
    in_numpy = transcribe(shot)
    rng = np.random.default_rng(4)
    S = np.column_stack([rng.uniform(-np.pi, np.pi, 400), p[:2] + rng.uniform(-2.5, 2.5, (400, 2))])
    blocks = [(a, b) for a, b in zip(in_c.blocks, in_numpy.blocks) if a.kind[0] == "obstacle"]
    assert len(blocks) == len(SHAPES)
    for a, b in blocks:
        assert np.array_equal(a.index, b.index) and a.index.shape[1] == 3  # heading, x, y: steering pruned
        (d, J), (d0, J0) = a.fn(S), b.fn(S)
        assert np.any(d < 0) and np.any(d > 0)
        assert np.max(np.abs(d - d0)) <= 1e-14 * np.abs(d0).max() and np.max(np.abs(J - J0)) <= 1e-14 * np.abs(J0).max()
        w = rng.standard_normal(d.shape)
        H, H0 = a.fn.hessian(S, w), b.fn.hessian(S, w)
        assert np.max(np.abs(H - H0)) <= 1e-13 * np.abs(H0).max() and np.abs(H0).max() > 0.1


@pytest.mark.parametrize("K,offset", [(1, (0.0, 0.0, 0.0)), (5, (0.7, -0.4, 0.2))])
def test_car_body_point_in_floats_equals_body_point(K, offset):
    """A car's body point per instance in Python floats (_PlanarPoint: the keys', at the body origin) against
    CarDynamics.body_point and body_point_hessian: position, Jacobian, curvature, the key rows minus a target written
    into strided views of larger buffers (the assembly's), and the weighted curvature, equal to round-off at random
    states (one instance: a key; five: batches while differencing)."""
    tr = transcribe(_small_shot("sedan", 1.0))
    offset = np.array(offset)
    fast = tr._key_point() if not offset.any() else _PlanarPoint(*tr.dyn.body_plane(offset))
    assert isinstance(fast, _PlanarPoint)
    ref = _BodyPoint(tr.dyn, 2, offset)
    rng = np.random.default_rng(5)
    S = np.column_stack([rng.uniform(-np.pi, np.pi, K), rng.uniform(-20.0, 20.0, (K, 2)), rng.uniform(-0.5, 0.5, K)])
    for got, want in zip(fast.point(S) + (fast.curvature(S),), ref.point(S) + (ref.curvature(S),)):
        assert got.shape == want.shape and np.max(np.abs(got - want)) <= 1e-15 * np.abs(want).max()
    target = rng.uniform(-5.0, 5.0, 2)
    r, J = np.full((K, 3), np.nan)[:, 1:], np.full((K, 2, 5), np.nan)[:, :, :4]  # not contiguous
    r0, J0 = np.empty((K, 2)), np.empty((K, 2, 4))
    fast.rows(S, target, r, J)
    ref.rows(S, target, r0, J0)
    assert np.max(np.abs(r - r0)) <= 1e-14 * np.abs(r0).max() and np.max(np.abs(J - J0)) <= 1e-15 * np.abs(J0).max()
    w = rng.standard_normal((K, 2))
    H, H0 = fast.weighted_curvature(S, w), ref.weighted_curvature(S, w)
    assert np.max(np.abs(H - H0)) <= 1e-15 * np.abs(H0).max() and np.abs(H0).max() > 0.1


def test_heading_wrap_in_floats_equals_numpy():
    """A heading key's wrap of one Python float, against _wrap's numpy remainder: the same numbers (the same IEEE
    operations: Python's % and numpy's remainder are fmod, then + 2 pi when the signs differ), at random angles and
    at odd multiples of pi (the wrap's edges)."""
    a = np.concatenate([np.random.default_rng(6).uniform(-30.0, 30.0, 2000), np.arange(-9, 10, 2) * np.pi])
    assert np.array_equal([_wrap_float(v) for v in a.tolist()], _wrap(a))

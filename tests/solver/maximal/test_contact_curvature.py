"""The contact gap rows' curvature (interior_point._curvature, collision/features.py): a gap row aims at
d + curvature + dt N zdot, which must be the gap the collision query measures after the step along the
velocities the curvature followed (a box corner on a turning face, two turning edges crossing), where the
linear row alone misses it by dt^2 terms; and toppling dominoes, whose edge slides down the next one's face,
stay within 0.05 mm of touching (0.56 mm with the linear rows)."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.collision import CollisionWorld
from addon.solver.collision.features import EDGES, FACE_A, FACE_B, normal_owners
from addon.solver.integrator import make_integrator
from addon.solver.lie import quat_to_matrix
from addon.solver.maximal import interior_point
from addon.solver.maximal.bodies import advance
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from tools.contact_scenes import falling_dominoes

DT = 0.01
HALF = (0.1, 0.15, 0.05)


def _turn(axis, angle: float) -> tuple[float, ...]:
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return (float(np.cos(angle / 2)), *(np.sin(angle / 2) * axis).tolist())


def two_boxes(lower: tuple[float, ...], upper: tuple[float, ...], height: float) -> Mechanism:
    """Two free boxes, the upper one's centre `height` above the lower one's, no gravity, no friction."""
    inertia = (0.01, 0.012, 0.015, 0.0, 0.0, 0.0)
    bodies = (Body("low", 1.0, (0.0, 0.0, 0.0), lower, (0, 0, 0), inertia),
              Body("high", 1.5, (0.01, -0.02, height), upper, (0, 0, 0), inertia))
    joints = tuple(Joint(f"{b.name} free", "free", WORLD, b.name) for b in bodies)
    colliders = tuple(Collider(f"{b.name} box", b.name, "box", HALF, friction=0.0) for b in bodies)
    return Mechanism("two boxes", bodies, joints, gravity=(0.0, 0.0, 0.0), colliders=colliders)


def _lowest(rot: np.ndarray) -> float:
    """How far the lowest corner of a box (rotation rot) reaches below its centre."""
    return float(np.abs(rot[2]) @ np.array(HALF))


CORNER = _turn((1.0, 0.7, 0.2), 0.6)  # the upper box on one corner: a vertex on the lower box's top face
ACROSS_X, ACROSS_Y = _turn((1, 0, 0), np.pi / 4), _turn((0, 1, 0), np.pi / 4)  # edges along x and y cross


@pytest.mark.parametrize("lower, upper, owner", [((1.0, 0.0, 0.0, 0.0), CORNER, FACE_A),
                                                 (ACROSS_X, ACROSS_Y, EDGES)])
def test_gap_row_aims_at_the_measured_gap_after_the_step(lower, upper, owner):
    """Both boxes thrown and spinning (3-4 rad/s), 1 mm apart along the contact's features: the gap row's
    aim d + curvature + dt N zdot equals the gap the query measures at the configuration those velocities
    reach, to round-off; the linear row alone is off by dt^2 terms (about 1e-5 m here)."""
    rl, ru = quat_to_matrix(np.array(lower)), quat_to_matrix(np.array(upper))
    height = _lowest(rl) + _lowest(ru) + 1e-3
    integ = make_integrator(two_boxes(lower, upper, height), "maximal", DT)
    state, model = integ.state, integ.model
    state.v = np.array([[0.3, -0.2, 0.1], [-0.4, 0.5, -0.2]])
    state.w = np.array([[1.5, -2.0, 3.0], [-2.5, 1.0, 3.5]])
    interior_point.begin(model, state, None, DT)
    c = state.interior.rows.contacts
    assert len(c.distance) == 1 and abs(c.distance[0] - 1e-3) < 1e-9
    found = c.found
    got, *_ = normal_owners(model.collision.shapes, found.collider_a, found.collider_b, found.normal,
                            quat_to_matrix(state.q)[found.body_a], quat_to_matrix(state.q)[found.body_b])
    assert got.tolist() == [owner]
    V = np.vstack([np.concatenate([state.v, state.w], axis=1), np.zeros((1, 6))])
    linear = c.distance[0] + DT * (c.normal[0] @ (c.Jb[0] @ V[c.b[0]]) - c.normal[0] @ (c.Ja[0] @ V[c.a[0]]))
    x2, q2 = advance(state.x, state.q, state.v, state.w, DT)
    after = CollisionWorld(model.mechanism).detect(x2, q2, 0.05)
    assert len(after) == 1
    measured = float(after.distance[0])
    assert abs(linear + c.curvature[0] - measured) < 1e-12
    assert abs(linear - measured) > 1e-6


def test_feature_owners():
    """A box's face normal is that box's (A's preferred when both are faces), the cross product of two crossing
    edges is theirs; a normal across two parallel edges, any other normal and any pair with a sphere belong to
    no feature."""
    tilted = _turn((1.0, 2.0, 3.0), 0.7)
    mech = two_boxes((1.0, 0.0, 0.0, 0.0), tilted, 1.0)
    mech = mech.replace(colliders=mech.colliders + (Collider("ball", "high", "sphere", (0.1,)),))
    shapes = CollisionWorld(mech).shapes
    eye, turned = np.eye(3), quat_to_matrix(np.array(tilted))
    across = np.cross(eye[:, 1], turned[:, 0])
    normals = np.array([[0.0, 0.0, 1.0], -turned[:, 0], across / np.linalg.norm(across), [0.6, 0.0, 0.8],
                        [0.0, 0.0, 1.0]])
    rot_b = np.stack([turned, turned, turned, quat_to_matrix(np.array(ACROSS_Y)), turned])
    ca, cb = np.array([0, 0, 0, 0, 0]), np.array([1, 1, 1, 1, 2])
    owner, edge_a, edge_b = normal_owners(shapes, ca, cb, normals, np.stack([eye] * 5), rot_b)
    assert owner.tolist() == [FACE_A, FACE_B, EDGES, 0, 0]
    np.testing.assert_allclose(np.abs(edge_a[2]), [0.0, 1.0, 0.0])  # A's y edge
    np.testing.assert_allclose(np.abs(edge_b[2]), [1.0, 0.0, 0.0])  # B's x edge, in B's frame


def test_toppling_dominoes_stay_within_a_twentieth_of_a_millimetre():
    """Three dominoes, the first tipped onto the second: it leans on it and its top edge slides down the
    second's face as both turn, then the second topples onto the third (impacts). Deepest overlap over 1 s,
    measured by the collision query at every stored pose: under 0.05 mm (the linear rows: 0.56 mm)."""
    mech = falling_dominoes(3)
    integ = make_integrator(mech, "maximal", DT)
    for _ in range(100):
        integ.step()
    world = CollisionWorld(mech)
    poses = integ.trajectory().poses
    depth = max(-float(np.min(world.detect(p[:, :3], p[:, 3:]).distance, initial=0.0)) for p in poses)
    assert depth < 5e-5
    assert poses[-1, 0, 2] < poses[0, 0, 2] - 0.05  # the first one did fall

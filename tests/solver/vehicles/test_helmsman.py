"""The boat's and hovercraft's path follower (solver/vehicles/helmsman.py): the driver's speed profile held in a
turn by differential thrust, the split of the two thrusts, and the heel the boat's buoyancy gives in the turn
(no control can bank it), without Blender."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.model import Mechanism, Vehicle
from addon.solver.vehicles import driver, helmsman
from addon.solver.vehicles.boat import Hull

R, DT, G = 60.0, 1.0 / 24, 9.81


def craft(preset: str, speed: float) -> Mechanism:
    """The preset afloat (or on its cushion) at the origin, level, bow along +X at `speed` (m/s)."""
    spec = vehicle_presets()[preset]
    z = spec.keel_below_com - spec.design_draft if preset == "speedboat" else spec.rest_height
    kind = "boat" if preset == "speedboat" else "hovercraft"
    vehicle = Vehicle(kind, spec, position=(0.0, 0.0, z), velocity=(0, 0, 0, speed, 0, 0), name=preset)
    return Mechanism(name=preset, bodies=(), joints=(), gravity=(0.0, 0.0, -G), vehicle=vehicle, source="test")


def circle() -> np.ndarray:
    """A circle of radius R through the origin, tangent to +X there, turning left (centre (0, R))."""
    a = np.linspace(-math.pi / 2, 1.5 * math.pi, 361)
    return np.column_stack([R * np.cos(a), R + R * np.sin(a)])


def test_the_thrusts_give_the_torque_first_and_the_sum_within_what_is_left():
    spec = vehicle_presets()["speedboat"]
    half = spec.thruster_spacing / 2
    right, left = helmsman.split(spec, 2000.0, 300.0)
    assert right + left == pytest.approx(2000.0) and half * (right - left) == pytest.approx(300.0)
    right, left = helmsman.split(spec, 6000.0, 600.0)  # both at full thrust cannot turn: the sum gives way
    assert half * (right - left) == pytest.approx(600.0) and right == spec.max_thrust


@pytest.mark.heavy
def test_a_boat_holds_a_circle_at_its_turn_rate_heeled_outward_by_its_buoyancy():
    """On a circle of R = 60 m the profile's turn-rate cap sets the speed: turn_rate R (6.0 m/s; the lateral limit
    of 2 m/s^2 would allow 11). The boat stays within 0.2 m of the circle. Nothing rolls it but the hull: its
    sideways drag, m v^2 / R at the immersed centroid h = keel_below_com - draft / 2 below the centre of mass,
    heels it outward against its metacentric height GM = draft / 2 + BM - KG (BM of the hull's own columns:
    sum of A y_i^2 over the displaced volume), so tan(heel) = (v^2 / R) h / (g GM): 0.28 degrees."""
    spec = vehicle_presets()["speedboat"]
    limits = driver.Limits(lateral=2.0, accel=1.0, brake=1.0, top_speed=10.0)
    speed = helmsman.turn_rate(spec) * R
    trajectory, _ = helmsman.simulate_steering(craft("speedboat", speed), circle(), limits, DT, int(10.0 / DT))
    assert trajectory.status == "finished"
    poses = trajectory.poses[:, 0]
    late = trajectory.t > 6.0
    v = np.linalg.norm(np.diff(poses[:, :2], axis=0), axis=1)[late[1:]] / DT
    assert v == pytest.approx(speed, rel=0.01)
    rel = poses[late, :2] - np.array([0.0, R])
    assert np.abs(np.linalg.norm(rel, axis=1) - R).max() < 0.2
    hull = Hull.of(spec)
    draft, volume = spec.design_draft, spec.mass / spec.water_density
    bm = spec.hull_length * spec.hull_beam / len(hull.xy) * np.sum(hull.xy[:, 1] ** 2) / volume
    gm, h = draft / 2 + bm - spec.keel_below_com, spec.keel_below_com - draft / 2
    heel = math.atan(v.mean() ** 2 / R * h / (G * gm))
    inward = -rel / np.linalg.norm(rel, axis=1)[:, None]
    up = np.array([quat_to_matrix(q)[:, 2] for q in poses[late, 3:]])
    lean = np.arctan2(np.einsum("ij,ij->i", up[:, :2], inward), up[:, 2])  # + toward the centre
    assert -lean == pytest.approx(heel, rel=0.1)


@pytest.mark.heavy
def test_a_hovercraft_slides_round_a_circle_at_the_angle_its_skirt_drag_needs():
    """The hovercraft's only side force is its skirt's sway drag c_y |v_y| v_y at the centre of mass (thrust is
    along the bow), so in a steady turn of radius R at speed v it slides until c_y v_y^2 = m r v_x, r = v / R:
    sin^2(beta) = m cos(beta) / (c_y R), beta = 25.7 degrees at R = 60 m (any speed). The helmsman turns the bow
    that far into the turn; it runs up to 1.5 m wide of the circle (0.8 to 1.1 m measured: the turn leans on the
    drag it predicts, with no integral action); nothing rolls the craft (its roll about the bow stays below 0.01
    degrees)."""
    spec = vehicle_presets()["hovercraft"]
    limits = driver.Limits(lateral=2.0, accel=1.0, brake=1.0, top_speed=10.0)
    trajectory, _ = helmsman.simulate_steering(craft("hovercraft", 10.0), circle(), limits, DT, int(12.0 / DT))
    assert trajectory.status == "finished"
    poses = trajectory.poses[:, 0]
    late = trajectory.t[1:] > 8.0
    velocity = np.diff(poses[:, :2], axis=0)[late]
    bow = np.array([quat_to_matrix(q)[:2, 0] for q in poses[1:][late, 3:]])
    slide = np.arctan2(bow[:, 0] * velocity[:, 1] - bow[:, 1] * velocity[:, 0], np.einsum("ij,ij->i", bow, velocity))
    c = np.cos(np.linspace(0.0, 1.5, 150001))
    beta = np.arccos(c[np.argmin(np.abs(1.0 - c**2 - spec.mass * c / (spec.drag[1] * R)))])
    assert -slide == pytest.approx(beta, abs=math.radians(1.0))  # the velocity lies outward of the bow
    rel = poses[1:][late, :2] - np.array([0.0, R])
    assert np.abs(np.linalg.norm(rel, axis=1) - R).max() < 1.5
    R_body = np.array([quat_to_matrix(q) for q in poses[:, 3:]])
    assert np.degrees(np.abs(np.arctan2(R_body[:, 2, 1], R_body[:, 2, 2]))).max() < 0.01

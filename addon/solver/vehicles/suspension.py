"""Chassis heave, pitch and roll on four spring-damper corners, driven by road heights and planar accelerations.

Post-process of a planar car run (car.py solves SE(2) on flat ground): the sprung body is a small rigid
body with coordinates q = (z, roll, pitch), linearised about the artist's rig pose, which is the static
equilibrium on flat ground (the springs carry preloads that balance gravity, see `static_loads`).
Body axes: x forward, y left, z up; roll is about +x (positive lifts the left side), pitch about +y
(positive lowers the nose). A corner at (x_i, y_i) from the centre of mass moves up by
z + y_i roll - x_i pitch; its spring (stiffness k) and damper (c) act between that point and the wheel
centre, which follows the road (wheel height u_i, unsprung masses neglected). The tyres' horizontal
forces m a act at the ground, com_height below the centre of mass, so a longitudinal acceleration a_x
gives the pitch moment -m h a_x (braking: nose down) and a lateral acceleration a_y the roll moment
m h a_y (a left turn rolls the body to the right, outward).

M q'' = -K (J q - u) J - C (J q' - u') J + Q(t) is linear, integrated with the trapezoidal rule
(implicit, A-stable, no numerical damping): one constant 6x6 matrix factor per run.
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .spec import CarSpec

DEFAULT_FREQUENCY = 1.5  # Hz, heave natural frequency of a passenger car
DEFAULT_DAMPING = 0.4  # fraction of critical damping of each corner


@dataclass(frozen=True)
class Suspension:
    """The sprung body: mass, roll and pitch inertia, corner positions and the per-corner spring-damper.

    corners (4, 2): (x forward, y left) of each spring's top from the centre of mass, m.
    """

    mass: float
    roll_inertia: float
    pitch_inertia: float
    com_height: float
    corners: np.ndarray
    stiffness: float  # N/m per corner
    damping: float  # N s/m per corner

    def __post_init__(self):
        for field in ("mass", "roll_inertia", "pitch_inertia", "stiffness"):
            if not getattr(self, field) > 0:
                raise ValueError(f"suspension: {field} must be > 0, got {getattr(self, field)!r}")
        if not self.damping >= 0:
            raise ValueError(f"suspension: damping must be >= 0, got {self.damping!r}")
        if np.shape(self.corners) != (4, 2):
            raise ValueError(f"suspension: corners must be 4 (x, y) pairs, got shape {np.shape(self.corners)}")

    @property
    def jacobian(self) -> np.ndarray:
        """(4, 3): upward motion of each corner per unit (z, roll, pitch)."""
        x, y = np.asarray(self.corners, float).T
        return np.column_stack([np.ones(4), y, -x])

    @property
    def inertia(self) -> np.ndarray:
        return np.diag([self.mass, self.roll_inertia, self.pitch_inertia])


def car_suspension(spec: CarSpec, corners: np.ndarray, frequency: float = DEFAULT_FREQUENCY,
                   damping_ratio: float = DEFAULT_DAMPING) -> Suspension:
    """A Suspension for `spec` with corners (4, 2) from its centre of mass: each corner carries a quarter of
    the mass at heave frequency `frequency` (Hz), damped at `damping_ratio` of critical. Roll and pitch
    inertias are those of a uniform box of the car's track (width), 1.5 x wheelbase (length) and
    2 x com_height (height)."""
    if not frequency > 0:
        raise ValueError(f"suspension of {spec.name!r}: frequency must be > 0 Hz, got {frequency!r}")
    if not damping_ratio >= 0:
        raise ValueError(f"suspension of {spec.name!r}: damping ratio must be >= 0, got {damping_ratio!r}")
    quarter = 0.25 * spec.mass
    k = quarter * (2.0 * math.pi * frequency) ** 2
    c = 2.0 * damping_ratio * math.sqrt(k * quarter)
    width, length, height = spec.track, 1.5 * spec.wheelbase, 2.0 * spec.com_height
    return Suspension(spec.mass, spec.mass * (width**2 + height**2) / 12.0,
                      spec.mass * (length**2 + height**2) / 12.0, spec.com_height, np.asarray(corners, float), k, c)


def static_loads(susp: Suspension, gravity: float = 9.81) -> np.ndarray:
    """(4,) spring preloads (N) holding the body at rest: the least-squares split of m g over the corners
    with no net roll or pitch moment (what four equal springs of equal free length carry)."""
    return np.linalg.pinv(susp.jacobian.T) @ np.array([susp.mass * gravity, 0.0, 0.0])


def static_sag(susp: Suspension, gravity: float = 9.81) -> np.ndarray:
    """(4,) compression (m) of each spring from its free length at rest: m g / (4 k) for a centred body."""
    return static_loads(susp, gravity) / susp.stiffness


def equilibrium(susp: Suspension, road: np.ndarray) -> np.ndarray:
    """(3,) rest (z, roll, pitch) over constant wheel heights `road` (4,) (least squares for a warped road)."""
    J = susp.jacobian
    return np.linalg.solve(J.T @ J, J.T @ np.asarray(road, float))


@dataclass(frozen=True)
class SuspensionRun:
    """q, qdot (N+1, 3) as (z, roll, pitch) from the rest pose; spring compression (N+1, 4) from free length."""

    t: np.ndarray
    q: np.ndarray
    qdot: np.ndarray
    compression: np.ndarray


def simulate_suspension(susp: Suspension, t: np.ndarray, road: np.ndarray, accel: np.ndarray,
                        q0: np.ndarray | None = None, qdot0: np.ndarray | None = None,
                        gravity: float = 9.81) -> SuspensionRun:
    """Integrate the body over the time grid t (N+1,) (uniform steps) with wheel heights road (N+1, 4) from
    the rest ground and planar accelerations accel (N+1, 2) = (a_x forward, a_y left) of the centre of mass
    in body axes. Starts at q0 (default: at rest over road[0]) with velocity qdot0 (default 0)."""
    t = np.asarray(t, float)
    road, accel = np.asarray(road, float), np.asarray(accel, float)
    n = len(t)
    if road.shape != (n, 4) or accel.shape != (n, 2):
        raise ValueError(f"suspension: road must be ({n}, 4) and accel ({n}, 2) for {n} times, got "
                         f"{road.shape} and {accel.shape}")
    if n < 2:
        raise ValueError("suspension: need at least two times")
    h = float(t[1] - t[0])
    if not h > 0 or not np.allclose(np.diff(t), h, rtol=1e-9, atol=1e-12):
        raise ValueError("suspension: the time grid must be uniform and increasing")
    J, M = susp.jacobian, susp.inertia
    K, C = susp.stiffness * J.T @ J, susp.damping * J.T @ J
    road_rate = np.gradient(road, h, axis=0)
    m, hc = susp.mass, susp.com_height
    # Generalised force from the road and the planar accelerations, per time node: (N+1, 3).
    force = (susp.stiffness * road + susp.damping * road_rate) @ J
    force[:, 1] += m * hc * accel[:, 1]
    force[:, 2] -= m * hc * accel[:, 0]
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((3, 3)), np.eye(3)], [-Minv @ K, -Minv @ C]])  # x' = A x + B f
    lhs = np.eye(6) - 0.5 * h * A
    rhs = np.eye(6) + 0.5 * h * A
    solve = np.linalg.inv(lhs)  # 6x6, constant: one inverse per run
    x = np.zeros((n, 6))
    x[0, :3] = equilibrium(susp, road[0]) if q0 is None else q0
    x[0, 3:] = 0.0 if qdot0 is None else qdot0
    accel_force = force @ Minv.T  # M^-1 f, (N+1, 3)
    for k in range(n - 1):
        b = rhs @ x[k]
        b[3:] += 0.5 * h * (accel_force[k] + accel_force[k + 1])
        x[k + 1] = solve @ b
    q, qdot = x[:, :3], x[:, 3:]
    compression = static_sag(susp, gravity) - (q @ J.T - road)
    return SuspensionRun(t, q, qdot, compression)

"""The seed's boat (§4.3.2, eq. 15): two rear thrusters, buoyancy of the submerged hull, hull drag, currents.

Owns the boat's wrench and its hydrostatic potential; stepping is holonomic.py. The hull is a box
(length x beam x height, keel `keel_below_com` under the centre of mass) cut into vertical columns. Each
column is immersed along body z from its keel up to calm water (world z = 0); its immersed volume V_i
and centroid c_i give
  buoyancy  rho g V_i upward at c_i: exactly the gradient of U = -rho g sum_i integral of z over V_i,
            so with no drag and no thrust the boat conserves E = kinetic + m g z + U (no 1/A factor);
  drag      -(V_i / V_ref) E (c_i' - R^T eta(x + R c_i)) at c_i: the seed's f_h with damping E (N s/m,
            diagonal surge, sway, heave, totals at the design displacement V_ref = m / rho) shared by
            immersed volume, eta the world water velocity; the seed's pressure term P n_i is left out
            (buoyancy is the hydrostatic pressure);
  thrust    u_r, u_l along body +x at c_r, c_l: columns (c x e_x; e_x) (erratum P8).
The drag sees the node velocity and contributes its exact derivative to the Newton Jacobian.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..lie import cross, hat
from ..model import Vehicle
from . import forces
from .holonomic import HolonomicModel, Wrench
from .rigid_body import locked_inertia
from .spec import BoatSpec, VehicleStepError

Field = Callable[[np.ndarray, float], np.ndarray]
"""eta(x (..., 3) world points, t) -> (..., 3) world water velocity."""

GRAVITY = 9.81


@dataclass(frozen=True)
class Hull:
    """Columns of the box hull: footprint centres (n, 2) in body x y, their area, keel z and height."""

    xy: np.ndarray
    area: float
    keel: float
    height: float

    @classmethod
    def of(cls, spec: BoatSpec, columns: tuple[int, int] = (8, 4)) -> "Hull":
        nx, ny = columns
        x = (np.arange(nx) + 0.5) / nx * spec.hull_length - spec.hull_length / 2
        y = (np.arange(ny) + 0.5) / ny * spec.hull_beam - spec.hull_beam / 2
        xy = np.stack(np.meshgrid(x, y, indexing="ij"), -1).reshape(-1, 2)
        xy.flags.writeable = False
        return cls(xy, spec.hull_length * spec.hull_beam / (nx * ny), -spec.keel_below_com, spec.hull_height)

    def immersion(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(immersed length along body z (..., n), immersed centroids (..., n, 3) in body axes) in calm water z = 0."""
        R, x = g[..., :3, :3], g[..., :3, 3]
        up = R[..., 2, :]  # world z of the body axes
        if np.any(up[..., 2] < 0.05):
            raise VehicleStepError("boat: the hull is on its side or capsized (body z more than 87 degrees from up); "
                               "the column buoyancy model does not cover that")
        base = x[..., None, 2] + up[..., None, 0] * self.xy[:, 0] + up[..., None, 1] * self.xy[:, 1]
        waterline = -base / up[..., None, 2]  # body z where each column meets the water
        length = np.clip(waterline - self.keel, 0.0, self.height)
        centroid = np.concatenate([np.broadcast_to(self.xy, length.shape + (2,)),
                                   (self.keel + 0.5 * length)[..., None]], -1)
        return length, centroid


def compile_boat(vehicle: Vehicle, gravity=(0.0, 0.0, -GRAVITY), current: Field | None = None,
                 columns: tuple[int, int] = (8, 4)) -> HolonomicModel:
    """The HolonomicModel of a Vehicle of type 'boat': thrusters (controls thrust_right, thrust_left in N,
    clipped to +-max_thrust), buoyancy, and drag against the water velocity: the field `current` when
    given, else the vehicle's uniform current."""
    spec: BoatSpec = vehicle.spec
    if current is None and any(vehicle.current):
        uniform = np.asarray(vehicle.current, dtype=float)

        def current(points: np.ndarray, t: float) -> np.ndarray:
            return np.broadcast_to(uniform, points.shape)

    hull = Hull.of(spec, columns)
    rho, g_mag = spec.water_density, -float(gravity[2])
    v_ref = spec.mass / rho
    damping = np.diag(spec.drag)
    thrusters = forces.twin_thrusters(vehicle, spec.thruster_behind_com, spec.thruster_spacing,
                                      -spec.thruster_below_com, spec.max_thrust)

    def water(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        length, centroid = hull.immersion(g)
        volume = hull.area * length
        R = g[..., :3, :3]
        up_body = R[..., 2, :]  # world up in body axes, (..., 3)
        buoyancy = (rho * g_mag * volume)[..., None] * up_body[..., None, :]
        flow = np.zeros_like(centroid)
        if current is not None:
            world = g[..., None, :3, 3] + np.einsum("...ij,...nj->...ni", R, centroid)
            flow = np.einsum("...ji,...nj->...ni", R, current(world, t))
        relative = xi[..., None, 3:] + cross(xi[..., None, :3], centroid) - flow
        share = volume / v_ref
        drag = -share[..., None] * relative @ damping
        force = buoyancy + drag
        wrench = np.concatenate([cross(centroid, force).sum(-2), force.sum(-2)], -1)
        # d drag_i / d xi = -share_i D [-hat(c_i), I]; d torque_i / d xi = hat(c_i) d drag_i / d xi
        C = hat(centroid)
        d_force = -share[..., None, None] * np.concatenate([-damping @ C, np.broadcast_to(damping, C.shape)], -1)
        d_wrench = np.concatenate([(C @ d_force).sum(-3), d_force.sum(-3)], -2)
        return wrench, d_wrench

    weight, weight_potential = forces.gravity(spec.mass, gravity)

    def potential(g: np.ndarray) -> np.ndarray:
        """m g z - rho g sum_i A integral of world z over the immersed part of column i."""
        length, centroid = hull.immersion(g)
        z = g[..., None, 2, 3] + np.einsum("...j,...nj->...n", g[..., 2, :3], centroid)
        return weight_potential(g) - rho * g_mag * hull.area * np.sum(length * z, -1)

    return HolonomicModel(locked_inertia(spec.mass, spec.inertia), forces.total(water, thrusters, weight),
                          potential, f"boat {spec.name!r}", forces.weight(spec.mass, gravity))

"""A hovercraft on the holonomic step: air-cushion lift at the skirt corners, two rear thrusters, skirt drag.

Owns the hovercraft's wrench and potential; stepping is holonomic.py. The cushion acts at the four skirt
corners c_i = (+-L/2, +-W/2, -skirt_below_com) over the ground plane (or calm water) world z = 0. Each
corner is a quarter of the cushion: with d_i the corner's world height and s_i = max(0, h0 - d_i) its
compression below the cushion height h0,
  lift     (k/4) s_i upward at c_i: exactly the gradient of U = sum_i (k/8) s_i^2, so with no thrust and
           no damping or drag the craft conserves E = kinetic + m g z + U; being at the corners, it also
           holds the craft level in pitch and roll;
  damping  -(c/4) d_i' upward at c_i while the corner is compressed (d_i' its world vertical speed);
  drag     -(c_x |v_x| v_x, c_y |v_y| v_y) at the centre of mass (body surge, sway) and -c_r |w_z| w_z
           about body z: quadratic skirt drag, small sideways, so the craft slides in turns;
  thrust   u_r, u_l along body +x at (-behind, -+spacing/2, above): yaw by differential thrust.
Damping and drag see the node velocity and contribute their exact derivatives to the Newton Jacobian.
"""

from __future__ import annotations

import numpy as np

from ..lie import cross, hat
from ..model import Vehicle
from . import forces
from .holonomic import HolonomicModel, Wrench
from .rigid_body import locked_inertia
from .spec import HovercraftSpec

GRAVITY = 9.81


def skirt_corners(spec: HovercraftSpec) -> np.ndarray:
    """The four cushion corners (4, 3) in body axes: front left, front right, rear left, rear right."""
    x, y = spec.skirt_length / 2, spec.skirt_width / 2
    return np.array([[sx * x, sy * y, -spec.skirt_below_com] for sx in (1, -1) for sy in (1, -1)])


def compile_hovercraft(vehicle: Vehicle, gravity=(0.0, 0.0, -GRAVITY)) -> HolonomicModel:
    """The HolonomicModel of a Vehicle of type 'hovercraft': thrusters (controls thrust_right, thrust_left
    in N, clipped to +-max_thrust), the air cushion and the skirt drag."""
    spec: HovercraftSpec = vehicle.spec
    corners = skirt_corners(spec)
    C = hat(corners)  # (4, 3, 3)
    k, c = spec.cushion_stiffness / 4, spec.cushion_damping / 4
    drag = np.array([0.0, 0.0, spec.yaw_drag, *spec.drag, 0.0])  # quadratic coefficients per twist entry
    thrusters = forces.twin_thrusters(vehicle, spec.thruster_behind_com, spec.thruster_spacing,
                                      spec.thruster_above_com, spec.max_thrust)

    def compression(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(world z of body axes (..., 3), compression s_i (..., 4) of each corner below cushion_height)."""
        up = g[..., 2, :3]
        height = g[..., None, 2, 3] + np.einsum("...j,nj->...n", up, corners)
        return up, np.maximum(spec.cushion_height - height, 0.0)

    def cushion(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        up, s = compression(g)
        up = np.broadcast_to(up, np.broadcast_shapes(up.shape, xi.shape[:-1] + (3,)))
        active = (s > 0).astype(float)
        # corner world vertical speed d_i' = up . (v + w x c_i) = [c_i x up; up] . xi
        rows = np.concatenate([cross(corners, up[..., None, :]), np.broadcast_to(up[..., None, :], s.shape + (3,))], -1)
        speed = np.einsum("...nj,...j->...n", rows, xi)
        magnitude = k * s - c * active * speed  # upward force at each corner, (..., 4)
        force = magnitude[..., None] * up[..., None, :]
        wrench = np.concatenate([cross(corners, force).sum(-2), force.sum(-2)], -1)
        d_force = -(c * active)[..., None, None] * up[..., None, :, None] * rows[..., None, :]  # (..., 4, 3, 6)
        d_wrench = np.concatenate([(C @ d_force).sum(-3), d_force.sum(-3)], -2)
        return wrench, d_wrench

    def skirt_drag(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        shape = np.broadcast_shapes(g.shape[:-2], xi.shape[:-1])
        xi = np.broadcast_to(xi, shape + (6,))
        wrench = -drag * np.abs(xi) * xi
        d_wrench = np.zeros(shape + (6, 6))
        idx = np.arange(6)
        d_wrench[..., idx, idx] = -2 * drag * np.abs(xi)
        return wrench, d_wrench

    weight, weight_potential = forces.gravity(spec.mass, gravity)

    def potential(g: np.ndarray) -> np.ndarray:
        """m g z + sum_i (k/8) s_i^2 (k the whole cushion's stiffness)."""
        _, s = compression(g)
        return weight_potential(g) + 0.5 * k * np.sum(s * s, -1)

    return HolonomicModel(locked_inertia(spec.mass, spec.inertia),
                          forces.total(cushion, skirt_drag, thrusters, weight), potential,
                          f"hovercraft {spec.name!r}", forces.weight(spec.mass, gravity))

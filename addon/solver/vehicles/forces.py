"""Body wrenches shared by the holonomic vehicles: gravity (with its potential), twin rear thrusters and sums
of wrenches.

A wrench function maps (t, g (..., 4, 4), xi (..., 6)) to a body-frame wrench (..., 6) ordered (torque;
force), plus its derivative with respect to xi or None when it does not depend on the velocity. The
vehicle-specific wrenches (rotors, thrusters, hydrodynamics) live with their vehicle modules.
"""

from __future__ import annotations

import numpy as np

from ..lie import cross
from ..model import Vehicle
from .controls import signal
from .holonomic import Wrench, WrenchFn


def _rotate_to_body(g: np.ndarray, vector_world: np.ndarray) -> np.ndarray:
    return np.einsum("...ji,j->...i", g[..., :3, :3], vector_world)


def gravity(mass: float, gravity_world, com=(0.0, 0.0, 0.0)):
    """Uniform gravity on a body whose centre of mass sits at `com` (body axes).

    Returns (wrench function, potential function); the potential is -m g . (x + R com), (...).
    """
    weight = mass * np.asarray(gravity_world, dtype=float)
    com = np.asarray(com, dtype=float)

    def wrench(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        force = _rotate_to_body(g, weight)
        return np.concatenate([cross(com, force), force], -1), None

    def potential(g: np.ndarray) -> np.ndarray:
        return -(g[..., :3, 3] + g[..., :3, :3] @ com) @ weight

    return wrench, potential


def twin_thrusters(vehicle: Vehicle, behind: float, spacing: float, height: float, max_thrust: float) -> WrenchFn:
    """Two rear thrusters pushing along body x from (-behind, -+spacing/2, height) (body axes, from the centre of
    mass), driven by the vehicle's controls thrust_right and thrust_left (N) clipped to +-max_thrust."""
    right, left = signal(vehicle.control("thrust_right")), signal(vehicle.control("thrust_left"))
    c_right = np.array([-behind, -spacing / 2, height])
    c_left = c_right * np.array([1.0, -1.0, 1.0])
    e_x = np.array([1.0, 0.0, 0.0])
    thrust_matrix = np.column_stack([np.concatenate([np.cross(c, e_x), e_x]) for c in (c_right, c_left)])

    def thrusters(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        u = np.clip([right(t), left(t)], -max_thrust, max_thrust)
        return np.broadcast_to(thrust_matrix @ u, np.broadcast_shapes(g.shape[:-2], xi.shape[:-1]) + (6,)), None

    return thrusters


def weight(mass: float, gravity_world) -> float:
    """m |g| (N): the force scale of a HolonomicModel under uniform gravity."""
    return float(mass * np.linalg.norm(np.asarray(gravity_world, dtype=float)))


def total(*wrenches: WrenchFn) -> WrenchFn:
    """The sum of several wrench functions (derivatives summed, None when none depends on xi)."""

    def wrench(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        f_sum, df_sum = 0.0, None
        for fn in wrenches:
            f, df = fn(t, g, xi)
            f_sum = f_sum + f
            if df is not None:
                df_sum = df if df_sum is None else df_sum + df
        if isinstance(f_sum, float):
            f_sum = np.zeros(np.broadcast_shapes(g.shape[:-2], xi.shape[:-1]) + (6,))
        return f_sum, df_sum

    return wrench


def no_wrench(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
    """The zero wrench (a free body)."""
    return np.zeros(np.broadcast_shapes(g.shape[:-2], xi.shape[:-1]) + (6,)), None


def no_potential(g: np.ndarray) -> np.ndarray:
    return np.zeros(g.shape[:-2])

"""The free (or falling) rigid body on SE(3): locked inertia from mass properties, the test system of seed 001 §3.3.

Owns the conversion of mass, inertia tensor and centre of mass into the 6x6 locked inertia the holonomic
step uses, and the free-body model; the stepping itself is holonomic.py.
"""

from __future__ import annotations

import numpy as np

from ..lie import hat
from ..mass import inertia_matrix
from . import forces
from .holonomic import HolonomicModel


def inertia_tensor(values) -> np.ndarray:
    """3x3 inertia from 3 principal moments or 6 values (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) as in model.Body."""
    v = np.asarray(values, dtype=float).ravel()
    if v.shape == (3,):
        return np.diag(v)
    if v.shape == (6,):
        return inertia_matrix(v)
    raise ValueError(f"inertia needs 3 principal moments or 6 tensor values, got {len(v)}")


def locked_inertia(mass: float, inertia, com=(0.0, 0.0, 0.0)) -> np.ndarray:
    """6x6 locked inertia about the body frame origin, rows (angular; linear), for twists (w, v).

    inertia: about the centre of mass, body axes; com: centre of mass in body axes. With c = hat(com):
    [[J - m c c, m c], [-m c, m I]] (c c is negative semidefinite, so J - m c c is the parallel-axis term).
    """
    J = inertia_tensor(inertia)
    c = hat(np.asarray(com, dtype=float))
    out = np.zeros((6, 6))
    out[:3, :3] = J - mass * c @ c
    out[:3, 3:] = mass * c
    out[3:, :3] = -mass * c
    out[3:, 3:] = mass * np.eye(3)
    return out


def free_body(mass: float, inertia, gravity_world=(0.0, 0.0, 0.0), name: str = "rigid body") -> HolonomicModel:
    """A rigid body with its frame at the centre of mass, under uniform gravity (zero by default)."""
    if np.any(np.asarray(gravity_world, dtype=float)):
        wrench, potential = forces.gravity(mass, gravity_world)
    else:
        wrench, potential = forces.no_wrench, forces.no_potential
    return HolonomicModel(locked_inertia(mass, inertia), wrench, potential, name,
                          forces.weight(mass, gravity_world))

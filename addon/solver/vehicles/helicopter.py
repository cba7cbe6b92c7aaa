"""The seed's simple helicopter (§4.3.1): control matrix F(gamma), rotor wrench, compiled holonomic model.

Owns the helicopter's forces only; stepping is holonomic.py. Controls: collective u_c (N, main-rotor
thrust), tail u_psi (N, tail-rotor force along -y), blade pitch gamma_p and roll gamma_r (rad, the lift
direction's fore/aft and sideways tilt). Each is clipped to the spec's limits, as the swashplate and the
engine would. The model has no rotor torque reaction, no aerodynamic damping and no ground: the seed's.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..model import Vehicle
from . import forces
from .controls import signal
from .holonomic import HolonomicModel, Wrench
from .rigid_body import locked_inertia
from .spec import HelicopterSpec


def control_matrix(spec: HelicopterSpec, pitch: float, roll: float) -> np.ndarray:
    """F(gamma) (6, 2): body wrench (torque; force) per unit collective and per unit tail force.

    Lift along n = (sin gp cos gr, -sin gr, cos gp cos gr) at the hub (0, 0, d_t); tail force -y at (-d_r, 0, 0).
    """
    sp, cp, sr, cr = np.sin(pitch), np.cos(pitch), np.sin(roll), np.cos(roll)
    d_t, d_r = spec.rotor_height, spec.tail_arm
    return np.array([[d_t * sr, 0.0], [d_t * sp * cr, 0.0], [0.0, d_r],
                     [sp * cr, 0.0], [-sr, -1.0], [cp * cr, 0.0]])


def compile_helicopter(vehicle: Vehicle,
                       gravity=(0.0, 0.0, -9.81)) -> tuple[HolonomicModel, Callable[[float], np.ndarray]]:
    """(model, shape(t)) for a Vehicle of type 'helicopter'; shape(t) = (blade pitch, blade roll) clipped, rad."""
    spec: HelicopterSpec = vehicle.spec
    collective, tail = signal(vehicle.control("collective")), signal(vehicle.control("tail"))
    pitch, roll = signal(vehicle.control("blade_pitch")), signal(vehicle.control("blade_roll"))
    tilt = spec.max_blade_tilt

    def shape(t: float) -> np.ndarray:
        return np.clip([pitch(t), roll(t)], -tilt, tilt)

    def rotor(t: float, g: np.ndarray, xi: np.ndarray) -> Wrench:
        u = np.array([np.clip(collective(t), 0.0, spec.max_collective),
                      np.clip(tail(t), -spec.max_tail_force, spec.max_tail_force)])
        gp, gr = shape(t)
        f = control_matrix(spec, gp, gr) @ u
        return np.broadcast_to(f, np.broadcast_shapes(g.shape[:-2], xi.shape[:-1]) + (6,)), None

    weight, potential = forces.gravity(spec.mass, gravity)
    model = HolonomicModel(locked_inertia(spec.mass, spec.inertia), forces.total(rotor, weight), potential,
                           f"helicopter {vehicle.name!r}", forces.weight(spec.mass, gravity))
    return model, shape

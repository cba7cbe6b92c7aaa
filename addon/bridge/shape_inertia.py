"""Mass properties of Blender's rigid-body collision shapes and of a bone as a rod: closed forms, no bpy.

Owns the formulas the scene readers use when no mesh or typed values give a body's mass properties
(read_rigid.py for rigid bodies, read_armature.py for bones); polyhedral integrals over meshes are
solver/mass.py's. Inertias are (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) about the centre of mass, as model.Body's.
"""

from __future__ import annotations

import math


def shape_inertia(shape: str, mass: float, dims: tuple[float, float, float]) -> tuple[float, ...]:
    """Principal moments (Ixx, Iyy, Izz, 0, 0, 0) of a Blender collision shape filling `dims`."""
    dx, dy, dz = dims
    if shape == "SPHERE":
        r = max(dims) / 2.0
        i = 0.4 * mass * r * r
        return (i, i, i, 0.0, 0.0, 0.0)
    r, h = max(dx, dy) / 2.0, dz
    if shape == "CYLINDER":
        perp = mass * (3.0 * r * r + h * h) / 12.0
        return (perp, perp, 0.5 * mass * r * r, 0.0, 0.0, 0.0)
    if shape == "CONE":
        perp = mass * (3.0 * r * r / 20.0 + 3.0 * h * h / 80.0)
        return (perp, perp, 0.3 * mass * r * r, 0.0, 0.0, 0.0)
    if shape == "CAPSULE":
        length = max(h - 2.0 * r, 0.0)
        v_cyl, v_sph = math.pi * r * r * length, 4.0 / 3.0 * math.pi * r**3
        total = v_cyl + v_sph
        m_cyl = mass * v_cyl / total if total > 0 else 0.0
        m_sph = mass - m_cyl
        axial = 0.5 * m_cyl * r * r + 0.4 * m_sph * r * r
        perp = m_cyl * (3.0 * r * r + length * length) / 12.0 + m_sph * (
            0.4 * r * r + length * length / 4.0 + 3.0 * length * r / 8.0
        )
        return (perp, perp, axial, 0.0, 0.0, 0.0)
    # BOX, CONVEX_HULL, MESH, COMPOUND: the solid box of the bounds.
    return (
        mass * (dy * dy + dz * dz) / 12.0,
        mass * (dx * dx + dz * dz) / 12.0,
        mass * (dx * dx + dy * dy) / 12.0,
        0.0,
        0.0,
        0.0,
    )


def rod_mass_properties(mass: float, length: float, radius: float) -> tuple[tuple, tuple]:
    """Centre of mass and inertia (bone axes, Y along the bone) of a solid rod from head to tail."""
    perp = mass * (3.0 * radius * radius + length * length) / 12.0
    return (0.0, length / 2.0, 0.0), (perp, 0.5 * mass * radius * radius, perp, 0.0, 0.0, 0.0)

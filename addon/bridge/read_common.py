"""What the scene readers share: the list of problems found, Blender values as clean doubles, rigid frames.

read.py, read_rigid.py and read_armature.py collect every problem in one `Problems` (each message naming
the object, bone or constraint at fault), name bake `Target`s (read.py exports it to the bake) and read
single-precision Blender values through these helpers, so equal settings give equal numbers whichever
reader met them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mathutils import Matrix

from ..solver.model import MechanismError
from . import reference
from .rotations import matrix_to_quat


@dataclass(frozen=True)
class Target:
    """Where body `body` is baked: object `object`, or its pose bone `bone`. write=False: read only."""

    body: str
    object: str
    bone: str = ""
    write: bool = True


@dataclass
class Problems:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# Blender stores transforms in single precision. Components smaller than this (relative to the
# vector's length) are rounding noise; they are zeroed so that hinges an artist set up parallel stay
# exactly parallel (a closed planar chain whose axes differ by 1e-7 rad is locked, not mobile).
NOISE = 1e-6


def clean(v) -> tuple[float, ...]:
    arr = np.array(v, dtype=float)
    arr[np.abs(arr) < NOISE * max(float(np.linalg.norm(arr)), 1.0)] = 0.0
    return tuple(float(x) for x in arr)


def direction(v) -> tuple[float, float, float]:
    """Unit vector `v` without single-precision noise."""
    arr = np.array(clean(np.asarray(v, dtype=float) / np.linalg.norm(v)))
    return tuple(float(x) for x in arr / np.linalg.norm(arr))


def frame_of(matrix: Matrix) -> tuple[tuple[float, ...], tuple[float, ...], np.ndarray]:
    """(position, orientation quaternion, 3x3 rotation) of the rigid part of a world matrix."""
    rigid = reference.rigid_part(matrix)
    rot = np.array(rigid.to_3x3(), dtype=float)
    quat = np.array(clean(matrix_to_quat(rot)))
    return clean(rigid.translation), tuple(float(x) for x in quat / np.linalg.norm(quat)), rot


def scale_part(matrix: Matrix) -> np.ndarray:
    """D (4, 4) with matrix = rigid_part(matrix) @ D: what maps an object's own axes to its body axes."""
    return np.array(reference.rigid_part(matrix).inverted() @ matrix)


def num(x: float) -> float:
    """A single-precision Blender property value as the shortest decimal it stands for (9.81, not 9.8100004)."""
    return float(str(np.float32(x)))


def vec(v) -> tuple[float, ...]:
    return tuple(num(x) for x in v)


def mesh_mass(compute, problems: Problems) -> tuple[float, tuple, tuple]:
    """(mass, com, inertia) from a meshmass call; on failure the error is recorded and a placeholder returned."""
    try:
        props = compute()
    except MechanismError as err:
        problems.errors.append(str(err))
        return 1.0, (0.0, 0.0, 0.0), (0.0,) * 6
    return props.mass, props.com, props.inertia

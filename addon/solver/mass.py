"""Mass, centre of mass and inertia of a solid bounded by a closed triangle mesh, exactly.

Owns the polyhedral mass-property integrals and the inertia convention of model.Body.inertia
(`inertia_matrix`), nothing else: no Blender (the bridge collects the triangles of an object's or a
bone's mesh, see addon/bridge/meshmass.py), no bodies or joints.

By the divergence theorem, every volume integral of a polynomial over the solid is a sum over
its boundary triangles. For triangle (a, b, c), wound counter-clockwise seen from outside, let
d = a . (b x c) (six times the signed volume of the tetrahedron it spans with the origin) and
s = a + b + c. Summing over the triangles,
    V           = sum d / 6
    int x  dV   = sum d s / 24
    int x x^T dV = sum d (s s^T + a a^T + b b^T + c c^T) / 120
which is exact for any closed, consistently wound surface, convex or not. Vertices are shifted to
their mean first, so a mesh far from the origin loses no digits. With density rho: m = rho V,
com = int x dV / V, the central second moment C = rho int x x^T dV - m com com^T, and the inertia
tensor about the com is I = trace(C) 1 - C, returned as (Ixx, Iyy, Izz, Ixy, Ixz, Iyz), the tensor's
entries (so Ixy = -rho int (x - cx)(y - cy) dV), the convention of model.Body.inertia.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .model import MechanismError

# A closed mesh whose volume is below this fraction of its largest extent cubed is treated as flat.
FLAT = 1e-12


def inertia_matrix(inertia) -> np.ndarray:
    """The tensor (3, 3) of six inertia values (Ixx, Iyy, Izz, Ixy, Ixz, Iyz), model.Body.inertia's order."""
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


@dataclass(frozen=True)
class MassProperties:
    """Mass (kg), volume (m^3), centre of mass (3,) and inertia about it, all in the mesh's axes."""

    mass: float
    volume: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]

    def tensor(self) -> np.ndarray:
        """The inertia (3, 3) about the centre of mass."""
        return inertia_matrix(self.inertia)


def _moments(corners: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(V, int x dV (3,), int x x^T dV (3, 3)) of the surface whose triangles are corners (T, 3, 3)."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    d = np.einsum("ij,ij->i", a, np.cross(b, c))
    s = a + b + c
    volume = float(d.sum()) / 6.0
    first = d @ s / 24.0
    second = (np.einsum("t,ti,tj->ij", d, s, s) + sum(np.einsum("t,ti,tj->ij", d, p, p) for p in (a, b, c))) / 120.0
    return volume, first, second


def boundary_problem(triangles: np.ndarray) -> str | None:
    """Why triangles (T, 3) of vertex indices do not bound a solid, or None when they do.

    A closed, consistently wound surface uses every edge exactly once in each direction.
    """
    tri = np.asarray(triangles, dtype=np.int64)
    if len(tri) == 0:
        return "it has no faces"
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    edges = edges[edges[:, 0] != edges[:, 1]]  # degenerate triangles contribute nothing
    n = int(tri.max()) + 1
    keys, counts = np.unique(edges[:, 0] * n + edges[:, 1], return_counts=True)
    if np.any(counts > 1):
        return (f"{int(np.sum(counts > 1))} edges are used twice in the same direction: its faces are not wound "
                "consistently (recalculate normals outside) or the surface is not manifold")
    reverse = (keys % n) * n + keys // n
    open_edges = int(np.sum(~np.isin(reverse, keys)))
    if open_edges:
        return f"it is not closed: {open_edges} edges have a face on one side only"
    return None


def polyhedron(vertices: np.ndarray, triangles: np.ndarray, density: float, what: str = "mesh") -> MassProperties:
    """Mass properties of the solid bounded by a closed triangle mesh, filled with `density` (kg/m^3).

    Parameters
    ----------
    vertices : array_like, shape (V, 3)
        Vertex positions, in the axes (and about the origin) the results are wanted in.
    triangles : array_like, shape (T, 3)
        Vertex indices of each triangle. Winding may be inward throughout (the signs are then
        flipped), but must be consistent.
    density : float
        Mass per volume, > 0.
    what : str
        Names the mesh in error messages (object, bone).

    Raises
    ------
    MechanismError
        When the mesh is not a closed, consistently wound surface, encloses no volume, or the
        density is not positive; the message starts with `what`.
    """
    if not (np.isfinite(density) and density > 0.0):
        raise MechanismError(f"{what}: density must be a positive number of kg/m^3, got {density!r}")
    verts = np.asarray(vertices, dtype=float).reshape(-1, 3)
    tri = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if not np.all(np.isfinite(verts)):
        raise MechanismError(f"{what}: vertex positions must be finite")
    if len(tri) and (tri.min() < 0 or tri.max() >= len(verts)):
        raise MechanismError(f"{what}: a triangle refers to a vertex that does not exist")
    problem = boundary_problem(tri)
    if problem is not None:
        raise MechanismError(f"{what}: the mesh must be a closed surface to fill with mass, but {problem}")
    origin = verts[np.unique(tri)].mean(axis=0)
    volume, first, second = _moments(verts[tri] - origin)
    size = float(np.max(np.ptp(verts[np.unique(tri)], axis=0)))
    if abs(volume) <= FLAT * size**3:
        raise MechanismError(f"{what}: the closed mesh encloses no volume (it is flat)")
    if volume < 0.0:  # wound inward throughout
        volume, first, second = -volume, -first, -second
    centre = first / volume
    mass = density * volume
    central = density * second - mass * np.outer(centre, centre)
    central = 0.5 * (central + central.T)
    tensor = np.trace(central) * np.eye(3) - central
    com = origin + centre
    return MassProperties(
        mass=float(mass),
        volume=float(volume),
        com=tuple(float(x) for x in com),
        inertia=(float(tensor[0, 0]), float(tensor[1, 1]), float(tensor[2, 2]),
                 float(tensor[0, 1]), float(tensor[0, 2]), float(tensor[1, 2])),
    )


def combine(parts: Iterable[MassProperties]) -> MassProperties:
    """One body made of several solids (all in the same axes): masses add, inertias by parallel axes."""
    parts = list(parts)
    if not parts:
        raise ValueError("combine needs at least one part")
    mass = sum(p.mass for p in parts)
    com = sum(p.mass * np.asarray(p.com) for p in parts) / mass
    tensor = np.zeros((3, 3))
    for p in parts:
        r = np.asarray(p.com) - com
        tensor += p.tensor() + p.mass * (np.dot(r, r) * np.eye(3) - np.outer(r, r))
    return MassProperties(
        mass=float(mass),
        volume=float(sum(p.volume for p in parts)),
        com=tuple(float(x) for x in com),
        inertia=(float(tensor[0, 0]), float(tensor[1, 1]), float(tensor[2, 2]),
                 float(tensor[0, 1]), float(tensor[0, 2]), float(tensor[1, 2])),
    )

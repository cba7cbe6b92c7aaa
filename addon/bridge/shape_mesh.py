"""Collider -> mesh and Blender collision shape: the geometry Add Preset gives a body or world collider.

Each mesh is built in the collider frame, which Add Preset makes the object's frame, and sized so
that bridge/colliders.py reads the same collider back from the object's dimensions:
  sphere    UV sphere of the radius                       SPHERE
  box       box of twice the half extents                 BOX
  capsule   cylinder of the half length capped by hemispheres, along Z   CAPSULE
  cylinder  closed cylinder along Z                       CYLINDER
  hull      the convex hull's faces (coplanar facets merged)   CONVEX_HULL
  plane     a square of half side `extent` in the XY plane, faces up (+Z)   MESH (flat: read as a plane)
Round shapes are lathed from a profile with SEGMENTS (a multiple of 4) around Z, so their widest
ring reaches exactly +-radius on X and Y and the bounding box is the shape's.
"""

from __future__ import annotations

import math

import bpy
import numpy as np

from ..solver.collision.shapes import convex_hull
from ..solver.model import Collider

SEGMENTS = 32  # around Z; a multiple of 4 puts ring vertices on +-X and +-Y
ARC = 8  # profile steps per quarter circle

COLLISION_SHAPES = {"sphere": "SPHERE", "box": "BOX", "capsule": "CAPSULE", "cylinder": "CYLINDER",
                    "hull": "CONVEX_HULL", "plane": "MESH"}


def _lathe(profile: list[tuple[float, float]]) -> tuple[list, list]:
    """Vertices and faces of the surface swept by (radius, z) points around Z, from the bottom pole
    (radius 0) to the top pole (radius 0); faces wound outward."""
    verts = [(0.0, 0.0, profile[0][1])]
    rings = []
    for radius, z in profile[1:-1]:
        rings.append(len(verts))
        verts += [(radius * math.cos(2 * math.pi * k / SEGMENTS), radius * math.sin(2 * math.pi * k / SEGMENTS), z)
                  for k in range(SEGMENTS)]
    top = len(verts)
    verts.append((0.0, 0.0, profile[-1][1]))
    faces = [(0, rings[0] + (k + 1) % SEGMENTS, rings[0] + k) for k in range(SEGMENTS)]
    for low, high in zip(rings, rings[1:]):
        faces += [(low + k, low + (k + 1) % SEGMENTS, high + (k + 1) % SEGMENTS, high + k) for k in range(SEGMENTS)]
    faces += [(rings[-1] + k, rings[-1] + (k + 1) % SEGMENTS, top) for k in range(SEGMENTS)]
    return verts, faces


def _arc(radius: float, centre: float, start: float, stop: float) -> list[tuple[float, float]]:
    """(radius, z) points of a circle of `radius` about z = centre, latitude from `start` to `stop`."""
    steps = ARC * round(abs(stop - start) / (math.pi / 2))
    angles = np.linspace(start, stop, steps + 1)
    return [(radius * math.cos(a), centre + radius * math.sin(a)) for a in angles]


def _geometry(collider: Collider, extent: float) -> tuple[list, list]:
    size = collider.size
    if collider.shape == "sphere":
        return _lathe(_arc(size[0], 0.0, -math.pi / 2, math.pi / 2))
    if collider.shape == "capsule":
        r, half = size
        return _lathe(_arc(r, -half, -math.pi / 2, 0.0) + _arc(r, half, 0.0, math.pi / 2))
    if collider.shape == "cylinder":
        r, half = size
        return _lathe([(0.0, -half), (r, -half), (r, half), (0.0, half)])
    if collider.shape == "box":
        hx, hy, hz = size
        verts = [(x, y, z) for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)]
        return verts, [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    if collider.shape == "hull":
        hull = convex_hull(np.asarray(collider.vertices, dtype=float))
        return [tuple(map(float, v)) for v in hull.vertices], [tuple(int(i) for i in f) for f in hull.faces]
    if collider.shape == "plane":
        return [(-extent, -extent, 0.0), (extent, -extent, 0.0), (extent, extent, 0.0), (-extent, extent, 0.0)], \
            [(0, 1, 2, 3)]
    raise ValueError(f"collider {collider.name!r}: no mesh for shape {collider.shape!r}")


def collider_mesh(name: str, collider: Collider, extent: float = 1.0) -> bpy.types.Mesh:
    """A mesh of `collider` in its own frame (`extent`: half side of a plane's square)."""
    verts, faces = _geometry(collider, extent)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    if collider.shape in ("sphere", "capsule", "cylinder"):
        smooth = [collider.shape != "cylinder" or len(f) == 4 for f in faces]  # cylinder caps stay flat
        mesh.polygons.foreach_set("use_smooth", smooth)
    return mesh

"""Distance and penetration of two convex shapes from their support functions: GJK, then EPA.

`closest_points(support_a, support_b, ...)` returns the signed distance, the witness points on A and
B (world frame) and the unit normal from A to B. Separated shapes: GJK on the Minkowski difference
A - B (distance = |closest point to the origin|; the sub-simplex closest point is found by checking
every face of the current simplex, which is robust for the at most 4 points GJK keeps).
Overlapping shapes: EPA expands a polytope inside A - B until its face nearest the origin is on the
boundary; that face's normal is the normal from A to B and its distance the depth.

Rounded shapes are passed as a core plus a radius (a sphere is a point, a capsule a segment): the
distance of the cores minus the radii is exact and GJK on points and segments converges in a few
iterations; only when the cores themselves touch does EPA run, on the full (rounded) shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

import numpy as np

from ..lie import cross

Support = Callable[[np.ndarray], np.ndarray]

_GJK_ITERATIONS = 64
_EPA_ITERATIONS = 96
_GJK_RELATIVE = 1e-12  # stop when |v|^2 - v.w <= this * |v|^2 (no further progress toward the origin)
_EPA_RELATIVE = 1e-9  # stop when the new support point is this close (relative to the size) to the face
_ORIENT_BOUND = 32 * np.finfo(float).eps  # round-off of an orientation determinant, per unit of |a| |b| |c|
_SUBSETS = {n: [s for k in range(1, n + 1) for s in combinations(range(n), k)] for n in range(1, 5)}


@dataclass(frozen=True)
class Closest:
    """Signed distance (> 0 apart, < 0 overlapping), witness points on A and B, normal from A to B."""

    distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray


def _affine_closest(points: np.ndarray) -> np.ndarray | None:
    """Barycentric weights of the origin's projection onto the affine hull of points (k, 3), or None
    when the points are affinely dependent."""
    k = len(points)
    if k == 1:
        return np.ones(1)
    base = points[0]
    edges = points[1:] - base
    gram = edges @ edges.T
    rhs = -(edges @ base)
    scale = float(np.trace(gram))
    if k == 2:
        if gram[0, 0] <= 0.0:
            return None
        mu = rhs / gram[0, 0]
    elif k == 3:  # 2 x 2 by Cramer's rule
        det = gram[0, 0] * gram[1, 1] - gram[0, 1] * gram[1, 0]
        if abs(det) <= 1e-14 * scale * scale:
            return None
        mu = np.array([rhs[0] * gram[1, 1] - rhs[1] * gram[0, 1], gram[0, 0] * rhs[1] - gram[1, 0] * rhs[0]]) / det
    else:
        if scale <= 0.0 or abs(np.linalg.det(gram)) <= 1e-14 * scale ** 3:
            return None
        mu = np.linalg.solve(gram, rhs)
    return np.concatenate([[1.0 - mu.sum()], mu])


def _closest_on_simplex(w: np.ndarray, newest: int | None = None) -> tuple[np.ndarray, tuple[int, ...]]:
    """Weights of the closest point to the origin on the simplex w (k, 3), k <= 4, and the vertices it
    uses (the fewest that give it). With `newest`, only faces containing that vertex are searched:
    GJK's new support point is always part of the closest feature."""
    best, best_norm, best_subset = None, np.inf, ()
    for subset in _SUBSETS[len(w)]:
        if newest is not None and newest not in subset:
            continue
        lam = _affine_closest(w[list(subset)])
        if lam is None or lam.min() < -1e-12:
            continue
        norm = float(np.linalg.norm(lam @ w[list(subset)]))
        if norm < best_norm * (1.0 - 1e-12):
            best, best_norm, best_subset = lam, norm, subset
    if best is None:  # round-off excluded every face: fall back to the nearest vertex
        k = int(np.argmin(np.linalg.norm(w, axis=1)))
        return np.ones(1), (k,)
    return np.clip(best, 0.0, None), best_subset


def gjk(support_a: Support, support_b: Support, guess: np.ndarray, cutoff: float = np.inf):
    """GJK on A - B. Returns (distance, point_a, point_b, simplex) with the simplex as a list of
    (w, a, b) triples; distance 0 when the origin is inside (the simplex then encloses it as far as
    GJK got), np.inf when A and B are provably more than `cutoff` apart."""
    direction = np.asarray(guess, dtype=float)
    if not np.any(direction):
        direction = np.array([1.0, 0.0, 0.0])
    a, b = support_a(-direction), support_b(direction)
    simplex = [(a - b, a, b)]
    v = a - b
    for _ in range(_GJK_ITERATIONS):
        vv = float(v @ v)
        if vv <= 1e-30:
            return 0.0, None, None, simplex
        a, b = support_a(-v), support_b(v)
        w = a - b
        vw = float(v @ w)
        if vw > 0 and vw * vw > cutoff * cutoff * vv:
            return np.inf, None, None, simplex
        if vv - vw <= _GJK_RELATIVE * vv or any(np.array_equal(w, s[0]) for s in simplex):
            break
        simplex.append((w, a, b))
        ws = np.array([s[0] for s in simplex])
        lam, used = _closest_on_simplex(ws, newest=len(simplex) - 1)
        simplex = [simplex[i] for i in used]
        v = lam @ ws[list(used)]
        if len(simplex) == 4:
            return 0.0, None, None, simplex
    ws = np.array([s[0] for s in simplex])
    lam, used = _closest_on_simplex(ws)
    simplex = [simplex[i] for i in used]
    pa = sum(l * s[1] for l, s in zip(lam, simplex))
    pb = sum(l * s[2] for l, s in zip(lam, simplex))
    return float(np.linalg.norm(pa - pb)), pa, pb, simplex


def _initial_tetrahedron(support_a: Support, support_b: Support, simplex: list) -> list:
    """Grow GJK's simplex to four affinely independent points of A - B."""
    points = list(simplex)
    axes = [np.array(e, dtype=float) for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 0, 0), (0, -1, 0), (0, 0, -1),
                                             (1, 1, 1), (-1, 1, -1), (1, -1, -1), (-1, -1, 1))]

    def new_point(d: np.ndarray):
        a, b = support_a(d), support_b(-d)
        return (a - b, a, b)

    def spread(cands: list) -> float:
        ws = np.array([c[0] for c in cands])
        rel = ws[1:] - ws[0]
        return float(np.linalg.svd(rel, compute_uv=False)[-1]) if len(rel) else 0.0

    while len(points) < 4:
        if len(points) == 3:
            n = np.cross(points[1][0] - points[0][0], points[2][0] - points[0][0])
            dirs = [n, -n] + axes
        elif len(points) == 2:
            e = points[1][0] - points[0][0]
            dirs = [np.cross(e, ax) for ax in axes[:3]] + [-np.cross(e, ax) for ax in axes[:3]] + axes
        else:
            dirs = axes
        best, best_spread = None, 0.0
        for d in dirs:
            if not np.any(d):
                continue
            cand = new_point(d)
            s = spread(points + [cand])
            if s > best_spread:
                best, best_spread = cand, s
        if best is None or best_spread <= 1e-12:
            raise ValueError("degenerate shapes: the Minkowski difference has no volume")
        points.append(best)
    return points


def _face_normals(points: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Unnormalised normals (F, 3) of triangles `faces` (F, 3) of `points`, right-handed."""
    p0, p1, p2 = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    return cross(p1 - p0, p2 - p0)


def _planes(points: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit normals (F, 3) and origin distances (F,) of the faces; inf distance for degenerate ones."""
    n = _face_normals(points, faces)
    length = np.linalg.norm(n, axis=1)
    ok = length > 1e-300
    n = n / np.where(ok, length, 1.0)[:, None]
    return n, np.where(ok, np.einsum("fi,fi->f", n, points[faces[:, 0]]), np.inf)


def _beyond(points: np.ndarray, faces: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Mask of the faces whose plane the point w is certainly beyond: the orientation determinant
    (p1 - p0) x (p2 - p0) . (w - p0) exceeds its round-off bound, a multiple of eps times the product
    of the three lengths (Shewchuk's orient3d bound). A face w lies on within round-off (as on the
    flat end of a cylinder, whose support points share a plane) counts as not seen, which keeps the
    polytope convex; counting it as seen when w is beside it in its plane would fold a new face over."""
    p0 = points[faces[:, 0]]
    a, b, c = points[faces[:, 1]] - p0, points[faces[:, 2]] - p0, w - p0
    det = np.einsum("fi,fi->f", cross(a, b), c)
    bound = _ORIENT_BOUND * np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) * np.linalg.norm(c, axis=1)
    return det > bound


def _visible_region(points: np.ndarray, faces: np.ndarray, w: np.ndarray, seed: int) -> np.ndarray:
    """Mask of the faces seen from w that are connected to face `seed` (which is seen) through shared
    edges: the faces to replace by the cone from w."""
    beyond = _beyond(points, faces, w)
    beyond[seed] = True
    owner = {(int(f[i]), int(f[(i + 1) % 3])): j for j, f in enumerate(faces) for i in range(3)}
    region = np.zeros(len(faces), dtype=bool)
    region[seed] = True
    stack = [seed]
    while stack:
        f = faces[stack.pop()]
        for i in range(3):
            j = owner.get((int(f[(i + 1) % 3]), int(f[i])))
            if j is not None and beyond[j] and not region[j]:
                region[j] = True
                stack.append(j)
    return region


def _horizon(seen: np.ndarray) -> list[tuple[int, int]] | None:
    """The boundary edges (oriented as in their faces) of the faces `seen` (k, 3), or None unless
    they form one loop through distinct vertices (a disc of faces), the only shape a cone can close."""
    edges: dict[tuple[int, int], int] = {}
    for f in seen:
        for e in ((int(f[0]), int(f[1])), (int(f[1]), int(f[2])), (int(f[2]), int(f[0]))):
            if (e[1], e[0]) in edges:
                del edges[(e[1], e[0])]
            else:
                edges[e] = 1
    nxt = {e0: e1 for e0, e1 in edges}
    if not edges or len(nxt) != len(edges):
        return None
    first = next(iter(nxt))
    at, steps = nxt[first], 1
    while at != first and at in nxt and steps < len(nxt):
        at, steps = nxt[at], steps + 1
    return list(edges) if at == first and steps == len(nxt) else None


def epa(support_a: Support, support_b: Support, simplex: list) -> Closest:
    """Penetration of overlapping A and B from a GJK simplex that contains (or touches) the origin."""
    verts = _initial_tetrahedron(support_a, support_b, simplex)
    points = np.zeros((4 + _EPA_ITERATIONS, 3))
    points[:4] = [v[0] for v in verts]
    centre = points[:4].mean(axis=0)
    faces = np.array([(0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2)])
    outward = np.einsum("fi,fi->f", _face_normals(points, faces), points[faces[:, 0]] - centre) > 0
    faces = np.where(outward[:, None], faces, faces[:, [0, 2, 1]])
    size = float(np.max(np.linalg.norm(points[:4] - centre, axis=1)))
    normals, dists = _planes(points, faces)
    count = 4
    for _ in range(_EPA_ITERATIONS):
        k = int(np.argmin(dists))
        normal, dist = normals[k], dists[k]
        a, b = support_a(normal), support_b(-normal)
        w = a - b
        if float(normal @ w) - dist <= _EPA_RELATIVE * size:
            break
        visible = _visible_region(points, faces, w, k)
        edges = _horizon(faces[visible])
        if edges is None:  # round-off left the seen faces no disc: keep the polytope as it is
            break
        points[count] = w
        verts.append((w, a, b))
        new_faces = np.array([(e0, e1, count) for e0, e1 in edges], dtype=np.int64).reshape(-1, 3)
        count += 1
        new_normals, new_dists = _planes(points, new_faces)
        ok = np.isfinite(new_dists)
        faces = np.concatenate([faces[~visible], new_faces[ok]])
        normals = np.concatenate([normals[~visible], new_normals[ok]])
        dists = np.concatenate([dists[~visible], new_dists[ok]])
    k = int(np.argmin(dists))
    normal, dist = normals[k], float(dists[k])
    f = faces[k]
    tri = points[f]
    lam = _affine_closest(tri)
    if lam is None:
        lam = np.full(3, 1.0 / 3.0)
    pa = sum(l * verts[i][1] for l, i in zip(lam, f))
    pb = sum(l * verts[i][2] for l, i in zip(lam, f))
    return Closest(-dist, pa, pb, normal)


def closest_points(support_a: Support, support_b: Support, guess: np.ndarray, radius_a: float = 0.0,
                   radius_b: float = 0.0, core_a: Support | None = None, core_b: Support | None = None,
                   cutoff: float = np.inf) -> Closest | None:
    """Signed distance, witness points and normal (A to B) of two convex shapes; None when they are
    more than `cutoff` apart.

    support_a/b are the full shapes' support maps; core_a/b (default: the same) the cores that the
    radii inflate. `guess` is a direction from B towards A (e.g. centre of A minus centre of B).
    """
    core_a = core_a or support_a
    core_b = core_b or support_b
    dist, pa, pb, simplex = gjk(core_a, core_b, guess, cutoff + radius_a + radius_b)
    if dist == np.inf:
        return None
    scale = max(float(np.linalg.norm(s[0])) for s in simplex) + radius_a + radius_b
    if dist > 1e-10 * max(scale, 1e-12):
        normal = (pb - pa) / dist
        signed = dist - radius_a - radius_b
        if signed > cutoff:
            return None
        return Closest(signed, pa + radius_a * normal, pb - radius_b * normal, normal)
    if radius_a or radius_b:
        _, _, _, simplex = gjk(support_a, support_b, guess)
    result = epa(support_a, support_b, simplex)
    return result if result.distance <= cutoff else None

"""Broad phase: candidate collider pairs from world bounding boxes, without a Python loop over pairs.

`sweep_pairs` is sort-and-sweep on the axis along which the boxes' centres spread most: sort by
lower bound, `searchsorted` finds for every box the run of later boxes starting before it ends, and
the runs are expanded into index pairs with `np.repeat`; the other two axes are then tested on all
those pairs at once. `plane_pairs` tests every plane against every other box (planes are
unbounded, so they stay out of the sweep).
"""

from __future__ import annotations

import numpy as np


def sweep_pairs(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i < j, of the boxes (lower (n, 3), upper (n, 3)) that overlap (touching counts)."""
    n = len(lower)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    centre = 0.5 * (lower + upper)
    axis = int(np.argmax(centre.var(axis=0)))
    order = np.argsort(lower[:, axis], kind="stable")
    lo, hi = lower[order, axis], upper[order, axis]
    end = np.searchsorted(lo, hi, side="right")
    counts = np.maximum(end - np.arange(n) - 1, 0)
    total = int(counts.sum())
    first = np.repeat(np.arange(n), counts)
    starts = np.cumsum(counts) - counts
    second = first + 1 + (np.arange(total) - np.repeat(starts, counts))
    i, j = order[first], order[second]
    overlap = np.all((lower[i] <= upper[j]) & (lower[j] <= upper[i]), axis=1)
    i, j = i[overlap], j[overlap]
    return np.minimum(i, j), np.maximum(i, j)


def plane_pairs(normals: np.ndarray, points: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                margin: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(plane index (into normals), box index) for every box reaching within `margin` (one for all, or (n, P)
    per box and plane) of a plane's front side (normals (P, 3), points on the planes (P, 3); boxes lower/upper
    (n, 3))."""
    centre, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
    nearest = centre @ normals.T - half @ np.abs(normals).T - np.sum(normals * points, axis=1)  # (n, P)
    box, plane = np.nonzero(nearest <= margin)
    return plane, box

"""Evaluation of keyed Curves (model.Curve): value and time derivative, linear or Catmull-Rom cubic.

Owns interpolation only; the curves themselves come from files or from sampled Blender F-curves.
Outside the keyed range a curve holds its end value and its derivative is zero.
"""

from __future__ import annotations

import numpy as np

from .model import Curve


def _segment(curve: Curve, t: float) -> tuple[int, float, float] | None:
    times = curve.times
    if len(times) < 2 or t <= times[0] or t >= times[-1]:
        return None
    i = int(np.searchsorted(times, t, side="right")) - 1
    h = times[i + 1] - times[i]
    return i, (t - times[i]) / h, h


def _tangents(curve: Curve, i: int) -> tuple[float, float]:
    """Catmull-Rom tangents (d value / d time) at keys i and i+1 (one-sided at the ends)."""
    x, y = curve.times, curve.values

    def slope(k: int) -> float:
        lo, hi = max(k - 1, 0), min(k + 1, len(x) - 1)
        return (y[hi] - y[lo]) / (x[hi] - x[lo])

    return slope(i), slope(i + 1)


def evaluate(curve: Curve, t: float) -> float:
    """Value of the curve at time t."""
    seg = _segment(curve, t)
    if seg is None:
        return float(curve.values[0] if t <= curve.times[0] else curve.values[-1])
    i, s, h = seg
    y0, y1 = curve.values[i], curve.values[i + 1]
    if curve.interpolation == "linear":
        return float(y0 + s * (y1 - y0))
    m0, m1 = _tangents(curve, i)
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    return float(h00 * y0 + h10 * h * m0 + h01 * y1 + h11 * h * m1)


def derivative(curve: Curve, t: float) -> float:
    """Time derivative of the curve at time t (right derivative at linear keys)."""
    seg = _segment(curve, t)
    if seg is None:
        if len(curve.times) >= 2 and t == curve.times[0]:
            seg = (0, 0.0, curve.times[1] - curve.times[0])
        else:
            return 0.0
    i, s, h = seg
    y0, y1 = curve.values[i], curve.values[i + 1]
    if curve.interpolation == "linear":
        return float((y1 - y0) / h)
    m0, m1 = _tangents(curve, i)
    d00, d10, d01, d11 = 6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, -6 * s**2 + 6 * s, 3 * s**2 - 2 * s
    return float((d00 * y0 + d01 * y1) / h + d10 * m0 + d11 * m1)

"""Control signals: a keyed Curve, a constant or a function of time, as one callable u(t) -> float.

Owns only the conversion; what each control means belongs to its vehicle module.
"""

from __future__ import annotations

from typing import Callable, Union

from .. import curves
from ..model import Curve

Signal = Callable[[float], float]


def signal(control: Union[Curve, float, Signal]) -> Signal:
    """u(t) for a Curve (evaluated as keyed), a number (held constant) or a callable (used as it is)."""
    if isinstance(control, Curve):
        return lambda t: curves.evaluate(control, t)
    if callable(control):
        return control
    value = float(control)
    return lambda t: value

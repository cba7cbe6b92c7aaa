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


def rate(control: Union[Curve, float, Signal]) -> Signal:
    """du/dt(t): the Curve's own derivative, 0 for a constant, a central difference for a callable."""
    if isinstance(control, Curve):
        return lambda t: curves.derivative(control, t)
    if callable(control):
        return lambda t: (control(t + 1e-6) - control(t - 1e-6)) / 2e-6
    return lambda t: 0.0

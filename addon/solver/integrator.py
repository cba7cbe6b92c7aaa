"""The method registry and simulate() (our solve_ivp): the one module that imports every method.

METHODS maps a method name to its Integrator subclass (protocol.py); an unknown or not-yet-available
method gets a message naming the valid ones. The bake operator, the CLI, tests and benchmarks all
drive methods through make_integrator() or simulate().
"""

from __future__ import annotations

from typing import Callable

from .maximal.forward_integrator import ForwardIntegrator
from .maximal.integrator import MaximalIntegrator
from .model import Mechanism
from .protocol import Integrator
from .trajectory import SolverError, Trajectory
from .tree.integrator import TreeMidpoint, TreeRK4
from .vehicles.integrator import VehicleIntegrator

ProgressCallback = Callable[[int, int], bool]

METHODS: dict[str, type[Integrator] | None] = {
    "tree": TreeMidpoint,
    "tree-rk4": TreeRK4,
    "vehicle": VehicleIntegrator,
    "maximal": MaximalIntegrator,
    "maximal-rk4": ForwardIntegrator,
}


def make_integrator(mechanism: Mechanism, method: str = "tree", dt: float = 0.01, tol: float = 1e-10) -> Integrator:
    """The integrator for `method`. Raises ValueError for an unknown or not yet available method."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    cls = METHODS[method]
    if cls is None:
        available = ", ".join(k for k, v in METHODS.items() if v is not None)
        raise ValueError(f"method {method!r} is not available yet; available methods: {available}")
    return cls(mechanism, dt, tol)


def simulate(mechanism: Mechanism, dt: float, steps: int, method: str = "tree", tol: float = 1e-10,
             progress: ProgressCallback | None = None) -> Trajectory:
    """Integrate `steps` steps of size `dt`. progress(step, steps) returning False cancels.

    On solver trouble the returned Trajectory has status 'failed', the message names the step and
    time, and holds every step done before it; a cancel gives status 'cancelled'.
    """
    integrator = make_integrator(mechanism, method, dt, tol)
    for k in range(steps):
        try:
            integrator.step()
        except SolverError:
            break
        if progress is not None and progress(k + 1, steps) is False:
            integrator.status = "cancelled"
            integrator.message = f"cancelled after step {k + 1} of {steps}"
            break
    return integrator.trajectory()

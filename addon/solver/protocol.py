"""The Integrator protocol every method implements: Integrator.step() owns status, time and counters.

Subclasses implement _step_impl() and record each step with _record(); trajectory() turns the records
into a Trajectory. Method packages (tree, maximal, vehicles) import this module only; the registry of
methods, make_integrator() and simulate() live in integrator.py, the one module that imports them all.
"""

from __future__ import annotations

import time as _time
from abc import ABC, abstractmethod

import numpy as np

from .model import Mechanism
from .trajectory import SolverError, Trajectory


class Integrator(ABC):
    """Steps one compiled model from its initial state; records a Trajectory as it goes."""

    method = ""

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10):
        if not dt > 0:
            raise ValueError(f"time step dt must be positive, got {dt}")
        self.mechanism = mechanism
        self.dt = float(dt)
        self.tol = float(tol)
        self.status = "running"
        self.message = ""
        self.wall_time = 0.0
        self._t: list[float] = []
        self._poses: list[np.ndarray] = []
        self._q: list[np.ndarray] = []
        self._energy: list[float] = []
        self._residual: list[float] = []
        self._iterations: list[int] = []

    def step(self) -> None:
        """Advance one step; on solver trouble set status 'failed', keep the message, and re-raise."""
        if self.status != "running":
            raise RuntimeError(f"integrator is {self.status}; it cannot step")
        start = _time.perf_counter()
        try:
            self._step_impl()
        except SolverError as err:
            self.status, self.message = "failed", str(err)
            raise
        finally:
            self.wall_time += _time.perf_counter() - start

    @abstractmethod
    def _step_impl(self) -> None: ...

    @property
    def names(self) -> tuple[list[str], list[str]]:
        raise NotImplementedError

    def trajectory(self) -> Trajectory:
        bodies, coords = self.names
        return Trajectory(
            t=np.array(self._t),
            bodies=bodies,
            poses=self._pose_array().reshape(len(self._t), len(bodies), 7),
            q=np.array(self._q).reshape(len(self._t), len(coords)),
            coordinate_names=coords,
            energy=np.array(self._energy),
            constraint_residual=np.array(self._residual),
            newton_iterations=np.array(self._iterations, dtype=np.int64),
            method=self.method,
            status="finished" if self.status == "running" else self.status,
            message=self.message,
            info={"wall_time": self.wall_time, **self.info()},
        )

    def info(self) -> dict:
        return {}

    def _pose_array(self) -> np.ndarray:
        """Recorded body poses (N+1, B, 7); integrators that record configurations instead override this."""
        return np.array(self._poses)

    def _record(self, t: float, poses: np.ndarray, q: np.ndarray, energy: float, residual: float) -> None:
        self._t.append(t)
        self._poses.append(poses)
        self._q.append(q.copy())
        self._energy.append(energy)
        self._residual.append(residual)

"""One integrator protocol for every method, the method registry, and simulate() (our solve_ivp).

Integrator.step() owns status, time and counters; subclasses implement _step_impl() and _record().
Methods plug in through METHODS; an unknown or not-yet-available method gets a message naming the
valid ones. The bake operator, the CLI, tests and benchmarks all drive methods through this loop.
"""

from __future__ import annotations

import time as _time
from abc import ABC, abstractmethod
from typing import Callable

import numpy as np

from .model import Mechanism
from .trajectory import SolverError, Trajectory
from .tree import midpoint
from .tree.compile import TreeModel, compile_tree
from .tree.constraints import evaluate as constraint_residual
from .tree.kinematics import Kinematics, body_poses_batch, forward
from .tree.rk4 import RK4State, rk4_step, rk4_energy

ProgressCallback = Callable[[int, int], bool]


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


class _TreeIntegrator(Integrator):
    """Records configurations and charts per step; body poses are computed for all steps at once
    (kinematics.body_poses_batch) when the Trajectory is asked for."""

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10, model: TreeModel | None = None):
        super().__init__(mechanism, dt, tol)
        self.model = model if model is not None else compile_tree(mechanism)
        self._charts: list[np.ndarray] = []

    @property
    def names(self) -> tuple[list[str], list[str]]:
        return list(self.model.body_names), list(self.model.coordinate_names)

    def _record_state(self, t: float, q: np.ndarray, charts: np.ndarray, energy: float, residual: float) -> None:
        self._charts.append(charts)
        self._record(t, None, q, energy, residual)

    def _record_kin(self, t: float, kin: Kinematics, charts: np.ndarray, energy: float) -> None:
        h, _ = constraint_residual(self.model, kin, jacobian=False)
        self._record_state(t, kin.q, charts, energy, float(np.max(np.abs(h))) if len(h) else 0.0)

    def _pose_array(self) -> np.ndarray:
        q = np.array(self._q).reshape(len(self._t), self.model.nq)
        charts = np.array(self._charts).reshape(len(self._t), -1, 3, 3)
        return body_poses_batch(self.model, q, charts)


class TreeMidpoint(_TreeIntegrator):
    """Midpoint variational integrator on the tree (generalized-coordinate) model.

    Energy is reported at the start from (q0, qdot0) and after each step at that step's midpoint
    (q_mid, (q2 - q1)/dt), the consistent discrete energy of notes/000.md P11.
    """

    method = "tree"

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10, model: TreeModel | None = None):
        super().__init__(mechanism, dt, tol, model)
        self.state, kin, tm, _ = midpoint.initial_state(self.model)
        self._record_kin(0.0, kin, self.state.charts, tm.kinetic + tm.potential)

    def _step_impl(self) -> None:
        result = midpoint.step(self.model, self.state, self.dt, self.tol)
        self._iterations.append(result.iterations)
        self._record_state(self.state.t, self.state.q, self.state.charts, result.energy, result.residual)

    def info(self) -> dict:
        return {"redundant_constraints_dropped_in": list(self.state.dropped_joints)}


class TreeRK4(_TreeIntegrator):
    """Classical RK4 on the continuous constrained dynamics of the same tree model (baseline)."""

    method = "tree-rk4"

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10, model: TreeModel | None = None):
        super().__init__(mechanism, dt, tol, model)
        state, kin, tm, qd = midpoint.initial_state(self.model)
        self.state = RK4State(state.t, state.q, qd, state.charts)
        self._record_kin(0.0, kin, state.charts, tm.kinetic + tm.potential)

    def _step_impl(self) -> None:
        rk4_step(self.model, self.state, self.dt)
        self._iterations.append(0)
        kin = forward(self.model, self.state.q, self.state.charts)
        self._record_kin(self.state.t, kin, self.state.charts, rk4_energy(self.model, self.state, kin))


# Imported here, not at the top: these subclass Integrator, defined above.
from .vehicles.integrator import VehicleIntegrator  # noqa: E402
from .maximal.integrator import MaximalIntegrator  # noqa: E402
from .maximal.forward_integrator import ForwardIntegrator  # noqa: E402

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

"""The 'tree' and 'tree-rk4' methods: the midpoint variational integrator and the RK4 baseline on the
tree (generalized-coordinate) model, driven through the Integrator protocol."""

from __future__ import annotations

import numpy as np

from ..model import Mechanism
from ..protocol import Integrator
from . import galerkin, midpoint
from .compile import TreeModel, compile_tree
from .constraints import evaluate as constraint_residual
from .kinematics import Kinematics, body_poses_batch, forward
from .rk4 import RK4State, rk4_step, rk4_energy


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
    (q_mid, (q2 - q1)/dt), the consistent discrete energy of docs/seeds.md 000-D.
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


class TreeGalerkin(_TreeIntegrator):
    """Galerkin variational integrator of order 2s (s = 2..4) on the tree model (galerkin.py); the 'tree' method at
    an accuracy order above 2. Energy is recorded after each step from the discrete momentum (galerkin.energy)."""

    method = "tree"

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10, model: TreeModel | None = None,
                 order: int = 4):
        super().__init__(mechanism, dt, tol, model)
        galerkin.refusals(self.model, order)
        self.order = order
        self.state, energy = galerkin.start(self.model)
        self._record_kin(0.0, forward(self.model, self.state.q, self.state.charts), self.state.charts, energy)

    def _step_impl(self) -> None:
        result = galerkin.step(self.model, self.state, self.dt, self.order, self.tol)
        self._iterations.append(result.iterations)
        if not self.model.nrow:  # no loop rows to measure at the new pose
            self._record_state(self.state.t, self.state.q, self.state.charts, result.energy, 0.0)
            return
        self._record_kin(self.state.t, forward(self.model, self.state.q, self.state.charts), self.state.charts,
                         result.energy)

    def info(self) -> dict:
        return {"order": self.order, "redundant_constraints_dropped_in": list(self.state.dropped_joints)}


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

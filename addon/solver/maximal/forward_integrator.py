"""`maximal-rk4`: Baraff's stabilised continuous forward dynamics (forward.py) under classical RK4, a
fast preview beside the variational `maximal` method, behind the Integrator protocol.

Starts from the same state as the tree and maximal methods (start.start_from_tree). Trajectory: poses
of every body frame; q is empty; energy T + V at every step (not conserved by RK4: it drifts, slowly
at small dt); constraint_residual max |g - T| over every joint row after the step (and after the
projection when stabilisation is "projection"); newton_iterations 0.
"""

from __future__ import annotations

import numpy as np

from ..protocol import Integrator
from ..model import Mechanism
from ..trajectory import SolverError
from . import forces
from .forward import ForwardDynamics, ForwardState
from .joints import frames
from .start import body_frame_poses, joint_residual, kinetic_energy, start_from_tree


class ForwardIntegrator(Integrator):
    """RK4 on maximal-coordinate forward dynamics with constraint stabilisation (seed 002)."""

    method = "maximal-rk4"

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10, stabilisation: str = "projection",
                 solver: str = "auto"):
        super().__init__(mechanism, dt, tol)
        model, start = start_from_tree(mechanism)
        self.dynamics = ForwardDynamics(model, stabilisation, solver=solver)
        self.state = ForwardState(start.t, start.x, start.q, start.v, start.w, start.coord_winding,
                                  start.row_winding, model.stamp)
        self._record_state()

    @property
    def names(self) -> tuple[list[str], list[str]]:
        return list(self.dynamics.model.bodies.names), []

    def energy(self) -> float:
        model, s = self.dynamics.model, self.state
        cval, _ = forces.coordinates(model.joints, model.forces, frames(model.joints, s.x, s.q), s.x, s.q,
                                     s.coord_winding)
        return kinetic_energy(model, s.v, s.w) + forces.potential(model.bodies.gravity, model.bodies.mass, s.x,
                                                                  model.forces, cval)

    def _record_state(self) -> None:
        model, s = self.dynamics.model, self.state
        self._record(s.t, body_frame_poses(model, s.x, s.q), np.zeros(0), self.energy(),
                     joint_residual(model, s.x, s.q, s.row_winding, s.t))

    def _step_impl(self) -> None:
        try:
            self.dynamics.step(self.state, self.dt, self.tol)
        except SolverError as err:
            err.step = len(self._t)
            raise
        self._iterations.append(0)
        self._record_state()

    def info(self) -> dict:
        return {"stabilisation": self.dynamics.stabilisation,
                "loop_solver": "fill-in LDU" if self.dynamics.use_fillin else "auxiliary rows"}

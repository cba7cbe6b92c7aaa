"""`--method maximal`: seed 003's maximal-coordinate variational integrator behind the Integrator protocol.

Registered as METHODS["maximal"] by addon.solver.integrator, the method registry.
Both methods start identically (start.py). Trajectory: poses of every body frame; q is empty (the
state is the poses: there are no generalized coordinates); energy at the start is T + V of the initial
state and after each step T(zdot_k) + (V(z_k) + V(z_k+1))/2 (the interval's midpoint energy,
second-order like the tree method's); constraint_residual is max |g| over every joint row (dropped
redundant rows included) at the new configuration; newton_iterations per step. An angular speed past
2/dt in a step (bodies.SpinTooFastError) is a ConvergenceError naming the body, and so is a singular Newton
matrix (numpy's LinAlgError from the factorisations, naming the node). A step redone without
friction (the interior point's last resort) is named in the message, in a RuntimeWarning and in
info()["friction_dropped_at_steps"].
"""

from __future__ import annotations

import warnings

import numpy as np

from ..protocol import Integrator
from ..model import Mechanism
from ..trajectory import ConvergenceError
from . import forces
from .bodies import SpinTooFastError
from .joints import frames
from .start import body_frame_poses, joint_residual, kinetic_energy, start_from_tree
from .variational import step


class MaximalIntegrator(Integrator):
    """Seed 003's first-order-in-velocity, second-order-in-position variational integrator in maximal
    coordinates (bodies: centre of mass + unit quaternion), Newton with the exact Jacobian."""

    method = "maximal"

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10):
        super().__init__(mechanism, dt, tol)
        self.model, self.state = start_from_tree(mechanism)
        s = self.state
        fr = frames(self.model.joints, s.x, s.q)
        cval, _ = forces.coordinates(self.model.joints, self.model.forces, fr, s.x, s.q, s.coord_winding)
        bs = self.model.bodies
        energy = kinetic_energy(self.model, s.v, s.w) + forces.potential(bs.gravity, bs.mass, s.x, self.model.forces, cval)
        self._record(s.t, body_frame_poses(self.model, s.x, s.q), np.zeros(0), energy,
                     joint_residual(self.model, s.x, s.q, s.row_winding, s.t))

    @property
    def names(self) -> tuple[list[str], list[str]]:
        return list(self.model.bodies.names), []

    def _step_impl(self) -> None:
        ip = self.state.interior
        dropped = len(ip.friction_dropped) if ip is not None else 0
        try:
            result = step(self.model, self.state, self.dt, self.tol)
        except SpinTooFastError as err:  # the step is too large for the spin: as a failed Newton solve
            k, t = self.state.step_index + 1, self.state.t + self.dt
            name = self.model.bodies.names[int(err.bodies[0])]
            raise ConvergenceError(f"maximal-coordinate step {k} (t = {t:.6g} s): Newton did not converge, body "
                                   f"{name!r} reached the angular speed 2/dt = {2 / self.dt:.4g} rad/s in the solve, "
                                   "where the rotation update is undefined; try a smaller time step",
                                   step=k, time=t) from err
        except np.linalg.LinAlgError as err:  # a singular Newton matrix: a configuration the rows cannot hold
            k, t = self.state.step_index + 1, self.state.t + self.dt
            raise ConvergenceError(f"maximal-coordinate step {k} (t = {t:.6g} s): the Newton matrix is singular "
                                   f"({err}); try a smaller time step, or the tree method", step=k, time=t) from err
        if ip is not None and len(ip.friction_dropped) > dropped:
            steps = ip.friction_dropped
            self.message = (f"friction dropped at {len(steps)} step(s) (the interior point stalled with friction "
                            f"and the step was redone frictionless): steps {steps}")
            warnings.warn(f"maximal-coordinate step {steps[-1]} (t = {self.state.t:.6g} s): {self.message}",
                          RuntimeWarning, stacklevel=2)
        self._iterations.append(result.iterations)
        s = self.state
        poses = body_frame_poses(self.model, s.x, s.q) if result.poses is None else result.poses
        self._record(s.t, poses, np.zeros(0), result.energy, result.residual)

    def info(self) -> dict:
        aux, ip = self.state.aux_active, self.state.interior
        dropped = [] if aux is None else sorted({self.model.joints.names[self.model.joints.row_joint[r]]
                                                for r in self.model.order[~aux]})
        return {"redundant_rows_dropped_in": dropped,
                "steps_without_friction": 0 if ip is None else len(ip.friction_dropped),
                "friction_dropped_at_steps": [] if ip is None else list(ip.friction_dropped),
                "mean_refinement_sweeps": float(np.mean(self.state.sweeps)) if self.state.sweeps else 0.0}

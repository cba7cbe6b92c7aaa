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
info()["friction_dropped_at_steps"]. So is a contact found deeper than PENETRATION_FRACTION of the thinner
collider's half-thickness (collision.shapes.half_thickness): the contact set of a step is found at its start,
so a contact that opens and closes within one step (bodies hitting at speed) is not held; the deepest such
overlap of the run is named with its colliders and time, and info()["deepest_penetration"] holds it.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..collision.shapes import half_thickness
from ..protocol import Integrator
from ..model import Mechanism
from ..trajectory import ConvergenceError
from . import forces
from .bodies import SpinTooFastError
from .joints import frames
from .start import body_frame_poses, joint_residual, kinetic_energy, start_from_tree
from .variational import step


NO_COORDINATES = np.zeros(0)  # the trajectory's q of every sample: the state is the poses
NO_COORDINATES.flags.writeable = False
PENETRATION_FRACTION = 0.1  # a contact deeper than this fraction of the thinner collider's half-thickness is named


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
        self._record(s.t, body_frame_poses(self.model, s.x, s.q), NO_COORDINATES, energy,
                     joint_residual(self.model, s.x, s.q, s.row_winding, s.t))
        collision = self.model.collision
        self._thickness = half_thickness(collision.shapes) if collision is not None else np.zeros(0)
        self._deepest = 0.0  # m: the deepest contact found at a knot
        self._named = 0.0  # m: the deepest overlap named in the message
        self._notes: dict[str, str] = {}  # what went wrong without failing the run: the message, by kind

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
            self._note("friction", steps[-1], f"friction dropped at {len(steps)} step(s) (the interior point "
                       f"stalled with friction and the step was redone frictionless): steps {steps}")
        if ip is not None and ip.rows is not None:
            self._check_penetration(ip.rows.contacts, self.state.t - self.dt)
        self._iterations.append(result.iterations)
        s = self.state
        poses = body_frame_poses(self.model, s.x, s.q) if result.poses is None else result.poses
        self._record(s.t, poses, NO_COORDINATES, result.energy, result.residual)

    def _note(self, kind: str, step: int, text: str) -> None:
        """Record `text` as the run's note of `kind` (the message joins the notes) and warn."""
        self._notes[kind] = text
        self.message = "; ".join(self._notes.values())
        warnings.warn(f"maximal-coordinate step {step} (t = {self.state.t:.6g} s): {text}", RuntimeWarning,
                      stacklevel=3)

    def _check_penetration(self, contacts, t: float) -> None:
        """Name the deepest overlap of this step's contacts (found at the knot, time t) when it is deeper than
        PENETRATION_FRACTION of the thinner collider's half-thickness and than any named before."""
        if not len(contacts.distance):
            return
        depth = -contacts.distance
        deepest = float(depth.max())
        self._deepest = max(self._deepest, deepest)
        if deepest <= 0.0 or deepest <= self._named:  # no overlap, or none deeper than the one named
            return
        names = self.model.collision.shapes.names
        a, b = np.divmod(contacts.key, len(names))
        allowed = PENETRATION_FRACTION * np.minimum(self._thickness[a], self._thickness[b])
        i = int(np.argmax(depth / allowed))
        if depth[i] <= allowed[i] or depth[i] <= self._named:
            return
        self._named = float(depth[i])
        thin = float(min(self._thickness[a[i]], self._thickness[b[i]]))
        self._note("penetration", self.state.step_index - 1,
                   f"colliders {names[a[i]]!r} and {names[b[i]]!r} overlap by {1e3 * depth[i]:.3g} mm at "
                   f"t = {t:.6g} s, more than {100 * PENETRATION_FRACTION:g} % of the thinner one's half-thickness "
                   f"({1e3 * thin:.3g} mm): a step finds its contacts at its start, so bodies that meet within "
                   "one step pass into each other; use a smaller time step (more substeps)")

    def info(self) -> dict:
        aux, ip = self.state.aux_active, self.state.interior
        dropped = [] if aux is None else sorted({self.model.joints.names[self.model.joints.row_joint[r]]
                                                for r in self.model.order[~aux]})
        return {"redundant_rows_dropped_in": dropped,
                "steps_without_friction": 0 if ip is None else len(ip.friction_dropped),
                "friction_dropped_at_steps": [] if ip is None else list(ip.friction_dropped),
                "mean_refinement_sweeps": float(np.mean(self.state.sweeps)) if self.state.sweeps else 0.0,
                "deepest_penetration": self._deepest}

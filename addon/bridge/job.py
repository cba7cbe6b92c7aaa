"""A bake of one setup as a resumable job: read the scene, step the integrator in chunks, then write.

The modal Bake operator advances a `BakeJob` a time budget per timer tick; the headless baker and the
demo run it to the end with `bake_setup`. Nothing in the scene changes until `finish()`: a cancelled
or failed job leaves it exactly as it was. Solver errors come back as the same SolverError subclass,
the message prefixed with the setup and the frame (the solver's own part names the joint or body at
fault); scene and model errors as MechanismError (SceneError for the scene) naming the setup.

No silent failure: when the run reaches its end it is verified (solver/verify.py, as simulate() does for
the CLI): a non-finite state or a joint come apart is a SolverError naming the frame and the joint, and a
conservative setup's |E - E0| past its bound (solver/energy_audit.py) an EnergyError naming the frame and
the bodies whose energy changed most; each restarts the run with twice the substeps. A step past the method's time-step limit (StepTooLargeError: the maximal
method's constraint forces) restarts the run with enough substeps per frame; a Newton failure
(ConvergenceError) or an energy failure restarts it with twice the substeps. At most
MAX_SUBSTEP_RESTARTS restarts; the report says each one. When they are used up the error names the
setting the user has (the setup's Substeps) and the other method.

Vehicle rigs are baked whole (they are small): `bake_vehicle_rigs` finds every object carrying the
vehicle preset property (a chassis object or a bone rig's armature) and bakes it with the settings and
picks stored on it, as the buttons do (vehicle_setup.bake_rig). A rig that cannot be read comes back as
a SceneError naming the scene and the rig.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import bpy
import numpy as np

from ..solver.energy_audit import EnergyAudit, audit
from ..solver.integrator import make_integrator
from ..solver.model import MechanismError
from ..solver.trajectory import ConvergenceError, EnergyError, SolverError, StepTooLargeError, Trajectory
from ..solver.verify import ConstraintError, verify
from . import summary
from .bake import BakeOptions, write_trajectory
from .read import SceneError, SceneMechanism, find_setup, read_setup
from .vehicle_parts import RigError
from .vehicle_rig import PRESET_PROPERTY
from .vehicle_setup import bake_rig

MAX_SUBSTEP_RESTARTS = 3


@dataclass(frozen=True)
class BakeReport:
    setup: str
    steps: int
    keys: int
    seconds: float
    max_residual: float
    energy_drift: float
    mean_newton: float
    max_newton: int
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        return (
            f"Baked {self.setup!r}: {self.steps} steps, {self.keys} keys in {self.seconds:.2f} s; "
            f"max constraint residual {self.max_residual:.2e}, energy drift {self.energy_drift:.2e}, "
            f"Newton iterations {self.mean_newton:.2f} mean / {self.max_newton} max"
        ) + "".join(f"; {note}" for note in self.notes)


def energy_drift(energy: np.ndarray) -> float:
    """max |E - E0| / max(|E0|, 1 J)."""
    energy = np.asarray(energy, dtype=float)
    if len(energy) == 0:
        return 0.0
    return float(np.max(np.abs(energy - energy[0])) / max(abs(energy[0]), 1.0))


class BakeJob:
    """Bake setup `setup_name` of `scene`: construct (reads and assembles), advance(), finish()."""

    def __init__(self, scene: bpy.types.Scene, setup_name: str):
        self.scene_name = scene.name
        self.started = time.perf_counter()
        setup = find_setup(scene, setup_name)
        self.read: SceneMechanism = read_setup(scene, setup)
        self.setup_name = setup_name
        self.setup_substeps = self.read.substeps
        methods = setup.bl_rna.properties["method"].enum_items  # as the UI names them
        self.other_methods = " or ".join(f"the {m.name} method" for m in methods if m.identifier != setup.method)
        self.subframes = bool(setup.subframes)
        self.reduce_tolerance = float(setup.reduce_tolerance) if setup.reduce else None
        self.notes: list[str] = []  # one per restart
        self.audit: EnergyAudit | None = None  # set when the run is complete and has passed it
        self._start()

    def _start(self) -> None:
        """A fresh integrator at the start of the run, on the current time grid."""
        self.stride = 1 if self.subframes else self.read.substeps
        self.done_steps = 0
        self._trajectory: Trajectory | None = None
        try:
            self.integrator = make_integrator(self.read.mechanism, self.read.method, self.read.dt, self.read.tolerance)
        except SolverError as err:
            raise self._error(err) from err
        except (MechanismError, ValueError) as err:
            raise MechanismError(f"setup {self.setup_name!r}: {err}") from err

    def _restart(self, err: SolverError, substeps: int, after: str) -> None:
        """Start again with `substeps` per frame because of `err` (`after`: what happened, for the report),
        or raise err (with the setup, the frame and what to change) when the restarts are used up."""
        if len(self.notes) >= MAX_SUBSTEP_RESTARTS:
            raise self._error(err) from err
        self.notes.append(f"restarted with {substeps} substeps per frame (setup: {self.setup_substeps}) after "
                          f"{after} at frame {self.frame_of(self._time_of(err)):g}")
        self.read = replace(self.read, substeps=substeps)
        self._start()

    def _restart_after(self, err: ConvergenceError) -> None:
        """Restart after a failed Newton solve: with enough substeps for err.stable_dt past the method's
        time-step limit, else with twice as many."""
        if isinstance(err, StepTooLargeError):
            substeps = self.read.substeps * math.ceil(self.read.dt / err.stable_dt)
            self._restart(err, substeps, f"a step past the {self.read.method} method's time-step limit")
        else:
            self._restart(err, 2 * self.read.substeps, "Newton did not converge")

    def _audit(self) -> None:
        """Verify the complete run (solver/verify.py: finite, joints hold, a conservative setup's energy
        bounded); restart with twice the substeps when it fails."""
        trajectory = self.trajectory()
        err = verify(self.read.mechanism, trajectory, self.read.method)
        if err is None:
            self.audit = audit(self.read.mechanism, trajectory, self.read.method)
            return
        after = ("the energy grew past its bound" if isinstance(err, EnergyError) else
                 "a joint came apart" if isinstance(err, ConstraintError) else "the state became non-finite")
        self._restart(err, 2 * self.read.substeps, after)

    @property
    def steps(self) -> int:
        return self.read.steps

    @property
    def fraction(self) -> float:
        return self.done_steps / self.steps if self.steps else 1.0

    @property
    def finished(self) -> bool:
        """Every step done and the energy audit passed: ready for finish()."""
        return self.done_steps >= self.steps and self.audit is not None

    def frame_of(self, time_s: float) -> float:
        return self.read.frame_start + time_s * self.read.fps

    def _time_of(self, err: SolverError) -> float:
        return err.time if err.time is not None else self.done_steps * self.read.dt

    def _error(self, err: SolverError) -> SolverError:
        """The same kind of solver error, its message prefixed with the setup and the frame; a Newton or
        energy failure also says which setting to change."""
        t = self._time_of(err)
        message = f"setup {self.setup_name!r}, frame {self.frame_of(t):g}: {err}"
        if isinstance(err, (ConvergenceError, EnergyError, ConstraintError)):
            tried = f", and this bake tried up to {self.read.substeps}" if self.notes else ""
            message += (f". Raise the setup's Substeps (solver steps per frame; it is {self.setup_substeps}{tried}) "
                        f"or try {self.other_methods}")
        if isinstance(err, StepTooLargeError):
            return StepTooLargeError(message, err.step, t, err.stable_dt)
        return type(err)(message, err.step, t)

    def advance(self, budget_seconds: float = 0.1, max_steps: int | None = None) -> bool:
        """Step until the time budget (or max_steps) is spent or the run is complete and audited; True then."""
        deadline = time.perf_counter() + budget_seconds
        stepped = 0
        while not self.finished and (max_steps is None or stepped < max_steps):
            if self.done_steps >= self.steps:
                self._audit()  # passes (finished) or restarts
                continue
            try:
                self.integrator.step()
            except ConvergenceError as err:
                self._restart_after(err)
                continue
            except SolverError as err:
                raise self._error(err) from err
            self.done_steps += 1
            stepped += 1
            if time.perf_counter() >= deadline:
                break
        return self.finished

    def trajectory(self) -> Trajectory:
        if self.done_steps < self.steps:
            return self.integrator.trajectory()
        if self._trajectory is None:
            self._trajectory = self.integrator.trajectory()
        return self._trajectory

    def finish(self, scene: bpy.types.Scene) -> BakeReport:
        """Write the keys and the setup's diagnostics. Only call once `finished`."""
        if not self.finished:
            raise RuntimeError(f"bake of {self.setup_name!r} is at step {self.done_steps} of {self.steps}")
        trajectory = self.trajectory()
        options = BakeOptions(self.setup_name, self.read.frame_start, self.read.fps, self.stride, self.reduce_tolerance,
                              self.read.blend_frames)
        keys = write_trajectory(trajectory, self.read.targets, options, self.read.root or None)
        iterations = np.asarray(trajectory.newton_iterations)
        report = BakeReport(
            setup=self.setup_name,
            steps=trajectory.nsteps,
            keys=keys,
            seconds=time.perf_counter() - self.started,
            max_residual=float(np.max(trajectory.constraint_residual)) if len(trajectory.t) else 0.0,
            energy_drift=energy_drift(trajectory.energy),
            mean_newton=float(iterations.mean()) if len(iterations) else 0.0,
            max_newton=int(iterations.max()) if len(iterations) else 0,
            notes=(*self.notes, *((f"warning: {trajectory.message}",) if trajectory.message else ()),
                   self.audit.summary()),
        )
        diagnostics = find_setup(scene, self.setup_name).diagnostics
        diagnostics.status = "finished"
        diagnostics.message = report.summary()
        diagnostics.max_residual = report.max_residual
        diagnostics.energy_drift = report.energy_drift
        diagnostics.mean_newton = report.mean_newton
        diagnostics.max_newton = report.max_newton
        diagnostics.seconds = report.seconds
        diagnostics.steps = report.steps
        diagnostics.keys = report.keys
        summary.store(diagnostics, self.read)
        return report


def bake_setup(scene: bpy.types.Scene, setup_name: str) -> BakeReport:
    """Bake one setup to the end (blocking)."""
    job = BakeJob(scene, setup_name)
    while not job.advance(budget_seconds=3600.0):
        pass
    return job.finish(scene)


def vehicle_rigs(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The objects of `scene` that own a vehicle rig (they carry the vehicle preset property), by name."""
    return sorted((o for o in scene.objects if PRESET_PROPERTY in o.keys()), key=lambda o: o.name)


def bake_vehicle_rig(scene: bpy.types.Scene, owner: bpy.types.Object) -> str:
    """Bake the rig `owner` holds with the settings and picks stored on it (vehicle_setup.bake_rig, as the
    buttons do); returns the summary.

    Raises SceneError (naming the scene and the rig) for a rig that cannot be read, SolverError when the
    solver stops; nothing in the scene changes then."""
    try:
        return bake_rig(scene, owner).summary()
    except RigError as err:
        raise SceneError([f"scene {scene.name!r}: {err}"]) from err


def bake_vehicle_rigs(scene: bpy.types.Scene) -> list[str]:
    """Bake every vehicle rig of `scene` (vehicle_rigs); one summary line each."""
    return [bake_vehicle_rig(scene, owner) for owner in vehicle_rigs(scene)]

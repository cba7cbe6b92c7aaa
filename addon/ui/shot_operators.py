"""Solve Shot: an optimal-control shot through the keyed chassis poses of a car, helicopter, boat or
hovercraft rig, or through the keyed locations of an effector object of the active Symplex setup (modal,
Esc cancels).

Thin over bridge/shot.py: `invoke` reads the scene (shot_job: ShotJob, BodyShotJob or MechanismShotJob, all
bridge/shot.SolveJob), solves in a worker thread (the solver never touches bpy) while a timer shows the
interior-point iteration in the status bar; Esc asks the solver to stop. `finish` writes (controls keyed on
the rig, the vehicle bake, the path curve) only after a solve that converged; a cancelled or failed solve
changes nothing. Without a window (headless, tests) `execute`
solves in one go. Its button is on the Shot panel (ui/panels/shot.py).
"""

from __future__ import annotations

import threading

import bpy
from bpy.props import StringProperty
from bpy.types import Operator

from ..bridge import shot as shot_bridge
from ..bridge.vehicle_parts import RigError
from ..solver.model import MechanismError
from ..solver.trajectory import SolverError
from . import ids

TICK_SECONDS = 0.1
_ERRORS = (RigError, MechanismError, SolverError, KeyError)


def _settings(context) -> shot_bridge.ShotSettings:
    s = context.scene.symplex_shot
    return shot_bridge.ShotSettings(s.obstacles.name if s.obstacles else "", s.clearance, s.use_heading,
                                    s.end_at_rest, s.max_iterations, s.smoothness, s.max_force,
                                    s.joint_speed)


class SYMPLEX_OT_solve_shot(Operator):
    """Find the controls (a car's drive torque and steering, a helicopter's collective, tail and cyclic, a
    boat's or hovercraft's thrusts) that take the vehicle rig through its keyed chassis poses (or joint
    torques that take the active setup's effector object through its keyed locations) with the least effort;
    key them as custom properties and bake the motion (Esc cancels)"""

    bl_idname = ids.SOLVE_SHOT
    bl_label = "Solve Shot"
    bl_options = {"REGISTER", "UNDO"}

    rig: StringProperty(name="Rig", description="Chassis object or armature of the rig (empty: the scene setting, "
                                                "else the active object)")

    @classmethod
    def poll(cls, context):
        if context.scene is None:
            return False
        if context.scene.symplex_shot.is_solving:
            cls.poll_message_set("A shot is being solved")
            return False
        if not (cls._rig_name(None, context)):
            cls.poll_message_set("Select the chassis of a vehicle rig")
            return False
        return True

    def _rig_name(self, context) -> str:
        if self is not None and self.rig:
            return self.rig
        if context.scene.symplex_shot.rig:
            return context.scene.symplex_shot.rig
        return context.active_object.name if context.active_object is not None else ""

    def _start(self, context) -> shot_bridge.SolveJob | None:
        symplex = context.scene.symplex
        setup = symplex.setups[symplex.active_setup].name if 0 <= symplex.active_setup < len(symplex.setups) else ""
        try:
            return shot_bridge.shot_job(context.scene, self._rig_name(context), _settings(context), setup)
        except _ERRORS as err:
            self.report({"ERROR"}, str(err))
            return None

    def _finish(self, context, job: shot_bridge.SolveJob) -> set[str]:
        settings = context.scene.symplex_shot
        try:
            summary = job.finish(context.scene)
        except _ERRORS as err:
            settings.message = str(err).splitlines()[0]
            self.report({"WARNING"} if job.cancelled else {"ERROR"}, str(err))
            return {"CANCELLED"}
        settings.message = summary
        self.report({"INFO"}, summary)
        return {"FINISHED"}

    def execute(self, context):
        job = self._start(context)
        if job is None:
            return {"CANCELLED"}
        try:
            job.run()
        except Exception:  # kept on the job; finish() reports it
            pass
        return self._finish(context, job)

    def invoke(self, context, event):
        if context.window is None:
            return self.execute(context)
        self._job = self._start(context)
        if self._job is None:
            return {"CANCELLED"}
        self._thread = threading.Thread(target=self._solve, daemon=True)
        self._thread.start()
        wm = context.window_manager
        context.scene.symplex_shot.is_solving = True
        self._timer = wm.event_timer_add(TICK_SECONDS, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _solve(self) -> None:
        try:
            self._job.run()
        except Exception:  # kept on the job; finish() reports it
            pass

    def _end(self, context) -> None:
        context.window_manager.event_timer_remove(self._timer)
        context.scene.symplex_shot.is_solving = False
        context.workspace.status_text_set(None)

    def modal(self, context, event):
        if event.type == "ESC":
            self._job.cancel()
        if event.type != "TIMER" and event.type != "ESC":
            return {"PASS_THROUGH"}
        if self._thread.is_alive():
            info = self._job.info
            violation = info.get("constraint_violation", float("nan"))
            context.workspace.status_text_set(
                f"Symplex: solving shot {self._job.owner_name} - iteration {self._job.iteration}, constraint "
                f"violation {violation:.2g}" + (" - cancelling" if self._job.cancelled else ", Esc to cancel"))
            return {"RUNNING_MODAL"}
        self._end(context)
        return self._finish(context, self._job)


CLASSES = (SYMPLEX_OT_solve_shot,)
register, unregister = bpy.utils.register_classes_factory(CLASSES)

"""Drive Vehicle: drive the selected vehicle rig live in the viewport from the keyboard, and keep the take.

A modal operator over bridge/vehicle_live.py: a window timer ticks the live drive (solver/vehicles/live.py
steps it by the wall clock in whole frames), key events drive the controls (a car: Up/W throttle, Down/S
brake, Left/A and Right/D steer; the other vehicles: live.body_bindings), the header shows the speed and
the keys. Enter (or a left click) keeps the take: its controls
are keyed on the rig and the rig is baked. Esc (or a right click) cancels: the rig goes back where it was and
nothing is keyed. Blender's event system has no gamepad events, so the keyboard drives it.
"""

from __future__ import annotations

import time

from bpy.props import StringProperty
from bpy.types import Operator

from ..bridge import vehicle_live, vehicle_rig, vehicle_setup
from ..solver.trajectory import SolverError
from . import ids

TICK = 1.0 / 60.0  # s between timer events (the drive steps whole frames by the clock, whatever the tick)
KEEP = {"RET", "NUMPAD_ENTER", "LEFTMOUSE"}
CANCEL = {"ESC", "RIGHTMOUSE"}


def _end(operator, context) -> None:
    """Remove the operator's timer and header text."""
    if operator._timer is not None:
        context.window_manager.event_timer_remove(operator._timer)
        operator._timer = None
    if context.area is not None:
        context.area.header_text_set(None)


def _header(operator, context, speed: float) -> None:
    """The drive's frames and speed and the keys, in the area's header."""
    if context.area is None:
        return
    drive = operator.session.drive
    keys = ", ".join(f"{'/'.join(b.up)} {b.prop} up" + (f", {'/'.join(b.down)} down" if b.down else "")
                     for b in drive.bindings)
    context.area.header_text_set(f"Drive {operator.session.owner}: {drive.steps} frames, {speed * 3.6:.0f} km/h | "
                                 f"{keys} | Enter keep, Esc cancel")


class SYMPLEX_OT_drive_vehicle(Operator):
    """Drive the selected vehicle rig live from the keyboard (a car: W/Up throttle, S/Down brake, A D/Left Right
    steer); Enter keeps the take as keyed controls and bakes it, Esc cancels"""

    bl_idname = ids.DRIVE_VEHICLE
    bl_label = "Drive Vehicle"
    bl_options = {"REGISTER", "UNDO"}

    chassis: StringProperty(name="Chassis", description="Chassis object or armature (empty: the active object's "
                                                        "rig)")
    clock = staticmethod(time.perf_counter)

    @classmethod
    def poll(cls, context):
        if context.scene is None or context.active_object is None or context.window is None:
            cls.poll_message_set("Select the chassis of a vehicle rig in a 3D view")
            return False
        return True

    def invoke(self, context, _event):
        owner = context.scene.objects.get(self.chassis) or vehicle_setup.rig_owner(context.active_object)
        try:
            self.session = vehicle_live.start(context.scene, owner, self.clock())
        except (vehicle_rig.RigError, SolverError, KeyError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self._timer = context.window_manager.event_timer_add(TICK, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        scene, session = context.scene, self.session
        if event.value == "PRESS" and event.type in CANCEL:
            _end(self, context)
            vehicle_live.restore(scene, session)
            return {"CANCELLED"}
        if event.value == "PRESS" and event.type in KEEP:
            _end(self, context)
            try:
                report = vehicle_live.keep(scene, session)
            except (vehicle_rig.RigError, SolverError) as err:
                self.report({"ERROR"}, str(err))
                return {"CANCELLED"}
            self.report({"INFO"}, report.summary())
            return {"FINISHED"}
        if event.type == "TIMER":
            session.drive.tick(self.clock())
            _header(self, context, vehicle_live.show(scene, session))
            if session.drive.failed:
                self.report({"WARNING"}, session.drive.failed)
            return {"RUNNING_MODAL"}
        return {"RUNNING_MODAL"} if session.drive.event(event) else {"PASS_THROUGH"}

"""Vehicle rig operators: Add Vehicle Rig, Bake Vehicle, Free Vehicle Bake (undoable, in F3 search).

Thin wrappers over bridge/vehicle_rig.py, vehicle_body_rig.py and vehicle_setup.py: resolve the rig's
owner (named, else the active object, its ancestor holding a rig, or the parent of an active wheel; an
armature for a bone rig), call one bridge function, report. Add Vehicle Rig names the new chassis after
its preset and leaves it alone selected and active, so Bake Vehicle bakes it next. Bake Vehicle bakes
through vehicle_setup.bake_rig, which stores on the rig the settings and picks it used and the bake's
summary (what the command line bakes and the Vehicle panel shows). Cars (with or without trailer) bake
with their wheels, helicopters, boats, hovercraft, tanks and snakeboards with their parts. Errors name
the object, bone, property or frame; a failed bake changes nothing.
"""

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty
from bpy.types import Operator

from ..bridge import vehicle_body_rig, vehicle_rig, vehicle_setup
from ..solver.trajectory import SolverError
from . import ids
from .drive_operator import SYMPLEX_OT_drive_vehicle


def preset_label(preset: str) -> str:
    """The name a preset shows in menus, and the default name of a rig added from it ('Car Trailer')."""
    return preset.replace("_", " ").title()


PRESETS = [(name, preset_label(name), f"Mass properties of the {name} preset; geometry from the rig")
           for name in vehicle_rig.CAR_PRESETS + vehicle_body_rig.BODY_PRESETS]
_AXES = [(axis, axis, f"The chassis drives along its local {axis} axis") for axis in vehicle_rig.FORWARD_AXES]
_FROM_RIG = ("AUTO", "From Rig", "As stored on the rig (by Add Vehicle Rig or its last bake), else the first "
                                  "preset; a car's forward axis from its wheels")
_PICKS = (*vehicle_rig.WHEEL_LABELS, *vehicle_rig.TRAILER_LABELS, *vehicle_body_rig.PICKABLE)


def _chassis(operator, context) -> bpy.types.Object | None:
    """The rig owner named by the operator (None, reported as an error naming it, when the scene has no such
    object), else the one of the active object (vehicle_setup.rig_owner); the polls ask for an active object."""
    if operator.chassis:
        chassis = context.scene.objects.get(operator.chassis)
        if chassis is None:
            operator.report({"ERROR"}, f"No chassis object {operator.chassis!r} in scene {context.scene.name!r}")
        return chassis
    return vehicle_setup.rig_owner(context.active_object)


def _poll_chassis(cls, context) -> bool:
    if context.scene is None or context.active_object is None:
        cls.poll_message_set("Select the chassis of a vehicle rig")
        return False
    return True


class SYMPLEX_OT_add_vehicle(Operator):
    """Add a vehicle rig at the 3D cursor: a car with four wheels (and a trailer) keyed through a slalom, or a
    helicopter, boat, hovercraft, tank or snakeboard with its rotors, propellers, fans, road wheels or wheel sets
    and rider and a keyed manoeuvre"""

    bl_idname = ids.ADD_VEHICLE
    bl_label = "Add Vehicle Rig"
    bl_options = {"REGISTER", "UNDO"}

    preset: EnumProperty(name="Preset", items=PRESETS)
    name: StringProperty(name="Name", description="Name of the chassis, its parts named after it (empty: the "
                                                   "preset's name)")
    slalom: bpy.props.BoolProperty(name="Key a Slalom", default=True)

    @classmethod
    def poll(cls, context):
        if context.scene is None or (context.mode != "OBJECT"):
            cls.poll_message_set("Switch to Object Mode")
            return False
        return True

    def execute(self, context):
        location = tuple(context.scene.cursor.location)
        name = self.name or preset_label(self.preset)
        if self.preset in vehicle_body_rig.BODY_PRESETS:
            rig = vehicle_body_rig.build_body_rig(context.scene, self.preset, name, location)
        else:
            rig = vehicle_rig.build_car_rig(context.scene, self.preset, name, location, self.slalom)
        chassis = context.scene.objects[rig.chassis]
        layer = context.view_layer
        layer.update()  # the new collection's objects join the view layer's list on its next sync
        if chassis.name in layer.objects:
            for obj in layer.objects:
                obj.select_set(obj == chassis)
            layer.objects.active = chassis
        self.report({"INFO"}, f"Added vehicle rig {rig.chassis!r} ({self.preset})")
        return {"FINISHED"}


class SYMPLEX_OT_bake_vehicle(Operator):
    """Simulate the selected vehicle rig over its Bake Range (else the scene's frame range) and bake chassis,
    wheels, trailer, rotors or propellers to keys (objects, or the pose bones of an armature rig)"""

    bl_idname = ids.BAKE_VEHICLE
    bl_label = "Bake Vehicle"
    bl_options = {"REGISTER", "UNDO"}

    chassis: StringProperty(name="Chassis", description="Chassis object or armature (empty: the active object)")
    chassis_bone: StringProperty(name="Chassis Bone", description="Armature rigs: the chassis bone (empty: the "
                                                                  "bone named like 'chassis', 'body' or 'hull')")
    preset: EnumProperty(name="Preset", items=[_FROM_RIG, *PRESETS])
    forward: EnumProperty(name="Forward Axis", items=[_FROM_RIG, *_AXES])
    wheel_fl: StringProperty(name="Front Left", description="Wheel object (empty: found by name)")
    wheel_fr: StringProperty(name="Front Right", description="Wheel object (empty: found by name)")
    wheel_rl: StringProperty(name="Rear Left", description="Wheel object (empty: found by name)")
    wheel_rr: StringProperty(name="Rear Right", description="Wheel object (empty: found by name)")
    trailer: StringProperty(name="Trailer", description="Trailer body (empty: found by name)")
    trailer_wheel_l: StringProperty(name="Trailer Left Wheel", description="Trailer wheel (empty: found by name)")
    trailer_wheel_r: StringProperty(name="Trailer Right Wheel", description="Trailer wheel (empty: found by name)")
    rotor_main: StringProperty(name="Main Rotor", description="Helicopter main rotor (empty: found by name)")
    rotor_tail: StringProperty(name="Tail Rotor", description="Helicopter tail rotor (empty: found by name)")
    prop_left: StringProperty(name="Left Propeller", description="Boat propeller or hovercraft fan (empty: found "
                                                                 "by name)")
    prop_right: StringProperty(name="Right Propeller", description="Boat propeller or hovercraft fan (empty: found "
                                                                   "by name)")
    substeps: IntProperty(name="Substeps", default=1, min=1, max=64, description="Solver steps per frame")
    ground: StringProperty(name="Ground", description="Mesh the wheels follow on their suspension (empty: the "
                                                      "chassis' symplex_ground property, else flat ground)")

    @classmethod
    def poll(cls, context):
        return _poll_chassis(cls, context)

    def execute(self, context):
        chassis = _chassis(self, context)
        if chassis is None:
            return {"CANCELLED"}
        preset = "" if self.preset == "AUTO" else self.preset
        forward = "" if self.forward == "AUTO" else self.forward
        picked = {key: getattr(self, key) for key in _PICKS if getattr(self, key)}
        try:
            report = vehicle_setup.bake_rig(context.scene, chassis, preset, forward, self.chassis_bone, picked,
                                            self.substeps, self.ground or None)
        except (vehicle_rig.RigError, SolverError, KeyError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for warning in getattr(report, "warnings", ()):
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, report.summary())
        return {"FINISHED"}


class SYMPLEX_OT_free_vehicle_bake(Operator):
    """Remove the selected vehicle rig's bake and give back the animation it replaced"""

    bl_idname = ids.FREE_VEHICLE_BAKE
    bl_label = "Free Vehicle Bake"
    bl_options = {"REGISTER", "UNDO"}

    chassis: StringProperty(name="Chassis", description="Chassis object (empty: the active object)")

    @classmethod
    def poll(cls, context):
        return _poll_chassis(cls, context)

    def execute(self, context):
        chassis = _chassis(self, context)
        if chassis is None:
            return {"CANCELLED"}
        freed = vehicle_setup.free_rig(context.scene, chassis)
        if not freed:
            self.report({"WARNING"}, f"Vehicle {chassis.name!r} has no bake to free")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Freed the bake of vehicle {chassis.name!r} on {freed} object(s)")
        return {"FINISHED"}


CLASSES = (SYMPLEX_OT_add_vehicle, SYMPLEX_OT_bake_vehicle, SYMPLEX_OT_free_vehicle_bake, SYMPLEX_OT_drive_vehicle)
register, unregister = bpy.utils.register_classes_factory(CLASSES)

"""The Vehicle panel (3D view sidebar, Symplex tab) and the Add > Vehicle Rig menu.

The panel adds a vehicle rig from a preset (a menu of every preset), and for the rig of the active object
(vehicle_setup.rig_owner: the chassis, its armature, or the owner of a selected part) shows its kind (car,
car + trailer, helicopter, boat, hovercraft, tank, snakeboard), the preset and forward axis stored on it,
and the summary of its last bake stored on it, its Start From Animation, Bake Range and Blend Frames;
Bake Vehicle and Free Vehicle Bake act on that rig, and
Drive Vehicle (ui/drive_operator.py) on a car rig. The
same preset menu is appended to the 3D view's Add menu. Operators live in ui/vehicle_operators.py.
"""

from __future__ import annotations

from bpy.types import Menu, Panel

from ...bridge import vehicle_rig, vehicle_setup
from .. import ids
from ..vehicle_operators import PRESETS
from . import SymplexTab
from .setups import draw_bake_range


class SYMPLEX_MT_add_vehicle(Menu):
    """Every vehicle preset, each adding its rig at the 3D cursor"""

    bl_label = "Vehicle Rig"
    bl_idname = "SYMPLEX_MT_add_vehicle"

    def draw(self, _context):
        for preset, label, _description in PRESETS:
            self.layout.operator(ids.ADD_VEHICLE, text=label).preset = preset


class SYMPLEX_PT_vehicle(SymplexTab, Panel):
    bl_label = "Vehicle"
    bl_idname = "SYMPLEX_PT_vehicle"

    def draw(self, context):
        layout = self.layout
        layout.menu(SYMPLEX_MT_add_vehicle.bl_idname, text="Add Vehicle Rig", icon="ADD")
        obj = context.active_object
        if obj is None:
            layout.label(text="Select a vehicle rig to bake it", icon="INFO")
            return
        owner = vehicle_setup.rig_owner(obj)
        box = layout.box()
        kind = vehicle_setup.kind(owner)
        box.label(text=f"{owner.name}: {kind or 'no stored preset'}", icon="AUTO")
        if kind is not None:
            box.label(text=f"Preset {owner[vehicle_rig.PRESET_PROPERTY]}, forward "
                           f"{owner.get(vehicle_rig.FORWARD_PROPERTY, '+X')}")
        result = owner.get(vehicle_setup.RESULT_PROPERTY)
        box.label(text=result or "Not baked", icon="CHECKMARK" if result else "BLANK1")
        layout.prop(owner.symplex, "start_from_animation")
        draw_bake_range(layout, owner.symplex)
        row = layout.row(align=True)
        row.operator(ids.BAKE_VEHICLE, icon="REC").chassis = owner.name
        row.operator(ids.FREE_VEHICLE_BAKE, icon="TRASH").chassis = owner.name
        if kind in vehicle_setup.DRIVABLE:
            layout.operator(ids.DRIVE_VEHICLE, icon="AUTO").chassis = owner.name


def add_menu(self, _context) -> None:
    """Add > Vehicle Rig, appended to the 3D view's Add menu."""
    self.layout.menu(SYMPLEX_MT_add_vehicle.bl_idname, icon="AUTO")


CLASSES = (SYMPLEX_MT_add_vehicle, SYMPLEX_PT_vehicle)

"""Every panel and menu of the add-on, one module per area: setups (the main Symplex sidebar panel, its
sub-panels, the Physics and Bone properties panels, Add > Symplex Preset), vehicle (the Vehicle panel,
Add > Vehicle Rig) and shot (the Shot panel).

Owns their registration and where the sidebar's panels show (SymplexTab): each area module lists its
CLASSES and, when it extends the 3D view's Add menu, its `add_menu` draw function. AREAS registers them
in order, so Add > Symplex Preset comes before Add > Vehicle Rig; SIDEBAR_ORDER sets the order of the
Symplex tab's top-level panels (their bl_order; Blender places a region's panels by bl_order, then by
registration).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import bpy

SIDEBAR_ORDER = ("SYMPLEX_PT_sidebar", "SYMPLEX_PT_vehicle", "SYMPLEX_PT_shot")
AREAS = ("setups", "vehicle", "shot")


class SymplexTab:
    """Mixed into every panel of the 3D view sidebar's Symplex tab (before bpy.types.Panel): where it shows."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Symplex"


def _areas() -> list[ModuleType]:
    return [importlib.import_module(f".{name}", __name__) for name in AREAS]


def register() -> None:
    for area in _areas():
        for cls in area.CLASSES:
            bpy.utils.register_class(cls)
        if hasattr(area, "add_menu"):
            bpy.types.VIEW3D_MT_add.append(area.add_menu)


def unregister() -> None:
    for area in reversed(_areas()):
        if hasattr(area, "add_menu"):
            bpy.types.VIEW3D_MT_add.remove(area.add_menu)
        for cls in reversed(area.CLASSES):
            bpy.utils.unregister_class(cls)

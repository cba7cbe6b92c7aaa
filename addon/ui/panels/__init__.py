"""Every panel and menu of the add-on, one module per area: setups (the main Symplex sidebar panel, its
sub-panels, the Physics and Bone properties panels, Add > Symplex Preset), vehicle (the Vehicle panel,
Add > Vehicle Rig) and shot (the Shot panel).

Owns their registration and where the sidebar's panels show (SymplexTab): each area module lists its
CLASSES and, when it extends the 3D view's Add menu, its `add_menu` draw function. AREAS registers them
in order, so Add > Symplex Preset comes before Add > Vehicle Rig; SIDEBAR_ORDER sets the order of the
Symplex tab's top-level panels (SymplexTab gives each its bl_order; Blender places a region's panels by
bl_order, then by registration). The main panel's sub-panels derive from SidebarSubPanel.
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

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in SIDEBAR_ORDER:
            cls.bl_order = SIDEBAR_ORDER.index(cls.__name__)


class SidebarSubPanel(SymplexTab):
    """Mixed into the sub-panels of the main Symplex panel (before bpy.types.Panel)."""

    bl_parent_id = SIDEBAR_ORDER[0]


def draw_list(layout, list_type: str, owner, items: str, active: str, add: str, remove: str) -> None:
    """The UI list `list_type` of owner.<items> (active index owner.<active>), with the operators `add` and
    `remove` as buttons beside it."""
    row = layout.row()
    row.template_list(list_type, "", owner, items, owner, active, rows=3)
    col = row.column(align=True)
    col.operator(add, icon="ADD", text="")
    col.operator(remove, icon="REMOVE", text="")


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

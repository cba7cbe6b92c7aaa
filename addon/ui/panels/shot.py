"""The Shot panel (3D view sidebar, Symplex tab, closed by default): the Solve Shot settings
(shot_properties.py) and its button; the operator lives in ui/shot_operators.py.
"""

from __future__ import annotations

from bpy.types import Panel

from .. import ids
from . import SymplexTab


class SYMPLEX_PT_shot(SymplexTab, Panel):
    """Sidebar > Symplex > Shot: the Solve Shot settings and button."""

    bl_label = "Shot"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        settings = context.scene.symplex_shot
        layout = self.layout
        layout.prop_search(settings, "rig", context.scene, "objects")
        layout.prop(settings, "obstacles")
        col = layout.column(align=True)
        col.prop(settings, "clearance")
        col.prop(settings, "use_heading")
        col.prop(settings, "end_at_rest")
        col.prop(settings, "smoothness")
        col.prop(settings, "max_force")
        col.prop(settings, "joint_speed")
        col.prop(settings, "max_iterations")
        layout.operator(ids.SOLVE_SHOT, icon="CON_FOLLOWPATH")
        if settings.message:
            layout.label(text=settings.message[:120])


CLASSES = (SYMPLEX_PT_shot,)

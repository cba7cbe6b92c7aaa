"""Panels and menu of Symplex setups: the main Symplex sidebar panel (setups, bake settings, Validate and
Bake) with its Last Result, Mass Properties and Loops sub-panels, the Physics / Bone properties panels and
the Add > Symplex Preset menu.

Drawing only: every button calls an operator from ids.py, every field is a property from properties.py.
"""

from __future__ import annotations

from bpy.types import Menu, Panel, UIList

from ...solver.presets import list_presets
from .. import ids
from ..operators import active_setup, loop_armature
from . import SidebarSubPanel, SymplexTab, draw_list


def draw_bake_range(layout, settings) -> None:
    """Bake Range (on/off, Start, End) and Blend Frames of a setup, or of a vehicle rig's owner (Object.symplex)."""
    row = layout.row(heading="Bake Range")
    row.prop(settings, "use_frame_range", text="")
    sub = row.row(align=True)
    sub.active = settings.use_frame_range
    sub.prop(settings, "frame_start")
    sub.prop(settings, "frame_end")
    layout.prop(settings, "blend_frames")

class SYMPLEX_UL_setups(UIList):
    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_prop, _index=0):
        icon = "ARMATURE_DATA" if item.kind == "ARMATURE" else "RIGID_BODY"
        layout.prop(item, "name", text="", emboss=False, icon=icon)
        if item.diagnostics.status == "finished":
            layout.label(text="", icon="CHECKMARK")


class SYMPLEX_UL_loops(UIList):
    def draw_item(self, _context, layout, _data, item, _icon, _active_data, _active_prop, _index=0):
        target = {"BONE": item.bone_b, "OBJECT": item.object_b.name if item.object_b else "?", "WORLD": "world"}
        layout.prop(item, "name", text="", emboss=False, icon="LINKED")
        layout.label(text=f"{item.bone_a} \u2192 {target[item.target]}")


class SYMPLEX_PT_sidebar(SymplexTab, Panel):
    bl_idname = "SYMPLEX_PT_sidebar"
    bl_label = "Symplex"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.symplex
        draw_list(layout, "SYMPLEX_UL_setups", settings, "setups", "active_setup", ids.SETUP_ADD, ids.SETUP_REMOVE)
        layout.menu("SYMPLEX_MT_add_preset", icon="ADD")
        setup = active_setup(context)
        if setup is None:
            return
        col = layout.column()
        col.use_property_split = True
        col.prop(setup, "kind")
        if setup.kind == "ARMATURE":
            col.prop(setup, "armature")
        else:
            col.prop(setup, "whole_scene")
            sub = col.row()
            sub.active = not setup.whole_scene
            sub.prop(setup, "collection")
        col.prop(setup, "root")
        col.separator()
        col.prop(setup, "method")
        col.prop(setup, "substeps")
        col.prop(setup, "tolerance")
        col.prop(setup, "start_from_animation")
        draw_bake_range(col, setup)
        col.prop(setup, "subframes")
        row = col.row(heading="Reduce Keys")
        row.prop(setup, "reduce", text="")
        sub = row.row()
        sub.active = setup.reduce
        sub.prop(setup, "reduce_tolerance", text="")
        status = context.window_manager.symplex_bake
        if status.is_baking:
            layout.progress(factor=status.progress, type="BAR", text=f"{status.message} {100 * status.progress:.0f}%")
            layout.label(text="Esc to cancel", icon="INFO")
        row = layout.row(align=True)
        row.operator(ids.VALIDATE, icon="CHECKMARK")
        row = layout.row(align=True)
        row.scale_y = 1.3
        row.operator(ids.BAKE, icon="REC")
        row.operator(ids.FREE_BAKE, icon="TRASH")


class SYMPLEX_PT_diagnostics(SidebarSubPanel, Panel):
    bl_label = "Last Result"

    @classmethod
    def poll(cls, context):
        return active_setup(context) is not None

    def draw(self, context):
        diagnostics = active_setup(context).diagnostics
        layout = self.layout
        col = layout.column(align=True)
        for line in diagnostics.read.splitlines():  # what the last Validate or Bake read
            col.label(text=line)
        if not diagnostics.status:
            layout.label(text="Not baked yet")
            return
        col = layout.column(align=True)
        col.label(text=f"Status: {diagnostics.status}")
        col.label(text=f"Max constraint residual: {diagnostics.max_residual:.2e}")
        col.label(text=f"Energy drift: {diagnostics.energy_drift:.2e}")
        col.label(text=f"Newton iterations: {diagnostics.mean_newton:.2f} mean, {diagnostics.max_newton} max")
        col.label(text=f"Time: {diagnostics.seconds:.2f} s, {diagnostics.steps} steps, {diagnostics.keys} keys")


def _draw_mass(layout, settings, mass_owner) -> None:
    """Mass source and its fields; `mass_owner` holds `mass` (bone settings, rigid body, or None: drawn elsewhere)."""
    col = layout.column()
    col.use_property_split = True
    col.prop(settings, "mass_source")
    if settings.mass_source == "MESH":
        col.prop(settings, "density")
        return
    if mass_owner is not None:
        col.prop(mass_owner, "mass")
    if settings.mass_source == "CUSTOM":
        col.prop(settings, "com")
        col.prop(settings, "inertia")
    elif settings.mass_source == "ROD":
        col.prop(settings, "radius")


class SYMPLEX_PT_mass(SidebarSubPanel, Panel):
    bl_label = "Mass Properties"

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return context.active_pose_bone is not None or (obj is not None and obj.rigid_body is not None)

    def draw(self, context):
        layout = self.layout
        pose_bone = context.active_pose_bone
        if pose_bone is not None:
            layout.label(text=pose_bone.name, icon="BONE_DATA")
            layout.prop(pose_bone.symplex, "simulate")
            _draw_mass(layout, pose_bone.symplex, pose_bone.symplex)
            return
        obj = context.active_object
        layout.label(text=obj.name, icon="OBJECT_DATA")
        _draw_mass(layout, obj.symplex, obj.rigid_body)


class SYMPLEX_PT_loops(SidebarSubPanel, Panel):
    bl_label = "Loops"

    @classmethod
    def poll(cls, context):
        return loop_armature(context) is not None

    def draw(self, context):
        layout = self.layout
        arm = loop_armature(context)
        settings = arm.data.symplex
        draw_list(layout, "SYMPLEX_UL_loops", settings, "loops", "active_loop", ids.LOOP_ADD, ids.LOOP_REMOVE)
        if not 0 <= settings.active_loop < len(settings.loops):
            return
        loop = settings.loops[settings.active_loop]
        col = layout.column()
        col.use_property_split = True
        col.prop_search(loop, "bone_a", arm.data, "bones")
        col.prop(loop, "point")
        col.prop(loop, "target")
        if loop.target == "BONE":
            col.prop_search(loop, "bone_b", arm.data, "bones")
        elif loop.target == "OBJECT":
            col.prop(loop, "object_b")
        col.prop(loop, "type")
        if loop.type == "HINGE":
            col.prop(loop, "axis")


class SYMPLEX_PT_object_physics(Panel):
    bl_label = "Symplex"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and (obj.rigid_body is not None or obj.rigid_body_constraint is not None)

    def draw(self, context):
        obj = context.object
        layout = self.layout
        if obj.rigid_body is not None:
            _draw_mass(layout, obj.symplex, None)  # Blender's Rigid Body panel shows the mass
        rbc = obj.rigid_body_constraint
        if rbc is not None:
            col = layout.column()
            col.use_property_split = True
            if rbc.type == "MOTOR":
                col.prop(obj.symplex, "motor_gain")
            else:
                col.prop(obj.symplex, "q0")
                col.prop(obj.symplex, "v0")


class SYMPLEX_PT_bone(Panel):
    bl_label = "Symplex"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "bone"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == "ARMATURE" and context.bone is not None and obj.pose is not None

    def draw_header(self, context):
        pose_bone = context.object.pose.bones.get(context.bone.name)
        if pose_bone is not None:
            self.layout.prop(pose_bone.symplex, "simulate", text="")

    def draw(self, context):
        pose_bone = context.object.pose.bones.get(context.bone.name)
        if pose_bone is None:
            return
        layout = self.layout
        layout.active = pose_bone.symplex.simulate
        layout.use_property_split = True
        _draw_mass(layout, pose_bone.symplex, pose_bone.symplex)
        layout.prop(pose_bone.symplex, "v0")


class SYMPLEX_MT_add_preset(Menu):
    bl_label = "Symplex Preset"
    bl_idname = "SYMPLEX_MT_add_preset"

    def draw(self, _context):
        layout = self.layout
        for name in list_presets():
            layout.operator(ids.ADD_PRESET, text=name.replace("_", " ").title()).preset = name


def add_menu(self, _context) -> None:
    """Add > Symplex Preset, appended to the 3D view's Add menu."""
    self.layout.menu(SYMPLEX_MT_add_preset.bl_idname, icon="MOD_PHYSICS")


CLASSES = (
    SYMPLEX_UL_setups,
    SYMPLEX_UL_loops,
    SYMPLEX_PT_sidebar,
    SYMPLEX_PT_diagnostics,
    SYMPLEX_PT_mass,
    SYMPLEX_PT_loops,
    SYMPLEX_PT_object_physics,
    SYMPLEX_PT_bone,
    SYMPLEX_MT_add_preset,
)

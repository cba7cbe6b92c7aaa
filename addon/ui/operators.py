"""Symplex operators: thin wrappers that poll, call one bridge function and report.

Validate Setup says what the setup reads as (bridge/summary.py, also kept for the sidebar's Last
Result) and lists every problem; Bake runs modal (a chunk of solver steps per timer tick, progress
bar, Esc cancels; run without a window it bakes in one go); Free Bake restores the previous
animation; Add Preset builds a mechanism from presets/*.toml at the 3D cursor and selects it; Add /
Remove Setup and Add / Remove Loop edit the sidebar's lists. Every operator that changes the scene is
undoable (Validate changes nothing, so it leaves no undo step); each has a button or menu entry
(panels.py; tests/blender/test_ui_reach.py checks). A refused or failed operator changes nothing.
"""


import bpy
from bpy.props import EnumProperty, StringProperty
from bpy.types import Operator

from ..bridge import bake, build, job, read, rigid_scope, summary
from ..solver.mechfile.read import load_mechanism
from ..solver.presets import list_presets, preset_path
from ..solver.model import MechanismError
from ..solver.trajectory import SolverError
from . import ids

TICK_SECONDS = 0.05
CHUNK_SECONDS = 0.08


def active_setup(context):
    settings = context.scene.symplex
    if 0 <= settings.active_setup < len(settings.setups):
        return settings.setups[settings.active_setup]
    return None


def _target_setup(operator, context):
    """The setup named by the operator's `setup` property, else the active one."""
    if operator.setup:
        return read.find_setup(context.scene, operator.setup)
    return active_setup(context)


def _poll_setup(cls, context) -> bool:
    if context.scene is None or active_setup(context) is None:
        cls.poll_message_set("Add a Symplex setup first (sidebar > Symplex)")
        return False
    if context.window_manager.symplex_bake.is_baking:
        cls.poll_message_set("A bake is running")
        return False
    return True


class SYMPLEX_OT_validate(Operator):
    """Check the active setup and list every problem"""

    bl_idname = ids.VALIDATE
    bl_label = "Validate Setup"
    bl_options = {"REGISTER"}  # reads the scene only: no undo step

    setup: StringProperty(name="Setup", description="Setup to check (empty: the active one)")

    @classmethod
    def poll(cls, context):
        return _poll_setup(cls, context)

    def execute(self, context):
        setup = _target_setup(self, context)
        result, errors, warnings = read.inspect_setup(context.scene, setup)
        summary.store(setup.diagnostics, result)
        for line in setup.diagnostics.read.splitlines():
            self.report({"INFO"}, line)
        for message in warnings:
            self.report({"WARNING"}, message)
        for message in errors:
            self.report({"ERROR"}, message)
        if not errors:
            self.report({"INFO"}, f"Setup {setup.name!r} is ready to bake")
        return {"FINISHED"}


class SYMPLEX_OT_bake(Operator):
    """Simulate the active setup and bake it to keyframes (Esc cancels)"""

    bl_idname = ids.BAKE
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    setup: StringProperty(name="Setup", description="Setup to bake (empty: the active one)")

    @classmethod
    def poll(cls, context):
        return _poll_setup(cls, context)

    def _start(self, context) -> job.BakeJob | None:
        try:
            return job.BakeJob(context.scene, _target_setup(self, context).name)
        except (MechanismError, SolverError, KeyError) as err:
            self.report({"ERROR"}, str(err))
            return None

    def _finish(self, context, bake_job: job.BakeJob) -> set[str]:
        report = bake_job.finish(context.scene)
        for line in summary.lines(bake_job.read):
            self.report({"INFO"}, line)
        for warning in bake_job.read.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, report.summary())
        return {"FINISHED"}

    def execute(self, context):
        bake_job = self._start(context)
        if bake_job is None:
            return {"CANCELLED"}
        try:
            bake_job.advance(budget_seconds=float("inf"))
        except SolverError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return self._finish(context, bake_job)

    def invoke(self, context, event):
        if context.window is None:
            return self.execute(context)
        self._job = self._start(context)
        if self._job is None:
            return {"CANCELLED"}
        wm = context.window_manager
        status = wm.symplex_bake
        status.is_baking, status.setup, status.progress = True, self._job.setup_name, 0.0
        status.message = f"Baking {self._job.setup_name}"
        self._timer = wm.event_timer_add(TICK_SECONDS, window=context.window)
        wm.progress_begin(0, 100)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _end(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        wm.symplex_bake.is_baking = False
        wm.symplex_bake.message = ""
        context.workspace.status_text_set(None)
        for area in context.screen.areas:
            area.tag_redraw()

    def modal(self, context, event):
        if event.type == "ESC":
            self._end(context)
            self.report({"WARNING"}, f"Bake of {self._job.setup_name!r} cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        try:
            done = self._job.advance(budget_seconds=CHUNK_SECONDS)
        except SolverError as err:
            self._end(context)
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        wm = context.window_manager
        percent = 100.0 * self._job.fraction
        wm.progress_update(percent)
        wm.symplex_bake.progress = self._job.fraction
        frame = self._job.frame_of(self._job.done_steps * self._job.read.dt)
        context.workspace.status_text_set(f"Symplex: baking {self._job.setup_name} {percent:.0f}% (frame {frame:.0f}), Esc to cancel")
        for area in context.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()
        if not done:
            return {"RUNNING_MODAL"}
        self._end(context)
        return self._finish(context, self._job)


class SYMPLEX_OT_free_bake(Operator):
    """Remove the active setup's bake and give back the animation it replaced"""

    bl_idname = ids.FREE_BAKE
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    setup: StringProperty(name="Setup", description="Setup to free (empty: the active one)")

    @classmethod
    def poll(cls, context):
        return _poll_setup(cls, context)

    def execute(self, context):
        setup = _target_setup(self, context)
        freed = bake.free_bake(bake.baked_objects(context.scene, setup.name))
        if not freed:
            self.report({"WARNING"}, f"Setup {setup.name!r} has no bake to free")
            return {"CANCELLED"}
        setup.diagnostics.status = "freed"
        self.report({"INFO"}, f"Freed the bake of {setup.name!r} on {freed} object(s)")
        return {"FINISHED"}


_PRESET_ITEMS: list[tuple[str, str, str]] = []


def _preset_items(_self, _context):
    # Blender needs the list kept alive while the enum is shown.
    _PRESET_ITEMS[:] = [(name, name.replace("_", " ").title(), f"presets/{name}.toml") for name in list_presets()]
    return _PRESET_ITEMS or [("NONE", "No presets", "")]


class SYMPLEX_OT_add_preset(Operator):
    """Build a ready-to-bake mechanism from a Symplex preset"""

    bl_idname = ids.ADD_PRESET
    bl_label = "Add Symplex Preset"
    bl_options = {"REGISTER", "UNDO"}
    bl_property = "preset"

    preset: EnumProperty(name="Preset", items=_preset_items)
    variant: EnumProperty(
        name="Build As",
        items=[
            ("RIGID_BODIES", "Rigid Bodies", "Meshes with Blender rigid bodies and rigid body constraints"),
            ("ARMATURE", "Armature", "One simulated bone per body"),
        ],
    )

    @classmethod
    def poll(cls, context):
        if context.scene is None:
            cls.poll_message_set("No scene")
            return False
        if context.mode != "OBJECT":
            cls.poll_message_set("Switch to Object Mode")
            return False
        return True

    def execute(self, context):
        scene = context.scene
        location = tuple(scene.cursor.location)  # Align: World, as Blender's Add menu: the cursor's rotation unused
        try:
            mech = load_mechanism(preset_path(self.preset))
            if self.variant == "ARMATURE":
                built, _expected = build.build_armature(scene, mech, location)
            else:
                built = build.build_rigid_bodies(scene, mech, location)
        except (MechanismError, FileNotFoundError) as err:
            as_what = "an armature" if self.variant == "ARMATURE" else "rigid bodies"
            self.report({"ERROR"}, f"Preset {self.preset!r} cannot be added as {as_what}: {err}")
            return {"CANCELLED"}
        _select_only(context.view_layer, read.find_setup(scene, built.setup).root)
        self.report({"INFO"}, f"Added {mech.name!r} as setup {built.setup!r}")
        return {"FINISHED"}


def _select_only(view_layer, obj) -> None:
    """Make `obj` the one selected object and the active one, as Blender's Add menu leaves what it adds."""
    for other in view_layer.objects:
        other.select_set(False)
    obj.select_set(True)
    view_layer.objects.active = obj


def _setup_owner(scene, setup):
    """What a setup covers: its armature, its collection, or the scene for a Whole Scene setup."""
    if setup.kind == "ARMATURE":
        return setup.armature
    return scene if setup.whole_scene else setup.collection


class SYMPLEX_OT_setup_add(Operator):
    """Add a setup for the active armature, or the rigid bodies of the active object's collection (else the scene); one setup each"""

    bl_idname = ids.SETUP_ADD
    bl_label = "Add Setup"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        settings = context.scene.symplex
        obj = context.active_object
        if obj is not None and obj.type == "ARMATURE":
            kind, owner = "ARMATURE", obj
        else:
            kind = "RIGID_BODIES"
            collection, whole_scene = rigid_scope.scope_for(context.scene, obj)
            owner = context.scene if whole_scene else collection
        existing = next((s for s in settings.setups if s.kind == kind and _setup_owner(context.scene, s) == owner), None)
        if existing is not None:
            what = "Armature" if kind == "ARMATURE" else type(owner).__name__  # Collection or Scene
            self.report({"ERROR"}, f"{what} {owner.name!r} already has setup {existing.name!r}; "
                                   "select it in the setup list")
            return {"CANCELLED"}
        setup = settings.setups.add()
        setup.kind = kind
        setup.name = owner.name
        if kind == "ARMATURE":
            setup.armature = owner
        else:
            setup.collection, setup.whole_scene = collection, whole_scene
        settings.active_setup = len(settings.setups) - 1
        return {"FINISHED"}


class SYMPLEX_OT_setup_remove(Operator):
    """Remove the active setup (its bake stays until freed)"""

    bl_idname = ids.SETUP_REMOVE
    bl_label = "Remove Setup"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if active_setup(context) is None:
            cls.poll_message_set("No setup selected")
            return False
        return True

    def execute(self, context):
        settings = context.scene.symplex
        settings.setups.remove(settings.active_setup)
        settings.active_setup = max(0, min(settings.active_setup, len(settings.setups) - 1))
        return {"FINISHED"}


def loop_armature(context):
    """The armature whose loops the sidebar edits: the active setup's, else the active object."""
    setup = active_setup(context)
    if setup is not None and setup.kind == "ARMATURE" and setup.armature is not None:
        return setup.armature
    obj = context.active_object
    return obj if obj is not None and obj.type == "ARMATURE" else None


class SYMPLEX_OT_loop_add(Operator):
    """Add a loop closure to the armature (starting at the active bone)"""

    bl_idname = ids.LOOP_ADD
    bl_label = "Add Loop"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if loop_armature(context) is None:
            cls.poll_message_set("Needs an armature setup or an active armature")
            return False
        return True

    def execute(self, context):
        arm = loop_armature(context)
        settings = arm.data.symplex
        loop = settings.loops.add()
        loop.name = f"Loop {len(settings.loops)}"
        if context.active_pose_bone is not None:
            loop.bone_a = context.active_pose_bone.name
        settings.active_loop = len(settings.loops) - 1
        return {"FINISHED"}


class SYMPLEX_OT_loop_remove(Operator):
    """Remove the active loop closure"""

    bl_idname = ids.LOOP_REMOVE
    bl_label = "Remove Loop"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        arm = loop_armature(context)
        if arm is None or not arm.data.symplex.loops:
            cls.poll_message_set("No loop to remove")
            return False
        return True

    def execute(self, context):
        settings = loop_armature(context).data.symplex
        settings.loops.remove(settings.active_loop)
        settings.active_loop = max(0, min(settings.active_loop, len(settings.loops) - 1))
        return {"FINISHED"}


CLASSES = (
    SYMPLEX_OT_validate,
    SYMPLEX_OT_bake,
    SYMPLEX_OT_free_bake,
    SYMPLEX_OT_add_preset,
    SYMPLEX_OT_setup_add,
    SYMPLEX_OT_setup_remove,
    SYMPLEX_OT_loop_add,
    SYMPLEX_OT_loop_remove,
)
register, unregister = bpy.utils.register_classes_factory(CLASSES)

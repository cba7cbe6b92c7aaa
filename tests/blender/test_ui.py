"""The UI in real Blender: registration cycles, operator flags and polls, and every operator end to end.

Runs under bpy 5.0 and 4.2. Panels cannot be drawn without a window; their registration, contexts
and polls are checked. The modal path of Bake needs a window too; its chunked stepping and cancel
are the BakeJob tested in test_bake.py.
"""

from __future__ import annotations

import bpy
import pytest

import addon
from addon.bridge import compat
from addon.solver.mechfile import list_presets
from addon.ui import ids, vehicle_operators
from tests.blender.scenes import chain_armature, new_scene, scene_state

PUBLIC = {ids.VALIDATE: "validate", ids.BAKE: "bake", ids.FREE_BAKE: "free_bake", ids.ADD_PRESET: "add_preset"}


@pytest.fixture(scope="module")
def registered():
    """Registered for the module, starting from a clean slate (the install test expects one)."""
    assert not hasattr(bpy.types.Scene, "symplex"), "add-on left registered by an earlier test module"
    addon.register()
    try:
        yield
    finally:
        addon.unregister()


def operator(idname: str):
    category, name = idname.split(".")
    return getattr(getattr(bpy.ops, category), name)


def test_register_unregister_register_in_one_process():
    addon.register()
    addon.unregister()
    assert not hasattr(bpy.types, "SYMPLEX_PT_sidebar")
    assert not hasattr(bpy.types.Scene, "symplex") and not hasattr(bpy.types.WindowManager, "symplex_bake")
    addon.register()
    try:
        assert hasattr(bpy.types, "SYMPLEX_PT_sidebar")
    finally:
        addon.unregister()


def test_panels_and_operators(registered):
    panel = bpy.types.SYMPLEX_PT_sidebar
    assert (panel.bl_space_type, panel.bl_region_type, panel.bl_category) == ("VIEW_3D", "UI", "Symplex")
    assert bpy.types.SYMPLEX_PT_object_physics.bl_context == "physics"
    assert bpy.types.SYMPLEX_PT_bone.bl_context == "bone"
    for name, idname in vars(ids).items():
        if not name.isupper():
            continue
        rna = operator(idname).get_rna_type()
        assert rna.identifier == "SYMPLEX_OT_" + idname.split(".")[1]
        cls = getattr(bpy.types, rna.identifier)
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options), idname
        assert rna.description, f"{idname} needs a tooltip"


def test_polls_explain_themselves(registered):
    scene = new_scene("poll")
    with bpy.context.temp_override(scene=scene):
        for idname in (ids.VALIDATE, ids.BAKE, ids.FREE_BAKE):
            assert not operator(idname).poll()
            with pytest.raises(RuntimeError, match="Add a Symplex setup first"):
                operator(idname)()


def test_add_preset_menu_lists_every_preset(registered):
    from addon.ui.operators import _preset_items

    assert [item[0] for item in _preset_items(None, bpy.context)] == list_presets()
    assert bpy.types.SYMPLEX_MT_add_preset.bl_idname == "SYMPLEX_MT_add_preset"


def test_setup_and_loop_list_operators(registered):
    scene = new_scene("lists")
    arm, _setup = chain_armature(scene, n=2)
    scene.symplex.setups.clear()
    with bpy.context.temp_override(scene=scene, active_object=arm, object=arm):
        assert bpy.ops.symplex.setup_add() == {"FINISHED"}
        setup = scene.symplex.setups[0]
        assert (setup.kind, setup.armature, setup.name) == ("ARMATURE", arm, arm.name)
        assert bpy.ops.symplex.loop_add() == {"FINISHED"}
        assert len(arm.data.symplex.loops) == 1
        assert bpy.ops.symplex.loop_remove() == {"FINISHED"}
        assert len(arm.data.symplex.loops) == 0
        assert bpy.ops.symplex.setup_remove() == {"FINISHED"}
        assert len(scene.symplex.setups) == 0


@pytest.mark.parametrize("variant", ["RIGID_BODIES", "ARMATURE"])
def test_add_preset_validate_bake_free(registered, variant):
    scene = new_scene(f"ops_{variant.lower()}", frames=20)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_preset(preset="chain_5", variant=variant) == {"FINISHED"}
        setup = scene.symplex.setups[scene.symplex.active_setup]
        assert bpy.ops.symplex.validate() == {"FINISHED"}
        before = scene_state(scene)
        assert bpy.ops.symplex.bake() == {"FINISHED"}
        assert setup.diagnostics.status == "finished" and setup.diagnostics.keys > 0
        assert setup.diagnostics.max_residual < 1e-8 and setup.diagnostics.steps == 19 * setup.substeps
        baked = [o for o in scene.objects if compat.assigned(o) is not None]
        assert baked and all(compat.assigned(o).action.name.startswith("Symplex") for o in baked)
        assert bpy.ops.symplex.free_bake() == {"FINISHED"}
        after = scene_state(scene)
        before.pop(f"setup {setup.name}")
        after.pop(f"setup {setup.name}")
        assert after == before
        assert bpy.ops.symplex.free_bake() == {"CANCELLED"}  # nothing left to free


def test_key_settings_reach_the_bake(registered):
    """Key Subframes, Reduce Keys and Reduce Tolerance are setup settings with tooltips, honoured by Bake."""
    from addon.ui.properties import SymplexSetup

    rna = SymplexSetup.bl_rna.properties
    for name in ("substeps", "tolerance", "subframes", "reduce", "reduce_tolerance"):
        assert rna[name].description, f"setting {name} needs a tooltip"
    scene = new_scene("keys", frames=20)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.add_preset(preset="chain_5", variant="ARMATURE") == {"FINISHED"}
        setup = scene.symplex.setups[scene.symplex.active_setup]
        arm = setup.armature
        counts = {}
        for subframes, reduce in ((False, False), (True, False), (False, True)):
            setup.subframes, setup.reduce, setup.reduce_tolerance = subframes, reduce, 1e-3
            assert bpy.ops.symplex.bake() == {"FINISHED"}
            counts[subframes, reduce] = {len(fc.keyframe_points) for fc in compat.fcurves(compat.assigned(arm))}
    assert counts[False, False] == {20}  # one key per frame on every channel
    assert counts[True, False] == {19 * setup.substeps + 1}  # one per solver step
    assert max(counts[False, True]) < 20 and min(counts[False, True]) >= 2


def test_validate_reports_every_problem_by_name(registered):
    scene = new_scene("report")
    arm, setup = chain_armature(scene, n=2)
    arm.pose.bones["b1"].rotation_mode = "QUATERNION"
    arm.pose.bones["b1"].lock_rotation = (False, False, True)
    loop = arm.data.symplex.loops.add()
    loop.name, loop.bone_a = "dangling", "nope"
    with bpy.context.temp_override(scene=scene), pytest.raises(RuntimeError) as err:
        bpy.ops.symplex.validate()
    assert "bone 'b1' (QUATERNION)" in str(err.value) and "loop 'dangling'" in str(err.value)


def test_bake_reports_scene_errors_and_changes_nothing(registered):
    scene = new_scene("bad")
    arm, _setup = chain_armature(scene, n=2)
    arm.pose.bones["b1"].constraints.new("COPY_LOCATION")
    before = scene_state(scene)
    with bpy.context.temp_override(scene=scene), pytest.raises(RuntimeError, match="bone 'b1': bone constraints"):
        bpy.ops.symplex.bake()
    assert scene_state(scene) == before


@pytest.mark.parametrize("idname", [vehicle_operators.BAKE_VEHICLE, vehicle_operators.FREE_VEHICLE_BAKE])
def test_vehicle_operators_name_a_missing_chassis(registered, idname):
    scene = new_scene("no_chassis")
    arm, _setup = chain_armature(scene, n=1)  # something active, so the poll passes
    with (bpy.context.temp_override(scene=scene, active_object=arm),
          pytest.raises(RuntimeError, match="No chassis object 'nope' in scene")):
        operator(idname)(chassis="nope")

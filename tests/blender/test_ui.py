"""The UI in real Blender: registration cycles, operator flags and polls, and every operator end to end.

Runs under bpy 5.0 and 4.2. Panels are drawn (into a recorder) in test_ui_reach.py. The modal path of
Bake needs a window; its chunked stepping and cancel are the BakeJob tested in test_bake.py.
"""

from __future__ import annotations

import dataclasses
import re

import bpy
import numpy as np
import pytest

import addon
from addon.bridge import compat
from addon.solver.presets import list_presets
from addon.ui import ids
from tests.blender.scenes import bone_world, chain_armature, new_scene, object_world, scene_state, set_frame

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



def test_symplex_sidebar_panel_comes_first_then_vehicle_then_shot(monkeypatch):
    """Blender places a region's panels by bl_order, ties in registration order: the main Symplex panel
    heads the tab, above the Vehicle panel and the (closed) Shot panel."""
    order = []
    register_class = bpy.utils.register_class

    def recording(cls):
        order.append(cls)
        register_class(cls)

    monkeypatch.setattr(bpy.utils, "register_class", recording)
    addon.register()
    addon.unregister()
    tab = [cls for cls in order if issubclass(cls, bpy.types.Panel) and getattr(cls, "bl_category", "") == "Symplex"
           and cls.bl_region_type == "UI" and not getattr(cls, "bl_parent_id", "")]
    placed = sorted(tab, key=lambda cls: (getattr(cls, "bl_order", 0), order.index(cls)))
    assert [cls.__name__ for cls in placed] == ["SYMPLEX_PT_sidebar", "SYMPLEX_PT_vehicle", "SYMPLEX_PT_shot"]

# Operators that only read the scene: no undo step (test_validate_changes_nothing shows it for Validate).
READ_ONLY = {ids.VALIDATE}


def test_panels_and_operators(registered):
    panel = bpy.types.SYMPLEX_PT_sidebar
    assert (panel.bl_space_type, panel.bl_region_type, panel.bl_category) == ("VIEW_3D", "UI", "Symplex")
    assert bpy.types.SYMPLEX_PT_object_physics.bl_context == "physics"
    assert bpy.types.SYMPLEX_PT_bone.bl_context == "bone"
    for name, idname in vars(ids).items():
        if name.isupper():
            assert operator(idname).get_rna_type().identifier == "SYMPLEX_OT_" + idname.split(".")[1]


def test_undo_exactly_on_the_operators_that_change_the_scene(registered):
    """Every registered operator is in F3's history (REGISTER) and has a tooltip; all but the read-only ones push
    an undo step, and those push none (an undo step that changes nothing only makes Ctrl+Z look broken)."""
    for name in dir(bpy.ops.symplex):
        idname = f"symplex.{name}"
        rna = operator(idname).get_rna_type()
        options = set(getattr(bpy.types, rna.identifier).bl_options)
        assert "REGISTER" in options and rna.description, idname
        assert ("UNDO" in options) == (idname not in READ_ONLY), f"{idname}: bl_options {sorted(options)}"


def data_blocks() -> set[tuple[str, str]]:
    """(collection, name) of every data-block in the file."""
    return {(attr, block.name) for attr in dir(bpy.data)
            if isinstance(collection := getattr(bpy.data, attr), bpy.types.bpy_prop_collection)
            and attr != "window_managers" for block in collection}


def test_validate_changes_nothing(registered):
    scene = new_scene("validate")
    chain_armature(scene, n=2)
    before, blocks = scene_state(scene), data_blocks()
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.validate() == {"FINISHED"}
    assert scene_state(scene) == before and data_blocks() == blocks


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


def test_add_setup_twice_does_not_duplicate(registered):
    scene = new_scene("twice")
    arm, _setup = chain_armature(scene, n=2)
    body = bpy.data.objects.new("body", None)
    collection = bpy.data.collections.new("rig")
    scene.collection.children.link(collection)
    collection.objects.link(body)
    scene.symplex.setups.clear()
    for active, what in ((arm, f"Armature {arm.name!r}"), (body, "Collection 'rig'")):
        with bpy.context.temp_override(scene=scene, active_object=active, object=active):
            assert bpy.ops.symplex.setup_add() == {"FINISHED"}
            count = len(scene.symplex.setups)
            with pytest.raises(RuntimeError, match=f"{what} already has setup {scene.symplex.setups[-1].name!r}"):
                bpy.ops.symplex.setup_add()
        assert len(scene.symplex.setups) == count
    assert [(s.kind, s.name) for s in scene.symplex.setups] == [("ARMATURE", arm.name), ("RIGID_BODIES", "rig")]


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
    for name in ("order", "substeps", "tolerance", "subframes", "reduce", "reduce_tolerance"):
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


@pytest.mark.parametrize("idname", [ids.BAKE_VEHICLE, ids.FREE_VEHICLE_BAKE])
def test_vehicle_operators_name_a_missing_chassis(registered, idname):
    scene = new_scene("no_chassis")
    arm, _setup = chain_armature(scene, n=1)  # something active, so the poll passes
    with (bpy.context.temp_override(scene=scene, active_object=arm),
          pytest.raises(RuntimeError, match="No chassis object 'nope' in scene")):
        operator(idname)(chassis="nope")


@pytest.mark.parametrize("variant", ["ARMATURE", "RIGID_BODIES"])
def test_a_refused_preset_changes_nothing_and_says_why(registered, variant):
    """Every preset either builds or is refused with the reason, leaving no object, data-block or setup behind."""
    refused = {}
    for preset in list_presets():
        scene = new_scene(f"refuse_{preset}")
        before, blocks = scene_state(scene), data_blocks()
        with bpy.context.temp_override(scene=scene):
            try:
                assert bpy.ops.symplex.add_preset(preset=preset, variant=variant) == {"FINISHED"}
                continue
            except RuntimeError as err:
                refused[preset] = str(err)
        assert (scene_state(scene), data_blocks(), len(scene.objects)) == (before, blocks, 0), preset
        assert scene.rigidbody_world is None and len(scene.symplex.setups) == 0, preset
    as_what = "an armature" if variant == "ARMATURE" else "rigid bodies"
    for preset, message in refused.items():
        assert f"Preset {preset!r} cannot be added as {as_what}: " in message, message
    if variant == "ARMATURE":  # prismatic limits, motors and colliders have no bone equivalent
        assert "joint 'cart_slide': limits on a prismatic joint cannot be built on a bone" in refused["cart_pole"]
        assert "joint 'rail': limits on a prismatic joint" in refused["crane"]
        assert "bones do not collide" in refused["box_drop"]


def test_a_mechanism_rigid_bodies_cannot_carry_is_refused_before_building():
    """A torque motor fails on the second joint, after the first could have been built: nothing may be."""
    from addon.bridge import build
    from addon.solver.model import Curve, Motor
    from tools import generate

    chain = generate.pendulum_chain(2)
    torque = Motor(mode="torque", torque=Curve((0.0, 1.0), (1.0, 1.0)))
    mech = chain.replace(joints=(chain.joints[0], dataclasses.replace(chain.joints[1], motor=torque)))
    scene = new_scene("torque")
    blocks = data_blocks()
    with pytest.raises(build.BuildError, match=f"joint {chain.joints[1].name!r}: only velocity motors"):
        build.build_rigid_bodies(scene, mech)
    assert data_blocks() == blocks and scene.rigidbody_world is None and len(scene.symplex.setups) == 0


CURSOR = (1.5, -2.0, 0.75)


def base_name(obj) -> str:
    """The object's name without the .001 Blender adds when another scene already has the name."""
    return re.sub(r"\.\d{3}$", "", obj.name)


@pytest.mark.parametrize("variant", ["RIGID_BODIES", "ARMATURE"])
def test_add_preset_at_the_cursor_selected_and_active(registered, variant):
    """As Blender's Add menu (Align: World): at the cursor's location, not turned by its rotation; the new root is the
    one selected object and the active one. The motion is the one at the origin, moved by the cursor."""
    frames = 12
    scenes = [new_scene(f"cursor_{variant.lower()}", frames=frames) for _ in range(2)]
    other = bpy.data.objects.new("other", None)
    scenes[1].collection.objects.link(other)
    scenes[1].view_layers[0].objects.active = other
    other.select_set(True, view_layer=scenes[1].view_layers[0])
    scenes[1].cursor.location = CURSOR
    scenes[1].cursor.rotation_euler = (0.3, -0.2, 0.5)
    worlds = []
    for scene in scenes:
        with bpy.context.temp_override(scene=scene):
            assert bpy.ops.symplex.add_preset(preset="double_pendulum", variant=variant) == {"FINISHED"}
            setup = scene.symplex.setups[scene.symplex.active_setup]
            layer = bpy.context.view_layer
            assert layer.objects.active == setup.root
            assert [o.name for o in layer.objects if o.select_get()] == [setup.root.name]
            assert bpy.ops.symplex.bake() == {"FINISHED"}
        moving = [o for o in scene.objects if compat.assigned(o) is not None]
        assert moving
        worlds.append({})
        for frame in (1, frames // 2, frames):
            set_frame(scene, frame)
            for obj in moving:
                if obj.type == "ARMATURE":
                    worlds[-1].update({(b.name, frame): bone_world(scene, obj, b.name) for b in obj.pose.bones})
                else:
                    worlds[-1][base_name(obj), frame] = object_world(scene, obj)
    assert worlds[0].keys() == worlds[1].keys()
    moved = np.eye(4)
    moved[:3, 3] = CURSOR
    for key, at_origin in worlds[0].items():
        np.testing.assert_allclose(worlds[1][key], moved @ at_origin, atol=1e-5, err_msg=str(key))
    assert not np.allclose(worlds[0][next(k for k in worlds[0] if k[1] == 1)],
                           worlds[0][next(k for k in worlds[0] if k[1] == frames)])  # it did move


@pytest.mark.parametrize("variant", ["RIGID_BODIES", "ARMATURE"])
def test_every_preset_is_built_at_the_cursor_as_at_the_origin_moved(registered, variant):
    """Bodies, ground, world colliders, constraint and motor empties and driven bodies' keys all move with the
    cursor; nothing turns."""
    moved = np.eye(4)
    moved[:3, 3] = CURSOR
    built = 0
    for preset in list_presets():
        worlds = []
        for location in ((0.0, 0.0, 0.0), CURSOR):
            scene = new_scene(f"at_{preset}")
            scene.cursor.location = location
            with bpy.context.temp_override(scene=scene):
                try:
                    bpy.ops.symplex.add_preset(preset=preset, variant=variant)
                except RuntimeError:  # refused: test_a_refused_preset_changes_nothing_and_says_why
                    break
            set_frame(scene, scene.frame_start + 3)
            worlds.append({base_name(obj): object_world(scene, obj) for obj in scene.objects})
        if len(worlds) < 2:
            continue
        built += 1
        assert worlds[0].keys() == worlds[1].keys(), preset
        for name, at_origin in worlds[0].items():
            np.testing.assert_allclose(worlds[1][name], moved @ at_origin, atol=1e-5, err_msg=f"{preset}: {name}")
    assert built >= 10

"""The Vehicle panel and Add Vehicle Rig in real Blender: every preset added, selected alone and baked next.

Runs under bpy 5.0 and 4.2. Blender lays out panels only while it draws a window region, so the panel's
draw() runs here against `Layout`, which records what it is asked to draw (menus, labels, operators
with their properties) in place of a UILayout; the scene, the rigs, the context and the operators are real.
"""

from __future__ import annotations

from types import SimpleNamespace

import bpy
import pytest

from addon.bridge import compat, vehicle_rig, vehicle_setup
from addon.ui import ids, vehicle_operators
from addon.ui.panels import setups as setup_panels, vehicle as vehicle_panel
from tests.blender.scenes import new_scene, scene_state, symplex  # noqa: F401


class Layout:
    """What a panel or menu draws, in order: ('menu', idname, text), ('label', text), ('operator', idname,
    properties set on it)."""

    def __init__(self):
        self.items: list[tuple] = []

    def menu(self, idname, text="", icon="NONE"):
        self.items.append(("menu", idname, text))

    def label(self, text="", icon="NONE"):
        self.items.append(("label", text))

    def operator(self, idname, text="", icon="NONE"):
        props = SimpleNamespace()
        self.items.append(("operator", idname, props))
        return props

    def prop(self, data, name, text=""):
        assert name in data.bl_rna.properties, name
        self.items.append(("prop", data, name))

    def box(self):
        return self

    def row(self, align=False, heading=""):
        return self

    def operators(self) -> dict[str, SimpleNamespace]:
        return {item[1]: item[2] for item in self.items if item[0] == "operator"}

    def labels(self) -> list[str]:
        return [item[1] for item in self.items if item[0] == "label"]


def draw_panel(context) -> Layout:
    layout = Layout()
    vehicle_panel.SYMPLEX_PT_vehicle.draw(SimpleNamespace(layout=layout), context)
    return layout


def _add(scene, **kw) -> bpy.types.Object:
    """Add Vehicle Rig in `scene`; returns the view layer's active object afterwards."""
    layer = scene.view_layers[0]
    with bpy.context.temp_override(scene=scene, view_layer=layer):
        assert bpy.ops.symplex.add_vehicle(**kw) == {"FINISHED"}
    return layer.objects.active


def test_panel_and_menus_are_registered_in_the_sidebar_and_the_add_menu(symplex):
    panel = bpy.types.SYMPLEX_PT_vehicle
    assert (panel.bl_space_type, panel.bl_region_type, panel.bl_category) == ("VIEW_3D", "UI", "Symplex")
    add_menu = bpy.types.VIEW3D_MT_add._dyn_ui_initialize()  # the draw functions appended to Add, in order
    assert add_menu.index(vehicle_panel.add_menu) == add_menu.index(setup_panels.add_menu) + 1
    entry = Layout()
    vehicle_panel.add_menu(SimpleNamespace(layout=entry), bpy.context)
    assert entry.items == [("menu", "SYMPLEX_MT_add_vehicle", "")]
    layout = Layout()
    vehicle_panel.SYMPLEX_MT_add_vehicle.draw(SimpleNamespace(layout=layout), bpy.context)
    presets = [props.preset for _kind, idname, props in layout.items if idname == ids.ADD_VEHICLE]
    assert presets == [name for name, _label, _ in vehicle_operators.PRESETS]
    assert {"sedan", "car_trailer", "helicopter", "speedboat", "hovercraft", "tank", "snakeboard"} <= set(presets)


@pytest.mark.parametrize("preset", [name for name, _label, _ in vehicle_operators.PRESETS])
def test_every_preset_is_added_selected_alone_and_baked_by_the_next_bake(symplex, preset):
    scene = new_scene(f"add {preset}", frames=25, fps=24)
    label = vehicle_operators.preset_label(preset)
    chassis = _add(scene, preset=preset)
    assert chassis is not None and chassis.name.split(".")[0] == label
    layer = scene.view_layers[0]
    assert [o.name for o in layer.objects if o.select_get(view_layer=layer)] == [chassis.name]
    with bpy.context.temp_override(scene=scene, view_layer=layer, active_object=chassis, object=chassis):
        before = draw_panel(bpy.context)
        assert before.items[0] == ("menu", "SYMPLEX_MT_add_vehicle", "Add Vehicle Rig")
        assert "Not baked" in before.labels()
        assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
        drawn = draw_panel(bpy.context)
    assert compat.assigned(chassis).action.name.startswith("Symplex")
    summary = chassis[vehicle_setup.RESULT_PROPERTY]
    assert summary.startswith("Baked") and repr(chassis.name) in summary
    kind = vehicle_setup.kind(chassis)
    assert kind == {"car_trailer": "car + trailer", "sedan": "car", "kart": "car", "truck": "car",
                    "speedboat": "boat"}.get(preset, preset)
    assert f"{chassis.name}: {kind}" in drawn.labels() and summary in drawn.labels()
    drawn_props = [item[2] for item in drawn.items if item[0] == "prop" and item[1] == chassis.symplex]
    assert drawn_props == ["start_from_animation", "use_frame_range", "frame_start", "frame_end", "blend_frames"]
    ops = drawn.operators()
    assert set(ops) == {ids.BAKE_VEHICLE, ids.FREE_VEHICLE_BAKE} | ({ids.DRIVE_VEHICLE} if kind in vehicle_setup.DRIVABLE
                                                                  else set())
    assert all(props.chassis == chassis.name for props in ops.values())


def test_panel_acts_on_the_rig_of_a_selected_part_and_free_forgets_the_summary(symplex):
    scene = new_scene("panel part", frames=25, fps=24)
    chassis = _add(scene, preset="kart", name="Front Left Car")
    wheel = next(o for o in chassis.children if o.name.endswith("wheel_rr"))
    before = scene_state(scene)
    with bpy.context.temp_override(scene=scene, active_object=wheel, object=wheel):
        assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
        drawn = draw_panel(bpy.context)
        assert drawn.operators()[ids.BAKE_VEHICLE].chassis == chassis.name
        assert bpy.ops.symplex.free_vehicle_bake() == {"FINISHED"}
        assert "Not baked" in draw_panel(bpy.context).labels()
    assert scene_state(scene) == before


def test_rig_names_never_give_parts_a_role(symplex):
    """Words of the rig's own name ('Trailer', 'Front Left') say nothing about its parts."""
    scene = new_scene("own names", frames=49, fps=24)
    for preset, name in (("car_trailer", "Car Trailer"), ("sedan", "Front Left Car"), ("kart", "Rear Trailer Wheel")):
        chassis = _add(scene, preset=preset, name=name)
        rig = vehicle_rig.find_rig(scene, chassis, "+X")
        assert [part.split(chassis.name)[-1].strip() for _, part in rig.wheels] == [
            "wheel_rl", "wheel_rr", "wheel_fl", "wheel_fr"]
        assert len(rig.trailer) == (3 if preset == "car_trailer" else 0)
        assert vehicle_setup.bake_rig(scene, chassis).distance > 1.0


def test_bake_on_a_plain_object_says_it_is_not_a_vehicle_rig(symplex):
    scene = new_scene("plain", frames=25, fps=24)
    cube = bpy.data.objects.new("Plain cube", vehicle_rig.box_mesh("Plain cube", (1.0, 1.0, 1.0)))
    scene.collection.objects.link(cube)
    before = scene_state(scene)
    with bpy.context.temp_override(scene=scene, active_object=cube, object=cube):
        with pytest.raises(RuntimeError, match="'Plain cube' is not a vehicle rig: it has no 'symplex_vehicle_preset' "
                                               "property .* and no wheels"):
            bpy.ops.symplex.bake_vehicle()
        assert "Plain cube: no stored preset" in draw_panel(bpy.context).labels()
    assert scene_state(scene) == before

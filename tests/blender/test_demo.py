"""The demo and the headless baker in real Blender (bpy 5.0 and 4.2).

run_demo builds, bakes, saves, renders and plots every demo preset; bake_file bakes every setup of a
saved file headless. Both load files, so this module runs its own registration and leaves none.
"""

from __future__ import annotations

import importlib.util

import bpy
import pytest

import numpy as np
from mathutils import Vector

from addon.bridge import compat, reference
from addon.bridge.build import build_rigid_bodies
from addon.bridge.headless import bake_file
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Joint, Mechanism
from addon.solver.presets import list_presets, list_vehicle_presets, preset_path
from demo.contact import CONTACT_DEMOS
from demo.scenes import DEMO_PRESETS, FRAMES, RENDER_FRAMES, VEHICLE_DEMOS, demo_scene, run_demo
from demo.stage import image_size, nice_step, stage
from tests.blender.scenes import (  # noqa: F401  (symplex: fixture)
    bake_to_end,
    chain_armature,
    evaluated,
    fcurve_data,
    new_scene,
    rigid_four_bar,
    set_frame,
    symplex,
)

SHIPPED = [p for p in DEMO_PRESETS if p in list_presets()]
VEHICLES = [name for name, preset in VEHICLE_DEMOS.items() if preset in list_vehicle_presets()]


@pytest.mark.slow
def test_demo_writes_blend_renders_and_plots(tmp_path, symplex):
    results = run_demo(tmp_path)
    assert [r.preset for r in results] == SHIPPED + VEHICLES, (tmp_path / "demo_report.txt").read_text()
    mechanisms, vehicles = results[:len(SHIPPED)], results[len(SHIPPED):]
    for result in vehicles:
        assert len(result.images) == len(RENDER_FRAMES)
        assert all(p.is_file() and p.stat().st_size > 1000 for p in result.images + (result.motion,))
        assert result.report.steps == (FRAMES - 1) * 4 and result.report.keys > 0
    by_name = {r.preset: r.report for r in vehicles}
    if "car_slalom" in by_name:
        assert by_name["car_slalom"].max_side_slip < 1e-9 and by_name["car_slalom"].distance > 20.0
    for name in ("helicopter", "speedboat"):
        if name in by_name:
            assert by_name[name].max_drift < 1e-12 and by_name[name].distance > 10.0
    for result in mechanisms:
        assert len(result.images) == len(RENDER_FRAMES)
        assert all(p.is_file() and p.stat().st_size > 1000 for p in result.images + (result.motion,))
        assert result.plot is None or result.plot.stat().st_size > 1000
        assert result.report.steps > 0 and result.report.max_residual < 1e-8
    report = (tmp_path / "demo_report.txt").read_text()
    assert all(preset in report for preset in SHIPPED)
    for preset in CONTACT_DEMOS:  # the contact scenes, each saved in its own file (demo/contact.py)
        assert f"{preset} (maximal, " in report and (tmp_path / f"{preset}.blend").is_file(), report
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "demo.blend"))
    names = {s.name for s in bpy.data.scenes}
    assert set(SHIPPED) <= names
    for preset in SHIPPED:
        scene = bpy.data.scenes[preset]
        assert (scene.frame_start, scene.frame_end) == (1, FRAMES)
        baked = [o for o in scene.objects if reference.baked_channels(o) is not None]
        assert baked, f"{preset}: nothing baked in demo.blend"
        root = scene.symplex.setups[0].root
        frames = fcurve_data(root)[('["symplex_energy"]', 0)][0::2]
        assert frames[0] == 1 and frames[-1] == FRAMES
    for name in VEHICLES:  # every vehicle stays inside its renders' frame
        scene = bpy.data.scenes[name]
        moving = [o for o in scene.objects if reference.baked_channels(o) is not None]
        assert moving, f"{name}: nothing baked in demo.blend"
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):  # evaluate this scene
            bpy.context.evaluated_depsgraph_get()
            uv = projected_motion(scene, evaluated(scene, scene.camera), moving, range(1, FRAMES + 1, 25))
        assert uv.min() > 0.0 and uv.max() < 1.0, (name, uv.min(axis=0), uv.max(axis=0))


def projected_motion(scene, camera, objects, frames) -> np.ndarray:
    """Image coordinates (0..1, 0..1) of every object's bounding box corners at `frames`, as Blender projects them."""
    from bpy_extras.object_utils import world_to_camera_view

    uv = []
    for frame in frames:
        set_frame(scene, frame)
        for obj in objects:
            matrix = evaluated(scene, obj).matrix_world
            uv += [tuple(world_to_camera_view(scene, camera, matrix @ Vector(c)))[:2] for c in obj.bound_box]
    return np.array(uv)


def spherical_pendulum() -> Mechanism:
    return Mechanism(
        "spherical pendulum",
        (Body("arm", 1.0, (0, 0, 0), com=(0, 0, -0.5), inertia=(0.08, 0.08, 0.001, 0, 0, 0)),
         Body("bob", 1.0, (0, 0, -1.0), inertia=(0.01, 0.01, 0.002, 0, 0, 0))),
        (Joint("shoulder", "ball", WORLD, "arm", (0, 0, 0), (0, 0, 1), q0=(0.6, 0, 0), v0=(0, 0, 2.0)),
         Joint("elbow", "revolute", "arm", "bob", (0, 0, -1.0), (1, 0, 0), q0=(0.3,), v0=(0.0,))),
    )


@pytest.mark.parametrize("mech", [load_mechanism(preset_path("four_bar")), spherical_pendulum()], ids=["planar", "3d"])
def test_stage_frames_the_whole_motion_centred_and_large(symplex, mech):
    """Every body stays inside the image at every frame; the motion fills most of it, centred."""
    scene = demo_scene(f"stage {mech.name}")
    scene.frame_end = 60
    built = build_rigid_bodies(scene, mech)
    report, _, bake_job = bake_to_end(scene, built.setup)
    assert report.max_residual < 1e-8
    objects = {name: bpy.data.objects[name] for name in built.objects.values()}
    staged = stage(scene, bake_job.trajectory(), objects, bake_job.read.mechanism, mech.name)
    assert staged.side_view == (mech.name != "spherical pendulum")
    uv = projected_motion(scene, staged.camera, list(objects.values()), range(1, 61, 3))
    assert uv.min() > 0.0 and uv.max() < 1.0, (uv.min(axis=0), uv.max(axis=0))
    span = uv.max(axis=0) - uv.min(axis=0)
    assert span.max() > 0.75, span  # large: the motion spans most of the image one way
    centre = (uv.max(axis=0) + uv.min(axis=0)) / 2
    assert abs(centre[0] - 0.5) < 0.1, centre  # centred left to right (a caption band sits on top)
    for name, obj in objects.items():
        assert tuple(obj.color)[:3] != (1.0, 1.0, 1.0), f"{name} has no colour of its own"
    if staged.side_view:
        assert staged.camera.data.type == "ORTHO"
        np.testing.assert_allclose(np.array(staged.camera.matrix_world)[:3, 2], (0, -1, 0), atol=1e-6)  # looks along +Y


def test_stage_helpers():
    assert image_size(1.0) == (960, 960) and image_size(10.0) == (960, 540) and image_size(0.1) == (540, 960)
    assert nice_step(8.0) == 1.0 and nice_step(1.9) == 0.2 and nice_step(0.4) == 0.05


def test_headless_bake_file_bakes_every_setup(tmp_path, symplex):
    # A file of this test's setups alone: the session holds other tests' scenes, some with setups that are
    # meant to be refused (which bake_file, baking every setup of the file, would then report).
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = new_scene("headless", frames=15)
    scene_name = scene.name
    arm, _ = chain_armature(scene, n=2)
    arm_name = arm.name
    _coll, four_bar, _bodies, _hinges = rigid_four_bar(scene)
    four_bar_name = four_bar.name
    source, out = tmp_path / "in.blend", tmp_path / "out.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source), check_existing=False)
    summary = bake_file(source, out)
    assert len([line for line in summary.splitlines() if line.startswith(f"{scene_name}: Baked")]) == 2
    assert (f"{scene_name}: Read {four_bar_name!r}: 3 bodies, 4 joints (4 revolute), 1 loop, 0 free bodies, "
            "0 prescribed joints") in summary.splitlines()
    bpy.ops.wm.open_mainfile(filepath=str(out))
    scene = bpy.data.scenes[scene_name]
    assert all(s.diagnostics.status == "finished" for s in scene.symplex.setups)
    assert compat.assigned(bpy.data.objects[arm_name]).action.name.startswith("Symplex")
    bpy.ops.wm.open_mainfile(filepath=str(source))  # the input file itself was not changed
    assert compat.assigned(bpy.data.objects[arm_name]) is None


def test_headless_bake_file_raises_naming_the_setup(tmp_path, symplex):
    scene = new_scene("headless_bad", frames=15)
    arm, setup = chain_armature(scene, n=2)
    arm.pose.bones["b1"].constraints.new("COPY_LOCATION")
    source = tmp_path / "bad.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source), check_existing=False)
    from addon.solver.model import MechanismError

    with pytest.raises(MechanismError, match="bone 'b1'"):
        bake_file(source, tmp_path / "never.blend")
    assert not (tmp_path / "never.blend").exists()


@pytest.mark.slow  # four rigs baked and rendered: about 30 s of CPU
def test_driving_demo_writes_its_pictures_and_bakes_its_rigs(tmp_path, symplex):
    """demo/driving.py: the scripted live take, the driver and the drift driver on the hairpin, the helicopter on its
    S and the speedboat on its bend, rendered and plotted."""
    from demo.driving import DOC_FIGURES, run_driving_demo
    from demo.plots import doc_figures

    lines: list[str] = []
    run_driving_demo(tmp_path, lines)
    assert [line.split(":")[0] for line in lines] == ["drive_live", "drive_path", "drive_drift", "drive_fly",
                                                      "drive_boat"]
    assert "take kept and baked" in lines[0] and "side slip" in lines[1] and "rear slip up to" in lines[2]
    assert "Baked helicopter" in lines[3] and "Baked boat" in lines[4]
    assert (tmp_path / "driving.blend").exists()
    for name in ("drive_live_motion", "drive_path_motion", "drive_drift_motion", "drive_fly_motion",
                 "drive_boat_motion"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    if importlib.util.find_spec("matplotlib") is None:  # the plots need matplotlib (not in every environment)
        return
    for name in DOC_FIGURES:
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    small = doc_figures(tmp_path, tmp_path / "img", DOC_FIGURES)
    assert all(path.stat().st_size < 300_000 for path in small)


@pytest.mark.heavy  # two small bakes, one render
def test_handover_demo_hands_the_throw_over_and_keeps_the_keys_outside_the_range(tmp_path, symplex):
    """demo/handover.py: with Start From Animation the thrown box's vertical velocity changes across the start frame
    only by gravity's g/fps (its keys' arc goes on); without it, by its whole keyed vertical speed more. The range
    bake keeps the artist's curve at every key outside the range and blend."""
    import re

    from demo.handover import DOC_FIGURES, FPS, GRAVITY, THROW_VELOCITY, run_handover_demo
    from demo.plots import doc_figures

    lines: list[str] = []
    run_handover_demo(tmp_path, lines)
    assert [line.split(":")[0] for line in lines] == ["handover_start", "handover_range"]
    on, off = (float(v) for v in re.findall(r"([0-9.]+) m/s (?:with|off)", lines[0]))
    assert on == pytest.approx(-GRAVITY / FPS, abs=2e-3)
    assert off == pytest.approx(THROW_VELOCITY[2] - GRAVITY / FPS, abs=2e-3)
    assert "the curve is the artist's at every frame (largest change" in lines[1]
    assert float(lines[1].split("largest change ")[1].split(" m)")[0]) < 1e-6
    assert (tmp_path / "handover.blend").exists() and (tmp_path / "handover_start_motion.png").stat().st_size > 10_000
    if importlib.util.find_spec("matplotlib") is None:
        return
    small = doc_figures(tmp_path, tmp_path / "img", DOC_FIGURES)
    assert all(10_000 < path.stat().st_size < 200_000 for path in small)

"""The demo and the headless baker in real Blender (bpy 5.0 and 4.2).

run_demo builds, bakes, saves, renders and plots every demo preset; bake_file bakes every setup of a
saved file headless. Both load files, so this module runs its own registration and leaves none.
"""

from __future__ import annotations

import bpy
import pytest

from addon.bridge import compat, reference
from addon.bridge.headless import bake_file
from addon.demo import DEMO_PRESETS, FRAMES, RENDER_FRAMES, run_demo
from addon.solver.mechfile import list_presets
from tests.blender.scenes import chain_armature, fcurve_data, new_scene, rigid_four_bar, symplex  # noqa: F401

SHIPPED = [p for p in DEMO_PRESETS if p in list_presets()]


def test_demo_writes_blend_renders_and_plots(tmp_path, symplex):
    results = run_demo(tmp_path)
    assert [r.preset for r in results] == SHIPPED, (tmp_path / "demo_report.txt").read_text()
    for result in results:
        assert len(result.images) == len(RENDER_FRAMES)
        assert all(p.is_file() and p.stat().st_size > 1000 for p in result.images)
        assert result.plot is None or result.plot.stat().st_size > 1000
        assert result.report.steps > 0 and result.report.max_residual < 1e-8
    report = (tmp_path / "demo_report.txt").read_text()
    assert all(preset in report for preset in SHIPPED)
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


def test_headless_bake_file_bakes_every_setup(tmp_path, symplex):
    scene = new_scene("headless", frames=15)
    scene_name = scene.name
    arm, _ = chain_armature(scene, n=2)
    arm_name = arm.name
    rigid_four_bar(scene)
    source, out = tmp_path / "in.blend", tmp_path / "out.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source), check_existing=False)
    summary = bake_file(source, out)
    assert len([line for line in summary.splitlines() if line.startswith(f"{scene_name}: Baked")]) == 2
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

"""The Flamenco job type (tools/flamenco/symplex_bake.js): node evaluates it with a minimal stand-in for the
Manager's `author` object, and the task's command line runs here on a saved scene, with bpy standing in for the
`blender` executable (blender_stand_in.py) and the checkout installed as the Symplex extension."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

from tests.blender.scenes import new_scene, rigid_four_bar, symplex  # noqa: F401  (fixture)

from .conftest import REPO

JOB_TYPE = REPO / "tools" / "flamenco" / "symplex_bake.js"
HERE = Path(__file__).resolve().parent
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is needed to evaluate the Flamenco job type")


def authored(tmp_path: Path, settings: dict) -> dict:
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    result = subprocess.run([NODE, str(HERE / "flamenco_author.js"), str(JOB_TYPE), str(tmp_path / "settings.json")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def command_line(parameters: dict) -> list[str]:
    """What Flamenco's Worker runs for a blender-render command: {exe} {exeArgs} {argsBefore} {blendfile} {args},
    with the Manager's default {blenderArgs} ("-b -y")."""
    exe_args = parameters["exeArgs"].replace("{blenderArgs}", "-b -y").split()
    return [parameters["exe"], *exe_args, *parameters["argsBefore"], parameters["blendfile"], *parameters["args"]]


def run_task(argv: list[str]) -> subprocess.CompletedProcess:
    """The task's command line with this Python + bpy in place of the `blender` executable."""
    assert argv[0] == "{blender}"
    return subprocess.run([sys.executable, str(HERE / "blender_stand_in.py"), *argv[1:]], capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def keyframes(path: Path) -> int:
    """Keyframes on every F-curve of every action in the .blend at `path` (legacy and slotted actions)."""
    with bpy.data.libraries.load(str(path)) as (source, target):
        target.actions = list(source.actions)
    total = 0
    for action in target.actions:
        if getattr(action, "layers", None):
            total += sum(len(fc.keyframe_points) for layer in action.layers for strip in layer.strips
                         for bag in strip.channelbags for fc in bag.fcurves)
        else:
            total += sum(len(fc.keyframe_points) for fc in action.fcurves)
    return total


@pytest.fixture(scope="module")
def four_bar(tmp_path_factory, symplex):  # noqa: F811
    path = tmp_path_factory.mktemp("flamenco") / "four_bar.blend"
    scene = new_scene("flamenco four-bar", frames=15)
    rigid_four_bar(scene)
    bpy.data.libraries.write(str(path), {scene}, fake_user=True)
    return path


def test_the_job_type_declares_its_settings_and_one_blender_task(tmp_path):
    job = authored(tmp_path, {"blendfile": "/farm/jobs/shot.blend", "output_dir": "/farm/baked",
                              "output_name": "shot_baked.blend"})
    assert job["job_type"]["label"] == "Symplex Bake"
    assert {s["key"] for s in job["job_type"]["settings"]} == {"blendfile", "output_dir", "output_name"}
    (task,) = job["tasks"]
    assert task["type"] == "blender" and [c["name"] for c in task["commands"]] == ["blender-render"]
    argv = command_line(task["commands"][0]["parameters"])
    assert argv[:4] == ["{blender}", "-b", "-y", "/farm/jobs/shot.blend"]
    assert argv[4:7] == ["--python-exit-code", "1", "--python-expr"]
    assert 'bake_open_file("/farm/baked/shot_baked.blend")' in argv[7]


def test_the_task_bakes_the_scene_and_saves_a_copy_with_keyframes(four_bar, tmp_path):
    out = tmp_path / "baked"
    job = authored(tmp_path, {"blendfile": str(four_bar), "output_dir": str(out), "output_name": "four_bar_baked.blend"})
    result = run_task(command_line(job["tasks"][0]["commands"][0]["parameters"]))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"-> {out / 'four_bar_baked.blend'}" in result.stdout
    assert [p.name for p in out.iterdir()] == ["four_bar_baked.blend"]
    assert keyframes(out / "four_bar_baked.blend") > 100


@pytest.mark.slow
def test_a_file_with_nothing_to_bake_fails_the_task(tmp_path, symplex):  # noqa: F811
    empty = tmp_path / "empty.blend"
    bpy.data.libraries.write(str(empty), {new_scene("flamenco empty")}, fake_user=True)
    job = authored(tmp_path, {"blendfile": str(empty), "output_dir": str(tmp_path / "baked"), "output_name": "e.blend"})
    result = run_task(command_line(job["tasks"][0]["commands"][0]["parameters"]))
    assert result.returncode == 2 and "nothing" in result.stderr.lower(), result.stderr[-2000:]
    assert not (tmp_path / "baked" / "e.blend").exists()

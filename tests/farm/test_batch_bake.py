"""`python -m addon bake A.blend B.blend ... --out-dir DIR` on a real Dask cluster, with scenes built by the
Blender tests' builders and saved here with bpy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import bpy
import pytest

from tests.blender.scenes import chain_armature, new_scene, rigid_four_bar, symplex  # noqa: F401  (fixture)

from .conftest import REPO, cli


@pytest.fixture(scope="module")
def scenes(tmp_path_factory, symplex):  # noqa: F811
    """Two scenes to bake (a rigid-body four-bar, an armature chain) and one with nothing to bake."""
    folder = tmp_path_factory.mktemp("scenes")
    four_bar = new_scene("farm four-bar", frames=15)
    rigid_four_bar(four_bar)
    chain = new_scene("farm chain", frames=15)
    chain_armature(chain, n=2)
    empty = new_scene("farm empty", frames=15)
    paths = folder / "four_bar.blend", folder / "chain.blend", folder / "empty.blend"
    for scene, path in zip((four_bar, chain, empty), paths):
        bpy.data.libraries.write(str(path), {scene}, fake_user=True)
    return paths


def test_a_batch_bakes_each_file_reports_the_failure_and_skips_finished_files(scenes, cluster, tmp_path):
    four_bar, chain, empty = scenes
    out = tmp_path / "baked"
    result = cli("bake", four_bar, chain, empty, "--out-dir", out, "--scheduler", cluster)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 3
    assert any(line.startswith(f"{four_bar}: baked in ") and str(out / "four_bar.blend") in line for line in lines)
    assert any(line.startswith(f"{chain}: baked in ") for line in lines)
    assert any(line.startswith(f"{empty}: FAILED") for line in lines)
    failure = result.stderr.strip().splitlines()[-1]
    assert failure.startswith("python -m addon bake: 1 of 3 files failed: empty.blend (") and "nothing" in failure
    assert sorted(os.listdir(out)) == ["chain.blend", "four_bar.blend"]  # no temporary or half-written file
    assert all((out / n).read_bytes()[:7] == b"BLENDER" for n in ("chain.blend", "four_bar.blend"))

    again = cli("bake", four_bar, chain, "--out-dir", out, "--scheduler", cluster)
    assert again.returncode == 0 and again.stdout.count("skipped") == 2, again.stdout + again.stderr


@pytest.mark.slow
def test_force_bakes_again_a_file_whose_output_is_newer(scenes, cluster, tmp_path):
    _, chain, _ = scenes
    out = tmp_path / "baked"
    assert cli("bake", chain, "--out-dir", out, "--scheduler", cluster).returncode == 0
    first = (out / "chain.blend").stat().st_mtime_ns
    assert "skipped" in cli("bake", chain, "--out-dir", out, "--scheduler", cluster).stdout
    forced = cli("bake", chain, "--out-dir", out, "--force", "--scheduler", cluster)
    assert forced.returncode == 0 and forced.stdout.startswith(f"{chain}: baked in "), forced.stderr
    assert (out / "chain.blend").stat().st_mtime_ns > first


def test_the_single_file_form_still_needs_out_and_one_scene(scenes, tmp_path):
    four_bar, chain, _ = scenes
    result = cli("bake", four_bar, chain, "--out", tmp_path / "x.blend")
    assert result.returncode == 2 and "--out-dir" in result.stderr


@pytest.mark.slow
def test_a_bake_process_that_dies_costs_only_its_file(scenes, cluster, tmp_path):
    """SIGKILL the child baking one file, as a Blender crash would end it: that file is reported, the other baked,
    and nothing half-written is left in DIR."""
    psutil = pytest.importorskip("psutil")
    four_bar, chain, _ = scenes
    out = tmp_path / "baked"
    batch = subprocess.Popen([sys.executable, "-m", "addon", "bake", str(four_bar), str(chain), "--out-dir", str(out),
                              "--scheduler", cluster], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, victim = time.monotonic() + 120, None
    while victim is None and time.monotonic() < deadline and batch.poll() is None:
        for process in psutil.process_iter(["cmdline"]):
            command = process.info["cmdline"] or []
            if "bake" in command and str(chain) in command and "--out" in command:
                victim = process
        time.sleep(0.05)
    assert victim is not None, "the child baking chain.blend was not seen"
    victim.send_signal(signal.SIGKILL)
    stdout, stderr = batch.communicate(timeout=600)
    assert batch.returncode == 1, stdout + stderr
    assert f"{chain}: FAILED" in stdout and "the bake process died (SIGKILL)" in stdout
    assert f"{four_bar}: baked in " in stdout
    assert sorted(os.listdir(out)) == ["four_bar.blend"]

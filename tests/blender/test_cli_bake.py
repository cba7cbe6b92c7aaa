"""`python -m addon bake` run as a user runs it (a subprocess of this interpreter), on files saved here with bpy.

Under bpy 4.2 these are the tests of the exit code after the add-on was registered: Blender 4.2 crashes at
interpreter exit (139) unless the command leaves through os._exit (docs/development.md), on failures too.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

from .scenes import new_scene, rigid_four_bar, symplex  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]


def bake(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "addon", "bake", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_failure(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m addon bake: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def four_bar_files(tmp_path_factory, symplex):  # noqa: F811
    """The rigid-body four-bar saved twice: with its Symplex setup, and without (a plain Rigid Body World)."""
    folder = tmp_path_factory.mktemp("cli_bake")
    scene = new_scene("cli four-bar", frames=25, fps=25)
    rigid_four_bar(scene)
    with_setup, without = folder / "four_bar.blend", folder / "rigid_bodies_only.blend"
    bpy.data.libraries.write(str(with_setup), {scene}, fake_user=True)
    scene.symplex.setups.clear()
    bpy.data.libraries.write(str(without), {scene}, fake_user=True)
    return with_setup, without


def test_bake_saves_a_baked_copy_and_leaves_the_input_alone(four_bar_files, tmp_path):
    source, _ = four_bar_files
    before = digest(source)
    out = tmp_path / "baked.blend"
    result = bake(source, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "four-bar" in result.stdout and f"-> {out}" in result.stdout
    assert out.is_file() and digest(out) != before
    assert digest(source) == before


def test_out_naming_the_input_is_refused_by_path_symlink_and_hard_link(four_bar_files, tmp_path):
    source, _ = four_bar_files
    before = digest(source)
    symlink, hard_link = tmp_path / "link.blend", tmp_path / "hard.blend"
    symlink.symlink_to(source)
    os.link(source, hard_link)
    relative = os.path.relpath(source, REPO)
    for out in (source, relative, symlink, hard_link):
        message = one_line_failure(bake(source, "--out", out), 2)
        assert "is the input file" in message, message
    assert digest(source) == before


def test_a_file_with_nothing_to_bake_is_exit_2_saying_what_it_holds(four_bar_files, tmp_path):
    _, source = four_bar_files
    out = tmp_path / "never.blend"
    message = one_line_failure(bake(source, "--out", out), 2)
    assert f"{source}: nothing to bake" in message
    # rigid_four_bar: ground (passive), crank, coupler, rocker and four hinges.
    assert "a Rigid Body World with 4 rigid bodies (1 passive) and 4 constraints" in message, message
    assert "add a Rigid Bodies setup" in message and "Symplex tab" in message
    assert not out.exists()


def test_a_damaged_blend_is_one_line_and_nothing_is_saved(four_bar_files, tmp_path):
    source, _ = four_bar_files
    damaged = tmp_path / "damaged.blend"
    damaged.write_bytes(source.read_bytes()[:400])
    out = tmp_path / "never.blend"
    message = one_line_failure(bake(damaged, "--out", out), 2)
    assert str(damaged) in message
    assert not out.exists()

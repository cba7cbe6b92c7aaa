"""Headless baking: open a .blend, bake every Symplex setup and vehicle rig of every scene, save the result.

Used by `python -m addon bake SCENE.blend --out BAKED.blend` (bake_file: registers the add-on for the run
when it is not registered already, and unregisters it afterwards, so it works in a bare `bpy`) and by render
farms (bake_open_file: the stable entry point a `blender --background FILE --python-expr ...` task calls on
the file Blender has open, with the extension installed; tools/flamenco/symplex_bake.js, docs/farm.md).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import bpy

from ..solver.model import MechanismError
from ..solver.trajectory import SolverError
from .contents import nothing_to_bake
from .job import bake_setup, bake_vehicle_rigs
from .read import SceneError


@contextlib.contextmanager
def registered():
    """The Symplex property groups and operators, registered for the duration if they were not."""
    if hasattr(bpy.types.Scene, "symplex"):
        yield
        return
    from .. import register, unregister

    register()
    try:
        yield
    finally:
        unregister()


def _reason(exc: RuntimeError) -> str:
    """The last line of a bpy operator's error ("Error: Cannot open file ...")."""
    lines = str(exc).strip().splitlines()
    return lines[-1] if lines else type(exc).__name__


def _bake_open_file(label: str | Path) -> list[str]:
    """Bake every setup and vehicle rig of the open file; one summary line each (a setup's followed by what
    it read, summary.py). SceneError naming `label` when there is nothing to bake."""
    lines = []
    for scene in bpy.data.scenes:
        for setup in list(scene.symplex.setups):
            lines.append(f"{scene.name}: {bake_setup(scene, setup.name).summary()}")
            lines += [f"{scene.name}: {line}" for line in setup.diagnostics.read.splitlines()]  # what it read
        lines += [f"{scene.name}: {line}" for line in bake_vehicle_rigs(scene)]
    if not lines:
        raise SceneError([nothing_to_bake(label)])
    return lines


def bake_file(in_path: str | Path, out_path: str | Path) -> str:
    """Bake every setup and vehicle rig in `in_path` and save to `out_path`; returns one summary line each.

    Raises MechanismError (SceneError) or SolverError naming the setup; nothing is saved then. A file Blender
    cannot open, or one with nothing to bake, is a SceneError too (the latter says what the file holds).
    """
    in_path, out_path = Path(in_path), Path(out_path)
    with registered():
        try:
            bpy.ops.wm.open_mainfile(filepath=str(in_path), load_ui=False)
        except RuntimeError as exc:
            raise SceneError([f"{in_path}: Blender cannot open it: {_reason(exc)}"]) from None
        lines = _bake_open_file(in_path)
        try:
            bpy.ops.wm.save_as_mainfile(filepath=str(out_path.resolve()), check_existing=False)
        except RuntimeError as exc:
            raise SceneError([f"{out_path}: Blender cannot save it: {_reason(exc)}"]) from None
    return "\n".join(lines)


def bake_open_file(out_path: str | Path) -> int:
    """Bake the file Blender has open and save a copy to `out_path`; returns the exit code (0 baked, 1 a bake
    failed, 2 nothing to bake or an unusable setup or path). For `sys.exit(...)` in a farm task's
    `--python-expr`: the summary lines go to stdout, a failure is one line on stderr.

    The copy is written into a hidden temporary folder beside `out_path` (whose folder is created) and renamed
    onto it, so `out_path` appears only complete; the open file keeps its own path (save as copy)."""
    out_path = Path(out_path).resolve()
    label = bpy.data.filepath or "the open file"
    try:
        with registered():
            lines = _bake_open_file(label)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        # a new file in a private folder beside out_path: Blender keeps no .blend1 backup of it, and the rename
        # stays on one file system
        with tempfile.TemporaryDirectory(prefix=".symplex-bake-", dir=out_path.parent) as folder:
            temp = os.path.join(folder, out_path.name)
            try:
                bpy.ops.wm.save_as_mainfile(filepath=temp, check_existing=False, copy=True)
            except RuntimeError as exc:
                raise SceneError([f"{out_path}: Blender cannot save it: {_reason(exc)}"]) from None
            os.replace(temp, out_path)
    except (MechanismError, OSError) as exc:
        print(f"symplex bake: {label}: {exc}".replace("\n", "; "), file=sys.stderr)
        return 2
    except SolverError as exc:
        print(f"symplex bake: {label}: {exc}".replace("\n", "; "), file=sys.stderr)
        return 1
    print("\n".join(lines))
    print(f"baked {label} -> {out_path}")
    return 0

"""Headless baking: open a .blend, bake every Symplex setup and vehicle rig of every scene, save the result.

Used by `python -m addon bake SCENE.blend --out BAKED.blend`. Registers the add-on for the run when
it is not registered already (and unregisters it afterwards), so it works in a bare `bpy`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import bpy

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


def bake_file(in_path: str | Path, out_path: str | Path) -> str:
    """Bake every setup and vehicle rig in `in_path` and save to `out_path`; returns one summary line each
    (a setup's followed by what it read, summary.py).

    Raises MechanismError (SceneError) or SolverError naming the setup; nothing is saved then. A file Blender
    cannot open, or one with nothing to bake, is a SceneError too (the latter says what the file holds).
    """
    in_path, out_path = Path(in_path), Path(out_path)
    with registered():
        try:
            bpy.ops.wm.open_mainfile(filepath=str(in_path), load_ui=False)
        except RuntimeError as exc:
            raise SceneError([f"{in_path}: Blender cannot open it: {_reason(exc)}"]) from None
        lines = []
        for scene in bpy.data.scenes:
            for setup in list(scene.symplex.setups):
                lines.append(f"{scene.name}: {bake_setup(scene, setup.name).summary()}")
                lines += [f"{scene.name}: {line}" for line in setup.diagnostics.read.splitlines()]  # what it read
            lines += [f"{scene.name}: {line}" for line in bake_vehicle_rigs(scene)]
        if not lines:
            raise SceneError([nothing_to_bake(in_path)])
        try:
            bpy.ops.wm.save_as_mainfile(filepath=str(out_path.resolve()), check_existing=False)
        except RuntimeError as exc:
            raise SceneError([f"{out_path}: Blender cannot save it: {_reason(exc)}"]) from None
    return "\n".join(lines)

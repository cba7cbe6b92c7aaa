"""Headless baking: open a .blend, bake every Symplex setup and vehicle rig of every scene, save the result.

Used by `python -m addon bake SCENE.blend --out BAKED.blend`. Registers the add-on for the run when
it is not registered already (and unregisters it afterwards), so it works in a bare `bpy`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import bpy

from .job import bake_setup, bake_vehicle_rigs


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


def bake_file(in_path: str | Path, out_path: str | Path) -> str:
    """Bake every setup and vehicle rig in `in_path` and save to `out_path`; returns one summary line each
    (a setup's followed by what it read, summary.py).

    Raises MechanismError (SceneError) or SolverError naming the setup; nothing is saved then.
    """
    in_path, out_path = Path(in_path), Path(out_path)
    with registered():
        bpy.ops.wm.open_mainfile(filepath=str(in_path), load_ui=False)
        lines = []
        for scene in bpy.data.scenes:
            for setup in list(scene.symplex.setups):
                lines.append(f"{scene.name}: {bake_setup(scene, setup.name).summary()}")
                lines += [f"{scene.name}: {line}" for line in setup.diagnostics.read.splitlines()]  # what it read
            lines += [f"{scene.name}: {line}" for line in bake_vehicle_rigs(scene)]
        if not lines:
            lines.append(f"{in_path}: no Symplex setups to bake")
        bpy.ops.wm.save_as_mainfile(filepath=str(out_path.resolve()), check_existing=False)
    return "\n".join(lines)

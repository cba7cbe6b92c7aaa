"""A stand-in for `blender [-b] [-y] FILE --python-exit-code N --python-expr EXPR` where there is no Blender
executable: this Python's bpy module does what those arguments ask, with the checkout installed and enabled
as the Symplex extension (a user extension repository holding a link to it), as on a farm Worker.

    python blender_stand_in.py --background -y scene.blend --python-exit-code 1 --python-expr "..."
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import bpy

CHECKOUT = Path(__file__).resolve().parents[2]
REPO_MODULE = "farm_worker"


def install_checkout() -> None:
    """Enable the checkout as bl_ext.<repo>.symplex, as Install from Disk leaves an extension."""
    bpy.context.preferences.use_preferences_save = False
    folder = Path(tempfile.mkdtemp(prefix="symplex-extensions-"))
    (folder / "symplex").symlink_to(CHECKOUT, target_is_directory=True)
    bpy.context.preferences.extensions.repos.new(name="farm worker", module=REPO_MODULE,
                                                 custom_directory=str(folder), source="USER")
    bpy.ops.preferences.addon_enable(module=f"bl_ext.{REPO_MODULE}.symplex")


def main(argv: list[str]) -> int:
    blendfile, expression, exit_code = None, None, 0
    args = iter(argv)
    for arg in args:
        if arg in ("-b", "--background", "-y", "--enable-autoexec"):
            continue
        if arg == "--python-exit-code":
            exit_code = int(next(args))
        elif arg == "--python-expr":
            expression = next(args)
        elif blendfile is None and not arg.startswith("-"):
            blendfile = arg
        else:
            raise SystemExit(f"blender_stand_in: unsupported argument {arg!r}")
    install_checkout()
    if blendfile is not None:
        bpy.ops.wm.open_mainfile(filepath=blendfile, load_ui=False)
    if expression is not None:
        try:
            exec(compile(expression, "<string>", "exec"), {"__name__": "__main__"})
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
                return 1
            return int(exc.code or 0)
        except Exception:
            import traceback

            traceback.print_exc()
            return exit_code
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

"""Symplex add-on package: registration entry points; the solver, bridge and UI live in subpackages.

Importing this package never imports bpy, so `python -m addon` (the CLI) and the solver tests run
without Blender. register()/unregister() import the UI lazily.
"""


def register() -> None:
    from . import ui

    ui.register()


def unregister() -> None:
    from . import ui

    ui.unregister()

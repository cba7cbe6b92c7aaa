"""Symplex user interface: registers its modules in order and unregisters them in reverse.

properties (property groups) must come first: operators and panels refer to them. vehicle_panel comes
after panels, so its Add > Vehicle Rig menu sits next to the Symplex preset menu. Errors propagate:
a half-registered add-on is worse than a failed registration.
"""

from __future__ import annotations

import importlib

MODULES = ("properties", "shot_properties", "operators", "vehicle_operators", "shot_operators", "panels",
           "vehicle_panel")


def _modules():
    return [importlib.import_module(f".{name}", __name__) for name in MODULES]


def register() -> None:
    for module in _modules():
        module.register()


def unregister() -> None:
    for module in reversed(_modules()):
        module.unregister()

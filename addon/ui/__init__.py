"""Symplex user interface: registers its modules in order and unregisters them in reverse.

Properties (property groups) come first: operators and panels refer to them. Operator idnames live in
ids.py; operators in one module per area (operators.py for setups, vehicle_operators.py,
shot_operators.py). All panels and menus are together in the panels package, one module per area:
an area's drawing stays a small module with one concern, like its operators, while the package
registers them and states, in one place, the order of the sidebar's panels and of the Add menu entries.
Errors propagate: a half-registered add-on is worse than a failed registration.
"""

from __future__ import annotations

import importlib

MODULES = ("properties", "shot_properties", "operators", "vehicle_operators", "shot_operators", "panels")


def _modules():
    return [importlib.import_module(f".{name}", __name__) for name in MODULES]


def register() -> None:
    for module in _modules():
        module.register()


def unregister() -> None:
    for module in reversed(_modules()):
        module.unregister()

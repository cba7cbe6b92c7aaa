"""Solve Shot: optimal-control shots for vehicle rigs (modal, progress in the status bar, Esc cancels).

Filled in by the shot work of issue 7; registered through ui/__init__.py MODULES.
"""

CLASSES: tuple = ()


def register() -> None:
    pass


def unregister() -> None:
    pass

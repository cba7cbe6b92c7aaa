"""Mechanism files (``format = 1``, TOML), one job per module.

format.py: the tables and keys a file may hold. read.py: text to a validated Mechanism. validate.py: the
checks every Mechanism must pass, with errors naming file and field. write.py: a Mechanism to text.
The shipped presets are found through ..presets.

The names below are re-exported for callers that still import them from here (ui/, __main__.py,
bridge/read.py, shots/mechanism_shots.py); new code imports from the module that owns the name.
"""

from ..presets import list_presets, preset_path
from .read import load_mechanism
from .validate import check_method, validate_mechanism

__all__ = ["check_method", "list_presets", "load_mechanism", "preset_path", "validate_mechanism"]

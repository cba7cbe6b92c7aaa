"""The bridge's mapping maths imports neither bpy nor mathutils, so it runs (and is tested) without Blender."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

PURE = ("addon.bridge.layouts", "addon.bridge.orient", "addon.bridge.shape_inertia", "addon.bridge.rotations",
        "addon.bridge.handback")


def test_the_mapping_modules_import_without_blender():
    check = (f"import sys\nfor m in {PURE!r}: __import__(m)\n"
             "print(sorted(m for m in ('bpy', 'mathutils') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", check], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

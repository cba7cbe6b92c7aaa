"""The built extension package installs, enables, works, disables and re-enables in real Blender.

Runs under bpy 5.0 and 4.2 (see conftest.py). The package is the one `make extension` ships for
this platform, installed through Blender's own operator into a temporary user repository, so
this is what an artist gets from "Install from Disk". The first test registers the checkout
directly, as a package, before anything is installed.
"""

from __future__ import annotations

import importlib
import os
import zipfile
from pathlib import Path

import addon_utils
import bpy
import pytest

REPO = Path(__file__).resolve().parents[2]
PANEL = "SYMPLEX_PT_sidebar"
OPERATORS = ("validate", "bake", "free_bake", "add_preset")
KERNEL_LIB = "addon/solver/native/libsymplex_kernels.so"


def registered() -> dict[str, bool]:
    """Which of the add-on's UI classes Blender knows right now."""
    state = {PANEL: hasattr(bpy.types, PANEL)}
    for name in OPERATORS:
        state[f"symplex.{name}"] = name in dir(bpy.ops.symplex)
    return state


def assert_registered():
    state = registered()
    assert all(state.values()), f"not registered: {[k for k, v in state.items() if not v]}"
    for name in OPERATORS:
        rna = getattr(bpy.ops.symplex, name).get_rna_type()
        assert rna.identifier == f"SYMPLEX_OT_{name}"


def assert_unregistered():
    state = registered()
    assert not any(state.values()), f"still registered: {[k for k, v in state.items() if v]}"


def test_checkout_registers_unregisters_and_registers_again(symplex_package):
    assert_unregistered()
    symplex_package.register()
    try:
        assert_registered()
        symplex_package.unregister()
        assert_unregistered()
        symplex_package.register()
        assert_registered()
    finally:
        symplex_package.unregister()
    assert_unregistered()


def test_package_holds_the_extension_and_nothing_else(extension_zip, manifest):
    names = set(zipfile.ZipFile(extension_zip).namelist())
    assert {"blender_manifest.toml", "__init__.py", "addon/__init__.py", "addon/solver/integrator.py"} <= names
    assert any(n.startswith("presets/") and n.endswith(".toml") for n in names)
    assert any(n.startswith("wheels/scipy-") for n in names)
    for excluded in ("tests/", "tools/", "docs/", "benchmarks/", ".ci/", ".venv", "out/", "dist/", "build/"):
        assert not any(n.startswith(excluded) for n in names), f"{excluded} must not be packaged"
    assert not any("__pycache__" in n or n.endswith(".npz") for n in names)
    assert (KERNEL_LIB in names) == (REPO / KERNEL_LIB).is_file(), "the built kernels go into this platform's package"


@pytest.fixture(scope="module")
def installed(extension_zip, user_extension_repo):
    """Install the package with Blender's operator and enable it; disable it again at the end."""
    assert_unregistered()
    result = bpy.ops.extensions.package_install_files(
        filepath=str(extension_zip), repo=user_extension_repo, enable_on_install=True
    )
    assert result == {"FINISHED"}
    module = f"bl_ext.{user_extension_repo}.symplex"
    try:
        yield module
    finally:
        if module in bpy.context.preferences.addons:
            bpy.ops.preferences.addon_disable(module=module)


def test_install_enables_the_add_on(installed):
    assert installed in bpy.context.preferences.addons
    assert addon_utils.check(installed) == (True, True)  # (enabled by default, loaded)


def test_install_registers_the_panel_and_operators(installed):
    assert_registered()


def test_install_brings_scipy_from_the_bundled_wheel(installed, manifest):
    site_packages = os.path.join(bpy.utils.user_resource("EXTENSIONS", path=".local"), "lib",
                                 "python3.11", "site-packages")
    version = os.path.basename(manifest["wheels"][0]).split("-")[1]
    assert f"scipy-{version}.dist-info" in os.listdir(site_packages)


def test_installed_solver_simulates_a_bundled_preset(installed):
    mechfile = importlib.import_module(f"{installed}.addon.solver.mechfile")
    integrator = importlib.import_module(f"{installed}.addon.solver.integrator")
    native = importlib.import_module(f"{installed}.addon.solver.native")
    extension_root = Path(importlib.import_module(installed).__file__).resolve().parent
    assert mechfile.PRESET_DIR == extension_root / "presets"  # the presets travel inside the extension
    mechanism = mechfile.load_mechanism(mechfile.PRESET_DIR / "pendulum.toml")
    trajectory = integrator.simulate(mechanism, dt=0.01, steps=5)
    assert trajectory.status == "finished", trajectory.message
    assert native.NATIVE == (REPO / KERNEL_LIB).is_file(), "the packaged kernels load inside Blender"


def test_disable_enable_disable_cleanly(installed):
    bpy.ops.preferences.addon_disable(module=installed)  # an error in unregister() raises here
    assert installed not in bpy.context.preferences.addons
    assert_unregistered()

    bpy.ops.preferences.addon_enable(module=installed)
    assert installed in bpy.context.preferences.addons
    assert_registered()

    bpy.ops.preferences.addon_disable(module=installed)
    assert installed not in bpy.context.preferences.addons
    assert_unregistered()

"""The built extension package installs, enables, works, disables and re-enables in real Blender.

Runs under every Blender of the support matrix (see conftest.py). The package is the one `make extension` ships for
this platform, installed through Blender's own operator into a temporary user repository, so
this is what an artist gets from "Install from Disk". The first test registers the checkout
directly, as a package, before anything is installed.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import addon_utils
import bpy
import pytest

from tools.build_extension import host_platform

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


@pytest.mark.heavy
def test_package_holds_the_extension_and_nothing_else(extension_zip, manifest):
    names = set(zipfile.ZipFile(extension_zip).namelist())
    assert {"blender_manifest.toml", "__init__.py", "addon/__init__.py", "addon/solver/integrator.py"} <= names
    assert any(n.startswith("presets/") and n.endswith(".toml") for n in names)
    assert any(n.startswith("wheels/scipy-") for n in names)
    for excluded in ("tests/", "tools/", "docs/", "benchmarks/", ".ci/", ".venv", "out/", "dist/", "build/"):
        assert not any(n.startswith(excluded) for n in names), f"{excluded} must not be packaged"
    assert not any("__pycache__" in n or n.endswith(".npz") for n in names)
    assert (KERNEL_LIB in names) == (REPO / KERNEL_LIB).is_file(), "the built kernels go into this platform's package"


# What the extension is: its entry point and manifest, the add-on package, the presets it adds, the SciPy wheels.
PRODUCT_TOP_LEVEL = {"__init__.py", "blender_manifest.toml", "addon", "presets", "wheels"}
# The add-on's packages; the demo (demo/) and the development tools (tools/) stay in the repository. The
# farm (batch bakes and sweeps) ships with the command line it serves; it imports Dask only when it runs.
PRODUCT_PACKAGES = {
    "addon", "addon/bridge", "addon/farm", "addon/solver", "addon/solver/collision", "addon/solver/maximal",
    "addon/solver/mechfile", "addon/solver/native", "addon/solver/shots", "addon/solver/tree", "addon/solver/vehicles",
    "addon/ui", "addon/ui/panels",
}


def tracked_files(folder: str) -> set[str]:
    """The files git tracks under `folder` of the checkout (the sources, without build outputs); hidden
    files stay out of the package (the manifest's ".*")."""
    listing = subprocess.run(["git", "ls-files", "--", folder], cwd=REPO, capture_output=True, text=True, check=True)
    return {name for name in listing.stdout.split() if not Path(name).name.startswith(".")}


def test_package_holds_exactly_the_product(extension_zip):
    names = zipfile.ZipFile(extension_zip).namelist()
    assert {n.split("/")[0] for n in names} == PRODUCT_TOP_LEVEL
    addon_files = {n for n in names if n.startswith("addon/") and not n.endswith("/")}
    assert {str(Path(n).parent) for n in addon_files} == PRODUCT_PACKAGES
    for package in PRODUCT_PACKAGES:
        assert f"{package}/__init__.py" in addon_files, f"{package} is packed without its __init__.py"
    built = {KERNEL_LIB} if (REPO / KERNEL_LIB).is_file() else set()
    assert addon_files == tracked_files("addon") | built, "the addon/ tree packs the checkout's sources, no more"
    modules = {Path(n).stem for n in addon_files if n.endswith(".py")}
    development = {p.stem for folder in ("demo", "tools") for p in (REPO / folder).glob("*.py")} - {"__init__"}
    assert not modules & development, f"development modules packed: {sorted(modules & development)}"
    assert not any(stem.startswith("demo") for stem in modules)


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


def bundled_wheel_for_this_python(manifest: dict, distribution: str) -> str:
    """File name of the manifest's `distribution` wheel that this Python and platform install."""
    python_tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    names = [os.path.basename(w) for w in manifest["wheels"]]
    matching = [n for n in names if n.startswith(f"{distribution}-") and f"-{python_tag}-" in n
                and host_platform() in blender_platforms_of_wheel(n)]
    assert len(matching) == 1, f"expected one {distribution} wheel for {python_tag} on {host_platform()}, got {matching}"
    return matching[0]


def blender_platforms_of_wheel(name: str) -> set[str]:
    """Blender platform names a wheel's platform tag serves (the tags this project ships)."""
    tag = name.removesuffix(".whl").split("-")[-1]
    if "manylinux" in tag and tag.endswith("x86_64"):
        return {"linux-x64"}
    if tag.startswith("macosx"):
        return {"macos-arm64"} if tag.endswith("arm64") else {"macos-x64"}
    if tag == "win_amd64":
        return {"windows-x64"}
    return set()


def test_install_brings_scipy_from_the_bundled_wheel(installed, manifest):
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_packages = os.path.join(bpy.utils.user_resource("EXTENSIONS", path=".local"), "lib", python, "site-packages")
    version = bundled_wheel_for_this_python(manifest, "scipy").split("-")[1]
    installed_scipy = sorted(n for n in os.listdir(site_packages) if n.startswith("scipy-"))
    assert installed_scipy == [f"scipy-{version}.dist-info"], f"Blender {bpy.app.version_string} installed {installed_scipy}"


def test_package_carries_a_scipy_for_every_blender_python(manifest):
    """Blender 4.2 - 5.0 run Python 3.11, 5.1 - 5.3 Python 3.13: every platform needs a wheel for each."""
    names = [os.path.basename(w) for w in manifest["wheels"]]
    for platform_name in manifest["platforms"]:
        tags = {n.split("-")[2] for n in names if n.startswith("scipy-") and platform_name in blender_platforms_of_wheel(n)}
        assert tags == {"cp311", "cp313"}, f"{platform_name}: scipy wheels for {sorted(tags)}"


def test_installed_solver_simulates_a_bundled_preset(installed):
    read = importlib.import_module(f"{installed}.addon.solver.mechfile.read")
    presets = importlib.import_module(f"{installed}.addon.solver.presets")
    integrator = importlib.import_module(f"{installed}.addon.solver.integrator")
    native = importlib.import_module(f"{installed}.addon.solver.native")
    extension_root = Path(importlib.import_module(installed).__file__).resolve().parent
    assert presets.PRESET_DIR == extension_root / "presets"  # the presets travel inside the extension
    mechanism = read.load_mechanism(presets.PRESET_DIR / "pendulum.toml")
    trajectory = integrator.simulate(mechanism, dt=0.01, steps=5)
    assert trajectory.status == "finished", trajectory.message
    assert native.NATIVE == (REPO / KERNEL_LIB).is_file(), "the packaged kernels load inside Blender"


def test_installed_add_on_bakes_a_preset_mechanism_and_a_vehicle_from_its_buttons(installed):
    """What an artist does after Install from Disk: Add Preset, Validate, Bake; Add Vehicle Rig, Bake Vehicle.

    Only operators are called, each with the context a button press gives (the window's scene and the
    active object that the previous operator left), so this holds on every Blender of the matrix.
    """
    window = bpy.context.window_manager.windows[0]
    previous = window.scene
    scene = bpy.data.scenes.new("installed")
    scene.frame_start, scene.frame_end = 1, 50
    window.scene = scene
    try:
        with bpy.context.temp_override(window=window):
            assert bpy.ops.symplex.add_preset(preset="double_pendulum", variant="RIGID_BODIES") == {"FINISHED"}
            assert bpy.ops.symplex.validate() == {"FINISHED"}
            assert bpy.ops.symplex.bake() == {"FINISHED"}
            setup = scene.symplex.setups[scene.symplex.active_setup]
            assert setup.diagnostics.status == "finished", setup.diagnostics.message
            assert setup.diagnostics.keys > 0 and setup.diagnostics.max_residual < 1e-8

            assert bpy.ops.symplex.add_vehicle(preset="kart") == {"FINISHED"}
            rig = bpy.context.view_layer.objects.active
            assert rig is not None and rig.select_get(), "Add Vehicle Rig leaves its new rig active and selected"
            start = rig.matrix_world.translation.copy()
            assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
            scene.frame_set(scene.frame_end)
            driven = (rig.matrix_world.translation - start).length
            assert driven > 1.0, f"the baked kart drove {driven:.3f} m in 2 s"
    finally:
        window.scene = previous
        for obj in list(scene.objects):
            bpy.data.objects.remove(obj)
        bpy.data.scenes.remove(scene)


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

"""Fixtures for the Blender-facing tests: real bpy, never mocks.

These tests run under every Blender of the support matrix in `make test`: bpy 4.2.23 (.venv42),
4.5.15 (.venv45), 5.0.1 (.venv), 5.2.3 (.venv52) and 5.3.0 (.venv53); see docs/development.md. Without bpy the directory is skipped with the reason,
except under CI (CI=true), where a missing bpy is an error so Blender tests can never silently vanish.

Fixtures:
- extension_zip: this platform's extension package, built once per session from the checkout with
  the running Blender's own blender_ext.py (tools/build_extension.py), so it is never stale.
- user_extension_repo: a temporary user extension repository, removed afterwards.
- symplex_package: the checkout imported as a package (as Blender would, but under a test name).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import bpy
except ImportError as exc:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(
        f"Blender tests need the bpy module, which {sys.executable} cannot import ({exc}); "
        "run them with .venv/bin/python or another Blender environment (`make venvs`)",
        allow_module_level=True,
    )

from tools.build_extension import host_platform, package_path

REPO = Path(__file__).resolve().parents[2]
PACKAGE_NAME = "symplex_checkout"

# The tests change preferences (extension repositories); never let Blender save them on exit.
bpy.context.preferences.use_preferences_save = False


def _run_tool(*args: str) -> None:
    result = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=1200)
    if result.returncode != 0:
        pytest.fail(f"`python {' '.join(args)}` failed:\n{result.stdout}\n{result.stderr}")


@pytest.fixture(scope="session")
def manifest() -> dict:
    import tomllib

    with open(REPO / "blender_manifest.toml", "rb") as fh:
        return tomllib.load(fh)


@pytest.fixture(scope="session")
def extension_zip(tmp_path_factory, manifest) -> Path:
    """This platform's package, freshly built from the checkout (wheels are fetched if missing)."""
    out = tmp_path_factory.mktemp("dist")
    _run_tool("tools/fetch_wheels.py")
    _run_tool("tools/build_extension.py", "--out", str(out))
    return package_path(out, manifest, host_platform())


@pytest.fixture(scope="module")
def user_extension_repo(tmp_path_factory):
    """Module name of a new, empty user extension repository in a temporary directory."""
    repos = bpy.context.preferences.extensions.repos
    module = "symplex_test_repo"
    assert module not in {r.module for r in repos}, f"extension repository {module!r} left over by another test"
    repos.new(name="Symplex test", module=module, custom_directory=str(tmp_path_factory.mktemp("extensions")), source="USER")
    try:
        yield module
    finally:
        for repo in repos:
            if repo.module == module:
                repos.remove(repo)
                break


@pytest.fixture
def symplex_package():
    """The checkout's root package imported as `symplex_checkout`; its modules are dropped afterwards."""
    spec = importlib.util.spec_from_file_location(
        PACKAGE_NAME, REPO / "__init__.py", submodule_search_locations=[str(REPO)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE_NAME] = package
    try:
        spec.loader.exec_module(package)
        yield package
    finally:
        for name in [n for n in sys.modules if n == PACKAGE_NAME or n.startswith(PACKAGE_NAME + ".")]:
            del sys.modules[name]


# Blender 4.2 as a Python module segfaults while the interpreter exits once any PointerProperty with
# a `poll` callback has been registered, even after it was unregistered: SpaceType destructors run
# from libc's exit handlers after Python has finalised and call back into it (bpy_class_free ->
# PyGILState_Ensure). Reproduced with a five-line script that registers and unregisters one such
# PropertyGroup (docs/development.md). Every test has run and reported by then; leave the process
# with pytest's own exit status instead of through that teardown. Blender 4.3+ and 5.x exit cleanly.
_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS.append(int(exitstatus))


def pytest_unconfigure(config):
    if _EXIT_STATUS:  # every Blender: a bpy teardown that crashes or stalls at exit must not stall the run
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])

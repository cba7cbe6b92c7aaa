"""Shared test setup: isolates Blender's user resources for the whole test session.

Blender-facing tests import bpy, which reads and writes the user's config, scripts and extensions
(~/.config/blender/<version>/). Before any test module can import bpy, this points Blender at a
fresh temporary directory (BLENDER_USER_RESOURCES) so tests neither see nor change a developer's
own Blender setup. Set BLENDER_USER_RESOURCES yourself to keep the files for inspection.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_OWN_USER_RESOURCES: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _OWN_USER_RESOURCES
    if "BLENDER_USER_RESOURCES" not in os.environ:
        _OWN_USER_RESOURCES = tempfile.mkdtemp(prefix="symplex-blender-user-")
        os.environ["BLENDER_USER_RESOURCES"] = _OWN_USER_RESOURCES


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_USER_RESOURCES is not None:
        shutil.rmtree(_OWN_USER_RESOURCES, ignore_errors=True)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository checkout under test."""
    return REPO

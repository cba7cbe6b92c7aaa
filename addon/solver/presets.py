"""The preset catalogue: where the shipped presets live and how to list and find them (paths only).

Three kinds, one folder each under the repository's (and the installed extension's) presets/: mechanism
files (PRESET_DIR, its top level), vehicle-only files (VEHICLE_PRESET_DIR) and shot files
(SHOT_PRESET_DIR). Everything that offers presets (UI menus, CLI, demo, benchmarks, tests) finds them here.
The vehicle presets' parameters exist only in their files: mechfile.read.vehicle_presets reads them (the
reader resolves a [vehicle] table's `preset = ...` through them, so reading and loading them is one module).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PRESET_DIR = Path(__file__).resolve().parents[2] / "presets"
VEHICLE_PRESET_DIR = PRESET_DIR / "vehicles"  # vehicle-only files, apart from the mechanism presets
SHOT_PRESET_DIR = PRESET_DIR / "shots"  # shot files, vehicle and mechanism shots alike

# The order menus and messages offer vehicle presets in; the first car is the one an artist's car rig bakes as.
# A vehicle file not named here follows, alphabetically.
VEHICLE_PRESET_ORDER = ("sedan", "kart", "helicopter", "speedboat", "snakeboard", "truck", "hovercraft",
                        "car_trailer", "tank")


def list_presets() -> list[str]:
    """Names of the shipped mechanism presets (file stems in PRESET_DIR, not its subfolders), sorted.

    Vehicle presets live in VEHICLE_PRESET_DIR and are listed by `list_vehicle_presets`: they have no
    bodies to build, so whatever builds mechanism presets never sees them.
    """
    return _stems(PRESET_DIR)


def preset_path(name: str) -> Path:
    """The file of mechanism preset `name` ("four_bar" or "four_bar.toml").

    Raises
    ------
    FileNotFoundError
        No such preset; the message lists the ones there are.
    """
    return _preset_file(PRESET_DIR, name)


def list_vehicle_presets() -> list[str]:
    """Names of the shipped vehicle presets (file stems in VEHICLE_PRESET_DIR), sorted."""
    return _stems(VEHICLE_PRESET_DIR)


def vehicle_preset_path(name: str) -> Path:
    """The file of vehicle preset `name` ("sedan" or "sedan.toml").

    Raises
    ------
    FileNotFoundError
        No such preset; the message lists the ones there are.
    """
    return _preset_file(VEHICLE_PRESET_DIR, name)


def list_shot_presets(subject: str) -> list[str]:
    """Names of the shipped shot presets that drive a `subject`, sorted.

    `subject` is "vehicle" or "mechanism": the key of the [shot] table naming what the shot moves.
    """
    return [stem for stem in _stems(SHOT_PRESET_DIR)
            if subject in tomllib.loads((SHOT_PRESET_DIR / f"{stem}.toml").read_text(encoding="utf-8")).get("shot", {})]


def shot_preset_path(name: str) -> Path:
    """The file of shot preset `name` ("parallel_parking" or "parallel_parking.toml").

    Raises
    ------
    FileNotFoundError
        No such preset; the message lists the ones there are.
    """
    return _preset_file(SHOT_PRESET_DIR, name)


def _stems(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.toml"))


def _preset_file(directory: Path, name: str) -> Path:
    """The preset of that name, looked up among the files there are (a name is never a path to open)."""
    stem = name.removesuffix(".toml")
    if stem not in _stems(directory):
        shown = name if len(name) <= 60 else name[:57] + "..."
        raise FileNotFoundError(
            f"no preset named {shown!r} in {directory} (available: {', '.join(_stems(directory))})")
    return directory / f"{stem}.toml"

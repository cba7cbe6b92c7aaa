"""The preset catalogue (addon/solver/presets.py): each kind of preset is listed apart and found by name."""

from __future__ import annotations

import pytest

from addon.solver.presets import (
    PRESET_DIR,
    SHOT_PRESET_DIR,
    VEHICLE_PRESET_DIR,
    list_presets,
    list_shot_presets,
    list_vehicle_presets,
    preset_path,
    shot_preset_path,
    vehicle_preset_path,
)
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.vehicles.spec import VEHICLE_TYPES

VEHICLE_PRESETS = ("sedan", "kart", "helicopter", "speedboat", "snakeboard", "truck", "hovercraft", "car_trailer",
                   "tank")


def test_presets_are_listed_and_found():
    names = list_presets()
    assert {"pendulum", "double_pendulum", "chain_5", "closed_chain_device", "four_bar", "scissor_lift",
            "slider_crank"} <= set(names)
    assert preset_path("four_bar") == preset_path("four_bar.toml") == PRESET_DIR / "four_bar.toml"
    with pytest.raises(FileNotFoundError, match="no preset named 'nope'.*four_bar"):
        preset_path("nope")


def test_vehicle_presets_are_listed_apart_from_the_mechanism_presets():
    assert set(VEHICLE_PRESETS) <= set(list_vehicle_presets())
    assert not set(list_vehicle_presets()) & set(list_presets())  # Add Preset never offers a vehicle
    assert VEHICLE_PRESET_DIR == PRESET_DIR / "vehicles"
    assert vehicle_preset_path("sedan") == vehicle_preset_path("sedan.toml") == VEHICLE_PRESET_DIR / "sedan.toml"
    with pytest.raises(FileNotFoundError, match="no preset named 'tractor'.*helicopter"):
        vehicle_preset_path("tractor")


def test_shot_presets_are_listed_by_what_they_drive():
    vehicle, mechanism = list_shot_presets("vehicle"), list_shot_presets("mechanism")
    assert {"parallel_parking", "car_tunnel", "helicopter_canyon_landing", "boat_docking"} <= set(vehicle)
    assert {"cart_pole_swing_up", "four_bar_swing", "robot_arm_reach"} <= set(mechanism)
    assert sorted(vehicle + mechanism) == sorted(p.stem for p in SHOT_PRESET_DIR.glob("*.toml"))
    assert not set(vehicle) & set(list_presets() + list_vehicle_presets())
    assert SHOT_PRESET_DIR == PRESET_DIR / "shots"
    assert shot_preset_path("car_tunnel") == shot_preset_path("car_tunnel.toml") == SHOT_PRESET_DIR / "car_tunnel.toml"
    with pytest.raises(FileNotFoundError, match="no preset named 'rally'.*parallel_parking"):
        shot_preset_path("rally")


def test_vehicle_presets_are_read_from_their_files_in_menu_order():
    presets = vehicle_presets()
    assert list(presets) == list(VEHICLE_PRESETS)  # the order menus and "one of ..." messages show
    assert set(presets) == set(list_vehicle_presets())  # every file, none without one
    assert all(type(spec) in VEHICLE_TYPES.values() and spec.name == name for name, spec in presets.items())
    assert presets is vehicle_presets()  # read once
    with pytest.raises(TypeError):
        presets["sedan"] = presets["kart"]  # shared, so not to be changed by a caller

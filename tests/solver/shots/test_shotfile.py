"""Shot files: one loader returns the problem each file holds (a vehicle Shot or a MechanismShot); the
shipped shots load; bad input names the file, table and field."""

import pytest

from addon.solver.presets import list_shot_presets
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.spec import MechanismShot, Shot, ShotError

GOOD = """format = 1
[shot]
name = "t"
vehicle = "sedan"
dt = 0.1
steps = 10
[[key]]
name = "end"
frame = 10
position = [5.0, 0.0, 0.55]
"""


def test_shipped_vehicle_shots_load():
    names = list_shot_presets("vehicle")
    assert {"parallel_parking", "car_tunnel", "helicopter_canyon_landing", "boat_docking"} <= set(names)
    for name in names:
        shot = load_shot(name)
        assert shot.steps >= 2 and shot.keys


def test_one_loader_returns_the_problem_the_file_holds():
    for name in list_shot_presets("vehicle"):
        assert type(load_shot(name)) is Shot
    for name in list_shot_presets("mechanism"):
        shot = load_shot(name)
        assert type(shot) is MechanismShot and shot.controls and shot.keys


@pytest.mark.parametrize("edit,message", [
    (('steps = 10', 'steps = "ten"'), "[shot]: field 'steps'"),
    (('dt = 0.1', 'dt = -0.1'), "[shot]: field 'dt'"),
    (('vehicle = "sedan"', 'vehicle = "bus"'), "field 'vehicle'"),
    (('frame = 10', 'frame = 11'), "key 'end': field 'step'"),
    (('position = [5.0, 0.0, 0.55]', 'position = [5.0, 0.0]'), "[[key]] 1 ('end'): field 'position'"),
    (('name = "end"', 'name = "end"\nspeed = 3'), "unknown field(s) speed"),
])
def test_bad_fields_are_named(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(*edit))
    with pytest.raises(ShotError) as err:
        load_shot(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_bad_obstacle_shape_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD + '[[obstacle]]\nname = "rock"\nshape = "cone"\nsize = [1.0]\n')
    with pytest.raises(ShotError, match="obstacle 'rock': field 'shape'"):
        load_shot(path)


def test_bounds_of_an_unknown_control_are_named(tmp_path):
    from addon.solver.shots.solve import solve_shot
    path = tmp_path / "bad.toml"
    path.write_text(GOOD + '[bounds]\nthrottle = [0.0, 1.0]\n')
    with pytest.raises(ShotError, match="unknown control 'throttle'; controls: drive_torque, steer"):
        solve_shot(load_shot(path))

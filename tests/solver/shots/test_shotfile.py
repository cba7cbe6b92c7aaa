"""Shot files: one loader returns the problem each file holds (a vehicle Shot or a MechanismShot); the
shipped shots load; bad input (vehicle and mechanism shots) names the file, table and field."""

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
    (('dt = 0.1', 'dt = 2.0'), "field 'dt' must be a time step in [1e-06, 1] s, got 2.0"),
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


@pytest.mark.parametrize("obstacle,field", [
    ('shape = "hull"\nvertices = [[0.0, 0.0, 0.0], [1.0, 0.0, []], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]', "vertices"),
    ('shape = "sphere"\nsize = [nan]', "size"),
    ('shape = "sphere"\nsize = [true]', "size"),
])
def test_obstacle_numbers_must_be_finite(tmp_path, obstacle, field):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD + f'[[obstacle]]\nname = "rock"\n{obstacle}\n')
    with pytest.raises(ShotError, match=f"obstacle\\]\\] 1 \\('rock'\\): field '{field}' must be"):
        load_shot(path)


def test_a_referenced_vehicle_file_is_read_with_the_same_checks(tmp_path):
    (tmp_path / "car.toml").write_bytes(b"format = 1\n\xff\n")
    path = tmp_path / "shot.toml"
    path.write_text(GOOD.replace('vehicle = "sedan"', 'vehicle = "car.toml"'))
    with pytest.raises(ShotError) as err:
        load_shot(path)
    assert str(path) in str(err.value) and f"{tmp_path / 'car.toml'}: not UTF-8 text" in str(err.value)


MECHANISM_SHOT = """format = 1
[shot]
name = "swing"
mechanism = "cart_pole"
dt = 0.05
steps = 10
[[control]]
joint = "cart_slide"
[[key]]
name = "up"
frame = 10
coordinate = "pole_hinge"
value = 1.0
"""


@pytest.mark.parametrize("edit,message", [
    (('[[control]]', 'colour = "red"\n[[control]]'), "unknown field 'colour'"),
    (('joint = "cart_slide"', 'joint = "cart_slide"\nlimit = 3.0'), "[[control]] #1: unknown field 'limit'"),
    (('value = 1.0', 'value = nan'), "[[key]] 'up': field 'value' must be a finite number"),
    (('dt = 0.05', 'dt = inf'), "[shot]: field 'dt' must be a finite number"),
    (('dt = 0.05', 'dt = 5e-324'), "[shot]: field 'dt' must be a time step in [1e-06, 1] s, got 5e-324"),
    (('dt = 0.05', 'dt = 2.0'), "[shot]: field 'dt' must be a time step in [1e-06, 1] s, got 2.0"),
    (('dt = 0.05', 'dt = 1e300'), "field 'shot.dt' must be within +-1e+15 (SI units), got 1e+300"),
    (('joint = "cart_slide"', 'joint = "cart_slide"\nlower = nan'), "field 'lower' must be a finite number"),
    (('name = "up"', 'name = ["up"]'), "[[key]] #1: field 'name' must be str"),
    (('[[control]]', '[costs]\nspeed = "fast"\n[[control]]'), "[costs]: field 'speed' must be float"),
])
def test_mechanism_shot_fields_are_checked(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(MECHANISM_SHOT.replace(*edit))
    with pytest.raises(ShotError) as err:
        load_shot(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_mechanism_shot_joint_speed_cost_is_read(tmp_path):
    path = tmp_path / "speed.toml"
    path.write_text(MECHANISM_SHOT.replace('[[control]]', '[costs]\nspeed = 0.01\n[[control]]', 1))
    assert load_shot(path).speed == 0.01
    path.write_text(MECHANISM_SHOT)
    assert load_shot(path).speed == 0.0


def test_mechanism_shot_control_bounds_may_be_infinite(tmp_path):
    path = tmp_path / "open.toml"
    path.write_text(MECHANISM_SHOT.replace('joint = "cart_slide"', 'joint = "cart_slide"\nlower = -inf\nupper = inf'))
    assert load_shot(path).controls[0].upper == float("inf")


def test_a_flat_hull_obstacle_is_refused_by_name(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD + '[[obstacle]]\nname = "slab"\nshape = "hull"\n'
                    'vertices = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]\n')
    with pytest.raises(ShotError, match="obstacle 'slab': field 'vertices' of a hull must span a volume; these 4 "
                                        "points are all in one plane"):
        load_shot(path)


def test_a_hull_obstacle_of_huge_coordinates_has_a_distance():
    import numpy as np

    from addon.solver.shots.obstacles import distance_function
    from addon.solver.shots.spec import Obstacle

    cube = [[x, y, z] for x in (-1e200, 1e200) for y in (-1e200, 1e200) for z in (-1e200, 1e200)]
    d, _ = distance_function(Obstacle("huge", "hull", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), (), cube))(
        np.array([[3e200, 0.0, 0.0]]))
    assert 1e200 <= d[0] <= 2e200  # outside by 2e200 (the smooth maximum never overestimates)

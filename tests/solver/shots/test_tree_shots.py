"""Mechanism shots (tree method DMOC): the shipped cart-pole, crane and robot-arm (one and two marks) shots
converge, meet their keys, respect joint limits and force bounds, and their torques replay through the plain
simulator; an unreachable key fails naming itself; a re-solve warm-starts; bad files are refused naming the field;
the joint-speed cost is exact and lets a ten-link driven chain reach its key."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Curve, Motor
from addon.solver.presets import list_shot_presets, preset_path, shot_preset_path
from addon.solver.shots.mechanism_shots import (_nlp, _problem, key_errors, keyed_coordinates,
                                                solve_mechanism_shot, solved_trajectory)
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.solve import solve_shot
from addon.solver.shots.spec import Control, Key, MechanismKey, MechanismShot, Shot, ShotError
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from tools.generate import pendulum_chain

SHOTS = ("cart_pole_swing_up", "crane_anti_sway", "robot_arm_reach", "robot_arm_two_marks")


@pytest.fixture(scope="module")
def solved():
    out = {}
    for name in SHOTS:
        shot = load_shot(shot_preset_path(name))
        out[name] = (shot, solve_mechanism_shot(shot))
    return out


def test_the_mechanism_shots_are_shipped():
    assert set(SHOTS) <= set(list_shot_presets("mechanism"))


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.parametrize("name", SHOTS)
def test_shot_converges_and_meets_its_keys(solved, name):
    shot, result = solved[name]
    assert result.status == "solved", result.report
    for key in shot.keys:
        assert result.key_errors[key.name] <= key.tolerance, (key.name, result.key_errors)
    # the keys hold in the replayed (baked) motion too
    assert result.trajectory.status == "finished"


@pytest.mark.heavy
@pytest.mark.parametrize("name", SHOTS)
def test_bounds_are_respected(solved, name):
    shot, result = solved[name]
    model = compile_tree(shot.mechanism)
    Q = result.states
    assert np.all(Q >= model.dof_lower - 1e-9) and np.all(Q <= model.dof_upper + 1e-9)
    for control in shot.controls:
        u = result.controls[control.joint]
        assert np.all(u >= control.lower - 1e-9) and np.all(u <= control.upper + 1e-9), control.joint


@pytest.mark.heavy
@pytest.mark.parametrize("name", SHOTS)
def test_torques_replay_through_the_simulator(solved, name):
    """The plain midpoint integrator (C kernel or numpy) driven by the solved torques, keyed at the interval
    midpoints, reproduces the optimised motion: every body position to 1e-8 m. The DMOC rows are the
    simulator's own DEL equations, met to round-off; what is left is round-off amplified by the motion
    (the arm starts balanced upright: measured 3e-9 m, joint angles 1.1e-8 rad; cart-pole and crane 1e-12)."""
    shot, result = solved[name]
    replayed = result.trajectory
    assert replayed.nsteps == shot.steps
    assert result.replay_error < 1e-8
    assert np.max(np.abs(replayed.q - result.states)) < 1e-7


@pytest.mark.heavy
def test_crane_ends_on_its_mark_without_sway(solved):
    """The load is over its mark with the cable straight and zero momentum after the last step: simulated on
    with the trolley force released (a zero key half a step after the shot), nothing moves any more."""
    shot, result = solved["crane_anti_sway"]
    run = result.trajectory
    assert abs(run.poses[-1, run.body_index("load"), 0] - 3.0) < 1e-6
    # the exact Hessian (tree_hessian.py) takes the 8 iterations the differenced one took, to the same optimum
    assert result.iterations <= 8
    assert result.objective == pytest.approx(0.0984566304472807, rel=1e-7)
    times, values = result.control_times["rail"], result.controls["rail"]
    released = Curve(tuple(times) + (times[-1] + shot.dt,), tuple(values) + (0.0,))
    joints = tuple(replace(j, motor=Motor("torque", released)) if j.name == "rail" else j
                   for j in shot.mechanism.joints)
    more = simulate(shot.mechanism.replace(joints=joints), shot.dt, shot.steps + 30)
    assert more.status == "finished"
    assert np.max(np.abs(more.q[shot.steps:] - more.q[shot.steps])) < 1e-6
    assert np.isfinite(solved_trajectory(shot, result).energy).all()


@pytest.mark.heavy
def test_swing_up_ends_upright_and_cart_pole_uses_the_rail(solved):
    shot, result = solved["cart_pole_swing_up"]
    q = result.trajectory.q
    assert abs(q[-1, 1] - np.pi) < 1e-6 and abs(q[-1, 0]) < 1e-6
    assert np.max(np.abs(q[:, 0])) > 0.05  # the pole cannot be raised without moving the cart


@pytest.mark.heavy
def test_arm_passes_its_first_mark_and_reaches_the_second(solved):
    """Both marks are met in the replayed (baked) motion, not only by the optimiser; the arm is still moving
    as it passes the first, and the inverse-kinematics warm start meets each mark exactly before the solve begins."""
    shot, result = solved["robot_arm_two_marks"]
    run = result.trajectory
    model = compile_tree(shot.mechanism)
    problem = _problem(shot)
    start = keyed_coordinates(problem)
    for key in shot.keys:
        kin = forward(model, run.q[key.frame], problem.tx.charts)
        b = model.body_names.index(key.body)
        tip = kin.body_origin[b] + kin.body_R[b] @ np.asarray(key.point)
        assert np.linalg.norm(tip - key.position) < 1e-6, key.name
        assert key_errors(problem, start)[key.name] < 1e-9, key.name
    assert np.max(np.abs(result.states[20] - result.states[19])) > 1e-3  # passing through the first


@pytest.mark.slow
def test_unreachable_key_fails_naming_it():
    shot = load_shot(shot_preset_path("robot_arm_reach"))
    far = MechanismKey("out of reach", 40, body="hand", point=(0.0, 0.0, 0.15), position=(2.5, 0.0, 0.6))
    shot = replace(shot, keys=(far,))
    result = solve_mechanism_shot(shot, max_iter=40)
    assert result.status != "solved"
    assert "'out of reach'" in result.report.splitlines()[1]
    assert result.trajectory is None


@pytest.mark.slow
def test_warm_start_after_moving_a_key_takes_fewer_iterations(solved):
    shot, result = solved["crane_anti_sway"]
    key = shot.keys[0]
    moved = replace(shot, keys=(replace(key, position=(3.2, 0.0, 2.0)),))
    cold = solve_mechanism_shot(moved)
    warm = solve_mechanism_shot(moved, warm_start=result)
    assert cold.status == warm.status == "solved"
    assert warm.iterations < cold.iterations
    # from the previous animation (a Trajectory) as well
    from_animation = solve_mechanism_shot(moved, warm_start=result.trajectory)
    assert from_animation.status == "solved" and from_animation.iterations < cold.iterations


@pytest.mark.slow
def test_solve_shot_dispatches_mechanisms_without_a_vehicle():
    """spec.Shot on a mechanism: bounds name the driven joints, a position key is a body-origin key and a
    zero velocity key at the last step means rest. (The load is keyed 1 cm above the bottom of its swing:
    a full position key exactly at the bottom is degenerate - its height does not change with the cable
    angle to first order - and the interior-point solve stalls at 2.6e-8 there.)"""
    mech = load_mechanism(preset_path("crane"))
    shot = Shot(mech, 0.1, 40, keys=(Key(40, "load", position=(2.0, 0.0, 2.01), name="mark"),
                                      Key(40, "load", velocity=(0.0, 0.0, 0.0), name="still")),
                bounds=(("rail", -150.0, 150.0),), name="crane via spec")
    result = solve_shot(shot)
    assert result.status == "solved", result.report
    assert abs(result.trajectory.poses[-1, 1, 0] - 2.0) < 1e-6


def test_file_errors_name_the_file_the_entry_and_the_field(tmp_path):
    text = shot_preset_path("cart_pole_swing_up").read_text().replace('coordinate = "pole_hinge"',
                                                                       'coordinate = "pole_hinj"')
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ShotError, match=r"bad\.toml.*\[\[key\]\] 'upright'.*'pole_hinj'"):
        solve_shot(load_shot(path))  # names are checked against the compiled mechanism when solving
    text = shot_preset_path("cart_pole_swing_up").read_text().replace("frame = 50", "frame = 80", 1)
    path.write_text(text)
    with pytest.raises(ShotError, match=r"'upright'.*'frame'.*1\.\.50.*80"):
        solve_shot(load_shot(path))


def _driven_chain(n: int, speed: float) -> MechanismShot:
    """n hanging 0.1 m, 0.1 kg links, every hinge driven (30 N m), the tip keyed where a bend of 0.02 rad per
    hinge puts it after 20 steps of 0.05 s (benchmarks.shots_eval.chain_shot)."""
    k = np.arange(1, n + 1)
    tip = (0.1 * float(np.sum(np.sin(0.02 * k))), 0.0, -0.1 * float(np.sum(np.cos(0.02 * k))))
    return MechanismShot(f"{n}-link chain", pendulum_chain(n, 0.1, 0.1, 0.01, 0.0), 0.05, 20,
                         tuple(Control(f"hinge_{i}", -30.0, 30.0) for i in k),
                         (MechanismKey("tip", 20, body=f"link_{n}", point=(0.0, 0.0, -0.1), position=tip,
                                       components="xz"),), speed=speed)


def test_joint_speed_cost_is_exact_and_lets_a_ten_link_chain_reach_its_key():
    """Without it the 10-link chain's minimum-effort program is a saddle at the start and the solve runs out of
    iterations (docs/benchmarks_shots.md); with the joint-speed cost it converges, meets the tip key and its
    torques replay. The cost's gradient and constant Hessian match central differences of the objective and
    gradient; a negative weight is refused naming the field."""
    shot = _driven_chain(10, 1e-3)
    P = _problem(shot)
    nlp = _nlp(P)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(P.tx.n)
    d, eps = rng.standard_normal(P.tx.n), 1e-6
    slope = (nlp.objective(x + eps * d) - nlp.objective(x - eps * d)) / (2 * eps)
    assert abs(slope - nlp.gradient(x) @ d) <= 1e-7 * (1 + abs(slope))
    zero_y = np.zeros(len(nlp.c_lower))
    H = nlp.hessian(x, zero_y, 1.0)  # constraints off: the effort's and the speed cost's curvature
    curve = (nlp.gradient(x + eps * d) - nlp.gradient(x - eps * d)) / (2 * eps)
    assert np.max(np.abs(curve - H @ d)) <= 1e-7 * (1 + np.max(np.abs(curve)))
    result = solve_mechanism_shot(shot)
    assert result.status == "solved", result.report
    assert result.key_errors["tip"] <= 1e-6
    assert result.replay_error <= 1e-9
    with pytest.raises(ShotError, match="'speed'"):
        _problem(replace(shot, speed=-1.0))

"""Tests for the command line (addon/__main__.py), run as a user would: `python -m addon ...` in a subprocess.

Covers help, exit codes and messages for bad input, laziness (no bpy for --help and simulate), the
.npz that `simulate` writes (the keys and shapes Trajectory.save writes), the `shot` command, the refusal of an --out
that is the input, the internal-error safety net and the numeric arguments' ranges. The seeded fuzz over
malformed files and arguments is tests/test_fuzz_files.py (tools/fuzz_files.py). The bake runs that need
bpy are in tests/blender/test_cli_bake.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from addon.solver.presets import preset_path, vehicle_preset_path

REPO = Path(__file__).resolve().parent.parent
PENDULUM = preset_path("pendulum")


def run_cli(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "addon", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )


COMMANDS = ("simulate", "shot", "bake", "demo", "bench")


def one_line_failure(result: subprocess.CompletedProcess, code: int | tuple[int, ...] = (1, 2)) -> str:
    """The single stderr line of a failed run; asserts the exit code, one line and no traceback."""
    codes = (code,) if isinstance(code, int) else code
    assert result.returncode in codes, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m addon"), result.stderr
    return lines[0]


def test_help_lists_every_command():
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    for command in COMMANDS:
        assert command in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = run_cli(command, "--help")
    assert result.returncode == 0, result.stderr
    assert f"usage: python -m addon {command}" in result.stdout


@pytest.mark.heavy
def test_help_and_simulate_do_not_import_bpy(tmp_path):
    # Run the CLI in a fresh interpreter and report whether bpy got imported along the way.
    probe = textwrap.dedent(f"""
        import sys
        from addon.__main__ import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        code = main(["simulate", {str(PENDULUM)!r}, "--steps", "2", "--out", {str(tmp_path / "r.npz")!r}])
        print("exit", code, "bpy" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "exit 0 False"


@pytest.mark.heavy
def test_unknown_method_exits_2_and_names_the_valid_ones(tmp_path):
    result = run_cli("simulate", PENDULUM, "--method", "no-such-method", "--out", tmp_path / "r.npz")
    assert result.returncode == 2
    assert "no-such-method" in result.stderr
    assert "tree" in result.stderr  # the valid methods are listed
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "r.npz").exists()


def test_invalid_mechanism_exits_2_with_the_mechanism_error(tmp_path):
    bad = tmp_path / "negative_mass.toml"
    bad.write_text(textwrap.dedent("""
        format = 1
        [model]
        name = "bad"
        [[body]]
        name = "bob"
        mass = -1.0
        [[joint]]
        name = "hinge"
        type = "revolute"
        parent = "world"
        child = "bob"
    """))
    result = run_cli("simulate", bad, "--out", tmp_path / "r.npz")
    assert result.returncode == 2
    assert str(bad) in result.stderr  # MechanismError names the file...
    assert "mass" in result.stderr  # ...and the field
    assert "Traceback" not in result.stderr


def test_invalid_toml_exits_2(tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text("format = 1\n[model\n")
    result = run_cli("simulate", bad)
    assert result.returncode == 2
    assert str(bad) in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.heavy
def test_missing_files_exit_2(tmp_path):
    result = run_cli("simulate", tmp_path / "absent.toml")
    assert result.returncode == 2
    assert "absent.toml" in result.stderr and "not found" in result.stderr

    result = run_cli("bake", tmp_path / "absent.blend", "--out", tmp_path / "baked.blend")
    assert result.returncode == 2
    assert "absent.blend" in result.stderr and "not found" in result.stderr


def test_bad_arguments_exit_2():
    result = run_cli("simulate", PENDULUM, "--dt", "0")
    assert result.returncode == 2
    assert "--dt" in result.stderr
    assert run_cli().returncode == 2  # no command


# Each numeric argument: its range as --help says it, values refused and values accepted.
NUMBER_ARGUMENTS = {
    ("simulate", "--dt"): ("1e-06 to 1", ["inf", "nan", "1e308", "0", "-0.01", "5e-324", "1e-7", "1.5", "1_0",
                                          " 0.01", "0x1", "\u0661", ""], ["1e-6", "1", "0.01", ".5", "5E-3"]),
    ("simulate", "--tol"): ("1e-14 to 0.001", ["inf", "nan", "0", "1e-15", "5e-324", "0.01", "-1e-10"],
                            ["1e-14", "1e-3", "1e-10"]),
    ("simulate", "--steps"): ("1 to 1000000", ["0", "-1", "1.5", "1e3", "1000001", "9" * 30, "1_000", "\u0661"],
                              ["1", "1000000"]),
    ("simulate", "--order"): ("2 (midpoint), 4, 6 or 8", ["3", "0", "10", "4.0", "inf", "", "04x", "9" * 30],
                              ["2", "4", "6", "8"]),
    ("shot", "--max-iter"): ("1 to 10000", ["0", "-5", "10001", "inf", "2.0", "9" * 400], ["1", "10000"]),
}


@pytest.mark.parametrize("command,option", list(NUMBER_ARGUMENTS))
def test_numeric_arguments_are_plain_decimals_in_their_documented_range(command, option, capsys):
    from addon.__main__ import build_parser, main

    documented, refused, accepted = NUMBER_ARGUMENTS[command, option]
    assert main([command, "--help"]) == 0
    assert documented in " ".join(capsys.readouterr().out.split())
    source = PENDULUM if command == "simulate" else PARKING
    for value in refused:
        assert main([command, str(source), f"{option}={value}", "--out", "/nonexistent/x.npz"]) == 2, value
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"python -m addon {command}: argument {option}: must be")
    for value in accepted:
        build_parser().parse_args([command, str(source), f"{option}={value}"])  # no SystemExit


def test_order_runs_the_tree_method_at_order_4_and_other_methods_refuse_it_by_name(tmp_path):
    out = tmp_path / "r.npz"
    result = run_cli("simulate", PENDULUM, "--order", "4", "--steps", "20", "--dt", "0.05", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "(tree order 4, dt 0.05 s, finished)" in result.stdout
    energy = np.load(out)["energy"]
    assert np.max(np.abs(energy - energy[0])) < 1e-4 * np.max(np.abs(energy))  # order 4 at 20 steps per second
    line = one_line_failure(run_cli("simulate", PENDULUM, "--order", "4", "--method", "maximal", "--out", out), 2)
    assert "accuracy order 4 is for the 'tree' method; the 'maximal' method runs at order 2 only" in line
    line = one_line_failure(run_cli("simulate", preset_path("slider_crank"), "--order", "6", "--out", out), 2)
    assert "'crank' is prescribed" in line and "accuracy order 2 only" in line


def test_the_printed_output_path_is_the_file_written(tmp_path):
    out = tmp_path / "run"  # no .npz suffix: numpy would write run.npz
    result = run_cli("simulate", PENDULUM, "--steps", "2", "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(f"-> {out}")
    assert out.is_file() and not (tmp_path / "run.npz").exists()
    with np.load(out, allow_pickle=False) as run:
        assert run["t"].shape == (3,)


def test_a_failed_simulation_names_the_file_step_and_time(tmp_path):
    message = one_line_failure(run_cli("simulate", preset_path("chain_5"), "--tol", "1e-14", "--steps", "3",
                                       "--out", tmp_path / "r.npz"), 1)
    assert f"simulate: {preset_path('chain_5')}: " in message and "at step 1 (t = " in message, message


def test_simulate_pendulum_writes_the_design_keys(tmp_path):
    out = tmp_path / "runs" / "pendulum.npz"
    steps = 20
    result = run_cli("simulate", PENDULUM, "--method", "tree", "--dt", "0.01", "--steps", steps, "--out", out)
    assert result.returncode == 0, result.stderr
    assert f"{steps} steps" in result.stdout
    assert "max constraint residual" in result.stdout

    with np.load(out, allow_pickle=False) as run:
        nbody = len(run["bodies"])
        assert nbody >= 1
        assert run["t"].shape == (steps + 1,)
        np.testing.assert_allclose(np.diff(run["t"]), 0.01, rtol=1e-12)
        assert run["poses"].shape == (steps + 1, nbody, 7)
        assert run["q"].shape[0] == steps + 1
        assert run["energy"].shape == (steps + 1,)
        assert run["constraint_residual"].shape == (steps + 1,)
        assert run["newton_iterations"].shape == (steps,)
        # Poses are x y z qw qx qy qz with unit quaternions.
        np.testing.assert_allclose(np.linalg.norm(run["poses"][..., 3:], axis=-1), 1.0, atol=1e-12)


@pytest.mark.heavy
def test_simulate_gives_the_method_advice_the_blender_reader_gives(tmp_path):
    """A rope of slender ball-jointed links under the tree method: the same advice as in Blender, on stderr,
    and the run still goes ahead (advice never refuses); the maximal method gets none."""
    from dataclasses import replace

    from addon.solver.advice import ROPE_LINKS, method_advice
    from addon.solver.mechfile.write import save_mechanism
    from tools.generate import pendulum_chain

    chain = pendulum_chain(ROPE_LINKS, radius=0.05)
    rope = chain.replace(joints=tuple(replace(j, type="ball", axis=(0.0, 0.0, 1.0), q0=(), v0=()) for j in chain.joints))
    path = tmp_path / "rope.toml"
    save_mechanism(rope, path)
    (advice,) = method_advice(rope, "tree")
    tree = run_cli("simulate", path, "--method", "tree", "--dt", "0.01", "--steps", 2, "--out", tmp_path / "t.npz")
    assert tree.returncode == 0, tree.stderr
    assert tree.stderr.strip() == f"python -m addon simulate: warning: {path}: {advice}"
    maximal = run_cli("simulate", path, "--method", "maximal", "--dt", "0.01", "--steps", 2, "--out", tmp_path / "m.npz")
    assert maximal.returncode == 0 and maximal.stderr.strip() == "", maximal.stderr


# ------------------------------------------------------------------------------------------------------
# Vehicles: presets/vehicles/*.toml hold a [vehicle] table and no bodies; the 'vehicle' method runs them.

SEDAN = vehicle_preset_path("sedan")


def test_simulate_a_vehicle_preset_writes_the_design_keys(tmp_path):
    out = tmp_path / "sedan.npz"
    steps = 240
    result = run_cli("simulate", SEDAN, "--method", "vehicle", "--dt", "0.0416667", "--steps", steps, "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("sedan slalom: 240 steps (vehicle, dt 0.0416667 s, finished)")

    with np.load(out, allow_pickle=False) as run:
        assert list(run["bodies"]) == ["chassis", "wheel_rl", "wheel_rr", "wheel_fl", "wheel_fr"]
        assert run["t"].shape == (steps + 1,)
        assert run["poses"].shape == (steps + 1, 5, 7)
        assert run["q"].shape[0] == steps + 1
        assert run["energy"].shape == (steps + 1,)
        assert run["constraint_residual"].shape == (steps + 1,)
        assert run["newton_iterations"].shape == (steps,)
        np.testing.assert_allclose(np.linalg.norm(run["poses"][..., 3:], axis=-1), 1.0, atol=1e-12)
        np.testing.assert_allclose(run["poses"][0, 0, :3], (0.0, 0.0, 0.55))


@pytest.mark.heavy
def test_a_vehicle_only_file_with_a_mechanism_method_exits_2(tmp_path):
    out = tmp_path / "r.npz"
    result = run_cli("simulate", SEDAN, "--method", "tree", "--out", out)
    assert result.returncode == 2
    assert str(SEDAN) in result.stderr
    assert "no [[body]] entries for the 'tree' method" in result.stderr
    assert "simulate it with the 'vehicle' method" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_the_vehicle_method_on_a_mechanism_without_a_vehicle_exits_2(tmp_path):
    out = tmp_path / "r.npz"
    result = run_cli("simulate", PENDULUM, "--method", "vehicle", "--out", out)
    assert result.returncode == 2
    assert str(PENDULUM) in result.stderr
    assert "no [vehicle] table" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_an_invalid_vehicle_file_exits_2_naming_table_and_field(tmp_path):
    bad = tmp_path / "tractor.toml"
    bad.write_text(SEDAN.read_text(encoding="utf-8").replace('type = "car"', 'type = "tractor"'), encoding="utf-8")
    result = run_cli("simulate", bad, "--method", "vehicle", "--out", tmp_path / "r.npz")
    assert result.returncode == 2
    assert f"{bad}: [vehicle]: field 'type' must be one of car" in result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------------------------------------------
# Shots: presets/shots/*.toml solved by `shot`

PARKING = REPO / "presets" / "shots" / "parallel_parking.toml"
CRANE = REPO / "presets" / "shots" / "crane_anti_sway.toml"


@pytest.mark.heavy
def test_shot_solves_a_vehicle_shot_and_the_replay_meets_its_key(tmp_path):
    out = tmp_path / "parking.npz"
    result = run_cli("shot", PARKING, "--out", out)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert "\n" not in line
    m = re.match(r"parallel parking: solved after \d+ iterations; key errors parked \S+; replay error \S+ m; "
                 r"wall time \S+ s; solver CPU (\S+) s \(evaluation (\S+) s, factorisation (\S+) s, "
                 r"line search (\S+) s, interior point (\S+) s\); KKT: (.+) -> ", line)
    assert m, line
    total, *parts = map(float, m.groups()[:5])
    assert "factorisations" in m.group(6) and "sparse LU instead" not in m.group(6), m.group(6)  # by stages
    assert abs(total - sum(parts)) <= 0.002 and min(parts) >= 0.0
    key = tomllib.loads(PARKING.read_text(encoding="utf-8"))["key"][0]
    with np.load(out, allow_pickle=False) as run:
        steps = 100
        assert str(run["status"]) == "solved"
        np.testing.assert_allclose(run["t"], np.arange(steps + 1) * 0.1, atol=1e-12)
        assert list(run["state_names"]) == ["theta", "x", "y", "steer"] and run["states"].shape == (steps + 1, 4)
        assert sorted(run["control_names"]) == ["drive_torque", "steer"]
        assert run["controls/steer"].shape == run["control_times/steer"].shape == (steps + 1,)
        assert run["controls/drive_torque"].shape == (steps,)
        assert list(run["key_names"]) == ["parked"] and run["key_errors"][0] < 1e-6
        assert float(run["replay_error"]) < 1e-8
        # The replay through the plain simulator (what is baked) ends on the key, straight and at rest.
        chassis = list(run["bodies"]).index("chassis")
        poses = run["poses"][:, chassis]
        assert poses.shape == (steps + 1, 7)
        np.testing.assert_allclose(poses[-1, :3], key["position"], atol=1e-6)
        np.testing.assert_allclose(np.abs(poses[-1, 3]), 1.0, atol=1e-6)  # heading 0: identity rotation
        np.testing.assert_allclose(poses[-1, :3], poses[-2, :3], atol=1e-6)  # stopped
        assert np.max(np.abs(poses[:, 0] - poses[0, 0])) > 4.0  # it did drive


@pytest.mark.heavy
def test_shot_solves_a_mechanism_shot_with_coordinates_as_states(tmp_path):
    out = tmp_path / "crane.npz"
    result = run_cli("shot", CRANE, "--out", out)
    assert result.returncode == 0, result.stderr
    assert "key errors load on the mark" in result.stdout
    with np.load(out, allow_pickle=False) as run:
        assert list(run["state_names"]) == ["rail", "cable"] and run["states"].shape == (51, 2)
        assert list(run["control_names"]) == ["rail"]
        assert np.all(run["key_errors"] < 1e-6)
        assert float(run["replay_error"]) < 1e-8
        assert run["poses"].shape[0] == 51


@pytest.mark.heavy
def test_an_unsolved_shot_is_exit_1_and_still_writes_its_npz(tmp_path):
    out = tmp_path / "parking.npz"
    result = run_cli("shot", PARKING, "--max-iter", "2", "--out", out)
    message = one_line_failure(result, 1)
    assert f"{PARKING}: max_iter:" in message
    iterations = int(re.search(r"max_iter after (\d+) iterations", result.stdout)[1])
    with np.load(out, allow_pickle=False) as run:
        assert str(run["status"]) == "max_iter" and int(run["iterations"]) == iterations
        assert run["poses"].shape == (0, 0, 7)


@pytest.mark.heavy
def test_invalid_shot_fields_exit_2_naming_file_and_field(tmp_path):
    bad = tmp_path / "parking.toml"
    bad.write_text(PARKING.read_text(encoding="utf-8").replace("steps = 100", "steps = 100.5"), encoding="utf-8")
    message = one_line_failure(run_cli("shot", bad, "--out", tmp_path / "r.npz"), 2)
    assert str(bad) in message and "'steps'" in message
    assert not (tmp_path / "r.npz").exists()


@pytest.mark.parametrize("edit, expected", [
    (("upper = 150.0", "upper = -200.0"),
     "[[control]] 'rail': fields 'lower' and 'upper' must be numbers with lower <= upper"),
    (('mechanism = "crane"', 'mechanism = "crane_x"'), "[shot]: field 'mechanism': no preset named 'crane_x'"),
])
@pytest.mark.heavy
def test_invalid_mechanism_shot_fields_exit_2_naming_the_field(edit, expected, tmp_path):
    bad = tmp_path / "crane.toml"
    bad.write_text(CRANE.read_text(encoding="utf-8").replace(*edit), encoding="utf-8")
    message = one_line_failure(run_cli("shot", bad, "--out", tmp_path / "r.npz"), 2)
    assert str(bad) in message and expected in message, message


VEHICLE_SHOT = 'format = 1\n{top}\n[shot]\nname = "x"\nvehicle = "sedan"\ndt = 0.1\nsteps = {steps}\n'
MECHANISM_SHOT = 'format = 1\n{top}\n[shot]\nname = "x"\nmechanism = "crane"\ndt = 0.1\nsteps = {steps}\n'


@pytest.mark.parametrize("template, top, steps, expected", [
    (VEHICLE_SHOT, "key = 5", 10, "field 'key' must be [[key]] tables, got 5"),
    (VEHICLE_SHOT, "obstacle = [1]", 10, "field 'obstacle' must be [[obstacle]] tables"),
    (VEHICLE_SHOT, "bounds = 5", 10, "field 'bounds' must be a [bounds] table"),
    (VEHICLE_SHOT, "", 100_000_000, "field 'steps' must be an integer in 2..10000"),  # would fill memory
    (MECHANISM_SHOT, "control = [1]", 10, "[[control]] #1: must be a table"),
    (MECHANISM_SHOT, "", 100_000_000, "[shot]: field 'steps' must be an integer in 1..10000, got 100000000"),
])
@pytest.mark.heavy
def test_shot_files_of_the_wrong_shape_exit_2_naming_the_field(template, top, steps, expected, tmp_path):
    bad = tmp_path / "shot.toml"
    bad.write_text(template.format(top=top, steps=steps), encoding="utf-8")
    message = one_line_failure(run_cli("shot", bad, "--out", tmp_path / "r.npz"), 2)
    assert str(bad) in message and expected in message, message


# ------------------------------------------------------------------------------------------------------
# --out never overwrites the input


@pytest.mark.heavy
@pytest.mark.parametrize("command, source", [("simulate", PENDULUM), ("shot", PARKING)])
def test_out_naming_the_input_is_refused_by_path_symlink_and_hard_link(command, source, tmp_path):
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    symlink, hard_link = tmp_path / "link.toml", tmp_path / "hard.toml"
    symlink.symlink_to(copy)
    os.link(copy, hard_link)
    for out in (copy, tmp_path / "sub" / ".." / copy.name, symlink, hard_link):
        message = one_line_failure(run_cli(command, copy, "--out", out), 2)
        assert "is the input file" in message, message
    assert copy.read_bytes() == source.read_bytes()


@pytest.mark.heavy
def test_unusable_out_paths_exit_2_naming_the_argument(tmp_path):
    unusable = [(tmp_path, "is a directory"), (REPO / "README.md" / "run.npz", "is a file, not a folder")]
    if Path("/proc/self").is_dir():  # Linux: no file can be created in /proc, not even by root
        unusable.append((Path("/proc/run.npz"), "cannot write in folder /proc"))
    for out, reason in unusable:
        message = one_line_failure(run_cli("simulate", PENDULUM, "--out", out), 2)
        assert f"--out {out}" in message and reason in message, message
    message = one_line_failure(run_cli("demo", "--out", REPO / "README.md"), 2)
    assert "is a file; give a directory" in message
    message = one_line_failure(run_cli("bench", "--quick", "--docs", REPO / "README.md"), 2)
    assert "is a file; give a directory" in message


def test_demo_outside_a_checkout_says_it_is_a_development_command(tmp_path):
    """An installed extension carries addon/ without the repository's demo/ beside it."""
    extension = tmp_path / "symplex"
    shutil.copytree(REPO / "addon", extension / "addon", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    message = one_line_failure(run_cli("demo", "--out", tmp_path / "out", cwd=extension), 2)
    assert "the demo is a development command" in message and "checkout" in message, message
    assert not (tmp_path / "out").exists()


@pytest.mark.heavy
@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null and /dev/zero")
def test_devices_are_refused_as_input_and_as_out(tmp_path):
    message = one_line_failure(run_cli("simulate", "/dev/zero", "--out", tmp_path / "r.npz"), 2)
    assert "/dev/zero: not a regular file" in message  # reading it would never end
    message = one_line_failure(run_cli("simulate", PENDULUM, "--steps", "2", "--out", "/dev/null"), 2)
    assert "--out /dev/null: not a regular file" in message
    assert Path("/dev/null").is_char_device()  # never replaced by a regular file, even when run as root


def test_out_through_a_symlink_writes_its_target(tmp_path):
    target, link = tmp_path / "target.npz", tmp_path / "link.npz"
    link.symlink_to(target)
    assert run_cli("simulate", PENDULUM, "--steps", "2", "--out", link).returncode == 0
    assert link.is_symlink() and target.is_file()
    with np.load(link, allow_pickle=False) as run:
        assert run["t"].shape == (3,)


def test_a_file_that_is_not_a_blend_is_exit_2_before_blender_starts(tmp_path):
    message = one_line_failure(run_cli("bake", REPO / "README.md", "--out", tmp_path / "x.blend"), 2)
    assert "README.md: not a Blender file" in message
    message = one_line_failure(run_cli("bake", REPO / "presets", "--out", tmp_path / "x.blend"), 2)
    assert "is a directory" in message
    assert not (tmp_path / "x.blend").exists()


# ------------------------------------------------------------------------------------------------------
# The last safety net: an unexpected exception is one line, its traceback only with --debug / SYMPLEX_DEBUG


def _run_with_a_bug(*flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # A fault injected where no input can reach: the mechanism loader raises ZeroDivisionError.
    probe = textwrap.dedent(f"""
        import sys
        import addon.solver.mechfile.read as mechfile
        from addon.__main__ import _exit, main
        def broken(path):
            return 1 / 0
        mechfile.load_mechanism = broken
        _exit(main([*{list(flags)!r}, "simulate", {str(PENDULUM)!r}, "--out", {str(REPO / "never.npz")!r}]))
    """)
    return subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, env={**os.environ, **(env or {})})


def test_an_internal_error_is_one_line_asking_for_a_report():
    message = one_line_failure(_run_with_a_bug(env={"SYMPLEX_DEBUG": ""}), 1)
    assert "internal error: ZeroDivisionError: division by zero (please report" in message
    assert "--debug or SYMPLEX_DEBUG=1" in message


@pytest.mark.parametrize("flags, env", [(("--debug",), {}), ((), {"SYMPLEX_DEBUG": "1"})])
def test_debug_shows_the_traceback_of_an_internal_error(flags, env):
    result = _run_with_a_bug(*flags, env=env)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("(please report)")

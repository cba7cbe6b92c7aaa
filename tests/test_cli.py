"""Tests for the command line (addon/__main__.py), run as a user would: `python -m addon ...` in a subprocess.

Covers help, exit codes and messages for bad input, laziness (no bpy for --help and simulate), and
the .npz that `simulate` writes (keys and shapes from DESIGN.md).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
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


def test_help_lists_every_command():
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    for command in ("simulate", "bake", "demo", "bench"):
        assert command in result.stdout


@pytest.mark.parametrize("command", ["simulate", "bake", "demo", "bench"])
def test_every_command_has_help(command):
    result = run_cli(command, "--help")
    assert result.returncode == 0, result.stderr
    assert f"usage: python -m addon {command}" in result.stdout


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

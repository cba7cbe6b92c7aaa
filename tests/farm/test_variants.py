"""Sweep keys and variants without a cluster: what a key names, the did-you-mean of unknown keys, values and
ranges, the product, and the TOML a worker reads back."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from addon.cli_input import CommandError
from addon.farm.address import resolve
from addon.farm.toml_write import dumps
from addon.farm.variants import RUN_DEFAULTS, parse_values, parse_variations, read_swept_file, variants
from addon.solver.presets import SHOT_PRESET_DIR, preset_path

from .conftest import REPO, cli

PARKING = SHOT_PRESET_DIR / "parallel_parking.toml"


def test_every_preset_reads_back_equal_from_its_toml_text():
    files = sorted((REPO / "presets").rglob("*.toml"))
    assert len(files) > 30
    for file in files:
        document = tomllib.loads(file.read_text())
        assert tomllib.loads(dumps(document)) == document, file


def test_keys_name_file_values_through_tables_entries_aliases_and_the_referenced_vehicle():
    shot = read_swept_file(PARKING)
    assert resolve("vehicle.mass", "shot", shot.documents).path == ("vehicle", "parameters", "mass")
    assert resolve("vehicle.mass", "shot", shot.documents).document == "vehicle"
    assert resolve("keys.0.x", "shot", shot.documents).path == ("key", 0, "position", 0)
    assert resolve("key.parked.heading", "shot", shot.documents).path == ("key", 0, "heading")
    assert resolve("dt", "shot", shot.documents).path == ("shot", "dt")
    assert resolve("max_iter", "shot", shot.documents).setting == "max_iter"
    pendulum = read_swept_file(preset_path("pendulum"))
    assert resolve("body.bob.mass", "mechanism", pendulum.documents).path == ("body", 0, "mass")
    assert resolve("dt", "mechanism", pendulum.documents).setting == "dt"


@pytest.mark.parametrize("key, hint", [("vehicle.mas", "did you mean 'mass'"), ("key.parkd.x", "did you mean 'parked'"),
                                       ("costs.efort", "did you mean 'effort'"), ("key.3.x", "numbers 0..0")])
def test_an_unknown_key_names_what_is_there(key, hint):
    with pytest.raises(CommandError, match=hint):
        resolve(key, "shot", read_swept_file(PARKING).documents)


def test_unknown_key_on_the_command_line_is_exit_2_with_did_you_mean(tmp_path):
    result = cli("sweep", PARKING, "--vary", "vehicle.mas=1000,2000", "--out", tmp_path / "sweep")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "did you mean 'mass'" in result.stderr
    assert not (tmp_path / "sweep").exists()


def test_values_and_ranges_take_the_type_of_the_field():
    assert parse_values("k", "1300:1800:6") == [1300.0, 1400.0, 1500.0, 1600.0, 1700.0, 1800.0]
    assert parse_values("k", "1,2.5,true,tree") == [1, 2.5, True, "tree"]
    with pytest.raises(CommandError, match="lo:hi:n"):
        parse_values("k", "1:2:1")
    shot = read_swept_file(PARKING)
    (mass,) = parse_variations(shot, ["vehicle.mass=1200,1500"])
    assert mass.values == (1200.0, 1500.0) and all(isinstance(v, float) for v in mass.values)
    with pytest.raises(CommandError, match="steps"):
        parse_variations(read_swept_file(preset_path("pendulum")), ["steps=0"])


def test_the_product_runs_in_order_and_each_variant_carries_its_files():
    shot = read_swept_file(PARKING)
    batch = variants(shot, parse_variations(shot, ["vehicle.mass=1200,1500", "costs.smoothness=0.1,0.2,0.4"]))
    assert [v.name for v in batch] == [f"v0{i}" for i in range(6)]
    assert batch[1].values == (("vehicle.mass", 1200.0), ("costs.smoothness", 0.2))
    main = tomllib.loads(batch[4].files[batch[4].main])
    vehicle = tomllib.loads(batch[4].files[main["shot"]["vehicle"]])
    assert main["costs"]["smoothness"] == 0.2 and vehicle["vehicle"]["parameters"]["mass"] == 1500.0
    assert batch[0].settings == RUN_DEFAULTS["shot"]


def test_without_dask_the_command_says_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['distributed'] = None  # as if not installed\n"
            "from addon.__main__ import main; sys.exit(main(sys.argv[1:]))")
    result = subprocess.run([sys.executable, "-c", code, "sweep", str(preset_path("pendulum")), "--vary",
                             "dt=0.01,0.02", "--workers", "1", "--out", str(tmp_path / "s")], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "pip install dask distributed" in result.stderr, result.stderr


def test_simulate_run_defaults_are_the_simulate_commands():
    from addon.__main__ import build_parser

    args = build_parser().parse_args(["simulate", "x.toml"])
    assert {k: getattr(args, k) for k in RUN_DEFAULTS["mechanism"]} == RUN_DEFAULTS["mechanism"]

"""`python -m addon sweep` on a real Dask cluster: outputs, bit-for-bit results whatever runs them, a failing
variant, a worker killed mid-run."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from addon.solver.presets import preset_path

from .conftest import REPO, cli, distributed

PENDULUM = preset_path("pendulum")
SIX = ("--vary", "body.bob.mass=1,2,3", "--vary", "dt=0.01,0.02", "--vary", "steps=200")


def rows(folder) -> list[dict]:
    with open(folder / "sweep.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def same_arrays(a, b) -> bool:
    with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
        return set(x.files) == set(y.files) and all(
            x[n].dtype == y[n].dtype and x[n].shape == y[n].shape and x[n].tobytes() == y[n].tobytes() for n in x.files)


def test_a_six_variant_sweep_writes_an_npz_each_a_csv_and_a_plot_and_reports_its_failing_variants(cluster, tmp_path):
    """Six variants on the cluster DASK_SCHEDULER_ADDRESS names; the two with a negative mass fail by name with the
    loader's message, and the other four finish."""
    out = tmp_path / "sweep"
    result = cli("sweep", PENDULUM, "--vary", "body.bob.mass=1,-1,3", "--vary", "dt=0.01,0.02", "--vary", "steps=200",
                 "--out", out, env={"DASK_SCHEDULER_ADDRESS": cluster})
    assert result.returncode == 1
    assert f"on the Dask scheduler at {cluster}" in result.stderr
    failure = result.stderr.strip().splitlines()[-1]
    assert failure.startswith("python -m addon sweep: 2 of 6 variants failed: v02 (body.bob.mass=-1.0, dt=0.01, "
                              "steps=200): v02/pendulum.toml: [[body]] 'bob': field 'mass'")
    assert "; v03 (body.bob.mass=-1.0, dt=0.02, steps=200): v03/pendulum.toml" in failure
    table = rows(out)
    assert [r["variant"] for r in table] == [f"v0{i}" for i in range(6)]
    assert [(r["body.bob.mass"], r["dt"]) for r in table][:2] == [("1.0", "0.01"), ("1.0", "0.02")]
    assert [r["status"] for r in table] == ["finished"] * 2 + ["invalid"] * 2 + ["finished"] * 2
    assert all(float(r["cost"]) >= 0 for r in table if r["status"] == "finished")
    assert sorted(p.name for p in out.glob("*.npz")) == ["v00.npz", "v01.npz", "v04.npz", "v05.npz"]
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(result.stdout.strip().splitlines()) == 7 and "4 of 6 variants finished" in result.stdout
    with np.load(out / "v05.npz") as z:
        assert len(z["t"]) == 201 and float(z["t"][-1]) == pytest.approx(4.0)


@pytest.mark.slow
def test_one_local_worker_two_local_workers_and_a_cluster_give_the_same_arrays(cluster, tmp_path):
    """Every array of every variant's .npz, bit for bit, whatever process solved it."""
    runs = {"cluster": ("--scheduler", cluster), "one": ("--workers", "1"), "two": ("--workers", "2")}
    for name, where in runs.items():
        result = cli("sweep", PENDULUM, *SIX, *where, "--out", tmp_path / name)
        assert result.returncode == 0, result.stderr
    for i in range(6):
        assert same_arrays(tmp_path / "cluster" / f"v0{i}.npz", tmp_path / "one" / f"v0{i}.npz")
        assert same_arrays(tmp_path / "cluster" / f"v0{i}.npz", tmp_path / "two" / f"v0{i}.npz")


@pytest.mark.slow
def test_a_worker_killed_mid_run_costs_only_its_task(tmp_path):
    """SIGKILL the worker running a variant: the scheduler runs it again elsewhere; nothing else is lost."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as local, \
            distributed.Client(local) as client:
        out = tmp_path / "sweep"
        sweep = subprocess.Popen(
            [sys.executable, "-m", "addon", "sweep", str(preset_path("chain_5")), "--vary", "body.link_1.mass=1,2,3,4",
             "--vary", "steps=3000", "--scheduler", local.scheduler_address, "--out", str(out)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline, victim = time.monotonic() + 120, None
        while victim is None and time.monotonic() < deadline and sweep.poll() is None:
            busy = [worker for worker, tasks in client.processing().items() if tasks]
            victim = busy[0] if busy else None
            time.sleep(0.05)
        assert victim is not None, "no task was seen running"
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        _, stderr = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, stderr
    assert [r["status"] for r in rows(out)] == ["finished"] * 4
    assert len(list(out.glob("v0?.npz"))) == 4

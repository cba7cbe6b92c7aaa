"""Fixtures for the farm tests (batch bakes, sweeps, the Flamenco job type): a real Dask cluster, no mocks.

These tests run only under .venv, the one environment with dask and distributed (requirements.txt); without
them the directory is skipped with the reason. `cluster` is a real distributed.LocalCluster of 2 worker
processes shared by the module's tests; the commands under test reach it with --scheduler, as they would a
remote one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="the farm tests need dask and distributed (.venv)")

REPO = Path(__file__).resolve().parents[2]


def cli(*args, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m addon ARGS` as a user runs it, from the checkout (`env`: variables added to this one's)."""
    return subprocess.run([sys.executable, "-m", "addon", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def cluster() -> str:
    """The scheduler address of a LocalCluster of 2 single-threaded worker processes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as local:
        yield local.scheduler_address

"""Where farm tasks run: a Dask client on a local cluster of worker processes, or on a given scheduler.

Owns the one import of `distributed` (lazy, so the extension and the other commands run without Dask), the
choice of cluster (`--scheduler ADDRESS`, else `--workers N` local processes, else the environment variable
DASK_SCHEDULER_ADDRESS, else a LocalCluster with one single-threaded worker process per core) and running
independent tasks with each result handed back as it finishes. A task a dead worker held is re-run on another
worker by the scheduler (up to `distributed.scheduler.allowed-failures` times, 3 by default) and then reported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..cli_input import CommandError

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
CONNECT_TIMEOUT = "20s"  # a scheduler that does not answer within this is reported, not waited for


def require():
    """The `distributed` module; CommandError (exit 2) saying how to install it when it is missing."""
    try:
        import distributed
    except ModuleNotFoundError:
        raise CommandError(
            f"this command runs on Dask, which {sys.executable} cannot import; install it with "
            f"`{sys.executable} -m pip install dask distributed` (requirements.txt pins the tested versions)"
        ) from None
    return distributed


def _address(workers: int | None, scheduler: str | None) -> str | None:
    """The scheduler to use: --scheduler, else $DASK_SCHEDULER_ADDRESS unless --workers asks for local ones."""
    return scheduler or (None if workers else os.environ.get(SCHEDULER_ENV) or None)


def describe(workers: int | None, scheduler: str | None) -> str:
    """Where the work will run, in words (for the command's first line)."""
    address = _address(workers, scheduler)
    if address:
        return f"the Dask scheduler at {address}"
    count = workers or os.cpu_count() or 1
    return f"{count} local worker process{'es' if count > 1 else ''}"


@contextlib.contextmanager
def client(workers: int | None, scheduler: str | None) -> Iterator[Any]:
    """A `distributed.Client`: on `scheduler` (or $DASK_SCHEDULER_ADDRESS when `workers` is not given), else
    on a LocalCluster of `workers` (default: the number of cores) processes with one thread each."""
    distributed = require()
    address = _address(workers, scheduler)
    if address:
        try:
            connection = distributed.Client(address, timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise CommandError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        with connection:
            yield connection
        return
    cluster = distributed.LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                       processes=True, dashboard_address=":0", silence_logs=logging.ERROR)
    with cluster, distributed.Client(cluster) as connection:
        yield connection


def run_tasks(connection: Any, function: Callable, items: Sequence, names: Sequence[str]
              ) -> Iterator[tuple[int, Any, BaseException | None]]:
    """Run `function(item)` for every item, each its own task named by `names`; yields (index, result, None)
    as tasks finish, or (index, None, error) for a task the cluster could not finish (its worker died more
    often than allowed, or it was cancelled). `function` is expected to report its own failures in its result."""
    distributed = require()
    futures = [connection.submit(function, item, key=f"symplex-{name}-{os.urandom(4).hex()}")
               for item, name in zip(items, names)]
    index = {future.key: i for i, future in enumerate(futures)}
    for future in distributed.as_completed(futures):
        i = index[future.key]
        try:
            yield i, future.result(), None
        except Exception as exc:  # KilledWorker, CancelledError, or a bug in `function` (reported per task)
            yield i, None, exc

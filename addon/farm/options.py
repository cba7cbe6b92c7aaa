"""The farm's command-line options: --workers/--scheduler on `bake` and `sweep`, the batch form of `bake`
and the `sweep` subcommand. Builds argparse parsers only; the commands import Dask when they run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .cluster import SCHEDULER_ENV


def worker_count(text: str) -> int:
    """--workers: an integer in 1..1024."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text[:40]!r}") from None
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"must be an integer in 1..1024, got {text[:40]}")
    return value


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=worker_count, metavar="N",
                       help="local Dask worker processes (default: one per core)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help=f"a Dask scheduler, e.g. tcp://host:8786 (or set {SCHEDULER_ENV}); needs dask and "
                       "distributed (docs/farm.md)")


def add_batch_bake_options(bake: argparse.ArgumentParser) -> None:
    """The batch form of `bake`: several scenes, --out-dir, --force, and where to run."""
    bake.add_argument("--out-dir", type=Path, metavar="DIR",
                      help="bake every SCENE.blend into DIR/<its name> on Dask worker processes, each file in its "
                      "own process; a file whose output is newer is skipped unless --force")
    bake.add_argument("--force", action="store_true", help="with --out-dir: bake again even when the output is newer")
    add_cluster_options(bake)


def add_sweep_command(commands, parents: list[argparse.ArgumentParser]) -> None:
    def run(args: argparse.Namespace) -> int:
        from .sweep import cmd_sweep

        return cmd_sweep(args)

    sweep = commands.add_parser(
        "sweep", parents=parents, help="solve every combination of varied values of a shot or mechanism file (Dask)",
        description="Solve the Cartesian product of the variations of a shot file (as `shot`) or a mechanism file "
        "(as `simulate`) on Dask worker processes: DIR/<variant>.npz each, DIR/sweep.csv (values, status, cost, "
        "key errors, time, message) and DIR/sweep.png (cost over the varied values). KEY is a dotted path into "
        "the file (shot.dt, vehicle.mass, key.parked.heading, body.bob.mass, start.position.x) or a run setting "
        "(dt, steps, method, tol for mechanisms; max_iter for shots); docs/farm.md. Exit 1 when a variant failed.",
    )
    sweep.add_argument("file", type=Path, metavar="FILE.toml", help="shot file or mechanism file")
    sweep.add_argument("--vary", action="append", required=True, metavar="KEY=VALUES",
                       help="KEY=v1,v2,... or KEY=lo:hi:n (n values, ends included); repeat for more keys; "
                       "one value fixes KEY for every variant")
    sweep.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    add_cluster_options(sweep)
    sweep.set_defaults(func=run)

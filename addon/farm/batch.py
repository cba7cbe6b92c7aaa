"""`python -m addon bake A.blend B.blend ... --out-dir DIR`: many scenes baked at once on a Dask cluster.

Owns the plan (which file goes where, which are skipped because their output is newer than the input,
unless --force), the task a worker runs for one file and the command's report. Every file is baked by its
own child process (`python -m addon bake FILE --out TEMP`), so Blender crashing on one file costs only that
file. The child saves into a hidden temporary folder in DIR, and the file is renamed onto DIR/<name>.blend only
when the bake finished and saved: a file appears in DIR complete or not at all. The command removes every job's
hidden folder when the run ends, so a worker that dies mid-bake leaves none behind. With a remote scheduler, the input
files and DIR must be reachable under the same paths on every worker (shared storage, docs/farm.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..cli_input import EXIT_FAILED, EXIT_OK, CommandError, blend_file, output_path
from . import cluster
from .progress import Progress

PACKAGE = __name__.split(".")[0]  # the command-line package the child runs (`addon` in a checkout)
CHECKOUT = Path(__file__).resolve().parents[2]  # the folder that holds it
CLI_PREFIX = "python -m addon bake: "


@dataclass(frozen=True)
class FileJob:
    source: str  # absolute paths: the worker may run in another folder
    target: str
    scratch: str  # the hidden folder beside the target the child saves into (removed by the command at the end)


@dataclass(frozen=True)
class BakeOutcome:
    baked: bool
    seconds: float
    detail: str  # the bake's first summary line, or why it failed


def bake_in_child(job: FileJob) -> BakeOutcome:
    """Bake `job.source` in a child process into a temporary file beside `job.target`, renamed onto it when the
    bake succeeded (runs on a worker)."""
    target = Path(job.target)
    start = time.perf_counter()
    # a private folder beside the target: the rename stays on one file system, and Blender keeps no backup; one
    # per attempt, as the scheduler runs a dead worker's task again while that worker's child may still write
    Path(job.scratch).mkdir(exist_ok=True)
    attempt = Path(tempfile.mkdtemp(dir=job.scratch))
    try:
        temp = attempt / target.name
        result = subprocess.run([sys.executable, "-m", PACKAGE, "bake", job.source, "--out", str(temp)],
                                cwd=CHECKOUT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            return BakeOutcome(False, seconds, _failure(result))
        os.replace(temp, target)
    finally:
        shutil.rmtree(attempt, ignore_errors=True)
    return BakeOutcome(True, seconds, _summary(result.stdout))


def _summary(stdout: str) -> str:
    """The first setup's summary line of a child bake's output (Blender logs lines of its own there too)."""
    baked = [line for line in stdout.splitlines() if ": Baked " in line]
    more = f" (+{len(baked) - 1} more setups)" if len(baked) > 1 else ""
    return baked[0] + more if baked else "baked"


def _failure(result: subprocess.CompletedProcess) -> str:
    """Why a child bake failed, in one line: its own error line, or the signal that ended it."""
    if result.returncode < 0:
        with contextlib.suppress(ValueError):
            return f"the bake process died ({signal.Signals(-result.returncode).name})"
        return f"the bake process died (signal {-result.returncode})"
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    if not lines:
        return f"the bake process exited with code {result.returncode}"
    return lines[-1].removeprefix(CLI_PREFIX)


def plan(sources: list[Path], out_dir: Path, force: bool) -> tuple[list[FileJob], list[Path]]:
    """The jobs to run and the sources skipped (their output in `out_dir` is newer, and not `force`).
    CommandError when two sources would write the same output."""
    by_name: dict[str, Path] = {}
    for source in sources:
        other = by_name.setdefault(source.name, source)
        if other != source:
            raise CommandError(f"{other} and {source} would both be baked to {out_dir / source.name}; "
                               "bake them into different --out-dir folders")
    jobs, skipped = [], []
    for source in sources:
        target = out_dir / source.name
        if not force and target.is_file() and target.stat().st_mtime > source.stat().st_mtime:
            skipped.append(source)
        else:
            target = target.resolve()
            scratch = target.parent / f".symplex-bake-{uuid.uuid4().hex[:12]}"
            jobs.append(FileJob(str(source.resolve()), str(target), str(scratch)))
    return jobs, skipped


def check_sources(sources: list[Path], out_dir: Path) -> None:
    """Every source a readable .blend and none of them an output; one CommandError naming every bad one."""
    problems = []
    for source in sources:
        try:
            blend_file(source)
            output_path(out_dir / source.name, source)
        except CommandError as exc:
            problems.append(str(exc))
    if problems:
        raise CommandError("; ".join(problems))


def cmd_batch_bake(args: argparse.Namespace) -> int:
    """The batch form of `bake`: every SCENE.blend into --out-dir, summary line per file, exit 1 naming every
    file that failed."""
    cluster.require()
    sources, out_dir = list(args.scene), args.out_dir
    output_path(out_dir, *sources, directory=True)
    check_sources(sources, out_dir)
    jobs, skipped = plan(sources, out_dir, args.force)
    for source in skipped:
        print(f"{source}: skipped, {out_dir / source.name} is newer (--force bakes it again)")
    if not jobs:
        return EXIT_OK
    print(f"baking {len(jobs)} file{'s' if len(jobs) > 1 else ''} on {cluster.describe(args.workers, args.scheduler)}",
          file=sys.stderr)
    failures = []
    progress = Progress(len(jobs), "files")
    try:
        with cluster.client(args.workers, args.scheduler) as connection:
            names = [Path(job.source).name for job in jobs]
            for i, outcome, error in cluster.run_tasks(connection, bake_in_child, jobs, names):
                source = Path(jobs[i].source)
                if error is not None:
                    outcome = BakeOutcome(False, 0.0, f"the cluster could not run it: {type(error).__name__}: {error}")
                if outcome.baked:
                    line = f"{source}: baked in {outcome.seconds:.1f} s -> {jobs[i].target} ({outcome.detail})"
                else:
                    line = f"{source}: FAILED after {outcome.seconds:.1f} s: {outcome.detail}"
                    failures.append(f"{source.name} ({outcome.detail})")
                progress.advance(source.name, line)
    finally:
        progress.close()
        for job in jobs:  # a worker that died mid-bake could not remove its own
            shutil.rmtree(job.scratch, ignore_errors=True)
    if failures:
        raise CommandError(f"{len(failures)} of {len(jobs)} files failed: " + "; ".join(failures), EXIT_FAILED)
    return EXIT_OK

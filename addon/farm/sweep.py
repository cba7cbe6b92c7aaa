"""`python -m addon sweep FILE.toml --vary KEY=v1,v2,... [--vary ...] --out DIR`: every combination of the
variations of a shot or mechanism file solved in parallel on a Dask cluster (docs/farm.md).

Owns the command: checks (the file, the keys, DIR), the tasks (solve.py's solve_variant, one per variant), and
the outputs in DIR: <variant>.npz (the layout `shot` or `simulate` writes, written atomically), sweep.csv (one
row per variant: its values, status, cost, the figures of solve.py, time and message) and sweep.png (plot.py).
A variant that fails is reported by name with its message and does not stop the others; the exit is 1 then.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

from ..cli_input import EXIT_FAILED, EXIT_OK, CommandError, atomic_output, output_path
from . import cluster
from .plot import plot_sweep
from .progress import Progress
from .solve import VariantResult, solve_variant
from .variants import Variant, parse_variations, read_swept_file, variants

COST_NAMES = {"shot": "cost (shot objective)", "mechanism": "cost (largest energy drift |E - E0|, J)"}


def _check_file(path: Path, kind: str) -> None:
    """The swept file itself must load (exit 2 before any cluster starts)."""
    if kind == "shot":
        from ..solver.shots.cli import load_shot_file

        load_shot_file(path)
        return
    from ..solver.mechfile.read import load_mechanism
    from ..solver.model import MechanismError

    try:
        load_mechanism(path)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None


def _line(variant: Variant, result: VariantResult, out: Path | None) -> str:
    if result.ok:
        return f"{variant.label()}: {result.status}, cost {result.cost:.6g}, {result.seconds:.2f} s -> {out}"
    return f"{variant.label()}: FAILED ({result.status}): {result.message}"


def write_csv(path: Path, keys: list[str], batch: list[Variant], results: list[VariantResult]) -> None:
    figures = list(dict.fromkeys(name for r in results for name in r.figures))
    with atomic_output(path, ".csv") as temp, open(temp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["variant", *keys, "status", "cost", *figures, "seconds", "message"])
        for variant, result in zip(batch, results):
            writer.writerow([variant.name, *(v for _, v in variant.values), result.status, repr(result.cost),
                             *(repr(result.figures.get(f, math.nan)) for f in figures), f"{result.seconds:.3f}",
                             result.message.replace("\n", "; ")])


def cmd_sweep(args: argparse.Namespace) -> int:
    cluster.require()
    swept = read_swept_file(args.file)
    _check_file(args.file, swept.kind)
    batch = variants(swept, parse_variations(swept, args.vary))
    output_path(args.out, args.file, directory=True)
    print(f"sweeping {len(batch)} variant{'s' if len(batch) > 1 else ''} of {args.file} on {cluster.describe(args.workers, args.scheduler)}",
          file=sys.stderr)
    results: list[VariantResult | None] = [None] * len(batch)
    progress = Progress(len(batch), "variants")
    try:
        with cluster.client(args.workers, args.scheduler) as connection:
            for i, result, error in cluster.run_tasks(connection, solve_variant, batch, [v.name for v in batch]):
                if error is not None:
                    result = VariantResult(batch[i].name, "lost", f"the cluster could not run it: "
                                           f"{type(error).__name__}: {error}", math.nan, 0.0)
                out = None
                if result.npz is not None:
                    out = args.out / f"{batch[i].name}.npz"
                    with atomic_output(out, ".npz") as temp:
                        temp.write_bytes(result.npz)
                results[i] = result
                progress.advance(batch[i].name, _line(batch[i], result, out))
    finally:
        progress.close()
    keys = [key for key, _ in batch[0].values]
    write_csv(args.out / "sweep.csv", keys, batch, results)
    note = plot_sweep(args.out / "sweep.png", f"{args.file.name}: {len(batch)} variants", COST_NAMES[swept.kind],
                      keys, [tuple(v for _, v in variant.values) for variant in batch], results)
    failed = [(v, r) for v, r in zip(batch, results) if not r.ok]
    print(f"sweep: {len(batch) - len(failed)} of {len(batch)} variants {'solved' if swept.kind == 'shot' else 'finished'}"
          f" -> {args.out / 'sweep.csv'}, {note}")
    if failed:
        raise CommandError(f"{len(failed)} of {len(batch)} variants failed: "
                           + "; ".join(f"{v.label()}: {r.message or r.status}" for v, r in failed), EXIT_FAILED)
    return EXIT_OK

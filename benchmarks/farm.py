"""Farm benchmark: one sweep of the parallel-parking shot on 1 and on 2 local Dask workers.

Runs `python -m addon sweep presets/shots/parallel_parking.toml --vary ... --workers N` as a user does (a
subprocess, cluster start-up included in the wall time), reads each run's sweep.csv, and checks that every
variant's .npz holds the same arrays bit for bit in both runs (MEASURED aside: measurements, not results).
32 variants (8 masses x 4 smoothness weights); --quick: 4.

    python -m addon bench --suite farm [--quick]
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHOT = "presets/shots/parallel_parking.toml"
VARY = ("vehicle.mass=1300:1800:8", "costs.smoothness=0.05,0.1,0.2,0.4")
QUICK_VARY = ("vehicle.mass=1400,1700", "costs.smoothness=0.1,0.2")
WORKERS = (1, 2)
MEASURED = {"wall_time", "message"}  # the solve's wall time, and the report that quotes it


def sweep_command(vary: tuple[str, ...], workers: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "addon", "sweep", SHOT, *(a for v in vary for a in ("--vary", v)),
            "--workers", str(workers), "--out", str(out)]


def same_arrays(a: Path, b: Path) -> bool:
    """Every array of the two .npz files equal bit for bit (MEASURED aside)."""
    with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
        names = set(x.files) - MEASURED
        return names == set(y.files) - MEASURED and all(
            x[n].dtype == y[n].dtype and x[n].shape == y[n].shape and x[n].tobytes() == y[n].tobytes() for n in names)


def run(quick: bool) -> str:
    vary = QUICK_VARY if quick else VARY
    rows, outs = [], []
    with tempfile.TemporaryDirectory(prefix="symplex-bench-farm-") as temp:
        for workers in WORKERS:
            out = Path(temp) / f"w{workers}"
            load_before = os.getloadavg()[0]
            start = time.perf_counter()
            result = subprocess.run(sweep_command(vary, workers, out), cwd=REPO, capture_output=True, text=True)
            wall = time.perf_counter() - start
            load = (load_before, os.getloadavg()[0])
            with open(out / "sweep.csv", newline="") as handle:
                table = list(csv.DictReader(handle))
            solved = sum(r["status"] == "solved" for r in table)
            busy = sum(float(r["seconds"]) for r in table)
            rows.append((workers, len(table), solved, wall, busy, load, result.returncode))
            outs.append(out)
        names = sorted(p.name for p in outs[0].glob("*.npz"))
        identical = sum(same_arrays(outs[0] / n, outs[1] / n) for n in names
                        if (outs[1] / n).exists())
    base = rows[0][3]
    lines = [
        f"Sweep: `python -m addon sweep {SHOT} " + " ".join(f"--vary {v}" for v in vary) + " --workers N --out DIR`.",
        "Wall time is the whole command (LocalCluster start-up, solves, .npz, CSV and plot); solve time is the sum of",
        "the variants' own solve times from sweep.csv; speed-up = wall(1 worker) / wall(N workers). Load is the",
        f"machine's 1-minute load average before and after the run ({os.cpu_count()} cores; other work on the machine",
        "shows as load above the worker count, and as solve times that grow with the number of workers).",
        "",
        "| workers | variants | solved | wall time (s) | sum of solve times (s) | speed-up | load before / after | exit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {w} | {n} | {s} | {wall:.1f} | {busy:.1f} | {base / wall:.2f} | {a:.1f} / {b:.1f} | {code} |"
              for w, n, s, wall, busy, (a, b), code in rows]
    lines += ["", f"Per-variant .npz arrays identical bit for bit between 1 and 2 workers (wall_time and message aside): {identical} of {len(names)}."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run("--quick" in sys.argv))

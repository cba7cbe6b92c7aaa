"""The contact rows' sparse factor: SuperLU against the block LU of maximal/contact_ldu.py on stacked
and long contact scenes (wrecking wall, 200-box pile, 128 and 1000 dominoes), from the same state.

Usage: python -m benchmarks.contact_factor [--quick] [--out docs/benchmarks_maximal.md]
(replaces its section of --out). Each scene is stepped with the default solver to its start step, then
both factorisations run the same steps from copies of that state, one after the other.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np

from addon.solver.maximal.linear import LinearSolver
from addon.solver.maximal.start import start_from_tree
from addon.solver.maximal.variational import step
from addon.solver.model import Mechanism
from benchmarks.maximal import DT, OUT, TITLE
from benchmarks.run import write_sections
from tools.contact_scenes import box_pile, falling_dominoes, wrecking_wall

TOL = 1e-10
BORDERS = (("superlu", "SuperLU"), ("sparse", "block LU"))


def scenes(quick: bool) -> list[tuple[str, Mechanism, int, int]]:
    """(label, mechanism, start step, timed steps)."""
    if quick:
        return [("128 dominoes", falling_dominoes(128), 2, 2), ("wrecking wall", wrecking_wall(4, 5), 0, 2)]
    return [("wrecking wall", wrecking_wall(10, 10), 0, 2), ("200-box pile", box_pile(200), 26, 2),
            ("128 dominoes", falling_dominoes(128), 2, 3), ("1000 dominoes", falling_dominoes(1000), 2, 2)]


def run_border(model, start, border: str, steps: int) -> dict:
    """Median ms per step and per factorisation, largest fill, Newton iterations, final state, fallbacks."""
    state = copy.deepcopy(start)
    solver = state.solver = LinearSolver(model.bodies.count, list(model.primary), border)
    factor, fills, factor_times = solver.factor, [], []

    def timed(A):
        t = time.perf_counter()
        factor(A)
        factor_times.append(time.perf_counter() - t)
        fills.append((solver.stored_entries, solver.unknowns))

    solver.factor = timed
    times, iterations = [], []
    for _ in range(steps):
        t = time.perf_counter()
        iterations.append(step(model, state, DT, TOL).iterations)
        times.append(time.perf_counter() - t)
    fill, unknowns = max(fills, default=(0, 0))
    return {"ms": 1e3 * float(np.median(times)), "factor_ms": 1e3 * float(np.median(factor_times)),
            "fill": fill, "unknowns": unknowns, "iterations": iterations, "fallbacks": solver.fallbacks,
            "state": np.concatenate([state.x.ravel(), state.q.ravel(), state.v.ravel(), state.w.ravel()])}


def section(quick: bool) -> list[str]:
    lines = ["## Contact rows: SuperLU against the block LU on the body-contact graph",
             "",
             f"Each scene stepped (dt = {DT} s, default solver) to its start step, then the given steps from that",
             "state with each factorisation of the bordered Newton matrix (maximal/linear.py): SuperLU (partial",
             "pivoting, minimum degree on Pb + Pb^T) and the block LU of maximal/contact_ldu.py (static order from",
             "the body-contact graph, pivoting inside blocks, native/block_lu.c). ms: median wall ms per step and",
             "per factorisation; fill: largest number of stored factor entries (SuperLU: nonzeros of L + U; block",
             "LU: its dense blocks) and per unknown; iterations: Newton iterations per step; diff: max |state",
             "difference| after the steps (x, q, v, w); fallbacks: block LU factors handed to SuperLU.",
             "",
             "| scene | start | unknowns | SuperLU ms/step | factor ms | fill | block LU ms/step | factor ms | fill "
             "| fill per unknown | iterations equal | diff | fallbacks |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for label, mech, skip, steps in scenes(quick):
        model, state = start_from_tree(mech)
        state.solver = LinearSolver(model.bodies.count, list(model.primary))
        for _ in range(skip):
            step(model, state, DT, TOL)
        res = {border: run_border(model, state, border, steps) for border, _ in BORDERS}
        a, b = res["superlu"], res["sparse"]
        diff = float(np.max(np.abs(a["state"] - b["state"])))
        lines.append(f"| {label} | {skip} | {b['unknowns']} | {a['ms']:.0f} | {a['factor_ms']:.1f} | {a['fill']} | "
                     f"{b['ms']:.0f} | {b['factor_ms']:.1f} | {b['fill']} | {b['fill'] / max(b['unknowns'], 1):.0f} | "
                     f"{'yes' if a['iterations'] == b['iterations'] else a['iterations'] + b['iterations']} | "
                     f"{diff:.0e} | {b['fallbacks']} |")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small scenes, few steps")
    parser.add_argument("--out", type=Path, default=OUT, help="Markdown file whose section is replaced")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.contact_factor" + (" --quick" if args.quick else "")
    write_sections(args.out, command, lambda: [section(args.quick)], TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

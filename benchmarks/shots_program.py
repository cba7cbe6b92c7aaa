"""Mechanism shots solved with their evaluation by compiled programs in C (shots/tree_program.py) against the
numpy reference path (tree_batch.py rows and Jacobian, the tape's Hessian: tree_hessian.TapeTerms), in the same
process, interleaved (reference, compiled, reference, compiled, ...), with CasADi + IPOPT beside them.

Prints, per shot and path, the median and the best solver CPU (sum of NLPResult.timings: evaluation,
factorisation, line search) over `reps` solves after one warm-up solve each (which compiles the programs), the
iterations and the objective; then IPOPT's CPU and iterations from our start (benchmarks/shots.py).

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots_program [--reps 5] [--no-ipopt] [NAME ...]
"""

from __future__ import annotations

import argparse

import numpy as np

from addon.solver.shots import mechanism_shots
from addon.solver.shots.tree_program import compiled
from benchmarks.shots import MECHANISM_SHOTS, _mechanism_shot, mechanism_ipopt

PATHS = {"reference": lambda model: False, "compiled": compiled}  # mechanism_shots.compiled for each path


def _solve(shot, path: str):
    """solve_mechanism_shot with the evaluation of `path`."""
    mechanism_shots.compiled = PATHS[path]
    try:
        return mechanism_shots.solve_mechanism_shot(shot)
    finally:
        mechanism_shots.compiled = compiled


def _line(name: str, path: str, results: list) -> str:
    cpu = [sum(r.timings.values()) for r in results]
    best = results[int(np.argmin(cpu))]
    parts = ", ".join(f"{part} {1e3 * t:.1f}" for part, t in best.timings.items())
    return (f"{name} {path}: solver CPU median {1e3 * np.median(cpu):.1f} ms, best {1e3 * min(cpu):.1f} ms "
            f"({parts}); {best.iterations} iterations, objective {best.objective!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(MECHANISM_SHOTS))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-ipopt", action="store_true")
    args = parser.parse_args()
    for name in args.names:
        shot = _mechanism_shot(name)
        results: dict[str, list] = {path: [] for path in PATHS}
        for path in PATHS:
            _solve(shot, path)  # warm-up: compiles the programs
        for _ in range(args.reps):
            for path in PATHS:
                results[path].append(_solve(shot, path))
        for path, rs in results.items():
            print(_line(name, path, rs), flush=True)
        if not args.no_ipopt:
            runs = mechanism_ipopt(shot, results["compiled"][-1])
            if runs:
                print(f"{name} IPOPT: CPU {1e3 * runs[0]['cpu']:.1f} ms, {runs[0]['iterations']} iterations, "
                      f"{runs[0]['status']}", flush=True)


if __name__ == "__main__":
    main()

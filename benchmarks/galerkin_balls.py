"""Wall time per step of the Galerkin orders on ball chains: the C step (native/galerkin_step.c) against numpy.

Usage: python -m benchmarks.galerkin_balls [--links 10 100] [--orders 4 6] [--steps 20] [--numpy-steps 5] [--dt 0.01]
Prints a Markdown table: links, order, path (C or numpy: tree/galerkin.py's `newton`), steps run from the start
of tools.generate.ball_chain(N), ms per step and Newton iterations per step, and the largest difference of the
two paths' coordinates after the numpy run's steps (the same iterates to round-off).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from addon.solver.native import galerkin_binding
from addon.solver.tree import galerkin
from addon.solver.tree.compile import compile_tree
from tools.generate import ball_chain


def run(model, order: int, dt: float, steps: int, native: bool) -> tuple[float, float, galerkin.GalerkinState]:
    """ms per step, Newton iterations per step and the state after `steps` steps (C or numpy Newton loop)."""
    usable = galerkin_binding.usable
    if not native:
        galerkin_binding.usable = lambda model: False
    try:
        state, _ = galerkin.start(model)
        iterations = 0
        start = time.perf_counter()
        for _ in range(steps):
            iterations += galerkin.step(model, state, dt, order).iterations
        wall = time.perf_counter() - start
    finally:
        galerkin_binding.usable = usable
    return 1e3 * wall / steps, iterations / steps, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--orders", type=int, nargs="+", default=[4, 6])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--numpy-steps", type=int, default=5)
    parser.add_argument("--dt", type=float, default=0.01)
    args = parser.parse_args()
    print("| links | order | path | steps | ms/step | Newton it/step | max diff q (numpy steps) |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for links in args.links:
        model = compile_tree(ball_chain(links))
        for order in args.orders:
            ms_c, it_c, _ = run(model, order, args.dt, args.steps, True)
            ms_n, it_n, ref = run(model, order, args.dt, args.numpy_steps, False)
            _, _, ours = run(model, order, args.dt, args.numpy_steps, True)
            diff = max(np.max(np.abs(ours.q - ref.q)), np.max(np.abs(ours.charts - ref.charts)))
            print(f"| {links} | {order} | C | {args.steps} | {ms_c:.2f} | {it_c:.2f} | |")
            print(f"| {links} | {order} | numpy | {args.numpy_steps} | {ms_n:.1f} | {it_n:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()

"""Ropes of ball-jointed rods by the tree method (its link-wise discrete Lagrangian, tree/linkwise.py): steps taken
whole, Newton iterations, each link's spin about its own axis, energy band, wall time per step.

Usage: python -m benchmarks.linkwise_rope [--links 200] [--dt 0.005] [--steps 100] [--radius 0.05]

Ropes are `tools.generate.ball_chain(n)` from rest; each step is `midpoint.step` with halving off (a step that
does not converge whole raises); the wall time is the steps' alone (the C kernel's when it is built). Results: docs/benchmarks_ball_charts.md.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from addon.solver.tree import midpoint
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from tools.generate import ball_chain
from benchmarks.rope_twist import spins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=200)
    parser.add_argument("--dt", type=float, default=0.005)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--radius", type=float, default=0.05)
    args = parser.parse_args()
    model = compile_tree(ball_chain(args.links, args.radius))
    state = midpoint.initial_state(model)[0]
    prev = forward(model, state.q, state.charts).body_R
    iterations, energies, worst, wall = [], [], 0.0, 0.0
    for _ in range(args.steps):
        start = time.perf_counter()
        result = midpoint.step(model, state, args.dt, halvings=0)
        wall += time.perf_counter() - start  # the step alone, not the spin measurement below
        iterations.append(result.iterations)
        energies.append(result.energy)
        R = forward(model, state.q, state.charts).body_R
        worst = max(worst, float(np.max(np.abs(spins(prev, R, args.dt)))))
        prev = R
    wall /= args.steps
    path = "C kernel" if state.stepper is not None else "numpy"
    counts = {i: int(c) for i, c in enumerate(np.bincount(iterations)) if c}
    print(f"{args.links} links, dt {args.dt}, {args.steps} steps (t = {state.t:.3f} s), every step whole: "
          f"{wall * 1e3:.1f} ms/step ({path}, load average {os.getloadavg()[0]:.1f}), Newton iterations {counts}, "
          f"largest |spin| {worst:.2e} rad/s, energy band {max(energies) - min(energies):.2e} J "
          f"(|E| {abs(energies[0]):.3g} J)")


if __name__ == "__main__":
    main()

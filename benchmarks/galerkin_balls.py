"""Wall time per step of the Galerkin orders on ball chains: the C step (native/galerkin_step.c) against numpy,
and every order against MuJoCo on the 100-link ball chain (issue 14's target).

Usage: python -m benchmarks.galerkin_balls [--links 10 100] [--orders 4 6] [--steps 20] [--numpy-steps 5] [--dt 0.01]
       python -m benchmarks.galerkin_balls --mujoco [--write]
Prints a Markdown table: links, order, path (C or numpy: tree/galerkin.py's `newton`), steps run from the start
of tools.generate.ball_chain(N), ms per step and Newton iterations per step, and the largest difference of the
two paths' coordinates after the numpy run's steps (the same iterates to round-off).
With --mujoco: `mujoco_section`, the median ms per step of the product path (make_integrator, orders 2 to 8) on
ball_chain(100) at dt = 0.005 s beside MuJoCo RK4 and Euler on the same chain (benchmarks/maximal.py's model,
ball joints), with the steps halved and the energy bands; --write puts it into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from addon.solver.integrator import make_integrator
from addon.solver.native import galerkin_binding
from addon.solver.trajectory import SolverError
from addon.solver.tree import galerkin
from addon.solver.tree.compile import compile_tree
from tools.generate import ball_chain

from .maximal import CHAIN_DT, time_mujoco
from .run import step_times, write_sections

MUJOCO_HEADING = "## 100-link ball chain per step: accuracy orders against MuJoCo"


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


def mujoco_section(links: int = 100, steps: int = 100, dt: float = CHAIN_DT) -> list[str]:
    """ms per step of each order on ball_chain(links) after one warm-up step, beside MuJoCo RK4 and Euler."""
    mech = ball_chain(links)
    lines = [MUJOCO_HEADING, "",
             (f"tools.generate.ball_chain({links}) (rods 1 m, 1 kg on ball joints, top tilted by (0.5, 0.3, 0) rad), "
              f"dt = {dt:g} s, median wall time of {steps} steps after one warm-up step, through make_integrator "
              "(order 2: midpoint.py's C step; 4-8: galerkin.py's C step). Newton it/step: mean over the run (a step "
              "redone in halves counts both halves'). MuJoCo: the same chain (benchmarks/maximal.py's MjSpec model, "
              "ball joints), same dt and steps. Ratio: ours / MuJoCo RK4 (the target: under 3)."), "",
             "| method | ms/step | Newton it/step | energy band (J) | ratio to MuJoCo RK4 |",
             "|---|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    rk4, euler = (time_mujoco(mech, steps, integrator, dt) for integrator in ("RK4", "Euler"))
    for order in (2, 4, 6, 8):
        try:
            integrator = make_integrator(mech.replace(order=order), "tree", dt)
            integrator.step()
            ms = 1e3 * float(np.median(step_times(integrator, steps)))
        except SolverError as failure:
            lines.append(f"| order {order} | failed: {str(failure)[:100]} | - | - | - |")
            print(lines[-1], flush=True)
            continue
        trajectory = integrator.trajectory()
        lines.append(f"| order {order} | {ms:.2f} | {np.mean(trajectory.newton_iterations[1:]):.2f} | "
                     f"{np.ptp(trajectory.energy[1:]):.1e} | {ms / rk4['ms']:.2g} |")
        print(lines[-1], flush=True)
    for name, peer in (("MuJoCo RK4", rk4), ("MuJoCo Euler", euler)):
        lines.append(f"| {name} | {peer['ms']:.3f} | - | {peer['energy_band']:.1e} | {peer['ms'] / rk4['ms']:.2g} |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--orders", type=int, nargs="+", default=[4, 6])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--numpy-steps", type=int, default=5)
    parser.add_argument("--dt", type=float, default=0.01)
    parser.add_argument("--mujoco", action="store_true", help="only the 100-link chain against MuJoCo")
    parser.add_argument("--write", action="store_true", help="with --mujoco: replace its section in docs/benchmarks.md")
    args = parser.parse_args()
    if args.mujoco:
        if args.write:
            write_sections(Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md",
                           "python -m benchmarks.galerkin_balls --mujoco --write", lambda: [mujoco_section()],
                           "Benchmarks")
        else:
            mujoco_section()
        return
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

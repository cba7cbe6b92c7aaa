"""The 200-box pile step by step: wall ms, the factorisation and the deepest overlap after each step of the maximal method.

Usage: ``OMP_NUM_THREADS=1 python -m benchmarks.pile_steps 40 [numpy]`` (steps, default 40; `numpy` keeps the
numpy step, the reference). Prints the load average, one line per step (pairs, Newton iterations, the
multiply-adds per unknown of the step's last block LU pattern (contact_ldu), wall and process CPU ms,
overlap), then the deepest overlap over the run and the totals. On a shared machine the CPU ms are the
comparable ones: the wall ms grow with the load. Overlap is the benchmark's measure (the
collision query's most negative distance at the stored pose, benchmarks.contact_scenes.deepest).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from addon.solver.collision.world import CollisionWorld
from addon.solver.integrator import make_integrator
from tools.contact_scenes import box_pile


def _pattern(state) -> str:
    """The order and multiply-adds per unknown of the step's last block LU pattern (C kernel's, else numpy's)."""
    kernel = state.kernel
    sparse = getattr(kernel, "_sparse", None) if kernel else None
    pattern = sparse.pattern if sparse is not None else getattr(state.solver, "_pattern", None)
    if pattern is None:
        return "dense border" if sparse is None else "over MAX_FLOPS (numpy)"
    return f"block LU {pattern.symbolic.flops / int(pattern.plan.row_offset[-1]):.0f}/unknown"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    steps = int(args[0]) if args else 40
    mech = box_pile(200)
    world = CollisionWorld(mech)
    integ = make_integrator(mech, "maximal", 0.01)
    if "numpy" in args:
        integ.state.kernel = False
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    worst = 0.0
    total = total_cpu = 0.0
    for k in range(steps):
        start, cpu = time.perf_counter(), time.process_time()
        integ.step()
        ms, cpu = 1e3 * (time.perf_counter() - start), 1e3 * (time.process_time() - cpu)
        total += ms
        total_cpu += cpu
        pose = integ.trajectory().poses[-1]
        depth = max(-float(np.min(world.detect(pose[:, :3], pose[:, 3:]).distance, initial=0.0)), 0.0)
        worst = max(worst, depth)
        ip = integ.state.interior
        pairs = len(ip.lam) if ip is not None and ip.lam is not None else 0
        print(f"{k + 1} pairs {pairs} iterations {integ._iterations[-1]} {_pattern(integ.state)} {ms:.0f} ms cpu {cpu:.0f} ms "
              f"depth {1e3 * depth:.2f} mm", flush=True)
    print(f"deepest {1e3 * worst:.2f} mm, {total / 1e3:.1f} s in all (cpu {total_cpu / 1e3:.1f} s), load {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

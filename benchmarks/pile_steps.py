"""The 200-box pile step by step: wall ms and the deepest overlap after each step of the maximal method.

Usage: ``OMP_NUM_THREADS=1 python -m benchmarks.pile_steps 40`` (steps, default 40). Prints the load average,
one line per step, then the deepest overlap over the run. Overlap is the benchmark's measure (the
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    steps = int(args[0]) if args else 40
    mech = box_pile(200)
    world = CollisionWorld(mech)
    integ = make_integrator(mech, "maximal", 0.01)
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    worst = 0.0
    for k in range(steps):
        start = time.perf_counter()
        integ.step()
        ms = 1e3 * (time.perf_counter() - start)
        pose = integ.trajectory().poses[-1]
        depth = max(-float(np.min(world.detect(pose[:, :3], pose[:, 3:]).distance, initial=0.0)), 0.0)
        worst = max(worst, depth)
        print(f"{k + 1} {ms:.0f} ms depth {1e3 * depth:.2f} mm", flush=True)
    print(f"deepest {1e3 * worst:.2f} mm, load {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

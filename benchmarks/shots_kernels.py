"""Where a vehicle shot solve's CPU goes between the C kernels and the Python (numpy, scipy) around them: the car's
step rows and Hessian (native/car_step.c), the obstacle clearances (native/planar_clearance.c), the interior
point's Newton steps (native/stage_kkt.c symplex_stage_newton: KKT fill, factorisation, refined solve, one call
each attempt) and the other KKT solves (the second-order corrections'), each counted by wrapping
its binding with a process-time counter; the rest of `nlp.solve`'s CPU is Python. Each shot is solved from its
cold start (the key path, first barrier transcription.COLD_MU, as Shot solves do), fastest of `repeat` solves.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots_kernels [shot ...]

(shot names of benchmarks.shots.SHOTS, default the car shots.) `nlp.solve`'s CPU also holds the once-per-solve
setup (the reduced problem, the stage layout and plan) and the loop's own vector algebra, which NLPResult.timings
(the benchmark's solver CPU) leaves out.
"""

from __future__ import annotations

import functools
import sys
import time

from addon.solver.native import shot_rows_binding, stage_kkt_binding
from addon.solver.shots import nlp as nlpmod
from addon.solver.shots.transcription import COLD_MU
from addon.solver.shots.vehicle_shot import transcribe

from .shots import _benchmark_shot
from .shots_profile import _SPENT, _counted

_KERNELS = ((shot_rows_binding, "step", "car step"), (shot_rows_binding, "hessian", "car step"),
            (shot_rows_binding.PlanarClearance, "rows", "clearance"),
            (shot_rows_binding.PlanarClearance, "hessian", "clearance"),
            (stage_kkt_binding, "newton", "KKT Newton steps"), (stage_kkt_binding, "condensed_solve", "KKT solves"))
# the kernels bound once to a transcription's buffers: each binder returns the call the evaluation makes
_BINDERS = ((shot_rows_binding, "step_call", "car step"), (shot_rows_binding, "hessian_call", "car step"),
            (shot_rows_binding.PlanarClearance, "rows_call", "clearance"),
            (shot_rows_binding.PlanarClearance, "hessian_call", "clearance"))
_PARTS = ("car step", "clearance", "KKT Newton steps", "KKT solves")
CAR_SHOTS = ("parallel_parking", "parallel_parking_200", "car_tunnel")


def _counted_binder(binder, label: str):
    """binder, its returned call counted under label (the transcription binds its kernels once, when it is made)."""
    @functools.wraps(binder)
    def counted_binder(*args, **kwargs):
        return _counted(binder(*args, **kwargs), label)
    return counted_binder


def _row(name: str, repeat: int) -> str:
    tr = transcribe(_benchmark_shot(name))
    x0 = tr.x0()
    best = None
    for _ in range(repeat):
        _SPENT.clear()
        t0 = time.process_time()
        r = nlpmod.solve(tr.nlp, x0, mu_init=COLD_MU)
        cpu = time.process_time() - t0
        if best is None or cpu < best[0]:
            best = (cpu, dict(_SPENT), r)
    cpu, spent, r = best
    kernels = sum(spent.values())
    parts = " | ".join(f"{1e3 * spent.get(p, 0.0):.1f}" for p in _PARTS)
    return (f"| {tr.shot.name} | {r.iterations} | {1e3 * cpu:.1f} | {1e3 * sum(r.timings.values()):.1f} | {parts} "
            f"| {1e3 * kernels:.1f} | {1e3 * (cpu - kernels):.1f} | {1e3 * cpu / max(r.iterations, 1):.2f} |")


def run(names: tuple[str, ...] = CAR_SHOTS, repeat: int = 5) -> str:
    for owner, attr, label in _KERNELS:
        setattr(owner, attr, _counted(getattr(owner, attr), label))
    for owner, attr, label in _BINDERS:
        setattr(owner, attr, _counted_binder(getattr(owner, attr), label))
    lines = ["| shot | iterations | nlp.solve CPU (ms) | solver CPU, NLPResult.timings (ms) "
             "| C: car step rows + Hessian | C: obstacle clearances "
             "| C: KKT Newton steps (fill, factorisation, refined solve) | C: other KKT solves | C total | Python | nlp.solve CPU per iteration (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(name, repeat) for name in names]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(tuple(a for a in sys.argv[1:] if not a.startswith("--")) or CAR_SHOTS))

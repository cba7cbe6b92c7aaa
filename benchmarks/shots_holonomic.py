"""The holonomic shot vehicles' step in C (native/holonomic_step.c) against its numpy twin (shots/holonomic.py).

For the helicopter and the boat benchmark shots: the cost of one call of the step rows with their Jacobian
and of the Hessian of y . r over all steps, at the start point (best of `reps` process times), each way; then
each shot solved with either (same start, same interior point), with the iterations, solver CPU by part, the
largest difference of the solutions, and up to which iteration the objective and constraint violation agree
to 1e-6 (relative).

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots_holonomic [--reps 21]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from addon.solver.shots import nlp as nlpmod
from addon.solver.shots.vehicle_shot import transcribe

from .shots import _benchmark_shot
from .shots_eval import _best

SHOTS = ("helicopter_canyon_landing", "boat_docking")


def _windows(tr) -> tuple:
    S = tr.stages(tr.x0())
    N = tr.N
    W = np.stack([S[k:k + 3] for k in range(N)])
    y = np.random.default_rng(0).standard_normal((N, 13))
    return W, np.arange(N) == 0, np.full(N, tr.shot.dt), y


def _solve(name: str, native: bool):
    tr = transcribe(_benchmark_shot(name))
    if not native:
        tr.dyn.kernel = None
    history: list[tuple[float, float]] = []
    result = nlpmod.solve(tr.nlp, tr.x0(), progress=lambda it, info: history.append(
        (info["objective"], info["constraint_violation"])) is None)
    return result, np.array(history)


def run(reps: int = 21) -> list[str]:
    out = ["| shot | steps | rows + Jacobian, numpy / C (ms) | Hessian of y . r, numpy / C (ms) |", "|---|---|---|---|"]
    for name in SHOTS:
        tr = transcribe(_benchmark_shot(name))
        dyn = tr.dyn
        W, first, h, y = _windows(tr)
        times = [_best(lambda: dyn.residual_numpy(W, first, h), reps), _best(lambda: dyn.residual(W, first, h), reps),
                 _best(lambda: dyn.residual_hessian_numpy(W, first, h, y), reps),
                 _best(lambda: dyn.residual_hessian(W, first, h, y), reps)]
        out.append(f"| {tr.shot.name} | {tr.N} | {times[0]:.2f} / {times[1]:.2f} | {times[2]:.2f} / {times[3]:.2f} |")
    out += ["", "| shot | step | status | iterations | objective | solver CPU (s): evaluation / factorisation / line "
            "search | max \\|x - x_numpy\\| | iterates within 1e-6 of numpy's |", "|---|---|---|---|---|---|---|---|"]
    for name in SHOTS:
        (a, ha), (b, hb) = _solve(name, True), _solve(name, False)
        n = min(len(ha), len(hb))
        apart = np.flatnonzero((np.abs(ha[:n] - hb[:n]) > 1e-6 * np.abs(hb[:n])).any(1))
        within = f"up to iteration {apart[0] - 1}" if len(apart) else f"all {n}"
        for label, r, same in (("numpy", b, "0"), ("C", a, f"{np.abs(a.x - b.x).max():.1e}")):
            t = r.timings
            out.append(f"| {name.replace('_', ' ')} | {label} | {r.status} | {r.iterations} | {r.objective:.10g} | "
                       f"{sum(t.values()):.3f}: {t['evaluation']:.3f} / {t['factorisation']:.3f} / "
                       f"{t['line search']:.3f} | {same} | {within if label == 'C' else ''} |")
    return out


if __name__ == "__main__":
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 21
    c0 = time.strftime("%H:%M", time.gmtime())
    print("\n".join(run(reps)))
    print(f"\n{c0}-{time.strftime('%H:%M', time.gmtime())} UTC")

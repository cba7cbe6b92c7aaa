"""KKT factorisation benchmark: the stage recursion (shots/stage_kkt.py; in C, native/stage_kkt.c, when built)
beside the sparse LU, same solves.

Part 1: every vehicle benchmark shot solved twice by the interior point, kkt="lu" and kkt="stage" (the C kernel
when it is built, else the numpy twin): status,
iterations, objective, the largest difference of the solutions, up to which iteration the objective and the
constraint violation of the two solves agree to 1e-6 (relative), and the factorisation CPU (KKT assembly,
factorisations with the inertia correction, solves) per iteration. Part 2: the parking shot at N = 100 ... 800
stages (keys at the same times), one KKT matrix at the start point assembled, factorised and solved by each (sparse
LU, the numpy twin of the stage recursion, and the interior point's own path: the C kernel through a StagePlan,
slacks and one-stage inequality rows eliminated): CPU per call, to show the cost per iteration against N.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots_kkt [--scaling]

(--scaling: part 2 only.)
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from addon.solver.shots import nlp as nlpmod
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.stage_kkt import NATIVE, StageFactor, StageLayout, StagePlan
from addon.solver.shots.vehicle_shot import transcribe

from .shots import SHOTS, _benchmark_shot


def _solves() -> list[str]:
    lines = ["| shot | kkt | status | iterations | objective | max \\|x - x_LU\\| | iterates within 1e-6 of LU's "
             "| factorisation CPU per iteration (ms) | how |", "|---|---|---|---|---|---|---|---|---|"]
    for name in SHOTS:
        tr = transcribe(_benchmark_shot(name))
        x0 = tr.x0()
        runs, traces = {}, {}
        for kkt in ("lu", "stage"):
            trace: list[tuple[float, float]] = []
            runs[kkt] = nlpmod.solve(tr.nlp, x0, kkt=kkt, progress=lambda it, info, trace=trace: trace.append(
                (info["objective"], info["constraint_violation"])))
            traces[kkt] = np.array(trace)
        for kkt, r in runs.items():
            diff = float(np.max(np.abs(r.x - runs["lu"].x)))
            n = min(len(traces[kkt]), len(traces["lu"]))
            gap = np.max(np.abs(traces[kkt][:n] - traces["lu"][:n]) / (1e-12 + np.abs(traces["lu"][:n])), axis=1)
            agree = f"up to iteration {int(np.argmax(gap > 1e-6)) - 1}" if np.any(gap > 1e-6) else f"all {n}"
            lines.append(f"| {tr.shot.name} | {kkt} | {r.status} | {r.iterations} | {r.objective:.9g} | {diff:.1e} "
                         f"| {agree} | {1e3 * r.timings['factorisation'] / max(r.iterations, 1):.1f} | {r.kkt} |")
    return lines


def _scaled(factor: int):
    shot = load_shot("parallel_parking")
    return replace(shot, steps=factor * shot.steps, dt=shot.dt / factor,
                   keys=tuple(replace(k, step=factor * k.step) for k in shot.keys))


def _cpu(fn, repeat: int) -> float:
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat


def _scaling() -> list[str]:
    lines = ["| stages N | KKT unknowns | sparse LU: assemble + factorise + solve (ms) "
             "| stage, numpy twin: same (ms) | stage blocks | interior point's path (C, StagePlan): same (ms) "
             "| its blocks |", "|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    for factor in (1, 2, 4, 8):
        tr = transcribe(_scaled(factor))
        P = nlpmod._Reduced(tr.nlp, tr.x0())
        z = nlpmod._push_inside(np.concatenate([P.x_full[P.free], P.s0]), P.zl, P.zu)
        layout = P.kkt_layout(z)
        assert isinstance(layout, StageLayout), layout
        sigma = (np.where(np.isfinite(P.zl), 1.0 / (z - P.zl), 0.0)
                 + np.where(np.isfinite(P.zu), 1.0 / (P.zu - z), 0.0))
        W = P.plus_diagonal(P.hess_data(z, 0.1 * rng.standard_normal(P.m)), sigma).copy()
        J = P.jac(z)
        rhs = rng.standard_normal(W.shape[0] + J.shape[0])
        lu = _cpu(lambda: nlpmod._refined(nlpmod._SparseLU(W, J, 1e-4, 0.0), rhs), 5)
        stage = _cpu(lambda: nlpmod._refined(StageFactor(layout, W, J, 1e-4, 0.0), rhs), 5)
        plan = StagePlan(P.kkt_layout(z, slacks=False), P.ineq, -P.c_scale[P.ineq]) if NATIVE else None
        planned = _cpu(lambda: nlpmod._refined(plan.factor(W, J, 1e-4, 0.0), rhs), 20) if NATIVE else 0
        lines.append(f"| {tr.N} | {len(rhs)} | {1e3 * lu:.1f} | {1e3 * stage:.1f} "
                     f"| {layout.n_chunks} of at most {layout.size} "
                     f"| {f'{1e3 * planned:.2f}' if NATIVE else 'not built'} "
                     f"| {f'{plan.layout.n_chunks} of at most {plan.layout.size}' if NATIVE else ''} |")
    return lines


def run(scaling_only: bool = False) -> str:
    return ("" if scaling_only else "\n".join(_solves()) + "\n\n") + "\n".join(_scaling()) + "\n"


if __name__ == "__main__":
    print(run("--scaling" in sys.argv))

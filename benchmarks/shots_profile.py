"""Where one shot solve's CPU goes, by part: the interior point's evaluation and line search (NLPResult.timings)
and, inside its factorisation part, KKT assembly, factorisation, solves with refinement residuals, the sparse
LU's inertia parity, and the rest (W = H + Sigma, curvature test). Each vehicle benchmark shot is solved from its
cold start (the key path, first barrier transcription.COLD_MU, as Shot solves do) with kkt="lu" (scipy.sparse
assembly + SuperLU) and kkt="stage" (the C kernel, native/stage_kkt.c, when built, on the KKT matrix with its
slacks and one-stage inequality rows eliminated: stage_kkt.StagePlan, whose own work counts as assembly).

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots_profile [shot ...] [--stage]

(shot names of benchmarks.shots.SHOTS, default all; --stage: the stage rows only.)

The parts are measured by wrapping the factorisations' methods with process-time counters, so "solves" also
holds the second-order corrections' solves, which NLPResult.timings books under line search.
"""

from __future__ import annotations

import functools
import sys
import time

from addon.solver.native import stage_kkt_binding
from addon.solver.shots import nlp as nlpmod
from addon.solver.shots import stage_kkt
from addon.solver.shots.transcription import COLD_MU
from addon.solver.shots.vehicle_shot import transcribe

from .shots import SHOTS, _benchmark_shot

_SPENT: dict[str, float] = {}
_WRAPPED = ((nlpmod, "splu", "lu factorise"), (nlpmod._SparseLU, "__init__", "lu build"),
            (nlpmod._SparseLU, "solve", "solve"), (nlpmod._SparseLU, "residual", "solve"),
            (nlpmod._SparseLU, "inertia_ok", "parity"), (stage_kkt_binding, "factor", "stage factorise"),
            (stage_kkt.PlannedFactor, "__init__", "stage build"), (stage_kkt.PlannedFactor, "solve", "solve"),
            (stage_kkt.PlannedFactor, "residual", "solve"))


def _counted(fn, label: str):
    @functools.wraps(fn)
    def counted(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _SPENT[label] = _SPENT.get(label, 0.0) + time.process_time() - t0
    return counted


def _row(name: str, kkt: str) -> str:
    tr = transcribe(_benchmark_shot(name))
    _SPENT.clear()
    r = nlpmod.solve(tr.nlp, tr.x0(), kkt=kkt, mu_init=COLD_MU)
    t = r.timings
    factorise = _SPENT.get(f"{kkt} factorise", 0.0)
    assembly = _SPENT.get(f"{kkt} build", 0.0) - factorise
    solve, parity = _SPENT.get("solve", 0.0), _SPENT.get("parity", 0.0)
    rest = t["factorisation"] - assembly - factorise - solve - parity
    return (f"| {tr.shot.name} | {kkt} | {r.iterations} | {sum(t.values()):.3f} | {t['evaluation']:.3f} "
            f"| {t['line search']:.3f} | {t['factorisation']:.3f} | {assembly:.3f} | {factorise:.3f} | {solve:.3f} "
            f"| {parity:.3f} | {rest:.3f} | {1e3 * t['factorisation'] / max(r.iterations, 1):.1f} |")


def run(names: tuple[str, ...] = SHOTS, kkts: tuple[str, ...] = ("lu", "stage")) -> str:
    for owner, attr, label in _WRAPPED:
        setattr(owner, attr, _counted(getattr(owner, attr), label))
    lines = ["| shot | kkt | iterations | solver CPU (s) | evaluation | line search | factorisation part | of it: "
             "assembly | factorise | solves + refinement | LU parity | rest | factorisation part per iteration (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(name, kkt) for kkt in kkts for name in names]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    shots = tuple(a for a in sys.argv[1:] if not a.startswith("--")) or SHOTS
    print(run(shots, ("stage",) if "--stage" in sys.argv else ("lu", "stage")))

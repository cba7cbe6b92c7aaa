"""Evaluation cost of the shot NLPs per call, and how it scales in the stages N and the coordinates n.

The interior point asks at every iterate for the rows, their Jacobian and the Hessian of the Lagrangian
(nlp.NLP). This times each call alone, at the shot's start point, with random multipliers (best of `reps`
process times), for
  - the parallel parking shot (car: 6 variables per stage) at N = 100 .. 800 steps (keys at the same times),
  - hanging chains of n = 3, 10, 30 links (tools/generate.pendulum_chain: 0.1 m, 0.1 kg rods; every hinge
    driven, the tip keyed at the last frame), N = 20 steps: the ~30-degree-of-freedom mechanism shot.
The mechanism shots are only evaluated, not solved (docs/benchmarks_shots.md says why).

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots_eval [--reps 7]
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from addon.solver.shots import mechanism_shots
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.spec import Control, MechanismKey, MechanismShot
from addon.solver.shots.vehicle_shot import transcribe
from tools.generate import pendulum_chain


def _best(fn, reps: int) -> float:
    """Smallest process time of `reps` calls, ms."""
    times = []
    for _ in range(reps):
        c0 = time.process_time()
        fn()
        times.append(time.process_time() - c0)
    return 1e3 * min(times)


def _row(label: str, N: int, n_unknowns: int, nlp, x: np.ndarray, reps: int) -> str:
    y = np.random.default_rng(0).standard_normal(len(nlp.c_lower))
    x2 = x + 1e-9  # a second point: every call below evaluates afresh (the blocks remember their last point)
    points = [x, x2]
    state = [0]

    def at():
        state[0] += 1
        return points[state[0] % 2]
    c = _best(lambda: nlp.constraints(at()), reps)
    j = _best(lambda: nlp.jacobian(at()), reps)
    h = _best(lambda: nlp.hessian(at(), y, 1.0), reps)
    return f"| {label} | {N} | {n_unknowns} | {c:.2f} | {j:.2f} | {h:.2f} | {1e3 * (c + j + h) / N:.1f} |"


def chain_shot(n: int, steps: int = 20, dt: float = 0.05) -> MechanismShot:
    """n hanging links, every hinge driven (30 N m), the tip keyed where a bend of 0.02 rad per hinge puts it."""
    mech = pendulum_chain(n, 0.1, 0.1, 0.01, 0.0)
    k = np.arange(1, n + 1)
    tip = (0.1 * float(np.sum(np.sin(0.02 * k))), 0.0, -0.1 * float(np.sum(np.cos(0.02 * k))))
    return MechanismShot(f"{n}-link chain", mech, dt, steps,
                         tuple(Control(f"hinge_{i}", -30.0, 30.0) for i in k),
                         (MechanismKey("tip", steps, body=f"link_{n}", point=(0.0, 0.0, -0.1), position=tip,
                                       components="xz"),))


def run(reps: int = 7) -> str:
    lines = [("| shot | steps N | unknowns | rows (ms) | Jacobian (ms) | Hessian of the Lagrangian (ms) "
              "| all three per stage (us) |"), "|---|---|---|---|---|---|---|"]
    base = load_shot("parallel_parking")
    for factor in (1, 2, 4, 8):
        shot = replace(base, steps=factor * base.steps, dt=base.dt / factor,
                       keys=tuple(replace(k, step=factor * k.step) for k in base.keys))
        tr = transcribe(shot)
        lines.append(_row("parallel parking", shot.steps, int(np.sum(tr.x_lower < tr.x_upper)), tr.nlp, tr.x0(), reps))
    for n in (3, 10, 30):
        shot = chain_shot(n)
        P = mechanism_shots._problem(shot)
        nlp = mechanism_shots._nlp(P)
        x = mechanism_shots.initial_guess(P, np.tile(P.tx.q0, (shot.steps + 1, 1)))
        lines.append(_row(f"{n}-link chain (n = {n})", shot.steps, P.tx.n, nlp, x, reps))
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    print(run(int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 7))

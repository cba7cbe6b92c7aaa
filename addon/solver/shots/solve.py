"""Solving a shot: the dispatch from a shot to the transcription of its kind, then the NLP.

Owns `solve_shot` and nothing else: a MechanismShot goes to mechanism_shots.py (tree method); a Shot with a
vehicle to vehicle_shot.py, one on a mechanism without a vehicle to mechanism_shots.py; each runs nlp.solve
and replays the controls through the simulator. The data it reads and returns lives in spec.py, which
imports no solver.
"""

from __future__ import annotations

from ..trajectory import Trajectory
from . import mechanism_shots, vehicle_shot
from .spec import MechanismShot, Progress, Shot, ShotProblem, ShotResult


def solve_shot(shot: ShotProblem, warm_start: Trajectory | ShotResult | None = None,
               progress: Progress | None = None, tol: float = 1e-8, max_iter: int | None = None) -> ShotResult:
    """Transcribe `shot`, solve it by nlp.solve and replay the controls through the simulator.

    warm_start: a Trajectory (the current animation) whose body positions and headings (mechanism shots:
    coordinates) seed the states, or an earlier ShotResult of the same shot layout (re-solve after an
    edit); without it the states follow a path through the keys. progress(iteration, info) returning False
    cancels. max_iter None keeps the iteration limit of the solver the shot goes to.
    """
    options = {} if max_iter is None else {"max_iter": max_iter}
    if isinstance(shot, MechanismShot):
        return mechanism_shots.solve_mechanism_shot(shot, warm_start, progress, tol=tol, **options)
    if not isinstance(shot, Shot):
        raise TypeError(f"solve_shot takes a Shot or a MechanismShot, got {type(shot).__name__}")
    transcribe = vehicle_shot.transcribe if shot.mechanism.vehicle is not None else mechanism_shots.transcribe
    return transcribe(shot).solve(warm_start=warm_start, progress=progress, tol=tol, **options)

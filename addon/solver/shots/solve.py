"""Solving a shot: the dispatch from a Shot to the transcription of its mechanism, then the NLP.

Owns `solve_shot` and nothing else: vehicles go to vehicle_shot.py, mechanisms without a vehicle to
mechanism_shots.py (tree method); each returns a transcription whose solve() runs nlp.solve and replays
the controls through the simulator. The data it reads and returns lives in spec.py, which imports no solver.
"""

from __future__ import annotations

from ..trajectory import Trajectory
from . import mechanism_shots, vehicle_shot
from .spec import Progress, Shot, ShotResult


def solve_shot(shot: Shot, warm_start: Trajectory | None = None, progress: Progress | None = None,
               tol: float = 1e-8, max_iter: int = 300) -> ShotResult:
    """Transcribe `shot`, solve it by nlp.solve and replay the controls through the simulator.

    warm_start: a Trajectory (the current animation) whose body positions and headings seed the states, or
    an earlier ShotResult of the same shot layout (re-solve after an edit); without it the states follow a
    path through the keys. progress(iteration, info) returning False cancels.
    """
    transcribe = vehicle_shot.transcribe if shot.mechanism.vehicle is not None else mechanism_shots.transcribe
    transcription = transcribe(shot)
    return transcription.solve(warm_start=warm_start, progress=progress, tol=tol, max_iter=max_iter)

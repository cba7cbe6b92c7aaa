"""The `python -m addon shot FILE.toml --out RUN.npz` command: read, solve and save one shot file.

Reuses shotfile.load_shot and solve.solve_shot (vehicle and mechanism shots alike); owns only the .npz layout and the one-line
summary. Input checks (UTF-8, TOML, number range) come from cli_input before the loader runs.

The .npz (np.load(..., allow_pickle=False)):
    t                   (steps + 1,) node times, s (the solved step for free-time shots)
    states              (steps + 1, n) solved node states; mechanism shots: the joint coordinates
    state_names         (n,) their names
    control_names       (c,) the control channels (vehicle controls, driven joints)
    controls/<name>     the channel's solved values (N, N m or rad, by channel) ...
    control_times/<name> ... and the times they are keyed at, s
    key_names, key_errors  (k,) each key and its largest error (m, rad or m/s)
    bodies, poses       the replay through the plain simulator: names and (steps + 1, bodies, 7) poses
                        x y z qw qx qy qz (empty when the shot was not solved)
    status, message, iterations, objective, constraint_violation, replay_error, dt, wall_time
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...cli_input import EXIT_FAILED, CommandError, atomic_output, toml_file
from ..model import MechanismError
from .shotfile import load_shot
from .solve import solve_shot
from .spec import ShotError, ShotProblem, ShotResult


def load_shot_file(path: Path) -> ShotProblem:
    """The shot in `path`; CommandError (exit 2) naming the file and field for anything invalid."""
    toml_file(path, "shot file")
    try:
        return load_shot(path)
    except (ShotError, MechanismError) as exc:
        raise CommandError(str(exc)) from None


def solve(shot: ShotProblem, max_iter: int | None) -> ShotResult:
    """Solve `shot` (either kind); max_iter None keeps its solver's default."""
    try:
        return solve_shot(shot, max_iter=max_iter)
    except (ShotError, MechanismError) as exc:
        raise CommandError(str(exc)) from None


def failure(path: Path, result: ShotResult) -> CommandError | None:
    """None for a solved shot; otherwise the reason (the report's first explanatory line), exit 1."""
    if result.status == "solved":
        return None
    reasons = [line.strip() for line in result.report.splitlines()[1:] if line.strip()]
    return CommandError(f"{path}: {result.status}: {reasons[0] if reasons else result.report}", EXIT_FAILED)


def save_result(result: ShotResult, out: Path) -> None:
    """Write `result` to `out` in the layout of the module docstring (atomically)."""
    names = list(result.controls)
    keys = list(result.key_errors)
    replay = result.trajectory if result.status == "solved" else None
    arrays = {
        "t": np.arange(len(result.states)) * result.dt,
        "states": np.asarray(result.states, dtype=float),
        "state_names": np.array(result.state_names, dtype=str),
        "control_names": np.array(names, dtype=str),
        "key_names": np.array(keys, dtype=str),
        "key_errors": np.array([result.key_errors[k] for k in keys], dtype=float),
        "bodies": np.array(replay.bodies if replay else [], dtype=str),
        "poses": np.asarray(replay.poses, dtype=float) if replay else np.zeros((0, 0, 7)),
        "status": np.array(result.status),
        "message": np.array(result.report),
        "iterations": np.array(result.iterations),
        "objective": np.array(result.objective),
        "constraint_violation": np.array(result.constraint_violation),
        "replay_error": np.array(result.replay_error),
        "dt": np.array(result.dt),
        "wall_time": np.array(result.wall_time),
    }
    for name in names:
        arrays[f"controls/{name}"] = np.asarray(result.controls[name], dtype=float)
        arrays[f"control_times/{name}"] = np.asarray(result.control_times[name], dtype=float)
    with atomic_output(out, ".npz") as temp:
        np.savez_compressed(temp, **arrays)


def summary_line(name: str, result: ShotResult, wall: float, out: Path) -> str:
    """One line: status, iterations, each key's error, replay error, wall time, the solver's CPU time and where
    it went (evaluation, factorisation, line search, the interior point's own work), how the KKT matrices were
    factorised, output file."""
    errors = ", ".join(f"{key} {err:.2e}" for key, err in result.key_errors.items()) or "none"
    parts = ", ".join(f"{part} {t:.3f} s" for part, t in result.timings.items())
    solver = f"; solver CPU {sum(result.timings.values()):.3f} s ({parts})" if result.timings else ""
    solver += f"; KKT: {result.kkt}" if result.kkt else ""
    return (f"{name}: {result.status} after {result.iterations} iterations; key errors {errors}; "
            f"replay error {result.replay_error:.2e} m; wall time {wall:.2f} s{solver} -> {out}")

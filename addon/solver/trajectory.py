"""The Trajectory: what a solve produces and what the bake, the CLI and the tests consume.

Owns the result container and its .npz file form; it knows nothing about how the result was made.
Poses are world poses of each body frame, rows (x, y, z, qw, qx, qy, qz).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class SolverError(RuntimeError):
    """Solver trouble at a known step: the message names the frame, time and the worst offender."""

    def __init__(self, message: str, step: int | None = None, time: float | None = None):
        super().__init__(message)
        self.step = step
        self.time = time


class ConvergenceError(SolverError):
    """Newton did not converge within its iteration budget."""


class StepTooLargeError(ConvergenceError):
    """Newton failed where the method's time-step limit explains it: `stable_dt` is a step that keeps a
    margin below the limit (the maximal method's constraint forces, maximal/stability.py)."""

    def __init__(self, message: str, step: int | None, time: float | None, stable_dt: float):
        super().__init__(message, step, time)
        self.stable_dt = stable_dt


class EnergyError(SolverError):
    """A conservative run's energy left the bound its integrator keeps while it resolves the motion
    (energy_audit.py): the steps are too large for it, whatever Newton said."""


class AssemblyError(SolverError):
    """A closed chain cannot be assembled (its loop constraints cannot be satisfied)."""


@dataclass
class Trajectory:
    """A solved motion.

    t: (N+1,) times; bodies: names (B,); poses: (N+1, B, 7) world poses (x y z qw qx qy qz);
    q: (N+1, nq) generalized coordinates (tree method; empty otherwise), coordinate_names (nq,);
    energy: (N+1,) total mechanical energy; constraint_residual: (N+1,) max |h| per step;
    newton_iterations: (N,) per step. status is "finished", "failed" or "cancelled"; on failure
    `message` says why and the arrays hold the steps done before it.
    """

    t: np.ndarray
    bodies: list[str]
    poses: np.ndarray
    q: np.ndarray
    coordinate_names: list[str]
    energy: np.ndarray
    constraint_residual: np.ndarray
    newton_iterations: np.ndarray
    method: str = "tree"
    status: str = "finished"
    message: str = ""
    info: dict = field(default_factory=dict)

    @property
    def nsteps(self) -> int:
        return len(self.t) - 1

    def body_index(self, name: str) -> int:
        return self.bodies.index(name)

    def save(self, path: str | Path) -> None:
        np.savez_compressed(
            path,
            t=self.t,
            bodies=np.array(self.bodies),
            poses=self.poses,
            q=self.q,
            coordinate_names=np.array(self.coordinate_names),
            energy=self.energy,
            constraint_residual=self.constraint_residual,
            newton_iterations=self.newton_iterations,
            method=np.array(self.method),
            status=np.array(self.status),
            message=np.array(self.message),
        )

    @classmethod
    def load(cls, path: str | Path) -> "Trajectory":
        with np.load(path, allow_pickle=False) as z:
            return cls(
                t=z["t"],
                bodies=[str(b) for b in z["bodies"]],
                poses=z["poses"],
                q=z["q"],
                coordinate_names=[str(c) for c in z["coordinate_names"]],
                energy=z["energy"],
                constraint_residual=z["constraint_residual"],
                newton_iterations=z["newton_iterations"],
                method=str(z["method"]),
                status=str(z["status"]),
                message=str(z["message"]),
            )

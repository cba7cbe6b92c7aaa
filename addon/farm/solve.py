"""One sweep variant solved on a worker: its files written to a private folder and read by the ordinary loaders,
then `shot` or `simulate`, with the .npz those commands write returned as bytes.

Owns the VariantResult (status, cost, the figures the CSV shows, the .npz) and what "cost" means per kind:
a shot's objective (the optimal-control cost it minimised), a mechanism run's largest energy drift |E - E0|
in J. Never raises for a variant's own problem (an invalid value, a solve that fails): that is a result, so
one bad variant never stops the others.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..cli_input import CommandError
from .variants import Variant

OK_STATUSES = ("solved", "finished")  # a shot's and a simulation's success


@dataclass(frozen=True)
class VariantResult:
    name: str
    status: str  # the solver's status, or "invalid" when the loader refused the variant's files
    message: str
    cost: float  # nan when there is none
    seconds: float
    figures: dict[str, float] = field(default_factory=dict)  # column -> value, for the CSV
    npz: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES


def solve_variant(variant: Variant) -> VariantResult:
    """Solve `variant` in a temporary folder of this process (runs on a worker)."""
    with tempfile.TemporaryDirectory(prefix="symplex-sweep-") as temp:
        folder = Path(temp) / variant.name
        folder.mkdir()
        for name, text in variant.files.items():
            (folder / name).write_text(text, encoding="utf-8")
        solve = _solve_shot if variant.kind == "shot" else _solve_mechanism
        start = time.perf_counter()
        try:
            result = solve(variant, folder / variant.main, folder / "result.npz")
        except CommandError as exc:
            result = VariantResult(variant.name, "invalid", str(exc), math.nan, time.perf_counter() - start)
    # messages name the variant's files as <variant>/<file>, not the worker's temporary folder
    return replace(result, message=result.message.replace(str(folder), variant.name))


def _solve_shot(variant: Variant, path: Path, out: Path) -> VariantResult:
    from ..solver.shots import cli

    shot = cli.load_shot_file(path)
    start = time.perf_counter()
    result = cli.solve(shot, variant.settings.get("max_iter"))
    seconds = time.perf_counter() - start
    cli.save_result(result, out)
    failure = cli.failure(path, result)
    figures = {"iterations": float(result.iterations), "replay_error": float(result.replay_error),
               "constraint_violation": float(result.constraint_violation)}
    figures.update({f"key_error:{key}": float(error) for key, error in result.key_errors.items()})
    return VariantResult(variant.name, result.status, "" if failure is None else str(failure),
                         float(result.objective), seconds, figures, out.read_bytes())


def _solve_mechanism(variant: Variant, path: Path, out: Path) -> VariantResult:
    import numpy as np

    from ..solver import integrator
    from ..solver.mechfile.read import load_mechanism
    from ..solver.mechfile.validate import check_method
    from ..solver.model import MechanismError
    from ..solver.trajectory import SolverError

    settings = variant.settings
    try:
        mechanism = load_mechanism(path)
        if integrator.METHODS.get(settings["method"]) is not None:
            check_method(mechanism, settings["method"])
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    start = time.perf_counter()
    try:
        trajectory = integrator.simulate(mechanism, dt=settings["dt"], steps=settings["steps"],
                                         method=settings["method"], tol=settings["tol"])
    except (MechanismError, NotImplementedError, ValueError) as exc:  # as simulate: an unusable setting
        raise CommandError(f"{path}: {exc}") from None
    except SolverError as exc:
        return VariantResult(variant.name, "failed", f"{path}: {exc}", math.nan, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    trajectory.save(out)
    energy = np.asarray(trajectory.energy, dtype=float)
    drift = float(np.max(np.abs(energy - energy[0]))) if energy.size else math.nan
    residual = np.asarray(trajectory.constraint_residual, dtype=float)
    figures = {"steps_done": float(trajectory.nsteps), "max_constraint_residual": float(residual.max()) if residual.size else 0.0,
               "mean_newton_iterations": float(np.mean(trajectory.newton_iterations))
               if len(trajectory.newton_iterations) else 0.0}
    return VariantResult(variant.name, trajectory.status, trajectory.message, drift, seconds, figures,
                         out.read_bytes())

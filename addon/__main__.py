"""Symplex command line: simulate a mechanism file, bake a .blend headless, build the demo, run benchmarks.

    python -m addon simulate presets/chain_5.toml --method tree --dt 0.01 --steps 500 --out run.npz
    python -m addon bake scene.blend --out baked.blend
    python -m addon demo --out out
    python -m addon bench --quick

This module owns argument parsing, dispatch and exit codes, nothing else: the work is done by
solver/ (simulate), bridge/ (bake), demo.py and benchmarks/. Whatever needs bpy or the benchmark
peers is imported by its own subcommand only, so `--help` and `simulate` run with numpy and scipy.

Exit codes: 0 success; 1 the solver or a bake failed; 2 bad input (arguments, a missing or invalid
file, an unavailable method). Expected failures print one message and no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

PROG = "python -m addon"


class CommandError(Exception):
    """A failure the user can act on: printed as `<prog> <command>: <message>`, exit with `code`."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _existing_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise CommandError(f"{path}: {what} not found")
    return path


def _import_blender_module(import_fn):
    """Run `import_fn` (which imports a bpy-aware module) and turn a missing bpy into a CommandError."""
    try:
        return import_fn()
    except ModuleNotFoundError as exc:
        if exc.name in ("bpy", "mathutils", "bmesh"):
            raise CommandError(
                f"this command needs Blender's Python module ({exc.name}); run it with the project "
                "environment, .venv/bin/python (created by `make venv`)"
            ) from None
        raise


# ----------------------------------------------------------------------------------------------
# simulate


def cmd_simulate(args: argparse.Namespace) -> int:
    from .solver import integrator
    from .solver.mechfile import check_method, load_mechanism
    from .solver.model import MechanismError
    from .solver.trajectory import SolverError

    model_path = _existing_file(args.model, "mechanism file")
    try:
        mechanism = load_mechanism(model_path)
        if integrator.METHODS.get(args.method) is not None:  # simulate() reports the other names
            check_method(mechanism, args.method)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"{model_path}: cannot read: {exc.strerror or exc}") from None

    start = time.perf_counter()
    try:
        trajectory = integrator.simulate(mechanism, dt=args.dt, steps=args.steps, method=args.method, tol=args.tol)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    except NotImplementedError as exc:
        raise CommandError(str(exc) or f"method {args.method!r} is not implemented") from None
    except ValueError as exc:
        # An unknown or not-yet-available method; any other ValueError is a bug and keeps its traceback.
        if getattr(integrator, "METHODS", {}).get(args.method) is not None:
            raise
        raise CommandError(str(exc)) from None
    except SolverError as exc:
        raise CommandError(f"{model_path}: {exc}", EXIT_FAILED) from None
    wall = time.perf_counter() - start

    args.out.parent.mkdir(parents=True, exist_ok=True)
    trajectory.save(args.out)
    print(summary_line(mechanism.name, trajectory, args.method, args.dt, wall, args.out))
    if trajectory.status == "failed":
        print(f"{PROG} simulate: {trajectory.message}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def summary_line(name: str, trajectory, method: str, dt: float, wall: float, out: Path) -> str:
    """One line: steps done, max constraint residual, energy drift, mean Newton iterations, wall time."""
    import numpy as np

    energy = np.asarray(trajectory.energy, dtype=float)
    residual = np.asarray(trajectory.constraint_residual, dtype=float)
    iterations = np.asarray(trajectory.newton_iterations, dtype=float)
    drift = float(np.max(np.abs(energy - energy[0]))) if energy.size else float("nan")
    max_residual = float(np.max(residual)) if residual.size else 0.0
    mean_iterations = float(np.mean(iterations)) if iterations.size else 0.0
    return (
        f"{name}: {trajectory.nsteps} steps ({method}, dt {dt:g} s, {trajectory.status}); "
        f"max constraint residual {max_residual:.2e}; energy drift {drift:.2e} J; "
        f"mean Newton iterations {mean_iterations:.2f}; wall time {wall:.2f} s -> {out}"
    )


# ----------------------------------------------------------------------------------------------
# bake, demo, bench


def cmd_bake(args: argparse.Namespace) -> int:
    scene_path = _existing_file(args.scene, "scene file")

    def load():
        from .bridge.headless import bake_file

        return bake_file

    bake_file = _import_blender_module(load)
    from .solver.model import MechanismError
    from .solver.trajectory import SolverError

    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        report = bake_file(scene_path, args.out)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    except SolverError as exc:
        raise CommandError(f"{scene_path}: {exc}", EXIT_FAILED) from None
    if report:
        print(report)
    print(f"baked {scene_path} -> {args.out}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    def load():
        from .demo import run_demo

        return run_demo

    run_demo = _import_blender_module(load)
    from .demo_shots import run_shots_demo

    args.out.mkdir(parents=True, exist_ok=True)
    results = run_demo(args.out)
    if not results:
        raise CommandError(f"no demo scene was produced; see {args.out / 'demo_report.txt'}", EXIT_FAILED)
    print(f"demo: {len(results)} scenes written to {args.out}/")
    shots = run_shots_demo(args.out, print)
    solved = [s for s in shots if s.status == "solved"]
    print(f"demo: {len(solved)} of {len(shots)} optimal-control shots solved and baked to {args.out / 'shots.blend'}")
    if len(solved) < len(shots):
        raise CommandError(f"a demo shot failed; see {args.out / 'shots_report.txt'}", EXIT_FAILED)
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    # benchmarks/ sits beside addon/ in the repository; it is not part of the extension.
    repo = str(Path(__file__).resolve().parent.parent)
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from benchmarks.run import main as bench_main

    argv = (["--quick"] if args.quick else []) + [f"--suite={name}" for name in args.suite or []]
    argv += ["--docs", str(args.docs)] if args.docs else []
    return int(bench_main(argv) or 0)


# ----------------------------------------------------------------------------------------------
# parser and entry point


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Symplex: physically exact motion for mechanisms and vehicles, baked to Blender keyframes.",
        epilog="Run from the repository root with the project environment (.venv/bin/python; `make venv`).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = commands.add_parser(
        "simulate", help="solve a mechanism file and write the trajectory (.npz)",
        description="Solve a mechanism file (presets/*.toml format) and save the Trajectory as .npz "
        "(t, bodies, poses, q, energy, constraint_residual, newton_iterations, ...).",
    )
    sim.add_argument("model", type=Path, metavar="MODEL.toml", help="mechanism file")
    sim.add_argument("--method", default="tree",
                     help="integration method: tree (default), maximal or vehicle; "
                     "an unknown name lists the valid ones")
    sim.add_argument("--dt", type=_positive_float, default=0.01, help="time step in seconds (default 0.01)")
    sim.add_argument("--steps", type=_positive_int, default=100, help="number of steps (default 100)")
    sim.add_argument("--tol", type=_positive_float, default=1e-10,
                     help="Newton tolerance on the discrete equations and constraints (default 1e-10)")
    sim.add_argument("--out", type=Path, default=Path("run.npz"), metavar="RUN.npz",
                     help="output file (default run.npz)")
    sim.set_defaults(func=cmd_simulate)

    bake = commands.add_parser(
        "bake", help="bake every Symplex setup in a .blend, headless (needs bpy)",
        description="Open SCENE.blend in Blender (the bpy module), solve and bake every Symplex setup "
        "into keyframes, and save the result as BAKED.blend. The input file is not modified.",
    )
    bake.add_argument("scene", type=Path, metavar="SCENE.blend", help="scene to bake")
    bake.add_argument("--out", type=Path, required=True, metavar="BAKED.blend", help="where to save the baked scene")
    bake.set_defaults(func=cmd_bake)

    demo = commands.add_parser(
        "demo", help="build, solve and bake the demo scenes; write .blend, plots and previews (needs bpy)",
        description="Build the demo scenes, solve and bake them, and write a .blend plus PNG plots and "
        "previews to the output directory.",
    )
    demo.add_argument("--out", type=Path, default=Path("out"), metavar="DIR", help="output directory (default out/)")
    demo.set_defaults(func=cmd_demo)

    bench = commands.add_parser(
        "bench", help="run the benchmark suite beside its peers",
        description="Run benchmarks/ (speed and accuracy beside peer simulators) and write the table.",
    )
    bench.add_argument("--quick", action="store_true", help="short runs, for a smoke test")
    bench.add_argument("--suite", action="append", choices=("tree", "maximal", "shots", "collision"),
                       help="run only this suite (repeatable; default: all)")
    bench.add_argument("--docs", type=Path, metavar="DIR",
                       help="folder for the result tables (default: docs/ for a full run; --quick only prints)")
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"{PROG} {args.command}: {exc}", file=sys.stderr)
        return exc.code


def _exit(code: int) -> None:
    """Leave with `code`. Blender 4.2/4.3 as a module can crash in its own teardown at interpreter exit
    once the add-on was registered (docs/development.md); there the process leaves at once, after
    flushing, so a finished command never reports a crash."""
    bpy = sys.modules.get("bpy")
    if bpy is not None and bpy.app.version < (4, 3, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())

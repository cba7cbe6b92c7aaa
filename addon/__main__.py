"""Symplex command line: simulate a mechanism file, solve a shot file, bake a .blend headless, build the demo,
run benchmarks.

    python -m addon simulate presets/chain_5.toml --method tree --dt 0.01 --steps 500 --out run.npz
    python -m addon shot presets/shots/parallel_parking.toml --out parking.npz
    python -m addon bake scene.blend --out baked.blend
    python -m addon bake a.blend b.blend --out-dir baked/ [--workers N | --scheduler tcp://host:8786]
    python -m addon sweep presets/shots/parallel_parking.toml --vary vehicle.mass=1200:1800:4 --out sweep/
    python -m addon demo --out out
    python -m addon bench --quick

This module owns argument parsing, dispatch and exit codes, nothing else: the work is done by
solver/ (simulate), solver/shots/cli.py (shot), bridge/ (bake), farm/ (batch bakes and sweeps on Dask),
and the repository's demo/ and benchmarks/ (development commands: the extension carries neither);
cli_input.py checks what the user hands in. Whatever needs bpy or the benchmark peers is imported by its own subcommand only, so
`--help`, `simulate` and `shot` run with numpy and scipy.

Exit codes: 0 success; 1 the solver, a shot or a bake failed; 2 bad input (arguments, a missing,
unreadable or invalid file, an unusable --out, an unavailable method, a scene with nothing to bake).
Every failure prints one line to stderr and no traceback; an unexpected exception is reported as
"internal error: ... (please report)" with exit 1, its traceback shown only with --debug or
SYMPLEX_DEBUG=1. Under bpy < 4.3 the process leaves through os._exit, so Blender's crash at
interpreter exit never replaces the exit code (docs/development.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

from .cli_input import (
    EXIT_FAILED, EXIT_OK, EXIT_USAGE, MAX_DT, MAX_ITERATIONS, MAX_STEPS, MAX_TOL, MIN_DT, MIN_TOL, CommandError,
    accuracy_order, atomic_output, blend_file, iteration_count, output_path, step_count, step_size, toml_file, tolerance,
)
from .farm.options import add_batch_bake_options, add_sweep_command

PROG = "python -m addon"
DEBUG_ENV = "SYMPLEX_DEBUG"
MAX_MESSAGE = 1000  # characters of an error line; a message quoting a huge field value is cut


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
    from .solver.advice import method_advice
    from .solver.mechfile.read import load_mechanism
    from .solver.mechfile.validate import check_method
    from .solver.model import MechanismError
    from .solver.trajectory import SolverError

    model_path = args.model
    toml_file(model_path, "mechanism file")
    output_path(args.out, model_path)
    try:
        mechanism = load_mechanism(model_path)
        if args.order is not None:
            mechanism = mechanism.replace(order=args.order)
        if integrator.METHODS.get(args.method) is not None:  # simulate() reports the other names
            check_method(mechanism, args.method)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    for advice in method_advice(mechanism, args.method):
        print(f"{PROG} simulate: warning: {model_path}: {advice}", file=sys.stderr)

    start = time.perf_counter()
    try:
        trajectory = integrator.simulate(mechanism, dt=args.dt, steps=args.steps, method=args.method, tol=args.tol)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    except NotImplementedError as exc:
        raise CommandError(str(exc) or f"method {args.method!r} is not implemented") from None
    except ValueError as exc:
        # An unknown or not-yet-available method; any other ValueError is a bug (main's internal error).
        if getattr(integrator, "METHODS", {}).get(args.method) is not None:
            raise
        raise CommandError(str(exc)) from None
    except SolverError as exc:
        raise CommandError(naming(model_path, str(exc)), EXIT_FAILED) from None
    wall = time.perf_counter() - start

    with atomic_output(args.out, ".npz") as temp:
        trajectory.save(temp)
    label = args.method if mechanism.order == 2 else f"{args.method} order {mechanism.order}"
    print(summary_line(mechanism.name, trajectory, label, args.dt, wall, args.out))
    if trajectory.status == "failed":
        raise CommandError(naming(model_path, trajectory.message), EXIT_FAILED)
    if trajectory.message:  # finished, with something the run's checks name (integrator docstrings)
        print(f"warning: {naming(model_path, trajectory.message)}", file=sys.stderr)
    return EXIT_OK


def naming(path: Path, message: str) -> str:
    """`message` beginning with the file it is about (once: solver messages may name it already)."""
    return message if message.startswith(f"{path}:") else f"{path}: {message}"


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
# shot


def cmd_shot(args: argparse.Namespace) -> int:
    from .solver.shots import cli

    shot = cli.load_shot_file(args.shot)
    output_path(args.out, args.shot)
    start = time.perf_counter()
    result = cli.solve(shot, args.max_iter)
    wall = time.perf_counter() - start
    cli.save_result(result, args.out)
    print(cli.summary_line(shot.name, result, wall, args.out))
    failure = cli.failure(args.shot, result)
    if failure is not None:
        raise failure
    return EXIT_OK


# ----------------------------------------------------------------------------------------------
# bake, demo, bench


def cmd_bake(args: argparse.Namespace) -> int:
    if args.out_dir is not None:
        from .farm.batch import cmd_batch_bake

        return cmd_batch_bake(args)
    if len(args.scene) != 1 or args.out is None:
        raise CommandError("give one SCENE.blend with --out BAKED.blend, or any number with --out-dir DIR")
    scene_path = args.scene[0]
    blend_file(scene_path)
    output_path(args.out, scene_path)

    def load():
        from .bridge.headless import bake_file

        return bake_file

    bake_file = _import_blender_module(load)
    from .solver.model import MechanismError
    from .solver.trajectory import SolverError

    try:
        report = bake_file(scene_path, args.out)
    except MechanismError as exc:
        raise CommandError(str(exc)) from None
    except SolverError as exc:
        raise CommandError(naming(scene_path, str(exc)), EXIT_FAILED) from None
    print(report)
    print(f"baked {scene_path} -> {args.out}")
    return EXIT_OK


def _checkout_root() -> str:
    """The directory holding addon/: the repository checkout, or the installed extension's folder."""
    return str(Path(__file__).resolve().parent.parent)


def cmd_demo(args: argparse.Namespace) -> int:
    # demo/ sits beside addon/ in the repository; the extension does not carry it (nor matplotlib).
    repo = _checkout_root()
    if not (Path(repo) / "demo" / "__init__.py").is_file():
        raise CommandError("the demo is a development command: run it from a checkout of the Symplex "
                           "repository (`make demo`); the installed extension does not carry it")
    if repo not in sys.path:
        sys.path.insert(0, repo)

    def load():
        from demo.scenes import run_demo
        from demo.shots import run_shots_demo

        return run_demo, run_shots_demo

    output_path(args.out, directory=True)
    run_demo, run_shots_demo = _import_blender_module(load)

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
    repo = _checkout_root()
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from benchmarks.run import main as bench_main

    if args.docs:
        output_path(args.docs, directory=True)

    argv = (["--quick"] if args.quick else []) + [f"--suite={name}" for name in args.suite or []]
    argv += ["--docs", str(args.docs)] if args.docs else []
    return int(bench_main(argv) or 0)


# ----------------------------------------------------------------------------------------------
# parser and entry point


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (its own print the usage block first)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: {_one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Symplex: physically exact motion for mechanisms and vehicles, baked to Blender keyframes.",
        epilog="Run from the repository root with the project environment (.venv/bin/python; `make venv`). "
        "Exit codes: 0 done, 1 a solve or bake failed, 2 bad input; one line on stderr for every failure.",
    )
    debug = _Parser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help=f"print the traceback of an internal error (or set {DEBUG_ENV}=1)")
    parser.add_argument("--debug", action="store_true", default=False,
                        help=f"print the traceback of an internal error (or set {DEBUG_ENV}=1)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = commands.add_parser(
        "simulate", parents=[debug], help="solve a mechanism file and write the trajectory (.npz)",
        description="Solve a mechanism file (presets/*.toml format) and save the Trajectory as .npz "
        "(t, bodies, poses, q, energy, constraint_residual, newton_iterations, ...).",
    )
    sim.add_argument("model", type=Path, metavar="MODEL.toml", help="mechanism file")
    sim.add_argument("--method", default="tree",
                     help="integration method: tree (default), maximal or vehicle; "
                     "an unknown name lists the valid ones")
    sim.add_argument("--order", type=accuracy_order, default=None,
                     help="accuracy order of the tree method: 2 (midpoint), 4, 6 or 8 (Galerkin); default: the "
                     "file's [setup] order, else 2; other methods refuse an order above 2")
    sim.add_argument("--dt", type=step_size, default=0.01,
                     help=f"time step in seconds, {MIN_DT:g} to {MAX_DT:g} (default 0.01)")
    sim.add_argument("--steps", type=step_count, default=100,
                     help=f"number of steps, 1 to {MAX_STEPS} (default 100)")
    sim.add_argument("--tol", type=tolerance, default=1e-10,
                     help="Newton tolerance on the discrete equations and constraints, "
                     f"{MIN_TOL:g} to {MAX_TOL:g} (default 1e-10)")
    sim.add_argument("--out", type=Path, default=Path("run.npz"), metavar="RUN.npz",
                     help="output file, never the input (default run.npz)")
    sim.set_defaults(func=cmd_simulate)

    shot = commands.add_parser(
        "shot", parents=[debug], help="solve an optimal-control shot file and write the solution (.npz)",
        description="Solve a shot file (presets/shots/*.toml format: a vehicle or a mechanism, keys, "
        "obstacles, bounds) and save the solution as .npz: t, states, state_names, control_names, "
        "controls/<name>, control_times/<name>, key_names, key_errors, bodies and poses of the replay "
        "through the simulator, status, iterations, replay_error, wall_time (docs/shots.md). Prints one "
        "line: status, iterations, the error of each key, the replay error and the time. Exit 1 when "
        "the shot is not solved (the .npz is written all the same).",
    )
    shot.add_argument("shot", type=Path, metavar="SHOT.toml", help="shot file")
    shot.add_argument("--out", type=Path, default=Path("shot.npz"), metavar="RUN.npz",
                      help="output file, never the input (default shot.npz)")
    shot.add_argument("--max-iter", type=iteration_count, default=None, metavar="N",
                      help=f"interior-point iterations before giving up, 1 to {MAX_ITERATIONS} (default: the "
                      "solver's, 300 for vehicles, 200 for mechanisms)")
    shot.set_defaults(func=cmd_shot)

    bake = commands.add_parser(
        "bake", parents=[debug], help="bake every Symplex setup in a .blend, headless (needs bpy)",
        description="Open SCENE.blend in Blender (the bpy module), solve and bake every Symplex setup "
        "and vehicle rig into keyframes, and save the result as BAKED.blend. The input file is not "
        "modified: --out naming it (or a link to it) is refused. A file with nothing to bake is exit 2, "
        "with a line saying what it holds. With --out-dir DIR, every SCENE.blend is baked by its own process on "
        "Dask workers into DIR/<its name>; exit 1 names every file that failed (docs/farm.md).",
    )
    bake.add_argument("scene", type=Path, nargs="+", metavar="SCENE.blend", help="scene(s) to bake")
    bake.add_argument("--out", type=Path, metavar="BAKED.blend", help="where to save the baked scene (one scene)")
    add_batch_bake_options(bake)
    bake.set_defaults(func=cmd_bake)
    add_sweep_command(commands, [debug])

    demo = commands.add_parser(
        "demo", parents=[debug],
        help="build, solve and bake the demo scenes; write .blend, plots and previews (needs bpy)",
        description="Build the demo scenes, solve and bake them, and write a .blend plus PNG plots and "
        "previews to the output directory.",
    )
    demo.add_argument("--out", type=Path, default=Path("out"), metavar="DIR", help="output directory (default out/)")
    demo.set_defaults(func=cmd_demo)

    bench = commands.add_parser(
        "bench", parents=[debug], help="run the benchmark suite beside its peers",
        description="Run benchmarks/ (speed and accuracy beside peer simulators) and write the table.",
    )
    bench.add_argument("--quick", action="store_true", help="short runs, for a smoke test")
    bench.add_argument("--suite", action="append", choices=("tree", "maximal", "shots", "collision", "farm"),
                       help="run only this suite (repeatable; default: all)")
    bench.add_argument("--docs", type=Path, metavar="DIR",
                       help="folder for the result tables (default: docs/ for a full run; --quick only prints)")
    bench.set_defaults(func=cmd_bench)
    return parser


def _one_line(message: str) -> str:
    """`message` as one line (its lines joined by '; '), cut to MAX_MESSAGE characters."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code and never raises (argparse's own exits included)."""
    args = None
    try:
        args = build_parser().parse_args(argv)
        with warnings.catch_warnings():
            if not _debug(args):  # numpy's overflow warnings of a diverging solve; the failure is reported
                warnings.simplefilter("ignore", RuntimeWarning)
            return args.func(args)
    except SystemExit as exc:  # argparse after --help (0) or a usage error it has printed (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except CommandError as exc:
        _report(args, str(exc))
        return exc.code
    except KeyboardInterrupt:
        _report(args, "interrupted")
        return EXIT_FAILED
    except BrokenPipeError:
        _report(args, "standard output was closed before the command finished")
        return EXIT_FAILED
    except Exception as exc:  # the last safety net: a bug, reported in one line
        debug = _debug(args)
        if debug:
            traceback.print_exc()
        hint = "" if debug else f"; --debug or {DEBUG_ENV}=1 shows the traceback"
        _report(args, f"internal error: {type(exc).__name__}: {exc}", f" (please report{hint})")
        return EXIT_FAILED


def _debug(args: argparse.Namespace | None) -> bool:
    """--debug or SYMPLEX_DEBUG set (to anything but 0)."""
    return bool(args is not None and args.debug) or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _report(args: argparse.Namespace | None, message: str, tail: str = "") -> None:
    """Print `message` as one line on stderr, prefixed by the program and command."""
    prefix = PROG if args is None else f"{PROG} {args.command}"
    print(f"{prefix}: {_one_line(message)}{tail}", file=sys.stderr)


def _exit(code: int) -> None:
    """Leave with `code`. Blender 4.2 as a module can crash in its own teardown at interpreter exit once
    the add-on was registered (docs/development.md); there the process leaves at once, after flushing, so
    no command, finished or failed, reports a crash. A closed stdout (`... | head`) ends quietly too."""
    bpy = sys.modules.get("bpy")
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        os._exit(code)
    if bpy is not None and bpy.app.version < (4, 3, 0):
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())

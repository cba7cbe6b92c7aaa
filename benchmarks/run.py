"""Benchmark suites beside their peers, each measured in one run and recorded in its docs/ file.

Usage: python -m addon bench [--quick] [--suite tree|maximal|shots|collision|farm ...] [--docs DIR]
       python -m benchmarks.run --chains-only   (only the chain section of docs/benchmarks.md)
Suites: tree (this module: chains and closed chains, plus benchmarks/vehicles.py) -> benchmarks.md;
maximal (benchmarks/maximal.py) -> benchmarks_maximal.md; shots (benchmarks/shots.py, CasADi + IPOPT)
-> the Results section of benchmarks_shots.md; collision (benchmarks/collision.py) -> benchmarks_collision.md;
farm (benchmarks/farm.py: a 32-variant shot sweep on 1 and 2 Dask workers) -> benchmarks_farm.md.
For each N-link pendulum chain (generate.pendulum_chain) and each closed-chain preset, reports the
median warm wall time per step of Symplex's midpoint VI (C kernel when built, numpy otherwise) and,
for chains, of MuJoCo (RK4 and its default semi-implicit Euler) on the same chain, same dt, with the
ratio, plus accuracy beside speed: energy band and drift over the timed run, max loop residual.
Writes a Markdown table with the command, commit, CPU and versions.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from addon.solver import native
from addon.solver.integrator import make_integrator
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Mechanism
from addon.solver.presets import preset_path
from benchmarks import vehicles
from tools.generate import pendulum_chain

DT = 0.01
CHAIN_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
QUICK_SIZES = (1, 2, 5, 10, 20, 50, 100)
CLOSED_CHAINS = ("closed_chain_device", "four_bar", "scissor_lift", "slider_crank")


def _steps_for(nq: int, quick: bool) -> int:
    budget = 200 if quick else 600
    return max(50 if quick else 100, min(budget, int(budget * 20 / max(nq, 20))))


def step_times(integ, steps: int) -> list[float]:
    """Wall time (s) of each of the next `steps` steps of integrator `integ`."""
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        integ.step()
        times.append(time.perf_counter() - t0)
    return times


def time_symplex(mech: Mechanism, steps: int) -> dict:
    """Median ms per step after a warm-up, with accuracy of the timed run."""
    integ = make_integrator(mech, "tree", DT)
    for _ in range(3):
        integ.step()
    times = step_times(integ, steps)
    traj = integ.trajectory()
    e = traj.energy[1:]
    return {
        "ms": 1e3 * float(np.median(times)),
        "iterations": float(np.mean(traj.newton_iterations)),
        "energy_band": float(np.ptp(e)),
        "residual": float(np.max(traj.constraint_residual)),
    }


def chain_mujoco(mech: Mechanism, integrator: str):
    """MuJoCo model of the same N-link chain: hinges about +Y at each link top, explicit inertials.

    Built with MjSpec (one nested body per link) rather than MJCF text, whose XML parser caps the
    nesting depth below 500 bodies."""
    import mujoco

    spec = mujoco.MjSpec()
    spec.option.timestep = DT
    spec.option.gravity = list(mech.gravity)
    spec.option.integrator = {"RK4": mujoco.mjtIntegrator.mjINT_RK4, "Euler": mujoco.mjtIntegrator.mjINT_EULER}[integrator]
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    parent = spec.worldbody
    for i, body in enumerate(mech.bodies):
        ixx, iyy, izz = body.inertia[:3]
        parent = parent.add_body(name=body.name, pos=[0.0, 0.0, 0.0 if i == 0 else -1.0], mass=body.mass,
                                 ipos=list(body.com), inertia=[ixx, iyy, izz], explicitinertial=True)
        parent.add_joint(name=f"h{i}", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0.0, 1.0, 0.0])
    return spec.compile()


def time_mujoco(mech: Mechanism, steps: int, integrator: str) -> dict | None:
    try:
        import mujoco
    except ImportError:
        return None
    model = chain_mujoco(mech, integrator)
    data = mujoco.MjData(model)
    data.qpos[0] = mech.joints[0].q0[0]
    mujoco.mj_forward(model, data)
    energies = []
    for _ in range(3):
        mujoco.mj_step(model, data)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(model, data)
        times.append(time.perf_counter() - t0)
        energies.append(float(data.energy.sum()))
    return {"ms": 1e3 * float(np.median(times)), "energy_band": float(np.ptp(energies))}


def _describe() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import mujoco

        mj = mujoco.__version__
    except ImportError:
        mj = "not installed"
    import scipy

    return (f"commit `{commit}`, CPU {cpu}, Python {platform.python_version()}, numpy {np.__version__}, "
            f"scipy {scipy.__version__}, MuJoCo {mj}, Symplex kernels: "
            f"{'C' if native.NATIVE else 'numpy (C step kernel not built)'}")


CHAIN_HEADING = "## N-link pendulum chains"
SHOTS_HEADING = "## Results"  # the section of docs/benchmarks_shots.md that `bench --suite shots` writes


def chain_table(quick: bool) -> list[str]:
    """The N-link chain section: Symplex beside MuJoCo RK4 and Euler, same chain and dt, one run."""
    lines = [
        f"{CHAIN_HEADING} (dt = 0.01 s, top link at 45 degrees, from rest)",
        "",
        "| N | Symplex ms/step | Newton its | energy band | MuJoCo RK4 ms/step | ratio to RK4 | MuJoCo RK4 energy band "
        "| MuJoCo Euler ms/step | ratio to Euler | MuJoCo Euler energy band |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in QUICK_SIZES if quick else CHAIN_SIZES:
        mech = pendulum_chain(n)
        steps = _steps_for(n, quick)
        ours = time_symplex(mech, steps)
        rk4 = time_mujoco(mech, steps, "RK4")
        euler = time_mujoco(mech, steps, "Euler")

        def cols(peer: dict | None) -> str:
            if peer is None:
                return "n/a | n/a | n/a"
            return f"{peer['ms']:.4f} | {ours['ms'] / peer['ms']:.2g} | {peer['energy_band']:.2e}"

        row = (f"| {n} | {ours['ms']:.3f} | {ours['iterations']:.2f} | {ours['energy_band']:.2e} | "
               f"{cols(rk4)} | {cols(euler)} |")
        lines.append(row)
        print(row, flush=True)
    return lines


def closed_chain_table(quick: bool) -> list[str]:
    lines = [
        "## Closed-chain presets (dt = 0.01 s)",
        "",
        "| preset | Symplex ms/step | Newton its | max loop residual | energy band |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in CLOSED_CHAINS:
        ours = time_symplex(load_mechanism(preset_path(name)), 100 if quick else 400)
        row = (f"| {name} | {ours['ms']:.3f} | {ours['iterations']:.2f} | {ours['residual']:.1e} | "
               f"{ours['energy_band']:.2e} |")
        lines.append(row)
        print(row, flush=True)
    return lines


def load_text(load: tuple[float, float, float]) -> str:
    """A load average (1, 5, 15 min) as text."""
    return ", ".join(f"{x:.2f}" for x in load)


def run_note(command: str, load_at_start: tuple[float, float, float]) -> str:
    """The line under a benchmark section's heading: command, machine, load at the start and now."""
    return (f"Command: `OMP_NUM_THREADS=1 {command}`. Machine: {_describe()}. Load average (1, 5, 15 min; the "
            f"machine is shared) at the start {load_text(load_at_start)}, at the end {load_text(os.getloadavg())}.")


def write_sections(out: Path, command: str, make: Callable[[], list[list[str]]], title: str) -> None:
    """Measure the sections `make` returns and replace each in the Markdown file `out` (titled `title` if new),
    with the command and the machine's load under each heading; print them."""
    load = os.getloadavg()
    parts = make()
    note = run_note(command, load)
    text = out.read_text() if out.exists() else f"# {title}\n"
    for section in parts:
        section[1:1] = ["", note]
        text = replace_section(text, section[0], section)
    out.write_text(text)
    print("\n".join(line for section in parts for line in section))


def replace_section(text: str, heading: str, section: list[str]) -> str:
    """`text` with the '## ' section whose title starts with `heading` replaced by `section` (appended if absent)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    if start is None:
        return "\n".join(lines + [""] + section) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[:start] + section + [""] + lines[end:]) + "\n"


def tree_and_vehicles(quick: bool, command: str) -> str:
    """docs/benchmarks.md: tree-method chains beside MuJoCo, closed chains, vehicles."""
    lines = [*chain_table(quick), "", *closed_chain_table(quick), "", *vehicles.run(quick, command)]
    header = [
        "# Benchmarks",
        "",
        f"Command: `{command}` ({_describe()}).",
        "Times are medians of warm single steps; ratio = Symplex time / peer time (above 1: the peer is faster).",
        "Energy band = max - min of total energy over the timed steps (the VI's is bounded; see tests).",
        "Other suites: [maximal coordinates](benchmarks_maximal.md), [optimal-control shots](benchmarks_shots.md), "
        "[collision queries](benchmarks_collision.md).",
        "",
    ]
    return "\n".join(header + lines) + "\n"


def _suites() -> dict[str, tuple[Callable[[bool, str], str], str]]:
    """Suite name -> (run(quick, command) -> Markdown, the docs/ file it is recorded in). Imported lazily so
    one suite runs without the others' peers."""

    def maximal(quick: bool, command: str) -> str:
        from benchmarks import maximal
        return maximal.run(quick).replace("`python -m benchmarks.maximal --quick`", f"`{command}`").replace(
            "`python -m benchmarks.maximal`", f"`{command}`")

    def shots(quick: bool, command: str) -> str:
        """docs/benchmarks_shots.md with its Results section replaced (the rest of it is written by hand)."""
        from benchmarks import shots
        doc = Path(__file__).resolve().parents[1] / "docs" / "benchmarks_shots.md"
        section = [SHOTS_HEADING, "", f"Command: `{command}` ({_describe()}).", "", shots.run(quick).rstrip("\n")]
        return replace_section(doc.read_text(), SHOTS_HEADING, section)

    def collision(quick: bool, command: str) -> str:
        from benchmarks import collision
        return f"# Collision queries: benchmark\n\nCommand: `{command}` ({_describe()}).\n\n{collision.run(quick)}"

    def farm(quick: bool, command: str) -> str:
        from benchmarks import farm
        return f"# Sweeps on Dask workers: benchmark\n\nCommand: `{command}` ({_describe()}).\n\n{farm.run(quick)}"

    return {
        "tree": (tree_and_vehicles, "benchmarks.md"),
        "farm": (farm, "benchmarks_farm.md"),
        "maximal": (maximal, "benchmarks_maximal.md"),
        "shots": (shots, "benchmarks_shots.md"),
        "collision": (collision, "benchmarks_collision.md"),
    }


def main(argv: list[str] | None = None) -> int:
    suites = _suites()
    parser = argparse.ArgumentParser(prog="python -m addon bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs and small sizes (a smoke test)")
    parser.add_argument("--suite", action="append", choices=sorted(suites),
                        help="run only this suite (repeatable); default: all")
    parser.add_argument("--docs", type=Path, default=None,
                        help="write each suite's table into this folder (default: docs/ for a full run; "
                             "a --quick run only prints)")
    parser.add_argument("--chains-only", action="store_true",
                        help="only the N-link chain table; replace that section of docs/benchmarks.md")
    args = parser.parse_args(argv)
    docs = args.docs if args.docs is not None else (None if args.quick else Path(__file__).resolve().parents[1] / "docs")
    if args.chains_only:
        command = "python -m benchmarks.run --chains-only" + (" --quick" if args.quick else "")
        section = chain_table(args.quick)
        section[1:1] = ["", f"Command: `{command}` ({_describe()}).", "Times are medians of warm single steps; "
                        "ratio = Symplex time / peer time (above 1: the peer is faster)."]
        if docs is not None:
            path = docs / "benchmarks.md"
            path.write_text(replace_section(path.read_text() if path.exists() else "# Benchmarks\n", CHAIN_HEADING,
                                            section))
            print(f"wrote the chain section of {path}")
        return 0
    for name in args.suite or list(suites):
        run, filename = suites[name]
        command = f"python -m addon bench --suite {name}" + (" --quick" if args.quick else "")
        text = run(args.quick, command)
        print(text, flush=True)
        if docs is not None:
            docs.mkdir(parents=True, exist_ok=True)
            (docs / filename).write_text(text)
            print(f"wrote {docs / filename}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark suite: tree-method step time beside MuJoCo on the same chains, measured in one run.

Usage: python -m addon bench [--quick] [--out docs/benchmarks.md]
For each N-link pendulum chain (generate.pendulum_chain) and each closed-chain preset, reports the
median warm wall time per step of Symplex's midpoint VI (C kernel when built, numpy otherwise) and,
for chains, of MuJoCo (RK4 and its default semi-implicit Euler) on the same chain, same dt, with the
ratio, plus accuracy beside speed: energy band and drift over the timed run, max loop residual.
Writes a Markdown table with the command, commit, CPU and versions.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from addon.solver import native
from addon.solver.generate import pendulum_chain
from addon.solver.integrator import make_integrator
from addon.solver.mechfile import load_mechanism, preset_path
from addon.solver.model import Mechanism
from benchmarks import vehicles

DT = 0.01
CHAIN_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
QUICK_SIZES = (1, 2, 5, 10, 20, 50, 100)
CLOSED_CHAINS = ("closed_chain_device", "four_bar", "scissor_lift", "slider_crank")


def _steps_for(nq: int, quick: bool) -> int:
    budget = 200 if quick else 600
    return max(10, min(budget, int(budget * 20 / max(nq, 20))))


def time_symplex(mech: Mechanism, steps: int) -> dict:
    """Median ms per step after a warm-up, with accuracy of the timed run."""
    integ = make_integrator(mech, "tree", DT)
    for _ in range(3):
        integ.step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        integ.step()
        times.append(time.perf_counter() - t0)
    traj = integ.trajectory()
    e = traj.energy[1:]
    return {
        "ms": 1e3 * float(np.median(times)),
        "iterations": float(np.mean(traj.newton_iterations)),
        "energy_band": float(np.ptp(e)),
        "residual": float(np.max(traj.constraint_residual)),
    }


def chain_mjcf(n: int, mech: Mechanism) -> str:
    """MJCF of the same N-link chain: hinges about +Y at each link top, explicit inertials."""
    body_xml = ""
    for i, body in reversed(list(enumerate(mech.bodies))):
        ixx, iyy, izz = body.inertia[:3]
        offset = "0 0 0" if i == 0 else "0 0 -1"
        body_xml = (
            f'<body name="{body.name}" pos="{offset}">'
            f'<joint name="h{i}" type="hinge" axis="0 1 0" pos="0 0 0"/>'
            f'<inertial pos="0 0 -0.5" mass="{body.mass}" diaginertia="{ixx} {iyy} {izz}"/>'
            f"{body_xml}</body>"
        )
    return (f'<mujoco><option timestep="{DT}" integrator="{{integrator}}" gravity="0 0 -9.81"/>'
            f"<worldbody>{body_xml}</worldbody></mujoco>")


def time_mujoco(n: int, mech: Mechanism, steps: int, integrator: str) -> dict | None:
    try:
        import mujoco
    except ImportError:
        return None
    try:
        model = mujoco.MjModel.from_xml_string(chain_mjcf(n, mech).replace("{integrator}", integrator))
    except ValueError as err:  # MJCF nests one <body> per link; its XML parser caps the depth
        return {"error": str(err).splitlines()[-1]}
    data = mujoco.MjData(model)
    data.qpos[0] = mech.joints[0].q0[0]
    mujoco.mj_forward(model, data)
    energies = []
    model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m addon bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and chains up to N = 100")
    parser.add_argument("--out", default=None, help="write the Markdown table to this file")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else CHAIN_SIZES
    lines = [
        "## N-link pendulum chains (dt = 0.01 s, top link at 45 degrees, from rest)",
        "",
        "| N | Symplex ms/step | Newton its | energy band | MuJoCo RK4 ms/step | ratio to RK4 | MuJoCo RK4 energy band "
        "| MuJoCo Euler ms/step | ratio to Euler | MuJoCo Euler energy band |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        mech = pendulum_chain(n)
        steps = _steps_for(n, args.quick)
        ours = time_symplex(mech, steps)
        rk4 = time_mujoco(n, mech, steps, "RK4")
        euler = time_mujoco(n, mech, steps, "Euler")

        def cols(peer: dict | None) -> str:
            if peer is None:
                return "n/a | n/a | n/a"
            if "error" in peer:
                return "n/a (MJCF nesting limit) | n/a | n/a"
            return f"{peer['ms']:.4f} | {ours['ms'] / peer['ms']:.1f} | {peer['energy_band']:.2e}"

        row = (f"| {n} | {ours['ms']:.3f} | {ours['iterations']:.2f} | {ours['energy_band']:.2e} | "
               f"{cols(rk4)} | {cols(euler)} |")
        lines.append(row)
        print(row, flush=True)
    lines += [
        "",
        "## Closed-chain presets (dt = 0.01 s)",
        "",
        "| preset | Symplex ms/step | Newton its | max loop residual | energy band |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in CLOSED_CHAINS:
        ours = time_symplex(load_mechanism(preset_path(name)), 100 if args.quick else 400)
        row = (f"| {name} | {ours['ms']:.3f} | {ours['iterations']:.2f} | {ours['residual']:.1e} | "
               f"{ours['energy_band']:.2e} |")
        lines.append(row)
        print(row, flush=True)
    lines += ["", *vehicles.run(args.quick, f"python -m addon bench{' --quick' if args.quick else ''}")]
    header = [
        "# Benchmarks",
        "",
        f"Command: `python -m addon bench{' --quick' if args.quick else ''}` ({_describe()}).",
        "Times are medians of warm single steps; ratio = Symplex time / peer time (above 1: the peer is faster).",
        "Energy band = max - min of total energy over the timed steps (the VI's is bounded; see tests).",
        "",
    ]
    text = "\n".join(header + lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Vehicle benchmark: Lie group integrator steps per second per preset, beside RK4 at equal accuracy and batches.

Usage: python -m benchmarks.vehicles [--quick] [--out FILE]   (also run by `python -m addon bench`)
For each vehicle preset (presets/vehicles/*.toml) at dt = 0.01 s over its 10 s scenario:
- Lie: steps per second of the 'vehicle' method through make_integrator (what a bake runs, recording
  included), and its accuracy: the largest centre-of-mass position error at t = 1, 2, ... 10 s against
  a reference (RK4 at h = 1 ms for the SE(3) vehicles, the Lie method at dt / 16 for the others).
- RK4 (solver/vehicles/rk4.py, SE(3) vehicles only; the nonholonomic cars, car with trailer, tank and
  snakeboard have no RK4 baseline): the largest step from RK4_STEPS whose error is at most the Lie method's, its steps
  per second, and the wall time both need for the 10 s at that accuracy.
- Batch: BATCH copies of the SE(3) vehicle stepped at once by holonomic.step (broadcast state), as
  steps x vehicles per second, beside one vehicle stepped alone by the same function.
Writes a Markdown section with the command, commit, CPU and versions.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from addon.solver import groups
from addon.solver.integrator import make_integrator
from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Mechanism
from addon.solver.presets import list_vehicle_presets, vehicle_preset_path
from addon.solver.vehicles import holonomic, rk4
from addon.solver.vehicles.boat import compile_boat
from addon.solver.vehicles.helicopter import compile_helicopter
from addon.solver.vehicles.hovercraft import compile_hovercraft
from addon.solver.vehicles.spec import VehicleStepError

DT = 0.01
DURATION = 10.0
SAMPLES = np.arange(1.0, DURATION + 0.5, 1.0)  # times (s) where positions are compared
REFERENCE_H = 0.001
RK4_STEPS = (0.5, 0.25, 0.2, 0.1, 0.05, 0.025, 0.02, 0.01, 0.005, 0.0025)  # candidate RK4 steps, largest first
BATCH = 1000
PRESETS = ("sedan", "kart", "truck", "car_trailer", "tank", "helicopter", "speedboat", "hovercraft", "snakeboard")
HOLONOMIC = ("helicopter", "boat", "hovercraft")  # SE(3) vehicle types: RK4 baseline and batches


@dataclass(frozen=True)
class Row:
    preset: str
    kind: str
    lie_rate: float  # steps / s
    lie_error: float  # m
    reference: str
    rk4_h: float | None = None
    rk4_rate: float | None = None
    rk4_error: float | None = None
    lie_seconds: float | None = None  # wall time for DURATION at dt
    rk4_seconds: float | None = None  # wall time for DURATION at rk4_h
    batch_rate: float | None = None  # steps x vehicles / s
    single_rate: float | None = None  # steps / s of holonomic.step alone


def _at_samples(t: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """positions (N+1, 3) at the SAMPLES times (every sample falls on a node of the uniform grid t)."""
    index = np.rint(SAMPLES / (t[1] - t[0])).astype(int)
    return positions[index]


def _lie_run(mech: Mechanism, dt: float) -> tuple[float, np.ndarray]:
    """(steps per second through make_integrator, centre-of-mass positions at SAMPLES)."""
    steps = int(round(DURATION / dt))
    integ = make_integrator(mech, "vehicle", dt, 1e-10)
    started = time.perf_counter()
    for _ in range(steps):
        integ.step()
    rate = steps / (time.perf_counter() - started)
    traj = integ.trajectory()
    return rate, _at_samples(traj.t, traj.poses[:, 0, :3])


def _holonomic_model(mech: Mechanism):
    vehicle = mech.vehicle
    if vehicle.type == "helicopter":
        model, _ = compile_helicopter(vehicle, mech.gravity)
    elif vehicle.type == "hovercraft":
        model = compile_hovercraft(vehicle, mech.gravity)
    else:
        model = compile_boat(vehicle, mech.gravity)
    g0 = groups.se3_element(quat_to_matrix(np.asarray(vehicle.orientation, dtype=float)), vehicle.position)
    return model, g0, np.asarray(vehicle.velocity, dtype=float)


def _rk4_run(mech: Mechanism, h: float) -> tuple[float, np.ndarray]:
    """(steps per second of rk4.step, positions at SAMPLES) with step h."""
    model, g0, xi0 = _holonomic_model(mech)
    state = rk4.start(g0, xi0)
    steps = int(round(DURATION / h))
    every = int(round(1.0 / h))
    positions = []
    started = time.perf_counter()
    for k in range(1, steps + 1):
        rk4.step(model, state, h)
        if k % every == 0:
            positions.append(state.x.copy())
    return steps / (time.perf_counter() - started), np.array(positions)


def _batch_rate(mech: Mechanism, count: int, steps: int) -> float:
    """steps x vehicles per second of holonomic.step on `count` copies with slightly spread start twists."""
    model, g0, xi0 = _holonomic_model(mech)
    rng = np.random.default_rng(1)
    g = np.broadcast_to(g0, (count, 4, 4)).copy() if count > 1 else g0
    xi = xi0 + (0.01 * rng.standard_normal((count, 6)) if count > 1 else 0.0)
    state = holonomic.start(model, g, xi)
    started = time.perf_counter()
    for _ in range(steps):
        holonomic.step(model, state, DT, 1e-10)
    return steps * count / (time.perf_counter() - started)


def _error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.linalg.norm(a - b, axis=-1)))


def measure(preset: str, quick: bool = False) -> Row:
    mech = load_mechanism(vehicle_preset_path(preset))
    kind = mech.vehicle.type
    lie_rate, lie_pos = _lie_run(mech, DT)
    lie_seconds = DURATION / DT / lie_rate
    if kind not in HOLONOMIC:
        _, ref = _lie_run(mech, DT / 16)
        return Row(preset, kind, lie_rate, _error(lie_pos, ref), "Lie at dt/16", lie_seconds=lie_seconds)
    _, ref = _rk4_run(mech, REFERENCE_H)
    lie_error = _error(lie_pos, ref)
    chosen = None
    for h in RK4_STEPS:
        try:
            rate, pos = _rk4_run(mech, h)
        except VehicleStepError:  # a step this large leaves the model's range (a capsized hull): not accurate
            continue
        error = _error(pos, ref)
        if error <= lie_error:
            chosen = (h, rate, error)
            break
    batch_steps = 20 if quick else 100
    batch = _batch_rate(mech, BATCH, batch_steps)
    single = _batch_rate(mech, 1, 10 * batch_steps)
    if chosen is None:
        return Row(preset, kind, lie_rate, lie_error, f"RK4 h = {REFERENCE_H:g}", lie_seconds=lie_seconds,
                   batch_rate=batch, single_rate=single)
    h, rate, error = chosen
    return Row(preset, kind, lie_rate, lie_error, f"RK4 h = {REFERENCE_H:g}", h, rate, error, lie_seconds,
               DURATION / h / rate, batch, single)


def _environment() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return (f"commit {commit}, {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}, "
            f"numpy {np.__version__}")


def table(rows: list[Row], command: str) -> list[str]:
    """The Markdown section for `rows`."""
    def f(value, spec):
        return "n/a" if value is None else format(value, spec)

    lines = [
        f"## Vehicles (dt = {DT:g} s, {DURATION:g} s scenario of each preset)",
        "",
        f"Made with `{command}` ({_environment()}). Error: largest centre-of-mass position error at "
        "t = 1, 2, ... 10 s against the reference. RK4 (quaternion renormalised each stage) runs at the "
        "largest step from " + ", ".join(f"{h:g}" for h in RK4_STEPS) + " s whose error is at most the Lie "
        "method's (a step that fails or leaves the model's range counts as not accurate); the cars, the car with "
        "trailer, the tank and the snakeboard are nonholonomic and have no RK4 baseline. Batch: "
        f"{BATCH} vehicles stepped at once by holonomic.step (one Newton solve over the broadcast state).",
        "",
        "| preset | type | Lie steps/s | Lie error (m) | reference | RK4 step (s) | RK4 steps/s | RK4 error (m) "
        "| wall s for 10 s: Lie / RK4 | batch steps x vehicles/s | single holonomic.step steps/s |",
        "|---|---|---:|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        walls = (f"{r.lie_seconds:.3f} / {r.rk4_seconds:.3f}" if r.rk4_seconds is not None
                 else f"{f(r.lie_seconds, '.3f')} / n/a")
        lines.append(f"| {r.preset} | {r.kind} | {r.lie_rate:,.0f} | {r.lie_error:.1e} | {r.reference} | "
                     f"{f(r.rk4_h, 'g')} | {f(r.rk4_rate, ',.0f')} | {f(r.rk4_error, '.1e')} | {walls} | "
                     f"{f(r.batch_rate, ',.0f')} | {f(r.single_rate, ',.0f')} |")
    return lines


def run(quick: bool = False, command: str = "python -m benchmarks.vehicles") -> list[str]:
    """Measure every shipped vehicle preset and return the Markdown section (also printed row by row)."""
    shipped = set(list_vehicle_presets())
    rows = []
    for preset in PRESETS:
        if preset in shipped:
            rows.append(measure(preset, quick))
            print(rows[-1], flush=True)
    return table(rows, command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vehicles", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter batch timing")
    parser.add_argument("--out", default=None, help="write the Markdown section to this file")
    args = parser.parse_args(argv)
    lines = run(args.quick, "python -m benchmarks.vehicles" + (" --quick" if args.quick else ""))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

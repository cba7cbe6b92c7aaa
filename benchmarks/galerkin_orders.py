"""Position error at t = 10 s against wall time for each accuracy order of the tree method.

Usage: python -m benchmarks.galerkin_orders [--presets double_pendulum chain_5] [--long STEPS [--tol TOL]]
Prints a Markdown table per preset: order, dt, steps, wall time of the run (make_integrator + step, the product
path: order 2 is midpoint.py with its C kernel, orders 4-8 are tree/galerkin.py in numpy with a dense Newton
solve), largest body-position error at t = 10 s against DOP853 (rtol = atol = 1e-12) on the same tree model, and
the energy band. Then, for each preset: the error order 2 reaches at dt = 1/96 s and whether orders 4 and 6 meet it
at dt = 1/24 s, with the wall times. With --long STEPS: only the pendulum preset's energy over STEPS steps of
dt = 0.01 s at order 4 (band, and the difference of the first and last tenth's means: a trend would show there).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

from addon.solver.integrator import make_integrator
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.midpoint import initial_state
from addon.solver.tree.rk4 import acceleration

from .run import _describe

T_END = 10.0
STEPS_PER_SECOND = (24, 48, 96, 192, 384)


def reference_positions(mech) -> np.ndarray:
    """Body positions (nbody, 3) at T_END from DOP853 on the tree model's continuous dynamics."""
    model = compile_tree(mech)
    state, _, _, qd = initial_state(model)
    n = model.nq

    def rhs(t, y):
        return np.concatenate([y[n:], acceleration(model, y[:n], y[n:], t, state.charts)])

    sol = solve_ivp(rhs, (0.0, T_END), np.concatenate([state.q, qd]), method="DOP853", rtol=1e-12, atol=1e-12)
    return forward(model, sol.y[:n, -1], state.charts).body_origin


def run(mech, order: int, per_second: int) -> tuple[float, np.ndarray, float]:
    """Wall time (s), body positions at T_END and energy band of a run at dt = 1 / per_second."""
    integrator = make_integrator(mech.replace(order=order), "tree", 1.0 / per_second)
    start = time.perf_counter()
    for _ in range(int(round(T_END * per_second))):
        integrator.step()
    wall = time.perf_counter() - start
    trajectory = integrator.trajectory()
    return wall, trajectory.poses[-1][:, :3], float(np.ptp(trajectory.energy))


def long_run(steps: int, tol: float) -> None:
    integrator = make_integrator(load_mechanism(preset_path("pendulum")).replace(order=4), "tree", 0.01, tol)
    for _ in range(steps):
        integrator.step()
    energy = np.asarray(integrator.trajectory().energy)[1:]
    tenth = len(energy) // 10
    print(f"pendulum, order 4, dt = 0.01 s, tol {tol:g}, {steps} steps: energy band {np.ptp(energy):.3e} J, "
          f"|mean(last tenth) - mean(first tenth)| {abs(energy[-tenth:].mean() - energy[:tenth].mean()):.3e} J")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["double_pendulum", "chain_5"])
    parser.add_argument("--orders", nargs="+", type=int, default=[2, 4, 6, 8])
    parser.add_argument("--long", type=int, default=0, metavar="STEPS")
    parser.add_argument("--tol", type=float, default=1e-10, help="Newton tolerance of --long")
    args = parser.parse_args()
    if args.long:
        long_run(args.long, args.tol)
        return
    print(f"Command: `python -m benchmarks.galerkin_orders` ({_describe()}).\n")
    for name in args.presets:
        mech = load_mechanism(preset_path(name))
        ref = reference_positions(mech)
        print(f"### {name} ({len(mech.bodies)} bodies), t = {T_END:g} s\n")
        print("| order | dt (s) | steps | wall (s) | position error (m) | energy band (J) |")
        print("|---:|---:|---:|---:|---:|---:|")
        results = {}
        for order in args.orders:
            for per_second in STEPS_PER_SECOND if order == 2 else STEPS_PER_SECOND[:3]:
                wall, pos, band = run(mech, order, per_second)
                error = float(np.max(np.linalg.norm(pos - ref, axis=1)))
                results[order, per_second] = (wall, error)
                print(f"| {order} | 1/{per_second} | {int(T_END * per_second)} | {wall:.3f} | {error:.2e} | "
                      f"{band:.2e} |", flush=True)
        if (2, 96) in results:
            target_wall, target = results[2, 96]
            print(f"\nOrder 2 at dt = 1/96 s: error {target:.2e} m in {target_wall:.3f} s.")
            for order in (4, 6):
                if (order, 24) in results:
                    wall, error = results[order, 24]
                    verdict = "meets" if error <= target else "does not meet"
                    print(f"Order {order} at dt = 1/24 s: error {error:.2e} m ({verdict} it) in {wall:.3f} s.")
        print()


if __name__ == "__main__":
    main()

"""Position error at t = 10 s against wall time for each accuracy order of the tree method.

Usage: python -m benchmarks.galerkin_orders [--presets chain_10 chain_100 four_bar] [--high-rates 24 48 96]
       python -m benchmarks.galerkin_orders --long STEPS [--tol TOL]
       python -m benchmarks.galerkin_orders --ops
       python -m benchmarks.galerkin_orders --cpu [--presets ...] [--orders 2 6 8]
Prints a Markdown table per mechanism (a preset, or chain_N: tools.generate.pendulum_chain(N)): order, dt, steps,
wall time of the run (make_integrator + step, the product path: order 2 is midpoint.py with its C kernel, orders
4-8 are tree/galerkin.py, whose Newton loop runs in C on these trees of revolute joints, native/galerkin_step.c,
with galerkin_newton.py's O(s^3 n) direction), largest body-position error
at t = 10 s against DOP853 (rtol = atol = 1e-12) on the same tree model, and the energy band; for chain_N also
MuJoCo RK4 on the same chain (benchmarks/run.py's model) at steps 1/24 .. 1/1536 s. Then: the error order 2 reaches
at dt = 1/96 s, whether orders 4 and 6 meet it at dt = 1/24 s, and MuJoCo RK4's best step (the largest that meets
it), with the wall times. With --long STEPS: only the pendulum preset's energy over STEPS steps of dt = 0.01 s at
order 4 (band, and the difference of the first and last tenth's means: a trend would show there). With
--mujoco-reference N, chain_N's reference is MuJoCo RK4 at dt = 1/N (DOP853 on a 100-link chain takes hours on a
shared machine; on chain_10 RK4 at 1/1536 is within 5e-9 m of DOP853); with --richardson N it is order 2 at
dt = 1/N and 1/2N extrapolated (the closed chains, whose DOP853 reference runs rk4.acceleration's constrained
dynamics). With --ops: the
multiply-adds per link of one Newton direction (galerkin_newton.OPS) on revolute and ball chains of 25 to 1000 links.
With --cpu: only the CPU seconds of the stepping loops, order 2 at dt = 1/96 s and the others at 1/24 s.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

from addon.solver.integrator import make_integrator
from addon.solver.mechfile.read import load_mechanism
from addon.solver.presets import preset_path
from addon.solver.trajectory import ConvergenceError
from addon.solver.tree import galerkin, galerkin_newton
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.midpoint import initial_state
from addon.solver.tree.rk4 import acceleration
from tools.generate import pendulum_chain

from tools.generate import ball_chain
from .run import _describe, chain_mujoco

T_END = 10.0
STEPS_PER_SECOND = (24, 48, 96, 192, 384)
MUJOCO_STEPS_PER_SECOND = (24, 48, 96, 192, 384, 768, 1536)


def generated_chain(name: str) -> bool:
    """chain_N with no preset of that name: tools.generate.pendulum_chain(N), the chain of benchmarks/run.py."""
    if not (name.startswith("chain_") and name[6:].isdigit()):
        return False
    try:
        preset_path(name)
    except FileNotFoundError:
        return True
    return False


def mechanism(name: str):
    return pendulum_chain(int(name[6:])) if generated_chain(name) else load_mechanism(preset_path(name))


def mujoco_run(mech, per_second: int) -> tuple[float, np.ndarray]:
    """Wall time (s) and body-frame origins (nbody, 3) at T_END of MuJoCo RK4 on the chain at dt = 1 / per_second."""
    import mujoco

    model = chain_mujoco(mech, "RK4")
    model.opt.timestep = 1.0 / per_second
    data = mujoco.MjData(model)
    data.qpos[0] = mech.joints[0].q0[0]
    start = time.perf_counter()
    for _ in range(round(T_END * per_second)):
        mujoco.mj_step(model, data)
    return time.perf_counter() - start, data.xpos[1:].copy()


def ops_table() -> None:
    """Multiply-adds per link of one Newton direction, s = 2..4, revolute and ball chains of 25 to 1000 links."""
    print("| joints | s | 25 | 100 | 250 | 1000 |\n|---|---:|---:|---:|---:|---:|")
    for kind in ("revolute", "ball"):
        for s in (2, 3, 4):
            per_link = []
            for n in (25, 100, 250, 1000):
                model = compile_tree(pendulum_chain(n) if kind == "revolute" else ball_chain(n))
                state, _ = galerkin.start(model)
                ru = galerkin.rule(s)
                X = state.q + 0.02 * np.outer(ru.tau[1:], state.velocity_guess)
                res = galerkin.residual(model, state, X, 0.02, ru, state.lam)
                galerkin_newton.OPS.clear()
                galerkin.newton_direction(model, state, X, state.lam, res, 0.02, ru)
                per_link.append(galerkin_newton.OPS["flops"] / n)
            print(f"| {kind} | {s} | " + " | ".join(f"{v:.0f}" for v in per_link) + " |", flush=True)


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


def cpu_table(names: list[str], orders: list[int]) -> None:
    """CPU seconds (time.process_time: less sensitive than wall time to other processes on a shared machine) of
    run()'s stepping loop, order 2 at dt = 1/96 s and the higher orders at 1/24 s, without the reference."""
    for name in names:
        mech = mechanism(name)
        cells = []
        for order in orders:
            per_second = 96 if order == 2 else 24
            integrator = make_integrator(mech.replace(order=order), "tree", 1.0 / per_second)
            start = time.process_time()
            try:
                for _ in range(int(round(T_END * per_second))):
                    integrator.step()
            except ConvergenceError as failure:
                cells.append(f"order {order} at 1/{per_second} s: failed at t = {failure.time:.3g} s")
                continue
            cells.append(f"order {order} at 1/{per_second} s: {time.process_time() - start:.3f} s")
        print(f"{name}: " + "; ".join(cells), flush=True)


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
    parser.add_argument("--presets", nargs="+", default=["chain_10", "chain_100", "four_bar"])
    parser.add_argument("--orders", nargs="+", type=int, default=[2, 4, 6, 8])
    parser.add_argument("--high-rates", nargs="+", type=int, default=list(STEPS_PER_SECOND[:3]), metavar="N",
                        help="steps per second of orders above 2 (order 2 runs all of 24 .. 384)")
    parser.add_argument("--long", type=int, default=0, metavar="STEPS")
    parser.add_argument("--tol", type=float, default=1e-10, help="Newton tolerance of --long")
    parser.add_argument("--mujoco-reference", type=int, default=0, metavar="N",
                        help="chain_N only: the reference is MuJoCo RK4 at dt = 1 / N instead of DOP853 (long chains)")
    parser.add_argument("--richardson", type=int, default=0, metavar="N",
                        help="the reference is (4 x(1/2N) - x(1/N)) / 3 from order 2 at dt = 1/N and 1/2N instead of "
                             "DOP853 (the midpoint rule is symmetric: its error is even in dt, so this is O(dt^4))")
    parser.add_argument("--ops", action="store_true", help="multiply-adds per link of a Newton direction only")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds of the runs only: order 2 at dt = 1/96 s, "
                        "the other orders at 1/24 s, no reference")
    args = parser.parse_args()
    if args.ops:
        ops_table()
        return
    if args.cpu:
        cpu_table(args.presets, args.orders)
        return
    if args.long:
        long_run(args.long, args.tol)
        return
    print(f"Command: `python -m benchmarks.galerkin_orders` ({_describe()}).\n")
    for name in args.presets:
        mech = mechanism(name)
        if args.mujoco_reference and generated_chain(name):
            ref = mujoco_run(mech, args.mujoco_reference)[1]
            print(f"### {name} ({len(mech.bodies)} bodies), t = {T_END:g} s, reference MuJoCo RK4 at "
                  f"dt = 1/{args.mujoco_reference} s\n")
        elif args.richardson:
            coarse, fine = run(mech, 2, args.richardson)[1], run(mech, 2, 2 * args.richardson)[1]
            ref = (4.0 * fine - coarse) / 3.0
            print(f"### {name} ({len(mech.bodies)} bodies), t = {T_END:g} s, reference order 2 at dt = "
                  f"1/{args.richardson} and 1/{2 * args.richardson} s extrapolated (Richardson; they differ by "
                  f"{np.max(np.linalg.norm(fine - coarse, axis=1)):.1e} m)\n")
        else:
            ref = reference_positions(mech)
            print(f"### {name} ({len(mech.bodies)} bodies), t = {T_END:g} s\n")
        print("| order | dt (s) | steps | wall (s) | position error (m) | energy band (J) |")
        print("|---:|---:|---:|---:|---:|---:|")
        results = {}
        for order in args.orders:
            for per_second in STEPS_PER_SECOND if order == 2 else args.high_rates:
                try:
                    wall, pos, band = run(mech, order, per_second)
                except ConvergenceError as failure:
                    print(f"| {order} | 1/{per_second} | {int(T_END * per_second)} | - | failed at t = "
                          f"{failure.time:.3g} s | - |", flush=True)
                    continue
                error = float(np.max(np.linalg.norm(pos - ref, axis=1)))
                results[order, per_second] = (wall, error)
                print(f"| {order} | 1/{per_second} | {int(T_END * per_second)} | {wall:.3f} | {error:.2e} | "
                      f"{band:.2e} |", flush=True)
        mujoco_results = {}
        if generated_chain(name):
            for per_second in MUJOCO_STEPS_PER_SECOND:
                wall, pos = mujoco_run(mech, per_second)
                error = float(np.max(np.linalg.norm(pos - ref, axis=1)))
                mujoco_results[per_second] = (wall, error)
                print(f"| MuJoCo RK4 | 1/{per_second} | {int(T_END * per_second)} | {wall:.3f} | {error:.2e} | - |",
                      flush=True)
        if (2, 96) in results:
            target_wall, target = results[2, 96]
            print(f"\nOrder 2 at dt = 1/96 s: error {target:.2e} m in {target_wall:.3f} s.")
            for order in (4, 6):
                if (order, 24) in results:
                    wall, error = results[order, 24]
                    verdict = "meets" if error <= target else "does not meet"
                    print(f"Order {order} at dt = 1/24 s: error {error:.2e} m ({verdict} it) in {wall:.3f} s.")
            meeting = [per_second for per_second, (_, error) in mujoco_results.items() if error <= target]
            if meeting:
                wall, error = mujoco_results[min(meeting)]
                print(f"MuJoCo RK4 at its best step meeting it, dt = 1/{min(meeting)} s: error {error:.2e} m in "
                      f"{wall:.3f} s.")
            elif mujoco_results:
                print("MuJoCo RK4 meets it at none of the steps tried.")
        print()


if __name__ == "__main__":
    main()

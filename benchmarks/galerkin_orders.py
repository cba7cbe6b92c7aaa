"""Position error at t = 10 s against wall time for each accuracy order of the tree method (issue 14, item 6).

Usage: python -m benchmarks.galerkin_orders --all                 (all of item 6, written into docs/benchmarks.md)
       python -m benchmarks.galerkin_orders [--presets chain_10 four_bar ...] [--high-rates 24 48 96] [--write]
       python -m benchmarks.galerkin_orders --newton [--write]    (time per Newton iteration only)
       python -m benchmarks.galerkin_orders --long STEPS [--tol TOL]
       python -m benchmarks.galerkin_orders --ops
       python -m benchmarks.galerkin_orders --cpu [--presets ...] [--orders 2 6 8] [--repeats N]
One Markdown section per mechanism (a preset, or chain_N: tools.generate.pendulum_chain(N)): order, dt, steps,
wall and CPU time (time.process_time: on a shared machine the fairer comparison) of the run (make_integrator +
step, the product path: order 2 is midpoint.py with its C kernel, orders 4-8 are tree/galerkin.py, whose Newton
loop runs in C, native/galerkin_step.c), largest body-position error at t = 10 s against a reference, and the
energy band; beside it MuJoCo RK4 on the same mechanism at steps 1/24 .. 1/1536 s (chains: benchmarks/run.py's
model; closed chains: benchmarks/maximal.py's, loops closed by MuJoCo's soft `connect`; a mechanism that model
would not reproduce, a prescribed, driven or damped joint, or one MuJoCo refuses, gets no MuJoCo rows, and the
reason). Then: the error order 2 reaches at dt = 1/96 s, whether orders 4 and 6 meet it at dt = 1/24 s and in
less CPU time, and MuJoCo RK4's best step (the largest that meets it). A run that fails shows "failed at t = ...",
an order the compiler refuses shows its message. Orders above 2 run at the steps of --high-rates (24, 48, 96 per
second) up to the first one they run to t = 10 s at. A run, ours or MuJoCo's, stops once it has used more than
--budget seconds of CPU time ("stopped at t = ..."; CPU time, so that the same rows stop on a loaded machine);
MuJoCo rows also stop at a step its RK4 diverges at (MuJoCo resets the state then, so its end positions would
mean nothing), and after a rung over budget (smaller steps only cost more).
The reference (default_reference; --dop853, --mujoco-reference N, --richardson N override it): DOP853 (rtol = atol
= 1e-12) on the tree model's dynamics for chains up to 10 links; MuJoCo RK4 at dt = 1/6144 s up to 100 links
(DOP853 takes hours there; on chain_10 RK4 at 1/1536 s is within 5e-9 m of DOP853); for longer chains our order 2
at dt = 1/192 and 1/384 s, and for the closed chains our order 8 at 1/96 and 1/192 s, Richardson-extrapolated
(error O(dt^4) and O(dt^10); the two runs' difference is printed as its scale; on the closed chains order 2's
errors converging at its order towards it cross-check it through another kernel, tree_step.c).
--newton: CPU time of one Newton iteration of the C kernels (residual, factorisation, solve) on revolute and ball
chains of 25 to 1000 links, s = 1 (tree_step.c, the midpoint rule) to 4 (galerkin_step.c).
--all also writes benchmarks.galerkin_balls' section (the 100-link ball chain per step against MuJoCo).
--ops: the multiply-adds per link of one Newton direction (galerkin_newton.OPS). --cpu: only the CPU seconds of the
stepping loops, order 2 at dt = 1/96 s and the others at 1/24 s (--repeats N: the least of N runs each, the orders
taking turns). --long STEPS: only the pendulum preset's energy over STEPS steps of dt = 0.01 s at order 4 (band,
and the difference of the first and last tenth's means).
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.integrate import solve_ivp

from addon.solver import native
from addon.solver.integrator import make_integrator
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Mechanism, MechanismError
from addon.solver.native import galerkin_binding
from addon.solver.presets import list_presets, preset_path
from addon.solver.trajectory import ConvergenceError
from addon.solver.tree import galerkin, galerkin_newton, linkwise
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.kinematics import forward
from addon.solver.tree.midpoint import initial_state
from addon.solver.tree.rk4 import acceleration
from tools.generate import ball_chain, pendulum_chain

from .run import chain_mujoco, write_sections

T_END = 10.0
STEPS_PER_SECOND = (24, 48, 96, 192, 384)
MUJOCO_STEPS_PER_SECOND = (24, 48, 96, 192, 384, 768, 1536)
CHAINS = ("chain_10", "chain_100", "chain_1000")
NEWTON_LINKS = (25, 100, 250, 1000)
OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADING = "## Accuracy orders at t = 10 s:"  # + heading(name): one generated section each
NEWTON_HEADING = "## Time per Newton iteration of the C kernels"


class Reference(NamedTuple):
    """How a mechanism's reference positions at T_END are made: kind "dop853", "mujoco" (RK4 at dt = 1/rate) or
    "richardson" (our order `order` at dt = 1/rate and 1/(2 rate), extrapolated)."""

    kind: str
    rate: int = 0
    order: int = 0


def heading(name: str, mech: Mechanism) -> str:
    """The section title of a mechanism (no title is the prefix of another: write_sections matches prefixes)."""
    return f"{HEADING} {name} ({len(mech.bodies)} bodies)"


def generated_chain(name: str) -> bool:
    """chain_N with no preset of that name: tools.generate.pendulum_chain(N), the chain of benchmarks/run.py."""
    if not (name.startswith("chain_") and name[6:].isdigit()):
        return False
    try:
        preset_path(name)
    except FileNotFoundError:
        return True
    return False


def mechanism(name: str) -> Mechanism:
    return pendulum_chain(int(name[6:])) if generated_chain(name) else load_mechanism(preset_path(name))


def closed_chain_presets() -> list[str]:
    """The mechanism presets with a closed loop: more [[joint]] than [[body]] tables (each body is reached from the
    world by one tree joint, every further joint closes a loop); read as plain TOML, without building them."""
    def closed(name: str) -> bool:
        tables = tomllib.loads(preset_path(name).read_text())
        return len(tables.get("joint", [])) > len(tables.get("body", []))

    return [name for name in list_presets() if closed(name)]


def default_reference(name: str) -> Reference:
    """DOP853 for chains up to 10 links; MuJoCo RK4 at 1/6144 s up to 100 links; on longer chains our order 2 at
    1/192 and 1/384 s, Richardson-extrapolated (MuJoCo's step costs 0.2-0.3 s on 1000 links; order 8 at 1/48 s
    spends minutes of Newton iterations late in the run there; order 2 at 1/768 s failed its first step on
    chain_1000, 30 iterations at a momentum residual of 1.6e-4, the round-off floor); on the presets our order 8 at
    1/96 and 1/192 s (a few seconds)."""
    if generated_chain(name) and int(name[6:]) <= 10:
        return Reference("dop853")
    if generated_chain(name) and int(name[6:]) <= 100:
        return Reference("mujoco", 6144)
    if generated_chain(name):
        return Reference("richardson", 192, 2)
    return Reference("richardson", 96, 8)


# -- MuJoCo ----------------------------------------------------------------------------------------------

def mujoco_untranslated(mech: Mechanism) -> str:
    """Why benchmarks/maximal.py's MuJoCo model would not be this mechanism ('' when it would)."""
    for joint in mech.joints:
        if joint.prescribed is not None or joint.motor is not None or joint.damping:
            return f"joint {joint.name!r} is prescribed, driven or damped (not translated to MuJoCo)"
        if joint.stiffness and any(joint.rest or ()):
            return f"joint {joint.name!r}'s spring rest is not its reference (not translated to MuJoCo)"
    if mech.springs or mech.forces:
        return "springs or forces between bodies (not translated to MuJoCo)"
    from .maximal import mujoco_model

    try:
        mujoco_model(mech, "RK4")
    except ValueError as refusal:  # e.g. point masses: MuJoCo wants positive inertia eigenvalues
        return f"MuJoCo refuses the model ({' '.join(str(refusal).split())})"
    return ""


def mujoco_setup(mech: Mechanism, generated: bool, per_second: int):
    """MuJoCo RK4 model and data of the mechanism at its start, and the body ids of mech.bodies in order."""
    import mujoco

    from .maximal import mujoco_model, mujoco_start

    if generated:
        model = chain_mujoco(mech, "RK4")
        model.opt.timestep = 1.0 / per_second
        data = mujoco.MjData(model)
        data.qpos[0] = mech.joints[0].q0[0]
        return model, data, np.arange(1, len(mech.bodies) + 1)
    model = mujoco_model(mech, "RK4", 1.0 / per_second)[0]
    ids = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body.name) for body in mech.bodies])
    return model, mujoco_start(model, mech), ids


def mujoco_run(mech: Mechanism, per_second: int, generated: bool, budget: float = np.inf):
    """MuJoCo RK4 to T_END at dt = 1 / per_second: (wall s, CPU s, body origins (nbody, 3), '') or (wall s, CPU s,
    None, why it stopped: diverged, MuJoCo's bad-acceleration warning, or over `budget` seconds of CPU time)."""
    import mujoco

    model, data, ids = mujoco_setup(mech, generated, per_second)
    chunk = max(1, per_second // 24)
    steps, done = round(T_END * per_second), 0
    bad = mujoco.mjtWarning.mjWARN_BADQACC
    start, cpu = time.perf_counter(), time.process_time()
    while done < steps:
        n = min(chunk, steps - done)
        mujoco.mj_step(model, data, nstep=n)
        wall, used = time.perf_counter() - start, time.process_time() - cpu
        if data.warning[bad].number:
            return wall, used, None, f"diverged by t = {(done + n) / per_second:.3g} s"
        done += n
        if used > budget and done < steps:
            return wall, used, None, f"stopped at t = {done / per_second:.3g} s after {used:.0f} s of CPU (budget)"
    return time.perf_counter() - start, time.process_time() - cpu, data.xpos[ids].copy(), ""


# -- our runs and references -----------------------------------------------------------------------------

class OverBudget(Exception):
    """A run stopped because it took more CPU time than allowed (`time`: the simulated time it reached)."""

    def __init__(self, time_reached: float, cpu: float):
        super().__init__(f"stopped at t = {time_reached:.3g} s after {cpu:.0f} s of CPU (budget)")
        self.time = time_reached


def run(mech: Mechanism, order: int, per_second: int,
        budget: float = np.inf) -> tuple[float, float, np.ndarray, float]:
    """Wall and CPU time (s), body positions at T_END and energy band of a run at dt = 1 / per_second; OverBudget
    when the run takes more than `budget` seconds of CPU time (time.process_time: the same rows stop whatever else
    runs on the machine)."""
    integrator = make_integrator(mech.replace(order=order), "tree", 1.0 / per_second)
    steps = round(T_END * per_second)
    start, cpu = time.perf_counter(), time.process_time()
    for k in range(steps):
        integrator.step()
        if k + 1 < steps and time.process_time() - cpu > budget:
            raise OverBudget((k + 1) / per_second, time.process_time() - cpu)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    trajectory = integrator.trajectory()
    return wall, used, trajectory.poses[-1][:, :3], float(np.ptp(trajectory.energy))


def dop853_positions(mech: Mechanism) -> np.ndarray:
    """Body positions (nbody, 3) at T_END from DOP853 on the tree model's continuous dynamics."""
    model = compile_tree(mech)
    state, _, _, qd = initial_state(model)
    n = model.nq

    def rhs(t, y):
        return np.concatenate([y[n:], acceleration(model, y[:n], y[n:], t, state.charts)])

    sol = solve_ivp(rhs, (0.0, T_END), np.concatenate([state.q, qd]), method="DOP853", rtol=1e-12, atol=1e-12)
    return forward(model, sol.y[:n, -1], state.charts).body_origin


def reference(mech: Mechanism, ref: Reference) -> tuple[np.ndarray, str]:
    """Reference positions at T_END and the sentence saying what they are."""
    if ref.kind == "dop853":
        return dop853_positions(mech), "DOP853 (rtol = atol = 1e-12) on the same tree model"
    if ref.kind == "mujoco":
        wall, _, pos, why = mujoco_run(mech, ref.rate, True)
        if pos is None:
            raise RuntimeError(f"the reference, MuJoCo RK4 at dt = 1/{ref.rate} s, {why}")
        return pos, f"MuJoCo RK4 at dt = 1/{ref.rate} s ({wall:.1f} s)"
    p, note = ref.order, ""
    try:
        wall_c, _, coarse, _ = run(mech, p, ref.rate)
    except MechanismError as refusal:  # an order the compiler refuses here: order 2 at 4 times the steps
        note = f" (order {p} refused: {str(refusal).split(': ', 1)[-1]})"
        p, ref = 2, Reference("richardson", 4 * ref.rate, 2)
        wall_c, _, coarse, _ = run(mech, p, ref.rate)
    wall_f, _, fine, _ = run(mech, p, 2 * ref.rate)
    gap = float(np.max(np.linalg.norm(fine - coarse, axis=1)))
    return ((2**p * fine - coarse) / (2**p - 1),
            f"our order {p} at dt = 1/{ref.rate} and 1/{2 * ref.rate} s extrapolated (Richardson, error "
            f"O(dt^{p + 2}) for this symmetric method; the two runs differ by {gap:.1e} m; {wall_c + wall_f:.1f} s)"
            + note)


def accuracy_section(name: str, ref: Reference, orders: list[int], high_rates: list[int],
                     budget: float) -> list[str]:
    """The Markdown section of one mechanism (heading first); rows are printed as they are measured."""
    mech = mechanism(name)
    generated = generated_chain(name)
    try:
        ref_pos, ref_text = reference(mech, ref)
    except (ConvergenceError, RuntimeError) as failure:
        return [heading(name, mech), "", f"No reference: {failure}"]
    lines = [heading(name, mech), "", f"Reference: {ref_text}.", "",
             "| order | dt (s) | steps | wall (s) | CPU (s) | position error (m) | energy band (J) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)

    def row(text: str) -> None:
        lines.append(text)
        print(text, flush=True)

    results: dict[tuple[int, int], tuple[float, float, float]] = {}
    for order in orders:
        for per_second in STEPS_PER_SECOND if order == 2 else high_rates:
            steps = round(T_END * per_second)
            try:
                wall, cpu, pos, band = run(mech, order, per_second, budget)
            except ConvergenceError as failure:
                row(f"| {order} | 1/{per_second} | {steps} | - | - | failed at t = {failure.time:.3g} s | - |")
                continue
            except OverBudget as stop:
                row(f"| {order} | 1/{per_second} | {steps} | - | - | {stop} | - |")
                continue
            except MechanismError as refusal:
                row(f"| {order} | all | - | - | - | refused: {str(refusal).split(': ', 1)[-1]} | - |")
                break
            error = float(np.max(np.linalg.norm(pos - ref_pos, axis=1)))
            results[order, per_second] = (wall, cpu, error)
            row(f"| {order} | 1/{per_second} | {steps} | {wall:.3f} | {cpu:.3f} | {error:.2e} | {band:.2e} |")
            if order != 2:
                break  # the first step an order above 2 runs at: smaller ones only cost more
    mujoco_results: dict[int, tuple[float, float, float]] = {}
    untranslated = "" if generated else mujoco_untranslated(mech)
    for per_second in () if untranslated else MUJOCO_STEPS_PER_SECOND:
        wall, cpu, pos, why = mujoco_run(mech, per_second, generated, budget)
        steps = round(T_END * per_second)
        if pos is None:
            row(f"| MuJoCo RK4 | 1/{per_second} | {steps} | {wall:.3f} | {cpu:.3f} | {why} | - |")
            if "budget" in why:
                break
            continue
        error = float(np.max(np.linalg.norm(pos - ref_pos, axis=1)))
        mujoco_results[per_second] = (wall, cpu, error)
        row(f"| MuJoCo RK4 | 1/{per_second} | {steps} | {wall:.3f} | {cpu:.3f} | {error:.2e} | - |")
    lines.append("")
    if untranslated:
        lines.append(f"No MuJoCo rows: {untranslated}.")
    if (2, 96) in results:
        target_wall, target_cpu, target = results[2, 96]
        lines.append(f"Order 2 at dt = 1/96 s: error {target:.2e} m in {target_wall:.3f} s ({target_cpu:.3f} s CPU).")
        for order in (4, 6):
            if (order, 24) in results:
                wall, cpu, error = results[order, 24]
                verdict = "meets" if error <= target else "does not meet"
                lines.append(f"Order {order} at dt = 1/24 s: error {error:.2e} m ({verdict} it) in {wall:.3f} s "
                             f"({cpu:.3f} s CPU: {'less' if cpu < target_cpu else 'more'} than order 2's).")
            elif order in orders:
                lines.append(f"Order {order} at dt = 1/24 s: no run to t = 10 s (its row above says why).")
        meeting = [per_second for per_second, (_, _, error) in mujoco_results.items() if error <= target]
        if meeting:
            wall, cpu, error = mujoco_results[min(meeting)]
            lines.append(f"MuJoCo RK4 at its best step meeting it, dt = 1/{min(meeting)} s: error {error:.2e} m in "
                         f"{wall:.3f} s ({cpu:.3f} s CPU).")
        elif not untranslated:
            lines.append("MuJoCo RK4 meets it at none of the steps run.")
    print("\n".join(lines[-5:]) + "\n", flush=True)
    return lines


# -- time per Newton iteration ---------------------------------------------------------------------------

def _best_cpu_time(call, repeats: int) -> float:
    """Least CPU seconds (time.process_time: the shared machine's other processes barely count) of `call`."""
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def iteration_time(model, s: int, dt: float, extra: int = 3, repeats: int = 5) -> float:
    """CPU seconds of one Newton iteration of the C step on `model` (the first step from its start) at s: the time
    of a step capped at 1 + extra iterations less that of a step capped at 1, over the iterations between, each the
    best of `repeats` (tol = 0: every step runs to its cap but the link-wise one, which stops at round-off; s > 1
    factors at every iteration, no simplified update)."""
    if s == 1:
        state, _, _, _ = initial_state(model)
        stepper = native.NativeStepper(model, linkwise.applies(model))  # as midpoint.py: ball chains link-wise
        zeros, forces = np.zeros(model.nq), np.broadcast_to(model.force_vector, model.force_vector.shape)

        def capped(cap: int) -> int:
            out = stepper.step(state.q, state.p, state.lam, state.charts, dt, 0.0, cap, zeros,
                               state.q + dt * state.velocity_guess, forces, state.rows)
            return out.iterations
    else:
        state, _ = galerkin.start(model)
        ru = galerkin.rule(s)
        stepper = galerkin_binding.GalerkinStepper(model, ru)
        X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess)
        torque = np.zeros((len(ru.c), model.nq))
        forces = np.broadcast_to(model.force_vector, (len(ru.c),) + model.force_vector.shape)

        def capped(cap: int) -> int:
            out = stepper.step(state.rows, torque, forces, state.q, state.p, dt, 0.0, galerkin.STALL, 0.0, cap, X,
                               np.tile(state.lam, s), state.charts)
            return out.iterations
    top = capped(1 + extra)  # the link-wise step stops earlier, once its correction is at round-off
    if capped(1) != 1 or top < 2:
        raise RuntimeError(f"iteration_time: the s = {s} step made {top} iterations capped at {1 + extra}")
    return (_best_cpu_time(lambda: capped(1 + extra), repeats) - _best_cpu_time(lambda: capped(1), repeats)) / (top - 1)


def newton_section(links: tuple[int, ...] = NEWTON_LINKS, dt: float = 1.0 / 24) -> list[str]:
    """Microseconds per Newton iteration and per link, revolute and ball chains, s = 1..4."""
    lines = [NEWTON_HEADING, "",
             ("One Newton iteration (residual, factorisation, solve) of the first step from the start, "
              f"dt = 1/{1 / dt:.0f} s, in C: tree_step.c for s = 1 (order 2: the midpoint rule, on ball chains its "
              "link-wise form as midpoint.py runs it), galerkin_step.c for s = 2..4 (every iteration factors: the "
              "simplified updates off). CPU time (process_time) of a step capped at 4 iterations less one capped at "
              "1, over the iterations between (3; 2 for the link-wise step, which stops at round-off), each the best "
              "of 5. Cells: microseconds per iteration / per link (`benchmarks.galerkin_orders.iteration_time`)."),
             "",
             "| joints | s | " + " | ".join(f"{n} links" for n in links) + " |",
             "|---|---:|" + "---:|" * len(links)]
    print("\n".join(lines), flush=True)
    for kind, build in (("revolute", pendulum_chain), ("ball", ball_chain)):
        models = [compile_tree(build(n)) for n in links]
        for s in (1, 2, 3, 4):
            cells = []
            for n, model in zip(links, models):
                seconds = iteration_time(model, s, dt)
                cells.append(f"{1e6 * seconds:.0f} / {1e6 * seconds / n:.2f}")
            lines.append(f"| {kind} | {s} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    return lines


# -- the other modes -------------------------------------------------------------------------------------

def ops_table() -> None:
    """Multiply-adds per link of one Newton direction, s = 2..4, revolute and ball chains of 25 to 1000 links."""
    print("| joints | s | 25 | 100 | 250 | 1000 |\n|---|---:|---:|---:|---:|---:|")
    for kind in ("revolute", "ball"):
        for s in (2, 3, 4):
            per_link = []
            for n in NEWTON_LINKS:
                model = compile_tree(pendulum_chain(n) if kind == "revolute" else ball_chain(n))
                state, _ = galerkin.start(model)
                ru = galerkin.rule(s)
                X = state.q + 0.02 * np.outer(ru.tau[1:], state.velocity_guess)
                res = galerkin.residual(model, state, X, 0.02, ru, state.lam)
                galerkin_newton.OPS.clear()
                galerkin.newton_direction(model, state, X, state.lam, res, 0.02, ru)
                per_link.append(galerkin_newton.OPS["flops"] / n)
            print(f"| {kind} | {s} | " + " | ".join(f"{v:.0f}" for v in per_link) + " |", flush=True)


def cpu_table(names: list[str], orders: list[int], repeats: int = 1) -> None:
    """CPU seconds (time.process_time: less sensitive than wall time to other processes on a shared machine) of
    run()'s stepping loop, order 2 at dt = 1/96 s and the higher orders at 1/24 s, without the reference; with
    repeats > 1 the least of that many runs, the orders taking turns (so that a busy spell of the machine does
    not fall on one order's runs only), and the ratio of order 2's time to each other order's."""
    for name in names:
        mech = mechanism(name)
        best: dict[int, float] = {}
        failed: dict[int, str] = {}
        for _ in range(repeats):
            for order in orders:
                if order in failed:
                    continue
                per_second = 96 if order == 2 else 24
                integrator = make_integrator(mech.replace(order=order), "tree", 1.0 / per_second)
                start = time.process_time()
                try:
                    for _ in range(round(T_END * per_second)):
                        integrator.step()
                except ConvergenceError as failure:
                    failed[order] = f"failed at t = {failure.time:.3g} s"
                    continue
                best[order] = min(best.get(order, np.inf), time.process_time() - start)
        cells = []
        for order in orders:
            per_second = 96 if order == 2 else 24
            if order in failed:
                cells.append(f"order {order} at 1/{per_second} s: {failed[order]}")
                continue
            ratio = f" ({best[2] / best[order]:.2f}x order 2's speed)" if order != 2 and 2 in best else ""
            cells.append(f"order {order} at 1/{per_second} s: {best[order]:.3f} s{ratio}")
        print(f"{name}: " + "; ".join(cells), flush=True)


def long_run(steps: int, tol: float) -> None:
    integrator = make_integrator(load_mechanism(preset_path("pendulum")).replace(order=4), "tree", 0.01, tol)
    for _ in range(steps):
        integrator.step()
    energy = np.asarray(integrator.trajectory().energy)[1:]
    tenth = len(energy) // 10
    print(f"pendulum, order 4, dt = 0.01 s, tol {tol:g}, {steps} steps: energy band {np.ptp(energy):.3e} J, "
          f"|mean(last tenth) - mean(first tenth)| {abs(energy[-tenth:].mean() - energy[:tenth].mean()):.3e} J")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="all of issue 14 item 6 (chains, every closed-chain "
                        "preset, --newton, the ball chain against MuJoCo), written into --out")
    parser.add_argument("--presets", nargs="+", default=None, help="default: chain_10 chain_100 chain_1000 and every "
                        "closed-chain preset")
    parser.add_argument("--orders", nargs="+", type=int, default=[2, 4, 6, 8])
    parser.add_argument("--high-rates", nargs="+", type=int, default=[24, 48, 96], metavar="N",
                        help="steps per second tried for orders above 2, each order up to the first that runs "
                             "(order 2 runs all of 24 .. 384)")
    parser.add_argument("--budget", type=float, default=60.0, metavar="S",
                        help="a run (ours or MuJoCo's) stops once it has used more than S seconds of CPU time")
    parser.add_argument("--newton", action="store_true", help="time per Newton iteration only")
    parser.add_argument("--write", action="store_true", help="replace the measured sections in --out")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--dop853", action="store_true", help="the reference is DOP853 for every mechanism")
    parser.add_argument("--mujoco-reference", type=int, default=0, metavar="N",
                        help="chain_N only: the reference is MuJoCo RK4 at dt = 1 / N")
    parser.add_argument("--richardson", type=int, default=0, metavar="N", help="the reference is our order "
                        "--richardson-order at dt = 1/N and 1/2N, Richardson-extrapolated")
    parser.add_argument("--richardson-order", type=int, default=8)
    parser.add_argument("--long", type=int, default=0, metavar="STEPS")
    parser.add_argument("--tol", type=float, default=1e-10, help="Newton tolerance of --long")
    parser.add_argument("--ops", action="store_true", help="multiply-adds per link of a Newton direction only")
    parser.add_argument("--repeats", type=int, default=1, metavar="N", help="--cpu: the least CPU time of N runs "
                        "of each order, the orders taking turns")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds of the runs only: order 2 at dt = 1/96 s, "
                        "the other orders at 1/24 s, no reference")
    args = parser.parse_args(argv)
    names = args.presets or [*CHAINS, *closed_chain_presets()]
    if args.ops:
        ops_table()
        return
    if args.cpu:
        cpu_table(names, args.orders, args.repeats)
        return
    if args.long:
        long_run(args.long, args.tol)
        return

    def ref_of(name: str) -> Reference:
        if args.dop853:
            return Reference("dop853")
        if args.mujoco_reference and generated_chain(name):
            return Reference("mujoco", args.mujoco_reference)
        if args.richardson:
            return Reference("richardson", args.richardson, args.richardson_order)
        return default_reference(name)

    parts = [] if args.newton else [
        lambda name=name: accuracy_section(name, ref_of(name), args.orders, args.high_rates, args.budget)
        for name in names]
    if args.newton or args.all:
        parts.append(newton_section)
    if args.all:
        from .galerkin_balls import mujoco_section
        parts.append(mujoco_section)
    command = ("python -m benchmarks.galerkin_orders " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    for part in parts:  # each section written as soon as it is measured, with the load over its own run
        if args.write or args.all:
            write_sections(args.out, command, lambda part=part: [part()], "Benchmarks")
        else:
            part()


if __name__ == "__main__":
    main()

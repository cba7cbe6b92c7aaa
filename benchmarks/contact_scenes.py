"""Contact scenes at artist scale: ms per step and deepest penetration of the maximal method beside
MuJoCo (defaults, and tuned until its penetration is under 1 mm) and PyBullet, and the maximal
method's cost per step against the number of bodies and contacts.

Usage: python -m benchmarks.contact_scenes [--quick] [--out docs/benchmarks_maximal.md]
(replaces its two sections of --out; benchmarks.maximal.run appends them to the full benchmark).
PyBullet is an optional peer: without the `pybullet` module its columns say so.
Scenes: the box drop, n falling dominoes and the 200-box pile (tools/contact_scenes.py), sphere chains
(benchmarks.maximal.sphere_chain). Penetration: the deepest negative signed distance of any contact
over the run (ours: CollisionWorld on every stored pose; MuJoCo: its contact distances; PyBullet: its
contact distances after every step).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from addon.solver.collision import CollisionWorld
from addon.solver.integrator import make_integrator
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Mechanism
from addon.solver.presets import preset_path
from addon.solver.trajectory import SolverError
from benchmarks.maximal import (
    DT,
    OUT,
    TITLE,
    mujoco_model,
    mujoco_start,
    sphere_chain,
    time_symplex,
)
from benchmarks.run import write_sections
from tools.contact_scenes import box_pile, falling_dominoes

TUNED_SUBSTEPS = (1, 2, 5, 10, 20, 50)  # MuJoCo steps per DT tried, stiffest contact settings each
PILE_STEPS = 30  # the pile's timed steps: through the second layer's landing (steps 19-23, 2000-2900 pairs each, the
# numpy step's); 40 did not finish in 40 minutes when the C step took those steps
SCALING_STEPS = 200  # timed steps of the dominoes' scaling rows: the first dominoes topple onto the next (60 steps: 0.6 contacts between dominoes)


def deepest(mech: Mechanism, poses: np.ndarray) -> float:
    """The deepest penetration (m, >= 0) of any collider pair over stored poses (T, B, 7)."""
    world = CollisionWorld(mech)
    depth = 0.0
    for pose in poses:
        found = world.detect(pose[:, :3], pose[:, 3:])
        if len(found):
            depth = max(depth, -float(found.distance.min()))
    return depth


def run_symplex(mech: Mechanism, steps: int) -> dict:
    """Median ms per step of the maximal method (after one step from the start) and the deepest penetration;
    or the failure."""
    result = time_symplex(mech, "maximal", steps)
    if "failed" not in result:
        result["depth"] = deepest(mech, result["traj"].poses)
    return result


def run_mujoco(mech: Mechanism, steps: int, substeps: int = 1, stiff: bool = False) -> dict:
    """MuJoCo on the same scene for steps x DT seconds at timestep DT / substeps: median ms per DT of
    simulated time and deepest contact. `stiff`: solref (2 timesteps, critical damping) and solimp
    (0.99, 0.999, 1 mm) on every geom, the hardest contact MuJoCo's docs allow at that timestep."""
    import mujoco

    dt = DT / substeps
    model, _ = mujoco_model(mech, "Euler", dt)
    if stiff:
        model.geom_solref[:] = [2 * dt, 1.0]
        model.geom_solimp[:, :3] = [0.99, 0.999, 0.001]
    data = mujoco_start(model, mech)
    times, depth = [], 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        for _ in range(substeps):
            mujoco.mj_step(model, data)
            if data.ncon:
                depth = max(depth, -float(np.min(data.contact.dist[:data.ncon])))
        times.append(time.perf_counter() - t0)
    return {"ms": 1e3 * float(np.median(times)), "depth": depth, "substeps": substeps}


def run_mujoco_tuned(mech: Mechanism, steps: int) -> dict:
    """The fewest MuJoCo substeps per DT (TUNED_SUBSTEPS, stiff contacts) that keep penetration under 1 mm."""
    for substeps in TUNED_SUBSTEPS:
        result = run_mujoco(mech, steps, substeps, stiff=True)
        if result["depth"] < 1e-3:
            return result
    return {**result, "failed": f"over 1 mm at {substeps} substeps"}


def _pybullet():
    try:
        import pybullet
    except ImportError:
        return None
    return pybullet


def run_pybullet(mech: Mechanism, steps: int) -> dict:
    """PyBullet (DIRECT, its default solver, timestep DT): the same bodies (mass, centre of mass,
    principal inertia), plane/sphere/box colliders, free bodies and ball joints (point-to-point
    constraints), friction sqrt(mu) on each object so the product is the file's. Median ms per step."""
    p = _pybullet()
    if p is None:
        return {"failed": "not installed"}
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(*mech.gravity, physicsClientId=client)
        p.setTimeStep(DT, physicsClientId=client)
        ids = {}
        for col in mech.colliders:
            if col.shape == "plane":
                shape = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=client)
            elif col.shape == "sphere":
                shape = p.createCollisionShape(p.GEOM_SPHERE, radius=col.size[0], physicsClientId=client)
            elif col.shape == "box":
                shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=list(col.size[:3]), physicsClientId=client)
            else:
                return {"failed": f"collider shape {col.shape!r} not translated"}
            w, x, y, z = col.orientation
            if col.body == WORLD:
                uid = p.createMultiBody(0.0, shape, basePosition=list(col.position), baseOrientation=[x, y, z, w],
                                        physicsClientId=client)
            else:
                body = mech.body(col.body)
                if any(col.position) or col.orientation != (1.0, 0.0, 0.0, 0.0):
                    return {"failed": f"collider {col.name!r} off its body frame: not translated"}
                bw, bx, by, bz = body.orientation
                uid = p.createMultiBody(body.mass, shape, basePosition=list(body.position),
                                        baseOrientation=[bx, by, bz, bw], baseInertialFramePosition=list(body.com),
                                        physicsClientId=client)
                p.changeDynamics(uid, -1, localInertiaDiagonal=list(body.inertia[:3]), physicsClientId=client)
                ids[col.body] = uid
            p.changeDynamics(uid, -1, lateralFriction=float(np.sqrt(col.friction)), physicsClientId=client)
        for joint in mech.joints:
            if joint.type == "free":
                continue
            if joint.type != "ball" or joint.parent == WORLD:
                return {"failed": f"joint {joint.name!r} ({joint.type}) not translated"}
            a, b = mech.body(joint.parent), mech.body(joint.child)
            p.createConstraint(ids[a.name], -1, ids[b.name], -1, p.JOINT_POINT2POINT, [0, 0, 0],
                               _in_frame(a, joint.anchor), _in_frame(b, joint.anchor), physicsClientId=client)
        times, depth = [], 0.0
        for _ in range(steps + 1):
            t0 = time.perf_counter()
            p.stepSimulation(physicsClientId=client)
            times.append(time.perf_counter() - t0)
            points = p.getContactPoints(physicsClientId=client)
            if points:
                depth = max(depth, -min(c[8] for c in points))
        return {"ms": 1e3 * float(np.median(times[1:])), "depth": depth}
    finally:
        p.disconnect(physicsClientId=client)


def _in_frame(body, point) -> list[float]:
    """A world point in the body's frame."""
    from addon.solver.lie import quat_to_matrix

    rot = quat_to_matrix(np.array(body.orientation, float))
    return list(rot.T @ (np.asarray(point, float) - np.asarray(body.position, float)))


def scenes(quick: bool) -> list[tuple[str, Mechanism, int]]:
    """(label, mechanism, timed steps) of the comparison table."""
    out = [("box drop", load_mechanism(preset_path("box_drop")), 150),
           ("5-sphere chain", sphere_chain(5), 100), ("20-sphere chain", sphere_chain(20), 100),
           ("32 dominoes", falling_dominoes(32), 100), ("128 dominoes", falling_dominoes(128), 30 if quick else 100)]
    if not quick:
        out += [("1000 dominoes", falling_dominoes(1000), 30), ("200-box pile", box_pile(200), PILE_STEPS)]
    return out


def _ms(result: dict, fmt: str = "{:.3f}") -> str:
    return "failed" if "failed" in result else fmt.format(result["ms"])


def _depth(result: dict) -> str:
    return "failed" if "failed" in result else f"{1e3 * result['depth']:.2f}"


def comparison_section(quick: bool) -> list[str]:
    lines = ["## Contact scenes beside MuJoCo and PyBullet",
             "",
             f"Each scene from its start for the given steps of dt = {DT} s (the first step untimed); median wall ms per",
             f"{DT} s of simulated time and the deepest penetration (mm) of any contact over the run. MuJoCo defaults:",
             "Euler, its default solref/solimp, timestep dt. MuJoCo tuned: the fewest substeps per dt among",
             f"{', '.join(map(str, TUNED_SUBSTEPS))} with solref (2 substeps, 1) and solimp (0.99, 0.999, 1 mm) on every geom",
             "that keep its penetration under 1 mm (its ms are per dt, all substeps included). PyBullet 3.2.7: DIRECT,",
             "default solver, timestep dt; friction sqrt(mu) per object (Bullet multiplies them). Dominoes: the first",
             "tipped onto the second, 0.3 m apart (presets/dominoes.toml made n long); 200-box pile: presets/box_pile.toml",
             "(8 layers of 25 turned boxes dropped into a bin of static boxes; the lowest layer lands at step 5).",
             "",
             "| scene | steps | maximal ms | maximal depth | MuJoCo ms | MuJoCo depth | MuJoCo tuned ms | tuned substeps "
             "| tuned depth | PyBullet ms | PyBullet depth |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    for label, mech, steps in scenes(quick):
        ours = run_symplex(mech, steps)
        mj = run_mujoco(mech, steps)
        tuned = run_mujoco_tuned(mech, steps)
        bullet = run_pybullet(mech, steps)
        for who, res in (("maximal", ours), ("MuJoCo tuned", tuned), ("PyBullet", bullet)):
            if "failed" in res:
                failures.append(f"- {label}, {who}: {res['failed']}")
        lines.append(f"| {label} | {steps} | {_ms(ours, '{:.3g}')} | {_depth(ours)} | {_ms(mj)} | {_depth(mj)} | "
                     f"{_ms(tuned)} | {tuned['substeps']} | {1e3 * tuned['depth']:.2f} | {_ms(bullet)} | "
                     f"{_depth(bullet)} |")
    return lines + ([""] + failures if failures else [])


def timed_run(mech: Mechanism, steps: int) -> dict:
    """The maximal method's steps 2 to steps + 1 of `mech`: wall and process CPU seconds of each step, Newton
    iterations per step (the last solve of a redone step), the trajectory; or the failure."""
    try:
        integ = make_integrator(mech, "maximal", DT)
        integ.step()
        wall, cpu = [], []
        for _ in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            integ.step()
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    except (SolverError, ValueError) as err:
        return {"failed": f"{type(err).__name__}: {str(err)[:90]}"}
    traj = integ.trajectory()
    return {"wall": np.array(wall), "cpu": np.array(cpu), "iterations": traj.newton_iterations[1:], "traj": traj}


def scaling_section(quick: bool) -> list[str]:
    sizes = (32, 64, 128) if quick else (32, 128, 256, 512, 1000)
    steps = SCALING_STEPS
    lines = ["## Maximal method: cost per step against bodies and contacts",
             "",
             f"n falling dominoes, steps 2 to {steps + 1} from the start (dt = {DT} s; every domino stands on the ground",
             "on 4 corner contacts, the first tipped onto the second, and the first few topple onto the next in that",
             "time: from about step 100 a front of 5-10 leaning and falling dominoes). Contacts: mean contact points per",
             "step (world query at the stored poses, margin 1 mm); between dominoes: those of them joining two dominoes;",
             "ms: median wall and median process CPU time per step (CPU: what the step cost, whatever else the shared",
             "machine ran), the median CPU of the first and of the second half of the steps (standing; the front), and",
             "the mean CPU; us per (body + contact): the median CPU time divided by bodies plus contacts (constant if",
             "the cost is linear); iterations: mean Newton iterations per step; depth: the deepest contact over the run.",
             "",
             "| dominoes | contacts | between dominoes | median wall ms | median CPU ms | CPU ms first half "
             "| CPU ms second half | mean CPU ms | us per (body + contact) | iterations | depth mm |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sizes:
        mech = falling_dominoes(n)
        res = timed_run(mech, steps)
        if "failed" in res:
            lines.append(f"| {n} | - | - | failed | - | - | - | - | - | - | - |")
            continue
        world = CollisionWorld(mech)
        found = [world.detect(p[:, :3], p[:, 3:], 1e-3) for p in res["traj"].poses[1:]]
        contacts = np.mean([len(f) for f in found])
        between = np.mean([np.count_nonzero((f.body_a >= 0) & (f.body_b >= 0)) for f in found])
        depth = max(0.0, max(-float(f.distance.min()) for f in found if len(f)))
        cpu = 1e3 * np.median(res["cpu"])
        half = len(res["cpu"]) // 2
        lines.append(f"| {n} | {contacts:.0f} | {between:.1f} | {1e3 * np.median(res['wall']):.1f} | {cpu:.1f} | "
                     f"{1e3 * np.median(res['cpu'][:half]):.1f} | {1e3 * np.median(res['cpu'][half:]):.1f} | "
                     f"{1e3 * np.mean(res['cpu']):.1f} | {1e3 * cpu / (n + contacts):.1f} | "
                     f"{np.mean(res['iterations']):.2f} | {1e3 * depth:.3f} |")
    return lines


def _write_one(function: str, section: Callable[[], list[str]]) -> None:
    """Measure one section and write it to OUT, with the command that runs `function` of this module."""
    command = f"python -c \"from benchmarks.contact_scenes import {function}; {function}()\""
    write_sections(OUT, command, lambda: [section()], TITLE)


def main_comparison() -> None:
    """Only the comparison section."""
    _write_one("main_comparison", lambda: comparison_section(False))


def main_scaling() -> None:
    """Only the scaling section."""
    _write_one("main_scaling", lambda: scaling_section(False))


def sections(quick: bool) -> list[list[str]]:
    return [comparison_section(quick), scaling_section(quick)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few steps")
    parser.add_argument("--out", type=Path, default=OUT, help="Markdown file whose sections are replaced")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.contact_scenes" + (" --quick" if args.quick else "")
    write_sections(args.out, command, lambda: sections(args.quick), TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

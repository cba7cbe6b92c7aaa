"""The shots demo: optimal-control shots solved, baked into one .blend, plotted and reported.

`run_shots_demo(out_dir, progress)` solves four shots and bakes each into its own scene of
out_dir/shots.blend: a sedan car rig parallel-parking between two parked cars (Solve Shot's own path:
bridge/shot.ShotJob, keyed chassis pose, obstacle collection, vehicle bake, controls keyed on the rig,
path curve), a helicopter landing on a pad beyond a hill (solve.solve_shot, baked onto a chassis object),
and the crane anti-sway and cart-pole swing-up mechanism shots (presets/shots, baked onto the rigid
bodies Add Preset builds). Each gets out_dir/shot_<name>.png (path with keys and obstacles, and the
solved controls over time); out_dir/shots_report.txt has each solver report (iterations, time, key
errors, replay error). A shot that fails is reported and the others still run. Needs bpy and matplotlib.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import bpy
import numpy as np

from addon.bridge import shot as shot_bridge
from addon.bridge.bake import BakeOptions, write_trajectory
from addon.bridge.build import build_rigid_bodies
from addon.bridge.headless import registered
from addon.bridge.read import Target
from addon.bridge.vehicle_rig import RigError, box_mesh, build_car_rig
from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import MechanismError
from addon.solver.presets import shot_preset_path, vehicle_preset_path
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.solve import solve_shot
from addon.solver.shots.spec import Key, Obstacle, Shot, ShotError, ShotResult
from addon.solver.trajectory import SolverError

from .plots import pyplot, save_figure
from .scenes import _boxes_mesh, _chassis_boxes

Progress = Optional[Callable[[str], None]]
PARKED_CARS = {"parked car ahead": 1.0, "parked car behind": -12.0}  # x of each parked car's centre, m
KERB_Y = -2.8  # y of the parking lane's centre line, m
MECHANISM_SHOTS = ("crane_anti_sway", "cart_pole_swing_up")


@dataclass(frozen=True)
class ShotDemo:
    name: str
    status: str
    report: str
    image: Path | None
    seconds: float


def _scene(name: str, frames: int, fps: float) -> bpy.types.Scene:
    scene = bpy.data.scenes.new(name)
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps, scene.render.fps_base = int(round(fps)), 1.0
    return scene


def _plot(path: Path, title: str, paths: dict[str, np.ndarray], axes: tuple[int, int], keys: list[np.ndarray],
          boxes: list[tuple[np.ndarray, np.ndarray]], circles: list[tuple[np.ndarray, float]],
          controls: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path | None:
    """Path plot (paths (N, 3) on the two `axes`, keys as crosses, obstacles as boxes (centre, half size) and
    circles) above the controls over time."""
    plt = pyplot()
    if plt is None:
        return None
    from matplotlib.patches import Circle, Rectangle
    a, b = axes
    fig, (ax_p, ax_u) = plt.subplots(2, 1, figsize=(7, 7), gridspec_kw={"height_ratios": [3, 2]})
    for label, points in paths.items():
        ax_p.plot(points[:, a], points[:, b], label=label)
    for centre, half in boxes:
        ax_p.add_patch(Rectangle((centre[a] - half[a], centre[b] - half[b]), 2 * half[a], 2 * half[b], color="0.6"))
    for centre, radius in circles:
        ax_p.add_patch(Circle((centre[a], centre[b]), radius, color="0.6"))
    for i, key in enumerate(keys):
        ax_p.plot(key[a], key[b], "kx", markersize=10, label="keys" if i == 0 else None)
    ax_p.set_aspect("equal", adjustable="datalim")
    ax_p.set_xlabel(f"{'xyz'[a]} (m)")
    ax_p.set_ylabel(f"{'xyz'[b]} (m)")
    ax_p.set_title(title)
    ax_p.legend(loc="best", fontsize=8)
    for name, (t, values) in controls.items():
        ax_u.plot(t, values / max(np.max(np.abs(values)), 1e-12), label=f"{name} (max {np.max(np.abs(values)):.3g})")
    ax_u.set_xlabel("time (s)")
    ax_u.set_ylabel("control / its largest value")
    ax_u.legend(loc="best", fontsize=8)
    return save_figure(fig, path)


def _controls(result: ShotResult) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {name: (np.asarray(result.control_times[name]), np.asarray(values)) for name, values in result.controls.items()}


def parallel_parking(out_dir: Path) -> tuple[ShotResult, str, Path | None]:
    """A sedan car rig reverses into the gap between two parked cars: Solve Shot on a keyed chassis pose."""
    scene = _scene("shot_parallel_parking", 100, 25)
    rig = build_car_rig(scene, "sedan", "Car", slalom=False)
    chassis = scene.objects[rig.chassis]
    z = chassis.location.z
    chassis.keyframe_insert("location", frame=1)
    chassis.keyframe_insert("rotation_euler", frame=1)
    chassis.location, chassis.rotation_euler = (-5.5, KERB_Y, z), (0.0, 0.0, 0.0)
    chassis.keyframe_insert("location", frame=100)
    chassis.keyframe_insert("rotation_euler", frame=100)
    parked = bpy.data.collections.new("Parked cars")
    scene.collection.children.link(parked)
    size = (4.6, 1.8, 1.4)
    for name, x in PARKED_CARS.items():
        obj = bpy.data.objects.new(name, box_mesh(name, size))
        obj.location = (x, KERB_Y, 0.5 * size[2])
        parked.objects.link(obj)
    job = shot_bridge.ShotJob(scene, rig.chassis, shot_bridge.ShotSettings(obstacles=parked.name, clearance=0.1))
    result = job.run()
    summary = job.finish(scene) if result.status == "solved" else ""
    centres = [(np.array([x, KERB_Y, 0.0]), 0.5 * np.array(size)) for x in PARKED_CARS.values()]
    image = _plot(out_dir / "shot_parallel_parking.png", "parallel parking (sedan car rig): top view",
                  {"centre of mass": result.trajectory.poses[:, 0, :3]} if result.trajectory else {}, (0, 1), [np.array(k.position) for k in job.keys if k.position],
                  centres, [], _controls(result))
    return result, summary, image


def helicopter_landing(out_dir: Path) -> tuple[ShotResult, str, Path | None]:
    """The helicopter preset flies from its hover over a hill and lands at rest on a pad, baked on one object."""
    mech = load_mechanism(vehicle_preset_path("helicopter"))
    hill = Obstacle("hill", "sphere", (15.0, 5.0, 0.0), size=(6.0,), clearance=0.5)
    pad = (30.0, 10.0, 1.5)
    shot = Shot(mech, 0.1, 50, keys=(Key(50, "", position=pad, heading=0.5, name="pad"),
                                     Key(50, "", velocity=(0.0, 0.0, 0.0), name="touchdown at rest")),
                obstacles=(hill,), body_radius=2.0, name="helicopter landing")
    result = solve_shot(shot)
    summary = ""
    if result.status == "solved":
        scene = _scene("shot_helicopter_landing", shot.steps + 1, 1.0 / shot.dt)
        obj = bpy.data.objects.new("Helicopter", _boxes_mesh("helicopter chassis", _chassis_boxes(mech)))
        scene.collection.objects.link(obj)
        trajectory = dataclasses.replace(result.trajectory, bodies=[obj.name])
        keys = write_trajectory(trajectory, [Target(body=obj.name, object=obj.name)],
                                BakeOptions(f"vehicle:{obj.name}", 1, 1.0 / shot.dt))
        summary = f"baked {keys} keys on {obj.name!r}"
    image = _plot(out_dir / "shot_helicopter_landing.png", "helicopter landing over a hill: side view (x, z)",
                  {"centre of mass": result.trajectory.poses[:, 0, :3]} if result.trajectory else {}, (0, 2),
                  [np.array(pad)], [], [(np.array(hill.position), hill.size[0])], _controls(result))
    return result, summary, image


def mechanism_shot(name: str, out_dir: Path) -> tuple[ShotResult, str, Path | None]:
    """A presets/shots mechanism shot solved and baked onto the rigid bodies Add Preset builds."""
    shot = load_shot(shot_preset_path(name))
    result = solve_shot(shot)
    summary = ""
    paths = {}
    if result.status == "solved":
        scene = _scene(f"shot_{name}", shot.steps + 1, 1.0 / shot.dt)
        built = build_rigid_bodies(scene, shot.mechanism)
        targets = [Target(body=body, object=obj) for body, obj in built.objects.items()]
        keys = write_trajectory(result.trajectory, targets, BakeOptions(built.setup, 1, 1.0 / shot.dt))
        summary = f"baked {keys} keys on the rigid bodies of {shot.mechanism.name!r}"
        poses = result.trajectory.poses
        for i, body in enumerate(result.trajectory.bodies):
            com = np.asarray(shot.mechanism.body(body).com)
            paths[f"{body} centre of mass"] = poses[:, i, :3] + quat_to_matrix(poses[:, i, 3:]) @ com
    targets = [np.array(k.position) for k in shot.keys if k.body is not None]
    image = _plot(out_dir / f"shot_{name}.png", f"{shot.name}: side view (x, z)", paths, (0, 2), targets, [], [],
                  _controls(result))
    return result, summary, image


def run_shots_demo(out_dir: str | Path, progress: Progress = None) -> list[ShotDemo]:
    """Write shots.blend, shot_<name>.png and shots_report.txt to `out_dir`; progress(line) after each shot."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[tuple[str, Callable]] = [("parallel_parking", parallel_parking), ("helicopter_landing", helicopter_landing)]
    runs += [(name, lambda out, name=name: mechanism_shot(name, out)) for name in MECHANISM_SHOTS]
    demos = []
    with registered():
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        first = bpy.context.scene
        for name, run in runs:
            started = time.perf_counter()
            try:
                result, summary, image = run(out_dir)
                demo = ShotDemo(name, result.status, result.report + ("\n  " + summary if summary else ""), image,
                                time.perf_counter() - started)
            except (ShotError, MechanismError, SolverError, RigError) as err:
                demo = ShotDemo(name, "failed", f"{name}: FAILED: {err}", None, time.perf_counter() - started)
            demos.append(demo)
            if progress is not None:
                progress(f"{name}: {demo.status} in {demo.seconds:.1f} s")
        if len(bpy.data.scenes) > 1:
            bpy.data.scenes.remove(first)
        bpy.ops.wm.save_as_mainfile(filepath=str(out_dir / "shots.blend"), check_existing=False)
    lines = []
    for demo in demos:
        lines += [f"== {demo.name}: {demo.status} ({demo.seconds:.1f} s wall, solve and bake)", demo.report, ""]
    (out_dir / "shots_report.txt").write_text("\n".join(lines), encoding="utf-8")
    return demos

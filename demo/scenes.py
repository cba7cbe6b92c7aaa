"""The demo: preset mechanisms built as rigid bodies, baked, saved, rendered and plotted.

`run_demo(out_dir)` builds one scene per demo preset (pendulum chain, four-bar, scissor lift,
slider-crank; presets not shipped yet are skipped and listed) in a fresh file, bakes 250 frames of
each, saves out_dir/demo.blend, renders a few frames of each with Workbench to
out_dir/<preset>_f<frame>.png (camera fitted to the whole motion, see stage.py) and one
overview with faded poses across the frame range to out_dir/<preset>_motion.png, plots energy
change and constraint residual over time to out_dir/<preset>_diagnostics.png, and writes
out_dir/demo_report.txt with the time step and the bake times (and any bake that failed, with the
solver's message; the other mechanisms are still written).
Three vehicle scenes follow (VEHICLE_DEMOS): a car rig (bridge/vehicle_rig.build_car_rig, the rig
Add Car Rig makes) driving its keyed slalom, baked with vehicle_bake.bake_vehicle; and the helicopter
and speedboat presets, whose chassis poses are baked onto one simple object each (fuselage, tail boom
and rotor disc; a box hull) with bake.write_trajectory. They are rendered and plotted the same way.
Then contact.run_maximal_demo adds the contact scenes (dominoes, wrecking ball; maximal method), each
in its own out_dir/<preset>.blend.
driving.run_driving_demo (live take, paths) and handover.run_handover_demo (Start From Animation, Bake
Range and Blend Frames) follow, in driving.blend and handover.blend.
Needs bpy (and matplotlib for the plots).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from addon.bridge.bake import BakeOptions, write_trajectory
from addon.bridge.build import build_rigid_bodies
from addon.bridge.headless import registered
from addon.bridge.job import BakeJob, BakeReport
from addon.bridge.read import Target
from addon.bridge.vehicle_bake import VehicleBakeReport, bake_vehicle, object_trajectory, simulate_rig
from addon.bridge.vehicle_rig import RigError, build_car_rig, read_rig
from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Mechanism, MechanismError
from addon.solver.presets import list_presets, list_vehicle_presets, preset_path, vehicle_preset_path
from addon.solver.trajectory import SolverError, Trajectory

from .plots import pyplot, save_figure
from .stage import Stage, stage

DEMO_PRESETS = ("chain_5", "four_bar", "scissor_lift", "slider_crank")
FRAMES = 250
FPS = 25
# Solver steps per frame. The scissor lift swings through its fully extended, singular configuration
# (all links vertical) every 1.45 s; with 2 substeps (dt = 0.02 s) the scene-read lift's Newton solve
# stalls next to it (frame 129.5), with 3 or 4 it converges at every step. 4 leaves a margin.
SUBSTEPS = 4
RENDER_FRAMES = (1, 50, 100, 175, 250)
GHOSTS = 12  # faded poses in the motion overview image
# Vehicle scenes: scene name -> vehicle preset. "car_slalom" is a sedan car rig with its keyed slalom.
VEHICLE_DEMOS = {"car_slalom": "sedan", "helicopter": "helicopter", "speedboat": "speedboat"}
# Residual plotted for each kind of run (trajectory.constraint_residual), as the y label.
RESIDUAL_LABELS = {"car": "rear-axle side slip (m/s)", "rigid": "max |R^T R - I|", "mechanism": "max |h| (m)"}


@dataclass(frozen=True)
class ChassisBakeReport:
    """A vehicle preset baked onto one chassis object."""

    chassis: str
    steps: int
    keys: int
    seconds: float
    max_drift: float  # largest |R^T R - I| of the attitude over the run
    distance: float  # m between the first and last centre of mass

    def summary(self) -> str:
        return (f"Baked {self.chassis!r}: {self.steps} steps, {self.keys} keys in {self.seconds:.2f} s; "
                f"{self.distance:.1f} m from start to end, attitude drift |R^T R - I| {self.max_drift:.1e}")


@dataclass(frozen=True)
class DemoResult:
    preset: str
    report: BakeReport | VehicleBakeReport | ChassisBakeReport
    images: tuple[Path, ...]
    motion: Path
    plot: Path | None


def _plot(preset: str, trajectory: Trajectory, path: Path, residual_label: str = RESIDUAL_LABELS["mechanism"]
          ) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    fig, (ax_e, ax_r) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax_e.plot(trajectory.t, trajectory.energy - trajectory.energy[0])
    ax_e.set_ylabel("E - E0 (J)")
    ax_e.set_title(f"{preset}: energy change and constraint residual")
    residual = np.maximum(np.asarray(trajectory.constraint_residual), 1e-18)
    ax_r.semilogy(trajectory.t, residual)
    ax_r.set_ylabel(residual_label)
    ax_r.set_xlabel("time (s)")
    return save_figure(fig, path)


def demo_scene(name: str) -> bpy.types.Scene:
    scene = bpy.data.scenes.new(name)
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    return scene


def _render(scene: bpy.types.Scene, staged: Stage, trajectory: Trajectory, objects: dict[str, bpy.types.Object],
            name: str, out_dir: Path, frames: tuple[int, ...] = RENDER_FRAMES) -> tuple[tuple[Path, ...], Path]:
    """Render `frames` to out_dir/<name>_f<frame>.png and the faded-poses overview to <name>_motion.png."""
    images = []
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
        for frame in frames:
            staged.caption(frame)
            scene.frame_set(frame)
            path = out_dir / f"{name}_f{frame:04d}.png"
            scene.render.filepath = str(path)
            bpy.ops.render.render(write_still=True)
            images.append(path)
        copies = staged.ghosts(trajectory, objects, GHOSTS)
        staged.caption(scene.frame_end, f"frames {scene.frame_start}-{scene.frame_end}, {GHOSTS} poses faded")
        scene.frame_set(scene.frame_end)
        motion = out_dir / f"{name}_motion.png"
        scene.render.filepath = str(motion)
        bpy.ops.render.render(write_still=True)
        for copy in copies:
            bpy.data.objects.remove(copy)
    return tuple(images), motion


def bake_preset(scene: bpy.types.Scene, preset: str, substeps: int):
    """Build `preset` as rigid bodies in `scene`, bake it to the end and stage it for rendering.

    Returns (job, report, objects by body name, staged); raises SolverError if the bake fails."""
    mech = load_mechanism(preset_path(preset))
    built = build_rigid_bodies(scene, mech)
    scene.symplex.setups[built.setup].substeps = substeps
    job = BakeJob(scene, built.setup)
    while not job.advance(budget_seconds=3600.0):
        pass
    report = job.finish(scene)
    objects = {name: bpy.data.objects[name] for name in built.objects.values()}  # the scene's body names
    staged = stage(scene, job.trajectory(), objects, job.read.mechanism, mech.name)
    return job, report, objects, staged


def run_one(preset: str, out_dir: Path) -> DemoResult:
    """Build, bake, render and plot one preset in its own scene. Raises SolverError if the bake fails."""
    scene = demo_scene(preset)
    job, report, objects, staged = bake_preset(scene, preset, SUBSTEPS)
    images, motion = _render(scene, staged, job.trajectory(), objects, preset, out_dir)
    plot = _plot(preset, job.trajectory(), out_dir / f"{preset}_diagnostics.png")
    return DemoResult(preset, report, images, motion, plot)


def run_car(name: str, out_dir: Path) -> DemoResult:
    """A sedan car rig driving its keyed slalom: built, baked with bake_vehicle, rendered and plotted."""
    scene = demo_scene(name)
    rig = build_car_rig(scene, VEHICLE_DEMOS[name], "Car", (0.0, 0.0, 0.0), slalom=True)
    report = bake_vehicle(scene, rig, VEHICLE_DEMOS[name], SUBSTEPS)
    # The same run restated as object poses, for framing and plotting (the bake wrote exactly these).
    reading = read_rig(scene, rig, VEHICLE_DEMOS[name], SUBSTEPS)
    solved = simulate_rig(reading, scene.gravity)
    trajectory = object_trajectory(reading, solved)
    objects = {body: bpy.data.objects[body] for body in trajectory.bodies}
    mech = Mechanism(name=f"car rig {rig.chassis}", bodies=(), joints=())
    staged = stage(scene, trajectory, objects, mech, f"car rig ({VEHICLE_DEMOS[name]}), keyed slalom")
    images, motion = _render(scene, staged, trajectory, objects, name, out_dir)
    plot = _plot(name, solved, out_dir / f"{name}_diagnostics.png", RESIDUAL_LABELS["car"])
    return DemoResult(name, report, images, motion, plot)


def _boxes_mesh(name: str, boxes: list[tuple[tuple[float, float, float], tuple[float, float, float]]]) -> bpy.types.Mesh:
    """One mesh of axis-aligned boxes, each given as (centre, size), in the body frame."""
    verts, faces = [], []
    quads = ((0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3))
    for centre, size in boxes:
        base = len(verts)
        verts += [tuple(c + (s / 2 if (i >> k) & 1 else -s / 2) for k, (c, s) in enumerate(zip(centre, size)))
                  for i in range(8)]
        faces += [tuple(base + v for v in quad) for quad in quads]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    return mesh


def _chassis_boxes(mech: Mechanism) -> list:
    """Boxes that sketch the vehicle's chassis around its centre of mass, from its preset's parameters."""
    spec = mech.vehicle.spec
    if mech.vehicle.type == "helicopter":
        r, h, tail = spec.rotor_radius, spec.rotor_height, spec.tail_arm
        return [((0.3, 0.0, 0.1), (4.0, 1.6, 1.8)),  # cabin
                ((-tail / 2 - 0.5, 0.0, 0.4), (tail - 1.0, 0.4, 0.4)),  # tail boom
                ((-tail, 0.0, 0.9), (0.8, 0.15, 1.2)),  # fin with the tail rotor
                ((0.0, 0.0, h), (2.0 * r, 0.3, 0.06)), ((0.0, 0.0, h), (0.3, 2.0 * r, 0.06))]  # rotor blades
    hull_z = spec.hull_height / 2 - spec.keel_below_com
    return [((0.0, 0.0, hull_z), (spec.hull_length, spec.hull_beam, spec.hull_height)),
            ((0.4, 0.0, hull_z + spec.hull_height / 2 + 0.3), (0.6, 1.4, 0.6))]  # console and windscreen


def run_chassis(name: str, out_dir: Path) -> DemoResult:
    """A helicopter or boat preset simulated over the demo's frames and baked onto one chassis object."""
    started = time.perf_counter()
    scene = demo_scene(name)
    mech = load_mechanism(vehicle_preset_path(VEHICLE_DEMOS[name]))
    dt = 1.0 / (FPS * SUBSTEPS)
    solved = simulate(mech, dt, (FRAMES - 1) * SUBSTEPS, method="vehicle")
    if solved.status != "finished":
        raise SolverError(f"vehicle preset {VEHICLE_DEMOS[name]!r}: the solver stopped at t = {solved.t[-1]:g} s: "
                          f"{solved.message}")
    obj = bpy.data.objects.new(name.title(), _boxes_mesh(f"{name} chassis", _chassis_boxes(mech)))
    scene.collection.objects.link(obj)
    trajectory = Trajectory(t=solved.t, bodies=[obj.name], poses=solved.poses, q=solved.q,
                            coordinate_names=list(solved.coordinate_names), energy=solved.energy,
                            constraint_residual=solved.constraint_residual,
                            newton_iterations=solved.newton_iterations, method=solved.method,
                            status=solved.status, message=solved.message, info=dict(solved.info))
    options = BakeOptions(f"vehicle:{obj.name}", scene.frame_start, FPS, SUBSTEPS)
    keys = write_trajectory(trajectory, [Target(body=obj.name, object=obj.name)], options, root=obj.name)
    distance = float(np.linalg.norm(solved.poses[-1, 0, :3] - solved.poses[0, 0, :3]))
    report = ChassisBakeReport(obj.name, solved.nsteps, keys, time.perf_counter() - started,
                               float(np.max(solved.constraint_residual)), distance)
    staged = stage(scene, trajectory, {obj.name: obj}, mech, mech.name)
    images, motion = _render(scene, staged, trajectory, {obj.name: obj}, name, out_dir)
    plot = _plot(name, solved, out_dir / f"{name}_diagnostics.png", RESIDUAL_LABELS["rigid"])
    return DemoResult(name, report, images, motion, plot)


def run_demo(out_dir: str | Path) -> list[DemoResult]:
    """Write demo.blend, renders, plots and demo_report.txt for every shipped demo preset to `out_dir`."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    available = set(list_presets())
    presets = [p for p in DEMO_PRESETS if p in available]
    missing = [p for p in DEMO_PRESETS if p not in available]
    vehicle_presets = set(list_vehicle_presets())
    results, failures = [], []
    with registered():
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)  # preferences stay as they are
        first = bpy.context.scene
        for preset in presets:
            try:
                results.append(run_one(preset, out_dir))
            except (MechanismError, SolverError) as err:
                failures.append(f"{preset}: FAILED: {err}")
        for name, preset in VEHICLE_DEMOS.items():
            if preset not in vehicle_presets:
                missing.append(f"vehicles/{preset}")
                continue
            try:
                results.append((run_car if name == "car_slalom" else run_chassis)(name, out_dir))
            except (MechanismError, SolverError, RigError) as err:
                failures.append(f"{name}: FAILED: {err}")
        if results:
            bpy.data.scenes.remove(first)
        bpy.ops.wm.save_as_mainfile(filepath=str(out_dir / "demo.blend"), check_existing=False)
    lines = [f"every demo: {FRAMES} frames at {FPS} fps, {SUBSTEPS} solver substeps per frame "
             f"(dt = {1.0 / (FPS * SUBSTEPS):g} s), chosen so the scissor lift converges through its singular "
             "fully extended configuration (2 substeps do not); the vehicles use the same time step"]
    lines += [f"{r.preset}: {r.report.summary()}" for r in results] + failures
    lines += [f"{p}: skipped, presets/{p}.toml is not there yet" for p in missing]
    from .contact import run_maximal_demo  # here: contact imports this module's helpers

    run_maximal_demo(out_dir, lines)  # dominoes.blend and wrecking_ball.blend, their renders and plots
    from .driving import run_driving_demo  # here: driving imports this module's helpers

    run_driving_demo(out_dir, lines)  # driving.blend: a live-driven take and a path followed as a driver
    from .handover import run_handover_demo  # here: handover imports this module's helpers

    run_handover_demo(out_dir, lines)  # handover.blend: a keyed throw handed over, a bake range blended back
    (out_dir / "demo_report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for line in lines:
        print(line)
    return results

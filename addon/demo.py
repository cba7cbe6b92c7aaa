"""The demo: preset mechanisms built as rigid bodies, baked, saved, rendered and plotted.

`run_demo(out_dir)` builds one scene per demo preset (pendulum chain, four-bar, scissor lift,
slider-crank; presets not shipped yet are skipped and listed) in a fresh file, bakes 250 frames of
each, saves out_dir/demo.blend, renders a few frames of each with Workbench to
out_dir/<preset>_f<frame>.png (camera fitted to the whole motion, see bridge/stage.py) and one
overview with faded poses across the frame range to out_dir/<preset>_motion.png, plots energy
change and constraint residual over time to out_dir/<preset>_diagnostics.png, and writes
out_dir/demo_report.txt with the time step and the bake times (and any bake that failed, with the
solver's message; the other mechanisms are still written).
Needs bpy (and matplotlib for the plots).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from .bridge.build import build_rigid_bodies
from .bridge.headless import registered
from .bridge.job import BakeJob, BakeReport
from .bridge.stage import stage
from .solver.mechfile import list_presets, load_mechanism, preset_path
from .solver.model import MechanismError
from .solver.trajectory import SolverError, Trajectory

DEMO_PRESETS = ("chain_5", "four_bar", "scissor_lift", "slider_crank")
FRAMES = 250
FPS = 25
# Solver steps per frame. The scissor lift swings through its fully extended, singular configuration
# (all links vertical) every 1.45 s; with 2 substeps (dt = 0.02 s) the scene-read lift's Newton solve
# stalls next to it (frame 129.5), with 3 or 4 it converges at every step. 4 leaves a margin.
SUBSTEPS = 4
RENDER_FRAMES = (1, 50, 100, 175, 250)
GHOSTS = 12  # faded poses in the motion overview image


@dataclass(frozen=True)
class DemoResult:
    preset: str
    report: BakeReport
    images: tuple[Path, ...]
    motion: Path
    plot: Path | None


def _plot(preset: str, trajectory: Trajectory, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, (ax_e, ax_r) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax_e.plot(trajectory.t, trajectory.energy - trajectory.energy[0])
    ax_e.set_ylabel("E - E0 (J)")
    ax_e.set_title(f"{preset}: energy change and constraint residual")
    residual = np.maximum(np.asarray(trajectory.constraint_residual), 1e-18)
    ax_r.semilogy(trajectory.t, residual)
    ax_r.set_ylabel("max |h| (m)")
    ax_r.set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def demo_scene(name: str) -> bpy.types.Scene:
    scene = bpy.data.scenes.new(name)
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    return scene


def run_one(preset: str, out_dir: Path) -> DemoResult:
    """Build, bake, render and plot one preset in its own scene. Raises SolverError if the bake fails."""
    scene = demo_scene(preset)
    mech = load_mechanism(preset_path(preset))
    built = build_rigid_bodies(scene, mech)
    scene.symplex.setups[built.setup].substeps = SUBSTEPS
    job = BakeJob(scene, built.setup)
    while not job.advance(budget_seconds=3600.0):
        pass
    report = job.finish(scene)
    objects = {name: bpy.data.objects[name] for name in built.objects.values()}  # the scene's body names
    staged = stage(scene, job.trajectory(), objects, job.read.mechanism, mech.name)
    images = []
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
        for frame in RENDER_FRAMES:
            staged.caption(frame)
            scene.frame_set(frame)
            path = out_dir / f"{preset}_f{frame:04d}.png"
            scene.render.filepath = str(path)
            bpy.ops.render.render(write_still=True)
            images.append(path)
        copies = staged.ghosts(job.trajectory(), objects, GHOSTS)
        staged.caption(scene.frame_end, f"frames {scene.frame_start}-{scene.frame_end}, {GHOSTS} poses faded")
        scene.frame_set(scene.frame_end)
        motion = out_dir / f"{preset}_motion.png"
        scene.render.filepath = str(motion)
        bpy.ops.render.render(write_still=True)
        for copy in copies:
            bpy.data.objects.remove(copy)
    plot = _plot(preset, job.trajectory(), out_dir / f"{preset}_diagnostics.png")
    return DemoResult(preset, report, tuple(images), motion, plot)


def run_demo(out_dir: str | Path) -> list[DemoResult]:
    """Write demo.blend, renders, plots and demo_report.txt for every shipped demo preset to `out_dir`."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    available = set(list_presets())
    presets = [p for p in DEMO_PRESETS if p in available]
    missing = [p for p in DEMO_PRESETS if p not in available]
    results, failures = [], []
    with registered():
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)  # preferences stay as they are
        first = bpy.context.scene
        for preset in presets:
            try:
                results.append(run_one(preset, out_dir))
            except (MechanismError, SolverError) as err:
                failures.append(f"{preset}: FAILED: {err}")
        if results:
            bpy.data.scenes.remove(first)
        bpy.ops.wm.save_as_mainfile(filepath=str(out_dir / "demo.blend"), check_existing=False)
    lines = [f"every demo: {FRAMES} frames at {FPS} fps, {SUBSTEPS} solver substeps per frame "
             f"(dt = {1.0 / (FPS * SUBSTEPS):g} s), chosen so the scissor lift converges through its singular "
             "fully extended configuration (2 substeps do not)"]
    lines += [f"{r.preset}: {r.report.summary()}" for r in results] + failures
    lines += [f"{p}: skipped, presets/{p}.toml is not there yet" for p in missing]
    (out_dir / "demo_report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for line in lines:
        print(line)
    return results

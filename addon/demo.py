"""The demo: preset mechanisms built as rigid bodies, baked, saved, rendered and plotted.

`run_demo(out_dir)` builds one scene per demo preset (pendulum chain, four-bar, scissor lift,
slider-crank; presets not shipped yet are skipped and listed) in a fresh file, bakes 250 frames of
each, saves out_dir/demo.blend, renders a few frames of each with Workbench to
out_dir/<preset>_f<frame>.png, plots energy change and constraint residual over time to
out_dir/<preset>_diagnostics.png, and writes out_dir/demo_report.txt with the bake times (and any
bake that failed, with the solver's message; the other mechanisms are still written).
Needs bpy (and matplotlib for the plots).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np
from mathutils import Vector

from .bridge.build import build_rigid_bodies
from .bridge.headless import registered
from .bridge.job import BakeJob, BakeReport
from .solver.mechfile import list_presets, load_mechanism, preset_path
from .solver.model import MechanismError
from .solver.trajectory import SolverError, Trajectory

DEMO_PRESETS = ("chain_5", "four_bar", "scissor_lift", "slider_crank")
FRAMES = 250
SUBSTEPS = 4
RENDER_FRAMES = (1, 50, 100, 175, 250)
RESOLUTION = (640, 480)
PALETTE = ((0.85, 0.33, 0.10, 1), (0.00, 0.45, 0.74, 1), (0.47, 0.67, 0.19, 1), (0.93, 0.69, 0.13, 1),
           (0.49, 0.18, 0.56, 1), (0.30, 0.75, 0.93, 1))


@dataclass(frozen=True)
class DemoResult:
    preset: str
    report: BakeReport
    images: tuple[Path, ...]
    plot: Path | None


def _frame_camera(scene: bpy.types.Scene, objects: list[bpy.types.Object]) -> None:
    """An orthographic camera looking along +Y at everything the objects sweep, and a sun."""
    corners = []
    for frame in range(scene.frame_start, scene.frame_end + 1, 10):
        scene.frame_set(frame)
        for obj in objects:
            corners += [obj.matrix_world @ Vector(c) for c in obj.bound_box]
    points = np.array(corners)
    margin = 0.08 * float(np.max(points.max(axis=0) - points.min(axis=0))) + 0.02
    lo, hi = points.min(axis=0) - margin, points.max(axis=0) + margin
    centre = (lo + hi) / 2
    cam_data = bpy.data.cameras.new(f"{scene.name} camera")
    cam_data.type = "ORTHO"
    aspect = RESOLUTION[0] / RESOLUTION[1]
    cam_data.ortho_scale = float(max(hi[0] - lo[0], (hi[2] - lo[2]) * aspect))
    camera = bpy.data.objects.new(f"{scene.name} camera", cam_data)
    camera.location = (centre[0], lo[1] - 10.0, centre[2])
    camera.rotation_euler = (math.pi / 2, 0.0, 0.0)
    scene.collection.objects.link(camera)
    scene.camera = camera
    sun = bpy.data.objects.new(f"{scene.name} sun", bpy.data.lights.new(f"{scene.name} sun", "SUN"))
    sun.rotation_euler = (0.6, 0.2, 0.3)
    scene.collection.objects.link(sun)


def _setup_render(scene: bpy.types.Scene) -> None:
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x, scene.render.resolution_y = RESOLUTION
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "OBJECT"


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
    scene.render.fps, scene.render.fps_base = 25, 1.0
    return scene


def run_one(preset: str, out_dir: Path) -> DemoResult:
    """Build, bake, render and plot one preset in its own scene. Raises SolverError if the bake fails."""
    scene = demo_scene(preset)
    mech = load_mechanism(preset_path(preset))
    built = build_rigid_bodies(scene, mech)
    scene.symplex.setups[built.setup].substeps = SUBSTEPS
    objects = [bpy.data.objects[name] for name in built.objects.values()]
    for i, obj in enumerate(objects):
        obj.color = PALETTE[i % len(PALETTE)]
    job = BakeJob(scene, built.setup)
    while not job.advance(budget_seconds=3600.0):
        pass
    report = job.finish(scene)
    _setup_render(scene)
    _frame_camera(scene, objects)
    images = []
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
        for frame in RENDER_FRAMES:
            scene.frame_set(frame)
            path = out_dir / f"{preset}_f{frame:04d}.png"
            scene.render.filepath = str(path)
            bpy.ops.render.render(write_still=True)
            images.append(path)
    plot = _plot(preset, job.trajectory(), out_dir / f"{preset}_diagnostics.png")
    return DemoResult(preset, report, tuple(images), plot)


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
    lines = [f"{r.preset}: {r.report.summary()}" for r in results] + failures
    lines += [f"{p}: skipped, presets/{p}.toml is not there yet" for p in missing]
    (out_dir / "demo_report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for line in lines:
        print(line)
    return results

"""The contact demo: collider presets built by Add Preset, baked with the 'maximal' method, saved, rendered, plotted.

`run_maximal_demo(out_dir, report)` builds each preset of CONTACT_DEMOS (dominoes, wrecking ball) with
bridge/build.build_rigid_bodies (the Add Preset path: collision shapes, a passive ground plane, setup
method Maximal) in a fresh file, bakes it with BakeJob, saves out_dir/<preset>.blend, renders
RENDER_COUNT Workbench frames and the faded-poses overview (scenes._render), plots energy change and
joint residual (scenes._plot, <preset>_diagnostics.png) and the deepest penetration and contact count
over time (<preset>_penetration.png). One line per preset goes to `report` (a failed bake is reported
with the solver's message; the other preset still runs). Returns the files written.
Needs bpy (and matplotlib for the plots).
"""

from __future__ import annotations

from pathlib import Path

import bpy
import numpy as np

from addon.bridge.headless import registered
from .plots import pyplot, save_figure
from .scenes import FPS, _plot, _render, bake_preset, demo_scene
from addon.solver.collision import CollisionWorld
from addon.solver.model import Mechanism, MechanismError
from addon.solver.trajectory import SolverError, Trajectory

# preset -> (seconds simulated, solver substeps per frame at FPS). Dominoes at dt = 0.01 s for 1.6 s
# (not the 2 s of docs/collision.md): the 7th and 8th lie flat by then, and the last 0.4 s, every
# domino resting on the next, cost a third of the 2 s bake (up to 20 s on the shared 2-core machine).
# The wrecking ball needs dt = 0.005 s for its 4.7 m/s impact (about 0.8 s in); 1.5 s shows the crates thrown.
CONTACT_DEMOS = {"dominoes": (1.6, 4), "wrecking_ball": (1.5, 8)}
RENDER_COUNT = 5
TOUCH = 1e-4  # m: contacts counted within this gap (the interior-point solver keeps resting contacts just apart)


def penetration(mech: Mechanism, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """(deepest penetration (m, >= 0), contact points within TOUCH) at every recorded pose."""
    world = CollisionWorld(mech)
    index = [trajectory.body_index(b.name) for b in mech.bodies]
    depth, count = np.zeros(len(trajectory.t)), np.zeros(len(trajectory.t), dtype=int)
    for k, poses in enumerate(trajectory.poses[:, index]):
        contacts = world.detect(poses[:, :3], poses[:, 3:], TOUCH)
        if len(contacts):
            depth[k] = max(0.0, -float(contacts.distance.min()))
            count[k] = len(contacts)
    return depth, count


def _penetration_plot(name: str, t: np.ndarray, depth: np.ndarray, count: np.ndarray, path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    fig, (ax_d, ax_c) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax_d.plot(t, depth * 1e3)
    ax_d.set_ylabel("deepest penetration (mm)")
    ax_d.set_title(f"{name}: penetration and contacts (maximal method)")
    ax_c.step(t, count, where="post")
    ax_c.set_ylabel(f"contacts within {TOUCH * 1e3:g} mm")
    ax_c.set_xlabel("time (s)")
    return save_figure(fig, path)


def run_contact(preset: str, out_dir: Path) -> tuple[list[Path], str]:
    """Build, bake, save, render and plot one collider preset in its own file; (files, report line)."""
    seconds, substeps = CONTACT_DEMOS[preset]
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    first = bpy.context.scene
    scene = demo_scene(preset)
    scene.frame_end = scene.frame_start + round(seconds * FPS)
    job, report, objects, staged = bake_preset(scene, preset, substeps)
    trajectory = job.trajectory()
    depth, count = penetration(job.read.mechanism, trajectory)
    frames = tuple(int(f) for f in np.linspace(scene.frame_start, scene.frame_end, RENDER_COUNT).round())
    images, motion = _render(scene, staged, trajectory, objects, preset, out_dir, frames)
    plots = [_plot(preset, trajectory, out_dir / f"{preset}_diagnostics.png"),
             _penetration_plot(preset, trajectory.t, depth, count, out_dir / f"{preset}_penetration.png")]
    bpy.data.scenes.remove(first)
    blend = out_dir / f"{preset}.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), check_existing=False)
    line = (f"{preset} (maximal, {seconds:g} s at dt = {job.read.dt:g} s): {report.summary()}; deepest penetration "
            f"{depth.max() * 1e3:.2f} mm, up to {count.max()} contact points within {TOUCH * 1e3:g} mm")
    return [blend, *images, motion, *(p for p in plots if p is not None)], line


def run_maximal_demo(out_dir: str | Path, report: list[str]) -> list[Path]:
    """Write <preset>.blend, renders and plots of every CONTACT_DEMOS preset to `out_dir`; lines to `report`."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with registered():
        for preset in CONTACT_DEMOS:
            try:
                files, line = run_contact(preset, out_dir)
            except (MechanismError, SolverError) as err:
                report.append(f"{preset} (maximal): FAILED: {err}")
                continue
            written += files
            report.append(line)
    return written

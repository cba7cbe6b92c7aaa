"""The hand-over demo (docs/animation_handover.md's pictures): a keyed throw handed to the simulation with Start
From Animation on and off, and a simulated stretch inside a longer animation blended back into its keys.

Throw: two boxes keyed along the same ballistic arc over frames 1-START (a key every frame, LINEAR), each in a
rigid-body setup that starts at START, one with Start From Animation on and one with it off, baked with the
setups' own bake (job.bake_setup). handover_start_plot.png plots their height and vertical velocity over the
frames: with the option on the velocity runs on through START (the keys' arc continues), with it off it
drops to zero there (the box falls from rest: a kink in the height). handover_start_motion.png renders both
with faded poses over frames 1 to THROW_END. Range: a box keyed (Bezier) at RANGE_KEYS, its setup baking
frames RANGE only and blending BLEND frames into the keys after; handover_range_plot.png plots its height
channel: the artist's curve and keys, the bake (keys outside the range and blend untouched) and the simulation
alone over the blend's frames. Saves handover.blend; appends a line per scene to `lines`.
`make demo` runs it (scenes.run_demo). For the docs: `.venv/bin/python -m demo.handover out --docs docs/img`
writes the pictures to out/ and copies of DOC_FIGURES at most plots.DOC_WIDTH pixels wide to docs/img/.
"""

from __future__ import annotations

from pathlib import Path

import bpy
import numpy as np

from addon.bridge import compat
from addon.bridge.bake import free_bake
from addon.bridge.build import ensure_rigidbody_world
from addon.bridge.headless import registered
from addon.bridge.job import bake_setup
from addon.bridge.rotations import matrix_to_quat
from addon.bridge.vehicle_rig import box_mesh
from addon.solver.model import Mechanism
from addon.solver.trajectory import Trajectory

from .plots import pyplot, run_demo_script, save_figure
from .scenes import FPS, _render, demo_scene
from .stage import PALETTE, stage

START = 10  # the throw's last key and the bake's first frame
THROW_END = 30
THROW_VELOCITY = np.array([5.0, 0.0, 3.0])  # m/s at START
THROW_SPIN = -4.0  # rad/s about world Y (in the plane the side view shows)
GRAVITY = -9.81  # m/s^2 along Z, the scene's
BOX = (0.4, 0.3, 0.2)  # m
RANGE = (10, 25)  # the bake range inside frames 1-RANGE_END
RANGE_END = 40
RANGE_KEYS = (1, 5, 10, 18, 30, 35, 40)  # Bezier keys before, inside and after RANGE
BLEND = 8  # frames blended into the keys after RANGE
DOC_FIGURES = ("handover_start_motion", "handover_start_plot", "handover_range_plot")


def _box_setup(scene: bpy.types.Scene, name: str):
    """A 2 kg box in a collection of its own, with a rigid-body setup for that collection; (box, setup)."""
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    box = bpy.data.objects.new(name, box_mesh(name, BOX))
    collection.objects.link(box)
    ensure_rigidbody_world(scene).collection.objects.link(box)
    box.rigid_body.type, box.rigid_body.mass, box.rigid_body.collision_shape = "ACTIVE", 2.0, "BOX"
    setup = scene.symplex.setups.add()
    setup.name, setup.kind, setup.collection = name, "RIGID_BODIES", collection
    return box, setup


def _key_throw(box: bpy.types.Object) -> None:
    """Key `box` along the ballistic arc that leaves START at THROW_VELOCITY, spinning, every frame to START."""
    for frame in range(1, START + 1):
        t = (frame - START) / FPS
        box.location = tuple(THROW_VELOCITY * t + np.array([0.0, 0.0, 0.5 * GRAVITY * t * t]))
        box.rotation_euler = (0.0, 0.3 + THROW_SPIN * t, 0.0)
        box.keyframe_insert("location", frame=frame)
        box.keyframe_insert("rotation_euler", frame=frame)
    for fcurve in compat.fcurves(compat.assigned(box)):
        for point in fcurve.keyframe_points:
            point.interpolation = "LINEAR"


def _poses(scene: bpy.types.Scene, objects: list[bpy.types.Object], frames: range) -> np.ndarray:
    """(F, B, 7) world poses (x y z qw qx qy qz) of `objects` as `scene` evaluates them at `frames`."""
    depsgraph = scene.view_layers[0].depsgraph
    poses = np.empty((len(frames), len(objects), 7))
    for k, frame in enumerate(frames):
        scene.frame_set(frame)
        for b, obj in enumerate(objects):
            matrix = np.array(obj.evaluated_get(depsgraph).matrix_world)
            poses[k, b, :3] = matrix[:3, 3]
            poses[k, b, 3:] = matrix_to_quat(matrix[:3, :3])
    return poses


def _throw_plot(path: Path, frames: np.ndarray, heights: dict[str, np.ndarray]) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax_z, ax_v) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    for ax in (ax_z, ax_v):
        ax.axvspan(frames[0], START, color="0.9", lw=0)
        ax.axvline(START, color="0.5", lw=1, ls=":")
    for (label, z), colour, style in zip(heights.items(), PALETTE, ("-", "--")):
        ax_z.plot(frames, z, style, color=colour, label=label)
        ax_v.plot(frames[1:] - 0.5, np.diff(z) * FPS, style, color=colour, marker=".", label=label)
    keyed = frames <= START
    ax_z.plot(frames[keyed], next(iter(heights.values()))[keyed], "k.", label="keys (both boxes)")
    ax_z.set_ylabel("height (m)")
    ax_z.set_title(f"a throw keyed to frame {START} (shaded), then simulated")
    ax_z.legend(loc="lower left", fontsize=8)
    ax_v.set_ylabel("vertical velocity (m/s)")
    ax_v.set_xlabel("frame (velocity: per-frame difference, at the half frame)")
    save_figure(fig, path)


def throw_scene(out_dir: Path) -> str:
    """The keyed throw baked with Start From Animation on and off, plotted and rendered; returns a report line."""
    scene = demo_scene("handover_start")
    scene.frame_start, scene.frame_end = START, THROW_END
    scene.gravity = (0.0, 0.0, GRAVITY)
    boxes = []
    for label, start_from_animation in (("on", True), ("off", False)):
        box, setup = _box_setup(scene, f"Start From Animation {label}")
        _key_throw(box)
        setup.start_from_animation = start_from_animation
        bake_setup(scene, setup.name)
        boxes.append(box)
    scene.frame_start = 1  # the keyed frames too, for the picture
    frames = range(1, THROW_END + 1)
    poses = _poses(scene, boxes, frames)
    _throw_plot(out_dir / "handover_start_plot.png", np.array(frames),
                {"Start From Animation on": poses[:, 0, 2], "off: starts at rest": poses[:, 1, 2]})
    n = len(frames)
    trajectory = Trajectory(t=(np.array(frames) - 1.0) / FPS, bodies=[b.name for b in boxes], poses=poses,
                            q=np.zeros((n, 0)), coordinate_names=[], energy=np.zeros(n),
                            constraint_residual=np.zeros(n), newton_iterations=np.zeros(n - 1, dtype=int))
    objects = {b.name: b for b in boxes}
    staged = stage(scene, trajectory, objects, Mechanism(name="throw", bodies=(), joints=()),
                   "Start From Animation: on (orange), off (blue)")
    _render(scene, staged, trajectory, objects, "handover_start", out_dir, ())
    jump = [abs((z[START] - z[START - 1]) - (z[START - 1] - z[START - 2])) * FPS for z in poses[:, :, 2].T]
    return (f"handover_start: vertical velocity change across frame {START}: {jump[0]:.3f} m/s with Start From "
            f"Animation on, {jump[1]:.3f} m/s off (gravity alone changes it {-GRAVITY / FPS:.3f} m/s a frame)")


def _channel(box: bpy.types.Object, frames: np.ndarray, index: int = 2) -> np.ndarray:
    fcurve = compat.find_fcurve(compat.assigned(box), "location", index)
    return np.array([fcurve.evaluate(f) for f in frames])


def _range_plot(path: Path, fine: np.ndarray, artist: np.ndarray, keys: np.ndarray, frames: np.ndarray,
                baked: np.ndarray, alone: np.ndarray) -> None:
    plt = pyplot()
    if plt is None:
        return
    first, last = RANGE
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.axvspan(first, last, color="0.88", lw=0, label=f"Bake Range {first}-{last}")
    ax.axvspan(last, last + BLEND, color="0.95", lw=0, label=f"Blend Frames {BLEND}")
    ax.plot(fine, artist, "--", color="0.45", lw=1, label="the artist's curve")
    ax.plot(RANGE_KEYS, keys, "ko", ms=5, label="the artist's keys")
    blend = (frames >= last) & (frames <= last + BLEND)
    ax.plot(frames[blend], alone[blend], ":", color=PALETTE[1], lw=1.5, label="the simulation alone")
    ax.plot(frames, baked, color=PALETTE[0], lw=1.5, label="after the bake")
    ax.set_xlabel("frame")
    ax.set_ylabel("location Z (m)")
    ax.set_title(f"keyed frames 1-{RANGE_END}: baked over {RANGE[0]}-{RANGE[1]}, blended back")
    ax.legend(loc="best", fontsize=8)
    save_figure(fig, path)


def range_scene(out_dir: Path) -> str:
    """A keyed box baked over RANGE and blended into its keys after it, plotted; returns a report line."""
    scene = demo_scene("handover_range")
    scene.frame_end = RANGE_END
    box, setup = _box_setup(scene, "Keyed box")
    for frame in RANGE_KEYS:
        box.location = (0.1 * frame, 0.3 * np.sin(0.3 * frame), 2.0 + 0.5 * np.cos(0.2 * frame))
        box.rotation_euler = (0.05 * frame, 0.0, 0.1 * frame)
        box.keyframe_insert("location", frame=frame)
        box.keyframe_insert("rotation_euler", frame=frame)
    fine = np.linspace(1, RANGE_END, 4 * (RANGE_END - 1) + 1)
    frames = np.arange(1, RANGE_END + 1, dtype=float)
    artist, keys = _channel(box, fine), _channel(box, np.array(RANGE_KEYS, dtype=float))
    setup.use_frame_range = True
    setup.frame_start, setup.frame_end = RANGE[0], RANGE[1] + BLEND  # the simulation alone, on to the blend's end
    bake_setup(scene, setup.name)
    alone = _channel(box, frames)
    free_bake([box])
    setup.frame_end, setup.blend_frames = RANGE[1], BLEND
    report = bake_setup(scene, setup.name)
    baked = _channel(box, frames)
    _range_plot(out_dir / "handover_range_plot.png", fine, artist, keys, frames, baked, alone)
    outside = (frames < RANGE[0]) | (frames > RANGE[1] + BLEND)
    moved = (np.abs(baked - np.interp(frames, fine, artist)) * outside).max()
    return (f"handover_range: {report.summary()}; outside the range and blend the curve is the artist's at every "
            f"frame (largest change {moved:.1e} m)")


def run_handover_demo(out_dir: Path, lines: list[str]) -> None:
    """Write the hand-over pictures and handover.blend to `out_dir` (module docstring)."""
    with registered():
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        first = bpy.context.scene
        lines.append(throw_scene(out_dir))
        lines.append(range_scene(out_dir))
        bpy.data.scenes.remove(first)
        bpy.ops.wm.save_as_mainfile(filepath=str(out_dir / "handover.blend"), check_existing=False)


if __name__ == "__main__":
    run_demo_script(run_handover_demo, DOC_FIGURES, "The hand-over demo's pictures (module docstring)")

"""The driving demo (docs/driving.md's pictures): a car rig driven live by a scripted keyboard take, a car
rig following a hairpin as a driver beside pure pursuit, and a helicopter and a speedboat following paths.

Live drive: bridge/vehicle_live.py drives the sedan rig from synthetic key events (LIVE_SCRIPT: what a
person would press) on a clock of its own, then keeps the take (keyed controls, baked). Writes
drive_live_motion.png (faded poses), drive_live_f<frame>.png and drive_live_controls.png (the keyed
controls). Path: the sedan rig follows a hairpin curve with lateral_accel set (solver/vehicles/driver.py),
baked; drive_path_motion.png renders it, drive_path_compare.png plots its path and speed beside pure
pursuit's on the same curve at the same top speed. Drift: the same rig on the same hairpin with drift_angle
DRIFT (solver/vehicles/drift.py, on tyres that slip), baked; drive_drift_motion.png renders it,
drive_drift_compare.png plots its centre of mass and heading (top view) and rear axle's slip angle beside the grip
driver's (drift_angle 0, the same tyres). Fly: the helicopter rig flies an S (solver/vehicles/
pilot.py), baked; drive_fly_motion.png renders it, drive_fly_compare.png plots its ground track, speed and
bank beside pure pursuit flown the same way at the top speed. Boat: the speedboat rig follows a bend by
differential thrust (solver/vehicles/helmsman.py), baked; drive_boat_motion.png and drive_boat_compare.png
(track, speed and heel: no control banks it) the same way. Saves driving.blend; appends a line per scene to
`lines`.
`make demo` runs it (scenes.run_demo). For the docs: `.venv/bin/python -m demo.driving out --docs docs/img`
writes the same pictures to out/ and copies of DOC_FIGURES at most plots.DOC_WIDTH pixels wide to docs/img/.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import bpy
import numpy as np

from addon.bridge import vehicle_body_rig, vehicle_live
from addon.bridge.headless import registered
from addon.bridge.vehicle_bake import bake_vehicle, object_trajectory, simulate_rig
from addon.bridge.vehicle_rig import DRIFT_ANGLE, PATH_PROPERTY, VehicleRig, build_car_rig, read_rig
from addon.bridge.vehicle_setup import RESULT_PROPERTY, find
from addon.solver.lie import quat_to_matrix
from addon.solver.model import Mechanism
from addon.solver.vehicles.helmsman import simulate_pursuit_steering
from addon.solver.vehicles.pilot import simulate_pursuit_flying

from .plots import pyplot, run_demo_script, save_figure
from .scenes import _render, demo_scene
from .stage import stage

TICK = 1.0 / 30.0  # s between the scripted take's timer ticks
# (second, event type, value): throttle on, a left turn, brake, a right turn, coast
LIVE_SCRIPT = ((0.1, "W", "PRESS"), (1.2, "LEFT_ARROW", "PRESS"), (2.4, "LEFT_ARROW", "RELEASE"),
               (2.6, "W", "RELEASE"), (2.7, "S", "PRESS"), (3.1, "S", "RELEASE"), (3.3, "D", "PRESS"),
               (4.3, "D", "RELEASE"), (4.4, "W", "PRESS"), (5.6, "W", "RELEASE"))
LIVE_SECONDS = 6.0
HAIRPIN_RADIUS = 10.0  # m
LIMITS = {"lateral_accel": 4.0, "accel_limit": 2.5, "brake_limit": 5.0}
TOP_SPEED = 14.0  # m/s, the path_speed
DRIFT = math.radians(25.0)  # rad, the drift run's drift_angle
HEADING_EVERY = 10  # frames between the heading segments drawn on the drift plot
FLIGHT = {"path_speed": 20.0, "initial_speed": 20.0, "lateral_accel": 4.0, "brake_limit": 2.5,
          "bank_limit": math.radians(30.0)}  # the helicopter's properties
BOAT = {"path_speed": 10.0, "initial_speed": 10.0, "lateral_accel": 2.0, "accel_limit": 1.0,
        "brake_limit": 1.0}  # the speedboat's
CRAFT_FRAMES = {"helicopter": 500, "speedboat": 625}  # 20 s and 25 s at the demo's 25 fps
DOC_FIGURES = ("drive_live_motion", "drive_live_controls", "drive_path_motion", "drive_path_compare",
               "drive_drift_motion", "drive_drift_compare", "drive_fly_motion", "drive_fly_compare", "drive_boat_motion", "drive_boat_compare")


def live_take(scene: bpy.types.Scene, owner: bpy.types.Object) -> vehicle_live.DriveSession:
    """Play LIVE_SCRIPT on a live drive of `owner`'s rig and keep the take; returns the session."""
    session = vehicle_live.start(scene, owner, 0.0)
    pending = list(LIVE_SCRIPT)
    for tick in range(int(LIVE_SECONDS / TICK) + 1):
        now = tick * TICK
        while pending and pending[0][0] <= now:
            _, kind, value = pending.pop(0)
            session.drive.event(SimpleNamespace(type=kind, value=value))
        session.drive.tick(now)
    vehicle_live.keep(scene, session)
    return session


def _hairpin() -> np.ndarray:
    a = np.linspace(-math.pi / 2, math.pi / 2, 37)
    arc = np.column_stack([30.0 + HAIRPIN_RADIUS * np.cos(a), HAIRPIN_RADIUS + HAIRPIN_RADIUS * np.sin(a)])
    return np.vstack([[[0.0, 0.0]], arc, [[0.0, 2.0 * HAIRPIN_RADIUS]]])


def _arc(cx: float, cy: float, r: float, a0: float, a1: float) -> np.ndarray:
    a = np.linspace(a0, a1, 31)
    return np.column_stack([cx + r * np.cos(a), cy + r * np.sin(a)])


def _flight() -> np.ndarray:
    """An S for the helicopter: 40 m straight, a left quarter turn of R = 60 m, a right one of R = 90 m, 100 m on."""
    return np.vstack([[[0.0, 0.0]], _arc(40.0, 60.0, 60.0, -math.pi / 2, 0.0), _arc(190.0, 60.0, 90.0, math.pi,
                                                                                     math.pi / 2)[1:],
                      [[290.0, 150.0]]])


def _bend() -> np.ndarray:
    """A bend for the speedboat: 30 m straight, a left quarter turn of R = 60 m, 60 m on."""
    return np.vstack([[[0.0, 0.0]], _arc(30.0, 60.0, 60.0, -math.pi / 2, 0.0), [[90.0, 120.0]]])


def _curve_object(scene: bpy.types.Scene, name: str, points: np.ndarray) -> bpy.types.Object:
    data = bpy.data.curves.new(name, "CURVE")
    data.dimensions = "3D"
    spline = data.splines.new("POLY")
    spline.points.add(len(points) - 1)
    for p, (x, y) in zip(spline.points, points):
        p.co = (x, y, 0.0, 1.0)
    obj = bpy.data.objects.new(name, data)
    scene.collection.objects.link(obj)
    return obj


def _rear_axle(trajectory, spec) -> tuple[np.ndarray, np.ndarray]:
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    b = spec.com_ahead_of_rear_axle
    return np.column_stack([poses[:, 0] - b * np.cos(theta), poses[:, 1] - b * np.sin(theta)]), theta


def _plot_controls(path: Path, session: vehicle_live.DriveSession) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 3))
    for prop, values in session.drive.take().items():
        t = 0.5 * session.drive.dt * np.arange(len(values))
        scale = max(np.max(np.abs(values)), 1e-12)
        ax.plot(t, np.asarray(values) / scale, label=f"{prop} (max {scale:.3g})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("keyed value / its largest")
    ax.set_title("live take: the controls keyed on the rig (every half frame)")
    ax.legend(loc="best", fontsize=8)
    save_figure(fig, path)


def _plot_compare(path: Path, points: np.ndarray, runs: dict[str, np.ndarray], dt: float) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax_p, ax_v) = plt.subplots(2, 1, figsize=(7, 7), gridspec_kw={"height_ratios": [3, 2]})
    ax_p.plot(points[:, 0], points[:, 1], "k--", lw=1, label="path")
    for label, xy in runs.items():
        ax_p.plot(xy[:, 0], xy[:, 1], label=label)
        speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / dt
        ax_v.plot(dt * np.arange(1, len(xy)), speed, label=label)
    ax_p.set_aspect("equal", adjustable="datalim")
    ax_p.set_xlabel("x (m)")
    ax_p.set_ylabel("y (m)")
    ax_p.set_title(f"hairpin R = {HAIRPIN_RADIUS:g} m, rear axle, top view")
    ax_p.legend(loc="best", fontsize=8)
    ax_v.axhline(math.sqrt(LIMITS["lateral_accel"] * HAIRPIN_RADIUS), color="0.6", lw=1, ls=":",
                 label="sqrt(a_lat R)")
    ax_v.set_xlabel("time (s)")
    ax_v.set_ylabel("speed (m/s)")
    ax_v.legend(loc="best", fontsize=8)
    save_figure(fig, path)


def _plot_craft(path: Path, points: np.ndarray, runs: dict[str, np.ndarray], dt: float, title: str) -> None:
    """Ground track (top view), speed and bank over time of body poses (N, 7) for each run."""
    plt = pyplot()
    if plt is None:
        return
    fig, (ax_p, ax_v, ax_b) = plt.subplots(3, 1, figsize=(7, 9), gridspec_kw={"height_ratios": [3, 1.5, 1.5]})
    ax_p.plot(points[:, 0], points[:, 1], "k--", lw=1, label="path")
    for label, poses in runs.items():
        t = dt * np.arange(len(poses))
        ax_p.plot(poses[:, 0], poses[:, 1], label=label)
        ax_v.plot(t[1:], np.linalg.norm(np.diff(poses[:, :2], axis=0), axis=1) / dt, label=label)
        R = np.array([quat_to_matrix(q) for q in poses[:, 3:]])
        ax_b.plot(t, np.degrees(np.arctan2(-R[:, 2, 1], R[:, 2, 2])), label=label)
    ax_p.set_aspect("equal", adjustable="datalim")
    ax_p.set_xlabel("x (m)")
    ax_p.set_ylabel("y (m)")
    ax_p.set_title(title)
    ax_p.legend(loc="best", fontsize=8)
    ax_v.set_ylabel("speed (m/s)")
    ax_b.set_ylabel("bank (deg, + left)")
    ax_b.set_xlabel("time (s)")
    save_figure(fig, path)


def _craft_scene(name: str, preset: str, points: np.ndarray, props: dict[str, float], out_dir: Path,
                 title: str) -> str:
    """Build the `preset` rig in its own scene, give it the path `points` and `props`, bake, render it and plot
    it beside pure pursuit at its path_speed; returns the bake's summary."""
    scene = demo_scene(name)
    scene.frame_end = CRAFT_FRAMES[preset]
    rig = vehicle_body_rig.build_body_rig(scene, preset, preset.capitalize())
    owner = scene.objects[rig.chassis]
    owner[PATH_PROPERTY] = _curve_object(scene, f"{name} path", points + np.array(owner.location[:2])).name
    for prop, value in props.items():
        owner[prop] = value
    report = vehicle_body_rig.bake_body_rig(scene, rig, preset)
    reading = vehicle_body_rig.read_body_rig(scene, rig, preset)
    trajectory, steered = vehicle_body_rig.simulate_body_rig(reading, scene.gravity)
    mech = Mechanism(name=name, bodies=(), joints=(), gravity=tuple(scene.gravity), vehicle=reading.vehicle)
    top = props["path_speed"]
    pursue = simulate_pursuit_flying if preset == "helicopter" else simulate_pursuit_steering
    pursuit = pursue(mech, reading.path, top, reading.dt, reading.steps)[0]
    label = "pilot" if preset == "helicopter" else "helmsman"
    _plot_craft(out_dir / f"{name}_compare.png", reading.path,
                {label: trajectory.poses[:, 0], f"pure pursuit at {top:g} m/s": pursuit.poses[:, 0]}, reading.dt,
                f"{preset}: {label} and pure pursuit, top view")
    objects_run = vehicle_body_rig.object_trajectory(steered, trajectory)
    objects = {body: bpy.data.objects[body] for body in objects_run.bodies}
    staged = stage(scene, objects_run, objects, Mechanism(name=name, bodies=(), joints=()), title)
    _render(scene, staged, objects_run, objects, name, out_dir, (scene.frame_end,))
    return report.summary()


def _render_rig(scene: bpy.types.Scene, reading, solved, name: str, title: str, out_dir: Path,
                frames: tuple[int, ...]) -> None:
    """Render the rig's run `solved` (simulate_rig of `reading`: what the bake wrote) with faded poses, and at
    `frames`."""
    trajectory = object_trajectory(reading, solved)
    objects = {body: bpy.data.objects[body] for body in trajectory.bodies}
    staged = stage(scene, trajectory, objects, Mechanism(name=name, bodies=(), joints=()), title)
    _render(scene, staged, trajectory, objects, name, out_dir, frames)


def _slip(poses: np.ndarray, behind: float) -> tuple[np.ndarray, np.ndarray]:
    """(heading (N+1,), rear slip angle (N,): the course over each step of the rear axle, `behind` m behind the
    centre of mass, less the mean heading) of yaw-only chassis poses (N+1, 7)."""
    heading = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    chord = np.diff(poses[:, :2] - behind * np.column_stack([np.cos(heading), np.sin(heading)]), axis=0)
    slip = np.arctan2(chord[:, 1], chord[:, 0]) - 0.5 * (heading[1:] + heading[:-1])
    return heading, (slip + math.pi) % (2 * math.pi) - math.pi


def _plot_drift(path: Path, points: np.ndarray, runs: dict[str, np.ndarray], dt: float, every: int,
                behind: float) -> None:
    """Top view of each run's centre of mass with its heading drawn as a segment every `every` steps (the body
    slip angle is the angle between segment and track), and the slip angle over time of the rear axle, `behind`
    m behind the centre of mass."""
    plt = pyplot()
    if plt is None:
        return
    fig, (ax_p, ax_s) = plt.subplots(2, 1, figsize=(7, 7.5), gridspec_kw={"height_ratios": [3, 1.6]})
    ax_p.plot(points[:, 0], points[:, 1], "k--", lw=1, label="path")
    for (label, poses), colour in zip(runs.items(), ("C0", "C3")):
        heading, slip = _slip(poses, behind)
        ax_p.plot(poses[:, 0], poses[:, 1], color=colour, lw=1, label=f"{label}: centre of mass, heading")
        half = 1.4 * np.column_stack([np.cos(heading), np.sin(heading)])[::every]
        for (x, y), (hx, hy) in zip(poses[::every, :2], half):
            ax_p.plot((x - hx, x + hx), (y - hy, y + hy), color=colour, lw=2.5, solid_capstyle="butt")
        ax_s.plot(dt * np.arange(0.5, len(slip)), np.degrees(slip), color=colour, label=label)
    ax_s.axhline(-math.degrees(DRIFT), color="0.6", lw=1, ls=":", label="-drift_angle")
    ax_p.set_aspect("equal", adjustable="datalim")
    ax_p.set_xlabel("x (m)")
    ax_p.set_ylabel("y (m)")
    ax_p.set_title(f"hairpin R = {HAIRPIN_RADIUS:g} m on tyres that slip, top view (heading every {every} frames)")
    ax_p.legend(loc="center left", fontsize=8)
    ax_s.set_xlabel("time (s)")
    ax_s.set_ylabel("rear axle slip angle (deg)")
    ax_s.legend(loc="best", fontsize=8)
    save_figure(fig, path)


def _hairpin_scene(name: str) -> tuple[bpy.types.Scene, VehicleRig, np.ndarray]:
    """A demo scene `name` with the sedan rig set to follow the hairpin at TOP_SPEED under LIMITS: (scene, rig,
    the hairpin's points)."""
    scene = demo_scene(name)
    rig = build_car_rig(scene, "sedan", "Car", (0.0, 0.0, 0.0), slalom=False)
    owner = scene.objects[rig.chassis]
    points = _hairpin()
    owner[PATH_PROPERTY] = _curve_object(scene, "hairpin", points).name
    owner["path_speed"] = owner["initial_speed"] = TOP_SPEED
    for prop, value in LIMITS.items():
        owner[prop] = value
    return scene, rig, points


def _drift_scene(out_dir: Path) -> str:
    """The sedan rig drifting through the hairpin at DRIFT, baked, rendered, and plotted beside the grip driver
    (drift_angle 0: the same driver on the same tyres); returns the bake's summary and the slip each held."""
    scene, rig, points = _hairpin_scene("drive_drift")
    scene.objects[rig.chassis][DRIFT_ANGLE] = DRIFT
    report = bake_vehicle(scene, rig, "sedan")
    reading = read_rig(scene, rig, "sedan")
    solved = simulate_rig(reading, scene.gravity)
    grip = simulate_rig(dataclasses.replace(reading, drift=0.0), scene.gravity)
    runs = {f"drift at {math.degrees(DRIFT):g} deg": solved.poses[:, solved.body_index("chassis")],
            "grip driver": grip.poses[:, grip.body_index("chassis")]}
    behind = reading.vehicle.spec.com_ahead_of_rear_axle
    _plot_drift(out_dir / "drive_drift_compare.png", points, runs, reading.dt, HEADING_EVERY * reading.substeps,
                behind)
    _render_rig(scene, reading, solved, "drive_drift", f"sedan rig drifting through a hairpin at "
                f"{math.degrees(DRIFT):g} deg", out_dir, ())
    held = [math.degrees(np.abs(_slip(poses, behind)[1]).max()) for poses in runs.values()]
    return f"{report.summary()}; rear slip up to {held[0]:.1f} deg (the grip driver's: {held[1]:.1f} deg)"


def run_driving_demo(out_dir: Path, lines: list[str]) -> None:
    """Write the live-drive and path-following pictures and driving.blend to `out_dir` (module docstring)."""
    with registered():
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        first = bpy.context.scene
        scene = demo_scene("drive_live")
        owner = scene.objects[build_car_rig(scene, "sedan", "Car", (0.0, 0.0, 0.0), slalom=False).chassis]
        session = live_take(scene, owner)
        _plot_controls(out_dir / "drive_live_controls.png", session)
        reading = read_rig(scene, find(scene, owner)[0], "sedan")
        _render_rig(scene, reading, simulate_rig(reading, scene.gravity), "drive_live",
                    "sedan rig, driven live (scripted keys), take baked", out_dir, (scene.frame_end,))
        lines.append(f"drive_live: {session.drive.steps} frames driven live, take kept and baked: "
                     f"{owner[RESULT_PROPERTY]}")

        scene, rig, points = _hairpin_scene("drive_path")
        report = bake_vehicle(scene, rig, "sedan")
        reading = read_rig(scene, rig, "sedan")
        spec = reading.vehicle.spec
        solved = simulate_rig(reading, scene.gravity)
        runs = {"driver": _rear_axle(solved, spec)[0],
                "pure pursuit": _rear_axle(simulate_rig(dataclasses.replace(reading, limits=None), scene.gravity),
                                           spec)[0]}
        _plot_compare(out_dir / "drive_path_compare.png", points, runs, reading.dt)
        _render_rig(scene, reading, solved, "drive_path", "sedan rig following a hairpin as a driver", out_dir,
                    (scene.frame_end,))
        lines.append(f"drive_path: {report.summary()}")
        lines.append(f"drive_drift: {_drift_scene(out_dir)}")
        lines.append("drive_fly: " + _craft_scene("drive_fly", "helicopter", _flight(), FLIGHT, out_dir,
                                                  "helicopter rig flying an S, banked into its turns"))
        lines.append("drive_boat: " + _craft_scene("drive_boat", "speedboat", _bend(), BOAT, out_dir,
                                                   "speedboat rig following a bend by differential thrust"))
        bpy.data.scenes.remove(first)
        bpy.ops.wm.save_as_mainfile(filepath=str(out_dir / "driving.blend"), check_existing=False)


if __name__ == "__main__":
    run_demo_script(run_driving_demo, DOC_FIGURES, "The driving demo's pictures (module docstring)")

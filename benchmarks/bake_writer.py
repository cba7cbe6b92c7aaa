"""Keys per second: Symplex's bulk bake writer against frame-by-frame keyframe_insert, in one run.

Usage: python benchmarks/bake_writer.py [--objects 20] [--bones 20] [--frames 1000] [--repeat 3]
(with a Python that has bpy, e.g. .venv/bin/python or .venv42/bin/python).

Both sides key the same motion: objects in XYZ Euler (location + rotation, 6 channels) and the bones
of one armature in quaternions (4 channels; they only rotate). The writer is
bridge.bake.write_trajectory, conversion from world poses included, into a new action; the baseline
sets the channel values and calls keyframe_insert once per channel group per frame, the way a
Python bake loop does it (values precomputed, no frame changes, so it is the cheapest such loop).
Prints one table row per case and the speed-up; the best of --repeat runs counts for each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import addon  # noqa: E402
from addon.bridge import bake, compat  # noqa: E402
from addon.bridge.build import edit_armature  # noqa: E402
from addon.bridge.read import Target  # noqa: E402
from addon.solver.trajectory import Trajectory  # noqa: E402

FPS = 25.0


def spinning(names: list[str], frames: int, origins: np.ndarray) -> Trajectory:
    """Every body turns about a tilted axis through its own rest origin, one sample per frame."""
    t = np.arange(frames) / FPS
    poses = np.zeros((frames, len(names), 7))
    for b in range(len(names)):
        axis = np.array([1.0, 2.0, 3.0 + b]) / np.linalg.norm([1.0, 2.0, 3.0 + b])
        half = 0.5 * (2.0 + 0.1 * b) * t
        poses[:, b, :3] = origins[b]
        poses[:, b, 3] = np.cos(half)
        poses[:, b, 4:] = np.sin(half)[:, None] * axis
    n = len(t)
    return Trajectory(t, names, poses, np.zeros((n, 0)), [], np.zeros(n), np.zeros(n), np.zeros(n - 1))


def make_objects(count: int) -> list[bpy.types.Object]:
    objs = []
    for i in range(count):
        obj = bpy.data.objects.new(f"bench object {i}", None)
        bpy.context.scene.collection.objects.link(obj)
        obj.location = (i, 0.0, 0.0)
        objs.append(obj)
    return objs


def make_armature(count: int) -> bpy.types.Object:
    arm = bpy.data.objects.new("bench armature", bpy.data.armatures.new("bench armature"))
    bpy.context.scene.collection.objects.link(arm)
    with edit_armature(arm) as bones:
        for i in range(count):
            bone = bones.new(f"bone {i}")
            bone.head, bone.tail = (i, 0.0, 0.0), (i, 0.0, 1.0)
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
    return arm


def clear(ids) -> None:
    for owner in ids:
        channels = compat.assigned(owner)
        compat.assign(owner, None)
        if channels is not None:
            compat.remove_action(channels.action)


def writer(objs, arm, traj_objects, traj_bones) -> tuple[float, int]:
    targets_o = [Target(o.name, o.name) for o in objs]
    targets_b = [Target(pb.name, arm.name, pb.name) for pb in arm.pose.bones]
    start = time.perf_counter()
    keys = bake.write_trajectory(traj_objects, targets_o, bake.BakeOptions("bench", 1, FPS))
    keys += bake.write_trajectory(traj_bones, targets_b, bake.BakeOptions("bench", 1, FPS))
    seconds = time.perf_counter() - start
    for owner in objs + [arm]:
        bake.free_bake([owner])
    return seconds, keys


def keyframe_insert_loop(objs, arm, traj_objects, traj_bones) -> tuple[float, int]:
    """The same motion keyed the usual way; values come from the writer's own channel maths."""
    from addon.bridge.rotations import pose_matrices, rotation_channels

    m = pose_matrices(traj_objects.poses)
    euler = [rotation_channels(m[:, b, :3, :3], "XYZ")[1] for b in range(len(objs))]
    quats = [rotation_channels(pose_matrices(traj_bones.poses)[:, b, :3, :3], "QUATERNION")[1]
             for b in range(len(arm.pose.bones))]
    frames = 1 + traj_objects.t * FPS
    keys = 0
    start = time.perf_counter()
    for k, frame in enumerate(frames):
        for b, obj in enumerate(objs):
            obj.location = m[k, b, :3, 3]
            obj.rotation_euler = euler[b][k]
            obj.keyframe_insert("location", frame=frame)
            obj.keyframe_insert("rotation_euler", frame=frame)
            keys += 6
        for b, pb in enumerate(arm.pose.bones):
            pb.rotation_quaternion = quats[b][k]
            pb.keyframe_insert("rotation_quaternion", frame=frame)
            keys += 4
    seconds = time.perf_counter() - start
    clear(objs + [arm])
    return seconds, keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20)
    parser.add_argument("--bones", type=int, default=20)
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    addon.register()
    try:
        objs = make_objects(args.objects)
        arm = make_armature(args.bones)
        traj_objects = spinning([o.name for o in objs], args.frames, np.array([o.location for o in objs]))
        rest = np.array([arm.matrix_world @ pb.bone.head_local for pb in arm.pose.bones])
        traj_bones = spinning([pb.name for pb in arm.pose.bones], args.frames, rest)
        best = {}
        for _ in range(args.repeat):
            for name, run in (("bulk writer (foreach_set)", writer), ("keyframe_insert loop", keyframe_insert_loop)):
                seconds, keys = run(objs, arm, traj_objects, traj_bones)
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, keys)
    finally:
        addon.unregister()

    print(f"Blender {bpy.app.version_string}: {args.objects} objects (XYZ Euler) + {args.bones} bones "
          f"(quaternion) x {args.frames} frames, best of {args.repeat}")
    print(f"{'method':28s} {'keys':>9s} {'seconds':>9s} {'keys/s':>12s}")
    for name, (seconds, keys) in best.items():
        print(f"{name:28s} {keys:9d} {seconds:9.3f} {keys / seconds:12.0f}")
    (w_s, w_k), (b_s, b_k) = best["bulk writer (foreach_set)"], best["keyframe_insert loop"]
    print(f"speed-up: {(w_k / w_s) / (b_k / b_s):.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

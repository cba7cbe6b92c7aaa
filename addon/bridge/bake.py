"""Trajectory -> keyframes: write body poses onto objects and pose bones, and free a bake again.

`write_trajectory(trajectory, targets, options, root)` turns world poses into channel values
(location and rotation in each object's or bone's rotation mode, continuous across frames; bones
relative to their rest pose and parent), buffers one array per F-curve, and writes each with
keyframe_points.add + foreach_set into NEW actions ("Symplex <object>"). Channels Symplex does not
own are copied over from the artist's action so everything else keeps playing; in the channels it
owns, the artist's keys before the first baked frame and after the last are kept bit for bit, and the
last `blend_frames` frames blend into them (handback.py). Only when every
action is complete are they assigned; on any error before that they are deleted, so there is never
a half-written bake. Energy and constraint residual go to custom properties ["symplex_energy"] and
["symplex_residual"] on the root object. `free_bake` puts the artist's actions and values back.
See reference.py for what a bake records on its action.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import bpy
import numpy as np

from ..solver.trajectory import Trajectory
from . import compat, reference
from .handback import blend_into, keys_after
from .read import Target
from .rotations import affine_inverse, pose_matrices, rotation_channels

DIAGNOSTICS = ("symplex_energy", "symplex_residual")
LINEAR = 1  # enum value of 'LINEAR' in Keyframe.interpolation
ANIMATED = "rigid_body.kinematic"  # a rigid body's Animated flag
_KEY_ARRAYS = ("co", "handle_left", "handle_right")
_KEY_ENUMS = ("interpolation", "handle_left_type", "handle_right_type", "easing", "type")
_KEY_FLOATS = ("back", "amplitude", "period")


@dataclass(frozen=True)
class BakeOptions:
    """How to key: frame of trajectory time 0, frames per second, every `stride`-th sample, reduction, and
    how many frames at the end of the trajectory blend into the artist's keys (handback.py)."""

    setup: str
    frame_start: float
    fps: float
    stride: int = 1
    reduce_tolerance: float | None = None
    blend_frames: int = 0


@dataclass
class _Channel:
    data_path: str
    index: int
    group: str
    values: np.ndarray


def reduce_keys(frames: np.ndarray, values: np.ndarray, tol: float) -> np.ndarray:
    """Indices of the keys to keep: a key goes when the line between kept neighbours is within `tol`.

    Greedy from the first key: each segment grows while linear interpolation between its ends
    reproduces every sample inside it to `tol`. The first and last keys always stay.
    """
    n = len(frames)
    if n <= 2:
        return np.arange(n)
    keep = [0]
    start = 0
    end = 2
    while end < n:
        inner = slice(start + 1, end)
        s = (frames[inner] - frames[start]) / (frames[end] - frames[start])
        line = values[start] + s * (values[end] - values[start])
        if np.max(np.abs(line - values[inner])) > tol:
            start = end - 1
            keep.append(start)
        end += 1
    keep.append(n - 1)
    return np.array(keep)


def _rigid(matrices: np.ndarray) -> np.ndarray:
    """Homogeneous matrices with unit-length rotation columns (scale removed)."""
    out = np.array(matrices, dtype=float)
    out[..., :3, :3] /= np.linalg.norm(out[..., :3, :3], axis=-2, keepdims=True)
    return out


def _scale_part(matrix: np.ndarray) -> np.ndarray:
    """D with matrix = rigid(matrix) @ D."""
    return affine_inverse(_rigid(matrix)) @ matrix


def _transform_channels(owner, prefix: str, mode: str, local: np.ndarray, keys_location: bool, group: str,
                        frame_start: float) -> list[_Channel]:
    """Location and rotation channels of local matrices (S, 4, 4) for `prefix` on `owner`."""
    channels = []
    if keys_location:
        for i in range(3):
            channels.append(_Channel(prefix + "location", i, group, local[:, i, 3]))
    path, n = reference.rotation_path(mode)
    previous = np.array([reference.start_value(owner, prefix + path, i, frame_start) for i in range(n)])
    rot = _rigid(local)[:, :3, :3]
    name, values = rotation_channels(rot, mode, previous)
    for i in range(values.shape[1]):
        channels.append(_Channel(prefix + name, i, group, values[:, i]))
    return channels


def _object_channels(obj, world: dict[str, np.ndarray], frame_start: float) -> list[_Channel]:
    def matrix_of(o) -> np.ndarray:
        ref = np.array(reference.object_matrix(o, frame_start))
        if o.name in world:
            return world[o.name] @ _scale_part(ref)
        return ref

    if obj.parent is None:
        parent = np.eye(4)
    elif obj.parent_type == "OBJECT":
        parent = matrix_of(obj.parent) @ np.array(obj.matrix_parent_inverse)
    else:
        basis = reference.basis_at(obj, "", obj.rotation_mode, frame_start)
        parent = np.array(reference.object_matrix(obj, frame_start) @ basis.inverted())
    local = affine_inverse(parent) @ matrix_of(obj)
    return _transform_channels(obj, "", obj.rotation_mode, local, True, "Object Transforms", frame_start)


def _armature_channels(arm, targets: list[Target], world: dict[str, np.ndarray], frame_start: float) -> list[_Channel]:
    arm_matrix = np.array(reference.object_matrix(arm, frame_start))
    to_armature = affine_inverse(arm_matrix)
    body_of_bone = {t.bone: t.body for t in targets}
    pose: dict[str, np.ndarray] = {}

    def parent_frame(pb) -> np.ndarray:
        offset = np.array(reference.rest_offset(pb))
        return offset if pb.parent is None else pose_of(pb.parent) @ offset

    def pose_of(pb) -> np.ndarray:
        """Armature-space pose matrices of pb, (S, 4, 4) or (4, 4) when it does not move."""
        if pb.name not in pose:
            if pb.name in body_of_bone:
                bone_rest = arm_matrix @ np.array(pb.bone.matrix_local)
                pose[pb.name] = to_armature @ world[body_of_bone[pb.name]] @ _scale_part(bone_rest)
            else:
                pose[pb.name] = parent_frame(pb) @ np.array(reference.bone_basis(arm, pb, frame_start))
        return pose[pb.name]

    channels = []
    for target in targets:
        if not target.write:
            continue
        pb = arm.pose.bones[target.bone]
        basis = affine_inverse(parent_frame(pb)) @ pose_of(pb)
        keys_location = not pb.bone.use_connect and not all(pb.lock_location)
        channels += _transform_channels(
            arm, reference.bone_prefix(pb.name), pb.rotation_mode, basis, keys_location, pb.name, frame_start
        )
    return channels


def _read_keys(fcurve) -> dict[str, np.ndarray]:
    """Every stored attribute of `fcurve`'s keys as arrays (co and handles flattened to 2n), as stored."""
    n = len(fcurve.keyframe_points)
    keys = {}
    for name in _KEY_ARRAYS:
        keys[name] = np.empty(2 * n, dtype=np.float32)
    for name, dtype in [(e, np.int32) for e in _KEY_ENUMS] + [(f, np.float32) for f in _KEY_FLOATS]:
        keys[name] = np.empty(n, dtype=dtype)
    for name, buf in keys.items():
        fcurve.keyframe_points.foreach_get(name, buf)
    return keys


def _write_keys(fcurve, keys: dict[str, np.ndarray]) -> None:
    """Add keys to an empty `fcurve` with the attribute arrays `keys` (_read_keys' form, in frame order)."""
    fcurve.keyframe_points.add(len(keys["interpolation"]))
    for name, buf in keys.items():
        fcurve.keyframe_points.foreach_set(name, buf)


def _take(keys: dict[str, np.ndarray], which: np.ndarray) -> dict[str, np.ndarray]:
    """The keys where boolean `which` (n,) holds."""
    pairs = np.repeat(which, 2)
    return {name: buf[pairs] if name in _KEY_ARRAYS else buf[which] for name, buf in keys.items()}


def _bridged(around, at: np.ndarray, frames: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`frames`, `values` with the artist's curve `around` (keys at frames `at`) sampled at each whole frame
    between its last key before the first baked frame and that frame, and between the last baked frame and its
    first key after: Blender would otherwise interpolate from the kept key to the baked one there, which is not
    the artist's curve. The curve then passes through the artist's at every frame outside the bake."""
    first, last = frames[0], frames[-1]
    before, after = at[at < np.float32(first)], at[at > np.float32(last)]
    lead = np.arange(np.floor(before.max()) + 1.0, first) if len(before) else np.empty(0)
    tail = np.arange(last + 1.0, np.ceil(after.min())) if len(after) else np.empty(0)
    if not len(lead) and not len(tail):
        return frames, values
    curve = [np.array([around.evaluate(float(f)) for f in fs]) for fs in (lead, tail)]
    return np.concatenate([lead, frames, tail]), np.concatenate([curve[0], np.asarray(values, dtype=float), curve[1]])


def _fill(fcurve, frames: np.ndarray, values: np.ndarray, tol: float | None, around=None) -> int:
    """Write keys into an empty F-curve in bulk; returns how many were baked.

    Keys are LINEAR, in frame order, with both handles on the key, so no fcurve.update() (sorting
    and handle recalculation, the slowest step by far) is needed; Blender recalculates handles
    itself if the artist later switches the keys to Bezier. The keys of F-curve `around` (the
    artist's channel) before the first baked frame and after the last are kept bit for bit around them, and
    the whole frames between them and the bake are keyed from `around` (_bridged).
    """
    kept = _read_keys(around) if around is not None else None
    if kept is not None and len(kept["interpolation"]):
        frames, values = _bridged(around, kept["co"][0::2], frames, values)
    if tol is not None:
        keep = reduce_keys(frames, values, tol)
        frames, values = frames[keep], values[keep]
    n = len(frames)
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2], co[1::2] = frames, values
    baked = {name: co for name in _KEY_ARRAYS}
    baked["interpolation"] = np.full(n, LINEAR, dtype=np.int32)
    if kept is None or not len(kept["interpolation"]):
        fcurve.keyframe_points.add(n)
        for name, buf in baked.items():
            fcurve.keyframe_points.foreach_set(name, buf)
        return n
    at = kept["co"][0::2]
    before, after = _take(kept, at < np.float32(frames[0])), _take(kept, at > np.float32(frames[-1]))
    nb = len(before["interpolation"])
    fcurve.keyframe_points.add(nb + n + len(after["interpolation"]))
    merged = _read_keys(fcurve)  # Blender's defaults for new keys, kept on the baked ones
    for name, buf in merged.items():
        width = 2 if name in _KEY_ARRAYS else 1
        buf[:nb * width] = before[name]
        buf[(nb + n) * width:] = after[name]
        if name in baked:
            buf[nb * width:(nb + n) * width] = baked[name]
        fcurve.keyframe_points.foreach_set(name, buf)
    return n


def _copy_fcurve(source, channels: compat.ActionChannels) -> None:
    """Copy F-curve `source` (keys, handles, interpolation, extrapolation) into `channels`."""
    group = source.group.name if source.group is not None else ""
    fcurve = compat.new_fcurve(channels, source.data_path, source.array_index, group)
    _write_keys(fcurve, _read_keys(source))
    fcurve.extrapolation = source.extrapolation
    fcurve.mute = source.mute
    fcurve.update()


def _build_action(owner, channels: list[_Channel], frames: np.ndarray, options: BakeOptions
                  ) -> tuple[compat.ActionChannels, int]:
    """A new action for `owner`: its artist's channels Symplex does not own copied, each owned channel baked
    with the artist's keys outside the baked frames kept and the last `options.blend_frames` blended into them
    (where the artist keyed the channel after the bake range: else there is nothing to blend into)."""
    action = compat.new_action(f"Symplex {owner.name}", owner)
    original = reference.original_channels(owner)
    owned = {(c.data_path, c.index) for c in channels}
    if getattr(owner, "rigid_body", None) is not None:
        owned.add((ANIMATED, 0))  # the bake holds the body Animated (_assign): its keyed flag stays behind
    for source in compat.fcurves(original):
        if (source.data_path, source.array_index) not in owned:
            _copy_fcurve(source, action)
    keys = 0
    for channel in channels:
        fcurve = compat.new_fcurve(action, channel.data_path, channel.index, channel.group)
        source = compat.find_fcurve(original, channel.data_path, channel.index)
        values = channel.values
        if source is not None and options.blend_frames and keys_after(source, frames[-1] - options.blend_frames):
            values = blend_into(values, frames, source.evaluate, options.blend_frames)
        keys += _fill(fcurve, frames, values, options.reduce_tolerance, source)
    return action, keys


def _assign(owner, action: compat.ActionChannels, channels: list[_Channel], setup: str) -> None:
    """Play `action` on `owner`, recording on it what Free Bake needs to undo that."""
    old_bake = reference.baked_channels(owner)
    previous = reference.original_channels(owner)
    saved = reference.saved_values(owner)
    for c in channels:
        key = reference.channel_key(c.data_path, c.index)
        if key not in saved and not c.data_path.startswith('["'):
            saved[key] = reference.current_value(owner, c.data_path, c.index)
    record = action.action
    record[reference.MARK] = setup
    if previous is not None:
        record[reference.PREVIOUS] = previous.action
        record[reference.PREVIOUS_SLOT] = previous.slot_identifier
    record[reference.SAVED] = saved
    record["symplex_had_animation_data"] = int(
        owner.animation_data is not None if old_bake is None else old_bake.action.get("symplex_had_animation_data", 1)
    )
    kinematic = -1
    if isinstance(owner, bpy.types.Object) and owner.rigid_body is not None:
        kinematic = int(reference.original_kinematic(owner))
        owner.rigid_body.kinematic = True  # the keys drive it; Bullet must not move it
    record[reference.KINEMATIC] = kinematic
    created = [c.data_path[2:-2] for c in channels if c.data_path.startswith('["')]
    record[reference.PROPERTIES] = created
    compat.assign(owner, action)
    if old_bake is not None:
        compat.remove_action(old_bake.action)


def write_trajectory(trajectory: Trajectory, targets: tuple[Target, ...] | list[Target], options: BakeOptions,
                     root: str | None = None) -> int:
    """Bake `trajectory` onto `targets` (and diagnostics onto object `root`). Returns the keys written.

    All or nothing: the new actions are assigned only once every one of them is written.
    """
    samples = np.arange(0, len(trajectory.t), max(int(options.stride), 1))
    frames = options.frame_start + trajectory.t[samples] * options.fps
    matrices = pose_matrices(trajectory.poses[samples])
    world = {name: matrices[:, i] for i, name in enumerate(trajectory.bodies)}
    missing = [t.body for t in targets if t.body not in world]
    if missing:
        raise KeyError(f"trajectory has no body named {missing[0]!r} (bodies: {', '.join(trajectory.bodies)})")

    by_owner: dict[str, list[Target]] = defaultdict(list)
    for target in targets:
        if target.write or target.bone:  # an armature needs every body bone to place the written ones
            by_owner[target.object].append(target)
    owner_channels: dict[str, list[_Channel]] = {}
    for name, owned in by_owner.items():
        obj = bpy.data.objects[name]
        if any(t.bone for t in owned):
            owner_channels[name] = _armature_channels(obj, owned, world, options.frame_start)
        else:
            owner_channels[name] = _object_channels(obj, world, options.frame_start)
    if root:
        owner_channels.setdefault(root, [])
        owner_channels[root] += [
            _Channel(f'["{DIAGNOSTICS[0]}"]', 0, "Symplex", np.asarray(trajectory.energy)[samples]),
            _Channel(f'["{DIAGNOSTICS[1]}"]', 0, "Symplex", np.asarray(trajectory.constraint_residual)[samples]),
        ]

    built: dict[str, compat.ActionChannels] = {}
    keys = 0
    try:
        for name, channels in owner_channels.items():
            built[name], n = _build_action(bpy.data.objects[name], channels, frames, options)
            keys += n
    except BaseException:
        for action in built.values():
            compat.remove_action(action.action)
        raise
    for name, action in built.items():
        obj = bpy.data.objects[name]
        if name == root:
            for prop, values in zip(DIAGNOSTICS, (trajectory.energy, trajectory.constraint_residual)):
                obj[prop] = float(values[0])
        _assign(obj, action, owner_channels[name], options.setup)
    return keys


def _set_value(owner, data_path: str, index: int, value: float) -> None:
    head, _, attr = data_path.rpartition(".")
    container = owner.path_resolve(head) if head else owner
    getattr(container, attr)[index] = value


def key_object(obj: bpy.types.Object, frames: np.ndarray, world: np.ndarray, action_name: str) -> None:
    """Give unparented `obj` a new, assigned action keying it along world matrices (N, 4, 4) at `frames`.

    For authoring input motion (a driven part of a preset), not for baking: nothing is recorded.
    """
    local = world @ _scale_part(np.array(reference.object_matrix(obj, frames[0])))
    channels = _transform_channels(obj, "", obj.rotation_mode, local, True, "Object Transforms", frames[0])
    action = compat.new_action(action_name, obj)
    for channel in channels:
        _fill(compat.new_fcurve(action, channel.data_path, channel.index, channel.group), frames, channel.values, None)
    compat.assign(obj, action)


def baked_objects(scene: bpy.types.Scene, setup: str) -> list[bpy.types.Object]:
    """Objects of `scene` currently playing a bake of setup `setup`."""
    out = []
    for obj in scene.objects:
        baked = reference.baked_channels(obj)
        if baked is not None and baked.action.get(reference.MARK) == setup:
            out.append(obj)
    return out


def free_bake(owners) -> int:
    """Undo the Symplex bakes of `owners` (IDs): previous action, values and flags back. Returns how many."""
    freed = 0
    for owner in owners:
        baked = reference.baked_channels(owner)
        if baked is None:
            continue
        record = baked.action
        previous = reference.original_channels(owner)
        saved = reference.saved_values(owner)
        compat.assign(owner, previous)
        if previous is None and not record.get("symplex_had_animation_data", 1):
            owner.animation_data_clear()
        for key, value in saved.items():
            path, _, index = key.rpartition("|")
            _set_value(owner, path, int(index), value)
        if record.get(reference.KINEMATIC, -1) >= 0 and getattr(owner, "rigid_body", None) is not None:
            owner.rigid_body.kinematic = bool(record[reference.KINEMATIC])
        for prop in record.get(reference.PROPERTIES, []):
            if prop in owner:
                del owner[prop]
        compat.remove_action(record)
        freed += 1
    return freed

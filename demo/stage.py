"""Stage a baked mechanism for preview renders: a camera fitted to its motion, a backdrop with a grid,
ground pins and tracks, a colour per body, Workbench lighting and a caption.

`stage(scene, trajectory, objects, mechanism, title)` adds these to `scene` (in their own collection)
and returns a `Stage` whose `caption(frame)` updates the text before each render. The framing comes
from the trajectory itself (every body's bounding box at every solver step), never from stepping the
scene. Mechanisms that move in planes normal to Y are shot from the front looking along +Y, in front
of a gridded backdrop; anything else from the front right and above, over a gridded floor. Both
views are orthographic, so the fit is exact: the image takes the motion's shape (within ASPECTS),
centred, with MARGIN around it and a caption band on top. Nothing here changes the bake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix

from addon.solver.model import WORLD, Mechanism
from addon.solver.trajectory import Trajectory
from addon.bridge import reference
from addon.bridge.read import scene_fps
from addon.bridge.rotations import matrix_to_quat, pose_matrices

LONG_SIDE = 960  # pixels along the image's longer side
ASPECTS = (9 / 16, 16 / 9)  # narrowest and widest image (width / height); a side view takes its motion's shape
MARGIN = 0.08  # of the motion's largest extent, on every side
CAPTION = 0.16  # height of the caption band (two lines) above the motion, of its largest extent
PALETTE = ((0.90, 0.38, 0.17), (0.12, 0.53, 0.90), (0.36, 0.72, 0.25), (0.95, 0.70, 0.10), (0.62, 0.36, 0.80),
           (0.10, 0.74, 0.76), (0.90, 0.30, 0.55), (0.55, 0.45, 0.30))
BACKDROP = (0.94, 0.94, 0.92, 1.0)
GRID = (0.80, 0.81, 0.83, 1.0)
GROUND = (0.22, 0.23, 0.26, 1.0)
PLANAR = 1e-6  # out-of-plane motion (m, rad) below which a mechanism is shot from the side


@dataclass
class Stage:
    """What `stage` added: the camera, the caption, and what `ghosts` needs to place faded copies."""

    camera: bpy.types.Object
    text: bpy.types.Object
    title: str
    frame_start: float
    fps: float
    side_view: bool
    collection: bpy.types.Collection
    behind: np.ndarray  # (3,) world offset that puts a copy just behind the bodies, seen from the camera

    def caption(self, frame: float, note: str = "") -> None:
        t = (frame - self.frame_start) / self.fps
        self.text.data.body = f"{self.title}\n{note or f'frame {frame:g}    t = {t:.2f} s'}"

    def ghosts(self, trajectory: Trajectory, objects: dict[str, bpy.types.Object],
               count: int) -> list[bpy.types.Object]:
        """Faded copies of every body at `count` evenly spaced samples of the trajectory (remove them after use)."""
        samples = np.linspace(0, len(trajectory.t) - 1, count).round().astype(int)
        matrices = pose_matrices(trajectory.poses[samples])
        copies = []
        for b, name in enumerate(trajectory.bodies):
            obj = objects.get(name)
            if obj is None:
                continue
            scale = _scale_part(obj, self.frame_start)
            faded = tuple(0.35 * np.asarray(obj.color[:3]) + 0.65 * np.asarray(BACKDROP[:3])) + (1.0,)
            for k, matrix in enumerate(matrices[:, b]):
                copy = bpy.data.objects.new(f"{name} ghost {k}", obj.data)
                world = matrix @ scale
                world[:3, 3] += self.behind * (1.0 + k / count)
                copy.matrix_world = Matrix(world.tolist())
                copy.color = faded
                self.collection.objects.link(copy)
                copies.append(copy)
        return copies


def motion_points(trajectory: Trajectory, objects: dict[str, bpy.types.Object], frame: float) -> np.ndarray:
    """World corners (N * B * 8, 3) of every body's object bounding box at every sample of the trajectory."""
    matrices = pose_matrices(trajectory.poses)  # (N, B, 4, 4) body frames
    points = []
    for b, name in enumerate(trajectory.bodies):
        obj = objects.get(name)
        if obj is None:
            continue
        scale = _scale_part(obj, frame)
        corners = np.array([tuple(c) for c in obj.bound_box]) @ scale[:3, :3].T + scale[:3, 3]
        world = np.einsum("nij,cj->nci", matrices[:, b, :3, :3], corners) + matrices[:, b, None, :3, 3]
        points.append(world.reshape(-1, 3))
    return np.concatenate(points)


def _scale_part(obj: bpy.types.Object, frame: float) -> np.ndarray:
    """D (4, 4) with the object's reference matrix = rigid part @ D: its body frame to its own axes."""
    ref = reference.object_matrix(obj, frame)
    return np.array(reference.rigid_part(ref).inverted() @ ref)


def moves_in_xz_planes(trajectory: Trajectory) -> bool:
    """True when every body keeps its Y and turns only about Y over the whole trajectory."""
    poses = trajectory.poses
    if np.ptp(poses[:, :, 1], axis=0).max(initial=0.0) > PLANAR:
        return False
    rot = pose_matrices(poses)[:, :, :3, :3]
    relative = matrix_to_quat(np.einsum("nbij,bkj->nbik", rot, rot[0]))
    return bool(np.abs(relative[..., [1, 3]]).max(initial=0.0) < PLANAR)


def nice_step(length: float) -> float:
    """A grid spacing of 1, 2 or 5 times a power of ten giving roughly eight lines over `length`."""
    raw = max(length, 1e-9) / 8.0
    power = 10.0 ** math.floor(math.log10(raw))
    return min((m * power for m in (1.0, 2.0, 5.0, 10.0)), key=lambda s: abs(math.log(s / raw)))


def _prop(name: str, mesh: bpy.types.Mesh, location, rotation, colour, collection) -> bpy.types.Object:
    """A staging object (not part of the mechanism) with its own colour."""
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    obj.rotation_mode = "QUATERNION"
    obj.rotation_quaternion = tuple(matrix_to_quat(np.asarray(rotation, dtype=float)))
    obj.color = colour
    collection.objects.link(obj)
    return obj


def _box(name: str, size, location, rotation, colour, collection) -> bpy.types.Object:
    mesh = bpy.data.meshes.new(name)
    sx, sy, sz = (s / 2 for s in size)
    verts = [(x, y, z) for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)]
    mesh.from_pydata(verts, [], [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)])
    return _prop(name, mesh, location, rotation, colour, collection)


def _disc(name: str, radius: float, thickness: float, location, axis, colour, collection) -> bpy.types.Object:
    """A short cylinder of `radius` about `axis` (a hinge pin seen end on)."""
    n = 24
    angles = 2 * np.pi * np.arange(n) / n
    ring = np.column_stack([np.full(n, 0.0), radius * np.cos(angles), radius * np.sin(angles)])
    verts = np.vstack([ring + [-thickness / 2, 0, 0], ring + [thickness / 2, 0, 0]])
    faces = [tuple(range(n - 1, -1, -1)), tuple(range(n, 2 * n))]
    faces += [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(v) for v in verts], [], faces)
    return _prop(name, mesh, location, _along(axis), colour, collection)


def _along(direction) -> np.ndarray:
    """A rotation whose X axis is unit `direction` (for boxes laid along it)."""
    x = np.asarray(direction, dtype=float)
    x = x / np.linalg.norm(x)
    helper = np.array([0.0, 0.0, 1.0]) if abs(x[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    y = np.cross(helper, x)
    y /= np.linalg.norm(y)
    return np.column_stack([x, y, np.cross(x, y)])


def _ground(mechanism: Mechanism, trajectory: Trajectory, size: float, toward_camera: np.ndarray, collection) -> None:
    """Dark pins at hinges to the world (in front of the bodies) and dark tracks behind sliders on the world."""
    for joint in mechanism.joints:
        if WORLD not in (joint.parent, joint.child) or joint.type in ("free", "fixed"):
            continue
        anchor = np.asarray(joint.anchor, dtype=float)
        if joint.type == "prismatic":
            body = joint.child if joint.parent == WORLD else joint.parent
            axis = np.asarray(joint.axis, dtype=float) / np.linalg.norm(joint.axis)
            travel = (trajectory.poses[:, trajectory.body_index(body), :3] - anchor) @ axis
            lo, hi = float(travel.min()) - 0.06 * size, float(travel.max()) + 0.06 * size
            centre = anchor + axis * (lo + hi) / 2
            _box(f"{joint.name} track", (hi - lo, 0.012 * size, 0.012 * size), centre - toward_camera * 0.1 * size,
                 _along(axis), GROUND, collection)
        else:
            _disc(f"{joint.name} pin", 0.018 * size, 0.01 * size, anchor + toward_camera * 0.1 * size, joint.axis,
                  GROUND, collection)


def _backdrop(prefix: str, centre: np.ndarray, extent: tuple[float, float], axes: tuple[int, int], front: float,
              collection) -> None:
    """A plane through `centre` spanning `extent` along world axes `axes` (its normal is the third
    axis), with grid lines on round coordinates just in front of it (on the `front` = +-1 side)."""
    normal = 3 - axes[0] - axes[1]
    thin = 0.001 * max(extent)
    size = np.full(3, thin)
    size[list(axes)] = extent
    _box(f"{prefix} backdrop", size, centre, np.eye(3), BACKDROP, collection)
    step = nice_step(max(extent))
    for along, across in (axes, axes[::-1]):
        half = extent[axes.index(along)] / 2
        for k in range(math.ceil((centre[along] - half) / step), math.floor((centre[along] + half) / step) + 1):
            line = size.copy()
            line[along] = 0.015 * step
            where = np.array(centre, dtype=float)
            where[along] = k * step
            where[normal] += 2 * thin * front
            _box(f"{prefix} grid {'xyz'[along]}={k * step:g}", line, where, np.eye(3), GRID, collection)


def image_size(aspect: float) -> tuple[int, int]:
    """(width, height) in pixels of an image as close to `aspect` as ASPECTS allow, LONG_SIDE on its long side."""
    aspect = min(max(aspect, ASPECTS[0]), ASPECTS[1])
    if aspect >= 1.0:
        return LONG_SIDE, 2 * round(LONG_SIDE / aspect / 2)
    return 2 * round(LONG_SIDE * aspect / 2), LONG_SIDE


def _render_settings(scene: bpy.types.Scene, side_view: bool, size: tuple[int, int]) -> None:
    """Workbench, object colours with outlines; flat light for a side view (every face looks at the camera)."""
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "Standard"  # colours as given, not tone-mapped to grey
    shading = scene.display.shading
    shading.light = "FLAT" if side_view else "STUDIO"
    shading.color_type = "OBJECT"
    shading.show_object_outline = True
    shading.object_outline_color = (0.1, 0.1, 0.12)
    shading.show_cavity = not side_view
    if scene.world is None:
        scene.world = bpy.data.worlds.new(f"{scene.name} world")
    scene.world.color = BACKDROP[:3]


SIDE = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # camera axes in world: looks along +Y, Z up


def three_quarter() -> np.ndarray:
    """Camera axes (columns right, up, back) looking from the front right and above, Z up."""
    back = np.array([1.0, -1.4, 0.8]) / np.linalg.norm([1.0, -1.4, 0.8])
    right = np.cross([0.0, 0.0, 1.0], back)
    right /= np.linalg.norm(right)
    return np.column_stack([right, np.cross(back, right), back])


@dataclass(frozen=True)
class _View:
    """An orthographic camera: world rotation (columns right, up, back), location, ortho scale, image size."""

    rotation: np.ndarray
    location: np.ndarray
    ortho_scale: float
    pixels: tuple[int, int]


def fit_view(points: np.ndarray, rotation: np.ndarray) -> _View:
    """The orthographic view along -rotation[:, 2] whose image holds every point (N, 3), centred, with
    MARGIN on every side, a CAPTION band on top, and the image's shape following the points' (within ASPECTS)."""
    local = points @ rotation  # (right, up, back)
    lo, hi = local.min(axis=0), local.max(axis=0)
    size = float(np.max(hi[:2] - lo[:2]))
    lo[:2] -= MARGIN * size
    hi[:2] += MARGIN * size
    hi[1] += CAPTION * size
    pixels = image_size((hi[0] - lo[0]) / (hi[1] - lo[1]))
    aspect = pixels[0] / pixels[1]
    width = max(hi[0] - lo[0], (hi[1] - lo[1]) * aspect)
    centre = rotation @ np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, hi[2] + 10.0 * size])
    return _View(rotation, centre, float(max(width, width / aspect)), pixels)


def _camera(scene: bpy.types.Scene, view: _View, size: float, collection) -> bpy.types.Object:
    data = bpy.data.cameras.new(f"{scene.name} camera")
    data.type, data.ortho_scale, data.sensor_fit = "ORTHO", view.ortho_scale, "AUTO"  # scale spans the long side
    data.clip_start = 0.001 * size
    data.clip_end = 1000.0 * size
    camera = bpy.data.objects.new(f"{scene.name} camera", data)
    camera.matrix_world = Matrix([[*view.rotation[i], view.location[i]] for i in range(3)] + [[0, 0, 0, 1]])
    collection.objects.link(camera)
    scene.camera = camera
    return camera


def _caption_object(scene: bpy.types.Scene, camera: bpy.types.Object, view: _View, size: float,
                    collection) -> bpy.types.Object:
    """A text object riding on the camera, in the image's top left corner."""
    aspect = view.pixels[0] / view.pixels[1]
    depth = 0.01 * size  # in front of everything, behind the near clip plane's 0.001 size
    half_w = view.ortho_scale / 2 * (1.0 if aspect >= 1 else aspect)
    half_h = half_w / aspect
    data = bpy.data.curves.new(f"{scene.name} caption", "FONT")
    data.size = min(0.075 * half_h, 0.1 * half_w)  # two lines of about 30 characters fit either way
    text = bpy.data.objects.new(f"{scene.name} caption", data)
    text.parent = camera
    text.location = (-half_w + 0.05 * min(half_w, half_h), half_h - 0.05 * min(half_w, half_h) - data.size, -depth)
    text.color = GROUND
    collection.objects.link(text)
    return text


def stage(scene: bpy.types.Scene, trajectory: Trajectory, objects: dict[str, bpy.types.Object],
          mechanism: Mechanism, title: str) -> Stage:
    """Add camera, backdrop, grid, ground, caption and colours for rendering the bake of `trajectory`.

    objects maps body names to the objects the bake moves; they get one palette colour each.
    """
    for i, name in enumerate(trajectory.bodies):
        if name in objects:
            objects[name].color = PALETTE[i % len(PALETTE)] + (1.0,)
    frame = float(scene.frame_start)
    points = motion_points(trajectory, objects, frame)
    anchors = [j.anchor for j in mechanism.joints if WORLD in (j.parent, j.child)]
    if anchors:
        points = np.vstack([points, np.asarray(anchors, dtype=float)])
    lo, hi = points.min(axis=0), points.max(axis=0)
    size = float(np.max(hi - lo))
    collection = bpy.data.collections.new(f"{scene.name} stage")
    scene.collection.children.link(collection)
    side_view = moves_in_xz_planes(trajectory)
    view = fit_view(points, SIDE if side_view else three_quarter())
    if side_view:
        behind = np.array([view.location[0], hi[1] + 0.5 * size, view.location[2]])
        seen = 1.5 * view.ortho_scale
        _backdrop(scene.name, behind, (seen, seen), (0, 2), -1.0, collection)
    else:
        floor = np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2] - MARGIN * size])
        footprint = tuple(float(e) for e in (hi[:2] - lo[:2]) + 4.0 * MARGIN * size)  # just under the motion
        _backdrop(scene.name, floor, footprint, (0, 1), 1.0, collection)
    _render_settings(scene, side_view, view.pixels)
    camera = _camera(scene, view, size, collection)
    toward_camera = view.rotation[:, 2]  # the camera's +Z: from the scene towards the camera
    _ground(mechanism, trajectory, size, toward_camera, collection)
    text = _caption_object(scene, camera, view, size, collection)
    result = Stage(camera, text, title, frame, scene_fps(scene), side_view, collection, -0.02 * size * toward_camera)
    result.caption(frame)
    return result

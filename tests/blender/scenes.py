"""Scenes built in code for the bridge, UI and demo tests, plus helpers to read baked results back.

Every builder makes a NEW scene so tests never see each other's objects. The `symplex` fixture
registers the checkout's add-on for a test module and unregisters it afterwards (the extension
install test expects nothing registered when it starts).
"""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

import addon
from addon.bridge import compat, job, read
from addon.bridge.build import edit_armature, ensure_rigidbody_world
from addon.bridge.rotations import quat_to_matrix

_counter = [0]


def bake_to_end(scene, setup_name: str):
    """Bake one setup to the end through the operator's job: (report, trajectory, job)."""
    baker = job.BakeJob(scene, setup_name)
    while not baker.advance(budget_seconds=3600.0):
        pass
    report = baker.finish(scene)
    return report, baker.trajectory(), baker


@pytest.fixture(scope="module")
def symplex():
    """The add-on registered for the whole test module."""
    if hasattr(bpy.types.Scene, "symplex"):
        yield
        return
    addon.register()
    try:
        yield
    finally:
        addon.unregister()


def cylinder_mesh(name: str, radius: float, width: float) -> bpy.types.Mesh:
    """A closed 32-sided cylinder with its axle along local Z (a wheel: it needs a rest rotation to roll)."""
    n = 32
    verts = [(radius * math.cos(2 * math.pi * i / n), radius * math.sin(2 * math.pi * i / n), z)
             for z in (-0.5 * width, 0.5 * width) for i in range(n)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], [tuple(range(n)), tuple(range(n, 2 * n))])
    return mesh


def new_scene(prefix: str = "test", frames: int = 50, fps: int = 25) -> bpy.types.Scene:
    _counter[0] += 1
    scene = bpy.data.scenes.new(f"{prefix}_{_counter[0]}")
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps, scene.render.fps_base = fps, 1.0
    return scene


def add_setup(scene, name: str, kind: str, **pointers):
    setup = scene.symplex.setups.add()
    setup.name = name
    setup.kind = kind
    for key, value in pointers.items():
        setattr(setup, key, value)
    return setup


# ----------------------------------------------------------------------------------------------
# Armatures by hand


def chain_armature(scene, n: int = 3, length: float = 1.0, mode: str = "XYZ", angle: float = 0.6,
                   connected: bool = True):
    """n bones hanging along -Z from the origin, each a hinge about its local X (world X), simulated.

    The top bone starts at `angle` about its X axis. Returns (armature object, setup).
    """
    data = bpy.data.armatures.new(f"{scene.name} chain")
    arm = bpy.data.objects.new(f"{scene.name} chain", data)
    scene.collection.objects.link(arm)
    with edit_armature(arm) as bones:
        parent = None
        for i in range(n):
            bone = bones.new(f"b{i}")
            bone.head = (0.0, 0.0, -i * length)
            bone.tail = (0.0, 0.0, -(i + 1) * length)
            bone.roll = 0.0
            if parent is not None:
                bone.parent = parent
                bone.use_connect = connected
            parent = bone
    for i, pb in enumerate(arm.pose.bones):
        pb.rotation_mode = mode
        pb.lock_rotation = (False, True, True)
        pb.lock_location = (True, True, True)
        pb.symplex.simulate = True
        pb.symplex.mass = 1.0
        pb.symplex.radius = 0.05
        if i == 0:
            set_bone_angle(pb, 0, angle)
    setup = add_setup(scene, arm.name, "ARMATURE", armature=arm)
    return arm, setup


def set_bone_angle(pb, axis: int, angle: float) -> None:
    """Rotate pose bone `pb` by `angle` about its local axis, in its own rotation mode."""
    rot = Matrix.Rotation(angle, 3, "XYZ"[axis])
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = rot.to_quaternion()
    elif pb.rotation_mode == "AXIS_ANGLE":
        q = rot.to_quaternion()
        pb.rotation_axis_angle = (q.angle, *q.axis)
    else:
        pb.rotation_euler = rot.to_euler(pb.rotation_mode)


# ----------------------------------------------------------------------------------------------
# Rigid bodies by hand, with Blender's own rigid body constraints only


BOX_FACES = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def box_mesh(name: str, size, centre=(0.0, 0.0, 0.0)) -> bpy.types.Mesh:
    """A closed box mesh of `size` around `centre` (mesh coordinates), faces wound outward."""
    mesh = bpy.data.meshes.new(name)
    sx, sy, sz = (s / 2 for s in size)
    cx, cy, cz = centre
    verts = [(cx + x, cy + y, cz + z) for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)]
    mesh.from_pydata(verts, [], BOX_FACES)
    return mesh


def box_object(scene, collection, name: str, size, location, mass: float = 1.0, passive: bool = False):
    obj = bpy.data.objects.new(name, box_mesh(name, size))
    collection.objects.link(obj)
    obj.location = location
    world = ensure_rigidbody_world(scene)
    world.collection.objects.link(obj)
    obj.rigid_body.type = "PASSIVE" if passive else "ACTIVE"
    obj.rigid_body.mass = mass
    obj.rigid_body.collision_shape = "BOX"
    return obj


def constraint_object(scene, collection, name: str, kind: str, obj1, obj2, location, rotation=(0.0, 0.0, 0.0)):
    empty = bpy.data.objects.new(name, None)
    collection.objects.link(empty)
    empty.location = location
    empty.rotation_euler = rotation
    ensure_rigidbody_world(scene).constraints.objects.link(empty)
    rbc = empty.rigid_body_constraint
    rbc.type = kind
    rbc.object1 = obj1
    rbc.object2 = obj2
    return empty


def rigid_four_bar(scene, crank_speed: float = 4.0):
    """Ground (passive), crank, coupler and rocker boxes in the X-Z plane, four HINGE constraints.

    Hinge axes are the empties' local Z turned onto world Y. Returns (collection, setup, bodies).
    """
    coll = bpy.data.collections.new(f"{scene.name} four-bar")
    scene.collection.children.link(coll)
    ground = box_object(scene, coll, f"{scene.name} ground", (0.6, 0.05, 0.05), (0.2, 0.0, -0.05), passive=True)
    # Crank from O2 = (0,0,0) up to A = (0,0,0.1); coupler A -> B; rocker O4 = (0.4,0,0) -> B.
    a = Vector((0.0, 0.0, 0.1))
    b = Vector((0.2987218950531729, 0.0, 0.2823875802126918))
    o4 = Vector((0.4, 0.0, 0.0))

    def link(name, p, q, mass):
        d = q - p
        obj = box_object(scene, coll, name, (d.length, 0.02, 0.02), (p + q) / 2, mass)
        obj.rotation_euler = (0.0, -math.atan2(d.z, d.x), 0.0)
        return obj

    crank = link(f"{scene.name} crank", Vector((0, 0, 0)), a, 0.05)
    coupler = link(f"{scene.name} coupler", a, b, 0.175)
    rocker = link(f"{scene.name} rocker", o4, b, 0.15)
    turn_z_to_y = (-math.pi / 2, 0.0, 0.0)
    hinge = [
        constraint_object(scene, coll, f"{scene.name} O2", "HINGE", ground, crank, (0, 0, 0), turn_z_to_y),
        constraint_object(scene, coll, f"{scene.name} A", "HINGE", crank, coupler, a, turn_z_to_y),
        constraint_object(scene, coll, f"{scene.name} B", "HINGE", coupler, rocker, b, turn_z_to_y),
        constraint_object(scene, coll, f"{scene.name} O4", "HINGE", rocker, ground, o4, turn_z_to_y),
    ]
    hinge[0].symplex.v0 = (crank_speed, 0, 0, 0, 0, 0)
    setup = add_setup(scene, coll.name, "RIGID_BODIES", collection=coll)
    return coll, setup, (crank, coupler, rocker), hinge


# ----------------------------------------------------------------------------------------------
# Reading results back


def world_pose_matrices(trajectory, body: str, samples) -> np.ndarray:
    poses = trajectory.poses[samples, trajectory.body_index(body)]
    m = np.zeros((len(poses), 4, 4))
    m[:, :3, :3] = quat_to_matrix(poses[:, 3:])
    m[:, :3, 3] = poses[:, :3]
    m[:, 3, 3] = 1.0
    return m


def rigid(matrix) -> np.ndarray:
    m = np.array(matrix, dtype=float)
    m[:3, :3] /= np.linalg.norm(m[:3, :3], axis=0)
    return m


def evaluated(scene, obj):
    """`obj` as `scene` evaluates it now (a scene other than the context one never writes back)."""
    return obj.evaluated_get(scene.view_layers[0].depsgraph)


def object_world(scene, obj) -> np.ndarray:
    return rigid(evaluated(scene, obj).matrix_world)


def bone_world(scene, arm, bone: str) -> np.ndarray:
    arm_eval = evaluated(scene, arm)
    return rigid(arm_eval.matrix_world @ arm_eval.pose.bones[bone].matrix)


def set_frame(scene, frame: float) -> None:
    """Go to `frame` (subframes too)."""
    whole = math.floor(frame)
    scene.frame_set(int(whole), subframe=float(frame - whole))


def fcurve_data(obj) -> dict[tuple[str, int], np.ndarray]:
    """(data_path, index) -> keyframe co array of every F-curve `obj` plays."""
    out = {}
    for fc in compat.fcurves(compat.assigned(obj)):
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[(fc.data_path, fc.array_index)] = co
    return out


def scene_state(scene) -> dict:
    """Everything a bake could touch in `scene`: actions, assignments, transforms, custom properties."""
    state = {"actions": sorted(a.name for a in bpy.data.actions)}
    for obj in scene.objects:
        channels = compat.assigned(obj)
        entry = {
            "action": None if channels is None else (channels.action.name, channels.slot_identifier),
            "matrix": tuple(tuple(round(x, 6) for x in row) for row in obj.matrix_basis),
            # Blender 4.2 stores a registered property group the first time it is read, with its
            # defaults; that storage is not a change to the scene.
            "props": sorted(k for k in obj.keys() if k != "symplex"),
            "kinematic": None if obj.rigid_body is None else obj.rigid_body.kinematic,
        }
        if obj.pose is not None:
            entry["pose"] = {
                pb.name: tuple(tuple(round(x, 6) for x in row) for row in pb.matrix_basis) for pb in obj.pose.bones
            }
        state[obj.name] = entry
    for setup in scene.symplex.setups:
        state[f"setup {setup.name}"] = (setup.diagnostics.status, setup.diagnostics.keys)
    return state


def read_scene(scene, setup_name: str):
    return read.read_setup(scene, read.find_setup(scene, setup_name))

"""Mechanism -> scene content: what Add Preset builds, ready to bake, and what read.py reads back.

`build_rigid_bodies(scene, mech)` makes one mesh object per body (a box with the body's inertia, or a
small sphere for a point mass) with a Blender rigid body and Symplex custom mass properties, a passive
"ground" object standing for the world, and one empty per joint carrying a Blender rigid body
constraint (HINGE for revolute about its Z, SLIDER / PISTON along its X for prismatic / cylindrical,
POINT for ball, FIXED, GENERIC for universal and planar, GENERIC_SPRING when the joint has a spring,
plus a MOTOR empty for a velocity motor); q0 and v0 are stored on the constraint empty. A prescribed
joint from the world makes its body Animated, keyed every frame along the curve.
A mechanism with colliders is built for the 'maximal' method (the setup's method is set to it): each
body's object is its collider's shape (shape_mesh.py) with the matching Blender collision shape and
friction sqrt(collider friction) (Bullet multiplies two such, giving the preset's geometric mean;
bullet.py); each world collider is a passive object of the collection (a plane as a square plane
mesh large enough for the bodies), and the first of them anchors the joints to the world. What
a Blender rigid body cannot carry is refused naming the body or collider: more than one collider on a
body, a body without one, a plane on a body, a non-hull collider off the body's origin or axes (a hull's
vertices are moved into the body frame instead), joints to the world with no world collider to hang on.
`build_armature(scene, mech)` makes one bone per body instead (revolute, prismatic, ball, universal
and fixed joints; revolute and universal limits become IK limits; loops become the armature's loop
list; prescribed joints become keyed bones).
Both put the mechanism's origin at a given location (Add Preset: the 3D cursor), refuse what they
cannot build before building anything, and register a setup. Reading the result back gives the same
Mechanism; for the armature the bodies are re-expressed in bone frames, and `build_armature` returns
that expected Mechanism.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from dataclasses import dataclass, field, replace

import bmesh
import bpy
import numpy as np
from mathutils import Matrix, Vector

from ..solver.curves import evaluate
from ..solver.lie import frame_from_axis, rotvec_to_matrix
from ..solver.mass import inertia_matrix
from ..solver.model import WORLD, Body, Collider, Joint, Mechanism, MechanismError, Vec3
from . import bullet, compat, reference
from .bake import key_object
from .rotations import matrix_to_quat, quat_to_matrix
from .shape_mesh import COLLISION_SHAPES, collider_mesh

ORIGIN: Vec3 = (0.0, 0.0, 0.0)
POINT_RADIUS = 0.05
MIN_THICKNESS = 0.02


class BuildError(MechanismError):
    """A Mechanism feature the scene cannot express; names the joint or body."""


@dataclass(frozen=True)
class Built:
    """What a build made: the setup's name, the object (or bone) made for each body and for each collider, and
    the constraint object made for each joint (rigid bodies; its name is the joint's name as Symplex reads it)."""

    setup: str
    collection: str
    objects: dict[str, str]
    colliders: dict[str, str] = field(default_factory=dict)
    joints: dict[str, str] = field(default_factory=dict)


def _matrix(position, rotation: np.ndarray) -> Matrix:
    m = Matrix.Identity(4)
    for i in range(3):
        for j in range(3):
            m[i][j] = float(rotation[i, j])
        m[i][3] = float(position[i])
    return m


def _inertia_vector(m: np.ndarray) -> tuple[float, ...]:
    return (m[0, 0], m[1, 1], m[2, 2], m[0, 1], m[0, 2], m[1, 2])


def box_for(mass: float, inertia) -> tuple[np.ndarray, np.ndarray] | None:
    """(dimensions (3,), principal axes (3, 3) in body axes) of the solid box with this inertia; None for a point."""
    moments, axes = np.linalg.eigh(inertia_matrix(inertia))
    if mass <= 0 or moments.max() < 1e-12:
        return None
    a, b, c = moments
    dims = np.sqrt(np.maximum(6.0 / mass * np.array([b + c - a, a + c - b, a + b - c]), 0.0))
    if np.linalg.det(axes) < 0:
        axes[:, 2] *= -1.0
    return np.maximum(dims, MIN_THICKNESS), axes


def _body_mesh(name: str, body: Body) -> bpy.types.Mesh:
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    box = box_for(body.mass, body.inertia)
    if box is None:
        bmesh.ops.create_uvsphere(bm, u_segments=16, v_segments=8, radius=POINT_RADIUS)
        placement = Matrix.Translation(Vector(body.com))
    else:
        dims, axes = box
        bmesh.ops.create_cube(bm, size=1.0)
        placement = _matrix(body.com, axes) @ Matrix.Diagonal(Vector((*dims, 1.0)))
    bmesh.ops.transform(bm, matrix=placement, verts=bm.verts)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def _link(obj: bpy.types.Object, collection: bpy.types.Collection) -> bpy.types.Object:
    collection.objects.link(obj)
    return obj


def ensure_rigidbody_world(scene: bpy.types.Scene):
    """The scene's rigid body world with its object and constraint collections."""
    if scene.rigidbody_world is None:
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
            bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    if world.collection is None:
        world.collection = bpy.data.collections.new("RigidBodyWorld")
    if world.constraints is None:
        world.constraints = bpy.data.collections.new("RigidBodyConstraints")
    return world


def _frame_with_x(axis, hint=None) -> np.ndarray:
    """Right-handed frame whose X column is `axis` (and Y near `hint`)."""
    f = frame_from_axis(np.asarray(axis, dtype=float), None if hint is None else np.asarray(hint, dtype=float))
    return np.column_stack([f[:, 2], f[:, 0], f[:, 1]])


def _set_axis(rbc, kind: str, i: int, lower: float, upper: float) -> None:
    name = f"{kind}_{'xyz'[i]}"
    setattr(rbc, f"use_limit_{name}", True)
    setattr(rbc, f"limit_{name}_lower", lower)
    setattr(rbc, f"limit_{name}_upper", upper)


def _limit_pairs(joint: Joint, n: int) -> list[tuple[float, float]]:
    """(lower, upper) of each of the joint's first `n` coordinates; infinite where the joint has no limit."""
    return list(zip(joint.lower or (-math.inf,) * n, joint.upper or (math.inf,) * n))


# Blender constraint type, the joint-axis role, and each dof's (kind, local axis) per joint type.
_RIGID_TYPES = {
    "fixed": ("FIXED", "z", ()),
    "ball": ("POINT", "z", (("ang", 0), ("ang", 1), ("ang", 2))),
    "revolute": ("HINGE", "z", (("ang", 2),)),
    "prismatic": ("SLIDER", "x", (("lin", 0),)),
    "cylindrical": ("PISTON", "x", (("ang", 0), ("lin", 0))),
    "universal": ("GENERIC", "x", (("ang", 0), ("ang", 1))),
    "planar": ("GENERIC", "z", (("lin", 0), ("lin", 1), ("ang", 2))),
}


def _constraint_object(name: str, joint: Joint, objects: dict[str, bpy.types.Object], collection,
                       world) -> bpy.types.Object:
    kind, role, dofs = _RIGID_TYPES[joint.type]
    if joint.stiffness > 0 or joint.damping > 0:
        kind = "GENERIC_SPRING"  # the locked-axis pattern written below reads back as the same joint
    rotation = _frame_with_x(joint.axis, joint.axis2) if role == "x" else frame_from_axis(
        np.asarray(joint.axis, dtype=float), None if joint.axis2 is None else np.asarray(joint.axis2, dtype=float)
    )
    empty = _link(bpy.data.objects.new(name, None), collection)
    empty.empty_display_type = "ARROWS"
    empty.empty_display_size = 0.2
    empty.rotation_mode = "QUATERNION"
    empty.matrix_world = _matrix(joint.anchor, rotation)
    world.constraints.objects.link(empty)
    rbc = empty.rigid_body_constraint
    rbc.type = kind
    rbc.object1 = objects[joint.parent]
    rbc.object2 = objects[joint.child]
    if kind in ("GENERIC", "GENERIC_SPRING"):
        free = set(dofs)
        for k in ("lin", "ang"):
            for i in range(3):
                if (k, i) not in free:
                    _set_axis(rbc, k, i, 0.0, 0.0)
    for (k, i), (lo, hi) in zip(dofs, _limit_pairs(joint, len(dofs))):
        if math.isfinite(lo) and math.isfinite(hi):
            _set_axis(rbc, k, i, lo, hi)
        if kind == "GENERIC_SPRING":
            suffix = ("ang_" if k == "ang" else "") + "xyz"[i]
            setattr(rbc, f"use_spring_{suffix}", True)
            setattr(rbc, f"spring_stiffness_{suffix}", joint.stiffness)
            setattr(rbc, f"spring_damping_{suffix}", joint.damping)
    settings = empty.symplex
    settings.q0 = tuple(joint.q0) + (0.0,) * (6 - len(joint.q0))
    settings.v0 = tuple(joint.v0) + (0.0,) * (6 - len(joint.v0))
    if joint.motor is not None:
        _motor_object(name, joint, objects, collection, world)
    return empty


def _motor_object(name: str, joint: Joint, objects, collection, world) -> None:
    motor = joint.motor
    empty = _link(bpy.data.objects.new(f"{name} motor", None), collection)
    empty.empty_display_type = "SINGLE_ARROW"
    empty.rotation_mode = "QUATERNION"
    empty.matrix_world = _matrix(joint.anchor, _frame_with_x(joint.axis))
    world.constraints.objects.link(empty)
    rbc = empty.rigid_body_constraint
    rbc.type = "MOTOR"
    rbc.object1 = objects[joint.parent]
    rbc.object2 = objects[joint.child]
    if joint.type == "revolute":
        rbc.use_motor_ang = True
        rbc.motor_ang_target_velocity = motor.target_velocity
    else:
        rbc.use_motor_lin = True
        rbc.motor_lin_target_velocity = motor.target_velocity
    empty.symplex.motor_gain = motor.gain


def _drive_object(scene: bpy.types.Scene, obj: bpy.types.Object, joint: Joint) -> None:
    """Key `obj` (Animated) along the prescribed coordinate of `joint`, one key per frame of the curve."""
    fps = scene.render.fps / scene.render.fps_base
    curve = joint.prescribed
    count = int(math.ceil(curve.times[-1] * fps)) + 1
    times = np.arange(count) / fps
    axis = np.asarray(joint.axis, dtype=float) / np.linalg.norm(joint.axis)
    anchor = np.asarray(joint.anchor, dtype=float)
    start = np.array(reference.object_matrix(obj, scene.frame_start))
    world = np.empty((count, 4, 4))
    for k, t in enumerate(times):
        q = evaluate(curve, float(t))
        move = np.eye(4)
        if joint.type == "revolute":
            move[:3, :3] = rotvec_to_matrix(axis * q)
            move[:3, 3] = anchor - move[:3, :3] @ anchor
        else:
            move[:3, 3] = axis * q
        world[k] = move @ start
    obj.rotation_mode = "XYZ"
    obj.rigid_body.kinematic = True
    key_object(obj, scene.frame_start + times * fps, world, f"{obj.name} drive")


def _check_constraint(joint: Joint) -> None:
    """Refuse what a Blender rigid body constraint cannot carry, before anything is built."""
    if joint.type == "fixed" and (joint.stiffness > 0 or joint.damping > 0):
        raise BuildError(f"joint {joint.name!r}: a fixed joint has no spring to hold")
    if joint.type == "ball" and (joint.lower is not None or joint.upper is not None):
        raise BuildError(f"joint {joint.name!r}: limits on a ball joint cannot be built")
    limits = _limit_pairs(joint, len(_RIGID_TYPES[joint.type][2]))
    if any(math.isfinite(lo) != math.isfinite(hi) for lo, hi in limits):
        raise BuildError(f"joint {joint.name!r}: a one-sided limit cannot be built as a rigid body constraint")
    motor = joint.motor
    if motor is not None and (motor.mode != "velocity" or joint.type not in ("revolute", "prismatic")):
        raise BuildError(
            f"joint {joint.name!r}: only velocity motors on revolute or prismatic joints can be built "
            f"(got a {motor.mode} motor on a {joint.type} joint)"
        )


def _check_buildable(mech: Mechanism) -> None:
    """Everything build_rigid_bodies refuses, checked before it builds anything."""
    if mech.springs:
        raise BuildError(f"{mech.source}: spring {mech.springs[0].name!r}: body-to-body springs cannot be built yet")
    if mech.forces:
        raise BuildError(f"{mech.source}: force {mech.forces[0].name!r}: external forces cannot be built yet")
    for joint in mech.joints:
        if joint.prescribed is not None and (joint.parent != WORLD or joint.type not in ("revolute", "prismatic")):
            raise BuildError(
                f"joint {joint.name!r}: only a revolute or prismatic joint from the world can be prescribed "
                "on rigid bodies (its body is keyed and Animated)"
            )
        if joint.rest is not None and any(abs(r) > 0 for r in joint.rest):
            raise BuildError(f"joint {joint.name!r}: a spring rest position other than 0 cannot be built")
        if joint.type == "free" and (any(joint.q0) or any(joint.v0) or joint.parent != WORLD):
            raise BuildError(f"joint {joint.name!r}: only a free joint from the world at rest can be built")
        if joint.type != "free":
            _check_constraint(joint)
    world_joints = any(WORLD in (j.parent, j.child) for j in mech.joints if j.type != "free")
    if world_joints and mech.colliders and not any(c.body == WORLD for c in mech.colliders):
        raise BuildError(f"{mech.source}: joints to the world need a passive object to hang on, and with colliders "
                         "every passive object collides; add a world collider (a ground plane) to hang them on")


def _new_collection(scene: bpy.types.Scene, name: str) -> bpy.types.Collection:
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    return collection


def _add_setup(scene, name: str, kind: str, **pointers):
    setup = scene.symplex.setups.add()
    setup.name = name
    setup.kind = kind
    for key, value in pointers.items():
        setattr(setup, key, value)
    scene.symplex.active_setup = len(scene.symplex.setups) - 1
    return setup


def _in_body_frame(collider: Collider) -> Collider:
    """`collider` at its body's origin and axes (where Blender puts a collision shape); hull vertices move there."""
    at_origin = np.allclose(collider.position, 0.0, atol=1e-12)
    aligned = abs(abs(collider.orientation[0]) - 1.0) < 1e-12
    if at_origin and aligned:
        return collider
    if collider.shape == "hull":
        rot = quat_to_matrix(np.asarray(collider.orientation, dtype=float))
        moved = np.asarray(collider.vertices, dtype=float) @ rot.T + np.asarray(collider.position, dtype=float)
        return replace(collider, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0),
                       vertices=tuple(tuple(float(x) for x in v) for v in moved))
    raise BuildError(
        f"collider {collider.name!r}: a {collider.shape} collider must sit at the origin of body {collider.body!r}, "
        f"in its axes (Blender centres a collision shape on its object); it is at {list(collider.position)} "
        f"turned {list(collider.orientation)}"
    )


def _body_colliders(mech: Mechanism) -> dict[str, Collider]:
    """The one collider of every body, in the body frame; empty when `mech` has no colliders."""
    if not mech.colliders:
        return {}
    found: dict[str, Collider] = {}
    for collider in mech.colliders:
        if collider.body == WORLD:
            continue
        if collider.shape == "plane":
            raise BuildError(f"collider {collider.name!r}: a plane on body {collider.body!r} cannot be built "
                             "(a flat active rigid body does not collide); planes belong to the world")
        if collider.body in found:
            raise BuildError(f"body {collider.body!r}: colliders {found[collider.body].name!r} and {collider.name!r}: "
                             "a Blender rigid body has one collision shape")
        found[collider.body] = _in_body_frame(collider)
    for body in mech.bodies:
        if body.name not in found:
            raise BuildError(f"body {body.name!r} has no collider: with the 'maximal' method every rigid body collides "
                             "through its collision shape, so a mechanism with colliders needs one on every body")
    return found


def _plane_extent(collider: Collider, mech: Mechanism) -> float:
    """Half side (m) of a plane collider's square: past every body's in-plane distance by half again plus 1 m."""
    normal = quat_to_matrix(np.asarray(collider.orientation, dtype=float))[:, 2]
    offsets = np.array([b.position for b in mech.bodies], dtype=float) - np.asarray(collider.position, dtype=float)
    in_plane = offsets - np.outer(offsets @ normal, normal)
    return float(math.ceil(1.5 * np.linalg.norm(in_plane, axis=1).max(initial=0.0) + 1.0))


def _world_collider(collider: Collider, mech: Mechanism, collection, world) -> bpy.types.Object:
    """A passive object carrying a world collider at its world pose."""
    extent = _plane_extent(collider, mech) if collider.shape == "plane" else 1.0
    obj = _link(bpy.data.objects.new(collider.name, collider_mesh(collider.name, collider, extent)), collection)
    obj.rotation_mode = "QUATERNION"
    obj.location = collider.position
    obj.rotation_quaternion = collider.orientation
    world.collection.objects.link(obj)
    obj.rigid_body.type = "PASSIVE"
    obj.rigid_body.collision_shape = COLLISION_SHAPES[collider.shape]
    obj.rigid_body.friction = bullet.rigid_body_friction(collider.friction)
    return obj


def _world_anchor(mech: Mechanism, collection, world, location: Vec3) -> bpy.types.Object:
    """A small passive cube at `location`, hidden in renders, standing for the world at the ends of joints (no
    colliders)."""
    ground_mesh = bpy.data.meshes.new(f"{mech.name} ground")
    ground = _link(bpy.data.objects.new(f"{mech.name} ground", ground_mesh), collection)
    ground.location = location
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=0.05)
    bm.to_mesh(ground_mesh)
    bm.free()
    ground.hide_render = True
    ground.display_type = "WIRE"
    world.collection.objects.link(ground)
    ground.rigid_body.type = "PASSIVE"
    return ground


def _moved(mech: Mechanism, offset: Vec3) -> Mechanism:
    """`mech` translated by `offset`: body positions, joint anchors and world colliders (body colliders sit in
    their body's frame). The builders refuse springs and forces before they move a mechanism."""
    d = np.asarray(offset, dtype=float)
    if not d.any():
        return mech

    def shift(point) -> Vec3:
        return tuple(float(x) for x in np.asarray(point, dtype=float) + d)

    return mech.replace(
        bodies=tuple(replace(b, position=shift(b.position)) for b in mech.bodies),
        joints=tuple(replace(j, anchor=shift(j.anchor)) for j in mech.joints),
        colliders=tuple(replace(c, position=shift(c.position)) if c.body == WORLD else c for c in mech.colliders),
    )


def build_rigid_bodies(scene: bpy.types.Scene, mech: Mechanism, location: Vec3 = ORIGIN) -> Built:
    """Rigid body objects and constraint empties for `mech` in a new collection, plus a setup.

    The mechanism's world origin (its ground) is put at `location`; nothing is built when it is refused.
    """
    _check_buildable(mech)
    shapes = _body_colliders(mech)
    mech = _moved(mech, location)
    world = ensure_rigidbody_world(scene)
    collection = _new_collection(scene, mech.name)
    objects: dict[str, bpy.types.Object] = {}
    statics = {c.name: _world_collider(c, mech, collection, world) for c in mech.colliders if c.body == WORLD}
    if any(WORLD in (j.parent, j.child) for j in mech.joints if j.type != "free"):
        objects[WORLD] = next(iter(statics.values())) if statics else _world_anchor(mech, collection, world, location)
    for body in mech.bodies:
        shape = shapes.get(body.name)
        mesh = collider_mesh(body.name, shape) if shape is not None else _body_mesh(body.name, body)
        obj = _link(bpy.data.objects.new(body.name, mesh), collection)
        obj.rotation_mode = "QUATERNION"
        obj.location = body.position
        obj.rotation_quaternion = body.orientation
        world.collection.objects.link(obj)
        obj.rigid_body.type = "ACTIVE"
        obj.rigid_body.mass = max(body.mass, 1e-3)
        obj.rigid_body.collision_shape = "BOX" if shape is None else COLLISION_SHAPES[shape.shape]
        if shape is not None:
            obj.rigid_body.friction = bullet.rigid_body_friction(shape.friction)
        obj.symplex.mass_source = "CUSTOM"
        obj.symplex.com = body.com
        obj.symplex.inertia = body.inertia
        objects[body.name] = obj
    joints: dict[str, str] = {}
    for joint in mech.joints:
        if joint.type == "free":
            continue
        joints[joint.name] = _constraint_object(joint.name, joint, objects, collection, world).name
        if joint.prescribed is not None:
            _drive_object(scene, objects[joint.child], joint)
    scene.use_gravity = True
    scene.gravity = mech.gravity
    root = objects[mech.bodies[0].name]
    setup = _add_setup(scene, mech.name, "RIGID_BODIES", collection=collection, root=root)
    if mech.colliders:
        setup.method = "maximal"
    colliders = {name: obj.name for name, obj in statics.items()}
    colliders.update({c.name: objects[body].name for body, c in shapes.items()})
    return Built(setup.name, collection.name, {n: o.name for n, o in objects.items() if n != WORLD}, colliders, joints)


# ----------------------------------------------------------------------------------------------
# Armatures


@contextlib.contextmanager
def edit_armature(arm_obj: bpy.types.Object):
    """Edit mode on `arm_obj` in a scene that holds it (context overrides; no window needed)."""
    scene = arm_obj.users_scene[0]
    layer = scene.view_layers[0]
    previous = layer.objects.active
    layer.objects.active = arm_obj
    override = dict(scene=scene, view_layer=layer, active_object=arm_obj, object=arm_obj,
                    selected_objects=[arm_obj], selected_editable_objects=[arm_obj])
    with bpy.context.temp_override(**override):
        bpy.ops.object.mode_set(mode="EDIT")
        try:
            yield arm_obj.data.edit_bones
        finally:
            bpy.ops.object.mode_set(mode="OBJECT")
    layer.objects.active = previous


def _tree(mech: Mechanism) -> tuple[list[Joint], list[Joint]]:
    """Tree joints (parent before child, one per body) and loop joints, breadth first from the world."""
    children: dict[str, list[Joint]] = {}
    for j in mech.joints:
        children.setdefault(j.parent, []).append(j)
    reached, tree, queue = {WORLD}, [], deque([WORLD])
    while queue:
        for j in children.get(queue.popleft(), []):
            if j.child not in reached:
                reached.add(j.child)
                tree.append(j)
                queue.append(j.child)
    tree_names = {j.name for j in tree}
    return tree, [j for j in mech.joints if j.name not in tree_names]


# Bone rotation mode, free rotation axes, free location axes, and the bone axis carrying joint.axis
_BONE_TYPES = {
    "revolute": ("XYZ", (0,), (), 0),
    "prismatic": ("XYZ", (), (0,), 0),
    "ball": ("QUATERNION", (0, 1, 2), (), 2),
    "universal": ("XZY", (0, 2), (), 2),  # X first (inner, axis2), Z later (outer, axis)
    "fixed": ("XYZ", (), (), 0),
}


def _bone_rotation(joint: Joint, reach: np.ndarray) -> np.ndarray:
    """Rest rotation (columns = bone X, Y, Z in world) putting joint.axis on the layout's bone axis.

    The bone's Y (its direction) points as close to `reach` (anchor -> far end) as the axis allows.
    """
    axis = np.asarray(joint.axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    if joint.type == "universal":
        z = axis
        x = np.asarray(joint.axis2, dtype=float)
        x = x - z * np.dot(x, z)
        x /= np.linalg.norm(x)
        return np.column_stack([x, np.cross(z, x), z])
    y = reach - axis * np.dot(reach, axis)
    if np.linalg.norm(y) < 1e-9:
        y = frame_from_axis(axis)[:, 0]
    y /= np.linalg.norm(y)
    if _BONE_TYPES[joint.type][3] == 0:  # axis on X
        return np.column_stack([axis, y, np.cross(axis, y)])
    return np.column_stack([np.cross(y, axis), y, axis])  # axis on Z


def _reexpress(body: Body, position: np.ndarray, rotation: np.ndarray) -> Body:
    """`body` with its frame moved to (position, rotation); com and inertia follow."""
    r_body = quat_to_matrix(np.array(body.orientation))
    com_world = np.asarray(body.position) + r_body @ np.asarray(body.com)
    to_new = rotation.T @ r_body
    inertia = to_new @ inertia_matrix(body.inertia) @ to_new.T
    return replace(
        body,
        position=tuple(float(x) for x in position),
        orientation=tuple(float(x) for x in matrix_to_quat(rotation)),
        com=tuple(float(x) for x in rotation.T @ (com_world - position)),
        inertia=tuple(float(x) for x in _inertia_vector(inertia)),
    )


def build_armature(scene: bpy.types.Scene, mech: Mechanism, location: Vec3 = ORIGIN) -> tuple[Built, Mechanism]:
    """An armature object at `location` with one simulated bone per body of `mech`, plus a setup.

    Returns what was built and the Mechanism reading it back must give (bodies in bone frames,
    tree joints named after their child bone). Everything it refuses is refused before it builds anything.
    """
    if mech.springs or mech.forces:
        raise BuildError(f"{mech.source}: springs and forces cannot be built on an armature yet")
    if mech.colliders:
        raise BuildError(f"{mech.source}: collider {mech.colliders[0].name!r}: bones do not collide; "
                         "build this preset as rigid bodies")
    tree, loops = _tree(mech)
    body_of = {b.name: b for b in mech.bodies}
    anchors: dict[str, list[np.ndarray]] = {}
    for j in mech.joints:
        for end in (j.parent, j.child):
            anchors.setdefault(end, []).append(np.asarray(j.anchor, dtype=float))
    rest: dict[str, np.ndarray] = {}
    lengths: dict[str, float] = {}
    ik_limits: dict[str, list[tuple[str, float, float]]] = {}
    for joint in tree:
        if joint.type not in _BONE_TYPES:
            raise BuildError(f"joint {joint.name!r}: a {joint.type} joint cannot be built as a bone")
        if joint.motor is not None or joint.damping > 0 or joint.stiffness > 0.99:
            raise BuildError(f"joint {joint.name!r}: motors, damping and stiffness above 0.99 cannot be built on a bone")
        body = body_of[joint.child]
        anchor = np.asarray(joint.anchor, dtype=float)
        r_body = quat_to_matrix(np.array(body.orientation))
        points = [p for p in anchors[body.name] if np.linalg.norm(p - anchor) > 1e-9]
        points.append(np.asarray(body.position) + r_body @ np.asarray(body.com))
        far = max(points, key=lambda p: np.linalg.norm(p - anchor))
        lengths[body.name] = max(float(np.linalg.norm(far - anchor)), 0.1)
        rest[body.name] = _bone_rotation(joint, far - anchor)
        ik_limits[body.name] = _ik_limits(joint)
    for joint in loops:
        _loop_axis(joint, rest)

    arm_data = bpy.data.armatures.new(mech.name)
    arm = bpy.data.objects.new(mech.name, arm_data)
    arm.location = location
    scene.collection.objects.link(arm)
    with edit_armature(arm) as edit_bones:
        for joint in tree:
            bone = edit_bones.new(joint.child)
            bone.head = joint.anchor
            bone.tail = Vector(joint.anchor) + Vector((0.0, 0.0, lengths[joint.child]))
            bone.matrix = _matrix(joint.anchor, rest[joint.child])
            if joint.parent != WORLD:
                bone.parent = edit_bones[joint.parent]
    expected_joints = []
    for joint in tree:
        pb = arm.pose.bones[joint.child]
        mode, free_rot, free_loc, _ = _BONE_TYPES[joint.type]
        pb.rotation_mode = mode
        pb.lock_rotation = [i not in free_rot for i in range(3)]
        pb.lock_location = [i not in free_loc for i in range(3)]
        pb.lock_scale = (True, True, True)
        body = body_of[joint.child]
        settings = pb.symplex
        settings.simulate = joint.prescribed is None
        settings.mass = body.mass
        settings.mass_source = "CUSTOM"
        bone_body = _reexpress(body, np.asarray(joint.anchor, dtype=float), rest[joint.child])
        settings.com = bone_body.com
        settings.inertia = bone_body.inertia
        settings.v0 = tuple(joint.v0) + (0.0,) * (6 - len(joint.v0))
        for i in range(3):
            setattr(pb, f"ik_stiffness_{'xyz'[i]}", joint.stiffness if i in free_rot else 0.0)
        _set_ik_limits(pb, ik_limits[joint.child])
        _pose_bone(arm, pb, joint, rest[joint.child], scene)
        expected_joints.append(
            replace(
                joint,
                name=joint.child,
                axis=tuple(float(x) for x in np.asarray(joint.axis) / np.linalg.norm(joint.axis)),
                q0=tuple(joint.q0) or (0.0,) * joint.ndof,
                v0=tuple(joint.v0) or (0.0,) * joint.ndof,
            )
        )
    expected_bodies = {j.child: _reexpress(body_of[j.child], np.asarray(j.anchor, dtype=float), rest[j.child]) for j in tree}
    expected_joints += _armature_loops(arm, loops, rest)
    collection = arm.users_collection[0]
    setup = _add_setup(scene, mech.name, "ARMATURE", armature=arm, root=arm)
    expected = _moved(mech.replace(bodies=tuple(expected_bodies[b.name] for b in mech.bodies),
                                   joints=tuple(expected_joints)), location)
    return Built(setup.name, collection.name, {b.name: b.name for b in mech.bodies}), expected


# Bone rotation axis of each coordinate of the joints whose limits a bone can carry as IK limits.
_IK_AXES = {"revolute": (0,), "universal": (2, 0)}


def _ik_limits(joint: Joint) -> list[tuple[str, float, float]]:
    """The joint's limits as (bone axis, min, max) IK limits; refused when Blender cannot hold them
    (it allows -pi <= min <= 0 <= max <= pi)."""
    if joint.lower is None and joint.upper is None:
        return []
    if joint.type not in _IK_AXES:
        raise BuildError(f"joint {joint.name!r}: limits on a {joint.type} joint cannot be built on a bone")
    limits = []
    for axis, (lo, hi) in zip(_IK_AXES[joint.type], _limit_pairs(joint, joint.ndof)):
        if math.isinf(lo) and math.isinf(hi):
            continue
        if not (-math.pi <= lo <= 0.0 <= hi <= math.pi):
            raise BuildError(
                f"joint {joint.name!r}: limits [{lo:g}, {hi:g}] cannot be bone IK limits, which need "
                "-pi <= lower <= 0 <= upper <= pi"
            )
        limits.append(("xyz"[axis], lo, hi))
    return limits


def _set_ik_limits(pb, limits: list[tuple[str, float, float]]) -> None:
    for name, lo, hi in limits:
        setattr(pb, f"use_ik_limit_{name}", True)
        setattr(pb, f"ik_min_{name}", lo)
        setattr(pb, f"ik_max_{name}", hi)


def _pose_bone(arm, pb, joint: Joint, rest_rotation: np.ndarray, scene) -> None:
    """Pose `pb` at the joint's q0, or key it along its prescribed curve."""
    q0 = np.zeros(joint.ndof) if not joint.q0 else np.asarray(joint.q0, dtype=float)
    if joint.type == "revolute":
        pb.rotation_euler = (q0[0], 0.0, 0.0)
    elif joint.type == "prismatic":
        pb.location = (q0[0], 0.0, 0.0)
    elif joint.type == "universal":
        pb.rotation_euler = (q0[1], 0.0, q0[0])
    elif joint.type == "ball":
        joint_frame = frame_from_axis(np.asarray(joint.axis, dtype=float))
        world_rel = joint_frame @ rotvec_to_matrix(q0) @ joint_frame.T
        local = rest_rotation.T @ world_rel @ rest_rotation
        pb.rotation_quaternion = tuple(matrix_to_quat(local))
    if joint.prescribed is None:
        return
    channels = compat.assigned(arm) or compat.new_action(f"{arm.name} keys", arm)
    compat.assign(arm, channels)
    path = f'pose.bones["{bpy.utils.escape_identifier(pb.name)}"].' + (
        "rotation_euler" if joint.type == "revolute" else "location"
    )
    fcurve = compat.new_fcurve(channels, path, 0, pb.name)
    curve = joint.prescribed
    fps = scene.render.fps / scene.render.fps_base
    n = len(curve.times)
    fcurve.keyframe_points.add(n)
    co = np.empty(2 * n)
    co[0::2] = scene.frame_start + np.asarray(curve.times) * fps
    co[1::2] = curve.values
    fcurve.keyframe_points.foreach_set("co", co)
    fcurve.keyframe_points.foreach_set("interpolation", np.full(n, 1, dtype=np.int32))
    fcurve.update()


def _loop_ends(joint: Joint) -> tuple[str, str]:
    """(bone A, target) of a loop joint: the target is the world when either end is."""
    return (joint.parent, joint.child) if joint.parent != WORLD else (joint.child, joint.parent)


def _loop_axis(joint: Joint, rest: dict[str, np.ndarray]) -> int | None:
    """The bone-A axis (0, 1, 2) a hinge loop turns about, None for a ball loop; refuses other loops."""
    if joint.type not in ("revolute", "ball"):
        raise BuildError(f"joint {joint.name!r}: a {joint.type} loop cannot be built on an armature")
    if joint.type == "ball":
        return None
    parent = _loop_ends(joint)[0]
    local = rest[parent].T @ (np.asarray(joint.axis) / np.linalg.norm(joint.axis))
    k = int(np.argmax(np.abs(local)))
    if abs(abs(local[k]) - 1.0) > 1e-6:
        raise BuildError(f"joint {joint.name!r}: a hinge loop must lie along an axis of bone {parent!r}")
    return k


def _armature_loops(arm, loops: list[Joint], rest: dict[str, np.ndarray]) -> list[Joint]:
    expected = []
    for joint in loops:
        parent, child = _loop_ends(joint)
        item = arm.data.symplex.loops.add()
        item.name = joint.name
        item.bone_a = parent
        rot = rest[parent]
        item.point = tuple(rot.T @ (np.asarray(joint.anchor) - np.asarray(arm.pose.bones[parent].bone.head_local)))
        if child == WORLD:
            item.target = "WORLD"
        else:
            item.target = "BONE"
            item.bone_b = child
        k = _loop_axis(joint, rest)
        if k is not None:
            item.type = "HINGE"
            item.axis = "XYZ"[k]
            expected.append(Joint(joint.name, "revolute", parent, child, joint.anchor, tuple(float(x) for x in rot[:, k])))
        else:
            item.type = "BALL"
            expected.append(Joint(joint.name, "ball", parent, child, joint.anchor, tuple(float(x) for x in rot[:, 2])))
    return expected

"""Rigid bodies -> bodies and joints: the reader of a RIGID_BODIES setup (read.py dispatches to it).

Rigid bodies (kind RIGID_BODIES: every object of the setup's collection, nested ones included, or of
the whole scene):
  body frame = object origin and world rotation at the start frame; mass from the rigid body; centre
  of mass at the origin and inertia of the collision shape filling the object's dimensions (dx, dy,
  dz; CAPSULE, CYLINDER, CONE along local Z with r = max(dx, dy) / 2, h = dz), or custom values:
    BOX, CONVEX_HULL, MESH, COMPOUND  Ixx = m (dy^2 + dz^2) / 12 (and cyclic)
    SPHERE (r = max(dx, dy, dz) / 2)   I = 2 m r^2 / 5
    CYLINDER                           Izz = m r^2 / 2, Ixx = Iyy = m (3 r^2 + h^2) / 12
    CONE (about its centroid)          Izz = 3 m r^2 / 10, Ixx = Iyy = m (3 r^2 / 20 + 3 h^2 / 80)
    CAPSULE (cylinder of length h - 2r plus two hemispheres, masses split by volume)
  With Mass Properties 'Mesh' the object's own closed mesh, filled with the given density, gives the
  mass, centre of mass and inertia instead (meshmass.py; exact polyhedral integrals).
  Passive (or not Dynamic) objects are part of the world (Animated passive ones are not supported
  yet). An Animated active body held by one hinge or slider to the world drives the mechanism: that
  joint is prescribed, its coordinate sampled from the keys at every solver step. Animated is read at
  the start frame, so a body keyed Animated until the start (Blender's own hand-over) is simulated.
  Rigid body constraints map to joints with the constraint object's origin as anchor: FIXED fixed,
  POINT ball, HINGE revolute about its local Z, SLIDER prismatic and PISTON cylindrical along its
  local X, GENERIC / GENERIC_SPRING by their pattern of locked axes (an axis is locked when its limit
  is on with lower == upper), MOTOR a velocity servo on the hinge or slider between the same objects,
  about the motor object's local X. Limits on a free axis (HINGE limit_ang_z, SLIDER limit_lin_x,
  PISTON limit_ang_x and limit_lin_x, a GENERIC axis with lower < upper) become the joint's lower
  and upper bounds on that coordinate, rigid inelastic stops in the solver; a GENERIC axis with
  lower > upper is free, as in Bullet. Ball and free joints take no limits. GENERIC_SPRING springs
  (the same stiffness and damping on every free axis) become the joint's spring and damper; on a
  ball or free joint the rotation spring is isotropic, k/2 |rotation from the reference|^2.
  Rigid bodies live in the setup's collection or, with Whole Scene, anywhere in the scene; their
  constraint objects are read wherever they live (rigid_scope.py: Blender's Connect puts them in
  the Scene Collection): every constraint naming a body of the setup is a joint. A disabled one is
  skipped with a warning, and is an error when its body would then fly free. Friction is combined
  as Bullet combines it; damping and restitution are not simulated and are listed in `ignored` with
  what Bullet would do with them (bullet.py).
  Joints are oriented so every body hangs from the world; bodies no joint connects get a free joint.
  Collisions (method 'maximal' only; the other methods ignore contact, so their setups read no
  shapes): every rigid body's collision shape and friction becomes a Collider (colliders.py), on
  its body, or on the world for passive objects of the collection and passive objects of the
  scene's Rigid Body World collection; a flat passive object is an infinite plane. New setups keep
  the 'tree' default: pick Maximal for contact (an explicit choice, so a file's results never change
  because a shape was added).

The constraint and shape mappings themselves are layouts.py and shape_inertia.py (no bpy).
"""

from __future__ import annotations

import math
from dataclasses import replace

import bpy
import numpy as np

from ..solver.model import WORLD, Body, Collider, Curve, Joint, Motor
from . import bullet, meshmass, reference, rigid_scope
from . import colliders as collision_shapes
from .layouts import AXES, LAYOUTS, JointLayout, dof_limits, generic_layout, limit_state
from .orient import orient_from_world
from .read_common import Problems, Target, direction, frame_of, mesh_mass, num, scale_part, vec
from .rotations import matrix_to_quat
from .shape_inertia import shape_inertia


def _axis_state(rbc, kind: str, i: int) -> str:
    """'locked', 'limited' or 'free' for one axis of a GENERIC constraint (layouts.limit_state)."""
    name = f"{kind}_{'xyz'[i]}"
    return limit_state(getattr(rbc, f"use_limit_{name}"), getattr(rbc, f"limit_{name}_lower"),
                       getattr(rbc, f"limit_{name}_upper"))


def _limits_of(rbc, layout: JointLayout) -> tuple[tuple | None, tuple | None]:
    def limit(kind: str, i: int) -> tuple[float, float] | None:
        name = f"{kind}_{'xyz'[i]}"
        if getattr(rbc, f"use_limit_{name}") and _axis_state(rbc, kind, i) == "limited":
            return num(getattr(rbc, f"limit_{name}_lower")), num(getattr(rbc, f"limit_{name}_upper"))
        return None

    return dof_limits(layout, limit)


def _springs_of(rbc, layout: JointLayout, name: str, problems: Problems) -> tuple[float, float]:
    if rbc.type != "GENERIC_SPRING":
        return 0.0, 0.0
    springs = []
    for kind, i in layout.dofs:
        suffix = ("ang_" if kind == "ang" else "") + "xyz"[i]
        if getattr(rbc, f"use_spring_{suffix}"):
            springs.append((getattr(rbc, f"spring_stiffness_{suffix}"), getattr(rbc, f"spring_damping_{suffix}")))
        else:
            springs.append(None)
    used = [s for s in springs if s is not None]
    if not used:
        return 0.0, 0.0
    if len(used) != len(springs) or any(abs(s[0] - used[0][0]) > 1e-9 or abs(s[1] - used[0][1]) > 1e-9 for s in used):
        problems.errors.append(
            f"rigid body constraint {name!r}: springs must be on every free axis with the same stiffness and "
            "damping (one spring per joint)"
        )
    return num(used[0][0]), num(used[0][1])


def _rigid_joint(obj, rbc, ends: tuple[str, str], frame: float, problems: Problems) -> Joint | None:
    """The joint of rigid body constraint object `obj` between bodies `ends` (world allowed)."""
    name = obj.name
    if rbc.type in ("GENERIC", "GENERIC_SPRING"):
        lin = [i for i in range(3) if _axis_state(rbc, "lin", i) != "locked"]
        ang = [i for i in range(3) if _axis_state(rbc, "ang", i) != "locked"]
        layout = generic_layout(lin, ang)
        if layout is None:
            free = [f"linear {AXES[i]}" for i in lin] + [f"angular {AXES[i]}" for i in ang]
            problems.errors.append(
                f"rigid body constraint {name!r} ({rbc.type}): free axes {', '.join(free)} match no supported joint "
                "(fixed, hinge, slider, cylinder, universal, ball, planar or free)"
            )
            return None
    else:
        layout = LAYOUTS[rbc.type]
        locked = [f"{'angular' if kind == 'ang' else 'linear'} {AXES[i]}" for kind, i in layout.dofs
                  if _axis_state(rbc, kind, i) == "locked"]
        if rbc.type != "POINT" and locked:
            problems.errors.append(
                f"rigid body constraint {name!r} ({rbc.type}): its {', '.join(locked)} limit has lower == upper, "
                "which locks the axis; widen the limit or use a FIXED constraint"
            )
            return None
    position, _quat, rot = frame_of(reference.object_matrix(obj, frame))
    lower, upper = _limits_of(rbc, layout) if rbc.type not in ("FIXED", "POINT") else (None, None)
    if layout.type in ("ball", "free") and lower is not None:
        problems.errors.append(f"rigid body constraint {name!r}: limits on a {layout.type} joint are not supported")
        lower = upper = None
    stiffness, damping = _springs_of(rbc, layout, name, problems)
    ndof = len(layout.dofs)
    settings = obj.symplex
    return Joint(
        name=name,
        type=layout.type,
        parent=ends[0],
        child=ends[1],
        anchor=position,
        axis=direction(rot[:, layout.axis]),
        axis2=direction(rot[:, layout.axis2]) if layout.type in ("universal", "planar") else None,
        q0=vec(settings.q0[:ndof]),
        v0=vec(settings.v0[:ndof]),
        lower=lower,
        upper=upper,
        stiffness=stiffness,
        damping=damping,
    )


def _apply_motor(obj, rbc, ends: tuple[str, str], joints: list[Joint], frame: float, problems: Problems) -> None:
    name = obj.name
    if rbc.use_motor_ang == rbc.use_motor_lin:
        problems.errors.append(
            f"motor constraint {name!r}: enable exactly one of its angular and linear motors"
        )
        return
    wanted = "revolute" if rbc.use_motor_ang else "prismatic"
    velocity = rbc.motor_ang_target_velocity if rbc.use_motor_ang else rbc.motor_lin_target_velocity
    _pos, _quat, rot = frame_of(reference.object_matrix(obj, frame))
    x_axis = rot[:, 0]
    for i, j in enumerate(joints):
        if {j.parent, j.child} != set(ends) or j.type != wanted:
            continue
        alignment = float(np.dot(x_axis, j.axis) / np.linalg.norm(j.axis))
        if abs(abs(alignment) - 1.0) > 1e-6:
            problems.errors.append(
                f"motor constraint {name!r}: its local X axis must lie along the axis of {wanted} joint {j.name!r}"
            )
            return
        if j.motor is not None:
            problems.errors.append(f"motor constraint {name!r}: joint {j.name!r} already has a motor")
            return
        sign = math.copysign(1.0, alignment) * (1.0 if j.parent == ends[0] else -1.0)
        motor = Motor(mode="velocity", target_velocity=sign * num(velocity), gain=num(obj.symplex.motor_gain))
        joints[i] = replace(j, motor=motor)
        return
    kind = "hinge" if wanted == "revolute" else "slider"
    problems.errors.append(
        f"motor constraint {name!r}: no {kind} constraint joins {ends[0]!r} and {ends[1]!r} for it to drive"
    )


def _drive_joint(obj, joints: list[Joint], sample_frames: np.ndarray, dt: float, problems: Problems) -> None:
    """Make the joint holding Animated rigid body `obj` prescribed: its coordinate follows the keys."""
    holding = [i for i, j in enumerate(joints) if j.parent == WORLD and j.child == obj.name]
    if len(holding) != 1 or joints[holding[0]].type not in ("revolute", "prismatic"):
        problems.errors.append(
            f"rigid body {obj.name!r} is Animated: that is supported only for a body one hinge or slider "
            "joins to the world (or a passive object), which then drives the mechanism"
        )
        return
    i = holding[0]
    joint = joints[i]
    ref = np.array(reference.rigid_part(reference.object_matrix(obj, sample_frames[0])))
    poses = np.array([np.array(reference.rigid_part(reference.object_matrix(obj, f))) for f in sample_frames])
    axis = np.asarray(joint.axis) / np.linalg.norm(joint.axis)
    if joint.type == "revolute":
        relative = matrix_to_quat(poses[:, :3, :3] @ ref[:3, :3].T)
        values = np.unwrap(2.0 * np.arctan2(relative[:, 1:] @ axis, relative[:, 0]))
    else:
        values = (poses[:, :3, 3] - ref[:3, 3]) @ axis
    times = tuple(float(t) for t in np.arange(len(sample_frames)) * dt)
    if joint.motor is not None:
        problems.errors.append(f"rigid body {obj.name!r} is Animated, so joint {joint.name!r} cannot also have a motor")
    joints[i] = replace(joint, q0=(), v0=(), prescribed=Curve(times, tuple(float(v) for v in values)))


def read_rigid_bodies(scene, setup, frame: float, fps: float, dt: float, steps: int, problems: Problems):
    objects = rigid_scope.setup_objects(scene, setup)
    if objects is None:
        problems.errors.append(f"setup {setup.name!r}: choose the collection holding its rigid bodies, or Whole Scene")
        return [], [], [], "", [], []
    where = f"scene {scene.name!r}" if setup.whole_scene else f"collection {setup.collection.name!r}"
    members = {o.name for o in objects}
    bodies: list[Body] = []
    body_objects: list[bpy.types.Object] = []
    world_objects: set[str] = set()
    driven: list[bpy.types.Object] = []
    shapes: list[Collider] = []
    colliding: list[bpy.types.Object] = []
    contact = setup.method == "maximal"

    def add_collider(obj, matrix, static: bool) -> None:
        found = collision_shapes.object_collider(obj, matrix, scale_part(matrix), static, problems.errors,
                                                 problems.warnings)
        if found is not None:
            shapes.append(found)
            colliding.append(obj)

    for obj in objects:
        rb = obj.rigid_body
        if rb is None:
            continue
        if reference.original_kinematic(obj, frame):
            if rb.type == "PASSIVE":
                problems.errors.append(
                    f"rigid body {obj.name!r} is passive and Animated; moving passive objects are not supported yet"
                )
                continue
            driven.append(obj)
        elif rb.type == "PASSIVE" or not rb.enabled:
            world_objects.add(obj.name)
            if contact:
                add_collider(obj, reference.object_matrix(obj, frame), static=True)
            continue
        if reference.has_delta_transform(obj):
            problems.errors.append(f"rigid body {obj.name!r} has delta transforms; apply or clear them")
        matrix = reference.object_matrix(obj, frame)
        position, quat, _rot = frame_of(matrix)
        settings = obj.symplex
        mass = num(rb.mass)
        if settings.mass_source == "CUSTOM":
            com, inertia = vec(settings.com), vec(settings.inertia)
        elif settings.mass_source == "MESH":
            mass, com, inertia = mesh_mass(
                lambda: meshmass.object_mass(obj, num(settings.density), scale_part(matrix)), problems)
        else:
            com, inertia = (0.0, 0.0, 0.0), shape_inertia(rb.collision_shape, rb.mass, vec(obj.dimensions))
        bodies.append(Body(obj.name, mass, position, quat, com, inertia))
        body_objects.append(obj)
        if contact:
            add_collider(obj, matrix, static=False)
    if contact and scene.rigidbody_world is not None and scene.rigidbody_world.collection is not None:
        for obj in sorted(scene.rigidbody_world.collection.all_objects, key=lambda o: o.name):
            rb = obj.rigid_body
            if obj.name not in members and rb is not None and (rb.type == "PASSIVE" or not rb.enabled):
                add_collider(obj, reference.object_matrix(obj, frame), static=True)
    body_names = {b.name for b in bodies}

    def end(obj, constraint_name: str, which: str) -> str | None:
        if obj is None:
            problems.errors.append(f"rigid body constraint {constraint_name!r}: {which} is not set")
            return None
        if obj.rigid_body is None:
            problems.errors.append(
                f"rigid body constraint {constraint_name!r}: {which} {obj.name!r} is not a rigid body"
            )
            return None
        if obj.name in world_objects or (obj.name not in members and obj.rigid_body.type == "PASSIVE"):
            return WORLD
        if obj.name not in body_names:
            problems.errors.append(
                f"rigid body constraint {constraint_name!r}: {which} {obj.name!r} is not in {where} of setup "
                f"{setup.name!r}" + ("" if setup.whole_scene else "; move it there, or turn on the setup's Whole Scene")
            )
            return None
        return obj.name

    joints: list[Joint] = []
    motors = []
    disabled: dict[str, list[str]] = {}  # body -> disabled constraints naming it
    for obj in rigid_scope.constraint_objects(scene, objects):
        rbc = obj.rigid_body_constraint
        named = [o.name for o in (rbc.object1, rbc.object2) if o is not None and o.name in body_names]
        if obj.name not in members and not named:
            continue  # another rig's constraint
        if not rbc.enabled:
            problems.warnings.append(f"rigid body constraint {obj.name!r} is disabled; skipped")
            for body in named:
                disabled.setdefault(body, []).append(obj.name)
            continue
        if rbc.use_breaking:
            problems.warnings.append(f"rigid body constraint {obj.name!r}: breaking is not simulated; it never breaks")
        ends = (end(rbc.object1, obj.name, "Object 1"), end(rbc.object2, obj.name, "Object 2"))
        if None in ends:
            continue
        if ends[0] == ends[1]:
            problems.errors.append(
                f"rigid body constraint {obj.name!r} joins {ends[0]!r} to itself (two passive objects are both the world)"
            )
            continue
        if rbc.type == "MOTOR":
            motors.append((obj, rbc, ends))
            continue
        joint = _rigid_joint(obj, rbc, ends, frame, problems)
        if joint is not None:
            joints.append(joint)
    joints = orient_from_world([b.name for b in bodies], joints, problems.errors, "rigid body constraint")
    for j in joints:
        if j.type == "free" and j.child in disabled:
            problems.errors.append(
                f"rigid body {j.child!r} would fall free: rigid body constraint "
                f"{', '.join(map(repr, disabled[j.child]))} naming it is disabled; enable it, or remove it if "
                "the body is meant to fly free")
    for obj, rbc, ends in motors:
        _apply_motor(obj, rbc, ends, joints, frame, problems)
    sample_frames = frame + np.arange(steps + 1) * dt * fps
    for obj in driven:
        _drive_joint(obj, joints, sample_frames, dt, problems)
    driven_names = {obj.name for obj in driven}
    targets = [Target(b.name, b.name, write=b.name not in driven_names) for b in bodies]
    root = setup.root.name if setup.root is not None else (bodies[0].name if bodies else "")
    moving = [obj for obj in body_objects if obj.name not in driven_names]  # Animated bodies follow their keys
    ignored = bullet.ignored_settings(moving, colliding, steps * dt)
    return bodies, joints, targets, root, shapes, ignored

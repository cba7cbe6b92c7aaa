"""Scene -> Mechanism: read one Symplex setup (an armature or a collection of rigid bodies) as plain data.

`read_setup(scene, setup)` reads bpy once and returns a `SceneMechanism`: the Mechanism, the bake
targets (which object or pose bone each body drives) and the time grid. Every problem found is
collected; if any is an error, `SceneError` lists them all, each naming the object, bone, constraint
or loop at fault. `validate_setup` returns the same list (errors and warnings) without raising;
`inspect_setup` returns the SceneMechanism too when there is no error (summary.py describes it).

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
  joint is prescribed, its coordinate sampled from the keys at every solver step.
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

Armatures (kind ARMATURE): pose bones with Symplex "Simulate" are bodies, framed at the bone head
  with the bone's orientation, in the rest pose of the simulated bones (other bones keep their start
  pose). The joint to the nearest simulated ancestor (else the world) follows the rotation mode and
  locks: one free rotation axis revolute, two universal (Euler modes; the later-applied axis is the
  outer one), three ball; free location axes add prismatic, cylindrical, planar or free. Its
  coordinates start from the bone's pose at the start frame. Mass properties are a rod from head to
  tail, typed in, or the closed meshes bound to the bone filled with a density (meshmass.py).
  IK limits (use_ik_limit_x with ik_min_x / ik_max_x, ...) become the limits of the joint's
  rotation coordinates (not on ball joints), IK stiffness the joint stiffness (N m/rad; on a
  three-axis bone the isotropic rotation spring toward the rest pose). Keyed,
  unsimulated ancestors of simulated bones become prescribed joints sampled at every solver step.
  Loops from the armature's loop list close chains.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ..solver.joint_reverse import reversed_joint
from ..solver.advice import method_advice
from ..solver.lie import frame_from_axis
from ..solver.mechfile import validate_mechanism
from ..solver.model import WORLD, Body, Collider, Curve, Joint, Mechanism, MechanismError, Motor
from . import colliders as collision_shapes
from . import bullet, compat, meshmass, reference, rigid_scope
from .rotations import matrix_to_euler, matrix_to_quat

AXES = "XYZ"


class SceneError(MechanismError):
    """The scene cannot be read as a mechanism. `problems` lists every error, each naming its offender."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class Target:
    """Where body `body` is baked: object `object`, or its pose bone `bone`. write=False: read only."""

    body: str
    object: str
    bone: str = ""
    write: bool = True


class FrameGrid:
    """The solver's time grid over a bake's frame range; needs frame_start, frame_end, fps, substeps."""

    frame_start: int
    frame_end: int
    fps: float
    substeps: int

    @property
    def dt(self) -> float:
        return 1.0 / (self.fps * self.substeps)

    @property
    def steps(self) -> int:
        return (self.frame_end - self.frame_start) * self.substeps


@dataclass(frozen=True)
class SceneMechanism(FrameGrid):
    """What a setup reads as: the mechanism, its bake targets and the time grid of the bake."""

    setup: str
    mechanism: Mechanism
    targets: tuple[Target, ...]
    root: str
    method: str
    tolerance: float
    frame_start: int
    frame_end: int
    fps: float
    substeps: int
    warnings: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # settings read but not simulated, each with its effect (bullet.py)


@dataclass
class _Problems:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def scene_fps(scene: bpy.types.Scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _gravity(scene: bpy.types.Scene) -> tuple[float, float, float]:
    return _vec(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)


# Blender stores transforms in single precision. Components smaller than this (relative to the
# vector's length) are rounding noise; they are zeroed so that hinges an artist set up parallel stay
# exactly parallel (a closed planar chain whose axes differ by 1e-7 rad is locked, not mobile).
NOISE = 1e-6


def _clean(v) -> tuple[float, ...]:
    arr = np.array(v, dtype=float)
    arr[np.abs(arr) < NOISE * max(float(np.linalg.norm(arr)), 1.0)] = 0.0
    return tuple(float(x) for x in arr)


def _direction(v) -> tuple[float, float, float]:
    """Unit vector `v` without single-precision noise."""
    arr = np.array(_clean(np.asarray(v, dtype=float) / np.linalg.norm(v)))
    return tuple(float(x) for x in arr / np.linalg.norm(arr))


def _frame_of(matrix: Matrix) -> tuple[tuple[float, ...], tuple[float, ...], np.ndarray]:
    """(position, orientation quaternion, 3x3 rotation) of the rigid part of a world matrix."""
    rigid = reference.rigid_part(matrix)
    rot = np.array(rigid.to_3x3(), dtype=float)
    quat = np.array(_clean(matrix_to_quat(rot)))
    return _clean(rigid.translation), tuple(float(x) for x in quat / np.linalg.norm(quat)), rot


def _scale_part(matrix: Matrix) -> np.ndarray:
    """D (4, 4) with matrix = rigid_part(matrix) @ D: what maps an object's own axes to its body axes."""
    return np.array(reference.rigid_part(matrix).inverted() @ matrix)


def _num(x: float) -> float:
    """A single-precision Blender property value as the shortest decimal it stands for (9.81, not 9.8100004)."""
    return float(str(np.float32(x)))


def _vec(v) -> tuple[float, ...]:
    return tuple(_num(x) for x in v)


# ----------------------------------------------------------------------------------------------
# Mass properties


def shape_inertia(shape: str, mass: float, dims: tuple[float, float, float]) -> tuple[float, ...]:
    """Principal moments (Ixx, Iyy, Izz, 0, 0, 0) of a Blender collision shape filling `dims`."""
    dx, dy, dz = dims
    if shape == "SPHERE":
        r = max(dims) / 2.0
        i = 0.4 * mass * r * r
        return (i, i, i, 0.0, 0.0, 0.0)
    r, h = max(dx, dy) / 2.0, dz
    if shape == "CYLINDER":
        perp = mass * (3.0 * r * r + h * h) / 12.0
        return (perp, perp, 0.5 * mass * r * r, 0.0, 0.0, 0.0)
    if shape == "CONE":
        perp = mass * (3.0 * r * r / 20.0 + 3.0 * h * h / 80.0)
        return (perp, perp, 0.3 * mass * r * r, 0.0, 0.0, 0.0)
    if shape == "CAPSULE":
        length = max(h - 2.0 * r, 0.0)
        v_cyl, v_sph = math.pi * r * r * length, 4.0 / 3.0 * math.pi * r**3
        total = v_cyl + v_sph
        m_cyl = mass * v_cyl / total if total > 0 else 0.0
        m_sph = mass - m_cyl
        axial = 0.5 * m_cyl * r * r + 0.4 * m_sph * r * r
        perp = m_cyl * (3.0 * r * r + length * length) / 12.0 + m_sph * (
            0.4 * r * r + length * length / 4.0 + 3.0 * length * r / 8.0
        )
        return (perp, perp, axial, 0.0, 0.0, 0.0)
    # BOX, CONVEX_HULL, MESH, COMPOUND: the solid box of the bounds.
    return (
        mass * (dy * dy + dz * dz) / 12.0,
        mass * (dx * dx + dz * dz) / 12.0,
        mass * (dx * dx + dy * dy) / 12.0,
        0.0,
        0.0,
        0.0,
    )


def _mesh_mass(compute, problems: _Problems) -> tuple[float, tuple, tuple]:
    """(mass, com, inertia) from a meshmass call; on failure the error is recorded and a placeholder returned."""
    try:
        props = compute()
    except MechanismError as err:
        problems.errors.append(str(err))
        return 1.0, (0.0, 0.0, 0.0), (0.0,) * 6
    return props.mass, props.com, props.inertia


def rod_mass_properties(mass: float, length: float, radius: float) -> tuple[tuple, tuple]:
    """Centre of mass and inertia (bone axes, Y along the bone) of a solid rod from head to tail."""
    perp = mass * (3.0 * radius * radius + length * length) / 12.0
    return (0.0, length / 2.0, 0.0), (perp, 0.5 * mass * radius * radius, perp, 0.0, 0.0, 0.0)


# ----------------------------------------------------------------------------------------------
# Joint orientation


def orient_from_world(bodies: list[str], joints: list[Joint], problems: _Problems, what: str) -> list[Joint]:
    """Reverse joints so that every body is reached from the world going parent -> child.

    A breadth-first search over the undirected joint graph from the world picks the tree; a joint
    the search crosses child-first is reversed. Bodies not connected to the world get a free joint.
    """
    joints = list(joints)
    links: dict[str, list[int]] = {}
    for i, j in enumerate(joints):
        links.setdefault(j.parent, []).append(i)
        links.setdefault(j.child, []).append(i)
    reached = {WORLD}
    free: list[Joint] = []
    for root in [WORLD] + bodies:
        if root not in reached:
            free.append(Joint(name=f"{root} (free)", type="free", parent=WORLD, child=root))
            reached.add(root)
        queue = deque([root])
        while queue:
            name = queue.popleft()
            for i in links.get(name, []):
                j = joints[i]
                other = j.child if j.parent == name else j.parent
                if other in reached:
                    continue
                if j.child == name:
                    flipped = reversed_joint(j)
                    if flipped is None:
                        problems.errors.append(
                            f"{what} {j.name!r}: a {j.type} joint from {j.parent!r} to {j.child!r} must be "
                            "turned round to hang from the world; swap its two objects"
                        )
                        flipped = replace(j, parent=j.child, child=j.parent)
                    joints[i] = flipped
                reached.add(other)
                queue.append(other)
    return joints + free


# ----------------------------------------------------------------------------------------------
# Rigid bodies


@dataclass(frozen=True)
class _Layout:
    """A joint type and which local axes (indices 0..2) carry axis and axis2."""

    type: str
    axis: int = 2
    axis2: int | None = 0
    dofs: tuple[tuple[str, int], ...] = ()  # ("lin" | "ang", axis index) in coordinate order


# Joints whose rotation has no single coordinate: a joint spring there would need a rest orientation,
# which neither method models (tree/compile.py and maximal/forces.py refuse it too).

LAYOUTS = {
    "FIXED": _Layout("fixed"),
    "POINT": _Layout("ball", 2, 0, (("ang", 0), ("ang", 1), ("ang", 2))),
    "HINGE": _Layout("revolute", 2, None, (("ang", 2),)),
    "SLIDER": _Layout("prismatic", 0, None, (("lin", 0),)),
    "PISTON": _Layout("cylindrical", 0, None, (("ang", 0), ("lin", 0))),
}


def generic_layout(lin_free: list[int], ang_free: list[int]) -> _Layout | None:
    """The joint a GENERIC constraint is, from its free linear and angular axes (None: unsupported)."""
    nl, na = len(lin_free), len(ang_free)
    if nl == 0 and na == 0:
        return _Layout("fixed")
    if nl == 0 and na == 1:
        return _Layout("revolute", ang_free[0], None, (("ang", ang_free[0]),))
    if nl == 1 and na == 0:
        return _Layout("prismatic", lin_free[0], None, (("lin", lin_free[0]),))
    if nl == 1 and na == 1 and lin_free == ang_free:
        return _Layout("cylindrical", lin_free[0], None, (("ang", lin_free[0]), ("lin", lin_free[0])))
    if nl == 0 and na == 2:
        a, b = ang_free
        return _Layout("universal", a, b, (("ang", a), ("ang", b)))
    if nl == 0 and na == 3:
        return _Layout("ball", 2, 0, (("ang", 0), ("ang", 1), ("ang", 2)))
    if nl == 2 and na == 1 and ang_free[0] not in lin_free:
        a, b = lin_free
        return _Layout("planar", ang_free[0], a, (("lin", a), ("lin", b), ("ang", ang_free[0])))
    if nl == 3 and na == 3:
        return _Layout("free", 2, 0, tuple(("lin", i) for i in range(3)) + tuple(("ang", i) for i in range(3)))
    return None


def _axis_state(rbc, kind: str, i: int) -> str:
    """'locked', 'limited' or 'free' for one axis of a GENERIC constraint."""
    name = f"{kind}_{'xyz'[i]}"
    if not getattr(rbc, f"use_limit_{name}"):
        return "free"
    lower, upper = getattr(rbc, f"limit_{name}_lower"), getattr(rbc, f"limit_{name}_upper")
    if abs(upper - lower) <= 1e-12:
        return "locked"
    return "limited" if lower < upper else "free"


def _limits_of(rbc, layout: _Layout) -> tuple[tuple | None, tuple | None]:
    lower, upper, any_limit = [], [], False
    for kind, i in layout.dofs:
        name = f"{kind}_{'xyz'[i]}"
        if getattr(rbc, f"use_limit_{name}") and _axis_state(rbc, kind, i) == "limited":
            lower.append(_num(getattr(rbc, f"limit_{name}_lower")))
            upper.append(_num(getattr(rbc, f"limit_{name}_upper")))
            any_limit = True
        else:
            lower.append(-math.inf)
            upper.append(math.inf)
    return (tuple(lower), tuple(upper)) if any_limit else (None, None)


def _springs_of(rbc, layout: _Layout, name: str, problems: _Problems) -> tuple[float, float]:
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
    return _num(used[0][0]), _num(used[0][1])


def _rigid_joint(obj, rbc, ends: tuple[str, str], frame: float, problems: _Problems) -> Joint | None:
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
    position, _quat, rot = _frame_of(reference.object_matrix(obj, frame))
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
        axis=_direction(rot[:, layout.axis]),
        axis2=_direction(rot[:, layout.axis2]) if layout.type in ("universal", "planar") else None,
        q0=_vec(settings.q0[:ndof]),
        v0=_vec(settings.v0[:ndof]),
        lower=lower,
        upper=upper,
        stiffness=stiffness,
        damping=damping,
    )


def _apply_motor(obj, rbc, ends: tuple[str, str], joints: list[Joint], frame: float, problems: _Problems) -> None:
    name = obj.name
    if rbc.use_motor_ang == rbc.use_motor_lin:
        problems.errors.append(
            f"motor constraint {name!r}: enable exactly one of its angular and linear motors"
        )
        return
    wanted = "revolute" if rbc.use_motor_ang else "prismatic"
    velocity = rbc.motor_ang_target_velocity if rbc.use_motor_ang else rbc.motor_lin_target_velocity
    _pos, _quat, rot = _frame_of(reference.object_matrix(obj, frame))
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
        motor = Motor(mode="velocity", target_velocity=sign * _num(velocity), gain=_num(obj.symplex.motor_gain))
        joints[i] = replace(j, motor=motor)
        return
    kind = "hinge" if wanted == "revolute" else "slider"
    problems.errors.append(
        f"motor constraint {name!r}: no {kind} constraint joins {ends[0]!r} and {ends[1]!r} for it to drive"
    )


def _drive_joint(obj, joints: list[Joint], sample_frames: np.ndarray, dt: float, problems: _Problems) -> None:
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


def _read_rigid_bodies(scene, setup, frame: float, fps: float, dt: float, steps: int, problems: _Problems):
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
        found = collision_shapes.object_collider(obj, matrix, _scale_part(matrix), static, problems.errors,
                                                 problems.warnings)
        if found is not None:
            shapes.append(found)
            colliding.append(obj)

    for obj in objects:
        rb = obj.rigid_body
        if rb is None:
            continue
        if reference.original_kinematic(obj):
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
        position, quat, _rot = _frame_of(matrix)
        settings = obj.symplex
        mass = _num(rb.mass)
        if settings.mass_source == "CUSTOM":
            com, inertia = _vec(settings.com), _vec(settings.inertia)
        elif settings.mass_source == "MESH":
            mass, com, inertia = _mesh_mass(
                lambda: meshmass.object_mass(obj, _num(settings.density), _scale_part(matrix)), problems)
        else:
            com, inertia = (0.0, 0.0, 0.0), shape_inertia(rb.collision_shape, rb.mass, _vec(obj.dimensions))
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
    joints = orient_from_world([b.name for b in bodies], joints, problems, "rigid body constraint")
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


# ----------------------------------------------------------------------------------------------
# Armatures


def bone_layout(pose_bone) -> _Layout | str:
    """The joint a pose bone's rotation mode and locks describe, or a reason it has none."""
    mode = pose_bone.rotation_mode
    rot = [i for i in range(3) if not pose_bone.lock_rotation[i]]
    loc = [] if pose_bone.bone.use_connect else [i for i in range(3) if not pose_bone.lock_location[i]]
    if mode == "AXIS_ANGLE" and len(rot) not in (0, 3):
        return "an Axis Angle bone must lock all rotation axes or none; use an Euler mode for a hinge"
    if mode == "QUATERNION" and len(rot) == 2:
        return "two free rotation axes need an Euler rotation mode (a universal joint)"
    if loc and not pose_bone.bone.use_local_location:
        return "a sliding bone needs Local Location enabled"
    nr, nl = len(rot), len(loc)
    if nl == 0:
        if nr == 0:
            return _Layout("fixed")
        if nr == 1:
            return _Layout("revolute", rot[0], None, (("ang", rot[0]),))
        if nr == 2:
            # Euler order string lists axes first-applied first; the later one is the outer axis.
            inner, outer = sorted(rot, key=lambda i: mode.index(AXES[i]))
            return _Layout("universal", outer, inner, (("ang", outer), ("ang", inner)))
        return _Layout("ball", 2, 0, (("ang", 0), ("ang", 1), ("ang", 2)))
    if nr == 0 and nl == 1:
        return _Layout("prismatic", loc[0], None, (("lin", loc[0]),))
    if nr == 1 and nl == 1 and rot == loc:
        return _Layout("cylindrical", loc[0], None, (("ang", loc[0]), ("lin", loc[0])))
    if nr == 1 and nl == 2 and rot[0] not in loc:
        return _Layout("planar", rot[0], loc[0], (("lin", loc[0]), ("lin", loc[1]), ("ang", rot[0])))
    if nr == 3 and nl == 3:
        return _Layout("free", 2, 0, tuple(("lin", i) for i in range(3)) + tuple(("ang", i) for i in range(3)))
    names = [f"rotation {AXES[i]}" for i in rot] + [f"location {AXES[i]}" for i in loc]
    return f"free channels {', '.join(names) or 'none'} match no supported joint"


def _angle_about(rot: np.ndarray, i: int) -> np.ndarray:
    """Angle of rotations (..., 3, 3) about local axis i (exact when they are such rotations)."""
    j, k = (i + 1) % 3, (i + 2) % 3
    return np.arctan2(rot[..., k, j], rot[..., j, j])


def _rotvec(rot: np.ndarray) -> np.ndarray:
    q = matrix_to_quat(rot)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    return np.where(s > 1e-15, v / np.where(s > 1e-15, s, 1.0) * angle, 2.0 * v)


def layout_coordinates(layout: _Layout, basis: np.ndarray, bone_world: np.ndarray) -> np.ndarray:
    """Joint coordinates (..., ndof) of bone basis matrices (..., 4, 4); bone_world is its 3x3 rest rotation.

    Revolute, universal and the planar angle are measured in the bone's axes; a ball joint's
    rotation vector is in the axes of its joint frame (z along the bone's Z, x from
    solver.lie.frame_from_axis) and a free joint's translation and rotation vector in world axes,
    as the tree method defines them.
    """
    rot, loc = basis[..., :3, :3], basis[..., :3, 3]
    t = layout.type
    if t == "fixed":
        return np.zeros(basis.shape[:-2] + (0,))
    if t == "revolute":
        return _angle_about(rot, layout.axis)[..., None]
    if t == "prismatic":
        return loc[..., layout.axis : layout.axis + 1]
    if t == "cylindrical":
        return np.stack([_angle_about(rot, layout.axis), loc[..., layout.axis]], -1)
    if t == "universal":
        locked = 3 - layout.axis - layout.axis2
        order = AXES[layout.axis2] + AXES[layout.axis] + AXES[locked]
        e = matrix_to_euler(rot.reshape(-1, 3, 3), order).reshape(rot.shape[:-2] + (3,))
        return np.stack([e[..., layout.axis], e[..., layout.axis2]], -1)
    if t == "planar":
        k, i = layout.axis, layout.axis2
        third = np.cross(np.eye(3)[k], np.eye(3)[i])
        return np.stack([loc[..., i], loc @ third, _angle_about(rot, k)], -1)
    if t == "ball":
        joint_frame = frame_from_axis(bone_world[:, 2])
        to_joint = joint_frame.T @ bone_world
        return _rotvec(rot) @ to_joint.T
    # free: world-axis translation of the head and world-axis rotation vector
    world_rot = bone_world @ rot @ bone_world.T
    return np.concatenate([loc @ bone_world.T, _rotvec(world_rot)], -1)


def _keyed_bones(arm) -> set[str]:
    """Names of bones whose transform channels the artist's own action animates."""
    names = set()
    for fc in compat.fcurves(reference.original_channels(arm)):
        path = fc.data_path
        if path.startswith('pose.bones["') and path.rsplit(".", 1)[-1] in (
            "location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle",
        ):
            names.add(bpy.utils.unescape_identifier(path[len('pose.bones["') : path.rindex('"]')]))
    return names


def _ik_limits(pose_bone, layout: _Layout, name: str, problems: _Problems) -> tuple[tuple | None, tuple | None]:
    lower, upper, used = [], [], False
    for kind, i in layout.dofs:
        axis = "xyz"[i]
        if kind == "ang" and getattr(pose_bone, f"use_ik_limit_{axis}"):
            if layout.type in ("ball", "free"):
                problems.errors.append(f"bone {name!r}: IK limits on a {layout.type} joint are not supported")
                return None, None
            lower.append(_num(getattr(pose_bone, f"ik_min_{axis}")))
            upper.append(_num(getattr(pose_bone, f"ik_max_{axis}")))
            used = True
        else:
            lower.append(-math.inf)
            upper.append(math.inf)
    return (tuple(lower), tuple(upper)) if used else (None, None)


def _ik_stiffness(pose_bone, layout: _Layout, name: str, problems: _Problems) -> float:
    values = {_num(getattr(pose_bone, f"ik_stiffness_{'xyz'[i]}")) for kind, i in layout.dofs if kind == "ang"}
    if len(values) > 1:
        problems.errors.append(f"bone {name!r}: IK stiffness must be the same on every free rotation axis")
    return max(values) if values else 0.0


def _read_armature(scene, setup, frame: float, fps: float, dt: float, steps: int, problems: _Problems):
    arm = setup.armature
    if arm is None or arm.type != "ARMATURE":
        problems.errors.append(f"setup {setup.name!r}: choose its armature")
        return [], [], [], ""
    if reference.has_delta_transform(arm):
        problems.errors.append(f"armature {arm.name!r} has delta transforms; apply or clear them")
    pose_bones = arm.pose.bones
    simulated = [pb for pb in pose_bones if pb.symplex.simulate]
    if not simulated:
        problems.errors.append(f"armature {arm.name!r}: no bone is marked Simulate")
        return [], [], [], ""
    keyed = _keyed_bones(arm)
    in_mechanism = {pb.name for pb in simulated}
    for pb in simulated:
        parent = pb.parent
        while parent is not None:
            if parent.name not in in_mechanism and parent.name in keyed:
                in_mechanism.add(parent.name)
            parent = parent.parent
    prescribed = {n for n in in_mechanism if not pose_bones[n].symplex.simulate}

    arm_matrix = reference.object_matrix(arm, frame)
    pose_ref: dict[str, Matrix] = {}

    def reference_pose(pb) -> Matrix:
        """Armature-space matrix of pb with mechanism bones at rest and the others at their start pose."""
        if pb.name not in pose_ref:
            basis = Matrix.Identity(4) if pb.name in in_mechanism else reference.bone_basis(arm, pb, frame)
            parent = reference_pose(pb.parent) if pb.parent is not None else Matrix.Identity(4)
            pose_ref[pb.name] = parent @ reference.rest_offset(pb) @ basis
        return pose_ref[pb.name]

    def mechanism_body(pb) -> str:
        while pb is not None and pb.name not in in_mechanism:
            pb = pb.parent
        return WORLD if pb is None else pb.name

    scale = arm_matrix.to_scale()
    length_scale = (abs(scale.x) + abs(scale.y) + abs(scale.z)) / 3.0
    sample_frames = frame + np.arange(steps + 1) * dt * fps
    bodies, joints, targets = [], [], []
    for pb in pose_bones:
        if pb.name not in in_mechanism:
            continue
        name = pb.name
        if any(getattr(c, "enabled", not getattr(c, "mute", False)) for c in pb.constraints):
            problems.errors.append(f"bone {name!r}: bone constraints on a simulated bone are not supported")
        if pb.parent is not None and (not pb.bone.use_inherit_rotation or pb.bone.inherit_scale != "FULL"):
            problems.errors.append(f"bone {name!r}: a simulated bone must inherit rotation and scale fully")
        layout = bone_layout(pb)
        if isinstance(layout, str):
            problems.errors.append(f"bone {name!r} ({pb.rotation_mode}): {layout}")
            continue
        world = arm_matrix @ reference_pose(pb)
        position, quat, rot = _frame_of(world)
        settings = pb.symplex
        mass = _num(settings.mass)
        if settings.mass_source == "ROD":
            com, inertia = rod_mass_properties(settings.mass, pb.bone.length * length_scale, settings.radius)
        elif settings.mass_source == "MESH":
            mass, com, inertia = _mesh_mass(
                lambda: meshmass.bone_mass(scene, arm, pb, _num(settings.density), _scale_part(world), frame), problems)
        else:
            com, inertia = _vec(settings.com), _vec(settings.inertia)
        bodies.append(Body(name, mass, position, quat, com, inertia))
        lower, upper = _ik_limits(pb, layout, name, problems)
        ndof = len(layout.dofs)
        prescribed_curve = None
        if name in prescribed:
            if ndof != 1:
                problems.errors.append(
                    f"bone {name!r} is keyed and drives simulated bones, so it needs exactly one free channel "
                    f"(a {layout.type} joint has {ndof})"
                )
                continue
            bases = np.array([np.array(reference.bone_basis(arm, pb, f)) for f in sample_frames])
            values = layout_coordinates(layout, bases, rot)[:, 0]
            if layout.type == "revolute":
                values = np.unwrap(values)
            prescribed_curve = Curve(tuple(float(t) for t in np.arange(steps + 1) * dt), tuple(map(float, values)))
        q0 = layout_coordinates(layout, np.array(reference.bone_basis(arm, pb, frame)), rot)
        joints.append(
            Joint(
                name=name,
                type=layout.type,
                parent=mechanism_body(pb.parent),
                child=name,
                anchor=position,
                axis=_direction(rot[:, layout.axis]),
                axis2=_direction(rot[:, layout.axis2]) if layout.type in ("universal", "planar") else None,
                q0=tuple(float(x) for x in q0),
                v0=_vec(settings.v0[:ndof]),
                lower=lower,
                upper=upper,
                stiffness=_ik_stiffness(pb, layout, name, problems),
                damping=0.0,
                prescribed=prescribed_curve,
            )
        )
        targets.append(Target(name, arm.name, name, write=name not in prescribed))
        if layout.type == "free" and joints[-1].parent == WORLD:
            problems.warnings += _free_root_warning(pb, in_mechanism)
    joints += _read_loops(arm, arm_matrix, reference_pose, mechanism_body, keyed, frame, problems)
    root = setup.root.name if setup.root is not None else arm.name
    return bodies, joints, targets, root


def _free_root_warning(pb, in_mechanism: set[str]) -> list[str]:
    """A warning when simulated bone `pb`, free in the world, carries simulated bones: the whole chain falls."""
    carried = [b.name for b in pb.bone.children_recursive if b.name in in_mechanism]
    if not carried:
        return []
    return [f"bone {pb.name!r} carries {len(carried)} simulated bone(s) (e.g. {carried[0]!r}) but its location is "
            "free (a free joint), so the whole chain can fall out of the rig; to pin its head, lock its location "
            "(Bone Properties > Transform > Lock Location X, Y, Z): it then turns on a ball joint there"]


def _read_loops(arm, arm_matrix, reference_pose, mechanism_body, keyed, frame, problems) -> list[Joint]:
    joints = []
    bone_names = {pb.name for pb in arm.pose.bones}
    for loop in arm.data.symplex.loops:
        what = f"loop {loop.name!r} of armature {arm.name!r}"
        if loop.bone_a not in bone_names:
            problems.errors.append(f"{what}: bone A {loop.bone_a!r} does not exist")
            continue
        if loop.name in bone_names:
            problems.errors.append(f"{what}: a loop may not share its name with a bone")
            continue
        pb_a = arm.pose.bones[loop.bone_a]
        body_a = mechanism_body(pb_a)
        if body_a == WORLD:
            problems.errors.append(f"{what}: bone A {loop.bone_a!r} is not simulated and has no simulated parent")
            continue
        if loop.target == "BONE":
            if loop.bone_b not in bone_names:
                problems.errors.append(f"{what}: bone B {loop.bone_b!r} does not exist")
                continue
            pb_b = arm.pose.bones[loop.bone_b]
            body_b = mechanism_body(pb_b)
            chain = pb_b
            while body_b == WORLD and chain is not None:
                if chain.name in keyed:
                    problems.errors.append(f"{what}: bone B {loop.bone_b!r} is keyed but neither simulated nor driving")
                    break
                chain = chain.parent
        elif loop.target == "OBJECT":
            if loop.object_b is None:
                problems.errors.append(f"{what}: choose its target object")
                continue
            if reference.original_channels(loop.object_b) is not None:
                problems.errors.append(f"{what}: target object {loop.object_b.name!r} is animated; it must stay still")
                continue
            body_b = WORLD
        else:
            body_b = WORLD
        if body_a == body_b:
            problems.errors.append(f"{what}: both ends are on body {body_a!r}")
            continue
        world_a = arm_matrix @ reference_pose(pb_a)
        anchor = world_a @ Vector(loop.point)
        _pos, _quat, rot = _frame_of(world_a)
        if loop.type == "HINGE":
            joint = Joint(loop.name, "revolute", body_a, body_b, _clean(anchor), _direction(rot[:, AXES.index(loop.axis)]))
        else:
            joint = Joint(loop.name, "ball", body_a, body_b, _clean(anchor), _direction(rot[:, 2]))
        joints.append(joint)
    return joints


# ----------------------------------------------------------------------------------------------
# Setups


def _read(scene: bpy.types.Scene, setup, problems: _Problems) -> SceneMechanism | None:
    frame = scene.frame_start
    fps = scene_fps(scene)
    substeps = int(setup.substeps)
    steps = (scene.frame_end - scene.frame_start) * substeps
    dt = 1.0 / (fps * substeps)
    if steps <= 0:
        problems.errors.append(f"scene {scene.name!r}: the frame range must span at least two frames")
    shapes: list[Collider] = []
    ignored: list[str] = []
    if setup.kind == "ARMATURE":
        bodies, joints, targets, root = _read_armature(scene, setup, frame, fps, dt, max(steps, 0), problems)
    else:
        bodies, joints, targets, root, shapes, ignored = _read_rigid_bodies(scene, setup, frame, fps, dt,
                                                                            max(steps, 0), problems)
        joints = [j for j in joints if j.parent != j.child]
    if not bodies and not problems.errors:
        problems.errors.append(f"setup {setup.name!r}: it has no bodies")
    if problems.errors:
        return None
    source = f"scene {scene.name!r} setup {setup.name!r}"
    mechanism = Mechanism(setup.name, tuple(bodies), tuple(joints), _gravity(scene), colliders=tuple(shapes),
                          source=source)
    try:
        mechanism = validate_mechanism(mechanism)
    except MechanismError as err:
        problems.errors.append(str(err))
        return None
    problems.warnings += [f"setup {setup.name!r}: {advice}" for advice in method_advice(mechanism, setup.method)]
    return SceneMechanism(
        setup=setup.name,
        mechanism=mechanism,
        targets=tuple(targets),
        root=root,
        method=setup.method,
        tolerance=float(setup.tolerance),
        frame_start=scene.frame_start,
        frame_end=scene.frame_end,
        fps=fps,
        substeps=substeps,
        warnings=tuple(problems.warnings),
        ignored=tuple(ignored),
    )


def read_setup(scene: bpy.types.Scene, setup) -> SceneMechanism:
    """Read `setup` (a SymplexSetup of `scene`). Raises SceneError listing every error."""
    problems = _Problems()
    result = _read(scene, setup, problems)
    if result is None:
        raise SceneError(problems.errors)
    return result


def inspect_setup(scene: bpy.types.Scene, setup) -> tuple[SceneMechanism | None, list[str], list[str]]:
    """(what `setup` reads as, or None when it has errors; errors; warnings)."""
    problems = _Problems()
    result = _read(scene, setup, problems)
    return result, problems.errors, problems.warnings


def validate_setup(scene: bpy.types.Scene, setup) -> tuple[list[str], list[str]]:
    """(errors, warnings) of reading `setup`; both empty when it is ready to bake."""
    _result, errors, warnings = inspect_setup(scene, setup)
    return errors, warnings


def find_setup(scene: bpy.types.Scene, name: str):
    for setup in scene.symplex.setups:
        if setup.name == name:
            return setup
    raise KeyError(f"scene {scene.name!r} has no Symplex setup named {name!r}")

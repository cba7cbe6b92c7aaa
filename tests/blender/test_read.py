"""Scene -> Mechanism in real Blender: every mapping, the round trip through build.py, every error.

Runs under bpy 5.0 and 4.2. Rigid body scenes use Blender's own rigid body constraints; armatures
use rotation modes and locks. Each error test checks that the message names the offender.
"""

from __future__ import annotations

import dataclasses
import math

import bpy
import numpy as np
import pytest

from addon.bridge import build, compat, read
from addon.bridge.read import SceneError
from addon.bridge.shape_inertia import shape_inertia
from addon.solver import mass
from addon.solver.advice import ROPE_LINKS
from addon.solver.curves import evaluate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, MechanismError
from addon.solver.presets import list_presets, preset_path
from tests.blender.scenes import (
    BOX_FACES,
    add_setup,
    box_mesh,
    box_object,
    chain_armature,
    constraint_object,
    evaluated,
    new_scene,
    read_scene,
    rigid,
    rigid_four_bar,
    set_bone_angle,
    set_frame,
    symplex,  # noqa: F401  (fixture)
)
from tools import generate

pytestmark = pytest.mark.usefixtures("symplex")

TURN_Z_TO_Y = (-math.pi / 2, 0.0, 0.0)


def assert_same(a, b, path="mechanism", tol=2e-6):
    """Dataclass trees equal, floats to `tol`; prescribed curves compared by value over time."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            if not f.compare:
                continue
            x, y = getattr(a, f.name), getattr(b, f.name)
            if f.name == "prescribed" and x is not None and y is not None:
                for t in np.linspace(x.times[0], min(x.times[-1], y.times[-1]), 17):
                    assert evaluate(x, t) == pytest.approx(evaluate(y, t), abs=1e-4), f"{path}.prescribed at {t}"
                continue
            assert_same(x, y, f"{path}.{f.name}", tol)
    elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        assert len(a) == len(b), f"{path}: {a} vs {b}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]", tol)
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, abs=tol), path
    else:
        assert a == b, path


def by_name(mech):
    return mech.replace(bodies=tuple(sorted(mech.bodies, key=lambda b: b.name)),
                        joints=tuple(sorted(mech.joints, key=lambda j: j.name)))


def same_orientation(mech):
    """Quaternions with w >= 0 (q and -q are one rotation), for comparing."""
    bodies = []
    for b in mech.bodies:
        q = b.orientation if b.orientation[0] >= 0 else tuple(-x for x in b.orientation)
        bodies.append(dataclasses.replace(b, orientation=q))
    return mech.replace(bodies=tuple(bodies))


def problems_of(scene, setup) -> str:
    errors, _warnings = read.validate_setup(scene, setup)
    return "\n".join(errors)


# ----------------------------------------------------------------------------------------------
# Mass properties


def test_rigid_body_mass_from_shape_and_custom_values():
    scene = new_scene("mass")
    coll = bpy.data.collections.new(f"{scene.name} c")
    scene.collection.children.link(coll)
    box = box_object(scene, coll, f"{scene.name} box", (0.2, 0.4, 0.6), (0, 0, 0), mass=2.0)
    custom = box_object(scene, coll, f"{scene.name} custom", (1, 1, 1), (1, 0, 0), mass=3.0)
    custom.symplex.mass_source = "CUSTOM"
    custom.symplex.com = (0.1, 0.0, 0.0)
    custom.symplex.inertia = (0.5, 0.5, 0.5, 0.0, 0.0, 0.0)
    setup = add_setup(scene, "mass", "RIGID_BODIES", collection=coll)
    mech = read_scene(scene, setup.name).mechanism
    assert mech.body(box.name).inertia == pytest.approx(shape_inertia("BOX", 2.0, (0.2, 0.4, 0.6)))
    assert mech.body(custom.name).com == pytest.approx((0.1, 0.0, 0.0))
    assert mech.body(custom.name).inertia[:3] == pytest.approx((0.5, 0.5, 0.5))
    # unconnected bodies float freely
    assert {j.type for j in mech.joints} == {"free"}


def box_tensor(mass, size):
    a, b, c = size
    return np.diag([mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12])


def tensor(inertia):
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def test_rigid_body_mass_from_its_own_mesh():
    """A box mesh off the origin, object scaled and turned: mass, com and inertia in body axes."""
    scene = new_scene("meshmass")
    coll = bpy.data.collections.new(f"{scene.name} c")
    scene.collection.children.link(coll)
    obj = box_object(scene, coll, f"{scene.name} box", (1, 1, 1), (1.0, 2.0, 3.0), mass=99.0)
    obj.data = box_mesh(f"{scene.name} offset", (0.2, 0.4, 0.6), centre=(0.1, 0.0, -0.2))
    obj.scale = (2.0, 1.0, 0.5)
    obj.rotation_euler = (0.3, -0.2, 0.7)
    obj.symplex.mass_source = "MESH"
    obj.symplex.density = 7850.0
    setup = add_setup(scene, "mesh", "RIGID_BODIES", collection=coll)
    body = read_scene(scene, setup.name).mechanism.body(obj.name)
    size = (0.4, 0.4, 0.3)  # scaled by the object
    mass = 7850.0 * 0.4 * 0.4 * 0.3
    assert body.mass == pytest.approx(mass, rel=1e-6)  # not the rigid body's 99 kg
    # single-precision vertices and transforms: agreement to about 1e-6
    assert body.com == pytest.approx((0.2, 0.0, -0.1), abs=1e-6)
    expected = box_tensor(mass, size)
    np.testing.assert_allclose(tensor(body.inertia), expected, atol=1e-6 * np.max(expected))
    assert body.position == pytest.approx((1.0, 2.0, 3.0))


def world_to_posed_bone(scene, arm, bone: str) -> np.ndarray:
    """(4, 4) from world to the axes of pose bone `bone` (rigid: no scale) as Blender evaluates it now."""
    arm_eval = evaluated(scene, arm)
    return np.linalg.inv(rigid(np.array(arm_eval.matrix_world @ arm_eval.pose.bones[bone].matrix)))


def test_bone_mass_from_a_child_object():
    """A box parented to the bone (Blender hangs it at the tail), armature scaled by 2, bone posed."""
    scene = new_scene("childmass")
    arm, setup = chain_armature(scene, n=2, angle=0.4)
    arm.scale = (2.0, 2.0, 2.0)
    pb = arm.pose.bones["b0"]
    pb.symplex.mass_source = "MESH"
    pb.symplex.density = 500.0
    child = bpy.data.objects.new(f"{scene.name} part", box_mesh(f"{scene.name} part", (0.1, 0.2, 0.3)))
    scene.collection.objects.link(child)
    child.parent, child.parent_type, child.parent_bone = arm, "BONE", "b0"
    child.location = (0.05, -0.3, 0.0)
    child.rotation_euler = (0.0, 0.0, 0.5)
    set_frame(scene, 1)
    # where Blender puts the child's vertices, in the posed bone's axes (scaled: the body frame drops scale)
    to_bone = world_to_posed_bone(scene, arm, "b0") @ np.array(evaluated(scene, child).matrix_world)
    verts = np.array([v.co for v in child.data.vertices]) @ to_bone[:3, :3].T + to_bone[:3, 3]
    tris = np.array([t.vertices[:] for t in child.data.loop_triangles])
    expected = mass.polyhedron(verts, tris, 500.0)
    body = read_scene(scene, setup.name).mechanism.body("b0")
    assert body.mass == pytest.approx(500.0 * 0.006 * 8, rel=1e-6)
    assert body.com == pytest.approx(expected.com, abs=1e-6)
    np.testing.assert_allclose(body.inertia, expected.inertia, atol=1e-6 * max(expected.inertia))
    assert np.linalg.norm(body.com) > 1.0  # at the tail (2 m away, scaled), not at the head


def test_bone_mass_from_vertex_groups_of_a_deformed_mesh():
    """Two closed boxes in one mesh, each weighted to one bone; a third box split between them is neither's."""
    scene = new_scene("groupmass")
    arm, setup = chain_armature(scene, n=2, angle=0.2)
    for pb in arm.pose.bones:
        pb.symplex.mass_source = "MESH"
        pb.symplex.density = 1000.0
    mesh = bpy.data.meshes.new(f"{scene.name} skin")
    boxes = [((0.2, 0.2, 0.8), (0.0, 0.1, -0.5)), ((0.1, 0.3, 0.6), (0.0, 0.0, -1.5)), ((0.1, 0.1, 0.1), (0, 0, -1))]
    verts, faces = [], []
    for size, centre in boxes:
        part = box_mesh("tmp", size, centre)
        faces += [[len(verts) + i for i in f] for f in BOX_FACES]
        verts += [tuple(v.co) for v in part.vertices]
        bpy.data.meshes.remove(part)
    mesh.from_pydata(verts, [], faces)
    skin = bpy.data.objects.new(f"{scene.name} skin", mesh)
    scene.collection.objects.link(skin)
    skin.location = (0.0, 0.0, 0.0)
    modifier = skin.modifiers.new("Armature", "ARMATURE")
    modifier.object = arm
    g0, g1 = skin.vertex_groups.new(name="b0"), skin.vertex_groups.new(name="b1")
    g0.add(list(range(0, 8)), 1.0, "REPLACE")
    g1.add(list(range(8, 16)), 0.9, "REPLACE")
    g0.add(list(range(16, 20)), 1.0, "REPLACE")  # half of the small box: its faces are not all in b0
    g1.add(list(range(20, 24)), 1.0, "REPLACE")
    g1.add(list(range(16, 20)), 0.2, "REPLACE")
    mech = read_scene(scene, setup.name).mechanism
    for name, (size, centre) in zip(("b0", "b1"), boxes):
        body, bone = mech.body(name), arm.data.bones[name]
        m = 1000.0 * np.prod(size)
        # rest pose: mesh coordinates in the bone's rest axes (bone Y runs down world -Z here)
        rest = np.array(bone.matrix_local.inverted())
        assert body.mass == pytest.approx(m, rel=1e-6)
        assert body.com == pytest.approx(rest[:3, :3] @ np.array(centre) + rest[:3, 3], abs=1e-6)
        expected = rest[:3, :3] @ box_tensor(m, size) @ rest[:3, :3].T
        np.testing.assert_allclose(tensor(body.inertia), expected, atol=1e-6 * np.max(expected))


def test_mesh_mass_errors_name_the_object_or_bone():
    scene = new_scene("meshmass_bad")
    coll = bpy.data.collections.new(f"{scene.name} c")
    scene.collection.children.link(coll)
    obj = box_object(scene, coll, f"{scene.name} lid", (1, 1, 1), (0, 0, 0))
    open_mesh = bpy.data.meshes.new(f"{scene.name} open")
    open_mesh.from_pydata([tuple(v.co) for v in obj.data.vertices], [], BOX_FACES[:-1])  # a box without its top
    obj.data = open_mesh
    obj.symplex.mass_source = "MESH"
    setup = add_setup(scene, "bad mesh", "RIGID_BODIES", collection=coll)
    expected = f"rigid body {obj.name!r} (mesh {open_mesh.name!r}): the mesh must be a closed surface"
    assert expected in problems_of(scene, setup)
    arm, arm_setup = chain_armature(scene, n=1)
    arm.pose.bones["b0"].symplex.mass_source = "MESH"
    assert "bone 'b0': Mass Properties 'Bound Mesh' found no mesh" in problems_of(scene, arm_setup)


# ----------------------------------------------------------------------------------------------
# Round trips through build.py


ROUND_TRIP = [p for p in ("pendulum", "double_pendulum", "chain_5", "four_bar", "scissor_lift", "slider_crank",
                          "closed_chain_device") if p in list_presets()]


@pytest.mark.parametrize("preset", ROUND_TRIP)
def test_rigid_body_build_reads_back_as_the_same_mechanism(preset):
    scene = new_scene(preset)
    mech = load_mechanism(preset_path(preset))
    try:
        built = build.build_rigid_bodies(scene, mech)
    except build.BuildError as err:
        pytest.skip(f"{preset} cannot be built as rigid bodies: {err}")
    got = read_scene(scene, built.setup).mechanism
    renamed = {obj: body for body, obj in built.objects.items()}
    got = got.replace(bodies=tuple(dataclasses.replace(b, name=renamed.get(b.name, b.name)) for b in got.bodies))
    joints = []
    for j in got.joints:
        parent, child = renamed.get(j.parent, j.parent), renamed.get(j.child, j.child)
        name = j.name if j.name in {k.name for k in mech.joints} else j.name.rsplit(".", 1)[0]
        joints.append(dataclasses.replace(j, name=name, parent=parent, child=child))
    got = got.replace(joints=tuple(joints))
    expected = mech.replace(joints=tuple(
        dataclasses.replace(j, q0=() if j.prescribed else (j.q0 or (0.0,) * j.ndof),
                            v0=() if j.prescribed else (j.v0 or (0.0,) * j.ndof)) for j in mech.joints))
    assert_same(same_orientation(by_name(got)), same_orientation(by_name(expected)), preset, tol=1e-6)


def limited_chain():
    chain = generate.pendulum_chain(3)
    joints = list(chain.joints)
    joints[1] = dataclasses.replace(joints[1], lower=(-0.4,), upper=(0.5,))
    return chain.replace(joints=tuple(joints))


@pytest.mark.parametrize("mech", [generate.pendulum_chain(4), generate.scissor_lift(segments=2), limited_chain()],
                         ids=["chain", "scissor", "limited chain"])
def test_armature_build_reads_back_as_the_expected_mechanism(mech):
    scene = new_scene("arm")
    built, expected = build.build_armature(scene, mech)
    got = read_scene(scene, built.setup).mechanism
    assert_same(same_orientation(by_name(got)), same_orientation(by_name(expected)), mech.name, tol=1e-6)
    loops = bpy.data.objects[built.setup].data.symplex.loops
    assert len(loops) == len(mech.joints) - len(mech.bodies)  # every joint beyond the spanning tree


def test_limits_a_bone_cannot_carry_are_refused_by_name():
    chain = limited_chain()
    joints = list(chain.joints)
    joints[1] = dataclasses.replace(joints[1], lower=(0.1,), upper=(0.5,))  # IK limits need lower <= 0
    with pytest.raises(build.BuildError, match="joint 'hinge_2': limits \\[0.1, 0.5\\] cannot be bone IK limits"):
        build.build_armature(new_scene("badlimits"), chain.replace(joints=tuple(joints)))


def test_a_preset_with_colliders_is_not_built_as_an_armature():
    mech = load_mechanism(preset_path("box_drop"))
    with pytest.raises(build.BuildError, match="collider .*: bones do not collide"):
        build.build_armature(new_scene("collide"), mech)


# ----------------------------------------------------------------------------------------------
# Rigid body constraints


def one_constraint(kind: str, configure=None, rotation=TURN_Z_TO_Y, reverse=False):
    """A passive ground and one active box joined by one constraint of `kind` at (0, 0, 1)."""
    scene = new_scene(kind.lower())
    coll = bpy.data.collections.new(f"{scene.name} c")
    scene.collection.children.link(coll)
    ground = box_object(scene, coll, f"{scene.name} ground", (1, 1, 0.1), (0, 0, 0), passive=True)
    box = box_object(scene, coll, f"{scene.name} box", (0.2, 0.2, 0.8), (0, 0, 0.6))
    ends = (box, ground) if reverse else (ground, box)
    empty = constraint_object(scene, coll, f"{scene.name} joint", kind, *ends, (0, 0, 1), rotation)
    if configure is not None:
        configure(empty.rigid_body_constraint)
    setup = add_setup(scene, kind, "RIGID_BODIES", collection=coll)
    return scene, setup, empty, box


def lock_all_but(rbc, free: set[str]):
    for kind in ("lin", "ang"):
        for axis in "xyz":
            if f"{kind}_{axis}" not in free:
                setattr(rbc, f"use_limit_{kind}_{axis}", True)
                setattr(rbc, f"limit_{kind}_{axis}_lower", 0.0)
                setattr(rbc, f"limit_{kind}_{axis}_upper", 0.0)


def joint_of(kind, configure=None, **kw):
    scene, setup, empty, box = one_constraint(kind, configure, **kw)
    mech = read_scene(scene, setup.name).mechanism
    return mech.joint(empty.name), box


Y, Z = (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
NEG_Z = (0.0, 0.0, -1.0)


def test_hinge_slider_piston_point_fixed():
    joint, box = joint_of("HINGE")
    assert (joint.type, joint.parent, joint.child) == ("revolute", WORLD, box.name)
    assert joint.axis == pytest.approx(Y) and joint.anchor == pytest.approx((0, 0, 1))
    assert joint_of("SLIDER")[0].type == "prismatic"
    assert joint_of("SLIDER")[0].axis == pytest.approx((1, 0, 0))
    assert joint_of("PISTON")[0].type == "cylindrical"
    assert joint_of("POINT")[0].type == "ball"
    assert joint_of("FIXED")[0].type == "fixed"


def test_hinge_limits_and_generic_spring():
    def limited(rbc):
        rbc.use_limit_ang_z = True
        rbc.limit_ang_z_lower, rbc.limit_ang_z_upper = -0.5, 0.7

    joint = joint_of("HINGE", limited)[0]
    assert joint.lower == pytest.approx((-0.5,)) and joint.upper == pytest.approx((0.7,))

    def spring(rbc):
        lock_all_but(rbc, {"ang_z"})
        rbc.use_spring_ang_z = True
        rbc.spring_stiffness_ang_z = 12.0
        rbc.spring_damping_ang_z = 0.25

    joint = joint_of("GENERIC_SPRING", spring)[0]
    assert (joint.type, joint.stiffness, joint.damping) == ("revolute", pytest.approx(12.0), pytest.approx(0.25))
    assert joint.axis == pytest.approx(Y)


def test_slider_piston_and_generic_limits_map_per_coordinate():
    def slider(rbc):
        rbc.use_limit_lin_x = True
        rbc.limit_lin_x_lower, rbc.limit_lin_x_upper = -0.25, 0.5

    joint = joint_of("SLIDER", slider)[0]
    assert (joint.type, joint.lower, joint.upper) == ("prismatic", (-0.25,), (0.5,))

    def piston(rbc):
        rbc.use_limit_lin_x = True
        rbc.limit_lin_x_lower, rbc.limit_lin_x_upper = -0.25, 0.5
        rbc.use_limit_ang_x = True
        rbc.limit_ang_x_lower, rbc.limit_ang_x_upper = -1.0, 2.0

    joint = joint_of("PISTON", piston)[0]
    assert (joint.type, joint.lower, joint.upper) == ("cylindrical", (-1.0, -0.25), (2.0, 0.5))  # (angle, slide)

    def piston_slide_only(rbc):
        rbc.use_limit_lin_x = True
        rbc.limit_lin_x_lower, rbc.limit_lin_x_upper = 0.0, 0.5

    joint = joint_of("PISTON", piston_slide_only)[0]
    assert joint.lower == (-math.inf, 0.0) and joint.upper == (math.inf, 0.5)

    def generic_hinge(rbc):
        lock_all_but(rbc, {"ang_y"})
        rbc.use_limit_ang_y = True
        rbc.limit_ang_y_lower, rbc.limit_ang_y_upper = -0.3, 0.6

    joint = joint_of("GENERIC", generic_hinge)[0]
    assert (joint.type, joint.lower, joint.upper) == ("revolute", (-0.3,), (0.6,))

    def generic_universal(rbc):
        lock_all_but(rbc, {"ang_x", "ang_z"})
        rbc.use_limit_ang_z = True
        rbc.limit_ang_z_lower, rbc.limit_ang_z_upper = -0.5, 0.5
        rbc.use_limit_ang_x = True
        rbc.limit_ang_x_lower, rbc.limit_ang_x_upper = 0.4, -0.4  # lower > upper: free, as in Bullet

    joint = joint_of("GENERIC", generic_universal)[0]
    assert joint.type == "universal"
    assert joint.lower == (-math.inf, -0.5) and joint.upper == (math.inf, 0.5)  # (about axis X, about axis2 Z)

    def generic_planar(rbc):
        lock_all_but(rbc, {"lin_x", "lin_y", "ang_z"})
        rbc.use_limit_lin_y = True
        rbc.limit_lin_y_lower, rbc.limit_lin_y_upper = -0.1, 0.2

    joint = joint_of("GENERIC", generic_planar)[0]
    assert joint.type == "planar"
    assert joint.lower == (-math.inf, -0.1, -math.inf) and joint.upper == (math.inf, 0.2, math.inf)


def test_limits_turn_with_a_reversed_constraint():
    """Object 1 is the moving box: the joint is turned round, its axis flips and the limits keep their meaning."""
    def limited(rbc):
        rbc.use_limit_ang_z = True
        rbc.limit_ang_z_lower, rbc.limit_ang_z_upper = -0.5, 0.7

    joint = joint_of("HINGE", limited, reverse=True)[0]
    assert joint.parent == WORLD and joint.axis == pytest.approx((0, -1, 0))
    assert (joint.lower, joint.upper) == ((-0.5,), (0.7,))


def test_a_reversed_universal_constraint_keeps_each_limit_on_its_axis():
    """Turned round, a universal joint's coordinates swap (solver/joint_reverse.py): so do its limits."""
    def limited(rbc):
        lock_all_but(rbc, {"ang_x", "ang_z"})
        rbc.use_limit_ang_x = rbc.use_limit_ang_z = True
        rbc.limit_ang_x_lower, rbc.limit_ang_x_upper = -0.3, 0.4
        rbc.limit_ang_z_lower, rbc.limit_ang_z_upper = -0.1, 0.2

    forward = joint_of("GENERIC", limited)[0]
    turned = joint_of("GENERIC", limited, reverse=True)[0]
    assert forward.type == turned.type == "universal" and forward.parent == turned.parent == WORLD
    assert (forward.lower, forward.upper) == ((-0.3, -0.1), (0.4, 0.2))  # (about axis X, about axis2 Z)
    assert (turned.lower, turned.upper) == ((-0.1, -0.3), (0.2, 0.4))  # (about -Z, about -X)
    assert turned.axis == pytest.approx(tuple(-x for x in forward.axis2))
    assert turned.axis2 == pytest.approx(tuple(-x for x in forward.axis))


def test_hinge_locked_by_its_limit_is_reported():
    def locked(rbc):
        rbc.use_limit_ang_z = True
        rbc.limit_ang_z_lower = rbc.limit_ang_z_upper = 0.2

    scene, setup, empty, _ = one_constraint("HINGE", locked)
    assert f"{empty.name!r} (HINGE): its angular Z limit has lower == upper" in problems_of(scene, setup)


def test_start_outside_the_limits_is_reported():
    def limited(rbc):
        rbc.use_limit_ang_z = True
        rbc.limit_ang_z_lower, rbc.limit_ang_z_upper = -0.5, 0.7

    scene, setup, empty, _ = one_constraint("HINGE", limited)
    empty.symplex.q0 = (1.0, 0, 0, 0, 0, 0)
    message = problems_of(scene, setup)
    assert repr(empty.name) in message and "within the limits" in message


@pytest.mark.parametrize("free, expected", [
    (set(), "fixed"),
    ({"ang_x"}, "revolute"),
    ({"lin_y"}, "prismatic"),
    ({"lin_x", "ang_x"}, "cylindrical"),
    ({"ang_x", "ang_y"}, "universal"),
    ({"ang_x", "ang_y", "ang_z"}, "ball"),
    ({"lin_x", "lin_y", "ang_z"}, "planar"),
    ({"lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z"}, "free"),
])
def test_generic_lock_patterns(free, expected):
    joint = joint_of("GENERIC", lambda rbc: lock_all_but(rbc, free))[0]
    assert joint.type == expected


def test_generic_universal_axes_follow_the_constraint_object():
    joint = joint_of("GENERIC", lambda rbc: lock_all_but(rbc, {"ang_x", "ang_y"}), rotation=(0, 0, 0))[0]
    assert joint.axis == pytest.approx((1, 0, 0)) and joint.axis2 == pytest.approx(Y)


def test_reversed_constraint_hangs_from_the_world_with_the_axis_turned():
    joint, box = joint_of("HINGE", reverse=True)
    assert (joint.parent, joint.child) == (WORLD, box.name)
    assert joint.axis == pytest.approx((0.0, -1.0, 0.0))


def test_motor_becomes_a_velocity_servo_on_the_hinge():
    scene, setup, hinge, box = one_constraint("HINGE")
    coll = setup.collection
    ground = hinge.rigid_body_constraint.object1
    motor = constraint_object(scene, coll, f"{scene.name} motor", "MOTOR", ground, box, (0, 0, 1), (0, 0, math.pi / 2))
    motor.rigid_body_constraint.use_motor_ang = True
    motor.rigid_body_constraint.motor_ang_target_velocity = 3.0
    motor.symplex.motor_gain = 40.0
    joint = read_scene(scene, setup.name).mechanism.joint(hinge.name)
    assert joint.motor is not None and joint.motor.mode == "velocity"
    assert joint.motor.target_velocity == pytest.approx(3.0) and joint.motor.gain == pytest.approx(40.0)


def test_animated_body_on_a_hinge_drives_the_mechanism():
    scene, setup, hinge, box = one_constraint("HINGE")
    box.rigid_body.kinematic = True
    box.rotation_mode = "XYZ"
    box.keyframe_insert("rotation_euler", frame=1)
    box.rotation_euler = (0.0, 1.0, 0.0)
    box.keyframe_insert("rotation_euler", frame=11)
    for fc in compat.fcurves(compat.assigned(box)):
        for key in fc.keyframe_points:
            key.interpolation = "LINEAR"
    sm = read_scene(scene, setup.name)
    joint = sm.mechanism.joint(hinge.name)
    assert joint.prescribed is not None
    assert not [t for t in sm.targets if t.body == box.name and t.write]  # its own keys stay in charge
    # rotation +1 rad about world Y over 10 frames = 0.4 s
    assert evaluate(joint.prescribed, 0.4) == pytest.approx(1.0, abs=1e-5)


def test_four_bar_from_blender_constraints():
    scene = new_scene("fourbar")
    _coll, setup, bodies, hinges = rigid_four_bar(scene)
    mech = read_scene(scene, setup.name).mechanism
    assert {b.name for b in mech.bodies} == {b.name for b in bodies}
    assert {j.name for j in mech.joints} == {h.name for h in hinges}
    assert all(j.type == "revolute" and abs(abs(j.axis[1]) - 1) < 1e-12 for j in mech.joints)
    assert mech.joint(hinges[0].name).v0 == pytest.approx((4.0,))


# ----------------------------------------------------------------------------------------------
# Armatures


@pytest.mark.parametrize("mode, rot_free, loc_free, expected, axis", [
    ("XYZ", (0,), (), "revolute", 0),
    ("ZXY", (1,), (), "revolute", 1),
    ("QUATERNION", (2,), (), "revolute", 2),
    ("XYZ", (0, 1), (), "universal", 1),
    ("QUATERNION", (0, 1, 2), (), "ball", 2),
    ("AXIS_ANGLE", (0, 1, 2), (), "ball", 2),
    ("XYZ", (), (), "fixed", 2),
    ("XYZ", (), (1,), "prismatic", 1),
    ("XYZ", (1,), (1,), "cylindrical", 1),
    ("XYZ", (2,), (0, 1), "planar", 2),
    ("XYZ", (0, 1, 2), (0, 1, 2), "free", 2),
])
def test_bone_rotation_mode_and_locks_give_the_joint(mode, rot_free, loc_free, expected, axis):
    scene = new_scene("layout")
    arm, setup = chain_armature(scene, n=2, connected=False, angle=0.0)
    pb = arm.pose.bones["b1"]
    pb.rotation_mode = mode
    pb.lock_rotation = [i not in rot_free for i in range(3)]
    pb.lock_location = [i not in loc_free for i in range(3)]
    if len(rot_free) == 1:
        set_bone_angle(pb, rot_free[0], 0.3)
    joint = read_scene(scene, setup.name).mechanism.joint("b1")
    assert (joint.type, joint.parent) == (expected, "b0")
    if expected not in ("free", "ball", "fixed"):
        bone_axes = np.array(arm.pose.bones["b1"].bone.matrix_local.to_3x3())
        assert joint.axis == pytest.approx(tuple(bone_axes[:, axis]), abs=1e-6)
    if expected in ("revolute", "cylindrical"):
        assert joint.q0[0] == pytest.approx(0.3, abs=1e-6)


def test_universal_bone_coordinates_from_the_euler_pose():
    scene = new_scene("universal")
    arm, setup = chain_armature(scene, n=1, angle=0.0)
    pb = arm.pose.bones["b0"]
    pb.rotation_mode = "XYZ"
    pb.lock_rotation = (False, False, True)
    pb.rotation_euler = (0.2, -0.4, 0.0)
    joint = read_scene(scene, setup.name).mechanism.joint("b0")
    # X applied first (inner), Y later (outer): q = (outer, inner)
    assert joint.q0 == pytest.approx((-0.4, 0.2), abs=1e-6)


def test_chain_armature_bodies_and_joints():
    scene = new_scene("chain")
    arm, setup = chain_armature(scene, n=3, angle=0.5)
    mech = read_scene(scene, setup.name).mechanism
    assert [b.name for b in mech.bodies] == ["b0", "b1", "b2"]
    assert [(j.parent, j.child) for j in mech.joints] == [(WORLD, "b0"), ("b0", "b1"), ("b1", "b2")]
    assert mech.joint("b0").q0 == pytest.approx((0.5,), abs=1e-6)
    b1 = mech.body("b1")
    assert b1.position == pytest.approx((0, 0, -1)) and b1.com == pytest.approx((0, 0.5, 0))
    assert b1.inertia[1] == pytest.approx(0.5 * 0.05**2)  # rod: m r^2 / 2 about the bone


def test_ik_limits_and_stiffness():
    scene = new_scene("ik")
    arm, setup = chain_armature(scene, n=1, angle=0.0)
    pb = arm.pose.bones["b0"]
    pb.use_ik_limit_x = True
    pb.ik_min_x, pb.ik_max_x = -0.5, 0.5
    pb.ik_stiffness_x = 0.25
    joint = read_scene(scene, setup.name).mechanism.joint("b0")
    assert joint.lower == pytest.approx((-0.5,)) and joint.upper == pytest.approx((0.5,))
    assert joint.stiffness == pytest.approx(0.25)


def test_ik_stiffness_on_a_ball_bone_is_its_rotation_spring():
    scene = new_scene("ik_ball")
    arm, setup = chain_armature(scene, n=1, angle=0.0)
    pb = arm.pose.bones["b0"]
    pb.lock_rotation = (False, False, False)
    pb.ik_stiffness_x = pb.ik_stiffness_y = pb.ik_stiffness_z = 0.25
    joint = read_scene(scene, setup.name).mechanism.joint("b0")
    assert (joint.type, joint.stiffness) == ("ball", pytest.approx(0.25))
    pb.ik_stiffness_y = 0.5
    assert "bone 'b0': IK stiffness must be the same on every free rotation axis" in problems_of(scene, setup)


def test_a_rope_of_ball_bones_warns_in_the_tree_method_only():
    scene = new_scene("rope")
    arm, setup = chain_armature(scene, n=ROPE_LINKS, angle=0.0)
    for pb in arm.pose.bones:
        pb.lock_rotation = (False, False, False)
    errors, warnings = read.validate_setup(scene, setup)
    assert not errors and any(f"{ROPE_LINKS} ball joints on slender links" in w for w in warnings), warnings
    setup.method = "maximal"
    assert not any("slender" in w for w in read.validate_setup(scene, setup)[1])
    setup.method = "tree"
    arm.pose.bones["b0"].lock_rotation = (False, True, True)  # one link fewer: below the threshold
    assert not any("slender" in w for w in read.validate_setup(scene, setup)[1])


def test_keyed_unsimulated_parent_is_prescribed():
    scene = new_scene("drive", frames=11)
    arm, setup = chain_armature(scene, n=2, angle=0.0)
    driver = arm.pose.bones["b0"]
    driver.symplex.simulate = False
    driver.rotation_euler = (0.0, 0.0, 0.0)
    driver.keyframe_insert("rotation_euler", index=0, frame=1)
    driver.rotation_euler = (1.0, 0.0, 0.0)
    driver.keyframe_insert("rotation_euler", index=0, frame=11)
    sm = read_scene(scene, setup.name)
    joint = sm.mechanism.joint("b0")
    assert joint.prescribed is not None
    fcurve = compat.fcurves(compat.assigned(arm))[0]
    for t, value in zip(joint.prescribed.times, joint.prescribed.values):
        assert value == pytest.approx(fcurve.evaluate(1 + t * 25), abs=1e-6)
    assert joint.prescribed.values[-1] == pytest.approx(1.0, abs=1e-6)
    assert [t.write for t in sm.targets] == [False, True]


def test_loops_from_the_armature_list():
    scene = new_scene("loop")
    arm, setup = chain_armature(scene, n=2, angle=0.0)
    loop = arm.data.symplex.loops.add()
    loop.name, loop.bone_a, loop.point, loop.target, loop.type = "tie", "b1", (0.0, 1.0, 0.0), "WORLD", "HINGE"
    loop.axis = "X"
    joint = read_scene(scene, setup.name).mechanism.joint("tie")
    assert (joint.type, joint.parent, joint.child) == ("revolute", "b1", WORLD)
    assert joint.anchor == pytest.approx((0, 0, -2)) and joint.axis == pytest.approx((1, 0, 0))


# ----------------------------------------------------------------------------------------------
# Every error names its offender


def test_constraint_with_a_missing_object():
    scene, setup, empty, _ = one_constraint("HINGE")
    empty.rigid_body_constraint.object1 = None
    with pytest.raises(SceneError, match=f"{empty.name!r}: Object 1 is not set"):
        read_scene(scene, setup.name)


def test_constraint_to_an_object_without_rigid_body():
    scene, setup, empty, _ = one_constraint("HINGE")
    plain = bpy.data.objects.new(f"{scene.name} plain", None)
    setup.collection.objects.link(plain)
    empty.rigid_body_constraint.object2 = plain
    assert f"{empty.name!r}: Object 2 {plain.name!r} is not a rigid body" in problems_of(scene, setup)


def test_constraint_to_a_body_outside_the_collection():
    scene, setup, empty, _ = one_constraint("HINGE")
    other = bpy.data.collections.new(f"{scene.name} other")
    scene.collection.children.link(other)
    stranger = box_object(scene, other, f"{scene.name} stranger", (1, 1, 1), (3, 0, 0))
    empty.rigid_body_constraint.object2 = stranger
    assert f"{stranger.name!r} is not in collection" in problems_of(scene, setup)


def test_unsupported_generic_pattern():
    scene, setup, empty, _ = one_constraint("GENERIC", lambda rbc: lock_all_but(rbc, {"lin_x", "ang_y"}))
    assert f"{empty.name!r} (GENERIC): free axes linear X, angular Y" in problems_of(scene, setup)


def test_motor_without_a_hinge_and_misaligned_motor():
    scene, setup, hinge, box = one_constraint("SLIDER")
    coll = setup.collection
    motor = constraint_object(scene, coll, f"{scene.name} motor", "MOTOR", hinge.rigid_body_constraint.object1, box, (0, 0, 1))
    motor.rigid_body_constraint.use_motor_ang = True
    assert f"motor constraint {motor.name!r}: no hinge constraint joins" in problems_of(scene, setup)
    scene, setup, hinge, box = one_constraint("HINGE")
    motor = constraint_object(scene, setup.collection, f"{scene.name} motor", "MOTOR",
                              hinge.rigid_body_constraint.object1, box, (0, 0, 1))
    motor.rigid_body_constraint.use_motor_ang = True  # its X is world X, the hinge is about Y
    assert f"motor constraint {motor.name!r}: its local X axis must lie along" in problems_of(scene, setup)


def test_animated_passive_and_unheld_animated_bodies():
    scene, setup, hinge, box = one_constraint("HINGE")
    ground = hinge.rigid_body_constraint.object1
    ground.rigid_body.kinematic = True
    assert f"rigid body {ground.name!r} is passive and Animated" in problems_of(scene, setup)
    scene, setup, hinge, box = one_constraint("POINT")
    box.rigid_body.kinematic = True
    assert f"rigid body {box.name!r} is Animated: that is supported only" in problems_of(scene, setup)


def test_generic_spring_on_a_ball():
    def ball(rbc):
        lock_all_but(rbc, {"ang_x", "ang_y", "ang_z"})
        for axis in "xyz":
            setattr(rbc, f"use_spring_ang_{axis}", True)
            setattr(rbc, f"spring_stiffness_ang_{axis}", 8.0)
            setattr(rbc, f"spring_damping_ang_{axis}", 0.5)

    joint = joint_of("GENERIC_SPRING", ball)[0]
    assert (joint.type, joint.stiffness, joint.damping) == ("ball", pytest.approx(8.0), pytest.approx(0.5))


def test_springs_that_differ_per_axis():
    def springs(rbc):
        lock_all_but(rbc, {"ang_x", "ang_y"})
        rbc.use_spring_ang_x = True
        rbc.spring_stiffness_ang_x = 1.0

    scene, setup, empty, _ = one_constraint("GENERIC_SPRING", springs)
    assert f"{empty.name!r}: springs must be on every free axis" in problems_of(scene, setup)


def test_limits_on_a_generic_ball():
    def ball(rbc):
        lock_all_but(rbc, {"ang_x", "ang_y", "ang_z"})
        rbc.use_limit_ang_x = True
        rbc.limit_ang_x_lower, rbc.limit_ang_x_upper = -0.1, 0.1

    scene, setup, empty, _ = one_constraint("GENERIC", ball)
    assert f"{empty.name!r}: limits on a ball joint are not supported" in problems_of(scene, setup)


def test_planar_constraint_that_would_need_turning_round():
    scene, setup, empty, _ = one_constraint("GENERIC", lambda rbc: lock_all_but(rbc, {"lin_x", "lin_y", "ang_z"}),
                                            reverse=True)
    assert f"{empty.name!r}: a planar joint" in problems_of(scene, setup) and "swap its two objects" in problems_of(scene, setup)


def test_two_passive_objects_joined():
    scene, setup, empty, box = one_constraint("HINGE")
    box.rigid_body.type = "PASSIVE"
    assert f"rigid body constraint {empty.name!r} joins 'world' to itself" in problems_of(scene, setup)


def test_delta_transforms_and_missing_collection_or_armature():
    scene, setup, _empty, box = one_constraint("HINGE")
    box.delta_location = (0.1, 0, 0)
    assert f"rigid body {box.name!r} has delta transforms" in problems_of(scene, setup)
    setup.collection = None
    assert f"setup {setup.name!r}: choose the collection" in problems_of(scene, setup)
    arm_setup = add_setup(scene, "no armature", "ARMATURE")
    assert "setup 'no armature': choose its armature" in problems_of(scene, arm_setup)


def test_armature_without_simulated_bones():
    scene = new_scene("nosim")
    arm, setup = chain_armature(scene, n=2)
    for pb in arm.pose.bones:
        pb.symplex.simulate = False
    assert f"armature {arm.name!r}: no bone is marked Simulate" in problems_of(scene, setup)


@pytest.mark.parametrize("mode, rot_free, loc_free, message", [
    ("QUATERNION", (0, 1), (), "two free rotation axes need an Euler rotation mode"),
    ("AXIS_ANGLE", (0,), (), "an Axis Angle bone must lock all rotation axes or none"),
    ("XYZ", (0, 1), (2,), "free channels rotation X, rotation Y, location Z match no supported joint"),
])
def test_bone_with_unsupported_locks(mode, rot_free, loc_free, message):
    scene = new_scene("badbone")
    arm, setup = chain_armature(scene, n=2, connected=False)
    pb = arm.pose.bones["b1"]
    pb.rotation_mode = mode
    pb.lock_rotation = [i not in rot_free for i in range(3)]
    pb.lock_location = [i not in loc_free for i in range(3)]
    assert f"bone 'b1' ({mode}): {message}" in problems_of(scene, setup)


def test_bone_constraints_and_inheritance():
    scene = new_scene("bonecon")
    arm, setup = chain_armature(scene, n=2)
    arm.pose.bones["b1"].constraints.new("COPY_ROTATION")
    arm.data.bones["b1"].use_inherit_rotation = False
    text = problems_of(scene, setup)
    assert "bone 'b1': bone constraints on a simulated bone are not supported" in text
    assert "bone 'b1': a simulated bone must inherit rotation and scale fully" in text


def test_keyed_driver_bone_with_two_free_channels():
    scene = new_scene("driver2")
    arm, setup = chain_armature(scene, n=2)
    driver = arm.pose.bones["b0"]
    driver.symplex.simulate = False
    driver.lock_rotation = (False, False, True)
    driver.keyframe_insert("rotation_euler", frame=1)
    assert "bone 'b0' is keyed and drives simulated bones, so it needs exactly one free channel" in problems_of(scene, setup)


def test_loop_errors_name_the_loop():
    scene = new_scene("badloop")
    arm, setup = chain_armature(scene, n=2)
    loops = arm.data.symplex.loops

    def loop(name, **values):
        item = loops.add()
        item.name = name
        for key, value in values.items():
            setattr(item, key, value)

    loop("ghost", bone_a="nope", target="WORLD")
    loop("missing b", bone_a="b1", target="BONE", bone_b="nope")
    loop("self", bone_a="b1", target="BONE", bone_b="b1")
    loop("b0", bone_a="b1", target="WORLD")
    mover = bpy.data.objects.new(f"{scene.name} mover", None)
    scene.collection.objects.link(mover)
    mover.keyframe_insert("location", frame=1)
    loop("moving", bone_a="b1", target="OBJECT", object_b=mover)
    loop("nothing", bone_a="b1", target="OBJECT")
    text = problems_of(scene, setup)
    where = f"of armature {arm.name!r}"
    assert f"loop 'ghost' {where}: bone A 'nope' does not exist" in text
    assert f"loop 'missing b' {where}: bone B 'nope' does not exist" in text
    assert f"loop 'self' {where}: both ends are on body 'b1'" in text
    assert f"loop 'b0' {where}: a loop may not share its name with a bone" in text
    assert f"loop 'moving' {where}: target object {mover.name!r} is animated" in text
    assert f"loop 'nothing' {where}: choose its target object" in text


def test_loop_on_an_unsimulated_bone():
    scene = new_scene("loopsim")
    arm, setup = chain_armature(scene, n=2)
    for pb in arm.pose.bones:
        pb.symplex.simulate = pb.name == "b1"
    item = arm.data.symplex.loops.add()
    item.name, item.bone_a, item.target = "tie", "b0", "WORLD"
    assert f"loop 'tie' of armature {arm.name!r}: bone A 'b0' is not simulated" in problems_of(scene, setup)


def test_validate_lists_every_problem_and_warnings():
    scene, setup, empty, box = one_constraint("HINGE")
    coll = setup.collection
    broken = constraint_object(scene, coll, f"{scene.name} broken", "HINGE", None, box, (0, 0, 0))
    off = constraint_object(scene, coll, f"{scene.name} off", "HINGE", box, box, (0, 0, 0))
    off.rigid_body_constraint.enabled = False
    empty.rigid_body_constraint.use_breaking = True
    box.delta_location = (1, 0, 0)
    errors, warnings = read.validate_setup(scene, setup)
    assert any(broken.name in e for e in errors) and any("delta transforms" in e for e in errors)
    assert any(f"{off.name!r} is disabled" in w for w in warnings)
    assert any(f"{empty.name!r}: breaking is not simulated" in w for w in warnings)
    with pytest.raises(SceneError) as err:
        read_scene(scene, setup.name)
    assert err.value.problems == errors


def test_scene_error_is_a_mechanism_error():
    assert issubclass(SceneError, MechanismError)

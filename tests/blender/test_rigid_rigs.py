"""Rigid-body rigs built with Blender's own operators, read whole and baked.

Object > Rigid Body > Add Active (bpy.ops.rigidbody.object_add) and Object > Rigid Body > Connect
(bpy.ops.rigidbody.connect) build the rigs exactly as an artist would; Connect links its constraint
empties to the Scene Collection (and RigidBodyConstraints) whatever collection the bodies are in.
Add Setup, Validate and Bake run as operators. Checked: Add Setup's choice of collection (never
Blender's RigidBodyWorld), what Validate and Bake say they read, the hinges closed in the baked keys,
and the chain hanging instead of falling. Also: a disabled constraint that would free a body, a free
armature chain root, Bullet's friction product, and damping and restitution reported as ignored.
Runs under bpy 5.0 and 4.2.
"""

from __future__ import annotations

import contextlib
import math

import bpy
import numpy as np
import pytest
from mathutils import Vector

from addon.bridge import read, summary
from addon.solver.collision.world import CollisionWorld
from tests.blender.scenes import box_mesh, chain_armature, evaluated, new_scene, read_scene, set_frame
from tests.blender.scenes import symplex  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("symplex")

HINGE_ABOUT_Y = (math.pi / 2, 0.0, 0.0)  # a Connect empty's local Z (the hinge axis) turned onto world -Y
CLOSED = 1e-5  # m: how far apart the two ends of a hinge may be in the baked keys


@contextlib.contextmanager
def in_window(scene):
    """`scene` shown in the window, as the artist's operators need (restored afterwards)."""
    window = bpy.context.window
    previous = window.scene
    window.scene = scene
    try:
        yield bpy.context.view_layer
    finally:
        window.scene = previous


def boxes(scene, own_collection: bool, specs) -> list[bpy.types.Object]:
    """Box objects (name, size, location, rotation about Y) in a new collection or the Scene Collection only."""
    if own_collection:
        collection = bpy.data.collections.new(f"{scene.name} rig")
        scene.collection.children.link(collection)
    else:
        collection = scene.collection
    objects = []
    for name, size, location, turn in specs:
        obj = bpy.data.objects.new(f"{scene.name} {name}", box_mesh(f"{scene.name} {name}", size))
        obj.location = location
        obj.rotation_euler = (0.0, turn, 0.0)
        collection.objects.link(obj)
        objects.append(obj)
    return objects


def add_rigid_bodies(view_layer, objects, passive=()) -> None:
    """Object > Rigid Body > Add Active (Add Passive for `passive`), one object at a time."""
    for obj in objects:
        view_layer.objects.active = obj
        assert bpy.ops.rigidbody.object_add(type="PASSIVE" if obj in passive else "ACTIVE") == {"FINISHED"}


def connect(view_layer, active, others, pattern: str) -> list[bpy.types.Object]:
    """Object > Rigid Body > Connect (Hinge) with `active` active and `others` selected; the new empties."""
    before = set(bpy.data.objects)
    for obj in view_layer.objects:
        obj.select_set(obj in others or obj == active)
    view_layer.objects.active = active
    assert bpy.ops.rigidbody.connect(con_type="HINGE", pivot_type="CENTER", connection_pattern=pattern) == {"FINISHED"}
    return sorted(set(bpy.data.objects) - before, key=lambda o: o.name)


def add_setup(scene, view_layer, active):
    """Add Setup with `active` active; the new setup."""
    view_layer.objects.active = active
    assert bpy.ops.symplex.setup_add() == {"FINISHED"}
    return scene.symplex.setups[scene.symplex.active_setup]


def chain_rig(scene, own_collection: bool, n: int = 5):
    """n boxes 1 m long along +X hanging from a passive box at the origin, hinged (Connect, Chain by
    Distance) at the midpoints of their origins, the hinges turned about world Y: it swings down."""
    specs = [("anchor", (0.2, 0.2, 0.2), (0.0, 0.0, 0.0), 0.0)]
    specs += [(f"link{i}", (1.0, 0.1, 0.1), (float(i), 0.0, 0.0), 0.0) for i in range(1, n + 1)]
    objects = boxes(scene, own_collection, specs)
    with in_window(scene) as view_layer:
        add_rigid_bodies(view_layer, objects, passive=objects[:1])
        hinges = connect(view_layer, objects[0], objects[1:], "CHAIN_DISTANCE")
        for hinge in hinges:
            hinge.rotation_euler = HINGE_ABOUT_Y
        setup = add_setup(scene, view_layer, objects[2])
    return setup, objects, hinges


# Four-bar of tests/blender/scenes.rigid_four_bar: crank O2 -> A, coupler A -> B, rocker O4 -> B.
O2, A, O4 = Vector((0.0, 0.0, 0.0)), Vector((0.0, 0.0, 0.1)), Vector((0.4, 0.0, 0.0))
B = Vector((0.2987218950531729, 0.0, 0.2823875802126918))


def four_bar_rig(scene, own_collection: bool):
    """Ground (passive), crank, coupler and rocker; each hinge made by Connect (Selected to Active) between
    two of them, its empty then moved onto the pivot and turned about world Y; the crank starts at 4 rad/s."""

    def link(name, p, q):
        d = q - p
        return (name, (d.length, 0.02, 0.02), tuple((p + q) / 2), -math.atan2(d.z, d.x))

    specs = [("ground", (0.6, 0.05, 0.05), (0.2, 0.0, -0.05), 0.0), link("crank", O2, A), link("coupler", A, B),
             link("rocker", O4, B)]
    ground, crank, coupler, rocker = objects = boxes(scene, own_collection, specs)
    hinges = []
    with in_window(scene) as view_layer:
        add_rigid_bodies(view_layer, objects, passive=[ground])
        for pivot, first, second in ((O2, ground, crank), (A, crank, coupler), (B, coupler, rocker),
                                     (O4, rocker, ground)):
            (hinge,) = connect(view_layer, first, [second], "SELECTED_TO_ACTIVE")
            hinge.location = pivot
            hinge.rotation_euler = HINGE_ABOUT_Y
            hinges.append(hinge)
        hinges[0].symplex.v0 = (4.0, 0, 0, 0, 0, 0)
        setup = add_setup(scene, view_layer, crank)
    return setup, objects, hinges


RIGS = {"chain": (chain_rig, "5 bodies, 5 joints (5 revolute), 0 loops, 0 free bodies, 0 prescribed joints"),
        "four_bar": (four_bar_rig, "3 bodies, 4 joints (4 revolute), 1 loop, 0 free bodies, 0 prescribed joints")}


def hinge_points(hinges):
    """For each hinge: (name, start anchor, [(moving end, anchor in its own axes)])."""
    carried = []
    for hinge in hinges:
        anchor = hinge.matrix_world.translation.copy()
        rbc = hinge.rigid_body_constraint
        ends = [e for e in (rbc.object1, rbc.object2) if e.rigid_body.type == "ACTIVE"]
        carried.append((hinge.name, anchor, [(e, e.matrix_world.inverted() @ anchor) for e in ends]))
    return carried


@pytest.mark.parametrize("own_collection", [False, True], ids=["scene_collection", "own_collection"])
@pytest.mark.parametrize("rig", sorted(RIGS))
def test_rig_from_blenders_operators_is_read_whole_and_bakes_closed(rig, own_collection, capfd):
    build, counts = RIGS[rig]
    scene = new_scene(f"{rig}_ops", frames=50)
    setup, objects, hinges = build(scene, own_collection)
    world = scene.rigidbody_world
    assert {o.name for o in hinges} <= {o.name for o in world.constraints.objects}
    assert all(h.name in scene.collection.objects for h in hinges)  # where Connect puts them
    # Add Setup: the bodies' own collection, or the whole scene; never Blender's RigidBodyWorld
    if own_collection:
        assert setup.collection == objects[1].users_collection[0] and not setup.whole_scene
    else:
        assert setup.collection is None and setup.whole_scene
    with bpy.context.temp_override(scene=scene):
        capfd.readouterr()
        assert bpy.ops.symplex.validate() == {"FINISHED"}
        assert f"Info: Read {setup.name!r}: {counts}\n" in capfd.readouterr().out  # the operator's report
        assert setup.diagnostics.read.splitlines()[0] == f"Read {setup.name!r}: {counts}"  # the panel's
        carried = hinge_points(hinges)
        start = {o.name: o.matrix_world.translation.copy() for o in objects}
        setup.diagnostics.read = ""
        assert bpy.ops.symplex.bake() == {"FINISHED"}
    assert f"Info: Read {setup.name!r}: {counts}\n" in capfd.readouterr().out
    assert setup.diagnostics.read.splitlines()[0] == f"Read {setup.name!r}: {counts}"
    assert setup.diagnostics.max_residual < 1e-8
    worst, tip_drop = 0.0, 0.0
    pivot = hinges[0].matrix_world.translation.copy() if rig == "chain" else None
    for frame in range(scene.frame_start, scene.frame_end + 1):
        set_frame(scene, frame)
        for _name, anchor, ends in carried:
            points = [evaluated(scene, end).matrix_world @ local for end, local in ends]
            if len(points) == 1:  # hinged to the passive box: the point stays on the hinge
                points.append(anchor)
            worst = max(worst, (points[0] - points[1]).length)
        if pivot is not None:  # a straight chain hung from its first hinge: no link gets further from it
            for obj in objects[1:]:
                now = evaluated(scene, obj).matrix_world.translation
                assert (now - pivot).length <= (start[obj.name] - pivot).length + CLOSED, (frame, obj.name)
            tip_drop = max(tip_drop, -evaluated(scene, objects[-1]).matrix_world.translation.z)
    assert worst < CLOSED, f"hinge ends {worst:.2e} m apart in the baked keys"
    if pivot is not None:
        assert tip_drop > 1.0  # it swings down, within reach of its hinges (free fall: 12 m in 2 s)


def test_disabled_connect_constraint_that_frees_a_body_is_an_error_naming_both():
    scene = new_scene("disabled")
    setup, objects, hinges = chain_rig(scene, own_collection=True, n=2)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.validate() == {"FINISHED"} and setup.diagnostics.read
        hinges[-1].rigid_body_constraint.enabled = False
        link = hinges[-1].rigid_body_constraint.object2.name
        with pytest.raises(RuntimeError, match=f"rigid body {link!r} would fall free: rigid body constraint "
                                               f"{hinges[-1].name!r}"):
            bpy.ops.symplex.validate()
    assert setup.diagnostics.read == ""  # the panel no longer shows the earlier reading
    _errors, warnings = read.validate_setup(scene, setup)
    assert any(f"{hinges[-1].name!r} is disabled; skipped" in w for w in warnings)


def test_other_rigs_constraints_in_the_scene_are_left_alone():
    """Two chains in one scene, each in its own collection, all hinges in the Scene Collection."""
    scene = new_scene("two_rigs")
    first, _objects, _hinges = chain_rig(scene, own_collection=True, n=2)
    second, _objects, _hinges = chain_rig(scene, own_collection=True, n=3)
    for setup, n in ((first, 2), (second, 3)):
        c = summary.counts(read_scene(scene, setup.name))
        assert (c.bodies, c.joints, c.free) == (n, {"revolute": n}, 0)


def test_an_animated_link_is_counted_as_a_prescribed_joint_and_its_damping_is_not_listed():
    scene = new_scene("driven")
    setup, objects, _hinges = chain_rig(scene, own_collection=True, n=2)
    driver = objects[1]
    driver.rigid_body.kinematic = True  # Animated
    for frame, angle in ((1, 0.0), (50, 1.0)):
        driver.rotation_euler = (0.0, angle, 0.0)
        driver.keyframe_insert("rotation_euler", frame=frame)
    result = read_scene(scene, setup.name)
    c = summary.counts(result)
    assert (c.bodies, c.joints, c.loops, c.free, c.prescribed) == (2, {"revolute": 2}, 0, 0, 1)
    assert [line for line in summary.lines(result) if "on 1 body (e.g. " + repr(objects[2].name) in line]


def test_constraints_only_in_the_rigid_body_worlds_collection_are_read():
    """Connect's empties unlinked from the Scene Collection live only in RigidBodyConstraints."""
    scene = new_scene("rbc_only")
    setup, _objects, hinges = chain_rig(scene, own_collection=True, n=3)
    for hinge in hinges:
        scene.collection.objects.unlink(hinge)
    assert not any(h.name in scene.objects for h in hinges)
    c = summary.counts(read_scene(scene, setup.name))
    assert (c.bodies, c.joints, c.free) == (3, {"revolute": 3}, 0)


def test_free_root_of_an_armature_chain_warns_how_to_pin_it():
    scene = new_scene("free_root")
    arm, setup = chain_armature(scene, n=3)
    root = arm.pose.bones["b0"]
    root.rotation_mode = "QUATERNION"
    root.lock_rotation = (False, False, False)
    root.lock_location = (False, False, False)
    result, errors, warnings = read.inspect_setup(scene, setup)
    assert not errors
    assert any("bone 'b0' carries 2 simulated bone(s)" in w and "Lock Location X, Y, Z" in w for w in warnings)
    c = summary.counts(result)
    assert (c.bodies, c.free, c.joints) == (3, 1, {"revolute": 2})
    root.lock_location = (True, True, True)
    assert not any("bone 'b0'" in w for w in read.validate_setup(scene, setup)[1])


def test_friction_is_bullets_product_and_damping_and_restitution_are_listed_as_ignored():
    """A box resting on a passive slab, friction 0.5 on 0.6: Bullet's contact friction is 0.3."""
    scene = new_scene("friction", frames=26)
    box, slab = boxes(scene, True, [("box", (0.2, 0.2, 0.2), (0.0, 0.0, 0.1), 0.0),
                                    ("slab", (2.0, 2.0, 0.2), (0.0, 0.0, -0.1), 0.0)])
    with in_window(scene) as view_layer:
        add_rigid_bodies(view_layer, [box, slab], passive=[slab])
        setup = add_setup(scene, view_layer, box)
    setup.method = "maximal"
    box.rigid_body.collision_shape = slab.rigid_body.collision_shape = "BOX"
    box.rigid_body.friction, slab.rigid_body.friction = 0.5, 0.6
    box.rigid_body.restitution, slab.rigid_body.restitution = 0.5, 0.8
    result = read_scene(scene, setup.name)
    mech = result.mechanism
    contacts = CollisionWorld(mech).contacts(np.array([mech.body(box.name).position]),
                                             np.array([mech.body(box.name).orientation]), margin=1e-3)
    assert contacts and all(c.friction == pytest.approx(0.3, abs=1e-6) for c in contacts)
    lines = summary.lines(result)
    assert lines[0] == f"Read {setup.name!r}: 1 body, 0 joints, 0 loops, 1 free body, 0 prescribed joints, " \
                       "2 collision shapes"
    # Blender's default damping (0.04, 0.1) over this 1 s bake: Bullet would take 4% and 10% off
    assert any(line.startswith("damping not simulated: linear 0.04, angular 0.1 on 1 body") and
               "4% of their speed and 10% of their spin off each second (4% and 10% over this 1 s bake)" in line
               for line in lines), lines
    assert any(line.startswith("restitution not simulated:") and "up to 0.4 of the approach speed" in line
               for line in lines), lines

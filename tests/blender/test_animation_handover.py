"""From the animation into physics and back, in real Blender (docs/animation_handover.md).

Start From Animation: keyed motion before the start frame hands its velocity to the tree and maximal methods
(a thrown box, a swinging bone chain) and to vehicle rigs (a kart, a helicopter); a loop gets the nearest
velocity it allows; with the option off, the keys are ignored as before. Bake Range and Blend Frames: keys
outside the range survive bit for bit, and the blend leaves the simulation and joins the keys smoothly."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest

from addon.bridge import job, summary
from addon.solver.start_velocity import kinematic_model
from addon.solver.tree import constraints
from addon.solver.tree.kinematics import forward
from tests.blender.scenes import (
    add_setup,
    box_object,
    chain_armature,
    new_scene,
    object_world,
    read_scene,
    rigid_four_bar,
    set_frame,
    symplex,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.usefixtures("symplex")

FPS = 25
START = 10
VELOCITY = np.array([1.5, -0.5, 2.0])  # m/s of the keyed throw
SPIN = 3.0  # rad/s about world Z


def key_linear(owner, paths: tuple[str, ...] = ("location", "rotation_euler")) -> None:
    """Make the keys of `owner`'s action on `paths` (or pose-bone channels ending so) LINEAR: a constant rate
    between keys. Other channels (a rig's keyed controls) keep theirs."""
    from addon.bridge import compat

    for fcurve in compat.fcurves(compat.assigned(owner)):
        if fcurve.data_path.rsplit(".", 1)[-1] in paths:
            for point in fcurve.keyframe_points:
                point.interpolation = "LINEAR"


def thrown_box(method: str, start_from_animation: bool = True):
    """A free box keyed moving at VELOCITY and spinning at SPIN about Z over frames 1..START, no gravity;
    the scene (and the bake) starts at START."""
    scene = new_scene("throw", frames=START + 10, fps=FPS)
    scene.frame_start = START
    scene.use_gravity = False
    coll = bpy.data.collections.new(f"{scene.name} throw")
    scene.collection.children.link(coll)
    box = box_object(scene, coll, f"{scene.name} box", (0.4, 0.3, 0.2), (0.0, 0.0, 0.0), mass=2.0)
    for frame in range(1, START + 1):
        t = (frame - START) / FPS
        box.location = tuple(VELOCITY * t + np.array([0.0, 0.0, 1.0]))
        box.rotation_euler = (0.0, 0.0, 0.3 + SPIN * t)
        box.keyframe_insert("location", frame=frame)
        box.keyframe_insert("rotation_euler", frame=frame)
    key_linear(box)
    setup = add_setup(scene, coll.name, "RIGID_BODIES", collection=coll)
    setup.method = method
    setup.start_from_animation = start_from_animation
    return scene, setup, box


def keys_rate(box) -> tuple[np.ndarray, float]:
    """The keys' finite difference over the last frame before the start: (velocity, spin about Z)."""
    from addon.bridge import reference

    before, at = (np.array(reference.object_matrix(box, f)) for f in (START - 1, START))
    spin = math.atan2(at[1, 0], at[0, 0]) - math.atan2(before[1, 0], before[0, 0])
    return (at[:3, 3] - before[:3, 3]) * FPS, spin * FPS


@pytest.mark.parametrize("method", ["tree", "maximal"])
def test_a_keyed_throw_hands_its_velocity_to_the_simulation(method):
    """The baked box leaves the start frame at the keys' velocity and spin (no forces: it keeps them)."""
    scene, setup, box = thrown_box(method)
    velocity, spin = keys_rate(box)
    np.testing.assert_allclose(velocity, VELOCITY, rtol=1e-5)  # the keys say what the test keyed
    start = object_world(scene, box) if scene.frame_current == START else None
    job.bake_setup(scene, setup.name)
    poses = []
    for frame in (START, START + 1, START + 10):
        set_frame(scene, frame)
        poses.append(object_world(scene, box))
    assert start is None or np.allclose(start, poses[0], atol=1e-6)
    tol = 1e-4 * np.linalg.norm(VELOCITY)  # single-precision keys over one frame
    np.testing.assert_allclose((poses[1][:3, 3] - poses[0][:3, 3]) * FPS, velocity, atol=tol)
    np.testing.assert_allclose((poses[2][:3, 3] - poses[0][:3, 3]) * FPS / 10, velocity, atol=tol)
    turned = math.atan2(poses[1][1, 0], poses[1][0, 0]) - math.atan2(poses[0][1, 0], poses[0][0, 0])
    dt = 1.0 / (FPS * setup.substeps)
    assert turned * FPS == pytest.approx(spin, rel=(SPIN * dt) ** 2)  # a discrete rotation's O(dt^2) rate


def test_with_the_option_off_the_keys_before_the_start_are_ignored():
    """Today's behaviour: the free box starts at rest (a free body has no typed velocity) and stays put."""
    scene, setup, box = thrown_box("tree", start_from_animation=False)
    free = read_scene(scene, setup.name).mechanism.joints[0]
    assert free.type == "free" and not any(free.v0)
    job.bake_setup(scene, setup.name)
    set_frame(scene, START)
    first = object_world(scene, box)
    set_frame(scene, START + 10)
    np.testing.assert_allclose(object_world(scene, box), first, atol=1e-6)
    setup.start_from_animation = True
    read = read_scene(scene, setup.name)
    np.testing.assert_allclose(read.mechanism.joints[0].v0[:3], VELOCITY, rtol=1e-5)
    assert f"Start from the keys before frame {START}: {box.name}" in summary.lines(read)


def test_a_keyed_bone_chain_hands_its_swing_to_the_tree_method():
    """The top bone of a two-bone hinge chain is keyed swinging before the start; the lower bone has no keys of
    its own and swings along with it: the joint rates are the keyed rate and zero."""
    scene = new_scene("swing", frames=START + 10, fps=FPS)
    scene.frame_start = START
    arm, setup = chain_armature(scene, n=2)
    top = arm.pose.bones["b0"]
    for frame in range(1, START + 1):
        top.rotation_euler = (0.6 + 0.05 * (frame - START), 0.0, 0.0)
        top.keyframe_insert("rotation_euler", frame=frame)
    key_linear(arm)
    joints = {j.name: j for j in read_scene(scene, setup.name).mechanism.joints}
    # the lower bone's head moves on a circle, which the difference of its positions over frames that each
    # turn 0.05 rad sees to second order in that angle
    truncation = 0.05 ** 2
    assert joints["b0"].v0[0] == pytest.approx(0.05 * FPS, rel=truncation)
    assert abs(joints["b1"].v0[0]) < truncation * 0.05 * FPS
    setup.start_from_animation = False
    assert read_scene(scene, setup.name).mechanism.joints[0].v0 == (0.0,)


@pytest.mark.parametrize("method", ["tree", "maximal"])
def test_a_keyed_bone_keeps_swinging_at_its_keyed_rate(method):
    """One hinge bone keyed turning at 1.25 rad/s before the start, no gravity: the baked bone turns on at the
    keys' rate (the maximal method's discrete rotation to second order in its step angle)."""
    scene = new_scene("spin", frames=START + 10, fps=FPS)
    scene.frame_start = START
    scene.use_gravity = False
    arm, setup = chain_armature(scene, n=1)
    setup.method = method
    bone = arm.pose.bones["b0"]
    for frame in range(1, START + 1):
        bone.rotation_euler = (0.6 + 0.05 * (frame - START), 0.0, 0.0)
        bone.keyframe_insert("rotation_euler", frame=frame)
    key_linear(arm)
    job.bake_setup(scene, setup.name)
    angle = next(fc for key, fc in _curves(arm).items() if key == ('pose.bones["b0"].rotation_euler', 0))
    rate = 0.05 * FPS
    dt = 1.0 / (FPS * setup.substeps)
    for frames in (1, 10):
        turned = (angle.evaluate(START + frames) - angle.evaluate(START)) * FPS / frames
        assert turned == pytest.approx(rate, rel=max(1e-5, (rate * dt) ** 2))


def test_a_loop_gets_a_velocity_its_loop_allows():
    """The coupler of a rigid four-bar is keyed sliding along X (a motion the loop does not allow): the start
    velocity satisfies the loop's velocity constraints and moves the coupler along X as nearly as it can."""
    scene = new_scene("loop", frames=START + 10, fps=FPS)
    scene.frame_start = START
    _coll, setup, (_crank, coupler, _rocker), _hinges = rigid_four_bar(scene, crank_speed=0.0)
    home = np.array(coupler.location)
    for frame in (START - 2, START - 1, START):
        coupler.location = tuple(home + np.array([0.02 * (frame - START), 0.0, 0.0]))
        coupler.keyframe_insert("location", frame=frame)
    key_linear(coupler)
    mechanism = read_scene(scene, setup.name).mechanism
    model = kinematic_model(mechanism)
    kin = forward(model, np.array(model.q_init), np.array(model.ball_chart0))
    _, G = constraints.evaluate(model, kin)
    rates = np.array(model.v_init)
    assert np.abs(rates).max() > 0.1  # it moves
    assert np.abs(G @ rates).max() < 1e-9 * np.abs(rates).max()


def _key_chassis(chassis, velocity: np.ndarray, yaw_rate: float = 0.0) -> None:
    """Key `chassis` arriving at its current pose at START with `velocity` (world) and `yaw_rate`, LINEAR."""
    home, heading = np.array(chassis.location), chassis.rotation_euler[2]
    for frame in range(START - 4, START + 1):
        t = (frame - START) / FPS
        chassis.location = tuple(home + velocity * t)
        chassis.rotation_euler[2] = heading + yaw_rate * t
        chassis.keyframe_insert("location", frame=frame)
        chassis.keyframe_insert("rotation_euler", frame=frame)
    key_linear(chassis)


@pytest.mark.parametrize("turning", [True, False])
def test_a_car_keyed_driving_in_starts_at_its_keyed_speed(turning):
    """A kart keyed at 8 m/s along its heading over the frames before the start, turning as its steering at the
    start turns it: it starts at 8 m/s (not its initial_speed of 6) and rolls its first step at that speed.
    Keyed straight while its steering turns it, it starts at the speed nearest that motion (car_start_speed)."""
    from addon.bridge import vehicle_bake, vehicle_rig
    from addon.solver.start_velocity import car_start_speed
    from addon.solver.vehicles.car import compile_car
    from tests.blender.test_vehicles import hand_rig

    scene = new_scene("kart", frames=START + 24, fps=FPS)
    scene.frame_start = START
    chassis, _wheels = hand_rig(scene)
    rig = vehicle_rig.find_rig(scene, chassis, "-Y")
    unkeyed = vehicle_rig.read_rig(scene, rig, "kart").vehicle
    assert unkeyed.velocity[3] == pytest.approx(6.0)
    model = compile_car(unkeyed)
    curvature = model.sigma(0.0) / unkeyed.spec.wheelbase
    assert abs(curvature) > 0.01  # the kart steers at the start
    heading = np.array(chassis.matrix_world.to_3x3()) @ np.array([0.0, -1.0, 0.0])  # the kart faces its -Y
    yaw_rate = 8.0 * curvature if turning else 0.0
    _key_chassis(chassis, 8.0 * heading, yaw_rate)
    reading = vehicle_rig.read_rig(scene, rig, "kart")
    expected = 8.0 if turning else car_start_speed(model, 8.0, 0.0)
    assert reading.vehicle.velocity[3] == pytest.approx(expected, rel=1e-4)
    assert (expected < 7.99) != turning
    trajectory = vehicle_bake.simulate_rig(reading)
    xy = trajectory.poses[:, trajectory.body_index("chassis"), :2]
    dt = 1.0 / FPS
    # the first step moves at the handed-over speed, to first order in the step (the controls' accelerations)
    assert np.linalg.norm(xy[1] - xy[0]) / dt == pytest.approx(expected, abs=5.0 * dt)
    chassis.symplex.start_from_animation = False
    assert vehicle_rig.read_rig(scene, rig, "kart").vehicle.velocity[3] == pytest.approx(6.0)


def test_a_helicopter_keyed_climbing_and_turning_hands_over_its_body_twist():
    from addon.bridge import vehicle_body_rig as body_rig

    scene = new_scene("heli", frames=START + 24, fps=FPS)
    scene.frame_start = START
    rig = body_rig.build_body_rig(scene, "helicopter", f"{scene.name} heli")
    chassis = scene.objects[rig.chassis]
    chassis.rotation_mode = "XYZ"
    velocity, yaw_rate = np.array([4.0, 1.0, 2.5]), 0.5
    _key_chassis(chassis, velocity, yaw_rate)
    reading = body_rig.read_body_rig(scene, rig, "helicopter")
    from addon.bridge import reference

    R = np.array(reference.object_matrix(chassis, START).to_3x3())  # the helicopter's frame: its chassis'
    np.testing.assert_allclose(reading.vehicle.velocity[:3], R.T @ np.array([0.0, 0.0, yaw_rate]), atol=1e-5)
    np.testing.assert_allclose(reading.vehicle.velocity[3:], R.T @ velocity, atol=1e-5 * np.linalg.norm(velocity))


# ----------------------------------------------------------------------------------------------
# Back into the animation: a bake range inside a longer animation, and the blend after it

RANGE = (10, 25)
KEYED = (1, 5, 10, 18, 30, 35, 40)  # Bezier keys before, inside and after the range


def _key_attributes(fcurve) -> dict[str, np.ndarray]:
    """Every stored attribute of `fcurve`'s keys, as Blender stores them."""
    n = len(fcurve.keyframe_points)
    out = {}
    for name, size, dtype in (("co", 2, np.float32), ("handle_left", 2, np.float32), ("handle_right", 2, np.float32),
                              ("interpolation", 1, np.int32), ("handle_left_type", 1, np.int32),
                              ("handle_right_type", 1, np.int32), ("easing", 1, np.int32), ("type", 1, np.int32),
                              ("back", 1, np.float32), ("amplitude", 1, np.float32), ("period", 1, np.float32)):
        out[name] = np.empty(size * n, dtype=dtype)
        fcurve.keyframe_points.foreach_get(name, out[name])
        out[name] = out[name].reshape(n, size)
    return out


def _curves(owner) -> dict[tuple[str, int], object]:
    from addon.bridge import compat

    return {(fc.data_path, fc.array_index): fc for fc in compat.fcurves(compat.assigned(owner))}


def outside_frames(first: int, last: int) -> np.ndarray:
    """The scene's frames (1-40) outside the bake [first, last]."""
    return np.array([f for f in range(1, 41) if not first <= f <= last], dtype=float)


def assert_artist_kept(want: dict[str, np.ndarray], fcurve, artist: np.ndarray, first: int, last: int) -> None:
    """`fcurve` after a bake of frames [first, last]: the artist's keys outside them (`want`, their attributes
    before the bake) bit for bit, a key at each whole frame from the one after the last kept key before `first`
    to the one before the first kept key after `last`, and the curve the artist's (`artist`, at
    outside_frames) at every frame outside the bake."""
    got = _key_attributes(fcurve)
    frames, theirs = got["co"][:, 0], want["co"][:, 0]
    outside = (theirs < first) | (theirs > last)
    kept = np.isin(frames, theirs[outside])
    for name in want:
        np.testing.assert_array_equal(got[name][kept], want[name][outside], err_msg=f"{fcurve.data_path} {name}")
    lead, tail = theirs[theirs < first].max(), theirs[theirs > last].min()
    np.testing.assert_array_equal(frames[~kept], np.arange(lead + 1, tail, dtype=np.float32))
    scale = max(1.0, np.abs(artist).max())
    np.testing.assert_allclose([fcurve.evaluate(f) for f in outside_frames(first, last)], artist, rtol=0,
                               atol=1e-6 * scale, err_msg=fcurve.data_path)


def keyed_flight(blend_frames: int = 0):
    """A free box under gravity keyed along a wavy path (Bezier keys at KEYED) over a scene of frames 1-40; its
    setup bakes RANGE only and blends `blend_frames` frames into the keys after it."""
    scene = new_scene("range", frames=40, fps=FPS)
    coll = bpy.data.collections.new(f"{scene.name} flight")
    scene.collection.children.link(coll)
    box = box_object(scene, coll, f"{scene.name} box", (0.4, 0.3, 0.2), (0.0, 0.0, 0.0), mass=2.0)
    for frame in KEYED:
        box.location = (0.1 * frame, 0.3 * math.sin(0.3 * frame), 2.0 + 0.5 * math.cos(0.2 * frame))
        box.rotation_euler = (0.05 * frame, 0.0, 0.1 * frame)
        box.keyframe_insert("location", frame=frame)
        box.keyframe_insert("rotation_euler", frame=frame)
    setup = add_setup(scene, coll.name, "RIGID_BODIES", collection=coll)
    setup.use_frame_range = True
    setup.frame_start, setup.frame_end = RANGE
    setup.blend_frames = blend_frames
    return scene, setup, box


@pytest.mark.parametrize("blend_frames", [0, 5])
def test_keys_outside_the_bake_range_survive_bit_for_bit(blend_frames):
    """The artist's keys before the range and after it (and its blend) are kept bit for bit; the whole frames
    between them and the bake are keyed from the artist's curve, so the animation outside the range is the
    artist's at every frame, not Blender's interpolation from a kept key to a baked one."""
    scene, setup, box = keyed_flight(blend_frames)
    first, last = RANGE[0], RANGE[1] + blend_frames
    before = {key: _key_attributes(fc) for key, fc in _curves(box).items()}
    artist = {key: np.array([fc.evaluate(f) for f in outside_frames(first, last)]) for key, fc in _curves(box).items()}
    job.bake_setup(scene, setup.name)
    for key, want in before.items():
        assert_artist_kept(want, _curves(box)[key], artist[key], first, last)
    # the range itself is the simulation: the box falls freely from where its keys hand it over
    set_frame(scene, first)
    start = object_world(scene, box)
    set_frame(scene, RANGE[1])
    end = object_world(scene, box)
    assert not np.allclose(start, end)


def test_the_blend_leaves_the_simulation_and_joins_the_keys_without_a_jump():
    """Blend Frames 8: the baked channels are (1 - w) sim + w keys with the smoothstep w (handback.py), sim being
    a plain bake that runs on to end + 8: equal to the simulation up to the range's end, equal to the artist's
    curve at end + 8, and in between no frame steps further than the simulation, the keys and the blend's own
    slope (at most 1.5 / 8 of their gap per frame) allow."""
    from addon.bridge import bake
    from addon.bridge.handback import blend_weights

    blend = 8
    end = RANGE[1] + blend
    scene, setup, box = keyed_flight(0)
    artist = {key: np.array([fc.evaluate(f) for f in range(RANGE[1], end + 1)]) for key, fc in _curves(box).items()}
    setup.frame_end = end  # the simulation alone, on to end + 8
    job.bake_setup(scene, setup.name)
    sim = {key: _key_attributes(_curves(box)[key])["co"] for key in artist}
    bake.free_bake([box])
    setup.frame_end, setup.blend_frames = RANGE[1], blend
    job.bake_setup(scene, setup.name)
    assert f"Frames {RANGE[0]}-{RANGE[1]}, then {blend} frames blended into the keys" in setup.diagnostics.read
    w = blend_weights(np.arange(RANGE[0], end + 1, dtype=float), blend)[RANGE[1] - RANGE[0]:]
    for key, keys in artist.items():
        co = _key_attributes(_curves(box)[key])["co"]
        baked = (co[:, 0] >= RANGE[0]) & (co[:, 0] <= end)
        simulated = sim[key][(sim[key][:, 0] >= RANGE[0]) & (sim[key][:, 0] <= end)]
        np.testing.assert_array_equal(co[baked][:RANGE[1] - RANGE[0] + 1], simulated[:RANGE[1] - RANGE[0] + 1])
        zone = co[baked][RANGE[1] - RANGE[0]:, 1].astype(float)
        plain = simulated[RANGE[1] - RANGE[0]:, 1].astype(float)
        scale = max(1.0, np.abs(plain).max(), np.abs(keys).max())
        np.testing.assert_allclose(zone, (1 - w) * plain + w * keys, atol=1e-6 * scale, err_msg=str(key))
        assert zone[0] == plain[0] and zone[-1] == pytest.approx(keys[-1], abs=1e-6 * scale)
        bound = np.abs(np.diff(plain)).max() + np.abs(np.diff(keys)).max() + 1.5 / blend * np.abs(plain - keys).max()
        assert np.abs(np.diff(zone)).max() <= bound + 1e-6 * scale


def test_a_channel_keyed_only_before_the_range_keeps_the_simulation_through_the_blend():
    """The thrown box is keyed only before the start: with Blend Frames it flies on, not back to its last key."""
    scene, setup, box = thrown_box("tree")
    job.bake_setup(scene, setup.name)
    plain = {key: _key_attributes(fc)["co"] for key, fc in _curves(box).items() if not key[0].startswith('["')}
    from addon.bridge import bake

    bake.free_bake([box])
    scene.frame_end -= 4
    setup.blend_frames = 4
    job.bake_setup(scene, setup.name)
    for key, co in plain.items():
        np.testing.assert_array_equal(_key_attributes(_curves(box)[key])["co"], co, err_msg=str(key))


def test_bone_keys_outside_the_bake_range_survive_bit_for_bit():
    """A two-bone chain whose top bone is keyed (Bezier) before, inside and after RANGE: the bake keys both bones
    over the range and keeps the top bone's keys outside it as they were."""
    scene = new_scene("bone range", frames=40, fps=FPS)
    arm, setup = chain_armature(scene, n=2)
    top = arm.pose.bones["b0"]
    for frame in KEYED:
        top.rotation_euler = (0.6 * math.cos(0.2 * frame), 0.0, 0.0)
        top.keyframe_insert("rotation_euler", frame=frame)
    setup.use_frame_range = True
    setup.frame_start, setup.frame_end = RANGE
    before = {key: _key_attributes(fc) for key, fc in _curves(arm).items()}
    artist = {key: np.array([fc.evaluate(f) for f in outside_frames(*RANGE)]) for key, fc in _curves(arm).items()}
    job.bake_setup(scene, setup.name)
    after = _curves(arm)
    assert ('pose.bones["b1"].rotation_euler', 0) in after
    for key, want in before.items():
        assert_artist_kept(want, after[key], artist[key], *RANGE)


def test_a_body_keyed_animated_until_the_start_is_thrown_from_its_keys():
    """Blender's own hand-over: the box is Animated (kinematic) while keyed and switched off at the start frame.
    Symplex reads the flag at the start, simulates the box, and starts it at its keys' velocity."""
    scene, setup, box = thrown_box("tree")
    rb = box.rigid_body
    for frame, animated in ((1, True), (START - 1, True), (START, False)):
        rb.kinematic = animated
        box.keyframe_insert("rigid_body.kinematic", frame=frame)
    scene.frame_set(1)  # Animated now: only the flag at the start counts
    read = read_scene(scene, setup.name)
    assert [j.type for j in read.mechanism.joints] == ["free"] and read.from_keys == (box.name,)
    np.testing.assert_allclose(read.mechanism.joints[0].v0[:3], VELOCITY, rtol=1e-5)
    job.bake_setup(scene, setup.name)  # the keyed flag stays behind: the bake keeps the box Animated
    from addon.bridge import bake, compat

    assert compat.find_fcurve(compat.assigned(box), "rigid_body.kinematic", 0) is None
    set_frame(scene, START + 5)
    assert box.rigid_body.kinematic
    bake.free_bake([box])
    assert compat.find_fcurve(compat.assigned(box), "rigid_body.kinematic", 0) is not None


def _keyed_rig(kind: str):
    """A kart (hand_rig) or hovercraft rig whose chassis is keyed (Bezier) along a wavy course at KEYED over a
    scene of frames 1-40, the rig's own Bake Range RANGE."""
    from addon.bridge import vehicle_body_rig as body_rig
    from tests.blender.test_vehicles import hand_rig

    scene = new_scene(f"{kind} range", frames=40, fps=FPS)
    if kind == "kart":
        chassis, _wheels = hand_rig(scene)
        chassis["symplex_vehicle_preset"] = "kart"
        chassis["symplex_forward"] = "-Y"
    else:
        chassis = scene.objects[body_rig.build_body_rig(scene, kind, f"{scene.name} craft").chassis]
    origin = np.array(chassis.location)
    rotation = "rotation_quaternion" if chassis.rotation_mode == "QUATERNION" else "rotation_euler"
    for frame in KEYED:
        yaw = 0.02 * frame
        chassis.location = origin + np.array([0.2 * frame, 0.5 * math.sin(0.2 * frame), 0.0])
        if rotation == "rotation_euler":
            chassis.rotation_euler = (0.0, 0.0, math.radians(30) + yaw)
        else:
            chassis.rotation_quaternion = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
        chassis.keyframe_insert("location", frame=frame)
        chassis.keyframe_insert(rotation, frame=frame)
    chassis.symplex.use_frame_range = True
    chassis.symplex.frame_start, chassis.symplex.frame_end = RANGE
    return scene, chassis


@pytest.mark.parametrize("kind", ["kart", "hovercraft"])
def test_a_vehicle_rig_bakes_its_own_range_and_blends_into_the_keys_after_it(kind):
    """The rig's Bake Range and Blend Frames, as a setup's: the chassis keys outside the range (and its blend)
    survive bit for bit, the range is keyed every frame, and over the blend each chassis channel is
    (1 - w) sim + w keys (sim: a plain bake run on to the blend's end): no jump at either end, no frame stepping
    further than the simulation, the keys and the blend's slope allow. Parts keyed only by the bake (wheels,
    fans) keep the simulation."""
    from addon.bridge import vehicle_setup
    from addon.bridge.handback import blend_weights

    blend = 8
    end = RANGE[1] + blend
    scene, chassis = _keyed_rig(kind)
    before = {key: _key_attributes(fc) for key, fc in _curves(chassis).items() if not key[0].startswith('["')}
    artist = {key: np.array([fc.evaluate(f) for f in range(RANGE[1], end + 1)]) for key, fc in _curves(chassis).items()
              if key in before}
    outside = {key: np.array([fc.evaluate(f) for f in outside_frames(RANGE[0], end)])
               for key, fc in _curves(chassis).items() if key in before}
    chassis.symplex.frame_end = end  # the simulation alone, on to end + 8
    job.bake_vehicle_rig(scene, chassis)
    sim = {key: _key_attributes(fc)["co"] for key, fc in _curves(chassis).items() if key in before}
    parts = [o for o in scene.objects if o.parent == chassis]
    plain_parts = {(o.name, key): _key_attributes(fc)["co"] for o in parts for key, fc in _curves(o).items()}
    vehicle_setup.free_rig(scene, chassis)
    chassis.symplex.frame_end, chassis.symplex.blend_frames = RANGE[1], blend
    job.bake_vehicle_rig(scene, chassis)
    w = blend_weights(np.arange(RANGE[0], end + 1, dtype=float), blend)[RANGE[1] - RANGE[0]:]
    n = RANGE[1] - RANGE[0]
    for key, want in before.items():
        assert_artist_kept(want, _curves(chassis)[key], outside[key], RANGE[0], end)
        co = _key_attributes(_curves(chassis)[key])["co"]
        co = co[(co[:, 0] >= RANGE[0]) & (co[:, 0] <= end)]
        np.testing.assert_array_equal(co[:, 0], np.arange(RANGE[0], end + 1, dtype=np.float32))
        simulated = sim[key][(sim[key][:, 0] >= RANGE[0]) & (sim[key][:, 0] <= end)]
        np.testing.assert_array_equal(co[:n + 1], simulated[:n + 1])
        zone, plain, keys = co[n:, 1].astype(float), simulated[n:, 1].astype(float), artist[key]
        scale = max(1.0, np.abs(plain).max(), np.abs(keys).max())
        np.testing.assert_allclose(zone, (1 - w) * plain + w * keys, atol=1e-6 * scale, err_msg=str(key))
        assert zone[0] == plain[0] and zone[-1] == pytest.approx(keys[-1], abs=1e-6 * scale)
        bound = np.abs(np.diff(plain)).max() + np.abs(np.diff(keys)).max() + 1.5 / blend * np.abs(plain - keys).max()
        assert np.abs(np.diff(zone)).max() <= bound + 1e-6 * scale
    gap = max(np.abs(sim[key][sim[key][:, 0] == end, 1] - artist[key][-1]).max() for key in before)
    assert gap > 0.1  # the simulation ends away from the keys: the blend has work to do
    assert plain_parts and all(np.array_equal(_key_attributes(fc)["co"], plain_parts[(o.name, key)])
                               for o in parts for key, fc in _curves(o).items())

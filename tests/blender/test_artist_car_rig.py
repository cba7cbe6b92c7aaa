"""A car rigged as artists rig cars, baked in real Blender: automatic wheels, DEF/MCH layers, meshes moved.

The rig follows a popular free car-rigging add-on: an armature whose front is toward -Y, a chassis
control bone 'Body', wheel control bones 'Wheel.Ft.L', 'Wheel.Ft.R', 'Wheel.Bk.L', 'Wheel.Bk.R', ground
sensor bones 'WheelBumper.Ft.L', ... and helper bones 'MCH-Wheel.rotation.Ft.L', ... (moving nothing)
beside them; a mechanism layer 'MCH-*' copying the controls and a deformation layer 'DEF-*' copying the
MCH bones, both by Copy Transforms constraints; the body and wheel meshes (objects named like the bones)
parented to the DEF bones. The wheel bones' heads stand 0.14 m outboard of their wheel meshes' centres, and the front wheels
are smaller than the rear ones. Runs under bpy 5.0 and 4.2.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from mathutils import Matrix

from addon.bridge import compat, shot, vehicle_bake, vehicle_rig, vehicle_setup
from addon.bridge.build import edit_armature
from tests.blender.scenes import cylinder_mesh, fcurve_data, new_scene, scene_state, symplex  # noqa: F401

WHEELBASE, TRACK, OUTBOARD = 2.6, 1.5, 0.14
RADII = {"Ft": 0.33, "Bk": 0.35}
CORNERS = {"Wheel.Ft.L": ("Ft", 1.0), "Wheel.Ft.R": ("Ft", -1.0), "Wheel.Bk.L": ("Bk", 1.0), "Wheel.Bk.R": ("Bk", -1.0)}
# (end, x sign): seen driving along -Y with +Z up, the car's left is armature +X (Blender's .L side)
AXES = np.column_stack([(0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)])  # (forward, left, up) in armature axes


def _centre(end: str, side: float) -> tuple[float, float, float]:
    """Armature-space centre of a wheel mesh: the front axle at y = -WHEELBASE/2."""
    return (side * 0.5 * TRACK, (-0.5 if end == "Ft" else 0.5) * WHEELBASE, RADII[end])


def _copy(arm, bone: str, target: str) -> None:
    constraint = arm.pose.bones[bone].constraints.new("COPY_TRANSFORMS")
    constraint.target, constraint.subtarget = arm, target


def _parent_to_bone(obj, arm, bone: str, control: str, world: Matrix) -> None:
    """Parent `obj` to `bone` keeping `world`; at rest `bone` evaluates to `control`'s rest matrix (it copies it)."""
    obj.parent, obj.parent_type, obj.parent_bone = arm, "BONE", bone
    tail = Matrix.Translation((0.0, arm.data.bones[bone].length, 0.0))
    obj.matrix_parent_inverse = (arm.matrix_world @ arm.data.bones[control].matrix_local @ tail).inverted()
    obj.matrix_basis = world


def artist_car(scene, wheel_names: dict[str, str] | None = None, deformed: bool = False):
    """The rig of the module docstring, turned 25 degrees in the world; controls keyed on the armature (initial
    speed 8 m/s, throttle, and a steer left then right). `wheel_names` renames wheel controls (and their MCH
    and DEF bones and meshes). `deformed`: the wheel meshes are children of the armature object moved by an
    Armature modifier (all vertices in their DEF bone's vertex group) instead of parented to the DEF bones.
    Returns the armature and the names of its body and wheel meshes (by corner)."""
    names = {name: (wheel_names or {}).get(name, name) for name in CORNERS}
    data = bpy.data.armatures.new(f"{scene.name} car rig")
    arm = bpy.data.objects.new(f"{scene.name} car rig", data)
    scene.collection.objects.link(arm)
    arm.matrix_world = Matrix.Translation((2.0, 1.0, 0.0)) @ Matrix.Rotation(math.radians(25), 4, "Z")
    with edit_armature(arm) as bones:
        root = bones.new("Root")
        root.head, root.tail = (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)
        for prefix, length in (("", 0.8), ("MCH-", 0.6), ("DEF-", 0.4)):
            body = bones.new(f"{prefix}Body")
            body.head, body.tail, body.roll = (0.0, 0.0, 0.5), (0.0, length, 0.5), 0.0
            body.parent = root
        for corner, (end, side) in CORNERS.items():
            x, y, z = _centre(end, side)
            head = (x + side * OUTBOARD, y, z)
            for prefix, length in (("", 0.3), ("MCH-", 0.25), ("DEF-", 0.2)):
                bone = bones.new(prefix + names[corner])
                bone.head, bone.tail, bone.roll = head, (head[0] + side * length, y, z), 0.0
                bone.parent = bones["Body"]
            bumper = bones.new(corner.replace("Wheel", "WheelBumper"))  # a ground sensor beside each wheel
            bumper.head, bumper.tail, bumper.parent = (x, y, 0.0), (x, y, -0.2), root
            helper = bones.new(f"MCH-{names[corner]}.rotation")  # named for the wheel, moves nothing
            helper.head, helper.tail, helper.parent = head, (head[0], y, z + 0.2), bones["Body"]
    for prefix, target in (("MCH-", ""), ("DEF-", "MCH-")):
        _copy(arm, f"{prefix}Body", f"{target}Body")
        for corner in CORNERS:
            _copy(arm, prefix + names[corner], target + names[corner])
    body = bpy.data.objects.new(f"{scene.name} Body", vehicle_rig.box_mesh(f"{scene.name} body", (1.7, 4.2, 1.0)))
    scene.collection.objects.link(body)
    _parent_to_bone(body, arm, "DEF-Body", "Body", arm.matrix_world @ Matrix.Translation((0.0, 0.0, 0.8)))
    meshes = {"Body": body.name}
    for corner, (end, _side) in CORNERS.items():
        wheel = bpy.data.objects.new(f"{scene.name} {names[corner]}", cylinder_mesh(names[corner], RADII[end], 0.22))
        scene.collection.objects.link(wheel)
        meshes[corner] = wheel.name
        placed = arm.matrix_world @ Matrix.Translation(_centre(end, _side)) @ Matrix.Rotation(math.pi / 2, 4, "Y")
        if deformed:
            wheel.parent = arm
            wheel.matrix_parent_inverse = arm.matrix_world.inverted()
            wheel.matrix_basis = placed
            wheel.modifiers.new("Armature", "ARMATURE").object = arm
            wheel.vertex_groups.new(name="DEF-" + names[corner]).add(range(len(wheel.data.vertices)), 1.0, "REPLACE")
        else:
            _parent_to_bone(wheel, arm, "DEF-" + names[corner], names[corner], placed)
    fps = scene.render.fps
    arm["initial_speed"] = 8.0
    for frame, throttle in ((1, 0.2), (1 + 2 * fps, 0.2), (1 + 3 * fps, 0.0)):
        arm["throttle"] = throttle
        arm.keyframe_insert('["throttle"]', frame=frame)
    for frame, steer in ((1, 0.0), (1 + 0.5 * fps, 0.25), (1 + 1.5 * fps, 0.25), (1 + 2.5 * fps, -0.2)):
        arm["steer"] = steer
        arm.keyframe_insert('["steer"]', frame=frame)
    return arm, meshes


def _placement(obj) -> np.ndarray:
    """Where Blender shows `obj` now: its world matrix, or for a mesh deformed by an Armature modifier through
    one vertex group, the rigid map of its vertices: arm_world @ pose @ rest^-1 @ arm_world^-1 @ world."""
    modifier = next((m for m in obj.modifiers if m.type == "ARMATURE"), None)
    if modifier is None:
        return np.array(obj.matrix_world)
    arm, group = modifier.object, obj.vertex_groups[0].name
    deform = np.array(arm.pose.bones[group].matrix) @ np.linalg.inv(np.array(arm.data.bones[group].matrix_local))
    return (np.array(arm.matrix_world) @ deform @ np.linalg.inv(np.array(arm.matrix_world))
            @ np.array(obj.matrix_world))


def _evaluated(scene, objects: list[str], frames: int) -> dict[str, np.ndarray]:
    """World placements (F, 4, 4) of `objects` (_placement) as Blender evaluates the scene, frame by frame; at
    the last frame each deformed mesh's evaluated vertices are checked to lie where its placement puts them."""
    window = bpy.context.window
    previous = window.scene
    window.scene = scene
    try:
        out = {name: [] for name in objects}
        for frame in range(scene.frame_start, scene.frame_start + frames):
            scene.frame_set(frame)
            for name in objects:
                out[name].append(_placement(scene.objects[name]))
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for name in objects:
            obj = scene.objects[name]
            if obj.modifiers:
                shown = np.array([list(v.co) for v in obj.evaluated_get(depsgraph).data.vertices])
                rest = np.array([list(v.co) for v in obj.data.vertices])
                world, placed = np.array(obj.matrix_world), out[name][-1]
                np.testing.assert_allclose(shown @ world[:3, :3].T + world[:3, 3],
                                           rest @ placed[:3, :3].T + placed[:3, 3], atol=1e-4)
        return {name: np.array(m) for name, m in out.items()}
    finally:
        window.scene = previous


def test_artist_rig_is_recognised_with_its_mechanism_bones_as_bake_targets(symplex):
    scene = new_scene("artist find", frames=73, fps=24)
    arm, _meshes = artist_car(scene)
    rig, preset = vehicle_setup.find(scene, arm)
    assert preset == vehicle_setup.DEFAULT_PRESET and rig.armature == arm.name
    assert rig.chassis == "Body" and rig.forward == "-Y"
    assert rig.wheels == (("wheel_rl", "Wheel.Bk.L"), ("wheel_rr", "Wheel.Bk.R"), ("wheel_fl", "Wheel.Ft.L"),
                          ("wheel_fr", "Wheel.Ft.R"))
    reading = vehicle_rig.read_rig(scene, rig, preset)
    # centres and radii from the wheel meshes, not the bone heads 0.14 m outboard
    np.testing.assert_allclose(reading.wheel_radii, (0.35, 0.35, 0.33, 0.33), rtol=1e-6)
    assert reading.vehicle.spec.track == pytest.approx(TRACK, abs=1e-5)
    assert reading.vehicle.spec.wheelbase == pytest.approx(WHEELBASE, abs=1e-5)
    np.testing.assert_allclose(np.abs(reading.wheel_offsets[:, :2]).max(axis=1), OUTBOARD, atol=1e-5)
    for scheme in (("wheel_fl", "wheel_fl"), ("FL_wheel", "wheel_fl"), ("Wheel.Bk.R", "wheel_rr"),
                   ("Front Left Wheel", "wheel_fl"), ("Wheel.Rear.L", "wheel_rl"), ("DEF-Wheel.Ft.R", "wheel_fr"),
                   ("MCH-Wheel.rotation.Bk.L", "wheel_rl"), ("WheelBkR", "wheel_rr"), ("WheelBumper.Ft.L", None),
                   ("Brake.Wheel.FL", None)):
        assert vehicle_rig.wheel_position(scheme[0]) == scheme[1], scheme



def test_solve_shot_reads_a_never_baked_artist_rig_as_a_bake_does(symplex):
    """Solve Shot finds the rig as Bake Vehicle does (vehicle_setup.find): a rig that stores no settings
    gets the default preset, its chassis bone by name and its forward axis from its wheels (-Y, not +X)."""
    scene = new_scene("artist shot", frames=49, fps=24)
    arm, _meshes = artist_car(scene)
    body = arm.pose.bones["Body"]
    body.keyframe_insert("location", frame=1)
    body.location = (0.0, -6.0, 0.0)  # the bone's y is armature +Y: a mark 6 m ahead of the car
    body.keyframe_insert("location", frame=48)
    job = shot.ShotJob(scene, arm.name)
    assert (job.preset, job.rig.chassis, job.rig.forward) == (vehicle_setup.DEFAULT_PRESET, "Body", "-Y")
    assert [key.step for key in job.keys if key.position is not None] == [47]
    assert vehicle_rig.FORWARD_PROPERTY not in arm.keys()  # reading stores nothing

@pytest.mark.parametrize("deformed", [False, True], ids=["parented", "deformed"])
def test_artist_rig_bakes_and_moves_its_meshes_with_spin_equal_to_distance_over_radius(symplex, deformed):
    frames = 73
    scene = new_scene("artist bake", frames=frames, fps=24)
    arm, meshes = artist_car(scene, deformed=deformed)
    with bpy.context.temp_override(scene=scene, active_object=arm, object=arm):
        assert bpy.ops.symplex.bake_vehicle() == {"FINISHED"}
    assert (arm[vehicle_rig.PRESET_PROPERTY], arm[vehicle_rig.FORWARD_PROPERTY]) == ("sedan", "-Y")
    assert arm[vehicle_setup.CHASSIS_BONE_PROPERTY] == "Body"
    keyed = fcurve_data(arm)
    assert ('pose.bones["Wheel.Ft.L"].rotation_quaternion', 0) in keyed and ('pose.bones["Body"].location', 0) in keyed
    assert not any("DEF-" in path or "MCH-" in path for path, _ in keyed)
    rig, preset = vehicle_setup.find(scene, arm)
    reading = vehicle_rig.read_rig(scene, rig, preset)
    trajectory = vehicle_bake.simulate_rig(reading, scene.gravity)
    steer, _spin = vehicle_bake.wheel_motion(reading, trajectory)

    worlds = _evaluated(scene, list(meshes.values()), frames)
    body = worlds[meshes["Body"]]
    assert np.linalg.norm(body[-1, :2, 3] - body[0, :2, 3]) > 15.0  # the body mesh drives off
    # chassis axes (forward, left, up) in the world, frame by frame: turned with the body mesh
    turn = np.linalg.norm(np.diff(body[:, :2, 3], axis=0), axis=1)
    start = np.array(arm.matrix_world)[:3, :3] @ AXES
    chassis = np.einsum("fij,kj,kl->fil", body[:, :3, :3], body[0, :3, :3], start)  # R_f R_0^T (fwd, left, up)
    heading = np.unwrap(np.arctan2(chassis[:, 1, 0], chassis[:, 0, 0]))
    assert np.ptp(heading) > 0.5 and turn.min() > 0.1  # it turns both ways while rolling
    errors = {}
    for i, (key, corner) in enumerate(rig.wheels):
        wheel = worlds[meshes[corner]]
        relative = np.einsum("fji,fjk->fik", chassis, wheel[:, :3, :3])  # wheel in chassis axes
        M = np.einsum("fij,kj->fik", relative, relative[0])  # Rz(steer) Ry(spin)
        spin = np.unwrap(np.arctan2(-M[:, 2, 0], M[:, 2, 2]))
        yaw = np.arctan2(-M[:, 0, 1], M[:, 1, 1])
        np.testing.assert_allclose(yaw, steer[:, i], atol=2e-5)  # keyed steer reaches the front meshes only
        path = wheel[:, :2, 3]  # the mesh's centre (its origin)
        dtheta = np.diff(heading)
        chord = np.linalg.norm(np.diff(path, axis=0), axis=1)
        arc = chord * np.where(np.abs(dtheta) > 1e-12, 0.5 * dtheta / np.sin(0.5 * np.where(dtheta == 0, 1, dtheta)),
                               1.0)
        rolled = np.concatenate([[0.0], np.cumsum(arc)]) / RADII[corner.split(".")[1]]
        errors[key] = float(np.abs(spin - rolled).max() / rolled[-1])
    assert np.ptp(steer[:, 2]) > 0.3 and np.abs(steer[:, :2]).max() == 0.0
    assert max(errors.values()) < 1e-3, errors
    print("spin error (relative to total):", {k: f"{v:.2e}" for k, v in errors.items()})


def assert_bake_refused_naming_the_mover(scene, arm, corner: str, bone: str, mover: str) -> None:
    """Bake Vehicle fails naming the wheel `corner` ("front left (wheel_fl)"), its bone and what else moves it
    (regex `mover`), and leaves the scene as it was."""
    before = scene_state(scene)
    with bpy.context.temp_override(scene=scene, active_object=arm, object=arm):
        with pytest.raises(RuntimeError, match=rf"{corner}: bone '{bone}'( \(which bone '\S+' copies\))? of .* is "
                                               rf"moved by {mover}"):
            bpy.ops.symplex.bake_vehicle()
    assert scene_state(scene) == before


def test_a_driven_wheel_bone_is_refused_naming_the_driver(symplex):
    scene = new_scene("artist driver", frames=25, fps=24)
    arm, _meshes = artist_car(scene)
    arm.pose.bones["Wheel.Ft.L"].rotation_mode = "XYZ"
    fcurve = arm.pose.bones["Wheel.Ft.L"].driver_add("rotation_euler", 0)
    fcurve.driver.expression = "frame * 0.1"
    scene.view_layers[0].update()  # the driver sets the bone's rotation when the scene is evaluated
    assert_bake_refused_naming_the_mover(scene, arm, r"front left \(wheel_fl\)", "Wheel.Ft.L",
                                         r"driver\(s\) on pose.bones\[\"Wheel.Ft.L\"\].rotation_euler\[0\]")


def test_a_wheel_bone_moved_by_another_constraint_is_refused_naming_it(symplex):
    """The wheel's control bone aims at a steering target: keys on it would be overridden."""
    scene = new_scene("artist constraint", frames=25, fps=24)
    arm, _meshes = artist_car(scene)
    aim = arm.pose.bones["Wheel.Ft.R"].constraints.new("DAMPED_TRACK")
    aim.name, aim.target, aim.subtarget = "Aim at steering", arm, "Root"
    assert_bake_refused_naming_the_mover(scene, arm, r"front right \(wheel_fr\)", "Wheel.Ft.R",
                                         r"constraint 'Aim at steering' \(Damped Track\)")


def test_picked_wheels_are_stored_on_the_rig_and_the_command_line_bakes_them(symplex, tmp_path):
    scene = new_scene("artist cli", frames=25, fps=24)
    arm, _meshes = artist_car(scene, {"Wheel.Bk.L": "Spare_A"})
    with bpy.context.temp_override(scene=scene, active_object=arm, object=arm):
        with pytest.raises(RuntimeError, match=r"missing wheel\(s\): rear left \(wheel_rl\)"):
            bpy.ops.symplex.bake_vehicle()
        assert bpy.ops.symplex.bake_vehicle(wheel_rl="DEF-Spare_A") == {"FINISHED"}
        assert bpy.ops.symplex.free_vehicle_bake() == {"FINISHED"}
    assert arm[vehicle_rig.PRESET_PROPERTY] == "sedan" and arm["symplex_parts"].to_dict() == {"wheel_rl": "DEF-Spare_A"}
    assert vehicle_setup.find(scene, arm)[0].wheel("wheel_rl") == "Spare_A"
    source, baked = tmp_path / "artist.blend", tmp_path / "artist_baked.blend"
    bpy.data.libraries.write(str(source), {scene}, fake_user=True)
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-m", "addon", "bake", str(source), "--out", str(baked)], cwd=repo,
                            capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Baked vehicle '{arm.name}'" in result.stdout
    with bpy.data.libraries.load(str(baked)) as (src, dst):
        dst.objects = [arm.name]
    loaded = dst.objects[0]
    try:
        assert compat.assigned(loaded).action.name.startswith("Symplex")
        rotation = fcurve_data(loaded)[('pose.bones["Spare_A"].rotation_quaternion', 0)]
        assert len(rotation) == 2 * 25 and np.ptp(rotation[1::2]) > 0.5
    finally:
        bpy.data.objects.remove(loaded)

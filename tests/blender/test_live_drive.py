"""Live driving in real Blender: synthetic key events and timer ticks on a controlled clock drive a car rig;
the kept take bakes to the live drive's motion bit for bit, a cancelled drive leaves the scene as it was, and
the operator's own modal() runs on the same synthetic events."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from addon.bridge import vehicle_bake, vehicle_body_rig, vehicle_live, vehicle_rig, vehicle_setup
from addon.bridge.vehicle_setup import RESULT_PROPERTY, find
from addon.solver.integrator import simulate
from addon.solver.model import Mechanism
from addon.ui.drive_operator import SYMPLEX_OT_drive_vehicle
from tests.blender.scenes import fcurve_data, new_scene, scene_state, symplex  # noqa: F401


def key(kind: str, value: str) -> SimpleNamespace:
    """An event with Blender's fields."""
    return SimpleNamespace(type=kind, value=value)


# (wall-clock second, event) of a take: throttle, then a left turn while braking a little, then right.
SCRIPT = ((0.05, key("W", "PRESS")), (1.0, key("LEFT_ARROW", "PRESS")), (1.6, key("LEFT_ARROW", "RELEASE")),
          (1.8, key("S", "PRESS")), (2.0, key("W", "RELEASE")), (2.1, key("S", "RELEASE")),
          (2.2, key("D", "PRESS")), (2.9, key("D", "RELEASE")))


def drive_script(session, seconds: float = 3.2, tick: float = 1.0 / 30.0, feed=None) -> None:
    """Play SCRIPT on the session's drive with timer ticks every `tick` s of a clock starting at 0 (not the
    frame rate: the drive steps whole frames by the clock); `feed(event)` delivers each event (default: the
    drive's event())."""
    feed = feed or session.drive.event
    pending = list(SCRIPT)
    now = 0.0
    while now <= seconds:
        while pending and pending[0][0] <= now:
            feed(pending.pop(0)[1])
        session.drive.tick(now)
        now += tick


def car_scene(prefix: str):
    scene = new_scene(prefix, frames=30, fps=24)
    rig = vehicle_rig.build_car_rig(scene, "sedan", f"{prefix} car")
    return scene, scene.objects[rig.chassis]


def test_the_kept_take_bakes_to_the_live_drive_bit_for_bit(symplex):
    scene, owner = car_scene("live")
    session = vehicle_live.start(scene, owner, 0.0)
    drive_script(session)
    live = session.drive.trajectory()
    assert session.drive.steps == int(3.2 * 24)  # whole frames by the clock: floor(3.2 s * 24 fps)
    values = session.drive.take()
    assert max(values["drive_torque"]) > 0 and min(values["steer"]) < 0 < max(values["steer"])
    assert max(values["brake"]) > 0  # the rig keys drive_torque (N m): its brake records as a fraction
    theta = 2.0 * np.arctan2(live.poses[:, 0, 6], live.poses[:, 0, 3])
    assert theta[-1] != 0.0 and np.ptp(live.poses[:, 0, 0]) > 1.0  # it drove off and turned

    report = vehicle_live.keep(scene, session)
    assert scene.frame_end == scene.frame_start + session.drive.steps + 1
    assert report.steps == session.drive.steps + 1
    rig, preset = find(scene, owner)
    baked = vehicle_bake.simulate_rig(vehicle_rig.read_rig(scene, rig, preset))
    n = len(live.t)
    for name in ("poses", "q", "energy", "constraint_residual"):
        assert np.array_equal(getattr(baked, name)[:n], getattr(live, name)), name  # bit for bit
    objects = vehicle_bake.object_trajectory(session.reading, live)
    data = fcurve_data(owner)  # the baked location keys play the live drive (float32 keys)
    keyed = np.stack([data[("location", i)][1::2] for i in range(3)], 1).astype(float)
    assert np.allclose(keyed[:n], objects.poses[:, 0, :3], rtol=0.0, atol=1e-5)


def test_a_cancelled_drive_leaves_the_scene_as_it_was(symplex):
    scene, owner = car_scene("cancel")
    before = scene_state(scene)
    session = vehicle_live.start(scene, owner, 0.0)
    drive_script(session, seconds=1.5)
    vehicle_live.show(scene, session)
    assert scene_state(scene) != before  # the car moved on screen
    vehicle_live.restore(scene, session)
    assert scene_state(scene) == before


def test_the_clock_steps_whole_frames_and_gives_way_when_behind(symplex):
    scene, owner = car_scene("clock")
    drive = vehicle_live.start(scene, owner, 10.0).drive
    assert drive.tick(10.0 + 0.99 / 24) == 0
    assert drive.tick(10.0 + 1.01 / 24) == 1
    assert drive.tick(10.0 + 3.5 / 24) == 2
    assert drive.tick(20.0) == 8  # stalled for 10 s: eight steps, then the clock restarts from there
    assert drive.tick(20.0 + 1.01 / 24) == 1


def test_the_operator_modal_drives_keeps_and_cancels(symplex):
    scene, owner = car_scene("modal")
    before = scene_state(scene)
    context = SimpleNamespace(scene=scene, area=None, window_manager=SimpleNamespace(event_timer_remove=lambda t: None),
                              window=None)
    op = SimpleNamespace(report=lambda *a: None, _timer=None,
                         session=vehicle_live.start(scene, owner, 0.0))
    modal = SYMPLEX_OT_drive_vehicle.modal
    assert modal(op, context, key("W", "PRESS")) == {"RUNNING_MODAL"}
    assert modal(op, context, key("G", "PRESS")) == {"PASS_THROUGH"}
    clock = iter(np.arange(1, 40) / 24.0 + 1e-6)
    op.clock = lambda: next(clock)
    for _ in range(30):
        assert modal(op, context, key("TIMER", "NOTHING")) == {"RUNNING_MODAL"}
    assert op.session.drive.steps == 30
    assert modal(op, context, key("ESC", "PRESS")) == {"CANCELLED"}
    assert scene_state(scene) == before

    op.session = vehicle_live.start(scene, owner, 0.0)
    clock = iter(np.arange(1, 40) / 24.0 + 1e-6)
    modal(op, context, key("W", "PRESS"))
    for _ in range(20):
        modal(op, context, key("TIMER", "NOTHING"))
    assert modal(op, context, key("RET", "PRESS")) == {"FINISHED"}
    assert scene.frame_end == scene.frame_start + 21
    assert owner[RESULT_PROPERTY].startswith("Baked vehicle")


BODY_SCRIPTS = {  # preset -> (second, event) of a take in its own controls
    "helicopter": ((0.05, key("W", "PRESS")), (0.8, key("W", "RELEASE")), (1.0, key("A", "PRESS")),
                   (1.5, key("I", "PRESS")), (2.0, key("A", "RELEASE"))),
    "speedboat": ((0.05, key("W", "PRESS")), (1.0, key("LEFT_ARROW", "PRESS")), (1.8, key("W", "RELEASE"))),
    "tank": ((0.05, key("W", "PRESS")), (1.0, key("W", "RELEASE")), (1.2, key("D", "PRESS"))),
}


@pytest.mark.parametrize("preset", sorted(BODY_SCRIPTS))
def test_body_rigs_drive_in_their_own_controls_and_bake_bit_for_bit(symplex, preset):
    scene = new_scene(f"live {preset}", frames=30, fps=24)
    rig = vehicle_body_rig.build_body_rig(scene, preset, f"{scene.name} rig", (0.0, 0.0, 0.0))
    owner = scene.objects[rig.chassis]
    session = vehicle_live.start(scene, owner, 0.0)
    pending, now = list(BODY_SCRIPTS[preset]), 0.0
    while now <= 2.5:
        while pending and pending[0][0] <= now:
            session.drive.event(pending.pop(0)[1])
        session.drive.tick(now)
        now += 1.0 / 30.0
    live = session.drive.trajectory()
    take = session.drive.take()
    assert set(take) == {b.control for b in session.drive.bindings}  # recorded under the vehicle's own names
    assert sum(np.ptp(values) > 0 for values in take.values()) >= 2  # the keys moved its controls
    vehicle_live.keep(scene, session)
    reading = vehicle_body_rig.read_body_rig(scene, rig, vehicle_setup.find(scene, owner)[1])
    mech = Mechanism(name="check", bodies=(), joints=(), gravity=tuple(scene.gravity), vehicle=reading.vehicle)
    baked = simulate(mech, reading.dt, reading.steps, method="vehicle")
    n = len(live.t)
    assert reading.steps == n  # the scene ends one frame after the take
    for name in ("poses", "q", "energy"):
        assert np.array_equal(getattr(baked, name)[:n], getattr(live, name)), name  # bit for bit
    assert np.linalg.norm(live.poses[-1, 0, :3] - live.poses[0, 0, :3]) > 0.5  # it went somewhere


def test_a_snakeboard_is_refused_and_nothing_changes(symplex):
    scene = new_scene("live snakeboard", frames=30, fps=24)
    rig = vehicle_body_rig.build_body_rig(scene, "snakeboard", f"{scene.name} rig", (0.0, 0.0, 0.0))
    before = scene_state(scene)
    with pytest.raises(vehicle_rig.RigError, match="not a snakeboard"):
        vehicle_live.start(scene, scene.objects[rig.chassis], 0.0)
    assert scene_state(scene) == before

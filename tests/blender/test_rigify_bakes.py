"""No silent physics failure on Rigify metarigs (Rigify ships with Blender as a core add-on).

A cat metarig's tail on ball joints pinned at its root, and a human metarig's arm pinned at the
shoulder, set up as the UI does (bones marked Simulate, the root bone's location locked, Add Setup)
and baked: a bake either finishes with its energy within the audit's bound (after restarting with more
substeps, which its report says) or fails naming the frame, the bodies and the Substeps setting, with
the scene left as it was. Never 'finished' with the energy blown up.
"""

from __future__ import annotations

import re

import addon_utils
import bpy
import numpy as np
import pytest

from addon.bridge import job
from addon.solver.energy_audit import BOUND, audit
from addon.solver.integrator import simulate, simulate_plain
from addon.solver.trajectory import ConvergenceError, EnergyError

from .scenes import new_scene, scene_state, symplex  # noqa: F401  (fixture)

TAIL = ("tail.001", "tail.002", "tail.003", "tail.004")
ARM = ("upper_arm.L", "forearm.L", "hand.L")

pytestmark = pytest.mark.usefixtures("symplex", "rigify")


@pytest.fixture(scope="module")
def rigify():
    """Rigify enabled for the module (the preferences are never saved: conftest)."""
    addon_utils.enable("rigify", default_set=True)
    try:
        yield
    finally:
        addon_utils.disable("rigify", default_set=True)


def metarig_setup(operator: str, bones: tuple[str, ...], frames: int, substeps: int, method: str = "tree",
                  fps: int = 24):
    """The metarig `operator` adds, moved into a new scene of `frames` frames at `fps`; `bones` simulated
    and the first one pinned (location locked), then Add Setup as the sidebar does. Returns (scene, setup)."""
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    getattr(bpy.ops.object, operator)()
    arm = bpy.context.active_object
    scene = new_scene("rigify", frames=frames, fps=fps)
    scene.collection.objects.link(arm)
    for collection in list(arm.users_collection):
        if collection != scene.collection:
            collection.objects.unlink(arm)
    for name in bones:
        arm.pose.bones[name].symplex.simulate = True
    arm.pose.bones[bones[0]].lock_location = (True, True, True)
    with bpy.context.temp_override(scene=scene, active_object=arm, object=arm):
        assert bpy.ops.symplex.setup_add() == {"FINISHED"}
    setup = scene.symplex.setups[-1]
    setup.substeps, setup.method = substeps, method
    return scene, setup


def run(scene, setup_name: str) -> job.BakeJob:
    baker = job.BakeJob(scene, setup_name)
    while not baker.advance(budget_seconds=600.0):
        pass
    return baker


def test_rigify_tail_at_one_substep_blows_up_and_is_never_baked_as_finished():
    """The cat's tail at 1 substep, run directly, gains orders of magnitude of energy and the audit trips;
    the bake either ends within the bound after restarting with more substeps or fails naming the frame,
    the tail bones and Substeps, leaving the scene as it was."""
    scene, setup = metarig_setup("armature_cat_metarig_add", TAIL, frames=120, substeps=1)
    baker = job.BakeJob(scene, setup.name)
    read = baker.read
    assert {j.type for j in read.mechanism.joints} == {"ball"} and len(read.mechanism.joints) == len(TAIL)
    raw = simulate_plain(read.mechanism, read.dt, read.steps, "tree", read.tolerance)  # as the method makes it
    raw_audit = audit(read.mechanism, raw, "tree")
    # the raw run either finishes with the audit tripped or stops where Newton fails on the blown-up state
    # (measured, the link-wise step, tree/linkwise.py: Newton fails at step 106 in C, 65 in numpy)
    assert raw_audit.applies and (raw.status == "failed" or raw_audit.failed), raw.message
    assert simulate(read.mechanism, read.dt, read.steps, "tree", read.tolerance).status == "failed"  # verified
    # blown up, not drifted: it gained 79 J (C; numpy 96 J) against 7.1 J available before that, and 25 J on a
    # machine where Newton gave up on the blown-up state sooner (measured; the chart midpoint, over 100 times that)
    assert np.max(raw.energy) - raw.energy[0] > 2 * raw_audit.available
    before = scene_state(scene)
    try:
        baker = run(scene, setup.name)
    except (EnergyError, ConvergenceError) as err:
        message = str(err)
        assert message.startswith(f"setup {setup.name!r}, frame ") and "Substeps" in message, message
        assert "it is 1, and this bake tried up to 8" in message and "Maximal method" in message, message
        if isinstance(err, EnergyError):
            assert "largest changes: 'tail." in message, message
        assert scene_state(scene) == before
        with pytest.raises(RuntimeError, match="Substeps"), bpy.context.temp_override(scene=scene):
            bpy.ops.symplex.bake(setup=setup.name)
        assert scene_state(scene) == before
    else:
        report = baker.finish(scene)
        assert "restarted with" in report.summary() and baker.audit.ratio <= BOUND, report.summary()


def test_rigify_tail_at_the_default_substeps_restarts_until_its_energy_is_bounded():
    """At 2 substeps the tail gains energy past the bound; the bake restarts with more substeps, says so,
    and what it bakes keeps its energy within the bound. The setup keeps the user's 2."""
    scene, setup = metarig_setup("armature_cat_metarig_add", TAIL, frames=120, substeps=2)
    baker = run(scene, setup.name)
    report = baker.finish(scene)
    summary = report.summary()
    # measured: restarted with 4 (Newton failed at frame 102.6), then 8 (the energy at frame 105); the chart
    # midpoint needed 4
    assert re.search(r"restarted with \d+ substeps per frame \(setup: 2\) after the energy grew past its bound at "
                     r"frame", summary), summary
    assert baker.read.substeps > 2 and setup.substeps == 2
    baked = baker.trajectory()
    assert baked.status == "finished" and baked.nsteps == 119 * baker.read.substeps
    check = audit(baker.read.mechanism, baked, "tree")
    assert check.applies and not check.failed and check.error <= BOUND * check.available
    assert "energy check: max |E - E0|" in summary and setup.diagnostics.status == "finished"


def test_rigify_arm_bakes_at_its_own_substeps_at_24_fps():
    """The human metarig's arm pinned at the shoulder at 24 fps: the link-wise step (tree/linkwise.py) carries
    it at the setup's 1 and 2 substeps with no restart, within the energy bound (measured: 5.3 % and 1.1 % of the
    energy the motion can exchange, bound 10 %)."""
    for substeps in (1, 2):
        scene, setup = metarig_setup("armature_human_metarig_add", ARM, frames=48, substeps=substeps)
        with bpy.context.temp_override(scene=scene):
            assert bpy.ops.symplex.bake(setup=setup.name) == {"FINISHED"}
        message = setup.diagnostics.message
        assert "restarted" not in message and "energy check: max |E - E0|" in message, message
        assert setup.diagnostics.steps == 47 * substeps


def test_rigify_arm_bakes_after_a_newton_restart():
    """The same arm at 8 fps fails at 2 substeps (dt = 1/16 s: the link-wise step's energy grows past the
    bound, measured; the chart midpoint's Newton failed); the bake restarts with more,
    finishes within the energy bound, and its report says so."""
    scene, setup = metarig_setup("armature_human_metarig_add", ARM, frames=48, substeps=2, fps=8)
    with bpy.context.temp_override(scene=scene):
        assert bpy.ops.symplex.bake(setup=setup.name) == {"FINISHED"}
    message = setup.diagnostics.message
    # measured: restarted with 4 at frame 18, then with 8 at frame 44.75, both after the energy grew
    restarts = re.findall(r"restarted with (\d+) substeps per frame \(setup: 2\) after (?:Newton did not converge|"
                          r"the energy grew past its bound) at frame", message)
    assert restarts, message
    assert "energy check: max |E - E0|" in message and setup.substeps == 2
    assert setup.diagnostics.steps == 47 * int(restarts[-1])


def test_rigify_arm_without_restarts_fails_naming_substeps(monkeypatch):
    """With no restarts left, the arm's failure at 1 substep and 8 fps (the link-wise step's energy past the bound
    or its Newton failing; the chart midpoint's Newton failed) names the frame, the setting the user has
    (Substeps, its value) and the other method; nothing in the scene changes."""
    monkeypatch.setattr(job, "MAX_SUBSTEP_RESTARTS", 0)
    scene, setup = metarig_setup("armature_human_metarig_add", ARM, frames=48, substeps=1, fps=8)
    before = scene_state(scene)
    with pytest.raises((ConvergenceError, EnergyError)) as err:
        run(scene, setup.name)
    message = str(err.value)
    assert message.startswith(f"setup {setup.name!r}, frame ")
    assert message.endswith("Raise the setup's Substeps (solver steps per frame; it is 1) or try the Maximal method")
    assert scene_state(scene) == before


def test_rigify_arm_maximal_spin_past_2_over_dt_is_a_newton_failure_that_restarts():
    """Under the maximal method at 1 substep a Newton iterate spins a bone past 2/dt (where its rotation
    update is undefined): that is a Newton failure naming the body, so the bake restarts with 2."""
    scene, setup = metarig_setup("armature_human_metarig_add", ARM, frames=16, substeps=1, method="maximal")
    baker = run(scene, setup.name)
    report = baker.finish(scene)
    assert "restarted with 2 substeps per frame (setup: 1) after Newton did not converge at frame" in report.summary()
    fresh = job.BakeJob(scene, setup.name)  # the setup's own 1 substep
    with pytest.raises(ConvergenceError, match=r"body '(upper_arm|forearm|hand)\.L' reached the angular speed 2/dt"):
        for _ in range(fresh.steps):
            fresh.integrator.step()

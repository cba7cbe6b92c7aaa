"""verify.py and simulate(): a finished run is finite, holds its joints on the full rotation and keeps a
conservative setup's energy bounded; otherwise it fails naming the step, the joint and a step that works.
The cases are issue 19's silent wrong answers."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from addon.solver import lie
from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Body, Joint, Mechanism
from addon.solver.presets import preset_path
from addon.solver.trajectory import AssemblyError
from addon.solver.verify import joint_gaps

INERTIA = (0.1, 0.1, 0.02, 0.0, 0.0, 0.0)
CONSTRAINED_ROTATION = ("revolute", "prismatic", "cylindrical", "planar", "fixed")


def two_bodies(kind: str, turn: np.ndarray) -> tuple[Mechanism, np.ndarray]:
    """A body on world by `kind` at the origin (axis z, axis2 x) and its poses: at the reference, and with
    its frame turned by `turn` (3x3) about the anchor."""
    body = Body("b", 1.0, (0.0, 0.0, 0.0), inertia=INERTIA)
    joint = Joint("j", kind, "world", "b", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0))
    poses = np.zeros((2, 1, 7))
    poses[:, 0, 3] = 1.0
    poses[1, 0, 3:] = lie.matrix_to_quat(turn)
    return Mechanism(kind, (body,), (joint,)), poses


@pytest.mark.parametrize("kind", ["revolute", "prismatic", "cylindrical", "universal", "planar", "ball", "free",
                                  "fixed"])
def test_a_half_turn_flip_is_a_gap_of_two_where_the_joint_constrains_rotation(kind):
    """About x, a half turn flips the joint axis z: a chord of 2 for every type that keeps z (and for
    prismatic and fixed, which keep the whole frame); universal, ball and free allow it."""
    mech, poses = two_bodies(kind, lie.axis_rotation(0, math.pi))
    translation, rotation = joint_gaps(mech, ["b"], poses)
    assert translation.max() == pytest.approx(0.0, abs=1e-15)
    assert rotation[0, 0] == pytest.approx(0.0, abs=1e-15)
    assert rotation[1, 0] == pytest.approx(2.0 if kind in CONSTRAINED_ROTATION else 0.0, abs=1e-12)
    # a turn of 0.7 rad about the axis itself: allowed by every type but prismatic and fixed (chord 2 sin 0.35)
    mech, poses = two_bodies(kind, lie.axis_rotation(2, 0.7))
    _, spin = joint_gaps(mech, ["b"], poses)
    assert spin[1, 0] == pytest.approx(2 * math.sin(0.35) if kind in ("prismatic", "fixed") else 0.0, abs=1e-12)


def flipped_key() -> Mechanism:
    """A carriage on a vertical track and an off-centre rotor on a spindle on the same line, keyed to the
    carriage by a prismatic loop joint; the spindle starts half a turn round: the key's dot-product rows
    hold (a half turn about the slide axis keeps x.y, y.z, z.x zero) but the joint is assembled flipped."""
    bodies = (Body("carriage", 1.0, (0.0, 0.0, -0.5), inertia=INERTIA),
              Body("rotor", 1.0, (0.0, 0.0, -0.5), com=(0.2, 0.0, 0.0), inertia=INERTIA))
    joints = (Joint("track", "prismatic", "world", "carriage", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
              Joint("spindle", "revolute", "world", "rotor", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), q0=(math.pi,)),
              Joint("key", "prismatic", "carriage", "rotor", (0.0, 0.0, -0.5), (0.0, 0.0, 1.0)))
    return Mechanism("flipped key", bodies, joints, gravity=(0.0, -9.81, 0.0))


@pytest.mark.parametrize("method", ["tree", "maximal"])
def test_a_loop_assembled_flipped_is_refused_at_the_start_naming_the_joint(method):
    with pytest.raises(AssemblyError, match=r"joint 'key' \(prismatic.*open by 0 m and 2 in rotation"):
        simulate(flipped_key(), 0.01, 10, method)
    unflipped = flipped_key().replace(joints=tuple(replace(j, q0=()) for j in flipped_key().joints))
    assert simulate(unflipped, 0.01, 10, method).status == "finished"


@pytest.mark.parametrize("method", ["tree", "maximal"])
def test_a_slider_crank_locked_by_its_pin_axis_fails_naming_the_open_joint(method):
    """The crank pin's axis along X (a valid file) leaves the loop no motion; both methods used to finish
    with the loop 3.18 m open."""
    mech = load_mechanism(preset_path("slider_crank"))
    mech = mech.replace(joints=tuple(replace(j, axis=(1.0, 0.0, 0.0)) if j.name == "crank_pin" else j
                                     for j in mech.joints))
    run = simulate(mech, 0.01, 20, method)
    assert run.status == "failed"
    found = re.search(r"step (\d+) .*joint '(\w+)' \(revolute.*open by ([0-9.e-]+) m", run.message)
    assert found and found.group(2) == "wrist_pin" and float(found.group(3)) > 1e-3, run.message
    assert run.nsteps < int(found.group(1)) + 1
    assert "the loop cannot move as its joint axes are (it is locked" in run.message
    assert "no time step down to dt/8" in run.message


def four_bar_tripled() -> Mechanism:
    mech = load_mechanism(preset_path("four_bar"))
    return mech.replace(joints=tuple(replace(j, v0=tuple(3 * v for v in j.v0)) for j in mech.joints))


@pytest.mark.parametrize("method", ["tree", "maximal"])
def test_the_four_bar_too_fast_for_its_step_fails_with_a_step_that_works(method):
    """Every v0 tripled at dt = 1/24: the tree method's energy went 0.89 J -> 7.8e6 J with exit 0. Now the
    run fails at the step that breaks the bound (or Newton's), and names a dt that runs the same 2 s and
    passes every check, which it does."""
    mech, dt, steps = four_bar_tripled(), 1 / 24, 48
    run = simulate(mech, dt, steps, method)
    assert run.status == "failed"
    assert np.all(np.abs(run.energy - run.energy[0]) <= 0.1 * 2 * run.energy[0])  # the samples kept are sound
    found = re.search(r"dt = ([0-9.e-]+) s runs the same 2 s and passes every check", run.message)
    assert found, run.message
    fine = float(found.group(1))
    assert simulate(mech, fine, round(steps * dt / fine), method).status == "finished"
    if method == "tree":
        assert "the energy of this conservative setup" in run.message and run.nsteps <= 10

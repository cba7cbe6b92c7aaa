"""What a finished run guarantees, checked on its recorded poses: the one gate before a run is called finished.

Every method's result passes through `verify` (simulate() for the CLI and the tests, bridge/job.py for a
Blender bake), independently of how the method closed its constraints:

* finite: every recorded pose and energy is a number;
* joints hold: at every sample, every joint's child frame sits where the joint type allows relative to its
  parent frame (`joint_gaps`), measured on the full relative rotation, so a loop assembled onto a flipped
  branch (which dot-product rotation rows cannot see) is a gap of 2;
* energy: a conservative setup's energy stays within its integrator's error bound, and one whose only
  non-conservative parts are dampers, stops or contacts does not rise past it (energy_audit.growth_audit).

The first sample that breaks one of them is an error naming the step (of the requested grid), the time,
the worst joint (or body) and the size of the violation.
"""

from __future__ import annotations

import numpy as np

from . import lie
from .energy_audit import BOUND, EnergyAudit, growth_audit, length_scale, nonconservative_parts
from .model import WORLD, Joint, Mechanism
from .reference_frames import body_pose, joint_pose
from .trajectory import EnergyError, SolverError, Trajectory

# A joint gap past GAP_TOL (radians; metres per metre of the mechanism's size) is a broken constraint: the
# methods hold their rows to Newton tolerance (1e-10), so this is six orders of magnitude of margin.
GAP_TOL = 1e-6
E_Z = np.array([0.0, 0.0, 1.0])


class ConstraintError(SolverError):
    """A joint of a run came apart: its child frame left the motion its type allows."""


def _joint_frames(mechanism: Mechanism, joint: Joint) -> tuple[np.ndarray, np.ndarray]:
    """The joint frame at the reference in the parent's and the child's body frames (4x4 each)."""
    reference = joint_pose(joint)
    frames = []
    for name in (joint.parent, joint.child):
        if name == WORLD:
            frames.append(reference)
        else:
            frames.append(lie.inverse_pose(body_pose(mechanism.body(name))) @ reference)
    return frames[0], frames[1]


def _world_frames(poses: np.ndarray, index: dict[str, int], name: str, local: np.ndarray) -> np.ndarray:
    """World poses (N, 4, 4) of a frame `local` fixed on body `name` (or the world), over the samples."""
    n = len(poses)
    if name == WORLD:
        return np.broadcast_to(local, (n, 4, 4))
    body = poses[:, index[name]]
    return lie.pose_matrix(body[:, :3], lie.quat_to_matrix(body[:, 3:])) @ local


def _gap(kind: str, p: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Translation (N,) and rotation (N,) gaps of relative joint transforms (p (N, 3), R (N, 3, 3)) from the
    set of motions joint type `kind` allows; rotations as chords (2 sin(angle / 2)), so a flip is 2."""
    zero = np.zeros(len(p))
    axis_chord = np.linalg.norm(R[:, :, 2] - E_Z, axis=1)
    whole_chord = np.linalg.norm(R - np.eye(3), axis=(1, 2)) / np.sqrt(2.0)
    slide = np.linalg.norm(p[:, :2], axis=1)
    return {
        "revolute": (np.linalg.norm(p, axis=1), axis_chord),
        "prismatic": (slide, whole_chord),
        "cylindrical": (slide, axis_chord),
        "universal": (np.linalg.norm(p, axis=1), np.abs(R[:, 2, 0])),  # R = Rz(a) Rx(b): e_z . R e_x = 0
        "planar": (np.abs(p[:, 2]), axis_chord),
        "ball": (np.linalg.norm(p, axis=1), zero),
        "fixed": (np.linalg.norm(p, axis=1), whole_chord),
        "free": (zero, zero),
    }[kind]


def joint_gaps(mechanism: Mechanism, bodies: list[str], poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Translation gaps (m) and rotation gaps (chords) (N, J) of every joint of `mechanism` over poses
    (N, B, 7) of `bodies`: how far each child joint frame is from where its joint type allows."""
    index = {name: i for i, name in enumerate(bodies)}
    n = len(poses)
    translation, rotation = np.zeros((n, len(mechanism.joints))), np.zeros((n, len(mechanism.joints)))
    for j, joint in enumerate(mechanism.joints):
        local_parent, local_child = _joint_frames(mechanism, joint)
        parent = _world_frames(poses, index, joint.parent, local_parent)
        child = _world_frames(poses, index, joint.child, local_child)
        R_parent = parent[:, :3, :3]
        R = np.einsum("nji,njk->nik", R_parent, child[:, :3, :3])
        p = np.einsum("nji,nj->ni", R_parent, child[:, :3, 3] - parent[:, :3, 3])
        translation[:, j], rotation[:, j] = _gap(joint.type, p, R)
    return translation, rotation


def first_gap(mechanism: Mechanism, bodies: list[str], poses: np.ndarray) -> tuple[int, int, float] | None:
    """(sample, joint index, gap) of the first sample where a joint's gap passes GAP_TOL (translations
    relative to the mechanism's size), the worst joint there; None when every joint holds."""
    if not mechanism.joints or not len(poses):
        return None
    translation, rotation = joint_gaps(mechanism, bodies, poses)
    relative = np.maximum(translation / length_scale(mechanism), rotation)
    over = np.flatnonzero(np.max(relative, axis=1) > GAP_TOL)
    if not len(over):
        return None
    k = int(over[0])
    j = int(np.argmax(relative[k]))
    return k, j, float(max(translation[k, j], rotation[k, j]))


def describe_gap(mechanism: Mechanism, bodies: list[str], poses: np.ndarray, j: int) -> str:
    """`joint 'name' (revolute) is open by 0.5 m and 2 (chord) of rotation` for joint index j at poses[-1]."""
    translation, rotation = joint_gaps(mechanism, bodies, poses[-1:])
    joint = mechanism.joints[j]
    return (f"joint {joint.name!r} ({joint.type}, between {joint.parent!r} and {joint.child!r}) is open by "
            f"{translation[0, j]:.3g} m and {rotation[0, j]:.3g} in rotation (chord: 2 is a half turn)")


def _body_joint(mechanism: Mechanism, body: str) -> str:
    """The first joint that moves `body` (its child side first), for naming where energy went."""
    for side in ("child", "parent"):
        for joint in mechanism.joints:
            if getattr(joint, side) == body:
                return joint.name
    return "(none)"


def energy_error(mechanism: Mechanism, trajectory: Trajectory, method: str, result: EnergyAudit) -> EnergyError:
    """The error for a failed energy audit: the step, the energy, the bodies and their joints."""
    kind = "passive" if nonconservative_parts(mechanism, method) else "conservative"
    k = int(result.failed_sample)
    energy = trajectory.energy
    bodies = ", ".join(f"{name!r} ({change:+.3g} J, joint {_body_joint(mechanism, name)!r})"
                       for name, change in result.bodies)
    return EnergyError(
        f"step {k} (t = {trajectory.t[k]:.6g} s): the energy of this {kind} "
        f"setup went from {energy[0]:.4g} J "
        f"to {energy[k]:.4g} J, past {100 * BOUND:g} % of the {result.available:.3g} J its motion can exchange "
        f"(the integrator's error stays below that while the steps resolve the motion); largest changes: {bodies}",
        step=k, time=float(trajectory.t[k]))


def verify(mechanism: Mechanism, trajectory: Trajectory, method: str) -> SolverError | None:
    """The first broken guarantee of `trajectory` (see the module docstring) as an error, or None."""
    poses, energy = np.asarray(trajectory.poses, dtype=float), np.asarray(trajectory.energy, dtype=float)
    finite = np.isfinite(poses).reshape(len(poses), -1).all(axis=1) & np.isfinite(energy)
    if not finite.all():
        k = int(np.argmin(finite))
        return SolverError(f"step {k} (t = {trajectory.t[k]:.6g} s): the state is not finite (the motion blew up); "
                           "try a smaller time step", step=k, time=float(trajectory.t[k]))
    gap = first_gap(mechanism, trajectory.bodies, poses)
    if gap is not None:
        k, j, _ = gap
        dropped = [*trajectory.info.get("redundant_constraints_dropped_in", ()),
                   *trajectory.info.get("redundant_rows_dropped_in", ())]
        locked = ("; its loop rows were dropped as redundant at the start, but they were only dependent there: "
                  "the loop cannot move as its joint axes are (it is locked, or starts at a singular "
                  "configuration); check the axes of the joints in that loop"
                  if mechanism.joints[j].name in dropped else "")
        return ConstraintError(f"step {k} (t = {trajectory.t[k]:.6g} s): "
                               f"{describe_gap(mechanism, trajectory.bodies, poses[:k + 1], j)}{locked}",
                               step=k, time=float(trajectory.t[k]))
    result = growth_audit(mechanism, trajectory, method)
    return energy_error(mechanism, trajectory, method, result) if result.failed else None

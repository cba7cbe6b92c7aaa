"""Compile a Mechanism into a TreeModel: a frame tree of primitive transforms plus loop-constraint rows.

Seed 000 §III: every moving frame relates to its parent by one primitive (rotation about, or
translation along, its local x, y or z axis) after a constant placement; one coordinate per
primitive. Joints are lowered to chains of primitives in a joint frame whose z axis is the joint
axis. A spanning tree of the joint graph is chosen from "world" (each body's first joint in which it
is the child); the remaining joints close loops and become holonomic constraint rows of two kinds:
  translation rows  n . (p_P - p_C)   (n fixed in the parent body P, points fixed in P and C)
  rotation rows     u . w             (u fixed in P, w fixed in C)
Ball (and the rotational part of free) joints carry a chart: a rotation folded into the placement
of their first primitive, reset every step so the Euler-angle chain never nears gimbal lock. A spring
on such a rotation pulls toward a fixed rest rotation, not toward chart coordinates (ball_springs.py);
a free joint's translations have ordinary per-coordinate springs (in the parent's joint-frame axes).
The model is immutable (arrays read-only); per-state values live in the integrators' states
(midpoint.MidpointState, rk4.RK4State).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import lie
from ..joint_reverse import reversed_joint
from ..mass import inertia_matrix
from ..model import WORLD, Curve, Joint, Mechanism, MechanismError
from ..reference_frames import body_pose, joint_pose, joint_rotation
from ..stamp import ModelStamp, new_stamp

ROT_X, ROT_Y, ROT_Z, TRANS_X, TRANS_Y, TRANS_Z = range(6)
KIND_NAMES = ("rx", "ry", "rz", "tx", "ty", "tz")

# Primitive chains per joint type, in joint-frame axes (z = joint axis, x = axis2 where used).
PRIMITIVES: dict[str, tuple[int, ...]] = {
    "revolute": (ROT_Z,),
    "prismatic": (TRANS_Z,),
    "cylindrical": (ROT_Z, TRANS_Z),
    "universal": (ROT_Z, ROT_X),
    "planar": (TRANS_X, TRANS_Y, ROT_Z),
    "ball": (ROT_X, ROT_Y, ROT_Z),
    "free": (TRANS_X, TRANS_Y, TRANS_Z, ROT_X, ROT_Y, ROT_Z),
    "fixed": (),
}


@dataclass(frozen=True)
class TreeModel:
    """Immutable compiled tree. Frame index -1 stands for the world in every *_frame array.

    nq: number of coordinates (= moving frames). Arrays, shapes noted:
      dof_parent (nq,) parent frame, -1 = world; dof_placement (nq, 4, 4) parent_M_frame at q = 0;
      dof_kind (nq,) ROT_X..TRANS_Z; dof_joint (nq,) index into mechanism.joints;
      subtree (nq, nq) subtree[j, f] = 1 if frame f is in the subtree of j (itself included);
      ancestor (nq + 1, nq) ancestor[f, k] = 1 if k is f or an ancestor of f (row -1: world, zeros);
      pair_deep, pair_anc (npair,) all (a, b) with b an ancestor-or-self of a.
      ball_dofs (nball, 3) the three rotation coordinates of each ball chart; ball_chart0 (nball, 3, 3).
      ball_stiffness (nball,), ball_rest (nball, 3, 3): each chart's spring k/2 |log(R_rest^T R_rel)|^2 toward the
        rest rotation exp(hat(rest)) (tree/ball_springs.py); dof_stiffness is 0 on chart coordinates.
      body_frame (nbody,), body_offset (nbody, 4, 4) frame_M_body, body_mass (nbody,),
      body_com (nbody, 3) body axes, body_inertia (nbody, 3, 3) about the com in body axes.
      dof_stiffness, dof_rest, dof_damping, dof_motor_gain, dof_motor_velocity (nq,);
      dof_lower, dof_upper (nq,) joint limits (+-inf when free), enforced by midpoint.py as contacts;
      dof_torque: per-coordinate torque Curve or None; dof_prescribed (nq,) bool with curves.
      point forces: force_frame (nf,), force_point (nf, 3) in frame axes, force_vector (nf, 3), force_scale.
      loop rows: row_frame_p, row_frame_c (nrow,), row_kind (nrow,) 0 translation / 1 rotation,
        row_a (nrow, 3): point on P (translation) or u on P (rotation), in P's frame axes;
        row_b (nrow, 3): point on C or w on C, in C's frame axes; row_n (nrow, 3): n in P's frame axes;
        row_joint (nrow,) joint index.
    """

    mechanism: Mechanism
    nq: int
    coordinate_names: tuple[str, ...]
    dof_parent: np.ndarray
    dof_placement: np.ndarray
    dof_kind: np.ndarray
    dof_joint: np.ndarray
    dof_ball: np.ndarray
    subtree: np.ndarray
    ancestor: np.ndarray
    pair_deep: np.ndarray
    pair_anc: np.ndarray
    ball_dofs: np.ndarray
    ball_chart0: np.ndarray
    ball_stiffness: np.ndarray
    ball_rest: np.ndarray
    body_names: tuple[str, ...]
    body_frame: np.ndarray
    body_offset: np.ndarray
    body_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    gravity: np.ndarray
    dof_stiffness: np.ndarray
    dof_rest: np.ndarray
    dof_lower: np.ndarray
    dof_upper: np.ndarray
    dof_damping: np.ndarray
    dof_motor_gain: np.ndarray
    dof_motor_velocity: np.ndarray
    dof_torque: tuple[Curve | None, ...]
    dof_prescribed: np.ndarray
    dof_curve: tuple[Curve | None, ...]
    force_frame: np.ndarray
    force_point: np.ndarray
    force_vector: np.ndarray
    force_scale: tuple[Curve | None, ...]
    row_frame_p: np.ndarray
    row_frame_c: np.ndarray
    row_kind: np.ndarray
    row_a: np.ndarray
    row_b: np.ndarray
    row_n: np.ndarray
    row_joint: np.ndarray
    q_init: np.ndarray
    v_init: np.ndarray
    stamp: ModelStamp  # this model's identity, recorded by its states (midpoint.MidpointState.model)
    motion_index: tuple[np.ndarray, ...] = ()  # see motion_indices()

    @property
    def nrow(self) -> int:
        return len(self.row_joint)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.mechanism.joints)


def _spanning_tree(mech: Mechanism) -> tuple[list[Joint], list[int]]:
    """Tree joints (oriented parent -> child, parents first) and the indices of the loop joints.

    Breadth-first from the world, preferring joints in their written direction; a body reachable
    only against a joint's direction uses the reversed joint (joint_reverse.py) when its type has one. Raises for the rest.
    """
    touching: dict[str, list[int]] = {}
    for i, j in enumerate(mech.joints):
        touching.setdefault(j.parent, []).append(i)
        touching.setdefault(j.child, []).append(i)
    reached = {WORLD}
    tree: list[Joint] = []
    used: set[int] = set()
    frontier = [WORLD]
    while frontier:
        candidates = [(i, name) for name in frontier for i in touching.get(name, []) if i not in used]
        forward = [(i, mech.joints[i]) for i, name in candidates
                   if mech.joints[i].parent == name and mech.joints[i].child not in reached]
        backward = [(i, mech.joints[i]) for i, name in candidates
                    if mech.joints[i].child == name and mech.joints[i].parent not in reached]
        frontier = []
        for i, joint in forward + backward:
            if joint.parent in reached and joint.child in reached:
                continue
            if joint.child in reached:
                flipped = reversed_joint(joint)
                if flipped is None:
                    raise MechanismError(
                        f"{mech.source}: [[joint]] {joint.name!r}: body {joint.parent!r} is reachable from the world "
                        f"only through this {joint.type} joint's child {joint.child!r}; swap its 'parent' and "
                        "'child' (a reversed joint of this type has different coordinates)"
                    )
                joint = flipped
            reached.add(joint.child)
            used.add(i)
            tree.append(joint)
            frontier.append(joint.child)
    missing = [b.name for b in mech.bodies if b.name not in reached]
    if missing:
        raise MechanismError(
            f"{mech.source}: body {missing[0]!r} is not connected to 'world' through any chain of joints"
        )
    loops = [i for i in range(len(mech.joints)) if i not in used]
    return tree, loops


def _check_loop_joints(mech: Mechanism, loop_joints: list[int]) -> None:
    """A loop-closing joint is constraint rows only here: refuse what would act on its coordinates."""
    for ji in loop_joints:
        joint = mech.joints[ji]
        for field in ("stiffness", "rest", "damping", "motor", "lower", "upper", "prescribed"):
            if getattr(joint, field):
                raise MechanismError(
                    f"{mech.source}: [[joint]] {joint.name!r}: field {field!r} cannot act here: this joint closes a "
                    "loop, which the tree method keeps as constraint rows without coordinates (it keeps the joints "
                    "it reaches first, breadth-first from the world); move the field onto another joint of the "
                    "loop" + ("" if field == "prescribed" else ", or use the maximal method")
                )


def _dof_values(joint: Joint, values: tuple[float, ...]) -> np.ndarray:
    out = np.zeros(joint.ndof)
    out[: len(values)] = values
    return out


def compile_tree(mech: Mechanism) -> TreeModel:
    """Lower `mech` to a TreeModel. Raises MechanismError for what the tree method cannot represent."""
    body_index = {b.name: i for i, b in enumerate(mech.bodies)}
    body_ref = {b.name: body_pose(b) for b in mech.bodies}
    tree_joints, loop_joints = _spanning_tree(mech)
    _check_loop_joints(mech, loop_joints)

    parent, placement, kind, joint_of, ball_of, names = [], [], [], [], [], []
    ball_dofs, ball_chart0, ball_stiffness, ball_rest = [], [], [], []
    stiffness, rest, damping, gain, target, torque, prescribed, curves = [], [], [], [], [], [], [], []
    lower, upper = [], []
    q_init, v_init = [], []
    body_frame = np.full(len(mech.bodies), -1, dtype=np.int64)
    body_offset = np.tile(np.eye(4), (len(mech.bodies), 1, 1))
    # frame carrying each body, and that frame's world pose at the reference configuration
    carrier: dict[str, tuple[int, np.ndarray]] = {WORLD: (-1, np.eye(4))}

    joint_index = {j.name: i for i, j in enumerate(mech.joints)}
    for joint in tree_joints:
        ji = joint_index[joint.name]
        parent_frame, parent_ref = carrier[joint.parent]
        joint_ref = joint_pose(joint)
        prims = PRIMITIVES[joint.type]
        q0 = _dof_values(joint, joint.q0)
        v0 = _dof_values(joint, joint.v0)
        chart = None
        if joint.rest is not None and len(joint.rest) != len(prims):
            raise MechanismError(
                f"{mech.source}: [[joint]] {joint.name!r}: field 'rest' must have {len(prims)} values (one per "
                f"coordinate of a {joint.type} joint), got {len(joint.rest)}")
        if joint.type in ("ball", "free"):
            chart = lie.rotvec_to_matrix(q0[-3:])
            # rates of the Euler chain at angle 0 are angular velocity in chart axes
            v0 = np.concatenate([v0[:-3], chart.T @ v0[-3:]])
            q0 = np.concatenate([q0[:-3], np.zeros(3)])
        first_rot = None
        for d, prim in enumerate(prims):
            idx = len(parent)
            parent.append(parent_frame if d == 0 else idx - 1)
            placement.append(lie.inverse_pose(parent_ref) @ joint_ref if d == 0 else np.eye(4))
            kind.append(prim)
            joint_of.append(ji)
            names.append(f"{joint.name}.{KIND_NAMES[prim]}" if len(prims) > 1 else joint.name)
            on_chart = chart is not None and prim <= ROT_Z  # the rotation's spring is ball_springs.py's
            stiffness.append(0.0 if on_chart else joint.stiffness)
            rest.append(joint.rest[d] if joint.rest and not on_chart else 0.0)
            lower.append(joint.lower[d] if joint.lower else -np.inf)
            upper.append(joint.upper[d] if joint.upper else np.inf)
            damping.append(joint.damping)
            is_velocity_motor = joint.motor is not None and joint.motor.mode == "velocity"
            gain.append(joint.motor.gain if is_velocity_motor else 0.0)
            target.append(joint.motor.target_velocity if is_velocity_motor else 0.0)
            torque.append(joint.motor.torque if joint.motor is not None and joint.motor.mode == "torque" else None)
            prescribed.append(joint.prescribed is not None)
            curves.append(joint.prescribed)
            q_init.append(q0[d])
            v_init.append(v0[d])
            ball_of.append(-1)
            if chart is not None and prim <= ROT_Z and first_rot is None:
                first_rot = idx
                ball_of[idx] = len(ball_dofs)
                ball_dofs.append((idx, idx + 1, idx + 2))
                ball_chart0.append(chart)
                ball_stiffness.append(joint.stiffness)
                ball_rest.append(lie.rotvec_to_matrix(joint.rest[-3:]) if joint.rest else np.eye(3))
        if joint.type in ("ball", "free") and (joint.lower is not None or joint.upper is not None):
            raise MechanismError(
                f"{mech.source}: [[joint]] {joint.name!r}: fields 'lower'/'upper' are not supported on a "
                f"{joint.type} joint by the tree method (its rotation has no fixed angle coordinates)"
            )
        if joint.prescribed is not None and len(prims) != 1:
            raise MechanismError(
                f"{mech.source}: [[joint]] {joint.name!r}: field 'prescribed' needs a one-coordinate joint, "
                f"but a {joint.type} joint has {len(prims)}"
            )
        child_frame = len(parent) - 1 if prims else parent_frame
        child_frame_ref = joint_ref if prims else parent_ref
        child_ref = body_ref[joint.child]
        carrier[joint.child] = (child_frame, child_frame_ref)
        bi = body_index[joint.child]
        body_frame[bi] = child_frame
        body_offset[bi] = lie.inverse_pose(child_frame_ref) @ child_ref

    nq = len(parent)
    dof_parent = np.array(parent, dtype=np.int64)
    subtree = np.zeros((nq, nq))
    ancestor = np.zeros((nq + 1, nq))
    for f in range(nq):
        k = f
        while k >= 0:
            subtree[k, f] = 1.0
            ancestor[f, k] = 1.0
            k = dof_parent[k]
    pair_deep, pair_anc = np.nonzero(ancestor[:nq])

    rows = _loop_rows(mech, loop_joints, carrier)

    forces_frame, forces_point, forces_vec, forces_scale = [], [], [], []
    for force in mech.forces:
        frame, frame_ref = carrier[force.body]
        body_pt = body_ref[force.body] @ np.append(force.point, 1.0)
        forces_frame.append(frame)
        forces_point.append((lie.inverse_pose(frame_ref) @ body_pt)[:3])
        forces_vec.append(force.force)
        forces_scale.append(force.scale)
    if mech.springs:
        raise MechanismError(
            f"{mech.source}: [[spring]] {mech.springs[0].name!r}: body-to-body springs are not supported by the "
            "tree method yet; use a joint 'stiffness' instead"
        )
    def ro(a, dtype=float) -> np.ndarray:
        arr = np.array(a, dtype=dtype)
        arr.flags.writeable = False
        return arr

    inertia = [inertia_matrix(b.inertia) for b in mech.bodies]

    return TreeModel(
        mechanism=mech,
        nq=nq,
        coordinate_names=tuple(names),
        dof_parent=ro(dof_parent, np.int64),
        dof_placement=ro(np.array(placement).reshape(nq, 4, 4)),
        dof_kind=ro(kind, np.int64),
        dof_joint=ro(joint_of, np.int64),
        dof_ball=ro(ball_of, np.int64),
        subtree=ro(subtree),
        ancestor=ro(ancestor),
        pair_deep=ro(pair_deep, np.int64),
        pair_anc=ro(pair_anc, np.int64),
        ball_dofs=ro(np.array(ball_dofs, dtype=np.int64).reshape(-1, 3), np.int64),
        ball_chart0=ro(np.array(ball_chart0).reshape(-1, 3, 3)),
        ball_stiffness=ro(ball_stiffness),
        ball_rest=ro(np.array(ball_rest).reshape(-1, 3, 3)),
        body_names=tuple(b.name for b in mech.bodies),
        body_frame=ro(body_frame, np.int64),
        body_offset=ro(body_offset),
        body_mass=ro([b.mass for b in mech.bodies]),
        body_com=ro(np.array([b.com for b in mech.bodies], dtype=float).reshape(-1, 3)),
        body_inertia=ro(np.array(inertia, dtype=float).reshape(-1, 3, 3)),
        gravity=ro(mech.gravity),
        dof_stiffness=ro(stiffness),
        dof_rest=ro(rest),
        dof_lower=ro(lower),
        dof_upper=ro(upper),
        dof_damping=ro(damping),
        dof_motor_gain=ro(gain),
        dof_motor_velocity=ro(target),
        dof_torque=tuple(torque),
        dof_prescribed=ro(prescribed, bool),
        dof_curve=tuple(curves),
        force_frame=ro(forces_frame, np.int64),
        force_point=ro(np.array(forces_point, dtype=float).reshape(-1, 3)),
        force_vector=ro(np.array(forces_vec, dtype=float).reshape(-1, 3)),
        force_scale=tuple(forces_scale),
        row_frame_p=ro(rows["frame_p"], np.int64),
        row_frame_c=ro(rows["frame_c"], np.int64),
        row_kind=ro(rows["kind"], np.int64),
        row_a=ro(np.array(rows["a"], dtype=float).reshape(-1, 3)),
        row_b=ro(np.array(rows["b"], dtype=float).reshape(-1, 3)),
        row_n=ro(np.array(rows["n"], dtype=float).reshape(-1, 3)),
        row_joint=ro(rows["joint"], np.int64),
        q_init=ro(q_init),
        v_init=ro(v_init),
        stamp=new_stamp("tree", mech.name),
        motion_index=motion_indices(np.array(kind, dtype=np.int64)),
    )


def motion_indices(kind: np.ndarray) -> tuple[np.ndarray, ...]:
    """Where each primitive's motion puts cos, sin, -sin and its translation in a flat 4x4 matrix.

    Returns (rot, cos_at (nrot, 2), sin_at, minus_sin_at, trans, trans_at): frame indices of the
    rotations and translations and the flat (0..15) positions kinematics.local_transforms fills.
    """
    rot = np.nonzero(kind <= ROT_Z)[0]
    trans = np.nonzero(kind > ROT_Z)[0]
    axis = kind[rot]
    i, j = (axis + 1) % 3, (axis + 2) % 3
    cos_at = np.stack([5 * i, 5 * j], axis=1)
    sin_at, minus_sin_at = 4 * j + i, 4 * i + j
    trans_at = 4 * (kind[trans] - 3) + 3
    return rot, cos_at, sin_at, minus_sin_at, trans, trans_at


# Constraint rows per loop-joint type: ("t", joint-frame direction index) fixes translation along
# that joint axis; ("r", u index, w index) keeps joint-frame axis u on P orthogonal to axis w on C.
LOOP_ROWS: dict[str, tuple[tuple, ...]] = {
    "ball": (("t", 0), ("t", 1), ("t", 2)),
    "revolute": (("t", 0), ("t", 1), ("t", 2), ("r", 2, 0), ("r", 2, 1)),
    "universal": (("t", 0), ("t", 1), ("t", 2), ("r", 2, 0)),
    "cylindrical": (("t", 0), ("t", 1), ("r", 2, 0), ("r", 2, 1)),
    "prismatic": (("t", 0), ("t", 1), ("r", 2, 0), ("r", 2, 1), ("r", 0, 1)),
    "planar": (("t", 2), ("r", 2, 0), ("r", 2, 1)),
    "fixed": (("t", 0), ("t", 1), ("t", 2), ("r", 2, 0), ("r", 2, 1), ("r", 0, 1)),
    "free": (),
}


def _loop_rows(mech: Mechanism, loop_joints: list[int], carrier: dict) -> dict[str, list]:
    rows: dict[str, list] = {k: [] for k in ("frame_p", "frame_c", "kind", "a", "b", "n", "joint")}
    for ji in loop_joints:
        joint = mech.joints[ji]
        fp, ref_p = carrier[joint.parent]
        fc, ref_c = carrier[joint.child]
        R_joint = joint_rotation(joint)
        anchor = np.append(joint.anchor, 1.0)
        point_p = (lie.inverse_pose(ref_p) @ anchor)[:3]
        point_c = (lie.inverse_pose(ref_c) @ anchor)[:3]
        axes_p = ref_p[:3, :3].T @ R_joint  # joint axes in P's frame axes (columns)
        axes_c = ref_c[:3, :3].T @ R_joint
        for spec in LOOP_ROWS[joint.type]:
            rows["frame_p"].append(fp)
            rows["frame_c"].append(fc)
            rows["joint"].append(ji)
            if spec[0] == "t":
                rows["kind"].append(0)
                rows["a"].append(point_p)
                rows["b"].append(point_c)
                rows["n"].append(axes_p[:, spec[1]])
            else:
                rows["kind"].append(1)
                rows["a"].append(axes_p[:, spec[1]])
                rows["b"].append(axes_c[:, spec[2]])
                rows["n"].append(np.zeros(3))
    return rows

"""Joint constraints of the maximal-coordinate method: generic translational and rotational rows and
joint coordinates, with exact Jacobians in (x, phi) of the two bodies.

Seed 003 §3.3 (notes/003.md §2.5): every joint type is built from two generic functions of the two
joint frames (frame A fixed in the parent, frame B fixed in the child; they coincide at the
Mechanism's reference configuration, where the tree compiler puts q = 0):

    r     = R_A^T (p_B - p_A)          child anchor seen from the parent joint frame (translational)
    q_rel = q_A^-1 (x) q_B              relative rotation of the joint frames (rotational)

Rows are components of r (T0..T2), of vec(q_rel) (Q0..Q2), the universal row e_z^A . e_x^B
= 2 (q1 q3 - q0 q2) of q_rel (U), or a coordinate minus its target (prescribed joints). Joint frames
follow tree/compile.py (z = axis, x = axis2), so coordinates mean what the tree method's mean:
revolute angle = 2 atan2(q3, q0) of q_rel (unwrapped), prismatic slide = r_z, cylindrical (angle,
r_z), planar (r_x, r_y, angle), universal (a, b) with R(q_rel) = Rz(a) Rx(b) (the tree's ROT_Z then
ROT_X). Columns of every Jacobian are (x_A, phi_A, x_B, phi_B): world translation and body-axes
rotation phi (q -> q (x) [1; phi/2]) of the parent and child bodies.
A parent 'world' is body index B (one past the last body), whose columns are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import lie
from ..curves import evaluate
from ..model import WORLD, Curve, Mechanism, MechanismError
from ..tree.compile import _joint_rotation
from .bodies import lmat, qconj, qmul, rmat

T0, T1, T2, Q0, Q1, Q2, U, ANGLE, UZ, UX = range(10)
ANGLES = (ANGLE, UZ, UX)  # coordinate kinds that are angles (unwrapped across +-pi by windings)

ROWS: dict[str, tuple[int, ...]] = {
    "revolute": (T0, T1, T2, Q0, Q1),
    "prismatic": (T0, T1, Q0, Q1, Q2),
    "cylindrical": (T0, T1, Q0, Q1),
    "universal": (T0, T1, T2, U),
    "planar": (T2, Q0, Q1),
    "ball": (T0, T1, T2),
    "fixed": (T0, T1, T2, Q0, Q1, Q2),
    "free": (),
}
COORDINATES: dict[str, tuple[int, ...]] = {
    "revolute": (ANGLE,),
    "prismatic": (T2,),
    "cylindrical": (ANGLE, T2),
    "planar": (T0, T1, ANGLE),
    "universal": (UZ, UX),
}


@dataclass(frozen=True)
class JointSet:
    """Joint frames and row/coordinate tables.

    parent, child (J,) body indices (parent B = world); pa, pb (J, 3) anchors from each body's centre
    of mass in body axes (world anchor for the world); ca, cb (J, 4) joint-frame quaternions in body axes.
    Rows (R,): row_joint, row_kind, row_curve (index into curves or -1: target 0). frame_a, frame_b: the
    rotation matrices of ca, cb (kept for `frames`).
    Coordinates (C,): coord_joint, coord_kind, coord_name, stiffness, rest, damping, gain, target
    velocity, torque (curve index or -1), lower, upper.
    """

    names: tuple[str, ...]
    parent: np.ndarray
    child: np.ndarray
    pa: np.ndarray
    pb: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    row_joint: np.ndarray
    row_kind: np.ndarray
    row_curve: np.ndarray
    coord_joint: np.ndarray
    coord_kind: np.ndarray
    coord_names: tuple[str, ...]
    stiffness: np.ndarray
    rest: np.ndarray
    damping: np.ndarray
    gain: np.ndarray
    target_velocity: np.ndarray
    torque: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    curves: tuple[Curve, ...]
    frame_a: np.ndarray  # (J, 3, 3) rotation matrices of ca
    frame_b: np.ndarray  # (J, 3, 3) rotation matrices of cb

    @property
    def count(self) -> int:
        return len(self.parent)


def _unsupported(mech: Mechanism, joint, what: str) -> MechanismError:
    return MechanismError(f"{mech.source}: [[joint]] {joint.name!r}: field {what!r} is not supported on a "
                          f"{joint.type} joint by the maximal method (no single joint coordinate to act on)")


def joint_set(mech: Mechanism) -> JointSet:
    """Joint frames and rows of `mech` (joint frames as in tree/compile.py). Raises MechanismError."""
    index = {b.name: i for i, b in enumerate(mech.bodies)}
    world = len(mech.bodies)
    ref = {b.name: lie.pose_matrix(np.array(b.position), lie.quat_to_matrix(np.array(b.orientation)))
           for b in mech.bodies}
    com = {b.name: np.array(b.com, dtype=float) for b in mech.bodies}
    t = {k: [] for k in ("parent", "child", "pa", "pb", "ca", "cb", "rj", "rk", "rc", "cj", "ck", "cn",
                         "k", "rest", "d", "gain", "tv", "tq", "lo", "up")}
    curves: list[Curve] = []
    for ji, joint in enumerate(mech.joints):
        joint_ref = lie.pose_matrix(np.array(joint.anchor), _joint_rotation(joint))
        sides = []
        for name in (joint.parent, joint.child):
            if name == WORLD:
                frame, offset = joint_ref, np.zeros(3)
            else:
                frame, offset = lie.inverse_pose(ref[name]) @ joint_ref, com[name]
            sides.append((frame[:3, 3] - offset, lie.matrix_to_quat(frame[:3, :3])))
        t["parent"].append(world if joint.parent == WORLD else index[joint.parent])
        t["child"].append(index[joint.child])
        t["pa"].append(sides[0][0])
        t["ca"].append(sides[0][1])
        t["pb"].append(sides[1][0])
        t["cb"].append(sides[1][1])
        coords = COORDINATES.get(joint.type, ())
        if not coords:
            for field, value in (("stiffness", joint.stiffness), ("damping", joint.damping), ("motor", joint.motor),
                                 ("lower", joint.lower), ("upper", joint.upper), ("prescribed", joint.prescribed)):
                if value:
                    raise _unsupported(mech, joint, field)
        for kind in ROWS[joint.type]:
            t["rj"].append(ji)
            t["rk"].append(kind)
            t["rc"].append(-1)
        if joint.prescribed is not None:
            if len(coords) != 1:
                raise MechanismError(f"{mech.source}: [[joint]] {joint.name!r}: field 'prescribed' needs a "
                                     f"one-coordinate joint, but a {joint.type} joint has {len(coords) or 'no'}")
            t["rj"].append(ji)
            t["rk"].append(coords[0])
            t["rc"].append(len(curves))
            curves.append(joint.prescribed)
        for d, kind in enumerate(coords):
            t["cj"].append(ji)
            t["ck"].append(kind)
            t["cn"].append(f"{joint.name}.{d}" if len(coords) > 1 else joint.name)
            t["k"].append(joint.stiffness)
            t["rest"].append(joint.rest[d] if joint.rest else 0.0)
            t["d"].append(joint.damping)
            motor = joint.motor
            velocity = motor is not None and motor.mode == "velocity"
            t["gain"].append(motor.gain if velocity else 0.0)
            t["tv"].append(motor.target_velocity if velocity else 0.0)
            if motor is not None and motor.mode == "torque" and motor.torque is not None:
                t["tq"].append(len(curves))
                curves.append(motor.torque)
            else:
                t["tq"].append(-1)
            t["lo"].append(joint.lower[d] if joint.lower else -np.inf)
            t["up"].append(joint.upper[d] if joint.upper else np.inf)

    def arr(key, dtype=float, shape=None):
        a = np.array(t[key], dtype=dtype)
        return a.reshape(shape) if shape is not None else a

    return JointSet(
        names=tuple(j.name for j in mech.joints), parent=arr("parent", np.int64), child=arr("child", np.int64),
        pa=arr("pa", shape=(-1, 3)), pb=arr("pb", shape=(-1, 3)), ca=arr("ca", shape=(-1, 4)),
        cb=arr("cb", shape=(-1, 4)), row_joint=arr("rj", np.int64), row_kind=arr("rk", np.int64),
        row_curve=arr("rc", np.int64), coord_joint=arr("cj", np.int64), coord_kind=arr("ck", np.int64),
        coord_names=tuple(t["cn"]), stiffness=arr("k"), rest=arr("rest"), damping=arr("d"), gain=arr("gain"),
        target_velocity=arr("tv"), torque=arr("tq", np.int64), lower=arr("lo"), upper=arr("up"),
        curves=tuple(curves), frame_a=lie.quat_to_matrix(arr("ca", shape=(-1, 4))),
        frame_b=lie.quat_to_matrix(arr("cb", shape=(-1, 4))))


@dataclass(frozen=True)
class JointFrames:
    """r (J, 3), q_rel (J, 4) and their Jacobians (J, 3, 12), (J, 4, 12) at one configuration."""

    r: np.ndarray
    dr: np.ndarray
    qrel: np.ndarray
    dqrel: np.ndarray


def frames(js: JointSet, x: np.ndarray, q: np.ndarray) -> JointFrames:
    """Evaluate both generic functions for every joint. x (B, 3), q (B, 4): the world is appended."""
    return frames_of(js.parent, js.child, js.pa, js.pb, js.ca, js.cb, x, q, (js.frame_a, js.frame_b))


def frames_of(parent: np.ndarray, child: np.ndarray, pa: np.ndarray, pb: np.ndarray, ca: np.ndarray,
              cb: np.ndarray, x: np.ndarray, q: np.ndarray,
              frame_matrices: tuple[np.ndarray, np.ndarray] | None = None) -> JointFrames:
    """`frames` for any set of frame pairs (parent/child body indices, anchors, frame quaternions).

    Vectorised over the pairs without stacked 3x3 products: with q_A = q_a (x) c_a, m = q_A^-1 (x) q_b
    and q_rel = m (x) c_b, the rotation blocks are C_A^T R_a^T = R(q_A)^T and C_A^T R_a^T R_b = R(m);
    a row i of M [p]x is M_i x p; and column k of R(q_rel)[:, 1:] C_A^T (L(q_rel)[:, 1:] C_B^T) is the
    quaternion product [0; row k of C_A] (x) q_rel (q_rel (x) [0; row k of C_B]). `frame_matrices`:
    (C_A, C_B) when the caller keeps them.
    """
    xe = np.vstack([x, np.zeros((1, 3))])
    qe = np.vstack([q, [[1.0, 0.0, 0.0, 0.0]]])
    Re = lie.quat_to_matrix(qe)
    xa, xb, qa, qb, Ra, Rb = xe[parent], xe[child], qe[parent], qe[child], Re[parent], Re[child]
    Ca, Cb = frame_matrices if frame_matrices is not None else (lie.quat_to_matrix(ca), lie.quat_to_matrix(cb))
    d = xb + np.einsum("jik,jk->ji", Rb, pb) - xa - np.einsum("jik,jk->ji", Ra, pa)
    u = np.einsum("jki,jk->ji", Ra, d)
    r = np.einsum("jki,jk->ji", Ca, u)
    qA = qmul(qa, ca)
    m = qmul(qconj(qA), qb)
    qrel = qmul(m, cb)
    CR = np.swapaxes(lie.quat_to_matrix(qA), 1, 2)
    n = len(parent)
    dr = np.empty((n, 3, 12))
    dr[:, :, 0:3] = -CR
    dr[:, :, 3:6] = lie.cross(np.swapaxes(Ca, 1, 2), (u + pa)[:, None, :])
    dr[:, :, 6:9] = CR
    dr[:, :, 9:12] = -lie.cross(lie.quat_to_matrix(m), pb[:, None, :])
    pure = np.zeros((n, 3, 4))
    dq = np.zeros((n, 4, 12))
    pure[:, :, 1:] = Ca
    dq[:, :, 3:6] = -0.5 * np.swapaxes(qmul(pure, qrel[:, None, :]), 1, 2)
    pure[:, :, 1:] = Cb
    dq[:, :, 9:12] = 0.5 * np.swapaxes(qmul(qrel[:, None, :], pure), 1, 2)
    return JointFrames(r, dr, qrel, dq)


def generic_rows(fr: JointFrames, joint: np.ndarray, kind: np.ndarray,
                 winding: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Values (n,) and Jacobians (n, 12) of rows/coordinates `kind` on joints `joint` (ANGLE + winding)."""
    n = len(joint)
    val = np.empty(n)
    jac = np.empty((n, 12))
    t = kind <= T2
    val[t] = fr.r[joint[t], kind[t]]
    jac[t] = fr.dr[joint[t], kind[t]]
    qv = (kind >= Q0) & (kind <= Q2)
    val[qv] = fr.qrel[joint[qv], kind[qv] - Q0 + 1]
    jac[qv] = fr.dqrel[joint[qv], kind[qv] - Q0 + 1]
    for which, grad_of in ((kind == U, _universal_grad), (kind == ANGLE, _angle_grad),
                           (kind == UZ, _universal_first_grad), (kind == UX, _universal_second_grad)):
        if np.any(which):
            qr = fr.qrel[joint[which]]
            v, g = grad_of(qr)
            val[which] = v
            jac[which] = np.einsum("ni,nik->nk", g, fr.dqrel[joint[which]])
    if winding is not None:
        val[np.isin(kind, ANGLES)] += winding
    return val, jac


def _universal_grad(qr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, x, y, z = qr.T
    return 2.0 * (x * z - w * y), np.stack([-2.0 * y, 2.0 * z, -2.0 * w, 2.0 * x], axis=1)


def _angle_grad(qr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, z = qr[:, 0], qr[:, 3]
    n2 = w * w + z * z
    zero = np.zeros_like(w)
    return 2.0 * np.arctan2(z, w), np.stack([-2.0 * z / n2, zero, zero, 2.0 * w / n2], axis=1)


def _atan2_grad(s: np.ndarray, c: np.ndarray, ds: np.ndarray, dc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """atan2(s, c) and its gradient from the gradients ds, dc (n, 4) of s and c in q_rel."""
    n2 = s * s + c * c
    return np.arctan2(s, c), (c[:, None] * ds - s[:, None] * dc) / n2[:, None]


def _universal_first_grad(qr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The universal joint's first angle (about the parent frame's z) of R(q_rel) = Rz(a) Rx(b):
    a = atan2(R10, R00), R10 = 2(xy + wz), R00 = 1 - 2(y^2 + z^2)."""
    w, x, y, z = qr.T
    zero = np.zeros_like(w)
    return _atan2_grad(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z),
                       2.0 * np.stack([z, y, x, w], axis=1), -4.0 * np.stack([zero, zero, y, z], axis=1))


def _universal_second_grad(qr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The second angle (about the child frame's x): b = atan2(R21, R22), R21 = 2(yz + wx),
    R22 = 1 - 2(x^2 + y^2)."""
    w, x, y, z = qr.T
    zero = np.zeros_like(w)
    return _atan2_grad(2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y),
                       2.0 * np.stack([x, w, z, y], axis=1), -4.0 * np.stack([zero, x, y, zero], axis=1))


def unwrap(raw_angle: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Winding (multiples of 2 pi) that brings raw ANGLE values nearest to `previous` values."""
    return 2.0 * np.pi * np.round((previous - raw_angle) / (2.0 * np.pi))


def row_targets(js: JointSet, t: float) -> np.ndarray:
    """Target value of every constraint row at time t (prescribed coordinates; 0 elsewhere)."""
    out = np.zeros(len(js.row_joint))
    for r in np.nonzero(js.row_curve >= 0)[0]:
        out[r] = evaluate(js.curves[js.row_curve[r]], t)
    return out


def keyed_torques(js: JointSet, t: float) -> np.ndarray:
    """Keyed motor torques/forces (C,) on the joint coordinates at time t."""
    out = np.zeros(len(js.coord_joint))
    for c in np.nonzero(js.torque >= 0)[0]:
        out[c] = evaluate(js.curves[js.torque[c]], t)
    return out

"""Joint constraints of the maximal-coordinate method: generic translational and rotational rows and
joint coordinates, with exact Jacobians in (x, phi) of the two bodies.

Seed 003 §3.3: every joint type is built from two generic functions of the two
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
from ..reference_frames import body_pose, joint_pose
from .bodies import lmat, qconj, qmul

T0, T1, T2, Q0, Q1, Q2, U, ANGLE, UZ, UX, ROT0, ROT1, ROT2, CAY0, CAY1, CAY2 = range(16)
ANGLES = (ANGLE, UZ, UX)  # coordinate kinds that are angles (unwrapped across +-pi by windings)
ROTATION_VECTOR = (ROT0, ROT1, ROT2)  # log(q_rel): the rotation spring of ball and free joints
CAYLEY_STEP = (CAY0, CAY1, CAY2)  # 2 vec(p) / p_0, p = q_ref^-1 (x) q_rel: the rotation damper's increment


def of_kinds(kind: np.ndarray, group: tuple[int, ...]) -> np.ndarray:
    """Mask of `kind` entries in `group` (a run of consecutive kinds; cheaper than np.isin)."""
    return (kind >= group[0]) & (kind <= group[-1])

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
    velocity, torque (curve index or -1), lower, upper; only of joints with something acting on them.
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


def _rotation_coordinates(joint, cb: np.ndarray) -> tuple[tuple[int, ...], tuple[float, ...], np.ndarray]:
    """Coordinates of a ball or free joint, their rests, and the child joint frame cb they read.

    Translation (free joints, with a spring or damper): T0..T2, the tree's TRANS_X..Z, rests rest[0:3].
    Rotation spring (stiffness or rest): V = k/2 |theta|^2, theta = log(R_rest^T R_rel), R_rest =
    exp(hat(rest)) (a rotation vector in the joint frame, as the ball's q0). The rest is folded
    into the child joint frame (cb -> cb (x) q_rest^-1, which ball and free rows do not read): then
    q_rel = q_rest^-1-conjugate of the spring's rotation, |theta| is unchanged, and the ROT coordinates
    have rest 0. Rotation damper: the CAY coordinates, the Cayley vector of the rotation from the chart
    centre q_ref (the knot), so that the damper acts on the relative angular velocity as the tree's
    chart damping does (lie_rows.py)."""
    translation = joint.type == "free"
    rest = tuple(joint.rest) if joint.rest else (0.0,) * joint.ndof
    coords: tuple[int, ...] = ()
    rests: tuple[float, ...] = ()
    if translation and (joint.stiffness or joint.damping):
        coords, rests = (T0, T1, T2), rest[:3]
    angles = rest[3:] if translation else rest
    if joint.stiffness or any(angles):
        coords, rests = coords + ROTATION_VECTOR, rests + (0.0,) * 3
        q_rest = lie.matrix_to_quat(lie.rotvec_to_matrix(np.array(angles, dtype=float)))
        cb = qmul(cb, qconj(q_rest))
    if joint.damping:
        coords, rests = coords + CAYLEY_STEP, rests + (0.0,) * 3
    return coords, rests, cb


def _unsupported(mech: Mechanism, joint, what: str) -> MechanismError:
    return MechanismError(f"{mech.source}: [[joint]] {joint.name!r}: field {what!r} is not supported on a "
                          f"{joint.type} joint by the maximal method (no single joint coordinate to act on)")


def joint_set(mech: Mechanism) -> JointSet:
    """Joint frames and rows of `mech` (joint frames as in tree/compile.py). Raises MechanismError."""
    index = {b.name: i for i, b in enumerate(mech.bodies)}
    world = len(mech.bodies)
    ref = {b.name: body_pose(b) for b in mech.bodies}
    com = {b.name: np.array(b.com, dtype=float) for b in mech.bodies}
    t = {k: [] for k in ("parent", "child", "pa", "pb", "ca", "cb", "rj", "rk", "rc", "cj", "ck", "cn",
                         "k", "rest", "d", "gain", "tv", "tq", "lo", "up")}
    curves: list[Curve] = []
    for ji, joint in enumerate(mech.joints):
        joint_ref = joint_pose(joint)
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
        kinds = COORDINATES.get(joint.type, ())
        if not kinds:
            for field, value in (("motor", joint.motor), ("lower", joint.lower), ("upper", joint.upper),
                                 ("prescribed", joint.prescribed)):
                if value:
                    raise _unsupported(mech, joint, field)
        if joint.type in ("ball", "free"):
            coords, rests, cb = _rotation_coordinates(joint, sides[1][1])
            t["cb"][-1] = cb
        elif any((joint.stiffness, joint.damping, joint.motor, joint.lower, joint.upper)):
            coords, rests = kinds, joint.rest or (0.0,) * len(kinds)
        else:
            coords, rests = (), ()  # nothing acts on them: not evaluated at all
        for kind in ROWS[joint.type]:
            t["rj"].append(ji)
            t["rk"].append(kind)
            t["rc"].append(-1)
        if joint.prescribed is not None:
            if len(kinds) != 1:
                raise MechanismError(f"{mech.source}: [[joint]] {joint.name!r}: field 'prescribed' needs a "
                                     f"one-coordinate joint, but a {joint.type} joint has {len(kinds) or 'no'}")
            t["rj"].append(ji)
            t["rk"].append(kinds[0])
            t["rc"].append(len(curves))
            curves.append(joint.prescribed)
        for d, kind in enumerate(coords):
            t["cj"].append(ji)
            t["ck"].append(kind)
            t["cn"].append(f"{joint.name}.{d}" if len(coords) > 1 else joint.name)
            t["k"].append(0.0 if kind in CAYLEY_STEP else joint.stiffness)
            t["rest"].append(rests[d])
            t["d"].append(0.0 if kind in ROTATION_VECTOR else joint.damping)
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


def generic_rows(fr: JointFrames, joint: np.ndarray, kind: np.ndarray, winding: np.ndarray | None = None,
                 reference: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Values (n,) and Jacobians (n, 12) of rows/coordinates `kind` on joints `joint` (ANGLES + winding).
    reference (J, 4): the q_rel that CAYLEY_STEP coordinates start from (default: fr.qrel, value 0)."""
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
    for group, grad_of in ((ROTATION_VECTOR, _rotation_vector_grad), (CAYLEY_STEP, _cayley_grad)):
        which = of_kinds(kind, group)
        if np.any(which):
            j = joint[which]
            qr, dq = fr.qrel[j], fr.dqrel[j]
            if group is CAYLEY_STEP:  # the rotation from the chart centre: p = start^-1 (x) q_rel
                to_start = qconj((fr.qrel if reference is None else reference)[j])
                qr, dq = qmul(to_start, qr), lmat(to_start) @ dq
            v, g = grad_of(qr)
            component = kind[which] - group[0]
            rows = np.arange(len(j))
            val[which] = v[rows, component]
            jac[which] = np.einsum("ni,nik->nk", g[rows, component], dq)
    if winding is not None:
        val[of_kinds(kind, ANGLES)] += winding
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


def _rotation_vector_grad(qr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta = log(q) = f v (n, 3), f = 2 atan2(|v|, w) / |v|, of q = (w, v) taken with w >= 0, and
    d theta / dq (n, 3, 4): [v df/dw, f I + g v v^T] with df/dw = -2 / (w^2 + |v|^2) and
    g = (df/d|v|) / |v|, both f and g by their series below |v| = 1e-4 (where the closed forms cancel)."""
    sign = np.where(qr[:, 0] < 0.0, -1.0, 1.0)
    w, v = sign * qr[:, 0], sign[:, None] * qr[:, 1:]
    s = np.linalg.norm(v, axis=1)
    n2 = s * s + w * w
    angle = np.arctan2(s, w)
    small = s < 1e-4
    safe = np.where(small, 1.0, s)
    f = np.where(small, 2.0 / w * (1.0 - s * s / (3.0 * w * w)), 2.0 * angle / safe)
    g = np.where(small, -4.0 / (3.0 * w**3) + 1.6 * s * s / w**5, 2.0 / safe**3 * (w * s / n2 - angle))
    grad = np.empty((len(qr), 3, 4))
    grad[:, :, 0] = v * (-2.0 / n2)[:, None]
    grad[:, :, 1:] = f[:, None, None] * np.eye(3) + g[:, None, None] * v[:, :, None] * v[:, None, :]
    return f[:, None] * v, grad * sign[:, None, None]


def _cayley_grad(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """c = 2 v / w of p = (w, v) (n, 3) and dc/dp (n, 3, 4) = [-2 v / w^2, 2 I / w]."""
    w, v = p[:, 0], p[:, 1:]
    grad = np.empty((len(p), 3, 4))
    grad[:, :, 0] = -2.0 * v / (w * w)[:, None]
    grad[:, :, 1:] = (2.0 / w)[:, None, None] * np.eye(3)
    return 2.0 * v / w[:, None], grad


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

"""CasADi SX model of a mechanism shot (the tree DMOC of shots/mechanism_shots.py), for IPOPT in benchmarks.shots.

Written a second time from the model's numbers (TreeModel: primitive placements and kinds, body offsets,
masses, centres of mass, inertias, gravity, point forces, springs, dampers, servos, loop rows), not by
calling our numpy code: the frame tree composed from its primitives (rotation about, or translation along,
a local axis), the Lagrangian L(q, v) = T - V with the velocities d(com)/dt and d(R)/dt as CasADi's
directional derivatives of the positions (so not the twist recursion of tree/), the midpoint discrete
Lagrangian Ld(q1, q2) = dt L((q1 + q2)/2, (q2 - q1)/dt) and its slot derivatives D1 Ld, D2 Ld by CasADi's
gradient, the loop rows h(q) and Dh = dh/dq by CasADi's jacobian. The rows, in the order of
TreeTranscription.blocks (DEL, loop, rest) then the keys of mechanism_shots._key_values:
  k = 0:      p0 + D1Ld(q0, q1) + fd_0 + B u_0 - Dh(q0)^T lam_0 = 0            (p0 = dL/dv at the start)
  0 < k < N:  D2Ld(q_k-1, q_k) + fd_k-1 + B u_k-1 + D1Ld(q_k, q_k+1) + fd_k + B u_k - Dh(q_k)^T lam_k = 0
  h(q_k) = 0 for k = 1..N;  at rest: D2Ld(q_N-1, q_N) + fd_N-1 + B u_N-1 - Dh(q_N)^T mu = 0
with B u = dt/2 u on the driven coordinates and fd = dt/2 (-damping v + gain (servo velocity - v) + keyed
torque). The costs are the shot's effort sum dt |u / bound|^2 and joint-speed cost speed / dt sum |q_k+1 - q_k|^2,
the bounds the joint limits and torque bounds. CasADi differentiates all of it (exact Hessian for IPOPT).
Only data is taken from our code: the assembled start (q0, qd0), the kept loop rows, and the input curves'
values at the interval midpoints (keyed torques, force scales).
"""

from __future__ import annotations

import numpy as np

from addon.solver.curves import evaluate
from addon.solver.shots.tree_dynamics import TreeTranscription
from addon.solver.tree.compile import ROT_Z, TreeModel


def _motion(ca, kind: int, q):
    """The primitive's 4x4 motion: rotation by q about local axis kind (0..2) or translation by q along kind - 3."""
    T = ca.SX.eye(4)
    axis = kind % 3
    if kind <= ROT_Z:
        i, j = (axis + 1) % 3, (axis + 2) % 3
        c, s = ca.cos(q), ca.sin(q)
        T[i, i], T[j, j], T[j, i], T[i, j] = c, c, s, -s
    else:
        T[axis, 3] = q
    return T


def frames(ca, model: TreeModel, q) -> list:
    """World poses (4x4 SX) of the nq frames at q, then the world itself (index -1 = nq)."""
    world = [None] * model.nq + [ca.SX.eye(4)]
    for f in range(model.nq):
        world[f] = world[model.dof_parent[f]] @ ca.DM(model.dof_placement[f]) @ _motion(ca, int(model.dof_kind[f]), q[f])
    return world


def body_pose(ca, model: TreeModel, world: list, b: int):
    """(R 3x3, origin 3) of body b."""
    M = world[model.body_frame[b]] @ ca.DM(model.body_offset[b])
    return M[:3, :3], M[:3, 3]


def lagrangian(ca, model: TreeModel):
    """The Function L(q, v, scale) = T - V; scale (nf,): the point forces' scales at that time."""
    q, v = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nq)
    scale = ca.SX.sym("scale", len(model.force_frame))
    world = frames(ca, model, q)
    g = ca.DM(np.asarray(model.gravity, float))
    poses = [body_pose(ca, model, world, b) for b in range(len(model.body_mass))]
    coms = [origin + R @ ca.DM(model.body_com[b]) for b, (R, origin) in enumerate(poses)]
    # every body's com and rotation differentiated along v in one forward sweep
    moving = ca.vertcat(*[ca.vertcat(com, ca.vec(R)) for com, (R, _) in zip(coms, poses)])
    rates = ca.vertsplit(ca.jtimes(moving, q, v), 12) if moving.shape[0] else []
    T, V = 0, 0
    for b, ((R, _), com, rate) in enumerate(zip(poses, coms, rates)):
        com_dot, R_dot = rate[:3], ca.reshape(rate[3:], 3, 3)
        W = R.T @ R_dot  # hat(omega in body axes)
        omega = ca.vertcat(W[2, 1], W[0, 2], W[1, 0])
        m = float(model.body_mass[b])
        T += 0.5 * m * ca.dot(com_dot, com_dot) + 0.5 * ca.dot(omega, ca.DM(model.body_inertia[b]) @ omega)
        V -= m * ca.dot(g, com)
    for i, f in enumerate(model.force_frame):
        M = world[f]
        point = M[:3, :3] @ ca.DM(model.force_point[i]) + M[:3, 3]
        V -= scale[i] * ca.dot(ca.DM(model.force_vector[i]), point)
    stretch = q - ca.DM(model.dof_rest)
    V += 0.5 * ca.dot(ca.DM(model.dof_stiffness) * stretch, stretch)
    return ca.Function("L", [q, v, scale], [T - V])


def loop_rows(ca, model: TreeModel, q, rows: np.ndarray):
    """h(q) of the kept loop rows: n . (a + p_P - p_C) (translation) or a . b (rotation), n, a fixed in P, b in C."""
    world = frames(ca, model, q)
    out = []
    for r in rows:
        Wp, Wc = world[model.row_frame_p[r]], world[model.row_frame_c[r]]
        a = Wp[:3, :3] @ ca.DM(model.row_a[r])
        b = Wc[:3, :3] @ ca.DM(model.row_b[r])
        if model.row_kind[r] == 0:
            n = Wp[:3, :3] @ ca.DM(model.row_n[r])
            out.append(ca.dot(n, a + Wp[:3, 3] - b - Wc[:3, 3]))
        else:
            out.append(ca.dot(a, b))
    return ca.vertcat(*out) if out else ca.SX(0, 1)


def _curve_at(curves, t: float, default: float) -> np.ndarray:
    return np.array([default if c is None else evaluate(c, t) for c in curves])


def tree_functions(ca, tx: TreeTranscription):
    """CasADi Functions slots(q1, q2, scale) -> (D1 Ld, D2 Ld), momentum(q, v) -> dL/dv, loops(q) -> (h, Dh)."""
    model, dt, nq = tx.model, tx.dt, tx.nq
    q1, q2, q, v = (ca.SX.sym(name, nq) for name in ("q1", "q2", "q", "v"))
    scale = ca.SX.sym("scale", len(model.force_frame))
    L = lagrangian(ca, model)
    Ld = dt * L(0.5 * (q1 + q2), (q2 - q1) / dt, scale)
    slots = ca.Function("slots", [q1, q2, scale], [ca.gradient(Ld, q1), ca.gradient(Ld, q2)])
    momentum = ca.Function("momentum", [q, v, scale], [ca.gradient(L(q, v, scale), v)])
    h = loop_rows(ca, model, q, tx.rows)
    loops = ca.Function("loops", [q], [h, ca.jacobian(h, q)])
    return slots, momentum, loops


def tree_rows(ca, tx: TreeTranscription, x):
    """The DEL, loop and rest rows of TreeTranscription.blocks as SX expressions of the unknowns x (tx.n)."""
    model, dt, N, nq, nr = tx.model, tx.dt, tx.steps, tx.nq, tx.nr
    slots, momentum, loops = tree_functions(ca, tx)
    Q = [ca.DM(tx.q0)] + [x[tx.q_slice(k)] for k in range(1, N + 1)]
    B = np.zeros((nq, tx.nu))
    B[tx.actuated, np.arange(tx.nu)] = 0.5 * dt
    damping = model.dof_damping + model.dof_motor_gain
    left, right = [], []  # per interval: D1 Ld + fd + B u, D2 Ld + fd + B u
    for k in range(N):
        tm = (k + 0.5) * dt
        D1, D2 = slots(Q[k], Q[k + 1], _curve_at(model.force_scale, tm, 1.0))
        fd = 0.5 * dt * (-ca.DM(damping) * (Q[k + 1] - Q[k]) / dt
                         + ca.DM(model.dof_motor_gain * model.dof_motor_velocity + _curve_at(model.dof_torque, tm, 0.0)))
        push = fd + ca.DM(B) @ x[tx.u_slice(k)]
        left.append(D1 + push)
        right.append(D2 + push)
    dels, holds = [], []
    for k in range(N):
        row = left[k] + (momentum(ca.DM(tx.q0), ca.DM(tx.qd0), _curve_at(model.force_scale, 0.0, 1.0))
                         if k == 0 else right[k - 1])
        if nr:
            row -= loops(Q[k])[1].T @ x[tx.lam_slice(k)]
            holds.append(loops(Q[k + 1])[0])
        dels.append(row)
    parts = dels + holds
    if tx.rest_at_end:
        rest = right[-1]
        if nr:
            rest -= loops(Q[N])[1].T @ x[tx.mu_slice]
        parts.append(rest)
    return ca.vertcat(*parts)


def _key_point(ca, model: TreeModel, key):
    """The Function q -> the keyed point of key.body (world) minus its target."""
    q = ca.SX.sym("q", model.nq)
    R, origin = body_pose(ca, model, frames(ca, model, q), model.body_names.index(key.body))
    point = origin + R @ ca.DM(np.asarray(key.point, float)) - ca.DM(np.asarray(key.position, float))
    return ca.Function("key", [q], [point])


def mechanism_problem(ca, P):
    """(nlp dict, lbg, ubg, lbx, ubx) of mechanism_shots._Problem P: rows, keys, costs and bounds, one SX graph
    (the per-interval and key functions inlined)."""
    tx, shot, model = P.tx, P.shot, P.model
    N = tx.steps
    x = ca.SX.sym("x", tx.n)
    Q = [ca.DM(tx.q0)] + [x[tx.q_slice(k)] for k in range(1, N + 1)]
    keys = []
    for key, axes in P.key_rows:
        q = Q[key.frame]
        if key.coordinate is not None:
            keys.append(q[model.coordinate_names.index(key.coordinate)] - key.value)
            continue
        point = _key_point(ca, model, key)(q)
        keys.extend(point[int(i)] for i in axes)
    g = ca.vertcat(tree_rows(ca, tx, x), *keys)
    scale = np.array([max(abs(c.lower), abs(c.upper)) if np.isfinite(c.lower) and np.isfinite(c.upper) else 1.0
                      for c in shot.controls])
    f = 0
    for k in range(N):
        u = x[tx.u_slice(k)]
        f += shot.effort * tx.dt * ca.sumsqr(u / ca.DM(scale))
        if shot.speed:
            f += shot.speed / tx.dt * ca.sumsqr(Q[k + 1] - Q[k])
    lbx, ubx = np.full(tx.n, -np.inf), np.full(tx.n, np.inf)
    for k in range(N):
        lbx[tx.q_slice(k + 1)], ubx[tx.q_slice(k + 1)] = model.dof_lower, model.dof_upper
        lbx[tx.u_slice(k)] = [c.lower for c in shot.controls]
        ubx[tx.u_slice(k)] = [c.upper for c in shot.controls]
    zeros = np.zeros(g.shape[0])
    return {"x": x, "f": f, "g": g}, zeros, zeros, lbx, ubx

"""The link-wise discrete Lagrangian on trees, with its exact O(n) Newton matrix (prototype of the ball-spin fix).

Usage: python -m benchmarks.linkwise_rope [--links 200] [--dt 0.005] [--steps 100] [--radius 0.05]

The tree method's midpoint Lagrangian takes each link's midpoint rotation as the product of its ancestors' chart
midpoints, which lets an axisymmetric link's spin reach its subtree (docs/benchmarks_ball_charts.md). Here each link
k contributes its own term of its own end poses (COM c, world rotation R, mass m, inertia I about the COM in body
axes, gravity g):
  l_k = m |c2 - c1|^2 / (2 dt) + Xi^T I Xi / (2 dt) + dt/2 m g . (c1 + c2),   Xi = log(R1^T R2),
so the spin of an axisymmetric link about its axis is a Noether momentum of its own term (turning the link about
its axis at both ends, its children's world poses held, leaves every term unchanged) and reaches no other link.
The unknowns stay the tree's: a ball chart's rotation vector xi (C2 = C1 exp(xi), step_charts.py). With
w1_k, w2_k the world wrenches of l_k at the start and end poses (variation by a world twist (w, v): dc = v + w x c,
dR = hat(w) R) the DEL row of coordinate i (world axis S_i(q1), at angle 0 in chart C1) and the next momentum are
  F_i = p1_i + S_i(q1) . sum_{k in subtree(i)} w1_k,   p2_i = S_i(q2) . sum_{k in subtree(i)} w2_k.
Only w1_k moves with the unknowns, through link k's end pose, which a column j turns by the world twist
S'_j = sum_m S_m(q2) J_R(xi)[m, j] for every k below j. So, with D_k = dw1_k / d(end twist) (6 x 6) and
Dc_a = sum of D_k over the subtree of a,
  dF_i / dxi_j = S_i(q1)^T Dc_deeper(i, j) S'_j   (zero between branches),
exactly the tree form of articulated.TreeJacobian (U = S', x = Dc^T S1, R = S1, Yc = Dc S'): articulated.factor
and solve give the exact Newton step in O(n), with no curvature terms (the rows' axes are the start's).
D_k, with f1 = -m (c2 - c1) / dt + dt/2 m g, mu = I Xi / dt, w1 = (c1 x f1 - R1 J_L(Xi)^-T mu, f1),
dXi = J_L(Xi)^-1 R1^T w2 for an end turn w2 and J_L^-T = I + hat(Xi)/2 + e hat(Xi)^2,
e(t) = (1 - (t/2) cot(t/2)) / t^2:
  rotation rows:  m/dt hat(c1) (hat(c2) w2 - v2)  - R1 (dG + J_L^-T I / dt) J_L^-1 R1^T w2,
  force rows:     m/dt (hat(c2) w2 - v2),
dG = d(J_L(Xi)^-T y)/dXi at y = mu = -hat(y)/2 + e ((Xi.y) I + Xi y^T - 2 y Xi^T) + e'/t (Xi x (Xi x y)) Xi^T
(_dinv_transpose). Checked against differences in
tests/solver/tree/test_linkwise_rope.py. Every joint type is a column S(q2) and a row S(q1) the same way (a ball
or free joint's rotation in its per-step chart). Prototype scope: gravity only, no springs, dampers, motors,
keyed torques, prescribed joints, loops or limits (refused by name); numpy; steps never halved.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

from addon.solver.lie import hat
from addon.solver.tree import articulated, midpoint
from addon.solver.tree.ball_springs import so3_log
from addon.solver.tree.compile import TreeModel, compile_tree
from addon.solver.tree.kinematics import Kinematics, forward, local_transforms
from addon.solver.tree.step_charts import _outer, fold, left_jacobian, rotation_at

ROUNDOFF_STEP = 1e-13  # rad: a Newton correction this small changes no chart beyond rounding
AXIS = 2  # the rods' axis is body Z (tools.generate.pendulum_chain)
_SERIES_BELOW = 0.1


def _e_coefficients(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """e(t) of J_L^-1 = I - hat/2 + e hat^2 and e'(t) / t."""
    small = t < _SERIES_BELOW
    s = np.where(small, 1.0, t)
    t2 = t * t
    e = np.where(small, 1 / 12 + t2 / 720 + t2**2 / 30240, (1.0 - 0.5 * s / np.tan(0.5 * s)) / s**2)
    de = np.where(small, 1 / 360 + t2 / 7560 + t2**2 / 201600,
                  (-2.0 / s**3 + 0.5 / (s**2 * np.tan(0.5 * s)) + 0.25 / (s * np.sin(0.5 * s) ** 2)) / s)
    return e, de


def inverse_left_jacobian_transpose(Xi: np.ndarray) -> np.ndarray:
    """J_L(Xi)^-T (..., 3, 3) = I + hat(Xi) / 2 + e hat(Xi)^2."""
    e, _ = _e_coefficients(np.linalg.norm(Xi, axis=-1))
    X = hat(Xi)
    return np.eye(3) + 0.5 * X + e[..., None, None] * (X @ X)


def _dinv_transpose(Xi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d(J_L(Xi)^-T y)/dXi (..., 3, 3) at fixed y."""
    e, de = _e_coefficients(np.linalg.norm(Xi, axis=-1))
    xy = np.einsum("...i,...i->...", Xi, y)
    XXy = Xi * xy[..., None] - y * np.einsum("...i,...i->...", Xi, Xi)[..., None]
    return (-0.5 * hat(y) + e[..., None, None] * (xy[..., None, None] * np.eye(3) + _outer(Xi, y) - 2.0 * _outer(y, Xi))
            + de[..., None, None] * _outer(XXy, Xi))


@dataclass
class LinkwiseState:
    """After a step: q (nq,) (0 on ball coordinates), charts (nball, 3, 3), p (nq,) momenta (a ball's in its chart's
    body axes), u (nq,) the last step's unknowns (ball xi, other q2), the next step's first guess, t."""

    t: float
    q: np.ndarray
    charts: np.ndarray
    p: np.ndarray
    u: np.ndarray
    momentum: np.ndarray = field(default_factory=lambda: np.zeros(6))  # the step's D2Ld world wrench total


class LinkwiseStepper:
    """Steps of the link-wise discrete Lagrangian (module docstring) on a tree of any joints (ball and free joints in
    per-step exponential charts, the others in their coordinate), gravity only."""

    def __init__(self, model: TreeModel):
        if (np.any(model.dof_damping) or np.any(model.dof_stiffness) or np.any(model.dof_motor_gain)
                or np.any(model.ball_stiffness) or model.nrow or np.any(model.dof_prescribed)
                or any(c is not None for c in model.dof_torque)):
            raise ValueError("linkwise prototype: no springs, dampers, motors, keyed torques, prescribed joints "
                             "or loops")
        self.model = model
        k = model.ball_dofs
        self.ball = np.zeros(model.nq, dtype=bool)
        self.ball[k.ravel()] = True
        self.first_of = {int(f): b for b, f in enumerate(k[:, 0])}
        self.m = model.body_mass
        self.I = model.body_inertia

    def initial_state(self) -> LinkwiseState:
        state = midpoint.initial_state(self.model)[0]
        return LinkwiseState(state.t, state.q.copy(), state.charts, state.p.copy(), state.q.copy())

    def end(self, state: LinkwiseState, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q2, charts2) at unknowns u: C2 = C1 exp(xi) on ball charts (q2 = 0 there), q2 = u elsewhere."""
        k = self.model.ball_dofs
        q2 = np.where(self.ball, 0.0, u)
        return q2, (rotation_at(state.charts, u[k], 1.0) if len(k) else state.charts)

    def poses(self, q: np.ndarray, charts: np.ndarray) -> Kinematics:
        return forward(self.model, q, charts)

    def kinematics(self, state: LinkwiseState) -> Kinematics:
        return forward(self.model, state.q, state.charts)

    def _subtree_sum(self, per_body: np.ndarray) -> np.ndarray:
        """Sum over each frame's subtree of per-body arrays (nbody, ...) -> (nq, ...) (frames parents first)."""
        out = np.zeros((self.model.nq + 1,) + per_body.shape[1:])
        np.add.at(out, self.model.body_frame, per_body)
        for f in range(self.model.nq - 1, -1, -1):
            out[self.model.dof_parent[f]] += out[f]
        return out[:-1]

    def increments(self, state: LinkwiseState, k1: Kinematics, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each body's COM displacement c2 - c1 (nbody, 3) and rotation vector Xi = log(R1^T R2) (nbody, 3) over
        the step to unknowns u, composed down the tree as increments (E = R1^T R2 - I per frame, dx = o2 - o1),
        so that their rounding is relative to the increments, not to the mechanism's size (differences of the two
        ends' positions lose eps |c| / dt of momentum per link: 1e-5 on the top rows of a 1000-link rope)."""
        model = self.model
        nq = model.nq
        q2, charts2 = self.end(state, u)
        L1 = local_transforms(model, state.q, state.charts)
        L2 = local_transforms(model, q2, charts2)
        E = np.zeros((nq + 1, 3, 3))  # frame nq stands for the world
        dx = np.zeros((nq + 1, 3))
        W1 = k1.world_M_frame[:, :3, :3]
        for f in range(nq):
            p = model.dof_parent[f]
            dx[f] = dx[p] + W1[p] @ (E[p] @ L2[f, :3, 3] + (L2[f, :3, 3] - L1[f, :3, 3]))
            b = self.first_of.get(f)
            if b is None:  # a fixed placement or a primitive's turn: R1^T R2 - I of the local rotations
                E[f] = L1[f, :3, :3].T @ E[p] @ L2[f, :3, :3] + (L1[f, :3, :3].T @ L2[f, :3, :3] - np.eye(3))
            else:  # the chart's turn exp(xi) - I in closed form (no cancellation against I)
                Q = L1[f, :3, :3]
                X = hat(u[model.ball_dofs[b]])
                th = np.linalg.norm(u[model.ball_dofs[b]])
                a, c = (np.sin(th) / th, (1 - np.cos(th)) / th**2) if th > 1e-4 else (1 - th**2 / 6, 0.5 - th**2 / 24)
                expm1 = a * X + c * (X @ X)
                E[f] = Q.T @ E[p] @ Q @ (np.eye(3) + expm1) + expm1
        frame = model.body_frame
        off_R, off_t = model.body_offset[:, :3, :3], model.body_offset[:, :3, 3]
        r = off_t + np.einsum("bij,bj->bi", off_R, model.body_com)
        dc = dx[frame] + np.einsum("bij,bj->bi", W1[frame], np.einsum("bij,bj->bi", E[frame], r))
        Eb = np.transpose(off_R, (0, 2, 1)) @ E[frame] @ off_R
        A = 0.5 * (Eb - np.transpose(Eb, (0, 2, 1)))
        v = np.stack([A[:, 2, 1], A[:, 0, 2], A[:, 1, 0]], axis=1)
        sin = np.linalg.norm(v, axis=1)
        th = np.arctan2(sin, 1.0 + 0.5 * np.trace(Eb, axis1=1, axis2=2))
        factor = np.where(sin < 1e-8, 1.0 + th**2 / 6, th / np.where(sin < 1e-8, 1.0, sin))
        return dc, factor[:, None] * v

    def wrenches(self, k1: Kinematics, k2: Kinematics, dt: float, end: int,
                 steps: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Per-body wrenches w1 (end 1) or w2 (end 2) (nbody, 6) and the rotation vectors Xi (nbody, 3);
        steps = increments(k1, xi)."""
        R1, R2, c1, c2 = k1.body_R, k2.body_R, k1.body_com_world, k2.body_com_world
        dc, Xi = steps
        mu = np.einsum("bij,bj->bi", self.I, Xi) / dt
        gravity = 0.5 * dt * self.m[:, None] * self.model.gravity[None, :]
        if end == 1:
            f = -self.m[:, None] * dc / dt + gravity
            tau = -np.einsum("bij,bj->bi", R1, np.einsum("bij,bj->bi", inverse_left_jacobian_transpose(Xi), mu))
            c = c1
        else:
            f = self.m[:, None] * dc / dt + gravity
            JLinv = np.transpose(inverse_left_jacobian_transpose(Xi), (0, 2, 1))  # J_L^-1; J_R^-T = J_L^-1
            tau = np.einsum("bij,bj->bi", R2, np.einsum("bij,bj->bi", JLinv, mu))
            c = c2
        return np.concatenate([np.cross(c, f) + tau, f], axis=1), Xi

    def end_blocks(self, k1: Kinematics, k2: Kinematics, Xi: np.ndarray, dt: float) -> np.ndarray:
        """D_k = dw1_k / d(end twist (w2, v2)) (nbody, 6, 6)."""
        R1, c1, c2 = k1.body_R, k1.body_com_world, k2.body_com_world
        m = (self.m / dt)[:, None, None]
        C1, C2 = hat(c1), hat(c2)
        D = np.zeros((len(self.m), 6, 6))
        D[:, 3:, :3] = m * C2
        D[:, 3:, 3:] = -m * np.eye(3)
        D[:, :3, :3] = C1 @ D[:, 3:, :3]
        D[:, :3, 3:] = C1 @ D[:, 3:, 3:]
        mu = np.einsum("bij,bj->bi", self.I, Xi) / dt
        JinvT = inverse_left_jacobian_transpose(Xi)
        inner = (_dinv_transpose(Xi, mu) + JinvT @ self.I / dt) @ np.transpose(JinvT, (0, 2, 1))
        D[:, :3, :3] -= R1 @ inner @ np.transpose(R1, (0, 2, 1))
        return D

    def rows(self, state: LinkwiseState, u: np.ndarray, dt: float, k1: Kinematics
             ) -> tuple[np.ndarray, articulated.TreeJacobian, Kinematics]:
        """The residual F (nq,), its tree Jacobian and the end kinematics at unknowns u (nq,)."""
        k2 = self.poses(*self.end(state, u))
        w1, Xi = self.wrenches(k1, k2, dt, 1, self.increments(state, k1, u))
        S1 = k1.axis_world[:-1]
        F = state.p + np.einsum("ai,ai->a", S1, self._subtree_sum(w1))
        Dc = self._subtree_sum(self.end_blocks(k1, k2, Xi, dt))  # (nq, 6, 6)
        Sp = k2.axis_world[:-1].copy()  # a column's end twist: S(q2), times J_R(xi) on a chart
        k = self.model.ball_dofs
        if len(k):
            JR = np.transpose(left_jacobian(u[k]), (0, 2, 1))
            Sp[k] = np.einsum("bmk,bmj->bjk", Sp[k], JR)
        nq = self.model.nq
        U = np.concatenate([Sp, np.zeros((nq, 6))], axis=1)
        x = np.concatenate([np.einsum("aji,aj->ai", Dc, S1), np.zeros((nq, 6))], axis=1)
        R = np.concatenate([S1, np.zeros((nq, 12))], axis=1)
        DcSp = np.einsum("aij,aj->ai", Dc, Sp)
        Yc = np.concatenate([DcSp, np.zeros((nq, 12))], axis=1)
        d = np.einsum("ai,ai->a", S1, DcSp)
        blocks = np.einsum("bik,bjk->bij", S1[k], DcSp[k])
        return F, articulated.TreeJacobian(U, x, R, Yc, d, blocks), k2

    def step(self, state: LinkwiseState, dt: float, tol: float = 1e-10, max_iterations: int = 30) -> int:
        """Advance `state` in place by one step; returns the Newton iterations. Raises RuntimeError when Newton
        does not converge (no halving: the prototype shows whether the full step is taken)."""
        k1 = self.poses(state.q, state.charts)
        u = np.where(self.ball, state.u, 2.0 * state.q - state.u)  # xi repeated; q2 = q1 + (q1 - q0)
        unknown = np.ones(self.model.nq, dtype=bool)
        step_size = np.inf
        for it in range(max_iterations + 1):
            F, jac, k2 = self.rows(state, u, dt, k1)
            # converged when the rows are at tol of their largest term (p1 or D1Ld), or when Newton's last
            # correction was at round-off: on long ropes the rows' floor is the top chart's rounding (1e-16 rad)
            # times the rope's inertia about it over dt, above tol times the momenta near rest
            scale = max(1.0, float(np.max(np.abs(state.p))), float(np.max(np.abs(F - state.p))))
            if np.max(np.abs(F)) <= tol * scale or step_size <= ROUNDOFF_STEP:
                break
            if it == max_iterations or not np.all(np.isfinite(F)):
                raise RuntimeError(f"linkwise Newton did not converge at t = {state.t + dt:.6g} s: |F| "
                                   f"{np.max(np.abs(F)):.3e}")
            fac = articulated.factor(self.model, jac, unknown)
            delta = articulated.solve(self.model, fac, -F[:, None])[:, 0]
            step_size = float(np.max(np.abs(delta)))
            u = u + delta
        w2, _ = self.wrenches(k1, k2, dt, 2, self.increments(state, k1, u))
        state.momentum = w2.sum(axis=0)
        state.p = np.einsum("ai,ai->a", k2.axis_world[:-1], self._subtree_sum(w2))
        q2, _ = self.end(state, u)
        k = self.model.ball_dofs
        if len(k):
            state.charts = fold(state.charts, u[k])
        state.u = np.where(self.ball, u, state.q)  # ball: this step's xi; other: q1 (for q2 + (q2 - q1))
        state.q, state.t = q2, state.t + dt
        return it

    def energy(self, k1: Kinematics, k2: Kinematics, dt: float) -> float:
        """Kinetic energy of the step's velocities plus the mean potential of its ends."""
        Xi = so3_log(np.transpose(k1.body_R, (0, 2, 1)) @ k2.body_R)
        dc = k2.body_com_world - k1.body_com_world
        kinetic = 0.5 * (self.m @ np.einsum("bi,bi->b", dc, dc) + np.einsum("bi,bij,bj->", Xi, self.I, Xi)) / dt**2
        return float(kinetic - self.m @ (0.5 * (k1.body_com_world + k2.body_com_world)) @ self.model.gravity)


def spins(R1: np.ndarray, R2: np.ndarray, dt: float) -> np.ndarray:
    """Each link's spin rate about its own axis over a step, (nbody,)."""
    return so3_log(np.transpose(R1, (0, 2, 1)) @ R2)[:, AXIS] / dt


def main() -> None:
    from benchmarks.maximal import ball_chain

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=200)
    parser.add_argument("--dt", type=float, default=0.005)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--radius", type=float, default=0.05)
    args = parser.parse_args()
    stepper = LinkwiseStepper(compile_tree(ball_chain(args.links, args.radius)))
    state = stepper.initial_state()
    k_prev = stepper.kinematics(state)
    iterations, energies, worst = [], [], 0.0
    start = time.perf_counter()
    for _ in range(args.steps):
        iterations.append(stepper.step(state, args.dt))
        k = stepper.kinematics(state)
        energies.append(stepper.energy(k_prev, k, args.dt))
        worst = max(worst, float(np.max(np.abs(spins(k_prev.body_R, k.body_R, args.dt)))))
        k_prev = k
    wall = (time.perf_counter() - start) / args.steps
    counts = {i: int(c) for i, c in enumerate(np.bincount(iterations)) if c}
    print(f"{args.links} links, dt {args.dt}, {args.steps} steps (t = {state.t:.3f} s), every step whole: "
          f"{wall * 1e3:.1f} ms/step (numpy), Newton iterations {counts}, "
          f"largest |spin| {worst:.2e} rad/s, energy band {max(energies) - min(energies):.2e} J "
          f"(|E| {abs(energies[0]):.3g} J)")


if __name__ == "__main__":
    main()

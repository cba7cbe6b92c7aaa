"""Twist of slender ball-jointed links on ropes (tree method): growth per step and the linearised step map.

Usage: python -m benchmarks.rope_twist [--links 50] [--dt 0.005] [--steps 60] [--maximal] [--jacobian-at 20]
                                       [--pivots-at 50]

Ropes are `tools.generate.ball_chain(n)`. Each run steps `midpoint._step_once` on the numpy path (no
halving, no body-axes fallback). Measured:

* each link's own spin about its axis, e3 . log(R(t)^T R(t + dt)) / dt (R the link's world rotation): its
  largest value over the links at every step and the link (counted from the free end) that carries it;
* with --maximal, the same rope by the maximal method (per-body rotations): the largest spin over links and steps;
* the linearised step map (C, p) -> (C', p') by central differences in canonical coordinates of each chart,
  C = C0 exp(theta), pi = J_R(theta)^T p (p the chart's body momentum, J_R the right Jacobian of exp): a
  symplectic map has M^T Omega M = Omega (reported as the largest entry of the difference over the largest of
  M) and its eigenvalues in pairs lambda, 1 / conj(lambda); the largest moduli are printed with the axial share
  of their eigenvectors (the part of the configuration variation that turns links about their own axes);
* with --world-midpoint, the spins under the proposed discrete Lagrangian (WorldMidpointRope), instead;
* with --pivots-at, each link's twist pivot in the Newton matrix of the next step (twist_pivots) and how far
  its spin reaches its child's midpoint rotation in the discrete Lagrangian (midpoint_coupling).
Results and their reading: docs/benchmarks_ball_charts.md.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from addon.solver.groups import so3_exp
from addon.solver.integrator import make_integrator
from addon.solver.lie import quat_to_matrix
from addon.solver.tree import articulated, midpoint
from addon.solver.tree.ball_springs import so3_log
from addon.solver.tree.compile import TreeModel, compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward
from addon.solver.tree.step_charts import left_jacobian
from tools.generate import ball_chain

AXIS = 2  # the rods' axis is body Z (tools.generate.pendulum_chain)


def rope(n: int, radius: float = 0.05) -> tuple[TreeModel, midpoint.MidpointState]:
    """The n-link rope (rods of the given radius) and its start state."""
    model = compile_tree(ball_chain(n, radius))
    return model, midpoint.initial_state(model)[0]


def link_rotations(model: TreeModel, state: midpoint.MidpointState) -> np.ndarray:
    """World rotations (nbody, 3, 3) of the links."""
    return forward(model, state.q, state.charts).body_R


def spins(R1: np.ndarray, R2: np.ndarray, dt: float) -> np.ndarray:
    """Each link's spin rate about its own axis over a step, (nbody,)."""
    return so3_log(np.transpose(R1, (0, 2, 1)) @ R2)[:, AXIS] / dt


def spin_history(n: int, dt: float, steps: int, tol: float = 1e-10,
                 radius: float = 0.05) -> list[tuple[int, float, int, int]]:
    """(step, largest |spin| rad/s, link from the free end carrying it, Newton iterations) per step; stops at the
    first step Newton does not take whole."""
    model, state = rope(n, radius)
    R = link_rotations(model, state)
    out = []
    for k in range(1, steps + 1):
        try:
            result = midpoint._step_once(model, state, dt, tol, 30, None, False)
        except midpoint.ConvergenceError:
            out.append((k, float("nan"), -1, -1))
            break
        R2 = link_rotations(model, state)
        s = np.abs(spins(R, R2, dt))
        worst = int(np.argmax(s))
        out.append((k, float(s[worst]), n - worst, result.iterations))
        R = R2
    return out


def maximal_spins(n: int, dt: float, steps: int) -> np.ndarray:
    """The same rope by the maximal method (per-body rotations): each step's largest |spin| over the links."""
    integ = make_integrator(ball_chain(n), "maximal", dt)
    for _ in range(steps):
        integ.step()
    R = quat_to_matrix(integ.trajectory().poses[..., 3:])
    return np.abs(so3_log(np.swapaxes(R[:-1], -1, -2) @ R[1:])[..., AXIS] / dt).max(axis=1)


def advance(n: int, dt: float, steps: int) -> tuple[TreeModel, midpoint.MidpointState]:
    """The rope after `steps` numpy steps."""
    model, state = rope(n)
    for _ in range(steps):
        midpoint._step_once(model, state, dt, 1e-12, 30, None, False)
    return model, state


def _canonical_out(model: TreeModel, ref: np.ndarray, state: midpoint.MidpointState) -> np.ndarray:
    """(theta, pi) of a state's charts and momenta about reference charts `ref` (all coordinates are ball ones)."""
    theta = so3_log(np.transpose(ref, (0, 2, 1)) @ state.charts)
    p = state.p[model.ball_dofs]
    pi = np.einsum("bji,bj->bi", np.transpose(left_jacobian(theta), (0, 2, 1)), p)  # J_R^T p, J_R = J_L^T
    return np.concatenate([theta.ravel(), pi.ravel()])


def step_map_jacobian(model: TreeModel, state: midpoint.MidpointState, dt: float,
                      eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """The linearised step map M (6 nball, 6 nball) in canonical chart coordinates and the axial unit vectors
    (nball, 3) of the links in their charts' body axes. Requires a mechanism of ball joints only."""
    assert model.nq == 3 * len(model.ball_dofs), "ball joints only"
    nb = len(model.ball_dofs)
    base = _copy(state)
    midpoint._step_once(model, base, dt, 1e-13, 40, None, False)
    ref = base.charts
    M = np.zeros((6 * nb, 6 * nb))
    for i in range(6 * nb):
        cols = []
        for sign in (1.0, -1.0):
            s = _copy(state)
            d = np.zeros(6 * nb)
            d[i] = sign * eps
            theta, pi = d[:3 * nb].reshape(nb, 3), d[3 * nb:].reshape(nb, 3)
            s.charts = state.charts @ so3_exp(theta)
            JR = np.transpose(left_jacobian(theta), (0, 2, 1))
            pi = state.p[model.ball_dofs] + pi  # about the unperturbed charts theta = 0, pi = p
            s.p = state.p.copy()
            s.p[model.ball_dofs] = np.linalg.solve(np.transpose(JR, (0, 2, 1)), pi[..., None])[..., 0]
            s.velocity_guess = base.velocity_guess.copy()
            midpoint._step_once(model, s, dt, 1e-13, 40, None, False)
            cols.append(_canonical_out(model, ref, s))
        M[:, i] = (cols[0] - cols[1]) / (2 * eps)
    # each link's axis in its chart's body axes: the child frame's Z through the chart (placement @ C)
    kin = forward(model, state.q, state.charts)
    first = model.ball_dofs[:, 0]
    frame_R = kin.world_M_frame[first, :3, :3]
    body_R = kin.body_R
    axes = np.einsum("bji,bj->bi", frame_R, body_R[:, :, AXIS])
    return M, axes


def twist_pivots(model: TreeModel, state: midpoint.MidpointState, dt: float) -> np.ndarray:
    """Each link's twist pivot (nball - 1,): -dt / (v^T J11^-1 v), J11 the Newton matrix of the next step at its
    solution and v the link's spin with its child held still (the link's chart turned about the link's axis, the
    child's chart turned back). On a straight rope at rest it is a positive fraction of the axial inertia; the
    discrete Legendre map q2(q1, p1) is singular where it passes through 0 (module docstring)."""
    s = _copy(state)
    q2 = state.q + dt * state.velocity_guess
    system, _ = midpoint._newton(model, s, dt, 1e-12, 30, q2, np.zeros(0), (), None)
    Jinv = np.linalg.inv(articulated.dense(model, system.jacobian))
    kin = system.kin2
    k = model.ball_dofs
    chart_R = kin.world_M_frame[k[:, 0], :3, :3]
    axis = kin.body_R[:, :, AXIS]
    out = np.zeros(len(k) - 1)
    for b in range(len(k) - 1):
        v = np.zeros(model.nq)
        v[k[b]] = chart_R[b].T @ axis[b]
        v[k[b + 1]] = -chart_R[b + 1].T @ axis[b]
        out[b] = -dt / (v @ Jinv @ v)
    return out


def midpoint_coupling(model: TreeModel, state: midpoint.MidpointState, dt: float, turn: float = 1e-6) -> np.ndarray:
    """How far each link's spin reaches its child in the discrete Lagrangian, (nball - 1,): turn link k about its
    own axis at the step's end with its child's world rotation kept (child chart turned back); the child's
    midpoint rotation C1 exp(xi / 2), composed along the chain, turns by this many rad per rad (0 for an
    equivariant midpoint of each link's own world rotation)."""
    s = _copy(state)
    midpoint._step_once(model, s, dt, 1e-12, 30, None, False)
    C1, C2 = state.charts, s.charts
    z = np.zeros(model.nq)
    first = model.ball_dofs[:, 0]

    def mid_rotations(end: np.ndarray) -> np.ndarray:
        xi = so3_log(np.transpose(C1, (0, 2, 1)) @ end)
        return forward(model, z, C1 @ so3_exp(0.5 * xi)).body_R

    Rm = mid_rotations(C2)
    kin2 = forward(model, z, C2)
    out = np.zeros(len(first) - 1)
    for k in range(len(first) - 1):
        axis = kin2.world_M_frame[first[k], :3, :3].T @ kin2.body_R[k][:, AXIS]
        end = C2.copy()
        end[k] = C2[k] @ so3_exp(turn * axis)
        placed = kin2.world_M_frame[first[k + 1], :3, :3] @ C2[k + 1].T
        moved = forward(model, z, end).world_M_frame[first[k + 1], :3, :3] @ C2[k + 1].T
        end[k + 1] = moved.T @ placed @ C2[k + 1]
        out[k] = np.linalg.norm(so3_log(Rm[k + 1].T @ mid_rotations(end)[k + 1])) / turn
    return out


class WorldMidpointRope:
    """The proposed discrete Lagrangian on a rope (docs/benchmarks_ball_charts.md), for validation only: each
    link's midpoint is the geodesic midpoint of its own world rotations, W1 exp(Xi / 2) with W2 = W1 exp(Xi),
    its body velocity Xi / dt; the tree's charts and chart velocities at that midpoint follow, and
    Ld = dt (T - V) there (dynamics.terms). The DEL in the links' world rotations is solved by Newton on
    central differences of Ld (eps 1e-5: residuals good to ~1e-10, so spins to ~1e-5 rad/s on thin rods)."""

    EPS = 1e-5

    def __init__(self, n: int, radius: float, dt: float):
        self.model, state = rope(n, radius)
        self.n, self.dt, self.z = n, dt, np.zeros(self.model.nq)
        kin = forward(self.model, self.z, state.charts)
        first = self.model.ball_dofs[:, 0]
        frame = kin.world_M_frame[first, :3, :3]
        self.W = kin.body_R.copy()
        self.body_in_chart = np.transpose(frame, (0, 2, 1)) @ self.W
        parent_W = np.concatenate([np.eye(3)[None], self.W[:-1]])  # a rope: link k hangs from link k - 1
        self.placement = np.transpose(parent_W, (0, 2, 1)) @ frame @ np.transpose(state.charts, (0, 2, 1))
        self.p = np.zeros((n, 3))  # from rest
        self.Xi = np.zeros((n, 3))
        self.Jinv: np.ndarray | None = None

    def charts_of(self, W: np.ndarray) -> np.ndarray:
        parent_W = np.concatenate([np.eye(3)[None], W[:-1]])
        return np.transpose(parent_W @ self.placement, (0, 2, 1)) @ W @ np.transpose(self.body_in_chart, (0, 2, 1))

    def lagrangian(self, W1: np.ndarray, W2: np.ndarray) -> float:
        Xi = so3_log(np.transpose(W1, (0, 2, 1)) @ W2)
        Wm = W1 @ so3_exp(0.5 * Xi)
        w = np.einsum("bij,bj->bi", Wm, Xi) / self.dt  # world angular velocities
        frame = Wm @ np.transpose(self.body_in_chart, (0, 2, 1))
        v = np.zeros(self.model.nq)
        v[self.model.ball_dofs] = np.einsum("bji,bj->bi", frame, w - np.concatenate([np.zeros((1, 3)), w[:-1]]))
        tm = terms(self.model, forward(self.model, self.z, self.charts_of(Wm)), v, 0.0, second=False)
        return self.dt * (tm.kinetic - tm.potential)

    def gradient(self, W1: np.ndarray, W2: np.ndarray, end: int) -> np.ndarray:
        """D1 Ld (end 1) or D2 Ld (end 2) in body axes of each link, (n, 3)."""
        g = np.zeros((self.n, 3))
        for b in range(self.n):
            for j in range(3):
                turned = []
                for sign in (1.0, -1.0):
                    W = (W1 if end == 1 else W2).copy()
                    W[b] = W[b] @ so3_exp(sign * self.EPS * np.eye(3)[j])
                    turned.append(self.lagrangian(W, W2) if end == 1 else self.lagrangian(W1, W))
                g[b, j] = (turned[0] - turned[1]) / (2 * self.EPS)
        return g

    def step(self) -> int:
        """One step (chord Newton, Jacobian by differences, refreshed when slow); returns the iterations."""
        def residual(x: np.ndarray) -> np.ndarray:
            return (self.p + self.gradient(self.W, self.W @ so3_exp(x.reshape(self.n, 3)), 1)).ravel()

        x = self.Xi.ravel().copy()
        r = residual(x)
        for it in range(30):
            if self.Jinv is None or it == 3:
                J = np.column_stack([(residual(x + 1e-6 * e) - r) / 1e-6 for e in np.eye(len(x))])
                self.Jinv = np.linalg.inv(J)
            x = x - self.Jinv @ r
            r = residual(x)
            if np.max(np.abs(r)) < 1e-10 * max(1.0, float(np.max(np.abs(self.p)))):
                break
        self.Xi = x.reshape(self.n, 3)
        W2 = self.W @ so3_exp(self.Xi)
        self.p = self.gradient(self.W, W2, 2)
        self.W = W2
        return it + 1


def _copy(state: midpoint.MidpointState) -> midpoint.MidpointState:
    return replace(state, q=state.q.copy(), p=state.p.copy(), charts=state.charts.copy(), lam=state.lam.copy(),
                   velocity_guess=state.velocity_guess.copy())


def symplectic_defect(M: np.ndarray) -> float:
    """max |M^T Omega M - Omega| / max |M| (0 for a symplectic map, up to the differences' error)."""
    m = len(M) // 2
    Omega = np.block([[np.zeros((m, m)), np.eye(m)], [-np.eye(m), np.zeros((m, m))]])
    return float(np.max(np.abs(M.T @ Omega @ M - Omega)) / np.max(np.abs(M)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=50)
    parser.add_argument("--dt", type=float, default=0.005)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--jacobian-at", type=int, default=-1, help="linearise the step map after this step")
    parser.add_argument("--pivots-at", type=int, default=-1, help="the links' twist pivots after this step")
    parser.add_argument("--radius", type=float, default=0.05, help="the rods' radius, m (growth runs only)")
    parser.add_argument("--world-midpoint", action="store_true",
                        help="run the proposed per-link world midpoint instead (WorldMidpointRope; slow)")
    parser.add_argument("--maximal", action="store_true", help="also the maximal method's spins on the same rope")
    args = parser.parse_args()
    if args.world_midpoint:
        wm = WorldMidpointRope(args.links, args.radius, args.dt)
        for k in range(1, args.steps + 1):
            its = wm.step()
            spin = np.abs(wm.Xi[:, AXIS]) / args.dt
            link = args.links - int(np.argmax(spin))
            print(f"world midpoint step {k:4d}  max|spin| {spin.max():9.3e} rad/s  link {link:4d} from the free end  "
                  f"iterations {its}", flush=True)
        return
    if args.maximal and args.steps:
        spin = maximal_spins(args.links, args.dt, args.steps)
        print(f"maximal method: largest |spin| over the links and steps {spin.max():.2e} rad/s")
    hist = spin_history(args.links, args.dt, args.steps, radius=args.radius)
    for k, s, link, its in hist:
        print(f"step {k:4d}  max|spin| {s:9.3e} rad/s  link {link:4d} from the free end  iterations {its}")
    good = [h[1] for h in hist if np.isfinite(h[1]) and h[1] > 0]
    if len(good) > 10:
        tail = good[len(good) // 2:]
        print(f"growth per step over the second half: x {(tail[-1] / tail[0]) ** (1 / (len(tail) - 1)):.3f}")
    if args.jacobian_at >= 0:
        model, state = advance(args.links, args.dt, args.jacobian_at)
        M, axes = step_map_jacobian(model, state, args.dt)
        nb = len(model.ball_dofs)
        lam, vec = np.linalg.eig(M)
        order = np.argsort(-np.abs(lam))
        print(f"det M = {np.linalg.det(M):.6f}, symplectic defect {symplectic_defect(M):.2e}")
        for j in order[:8]:
            theta = vec[:3 * nb, j].reshape(nb, 3)
            axial = np.abs(np.einsum("bi,bi->b", theta, axes))
            share = np.linalg.norm(axial) / max(np.linalg.norm(theta), 1e-300)
            where = args.links - int(np.argmax(axial))
            print(f"|lambda| {abs(lam[j]):.6f}  arg {np.angle(lam[j]):+.4f}  axial share {share:.3f}  "
                  f"largest at link {where} from the free end")
        print("smallest |lambda|:", " ".join(f"{abs(lam[j]):.6f}" for j in order[-4:]))
    if args.pivots_at >= 0:
        model, state = advance(args.links, args.dt, args.pivots_at)
        piv = twist_pivots(model, state, args.dt)
        print(f"twist pivots after step {args.pivots_at} (link from the free end: -dt / v.J11^-1 v, kg m^2):")
        print(" ".join(f"{args.links - b}:{x:+.5f}" for b, x in enumerate(piv)))
        reach = midpoint_coupling(model, state, args.dt)
        print("child's midpoint turn per rad of the link's spin (link from the free end):")
        print(" ".join(f"{args.links - b}:{x:.1e}" for b, x in enumerate(reach)))


if __name__ == "__main__":
    main()

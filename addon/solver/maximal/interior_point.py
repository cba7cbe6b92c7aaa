"""Inequalities of the maximal-coordinate step (contacts with friction, joint limits) as primal-dual
interior-point pairs inside the step's Newton iteration (seed 003 §3.4-3.5, eqs. (24), (26)-(29);
Appendix D is lost, notes/003.md §2.6-2.8, §3.1).

Every inequality is a pair: a function h >= 0 of the unknowns with slack s = h, and its multiplier
lam >= 0, with s lam = mu driven to zero. Per contact (detected at the knot z_1 by
collision.CollisionWorld; normal n from A to B, witness points fixed in the bodies):
  gamma  (normal force):  h = phi(z_2) ~ d_1 + dt N zdot_1, the gap at the new configuration
                          linearised about the witness points (N = n . d(p_B - p_A)/d(x, phi) at
                          z_1, p = x + R p_body), force +gamma n on B. Linear, not the body-fixed
                          point moved exactly: a rolling sphere's contact point would rise by
                          r (|w| dt)^2 / 2 per step and let the sphere sink by that much (P4).
Friction per patch (the contacts of one collider pair that can close within the step; a sphere's patch
is its one point, a box face on a plane its four corners):
  psi    (sliding speed): h = sum mu_f gamma - sum beta  (friction cone, (26b), (27b));
  beta_j (friction):      h = d_j . v_rel(zdot_1) + psi  ((27a), (27c)), force +beta_j d_j on B,
with d_j = +-t1, +-t2 a four-sided pyramid in the tangent plane and v_rel the interval velocity of B
relative to A at the mean of the patch's witness points (Jacobian at z_1, (29d)); a patch of several
points adds d = +-spin, v_rel = r n . (w_B - w_A), a torque r beta about n, r the points' mean distance
from their centroid (four corners each carrying mu gamma: the same torque mu N r). One pyramid per patch
because the points' tangential velocities have rank 3: per-point pyramids (16 rows for 4 corners) left
the sticking multipliers non-unique, and the Newton matrix reached condition ~1e21 (dominoes, issue 6).
Friction forces act through the same point Jacobians as the normal force, so their torques are
physical (the factor-2 trap of notes/003.md P3 does not arise: rotational rows here are in torque
units). Joint limits: gamma with h = theta(z_2) - lower or upper - theta(z_2) on a joint coordinate.

Positional pairs (gaps, limits) are written at the velocity level, h = phi(z_2)/dt, so that every
complementarity lam s is a power (N m/s: force times speed for gap and friction pairs, speed times
force for psi): one barrier parameter then centres all pairs alike (with h in metres the gap pairs were
held 1/dt further from the boundary than the friction pairs).

Newton on the pair (lam dh + s dlam = t - lam h, eliminating ds) gives the row
    -dh - (s/lam) dlam = h - t/lam,
which borders the joint system as auxiliary rows: force side -dh/dz at z_1, velocity side -dh/dzdot,
and a dense diagonal block coupling gamma, psi and beta of one contact. The target t comes from
Mehrotra's predictor-corrector (variational._newton solves twice with one factorisation): the affine
direction (t = 0) gives the complementarity mu_aff it would reach, sigma = (mu_aff / mu)^3, and the
corrector aims at t = max(sigma mu, MU_FLOOR) - dlam_aff ds_aff. Steps keep s and lam positive with the
fraction to the boundary tau = max(0.99, 1 - mu) and stay in the wide neighbourhood min lam s >=
1e-3 mean lam s; stalls restart (recentred, then monotone Fiacco-McCormick updates of mu).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..collision.world import CollisionWorld
from ..lie import hat, quat_to_matrix
from .forces import scatter
from .linear import RowBlocks

CENTRED = 0.5  # monotone mode: mu -> MU_DECREASE mu once every |lam s - mu| <= CENTRED mu
MU_DECREASE = 0.2
NEIGHBOURHOOD = 1e-3  # steps keep min lam s >= NEIGHBOURHOOD mean lam s (pairs collapsing to (0, 0) jam)
NEIGHBOURHOOD_HALVINGS = 30
MAX_RESTARTS = 3
RECENTRE_FLOOR = 1e-2  # lam and s (N or m/s) are raised to at least this by a recentring restart
TAU_MIN = 0.99  # fraction to the boundary max(TAU_MIN, 1 - mu), at most TAU_MAX
TAU_MAX = 1.0 - 1e-8  # 1 - mu rounds to 1 for mu < 1e-16: a pair would land on the boundary (s/lam = 0)
CLOSE_MARGIN = 1e-3  # m: contacts predicted further apart than this after the step get no friction rows
COLD_MU = 1.0  # lam * s (W) of a cold start
WARM_SHIFT = 1e-2  # added to warm-started lam and s (a start nearer the boundary jams the first steps)
COMPLEMENTARITY = 1e-8  # W: converged when every lam * s is below this (resting gap ~ 1e-8 dt / gamma)
MU_FLOOR = 0.1 * COMPLEMENTARITY  # the corrector aims no lower: smaller s / lam makes the border of
# redundant contacts (four box corners on a plane: rank 3) numerically singular


def tangents(normal: np.ndarray) -> np.ndarray:
    """Four pyramid directions (n, 4, 3) +-t1, +-t2 orthogonal to each unit normal (n, 3)."""
    helper = np.where(np.abs(normal[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    t1 = helper - np.sum(helper * normal, axis=1, keepdims=True) * normal
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(normal, t1)
    return np.stack([t1, -t1, t2, -t2], axis=1)


def point_jacobian(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """d(x + R p)/d(x, phi) = [I, -R [p]x], (n, 3, 6)."""
    out = np.zeros(p.shape[:-1] + (3, 6))
    out[..., :3] = np.eye(3)
    out[..., 3:] = -R @ hat(p)
    return out


@dataclass
class Pairs:
    """The step's inequality pairs. Rows: gamma of every contact, then per friction patch psi and its
    beta_1..4 (or 6 with spin), then limits.

    kind (m,): 0 gap (positional), 1 cone, 2 friction direction, 3 limit (positional);
    owner (m,) contact index of each row (a patch's first contact for its psi and beta rows; limit
    index for limits); lam, s (m,) > 0.
    """

    kind: np.ndarray
    owner: np.ndarray
    lam: np.ndarray
    s: np.ndarray


class InteriorPoint:
    """Contacts (when the mechanism has colliders) and joint limits of one step."""

    def __init__(self, mechanism, model):
        self.model = model
        self.world = CollisionWorld(mechanism) if mechanism.colliders else None
        js = model.joints
        self.limited = np.nonzero(np.isfinite(js.lower) | np.isfinite(js.upper))[0]
        self.mu = 1.0
        self._previous: tuple | None = None
        self.friction_dropped: list[int] = []  # steps redone without friction rows

    def finish(self) -> None:
        """Keep the converged pairs for warm-starting the next step."""
        self._previous = (self.key, self.pairs.lam.copy(), self.pairs.s.copy())

    @property
    def active(self) -> bool:
        return self.world is not None or len(self.limited) > 0

    # ---- set-up at the knot -------------------------------------------------------------------
    def begin(self, state, knot, dt: float) -> None:
        model = self.model
        bs = model.bodies
        nb = bs.count
        R1 = quat_to_matrix(state.q)
        self.R1 = np.concatenate([R1, np.eye(3)[None]], axis=0)
        self.x1 = np.vstack([state.x, np.zeros((1, 3))])
        self.dt = dt
        self._contacts(state, dt, nb)
        self._limits(state, knot, dt)
        kind = np.concatenate([self.c_kind, np.full(len(self.l_coord), 3)])
        owner = np.concatenate([self.c_owner, np.arange(len(self.l_coord))])
        m = len(kind)
        key = np.concatenate([self.c_key[self.c_owner] if len(self.c_kind) else np.zeros(0, np.int64),
                              -1 - self.l_coord * 2 - (self.l_side < 0)])
        key = key * 4 + kind
        self.key = key
        self.pairs = Pairs(kind, owner, np.zeros(m), np.zeros(m))
        self.restarts = 0
        if self._previous is not None and np.array_equal(self._previous[0], key):
            # same contact set as the last step: warm start, pushed off the boundary
            self._start(self._previous[1] + WARM_SHIFT, self._previous[2] + WARM_SHIFT, cold=False)
        else:
            self._cold_start()

    def _start(self, lam0: np.ndarray, s0: np.ndarray, cold: bool) -> None:
        self.pairs.lam, self.pairs.s = lam0, s0
        self.cold = cold
        self.mu = float(np.mean(lam0 * s0)) if len(lam0) else 0.0
        self.monotone = False

    def drop_friction(self, step: int) -> bool:
        """Remove this step's friction rows and restart cold, recording `step` in `friction_dropped`:
        the last resort when the iteration stalls with friction (not reached on the collider presets
        since one pyramid per patch; the integrator reports every such step). False if there were none."""
        if not np.any(self.c_kind > 0):
            return False
        keep = np.concatenate([self.c_kind == 0, np.ones(len(self.l_coord), bool)])
        self.c_kind, self.c_owner = self.c_kind[self.c_kind == 0], self.c_owner[self.c_kind == 0]
        self.pairs = Pairs(self.pairs.kind[keep], self.pairs.owner[keep], self.pairs.lam[keep], self.pairs.s[keep])
        self.key = self.key[keep]
        self.friction_dropped.append(step)
        self._cold_start()
        return True

    def restart(self) -> bool:
        """Recover from a stall (the iterate jammed off the central path, typically a sticking contact
        whose four pyramid pairs are all active, with redundant normals): a warm start restarts cold; a
        cold one is recentred, lam and s raised to at least RECENTRE_FLOOR with the velocities kept.
        At most MAX_RESTARTS a step; False when they are used up."""
        if self.restarts >= MAX_RESTARTS:
            return False
        self.restarts += 1
        if self.cold:
            p = self.pairs
            self._start(np.maximum(p.lam, RECENTRE_FLOOR), np.maximum(p.s, RECENTRE_FLOOR), cold=True)
            self.monotone = True
            self.mu_fixed = self.mu
        else:
            self._cold_start()
        return True

    def _cold_start(self) -> None:
        m = len(self.pairs.kind)
        s0 = np.ones(m)
        if len(self.c_kind):
            gap_rows = np.nonzero(self.c_kind == 0)[0]
            s0[gap_rows] = np.maximum(self.c_d[self.c_owner[gap_rows]] / self.dt, 1.0)
        self._start(COLD_MU / s0, s0, cold=True)
        return True

    def _contacts(self, state, dt: float, nb: int) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self.c_a, self.c_b, self.c_kind, self.c_owner, self.c_key = empty, empty, empty, empty, empty
        self.n_contacts = 0
        if self.world is None:
            return
        bs = self.model.bodies
        origin = state.x - np.einsum("bij,bj->bi", self.R1[:nb], bs.com)
        speed = np.max(np.linalg.norm(state.v, axis=1), initial=0.0) + np.max(np.linalg.norm(state.w, axis=1), initial=0.0)
        margin = 2.0 * dt * speed + np.linalg.norm(bs.gravity) * dt * dt + 1e-3
        found = self.world.detect(origin, state.q, margin)
        k = len(found.distance)
        self.n_contacts = k
        if k == 0:
            return
        com = np.vstack([bs.com, np.zeros((1, 3))])
        a = np.where(found.body_a < 0, nb, found.body_a)
        b = np.where(found.body_b < 0, nb, found.body_b)
        self.c_a, self.c_b = a, b
        n_col = len(self.model.mechanism.colliders)
        self.c_key = found.collider_a * n_col + found.collider_b
        self.c_pa = found.point_a - com[a]
        self.c_pb = found.point_b - com[b]
        self.c_n = found.normal
        self.c_d = found.distance
        self.c_mu = found.friction
        Ja = point_jacobian(self.R1[a], self.c_pa)
        Jb = point_jacobian(self.R1[b], self.c_pb)
        Ja[a == nb] = 0.0
        Jb[b == nb] = 0.0
        self.c_Ja1, self.c_Jb1 = Ja, Jb
        self.c_pos_a1 = self.x1[a] + np.einsum("kij,kj->ki", self.R1[a], self.c_pa)
        self.c_pos_b1 = self.x1[b] + np.einsum("kij,kj->ki", self.R1[b], self.c_pb)
        # friction rows only where the gap can close within the step: at a contact that stays open the
        # normal force is zero and the sliding-speed multiplier psi is undetermined (degenerate pair)
        ve = np.vstack([np.concatenate([state.v, state.w], axis=1), np.zeros((1, 6))])
        vn = np.einsum("ki,kij,kj->k", found.normal, Jb, ve[b]) - np.einsum("ki,kij,kj->k", found.normal, Ja, ve[a])
        closing = found.distance + dt * vn - 0.5 * dt * dt * np.linalg.norm(bs.gravity) <= CLOSE_MARGIN
        self._patches(np.nonzero((self.c_mu > 0) & closing)[0], k)

    def _patches(self, rubbing: np.ndarray, k: int) -> None:
        """Rows: gamma of every contact, then per patch (the rubbing contacts of one collider pair) psi and
        its pyramid. One pyramid per patch, not per point: the tangential velocities of a patch's points
        have rank 3 (two slips and the spin about the normal), so per-point pyramids (4 corners: 16 rows)
        made the sticking multipliers non-unique and the Newton matrix reach condition ~1e21 (issue 6).
        Directions +-t1, +-t2 act at the mean of the witness points (the point Jacobian is linear in the
        point, so exactly the mean of the points' Jacobians); a patch of several points adds +-spin,
        h = r n . (w_B - w_A) with r the mean distance of its points from their centroid, a torque r beta
        about n. Cone: mu sum(patch gamma) >= sum beta (translation up to mu N, spin up to mu N r)."""
        kinds, owners, rows_b = [0] * k, list(range(k)), []
        self.p_members = []
        for key in np.unique(self.c_key[rubbing]):
            members = rubbing[self.c_key[rubbing] == key]
            first = int(members[0])
            normal = np.mean(self.c_n[members], axis=0)
            normal /= np.linalg.norm(normal)
            d = tangents(normal[None])[0]
            Jrel = np.concatenate([-np.mean(self.c_Ja1[members], axis=0), np.mean(self.c_Jb1[members], axis=0)], axis=1)
            B = d @ Jrel  # (4, 12)
            centre = 0.5 * (self.c_pos_a1[members] + self.c_pos_b1[members])
            r = float(np.mean(np.linalg.norm(centre - np.mean(centre, axis=0), axis=1)))
            if len(members) > 1 and r > 0.0:
                a, b = self.c_a[first], self.c_b[first]
                spin = np.zeros(12)
                spin[3:6] = -r * normal @ self.R1[a] if a < len(self.R1) - 1 else 0.0
                spin[9:12] = r * normal @ self.R1[b] if b < len(self.R1) - 1 else 0.0
                B = np.vstack([B, spin, -spin])
            kinds += [1] + [2] * len(B)
            owners += [first] * (1 + len(B))
            rows_b.append(B)
            self.p_members.append(members)
        self.p_B = np.vstack(rows_b) if rows_b else np.zeros((0, 12))
        self.c_kind = np.array(kinds, dtype=np.int64)
        self.c_owner = np.array(owners, dtype=np.int64)

    def _limits(self, state, knot, dt: float) -> None:
        js, fs = self.model.joints, self.model.forces
        coords, sides, bounds = [], [], []
        theta = knot.cval[:len(js.coord_kind)]
        reach = 2.0 * dt * np.abs(state.coord_rate[:len(js.coord_kind)]) + 0.05
        for c in self.limited:
            for side, bound in ((1.0, js.lower[c]), (-1.0, js.upper[c])):
                if np.isfinite(bound) and side * (theta[c] - bound) < reach[c] + 0.05 * abs(bound - theta[c]) + 0.1:
                    coords.append(c)
                    sides.append(side)
                    bounds.append(bound)
        self.l_coord = np.array(coords, dtype=np.int64)
        self.l_side = np.array(sides)
        self.l_bound = np.array(bounds)
        self.l_a = fs.coord_a[self.l_coord]
        self.l_b = fs.coord_b[self.l_coord]
        self.l_G1 = self.l_side[:, None] * knot.cjac[self.l_coord]

    # ---- rows at one Newton iterate ------------------------------------------------------------
    def extend(self, ev, V: np.ndarray, Wr: np.ndarray, dt: float) -> None:
        """Append the pairs' rows to the evaluation: body forces, bordered rows, E block, residual."""
        nb = self.model.bodies.count
        p = self.pairs
        m = len(p.kind)
        if m == 0:
            ev.ip_h = np.zeros(0)
            return
        Ve = np.vstack([V, np.zeros((1, 6))])
        a_rows = np.empty(m, dtype=np.int64)
        b_rows = np.empty(m, dtype=np.int64)
        G = np.zeros((m, 12))
        C = np.zeros((m, 12))
        h = np.empty(m)
        E = np.zeros((m, m))
        nc = len(self.c_kind)
        if nc:
            self._contact_rows(ev, Ve, Wr, dt, nb, a_rows[:nc], b_rows[:nc], G[:nc], C[:nc], h[:nc], E[:nc, :nc])
        if len(self.l_coord):
            sl = slice(nc, m)
            a_rows[sl], b_rows[sl] = self.l_a, self.l_b
            theta2 = ev.cval2[self.l_coord]
            h[sl] = self.l_side * (theta2 - self.l_bound) / dt
            G[sl] = -self.l_G1
            C[sl] = -self.l_side[:, None] * ev.cjac2_velocity[self.l_coord]
        lam, s = p.lam, p.s
        E[np.arange(m), np.arange(m)] += -s / lam
        ev.body_residual = ev.body_residual + scatter(nb, a_rows, b_rows, G * lam[:, None])
        rows = ev.matrix.rows
        na = np.where(a_rows < nb, a_rows, -1)
        nbb = np.where(b_rows < nb, b_rows, -1)
        ev.matrix.rows = RowBlocks(np.concatenate([rows.a, na]), np.concatenate([rows.b, nbb]),
                                   np.vstack([rows.Ga, G[:, :6]]), np.vstack([rows.Gb, G[:, 6:]]),
                                   np.vstack([rows.Ca, C[:, :6]]), np.vstack([rows.Cb, C[:, 6:]]))
        k0 = len(ev.matrix.E)
        E_all = np.zeros((k0 + m, k0 + m))
        E_all[:k0, :k0] = ev.matrix.E
        E_all[k0:, k0:] = E
        ev.matrix.E = E_all
        ev.ip_h = h

    def _contact_rows(self, ev, Ve, Wr, dt, nb, a_rows, b_rows, G, C, h, E) -> None:
        p = self.pairs
        owner = self.c_owner[:len(a_rows)]
        kind = p.kind[:len(a_rows)]
        a, b = self.c_a[owner], self.c_b[owner]
        a_rows[:], b_rows[:] = a, b
        gap = kind == 0
        c = owner[gap]
        G[gap, :6] = np.einsum("ki,kij->kj", self.c_n[c], self.c_Ja1[c])
        G[gap, 6:] = -np.einsum("ki,kij->kj", self.c_n[c], self.c_Jb1[c])
        C[gap] = G[gap]
        h[gap] = self.c_d[c] / dt - (np.einsum("kj,kj->k", G[gap, :6], Ve[a[gap]])
                                     + np.einsum("kj,kj->k", G[gap, 6:], Ve[b[gap]]))
        cone = np.nonzero(kind == 1)[0]
        fric = np.nonzero(kind == 2)[0]
        if len(cone):
            for row, members in zip(cone, self.p_members):
                E[row, members] = -self.c_mu[members]  # gamma row i is contact i
            patch = np.cumsum(kind == 1)[fric] - 1
            cone_row = cone[patch]
            beta_sum = np.bincount(patch, weights=p.lam[fric], minlength=len(cone))
            h[cone] = np.array([self.c_mu[m] @ p.lam[m] for m in self.p_members]) - beta_sum
            E[cone_row, fric] = 1.0
            B = self.p_B
            fo = owner[fric]
            vrel = np.einsum("fk,fk->f", B[:, :6], Ve[self.c_a[fo]]) + np.einsum("fk,fk->f", B[:, 6:], Ve[self.c_b[fo]])
            h[fric] = vrel + p.lam[cone_row]
            G[fric] = -B
            C[fric] = -B
            E[fric, cone_row] = -1.0

    # ---- step control (Mehrotra predictor-corrector) ----------------------------------------------
    def rhs(self, h: np.ndarray, target: np.ndarray | float) -> np.ndarray:
        """The pairs' part of the Newton right-hand side (the bordered rows' right side) for target t: h - t / lam."""
        return h - target / self.pairs.lam

    def slack_step(self, dlam: np.ndarray, target: np.ndarray | float) -> np.ndarray:
        """ds from the linearised lam s = t."""
        p = self.pairs
        return (target - p.s * dlam) / p.lam - p.s

    def _boundary(self, dlam: np.ndarray, ds: np.ndarray, tau: float) -> float:
        p = self.pairs
        alpha = 1.0
        for value, change in ((p.lam, dlam), (p.s, ds)):
            neg = change < 0
            if np.any(neg):
                alpha = min(alpha, tau * float(np.min(-value[neg] / change[neg])))
        return alpha

    def corrector_target(self, dlam_aff: np.ndarray) -> np.ndarray:
        """Target t = sigma mu - dlam_aff ds_aff of the corrector from the affine direction (t = 0)."""
        p = self.pairs
        if len(p.lam) == 0:
            return np.zeros(0)
        if self.monotone:  # Fiacco-McCormick after a stall: mu fixed until the pairs are centred
            ls = p.lam * p.s
            if np.max(np.abs(ls - self.mu_fixed)) <= CENTRED * self.mu_fixed:
                self.mu_fixed = max(MU_FLOOR, MU_DECREASE * self.mu_fixed)
            return np.full(len(p.lam), self.mu_fixed)
        ds_aff = self.slack_step(dlam_aff, 0.0)
        alpha = self._boundary(dlam_aff, ds_aff, 1.0)
        mu = float(np.mean(p.lam * p.s))
        mu_aff = float(np.mean((p.lam + alpha * dlam_aff) * (p.s + alpha * ds_aff)))
        sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
        return max(sigma * mu, MU_FLOOR) - dlam_aff * ds_aff

    def step_length(self, dlam: np.ndarray, target: np.ndarray | float) -> tuple[float, np.ndarray]:
        """Largest step in (0, 1] keeping lam and s positive (fraction to the boundary), and ds."""
        if len(dlam) == 0:
            return 1.0, dlam
        ds = self.slack_step(dlam, target)
        alpha = self._boundary(dlam, ds, min(max(TAU_MIN, 1.0 - self.mu), TAU_MAX))
        p = self.pairs
        for _ in range(NEIGHBOURHOOD_HALVINGS):  # stay in the wide neighbourhood min lam s >= c mean lam s
            ls = (p.lam + alpha * dlam) * (p.s + alpha * ds)
            if np.min(ls) >= NEIGHBOURHOOD * np.mean(ls):
                break
            alpha *= 0.5
        return alpha, ds

    def update(self, alpha: float, dlam: np.ndarray, ds: np.ndarray) -> None:
        p = self.pairs
        if len(dlam) == 0:
            return
        p.lam = np.maximum(p.lam + alpha * dlam, 1e-300)
        p.s = np.maximum(p.s + alpha * ds, 1e-300)
        self.mu = float(np.mean(p.lam * p.s))

    def converged(self, h: np.ndarray, tol: float) -> bool:
        p = self.pairs
        if len(p.lam) == 0:
            return True
        if float(np.max(p.lam * p.s)) > COMPLEMENTARITY:
            return False
        # primal residual h - s in the units of tol (m, as the joint rows): velocity-level pairs times dt;
        # cone rows (N) times dt^2 / m of the lighter body (how far that force error moves it in a step)
        weight = np.full(len(p.kind), self.dt)
        cone = np.nonzero(p.kind == 1)[0]
        if len(cone):
            mass = np.append(self.model.bodies.mass, np.inf)
            lighter = np.minimum(mass[self.c_a[p.owner[cone]]], mass[self.c_b[p.owner[cone]]])
            weight[cone] = self.dt * self.dt / lighter
        return float(np.max(weight * np.abs(h - p.s))) <= tol

"""Inequalities of the maximal-coordinate step (contacts with friction, joint limits) as primal-dual
interior-point pairs inside the step's Newton iteration (seed 003 §3.4-3.5, eqs. (24), (26)-(29);
Appendix D is lost).

Every inequality is a pair: a function h >= 0 of the unknowns with slack s = h, and its multiplier
lam >= 0, with s lam = mu driven to zero. Per contact (detected at the knot z_1 by
collision.CollisionWorld; normal n from A to B, witness points fixed in the bodies):
  gamma  (normal force):  h = phi(z_2) ~ d_1 + dt N zdot_1, the gap at the new configuration
                          linearised about the witness points (N = n . d(p_B - p_A)/d(x, phi) at
                          z_1, p = x + R p_body), force +gamma n on B. Linear, not the body-fixed
                          point moved exactly: a rolling sphere's contact point would rise by
                          r (|w| dt)^2 / 2 per step and let the sphere sink by that much (P4).
                          Between flat features (plane-box, box-box) the row starts from d_1 + c:
                          c (_curvature) adds the gap's dt^2 terms along the predicted motion, and
                          a step whose own velocities bend the gap otherwise is redone along them
                          (relinearise).
Friction per patch (the contacts of one collider pair that can close within the step; a sphere's patch
is its one point, a box face on a plane its four corners):
  psi    (sliding speed): h = sum mu_f gamma - sum beta  (friction cone, (26b), (27b));
  beta_j (friction):      h = d_j . v_rel(zdot_1) + psi  ((27a), (27c)), force +beta_j d_j on B,
with d_j = +-t1, +-t2 a four-sided pyramid in the tangent plane and v_rel the interval velocity of B
relative to A at the mean of the patch's witness points (Jacobian at z_1, (29d)); a patch of several
points adds d = +-spin, v_rel = r n . (w_B - w_A), a torque r beta about n, r the points' mean distance
from their centroid (four corners each carrying mu gamma: the same torque mu N r). One pyramid per patch
because the points' tangential velocities have rank 3: per-point pyramids (16 rows for 4 corners) left
the sticking multipliers non-unique, and the Newton matrix reached condition ~1e21 (dominoes).
Friction forces act through the same point Jacobians as the normal force, so their torques are
physical (the factor-2 trap of docs/seeds.md 003-B does not arise: rotational rows here are in torque
units). Joint limits: gamma with h = theta(z_2) - lower or upper - theta(z_2) on a joint coordinate.

Positional pairs (gaps, limits) are written at the velocity level, h = phi(z_2)/dt, so that every
complementarity lam s is a power (N m/s: force times speed for gap and friction pairs, speed times
force for psi): one barrier parameter then centres all pairs alike (with h in metres the gap pairs were
held 1/dt further from the boundary than the friction pairs).

Newton on the pair (lam dh + s dlam = t - lam h, eliminating ds) gives the row
    -dh - (s/lam) dlam = h - t/lam,
which borders the joint system as auxiliary rows: force side -dh/dz at z_1, velocity side -dh/dzdot,
and a sparse block E: -s/lam on the diagonal, and the cone rows coupling psi with its patch's gamma
and beta. The target t comes from
Mehrotra's predictor-corrector (variational._newton solves twice with one factorisation): the affine
direction (t = 0) gives the complementarity mu_aff it would reach, sigma = (mu_aff / mu)^3, and the
corrector aims at t = max(sigma mu, MU_FLOOR) - dlam_aff ds_aff. Steps keep s and lam positive with the
fraction to the boundary tau = max(0.99, 1 - mu) and stay in the wide neighbourhood min lam s >=
1e-3 mean lam s; stalls restart (recentred, then monotone Fiacco-McCormick updates of mu).

Nothing here outlives a call: the step's rows (Inequalities, set up at the knot), the iterate (lam, s,
mu), the counters and the warm start for the next step live in InteriorPointState (state.py), the maximal
state's `interior`; the functions read the model and write that state. The contacts' set-up at the knot
(_contacts, _patches and the contact part of `packed`) has a C twin, native/contact_rows.c, which `begin`
takes when the C step hands it its buffers; the numpy functions here are its reference.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse

from ..collision.features import FACE_A, FACE_B, NONE, PARALLEL, normal_owners
from ..collision.shapes import body_reach
from ..collision.world import Contacts
from ..lie import hat, quat_to_matrix
from ..native.contact_rows_binding import NativeRows
from .bodies import half_step
from .forces import scatter
from .linear import RowBlocks
from .state import (
    COLD_MU,
    ContactRows,
    Evaluation,
    Inequalities,
    InteriorPointState,
    LimitRows,
    MaximalModel,
    MaximalState,
    WarmStart,
)

CENTRED = 0.5  # monotone mode: mu -> MU_DECREASE mu once every |lam s - mu| <= CENTRED mu
MU_DECREASE = 0.2
NEIGHBOURHOOD = 1e-3  # steps keep min lam s >= NEIGHBOURHOOD mean lam s (pairs collapsing to (0, 0) jam)
NEIGHBOURHOOD_HALVINGS = 30
MAX_RESTARTS = 3
RECENTRE_FLOOR = 1e-2  # lam and s (N or m/s) are raised to at least this by a recentring restart
TAU_MIN = 0.99  # fraction to the boundary max(TAU_MIN, 1 - mu), at most TAU_MAX
TAU_MAX = 1.0 - 1e-8  # 1 - mu rounds to 1 for mu < 1e-16: a pair would land on the boundary (s/lam = 0)
QUERY_MARGIN = 1e-3  # m: the collision query's margin beyond the fastest point's reach in the step (_contacts)
CLOSE_MARGIN = 1e-3  # m: contacts predicted further apart than this after the step get no friction rows
RELINEARISE = 3e-5  # m: a step whose gap curvature along its own velocities differs from its rows' by more is
MAX_RELINEARISE = 2  # redone along them (relinearise), at most this often
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


def limited_coordinates(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Indices of the joint coordinates with a finite limit."""
    return np.nonzero(np.isfinite(lower) | np.isfinite(upper))[0]


def has_inequalities(model: MaximalModel) -> bool:
    """True when the model's steps carry interior-point pairs (colliders or limited coordinates)."""
    return model.collision is not None or len(model.limited) > 0


def finish(state: MaximalState) -> None:
    """Keep the converged pairs for warm-starting the next step."""
    ip = state.interior
    ip.warm = WarmStart(ip.rows.key, ip.lam.copy(), ip.s.copy())
    ip.predicted, ip.relinearised = None, 0


def relinearise(model: MaximalModel, state: MaximalState, V: np.ndarray, dt: float,
                native: NativeRows | None = None) -> bool:
    """After a converged step with interval velocities V (B, 6): True (and V kept as the prediction the next
    `begin` of this step follows) when the gap curvature along V of its contacts that end the step within
    CLOSE_MARGIN differs from the one its rows started from by more than RELINEARISE, at most MAX_RELINEARISE times a step; the caller then redoes the
    step from the knot. The rows' curvature follows the knot's velocities, the last interval's: where the
    step changes them (an impact, a domino knocked over) the rows' gap is off by dt^2 times that change, and
    the redo, along velocities that differ from its own result only by what that changes, closes it; its pairs
    start warm from this step's converged ones (state.interior's lam and s: the C step copies its own there
    first), not from the last step's. native: the C step's NativeRows, which measures the change in C
    (NativeRows.drift, twin of the numpy measure here)."""
    ip = state.interior
    c = ip.rows.contacts
    if c.found is None or ip.relinearised >= MAX_RELINEARISE:
        return False
    # the C step: its rows' contacts are still in native's buffers
    drift = _drift(model, state, c, V, dt) if native is None else native.drift(dt, V, CLOSE_MARGIN)
    if drift <= RELINEARISE:
        return False
    ip.predicted = np.array(V, dtype=float)
    ip.relinearised += 1
    ip.warm = WarmStart(ip.rows.key, ip.lam.copy(), ip.s.copy())  # the redo starts from these converged pairs
    return True


def _drift(model: MaximalModel, state: MaximalState, c: ContactRows, V: np.ndarray, dt: float) -> float:
    """relinearise's measure (twin of NativeRows.drift): the largest change of the gap curvature of the contacts c
    along the interval velocities V (B, 6) from the one their rows started from, over the contacts whose gap ends
    the step within CLOSE_MARGIN (only gaps that end the step closed hold anything); 0 when none does."""
    along = _curvature(model, state, c.found, np.concatenate([quat_to_matrix(state.q), np.eye(3)[None]]), dt, V)
    Ve = np.vstack([V, np.zeros((1, 6))])
    end = c.distance + c.curvature + dt * (np.einsum("ki,kij,kj->k", c.normal, c.Jb, Ve[c.b])
                                           - np.einsum("ki,kij,kj->k", c.normal, c.Ja, Ve[c.a]))
    return float(np.max(np.abs(along - c.curvature)[end <= CLOSE_MARGIN], initial=0.0))


# ---- set-up at the knot -----------------------------------------------------------------------
def begin(model: MaximalModel, state: MaximalState, coordinates: tuple[np.ndarray, np.ndarray] | None,
          dt: float, native: NativeRows | None = None) -> PackedPairs | None:
    """Set up this step's rows at the knot and start the iterate: warm from the last step when the
    contact set is the same, else cold. coordinates: the knot's coordinate values and Jacobians
    (Knot.cval, Knot.cjac), needed only when the model has limits. native (the C step's call): the
    model's buffers of native/contact_rows.c, which then sets the contact rows up (twin of _contacts
    and the contact part of `packed`); returns the rows packed for the C step when native is given."""
    pack = None
    if native is not None and model.collision is not None:
        contacts, pack, contact_key = _contacts_native(model, state, native, dt)
    else:
        R1 = np.concatenate([quat_to_matrix(state.q), np.eye(3)[None]], axis=0)
        x1 = np.vstack([state.x, np.zeros((1, 3))])
        contacts = _contacts(model, state, R1, x1, dt)
    limits = _limits(model, state, coordinates, dt)
    if len(limits.coord):
        kind = np.concatenate([contacts.kind, np.full(len(limits.coord), 3)])
        owner = np.concatenate([contacts.owner, np.arange(len(limits.coord))])
        key = np.concatenate([contacts.key[contacts.owner], -1 - limits.coord * 2 - (limits.side < 0)]) * 4 + kind
    else:
        kind, owner = contacts.kind, contacts.owner
        key = contact_key if pack is not None else contacts.key[owner] * 4 + kind
    rows = Inequalities(dt, kind, owner, key, contacts, limits)
    ip = state.interior
    ip.rows = rows
    ip.restarts = 0
    _warm_or_cold_start(ip)
    if native is None:
        return None
    return packed(model, state) if pack is None else _with_limits(pack, rows)


def _warm_or_cold_start(ip: InteriorPointState) -> None:
    """Start the iterate of ip.rows: each row the last step also had (warm_rows) from its converged pair pushed
    off the boundary by WARM_SHIFT, the others cold (_cold_slack). A start is warm when any row is: a contact
    entering or leaving the query at a toppling front then restarts its own rows, not every pair of the scene
    (a whole cold start took 10 to 17 Newton iterations where a warm one takes 4, at any number of dominoes).
    Limit rows start warm only with the whole set unchanged: a hinge bouncing between its stops, its rows
    entering and leaving, made the predictor-corrector cycle from a partly warm start (limited double pendulum)."""
    warm, key = ip.warm, ip.rows.key
    if warm is not None and np.array_equal(warm.key, key):
        _start(ip, warm.lam + WARM_SHIFT, warm.s + WARM_SHIFT, cold=False)
        return
    same = warm_rows(warm.key, key) if warm is not None else np.full(len(key), -1)
    kept = (same >= 0) & (ip.rows.kind != 3)
    if not np.any(kept):
        _cold_start(ip)
        return
    s0 = _cold_slack(ip.rows)
    lam0 = COLD_MU / s0
    lam0[kept] = warm.lam[same[kept]] + WARM_SHIFT
    s0[kept] = warm.s[same[kept]] + WARM_SHIFT
    _start(ip, lam0, s0, cold=False)


def warm_rows(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """For each row of keys `new` (Inequalities.key) its row in `old`, or -1: the same key at the same rank among
    that key's rows, where the key has as many rows in both (a collider pair whose contact points changed in
    number starts its gap rows cold)."""
    out = np.full(len(new), -1, dtype=np.int64)
    if not len(old) or not len(new):
        return out
    old_order, new_order = np.argsort(old, kind="stable"), np.argsort(new, kind="stable")
    old_sorted, new_sorted = old[old_order], new[new_order]
    first_old = np.searchsorted(old_sorted, new_sorted, side="left")
    count_old = np.searchsorted(old_sorted, new_sorted, side="right") - first_old
    first_new = np.searchsorted(new_sorted, new_sorted, side="left")
    count_new = np.searchsorted(new_sorted, new_sorted, side="right") - first_new
    match = count_old == count_new
    rank = np.arange(len(new)) - first_new
    out[new_order[match]] = old_order[first_old[match] + rank[match]]
    return out


def _start(ip: InteriorPointState, lam0: np.ndarray, s0: np.ndarray, cold: bool) -> None:
    ip.lam, ip.s = lam0, s0
    ip.cold = cold
    ip.mu = float(np.mean(lam0 * s0)) if len(lam0) else 0.0
    ip.monotone = False


def drop_friction(state: MaximalState, step: int) -> bool:
    """Remove this step's friction rows and restart cold, recording `step` in `friction_dropped`:
    the last resort when the iteration stalls with friction (not reached on the collider presets
    since one pyramid per patch; the integrator reports every such step). False if there were none."""
    ip = state.interior
    rows = ip.rows
    c = rows.contacts
    gap = c.kind == 0
    if np.all(gap):
        return False
    keep = np.concatenate([gap, np.ones(len(rows.limits.coord), bool)])
    none = np.zeros(0, dtype=np.int64)
    contacts = replace(c, kind=c.kind[gap], owner=c.owner[gap], members=none, member_patch=none, B=np.zeros((0, 12)))
    ip.rows = replace(rows, kind=rows.kind[keep], owner=rows.owner[keep], key=rows.key[keep], contacts=contacts)
    ip.friction_dropped.append(step)
    _cold_start(ip)
    return True


def restart(state: MaximalState) -> bool:
    """Recover from a stall (the iterate jammed off the central path, typically a sticking contact
    whose four pyramid pairs are all active, with redundant normals): a warm start restarts cold; a
    cold one is recentred, lam and s raised to at least RECENTRE_FLOOR with the velocities kept.
    At most MAX_RESTARTS a step; False when they are used up."""
    ip = state.interior
    if ip.restarts >= MAX_RESTARTS:
        return False
    ip.restarts += 1
    if ip.cold:
        _start(ip, np.maximum(ip.lam, RECENTRE_FLOOR), np.maximum(ip.s, RECENTRE_FLOOR), cold=True)
        ip.monotone = True
        ip.mu_fixed = ip.mu
    else:
        _cold_start(ip)
    return True


def _cold_slack(rows: Inequalities) -> np.ndarray:
    """The slacks of a cold start: 1, or a gap's distance / dt when larger (its lam: COLD_MU / s)."""
    c = rows.contacts
    s0 = np.ones(len(rows.kind))
    gap_rows = np.nonzero(c.kind == 0)[0]
    g = c.owner[gap_rows]
    s0[gap_rows] = np.maximum((c.distance[g] + c.curvature[g]) / rows.dt, 1.0)
    return s0


def _cold_start(ip: InteriorPointState) -> None:
    s0 = _cold_slack(ip.rows)
    _start(ip, COLD_MU / s0, s0, cold=True)


def query_margins(reach: np.ndarray, v: np.ndarray, w: np.ndarray, gravity_norm: float, dt: float) -> np.ndarray:
    """Each body's margin (B,) for the collision query at the knot (a pair's is the larger of its bodies', the
    world's 0): twice the farthest its collider points move in dt at the knot's velocities, |v| + reach |w| with
    reach from collision.shapes.body_reach, plus |g| dt^2 and QUERY_MARGIN, rounded up to QUERY_MARGIN times a
    power of 2 (the query runs each kind of pair once per level). Per body, and with the scene's lengths: one
    margin for all, 2 dt (max |v| + max |w|), had a toppling domino's 4 rad/s add 8 cm to every pair (its corners
    move 2.3 cm), and the margin rising and falling with the front's impacts had the resting dominoes' far
    corners enter and leave the contact set step after step (a new pattern of the Newton matrix each time)."""
    margin = 2.0 * dt * (np.linalg.norm(v, axis=1) + reach * np.linalg.norm(w, axis=1)) + gravity_norm * dt * dt \
        + QUERY_MARGIN
    fraction, exponent = np.frexp(margin / QUERY_MARGIN)
    return np.ldexp(QUERY_MARGIN, np.where(fraction == 0.5, exponent - 1, exponent))


def _no_contacts() -> ContactRows:
    index = np.zeros(0, dtype=np.int64)
    return ContactRows(index, index, index, np.zeros((0, 3)), np.zeros(0), np.zeros(0), np.zeros((0, 3, 6)),
                       np.zeros((0, 3, 6)), index, index, index, index, np.zeros((0, 12)), np.zeros(0), None)


def _contacts(model: MaximalModel, state: MaximalState, R1: np.ndarray, x1: np.ndarray, dt: float) -> ContactRows:
    """The contacts within reach of the step (R1 (B+1, 3, 3), x1 (B+1, 3): the knot, world last), each pair's
    within its faster body's margin (query_margins)."""
    if model.collision is None:
        return _no_contacts()
    bs = model.bodies
    nb = bs.count
    origin = state.x - np.einsum("bij,bj->bi", R1[:nb], bs.com)
    margin = query_margins(body_reach(model.collision.shapes, bs.com), state.v, state.w,
                           float(np.linalg.norm(bs.gravity)), dt)
    found = model.collision.detect(origin, state.q, margin)
    k = len(found.distance)
    if k == 0:
        return _no_contacts()
    com = np.vstack([bs.com, np.zeros((1, 3))])
    a = np.where(found.body_a < 0, nb, found.body_a)
    b = np.where(found.body_b < 0, nb, found.body_b)
    key = found.collider_a * len(model.mechanism.colliders) + found.collider_b
    pa = found.point_a - com[a]
    pb = found.point_b - com[b]
    Ja = point_jacobian(R1[a], pa)
    Jb = point_jacobian(R1[b], pb)
    Ja[a == nb] = 0.0
    Jb[b == nb] = 0.0
    pos_a1 = x1[a] + np.einsum("kij,kj->ki", R1[a], pa)
    pos_b1 = x1[b] + np.einsum("kij,kj->ki", R1[b], pb)
    # friction rows only where the gap can close within the step: at a contact that stays open the
    # normal force is zero and the sliding-speed multiplier psi is undetermined (degenerate pair)
    ve = np.vstack([np.concatenate([state.v, state.w], axis=1), np.zeros((1, 6))])
    vn = np.einsum("ki,kij,kj->k", found.normal, Jb, ve[b]) - np.einsum("ki,kij,kj->k", found.normal, Ja, ve[a])
    curvature = _curvature(model, state, found, R1, dt, state.interior.predicted)
    reach = found.distance + curvature  # the distance the gap rows start from
    closing = reach + dt * vn - 0.5 * dt * dt * np.linalg.norm(bs.gravity) <= CLOSE_MARGIN
    rubbing = np.nonzero((found.friction > 0) & closing)[0]
    kind, owner, members, member_patch, B = _patches(rubbing, key, found.normal, Ja, Jb, 0.5 * (pos_a1 + pos_b1),
                                                     a, b, R1)
    return ContactRows(a, b, key, found.normal, found.distance, found.friction, Ja, Jb, kind, owner, members,
                       member_patch, B, curvature, found)


def _curvature(model: MaximalModel, state: MaximalState, found: Contacts, R1: np.ndarray, dt: float,
               velocity: np.ndarray | None = None) -> np.ndarray:
    """What the gap rows' linearisation misses over the step (k,), in m: the gap of each contact's features
    at the configuration the interval velocities `velocity` (B, 6; None: the knot's state.v, state.w, the last
    interval's) reach in dt, minus its linearisation d + dt N zdot there. The gap of a vertex on a face moves with the face's normal, an edge
    across an edge with both edges (collision.features: pairs of planes and boxes; other pairs 0): the linear
    row, normal and points frozen at z_1, misses the term dt^2 (w x n) . v_rel of a point sliding on a turning
    face and the points' centripetal dt^2 w x (w x r) / 2 (a domino's edge sliding down the next one's face
    sank 0.35 mm a step). The row then aims at d + curvature + dt N zdot: exact along the predicted motion,
    and off by dt^2 times the change of velocity over the step elsewhere. R1 (B+1, 3, 3): the knot's
    rotations, the world's last."""
    nb = model.bodies.count
    out = np.zeros(len(found.distance))
    a = np.where(found.body_a < 0, nb, found.body_a)
    b = np.where(found.body_b < 0, nb, found.body_b)
    owner, edge_a, edge_b = normal_owners(model.collision.shapes, found.collider_a, found.collider_b, found.normal,
                                          R1[a], R1[b])
    sel = np.nonzero(owner != NONE)[0]
    if not len(sel):
        return out
    a, b, owner, n = a[sel], b[sel], owner[sel], found.normal[sel]
    velocity = np.concatenate([state.v, state.w], axis=1) if velocity is None else velocity
    v, w = np.vstack([velocity[:, :3], np.zeros((1, 3))]), np.vstack([velocity[:, 3:], np.zeros((1, 3))])
    R2 = np.concatenate([R1[:nb] @ quat_to_matrix(half_step(w[:nb], dt)), np.eye(3)[None]], axis=0)
    x1, x2 = np.vstack([state.x, np.zeros((1, 3))]), np.vstack([state.x + dt * v[:nb], np.zeros((1, 3))])
    com = np.vstack([model.bodies.com, np.zeros((1, 3))])
    ends = []
    for body, point in ((a, found.point_a[sel]), (b, found.point_b[sel])):
        p = point - com[body]
        arm = np.einsum("kij,kj->ki", R1[body], p)
        linear = x1[body] + arm + dt * (v[body] + np.einsum("kij,kj->ki", R1[body], np.cross(w[body], p)))
        ends.append((linear, x2[body] + np.einsum("kij,kj->ki", R2[body], p)))
    (lin_a, moved_a), (lin_b, moved_b) = ends
    turn_a = np.einsum("kij,klj->kil", R2[a], R1[a])  # R2 R1^T: each body's turn over the step
    turn_b = np.einsum("kij,klj->kil", R2[b], R1[b])
    across = np.cross(np.einsum("kij,kj->ki", R2[a], edge_a[sel]), np.einsum("kij,kj->ki", R2[b], edge_b[sel]))
    size = np.linalg.norm(across, axis=1)
    across *= (np.where(np.einsum("ki,ki->k", across, n) < 0, -1.0, 1.0) / np.maximum(size, 1e-300))[:, None]
    across = np.where((size > PARALLEL)[:, None], across, n)  # edges turned parallel: the normal kept
    n2 = np.where((owner == FACE_A)[:, None], np.einsum("kij,kj->ki", turn_a, n),
                  np.where((owner == FACE_B)[:, None], np.einsum("kij,kj->ki", turn_b, n), across))
    out[sel] = np.einsum("ki,ki->k", n2, moved_b - moved_a) - np.einsum("ki,ki->k", n, lin_b - lin_a)
    return out


def _contacts_native(model: MaximalModel, state: MaximalState, native: NativeRows,
                     dt: float) -> tuple[ContactRows, PackedPairs, np.ndarray]:
    """_contacts in C (native/contact_rows.c: the knot's frames and margin, then the rows of the query's
    contacts), with the contact rows packed for the C step and their keys (Inequalities.key)."""
    origin, margin = native.knot(state.x, state.q, state.v, state.w, dt)
    found = model.collision.detect(origin, state.q, margin)
    r = native.rows(found, dt, state.interior.predicted)
    m = len(r.kind)
    contacts = ContactRows(r.a, r.b, r.key, found.normal, found.distance, found.friction, r.Ja, r.Jb, r.kind, r.owner,
                           r.members, r.member_patch, r.B, r.curvature, found)
    zeros = np.zeros(m)
    return contacts, PackedPairs(r.kind, r.row_a, r.row_b, np.full(m, -1, dtype=np.int64), r.G, r.h0, zeros, zeros,
                                 r.weight, r.s_cold, r.e_row, r.e_col, r.e_val), r.row_key


def _patches(rubbing: np.ndarray, key: np.ndarray, normal: np.ndarray, Ja: np.ndarray, Jb: np.ndarray,
             centre: np.ndarray, a: np.ndarray, b: np.ndarray,
             R1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows: gamma of every contact, then per patch (the rubbing contacts of one collider pair, patches
    in the order of their keys) psi and its pyramid. One pyramid per patch, not per point: the
    tangential velocities of a patch's points have rank 3 (two slips and the spin about the normal), so
    per-point pyramids (4 corners: 16 rows) made the sticking multipliers non-unique and the Newton
    matrix reach condition ~1e21 (dominoes). Directions +-t1, +-t2 about the patch's mean normal act at
    the mean of the witness points (the point Jacobian is linear in the point, so exactly the mean of
    the points' Jacobians); a patch of several points adds +-spin, h = r n . (w_B - w_A) with r the
    mean distance of its points from their centroid (`centre`: the midpoints of the witness points), a
    torque r beta about n. Cone: mu sum(patch gamma) >= sum beta (translation up to mu N, spin up to
    mu N r). All patches at once (no per-pair Python). Returns kind, owner, members, member_patch and
    B (see ContactRows)."""
    k = len(key)
    world = len(R1) - 1
    keys, inverse = np.unique(key[rubbing], return_inverse=True)
    if not len(keys):
        none = np.zeros(0, dtype=np.int64)
        return np.zeros(k, dtype=np.int64), np.arange(k), none, none, np.zeros((0, 12))
    order = np.argsort(inverse, kind="stable")
    members, member_patch = rubbing[order], inverse[order]
    count = np.bincount(member_patch, minlength=len(keys))
    start = np.cumsum(count) - count

    def patch_mean(values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values[members], start, axis=0) / count.reshape((-1,) + (1,) * (values.ndim - 1))

    n = patch_mean(normal)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    Jrel = np.concatenate([-patch_mean(Ja), patch_mean(Jb)], axis=2)  # (P, 3, 12)
    B = np.zeros((len(keys), 6, 12))
    B[:, :4] = tangents(n) @ Jrel
    spread = np.linalg.norm(centre[members] - patch_mean(centre)[member_patch], axis=1)
    r = np.add.reduceat(spread, start) / count
    spins = (count > 1) & (r > 0.0)
    first = members[start]
    for side, body, sign in ((slice(3, 6), a[first], -1.0), (slice(9, 12), b[first], 1.0)):
        on_body = (sign * r * (body < world))[:, None]
        B[:, 4, side] = on_body * np.einsum("pi,pij->pj", n, R1[body])
    B[:, 5] = -B[:, 4]
    rows = np.ones((len(keys), 6), bool)
    rows[:, 4:] = spins[:, None]
    per_patch = 1 + np.count_nonzero(rows, axis=1)  # cone row + directions
    kind = np.full(k + int(np.sum(per_patch)), 2, dtype=np.int64)
    kind[:k] = 0
    kind[k + np.cumsum(per_patch) - per_patch] = 1
    owner = np.concatenate([np.arange(k), np.repeat(first, per_patch)])
    return kind, owner, members, member_patch, B[rows]


def _limits(model: MaximalModel, state: MaximalState, coordinates: tuple[np.ndarray, np.ndarray] | None,
            dt: float) -> LimitRows:
    """The limits within reach of the step: per limited coordinate (model order) its lower, then its
    upper bound, when finite and nearer than twice the coordinate's travel in a step plus a margin."""
    if not len(model.limited):
        none = np.zeros(0, dtype=np.int64)
        return LimitRows(none, np.zeros(0), np.zeros(0), none, none, np.zeros((0, 12)))
    js, fs = model.joints, model.forces
    cval, cjac = coordinates
    limited = model.limited
    theta = cval[limited][:, None]
    reach = (2.0 * dt * np.abs(state.coord_rate[limited]) + 0.05)[:, None]
    bounds = np.stack([js.lower[limited], js.upper[limited]], axis=1)  # (l, 2): lower side first
    sides = np.array([1.0, -1.0])
    near = np.isfinite(bounds) & (sides * (theta - bounds) < reach + 0.05 * np.abs(bounds - theta) + 0.1)
    coord = np.repeat(limited, 2)[near.ravel()].astype(np.int64)
    side = np.broadcast_to(sides, bounds.shape)[near]
    return LimitRows(coord, side, bounds[near], fs.coord_a[coord], fs.coord_b[coord], side[:, None] * cjac[coord])


# ---- rows at one Newton iterate ----------------------------------------------------------------
def extend(model: MaximalModel, state: MaximalState, ev: Evaluation, V: np.ndarray, dt: float) -> None:
    """Append the pairs' rows to the evaluation at velocities V (B, 6): body forces, bordered rows,
    E block, residual h (ev.ip_h)."""
    nb = model.bodies.count
    ip = state.interior
    rows = ip.rows
    m = len(rows.kind)
    if m == 0:
        ev.ip_h = np.zeros(0)
        return
    Ve = np.vstack([V, np.zeros((1, 6))])
    a_rows = np.empty(m, dtype=np.int64)
    b_rows = np.empty(m, dtype=np.int64)
    G = np.zeros((m, 12))
    C = np.zeros((m, 12))
    h = np.empty(m)
    lam, s = ip.lam, ip.s
    diagonal = np.arange(m)
    E_parts = [(diagonal, diagonal, -s / lam)]  # (row, column, value) triplets of E
    nc = len(rows.contacts.kind)
    if nc:
        E_parts += _contact_rows(ip, Ve, dt, a_rows[:nc], b_rows[:nc], G[:nc], C[:nc], h[:nc])
    lim = rows.limits
    if len(lim.coord):
        sl = slice(nc, m)
        a_rows[sl], b_rows[sl] = lim.a, lim.b
        theta2 = ev.cval2[lim.coord]
        h[sl] = lim.side * (theta2 - lim.bound) / dt
        G[sl] = -lim.G
        C[sl] = -lim.side[:, None] * ev.cjac2_velocity[lim.coord]
    ev.body_residual = ev.body_residual + scatter(nb, a_rows, b_rows, G * lam[:, None])
    joint_rows = ev.matrix.rows
    na = np.where(a_rows < nb, a_rows, -1)
    nbb = np.where(b_rows < nb, b_rows, -1)
    ev.matrix.rows = RowBlocks(np.concatenate([joint_rows.a, na]), np.concatenate([joint_rows.b, nbb]),
                               np.vstack([joint_rows.Ga, G[:, :6]]), np.vstack([joint_rows.Gb, G[:, 6:]]),
                               np.vstack([joint_rows.Ca, C[:, :6]]), np.vstack([joint_rows.Cb, C[:, 6:]]))
    k0 = ev.matrix.E.shape[0]  # the joints' auxiliary rows, whose block of E is zero
    e_row, e_col, e_val = (np.concatenate(part) for part in zip(*E_parts))
    ev.matrix.E = scipy.sparse.csr_matrix((e_val, (e_row + k0, e_col + k0)), shape=(k0 + m, k0 + m))
    ev.ip_h = h


def _contact_rows(ip: InteriorPointState, Ve: np.ndarray, dt: float, a_rows: np.ndarray, b_rows: np.ndarray,
                  G: np.ndarray, C: np.ndarray, h: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Fill the contacts' rows (views of extend's arrays) at the velocities Ve (B+1, 6); return their
    entries of E as (row, column, value) triplets: each cone row reads its patch's gamma and beta, each
    beta row its cone's psi."""
    c = ip.rows.contacts
    owner, kind = c.owner, c.kind
    a, b = c.a[owner], c.b[owner]
    a_rows[:], b_rows[:] = a, b
    gap = kind == 0
    g = owner[gap]
    G[:] = _contact_force_side(c)
    C[:] = G
    h[gap] = (c.distance[g] + c.curvature[g]) / dt - (np.einsum("kj,kj->k", G[gap, :6], Ve[a[gap]])
                                   + np.einsum("kj,kj->k", G[gap, 6:], Ve[b[gap]]))
    cone = np.nonzero(kind == 1)[0]
    fric = np.nonzero(kind == 2)[0]
    if not len(cone):
        return []
    members = c.members  # gamma row i is contact i
    patch = np.cumsum(kind == 1)[fric] - 1
    cone_row = cone[patch]
    beta_sum = np.bincount(patch, weights=ip.lam[fric], minlength=len(cone))
    gamma_sum = np.bincount(c.member_patch, weights=c.friction[members] * ip.lam[members], minlength=len(cone))
    h[cone] = gamma_sum - beta_sum
    fo = owner[fric]
    vrel = np.einsum("fk,fk->f", c.B[:, :6], Ve[c.a[fo]]) + np.einsum("fk,fk->f", c.B[:, 6:], Ve[c.b[fo]])
    h[fric] = vrel + ip.lam[cone_row]
    return _cone_entries(c)


def _contact_force_side(c: ContactRows) -> np.ndarray:
    """Force sides G (rows, 12) of the contacts' rows over (body A, body B), fixed for the step; each
    row's velocity side is the same: n . (J_A, -J_B) on a gap, zero on a cone row, -B on a direction."""
    G = np.zeros((len(c.kind), 12))
    gap = c.kind == 0
    g = c.owner[gap]
    G[gap, :6] = np.einsum("ki,kij->kj", c.normal[g], c.Ja[g])
    G[gap, 6:] = -np.einsum("ki,kij->kj", c.normal[g], c.Jb[g])
    G[c.kind == 2] = -c.B
    return G


def _cone_entries(c: ContactRows) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The contacts' off-diagonal entries of E as (row, column, value) triplets: each cone row reads its
    patch's gamma (-mu) and beta (+1), each beta row its cone's psi (-1)."""
    cone = np.nonzero(c.kind == 1)[0]
    fric = np.nonzero(c.kind == 2)[0]
    if not len(cone):
        return []
    cone_row = cone[np.cumsum(c.kind == 1)[fric] - 1]
    ones = np.ones(len(fric))
    return [(cone[c.member_patch], c.members, -c.friction[c.members]), (cone_row, fric, ones), (fric, cone_row, -ones)]


# ---- step control (Mehrotra predictor-corrector) -------------------------------------------------
def rhs(state: MaximalState, h: np.ndarray, target: np.ndarray | float) -> np.ndarray:
    """The pairs' part of the Newton right-hand side (the bordered rows' right side) for target t: h - t / lam."""
    return h - target / state.interior.lam


def _slack_step(ip: InteriorPointState, dlam: np.ndarray, target: np.ndarray | float) -> np.ndarray:
    """ds from the linearised lam s = t."""
    return (target - ip.s * dlam) / ip.lam - ip.s


def _boundary(ip: InteriorPointState, dlam: np.ndarray, ds: np.ndarray, tau: float) -> float:
    alpha = 1.0
    for value, change in ((ip.lam, dlam), (ip.s, ds)):
        neg = change < 0
        if np.any(neg):
            alpha = min(alpha, tau * float(np.min(-value[neg] / change[neg])))
    return alpha


def corrector_target(state: MaximalState, dlam_aff: np.ndarray) -> np.ndarray | float:
    """Target t = sigma mu - dlam_aff ds_aff of the corrector from the affine direction (t = 0)."""
    ip = state.interior
    if len(ip.lam) == 0:
        return np.zeros(0)
    if ip.monotone:  # Fiacco-McCormick after a stall: mu fixed until the pairs are centred
        ls = ip.lam * ip.s
        if np.max(np.abs(ls - ip.mu_fixed)) <= CENTRED * ip.mu_fixed:
            ip.mu_fixed = max(MU_FLOOR, MU_DECREASE * ip.mu_fixed)
        return np.full(len(ip.lam), ip.mu_fixed)
    ds_aff = _slack_step(ip, dlam_aff, 0.0)
    alpha = _boundary(ip, dlam_aff, ds_aff, 1.0)
    mu = float(np.mean(ip.lam * ip.s))
    mu_aff = float(np.mean((ip.lam + alpha * dlam_aff) * (ip.s + alpha * ds_aff)))
    sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
    return max(sigma * mu, MU_FLOOR) - dlam_aff * ds_aff


def step_length(state: MaximalState, dlam: np.ndarray, target: np.ndarray | float) -> tuple[float, np.ndarray]:
    """Largest step in (0, 1] keeping lam and s positive (fraction to the boundary), and ds."""
    if len(dlam) == 0:
        return 1.0, dlam
    ip = state.interior
    ds = _slack_step(ip, dlam, target)
    alpha = _boundary(ip, dlam, ds, min(max(TAU_MIN, 1.0 - ip.mu), TAU_MAX))
    for _ in range(NEIGHBOURHOOD_HALVINGS):  # stay in the wide neighbourhood min lam s >= c mean lam s
        ls = (ip.lam + alpha * dlam) * (ip.s + alpha * ds)
        if np.min(ls) >= NEIGHBOURHOOD * np.mean(ls):
            break
        alpha *= 0.5
    return alpha, ds


def update(state: MaximalState, alpha: float, dlam: np.ndarray, ds: np.ndarray) -> None:
    """Move lam and s by alpha (dlam, ds), kept positive, and mu with them."""
    if len(dlam) == 0:
        return
    ip = state.interior
    ip.lam = np.maximum(ip.lam + alpha * dlam, 1e-300)
    ip.s = np.maximum(ip.s + alpha * ds, 1e-300)
    ip.mu = float(np.mean(ip.lam * ip.s))


def converged(model: MaximalModel, state: MaximalState, h: np.ndarray, tol: float) -> bool:
    """Every lam s below COMPLEMENTARITY and every primal residual h - s within tol (in metres)."""
    ip = state.interior
    rows = ip.rows
    if len(ip.lam) == 0:
        return True
    if float(np.max(ip.lam * ip.s)) > COMPLEMENTARITY:
        return False
    return float(np.max(_weights(model, rows) * np.abs(h - ip.s))) <= tol


def _weights(model: MaximalModel, rows: Inequalities) -> np.ndarray:
    """What turns each pair's primal residual h - s into the units of tol (m, as the joint rows):
    velocity-level pairs times dt; cone rows (N) times dt^2 / m of the lighter body (how far that force
    error moves it in a step)."""
    weight = np.full(len(rows.kind), rows.dt)
    cone = np.nonzero(rows.kind == 1)[0]
    if len(cone):
        mass = np.append(model.bodies.mass, np.inf)
        c = rows.contacts
        lighter = np.minimum(mass[c.a[rows.owner[cone]]], mass[c.b[rows.owner[cone]]])
        weight[cone] = rows.dt * rows.dt / lighter
    return weight


@dataclass(frozen=True)
class PackedPairs:
    """This step's pairs as plain arrays (symplex_kernels.h symplex_maximal_pairs), rows as in
    Inequalities: kind, bodies a, b (B: the world), limit coordinate (-1: a contact), force side G
    (m, 12), h0 (a gap's distance / dt), limit side and bound, weight (_weights), cold slacks, and E's
    off-diagonal entries (row, column, value)."""

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    coord: np.ndarray
    G: np.ndarray
    h0: np.ndarray
    side: np.ndarray
    bound: np.ndarray
    weight: np.ndarray
    s_cold: np.ndarray
    e_row: np.ndarray
    e_col: np.ndarray
    e_val: np.ndarray


def packed(model: MaximalModel, state: MaximalState) -> PackedPairs:
    """The rows `begin` set up, for a kernel that evaluates them itself (native_step.py)."""
    rows = state.interior.rows
    c = rows.contacts
    nc = len(c.kind)
    owner = c.owner
    gap = c.kind == 0
    h0 = np.zeros(nc)
    h0[gap] = (c.distance[owner[gap]] + c.curvature[owner[gap]]) / rows.dt
    entries = _cone_entries(c)
    e_row, e_col, e_val = (np.concatenate(part) for part in zip(*entries)) if entries else \
        (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    zeros = np.zeros(nc)
    contact_part = PackedPairs(c.kind, c.a[owner], c.b[owner], np.full(nc, -1), _contact_force_side(c), h0, zeros,
                               zeros, _weights(model, rows)[:nc], _cold_slack(rows)[:nc], e_row, e_col, e_val)
    return _with_limits(contact_part, rows)


def _with_limits(contacts: PackedPairs, rows: Inequalities) -> PackedPairs:
    """The packed contact rows followed by the limit rows of `rows` (weight dt, cold slack 1)."""
    lim = rows.limits
    nl = len(lim.coord)
    if not nl:
        return contacts
    return replace(contacts, kind=rows.kind, a=np.concatenate([contacts.a, lim.a]),
                   b=np.concatenate([contacts.b, lim.b]),
                   coord=np.concatenate([contacts.coord, lim.coord]), G=np.concatenate([contacts.G, -lim.G]),
                   h0=np.concatenate([contacts.h0, np.zeros(nl)]), side=np.concatenate([contacts.side, lim.side]),
                   bound=np.concatenate([contacts.bound, lim.bound]),
                   weight=np.concatenate([contacts.weight, np.full(nl, rows.dt)]),
                   s_cold=np.concatenate([contacts.s_cold, np.ones(nl)]))

"""Inverse kinematics and loop projection of a mechanism shot, batched over many configurations.

Owns the two searches behind a fully driven mechanism shot's keyed start path (mechanism_shots.keyed_coordinates):
`close_loops_batch` projects K configurations onto the loop constraints h(q) = 0 at once, and
`inverse_kinematics` runs damped least squares from many starts at once, every iterate projected back onto
the loops. Each configuration (a "lane") follows exactly the per-configuration algorithm (the same
Gauss-Newton projection as tree/assembly.close_loops, the same damped steps, stops and limits); the lanes
share one evaluation of the kinematics (shots/tree_batch.py) per round, each at its own stage of its
own search, so a lane whose projection takes 100 steps does not hold the others back. Results equal
the one-at-a-time loop to round-off (tests/solver/shots/test_keyed_start.py).
"""

from __future__ import annotations

import numpy as np

from ..lie import cross
from ..tree.compile import TreeModel
from .spec import MechanismKey
from .tree_batch import BatchKinematics, forward_batch, loops_batch

CLOSED = 1e-12  # largest |h| of a closed configuration (tree/assembly.close_loops' default tol)
PROJECTION_STEPS = 100  # Gauss-Newton steps before a projection gives up (close_loops' default)
MET = 1e-12  # largest key residual at which the inverse kinematics stops
STILL = 1e-12  # an iterate that moves less than this is the closest approach of an unreachable key
DAMPING = 1e-6  # damped least squares (damping 1e-3, squared): (J P J^T + DAMPING I)^-1
NULL_RCOND = 1e-9  # relative singular value below which a loop row direction counts as free (scipy null_space)

KeyRows = tuple[tuple[MechanismKey, np.ndarray], ...]  # a key and its keyed axes (indices 0..2)

_START, _STEP, _DONE, _DROPPED = 0, 1, 2, 3  # lane states in inverse_kinematics


def _loops(model: TreeModel, kin: BatchKinematics, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Every loop row h (K, nrow) and its Jacobian Dh (K, nrow, nq); empty on a tree."""
    if not model.nrow:
        return np.zeros((K, 0)), np.zeros((K, 0, model.nq))
    return loops_batch(model, kin, np.arange(model.nrow))


def _gauss_newton_steps(Dh: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Minimum-norm least-squares steps -Dh^+ h (K, nq) by SVD, singular values at or below
    eps max(nrow, nq) times the largest treated as zero (numpy.linalg.lstsq's default cutoff)."""
    U, s, Vt = np.linalg.svd(Dh, full_matrices=False)
    keep = s > np.finfo(float).eps * max(Dh.shape[1:]) * s[:, :1]
    coefficient = np.where(keep, -np.einsum("kij,ki->kj", U, h) / np.where(keep, s, 1.0), 0.0)
    return np.einsum("kji,kj->ki", Vt, coefficient)


def close_loops_batch(model: TreeModel, Q: np.ndarray, charts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Configurations Q (K, nq) projected onto h(q) = 0 by Gauss-Newton with minimum-norm steps over every
    coordinate (so each lands near its q), as tree/assembly.close_loops one at a time. Returns (closed
    configurations (K, nq), whether each closed to CLOSED within PROJECTION_STEPS steps); Q itself on a tree."""
    Q = np.array(Q, dtype=float)
    ok = np.zeros(len(Q), dtype=bool)
    if not model.nrow:
        return Q, ~ok
    active, steps = np.arange(len(Q)), 0
    while len(active):
        h, Dh = _loops(model, forward_batch(model, Q[active], charts), len(active))
        closed = np.max(np.abs(h), axis=1) <= CLOSED
        ok[active[closed]] = True
        active, h, Dh = active[~closed], h[~closed], Dh[~closed]
        if steps == PROJECTION_STEPS or not len(active):
            break
        Q[active] += _gauss_newton_steps(Dh, h)
        steps += 1
    return Q, ok


def key_values_batch(model: TreeModel, kin: BatchKinematics, Q: np.ndarray,
                     keys: KeyRows) -> tuple[np.ndarray, np.ndarray]:
    """Residuals r (K, rows) of `keys` (all at one frame) at configurations Q (K, nq) with kin =
    forward_batch(model, Q, ...), and dr/dq (K, rows, nq): mechanism_shots._key_values at K configurations."""
    K, nq = Q.shape
    out, jac = [], []
    for key, axes in keys:
        if key.coordinate is not None:
            i = model.coordinate_names.index(key.coordinate)
            out.append(Q[:, i: i + 1] - key.value)
            row = np.zeros((K, 1, nq))
            row[:, 0, i] = 1.0
            jac.append(row)
            continue
        b = model.body_names.index(key.body)
        placed = kin.world[:, model.body_frame[b]] @ model.body_offset[b]
        point = placed[:, :3, 3] + placed[:, :3, :3] @ np.asarray(key.point, float)
        out.append((point - np.asarray(key.position))[:, axes])
        moves = model.ancestor[model.body_frame[b]]  # (nq,)
        d = (cross(kin.S[..., :3], point[:, None]) + kin.S[..., 3:]) * moves[:, None]  # (K, nq, 3)
        jac.append(np.swapaxes(d, 1, 2)[:, axes])
    return np.concatenate(out, axis=1), np.concatenate(jac, axis=1)


def _tangent_projectors(Dh: np.ndarray, nq: int) -> np.ndarray:
    """Orthogonal projectors (K, nq, nq) onto the motions keeping the loops closed to first order: the null
    space of each Dh (K, nrow, nq) with scipy.linalg.null_space's cutoff NULL_RCOND; I on a tree."""
    if not Dh.shape[1]:
        return np.broadcast_to(np.eye(nq), (len(Dh), nq, nq))
    _, s, Vt = np.linalg.svd(Dh, full_matrices=True)
    rank = np.sum(s > NULL_RCOND * np.max(s, axis=1, initial=0.0)[:, None], axis=1)
    free = np.arange(nq)[None, :] >= rank[:, None]  # (K, nq): rows of Vt spanning the null space
    N = Vt * free[:, :, None]
    return np.swapaxes(N, 1, 2) @ N


def _damped_steps(J: np.ndarray, P: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Damped least-squares steps -P J^T (J P J^T + DAMPING I)^-1 r (K, nq) within the projectors P, and
    whether each system could be solved (a singular one: keys so far away that the damping vanishes)."""
    JP = J @ P
    A = JP @ np.swapaxes(J, 1, 2) + DAMPING * np.eye(J.shape[1])
    ok = np.ones(len(r), dtype=bool)
    try:
        y = np.linalg.solve(A, r[..., None])[..., 0]
    except np.linalg.LinAlgError:
        y = np.zeros_like(r)
        for i in range(len(r)):
            try:
                y[i] = np.linalg.solve(A[i], r[i])
            except np.linalg.LinAlgError:
                ok[i] = False
    return -np.einsum("kri,kr->ki", JP, y), ok


def inverse_kinematics(model: TreeModel, charts: np.ndarray, keys: KeyRows, starts: np.ndarray,
                       iterations: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Damped least squares on `keys` (all at one frame) from every start (S, nq), each within the joint
    limits and on the loops: a start is first projected onto h(q) = 0 (dropped if that fails), then each
    step, taken in the loops' tangent space and clipped to the limits, is projected back. A lane stops when
    its keys are met to MET, its step moved it less than STILL (the closest approach of an unreachable key),
    its damped system is singular, a projection fails (it keeps its last closed iterate) or after
    `iterations` steps. Returns (final iterates (S, nq), which starts closed at all)."""
    S, nq = starts.shape
    lower, upper = model.dof_lower, model.dof_upper
    current = np.array(starts, dtype=float)  # the configuration each lane evaluates next
    accepted = current.copy()  # each lane's last closed iterate
    projection = np.zeros(S, dtype=int)  # Gauss-Newton steps spent on `current`
    steps = np.zeros(S, dtype=int)  # damped least-squares steps taken
    state = np.full(S, _START)
    while True:
        lanes = np.flatnonzero(state <= _STEP)
        if not len(lanes):
            break
        Q = current[lanes]
        kin = forward_batch(model, Q, charts)
        h, Dh = _loops(model, kin, len(lanes))
        closed = np.max(np.abs(h), axis=1, initial=0.0) <= CLOSED
        failed = ~closed & (projection[lanes] == PROJECTION_STEPS)
        state[lanes[failed]] = np.where(state[lanes[failed]] == _START, _DROPPED, _DONE)
        project = ~closed & ~failed
        current[lanes[project]] += _gauss_newton_steps(Dh[project], h[project])
        projection[lanes[project]] += 1

        moved = np.max(np.abs(Q - accepted[lanes]), axis=1)
        accepted[lanes[closed]] = Q[closed]
        stop = closed & (((state[lanes] == _STEP) & (moved < STILL)) | (steps[lanes] == iterations))
        state[lanes[stop]] = _DONE
        go = closed & ~stop
        if not np.any(go):
            continue
        r, J = key_values_batch(model, kin, Q, keys)
        r, J = r[go], J[go]
        met = np.max(np.abs(r), axis=1) < MET
        step, solved = _damped_steps(J, _tangent_projectors(Dh[go], nq), r)
        ended = lanes[go][met | ~solved]
        state[ended] = _DONE
        moving = ~met & solved
        going = lanes[go][moving]
        current[going] = np.clip(accepted[going] + step[moving], lower, upper)
        projection[going] = 0
        steps[going] += 1
        state[going] = _STEP
    return accepted, state != _DROPPED

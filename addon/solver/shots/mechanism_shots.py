"""Optimal-control shots of tree mechanisms: the transcription of a MechanismShot and its solve.

A shot drives chosen joints of a Mechanism (cart force, crane trolley, arm motors) so that keyed
coordinates or body points are met at keyed frames, joint limits and torque bounds hold, and the
effort sum_k dt |u_k|^2 (plus an optional joint-speed cost, MechanismShot.speed) is least (seed 001 §6,
DMOC; trep's discrete optimiser is the model). The
dynamics are the equality rows of shots/tree_dynamics.py; the program is solved by shots/nlp.py
with the exact Hessian of the Lagrangian (shots/tree_hessian.py's formulas), rows, Jacobian and Hessian
evaluated for all steps at once by programs compiled once per model and run in C (shots/tree_program.py; without
the C kernels tree_batch.py and first-order jets on a tape), its Jacobian and Hessian as values on fixed
patterns (compiled: one sparse map of the programs' outputs per pass, shots/tree_evaluation.py) and its
variables' stages for the KKT factor. The solved torques replay through the plain simulator as
keyed joint torques (`torque_mechanism`).

The shot description (MechanismShot) is data in spec.py; its file form is read by shotfile.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..integrator import simulate
from ..model import Mechanism, Motor
from ..trajectory import Trajectory
from ..tree import constraints
from ..tree.compile import TreeModel, compile_tree
from ..tree.dynamics import terms
from ..tree.kinematics import body_poses_batch, forward
from .keyed_start import close_loops_batch, inverse_kinematics, key_values_batch
from .nlp import NLP, FixedPattern, solve
from .spec import Control, MechanismKey, MechanismShot, Progress, Shot, ShotError, ShotResult
from .transcription import SparsityPattern
from .tree_batch import forward_batch
from .tree_dynamics import Blocks, TreeTranscription, all_triplets, assemble_blocks, intervals, transcribe_tree
from .tree_evaluation import TreeEvaluation
from .tree_hessian import TAPE_TERMS, TapeTerms, hessian_blocks
from .tree_program import PointProgram, TreeProgram, cached, compiled, point_program, tree_program

AXES = "xyz"
_EVALUATIONS: dict = {}  # MechanismShot -> its TreeEvaluation (the maps, built on its first compiled solve)


# ---------------------------------------------------------------------------------------------------
# Problem


@dataclass(frozen=True)
class _Problem:
    shot: MechanismShot
    model: TreeModel
    tx: TreeTranscription
    key_rows: tuple[tuple[MechanismKey, np.ndarray], ...]  # key and its keyed axes (indices 0..2)


def _coordinate_index(model: TreeModel, name: str, where: str) -> int:
    if name not in model.coordinate_names:
        raise ShotError(f"{where}: no coordinate named {name!r} (coordinates: {', '.join(model.coordinate_names)})")
    return model.coordinate_names.index(name)


def _problem(shot: MechanismShot) -> _Problem:
    where = f"{shot.source}: shot {shot.name!r}"
    if not 0.0 <= shot.speed < np.inf:  # NaN fails too
        raise ShotError(f"{where}: field 'speed' (joint-speed cost weight) must be a number >= 0, got {shot.speed!r}")
    model = compile_tree(shot.mechanism)
    actuated = []
    for c in shot.controls:
        try:
            joint = shot.mechanism.joint(c.joint)
        except KeyError:
            raise ShotError(f"{where}: [[control]] {c.joint!r}: no joint of that name in "
                            f"{shot.mechanism.name!r}") from None
        if joint.ndof != 1:
            raise ShotError(f"{where}: [[control]] {c.joint!r}: a control needs a single-dof joint "
                            f"(revolute or prismatic), got {joint.type}")
        if joint.motor is not None:
            raise ShotError(f"{where}: [[control]] {c.joint!r}: the joint already has a motor; remove it")
        if not c.lower <= c.upper:  # NaN fails too
            raise ShotError(f"{where}: [[control]] {c.joint!r}: fields 'lower' and 'upper' must be numbers with "
                            f"lower <= upper, got {c.lower!r}, {c.upper!r}")
        actuated.append(_coordinate_index(model, c.joint, where))
    key_rows = []
    for key in shot.keys:
        kw = f"{where}: [[key]] {key.name!r}"
        if not 1 <= key.frame <= shot.steps:
            raise ShotError(f"{kw}: field 'frame' must be within 1..{shot.steps}, got {key.frame}")
        if key.coordinate is not None:
            _coordinate_index(model, key.coordinate, kw)
            key_rows.append((key, np.zeros(0, dtype=np.int64)))
        else:
            if key.body not in model.body_names:
                raise ShotError(f"{kw}: field 'body': no body named {key.body!r}")
            axes = [AXES.index(a) for a in key.components if a in AXES]
            if not axes or len(set(axes)) != len(key.components):
                raise ShotError(f"{kw}: field 'components' must be letters of 'xyz', got {key.components!r}")
            key_rows.append((key, np.array(sorted(set(axes)))))
    tx = transcribe_tree(model, shot.dt, shot.steps, np.array(actuated), shot.rest_at_end, where)
    return _Problem(shot, model, tx, tuple(key_rows))


def _body_key_points(P: _Problem) -> list[tuple[int, np.ndarray]]:
    """(frame, keyed point in the frame's axes) of each body-point key, in key order."""
    out = []
    for key, _ in P.key_rows:
        if key.coordinate is None:
            b = P.model.body_names.index(key.body)
            placed = P.model.body_offset[b]
            out.append((int(P.model.body_frame[b]), placed[:3, 3] + placed[:3, :3] @ np.asarray(key.point, float)))
    return out


def _body_points_numpy(P: _Problem, Q: np.ndarray, jacobian: bool) -> tuple[list, list]:
    """World position (3,) of each body-point key's point at its frame and (jacobian) its derivative (3, nq), by
    forward kinematics per key (the reference of tree_program.PointProgram)."""
    model = P.model
    positions, derivatives = [], []
    for key, _ in P.key_rows:
        if key.coordinate is not None:
            continue
        kin = forward(model, Q[key.frame], P.tx.charts)
        b = model.body_names.index(key.body)
        point = kin.body_origin[b] + kin.body_R[b] @ np.asarray(key.point)
        positions.append(point)
        if jacobian:
            S = kin.axis_world[: model.nq]
            moves = model.ancestor[model.body_frame[b]]  # (nq,)
            derivatives.append(((np.cross(S[:, :3], point) + S[:, 3:]) * moves[:, None]).T)  # point velocity per q
    return positions, derivatives


def _body_points_compiled(P: _Problem, program: PointProgram, Q: np.ndarray, jacobian: bool) -> tuple[list, list]:
    """_body_points_numpy by the keys' PointProgram: one instance per key at its frame, its own point taken."""
    frames = [key.frame for key, _ in P.key_rows if key.coordinate is None]
    positions, derivatives, _ = program.run(Q[frames], hessian=jacobian)
    own = np.arange(len(frames))
    return list(positions[own, own]), (list(derivatives[own, own]) if jacobian else [])


def _evaluators(P: _Problem) -> tuple[TreeProgram | TapeTerms, PointProgram | None]:
    """The shot's rows, Jacobian and Hessian terms and its body-point keys' program: compiled programs run in C
    when tree_program.compiled (the body keys' program None without body keys), else tree_batch.py and the tape
    (TapeTerms) with per-key forward kinematics (None)."""
    if not compiled(P.model):
        return TAPE_TERMS, None
    points = _body_key_points(P)
    return tree_program(P.model, P.tx.rows), (point_program(P.model, points) if points else None)


def _key_values(P: _Problem, Q: np.ndarray, jacobian: bool,
                program: PointProgram | None = None) -> tuple[np.ndarray, list]:
    """Key residuals (stacked) and per key (frame, d residual / d q_frame); body points by `program` when given."""
    out, jac = [], []
    model = P.model
    positions, derivatives = (_body_points_numpy(P, Q, jacobian) if program is None
                              else _body_points_compiled(P, program, Q, jacobian))
    body = 0
    for key, axes in P.key_rows:
        q = Q[key.frame]
        if key.coordinate is not None:
            i = model.coordinate_names.index(key.coordinate)
            out.append(np.array([q[i] - key.value]))
            if jacobian:
                row = np.zeros((1, model.nq))
                row[0, i] = 1.0
                jac.append(row)
            continue
        out.append((positions[body] - np.asarray(key.position))[axes])
        if jacobian:
            jac.append(derivatives[body][axes])
        body += 1
    return (np.concatenate(out) if out else np.zeros(0)), jac


def _speed_cost(P: _Problem) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix | None]:
    """The joint-speed cost speed / dt |D x + offset|^2 (MechanismShot.speed): D x + offset stacks the steps
    q_k+1 - q_k (q_0 fixed, in offset); returns D, offset and the cost's constant Hessian 2 speed / dt D^T D
    (None without the cost, so the Hessian's pattern is unchanged)."""
    tx = P.tx
    N, nq = tx.steps, tx.nq
    cols = np.concatenate([np.arange(tx.q_slice(k + 1).start, tx.q_slice(k + 1).stop) for k in range(N)])
    rows = np.arange(N * nq)
    D = sp.csr_matrix((np.ones(N * nq), (rows, cols)), shape=(N * nq, tx.n))
    D = D - sp.csr_matrix((np.ones((N - 1) * nq), (rows[nq:], cols[:-nq])), shape=(N * nq, tx.n))
    offset = np.zeros(N * nq)
    offset[:nq] = -tx.q0
    return D.tocsr(), offset, ((2.0 * P.shot.speed / tx.dt) * (D.T @ D)).tocsr() if P.shot.speed else None


def _nlp(P: _Problem) -> NLP:
    tx, shot = P.tx, P.shot
    N, nq, nu = tx.steps, tx.nq, tx.nu
    scale = np.array([max(abs(c.lower), abs(c.upper)) if np.isfinite(c.lower) and np.isfinite(c.upper) else 1.0
                      for c in shot.controls])
    weight = np.tile(shot.effort * tx.dt / scale ** 2, N)  # effort: sum dt |u / bound|^2, as spec.Costs
    u_at = slice(N * nq, N * (nq + nu))
    m = tx.m + sum(1 if key.coordinate is not None else len(axes) for key, axes in P.key_rows)
    steps, offset, speed_hessian = _speed_cost(P)
    evaluator, points_program = _evaluators(P)
    key_points = _body_key_points(P)

    def objective(x):
        u = x[u_at]
        if not shot.speed:
            return float(weight @ (u * u))
        dq = steps @ x + offset
        return float(weight @ (u * u)) + shot.speed / tx.dt * float(dq @ dq)

    def gradient(x):
        g = np.zeros(tx.n)
        g[u_at] = 2.0 * weight * x[u_at]
        if shot.speed:
            g += (2.0 * shot.speed / tx.dt) * (steps.T @ (steps @ x + offset))
        return g

    def block_rows(x):
        c, _ = tx.blocks(x, False, evaluator)
        return np.concatenate([c, _key_values(P, tx.unpack(x)[0], False, points_program)[0]])

    def key_blocks(x):
        _, jac = _key_values(P, tx.unpack(x)[0], True, points_program)
        blocks, r0 = [], tx.m
        for (key, _), rows in zip(P.key_rows, jac):
            blocks.append((np.array([r0]), np.array([tx.q_slice(key.frame).start]), np.atleast_2d(rows)[None]))
            r0 += len(rows)
        return blocks

    def jacobian_blocks(x):
        return tx.blocks(x, True, evaluator)[1] + key_blocks(x)

    points = []  # body keys: (step, where their multipliers sit in y, keyed axes)
    r0 = tx.m
    for key, axes in P.key_rows:
        if key.coordinate is None:  # a body point: its position's curvature
            points.append((key.frame, r0, axes))
            r0 += len(axes)
        else:  # a coordinate: linear
            r0 += 1
    u_index = np.arange(u_at.start, u_at.stop)
    speed = sp.coo_matrix((tx.n, tx.n)) if speed_hessian is None else speed_hessian.tocoo()

    def key_weights(y):
        """(body keys, 3): each body key's multipliers on its keyed axes."""
        weights = np.zeros((len(points), 3))
        for i, (_, r, axes) in enumerate(points):
            weights[i, axes] = y[r: r + len(axes)]
        return weights

    def key_hessian_blocks(x, y):
        """The body keys' curvature by their PointProgram (one instance per key at its frame, its own weights)."""
        if not points:
            return []
        steps = np.array([step for step, _, _ in points])
        weights = np.zeros((len(points), len(points), 3))
        weights[np.arange(len(points)), np.arange(len(points))] = key_weights(y)
        _, _, H = points_program.run(tx.unpack(x)[0][steps], weights, hessian=True)
        return [((steps - 1) * nq, (steps - 1) * nq, H)]

    def lagrangian_blocks(x, y, obj_factor):
        """The Hessian of the Lagrangian as groups of dense blocks: the constraints' part exactly (tree_hessian.py,
        the body keys' by their PointProgram when compiled), the effort's diagonal and the joint-speed cost's
        constant Hessian (1 x 1 blocks)."""
        if points_program is None:
            weighted = [(step, frame, local, w) for (step, _, _), (frame, local), w
                        in zip(points, key_points, key_weights(y))]
            constraints_part = hessian_blocks(tx, x, y[: tx.m], weighted, evaluator)
        else:
            constraints_part = hessian_blocks(tx, x, y[: tx.m], (), evaluator) + key_hessian_blocks(x, y)
        return constraints_part + [
            (u_index, u_index, (2.0 * weight * obj_factor)[:, None, None]),
            (speed.row, speed.col, (obj_factor * speed.data)[:, None, None])]

    x0 = tx.pack(np.tile(tx.q0, (N + 1, 1)), np.zeros((N, nu)))
    jac_pattern = SparsityPattern(*all_triplets(jacobian_blocks(x0))[:2], (m, tx.n))
    hess_pattern = SparsityPattern(*all_triplets(lagrangian_blocks(x0, np.zeros(m), 1.0))[:2], (tx.n, tx.n))

    x_lower = np.full(tx.n, -np.inf)
    x_upper = np.full(tx.n, np.inf)
    for k in range(1, N + 1):
        x_lower[tx.q_slice(k)] = P.model.dof_lower
        x_upper[tx.q_slice(k)] = P.model.dof_upper
    for k in range(N):
        x_lower[tx.u_slice(k)] = [c.lower for c in shot.controls]
        x_upper[tx.u_slice(k)] = [c.upper for c in shot.controls]
    if isinstance(evaluator, TreeProgram):  # compiled: rows and values as sparse products of the programs' outputs
        objective_hessian = (np.concatenate([u_index, speed.row]), np.concatenate([u_index, speed.col]),
                             np.concatenate([2.0 * weight, speed.data]))
        body_keys = [(r, step, axes, key.position) for (step, r, axes), key in
                     zip(points, [key for key, _ in P.key_rows if key.coordinate is None])]
        evaluation = cached(_EVALUATIONS, shot, lambda: TreeEvaluation(
            tx, evaluator, points_program, body_keys, _coordinate_keys(P), objective_hessian,
            _csr_pattern(jac_pattern), _csr_pattern(hess_pattern)))
        rows, jacobian, hessian = evaluation.passes()
        jacobian_data = FixedPattern(*_csr_pattern(jac_pattern), jacobian)
        hessian_data = FixedPattern(*_csr_pattern(hess_pattern), hessian)
    else:
        rows = block_rows
        jacobian_data = jac_pattern.fixed(lambda x: _values(jacobian_blocks(x)))
        hessian_data = hess_pattern.fixed(lambda x, y, obj_factor: _values(lagrangian_blocks(x, y, obj_factor)))
    return NLP(x_lower, x_upper, objective, gradient, rows,
               lambda x: jacobian_data.csr(jacobian_data.values(x)), np.zeros(m), np.zeros(m),
               lambda x, y, obj_factor: hessian_data.csr(hessian_data.values(x, y, obj_factor)),
               stages=_stages(tx), jacobian_data=jacobian_data, hessian_data=hessian_data)


def _csr_pattern(pattern: SparsityPattern) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    return pattern.indices, pattern.indptr, pattern.shape


def _coordinate_keys(P: _Problem) -> list[tuple[int, int, int, float]]:
    """(row, frame, coordinate, value) of each coordinate key (its row is q_frame[coordinate] - value)."""
    out, r = [], P.tx.m
    for key, axes in P.key_rows:
        if key.coordinate is not None:
            out.append((r, key.frame, P.model.coordinate_names.index(key.coordinate), key.value))
        r += 1 if key.coordinate is not None else len(axes)
    return out


def _values(blocks: list[Blocks]) -> np.ndarray:
    """The values of all_triplets(blocks) alone (their positions are a fixed pattern's)."""
    return np.concatenate([b[2].ravel() for b in blocks])


def _stages(tx: TreeTranscription) -> np.ndarray:
    """The stage of each unknown for the KKT factorisation (nlp.NLP.stages): q_k, lam_k at stage k, u_k (acting
    on the interval from q_k to q_k+1) at stage k, mu (the rest rows' multipliers) at the last stage N."""
    N, k = tx.steps, np.arange(tx.steps)
    return np.concatenate([np.repeat(k + 1, tx.nq), np.repeat(k, tx.nu), np.repeat(k, tx.nr), np.full(tx.n_rest, N)])


# ---------------------------------------------------------------------------------------------------
# Solve


def initial_guess(P: _Problem, Q: np.ndarray) -> np.ndarray:
    """x for coordinates Q (N+1, nq): torques and loop multipliers by least squares on the dynamics rows
    (they enter linearly: inverse dynamics; exact when every coordinate is driven), torques clipped to
    their bounds."""
    tx, shot = P.tx, P.shot
    x = tx.pack(Q, np.zeros((tx.steps, tx.nu)))
    c, blocks = tx.blocks(x, True, _evaluators(P)[0])
    start = tx.steps * tx.nq
    J = assemble_blocks(blocks, (tx.m, tx.n))[:, start:].toarray()
    x[start:] = np.linalg.lstsq(J, -c, rcond=None)[0]
    lower = np.tile([ctl.lower for ctl in shot.controls], tx.steps)
    upper = np.tile([ctl.upper for ctl in shot.controls], tx.steps)
    u_at = slice(start, start + tx.steps * tx.nu)
    x[u_at] = np.clip(x[u_at], lower, upper)
    return x


def _inverse_kinematics(P: _Problem, frame: int, q: np.ndarray, seeds: int = 24,
                        iterations: int = 100) -> np.ndarray:
    """Coordinates meeting the keys at `frame` within the joint limits, nearest to q among the solutions found
    by damped least squares (damping 1e-3, steps clipped to the limits) from q and from `seeds` fixed
    pseudo-random starts within the limits. Nearest is in the mass-matrix metric at q (least kinetic energy
    for the move: the arm turns its light base rather than swinging its links backwards). Many starts, as
    from a singular pose such as the arm standing upright the base yaw does not move the tool and DLS never
    turns it. On a closed chain every iterate closes the loops: the step is taken in the tangent space of
    h(q) = 0 and projected back onto it. All starts run at once (keyed_start.inverse_kinematics); the first
    of the best (largest key residual, floored at 1e-9, then the metric) wins. The closest approach when no
    start meets the keys; q when no start closes the loops."""
    keys = tuple(kr for kr in P.key_rows if kr[0].frame == frame)
    lower, upper = P.model.dof_lower, P.model.dof_upper
    starts = np.random.default_rng(0).uniform(np.maximum(lower, -np.pi), np.minimum(upper, np.pi),
                                              (seeds, len(q)))
    found, closed = inverse_kinematics(P.model, P.tx.charts, keys, np.vstack([q, starts]), iterations)
    found = found[closed]
    if not len(found):
        return q
    r, _ = key_values_batch(P.model, forward_batch(P.model, found, P.tx.charts), found, keys)
    M = terms(P.model, forward(P.model, q, P.tx.charts), np.zeros_like(q), 0.0).M
    d = found - q
    scores = list(zip(np.maximum(np.max(np.abs(r), axis=1), 1e-9), np.einsum("ki,ij,kj->k", d, M, d)))
    return found[min(range(len(found)), key=scores.__getitem__)].copy()


def keyed_coordinates(P: _Problem) -> np.ndarray | None:
    """Warm start of a fully driven mechanism (as many controls as independent coordinates: every coordinate
    of a tree, nq minus the kept loop rows of a closed chain): each keyed frame solved for its keys by inverse
    kinematics (from the previous keyed frame's solution), the coordinates eased between them by cubic Hermite
    curves (leaving the start with its velocity, at rest at each key) and held after the last; on a closed chain every eased configuration is projected
    onto the loop constraints. None for an underdriven mechanism, where a path that ignores the dynamics
    misleads the solve (the crane then failed), or when a projection fails."""
    tx = P.tx
    if tx.nu != tx.nq - tx.nr or not P.key_rows:
        return None
    Q = np.empty((tx.steps + 1, tx.nq))
    frame, q, qd = 0, tx.q0, tx.qd0
    Q[0] = q
    for nxt in sorted({key.frame for key, _ in P.key_rows}):
        q_next = _inverse_kinematics(P, nxt, q)
        s = (np.arange(frame + 1, nxt + 1) - frame) / (nxt - frame)
        leave = (nxt - frame) * tx.dt * s * (1.0 - s) ** 2  # cubic Hermite: leaves q with velocity qd
        Q[frame + 1: nxt + 1] = q + np.outer(s * s * (3.0 - 2.0 * s), q_next - q) + np.outer(leave, qd)
        frame, q, qd = nxt, q_next, np.zeros_like(qd)
    Q[frame + 1:] = q
    return _closed_path(P, Q)


def _closed_path(P: _Problem, Q: np.ndarray) -> np.ndarray | None:
    """Every configuration of Q (N+1, nq) after the start projected onto the loop constraints (None if one fails)."""
    if not P.model.nrow:
        return Q
    Q[1:], closed = close_loops_batch(P.model, Q[1:], P.tx.charts)
    return Q if np.all(closed) else None


def _warm_coordinates(P: _Problem, warm_start: Trajectory | ShotResult | None) -> np.ndarray | None:
    """Coordinates (N+1, nq) from a previous result or an animation's Trajectory with the same coordinates."""
    if isinstance(warm_start, ShotResult):
        names, Q = warm_start.state_names, warm_start.states
    elif isinstance(warm_start, Trajectory):
        names, Q = tuple(warm_start.coordinate_names), warm_start.q
    else:
        return None
    if tuple(names) != P.model.coordinate_names or np.shape(Q) != (P.tx.steps + 1, P.tx.nq):
        return None
    Q = np.array(Q, dtype=float)
    Q[0] = P.tx.q0
    return _closed_path(P, Q)


def solve_mechanism_shot(shot: MechanismShot, warm_start: Trajectory | ShotResult | None = None,
                         progress: Progress | None = None, tol: float = 1e-8, constraint_tol: float = 1e-11,
                         max_iter: int = 200) -> ShotResult:
    """Solve `shot` and replay the solved torques through the plain simulator.

    warm_start: a previous ShotResult of this shot, or a Trajectory with the same coordinates (the current
    animation; projected onto the loops of a closed chain); otherwise, on a fully driven mechanism, each keyed
    frame solved by inverse kinematics and eased between (`keyed_coordinates`; the arm's two-mark shot: 40
    iterations, 50 from the start held still; the four-bar stopped after one more crank turn: 28, where the
    start held still stalls with the loop open), and on an underdriven one the start held still (the keyed path was tried there: the crane then failed and the
    cart-pole took 52 iterations instead of 32). progress(iteration,
    info) returning False cancels (status 'cancelled'). When the solve fails, the report's second line
    names the key that is missed most (relative to its tolerance).
    """
    P = _problem(shot)
    started = time.perf_counter()
    Q = _warm_coordinates(P, warm_start)
    if Q is None:
        Q = keyed_coordinates(P)
    x0 = initial_guess(P, np.tile(P.tx.q0, (P.tx.steps + 1, 1)) if Q is None else Q)
    out = solve(_nlp(P), x0, tol=tol, constraint_tol=constraint_tol, max_iter=max_iter, progress=progress)
    return _result(P, out, time.perf_counter() - started)


def key_errors(P: _Problem, Q: np.ndarray) -> dict[str, float]:
    """Distance of each key from its target at coordinates Q (m or rad)."""
    out = {}
    for key, axes in P.key_rows:
        r, _ = _key_values(_Problem(P.shot, P.model, P.tx, ((key, axes),)), Q, False)
        out[key.name] = float(np.linalg.norm(r))
    return out


def _missed_key(P: _Problem, Q: np.ndarray, errors: dict[str, float]) -> list[str]:
    """Report lines naming the key a failed solve misses most (relative to its tolerance). When the solver left
    loops open (it can meet an unreachable key that way), each key is measured instead at the configuration
    closing the loops that comes nearest to it at its frame (`_inverse_kinematics`)."""
    gaps = [float(np.max(np.abs(constraints.evaluate(P.model, forward(P.model, q, P.tx.charts), False)[0])))
            for q in Q] if P.model.nrow else [0.0]
    open_at = int(np.argmax(gaps))
    lines, why = [], "missed by {:.3g} (tolerance {:g}) within the joint limits and force bounds"
    if gaps[open_at] > 1e-9:
        closest = np.array(Q)
        for frame in {key.frame for key, _ in P.key_rows}:
            closest[frame] = _inverse_kinematics(P, frame, Q[frame])
        errors = key_errors(P, closest)
        why = "no configuration that closes the loops comes closer than {:.3g} (tolerance {:g})"
        lines.append(f"  the loops were left open by up to {gaps[open_at]:.3g} (frame {open_at})")
    worst = max(P.key_rows, key=lambda kr: errors[kr[0].name] / kr[0].tolerance, default=None)
    if worst is not None and errors[worst[0].name] > worst[0].tolerance:
        key = worst[0]
        lines.insert(0, f"  {key.describe()} cannot be met: " + why.format(errors[key.name], key.tolerance))
    return lines


def _result(P: _Problem, out, wall_time: float) -> ShotResult:
    tx, shot = P.tx, P.shot
    Q, U, _ = tx.unpack(out.x)
    errors = key_errors(P, Q)
    times = (np.arange(tx.steps) + 0.5) * tx.dt
    controls = {c.joint: U[:, j].copy() for j, c in enumerate(shot.controls)}
    lines = [f"shot {shot.name!r}: {out.status} after {out.iterations} iterations in {wall_time:.3g} s "
             f"(objective {out.objective:.6g}, constraint violation {out.constraint_violation:.3g})"]
    if out.status != "solved":
        lines += _missed_key(P, Q, errors)
        lines.append("  " + out.message)
    lines += [f"  key {name!r}: error {err:.3g}" for name, err in errors.items()]
    trajectory, replay_error = None, float("nan")
    result = ShotResult(None, controls, {name: times for name in controls}, "", out.status, out.iterations,
                        wall_time, errors, Q, P.model.coordinate_names, tx.dt, out.objective,
                        out.constraint_violation)
    if out.status == "solved":
        trajectory = replay(shot, result)
        solved = body_poses_batch(P.model, Q, np.broadcast_to(tx.charts, (tx.steps + 1,) + tx.charts.shape))
        if trajectory.status == "finished":
            replay_error = float(np.max(np.abs(trajectory.poses[..., :3] - solved[..., :3])))
            lines.append(f"  replay through the simulator: largest position difference {replay_error:.3g} m")
        else:
            lines.append(f"  replay through the simulator failed: {trajectory.message}")
    result.trajectory, result.replay_error, result.report = trajectory, replay_error, "\n".join(lines)
    result.timings, result.kkt = dict(out.timings), out.kkt
    return result


def solved_trajectory(shot: MechanismShot, result: ShotResult) -> Trajectory:
    """The motion as the optimiser found it (coordinates, body poses, midpoint energies), not replayed."""
    P = _problem(shot)
    tx, model, Q = P.tx, P.model, result.states
    N = tx.steps
    poses = body_poses_batch(model, Q, np.broadcast_to(tx.charts, (N + 1,) + tx.charts.shape))
    start = terms(model, forward(model, tx.q0, tx.charts), tx.qd0, 0.0, second=False)
    energy = [start.kinetic + start.potential]
    energy += list(intervals(model, tx.charts, Q[:-1], Q[1:], np.arange(N) * tx.dt, tx.dt, False).energy)
    residual = []
    for k in range(N + 1):
        h, _ = constraints.evaluate(model, forward(model, Q[k], tx.charts), jacobian=False)
        residual.append(float(np.max(np.abs(h))) if len(h) else 0.0)
    return Trajectory(np.arange(N + 1) * tx.dt, list(model.body_names), poses, np.array(Q),
                      list(model.coordinate_names), np.array(energy), np.array(residual),
                      np.zeros(N, dtype=np.int64), method="shot")


def torque_mechanism(shot: MechanismShot, result: ShotResult) -> Mechanism:
    """The shot's mechanism with the solved controls keyed as joint torques (linear keys at the interval
    midpoints, where the midpoint integrator samples them), for replay with integrator.simulate."""
    joints = []
    curves = dict(result.curves())
    for joint in shot.mechanism.joints:
        if joint.name in curves:
            joint = replace(joint, motor=Motor("torque", curves[joint.name]))
        joints.append(joint)
    return shot.mechanism.replace(joints=tuple(joints))


def replay(shot: MechanismShot, result: ShotResult, tol: float = 1e-12) -> Trajectory:
    """Simulate the solved torques with the plain midpoint integrator."""
    return simulate(torque_mechanism(shot, result), shot.dt, shot.steps, tol=tol)


def from_shot(shot: Shot) -> MechanismShot:
    """A spec.Shot on a mechanism without a vehicle as a MechanismShot: its `bounds` name the driven joints,
    position keys become body-origin keys, a zero velocity key at the last step becomes rest_at_end."""
    where = f"{shot.source}: shot {shot.name!r}"
    if shot.obstacles or shot.corridors or shot.free_time:
        raise ShotError(f"{where}: obstacles, corridors and free time are not supported on mechanism shots yet")
    keys, rest = [], False
    for key in shot.keys:
        kw = f"{where}: key {key.label!r}"
        if key.heading is not None or key.radius > 0:
            raise ShotError(f"{kw}: 'heading' and 'radius' keys are for vehicles; key a coordinate of the mechanism")
        if key.velocity is not None:
            if key.step != shot.steps or any(key.velocity):
                raise ShotError(f"{kw}: a mechanism shot takes only a zero velocity key at the last step (rest)")
            rest = True
        if key.position is not None:
            keys.append(MechanismKey(key.label, key.step, body=key.body, position=tuple(key.position)))
    controls = tuple(Control(name, lo, hi) for name, lo, hi in shot.bounds)
    return MechanismShot(shot.name, shot.mechanism, shot.dt, shot.steps, controls, tuple(keys),
                         shot.costs.effort, rest, shot.source)


@dataclass(frozen=True)
class MechanismTranscription:
    """What solve.solve_shot asks of a transcription: solve(warm_start, progress, tol, max_iter)."""

    shot: MechanismShot

    def solve(self, warm_start=None, progress=None, tol: float = 1e-8, max_iter: int = 300) -> ShotResult:
        return solve_mechanism_shot(self.shot, warm_start, progress, tol=tol, max_iter=max_iter)


def transcribe(shot: Shot) -> MechanismTranscription:
    """solve.solve_shot's entry for mechanisms without a vehicle."""
    shot_ = from_shot(shot)
    _problem(shot_)  # validates now
    return MechanismTranscription(shot_)

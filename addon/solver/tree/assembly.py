"""Consistent initial states for closed chains: project q onto h(q) = 0, pick independent rows, project qdot.

Seed 000 leaves this out (docs/seeds.md 000-C). Projection is Gauss-Newton with least-squares steps
over the non-prescribed coordinates. Redundant rows (a planar loop closed by a full 3-D hinge) are
found by a pivoted QR of Dh^T at the assembled configuration and dropped; the integrator re-picks
which rows to keep as the configuration moves (midpoint.py) and reports every row's residual, so a
dropped row that stops holding would show.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..curves import derivative, evaluate
from ..trajectory import AssemblyError
from . import constraints
from .compile import TreeModel
from .kinematics import forward


@dataclass(frozen=True)
class Assembled:
    """An assembled start: q (nq,), qd (nq,), independent constraint rows, and the dropped rows' joints."""

    q: np.ndarray
    qd: np.ndarray
    rows: np.ndarray
    dropped_joints: tuple[str, ...]


def prescribed_values(model: TreeModel, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities (both (n_prescribed,)) of the prescribed coordinates at time t."""
    curves = [c for c in model.dof_curve if c is not None]
    return (np.array([evaluate(c, t) for c in curves]), np.array([derivative(c, t) for c in curves]))


def worst_joint(model: TreeModel, h: np.ndarray) -> str:
    return model.joint_names[model.row_joint[int(np.argmax(np.abs(h)))]]


def loop_cycle(model: TreeModel, row: int) -> list[str]:
    """Names of the tree joints on the cycle that constraint row `row` closes (excluding its own joint)."""
    on_path = (model.ancestor[model.row_frame_p[row]] != model.ancestor[model.row_frame_c[row]])
    names = [model.joint_names[j] for j in model.dof_joint[on_path]]
    return list(dict.fromkeys(names))


def independent_rows(Dh: np.ndarray, rank: int | None = None) -> np.ndarray:
    """Sorted indices of a best-conditioned set of independent rows of Dh (nrow, n), by pivoted QR of Dh^T.

    rank=None finds the numerical rank (relative threshold 1e-9); a given rank keeps that many rows.
    """
    _, R, piv = scipy.linalg.qr(Dh.T, mode="economic", pivoting=True)
    if rank is None:
        diag = np.abs(np.diag(R)) if R.size else np.zeros(0)
        rank = int(np.sum(diag > 1e-9 * max(1.0, diag.max() if diag.size else 1.0)))
    return np.sort(piv[:rank])


def close_loops(model: TreeModel, q: np.ndarray, charts: np.ndarray, free: np.ndarray, tol: float = 1e-12,
                max_iterations: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Project q onto h(q) = 0 by Gauss-Newton with minimum-norm least-squares steps over the coordinates
    where `free` (nq,) is true (so it lands near q). Returns (q, h, Dh at q, whether max |h| <= tol)."""
    q = np.array(q, dtype=float)
    for _ in range(max_iterations):
        h, Dh = constraints.evaluate(model, forward(model, q, charts))
        if np.max(np.abs(h), initial=0.0) <= tol:
            return q, h, Dh, True
        step, *_ = np.linalg.lstsq(Dh[:, free], -h, rcond=None)
        q[free] += step
    h, Dh = constraints.evaluate(model, forward(model, q, charts))
    return q, h, Dh, bool(np.max(np.abs(h), initial=0.0) <= tol)


def assemble(model: TreeModel, charts: np.ndarray, t0: float = 0.0, tol: float = 1e-12,
             max_iterations: int = 100) -> Assembled:
    """Project model.q_init / v_init onto the constraints. Raises AssemblyError naming the worst loop joint."""
    pre = model.dof_prescribed
    dyn = ~pre
    q = np.array(model.q_init)
    qd = np.array(model.v_init)
    q[pre], qd[pre] = prescribed_values(model, t0)
    if model.nrow == 0:
        return Assembled(q, qd, np.arange(0), ())
    q, h, Dh, closed = close_loops(model, q, charts, dyn, tol, max_iterations)
    if not closed:
        worst = int(np.argmax(np.abs(h)))
        through = ", ".join(repr(n) for n in loop_cycle(model, worst))
        raise AssemblyError(
            f"cannot assemble the mechanism at t = {t0:g} s: the loop closed by joint {worst_joint(model, h)!r} "
            f"(through {through}) stays open by {np.max(np.abs(h)):.3g} after {max_iterations} projection "
            "steps; check the anchors, the link lengths and any prescribed joint angles in that loop",
            step=0, time=t0,
        )
    Dd = Dh[:, dyn]
    rows = independent_rows(Dd)
    dropped = tuple(sorted({model.joint_names[model.row_joint[r]] for r in set(range(model.nrow)) - set(rows)}))
    Dp = Dh[:, pre]
    qd[dyn] -= np.linalg.pinv(Dd) @ (Dd @ qd[dyn] + Dp @ qd[pre])
    return Assembled(q, qd, rows, dropped)

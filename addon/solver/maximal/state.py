"""The maximal method's model and state types, in one module that variational.py (the step) and
interior_point.py (its inequalities) both import, so neither names the other's types.

The compiled MaximalModel (built once by variational.compile_maximal, read-only) with its stamp
(stamp.py); the MaximalState a step changes, with the interior point's part of it (InteriorPointState:
the step's inequality rows, its iterate and the warm start for the next step); and the records one step
passes between the two (Knot: what the Newton iterations need from the knot z_1; Evaluation: residual
and Newton matrix at one iterate). Types only: what a step does with them is in variational.py and
interior_point.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..collision.world import CollisionWorld, Contacts
from ..model import Mechanism
from ..stamp import ModelStamp
from .bodies import BodySet
from .forces import ForceSet
from .joints import JointFrames, JointSet
from .linear import LinearSolver, NewtonMatrix

COLD_MU = 1.0  # lam * s (W) of the interior point's cold start


@dataclass(frozen=True)
class MaximalModel:
    """Bodies, joints and forces of a Mechanism, with the joint graph split into primary (tree) joints
    and auxiliary (loop-closing) ones. `order` lists constraint rows primary-first; `primary` gives each
    primary joint's slice of that order and its bodies for the Baraff graph. collision: the contact
    detector of the mechanism's colliders (None without colliders); limited: the joint coordinates with
    a finite limit. stamp: this model's identity, recorded by its states. Every array of the model and
    of its body, joint and force sets is read-only (a stray write raises)."""

    mechanism: Mechanism
    bodies: BodySet
    joints: JointSet
    forces: ForceSet
    loop_joints: tuple[int, ...]
    order: np.ndarray
    n_primary: int
    primary: tuple[tuple[slice, tuple[int, ...]], ...]
    collision: CollisionWorld | None
    limited: np.ndarray
    stamp: ModelStamp


@dataclass(frozen=True)
class WarmStart:
    """Row keys, multipliers and slacks of the last converged step."""

    key: np.ndarray
    lam: np.ndarray
    s: np.ndarray


@dataclass(frozen=True)
class ContactRows:
    """The contacts found at the knot (k of them) and their friction patches, fixed for the step.

    a, b (k,) body indices (B: the world); key (k,) collider pair; normal (k, 3) world, A to B;
    distance (k,) at z_1; friction (k,) coefficient; Ja, Jb (k, 3, 6) witness-point Jacobians at z_1
    (zero for the world). kind, owner: the contacts' rows (k gaps, then per patch a cone and its
    directions; see Inequalities). members: the patches' contacts, patch by patch, and member_patch
    their patch; B (directions, 12): each direction row over (body A, body B) velocities. curvature (k,):
    what the gap's linearisation misses over the step along the predicted motion (interior_point._curvature),
    added to the distance the gap row starts from; found: the collision query's Contacts they were made from
    (None without contacts).
    """

    a: np.ndarray
    b: np.ndarray
    key: np.ndarray
    normal: np.ndarray
    distance: np.ndarray
    friction: np.ndarray
    Ja: np.ndarray
    Jb: np.ndarray
    kind: np.ndarray
    owner: np.ndarray
    members: np.ndarray
    member_patch: np.ndarray
    B: np.ndarray
    curvature: np.ndarray
    found: Contacts | None = None


@dataclass(frozen=True)
class LimitRows:
    """The joint limits near enough to the knot to matter this step: coordinate (l,), side (l,) +1 at a
    lower bound and -1 at an upper one, bound (l,), bodies a, b (l,), G (l, 12) side times the
    coordinate's Jacobian at z_1."""

    coord: np.ndarray
    side: np.ndarray
    bound: np.ndarray
    a: np.ndarray
    b: np.ndarray
    G: np.ndarray


@dataclass(frozen=True)
class Inequalities:
    """The step's inequality rows, set up at the knot z_1. Rows: gamma of every contact, then per
    friction patch psi and its beta_1..4 (or 6 with spin), then limits.

    kind (m,): 0 gap (positional), 1 cone, 2 friction direction, 3 limit (positional); owner (m,)
    contact index of each row (a patch's first contact for its psi and beta rows; limit index for
    limits); key (m,) the row's identity across steps (collider pair or limit side, and kind): equal
    keys mean the same contact set, which the next step warm-starts from.
    """

    dt: float
    kind: np.ndarray
    owner: np.ndarray
    key: np.ndarray
    contacts: ContactRows
    limits: LimitRows


@dataclass
class InteriorPointState:
    """The interior point's part of the maximal state (MaximalState.interior).

    This step's rows and iterate: rows, lam, s (m,) > 0, the barrier parameter mu = mean lam s, cold
    (started cold rather than warm), monotone (Fiacco-McCormick mode after a stall, at mu_fixed),
    restarts used; predicted: the velocities (B, 6) this step's gap curvature follows when not the knot's (a
    step redone along its own converged velocities, interior_point.relinearise), and relinearised, how often
    this step was. Across steps: warm (the last converged step's pairs) and friction_dropped (the steps
    redone without friction rows).
    """

    rows: Inequalities | None = None
    lam: np.ndarray = field(default_factory=lambda: np.zeros(0))
    s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mu: float = COLD_MU
    cold: bool = True
    monotone: bool = False
    mu_fixed: float = COLD_MU
    restarts: int = 0
    predicted: np.ndarray | None = None
    relinearised: int = 0
    warm: WarmStart | None = None
    friction_dropped: list[int] = field(default_factory=list)


@dataclass
class MaximalState:
    """Knot t, x (B, 3), q (B, 4); previous interval velocities v, w (B, 3); at the start (startup True)
    v, w hold the continuous velocity zbar. coord_rate: previous interval rate of every coordinate (or
    its continuous rate at the start); windings of ANGLE coordinates / rows; multipliers lam (R,) in
    model.order; aux_active: mask over the auxiliary rows kept (redundant loop rows dropped). model: the
    stamp of the model that made the state; interior: the interior point's iterate, warm start and
    counters (None when the model has no inequalities)."""

    t: float
    x: np.ndarray
    q: np.ndarray
    v: np.ndarray
    w: np.ndarray
    coord_rate: np.ndarray
    coord_winding: np.ndarray
    row_winding: np.ndarray
    lam: np.ndarray
    model: ModelStamp
    interior: InteriorPointState | None = None
    startup: bool = True
    aux_active: np.ndarray | None = None
    solver: LinearSolver | None = None
    acceleration_guess: np.ndarray | float = 0.0  # last step's velocity change: Newton starts from v + this
    step_index: int = 0
    sweeps: list[int] = field(default_factory=list)
    frames_at: tuple | None = None  # (x, q, JointFrames) of the last step's z_2: the next knot's frames
    coord_jac_prev: np.ndarray | None = None  # (C, 12) the previous interval's coordinates' Jacobian at the knot
    kernel: object | None = None  # native_step.MaximalKernel that takes the steps; False: numpy; None: not chosen yet


@dataclass
class Knot:
    """What the Newton iterations need from the knot z_1: rows and coordinates with Jacobians, the
    constant wrench, and the targets at t_2."""

    G: np.ndarray  # (R, 12) constraint rows at z_1, in model.order
    cval: np.ndarray
    cjac: np.ndarray
    wrench: np.ndarray  # (B, 6)
    targets: np.ndarray  # (R,) in model.order
    row_val1: np.ndarray  # (R,) values at z_1 in model.order (for unwrapping)
    potential: float
    qrel: np.ndarray  # (J, 4) joint rotations at z_1: where the rotation dampers' step coordinates start


@dataclass
class Evaluation:
    """Residual and exact Newton matrix at one iterate, plus z_2 quantities for the state update."""

    body_residual: np.ndarray  # (B, 6)
    row_residual: np.ndarray  # (R_active,)
    matrix: NewtonMatrix
    x2: np.ndarray
    q2: np.ndarray
    row_val2: np.ndarray  # (R,) all rows at z_2 (unwrapped), model.order
    cval2: np.ndarray
    rate: np.ndarray
    row_winding2: np.ndarray  # windings of the ANGLE rows (in model.order) at z_2
    coord_winding2: np.ndarray  # windings of the joint coordinates at z_2
    cjac2_velocity: np.ndarray | None  # (C, 12) d coordinate(z_2) / d zdot_1 / dt (for the inequalities)
    cjac2: np.ndarray  # (C, 12) the coordinates' Jacobian at z_2 (the next knot's coord_jac_prev)
    ip_h: np.ndarray = field(default_factory=lambda: np.zeros(0))
    frames2: JointFrames | None = None

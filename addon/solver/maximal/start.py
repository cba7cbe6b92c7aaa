"""The maximal method's initial state (the tree method's start, so both begin identically) and the
quantities the recorder reads off a state: body-frame poses, kinetic energy, joint residual.

tree/midpoint.initial_state assembles the loops and projects v0; body centres of mass, orientations
and twists are read off the tree model's initial kinematics. Loop-closing joints are the tree
compiler's cut joints.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..joint_reverse import world_as_parent
from ..lie import cross, matrix_to_quat, quat_to_matrix
from ..model import Mechanism, MechanismError
from ..tree.compile import compile_tree
from ..tree.kinematics import frame_velocities
from ..tree.midpoint import initial_state
from . import forces
from .interior_point import has_inequalities
from .joints import ANGLE, ANGLES, frames, generic_rows, of_kinds, row_targets, unwrap
from .state import InteriorPointState, MaximalModel, MaximalState
from .variational import compile_maximal


def start_from_tree(mech: Mechanism) -> tuple[MaximalModel, MaximalState]:
    """The maximal model and its initial state, identical to the tree method's start. Joints written with
    child "world" are compiled reversed (joint_reverse.world_as_parent)."""
    mech = world_as_parent(mech)
    check_masses(mech)
    # forcing does not move the start; without it the tree compiles every joint the maximal method takes
    kinematic = tuple(replace(j, stiffness=0.0, rest=None, damping=0.0, motor=None, lower=None, upper=None)
                      for j in mech.joints)
    tree = compile_tree(mech.replace(springs=(), joints=kinematic))
    tstate, kin, _, qd = initial_state(tree)
    model = compile_maximal(mech, tuple(sorted(set(int(j) for j in tree.row_joint))))
    js = model.joints
    x = kin.body_com_world.copy()
    q = matrix_to_quat(kin.body_R)
    V = frame_velocities(tree, kin, qd)[tree.body_frame]
    omega = V[:, :3]
    v = V[:, 3:] + cross(omega, x)
    w = np.einsum("bji,bj->bi", kin.body_R, omega)
    fr = frames(js, x, q)
    # windings: coordinates of tree joints continue the tree's coordinate values
    raw, cjac = generic_rows(fr, js.coord_joint, js.coord_kind)
    reference = raw.copy()
    for c, (j, kind) in enumerate(zip(js.coord_joint, js.coord_kind)):
        dofs = np.nonzero(tree.dof_joint == j)[0]
        if kind in ANGLES and len(dofs):
            d = list(js.coord_joint[:c + 1]).count(j) - 1
            reference[c] = tstate.q[dofs[d]]
    coord_winding = np.where(of_kinds(js.coord_kind, ANGLES), unwrap(raw, reference), 0.0)
    row_raw, _ = generic_rows(fr, js.row_joint, js.row_kind)
    row_winding = np.where(js.row_kind == ANGLE, unwrap(row_raw, row_targets(js, tstate.t)), 0.0)
    cval, cjac = forces.coordinates(js, model.forces, fr, x, q, coord_winding)
    zbar = np.concatenate([v, w], axis=1)
    ze = np.vstack([zbar, np.zeros((1, 6))])
    rate = np.einsum("ck,ck->c", cjac[:, :6], ze[model.forces.coord_a]) \
        + np.einsum("ck,ck->c", cjac[:, 6:], ze[model.forces.coord_b])
    interior = InteriorPointState() if has_inequalities(model) else None
    state = MaximalState(tstate.t, x, q, v, w, rate, coord_winding, row_winding, np.zeros(len(model.order)),
                         model.stamp, interior)
    return model, state


def check_masses(mech: Mechanism) -> None:
    """Refuse a massless body by name: the maximal method eliminates every body's own mass block first
    (Baraff's order), so a body of zero mass makes its Newton matrix singular whatever holds it."""
    for body in mech.bodies:
        if not body.mass > 0:
            raise MechanismError(
                f"{mech.source}: [[body]] {body.name!r}: the maximal method needs a positive mass on every body "
                "(field 'mass' is 0); give it a mass and inertia, weld its marker to a massive body's frame "
                "instead, or use the tree method, which takes massless bodies that a joint or loop carries")


def body_frame_poses(model: MaximalModel, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Pose rows (B, 7) of the body frames (the Mechanism's, not the centres of mass)."""
    origin = x - np.einsum("bij,bj->bi", quat_to_matrix(q), model.bodies.com)
    return np.concatenate([origin, q], axis=1)


def kinetic_energy(model: MaximalModel, v: np.ndarray, w: np.ndarray) -> float:
    bs = model.bodies
    return 0.5 * float(np.sum(bs.mass * np.sum(v * v, axis=1)) + np.einsum("bi,bij,bj->", w, bs.inertia, w))


def joint_residual(model: MaximalModel, x: np.ndarray, q: np.ndarray, winding: np.ndarray, t: float) -> float:
    js = model.joints
    val, _ = generic_rows(frames(js, x, q), js.row_joint, js.row_kind)
    return float(np.max(np.abs(val + winding - row_targets(js, t)), initial=0.0))

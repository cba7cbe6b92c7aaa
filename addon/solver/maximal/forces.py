"""Applied forces of the maximal-coordinate step: gravity, user point forces, and everything acting
on a scalar coordinate (joint coordinates and spring lengths): springs, dampers, velocity servos and
keyed motor torques.

Each coordinate c(z) has a value and a Jacobian row over (x_A, phi_A, x_B, phi_B); a generalized
force f on it acts on the bodies as the wrench f * dc/dz (virtual work), which is how seed 003's
actuator mapping (1a)/(1b) (lost in the text: docs/seeds.md 003-E) is realised here. Springs are
potentials V = k/2 (c - rest)^2 evaluated at the knot z_1; dampers and servos are implicit, half on
each interval's rate (c(z_1) - c(z_0))/dt and (c(z_2) - c(z_1))/dt, each through its own coordinate's
Jacobian at z_1 (the same function on both intervals, except the rotation dampers' step coordinates,
which restart at every knot: variational._damper_wrench), the same half/half split of the interval
forcing as the tree method's midpoint rule. Body wrenches are (force in world axes, torque in body axes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import evaluate
from ..lie import cross
from ..model import WORLD, Curve, Mechanism
from .joints import JointFrames, JointSet, frames_of, generic_rows, keyed_torques

IDENTITY_QUATS = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass(frozen=True)
class ForceSet:
    """User forces: body (F,), point (F, 3) from the centre of mass in body axes, vector (F, 3), scale curves.
    Springs: body indices a, b (S,) (world = B), points pa, pb (S, 3) from the centres of mass, and the
    coordinate tables for joint coordinates followed by spring lengths: a, b, stiffness, rest, damping,
    gain, target velocity (C,)."""

    force_body: np.ndarray
    force_point: np.ndarray
    force_vector: np.ndarray
    force_scale: tuple[Curve | None, ...]
    spring_a: np.ndarray
    spring_b: np.ndarray
    spring_pa: np.ndarray
    spring_pb: np.ndarray
    coord_a: np.ndarray
    coord_b: np.ndarray
    stiffness: np.ndarray
    rest: np.ndarray
    damping: np.ndarray
    gain: np.ndarray
    target_velocity: np.ndarray


def force_set(mech: Mechanism, js: JointSet) -> ForceSet:
    index = {b.name: i for i, b in enumerate(mech.bodies)}
    index[WORLD] = len(mech.bodies)
    com = {b.name: np.array(b.com, dtype=float) for b in mech.bodies}
    com[WORLD] = np.zeros(3)
    springs = mech.springs
    sa = np.array([index[s.body_a] for s in springs], dtype=np.int64)
    sb = np.array([index[s.body_b] for s in springs], dtype=np.int64)
    spa = np.array([np.array(s.point_a) - com[s.body_a] for s in springs]).reshape(-1, 3)
    spb = np.array([np.array(s.point_b) - com[s.body_b] for s in springs]).reshape(-1, 3)
    zeros = np.zeros(len(springs))
    return ForceSet(
        force_body=np.array([index[f.body] for f in mech.forces], dtype=np.int64),
        force_point=np.array([np.array(f.point) - com[f.body] for f in mech.forces]).reshape(-1, 3),
        force_vector=np.array([f.force for f in mech.forces], dtype=float).reshape(-1, 3),
        force_scale=tuple(f.scale for f in mech.forces),
        spring_a=sa, spring_b=sb, spring_pa=spa, spring_pb=spb,
        coord_a=np.concatenate([js.parent[js.coord_joint], sa]),
        coord_b=np.concatenate([js.child[js.coord_joint], sb]),
        stiffness=np.concatenate([js.stiffness, [s.stiffness for s in springs]]),
        rest=np.concatenate([js.rest, [s.rest_length for s in springs]]),
        damping=np.concatenate([js.damping, [s.damping for s in springs]]),
        gain=np.concatenate([js.gain, zeros]),
        target_velocity=np.concatenate([js.target_velocity, zeros]),
    )


def coordinates(js: JointSet, fs: ForceSet, fr: JointFrames, x: np.ndarray, q: np.ndarray,
                winding: np.ndarray, reference: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Values (C,) and Jacobians (C, 12) of the joint coordinates (ANGLES ones plus `winding`) and the
    spring lengths at the configuration whose joint frames are `fr`; `reference`: the joints' q_rel that
    rotation-damper (CAYLEY_STEP) coordinates start from (default fr.qrel: they read 0)."""
    val, jac = generic_rows(fr, js.coord_joint, js.coord_kind, reference=reference)
    val = val + winding
    if len(fs.spring_a):
        n = len(fs.spring_a)
        quats = np.tile(IDENTITY_QUATS, (n, 1))
        sp = frames_of(fs.spring_a, fs.spring_b, fs.spring_pa, fs.spring_pb, quats, quats, x, q)
        length = np.linalg.norm(sp.r, axis=1)
        direction = sp.r / np.maximum(length, 1e-300)[:, None]
        val = np.concatenate([val, length])
        jac = np.vstack([jac, np.einsum("si,sik->sk", direction, sp.dr)])
    return val, jac


def scatter_index(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where `scatter` adds each entry of rows (n, 12) over bodies a, b: flat (B + 1, 6) indices in rows.ravel() order."""
    return (6 * np.stack([a, b], axis=1)[:, :, None] + np.arange(6)).ravel()


def scatter(n_bodies: int, a: np.ndarray, b: np.ndarray, rows: np.ndarray, index: np.ndarray | None = None) -> np.ndarray:
    """Sum rows (n, 12) over (a | b) body columns into per-body 6-vectors (B, 6); world (B) dropped.
    `index`: scatter_index(a, b) when the caller keeps it."""
    index = scatter_index(a, b) if index is None else index
    weights = np.ascontiguousarray(rows).ravel()
    return np.bincount(index, weights, minlength=6 * (n_bodies + 1))[:6 * n_bodies].reshape(n_bodies, 6)


def knot_wrench(mech_gravity: np.ndarray, mass: np.ndarray, fs: ForceSet, R: np.ndarray,
                coord_val: np.ndarray, coord_jac: np.ndarray, coord_torque: np.ndarray, t: float,
                dt: float) -> np.ndarray:
    """Conservative and keyed wrenches (B, 6) at the knot: gravity, user forces, coordinate springs and
    keyed torques (user forces and keyed torques averaged over t -+ dt/2 as the midpoint rule splits them)."""
    nb = len(mass)
    out = np.zeros((nb, 6))
    out[:, :3] = mass[:, None] * mech_gravity[None, :]
    if len(fs.force_body):
        scale = 0.5 * sum(np.array([1.0 if c is None else evaluate(c, s) for c in fs.force_scale])
                          for s in (t - 0.5 * dt, t + 0.5 * dt))
        F = fs.force_vector * scale[:, None]
        torque = cross(fs.force_point, np.einsum("fji,fj->fi", R[fs.force_body], F))
        np.add.at(out, fs.force_body, np.concatenate([F, torque], axis=1))
    generalized = -fs.stiffness * (coord_val - fs.rest)
    generalized[:len(coord_torque)] += coord_torque
    out += scatter(nb, fs.coord_a, fs.coord_b, generalized[:, None] * coord_jac)
    return out


def knot_torques(js: JointSet, t: float, dt: float) -> np.ndarray:
    """Keyed motor torques (joint coordinates) averaged over t -+ dt/2."""
    return 0.5 * (keyed_torques(js, t - 0.5 * dt) + keyed_torques(js, t + 0.5 * dt))


def potential(gravity: np.ndarray, mass: np.ndarray, x: np.ndarray, fs: ForceSet, coord_val: np.ndarray) -> float:
    """Gravity and spring potential energy."""
    return float(-np.sum(mass[:, None] * gravity[None, :] * x)
                 + 0.5 * np.sum(fs.stiffness * (coord_val - fs.rest) ** 2))

"""The energy audit of a finished run: does a conservative setup's energy stay within its integrator's error?

A setup with no dampers, motors, keyed (prescribed) joints, user forces, joint stops or contacts conserves
its energy E (kinetic + gravity + springs). The variational integrators do not conserve E exactly, but
their error stays bounded for all time and is O(dt^2) relative to the energy the motion exchanges
(backward error analysis: they conserve a modified energy E + O(dt^2)). The scale of that exchange is

    available = E0 - min over the run of the gravity potential,

the largest kinetic energy a conservative motion could reach from the start (springs only store
energy, so they cannot add to it). `audit` fails a run whose |E - E0| passes BOUND * available: a step
that has stopped resolving the motion (see docs/benchmarks_bake.md for the measured margins). The bodies
with the largest change of their own energy (kinetic + gravity, from the poses) are named. Setups that
are not conservative are not judged by `audit`; `nonconservative_parts` says why. `growth_audit` also
judges setups whose only non-conservative parts take energy out (dampers, stops, contacts: `driven_parts`
is empty): their energy may fall as far as it likes but not rise past the same bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lie import matrix_to_quat, quat_to_matrix
from .mass import inertia_matrix
from .model import Mechanism
from .trajectory import Trajectory

# |E - E0| allowed, as a fraction of the available energy. A pendulum released at 90 degrees has a ratio of
# about 0.2 (omega dt)^2 and passes this between 12 and 6 steps per period of its small swing
# (docs/benchmarks_bake.md): a run past it no longer resolves its fastest motion, whatever it looks like.
BOUND = 0.1
# Below this fraction of the energies' own size (or of energy_scale, for a setup whose energies are all
# near zero), |E - E0| is arithmetic and Newton tolerance, not physics.
ROUNDOFF = 1e-8
NAMED_BODIES = 3


@dataclass(frozen=True)
class EnergyAudit:
    """The audit of one run. applies=False: the setup is not conservative (`reasons`), nothing was judged.

    error: max |E - E0| (J); available: the energy scale (J); failed_sample: the first sample past the
    bound (None when within it); bodies: (name, change in J) with the largest |change| by that sample."""

    applies: bool
    reasons: tuple[str, ...] = ()
    error: float = 0.0
    available: float = 0.0
    failed_sample: int | None = None
    bodies: tuple[tuple[str, float], ...] = ()

    @property
    def failed(self) -> bool:
        return self.failed_sample is not None

    @property
    def ratio(self) -> float:
        """max |E - E0| / available energy."""
        return self.error / self.available if self.available > 0 else 0.0

    def summary(self) -> str:
        if not self.applies:
            return "energy check did not apply (not a conservative setup: " + ", ".join(self.reasons) + ")"
        return (f"energy check: max |E - E0| {self.error:.3g} J = {100 * self.ratio:.2g} % of the "
                f"{self.available:.3g} J the motion can exchange (bound {100 * BOUND:g} %)")


def nonconservative_parts(mechanism: Mechanism, method: str) -> list[str]:
    """What in `mechanism` adds or removes energy under `method`, by name; empty for a conservative setup."""
    parts = []
    for joint in mechanism.joints:
        if joint.damping > 0:
            parts.append(f"damping on joint {joint.name!r}")
        if joint.motor is not None:
            parts.append(f"motor on joint {joint.name!r}")
        if joint.prescribed is not None:
            parts.append(f"joint {joint.name!r} is keyed")
        if joint.lower is not None or joint.upper is not None:
            parts.append(f"limits (inelastic stops) on joint {joint.name!r}")
    parts += [f"damping in spring {s.name!r}" for s in mechanism.springs if s.damping > 0]
    parts += [f"force {f.name!r}" for f in mechanism.forces]
    if method == "maximal" and mechanism.colliders:
        parts.append(f"contacts (collider {mechanism.colliders[0].name!r})")
    if mechanism.vehicle is not None:
        parts.append("a vehicle")
    return parts


def driven_parts(mechanism: Mechanism) -> list[str]:
    """What in `mechanism` can put energy in (motors, keyed joints, forces, a vehicle), by name."""
    parts = []
    for joint in mechanism.joints:
        if joint.motor is not None:
            parts.append(f"motor on joint {joint.name!r}")
        if joint.prescribed is not None:
            parts.append(f"joint {joint.name!r} is keyed")
    parts += [f"force {f.name!r}" for f in mechanism.forces]
    if mechanism.vehicle is not None:
        parts.append("a vehicle")
    return parts


def length_scale(mechanism: Mechanism) -> float:
    """The mechanism's length scale (m): its extent over body frames and joint anchors, at least 1."""
    points = np.array([b.position for b in mechanism.bodies] + [j.anchor for j in mechanism.joints], dtype=float)
    return max(1.0, float(np.max(np.ptp(points, axis=0)))) if len(points) else 1.0


def energy_scale(mechanism: Mechanism) -> float:
    """An energy the mechanism can hold at its own size L (J): m |g| L + m (L / 1 s)^2 over the bodies, plus
    k max(L, 1)^2 over joint and point springs; the yardstick of round-off for setups whose energies are
    all near zero (no gravity, at rest, at a spring's rest)."""
    size = length_scale(mechanism)
    mass = sum(b.mass for b in mechanism.bodies)
    stiffness = sum(j.stiffness for j in mechanism.joints) + sum(s.stiffness for s in mechanism.springs)
    return mass * (float(np.linalg.norm(mechanism.gravity)) * size + size * size) + stiffness * size * size


def _centres(mechanism: Mechanism, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """Rotations (N+1, B, 3, 3) and world centres of mass (N+1, B, 3) of the trajectory's bodies."""
    bodies = {b.name: b for b in mechanism.bodies}
    com = np.array([bodies[name].com for name in trajectory.bodies], dtype=float)
    rot = quat_to_matrix(trajectory.poses[..., 3:])
    return rot, trajectory.poses[..., :3] + np.einsum("nbij,bj->nbi", rot, com)


def gravity_potential(mechanism: Mechanism, trajectory: Trajectory) -> np.ndarray:
    """Per body gravity potential -m g . c (N+1, B) at every sample."""
    masses = {b.name: b.mass for b in mechanism.bodies}
    mass = np.array([masses[name] for name in trajectory.bodies])
    _, centres = _centres(mechanism, trajectory)
    return -mass * (centres @ np.asarray(mechanism.gravity, dtype=float))


def body_energies(mechanism: Mechanism, trajectory: Trajectory) -> np.ndarray:
    """Kinetic + gravity energy of each body over each step (N, B): velocities from consecutive poses,
    the potential at the step's midpoint. Agrees with the integrators' own energy to O(dt^2)."""
    bodies = {b.name: b for b in mechanism.bodies}
    mass = np.array([bodies[name].mass for name in trajectory.bodies])
    inertia = np.array([inertia_matrix(bodies[name].inertia) for name in trajectory.bodies])
    rot, centres = _centres(mechanism, trajectory)
    dt = np.diff(trajectory.t)[:, None]
    v = np.diff(centres, axis=0) / dt[..., None]
    turn = matrix_to_quat(np.einsum("nbji,nbjk->nbik", rot[:-1], rot[1:]))  # R_k^T R_k+1, w >= 0
    sin_half = np.linalg.norm(turn[..., 1:], axis=-1)
    angle = 2.0 * np.arctan2(sin_half, turn[..., 0])
    scale = np.divide(angle, sin_half, out=np.full_like(angle, 2.0), where=sin_half > 1e-12)
    omega = turn[..., 1:] * (scale / dt)[..., None]  # body axes
    kinetic = 0.5 * mass * np.sum(v * v, axis=-1) + 0.5 * np.einsum("nbi,bij,nbj->nb", omega, inertia, omega)
    potential = gravity_potential(mechanism, trajectory)
    return kinetic + 0.5 * (potential[:-1] + potential[1:])


def audit(mechanism: Mechanism, trajectory: Trajectory, method: str) -> EnergyAudit:
    """The energy audit of `trajectory` (a run of `mechanism` by `method`); see the module docstring."""
    reasons = nonconservative_parts(mechanism, method)
    if reasons:
        return EnergyAudit(False, tuple(reasons))
    return _judged(mechanism, trajectory, one_sided=False)


def growth_audit(mechanism: Mechanism, trajectory: Trajectory, method: str) -> EnergyAudit:
    """`audit` for a conservative setup; for one that only loses energy (no `driven_parts`), the audit of
    E - E0 alone: a rise past the bound is as wrong as in a conservative setup; a fall is the dampers' work."""
    reasons = driven_parts(mechanism)
    if reasons:
        return EnergyAudit(False, tuple(reasons))
    return _judged(mechanism, trajectory, one_sided=bool(nonconservative_parts(mechanism, method)))


def _judged(mechanism: Mechanism, trajectory: Trajectory, one_sided: bool) -> EnergyAudit:
    """The audit of a setup that is judged: |E - E0| (or E - E0 when `one_sided`) against the bound."""
    energy = np.asarray(trajectory.energy, dtype=float)
    if len(energy) < 2:
        return EnergyAudit(True)
    potential = gravity_potential(mechanism, trajectory).sum(axis=1)
    finite = np.isfinite(energy) & np.isfinite(potential)
    if not finite.all():
        finite[np.argmin(finite):] = False  # from the first overflow on: a blow-up, past any bound
    available = float(energy[0] - potential[finite].min())
    change = energy - energy[0]
    deviation = np.where(finite, change if one_sided else np.abs(change), np.inf)
    floor = ROUNDOFF * (float(np.max(np.abs(energy[finite])) + np.max(np.abs(potential[finite])))
                        + energy_scale(mechanism))
    over = np.flatnonzero(deviation > BOUND * available + floor)
    error = float(deviation.max())
    if len(over) == 0:
        return EnergyAudit(True, error=error, available=available)
    k = int(over[0])
    per_body = body_energies(mechanism, trajectory)
    change = per_body[max(k - 1, 0)] - per_body[0]
    worst = np.argsort(-np.abs(change))[:NAMED_BODIES]
    return EnergyAudit(True, error=float(deviation[k]), available=available, failed_sample=k,
                       bodies=tuple((trajectory.bodies[i], float(change[i])) for i in worst))

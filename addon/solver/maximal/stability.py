"""The time-step limit of the maximal-coordinate step: how fast joint forces make bodies oscillate.

Seed 003's discrete equations apply the constraint forces at the knot z_1 (the force side) and ask the
rows to hold at z_2, as RATTLE does: explicit in the constraint forces, so an oscillation that the joint
forces drive faster than 2/dt grows without bound (Stormer-Verlet's limit omega dt < 2), where the tree
method's implicit midpoint stays stable. The fastest such oscillations come from the joints' geometric
stiffness: a force f held at an anchor r (from the centre of mass) resists a rotation dphi of the body
with the stiffness

    K = (f . r) I - sym(r f^T)          (body axes; tension stiffens, compression softens)

Per body, omega^2 is the largest eigenvalue of J^-1/2 K J^-1/2 with K summed over the translational
forces of its joints. A rod of mass m and length l pulled by a tension T at both ends gets
omega^2 = 12 T / (m l): a hanging chain of 1 m, 1 kg rods released at 45 degrees carries T ~ 6.9 n N at
its top, so at dt = 0.01 the estimate puts the limit at n = 481 links; measured, 460 links run and
500 fail (docs/maximal.md). It is an estimate (rotation of one body about its centre of mass, the
neighbours' motion ignored), used to explain a Newton failure (StepTooLargeError, with a time step that
works), not to refuse a step.
"""

from __future__ import annotations

import numpy as np

from ..lie import quat_to_matrix
from .joints import T2, JointFrames

STABLE_OMEGA_DT = 2.0  # Stormer-Verlet's limit
SUGGESTED_OMEGA_DT = 1.5  # the margin left when suggesting a time step (forces grow during a step)


def rotation_frequencies(model, q: np.ndarray, fr: JointFrames, lam: np.ndarray) -> np.ndarray:
    """Estimated fastest rotational oscillation (rad/s) of every body (B,) under the joint forces `lam`
    (multipliers in model.order) at the configuration with orientations q (B, 4) and joint frames fr."""
    js, bs = model.joints, model.bodies
    nb = bs.count
    rows = model.order
    kind = js.row_kind[rows]
    translational = kind <= T2
    lam_t = np.zeros((js.count, 3))
    lam_t[js.row_joint[rows][translational], kind[translational]] = lam[translational]
    force_a = -np.einsum("jik,jk->ji", js.frame_a, lam_t)  # on the parent, its body axes
    R = np.concatenate([quat_to_matrix(q), np.eye(3)[None]])
    world = np.einsum("jik,jk->ji", R[js.parent], -force_a)
    force_b = np.einsum("jki,jk->ji", R[js.child], world)  # on the child, its body axes
    arm_a = np.einsum("jik,jk->ji", js.frame_a, fr.r) + js.pa
    K = np.zeros((nb + 1, 3, 3))
    for body, f, r in ((js.parent, force_a, arm_a), (js.child, force_b, js.pb)):
        outer = r[:, :, None] * f[:, None, :]
        np.add.at(K, body, np.sum(f * r, axis=1)[:, None, None] * np.eye(3) - 0.5 * (outer + np.swapaxes(outer, 1, 2)))
    L_inv = np.linalg.inv(np.linalg.cholesky(bs.inertia))
    scaled = L_inv @ K[:nb] @ np.swapaxes(L_inv, 1, 2)
    return np.sqrt(np.maximum(np.linalg.eigvalsh(scaled)[:, -1], 0.0))


def limit_exceeded(model, q: np.ndarray, fr: JointFrames, lam: np.ndarray, dt: float) -> tuple[str, float] | None:
    """When the joint forces put a body near or past the stability limit: a sentence for the Newton
    failure (which body, its estimated omega, omega dt) and a time step that keeps a margin; else None."""
    if model.bodies.count == 0 or model.joints.count == 0:
        return None
    omega = rotation_frequencies(model, q, fr, lam)
    worst = int(np.argmax(omega))
    if omega[worst] * dt < SUGGESTED_OMEGA_DT:
        return None
    stable_dt = SUGGESTED_OMEGA_DT / omega[worst]
    return (f"the joint forces on body {model.bodies.names[worst]!r} make it oscillate at an estimated "
            f"{omega[worst]:.3g} rad/s, omega dt = {omega[worst] * dt:.2f} against the limit {STABLE_OMEGA_DT:g} "
            f"of the maximal method (its constraint forces act at the start of each step): use a time step "
            f"below {stable_dt:.3g} s (more substeps), or the tree method"), stable_dt

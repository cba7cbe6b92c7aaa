"""Blender's Bullet settings as Symplex reads them: friction combined the way Bullet combines it, and
the settings Symplex does not simulate (damping, restitution) listed with what Bullet would do with them.

Friction: Bullet's contact friction is the product mu_a mu_b of the two rigid bodies' coefficients
(btManifoldResult::calculateCombinedFriction); the maximal method's contacts combine collider
coefficients as the geometric mean sqrt(c_a c_b) (collision/world.py), the rule of Symplex's own
setups (presets and .toml files: two surfaces of one material keep its coefficient). A collider read
from a rigid body of friction mu therefore carries c = mu^2, so that sqrt(c_a c_b) = mu_a mu_b
exactly; build.py writes sqrt(c) to a built rigid body, so a preset built as rigid bodies contacts
as the preset does and reads back to the same collider.

Damping: Bullet multiplies every body's velocity by (1 - d_lin)^dt and its angular velocity by
(1 - d_ang)^dt each step (btRigidBody::applyDamping), i.e. it takes the fraction d off each second;
Blender's defaults are 0.04 and 0.1. Restitution: Bullet bounces a contact back at r_a r_b of its
approach speed; Symplex's contacts are inelastic. Neither is simulated; `ignored_settings` says so
with the effect, for Validate's and Bake's report (summary.py).
"""

from __future__ import annotations

import math
from collections import defaultdict

import bpy


def collider_friction(mu: float) -> float:
    """The collider coefficient of a rigid body of friction `mu`: geometric means of these are Bullet's products."""
    return mu * mu


def rigid_body_friction(coefficient: float) -> float:
    """The rigid body friction whose Bullet products are the geometric means of collider `coefficient`s."""
    return math.sqrt(coefficient)


def _percent(fraction: float) -> str:
    return f"{100.0 * fraction:.3g}%"


def _damping_lines(bodies: list[bpy.types.Object], seconds: float) -> list[str]:
    groups: dict[tuple[float, float], list[str]] = defaultdict(list)
    for obj in bodies:
        linear, angular = round(obj.rigid_body.linear_damping, 6), round(obj.rigid_body.angular_damping, 6)
        if linear > 0.0 or angular > 0.0:
            groups[(linear, angular)].append(obj.name)
    lines = []
    for (linear, angular), names in sorted(groups.items()):
        lost = [(what, d) for what, d in (("speed", linear), ("spin", angular)) if d > 0.0]
        per_second = " and ".join(f"{_percent(d)} of their {what}" for what, d in lost)
        over_bake = " and ".join(_percent(1.0 - (1.0 - min(d, 1.0)) ** seconds) for _what, d in lost)
        lines.append(
            f"damping not simulated: linear {linear:g}, angular {angular:g} on {len(names)} "
            f"bod{'y' if len(names) == 1 else 'ies'} (e.g. {names[0]!r}): Bullet would take {per_second} "
            f"off each second ({over_bake} over this {seconds:.3g} s bake); Symplex does not damp"
        )
    return lines


def _restitution_lines(objects: list[bpy.types.Object]) -> list[str]:
    bouncy = sorted(((obj.rigid_body.restitution, obj.name) for obj in objects if obj.rigid_body.restitution > 0.0),
                    reverse=True)
    if len(bouncy) < 2:  # Bullet's product with a restitution of 0 is 0: no bounce anywhere
        return []
    listed = ", ".join(f"{name!r} {r:g}" for r, name in bouncy[:3]) + (", ..." if len(bouncy) > 3 else "")
    return [f"restitution not simulated: {listed}: Bullet would bounce contacts back at the product of the two "
            f"restitutions (up to {bouncy[0][0] * bouncy[1][0]:.3g} of the approach speed here); Symplex "
            "contacts are inelastic"]


def ignored_settings(bodies: list[bpy.types.Object], colliders: list[bpy.types.Object], seconds: float) -> list[str]:
    """What Bullet would do with the damping of rigid bodies `bodies` and the restitution of the objects
    `colliders` that collide (none for methods without contact) over a bake of `seconds`, one line each."""
    return _damping_lines(bodies, seconds) + _restitution_lines(colliders)

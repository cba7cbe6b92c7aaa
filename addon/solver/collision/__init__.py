"""Collision detection for the maximal-coordinate method: contact points between Mechanism.colliders.

`CollisionWorld(mechanism).contacts(positions, quaternions, margin)` -> list of ContactPoint (or
`.detect(...)` -> Contacts, the same as arrays). Modules: shapes (compiled colliders, AABBs, support
maps), broadphase (sort-and-sweep), primitives (closed-form pairs, vectorised), boxbox (SAT), gjk
(GJK + EPA), manifold (multi-point contacts from features), convex (general pairs), world (the
query). Conventions and the pair table: docs/collision.md.
"""

from .world import CollisionWorld, ContactPoint, Contacts

__all__ = ["CollisionWorld", "ContactPoint", "Contacts"]

"""Which objects a rigid-body setup covers, which constraint objects of the scene it reads, and which
collection Add Setup picks for an object.

A setup covers the objects of its collection (nested ones included) or, with "Whole Scene" on, every
object of the scene: Blender's Scene Collection is not an ID a collection pointer can hold, and artists
who never make a collection have their rig there. The constraint objects of a rig live wherever
Blender's tools put them: Object > Rigid Body > Connect links its empties to the Scene Collection and
to the Rigid Body World's constraint collection ("RigidBodyConstraints"), whatever collection the
bodies are in. So the reader considers every constraint object of the setup, of the scene and of
`scene.rigidbody_world.constraints`; read.py keeps those that name a body of the setup.

Blender's own Rigid Body World collections (the world's objects, "RigidBodyWorld", and its
constraints, "RigidBodyConstraints") hold every rigid body of the scene whatever rig it belongs to:
Add Setup never picks them.
"""

from __future__ import annotations

import bpy


def internal_collections(scene: bpy.types.Scene) -> set[str]:
    """Names of the Rigid Body World's own collections of `scene` (objects and constraints)."""
    world = scene.rigidbody_world
    if world is None:
        return set()
    return {c.name for c in (world.collection, world.constraints) if c is not None}


def setup_objects(scene: bpy.types.Scene, setup) -> list[bpy.types.Object] | None:
    """The objects rigid-body setup `setup` covers, by name; None when it names no collection."""
    if setup.whole_scene:
        objects = scene.objects
    elif setup.collection is not None:
        objects = setup.collection.all_objects
    else:
        return None
    return sorted(objects, key=lambda o: o.name)


def constraint_objects(scene: bpy.types.Scene, objects: list[bpy.types.Object]) -> list[bpy.types.Object]:
    """Every object carrying a rigid body constraint among `objects`, the scene's objects and the Rigid
    Body World's constraint collection, once each, by name."""
    found = {o.name: o for o in scene.objects if o.rigid_body_constraint is not None}
    world = scene.rigidbody_world
    if world is not None and world.constraints is not None:
        found.update((o.name, o) for o in world.constraints.all_objects if o.rigid_body_constraint is not None)
    found.update((o.name, o) for o in objects if o.rigid_body_constraint is not None)
    return [found[name] for name in sorted(found)]


def scope_for(scene: bpy.types.Scene, obj: bpy.types.Object | None) -> tuple[bpy.types.Collection | None, bool]:
    """(collection, whole scene) a new rigid-body setup should cover for active object `obj`: the first
    of its collections that is not the Rigid Body World's own, else the whole scene (objects only in
    the Scene Collection, or no active object)."""
    if obj is None:
        return None, True
    internal = internal_collections(scene)
    own = [c for c in obj.users_collection if c.name not in internal and c != scene.collection]
    return (own[0], False) if own else (None, True)

"""What an open .blend holds when it has nothing for Symplex to bake, and how to make it a Symplex setup.

Used by headless.bake_file: `python -m addon bake` on such a file exits 2 with this one line instead of
saving an unchanged copy.
"""

from __future__ import annotations

from pathlib import Path

import bpy

SIDEBAR = "3D view sidebar, Symplex tab, Add Setup"


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _scene_contents(scene: bpy.types.Scene) -> list[str]:
    """Clauses for the rigid bodies and armatures of `scene` (empty when it has neither)."""
    objects = list(scene.objects)
    bodies = [o for o in objects if o.rigid_body is not None]
    constraints = [o for o in objects if o.rigid_body_constraint is not None]
    armatures = sorted(o.name for o in objects if o.type == "ARMATURE")
    parts = []
    if scene.rigidbody_world is not None or bodies or constraints:
        world = "a Rigid Body World" if scene.rigidbody_world is not None else "no Rigid Body World"
        passive = sum(1 for o in bodies if o.rigid_body.type == "PASSIVE")
        parts.append(f"scene {scene.name!r} holds {world} with {_count(len(bodies), 'rigid body', 'rigid bodies')}"
                     f"{f' ({passive} passive)' if passive else ''} and {_count(len(constraints), 'constraint')}")
    if armatures:
        shown = ", ".join(repr(a) for a in armatures[:3]) + (", ..." if len(armatures) > 3 else "")
        parts.append(f"scene {scene.name!r} holds {_count(len(armatures), 'armature')} ({shown})")
    return parts


def nothing_to_bake(path: str | Path) -> str:
    """One line for the file open at `path`, which has no Symplex setup and no vehicle rig: what it holds
    (per scene: the Rigid Body World with its bodies and constraints, armatures) and how to set it up."""
    scenes = list(bpy.data.scenes)
    found = [part for scene in scenes for part in _scene_contents(scene)]
    line = f"{path}: nothing to bake: no Symplex setup or vehicle rig in its {_count(len(scenes), 'scene')}"
    if not found:
        return (f"{line}, which hold {_count(len(bpy.data.objects), 'object')} and no rigid bodies or armatures; "
                "build one from Add > Symplex Preset in Blender, or add a setup (" + SIDEBAR + ")")
    advice = []
    if any("rigid bod" in part for part in found):
        advice.append("put the rigid bodies and their constraint objects in one collection and add a Rigid "
                      "Bodies setup for it")
    if any("armature" in part for part in found):
        advice.append("mark the armature's bones Simulate (Bone properties, Symplex) and add an Armature setup")
    return (f"{line}; {'; '.join(found)}; to bake with Symplex, open it in Blender, {' or '.join(advice)} "
            f"({SIDEBAR}), save, and bake again")

"""Settings of the Solve Shot operator, kept on the scene: which rig, obstacles and how keys are read.

PropertyGroups only; the operator (shot_operators.py) and the bridge (bridge/shot.py) read them.
"""

import bpy
from bpy.props import BoolProperty, FloatProperty, IntProperty, PointerProperty, StringProperty
from bpy.types import PropertyGroup


class SymplexShotSettings(PropertyGroup):
    """Scene-level settings of Solve Shot (Scene.symplex_shot)."""

    rig: StringProperty(name="Rig", description="Vehicle rig (chassis or armature) whose keyed poses are the "
                                                "shot's targets, or an object of the active setup whose keyed "
                                                "locations are (empty: the active object)")
    obstacles: PointerProperty(name="Obstacles", type=bpy.types.Collection,
                               description="Objects the vehicle must avoid: spheres, boxes, cylinders or convex "
                                           "meshes taken from each object's bounds (custom property "
                                           "'symplex_shape' = sphere/box/cylinder/hull picks the shape)")
    clearance: FloatProperty(name="Clearance", default=0.2, min=0.0, unit="LENGTH",
                             description="Distance kept from every obstacle")
    use_heading: BoolProperty(name="Keyed Headings", default=True,
                              description="Rotation keys of the chassis fix its heading (yaw) at that frame "
                                          "(off: only positions are keyed)")
    end_at_rest: BoolProperty(name="End at Rest", default=True,
                              description="The vehicle stops at the last keyed pose")
    smoothness: FloatProperty(name="Smoothness", default=0.01, min=0.0,
                              description="Weight of the cost on how fast the controls change (0: effort "
                                          "only; a car's steering is then free while it stands still)")
    max_force: FloatProperty(name="Max Torque", default=1000.0, min=0.0,
                             description="Mechanism shots: bound on every driven joint's torque (N m) or force (N)")
    joint_speed: FloatProperty(name="Joint Speed", default=0.0, min=0.0,
                               description="Mechanism shots: weight of the cost on the joints' speeds (0: effort "
                                           "only; long driven chains, whose passive swings cost almost no effort, "
                                           "need some, e.g. 0.01)")
    max_iterations: IntProperty(name="Max Iterations", default=300, min=10, max=5000)
    is_solving: BoolProperty(default=False, options={"SKIP_SAVE"})
    progress: FloatProperty(default=0.0, min=0.0, max=1.0, subtype="FACTOR", options={"SKIP_SAVE"})
    message: StringProperty(name="Last Solve", default="")


CLASSES = (SymplexShotSettings,)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.symplex_shot = PointerProperty(type=SymplexShotSettings)


def unregister() -> None:
    del bpy.types.Scene.symplex_shot
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

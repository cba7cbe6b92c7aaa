"""Symplex property groups: what the artist sets per scene, object, pose bone and armature. Data only.

Registered as Scene.symplex (setups and their last bake's diagnostics), Object.symplex (mass
properties of rigid bodies, initial joint state of rigid body constraint objects), PoseBone.symplex
(simulate flag, mass properties, initial velocity), Armature.symplex (loop closures) and
WindowManager.symplex_bake (progress of a running bake; not saved with the file).
"""


import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

MASS_SOURCES = [
    ("SHAPE", "Collision Shape", "Centre of mass at the origin; inertia of the collision shape filling the bounds"),
    ("CUSTOM", "Custom", "Centre of mass and inertia typed in below"),
    ("MESH", "Mesh", "Mass, centre of mass and inertia of the object's closed mesh filled with the density below "
     "(the rigid body mass is not used)"),
]
BONE_MASS_SOURCES = [
    ("ROD", "Rod", "Solid cylinder from the bone head to its tail with the given radius"),
    ("CUSTOM", "Custom", "Centre of mass and inertia typed in below"),
    ("MESH", "Bound Mesh", "Mass, centre of mass and inertia of the closed meshes bound to the bone (child objects, "
     "or mesh parts wholly in its vertex group), filled with the density below"),
]


def _density():
    return FloatProperty(name="Density", description="Mass per volume of the mesh, kg/m\u00b3 (water 1000, steel 7850)",
                         default=1000.0, min=1e-6, soft_max=25000.0)


def _use_frame_range():
    return BoolProperty(
        name="Bake Range",
        description="Bake only frames Start to End of a longer animation (else the scene's frame range); the keys "
                    "before Start and after End stay as they are",
    )


def _frame_start():
    return IntProperty(name="Start", description="First frame of the bake range: the simulation starts here",
                       default=1, min=0)


def _frame_end():
    return IntProperty(name="End", description="Last frame of the bake range", default=250, min=0)


def _blend_frames():
    return IntProperty(
        name="Blend Frames",
        description="Simulate this many frames past the end of the bake range and blend the baked motion into the "
                    "keys there (smoothly: no jump at either end); 0: the keys take over at once",
        default=0, min=0, max=10000,
    )


def _is_armature(_self, obj: bpy.types.Object) -> bool:
    return obj.type == "ARMATURE"


class SymplexDiagnostics(PropertyGroup):
    """What the last bake of a setup measured."""

    status: StringProperty(name="Status", default="")
    message: StringProperty(name="Message", default="")
    max_residual: FloatProperty(name="Max Constraint Residual", default=0.0)
    energy_drift: FloatProperty(name="Energy Drift", description="max |E - E0| / max(|E0|, 1 J)", default=0.0)
    mean_newton: FloatProperty(name="Newton Iterations (mean)", default=0.0)
    max_newton: IntProperty(name="Newton Iterations (max)", default=0)
    seconds: FloatProperty(name="Time Taken", unit="TIME_ABSOLUTE", default=0.0)
    steps: IntProperty(name="Steps", default=0)
    keys: IntProperty(name="Keys Written", default=0)
    read: StringProperty(name="Read", description="What the last Validate or Bake read: one line per item", default="")


class SymplexSetup(PropertyGroup):
    """One simulated mechanism in the scene: an armature or a collection of rigid bodies."""

    name: StringProperty(name="Name", default="Setup")
    kind: EnumProperty(
        name="Kind",
        items=[
            ("ARMATURE", "Armature", "Bones marked Simulate in one armature"),
            ("RIGID_BODIES", "Rigid Bodies", "Rigid body objects and rigid body constraints in a collection"),
        ],
        default="ARMATURE",
    )
    armature: PointerProperty(name="Armature", type=bpy.types.Object, poll=_is_armature)
    collection: PointerProperty(name="Collection", type=bpy.types.Collection)
    whole_scene: BoolProperty(
        name="Whole Scene",
        description="Rigid bodies: cover every object of the scene (the Scene Collection) instead of one collection",
    )
    root: PointerProperty(
        name="Root Object",
        type=bpy.types.Object,
        description="Object carrying the baked energy and residual curves (default: armature / first body)",
    )
    method: EnumProperty(
        name="Method",
        items=[
            ("tree", "Tree", "Generalized coordinates, variational midpoint; no contact (collision shapes are ignored)"),
            ("maximal", "Maximal", "Maximal coordinates, variational integrator; rigid bodies collide with each other "
             "and with passive objects through their collision shapes, with friction"),
        ],
        default="tree",
    )
    substeps: IntProperty(name="Substeps", description="Solver steps per frame", default=2, min=1, max=64)
    tolerance: FloatProperty(
        name="Tolerance",
        description="Newton tolerance of each solver step: constraint residual (m) and relative momentum residual",
        default=1e-10, min=1e-14, max=1e-3, precision=12,
    )
    subframes: BoolProperty(
        name="Key Subframes",
        description="One key per solver step (on subframes) instead of one per frame, for motion blur and retiming",
    )
    reduce: BoolProperty(
        name="Reduce Keys",
        description="Drop every key that linear interpolation between the kept keys reproduces to the tolerance",
    )
    reduce_tolerance: FloatProperty(
        name="Reduce Tolerance",
        description="Largest change reduction may make to a baked value at any keyed time: metres for locations, "
                    "radians for angles, plain units for quaternion and axis components",
        default=1e-4, min=0.0, precision=6,
    )
    start_from_animation: BoolProperty(
        name="Start From Animation",
        description="Bodies keyed before the start frame start with the velocity their keys arrive with (the "
                    "joint velocities nearest to it that the joints and loops allow); unkeyed bodies keep their "
                    "typed Initial Velocities",
        default=True,
    )
    use_frame_range: _use_frame_range()
    frame_start: _frame_start()
    frame_end: _frame_end()
    blend_frames: _blend_frames()
    diagnostics: PointerProperty(type=SymplexDiagnostics)


class SymplexSceneSettings(PropertyGroup):
    setups: CollectionProperty(type=SymplexSetup)
    active_setup: IntProperty(name="Active Setup", default=0)


class SymplexBakeStatus(PropertyGroup):
    """The running modal bake (on the window manager, so a bake in progress never touches the scene)."""

    is_baking: BoolProperty(name="Baking", default=False)
    setup: StringProperty(name="Setup")
    progress: FloatProperty(name="Progress", subtype="FACTOR", min=0.0, max=1.0, default=0.0)
    message: StringProperty(name="Status")


class SymplexObjectSettings(PropertyGroup):
    """Rigid body mass properties, the initial state of a rigid body constraint's joint, and on a vehicle rig's
    owner whether it starts from its chassis animation, and its bake range and blend."""

    mass_source: EnumProperty(name="Mass Properties", items=MASS_SOURCES, default="SHAPE")
    density: _density()
    com: FloatVectorProperty(name="Centre of Mass", size=3, subtype="TRANSLATION", unit="LENGTH")
    inertia: FloatVectorProperty(
        name="Inertia", description="Ixx Iyy Izz Ixy Ixz Iyz about the centre of mass, object axes", size=6
    )
    q0: FloatVectorProperty(name="Initial Coordinates", description="Joint coordinates at the start", size=6)
    start_from_animation: BoolProperty(
        name="Start From Animation",
        description="Vehicle rig: a chassis keyed before the start frame starts at the speed (and, for craft that "
                    "have them, the turn and climb rates) its keys arrive with, instead of its initial_speed",
        default=True,
    )
    use_frame_range: _use_frame_range()  # a vehicle rig's owner: its bake range and blend (as a setup's)
    frame_start: _frame_start()
    frame_end: _frame_end()
    blend_frames: _blend_frames()
    v0: FloatVectorProperty(name="Initial Velocities", description="Joint velocities at the start", size=6)
    motor_gain: FloatProperty(
        name="Motor Gain", description="Velocity servo gain (N m s/rad or N s/m) of a Motor constraint", default=100.0
    )


class SymplexBoneSettings(PropertyGroup):
    simulate: BoolProperty(name="Simulate", description="This bone is a body of the Symplex armature setup")
    mass: FloatProperty(name="Mass", default=1.0, min=1e-9, unit="MASS")
    mass_source: EnumProperty(name="Mass Properties", items=BONE_MASS_SOURCES, default="ROD")
    density: _density()
    radius: FloatProperty(name="Radius", default=0.05, min=0.0, unit="LENGTH")
    com: FloatVectorProperty(name="Centre of Mass", size=3, subtype="TRANSLATION", unit="LENGTH")
    inertia: FloatVectorProperty(name="Inertia", description="Ixx Iyy Izz Ixy Ixz Iyz, bone axes", size=6)
    v0: FloatVectorProperty(name="Initial Velocities", description="Joint velocities at the start", size=6)


class SymplexLoop(PropertyGroup):
    """A loop closure: a point on bone A stays on bone B, on an object, or on the world."""

    name: StringProperty(name="Name", default="Loop")
    bone_a: StringProperty(name="Bone A")
    point: FloatVectorProperty(name="Point", description="Point in bone A's axes, from its head", size=3,
                               subtype="TRANSLATION", unit="LENGTH")
    target: EnumProperty(
        name="Target",
        items=[("BONE", "Bone", ""), ("OBJECT", "Object", ""), ("WORLD", "World", "")],
        default="BONE",
    )
    bone_b: StringProperty(name="Bone B")
    object_b: PointerProperty(name="Object", type=bpy.types.Object)
    type: EnumProperty(
        name="Type", items=[("HINGE", "Hinge", "Rotation about one axis"), ("BALL", "Ball", "Any rotation")]
    )
    axis: EnumProperty(
        name="Axis", description="Hinge axis, one of bone A's axes", items=[("X", "X", ""), ("Y", "Y", ""), ("Z", "Z", "")]
    )


class SymplexArmatureSettings(PropertyGroup):
    loops: CollectionProperty(type=SymplexLoop)
    active_loop: IntProperty(name="Active Loop", default=0)


CLASSES = (
    SymplexDiagnostics,
    SymplexSetup,
    SymplexSceneSettings,
    SymplexBakeStatus,
    SymplexObjectSettings,
    SymplexBoneSettings,
    SymplexLoop,
    SymplexArmatureSettings,
)
OWNERS = (
    (bpy.types.Scene, SymplexSceneSettings),
    (bpy.types.Object, SymplexObjectSettings),
    (bpy.types.PoseBone, SymplexBoneSettings),
    (bpy.types.Armature, SymplexArmatureSettings),
)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    for owner, group in OWNERS:
        owner.symplex = PointerProperty(type=group)
    bpy.types.WindowManager.symplex_bake = PointerProperty(type=SymplexBakeStatus)


def unregister() -> None:
    del bpy.types.WindowManager.symplex_bake
    for owner, _group in reversed(OWNERS):
        del owner.symplex
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)

"""Scene -> Mechanism: read one Symplex setup (an armature or a collection of rigid bodies) as plain data.

`read_setup(scene, setup)` reads bpy once and returns a `SceneMechanism`: the Mechanism, the bake
targets (which object or pose bone each body drives) and the time grid: the setup's bake range
(`bake_range`: the scene's frame range unless Bake Range is on) and its Blend Frames after it. Every
problem found is collected; if any is an error, `SceneError` lists them all, each naming the object,
bone, constraint or loop at fault. `validate_setup` returns the same list (errors and warnings) without raising;
`inspect_setup` returns the SceneMechanism too when there is no error (summary.py describes it).

The readers are read_rigid.py (kind RIGID_BODIES) and read_armature.py (kind ARMATURE), sharing
read_common.py; the mappings from Blender's constraint and bone layouts to joints (layouts.py), the
orientation of joints from the world (orient.py) and shape inertias (shape_inertia.py) need no bpy.
Advice on the setup's method (solver/advice.py) joins the warnings. With the setup's Start From Animation,
bodies keyed before the start frame start at the velocity their keys arrive with (start_motion.py reads it,
solver/start_velocity.py projects it onto the joints).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy

from ..solver.advice import method_advice
from ..solver.mechfile.validate import validate_mechanism
from ..solver.model import Collider, Mechanism, MechanismError
from ..solver.start_velocity import project_start_velocity
from .read_armature import read_armature
from .read_common import Problems, Target, vec
from .read_rigid import read_rigid_bodies
from .start_motion import keyed_twists


class SceneError(MechanismError):
    """The scene cannot be read as a mechanism. `problems` lists every error, each naming its offender."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class FrameGrid:
    """The solver's time grid over a bake's frame range; needs frame_start, frame_end, fps, substeps."""

    frame_start: int
    frame_end: int
    fps: float
    substeps: int

    @property
    def dt(self) -> float:
        return 1.0 / (self.fps * self.substeps)

    @property
    def steps(self) -> int:
        return (self.frame_end - self.frame_start) * self.substeps


@dataclass(frozen=True)
class SceneMechanism(FrameGrid):
    """What a setup reads as: the mechanism, its bake targets and the time grid of the bake."""

    setup: str
    mechanism: Mechanism
    targets: tuple[Target, ...]
    root: str
    method: str
    tolerance: float
    frame_start: int
    frame_end: int
    fps: float
    substeps: int
    warnings: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # settings read but not simulated, each with its effect (bullet.py)
    blend_frames: int = 0  # the last frames of the grid, past the bake range, blend into the keys (handback.py)
    from_keys: tuple[str, ...] = ()  # bodies that start at the velocity of their keys (Start From Animation)


def scene_fps(scene: bpy.types.Scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _gravity(scene: bpy.types.Scene) -> tuple[float, float, float]:
    return vec(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)


def bake_range(scene: bpy.types.Scene, setup) -> tuple[int, int]:
    """The frames `setup` bakes: its own Start and End with Bake Range on, else the scene's frame range."""
    if setup.use_frame_range:
        return int(setup.frame_start), int(setup.frame_end)
    return scene.frame_start, scene.frame_end


def _read(scene: bpy.types.Scene, setup, problems: Problems) -> SceneMechanism | None:
    frame, frame_end = bake_range(scene, setup)
    blend = int(setup.blend_frames)
    fps = scene_fps(scene)
    substeps = int(setup.substeps)
    steps = (frame_end + blend - frame) * substeps
    dt = 1.0 / (fps * substeps)
    if frame_end <= frame:
        where = f"setup {setup.name!r}: its bake range" if setup.use_frame_range else \
            f"scene {scene.name!r}: the frame range"
        problems.errors.append(f"{where} must span at least two frames")
    shapes: list[Collider] = []
    ignored: list[str] = []
    if setup.kind == "ARMATURE":
        bodies, joints, targets, root = read_armature(scene, setup, frame, fps, dt, max(steps, 0), problems)
    else:
        bodies, joints, targets, root, shapes, ignored = read_rigid_bodies(scene, setup, frame, fps, dt,
                                                                            max(steps, 0), problems)
        joints = [j for j in joints if j.parent != j.child]
    if not bodies and not problems.errors:
        problems.errors.append(f"setup {setup.name!r}: it has no bodies")
    if problems.errors:
        return None
    source = f"scene {scene.name!r} setup {setup.name!r}"
    mechanism = Mechanism(setup.name, tuple(bodies), tuple(joints), _gravity(scene), colliders=tuple(shapes),
                          order=int(setup.order), source=source)
    try:
        mechanism = validate_mechanism(mechanism)
        twists = keyed_twists(scene, targets, frame, fps) if setup.start_from_animation else {}
        mechanism = project_start_velocity(mechanism, twists)
    except MechanismError as err:
        problems.errors.append(str(err))
        return None
    problems.warnings += [f"setup {setup.name!r}: {advice}" for advice in method_advice(mechanism, setup.method)]
    return SceneMechanism(
        setup=setup.name,
        mechanism=mechanism,
        targets=tuple(targets),
        root=root,
        method=setup.method,
        tolerance=float(setup.tolerance),
        frame_start=frame,
        frame_end=frame_end + blend,
        fps=fps,
        substeps=substeps,
        warnings=tuple(problems.warnings),
        ignored=tuple(ignored),
        blend_frames=blend,
        from_keys=tuple(twists),
    )


def read_setup(scene: bpy.types.Scene, setup) -> SceneMechanism:
    """Read `setup` (a SymplexSetup of `scene`). Raises SceneError listing every error."""
    problems = Problems()
    result = _read(scene, setup, problems)
    if result is None:
        raise SceneError(problems.errors)
    return result


def inspect_setup(scene: bpy.types.Scene, setup) -> tuple[SceneMechanism | None, list[str], list[str]]:
    """(what `setup` reads as, or None when it has errors; errors; warnings)."""
    problems = Problems()
    result = _read(scene, setup, problems)
    return result, problems.errors, problems.warnings


def validate_setup(scene: bpy.types.Scene, setup) -> tuple[list[str], list[str]]:
    """(errors, warnings) of reading `setup`; both empty when it is ready to bake."""
    _result, errors, warnings = inspect_setup(scene, setup)
    return errors, warnings


def find_setup(scene: bpy.types.Scene, name: str):
    for setup in scene.symplex.setups:
        if setup.name == name:
            return setup
    raise KeyError(f"scene {scene.name!r} has no Symplex setup named {name!r}")

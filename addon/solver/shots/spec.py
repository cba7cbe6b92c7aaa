"""What an optimal-control shot asks for, and what solving it returns: data only (solve.py solves).

Owns the frozen shot descriptions, Shot (keys, obstacles, corridors, bounds, costs) and MechanismShot
(driven joints, coordinate and body-point keys), what both are (ShotProblem), and the result container;
it imports no solver. Units SI, Z up, angles in rad.

Steps: node k sits at time k dt (k = 0..steps). A Key at step k constrains node k. Positions are the
world position of the key's body frame (vehicles: the chassis centre of mass, as baked); heading is the
yaw about world z. Velocity keys constrain the body-frame linear velocity (forward, left, up) over the
step that arrives at node k (velocity = (0, 0, 0) at the last step: docking, landing at rest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import numpy as np

from ..mechfile.validate import hull_degeneracy
from ..model import Curve, Mechanism
from ..trajectory import Trajectory

SHAPES = ("sphere", "box", "cylinder", "hull")


MAX_STEPS = 10_000  # steps of one shot: the transcription grows with them; 1e8 would fill memory for hours
MIN_DT, MAX_DT = 1e-6, 1.0  # s per step, as simulate's --dt: the solved controls replay through the simulator


class ShotError(ValueError):
    """An invalid shot; the message names the shot, the key/obstacle/field and what was expected."""


def _finite(values, n: int | None = None) -> bool:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(arr))) and (n is None or arr.shape == (n,))


@dataclass(frozen=True)
class Key:
    """A keyed pose at node `step`, full or partial.

    position: (x, y, z) world target (planar vehicles ignore z); radius > 0 turns it into "within radius".
    heading: yaw about world z (rad). velocity: body linear velocity over the arriving step (3 numbers).
    """

    step: int
    body: str = ""
    position: Optional[tuple[float, float, float]] = None
    heading: Optional[float] = None
    radius: float = 0.0
    velocity: Optional[tuple[float, float, float]] = None
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or f"key at step {self.step}"


@dataclass(frozen=True)
class Obstacle:
    """A static scene object the vehicle's bounding sphere must clear by `clearance` (m).

    shape sphere: size = (radius,); box: size = half extents (3); cylinder: size = (radius, half height),
    axis along the local z; hull: `vertices` (n, 3) in the local frame (their convex hull).
    orientation: unit quaternion (w, x, y, z) of the local frame.
    """

    name: str
    shape: str
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    size: tuple[float, ...] = ()
    vertices: tuple[tuple[float, float, float], ...] = ()
    clearance: float = 0.0


@dataclass(frozen=True)
class Corridor:
    """An axis-aligned world box the body's position must stay in over steps first..last (inclusive)."""

    name: str
    first: int
    last: int
    lower: tuple[float, float, float]
    upper: tuple[float, float, float]


@dataclass(frozen=True)
class Costs:
    """Weights of the cost terms (all >= 0); the objective is their weighted sum.

    effort: sum_k dt |u_k / u_scale|^2 over control channels (u_scale: the channel's bound);
    smoothness: sum_k dt |(u_{k+1} - u_k) / (dt u_scale)|^2; time: the duration steps * dt (with free_time);
    reference: sum_k dt |p_k - reference_k|^2, reference (steps + 1, 3) world positions of the body.
    """

    effort: float = 1.0
    smoothness: float = 0.0
    time: float = 0.0
    reference: float = 0.0
    reference_path: Optional[tuple[tuple[float, float, float], ...]] = None


@dataclass(frozen=True)
class Shot:
    """One shot: the mechanism (its vehicle gives the start state and the control channels), the time grid,
    the keys, obstacles and corridors, control bounds (channel -> (lower, upper), narrowing the vehicle's own
    limits) and the costs. free_time: dt becomes a variable in [dt_min, dt_max]. The body meets obstacles as
    body_spheres (x, y, z, radius) in its body frame (at the centre of mass, x forward), or when there are
    none as one sphere of body_radius at its origin."""

    mechanism: Mechanism
    dt: float
    steps: int
    keys: tuple[Key, ...] = ()
    obstacles: tuple[Obstacle, ...] = ()
    corridors: tuple[Corridor, ...] = ()
    bounds: tuple[tuple[str, float, float], ...] = ()
    costs: Costs = field(default_factory=Costs)
    free_time: bool = False
    dt_min: float = 0.0
    dt_max: float = 0.0
    body_radius: float = 0.0
    body_spheres: tuple[tuple[float, float, float, float], ...] = ()
    name: str = "shot"
    source: str = "<shot>"

    def __post_init__(self):
        where = f"{self.source}: shot {self.name!r}"
        if not (isinstance(self.steps, int) and 2 <= self.steps <= MAX_STEPS):
            raise ShotError(f"{where}: field 'steps' must be an integer in 2..{MAX_STEPS}, got {self.steps!r}")
        if not MIN_DT <= self.dt <= MAX_DT:  # NaN fails too
            raise ShotError(f"{where}: field 'dt' must be a time step in [{MIN_DT:g}, {MAX_DT:g}] s, got {self.dt!r}")
        if self.free_time and not (MIN_DT <= self.dt_min <= self.dt <= self.dt_max <= MAX_DT):
            raise ShotError(f"{where}: free_time needs {MIN_DT:g} <= dt_min <= dt <= dt_max <= {MAX_DT:g} s, got "
                            f"dt_min {self.dt_min!r}, dt {self.dt!r}, dt_max {self.dt_max!r}")
        for key in self.keys:
            kw = f"{where}: key {key.label!r}"
            if not (isinstance(key.step, int) and 1 <= key.step <= self.steps):
                raise ShotError(f"{kw}: field 'step' must be an integer in 1..{self.steps}, got {key.step!r}")
            if key.position is None and key.heading is None and key.velocity is None:
                raise ShotError(f"{kw}: needs at least one of 'position', 'heading', 'velocity'")
            if key.position is not None and not _finite(key.position, 3):
                raise ShotError(f"{kw}: field 'position' must be 3 finite numbers, got {key.position!r}")
            if key.velocity is not None and not _finite(key.velocity, 3):
                raise ShotError(f"{kw}: field 'velocity' must be 3 finite numbers, got {key.velocity!r}")
            if key.heading is not None and not _finite([key.heading]):
                raise ShotError(f"{kw}: field 'heading' must be a finite number (rad), got {key.heading!r}")
            if not (math.isfinite(key.radius) and key.radius >= 0):
                raise ShotError(f"{kw}: field 'radius' must be a number >= 0, got {key.radius!r}")
        for ob in self.obstacles:
            ow = f"{where}: obstacle {ob.name!r}"
            if ob.shape not in SHAPES:
                raise ShotError(f"{ow}: field 'shape' must be one of {', '.join(SHAPES)}, got {ob.shape!r}")
            need = {"sphere": 1, "box": 3, "cylinder": 2}.get(ob.shape)
            if need is not None and not (_finite(ob.size, need) and min(ob.size) > 0):
                raise ShotError(f"{ow}: field 'size' of a {ob.shape} must be {need} numbers > 0, got {ob.size!r}")
            if ob.shape == "hull":
                v = np.asarray(ob.vertices, dtype=float)
                if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4 or not np.all(np.isfinite(v)):
                    raise ShotError(f"{ow}: field 'vertices' of a hull must be at least 4 points (x, y, z), "
                                    f"got shape {v.shape}")
                flat = hull_degeneracy(v)
                if flat is not None:
                    raise ShotError(f"{ow}: field 'vertices' of a hull must span a volume; these {len(v)} points "
                                    f"are {flat}")
            if not _finite(ob.position, 3):
                raise ShotError(f"{ow}: field 'position' must be 3 finite numbers, got {ob.position!r}")
            q = np.asarray(ob.orientation, dtype=float)
            if q.shape != (4,) or abs(np.linalg.norm(q) - 1) > 1e-6:
                raise ShotError(f"{ow}: field 'orientation' must be a unit quaternion (w, x, y, z), "
                                f"got {ob.orientation!r}")
            if not (math.isfinite(ob.clearance) and ob.clearance >= 0):
                raise ShotError(f"{ow}: field 'clearance' must be a number >= 0, got {ob.clearance!r}")
        for c in self.corridors:
            cw = f"{where}: corridor {c.name!r}"
            if not (0 <= c.first <= c.last <= self.steps):
                raise ShotError(f"{cw}: steps must satisfy 0 <= first <= last <= {self.steps}, "
                                f"got {c.first!r}..{c.last!r}")
            if not (_finite(c.lower, 3) and _finite(c.upper, 3)) or np.any(np.asarray(c.lower) > np.asarray(c.upper)):
                raise ShotError(f"{cw}: 'lower' and 'upper' must be 3 numbers each with lower <= upper")
        for i, sphere in enumerate(self.body_spheres):
            if not (_finite(sphere, 4) and sphere[3] > 0):
                raise ShotError(f"{where}: body_spheres[{i}] must be 4 numbers (x, y, z, radius > 0), got {sphere!r}")
        for name, lo, hi in self.bounds:
            if not lo <= hi:
                raise ShotError(f"{where}: bounds of control {name!r} must have lower <= upper, got {lo!r}, {hi!r}")
        for name in ("effort", "smoothness", "time", "reference"):
            value = getattr(self.costs, name)
            if not (math.isfinite(value) and value >= 0):
                raise ShotError(f"{where}: cost weight {name!r} must be a number >= 0, got {value!r}")
        if self.costs.reference > 0:
            ref = np.asarray(self.costs.reference_path, dtype=float) if self.costs.reference_path else None
            if ref is None or ref.shape != (self.steps + 1, 3):
                raise ShotError(f"{where}: the 'reference' cost needs reference_path of shape "
                                f"({self.steps + 1}, 3), got {None if ref is None else ref.shape}")


@dataclass(frozen=True)
class Control:
    """A driven single-dof joint and its force/torque bounds."""

    joint: str
    lower: float = -np.inf
    upper: float = np.inf


@dataclass(frozen=True)
class MechanismKey:
    """A target at `frame`: coordinate `coordinate` = value, or world position of a body point.

    components: which world axes of `position` are keyed ("xyz" = all; "xz" a partial key).
    """

    name: str
    frame: int
    coordinate: str | None = None
    value: float = 0.0
    body: str | None = None
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    components: str = "xyz"
    tolerance: float = 1e-6

    def describe(self) -> str:
        what = f"coordinate {self.coordinate!r}" if self.coordinate else f"body {self.body!r} ({self.components})"
        return f"key {self.name!r} (frame {self.frame}, {what})"


@dataclass(frozen=True)
class MechanismShot:
    """One shot of a tree mechanism: the joints it drives (controls, with bounds), coordinate and body-point
    keys, the effort weight, and whether it ends at rest. Its names are checked against the compiled
    mechanism when it is solved (mechanism_shots.py).

    speed: weight of the joint-speed cost sum_k dt |(q_k+1 - q_k) / dt|^2 (rad/s or m/s squared), 0 = none.
    It curves the directions the effort alone leaves nearly flat (a floppy chain's passive swings), which
    makes the minimum-effort program of long driven chains solvable (docs/benchmarks_shots.md)."""

    name: str
    mechanism: Mechanism
    dt: float
    steps: int
    controls: tuple[Control, ...]
    keys: tuple[MechanismKey, ...] = ()
    effort: float = 1.0
    rest_at_end: bool = False
    source: str = "<memory>"
    speed: float = 0.0


class ShotProblem(Protocol):
    """What every shot is, whichever kind: a mechanism, a time grid of `steps` steps of `dt`, a name, and the
    file (or scene) it came from. Two kinds satisfy it: Shot (keyed body poses, obstacles and corridors on a
    vehicle or a mechanism's bodies, controls bounded by channel) and MechanismShot (chosen joints of a tree
    mechanism driven to coordinate and body-point keys). shotfile.load_shot returns one, solve.solve_shot
    solves one."""

    @property
    def name(self) -> str: ...

    @property
    def mechanism(self) -> Mechanism: ...

    @property
    def dt(self) -> float: ...

    @property
    def steps(self) -> int: ...

    @property
    def source(self) -> str: ...


@dataclass
class ShotResult:
    """A solved shot.

    trajectory: the motion replayed through the plain simulator with the solved controls (what is baked).
    controls: channel -> values at control_times[channel] (linear keys; re-simulating with these curves
    reproduces the motion). states: (steps + 1, n) solved node states (state_names). key_errors: key
    label -> largest error of its conditions (m, rad or m/s; radius keys: distance beyond the radius).
    replay_error: largest difference between the solved and the replayed body positions (m). timings: the
    interior point's CPU seconds per part (evaluation, factorisation, line search and the interior point's own
    work, summing to the whole solve; nlp.NLPResult.timings).
    kkt: how its KKT matrices were factorised (nlp.NLPResult.kkt: the stage recursion or sparse LU, and why).
    """

    trajectory: Trajectory | None
    controls: dict[str, np.ndarray]
    control_times: dict[str, np.ndarray]
    report: str
    status: str
    iterations: int
    wall_time: float
    key_errors: dict[str, float]
    states: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    state_names: tuple[str, ...] = ()
    dt: float = 0.0
    objective: float = float("nan")
    constraint_violation: float = float("nan")
    replay_error: float = float("nan")
    obstacle_clearance: dict[str, float] = field(default_factory=dict)
    solution: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the NLP vector (a warm start for re-solves)
    timings: dict[str, float] = field(default_factory=dict)
    kkt: str = ""

    def curves(self) -> tuple[tuple[str, Curve], ...]:
        """(channel, linear Curve) pairs, ready for Vehicle.controls."""
        return tuple((name, Curve(tuple(map(float, self.control_times[name])), tuple(map(float, values)), "linear"))
                     for name, values in self.controls.items())


Progress = Callable[[int, dict], Optional[bool]]

"""The Mechanism description: bodies, joints, springs, forces, colliders, keyed curves and the Vehicle as
frozen plain data.

This module owns the data every method starts from and nothing else: no file parsing (see
mechfile/), no Blender (see addon/bridge), no dynamics (see tree/), and no vehicle type's parameters
(vehicles/spec.py: a Vehicle reads its spec through the VehicleSpec protocol, so this module imports none
of the packages that build on it). Everything is immutable; build a new Mechanism with
dataclasses.replace to change one.

Conventions: Z-up, SI units, quaternions (w, x, y, z). A body's `position` and
`orientation` are the world pose of its frame at the reference configuration; `com` is in body
axes; `inertia` is about the centre of mass in body axes, (Ixx, Iyy, Izz, Ixy, Ixz, Iyz).
A joint's `anchor` and `axis` are world quantities at the reference configuration, and its
coordinates `q0` are measured from that reference.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, Union, runtime_checkable

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]

WORLD = "world"

# Degrees of freedom per joint type, in the order the coordinates appear in q0 / v0.
#   revolute: angle about axis; prismatic: slide along axis; cylindrical: angle, slide;
#   universal: angle about axis, angle about axis2; planar (axis = plane normal): slide along
#   axis2, slide along axis x axis2, angle about axis; ball: rotation vector (3);
#   free: translation (3, world axes), rotation vector (3).
JOINT_DOFS: dict[str, int] = {
    "revolute": 1,
    "prismatic": 1,
    "cylindrical": 2,
    "universal": 2,
    "planar": 3,
    "ball": 3,
    "free": 6,
    "fixed": 0,
}
JOINT_TYPES = tuple(JOINT_DOFS)


@dataclass(frozen=True)
class Curve:
    """A keyed scalar curve: samples (times, values) with linear or cubic (Catmull-Rom) interpolation.

    Outside the keyed range the curve holds its end values (and its derivative is zero there).
    """

    times: tuple[float, ...]
    values: tuple[float, ...]
    interpolation: str = "linear"  # "linear" | "cubic"


@dataclass(frozen=True)
class Motor:
    """A joint actuator on a single-dof joint.

    mode "torque": generalized force from `torque` (a Curve, N m or N).
    mode "velocity": force = gain * (target_velocity - qdot), a linear servo, clamped to max_force
    only for reporting (the integrator keeps it linear so the Newton Jacobian stays exact).
    """

    mode: str
    torque: Curve | None = None
    target_velocity: float = 0.0
    gain: float = 0.0


@dataclass(frozen=True)
class Body:
    name: str
    mass: float
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat = (1.0, 0.0, 0.0, 0.0)
    com: Vec3 = (0.0, 0.0, 0.0)
    inertia: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    parent: str
    child: str
    anchor: Vec3 = (0.0, 0.0, 0.0)
    axis: Vec3 = (1.0, 0.0, 0.0)
    axis2: Vec3 | None = None  # universal: second axis; planar: in-plane direction
    q0: tuple[float, ...] = ()
    v0: tuple[float, ...] = ()
    lower: tuple[float, ...] | None = None  # per-dof limits (revolute/prismatic/cylindrical/...)
    upper: tuple[float, ...] | None = None
    stiffness: float = 0.0  # joint spring towards `rest`, per dof (N m/rad or N/m)
    rest: tuple[float, ...] | None = None
    damping: float = 0.0  # viscous, per dof (N m s/rad or N s/m)
    motor: Motor | None = None
    prescribed: Curve | None = None  # kinematic joint: its coordinate follows this curve

    @property
    def ndof(self) -> int:
        return JOINT_DOFS[self.type]


@dataclass(frozen=True)
class Spring:
    """A linear spring-damper between a point on body_a and a point on body_b (body-frame points)."""

    name: str
    body_a: str
    body_b: str
    point_a: Vec3 = (0.0, 0.0, 0.0)
    point_b: Vec3 = (0.0, 0.0, 0.0)
    stiffness: float = 0.0
    rest_length: float = 0.0
    damping: float = 0.0


@dataclass(frozen=True)
class Force:
    """An external force (world axes) applied at a body-frame point, optionally keyed per component."""

    name: str
    body: str
    point: Vec3 = (0.0, 0.0, 0.0)
    force: Vec3 = (0.0, 0.0, 0.0)
    scale: Curve | None = None  # multiplies `force` over time when given


COLLIDER_SHAPES = ("sphere", "box", "capsule", "cylinder", "plane", "hull")
# Number of `size` values per collider shape: sphere (radius,); box (hx, hy, hz) half extents;
# capsule and cylinder (radius, half_length) along the collider frame's z; plane () is the
# collider frame's z = 0 plane with +z the outward normal; hull () takes `vertices` instead.
COLLIDER_SIZES: dict[str, int] = {"sphere": 1, "box": 3, "capsule": 2, "cylinder": 2, "plane": 0, "hull": 0}


@dataclass(frozen=True)
class Collider:
    """A convex collision shape fixed to a body (or to the world when body is WORLD).

    `position` and `orientation` place the collider frame in the body frame (in the world frame for
    WORLD colliders); `size` is read per shape as COLLIDER_SIZES says; `vertices` (hull only) are
    points in the collider frame whose convex hull is the shape; `friction` is the Coulomb
    coefficient, combined per contact pair by the collision module.
    """

    name: str
    body: str
    shape: str
    size: tuple[float, ...] = ()
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat = (1.0, 0.0, 0.0, 0.0)
    vertices: tuple[Vec3, ...] = ()
    friction: float = 0.5


@dataclass(frozen=True)
class Mechanism:
    name: str
    bodies: tuple[Body, ...]
    joints: tuple[Joint, ...]
    gravity: Vec3 = (0.0, 0.0, -9.81)
    springs: tuple[Spring, ...] = ()
    forces: tuple[Force, ...] = ()
    colliders: tuple[Collider, ...] = ()  # contact shapes (the 'maximal' method; others ignore them)
    vehicle: Vehicle | None = None  # the 'vehicle' method's input (Vehicle below); other methods ignore it
    order: int = 2  # accuracy order of the 'tree' method (ORDERS: 2 midpoint, 4..8 Galerkin); others need 2
    source: str = field(default="<memory>", compare=False)  # file or scene it came from, for messages

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(f"{self.source}: no body named {name!r}")

    def joint(self, name: str) -> Joint:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(f"{self.source}: no joint named {name!r}")

    def collider(self, name: str) -> Collider:
        for c in self.colliders:
            if c.name == name:
                return c
        raise KeyError(f"{self.source}: no collider named {name!r}")

    def replace(self, **changes) -> "Mechanism":
        return dataclasses.replace(self, **changes)


ORDERS = (2, 4, 6, 8)  # Mechanism.order: 2s for the Galerkin degree s = 1..4 (tree/galerkin.py)


class MechanismError(ValueError):
    """Invalid mechanism input; the message names the file or scene, the table, the entry and the field."""


class VehicleError(ValueError):
    """Invalid vehicle input; the message names the vehicle, the field, what was expected and what came."""


@runtime_checkable
class VehicleSpec(Protocol):
    """What a Vehicle reads of its parameters: one vehicle type's spec (the classes in vehicles/spec.py, which
    import this module, so this module names them only through this protocol)."""

    vehicle_type: ClassVar[str]  # the Vehicle.type it belongs to: "car", "boat", ...
    control_names: ClassVar[tuple[str, ...]]  # the controls a Vehicle of this type may key
    name: str


Control = Union[Curve, float]

# A trailer starts with its axle behind the tow ball: |theta - beta| below a right angle. The model itself has no
# hitch articulation limit (trailer.py); beyond this the drawbar would point forward along the car.
MAX_START_HITCH_ANGLE = math.pi / 2


@dataclass(frozen=True)
class Vehicle:
    """One vehicle to simulate: its parameters, where it starts, and its keyed controls.

    position, orientation: the world pose of the body frame at t = 0 (a car's frame is its centre of
    mass too; the car stays on the ground plane z = com_height and keeps only the heading about z).
    velocity: the body twist at t = 0, (wx, wy, wz, vx, vy, vz); a car reads only vx (forward speed) and
    takes its yaw rate from the steering. controls: (name, Curve or constant) pairs, names from
    the spec's control_names; a control not given is zero. current: uniform world water velocity (boats).
    hitch_angle: a car with trailer's hitch angle theta - beta at t = 0 (rad; + the trailer's axle swung to
    the car's left), |hitch_angle| < MAX_START_HITCH_ANGLE.
    """

    type: str
    spec: VehicleSpec
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat = (1.0, 0.0, 0.0, 0.0)
    velocity: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    controls: tuple[tuple[str, Control], ...] = field(default=())
    current: Vec3 = (0.0, 0.0, 0.0)
    name: str = "vehicle"
    hitch_angle: float = 0.0

    def __post_init__(self):
        where = f"vehicle {self.name!r}"
        if not isinstance(self.spec, VehicleSpec):
            raise VehicleError(f"{where}: field 'spec' must be a vehicle spec (vehicles/spec.py), "
                               f"got {type(self.spec).__name__}")
        if self.type != self.spec.vehicle_type:
            raise VehicleError(f"{where}: field 'spec' must be the spec of a {self.type!r}, got a "
                               f"{type(self.spec).__name__}, the spec of a {self.spec.vehicle_type!r}")
        if len(self.velocity) != 6:
            raise VehicleError(f"{where}: field 'velocity' must be 6 numbers (wx wy wz vx vy vz), "
                               f"got {self.velocity!r}")
        if self.hitch_angle != 0.0 and self.type != "car_trailer":
            raise VehicleError(f"{where}: field 'hitch_angle' is a car with trailer's start; a {self.type} has no "
                               f"trailer, got {self.hitch_angle!r}")
        if not abs(self.hitch_angle) < MAX_START_HITCH_ANGLE:
            raise VehicleError(f"{where}: field 'hitch_angle' must be a number of rad within +-pi/2 (the trailer's "
                               f"axle behind the tow ball), got {self.hitch_angle!r}")
        allowed = self.spec.control_names
        for key, _ in self.controls:
            if key not in allowed:
                raise VehicleError(f"{where}: unknown control {key!r} for a {self.type}; "
                                   f"valid controls: {', '.join(allowed) or 'none'}")

    def control(self, key: str) -> Control:
        """The control named `key` (a Curve or a constant); 0.0 when not given."""
        for name, value in self.controls:
            if name == key:
                return value
        return 0.0

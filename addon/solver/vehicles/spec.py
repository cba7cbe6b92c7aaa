"""Vehicle parameters and the Vehicle description: frozen dataclasses, validated on creation.

Owns what a vehicle *is* (mass properties, geometry, limits) and how one is set up for a run (initial
pose and velocity, keyed controls); not how it moves (car.py, holonomic.py). Units SI, Z up, body axes
x forward, y left, z up, quaternions (w, x, y, z). Each spec class names its vehicle type and its controls
(`vehicle_type`, `control_names`): that is all model.py's `Vehicle`, which holds one, reads of it.

The shipped presets (sedan, kart, ...) are files, presets/vehicles/*.toml, each number with its source;
mechfile/read.py reads them (`vehicle_presets`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Union

from ..model import VehicleError
from ..trajectory import SolverError


class VehicleStepError(SolverError):
    """A vehicle left the range its model covers during a run (a capsized boat, steering reversing
    faster than the step resolves); simulate() returns the steps before it with status 'failed'."""


def _check_positive(owner: object, name: str, *names: str, allow_zero: tuple[str, ...] = ()) -> None:
    for key in names:
        value = getattr(owner, key)
        ok = math.isfinite(value) and (value >= 0 if key in allow_zero else value > 0)
        if not ok:
            bound = ">= 0" if key in allow_zero else "> 0"
            raise VehicleError(f"{name}: field '{key}' must be a finite number {bound}, got {value!r}")


@dataclass(frozen=True)
class CarSpec:
    """A rear-wheel-driven car, bicycle-model steering (seed §5.2.1, Kelly & Murray car).

    The body frame of the model sits at the rear-axle centre on the ground; the centre of mass is
    `com_ahead_of_rear_axle` in front of it at `com_height`. Torques are generalised forces on the
    rear-axle rolling angle (contact force times wheel radius), summed over both rear wheels.
    """

    vehicle_type: ClassVar[str] = "car"
    control_names: ClassVar[tuple[str, ...]] = ("drive_torque", "brake_torque", "steer")  # N m, N m (>= 0), rad

    name: str
    mass: float  # kg, vehicle with driver
    yaw_inertia: float  # kg m^2 about the vertical axis through the centre of mass
    wheelbase: float  # m, rear axle to front axle
    track: float  # m, wheel centre to wheel centre (front and rear alike)
    wheel_radius: float  # m, loaded rolling radius
    com_ahead_of_rear_axle: float  # m
    com_height: float  # m above the ground
    rear_wheel_inertia: float  # kg m^2 per wheel about its axle (wheel, tyre, brake disc)
    front_wheel_inertia: float  # kg m^2 per wheel about its axle
    max_steer: float  # rad, largest bicycle-model steering angle (the rack's end stop)
    max_drive_torque: float  # N m at the rear axle, for controllers and presets
    max_brake_torque: float  # N m equivalent at the rear-axle coordinate

    def __post_init__(self):
        _check_positive(self, f"car {self.name!r}", "mass", "yaw_inertia", "wheelbase", "track", "wheel_radius",
                        "com_height", "max_drive_torque", "max_brake_torque", "com_ahead_of_rear_axle",
                        "rear_wheel_inertia", "front_wheel_inertia", "max_steer",
                        allow_zero=("com_ahead_of_rear_axle", "rear_wheel_inertia", "front_wheel_inertia",
                                    "max_drive_torque", "max_brake_torque"))
        if not self.max_steer < math.pi / 2:
            raise VehicleError(f"car {self.name!r}: field 'max_steer' must be below pi/2 rad (90 degrees), "
                               f"got {self.max_steer!r}: the car model uses tan(steer)")


@dataclass(frozen=True)
class RigidBodySpec:
    """A free rigid body (the seed's test system), frame at the centre of mass."""

    vehicle_type: ClassVar[str] = "rigid_body"
    control_names: ClassVar[tuple[str, ...]] = ()

    name: str
    mass: float  # kg
    inertia: tuple[float, ...]  # kg m^2 about the COM: 3 principal moments or Ixx Iyy Izz Ixy Ixz Iyz

    def __post_init__(self):
        _check_positive(self, f"rigid body {self.name!r}", "mass")
        if len(self.inertia) not in (3, 6) or not all(math.isfinite(v) for v in self.inertia):
            raise VehicleError(f"rigid body {self.name!r}: field 'inertia' must be 3 or 6 finite numbers, "
                               f"got {self.inertia!r}")


@dataclass(frozen=True)
class HelicopterSpec:
    """The seed's simple helicopter (§4.3.1): one rigid body, main-rotor lift and a tail-rotor force.

    Body frame at the centre of mass. Lift acts at the rotor hub, `rotor_height` above the centre of
    mass, along the blade-tilted shaft; the tail force acts `tail_arm` behind it along -y.
    """

    vehicle_type: ClassVar[str] = "helicopter"
    control_names: ClassVar[tuple[str, ...]] = ("collective", "tail", "blade_pitch", "blade_roll")  # N, N, rad, rad

    name: str
    mass: float  # kg
    inertia: tuple[float, ...]  # kg m^2 about the COM (3 principal or 6 values, as RigidBodySpec)
    rotor_height: float  # m, hub above the centre of mass (the seed's d_t)
    tail_arm: float  # m, tail rotor behind the centre of mass (the seed's d_r)
    rotor_radius: float  # m, for rigs and rotor spin only
    max_collective: float  # N, largest main-rotor thrust
    max_tail_force: float  # N, largest tail-rotor thrust magnitude
    max_blade_tilt: float  # rad, largest blade pitch or roll (cyclic) angle

    def __post_init__(self):
        _check_positive(self, f"helicopter {self.name!r}", "mass", "rotor_height", "tail_arm", "rotor_radius",
                        "max_collective", "max_tail_force", "max_blade_tilt")
        if len(self.inertia) not in (3, 6):
            raise VehicleError(f"helicopter {self.name!r}: field 'inertia' must be 3 or 6 numbers, "
                               f"got {self.inertia!r}")


@dataclass(frozen=True)
class BoatSpec:
    """A boat with a box hull and two rear thrusters (body frame at the centre of mass, x forward)."""

    vehicle_type: ClassVar[str] = "boat"
    control_names: ClassVar[tuple[str, ...]] = ("thrust_right", "thrust_left")  # N

    name: str
    mass: float  # kg
    inertia: tuple[float, ...]  # kg m^2 about the COM: 3 principal or 6 values
    hull_length: float  # m
    hull_beam: float  # m
    hull_height: float  # m, keel to deck
    keel_below_com: float  # m
    thruster_behind_com: float  # m, thrusters at x = -this
    thruster_spacing: float  # m, between the two thrusters (at y = +-spacing/2)
    thruster_below_com: float  # m, thrusters at z = -this
    drag: tuple[float, float, float]  # N s/m, surge, sway, heave damping at the design displacement
    max_thrust: float  # N per thruster
    water_density: float = 1000.0  # kg/m^3 (fresh water; sea water 1025)

    def __post_init__(self):
        for key in ("mass", "hull_length", "hull_beam", "hull_height", "keel_below_com", "max_thrust",
                    "water_density"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value > 0):
                raise VehicleError(f"boat {self.name!r}: field '{key}' must be a finite number > 0, got {value!r}")
        if len(self.drag) != 3 or min(self.drag) < 0:
            raise VehicleError(f"boat {self.name!r}: field 'drag' must be 3 numbers >= 0, got {self.drag!r}")
        full = self.water_density * self.hull_length * self.hull_beam * self.hull_height
        if self.mass >= full:
            raise VehicleError(f"boat {self.name!r}: mass {self.mass} kg sinks the hull (its full volume "
                               f"displaces {full:.4g} kg)")

    @property
    def design_draft(self) -> float:
        """Draft (m) at which the level hull displaces its own mass."""
        return self.mass / (self.water_density * self.hull_length * self.hull_beam)


@dataclass(frozen=True)
class SnakeboardSpec:
    """A snakeboard (seed §5.2.2, Ostrowski's model): a board on two steerable wheel sets and a rider's rotor.

    Body frame at the board centre; wheel sets at x = +-half_length, the front one turned by +steer and
    the rear one by -steer. yaw_inertia is the whole system's about the centre, rotor included.
    """

    vehicle_type: ClassVar[str] = "snakeboard"
    # rad, rad: the rider's twist and foot angle, prescribed
    control_names: ClassVar[tuple[str, ...]] = ("rotor", "steer")

    name: str
    mass: float  # kg, board and rider
    half_length: float  # m, centre to each wheel set (the seed's l)
    yaw_inertia: float  # kg m^2, board and rider about the vertical through the centre
    rotor_inertia: float  # kg m^2, the twisting part (the rider's torso and arms; the seed's I)
    wheel_inertia: float  # kg m^2, each wheel set about its vertical pivot (the seed's J)
    max_steer: float  # rad

    def __post_init__(self):
        _check_positive(self, f"snakeboard {self.name!r}", "mass", "half_length", "yaw_inertia", "rotor_inertia",
                        "wheel_inertia", "max_steer", allow_zero=("wheel_inertia",))
        if not self.max_steer < math.pi / 2:
            raise VehicleError(f"snakeboard {self.name!r}: field 'max_steer' must be below pi/2 rad, "
                               f"got {self.max_steer!r}")
        if not self.rotor_inertia < self.yaw_inertia:
            raise VehicleError(f"snakeboard {self.name!r}: field 'rotor_inertia' ({self.rotor_inertia}) must be below "
                               f"'yaw_inertia' ({self.yaw_inertia}), which includes it")


@dataclass(frozen=True)
class HovercraftSpec:
    """A hovercraft: a rigid body on an air cushion, two rear thrusters, quadratic skirt drag.

    Body frame at the centre of mass, x forward. The cushion acts at the four skirt corners
    (+-skirt_length/2, +-skirt_width/2, -skirt_below_com), each a quarter of a spring-damper on its height
    above the ground (world z = 0) that lifts only below `cushion_height`; the level craft rests with its
    skirt m g / cushion_stiffness below that height.
    """

    vehicle_type: ClassVar[str] = "hovercraft"
    control_names: ClassVar[tuple[str, ...]] = ("thrust_right", "thrust_left")  # N

    name: str
    mass: float  # kg
    inertia: tuple[float, ...]  # kg m^2 about the COM: 3 principal or 6 values
    skirt_length: float  # m, between the front and rear cushion corners
    skirt_width: float  # m, between the left and right cushion corners
    skirt_below_com: float  # m, the skirt corners at body z = -this
    cushion_height: float  # m, skirt height above the ground where the cushion stops lifting
    cushion_stiffness: float  # N/m, all four corners together
    cushion_damping: float  # N s/m, all four corners together
    drag: tuple[float, float]  # N s^2/m^2, quadratic surge and sway skirt drag
    yaw_drag: float  # N m s^2, quadratic yaw drag
    thruster_behind_com: float  # m, thrusters at x = -this
    thruster_spacing: float  # m, between the two thrusters (at y = +-spacing/2)
    thruster_above_com: float  # m, thrust lines at z = +this
    max_thrust: float  # N per thruster

    def __post_init__(self):
        where = f"hovercraft {self.name!r}"
        _check_positive(self, where, "mass", "skirt_length", "skirt_width", "skirt_below_com", "cushion_height",
                        "cushion_stiffness", "cushion_damping", "yaw_drag", "thruster_behind_com",
                        "thruster_spacing", "thruster_above_com", "max_thrust",
                        allow_zero=("skirt_below_com", "cushion_damping", "yaw_drag", "thruster_behind_com",
                                    "thruster_above_com"))
        if len(self.inertia) not in (3, 6):
            raise VehicleError(f"{where}: field 'inertia' must be 3 or 6 numbers, got {self.inertia!r}")
        if len(self.drag) != 2 or not all(math.isfinite(v) and v >= 0 for v in self.drag):
            raise VehicleError(f"{where}: field 'drag' must be 2 numbers >= 0 (surge, sway), got {self.drag!r}")
        if not self.static_sag < self.cushion_height:
            raise VehicleError(f"{where}: the cushion cannot lift the craft: m g / cushion_stiffness = "
                               f"{self.static_sag:.4g} m is not below cushion_height {self.cushion_height!r} m")

    @property
    def static_sag(self) -> float:
        """How far (m) the level craft at rest sits below cushion_height: m g / k."""
        return self.mass * 9.81 / self.cushion_stiffness

    @property
    def rest_height(self) -> float:
        """Centre of mass height (m) of the level craft at rest."""
        return self.cushion_height - self.static_sag + self.skirt_below_com


@dataclass(frozen=True)
class CarTrailerSpec(CarSpec):
    """A car (every CarSpec field) towing a single-axle trailer on a ball hitch: a nonholonomic chain.

    The hitch sits on the car's centre line `hitch_behind_rear_axle` behind its rear-axle centre; the
    trailer's axle centre is `hitch_to_trailer_axle` behind the hitch along the trailer's heading, its
    centre of mass `trailer_com_ahead_of_axle` ahead of its axle (toward the hitch: the nose weight).
    Neither axle slips sideways.
    """

    vehicle_type: ClassVar[str] = "car_trailer"
    control_names: ClassVar[tuple[str, ...]] = ("drive_torque", "brake_torque", "steer")  # as the car

    trailer_mass: float  # kg, laden trailer
    trailer_yaw_inertia: float  # kg m^2 about the vertical through the trailer's centre of mass
    hitch_behind_rear_axle: float  # m, car rear-axle centre to the tow ball
    hitch_to_trailer_axle: float  # m, tow ball to the trailer's axle centre
    trailer_com_ahead_of_axle: float  # m
    trailer_com_height: float  # m above the ground
    trailer_track: float  # m, trailer wheel centre to wheel centre
    trailer_wheel_radius: float  # m, loaded rolling radius
    trailer_wheel_inertia: float  # kg m^2 per trailer wheel about its axle

    def __post_init__(self):
        super().__post_init__()
        _check_positive(self, f"car with trailer {self.name!r}", "trailer_mass", "trailer_yaw_inertia",
                        "hitch_behind_rear_axle", "hitch_to_trailer_axle", "trailer_com_ahead_of_axle",
                        "trailer_com_height", "trailer_track", "trailer_wheel_radius", "trailer_wheel_inertia",
                        allow_zero=("hitch_behind_rear_axle", "trailer_com_ahead_of_axle", "trailer_wheel_inertia"))
        if not self.trailer_com_ahead_of_axle <= self.hitch_to_trailer_axle:
            raise VehicleError(f"car with trailer {self.name!r}: field 'trailer_com_ahead_of_axle' "
                               f"({self.trailer_com_ahead_of_axle}) must not exceed 'hitch_to_trailer_axle' "
                               f"({self.hitch_to_trailer_axle}): the centre of mass lies between axle and hitch")


@dataclass(frozen=True)
class TankSpec:
    """A tracked vehicle steered by skidding (differential track forces); body frame at the centre of mass,
    midway between the tracks and over the middle of their ground contact, x forward.

    Model (vehicles/tank.py): no sideways slip at the centre (the tracks resist sideways sliding as a whole);
    turning scrapes the tracks sideways against a Coulomb yaw moment lateral_friction m g L / 4 (uniform
    ground pressure along a contact length L); rolling resistance rolling_resistance m g against the motion.
    """

    vehicle_type: ClassVar[str] = "tank"
    # N, each track's tractive force (negative: reverse)
    control_names: ClassVar[tuple[str, ...]] = ("force_left", "force_right")

    name: str
    mass: float  # kg, combat weight
    yaw_inertia: float  # kg m^2 about the vertical through the centre of mass
    track_gauge: float  # m, track centre to track centre
    track_length: float  # m, length of each track's ground contact
    sprocket_radius: float  # m, drive sprocket pitch radius: track speed / sprocket rate
    road_wheel_radius: float  # m, for rigs: road wheels roll on the track at track speed
    lateral_friction: float  # coefficient of lateral resistance mu_t (sideways track sliding)
    rolling_resistance: float  # coefficient f_r: rolling resistance force / weight
    max_track_force: float  # N per track, tractive effort limit
    com_height: float  # m above the ground

    def __post_init__(self):
        _check_positive(self, f"tank {self.name!r}", "mass", "yaw_inertia", "track_gauge", "track_length",
                        "sprocket_radius", "road_wheel_radius", "lateral_friction", "rolling_resistance",
                        "max_track_force", "com_height", allow_zero=("lateral_friction", "rolling_resistance"))


Spec = Union[CarSpec, RigidBodySpec, HelicopterSpec, BoatSpec, SnakeboardSpec, HovercraftSpec, CarTrailerSpec,
             TankSpec]

VEHICLE_TYPES: dict[str, type[Spec]] = {spec.vehicle_type: spec for spec in (
    CarSpec, RigidBodySpec, HelicopterSpec, BoatSpec, SnakeboardSpec, HovercraftSpec, CarTrailerSpec, TankSpec)}
CONTROL_NAMES = {kind: spec.control_names for kind, spec in VEHICLE_TYPES.items()}

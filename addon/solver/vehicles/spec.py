"""Vehicle parameters and the Vehicle description: frozen dataclasses, validated on creation, plus presets.

Owns what a vehicle *is* (mass properties, geometry, limits) and how one is set up for a run (initial
pose and velocity, keyed controls); not how it moves (car.py, holonomic.py). Units SI, Z up, body axes
x forward, y left, z up, quaternions (w, x, y, z). `Vehicle` is the proposed `Mechanism.vehicle` field
(issue 5); it lives here until model.py grows it.

Every preset number carries its source. "[estimate]" marks a value derived from the stated rule or
formula rather than read from a document; "[from memory]" marks a published value quoted without the
document at hand, to be checked before the presets become TOML files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Union

from ..model import Curve, Quat, Vec3
from ..trajectory import SolverError


class VehicleError(ValueError):
    """Invalid vehicle input; the message names the vehicle, the field, what was expected and what came."""


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
Control = Union[Curve, float]

VEHICLE_TYPES = {"car": CarSpec, "rigid_body": RigidBodySpec, "helicopter": HelicopterSpec, "boat": BoatSpec,
                 "snakeboard": SnakeboardSpec, "hovercraft": HovercraftSpec, "car_trailer": CarTrailerSpec,
                 "tank": TankSpec}
CONTROL_NAMES = {
    "car": ("drive_torque", "brake_torque", "steer"),  # N m, N m (>= 0), rad
    "rigid_body": (),
    "helicopter": ("collective", "tail", "blade_pitch", "blade_roll"),  # N, N, rad, rad
    "boat": ("thrust_right", "thrust_left"),  # N
    "snakeboard": ("rotor", "steer"),  # rad, rad: the rider's twist and foot angle, prescribed
    "hovercraft": ("thrust_right", "thrust_left"),  # N
    "car_trailer": ("drive_torque", "brake_torque", "steer"),  # as the car
    "tank": ("force_left", "force_right"),  # N, each track's tractive force (negative: reverse)
}


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
    CONTROL_NAMES[type]; a control not given is zero. current: uniform world water velocity (boats).
    hitch_angle: a car with trailer's hitch angle theta - beta at t = 0 (rad; + the trailer's axle swung to
    the car's left), |hitch_angle| < MAX_START_HITCH_ANGLE.
    """

    type: str
    spec: Spec
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat = (1.0, 0.0, 0.0, 0.0)
    velocity: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    controls: tuple[tuple[str, Control], ...] = field(default=())
    current: Vec3 = (0.0, 0.0, 0.0)
    name: str = "vehicle"
    hitch_angle: float = 0.0

    def __post_init__(self):
        where = f"vehicle {self.name!r}"
        if self.type not in VEHICLE_TYPES:
            raise VehicleError(f"{where}: field 'type' must be one of {', '.join(VEHICLE_TYPES)}, got {self.type!r}")
        if not isinstance(self.spec, VEHICLE_TYPES[self.type]):
            raise VehicleError(f"{where}: a {self.type!r} needs a {VEHICLE_TYPES[self.type].__name__} spec, "
                               f"got {type(self.spec).__name__}")
        if len(self.velocity) != 6:
            raise VehicleError(f"{where}: field 'velocity' must be 6 numbers (wx wy wz vx vy vz), "
                               f"got {self.velocity!r}")
        if self.hitch_angle != 0.0 and self.type != "car_trailer":
            raise VehicleError(f"{where}: field 'hitch_angle' is a car with trailer's start; a {self.type} has no "
                               f"trailer, got {self.hitch_angle!r}")
        if not abs(self.hitch_angle) < MAX_START_HITCH_ANGLE:
            raise VehicleError(f"{where}: field 'hitch_angle' must be a number of rad within +-pi/2 (the trailer's "
                               f"axle behind the tow ball), got {self.hitch_angle!r}")
        allowed = CONTROL_NAMES[self.type]
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


def _dynamic_index_yaw(mass: float, wheelbase: float, com_ahead_of_rear_axle: float) -> float:
    """Yaw inertia for a dynamic index k^2 / (a b) = 1 (Milliken & Milliken, Race Car Vehicle Dynamics,
    1995, ch. 5: passenger cars lie near 1), a, b the axle distances from the centre of mass [estimate]."""
    return mass * com_ahead_of_rear_axle * (wheelbase - com_ahead_of_rear_axle)


# A mid-size sedan, dimensions of a 2018 Toyota Camry LE (XV70).
SEDAN = CarSpec(
    name="sedan",
    mass=1575.0,  # curb weight 3,310 lb = 1,501 kg (Toyota 2018 Camry LE spec sheet) [from memory] + 75 kg driver
    yaw_inertia=_dynamic_index_yaw(1575.0, 2.825, 1.695),  # = 3017 kg m^2 [estimate, dynamic index 1]
    wheelbase=2.825,  # 111.2 in (Toyota 2018 Camry spec sheet) [from memory]
    track=1.59,  # front/rear tread 62.4/62.8 in = 1.585/1.595 m (same spec sheet) [from memory]
    wheel_radius=0.334,  # tyre 215/55R17: 17 in / 2 + 0.55 * 215 mm = 334 mm (tyre designation)
    com_ahead_of_rear_axle=1.695,  # 60 % of the weight on the front axle, usual for FWD sedans [estimate]
    com_height=0.55,  # NHTSA-measured passenger-car CG heights lie near 0.50-0.58 m (SAE 1999-01-1336) [estimate]
    rear_wheel_inertia=1.0,  # 22 kg wheel and tyre, radius of gyration 0.21 m: 22 * 0.21^2 [estimate]
    front_wheel_inertia=1.0,  # as the rear [estimate]
    max_steer=0.54,  # 31 deg: asin(wheelbase / 5.7 m), turning circle 11.4 m (spec sheet) [from memory]
    max_drive_torque=3600.0,  # 249 N m engine (A25A-FKS) x 5.25 first gear x 2.80 final drive [from memory]
    max_brake_torque=5160.0,  # 1 g of deceleration: m g r = 1575 * 9.81 * 0.334 [estimate, tyre grip ~1]
)

# A senior direct-drive racing kart with driver.
KART = CarSpec(
    name="kart",
    mass=156.0,  # KF2 minimum weight kart + driver 156 kg (Swiss karting category summary 2007, CIK-FIA classes)
    yaw_inertia=_dynamic_index_yaw(156.0, 1.04, 0.437),  # = 41.1 kg m^2 [estimate, dynamic index 1]
    wheelbase=1.04,  # within CIK-FIA 1010-1070 mm; Motorsport UK NCR 2026 allows 1010-1270 mm for gearbox karts
    track=1.16,  # rear overall width >= 1340 mm (CIK-FIA rear protection minimum width) less a 180 mm tyre
    wheel_radius=0.1397,  # rear tyre 11x7.10-5: 11 in outer diameter (tyre designation)
    com_ahead_of_rear_axle=0.437,  # 42 % front weight, a common kart set-up figure [estimate]
    com_height=0.25,  # seated driver low between the axles [estimate]
    rear_wheel_inertia=0.036,  # 3 kg wheel and tyre, radius of gyration 0.11 m [estimate]
    front_wheel_inertia=0.02,  # 2 kg, radius of gyration 0.10 m [estimate]
    max_steer=0.44,  # 25 deg road-wheel lock [estimate]
    max_drive_torque=130.0,  # about 20 N m engine (125 cc) x sprocket ratio 80/12 [estimate]
    max_brake_torque=214.0,  # 1 g: m g r = 156 * 9.81 * 0.1397 [estimate]
)

# A light twin-engine helicopter: the MBB Bo 105, the standard example of helicopter flight dynamics.
HELICOPTER = HelicopterSpec(
    name="helicopter",
    mass=2200.0,  # Bo 105 reference mass (Padfield, Helicopter Flight Dynamics, 2nd ed., table 4B.1) [from memory];
    # the type's maximum take-off weight is 2400 kg (Bo 105 technical data, military-heat.bubble.ro)
    inertia=(1433.0, 4973.0, 4099.0),  # Ixx Iyy Izz kg m^2 (Padfield table 4B.1) [from memory]
    rotor_height=1.48,  # hub above the centre of gravity (Padfield table 4B.1) [from memory]
    tail_arm=6.0,  # tail rotor behind the centre of gravity (Padfield table 4B.1) [from memory]
    rotor_radius=4.92,  # main rotor diameter 9.84 m (aeropedia.com.au, MBB BO-105 specifications)
    max_collective=1.3 * 2400.0 * 9.81,  # 1.3 x the weight at maximum take-off mass [estimate]
    max_tail_force=3000.0,  # hover torque ~ 300 kW / 44 rad/s = 6.8 kN m over a 6 m arm, x 2.6 margin [estimate]
    max_blade_tilt=0.17,  # 10 deg of cyclic [estimate]
)

# A small planing runabout, as a box hull [all estimate: a 5 m outboard runabout].
SPEEDBOAT = BoatSpec(
    name="speedboat",
    mass=900.0,  # hull 500 kg + 90 hp outboard 160 kg + fuel and two people 240 kg [estimate]
    inertia=(900.0 * (2.0**2 + 0.8**2) / 12, 900.0 * (5.0**2 + 0.8**2) / 12, 900.0 * (5.0**2 + 2.0**2) / 12),
    # uniform box 5.0 x 2.0 x 0.8 m: m (b^2 + c^2) / 12 [estimate]
    hull_length=5.0, hull_beam=2.0, hull_height=0.8,  # overall size of a 16 ft runabout [estimate]
    keel_below_com=0.3,  # centre of mass 0.3 m above the keel [estimate]
    thruster_behind_com=2.4, thruster_spacing=0.6, thruster_below_com=0.4,  # twin props at the transom [estimate]
    drag=(400.0, 3000.0, 6000.0),  # surge: 2 x 3 kN of thrust reaches 15 m/s; sway, heave much stiffer [estimate]
    max_thrust=3000.0,  # static thrust of a 90 hp outboard, about 3 kN [estimate]
)

# A snakeboard with an adult rider.
SNAKEBOARD = SnakeboardSpec(
    name="snakeboard",
    mass=72.0,  # 68 kg rider + 4 kg board [estimate]
    half_length=0.30,  # footplates about 0.6 m apart on a 0.9 m board [estimate]
    yaw_inertia=1.6,  # standing adult about the vertical, about 1.2 kg m^2, arms out, plus the board [estimate]
    rotor_inertia=0.7,  # upper body twisting against the hips [estimate]
    wheel_inertia=0.01,  # each wheel set and footplate about its pivot [estimate]
    max_steer=0.5,  # 29 deg of foot rotation [estimate]
)

# A light/medium truck: a loaded 2019 Isuzu NPR-HD box truck (class 5), 150 in wheelbase.
TRUCK = CarSpec(
    name="truck",
    mass=5500.0,  # GVWR 14,500 lb = 6,577 kg (Isuzu NPR-HD spec sheet) [from memory]; about 80 % of it [estimate]
    yaw_inertia=_dynamic_index_yaw(5500.0, 3.81, 1.524),  # = 19160 kg m^2 [estimate, dynamic index 1]
    wheelbase=3.81,  # 150 in, one of the NPR-HD's listed wheelbases (Isuzu spec sheet) [from memory]
    track=1.63,  # front tread 1,665 mm, rear dual centre 1,525 mm (Isuzu spec sheet) [from memory], mean [estimate]
    wheel_radius=0.386,  # tyre 215/85R16: 16 in / 2 + 0.85 * 215 mm = 386 mm (tyre designation)
    com_ahead_of_rear_axle=1.524,  # 40 % of the loaded weight on the front axle, loaded box truck [estimate]
    com_height=1.1,  # cab-over chassis frame ~0.8 m high plus a box load [estimate]
    rear_wheel_inertia=6.3,  # dual wheels and tyres 2 x 35 kg, radius of gyration 0.30 m: 70 * 0.3^2 [estimate]
    front_wheel_inertia=3.2,  # one 35 kg wheel and tyre, radius of gyration 0.30 m [estimate]
    max_steer=0.66,  # 38 deg: asin(wheelbase / 6.2 m), curb-to-curb turning circle about 12.4 m [estimate]
    max_drive_torque=12200.0,  # 4HK1-TC diesel ~597 N m x 3.49 first gear x 5.86 final drive [from memory]
    max_brake_torque=16700.0,  # 0.8 g: 0.8 m g r = 0.8 * 5500 * 9.81 * 0.386 [estimate, loaded truck braking]
)

# A small recreational hovercraft (two to four seats, twin ducted fans), about 4 m long [all estimate].
HOVERCRAFT = HovercraftSpec(
    name="hovercraft",
    mass=500.0,  # hull ~250 kg (small craft brochures list 200-350 kg) + two people and fuel 250 kg [estimate]
    inertia=(500.0 * (2.0**2 + 1.0**2) / 12, 500.0 * (4.0**2 + 1.0**2) / 12, 500.0 * (4.0**2 + 2.0**2) / 12),
    # uniform box 4.0 x 2.0 x 1.0 m: m (b^2 + c^2) / 12 [estimate]
    skirt_length=3.6,  # cushion footprint a little shorter than the 4 m hull [estimate]
    skirt_width=1.8,  # and a little narrower than its 2 m beam [estimate]
    skirt_below_com=0.4,  # centre of mass 0.4 m above the hull bottom [estimate]
    cushion_height=0.3,  # skirt depth about 0.3 m, usual for small craft [estimate]
    cushion_stiffness=50000.0,  # 0.098 m static sag, heave at sqrt(k / m) / 2 pi = 1.6 Hz [estimate]
    cushion_damping=3000.0,  # heave damping ratio c / (2 sqrt(k m)) = 0.3 [estimate]
    drag=(7.0, 40.0),  # surge: 2 x 800 N reaches sqrt(1600 / 7) = 15 m/s (54 km/h); sway ~6x, skirt side [estimate]
    yaw_drag=2000.0,  # 2 x 800 N x 0.6 m differential torque turns at ~0.5 rad/s at most [estimate]
    thruster_behind_com=1.8,  # twin ducted fans at the stern [estimate]
    thruster_spacing=1.2,  # fan centres 1.2 m apart [estimate]
    thruster_above_com=0.7,  # fan axes 0.7 m above the centre of mass [estimate]
    max_thrust=800.0,  # static thrust of a ~25 hp ducted fan, about 800 N [estimate]
)

# The sedan above towing a laden single-axle box trailer at the EU limit for unbraked trailers.
CAR_TRAILER = CarTrailerSpec(
    **{key: value for key, value in vars(SEDAN).items() if key != "name"},
    name="car_trailer",
    trailer_mass=750.0,  # category O1, maximum mass 0.75 t (EU Regulation 2018/858, art. 4) [from memory]: laden
    trailer_yaw_inertia=531.25,  # uniform box 2.5 x 1.5 m: m (a^2 + b^2) / 12 = 750 x 8.5 / 12 [estimate]
    hitch_behind_rear_axle=1.15,  # rear overhang 4,885 - 2,825 - 975 mm = 1.085 m (Camry spec sheet) [from memory]
    # + tow ball ~65 mm beyond the bumper [estimate]
    hitch_to_trailer_axle=2.9,  # 1.3 m drawbar + axle 1.6 m into a 2.5 m box (small box trailers) [estimate]
    trailer_com_ahead_of_axle=0.203,  # nose weight 7 % of the trailer's mass: 0.07 x 2.9 m (UK towing
    # guidance, 7 %) [from memory]
    trailer_com_height=0.65,  # box floor ~0.5 m plus load [estimate]
    trailer_track=1.45,  # wheel centres for a 1.5 m wide body [estimate]
    trailer_wheel_radius=0.2891,  # tyre 155/80R13: 13 in / 2 + 0.80 x 155 mm = 289 mm (tyre designation)
    trailer_wheel_inertia=0.4,  # 10 kg wheel and tyre, radius of gyration 0.20 m: 10 x 0.2^2 [estimate]
)

# A main battle tank: the Leopard 2A4.
TANK = TankSpec(
    name="tank",
    mass=55150.0,  # combat weight 55.15 t (Leopard 2A4 technical data, e.g. Jane's Armour and Artillery) [from memory]
    yaw_inertia=55150.0 * (7.72**2 + 3.70**2) / 12,  # = 336,800 kg m^2: uniform box, hull 7.72 x 3.70 m
    # (hull length and width, same data) [from memory; estimate of the distribution]
    track_gauge=3.07,  # width 3.70 m less one 635 mm track (track width 635 mm, same data) [from memory]
    track_length=4.95,  # length of track on the ground 4.95 m (same data) [from memory]
    sprocket_radius=0.33,  # drive sprocket pitch radius [estimate: 11-tooth sprocket, 184 mm track pitch]
    road_wheel_radius=0.35,  # road wheels 700 mm diameter (same data) [from memory]
    lateral_friction=0.5,  # coefficient of lateral resistance on firm ground, 0.5-0.7 (J. Y. Wong, Theory of
    # Ground Vehicles, 4th ed., 2008, ch. 7, skid-steering) [from memory]
    rolling_resistance=0.04,  # tracked vehicle on a firm road, 0.03-0.05 (Wong, same chapter) [from memory]
    max_track_force=190000.0,  # adhesion limit per track: 0.7 x m g / 2 (coefficient 0.7 on firm ground) [estimate]
    com_height=1.2,  # hull centre of mass about 1.2 m up (ground clearance 0.54 m, same data) [estimate]
)

PRESETS: dict[str, Spec] = {s.name: s for s in (SEDAN, KART, HELICOPTER, SPEEDBOAT, SNAKEBOARD, TRUCK, HOVERCRAFT,
                                                CAR_TRAILER, TANK)}


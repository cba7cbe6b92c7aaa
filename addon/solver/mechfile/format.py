"""The mechanism file format (``format = 1``, TOML): its tables, their keys and the values they take.

Owns what a file may say: the table and key names, which keys a joint type
needs, the enumerations. Reading is read.py, the checks every Mechanism must pass are validate.py,
writing is write.py; the data types are model.py.

The format, one table per kind of element (units SI, Z up, quaternions w x y z)::

    format = 1                        # required; no other version exists
    [model]                           # required
    name = "single pendulum"          # required
    gravity = [0.0, 0.0, -9.81]       # optional, this is the default

    [setup]                           # optional: how the file is simulated by default
    order = 4                         # accuracy order of the 'tree' method: 2 (default, midpoint), 4, 6 or 8
                                      # (Galerkin, tree/galerkin.py); other methods refuse an order above 2

    [[body]]                          # one or more
    name = "bob"                      # required, unique, not "world"
    mass = 1.0                        # required, finite, >= 0
    position = [0.0, 0.0, -1.0]       # world position of the body frame at the reference (default 0)
    orientation = [1.0, 0.0, 0.0, 0.0]  # world orientation at the reference; default identity
    com = [0.0, 0.0, 0.0]             # centre of mass in body axes (default 0)
    inertia = [0.001, 0.001, 0.001]   # about the COM in body axes: 3 principal moments
                                      # or 6 values Ixx Iyy Izz Ixy Ixz Iyz (default 0: point mass)

    [[joint]]
    name = "hinge"                    # required, unique
    type = "revolute"                 # required: one of model.JOINT_TYPES
    parent = "world"                  # required: a body name or "world"
    child = "bob"                     # required: a body name or "world", not the parent
    anchor = [0.0, 0.0, 0.0]          # world point at the reference; required unless the type is
                                      # prismatic, fixed or free
    axis = [1.0, 0.0, 0.0]            # world direction; required for revolute prismatic cylindrical
                                      # universal planar; normalised on load
    axis2 = [0.0, 1.0, 0.0]           # universal: second axis; planar: in-plane direction (required
                                      # for those two, refused for the others)
    q0 = 0.5                          # coordinates relative to the reference, order of model.JOINT_DOFS;
    v0 = 0.0                          # a number is accepted for a one-dof joint; absent means zeros
    lower = -1.0                      # optional per-dof limits (lower may be -inf, upper +inf)
    upper = 1.0
    stiffness = 0.0                   # optional spring towards `rest` (per dof) and viscous damping
    rest = 0.0
    damping = 0.0
    motor = {mode = "velocity", target_velocity = 2.0, gain = 5.0}
    # or motor = {mode = "torque", torque = {times = [0.0, 1.0], values = [0.0, 2.0], interpolation = "linear"}}
    # prescribed = {times = [...], values = [...], interpolation = "linear" | "cubic"}

    [[spring]]  name, body_a, body_b (bodies or "world"), point_a, point_b (body frames),
                stiffness, rest_length, damping
    [[force]]   name, body, point (body frame), force (world axes), scale (optional curve)

    [[collider]]                      # contact shapes, used by the 'maximal' method (docs/collision.md)
    name = "ground"                   # required, unique
    body = "world"                    # required: a body name or "world" (fixed)
    shape = "plane"                   # required: one of model.COLLIDER_SHAPES
    size = [0.25]                     # per shape (model.COLLIDER_SIZES): sphere [radius] (a bare number
                                      # is accepted), box [hx, hy, hz] half extents, capsule and cylinder
                                      # [radius, half_length] along the collider's z; absent for plane, hull
    position = [0.0, 0.0, 0.0]        # collider frame in the body frame (world frame for "world"); default 0
    orientation = [1.0, 0.0, 0.0, 0.0]  # default identity; a plane is the frame's z = 0 plane, normal +z
    vertices = [[0.0, 0.0, 0.0], ...] # hull only: >= 4 points in the collider frame spanning a volume
    friction = 0.5                    # Coulomb coefficient, >= 0 (default 0.5)

    [vehicle]                         # optional: the input of the 'vehicle' method (vehicles/spec.py)
    type = "car"                      # required: one of vehicles.spec.VEHICLE_TYPES
    name = "sedan"                    # optional, default the [model] name
    preset = "sedan"                  # optional: start from presets/vehicles/sedan.toml (same type)
    position = [0.0, 0.0, 0.55]       # world position of the body frame at t = 0 (default 0)
    orientation = [1.0, 0.0, 0.0, 0.0]  # world orientation at t = 0 (default identity)
    velocity = [0.0, 0.0, 0.0, 10.0, 0.0, 0.0]  # body twist at t = 0: wx wy wz vx vy vz (default 0)
    current = [0.0, 0.0, 0.0]         # uniform world water velocity, boats (default 0)
    hitch_angle = 0.0                 # car_trailer: hitch angle theta - beta at t = 0, rad, |.| < pi/2 (default 0)
    [vehicle.parameters]              # fields of the type's spec dataclass (CarSpec, BoatSpec, ...);
    mass = 1575.0                     # they override the preset; without a preset all are required
    [vehicle.controls]                # names from vehicles.spec.CONTROL_NAMES[type]; absent means 0
    drive_torque = 500.0              # a constant, or a curve table as for motors:
    steer = {times = [0.0, 2.0], values = [0.0, 0.3], interpolation = "cubic"}

Rules worth knowing:
- Numbers are within +-1e15 (tomlfile.MAX_MAGNITUDE, for every input file); inf only where a field says so
  (limits), NaN nowhere. Files are UTF-8 TOML, tables and arrays nested at most 64 deep.
- The reference configuration (body poses) must be assembled: a joint that closes a loop has one
  world anchor shared by both bodies, so the file itself fixes where it sits on each body. q = 0 is
  the reference for every joint, loop joints included; q0 and v0 of all joints (tree or loop) should
  describe one consistent state, because the compiler, not the file, decides which joints close loops.
- A curve needs at least one key, strictly increasing times and as many values as times.
- Quaternions within 1e-6 of unit norm and non-zero axes are normalised; other quaternions are refused.
- Inertia products are entries of the tensor, I = [[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]
  (not their negatives); the tensor must be positive semi-definite and its principal moments must
  satisfy the triangle inequality A + B >= C of a rigid body.
- Zero mass and zero inertia are accepted: a massless body, for example a marker leaf or the cross of a
  universal joint. A massless leaf that is free to move gives a singular mass matrix to a tree method;
  refusing or fixing it is the compiler's job, not the file's.
- Every body must be reachable from "world" through joints (either direction); a body may be the child
  of two joints (that is a loop). Springs and forces do not connect bodies.
- A file with a [vehicle] table may have no [[body]] entries (a vehicle-only file). The tree and maximal
  methods ignore the vehicle, the vehicle method ignores the bodies; `check_method` refuses a method
  that finds nothing to simulate. Vehicle messages name the table "[vehicle]" and nested fields by
  their dotted path ('parameters.mass', 'controls.steer.times'); the spec's own checks (VehicleError)
  come back as MechanismErrors naming the file and "[vehicle.parameters]".
"""

from __future__ import annotations

import dataclasses

from ..model import Body, Collider, Curve, Force, Joint, Spring

FORMAT_VERSION = 1

INTERPOLATIONS = ("linear", "cubic")
MOTOR_MODES = ("torque", "velocity")

AXIS_TYPES = frozenset({"revolute", "prismatic", "cylindrical", "universal", "planar"})
AXIS2_TYPES = frozenset({"universal", "planar"})
ANCHOR_TYPES = frozenset({"revolute", "cylindrical", "universal", "planar", "ball"})

TOP_KEYS = ("format", "model", "setup", "vehicle", "body", "joint", "spring", "force", "collider")
SETUP_KEYS = ("order",)
MODEL_KEYS = ("name", "gravity")
BODY_KEYS = tuple(f.name for f in dataclasses.fields(Body))
JOINT_KEYS = tuple(f.name for f in dataclasses.fields(Joint))
SPRING_KEYS = tuple(f.name for f in dataclasses.fields(Spring))
FORCE_KEYS = tuple(f.name for f in dataclasses.fields(Force))
COLLIDER_KEYS = tuple(f.name for f in dataclasses.fields(Collider))
CURVE_KEYS = tuple(f.name for f in dataclasses.fields(Curve))
MOTOR_KEYS = {"torque": ("mode", "torque"), "velocity": ("mode", "target_velocity", "gain")}
ENTRY_TABLES = ("body", "joint", "spring", "force", "collider")
VEHICLE_KEYS = ("type", "name", "preset", "position", "orientation", "velocity", "current", "hitch_angle",
                "parameters", "controls")
VEHICLE_VECTORS = {"position": 3, "orientation": 4, "velocity": 6, "current": 3}
VEHICLE_TABLE = "[vehicle]"
PARAMETER_SIZES = {"inertia": (3, 6)}  # spec tuples of variable length: the lengths a file may give
SIZE_NAMES = {"sphere": "radius", "box": "half extents hx, hy, hz", "capsule": "radius, half_length",
              "cylinder": "radius, half_length"}

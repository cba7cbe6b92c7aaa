"""Live driving: keyboard events -> a vehicle's controls, stepped at wall-clock time by the exact integrator.

LiveDrive owns the event -> control mapping and the stepping, and nothing of Blender (the modal operator in
ui/drive_operator.py feeds it events and timer ticks; the tests feed it synthetic ones with a controlled
clock). Events are anything with Blender's event fields `type` ('UP_ARROW', 'W', ...) and `value` ('PRESS',
'RELEASE'). A held key drives its control toward its end of the range at the binding's rate (per second of
simulated time); released, the control returns to its rest value at the same rate.

Stepping: a tick at wall-clock time `now` takes the whole integrator steps due since the drive started,
floor((now - start) / dt) of them in all (at most MAX_CATCH_UP per tick, so a stalled viewport slows the
drive down instead of freezing it), each with the controls as they are then.

Recording: the controls are recorded as the custom property values the bake reads (vehicle_rig.read_controls
samples each keyed property at the half steps 0, h/2, h, ... into a linear Curve and scales it). So each
step's property value is rounded to float32 (an F-curve key's precision) and recorded at its half-step
samples, and the integrator reads its controls from the linear Curve of the samples recorded so far. The
value chosen while stepping k -> k+1 is recorded at samples 2k+3 and 2k+4 (the nodes k+1.5 and k+2): one
step late, so that every sample the step reads (t_k .. t_{k+1}, and round-off either side) is already final
and the live Curve and the bake's full Curve give the same bits. Keyed at those half-step frames with linear
interpolation, the take bakes to the live drive's motion bit for bit.
Pure numpy; never imports bpy.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .. import curves
from ..model import Curve, Mechanism
from ..trajectory import SolverError, Trajectory
from .integrator import VehicleIntegrator

MAX_CATCH_UP = 8  # integrator steps per tick at most
CURVE_WINDOW = 8  # latest half-step samples in the Curve a step reads (it reads back at most one step)


@dataclass(frozen=True)
class Binding:
    """One control driven from the keyboard.

    control: the solver control (spec.CONTROL_NAMES); prop: the custom property recording it; lo, hi, rest:
    its range and released value in property units; rate: property units per second a held key moves it;
    up, down: event types driving it toward hi and lo; scale: solver units per property unit (as the
    reader scales it)."""

    control: str
    prop: str
    lo: float
    hi: float
    rest: float
    rate: float
    up: tuple[str, ...]
    down: tuple[str, ...]
    scale: float = 1.0


def car_bindings(max_steer: float, max_drive: float, max_brake: float, props: dict[str, str]) -> tuple[Binding, ...]:
    """Throttle (Up/W), brake (Down/S) and steer (Left/A, Right/D) of a car, recorded in `props` (control ->
    property: 'throttle' or 'drive_torque', 'brake' or 'brake_torque', 'steer'); fractions 0..1 of the
    spec's maximum torques, or N m, as named; steer in rad. Full throttle or brake in 0.5 s, full lock in
    0.4 s."""
    drive_unit = 1.0 if props["drive_torque"] == "throttle" else max_drive
    brake_unit = 1.0 if props["brake_torque"] == "brake" else max_brake
    return (
        Binding("drive_torque", props["drive_torque"], 0.0, drive_unit, 0.0, 2.0 * drive_unit, ("UP_ARROW", "W"),
                (), max_drive / drive_unit),
        Binding("brake_torque", props["brake_torque"], 0.0, brake_unit, 0.0, 2.0 * brake_unit, ("DOWN_ARROW", "S"),
                (), max_brake / brake_unit),
        Binding("steer", props["steer"], -max_steer, max_steer, 0.0, max_steer / 0.4, ("LEFT_ARROW", "A"),
                ("RIGHT_ARROW", "D")),
    )


def _pair(left: str, right: str, limit: float, reverse: bool) -> tuple[Binding, ...]:
    """Two thrusters or tracks driven differentially, `limit` each, full in 0.5 s: W/Up both forward, A/Left
    the right one (turning left), D/Right the left one; S/Down both back when `reverse` (else they just drop)."""
    ahead, back, lo = ("UP_ARROW", "W"), ("DOWN_ARROW", "S"), -limit if reverse else 0.0
    return (Binding(left, left, lo, limit, 0.0, 2.0 * limit, (*ahead, "RIGHT_ARROW", "D"),
                    (*back, "LEFT_ARROW", "A") if reverse else ()),
            Binding(right, right, lo, limit, 0.0, 2.0 * limit, (*ahead, "LEFT_ARROW", "A"),
                    (*back, "RIGHT_ARROW", "D") if reverse else ()))


def body_bindings(kind: str, spec, gravity: float) -> tuple[Binding, ...]:
    """The keyboard on the controls of a helicopter, boat, hovercraft or tank (spec.CONTROL_NAMES, recorded
    under those names, in their own units). Helicopter: collective W/Up to max_collective, S/Down to 0,
    released back to the hover (m g); tail force A/Left, D/Right; blade pitch I/K and roll J/L to
    +-max_blade_tilt. Boat and hovercraft: the thrusters (_pair, forward only: thrust_left, thrust_right up to
    max_thrust). Tank: the tracks (_pair with reverse: force_left, force_right to +-max_track_force). Raises
    ValueError for the other kinds (a snakeboard's prescribed twist needs its rate, which a live Curve does
    not give bit for bit)."""
    if kind == "helicopter":
        hover, tilt = spec.mass * gravity, spec.max_blade_tilt
        return (Binding("collective", "collective", 0.0, spec.max_collective, hover, spec.max_collective,
                        ("UP_ARROW", "W"), ("DOWN_ARROW", "S")),
                Binding("tail", "tail", -spec.max_tail_force, spec.max_tail_force, 0.0, 2.0 * spec.max_tail_force,
                        ("LEFT_ARROW", "A"), ("RIGHT_ARROW", "D")),
                Binding("blade_pitch", "blade_pitch", -tilt, tilt, 0.0, 2.0 * tilt, ("I",), ("K",)),
                Binding("blade_roll", "blade_roll", -tilt, tilt, 0.0, 2.0 * tilt, ("L",), ("J",)))
    if kind in ("boat", "hovercraft"):
        return _pair("thrust_left", "thrust_right", spec.max_thrust, reverse=False)
    if kind == "tank":
        return _pair("force_left", "force_right", spec.max_track_force, reverse=True)
    raise ValueError(f"live driving drives cars, helicopters, boats, hovercraft and tanks, not a {kind}")


class LiveDrive:
    """A vehicle driven live: `mechanism`'s vehicle (its start pose and speed), step dt, `bindings` replacing
    its controls of the same names; the clock starts at `start` (s, wall clock)."""

    def __init__(self, mechanism: Mechanism, dt: float, bindings: tuple[Binding, ...], start: float):
        self.bindings, self.dt, self.start = bindings, float(dt), float(start)
        self.values = {b.prop: float(np.float32(b.rest)) for b in bindings}  # current property values
        self.samples = {b.prop: [self.values[b.prop]] * 3 for b in bindings}  # at half steps 0, 1, 2, ...
        self._held: set[str] = set()
        self._curves = {b.control: self._curve(b) for b in bindings}
        driven = {b.control for b in bindings}
        vehicle = mechanism.vehicle
        controls = tuple((k, v) for k, v in vehicle.controls if k not in driven)
        controls += tuple((b.control, self._signal(b.control)) for b in bindings)
        live = dataclasses.replace(mechanism, vehicle=dataclasses.replace(vehicle, controls=controls))
        self.integrator = VehicleIntegrator(live, self.dt)
        self.failed = ""  # the solver's message if a step failed (the drive then stops)
        self.steps = 0  # integrator steps taken

    def _curve(self, b: Binding) -> Curve:
        """The linear Curve of the binding's latest CURVE_WINDOW samples, in solver units: on the times a step
        reads, the same bits as the whole take's Curve (the same knots, the same segment arithmetic), at a
        cost that does not grow with the take."""
        values = self.samples[b.prop]
        first = max(len(values) - CURVE_WINDOW, 0)
        times = 0.5 * self.dt * np.arange(first, len(values))
        return Curve(tuple(float(t) for t in times), tuple(float(v * b.scale) for v in values[first:]), "linear")

    def _signal(self, control: str):
        return lambda t: curves.evaluate(self._curves[control], t)

    def event(self, event) -> bool:
        """Hold or release a bound key; True when the event drives a control."""
        if not any(event.type in b.up + b.down for b in self.bindings):
            return False
        if event.value == "PRESS":
            self._held.add(event.type)
        elif event.value == "RELEASE":
            self._held.discard(event.type)
        return True

    def _advance(self, b: Binding) -> float:
        """The binding's property value after one step of its held keys (float32, as an F-curve keeps it)."""
        up, down = bool(self._held & set(b.up)), bool(self._held & set(b.down))
        target = b.hi if up and not down else b.lo if down and not up else b.rest
        value = self.values[b.prop]
        move = float(np.clip(target - value, -b.rate * self.dt, b.rate * self.dt))
        return float(np.float32(value + move))

    def tick(self, now: float) -> int:
        """Take the steps due at wall-clock time `now`; returns how many were taken."""
        due = math.floor((now - self.start) / self.dt) - self.steps
        if due > MAX_CATCH_UP:  # fell behind: the drive's clock gives way
            self.start += (due - MAX_CATCH_UP) * self.dt
            due = MAX_CATCH_UP
        taken = 0
        while taken < due and not self.failed:
            for b in self.bindings:
                self.values[b.prop] = self._advance(b)
                self.samples[b.prop] += [self.values[b.prop]] * 2
                self._curves[b.control] = self._curve(b)
            try:
                self.integrator.step()
            except SolverError as err:
                self.failed = str(err)
                break
            taken += 1
            self.steps += 1
        return taken

    def trajectory(self) -> Trajectory:
        """The live drive's run so far."""
        return self.integrator.trajectory()

    def take(self) -> dict[str, list[float]]:
        """Each property's recorded values at the half steps 0 .. 2 * steps + 2: a bake of steps + 1 steps
        reads them all, and its first steps + 1 nodes are the live drive's."""
        return {prop: list(values) for prop, values in self.samples.items()}

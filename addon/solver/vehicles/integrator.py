"""The 'vehicle' method: VehicleIntegrator drives one Vehicle through the Integrator protocol.

Owns the mapping from a Vehicle to its stepping module and from each step to a Trajectory record
(bodies, poses, q, energy, constraint residual, Newton iterations). Cars: bodies chassis + four wheels,
q = rear-axle rolling angle, steering angle, each wheel's rolling and steering angle; residual = side-slip
speed at the rear axle (m/s). Rigid bodies, helicopters, boats and hovercraft: body chassis, q = shape
(blade pitch, roll), residual = |R^T R - I| of the attitude (the group stays the group), iterations = Newton updates.
Snakeboards: bodies board, wheel sets, rotor; q = rotor and foot angle; residual = largest side-slip
speed of the two wheel sets over the step (m/s). Cars with trailer: the car's bodies plus trailer and its
two wheels, starting at the Vehicle's hitch_angle; q adds the hitch angle and the trailer wheels' rolling;
residual = the larger side-slip speed of the two axles; iterations = Newton updates. Tanks: body chassis,
q = each track's travel (m, left, right); residual = side-slip speed of the centre. A car given `tyres` runs on
tyres that slip (slip_car.py): the car's bodies and coordinates; residual = the rear axle's side-slip speed
(m/s, now physics: how far the car slides, not a constraint's error); iterations = Newton updates.
"""

from __future__ import annotations

import numpy as np

from .. import groups
from ..protocol import Integrator
from ..lie import matrix_to_quat, quat_to_matrix
from ..model import Mechanism, Vehicle, VehicleError
from . import car, holonomic, slip_car, snakeboard, tank, trailer
from .boat import compile_boat
from .helicopter import compile_helicopter
from .hovercraft import compile_hovercraft
from .rigid_body import free_body



def _heading(orientation) -> float:
    R = quat_to_matrix(np.asarray(orientation, dtype=float))
    return float(np.arctan2(R[1, 0], R[0, 0]))


class _CarRun:
    def __init__(self, vehicle: Vehicle, dt: float):
        self.model = car.compile_car(vehicle)
        s = self.model.spec
        theta = _heading(vehicle.orientation)
        b = s.com_ahead_of_rear_axle
        x, y = vehicle.position[0] - b * np.cos(theta), vehicle.position[1] - b * np.sin(theta)
        self.state = car.start(self.model, theta, x, y, vehicle.velocity[3])
        self.dt = dt
        self.bodies = ["chassis", *car.WHEELS]
        self.coordinates = ["wheel_angle", "steer", *(f"{w}_spin" for w in car.WHEELS),
                            *(f"{w}_steer" for w in car.WHEELS)]
        self._previous = None

    def step(self) -> int:
        st = self.state
        self._previous = (st.theta, st.x, st.y)
        car.step(self.model, st, self.dt)
        return 0

    def record(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        st, m = self.state, self.model
        q = np.concatenate([[st.psi, np.arctan(st.sigma)], st.wheel_spin, car.wheel_steer(m, st.sigma)])
        slip = 0.0 if self._previous is None else abs(car.lateral_velocity(*self._previous, st.theta, st.x,
                                                                          st.y, self.dt))
        return np.array([st.theta, st.x, st.y, st.sigma, *st.wheel_spin]), q, car.energy(m, st, self.dt), slip

    def pose_array(self, recorded: np.ndarray) -> np.ndarray:
        """Body poses (N+1, 5, 7) from record()'s rows (theta, x, y, sigma, wheel spins), all nodes at once."""
        return car.pose_rows(self.model, recorded[:, 0], recorded[:, 1], recorded[:, 2], recorded[:, 3],
                             recorded[:, 4:])


class _SlipCarRun:
    def __init__(self, vehicle: Vehicle, dt: float, tol: float, tyres: slip_car.Tyres, gravity):
        self.model = slip_car.compile_slip_car(vehicle, tyres, float(np.linalg.norm(gravity)))
        s = self.model.spec
        theta = _heading(vehicle.orientation)
        b = s.com_ahead_of_rear_axle
        x, y = vehicle.position[0] - b * np.cos(theta), vehicle.position[1] - b * np.sin(theta)
        self.state = slip_car.rolling_start(self.model, theta, x, y, vehicle.velocity[3])
        self.dt, self.tol = dt, tol
        self.bodies = ["chassis", *car.WHEELS]
        self.coordinates = ["wheel_angle", "steer", *(f"{w}_spin" for w in car.WHEELS),
                            *(f"{w}_steer" for w in car.WHEELS)]

    def step(self) -> int:
        return slip_car.step(self.model, self.state, self.dt, self.tol)

    def record(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        st, m = self.state, self.model
        q = np.concatenate([[st.psi, st.delta], st.wheel_spin, slip_car.wheel_steer(m, st.delta)])
        slide = abs(st.xi_prev[2] - m.rear * st.xi_prev[0]) if st.k > 0 else 0.0
        return slip_car.poses(m, st), q, slip_car.energy(m, st, self.dt), slide


class _CarTrailerRun(_CarRun):
    def __init__(self, vehicle: Vehicle, dt: float):
        self.model = trailer.compile_car_trailer(vehicle)
        s = self.model.spec
        theta = _heading(vehicle.orientation)
        b = s.com_ahead_of_rear_axle
        x, y = vehicle.position[0] - b * np.cos(theta), vehicle.position[1] - b * np.sin(theta)
        self.state = trailer.start(self.model, theta, x, y, vehicle.velocity[3], beta=theta - vehicle.hitch_angle)
        self.dt = dt
        self.bodies = list(trailer.BODIES)
        self.coordinates = ["wheel_angle", "steer", "hitch_angle", *(f"{w}_spin" for w in car.WHEELS),
                            *(f"{w}_steer" for w in car.WHEELS), *(f"{w}_spin" for w in trailer.TRAILER_WHEELS)]
        self._previous = None

    def step(self) -> int:
        st = self.state
        self._previous = (st.theta, st.x, st.y, st.beta, *trailer.trailer_axle(self.model, st))
        return trailer.step(self.model, st, self.dt)

    def record(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        st, m = self.state, self.model
        q = np.concatenate([[st.psi, np.arctan(st.sigma), st.theta - st.beta], st.wheel_spin,
                            car.wheel_steer(m.car, st.sigma), st.trailer_spin])
        slip = 0.0
        if self._previous is not None:
            p = self._previous
            slip = max(abs(car.lateral_velocity(*p[:3], st.theta, st.x, st.y, self.dt)),
                       abs(car.lateral_velocity(*p[3:], st.beta, *trailer.trailer_axle(m, st), self.dt)))
        return trailer.poses(m, st), q, trailer.energy(m, st, self.dt), slip

    def pose_array(self, recorded: np.ndarray) -> np.ndarray:
        return recorded


class _TankRun:
    def __init__(self, vehicle: Vehicle, dt: float, gravity):
        self.model = tank.compile_tank(vehicle, gravity)
        self.state = tank.start(self.model, _heading(vehicle.orientation), vehicle.position[0],
                                vehicle.position[1], vehicle.velocity[3], vehicle.velocity[2])
        self.dt = dt
        self.bodies = ["chassis"]
        self.coordinates = list(tank.TRACKS)
        self._previous = None

    def step(self) -> int:
        st = self.state
        self._previous = (st.theta, st.x, st.y)
        tank.step(self.model, st, self.dt)
        return 0

    def record(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        st = self.state
        slip = 0.0 if self._previous is None else abs(car.lateral_velocity(*self._previous, st.theta, st.x, st.y,
                                                                           self.dt))
        return tank.poses(self.model, st), st.travel.copy(), tank.energy(self.model, st, self.dt), slip


class _SnakeboardRun:
    def __init__(self, vehicle: Vehicle, dt: float):
        self.model = snakeboard.compile_snakeboard(vehicle)
        self.state = snakeboard.start(self.model, _heading(vehicle.orientation), vehicle.position[0],
                                      vehicle.position[1], vehicle.velocity[3])
        self.dt = dt
        self.bodies = list(snakeboard.BODIES)
        self.coordinates = ["rotor", "steer"]
        self._previous = None

    def step(self) -> int:
        st = self.state
        self._previous = (st.theta, st.x, st.y)
        snakeboard.step(self.model, st, self.dt)
        return 0

    def record(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        st, m = self.state, self.model
        slip = 0.0
        if self._previous is not None:
            slip = snakeboard.side_slip(m, *self._previous, st.theta, st.x, st.y, st.t - self.dt, self.dt)
        q = np.array([m.rotor(st.t), m.phi(st.t)])
        return snakeboard.poses(m, st), q, snakeboard.energy(m, st, self.dt), slip


class _HolonomicRun:
    def __init__(self, vehicle: Vehicle, dt: float, tol: float, gravity):
        if vehicle.type == "helicopter":
            self.model, self.shape = compile_helicopter(vehicle, gravity)
            self.coordinates = ["blade_pitch", "blade_roll"]
        elif vehicle.type == "boat":
            self.model, self.shape, self.coordinates = compile_boat(vehicle, gravity), None, []
        elif vehicle.type == "hovercraft":
            self.model, self.shape, self.coordinates = compile_hovercraft(vehicle, gravity), None, []
        else:
            self.model = free_body(vehicle.spec.mass, vehicle.spec.inertia, gravity, f"rigid body {vehicle.name!r}")
            self.shape, self.coordinates = None, []
        g0 = groups.se3_element(quat_to_matrix(np.asarray(vehicle.orientation, dtype=float)), vehicle.position)
        self.state = holonomic.start(self.model, g0, np.asarray(vehicle.velocity, dtype=float))
        self.dt, self.tol = dt, tol
        self.bodies = ["chassis"]

    def step(self) -> int:
        return holonomic.step(self.model, self.state, self.dt, self.tol)

    def record(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        g = self.state.g
        pose = np.concatenate([g[:3, 3], matrix_to_quat(g[:3, :3])])[None, :]
        q = self.shape(self.state.t) if self.shape is not None else np.zeros(0)
        drift = float(np.abs(g[:3, :3].T @ g[:3, :3] - np.eye(3)).max())
        return pose, q, float(holonomic.energy(self.model, self.state, self.dt)), drift


class VehicleIntegrator(Integrator):
    """Lie group variational integrator for one vehicle (seed 001).

    The vehicle comes from `vehicle`, else from `mechanism.vehicle` (the proposed model.py field). Gravity
    is the mechanism's. `tol` is the relative Newton tolerance of the holonomic step (cars are explicit).
    `tyres` puts a car on tyres that slip (slip_car.py, an implicit step to the same `tol`).
    """

    method = "vehicle"

    def __init__(self, mechanism: Mechanism, dt: float, tol: float = 1e-10, vehicle: Vehicle | None = None,
                 tyres: slip_car.Tyres | None = None):
        super().__init__(mechanism, dt, tol)
        vehicle = vehicle if vehicle is not None else getattr(mechanism, "vehicle", None)
        if vehicle is None:
            raise VehicleError(f"{mechanism.source}: mechanism {mechanism.name!r} has no vehicle; the 'vehicle' "
                               f"method needs a [vehicle] table (type, parameters, controls)")
        self.vehicle = vehicle
        if tyres is not None:
            self.run = _SlipCarRun(vehicle, self.dt, self.tol, tyres, mechanism.gravity)
        elif vehicle.type == "car":
            self.run = _CarRun(vehicle, self.dt)
        elif vehicle.type == "car_trailer":
            self.run = _CarTrailerRun(vehicle, self.dt)
        elif vehicle.type == "tank":
            self.run = _TankRun(vehicle, self.dt, mechanism.gravity)
        elif vehicle.type == "snakeboard":
            self.run = _SnakeboardRun(vehicle, self.dt)
        else:
            self.run = _HolonomicRun(vehicle, self.dt, self.tol, mechanism.gravity)
        self._record(0.0, *self.run.record())

    @property
    def names(self) -> tuple[list[str], list[str]]:
        return list(self.run.bodies), list(self.run.coordinates)

    def _step_impl(self) -> None:
        self._iterations.append(self.run.step())
        self._record(self.run.state.t, *self.run.record())

    def _pose_array(self) -> np.ndarray:
        """The car records its rear-axle pose, steer and wheel spins per node (cheap in the stepping loop) and
        turns them into body poses here for every node at once; the other vehicles record body poses."""
        recorded = np.array(self._poses)
        return self.run.pose_array(recorded) if isinstance(self.run, _CarRun) else recorded

    def info(self) -> dict:
        return {"vehicle": self.vehicle.type, "vehicle_name": self.vehicle.name, "spec": self.vehicle.spec.name}

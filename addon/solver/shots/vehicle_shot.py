"""Vehicle shots: pick the StageDynamics of the shot's vehicle and transcribe the shot with it.

Owns only the dispatch from Vehicle.type to car.py, trailer.py, holonomic.py (helicopter, boat, hovercraft) or
snakeboard.py; the transcription itself is transcription.py.
"""

from __future__ import annotations

from .spec import Shot, ShotError
from .transcription import StageDynamics, Transcription


def dynamics_for(shot: Shot) -> StageDynamics:
    vehicle = shot.mechanism.vehicle
    if vehicle.type == "car":
        from .car import CarDynamics
        return CarDynamics(shot.mechanism)
    if vehicle.type == "car_trailer":
        from .trailer import TrailerDynamics
        return TrailerDynamics(shot.mechanism)
    if vehicle.type in ("helicopter", "boat", "hovercraft"):
        from .holonomic import HolonomicDynamics
        return HolonomicDynamics(shot.mechanism)
    if vehicle.type == "snakeboard":
        from .snakeboard import SnakeboardDynamics
        return SnakeboardDynamics(shot.mechanism)
    raise ShotError(f"{shot.source}: shot {shot.name!r}: vehicle {vehicle.name!r} of type {vehicle.type!r} has "
                    f"no control channels to optimise (shots cover car, car with trailer, helicopter, boat, hovercraft, snakeboard)")


def transcribe(shot: Shot) -> Transcription:
    """The Transcription of a shot whose mechanism has a vehicle."""
    return Transcription(shot, dynamics_for(shot))

"""Vehicles (seed 001): Lie group variational integrators for rigid vehicles and wheeled nonholonomic ones.

holonomic.py steps a single rigid body on SE(3) (rigid_body.py, helicopter.py, boat.py, hovercraft.py
supply inertia and wrenches, forces.py the shared ones); car.py is the nonholonomic SE(2) car, trailer.py
the car towing a trailer, tank.py the skid-steered tank, snakeboard.py the snakeboard; rk4.py is the RK4
baseline;
spec.py holds the parameter dataclasses (the presets are files, presets/vehicles/*.toml), controls.py the
control signals; integrator.py records Trajectories through the Integrator protocol.
"""

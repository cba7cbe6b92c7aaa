"""Vehicles (seed 001): Lie group variational integrators for rigid vehicles and wheeled nonholonomic ones.

holonomic.py steps a single rigid body on SE(3) (rigid_body.py, helicopter.py, boat.py supply inertia and
wrenches); car.py and snakeboard.py are the nonholonomic SE(2) vehicles; rk4.py is the RK4 baseline;
spec.py holds the parameter dataclasses and presets; integrator.py records Trajectories.
"""

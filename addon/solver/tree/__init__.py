"""Generalized-coordinate (tree) method: compile, kinematics, dynamics, constraints, integrators."""

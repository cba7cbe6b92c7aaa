"""Maximal-coordinate method: bodies as free rigid bodies held by constraint rows (seeds 002, 003)."""

# The Integrator protocol first: solver/integrator.py registers maximal.integrator.MaximalIntegrator and
# forward_integrator.ForwardIntegrator, which subclass its Integrator, so either import order resolves.
from .. import integrator as _protocol  # noqa: F401,E402

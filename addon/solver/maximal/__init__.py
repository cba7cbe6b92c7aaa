"""Maximal-coordinate method: bodies as free rigid bodies held by constraint rows (seeds 002, 003)."""

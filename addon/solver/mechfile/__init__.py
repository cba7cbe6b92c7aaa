"""Mechanism files (``format = 1``, TOML), one job per module.

format.py: the tables and keys a file may hold. read.py: text to a validated Mechanism. validate.py: the
checks every Mechanism must pass, with errors naming file and field. write.py: a Mechanism to text.
The shipped presets are found through ..presets.
Callers import from the module that owns the name; this package re-exports nothing.
"""

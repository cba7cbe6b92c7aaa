"""Symplex Blender extension entry point: Blender imports this package as bl_ext.<repo>.symplex.

It only re-exports the add-on's register()/unregister(); everything lives in the `addon` package.
Relative imports only, so the extension works under whatever module name Blender gives it.
"""

from .addon import register, unregister

__all__ = ["register", "unregister"]

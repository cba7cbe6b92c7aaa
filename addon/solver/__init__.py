"""Symplex solver: pure numpy/scipy (optional C kernels). Never imports bpy."""

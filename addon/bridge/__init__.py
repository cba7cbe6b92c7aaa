"""Blender bridge: the scene as a Mechanism (read), a Trajectory as keyframes (bake), presets as scene
content (build), and headless batch baking. Besides addon/ui this is the only code importing bpy."""

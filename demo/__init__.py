"""The demo, a development command (`make demo`, `python -m addon demo`): not part of the extension.

scenes.py builds, bakes, renders and plots the preset mechanisms and vehicles; contact.py the collider
scenes (maximal method); shots.py solves and bakes the optimal-control shots; stage.py frames each scene
for rendering (camera, caption, faded poses). The plots need matplotlib, which the extension does not carry.
"""

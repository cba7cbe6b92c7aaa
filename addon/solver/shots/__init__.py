"""Optimal-control shots (seed 001 §6, DMOC): keyed poses, obstacles and costs -> physically exact controls.

nlp.py is the sparse interior-point solver; spec.py the shot descriptions (Shot, MechanismShot) and the
result; solve.py solve_shot, for either; transcription.py the generic direct transcription; car.py,
trailer.py, holonomic.py, snakeboard.py the vehicles' discrete equations as constraints; obstacles.py the
signed distances; shotfile.py load_shot, for the TOML shot files of either kind; vehicle_shot.py the
dispatch by vehicle type. Mechanism (tree-method) shots are solved by mechanism_shots.py and
tree_dynamics.py.
"""

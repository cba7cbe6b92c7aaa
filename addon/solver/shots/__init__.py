"""Optimal-control shots (seed 001 §6, DMOC): keyed poses, obstacles and costs -> physically exact controls.

nlp.py is the sparse interior-point solver; spec.py the shot description, result and solve_shot;
transcription.py the generic direct transcription; car.py, trailer.py, holonomic.py, snakeboard.py the
vehicles' discrete equations as constraints; obstacles.py the signed distances; shotfile.py the TOML
shot files; vehicle_shot.py the dispatch by vehicle type. Mechanism (tree-method) shots live in
mechanism_shots.py and tree_dynamics.py.
"""

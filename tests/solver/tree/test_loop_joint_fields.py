"""A loop-closing joint is constraint rows in the tree method: fields acting on its coordinates are
refused by name there (they used to be dropped silently), and the maximal method takes them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import MechanismError
from addon.solver.presets import preset_path
from addon.solver.tree.compile import compile_tree


def test_damping_on_the_cut_joint_is_refused_by_the_tree_and_taken_by_the_maximal_method():
    mech = load_mechanism(preset_path("four_bar"))
    cut = mech.joints[int(compile_tree(mech).row_joint[0])].name
    damped = mech.replace(joints=tuple(replace(j, damping=2.0) if j.name == cut else j for j in mech.joints))
    with pytest.raises(MechanismError, match=rf"'{cut}': field 'damping' cannot act here: this joint closes a loop"):
        compile_tree(damped)
    free = simulate(mech, 0.01, 200, "maximal")
    run = simulate(damped, 0.01, 200, "maximal")
    assert run.status == "finished", run.message
    band = np.ptp(free.energy)  # the undamped run's energy stays in this band
    assert free.energy[-1] - run.energy[-1] > 3.0 * band, (free.energy[-1], run.energy[-1], band)
    assert np.all(np.diff(run.energy[::20]) < band)  # and the damped one only loses energy

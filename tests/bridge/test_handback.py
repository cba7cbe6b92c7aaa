"""The blend of a bake into the keys after its range (bridge/handback.py), without Blender."""

from __future__ import annotations

import numpy as np
import pytest

from addon.bridge.handback import blend_into, blend_weights


def test_the_weight_and_its_slope_are_continuous_at_both_ends():
    frames = np.linspace(0.0, 30.0, 3001)  # range end at 20, blend over 10 frames
    w = blend_weights(frames, 10)
    assert np.all(w[frames <= 20.0] == 0.0) and w[-1] == 1.0
    slope = np.gradient(w, frames)
    at_end, at_join = np.searchsorted(frames, 20.0), len(frames) - 1
    assert abs(slope[at_end]) < 1e-3 and abs(slope[at_join]) < 1e-3
    assert np.all(np.diff(w) >= 0.0)


def test_blend_into_is_the_simulation_then_the_keys():
    frames = np.arange(0.0, 16.0)
    sim = np.sin(frames)
    out = blend_into(sim, frames, lambda f: 10.0 + f, 5)
    np.testing.assert_array_equal(out[:11], sim[:11])
    assert out[-1] == pytest.approx(25.0)

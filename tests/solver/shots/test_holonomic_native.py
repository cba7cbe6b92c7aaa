"""The holonomic vehicles' step rows, Jacobian and Hessian in C (native/holonomic_step.c) against their numpy
twin (shots/holonomic.py `residual_numpy`, `residual_hessian_numpy`): equal to round-off at random windows
(first step included) of the helicopter, the boat (columns dry, partly and fully immersed) and the hovercraft
(corners free and pressed), and NaN where the boat's hull is outside the column model. Exactness of either against differences: test_exact_hessians.py."""

import numpy as np
import pytest

from addon import solver  # noqa: F401  (package import order: integrator before vehicles)
from addon.solver.native import holonomic_binding
from addon.solver.shots.vehicle_shot import transcribe
from addon.solver.vehicles.hovercraft import skirt_corners

from .test_exact_hessians import _random_window
from .test_vehicle_shots import _small_shot

pytestmark = pytest.mark.skipif(holonomic_binding.LIB is None, reason="C kernels not built (make kernels)")


def _windows(preset: str, rng):
    tr = transcribe(_small_shot(preset, 3.0))
    W = np.concatenate([_random_window(tr, 6, rng) for _ in range(2)])
    K = len(W)
    if preset != "helicopter":  # heave and tilt: columns dry, partly and fully immersed; corners free and pressed
        W[:, :, 2] += rng.uniform(-0.6, 0.6, (K, 3))
        W[:, :, 3:7] += 0.2 * rng.standard_normal((K, 3, 4))
    return tr.dyn, W, rng.uniform(0.05, 0.2, K), np.arange(K) % 5 == 0


@pytest.mark.parametrize("preset", ["helicopter", "speedboat", "hovercraft"])
def test_c_step_rows_and_derivatives_equal_the_numpy_twin(preset):
    rng = np.random.default_rng(11)
    dyn, W, h, first = _windows(preset, rng)
    assert dyn.kernel is not None
    if preset == "speedboat":  # the test covers the clipped pieces of the immersed lengths
        S = W[:, 1]
        up = dyn._g(S[:, :3], S[:, 3:7])[:, 2, :3]
        raw = -(S[:, 2, None] + up[:, :2] @ dyn.hull.xy.T) / up[:, 2, None] - dyn.hull.keel
        assert (raw <= 0).any() and (raw >= dyn.hull.height).any() and ((raw > 0) & (raw < dyn.hull.height)).any()
    if preset == "hovercraft":
        S = W[:, 1]
        up = dyn._g(S[:, :3], S[:, 3:7])[:, 2, :3]
        compression = dyn.spec.cushion_height - S[:, 2, None] - up @ skirt_corners(dyn.spec).T
        assert (compression > 0).any() and (compression <= 0).any()
    y = rng.standard_normal((len(W), 13))
    for c, ref in zip(dyn.residual(W, first, h), dyn.residual_numpy(W, first, h)):
        assert np.all(np.isfinite(ref))
        assert np.max(np.abs(c - ref)) <= 1e-13 * max(1.0, np.abs(ref).max())
    H, ref = dyn.residual_hessian(W, first, h, y), dyn.residual_hessian_numpy(W, first, h, y)
    assert np.max(np.abs(H - ref)) <= 1e-13 * np.abs(ref).max()


def test_capsized_boat_has_no_value():
    """A hull rolled past the model's 87 degrees: NaN momentum rows and their derivatives (the line search backs
    off), as in numpy; the kinematic rows keep their values."""
    rng = np.random.default_rng(4)
    dyn, W, h, first = _windows("speedboat", rng)
    W[3, 1, 3:7] = (np.cos(0.8), np.sin(0.8), 0.0, 0.0)  # rolled 92 degrees
    (r, J, dh), (r0, J0, dh0) = dyn.residual(W, first, h), dyn.residual_numpy(W, first, h)
    assert np.array_equal(np.isnan(r), np.isnan(r0)) and np.array_equal(np.isnan(dh), np.isnan(dh0))
    assert np.all(np.isnan(r[:, 7:])) and np.allclose(r[:, :7], r0[:, :7], rtol=0, atol=1e-13)
    assert np.isnan(J[:, 7:]).any(axis=(2, 3)).all() and np.isnan(J0[:, 7:]).any(axis=(2, 3)).all()

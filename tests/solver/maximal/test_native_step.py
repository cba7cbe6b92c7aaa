"""The maximal step in C (native/maximal_step.c via maximal/native_step.py) against its numpy twin
(variational.py): the same iterates step by step to round-off on the contact- and limit-free presets and
on random mechanisms with every joint kind, forces and actuators; energy bounded and joint rows at
tolerance in C; models the kernel does not run, and failing steps, go to the numpy step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.maximal import native_step
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Body, Curve, Force, Joint, Mechanism, Motor, Spring
from addon.solver.presets import preset_path
from addon.solver.trajectory import ConvergenceError, StepTooLargeError

pytestmark = pytest.mark.skipif(native_step.binding.LIB is None, reason="C kernels not built (make kernels)")

DT = 0.01
# contact- and limit-free presets the maximal method runs (the others have colliders or joint limits)
PRESETS = ("pendulum", "double_pendulum", "chain_5", "four_bar", "slider_crank", "three_link_loop",
           "double_four_bar", "closed_chain_device", "loop_chain", "scissor_lift")
# Relative agreement of the two paths per step (state: x, q, velocities, coordinate rates, energy). The
# multipliers are forces solved from momentum residuals m (v - v0) / dt: their round-off is the state's
# times 1/dt (measured worst: 2e-13 for the velocities, 2.5e-11 for the multipliers of loop_chain).
RTOL = 1e-12


def twins(mech: Mechanism, dt: float = DT):
    """The same mechanism on the C kernel and on the numpy step."""
    c, py = make_integrator(mech, "maximal", dt), make_integrator(mech, "maximal", dt)
    py.state.kernel = False
    return c, py


def _gap(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| relative to the size of b (at least 1)."""
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, float(np.max(np.abs(b), initial=0.0))))


def assert_same_steps(mech: Mechanism, steps: int, dt: float = DT) -> native_step.MaximalKernel:
    c, py = twins(mech, dt)
    for k in range(steps):
        c.step()
        py.step()
        sc, sp = c.state, py.state
        V = np.hstack([sp.v, sp.w])
        gaps = {"x": _gap(sc.x, sp.x), "q": _gap(sc.q, sp.q), "V": _gap(np.hstack([sc.v, sc.w]), V),
                "lam": _gap(sc.lam, sp.lam), "coord_rate": _gap(sc.coord_rate, sp.coord_rate),
                "energy": _gap(np.array(c._energy[-1]), np.array(py._energy[-1]))}
        gaps["lam"] *= dt  # see RTOL
        worst = max(gaps, key=gaps.get)
        assert gaps[worst] < RTOL, f"step {k + 1}: {worst} differs by {gaps[worst]:.3g} (relative)"
        np.testing.assert_array_equal(sc.row_winding, sp.row_winding)
        np.testing.assert_array_equal(sc.coord_winding, sp.coord_winding)
        assert c._iterations[-1] == py._iterations[-1], f"step {k + 1}: Newton iterations differ"
        assert abs(c._residual[-1] - py._residual[-1]) < 1e-12
    assert isinstance(sc.kernel, native_step.MaximalKernel)
    # every step but a loop mechanism's first (numpy picks the independent loop rows there) ran in C
    assert sc.kernel.steps == steps - (1 if c.model.loop_joints else 0)
    return sc.kernel


@pytest.mark.parametrize("name", PRESETS)
def test_presets_step_like_numpy(name):
    assert_same_steps(load_mechanism(preset_path(name)), 25)


INERTIA = (0.3, 0.2, 0.25, 0.01, -0.02, 0.015)


def random_mechanism(seed: int) -> Mechanism:
    """Every joint kind in one tree with a loop, random poses, velocities and parameters; joint springs,
    dampers, servos, a keyed torque motor, a prescribed joint, a body-to-body spring and a keyed force."""
    rng = np.random.default_rng(seed)
    u = lambda lo, hi, n=None: tuple(rng.uniform(lo, hi, n).tolist()) if n else float(rng.uniform(lo, hi))  # noqa: E731
    bodies = tuple(Body(f"b{i}", u(0.5, 2.0), (0.3 * i, 0.1 * i, -0.4 * i), (1.0, 0.0, 0.0, 0.0),
                        u(-0.05, 0.05, 3), INERTIA) for i in range(10))
    ramp = Curve((0.0, 1.0), (0.0, u(-2.0, 2.0)))
    joints = (
        Joint("rev", "revolute", "world", "b0", (0.0, 0.0, 0.2), (0.0, 1.0, 0.2), q0=(u(-1, 1),), v0=(u(-2, 2),),
              stiffness=u(0, 3), damping=u(0, 0.5), motor=Motor("velocity", target_velocity=u(-1, 1), gain=u(0, 0.5))),
        Joint("pri", "prismatic", "b0", "b1", (0.15, 0.05, -0.2), (1.0, 0.0, 0.3), q0=(u(-0.2, 0.2),),
              v0=(u(-0.5, 0.5),), damping=u(0, 1), motor=Motor("torque", torque=ramp)),
        Joint("cyl", "cylindrical", "b1", "b2", (0.45, 0.1, -0.6), (0.0, 0.0, 1.0), q0=u(-0.3, 0.3, 2),
              v0=u(-0.5, 0.5, 2), damping=u(0, 0.3), stiffness=u(0, 2)),
        Joint("uni", "universal", "b2", "b3", (0.75, 0.2, -1.0), (1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0),
              q0=u(-0.3, 0.3, 2), v0=u(-0.6, 0.6, 2), stiffness=u(0, 2), rest=u(-0.1, 0.1, 2), damping=u(0, 0.3)),
        Joint("pla", "planar", "b3", "b4", (1.05, 0.3, -1.4), (0.0, 0.0, 1.0), axis2=(1.0, 0.0, 0.0),
              q0=u(-0.05, 0.05, 3), v0=u(-0.3, 0.3, 3), damping=u(0, 0.3)),
        Joint("bal", "ball", "b4", "b5", (1.35, 0.4, -1.8), q0=u(-0.2, 0.2, 3), v0=u(-0.5, 0.5, 3),
              stiffness=u(0, 2), damping=u(0, 0.3)),
        Joint("fix", "fixed", "b5", "b6", (1.65, 0.5, -2.2)),
        Joint("fre", "free", "world", "b7", v0=u(-0.5, 0.5, 6), damping=u(0, 0.3), stiffness=u(0, 2),
              rest=u(-0.1, 0.1, 6)),
        Joint("hinge8", "revolute", "b6", "b8", (2.0, 0.6, -2.6), (0.0, 1.0, 0.0), v0=(u(-3, 3),)),
        Joint("driven", "revolute", "b8", "b9", (2.2, 0.7, -3.0), (1.0, 0.0, 0.0),
              prescribed=Curve((0.0, 0.5, 1.0), (0.0, u(-1, 1), u(-1, 1)), "cubic")),
    )
    loop = Joint("loop", "ball", "b7", "b8", bodies[7].position, damping=u(0, 0.4), stiffness=u(0, 3),
                 rest=u(-0.3, 0.3, 3))
    springs = (Spring("s", "b7", "b3", (0.1, 0.0, 0.0), (0.0, 0.1, 0.0), stiffness=u(1, 6), rest_length=0.5,
                      damping=u(0, 1)),)
    forces = (Force("push", "b2", (0.5, 0.1, -0.5), u(-3, 3, 3), Curve((0.0, 0.2, 1.0), (1.0, -1.0, 0.5))),)
    return Mechanism(f"every joint kind {seed}", bodies, joints + (loop,), springs=springs, forces=forces)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_mechanisms_step_like_numpy(seed):
    mech = random_mechanism(seed)
    assert_same_steps(mech, 15)
    tree = replace(mech, joints=mech.joints[:-1])  # without the loop: no numpy step at all
    assert_same_steps(tree, 15)


def test_free_body_spinning_matches_numpy():
    """A single free body with a fast asymmetric spin (the rotational rows' sqrt(4/dt^2 - |w|^2) far from
    its small-rate value) and no joint rows at all."""
    body = Body("brick", 2.0, (0, 0, 1), (0.9, 0.1, 0.3, 0.2), (0, 0, 0), (0.1, 0.4, 0.3, 0.02, 0.0, -0.01))
    mech = Mechanism("spinning brick", (body,), (Joint("f", "free", "world", "brick", v0=(30, 5, -10, 1, 0, 2)),))
    assert_same_steps(mech, 30)


def test_long_run_in_c_keeps_energy_and_rows():
    """5 s of the 5-link chain in C at dt and dt/2: the energy oscillates in a band that shrinks as dt^2
    (the variational integrator's bounded, second-order energy error) without drifting, and the joint
    rows stay at the solver tolerance."""
    bands = []
    for dt in (DT, DT / 2):
        it = make_integrator(load_mechanism(preset_path("chain_5")), "maximal", dt)
        steps = round(5.0 / dt)
        for _ in range(steps):
            it.step()
        assert it.state.kernel.steps == steps
        energy = np.array(it._energy[1:])
        band = np.ptp(energy)
        tenth = steps // 10
        assert abs(np.mean(energy[-tenth:]) - np.mean(energy[:tenth])) < 0.5 * band  # no drift
        assert max(it._residual) < 1e-9
        bands.append(band)
    assert 3.0 < bands[0] / bands[1] < 5.0, bands


def test_unsupported_models_stay_in_numpy():
    for name in ("crane", "box_drop"):  # joint limits; colliders
        it = make_integrator(load_mechanism(preset_path(name)), "maximal", DT)
        it.step()
        assert it.state.kernel is False


@pytest.mark.parametrize("rate, dt, error", [
    pytest.param(5.0, 0.1, StepTooLargeError, marks=pytest.mark.heavy),  # 100 Newton iterations on both paths
    (15.0, 0.05, ConvergenceError), (10.0, 0.1, ConvergenceError)])
def test_failing_step_raises_the_numpy_error(rate, dt, error):
    """Time steps far too large for a fast double pendulum: Newton past the time-step limit at step 2, a
    singular Newton matrix, an angular speed of 2/dt. The C step fails, the numpy step takes it from the
    same state and raises its error: the same type, message and step as on the numpy path alone."""
    mech = load_mechanism(preset_path("double_pendulum"))
    fast = replace(mech, joints=tuple(replace(j, v0=(rate,)) for j in mech.joints))
    errors = []
    for it in twins(fast, dt):
        with pytest.raises(error) as info:
            for _ in range(5):
                it.step()
        errors.append((type(info.value), str(info.value), it.state.step_index))
    assert errors[0] == errors[1]

"""The maximal step in C (native/maximal_step.c via maximal/native_step.py) against its numpy twin
(variational.py): the same iterates step by step to round-off on the presets (contacts, friction and
joint limits through the interior point included) and on random mechanisms with every joint kind, forces
and actuators, and random contact scenes; energy bounded and joint rows at tolerance in C; models and
steps the kernel does not take, and failing steps, go to the numpy step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.maximal import interior_point, native_step
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Curve, Force, Joint, Mechanism, Motor, Spring
from addon.solver.presets import preset_path
from addon.solver.trajectory import ConvergenceError, StepTooLargeError
from tools.contact_scenes import box_pile, falling_dominoes

pytestmark = pytest.mark.skipif(native_step.binding.LIB is None, reason="C kernels not built (make kernels)")

DT = 0.01
# contact- and limit-free presets (no interior point)
PRESETS = ("pendulum", "double_pendulum", "chain_5", "four_bar", "slider_crank", "three_link_loop", "double_four_bar",
           "closed_chain_device", "loop_chain", "scissor_lift")
# presets with joint limits (not reached in these steps: the interior point without pairs, no line
# search) or colliders, and the steps taken (the box lands at step 29)
PAIR_PRESETS = {"cart_pole": 25, "crane": 25, "robot_arm": 25, "box_drop": 45}
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


def assert_same_steps(mech: Mechanism, steps: int, dt: float = DT,
                      in_c: int | None = None) -> tuple[native_step.MaximalKernel, set[int]]:
    """C and numpy take `steps` steps alike (in_c of them in C: by default all but a loop mechanism's first);
    returns the kernel and the kinds of pair rows met (interior_point.Inequalities.kind)."""
    c, py = twins(mech, dt)
    kinds: set[int] = set()
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
        if sp.interior is not None:  # the same pairs, restarts and friction decisions
            ic, ip = sc.interior, sp.interior
            np.testing.assert_array_equal(ic.rows.key, ip.rows.key)
            kinds.update(ip.rows.kind.tolist())
            assert (ic.restarts, ic.cold, ic.monotone, ic.friction_dropped) == \
                (ip.restarts, ip.cold, ip.monotone, ip.friction_dropped), f"step {k + 1}"
            # a pair's multiplier is not unique on redundant contacts (four corners on a plane): compare
            # the complementarity the step converged to, not the multipliers
            assert np.max(ic.lam * ic.s, initial=0.0) <= interior_point.COMPLEMENTARITY
    assert c.message == py.message
    assert isinstance(sc.kernel, native_step.MaximalKernel)
    # every step but a loop mechanism's first (numpy picks the independent loop rows there) ran in C
    assert sc.kernel.steps == (steps - (1 if c.model.loop_joints else 0) if in_c is None else in_c)
    return sc.kernel, kinds


@pytest.mark.parametrize("name", PRESETS)
def test_presets_step_like_numpy(name):
    assert_same_steps(load_mechanism(preset_path(name)), 25)


@pytest.mark.parametrize("name", PAIR_PRESETS)
def test_inequality_presets_step_like_numpy(name):
    """Joint limits (the pendulums, crane, robot arm) and the box landing on its four corners with friction:
    contacts, cone and pyramid rows, warm and cold starts, the predictor-corrector in C."""
    _, kinds = assert_same_steps(load_mechanism(preset_path(name)), PAIR_PRESETS[name])
    assert kinds == ({0, 1, 2} if name == "box_drop" else set())


def test_limited_double_pendulum_steps_like_numpy():
    """The double pendulum with both hinges limited to +-0.3 rad: it swings into the stops (limit rows only)."""
    mech = load_mechanism(preset_path("double_pendulum"))
    limited = replace(mech, joints=tuple(replace(j, lower=(-0.3,), upper=(0.3,)) for j in mech.joints))
    assert assert_same_steps(limited, 40)[1] == {3}


@pytest.mark.heavy
def test_sphere_chain_steps_like_numpy():
    """Five jointed spheres hitting the ground (up to 38 pairs: the numpy solver factors these sparsely,
    the kernel borders them densely) through the first impacts."""
    assert assert_same_steps(load_mechanism(preset_path("sphere_chain")), 45)[1] == {0, 1, 2}


def test_steps_with_many_pairs_take_the_block_lu(monkeypatch):
    """Steps whose pairs exceed MAX_BORDER stay in C, factored by the block LU on the contact graph
    (native_border.py) instead of the dense border: the same iterates as numpy."""
    monkeypatch.setattr(native_step, "MAX_BORDER", 8)  # the resting box has 11 pairs, the falling one none
    kernel, _ = assert_same_steps(load_mechanism(preset_path("box_drop")), 35)  # lands at step 29, stays
    assert kernel._sparse is not None and kernel._sparse.pattern.stored_entries > 0


def test_steps_whose_block_lu_costs_too_much_go_to_numpy(monkeypatch):
    """A step whose block LU would take more than MAX_FLOPS multiply-adds per unknown is the numpy step's (from
    the unchanged state), decided before the factor's layout is built; the steps before the landing stay in C."""
    monkeypatch.setattr(native_step, "MAX_BORDER", 8)
    monkeypatch.setattr(native_step, "MAX_FLOPS", 1.0)
    kernel, _ = assert_same_steps(load_mechanism(preset_path("box_drop")), 35, in_c=28)  # lands at step 29, stays
    assert kernel._sparse is not None and kernel._sparse.pattern is None


@pytest.mark.parametrize("scene, steps, border", [("8 dominoes", 20, 16), ("25-box pile", 6, 16)])
def test_contact_scenes_on_the_block_lu_step_like_numpy(monkeypatch, scene, steps, border):
    """Falling dominoes (the first tips onto the second: contacts between bodies and on the ground) and a
    layer of 25 turned boxes landing in the bin (its first contacts, steps 4-6: 29 to 219 pairs), on the
    kernel's block LU from the first contacts on. (From step 7 the pile's corners pile up redundantly and the
    two paths part at the Newton tolerance, 1e-8 in V, with the dense border as with the block LU.)"""
    monkeypatch.setattr(native_step, "MAX_BORDER", border)
    mech = falling_dominoes(8) if scene == "8 dominoes" else box_pile(25)
    kernel, kinds = assert_same_steps(mech, steps)
    assert kinds == {0, 1, 2} and kernel._sparse is not None


@pytest.mark.heavy
def test_32_dominoes_step_like_numpy():
    """32 dominoes: 350 pairs, more than MAX_BORDER, so every step on the block LU without monkeypatching."""
    kernel, _ = assert_same_steps(falling_dominoes(32), 10)
    assert kernel._sparse is not None


def contact_scene(seed: int) -> Mechanism:
    """A box, a sphere and a capsule thrown at random onto the ground and a limited, box-ended pendulum
    swinging into them: contacts between bodies, on the world and with friction, and a joint limit."""
    rng = np.random.default_rng(seed)
    u = lambda lo, hi, n=None: tuple(rng.uniform(lo, hi, n).tolist()) if n else float(rng.uniform(lo, hi))  # noqa: E731
    def quat():
        q = rng.normal(size=4)
        return tuple((q / np.linalg.norm(q)).tolist())
    shapes = (("box", u(0.08, 0.15, 3)), ("sphere", (u(0.08, 0.15),)), ("capsule", (u(0.04, 0.08), u(0.05, 0.1))))
    bodies, joints, colliders = [], [], [Collider("ground", WORLD, "plane", friction=u(0.3, 0.8))]
    for i, (shape, size) in enumerate(shapes):
        name = f"{shape}{i}"
        bodies.append(Body(name, u(0.5, 2.0), (0.4 * i - 0.4, u(-0.05, 0.05), u(0.2, 0.3)), quat(), (0, 0, 0),
                           (0.01, 0.012, 0.008, 0.0, 0.0, 0.0)))
        joints.append(Joint(f"{name} free", "free", "world", name, v0=u(-1, 1, 3) + u(-3, 3, 3)))
        colliders.append(Collider(f"{name} {shape}", name, shape, size, friction=u(0.3, 0.8)))
    bodies.append(Body("arm", 1.0, (0.0, 0.3, 0.15), (1, 0, 0, 0), (0, 0, 0), (0.02, 0.02, 0.002, 0, 0, 0)))
    joints.append(Joint("arm hinge", "revolute", "world", "arm", (0.0, 0.3, 0.6), (1.0, 0.0, 0.0),
                        q0=(u(-0.3, 0.3),), v0=(u(-4, 4),), lower=(-0.5,), upper=(0.4,)))
    colliders.append(Collider("arm box", "arm", "box", (0.05, 0.05, 0.1), friction=0.5))
    return Mechanism(f"contact scene {seed}", tuple(bodies), tuple(joints), colliders=tuple(colliders))


@pytest.mark.parametrize("seed, border", [(4, native_step.MAX_BORDER), (2, native_step.MAX_BORDER), (4, 2)])
def test_random_contact_scenes_step_like_numpy(monkeypatch, seed, border):
    """Random thrown scenes, densely bordered and (border 2) on the block LU with a limit row among the pairs."""
    monkeypatch.setattr(native_step, "MAX_BORDER", border)
    assert assert_same_steps(contact_scene(seed), 30)[1] == {0, 1, 2, 3}


def test_flat_landing_steps_like_numpy_to_newton_tolerance():
    """Scene 1's box slaps a face flat onto the ground (step 8: four corners land in one step, rows of rank 3),
    where a 1e-16 m change of one gap moves the step's velocities by 1.5e-9 m/s: there the paths agree to
    Newton's tolerance (|dV| dt <= tol), not to round-off (measured 7e-8 relative), and to round-off again once
    the box rests."""
    c, py = twins(contact_scene(1))
    for k in range(30):
        c.step()
        py.step()
        for name, a, b in (("V", np.hstack([c.state.v, c.state.w]), np.hstack([py.state.v, py.state.w])),
                           ("x", c.state.x, py.state.x), ("q", c.state.q, py.state.q)):
            assert _gap(a, b) < 1e-6, f"step {k + 1}: {name} differs by {_gap(a, b):.3g} (relative)"
    assert _gap(np.hstack([c.state.v, c.state.w]), np.hstack([py.state.v, py.state.w])) < RTOL


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


def test_many_loop_rows_stay_in_numpy(monkeypatch):
    """Loop rows from linear.SPARSE_FROM on: the numpy solver factors them sparsely, every step in numpy."""
    monkeypatch.setattr(native_step, "SPARSE_FROM", 3)
    it = make_integrator(load_mechanism(preset_path("four_bar")), "maximal", DT)
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

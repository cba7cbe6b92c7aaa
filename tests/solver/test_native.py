"""The C kernels agree with their numpy twins (PEP 399): tree_forward, and the whole midpoint step.

midpoint.step runs its Newton loop either in numpy or in the C kernel (native.NativeStepper), with
the same guess, curves and chart fold around it. From each numpy state the C path must reproduce
numpy's next state (q2, p2, lambda, iterations, energy, residual) to rounding; a second test lets
both run free for 200 steps. C cases skip visibly when the library is not built.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, replace

import numpy as np
import pytest

from addon.solver import native
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Body, Curve, Force, Joint, Mechanism, Motor
from addon.solver.presets import preset_path
from addon.solver.trajectory import ConvergenceError
from addon.solver.tree import articulated, linkwise, midpoint
from addon.solver.tree.assembly import prescribed_values
from addon.solver.tree.compile import PRIMITIVES, compile_tree
from addon.solver.tree.dynamics import user_force_vectors
from addon.solver.tree.kinematics import local_transforms
from tools.generate import ball_chain, pendulum_chain

from .tree.random_mechanisms import TYPES, random_tree

needs_c = pytest.mark.skipif(not native.NATIVE, reason="C kernels not built (run `make kernels`) or "
                                                        "SYMPLEX_NO_NATIVE=1: C cases skipped")
TREE_FORWARD = [pytest.param(native.tree_forward_numpy, id="numpy"),
                pytest.param(getattr(native, "_tree_forward_c"), id="C", marks=needs_c)]
DT, STEPS = 0.01, 200


def actuated_chain(hang: str = "free") -> Mechanism:
    """Every forcing the C step reads: a prescribed joint, torque and velocity motors, springs with a
    rest angle, damping, a time-scaled user force, a free joint's chart (the chart midpoint; hang="ball": a ball
    joint's, the link-wise step), and a loop closed by a ball joint between two branches from the world."""
    rod = (1.0 / 12, 1.0 / 12, 1e-3, 0.0, 0.0, 0.0)
    bodies = tuple(Body(name, 1.0 + 0.2 * i, position, com=(0, 0, -0.5), inertia=rod) for i, (name, position) in
                   enumerate([("l0", (0, 0, 0)), ("l1", (0.3, 0, -1)), ("l2", (1.5, 0, 0)), ("l3", (1.5, 0, -1)),
                              ("bob", (0.6, 0, -1.5))]))
    swing = Curve((0.0, 0.5, 1.0, 2.0), (0.0, 0.3, -0.2, 0.1), "cubic")
    joints = (
        Joint("drive", "revolute", "world", "l0", (0, 0, 0), (0, 1, 0), prescribed=swing),
        Joint("wrist", "revolute", "world", "l2", (1.5, 0, 0), (0.2, 1, 0), v0=(0.5,),
              motor=Motor("velocity", target_velocity=1.5, gain=0.8)),
        Joint("elbow", "revolute", "l0", "l1", (0.3, 0, -1), (0, 1, 0), q0=(0.2,), stiffness=3.0, rest=(0.1,),
              damping=0.2, motor=Motor("torque", torque=Curve((0.0, 1.0, 2.0), (0.0, 2.0, -1.0)))),
        Joint("slide", "cylindrical", "l2", "l3", (1.5, 0, -1), (0, 0, 1), stiffness=5.0, damping=0.1),
        Joint("hang", hang, "l1", "bob", (0.6, 0, -1.5), q0=(0.0,) * (len(PRIMITIVES[hang]) - 3) + (0.1, 0.2, -0.1),
              v0=(0.0,) * (len(PRIMITIVES[hang]) - 3) + (0.3, -0.2, 0.5)),
        Joint("close", "ball", "l1", "l3", (0.9, 0, -1.4)),
    )
    push = Force("push", "l2", point=(0.1, 0.0, -0.3), force=(2.0, 0.5, 0.0), scale=Curve((0.0, 2.0), (1.0, -1.0)))
    return Mechanism("actuated", bodies, joints, forces=(push,))


NO_BALL = tuple(t for t in TYPES if t != "ball")  # models with a ball joint take the link-wise step
MECHANISMS = {
    "tree0": lambda: random_tree(0, NO_BALL),
    "tree1": lambda: random_tree(1, NO_BALL),
    "tree1_loops": lambda: random_tree(1, NO_BALL, loops=2),
    "tree3_loops": lambda: random_tree(3, NO_BALL, loops=3),
    "tree6_loop": lambda: random_tree(6, NO_BALL, loops=1),
    "tree2_ball_springs": lambda: random_tree(2, NO_BALL, ball_springs=True),
    "tree4_free_springs_loops": lambda: random_tree(4, NO_BALL, loops=2, ball_springs=True),
    "pendulum": lambda: load_mechanism(preset_path("pendulum")),
    "chain_10": lambda: pendulum_chain(10),
    "closed_chain_device": lambda: load_mechanism(preset_path("closed_chain_device")),
    "four_bar": lambda: load_mechanism(preset_path("four_bar")),
    "scissor_lift": lambda: load_mechanism(preset_path("scissor_lift")),
    "actuated": actuated_chain,
    # the link-wise step (tree/linkwise.py): every joint kind with ball joints, springs, dampers, loops, motors
    "tree3_ball_loops": lambda: random_tree(3, loops=3),
    "tree4_ball_springs_loops": lambda: random_tree(4, loops=2, ball_springs=True),
    "actuated_ball": lambda: actuated_chain("ball"),
    "rope_8": lambda: ball_chain(8),
}
LINKWISE = ("tree3_ball_loops", "tree4_ball_springs_loops", "actuated_ball", "rope_8")


@dataclass
class Next:
    """The state after one step, as midpoint.step leaves it, plus what the step reports."""

    q: np.ndarray
    p: np.ndarray
    lam: np.ndarray
    charts: np.ndarray
    velocity_guess: np.ndarray
    iterations: int
    energy: float
    residual: float


def take_step(model, state: midpoint.MidpointState, dt: float, use_native: bool,
              max_iterations: int = 30) -> tuple[Next, midpoint.MidpointState]:
    """One midpoint.step on a copy of `state` through the chosen path; returns its report and the copy."""
    after = replace(state)
    result = midpoint.step(model, after, dt, max_iterations=max_iterations, use_native=use_native)
    return Next(after.q, after.p, after.lam, after.charts, after.velocity_guess, result.iterations, result.energy,
                result.residual), after


def assert_same_step(c: Next, ref: Next, dt: float, where: str) -> None:
    """Rounding-level agreement: 1e-12 in q2. A q2 difference e shows in the velocity as e / dt and in
    p2, lambda (an impulse: it balances the momentum residual) and the energy as about M e / dt, so
    those get 1e-12 / dt, relative to the largest momentum. numpy itself moves q2 by ~1e-13 on these
    trees when p1 changes by one ulp."""
    assert c.iterations == ref.iterations, where
    scale = max(1.0, float(np.abs(ref.p).max()))
    np.testing.assert_allclose(c.q, ref.q, rtol=0, atol=1e-12, err_msg=where)
    np.testing.assert_allclose(c.velocity_guess, ref.velocity_guess, rtol=0, atol=1e-12 / dt, err_msg=where)
    np.testing.assert_allclose(c.p, ref.p, rtol=0, atol=1e-12 * scale / dt, err_msg=where)
    np.testing.assert_allclose(c.lam, ref.lam, rtol=0, atol=1e-12 * scale / dt, err_msg=where)
    np.testing.assert_allclose(c.charts, ref.charts, rtol=0, atol=1e-12, err_msg=where)
    assert abs(c.energy - ref.energy) <= 1e-12 * max(1.0, abs(ref.energy)) / dt, where


@pytest.mark.parametrize("tree_forward", TREE_FORWARD)
def test_tree_forward_composes_parent_then_local(tree_forward):
    model = compile_tree(random_tree(3, loops=1))
    rng = np.random.default_rng(1)
    local = local_transforms(model, rng.normal(size=model.nq), np.array(model.ball_chart0))
    world = tree_forward(model.dof_parent, local, np.empty((model.nq + 1, 4, 4)))
    np.testing.assert_array_equal(world[model.nq], np.eye(4))
    for f in range(model.nq):
        parent = np.eye(4) if model.dof_parent[f] < 0 else world[model.dof_parent[f]]
        np.testing.assert_allclose(world[f], parent @ local[f], rtol=0, atol=1e-14)


@needs_c
def test_tree_forward_c_equals_numpy():
    model = compile_tree(random_tree(6))
    local = local_transforms(model, np.random.default_rng(2).normal(size=model.nq), np.array(model.ball_chart0))
    c = native.tree_forward(model.dof_parent, local, np.empty((model.nq + 1, 4, 4)))
    ref = native.tree_forward_numpy(model.dof_parent, local, np.empty((model.nq + 1, 4, 4)))
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-14)


@pytest.mark.heavy
@needs_c
@pytest.mark.parametrize("name", MECHANISMS)
def test_c_step_reproduces_numpy_step(name):
    """200 steps along the numpy trajectory: from each numpy state, C makes the same next state."""
    model = compile_tree(MECHANISMS[name]())
    assert linkwise.applies(model) == (name in LINKWISE)
    state, *_ = midpoint.initial_state(model)
    for k in range(STEPS):
        ref, after = take_step(model, state, DT, use_native=False)
        c, c_state = take_step(model, state, DT, use_native=True)
        assert c_state.stepper is not None, "the C kernel did not step this model"
        assert_same_step(c, ref, DT, f"{name}, step {k + 1}")
        if model.nrow:
            assert c.residual <= 1e-9
            assert abs(c.residual - ref.residual) <= 1e-12
        state = after


@pytest.mark.heavy
@needs_c
@pytest.mark.parametrize("name", ["tree1_loops", "closed_chain_device", "actuated", "actuated_ball"])
def test_c_and_numpy_trajectories_stay_together(name):
    """Both run free for 200 steps; rounding differences must not grow beyond the Newton tolerance."""
    model = compile_tree(MECHANISMS[name]())
    ref, *_ = midpoint.initial_state(model)
    c_state = replace(ref)
    for _ in range(STEPS):
        ref = take_step(model, ref, DT, use_native=False)[1]
        c_state = take_step(model, c_state, DT, use_native=True)[1]
    np.testing.assert_allclose(c_state.q, ref.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c_state.p, ref.p, rtol=0, atol=1e-9 * max(1.0, np.abs(ref.p).max()) / DT)


@needs_c
@pytest.mark.parametrize("use_native", [False, True], ids=["numpy", "C"])
def test_both_paths_report_non_convergence_singularity_and_nan(use_native):
    model = compile_tree(MECHANISMS["tree3_loops"]())  # one iteration is not enough at any of its halvings
    state, *_ = midpoint.initial_state(model)
    with pytest.raises(ConvergenceError, match="did not converge at step 1 .* after 1 iterations"):
        take_step(model, state, DT, use_native, max_iterations=1)
    with pytest.raises(ConvergenceError, match="did not converge"):
        take_step(model, replace(state, velocity_guess=np.full(model.nq, np.nan)), DT, use_native)

    # a massless, springless, undamped coordinate: its Jacobian row is zero
    ghost = Body("ghost", 0.0, (0.0, 0.0, -1.0))
    mech = load_mechanism(preset_path("pendulum"))
    mech = mech.replace(bodies=mech.bodies + (ghost,), joints=mech.joints + (
        Joint("spin", "revolute", mech.bodies[0].name, "ghost", (0.0, 0.0, -1.0), (0, 0, 1)),))
    model = compile_tree(mech)
    state, *_ = midpoint.initial_state(model)
    with pytest.raises(ConvergenceError, match="singular"):
        take_step(model, state, DT, use_native)


@needs_c
def test_stepper_checks_shapes_and_row_indices():
    model = compile_tree(MECHANISMS["tree1_loops"]())
    stepper = native.NativeStepper(model)
    state, *_ = midpoint.initial_state(model)
    nq, args = model.nq, dict(lam=state.lam, charts=state.charts, dt=DT, tol=1e-10, max_iterations=30,
                              torque_mid=np.zeros(model.nq), q2_guess=state.q, force_vectors_mid=model.force_vector,
                              rows=state.rows)
    with pytest.raises(ValueError, match=r"p1 must have shape \(%d,\)" % nq):
        stepper.step(state.q, state.p[:-1], **args)
    with pytest.raises(ValueError, match="force_vectors_mid"):
        stepper.step(state.q, state.p, **{**args, "force_vectors_mid": np.zeros((5, 3))})
    with pytest.raises(ValueError, match="rows must index"):
        stepper.step(state.q, state.p, **{**args, "rows": state.rows + model.nrow})
    # non-contiguous float32 inputs are converted, not misread
    q = np.repeat(state.q.astype(np.float32), 2)[::2]
    a = stepper.step(q, state.p, **args)
    b = stepper.step(q.astype(np.float64), state.p, **args)
    np.testing.assert_array_equal(a.q2, b.q2)


def test_no_native_environment_variable_forces_numpy():
    code = ("from addon.solver import native; "
            "assert native.NATIVE is False and native.tree_forward is native.tree_forward_numpy; "
            "import pytest; pytest.raises(RuntimeError, native.NativeStepper, None)")
    env = {**os.environ, "SYMPLEX_NO_NATIVE": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env,
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@needs_c
@pytest.mark.parametrize("name", ["chain_10", "tree1_loops", "tree3_loops", "actuated"])
def test_c_newton_direction_does_the_counted_work_of_the_numpy_twin(name):
    """The C step's multiply-add count is numpy's (tree.articulated.OPS) for the same Newton iterations."""
    model = compile_tree(MECHANISMS[name]())
    state, *_ = midpoint.initial_state(model)
    articulated.OPS.clear()
    ref, _ = take_step(model, state, DT, use_native=False)
    q2 = state.q + DT * state.velocity_guess
    q2[model.dof_prescribed] = prescribed_values(model, DT)[0]
    out = native.NativeStepper(model).step(state.q, state.p, state.lam, state.charts, DT, 1e-10, 30,
                                           midpoint.keyed_torques(model, 0.5 * DT), q2,
                                           user_force_vectors(model, 0.5 * DT), state.rows)
    assert out.iterations == ref.iterations > 0
    assert out.flops == articulated.OPS["flops"]


@pytest.mark.heavy
@needs_c
def test_c_step_work_per_link_is_constant_from_25_to_800_links():
    """O(n) Newton direction: multiply-adds per iteration and link are the same for every chain length
    (counted, not timed; the dense LU this replaced grew like n^3)."""
    per_link = []
    for n in (25, 50, 100, 200, 400, 800):
        model = compile_tree(pendulum_chain(n))
        state, *_ = midpoint.initial_state(model)
        out = native.NativeStepper(model).step(state.q, state.p, state.lam, state.charts, DT, 1e-10, 30,
                                               np.zeros(model.nq), state.q + DT * state.velocity_guess,
                                               np.zeros((0, 3)), state.rows)
        assert out.status == native.CONVERGED and out.iterations >= 1
        per_link.append(out.flops / (out.iterations * n))
    assert max(per_link) == pytest.approx(min(per_link), rel=1e-12), per_link


@needs_c
@pytest.mark.parametrize("name", LINKWISE)
def test_c_takes_the_link_wise_step_of_models_with_a_ball_joint(name):
    """The C kernel steps a model with a ball joint by the link-wise rows (tree/linkwise.py), making numpy's
    next state to rounding (the same Newton iterations), holding its loop rows, prescribed joints and motors."""
    model = compile_tree(MECHANISMS[name]())
    state, *_ = midpoint.initial_state(model)
    for k in range(5):
        c, c_state = take_step(model, state, DT, use_native=True)
        ref, state = take_step(model, state, DT, use_native=False)
        assert c_state.stepper is not None, "the C kernel did not step this model"
        assert_same_step(c, ref, DT, f"{name}, step {k + 1}")
        assert c.residual < 1e-9
    np.testing.assert_allclose(state.q[model.dof_prescribed], prescribed_values(model, state.t)[0], atol=1e-14)

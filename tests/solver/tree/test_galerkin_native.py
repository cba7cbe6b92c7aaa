"""The Galerkin step in C (native/galerkin_step.c) against its numpy reference (tree/galerkin.py `newton`)."""

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Curve, Force, Motor
from addon.solver.native import galerkin_binding
from addon.solver.presets import preset_path
from addon.solver.trajectory import ConvergenceError
from addon.solver.tree import galerkin
from addon.solver.tree.compile import compile_tree
from tools.generate import pendulum_chain

from .random_mechanisms import random_tree
from .test_galerkin import floating, momenta

pytestmark = pytest.mark.skipif(galerkin_binding.LIB is None, reason="C kernels not built (make kernels)")

PLAIN = ("revolute", "prismatic", "cylindrical", "universal", "planar", "fixed")  # every joint kind without a chart


def driven_tree(seed: int, loops: int):
    """A random tree of every plain joint kind with springs, dampers and a point force (random_tree), plus a keyed
    torque motor, a velocity servo and a keyed scale on the force, all varying within a step."""
    mech = random_tree(seed, types=PLAIN, loops=loops)
    joints = list(mech.joints)
    joints[0] = replace(joints[0], motor=Motor("torque", torque=Curve((0.0, 0.1), (2.0, -3.0))))
    joints[1] = replace(joints[1], motor=Motor("velocity", target_velocity=0.7, gain=1.5))
    force = mech.forces[0]
    forces = (Force(force.name, force.body, force.point, force.force, scale=Curve((0.0, 0.1), (1.0, 3.0))),)
    return compile_tree(mech.replace(joints=tuple(joints), forces=forces))


def same_iterates(model, state, X, lam, dt, ru):
    """Newton in numpy and in C from (X, lam) with tol = 0 (stopping neither early): after 1 and 3 updates the same
    iterates, multipliers and end momentum Z^s to round-off. Returns numpy's after 3."""
    for iterations in (1, 3):
        a = galerkin.newton(model, state, X, lam, dt, ru, 0.0, iterations)
        b = galerkin.newton_native(model, state, X, lam, dt, ru, 0.0, iterations)
        assert a.status == b.status == "not converged" and a.iterations == b.iterations == iterations
        assert np.max(np.abs(b.X - a.X)) < 1e-12 * max(1.0, np.max(np.abs(a.X))), (ru.s, iterations)
        assert np.max(np.abs(b.lam - a.lam), initial=0.0) < 1e-9 * max(1.0, np.max(np.abs(a.lam), initial=0.0))
        assert np.max(np.abs(b.p_end - a.p_end)) < 1e-10 * max(1.0, np.max(np.abs(a.p_end)))
    return a


def same_convergence(model, state, X, lam, dt, ru, factorizations: int) -> int:
    """Both converge to tol 1e-10 from (X, lam) with the same updates and at most `factorizations` factorizations
    (the same in both), to the same iterate. Returns the simplified updates (updates less factorizations)."""
    done = galerkin.newton_native(model, state, X, lam, dt, ru, 1e-10, 30)
    ref = galerkin.newton(model, state, X, lam, dt, ru, 1e-10, 30)
    assert done.status == ref.status == "converged" and done.factorizations <= factorizations
    assert (done.iterations, done.factorizations) == (ref.iterations, ref.factorizations)
    assert np.max(np.abs(done.X - ref.X)) < 1e-12 * max(1.0, np.max(np.abs(ref.X)))
    return done.iterations - done.factorizations


@pytest.mark.parametrize("s", [2, 3, 4])
def test_c_step_takes_the_numpy_newton_iterates(s):
    """From a start moved off the warm start (control points 1e-2 away, random multipliers), Newton in C and in
    numpy give the same iterates after 1, 2 and 3 updates, to round-off, with and without loop rows (tol = 0 stops
    neither early), and the end momentum Z^s agrees; to tol 1e-10 both converge with the same updates and
    factorizations, simplified updates (galerkin.REUSE) in between on the loop-free tree."""
    dt = 0.02
    reused = []
    for seed, loops in ((3, 0), (7, 2)):
        model = driven_tree(seed, loops)
        assert galerkin_binding.usable(model)
        state, _ = galerkin.start(model)
        assert (len(state.rows) > 0) == (loops > 0)
        ru = galerkin.rule(s)
        rng = np.random.default_rng(seed)
        X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess) + 1e-2 * rng.normal(size=(s, model.nq))
        lam = rng.normal(size=s * len(state.rows))
        moved = same_iterates(model, state, X, lam, dt, ru).X
        assert np.max(np.abs(moved - X)) > 1e-3  # the iterates moved: the comparison is not of the guess
        # and they converge, in few factorizations (loop-free: simplified updates between them, the same in both)
        reused.append(same_convergence(model, state, X, lam, dt, ru, 5))
    assert reused[0] > 0 and reused[1] == 0  # the loop-free tree reuses factors, the one with loop rows never


@pytest.mark.parametrize("quadrature", ["lobatto", "gauss"])
def test_c_step_energy_and_trajectory_equal_numpy(monkeypatch, quadrature):
    """Whole steps (warm starts, the C energy of a loop-free tree) against the numpy path on the same tree; with
    Lobatto's nodes the C step keeps the first node's pose through a step and takes the end energy's pose from the
    last node, with Gauss's (no node at a control point) it evaluates both afresh."""
    model = driven_tree(3, 0)
    ours, _ = galerkin.start(model)
    ref, _ = galerkin.start(model)
    for _ in range(5):
        result = galerkin.step(model, ours, 0.02, 6, quadrature=quadrature)
        with monkeypatch.context() as numpy_only:
            numpy_only.setattr(galerkin_binding, "usable", lambda model: False)
            expected = galerkin.step(model, ref, 0.02, 6, quadrature=quadrature)
        assert result.iterations == expected.iterations
        assert abs(result.energy - expected.energy) < 1e-11 * max(1.0, abs(expected.energy))
        assert np.max(np.abs(ours.q - ref.q)) < 1e-12 and np.max(np.abs(ours.p - ref.p)) < 1e-10


def counted_run(monkeypatch, model, dt: float, order: int, steps: int, numpy: bool, record: list):
    """`steps` Galerkin steps of `model` from its start through numpy's Newton (`numpy`) or C's, appending each
    Newton call's (iterations, factorizations, status) to `record`; the end state."""
    name = "newton" if numpy else "newton_native"
    solve = getattr(galerkin, name)

    def counted(*args):
        out = solve(*args)
        record.append((out.iterations, out.factorizations, out.status))
        return out

    with monkeypatch.context() as patch:
        patch.setattr(galerkin, name, counted)
        if numpy:
            patch.setattr(galerkin_binding, "usable", lambda model: False)
        state, _ = galerkin.start(model)
        for _ in range(steps):
            galerkin.step(model, state, dt, order)
    return state


def test_carried_factor_takes_the_same_updates_in_c_and_numpy(monkeypatch):
    """12 whole steps of a 5-link chain at order 6 and dt = 1/24 s, where the warm start is far off (a whip): from
    the second step the first galerkin.CARRY updates solve with the last factor made, in C and in numpy alike (each
    step the same updates and factorizations, the same state to round-off), with fewer factorizations than steps
    (with CARRY = 0 every step factors at least once); and the states are CARRY = 0's to the Newton tolerance (the
    carried factor changes the path to each step's solution, not the solution)."""
    model, dt = compile_tree(pendulum_chain(5)), 1.0 / 24.0
    counts = {}

    def run(carry: int, numpy: bool):
        monkeypatch.setattr(galerkin, "CARRY", carry)
        return counted_run(monkeypatch, model, dt, 6, 12, numpy, counts.setdefault((carry, numpy), []))

    ours, ref, exact = run(2, False), run(2, True), run(0, False)
    assert counts[2, False] == counts[2, True] and len(counts[2, False]) == 12  # no step halved
    assert np.max(np.abs(ours.q - ref.q)) < 1e-12 and np.max(np.abs(ours.p - ref.p)) < 1e-10
    assert sum(f for _, f, _ in counts[2, False]) < 12 <= sum(f for _, f, _ in counts[0, False])
    assert min(f for _, f, _ in counts[0, False]) >= 1
    # the rows are held to 1e-10 of their scale (~|p|, 40 here) each step: the states within 1e-7 after 12 steps
    assert np.max(np.abs(ours.q - exact.q)) < 1e-7 and 0.0 < np.max(np.abs(ours.p - exact.p)) < 1e-7 * np.max(
        np.abs(exact.p))


def test_a_carried_update_that_grows_the_rows_is_rejected_alike_in_c_and_numpy(monkeypatch):
    """6 steps of a 50-link chain at order 4 and dt = 1/12 s: at step 6 a carried update grows the rows, and without
    the safeguard (galerkin.GROW = inf, numpy) Newton never recovers and the step is halved. With it the update is
    rejected and the iteration goes on from the iterate before it with a fresh factor: numpy and C take the same
    updates and factorizations, no step is halved, and the end state is exact Newton's (CARRY = 0) to the Newton
    tolerance (the carried factor changes the path to the step's solution, not the solution)."""
    model, dt, grow = compile_tree(pendulum_chain(50)), 1.0 / 12.0, galerkin.GROW
    counts = {}

    def run(grow: float, carry: int, numpy: bool):
        monkeypatch.setattr(galerkin, "GROW", grow)
        monkeypatch.setattr(galerkin, "CARRY", carry)
        return counted_run(monkeypatch, model, dt, 4, 6, numpy, counts.setdefault((grow, carry, numpy), []))

    unguarded = run(np.inf, galerkin.CARRY, True)
    assert unguarded.halved == (6,)
    ours, ref, exact = run(grow, 2, False), run(grow, 2, True), run(grow, 0, False)
    assert counts[grow, 2, False] == counts[grow, 2, True] and len(counts[grow, 2, True]) == 6
    assert ours.halved == ref.halved == exact.halved == ()
    # the same state to well below the Newton tolerance (1e-10 of the rows' scale; round-off over 50 links: 1e-12)
    assert np.max(np.abs(ours.q - ref.q)) < 1e-10 and np.max(np.abs(ours.p - ref.p)) < 1e-10 * np.max(np.abs(ref.p))
    assert np.max(np.abs(ours.q - exact.q)) < 1e-7 and np.max(np.abs(ours.p - exact.p)) < 1e-7 * np.max(
        np.abs(exact.p))


def planar_tree():
    """tools.generate.pendulum_chain(5) with links 4 and 5 hung from link 2 (a branched tree, every hinge about Y)
    and a velocity servo on hinge 3: its motion stays in the XZ plane."""
    mech = pendulum_chain(5)
    joints = list(mech.joints)
    joints[2] = replace(joints[2], motor=Motor("velocity", target_velocity=0.7, gain=1.5))
    joints[3] = replace(joints[3], parent="link_2")
    return mech.replace(joints=tuple(joints))


@pytest.mark.parametrize("name", ["planar_tree", "four_bar"])
def test_c_step_on_planar_mechanisms_takes_the_numpy_iterates(name):
    """A planar mechanism's node vectors are zero in half of their components, which the C elimination skips
    (galerkin_step.c compact_components): its Newton iterates still equal numpy's to round-off, s = 1..4, from a
    start moved off the warm start in the plane (the closed four-bar with its loop rows too)."""
    model = compile_tree(planar_tree() if name == "planar_tree" else load_mechanism(preset_path(name)))
    dt = 0.02
    for s in (1, 2, 3, 4):
        state, _ = galerkin.start(model)
        ru = galerkin.rule(s)
        X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess) + 1e-2 * np.random.default_rng(s).normal(
            size=(s, model.nq))
        lam = np.tile(state.lam, s)
        assert np.max(np.abs(same_iterates(model, state, X, lam, dt, ru).X - X)) > 1e-3  # the iterates moved


CHARTS = ("ball", "revolute", "free", "prismatic", "ball")  # ball and free joints among plain ones


def chart_tree(seed: int, loops: int):
    """A random tree of ball, free, revolute and prismatic joints with springs on the ball and free rotations
    (random rests), dampers and a point force (random_tree), plus a velocity servo on the first ball."""
    mech = random_tree(seed, types=CHARTS, loops=loops, ball_springs=True)
    joints = list(mech.joints)
    joints[0] = replace(joints[0], motor=Motor("velocity", target_velocity=0.7, gain=1.5))
    return compile_tree(mech.replace(joints=tuple(joints)))


@pytest.mark.parametrize("s", [2, 3, 4])
def test_c_step_takes_the_numpy_newton_iterates_on_ball_and_free_joints(s):
    """As above on trees with ball and free joints (per-step charts, chart springs, a servo on a ball), with and
    without loop rows: the C iterates are numpy's to round-off after 1 and 3 updates, and both converge with the
    same updates and factorizations (simplified updates on the loop-free tree too)."""
    dt = 0.01
    reused = []
    for seed, loops in ((5, 0), (11, 2)):
        model = chart_tree(seed, loops)
        assert galerkin_binding.usable(model) and len(model.ball_dofs) == 3
        state, _ = galerkin.start(model)
        assert (len(state.rows) > 0) == (loops > 0)
        ru = galerkin.rule(s)
        rng = np.random.default_rng(seed)
        X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess) + 1e-3 * rng.normal(size=(s, model.nq))
        lam = rng.normal(size=s * len(state.rows))
        assert np.max(np.abs(same_iterates(model, state, X, lam, dt, ru).X - X)) > 1e-4  # the iterates moved
        reused.append(same_convergence(model, state, X, lam, dt, ru, 4))
    assert reused[0] > 0 and reused[1] == 0  # the loop-free tree reuses factors, the one with loop rows never


@pytest.mark.parametrize("order, loops", [(4, 0), (6, 2), (8, 0)])
def test_c_trajectory_solves_the_numpy_rows_on_ball_and_free_joints(order, loops, monkeypatch):
    """120 whole steps in C (warm starts, chart folds) on a tree with ball and free joints, with and without loop
    rows: at every tenth step the C control points and multipliers solve numpy's DEL and loop rows
    (galerkin.residual from the same state) to the Newton tolerance, its end momentum is numpy's there and, without
    loops, its energy numpy's (galerkin.energy), to round-off."""
    model, dt, tol = chart_tree(5, loops), 0.01, 1e-11
    state, _ = galerkin.start(model)
    assert (len(state.rows) > 0) == (loops > 0)
    ru = galerkin.rule(order // 2)
    last = []
    native = galerkin.newton_native

    def recorded(*args):
        last.append(native(*args))
        return last[-1]

    monkeypatch.setattr(galerkin, "newton_native", recorded)
    for k in range(120):
        before = galerkin.GalerkinState(**state.__dict__)
        result = galerkin.step(model, state, dt, order, tol=tol)
        if k % 10 != 9:  # numpy checks every tenth step (its residual costs as much as the C step's Newton loop)
            continue
        out = last[-1]
        res = galerkin.residual(model, before, out.X, dt, ru, out.lam)
        assert np.max(np.abs(res.r)) / res.scale < galerkin.STALL * tol
        assert np.max(np.abs(res.h), initial=0.0) < galerkin.STALL * tol * galerkin.LOOP_TOLERANCE_FACTOR
        assert np.max(np.abs(res.p_end - state.p)) < 1e-11 * max(1.0, np.max(np.abs(res.p_end)))
        if not loops:
            assert abs(result.energy - galerkin.energy(model, state)) < 1e-11 * max(1.0, abs(result.energy))
    assert len(last) == 120 and state.step_index == 120  # every step in C, none halved
    assert np.max(np.abs(state.charts - model.ball_chart0)) > 0.1  # the balls turned


def test_floating_mechanism_keeps_its_momenta_in_c():
    """A free-floating hull with a ball-jointed arm (test_galerkin.floating) without gravity, 40 steps in C at
    order 6: world linear and angular momentum stay to the Newton tolerance (the discrete action is invariant)."""
    model = compile_tree(floating())
    assert galerkin_binding.usable(model)
    state, _ = galerkin.start(model)
    before = momenta(model, state)
    for _ in range(40):
        galerkin.step(model, state, 0.05, 6, tol=1e-12)
    assert len(state.steppers) == 1  # the steps ran in C
    assert np.max(np.abs(momenta(model, state) - before)) < 1e-9 * np.max(np.abs(before))
    assert np.max(np.abs(state.q[:3])) > 0.3  # it moved


@pytest.mark.heavy
def test_numpy_and_c_halve_the_same_steps_and_fail_at_the_same_one(monkeypatch):
    """step()'s halving guard on a 10-link chain at order 4, dt = 1/8 s (test_galerkin's failing run) decides the
    same on either Newton."""
    model = compile_tree(pendulum_chain(10))
    seen = []
    for numpy_only in (False, True):
        if numpy_only:
            monkeypatch.setattr(galerkin_binding, "usable", lambda model: False)
        state, _ = galerkin.start(model)
        with pytest.raises(ConvergenceError) as failed:
            for _ in range(20):
                galerkin.step(model, state, 0.125, 4)
        seen.append((failed.value.step, state.halved, str(failed.value)))
    assert seen[0] == seen[1] and seen[0][0] == 13


def test_rows_at_a_round_off_floor_above_the_stall_band_converge_alike_in_c_and_numpy():
    """A 100-link chain's first step at order 4, dt = 1/12288 s, default tol 1e-10: the rows' round-off floor (the
    velocities D x / dt of a 0.79 rad coordinate under the chain's inertia, ~1e-7 of the rows' scale) is above
    STALL * tol, so the stall exit never takes it. Both Newtons stop after the same exact updates, once one
    moves the unknowns by round-off only (galerkin.ROUNDOFF), with more updates leaving the iterate where it is."""
    model = compile_tree(pendulum_chain(100))
    state, _ = galerkin.start(model)
    dt, ru = 1.0 / 12288, galerkin.rule(2)
    X = state.q + dt * np.outer(ru.tau[1:], state.velocity_guess)
    lam = np.zeros(0)
    ref = galerkin.newton(model, state, X, lam, dt, ru, 1e-10, 30)
    done = galerkin.newton_native(model, state, X, lam, dt, ru, 1e-10, 30)
    assert ref.status == done.status == "converged" and ref.worst > galerkin.STALL * 1e-10
    assert (done.iterations, done.factorizations) == (ref.iterations, ref.factorizations) and ref.iterations <= 4
    more = galerkin.newton(model, state, X, lam, dt, ru, 0.0, ref.iterations + 3)  # tol = 0: every update made
    assert more.iterations == ref.iterations + 3 and np.max(np.abs(more.X - ref.X)) < 1e-13
    assert np.max(np.abs(done.X - ref.X)) < 1e-13

"""The compiled programs (shots/tree_program.py, run in C) give a tree shot's rows, Jacobian and Lagrangian
Hessian equal to their references to round-off: tree_dynamics.NumpyTerms (tree_batch.py) for the DEL, loop
and rest rows and their Jacobian, tree_hessian.TapeTerms (the tape) for the Hessian blocks, on random trees with
springs, dampers, a servo, a keyed torque, a point force with a scale curve and loops, with and without rest
rows; the compiled Jacobian equals central differences of the compiled rows; the keyed points' program equals
forward kinematics and the closed-form curvature; and the shipped crane and four-bar
shots take the same iterates either way (iterations; objective and constraint violation at every iteration to
round-off as the four-bar amplifies it)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from addon.solver.model import Curve, Mechanism, Motor
from addon.solver.native import tape_program_binding
from addon.solver.presets import shot_preset_path
from addon.solver.shots import mechanism_shots
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.tree_dynamics import TreeTranscription, assemble_blocks
from addon.solver.shots.tree_batch import forward_batch
from addon.solver.shots.tree_hessian import TAPE_TERMS, hessian_blocks, point_hessian
from addon.solver.shots.tree_program import PointProgram, TreeProgram
from addon.solver.tree.compile import compile_tree
from addon.solver.tree.dynamics import terms
from addon.solver.tree.kinematics import forward

from ..tree.random_mechanisms import random_tree

pytestmark = pytest.mark.skipif(tape_program_binding.LIB is None, reason="C kernels not built (make kernels)")


def forced_tree(seed: int, loops: int) -> Mechanism:
    """A random tree with every kind of forcing the rows carry (springs and dampers come with random_tree): a servo
    on j1, a keyed torque on j2, point forces with a scale curve; joint j0 (revolute) free for a control."""
    mech = random_tree(seed, types=("revolute", "prismatic", "revolute", "universal"), loops=loops, forces=True)
    joints = list(mech.joints)
    joints[1] = replace(joints[1], motor=Motor("velocity", target_velocity=0.3, gain=0.7))
    joints[2] = replace(joints[2], motor=Motor("torque", Curve((0.0, 0.2), (1.0, -2.0))))
    forces = tuple(replace(f, scale=Curve((0.0, 0.2), (0.5, 1.5))) for f in mech.forces)
    return mech.replace(joints=tuple(joints), forces=forces)


def _transcription(seed: int, loops: int, rest_at_end: bool) -> TreeTranscription:
    model = compile_tree(forced_tree(seed, loops))
    assert len(model.force_frame) and model.dof_stiffness.any() and model.dof_damping.any()
    assert model.dof_motor_gain.any() and any(c is not None for c in model.dof_torque)
    rng = np.random.default_rng(seed)
    charts = np.array(model.ball_chart0)
    q0, qd0 = rng.normal(size=model.nq), rng.normal(size=model.nq)
    p0 = terms(model, forward(model, q0, charts), qd0, 0.0, second=False).p
    return TreeTranscription(model, 0.05, 5, np.array([0, 2]), q0, qd0, p0, charts, np.arange(model.nrow),
                             rest_at_end)


def _close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    scale = max(1.0, float(np.abs(b).max()))
    assert np.max(np.abs(a - b)) <= 1e-12 * scale, what


CASES = [(3, 0, False), (3, 0, True), (11, 2, False), (11, 2, True)]


@pytest.mark.parametrize("seed, loops, rest_at_end", CASES)
def test_compiled_rows_jacobian_and_hessian_equal_the_references(seed, loops, rest_at_end):
    tx = _transcription(seed, loops, rest_at_end)
    assert (tx.nr > 0) == (loops > 0)
    program = TreeProgram(tx.model, tx.rows)
    rng = np.random.default_rng(seed + 1)
    for _ in range(2):
        x, y = rng.normal(size=tx.n), rng.normal(size=tx.m)
        for jacobian in (False, True):
            (c, blocks), (c_ref, blocks_ref) = tx.blocks(x, jacobian, program), tx.blocks(x, jacobian)
            _close(c, c_ref, "rows")
        shape = (tx.m, tx.n)
        _close(assemble_blocks(blocks, shape).toarray(), assemble_blocks(blocks_ref, shape).toarray(), "Jacobian")
        H = assemble_blocks(hessian_blocks(tx, x, y, terms=program), (tx.n, tx.n)).toarray()
        H_ref = assemble_blocks(hessian_blocks(tx, x, y, terms=TAPE_TERMS), (tx.n, tx.n)).toarray()
        assert np.abs(H_ref).max() > 1.0
        _close(H, H_ref, "Hessian")


@pytest.mark.parametrize("seed, loops, rest_at_end", CASES[1::2])
def test_compiled_jacobian_equals_central_differences_of_the_compiled_rows(seed, loops, rest_at_end):
    tx = _transcription(seed, loops, rest_at_end)
    program = TreeProgram(tx.model, tx.rows)
    x = np.random.default_rng(seed + 2).normal(size=tx.n)
    J = assemble_blocks(tx.blocks(x, True, program)[1], (tx.m, tx.n)).toarray()
    eps = 1e-6
    diff = np.empty_like(J)
    for j in range(tx.n):
        e = np.zeros(tx.n)
        e[j] = eps
        diff[:, j] = (tx.blocks(x + e, False, program)[0] - tx.blocks(x - e, False, program)[0]) / (2 * eps)
    assert np.max(np.abs(J - diff)) <= 1e-6 * max(1.0, np.abs(diff).max())


def test_point_program_equals_forward_kinematics_and_the_closed_form_curvature():
    """Positions, their derivatives and the weighted curvature of points on a random tree's frames (and on the
    world) against tree_batch.forward_batch and tree_hessian.point_hessian."""
    model = compile_tree(random_tree(4, types=("revolute", "prismatic", "universal", "revolute"), forces=False))
    rng = np.random.default_rng(8)
    points = [(f, rng.normal(size=3)) for f in (model.nq - 1, 1, -1)]
    Q, weights = rng.normal(size=(3, model.nq)), rng.normal(size=(3, len(points), 3))
    positions, derivatives, H = PointProgram(model, points).run(Q, weights, hessian=True)
    kin = forward_batch(model, Q, np.array(model.ball_chart0))
    for k in range(len(Q)):
        reference = np.zeros((model.nq, model.nq))
        for p, (frame, local) in enumerate(points):
            world = np.eye(4) if frame < 0 else kin.world[k, frame]
            x = world[:3, :3] @ local + world[:3, 3]
            _close(positions[k, p], x, "position")
            moves = model.ancestor[frame] if frame >= 0 else np.zeros(model.nq)
            S = kin.S[k]
            _close(derivatives[k, p], ((np.cross(S[:, :3], x) + S[:, 3:]) * moves[:, None]).T, "derivative")
            if frame >= 0:
                reference += point_hessian(model, kin.world[k], S, frame, local, weights[k, p])
        assert np.abs(reference).max() > 0.1
        _close(H[k], reference, "curvature")


def _iterates(shot, compiled: bool, monkeypatch) -> tuple[list[tuple[float, float]], object]:
    seen = []
    monkeypatch.setattr(mechanism_shots, "compiled", lambda model: compiled)
    result = mechanism_shots.solve_mechanism_shot(
        shot, progress=lambda it, info: seen.append((info["objective"], info["constraint_violation"])))
    return seen, result


@pytest.mark.parametrize("name", ["crane_anti_sway", "four_bar_swing"])
def test_compiled_and_reference_paths_take_the_same_iterates(name, monkeypatch):
    shot = load_shot(shot_preset_path(name))
    compiled, result = _iterates(shot, True, monkeypatch)
    reference, result_ref = _iterates(shot, False, monkeypatch)
    assert result.status == result_ref.status == "solved"
    assert len(compiled) == len(reference) == result_ref.iterations + 1
    # the four-bar's interior point amplifies round-off: its start perturbed by 1e-15 (relative) moves the
    # objective by 1e-10 (relative) two iterations on, on the reference path alone
    largest = max(v for _, v in reference)
    for (f, v), (f_ref, v_ref) in zip(compiled, reference):
        assert abs(f - f_ref) <= 1e-7 * abs(f_ref)
        assert abs(v - v_ref) <= 1e-7 * largest
    assert np.max(np.abs(result.states - result_ref.states)) <= 1e-8

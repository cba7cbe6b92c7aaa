"""The maximal step's Newton linear system (maximal/linear.py): the contact rows' sparse factors of the
whole bordered matrix (the block LU of contact_ldu.py, SuperLU) against the reference, the tree factor
with the auxiliary rows bordered as a dense k x k block. All factor the same matrix, so the steps, and
with them the iterates, must agree to round-off on the contact presets and on a random pile; the
matrices are indefinite saddle matrices, so the factors must pivot or order with care (their backward
error, with the block LU's defect correction, is checked on every third Newton matrix of the runs)."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.lie import matrix_to_quat, rotvec_to_matrix
from addon.solver.maximal import linear
from addon.solver.maximal.linear import LinearSolver, bordered_matrix
from addon.solver.maximal.start import start_from_tree
from addon.solver.maximal.variational import step
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from addon.solver.presets import preset_path

DT = 0.01
TOL = 1e-10
EPS = np.finfo(float).eps


def random_pile(seed: int) -> Mechanism:
    """Eight boxes and spheres of random size, offset and tilt stacked 5 mm apart above a plane, falling
    onto it and onto each other."""
    rng = np.random.default_rng(seed)
    bodies, joints, colliders, z = [], [], [Collider("ground", WORLD, "plane", friction=0.6)], 0.005
    for i in range(8):
        name, size = f"b{i}", rng.uniform(0.05, 0.1, 3)
        reach = float(np.linalg.norm(size)) if i % 2 == 0 else float(size[0])
        rot = rotvec_to_matrix(rng.uniform(-0.3, 0.3, 3))
        mass = float(rng.uniform(0.5, 2.0))
        inertia = tuple(mass * (size.sum() - size) ** 2 / 3.0) + (0.0, 0.0, 0.0)
        position = (float(rng.uniform(-0.05, 0.05)), float(rng.uniform(-0.05, 0.05)), z + reach)
        bodies.append(Body(name, mass, position=position, orientation=tuple(matrix_to_quat(rot)), inertia=inertia))
        joints.append(Joint(f"{name} free", "free", WORLD, name))
        colliders.append(Collider(name, name, "box", tuple(size)) if i % 2 == 0 else
                         Collider(name, name, "sphere", (float(size[0]),), friction=0.4))
        z += 2.0 * reach + 0.005
    return Mechanism(f"random pile {seed}", tuple(bodies), tuple(joints), colliders=tuple(colliders))


def run(mech: Mechanism, border: str, steps: int, record: list | None = None) -> tuple[np.ndarray, list[int]]:
    """States (x, q, v, w flattened) after each step and the Newton iterations per step, with the linear
    solver's border forced; `record` collects every (Newton matrix, right-hand side) solved."""
    model, state = start_from_tree(mech)
    state.kernel = False  # the numpy step, whose linear solver this compares (the C step borders densely)
    state.solver = LinearSolver(model.bodies.count, list(model.primary), border)
    if record is not None:
        solve = state.solver.solve

        def recording(A, rhs, *args, **kwargs):
            record.append((A, rhs))
            return solve(A, rhs, *args, **kwargs)
        state.solver.solve = recording
    rows, iterations = [], []
    for _ in range(steps):
        iterations.append(step(model, state, DT, TOL).iterations)
        rows.append(np.concatenate([state.x.ravel(), state.q.ravel(), state.v.ravel(), state.w.ravel()]))
    return np.array(rows), iterations


SCENES = {"box_drop": (lambda: load_mechanism(preset_path("box_drop")), 40),
          "dominoes": (lambda: load_mechanism(preset_path("dominoes")), 30),
          "sphere_chain": (lambda: load_mechanism(preset_path("sphere_chain")), 40),
          "random pile": (lambda: random_pile(3), 25)}


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(SCENES))
def test_sparse_contact_factors_follow_the_dense_border_to_round_off(name):
    """SuperLU and the block LU of contact_ldu.py (border "sparse") against the dense border."""
    make, steps = SCENES[name]
    mech = make()
    matrices: list = []
    dense, dense_iterations = run(mech, "dense", steps)
    for border in ("superlu", "sparse"):
        sparse, sparse_iterations = run(mech, border, steps, matrices if border == "sparse" else None)
        assert sparse_iterations == dense_iterations, border
        # positions (m, and unit quaternions) and velocities: the same iterates up to rounding that Newton
        # and the interior point carry from step to step (1e-12 of the scene's scale)
        scale = max(1.0, float(np.max(np.abs(dense))))
        assert np.max(np.abs(sparse - dense)) <= 1e-12 * scale, (name, border)
    contact_rows = [A.rows.count - A.n_primary for A, _ in matrices]
    assert max(contact_rows) >= 10, f"{name}: the run never reached its contacts"
    # every solve of the run, although A is indefinite (bodies' positive mass blocks, interior-point pairs'
    # -s/lam on the diagonal): by SuperLU's factor alone to rounding; by the block LU, whose condensed order
    # puts the pairs' lam/s on the bodies (growth up to 1e13), with defect correction to the solver's 1e-8
    with_contacts = [(A, rhs) for A, rhs in matrices if A.rows.count > A.n_primary]
    for A, rhs in with_contacts[::3]:
        M = bordered_matrix(A).toarray()
        eig = np.linalg.eigvalsh(0.5 * (M + M.T))
        assert eig[0] < 0.0 < eig[-1]
        for border in ("superlu", "sparse"):
            solver = LinearSolver(len(A.D), [], border)
            solver.factor(A)
            assert solver.fallbacks == 0, solver.fallback
            if border == "sparse":
                u = solver.solve(A, rhs)
                assert solver.fallbacks == 0 and solver.sweeps <= 3, (solver.fallback, solver.sweeps)
                assert np.max(np.abs(M @ u - rhs)) <= 1e-8 * np.max(np.abs(rhs))
                continue
            u = solver.precondition(rhs)
            # backward error of the equilibrated system R M C (C^-1 u) = R b (its rows span s/lam ~ 1e-12
            # to 1e9 unscaled): within n eps, as LU with small pivot growth gives
            row = 1.0 / np.max(np.abs(M), axis=1)
            col = 1.0 / np.max(np.abs(M * row[:, None]), axis=0)
            residual = np.max(np.abs(row * (M @ u - rhs)))
            bound = len(u) * EPS * np.max(np.abs(M * row[:, None] * col) @ np.abs(u / col) + np.abs(row * rhs))
            assert residual <= bound, border


def test_bordered_matrix_is_the_newton_matrix_without_damper_couplings():
    """The sparse assembly reproduces A u (blockwise, linear.NewtonMatrix.multiply) exactly; with
    contacts the sparse and dense factorisations both solve for the step to the solver's tolerance, and
    "auto" factors sparsely from SPARSE_FROM auxiliary rows on."""
    matrices: list = []
    run(random_pile(5), "dense", 16, matrices)
    A, rhs = next((A, rhs) for A, rhs in matrices if A.rows.count - A.n_primary >= 10)
    assert not len(A.coupling[0])
    u = np.random.default_rng(1).standard_normal(len(rhs))
    np.testing.assert_allclose(bordered_matrix(A) @ u, A.multiply(u), rtol=0, atol=1e-12 * np.max(A.multiply(u, True)))
    steps = []
    for border in ("dense", "sparse", "auto"):
        solver = LinearSolver(len(A.D), [], border)
        solver.factor(A)
        steps.append(solver.solve(A, rhs))
        k = A.rows.count - A.n_primary
        sparse = border == "sparse" or border == "auto" and k >= linear.SPARSE_FROM
        assert solver.factorisation == ("block LU" if sparse else "tree")
    # each is the step to the solvers' relative defect of 1e-8 (how close the steps then are, for the condition
    # of this matrix: test_contact_ldu.test_c_block_lu_is_its_numpy_twin_and_gives_the_newton_direction)
    for u in steps:
        assert np.max(np.abs(bordered_matrix(A) @ u - rhs)) <= 1e-8 * np.max(np.abs(rhs))
    with pytest.raises(ValueError, match="border"):
        LinearSolver(1, [], "banded")


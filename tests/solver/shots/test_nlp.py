"""The interior-point NLP solver on problems with known answers (HS071, a bounded QP, an infeasible one)."""

import numpy as np
import pytest
import scipy.sparse as sp

from addon.solver.shots.nlp import NLP, solve


def _hs071(hessian: bool) -> NLP:
    def f(x):
        return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]

    def g(x):
        return np.array([x[0] * x[3] + x[3] * (x[0] + x[1] + x[2]), x[0] * x[3], x[0] * x[3] + 1,
                         x[0] * (x[0] + x[1] + x[2])])

    def c(x):
        return np.array([np.prod(x), x @ x])

    def J(x):
        return sp.csr_matrix(np.array([[np.prod(np.delete(x, i)) for i in range(4)], 2 * x]))

    def H(x, y, s):
        Hf = np.array([[2 * x[3], x[3], x[3], 2 * x[0] + x[1] + x[2]], [x[3], 0, 0, x[0]], [x[3], 0, 0, x[0]],
                       [2 * x[0] + x[1] + x[2], x[0], x[0], 0]])
        Hc = np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(4)] for i in range(4)])
        return sp.csr_matrix(s * Hf + y[0] * Hc + y[1] * 2 * np.eye(4))

    return NLP(np.ones(4), 5 * np.ones(4), f, g, c, J, np.array([25.0, 40.0]), np.array([np.inf, 40.0]),
               H if hessian else None)


@pytest.mark.parametrize("hessian", [True, False])
def test_hs071_reaches_the_published_optimum(hessian):
    r = solve(_hs071(hessian), np.array([1.0, 5.0, 5.0, 1.0]))
    assert r.status == "solved"
    assert r.objective == pytest.approx(17.0140173, abs=1e-6)  # Hock & Schittkowski problem 71
    assert np.allclose(r.x, [1.0, 4.7429996, 3.8211500, 1.3794083], atol=1e-6)
    assert r.constraint_violation < 1e-9


def test_bounded_quadratic_meets_its_kkt_conditions():
    # min |x - a|^2 s.t. sum x = 1, 0 <= x <= 0.4: the projection of a onto a capped simplex
    a = np.array([0.9, 0.5, -0.2, 0.1])
    nlp = NLP(np.zeros(4), np.full(4, 0.4), lambda x: float((x - a) @ (x - a)), lambda x: 2 * (x - a),
              lambda x: np.array([x.sum()]), lambda x: sp.csr_matrix(np.ones((1, 4))), np.ones(1), np.ones(1),
              lambda x, y, s: sp.csr_matrix(2 * s * np.eye(4)))
    r = solve(nlp, np.full(4, 0.25))
    assert r.status == "solved"
    # KKT: x = clip(a - t, 0, 0.4) with the multiplier t making the sum 1 (found by a fine scan)
    ts = np.linspace(-1, 1, 200001)
    sums = np.clip(a[None] - ts[:, None], 0, 0.4).sum(1)
    t = ts[np.argmin(np.abs(sums - 1))]
    assert np.allclose(r.x, np.clip(a - t, 0, 0.4), atol=1e-5)


def test_infeasible_problem_is_reported_and_progress_can_cancel():
    nlp = NLP(np.full(2, -np.inf), np.full(2, np.inf), lambda x: float(x @ x), lambda x: 2 * x,
              lambda x: np.array([x @ x + 1]), lambda x: sp.csr_matrix(2 * x[None]), np.zeros(1), np.zeros(1),
              lambda x, y, s: sp.csr_matrix((2 * s + 2 * y[0]) * np.eye(2)))
    r = solve(nlp, np.array([1.0, 2.0]))
    assert r.status == "infeasible" and r.constraint_violation >= 1.0 - 1e-9
    seen = []
    r = solve(_hs071(True), np.array([1.0, 5.0, 5.0, 1.0]), progress=lambda i, info: seen.append(i) or i < 2)
    assert r.status == "cancelled" and seen == [0, 1, 2]


def test_permutation_parity_is_the_sign_of_the_permutation_matrix():
    from addon.solver.shots.nlp import _permutation_parity
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 100, 257):
        for _ in range(10):
            p = rng.permutation(n)
            assert _permutation_parity(p) == (0 if np.linalg.det(np.eye(n)[p]) > 0 else 1)

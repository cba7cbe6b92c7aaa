"""Independent references for the vehicle tests: continuous solutions by scipy, finite-difference Jacobians."""

import numpy as np
from scipy.integrate import solve_ivp

from addon.solver import groups
from addon.solver.lie import hat


def continuous_solution(model, g0, xi0, t_end, tol=1e-11):
    """(g (4, 4), xi (6,)) at t_end of R' = R hat(w), x' = R v, I xi' = ad_xi^T I xi + f(t, g, xi)."""
    def rhs(t, y):
        R, x, xi = y[:9].reshape(3, 3), y[9:12], y[12:]
        f, _ = model.wrench(t, groups.se3_element(R, x), xi)
        xi_dot = model.inertia_inv @ (groups.se3_ad(xi).T @ (model.inertia @ xi) + f)
        return np.concatenate([(R @ hat(xi[:3])).ravel(), R @ xi[3:], xi_dot])

    g0 = np.asarray(g0, dtype=float)
    y0 = np.concatenate([g0[:3, :3].ravel(), g0[:3, 3], xi0])
    y = solve_ivp(rhs, (0, t_end), y0, method="DOP853", rtol=tol, atol=tol).y[:, -1]
    return groups.se3_element(y[:9].reshape(3, 3), y[9:12]), y[12:]


def residual_jacobian_fd(model, state, xi, h, eps=1e-6):
    """Central differences (6, 6) of holonomic.residual with respect to xi_k."""
    from addon.solver.vehicles import holonomic

    def r(x):
        return holonomic.residual(model, state, x, h)[0]

    return np.column_stack([(r(xi + d) - r(xi - d)) / (2 * eps) for d in np.eye(6) * eps])

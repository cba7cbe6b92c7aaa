"""Vehicle test support: continuous solutions by scipy, finite-difference Jacobians, the helpers the SE(3)
vehicle tests share (a pose, a recorded run of holonomic.step, the measured convergence orders), and the
kinematic trailer's closed-form hitch angle (also used by the Blender trailer test)."""

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


def pose(z, roll=0.0, pitch=0.0, yaw=0.0, x=0.0):
    """A world pose (4, 4) at height z and x, turned by the rotation vector (roll, pitch, yaw)."""
    return groups.se3_element(groups.so3_exp(np.array([roll, pitch, yaw])), np.array([x, 0.0, z]))


def run_holonomic(model, g0, xi0, h, steps, tol=1e-13):
    """(g (N+1, 4, 4), node twists (N+1, 6), energies (N+1,), Newton iterations (N,)) of holonomic.step."""
    from addon.solver.vehicles import holonomic

    state = holonomic.start(model, g0, xi0)
    rows = [(state.g, holonomic.node_twist(model, state, h), holonomic.energy(model, state, h))]
    its = []
    for _ in range(steps):
        its.append(holonomic.step(model, state, h, tol))
        rows.append((state.g, holonomic.node_twist(model, state, h), holonomic.energy(model, state, h)))
    g, xi, e = (np.array(a) for a in zip(*rows))
    return g, xi, e, np.array(its)


def convergence_orders(model, g0, xi0, t_end, steps, tol=1e-11):
    """(errors, orders) of the final pose and twist against continuous_solution for each step size in
    `steps` (each half the one before)."""
    ref_g, ref_xi = continuous_solution(model, g0, xi0, t_end, tol=tol)
    errors = []
    for h in steps:
        g, xi, *_ = run_holonomic(model, g0, xi0, h, int(round(t_end / h)))
        errors.append(max(np.abs(g[-1] - ref_g).max(), np.abs(xi[-1] - ref_xi).max()))
    return errors, np.log2(np.array(errors[:-1]) / errors[1:])


def residual_jacobian_fd(model, state, xi, h, eps=1e-6):
    """Central differences (6, 6) of holonomic.residual with respect to xi_k."""
    from addon.solver.vehicles import holonomic

    def r(x):
        return holonomic.residual(model, state, x, h)[0]

    return np.column_stack([(r(xi + d) - r(xi - d)) / (2 * eps) for d in np.eye(6) * eps])


def hitch_closed_form(gamma0: float, s: np.ndarray, kappa: float, d: float, L: float) -> np.ndarray:
    """Hitch angle g = theta - beta after the car's rear axle has rolled s at constant curvature kappa.

    Derivation: the ball H = X - d e(theta) moves at H' = v e(theta) - d v kappa e_perp(theta); the trailer's
    axle P = H - L e(beta) has no side slip, e_perp(beta) . P' = 0, so L beta' = e_perp(beta) . H' = v (sin g -
    d kappa cos g) and, with theta' = v kappa,

        dg/ds = kappa - (sin g - d kappa cos g) / L

    (the kinematic one-trailer model with an off-axle hitch: Rouchon, Fliess, Levine and Martin, "Flatness and
    motion planning: the car with n trailers", ECC 1993, for d = 0; Altafini, "Some properties of the general
    n-trailer", Int. J. Control 74(4), 2001, for d != 0 [from memory]). Straight (kappa = 0): dg/ds = -sin g / L,
    so d ln tan(g/2) / ds = -1/L and tan(g/2) = tan(g0/2) exp(-s/L): the trailer's axle runs on a tractrix.
    Turning: sin g - d kappa cos g = A sin(g - a0) with A = sqrt(1 + d^2 kappa^2), a0 = atan(d kappa); for
    x = g - a0, tau = tan(x/2) solves the Riccati equation tau' = (kappa/2) (tau - t1)(tau - t2), t1,2 = (A/L -+
    q) / kappa, q = sqrt(A^2/L^2 - kappa^2) (real when R^2 + d^2 > L^2, R = 1/kappa: the trailer has a circle),
    so (tau - t1) / (tau - t2) = C exp(-q s): g settles at a0 + 2 atan(t1), where sin(g - a0) = kappa L / A.
    """
    if kappa == 0.0:
        return 2 * np.arctan(np.tan(gamma0 / 2) * np.exp(-s / L))
    A, a0 = np.hypot(1.0, d * kappa), np.arctan(d * kappa)
    q = np.sqrt((A / L) ** 2 - kappa**2)
    t1, t2 = (A / L - q) / kappa, (A / L + q) / kappa
    tau0 = np.tan((gamma0 - a0) / 2)
    r = (tau0 - t1) / (tau0 - t2) * np.exp(-q * s)
    return a0 + 2 * np.arctan((t1 - r * t2) / (1 - r))

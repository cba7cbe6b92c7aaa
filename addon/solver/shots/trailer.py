"""The car with trailer (vehicles/trailer.py) as shot constraints with exact first and second derivatives.

Owns the car-and-trailer StageDynamics. Node state (theta, x, y, phi, beta): the car's as in car.py plus
the trailer heading beta; segment variables as the car's (drive / max_drive_torque, wheel rate u). Rows of
step k, exactly trailer.step at a converged Newton solve:

    car pose rows: car.py's (theta, x, y after the exact arc)
    momentum:      (G w_k) . (xi_k - xi_{k-1}) - h ((1 - a) d_k + a d_{k-1}) = 0
    chord:         e_perp(beta_k + delta_k / 2) . (H_{k+1} - P_k) - L sin(delta_k / 2) = 0

w_k = trailer.direction(theta_k - beta_k, sigma_k), G = trailer metric, delta_k = beta_{k+1} - beta_k,
H_{k+1} = X_{k+1} - d e(theta_{k+1}) the tow ball after the step (the simulator's H_{k+1}(u_k) once the car
rows hold), P_k = X_k - d e(theta_k) - L e(beta_k) the trailer axle, xi_k = (rho u, rho u sm_k / l,
arc_k / h, delta_k / h), arc_k = q(delta_k) (e(mid) . (H_{k+1} - P_k) - L cos(delta_k / 2)). At k = 0,
xi_{-1} is w_0 u(0) (the simulator's start momentum M(gamma_0, sigma_0) u(0)). The momentum and chord
rows are written once over jets (jets.py): first-order jets give their Jacobian, second-order jets their
Hessian; the car's rows reuse CarDynamics' exact derivatives.
"""

from __future__ import annotations

import numpy as np

from ..vehicles.trailer import compile_car_trailer
from . import jets
from .car import CarDynamics


def arc_over_chord(x: jets.Jet) -> jets.Jet:
    """q(delta) = (delta/2) / sin(delta/2) (series near 0), trailer._arc_over_chord, as a jet. With z = delta/2,
    q' = (sin z - z cos z) / (2 sin^2 z), q'' = (z sin^2 z - 2 sin z cos z + 2 z cos^2 z) / (4 sin^3 z)."""
    z = 0.5 * x.value
    small = np.abs(z) < 1e-3
    zs = np.where(small, 1.0, z)
    s, c = np.sin(zs), np.cos(zs)
    q = np.where(small, 1 + z * z / 6 + 7 * z**4 / 360, zs / s)
    dq = np.where(small, 0.5 * (z / 3 + 7 * z**3 / 90), 0.5 * (s - zs * c) / s**2)
    d2q = np.where(small, 0.25 * (1 / 3 + 7 * z * z / 30), 0.25 * (zs * s * s - 2 * s * c + 2 * zs * c * c) / s**3)
    return x.apply(q, dq, d2q)


class TrailerDynamics(CarDynamics):
    state_names = ("theta", "x", "y", "steer", "beta")
    segment_names = ("drive_torque", "wheel_rate")
    _CAR_SLOTS = np.concatenate([s * 7 + np.array([0, 1, 2, 3, 5, 6]) for s in range(3)] + [[21]])  # car window in ours

    def __init__(self, mechanism):
        super().__init__(mechanism)
        self.trailer = compile_car_trailer(self.vehicle)
        s = self.trailer.spec
        self.d, self.L = s.hitch_behind_rear_axle, s.hitch_to_trailer_axle
        self.G = self.trailer.metric
        self.beta0 = self.theta0 - self.vehicle.hitch_angle  # the trailer's start heading

    def _car_window(self, W):
        return np.delete(W, 4, axis=2)  # the car's own columns (theta, x, y, phi, d, u)

    def _trailer_rows(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, second: bool) -> tuple[jets.Jet, jets.Jet]:
        """The momentum and chord rows as jets over the window (3 x 7, then h)."""
        K = len(W)
        var = jets.Jet.variables(np.concatenate([W.reshape(K, 21), h[:, None]], 1), second)
        P, C, N = var[0:7], var[7:14], var[14:21]
        hh = var[21]
        rho, l, a, d, L = self.rho, self.l, self.alpha, self.d, self.L
        unit = self.spec.max_drive_torque

        def e(t):
            return jets.cos(t), jets.sin(t)

        def ball(S):  # tow ball X - d e(theta)
            c, s = e(S[0])
            return S[1] - d * c, S[2] - d * s

        def axle(S):  # trailer axle X - d e(theta) - L e(beta)
            bx, by = ball(S)
            c, s = e(S[4])
            return bx - L * c, by - L * s

        def step_twist(S0, S1, sm, u):
            """(xi (4 jets), chord normal) of the step from node S0 to S1 at wheel rate u, steering sm."""
            delta = S1[4] - S0[4]
            mid = S0[4] + 0.5 * delta
            hx, hy = ball(S1)
            px, py = axle(S0)
            Dx, Dy = hx - px, hy - py
            cm, sm_ = e(mid)
            chord = cm * Dx + sm_ * Dy - L * jets.cos(0.5 * delta)
            arc = arc_over_chord(delta) * chord
            normal = -sm_ * Dx + cm * Dy - L * jets.sin(0.5 * delta)
            inv_h = hh.reciprocal()
            return (rho * u, (rho / l) * u * sm, arc * inv_h, delta * inv_h), normal

        sig_p, sig, sig_n = jets.tan(P[3]), jets.tan(C[3]), jets.tan(N[3])
        sm_k = (1 - a) * sig + a * sig_n
        sm_p = (1 - a) * sig_p + a * sig
        xi_k, normal = step_twist(C, N, sm_k, C[6])
        xi_p, _ = step_twist(P, C, sm_p, P[6])
        gamma = C[0] - C[4]
        kap = (d / l) * sig
        cg, sg = jets.cos(gamma), jets.sin(gamma)
        w = (rho, (rho / l) * sig, rho * (cg + kap * sg), (rho / L) * (sg - kap * cg))
        impulse = hh * ((1 - a) * unit * C[5] + a * unit * P[5])
        mom_rest = sum(self.G[i] * w[i] * (xi_k[i] - xi_p[i]) for i in range(4)) - impulse
        mom_first = sum(self.G[i] * w[i] * (xi_k[i] - w[i] * P[6]) for i in range(4)) - impulse
        return jets.where(first, mom_first, mom_rest), normal

    def residual(self, W, first, h):
        K = len(W)
        rc, Jc, dhc = super().residual(self._car_window(W), first, h)
        r = np.zeros((K, 5))
        J = np.zeros((K, 5, 3, 7))
        dh = np.zeros((K, 5))
        r[:, 1:4] = rc[:, 1:4]
        J[:, 1:4][..., [0, 1, 2, 3, 5, 6]] = Jc[:, 1:4]
        dh[:, 1:4] = dhc[:, 1:4]
        rows = self._trailer_rows(W, first, h, second=False)
        g = jets.gradients(list(rows))
        r[:, [0, 4]] = np.column_stack([rows[0].value, rows[1].value])
        J[:, [0, 4]] = g[:, :, :21].reshape(K, 2, 3, 7)
        dh[:, [0, 4]] = g[:, :, 21]
        return r, J, dh

    hessian_slots = None  # its residual_hessian is over the trailer's wider window
    residual_pattern = None  # its rows are over the wider window too

    def residual_hessian(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """sum_i y[:, i] d2 r_i over the window (3 x 7 flattened, then h): (K, 22, 22), exact: the car's rows
        from CarDynamics.residual_hessian, the momentum and chord rows over second-order jets."""
        out = jets.weighted_hessian(list(self._trailer_rows(W, first, h, second=True)), y[:, [0, 4]])
        car_y = np.column_stack([np.zeros(len(W)), y[:, 1:4]])
        slots = self._CAR_SLOTS
        out[:, slots[:, None], slots] += super().residual_hessian(self._car_window(W), first, h, car_y)
        return out

    def pre_start(self):
        car = super().pre_start()
        return np.array([*car[:4], self.beta0, *car[4:]])

    def start(self):
        car = super().start()
        return np.array([*car, self.beta0])

    def bounds(self):
        lo, hi = super().bounds()
        return np.insert(lo, 4, -np.inf), np.insert(hi, 4, np.inf)

    def body_point(self, S, offset):
        p, J = super().body_point(S[:, :4], offset)
        return p, np.concatenate([J, np.zeros((len(S), 3, 1))], 2)

    def heading(self, S):
        a, J = super().heading(S[:, :4])
        return a, np.concatenate([J, np.zeros((len(S), 1))], 1)

    def guess(self, positions, headings, h):
        st = super().guess(positions, headings, h)
        return np.insert(st, 4, st[:, 0], axis=1)  # the trailer in line with the car

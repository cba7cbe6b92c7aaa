"""The car with trailer (vehicles/trailer.py) as shot constraints; exact first derivatives by forward-mode duals.

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
rows are evaluated on dual numbers (value and gradient over the window), so their Jacobian is exact.
"""

from __future__ import annotations

import numpy as np

from ..vehicles.trailer import compile_car_trailer
from .car import CarDynamics


class Dual:
    """Forward-mode dual numbers: value (K,) and gradient (K, n) over the window's variables."""

    def __init__(self, v, g):
        self.v, self.g = v, g

    @staticmethod
    def _lift(other, like):
        return other if isinstance(other, Dual) else Dual(np.broadcast_to(other, like.v.shape), 0.0 * like.g)

    def __add__(self, o):
        o = Dual._lift(o, self)
        return Dual(self.v + o.v, self.g + o.g)

    __radd__ = __add__

    def __neg__(self):
        return Dual(-self.v, -self.g)

    def __sub__(self, o):
        return self + (-Dual._lift(o, self))

    def __rsub__(self, o):
        return Dual._lift(o, self) - self

    def __mul__(self, o):
        o = Dual._lift(o, self)
        return Dual(self.v * o.v, self.g * o.v[:, None] + o.g * self.v[:, None])

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = Dual._lift(o, self)
        return Dual(self.v / o.v, (self.g * o.v[:, None] - o.g * self.v[:, None]) / (o.v**2)[:, None])

    def apply(self, value, slope):
        """f(self) given f's value and derivative at self.v."""
        return Dual(value, self.g * slope[:, None])


def sin(x: Dual) -> Dual:
    return x.apply(np.sin(x.v), np.cos(x.v))


def cos(x: Dual) -> Dual:
    return x.apply(np.cos(x.v), -np.sin(x.v))


def tan(x: Dual) -> Dual:
    t = np.tan(x.v)
    return x.apply(t, 1 + t * t)


def arc_over_chord(x: Dual) -> Dual:
    """q(delta) = (delta/2) / sin(delta/2) (series near 0), trailer._arc_over_chord."""
    z = 0.5 * x.v
    small = np.abs(z) < 1e-3
    zs = np.where(small, 1.0, z)
    q = np.where(small, 1 + z * z / 6 + 7 * z**4 / 360, zs / np.sin(zs))
    dq = np.where(small, 0.5 * (z / 3 + 7 * z**3 / 90), 0.5 * (np.sin(zs) - zs * np.cos(zs)) / np.sin(zs) ** 2)
    return x.apply(q, dq)


class TrailerDynamics(CarDynamics):
    state_names = ("theta", "x", "y", "steer", "beta")
    segment_names = ("drive_torque", "wheel_rate")
    residual_hessian = None  # the car's exact second derivatives do not cover the trailer's rows: differenced

    def __init__(self, mechanism):
        super().__init__(mechanism)
        self.trailer = compile_car_trailer(self.vehicle)
        s = self.trailer.spec
        self.d, self.L = s.hitch_behind_rear_axle, s.hitch_to_trailer_axle
        self.G = self.trailer.metric
        self.beta0 = self.theta0 - self.vehicle.hitch_angle  # the trailer's start heading

    def _car_window(self, W):
        return np.delete(W, 4, axis=2)  # the car's own columns (theta, x, y, phi, d, u)

    def residual(self, W, first, h):
        K = len(W)
        rc, Jc, dhc = super().residual(self._car_window(W), first, h)
        r = np.zeros((K, 5))
        J = np.zeros((K, 5, 3, 7))
        dh = np.zeros((K, 5))
        car_cols = [0, 1, 2, 3, 5, 6]
        r[:, 1:4] = rc[:, 1:4]
        J[:, 1:4][..., car_cols] = Jc[:, 1:4]
        dh[:, 1:4] = dhc[:, 1:4]
        # dual variables over (window 3 x 7, h)
        n = 22
        X = np.concatenate([W.reshape(K, 21), h[:, None]], 1)
        var = [Dual(X[:, i], np.tile(np.eye(n)[i], (K, 1))) for i in range(n)]
        P, C, N = var[0:7], var[7:14], var[14:21]
        hh = var[21]
        rho, l, a, d, L = self.rho, self.l, self.alpha, self.d, self.L
        unit = self.spec.max_drive_torque

        def e(t):
            return cos(t), sin(t)

        def ball(S):  # tow ball X - d e(theta)
            c, s = e(S[0])
            return S[1] - d * c, S[2] - d * s

        def axle(S):  # trailer axle X - d e(theta) - L e(beta)
            bx, by = ball(S)
            c, s = e(S[4])
            return bx - L * c, by - L * s

        def step_twist(S0, S1, sm, u):
            """(xi (4 duals), delta) of the step from node S0 to S1 at wheel rate u, steering sm."""
            delta = S1[4] - S0[4]
            mid = S0[4] + 0.5 * delta
            hx, hy = ball(S1)
            px, py = axle(S0)
            Dx, Dy = hx - px, hy - py
            cm, sm_ = e(mid)
            chord = cm * Dx + sm_ * Dy - L * cos(0.5 * delta)
            arc = arc_over_chord(delta) * chord
            normal = -sm_ * Dx + cm * Dy - L * sin(0.5 * delta)
            return (rho * u, rho * u * sm / l, arc / hh, delta / hh), normal

        sig_p, sig, sig_n = tan(P[3]), tan(C[3]), tan(N[3])
        sm_k = (1 - a) * sig + a * sig_n
        sm_p = (1 - a) * sig_p + a * sig
        xi_k, normal = step_twist(C, N, sm_k, C[6])
        xi_p, _ = step_twist(P, C, sm_p, P[6])
        gamma = C[0] - C[4]
        kap = d * sig / l
        w = (rho + 0.0 * sig, rho * sig / l, rho * (cos(gamma) + kap * sin(gamma)),
             rho * (sin(gamma) - kap * cos(gamma)) / L)
        impulse = hh * ((1 - a) * unit * C[5] + a * unit * P[5])
        mom_rest = sum(self.G[i] * w[i] * (xi_k[i] - xi_p[i]) for i in range(4)) - impulse
        mom_first = sum(self.G[i] * w[i] * (xi_k[i] - w[i] * P[6]) for i in range(4)) - impulse
        for row, dual in ((0, None), (4, normal)):
            if dual is None:
                v = np.where(first, mom_first.v, mom_rest.v)
                g = np.where(first[:, None], mom_first.g, mom_rest.g)
            else:
                v, g = dual.v, dual.g
            r[:, row] = v
            J[:, row] = g[:, :21].reshape(K, 3, 7)
            dh[:, row] = g[:, 21]
        return r, J, dh

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

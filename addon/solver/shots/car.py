"""The car's discrete equations (vehicles/car.py, seed 001 §5.2.1) as shot constraints with exact derivatives.

Owns the car's StageDynamics. Node state (theta, x, y, phi): rear-axle pose and road-wheel steering
angle phi = steer(t_k) (sigma = tan phi); segment variables (d, u): the drive torque at the step's
quadrature time t_k + alpha h and the rear-axle wheel rate u_k. The residuals of step k are exactly
car.step with no brake (a negative drive torque brakes or reverses):

    (rho^2 m + c sigma_k sm_k) u_k - (rho^2 m + c sigma_k sm_{k-1}) u_{k-1} - h ((1 - a) d_k + a d_{k-1}) = 0
    theta_{k+1} - theta_k - h (rho / l) sm_k u_k = 0
    (x, y)_{k+1} - (x, y)_k - Rot(theta_k) h rho u_k (sin w / w, (1 - cos w) / w),   w = h (rho / l) sm_k u_k

sm_k = (1 - a) sigma_k + a sigma_{k+1}; at k = 0 the left momentum is (rho^2 m + c sigma_0^2) u(0)
(sm_{-1} := sigma_0, d_{-1} = 0), the simulator's start. Replaying the steering keyed linearly at t_k
and the drive torque keyed linearly at t_k + a h reproduces the same numbers.

The rows, their Jacobian and the exact Hessian run in C over all steps (native/car_step.c) when the kernels are
built; the numpy methods (residual_numpy, residual_hessian_numpy) are its twin and the tests' reference.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..integrator import simulate
from ..native import shot_rows_binding as _native
from ..vehicles.car import compile_car
from . import jets
from .transcription import Channel, StageDynamics

_SMALL = 1e-3


def arc(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A = sin w / w, B = (1 - cos w) / w and their derivatives (series below |w| = 1e-3)."""
    small = np.abs(w) < _SMALL
    t = np.where(small, 1.0, w)
    w2 = w * w
    A = np.where(small, 1 - w2 / 6 + w2 * w2 / 120, np.sin(t) / t)
    B = np.where(small, w / 2 - w * w2 / 24 + w * w2 * w2 / 720, (1 - np.cos(t)) / t)
    dA = np.where(small, -w / 3 + w * w2 / 30, (t * np.cos(t) - np.sin(t)) / t**2)
    dB = np.where(small, 0.5 - w2 / 8 + w2 * w2 / 144, (t * np.sin(t) - 1 + np.cos(t)) / t**2)
    return A, B, dA, dB


def arc_curvature(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Second derivatives of A = sin w / w and B = (1 - cos w) / w (series below |w| = 1e-3)."""
    small = np.abs(w) < _SMALL
    t = np.where(small, 1.0, w)
    w2 = w * w
    d2A = np.where(small, -1 / 3 + w2 / 10 - w2 * w2 / 168, ((2 - t * t) * np.sin(t) - 2 * t * np.cos(t)) / t**3)
    d2B = np.where(small, -w / 4 + w * w2 / 36 - w * w2 * w2 / 960,
                   (t * t * np.cos(t) - 2 * t * np.sin(t) + 4 * np.sin(0.5 * t) ** 2) / t**3)
    return d2A, d2B


def arc_jets(w: jets.Jet) -> tuple[jets.Jet, jets.Jet]:
    """A = sin w / w and B = (1 - cos w) / w as jets of the jet w."""
    A, B, dA, dB = arc(w.value)
    d2A, d2B = arc_curvature(w.value)
    return w.apply(A, dA, d2A), w.apply(B, dB, d2B)


def arc_lagrangian(theta: jets.Jet, turn: jets.Jet, length: jets.Jet, y: np.ndarray) -> jets.Jet:
    """y[:, 0] r_x + y[:, 1] r_y of the arc rows below (`arc_rows`) up to terms linear in the window, as a jet:
    -(y_x ct + y_y st) v A(w) - (y_y ct - y_x st) v B(w), turn w, length v, heading theta_k."""
    A, B = arc_jets(turn)
    ct, st = jets.cos(theta), jets.sin(theta)
    P, Q = y[:, 0] * ct + y[:, 1] * st, y[:, 1] * ct - y[:, 0] * st
    return -length * (P * A + Q * B)


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # a quantity per step, its (K, 3, 6) Jacobian, its h-derivative


def arc_rows(r: np.ndarray, J: np.ndarray, dh: np.ndarray, pose: tuple[np.ndarray, ...], turn: Rows,
             length: Rows) -> None:
    """Fill rows 2 and 3 of a planar step that rolls along a circular arc:

        (x, y)_{k+1} - (x, y)_k - Rot(theta_k) v (sin w / w, (1 - cos w) / w) = 0,

    pose = (theta_k, x_k, y_k, x_{k+1}, y_{k+1}); turn = (w, dw, dw/dh) and length = (v, dv, dv/dh)
    with dw, dv over the (previous, this, next) node and segment slots, as r, J, dh are laid out.
    d(T1, T2) = v (dA, dB) dw + (A, B) dv with T1 = v A, T2 = v B.
    """
    th, x, y, xn, yn = pose
    w, dw, dw_dh = turn
    v, dv, dv_dh = length
    A, B, dA, dB = arc(w)
    T1, T2 = v * A, v * B
    dT1 = v[:, None, None] * dA[:, None, None] * dw + A[:, None, None] * dv
    dT2 = v[:, None, None] * dB[:, None, None] * dw + B[:, None, None] * dv
    dT1_dh, dT2_dh = v * dA * dw_dh + A * dv_dh, v * dB * dw_dh + B * dv_dh
    ct, st = np.cos(th), np.sin(th)
    r[:, 2] = xn - x - (ct * T1 - st * T2)
    r[:, 3] = yn - y - (st * T1 + ct * T2)
    J[:, 2] = -(ct[:, None, None] * dT1 - st[:, None, None] * dT2)
    J[:, 3] = -(st[:, None, None] * dT1 + ct[:, None, None] * dT2)
    J[:, 2, 2, 1] += 1.0
    J[:, 2, 1, 1] -= 1.0
    J[:, 3, 2, 2] += 1.0
    J[:, 3, 1, 2] -= 1.0
    J[:, 2, 1, 0] += st * T1 + ct * T2
    J[:, 3, 1, 0] += -ct * T1 + st * T2
    dh[:, 2] = -(ct * dT1_dh - st * dT2_dh)
    dh[:, 3] = -(st * dT1_dh + ct * dT2_dh)


_PERP = np.array([[-1.0], [1.0]])  # (a, b) -> (-b, a) with the swap: a quarter turn in the plane


def _cos_sin(th: np.ndarray) -> np.ndarray:
    """(cos th, sin th) as the rows of one (2, K) array (planar pairs as rows: numpy's loops run over the instances)."""
    cs = np.empty((2, len(th)))
    np.cos(th, out=cs[0])
    np.sin(th, out=cs[1])
    return cs


def planar_point_hessian(S: np.ndarray, ox: float, oy: float) -> np.ndarray:
    """d2p/dS2 (K, 3, ns, ns) of the point (x + cos th ox - sin th oy, y + sin th ox + cos th oy, const) of a
    planar body, th = S[:, 0], x, y = S[:, 1:3]: only the heading enters nonlinearly, d2(x, y)/dth2 = (-c ox + s oy,
    -s ox - c oy) (each product's sign moved onto ox or oy: the same numbers)."""
    cs = _cos_sin(S[:, 0])
    H = np.zeros((len(S), 3, S.shape[1], S.shape[1]))
    np.add(cs * -ox, cs[::-1] * (-oy * _PERP), out=H[:, :2, 0, 0].T)
    return H


_SLOTS = np.array([3, 4, 5, 6, 9, 10, 11, 15, 18])  # window slots entering nonlinearly (x, y, ... linearly)


def _row_pattern() -> np.ndarray:
    """The entries of the step rows' Jacobian over the window (stages k-1, k, k+1 of (theta, x, y, phi, d, u), then h)
    that can be nonzero (28 of 76; residual_numpy term by term): the momentum row over phi, d, u of stages k-1 and k,
    phi_k+1 and h; the heading row over theta_k, theta_k+1 and the turn's phi_k, u_k, phi_k+1, h; the arc rows over
    theta_k, their own coordinate at k and k+1 and the turn's slots."""
    pattern = np.zeros((4, 19), bool)
    turn = [9, 11, 15, 18]
    pattern[0, [3, 4, 5, 9, 10, 11, 15, 18]] = True
    pattern[1, [6, 12] + turn] = True
    pattern[2, [6, 7, 13] + turn] = True
    pattern[3, [6, 8, 14] + turn] = True
    return pattern


def _slot_pattern() -> np.ndarray:
    """The entries of the step Hessian over _SLOTS that can be nonzero (36 of 81; _hessian_numpy term by term): every
    pair of the slots the turn, the arc length and the heading move (theta, phi, phi_next, u, h), the momentum row's
    products (phi, phi_prev), (phi, u_prev), (phi_prev, u_prev), (d, h), (d_prev, h), and phi_prev's own tan
    curvature."""
    SP, DP, WP, TH, S, D, U, SN, HH = range(9)
    pattern = np.zeros((9, 9), bool)
    moved = [TH, S, SN, U, HH]
    pattern[np.ix_(moved, moved)] = True
    for i, j in ((S, SP), (S, WP), (SP, WP), (D, HH), (DP, HH), (SP, SP)):
        pattern[i, j] = pattern[j, i] = True
    return pattern


class CarDynamics(StageDynamics):
    state_names = ("theta", "x", "y", "steer")
    segment_names = ("drive_torque", "wheel_rate")
    planar = True
    velocity_components = (0,)

    def __init__(self, mechanism):
        self.mechanism = mechanism
        self.vehicle = mechanism.vehicle
        self.model = compile_car(self.vehicle)
        s = self.model.spec
        self.spec = s
        self.alpha = self.model.alpha
        self.rho, self.l, self.b = s.wheel_radius, s.wheelbase, s.com_ahead_of_rear_axle
        self.m0 = s.wheel_radius**2 * self.model.mass_x
        self.c = self.model.coupling
        self._par = np.array([self.alpha, self.rho, self.rho / self.l, self.c, self.m0, s.max_drive_torque])
        self.channels = (Channel("drive_torque", "segment", 0, self.alpha, s.max_drive_torque,
                                 unit=s.max_drive_torque),
                         Channel("steer", "node", 3, 0.0, s.max_steer, effort=False))
        from ..vehicles.integrator import _heading
        self.theta0 = _heading(self.vehicle.orientation)
        self.speed0 = float(self.vehicle.velocity[3])

    def residual(self, W, first, h):
        """The step rows (StageDynamics.residual): in C (native/car_step.c) when the kernels are built, else
        residual_numpy, its twin and reference."""
        if _native.LIB is None:
            return self.residual_numpy(W, first, h)
        r, J = _native.step(W, first, h, self._par)
        return r, J[:, :, :18].reshape(len(W), 4, 3, 6), J[:, :, 18]

    def window_residual(self, X, first, out=None):
        """StageDynamics.window_residual: the C kernel's Jacobian is laid out over the window then h already (not
        for a subclass with rows of its own, such as the trailer's)."""
        if _native.LIB is None or type(self).residual is not CarDynamics.residual:
            return super().window_residual(X, first, out)
        return _native.step(X[:, :18].reshape(len(X), 3, 6), first, X[:, 18], self._par, out)

    def _own(self, name: str) -> bool:
        """Whether method `name` is CarDynamics' (its C kernel serves: not a subclass's rows of its own)."""
        return _native.LIB is not None and getattr(type(self), name) is getattr(CarDynamics, name)

    def window_residual_call(self, X, first, out):
        """StageDynamics.window_residual_call: the C kernel bound to the window buffer and the outputs."""
        if not (self._own("residual") and self._own("window_residual")):
            return None
        return _native.step_call(X[:, :18].reshape(len(X), 3, 6), first, X[:, 18], self._par, out)

    def residual_hessian_slots_call(self, X, first, y, out, positions=None):
        """StageDynamics.residual_hessian_slots_call: the C kernel bound to the window buffer, weights and output."""
        if not self._own("residual_hessian_slots"):
            return None
        return _native.hessian_call(X[:, :18].reshape(len(X), 3, 6), first, X[:, 18], self._par, y, out, positions)

    def residual_numpy(self, W, first, h):
        a, rho, k, c, m0 = self.alpha, self.rho, self.rho / self.l, self.c, self.m0
        unit = self.spec.max_drive_torque  # the drive variable is d / max_drive_torque
        phip, dp, wp = W[:, 0, 3], unit * W[:, 0, 4], W[:, 0, 5]
        th, x, y, phi, d, w = (W[:, 1, i] for i in range(6))
        d = unit * d
        thn, xn, yn, phin = (W[:, 2, i] for i in range(4))
        sp_, s, sn = np.tan(phip), np.tan(phi), np.tan(phin)
        ds_p, ds, ds_n = 1 + sp_ * sp_, 1 + s * s, 1 + sn * sn
        sm = (1 - a) * s + a * sn
        smp = np.where(first, s, (1 - a) * sp_ + a * s)
        dsmp_ds = np.where(first, 1.0, a)
        dsmp_dsp = np.where(first, 0.0, 1 - a)
        K = len(W)
        r = np.empty((K, 4))
        J = np.zeros((K, 4, 3, 6))
        dh = np.empty((K, 4))
        Ia, Ib = m0 + c * s * sm, m0 + c * s * smp
        r[:, 0] = Ia * w - Ib * wp - h * ((1 - a) * d + a * dp)
        J[:, 0, 1, 3] = (c * (sm + s * (1 - a)) * w - c * (smp + s * dsmp_ds) * wp) * ds
        J[:, 0, 2, 3] = c * s * a * w * ds_n
        J[:, 0, 0, 3] = -c * s * dsmp_dsp * wp * ds_p
        J[:, 0, 1, 5], J[:, 0, 0, 5] = Ia, -Ib
        J[:, 0, 1, 4], J[:, 0, 0, 4] = -h * (1 - a) * unit, -h * a * unit
        dh[:, 0] = -((1 - a) * d + a * dp)
        om = h * k * sm * w
        r[:, 1] = thn - th - om
        J[:, 1, 2, 0], J[:, 1, 1, 0] = 1.0, -1.0
        dom = np.zeros((K, 3, 6))
        dom[:, 1, 3] = h * k * (1 - a) * w * ds
        dom[:, 2, 3] = h * k * a * w * ds_n
        dom[:, 1, 5] = h * k * sm
        dom_dh = k * sm * w
        J[:, 1] -= dom
        dh[:, 1] = -dom_dh
        dv = np.zeros((K, 3, 6))
        dv[:, 1, 5] = h * rho
        arc_rows(r, J, dh, (th, x, y, xn, yn), (om, dom, dom_dh), (h * rho * w, dv, rho * w))
        return r, J, dh

    residual_pattern = _row_pattern()
    hessian_slots = _SLOTS
    hessian_slot_pattern = _slot_pattern()

    def residual_hessian(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """sum_i y[:, i] d2 r_i over the window then h (K, 19, 19)."""
        out = np.zeros((len(W), 19, 19))
        out[:, _SLOTS[:, None], _SLOTS] = self.residual_hessian_slots(W, first, h, y)
        return out

    def residual_hessian_slots(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The same over hessian_slots only (K, 9, 9; zero elsewhere): in C (native/car_step.c) when the kernels are
        built, else residual_hessian_numpy's, its twin and reference."""
        if _native.LIB is None:
            return self._hessian_numpy(W, first, h, y)
        return _native.hessian(W, first, h, self._par, y)

    def residual_hessian_numpy(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """residual_hessian in numpy (K, 19, 19): the C kernel's twin and reference (_hessian_numpy)."""
        out = np.zeros((len(W), 19, 19))
        out[:, _SLOTS[:, None], _SLOTS] = self._hessian_numpy(W, first, h, y)
        return out

    def _hessian_numpy(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """sum_i y[:, i] d2 r_i over the window (stages k-1, k, k+1 flattened, then h), exact, in closed form over
        the slots that enter nonlinearly (hessian_slots; numbered SP..HH below): (K, 9, 9). The rows are written
        over sigma = tan phi (sp, s, sn of the three stages), the turn om = h (rho / l) sm u and the arc length
        v = h rho u: r0 is a sum of products of affine functions of them; the arc rows are -v G(theta, om) with
        G = P A(om) + Q B(om), P = y2 cos theta + y3 sin theta, Q = y3 cos theta - y2 sin theta (G_thth = -G).
        Second derivatives over (theta, om, v) go through their Jacobian (Gauss-Newton part) plus the
        curvature of om and v; then the chain rule to phi adds dL/dsigma * sigma'' (sigma' = 1 + sigma^2)."""
        a, rho, k, c, m0 = self.alpha, self.rho, self.rho / self.l, self.c, self.m0
        unit = self.spec.max_drive_torque
        SP, DP, WP, TH, S, D, U, SN, HH = range(9)
        X = np.concatenate([W.reshape(len(W), 18), h[:, None]], axis=1)[:, _SLOTS]
        phip, th, phi, u, phin, hh = X[:, SP], X[:, TH], X[:, S], X[:, U], X[:, SN], X[:, HH]
        wp = X[:, WP]
        sp_, s, sn = np.tan(phip), np.tan(phi), np.tan(phin)
        sm = (1 - a) * s + a * sn
        smp_s = np.where(first, 1.0, a)  # d smp / d s and d smp / d sp
        smp_sp = np.where(first, 0.0, 1 - a)
        smp = np.where(first, s, (1 - a) * sp_ + a * s)
        y0, y1 = y[:, 0], y[:, 1]
        K = len(X)
        H = np.zeros((K, 9, 9))

        def add(i: int, j: int, value: np.ndarray) -> None:
            H[:, i, j] += value
            if i != j:
                H[:, j, i] += value

        # momentum row r0 = (m0 + c s sm) u - (m0 + c s smp) u_prev - unit h ((1 - a) d + a d_prev)
        add(S, S, y0 * 2 * c * ((1 - a) * u - smp_s * wp))
        add(S, SN, y0 * c * a * u)
        add(S, SP, -y0 * c * smp_sp * wp)
        add(S, U, y0 * c * (sm + (1 - a) * s))
        add(S, WP, -y0 * c * (smp + s * smp_s))
        add(SN, U, y0 * c * a * s)
        add(SP, WP, -y0 * c * s * smp_sp)
        add(D, HH, -y0 * unit * (1 - a))
        add(DP, HH, -y0 * unit * a)
        # turn om (enters r1 as -om and the arc rows) and arc length v
        om = k * hh * sm * u
        om_z = np.zeros((K, 9))
        om_z[:, S], om_z[:, SN], om_z[:, U], om_z[:, HH] = k * hh * (1 - a) * u, k * hh * a * u, k * hh * sm, k * sm * u
        v = rho * hh * u
        A, B, dA, dB = arc(om)
        d2A, d2B = arc_curvature(om)
        ct, st = np.cos(th), np.sin(th)
        P, Q = y[:, 2] * ct + y[:, 3] * st, y[:, 3] * ct - y[:, 2] * st
        G, G_th, G_om = P * A + Q * B, Q * A - P * B, P * dA + Q * dB
        outer = np.zeros((K, 3, 3))  # second derivatives of -v G over (theta, om, v)
        outer[:, 0, 0] = v * G
        outer[:, 0, 1] = outer[:, 1, 0] = -v * (Q * dA - P * dB)
        outer[:, 1, 1] = -v * (P * d2A + Q * d2B)
        outer[:, 0, 2] = outer[:, 2, 0] = -G_th
        outer[:, 1, 2] = outer[:, 2, 1] = -G_om
        inner = np.zeros((K, 3, 9))  # d(theta, om, v) / d slots
        inner[:, 0, TH] = 1.0
        inner[:, 1] = om_z
        inner[:, 2, U], inner[:, 2, HH] = rho * hh, rho * u
        H += np.swapaxes(inner, 1, 2) @ outer @ inner
        om_weight = -y1 - v * G_om  # dL/d om: -y1 from r1, -v G_om from the arc rows
        add(S, U, om_weight * k * hh * (1 - a))
        add(S, HH, om_weight * k * (1 - a) * u)
        add(SN, U, om_weight * k * hh * a)
        add(SN, HH, om_weight * k * a * u)
        add(U, HH, om_weight * k * sm - G * rho)  # and d2 v / du dh = rho times dL/dv = -G
        # chain rule sigma = tan phi: dL/dsigma of each stage's sigma times sigma''
        L_s = y0 * c * ((sm + (1 - a) * s) * u - (smp + s * smp_s) * wp) + om_weight * om_z[:, S]
        L_sn = y0 * c * a * s * u + om_weight * om_z[:, SN]
        L_sp = -y0 * c * s * smp_sp * wp
        slope = np.ones((K, 9))
        slope[:, SP], slope[:, S], slope[:, SN] = 1 + sp_ * sp_, 1 + s * s, 1 + sn * sn
        H *= slope[:, :, None] * slope[:, None, :]
        H[:, SP, SP] += L_sp * 2 * sp_ * slope[:, SP]
        H[:, S, S] += L_s * 2 * s * slope[:, S]
        H[:, SN, SN] += L_sn * 2 * sn * slope[:, SN]
        return H

    def pre_start(self):
        return np.array([self.theta0, 0.0, 0.0, 0.0, 0.0, self.speed0 / self.rho])

    def start(self):
        p = self.vehicle.position
        return np.array([self.theta0, p[0] - self.b * np.cos(self.theta0), p[1] - self.b * np.sin(self.theta0),
                         np.nan])

    def bounds(self):
        s = self.spec
        lo = np.array([-np.inf, -np.inf, -np.inf, -s.max_steer, -1.0, -np.inf])
        return lo, -lo

    def body_point(self, S, offset):
        """(x + c ox - s oy, y + s ox + c oy, com height + oz) and its Jacobian over (th, x, y, phi), c, s = cos th,
        sin th: in the plane as the 2-vectors (c, s) ox and (-s, c) oy (each a - b written a + (-b), exactly the same
        number), a few numpy calls for any K (a key is one instance)."""
        K = len(S)
        ox, oy = self.b + offset[0], offset[1]
        cs = _cos_sin(S[:, 0])
        along, across = cs * ox, cs * oy  # (c ox, s ox), (c oy, s oy)
        p = np.empty((K, 3))
        planar = p.T[:2]
        np.add(S[:, 1:3].T, along, out=planar)
        planar += across[::-1] * _PERP  # + (-s oy, c oy)
        p[:, 2] = self.spec.com_height + offset[2]
        J = np.zeros((K, 3, 4))
        J[:, 0, 1] = J[:, 1, 2] = 1.0
        turning = J[:, :2, 0].T
        np.multiply(along[::-1], _PERP, out=turning)  # (-s ox, c ox)
        turning -= across  # - (c oy, s oy)
        return p, J

    def body_point_hessian(self, S, offset):
        return planar_point_hessian(S, self.b + offset[0], offset[1])

    def body_plane(self, offset) -> tuple[float, float] | None:
        """(ox, oy) with body_point(S, offset)[:, :2] = (x + cos th ox - sin th oy, y + sin th ox + cos th oy),
        (th, x, y) = S[:, :3] (the C clearance rows, transcription._planar_clearance); None for a subclass with
        its own body_point."""
        if type(self).body_point is not CarDynamics.body_point:
            return None
        return self.b + float(offset[0]), float(offset[1])

    def heading(self, S):
        J = np.zeros((len(S), 4))
        J[:, 0] = 1.0
        return S[:, 0].copy(), J

    def velocity(self, V):
        out = np.zeros((len(V), 3))
        np.multiply(V[:, 1], self.rho, out=out[:, 0])
        J = np.zeros((len(V), 3, 2))
        J[:, 0, 1] = self.rho
        return out, J

    def guess(self, positions, headings, h):
        N = len(positions) - 1
        st = np.zeros((N + 2, 6))
        st[0] = CarDynamics.pre_start(self)
        th = headings
        st[1:, 0] = th
        st[1:, 1] = positions[:, 0] - self.b * np.cos(th)
        st[1:, 2] = positions[:, 1] - self.b * np.sin(th)
        dxy = np.diff(st[1:, 1:3], axis=0)
        ds = dxy[:, 0] * np.cos(th[:-1]) + dxy[:, 1] * np.sin(th[:-1])
        st[1:N + 1, 5] = ds / (h * self.rho)
        curv = np.diff(th) / np.where(np.abs(ds) > 1e-6, ds, 1e-6)
        steer = np.clip(np.arctan(self.l * curv), -0.9 * self.spec.max_steer, 0.9 * self.spec.max_steer)
        st[1:N + 1, 3] = steer
        st[N + 1, 3] = steer[-1]
        return st

    def replay(self, stages, h, controls):
        vehicle = replace(self.vehicle, controls=controls)
        mech = replace(self.mechanism, vehicle=vehicle)
        return simulate(mech, h, len(stages) - 2, "vehicle", tol=1e-13)

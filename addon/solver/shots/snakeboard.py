"""The snakeboard's discrete equations (vehicles/snakeboard.py, seed 001 §5.2.2) as shot constraints.

Owns the snakeboard's StageDynamics. Node state (theta, x, y, psi, phi): board pose, rider's rotor angle
and foot angle (the keyed shape, here the controls); segment variable Omega_k. With e(phi) = (sin phi,
l cos phi, 0), G(a, b) = e(a)^T M e(b) = K sin a sin b + m l^2 cos a cos b, pm_k = (phi_k + phi_{k+1}) / 2
(alpha = 1/2) and u_k = (psi_{k+1} - psi_k) / h, step k is exactly snakeboard.step:

    Omega_k G(phi_k, pm_k) + I sin(phi_k) u_k - [Omega_{k-1} G(phi_k, pm_{k-1}) + I sin(phi_k) u_{k-1}] = 0
    theta_{k+1} - theta_k - w = 0,  (x, y)_{k+1} - (x, y)_k - Rot(theta_k) v (sin w / w, (1 - cos w) / w) = 0
    w = h Omega_k sin pm_k,  v = h Omega_k l cos pm_k

At k = 0 the bracket is the start momentum e(phi_0)^T mu(0), mu(0) = M speed (tan phi_0 / l, 1, 0) +
(I u_0, 0, 0) (the rotor curve's rate at t = 0 is u_0 for keys linear in time). The Jacobian is written out;
the exact second derivatives come from the same equations over jets (jets.py).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..integrator import simulate
from ..vehicles.snakeboard import compile_snakeboard
from . import jets
from .car import arc_lagrangian, arc_rows, planar_point_hessian
from .transcription import Channel, StageDynamics


class SnakeboardDynamics(StageDynamics):
    state_names = ("theta", "x", "y", "rotor", "steer")
    segment_names = ("omega",)
    planar = True
    velocity_components = (0,)

    def __init__(self, mechanism):
        self.mechanism = mechanism
        self.vehicle = mechanism.vehicle
        self.model = compile_snakeboard(self.vehicle)
        s = self.spec = self.model.spec
        self.alpha = self.model.alpha
        self.channels = (Channel("rotor", "node", 3, 0.0, 1.0, effort=False),
                         Channel("steer", "node", 4, 0.0, s.max_steer, effort=False))
        from ..vehicles.integrator import _heading
        self.theta0 = _heading(self.vehicle.orientation)
        self.speed0 = float(self.vehicle.velocity[3])

    def _G(self, a, b):
        K, ml2 = self.spec.yaw_inertia, self.spec.mass * self.spec.half_length**2
        G = K * np.sin(a) * np.sin(b) + ml2 * np.cos(a) * np.cos(b)
        Ga = K * np.cos(a) * np.sin(b) - ml2 * np.sin(a) * np.cos(b)
        Gb = K * np.sin(a) * np.cos(b) - ml2 * np.cos(a) * np.sin(b)
        return G, Ga, Gb

    def residual(self, W, first, h):
        s, a = self.spec, self.alpha
        Ir, l = s.rotor_inertia, s.half_length
        K = len(W)
        psp, php, omp = W[:, 0, 3], W[:, 0, 4], W[:, 0, 5]
        th, x, y, ps, ph, om = (W[:, 1, i] for i in range(6))
        thn, xn, yn, psn, phn = (W[:, 2, i] for i in range(5))
        pm, pmp = (1 - a) * ph + a * phn, (1 - a) * php + a * ph
        u, up = (psn - ps) / h, (ps - psp) / h
        sph, cph = np.sin(ph), np.cos(ph)
        G, Ga, Gb = self._G(ph, pm)
        Gp, Gap, Gbp = self._G(ph, pmp)
        r = np.zeros((K, 4))
        J = np.zeros((K, 4, 3, 6))
        dh = np.zeros((K, 4))
        tan = np.tan(ph)
        start = self.speed0 * (s.yaw_inertia * sph * tan / l + s.mass * l * cph)
        dstart = self.speed0 * (s.yaw_inertia * (cph * tan + sph * (1 + tan * tan)) / l - s.mass * l * sph)
        rest = np.where(first, 0.0, 1.0)
        r[:, 0] = om * G + Ir * sph * u - np.where(first, start + Ir * sph * u, omp * Gp + Ir * sph * up)
        J[:, 0, 1, 5] = G
        J[:, 0, 0, 5] = -rest * Gp
        J[:, 0, 1, 4] = (om * (Ga + (1 - a) * Gb) + Ir * cph * u
                         - np.where(first, dstart + Ir * cph * u, omp * (Gap + a * Gbp) + Ir * cph * up))
        J[:, 0, 2, 4] = om * a * Gb
        J[:, 0, 0, 4] = -rest * omp * (1 - a) * Gbp
        J[:, 0, 2, 3] = rest * Ir * sph / h
        J[:, 0, 1, 3] = -rest * 2 * Ir * sph / h
        J[:, 0, 0, 3] = rest * Ir * sph / h
        dh[:, 0] = rest * (-Ir * sph * u / h + Ir * sph * up / h)
        spm, cpm = np.sin(pm), np.cos(pm)
        w, v = h * om * spm, h * om * l * cpm
        dw, dv = np.zeros((K, 3, 6)), np.zeros((K, 3, 6))
        dw[:, 1, 5], dv[:, 1, 5] = h * spm, h * l * cpm
        dw[:, 1, 4], dw[:, 2, 4] = h * om * cpm * (1 - a), h * om * cpm * a
        dv[:, 1, 4], dv[:, 2, 4] = -h * om * l * spm * (1 - a), -h * om * l * spm * a
        dw_dh, dv_dh = om * spm, om * l * cpm
        r[:, 1] = thn - th - w
        J[:, 1, 2, 0], J[:, 1, 1, 0] = 1.0, -1.0
        J[:, 1] -= dw
        dh[:, 1] = -dw_dh
        arc_rows(r, J, dh, (th, x, y, xn, yn), (w, dw, dw_dh), (v, dv, dv_dh))
        return r, J, dh

    def residual_hessian(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """sum_i y[:, i] d2 r_i over the window (3 x 6 flattened, then h): (K, 19, 19), exact: the equations of
        `residual` over second-order jets (the arc rows through car.arc_lagrangian)."""
        s, a = self.spec, self.alpha
        Ir, l = s.rotor_inertia, s.half_length
        K = len(W)
        var = jets.Jet.variables(np.concatenate([W.reshape(K, 18), h[:, None]], 1))
        (psp, php, omp), (th, ps, ph, om), (psn, phn), hh = var[3:6], (var[6], *var[9:12]), var[15:17], var[18]
        K_yaw, ml2 = s.yaw_inertia, s.mass * l * l
        sph, cph = jets.sin(ph), jets.cos(ph)

        def G(b: jets.Jet) -> jets.Jet:  # G(phi_k, b)
            return K_yaw * sph * jets.sin(b) + ml2 * cph * jets.cos(b)
        pm, pmp = (1 - a) * ph + a * phn, (1 - a) * php + a * ph
        inv_h = hh.reciprocal()
        start = self.speed0 * ((K_yaw / l) * sph * jets.tan(ph) + (s.mass * l) * cph)
        rest = om * G(pm) + Ir * sph * ((psn - 2 * ps + psp) * inv_h) - omp * G(pmp)
        momentum = jets.where(first, om * G(pm) - start, rest)
        turn = hh * om * jets.sin(pm)
        arc = arc_lagrangian(th, turn, l * (hh * om * jets.cos(pm)), y[:, 2:4])
        return jets.weighted_hessian([momentum, -turn, arc], np.column_stack([y[:, :2], np.ones(K)]))

    def pre_start(self):
        return np.array([self.theta0, 0.0, 0.0, 0.0, 0.0, 0.0])

    def start(self):
        p = self.vehicle.position
        return np.array([self.theta0, p[0], p[1], np.nan, np.nan])

    def bounds(self):
        m = self.spec.max_steer
        return (np.array([-np.inf, -np.inf, -np.inf, -np.inf, -m, -np.inf]),
                np.array([np.inf, np.inf, np.inf, np.inf, m, np.inf]))

    def body_point(self, S, offset):
        th = S[:, 0]
        c, s = np.cos(th), np.sin(th)
        p = np.stack([S[:, 1] + c * offset[0] - s * offset[1], S[:, 2] + s * offset[0] + c * offset[1],
                      np.full(len(S), offset[2])], 1)
        J = np.zeros((len(S), 3, 5))
        J[:, 0, 1] = J[:, 1, 2] = 1.0
        J[:, 0, 0] = -s * offset[0] - c * offset[1]
        J[:, 1, 0] = c * offset[0] - s * offset[1]
        return p, J

    def body_point_hessian(self, S, offset):
        return planar_point_hessian(S, offset[0], offset[1])

    def heading(self, S):
        J = np.zeros((len(S), 5))
        J[:, 0] = 1.0
        return S[:, 0].copy(), J

    def velocity(self, V):
        """Only zero velocity is meaningful here: Omega (forward speed l cos(phi) Omega vanishes with it)."""
        out = np.zeros((len(V), 3))
        out[:, 0] = self.spec.half_length * V[:, 0]
        J = np.zeros((len(V), 3, 1))
        J[:, 0, 0] = self.spec.half_length
        return out, J

    def guess(self, positions, headings, h):
        """The key path, with a rider's gait (rotor and feet swinging at 0.5 Hz) to start from."""
        N = len(positions) - 1
        t = np.arange(N + 1) * h
        st = np.zeros((N + 2, 6))
        st[0] = self.pre_start()
        st[1:, 0], st[1:, 1:3] = headings, positions[:, :2]
        st[1:, 3] = 0.6 * np.sin(np.pi * t)
        st[1:, 4] = 0.5 * self.spec.max_steer * np.sin(np.pi * t)
        d = np.diff(positions[:, :2], axis=0)
        ds = d[:, 0] * np.cos(headings[:-1]) + d[:, 1] * np.sin(headings[:-1])
        st[1:N + 1, 5] = ds / (h * self.spec.half_length)
        return st

    def replay(self, stages, h, controls):
        vehicle = replace(self.vehicle, controls=controls)
        return simulate(replace(self.mechanism, vehicle=vehicle), h, len(stages) - 2, "vehicle", tol=1e-13)

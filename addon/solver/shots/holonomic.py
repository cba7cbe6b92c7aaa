"""Holonomic vehicles (helicopter, boat, hovercraft) on SE(3) as shot constraints with exact first and second
derivatives.

Owns the StageDynamics of vehicles/holonomic.py's step (seed 001 eqs. 9-10, tau = cay, exact C_cay).
Node state (x (3), q (4)): position and attitude quaternion of g_k; segment variables (u (nc), xi (6)):
the controls at t_k and the body twist xi_k = (w, v) on [t_k, t_{k+1}]. Residuals of step k:

    x_{k+1} - x_k - R(q_k) P(h w_k) h v_k = 0,        P(a) = (I - hat(a)/2)^-1   (se3_cay's translation)
    q_{k+1} - q_k (x) c(h w_k) = 0,                   c(a) = (2, a) / sqrt(4 + |a|^2)  (so3_cay as a quaternion)
    C(h xi_k)^T I xi_k - mu_k^- - w_k f(g_k, node twist, u_k) = 0

mu_k^- = C(-h xi_{k-1})^T I xi_{k-1} (I xi(0) at the start, with weight h/2 and node twist xi(0); else weight
h and node twist (xi_{k-1} + xi_k)/2), exactly vehicles/holonomic.residual. R(q) is the quadratic form
(w^2 - |v|^2) I + 2 v v^T + 2 w hat(v), a rotation on the unit sphere the equations keep q on.

The wrench is the vehicle's own: helicopter F(gamma) u (helicopter.control_matrix) plus gravity, both with
analytic derivatives; boat and hovercraft: their compiled model with zero controls (hydrostatics,
cushion, drag, gravity; its exact d/dxi) plus the constant thrust matrix B u read off the same model
(exact: the thrust is linear), with the pose derivative of the buoyancy columns or cushion corners
differentiated here from the vehicle modules' formulas (checked against differences in the tests).

Second derivatives (residual_hessian): the Lagrangian y . r written over second-order jets (jets.py) as a sum
of terms each over its own few variables; the boat's columns and the hovercraft's corners enter through
moments of their immersed lengths and compressions (functions of the pose alone), so the per-column work
stays small.

The rows, Jacobian and Hessian run in C when the kernels are built (native/holonomic_step.c, the same
equations over jets per stage); the numpy code here (`residual_numpy`, `residual_hessian_numpy`) is its
twin: the fallback and the tests' reference.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import groups
from ..integrator import simulate
from ..native import holonomic_binding
from ..lie import hat
from ..vehicles import forces
from ..vehicles.boat import Hull, compile_boat
from ..vehicles.hovercraft import compile_hovercraft, skirt_corners
from ..vehicles.rigid_body import locked_inertia
from ..vehicles.spec import VehicleStepError
from . import jets
from .transcription import Channel, StageDynamics


def _rotation_direct(q: np.ndarray) -> np.ndarray:
    w, v = q[:, 0], q[:, 1:]
    return ((w * w - np.sum(v * v, 1))[:, None, None] * np.eye(3) + 2 * v[:, :, None] * v[:, None, :]
            + 2 * w[:, None, None] * hat(v))


def _quadratic_form() -> np.ndarray:
    """T (3, 3, 4, 4) symmetric in its last two axes with R(q)_ij = T_ijab q_a q_b (by polarisation)."""
    E = np.eye(4)
    T = np.empty((3, 3, 4, 4))
    for a in range(4):
        for b in range(4):
            T[:, :, a, b] = 0.5 * (_rotation_direct((E[a] + E[b])[None])[0] - _rotation_direct(E[a][None])[0]
                                   - _rotation_direct(E[b][None])[0]) if a != b else _rotation_direct(E[a][None])[0]
    return T


_T = _quadratic_form()


def rotation(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R(q) (K, 3, 3) = (w^2 - |v|^2) I + 2 v v^T + 2 w hat(v) (a quadratic form in q) and dR/dq (K, 3, 3, 4)."""
    dR = 2 * np.einsum("ijab,kb->kija", _T, q)
    return 0.5 * np.einsum("kija,ka->kij", dR, q), dR


def left(q: np.ndarray) -> np.ndarray:
    """L(q) (K, 4, 4) with q (x) p = L(q) p."""
    w, x, y, z = q.T
    return np.stack([np.stack([w, -x, -y, -z], -1), np.stack([x, w, -z, y], -1),
                     np.stack([y, z, w, -x], -1), np.stack([z, -y, x, w], -1)], 1)


def right(p: np.ndarray) -> np.ndarray:
    """R(p) (K, 4, 4) with q (x) p = R(p) q."""
    w, x, y, z = p.T
    return np.stack([np.stack([w, -x, -y, -z], -1), np.stack([x, w, z, -y], -1),
                     np.stack([y, -z, w, x], -1), np.stack([z, y, -x, w], -1)], 1)


def cay_quaternion(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """c(a) = (2, a) / sqrt(4 + |a|^2) (K, 4), the quaternion of so3_cay(a), and dc/da (K, 4, 3)."""
    n = np.sqrt(4 + np.sum(a * a, 1))
    c = np.concatenate([2 * np.ones((len(a), 1)), a], 1) / n[:, None]
    dc = np.empty((len(a), 4, 3))
    dc[:, 0] = -2 * a / n[:, None] ** 3
    dc[:, 1:] = np.eye(3) / n[:, None, None] - a[:, :, None] * a[:, None, :] / n[:, None, None] ** 3
    return c, dc


def cay_translation(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P(a) b (K, 3), d/da = -P hat(P b) / 2 and P itself (K, 3, 3), P = (I - hat(a)/2)^-1."""
    d = 4 + np.sum(a * a, 1)
    P = (4 * np.eye(3) + 2 * hat(a) + a[:, :, None] * a[:, None, :]) / d[:, None, None]
    Pb = np.einsum("kij,kj->ki", P, b)
    return Pb, -0.5 * P @ hat(Pb), P


def _rotate(q: list, z, transpose: bool = False) -> list:
    """R(q) z (or R(q)^T z) over jets of q: (w^2 - |v|^2) z + 2 v (v . z) +- 2 w v x z."""
    w, v = q[0], q[1:]
    scale, vz, vxz = w * w - jets.dot(v, v), jets.dot(v, z), jets.cross(v, z)
    sign = -2.0 if transpose else 2.0
    return [scale * z[i] + 2 * v[i] * vz + sign * w * vxz[i] for i in range(3)]


def _transport(e: list, mu: list) -> list:
    """C_cay(e)^T mu over jets (groups.se3_dcay_inv_T): with nu = mu_v + w x mu_v / 2,
    (mu_w + w x mu_w / 2 + w (w . mu_w) / 4 + v x nu / 2, nu)."""
    w, v, mw, mv = e[:3], e[3:], mu[:3], mu[3:]
    wxmv, wxmw = jets.cross(w, mv), jets.cross(w, mw)
    nu = [mv[i] + 0.5 * wxmv[i] for i in range(3)]
    wmw = jets.dot(w, mw)
    vxnu = jets.cross(v, nu)
    return [mw[i] + 0.5 * wxmw[i] + 0.25 * w[i] * wmw + 0.5 * vxnu[i] for i in range(3)] + nu


class HolonomicDynamics(StageDynamics):
    state_names = ("x", "y", "z", "qw", "qx", "qy", "qz")
    planar = False
    velocity_components = (0, 1, 2)

    def __init__(self, mechanism):
        self.mechanism = mechanism
        self.vehicle = vehicle = mechanism.vehicle
        spec = vehicle.spec
        self.spec = spec
        self.gravity = np.asarray(mechanism.gravity, float)
        self.inertia = locked_inertia(spec.mass, spec.inertia)
        self.xi0 = np.asarray(vehicle.velocity, float)
        if vehicle.type == "helicopter":
            weight = spec.mass * float(np.linalg.norm(self.gravity))
            self.channels = (
                Channel("collective", "segment", 0, 0.0, spec.max_collective, trim=weight, unit=weight),
                Channel("tail", "segment", 1, 0.0, spec.max_tail_force, unit=spec.max_tail_force),
                Channel("blade_pitch", "segment", 2, 0.0, spec.max_blade_tilt, unit=spec.max_blade_tilt),
                Channel("blade_roll", "segment", 3, 0.0, spec.max_blade_tilt, unit=spec.max_blade_tilt))
            self.limits = [(0.0, spec.max_collective), (-spec.max_tail_force, spec.max_tail_force),
                           (-spec.max_blade_tilt, spec.max_blade_tilt), (-spec.max_blade_tilt, spec.max_blade_tilt)]
            self.base, _ = forces.gravity(spec.mass, self.gravity)
            self.base_pose_exact = True
        else:
            compile_fn = compile_boat if vehicle.type == "boat" else compile_hovercraft
            self.channels = (Channel("thrust_right", "segment", 0, 0.0, spec.max_thrust, unit=spec.max_thrust),
                             Channel("thrust_left", "segment", 1, 0.0, spec.max_thrust, unit=spec.max_thrust))
            self.limits = [(-spec.max_thrust, spec.max_thrust)] * 2
            idle = compile_fn(replace(vehicle, controls=(("thrust_right", 0.0), ("thrust_left", 0.0))), self.gravity)
            self.base = idle.wrench
            self.base_pose_exact = False
            self.hull = Hull.of(spec) if vehicle.type == "boat" else None
            g0, xi = np.eye(4)[None], np.zeros((1, 6))
            f0 = idle.wrench(0.0, g0, xi)[0][0]
            cols = []
            for name in ("thrust_right", "thrust_left"):
                model = compile_fn(replace(vehicle, controls=((name, 1.0),)), self.gravity)
                cols.append(model.wrench(0.0, g0, xi)[0][0] - f0)
            self.thrust = np.stack(cols, 1)
        self.nc = len(self.channels)
        self.segment_names = tuple(c.name for c in self.channels) + ("wx", "wy", "wz", "vx", "vy", "vz")
        self.kernel = self._kernel()

    def _kernel(self) -> holonomic_binding.HolonomicKernel | None:
        """The C twin of `residual_numpy` and `residual_hessian_numpy` (native/holonomic_step.c) when the
        kernels are built; None: numpy."""
        kind = self.vehicle.type
        if holonomic_binding.LIB is None or kind not in holonomic_binding.KINDS:
            return None
        s = self.spec
        common = (kind, self.inertia, self._units(), s.mass, self.gravity)
        if kind == "helicopter":
            return holonomic_binding.HolonomicKernel(*common, rotor_height=s.rotor_height, tail_arm=s.tail_arm)
        if kind == "hovercraft":
            return holonomic_binding.HolonomicKernel(
                *common, thrust=self.thrust, corners=skirt_corners(s), cushion_height=s.cushion_height,
                cushion_stiffness=s.cushion_stiffness, cushion_damping=s.cushion_damping,
                skirt_drag=(0.0, 0.0, s.yaw_drag, *s.drag, 0.0))
        hull = self.hull
        return holonomic_binding.HolonomicKernel(*common, col_xy=hull.xy, keel=hull.keel, hull_height=hull.height,
                                                 hull_area=hull.area, water_density=s.water_density, drag=s.drag,
                                                 current=self.vehicle.current, thrust=self.thrust)

    # -- the wrench ------------------------------------------------------------------------------
    def _g(self, x, q):
        R, _ = rotation(q)
        g = np.zeros((len(x), 4, 4))
        g[:, :3, :3], g[:, :3, 3], g[:, 3, 3] = R, x, 1.0
        return g

    def wrench(self, x, q, xi, u):
        """f (K, 6), df/dxi (K, 6, 6), df/d(x, q) (K, 6, 7), df/du (K, 6, nc); u in physical units."""
        K = len(x)
        try:
            f, dxi = self.base(0.0, self._g(x, q), xi)
        except VehicleStepError:  # outside the model's range (a capsized hull): no value, the line search backs off
            nan = np.full((K, 6), np.nan)
            return nan, np.full((K, 6, 6), np.nan), np.full((K, 6, 7), np.nan), np.full((K, 6, self.nc), np.nan)
        f = np.array(f, dtype=float)
        dxi = np.zeros((K, 6, 6)) if dxi is None else np.array(dxi, dtype=float)
        dpose = np.zeros((K, 6, 7))
        if self.base_pose_exact:  # gravity only: force R^T (m g), no torque about the centre of mass
            _, dR = rotation(q)
            dpose[:, 3:, 3:] = np.einsum("kjia,j->kia", dR, self.spec.mass * self.gravity)
        elif self.vehicle.type == "boat":
            dpose = self._boat_pose_derivative(x, q, xi)
        else:
            dpose = self._hovercraft_pose_derivative(x, q, xi)
        if self.vehicle.type == "helicopter":
            pitch, roll = u[:, 2], u[:, 3]
            sp, cp, sr, cr = np.sin(pitch), np.cos(pitch), np.sin(roll), np.cos(roll)
            dt_, uc = self.spec.rotor_height, u[:, 0]
            F = np.zeros((K, 6, 2))  # helicopter.control_matrix, vectorised (checked against it in the tests)
            F[:, :, 0] = np.stack([dt_ * sr, dt_ * sp * cr, 0 * sp, sp * cr, -sr, cp * cr], 1)
            F[:, 2, 1], F[:, 4, 1] = self.spec.tail_arm, -1.0
            f = f + np.einsum("kij,kj->ki", F, u[:, :2])
            du = np.zeros((K, 6, 4))
            du[:, :, :2] = F
            # d (F[:, 0] u_c) / d pitch and / d roll (tail column does not tilt)
            du[:, :, 2] = uc[:, None] * np.stack([0 * sp, dt_ * cp * cr, 0 * sp, cp * cr, 0 * sp, -sp * cr], 1)
            du[:, :, 3] = uc[:, None] * np.stack([dt_ * cr, -dt_ * sp * sr, 0 * sp, -sp * sr, -cr, -cp * sr], 1)
        else:
            f = f + u @ self.thrust.T
            du = np.broadcast_to(self.thrust, (K, 6, 2)).copy()
        return f, dxi, dpose, du

    def _boat_pose_derivative(self, x, q, xi):
        """d(boat water wrench + gravity)/d(x, q) (K, 6, 7), differentiating vehicles/boat.py's column model:
        immersed length l_i = clip(-(x_z + up_x X_i + up_y Y_i) / up_z - keel, 0, height), up = R^T e_z,
        buoyancy rho g A l_i up, drag -(A l_i / V_ref) D (v + w x c_i - R^T eta), centroid (X_i, Y_i, keel + l_i/2)."""
        s, hull = self.spec, self.hull
        K = len(x)
        R, dR = rotation(q)
        up, dup = R[:, 2, :], np.zeros((K, 3, 7))
        dup[:, :, 3:] = dR[:, 2]
        X, Y = hull.xy[:, 0], hull.xy[:, 1]
        base = x[:, None, 2] + up[:, None, 0] * X + up[:, None, 1] * Y
        wl = -base / up[:, None, 2]
        length = np.clip(wl - hull.keel, 0.0, hull.height)
        active = ((wl - hull.keel) > 0) & ((wl - hull.keel) < hull.height)
        dbase = X[None, :, None] * dup[:, None, 0] + Y[None, :, None] * dup[:, None, 1]
        dbase[:, :, 2] += 1.0
        dwl = -dbase / up[:, None, 2, None] + (base / up[:, 2, None] ** 2)[:, :, None] * dup[:, None, 2]
        dlen = active[:, :, None] * dwl  # (K, n, 7)
        c = np.concatenate([np.broadcast_to(hull.xy, length.shape + (2,)), (hull.keel + 0.5 * length)[..., None]], -1)
        dc = np.zeros(dlen.shape[:2] + (3, 7))
        dc[:, :, 2] = 0.5 * dlen
        rho, g = s.water_density, float(np.linalg.norm(self.gravity))
        A, v_ref, D = hull.area, s.mass / s.water_density, np.diag(s.drag)
        V, dV = A * length, A * dlen
        buoy = rho * g * V[..., None] * up[:, None, :]
        dbuoy = rho * g * (dV[:, :, None, :] * up[:, None, :, None] + V[:, :, None, None] * dup[:, None])
        eta = np.asarray(self.vehicle.current, float)
        flow = np.einsum("kji,j->ki", R, eta)
        dflow = np.einsum("kjia,j->kia", dR, eta)
        w = xi[:, None, :3]
        rel = xi[:, None, 3:] + np.cross(w, c) - flow[:, None, :]
        drel = np.cross(w[..., None, :], np.swapaxes(dc, -1, -2)).swapaxes(-1, -2)
        drel[..., 3:] -= dflow[:, None]
        share, dshare = V / v_ref, dV / v_ref
        drag = -share[..., None] * rel @ D
        ddrag = -(dshare[:, :, None, :] * (rel @ D)[..., None] + share[..., None, None] * np.einsum("ij,knja->knia", D, drel))
        force, dforce = buoy + drag, dbuoy + ddrag
        out = np.zeros((K, 6, 7))
        out[:, 3:] = dforce.sum(1)
        out[:, :3] = (np.cross(np.swapaxes(dc, -1, -2), force[:, :, None, :]).swapaxes(-1, -2)
                      + np.cross(c[:, :, None, :], np.swapaxes(dforce, -1, -2)).swapaxes(-1, -2)).sum(1)
        out[:, 3:, 3:] += np.einsum("kjia,j->kia", dR, s.mass * self.gravity)
        return out

    def _hovercraft_pose_derivative(self, x, q, xi):
        """d(cushion wrench + gravity)/d(x, q) (K, 6, 7), differentiating vehicles/hovercraft.py's corners:
        compression s_i = max(h0 - x_z - up . c_i, 0), lift (k s_i - c [s_i > 0] [c_i x up; up] . xi) up at c_i,
        up = R^T e_z (the skirt drag and the thrust do not depend on the pose)."""
        s = self.spec
        K = len(x)
        R, dR = rotation(q)
        up = R[:, 2, :]
        dup = np.zeros((K, 3, 7))
        dup[:, :, 3:] = dR[:, 2]
        corners = skirt_corners(s)
        k, c = s.cushion_stiffness / 4, s.cushion_damping / 4
        height = x[:, None, 2] + up @ corners.T
        comp = np.maximum(s.cushion_height - height, 0.0)
        active = (comp > 0).astype(float)
        dheight = np.einsum("nj,kja->kna", corners, dup)
        dheight[:, :, 2] += 1.0
        dcomp = -active[..., None] * dheight
        rows = np.concatenate([np.cross(corners[None], up[:, None, :]), np.broadcast_to(up[:, None, :], (K, 4, 3))], -1)
        drows = np.concatenate([np.cross(corners[None, :, :, None], dup[:, None], axis=2),
                                np.broadcast_to(dup[:, None], (K, 4, 3, 7))], 2)
        speed = np.einsum("knj,kj->kn", rows, xi)
        dspeed = np.einsum("knja,kj->kna", drows, xi)
        mag = k * comp - c * active * speed
        dmag = k * dcomp - c * active[..., None] * dspeed
        dforce = dmag[:, :, None, :] * up[:, None, :, None] + mag[:, :, None, None] * dup[:, None]
        out = np.zeros((K, 6, 7))
        out[:, 3:] = dforce.sum(1)
        out[:, :3] = np.cross(corners[None, :, :, None], dforce, axis=2).sum(1)
        out[:, 3:, 3:] += np.einsum("kjia,j->kia", dR, s.mass * self.gravity)
        return out

    # -- StageDynamics ---------------------------------------------------------------------------
    def _units(self):
        return np.array([c.unit for c in self.channels])

    def residual(self, W, first, h):
        if self.kernel is None:
            return self.residual_numpy(W, first, h)
        r, J, outside = self.kernel.residual(W, first, h)
        if outside:  # a capsized hull: no wrench, the line search backs off (as `wrench` does)
            r[:, 7:], J[:, 7:] = np.nan, np.nan
        K, nw = J.shape[0], 13 + self.nc
        return r, J[:, :, :-1].reshape(K, 13, 3, nw), J[:, :, -1].copy()

    def residual_hessian(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """sum_i y[:, i] d2 r_i over the window (3 x (13 + nc) flattened, then h), exact: in C when built
        (native/holonomic_step.c), else `residual_hessian_numpy`."""
        if self.kernel is None:
            return self.residual_hessian_numpy(W, first, h, y)
        H, outside = self.kernel.hessian(W, first, h, y)
        if outside:
            H[:] = np.nan
        return H

    def residual_numpy(self, W, first, h):
        """The step rows, their Jacobian over the window and d/dh in numpy (the C kernel's twin)."""
        K, nc, I = len(W), self.nc, self.inertia
        units = self._units()
        x, q = W[:, 1, :3], W[:, 1, 3:7]
        xn, qn = W[:, 2, :3], W[:, 2, 3:7]
        u = W[:, 1, 7:7 + nc] * units
        xi, xip = W[:, 1, 7 + nc:], W[:, 0, 7 + nc:]
        w, v = xi[:, :3], xi[:, 3:]
        ns = 7 + nc + 6
        r = np.zeros((K, 13))
        J = np.zeros((K, 13, 3, ns))
        dh = np.zeros((K, 13))
        iu, ixi = slice(7, 7 + nc), slice(7 + nc, ns)
        # position
        R, dR = rotation(q)
        Pb, dPb_da, P = cay_translation(h[:, None] * w, h[:, None] * v)
        r[:, :3] = xn - x - np.einsum("kij,kj->ki", R, Pb)
        J[:, :3, 2, :3] += np.eye(3)
        J[:, :3, 1, :3] -= np.eye(3)
        J[:, :3, 1, 3:7] = -np.einsum("kija,kj->kia", dR, Pb)
        RdPa = R @ dPb_da
        J[:, :3, 1, 7 + nc:10 + nc] = -h[:, None, None] * RdPa
        J[:, :3, 1, 10 + nc:] = -h[:, None, None] * (R @ P)
        dh[:, :3] = -(np.einsum("kij,kj->ki", RdPa, w) + np.einsum("kij,kj->ki", R @ P, v))
        # attitude
        c, dc = cay_quaternion(h[:, None] * w)
        L = left(q)
        r[:, 3:7] = qn - np.einsum("kij,kj->ki", L, c)
        J[:, 3:7, 2, 3:7] += np.eye(4)
        J[:, 3:7, 1, 3:7] = -right(c)
        Ldc = L @ dc
        J[:, 3:7, 1, 7 + nc:10 + nc] = -h[:, None, None] * Ldc
        dh[:, 3:7] = -np.einsum("kij,kj->ki", Ldc, w)
        # momentum balance (DEP)
        mu = xi @ I
        CT = np.swapaxes(groups.se3_dcay_inv(h[:, None] * xi), -1, -2)
        D = groups.se3_dcay_inv_T_dxi(h[:, None] * xi, mu)
        transported = np.einsum("kij,kj->ki", CT, mu)
        mup = xip @ I
        CTp = np.swapaxes(groups.se3_dcay_inv(-h[:, None] * xip), -1, -2)
        Dp = groups.se3_dcay_inv_T_dxi(-h[:, None] * xip, mup)
        left_mu = np.where(first[:, None], mup, np.einsum("kij,kj->ki", CTp, mup))
        d_left = np.where(first[:, None, None], I, CTp @ I - h[:, None, None] * Dp)
        dleft_dh = np.where(first[:, None], 0.0, -np.einsum("kij,kj->ki", Dp, xip))
        weight = np.where(first, 0.5 * h, h)
        node = np.where(first[:, None], xip, 0.5 * (xip + xi))
        f, df_dxi, df_dpose, df_du = self.wrench(x, q, node, u)
        r[:, 7:] = transported - left_mu - weight[:, None] * f
        J[:, 7:, 1, ixi] = CT @ I + h[:, None, None] * D - np.where(first, 0.0, 0.5 * weight)[:, None, None] * df_dxi
        J[:, 7:, 0, ixi] = -d_left - np.where(first, weight, 0.5 * weight)[:, None, None] * df_dxi
        J[:, 7:, 1, :7] = -weight[:, None, None] * df_dpose
        J[:, 7:, 1, iu] = -weight[:, None, None] * df_du * units
        dh[:, 7:] = (np.einsum("kij,kj->ki", D, xi) - dleft_dh - np.where(first, 0.5, 1.0)[:, None] * f)
        return r, J, dh

    # -- exact second derivatives (the equations of `residual` and `wrench` over second-order jets) ----------
    def residual_hessian_numpy(self, W: np.ndarray, first: np.ndarray, h: np.ndarray, y: np.ndarray) -> np.ndarray:
        """sum_i y[:, i] d2 r_i over the window (3 x (13 + nc) flattened, then h), exact: the Lagrangian
        y . r of `residual` written over jets of the window as a sum of terms each over its own few variables
        (node k+1 and the start momentum I xi_{k-1} enter linearly and drop out)."""
        K, nc = len(W), self.nc
        nw = 13 + nc
        var = jets.Jet.variables(np.concatenate([W.reshape(K, 3 * nw), h[:, None]], 1))
        prev, cur, hh = var[:nw], var[nw:2 * nw], var[-1]
        x, q, xi, xip = cur[:3], cur[3:7], cur[7 + nc:], prev[7 + nc:]
        u = [c * unit for c, unit in zip(cur[7:7 + nc], self._units())]
        a, b = [hh * c for c in xi[:3]], [hh * c for c in xi[3:]]
        # position rows: -y . R(q) P(a) b = -(R(q)^T y) . (4 b + 2 a x b + a (a . b)) / (4 + |a|^2)
        d = 4 + jets.dot(a, a)
        inv_d = d.reciprocal()
        ab, axb = jets.dot(a, b), jets.cross(a, b)
        Pb = [(4 * b[i] + 2 * axb[i] + a[i] * ab) * inv_d for i in range(3)]
        position = -jets.dot(_rotate(q, y[:, :3].T, transpose=True), Pb)
        # attitude rows: -y . q (x) c(a), c = (2, a) / sqrt(4 + |a|^2)
        r = jets.sqrt(d).reciprocal()
        cw, cv = 2 * r, [c * r for c in a]
        qv = q[1:]
        qvxcv = jets.cross(qv, cv)
        qc = [q[0] * cw - jets.dot(qv, cv)] + [q[0] * cv[i] + cw * qv[i] + qvxcv[i] for i in range(3)]
        attitude = -jets.dot(y[:, 3:7].T, qc)
        # momentum rows: C(h xi)^T I xi - mu^- - weight f(g_k, node twist, u), mu^- = I xi_{k-1} at k = 0
        ym = y[:, 7:].T
        transported = jets.dot(ym, _transport([hh * c for c in xi], self._momentum(xi)))
        back = jets.dot(ym, _transport([-hh * c for c in xip], self._momentum(xip))) * np.where(first, 0.0, -1.0)
        node = [jets.where(first, xip[i], 0.5 * (xip[i] + xi[i])) for i in range(6)]
        wrench = jets.dot(ym, self._wrench_jets(x, q, node, u)) * (hh * np.where(first, -0.5, -1.0))
        terms = [position, attitude, transported, back, wrench]
        return jets.weighted_hessian(terms, np.ones((K, len(terms))))

    def _momentum(self, xi: list) -> list:
        """I xi as jets (the locked inertia's zero entries skipped)."""
        I = self.inertia
        return [jets.dot([I[i, j] for j in range(6) if I[i, j]], [xi[j] for j in range(6) if I[i, j]])
                for i in range(6)]

    def _wrench_jets(self, x: list, q: list, xi: list, u: list) -> list:
        """The wrench of `wrench` (torque, force in body axes) as 6 jets of the pose, node twist and physical
        controls: gravity R^T m g plus the helicopter's rotor and tail, or the boat's columns or the
        hovercraft's cushion and skirt drag and the thrusters. Clipped quantities (immersed lengths,
        compressions) are piecewise smooth: their derivatives are those of the active piece, as in `wrench`."""
        s = self.spec
        force = _rotate(q, s.mass * self.gravity, transpose=True)
        torque: list = [0.0, 0.0, 0.0]
        if self.vehicle.type == "helicopter":
            sp, cp, sr, cr = jets.sin(u[2]), jets.cos(u[2]), jets.sin(u[3]), jets.cos(u[3])
            arm, uc = s.rotor_height, u[0]
            spcr = sp * cr * uc
            torque = [arm * sr * uc, arm * spcr, s.tail_arm * u[1]]
            force = [force[0] + spcr, force[1] - sr * uc - u[1], force[2] + cp * cr * uc]
            return torque + force
        up = _rotate(q, np.array([0.0, 0.0, 1.0]), transpose=True)  # world up in body axes
        if self.vehicle.type == "boat":
            torque_p, force_p = self._boat_water(x, q, xi, up)
        else:
            torque_p, force_p = self._hovercraft_cushion(x, xi, up)
            drag = np.array([0.0, 0.0, s.yaw_drag, *s.drag, 0.0])
            for i in np.flatnonzero(drag):
                a = np.abs(xi[i].value)
                skirt = xi[i].apply(a * xi[i].value, 2 * a, 2 * np.sign(xi[i].value))
                if i < 3:
                    torque[i] = torque[i] - drag[i] * skirt
                else:
                    force[i - 3] = force[i - 3] - drag[i] * skirt
        wrench = [c + p for c, p in zip(torque + force, torque_p + force_p)]
        return [wrench[i] + jets.dot(self.thrust[i], u) for i in range(6)]

    def _boat_water(self, x: list, q: list, xi: list, up: list) -> tuple[list, list]:
        """Torque and force of the hull's water (vehicles/boat.py's water()) as jets: column i has immersed
        length l_i = clip(-(x_z + up_x X_i + up_y Y_i) / up_z - keel, 0, height), centroid c_i = (X_i, Y_i,
        keel + l_i/2), force l_i a - s l_i D (w x c_i) with s = A / V_ref, a = rho g A up - s D (v - R^T eta).
        Summed over columns this needs only moments of the lengths (functions of the pose alone, over jets of
        K x columns instances): m = sum l_i, M = sum l_i c_i, S = sum l_i c_i c_i^T, and
        force = m a - s D (w x M), torque = M x a - s sum_kn S_kn e_k x D (w x e_n)."""
        sp, hull = self.spec, self.hull
        n = len(hull.xy)
        K = len(x[0].value)
        X, Y = np.tile(hull.xy[:, 0], K), np.tile(hull.xy[:, 1], K)
        up_c = [c.repeat(n) for c in up]
        raw = -(x[2].repeat(n) + up_c[0] * X + up_c[1] * Y) / up_c[2] - hull.keel
        active = ((raw.value > 0) & (raw.value < hull.height)).astype(float)
        l = raw.apply(np.clip(raw.value, 0.0, hull.height), active, np.zeros(len(active)))
        l2 = l * l
        m, mX, mY = l.group_sum(n), (l * X).group_sum(n), (l * Y).group_sum(n)
        half = [0.5 * (l2 * c).group_sum(n) for c in (1.0, X, Y)]  # sum l^2 (1, X, Y) / 2
        kz = hull.keel
        M = [mX, mY, kz * m + half[0]]
        Sxz, Syz = kz * mX + half[1], kz * mY + half[2]
        Szz = kz * kz * m + 2 * kz * half[0] + 0.25 * (l2 * l).group_sum(n)
        S = [[(l * (X * X)).group_sum(n), (l * (X * Y)).group_sum(n), Sxz],
             [None, (l * (Y * Y)).group_sum(n), Syz], [None, None, Szz]]
        share = hull.area * sp.water_density / sp.mass
        D = np.asarray(sp.drag, float)
        lift = hull.area * sp.water_density * float(np.linalg.norm(self.gravity))
        flow = _rotate(q, np.asarray(self.vehicle.current, float), transpose=True)
        w, v = xi[:3], xi[3:]
        acc = [lift * up[i] - (share * D[i]) * (v[i] - flow[i]) for i in range(3)]
        wxM = jets.cross(w, M)
        force = [m * acc[i] - (share * D[i]) * wxM[i] for i in range(3)]
        # sum_kn S_kn e_k x D (w x e_n) = G w, G_im = sum_kn S_kn (e_k x D (e_m x e_n))_i: pose-only jets
        E = np.eye(3)
        lever = np.array([[[np.cross(E[k], D * np.cross(E[m], E[j])) for m in range(3)] for j in range(3)]
                          for k in range(3)])  # (k, n, m, i)
        torque = jets.cross(M, acc)
        for i in range(3):
            for mm in range(3):
                pairs = [(lever[k, j, mm, i], S[min(k, j)][max(k, j)]) for k in range(3) for j in range(3)
                         if lever[k, j, mm, i]]
                if pairs:
                    torque[i] = torque[i] - w[mm] * (share * jets.dot(*zip(*pairs)))
        return torque, force

    def _hovercraft_cushion(self, x: list, xi: list, up: list) -> tuple[list, list]:
        """Torque and force of the cushion (vehicles/hovercraft.py's cushion()) as jets: corner i has
        compression s_i = max(h0 - x_z - up . c_i, 0) and lift m_i = k s_i - c a_i up . (v + w x c_i) upward at
        c_i (a_i = [s_i > 0]). Summed: force = (sum m_i) up, torque = (sum m_i c_i) x up, where
        sum m_i (1, c_i) = k sum s_i (1, c_i) - c (sum a_i (1, c_i)) up . v - c sum a_i (1, c_i) c_i . (up x w):
        the compressions are summed over jets of K x 4 instances (pose only), the rest per stage."""
        sp = self.spec
        K = len(x[0].value)
        corners = skirt_corners(sp)
        cn = np.tile(corners, (K, 1))
        up_c = [c.repeat(4) for c in up]
        raw = sp.cushion_height - x[2].repeat(4) - jets.dot(up_c, cn.T)
        active = (raw.value > 0).astype(float)
        comp = raw.apply(np.maximum(raw.value, 0.0), active, np.zeros(len(active)))
        k, c = sp.cushion_stiffness / 4, sp.cushion_damping / 4
        s0 = comp.group_sum(4)
        sc = [(comp * cn[:, i]).group_sum(4) for i in range(3)]
        a = active.reshape(K, 4)
        a0, ac, acc = a.sum(1), a @ corners, np.einsum("kn,ni,nj->kij", a, corners, corners)
        uv, uxw = jets.dot(up, xi[3:]), jets.cross(up, xi[:3])
        total = k * s0 - c * (a0 * uv + jets.dot(ac.T, uxw))
        moment = [k * sc[i] - c * (ac[:, i] * uv + jets.dot(acc[:, i].T, uxw)) for i in range(3)]
        return jets.cross(moment, up), [total * u for u in up]

    def pre_start(self):
        out = np.zeros(7 + self.nc + 6)
        out[3] = 1.0
        out[7 + self.nc:] = self.xi0
        return out

    def start(self):
        return np.concatenate([np.asarray(self.vehicle.position, float), np.asarray(self.vehicle.orientation, float)])

    def bounds(self):
        lo = np.full(7 + self.nc + 6, -np.inf)
        hi = -lo
        for i, ((a, b), ch) in enumerate(zip(self.limits, self.channels)):
            lo[7 + i], hi[7 + i] = a / ch.unit, b / ch.unit
        return lo, hi

    def body_point(self, S, offset):
        R, dR = rotation(S[:, 3:7])
        p = S[:, :3] + R @ offset
        J = np.zeros((len(S), 3, 7))
        J[:, :, :3] = np.eye(3)
        J[:, :, 3:] = np.einsum("kija,j->kia", dR, offset)
        return p, J

    def body_point_hessian(self, S, offset):
        """R(q) is the quadratic form T q q: d2(R offset)/dq2 = 2 T offset, constant."""
        H = np.zeros((len(S), 3, S.shape[1], S.shape[1]))
        H[:, :, 3:7, 3:7] = 2 * np.einsum("ijab,j->iab", _T, offset)
        return H

    def heading(self, S):
        R, dR = rotation(S[:, 3:7])
        a, b = R[:, 1, 0], R[:, 0, 0]
        n2 = a * a + b * b
        J = np.zeros((len(S), 7))
        J[:, 3:] = (b[:, None] * dR[:, 1, 0] - a[:, None] * dR[:, 0, 0]) / n2[:, None]
        return np.arctan2(a, b), J

    def velocity(self, V):
        J = np.zeros((len(V), 3, V.shape[1]))
        J[:, :, self.nc + 3:] = np.eye(3)
        return V[:, self.nc + 3:].copy(), J

    def guess(self, positions, headings, h):
        N = len(positions) - 1
        nc = self.nc
        st = np.zeros((N + 2, 7 + nc + 6))
        st[0] = self.pre_start()
        st[1:, :3] = positions
        q = np.zeros((N + 1, 4))
        q[:, 0], q[:, 3] = np.cos(headings / 2), np.sin(headings / 2)
        q0 = np.asarray(self.vehicle.orientation, float)
        q[0] = q0
        st[1:, 3:7] = q
        R, _ = rotation(q[:-1])
        st[1:N + 1, 7 + nc + 3:] = np.einsum("kji,kj->ki", R, np.diff(positions, axis=0) / h)
        st[1:N + 1, 7 + nc + 2] = np.diff(headings) / h
        for i, ch in enumerate(self.channels):
            st[1:N + 1, 7 + i] = ch.trim / ch.unit
        return st

    def replay(self, stages, h, controls):
        vehicle = replace(self.vehicle, controls=controls)
        return simulate(replace(self.mechanism, vehicle=vehicle), h, len(stages) - 2, "vehicle", tol=1e-13)


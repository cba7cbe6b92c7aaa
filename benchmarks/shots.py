"""Shot solver benchmark: our interior-point solve beside CasADi + IPOPT on the same discretisation.

For each demo shot, the same decision vector, bounds, constraint rows (the vehicle's discrete equations,
keys, obstacle clearances, corridors) and costs are written a second time as CasADi SX expressions
(this module; CasADi differentiates them, exact Hessian) and solved by IPOPT (MUMPS) from the same
initial guess. The IPOPT solution is then checked against OUR constraint functions: a violation at
solver tolerance shows both solve the same discretisation. CasADi models exist for the car and the
helicopter and the boat (column buoyancy with min/max for the immersed length), here, and for the mechanism
shots (the tree's midpoint DEL with loop and rest rows) in shots_casadi_tree.py; on those, CasADi's rows are
also evaluated at our solution.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m benchmarks.shots [--quick | --mechanisms]

(--quick: parking and the helicopter only; --mechanisms: the mechanism shots only.)
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from typing import Callable, Sequence, TypeVar

import numpy as np

from addon.solver.shots import mechanism_shots
from addon.solver.shots import nlp as nlpmod
from addon.solver.shots.mechanism_shots import solve_mechanism_shot
from addon.solver.shots.shotfile import load_shot
from addon.solver.shots.solve import solve_shot
from addon.solver.shots.spec import ShotResult
from addon.solver.shots.transcription import COLD_MU, Transcription
from addon.solver.shots.vehicle_shot import transcribe

from .shots_casadi_tree import mechanism_problem
from .shots_eval import chain_shot

SHOTS = ("parallel_parking", "parallel_parking_200", "car_tunnel", "helicopter_canyon_landing", "boat_docking")
QUICK = ("parallel_parking", "helicopter_canyon_landing")
T = TypeVar("T")
# every solve of the table, ours and IPOPT's, is the median (by CPU time) of at least REPEATS runs, and of more, up
# to MAX_REPEATS, until each solve's runs add up to MEDIAN_CPU seconds (a solve of a few milliseconds on a shared
# machine needs more than five samples for its median to hold still); the solves of a row take turns
# (interleaved_medians)
REPEATS, MAX_REPEATS, MEDIAN_CPU = 5, 25, 1.0
MECHANISM_SHOTS = ("four_bar_swing", "crane_anti_sway", "chain_30")  # CasADi model: benchmarks/shots_casadi_tree.py
CAR_200_LIMIT = 0.1  # seconds of solver CPU for parking with 200 steps (issue 18)


def _benchmark_shot(name: str):
    """A demo shot by name; NAME_200: the demo with twice the steps at half the step (keys at the same times),
    the scaling in the number of stages."""
    if not name.endswith("_200"):
        return load_shot(name)
    shot = load_shot(name[:-4])
    return replace(shot, name=f"{shot.name}, 200 steps", steps=2 * shot.steps, dt=shot.dt / 2,
                   keys=tuple(replace(k, step=2 * k.step) for k in shot.keys))


def _mechanism_shot(name: str):
    """A mechanism demo shot by name; chain_N: the N-link hanging chain of benchmarks.shots_eval, every hinge
    driven, its tip keyed, with the joint-speed cost 1e-2 (without it the program is a saddle at the start and
    the solve fails, docs/benchmarks_shots.md): the N-degree-of-freedom shot, the scaling in the coordinates."""
    if name.startswith("chain_"):
        shot = chain_shot(int(name[len("chain_"):]))
        return replace(shot, name=f"{shot.name}, joint-speed cost", speed=1e-2)
    return load_shot(name)


def _casadi():
    try:
        import casadi
    except ImportError:
        return None
    return casadi


# -- CasADi versions of the vehicle residuals (values only; CasADi differentiates) -------------------------
def _car_step(ca, dyn, W0, W1, W2, h, first):
    a, rho, l, c, m0 = dyn.alpha, dyn.rho, dyn.l, dyn.c, dyn.m0
    unit = dyn.spec.max_drive_torque
    phip, dp, wp = W0[3], unit * W0[4], W0[5]
    th, x, y, phi, d, w = (W1[i] for i in range(6))
    d = unit * d
    thn, xn, yn, phin = (W2[i] for i in range(4))
    sp, s, sn = ca.tan(phip), ca.tan(phi), ca.tan(phin)
    sm = (1 - a) * s + a * sn
    smp = first * s + (1 - first) * ((1 - a) * sp + a * s)
    r0 = (m0 + c * s * sm) * w - (m0 + c * s * smp) * wp - h * ((1 - a) * d + a * dp)
    om = h * (rho / l) * sm * w
    v = h * rho * w
    small = ca.fabs(om) < 1e-3
    oms = ca.if_else(small, 1e-3, om)
    A = ca.if_else(small, 1 - om**2 / 6 + om**4 / 120, ca.sin(oms) / oms)
    B = ca.if_else(small, om / 2 - om**3 / 24 + om**5 / 720, (1 - ca.cos(oms)) / oms)
    T1, T2 = v * A, v * B
    return ca.vertcat(r0, thn - th - om, xn - x - (ca.cos(th) * T1 - ca.sin(th) * T2),
                      yn - y - (ca.sin(th) * T1 + ca.cos(th) * T2))


def _rot(ca, q):
    w, v = q[0], q[1:4]
    return (w * w - ca.dot(v, v)) * ca.DM.eye(3) + 2 * v @ v.T + 2 * w * ca.skew(v)


def _qmul(ca, p, q):
    pw, pv, qw, qv = p[0], p[1:4], q[0], q[1:4]
    return ca.vertcat(pw * qw - ca.dot(pv, qv), pw * qv + qw * pv + ca.cross(pv, qv))


def _dcay_inv_T(ca, xi, mu):
    w, v, mw, mv = xi[0:3], xi[3:6], mu[0:3], mu[3:6]
    nu = mv + 0.5 * ca.cross(w, mv)
    top = mw + 0.5 * ca.cross(w, mw) + 0.25 * w * ca.dot(w, mw) + 0.5 * ca.cross(v, nu)
    return ca.vertcat(top, nu)


def _boat_wrench(ca, dyn, R, x, xi, u):
    """vehicles/boat.py's wrench in CasADi: column buoyancy and drag against the current, gravity, thrust."""
    s, hull = dyn.spec, dyn.hull
    up = R[2, :].T
    g = float(np.linalg.norm(dyn.gravity))
    v_ref, D = s.mass / s.water_density, np.asarray(s.drag, float)
    flow = R.T @ ca.DM(np.asarray(dyn.vehicle.current, float))
    torque, force = ca.DM.zeros(3), R.T @ ca.DM(s.mass * dyn.gravity)
    for X, Y in hull.xy:
        wl = -(x[2] + up[0] * X + up[1] * Y) / up[2]
        length = ca.fmin(ca.fmax(wl - hull.keel, 0), hull.height)
        c = ca.vertcat(X, Y, hull.keel + 0.5 * length)
        volume = hull.area * length
        rel = xi[3:6] + ca.cross(xi[0:3], c) - flow
        f = s.water_density * g * volume * up - (volume / v_ref) * (ca.DM(D) * rel)
        torque += ca.cross(c, f)
        force += f
    return ca.vertcat(torque, force) + ca.DM(dyn.thrust) @ u


def _helicopter_wrench(ca, dyn, R, x, xi, u):
    spec = dyn.spec
    sp, cp, sr, cr = ca.sin(u[2]), ca.cos(u[2]), ca.sin(u[3]), ca.cos(u[3])
    dt_, uc, ut = spec.rotor_height, u[0], u[1]
    force = ca.vertcat(sp * cr * uc, -sr * uc - ut, cp * cr * uc) + R.T @ ca.DM(spec.mass * dyn.gravity)
    torque = ca.vertcat(dt_ * sr * uc, dt_ * sp * cr * uc, spec.tail_arm * ut)
    return ca.vertcat(torque, force)


def _holonomic_step(ca, dyn, W0, W1, W2, h, first):
    nc, I = dyn.nc, ca.DM(dyn.inertia)
    units = ca.DM(dyn._units())
    x, q, u = W1[0:3], W1[3:7], W1[7:7 + nc] * units
    xi, xip = W1[7 + nc:], W0[7 + nc:]
    xn, qn = W2[0:3], W2[3:7]
    R = _rot(ca, q)
    a, b = h * xi[0:3], h * xi[3:6]
    Pb = (4 * b + 2 * ca.cross(a, b) + a * ca.dot(a, b)) / (4 + ca.dot(a, a))
    cq = ca.vertcat(2, a) / ca.sqrt(4 + ca.dot(a, a))
    mu, mup = I @ xi, I @ xip
    transported = _dcay_inv_T(ca, h * xi, mu)
    left = first * mup + (1 - first) * _dcay_inv_T(ca, -h * xip, mup)
    weight = first * h / 2 + (1 - first) * h
    node = first * xip + (1 - first) * 0.5 * (xip + xi)
    wrench = (_helicopter_wrench if dyn.vehicle.type == "helicopter" else _boat_wrench)(ca, dyn, R, x, node, u)
    return ca.vertcat(xn - x - R @ Pb, qn - _qmul(ca, q, cq), transported - left - weight * wrench)


def _body_point(ca, dyn, S, offset):
    if dyn.planar:
        th = S[0]
        ox, oy = dyn.b + offset[0], offset[1]
        return ca.vertcat(S[1] + ca.cos(th) * ox - ca.sin(th) * oy, S[2] + ca.sin(th) * ox + ca.cos(th) * oy,
                          dyn.spec.com_height + offset[2])
    return S[0:3] + _rot(ca, S[3:7]) @ ca.DM(offset)


def _heading(ca, dyn, S):
    if dyn.planar:
        return S[0]
    R = _rot(ca, S[3:7])
    return ca.atan2(R[1, 0], R[0, 0])


def _distance(ca, ob, p):
    from addon.solver.lie import quat_to_matrix
    from scipy.spatial import ConvexHull
    R = ca.DM(quat_to_matrix(np.asarray(ob.orientation, float)))
    pl = R.T @ (p - ca.DM(ob.position))
    if ob.shape == "sphere":
        return ca.norm_2(pl) - ob.size[0]
    if ob.shape in ("box", "cylinder"):
        if ob.shape == "box":
            qv = ca.fabs(pl) - ca.DM(ob.size)
        else:
            qv = ca.vertcat(ca.norm_2(pl[0:2]) - ob.size[0], ca.fabs(pl[2]) - ob.size[1])
        inside = ca.mmax(qv)
        out2 = ca.sumsqr(ca.fmax(qv, 0))
        return ca.if_else(inside > 0, ca.sqrt(ca.if_else(inside > 0, out2, 1.0)), inside)
    v = np.asarray(ob.vertices, float)
    hull = ConvexHull(v)
    normals, offsets = hull.equations[:, :3], -hull.equations[:, 3]
    beta = 50.0 / float(np.max(np.ptp(v, axis=0)))
    sv = ca.DM(normals) @ pl - ca.DM(offsets)
    top = ca.mmax(sv)
    return top + ca.log(ca.sum1(ca.exp(beta * (sv - top)))) / beta - np.log(len(offsets)) / beta


def casadi_problem(tr: Transcription):
    """(nlp dict, lbg, ubg) of the transcription `tr` in CasADi SX, or None for a vehicle without a model."""
    ca = _casadi()
    dyn, shot, N = tr.dyn, tr.shot, tr.N
    step = {"car": _car_step, "helicopter": _holonomic_step, "boat": _holonomic_step}.get(shot.mechanism.vehicle.type)
    if ca is None or step is None:
        return None
    x = ca.SX.sym("x", tr.n)
    h = x[tr.h_index]
    stage = [x[tr.stage_index(k)] for k in range(-1, N + 1)]  # stage[k + 1] is stage k
    ns = dyn.ns
    g, lbg, ubg = [], [], []

    def add(expr, lo, hi):
        g.append(expr)
        lbg.extend(np.ravel(lo))
        ubg.extend(np.ravel(hi))

    # same order as tr.blocks: dynamics, keys, obstacles, corridors
    for b in tr.blocks:
        kind = b.kind if isinstance(b.kind, tuple) else (b.kind,)
        if kind[0] == "dynamics":
            for k in range(N):
                add(step(ca, dyn, stage[k], stage[k + 1], stage[k + 2], h, 1.0 if k == 0 else 0.0),
                    b.lower[k], b.upper[k])
        elif kind[0] == "key":
            key, part = kind[1], kind[2]
            S = stage[key.step + 1][:ns]
            rows = [0, 1] if dyn.planar else [0, 1, 2]
            if part == "position":
                p = _body_point(ca, dyn, S, np.zeros(3))
                d = ca.vertcat(*[p[i] - key.position[i] for i in rows])
                add(ca.sumsqr(d) if key.radius > 0 else d, b.lower[0], b.upper[0])
            elif part == "heading":
                a = _heading(ca, dyn, S) - key.heading
                add(ca.atan2(ca.sin(a), ca.cos(a)), b.lower[0], b.upper[0])
            else:
                V = stage[key.step][ns:]
                v = dyn.spec.wheel_radius * V[1] if dyn.planar else V[dyn.nc + 3:dyn.nc + 6]
                comps = list(dyn.velocity_components)
                add(ca.vertcat(*[(v if dyn.planar else v[i]) - key.velocity[i] for i in comps]),
                    b.lower[0], b.upper[0])
        elif kind[0] == "obstacle":
            ob = kind[1]
            spheres = np.asarray(shot.body_spheres or ((0.0, 0.0, 0.0, shot.body_radius),), float)
            for k in range(1, N + 1):
                vals = []
                for c in spheres[:, :3]:
                    p = _body_point(ca, dyn, stage[k + 1][:ns], c)
                    if dyn.planar:
                        p = ca.vertcat(p[0], p[1], ob.position[2])
                    vals.append(_distance(ca, ob, p))
                add(ca.vertcat(*vals), b.lower[k - 1], b.upper[k - 1])
        elif kind[0] == "corridor":
            c = kind[1]
            rows = [0, 1] if dyn.planar else [0, 1, 2]
            for i, k in enumerate(range(max(c.first, 1), c.last + 1)):
                p = _body_point(ca, dyn, stage[k + 1][:ns], np.zeros(3))
                add(ca.vertcat(*[p[j] for j in rows]), b.lower[i], b.upper[i])
    f = 0
    costs = shot.costs
    for ch in dyn.channels:
        j = ch.index + (ns if ch.where == "segment" else 0)
        ks = range(N) if ch.where == "segment" else range(N + 1)
        u = [stage[k + 1][j] for k in ks]
        s = ch.scale / ch.unit
        if costs.effort > 0 and ch.effort:
            f += sum(costs.effort * h * ((ui - ch.trim / ch.unit) / s) ** 2 for ui in u)
        if costs.smoothness > 0:
            f += sum(costs.smoothness * ((u[i + 1] - u[i]) / s) ** 2 / h for i in range(len(u) - 1))
    if costs.time > 0:
        f += costs.time * N * h
    return {"x": x, "f": f, "g": ca.vertcat(*g)}, np.array(lbg), np.array(ubg)


def interleaved_runs(solves: Sequence[tuple[Callable[[], T], Callable[[T], float]]]) -> list[list[T]]:
    """For each (solve, cpu) of `solves`, its runs sorted by CPU time cpu(run). The solves take turns, one run each a
    round (a shared machine's slow spells last seconds: taking turns, ours and IPOPT's solve of a row see the same
    ones), for REPEATS rounds, or more (up to MAX_REPEATS) until every solve's runs add up to MEDIAN_CPU."""
    runs: list[list[T]] = [[] for _ in solves]
    while True:
        for (solve, _), done in zip(solves, runs):
            done.append(solve())
        rounds = len(runs[0])
        if rounds >= MAX_REPEATS or (rounds >= REPEATS and all(
                sum(map(cpu, done)) >= MEDIAN_CPU for (_, cpu), done in zip(solves, runs))):
            return [sorted(done, key=cpu) for (_, cpu), done in zip(solves, runs)]


def interleaved_medians(solves: Sequence[tuple[Callable[[], T], Callable[[T], float]]]) -> list[T]:
    """For each (solve, cpu) of `solves`, the run whose CPU time is the median of its interleaved_runs."""
    return [_median(done) for done in interleaved_runs(solves)]


def _median(runs: list[T]) -> T:
    """The median of runs sorted by CPU time (the upper one of an even number)."""
    return runs[len(runs) // 2]


class _Ipopt:
    """IPOPT (MUMPS, exact Hessian by CasADi) on a CasADi problem from x0, first barrier mu_init (None: IPOPT's
    default 0.1): timed() is one solve, report(run) what a run found, its solution checked against OUR rows
    (`our_violation`) and cost (`our_objective`) of `nlp`; `build`: seconds spent building the model."""

    def __init__(self, ca, problem, lbg, ubg, x0, lbx, ubx, nlp: nlpmod.NLP, build: float, mu_init: float | None):
        t0 = time.perf_counter()
        self.solver = ca.nlpsol("shot", "ipopt", problem, {
            "print_time": False, "ipopt.print_level": 0, "ipopt.tol": 1e-8, "ipopt.constr_viol_tol": 1e-9,
            "ipopt.max_iter": 3000, "ipopt.sb": "yes", **({} if mu_init is None else {"ipopt.mu_init": mu_init})})
        self.build = build + time.perf_counter() - t0
        self.nlp, self.bounds = nlp, {"x0": x0, "lbx": lbx, "ubx": ubx, "lbg": lbg, "ubg": ubg}

    def timed(self) -> tuple[float, float, dict]:
        """(wall, CPU time, CasADi's output) of one solve."""
        t0, c0 = time.perf_counter(), time.process_time()
        out = self.solver(**self.bounds)
        return time.perf_counter() - t0, time.process_time() - c0, out

    def report(self, run: tuple[float, float, dict]) -> dict:
        wall, cpu, out = run
        stats, nlp = self.solver.stats(), self.nlp  # every solve from the same start takes the same iterations
        x = np.asarray(out["x"]).ravel()
        ours = nlpmod.violation(nlp.constraints(x), nlp.c_lower, nlp.c_upper)
        return {"time": wall, "cpu": cpu, "build": self.build, "iterations": int(stats["iter_count"]),
                "status": stats["return_status"], "objective": float(out["f"]), "our_violation": float(np.max(ours)),
                "our_objective": nlp.objective(x)}


def _ipopt_cpu(run: tuple[float, float, dict]) -> float:
    return run[1]


def vehicle_ipopts(tr: Transcription, mu_inits=(None,)) -> list[_Ipopt] | None:
    """CasADi + IPOPT on the same transcription from the same start, one per first barrier of mu_inits (None:
    IPOPT's default 0.1); None without casadi or a CasADi model of the shot."""
    ca = _casadi()
    t0 = time.perf_counter()
    built = casadi_problem(tr)
    if ca is None or built is None:
        return None
    problem, lbg, ubg = built
    build = time.perf_counter() - t0
    return [_Ipopt(ca, problem, lbg, ubg, tr.x0(), tr.x_lower, tr.x_upper, tr.nlp, build, mu) for mu in mu_inits]


class _MechanismIpopts:
    """CasADi + IPOPT on a mechanism shot (the tree DMOC written in SX by shots_casadi_tree.py) from our start (as
    solve_mechanism_shot starts without a warm start: the keyed path, or the start held still), one _Ipopt per
    first barrier of mu_inits (None: IPOPT's default 0.1, ours too on mechanism shots)."""

    def __init__(self, ca, shot, mu_inits):
        self.ca, self.P = ca, mechanism_shots._problem(shot)
        t0 = time.perf_counter()
        self.problem, lbg, ubg, lbx, ubx = mechanism_problem(ca, self.P)
        build = time.perf_counter() - t0
        P = self.P
        Q = mechanism_shots.keyed_coordinates(P)
        x0 = mechanism_shots.initial_guess(P, np.tile(P.tx.q0, (P.tx.steps + 1, 1)) if Q is None else Q)
        self.nlp = mechanism_shots._nlp(P)
        self.solves = [_Ipopt(ca, self.problem, lbg, ubg, x0, lbx, ubx, self.nlp, build, mu) for mu in mu_inits]

    def reports(self, runs, result) -> list[dict]:
        """Each run's report, with the largest CasADi row at OUR solution `result` (`casadi_rows_at_ours`; its
        multipliers recovered from our rows by mechanism_shots.initial_guess, exact where the rows fix them) and our
        own largest row there (`our_rows_at_ours`)."""
        ca, problem, nlp = self.ca, self.problem, self.nlp
        x_ours = mechanism_shots.initial_guess(self.P, result.states)
        at_ours = float(np.max(np.abs(np.asarray(ca.Function("g", [problem["x"]], [problem["g"]])(x_ours)))))
        mine = float(np.max(nlpmod.violation(nlp.constraints(x_ours), nlp.c_lower, nlp.c_upper)))
        return [dict(ip.report(run), casadi_rows_at_ours=at_ours, our_rows_at_ours=mine)
                for ip, run in zip(self.solves, runs)]


def mechanism_ipopt(shot, result, mu_inits=(None,)) -> list[dict] | None:
    """_MechanismIpopts' reports for our solution `result`, each IPOPT solve the median of interleaved_medians' runs;
    None without casadi."""
    ca = _casadi()
    if ca is None:
        return None
    ipopts = _MechanismIpopts(ca, shot, mu_inits)
    return ipopts.reports(interleaved_medians([(ip.timed, _ipopt_cpu) for ip in ipopts.solves]), result)


def warm_start_line(name: str = "parallel_parking", shift: float = 0.3) -> str:
    """Re-solve after a key moves: the shot with its first position key moved `shift` m along x, solved cold
    (key path) and warm (from the solution before the move, ShotResult warm start); iterations and solver CPU."""
    shot = load_shot(name)
    before = solve_shot(shot)
    keys = list(shot.keys)
    i = next(j for j, k in enumerate(keys) if k.position is not None)
    keys[i] = replace(keys[i], position=(keys[i].position[0] + shift, *keys[i].position[1:]))
    moved = replace(shot, keys=tuple(keys))
    cold, warm = solve_shot(moved), solve_shot(moved, warm_start=before)
    return (f"- {shot.name}, key {keys[i].label!r} moved {shift:g} m: cold start {cold.status} in {cold.iterations} "
            f"iterations, {sum(cold.timings.values()):.3f} s solver CPU (objective {cold.objective:.6g}); warm start "
            f"from the solution before the move {warm.status} in {warm.iterations} iterations, "
            f"{sum(warm.timings.values()):.3f} s solver CPU (objective {warm.objective:.6g})")


def _timed(solve: Callable[[], ShotResult]) -> Callable[[], tuple[float, float, ShotResult]]:
    """solve, timed: (wall, CPU time, result)."""
    def timed() -> tuple[float, float, ShotResult]:
        t0, c0 = time.perf_counter(), time.process_time()
        result = solve()
        return time.perf_counter() - t0, time.process_time() - c0, result
    return timed


def _solver_cpu(run: tuple[float, float, ShotResult]) -> float:
    """A timed run's solver CPU: the sum of its result's timings."""
    return sum(run[2].timings.values())


def _targets(ratios: list[tuple[str, float, float]], car_200: tuple[float, float, int, int] | None) -> list[str]:
    """Issue 18's targets from the table's numbers: each shot's solver CPU over IPOPT's CPU in the same run, IPOPT
    from its default first barrier (and from COLD_MU, the vehicle shots' own), and parking with 200 steps under
    CAR_200_LIMIT of solver CPU (car_200: the median and the fastest of its runs, their number, its iterations),
    judged by the median."""
    below = [name for name, default, _ in ratios if default < 1.0]
    lines = [f"- every shot below IPOPT's CPU time: met on {len(below)} of {len(ratios)}; our solver CPU / IPOPT's "
             f"CPU (IPOPT from its default first barrier 0.1; in brackets from {COLD_MU:g}, the vehicle shots' own): "
             + "; ".join(f"{name} {default:.2f} ({same:.2f})" for name, default, same in ratios)]
    if car_200 is not None:
        cpu, fastest, count, iterations = car_200
        lines.append(f"- parallel parking with 200 steps under {1e3 * CAR_200_LIMIT:g} ms of solver CPU: "
                     f"{'met' if cpu < CAR_200_LIMIT else 'not met'} (median {1e3 * cpu:.0f} ms, fastest "
                     f"{1e3 * fastest:.0f} ms of its {count} runs; {iterations} iterations)")
    return lines


def run(quick: bool = False, mechanisms_only: bool = False) -> str:
    """Markdown: the run's date and load, one table of every shot (the vehicle shots, then the mechanism shots
    unless quick: our solve and CasADi + IPOPT, same discretisation, same start), its note, issue 18's targets
    and, in a full run, the warm start; mechanisms_only: the mechanism shots alone (no warm start)."""
    started, load = time.gmtime(), os.getloadavg()[0]
    names = () if mechanisms_only else QUICK if quick else SHOTS
    ratios: list[tuple[str, float, float]] = []
    car_200 = None
    lines = ["| shot | steps | unknowns | ours: status | ours: iterations | ours: wall / CPU time (s) "
             "| ours: solver CPU (s): evaluation / factorisation / line search / interior point | ours: CPU per iteration (ms) "
             "| ours: objective | replay error (m) | IPOPT: status | IPOPT: iterations | IPOPT: wall / CPU time (s) "
             "| IPOPT: CPU per iteration (ms) | IPOPT: objective | IPOPT solution in our constraints "
             f"| IPOPT from mu_init {COLD_MU:g}: iterations / CPU (s) / objective |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        shot = _benchmark_shot(name)
        tr = transcribe(shot)
        ipopts = vehicle_ipopts(tr, (None, COLD_MU)) or []
        every = interleaved_runs([(_timed(lambda: solve_shot(shot)), _solver_cpu)]
                                 + [(ip.timed, _ipopt_cpu) for ip in ipopts])
        runs = [_median(done) for done in every]
        ours, ours_cpu, result = runs[0]
        ip, ip_small = [ip.report(run) for ip, run in zip(ipopts, runs[1:])] or (None, None)
        free = int(np.sum(tr.x_lower < tr.x_upper))
        solver_cpu = sum(result.timings.values())
        parts = " / ".join(f"{t:.3f}" for t in result.timings.values())
        row = (f"| {shot.name} | {shot.steps} | {free} | {result.status} | {result.iterations} | {ours:.2f} / {ours_cpu:.2f} "
               f"| {solver_cpu:.3f}: {parts} | {1e3 * solver_cpu / max(result.iterations, 1):.1f} "
               f"| {result.objective:.6g} | {result.replay_error:.1e} |")
        if name == "parallel_parking_200":
            car_200 = (solver_cpu, _solver_cpu(every[0][0]), len(every[0]), result.iterations)
        if ip is None:
            row += " no CasADi model | | | | | | |"
        else:
            ratios.append((shot.name, solver_cpu / ip["cpu"], solver_cpu / ip_small["cpu"]))
            row += (f" {ip['status']} | {ip['iterations']} | {ip['time']:.3f} / {ip['cpu']:.3f} "
                    f"| {1e3 * ip['cpu'] / max(ip['iterations'], 1):.1f} | {ip['objective']:.6g} "
                    f"| max violation {ip['our_violation']:.1e} "
                    f"| {ip_small['iterations']} / {ip_small['cpu']:.3f} / {ip_small['objective']:.6g} |")
        lines.append(row)
    for name in () if quick else MECHANISM_SHOTS:
        shot = _mechanism_shot(name)
        ca = _casadi()
        ipopts = _MechanismIpopts(ca, shot, (None, COLD_MU)) if ca is not None else None
        runs = interleaved_medians([(_timed(lambda: solve_mechanism_shot(shot)), _solver_cpu)]
                                   + [(ip.timed, _ipopt_cpu) for ip in (ipopts.solves if ipopts else [])])
        ours, ours_cpu, result = runs[0]
        solver_cpu = sum(result.timings.values())
        parts = " / ".join(f"{t:.3f}" for t in result.timings.values())
        row = (f"| {shot.name} | {shot.steps} | {mechanism_shots._problem(shot).tx.n} | {result.status} "
               f"| {result.iterations} | {ours:.2f} / {ours_cpu:.2f} | {solver_cpu:.3f}: {parts} "
               f"| {1e3 * solver_cpu / max(result.iterations, 1):.1f} | {result.objective:.6g} | {result.replay_error:.1e} |")
        if ipopts is None:
            lines.append(row + " casadi not installed | | | | | | |")
            continue
        ip, ip_small = ipopts.reports(runs[1:], result)
        ratios.append((shot.name, solver_cpu / ip["cpu"], solver_cpu / ip_small["cpu"]))
        lines.append(row + f" {ip['status']} | {ip['iterations']} | {ip['time']:.3f} / {ip['cpu']:.3f} "
                     f"| {1e3 * ip['cpu'] / max(ip['iterations'], 1):.1f} | {ip['objective']:.6g} "
                     f"| max violation {ip['our_violation']:.1e}, our objective there {ip['our_objective']:.6g}; "
                     f"CasADi's rows at our solution {ip['casadi_rows_at_ours']:.1e} (ours {ip['our_rows_at_ours']:.1e}) "
                     f"| {ip_small['iterations']} / {ip_small['cpu']:.3f} / {ip_small['objective']:.6g} |")
    note = ("\nOurs: addon/solver/shots (numpy/scipy interior point, exact first derivatives; exact second "
            "derivatives of every vehicle's step equations (over jets; the car's in closed form, in C), of keys, "
            "obstacle clearances (a car's in C), corridors and the effort and smoothness costs, and of the tree DEL "
            "from programs recorded once per model and run in C, shots/program.py); wall / CPU time "
            "includes building the transcription (a mechanism shot's also its keyed start path) and the replay "
            "through the simulator, solver CPU is the whole interior-point solve "
            "(NLPResult.timings: evaluation / factorisation / line search / the interior point's own work). "
            "CPU time is process time (all threads), the better measure on a shared machine; each of our solves and "
            f"each IPOPT solve is the median by CPU time of {REPEATS} runs, or of more (up to {MAX_REPEATS}) until each "
            f"solve's runs add up to {MEDIAN_CPU:g} s, the solves of a row taking turns. IPOPT: CasADi 3.8 SX model "
            "of the same rows, exact Hessian by AD, MUMPS, tol 1e-8; time excludes building the model. Both "
            "start from the same key-path guess. Ours starts its barrier at mu = COLD_MU (docs/shots.md, \"Barrier\"), "
            "IPOPT at its default 0.1; the last column is IPOPT from the same first barrier as ours. Local optima of these non-convex problems may differ, so "
            "compare objectives too. Mechanism shots: ours starts its barrier at 0.1 (IPOPT's default, so the main "
            "IPOPT columns are the same first barrier), IPOPT's model is benchmarks/shots_casadi_tree.py (one SX graph, "
            "built in seconds to a minute, not counted) from our start (the keyed path); CasADi's rows at our solution "
            "take its multipliers from our rows by least squares (mechanism_shots.initial_guess).")
    head = (f"Run: {time.strftime('%Y-%m-%d %H:%M', started)}-{time.strftime('%H:%M', time.gmtime())} UTC, load "
            f"average {load:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (1 min; on a shared machine "
            "compare CPU times).\n\n")
    return (head + "\n".join(lines) + "\n" + note + "\n\nIssue 18's targets (numbers from the table):\n\n"
            + "\n".join(_targets(ratios, car_200)) + "\n"
            + ("" if quick or mechanisms_only else "\nWarm start:\n\n" + warm_start_line() + "\n"))


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv, mechanisms_only="--mechanisms" in sys.argv))

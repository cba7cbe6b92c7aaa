"""Maximal-coordinate benchmark: time per step and accuracy beside the tree method and MuJoCo, one run.

Usage: python -m benchmarks.maximal [--quick] [--out docs/benchmarks_maximal.md] [--contact-rows-only]
[--chains-only]
`run(quick)` returns the Markdown (the suite appends it). Sections:

* Sparse solver: Baraff factor + solve of an n-link chain (C kernel, numpy twin, dense), and the
  reduced-fill-in LDU (fillin.py) against auxiliary rows (baraff.solve_auxiliary) on cyclic graphs:
  fill counts, stored entries, time.
* n-link chains (revolute and ball joints) and a free body: ms per step of `maximal` (variational, Newton;
  its C step and its numpy step in the same run),
  `maximal-rk4` (forward.py), `tree` and MuJoCo (default Euler) on the same chain and dt, with the
  energy band over the timed steps.
* Chains of 4-link loops: the same methods, MuJoCo closing each loop with a `connect` equality;
  energy band and loop-closure violation.
* Long runs: energy drift and constraint violation over 10 s (chains, loops), ours and MuJoCo's.
* Sphere chains lying on the ground (ball joints, sphere-plane contacts) and the box drop: our
  penetration beside MuJoCo's with its default contact settings.
* Contact rows: the box drop and 8 to 128 falling dominoes with the contact rows bordered as one dense
  block (the old path, kept as the reference) and in one sparse LU, same run, beside MuJoCo.
* Contact scenes (benchmarks/contact_scenes.py): box drop, sphere chains, 32 to 1000 dominoes and the
  200-box pile beside MuJoCo (defaults and tuned under 1 mm) and PyBullet; cost per step against
  bodies and contacts.
Failures (a method that stops) are reported in the table with their message, not hidden.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

from addon.solver.integrator import make_integrator
from addon.solver.lie import matrix_to_quat, quat_to_matrix
from addon.solver.maximal import baraff, fillin
from addon.solver.maximal.graph import crystal, ladder, loop_chain, net, split_loops
from addon.solver.maximal.linear import LinearSolver
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from addon.solver.presets import preset_path
from addon.solver.reference_frames import joint_rotation
from addon.solver.trajectory import SolverError
from benchmarks.run import run_note, step_times, write_sections
from tools.contact_scenes import falling_dominoes
from tools.generate import ball_chain, pendulum_chain, rod_inertia

DT = 0.01
# n-link chains run at half that: released at 45 degrees, a chain of n 1 m, 1 kg rods carries ~6.9 n N at its
# top, and the maximal method's constraint forces stay stable only for omega dt < 2 with omega^2 ~ 12 T / (m l)
# (maximal/stability.py): about 480 links at dt = 0.01, about 1900 at dt = 0.005.
CHAIN_DT = 0.005
OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks_maximal.md"
TITLE = "Maximal coordinates: benchmark"
SQ2 = math.sqrt(0.5)


# -- mechanisms ---------------------------------------------------------------------------------------

def _rod(name: str, start: np.ndarray, direction: np.ndarray, radius: float = 0.02) -> Body:
    """A 1 m, 1 kg rod with its frame at `start` and local +X along `direction` (in the X-Z plane)."""
    angle = math.atan2(-direction[2], direction[0])  # rotation about +Y taking +X to direction
    quat = (math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0)
    perp, _, axial = rod_inertia(1.0, 1.0, radius)
    return Body(name, 1.0, position=tuple(start), orientation=quat, com=(0.5, 0.0, 0.0),
                inertia=(axial, perp, perp, 0.0, 0.0, 0.0))


def loop_chain_mechanism(segments: int) -> Mechanism:
    """presets/loop_chain.toml for any number of segments: a hanging column of rod diamonds, each closed
    by a hinge at its bottom, top hinges sprung (200 N m/rad), swinging at 1 rad/s about the top."""
    bodies, joints = [], []

    def hinge(name: str, parent: str, child: str, at: np.ndarray, rate: float = 0.0, stiffness: float = 0.0):
        return Joint(name, "revolute", parent, child, anchor=tuple(at), axis=(0.0, 1.0, 0.0), q0=(0.0,), v0=(rate,),
                     stiffness=stiffness)

    left, right = np.array([-SQ2, 0.0, -SQ2]), np.array([SQ2, 0.0, -SQ2])
    for k in range(1, segments + 1):
        top = np.array([0.0, 0.0, -(k - 1) * 2 * SQ2])
        bottom = top + left + right
        bodies += [_rod(f"a_{k}", top, left), _rod(f"b_{k}", top, right), _rod(f"c_{k}", top + left, right),
                   _rod(f"d_{k}", top + right, left)]
        joints.append(hinge("top", WORLD, "a_1", top, rate=1.0) if k == 1 else
                      hinge(f"link_{k}", f"c_{k - 1}", f"a_{k}", top))
        joints += [hinge(f"T_{k}", f"a_{k}", f"b_{k}", top, stiffness=200.0),
                   hinge(f"L_{k}", f"a_{k}", f"c_{k}", top + left), hinge(f"R_{k}", f"b_{k}", f"d_{k}", top + right),
                   hinge(f"B_{k}", f"c_{k}", f"d_{k}", bottom)]
    return Mechanism(f"chain of {segments} four-link loops", tuple(bodies), tuple(joints))


def sphere_chain(n: int, radius: float = 0.25) -> Mechanism:
    """n 1 kg spheres in a row on the ground, neighbours joined by ball joints, the first one free;
    dropped from 1 cm so the contacts engage."""
    inertia = 0.4 * radius**2
    names = [f"s{i}" for i in range(n)]
    bodies = tuple(Body(name, 1.0, position=(2 * radius * i, 0.0, radius + 0.01), inertia=(inertia,) * 3 + (0.0,) * 3)
                   for i, name in enumerate(names))
    joints = (Joint("s0 free", "free", WORLD, "s0"),) + tuple(
        Joint(f"j{i}", "ball", names[i - 1], names[i], anchor=(2 * radius * i - radius, 0.0, radius + 0.01))
        for i in range(1, n))
    colliders = (Collider("ground", WORLD, "plane"),) + tuple(Collider(n_, n_, "sphere", (radius,)) for n_ in names)
    return Mechanism(f"{n}-sphere chain", bodies, joints, colliders=colliders)


# -- MuJoCo models of the same mechanisms ---------------------------------------------------------------

def mujoco_model(mech: Mechanism, integrator: str = "Euler", dt: float = DT):
    """MjSpec model of a Mechanism: bodies nested along its joints (hinge, slide, ball, free), joints that
    close loops as `connect` equalities at their anchor, plane/sphere/box colliders, MuJoCo defaults
    otherwise. Returns (model, closures) with closures [(body1, body2, anchor in body1, anchor in body2)]."""
    import mujoco

    spec = mujoco.MjSpec()
    spec.option.timestep = dt
    spec.option.gravity = list(mech.gravity)
    spec.option.integrator = {"RK4": mujoco.mjtIntegrator.mjINT_RK4, "Euler": mujoco.mjtIntegrator.mjINT_EULER}[integrator]
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    pose = {b.name: (np.array(b.position, float), quat_to_matrix(np.array(b.orientation, float))) for b in mech.bodies}
    pose[WORLD] = (np.zeros(3), np.eye(3))
    made = {WORLD: spec.worldbody}
    closures = []
    kinds = {"revolute": mujoco.mjtJoint.mjJNT_HINGE, "prismatic": mujoco.mjtJoint.mjJNT_SLIDE,
             "ball": mujoco.mjtJoint.mjJNT_BALL}
    for joint in mech.joints:
        (pp, pr), (cp, cr) = pose[joint.parent], pose[joint.child]
        anchor = np.array(joint.anchor, float)
        if joint.child in made:
            closures.append((joint.parent, joint.child, pr.T @ (anchor - pp), cr.T @ (anchor - cp)))
            continue
        body = mech.body(joint.child)
        ixx, iyy, izz, ixy, ixz, iyz = body.inertia
        child = made[joint.parent].add_body(name=body.name, pos=list(pr.T @ (cp - pp)),
                                            quat=list(matrix_to_quat(pr.T @ cr)), mass=body.mass, ipos=list(body.com),
                                            fullinertia=[ixx, iyy, izz, ixy, ixz, iyz], explicitinertial=True)
        made[joint.child] = child
        if joint.type == "free":
            child.add_freejoint()
        elif joint.type in kinds:
            child.add_joint(name=joint.name, type=kinds[joint.type], pos=list(cr.T @ (anchor - cp)),
                            axis=list(cr.T @ np.array(joint.axis, float)), stiffness=joint.stiffness)
        else:
            raise ValueError(f"mujoco_model: joint type {joint.type!r} not translated")
    for a, b, pa, _ in closures:
        eq = spec.add_equality()
        eq.type, eq.objtype = mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtObj.mjOBJ_BODY
        eq.name1, eq.name2 = a, b
        eq.data[:3] = pa
    for col in mech.colliders:
        parent = spec.worldbody if col.body == WORLD else made[col.body]
        at = {"pos": list(col.position), "quat": list(col.orientation)}  # in the body frame, as ours
        if col.shape == "plane":
            parent.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0], **at)
        elif col.shape == "sphere":
            parent.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[col.size[0], 0.0, 0.0], mass=0.0, **at)
        elif col.shape == "box":
            parent.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(col.size[:3]), mass=0.0, **at)
        else:
            raise ValueError(f"mujoco_model: collider shape {col.shape!r} not translated")
    return spec.compile(), closures


def mujoco_start(model, mech: Mechanism):
    """MjData at the Mechanism's initial joint coordinates (hinge, slide, ball rotation vector) and rates
    (hinge and slide; ball joints must start at rest). Checked: 0.5 s of a 5-link revolute chain, a
    5-link ball chain and 3 four-link loops put every body origin within 6e-6, 1.2e-4 and 1.6e-3 m of
    the tree method's (MuJoCo RK4; the loops' gap is MuJoCo's soft `connect`)."""
    import mujoco

    data = mujoco.MjData(model)
    for joint in mech.joints:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint.name)
        if jid < 0 or not joint.q0:
            continue
        qa, va = model.jnt_qposadr[jid], model.jnt_dofadr[jid]
        if joint.type == "ball":  # Symplex's rotation vector is in the joint frame (z = axis)
            rv = joint_rotation(joint) @ np.array(joint.q0, float)
            angle = np.linalg.norm(rv)
            axis = rv / angle if angle > 0 else rv
            data.qpos[qa:qa + 4] = [math.cos(angle / 2), *(math.sin(angle / 2) * axis)]
            if any(joint.v0 or ()):
                raise ValueError(f"mujoco_start: ball joint {joint.name!r} starts moving; rates not translated")
        else:
            data.qpos[qa] = joint.q0[0]
            data.qvel[va] = joint.v0[0] if joint.v0 else 0.0
    mujoco.mj_forward(model, data)
    return data


def time_mujoco(mech: Mechanism, steps: int, integrator: str = "Euler", dt: float = DT) -> dict:
    """Median ms per mj_step, energy band, worst loop-closure gap and deepest contact over the run."""
    import mujoco

    model, closures = mujoco_model(mech, integrator, dt)
    data = mujoco_start(model, mech)
    times, energy, gap, depth = [], [], 0.0, 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(model, data)
        times.append(time.perf_counter() - t0)
        energy.append(float(data.energy.sum()))
        for a, b, pa, pb in closures:
            ia, ib = (mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, x) for x in (a, b))
            wa = data.xpos[ia] + data.xmat[ia].reshape(3, 3) @ pa
            wb = data.xpos[ib] + data.xmat[ib].reshape(3, 3) @ pb
            gap = max(gap, float(np.linalg.norm(wa - wb)))
        if data.ncon:
            depth = max(depth, -float(np.min(data.contact.dist[:data.ncon])))
    return {"ms": 1e3 * float(np.median(times)), "energy_band": float(np.ptp(energy)), "gap": gap,
            "depth": depth, "data": data, "model": model}


# -- Symplex runs ---------------------------------------------------------------------------------------

def time_symplex(mech: Mechanism, method: str, steps: int, dt: float = DT, numpy_step: bool = False) -> dict:
    """Median ms per step (after one warm-up step; "fastest_ms": the fastest step), energy band and worst joint
    residual; or the failure.
    numpy_step: the maximal method's numpy step even where its C kernel runs (maximal/native_step.py)."""
    try:
        integ = make_integrator(mech, method, dt)
        if numpy_step:
            integ.state.kernel = False
        integ.step()
        times = step_times(integ, steps)
    except (SolverError, ValueError) as err:
        return {"failed": f"{type(err).__name__}: {str(err)[:90]}"}
    traj = integ.trajectory()
    return {"ms": 1e3 * float(np.median(times)), "fastest_ms": 1e3 * float(np.min(times)),
            "energy_band": float(np.ptp(traj.energy[1:])),
            "residual": float(np.max(traj.constraint_residual)), "traj": traj}


def _cell(result: dict, key: str = "ms", fmt: str = "{:.2f}") -> str:
    if "failed" in result:
        return "failed"
    return fmt.format(result[key])


def _failures(results: dict) -> list[str]:
    return [f"- {label}: {r['failed']}" for label, r in results.items() if "failed" in r]


# -- sections -------------------------------------------------------------------------------------------

def _chain_system(n: int, rng: np.random.Generator):
    masses = [np.diag(rng.uniform(1.0, 2.0, 6)) for _ in range(n)]
    block = lambda: np.linalg.qr(rng.standard_normal((6, 6)))[0][:5]  # noqa: E731
    constraints = [baraff.Constraint((0,), (block(),))] + [baraff.Constraint((i - 1, i), (block(), block()))
                                                           for i in range(1, n)]
    return masses, constraints


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def solver_section(quick: bool) -> list[str]:
    lines = ["## Sparse solver: Baraff factor + solve of an n-link chain",
             "",
             "6x6 body blocks, 5-row joints (revolute), world-anchored; best of repeated runs, ms. `factor` takes",
             "the per-block lists; `factor_flat` the flat arrays a vectorised caller builds once per step; `reuse`",
             "overwrites the previous Newton iterate's factor. Dense: numpy.linalg.solve on the assembled matrix.",
             "",
             "| n | C factor | C factor_flat + reuse | C solve | numpy factor | numpy solve | dense solve | max rel. diff C vs dense |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rng = np.random.default_rng(0)
    for n in ((10, 100, 1000) if quick else (10, 100, 1000, 4000)):
        masses, constraints = _chain_system(n, rng)
        rhs = rng.standard_normal(11 * n)
        repeats = 20 if n <= 1000 else 5
        fac = baraff.factor(masses, constraints)
        c_factor = _best(lambda: baraff.factor(masses, constraints, reuse=fac), repeats)
        c_flat = _best(lambda: baraff.factor_flat(fac.layout, fac.mass, fac.edges, reuse=fac), repeats)
        c_solve = _best(lambda: baraff.solve(fac, rhs), repeats)
        np_fac = baraff.factor(masses, constraints, native=False)
        np_factor = _best(lambda: baraff.factor(masses, constraints, native=False), 2 if n <= 1000 else 1)
        np_solve = _best(lambda: baraff.solve(np_fac, rhs), 2 if n <= 1000 else 1)
        dense, diff = "-", "-"
        if n <= 100:  # 1000 links: an 11000 x 11000 dense solve takes about a minute here
            h = np.zeros((11 * n, 11 * n))
            for i, m in enumerate(masses):
                h[6 * i:6 * i + 6, 6 * i:6 * i + 6] = m
            for i, con in enumerate(constraints):
                for body, blk in zip(con.bodies, con.blocks):
                    h[6 * n + 5 * i:6 * n + 5 * i + 5, 6 * body:6 * body + 6] = blk
                    h[6 * body:6 * body + 6, 6 * n + 5 * i:6 * n + 5 * i + 5] = blk.T
            ref = None

            def dense_solve():
                nonlocal ref
                ref = np.linalg.solve(h, rhs)
            dense = f"{_best(dense_solve, 1):.1f}"
            diff = f"{np.linalg.norm(baraff.solve(fac, rhs) - ref) / np.linalg.norm(ref):.1e}"
        lines.append(f"| {n} | {c_factor:.3f} | {c_flat:.3f} | {c_solve:.3f} | {np_factor:.1f} | {np_solve:.1f} | "
                     f"{dense} | {diff} |")
    return lines


def _mechanism_graph(n_bodies: int, edges: list[tuple[int, int]], rows: int, rng: np.random.Generator):
    masses = [np.diag(rng.uniform(1.0, 2.0, 6)) for _ in range(n_bodies)]
    block = lambda r: np.linalg.qr(rng.standard_normal((6, 6)))[0][:r]  # noqa: E731
    constraints = [baraff.Constraint((0,), (block(6),))]
    constraints += [baraff.Constraint(pair, (block(rows), block(rows))) for pair in edges]
    return masses, constraints


def fillin_section(quick: bool) -> list[str]:
    lines = ["## Cyclic graphs: reduced-fill-in LDU against auxiliary rows",
             "",
             "Bodies (6x6) on the graph's nodes, a joint on every edge (3 rows; 2 in the crystal, where 3 would",
             "over-constrain), body 0 welded to the world. Fill: off-diagonal block pairs added by elimination",
             "(fillin.symbolic). Stored: scalars in the fill-in factor, against the auxiliary-rows approach's",
             "tree factor + N x k anticipated responses + k x k matrix (k loop-closing rows). Times: factor + solve,",
             "ms, both in C (fill-in LDU: symplex_fillin_*; auxiliary rows: the tree kernel); dense: numpy.linalg.solve.",
             "",
             "| graph | bodies | loops | k | fill (dfs) | fill (min-degree) | stored fill-in | stored aux rows | "
             "fill-in ms | aux rows ms | dense ms | max rel. diff |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    graphs = [("ladder 2x25", ladder(25), 3), ("net 8x8", net(8, 8), 3), ("crystal 4^3", crystal(4), 2),
              ("loop chain 5", loop_chain(5), 3), ("loop chain 20", loop_chain(20), 3)]
    if not quick:
        graphs += [("ladder 2x100", ladder(100), 3), ("net 16x16", net(16, 16), 3), ("crystal 6^3", crystal(6), 2),
                   ("loop chain 80", loop_chain(80), 3)]
    rng = np.random.default_rng(1)
    for label, (n_bodies, edges), rows in graphs:
        masses, constraints = _mechanism_graph(n_bodies, edges, rows, rng)
        system = fillin.saddle(masses, constraints)
        fills = {}
        for method in ("dfs", "min-degree"):
            order = fillin.order_nodes(len(system.dims), system.edges, method, system.after)
            fills[method] = fillin.symbolic(system.dims, system.edges, order)
        sym = fills["min-degree"]
        primary, auxiliary = split_loops(n_bodies, [c.bodies for c in constraints], [c.rows for c in constraints])
        k = sum(constraints[i].rows for i in auxiliary)
        size = sum(system.dims)
        tree_fac = baraff.factor(masses, [constraints[i] for i in primary])
        stored_aux = tree_fac.dinv_flat.size + 2 * tree_fac.lt_flat.size + size * k + k * k
        rhs = rng.standard_normal(size)
        starts = 6 * n_bodies + np.concatenate([[0], np.cumsum([c.rows for c in constraints])])
        ordered = np.concatenate([rhs[:6 * n_bodies]] + [rhs[starts[i]:starts[i + 1]] for i in primary + auxiliary])
        result = {}

        def by_fillin():
            result["fillin"] = fillin.solve(fillin.factor(sym, system.diagonal, system.blocks), rhs)

        def by_aux():
            fac = baraff.factor(masses, [constraints[i] for i in primary])
            result["aux"], _ = baraff.solve_auxiliary(fac, [constraints[i] for i in auxiliary], ordered[:size - k],
                                                      ordered[size - k:])

        t_fill, t_aux = _best(by_fillin, 2), _best(by_aux, 3)
        dense_ms, diff = "-", "-"
        if size <= 3000:
            h = np.zeros((size, size))
            offsets = np.concatenate([[0], np.cumsum(system.dims)])
            for v, d in enumerate(system.diagonal):
                h[offsets[v]:offsets[v + 1], offsets[v]:offsets[v + 1]] = d
            for (a, b), blk in system.blocks.items():
                h[offsets[a]:offsets[a + 1], offsets[b]:offsets[b + 1]] = blk
                h[offsets[b]:offsets[b + 1], offsets[a]:offsets[a + 1]] = blk.T

            def dense():
                result["dense"] = np.linalg.solve(h, rhs)
            dense_ms = f"{_best(dense, 1):.1f}"
            ref = result["dense"]
            err = max(np.linalg.norm(result["fillin"] - ref), np.linalg.norm(result["aux"][:6 * n_bodies] - ref[:6 * n_bodies]))
            diff = f"{err / np.linalg.norm(ref):.1e}"
        lines.append(f"| {label} | {n_bodies} | {len(auxiliary)} | {k} | {fills['dfs'].fill} | {sym.fill} | "
                     f"{sym.stored_entries} | {stored_aux} | {t_fill:.1f} | {t_aux:.1f} | {dense_ms} | {diff} |")
    return lines


def _steps(n: int, quick: bool) -> int:
    return max(3, min(100 if quick else 200, (400 if quick else 2000) // n))


def free_body(spin: tuple[float, float, float] = (3.0, -2.0, 5.0)) -> Mechanism:
    """One 2 kg brick (principal moments 0.1, 0.4, 0.3) thrown with an asymmetric spin under gravity."""
    body = Body("brick", 2.0, (0.0, 0.0, 1.0), inertia=(0.1, 0.4, 0.3, 0.0, 0.0, 0.0))
    return Mechanism("free body", (body,), (Joint("throw", "free", WORLD, "brick", v0=spin + (1.0, 0.0, 3.0)),))


CHAIN_METHODS = (("maximal", False), ("maximal", True), ("maximal-rk4", False), ("tree", False))


def chain_section(quick: bool) -> list[str]:
    sizes = (1, 5, 20, 100) if quick else (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
    lines = ["## n-link chains: ms per step",
             "",
             f"Rods 1 m, 1 kg, dt = {CHAIN_DT} s (the maximal method's stability limit at dt = 0.01 is about 480 links",
             "of this chain, docs/maximal.md), median wall time per step after one warm-up step. Revolute: the top hinge",
             "at 45 degrees (generate.pendulum_chain); ball: the same rods on ball joints, top tilted by (0.5, 0.3, 0)",
             "rad. MuJoCo: the same chain (MjSpec, default Euler integrator and solver settings); its time grows",
             "steeply with n because a serial chain's joint-space mass matrix is dense. Energy band: max - min of",
             "total energy over the timed steps (J). `maximal` is the variational method (METHODS['maximal']):",
             "`maximal C` its step in C (native/maximal_step.c, taken wherever the kernels are built), `maximal numpy`",
             "the numpy step (variational.py, the C step's reference) in the same run; `maximal-rk4` the stabilised",
             "forward dynamics (maximal/forward.py), `tree` the tree midpoint VI. `free` is one body without joint",
             "rows (benchmarks.maximal.free_body: a 2 kg brick thrown with an asymmetric spin).",
             "",
             "| joints | n | steps | maximal C | maximal numpy | maximal-rk4 | tree | MuJoCo | energy band maximal "
             "| energy band maximal-rk4 | energy band tree | energy band MuJoCo |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    cases = [("free", 1, free_body())] + [(joints, n, build(n)) for joints, build in
                                          (("revolute", pendulum_chain), ("ball", ball_chain)) for n in sizes]
    for joints, n, mech in cases:
        steps = max(10, _steps(n, quick))
        res = {(m, numpy_step): time_symplex(mech, m, steps, CHAIN_DT, numpy_step) for m, numpy_step in CHAIN_METHODS}
        mj = time_mujoco(mech, steps, dt=CHAIN_DT)
        failures += _failures({f"{joints} n={n} {m}{' numpy' if numpy_step else ''}": r for (m, numpy_step), r in res.items()})
        lines.append(f"| {joints} | {n} | {steps} | " + " | ".join(_cell(res[key]) for key in CHAIN_METHODS)
                     + f" | {mj['ms']:.3f} | " + " | ".join(_cell(res[key], "energy_band", "{:.1e}")
                                                     for key in CHAIN_METHODS if key[1] is False)
                     + f" | {mj['energy_band']:.1e} |")
    return lines + ([""] + failures if failures else [])


def loop_section(quick: bool) -> list[str]:
    sizes = (1, 2, 5) if quick else (1, 2, 5, 10, 20)
    lines = ["## Chains of 4-link loops",
             "",
             "benchmarks.maximal.loop_chain_mechanism (presets/loop_chain.toml for any number of segments): rod",
             f"diamonds closed by a hinge at the bottom, dt = {DT} s. Loop gap: max |g| over joint rows (ours), max",
             "distance between the two anchor points of each `connect` equality (MuJoCo, default settings). Energy",
             "band over the timed steps (J).",
             "",
             "| loops | bodies | steps | maximal ms | maximal-rk4 ms | tree ms | MuJoCo ms | loop gap maximal | "
             "loop gap maximal-rk4 | loop gap tree | loop gap MuJoCo | energy band maximal | energy band maximal-rk4 "
             "| energy band tree | energy band MuJoCo |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    methods = ("maximal", "maximal-rk4", "tree")
    for segments in sizes:
        mech = loop_chain_mechanism(segments)
        steps = max(20, _steps(4 * segments, quick))
        res = {m: time_symplex(mech, m, steps) for m in methods}
        mj = time_mujoco(mech, steps)
        failures += _failures({f"{segments} loops {m}": r for m, r in res.items()})
        lines.append(f"| {segments} | {4 * segments} | {steps} | " + " | ".join(_cell(res[m]) for m in methods)
                     + f" | {mj['ms']:.3f} | " + " | ".join(_cell(res[m], "residual", "{:.1e}") for m in methods)
                     + f" | {mj['gap']:.1e} | " + " | ".join(_cell(res[m], "energy_band", "{:.1e}") for m in methods)
                     + f" | {mj['energy_band']:.1e} |")
    return lines + ([""] + failures if failures else [])


def contact_section(quick: bool) -> list[str]:
    sizes = (5, 10) if quick else (5, 10, 20, 50)
    lines = ["## Contact: sphere chains on the ground and the box drop",
             "",
             f"Sphere chains: r = 0.25 m, 1 kg spheres joined by ball joints, dropped from 1 cm, dt = {DT} s; depth:",
             "deepest penetration of a sphere into the ground over the run (m). MuJoCo: default contact settings",
             "(solref 0.02, solimp defaults), Euler. `maximal` is its step in C (native/maximal_step.c, interior",
             "point included, steps of more than native_step.MAX_BORDER pairs in numpy), `maximal numpy` the numpy",
             "step (variational.py) in the same run.",
             "",
             "| spheres | steps | maximal ms | maximal numpy ms | MuJoCo ms | depth maximal | depth MuJoCo |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    for n in sizes:
        mech = sphere_chain(n)
        steps = 50 if quick else 100
        res = time_symplex(mech, "maximal", steps)
        slow = time_symplex(mech, "maximal", steps, numpy_step=True)
        mj = time_mujoco(mech, steps)
        depth = "failed"
        if "failed" not in res:
            depth = f"{max(0.0, float(np.max(0.25 - res['traj'].poses[:, :, 2]))):.1e}"
        failures += _failures({f"{n} spheres maximal": res, f"{n} spheres maximal numpy": slow})
        lines.append(f"| {n} | {steps} | {_cell(res)} | {_cell(slow)} | {mj['ms']:.3f} | {depth} | {mj['depth']:.1e} |")
    mech = load_mechanism(preset_path("box_drop"))
    steps = 150
    res = time_symplex(mech, "maximal", steps)
    slow = time_symplex(mech, "maximal", steps, numpy_step=True)
    mj = time_mujoco(mech, steps)
    half = 0.25
    mj_sink = half - float(mj["data"].xpos[1, 2])
    lines += ["", f"Box drop (presets/box_drop.toml: 0.5 m, 1 kg cube from 0.4 m, dt = {DT} s, {steps + 1} steps):", "",
              "| | max penetration (m) | final height of the centre minus 0.25 m | ms per step |", "|---|---:|---:|---:|"]
    if "failed" in res:
        lines.append("| maximal | failed | failed | - |")
        failures.append(f"- box drop maximal: {res['failed']}")
    else:
        z = res["traj"].poses[:, 0, 2]
        lines.append(f"| maximal | {max(0.0, float(half - z.min())):.1e} | {float(z[-1] - half):.1e} | {res['ms']:.2f} |")
    if "failed" not in slow:
        z = slow["traj"].poses[:, 0, 2]
        lines.append(f"| maximal numpy | {max(0.0, float(half - z.min())):.1e} | {float(z[-1] - half):.1e} | "
                     f"{slow['ms']:.2f} |")
    lines.append(f"| MuJoCo (defaults) | {mj['depth']:.1e} | {-mj_sink:.1e} | {mj['ms']:.3f} |")
    return lines + ([""] + failures if failures else [])


def _time_border(mech: Mechanism, border: str, steps: int) -> dict:
    """Median and mean ms per step of the maximal method with its Newton solver's border forced
    (linear.LinearSolver: "dense", the tree factor with every auxiliary row bordered as one dense block;
    "auto", one sparse LU of the bordered matrix from SPARSE_FROM auxiliary rows on); the final state,
    the contact rows and the sparse factor's fill at the last Newton iteration."""
    integ = make_integrator(mech, "maximal", DT)
    state = integ.state
    state.kernel = False  # the numpy step, whose solver's border this compares
    state.solver = LinearSolver(integ.model.bodies.count, list(integ.model.primary), border)
    times = []
    try:
        for _ in range(steps):
            t0 = time.perf_counter()
            integ.step()
            times.append(time.perf_counter() - t0)
    except (SolverError, ValueError) as err:
        return {"failed": f"{type(err).__name__}: {str(err)[:90]}"}
    lu = state.solver._sparse_lu
    return {"ms": 1e3 * float(np.median(times)), "mean": 1e3 * float(np.mean(times)),
            "final": np.concatenate([state.x.ravel(), state.q.ravel()]), "rows": state.solver.unknowns,
            "fill": None if lu is None else lu[0].L.nnz + lu[0].U.nnz}


def contact_scaling_section(quick: bool) -> list[str]:
    """Box drop and n falling dominoes: dense border against the sparse LU, same run, beside MuJoCo."""
    steps = 30 if quick else 60
    scenes = [("box drop", load_mechanism(preset_path("box_drop")))]
    scenes += [(f"{n} dominoes", falling_dominoes(n)) for n in ((8, 32) if quick else (8, 32, 128))]
    lines = ["## Contact rows: dense border against the sparse LU",
             "",
             f"The first {steps} steps (dt = {DT} s) from rest: the box drop (lands at step 28) and n dominoes",
             "(presets/dominoes.toml made n long: the first tipped onto the second, 0.3 m apart; all standing on",
             "the ground from step 1, 11 contact rows each, then toppling one after the other). `dense`: the tree",
             "factor with every contact and friction row bordered as one dense k x k block, LU-factored per",
             "Newton iteration (the method before issue 15); `auto`: the default (maximal/linear.py), one sparse",
             "LU (SuperLU, partial pivoting, minimum degree on the body-row graph) of the whole bordered matrix",
             "from 32 auxiliary rows on, the dense border below (the box drop's 11 contact rows: both columns are",
             "then the same code). Both run here one after the other; median (mean) wall ms per step. Unknowns:",
             "of the Newton matrix at the last step (6 per body + joint and contact rows); fill: nonzeros of the",
             "sparse L + U there. Diff: max |x, q| difference of the two runs' final states.",
             "MuJoCo: the same scene, default settings, Euler, median ms per step.",
             "",
             "| scene | unknowns | dense ms | auto ms | speed-up (means) | fill | diff | MuJoCo ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    for label, mech in scenes:
        dense = _time_border(mech, "dense", steps)
        sparse = _time_border(mech, "auto", steps)  # the default
        mj = time_mujoco(mech, steps)
        failures += _failures({f"{label} dense": dense, f"{label} sparse": sparse})
        if "failed" in dense or "failed" in sparse:
            lines.append(f"| {label} | - | {_cell(dense)} | {_cell(sparse)} | - | - | - | {mj['ms']:.3f} |")
            continue
        diff = float(np.max(np.abs(dense["final"] - sparse["final"])))
        fill = "-" if sparse["fill"] is None else str(sparse["fill"])
        lines.append(f"| {label} | {sparse['rows']} | {dense['ms']:.1f} ({dense['mean']:.1f}) | "
                     f"{sparse['ms']:.1f} ({sparse['mean']:.1f}) | {dense['mean'] / sparse['mean']:.1f} | {fill} | "
                     f"{diff:.0e} | {mj['ms']:.3f} |")
    return lines + ([""] + failures if failures else [])


def _long_mujoco(mech: Mechanism, steps: int, integrator: str) -> dict:
    """Energy drift and band and worst loop gap of MuJoCo over `steps` steps from the start."""
    import mujoco

    model, closures = mujoco_model(mech, integrator)
    data = mujoco_start(model, mech)
    mujoco.mj_energyPos(model, data)
    mujoco.mj_energyVel(model, data)
    energy, gap = [float(data.energy.sum())], 0.0
    ids = [tuple(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, x) for x in (a, b)) for a, b, _, _ in closures]
    for _ in range(steps):
        mujoco.mj_step(model, data)
        energy.append(float(data.energy.sum()))
        for (ia, ib), (_, _, pa, pb) in zip(ids, closures):
            wa = data.xpos[ia] + data.xmat[ia].reshape(3, 3) @ pa
            wb = data.xpos[ib] + data.xmat[ib].reshape(3, 3) @ pb
            gap = max(gap, float(np.linalg.norm(wa - wb)))
    return {"energy": np.array(energy), "gap": gap}


def drift_section(quick: bool) -> list[str]:
    steps = 300 if quick else 1000
    lines = ["## Long runs: energy drift and constraint violation",
             "",
             f"{steps} steps of dt = {DT} s from the start. Drift: mean total energy over the last 10 % of the run",
             "minus the initial energy (J); band: max - min over the run; gap: worst joint-row residual (ours) or",
             "`connect` anchor distance (MuJoCo). MuJoCo with its default settings, Euler and RK4.",
             "",
             "| mechanism | method | energy drift | energy band | gap |", "|---|---|---:|---:|---:|"]
    failures = []
    for label, mech in (("5-link revolute chain", pendulum_chain(5)), ("5-link ball chain", ball_chain(5)),
                        ("3 four-link loops", loop_chain_mechanism(3))):
        for method in ("maximal", "maximal-rk4", "tree"):
            try:
                integ = make_integrator(mech, method, DT)
                for _ in range(steps):
                    integ.step()
            except (SolverError, ValueError) as err:
                failures.append(f"- {label} {method}: {type(err).__name__}: {str(err)[:90]}")
                lines.append(f"| {label} | {method} | failed | failed | failed |")
                continue
            traj = integ.trajectory()
            e = traj.energy
            lines.append(f"| {label} | {method} | {np.mean(e[-max(1, len(e) // 10):]) - e[0]:.1e} | {np.ptp(e):.1e} | "
                         f"{np.max(traj.constraint_residual):.1e} |")
        for integrator in ("Euler", "RK4"):
            mj = _long_mujoco(mech, steps, integrator)
            e = mj["energy"]
            lines.append(f"| {label} | MuJoCo {integrator} | {np.mean(e[-max(1, len(e) // 10):]) - e[0]:.1e} | "
                         f"{np.ptp(e):.1e} | {mj['gap']:.1e} |")
    return lines + ([""] + failures if failures else [])


def run(quick: bool) -> str:
    """The maximal-coordinate benchmark as Markdown."""
    load = os.getloadavg()
    from benchmarks import contact_scenes  # it imports this module's MuJoCo models

    sections = [solver_section(quick), fillin_section(quick), chain_section(quick), loop_section(quick),
                drift_section(quick), contact_section(quick), contact_scaling_section(quick),
                *contact_scenes.sections(quick)]
    head = [f"# {TITLE}", "", run_note(f"python -m benchmarks.maximal{' --quick' if quick else ''}", load), ""]
    return "\n".join(head + [line for section in sections for line in section + [""]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few steps")
    parser.add_argument("--out", type=Path, default=OUT, help="Markdown file to write")
    parser.add_argument("--contact-rows-only", action="store_true",
                        help="only the contact-rows section, replacing that section of --out")
    parser.add_argument("--chains-only", action="store_true",
                        help="only the n-link chains section, replacing that section of --out")
    parser.add_argument("--contact-only", action="store_true",
                        help="only the sphere-chain and box-drop contact section, replacing that section of --out")
    args = parser.parse_args(argv)
    only = {"--contact-rows-only": (args.contact_rows_only, contact_scaling_section),
            "--chains-only": (args.chains_only, chain_section), "--contact-only": (args.contact_only, contact_section)}
    chosen = [(flag, make) for flag, (wanted, make) in only.items() if wanted]
    if chosen:
        flag, make = chosen[0]
        command = f"python -m benchmarks.maximal {flag}" + (" --quick" if args.quick else "")
        write_sections(args.out, command, lambda: [make(args.quick)], TITLE)
        return 0
    text = run(args.quick)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Random branched mechanisms using every joint type, a Newton iterate away from its root, and central
differences of DEL rows: the derivative checks' test helpers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from addon.solver.model import Body, Force, Joint, Mechanism
from addon.solver.tree import midpoint
from addon.solver.tree.compile import _spanning_tree

TYPES = ("revolute", "prismatic", "cylindrical", "universal", "planar", "ball", "free", "fixed")


def random_unit(rng: np.random.Generator) -> tuple[float, float, float]:
    v = rng.normal(size=3)
    return tuple(v / np.linalg.norm(v))


def random_quat(rng: np.random.Generator) -> tuple[float, float, float, float]:
    q = rng.normal(size=4)
    return tuple(q / np.linalg.norm(q))


def random_body(rng: np.random.Generator, name: str) -> Body:
    a, b, c = rng.uniform(0.1, 0.6, size=3)
    m = float(rng.uniform(0.5, 2.0))
    inertia = (m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12, 0.0, 0.0, 0.0)
    return Body(name, m, tuple(rng.normal(size=3)), random_quat(rng), tuple(0.2 * rng.normal(size=3)), inertia)


def random_tree(seed: int, types=TYPES, loops: int = 0, forces: bool = True, ball_springs: bool = False) -> Mechanism:
    """One body per type in `types`, each hung from a random earlier body (or the world). With
    `ball_springs`, ball and free joints get springs and random rests too (tree/ball_springs.py)."""
    rng = np.random.default_rng(seed)
    rest_rng = np.random.default_rng([seed, 1])  # its own stream: the trees are the same with or without springs
    bodies, joints = [], []
    for i, kind in enumerate(types):
        body = random_body(rng, f"b{i}")
        parent = "world" if i == 0 else str(rng.choice(["world"] + [b.name for b in bodies]))
        springs_here = ball_springs and kind in ("ball", "free")
        ndof = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "planar": 3, "ball": 3,
                "free": 6, "fixed": 0}[kind]
        joints.append(Joint(f"j{i}", kind, parent, body.name, anchor=tuple(rng.normal(size=3)),
                            axis=random_unit(rng), axis2=random_unit(rng),
                            q0=tuple(0.3 * rng.normal(size=ndof)), v0=tuple(rng.normal(size=ndof)),
                            stiffness=float(rng.uniform(0, 2)) * (ball_springs or kind not in ("ball", "free")),
                            rest=tuple(rest_rng.normal(size=ndof)) if springs_here else None,
                            damping=float(rng.uniform(0, 0.5))))
        bodies.append(body)
    for k in range(loops):
        a, b = rng.choice(len(bodies), size=2, replace=False)
        joints.append(Joint(f"loop{k}", "revolute", bodies[a].name, bodies[b].name,
                            anchor=tuple(rng.normal(size=3)), axis=random_unit(rng)))
    extra = (Force("push", bodies[-1].name, point=(0.1, 0.2, 0.3), force=(1.0, -2.0, 0.5)),) if forces else ()
    mech = Mechanism("random", tuple(bodies), tuple(joints), gravity=(0.3, -0.2, -9.81), forces=extra)
    # the joints the tree method closes loops with are constraint rows only: it refuses springs and dampers there
    _, closing = _spanning_tree(mech)
    return mech.replace(joints=tuple(replace(j, stiffness=0.0, rest=None, damping=0.0) if i in closing else j
                                     for i, j in enumerate(joints)))


def rows_by_central_differences(rows, q2: np.ndarray, lam: np.ndarray, dyn: np.ndarray,
                                eps: float = 1e-6) -> np.ndarray:
    """d rows(q, lam) / d(q[dyn], lam) by central differences; rows(q, lam) returns the residual."""
    x = np.concatenate([q2[dyn], lam])
    nd = int(dyn.sum())
    columns = []
    for col in range(len(x)):
        pair = []
        for sign in (1, -1):
            y = x.copy()
            y[col] += sign * eps
            q = q2.copy()
            q[dyn] = y[:nd]
            pair.append(rows(q, y[nd:]))
        columns.append((pair[0] - pair[1]) / (2 * eps))
    return np.column_stack(columns)


def random_iterate(model, seed: int, dt: float = 0.01):
    """A Newton iterate of the first step away from its root: (state, dyn, Dh1, q2, lam, DEL system) with q2
    the velocity guess plus 3e-2 rad/m noise and random multipliers."""
    state, *_ = midpoint.initial_state(model)
    dyn = ~model.dof_prescribed
    Dh1 = state.Dh[state.rows][:, dyn]
    rng = np.random.default_rng(seed)
    q2 = state.q + dt * state.velocity_guess + 3e-2 * rng.normal(size=model.nq)
    lam = rng.normal(size=len(state.rows))
    return state, dyn, Dh1, q2, lam, midpoint.del_system(model, state, Dh1, q2, lam, dt)

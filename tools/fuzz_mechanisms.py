"""Random mechanisms through both methods: no traceback, no silent wrong answer (issue 19).

    python -m tools.fuzz_mechanisms --seed 0 --count 300 [--out DIR] [--steps N] [--quiet]

Each case is a random mechanism of 3-8 bodies in one of four classes (open chains, branched trees, planar
loops, spatial loops) with every joint type, mass ratios up to 1e8, joint springs and point springs,
dampers, limits, velocity motors, joints written with child "world", now and then a massless body, and a
time step between 0.001 and 0.05 s. It is written as TOML by the mechfile writer, read back as the CLI
reads it, and run by `simulate()` under the tree and the maximal method. The outcome of each run is:

    ok           finished, and the independent judge below finds nothing wrong
    explained    refused by name (MechanismError) or failed with a SolverError: the CLI's exit 2 or 1
    traceback    any other exception: what the CLI would report as an internal error
    silent-wrong finished, but the judge finds a non-finite pose, a joint come apart or, in a passive
                 setup, energy grown past half of what its motion can exchange

The judge reads only the saved trajectory (.npz) and the mechanism, and works from points and axes with
scipy's rotations: it shares no code with the solver's own checks (addon/solver/verify.py). A development
tool: tools/ is not shipped in the extension.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.mechfile.validate import check_method
from addon.solver.mechfile.write import save_mechanism
from addon.solver.model import WORLD, Body, Joint, Mechanism, MechanismError, Motor, Spring
from addon.solver.trajectory import SolverError, Trajectory

CLASSES = ("chain", "tree", "planar_loop", "spatial_loop")
METHODS = ("tree", "maximal")
OUTCOMES = ("ok", "explained", "traceback", "silent-wrong")
OPEN_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "planar", "ball", "free", "fixed")
ONE_DOF = ("revolute", "prismatic")
REVERSIBLE = ("revolute", "prismatic", "cylindrical", "universal", "ball", "fixed")
DOFS = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "planar": 3, "ball": 3, "free": 6,
        "fixed": 0}
MASS_RATIOS = (1.0, 1e2, 1e4, 1e8)
DT_RANGE = (1e-3, 0.05)
DURATION = 0.5  # s each case runs, within MIN_STEPS..max_steps
MIN_STEPS = 10
GAP_TOL = 1e-5  # judge: a joint gap past this (m per m of size, or rad) is a joint come apart
ENERGY_GROWTH = 0.5  # judge: energy growth past this fraction of the exchangeable energy is wrong


@dataclass(frozen=True)
class Case:
    """One random mechanism and the grid it runs on; passive: no dampers, motors, limits or joint springs
    (the judge's energy is kinetic + gravity + point springs)."""

    name: str
    kind: str
    mechanism: Mechanism
    dt: float
    steps: int
    passive: bool


@dataclass(frozen=True)
class Outcome:
    """One run's class; final: the last body positions (B, 3) of a run that is ok, for comparing methods."""

    case: str
    kind: str
    method: str
    outcome: str
    detail: str
    final: np.ndarray | None = None


# ---------------------------------------------------------------------------------------------- generator


def _unit(rng: np.random.Generator) -> tuple[float, float, float]:
    v = rng.normal(size=3)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def _second_axis(rng: np.random.Generator, kind: str, axis: tuple[float, float, float]) -> tuple | None:
    """A random axis2 perpendicular to `axis` for the types that take one (universal, planar), else None."""
    if kind not in ("universal", "planar"):
        return None
    a = np.array(axis)
    r = np.array(_unit(rng))
    r -= a * (r @ a)
    return tuple(float(x) for x in r / np.linalg.norm(r))


def _body(rng: np.random.Generator, name: str, position: np.ndarray, mass: float) -> Body:
    a, b, c = rng.uniform(0.05, 0.5, size=3)
    inertia = (mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12, 0.0, 0.0, 0.0)
    orientation = tuple(float(x) for x in Rotation.random(random_state=rng).as_quat(scalar_first=True))
    return Body(name, mass, tuple(float(x) for x in position), orientation,
                tuple(float(x) for x in 0.1 * rng.normal(size=3)), inertia)


def _masses(rng: np.random.Generator, n: int) -> np.ndarray:
    ratio = MASS_RATIOS[rng.integers(len(MASS_RATIOS))]
    masses = 10 ** rng.uniform(0.0, math.log10(ratio), size=n) if ratio > 1 else np.ones(n)
    if rng.random() < 0.08:
        masses[rng.integers(n)] = 0.0  # massless: documented as accepted by the format
    return masses


def _forcing(rng: np.random.Generator, joint: Joint, passive: bool) -> Joint:
    """`joint` with random springs, dampers, limits and motors (none when `passive`)."""
    if passive or joint.type not in ("revolute", "prismatic", "cylindrical", "universal"):
        return joint
    n = DOFS[joint.type]
    fields: dict = {}
    if rng.random() < 0.4:
        fields.update(stiffness=float(10 ** rng.uniform(-1, 4)), rest=tuple(float(x) for x in 0.2 * rng.normal(size=n)))
    if rng.random() < 0.4:
        fields["damping"] = float(10 ** rng.uniform(-2, 1))
    if rng.random() < 0.25:
        q0 = np.array(joint.q0 or (0.0,) * n)
        fields.update(lower=tuple(float(x) for x in q0 - rng.uniform(0.1, 1.0, size=n)),
                      upper=tuple(float(x) for x in q0 + rng.uniform(0.1, 1.0, size=n)))
    if n == 1 and rng.random() < 0.15:
        fields["motor"] = Motor("velocity", target_velocity=float(rng.normal()), gain=float(10 ** rng.uniform(-1, 1)))
    return replace(joint, **fields)


def _open_joint(rng: np.random.Generator, name: str, kind: str, parent: str, child: str, anchor: np.ndarray,
                loose: bool) -> Joint:
    n = DOFS[kind]
    scale = 0.3 if loose else 0.0
    axis = _unit(rng)
    return Joint(name, kind, parent, child, tuple(float(x) for x in anchor), axis, _second_axis(rng, kind, axis),
                 q0=tuple(float(x) for x in scale * rng.normal(size=n)) if n else (),
                 v0=tuple(float(x) for x in rng.normal(size=n)) if n else ())


def _open_mechanism(rng: np.random.Generator, n: int, branched: bool, passive: bool) -> tuple[list, list]:
    masses = _masses(rng, n)
    bodies, joints = [], []
    for i in range(n):
        parent = (WORLD if i == 0 else f"b{rng.integers(i)}" if branched and rng.random() < 0.6 else f"b{i - 1}")
        base = np.zeros(3) if parent == WORLD else np.array(bodies[int(parent[1:])].position)
        position = base + np.array([0.0, 0.0, -0.4]) + 0.2 * rng.normal(size=3)
        bodies.append(_body(rng, f"b{i}", position, float(masses[i])))
        kind = OPEN_TYPES[rng.integers(len(OPEN_TYPES))]
        joint = _forcing(rng, _open_joint(rng, f"j{i}", kind, parent, f"b{i}", (base + position) / 2, True), passive)
        if parent == WORLD and kind in REVERSIBLE and rng.random() < 0.3:
            joint = replace(joint, parent=joint.child, child=WORLD, q0=(), v0=(), lower=None, upper=None, rest=None)
        joints.append(joint)
    return bodies, joints


def _loop_mechanism(rng: np.random.Generator, n: int, planar: bool, passive: bool) -> tuple[list, list]:
    """A chain of n bodies from the world, closed back onto the world (or an earlier body) by one more joint:
    hinges about one axis in one plane (plus a slider now and then), or revolute, universal and ball joints
    in space. Coordinates start at the reference (assembled); the solver projects the random rates."""
    masses = _masses(rng, n)
    plane_axis = np.array(_unit(rng))
    points = [np.zeros(3)]
    for _ in range(n + 1):
        step = rng.normal(size=3)
        if planar:
            step -= plane_axis * (step @ plane_axis)
        points.append(points[-1] + 0.5 * step / np.linalg.norm(step))
    points[-1] = points[0] + (points[-1] - points[0]) * 0.5 if rng.random() < 0.5 else points[-1]
    bodies, joints = [], []
    for i in range(n):
        centre = (points[i + 1] + points[i + 2]) / 2
        bodies.append(_body(rng, f"b{i}", centre, float(masses[i])))
    spatial_types = ("revolute", "universal", "ball", "revolute", "cylindrical")
    for i in range(n + 1):
        parent = WORLD if i == 0 else f"b{i - 1}"
        child = f"b{i}" if i < n else (WORLD if rng.random() < 0.6 else f"b{rng.integers(n - 1)}")
        if planar:
            kind = "prismatic" if 0 < i < n and rng.random() < 0.15 else "revolute"
        else:
            kind = spatial_types[rng.integers(len(spatial_types))]
        axis = (tuple(float(x) for x in plane_axis) if planar and kind == "revolute"
                else tuple(float(x) for x in (points[i + 1] - points[i]) / np.linalg.norm(points[i + 1] - points[i]))
                if planar else _unit(rng))
        m = DOFS[kind]
        joint = Joint(f"j{i}", kind, parent, child, tuple(float(x) for x in points[i + 1]), axis,
                      _second_axis(rng, kind, axis),
                      v0=tuple(float(x) for x in 2 * rng.normal(size=m)))
        joints.append(joint if i == n else _forcing(rng, joint, passive))
    return bodies, joints


def random_case(seed: int, index: int, max_steps: int = 60, passive: bool | None = None) -> Case:
    """Case `index` of the run seeded `seed` (the same pair always gives the same case); `passive` True or
    False forces the choice (and changes the case)."""
    rng = np.random.default_rng([seed, index])
    kind = CLASSES[index % len(CLASSES)]
    n = int(rng.integers(3, 9))
    drawn = rng.random() < 0.5
    passive = drawn if passive is None else passive
    if kind in ("chain", "tree"):
        bodies, joints = _open_mechanism(rng, n, kind == "tree", passive)
    else:
        bodies, joints = _loop_mechanism(rng, n, kind == "planar_loop", passive)
    springs = ()
    if rng.random() < 0.3:
        a, b = rng.choice(n, size=2, replace=False)
        length = float(np.linalg.norm(np.subtract(bodies[a].position, bodies[b].position)))
        springs = (Spring("spring", f"b{a}", f"b{b}", stiffness=float(10 ** rng.uniform(1, 5)),
                          rest_length=length * float(rng.uniform(0.5, 1.5)),
                          damping=0.0 if passive else float(rng.uniform(0, 1))),)
    dt = float(10 ** rng.uniform(math.log10(DT_RANGE[0]), math.log10(DT_RANGE[1])))
    steps = int(np.clip(round(DURATION / dt), MIN_STEPS, max_steps))
    mech = Mechanism(f"fuzz {seed}-{index} {kind}", tuple(bodies), tuple(joints), springs=springs)
    return Case(f"{seed}-{index}", kind, mech, dt, steps, passive)


# ---------------------------------------------------------------------------------------------- judge


def _frames(trajectory: Trajectory, name: str) -> tuple[Rotation, np.ndarray]:
    """Rotations and origins over the samples of body `name` (the world: identity, zero)."""
    n = len(trajectory.t)
    if name == WORLD:
        return Rotation.identity(n), np.zeros((n, 3))
    poses = trajectory.poses[:, trajectory.bodies.index(name)]
    return Rotation.from_quat(poses[:, 3:], scalar_first=True), poses[:, :3]


def _local(mech: Mechanism, name: str, point: np.ndarray, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A world point and direction of the reference configuration in body `name`'s frame."""
    if name == WORLD:
        return point, direction
    body = mech.body(name)
    turn = Rotation.from_quat(body.orientation, scalar_first=True).inv()
    return turn.apply(point - np.array(body.position)), turn.apply(direction)


def joint_gap(mech: Mechanism, trajectory: Trajectory, joint: Joint) -> np.ndarray:
    """Per sample, how far `joint` is from holding: anchor points apart (or off the slide line or plane), and
    the joint axis turned (by the chord between the two bodies' copies of it; for prismatic and fixed
    joints, of the whole relative rotation)."""
    anchor = np.array(joint.anchor, dtype=float)
    axis = np.array(joint.axis, dtype=float) / np.linalg.norm(joint.axis)
    (rot_p, org_p), (rot_c, org_c) = _frames(trajectory, joint.parent), _frames(trajectory, joint.child)
    pa, ax_p = _local(mech, joint.parent, anchor, axis)
    pc, ax_c = _local(mech, joint.child, anchor, axis)
    point_p, point_c = rot_p.apply(pa) + org_p, rot_c.apply(pc) + org_c
    axis_p, axis_c = rot_p.apply(ax_p), rot_c.apply(ax_c)
    apart = point_c - point_p
    along = np.einsum("ni,ni->n", apart, axis_p)
    if joint.type in ("prismatic", "cylindrical"):
        translation = np.linalg.norm(apart - along[:, None] * axis_p, axis=1)
    elif joint.type == "planar":
        translation = np.abs(along)
    elif joint.type == "free":
        translation = np.zeros(len(apart))
    else:
        translation = np.linalg.norm(apart, axis=1)
    if joint.type in ("prismatic", "fixed"):
        reference = _relative_reference(mech, joint)
        turn = (rot_p.inv() * rot_c * reference.inv()).magnitude()
        rotation = 2 * np.sin(turn / 2)
    elif joint.type in ("revolute", "cylindrical", "planar"):
        rotation = np.linalg.norm(axis_c - axis_p, axis=1)
    else:  # universal (the cross keeps its arms square: not judged here), ball, free
        rotation = np.zeros(len(apart))
    return np.maximum(translation, rotation)


def _relative_reference(mech: Mechanism, joint: Joint) -> Rotation:
    """Child rotation in the parent's frame at the reference configuration."""
    def turn(name: str) -> Rotation:
        return Rotation.identity() if name == WORLD else Rotation.from_quat(mech.body(name).orientation,
                                                                            scalar_first=True)
    return turn(joint.parent).inv() * turn(joint.child)


def _energy(mech: Mechanism, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """Kinetic + gravity + point-spring energy per interval from finite differences of the poses, and the
    gravity potential per sample."""
    dt = np.diff(trajectory.t)
    g = np.array(mech.gravity)
    total = np.zeros(len(dt))
    potential = np.zeros(len(trajectory.t))
    for body in mech.bodies:
        rot, origin = _frames(trajectory, body.name)
        centre = rot.apply(np.array(body.com)) + origin
        velocity = np.diff(centre, axis=0) / dt[:, None]
        spin = (rot[:-1].inv() * rot[1:]).as_rotvec() / dt[:, None]
        i = body.inertia
        inertia = np.array([[i[0], i[3], i[4]], [i[3], i[1], i[5]], [i[4], i[5], i[2]]])
        height = -body.mass * centre @ g
        potential += height
        total += 0.5 * body.mass * np.sum(velocity ** 2, axis=1) + 0.5 * np.einsum("ni,ij,nj->n", spin, inertia, spin)
        total += 0.5 * (height[:-1] + height[1:])
    for spring in mech.springs:
        ends = []
        for name, point in ((spring.body_a, spring.point_a), (spring.body_b, spring.point_b)):
            rot, origin = _frames(trajectory, name)
            ends.append(rot.apply(np.array(point)) + origin)
        stretch = np.linalg.norm(ends[1] - ends[0], axis=1) - spring.rest_length
        stored = 0.5 * spring.stiffness * stretch ** 2
        total += 0.5 * (stored[:-1] + stored[1:])
    return total, potential


def _size(mech: Mechanism) -> float:
    points = np.array([b.position for b in mech.bodies] + [j.anchor for j in mech.joints])
    return max(1.0, float(np.max(np.linalg.norm(points - points.mean(axis=0), axis=1))))


def judge(case: Case, trajectory: Trajectory) -> str | None:
    """What is wrong with a finished run, judged from its saved trajectory alone; None when nothing is."""
    mech = case.mechanism
    if not np.all(np.isfinite(trajectory.poses)):
        return "non-finite pose"
    size = _size(mech)
    for joint in mech.joints:
        gap = joint_gap(mech, trajectory, joint)
        worst = int(np.argmax(gap))
        if gap[worst] > GAP_TOL * size:
            return f"joint {joint.name!r} ({joint.type}) open by {gap[worst]:.3g} at step {worst}"
    if case.passive and len(trajectory.t) > 2:
        energy, potential = _energy(mech, trajectory)
        available = energy[0] - potential.min()
        weight = sum(b.mass for b in mech.bodies) * float(np.linalg.norm(mech.gravity)) * size
        growth = float(np.max(energy - energy[0]))
        if growth > ENERGY_GROWTH * available + 1e-6 * weight:
            return f"energy grew by {growth:.3g} J, {growth / max(available, 1e-300):.3g} x the {available:.3g} J available"
    return None


# ---------------------------------------------------------------------------------------------- runner


def run_case(case: Case, method: str, folder: Path) -> Outcome:
    """Write `case` as TOML, read it back as the CLI does, simulate, save and reload, classify."""
    path = folder / f"case_{case.name}.toml"
    try:
        save_mechanism(case.mechanism, path, header=f"{case.name}: {case.kind}, dt {case.dt:g}, {case.steps} steps")
        mech = load_mechanism(path)
        check_method(mech, method)
        trajectory = simulate(mech, case.dt, case.steps, method)
    except (MechanismError, SolverError) as err:
        return Outcome(case.name, case.kind, method, "explained", f"{type(err).__name__}: {err}")
    except Exception as err:  # noqa: BLE001 - anything else is what the fuzzer looks for
        where = traceback.extract_tb(err.__traceback__)[-1]
        return Outcome(case.name, case.kind, method, "traceback",
                       f"{type(err).__name__}: {err} ({Path(where.filename).name}:{where.lineno})")
    if trajectory.status != "finished":
        return Outcome(case.name, case.kind, method, "explained", trajectory.message)
    saved = folder / f"run_{case.name}_{method}.npz"
    trajectory.save(saved)
    problem = judge(replace(case, mechanism=mech), Trajectory.load(saved))
    if problem is not None:
        return Outcome(case.name, case.kind, method, "silent-wrong", problem)
    return Outcome(case.name, case.kind, method, "ok", "", trajectory.poses[-1, :, :3])


def run(seed: int, count: int, folder: Path, max_steps: int = 60, report=print) -> list[Outcome]:
    """Every case of the run under both methods; `report` gets a line per run that is not ok."""
    outcomes = []
    for index in range(count):
        case = random_case(seed, index, max_steps)
        for method in METHODS:
            outcome = run_case(case, method, folder)
            outcomes.append(outcome)
            if outcome.outcome in ("traceback", "silent-wrong"):
                report(f"{outcome.outcome}: case {case.name} ({case.kind}, dt {case.dt:.4g}, {case.steps} steps, "
                       f"{len(case.mechanism.bodies)} bodies) {method}: {outcome.detail}")
    return outcomes


def disagreements(outcomes: list[Outcome]) -> dict[str, float]:
    """Largest final position difference (m) between the methods, per case where both are ok."""
    final: dict[str, dict[str, np.ndarray]] = {}
    for o in outcomes:
        if o.final is not None:
            final.setdefault(o.case, {})[o.method] = o.final
    return {case: float(np.max(np.abs(runs["tree"] - runs["maximal"])))
            for case, runs in final.items() if len(runs) == len(METHODS)}


def table(outcomes: list[Outcome]) -> str:
    """Counts by class, method and outcome as a Markdown table."""
    counts = Counter((o.kind, o.method, o.outcome) for o in outcomes)
    lines = ["| class | method | " + " | ".join(OUTCOMES) + " |", "|---|---|" + "---:|" * len(OUTCOMES)]
    for kind in CLASSES + ("all",):
        for method in METHODS:
            row = [sum(v for (k, m, o), v in counts.items() if (kind == "all" or k == kind) and m == method
                       and o == outcome) for outcome in OUTCOMES]
            lines.append(f"| {kind} | {method} | " + " | ".join(str(x) for x in row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz_mechanisms", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60, help="most steps a case runs (default 60)")
    parser.add_argument("--out", type=Path, default=None, help="keep the TOML files and runs here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        folder = args.out or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        outcomes = run(args.seed, args.count, folder, args.steps)
    print(table(outcomes))
    gaps = disagreements(outcomes)
    if gaps:
        worst = sorted(gaps, key=gaps.get, reverse=True)[:3]
        print(f"both ok in {len(gaps)} cases: final positions differ by a median {np.median(list(gaps.values())):.2g} m, "
              "largest " + ", ".join(f"{gaps[c]:.2g} m (case {c})" for c in worst))
    bad = sum(o.outcome in ("traceback", "silent-wrong") for o in outcomes)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

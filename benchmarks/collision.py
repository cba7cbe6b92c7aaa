"""Timing of CollisionWorld.detect on many-body scenes: `python -m benchmarks.collision [--quick]`.

`run(quick)` returns the Markdown table (the suite, `python -m addon bench --suite collision`, records
it in docs/benchmarks_collision.md). Scenes: a chain of n spheres lying on the ground (ball joints
between neighbours), n dominoes with every other one leaning on the next (edge-on-face contacts), a
pyramid of boxes resting on each other and on the ground, a heap of turned boxes (a pile mid-fall:
pairs of every kind, touching and apart), and the collider presets at their start. Each row: bodies,
colliders, contacts found and the median wall time of a query over REPEATS (margin 1 mm). A second
table times the box heaps' box pairs all at once (boxbox.box_box) against the per-pair reference
(boxbox.pair_contacts on every pair within the margin).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from addon.solver.collision import CollisionWorld
from addon.solver.collision.boxbox import box_box, pair_contacts, separating_axes
from addon.solver.collision.shapes import world_frames
from addon.solver.lie import matrix_to_quat, rotvec_to_matrix
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Body, Collider, Joint, Mechanism
from addon.solver.presets import list_presets, preset_path

MARGIN = 1e-3
REPEATS = 5
_INERTIA = (0.01, 0.01, 0.01, 0.0, 0.0, 0.0)


def _free_bodies(names: list[str], positions: list[tuple[float, float, float]]):
    bodies = tuple(Body(name, 1.0, position=p, inertia=_INERTIA) for name, p in zip(names, positions))
    joints = tuple(Joint(f"{name} free", "free", "world", name) for name in names)
    return bodies, joints


def sphere_chain(n: int, radius: float = 0.25):
    names = [f"s{i}" for i in range(n)]
    bodies = tuple(Body(name, 1.0, position=(2 * radius * i, 0.0, radius), inertia=_INERTIA)
                   for i, name in enumerate(names))
    joints = (Joint("s0 free", "free", "world", "s0"),) + tuple(
        Joint(f"j{i}", "ball", names[i - 1], names[i], anchor=(2 * radius * i - radius, 0.0, radius))
        for i in range(1, n))
    colliders = (Collider("ground", "world", "plane"),) + tuple(
        Collider(name, name, "sphere", (radius,)) for name in names)
    mech = Mechanism("sphere chain", bodies, joints, colliders=colliders)
    return mech, np.array([b.position for b in bodies]), np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))


def leaning_dominoes(n: int, half=(0.025, 0.125, 0.25), spacing: float = 0.3):
    """Every even domino tipped about its front bottom edge until its top edge rests on the next."""
    hx, _, hz = half
    tilt = float(np.arcsin((spacing - 2 * hx) / (2 * hz)))
    rot = rotvec_to_matrix(np.array([0.0, tilt, 0.0]))
    leaning_centre = np.array([hx, 0.0, 0.0]) + rot @ np.array([-hx, 0.0, hz])
    names = [f"d{i}" for i in range(n)]
    positions = [tuple(leaning_centre + [spacing * i, 0.0, 0.0]) if i % 2 == 0 else (spacing * i, 0.0, hz)
                 for i in range(n)]
    bodies, joints = _free_bodies(names, positions)
    colliders = (Collider("ground", "world", "plane"),) + tuple(Collider(name, name, "box", half) for name in names)
    quats = np.array([matrix_to_quat(rot) if i % 2 == 0 else (1.0, 0.0, 0.0, 0.0) for i in range(n)])
    return Mechanism("dominoes", bodies, joints, colliders=colliders), np.array(positions), quats


def box_pyramid(levels: int, half: float = 0.2):
    names, positions = [], []
    for level in range(levels):
        for i in range(levels - level):
            for j in range(levels - level):
                names.append(f"b{len(names)}")
                positions.append((2 * half * (i + 0.5 * level), 2 * half * (j + 0.5 * level), half * (2 * level + 1)))
    bodies, joints = _free_bodies(names, positions)
    colliders = (Collider("ground", "world", "plane"),) + tuple(
        Collider(name, name, "box", (half,) * 3) for name in names)
    return (Mechanism("pyramid", bodies, joints, colliders=colliders), np.array(positions),
            np.tile([1.0, 0.0, 0.0, 0.0], (len(names), 1)))


def box_heap(n: int, half: float = 0.1, seed: int = 3):
    """n cubes of half size `half` on a jittered cubic grid 2.1 half sizes apart, each turned by up to 30
    degrees about a random axis: most neighbours overlap a little or are apart by less than the margin."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(n ** (1 / 3)))
    cells = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)][:n], dtype=float)
    positions = cells * 2.1 * half + rng.uniform(-0.05, 0.05, (n, 3)) * half
    quats = []
    for _ in range(n):
        axis = rng.normal(size=3)
        quats.append(matrix_to_quat(rotvec_to_matrix(axis / np.linalg.norm(axis) * rng.uniform(0, np.radians(30)))))
    names = [f"b{i}" for i in range(n)]
    bodies, joints = _free_bodies(names, [tuple(p) for p in positions])
    colliders = tuple(Collider(f"c{i}", name, "box", (half,) * 3) for i, name in enumerate(names))
    return Mechanism(f"{n}-box heap", bodies, joints, colliders=colliders), positions, np.array(quats)


def box_pairs_at_once(mech: Mechanism, positions: np.ndarray, quats: np.ndarray, repeats: int):
    """(box pairs within the margin, ms of box_box over all candidate pairs, ms of pair_contacts on each)."""
    world = CollisionWorld(mech)
    rot, origin = world_frames(world.shapes, positions, quats)
    ia, ib = world.candidate_pairs(rot, origin, MARGIN)
    sep, normal, _ = separating_axes(rot, origin, world.shapes.size, ia, ib)
    close = np.flatnonzero(sep <= MARGIN)

    def per_pair():
        for k in close:
            pair_contacts(world.shapes, rot, origin, int(ia[k]), int(ib[k]), normal[k], float(sep[k]), MARGIN)

    def at_once():
        box_box(world.shapes, rot, origin, ia, ib, MARGIN)

    best = [min(_seconds(fn) for _ in range(repeats)) for fn in (at_once, per_pair)]
    return len(close), 1e3 * best[0], 1e3 * best[1]


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def preset(name: str):
    mech = load_mechanism(preset_path(name))
    return mech, np.array([b.position for b in mech.bodies]), np.array([b.orientation for b in mech.bodies])


def time_query(mech: Mechanism, positions: np.ndarray, quats: np.ndarray, repeats: int) -> tuple[int, float]:
    world = CollisionWorld(mech)
    found = world.detect(positions, quats, MARGIN)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        world.detect(positions, quats, MARGIN)
        times.append(time.perf_counter() - start)
    return len(found), float(np.median(times))


def run(quick: bool) -> str:
    """The collision benchmark as Markdown (quick: small scenes only)."""
    sizes = (10, 30) if quick else (10, 100, 300)
    scenes = [(f"sphere chain on the ground, n = {n}", sphere_chain(n)) for n in sizes]
    scenes += [(f"dominoes, every other leaning on the next, n = {n}", leaning_dominoes(n)) for n in sizes]
    scenes += [(f"box pyramid, {k} levels", box_pyramid(k)) for k in ((3, 4) if quick else (3, 5, 7))]
    heaps = [(f"heap of {n} turned boxes", box_heap(n)) for n in ((27,) if quick else (27, 216))]
    scenes += heaps
    scenes += [(f"preset `{name}` at its start", preset(name)) for name in list_presets()
               if load_mechanism(preset_path(name)).colliders]
    lines = [f"`CollisionWorld.detect`, median of {REPEATS} queries after a first one, margin {MARGIN * 1e3:g} mm.", "",
             "| scene | bodies | colliders | contacts | ms/query |", "|---|---:|---:|---:|---:|"]
    for label, (mech, positions, quats) in scenes:
        contacts, seconds = time_query(mech, positions, quats, REPEATS)
        lines.append(f"| {label} | {len(mech.bodies)} | {len(mech.colliders)} | {contacts} | {seconds * 1e3:.2f} |")
    lines += ["", "Box pairs of the heaps: `box_box` on all candidate pairs at once against `pair_contacts` (the per-pair",
              f"reference) on each pair within the margin, best of {REPEATS}.", "",
              "| scene | box pairs within the margin | all at once ms | per pair ms |", "|---|---:|---:|---:|"]
    for label, (mech, positions, quats) in heaps:
        pairs, fast, slow = box_pairs_at_once(mech, positions, quats, REPEATS)
        lines.append(f"| {label} | {pairs} | {fast:.1f} | {slow:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small scenes only")
    print(run(parser.parse_args(argv).quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

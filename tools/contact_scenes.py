"""Contact scenes at artist scale, built from a few parameters: n falling dominoes, a pile of boxes
dropped into a bin, a wrecking ball through a brick wall.

Owns these builders and the headers of the presets written from them (presets/dominoes_100.toml,
box_pile.toml, wrecking_wall.toml; tools/generate.py writes them with the others). Longer rows of
dominoes are files on demand, not shipped presets (every Blender test that builds each preset would
build 1000 bodies): ``python -m tools.contact_scenes --dominoes 1000 --out dominoes_1000.toml``.
The dominoes extend presets/dominoes.toml and the wrecking ball reuses presets/wrecking_ball.toml's
chain and ball, so those hand-written files stay the single source of their numbers. A development
tool, not part of the extension: benchmarks and tests build their scenes here.
Units: m, kg, s; Z up. Only the 'maximal' method sees colliders.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Collider, Joint, Mechanism
from addon.solver.presets import preset_path

DOMINO_SPACING = 0.3  # m, as in presets/dominoes.toml


def _box_inertia(mass: float, half: tuple[float, float, float]) -> tuple[float, ...]:
    """Principal moments of a solid box of half sizes `half` (then three zero products of inertia)."""
    hx, hy, hz = half
    return (mass * (hy**2 + hz**2) / 3, mass * (hx**2 + hz**2) / 3, mass * (hx**2 + hy**2) / 3, 0.0, 0.0, 0.0)


def falling_dominoes(n: int) -> Mechanism:
    """presets/dominoes.toml with n dominoes: the first tipped 10 degrees onto the second, the rest
    standing DOMINO_SPACING apart along +x."""
    base = load_mechanism(preset_path("dominoes"))
    tipped, standing = base.bodies[0], base.bodies[1]
    ground, box = base.colliders[0], base.colliders[1]
    names = [f"domino_{i + 1}" for i in range(n)]
    bodies = (tipped,) + tuple(replace(standing, name=name, position=(DOMINO_SPACING * i, 0.0, standing.position[2]))
                               for i, name in enumerate(names) if i)
    joints = tuple(replace(base.joints[0], name=f"{name} free", child=name) for name in names)
    colliders = (ground,) + tuple(replace(box, name=f"{name} box", body=name) for name in names)
    return base.replace(name=f"{n} dominoes", bodies=bodies, joints=joints, colliders=colliders)


def _random_turn(rng: np.random.Generator, max_angle: float) -> tuple[float, float, float, float]:
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    half = 0.5 * rng.uniform(0.0, max_angle)
    return (math.cos(half), *(math.sin(half) * axis))


def box_pile(n: int = 200, half: float = 0.1, seed: int = 15) -> Mechanism:
    """n wooden boxes (half size `half`, 600 kg/m^3) in layers of 5 x 5, each turned by up to 20 degrees
    about a random axis (seeded) and jittered sideways, dropped into a bin: a floor slab and four walls,
    all static world boxes. Centres 3.5 x `half` apart in a layer and between layers (a box turned by
    20 degrees reaches at most 1.7 x `half` from its centre along an axis); the lowest corner of every
    box of the lowest layer starts 1 cm above the floor."""
    rng = np.random.default_rng(seed)
    mass = 600.0 * (2 * half) ** 3
    pitch = 3.5 * half  # centre spacing in a layer and between layers
    inner = 5 * pitch + 2 * half  # bin's inner width
    wall, height = 0.05, 1.2
    bodies, joints, colliders = [], [], []
    for k in range(n):
        layer, cell = divmod(k, 25)
        row, col = divmod(cell, 5)
        x = (col - 2) * pitch + rng.uniform(-0.1, 0.1) * half
        y = (row - 2) * pitch + rng.uniform(-0.1, 0.1) * half
        turn = _random_turn(rng, math.radians(20.0))
        reach = half * float(np.abs(quat_to_matrix(np.array(turn))[2]).sum())  # lowest corner below the centre
        name = f"box_{k + 1}"
        bodies.append(Body(name, mass, position=(x, y, reach + 0.01 + layer * pitch), orientation=turn,
                           inertia=_box_inertia(mass, (half,) * 3)))
        joints.append(Joint(f"{name} free", "free", WORLD, name))
        colliders.append(Collider(f"{name} box", name, "box", (half,) * 3, friction=0.5))
    statics = [Collider("bin floor", WORLD, "box", (0.5 * inner + wall, 0.5 * inner + wall, wall),
                        position=(0.0, 0.0, -wall), friction=0.6)]
    for label, (sx, sy) in {"+x": (1, 0), "-x": (-1, 0), "+y": (0, 1), "-y": (0, -1)}.items():
        size = (wall, 0.5 * inner + 2 * wall, 0.5 * height) if sx else (0.5 * inner, wall, 0.5 * height)
        at = (sx * (0.5 * inner + wall), sy * (0.5 * inner + wall), 0.5 * height)
        statics.append(Collider(f"bin wall {label}", WORLD, "box", size, position=at, friction=0.6))
    return Mechanism(f"{n} boxes into a bin", tuple(bodies), tuple(joints), colliders=tuple(statics + colliders))


def wrecking_wall(rows: int = 10, per_row: int = 10) -> Mechanism:
    """presets/wrecking_ball.toml's chain and ball, its crates replaced by a wall of rows x per_row bricks
    (0.1 x 0.2 x 0.1 m, 1900 kg/m^3, 3.8 kg) in running bond (every other row shifted half a brick,
    2 mm apart in a row),
    one brick thick across the ball's swing, its front face where the crates' was (x = 0.14 m)."""
    base = load_mechanism(preset_path("wrecking_ball"))
    crates = {b.name for b in base.bodies if b.name.startswith("crate")}
    half = (0.05, 0.1, 0.05)
    mass = 1900.0 * 8 * half[0] * half[1] * half[2]
    pitch = 2 * half[1] + 0.002  # a 2 mm joint between the bricks of a row
    bodies, joints, colliders = [], [], []
    for row in range(rows):
        shift = half[1] if row % 2 else 0.0
        for k in range(per_row):
            name = f"brick_{row + 1}_{k + 1}"
            y = (k - 0.5 * (per_row - 1)) * pitch + shift - 0.5 * half[1]
            bodies.append(Body(name, mass, position=(0.14 + half[0], y, half[2] * (2 * row + 1)),
                               inertia=_box_inertia(mass, half)))
            joints.append(Joint(f"{name} free", "free", WORLD, name))
            colliders.append(Collider(f"{name} box", name, "box", half, friction=0.6))
    return base.replace(
        name=f"wrecking ball through a wall of {rows * per_row} bricks",
        bodies=tuple(b for b in base.bodies if b.name not in crates) + tuple(bodies),
        joints=tuple(j for j in base.joints if j.child not in crates) + tuple(joints),
        colliders=tuple(c for c in base.colliders if c.body not in crates) + tuple(colliders))


DOMINOES_HEADER = """Dominoes at artist scale: presets/dominoes.toml made {n} long (tools/contact_scenes.py, written by
`python -m tools.generate`). Giant wooden dominoes 0.05 x 0.25 x 0.5 m (3.75 kg) standing 0.3 m apart along +x
on a ground plane; the first starts tipped 10 degrees onto the second and the row falls one after the other.
Units: m, kg, s, rad. Only the 'maximal' method sees the colliders."""

BOX_PILE_HEADER = """A pile of 200 boxes dropped into a bin (tools/contact_scenes.py, written by `python -m tools.generate`):
0.2 m wooden boxes (4.8 kg) in 8 layers of 5 x 5, 0.35 m apart, each turned by up to 20 degrees about a random
axis (seed 15), the lowest layer 1 cm above the floor. The bin is five static world boxes: a floor slab (top at
z = 0) and four walls 1.2 m high around a 1.95 m square. Friction 0.5 boxes, 0.6 bin.
Units: m, kg, s. Only the 'maximal' method sees the colliders."""

WRECKING_WALL_HEADER = """Wrecking ball through a wall of 100 bricks (tools/contact_scenes.py, written by `python -m tools.generate`):
presets/wrecking_ball.toml's chain of four rods and 111 kg ball, released 60 degrees out, swinging into a wall
of 10 rows of 10 bricks (0.1 x 0.2 x 0.1 m, 3.8 kg, running bond, 2 mm apart in a row) standing on the ground, its front face at
x = 0.14 m, just past the bottom of the swing (about 4.6 m/s). Units: m, kg, s. Only the 'maximal' method
sees the colliders."""


@functools.cache
def contact_presets() -> dict[str, tuple[Mechanism, str]]:
    """The presets built here: file stem -> (mechanism, comment header); built once (Mechanisms are
    immutable), as the 1000 dominoes take a second."""
    return {
        "dominoes_100": (falling_dominoes(100), DOMINOES_HEADER.format(n=100)),
        "box_pile": (box_pile(200), BOX_PILE_HEADER),
        "wrecking_wall": (wrecking_wall(10, 10), WRECKING_WALL_HEADER),
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    from addon.solver.mechfile.write import save_mechanism

    parser = argparse.ArgumentParser(description="Write a row of n falling dominoes as a mechanism file.")
    parser.add_argument("--dominoes", type=int, required=True, help="how many dominoes (2 or more)")
    parser.add_argument("--out", required=True, help="the .toml file to write")
    args = parser.parse_args(argv)
    if args.dominoes < 2:
        parser.error(f"--dominoes: at least 2 (the first falls onto the second), got {args.dominoes}")
    save_mechanism(falling_dominoes(args.dominoes), args.out, header=DOMINOES_HEADER.format(n=args.dominoes))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

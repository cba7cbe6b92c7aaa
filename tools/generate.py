"""Mechanisms built from a few parameters: the N-link pendulum chain and the N-segment scissor lift.

Owns the builders for the parametric examples of seed 000 (§VI-A N-link pendulum, §VI-C scissor lift;
docs/seeds.md) and the presets generated from them (presets/chain_5.toml,
presets/scissor_lift.toml), and writes the contact presets of tools/contact_scenes.py. It does not own the file format (addon/solver/mechfile/) or any dynamics.
A development tool, not part of the extension: tests and benchmarks build their chains with it.
Run ``python -m tools.generate`` from the repository root to rewrite the generated presets.

Conventions shared by both builders: SI units, Z up, all motion in the X-Z plane, every hinge
about world +Y (positive angle by the right-hand rule about +Y, so rotating the downward vector
(0, 0, -L) by theta gives (-L sin theta, 0, -L cos theta)). Each body frame sits at the pivot of the
joint that holds it, and every joint coordinate is 0 at the reference configuration written here.
"""

from __future__ import annotations

import math
from pathlib import Path

from addon.solver.mechfile.write import save_mechanism
from addon.solver.model import WORLD, Body, Joint, Mechanism
from addon.solver.presets import PRESET_DIR
from tools.contact_scenes import contact_presets

Y_AXIS = (0.0, 1.0, 0.0)
GRAVITY = (0.0, 0.0, -9.81)


def rod_inertia(mass: float, length: float, radius: float) -> tuple[float, float, float]:
    """Principal moments about the centre of a solid cylinder whose axis is local Z.

    I_perp = m (3 r^2 + L^2) / 12 about X and Y, I_axial = m r^2 / 2 about Z; radius 0 gives the
    slender rod m L^2 / 12.
    """
    perpendicular = mass * (3.0 * radius**2 + length**2) / 12.0
    return (perpendicular, perpendicular, 0.5 * mass * radius**2)


def quat_about_y(angle: float) -> tuple[float, float, float, float]:
    """Quaternion (w, x, y, z) of a rotation by `angle` (rad) about +Y."""
    return (math.cos(0.5 * angle), 0.0, math.sin(0.5 * angle), 0.0)


def pendulum_chain(n: int, link_length: float = 1.0, link_mass: float = 1.0, radius: float = 0.05,
                   top_angle: float = math.pi / 4) -> Mechanism:
    """An n-link pendulum hanging along -Z, each link a solid rod on a hinge about world +Y.

    Link i (1-based, body "link_i") has its frame at its top pivot (0, 0, -(i-1) L) with identity
    orientation, its centre of mass at (0, 0, -L/2) in body axes, and the inertia of a solid rod of
    the given radius along body Z (`rod_inertia`). Joint "hinge_i" joins link i-1 (or the world) to
    link i at that pivot. q0 is `top_angle` for the first joint and 0 for the others; v0 is 0.

    Parameters
    ----------
    n : int
        Number of links, >= 1.
    link_length, link_mass, radius : float
        Per link, in m, kg, m.
    top_angle : float
        Initial angle of the top hinge, rad (seed 000 §VI-A starts the top link at 45 degrees).
    """
    if n < 1:
        raise ValueError(f"pendulum_chain: n must be >= 1, got {n}")
    inertia = rod_inertia(link_mass, link_length, radius) + (0.0, 0.0, 0.0)
    bodies = []
    joints = []
    for i in range(1, n + 1):
        pivot = (0.0, 0.0, -(i - 1) * link_length)
        bodies.append(Body(name=f"link_{i}", mass=link_mass, position=pivot,
                           com=(0.0, 0.0, -0.5 * link_length), inertia=inertia))
        joints.append(Joint(name=f"hinge_{i}", type="revolute",
                            parent=WORLD if i == 1 else f"link_{i - 1}", child=f"link_{i}",
                            anchor=pivot, axis=Y_AXIS, q0=(top_angle if i == 1 else 0.0,), v0=(0.0,)))
    return Mechanism(name=f"{n}-link pendulum chain", bodies=tuple(bodies), joints=tuple(joints),
                     gravity=GRAVITY, source="generate.pendulum_chain")


def ball_chain(n: int, radius: float = 0.05) -> Mechanism:
    """pendulum_chain's rods (of the given radius, m) on ball joints; the top one starts tilted by (0.5, 0.3, 0) rad."""
    base = pendulum_chain(n, radius=radius)
    joints = tuple(Joint(j.name, "ball", j.parent, j.child, anchor=j.anchor,
                         q0=(0.5, 0.3, 0.0) if i == 0 else (0.0, 0.0, 0.0), v0=(0.0, 0.0, 0.0))
                   for i, j in enumerate(base.joints))
    return base.replace(name=f"{n}-link ball chain", joints=joints)


def scissor_lift(segments: int = 5, link_length: float = 1.0, link_mass: float = 1.0,
                 link_inertia: float = 0.1, link_axial_inertia: float = 0.01, slider_mass: float = 1.0,
                 theta: float = 0.3) -> Mechanism:
    """A hanging scissor lift (seed 000 §VI-C) assembled at angle `theta`.

    Segment n (1-based) is an X of two links pinned at their centres, theta measured from the
    horizontal. With c = cos theta, s = sin theta, L = `link_length`:

    - "seg{n}_a" runs from the left top (0, 0, -(n-1) L s) down-right to (L c, 0, -n L s);
    - "seg{n}_b" runs from the right top (L c, 0, -(n-1) L s) down-left to (0, 0, -n L s).

    Each link frame sits at its top end with local +X along the link (orientation: rotation about
    +Y by theta for "a" links, by pi - theta for "b" links); the centre of mass is at (L/2, 0, 0) and
    the inertia is (`link_axial_inertia`, `link_inertia`, `link_inertia`): `link_inertia` about the
    hinge axis Y as in the paper, and a rigid rod-like tensor (the triangle inequality forbids a
    small moment about both X and Z with a large one about Y).

    Joints, a spanning tree first and then the loop joints (the compiler may choose another tree):
    "top_pin" world->seg1_a at the origin (the fixed upper-left pivot); "slider_track" prismatic
    world->slider along X at (L c, 0, 0), the slider being a point mass `slider_mass`; "slider_pin"
    slider->seg1_b; for n >= 2, "seg{n}_left" seg{n-1}_b->seg{n}_a and "seg{n}_right"
    seg{n-1}_a->seg{n}_b at the ends of the segment above; and "seg{n}_centre" seg{n}_a->seg{n}_b at
    (L c / 2, 0, -(n - 1/2) L s), which closes one loop per segment. One degree of freedom remains;
    all q0 and v0 are 0 (released from rest at `theta`).
    """
    if segments < 1:
        raise ValueError(f"scissor_lift: segments must be >= 1, got {segments}")
    length = link_length
    c, s = math.cos(theta), math.sin(theta)
    inertia = (link_axial_inertia, link_inertia, link_inertia, 0.0, 0.0, 0.0)
    com = (0.5 * length, 0.0, 0.0)
    bodies = [Body(name="slider", mass=slider_mass, position=(length * c, 0.0, 0.0))]
    joints = [
        _hinge("top_pin", WORLD, "seg1_a", (0.0, 0.0, 0.0)),
        Joint(name="slider_track", type="prismatic", parent=WORLD, child="slider",
              anchor=(length * c, 0.0, 0.0), axis=(1.0, 0.0, 0.0), q0=(0.0,), v0=(0.0,)),
        _hinge("slider_pin", "slider", "seg1_b", (length * c, 0.0, 0.0)),
    ]
    for n in range(1, segments + 1):
        top = -(n - 1) * length * s
        bodies.append(Body(name=f"seg{n}_a", mass=link_mass, position=(0.0, 0.0, top),
                           orientation=quat_about_y(theta), com=com, inertia=inertia))
        bodies.append(Body(name=f"seg{n}_b", mass=link_mass, position=(length * c, 0.0, top),
                           orientation=quat_about_y(math.pi - theta), com=com, inertia=inertia))
        if n > 1:
            joints.append(_hinge(f"seg{n}_left", f"seg{n - 1}_b", f"seg{n}_a", (0.0, 0.0, top)))
            joints.append(_hinge(f"seg{n}_right", f"seg{n - 1}_a", f"seg{n}_b", (length * c, 0.0, top)))
    for n in range(1, segments + 1):
        centre = (0.5 * length * c, 0.0, -(n - 0.5) * length * s)
        joints.append(_hinge(f"seg{n}_centre", f"seg{n}_a", f"seg{n}_b", centre))
    return Mechanism(name=f"{segments}-segment scissor lift", bodies=tuple(bodies),
                     joints=tuple(joints), gravity=GRAVITY, source="generate.scissor_lift")


def _hinge(name: str, parent: str, child: str, anchor: tuple[float, float, float]) -> Joint:
    """A revolute joint about world +Y at `anchor`, starting at rest at the reference."""
    return Joint(name=name, type="revolute", parent=parent, child=child, anchor=anchor, axis=Y_AXIS,
                 q0=(0.0,), v0=(0.0,))


CHAIN_5_HEADER = """\
5-link pendulum chain (seed 000 §VI-A, the N-link pendulum benchmark; docs/seeds.md).
GENERATED by tools/generate.py (pendulum_chain(5)); edit the generator, not this file.
Units: m, kg, s, rad. Five 1 m, 1 kg solid rods of radius 0.05 m hang along -Z from the origin,
each on a hinge about world +Y at its top end. Body frames sit at the top pivots, centres of mass
0.5 m below; inertia of a solid rod, I_perp = m (3 r^2 + L^2) / 12, I_axial = m r^2 / 2.
The paper starts the top link at 45 degrees: q0 = pi/4 on hinge_1, the others 0, from rest."""

SCISSOR_LIFT_HEADER = """\
5-segment hanging scissor lift (seed 000 §VI-C, Figs. 9-13; docs/seeds.md).
GENERATED by tools/generate.py (scissor_lift()); edit the generator, not this file.
Units: m, kg, s, rad. Links 1 m, 1 kg (centre of mass at mid-link), inertia 0.1 kg m^2 about the
hinge axis Y (0.1 about the other transverse axis, 0.01 along the link); slider 1 kg on a
frictionless track along X. The paper states none of these numbers: they are this generator's choice.
Reference configuration: assembled at theta = 0.3 rad from the horizontal; released from rest.
seg1_a hangs from the fixed upper-left pivot at the origin, seg1_b from the slider; each segment
is an X of two links pinned at their centres (the seg*_centre joints close the five loops).
One degree of freedom; compare theta(t) with the reduced 1-dof Lagrangian."""


def generated_presets() -> dict[str, tuple[Mechanism, str]]:
    """The presets this module writes: file stem -> (mechanism, comment header)."""
    return {
        "chain_5": (pendulum_chain(5), CHAIN_5_HEADER),
        "scissor_lift": (scissor_lift(), SCISSOR_LIFT_HEADER),
        **contact_presets(),
    }


def write_presets(directory: Path = PRESET_DIR) -> list[Path]:
    """Write every generated preset into `directory`; returns the paths written."""
    paths = []
    for stem, (mechanism, header) in generated_presets().items():
        path = Path(directory) / f"{stem}.toml"
        save_mechanism(mechanism, path, header=header)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_presets():
        print(f"wrote {written}")

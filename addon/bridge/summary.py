"""What a setup was read as, in words, for Validate's and Bake's reports and the panel's last-result area:
bodies, joints by type, loops, free bodies, prescribed joints, contact shapes, the bodies that start from
their keys and the frames blended into the keys after the bake range, and the settings read but not
simulated (SceneMechanism.ignored, with their effect). Formatting only; read.py reads.

Every body hangs from the world by exactly one joint of the spanning tree (a body nothing holds by a
free joint, a "free body"), so the joints beyond the bodies' count close loops: loops = joints - bodies.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..solver.model import WORLD
from .read import SceneMechanism


@dataclass(frozen=True)
class ReadCounts:
    """How many bodies, joints (by type; free bodies' joints excluded), loops, free bodies, prescribed
    joints and collision shapes a setup read."""

    bodies: int
    joints: dict[str, int]
    loops: int
    free: int
    prescribed: int
    colliders: int

    @property
    def joint_count(self) -> int:
        return sum(self.joints.values())


def _plural(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def counts(read: SceneMechanism) -> ReadCounts:
    mech = read.mechanism
    holds_free = [j.type == "free" and WORLD in (j.parent, j.child) for j in mech.joints]
    by_type = Counter(j.type for j, free in zip(mech.joints, holds_free) if not free)
    return ReadCounts(
        bodies=len(mech.bodies),
        joints=dict(sorted(by_type.items())),
        loops=len(mech.joints) - len(mech.bodies),
        free=sum(holds_free),
        prescribed=sum(j.prescribed is not None for j in mech.joints),
        colliders=len(mech.colliders),
    )


def lines(read: SceneMechanism) -> list[str]:
    """One line of counts, then one per setting read but not simulated."""
    c = counts(read)
    kinds = ", ".join(f"{n} {kind}" for kind, n in c.joints.items())
    joints = _plural(c.joint_count, "joint") + (f" ({kinds})" if kinds else "")
    line = (f"Read {read.setup!r}: {_plural(c.bodies, 'body', 'bodies')}, {joints}, {_plural(c.loops, 'loop')}, "
            f"{_plural(c.free, 'free body', 'free bodies')}, {_plural(c.prescribed, 'prescribed joint')}")
    if read.method == "maximal":
        line += f", {_plural(c.colliders, 'collision shape')}"
    return [line] + _handover(read) + list(read.ignored)


def _handover(read: SceneMechanism) -> list[str]:
    """A line naming the bodies that start from their keys and the frames baked and blended, when any."""
    out = []
    if read.from_keys:
        out.append(f"Start from the keys before frame {read.frame_start}: {', '.join(read.from_keys)}")
    if read.blend_frames:
        out.append(f"Frames {read.frame_start}-{read.frame_end - read.blend_frames}, then "
                   f"{_plural(read.blend_frames, 'frame')} blended into the keys")
    return out


def store(diagnostics, read: SceneMechanism | None) -> None:
    """Put `lines(read)` on a setup's diagnostics (the panel's last-result area), one per line; None
    (the setup has errors) clears them, so the panel never shows what an earlier reading found."""
    diagnostics.read = "" if read is None else "\n".join(lines(read))

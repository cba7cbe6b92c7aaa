"""Method advice: what a method can run on a Mechanism but not run well, as sentences for the user.

Owns the checks that never refuse a mechanism (errors belong to mechfile validation and the compilers)
but say when another method would do better; the Blender reader prefixes each with the setup it read and
the command line with the file. Each check cites the measurement behind it in docs/benchmarks_maximal.md.
"""

from __future__ import annotations

import numpy as np

from .mass import inertia_matrix
from .model import Mechanism

ROPE_LINKS = 10  # ball joints on slender links from which the tree method is advised against
SLENDER = 0.05  # a link is slender when its smallest principal moment is below this fraction of its largest


def method_advice(mechanism: Mechanism, method: str) -> list[str]:
    """Advice on running `mechanism` with `method` (a METHODS name); empty when there is none."""
    return _rope_advice(mechanism) if method == "tree" else []


def _rope_advice(mechanism: Mechanism) -> list[str]:
    """Ropes and tails of many slender ball-jointed links: the tree method steps them by its link-wise Lagrangian
    (tree/linkwise.py), which keeps each link's spin and runs them at ordinary time steps, but the Maximal method's
    C step is 2 to 8 times faster on them (10 to 100 links, the same run; docs/benchmarks_maximal.md)."""
    moments = {b.name: np.linalg.eigvalsh(inertia_matrix(b.inertia)) for b in mechanism.bodies}
    slender = [j.name for j in mechanism.joints if j.type in ("ball", "free")
               and moments[j.child][0] < SLENDER * max(moments[j.child][-1], 1e-300)]
    if len(slender) < ROPE_LINKS:
        return []
    return [f"{len(slender)} ball joints on slender links (a rope or tail, e.g. {slender[0]!r}): the tree method "
            "runs them, but the Maximal method steps long chains of them several times faster"]

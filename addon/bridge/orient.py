"""Joint directions of a scene's mechanism: every body hangs from the world, parent -> child.

Owns the walk that orients a scene's joints (rigid body constraints name their two objects in either
order) and gives each body no joint reaches a free joint. No bpy. What a reversed joint is belongs to
solver/joint_reverse.py; tree/compile.py orients the joints of mechanism files in its own walk.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from ..solver.joint_reverse import reversed_joint
from ..solver.model import WORLD, Joint


def orient_from_world(bodies: list[str], joints: list[Joint], errors: list[str], what: str) -> list[Joint]:
    """Reverse joints so that every body is reached from the world going parent -> child.

    A breadth-first search over the undirected joint graph from the world picks the tree; a joint
    the search crosses child-first is reversed (solver/joint_reverse.py). Bodies not connected to the
    world get a free joint. A joint with no reverse appends an error naming it (as `what` 'name') to
    `errors` and is swapped as it stands, so reading can go on to find further problems.
    """
    joints = list(joints)
    links: dict[str, list[int]] = {}
    for i, j in enumerate(joints):
        links.setdefault(j.parent, []).append(i)
        links.setdefault(j.child, []).append(i)
    reached = {WORLD}
    free: list[Joint] = []
    for root in [WORLD] + bodies:
        if root not in reached:
            free.append(Joint(name=f"{root} (free)", type="free", parent=WORLD, child=root))
            reached.add(root)
        queue = deque([root])
        while queue:
            name = queue.popleft()
            for i in links.get(name, []):
                j = joints[i]
                other = j.child if j.parent == name else j.parent
                if other in reached:
                    continue
                if j.child == name:
                    flipped = reversed_joint(j)
                    if flipped is None:
                        errors.append(
                            f"{what} {j.name!r}: a {j.type} joint from {j.parent!r} to {j.child!r} must be "
                            "turned round to hang from the world; swap its two objects"
                        )
                        flipped = replace(j, parent=j.child, child=j.parent)
                    joints[i] = flipped
                reached.add(other)
                queue.append(other)
    return joints + free

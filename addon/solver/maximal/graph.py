"""The body/constraint graph of Baraff's saddle-point matrix and its children-before-parents ordering.

Owns topology only (seed 002 §7, Appendix A `ordermatrix`). Nodes
0..n-1 are bodies, nodes n..n+m-1 are constraints; an edge joins constraint i to each body it acts on.
The world is not a node: a constraint on one body is anchored to the world. For pairwise constraints
forming a tree over the bodies plus the world, this graph is a forest with at most one world-anchored
constraint per component. Each component is rooted at its anchor when it has one (a leaf constraint
node would have a zero pivot), else at its lowest-numbered body, and ordered by an iterative depth-first
post-order, so every node comes after all its children and block LDL^T has no fill-in.

`split_loops` picks the primary spanning forest and the loop-closing (auxiliary) constraints of a
cyclic graph; `ladder`, `net`, `crystal` and `loop_chain` build seed 003's cyclic test graphs (Fig. 9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class TopologyError(ValueError):
    """The primary constraints do not form a tree over the bodies and the world."""


@dataclass(frozen=True)
class TreeOrder:
    """A rooted spanning forest of the body/constraint graph.

    Attributes
    ----------
    n_bodies : int
        Nodes ``0..n_bodies-1`` are bodies, the rest constraints (node ``n_bodies + i`` is constraint i).
    parent : numpy.ndarray
        ``(n_nodes,)`` parent node of each node, -1 at a root.
    forward : tuple of int
        Every node once, each after all its children (leaves to roots).
    children : tuple of tuple of int
        Children of each node.
    """

    n_bodies: int
    parent: np.ndarray
    forward: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    @property
    def backward(self) -> tuple[int, ...]:
        """Roots to leaves: the reverse of ``forward``."""
        return self.forward[::-1]

    def is_constraint(self, node: int) -> bool:
        return node >= self.n_bodies


def order_tree(n_bodies: int, constraint_bodies: list[tuple[int, ...]]) -> TreeOrder:
    """Root and order the graph of primary constraints.

    Parameters
    ----------
    n_bodies : int
        Number of bodies.
    constraint_bodies : list of tuple of int
        For each primary constraint, the one body (anchored to the world) or two bodies it acts on.

    Raises
    ------
    TopologyError
        A constraint acting on no body, on more than two bodies or twice on one body, a constraint
        closing a loop (also through the world: two anchors in one component): such constraints
        must be auxiliary rows.
    """
    n_nodes = n_bodies + len(constraint_bodies)
    adjacency: list[list[int]] = [[] for _ in range(n_nodes)]
    anchors = []
    for i, bodies in enumerate(constraint_bodies):
        node = n_bodies + i
        if not 1 <= len(bodies) <= 2 or len(set(bodies)) != len(bodies):
            raise TopologyError(f"constraint {i}: a primary constraint acts on one or two distinct bodies, got {bodies}")
        for body in bodies:
            if not 0 <= body < n_bodies:
                raise TopologyError(f"constraint {i}: body index {body} outside 0..{n_bodies - 1}")
            adjacency[node].append(body)
            adjacency[body].append(node)
        if len(bodies) == 1:
            anchors.append(node)
    parent = np.full(n_nodes, -2, dtype=np.int64)  # -2: not reached yet
    forward: list[int] = []
    for root in anchors + list(range(n_bodies)):
        if parent[root] != -2:
            if root in anchors and parent[root] != -1:
                raise TopologyError(
                    f"constraint {root - n_bodies}: second world anchor in one component closes a loop "
                    "through the world; make it an auxiliary constraint")
            continue
        parent[root] = -1
        stack = [(root, iter(adjacency[root]))]
        while stack:
            node, neighbours = stack[-1]
            for nxt in neighbours:
                if nxt == parent[node]:
                    continue
                if parent[nxt] != -2:
                    which = node if node >= n_bodies else nxt
                    raise TopologyError(
                        f"constraint {which - n_bodies} closes a loop; make it an auxiliary constraint")
                parent[nxt] = node
                stack.append((nxt, iter(adjacency[nxt])))
                break
            else:
                stack.pop()
                forward.append(node)
    children: list[list[int]] = [[] for _ in range(n_nodes)]
    for node in forward:
        if parent[node] >= 0:
            children[parent[node]].append(node)
    parent.flags.writeable = False
    return TreeOrder(n_bodies, parent, tuple(forward), tuple(tuple(c) for c in children))


def split_loops(n_bodies: int, constraint_bodies: list[tuple[int, ...]],
                rows: list[int] | None = None) -> tuple[list[int], list[int]]:
    """Split constraints into primary ones (a spanning forest over bodies plus the world) and loop closers.

    Union-find over the bodies and the world (a one-body constraint joins its body to the world);
    constraints are taken by decreasing ``rows`` (stable), so high-dimensional joints stay in the tree
    and the auxiliary row count k stays small. Constraints on more than two
    bodies are always auxiliary.

    Returns
    -------
    primary, auxiliary : list of int
        Constraint indices, each list in increasing order.
    """
    root = list(range(n_bodies + 1))  # n_bodies: the world

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    weights = rows if rows is not None else [0] * len(constraint_bodies)
    primary, auxiliary = [], []
    for i in sorted(range(len(constraint_bodies)), key=lambda i: -weights[i]):
        bodies = constraint_bodies[i]
        ends = (bodies[0], n_bodies) if len(bodies) == 1 else tuple(bodies)
        if len(ends) != 2 or ends[0] == ends[1]:
            auxiliary.append(i)
            continue
        a, b = find(ends[0]), find(ends[1])
        if a == b:
            auxiliary.append(i)
        else:
            root[a] = b
            primary.append(i)
    return sorted(primary), sorted(auxiliary)


def ladder(rungs: int) -> tuple[int, list[tuple[int, int]]]:
    """Seed 003's ladder graph (Fig. 9b): two rails of `rungs` nodes joined by rungs; 4-node cycles.

    Returns the node count and the edges (node pairs).
    """
    edges = [(2 * i, 2 * i + 1) for i in range(rungs)]
    edges += [(2 * i + s, 2 * i + 2 + s) for i in range(rungs - 1) for s in (0, 1)]
    return 2 * rungs, edges


def net(rows: int, cols: int) -> tuple[int, list[tuple[int, int]]]:
    """Seed 003's square net (Fig. 9c): a rows x cols grid; inner nodes lie on four cycles."""
    node = lambda r, c: r * cols + c  # noqa: E731
    edges = [(node(r, c), node(r, c + 1)) for r in range(rows) for c in range(cols - 1)]
    edges += [(node(r, c), node(r + 1, c)) for r in range(rows - 1) for c in range(cols)]
    return rows * cols, edges


def crystal(side: int) -> tuple[int, list[tuple[int, int]]]:
    """Seed 003's cubic crystal (Fig. 9d): a side^3 grid with edges along x, y and z."""
    node = lambda i, j, k: (i * side + j) * side + k  # noqa: E731
    edges = []
    for i in range(side):
        for j in range(side):
            for k in range(side):
                for di, dj, dk in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                    a, b, c = i + di, j + dj, k + dk
                    if a < side and b < side and c < side:
                        edges.append((node(i, j, k), node(a, b, c)))
    return side ** 3, edges


def loop_chain(segments: int) -> tuple[int, list[tuple[int, int]]]:
    """Seed 003's chain of 4-link loops (Fig. 9a): segment s is bodies 4s..4s+3 joined in a cycle,
    and its body 4s+2 is joined to the next segment's body 4s+4; one independent loop per segment."""
    edges = []
    for s in range(segments):
        a = 4 * s
        edges += [(a, a + 1), (a + 1, a + 2), (a + 2, a + 3), (a + 3, a)]
        if s + 1 < segments:
            edges.append((a + 2, a + 4))
    return 4 * segments, edges

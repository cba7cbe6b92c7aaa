"""advice.method_advice: the tree method is advised against on ropes of slender ball-jointed links, and only there."""

from __future__ import annotations

from dataclasses import replace

from addon.solver.advice import ROPE_LINKS, method_advice
from addon.solver.model import Mechanism
from tools.generate import pendulum_chain


def rope(links: int, balls: int, radius: float = 0.05) -> Mechanism:
    """A chain of `links` rods along -Z (slender at radius 0.05 m: axial moment 1.5% of the other two),
    its first `balls` joints ball joints and the rest hinges."""
    chain = pendulum_chain(links, radius=radius)
    return chain.replace(joints=tuple(replace(j, type="ball", axis=(0.0, 0.0, 1.0), q0=(), v0=()) if i < balls else j
                                      for i, j in enumerate(chain.joints)))


def test_a_rope_of_slender_ball_links_is_advised_to_the_maximal_method_in_the_tree_method_only():
    mechanism = rope(ROPE_LINKS + 2, ROPE_LINKS)
    advice = method_advice(mechanism, "tree")
    assert advice == [f"{ROPE_LINKS} ball joints on slender links (a rope or tail, e.g. 'hinge_1'): the tree method "
                      "runs them, but the Maximal method steps long chains of them several times faster"]
    for method in ("maximal", "tree-rk4", "maximal-rk4", "vehicle"):
        assert method_advice(mechanism, method) == [], method


def test_no_advice_below_the_rope_length_or_on_stout_links():
    assert method_advice(rope(ROPE_LINKS + 2, ROPE_LINKS - 1), "tree") == []
    assert method_advice(rope(ROPE_LINKS, ROPE_LINKS, radius=0.3), "tree") == []  # axial moment 42% of the others

"""Long-run physics numbers of the tree method, as quoted in the issue notes and docs.

Usage: python -m benchmarks.tree_physics
Prints: the pendulum's energy band, window-mean difference and slope over 5000 s at dt = 0.01 (and
RK4's slope over 100 s at the same step), and for each closed-chain preset over 120 s: the largest
loop residual over all rows and steps, Newton iterations, energy band and window-mean difference.
"""

from __future__ import annotations

import numpy as np

from addon.solver.integrator import simulate
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import Body, Joint, Mechanism
from addon.solver.presets import preset_path
from addon.solver.tree import midpoint
from addon.solver.tree.compile import compile_tree

DT = 0.01
CLOSED_CHAINS = ("closed_chain_device", "four_bar", "scissor_lift", "slider_crank")


def pendulum() -> Mechanism:
    bob = Body("bob", 1.0, (0.0, 0.0, -1.0), inertia=(0.004, 0.004, 0.004, 0.0, 0.0, 0.0))
    return Mechanism("pendulum", (bob,), (Joint("hinge", "revolute", "world", "bob", axis=(1, 0, 0), q0=(0.5,)),))


def main() -> None:
    model = compile_tree(pendulum())
    state, *_ = midpoint.initial_state(model)
    e = np.array([midpoint.step(model, state, DT).energy for _ in range(500_000)])
    window = 50_000
    print(f"pendulum 5000 s: energy band {np.ptp(e):.3e} J, |mean(last 500 s) - mean(first 500 s)| "
          f"{abs(e[-window:].mean() - e[:window].mean()):.3e} J, slope {np.polyfit(DT * np.arange(len(e)), e, 1)[0]:.3e} J/s")
    rk = simulate(pendulum(), DT, 10_000, method="tree-rk4")
    print(f"RK4 100 s: slope {np.polyfit(rk.t, rk.energy, 1)[0]:.3e} J/s, drift {rk.energy[-1] - rk.energy[0]:.3e} J")
    for name in CLOSED_CHAINS:
        traj = simulate(load_mechanism(preset_path(name)), DT, 12_000)
        e = traj.energy[1:]
        window = len(e) // 10
        print(f"{name} 120 s: max |h| {traj.constraint_residual.max():.2e}, Newton mean "
              f"{traj.newton_iterations.mean():.2f} max {traj.newton_iterations.max()}, energy band {np.ptp(e):.3e}, "
              f"window-mean difference {abs(e[-window:].mean() - e[:window].mean()):.3e}")


if __name__ == "__main__":
    main()

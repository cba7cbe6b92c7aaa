"""The method registry and simulate() (our solve_ivp): the one module that imports every method.

METHODS maps a method name to its Integrator subclass (protocol.py); an unknown or not-yet-available
method gets a message naming the valid ones. The bake operator, the CLI, tests and benchmarks all
drive methods through make_integrator() or simulate().

The tree and maximal methods' runs are verified (verify.py): make_integrator refuses a start whose joints
do not hold (an AssemblyError naming the joint and the gap), and simulate() turns a run that breaks a
guarantee (finite, joints hold, a conservative setup's energy bounded) into a failed one whose message
names the step, the time, the worst joint and, for step-size trouble, a time step that works (tried:
simulate_plain runs the same horizon at dt/2, dt/4, dt/8 within a budget).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .maximal.forward_integrator import ForwardIntegrator
from .maximal.integrator import MaximalIntegrator
from .model import Mechanism, MechanismError
from .protocol import Integrator
from .trajectory import AssemblyError, SolverError, StepTooLargeError, Trajectory
from .tree.integrator import TreeGalerkin, TreeMidpoint, TreeRK4
from .verify import describe_gap, first_gap, verify
from .vehicles.integrator import VehicleIntegrator

ProgressCallback = Callable[[int, int], bool]

METHODS: dict[str, type[Integrator] | None] = {
    "tree": TreeMidpoint,
    "tree-rk4": TreeRK4,
    "vehicle": VehicleIntegrator,
    "maximal": MaximalIntegrator,
    "maximal-rk4": ForwardIntegrator,
}
VERIFIED = ("tree", "maximal")  # the methods whose runs verify.py checks (the baselines are references)
HALVINGS = 3  # smaller steps simulate() tries for a failed run: dt/2, dt/4, dt/8
SEARCH_BUDGET = 200_000  # steps those tries may take in all


def make_integrator(mechanism: Mechanism, method: str = "tree", dt: float = 0.01, tol: float = 1e-10) -> Integrator:
    """The integrator for `method` at `mechanism.order` (above 2: the 'tree' method's Galerkin integrator).
    Raises ValueError for an unknown or not yet available method, MechanismError for an order above 2 with
    another method, or a mechanism the Galerkin integrator cannot run yet (galerkin.refusals)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    cls = METHODS[method]
    if cls is None:
        available = ", ".join(k for k, v in METHODS.items() if v is not None)
        raise ValueError(f"method {method!r} is not available yet; available methods: {available}")
    if mechanism.order != 2 and method != "tree":
        raise MechanismError(f"{mechanism.source}: accuracy order {mechanism.order} is for the 'tree' method; the "
                             f"{method!r} method runs at order 2 only")
    integrator = TreeGalerkin(mechanism, dt, tol, order=mechanism.order) if mechanism.order != 2 else cls(
        mechanism, dt, tol)
    if method in VERIFIED:
        _check_start(integrator)
    return integrator


def _check_start(integrator: Integrator) -> None:
    """Raise AssemblyError when a joint of the assembled start does not hold (a loop that cannot close,
    or closed on a flipped branch that the method's own rows cannot see)."""
    start = integrator.trajectory()
    gap = first_gap(integrator.mechanism, start.bodies, start.poses)
    if gap is not None:
        raise AssemblyError(f"cannot assemble the mechanism at t = 0 s: "
                            f"{describe_gap(integrator.mechanism, start.bodies, start.poses, gap[1])}; check the "
                            "anchors, axes and starting coordinates of the joints in its loop", step=0, time=0.0)


def simulate_plain(mechanism: Mechanism, dt: float, steps: int, method: str = "tree", tol: float = 1e-10,
                   progress: ProgressCallback | None = None) -> Trajectory:
    """`steps` steps of size `dt` as the method makes them, unverified (simulate() verifies)."""
    integrator = make_integrator(mechanism, method, dt, tol)
    failure = None
    for k in range(steps):
        try:
            integrator.step()
        except SolverError as err:
            failure = err
            break
        if progress is not None and progress(k + 1, steps) is False:
            integrator.status = "cancelled"
            integrator.message = f"cancelled after step {k + 1} of {steps}"
            break
    trajectory = integrator.trajectory()
    if failure is not None:
        trajectory.info["error"] = type(failure).__name__
    return trajectory


def simulate(mechanism: Mechanism, dt: float, steps: int, method: str = "tree", tol: float = 1e-10,
             progress: ProgressCallback | None = None) -> Trajectory:
    """Integrate `steps` steps of size `dt`. progress(step, steps) returning False cancels.

    On solver trouble the returned Trajectory has status 'failed', the message names the step and
    time, and holds every step done before it; a cancel gives status 'cancelled'. A run of a VERIFIED
    method that breaks a guarantee of verify.py fails the same way, from the first sample that breaks
    it; a failed run's message ends with a smaller time step that runs the same horizon (or says none
    of dt/2 ... dt/8 does).
    """
    trajectory = simulate_plain(mechanism, dt, steps, method, tol, progress)
    if method not in VERIFIED or trajectory.status == "cancelled":
        return trajectory
    error = verify(mechanism, trajectory, method)  # a failed run's samples too: the first broken guarantee
    if error is not None:
        trajectory = _cut(trajectory, error)
    elif trajectory.status == "finished":
        return trajectory
    if trajectory.info.get("error") != StepTooLargeError.__name__:  # that one names its stable step already
        trajectory.message += _smaller_step(mechanism, dt, steps, method, tol)
    return trajectory


def _cut(trajectory: Trajectory, error: SolverError) -> Trajectory:
    """`trajectory` as a failed run: the samples before `error`'s step, its message."""
    keep = max(int(error.step), 1)
    return replace(trajectory, t=trajectory.t[:keep], poses=trajectory.poses[:keep], q=trajectory.q[:keep],
                   energy=trajectory.energy[:keep], constraint_residual=trajectory.constraint_residual[:keep],
                   newton_iterations=trajectory.newton_iterations[:keep - 1], status="failed", message=str(error),
                   info={**trajectory.info, "error": type(error).__name__})


def _smaller_step(mechanism: Mechanism, dt: float, steps: int, method: str, tol: float) -> str:
    """A sentence naming the largest of dt/2, dt/4, dt/8 whose run of the same horizon is finished and
    verified, or saying that none within the search budget is."""
    spent, tried = 0, 1
    for k in range(1, HALVINGS + 1):
        fine, count = dt / 2 ** k, steps * 2 ** k
        spent += count
        if spent > SEARCH_BUDGET:
            break
        tried = 2 ** k
        trial = simulate_plain(mechanism, fine, count, method, tol)
        if trial.status == "finished" and verify(mechanism, trial, method) is None:
            return f"; dt = {fine:.6g} s runs the same {steps * dt:.6g} s and passes every check"
    if tried == 1:
        return f"; a run of {steps} steps is too long to try smaller steps here: try dt/2 or less"
    return (f"; no time step down to dt/{tried} = {dt / tried:.3g} s tried within {SEARCH_BUDGET} steps ran the "
            f"same {steps * dt:.6g} s and passed every check: try a smaller one or the other method")

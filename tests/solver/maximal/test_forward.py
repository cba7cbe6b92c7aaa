"""Baraff's stabilised forward dynamics under RK4 (maximal-rk4): analytic periods, drift control, and
the tree method's RK4 trajectories on the same mechanisms (seed 002)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from addon.solver.integrator import make_integrator
from addon.solver.maximal import fillin
from addon.solver.maximal.forward import rotate
from addon.solver.maximal.forward_integrator import ForwardIntegrator
from addon.solver.maximal.joints import ANGLE, frames
from addon.solver.mechfile.read import load_mechanism
from addon.solver.model import WORLD, Body, Force, Joint, Mechanism, Motor, Spring
from addon.solver.presets import PRESET_DIR
from tools.generate import pendulum_chain


def all_joint_types() -> Mechanism:
    """Every joint type of the Mechanism, with coordinate springs, dampers, a velocity servo and a force."""
    inertia = (0.02, 0.03, 0.04, 0.001, -0.002, 0.0015)

    def body(name, z, x=0.0):
        return Body(name, 1.0 + 0.1 * len(name), position=(x, 0.0, z), com=(0.05, 0.0, -0.2), inertia=inertia)

    bodies = (body("a", 0.0), body("b", -0.5), body("c", -1.0), body("d", -1.5), body("e", -2.0),
              body("f", 0.0, 1.0), body("g", -0.5, 1.0), body("h", 0.0, -1.0))
    joints = (
        Joint("ball", "ball", WORLD, "a", anchor=(0, 0, 0), q0=(0.2, -0.1, 0.3), v0=(0.5, -0.3, 0.2)),
        Joint("universal", "universal", "a", "b", anchor=(0, 0, -0.5), axis=(1, 0, 0), axis2=(0, 1, 0),
              q0=(0.3, -0.2), v0=(0.4, 0.1)),
        Joint("cylindrical", "cylindrical", "b", "c", anchor=(0, 0, -1.0), axis=(0, 0, 1), q0=(0.4, 0.05),
              v0=(1.0, 0.2), stiffness=5.0, rest=(0.0, 0.1), damping=0.05),
        Joint("revolute", "revolute", "c", "d", anchor=(0, 0, -1.5), axis=(0, 1, 0), q0=(0.5,), v0=(-0.5,),
              motor=Motor("velocity", target_velocity=1.0, gain=0.3)),
        Joint("prismatic", "prismatic", "d", "e", anchor=(0, 0, -2.0), axis=(0, 0, 1), q0=(0.1,), v0=(0.3,),
              stiffness=10.0, damping=0.2),
        Joint("free", "free", WORLD, "f", anchor=(1, 0, 0), q0=(0.1, 0.0, 0.2, 0.1, 0.2, -0.1),
              v0=(0.3, 0.1, 1.0, 0.5, -0.4, 0.3)),
        Joint("fixed", "fixed", "f", "g", anchor=(1, 0, -0.5)),
        Joint("planar", "planar", WORLD, "h", anchor=(-1, 0, 0), axis=(0, 0, 1), axis2=(1, 0, 0),
              q0=(0.1, 0.2, 0.3), v0=(0.5, -0.2, 1.0)),
    )
    forces = (Force("push", "c", point=(0.1, 0, -1.0), force=(0.5, 0.2, 0.0)),)
    return Mechanism("all joint types", bodies, joints, forces=forces)


def ball_chain(n: int) -> Mechanism:
    """n rods hanging on ball joints, the top one swung out and spinning."""
    bodies, joints = [], []
    for i in range(n):
        bodies.append(Body(f"link_{i}", 1.0, position=(0, 0, -i), com=(0, 0, -0.5),
                           inertia=(0.085, 0.085, 0.0013, 0, 0, 0)))
        joints.append(Joint(f"ball_{i}", "ball", WORLD if i == 0 else f"link_{i - 1}", f"link_{i}",
                            anchor=(0, 0, -i), q0=(0.6, 0.3, 0.0) if i == 0 else (0.2, 0.0, 0.1),
                            v0=(0.0, 0.5, 1.0) if i == 0 else (0.0, 0.0, 0.0)))
    return Mechanism("ball chain", tuple(bodies), tuple(joints))


def run(integrator, steps):
    for _ in range(steps):
        integrator.step()
    return integrator.trajectory()


@pytest.mark.parametrize("name,tol", [
    ("all_joint_types", 1e-10), ("ball_chain", 1e-10), ("chain_5", 1e-10), ("scissor_lift", 1e-10),
    # point-mass links: the maximal model floors their inertia to 1e-7 of m (1 m)^2 (bodies.INERTIA_FLOOR),
    # a model difference of that relative size
    ("four_bar", 1e-7), ("closed_chain_device", 1e-6)])
@pytest.mark.heavy
def test_same_body_trajectories_as_tree_rk4(name, tol):
    """0.2 s at dt = 1 ms: every body pose equals the tree method's RK4 (open chains, closed loops)."""
    mech = {"all_joint_types": all_joint_types, "ball_chain": lambda: ball_chain(3)}.get(
        name, lambda: load_mechanism(PRESET_DIR / f"{name}.toml"))()
    ours = run(ForwardIntegrator(mech, 1e-3), 200)
    tree = run(make_integrator(mech, "tree-rk4", 1e-3), 200)
    assert ours.bodies == tree.bodies
    assert np.abs(ours.poses - tree.poses).max() < tol
    assert ours.constraint_residual.max() < 1e-9


@pytest.mark.parametrize("name", ["all_joint_types", "slider_crank"])
def test_velocity_product_matches_finite_differences(name):
    """Gdot zdot in closed form equals a central difference of G along the motion, for every row kind
    (translation, quaternion, universal, prescribed angle), at random velocities."""
    mech = all_joint_types() if name == "all_joint_types" else load_mechanism(PRESET_DIR / f"{name}.toml")
    integ = ForwardIntegrator(mech, 1e-3)
    run(integ, 5)
    dyn, s = integ.dynamics, integ.state
    zdot = np.concatenate([s.v, s.w], axis=1) + np.random.default_rng(0).standard_normal((len(s.v), 6))
    closed = dyn.velocity_product(s.x, s.q, zdot, frames(dyn.model.joints, s.x, s.q))
    eps = 1e-5
    jac = [dyn.row_values(s.x + h * zdot[:, :3], rotate(s.q, h * zdot[:, 3:]), s.row_winding)[1] for h in (eps, -eps)]
    central = (dyn.apply(jac[0], dyn.a, dyn.b, zdot) - dyn.apply(jac[1], dyn.a, dyn.b, zdot)) / (2 * eps)
    kinds = set(dyn.row_kind.tolist())
    assert len(kinds) >= 7 if name == "all_joint_types" else ANGLE in kinds
    np.testing.assert_allclose(closed, central, rtol=0, atol=1e-8 * max(1.0, np.abs(central).max()))


@pytest.mark.heavy
def test_pendulum_small_angle_period():
    """A rod on a hinge released at 0.02 rad swings with T = 2 pi sqrt(I_pivot / (m g d)) (1 + theta^2/16)."""
    theta0, length, mass, radius = 0.02, 1.0, 1.0, 0.05
    mech = pendulum_chain(1, length, mass, radius, top_angle=theta0)
    dt = 5e-3
    traj = run(ForwardIntegrator(mech, dt), 700)
    com_x = traj.poses[:, 0, 0] - 0.5 * length * 2 * (traj.poses[:, 0, 4] * traj.poses[:, 0, 6]
                                                         + traj.poses[:, 0, 3] * traj.poses[:, 0, 5])
    # com_x = x_frame + R[0, 2] * (-L/2); upward zero crossings, linearly interpolated
    up = np.nonzero((com_x[:-1] < 0) & (com_x[1:] >= 0))[0]
    crossings = traj.t[up] - com_x[up] * dt / (com_x[up + 1] - com_x[up])
    period = np.mean(np.diff(crossings))
    inertia_pivot = mass * (3 * radius**2 + length**2) / 12 + mass * (length / 2) ** 2
    expected = 2 * math.pi * math.sqrt(inertia_pivot / (mass * 9.81 * length / 2)) * (1 + theta0**2 / 16)
    assert len(crossings) >= 2
    assert abs(period / expected - 1) < 2e-6


@pytest.mark.heavy
def test_joint_drift_bounded_with_stabilisation():
    """Ball chain, dt = 10 ms, 4 s: without stabilisation the joints drift apart, growing; Baumgarte keeps
    the drift bounded; projection holds it at the projection tolerance."""
    mech = ball_chain(3)
    residual = {stab: run(ForwardIntegrator(mech, 0.01, stabilisation=stab), 400).constraint_residual
                for stab in ("none", "baumgarte", "projection")}
    none, baumgarte = residual["none"], residual["baumgarte"]
    assert none[200:].max() > 3 * none[:200].max() > 1e-8  # grows
    assert baumgarte[200:].max() < 2 * baumgarte[:200].max() < 1e-5  # bounded
    assert residual["projection"].max() < 1e-9


@pytest.mark.heavy
def test_spring_and_damper_on_a_free_body():
    """A free body hanging from the world on a spring-damper bobs at sqrt(k/m - (c/2m)^2) and decays
    as exp(-c t / 2m) about the static stretch m g / k."""
    m, k, c = 2.0, 50.0, 0.4
    body = Body("weight", m, position=(0, 0, -1.0), inertia=(0.1, 0.1, 0.1, 0, 0, 0))
    mech = Mechanism("spring", (body,), (Joint("free", "free", WORLD, "weight", anchor=(0, 0, -1.0),
                                                  q0=(0, 0, 0.1, 0, 0, 0)),),
                     springs=(Spring("spring", WORLD, "weight", point_a=(0, 0, 0), stiffness=k, rest_length=1.0,
                                     damping=c),))
    dt = 2e-3
    traj = run(ForwardIntegrator(mech, dt), 1000)
    z = traj.poses[:, 0, 2] - (-1.0 - m * 9.81 / k)  # displacement from equilibrium
    omega = math.sqrt(k / m - (c / (2 * m)) ** 2)
    z0 = 0.1 + m * 9.81 / k
    expected = z0 * np.exp(-c * traj.t / (2 * m)) * (np.cos(omega * traj.t)
                                                     + c / (2 * m * omega) * np.sin(omega * traj.t))
    assert np.abs(z - expected).max() < 1e-9


@pytest.mark.heavy
def test_prescribed_joint_follows_its_curve():
    """Slider-crank with a keyed crank: rows g - T(t) stay at rounding level, and the bodies agree with
    the tree method's midpoint rule to its O(dt^2) accuracy."""
    mech = load_mechanism(PRESET_DIR / "slider_crank.toml")
    ours = run(ForwardIntegrator(mech, 1e-3), 300)
    tree = run(make_integrator(mech, "tree", 1e-3), 300)
    assert ours.constraint_residual.max() < 1e-9
    assert np.abs(ours.poses - tree.poses).max() < 1e-4


@pytest.mark.skipif(not fillin.NATIVE, reason="the fill-in loop solver needs the C kernels (make kernels)")
def test_loops_by_fill_in_equal_loops_by_auxiliary_rows():
    """Chain of 3 four-link loops (presets/loop_chain.toml, redundant planar loop rows): factoring the
    loops by fill-in (independent rows kept) gives the auxiliary-rows trajectory."""
    mech = load_mechanism(PRESET_DIR / "loop_chain.toml")
    by_rows = ForwardIntegrator(mech, 1e-3, solver="tree")
    by_fill = ForwardIntegrator(mech, 1e-3, solver="fillin")
    a, b = run(by_rows, 50), run(by_fill, 50)
    assert by_fill.info()["loop_solver"] == "fill-in LDU" and by_rows.info()["loop_solver"] == "auxiliary rows"
    assert np.abs(a.poses - b.poses).max() < 1e-11
    assert b.constraint_residual.max() < 1e-9


def test_unknown_options_are_named():
    with pytest.raises(ValueError, match="unknown stabilisation 'magic'"):
        ForwardIntegrator(pendulum_chain(1), 0.01, stabilisation="magic")
    with pytest.raises(ValueError, match="unknown solver 'magic'"):
        ForwardIntegrator(pendulum_chain(1), 0.01, solver="magic")

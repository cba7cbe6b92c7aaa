"""Springs and dampers on ball and free joints in the maximal method against closed forms: the rotation
spring V = k/2 |log(R_rest^T R_rel)|^2, the damper on the relative angular velocity, and a free joint's
translation springs."""

from __future__ import annotations

import numpy as np
import pytest

from addon.solver.integrator import simulate
from addon.solver.lie import matrix_to_quat, rotvec_to_matrix
from addon.solver.maximal.bodies import qconj, qmul
from addon.solver.maximal.joints import joint_set
from addon.solver.model import Body, Joint, Mechanism

K, INERTIA, MASS = 4.0, 0.5, 2.0
SPHERE = (INERTIA, INERTIA, INERTIA, 0.0, 0.0, 0.0)


def socket(q0=(0.0, 0.0, 0.0), v0=(0.0, 0.0, 0.0), **fields) -> Mechanism:
    """A body with equal principal moments on a ball joint at its centre of mass, no gravity: any rotation
    axis is principal, so a torque along the rotation keeps the axis fixed."""
    body = Body("ball", MASS, inertia=SPHERE)
    return Mechanism("socket", (body,), (Joint("socket", "ball", "world", "ball", q0=q0, v0=v0, **fields),),
                     gravity=(0.0, 0.0, 0.0))


def rotation_angle(quats: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """Angle of each rotation (N, 4), relative to `reference` (4,) when given."""
    if reference is not None:
        quats = qmul(qconj(reference)[None], quats)
    return 2.0 * np.arctan2(np.linalg.norm(quats[:, 1:], axis=1), np.abs(quats[:, 0]))


def body_rotation(mech: Mechanism, rotvec) -> np.ndarray:
    """The orientation of a body that starts at the identity after its joint turns by exp(hat(rotvec)) in
    the joint frame: c_A (x) exp (x) c_A^-1, c_A the joint frame in world axes."""
    frame = joint_set(mech).ca[0]
    turn = matrix_to_quat(rotvec_to_matrix(np.array(rotvec, dtype=float)))
    return qmul(qmul(frame, turn), qconj(frame))


def second_order_errors(make_error, steps: tuple[float, ...] = (0.02, 0.01, 0.005)) -> list[float]:
    errors = [make_error(dt) for dt in steps]
    for coarse, fine in zip(errors, errors[1:]):
        assert 3.5 < coarse / fine < 4.5, errors
    return errors


@pytest.mark.heavy
@pytest.mark.parametrize("theta0", [0.3, 2.5])
def test_torsion_pendulum_follows_the_closed_form(theta0):
    """Released at theta0 about x: theta(t) = theta0 cos(sqrt(k/I) t), exactly linear for any amplitude
    (the spring is on the rotation vector)."""
    omega = np.sqrt(K / INERTIA)

    def error(dt: float) -> float:
        run = simulate(socket(q0=(theta0, 0.0, 0.0), stiffness=K), dt, int(round(2.0 / dt)), "maximal")
        assert run.status == "finished", run.message
        return float(np.max(np.abs(rotation_angle(run.poses[:, 0, 3:]) - np.abs(theta0 * np.cos(omega * run.t)))))

    errors = second_order_errors(error)
    assert errors[-1] < 2e-3 * theta0


def test_rest_rotation_is_an_equilibrium_and_the_centre_of_the_swing():
    rest = (0.4, -0.7, 1.1)
    target = body_rotation(socket(), rest)
    still = simulate(socket(q0=rest, stiffness=K, rest=rest), 0.01, 200, "maximal")
    assert np.max(rotation_angle(still.poses[:, 0, 3:], target)) < 1e-12
    # released from the reference orientation it swings through the rest rotation about a fixed axis
    run = simulate(socket(stiffness=K, rest=rest), 0.005, 400, "maximal")
    amplitude = rotation_angle(np.array([[1.0, 0.0, 0.0, 0.0]]), target)[0]
    expected = np.abs(amplitude * np.cos(np.sqrt(K / INERTIA) * run.t))
    assert np.max(np.abs(rotation_angle(run.poses[:, 0, 3:], target) - expected)) < 2e-3 * amplitude


@pytest.mark.heavy
def test_damper_acts_on_the_relative_angular_velocity():
    """Spinning freely with damping c: the torque -c omega keeps the axis and E = E0 exp(-2 c t / I).
    The recorded energy is the interval's (midpoint) energy, so it is compared half a step back."""
    c = 0.3

    def error(dt: float) -> float:
        run = simulate(socket(q0=(0.2, -0.1, 0.3), v0=(1.0, 2.0, -0.5), damping=c), dt, int(round(2.0 / dt)),
                       "maximal")
        assert run.status == "finished", run.message
        exact = run.energy[0] * np.exp(-2.0 * c * (run.t[1:] - 0.5 * dt) / INERTIA)
        return float(np.max(np.abs(run.energy[1:] - exact)) / run.energy[0])

    errors = second_order_errors(error)
    assert errors[-1] < 1e-4


@pytest.mark.heavy
def test_free_joint_spring_holds_translation_and_rotation():
    """A free body sprung to the world (k on every coordinate) released off its rest pose: its centre
    oscillates at sqrt(k/m) about the translation rest, its rotation at sqrt(k/I) about the rotation rest."""
    rest = (0.1, -0.2, 0.3, 0.2, 0.0, -0.1)
    start = (0.3, -0.2, 0.2, 0.2, 0.0, -0.1)
    body = Body("puck", MASS, inertia=SPHERE)
    mech = Mechanism("puck", (body,), (Joint("float", "free", "world", "puck", q0=start, v0=(0.0,) * 6,
                                             stiffness=K, rest=rest),), gravity=(0.0, 0.0, 0.0))
    run = simulate(mech, 0.005, 400, "maximal")
    assert run.status == "finished", run.message
    offset = np.array(start[:3]) - np.array(rest[:3])
    expected = np.array(rest[:3]) + offset * np.cos(np.sqrt(K / MASS) * run.t)[:, None]
    assert np.max(np.abs(run.poses[:, 0, :3] - expected)) < 1e-4
    assert np.max(rotation_angle(run.poses[:, 0, 3:], body_rotation(mech, rest[3:]))) < 1e-12

"""Path following compared: the driver (speed profile + tracking steer) against pure pursuit on the same paths.

Usage: python -m benchmarks.driving
The sedan starts on each path at the top speed; pure pursuit drives at that constant target speed (its
speed loop, the same torque limits), and again at the driver's speed in the tightest curve, sqrt(a_lat R),
all the way; the driver at its curvature speed profile capped at the top speed. For each:
the largest and RMS cross-track error of the rear axle (m) while on the path, the time (s) to reach its
end, and the peak lateral acceleration v * yaw rate (m/s^2). Prints a Markdown table (docs/driving.md).
Then the drift table: the same paths on tyres that slip (solver/vehicles/slip_car.py, default Tyres), pure pursuit
at the driver's speed in the tightest curve, the grip driver (drift angle 0) and the drift driver at 15 and 25
degrees; columns: cross-track errors of the centre of mass, time to the end, the rear axle's slip angle held (mean
and range of |alpha_r| where the same full target has been set for 1.5 s), and the peak lateral acceleration.
Then the helicopter (solver/vehicles/pilot.py) on the same paths at three times the size, from 25 m/s at 20 m:
the pilot against pure pursuit flown the same way (PursuitPilot) at 25 m/s and at the pilot's speed in the
tightest curve; columns: cross-track errors of the centre of mass, time to the end, the largest tilt and
height error. A run that has not reached the end after 50 s left the path.
Then the speedboat and the hovercraft (solver/vehicles/helmsman.py) on the paths at three times the size,
at dt = 1/24 s: the helmsman against pure pursuit steered the same way (PursuitHelmsman) at the top speed
and at the helmsman's slowest profile speed; columns: cross-track errors of the centre of mass, time to the
end, the largest heel (roll about the bow: the boat's is its buoyancy's answer to the turn, nothing banks
it) and the largest slide (angle from the bow to the velocity). A run that has not reached the end within
1.5 times the path's length at its slowest speed, plus 10 s, left the path.
"""

from __future__ import annotations

import math

import numpy as np

from addon.solver.lie import quat_to_matrix
from addon.solver.mechfile.read import vehicle_presets
from addon.solver.model import Mechanism, Vehicle
from addon.solver.vehicles import drift, driver, helmsman, pilot, pursuit, slip_car

DT = 1.0 / 48
LIMITS = driver.Limits(lateral=4.0, accel=2.5, brake=5.0, top_speed=15.0)
AIR_LIMITS = driver.Limits(lateral=4.0, accel=2.5, brake=4.0, top_speed=25.0)
AIR_SCALE, AIR_HEIGHT, AIR_SECONDS = 3.0, 20.0, 50.0


def paths() -> dict[str, np.ndarray]:
    """A 90 degree bend of R = 20 m, a hairpin of R = 8 m and an S (two R = 12 m arcs), with straights."""
    def arc(cx, cy, r, a0, a1, n=60):
        a = np.linspace(a0, a1, n)
        return np.column_stack([cx + r * np.cos(a), cy + r * np.sin(a)])

    line = np.column_stack([np.linspace(0.0, 30.0, 31), np.zeros(31)])
    bend = np.vstack([line, arc(30.0, 20.0, 20.0, -math.pi / 2, 0.0)[1:], [[50.0, 60.0]]])
    hairpin = np.vstack([line, arc(30.0, 8.0, 8.0, -math.pi / 2, math.pi / 2)[1:], [[0.0, 16.0]]])
    s_curve = np.vstack([line, arc(30.0, 12.0, 12.0, -math.pi / 2, 0.0)[1:],
                         arc(66.0, 12.0, 24.0, math.pi, math.pi / 2)[1:], [[100.0, 36.0]]])
    return {"bend R 20 m": bend, "hairpin R 8 m": hairpin, "S R 12 / 24 m": s_curve}


def closest(xy: np.ndarray, path: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distance (m) of each point (N, 2) from the polyline `path`, and the arc length of its nearest point."""
    seg = np.diff(path, axis=0)
    length = np.linalg.norm(seg, axis=1)
    start = np.concatenate([[0.0], np.cumsum(length)])[:-1]
    dist, arc = [], []
    for p in xy:
        rel = p - path[:-1]
        f = np.clip(np.einsum("ij,ij->i", rel, seg) / length**2, 0.0, 1.0)
        d = np.linalg.norm(rel - f[:, None] * seg, axis=1)
        i = int(np.argmin(d))
        dist.append(d[i])
        arc.append(start[i] + f[i] * length[i])
    return np.array(dist), np.array(arc)


def to_the_end(xy: np.ndarray, path: np.ndarray) -> tuple[np.ndarray, int | None]:
    """Cross-track error (m) of every point (K, 2) and the number of points before the first that reached the
    path's end (None: none did)."""
    error, arc = closest(xy, path)
    past = np.flatnonzero(arc >= np.linalg.norm(np.diff(path, axis=0), axis=1).sum() - 1e-6)
    return error, (int(past[0]) if len(past) else None)


def sedan(speed: float) -> Mechanism:
    spec = vehicle_presets()["sedan"]
    vehicle = Vehicle("car", spec, position=(spec.com_ahead_of_rear_axle, 0.0, spec.com_height),
                      velocity=(0, 0, 0, speed, 0, 0), name="sedan")
    return Mechanism(name="sedan", bodies=(), joints=(), gravity=(0.0, 0.0, -9.81), vehicle=vehicle, source="bench")


def measure(trajectory, path: np.ndarray) -> tuple[float, float, float, float]:
    """(max, RMS cross-track error, time to the path's end, peak lateral acceleration) of a run."""
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    b = vehicle_presets()["sedan"].com_ahead_of_rear_axle
    xy = np.column_stack([poses[:, 0] - b * np.cos(theta), poses[:, 1] - b * np.sin(theta)])
    error, n = to_the_end(xy, path)
    n = len(xy) if n is None else n
    error = error[:n]
    speed = np.linalg.norm(np.diff(xy[:n], axis=0), axis=1) / DT
    lateral = speed * np.abs(np.diff(theta[:n])) / DT
    return float(error.max()), float(np.sqrt(np.mean(error**2))), n * DT, float(lateral.max())


def table() -> str:
    rows = ["| path | controller | max cross-track (m) | RMS cross-track (m) | time to the end (s) | "
            "peak lateral accel (m/s^2) |", "|---|---|---|---|---|---|"]
    for name, path in paths().items():
        steps = int(40.0 / DT)
        drive, controller = driver.simulate_driving(sedan(LIMITS.top_speed), path, LIMITS, DT, steps)
        slow = float(controller.profile[1:-1].min())  # sqrt(a_lat R) of the tightest curve
        runs = {f"pure pursuit at {LIMITS.top_speed:g} m/s": pursuit.simulate_following(
                    sedan(LIMITS.top_speed), path, LIMITS.top_speed, DT, steps)[0],
                f"pure pursuit at {slow:.2f} m/s": pursuit.simulate_following(sedan(slow), path, slow, DT, steps)[0],
                "driver": drive}
        for controller, trajectory in runs.items():
            worst, rms, seconds, lateral = measure(trajectory, path)
            rows.append(f"| {name} | {controller} | {worst:.3f} | {rms:.3f} | {seconds:.2f} | {lateral:.1f} |")
    return "\n".join(rows)


DRIFT_ANGLES = (15.0, 25.0)  # degrees
SETTLE = 1.5  # s of one full target before its slip is counted as held (a 50 degree flick takes 1.45 s)


def slip_angle(trajectory, ahead: float) -> np.ndarray:
    """Slip angle (N,) of each step of the chassis point `ahead` (m) of the centre of mass (-b: the rear axle), from
    the chassis poses: its chord's direction less the mid heading (rad)."""
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    theta = np.unwrap(2 * np.arctan2(poses[:, 6], poses[:, 3]))
    point = poses[:, :2] + ahead * np.column_stack([np.cos(theta), np.sin(theta)])
    chord = np.diff(point, axis=0)
    beta = np.arctan2(chord[:, 1], chord[:, 0]) - 0.5 * (theta[1:] + theta[:-1])
    return (beta + np.pi) % (2 * np.pi) - np.pi


def measure_drift(trajectory, path: np.ndarray, goals: list[tuple[float, float]] | None, behind: float) -> str:
    """Table cells up to the path's end: max and RMS cross-track error of the centre of mass (m), time to the end
    (s), the rear axle's |alpha_r| held (mean and range, degrees) where the same full rear target of `goals`
    ((alpha_r*, beta*) per step) has been set for SETTLE (the rear axle `behind` m behind the centre of mass), and the
    peak lateral acceleration (m/s^2)."""
    poses = trajectory.poses[:, trajectory.body_index("chassis")]
    error, arc = closest(poses[:, :2], path)
    past = np.flatnonzero(arc >= np.linalg.norm(np.diff(path, axis=0), axis=1).sum() - 1e-6)
    if not len(past):
        return "did not reach the end | | | | "
    n = int(past[0])
    velocity = np.diff(poses[: n + 1, :2], axis=0) / DT
    lateral = np.abs(np.cross(velocity[:-1], np.diff(velocity, axis=0) / DT)) / np.linalg.norm(velocity[:-1], axis=1)
    held = "-"
    if goals is not None:
        goal, width = np.array([g[0] for g in goals[:n]]), int(SETTLE / DT)
        full = np.abs(goal).max() - 1e-12
        settled = np.zeros(n, dtype=bool)
        for side in (goal >= full, goal <= -full):  # the same full target (tail out left or right) for SETTLE
            settled |= np.convolve(side, np.ones(width), "full")[:n] >= width
        rear = np.degrees(np.abs(slip_angle(trajectory, -behind)[:n]))
        rear = rear[settled]
        if len(rear):
            held = f"{rear.mean():.1f} ({rear.min():.1f} to {rear.max():.1f})"
    return (f"{error[:n].max():.3f} | {np.sqrt(np.mean(error[:n] ** 2)):.3f} | {n * DT:.2f} | {held} | "
            f"{lateral.max():.1f}")


def drift_table() -> str:
    rows = ["| path | controller (on slipping tyres) | max cross-track (m) | RMS cross-track (m) | "
            "time to the end (s) | rear slip held (deg) | peak lateral accel (m/s^2) |", "|---|---|---|---|---|---|---|"]
    steps, tyres = int(40.0 / DT), slip_car.Tyres()
    for name, path in paths().items():
        grip, controller = drift.simulate_drifting(sedan(LIMITS.top_speed), path, LIMITS, 0.0, DT, steps, tyres)
        slow = float(controller.profile[1:-1].min())
        chase = pursuit.PurePursuit(path, sedan(slow).vehicle.spec, slow, pursuit.car_start(sedan(slow)))
        runs = [(f"pure pursuit at {slow:.2f} m/s", pursuit.follow(sedan(slow), chase, DT, steps, tyres), None),
                ("grip driver", grip, None)]
        for angle in DRIFT_ANGLES:
            run, drifter = drift.simulate_drifting(sedan(LIMITS.top_speed), path, LIMITS, math.radians(angle), DT,
                                                   steps, tyres)
            runs.append((f"drift driver at {angle:g} deg", run, drifter.goals))
        behind = sedan(slow).vehicle.spec.com_ahead_of_rear_axle
        for label, trajectory, goals in runs:
            rows.append(f"| {name} | {label} | {measure_drift(trajectory, path, goals, behind)} |")
    return "\n".join(rows)


def helicopter(speed: float) -> Mechanism:
    vehicle = Vehicle("helicopter", vehicle_presets()["helicopter"], position=(0.0, 0.0, AIR_HEIGHT),
                      velocity=(0, 0, 0, speed, 0, 0), name="helicopter")
    return Mechanism(name="helicopter", bodies=(), joints=(), gravity=(0.0, 0.0, -9.81), vehicle=vehicle,
                     source="bench")


def measure_flight(trajectory, path: np.ndarray) -> str:
    """Table cells of a flight up to the path's end: max and RMS cross-track (m), time to the end (s), largest
    tilt from upright (deg: bank and pitch together), largest height error (m)."""
    poses = trajectory.poses[:, 0]
    error, n = to_the_end(poses[:, :2], path)
    if n is None:
        return "left the path | | | | "
    up = np.array([quat_to_matrix(q)[:, 2] for q in poses[:n, 3:]])
    tilt = np.degrees(np.arccos(np.clip(up[:, 2], -1.0, 1.0))).max()
    return (f"{error[:n].max():.3f} | {np.sqrt(np.mean(error[:n] ** 2)):.3f} | {n * DT:.2f} | {tilt:.1f} | "
            f"{np.abs(poses[:n, 2] - AIR_HEIGHT).max():.2f}")


def flight_table() -> str:
    rows = [("| path (x 3) | controller | max cross-track (m) | RMS cross-track (m) | time to the end (s) | "
             "largest tilt (deg) | largest height error (m) |"), "|---|---|---|---|---|---|---|"]
    steps, top = int(AIR_SECONDS / DT), AIR_LIMITS.top_speed
    for name, path in paths().items():
        path = AIR_SCALE * path
        flown, controller = pilot.simulate_flying(helicopter(top), path, AIR_LIMITS, DT, steps)
        slow = float(controller.profile[1:-1].min())
        runs = {f"pure pursuit at {top:g} m/s": pilot.simulate_pursuit_flying(helicopter(top), path, top, DT, steps)[0],
                f"pure pursuit at {slow:.2f} m/s": pilot.simulate_pursuit_flying(helicopter(slow), path, slow, DT,
                                                                                 steps)[0],
                "pilot": flown}
        for controller_name, trajectory in runs.items():
            rows.append(f"| {name} | {controller_name} | {measure_flight(trajectory, path)} |")
    return "\n".join(rows)


CRAFT_DT = 1.0 / 24
CRAFT_LIMITS = {"speedboat": driver.Limits(lateral=2.0, accel=1.0, brake=1.0, top_speed=10.0),
                "hovercraft": driver.Limits(lateral=1.5, accel=1.0, brake=1.0, top_speed=12.0)}


def craft(preset: str, speed: float) -> Mechanism:
    """The preset afloat (or on its cushion) at the origin, level, bow along +X at `speed` (m/s)."""
    spec = vehicle_presets()[preset]
    z = spec.keel_below_com - spec.design_draft if preset == "speedboat" else spec.rest_height
    kind = "boat" if preset == "speedboat" else "hovercraft"
    vehicle = Vehicle(kind, spec, position=(0.0, 0.0, z), velocity=(0, 0, 0, speed, 0, 0), name=preset)
    return Mechanism(name=preset, bodies=(), joints=(), gravity=(0.0, 0.0, -9.81), vehicle=vehicle, source="bench")


def measure_craft(trajectory, path: np.ndarray) -> str:
    """Table cells of a boat or hovercraft run up to the path's end: max and RMS cross-track (m), time to the end
    (s), largest heel (deg, roll about the bow) and largest slide (deg, bow to velocity)."""
    poses = trajectory.poses[:, 0]
    error, n = to_the_end(poses[:, :2], path)
    if n is None:
        return "left the path | | | | "
    R = np.array([quat_to_matrix(q) for q in poses[:n, 3:]])
    heel = np.degrees(np.abs(np.arctan2(R[:, 2, 1], R[:, 2, 2]))).max()
    velocity = np.diff(poses[:n + 1, :2], axis=0)
    slide = np.degrees(np.abs(np.arctan2(R[:, 0, 0] * velocity[:, 1] - R[:, 1, 0] * velocity[:, 0],
                                         R[:, 0, 0] * velocity[:, 0] + R[:, 1, 0] * velocity[:, 1]))).max()
    return (f"{error[:n].max():.3f} | {np.sqrt(np.mean(error[:n] ** 2)):.3f} | {n * CRAFT_DT:.2f} | {heel:.2f} | "
            f"{slide:.1f}")


def craft_table() -> str:
    rows = [("| craft | path (x 3) | controller | max cross-track (m) | RMS cross-track (m) | time to the end (s) | "
             "largest heel (deg) | largest slide (deg) |"), "|---|---|---|---|---|---|---|---|"]
    for preset, limits in CRAFT_LIMITS.items():
        top = limits.top_speed
        for name, path in paths().items():
            path = AIR_SCALE * path
            probe = helmsman.Helmsman(path, vehicle_presets()[preset], limits, (0.0, 0.0, 0.0, top))
            slow = float(probe.profile[1:-1].min())
            steps = int((1.5 * probe.grid[-1] / slow + 10.0) / CRAFT_DT)
            steered, _ = helmsman.simulate_steering(craft(preset, top), path, limits, CRAFT_DT, steps)
            runs = {f"pure pursuit at {top:g} m/s": helmsman.simulate_pursuit_steering(
                        craft(preset, top), path, top, CRAFT_DT, steps)[0],
                    f"pure pursuit at {slow:.2f} m/s": helmsman.simulate_pursuit_steering(
                        craft(preset, slow), path, slow, CRAFT_DT, steps)[0],
                    "helmsman": steered}
            for controller_name, trajectory in runs.items():
                rows.append(f"| {preset} | {name} | {controller_name} | {measure_craft(trajectory, path)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(f"Sedan from {LIMITS.top_speed:g} m/s, dt = {DT:.4f} s; driver limits: lateral {LIMITS.lateral:g}, "
          f"accel {LIMITS.accel:g}, brake {LIMITS.brake:g} m/s^2, top speed {LIMITS.top_speed:g} m/s\n")
    print(table())
    tyres = slip_car.Tyres()
    print(f"\nOn tyres that slip (mu {tyres.friction:g}, cornering stiffness {tyres.front_cornering:g} / "
          f"{tyres.rear_cornering:g} per rad of the front / rear axle load), the same limits\n")
    print(drift_table())
    print(f"\nHelicopter from {AIR_LIMITS.top_speed:g} m/s at {AIR_HEIGHT:g} m, the paths x {AIR_SCALE:g}; pilot limits: "
          f"lateral {AIR_LIMITS.lateral:g}, accel {AIR_LIMITS.accel:g}, brake {AIR_LIMITS.brake:g} m/s^2, bank "
          f"{math.degrees(pilot.DEFAULT_BANK_LIMIT):g} degrees\n")
    print(flight_table())
    print(f"\nSpeedboat and hovercraft, the paths x {AIR_SCALE:g}, dt = {CRAFT_DT:.4f} s; helmsman limits: "
          + "; ".join(f"{p} lateral {lim.lateral:g}, accel {lim.accel:g}, brake {lim.brake:g} m/s^2, top speed "
                      f"{lim.top_speed:g} m/s, turn rate {helmsman.turn_rate(vehicle_presets()[p]):.3f} rad/s"
                      for p, lim in CRAFT_LIMITS.items()) + "\n")
    print(craft_table())

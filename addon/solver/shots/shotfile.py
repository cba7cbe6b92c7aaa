"""Shot files (presets/shots/*.toml, format 1): `load_shot` reads one and returns the problem the file holds,
a vehicle Shot ([shot] vehicle = ...) or a MechanismShot ([shot] mechanism = ...); messages name
file/table/field. Owns the TOML form of both (spec.py the data); imports no solver.

Vehicle shots::

    format = 1
    [shot]
    name = "parallel parking"
    vehicle = "sedan"               # a vehicle preset name (presets/vehicles) or a path relative to this file
    dt = 0.1                        # s per step, 1e-6 to 1 (spec.MIN_DT, MAX_DT)
    steps = 100
    free_time = false               # true: dt is free in [dt_min, dt_max] (add costs.time)
    body_radius = 1.0               # m, one bounding sphere at the body origin ...
    body_spheres = [[x, y, z, r]]   # ... or several, in body axes (x forward)
    [start]                         # optional: overrides of the vehicle file's start
    position = [x, y, z]            # centre of mass
    heading = 0.0                   # rad about z (or orientation = [w, x, y, z])
    velocity = [wx, wy, wz, vx, vy, vz]
    current = [x, y, z]             # boats: uniform water velocity
    [costs]                         # effort, smoothness, time, reference (weights >= 0)
    [bounds]                        # control channel = [lower, upper] (physical units)
    [[key]]                         # name, frame (step), position, heading, radius, velocity
    [[obstacle]]                    # name, shape (sphere | box | cylinder | hull), position, heading or
                                    # orientation, size, vertices, clearance
    [[corridor]]                    # name, frames = [first, last], lower, upper

Mechanism shots (tree mechanisms; driven joints, coordinate and body-point keys)::

    format = 1
    [shot]
    name = "cart-pole swing-up"
    mechanism = "cart_pole"      # a preset name, or a .toml path relative to this file
    dt = 0.05                    # s per step, 1e-6 to 1 (spec.MIN_DT, MAX_DT)
    steps = 50                   # frames after the start, 1 to spec.MAX_STEPS
    rest_at_end = true           # optional: zero momentum after the last step
    [costs]
    effort = 1.0                 # optional weight on sum dt |u / bound|^2 (spec.Costs)
    speed = 0.0                  # optional weight on sum dt |dq/dt|^2 (MechanismShot.speed)
    [[control]]                  # one per driven single-dof joint
    joint = "cart_slide"
    lower = -20.0                # optional torque / force bounds (N m or N)
    upper = 20.0
    [[key]]                      # a coordinate key ...
    name = "upright"
    frame = 50
    coordinate = "pole_hinge"
    value = 3.141592653589793
    [[key]]                      # ... or a body-point key; `components` makes it partial ("xz")
    name = "over the mark"
    frame = 40
    body = "load"
    point = [0.0, 0.0, 0.0]      # body frame
    position = [3.0, 0.0, 2.0]   # world
    components = "x"
    tolerance = 1e-6             # optional, reporting tolerance of the key (m or rad)

Unknown fields are refused; numbers must be finite (a control's lower and upper may be -inf and inf).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..mechfile.read import load_mechanism
from ..model import MechanismError
from ..mechfile.toml_text import brief
from ..presets import SHOT_PRESET_DIR, preset_path, vehicle_preset_path
from ..tomlfile import TomlFileError, read_toml
from .spec import (MAX_DT, MAX_STEPS, MIN_DT, Control, Corridor, Costs, Key, MechanismKey, MechanismShot, Obstacle, Shot,
                   ShotError, ShotProblem)

_SHOT_KEYS = {"name", "vehicle", "dt", "steps", "free_time", "dt_min", "dt_max", "body_radius", "body_spheres"}
_TOP = {"format", "shot", "start", "costs", "bounds", "key", "obstacle", "corridor"}


def _fail(src: str, table: str, field: str, expected: str, got: object) -> ShotError:
    return ShotError(f"{src}: {table}: field '{field}' must be {expected}, got {got!r}")


def _number(src, table, d, field, default=None, minimum=None):
    if field not in d:
        if default is None:
            raise ShotError(f"{src}: {table}: missing field '{field}'")
        return default
    v = d[field]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _fail(src, table, field, "a finite number", v)
    if minimum is not None and v < minimum:
        raise _fail(src, table, field, f"a number >= {minimum}", v)
    return float(v)


def _finite(a: object) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a)


def _vector(src, table, d, field, n, default=None):
    if field not in d:
        return default
    v = d[field]
    if not isinstance(v, list) or len(v) != n or not all(_finite(a) for a in v):
        raise _fail(src, table, field, f"a list of {n} finite numbers", v)
    return tuple(float(a) for a in v)


def _quat(src, table, d) -> tuple[float, float, float, float]:
    if "orientation" in d and "heading" in d:
        raise ShotError(f"{src}: {table}: give 'heading' or 'orientation', not both")
    if "heading" in d:
        a = _number(src, table, d, "heading")
        return (math.cos(a / 2), 0.0, 0.0, math.sin(a / 2))
    q = _vector(src, table, d, "orientation", 4, (1.0, 0.0, 0.0, 0.0))
    n = math.sqrt(sum(a * a for a in q))
    if abs(n - 1) > 1e-6:
        raise _fail(src, table, "orientation", "a unit quaternion (w, x, y, z)", list(q))
    return q


def _table(src: str, data: dict, name: str) -> dict:
    """The [name] table of `data` ({} when absent)."""
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ShotError(f"{src}: field '{name}' must be a [{name}] table, got {value!r}")
    return value


def _tables(src: str, data: dict, name: str) -> list[dict]:
    """The [[name]] entries of `data` ([] when absent)."""
    value = data.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ShotError(f"{src}: field '{name}' must be [[{name}]] tables, got {value!r}")
    return value


def _check_keys(src, table, d, allowed):
    unknown = set(d) - allowed
    if unknown:
        raise ShotError(f"{src}: {table}: unknown field(s) {', '.join(sorted(unknown))}; "
                        f"valid fields: {', '.join(sorted(allowed))}")


def vehicle_file(path: Path, ref: str) -> Path:
    """The vehicle file a shot file at `path` names in [shot] vehicle: a .toml beside it, else a preset.
    Raises ValueError or OSError for an unknown preset name or one no path can hold."""
    candidate = path.parent / ref
    return candidate if candidate.suffix == ".toml" and candidate.exists() else vehicle_preset_path(ref)


def _vehicle_mechanism(src: str, path: Path, ref: object):
    if not isinstance(ref, str) or not ref:
        raise _fail(src, "[shot]", "vehicle", "a vehicle preset name or a file path", ref)
    try:
        file = vehicle_file(path, ref)
    except (OSError, ValueError) as err:  # no such preset; a name too long for a path, or holding a NUL
        raise ShotError(f"{src}: [shot]: field 'vehicle': {err}") from None
    try:
        mech = load_mechanism(file)
    except MechanismError as err:
        raise ShotError(f"{src}: [shot]: field 'vehicle': {err}") from None
    if mech.vehicle is None:
        raise ShotError(f"{src}: [shot]: field 'vehicle': {file} has no [vehicle] table")
    return mech


def loads_vehicle_shot(data: dict, src: str, path: Path) -> Shot:
    """A vehicle Shot from parsed TOML `data` (src names the file in messages)."""
    _check_keys(src, "top level", data, _TOP)
    if data.get("format") != 1:
        raise _fail(src, "top level", "format", "1", data.get("format"))
    shot_t = data.get("shot")
    if not isinstance(shot_t, dict):
        raise ShotError(f"{src}: missing table [shot]")
    _check_keys(src, "[shot]", shot_t, _SHOT_KEYS)
    mech = _vehicle_mechanism(src, path, shot_t.get("vehicle"))
    vehicle = replace(mech.vehicle, controls=())
    start = _table(src, data, "start")
    _check_keys(src, "[start]", start, {"position", "heading", "orientation", "velocity", "current"})
    if start:
        vehicle = replace(vehicle, position=_vector(src, "[start]", start, "position", 3, vehicle.position),
                          orientation=_quat(src, "[start]", start) if {"heading", "orientation"} & set(start)
                          else vehicle.orientation,
                          velocity=_vector(src, "[start]", start, "velocity", 6, vehicle.velocity),
                          current=_vector(src, "[start]", start, "current", 3, vehicle.current))
    mech = replace(mech, vehicle=vehicle)
    steps = shot_t.get("steps")
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise _fail(src, "[shot]", "steps", "an integer >= 2", steps)
    keys = []
    for i, k in enumerate(_tables(src, data, "key")):
        t = f"[[key]] {i + 1} ({k.get('name', 'unnamed')!r})"
        _check_keys(src, t, k, {"name", "frame", "position", "heading", "radius", "velocity"})
        frame = k.get("frame")
        if isinstance(frame, bool) or not isinstance(frame, int):
            raise _fail(src, t, "frame", f"an integer step in 1..{steps}", frame)
        keys.append(Key(frame, "", _vector(src, t, k, "position", 3),
                        _number(src, t, k, "heading") if "heading" in k else None,
                        _number(src, t, k, "radius", 0.0, 0.0), _vector(src, t, k, "velocity", 3),
                        str(k.get("name", f"key {i + 1}"))))
    obstacles = []
    for i, o in enumerate(_tables(src, data, "obstacle")):
        t = f"[[obstacle]] {i + 1} ({o.get('name', 'unnamed')!r})"
        _check_keys(src, t, o, {"name", "shape", "position", "heading", "orientation", "size", "vertices",
                                "clearance"})
        size = o.get("size", [])
        if not isinstance(size, list) or not all(_finite(a) for a in size):
            raise _fail(src, t, "size", "a list of finite numbers", size)
        vertices = o.get("vertices", [])
        if not isinstance(vertices, list) or not all(
                isinstance(v, list) and len(v) == 3 and all(_finite(a) for a in v) for v in vertices):
            raise _fail(src, t, "vertices", "a list of [x, y, z] points of finite numbers", vertices)
        obstacles.append(Obstacle(str(o.get("name", f"obstacle {i + 1}")), str(o.get("shape")),
                                  _vector(src, t, o, "position", 3, (0.0, 0.0, 0.0)), _quat(src, t, o),
                                  tuple(float(a) for a in size), tuple(tuple(map(float, v)) for v in vertices),
                                  _number(src, t, o, "clearance", 0.0, 0.0)))
    corridors = []
    for i, c in enumerate(_tables(src, data, "corridor")):
        t = f"[[corridor]] {i + 1} ({c.get('name', 'unnamed')!r})"
        _check_keys(src, t, c, {"name", "frames", "lower", "upper"})
        frames = c.get("frames")
        if not (isinstance(frames, list) and len(frames) == 2 and all(isinstance(a, int) for a in frames)):
            raise _fail(src, t, "frames", "[first, last] integers", frames)
        for field in ("lower", "upper"):
            if field not in c:
                raise ShotError(f"{src}: {t}: missing field '{field}'")
        corridors.append(Corridor(str(c.get("name", f"corridor {i + 1}")), frames[0], frames[1],
                                  _vector(src, t, c, "lower", 3), _vector(src, t, c, "upper", 3)))
    costs_t = _table(src, data, "costs")
    _check_keys(src, "[costs]", costs_t, {"effort", "smoothness", "time", "reference"})
    costs = Costs(*(_number(src, "[costs]", costs_t, f, d, 0.0)
                    for f, d in (("effort", 1.0), ("smoothness", 0.0), ("time", 0.0), ("reference", 0.0))))
    if costs.reference > 0:
        raise ShotError(f"{src}: [costs]: field 'reference' needs a reference path, which shot files cannot "
                        f"hold yet; set it from Python (Costs.reference_path)")
    bounds = []
    for name, pair in _table(src, data, "bounds").items():
        b = _vector(src, "[bounds]", {name: pair}, name, 2)
        bounds.append((name, b[0], b[1]))
    spheres = shot_t.get("body_spheres", [])
    if not isinstance(spheres, list):
        raise _fail(src, "[shot]", "body_spheres", "a list of [x, y, z, radius]", spheres)
    body_spheres = tuple(_vector(src, "[shot]", {"body_spheres": s}, "body_spheres", 4) for s in spheres)
    return Shot(mech, _number(src, "[shot]", shot_t, "dt", minimum=1e-6), steps, tuple(keys), tuple(obstacles),
                tuple(corridors), tuple(bounds), costs, bool(shot_t.get("free_time", False)),
                _number(src, "[shot]", shot_t, "dt_min", 0.0), _number(src, "[shot]", shot_t, "dt_max", 0.0),
                _number(src, "[shot]", shot_t, "body_radius", 0.0, 0.0), body_spheres,
                str(shot_t.get("name", path.stem)), src)


_MECHANISM_TOP = ("format", "shot", "costs", "control", "key")
_MECHANISM_SHOT_KEYS = ("name", "mechanism", "dt", "steps", "rest_at_end")
_CONTROL_KEYS = ("joint", "lower", "upper")
_MECHANISM_KEY_KEYS = ("name", "frame", "tolerance", "coordinate", "value", "body", "point", "position",
                       "components")


def _known(table: dict, allowed: tuple[str, ...], where: str) -> None:
    """ShotError naming the first field of `table` that is not in `allowed`."""
    unknown = [name for name in table if name not in allowed]
    if unknown:
        raise ShotError(f"{where}: unknown field {unknown[0]!r}; valid fields: {', '.join(allowed)}")


def _field(table: dict, name: str, where: str, kind: type | tuple, default=..., infinite: bool = False):
    """table[name] of type `kind` (an integer is a float too; a float must be finite unless `infinite`)."""
    if name not in table:
        if default is ...:
            raise ShotError(f"{where}: field {name!r} is required")
        return default
    value = table[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ShotError(f"{where}: field {name!r} must be {getattr(kind, '__name__', kind)}, got {brief(value)}")
    if kind is float and not (math.isfinite(value) or infinite and not math.isnan(value)):
        raise ShotError(f"{where}: field {name!r} must be a finite number, got {value!r}")
    return value


def _point(table: dict, name: str, where: str, default=...) -> tuple[float, float, float]:
    value = _field(table, name, where, list, default)
    if not isinstance(value, (list, tuple)) or len(value) != 3 or not all(_finite(v) for v in value):
        raise ShotError(f"{where}: field {name!r} must be a list of 3 finite numbers, got {brief(value)}")
    return tuple(float(v) for v in value)


def mechanism_file(path: Path, ref: str) -> Path:
    """The mechanism file a shot file at `path` names in [shot] mechanism: a .toml path relative to it, else
    a preset name. Raises FileNotFoundError for an unknown preset."""
    return (path.parent / ref) if ref.endswith(".toml") else preset_path(ref)


def loads_mechanism_shot(data: dict, src: str, path: Path) -> MechanismShot:
    """A MechanismShot from parsed TOML `data` (src names the file in messages; `path` places a relative
    mechanism file). Unknown fields and non-finite numbers are refused here (a control's bounds may be
    infinite); names (joints, coordinates, bodies) and frames are checked when it is solved."""
    _known(data, _MECHANISM_TOP, src)
    if data.get("format") != 1:
        raise ShotError(f"{src}: field 'format' must be 1, got {brief(data.get('format'))}")
    head = _field(data, "shot", src, dict)
    where = f"{src}: [shot]"
    _known(head, _MECHANISM_SHOT_KEYS, where)
    ref = _field(head, "mechanism", where, str)
    try:
        mechanism = load_mechanism(mechanism_file(path, ref))
    except (MechanismError, FileNotFoundError) as err:
        raise ShotError(f"{where}: field 'mechanism': {err}") from None
    dt = _field(head, "dt", where, float)
    steps = _field(head, "steps", where, int)
    if not MIN_DT <= dt <= MAX_DT:
        raise ShotError(f"{where}: field 'dt' must be a time step in [{MIN_DT:g}, {MAX_DT:g}] s, got {dt!r}")
    if not 1 <= steps <= MAX_STEPS:
        raise ShotError(f"{where}: field 'steps' must be an integer in 1..{MAX_STEPS}, got {steps!r}")
    costs = _field(data, "costs", src, dict, {})
    _known(costs, ("effort", "speed"), f"{src}: [costs]")
    controls = []
    for i, c in enumerate(_field(data, "control", src, list, [])):
        w = f"{src}: [[control]] #{i + 1}"
        if not isinstance(c, dict):
            raise ShotError(f"{w}: must be a table (joint, lower, upper), got {brief(c)}")
        _known(c, _CONTROL_KEYS, w)
        controls.append(Control(_field(c, "joint", w, str), _field(c, "lower", w, float, -np.inf, infinite=True),
                                _field(c, "upper", w, float, np.inf, infinite=True)))
    keys = []
    for i, k in enumerate(_field(data, "key", src, list, [])):
        if not isinstance(k, dict):
            raise ShotError(f"{src}: [[key]] #{i + 1}: must be a table (name, frame, ...), got {brief(k)}")
        name = _field(k, "name", f"{src}: [[key]] #{i + 1}", str, f"key {i + 1}")
        w = f"{src}: [[key]] {name!r}"
        _known(k, _MECHANISM_KEY_KEYS, w)
        common = dict(name=name, frame=_field(k, "frame", w, int), tolerance=_field(k, "tolerance", w, float, 1e-6))
        if "coordinate" in k:
            keys.append(MechanismKey(coordinate=_field(k, "coordinate", w, str), value=_field(k, "value", w, float),
                                     **common))
        elif "body" in k:
            keys.append(MechanismKey(body=_field(k, "body", w, str), point=_point(k, "point", w, [0.0, 0.0, 0.0]),
                                     position=_point(k, "position", w), components=_field(k, "components", w, str, "xyz"),
                                     **common))
        else:
            raise ShotError(f"{w}: needs field 'coordinate' (with 'value') or 'body' (with 'position')")
    return MechanismShot(_field(head, "name", where, str), mechanism, dt, steps, tuple(controls), tuple(keys),
                         _field(costs, "effort", f"{src}: [costs]", float, 1.0),
                         _field(head, "rest_at_end", where, bool, False), src,
                         _field(costs, "speed", f"{src}: [costs]", float, 0.0))


def load_shot(path: str | Path) -> ShotProblem:
    """The shot in `path` (or the preset of that name): a vehicle Shot, or a MechanismShot for [shot] mechanism."""
    path = Path(path)
    if not path.exists() and (SHOT_PRESET_DIR / f"{path.stem}.toml").exists() and len(path.parts) == 1:
        path = SHOT_PRESET_DIR / f"{path.stem}.toml"
    src = str(path)
    try:
        data = read_toml(path, "shot file")
    except TomlFileError as err:
        raise ShotError(str(err)) from None
    shot_t = data.get("shot", {})
    if isinstance(shot_t, dict) and "mechanism" in shot_t:
        return loads_mechanism_shot(data, src, path)
    return loads_vehicle_shot(data, src, path)

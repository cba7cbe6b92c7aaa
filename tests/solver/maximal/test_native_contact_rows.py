"""The contact rows at the knot in C (native/contact_rows.c via interior_point.begin's `native` buffers)
against their numpy twin (interior_point._contacts, _patches, packed): the same contacts, patches, rows,
keys, warm or cold start, packed arrays and relinearise's measure (NativeRows.drift, interior_point._drift) at
every knot of runs through impacts (the box drop on its corners, the sphere chain, random thrown scenes with a
joint limit)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from addon.solver.collision.shapes import body_reach
from addon.solver.integrator import make_integrator
from addon.solver.maximal import interior_point
from addon.solver.maximal.forces import coordinates
from addon.solver.maximal.joints import frames
from addon.solver.mechfile.read import load_mechanism
from addon.solver.native import contact_rows_binding
from addon.solver.presets import preset_path
from tests.solver.maximal.test_native_step import contact_scene

pytestmark = pytest.mark.skipif(contact_rows_binding.LIB is None, reason="C kernels not built (make kernels)")

DT = 0.01
# Geometry (positions, Jacobians, directions) is products of a few unit-sized terms: round-off ~1e-15 of
# the scene's size (1 m); h0 and the cold slacks are distances over dt.
ATOL = 1e-12


def native_rows(model) -> contact_rows_binding.NativeRows:
    bs = model.bodies
    return contact_rows_binding.NativeRows(bs.count, len(model.mechanism.colliders), model.collision.shapes, bs.com,
                                           bs.mass, body_reach(model.collision.shapes, bs.com),
                                           float(np.linalg.norm(bs.gravity)))


def assert_same(name: str, c: np.ndarray, py: np.ndarray, scale: float = 1.0) -> None:
    c, py = np.asarray(c), np.asarray(py)
    assert c.shape == py.shape, f"{name}: shape {c.shape} against numpy's {py.shape}"
    if py.dtype.kind in "iub":
        np.testing.assert_array_equal(c, py, err_msg=name)
    else:
        np.testing.assert_allclose(c, py, rtol=0, atol=ATOL * scale, err_msg=name)


def compare_at(integ, native, rng: np.random.Generator) -> tuple[set[int], float]:
    """Set the rows up at the integrator's knot both ways; assert they agree, and so does relinearise's measure
    along the knot's velocities pushed by up to 1 m/s and 1 rad/s (NativeRows.drift, interior_point._drift);
    the row kinds met and that measure."""
    model, state, dt = integ.model, integ.state, integ.dt
    coords = None
    if len(model.limited):
        js, fs = model.joints, model.forces
        coords = coordinates(js, fs, frames(js, state.x, state.q), state.x, state.q, state.coord_winding)
    twin_c, twin_py = copy.deepcopy(state), copy.deepcopy(state)
    pack_c = interior_point.begin(model, twin_c, coords, dt, native)
    interior_point.begin(model, twin_py, coords, dt)
    pack_py = interior_point.packed(model, twin_py)
    rc, rp = twin_c.interior.rows, twin_py.interior.rows
    for field in ("kind", "owner", "key"):
        assert_same(field, getattr(rc, field), getattr(rp, field))
    for field in ("a", "b", "key", "normal", "distance", "friction", "Ja", "Jb", "kind", "owner", "members",
                  "member_patch", "B", "curvature"):
        assert_same(f"contacts.{field}", getattr(rc.contacts, field), getattr(rp.contacts, field))
    for field in ("kind", "a", "b", "coord", "G", "side", "bound", "e_row", "e_col", "e_val"):
        assert_same(f"packed.{field}", getattr(pack_c, field), getattr(pack_py, field))
    for field in ("h0", "s_cold", "weight"):
        assert_same(f"packed.{field}", getattr(pack_c, field), getattr(pack_py, field), 1.0 / dt)
    ic, ip = twin_c.interior, twin_py.interior
    assert ic.cold == ip.cold
    assert_same("lam", ic.lam, ip.lam, 1.0 / dt)
    assert_same("s", ic.s, ip.s, 1.0 / dt)
    V = np.hstack([state.v, state.w]) + rng.uniform(-1.0, 1.0, (len(state.v), 6))
    drift = native.drift(dt, V, interior_point.CLOSE_MARGIN)
    if rp.contacts.found is not None:  # curvatures are dt^2 times velocities squared: round-off of 1e-15 m
        assert abs(drift - interior_point._drift(model, twin_py, rp.contacts, V, dt)) <= ATOL * dt
    return set(rp.kind.tolist()), drift


def compare_run(mech, steps: int) -> tuple[set[int], float]:
    """Compare at every knot of `steps` numpy steps; the row kinds met and the largest of relinearise's
    measures (0 without box contacts: only their features curve)."""
    integ = make_integrator(mech, "maximal", DT)
    integ.state.kernel = False
    native = native_rows(integ.model)
    rng = np.random.default_rng(7)
    kinds: set[int] = set()
    largest = 0.0
    for _ in range(steps):
        met, drift = compare_at(integ, native, rng)
        kinds |= met
        largest = max(largest, drift)
        integ.step()
    return kinds, largest


def test_box_drop_rows_match_numpy():
    """Falling (no contact within reach), landing on its corners and resting: gaps, the patch's cone, its
    pyramid and spin rows, warm starts."""
    kinds, drift = compare_run(load_mechanism(preset_path("box_drop")), 40)
    assert kinds == {0, 1, 2} and drift > 0.0


def test_sphere_chain_rows_match_numpy():
    """Five jointed spheres on the ground: one-point patches (no spin rows), several patches per step."""
    assert compare_run(load_mechanism(preset_path("sphere_chain")), 40)[0] == {0, 1, 2}


@pytest.mark.parametrize("seed", [1, 2])
def test_random_contact_scenes_rows_match_numpy(seed):
    """A box, a sphere and a capsule thrown onto the ground beside a limited pendulum: contacts between
    bodies and with the world, open contacts without friction rows, limit rows after the contact rows."""
    kinds, drift = compare_run(contact_scene(seed), 30)
    assert kinds == {0, 1, 2, 3} and drift > 0.0


def test_unsorted_contacts_are_refused():
    """The rows group a patch's contacts by their collider pair: an unsorted query is an error, not rows."""
    integ = make_integrator(contact_scene(1), "maximal", DT)
    native = native_rows(integ.model)
    state = integ.state
    origin, _ = native.knot(state.x, state.q, state.v, state.w, DT)
    found = integ.model.collision.detect(origin, state.q, 10.0)  # every pair within 10 m
    assert len(np.unique(found.collider_a * 100 + found.collider_b)) > 1
    order = np.arange(len(found))[::-1]
    flipped = type(found)(**{f: getattr(found, f)[order] for f in found.__dataclass_fields__})
    with pytest.raises(ValueError, match="not sorted"):
        native.rows(flipped, DT)

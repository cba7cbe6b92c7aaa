"""shape_inertia: Blender collision shapes and bone rods, against the closed forms (no Blender)."""

from __future__ import annotations

import pytest

from addon.bridge.shape_inertia import rod_mass_properties, shape_inertia


def test_collision_shape_inertia_formulas():
    m, dims = 2.0, (0.2, 0.4, 0.6)
    assert shape_inertia("BOX", m, dims)[:3] == pytest.approx(
        (m * (0.16 + 0.36) / 12, m * (0.04 + 0.36) / 12, m * (0.04 + 0.16) / 12))
    assert shape_inertia("SPHERE", m, dims)[:3] == pytest.approx((0.4 * m * 0.09,) * 3)
    r, h = 0.2, 0.6
    assert shape_inertia("CYLINDER", m, dims)[:3] == pytest.approx(
        (m * (3 * r * r + h * h) / 12, m * (3 * r * r + h * h) / 12, m * r * r / 2))
    assert shape_inertia("CONE", m, dims)[2] == pytest.approx(0.3 * m * r * r)
    capsule = shape_inertia("CAPSULE", m, (0.4, 0.4, 0.4))  # no cylinder part left: a sphere
    assert capsule[:3] == pytest.approx((0.4 * m * 0.04,) * 3)
    assert shape_inertia("CONVEX_HULL", m, dims) == shape_inertia("BOX", m, dims)


def test_a_bone_rod_has_its_centre_halfway_along_y_and_the_thin_rod_moment_across():
    com, inertia = rod_mass_properties(3.0, 2.0, 0.0)
    assert com == (0.0, 1.0, 0.0)
    assert inertia == pytest.approx((3.0 * 4.0 / 12, 0.0, 3.0 * 4.0 / 12, 0.0, 0.0, 0.0))
    assert rod_mass_properties(3.0, 2.0, 0.1)[1][1] == pytest.approx(0.5 * 3.0 * 0.01)  # solid cylinder about Y

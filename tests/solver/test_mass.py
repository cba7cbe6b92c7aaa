"""Polyhedral mass properties against closed forms: boxes, an octahedron, spheres in the limit, an L shape."""

import numpy as np
import pytest

from addon.solver.mass import MassProperties, boundary_problem, combine, polyhedron
from addon.solver.model import MechanismError

# Quads of a unit cube [0, 1]^3, counter-clockwise seen from outside.
CUBE_VERTS = np.array([(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
CUBE_QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def fan(polygons):
    return np.array([(p[0], p[i], p[i + 1]) for p in polygons for i in range(1, len(p) - 1)])


def box(size, centre=(0.0, 0.0, 0.0), rotation=np.eye(3)):
    """Vertices and triangles of a box of `size` centred at `centre`, turned by `rotation`."""
    verts = (CUBE_VERTS - 0.5) * np.asarray(size)
    return verts @ rotation.T + np.asarray(centre), fan(CUBE_QUADS)


def rotation(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def box_tensor(mass, size):
    a, b, c = size
    return np.diag([mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12])


def icosphere(level: int, radius: float = 1.0):
    """An icosahedron subdivided `level` times, vertices pushed onto the sphere, outward winding."""
    t = (1 + 5**0.5) / 2
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
             (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
             (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
             (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [np.array(v, dtype=float) / np.linalg.norm(v) for v in verts]
    for _ in range(level):
        middle: dict[tuple[int, int], int] = {}

        def mid(i, j):
            key = (min(i, j), max(i, j))
            if key not in middle:
                v = verts[i] + verts[j]
                verts.append(v / np.linalg.norm(v))
                middle[key] = len(verts) - 1
            return middle[key]

        new = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    return radius * np.array(verts), np.array(faces)


def test_box_mass_centre_and_inertia():
    size, density = (0.2, 0.5, 1.3), 7800.0
    verts, tris = box(size)
    props = polyhedron(verts, tris, density)
    mass = density * 0.2 * 0.5 * 1.3
    assert props.volume == pytest.approx(0.13, rel=1e-14)
    assert props.mass == pytest.approx(mass, rel=1e-14)
    np.testing.assert_allclose(props.com, 0.0, atol=1e-15)
    np.testing.assert_allclose(props.tensor(), box_tensor(mass, size), rtol=1e-13, atol=1e-12)


def test_turned_box_away_from_the_origin_gives_the_turned_tensor():
    """Products of inertia appear, with the sign of the tensor entries (Ixy = -int xy dm)."""
    size, centre, density = (0.3, 0.1, 0.7), (12.0, -40.0, 3.5), 1000.0
    rot = rotation((1.0, 2.0, 0.5), 0.8)
    props = polyhedron(*box(size, centre, rot), density)
    mass = density * 0.3 * 0.1 * 0.7
    np.testing.assert_allclose(props.com, centre, rtol=1e-13)
    expected = rot @ box_tensor(mass, size) @ rot.T
    np.testing.assert_allclose(props.tensor(), expected, atol=1e-12 * np.max(expected))
    assert abs(props.inertia[3]) > 1e-3 * props.inertia[0]  # the products are not trivially zero
    # far from the origin nothing is lost: the same box a kilometre away
    far = polyhedron(*box(size, np.asarray(centre) + 1000.0, rot), density)
    np.testing.assert_allclose(far.tensor(), expected, atol=1e-10 * np.max(expected))


def test_regular_octahedron_closed_form():
    """|x| + |y| + |z| <= a: V = 4 a^3 / 3, I = m a^2 / 5 about every axis (Dirichlet's simplex integral)."""
    a = 0.4
    verts = a * np.array([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], dtype=float)
    tris = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    props = polyhedron(verts, tris, 2.0)
    assert props.volume == pytest.approx(4 * a**3 / 3, rel=1e-14)
    np.testing.assert_allclose(props.tensor(), np.eye(3) * props.mass * a * a / 5, rtol=1e-13, atol=1e-16)


def test_icosphere_converges_to_the_solid_sphere_at_second_order():
    r, density = 0.5, 1000.0
    exact_volume = 4 / 3 * np.pi * r**3
    errors = []
    for level in range(1, 6):
        verts, tris = icosphere(level, r)
        props = polyhedron(verts, tris, density)
        # The centre and the products of inertia are zero by symmetry. What is left is round-off: of
        # the vertices (normalised through BLAS, each kernel rounding its own way, so the mesh is
        # symmetric to ~1 ulp) and of the sums over the T triangles, which grows like sqrt(T) eps
        # times the magnitudes summed (r for the centre, the moment for the products).
        roundoff = np.sqrt(len(tris)) * np.finfo(float).eps
        np.testing.assert_allclose(props.com, 0.0, atol=roundoff * r)
        exact_inertia = 0.4 * density * exact_volume * r * r
        moments = np.diag(props.tensor())
        np.testing.assert_allclose(moments, moments[0], rtol=1e-12)  # icosahedral symmetry: isotropic
        assert np.max(np.abs(props.inertia[3:])) < roundoff * moments[0]
        errors.append((abs(props.volume / exact_volume - 1), abs(moments[0] / exact_inertia - 1)))
        assert props.volume < exact_volume  # inscribed
    errors = np.array(errors)
    assert errors[-1, 0] < 1e-3 and errors[-1, 1] < 2e-3
    ratios = errors[:-1] / errors[1:]
    assert np.all((ratios > 3.5) & (ratios < 4.5)), ratios  # halving the edge quarters the error


def test_non_convex_shape_equals_its_parts():
    """An L made of two boxes sharing a face, as one closed mesh, against the two boxes combined."""
    # L in the x-z plane: a 2 x 1 x 1 foot and a 1 x 1 x 1 upright on its left end
    verts = np.array([(x, y, z) for z in (0, 1, 2) for y in (0, 1) for x in (0, 1, 2)], dtype=float)

    def v(x, y, z):
        return z * 6 + y * 3 + x

    quads = [
        (v(0, 0, 0), v(0, 1, 0), v(1, 1, 0), v(1, 0, 0)), (v(1, 0, 0), v(1, 1, 0), v(2, 1, 0), v(2, 0, 0)),  # bottom
        (v(1, 0, 1), v(2, 0, 1), v(2, 1, 1), v(1, 1, 1)),  # top of the foot's right half
        (v(0, 0, 2), v(1, 0, 2), v(1, 1, 2), v(0, 1, 2)),  # top of the upright
        (v(2, 0, 0), v(2, 1, 0), v(2, 1, 1), v(2, 0, 1)),  # right end
        (v(1, 0, 1), v(1, 1, 1), v(1, 1, 2), v(1, 0, 2)),  # inner wall of the upright
        (v(0, 0, 0), v(0, 0, 1), v(0, 1, 1), v(0, 1, 0)), (v(0, 0, 1), v(0, 0, 2), v(0, 1, 2), v(0, 1, 1)),  # left
        (v(0, 0, 0), v(1, 0, 0), v(1, 0, 1), v(0, 0, 1)), (v(1, 0, 0), v(2, 0, 0), v(2, 0, 1), v(1, 0, 1)),  # front
        (v(0, 0, 1), v(1, 0, 1), v(1, 0, 2), v(0, 0, 2)),
        (v(0, 1, 0), v(0, 1, 1), v(1, 1, 1), v(1, 1, 0)), (v(1, 1, 0), v(1, 1, 1), v(2, 1, 1), v(2, 1, 0)),  # back
        (v(0, 1, 1), v(0, 1, 2), v(1, 1, 2), v(1, 1, 1)),
    ]
    props = polyhedron(verts, fan(quads), 3.0)
    foot, upright = box((2, 1, 1), (1, 0.5, 0.5)), box((1, 1, 1), (0.5, 0.5, 1.5))
    parts = combine([polyhedron(*foot, 3.0), polyhedron(*upright, 3.0)])
    assert props.volume == pytest.approx(3.0, rel=1e-14)
    np.testing.assert_allclose(props.com, parts.com, rtol=1e-14)
    np.testing.assert_allclose(props.tensor(), parts.tensor(), atol=1e-13)
    assert props.inertia[4] > 0.1  # Ixz: mass sits at +x low and -x high, so -int xz dm > 0


def test_inward_winding_gives_the_same_solid():
    verts, tris = box((1.0, 2.0, 3.0), (0.1, 0.2, 0.3))
    outward = polyhedron(verts, tris, 1.0)
    inward = polyhedron(verts, tris[:, ::-1], 1.0)
    assert inward == outward


def test_combine_two_point_like_parts():
    a = MassProperties(1.0, 1e-3, (1.0, 0.0, 0.0), (0.0,) * 6)
    b = MassProperties(1.0, 1e-3, (-1.0, 0.0, 0.0), (0.0,) * 6)
    both = combine([a, b])
    assert both.com == (0.0, 0.0, 0.0)
    np.testing.assert_allclose(both.inertia, (0.0, 2.0, 2.0, 0.0, 0.0, 0.0))


def test_meshes_that_bound_no_solid_are_refused_by_name():
    verts, tris = box((1.0, 1.0, 1.0))
    with pytest.raises(MechanismError, match=r"^object 'Lid': .*not closed: 3 edges"):
        polyhedron(verts, tris[:-1], 1.0, "object 'Lid'")
    flipped = tris.copy()
    flipped[0] = flipped[0, ::-1]
    with pytest.raises(MechanismError, match="not wound consistently"):
        polyhedron(verts, flipped, 1.0, "bone 'arm'")
    square = np.array([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], dtype=float)
    with pytest.raises(MechanismError, match="encloses no volume"):
        polyhedron(square, [(0, 1, 2), (0, 2, 3), (1, 0, 3), (1, 3, 2)], 1.0)  # both sides of a square
    with pytest.raises(MechanismError, match="density must be a positive"):
        polyhedron(verts, tris, 0.0, "object 'Box'")
    with pytest.raises(MechanismError, match="no faces"):
        polyhedron(verts, np.zeros((0, 3), dtype=int), 1.0)
    assert boundary_problem(tris) is None

"""graindem.core: the one trilinear kernel, the rotations and the cell's minimum image.

References: a linear field, which trilinear interpolation and its extrapolation reproduce exactly; two
independent formulas of the same rotation (matrix and quaternion sandwich); a brute-force search over
the 27 neighbouring images of the cell lattice.
"""

import itertools

import numpy as np

from graindem.core.cell import min_image, min_image_tilted, minimum_image
from graindem.core.grid import interpolate, trilinear
from graindem.core.rotations import quat_matrix, random_quaternions, rotate_rows


def test_trilinear_reproduces_a_linear_field_inside_and_outside_the_grid():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=3), 0.7
    origin, h, shape = np.array([-1.0, 0.5, 2.0]), 0.25, (7, 5, 9)
    nodes = np.stack(np.meshgrid(*[origin[d] + h * np.arange(shape[d]) for d in range(3)], indexing="ij"), -1)
    values = nodes @ a + b
    upper = origin + h * (np.array(shape) - 1)
    pts = rng.uniform(origin - 1.0, upper + 1.0, size=(500, 3))  # many outside the grid
    v, g = interpolate(values, origin, h, pts, with_gradient=True)
    np.testing.assert_allclose(v, pts @ a + b, atol=1e-12)
    np.testing.assert_allclose(g, np.broadcast_to(a, g.shape), atol=1e-12)
    flat = values.ravel()
    for p in pts[:50]:
        inside = bool(np.all(p >= origin) and np.all(p <= upper))
        assert trilinear(flat, 0, *shape, *origin, h, *p)[4] == inside


def test_quaternion_matrix_and_sandwich_agree():
    q = random_quaternions(np.random.default_rng(1), 200)
    v = np.random.default_rng(2).normal(size=(200, 3))
    by_matrix = np.array([quat_matrix(q[k]) @ v[k] for k in range(200)])
    np.testing.assert_allclose(rotate_rows(q, v), by_matrix, atol=1e-14)
    for k in range(5):
        R = quat_matrix(q[k])
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-14)
        assert np.linalg.det(R) > 0


def _nearest_image(d, h):
    """Brute force: the shortest of d + i a + j b + k c over i, j, k in -1..1 (rows of h are a, b, c)."""
    best = None
    for i, j, k in itertools.product((-1, 0, 1), repeat=3):
        e = d + i * h[0] + j * h[1] + k * h[2]
        if best is None or e @ e < best @ best:
            best = e
    return best


def test_minimum_image_matches_a_search_over_the_images():
    rng = np.random.default_rng(3)
    L = np.array([3.0, 2.5, 4.0])
    for _ in range(200):
        tilt = rng.uniform(-0.5, 0.5, 3) * np.array([L[0], L[0], L[1]])
        h = np.array([[L[0], 0, 0], [tilt[0], L[1], 0], [tilt[1], tilt[2], L[2]]])
        # a separation within 0.3 of the smallest height, seen from a random image
        d0 = rng.normal(size=3)
        d0 *= 0.3 * 1.9 / np.linalg.norm(d0)
        d = d0 + rng.integers(-1, 2, 3) @ h
        got = np.array(min_image_tilted(*d, *L, *tilt, True, True, True))
        np.testing.assert_allclose(got, _nearest_image(d, h), atol=1e-12)
        np.testing.assert_allclose(minimum_image(d[None], L, tilt, (True, True, True))[0], got, atol=1e-12)
    # the orthogonal cell's comparisons give the tilted rule's result with zero tilts
    for _ in range(200):
        d = rng.uniform(-1.4, 1.4, 3) * L
        np.testing.assert_allclose(min_image(*d, *L, True, True, True),
                                   min_image_tilted(*d, *L, 0.0, 0.0, 0.0, True, True, True), atol=1e-12)

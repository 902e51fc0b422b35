"""Level-set grain templates: mass properties against closed forms, the signed distance, nodes, bad input.

Tolerances: the smoothed-Heaviside integral (Richardson-combined, see levelset.py) of an exact signed
distance is accurate to ~1e-4 relative at 8-12 cells per half-width (measured 1e-5..6e-4 on these
shapes); we allow 3e-3, an order of magnitude below the 1 % error of a plain smoothed Heaviside, so
a regression to the uncorrected integral fails. Shapes whose signed distance comes from a
triangulation (ellipsoid, superquadric, meshes) carry the chord error of that triangulation as well.
"""

import math

import meshio
import numpy as np
import pytest

from graindem.contact.levelset_contact import query_points
from graindem.particles import LevelSetGrain

TOL = 3e-3


def box_inertia(V, a, b, c):
    """Principal moments (per unit density) of a box with full edge lengths a, b, c."""
    return V / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


@pytest.fixture(scope="module")
def sphere():
    return LevelSetGrain.sphere(1.0, spacing=0.1)


def test_sphere_mass_properties(sphere):
    V = 4.0 / 3.0 * math.pi
    assert sphere.volume == pytest.approx(V, rel=TOL)
    np.testing.assert_allclose(sphere.principal_inertia, 0.4 * V * np.ones(3), rtol=TOL)
    np.testing.assert_allclose(sphere.centroid, 0.0, atol=1e-12)
    # marching-cubes area of the zero level set, and the node weights partition it exactly
    assert sphere.surface_area == pytest.approx(4 * math.pi, rel=1e-2)
    assert sphere.areas.sum() == pytest.approx(sphere.surface_area, rel=1e-12)


def test_ellipsoid_mass_properties():
    a, b, c = 2.0, 1.0, 0.5
    g = LevelSetGrain.ellipsoid(a, b, c, spacing=0.0625, n_nodes=800)
    V = 4.0 / 3.0 * math.pi * a * b * c
    assert g.volume == pytest.approx(V, rel=TOL)
    # a along body x: smallest moment about x; principal_inertia sorted ascending
    I = V / 5.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    np.testing.assert_allclose(g.inertia, I, rtol=TOL)
    np.testing.assert_allclose(g.principal_inertia, np.sort(I), rtol=TOL)
    assert g.nodes.shape == (800, 3)
    assert g.frame_residual < 1e-4


def test_cylinder_cuboid_superquadric_mass_properties():
    R, H = 1.0, 0.5
    cyl = LevelSetGrain.cylinder(R, H, spacing=0.0625, n_nodes=400)
    V = math.pi * R * R * 2 * H
    assert cyl.volume == pytest.approx(V, rel=TOL)
    np.testing.assert_allclose(cyl.inertia, [V * (3 * R * R + 4 * H * H) / 12] * 2 + [V * R * R / 2], rtol=TOL)

    box = LevelSetGrain.rounded_cuboid(1.0, 0.5, 0.25, 0.0, spacing=0.03125, n_nodes=400)
    np.testing.assert_allclose(box.volume, 1.0, rtol=TOL)
    np.testing.assert_allclose(box.inertia, box_inertia(1.0, 2.0, 1.0, 0.5), rtol=TOL)

    # rounded cube of half-edge 1, radius r: V = 8(1-r)^3 + 6 * 4 r (1-r)^2 + 3 pi r^2 (2(1-r)) + 4/3 pi r^3
    r = 0.3
    rc = LevelSetGrain.rounded_cuboid(1.0, 1.0, 1.0, r, spacing=0.0625, n_nodes=400)
    s = 2 * (1 - r)
    V = s**3 + 6 * s * s * r + 3 * math.pi * r * r * s + 4.0 / 3.0 * math.pi * r**3
    assert rc.volume == pytest.approx(V, rel=TOL)

    # superquadric with e1 = e2 = 1 is the ellipsoid; e1 = e2 -> 0.1 approaches the box
    sq = LevelSetGrain.superquadric(1.0, 0.8, 0.6, 1.0, 1.0, spacing=0.075, n_nodes=300)
    assert sq.volume == pytest.approx(4.0 / 3.0 * math.pi * 0.48, rel=TOL)
    # closed form of a superquadric volume: 2abc e1 e2 B(e1/2 + 1, e1) B(e2/2, e2/2) (-> 4/3 pi abc at 1, 1)
    from scipy.special import beta

    e1, e2 = 0.5, 0.7
    sq2 = LevelSetGrain.superquadric(1.0, 0.8, 0.6, e1, e2, spacing=0.05, n_nodes=300)
    V = 2 * 0.48 * e1 * e2 * beta(e1 / 2 + 1, e1) * beta(e2 / 2, e2 / 2)
    assert sq2.volume == pytest.approx(V, rel=5e-3)  # sharper edges: chord and grid errors both larger


def test_phi_is_the_trilinear_signed_distance(sphere):
    rng = np.random.default_rng(1)
    # at grid points phi is exact
    idx = rng.integers(0, sphere.grid_shape, size=(50, 3))
    pts = sphere.grid_origin + sphere.spacing * idx
    np.testing.assert_allclose(sphere.phi(pts), np.linalg.norm(pts, axis=1) - 1.0, atol=1e-12)
    # between grid points: trilinear interpolation of |x| - R errs by at most h^2/(8R) per axis-ish
    d = rng.normal(size=(2000, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    pts = d * rng.uniform(0.7, 1.3, size=(2000, 1))
    err = np.abs(sphere.phi(pts) - (np.linalg.norm(pts, axis=1) - 1.0))
    assert err.max() < 3 * sphere.spacing**2 / (8 * 0.7)
    # the numba kernel used by the contacts agrees with the public numpy method, gradient included
    out = np.empty((len(pts), 4))
    query_points(sphere.phi_grid.ravel(), 0, *sphere.grid_shape, *sphere.grid_origin, sphere.spacing, pts, out)
    val, grad = sphere.phi_and_gradient(pts)
    np.testing.assert_allclose(out[:, 0], val, atol=1e-12)
    np.testing.assert_allclose(out[:, 1:], grad, atol=1e-10)
    # gradient against a central difference of phi inside cells (trilinear is smooth there)
    e = 1e-6
    fd = np.stack([(sphere.phi(pts + e * np.eye(3)[k]) - sphere.phi(pts - e * np.eye(3)[k])) / (2 * e)
                   for k in range(3)], axis=1)
    np.testing.assert_allclose(np.median(np.abs(fd - grad)), 0.0, atol=1e-6)


def test_nodes_on_surface_with_outward_normals(sphere):
    r = np.linalg.norm(sphere.nodes, axis=1)
    np.testing.assert_allclose(sphere.phi(sphere.nodes), 0.0, atol=1e-9)  # on the trilinear zero set
    assert np.abs(r - 1.0).max() < sphere.spacing**2  # ... which lies within O(h^2) of the sphere
    cosang = np.einsum("ij,ij->i", sphere.normals, sphere.nodes / r[:, None])
    assert cosang.min() > 0.99
    assert sphere.n_nodes == len(sphere.nodes) == len(sphere.areas)
    assert np.all(sphere.areas > 0)


def _box_mesh(a, b, c):
    v = np.array([[x, y, z] for x in (0, a) for y in (0, b) for z in (0, c)], dtype=float)
    f = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
         [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    return v, np.array(f)


def _rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


@pytest.mark.parametrize("ext", ["stl", "obj"])
def test_from_mesh_rotated_box(tmp_path, ext):
    a, b, c = 1.0, 0.6, 0.3
    v, f = _box_mesh(a, b, c)
    Q = _rotation([1, 2, 3], 0.7)
    shift = np.array([5.0, -2.0, 1.0])
    v = (v - [a / 2, b / 2, c / 2]) @ Q.T + shift
    path = tmp_path / f"box.{ext}"
    meshio.write(str(path), meshio.Mesh(v, [("triangle", f)]))
    g = LevelSetGrain.from_mesh(path, spacing=0.015, n_nodes=300)  # 10 cells per half-thickness
    V = a * b * c
    assert g.volume == pytest.approx(V, rel=TOL)
    np.testing.assert_allclose(g.principal_inertia, np.sort(box_inertia(V, a, b, c)), rtol=TOL)
    np.testing.assert_allclose(g.centroid, shift, atol=1e-3 * a)
    # body axes (columns of rotation) are the box edges, ascending moment: longest edge first
    assert abs(abs(g.rotation[:, 0] @ Q[:, 0]) - 1) < 1e-9
    assert abs(abs(g.rotation[:, 2] @ Q[:, 2]) - 1) < 1e-9


def test_from_triangles_nonconvex_torus():
    """A torus triangulated by marching cubes: the signed distance must get the sign right in the hole."""
    from skimage import measure

    Rt, r = 1.0, 0.35
    x = np.linspace(-1.6, 1.6, 81)
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    F = (np.sqrt(X**2 + Y**2) - Rt) ** 2 + Z**2 - r * r
    v, f, _, _ = measure.marching_cubes(F, 0.0, spacing=(x[1] - x[0],) * 3)
    g = LevelSetGrain.from_triangles(v + x[0], f, spacing=0.06, n_nodes=400)
    V = 2 * math.pi**2 * Rt * r * r
    I = V * np.array([Rt * Rt / 2 + 5 / 8 * r * r, Rt * Rt / 2 + 5 / 8 * r * r, Rt * Rt + 0.75 * r * r])
    # the marching-cubes polyhedron is inscribed (measured -0.3 % at this resolution); allow 1 %
    assert g.volume == pytest.approx(V, rel=1e-2)
    np.testing.assert_allclose(g.principal_inertia, I, rtol=1e-2)
    assert g.phi(np.zeros(3)) == pytest.approx(Rt - r, abs=0.01)  # the hole is outside
    # half-way between the tube's centre line (a ridge of phi, blurred by interpolation) and its surface
    assert g.phi(g.rotation.T @ (np.array([0, Rt + r / 2, 0]) - g.centroid)) == pytest.approx(-r / 2, abs=0.01)


def test_from_voxels_box_and_ball():
    img = np.zeros((30, 20, 14), bool)
    img[5:25, 5:15, 4:10] = True  # 20 x 10 x 6 voxels
    vs = 0.1
    # grid at half the voxel size: the EDT is voxel-accurate only (phi = -0.25 instead of -0.3 on the
    # mid-plane of a 6-voxel slab), and the mass integral needs |phi| > 2 eps = 3 h there
    g = LevelSetGrain.from_voxels(img, vs, spacing=vs / 2, n_nodes=300)
    a, b, c = 2.0, 1.0, 0.6
    V = a * b * c
    # phi is exact at voxel centres but interpolated between them: outside edges and corners the
    # distance is convex and the interpolant overestimates it (up to half a voxel at a corner), which
    # shaves ~1 % off the volume of a box this small (measured -0.97 %) and ~2 % off its moments (the
    # missing material sits at the far edges; measured -1.9..-2.6 %). Allowed: 1.5 % and 3.5 %. This is
    # the accuracy of voxel input at 10 voxels per edge, not of the integration (see the analytic box).
    assert g.volume == pytest.approx(V, rel=1.5e-2)
    np.testing.assert_allclose(g.inertia, box_inertia(V, a, b, c), rtol=3.5e-2)
    np.testing.assert_allclose(g.centroid, [1.45, 0.95, 0.65], atol=1e-9)  # voxel-centre coordinates
    # a voxelised ball: the staircase volume is the voxel count; the smooth ball is within ~1 %
    n = 32
    x = np.arange(n) - (n - 1) / 2
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    ball = X**2 + Y**2 + Z**2 <= 12.0**2
    gb = LevelSetGrain.from_voxels(ball, 1.0, n_nodes=400)
    assert gb.volume == pytest.approx(ball.sum(), rel=1e-2)
    assert gb.volume == pytest.approx(4 / 3 * math.pi * 12.0**3, rel=2e-2)


def test_from_voxels_rotated_ellipsoid_finds_its_principal_axes():
    Q = _rotation([1, 2, 3], 0.7)
    a, b, c = 14.0, 9.0, 6.0  # voxels
    n = 36
    x = np.arange(n) - (n - 1) / 2
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    P = np.stack([X, Y, Z], -1) @ Q  # coordinates along the ellipsoid's axes
    img = (P[..., 0] / a) ** 2 + (P[..., 1] / b) ** 2 + (P[..., 2] / c) ** 2 <= 1
    g = LevelSetGrain.from_voxels(img, 1.0, n_nodes=300)
    V = 4 / 3 * math.pi * a * b * c
    I = V / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    # staircase + interpolation of phi between voxel centres: measured -0.8 % (volume), -1.1 % (moments)
    assert g.volume == pytest.approx(V, rel=1.5e-2)
    np.testing.assert_allclose(g.principal_inertia, I, rtol=2e-2)
    # body axes = the ellipsoid's axes, long axis first (measured within 0.2 degrees)
    for k in range(3):
        assert abs(g.rotation[:, k] @ Q[:, k]) > math.cos(math.radians(1.0))


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="spacing"):
        LevelSetGrain.sphere(1.0, spacing=0.0)
    with pytest.raises(ValueError, match="spacing"):
        LevelSetGrain.sphere(1.0, spacing=-0.1)
    with pytest.raises(ValueError, match="too coarse"):
        LevelSetGrain.sphere(1.0, spacing=0.6)
    with pytest.raises(ValueError, match="too coarse"):
        LevelSetGrain.ellipsoid(2.0, 1.0, 0.1, spacing=0.1)
    with pytest.raises(ValueError, match="radius"):
        LevelSetGrain.sphere(float("nan"))
    with pytest.raises(ValueError, match="n_nodes"):
        LevelSetGrain.sphere(1.0, spacing=0.2, n_nodes=2)
    with pytest.raises(ValueError, match="e1"):
        LevelSetGrain.superquadric(1, 1, 1, e1=3.0)
    with pytest.raises(ValueError, match="voxel_size"):
        LevelSetGrain.from_voxels(np.ones((3, 3, 3), bool), 0.0)
    v, f = _box_mesh(1, 1, 1)
    path = tmp_path / "open.stl"
    meshio.write(str(path), meshio.Mesh(v, [("triangle", f[:-1])]))  # one face missing: a hole
    with pytest.raises(ValueError, match="not closed"):
        LevelSetGrain.from_mesh(path, spacing=0.1)
    f_bad = f.copy()
    f_bad[0] = f_bad[0, [0, 2, 1]]  # one face flipped: inconsistent orientation
    with pytest.raises(ValueError, match="not closed"):
        LevelSetGrain.from_triangles(v, f_bad, spacing=0.1)
    with pytest.raises(ValueError, match="too coarse"):
        LevelSetGrain.from_triangles(v * [1, 1, 0.1], f, spacing=0.1)


def test_bad_mesh_and_voxel_files_are_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        LevelSetGrain.from_mesh(tmp_path / "missing.stl")
    garbage = tmp_path / "garbage.stl"
    garbage.write_bytes(b"\x00\x01solid nonsense\xff" * 7)
    with pytest.raises(ValueError, match="garbage.stl.*(cannot be read|holds no triangles)"):
        LevelSetGrain.from_mesh(garbage)
    garbage_obj = tmp_path / "garbage.obj"
    garbage_obj.write_text("v 1 2\nf 1 2 x\n")
    with pytest.raises(ValueError, match="garbage.obj.*(cannot be read|holds no triangles)"):
        LevelSetGrain.from_mesh(garbage_obj)
    with pytest.raises(ValueError, match="booleans or integers"):
        LevelSetGrain.from_voxels(np.ones((4, 4, 4)), 1.0)
    with pytest.raises(ValueError, match="0 \\(void\\) and 1 \\(solid\\)"):
        LevelSetGrain.from_voxels(np.full((4, 4, 4), 7, dtype=np.int16), 1.0)
    with pytest.raises(ValueError, match="voxels; at most"):
        LevelSetGrain.from_voxels(np.lib.stride_tricks.as_strided(np.zeros(1, bool), (1024, 1024, 1024),
                                                                    (0, 0, 0)), 1.0)
    with pytest.raises(ValueError, match="one connected solid region"):
        img = np.zeros((8, 8, 8), bool)
        img[1:3, 1:3, 1:3] = img[5:7, 5:7, 5:7] = True
        LevelSetGrain.from_voxels(img, 1.0)

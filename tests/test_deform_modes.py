"""Modes, generalized mass/stiffness and modal responses against closed forms.

References: Euler–Bernoulli bending energy of the simply supported first mode, the kinetic-energy
integral ∫ρ|Φ|² done by hand for the same mode, uniform dilatation of a sphere, and exact integrals
of piecewise-linear / polynomial force laws.
"""

import numpy as np
import pytest
from scipy.integrate import quad

from graindem.deform.grid import GridField
from graindem.deform.modes import (AnalyticMode, BeamBendingMode, GridMode, generalized_mass,
                                   generalized_stiffness, tabulate_modes, volume)
from graindem.deform.response import (APPENDIX_B_EPS, APPENDIX_B_FORCE, FittedEnergy, LinearResponse,
                                      TabulatedForce)

L, B, H = 160.0, 4.0, 4.0            # the seed's Table 1 beam, voxel units
I_AREA = B * H ** 3 / 12.0           # second moment of the cross-section about the neutral axis
AREA = B * H


def box_sdf(half):
    half = np.asarray(half, float)

    def sdf(p):
        q = np.abs(p) - half
        return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
    return sdf


@pytest.fixture(scope="module")
def beam_grid():
    return GridField.sample(box_sdf([L / 2, B / 2, H / 2]), [-83, -5, -5], [83, 5, 5], 1.0)


def euler_bernoulli_modal_stiffness(youngs):
    # U = ½ EI ∫ w''² dx with w = ε sin(πx/L): ∫ (π/L)^4 sin² = (π/L)^4 L/2
    return youngs * I_AREA * np.pi ** 4 / (2.0 * L ** 3)


def test_bending_mode_kinematics():
    mode = BeamBendingMode(L)
    pts = np.array([[0.0, 0.3, 1.0], [-L / 2, 0.0, 2.0], [L / 2, 0.0, -2.0]])
    u = mode.displacement(pts)
    assert u[0, 2] == pytest.approx(-1.0)            # mid-span deflects by ε (normalization, §4.1)
    assert u[0, 0] == pytest.approx(0.0, abs=1e-15)  # no axial motion at mid-span
    assert np.allclose(u[1:, 2], 0.0, atol=1e-15)    # supports do not move
    # analytic gradient against central differences of the displacement
    rng = np.random.default_rng(1)
    x = rng.uniform([-80, -2, -2], [80, 2, 2], size=(50, 3))
    fd = AnalyticMode(mode.displacement, fd_step=1e-4).gradient(x)
    assert np.allclose(mode.gradient(x), fd, atol=1e-8)


def test_bending_stiffness_matches_euler_bernoulli(beam_grid):
    # ν = 0: the mode's only strain is E_xx = −z w'' (shear strains cancel exactly), so the energy
    # density (λ+2μ)E_xx² equals E E_xx² and eq. 4 must give Euler–Bernoulli's EI π⁴/(2L³).
    mode = BeamBendingMode(L)
    reference = euler_bernoulli_modal_stiffness(1.0)
    errors = [generalized_stiffness([mode], beam_grid, 1.0, 0.0, quad_spacing=q)[0, 0] / reference - 1
              for q in (0.25, 0.125)]
    # smoothed-Heaviside quadrature is second order: halving the spacing must cut the error ~4x,
    # and at h/8 the remaining error (band smoothing of the z² moment on a 4-voxel-thick beam) < 1 %
    assert abs(errors[1]) < 0.01
    assert 3.0 < abs(errors[0] / errors[1]) < 5.5


def test_bending_stiffness_poisson_factor(beam_grid):
    # with ν ≠ 0 the mode is laterally constrained (uniaxial strain): factor (1−ν)/((1+ν)(1−2ν))
    mode = BeamBendingMode(L)
    k0 = generalized_stiffness([mode], beam_grid, 1.0, 0.0, quad_spacing=0.25)[0, 0]
    k3 = generalized_stiffness([mode], beam_grid, 1.0, 0.3, quad_spacing=0.25)[0, 0]
    assert k3 / k0 == pytest.approx(0.7 / (1.3 * 0.4), rel=1e-10)


def test_bending_mass_matches_hand_integral(beam_grid):
    # ∫ρ(Φ_x² + Φ_z²) = ρ [A L/2 + I (π/L)² L/2] (sin² and cos² average ½ over the span)
    mode = BeamBendingMode(L)
    rho = 2.5
    reference = rho * (AREA * L / 2 + I_AREA * (np.pi / L) ** 2 * L / 2)
    m = generalized_mass([mode], beam_grid, rho, quad_spacing=0.125)[0, 0]
    assert m == pytest.approx(reference, rel=2e-3)   # volume quadrature error measured < 0.1 %


def test_sphere_dilatation_mode():
    # Φ = X/R: M = ρ∫r²/R² dV = 4πρR³/5; E = I/R so (C:E):E = 9 K_bulk / R², K = 9 K_bulk V / R²
    radius, rho, youngs, nu = 10.0, 1.0, 100.0, 0.3
    grid = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - radius, [-13] * 3, [13] * 3, 1.0)
    mode = AnalyticMode(lambda p: p / radius,
                        gradient=lambda p: np.broadcast_to(np.eye(3) / radius, (p.shape[0], 3, 3)))
    vol = 4.0 / 3.0 * np.pi * radius ** 3
    bulk = youngs / (3 * (1 - 2 * nu))
    m = generalized_mass([mode], grid, rho, quad_spacing=0.25)[0, 0]
    k = generalized_stiffness([mode], grid, youngs, nu, quad_spacing=0.25)[0, 0]
    # the trilinear φ of a sphere sampled at spacing R/10 cuts chords: volume error O(h²/R) ~ 0.3 %
    assert volume(grid, quad_spacing=0.25) == pytest.approx(vol, rel=5e-3)
    assert m == pytest.approx(4 * np.pi * rho * radius ** 3 / 5, rel=1e-2)
    assert k == pytest.approx(9 * bulk * vol / radius ** 2, rel=5e-3)


def test_grid_mode_reproduces_analytic_bending(beam_grid):
    # The tabulated (numerical) version of the same mode, interpolated trilinearly. Values: the
    # interpolation error of sin(πx/160) at spacing 1 is (πh/L)²/8 ~ 5e-5. Stiffness: a trilinear
    # field has cell-wise gradients, so ∂Φ_x/∂z (pointwise) and ∂Φ_z/∂x (cell difference) no longer
    # cancel: a parasitic shear E_xz = ½k² sin(kx)(x − x_cell_mid) appears. Averaging over a cell by
    # hand gives an extra energy fraction h²/(2t²) for thickness t (ν = 0): 3.1 % at h = 1, t = 4,
    # 0.78 % at h = 0.5. Compared against the analytic mode on the same quadrature (cancelling the
    # quadrature error), the excess must follow that prediction.
    analytic = BeamBendingMode(L)
    rng = np.random.default_rng(2)
    x = rng.uniform([-80, -2, -2], [80, 2, 2], size=(200, 3))
    k_analytic = generalized_stiffness([analytic], beam_grid, 1.0, 0.0, quad_spacing=0.125)[0, 0]
    for h in (1.0, 0.5):
        grid = GridField.sample(lambda p: np.zeros(len(p)), [-83, -5, -5], [83, 5, 5], h)
        numeric = GridMode(tabulate_modes([analytic], grid)[0], grid.origin, grid.spacing)
        assert np.allclose(numeric.displacement(x), analytic.displacement(x), atol=2e-4 * h * h)
        k = generalized_stiffness([numeric], beam_grid, 1.0, 0.0, quad_spacing=0.125)[0, 0]
        predicted = h * h / (2 * H * H)
        assert k / k_analytic - 1 == pytest.approx(predicted, rel=0.15)


def test_grid_mode_from_scattered_points():
    # a linear field is reproduced exactly by Delaunay interpolation inside the hull
    rng = np.random.default_rng(3)
    pts = rng.uniform(-5, 5, size=(400, 3))
    a = np.array([[0.1, 0.2, 0.0], [0.0, -0.3, 0.05], [0.2, 0.0, 0.1]])
    mode = GridMode.from_scattered(pts, pts @ a.T, [-2, -2, -2], (5, 5, 5), 1.0)
    q = rng.uniform(-1.5, 1.5, size=(30, 3))
    assert np.allclose(mode.displacement(q), q @ a.T, atol=1e-10)
    assert np.allclose(mode.gradient(q), np.broadcast_to(a, (30, 3, 3)), atol=1e-10)


def test_grid_modes_from_fem_mode_file(tmp_path):
    # a mode file holding a linear field on a tetrahedral mesh: barycentric interpolation is exact, so
    # the grid mode must reproduce the field (and its constant strain) everywhere inside the mesh
    from scipy.spatial import Delaunay

    from graindem.deform.modes import grid_modes_from_file
    from graindem.fem import ModeSet, write_mode_file

    axes = np.linspace(-3, 3, 5)
    nodes = np.stack(np.meshgrid(axes, axes, axes, indexing="ij"), axis=-1).reshape(-1, 3)
    inner = np.all(np.abs(nodes) < 2.9, axis=1)
    # jiggle interior nodes so that no tetrahedron of the Delaunay mesh is flat
    nodes[inner] += np.random.default_rng(5).uniform(-0.1, 0.1, size=(inner.sum(), 3))
    tets = Delaunay(nodes).simplices
    v = nodes[tets]
    six_vol = np.abs(np.einsum("ij,ij->i", v[:, 1] - v[:, 0], np.cross(v[:, 2] - v[:, 0], v[:, 3] - v[:, 0])))
    tets = tets[six_vol > 1e-9]      # drop the flat tetrahedra Qhull leaves on the coplanar box faces
    a = np.array([[0.01, 0.02, 0.0], [0.0, -0.03, 0.01], [0.02, 0.0, 0.04]])
    path = tmp_path / "modes.h5"
    write_mode_file(path, ModeSet(nodes=nodes, tets=tets, phi=(nodes @ a.T)[None]))
    grid = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - 2.0, [-3, -3, -3], [3, 3, 3], 0.5)
    (mode,) = grid_modes_from_file(path, grid)
    q = np.random.default_rng(6).uniform(-2.9, 2.9, size=(40, 3))
    assert np.allclose(mode.displacement(q), q @ a.T, atol=1e-12)
    # eq. 4 for this constant strain: K = V (λ tr E² + 2μ E:E), on the sphere of radius 2
    e = 0.5 * (a + a.T)
    lam, mu = 0.3 / (1.3 * 0.4), 1 / 2.6
    k = generalized_stiffness([mode], grid, 1.0, 0.3, quad_spacing=0.125)[0, 0]
    vol = volume(grid, quad_spacing=0.125)
    assert k == pytest.approx(vol * (lam * np.trace(e) ** 2 + 2 * mu * np.sum(e * e)), rel=1e-9)


def test_tabulated_force_energy_is_exact_integral():
    table = TabulatedForce(APPENDIX_B_EPS, APPENDIX_B_FORCE)
    for e in (0.003, 0.05, 0.1234, 0.16, 0.17):
        exact, _ = quad(lambda x: table.force([x])[0], 0.0, e, points=APPENDIX_B_EPS[1:-1], limit=200)
        assert table.energy([e]) == pytest.approx(exact, rel=1e-9)
        h = 1e-7
        dudx = (table.energy([e + h]) - table.energy([e - h])) / (2 * h)
        assert dudx == pytest.approx(table.force([e])[0], rel=1e-5)
    assert table.force([0.0365])[0] == pytest.approx(134.77)
    assert table.force([-0.0365])[0] == pytest.approx(-134.77)
    assert table.max_tangent()[0, 0] == pytest.approx(np.max(np.diff(APPENDIX_B_FORCE) /
                                                            np.diff(APPENDIX_B_EPS)))


def test_fitted_energy_recovers_known_potential():
    # U = 3ε1² + ε1ε2 + 2ε2² + 5ε1⁴ − ε1²ε2² (inside the degree-4 basis): both fits must recover it
    def energy(e):
        return 3 * e[:, 0] ** 2 + e[:, 0] * e[:, 1] + 2 * e[:, 1] ** 2 + 5 * e[:, 0] ** 4 - e[:, 0] ** 2 * e[:, 1] ** 2

    def force(e):
        return np.stack([6 * e[:, 0] + e[:, 1] + 20 * e[:, 0] ** 3 - 2 * e[:, 0] * e[:, 1] ** 2,
                         e[:, 0] + 4 * e[:, 1] - 2 * e[:, 0] ** 2 * e[:, 1]], axis=1)
    rng = np.random.default_rng(4)
    samples = rng.uniform(-0.5, 0.5, size=(60, 2))
    probe = rng.uniform(-0.4, 0.4, size=(10, 2))
    for fitted in (FittedEnergy.fit_energies(samples, energy(samples), degree=4),
                   FittedEnergy.fit_forces(samples, force(samples), degree=4)):
        for p, f_ref, u_ref in zip(probe, force(probe), energy(probe)):
            assert np.allclose(fitted.force(p), f_ref, rtol=1e-8, atol=1e-10)
            assert fitted.energy(p) == pytest.approx(u_ref, rel=1e-8, abs=1e-12)


def test_linear_response_and_input_checks():
    r = LinearResponse([[2.0, 0.5], [0.5, 1.0]])
    assert np.allclose(r.force([1.0, 2.0]), [3.0, 2.5])
    assert r.energy([1.0, 2.0]) == pytest.approx(0.5 * (2 + 2 * 0.5 * 2 + 4))
    with pytest.raises(ValueError, match="symmetric"):
        LinearResponse([[1.0, 0.2], [0.0, 1.0]])
    with pytest.raises(ValueError, match="strictly increasing"):
        TabulatedForce([0.0, 0.2, 0.1], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="length"):
        BeamBendingMode(-1.0)
    with pytest.raises(ValueError, match="poisson"):
        generalized_stiffness([BeamBendingMode(L)], lambda p: p[:, 0], 1.0, 0.5,
                              bounds=([0, 0, 0], [1, 1, 1]))
    with pytest.raises(ValueError, match="quad_spacing"):
        generalized_mass([BeamBendingMode(L)], lambda p: p[:, 0], 1.0, bounds=([0, 0, 0], [1, 1, 1]),
                         quad_spacing=0.0)

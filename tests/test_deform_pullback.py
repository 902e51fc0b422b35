"""The refined semi-Lagrangian pull-back (Newton steps, fixed-point iterations, per-step corner cache)
and the validations' wall schedules.

References: the inverse X of x = X + u(X) found by scipy's root finder on scipy's own trilinear
interpolation of the tabulated mode field (no graindem kernel involved), φ0 interpolated by scipy at
those points; the closed form of the geometric schedule; the uncached computation for the cache (the
cache must return the very same numbers, only fewer times computed).
"""

import numpy as np
import pytest
from scipy.interpolate import RegularGridInterpolator
from scipy.optimize import root

from graindem.deform.grid import GridField
from graindem.deform.levelset_update import SemiLagrangianLevelSet
from graindem.deform.modes import AnalyticMode, tabulate_modes
from graindem.deform.response import LinearResponse
from graindem.deform.scenes import StandinCompactionMode, compaction_sphere
from graindem.deform.validation import WallSchedule, deformable_simulation

R = 8.0
EPS = np.array([0.16, 0.5])


@pytest.fixture(scope="module")
def field():
    grid = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - R, [-13] * 3, [13] * 3, 1.0)
    # a strongly non-uniform compaction (|ε∇Φ| up to 0.48 at the poles) plus a bending-like second mode,
    # so that the first-order pull-back is visibly wrong and the two modes' Jacobians mix
    shear = AnalyticMode(lambda p: np.stack([0.2 * p[:, 1] ** 2 / R, np.zeros(len(p)), 0.1 * p[:, 0] * p[:, 2] / R],
                                            axis=1))
    modes = [StandinCompactionMode(R), shear]
    table = tabulate_modes(modes, grid)
    axes = [grid.origin[d] + np.arange(grid.shape[d]) for d in range(3)]
    u_ref = RegularGridInterpolator(axes, np.einsum("a,a...->...", EPS, table), bounds_error=False, fill_value=None)
    phi_ref = RegularGridInterpolator(axes, grid.values, bounds_error=False, fill_value=None)
    return grid, modes, table, u_ref, phi_ref


def reference_inverse(u_ref, x):
    residual = lambda X: X + u_ref(X[None])[0] - x  # noqa: E731
    sol = root(residual, x - u_ref(x[None])[0], method="hybr", tol=1e-13)
    # the field is piecewise trilinear: at a kink hybr may stop with "no good progress" although the
    # residual is at round-off; the residual is what counts
    assert np.abs(residual(sol.x)).max() < 1e-12
    return sol.x


def points_near_deformed_surface(u_ref, n, seed=0):
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    surface = R * d
    return surface + u_ref(surface) + d * rng.uniform(-1.0, 1.0, size=(n, 1))


def test_newton_and_fixed_point_pull_back_match_scipy_inverse(field):
    grid, modes, table, u_ref, phi_ref = field
    x = points_near_deformed_surface(u_ref, 60)
    X_ref = np.array([reference_inverse(u_ref, p) for p in x])
    errors = {}
    for method, n in (("fixed_point", 0), ("fixed_point", 4), ("newton", 1), ("newton", 2), ("newton", 3)):
        ls = SemiLagrangianLevelSet(grid, modes, mode_table=table, inverse_iterations=n, inverse_method=method)
        ls.update(EPS)
        errors[method, n] = np.abs(ls.reference_points(x) - X_ref).max()
    # the seed's first order misses by |u(x) − u(X)| ~ |ε∇Φ| |u|: several tenths of a voxel here
    assert errors["fixed_point", 0] > 0.1
    # fixed point: linear convergence at rate |ε∇Φ| <= ~0.5; Newton: quadratic from the first-order start
    # (a step that crosses a cell face sees a jump of ∇u, hence not exactly quadratic). Measured errors:
    # 4 fixed-point iterations ~1e-2, Newton 1 / 2 / 3 steps ~1e-2 / 1e-5 / 1e-12
    assert errors["fixed_point", 4] < 0.05
    assert errors["newton", 1] < errors["fixed_point", 0] / 10
    assert errors["newton", 2] < 1e-4
    assert errors["newton", 3] < 1e-9


def test_pull_back_phi_and_cache_equal_reference(field):
    grid, modes, table, u_ref, phi_ref = field
    x = points_near_deformed_surface(u_ref, 40, seed=1)
    h = grid.spacing

    def reference_phi(p):
        # φ at the 8 corners of p's cell from the exact inverse, trilinear in the cell (the scheme's
        # definition), all evaluated by scipy
        g = (p - grid.origin) / h
        base = np.floor(g).astype(int)
        t = g - base
        value = 0.0
        for corner in np.ndindex(2, 2, 2):
            c = grid.origin + h * (base + corner)
            w = np.prod(np.where(np.array(corner) == 1, t, 1 - t))
            value += w * phi_ref(reference_inverse(u_ref, c)[None])[0]
        return value

    ref = np.array([reference_phi(p) for p in x])
    plain = SemiLagrangianLevelSet(grid, modes, mode_table=table, inverse_iterations=3, inverse_method="newton")
    cached = SemiLagrangianLevelSet(grid, modes, mode_table=table, inverse_iterations=3, inverse_method="newton",
                                    cache=True)
    # a cache filled at other amplitudes must not leak into the next update
    cached.update(0.5 * EPS)
    cached.query(x)
    plain.update(EPS)
    cached.update(EPS)
    phi_plain, grad_plain = plain.query(x)
    phi_cached, grad_cached = cached.query(x)
    phi_again, _ = cached.query(x[::-1])
    assert np.abs(phi_plain - ref).max() < 1e-8
    np.testing.assert_array_equal(phi_cached, phi_plain)
    np.testing.assert_array_equal(grad_cached, grad_plain)
    np.testing.assert_array_equal(phi_again[::-1], phi_plain)


def test_engine_cached_newton_run_equals_uncached():
    # two spheres pressed together by two walls: the cache must change nothing but the cost
    tpl = compaction_sphere(n_nodes=100)
    results = []
    for cache in (False, True):
        walls = [((-19.8, 0, 0), (1, 0, 0), (0.05, 0, 0)), ((19.8, 0, 0), (-1, 0, 0), (-0.05, 0, 0))]
        sim = deformable_simulation(tpl, [[-10.0, 0, 0], [10.0, 0, 0]], [[1e3]], LinearResponse([[5e4]]), planes=walls,
                                    dt=0.01, modal_damping=[[1e3]], contact_stiffness=2e4, contact_damping=50.0,
                                    contact="both", pullback="corners", inverse_iterations=1, inverse_method="newton",
                                    pullback_cache=cache)
        forces = []
        sim.run(400, callback=lambda s: forces.append(s.deformable.o_force.copy()), every=100)
        results.append((sim.deformable.eps.copy(), sim.deformable.pos.copy(), np.array(forces)))
    assert results[0][0][0] > 0.01   # the spheres were compacted, the contacts were exercised
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)


def test_geometric_schedule_closed_form_and_end():
    s = WallSchedule("geometric", u_end=4.8, speed=0.05, tau=20.0, u0=0.01)
    t = np.linspace(0.0, s.total_time * 1.05, 20001)
    u = s.travel(t)
    assert np.all(np.diff(u) >= 0)
    assert u[0] == 0.0 and s.travel(s.total_time) == pytest.approx(4.8, abs=1e-12) and u[-1] == 4.8
    # exponential phase: u = u0 e^{(t−τ)/τ}, i.e. constant logarithmic rate 1/τ
    mid = (t > s.tau) & (t < s.t_switch)
    np.testing.assert_allclose(u[mid], 0.01 * np.exp((t[mid] - 20.0) / 20.0), rtol=1e-12)
    # the switch happens where the exponential's speed reaches the constant one: u = τ v
    assert s.u_switch == pytest.approx(20.0 * 0.05)
    speed = np.diff(u) / np.diff(t)
    assert speed.max() <= 0.05 * (1 + 1e-6)
    # constant schedule: the smooth profile ends at u_end with mean speed as given
    c = WallSchedule("constant", u_end=2.0, speed=0.01)
    assert c.total_time == pytest.approx(200.0) and c.travel(200.0) == pytest.approx(2.0)
    assert np.all(np.diff(c.travel(np.linspace(0, 200, 1001))) >= 0)


def test_engine_follows_prescribed_motion_exactly():
    tpl = compaction_sphere(n_nodes=30)
    s = WallSchedule("geometric", u_end=1.5, speed=0.1, tau=2.0, u0=0.05)
    n = 997
    dt = s.total_time / (n - 3)
    sim = deformable_simulation(tpl, [[0.0, 0, 0]], [[1e3]], LinearResponse([[1e4]]),
                                planes=[((30.0, 0, 0), (-1, 0, 0), (-1.0, 0, 0))], dt=dt, travel=s)
    records = []
    sim.run(n, callback=lambda sm: records.append(sm.deformable.window_means()), every=1)
    assert sim.wall_positions()[0, 0] == pytest.approx(30.0 - 1.5, abs=1e-9)   # ~1000 increments summed
    # the recorded positions are the schedule's, sampled at the step times
    t = np.array([r["t"] for r in records])
    x = np.array([r["obstacle_position"][0, 0] for r in records])
    np.testing.assert_allclose(30.0 - x, s.travel(t), atol=0.1 * dt)


def test_bad_inputs_raise():
    grid = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - R, [-10] * 3, [10] * 3, 1.0)
    with pytest.raises(ValueError, match="inverse_method"):
        SemiLagrangianLevelSet(grid, [StandinCompactionMode(R)], inverse_method="secant")
    with pytest.raises(ValueError, match="tau"):
        WallSchedule("geometric", 1.0, 0.1, tau=0.0, u0=0.01)
    with pytest.raises(ValueError, match="u0"):
        WallSchedule("geometric", 1.0, 0.1, tau=1.0, u0=2.0)
    with pytest.raises(ValueError, match="kind"):
        WallSchedule("linear", 1.0, 0.1)
    tpl = compaction_sphere(n_nodes=30)
    with pytest.raises(ValueError, match="travel"):
        deformable_simulation(tpl, [[0.0, 0, 0]], [[1.0]], LinearResponse([[1.0]]), travel=3.0)
    with pytest.raises(ValueError, match="inverse_method"):
        deformable_simulation(tpl, [[0.0, 0, 0]], [[1.0]], LinearResponse([[1.0]]), inverse_method="exact")


# ---- point-wise pull-back: the query point itself is inverted, φ(x) = φ0(X), ∇φ = (I + ∇u(X))^{-T} ∇φ0(X)


def test_point_pull_back_matches_scipy_reference(field):
    grid, modes, table, u_ref, phi_ref = field
    x = points_near_deformed_surface(u_ref, 60, seed=2)

    def reference_phi(pts):
        return phi_ref(np.array([reference_inverse(u_ref, p) for p in pts]))

    ref = reference_phi(x)
    # gradient reference: central differences of the scipy φ0∘X; a difference straddling a kink of the
    # piecewise-trilinear fields is detected by its two one-sided halves disagreeing and left out
    step = 1e-5
    fd = np.empty_like(x)
    smooth = np.ones(len(x), dtype=bool)
    for axis, e in enumerate(np.eye(3)):
        plus = reference_phi(x + step * e)
        minus = reference_phi(x - step * e)
        fd[:, axis] = (plus - minus) / (2 * step)
        smooth &= np.abs((plus - ref) - (ref - minus)) / step < 1e-4
    assert smooth.sum() >= 50
    errors = {}
    for n in (0, 1, 3):
        ls = SemiLagrangianLevelSet(grid, modes, mode_table=table, inverse_iterations=n, inverse_method="newton",
                                    pullback="point")
        ls.update(EPS)
        phi, grad = ls.query(x)
        errors[n] = np.abs(phi - ref).max()
        if n == 1:
            # one step leaves the Newton error of the inverse (quadratic in the first-order one): large
            # only where the step crosses a cell face of the mode field (∇u jumps), small elsewhere
            assert np.median(np.abs(phi - ref)) < 1e-3
        if n == 3:
            # three Newton steps reach the scipy root to ~1e-12 (test above); round-off of the root
            # (tol 1e-13) over the difference step bounds the reference gradient's own error to ~1e-8
            assert errors[3] < 1e-9
            rel = np.linalg.norm(grad - fd, axis=1)[smooth] / np.linalg.norm(fd[smooth], axis=1)
            assert rel.max() < 1e-5
    assert errors[0] > 0.1                  # the seed's first order applied to the point: visibly off
    assert errors[1] < errors[0] / 4        # one Newton step: measured 0.059 max against 0.29


def test_point_pull_back_of_affine_field_is_exact():
    # u(X) = ε (A X + b) is reproduced exactly by the trilinear mode table and φ0 = n·X − c by the
    # trilinear level set, so the pull-back has a closed form: X = (I + εA)^{-1} (x − εb),
    # φ = n·X − c, ∇φ = (I + εA)^{-T} n; Newton converges in one step on an affine map
    A = np.array([[0.3, 0.1, 0.0], [-0.05, -0.2, 0.1], [0.02, 0.0, 0.15]])
    b = np.array([0.5, -0.3, 0.2])
    normal = np.array([0.6, -0.48, 0.64])
    c = 0.7
    grid = GridField.sample(lambda p: p @ normal - c, [-8] * 3, [8] * 3, 1.0)
    mode = AnalyticMode(lambda p: p @ A.T + b)
    eps = 0.8
    rng = np.random.default_rng(5)
    x = rng.uniform(-4.0, 4.0, size=(50, 3))
    F = np.eye(3) + eps * A
    X = np.linalg.solve(F, (x - eps * b).T).T
    exact_phi = X @ normal - c
    exact_grad = np.linalg.solve(F.T, normal)
    ls = SemiLagrangianLevelSet(grid, [mode], inverse_iterations=1, inverse_method="newton", pullback="point")
    ls.update([eps])
    phi, grad = ls.query(x)
    np.testing.assert_allclose(phi, exact_phi, atol=1e-12)
    np.testing.assert_allclose(grad, np.broadcast_to(exact_grad, grad.shape), atol=1e-12)
    np.testing.assert_allclose(ls.reference_points(x), X, atol=1e-12)
    first = SemiLagrangianLevelSet(grid, [mode], pullback="point")
    first.update([eps])
    assert np.abs(first.phi(x) - exact_phi).max() > 0.05   # the test tells the inversions apart


def test_engine_point_pull_back_contact_force_equals_reference():
    # two compacted spheres overlapping: the force on the slave after one step (v = Δt F / m from rest)
    # against Σ_k a_k k_s (−φ(x_k)) n(x_k) over its nodes with φ = φ0(X), X the scipy root of
    # X + u(X) = x (master frame), and n the normalized central difference of that reference φ
    tpl = compaction_sphere(n_nodes=100)
    eps = 0.03
    ks = 2e4
    centres = np.array([[-9.3, 0.2, -0.1], [9.3, 0.0, 0.0]])
    dt = 1e-3
    sim = deformable_simulation(tpl, centres, [[1e3]], LinearResponse([[5e4]]), dt=dt, contact_stiffness=ks,
                                contact="one", inverse_iterations=3, inverse_method="newton", pullback="point", eps=[eps])
    sim.run(1)
    engine_force = sim.deformable.vel[0] * sim.deformable.mass[0] / dt

    grid = tpl.phi0
    table = tabulate_modes(tpl.modes, grid)
    axes = [grid.origin[d] + grid.spacing * np.arange(grid.shape[d]) for d in range(3)]
    u_ref = RegularGridInterpolator(axes, eps * table[0], bounds_error=False, fill_value=None)
    phi_ref = RegularGridInterpolator(axes, grid.values, bounds_error=False, fill_value=None)

    def reference_phi(p):
        return phi_ref(reference_inverse(u_ref, p)[None])[0]

    slave_nodes = centres[0] + tpl.nodes + eps * tpl.modes[0].displacement(tpl.nodes)
    expected = np.zeros(3)
    n_contacts = 0
    step = 1e-6
    for x, area in zip(slave_nodes - centres[1], tpl.node_areas):
        if np.linalg.norm(x) > 12.0:
            continue
        phi = reference_phi(x)
        if phi >= 0.0:
            continue
        grad = np.array([(reference_phi(x + step * e) - reference_phi(x - step * e)) / (2 * step) for e in np.eye(3)])
        expected += area * ks * (-phi) * grad / np.linalg.norm(grad)
        n_contacts += 1
    assert n_contacts >= 5
    # φ agrees to ~1e-12 and the normals to ~1e-8 (the root's tolerance over the difference step)
    np.testing.assert_allclose(engine_force, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


def test_point_pull_back_bad_inputs_raise():
    grid = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - R, [-10] * 3, [10] * 3, 1.0)
    with pytest.raises(ValueError, match="pullback"):
        SemiLagrangianLevelSet(grid, [StandinCompactionMode(R)], pullback="points")
    with pytest.raises(ValueError, match="cache"):
        SemiLagrangianLevelSet(grid, [StandinCompactionMode(R)], pullback="point", cache=True)
    tpl = compaction_sphere(n_nodes=30)
    with pytest.raises(ValueError, match="pullback"):
        deformable_simulation(tpl, [[0.0, 0, 0]], [[1.0]], LinearResponse([[1.0]]), pullback="cell")
    with pytest.raises(ValueError, match="pullback_cache"):
        deformable_simulation(tpl, [[0.0, 0, 0]], [[1.0]], LinearResponse([[1.0]]), pullback="point",
                              pullback_cache=True)

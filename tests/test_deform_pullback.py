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

from graindem.deform.engine import DeformableScene, Obstacle
from graindem.deform.grid import GridField
from graindem.deform.levelset_update import SemiLagrangianLevelSet
from graindem.deform.modes import AnalyticMode, tabulate_modes
from graindem.deform.response import LinearResponse
from graindem.deform.scenes import StandinCompactionMode, compaction_sphere
from graindem.deform.validation import WallSchedule

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
        walls = [Obstacle.plane((-19.8, 0, 0), (1, 0, 0), velocity=(0.05, 0, 0)),
                 Obstacle.plane((19.8, 0, 0), (-1, 0, 0), velocity=(-0.05, 0, 0))]
        scene = DeformableScene(tpl, [[-10.0, 0, 0], [10.0, 0, 0]], [[1e3]], LinearResponse([[5e4]]),
                                modal_damping=[[1e3]], contact_stiffness=2e4, contact_damping=50.0,
                                obstacles=walls, pairs=[(0, 1)], both_ways=True, inverse_iterations=1,
                                inverse_method="newton", pullback_cache=cache)
        out = scene.run(400, 0.01, record_every=100)
        results.append((scene.eps.copy(), scene.pos.copy(), out["obstacle_force"]))
    assert results[0][0][0, 0] > 0.01   # the spheres were compacted, the contacts were exercised
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
    wall = Obstacle.plane((30.0, 0, 0), (-1, 0, 0), velocity=(-1.0, 0, 0))
    scene = DeformableScene(tpl, [[0.0, 0, 0]], [[1e3]], LinearResponse([[1e4]]), obstacles=[wall], motion=s)
    n = 997
    dt = s.total_time / (n - 3)
    out = scene.run(n, dt, record_every=1)
    assert wall.point[0] == pytest.approx(30.0 - 1.5, abs=1e-9)   # ~1000 increments summed
    # the recorded positions are the schedule's, sampled at the step times
    t = out["t"]
    np.testing.assert_allclose(30.0 - out["obstacle_position"][:, 0, 0], s.travel(t), atol=0.1 * dt)


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
    with pytest.raises(ValueError, match="motion"):
        DeformableScene(tpl, [[0.0, 0, 0]], [[1.0]], LinearResponse([[1.0]]), motion=3.0)
    with pytest.raises(ValueError, match="inverse_method"):
        DeformableScene(tpl, [[0.0, 0, 0]], [[1.0]], LinearResponse([[1.0]]), inverse_method="exact")

"""Measure the four level-set update strategies: accuracy near the surface, cost per query and per step,
memory. Used by `benchmarks/deformable_validation.py` (levelset_strategies.json) and by the tests (small).

Accuracy reference: the exact signed distance to the deformed reference triangulation at the query
points themselves (strategy 1 without its grid), so strategy 1's own grid error is reported too.
"semi_lagrangian_iter4" is strategy 3 with the pull-back refined by four fixed-point iterations of
X = x − u(X), "semi_lagrangian_newton1/2" by one/two Newton steps on X + u(X) = x (not in the seed;
they remove the first-order inverse error of eq. 47), "semi_lagrangian_point_newton1/2" the same
inversions applied to the query point itself (φ = φ0(X), normal by the chain rule; no corner
interpolation). The per-step corner cache is not used here: a
batch of random query points would reuse corners far more than the contact nodes of a step do (its
effect is measured in the engine, benchmarks/deformable_cost.py).
Query points: surface points of the deformed grain offset by up to ``band`` along random directions;
errors are reported for |φ_exact| < h and < 2h.
"""

import time

import numpy as np

from graindem.deform.levelset_update import (AdvectedLevelSet, RecomputeLevelSet, SemiLagrangianLevelSet,
                                             TabulatedLevelSet, grid_query_kernel)


def _time_queries(strategy, points, repeats=5):
    strategy.query(points[:16])  # compile / warm up
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        strategy.query(points)
        best = min(best, time.perf_counter() - t0)
    return best / len(points) * 1e9


def measure_strategies(phi0, modes, surface_vertices, surface_faces, eps_target, tab_samples,
                       advect_steps=200, n_queries=100_000, n_accuracy=20_000, seed=0):
    """Run the four strategies to amplitudes ``eps_target`` and return a dict of measurements.

    Strategy 2 is driven along the straight path 0 → eps_target in ``advect_steps`` equal steps (its
    error depends on the path's number of steps, since each step diffuses); its per-step cost is the
    mean over those steps.
    """
    eps_target = np.atleast_1d(np.asarray(eps_target, dtype=np.float64))
    h = phi0.spacing
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    rec = RecomputeLevelSet(phi0, modes, surface_vertices, surface_faces)
    setup_rec = time.perf_counter() - t0
    t0 = time.perf_counter()
    semi = SemiLagrangianLevelSet(phi0, modes)
    setup_semi = time.perf_counter() - t0
    refined = [SemiLagrangianLevelSet(phi0, modes, mode_table=semi.mode_table, inverse_iterations=n,
                                      inverse_method=method, pullback=pullback)
               for pullback, method, n in (("corners", "fixed_point", 4), ("corners", "newton", 1),
                                           ("corners", "newton", 2), ("point", "newton", 1),
                                           ("point", "newton", 2))]
    t0 = time.perf_counter()
    adv = AdvectedLevelSet(phi0, modes)
    setup_adv = time.perf_counter() - t0
    tab = TabulatedLevelSet(phi0, modes, tab_samples, surface_vertices, surface_faces)

    step_cost = {}
    rec.update(eps_target * 0.5)
    rec_times = []
    for f in (0.9, 1.0):
        rec.update(eps_target * f)
        rec_times.append(rec.update_seconds)
    step_cost["recompute"] = float(np.mean(rec_times))
    adv_times = []
    de = eps_target / advect_steps
    for s in range(1, advect_steps + 1):
        adv.update(eps_target * s / advect_steps, eps_dot=de, dt=1.0)
        adv_times.append(adv.update_seconds)
    step_cost["advection"] = float(np.mean(adv_times[1:]))
    for s in [semi, *refined, tab]:
        s.update(eps_target * 0.99)
        s.update(eps_target)
        step_cost[s.name] = float(s.update_seconds)

    verts = rec.deformed_vertices(eps_target)
    pick = rng.choice(len(verts), size=n_accuracy)
    d = rng.normal(size=(n_accuracy, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    pts = verts[pick] + d * rng.uniform(0, 2 * h, size=(n_accuracy, 1))
    exact = rec.exact(pts)
    results = {}
    strategies = (rec, adv, semi, *refined, tab)
    query_pts = np.ascontiguousarray(np.resize(pts, (n_queries, 3)))
    rigid_out = np.empty(n_queries)
    rigid_grad = np.empty((n_queries, 3))
    grid_query_kernel(phi0.values, phi0.origin, h, query_pts[:16], rigid_out[:16], rigid_grad[:16])
    t_best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        grid_query_kernel(phi0.values, phi0.origin, h, query_pts, rigid_out, rigid_grad)
        t_best = min(t_best, time.perf_counter() - t0)
    rigid_ns = t_best / n_queries * 1e9
    setup = {"recompute": setup_rec, "advection": setup_adv, "semi_lagrangian": setup_semi,
             "tabulated": tab.preprocess_seconds, **{s.name: setup_semi for s in refined}}
    for s in strategies:
        phi, _ = s.query(pts)
        err = phi - exact
        entry = {}
        for label, width in (("h", h), ("2h", 2 * h)):
            near = np.abs(exact) < width
            e = err[near]
            entry[f"rms_error_within_{label}"] = float(np.sqrt(np.mean(e ** 2)))
            entry[f"max_error_within_{label}"] = float(np.max(np.abs(e)))
            entry[f"p95_error_within_{label}"] = float(np.percentile(np.abs(e), 95))
        entry["query_ns"] = float(_time_queries(s, query_pts))
        entry["query_cost_vs_rigid"] = entry["query_ns"] / rigid_ns
        entry["update_seconds_per_step"] = step_cost[s.name]
        entry["preprocess_seconds"] = float(setup[s.name])
        entry["memory_bytes"] = int(s.memory_bytes())
        results[s.name] = entry
    results["_meta"] = {
        "grid_shape": list(phi0.shape), "spacing": h, "n_modes": len(modes),
        "eps_target": eps_target.tolist(), "tab_samples": [list(map(float, t)) for t in tab_samples],
        "advect_steps": advect_steps, "n_accuracy_points": n_accuracy, "n_timed_queries": n_queries,
        "rigid_query_ns": rigid_ns, "reference": "exact signed distance to the deformed reference "
        "triangulation (libigl) at the query points",
        "surface_vertices": int(len(surface_vertices)), "reference_grid_bytes": int(phi0.nbytes),
    }
    return results


def markdown_table(results_by_grain):
    """The README table: one row per (grain, strategy)."""
    lines = ["| grain | strategy | rms err (|φ|<h) | max err (|φ|<h) | rms err (|φ|<2h) | query ns | "
             "query / rigid | update per step (s) | preprocess (s) | memory (MB) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for grain, res in results_by_grain.items():
        for name in ("recompute", "advection", "semi_lagrangian", "semi_lagrangian_iter4",
                     "semi_lagrangian_newton1", "semi_lagrangian_newton2", "semi_lagrangian_point_newton1",
                     "semi_lagrangian_point_newton2", "tabulated"):
            if name not in res:
                continue
            r = res[name]
            lines.append(f"| {grain} | {name} | {r['rms_error_within_h']:.3f} | {r['max_error_within_h']:.3f} | "
                         f"{r['rms_error_within_2h']:.3f} | {r['query_ns']:.0f} | {r['query_cost_vs_rigid']:.1f} | "
                         f"{r['update_seconds_per_step']:.2e} | {r['preprocess_seconds']:.2f} | "
                         f"{r['memory_bytes'] / 1e6:.2f} |")
    return "\n".join(lines)

"""Spheres and level-set grains in one run: each check's error against its independent reference.

    python benchmarks/mixed_checks.py --json benchmarks/data/mixed_checks.json [--quick]

Writes {"cases": {NAME: {"error", "tolerance", "reference", "what", ...}}, "energy_balance": {...}}; the
scenes are graindem.verification.mixed_scenes (the ones tests/test_mixed_kinds.py and
test_mixed_cell_and_hertz.py assert on). benchmarks/check_plots.py --mixed FILE draws mixed_checks.png from
it, benchmarks/tables.py renders the tables of docs/verification.md from it. A case with tolerance
None is reported beside the checked ones (outside the range the check claims).

Cases (area law unless named):
- free_collision_*_momentum: a sphere thrown at a spinning ellipsoid grain, no gravity or walls:
  relative change of the total linear momentum and of the angular momentum about a fixed point.
- pressed_sphere_d*: a sphere (R = 0.8) pressed into a fixed level-set sphere grain (R = 1, h = R/20,
  6000 nodes) at overlap d: |F / F_integral - 1| against the area law's continuum integral over the
  grain's surface (quadrature); checked at d = 0.06 and 0.12.
- settled_spheres_weight: four spheres settled in the pockets of a fixed bed of nine ellipsoids
  inside walls: |force on bed and walls / weight - 1| (statics).
- energy_balance_*: |energy balance error| / largest energy term at the finest of a series of time
  steps, for the walled box (area law, a lid moving), the walled box with the "hertz_curvature"
  law, and the periodic cell compressed and sheared; the whole series under "energy_balance".
- ellipsoid_tip_hertz_d*: a sphere on an ellipsoid's tip ("hertz_curvature" law): |F / P - 1|
  against Johnson's elliptical Hertz P.
- grain_vs_sphere_collision_*: an oblique collision with spins of a sphere on a level-set sphere grain
  (h = R/12, "hertz_curvature") against the same collision of two sphere particles (Jäger's law):
  largest normal and tangential force difference along the history over the largest force of the
  sphere run, and the final velocity difference over the impact speed.
- sheared_cell_*: a grain-sphere pair across the faces of a sheared, compressed periodic cell against
  the same pair in the middle (forces, translation invariance), and the Love-Weber stress of one
  pair against F ⊗ l / V: largest difference over the scale.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

FULL = {"overlaps": (0.03, 0.06, 0.12, 0.20),
        "dt_area": (5e-4, 2.5e-4, 1.25e-4), "dt_hertz": (1.25e-4, 6.25e-5, 3.125e-5),
        "dt_cell": (5e-4, 2.5e-4, 1.25e-4)}
# the quick form: the checked overlaps, each energy balance at the finest step alone
QUICK = {"overlaps": (0.06, 0.12), "dt_area": (1.25e-4,), "dt_hertz": (3.125e-5,), "dt_cell": (1.25e-4,)}
CHECKED_OVERLAPS = (0.06, 0.12)
TOL_ENERGY = 3e-3  # the tolerance of grains alone (tests/test_levelset_cell.py)


def case(error, tolerance, reference, what, **extra):
    return {"error": float(error), "tolerance": None if tolerance is None else float(tolerance),
            "reference": reference, "what": what, **extra}


def ellipsoid(n_nodes):
    from graindem.particles import LevelSetGrain
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=n_nodes)


def momentum_cases(grain):
    from graindem.verification.mixed_scenes import free_collision, momenta
    sim = free_collision(grain)
    sim.setup()
    about = np.array([0.7, -1.3, 0.4])
    p0, L0 = momenta(sim, about)
    sim.run(2000)
    p1, L1 = momenta(sim, about)
    what = "free collision of a sphere (R = 0.5) with a (1, 0.7, 0.5) ellipsoid grain, friction and damping"
    return {"free_collision_linear_momentum": case(np.abs(p1 - p0).max() / np.abs(p0).max(), 1e-13,
                                                   "conservation", what + ": total linear momentum"),
            "free_collision_angular_momentum": case(np.abs(L1 - L0).max() / np.abs(L0).max(), 1e-13,
                                                    "conservation", what + ": angular momentum about a fixed point",
                                                    speed_change=float(np.linalg.norm(sim.vel[0] - (-0.6, 0, 0.05))))}


def pressed_sphere_cases(overlaps):
    from graindem.particles import LevelSetGrain
    from graindem.verification.mixed_scenes import continuum_area_force, pressed_sphere
    grain = LevelSetGrain.sphere(1.0, spacing=0.05, n_nodes=6000)
    k_s = 1e4
    out = {}
    for d in overlaps:
        sim, e = pressed_sphere(grain, d, k_s)
        ref = continuum_area_force(k_s, 1.0, 0.8, d)
        f = sim.force[0]
        along = float(f @ e)
        out[f"pressed_sphere_d{d:g}"] = case(
            abs(along / ref - 1.0), 0.03 if d in CHECKED_OVERLAPS else None,
            "the area law's continuum integral (quadrature)",
            f"a sphere (R = 0.8) pressed into a level-set sphere grain (R = 1, h = R/20, 6000 nodes), d = {d:g}",
            overlap=d, force=along, integral=ref, signed_error=along / ref - 1.0,
            lateral_over_integral=float(np.linalg.norm(f - along * e) / ref))
    return out


def settling_case(grain):
    from graindem.verification.mixed_scenes import settling_bed
    sim = settling_bed(grain)
    sim.run(3000)
    m = sim.measure()
    weight = float(sim.mass.sum()) * 9.81
    down = float(sim.grains.force[:, 2].sum()) + float(sim.wall_forces()[:, 2].sum())
    return {"settled_spheres_weight": case(
        abs(-down / weight - 1.0), 0.01, "statics: the force on the bed and walls equals the spheres' weight",
        "four spheres settled under gravity in the pockets of a fixed bed of nine ellipsoids inside walls, "
        "3000 steps", kinetic_energy=m["kinetic_energy"], kinetic_over_mgR=m["kinetic_energy"] / (weight * 0.4),
        sphere_grain_contacts=int(m["n_sphere_grain_contacts"]))}


def balance(sim, dt, duration):
    """Run `sim` (built with time step dt) for `duration` s; its energy balance and the largest term."""
    steps = int(round(duration / dt))
    sim.run(steps)
    m = sim.measure()
    terms = [m[k] for k in ("kinetic_energy", "elastic_normal_energy", "tangential_energy", "frictional_dissipation",
                            "viscous_dissipation", "gravity_work", "boundary_work")]
    scale = max(abs(t) for t in terms)
    return {"dt": dt, "steps": steps, "error": m["energy_balance_error"],
            "largest_term": scale, "relative_error": abs(m["energy_balance_error"]) / scale,
            "boundary_work": m["boundary_work"], "gravity_work": m["gravity_work"],
            "dissipation_by_kind": {k: v["frictional_dissipation"] + v["viscous_dissipation"]
                                    for k, v in m["contact_energies"].items()}}


def energy_cases(area_grain, hertz_grain, cfg):
    from graindem.verification.mixed_scenes import sheared_cell, walled_box
    scenes = {
        "walled_box_area": (lambda dt: walled_box(area_grain, dt), cfg["dt_area"], 1.5,
                            "three ellipsoids and six spheres in a walled box under gravity, a lid moving down, "
                            "friction and dampers, area law, 1.5 s"),
        "walled_box_hertz_curvature": (lambda dt: walled_box(hertz_grain, dt, "hertz_curvature"), cfg["dt_hertz"],
                                       1.5, "three ellipsoids and five spheres in a walled box under gravity, "
                                       "friction and dampers, hertz_curvature law, 1.5 s"),
        "sheared_cell": (lambda dt: sheared_cell(area_grain, dt), cfg["dt_cell"], 2.0,
                         "three ellipsoids and six spheres in a periodic cell compressed along x and z and sheared "
                         "in xy, friction and dampers, area law, 2 s"),
    }
    cases, series = {}, {}
    for name, (build, dts, duration, what) in scenes.items():
        rows = [balance(build(dt), dt, duration) for dt in dts]
        series[name] = {"what": what, "rows": rows}
        finest = rows[-1]
        cases[f"energy_balance_{name}"] = case(
            finest["relative_error"], TOL_ENERGY, "the energy balance (work = change of kinetic and stored "
            "energy + dissipation)", what + f", dt = {finest['dt']:g}", dt=finest["dt"])
    return cases, series


def tip_cases():
    from graindem.verification.mixed_scenes import sphere_on_ellipsoid_tip
    out = {}
    for delta in (1e-3, 1e-2):
        sim, P = sphere_on_ellipsoid_tip(delta)
        f = sim.force[0]
        out[f"ellipsoid_tip_hertz_d{delta:g}"] = case(
            abs(f[0] / P - 1.0), 0.03, "Johnson's elliptical Hertz (§4.2)",
            f"a sphere (R = 2) on the x tip of a fixed ellipsoid (1, 2, 1) grain, hertz_curvature law, "
            f"overlap {delta:g}", force=float(f[0]), johnson=P, lateral_over_P=float(np.hypot(f[1], f[2]) / P))
    return out


def collision_cases():
    from graindem.particles import LevelSetGrain
    from graindem.verification.mixed_scenes import force_on_small, oblique_collision
    grain = LevelSetGrain.sphere(1.0, spacing=1.0 / 12)
    runs = {"grain": oblique_collision(grain, 1.0, 0.5), "sphere": oblique_collision(None, 1.0, 0.5)}
    hist = {k: [] for k in runs}
    for k, sim in runs.items():
        sim.run(3500, callback=lambda s, k=k: hist[k].append(force_on_small(s)), every=1)
    # a mixed step ends with the grain-sphere forces at the drifted positions, the sphere loop's step
    # starts with its forces at the positions it drifts from: step k of the first is step k + 1 of the second
    g, s = hist["grain"][:-1], hist["sphere"][1:]
    fn = {k: np.array([h[0] for h in v]) for k, v in (("grain", g), ("sphere", s))}
    ft = {k: np.array([h[1] for h in v]) for k, v in (("grain", g), ("sphere", s))}
    n_max = np.linalg.norm(fn["sphere"], axis=1).max()
    t_max = np.linalg.norm(ft["sphere"], axis=1).max()
    what = ("an oblique collision with spins of a sphere (R = 0.5) on a level-set sphere grain (R = 1, h = R/12), "
            "hertz_curvature and Jäger's law")
    ref = "the same collision of two sphere particles (the sphere engine's contact)"
    return {
        "grain_vs_sphere_collision_normal": case(np.linalg.norm(fn["grain"] - fn["sphere"], axis=1).max() / n_max,
                                                 0.01, ref, what + ": normal force along the history / its peak"),
        "grain_vs_sphere_collision_tangential": case(
            np.linalg.norm(ft["grain"] - ft["sphere"], axis=1).max() / t_max, 0.01, ref,
            what + ": tangential force along the history / its peak", tangential_over_normal_peak=t_max / n_max),
        "grain_vs_sphere_collision_velocity": case(
            np.abs(runs["grain"].vel[0] - runs["sphere"].vel[1]).max() / 0.6, 0.003, ref,
            what + ": final velocity of the small sphere / the impact speed")}


def sheared_cell_cases(grain):
    from graindem.verification.mixed_scenes import CELL_SIZE, sheared_pair
    middle = sheared_pair(grain, (3.0, 2.5, 3.0))
    middle.run(30)
    across = sheared_pair(grain, np.array((3.0, 2.5, 3.0)) + (-3.4, 3.4, 3.35))
    across.run(30)
    scale = np.abs(middle.force).max()
    diff = max(np.abs(a - b).max() for a, b in ((across.force, middle.force), (across.torque, middle.torque),
                                                 (across.grains.force, middle.grains.force),
                                                 (across.grains.torque, middle.grains.torque))) / scale
    one = sheared_pair(grain, (6.2, 6.0, 3.0))  # the sphere lies across the y face
    one.run(15)
    d = one.pos[0] - one.grains.pos[0]
    h = one.cell_matrix
    d = d - h.T @ np.round(np.linalg.solve(h.T, d))
    expected = np.outer(one.force[0], d) / one.volume
    return {
        "sheared_cell_pair_across_faces": case(
            diff, 1e-9, "translation invariance: the same pair in the middle of the cell",
            "a grain-sphere pair across the faces of a periodic cell sheared in xy and compressed in z",
            tilt_over_L=float(middle.cell_matrix[1, 0] / CELL_SIZE)),
        "sheared_cell_stress_of_one_pair": case(
            np.abs(one.stress() - expected).max() / np.abs(expected).max(), 1e-9,
            "Love-Weber stress F ⊗ l / V of the pair's one contact",
            "a grain-sphere pair across the y face of the sheared cell")}


def run(quick=False):
    from graindem.io.progress import Progress
    cfg = dict(QUICK if quick else FULL)
    area, hertz = ellipsoid(400), ellipsoid(300)
    parts = [("momentum", lambda: momentum_cases(area)), ("pressed sphere", lambda: pressed_sphere_cases(
        cfg["overlaps"])), ("settling", lambda: settling_case(area)), ("ellipsoid tip", tip_cases),
             ("collision", collision_cases), ("sheared cell", lambda: sheared_cell_cases(area)),
             ("energy balance", lambda: energy_cases(area, hertz, cfg))]
    cases, series = {}, {}
    with Progress(len(parts), desc="mixed checks", unit="check") as progress:
        for name, part in parts:
            out = part()
            if name == "energy balance":
                out, series = out
            cases.update(out)
            progress.update(1, last=name)
    return {"cases": cases, "energy_balance": series, "energy_tolerance": TOL_ENERGY, "config": cfg, "quick": quick}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--quick", action="store_true",
                   help="each energy balance at its finest time step alone, the checked overlaps")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from provenance import provenance
    record = provenance(__file__, argv)
    t0 = time.perf_counter()
    result = run(args.quick)
    result["provenance"] = record
    result["wall_time_s"] = time.perf_counter() - t0
    failed = []
    for name, c in result["cases"].items():
        tol = c["tolerance"]
        flag = "reported" if tol is None else ("ok" if c["error"] <= tol else "FAIL")
        if flag == "FAIL":
            failed.append(name)
        print(f"{name:42s} error {c['error']:.3e}  tol {tol if tol is None else format(tol, '.0e')}  {flag}")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, default=float))
    print(f"{len(result['cases'])} checks, {len(failed)} above tolerance{': ' + ', '.join(failed) if failed else ''}; "
          f"{result['wall_time_s']:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

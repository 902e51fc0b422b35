"""Figures of the verification and validation checks, drawn from the benchmarks' recorded JSON files
(no simulation is run; only json, numpy and matplotlib are imported, so a figure is remade in seconds):

    python benchmarks/check_plots.py --shaped-hertz benchmarks/data/shaped_hertz.json \\
        --impact benchmarks/data/impact_suite_quick.json --lsdem benchmarks/data/lsdem.json \\
        --mixed benchmarks/data/mixed_checks.json --out docs/img

- from benchmarks/shaped_hertz.py's JSON: shaped_hertz_checks.png (every case's error against its
  tolerance), shaped_hertz_ellipsoids.png (signed force error against Johnson's elliptical Hertz for the
  three effective-radius rules), shaped_hertz_bulk_modulus.png (K against p, both laws),
  shaped_hertz_impact.png (the level-set sphere's psi2 against psi1, four tangential laws);
- from benchmarks/shaped_hertz.py --random-packing's JSON: shaped_hertz_random_packing.png (K against
  p of a random packing of ellipsoids, both laws, with the slopes 1/3 and 1/2; Z against p);
- from benchmarks/impact_suite.py's JSON: impact_co123_spin.png (Chung & Ooi tests 1-3 and the impacts
  driven by spin, every row's error against its tolerance);
- from benchmarks/lsdem.py's JSON, with shaped_hertz.py's convergence rows: levelset_convergence.png
  (the level-set sphere's contact force and curvature against the grid spacing);
- from benchmarks/mixed_checks.py's JSON: mixed_checks.png (runs of spheres and level-set grains:
  every check's error against its tolerance, the energy balance error against the time step, the
  sphere pressed into a level-set sphere against the area law's integral).
"""

import argparse
import json
import os
import sys

import numpy as np

LAWS = ("linear", "mindlin", "md_incremental", "jaeger")
MARKERS = dict(zip(LAWS, "sv^o"))


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _require(data, keys, source):
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"{source}: the recorded JSON lacks {', '.join(missing)} (is it the right benchmark's file?)")


def _save(fig, out_dir, name, dpi=110):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=dpi)
    _pyplot().close(fig)
    return path


def _finish(f, ax, title, out_dir, name, legend=8):
    """Title, legend, layout and save of a one-axes figure; returns the PNG's path."""
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=legend)
    f.tight_layout()
    return _save(f, out_dir, name)


def error_vs_tolerance(ax, groups):
    """One marker per case at its error, a short bar at its tolerance, log scale; groups is a list of
    (label, [(case name, error, tolerance)]) drawn left to right and separated by thin lines."""
    x, ticks, names = 0, [], []
    for i, (label, rows) in enumerate(groups):
        start = x
        for name, err, tol in rows:
            ax.plot([x - 0.35, x + 0.35], [tol, tol], "-", color="tab:red", lw=2,
                    label="tolerance" if x == 0 else None)
            shown = max(err, 1e-17)  # an error of exactly zero is drawn at the axis floor
            ax.plot(x, shown, "o", color="tab:blue", ms=5, label="error" if x == 0 else None)
            ticks.append(x)
            names.append(name)
            x += 1
        ax.text((start + x - 1) / 2, 1.0 + 0.05 * (i % 2), label, transform=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=8)
        if i < len(groups) - 1:
            ax.axvline(x - 0.5, color="0.75", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(ticks)
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_xlim(-0.7, x - 0.3)
    ax.legend(fontsize=8, loc="best")


# ----------------------------------------------------------------------------- shaped_hertz.py
def _shaped_groups(cases):
    def rows(prefix, strip=""):
        return [(k[len(strip):] if strip else k, c["error"], c["tolerance"])
                for k, c in cases.items() if k.startswith(prefix) and c["tolerance"] > 0]
    return [("curvature", rows("curvature_", "curvature_")),
            ("level-set sphere vs sphere contact", rows("sphere_grain_", "sphere_grain_")),
            ("ellipsoids vs Johnson", rows("ellipsoid_plane_") + rows("crossed_ellipsoids_")),
            ("objectivity", rows("objectivity_")),
            ("oblique impact (Maw)", rows("impact_levelset_sphere_plane_", "impact_levelset_sphere_plane_")),
            ("K ~ p^n", rows("bulk_modulus_exponent_hertz", "bulk_modulus_"))]


def plot_shaped_hertz(data, out_dir):
    """The four shaped_hertz_*.png figures from benchmarks/shaped_hertz.py's JSON; returns their paths."""
    _require(data, ["cases"], "shaped_hertz")
    cases = data["cases"]
    _require(cases, ["impact_levelset_sphere_plane_jaeger", "bulk_modulus_exponent_hertz_curvature",
                     "bulk_modulus_exponent_area_not_hertz", "ellipsoid_plane_ratio1"], "shaped_hertz cases")
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    form = "quick form" if data.get("quick") else "full form"

    f, ax = plt.subplots(figsize=(10, 5.2))
    error_vs_tolerance(ax, [g for g in _shaped_groups(cases) if g[1]])
    ax.set_ylabel("error (each case's own measure)")
    ax.set_title(f"hertz_curvature law: every case of benchmarks/shaped_hertz.py ({form})", fontsize=10, pad=28)
    f.tight_layout()
    paths.append(_save(f, out_dir, "shaped_hertz_checks.png"))

    ell = [(k, c) for k, c in cases.items() if "rules_signed_error" in c]
    f, ax = plt.subplots(figsize=(8, 4.2))
    x = np.arange(len(ell))
    for j, (rule, mk) in enumerate((("mean", "s"), ("gauss", "^"), ("elliptic", "o"))):
        ax.plot(x + (j - 1) * 0.15, [c["rules_signed_error"][rule] for _, c in ell], mk,
                mfc="none" if rule != "elliptic" else None, label=f"{rule} radius")
    tol = ell[0][1]["tolerance"]
    ax.axhspan(-tol, tol, color="tab:green", alpha=0.12, label=f"tolerance ±{tol:g}")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels([k.replace("ellipsoid_plane_", "on plane, R'/R'' = ").replace("ratio", "")
                        .replace("crossed_ellipsoids_", "crossed at ").replace("deg", "°") for k, _ in ell],
                       rotation=20, fontsize=8)
    ax.set_ylabel("F / F_Johnson − 1 (largest over the overlaps)")
    paths.append(_finish(f, ax, "Ellipsoid contacts against Johnson's elliptical Hertz, per effective-radius rule",
                         out_dir, "shaped_hertz_ellipsoids.png"))

    f, ax = plt.subplots(figsize=(6.4, 4.6))
    for key, label, slope, mk in (("bulk_modulus_exponent_hertz_curvature", "hertz_curvature", 1 / 3, "o"),
                                  ("bulk_modulus_exponent_area_not_hertz", "area law", 1 / 2, "s")):
        c = cases[key]
        p = np.array([r["p"] for r in c["rows"]])
        K = np.array([r["K"] for r in c["rows"]])
        line = ax.loglog(p, K, mk, label=f"{label}: fitted n = {c['exponent']:.4f}")[0]
        ax.loglog(p, K[0] * (p / p[0]) ** slope, "--", color=line.get_color(), lw=1,
                  label=f"K ∝ p^{'1/3' if slope < 0.4 else '1/2'} through the first point")
    ax.set_xlabel("pressure p (virial of the contact forces)")
    ax.set_ylabel("bulk modulus K = dp/dε_v")
    paths.append(_finish(f, ax, "Lattice of aligned ellipsoids (1, 0.8, 0.6), affine compression",
                         out_dir, "shaped_hertz_bulk_modulus.png"))

    f, ax = plt.subplots(figsize=(6.4, 4.6))
    ref_case = cases["impact_levelset_sphere_plane_jaeger"]
    psi1 = np.array(ref_case["psi1"])
    ax.plot(psi1, ref_case["psi2_reference"], "k-", lw=2, label="CMD reference (MDR) at the grain's χ")
    for law in LAWS:
        c = cases.get(f"impact_levelset_sphere_plane_{law}")
        if c is None:
            continue
        line = ax.plot(psi1, c["psi2"], MARKERS[law], ms=7, mfc="none", label=f"level-set sphere, {law}")[0]
        ax.plot(psi1, c["sphere_engine_psi2"], "+", ms=7, color=line.get_color())
    ax.plot([], [], "+", color="0.3", label="sphere engine (same law)")
    ax.axhline(0.0, color="0.8", lw=0.8)
    ax.set_xlabel(r"$\psi_1$ (normalised incident angle)")
    ax.set_ylabel(r"$\psi_2$ (normalised rebound angle)")
    paths.append(_finish(f, ax, "Level-set sphere (h = R/12) on an elastic plane, hertz_curvature law",
                         out_dir, "shaped_hertz_impact.png", legend=7))
    return paths


def plot_random_packing(data, out_dir):
    """shaped_hertz_random_packing.png from benchmarks/shaped_hertz.py --random-packing's JSON: the bulk
    modulus K against p for both laws with the slopes 1/3 and 1/2 through each law's mean point (of the
    logs), and
    the coordination Z against p; returns its path."""
    _require(data, ["cases"], "shaped_hertz --random-packing")
    cases = data["cases"]
    keys = ("random_packing_bulk_exponent_hertz_curvature", "random_packing_bulk_exponent_area_not_hertz")
    _require(cases, keys, "shaped_hertz --random-packing cases")
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    f, (ax, az) = plt.subplots(1, 2, figsize=(10.5, 4.4))
    for key, label, mk in zip(keys, ("hertz_curvature", "area law"), "os"):
        c = cases[key]
        p = np.array([r["p"] for r in c["rows"]])
        K = np.array([r["K"] for r in c["rows"]])
        line = ax.loglog(p, K, mk, ms=7, label=f"{label}: fitted n = {c['exponent']:.3f}")[0]
        p_mid, k_mid = np.exp(np.mean(np.log(p))), np.exp(np.mean(np.log(K)))
        for slope, style in ((1 / 3, "--"), (1 / 2, ":")):
            ax.loglog(p, k_mid * (p / p_mid) ** slope, style, color=line.get_color(), lw=1,
                      label=f"slope {'1/3' if slope < 0.4 else '1/2'} through its mean point")
        az.semilogx(p, [r["coordination"] for r in c["rows"]], mk + "-", color=line.get_color(), label=label)
    ax.set_xlabel("pressure p (Love–Weber, at rest)")
    ax.set_ylabel("bulk modulus K = dp/dε_v (unloading)")
    ax.set_title("Random packing of ellipsoids (1, 0.8, 0.6): K against p", fontsize=10)
    ax.legend(fontsize=7)
    az.set_xlabel("pressure p")
    az.set_ylabel("coordination Z (contacts per grain)")
    az.set_title("Coordination at each state", fontsize=10)
    az.legend(fontsize=8)
    f.tight_layout()
    return _save(f, out_dir, "shaped_hertz_random_packing.png")


# ----------------------------------------------------------------------------- impact_suite.py
def plot_impact_checks(data, out_dir):
    """impact_co123_spin.png from benchmarks/impact_suite.py's JSON: every row of Chung & Ooi tests 1-3
    and of the spin-driven impacts against its tolerance; returns its path."""
    _require(data, ["cases"], "impact_suite")
    cases = data["cases"]
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    hertz, restitution, spin = [], [], []
    for name, c in cases.items():
        if name.startswith(("co1_", "co2_")):
            q = next(q for q in ("peak_overlap", "peak_force", "duration") if name.endswith(q))
            label = name[:-len(q) - 1].replace("_two_spheres", "").replace("_sphere_plane", "")
            hertz += [(f"{label} {q} {r['speed']:g} m/s", r["rel_error_" + q], c["tolerance"]) for r in c["rows"]]
        elif name.startswith("co3_"):
            restitution += [(f"{name[16:]} e={r['restitution_set']:g} {r['speed']:g} m/s", r["error"],
                             c["tolerance"]) for r in c["rows"]]
        elif name.startswith("spin_"):
            spin += [(f"{name[5:]} " + (f"ψ1={r['psi1']:g}" if "psi1" in r else f"ω={r['omega']:.3g}"),
                      r["error"], c["tolerance"]) for r in c["rows"]]
    if not (hertz and restitution and spin):
        raise ValueError("impact_suite: the recorded JSON lacks the co1/co2, co3 or spin cases")
    f, axs = plt.subplots(1, 3, figsize=(13, 5.6), gridspec_kw={"width_ratios": [len(hertz), len(restitution) + 2,
                                                                                 len(spin) + 2]})
    for ax, label, rows, ylab in ((axs[0], "tests 1 and 2: Hertz closed form", hertz, "relative error"),
                                  (axs[1], "test 3: restitution set", restitution, "|e − e_set|"),
                                  (axs[2], "spin-driven: CMD reference", spin, "error over v_n")):
        error_vs_tolerance(ax, [(label, rows)])
        ax.set_ylabel(ylab)
    form = "quick form" if data.get("quick") else "full form"
    f.suptitle(f"Chung & Ooi (2011) tests 1-3 and impacts driven by spin, every row (impact_suite.py, {form})",
               fontsize=10)
    f.tight_layout()
    return [_save(f, out_dir, "impact_co123_spin.png")]


# ----------------------------------------------------------------------------- level-set convergence
def plot_levelset_convergence(lsdem, shaped, out_dir):
    """levelset_convergence.png: the level-set sphere on a plane against the exact continuum force of
    each law (benchmarks/lsdem.py) and the curvature and sphere-contact errors against the grid
    spacing (benchmarks/shaped_hertz.py); returns its path."""
    _require(lsdem, ["convergence_sphere_plane", "config"], "lsdem")
    _require(shaped, ["cases", "sphere_convergence_jaeger"], "shaped_hertz")
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    # the rows of lsdem.py's spacing series come first (config conv_spacings), then its node-count series
    by_h = lsdem["convergence_sphere_plane"][:len(lsdem["config"]["conv_spacings"])]
    f, axs = plt.subplots(1, 3, figsize=(15, 4.2))
    inv = [1.0 / r["spacing"] for r in by_h]
    for ax, key, label, mk in ((axs[0], "area_law_ratio", "area-weighted law", "o"),
                               (axs[1], "node_law_ratio", "per-node law", "s")):
        ax.plot(inv, [r[key] for r in by_h], mk + "-", label=label)
        ax.axhline(1.0, color="k", lw=1, label="exact continuum force of the law")
        for r in by_h:
            ax.annotate(f"{r['nodes']} nodes", (1.0 / r["spacing"], r[key]), fontsize=7,
                        textcoords="offset points", xytext=(3, -10))
        ax.set_xlabel("R / h (grid cells per radius)")
        ax.set_ylabel("F / F_exact")
        ax.set_title(f"Level-set sphere on a plane, {label} (lsdem.py)", fontsize=10)
        ax.legend(fontsize=8, loc="lower right" if key == "area_law_ratio" else "upper left")
    axs[1].set_yscale("log")
    ax = axs[2]
    for key, mk in (("curvature_sphere", "o"), ("curvature_ellipsoid", "s")):
        conv = shaped["cases"][key]["convergence"]
        ax.loglog([c["cells_per_radius"] for c in conv], [c["error"] for c in conv], mk + "-",
                  label=key.replace("_", " ") + " (relative)")
    sc = shaped["sphere_convergence_jaeger"]
    n = [c["cells_per_radius"] for c in sc]
    ax.loglog(n, [c["normal"] for c in sc], "^-", label="level-set sphere contact, normal force")
    ax.loglog(n, [c["tangential"] for c in sc], "v--", mfc="none", label="the same, tangential / (μN)")
    n = np.array(n, dtype=float)
    ax.loglog(n, sc[0]["normal"] * (n / n[0]) ** -2, "k:", lw=1, label="second order")
    ax.set_xticks(n)
    ax.set_xticklabels([f"{k:g}" for k in n])
    ax.minorticks_off()
    ax.set_xlabel("R / h (grid cells per radius)")
    ax.set_ylabel("error against the exact sphere")
    ax.set_title("hertz_curvature law (benchmarks/shaped_hertz.py)", fontsize=10)
    ax.legend(fontsize=7)
    f.tight_layout()
    return [_save(f, out_dir, "levelset_convergence.png")]


# ----------------------------------------------------------------------------- mixed_checks.py
MIXED_GROUPS = (("conservation", "free_collision_"), ("area law integral", "pressed_sphere_"),
                ("statics", "settled_spheres_"), ("Johnson (tip)", "ellipsoid_tip_hertz_"),
                ("sphere engine", "grain_vs_sphere_collision_"), ("sheared cell", "sheared_cell_"),
                ("energy balance", "energy_balance_"))


def plot_mixed_checks(data, out_dir):
    """mixed_checks.png from benchmarks/mixed_checks.py's JSON; returns its path."""
    _require(data, ["cases", "energy_balance"], "mixed_checks")
    cases = data["cases"]
    if not any(k.startswith("energy_balance_") for k in cases) or not any(k.startswith("pressed_sphere_")
                                                                          for k in cases):
        raise ValueError("mixed_checks: the recorded JSON lacks the energy balance or pressed sphere cases")
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    groups = [(label, [(k[len(prefix):], c["error"], c["tolerance"]) for k, c in cases.items()
                       if k.startswith(prefix) and c["tolerance"]]) for label, prefix in MIXED_GROUPS]
    f, axs = plt.subplots(1, 3, figsize=(15, 5.4), gridspec_kw={"width_ratios": [2.2, 1, 1]})
    error_vs_tolerance(axs[0], [g for g in groups if g[1]])
    axs[0].set_ylabel("error (each check's own measure)")
    ax = axs[1]
    for (name, s), mk in zip(data["energy_balance"].items(), "os^"):
        dt = np.array([r["dt"] for r in s["rows"]])
        err = np.array([r["relative_error"] for r in s["rows"]])
        line = ax.loglog(dt, err, mk + "-", label=name.replace("_", " "))[0]
        if len(dt) > 1:
            ax.loglog(dt, err[-1] * dt / dt[-1], ":", color=line.get_color(), lw=1)
    ax.axhline(data.get("energy_tolerance", 3e-3), color="tab:red", lw=1.5, label="tolerance at the finest dt")
    ax.plot([], [], "k:", lw=1, label="first order through the finest")
    steps = sorted({r["dt"] for s in data["energy_balance"].values() for r in s["rows"]})
    ax.minorticks_off()
    ax.set_xticks(steps)
    ax.set_xticklabels([f"{t:.3g}" for t in steps], rotation=30, fontsize=7)
    ax.set_xlabel("time step dt (s)")
    ax.set_ylabel("|energy balance error| / largest term")
    ax.set_title("Energy balance against the time step", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax = axs[2]
    rows = sorted((c["overlap"], c["signed_error"], c["tolerance"]) for k, c in cases.items()
                  if k.startswith("pressed_sphere_"))
    ax.plot([r[0] for r in rows], [100 * r[1] for r in rows], "o-", label="node sum of the area law")
    tol = max(r[2] for r in rows if r[2])
    checked = [r[0] for r in rows if r[2]]
    ax.fill_between([min(checked), max(checked)], -100 * tol, 100 * tol, color="tab:green", alpha=0.15,
                    label=f"±{100 * tol:g} % where checked")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("overlap d (grain radius 1, sphere radius 0.8)")
    ax.set_ylabel("F / F_integral − 1 (%)")
    ax.set_title("Sphere into a level-set sphere: area law", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    form = "quick form" if data.get("quick") else "full form"
    f.suptitle(f"Spheres and level-set grains in one run: every check of benchmarks/mixed_checks.py ({form})",
               fontsize=10)
    f.tight_layout()
    return [_save(f, out_dir, "mixed_checks.png")]


def _load(path):
    with open(path) as fh:
        return json.load(fh)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shaped-hertz", metavar="FILE", help="benchmarks/shaped_hertz.py's JSON")
    ap.add_argument("--random-packing", metavar="FILE",
                    help="benchmarks/shaped_hertz.py --random-packing's JSON")
    ap.add_argument("--impact", metavar="FILE", help="benchmarks/impact_suite.py's JSON")
    ap.add_argument("--lsdem", metavar="FILE", help="benchmarks/lsdem.py's JSON (with --shaped-hertz)")
    ap.add_argument("--mixed", metavar="FILE", help="benchmarks/mixed_checks.py's JSON")
    ap.add_argument("--out", required=True, metavar="DIR", help="folder for the PNGs")
    args = ap.parse_args(argv)
    if not (args.shaped_hertz or args.impact or args.mixed or args.random_packing):
        ap.error("give --shaped-hertz FILE, --random-packing FILE, --impact FILE and/or --mixed FILE")
    if args.lsdem and not args.shaped_hertz:
        ap.error("--lsdem needs --shaped-hertz FILE too (its figure uses both)")
    paths = []
    if args.shaped_hertz:
        shaped = _load(args.shaped_hertz)
        paths += plot_shaped_hertz(shaped, args.out)
        if args.lsdem:
            paths += plot_levelset_convergence(_load(args.lsdem), shaped, args.out)
    if args.random_packing:
        paths.append(plot_random_packing(_load(args.random_packing), args.out))
    if args.impact:
        paths += plot_impact_checks(_load(args.impact), args.out)
    if args.mixed:
        paths += plot_mixed_checks(_load(args.mixed), args.out)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

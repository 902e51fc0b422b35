"""The seed's three deformable-grain validations and the level-set strategy comparison (issue 5).

    python benchmarks/deformable_validation.py --quick --out DIR [--mode-file modes.h5]

writes DIR/bending.csv (delta,force), DIR/compaction.csv (eps,force), DIR/assembly27.csv (u_w,F_w),
their plots with the reference overlaid, DIR/levelset_strategies.json (+ .md table) and
DIR/summary.json (metrics, the rate-halving checks, the readings used). Each validation runs at two
loading rates, r and r/2; the CSVs hold the r/2 run, and the summary says how much halving changed.

--quick uses fewer surface nodes on the spheres (600 instead of ~1257) and faster (still quasi-static,
as the rate check shows) loading; without --mode-file the compaction mode is an analytic stand-in
(see graindem.deform.scenes.StandinCompactionMode) and the summary says so.
"""

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from graindem.deform.response import APPENDIX_B_EPS, APPENDIX_B_FORCE
from graindem.deform.scenes import bending_beam, compaction_sphere
from graindem.deform.strategy_benchmark import markdown_table, measure_strategies
from graindem.deform.validation import (assembly27, relative_error, single_sphere_compaction,
                                        three_point_bending)
from graindem.io.plots import new_figure, save_figure

QUICK = {"bending_rates": (0.02, 0.01), "compaction_rates": (0.0002, 0.0001),
         "assembly_rates": (0.0008, 0.0004), "sphere_nodes": 400}
FULL = {"bending_rates": (0.005, 0.0025), "compaction_rates": (0.0001, 0.00005),
        "assembly_rates": (0.0004, 0.0002), "sphere_nodes": None}


def write_csv(path, header, columns):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in zip(*columns):
            w.writerow([f"{v:.10g}" for v in row])


def run_bending(cfg, out, log):
    runs = []
    for rate in cfg["bending_rates"]:
        t0 = time.perf_counter()
        r = three_point_bending(rate=rate)
        log(f"bending: dt = {r['dt']:.4g} (critical: rigid {r['critical_steps']['rigid']:.4g}, "
            f"modal {r['critical_steps']['modal']:.4g})")
        log(f"bending rate {rate}: slope F^/d^ = {r['slope']:.4f} (secant {r['secant_slope']:.4f}), "
            f"{r['n_steps']} steps, {time.perf_counter() - t0:.1f} s")
        runs.append(r)
    fast, slow = runs
    write_csv(out / "bending.csv", ["delta", "force"], [slow["delta"], slow["force"]])
    fig, ax = new_figure()
    for r, style in ((fast, "--"), (slow, "-")):
        ax.plot(r["delta"] / r["delta0"], r["force"] / (r["K_g"] * r["delta0"]), style,
                label=f"deformable LS-DEM, rate {r['rate']:g}")
    ax.plot([0, 1], [0, 1], "k:", label="reference F^ = d^ (generalized stiffness)")
    ax.set_xlabel("normalized indenter displacement d^ = d / d0")
    ax.set_ylabel("normalized force F^ = F / (K_g d0)")
    ax.set_title("three-point bending, Table 1 beam")
    ax.legend()
    save_figure(fig, out / "bending.png", announce=log)
    return {"slope": slow["slope"], "secant_slope": slow["secant_slope"], "slope_at_double_rate": fast["slope"],
            "slope_change_on_halving_rate": abs(slow["slope"] - fast["slope"]),
            "within_2_percent": abs(slow["slope"] - 1) < 0.02, "rates": list(cfg["bending_rates"]),
            "steps": [r["n_steps"] for r in runs], "dt": slow["dt"],
            "K_g": slow["K_g"], "delta0": slow["delta0"]}


def run_compaction(cfg, out, log, template):
    runs = []
    for rate in cfg["compaction_rates"]:
        t0 = time.perf_counter()
        r = single_sphere_compaction(rate=rate, template=template)
        err = relative_error(r["force"], r["reference"])
        log(f"compaction: dt = {r['dt']:.4g} (critical: rigid {r['critical_steps']['rigid']:.4g}, "
            f"modal {r['critical_steps']['modal']:.4g})")
        log(f"compaction rate {rate}: max rel. error vs table {err.max():.4f} (median {np.median(err):.4f}), "
            f"{r['n_steps']} steps, {time.perf_counter() - t0:.1f} s")
        runs.append((r, err))
    (fast, err_fast), (slow, err_slow) = runs
    write_csv(out / "compaction.csv", ["eps", "force"], [slow["eps"], slow["force"]])
    fig, ax = new_figure()
    ax.plot(APPENDIX_B_EPS, APPENDIX_B_FORCE, "ko", label="Appendix B table (one wall)")
    ax.plot(fast["eps"], fast["force"], "--", label=f"deformable LS-DEM, rate {fast['rate']:g}")
    ax.plot(slow["eps"], slow["force"], "-", label=f"deformable LS-DEM, rate {slow['rate']:g}")
    ax.set_xlabel("generalized displacement eps = wall indentation / R")
    ax.set_ylabel("wall reaction (mean of the six walls)")
    ax.set_title(f"single-sphere compaction ({slow['mode_source']})", fontsize=8)
    ax.legend()
    save_figure(fig, out / "compaction.png", announce=log)
    final_err = abs(slow["force"][-1] - slow["reference"][-1]) / slow["reference"][-1]
    common = np.linspace(0.2, 1.0, 50) * slow["eps"].max()
    change = np.max(np.abs(np.interp(common, slow["eps"], slow["force"]) -
                           np.interp(common, fast["eps"], fast["force"])) / np.interp(common, slow["eps"], slow["force"]))
    return {"max_relative_error": float(err_slow.max()), "median_relative_error": float(np.median(err_slow)),
            "relative_error_at_end": float(final_err), "within_2_percent": bool(err_slow.max() < 0.02),
            "max_relative_error_double_rate": float(err_fast.max()),
            "max_change_on_halving_rate": float(change), "rates": list(cfg["compaction_rates"]),
            "steps": [r["n_steps"] for r, _ in runs], "dt": slow["dt"], "mode_source": slow["mode_source"],
            "error_metric": "|F - F_table(eps)| / F_table(eps) where F_table > 5 % of its maximum",
            "reading": "Appendix B force = reaction of ONE wall, eps = indentation / R; the mode moves each "
                       "pole inward by R per unit eps, so U'(eps) = 6 R F_table(eps); force = mean of six walls"}


def run_assembly(cfg, out, log, template):
    runs = []
    for rate in cfg["assembly_rates"]:
        t0 = time.perf_counter()
        r = assembly27(rate=rate, template=template)
        err = relative_error(r["F_w"], r["reference"])
        log(f"27 spheres: dt = {r['dt']:.4g} (critical: rigid {r['critical_steps']['rigid']:.4g}, "
            f"modal {r['critical_steps']['modal']:.4g})")
        log(f"27 spheres rate {rate}: max rel. error vs 9 F_int(u_w/3) {err.max():.4f} "
            f"(median {np.median(err):.4f}), {r['n_steps']} steps, {time.perf_counter() - t0:.1f} s")
        runs.append((r, err))
    (fast, err_fast), (slow, err_slow) = runs
    err_modal = relative_error(slow["F_w"], slow["reference_modal"])
    upper = slow["u_w"] >= 0.5 * slow["u_w"].max()
    err_upper = np.abs(slow["F_w"][upper] - slow["reference"][upper]) / slow["reference"][upper]
    write_csv(out / "assembly27.csv", ["u_w", "F_w"], [slow["u_w"], slow["F_w"]])
    fig, ax = new_figure()
    u = np.linspace(0, slow["u_w"].max(), 200)
    ax.plot(u, 9 * np.interp(u / (3 * 10.0), APPENDIX_B_EPS, APPENDIX_B_FORCE), "k:",
            label="9 F_int(u_w/3) (eq. 59, per wall)")
    ax.plot(fast["u_w"], fast["F_w"], "--", label=f"deformable LS-DEM, rate {fast['rate']:g}")
    ax.plot(slow["u_w"], slow["F_w"], "-", label=f"deformable LS-DEM, rate {slow['rate']:g}")
    ax.set_xlabel("wall displacement u_w (voxels)")
    ax.set_ylabel("force on one wall F_w (mean of six)")
    ax.set_title(f"27-sphere cubic packing ({slow['mode_source']})", fontsize=8)
    ax.legend()
    save_figure(fig, out / "assembly27.png", announce=log)
    common = np.linspace(0.3, 1.0, 50) * slow["u_w"].max()
    ref = np.interp(common, slow["u_w"], slow["F_w"])
    change = np.max(np.abs(ref - np.interp(common, fast["u_w"], fast["F_w"])) / ref)
    return {"max_relative_error": float(err_slow.max()), "median_relative_error": float(np.median(err_slow)),
            "relative_error_at_end": float(abs(slow["F_w"][-1] - slow["reference"][-1]) / slow["reference"][-1]),
            "within_3_percent": bool(err_slow.max() < 0.03),
            "max_relative_error_upper_half_of_u_w": float(err_upper.max()),
            "max_relative_error_vs_modal_eps": float(err_modal.max()),
            "median_relative_error_vs_modal_eps": float(np.median(err_modal)),
            "wall_force_spread_at_end": float((slow["per_wall"][-1].max() - slow["per_wall"][-1].min())
                                              / slow["F_w"][-1]),
            "inverse_iterations": slow["inverse_iterations"],
            "max_relative_error_double_rate": float(err_fast.max()),
            "max_change_on_halving_rate": float(change), "rates": list(cfg["assembly_rates"]),
            "steps": [r["n_steps"] for r, _ in runs], "dt": slow["dt"], "mode_source": slow["mode_source"],
            "eps_spread_at_end": [float(slow["eps"][-1].min()), float(slow["eps"][-1].max())],
            "error_metric": "|F_w - 9 F_table(u_w/(3R))| / reference where reference > 5 % of its maximum",
            "reading": "F_w = force on one wall (touching 9 spheres, mean of six) vs 9 x one-wall force of the "
                       "single-sphere table at eps = u_w / (3R) (eq. 59/70, per-wall reading of the notes)"}


def run_strategies(out, log, template_sphere):
    beam = bending_beam()
    results = {}
    t0 = time.perf_counter()
    results["bending_beam"] = measure_strategies(beam.phi0, beam.modes, beam.surface_vertices, beam.surface_faces,
                                                 5.0, [np.linspace(0.0, 6.0, 5)], advect_steps=200)
    results["compaction_sphere"] = measure_strategies(
        template_sphere.phi0, template_sphere.modes, template_sphere.surface_vertices,
        template_sphere.surface_faces, 0.16, [np.linspace(0.0, 0.2, 5)], advect_steps=200)
    results["compaction_sphere"]["_meta"]["mode_source"] = template_sphere.mode_source
    results["bending_beam"]["_meta"]["mode_source"] = beam.mode_source
    log(f"level-set strategies measured in {time.perf_counter() - t0:.1f} s")
    (out / "levelset_strategies.json").write_text(json.dumps(results, indent=2))
    table = markdown_table(results)
    (out / "levelset_strategies.md").write_text(table + "\n")
    log(table)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="reduced sizes (<= 10 min on 2 cores)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--mode-file", default=None, help="graindem mode file with the compaction mode")
    parser.add_argument("--only", default=None, help="comma list of: bending,compaction,assembly,strategies")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = QUICK if args.quick else FULL
    which = set((args.only or "bending,compaction,assembly,strategies").split(","))
    unknown = which - {"bending", "compaction", "assembly", "strategies"}
    if unknown:
        raise ValueError(f"--only accepts bending, compaction, assembly, strategies; got {sorted(unknown)}")
    log = print
    t_start = time.perf_counter()
    sphere = compaction_sphere(args.mode_file, n_nodes=cfg["sphere_nodes"])
    summary = {"mode": "quick" if args.quick else "full", "mode_file": args.mode_file}
    if "bending" in which:
        summary["bending"] = run_bending(cfg, out, log)
    if "compaction" in which:
        summary["compaction"] = run_compaction(cfg, out, log, sphere)
    if "assembly" in which:
        summary["assembly27"] = run_assembly(cfg, out, log, sphere)
    if "strategies" in which:
        run_strategies(out, log, compaction_sphere(args.mode_file))
    summary["wall_seconds"] = time.perf_counter() - t_start
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    log(json.dumps(summary, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())

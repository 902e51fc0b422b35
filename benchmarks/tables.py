"""The tables of docs/benchmarks.md, the README's benchmark table and the mixed-run checks of
docs/verification.md, rendered from the benchmarks' JSON files in benchmarks/data/.

    python benchmarks/tables.py            # rewrite the tables in the pages
    python benchmarks/tables.py --check    # exit 1 when a page differs from the JSON files

A page holds, for every table, a pair of markers

    <!-- table: NAME -->
    ...
    <!-- end table -->

and everything between them is replaced by TABLES[NAME](): on docs/benchmarks.md the command that
produced the file, when, at which commit, on which CPU with which libraries (the file's
"provenance"), and the table; in the README the headline figures. The text around the markers is
the page's own.
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DATA = ROOT / "benchmarks" / "data"
PAGES = (ROOT / "docs" / "benchmarks.md", ROOT / "README.md", ROOT / "docs" / "verification.md")
BLOCK = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end table -->)", re.DOTALL)
LIBRARIES = (("python", "Python"), ("numpy", "numpy"), ("scipy", "scipy"), ("numba", "numba"),
             ("llvmlite", "llvmlite"), ("h5py", "h5py"))


def load(name):
    return json.loads((DATA / name).read_text())


def recorded(record, path, references=()):
    """The lines that say how and where a file's figures were recorded."""
    p = record["provenance"]
    versions = p["versions"]
    libs = ", ".join(f"{label} {versions[key]}" for key, label in LIBRARIES if versions.get(key))
    libs += "".join(f", {label} {versions[key]}" for key, label in references if versions.get(key))
    commit = p["commit"][:7] + (" with uncommitted changes" if p["dirty"] else "")
    load_1min = p["load_average_at_start"][0]
    return (f"```sh\n{p['command']}\n```\n\n"
            f"Recorded {p['date_utc']} UTC at commit `{commit}` on {p['cpu_model']} ({p['cores']} cores, load "
            f"average {load_1min:.1f} at the start); {libs}. Data: `benchmarks/data/{path}`.\n")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def f(x, digits=3):
    """x to `digits` significant figures, without an exponent for the sizes on this page."""
    if x is None:
        return "–"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    return f"{x:#.{digits}g}".rstrip(".")  # '#' keeps the zeros of 2.20, and leaves a dot after 100


def spread(values, digits=3):
    low, high = f(min(values), digits), f(max(values), digits)
    return low if low == high else f"{low}–{high}"


def contact_kernel(name="contact_kernel.json"):
    d = load(name)
    s = d["synthetic"]
    cols = ((d, "laws"), (d, "laws_with_energy"), (s, "laws"), (s, "laws_with_energy"))
    rows = [[law] + [f(src[key][law]["ns_per_update"]) for src, key in cols]
            for law in ("linear", "mindlin", "md_incremental", "jaeger")]
    rows.append(["jaeger ξ = " + " / ".join(s["jaeger_xi"]), "", "",
                 " / ".join(f(v["ns_per_update"]) for v in s["jaeger_xi"].values())
                 + " (mean history " + " / ".join(f(v["mean_history_length"], 2) for v in s["jaeger_xi"].values())
                 + ")", ""])
    rows.append(["**jaeger / mindlin**", f"**{f(d['ratio_jaeger_mindlin'])}** (rounds "
                 f"{spread(d['ratio_jaeger_mindlin_rounds'])})", f(d["ratio_jaeger_mindlin_with_energy"]),
                 f(s["ratio_jaeger_mindlin"]), f(s["ratio_jaeger_mindlin_with_energy"])])
    kinds = d["jaeger_step_kinds"]
    cfg = d["config"]
    text = (f"{cfg['contacts']:,} contacts, ns per contact update (thread CPU time), median of {cfg['rounds']} "
            f"interleaved rounds.\n\n"
            + table(["law", "biaxial trace", "trace, energy on", "synthetic", "synthetic, energy on"], rows)
            + f"\nTrace: {100 * kinds['elastic']:.0f} % elastic, {100 * kinds['partial_slip']:.0f} % partial-slip, "
              f"{100 * kinds['gross_sliding']:.0f} % gross-sliding Jäger steps, mean history "
              f"{f(d['laws']['jaeger']['mean_history_length'], 2)} points; the history store compacted every "
              f"{d['store_compaction']['every_steps']} steps, "
              f"{f(d['store_compaction']['jaeger_compaction_ns_per_update'], 2)} ns an update, counted in Jäger's "
              f"figure; the replay harness alone {f(d['harness_ns_per_update'], 2)} ns. Synthetic: mean history "
              f"{f(s['laws']['jaeger']['mean_history_length'], 2)} points. Memory: {cfg['row_bytes']} B of state per "
              f"contact plus {cfg['bytes_per_point']} B per history point.\n")
    return recorded(d, name) + "\n" + text


def vs_lammps(name="vs_lammps.json"):
    d = load(name)
    rows = []
    for side, label in (("graindem", "graindem {}"), ("lammps", "LAMMPS {}")):
        for key, runs in d["detail"][side].items():
            rates = [r["particle_steps_per_s"] / 1e6 for r in runs]
            if rates:
                rows.append([label.format(key), f(max(rates)), spread(rates)])
    text = (f"{d['n_particles']} spheres, {d['steps']} steps, one thread, the two codes in {d['rounds']} alternating "
            f"rounds; million particle-steps per CPU second (higher is faster).\n\n"
            + table(["code, law", "best round", "all rounds"], rows))
    ratios = d.get("ratio_vs_gran_hertz_history")
    if ratios:
        medians = d.get("median_round_ratio_vs_gran_hertz_history", {})
        text += "\n" + table(["graindem law", "graindem / LAMMPS `gran/hertz/history`, best rounds",
                              "median of the round-by-round ratios"],
                             [[law, f"**{f(v)}**", f(medians.get(law))] for law, v in ratios.items() if v])
    return recorded(d, name, (("lammps", "LAMMPS"),)) + "\n" + text


def biaxial(name):
    d = load(name)
    rows = []
    cases = [(law, r) for law, r in d["laws"].items() if law != "jaeger"]
    cases += [(f"jaeger ξ = {xi}", r) for xi, r in d["jaeger_xi"].items()] or [("jaeger", d["laws"]["jaeger"])]
    for label, r in cases:
        history = (f"{f(r['mean_history_length'])} ({f(r['max_mean_history_length'])})"
                   if r["mean_history_length"] else "–")
        rows.append([label, f(r["total_s"]), " / ".join(f(x) for x in r["total_s_runs"]), f(r["force_s"]),
                     f"{r['mean_contacts']:.0f}", history,
                     f"{r['store_bytes'] / 1e6:.1f} MB" if r["store_bytes"] else "–"])
    runs = "one run" if d["repeats"] == 1 else f"{d['repeats']} runs in rounds, best"
    text = (f"{d['n_particles']} spheres, {d['steps']:,} steps; CPU seconds, {runs}.\n\n"
            + table(["law", "total s", "total s, every run", "force s", "contacts",
                     "mean history length: time mean (maximum)", "peak store"], rows))
    inter = d.get("interleaved")
    if inter and "ratio_total_jaeger_over_mindlin" in inter:
        passes = inter["ratio_total_jaeger_over_mindlin_passes"]
        same = all(v["same_trajectory_as_straight_run"] for v in inter["laws"].values())
        m, j = inter["laws"]["mindlin"]["total_s_runs"], inter["laws"]["jaeger"]["total_s_runs"]
        q = inter["turn_ratio_quartiles"]
        text += ("\n" + table(["interleaved passes (jaeger / mindlin total)", "median", "single turns, quartiles",
                               "same trajectory as the straight runs"],
                              [[", ".join(f"{x:.3f}" for x in passes) + f" (mindlin {spread(m)} s, jaeger "
                                f"{spread(j)} s)", f"**{inter['ratio_total_jaeger_over_mindlin']:.3f}**",
                                ", ".join(f"{x:.2f}" for x in q), "yes" if same else "no"]]))
    return recorded(d, name) + "\n" + text


def lsdem(name="lsdem.json"):
    d = load(name)
    grains = d["steps_vs_grains"]
    nodes = d["steps_vs_nodes"]
    text = (f"Node queries (trilinear φ and gradient, random points near the surface): "
            f"{f(d['queries']['numba_queries_per_s'] / 1e6)} M per second. Steps per CPU second, lattices of "
            f"(1, 0.8, 0.6) ellipsoids, median of {d['config']['rounds']} blocks of {d['config']['steps']} steps:\n\n"
            + table(["grains"] + [str(r["grains"]) for r in grains],
                    [["steps/s (300 nodes a grain)"] + [f(r["steps_per_s"]) for r in grains]])
            + "\n" + table(["nodes a grain"] + [str(r["nodes_per_grain"]) for r in nodes],
                           [[f"steps/s ({nodes[0]['grains']} grains)"] + [f(r["steps_per_s"]) for r in nodes]]))
    m = d["memory_per_grain"]
    text += (f"\nMemory per grain: {m['state_bytes']:.0f} B of state, {m['history_bytes_per_node']:.0f} B of contact "
             f"history per node; the template ({m['nodes']} nodes, {m['grid_points']:,} grid points, "
             f"{m['template_bytes'] / 1e6:.2f} MB) is shared by the grains of one shape.\n")
    pw = d.get("periodic_vs_walls")
    if pw:
        text += (f"\nThe {pw['grains']}-grain lattice in a periodic cell (contacts across the faces): "
                 f"{f(pw['periodic']['steps_per_s'])} steps/s; between six walls: {f(pw['walls']['steps_per_s'])} "
                 f"steps/s; time per step periodic / walls **{f(pw['periodic_over_walls_time'])}** (timed blocks "
                 f"interleaved).\n")
    y = d["yade"]
    if y:
        g = d["graindem"]
        text += ("\n" + table(["code", "grains", "steps/s", "pairs (graindem: listed; YADE: interactions)",
                                      "graindem / YADE"],
                              [["graindem (area law)", g["grains"], f(g["steps_per_s"]),
                                next(r["candidate_pairs"] for r in grains if r["grains"] == g["grains"]), ""],
                               [f"YADE {d['provenance']['versions'].get('yade') or ''} (LS-DEM, one thread)",
                                y["n_bodies"], f(y["steps_per_s"]), y["contacts"],
                                f"**{f(d['graindem_over_yade'])}**"]]))
    else:
        text += f"\nYADE not compared: {d['yade_reason']}.\n"
    return recorded(d, name, (("yade", "YADE"),)) + "\n" + text


def shaped_hertz(name="shaped_hertz_quick.json"):
    d = load(name)
    c = d["cost"]
    text = (f"{c['grains']} grains of {c['nodes_per_grain']} nodes in a periodic cell ({c['lattice_contacts']} "
            f"contacts), both laws in one process, timed blocks interleaved, medians.\n\n"
            + table(["", "`hertz_curvature` (jaeger)", "area law", "ratio (`cost_ratio_vs_area`)"],
                    [["µs per contact-step", f(1e6 * c["hertz_s_per_contact_step"], 2),
                      f(1e6 * c["area_s_per_contact_step"], 2), f"**{f(d['cost_ratio_vs_area'])}**"]]))
    return recorded(d, name) + "\n" + text


def deformable_cost(name="deformable_cost.json"):
    d = load(name)
    a, b = d["assembly27_validation"], d["beam"]
    rows = [[f"27 × {d['sphere_nodes']}-node spheres, compacted (FEM mode)",
             f"{f(1e3 * a['rigid_seconds_per_step'])} ms", f(a["ratio_point_first_order"]),
             f"**{f(a['ratio_point_newton1'])}**", f(a["ratio_corners_newton1_cached"])],
            [f"three-point-bending beam ({d['beam_nodes']} nodes, obstacles only)",
             f"{f(1e3 * b['rigid_seconds_per_step'])} ms", f(b["ratio_point_first_order"]), "–", "–"]]
    text = (f"Deformable step time / rigid step time (the same template without modes in the same scene), CPU time, "
            f"{d['n_steps']} steps, variants interleaved, best of {d['repeats']}.\n\n"
            + table(["scene", "rigid step", "point, first order", "**point, Newton 1** (the validation's)",
                     "corners, Newton 1 + per-step corner cache"], rows))
    return recorded(d, name) + "\n" + text


def neighbour_search(name="neighbour_search_ratio.json"):
    d = load(name)
    rows = [[r["distribution"], f(r["size_ratio"], 2), r["solid_fraction"], r["skin"].replace("_", " "),
             f(r["single_grid"]["examined_per_sphere"]), f(r["size_classes"]["examined_per_sphere"]),
             f(r["size_classes"]["pairs_per_sphere"]), f"**{f(r['time_ratio_single_over_classes'], 2)}**"]
            for r in d["rows"]]
    text = (f"{d['rows'][0]['n']:,} spheres; pairs examined per sphere and the time of one list build, one grid "
            "against cells by size class (CPU time, best of 3).\n\n"
            + table(["size distribution", "r_max / r_min", "solid fraction", "skin", "examined, one grid", "examined, by class",
                     "pairs", "time one grid / by class"], rows))
    return recorded(d, name) + "\n" + text


def store_locality(name="store_locality.json"):
    d = load(name)
    rows = []
    for run in d["runs"]:
        variants = {k: v for k, v in run.items() if isinstance(v, dict)}
        rows.append([f"{run['contacts']:,}", "on" if run["energy_accounting"] else "off",
                     f(run["mean_history_length"], 2)]
                    + [f(v["ns_per_update"]) + (f" (×{f(v['ratio_to_mindlin'], 2)})" if "ratio_to_mindlin" in v else "")
                       for v in variants.values()])
    names = [k for k, v in d["runs"][0].items() if isinstance(v, dict)]
    text = ("ns per contact update (thread CPU time), variants interleaved block by block, mean of "
            f"{d['config']['rounds']} rounds; in brackets the ratio to mindlin.\n\n"
            + table(["contacts", "energy", "mean history"] + [f"`{n}`" for n in names], rows))
    return recorded(d, name) + "\n" + text


def deformable_strategies(folder="deformable_strategies"):
    from graindem.deform.strategy_benchmark import markdown_table

    summary = f"{folder}/summary.json"
    # the "|" of |φ| escaped, or Markdown takes it for a column border
    text = markdown_table(load(f"{folder}/levelset_strategies.json")).replace("|φ|", "\\|φ\\|") + "\n"
    return recorded(load(summary), f"{folder}/") + "\n" + text


def packing_generation(name="packing_generation.json"):
    d = load(name)
    sizes = sorted({r["n"] for r in d["results"]})
    by = {(r["distribution"], r["n"]): r for r in d["results"]}
    dists = list(dict.fromkeys(r["distribution"] for r in d["results"]))
    rows = [[dist, f(by[(dist, sizes[0])]["size_ratio"], 2)]
            + [f"{f(by[(dist, n)]['seconds'])} s ({f(by[(dist, n)]['microseconds_per_sphere'], 2)} µs a sphere)"
               for n in sizes] for dist in dists]
    text = (f"A random gas at solid fraction {d['solid_fraction']} (`graindem.engine.prepare.random_gas`), CPU "
            "seconds of one run per size.\n\n"
            + table(["size distribution", "r_max / r_min"] + [f"{n:,} spheres" for n in sizes], rows))
    return recorded(d, name) + "\n" + text


def memory(name="memory.json"):
    d = load(name)
    rows = [[f"{r['n']:,}", f"{r['peak_rss_bytes'] / 1e9:.2f} GB", f(r["run_bytes_per_sphere"]),
             f(r["array_bytes_per_sphere"]), f(r["pairs_per_sphere"]), f(r["store_points_per_sphere"])]
            for r in d["runs"]]
    measured = d["measured_peak_bytes_at_1e6"]
    at_goal = (f"measured peak at 10^6 spheres: **{measured / 1e9:.2f} GB**" if measured is not None
               else f"projected peak at 10^6 spheres: **{d['projected_peak_bytes_at_1e6'] / 1e9:.2f} GB**")
    text = (f"Spheres under the {d['law']} law, {d['runs'][0]['steps']} steps; peak resident memory of a fresh "
            "process per size.\n\n"
            + table(["spheres", "peak resident", "run bytes a sphere", "array bytes a sphere (capacity)",
                     "listed rows a sphere", "history points a sphere"], rows)
            + f"\nMarginal cost {f(d['bytes_per_sphere_slope'])} bytes a sphere; {at_goal} "
            f"(goal: under {d['goal_bytes_at_1e6'] / 1e9:.0f} GB).\n")
    return recorded(d, name) + "\n" + text


def readme_summary():
    """The README's benchmark table: the headline figure of every page table."""
    ck, vl, ls = (load(n) for n in ("contact_kernel.json", "vs_lammps.json", "lsdem.json"))
    bx = load("biaxial_table1.json")
    pg, dc = load("packing_generation.json"), load("deformable_cost.json")
    jaeger = ck["laws"]["jaeger"]
    ratio = vl.get("ratio_vs_gran_hertz_history") or {}
    largest = max(pg["results"], key=lambda r: (r["n"], r["size_ratio"]))
    rows = [["Jäger contact update, replay of a recorded biaxial trace",
             f"{f(jaeger['ns_per_update'])} ns ({f(jaeger['updates_per_s'] / 1e6)} M updates/s); "
             f"{f(ck['ratio_jaeger_mindlin'])}× mindlin"],
            [f"sphere engine vs LAMMPS `gran/hertz/history`, {vl['n_particles']} spheres",
             ", ".join(f"{law} {f(v)}×" for law, v in ratio.items() if v) + " LAMMPS's speed"],
            [f"Kuhn's Table 1 ({bx['n_particles']} spheres, {bx['steps']:,} steps), interleaved",
             f"jaeger / mindlin {bx['interleaved']['ratio_total_jaeger_over_mindlin']:.2f} (Kuhn: 1.49)"],
            [f"level-set grains, {ls['graindem']['grains']} ellipsoids of 300 nodes",
             f"{f(ls['graindem']['steps_per_s'])} steps/s"
             + (f"; {f(ls['graindem_over_yade'])}× YADE {ls['provenance']['versions']['yade']} on the same lattice"
                if ls["yade"] else "")],
            [f"random packing generation, {largest['n']:,} spheres (size ratio {largest['size_ratio']:.0f})",
             f"{f(largest['seconds'])} s"],
            ["deformable step / rigid step, 27 spheres (validation's pull-back)",
             f"{f(dc['assembly27_validation']['ratio_point_newton1'])}"]]
    return table(["benchmark", "result"], rows)


def mixed_checks(name="mixed_checks.json"):
    d = load(name)

    def e(x):
        return f"{x:.2g}"

    def tol(c):
        return "–" if c["tolerance"] is None else e(c["tolerance"])

    rows = [[c["what"], c["reference"], e(c["error"]), tol(c)] for k, c in d["cases"].items()
            if not k.startswith("energy_balance_")]
    text = (f"Each check's error in its own measure (relative unless stated; tolerance – : reported beside the "
            f"checked ones). Wall time of the run {d['wall_time_s'] / 60:.0f} min.\n\n"
            + table(["check", "reference", "error", "tolerance"], rows))
    series = []
    for key, s in d["energy_balance"].items():
        measured = ", ".join(f"{e(r['relative_error'])} at dt = {r['dt']:g}" for r in s["rows"])
        series.append([s["what"], measured, e(d["cases"][f"energy_balance_{key}"]["tolerance"])])
    text += ("\nThe energy balance: |work − (change of kinetic energy + stored + dissipated)| over the largest "
             "term, against the time step; the tolerance applies at the finest.\n\n"
             + table(["scene", "error against dt", "tolerance"], series))
    return recorded(d, name) + "\n" + text


TABLES = {
    "contact_kernel": contact_kernel,
    "vs_lammps": vs_lammps,
    "biaxial_table1": lambda: biaxial("biaxial_table1.json"),
    "biaxial_table1_quick": lambda: biaxial("biaxial_table1_quick.json"),
    "lsdem": lsdem,
    "shaped_hertz": shaped_hertz,
    "deformable_cost": deformable_cost,
    "neighbour_search": neighbour_search,
    "store_locality": store_locality,
    "deformable_strategies": deformable_strategies,
    "packing_generation": packing_generation,
    "memory": memory,
    "readme_summary": readme_summary,
    "mixed_checks": mixed_checks,
}


def render(page):
    """The page with every marked table rendered afresh from its JSON file."""
    def block(m):
        if m["name"] not in TABLES:
            raise KeyError(f"a page names table {m['name']!r}; known: {', '.join(TABLES)}")
        body = TABLES[m["name"]]()
        if m["name"] == "readme_summary":  # the README's table without blank lines (it stays under 200 lines)
            return m.group(1) + body + m.group(4)
        return m.group(1) + "\n" + body + "\n" + m.group(4)
    return BLOCK.sub(block, page)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a page differs from the JSON files")
    args = ap.parse_args(argv)
    stale = []
    for page in PAGES:
        text = page.read_text()
        new = render(text)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(new)
    if args.check and stale:
        print(f"{', '.join(map(str, stale))} differ from benchmarks/data/*.json: run python benchmarks/tables.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""FEM mode extraction benchmark: six-wall sphere compaction vs the seed table, Hertz mesh convergence.

    python benchmarks/fem_compaction.py [--quick] [--out DIR]

Writes DIR/fem_compaction.json (errors, unknowns, runtimes), DIR/fem_compaction.csv (eps, force per wall),
DIR/compaction_modes_TAG.h5 (the mode at the table's end, eps = 0.16, length coordinate, the seed's choice),
DIR/compaction_mode_beyond_TAG.h5 (the mode at eps = 0.24, relative coordinate: the one
benchmarks/deformable_validation.py uses, see docs/deformable-status.md) and plots. --quick uses coarser
meshes.
"""

import argparse
import dataclasses
import json
import pathlib
import time

import numpy as np

from graindem.fem import write_mode_file
from graindem.fem.cli import plot_compaction_curves, plot_mode, surface_triangles
from graindem.fem.compaction import (SEED_TABLE_EPS, SEED_TABLE_FORCE, compact_sphere, compaction_mode_set,
                                     energy_fit_force, normalized_curve)
from graindem.fem.contact import hertz_plate_force, sphere_between_plates
from graindem.io.progress import Progress
from provenance import provenance


def compaction(mesh_size, out, tag):
    t0 = time.perf_counter()
    # the table's levels, then on to 1.5 x its end, where the mode for the deformable grains is taken
    # (graindem.deform.validation.fem_compaction_mode_file says why)
    n_table = len(SEED_TABLE_EPS) - 1
    levels = np.r_[SEED_TABLE_EPS[1:], 0.18, 0.20, 0.22, 0.24]
    with Progress(len(levels), desc=f"FEM compaction, {tag} mesh", unit="level") as bar:
        full = compact_sphere(10.0, 100.0, 0.3, eps=levels, mesh_size=mesh_size, progress=bar.update)
    seconds = time.perf_counter() - t0
    res = dataclasses.replace(full, eps=full.eps[:n_table], wall_force=full.wall_force[:n_table],
                              energy=full.energy[:n_table], pole_displacement=full.pole_displacement[:n_table],
                              contact_radius=full.contact_radius[:n_table], displacements=full.displacements[:n_table])
    rel = res.wall_force / SEED_TABLE_FORCE[1:] - 1.0
    _, f_ref = normalized_curve(SEED_TABLE_EPS, SEED_TABLE_FORCE)
    _, f_fem = normalized_curve(np.r_[0, res.eps], np.r_[0, res.wall_force])
    rel_norm = f_fem[1:] / f_ref[1:] - 1.0
    modes = compaction_mode_set(res)
    beyond = compaction_mode_set(full, coordinate="relative", mode_eps=levels[-1])
    beyond.surface = surface_triangles(beyond.tets)
    write_mode_file(out / f"compaction_mode_beyond_{tag}.h5", beyond)
    modes.surface = surface_triangles(modes.tets)
    q = res.eps * 10.0
    fit = energy_fit_force(modes.energy_coefficients, q) / (6 * res.wall_force) - 1.0
    write_mode_file(out / f"compaction_modes_{tag}.h5", modes)
    np.savetxt(out / f"fem_compaction_{tag}.csv", np.c_[res.eps, res.wall_force, res.energy, res.contact_radius],
               delimiter=",", header="eps,force,energy,contact_radius", comments="")
    plot_compaction_curves({"eps": res.eps, "wall_force": res.wall_force}, out / f"compaction_force_{tag}.png")
    plot_mode(modes, out / f"compaction_mode_{tag}.png")
    return {"mesh_size": mesh_size, "unknowns_octant": int(res.unknowns), "seconds": seconds,
            "multipliers": int(len(res.problem.gap_h)),
            "table_rel_error": rel.tolist(), "table_max_abs_rel_error": float(np.abs(rel).max()),
            "table_max_abs_rel_error_eps_ge_0.01": float(np.abs(rel[res.eps >= 0.01]).max()),
            "normalized_rel_error": rel_norm.tolist(),
            "normalized_max_abs_rel_error": float(np.abs(rel_norm).max()),
            "modal_stiffness_eq54": float(modes.stiffness[0, 0]), "modal_mass_eq8_rho1": float(modes.mass[0, 0]),
            "tangent_stiffness_end": float(modes.metadata["tangent_stiffness_end"]),
            "energy_fit_force_rel_error": fit.tolist(), "contact_radius_end": float(res.contact_radius[-1])}


def hertz(sizes):
    R, E, nu = 1.0, 1.0, 0.3
    approach = np.array([0.001, 0.0025, 0.005])
    a = np.sqrt(R * approach[-1] / 2)
    rows = []
    for frac in sizes:
        t0 = time.perf_counter()
        F, d = sphere_between_plates(R, E, nu, approach, mesh_size=a * frac, return_details=True)
        rows.append({"mesh_size_over_a": frac, "unknowns": int(d["unknowns"]), "seconds": time.perf_counter() - t0,
                     "approach": approach.tolist(),
                     "force_over_hertz": (F / hertz_plate_force(R, E, nu, approach)).tolist(),
                     "contact_radius_over_hertz": (d["contact_radius"] / np.sqrt(R * approach / 2)).tolist()})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("bench_out"))
    args = ap.parse_args()
    started = provenance(__file__)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        comp = {"coarse": compaction(1.0, args.out, "coarse")}
        hz = hertz([0.5, 0.25])
    else:
        comp = {"coarse": compaction(1.0, args.out, "coarse"), "medium": compaction(0.5, args.out, "medium"),
                "fine": compaction(0.35, args.out, "fine")}
        hz = hertz([0.5, 0.25, 1 / 6])
    report = {"provenance": started, "compaction": comp, "hertz_two_plates": hz}
    (args.out / "fem_compaction.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: {kk: v[kk] for kk in ("unknowns_octant", "seconds", "table_max_abs_rel_error",
                                               "table_max_abs_rel_error_eps_ge_0.01", "normalized_max_abs_rel_error")}
                      for k, v in comp.items()}, indent=1))
    print(json.dumps(hz, indent=1))


if __name__ == "__main__":
    main()

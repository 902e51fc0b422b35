"""Neighbour search against the size ratio: one grid sized by the largest sphere vs grids by size class.

    python benchmarks/neighbour_search_ratio.py [--quick] [--n 100000] [--json FILE]

The sphere engine's cell list (engine/neighbours.py build_pairs) uses cells 2 r_max + skin wide with
skin = 0.2 r_max and a 27-cell stencil, so at a size ratio R each cell holds ~R^3 small spheres.
engine.neighbour_multi.pairs_within searches the same pairs (gap < skin) with one grid per size
class (as LAMMPS's `neigh_modify multi`); with by_size=False it is that single grid. Both are run
here on the same states and report: candidate distances computed per sphere, pairs listed per
sphere, and build time (wall clock, same run, after a warm-up; the machine may be shared, read the
ratios). States: a random gas at solid fraction 0.3 (engine.prepare.random_gas) and the same
positions scaled to solid fraction 0.6 (overlapping, but with a dense packing's neighbourhood
counts). Distributions: uniform 1 +- 0.2 (ratio 1.5), 1 +- 9/11 (ratio 10) and a sieve curve of equal
mass per log-diameter over a factor 10 (by number mostly small grains). Skins: the engine's
0.2 r_max, and 0.2 r_min (a skin scaled by the smallest sphere, for comparison).
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graindem.engine.neighbour_multi import pairs_within  # noqa: E402
from graindem.engine.prepare import random_gas  # noqa: E402
from graindem.particles.size_distribution import MAX_UNIFORM_SPREAD, Sieve, Uniform  # noqa: E402
from provenance import provenance


DISTRIBUTIONS = {
    "uniform_ratio_1.5": Uniform(1.0, 0.2),
    "uniform_ratio_10": Uniform(1.0, MAX_UNIFORM_SPREAD),
    # equal mass per log-diameter over a factor 10: by number the small grains dominate (~ D^-3)
    "sieve_ratio_10": Sieve([0.2, 2.0], [0.0, 100.0]),
}


def best_time(fn, repeat=3):
    best = math.inf
    out = None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20,000 spheres")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    started = provenance(__file__)
    n = 20000 if args.quick else args.n
    pairs_within(np.random.default_rng(0).uniform(0, 10, (50, 3)), np.full(50, 0.5), np.full(3, 10.0), 0.1)
    rows = []
    for name, dist in DISTRIBUTIONS.items():
        rng = np.random.default_rng(1)
        r = dist.sample(n, rng)
        L = (np.sum(4 / 3 * np.pi * r ** 3) / 0.3) ** (1 / 3)
        pos = random_gas(n, r, np.full(3, L), rng)
        for phi in (0.3, 0.6):
            scale = (0.3 / phi) ** (1 / 3)
            box = np.full(3, L * scale)
            for skin_name, skin in (("0.2_rmax", 0.2 * r.max()), ("0.2_rmin", 0.2 * r.min())):
                row = {"distribution": name, "size_ratio": float(r.max() / r.min()), "solid_fraction": phi,
                       "skin": skin_name, "n": n}
                for label, by_size in (("single_grid", False), ("size_classes", True)):
                    seconds, (pi, pj, examined) = best_time(lambda: pairs_within(pos * scale, r, box, skin, by_size))
                    row[label] = {"examined_per_sphere": examined / n, "pairs_per_sphere": pi.size / n,
                                  "seconds": seconds}
                row["examined_ratio_single_over_classes"] = (row["single_grid"]["examined_per_sphere"]
                                                             / row["size_classes"]["examined_per_sphere"])
                row["time_ratio_single_over_classes"] = (row["single_grid"]["seconds"]
                                                         / row["size_classes"]["seconds"])
                rows.append(row)
                s, c = row["single_grid"], row["size_classes"]
                print(f"{name:18s} phi {phi:.1f} skin {skin_name}: pairs/sphere {c['pairs_per_sphere']:6.2f}; "
                      f"examined/sphere single {s['examined_per_sphere']:8.1f} classes {c['examined_per_sphere']:7.1f}; "
                      f"time single {s['seconds']:.3f} s classes {c['seconds']:.3f} s "
                      f"(ratio {row['time_ratio_single_over_classes']:.2f})", flush=True)
    out = {"provenance": started, "benchmark": "neighbour_search_ratio", "rows": rows,
           "note": "CPU seconds of this process, best of 3, on a possibly shared machine; read the ratios"}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

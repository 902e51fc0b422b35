"""Time to generate a loose random packing (engine.prepare.random_gas) against its size.

    python benchmarks/packing_generation.py [--quick] [--max-n 1000000] [--json FILE]

random_gas places spheres by random sequential addition, largest first, testing overlaps through a
cell grid per size class (engine.neighbour_multi). The claim measured: time linear in the number of
spheres, for narrow and wide (size ratio 10) distributions. Scene: a periodic cube at solid
fraction 0.3 (engine.prepare's loose start) for three distributions: uniform radii 1 +- 0.2 (the
biaxial scenario's), uniform 1 +- 9/11 (size ratio 10) and a lognormal with sigma = ln(10)/6
(truncated at +-3 sigma: size ratio 10). Sizes 2000, 16,000, 100,000 and 1e6 (--quick: up to
16,000). Wall-clock seconds of one call after a warm-up call compiles the kernel; the machine may
be shared, so the figure to read is the time per sphere across sizes (flat = linear).
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graindem.engine.prepare import random_gas  # noqa: E402
from graindem.particles.size_distribution import (MAX_LOGNORMAL_SIGMA, MAX_UNIFORM_SPREAD, Lognormal,  # noqa: E402
                                                  Uniform)

DISTRIBUTIONS = {
    "uniform_0.2": Uniform(1.0, 0.2),
    "uniform_ratio10": Uniform(1.0, MAX_UNIFORM_SPREAD),
    "lognormal_ratio10": Lognormal(1.0, MAX_LOGNORMAL_SIGMA),
}
SOLID_FRACTION = 0.3


def time_one(n, dist, seed=0):
    rng = np.random.default_rng(seed)
    r = dist.sample(n, rng)
    L = (float(np.sum(4.0 / 3.0 * math.pi * r ** 3)) / SOLID_FRACTION) ** (1.0 / 3.0)
    t0 = time.perf_counter()
    pos = random_gas(n, r, np.full(3, L), rng, progress=n >= 100000)
    seconds = time.perf_counter() - t0
    assert pos.shape == (n, 3)
    return seconds, float(r.max() / r.min())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 16,000")
    ap.add_argument("--max-n", type=int, default=1_000_000)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    sizes = [n for n in (2000, 16000, 100000, 1000000) if n <= args.max_n and (not args.quick or n <= 16000)]
    time_one(100, DISTRIBUTIONS["uniform_0.2"])  # compile
    results = []
    for name, dist in DISTRIBUTIONS.items():
        for n in sizes:
            seconds, ratio = time_one(n, dist)
            row = {"distribution": name, "n": n, "size_ratio": ratio, "seconds": seconds,
                   "microseconds_per_sphere": 1e6 * seconds / n}
            results.append(row)
            print(f"{name:18s} n = {n:8d}  ratio {ratio:5.2f}  {seconds:8.3f} s  "
                  f"{row['microseconds_per_sphere']:7.2f} us/sphere", flush=True)
    out = {"benchmark": "packing_generation", "solid_fraction": SOLID_FRACTION, "results": results,
           "note": "wall-clock seconds on a possibly shared machine"}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

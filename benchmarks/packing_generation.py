"""Time to generate a loose random packing (engine.prepare.random_gas) against its size.

    python benchmarks/packing_generation.py [--quick] [--max-n 1000000] [--json FILE]

random_gas places spheres by random sequential addition, largest first, testing overlaps through a
cell grid per size class (engine.neighbour_multi). The claim measured: time linear in the number of
spheres, for narrow and wide (size ratio 10) distributions. Scene: a periodic cube at solid
fraction 0.3 (engine.prepare's loose start) for three distributions: uniform radii 1 +- 0.2 (the
biaxial scenario's), uniform 1 +- 9/11 (size ratio 10) and a lognormal with sigma = ln(10)/6
(truncated at +-3 sigma: size ratio 10). Sizes 2000, 16,000, 100,000 and 1e6 (--quick: up to
16,000). CPU seconds of this process for one call, after a warm-up call compiles the kernel; the
machine may be shared, so the figures to read are the time per sphere and per trial position across sizes
(flat = linear). The trials per sphere (random positions drawn until one fits) belong to random
sequential addition itself and grow slowly with n (the last spheres go into the rarest holes).
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
from provenance import provenance

DISTRIBUTIONS = {
    "uniform_0.2": Uniform(1.0, 0.2),
    "uniform_ratio10": Uniform(1.0, MAX_UNIFORM_SPREAD),
    "lognormal_ratio10": Lognormal(1.0, MAX_LOGNORMAL_SIGMA),
}
SOLID_FRACTION = 0.3


class CountingGenerator:
    """A numpy Generator that counts the trial positions random_gas keeps: every uniform draw is
    counted, and a draw the generator is rewound over (its state set back) is taken off again."""

    def __init__(self, rng):
        self.rng = rng
        self.rows = 0
        self._last = 0
        outer = self

        class BitGenerator:
            @property
            def state(self):
                return outer.rng.bit_generator.state

            @state.setter
            def state(self, value):
                outer.rng.bit_generator.state = value
                outer.rows -= outer._last

        self.bit_generator = BitGenerator()

    def uniform(self, low, high, size):
        self._last = size[0]
        self.rows += size[0]
        return self.rng.uniform(low, high, size)


def time_one(n, dist, seed=0):
    rng = np.random.default_rng(seed)
    r = dist.sample(n, rng)
    L = (float(np.sum(4.0 / 3.0 * math.pi * r ** 3)) / SOLID_FRACTION) ** (1.0 / 3.0)
    counting = CountingGenerator(rng)
    t0 = time.process_time()
    pos = random_gas(n, r, np.full(3, L), counting, progress=n >= 100000)
    seconds = time.process_time() - t0
    assert pos.shape == (n, 3)
    return seconds, float(r.max() / r.min()), counting.rows / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 16,000")
    ap.add_argument("--max-n", type=int, default=1_000_000)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    started = provenance(__file__)
    sizes = [n for n in (2000, 16000, 100000, 1000000) if n <= args.max_n and (not args.quick or n <= 16000)]
    time_one(100, DISTRIBUTIONS["uniform_0.2"])  # compile
    results = []
    for name, dist in DISTRIBUTIONS.items():
        for n in sizes:
            seconds, ratio, trials = time_one(n, dist)
            row = {"distribution": name, "n": n, "size_ratio": ratio, "seconds": seconds,
                   "microseconds_per_sphere": 1e6 * seconds / n, "trials_per_sphere": trials,
                   "microseconds_per_trial": 1e6 * seconds / (trials * n)}
            results.append(row)
            print(f"{name:18s} n = {n:8d}  ratio {ratio:5.2f}  {seconds:8.3f} s  "
                  f"{row['microseconds_per_sphere']:7.2f} us/sphere  {trials:6.1f} trials/sphere  "
                  f"{row['microseconds_per_trial']:6.3f} us/trial", flush=True)
    out = {"provenance": started, "benchmark": "packing_generation", "solid_fraction": SOLID_FRACTION, "results": results,
           "note": "CPU seconds of one process on a possibly shared machine"}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

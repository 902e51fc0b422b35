"""Memory of a sphere run with Jäger load histories: bytes per sphere, and whether 10^6 spheres fit in 4 GB.

    python benchmarks/memory.py [--sizes 100000,1000000] [--steps N] [--json FILE] [--quick]

Each size runs in a fresh process (`--child N`): `examples/parallel_box.build(N)`, a periodic box of
spheres (radii 0.8-1.2 mm) grown by 12 % so that every sphere touches its neighbours and pushes
them apart under the Jäger law (contacts open, close and slide: load histories everywhere), then
`steps` steps. A small warm-up run first loads the kernels (compiling them in a fresh numba cache),
so that the interpreter, numpy, numba and the compiled code are in the baseline. Reported per size:

- `peak_rss_bytes`: the process's peak resident set (getrusage), and `baseline_rss_bytes` after the
  warm-up; `run_bytes_per_sphere` = (peak - baseline) / N, which includes the temporaries of set-up,
  neighbour builds and passes;
- `array_bytes_per_sphere`: the bytes of every numpy array the Simulation and its history store
  hold at the end (allocated capacity, not only the rows in use), with the largest by name;
- `pairs_per_sphere` (listed rows) and `store_points_per_sphere` (Jäger history points in use).

`bytes_per_sphere_slope`: (peak_N2 - peak_N1) / (N2 - N1) between the two largest sizes, the
marginal cost of a sphere with the fixed part cancelled. The goal (issue #23): 10^6 spheres with
Jäger histories in under 4 GB (4e9 bytes) of peak resident memory, read directly from the 10^6 run.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from provenance import provenance  # noqa: E402

FULL = dict(sizes=(100_000, 1_000_000), steps=50)
QUICK = dict(sizes=(10_000, 40_000), steps=50)
GOAL_BYTES = 4e9
GOAL_SPHERES = 1_000_000


def rss_now():
    """The current resident set of this process (bytes), from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def array_bytes(sim):
    """nbytes of every numpy array held by the Simulation and its history store, by name."""
    found = {}
    for owner, prefix in ((sim, ""), (sim.store, "store.")):
        for name, value in vars(owner).items():
            if isinstance(value, np.ndarray):
                found[prefix + name] = value.nbytes
    return found


def child(n, steps):
    from parallel_box import build
    from graindem.core.layout import ICTL_NPAIRS
    warm = build(500, seed=2)
    warm.run(5)
    del warm
    baseline = rss_now()
    t0 = time.perf_counter()
    sim = build(n)
    sim.run(steps)
    seconds = time.perf_counter() - t0
    arrays = array_bytes(sim)
    total = sum(arrays.values())
    largest = dict(sorted(arrays.items(), key=lambda kv: -kv[1])[:12])
    return {"n": n, "steps": steps, "seconds": seconds, "baseline_rss_bytes": baseline, "peak_rss_bytes": peak_rss(),
            "run_bytes_per_sphere": (peak_rss() - baseline) / n, "array_bytes_per_sphere": total / n,
            "largest_arrays_bytes_per_sphere": {k: v / n for k, v in largest.items()},
            "pairs_per_sphere": int(sim.ictl[ICTL_NPAIRS]) / n, "pair_capacity_per_sphere": sim.pi.shape[0] / n,
            "store_points_per_sphere": int(sim.store.n_live) / n, "store_capacity_per_sphere": sim.store.capacity / n}


def measure(n, steps):
    out = subprocess.run([sys.executable, __file__, "--child", str(n), "--steps", str(steps)], capture_output=True,
                         text=True, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"the run of {n} spheres failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="comma-separated sphere counts (two or more)")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK['sizes']}")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.steps is not None:
        cfg["steps"] = args.steps
    if args.child is not None:
        print(json.dumps(child(args.child, cfg["steps"])))
        return
    record = provenance(__file__, argv)
    sizes = sorted(int(s) for s in args.sizes.split(",")) if args.sizes else list(cfg["sizes"])
    if len(sizes) < 2:
        raise SystemExit("--sizes: give at least two sphere counts")
    runs = []
    for n in sizes:
        print(f"{n:,} spheres, {cfg['steps']} steps ...", flush=True)
        r = measure(n, cfg["steps"])
        runs.append(r)
        print(f"  peak {r['peak_rss_bytes'] / 1e9:.2f} GB, run {r['run_bytes_per_sphere']:.0f} B/sphere, arrays "
              f"{r['array_bytes_per_sphere']:.0f} B/sphere, {r['pairs_per_sphere']:.2f} rows/sphere "
              f"(capacity {r['pair_capacity_per_sphere']:.2f}), {r['seconds']:.0f} s", flush=True)
    a, b = runs[-2], runs[-1]
    slope = (b["peak_rss_bytes"] - a["peak_rss_bytes"]) / (b["n"] - a["n"])
    at_goal = next((r["peak_rss_bytes"] for r in runs if r["n"] == GOAL_SPHERES), None)
    projected = a["peak_rss_bytes"] + slope * (GOAL_SPHERES - a["n"])
    out = {"provenance": record, "benchmark": "memory", "quick": args.quick, "law": "jaeger", "runs": runs,
           "bytes_per_sphere_slope": slope, "projected_peak_bytes_at_1e6": projected,
           "measured_peak_bytes_at_1e6": at_goal, "goal_bytes_at_1e6": GOAL_BYTES,
           "goal_met": (at_goal if at_goal is not None else projected) < GOAL_BYTES}
    print(f"marginal {slope:.0f} B/sphere; 10^6 spheres: "
          + (f"measured {at_goal / 1e9:.2f} GB" if at_goal else f"projected {projected / 1e9:.2f} GB")
          + f" (goal < {GOAL_BYTES / 1e9:.0f} GB)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

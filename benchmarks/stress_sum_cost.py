"""What the exact stress and wall sums cost the serial engine: steps/s of two source trees on one scene.

    nice -n 19 python benchmarks/stress_sum_cost.py --before OTHER/src [--servo | --walls] [--steps 300] [--rounds 3]
                                                    [--json FILE]

Runs `packing_4000` (parallel_ranks.py's scene: the shared settled packing, periodic along x and y,
jaeger, local damping; with --servo, x and y on the stress servo, which reads the stress sum every
step; with --walls, the packing in its walled box instead, as benchmarks/vs_lammps.py runs it: five
walls, gravity, restitution 0.5, dt 1e-7 s, plus a lid moving down, whose work reads the wall
forces every step) with the sources of this checkout ("after") and with those of another tree
("before", e.g. a checkout of the commit before the exact sum), each in a fresh process (two versions
of one package cannot share a process), alternating round by round, the order flipped every round;
the best round of each counts (CPU seconds of the timed run(steps) after a 20-step warm-up). Reports
steps/s and the ratio after / before. Each tree keeps its own numba cache (NUMBA_CACHE_DIR of the
environment applies to this checkout only; the other tree uses graindem's default, keyed by its
sources).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import provenance  # noqa: E402

CHILD = """
import json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
from parallel_ranks import PACKING, packing_4000
from graindem.engine.simulation import Simulation
if {walls}:
    a = np.loadtxt(PACKING, delimiter=",", skiprows=1)
    pos, r = a[:, :3], a[:, 3]
    top = float((pos[:, 2] + r).max())
    sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.5, density=2500.0, restitution=0.5,
                     gravity=(0, 0, -9.81), dt=1e-7)
    sim.set_box((0, 0, 0), (0.03, 0.03, top + 0.005))
    for p, n in (((0, 0, 0), (1, 0, 0)), ((0.03, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                 ((0, 0.03, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(p, n)
    sim.add_wall((0, 0, top + 1e-4), (0, 0, -1), velocity=(0, 0, -0.1))
    sim.add_particles(pos, r)
else:
    sim = packing_4000()
sim.setup()
if {servo}:
    for axis in (0, 1):
        sim.control_axis(axis, stress=1e5, gain=1e-6 / sim.dt, max_rate=1e-6 / sim.dt)
sim.run(20)
t0 = time.process_time()
sim.run({steps})
print(json.dumps({{"cpu_s": time.process_time() - t0, "steps": {steps}}}))
"""


def rate(src, steps, own_cache, servo, walls):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    env.setdefault("NUMBA_NUM_THREADS", "1")
    if not own_cache:
        env.pop("NUMBA_CACHE_DIR", None)
    code = CHILD.format(bench=str(ROOT / "benchmarks"), steps=int(steps), servo=bool(servo), walls=bool(walls))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    return rec["steps"] / rec["cpu_s"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the src folder of the tree to compare with")
    ap.add_argument("--servo", action="store_true", help="x and y on the stress servo")
    ap.add_argument("--walls", action="store_true", help="the packing in its walled box, a lid moving down")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        raise SystemExit("--steps and --rounds must be >= 1")
    if args.servo and args.walls:
        raise SystemExit("--servo and --walls are two scenes: give one of them")
    record = {"provenance": provenance(__file__, argv), "scene": "packing_4000" + ("_servo" if args.servo else "") + ("_walls" if args.walls else ""),
              "steps": args.steps}
    trees = {"before": (Path(args.before).resolve(), False), "after": (ROOT / "src", True)}
    best = {"before": 0.0, "after": 0.0}
    rounds = []
    for k in range(args.rounds):
        order = ("before", "after") if k % 2 == 0 else ("after", "before")
        this = {}
        for name in order:
            src, own = trees[name]
            this[name] = rate(src, args.steps, own, args.servo, args.walls)
            best[name] = max(best[name], this[name])
        rounds.append(this)
        print(f"round {k}: " + ", ".join(f"{n} {this[n]:.1f} steps/s" for n in ("before", "after")), flush=True)
    record.update({"rounds": rounds, "steps_per_s": best, "after_over_before": best["after"] / best["before"],
                   "before_src": str(trees["before"][0]), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    print(f"after / before: {record['after_over_before']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()

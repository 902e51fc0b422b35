"""Checkpoint a run, continue it in a new process, and check that the restart is exact.

    python examples/restart.py [--steps N] [--more M] [--out DIR]

A small periodic packing under a stress-controlled cell with the Jäger law is run for N steps and
saved with `graindem.engine.checkpoint.save` (HDF5: every array that influences the next step,
including each contact's load history). A second Python process loads the checkpoint and runs M more
steps. The reference is the same run done in one go for N + M steps: every array of the two final
states must be equal bit for bit. The command line does the same with
`graindem run --restart DIR/checkpoint.h5 --out DIR --steps M`.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

from graindem.engine import Simulation, checkpoint


def build(seed=1):
    """216 spheres on a jittered lattice in a periodic cell, the cell's three axes servo-controlled."""
    sim = Simulation(law="jaeger", E=66.7e9, nu=0.15, mu=0.5, density=2650.0, local_damping=0.1)
    L = 4e-3
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    g = (np.arange(6) + 0.5) * L / 6
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    rng = np.random.default_rng(seed)
    sim.add_particles(pos, rng.uniform(2.8e-4, 3.4e-4, len(pos)))
    for axis in range(3):
        sim.control_axis(axis, stress=100e3)
    return sim


def same_state(a, b):
    """Names of the arrays that differ between two state_dict()s (empty: bit for bit the same)."""
    arrays_a, arrays_b = a[0], b[0]
    names = sorted(set(arrays_a) | set(arrays_b))
    return [k for k in names if k not in arrays_a or k not in arrays_b
            or not np.array_equal(arrays_a[k], arrays_b[k], equal_nan=True)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps before the checkpoint")
    parser.add_argument("--more", type=int, default=1000, help="steps after the restart")
    parser.add_argument("--out", default="results/restart_example", help="folder for the checkpoints")
    parser.add_argument("--resume", default=None, help=argparse.SUPPRESS)  # the second process
    args = parser.parse_args(argv)
    for name in ("steps", "more"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be an integer >= 1; got {getattr(args, name)}")
    out = Path(args.out)

    if args.resume:  # the new process: load, continue, save
        sim, extra = checkpoint.load(args.resume)
        sim.run(args.more)
        checkpoint.save(sim, out / "restarted.h5")
        return 0

    out.mkdir(parents=True, exist_ok=True)
    sim = build()
    sim.run(args.steps)
    checkpoint.save(sim, out / "checkpoint.h5")
    print(f"ran {args.steps} steps, checkpoint written to {out / 'checkpoint.h5'}")
    subprocess.run([sys.executable, __file__, "--resume", str(out / "checkpoint.h5"), "--more", str(args.more),
                    "--out", str(out)], check=True)
    restarted, _ = checkpoint.load(out / "restarted.h5")
    print(f"a new process continued it for {args.more} steps")

    reference = build()
    reference.run(args.steps + args.more)
    differ = same_state(reference.state_dict(), restarted.state_dict())
    m = restarted.measure()
    print(f"after {args.steps + args.more} steps: mean stress {m['pressure']:.4g} Pa, "
          f"{m['n_contacts']} contacts")
    if differ:
        print(f"the restarted run differs from the uninterrupted one in: {', '.join(differ)}")
        return 1
    print("the restarted run equals the uninterrupted one bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

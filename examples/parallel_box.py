"""A periodic box of spheres run over several MPI ranks, checked against the same run on one.

    python examples/parallel_box.py [--ranks N] [--n SPHERES] [--steps S] [--out DIR]

The script starts itself under the environment's MPI launcher with N ranks (the unchanged Python
API: `Simulation`, `add_particles`, `run`, `checkpoint.save`, on every rank; graindem decomposes the
box because the launcher started several ranks). The decomposed run writes DIR/ranks.h5. The
script then runs the same case in this process, on one rank, and compares the two final states
array by array: positions, velocities, spins, orientations, every contact row and every Jäger load
history must be equal bit for bit (the running sums of damping work and stress are summed per rank
and may differ in the last digits; docs/parallel-mpi.md says why).

Run decomposed directly with `mpiexec -n N python examples/parallel_box.py --child --out DIR`.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from graindem.contact import state as S
from graindem.core.layout import ICTL_NPAIRS
from graindem.engine import Simulation, checkpoint
from graindem.engine.prepare import random_gas
from graindem.parallel.world import launcher, world

# what must match bit for bit; acc (running sums per rank) is compared to 1e-12 separately
COMPARED = ("pos", "vel", "omega", "quat", "pos_build", "cell", "ictl")


# --8<-- [start:build]
def build(n, seed=1):
    """n spheres (radii 0.8-1.2 mm) at random in a periodic cube at a solid fraction of 0.35, then
    grown by 12 % so that they overlap and push apart: contacts open and close everywhere, across the
    ranks' boundaries and the periodic faces, under the Jäger law."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.8, 1.2, n) * 1e-3
    L = (np.sum(4.0 / 3.0 * np.pi * r ** 3) / 0.35) ** (1.0 / 3.0)
    pos = random_gas(n, r, np.full(3, L), rng)
    sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.5, density=2500.0, local_damping=0.1,
                     max_initial_overlap=0.5, dt_fraction=0.2)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, 1.12 * r, velocities=rng.normal(0.0, 0.05, (n, 3)))
    return sim
# --8<-- [end:build]


def timed_run(sim, steps):
    """Run `steps` steps; the rate (steps/s) leaves out the first step, which compiles the kernels
    in a fresh environment."""
    sim.run(1)
    start = time.perf_counter()
    sim.run(steps - 1)
    return (steps - 1) / max(time.perf_counter() - start, 1e-9)


def differences(a, b):
    """Names of the arrays in which two simulations differ (contact rows and load histories included)."""
    sa, sb = a.state_dict()[0], b.state_dict()[0]
    differ = [k for k in COMPARED if not np.array_equal(sa[k], sb[k])]
    m = int(b.ictl[ICTL_NPAIRS])
    differ += [k for k in ("pi", "pj", "pfs", "pcq") if not np.array_equal(sa[k][:m], sb[k][:m])]
    if [a.store.points(h) for h in sa["pist"][:m, S.I_HEAD]] != [b.store.points(h) for h in sb["pist"][:m, S.I_HEAD]]:
        differ.append("load histories")
    if not np.allclose(sa["acc"], sb["acc"], rtol=1e-12, atol=1e-12 * np.abs(sb["acc"]).max()):
        differ.append("acc")
    return differ


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2, help="MPI ranks of the decomposed run (>= 2)")
    parser.add_argument("--n", type=int, default=1000, help="spheres (>= the number of ranks)")
    parser.add_argument("--steps", type=int, default=1000, help="time steps")
    parser.add_argument("--out", default="results/parallel_box", help="folder for the checkpoint")
    parser.add_argument("--child", action="store_true", help="this process is one rank of the decomposed run")
    args = parser.parse_args(argv)
    if args.ranks < 2:
        parser.error(f"--ranks must be an integer >= 2; got {args.ranks}")
    if args.n < args.ranks:
        parser.error(f"--n must be >= --ranks ({args.ranks}); got {args.n}")
    if args.steps < 2:
        parser.error(f"--steps must be an integer >= 2; got {args.steps}")
    out = Path(args.out)

    if args.child:  # one rank of the decomposed run
        sim = build(args.n)
        rate = timed_run(sim, args.steps)
        checkpoint.save(sim, out / "ranks.h5")  # rank 0 writes the whole state
        comm = world()
        if comm is None or comm.Get_rank() == 0:
            print(f"{comm.Get_size() if comm else 1} ranks: {args.steps} steps of {args.n} spheres, "
                  f"{rate:.0f} steps/s", flush=True)
        return 0

    found = launcher(args.ranks)
    if found is None:
        print("no MPI launcher with mpi4py in this environment: pip install 'graindem[mpi]'", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    prefix, env = found
    env.setdefault("NUMBA_NUM_THREADS", "1")
    subprocess.run(prefix + [sys.executable, os.path.abspath(__file__), "--child", "--n", str(args.n),
                             "--steps", str(args.steps), "--out", str(out.resolve())], env=env, check=True)
    decomposed, _ = checkpoint.load(out / "ranks.h5")
    serial = build(args.n)
    rate = timed_run(serial, args.steps)
    print(f"1 rank: {args.steps} steps of {args.n} spheres, {rate:.0f} steps/s")
    m = serial.measure()
    print(f"after {args.steps} steps: {m['n_contacts']} contacts, {m['n_rebuilds']} neighbour rebuilds, "
          f"mean load-history length {m['mean_history_length']:.2f}")
    differ = differences(decomposed, serial)
    if differ:
        print(f"the decomposed run differs from the run on one rank in: {', '.join(differ)}")
        return 1
    print(f"the run on {args.ranks} ranks equals the run on one rank bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

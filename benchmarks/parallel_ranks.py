"""Steps per second of sphere scenes on 1 and on 2 MPI ranks (graindem.parallel), and how far the
decomposed run's final state is from the run on one rank.

    python benchmarks/parallel_ranks.py [--scenes packing_4000,box_32000] [--steps N] [--rounds R]
                                        [--json FILE] [--quick]

Every measurement is a fresh process: `python this.py --child SCENE` for one rank, the same under
the environment's MPI launcher (parallel.world.launcher) for several. Rounds alternate the rank
counts (1, 2, 1, 2, ...) so that both see the same load on a shared machine; the reported rate is
the best round. The timed part is `Simulation.run(steps)` after one warm-up step (kernels
compiled or loaded from the cache): on several ranks it includes the decomposition at the start
of the call and the gathering of the whole state at its end.

Scenes (spheres only; viscous damping does not run decomposed, docs/parallel-mpi.md):
- packing_4000: the shared settled packing (shared/data/packing_4000.csv, 4000 spheres in a
  30 mm x 30 mm column) with the box periodic along x and y instead of the walls, no gravity,
  Cundall's local damping 0.1 instead of restitution, Jäger law;
- box_32000: 32,000 spheres in a periodic cube, grown so that they overlap and push apart
  (examples/parallel_box.py's case, Jäger law).

`ranks_rates(scene, steps, rounds)` is the function benchmarks that report a "ranks" column call.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from provenance import provenance  # noqa: E402

# the shared data folder next to the checkout (or next to the folder of its git worktrees)
PACKING = next((p / "shared" / "data" / "packing_4000.csv" for p in ROOT.parents
                if (p / "shared" / "data" / "packing_4000.csv").exists()), ROOT.parent / "shared" / "data" / "packing_4000.csv")
sys.path.insert(0, str(ROOT / "examples"))
SCENES = ("packing_4000", "box_32000")


def packing_4000(path=PACKING):
    from graindem.engine.simulation import Simulation
    a = np.loadtxt(path, delimiter=",", skiprows=1)
    pos, r = a[:, :3], a[:, 3]
    top = float((pos[:, 2] + r).max())
    sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.5, density=2500.0, local_damping=0.1, dt_fraction=0.2)
    sim.set_box((0.0, 0.0, 0.0), (0.03, 0.03, top), periodic=(True, True, False))
    sim.add_particles(pos, r)
    return sim


def box_32000():
    from parallel_box import build
    return build(32000)


def scene(name):
    if name not in SCENES:
        raise ValueError(f"scene must be one of {', '.join(SCENES)}; got {name!r}")
    return packing_4000() if name == "packing_4000" else box_32000()


def child(name, steps, out):
    """One measurement (run on every rank): steps/s of `steps` steps after a warm-up step; rank 0
    writes the rate, each rank's wall and CPU seconds per phase of the timed run
    (parallel.subdomain.PhaseTimes; one rank: the whole run) and the final positions and velocities
    to `out` (.json, .npz)."""
    from graindem.parallel.subdomain import PhaseTimes
    from graindem.parallel.world import world
    sim = scene(name)
    sim.run(1)
    sim.mpi_phases = PhaseTimes()
    t0 = time.perf_counter()
    c0 = time.process_time()
    sim.run(steps)
    wall = time.perf_counter() - t0
    phases = dict(sim.mpi_phases.sums, run=[wall, time.process_time() - c0, 1])
    comm = world()
    every = comm.gather(phases, root=0) if comm else [phases]
    if comm is None or comm.Get_rank() == 0:
        Path(out).with_suffix(".json").write_text(json.dumps({"steps_per_s": steps / wall,
                                                              "ranks": comm.Get_size() if comm else 1,
                                                              "phases": every}))
        np.savez(Path(out).with_suffix(".npz"), pos=sim.pos, vel=sim.vel)


def measure(name, ranks, steps, out):
    """Start one measurement on `ranks` ranks; returns (steps/s, final pos, final vel, each rank's
    phases: {phase: [wall s, CPU s, calls]})."""
    from graindem.parallel.world import launcher
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--steps", str(steps), "--out", str(out)]
    env = None
    if ranks > 1:
        found = launcher(ranks)
        if found is None:
            raise RuntimeError("no MPI launcher with mpi4py in this environment: pip install 'graindem[mpi]'")
        prefix, env = found
        env.setdefault("NUMBA_NUM_THREADS", "1")
        argv = prefix + argv
    subprocess.run(argv, env=env, check=True, cwd=ROOT)
    record = json.loads(Path(out).with_suffix(".json").read_text())
    state = np.load(Path(out).with_suffix(".npz"))
    return record["steps_per_s"], state["pos"], state["vel"], record["phases"]


def ranks_rates(name, steps, rounds, ranks=(1, 2), workdir="results/parallel_ranks"):
    """{"ranks": {"1": {"steps_per_s": best, "phases_ms_per_step": ...}, "2": {...}},
    "ranks_vs_serial_max_rel": float} of a scene, the rank counts alternated round by round;
    phases_ms_per_step: each rank's {phase: [wall ms, CPU ms]} a step in the best round
    (parallel.subdomain.PhaseTimes; one rank: the whole run); max_rel: the largest difference of
    the final positions and velocities from the one-rank run's, relative to the largest of each."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    best = {r: 0.0 for r in ranks}
    phases = {}
    final = {}
    for _ in range(rounds):
        for r in ranks:
            rate, pos, vel, times = measure(name, r, steps, work / f"{name}_{r}")
            if rate > best[r]:
                best[r] = rate
                phases[r] = [{k: [round(w / steps * 1e3, 3), round(c / steps * 1e3, 3)] for k, (w, c, _) in t.items()}
                             for t in times]
            final[r] = (pos, vel)
    rel = 0.0
    for r in ranks[1:]:
        for a, b in zip(final[r], final[ranks[0]]):
            rel = max(rel, float(np.abs(a - b).max() / np.abs(b).max()))
    return {"ranks": {str(r): {"steps_per_s": best[r], "phases_ms_per_step": phases[r]} for r in ranks},
            "ranks_vs_serial_max_rel": rel}


def profile(name, steps, workdir="results/parallel_ranks"):
    """Print, for one run of `name` on 1 and on 2 ranks, each rank's wall and CPU milliseconds a
    step in each phase of the timed run (parallel.subdomain.PhaseTimes)."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    for ranks in (1, 2):
        rate, _, _, times = measure(name, ranks, steps, work / f"{name}_profile_{ranks}")
        print(f"{name}, {ranks} rank(s): {rate:.2f} steps/s; ms a step (wall / CPU), calls")
        for rank, phases in enumerate(times):
            cells = [f"{k} {w / steps * 1e3:.2f}/{c / steps * 1e3:.2f} ({n})" for k, (w, c, n) in phases.items()]
            print(f"  rank {rank}: " + ", ".join(cells), flush=True)


def halo_volume(sides, spans, h):
    """Volume within distance h of a box with sides `sides` (3,), not counting the box itself,
    along the axes it does not span (spans[k]: the box spans the whole periodic cell along k, so
    the ghosts along k are its own bodies' images)."""
    free = [a for a, full in zip(sides, spans) if not full]
    spanned = float(np.prod([a for a, full in zip(sides, spans) if full]))
    if len(free) == 0:
        return 0.0
    if len(free) == 1:
        return 2.0 * h * spanned
    if len(free) == 2:
        a, b = free
        return (2.0 * h * (a + b) + np.pi * h * h) * spanned
    a, b, c = free
    return 2.0 * h * (a * b + b * c + a * c) + np.pi * h * h * (a + b + c) + 4.0 / 3.0 * np.pi * h ** 3


def halo_table(sim, ranks):
    """For each rank count of `ranks`: bodies per rank, ghosts per rank measured on the
    decomposition graindem makes (parallel.bisection on the bodies' positions; mean and max) and
    modelled (halo_volume of each rank's box times the number density), and the ranks each rank
    receives ghosts from (messages per step, mean and max)."""
    from graindem.core.cell import CELL_L, fractional_coordinates
    from graindem.core.layout import CTL_RMAX, CTL_SKIN
    from graindem.parallel.bisection import Bisection
    sim.setup()
    n = sim.n
    L = sim.cell[CELL_L:CELL_L + 3].copy()
    periodic = np.array(sim.periodic, dtype=bool)
    h = 2.0 * float(sim.ctl[CTL_RMAX]) + float(sim.ctl[CTL_SKIN])
    density = n / float(np.prod(L))
    frac = fractional_coordinates(sim.pos, sim.cell, periodic)
    rows = []
    for p in ranks:
        tree = Bisection(frac, np.arange(n), p, L)
        owner = tree.owner(frac)
        near = tree.halo_ranks(frac, periodic, h)
        ghosts = np.array([np.count_nonzero(near[:, r] & (owner != r)) for r in range(p)])
        partners = np.array([np.unique(owner[near[:, r] & (owner != r)]).size for r in range(p)])
        sides = (tree.boxes[:, 1] - tree.boxes[:, 0]) * L
        spans = (tree.boxes[:, 1] - tree.boxes[:, 0]) >= 1.0
        model = np.array([halo_volume(sides[r], spans[r] & periodic, h) * density for r in range(p)])
        width = float(sides.min())
        rows.append({"ranks": p, "bodies_per_rank": n / p, "ghosts_mean": float(ghosts.mean()),
                     "ghosts_max": int(ghosts.max()), "ghosts_model_mean": float(model.mean()),
                     "partners_mean": float(partners.mean()), "partners_max": int(partners.max()),
                     "thinnest_box_over_halo": width / h})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", default=",".join(SCENES), help=f"comma-separated, among {', '.join(SCENES)}")
    p.add_argument("--steps", type=int, default=200, help="timed steps per measurement (>= 1)")
    p.add_argument("--rounds", type=int, default=3, help="measurements per rank count (>= 1)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--quick", action="store_true", help="20 steps, 1 round")
    p.add_argument("--profile", action="store_true", help="one run of each scene on 1 and on 2 ranks; print "
                   "each rank's wall and CPU milliseconds a step per phase")
    p.add_argument("--halo", action="store_true", help="print the halo table of box_32000 instead (no MPI)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        p.error(f"--steps and --rounds must be >= 1; got {args.steps}, {args.rounds}")
    if args.child:
        child(args.child, args.steps, args.out)
        return 0
    if args.halo:
        print("ranks  bodies/rank  ghosts/rank (mean, max)  modelled  messages/step per rank (mean, max)  "
              "thinnest box / halo")
        for r in halo_table(box_32000(), (2, 4, 8, 16, 32, 64)):
            print(f"{r['ranks']:5d}  {r['bodies_per_rank']:11.0f}  {r['ghosts_mean']:9.0f} {r['ghosts_max']:7d}  "
                  f"{r['ghosts_model_mean']:14.0f}  {r['partners_mean']:8.1f} {r['partners_max']:4d}  "
                  f"{r['thinnest_box_over_halo']:.2f}")
        return 0
    steps, rounds = (20, 1) if args.quick else (args.steps, args.rounds)
    names = [s for s in args.scenes.split(",") if s]
    for s in names:
        if s not in SCENES:
            p.error(f"--scenes: {s!r} is not among {', '.join(SCENES)}")
    if args.profile:
        for s in names:
            profile(s, steps)
        return 0
    result = {"provenance": provenance(__file__, argv), "steps": steps, "rounds": rounds, "scenes": {}}
    for s in names:
        result["scenes"][s] = ranks_rates(s, steps, rounds)
        r = result["scenes"][s]["ranks"]
        print(f"{s}: 1 rank {r['1']['steps_per_s']:.1f} steps/s, 2 ranks {r['2']['steps_per_s']:.1f} steps/s "
              f"({r['2']['steps_per_s'] / r['1']['steps_per_s']:.2f}x); 2 ranks against 1, max relative "
              f"difference {result['scenes'][s]['ranks_vs_serial_max_rel']:.1e}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

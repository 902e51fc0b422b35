"""Throughput of the sphere engine against N: particle-steps and contact-steps per CPU second.

    python benchmarks/throughput.py [--quick] [--law mindlin] [--max-n 1000000] [--json FILE]

Assembly: a face-centred cubic crystal in a periodic cube, every sphere pressed onto its 12
neighbours by a 1e-4 relative overlap (6 contacts per sphere), radii 1 mm +- 1 %, small random
velocities, E = 70 GPa, nu = 0.25, rho = 2500 kg/m^3, mu = 0.5, dt = 0.2 dt_crit. The crystal
keeps its contacts, so every size does the same work per sphere and cost per particle-step should
not depend on N (the O(N) claim). Sizes N = 4 m^3 include multiples of 512 (2048, 16384, 131072),
the layout trap of the performance notes. Timing is CPU seconds of this process (shared machine),
single thread, after a warm-up; memory is the bytes of the engine's arrays per particle and per
listed pair (contact row).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graindem.core.layout import ICTL_NPAIRS, ICTL_NREBUILDS
from graindem.engine.simulation import Simulation  # noqa: E402
from provenance import provenance

PARTICLE_ARRAYS = ("pos", "vel", "omega", "quat", "force", "torque", "radius", "mass", "inertia", "pos_build", "pstart",
                   "pmat", "pid")
PAIR_ARRAYS = ("pi", "pj", "pfs", "pist", "pcq", "pk", "pm", "qi", "qj", "qfs", "qist", "qcq")


def fcc(m, r=1e-3, overlap=1e-4, seed=0):
    a = 2.0 * np.sqrt(2.0) * r * (1.0 - overlap)  # nearest-neighbour distance 2 r (1 - overlap)
    base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    idx = np.stack(np.meshgrid(np.arange(m), np.arange(m), np.arange(m), indexing="ij"), -1).reshape(-1, 3)
    pos = ((idx[:, None, :] + base[None, :, :]).reshape(-1, 3) + 0.25) * a
    rng = np.random.default_rng(seed)
    radii = r * (1.0 + 0.01 * rng.uniform(-1, 1, len(pos)))
    return pos, radii, m * a, rng


def measure(m, law, steps, shuffle=False, sort=False):
    pos, r, L, rng = fcc(m)
    if shuffle:
        order = rng.permutation(len(r))
        pos, r = pos[order], r[order]
    sim = Simulation(law=law, E=70e9, nu=0.25, mu=0.5, density=2500.0, max_initial_overlap=0.05,
                     reference_overlap=2e-6 * r.max(), sort_particles=sort)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, r, velocities=rng.normal(size=pos.shape) * 1e-4)
    sim.setup()
    sim.run(20)
    r0 = int(sim.ictl[ICTL_NREBUILDS])
    c0 = time.process_time()
    w0 = time.perf_counter()
    sim.run(steps)
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0
    n = sim.n
    npairs = int(sim.ictl[ICTL_NPAIRS])
    contacts = int((sim.pfs[:npairs, 0] > 0).sum())
    pbytes = sum(getattr(sim, a).nbytes for a in PARTICLE_ARRAYS)
    cbytes = sum(getattr(sim, a).nbytes for a in PAIR_ARRAYS)
    return {"n": n, "steps": steps, "cpu_s": cpu, "wall_s": wall, "contacts": contacts, "pairs": npairs,
            "particle_steps_per_s": n * steps / cpu, "contact_steps_per_s": contacts * steps / cpu,
            "ns_per_particle_step": cpu / (n * steps) * 1e9, "rebuilds": int(sim.ictl[ICTL_NREBUILDS]) - r0,
            "bytes_per_particle": pbytes / n, "bytes_per_pair_row": cbytes / sim.pi.shape[0],
            "bytes_per_particle_total": (pbytes + cbytes) / n}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N up to ~1e5")
    ap.add_argument("--law", default="mindlin")
    ap.add_argument("--max-n", type=int, default=1_000_000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--order-study", action="store_true",
                    help="particle order only: N = 4000 and 62,500, crystal order or shuffled, with and without "
                         "sort_particles, alternating, best of --rounds")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sort", action="store_true", help="sort_particles=True in the N sweep")
    args = ap.parse_args(argv)
    started = provenance(__file__, argv)
    if args.order_study:
        return order_study(args, started)
    ms = [6, 8, 11, 16, 22, 32, 47, 63]
    if args.quick:
        ms = [6, 8, 16, 24]
    rows = []
    for m in ms:
        n = 4 * m ** 3
        if n > args.max_n:
            break
        steps = int(min(400, max(20, 4e7 / n)))
        try:
            res = measure(m, args.law, steps, sort=args.sort)
        except MemoryError:
            print(f"N = {n}: out of memory, stopping", flush=True)
            break
        rows.append(res)
        print(f"N = {res['n']:8d}: {res['particle_steps_per_s'] / 1e6:6.2f} M particle-steps/s, "
              f"{res['contact_steps_per_s'] / 1e6:6.2f} M contact-steps/s, {res['ns_per_particle_step']:.0f} ns per "
              f"particle-step, {res['bytes_per_particle_total']:.0f} bytes per particle", flush=True)
    out = {"provenance": started, "law": args.law, "rows": rows, "sort_particles": args.sort,
           "timing": "CPU seconds of this process, single thread"}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")
    return 0


def order_study(args, started):
    """Cost of a random particle order and what renumbering in cell order (sort_particles) buys."""
    variants = [("crystal order", False, False), ("crystal order, sorted", False, True),
                ("shuffled", True, False), ("shuffled, sorted", True, True)]
    out = {"provenance": started, "law": args.law, "timing": "CPU seconds of this process, single thread; best of rounds", "sizes": {}}
    for m in (10, 25):
        n = 4 * m ** 3
        steps = int(min(400, max(40, 4e7 / n)))
        best = {}
        for rnd in range(args.rounds):
            for name, shuffle, sort in variants:
                res = measure(m, args.law, steps, shuffle=shuffle, sort=sort)
                rate = res["particle_steps_per_s"]
                best[name] = max(best.get(name, 0.0), rate)
                print(f"round {rnd} N = {n}: {name:22s} {rate / 1e6:6.2f} M particle-steps/s", flush=True)
        out["sizes"][str(n)] = best
        print(f"N = {n}: " + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in best.items()), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

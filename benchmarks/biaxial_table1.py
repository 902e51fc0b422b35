"""Kuhn (2011) Table 1 on this machine: the biaxial test with every tangential law, one packing.

    python benchmarks/biaxial_table1.py [--quick] [--json FILE] [--packing FILE] [--compact-every N]
                                        [--laws L1,L2] [--xi X1,X2] [--repeats N] [--interleave STEPS]

Full size: Kuhn's test, 4096 spheres compressed to 4 % axial strain in 40,000 steps (plane strain,
constant lateral stress). --quick: 1000 spheres, 8000 steps (a few minutes for all runs).
The packing is prepared once (isotropic compression, `scenarios.biaxial.prepared_packing`; cached
in --packing, default: <tmp>/graindem_bench) and every law starts from it; jaeger also runs with xi = 0.1, 0.2
and 0.4. graindem's xi is dimensionless (segments merge when their slopes differ by less than xi*mu);
Kuhn quotes his parameter as a slope difference, so his 0.1 and 0.2 are xi = 0.2 and 0.4 at mu = 0.5
(each result carries `xi_kuhn` = xi*mu).

Timing: single thread, CPU time of this process (the machine is shared; wall time is reported
too). `total_s` is the whole test (forces, integration, neighbour search; no output except one
measurement every 1 % of the steps). `force_s` is the time inside the contact-force kernel
(contact geometry, frames and the law), measured by a second, split run of the same test in which
Python calls the force kernel and the rest of a step separately (its own total is `split_total_s`).
The split run follows the timed one only to rounding (`split_run_identical` false): every
kernel runs its own compiled copies of its callees (graindem._jit), so the force kernel called from
Python is not the machine code inside run_steps, and the two trajectories part in the last bits.
--compact-every: steps between compactions of the history store (0, the default: the engine's
COMPACT_EVERY; -1: never: the store as the LIFO free list scatters it). The quick size's store (~1.5 MB) fits the L2
cache, so only the full size shows the effect.
--repeats N: every case is run N times, in rounds (each round runs every case once, timed run then
split run, in the order of --laws, reversed every other round); `total_s` and `force_s` are the best
of the N (the run least disturbed by the rest of a shared machine, as vs_lammps.py takes the best
round), every run's times are in `total_s_runs` and `force_s_runs`, and the jaeger/mindlin ratio is
given both best against best and as the median of the N per-round ratios
(`ratio_total_median_of_rounds`, pairing runs made close in time). On a shared machine single pairs
of runs have given ratios from 1.08 to 1.50 within fifteen minutes (jaeger 43.7-56.9 s, mindlin
35.5-40.4 s), the machine's speed drifting between runs.
--interleave STEPS (default 400; 0: none): after the straight runs, `--repeats` interleaved passes of the
cases with xi = 0. A pass runs the laws' full tests side by side in this process, in turns of STEPS steps
(the order reversed every turn), so that a drift of the machine's speed slows every law alike. In
`interleaved`, each law's `total_s_runs` holds every pass's sum of turns and `total_s` their median;
`ratio_total_jaeger_over_mindlin` there is the median of the passes' ratios. Each turn is the same
Simulation.run call as in the straight run, so the trajectory is the same bit for bit
(`same_trajectory_as_straight_run`). Interleaving removes the drift between runs, not the machine's
state during a pass, which moves the ratio itself (jaeger streams more memory and loses more when the
machine is slow): passes give 1.28-1.34 where straight rounds of the same hours scatter from 1.08 to
1.50 (measured figures: docs/benchmarks.md). The interleaved ratio is the one to quote.
--xi: the extra jaeger runs with xi > 0 (default 0.1,0.2,0.4; an empty string for none).
Memory: `store_bytes` is the peak of live history points x 36 bytes (Kuhn's measure) over the
measurements; `mean_history_length` the mean over contacts and measurements (the time mean);
`max_mean_history_length` the largest mean over contacts at one measurement, the statistic Kuhn
quotes (260 exact, 171 and 107 with his 0.1 and 0.2 "as great as", at the memory peak), with the
axial strain where it occurs (docs/history-length.md explains why ours are shorter).
"""

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graindem.engine import checkpoint  # noqa: E402
from graindem.boundaries.servo import servo
from graindem.core.cell import CELL_L, CELL_LBUILD
from graindem.core.layout import (CTL_RMAX, CTL_SKIN, ICTL_COMPACT_EVERY, ICTL_NPAIRS, ICTL_STEP, N_PRM,
                                  PAIR_INDEX)
from graindem.engine.history import compact_on_schedule, refresh_live
from graindem.engine.integration import advance_particles
from graindem.engine.pair_pass import ALL_STRESS_COMPONENTS, N_SC, pair_forces
from graindem.scenarios.biaxial import prepared_packing, start_test  # noqa: E402
from provenance import provenance


def _pair_scratch(sim):
    """The pair loop's scratch rows and skip flags (run_steps makes them; here the caller does, again
    after each rebuild)."""
    cap = sim.pi.shape[0]
    live = np.empty(cap, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    return np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX), live


def timed_split_run(sim, steps):
    """Run `steps` steps calling the force kernel separately; returns (force_cpu_s, total_cpu_s)."""
    sim.setup()
    force_t = 0.0
    t_start = time.process_time()
    st = sim.store
    prm = np.full(N_PRM, -1.0)  # scratch record of the force loops
    skin = sim.ctl[CTL_SKIN]
    cutoff = 2.0 * sim.ctl[CTL_RMAX] + skin
    sc, act, live = _pair_scratch(sim)
    for _ in range(steps):
        if st.n_free < int(sim.ictl[ICTL_NPAIRS]) + 1:
            st.ensure_free(int(sim.ictl[ICTL_NPAIRS]) + 1024)
        t0 = time.process_time()
        ok = pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab,
                         sim.cell, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm,
                         st.pts, st.nxt, st.meta, sim.acc, sim.out, sc, act, live, sim.stress_limbs, ALL_STRESS_COMPONENTS)
        force_t += time.process_time() - t0
        if not ok:
            raise RuntimeError("diverged")
        servo(sim.cell, sim.ctl, sim.ictl, sim.acc)
        maxd2 = advance_particles(sim.pos, sim.vel, sim.omega, sim.quat, sim.force, sim.torque, sim.mass,
                                  sim.inertia, sim.cell, sim.ctl, sim.ictl, sim.pos_build, sim.acc, sim.out)
        sim.ictl[ICTL_STEP] += 1
        stretch = float(np.max(np.abs(sim.cell[CELL_L:CELL_L + 3] / sim.cell[CELL_LBUILD:CELL_LBUILD + 3] - 1.0)))
        if 2.0 * np.sqrt(maxd2) + stretch * cutoff > skin:
            sim._rebuild()
            sc, act, live = _pair_scratch(sim)
        compact_on_schedule(sim.ictl, sim.pist, sim.wist, st.pts, st.nxt, st.meta)
    return force_t, time.process_time() - t_start


def warm_up(packing_path, law, xi, steps, compact_every=0):
    """A few steps of the case, through run_steps and through the split loop, on throwaway copies:
    the first call of a kernel in a process loads it from numba's cache (or compiles it), which a
    timed run must not pay (a first full-size run with a cold cache takes ~56 s, the same law's
    other runs 30-32 s)."""
    for split in (False, True):
        sim, _ = checkpoint.load(packing_path)
        start_test(sim, law, xi=xi, steps=steps)
        sim.ictl[ICTL_COMPACT_EVERY] = compact_every
        if split:
            timed_split_run(sim, 2)
        else:
            sim.run(2)
            sim.measure()


def _started(packing_path, law, xi, steps, compact_every):
    sim, _ = checkpoint.load(packing_path)
    test = start_test(sim, law, xi=xi, steps=steps)
    sim.ictl[ICTL_COMPACT_EVERY] = compact_every
    return sim, test


def _recorder(test, rows):
    def measure(s):
        m = s.measure()
        rows.append((m["n_contacts"], m["mean_history_length"], m["store_bytes"], m["max_history_length"],
                     s.step_count - test["start_step"]))
    return measure


def _recording(packing_path, law, xi, steps, compact_every):
    """A started test, its measurement callback and the rows it fills, the first row taken."""
    sim, test = _started(packing_path, law, xi, steps, compact_every)
    rows = []
    measure = _recorder(test, rows)
    sim.run(0)
    measure(sim)
    return sim, test, rows, measure


def _statistics(sim, test, rows, steps, xi):
    rows = np.array(rows, dtype=float)
    return {"mean_contacts": float(rows[:, 0].mean()), "mean_history_length": float(rows[:, 1].mean()),
            "max_mean_history_length": float(rows[:, 1].max()), "max_history_length": int(rows[:, 3].max()),
            "strain_at_max_mean_history": float(rows[int(np.argmax(rows[:, 1])), 4] / steps * test["total_strain"]),
            "xi_kuhn": xi * sim.mu, "store_bytes": int(rows[:, 2].max()),
            "n_particles": sim.n, "steps": steps, "xi": xi}


def run_law(packing_path, law, xi, steps, measure_every, compact_every=0):
    warm_up(packing_path, law, xi, steps, compact_every)
    sim, test, rows, measure = _recording(packing_path, law, xi, steps, compact_every)
    w0 = time.perf_counter()
    c0 = time.process_time()
    sim.run(steps, callback=measure, every=measure_every, phase=test["start_step"])
    total = time.process_time() - c0
    wall = time.perf_counter() - w0
    # the same test again, split, for the force kernel's share
    sim2, _ = _started(packing_path, law, xi, steps, compact_every)
    force, split_total = timed_split_run(sim2, steps)
    same = bool(np.array_equal(sim.pos, sim2.pos))
    r = {"total_s": total, "wall_s": wall, "force_s": force, "split_total_s": split_total,
         "split_run_identical": same, "particle_steps_per_s": sim.n * steps / total}
    r.update(_statistics(sim, test, rows, steps, xi))
    return r, sim.pos.copy()


def run_interleaved(packing_path, cases, steps, measure_every, chunk, compact_every=0):
    """The cases' full tests side by side in this process, advanced in turns of `chunk` steps
    (ABBA: the order of the cases reverses every turn) and timed turn by turn; each case's
    `total_s` is the sum of its turns. Whatever the rest of a shared machine does to the speed of
    this one lasts seconds to minutes (the same jaeger test has taken 43.7 to 56.9 s within
    fifteen minutes, mindlin 35.5 to 40.4 s), so it slows both cases of a turn alike and their
    ratio keeps only what the laws cost, where the ratio of two runs made a minute apart also
    carries the machine's drift in between. Each turn is a call of Simulation.run with the same
    measurement callback: the same run_steps calls as the straight run, so the same trajectory
    bit for bit (returned: the final positions, compared by the caller)."""
    for law, xi in cases:
        warm_up(packing_path, law, xi, steps, compact_every)
    sims = []
    for law, xi in cases:
        sims.append(_recording(packing_path, law, xi, steps, compact_every) + ([],))
    done = 0
    turn = 0
    while done < steps:
        n = min(chunk, steps - done)
        for sim, test, rows, measure, times in (sims if turn % 2 == 0 else sims[::-1]):
            c0 = time.process_time()
            sim.run(n, callback=measure, every=measure_every, phase=test["start_step"])
            times.append(time.process_time() - c0)
        done += n
        turn += 1
    out = {}
    for (law, xi), (sim, test, rows, measure, times) in zip(cases, sims):
        r = {"total_s": float(sum(times)), "turn_s": times}
        r.update(_statistics(sim, test, rows, steps, xi))
        out[(law, xi)] = (r, sim.pos.copy())
    return out


def best_of(runs):
    """One case's repeated runs as one result: the physics of the first run (every run follows the
    same trajectory bit for bit), the best total and force times, and every run's times."""
    r = dict(runs[0])
    for key in ("total_s", "force_s", "wall_s", "split_total_s"):
        r[key + "_runs"] = [x[key] for x in runs]
        r[key] = min(r[key + "_runs"])
    r["particle_steps_per_s"] = r["n_particles"] * r["steps"] / r["total_s"]
    r["split_run_identical"] = all(x["split_run_identical"] for x in runs)
    r["same_trajectory_every_run"] = all(x["mean_history_length"] == runs[0]["mean_history_length"]
                                         and x["mean_contacts"] == runs[0]["mean_contacts"] for x in runs)
    return r


def interleaved_passes(cache, cases, steps, measure_every, chunk, compact_every, passes, final_pos):
    """`passes` interleaved runs of the cases (run_interleaved), summarised: every pass's totals,
    the jaeger/mindlin ratio of each pass and their median, and the spread of the ratio of the
    single turns (how much the two laws' costs move together within a pass)."""
    res = {"chunk_steps": chunk, "passes": passes, "laws": {}}
    per_pass = []
    for k in range(passes):
        out = run_interleaved(cache, cases, steps, measure_every, chunk, compact_every)
        per_pass.append(out)
        print(f"interleaved pass {k + 1}/{passes} ({chunk} steps a turn): "
              + ", ".join(f"{law} {out[(law, xi)][0]['total_s']:.1f} s" for law, xi in cases), flush=True)
    for law, xi in cases:
        rs = [out[(law, xi)][0] for out in per_pass]
        res["laws"][law] = {
            "total_s_runs": [r["total_s"] for r in rs],
            "total_s": float(np.median([r["total_s"] for r in rs])),
            "turn_s": [r["turn_s"] for r in rs],
            "same_trajectory_as_straight_run": all(
                np.array_equal(out[(law, xi)][1], final_pos[(law, xi)]) for out in per_pass),
        }
    if "jaeger" in res["laws"] and "mindlin" in res["laws"]:
        J, M = res["laws"]["jaeger"], res["laws"]["mindlin"]
        ratios = [j / m for j, m in zip(J["total_s_runs"], M["total_s_runs"])]
        turns = np.array([j / m for jt, mt in zip(J["turn_s"], M["turn_s"]) for j, m in zip(jt, mt)])
        res["ratio_total_jaeger_over_mindlin_passes"] = ratios
        res["ratio_total_jaeger_over_mindlin"] = float(np.median(ratios))
        res["turn_ratio_quartiles"] = [float(q) for q in np.percentile(turns, [25, 50, 75])]
        print(f"jaeger/mindlin interleaved: total {res['ratio_total_jaeger_over_mindlin']:.3f} "
              f"(median of {passes} passes: {', '.join(f'{x:.3f}' for x in ratios)}); single turns, "
              f"quartiles {', '.join(f'{q:.2f}' for q in res['turn_ratio_quartiles'])}", flush=True)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1000 spheres, 8000 steps")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--packing", default=None, help="cache of the prepared packing (default: benchmarks/.cache)")
    ap.add_argument("--laws", default="linear,mindlin,md_incremental,jaeger")
    ap.add_argument("--compact-every", type=int, default=0,
                    help="steps between compactions of the history store (0: the engine's default, -1: never)")
    ap.add_argument("--xi", default="0.1,0.2,0.4", help="extra jaeger runs with these xi ('' for none)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of every case, best time reported (>= 1)")
    ap.add_argument("--interleave", type=int, default=400,
                    help="steps per turn of the interleaved runs of the laws (0: none; else >= 1)")
    args = ap.parse_args(argv)
    started = provenance(__file__, argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.interleave < 0:
        ap.error(f"--interleave must be >= 0 (0: no interleaved runs), got {args.interleave}")
    try:
        extra_xi = [float(x) for x in args.xi.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--xi must be a comma-separated list of numbers >= 0, got {args.xi!r}")
    if not all(math.isfinite(x) and x >= 0.0 for x in extra_xi):
        ap.error(f"--xi values must be finite numbers >= 0, got {args.xi!r}")
    n, steps = (1000, 8000) if args.quick else (4096, 40000)
    cache = (Path(args.packing) if args.packing
             else Path(tempfile.gettempdir()) / "graindem_bench" / f"biaxial_packing_{n}.h5")
    t0 = time.perf_counter()
    prepared_packing(n, seed=1, cache=cache, announce=lambda m: print(m, flush=True))
    print(f"packing ready in {time.perf_counter() - t0:.1f} s", flush=True)
    results = {"provenance": started, "laws": {}, "jaeger_xi": {}, "n_particles": n, "steps": steps, "quick": args.quick,
               "compact_every": args.compact_every, "repeats": args.repeats,
               "timing": "CPU seconds of this process (single thread); wall_s for reference"}
    cases = [(law, 0.0) for law in args.laws.split(",")]
    if "jaeger" in args.laws:
        cases += [("jaeger", x) for x in extra_xi]
    runs = {case: [] for case in cases}
    final_pos = {}
    for rnd in range(args.repeats):
        # every other round in reverse order, so that no law always runs first (the first run of a
        # process or after a pause of the machine is the slower one at times)
        for law, xi in (cases if rnd % 2 == 0 else cases[::-1]):
            r, pos = run_law(cache, law, xi, steps, max(steps // 100, 1), args.compact_every)
            runs[(law, xi)].append(r)
            final_pos.setdefault((law, xi), pos)
            print(f"{'' if args.repeats == 1 else f'round {rnd + 1}/{args.repeats} '}"
                  f"{law:15s} xi={xi:.1f}: total {r['total_s']:.1f} s, force {r['force_s']:.1f} s, "
                  f"{r['mean_contacts']:.0f} contacts, mean history {r['mean_history_length']:.1f} "
                  f"(max of means {r['max_mean_history_length']:.1f} at {100 * r['strain_at_max_mean_history']:.2f} %), "
                  f"store {r['store_bytes'] / 1e6:.2f} MB, {r['particle_steps_per_s'] / 1e6:.2f} M particle-steps/s",
                  flush=True)
    for (law, xi), rs in runs.items():
        r = best_of(rs)
        if xi == 0.0:
            results["laws"][law] = r
        if law == "jaeger":
            results["jaeger_xi"][f"{xi:.1f}"] = r
    L = results["laws"]
    if "jaeger" in L and "mindlin" in L:
        results["ratio_total_jaeger_over_mindlin"] = L["jaeger"]["total_s"] / L["mindlin"]["total_s"]
        results["ratio_force_jaeger_over_mindlin"] = L["jaeger"]["force_s"] / L["mindlin"]["force_s"]
        rounds = [j / m for j, m in zip(L["jaeger"]["total_s_runs"], L["mindlin"]["total_s_runs"])]
        force_rounds = [j / m for j, m in zip(L["jaeger"]["force_s_runs"], L["mindlin"]["force_s_runs"])]
        results["ratio_total_rounds"] = rounds
        results["ratio_total_median_of_rounds"] = float(np.median(rounds))
        results["ratio_force_median_of_rounds"] = float(np.median(force_rounds))
        print(f"jaeger/mindlin: total {results['ratio_total_jaeger_over_mindlin']:.2f} best against best, "
              f"{results['ratio_total_median_of_rounds']:.2f} median of {len(rounds)} rounds (Kuhn 1.49); "
              f"force {results['ratio_force_jaeger_over_mindlin']:.2f}")
    if args.interleave > 0:
        results["interleaved"] = interleaved_passes(cache, [c for c in cases if c[1] == 0.0], steps,
                                                    max(steps // 100, 1), args.interleave, args.compact_every,
                                                    args.repeats, final_pos)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Contact updates per second of each tangential law in the batched kernel `advance_contacts`.

All laws, each with and without the energy accounting of `laws.contact_step` (prm[P_ENERGY] = 1,
the default, counts every contact's tangential work and frictional dissipation; 0 skips it), and
jaeger with xi = 0.1, 0.2, advance their own batch of contacts through the same
DEM-like movements (`graindem.demo_contact.DemLikeMovements`: slow normal load cycles with faster
unloading, per-step changes of a few thousandths of the overlap, mostly elastic, a fifth of the
contacts slipping, wandering directions, a few contacts opening and closing). Untimed: compilation,
then a warm-up that lets the jaeger histories grow to their steady lengths. Then blocks of steps
are timed, the laws interleaved block by block (order rotated every round) so that machine load
affects them alike (a law that exceeds the per-round CPU budget is timed on the first
steps of the block only); updates/s are medians over the rounds of updates per second of
thread CPU time (the wall-clock figure is reported beside it), and the jaeger/mindlin ratio is the
median of the per-round ratios of time per update.

    python benchmarks/contact_kernel.py --json results/bench/contact_kernel.json [--quick]

Also replayed (unless --no-trace): the movements of 300 contacts recorded from the engine's
biaxial test (benchmarks/jaeger_trace.py -> benchmarks/data/jaeger_biaxial_trace.npz; 1000
spheres, steps 1000-1400 at Kuhn's strain rate), tiled over the contacts with time shifts, for
mindlin and jaeger with and without energy accounting, with the trace's kappa and mu (a copy that
reaches the trace's end is reset, untimed, and starts it again). Its mix is
far from the synthetic one: 8 % elastic, 70 % partial slip, 22 % gross sliding, half the steps
unloading (synthetic: 60 / 38 / 2 %, a fifth unloading), and histories are short (~5 points
against ~88). Reported under "trace" in the JSON.

Bytes per contact = the contact's state rows (fs + ist) + mean history points x 36 B.
JSON: "laws" and "ratio_jaeger_mindlin" are the default configuration (energy counted);
"laws_without_energy" and "ratio_jaeger_mindlin_without_energy" the same laws with P_ENERGY = 0.
"""

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from graindem._jit import njit
from graindem.contact import ContactBatch, jaeger, linear, md_incremental, mindlin
from graindem.contact import state as S
from graindem.contact.laws import JAEGER, MD_INCREMENTAL, MINDLIN, TANGENTIAL_LAWS, advance_contacts, separate
from graindem.contact.store import BYTES_PER_POINT
from graindem.demo_contact import MATERIAL, DemLikeMovements

ROW_BYTES = S.N_FSTATE * 8 + S.N_ISTATE * 8
TRACE = Path(__file__).resolve().parent / "data" / "jaeger_biaxial_trace.npz"
TRACE_LAWS = ("mindlin", "jaeger")


def _trace_module():
    """benchmarks/jaeger_trace.py, loaded by path (this file is also loaded by path from tests)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("jaeger_trace_bench", Path(__file__).resolve().parent / "jaeger_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
XI_VARIANTS = (0.1, 0.2)

FULL = dict(contacts=20_000, warmup_steps=300, block_steps=20, rounds=7, budget_s=1.0)
QUICK = dict(contacts=2_000, warmup_steps=250, block_steps=20, rounds=3, budget_s=0.2)


# Not cached: a numba cache entry of a function in a script records the module it was loaded as
# ('__main__' when run, another name when a test imports the file) and cannot be reused across them.
@njit(cache=False)
def bare_law_kernels(law, prm, fs, ist, delta, ds, pts, nxt, meta, start):
    """The law kernels alone, one loop per law: what `advance_contacts` costs without its per-contact
    dispatch and bookkeeping (energy accounting). Only for --breakdown; same contract as advance_contacts."""
    n = delta.shape[0]
    for c in range(start, n):
        if meta[0] < 0:
            return c
        d = delta[c]
        if not (d > 0.0) or not math.isfinite(d):
            separate(fs, ist, c, pts, nxt, meta)
        elif law == JAEGER:
            jaeger.step(prm, fs, ist, c, d, ds[c, 0], ds[c, 1], pts, nxt, meta)
        elif law == MINDLIN:
            mindlin.step(prm, fs, ist, c, d, ds[c, 0], ds[c, 1], pts, nxt, meta)
        elif law == MD_INCREMENTAL:
            md_incremental.step(prm, fs, ist, c, d, ds[c, 0], ds[c, 1], pts, nxt, meta)
        else:
            linear.step(prm, fs, ist, c, d, ds[c, 0], ds[c, 1], pts, nxt, meta)
    return n


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds, for tests)")
    p.add_argument("--contacts", type=int, help="number of contacts per law (overrides the preset)")
    p.add_argument("--rounds", type=int, help="timed rounds per law (overrides the preset)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-trace", action="store_true",
                   help="skip the replay of the recorded biaxial movements (benchmarks/data/jaeger_biaxial_trace.npz)")
    p.add_argument("--breakdown", action="store_true",
                   help="also time the bare law kernels (no dispatcher bookkeeping) on copies of the same states "
                        "(compiles them first, not cached: about 20 s more)")
    args = p.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.contacts is not None:
        if args.contacts < 1:
            p.error(f"--contacts must be >= 1, got {args.contacts}")
        cfg["contacts"] = args.contacts
    if args.rounds is not None:
        if args.rounds < 1:
            p.error(f"--rounds must be >= 1, got {args.rounds}")
        cfg["rounds"] = args.rounds
    return args, cfg


def advance_timed(batch, delta, ds, kernel=advance_contacts):
    """One step of a batch through the kernel; returns (CPU seconds of this thread, wall seconds),
    store growth included. CPU time is the primary measure: on a shared machine the wall clock also
    counts the time the process waits for a core."""
    n = batch.n
    c0 = time.thread_time()
    w0 = time.perf_counter()
    start = 0
    while start < n:
        batch.store.ensure_free(n - start)
        st = batch.store
        start = kernel(batch.law, batch.prm, batch.fs, batch.ist, delta, ds, st.pts, st.nxt, st.meta, start)
    return time.thread_time() - c0, time.perf_counter() - w0


def run(cfg, seed=1, log=print, breakdown=False, trace=True):
    n = cfg["contacts"]
    variants = {law: ContactBatch(law, n, **MATERIAL) for law in TANGENTIAL_LAWS}
    for law in TANGENTIAL_LAWS:
        variants[f"{law}_noenergy"] = ContactBatch(law, n, **MATERIAL, energy=False)
    for xi in XI_VARIANTS:
        variants[f"jaeger_xi{xi:g}"] = ContactBatch("jaeger", n, **MATERIAL, xi=xi)
    prm = variants["jaeger"].prm
    moves = DemLikeMovements(n, prm[S.P_RSTAR], prm[S.P_MU], prm[S.P_KAPPA], seed=seed)
    # The replay of movements recorded from the engine's biaxial test (benchmarks/jaeger_trace.py),
    # with the trace's kappa and mu (the step kinds depend on them).
    trace_moves = None
    if trace and TRACE.exists():
        trace_mod = _trace_module()
        trace_moves = trace_mod.TraceMovements(TRACE, n)
        material = trace_moves.material(**MATERIAL)
        for law in TRACE_LAWS:
            variants[f"trace:{law}"] = ContactBatch(law, n, **material)
            variants[f"trace:{law}_noenergy"] = ContactBatch(law, n, **material, energy=False)

    def next_steps():
        if trace_moves is None:
            return moves.next_step(), None
        delta, ds = trace_moves.next_step()
        return moves.next_step(), (delta, ds, trace_moves.restart.copy())

    def movement(name, pair, batch):
        """The movement of this step for the variant; a trace variant first resets (untimed) the
        contacts that start the trace again."""
        if not name.startswith("trace:"):
            return pair[0]
        delta, ds, restart = pair[1]
        trace_mod.reset_contacts(batch, restart)
        return delta, ds

    t0 = time.perf_counter()
    # Compile advance_contacts (or load it from the cache) on a throw-away batch, outside any timing.
    probe = ContactBatch("jaeger", 2, prm=prm)
    advance_timed(probe, np.full(2, 1e-6), np.full((2, 2), 1e-9))
    if breakdown:
        advance_timed(probe, np.full(2, 1e-6), np.full((2, 2), 1e-9), kernel=bare_law_kernels)
    t1 = time.perf_counter()
    # The warm-up grows the jaeger histories to their steady lengths (see DemLikeMovements).
    for _ in range(cfg["warmup_steps"]):
        pair = next_steps()
        for name, batch in variants.items():
            advance_timed(batch, *movement(name, pair, batch))
    log(f"compilation/cache load {t1 - t0:.1f} s; warm-up {cfg['warmup_steps']} steps x {n} contacts x "
        f"{len(variants)} variants {time.perf_counter() - t1:.1f} s")

    if breakdown:
        # Twins of the batches in the same state, advanced by the bare law kernels from here on.
        for name in [k for k in variants if not k.startswith("trace:")]:
            src = variants[name]
            twin = ContactBatch(src.law_name, n, prm=src.prm.copy())
            twin.fs[:] = src.fs
            twin.ist[:] = src.ist
            twin.store = type(src.store).from_arrays(src.store.pts, src.store.nxt, src.store.meta)
            variants[f"bare:{name}"] = twin
    names = list(variants)
    seconds = {name: [] for name in names}
    wall = {name: [] for name in names}
    updates = {name: [] for name in names}
    lengths = {name: [] for name in names}
    kinds = np.zeros(4)
    trace_kinds = np.zeros(4)
    for r in range(cfg["rounds"]):
        block = [next_steps() for _ in range(cfg["block_steps"])]
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            batch = variants[name]
            elapsed = elapsed_wall = 0.0
            timed_steps = 0
            kernel = bare_law_kernels if name.startswith("bare:") else advance_contacts
            for pair in block:
                delta, ds = movement(name, pair, batch)
                if elapsed < cfg["budget_s"]:
                    cpu, w = advance_timed(batch, delta, ds, kernel)
                    elapsed += cpu
                    elapsed_wall += w
                    timed_steps += 1
                else:
                    # Over this round's time budget (a slow law): keep the state on the common
                    # path, untimed, so that later rounds see the same movements.
                    advance_timed(batch, delta, ds, kernel)
                lengths[name].append(batch.ist[:, S.I_LEN].mean())
                if name == "jaeger":
                    kinds += np.bincount(batch.fs[:, S.F_KIND].astype(np.int64), minlength=4)[:4]
                elif name == "trace:jaeger":
                    trace_kinds += np.bincount(batch.fs[:, S.F_KIND].astype(np.int64), minlength=4)[:4]
            seconds[name].append(elapsed)
            wall[name].append(elapsed_wall)
            updates[name].append(n * timed_steps)

    def law_record(name):
        ups = [u / s for u, s in zip(updates[name], seconds[name])]
        mean_len = float(np.mean(lengths[name]))
        return {
            "updates_per_s": statistics.median(ups),
            "bytes_per_contact": ROW_BYTES + mean_len * BYTES_PER_POINT,
            "ns_per_update": 1e9 / statistics.median(ups),
            "mean_history_length": mean_len,
            "updates_per_s_rounds": ups,
            "updates_per_s_wall_clock": statistics.median(u / s for u, s in zip(updates[name], wall[name])),
            "timed_updates": int(sum(updates[name])),
        }

    def ratio_rounds(a, b):
        return [(sa / ua) / (sb / ub) for sa, ua, sb, ub in zip(seconds[a], updates[a], seconds[b], updates[b])]

    result = {"laws": {law: law_record(law) for law in TANGENTIAL_LAWS}}
    ratios = ratio_rounds("jaeger", "mindlin")
    result["ratio_jaeger_mindlin"] = statistics.median(ratios)
    result["ratio_jaeger_mindlin_rounds"] = ratios
    result["laws_without_energy"] = {law: law_record(f"{law}_noenergy") for law in TANGENTIAL_LAWS}
    ratios = ratio_rounds("jaeger_noenergy", "mindlin_noenergy")
    result["ratio_jaeger_mindlin_without_energy"] = statistics.median(ratios)
    result["ratio_jaeger_mindlin_without_energy_rounds"] = ratios
    result["jaeger_xi"] = {f"{xi:g}": law_record(f"jaeger_xi{xi:g}") for xi in XI_VARIANTS}
    def kind_shares(k):
        touching = k[1:].sum()
        return {
            "elastic": k[S.KIND_ELASTIC] / touching if touching else 0.0,
            "partial_slip": k[S.KIND_PARTIAL_SLIP] / touching if touching else 0.0,
            "gross_sliding": k[S.KIND_GROSS_SLIDING] / touching if touching else 0.0,
            "separated_share_of_all": k[S.KIND_SEPARATED] / k.sum() if k.sum() else 0.0,
        }

    result["jaeger_step_kinds"] = kind_shares(kinds)
    if trace_moves is not None:
        # The same measures on the replayed biaxial trace (the contract keys above stay those of
        # the synthetic mix).
        result["trace"] = {
            "file": str(TRACE.relative_to(Path(__file__).resolve().parents[1])),
            "laws": {law: law_record(f"trace:{law}") for law in TRACE_LAWS},
            "laws_without_energy": {law: law_record(f"trace:{law}_noenergy") for law in TRACE_LAWS},
            "ratio_jaeger_mindlin": statistics.median(ratio_rounds("trace:jaeger", "trace:mindlin")),
            "ratio_jaeger_mindlin_without_energy": statistics.median(
                ratio_rounds("trace:jaeger_noenergy", "trace:mindlin_noenergy")),
            "jaeger_step_kinds": kind_shares(trace_kinds),
        }
    result["jaeger_max_history_length"] = int(variants["jaeger"].ist[:, S.I_LEN].max())
    if breakdown:
        result["bare_law_kernels"] = {name[5:]: law_record(name) for name in names if name.startswith("bare:")}
        result["bare_ratio_jaeger_mindlin"] = statistics.median(
            (sj / uj) / (sm / um) for sj, uj, sm, um in zip(seconds["bare:jaeger"], updates["bare:jaeger"],
                                                            seconds["bare:mindlin"], updates["bare:mindlin"]))
    result["goals"] = {"ratio_jaeger_mindlin_at_most": 2.0, "jaeger_updates_per_s_at_least": 5e6}
    for key, laws, ratio in (("goals_met", "laws", "ratio_jaeger_mindlin"),
                             ("goals_met_without_energy", "laws_without_energy", "ratio_jaeger_mindlin_without_energy")):
        result[key] = {"ratio": result[ratio] <= 2.0, "jaeger_updates_per_s": result[laws]["jaeger"]["updates_per_s"] >= 5e6}
    result["config"] = dict(cfg, seed=seed, row_bytes=ROW_BYTES, bytes_per_point=BYTES_PER_POINT,
                            material=MATERIAL)
    result["machine"] = {"platform": platform.platform(), "python": platform.python_version(),
                         "cpus": os.cpu_count(), "loadavg_1min_at_end": os.getloadavg()[0]}
    return result


def main(argv=None):
    args, cfg = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.perf_counter()
    result = run(cfg, seed=args.seed, breakdown=args.breakdown, trace=not args.no_trace)
    result["wall_time_s"] = time.perf_counter() - t0
    rows = (list(result["laws"].items()) + [(f"{k} -energy", v) for k, v in result["laws_without_energy"].items()]
            + [(f"jaeger xi={k}", v) for k, v in result["jaeger_xi"].items()])
    for name, rec in rows:
        print(f"{name:22s} {rec['updates_per_s'] / 1e6:7.2f} M updates/s  {rec['ns_per_update']:7.1f} ns/update  "
              f"{rec['bytes_per_contact']:8.0f} B/contact  mean history {rec['mean_history_length']:.1f}")
    for name, rec in result.get("bare_law_kernels", {}).items():
        print(f"bare {name:17s} {rec['updates_per_s'] / 1e6:7.2f} M updates/s  {rec['ns_per_update']:7.1f} ns/update  "
              f"(law kernel only, no dispatcher bookkeeping)")
    if "bare_ratio_jaeger_mindlin" in result:
        print(f"bare kernels: jaeger/mindlin time per update {result['bare_ratio_jaeger_mindlin']:.2f}")
    print(f"jaeger/mindlin time per update: {result['ratio_jaeger_mindlin']:.2f} with energy accounting, "
          f"{result['ratio_jaeger_mindlin_without_energy']:.2f} without (goal <= 2); "
          f"jaeger step kinds: " + ", ".join(f"{k} {v:.3f}" for k, v in result["jaeger_step_kinds"].items()))
    if "trace" in result:
        tr = result["trace"]
        for key, label in (("laws", ""), ("laws_without_energy", " -energy")):
            for law, rec in tr[key].items():
                print(f"trace {law + label:16s} {rec['updates_per_s'] / 1e6:7.2f} M updates/s  {rec['ns_per_update']:7.1f} ns/update  "
                      f"mean history {rec['mean_history_length']:.1f}")
        print(f"biaxial trace: jaeger/mindlin time per update {tr['ratio_jaeger_mindlin']:.2f} with energy accounting, "
              f"{tr['ratio_jaeger_mindlin_without_energy']:.2f} without; jaeger step kinds: "
              + ", ".join(f"{k} {v:.3f}" for k, v in tr["jaeger_step_kinds"].items()))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()

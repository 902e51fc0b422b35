"""Memory locality of the jaeger history store: time per update with and without `HistoryStore.compact`.

Batches of jaeger contacts advance through the same DEM-like movements as benchmarks/contact_kernel.py
(`graindem.demo.contact.DemLikeMovements`, seed 1): one whose store is never compacted (its points get
scattered by the LIFO free list, the state of the store in a long run), and others compacted every K
steps (`store.compact(ist)`; K = 300 = the whole timed span: once, at its start; each contact's points contiguous, in contact order, in two regions: every contact's top three points,
then the rest); the compaction time
is included in theirs. mindlin runs beside them for the jaeger/mindlin ratio. Untimed warm-up first
(compilation and histories growing to their steady length), then blocks of steps timed in thread CPU
time, variants interleaved block by block with the order rotated every round; means over rounds
(rounds with a compaction count).
Every variant must end in the bit-identical contact state (compaction moves points, never values):
the run fails otherwise.

    python benchmarks/store_locality.py --json results/bench/store_locality.json [--quick]
"""

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from graindem.contact import ContactBatch
from graindem.contact import state as S
from graindem.contact.laws import advance_contacts
from graindem.demo.contact import MATERIAL, DemLikeMovements
from provenance import provenance

FULL = dict(sizes=(2000, 20000), warmup_steps=300, block_steps=25, rounds=12, intervals=(50, 150, 300))
QUICK = dict(sizes=(2000,), warmup_steps=150, block_steps=10, rounds=3, intervals=(10,))


def advance(batch, delta, ds):
    n = batch.n
    start = 0
    while start < n:
        batch.store.ensure_free(n - start)
        st = batch.store
        start = advance_contacts(batch.law, batch.prm, batch.fs, batch.ist, delta, ds, st.pts, st.nxt, st.meta, start)


def run_size(n, cfg, energy, seed=1):
    variants = {"mindlin": (ContactBatch("mindlin", n, **MATERIAL, energy=energy), 0),
                "jaeger_scattered": (ContactBatch("jaeger", n, **MATERIAL, energy=energy), 0)}
    for k in cfg["intervals"]:
        variants[f"jaeger_compact_every_{k}"] = (ContactBatch("jaeger", n, **MATERIAL, energy=energy), k)
    prm = variants["mindlin"][0].prm
    moves = DemLikeMovements(n, prm[S.P_RSTAR], prm[S.P_MU], prm[S.P_KAPPA], seed=seed)
    for _ in range(cfg["warmup_steps"]):
        delta, ds = moves.next_step()
        for batch, _k in variants.values():
            advance(batch, delta, ds)
    # compile (or load) the compaction kernel outside the timing
    probe = ContactBatch("jaeger", 2, prm=prm)
    advance(probe, np.full(2, 1e-6), np.full((2, 2), 1e-9))
    probe.store.compact(probe.ist)
    names = list(variants)
    seconds = {name: [] for name in names}
    compact_seconds = {name: 0.0 for name in names}
    compactions = {name: 0 for name in names}
    step = 0
    for r in range(cfg["rounds"]):
        block = [moves.next_step() for _ in range(cfg["block_steps"])]
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            batch, every = variants[name]
            t = 0.0
            for j, (delta, ds) in enumerate(block):
                c0 = time.thread_time()
                if every and (step + j) % every == 0:
                    c1 = time.thread_time()
                    batch.store.compact(batch.ist)
                    compact_seconds[name] += time.thread_time() - c1
                    compactions[name] += 1
                advance(batch, delta, ds)
                t += time.thread_time() - c0
            seconds[name].append(t)
        step += cfg["block_steps"]
    ref = variants["jaeger_scattered"][0]
    for name in names[2:]:
        b = variants[name][0]
        if not (np.array_equal(b.fs.view(np.int64), ref.fs.view(np.int64))
                and np.array_equal(b.ist[:, S.I_LEN], ref.ist[:, S.I_LEN])):
            raise AssertionError(f"{name}: compaction changed the contact state")
    per_update = {name: [1e9 * s / (n * cfg["block_steps"]) for s in seconds[name]] for name in names}
    out = {"contacts": n, "energy_accounting": energy,
           "mean_history_length": float(ref.ist[:, S.I_LEN].mean()),
           "live_points": ref.store.n_live}
    for name in names:
        # mean, not median: the rounds with a compaction in them must count
        rec = {"ns_per_update": statistics.fmean(per_update[name]), "ns_per_update_rounds": per_update[name]}
        if name != "mindlin":
            rec["ratio_to_mindlin"] = rec["ns_per_update"] / statistics.fmean(per_update["mindlin"])
            rec["relative_to_scattered"] = rec["ns_per_update"] / statistics.fmean(per_update["jaeger_scattered"])
        if compactions[name]:
            rec["compaction_ns_per_live_point"] = 1e9 * compact_seconds[name] / compactions[name] / max(ref.store.n_live, 1)
        out[name] = rec
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    started = provenance(__file__, argv)
    cfg = dict(QUICK if args.quick else FULL)
    t0 = time.perf_counter()
    results = []
    for n in cfg["sizes"]:
        for energy in (False, True):
            rec = run_size(n, cfg, energy)
            results.append(rec)
            line = ", ".join(f"{k} {v['ns_per_update']:.1f} ns" + (f" (x{v['ratio_to_mindlin']:.2f} mindlin)"
                                                                   if "ratio_to_mindlin" in v else "")
                             for k, v in rec.items() if isinstance(v, dict))
            print(f"n={n} energy={energy} mean history {rec['mean_history_length']:.1f}: {line}", flush=True)
    result = {"provenance": started, "runs": results, "config": cfg, "wall_time_s": time.perf_counter() - t0,
              "machine": {"platform": platform.platform(), "python": platform.python_version()}}
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()

"""Contact updates per second of each tangential law in the batched kernel `advance_contacts`.

Two movement mixes, each for the four laws with and without the energy accounting of
`laws.contact_step` (prm[P_ENERGY] = 1 counts every contact's tangential work and frictional
dissipation; 0 skips it):

* "trace" (the headline): the movements of 300 contacts recorded from the engine's biaxial test
  (benchmarks/jaeger_trace.py -> benchmarks/data/jaeger_biaxial_trace.npz; 1000 spheres, steps
  1000-1400 at Kuhn's strain rate), tiled over the contacts with time shifts, with the trace's
  kappa and mu (a copy that reaches the trace's end is reset, untimed, and starts it again).
  8 % elastic, 70 % partial-slip, 22 % gross-sliding steps, half of them unloading; mean history
  ~5 points.
* "synthetic": `graindem.demo.contact.DemLikeMovements` (slow normal load cycles with faster
  unloading, per-step changes of a few thousandths of the overlap, a fifth of the contacts
  slipping, wandering directions, a few contacts opening and closing): 60 % elastic, 38 % partial
  slip, 2 % gross sliding, a fifth unloading; mean history ~88 points. Also jaeger with xi = 0.1, 0.2.

Why the trace is the headline "realistic mix of histories (DEM-sized steps, some slipping)": it is
what the batched kernel is fed in a real DEM run (the engine's own biaxial test, recorded contact by
contact), whereas the synthetic mix is a model of such movements whose histories are 17x longer than
the engine produces (docs/history-length.md explains why Kuhn's
were longer too). The synthetic figures stay in the JSON, under "synthetic", as a stress case for
long histories. And why energy OFF is the headline: the work/dissipation integrals are an engine
measurement (per-contact energy bookkeeping), not part of the contact law that Kuhn timed against
his modified-Mindlin model; both are reported.

Untimed: compilation, then a warm-up that lets the jaeger histories grow to their steady lengths.
Then blocks of steps are timed, the variants interleaved block by block (order rotated every
round) so that machine load affects them alike (a variant that exceeds the per-round CPU budget is
timed on the first steps of the block only); updates/s are medians over the rounds of updates per
second of thread CPU time (the wall-clock figure is reported beside it), and the jaeger/mindlin
ratio is the median of the per-round ratios of time per update.

The history store is laid out afresh on the engine's own schedule: every
`graindem.core.layout.COMPACT_EVERY` (100) steps, counted from the first step of the warm-up,
each batch with live history points is compacted (`HistoryStore.compact`, the same walk as the
engine's `compact_store`), as `compact_on_schedule` does at the end of every engine step. The
compaction time counts in jaeger's time: the CPU time of the compactions inside the timed span
(rounds x block_steps, 200 steps full, 100 quick: whole periods, so every distance from the last
compaction is timed once per period) is spread evenly over its steps and added to every round
("store_compaction" in the JSON has it per update). Why: without it the replay's store scatters
for the whole run (all 500 steps at 20 000 contacts; ~110 000 live points, 4 MB, beyond the L2), which
the engine never lets happen, and would state jaeger's cost in a DEM run too high. The figure without
compaction stays in the JSON for comparison ("laws_uncompacted",
"ratio_jaeger_mindlin_uncompacted", same rounds). The other laws keep no history points (no
compaction, as in the engine). "harness_ns_per_update" is a null
law (the same loop reading each contact's movement and writing its row, no law) timed in the same
rounds: the ratios are also given with it subtracted from both laws ("..._harness_subtracted"),
for information; the headline is the raw ratio.

    python benchmarks/contact_kernel.py --json results/bench/contact_kernel.json [--quick] [--bounds]

--bounds adds "bounds" to the JSON (about a minute, 2000 contacts, everything in cache): what
limits the jaeger step on the trace. "lockstep": every contact replays the same trace column at the
same time, so every branch is predicted (per column: ns per update of jaeger and mindlin and the
column's step kinds); "straight_arithmetic": the arithmetic of the typical step (descend one point,
cut inside the segment below, append) on the trace's rows without branches or bookkeeping (not a
law: its results are discarded), against the real kernels timed in the same rounds.

Bytes per contact = the contact's state rows (fs + ist) + mean history points x 36 B.
JSON: "laws" and "ratio_jaeger_mindlin" are the headline (mix named by "mix": the trace, energy
off); "laws_with_energy", "ratio_jaeger_mindlin_with_energy" the same with energy accounting;
"synthetic" holds the same keys (and "jaeger_xi") for the synthetic mix. With --no-trace (or
without the trace file) the headline is the synthetic mix and "mix" says so.
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
from graindem.contact import ContactBatch
from graindem.contact import state as S
from graindem.contact.jaeger import F_DLOW, F_NLOW, F_PX, F_PY, F_SX, F_SY
from graindem.contact.laws import TANGENTIAL_LAWS, advance_contacts
from graindem.contact.store import BYTES_PER_POINT, HistoryStore
from graindem.demo.contact import MATERIAL, DemLikeMovements
from graindem.core.layout import COMPACT_EVERY

sys.path.insert(0, str(Path(__file__).resolve().parent))  # provenance.py beside this script, also when loaded by path
from provenance import provenance

ROW_BYTES = S.N_FSTATE * 8 + S.N_ISTATE * 8
TRACE = Path(__file__).resolve().parent / "data" / "jaeger_biaxial_trace.npz"


def _trace_module():
    """benchmarks/jaeger_trace.py, loaded by path (this file is also loaded by path from tests)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("jaeger_trace_bench", Path(__file__).resolve().parent / "jaeger_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


XI_VARIANTS = (0.1, 0.2)

# rounds x block_steps is a multiple of COMPACT_EVERY (see the module docstring)
FULL = dict(contacts=20_000, warmup_steps=300, block_steps=20, rounds=10, budget_s=1.0)
QUICK = dict(contacts=2_000, warmup_steps=250, block_steps=20, rounds=5, budget_s=0.2)


# Not cached: a numba cache entry of a function in a script records the module it was loaded as
# ('__main__' when run, another name when a test imports the file) and cannot be reused across them.
@njit(cache=False, _nrt=False)
def null_law_kernel(law, prm, fs, ist, delta, ds, pts, nxt, meta, start):
    """The benchmark's harness without a law: the same loop over the contacts, reading each one's
    movement and writing its row (same contract as advance_contacts)."""
    n = delta.shape[0]
    for c in range(start, n):
        d = delta[c]
        if not (d > 0.0) or not math.isfinite(d):
            fs[c, S.F_DELTA] = 0.0
        else:
            fs[c, S.F_DELTA] = d
            fs[c, S.F_TX] += ds[c, 0]
            fs[c, S.F_TY] += ds[c, 1]
    return n


@njit(cache=False, _nrt=False)
def straight_arithmetic_kernel(law, prm, fs, ist, delta, ds, pts, nxt, meta, start):
    """A bound, not a law: the arithmetic of jaeger's typical trace step (remove the top point,
    cut inside the segment below by the root z, append a slip segment), branch-free, on each
    contact's row and its two points below. The store's links are never changed (reads the same
    points every call; writes only the top point's four numbers and force slots of the row)."""
    n = delta.shape[0]
    kappa = prm[S.P_KAPPA]
    mu = prm[S.P_MU]
    cn = prm[S.P_CN]
    for c in range(start, n):
        d = delta[c]
        head = ist[c, S.I_HEAD]
        if not (d > 0.0) or head < 0:
            continue
        dk = fs[c, S.F_DELTA]
        nk = fs[c, S.F_N]
        sx = fs[c, F_SX]
        sy = fs[c, F_SY]
        px = fs[c, F_PX]
        py = fs[c, F_PY]
        dl = fs[c, F_DLOW]
        nl = fs[c, F_NLOW]
        n_new = cn * d * math.sqrt(d)
        tgx = sx + ds[c, 0]
        tgy = sy + ds[c, 1]
        ux = fs[c, S.F_TX] - px * nk
        uy = fs[c, S.F_TY] - py * nk
        below = nxt[head] >> 1
        sx -= kappa * px * (dk - dl)
        sy -= kappa * py * (dk - dl)
        bx = pts[below, 2]
        by = pts[below, 3]
        ux += (px - bx) * nl
        uy += (py - by) * nl
        dk = dl
        below2 = nxt[below] >> 1
        dl = pts[below2, 0]
        d_j = d - dk
        gx = (tgx - sx) - kappa * bx * d_j
        gy = (tgy - sy) - kappa * by * d_j
        g2 = gx * gx + gy * gy
        a = max(mu * mu - (bx * bx + by * by), 0.0)
        gd = gx * bx + gy * by
        q = math.sqrt(gd * gd + a * g2)
        neg = gd < 0.0
        num = g2 if neg else gd + q
        den = q - gd if neg else a
        z = num / (kappa * den)
        inv_w = den / num
        d_cut = dk - (z - d_j)
        n_cut = cn * d_cut * math.sqrt(d_cut)
        qx = bx + gx * inv_w
        qy = by + gy * inv_w
        pts[head, 0] = d
        pts[head, 1] = n_new
        pts[head, 2] = qx
        pts[head, 3] = qy
        fs[c, S.F_TX] = (ux + qx * n_new) + (bx - qx) * n_cut
        fs[c, S.F_TY] = (uy + qy * n_new) + (by - qy) * n_cut
        fs[c, S.F_N] = n_new
    return n


def bounds(n=2000, warmup_steps=250, block_steps=20, rounds=15, columns=(0, 1, 2, 3, 4, 5), log=print):
    """What limits the jaeger step on the recorded trace (see the module docstring, --bounds)."""
    trace_mod = _trace_module()
    moves = trace_mod.TraceMovements(TRACE, n)
    material = moves.material(**MATERIAL)
    variants = {"jaeger": (ContactBatch("jaeger", n, **material, energy=False), advance_contacts),
                "mindlin": (ContactBatch("mindlin", n, **material, energy=False), advance_contacts),
                "straight_arithmetic": (ContactBatch("jaeger", n, **material, energy=False), straight_arithmetic_kernel)}
    probe = ContactBatch("jaeger", 2, **material, energy=False)
    advance_timed(probe, np.full(2, 1e-6), np.full((2, 2), 1e-9), straight_arithmetic_kernel)

    def run_block(steps, timed):
        real, straight = variants["jaeger"][0], variants["straight_arithmetic"][0]
        for delta, ds, restart in steps:
            for name in ("jaeger", "mindlin"):
                if restart.any():
                    trace_mod.reset_contacts(variants[name][0], restart)
            # the bound runs on the real state before the step (copied, untimed): same numbers
            straight.fs[:] = real.fs
            straight.ist[:] = real.ist
            straight.store = HistoryStore.from_arrays(real.store.pts, real.store.nxt, real.store.meta)
            for name, (batch, kernel) in variants.items():
                cpu, _ = advance_timed(batch, delta, ds, kernel)
                timed[name] += cpu

    def block():
        out = []
        for _ in range(block_steps):
            delta, ds = moves.next_step()
            out.append((delta, ds, moves.restart.copy()))
        return out

    sink = {name: 0.0 for name in variants}
    for _ in range(warmup_steps // block_steps):
        run_block(block(), sink)
    per_round = {name: [] for name in variants}
    for r in range(rounds):
        timed = {name: 0.0 for name in variants}
        run_block(block(), timed)
        for name in variants:
            per_round[name].append(1e9 * timed[name] / (n * block_steps))
    mixed = {name: statistics.median(v) for name, v in per_round.items()}
    log("bounds, trace at %d contacts (ns/update): " % n + ", ".join(f"{k} {v:.1f}" for k, v in mixed.items()))

    lockstep = {}
    data = np.load(TRACE)
    tr_delta = data["delta"].astype(np.float64)
    tr_ds = data["ds"].astype(np.float64)
    for col in columns:
        batches = {law: ContactBatch(law, n, **material, energy=False) for law in ("jaeger", "mindlin")}
        cpu = {law: 0.0 for law in batches}
        kinds = np.zeros(4)
        for t in range(tr_delta.shape[0]):
            delta = np.full(n, tr_delta[t, col])
            ds = np.tile(tr_ds[t, col], (n, 1))
            for law, batch in batches.items():
                cpu[law] += advance_timed(batch, delta, ds)[0]
            kinds[int(batches["jaeger"].fs[0, S.F_KIND])] += 1
        touching = kinds[1:].sum()
        lockstep[str(col)] = {law + "_ns_per_update": 1e9 * cpu[law] / (n * tr_delta.shape[0]) for law in batches}
        lockstep[str(col)].update({"elastic": kinds[S.KIND_ELASTIC] / touching,
                                   "partial_slip": kinds[S.KIND_PARTIAL_SLIP] / touching,
                                   "gross_sliding": kinds[S.KIND_GROSS_SLIDING] / touching})
        rec = lockstep[str(col)]
        log(f"bounds, lockstep column {col}: jaeger {rec['jaeger_ns_per_update']:.1f} ns, mindlin "
            f"{rec['mindlin_ns_per_update']:.1f} ns; kinds elastic {rec['elastic']:.2f}, partial slip "
            f"{rec['partial_slip']:.2f}, gross sliding {rec['gross_sliding']:.2f}")
    return {"contacts": n, "mixed_trace_ns_per_update": mixed, "mixed_trace_rounds": per_round,
            "lockstep": lockstep}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds, for tests)")
    p.add_argument("--contacts", type=int, help="number of contacts per law (overrides the preset)")
    p.add_argument("--rounds", type=int, help="timed rounds per law (overrides the preset)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-trace", action="store_true",
                   help="skip the replay of the recorded biaxial movements (benchmarks/data/jaeger_biaxial_trace.npz)")
    p.add_argument("--bounds", action="store_true",
                   help="also measure what bounds the jaeger step (lockstep replay, straight arithmetic; ~1 min)")
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


def compact_timed(batch, step):
    """The engine's schedule (kernels.compact_on_schedule): lay the store out afresh after every
    COMPACT_EVERY-th step if it holds live points. Returns (CPU seconds, wall seconds)."""
    if step % COMPACT_EVERY != 0 or batch.store.n_live == 0:
        return 0.0, 0.0
    c0 = time.thread_time()
    w0 = time.perf_counter()
    batch.store.compact(batch.ist)
    return time.thread_time() - c0, time.perf_counter() - w0


def run(cfg, seed=1, log=print, trace=True):
    n = cfg["contacts"]
    base_prm = ContactBatch("jaeger", 1, **MATERIAL).prm
    synthetic = DemLikeMovements(n, base_prm[S.P_RSTAR], base_prm[S.P_MU], base_prm[S.P_KAPPA], seed=seed)
    mixes = {"synthetic": MATERIAL}
    trace_moves = None
    if trace and TRACE.exists():
        trace_mod = _trace_module()
        trace_moves = trace_mod.TraceMovements(TRACE, n)
        # the trace's kappa and mu: the step kinds depend on them
        mixes = {"trace": trace_moves.material(**MATERIAL), "synthetic": MATERIAL}
    headline = next(iter(mixes))
    # variant name -> (mix, batch, kernel)
    variants = {}
    for mix, material in mixes.items():
        for law in TANGENTIAL_LAWS:
            variants[f"{mix}:{law}"] = (mix, ContactBatch(law, n, **material, energy=False), advance_contacts)
            variants[f"{mix}:{law}+energy"] = (mix, ContactBatch(law, n, **material, energy=True), advance_contacts)
        variants[f"{mix}:harness"] = (mix, ContactBatch("mindlin", n, **material, energy=False), null_law_kernel)
    # the replay with the store never compacted, for comparison
    variants[f"{headline}:jaeger_uncompacted"] = (headline, ContactBatch("jaeger", n, **mixes[headline], energy=False),
                                                  advance_contacts)
    compacted = {name for name in variants if not name.endswith(("_uncompacted", ":harness"))}
    for xi in XI_VARIANTS:
        variants[f"synthetic:jaeger_xi{xi:g}"] = ("synthetic", ContactBatch("jaeger", n, **MATERIAL, xi=xi, energy=False),
                                                  advance_contacts)

    def next_steps():
        steps = {"synthetic": synthetic.next_step() + (None,)}
        if trace_moves is not None:
            delta, ds = trace_moves.next_step()
            steps["trace"] = (delta, ds, trace_moves.restart.copy())
        return steps

    def movement(mix, steps, batch):
        """The movement of this step for a batch of the mix; a trace batch first resets (untimed)
        the contacts that start the trace again."""
        delta, ds, restart = steps[mix]
        if restart is not None:
            trace_mod.reset_contacts(batch, restart)
        return delta, ds

    t0 = time.perf_counter()
    # Compile the kernels (or load them from the cache) on a throw-away batch, outside any timing.
    probe = ContactBatch("jaeger", 2, prm=base_prm)
    for kernel in (advance_contacts, null_law_kernel):
        advance_timed(probe, np.full(2, 1e-6), np.full((2, 2), 1e-9), kernel)
    t1 = time.perf_counter()
    # The warm-up grows the jaeger histories to their steady lengths. `step` counts the steps as the
    # engine's ICTL_STEP does (the compaction schedule).
    step = 0
    for _ in range(cfg["warmup_steps"]):
        steps = next_steps()
        step += 1
        for name, (mix, batch, kernel) in variants.items():
            advance_timed(batch, *movement(mix, steps, batch), kernel)
            if name in compacted:
                compact_timed(batch, step)
    log(f"compilation/cache load {t1 - t0:.1f} s; warm-up {cfg['warmup_steps']} steps x {n} contacts x "
        f"{len(variants)} variants {time.perf_counter() - t1:.1f} s")

    names = list(variants)
    seconds = {name: [] for name in names}
    wall = {name: [] for name in names}
    updates = {name: [] for name in names}
    lengths = {name: [] for name in names}
    compaction = {name: [0.0, 0.0, 0] for name in names}   # CPU s, wall s, count in the timed span
    kinds = {mix: np.zeros(4) for mix in mixes}
    for r in range(cfg["rounds"]):
        block = [next_steps() for _ in range(cfg["block_steps"])]
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            mix, batch, kernel = variants[name]
            elapsed = elapsed_wall = 0.0
            timed_steps = 0
            for j, steps in enumerate(block):
                delta, ds = movement(mix, steps, batch)
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
                if name == f"{mix}:jaeger":
                    kinds[mix] += np.bincount(batch.fs[:, S.F_KIND].astype(np.int64), minlength=4)[:4]
                if name in compacted:
                    cpu, w = compact_timed(batch, step + j + 1)
                    if cpu or w:
                        compaction[name][0] += cpu
                        compaction[name][1] += w
                        compaction[name][2] += 1
            seconds[name].append(elapsed)
            wall[name].append(elapsed_wall)
            updates[name].append(n * timed_steps)
        step += len(block)
    # The compactions' time spread evenly over the timed steps (see the module docstring).
    span = cfg["rounds"] * cfg["block_steps"]
    for name in names:
        cpu, w, _count = compaction[name]
        for r in range(cfg["rounds"]):
            steps_r = updates[name][r] / n
            seconds[name][r] += cpu * steps_r / span
            wall[name][r] += w * steps_r / span

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

    def per_update(name):
        return [s / u for s, u in zip(seconds[name], updates[name])]

    def ratio_rounds(a, b, minus=None):
        """Per-round ratios of time per update of variants a and b, optionally both less variant `minus`."""
        ta, tb = per_update(a), per_update(b)
        if minus is not None:
            th = per_update(minus)
            return [(x - h) / (y - h) for x, y, h in zip(ta, tb, th)]
        return [x / y for x, y in zip(ta, tb)]

    def kind_shares(k):
        touching = k[1:].sum()
        return {
            "elastic": k[S.KIND_ELASTIC] / touching if touching else 0.0,
            "partial_slip": k[S.KIND_PARTIAL_SLIP] / touching if touching else 0.0,
            "gross_sliding": k[S.KIND_GROSS_SLIDING] / touching if touching else 0.0,
            "separated_share_of_all": k[S.KIND_SEPARATED] / k.sum() if k.sum() else 0.0,
        }

    def mix_result(mix):
        out = {"laws": {law: law_record(f"{mix}:{law}") for law in TANGENTIAL_LAWS},
               "laws_with_energy": {law: law_record(f"{mix}:{law}+energy") for law in TANGENTIAL_LAWS}}
        harness = f"{mix}:harness"
        out["harness_ns_per_update"] = 1e9 * statistics.median(per_update(harness))
        for suffix, key in (("", "ratio_jaeger_mindlin"), ("+energy", "ratio_jaeger_mindlin_with_energy")):
            rounds = ratio_rounds(f"{mix}:jaeger{suffix}", f"{mix}:mindlin{suffix}")
            out[key] = statistics.median(rounds)
            out[key + "_rounds"] = rounds
            out[key + "_harness_subtracted"] = statistics.median(
                ratio_rounds(f"{mix}:jaeger{suffix}", f"{mix}:mindlin{suffix}", minus=harness))
        out["jaeger_step_kinds"] = kind_shares(kinds[mix])
        out["jaeger_max_history_length"] = int(variants[f"{mix}:jaeger"][1].ist[:, S.I_LEN].max())
        return out

    result = {"mix": headline}
    result.update(mix_result(headline))
    # The replay without compaction, same rounds.
    unc = f"{headline}:jaeger_uncompacted"
    result["laws_uncompacted"] = {"jaeger": law_record(unc)}
    rounds_unc = ratio_rounds(unc, f"{headline}:mindlin")
    result["ratio_jaeger_mindlin_uncompacted"] = statistics.median(rounds_unc)
    result["ratio_jaeger_mindlin_uncompacted_rounds"] = rounds_unc
    comp = f"{headline}:jaeger"
    result["store_compaction"] = {
        "every_steps": COMPACT_EVERY, "schedule": "graindem.core.layout.COMPACT_EVERY (compact_on_schedule)",
        "counted_in": "every law with live history points (jaeger), spread over the timed steps",
        "compactions_in_timed_span": compaction[comp][2],
        "jaeger_compaction_ns_per_update": 1e9 * compaction[comp][0] / (cfg["rounds"] * cfg["block_steps"] * n),
        "jaeger_live_points": variants[comp][1].store.n_live,
    }
    # compaction moves points, never values: both replays must end in the same contact state
    a_b, b_b = variants[comp][1], variants[unc][1]
    if not (np.array_equal(a_b.fs.view(np.int64), b_b.fs.view(np.int64))
            and np.array_equal(a_b.ist[:, S.I_LEN], b_b.ist[:, S.I_LEN])):
        raise AssertionError("the compacted and the uncompacted jaeger replays differ: compaction changed results")
    if headline == "trace":
        result["trace_file"] = str(TRACE.relative_to(Path(__file__).resolve().parents[1]))
        result["synthetic"] = mix_result("synthetic")
        synthetic_result = result["synthetic"]
    else:
        synthetic_result = result
    synthetic_result["jaeger_xi"] = {f"{xi:g}": law_record(f"synthetic:jaeger_xi{xi:g}") for xi in XI_VARIANTS}
    result["goals"] = {"ratio_jaeger_mindlin_at_most": 2.0, "jaeger_updates_per_s_at_least": 5e6,
                       "measured_on": f"{headline} mix, energy accounting off (the law itself), history store "
                                      f"compacted every {COMPACT_EVERY} steps as in the engine (time counted)"}
    for key, laws, ratio in (("goals_met", "laws", "ratio_jaeger_mindlin"),
                             ("goals_met_with_energy", "laws_with_energy", "ratio_jaeger_mindlin_with_energy")):
        result[key] = {"ratio": result[ratio] <= 2.0, "jaeger_updates_per_s": result[laws]["jaeger"]["updates_per_s"] >= 5e6}
    result["config"] = dict(cfg, seed=seed, row_bytes=ROW_BYTES, bytes_per_point=BYTES_PER_POINT,
                            material=MATERIAL)
    result["machine"] = {"platform": platform.platform(), "python": platform.python_version(),
                         "cpus": os.cpu_count(), "loadavg_1min_at_end": os.getloadavg()[0]}
    return result


def _print_mix(name, res):
    for key, label in (("laws", ""), ("laws_with_energy", " +energy")):
        for law, rec in res[key].items():
            print(f"{name:9s} {law + label:22s} {rec['updates_per_s'] / 1e6:7.2f} M updates/s  {rec['ns_per_update']:7.1f} "
                  f"ns/update  {rec['bytes_per_contact']:8.0f} B/contact  mean history {rec['mean_history_length']:.1f}")
    for xi, rec in res.get("jaeger_xi", {}).items():
        print(f"{name:9s} {'jaeger xi=' + xi:22s} {rec['updates_per_s'] / 1e6:7.2f} M updates/s  {rec['ns_per_update']:7.1f} "
              f"ns/update  {rec['bytes_per_contact']:8.0f} B/contact  mean history {rec['mean_history_length']:.1f}")
    print(f"{name:9s} jaeger/mindlin time per update: {res['ratio_jaeger_mindlin']:.2f} without energy accounting "
          f"({res['ratio_jaeger_mindlin_harness_subtracted']:.2f} less the harness, "
          f"{res['harness_ns_per_update']:.1f} ns), {res['ratio_jaeger_mindlin_with_energy']:.2f} with "
          f"({res['ratio_jaeger_mindlin_with_energy_harness_subtracted']:.2f}); jaeger step kinds: "
          + ", ".join(f"{k} {v:.3f}" for k, v in res["jaeger_step_kinds"].items()))


def main(argv=None):
    args, cfg = parse_args(sys.argv[1:] if argv is None else argv)
    started = provenance(__file__, argv)
    t0 = time.perf_counter()
    result = {"provenance": started, **run(cfg, seed=args.seed, trace=not args.no_trace)}
    if args.bounds and TRACE.exists():
        result["bounds"] = bounds()
    result["wall_time_s"] = time.perf_counter() - t0
    _print_mix(result["mix"], result)
    if "synthetic" in result:
        _print_mix("synthetic", result["synthetic"])
    comp = result["store_compaction"] if "store_compaction" in result else None
    if comp is not None:
        print(f"store compacted every {comp['every_steps']} steps (the engine's schedule): "
              f"{comp['jaeger_compaction_ns_per_update']:.2f} ns per jaeger update, counted; without compaction "
              f"jaeger {result['laws_uncompacted']['jaeger']['ns_per_update']:.1f} ns/update, jaeger/mindlin "
              f"{result['ratio_jaeger_mindlin_uncompacted']:.2f}")
    print(f"headline ({result['mix']}, energy off, store compacted on the engine's schedule): jaeger/mindlin "
          f"{result['ratio_jaeger_mindlin']:.2f} (goal <= 2), "
          f"jaeger {result['laws']['jaeger']['updates_per_s'] / 1e6:.1f} M updates/s (goal >= 5)")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()

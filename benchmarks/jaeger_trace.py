"""Per-contact movements of a jaeger biaxial test, recorded from the engine, and their replay.

    python benchmarks/jaeger_trace.py [--out FILE.npz] [--particles 1000] [--skip 1000] [--steps 400]
                                      [--contacts 300] [--json FILE]

Records what the batched contact kernel is fed in a real DEM run, to check the synthetic movement
mix of benchmarks/contact_kernel.py (`graindem.demo.contact.DemLikeMovements`). The biaxial test of
`graindem.scenarios.biaxial` (Kuhn's strain rate: 4 % in 40 000 steps) runs with law "jaeger"
through the engine's Python API, one step per `Simulation.run(1)`. After every step each
sphere-sphere contact row is read: its overlap (F_DELTA), the kind of its last step (F_KIND) and its
elastic shift S_k (the jaeger row slots F_SX, F_SY, contact frame). The law sets S_k to the target
S_k + ds on every elastic and partial-slip step (shared/notes/jaeger-algorithm.md section 4), so
the shift increment of the step is recovered exactly as the difference of S_k before and after it;
on gross sliding S_k is reset to kappa mu delta along S_k + ds, so only the direction of S_k + ds
is known: the trace puts it beyond S_k(after) by the slip distance estimated from the step's
frictional dissipation (energy accounting on, dD ~ mu N slip; + 1e-6 relative), and a replay slides
grossly to the same state. (With the bare minimum, 1e-6, the movements sat on the edge of the cone,
which no real slide does, and the energy integrator spent milliseconds on some of them.) Contacts are followed by their pair (i, j) across neighbour rebuilds (rows move).

Output (.npz, float32 to stay small): `delta` (steps, contacts), overlap per step (0: not in
contact) and `ds` (steps, contacts, 2), of `--contacts` pairs drawn at random among those in
contact at the start of the recording, and the recorded kind fractions. `TraceMovements` replays
a trace for any number of contacts (columns tiled, each copy shifted in time, cyclically; at the
wrap a copy jumps from the trace's end to its start, one step in `steps`).
The kinds of a step depend only on the overlaps and shifts and on kappa and mu (not on R* or E),
so a replay with the benchmark's material reproduces them if kappa and mu are those of the trace.
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

from graindem.contact import jaeger, state as S  # noqa: E402
from provenance import provenance

DEFAULT_TRACE = Path(__file__).resolve().parent / "data" / "jaeger_biaxial_trace.npz"


def classify(delta0, delta1, kind):
    """Fractions of the touching steps: elastic / partial slip / gross sliding (the law's own
    F_KIND), and the share of them that unload (overlap decreases)."""
    touch = delta1 > 0.0
    total = int(touch.sum())
    if total == 0:
        return {"steps": 0}
    k = kind[touch].astype(np.int64)
    return {"steps": total,
            "elastic": float(np.mean(k == S.KIND_ELASTIC)),
            "partial_slip": float(np.mean(k == S.KIND_PARTIAL_SLIP)),
            "gross_sliding": float(np.mean(k == S.KIND_GROSS_SLIDING)),
            "unloading": float(np.mean(delta1[touch] < delta0[touch]))}


def record(particles=1000, skip=1000, steps=400, contacts=300, seed=1, log=print):
    """Run the biaxial test with law jaeger and record `steps` steps after `skip` steps."""
    from graindem.scenarios.biaxial import prepared_packing, start_test

    cache = Path(tempfile.gettempdir()) / "graindem_bench" / f"biaxial_packing_{particles}.h5"
    sim = prepared_packing(particles, seed=1, cache=cache, announce=log)
    start_test(sim, "jaeger", steps=40000)
    t0 = time.perf_counter()
    sim.run(skip)
    log(f"{skip} steps of the biaxial test in {time.perf_counter() - t0:.1f} s")
    sim.setup()
    n_part = sim.n

    from graindem.core.layout import ICTL_NPAIRS

    def state():
        m = int(sim.ictl[ICTL_NPAIRS])
        key = sim.pi[:m].astype(np.int64) * n_part + sim.pj[:m]
        fs = sim.pfs[:m]
        return (key, fs[:, S.F_DELTA].copy(), fs[:, jaeger.F_SX].copy(), fs[:, jaeger.F_SY].copy(),
                fs[:, S.F_KIND].copy(), fs[:, S.F_N].copy(), fs[:, S.F_DISS].copy())

    sim.set_energy_accounting(True)     # for the slip distance of gross sliding steps; mechanics unchanged
    key0, d0, sx0, sy0, kind0, _, _ = state()
    rng = np.random.default_rng(seed)
    touching = key0[d0 > 0.0]
    chosen = np.sort(rng.choice(touching, size=min(contacts, touching.size), replace=False))
    nc = chosen.size
    mu = float(sim.prm[S.P_MU])
    # Row 0: one movement from the origin to each contact's current (delta, S_k). With skip = 0 that
    # is exactly the state `set_law` gave the contact (a one-segment history), so a replay from
    # fresh contacts follows the recorded states; with skip > 0 the deeper history is not recorded.
    steps += 1
    delta = np.zeros((steps, nc))
    ds = np.zeros((steps, nc, 2))
    kinds = np.zeros((steps, nc))
    pos = np.argsort(key0)[np.searchsorted(key0, chosen, sorter=np.argsort(key0))]
    delta[0] = d0[pos]
    ds[0, :, 0] = sx0[pos]
    ds[0, :, 1] = sy0[pos]
    kinds[0] = kind0[pos]
    all_d0, all_d1, all_kind = [], [], []
    prev = dict(zip(key0.tolist(), zip(d0, sx0, sy0, *state()[5:])))
    t0 = time.perf_counter()
    for t in range(1, steps):
        sim.run(1)
        key, d1, sx1, sy1, kind, n1, diss1 = state()
        # every contact of the packing, for the kind statistics
        before = np.array([prev.get(k, (0.0,) * 5)[:3] for k in key.tolist()]).reshape(-1, 3)
        active = (d1 > 0.0)
        all_d0.append(before[active, 0])
        all_d1.append(d1[active])
        all_kind.append(kind[active])
        order = np.argsort(key)              # the pair list is in cell order, not key order
        pos = np.minimum(np.searchsorted(key, chosen, sorter=order), key.size - 1)
        found = key[order[pos]] == chosen
        for col in np.flatnonzero(found):
            r = order[pos[col]]
            if d1[r] > 0.0:
                b = prev.get(int(chosen[col]), (0.0,) * 5)
                bsx, bsy = (b[1], b[2]) if b[0] > 0.0 else (0.0, 0.0)
                if kind[r] == S.KIND_GROSS_SLIDING:
                    # S' = S_k + ds lies along the new S_k, beyond the cone by about the slip
                    # distance, which the dissipation of the step gives: dD ~ mu N slip.
                    n_mean = 0.5 * (b[3] + n1[r]) if b[0] > 0.0 else n1[r]
                    slip = (diss1[r] - b[4]) / (mu * n_mean) if (b[0] > 0.0 and n_mean > 0.0) else 0.0
                    s_len = math.hypot(sx1[r], sy1[r])
                    scale = 1.0 + 1e-6 + max(slip, 0.0) / s_len if s_len > 0.0 else 1.0
                    ds[t, col] = (sx1[r] * scale - bsx, sy1[r] * scale - bsy)
                else:
                    ds[t, col] = (sx1[r] - bsx, sy1[r] - bsy)
                delta[t, col] = d1[r]
                kinds[t, col] = kind[r]
        prev = dict(zip(key.tolist(), zip(d1, sx1, sy1, n1, diss1)))
    log(f"recorded {steps} steps in {time.perf_counter() - t0:.1f} s")
    stats = classify(np.concatenate(all_d0), np.concatenate(all_d1), np.concatenate(all_kind))
    prev_delta = np.vstack([np.zeros((1, nc)), delta[:-1]])
    sample_stats = classify(prev_delta[1:].ravel(), delta[1:].ravel(), kinds[1:].ravel())
    prm = sim.prm
    return {"delta": delta, "ds": ds, "kinds": kinds, "kappa": float(prm[S.P_KAPPA]), "mu": float(prm[S.P_MU]),
            "stats_all_contacts": stats, "stats_recorded_contacts": sample_stats,
            "particles": particles, "skip": skip, "steps": steps}


def nu_of_kappa(kappa):
    """Poisson's ratio from kappa = (2 - nu) / (2 (1 - nu))."""
    return (2.0 * kappa - 2.0) / (2.0 * kappa - 1.0)


class TraceMovements:
    """Replays a recorded trace as `next_step()` -> (delta (n,), ds (n, 2)), like DemLikeMovements.

    Column c replays trace contact c % m shifted by (c // m) * stride steps, m the trace's
    contacts, so that copies of one contact are at different stages of its history. At the end of
    the trace a column starts again from row 0, its first touch: `restart` (n,) marks the columns
    whose contact must be reset to a fresh one (`reset_contacts`, untimed) before this step. So the
    replay stays exact however long it runs, without an artificial opening movement per contact
    and period (there would be 7x as many openings as in the recorded run, and with energy
    accounting an opening is the dearest movement)."""

    def __init__(self, path, n):
        n = int(n)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        data = np.load(path)
        self.delta = data["delta"].astype(np.float64)
        self.ds = data["ds"].astype(np.float64)
        self.kappa = float(data["kappa"])
        self.mu = float(data["mu"])
        self.period, m = self.delta.shape
        copies = -(-n // m)
        stride = max(1, self.period // copies)
        self.col = np.arange(n) % m
        self.offset = (np.arange(n) // m) * stride
        self.n = n
        self.t = 0
        self.restart = np.zeros(n, dtype=bool)

    def material(self, **base):
        """Material keywords for ContactBatch with the trace's kappa (through nu) and mu: the step
        kinds of a replay depend on them (not on R*, E)."""
        return dict(base, nu=nu_of_kappa(self.kappa), mu=self.mu)

    def next_step(self):
        rows = (self.t + self.offset) % self.period
        self.restart = (rows == 0) & (self.t + self.offset > 0)
        self.t += 1
        return self.delta[rows, self.col], self.ds[rows, self.col]


def reset_contacts(batch, mask):
    """Make the contacts of `batch` marked in `mask` fresh (history released, state zeroed)."""
    from graindem.contact.laws import separate

    st = batch.store
    for c in np.flatnonzero(mask):
        separate(batch.fs, batch.ist, int(c), st.pts, st.nxt, st.meta)
        batch.fs[c, S.F_KIND] = S.KIND_SEPARATED


def replay_agreement(delta, ds, kinds, kappa, mu, after=1):
    """Replay the recorded movements through ContactBatch and return the fraction of touching
    steps (from step `after` on) whose kind equals the recorded one: a check of the recovery of
    ds from the elastic shifts (1 when recorded from the start of the test, skip = 0)."""
    from graindem.contact import ContactBatch

    b = ContactBatch("jaeger", delta.shape[1], E=70e9, nu=nu_of_kappa(kappa), mu=mu, R1=1e-4, R2=1e-4, energy=False)
    same = total = 0
    for t in range(delta.shape[0]):
        b.step(delta[t], ds[t])
        if t >= after:
            touch = delta[t] > 0.0
            same += int(np.sum(b.fs[touch, S.F_KIND] == kinds[t, touch]))
            total += int(touch.sum())
    return same / total if total else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(DEFAULT_TRACE))
    ap.add_argument("--particles", type=int, default=1000)
    ap.add_argument("--skip", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--contacts", type=int, default=300)
    ap.add_argument("--json", default=None, help="also write the kind statistics here")
    args = ap.parse_args(argv)
    for name in ("particles", "steps", "contacts"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if args.skip < 0:
        ap.error("--skip must be >= 0")
    started = provenance(__file__, argv)
    r = record(args.particles, args.skip, args.steps, args.contacts)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, delta=r["delta"].astype(np.float32), ds=r["ds"].astype(np.float32),
                        kappa=r["kappa"], mu=r["mu"])
    agree64 = replay_agreement(r["delta"], r["ds"], r["kinds"], r["kappa"], r["mu"])
    agree32 = replay_agreement(r["delta"].astype(np.float32).astype(np.float64),
                               r["ds"].astype(np.float32).astype(np.float64), r["kinds"], r["kappa"], r["mu"])
    r["replay_kind_agreement"] = {"float64": agree64, "float32_as_stored": agree32}
    summary = {"provenance": started} | {k: r[k] for k in ("replay_kind_agreement", "stats_all_contacts", "stats_recorded_contacts", "particles", "skip", "steps",
                                  "kappa", "mu")}
    print(json.dumps(summary, indent=2))
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

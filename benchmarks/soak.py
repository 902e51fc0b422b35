"""Soak tests: randomized Jäger contact updates with every invariant checked, and a biaxial run
killed with SIGKILL at random moments and restarted, against the uninterrupted run.

    python benchmarks/soak.py --calls N --json FILE [--contacts C] [--seed S] [--check-every K]
    python benchmarks/soak.py --engine [--kills K] [--quick] --json FILE

Contact soak (--calls): N jaeger updates through the batched kernel (ContactBatch.step, i.e.
laws.advance_contacts), C contacts per batch step, sharing one history store. Each contact follows
its own random movement, redrawn every step from a mix of regimes:
  * wild 3D paths: a relative displacement increment of random direction on the sphere (its
    component along the normal changes the overlap, the rest is the tangential shift), with a
    magnitude spread over six decades, so contacts load, unload, slip and reverse in any order;
  * degenerate steps: no tangential movement, exactly repeated positions, exact retraces of the
    previous movement, subnormal and 1e-300 shifts, shifts 10^3 times the overlap, an overlap of
    exactly 0 or of the smallest positive double;
  * opening and closing: contacts separate (overlap <= 0, history released) and touch again.
The energy accounting of the laws (P_ENERGY) is off unless --energy: it is an engine measurement,
not part of the friction law, and its integrator costs ~25 us per update on these wild steps
(against ~0.15 us for the law). After every batch step: every normal and tangential force is finite, |T| <= mu N (1 + tol) (tol
1e-12, the tolerance of tests/test_batch.py for T relative to mu N), a separated contact carries
no force and no history, and the store's live count equals the sum of the contacts' history
lengths. Every --check-every steps (and at the end) the whole store is walked
(io.checkpoint_check.store_link_errors): the free list stays in range and acyclic, each history is
in range, acyclic, disjoint from the others and of the length its row records, and free + live =
capacity. Writes {"calls": N, "violations": V, ...} (the first violations are listed).

Engine soak (--engine): a small biaxial scenario run once uninterrupted, then run again in a
separate folder as `graindem run` subprocesses killed with SIGKILL at random moments while the
test steps (1-3 output rows past the checkpoint the process started from, plus a random part of an
output interval: kills land in stepping, in row writing and in checkpoint writing) (K kills,
default 20, --quick 3), each time continued with `--restart DIR/checkpoint.h5` (or started afresh
if no checkpoint exists yet), until one finishes. The final checkpoint's arrays and the series
must equal the uninterrupted run's bit for bit.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # provenance.py beside this script, also when loaded by path
from provenance import provenance

TOL = 1e-12
MATERIAL = dict(R1=1e-3, R2=2e-3, E=70e9, nu=0.25, mu=0.4)
D0 = 1e-6  # a typical overlap (m) for these spheres


def _movements(rng, d, s_prev_step, n):
    """New total overlaps (n,) and shift increments (n, 2) from overlaps d, in mixed regimes."""
    kind = rng.random(n)
    # wild 3D increments: direction uniform on the sphere, magnitude over six decades
    v = rng.normal(size=(n, 3))
    v /= np.linalg.norm(v, axis=1)[:, None]
    mag = D0 * 10.0 ** rng.uniform(-5.0, 1.0, n)
    dd = -mag * v[:, 2]
    ds = mag[:, None] * v[:, :2]
    new_d = d + dd
    # contacts open now and then; open ones close again
    new_d = np.where(d <= 0.0, D0 * rng.uniform(1e-3, 2.0, n), new_d)
    opening = kind < 0.02
    new_d[opening] = -D0 * rng.uniform(0.0, 0.5, opening.sum())
    new_d = np.minimum(new_d, 20.0 * D0)
    # degenerate steps
    sel = (kind >= 0.02) & (kind < 0.06)          # no tangential movement
    ds[sel] = 0.0
    sel = (kind >= 0.06) & (kind < 0.09)          # repeated position
    new_d[sel], ds[sel] = d[sel], 0.0
    sel = (kind >= 0.09) & (kind < 0.12)          # exact retrace of the previous movement
    ds[sel] = -s_prev_step[sel]
    sel = (kind >= 0.12) & (kind < 0.14)          # vanishing shifts
    ds[sel] = rng.choice([5e-324, 1e-300, 1e-200], size=(sel.sum(), 2))
    sel = (kind >= 0.14) & (kind < 0.16)          # shifts far beyond the slip distance
    ds[sel] = D0 * 1e3 * rng.normal(size=(sel.sum(), 2))
    sel = (kind >= 0.16) & (kind < 0.17)          # an overlap of exactly zero or the smallest double
    new_d[sel] = rng.choice([0.0, 5e-324], size=sel.sum())
    return new_d, ds


def contact_soak(calls, contacts=4096, seed=0, check_every=64, max_listed=20, progress=None, energy=False):
    from graindem.contact import ContactBatch, HistoryStore
    from graindem.contact import state as S
    from graindem.contact.store import M_FREE_HEAD, M_LIVE
    from graindem.io.checkpoint_check import store_link_errors

    # compile outside the timed span
    ContactBatch("jaeger", 1, **MATERIAL).step(np.array([D0]), np.zeros((1, 2)))
    store_link_errors(np.zeros(1, dtype=np.int32), -1, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    rng = np.random.default_rng(seed)
    contacts = int(min(contacts, max(1, calls)))
    batch = ContactBatch("jaeger", contacts, store=HistoryStore(1), **MATERIAL)
    batch.prm[S.P_ENERGY] = 1.0 if energy else 0.0
    mu = batch.prm[S.P_MU]
    d = D0 * rng.uniform(0.1, 1.0, contacts)
    ds_prev = np.zeros((contacts, 2))
    done = steps = walks = 0
    violations = []
    count = 0
    max_len = 0
    peak_live = 0
    slip_steps = 0
    open_steps = 0
    t0 = time.perf_counter()

    def violation(what):
        nonlocal count
        count += 1
        if len(violations) < max_listed:
            violations.append({"step": steps, "calls_before": done, "what": what})

    while done < calls:
        m = min(contacts, calls - done)
        new_d, ds = _movements(rng, d, ds_prev, contacts)
        if m < contacts:  # the last step: the remaining calls only (the others stand still)
            new_d[m:], ds[m:] = d[m:], 0.0
        N, T = batch.step(new_d, ds)
        done += m
        steps += 1
        fs, ist = batch.fs, batch.ist
        if not (np.isfinite(fs[:, :S.F_KIND]).all()):
            violation("non-finite force or overlap")
        t = np.hypot(T[:, 0], T[:, 1])
        over = t > mu * N * (1.0 + TOL)
        if over.any():
            c = int(np.flatnonzero(over)[0])
            violation(f"|T| = {t[c]!r} > mu N (1 + tol) = {mu * N[c] * (1 + TOL)!r} at contact {c}")
        opened = new_d <= 0.0
        open_steps += int(opened.sum())
        if np.any(N[opened] != 0.0) or np.any(t[opened] != 0.0) or np.any(ist[opened, S.I_HEAD] != -1) \
                or np.any(ist[opened, S.I_LEN] != 0):
            violation("a separated contact keeps force or history")
        lens = ist[:, S.I_LEN]
        live = int(batch.store.meta[M_LIVE])
        if live != int(lens.sum()):
            violation(f"store live points {live} != sum of history lengths {int(lens.sum())}")
        slip_steps += int(np.count_nonzero((N[:m] > 0.0) & (t[:m] >= mu * N[:m] * (1.0 - 1e-9))))
        max_len = max(max_len, int(lens.max()))
        peak_live = max(peak_live, live)
        if steps % check_every == 0 or done >= calls:
            walks += 1
            code, where = store_link_errors(batch.store.nxt, int(batch.store.meta[M_FREE_HEAD]),
                                            ist[:, S.I_HEAD].copy(), lens.copy())
            if code != 0:
                violation(f"store link check failed: code {code} at {where}")
            elif where != batch.store.capacity - live:
                violation(f"free list holds {where} points, capacity - live = {batch.store.capacity - live}")
        d = np.where(np.arange(contacts) < m, new_d, d)
        ds_prev = ds
        if progress and steps % 2000 == 0:
            rate = done / (time.perf_counter() - t0)
            progress(f"{done:.3e} calls, {count} violations, {rate:.3g} calls/s")
    seconds = time.perf_counter() - t0
    return {"calls": int(done), "violations": int(count), "listed_violations": violations,
            "contacts": contacts, "batch_steps": steps, "store_walks": walks, "seed": seed,
            "tolerance": TOL, "energy_accounting": bool(energy), "max_history_length": max_len, "peak_live_points": peak_live,
            "store_capacity": int(batch.store.capacity), "slipping_fraction": slip_steps / max(done, 1),
            "open_fraction": open_steps / max(steps * contacts, 1), "seconds": seconds,
            "calls_per_s": done / seconds if seconds > 0 else None}


# ---------------------------------------------------------------- engine soak
ENGINE_SCENARIO = """
[simulation]
scenario = "biaxial"
steps = {steps}
output_interval = 50
checkpoint_interval = 100
seed = 4
[contact]
law = "jaeger"
[particles]
n = 100
radius_mean = 1.5e-4
[loading]
kind = "biaxial"
total_strain = 0.015
preparation_mu = 0.1
[material]
damping = 0.1
[output]
vtk = false
plots = false
"""

OUTPUT_INTERVAL = 50


def _test_step(ckpt):
    """The test step a checkpoint holds (None without a readable one)."""
    from graindem.engine import checkpoint
    try:
        sim, extra = checkpoint.load(ckpt)
    except (FileNotFoundError, ValueError):
        return None
    return int(sim.step_count - extra["biaxial"]["start_step"])


def _last_series_step(path):
    """The step of the last complete row of a series.csv (-1 if none)."""
    try:
        lines = path.read_text().split("\n")[1:-1]
        return int(lines[-1].split(",")[0]) if lines else -1
    except (OSError, ValueError, IndexError):
        return -1


COMPARED = ("pos", "vel", "omega", "quat", "cell", "ctl", "ictl", "acc", "pos_build", "pstart", "walls")


def _graindem(args, env):
    return [sys.executable, "-m", "graindem.cli", *args, "--quiet"]


def engine_soak(kills=20, steps=3000, seed=0, workdir=None, progress=None, packing=None):
    """Kill a biaxial run `kills` times at random moments; compare with the uninterrupted run.
    packing: a prepared packing.h5 of the soak's scenario to start from (default: prepared here)."""
    from graindem.contact import state as S
    from graindem.engine import checkpoint
    from graindem.io.timeseries import read_timeseries

    rng = np.random.default_rng(seed)
    work = Path(workdir or tempfile.mkdtemp(prefix="graindem-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    scenario = work / "soak.toml"
    scenario.write_text(ENGINE_SCENARIO.format(steps=steps))
    env = dict(os.environ)
    ref, run = work / "reference", work / "killed"
    # the preparation is not what is soaked: both runs start from the same prepared packing, and the
    # kill moments are drawn over the duration of a run from it (process start included)
    if packing is not None:
        ref.mkdir(parents=True, exist_ok=True)
        (ref / "packing.h5").write_bytes(Path(packing).read_bytes())
    else:
        done = subprocess.run(_graindem(["run", str(scenario), "--out", str(ref), "--steps", "0"], env), env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the preparation failed: {done.stderr.strip()}")
    run.mkdir(parents=True, exist_ok=True)
    (run / "packing.h5").write_bytes((ref / "packing.h5").read_bytes())
    t0 = time.perf_counter()
    done = subprocess.run(_graindem(["run", str(scenario), "--out", str(ref)], env), env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the uninterrupted run failed: {done.stderr.strip()}")
    t_ref = time.perf_counter() - t0
    seconds_per_row = t_ref / (steps / OUTPUT_INTERVAL)  # an upper bound (process start included)
    killed_at = []
    finished = False
    series = run / "series.csv"
    for attempt in range(kills + 1000):
        ckpt = run / "checkpoint.h5"
        start = _test_step(ckpt)
        args = ["run", "--restart", str(ckpt), "--out", str(run)] if start is not None else \
            ["run", str(scenario), "--out", str(run)]
        proc = subprocess.Popen(_graindem(args, env), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        if len(killed_at) < kills:
            # a random moment while the test steps: once the series has advanced 1-3 output rows past
            # the checkpoint the process started from, plus a random part of an output interval
            rows = int(rng.integers(1, 4))
            extra = float(rng.uniform(0.0, 1.0))
            target = (start or 0) + rows * OUTPUT_INTERVAL
            while proc.poll() is None and _last_series_step(series) < target:
                time.sleep(0.01)
            t_row = time.perf_counter()
            while proc.poll() is None and time.perf_counter() - t_row < extra * seconds_per_row:
                time.sleep(0.002)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed_at.append({"from_step": start, "after_rows": rows, "extra_fraction": round(extra, 3),
                                  "checkpoint_step_after": _test_step(ckpt)})
                if progress:
                    progress(f"kill {len(killed_at)}/{kills}: started at step {start}, checkpoint now at "
                             f"{killed_at[-1]['checkpoint_step_after']}")
                continue
        proc.wait()
        err = proc.stderr.read()
        if proc.returncode != 0:
            raise RuntimeError(f"a continued run failed ({proc.returncode}): {err.strip()}")
        finished = True
        break
    if not finished:
        raise RuntimeError("the killed run never finished")
    a, _ = checkpoint.load(ref / "checkpoint.h5")
    b, _ = checkpoint.load(run / "checkpoint.h5")
    m = int(a.ictl[9])
    different = [name for name in COMPARED if not np.array_equal(getattr(a, name), getattr(b, name))]
    different += [name for name in ("pi", "pj", "pfs", "pcq") if not np.array_equal(getattr(a, name)[:m],
                                                                                     getattr(b, name)[:m])]
    ha = [a.store.points(a.pist[c, S.I_HEAD]) for c in range(m)]
    hb = [b.store.points(b.pist[c, S.I_HEAD]) for c in range(m)]
    if ha != hb:
        different.append("histories")
    sa, sb = read_timeseries(ref / "series.csv"), read_timeseries(run / "series.csv")
    series_equal = list(sa) == list(sb) and all(np.array_equal(sa[k], sb[k]) for k in sa)
    return {"kills": len(killed_at), "killed_at": killed_at, "steps": steps, "seed": seed,
            "identical": not different and series_equal, "different_arrays": different,
            "series_identical": series_equal, "series_rows": int(len(sa["step"])),
            "reference_seconds": t_ref, "workdir": str(work)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=None, help="jaeger contact updates to run (contact soak)")
    p.add_argument("--contacts", type=int, default=4096, help="contacts per batch step")
    p.add_argument("--check-every", type=int, default=64, help="batch steps between full store walks")
    p.add_argument("--energy", action="store_true",
                   help="count tangential work and dissipation per contact (laws' P_ENERGY; off by default)")
    p.add_argument("--engine", action="store_true", help="the SIGKILL/restart soak of a biaxial run")
    p.add_argument("--kills", type=int, default=None, help="SIGKILLs of the engine soak (default 20, --quick 3)")
    p.add_argument("--steps", type=int, default=None, help="steps of the engine soak's test (default 3000, --quick 600)")
    p.add_argument("--quick", action="store_true", help="the small sizes the test suite runs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.calls is None and not args.engine:
        p.error("give --calls N (contact soak) and/or --engine")
    for name in ("calls", "contacts", "check_every", "kills", "steps"):
        value = getattr(args, name)
        if value is not None and value < (0 if name in ("calls", "kills") else 1):
            p.error(f"--{name.replace('_', '-')} must be >= {0 if name in ('calls', 'kills') else 1}, got {value}")
    say = (lambda msg: print(msg, flush=True)) if args.verbose else None
    result = {"provenance": provenance(__file__, argv)}
    if args.calls is not None:
        result.update(contact_soak(args.calls, contacts=args.contacts, seed=args.seed, check_every=args.check_every,
                                   progress=say, energy=args.energy))
    if args.engine:
        kills = args.kills if args.kills is not None else (3 if args.quick else 20)
        steps = args.steps if args.steps is not None else (600 if args.quick else 3000)
        result["engine"] = engine_soak(kills=kills, steps=steps, seed=args.seed, progress=say)
    text = json.dumps(result, indent=2)
    if args.json:
        from graindem.io.outputs import atomic_write_text
        atomic_write_text(Path(args.json), text + "\n")
    print(text if args.verbose or not args.json else
          f"calls {result.get('calls')}, violations {result.get('violations')}"
          + (f"; engine identical: {result['engine']['identical']}" if "engine" in result else ""))
    bad = result.get("violations", 0) or ("engine" in result and not result["engine"]["identical"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

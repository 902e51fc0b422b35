"""`graindem sweep`: a parameter study as independent runs of one scenario, on Dask.

    graindem sweep SWEEP.toml --out DIR [--workers N] [--scheduler ADDRESS] [--dry-run]

A sweep file names a scenario file and the keys to vary:

    scenario = "biaxial.toml"          # relative to the sweep file
    combine = "product"                # every combination; "zip": the i-th value of every key together

    [parameters]                       # scenario key paths -> lists of values or ranges
    "material.mu" = [0.3, 0.5]
    "contact.law" = ["mindlin", "jaeger"]
    "loading.confining_stress" = {start = 50e3, stop = 200e3, num = 3, spacing = "log"}

    [overrides]                        # the same for every run (optional)
    "simulation.steps" = 2000

Key paths may also be written as TOML dotted keys (material.mu = [...]). Every run's scenario is
validated before the first run starts, so a bad value stops the sweep with the run and key named.

Each run writes into DIR/runs/NNNN/ exactly what `graindem run` writes, plus sweep_run.json (its
parameters and a hash of its scenario). A run whose folder already holds a summary.json for the same
scenario is skipped, so an interrupted sweep continues where it stopped; a folder holding another
scenario is refused rather than mixed. DIR/summary.csv has one row per run (status, parameters, the
summary's numbers) and DIR/summary.png plots the main result against the first parameter.

The runs are independent processes of a Dask cluster: a local one with --workers processes (one
thread each, since a run is single-threaded) by default, or the scheduler at --scheduler ADDRESS
(e.g. tcp://host:8786), whose workers must see DIR and the scenario's files at the same paths.
"""

import csv
import hashlib
import itertools
import json
import math
import os
import sys
import tomllib
from pathlib import Path

SWEEP_KEYS = {"scenario", "combine", "parameters", "overrides"}
RANGE_KEYS = {"start", "stop", "num", "spacing"}
MAIN_RESULTS = ("peak_stress_ratio", "pressure", "void_ratio")


def add_arguments(parser):
    parser.add_argument("sweep", help="sweep file (TOML): a scenario and the keys to vary")
    parser.add_argument("--out", required=True, help="results folder (one sub-folder per run)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the local Dask cluster (default: the number of cores)")
    parser.add_argument("--scheduler", default=None,
                        help="address of a running Dask scheduler instead of a local cluster")
    parser.add_argument("--steps", type=int, default=None, help="time steps of each run (default: the scenario's)")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _values(path, spec):
    """The list of values of one swept key from a list or a {start, stop, num, spacing} range."""
    if isinstance(spec, list):
        if not spec:
            raise ValueError(f"parameters.{path} must list at least one value")
        return spec
    if isinstance(spec, dict):
        unknown = set(spec) - RANGE_KEYS
        if unknown:
            raise ValueError(f"parameters.{path}: unknown range key(s) {sorted(unknown)} (allowed: start, stop, num, "
                             "spacing)")
        missing = {"start", "stop", "num"} - set(spec)
        if missing:
            raise ValueError(f"parameters.{path}: a range needs start, stop and num (missing {sorted(missing)})")
        start, stop, num = spec["start"], spec["stop"], spec["num"]
        spacing = spec.get("spacing", "linear")
        for name, v in (("start", start), ("stop", stop)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"parameters.{path}.{name} must be a finite number; got {v!r}")
        if isinstance(num, bool) or not isinstance(num, int) or not 1 <= num <= 10000:
            raise ValueError(f"parameters.{path}.num must be an integer from 1 to 10000; got {num!r}")
        if spacing not in ("linear", "log"):
            raise ValueError(f"parameters.{path}.spacing must be 'linear' or 'log'; got {spacing!r}")
        if spacing == "log" and (start <= 0 or stop <= 0):
            raise ValueError(f"parameters.{path}: a log range needs start > 0 and stop > 0; got {start!r}, {stop!r}")
        if num == 1:
            return [float(start)]
        if spacing == "log":
            a, b = math.log(start), math.log(stop)
            return [math.exp(a + (b - a) * k / (num - 1)) for k in range(num)]
        return [start + (stop - start) * k / (num - 1) for k in range(num)]
    raise ValueError(f"parameters.{path} must be a list of values or a range table {{start, stop, num}}; got {spec!r}")


def _flatten(table, prefix=""):
    """{"material": {"mu": [..]}} and {"material.mu": [..]} both give {"material.mu": [..]}; a range
    table ({start, stop, num}) is a value, not a section."""
    out = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and not (set(value) & RANGE_KEYS):
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


def load_sweep(path):
    """Read a sweep file; returns (base scenario config, list of runs {"name", "parameters", "config"}).

    Every run's scenario is built and validated here, before anything runs."""
    from .io.scenario import apply_overrides, load_scenario
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"sweep file {str(path)!r} does not exist")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"sweep file {str(path)!r} is not valid TOML: {exc}") from None
    unknown = set(data) - SWEEP_KEYS
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {sorted(unknown)} (allowed: {', '.join(sorted(SWEEP_KEYS))})")
    if not isinstance(data.get("scenario"), str):
        raise ValueError(f"{path}: 'scenario' (the scenario file to vary, relative to the sweep file) is required")
    combine = data.get("combine", "product")
    if combine not in ("product", "zip"):
        raise ValueError(f"{path}: combine must be 'product' or 'zip'; got {combine!r}")
    params = _flatten(data.get("parameters") or {})
    if not params:
        raise ValueError(f"{path}: [parameters] must name at least one scenario key to vary")
    fixed = _flatten(data.get("overrides") or {})
    base = load_scenario((path.parent / data["scenario"]).resolve())
    try:
        base = apply_overrides(base, fixed)
    except ValueError as exc:
        raise ValueError(f"{path}: [overrides]: {exc}") from None
    names = list(params)
    lists = [_values(name, params[name]) for name in names]
    if combine == "zip":
        lengths = {len(v) for v in lists}
        if len(lengths) > 1:
            raise ValueError(f"{path}: combine = 'zip' needs lists of one length; got "
                             + ", ".join(f"{n}: {len(v)}" for n, v in zip(names, lists)))
        combos = list(zip(*lists))
    else:
        combos = list(itertools.product(*lists))
    runs = []
    for k, combo in enumerate(combos):
        values = dict(zip(names, combo))
        try:
            config = apply_overrides(base, values)
        except ValueError as exc:
            raise ValueError(f"{path}: run {k} ({_describe(values)}): {exc}") from None
        runs.append({"name": f"{k:04d}", "parameters": values, "config": config})
    return base, runs


def _describe(values):
    return ", ".join(f"{p}={v!r}" for p, v in values.items())


def _config_hash(config):
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _state_of(folder, digest):
    """'done', 'pending' or 'foreign' (the folder holds a run of another scenario)."""
    record = folder / "sweep_run.json"
    if not record.exists():
        return "foreign" if folder.exists() and any(folder.iterdir()) else "pending"
    try:
        if json.loads(record.read_text())["config_hash"] != digest:
            return "foreign"
    except (ValueError, KeyError, OSError):
        return "foreign"
    return "done" if (folder / "summary.json").exists() else "pending"


def run_one(config, folder, parameters, steps=None):
    """One run of the sweep (executed on a Dask worker): returns (status, summary dict)."""
    from .engine.cli import run_scenario
    from .engine.simulation import Diverged
    from .io.outputs import atomic_write_bytes
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"parameters": parameters, "config_hash": _config_hash(config)}
    atomic_write_bytes(folder / "sweep_run.json", json.dumps(record, indent=2, default=str).encode())
    try:
        summary = run_scenario(config, folder, steps=steps, quiet=True)
    except Diverged as exc:
        return f"diverged: {exc}".splitlines()[0], {}
    except (ValueError, OSError, MemoryError) as exc:
        return f"failed: {exc}".splitlines()[0], {}
    return "done", summary


def _client(scheduler, workers):
    from dask.distributed import Client, LocalCluster
    if scheduler:
        return Client(scheduler), None
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster


def run_sweep(sweep_path, out, workers=None, scheduler=None, steps=None, quiet=False):
    """Run every pending run of the sweep into `out`; returns the rows of summary.csv."""
    _, runs = load_sweep(sweep_path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for run in runs:
        run["folder"] = out / "runs" / run["name"]
        run["state"] = _state_of(run["folder"], _config_hash(run["config"]))
    foreign = [r for r in runs if r["state"] == "foreign"]
    if foreign:
        raise ValueError(f"{foreign[0]['folder']} holds a run of another scenario; give another --out "
                         "or remove that folder")
    pending = [r for r in runs if r["state"] == "pending"]
    results = {}
    if pending:
        from dask.distributed import as_completed
        from tqdm import tqdm
        client, cluster = _client(scheduler, workers)
        try:
            futures = {client.submit(run_one, r["config"], str(r["folder"]), r["parameters"], steps,
                                     key=f"graindem-sweep-{out.resolve()}-{r['name']}", pure=False): r["name"]
                       for r in pending}
            bar = tqdm(total=len(runs), initial=len(runs) - len(pending), desc="sweep", unit="run",
                       disable=quiet, file=sys.stderr)
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update(1)
            bar.close()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    rows = []
    for run in runs:
        if run["name"] in results:
            status, summary = results[run["name"]]
        else:
            status, summary = "done", json.loads((run["folder"] / "summary.json").read_text())
        row = {"run": run["name"], "status": status}
        row.update({p: v for p, v in run["parameters"].items()})
        row.update({k: v for k, v in summary.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)})
        rows.append(row)
    _write_table(rows, out / "summary.csv")
    _plot(rows, list(runs[0]["parameters"]), out / "summary.png")
    return rows


def _write_table(rows, path):
    columns = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    from .io.outputs import replacing
    with replacing(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _plot(rows, params, path):
    """The main result of each run against the first swept key, one line per value of the others."""
    done = [r for r in rows if r["status"] == "done"]
    result = next((k for k in MAIN_RESULTS if any(k in r for r in done)), None)
    if not done or result is None:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x_key, others = params[0], params[1:]
    groups = {}
    for r in done:
        groups.setdefault(tuple(r[p] for p in others), []).append(r)
    fig, ax = plt.subplots(figsize=(6, 4))
    numeric = all(isinstance(r[x_key], (int, float)) for r in done)
    for label, members in groups.items():
        members = sorted(members, key=lambda r: r[x_key]) if numeric else members
        xs = [r[x_key] if numeric else str(r[x_key]) for r in members]
        ys = [r.get(result, float("nan")) for r in members]
        name = ", ".join(f"{p.split('.')[-1]}={v}" for p, v in zip(others, label)) or None
        ax.plot(xs, ys, "o-", label=name)
    ax.set_xlabel(x_key)
    ax.set_ylabel(result.replace("_", " "))
    if any(label for label in groups if label):
        ax.legend(fontsize=8)
    fig.tight_layout()
    from .io.plots import save_figure
    save_figure(fig, path, announce=None)
    plt.close(fig)


def run(args):
    if args.workers is not None and args.workers < 1:
        print(f"graindem sweep: --workers must be >= 1, got {args.workers}", file=sys.stderr)
        return 2
    if args.steps is not None and args.steps < 0:
        print(f"graindem sweep: --steps must be >= 0, got {args.steps}", file=sys.stderr)
        return 2
    try:
        if args.dry_run:
            _, runs = load_sweep(args.sweep)
            for r in runs:
                print(f"{r['name']}: {_describe(r['parameters'])}")
            return 0
        rows = run_sweep(args.sweep, args.out, workers=args.workers, scheduler=args.scheduler, steps=args.steps,
                         quiet=args.quiet)
    except (ValueError, FileNotFoundError) as exc:
        print(f"graindem sweep: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in rows if r["status"] != "done"]
    if not args.quiet:
        print(f"{len(rows) - len(failed)} of {len(rows)} runs done; wrote {Path(args.out) / 'summary.csv'}")
    for r in failed:
        print(f"graindem sweep: run {r['run']}: {r['status']}", file=sys.stderr)
    return 3 if failed else 0

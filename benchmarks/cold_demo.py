"""The first `graindem demo` on a fresh machine: wall time and CPU of a demo with an empty numba cache,
and (--venv) of creating the virtual environment and installing graindem as `make demo` does.

    python benchmarks/cold_demo.py --json results/bench/cold_demo.json
    python benchmarks/cold_demo.py --src /path/to/other/checkout --src . --rounds 2 --json FILE

Each run gets a fresh cache folder (GRAINDEM_NUMBA_CACHE) and a fresh results folder, so every kernel
is compiled; CPU is the user + system time of the demo and of the processes it starts. With several
--src checkouts the runs alternate (round 1: each source once, round 2: each again, ...), so that
a machine whose load changes affects them alike; compare CPU seconds rather than wall time on a
machine shared with other work. The demo's results (its two summary.json files, run times left
out) are recorded per run, and whether they are the same for every run.

--venv: a fresh venv in a temporary folder (`python3 -m venv`) and `pip install --quiet -e SRC`,
timed once per source before the demos (pip's download cache as it is), then the first import of
what the demo imports in it (which writes the byte code pip did not).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import provenance

ROOT = Path(__file__).resolve().parents[1]
# run times and speeds differ from run to run; everything else in the summaries must not
VARIABLE_KEYS = ("runtime_s", "steps_per_s", "wall_time_s")
IMPORTS = ("import numpy, scipy, numba, matplotlib.pyplot, h5py; "
           "import graindem.cli, graindem.demo.contact, graindem.scenarios.biaxial, graindem.engine.simulation")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, env=None, cwd=None, log=None):
    """Run cmd; returns (wall s, CPU s of it and its children, exit code)."""
    c0 = children_cpu()
    t0 = time.perf_counter()
    with open(log, "w") if log else open(os.devnull, "w") as out:
        rc = subprocess.call(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    return time.perf_counter() - t0, children_cpu() - c0, rc


def results_of(out):
    """The demo's summaries without their run times (what must not change between versions)."""
    def strip(d):
        if isinstance(d, dict):
            return {k: strip(v) for k, v in d.items() if k not in VARIABLE_KEYS}
        return d
    found = {}
    for name in ("summary.json", "contact/summary.json", "contact/traction_energy.json"):
        path = Path(out) / name
        found[name] = strip(json.loads(path.read_text())) if path.exists() else None
    return found


def time_venv(src, work):
    venv = Path(work) / "venv"
    wall_v, cpu_v, rc_v = timed(["python3", "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    wall_i, cpu_i, rc_i = timed([py, "-m", "pip", "install", "--quiet", "-e", str(src)], cwd=src,
                                log=Path(work) / "pip.log")
    wall_m, cpu_m, rc_m = timed([py, "-c", IMPORTS], cwd=work)
    shutil.rmtree(venv, ignore_errors=True)
    return {"venv_s": wall_v, "venv_cpu_s": cpu_v, "install_s": wall_i, "install_cpu_s": cpu_i,
            "first_import_s": wall_m, "first_import_cpu_s": cpu_m, "ok": rc_v == rc_i == rc_m == 0}


def cold_demo(src, work, python):
    cache = Path(work) / "cache"
    out = Path(work) / "out"
    env = dict(os.environ, GRAINDEM_NUMBA_CACHE=str(cache), NUMBA_NUM_THREADS="1",
               PYTHONPATH=str(Path(src) / "src"))
    env.pop("NUMBA_CACHE_DIR", None)
    wall, cpu, rc = timed([python, "-m", "graindem.cli", "demo", "--out", str(out)], env=env, cwd=work,
                          log=Path(work) / "demo.log")
    if rc != 0:
        print((Path(work) / "demo.log").read_text()[-3000:])
    return {"wall_s": wall, "cpu_s": cpu, "exit_code": rc, "results": results_of(out)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", action="append", help="a graindem checkout to time (repeatable; default: this one)")
    p.add_argument("--rounds", type=int, default=1, help="runs of each source, alternating (default 1)")
    p.add_argument("--venv", action="store_true", help="also time a fresh venv and `pip install -e` per source")
    p.add_argument("--python", default=sys.executable, help="the interpreter the demos run with")
    p.add_argument("--json", help="write the record here")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1, got {args.rounds}")
    sources = [Path(s).resolve() for s in (args.src or [ROOT])]
    for s in sources:
        if not (s / "src" / "graindem" / "__init__.py").exists():
            p.error(f"--src must be a graindem checkout (with src/graindem), got {s}")
    record = {"provenance": provenance(__file__, argv), "sources": [str(s) for s in sources], "runs": []}
    if args.venv:
        record["install"] = {}
        for s in sources:
            with tempfile.TemporaryDirectory(prefix="cold_demo_venv_") as work:
                record["install"][str(s)] = time_venv(s, work)
            print(f"{s}: install {record['install'][str(s)]}", flush=True)
    for k in range(args.rounds):
        for s in sources:
            with tempfile.TemporaryDirectory(prefix="cold_demo_") as work:
                run = {"round": k + 1, "src": str(s), **cold_demo(s, work, args.python)}
            record["runs"].append(run)
            print(f"round {k + 1} {s}: demo {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, "
                  f"exit code {run['exit_code']}", flush=True)
            first = record["runs"][0]["results"]
            record["same_results"] = all(r["results"] == first for r in record["runs"])
            if args.json:  # after every run: a long series stopped early keeps what it measured
                path = Path(args.json)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(record, indent=2))
    print(f"results the same in every run: {record['same_results']}")
    if args.json:
        print(f"wrote {args.json}")
    return record


if __name__ == "__main__":
    main()

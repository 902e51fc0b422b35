"""Where and how a benchmark's figures were recorded: the record every benchmark script stores under
"provenance" in its JSON (`--json FILE`).

    from provenance import provenance
    record = provenance(__file__, argv)   # at the start of main(argv): the load average is the start's

The record holds the command line, the date (UTC), the git commit of the checkout and whether its
tracked files had uncommitted changes, the CPU model and core count, the load average when the run
started, and the versions of Python, the libraries the timings depend on (numpy, scipy, numba,
llvmlite, h5py) and of the reference codes (LAMMPS, YADE) when they are installed, None otherwise.
Library versions are read from the installed packages' metadata, without importing them.
"""

import datetime
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numpy", "scipy", "numba", "llvmlite", "h5py", "lammps")


def _run(cmd, timeout=20):
    """stdout of cmd, or None when it cannot run."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def cpu_model(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name as the kernel reports it (platform.processor() as a fallback)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        text = ""
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else (platform.processor() or platform.machine())


def git_state():
    """(commit, dirty): dirty is True when tracked files differ from the commit; (None, None) outside git."""
    commit = _run(["git", "rev-parse", "HEAD"])
    if commit is None:
        return None, None
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return commit, bool(status)


def package_version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def yade_version():
    """YADE's version from `yade --version` ("2023.02a"), None when the executable is absent."""
    if shutil.which("yade") is None:
        return None
    out = _run(["yade", "--version"])
    match = re.search(r"version:\s*(\S+)", out or "")
    return match.group(1) if match else None


def command_line(script=None, argv=None):
    """The command as typed from the repository root, `python benchmarks/NAME.py ARGS`: the script's path
    (default sys.argv[0]) and its arguments (default sys.argv[1:], as main(argv=None) reads them)."""
    script = Path(sys.argv[0] if script is None else script).resolve()
    if script.is_relative_to(ROOT):
        script = script.relative_to(ROOT)
    return shlex.join(["python", str(script), *(sys.argv[1:] if argv is None else argv)])


def provenance(script=None, argv=None):
    """The record for a run of `script` (a benchmark's __file__) with arguments argv (None: sys.argv[1:])."""
    commit, dirty = git_state()
    versions = {"python": platform.python_version()}
    versions.update({name: package_version(name) for name in PACKAGES})
    versions["yade"] = yade_version()
    return {
        "command": command_line(script, argv),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "commit": commit,
        "dirty": dirty,
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()),
        "numba_num_threads": os.environ.get("NUMBA_NUM_THREADS"),
        "versions": versions,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(provenance(), indent=2))

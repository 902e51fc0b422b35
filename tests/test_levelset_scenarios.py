"""The pile scenario, VTK output of level-set grains and the lsdem benchmark's contract."""

import json
import subprocess
import sys
from pathlib import Path

import meshio
import numpy as np

from graindem.scenarios.pile import run_pile

ROOT = Path(__file__).resolve().parents[1]


def test_small_pile_settles_inside_the_box(tmp_path):
    s = run_pile(12, n_nodes=200, max_time=0.3, out=tmp_path, quiet=True)
    assert s["all_inside_box"]
    assert s["settled"], s
    # settled ellipsoids (smallest semi-axis 0.5 mm) in a one- or two-layer heap: the top is below the
    # starting lattice and above a single grain resting on its flattest side
    assert 0.5e-3 < s["pile_top"] < 5e-3
    surf = meshio.read(tmp_path / "pile_final_surfaces.vtu")
    assert surf.cells[0].type == "triangle"
    assert set(np.unique(surf.point_data["grain"])) == set(range(12))
    contacts = meshio.read(tmp_path / "pile_final_contacts.vtu")
    assert len(contacts.points) == s["contact_nodes"]
    # at rest every grain is in static equilibrium: contact forces balance its weight (to 2 %; measured 0.7 %)
    assert s["max_net_force_over_weight"] < 0.02
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == s["steps"]


def test_lsdem_benchmark_quick_writes_json(tmp_path):
    out = tmp_path / "lsdem.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lsdem.py"), "--quick", "--json", str(out)],
                   check=True, capture_output=True, timeout=600)
    r = json.loads(out.read_text())
    assert r["queries"]["numba_queries_per_s"] > 0
    assert [x["grains"] for x in r["steps_vs_grains"]] == [8, 27, 64]
    assert all(x["steps_per_s"] > 0 and x["contact_nodes"] > 0 for x in r["steps_vs_grains"])
    assert r["memory_per_grain"]["history_bytes_per_node"] == 40
    # the YADE comparison: its figure on the shared lattice, or null with the reason (no `yade` installed)
    assert r["graindem"]["grains"] == 27 and r["graindem"]["steps_per_s"] > 0
    if r["yade"] is None:
        assert r["yade_reason"]
    else:
        assert r["yade"]["steps_per_s"] > 0 and r["yade"]["n_bodies"] == 27 and r["graindem_over_yade"] > 0

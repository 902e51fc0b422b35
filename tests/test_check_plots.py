"""benchmarks/check_plots.py draws the verification and validation figures from the recorded JSON files
in benchmarks/data (json, numpy and matplotlib only: no simulation, no numba compilation)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"


def _plots():
    spec = importlib.util.spec_from_file_location("check_plots", ROOT / "benchmarks" / "check_plots.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_figures_from_the_recorded_files(tmp_path):
    mod = _plots()
    status = mod.main(["--shaped-hertz", str(DATA / "shaped_hertz.json"), "--impact",
                       str(DATA / "impact_suite_quick.json"), "--lsdem", str(DATA / "lsdem.json"),
                       "--mixed", str(DATA / "mixed_checks.json"), "--out", str(tmp_path)])
    assert status == 0
    names = ["shaped_hertz_checks.png", "shaped_hertz_ellipsoids.png", "shaped_hertz_bulk_modulus.png",
             "shaped_hertz_impact.png", "impact_co123_spin.png", "levelset_convergence.png", "mixed_checks.png"]
    for name in names:
        head = (tmp_path / name).read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n", name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_random_packing_figure_from_its_recorded_file(tmp_path):
    mod = _plots()
    status = mod.main(["--random-packing", str(DATA / "shaped_hertz_random_packing.json"), "--out", str(tmp_path)])
    assert status == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shaped_hertz_random_packing.png"]
    assert (tmp_path / "shaped_hertz_random_packing.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="random-packing"):
        mod.plot_random_packing(json.loads((DATA / "lsdem.json").read_text()), str(tmp_path))


def test_a_file_of_another_benchmark_is_refused(tmp_path):
    mod = _plots()
    lsdem = json.loads((DATA / "lsdem.json").read_text())
    with pytest.raises(ValueError, match="shaped_hertz: the recorded JSON lacks cases"):
        mod.plot_shaped_hertz(lsdem, str(tmp_path))
    with pytest.raises(ValueError, match="impact_suite"):
        mod.plot_impact_checks({"cases": {"maw_sphere_plane_jaeger": {}}}, str(tmp_path))
    with pytest.raises(ValueError, match="mixed_checks: the recorded JSON lacks energy_balance"):
        mod.plot_mixed_checks(lsdem | {"cases": {}}, str(tmp_path))

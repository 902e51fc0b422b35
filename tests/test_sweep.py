"""`graindem sweep`: parameter studies as independent runs on a local Dask cluster.

References: each run of the sweep against the same scenario run directly with `run_scenario` (the
same trajectory, so the same results bit for bit), the cartesian product / zip of the swept values,
and the folders left by a first sweep (a repeated sweep must run nothing again).
"""

import csv
import json

import pytest

from graindem.cli import main
from graindem.engine.cli import run_scenario
from graindem.io.scenario import apply_overrides, load_scenario
from graindem.sweep import load_sweep, run_sweep

SCENARIO = """
[simulation]
scenario = "biaxial"
steps = 3000
output_interval = 100
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

SWEEP = """
scenario = "scenario.toml"
[parameters]
"contact.law" = ["mindlin", "jaeger"]
[overrides]
"simulation.steps" = 3000
"""


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    return tmp_path


def test_sweep_runs_equal_direct_runs_and_resume_runs_nothing(files):
    # the scenario run directly first: its process compiles the kernels, the workers load them from the cache
    direct = files / "direct"
    config = apply_overrides(load_scenario(files / "scenario.toml"), {"contact.law": "jaeger"})
    expected = run_scenario(config, direct, steps=200, quiet=True)
    out = files / "out"
    rows = run_sweep(files / "sweep.toml", out, workers=2, steps=200, quiet=True)
    assert [r["status"] for r in rows] == ["done", "done"]
    assert [r["contact.law"] for r in rows] == ["mindlin", "jaeger"]
    with open(out / "summary.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [t["contact.law"] for t in table] == ["mindlin", "jaeger"] and len(table) == 2
    assert (out / "summary.png").exists()
    # the jaeger run of the sweep is the scenario run directly (same packing seed, same steps)
    got = json.loads((out / "runs" / "0001" / "summary.json").read_text())
    for key in ("peak_stress_ratio", "mean_contacts", "mean_history_length", "steps", "n_particles"):
        assert got[key] == expected[key], key
    assert got["law"] == "jaeger"
    # a repeated sweep finds both runs finished and runs nothing (their files are not rewritten)
    stamp = (out / "runs" / "0000" / "summary.json").stat().st_mtime_ns
    rows2 = run_sweep(files / "sweep.toml", out, workers=1, steps=200, quiet=True)
    assert [r["status"] for r in rows2] == ["done", "done"]
    assert (out / "runs" / "0000" / "summary.json").stat().st_mtime_ns == stamp
    assert rows2[0]["peak_stress_ratio"] == rows[0]["peak_stress_ratio"]
    # another sweep into the same folder would mix runs: refused
    (files / "sweep.toml").write_text(SWEEP.replace('["mindlin", "jaeger"]', '["linear", "jaeger"]'))
    with pytest.raises(ValueError, match="another scenario"):
        run_sweep(files / "sweep.toml", out, workers=1, steps=200, quiet=True)


def test_product_zip_and_ranges(files):
    (files / "sweep.toml").write_text("""
scenario = "scenario.toml"
[parameters]
material.mu = [0.3, 0.5]
"loading.confining_stress" = {start = 1e4, stop = 1e6, num = 3, spacing = "log"}
""")
    _, runs = load_sweep(files / "sweep.toml")
    assert len(runs) == 6
    stresses = sorted({r["parameters"]["loading.confining_stress"] for r in runs})
    assert stresses == pytest.approx([1e4, 1e5, 1e6], rel=1e-12)
    assert {r["config"]["material"]["mu"] for r in runs} == {0.3, 0.5}
    (files / "sweep.toml").write_text("""
scenario = "scenario.toml"
combine = "zip"
[parameters]
"material.mu" = [0.3, 0.5]
"contact.law" = ["linear", "mindlin"]
""")
    _, runs = load_sweep(files / "sweep.toml")
    assert [(r["config"]["material"]["mu"], r["config"]["contact"]["law"]) for r in runs] == \
        [(0.3, "linear"), (0.5, "mindlin")]


@pytest.mark.parametrize("body, message", [
    ('[parameters]\n"material.mu" = [0.3]', "'scenario'"),
    ('scenario = "scenario.toml"\n[parameters]\n"material.muu" = [0.3]', "material.muu"),
    ('scenario = "scenario.toml"\n[parameters]\n"material.mu" = []', "at least one value"),
    ('scenario = "scenario.toml"\n[parameters]\n"material.mu" = [0.3, -1.0]', "run 1"),
    ('scenario = "scenario.toml"\n[parameters]\n"material.mu" = {start = 0.1, stop = 0.5}', "num"),
    ('scenario = "scenario.toml"\n[parameters]\n"material.E" = {start = 0, stop = 1e9, num = 3, spacing = "log"}',
     "log range"),
    ('scenario = "scenario.toml"\ncombine = "zip"\n[parameters]\n"material.mu" = [0.3]\n"contact.law" = ["a", "b"]',
     "one length"),
    ('scenario = "scenario.toml"\nworkers = 3\n[parameters]\n"material.mu" = [0.3]', "unknown key"),
    ('scenario = "scenario.toml"', "at least one scenario key"),
])
def test_bad_sweep_files_are_refused_before_any_run(files, body, message, capsys):
    (files / "sweep.toml").write_text(body)
    assert main(["sweep", str(files / "sweep.toml"), "--out", str(files / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (files / "out" / "runs").exists()


def test_dry_run_lists_the_runs(files, capsys):
    assert main(["sweep", str(files / "sweep.toml"), "--out", str(files / "out"), "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == ["0000: contact.law='mindlin'", "0001: contact.law='jaeger'"]

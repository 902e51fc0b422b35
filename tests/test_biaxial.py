"""Scenario `biaxial` through `graindem run`: control of the test, restart bit for bit, bad input.

References: the isotropic start (stress ratio 1 at the confining pressure), the lateral servo's
target at every output, and the uninterrupted run (a restart must repeat it exactly).
"""

import json
import shutil

import numpy as np
import pytest

from graindem.cli import main
from graindem.contact import state as S
from graindem.engine import checkpoint
from graindem.engine.cli import run_scenario
from graindem.io.scenario import validate_scenario
from graindem.io.timeseries import read_timeseries

CONFIG = {
    "simulation": {"scenario": "biaxial", "steps": 3000, "output_interval": 100, "seed": 4},
    "contact": {"law": "jaeger"},
    "particles": {"n": 100, "radius_mean": 1.5e-4},
    "loading": {"kind": "biaxial", "total_strain": 0.015, "preparation_mu": 0.1},
    "material": {"damping": 0.1},
    "output": {"vtk": True, "plots": False},
}


def _histories(sim):
    """Each live contact's history points, bottom-up (independent of point indices)."""
    return [sim.store.points(sim.pist[c, S.I_HEAD]) for c in range(int(sim.ictl[9]))]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    config = validate_scenario(CONFIG)
    summary = run_scenario(config, out, steps=600, quiet=True)
    return out, config, summary


def test_biaxial_run_holds_its_controls_and_writes_its_results(full_run):
    out, config, summary = full_run
    series = read_timeseries(out / "series.csv")
    # isotropic start at the confining pressure (the preparation's servo tolerance is 0.5 %)
    assert series["stress_ratio"][0] == pytest.approx(1.0, abs=0.02)
    assert series["stress_xx"][0] == pytest.approx(100e3, rel=0.01)
    # the lateral (x) stress follows the confining stress throughout, the y axis keeps zero strain
    np.testing.assert_allclose(series["stress_xx"], 100e3, rtol=0.03)
    assert np.all(series["stress_ratio"][1:] > 1.0)
    assert series["strain_axial"][-1] == pytest.approx(1.0 - (1.0 - 0.015) ** (600 / 3000), rel=1e-9)
    for name in ("summary.json", "checkpoint.h5", "series.json", "particles.pvd", "contacts.pvd"):
        assert (out / name).exists(), name
    s = json.loads((out / "summary.json").read_text())
    assert {"law", "n_particles", "steps", "peak_stress_ratio", "mean_contacts", "mean_history_length",
            "steps_per_s"} <= set(s)
    assert s["n_particles"] == 100 and s["steps"] == 600 and s["mean_history_length"] > 1.0


def test_restart_continues_bit_for_bit(full_run, tmp_path):
    out_full, config, _ = full_run
    shutil.copy(out_full / "packing.h5", tmp_path / "packing.h5")  # reuse the prepared packing
    run_scenario(config, tmp_path, steps=250, quiet=True)
    assert main(["run", "--restart", str(tmp_path / "checkpoint.h5"), "--out", str(tmp_path), "--steps", "350",
                 "--quiet"]) == 0
    a, _ = checkpoint.load(out_full / "checkpoint.h5")
    b, _ = checkpoint.load(tmp_path / "checkpoint.h5")
    assert a.step_count == b.step_count
    m = int(a.ictl[9])
    for name in ("pos", "vel", "omega", "quat", "cell", "acc", "pos_build", "pstart", "walls"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("pi", "pj", "pfs", "pcq"):
        assert np.array_equal(getattr(a, name)[:m], getattr(b, name)[:m]), name
    assert np.array_equal(a.pist[:m, S.I_LEN], b.pist[:m, S.I_LEN])
    assert _histories(a) == _histories(b)
    sa = read_timeseries(out_full / "series.csv")
    sb = read_timeseries(tmp_path / "series.csv")
    for key in sa:
        np.testing.assert_array_equal(sa[key][:7], sb[key][:7], err_msg=key)  # up to the output ~ the restart
        np.testing.assert_array_equal(sa[key][-1], sb[key][-1], err_msg=key)


def test_bad_scenarios_stop_before_running_with_the_cause(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[contact]\nlaw = "hooke"\n')
    assert main(["run", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "contact.law must be one of" in capsys.readouterr().err
    bad.write_text('[boundary]\nkind = "walls"\n')
    assert main(["run", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "boundary.kind must be 'periodic'" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["run", "--out", str(tmp_path / "o")]) == 2

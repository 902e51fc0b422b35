"""`graindem run` of a mixture (scenarios.mixed_pile): examples/mixed_pile.toml in a quick form, its
outputs, a restart continuing bit for bit (N + M steps in one run = N, then M after a restart:
identical checkpoint arrays), the spheres falling under gravity with the energy balance closing
(gravity's work = kinetic + contact energies + dissipation, to the leapfrog's half-step offset of
the spheres' kinetic energy, 1/steps of it in free fall), and bad mixtures refused before any work."""

import json
from pathlib import Path

import numpy as np
import pytest

from graindem.cli import main
from graindem.io.checkpoint import load_checkpoint
from graindem.io.scenario import validate_scenario

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mixed_pile.toml"


def test_example_runs_and_restarts_bit_for_bit(tmp_path):
    straight, first, second = tmp_path / "straight", tmp_path / "first", tmp_path / "second"
    assert main(["run", str(EXAMPLE), "--out", str(straight), "--steps", "600", "--quiet"]) == 0
    assert main(["run", str(EXAMPLE), "--out", str(first), "--steps", "400", "--quiet"]) == 0
    assert main(["run", "--restart", str(first / "checkpoint.h5"), "--out", str(second), "--steps", "200",
                 "--quiet"]) == 0
    summary = json.loads((straight / "summary.json").read_text())
    assert summary["n_particles"] == 76 and summary["kinds"] == {"sphere": 60, "levelset": 16}
    assert summary["steps"] == 600 and summary["steps_per_s"] > 0
    assert json.loads((second / "summary.json").read_text())["steps"] == 600
    a, _ = load_checkpoint(straight / "checkpoint.h5")
    b, _ = load_checkpoint(second / "checkpoint.h5")
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # the bodies fell: gravity worked, and what it did is kinetic, stored or dissipated energy
    assert summary["gravity_work"] > 0.0
    assert abs(summary["energy_balance_error"]) < 5e-3 * summary["gravity_work"]
    rows = (straight / "series.csv").read_text().splitlines()
    assert rows[0].startswith("step,time,kinetic_energy") and len(rows) == 2  # output_interval 500


def test_a_settling_mixture_touches_between_the_kinds(tmp_path):
    """A short, small pile: spheres land on grains (grain-sphere contacts) within the box."""
    text = EXAMPLE.read_text().replace("n = 60 ", "n = 12 ").replace("n = 16 ", "n = 4 ")
    scenario = tmp_path / "small.toml"
    scenario.write_text(text.replace("steps = 20000", "steps = 3000").replace("vtk_interval = 5000",
                                                                              "vtk_interval = 3000"))
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["kinds"] == {"sphere": 12, "levelset": 4}
    assert summary["n_sphere_grain_contacts"] > 0
    # the dampers' work is first order in the step, here 0.3 dt_crit with the grains' damping ratio
    # 0.3 (3e-2 measured); test_mixed_kinds checks that the balance converges with dt
    assert abs(summary["energy_balance_error"]) < 5e-2 * summary["gravity_work"]
    assert (tmp_path / "o" / "vtk" / "pile_00003000_surfaces.vtu").exists()


BASE = {"simulation": {"scenario": "pile"}, "particles": {"kind": "mixture", "n": 10},
        "grains": {"n": 3}, "boundary": {"kind": "walls"}}


@pytest.mark.parametrize("change, match", [
    (lambda c: c["grains"].pop("n"), "grains.n or grains.number_fraction"),
    (lambda c: c["grains"].update(number_fraction=0.2), "grains.n and grains.number_fraction cannot both"),
    (lambda c: c["boundary"].update(kind="periodic"), "boundary.kind must be 'walls'"),
    (lambda c: c["simulation"].update(scenario="biaxial"), "boundary.kind must be 'periodic' for a mixture's biaxial"),
    (lambda c: c["particles"].update(kind="sphere"), "grains.n applies to particles.kind = 'mixture'"),
    (lambda c: c["grains"].update(material=1), "grains.material = 1 is not defined"),
    (lambda c: c["grains"].update(size_ratio=0.0), "grains.size_ratio must be a number > 0"),
])
def test_bad_mixtures_are_refused(change, match):
    config = json.loads(json.dumps(BASE))
    change(config)
    with pytest.raises(ValueError, match=match):
        validate_scenario(config)


def test_bad_mixture_file_exits_with_status_2_before_any_work(tmp_path, capsys):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(EXAMPLE.read_text().replace('kind = "walls"', 'kind = "periodic"'))
    assert main(["run", str(scenario), "--out", str(tmp_path / "o")]) == 2
    assert "boundary.kind must be 'walls'" in capsys.readouterr().err
    assert not (tmp_path / "o" / "checkpoint.h5").exists()

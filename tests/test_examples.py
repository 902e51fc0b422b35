"""The examples in examples/ run, in a quick form, and give what their tutorials say.

References: the Mindlin–Deresiewicz closed form (single_contact.py), the ellipsoid's closed-form
volume and moments of inertia (levelset_grain.py), the uninterrupted run
(restart.py: a restart in a new process must end bit for bit where it ends), the scenario schema and
the biaxial test's controls (biaxial_jaeger.toml).
"""

import importlib.util
import json
from pathlib import Path

import pytest

from graindem.io.scenario import apply_overrides, load_scenario

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_single_contact_example_against_the_closed_form(tmp_path):
    example = _load("single_contact")
    one = example.run(steps_per_branch=1)
    ten = example.run(steps_per_branch=10)
    hundred = example.main(["--steps-per-branch", "100", "--plot", str(tmp_path / "loops.png")])
    assert (tmp_path / "loops.png").stat().st_size > 0
    for results in (one, ten, hundred):
        assert results["jaeger"][3] < 1e-12                     # exact at any step size
        for law in ("linear", "mindlin"):
            assert results[law][3] > 0.1                        # one stiffness cannot follow the loop
    # md_incremental converges at first order in the step: 10x the steps, ~10x smaller error
    ratio = ten["md_incremental"][3] / hundred["md_incremental"][3]
    assert 5.0 < ratio < 20.0


def test_restart_example_continues_bit_for_bit_in_a_new_process(tmp_path, capsys):
    example = _load("restart")
    assert example.main(["--steps", "150", "--more", "100", "--out", str(tmp_path)]) == 0
    assert "bit for bit" in capsys.readouterr().out
    assert (tmp_path / "checkpoint.h5").exists() and (tmp_path / "restarted.h5").exists()


def test_biaxial_example_scenario_runs_in_a_short_form(tmp_path):
    from graindem.engine.cli import run_scenario

    config = load_scenario(EXAMPLES / "biaxial_jaeger.toml")
    assert config["contact"]["law"] == "jaeger" and config["simulation"]["checkpoint_interval"] == 2000
    quick = apply_overrides(config, {"particles.n": 100, "simulation.output_interval": 50,
                                     "simulation.checkpoint_interval": 0, "output.plots": False})
    summary = run_scenario(quick, tmp_path, steps=100, quiet=True)
    assert summary["n_particles"] == 100
    assert json.loads((tmp_path / "summary.json").read_text())["law"] == "jaeger"
    for name in ("series.csv", "checkpoint.h5", "particles.pvd", "contacts.pvd"):
        assert (tmp_path / name).exists(), name


def test_levelset_grain_example_against_the_ellipsoid_closed_forms():
    pytest.importorskip("skimage")  # marching cubes for the surface nodes (extra 'levelset')
    example = _load("levelset_grain")
    grains = example.main(["--voxels-across", "12", "--nodes", "200"])
    bounds = {"analytic": (1e-3, 2.5e-3), "triangle mesh": (3.5e-3, 6e-3), "voxel image": (3e-2, 4e-2)}
    for name, grain in grains.items():
        volume_error, inertia_error = example.errors(grain)
        assert volume_error < bounds[name][0] and inertia_error < bounds[name][1], name
        assert grain.n_nodes == 200


BAD_ARGUMENTS = {"single_contact": ["--steps-per-branch", "0"], "restart": ["--steps", "0"],
                 "levelset_grain": ["--voxels-across", "3"]}


@pytest.mark.parametrize("name", sorted(BAD_ARGUMENTS))
def test_example_scripts_refuse_bad_arguments(name):
    with pytest.raises(SystemExit) as info:
        _load(name).main(BAD_ARGUMENTS[name])
    assert info.value.code == 2

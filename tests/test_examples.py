"""The examples in examples/ run, in a quick form, and give what their tutorials say.

References: the Mindlin–Deresiewicz closed form (single_contact.py), the ellipsoid's closed-form
volume and moments of inertia (levelset_grain.py), the uninterrupted run
(restart.py: a restart in a new process must end bit for bit where it ends), the scenario schema and
the biaxial test's controls (biaxial_jaeger.toml), the energy balance of the deformable grains' run
(deformable_grains.py: stored + dissipated = the piston's work), the sweep's cartesian product and the
same scenario run directly (sweep_friction.toml), the same run on one rank (parallel_box.py: 2 MPI
ranks must end bit for bit where one ends).
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from graindem.io.scenario import apply_overrides, load_scenario
from graindem.parallel.world import launcher

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


def test_deformable_grains_example_balances_energy_and_writes_its_files(tmp_path):
    pytest.importorskip("skfem")  # the FEM mode extraction (extra 'fem')
    example = _load("deformable_grains")
    result = example.main(["--mesh-size", "2", "--nodes", "100", "--steps", "6000", "--speed", "0.05",
                           "--out", str(tmp_path)])
    modes, rows, energies = result["modes"], result["rows"], result["energies"]
    # the FEM table: no force before contact, increasing with the indentation
    assert modes.force_eps[0] == 0 and np.all(np.diff(modes.force_table[:, 0]) > 0)
    # the piston's work is stored in the grains or dissipated, up to the time integration's error
    assert energies["wall_work"] > 50.0
    assert abs(energies["balance"]) < 2e-3 * energies["wall_work"]
    last = rows[-1]
    assert last["travel"] == pytest.approx(6000 * result["sim"].dt * 0.05, rel=1e-9)
    # every grain is compressed, and no more than the column's shortening allows
    assert 0 < last["eps_min"] and last["eps_max"] * 4.0 * example.R < last["travel"]
    assert (tmp_path / "compaction_modes.h5").exists() and (tmp_path / "grains_020_surfaces.vtu").exists()


def test_sweep_example_lists_its_runs_and_runs_one_in_a_short_form(tmp_path):
    from graindem.sweep import load_sweep, run_one

    _, runs = load_sweep(EXAMPLES / "sweep_friction.toml")
    combos = [(r["parameters"]["material.mu"], r["parameters"]["contact.law"]) for r in runs]
    assert sorted(combos) == sorted((mu, law) for mu in (0.3, 0.5, 0.7) for law in ("mindlin", "jaeger"))
    assert all(r["config"]["particles"]["n"] == 500 for r in runs)
    first = runs[0]
    quick = apply_overrides(first["config"], {"particles.n": 64, "simulation.output_interval": 50,
                                              "output.plots": False})
    status, _ = run_one(quick, tmp_path / "run", first["parameters"], steps=100)
    assert status == "done"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["law"] == first["parameters"]["contact.law"] and summary["n_particles"] == 64


@pytest.mark.skipif(launcher(2) is None, reason="no MPI launcher (mpiexec) with mpi4py in this environment: "
                    "pip install 'graindem[mpi]' installs both")
def test_parallel_example_on_two_ranks_equals_one_rank(tmp_path, capsys, monkeypatch):
    import graindem
    monkeypatch.setenv("PYTHONPATH", str(Path(graindem.__file__).resolve().parents[1]))  # the ranks' graindem
    assert _load("parallel_box").main(["--ranks", "2", "--n", "200", "--steps", "150", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "the run on 2 ranks equals the run on one rank bit for bit" in out
    assert (tmp_path / "ranks.h5").exists()


BAD_ARGUMENTS = {"single_contact": ["--steps-per-branch", "0"], "restart": ["--steps", "0"],
                 "levelset_grain": ["--voxels-across", "3"], "deformable_grains": ["--mesh-size", "9"],
                 "parallel_box": ["--ranks", "1"]}


@pytest.mark.parametrize("name", sorted(BAD_ARGUMENTS))
def test_example_scripts_refuse_bad_arguments(name):
    with pytest.raises(SystemExit) as info:
        _load(name).main(BAD_ARGUMENTS[name])
    assert info.value.code == 2


def test_compaction_modes_example_extracts_a_mode_in_a_short_form(tmp_path):
    """examples/compaction_modes.toml, checked as `graindem modes extract` checks it, extracted with a
    coarse mesh (R/4 at the poles) at two load levels of the seed's Appendix B table: the wall force
    within 10 % of the table (the full mesh is within 2 %, docs/deformable-status.md) and the mode file
    read back."""
    pytest.importorskip("skfem")  # the FEM mode extraction (extra 'fem')
    from graindem.fem import read_mode_file, write_mode_file
    import tomllib

    from graindem.fem.cli import check_config, extract
    from graindem.fem.compaction import SEED_TABLE_EPS, SEED_TABLE_FORCE

    cfg = check_config(tomllib.loads((EXAMPLES / "compaction_modes.toml").read_text()))
    short = {**cfg, "mesh_size": 2.5, "eps": [0.014, 0.0365], "mode_eps": 0.0365}
    modes, summary, curves = extract(short, progress=False)
    table = np.interp(curves["eps"], SEED_TABLE_EPS, SEED_TABLE_FORCE)
    assert np.all(np.abs(curves["wall_force"] / table - 1.0) < 0.10), curves["wall_force"] / table
    write_mode_file(tmp_path / "compaction.h5", modes)
    back = read_mode_file(tmp_path / "compaction.h5")
    assert back.mode_names == modes.mode_names and back.surface is not None
    np.testing.assert_array_equal(back.stiffness, modes.stiffness)
    assert summary["modal_stiffness"][0][0] > 0

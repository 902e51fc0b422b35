"""`graindem run` with level-set grains: scenario keys, the example file, outputs and restarts.

References: (1) the uninterrupted run -- N + M steps in one run and N steps, then M more after
`graindem run --restart` in a new process, give identical checkpoint arrays; (2) the scenario
schema's ranges (bad input is refused naming the key); (3) the example file's contract (>= 200
non-spherical grains of >= 100 nodes, a periodic cell, isotropic preparation, >= 2 % strain).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graindem.engine.cli import run_scenario
from graindem.io.checkpoint import load_checkpoint
from graindem.io.scenario import apply_overrides, load_scenario, validate_scenario

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "levelset_biaxial.toml"

TINY = """
[simulation]
steps = 400
output_interval = 10
seed = 3
[material]
density = 2650.0
mu = 0.5
[particles]
kind = "levelset"
n = 64
radius_mean = 1e-3
radius_spread = 0.2
[grains]
shapes = ["ellipsoid", "superquadric"]
fractions = [0.25, 0.75]
nodes = 100
grid_cells = 4
size_classes = 1
preparation_steps = 600
[loading]
total_strain = 0.02
preparation_mu = 0.1
[output]
plots = false
"""


def _grain_arrays(path):
    arrays, meta = load_checkpoint(path)
    return {k: v for k, v in arrays.items() if k.startswith("grain_") or k in ("cell", "ctl", "acc", "walls")}, meta


HERTZ = """
[contact]
shape_law = "hertz_curvature"
law = "jaeger"
shape_radius_rule = "elliptic"
shape_curvature_limit = 5.0
"""


@pytest.mark.parametrize("contact", ["", HERTZ], ids=["area", "hertz_curvature"])
def test_restart_of_a_grain_run_in_a_new_process_continues_bit_for_bit(tmp_path, contact):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY + contact)
    config = load_scenario(scenario)
    whole = run_scenario(config, tmp_path / "whole", steps=40, quiet=True)
    assert whole["kinds"] == {"levelset": 64} and whole["n_particles"] == 64
    (tmp_path / "half").mkdir()
    shutil.copy(tmp_path / "whole" / "packing.h5", tmp_path / "half" / "packing.h5")  # the same prepared grains
    run_scenario(config, tmp_path / "half", steps=20, quiet=True)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    done = subprocess.run([sys.executable, "-m", "graindem.cli", "run", "--restart", str(tmp_path / "half" / "checkpoint.h5"),
                           "--out", str(tmp_path / "more"), "--steps", "20", "--quiet"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    a, meta_a = _grain_arrays(tmp_path / "whole" / "checkpoint.h5")
    b, meta_b = _grain_arrays(tmp_path / "more" / "checkpoint.h5")
    assert a.keys() == b.keys() and "grain_shear" in a
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert int(a["grain_gctl"][0]) == int(meta_a["extra"]["biaxial"]["start_step"]) + 40
    # the law the scenario asked for is the one that ran (its rows are in the checkpoint)
    assert ("grain_hertz_pfs" in a) == bool(contact)
    if contact:
        assert meta_a["grain_contact"]["law"] == "hertz_curvature"
        assert meta_a["grain_contact"]["curvature_limit"] == 5.0 and meta_a["grain_contact"]["tangential"] == "jaeger"
        assert np.count_nonzero(a["grain_hertz_pfs"][:, 0] > 0.0) > 0  # touching rows
    # the run has contacts and the servo holds the lateral stress near its target
    summary = json.loads((tmp_path / "more" / "summary.json").read_text())
    assert summary["kinds"] == {"levelset": 64} and summary["steps_per_s"] > 0
    for name in ("grains.pvd", "contacts.pvd", "series.csv"):
        assert (tmp_path / "whole" / name).exists(), name
    assert any((tmp_path / "more" / "vtk").glob("grains_*.vtu"))


def test_the_example_file_meets_its_contract_and_runs_in_a_short_form(tmp_path):
    from graindem.scenarios.levelset_biaxial import build_templates

    config = load_scenario(EXAMPLE)
    part, g, load = config["particles"], config["grains"], config["loading"]
    assert part["kind"] == "levelset" and part["n"] >= 200 and load["total_strain"] >= 0.02
    assert config["boundary"]["kind"] == "periodic" and load["kind"] == "biaxial"
    templates, _ = build_templates(g, np.array([0.9e-3, 1.0e-3, 1.1e-3]))
    for shape, radius, t in templates:
        assert t.n_nodes >= 100, shape
        # non-spherical: principal moments differ by more than 10 %
        assert t.principal_inertia.max() > 1.1 * t.principal_inertia.min(), shape
    quick = apply_overrides(config, {"particles.n": 216, "grains.preparation_steps": 20,
                                     "simulation.output_interval": 5, "simulation.vtk_interval": 5,
                                     "output.plots": False})
    summary = run_scenario(quick, tmp_path, steps=10, quiet=True)
    assert summary["kinds"] == {"levelset": 216}
    for name in ("summary.json", "checkpoint.h5", "grains.pvd", "contacts.pvd"):
        assert (tmp_path / name).exists(), name
    assert set(json.loads((tmp_path / "summary.json").read_text())) >= {"n_particles", "kinds", "peak_stress_ratio",
                                                                         "steps_per_s"}


@pytest.mark.parametrize("change, message", [
    ({"grains": {"shapes": ["ellipsiod"]}}, "grains.shapes[0] must be one of"),
    ({"grains": {"shapes": ["mesh"]}}, "grains.mesh_file is required"),
    ({"grains": {"shapes": ["ellipsoid", "superquadric"], "fractions": [1.0]}}, "grains.fractions must give one"),
    ({"grains": {"nodes": 5}}, "grains.nodes must be"),
    ({"particles": {"kind": "sphere"}, "grains": {"nodes": 300, "law": "node"}}, None),
    ({"contact": {"shape_law": "hertz"}}, "contact.shape_law must be one of 'area', 'hertz_curvature'"),
    ({"contact": {"shape_law": "hertz_curvature", "shape_radius_rule": "max"}}, "contact.shape_radius_rule must be one of"),
    ({"contact": {"shape_law": "hertz_curvature", "shape_curvature_limit": 0.0}},
     "contact.shape_curvature_limit must be a number > 0 and <= 1000"),
])
def test_grain_scenario_keys_are_checked(change, message):
    data = {"particles": {"kind": "levelset", "n": 64}}
    for section, keys in change.items():
        data.setdefault(section, {}).update(keys)
    if message is None:
        validate_scenario(data)  # a sphere scenario may carry [grains] keys for later; `graindem run` refuses them
        return
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate_scenario(data)


@pytest.mark.parametrize("contact, grains, key", [
    ({"shape_law": "hertz_curvature"}, {"stiffness": 1e9}, "grains.stiffness"),
    ({"shape_law": "hertz_curvature"}, {"law": "node"}, "grains.law"),
    ({"shape_curvature_limit": 3.0}, {}, "contact.shape_curvature_limit"),
    ({"shape_law": "area", "law": "mindlin"}, {}, "contact.law"),
])
def test_grain_contact_keys_of_the_other_law_are_refused(contact, grains, key):
    from graindem.io.scenario import refuse_unused_keys

    config = validate_scenario({"particles": {"kind": "levelset", "n": 64}, "contact": contact, "grains": grains})
    with pytest.raises(ValueError, match=key.replace(".", r"\.") + ".* has no effect"):
        refuse_unused_keys(config)
    sphere = validate_scenario({"contact": {"shape_law": "hertz_curvature"}})
    with pytest.raises(ValueError, match=r"contact\.shape_law .* has no effect"):
        refuse_unused_keys(sphere)


def test_mesh_and_voxel_shapes_are_scaled_to_the_grain_sizes(tmp_path):
    """A mesh file and a voxel image as grain shapes: each size class's template has the class's
    size as its bounding radius (to the node sampling, 3 %) and the volume of the input scaled by
    (size / unit bounding radius)^3."""
    import meshio

    from graindem.particles import LevelSetGrain
    from graindem.scenarios.levelset_biaxial import build_templates

    source = LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=200)
    meshio.write(tmp_path / "grain.stl", meshio.Mesh(source.surface_vertices, [("triangle", source.surface_faces)]))
    x, y, z = np.mgrid[-12:13, -12:13, -12:13]
    np.save(tmp_path / "grain.npy", (x / 11.0) ** 2 + (y / 8.0) ** 2 + (z / 6.0) ** 2 <= 1.0)
    config = validate_scenario({"particles": {"kind": "levelset", "n": 64},
                                "grains": {"shapes": ["mesh", "voxel"], "mesh_file": str(tmp_path / "grain.stl"),
                                           "voxel_file": str(tmp_path / "grain.npy"), "nodes": 150,
                                           "size_classes": 2}})
    radii = np.array([0.8e-3, 1.2e-3])
    templates, which = build_templates(config["grains"], radii)
    assert [s for s, _, _ in templates] == ["mesh", "mesh", "voxel", "voxel"] and list(which) == [0, 1]
    for shape, r, t in templates:
        assert t.bounding_radius == pytest.approx(r, rel=0.03), shape
    for k in (0, 2):
        (_, r0, t0), (_, r1, t1) = templates[k], templates[k + 1]
        assert t1.volume / t0.volume == pytest.approx((r1 / r0) ** 3, rel=0.03)
    bad = dict(config["grains"], voxel_file=str(tmp_path / "missing.npy"))
    with pytest.raises(ValueError, match="grains.voxel_file"):
        build_templates(bad, radii)

"""`graindem run` of deformable grains (scenarios.deformable_compaction): outputs, restart bit for bit,
the periodic cell under the stress servo, bad input refused before any work."""

import json

import numpy as np
import pytest

from graindem.cli import main
from graindem.io.checkpoint import load_checkpoint

SMALL = """
[simulation]
scenario = "deformable_compaction"
steps = 40
output_interval = 10
[grains]
n_side = 2
nodes = 100
jitter = 0.0
[loading]
wall_speed = 2.0
"""


def assert_same_checkpoint_arrays(one, other):
    """The arrays of one/checkpoint.h5 and other/checkpoint.h5 are identical; returns the first's."""
    a, _ = load_checkpoint(one / "checkpoint.h5")
    b, _ = load_checkpoint(other / "checkpoint.h5")
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    return a


@pytest.mark.parametrize("boundary", ["walls", "oedometer"])
def test_run_and_restart_continue_bit_for_bit(tmp_path, boundary):
    scenario = tmp_path / "small.toml"
    scenario.write_text(SMALL + f"boundary = '{boundary}'\n")
    straight, first, second = tmp_path / "straight", tmp_path / "first", tmp_path / "second"
    assert main(["run", str(scenario), "--out", str(straight), "--quiet"]) == 0
    assert main(["run", str(scenario), "--out", str(first), "--steps", "20", "--quiet"]) == 0
    assert main(["run", "--restart", str(first / "checkpoint.h5"), "--out", str(second), "--steps", "20",
                 "--quiet"]) == 0
    summary = json.loads((straight / "summary.json").read_text())
    assert summary["n_particles"] == 8 and summary["kinds"] == {"deformable": 8} and summary["steps"] == 40
    assert summary["steps_per_s"] > 0 and summary["eps_max"] > 0   # the walls reached the grains
    if boundary == "oedometer":   # the lid's target: stress x the box's face
        assert summary["lid_target"] == pytest.approx(1.0 * (2 * 2 * 10.0) ** 2) and summary["lid_force"] >= 0
    assert json.loads((second / "summary.json").read_text())["steps"] == 40
    a = assert_same_checkpoint_arrays(straight, second)
    rows = (straight / "series.csv").read_text().splitlines()
    assert rows[0].startswith("step,time,wall_force") and len(rows) == 5
    if boundary == "oedometer":   # the lid moves under its servo (boundaries.walls), the other walls stay
        from graindem.boundaries.walls import WALL_MODE, WALL_SERVO
        from graindem.scenarios.deformable_compaction import LID
        walls = a["walls"]
        assert walls[LID, WALL_MODE] == WALL_SERVO and walls[LID, 8] != 0.0
        assert np.all(np.delete(walls[:, 6:9], LID, axis=0) == 0.0)


@pytest.mark.parametrize("text, match", [("[grains]\nn_side = 1", "grains.n_side"),
                                         ("[grains]\nn_side = 2\n[loading]\nboundary = 'servo'", "grains.n_side"),
                                         ("[loading]\nboundary = 'cell'", "loading.boundary"),
                                         ("[loading]\nwall_servo_gain = -1.0", "loading.wall_servo_gain"),
                                         ("[grains]\nnodez = 100", "unknown key grains.nodez"),
                                         ("[contact]\npullback = 'cell'", "contact.pullback")])
def test_bad_scenario_is_refused(tmp_path, capsys, text, match):
    scenario = tmp_path / "bad.toml"
    scenario.write_text("[simulation]\nscenario = 'deformable_compaction'\n" + text)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o")]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o" / "checkpoint.h5").exists()


def test_example_file_validates_and_runs_a_few_steps(tmp_path):
    from pathlib import Path

    from graindem.scenarios import deformable_compaction

    example = Path(__file__).resolve().parents[1] / "examples" / "deformable_compaction.toml"
    config = deformable_compaction.load(example)
    assert config["grains"]["n_side"] ** 3 >= 27
    summary = deformable_compaction.run_file(example, tmp_path, steps=3, quiet=True)
    assert summary["kinds"] == {"deformable": 27} and (tmp_path / "checkpoint.h5").exists()


SERVO = """
[simulation]
scenario = "deformable_compaction"
steps = 40
output_interval = 20
[grains]
n_side = 3
nodes = 100
[loading]
boundary = "servo"
stress = 1.0
servo_gain = 0.01
max_strain_rate = 0.002
"""


def test_servo_boundary_compresses_a_periodic_cell(tmp_path):
    """No walls: a periodic cell of the lattice's size whose axes the servo shrinks at its largest rate
    while the loose lattice carries no stress yet: L = L0 (1 - rate dt)^steps."""
    scenario = tmp_path / "servo.toml"
    scenario.write_text(SERVO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["kinds"] == {"deformable": 27} and summary["wall_force"] is None
    assert summary["stress"] == 0.0
    side = 3 * 2 * (10.0 + 0.2)     # n_side diameters plus the default jitter's clearance
    np.testing.assert_allclose(summary["box_lengths"], side * (1.0 - 0.002 * summary["dt"]) ** 40, rtol=1e-12)
    assert summary["energies"]["cell_work"] == 0.0
    rows = (tmp_path / "o" / "series.csv").read_text().splitlines()
    assert rows[0].endswith(",stress") and len(rows) == 3


BIAXIAL = """
[simulation]
steps = 40
output_interval = 10
vtk_interval = 40
seed = 1
[material]
E = 10e6
nu = 0.3
density = 1000.0
[particles]
kind = "deformable"
n = 64
radius_mean = 1e-3
radius_spread = 0.1
[deformable]
nodes = 50
[grains]
size_classes = 1
preparation_steps = 4000
[loading]
kind = "biaxial"
total_strain = 0.002
preparation_mu = 0.3
[output]
plots = false
"""


def test_deformable_biaxial_run_restarts_bit_for_bit_after_the_servo_reached_its_target(tmp_path):
    """particles.kind = 'deformable' in the main schema: 64 grains prepared isotropically under the
    cell's servo (the packing cached in packing.h5 and reused by the second run), then 40 steps of
    the biaxial test in one run, and 20 + 20 across a restart."""
    import shutil

    from graindem.engine import checkpoint
    from graindem.scenarios.levelset_biaxial import PRESSURE_TOLERANCE

    scenario = tmp_path / "biaxial.toml"
    scenario.write_text(BIAXIAL)
    straight, first, second = tmp_path / "straight", tmp_path / "first", tmp_path / "second"
    assert main(["run", str(scenario), "--out", str(straight), "--quiet"]) == 0
    # the isotropic stage ended settled at the servo's target (the reference), within its tolerance
    prepared, extra = checkpoint.load(straight / "packing.h5")
    assert extra["settled"]
    assert prepared.measure()["pressure"] == pytest.approx(100e3, rel=PRESSURE_TOLERANCE)
    first.mkdir()
    shutil.copy(straight / "packing.h5", first / "packing.h5")
    assert main(["run", str(scenario), "--out", str(first), "--steps", "20", "--quiet"]) == 0
    assert main(["run", "--restart", str(first / "checkpoint.h5"), "--out", str(second), "--steps", "20",
                 "--quiet"]) == 0
    summary = json.loads((straight / "summary.json").read_text())
    assert summary["n_particles"] == 64 and summary["kinds"] == {"deformable": 64} and summary["steps"] == 40
    assert summary["peak_stress_ratio"] > 1.2 and summary["steps_per_s"] > 0   # the axial stress rose
    assert json.loads((second / "summary.json").read_text())["steps"] == 40
    a = assert_same_checkpoint_arrays(straight, second)
    # prepared at loading.preparation_mu, tested at material.mu (its default)
    assert np.all(prepared.deformable.mu_tab == 0.5) and np.all(a["deform_mu_tab"] == 0.5)
    rows = (straight / "series.csv").read_text().splitlines()
    assert len(rows) == 6
    # the deformed surfaces, also after the restart (their meshes are part of the checkpoint)
    for out in (straight, second):
        assert (out / "vtk" / "grains_000040.vtu").stat().st_size > 0
        assert (out / "vtk" / "contacts_000040.vtu").exists()


@pytest.mark.parametrize("changes, match", [
    ([("n = 64", "n = 27")], "particles.n must be >= 64"),
    ([("nodes = 50", "nodes = 3")], "deformable.nodes"),
    ([("nodes = 50", "nodes = 50\npullback = 'cell'")], "deformable.pullback"),
    ([("density = 1000.0", "density = 1000.0\ndamping = 0.1")], "material.damping"),
    ([("size_classes = 1", "size_classes = 1\nshapes = ['superquadric']")], "grains.shapes"),
    ([("kind = \"deformable\"", "kind = \"sphere\""), ("size_classes = 1\npreparation_steps = 4000\n", "")],
     "deformable.nodes = 50 has no effect"),
])
def test_bad_deformable_biaxial_scenario_is_refused(tmp_path, capsys, changes, match):
    text = BIAXIAL
    for old, new in changes:
        text = text.replace(old, new)
    scenario = tmp_path / "bad.toml"
    scenario.write_text(text)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o")]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o" / "packing.h5").exists()


def test_modal_mass_and_stiffness_of_the_scaled_sphere_against_the_closed_form_mode():
    """The template's modal mass and stiffness (quadrature over the level set, deformable_biaxial)
    against the integrals of the stand-in mode Phi_i = -R (a x_i + (1 - a) x_i^5), x = X / R, over the
    ball by Gauss-Legendre in r and cos(theta) and the trapezoid rule in phi (exact for this
    polynomial): M = rho R^5 int |Phi/R|^2, K = R^3 int lambda (tr E)^2 + 2 mu E:E, E = diag(a + 5 (1 - a) x_i^4)."""
    from graindem.deform.scenes import compaction_sphere
    from graindem.scenarios.deformable_biaxial import modal_matrices

    R, rho, E, nu, a = 1e-3, 1000.0, 10e6, 0.3, 0.5
    tpl = compaction_sphere(radius=R, n_nodes=50, surface_vertices=100, progress=False)
    M, K, _ = modal_matrices(tpl, R, rho, E, nu, 0.2)
    r, wr = np.polynomial.legendre.leggauss(12)
    r, wr = 0.5 * (r + 1.0), 0.5 * wr
    c, wc = np.polynomial.legendre.leggauss(12)
    ph = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False)
    rr, cc, pp = np.meshgrid(r, c, ph, indexing="ij")
    w = np.einsum("i,j,k->ijk", wr * r ** 2, wc, np.full(24, 2.0 * np.pi / 24))
    s = np.sqrt(1.0 - cc ** 2)
    x = np.stack([rr * s * np.cos(pp), rr * s * np.sin(pp), rr * cc])
    lam, mu = E * nu / ((1 + nu) * (1 - 2 * nu)), E / (2 * (1 + nu))
    m_ref = rho * R ** 5 * np.sum(w * np.sum((a * x + (1 - a) * x ** 5) ** 2, axis=0))
    e = a + 5 * (1 - a) * x ** 4
    k_ref = R ** 3 * np.sum(w * (lam * np.sum(e, axis=0) ** 2 + 2 * mu * np.sum(e ** 2, axis=0)))
    # the smoothed-Heaviside quadrature at 40 points per radius
    assert M[0, 0] == pytest.approx(m_ref, rel=0.02) and K[0, 0] == pytest.approx(k_ref, rel=0.03)

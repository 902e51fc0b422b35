"""Runs of spheres and level-set grains: in the deforming periodic cell with either grain law, and
the "hertz_curvature" law's own checks (one file, so that one test process compiles the mixed
Hertz step).

In the deforming cell (bodies.mixed), the grains touching by the node law ("area") and by the
Hertz-curvature law (bodies.mixed_hertz; its tangential law Jäger's), each check made for both.
References: (1) translation invariance in a sheared and compressed cell -- a grain-sphere pair in
contact across the faces of the tilted cell feels the forces of the same pair in the middle (the
minimum image through the tilted cell; the affine flow adds the same velocity to both bodies), to
1e-9 of the force scale; (2) Love-Weber stress of one grain-sphere pair = (force on the sphere) x
(branch vector from the grain's centre to the sphere's) / V, from the bodies' own forces; (3) energy
conservation: kinetic + contact energy + dissipation - work of the cell stays constant up to the
time-integration error, which falls with the step; (4) the one stress servo, fed by both kinds'
contacts, holds the cell at its target stress; (5) a run continued from an HDF5 checkpoint equals
the uninterrupted run bit for bit.

The Hertz-curvature law in mixed runs (bodies.mixed_hertz, engine.mixed_hertz_loop).

References: (1) Hertz's elliptical contact (Johnson, Contact Mechanics §4.2, with the elliptic
integrals, contact.shape_references.hertz_elliptic): a sphere particle pressed on the tip of a fixed
ellipsoid grain (exact signed distance) at a known overlap, relative curvatures the ellipsoid's tip
curvatures plus 1/R in both directions, B/A = 2; (2) the sphere engine's own sphere-sphere
contact: an oblique collision with spins of a sphere particle on a level-set sphere grain (h = R/12)
against the same collision of two sphere particles, normal and tangential force along the history
(Jäger's law); (3) the energy balance: the work of gravity equals the change of
kinetic energy plus what the contacts store and dissipate, each contact kind by its own code;
(4) a run continued from a checkpoint equals the uninterrupted run bit for bit.
"""

import json
from pathlib import Path

import numba
import numpy as np
import pytest

from graindem.bodies.mixed import MC_NCONTACTS
from graindem.cli import main
from graindem.engine import Simulation, checkpoint
from graindem.engine.loop import run_steps
from graindem.io.checkpoint import load_checkpoint
from graindem.particles import LevelSetGrain
from graindem.verification.mixed_scenes import (CELL_SIZE as L, balance_tolerance, force_on_small, oblique_collision,
                                               sheared_cell, sheared_pair, sphere_on_ellipsoid_tip, walled_box)


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=400)


@pytest.fixture(params=["area", "hertz_curvature"])
def law(request):
    return request.param


def test_grain_sphere_pair_across_the_faces_of_a_sheared_cell_feels_the_forces_of_the_middle(ellipsoid, law):
    middle = sheared_pair(ellipsoid, (3.0, 2.5, 3.0), law)
    middle.run(30)
    assert middle.mixed.mctl[MC_NCONTACTS] == 1, "the pair must be in contact"
    assert middle.cell_matrix[1, 0] > 0.14 * L, "the cell must have tilted"
    assert middle.box_lengths[2] < 0.95 * L, "the cell must have shrunk along z"
    # the same pair shifted so that its contact lies across the y face (where the image moves by the
    # tilt: Lees-Edwards) and across the x and z faces
    across = sheared_pair(ellipsoid, np.array((3.0, 2.5, 3.0)) + (-3.4, 3.4, 3.35), law)
    across.run(30)
    assert across.grains.pos[0, 1] > 0.0 and across.pos[0, 1] < L  # both wrapped into the cell
    scale = np.abs(middle.force).max()
    assert scale > 0.0
    for a, b in ((across.force, middle.force), (across.torque, middle.torque),
                 (across.grains.force, middle.grains.force), (across.grains.torque, middle.grains.torque)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(across.stress(), middle.stress(), rtol=0, atol=1e-9 * np.abs(middle.stress()).max())


def test_stress_of_one_grain_sphere_pair_is_its_force_times_its_branch(ellipsoid, law):
    sim = sheared_pair(ellipsoid, (6.2, 6.0, 3.0), law)  # the sphere lies across the y face
    sim.run(15)
    assert sim.mixed.mctl[MC_NCONTACTS] == 1
    d = sim.pos[0] - sim.grains.pos[0]
    h = sim.cell_matrix
    frac = np.linalg.solve(h.T, d)  # the minimum image through the cell's vectors (rows of h)
    d = d - h.T @ np.round(frac)
    expected = np.outer(sim.force[0], d) / sim.volume
    np.testing.assert_allclose(sim.stress(), expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert np.trace(sim.stress()) > 0.0, "a repulsive contact is compressive (positive)"


def test_energy_balance_of_a_mixed_run_in_a_deforming_cell_closes(ellipsoid, law):
    """The cell's work (the servo's book of -V sigma : L dt over every contact, of both kinds) is
    what the balance needs: at dt the error is below 3e-3 of the largest term (the tolerance of
    grains alone, test_levelset_cell) and it falls with the step (first order: the dampers' work is
    taken at the step's velocity, the spheres' kinetic energy at their half step). The cell's work
    and every kind pair's dissipation exceed that tolerance, so leaving any of them out fails it."""
    runs = {}
    for dt in (5e-4, 1.25e-4):
        sim = sheared_cell(ellipsoid, dt, law)
        sim.run(int(round(2.0 / dt)))
        runs[dt] = sim.measure()
    m = runs[1.25e-4]
    by_kind = m["contact_energies"]
    terms = [m["kinetic_energy"], m["elastic_normal_energy"], m["tangential_energy"], m["frictional_dissipation"],
             m["viscous_dissipation"], m["boundary_work"]]
    tol = 3e-3 * max(abs(t) for t in terms)
    assert abs(m["energy_balance_error"]) < tol, (m["energy_balance_error"], tol)
    assert abs(m["energy_balance_error"]) < 0.5 * abs(runs[5e-4]["energy_balance_error"])
    assert abs(m["boundary_work"]) > 10 * tol, "the cell must work"
    for kind in ("sphere", "grain", "grain-sphere"):
        assert by_kind[kind]["viscous_dissipation"] > tol, (kind, by_kind[kind])


def test_mixed_run_in_a_sheared_servo_cell_restarts_bit_for_bit(ellipsoid, law, tmp_path):
    def start():
        sim = sheared_cell(ellipsoid, 2e-3, law)
        sim.control_axis(1, stress=5.0, gain=0.5, max_rate=0.5)  # the servo on y, on both kinds' stress
        return sim
    ref = start()
    ref.run(400)
    ref.run(200)
    sim = start()
    sim.run(400)
    checkpoint.save(sim, tmp_path / "cell.h5")
    back, _ = checkpoint.load(tmp_path / "cell.h5", for_restart=True)
    back.run(200)
    a, _ = ref.state_dict()
    b, _ = back.state_dict()
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)
    assert ref.cell_matrix[1, 0] != 0.0 and ref.box_lengths[1] != L, "the cell must have sheared and moved on y"
    if law == "hertz_curvature":
        assert "sg_hertz_fs" in a and "grain_hertz_pfs" in a, "the checkpoint must hold the Hertz rows"


def test_the_sphere_step_of_a_mixed_run_shares_the_sphere_runs_compiled_loop(ellipsoid):
    """A mixed step calls the sphere loop (engine.loop.run_steps) with the argument types of a sphere
    run, the Simulation's stress accumulator included, so that both run one compiled variant."""
    spheres = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=1e-3)
    spheres.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    spheres.add_particles([(1.0, 1.0, 1.0), (2.05, 1.0, 1.0)], 0.5)
    spheres.run(1)  # a call from Python: run_steps lists the signature it compiled or loaded
    mixed = sheared_pair(ellipsoid, (3.0, 2.5, 3.0), "area")
    mixed.run(1)
    called = tuple(numba.typeof(a) for a in (1,) + mixed._sphere_args())
    assert called in run_steps.signatures, (called, run_steps.signatures)


E, NU = 1e5, 0.3

MIXED_PILE_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mixed_pile.toml"


@pytest.fixture(scope="module")
def hertz_ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=300)


def test_sphere_on_an_ellipsoid_tip_matches_hertz_elliptical_contact():
    """A sphere of radius 2 on the x tip of the hertz_ellipsoid (1, 2, 1): tip radii 4 and 1."""
    for delta in (1e-3, 1e-2):
        sim, P = sphere_on_ellipsoid_tip(delta, E, NU)
        f = sim.force[0]  # the grain-sphere force on the sphere at the start
        assert abs(f[0] / P - 1.0) < 0.03, (delta, f[0], P)
        assert np.hypot(f[1], f[2]) < 1e-3 * P  # along the common normal, the x axis
        np.testing.assert_allclose(sim.grains.force[0], -f, rtol=1e-12)


def test_sphere_on_a_level_set_sphere_matches_the_sphere_engine():
    R_big, R_small = 1.0, 0.5
    grain = LevelSetGrain.sphere(R_big, spacing=R_big / 12)
    runs = {"grain": oblique_collision(grain, R_big, R_small, E, NU),
            "sphere": oblique_collision(None, R_big, R_small, E, NU)}
    hist = {k: [] for k in runs}
    for k, sim in runs.items():
        sim.run(3500, callback=lambda s, k=k: hist[k].append(force_on_small(s)), every=1)
    # a mixed step ends with the grain-sphere forces at the drifted positions, the sphere loop's
    # step starts with its forces at the positions it drifts from: step k of the first is step
    # k + 1 of the second
    hist["grain"] = hist["grain"][:-1]
    hist["sphere"] = hist["sphere"][1:]
    fn = {k: np.array([h[0] for h in v]) for k, v in hist.items()}
    ft = {k: np.array([h[1] for h in v]) for k, v in hist.items()}
    n_max = np.linalg.norm(fn["sphere"], axis=1).max()
    t_max = np.linalg.norm(ft["sphere"], axis=1).max()
    assert n_max > 0 and t_max > 0.05 * n_max, "the collision must load both directions"
    assert np.linalg.norm(fn["sphere"][-1]) == 0.0, "the bodies must have separated"
    assert np.abs(np.linalg.norm(fn["grain"] - fn["sphere"], axis=1)).max() < 0.01 * n_max
    assert np.abs(np.linalg.norm(ft["grain"] - ft["sphere"], axis=1)).max() < 0.01 * t_max
    np.testing.assert_allclose(runs["grain"].vel[0], runs["sphere"].vel[1], rtol=0, atol=0.003 * 0.6)


def balance_run(hertz_ellipsoid, dt):
    """1.5 s of walled_box at time step dt: (measure() at the end, grain-sphere contact steps)."""
    sim = walled_box(hertz_ellipsoid, dt, "hertz_curvature")
    touched = []
    sim.run(int(round(1.5 / dt)), callback=lambda s: touched.append(int(s.mixed.mctl[MC_NCONTACTS])), every=10)
    return sim.measure(), sum(touched)


def test_energy_balance_of_a_mixed_hertz_run_closes(hertz_ellipsoid):
    """The error falls in proportion to the step (first order: the dampers' work is taken at the
    step's velocity, the spheres' kinetic energy at their half step), so it is the integrator's;
    at dt = 3.1e-5 it is below 3e-3 of the largest term. Every dissipation of the grain-sphere
    contacts exceeds that tolerance, so leaving it out of the balance would fail it."""
    coarse, _ = balance_run(hertz_ellipsoid, 1.25e-4)
    m, touched = balance_run(hertz_ellipsoid, 3.125e-5)
    assert touched > 20, "the spheres must have touched the grains"
    by_kind = m["contact_energies"]
    tol = balance_tolerance(m)
    assert abs(m["energy_balance_error"]) < tol, (m["energy_balance_error"], tol)
    assert abs(m["energy_balance_error"]) < 0.35 * abs(coarse["energy_balance_error"])
    assert m["gravity_work"] > tol
    gs = by_kind["grain-sphere"]
    assert gs["frictional_dissipation"] > tol and gs["viscous_dissipation"] > tol, gs
    assert m["frictional_dissipation"] == pytest.approx(sum(e["frictional_dissipation"] for e in by_kind.values()))


def test_mixed_hertz_run_restarts_bit_for_bit(hertz_ellipsoid, tmp_path):
    ref = walled_box(hertz_ellipsoid, 1.25e-4, "hertz_curvature")
    ref.run(6000)
    ref.run(1200)
    sim = walled_box(hertz_ellipsoid, 1.25e-4, "hertz_curvature")
    sim.run(6000)
    assert sim.measure()["n_sphere_grain_contacts"] > 0, "the checkpoint must hold grain-sphere rows in use"
    checkpoint.save(sim, tmp_path / "mixed.h5")
    back, _ = checkpoint.load(tmp_path / "mixed.h5", for_restart=True)
    back.run(1200)
    a, _ = ref.state_dict()
    b, meta = back.state_dict()
    assert meta["bodies"] == "mixed" and set(a) == set(b) and "sg_hertz_fs" in a
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)


def test_bad_grain_sphere_rows_in_a_checkpoint_are_named(hertz_ellipsoid, tmp_path):
    sim = walled_box(hertz_ellipsoid, 1.25e-4, "hertz_curvature")
    sim.run(5)
    arrays, meta = sim.state_dict()
    arrays = dict(arrays)
    key = arrays["sg_hertz_hkey"].copy()
    arrays["sg_hertz_hctl"] = np.array([1])
    key[0] = (0, 0)  # a grain in the sphere's place
    arrays["sg_hertz_hkey"] = key
    with pytest.raises(ValueError, match="sg_hertz_hkey"):
        Simulation.from_state(arrays, meta)
    del arrays["sg_hertz_fs"]
    with pytest.raises(ValueError, match="sg_hertz_fs"):
        Simulation.from_state(arrays, meta)


def test_a_mixture_pile_with_the_hertz_curvature_law(tmp_path):
    """`graindem run` of examples/mixed_pile.toml in a short form with contact.shape_law =
    "hertz_curvature": grain pairs and grain-sphere pairs are Hertz rows (in the checkpoint), grain-sphere
    contacts form, and the energy balance closes to 5 % of gravity's work. (Here rather than with the
    pile scenario's other tests: it runs the kernel this file compiles.)"""
    text = MIXED_PILE_EXAMPLE.read_text().replace("n = 60 ", "n = 12 ").replace("n = 16 ", "n = 4 ")
    scenario = tmp_path / "hertz.toml"
    scenario.write_text(text.replace("steps = 20000", "steps = 8000").replace("vtk = true", "vtk = false")
                        + '\n[contact]\nshape_law = "hertz_curvature"\nlaw = "jaeger"\n')
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["kinds"] == {"sphere": 12, "levelset": 4}
    assert summary["n_sphere_grain_contacts"] > 0
    arrays, _ = load_checkpoint(tmp_path / "o" / "checkpoint.h5")
    assert "sg_hertz_fs" in arrays and "grain_hertz_pfs" in arrays
    assert abs(summary["energy_balance_error"]) < 5e-2 * summary["gravity_work"]

"""Spheres and level-set grains together in the deforming periodic cell (bodies.mixed), the grains
touching by the node law ("area") and by the Hertz-curvature law (bodies.mixed_hertz; its tangential
law Jäger's), each check made for both.

References: (1) translation invariance in a sheared and compressed cell -- a grain-sphere pair in
contact across the faces of the tilted cell feels the forces of the same pair in the middle (the
minimum image through the tilted cell; the affine flow adds the same velocity to both bodies), to
1e-9 of the force scale; (2) Love-Weber stress of one grain-sphere pair = (force on the sphere) x
(branch vector from the grain's centre to the sphere's) / V, from the bodies' own forces; (3) energy
conservation: kinetic + contact energy + dissipation - work of the cell stays constant up to the
time-integration error, which falls with the step; (4) the one stress servo, fed by both kinds'
contacts, holds the cell at its target stress; (5) a run continued from an HDF5 checkpoint equals
the uninterrupted run bit for bit.
"""

import numba
import numpy as np
import pytest

from graindem.bodies.mixed import MC_NCONTACTS
from graindem.engine import Simulation, checkpoint
from graindem.engine.loop import run_steps
from graindem.particles import LevelSetGrain
from graindem.verification.mixed_scenes import CELL_SIZE as L, sheared_cell, sheared_pair


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

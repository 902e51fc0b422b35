"""Level-set grains in the deforming periodic cell, with moving walls, pair friction and energies.

References: (1) translation invariance in a sheared and compressed cell -- a pair in contact across
the faces of a tilted cell feels the forces of the same pair in the middle (the minimum image through
the tilted cell; the affine flow adds the same velocity to both grains), 1e-9 of the force scale;
(2) Love-Weber stress of one pair = (force on the second grain) x (branch vector) / V, from the
grains' own forces; (3) Coulomb: a grain sliding on a wall carries mu_pair times its normal force,
mu_pair the value set for its material pair; (4) energy conservation: kinetic + contact energy +
dissipation - work of gravity, walls and the cell stays constant up to the time-integration error,
which falls as dt^2 (velocity Verlet); (5) divergence names the grains.
"""

import math

import numpy as np
import pytest

from graindem.bodies.levelset import GC_NCP
from graindem.engine import Simulation
from graindem.engine.simulation import Diverged
from graindem.particles import LevelSetGrain

L = 7.0  # a sheared cell's heights must exceed two cutoffs at the largest tilt
Q1 = np.array([math.cos(0.4), 0.0, math.sin(0.4) * 0.6, math.sin(0.4) * 0.8])
Q2 = np.array([math.cos(0.9), math.sin(0.9), 0.0, 0.0])
OFFSET = 1.2 * np.array([0.3, 1.0, 0.1]) / np.linalg.norm([0.3, 1.0, 0.1])


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=400)


def sheared_pair(grain, centre, shear=5.0, squeeze=-2.0):
    sim = Simulation(mu=0.4, density=1.0, dt=1e-3, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.2)
    c = np.asarray(centre, dtype=float)
    sim.add_grains(grain, [c, c + OFFSET], orientations=np.array([Q1, Q2]),
                   velocities=[(0.05, 0.1, 0.0), (-0.05, -0.1, 0.02)],
                   angular_velocities=[(0.0, 0.0, 0.5), (0.3, 0.0, 0.0)])
    sim.control_shear("xy", shear)
    sim.control_axis(2, strain_rate=squeeze)
    return sim


def test_pair_across_the_faces_of_a_sheared_cell_feels_the_forces_of_the_middle(ellipsoid):
    middle = sheared_pair(ellipsoid, (3.0, 2.5, 3.0))
    middle.run(40)
    ref = middle.grains
    assert ref.gctl[GC_NCP] > 10, "the pair must be in contact"
    tilt = middle.cell_matrix[1, 0]
    assert tilt > 0.15 * L, "the cell must have tilted"
    assert middle.box_lengths[2] < L * 0.93, "the cell must have shrunk along z"
    scale = np.abs(ref.force).max()
    # the same pair shifted so that its contact lies across the y face (where the image moves by the
    # tilt: Lees-Edwards) and across the x and z faces
    shift = np.array([-3.4, 3.4, 3.35])
    across = sheared_pair(ellipsoid, np.array((3.0, 2.5, 3.0)) + shift)
    across.run(40)
    g = across.grains
    assert g.gctl[GC_NCP] == ref.gctl[GC_NCP]
    np.testing.assert_allclose(g.force, ref.force, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(g.torque, ref.torque, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(across.stress(), middle.stress(), rtol=0, atol=1e-9 * np.abs(middle.stress()).max())
    # the grains straddle the faces: centres wrapped into the tilted cell, one of them above y = L/2
    assert g.pos[1, 1] < L and g.pos[0, 1] > 0.0


def test_stress_of_one_pair_is_its_force_times_its_branch(ellipsoid):
    """No gravity: the node forces of a pair sum to F on the second grain, sigma V = F (x) l."""
    sim = sheared_pair(ellipsoid, (6.2, 6.0, 3.0))
    sim.run(15)
    g = sim.grains
    assert g.gctl[GC_NCP] > 10
    d = g.pos[1] - g.pos[0]
    h = sim.cell_matrix
    # the minimum image through the cell's vectors (rows of h)
    frac = np.linalg.solve(h.T, d)
    d = d - h.T @ np.round(frac)
    expected = np.outer(g.force[1], d) / sim.volume
    sig = sim.stress()
    np.testing.assert_allclose(sig, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert np.trace(sig) > 0.0, "a repulsive contact is compressive (positive)"


def sliding_sim(pair_mu, grain):
    sim = Simulation(mu=0.8, density=1000.0, dt=2e-5, allow_unstable_dt=True, gravity=(0, 0, -9.81))
    m_grain = sim.add_material(E=1e9, nu=0.25, mu=0.9, density=1000.0)
    m_wall = sim.add_material(E=1e9, nu=0.25, mu=0.7, density=1000.0)
    sim.set_box((0, 0, 0), (0.1, 0.1, 0.1), periodic=(True, True, False))
    sim.add_wall((0, 0, 0), (0, 0, 1), material=m_wall)
    sim.set_grain_contact(2e8, law="area", damping_ratio=0.0)
    r = 0.01
    sim.add_grains(grain, [(0.05, 0.05, r - 2e-4)], velocities=[(0.5, 0.0, 0.0)], material=m_grain)
    sim.set_pair_friction(m_grain, m_wall, pair_mu)
    return sim


def test_a_grain_slides_on_a_wall_with_the_friction_of_its_material_pair():
    grain = LevelSetGrain.sphere(0.01, spacing=0.002, n_nodes=300)
    for mu in (0.3, 0.15):
        sim = sliding_sim(mu, grain)
        sim.run(60)  # the node springs reach the Coulomb limit in ~20 steps; the contact lasts ~200
        f = sim.wall_forces()[0]
        assert f[2] < 0.0 and sim.grains.gctl[GC_NCP] > 0
        # the grain pushes the wall down and drags it along +x
        assert f[0] / -f[2] == pytest.approx(mu, rel=1e-3)


def energy_run(grain, dt, steps, cell_flow, local_damping=0.0):
    """Four grains colliding with friction and damping: in a fully periodic cell compressed along x
    and sheared in xy (cell_flow), or between a floor and a descending lid under gravity. (Walls do
    not follow the cell's flow: their contacts see the grains' velocities relative to it, as the
    spheres' do, so the two are not combined here.)"""
    sim = Simulation(mu=0.4, density=1.0, dt=dt, allow_unstable_dt=True, local_damping=local_damping,
                     gravity=(0.0, 0.0, 0.0 if cell_flow else -2.0))
    sim.set_box((0, 0, 0), (8.0, 8.0, 8.0 if cell_flow else 4.0), periodic=(True, True, cell_flow))
    top = None
    if not cell_flow:
        sim.add_wall((0, 0, 0), (0, 0, 1))
        top = sim.add_wall((0, 0, 3.2), (0, 0, -1))
    sim.set_grain_contact(2e3, law="area", damping_ratio=0.1)
    sim.add_grains(grain, [(1.5, 1.5, 0.75), (3.2, 1.6, 0.9), (2.3, 3.3, 1.4), (4.7, 4.0, 2.2)],
                   orientations=np.array([Q1, Q2, Q1, Q2]),
                   velocities=[(0.2, 0.0, -0.1), (-0.3, 0.1, 0.0), (0.0, -0.2, 0.3), (0.1, 0.1, -0.4)],
                   angular_velocities=[(0.0, 0.0, 0.5), (0.3, 0.0, 0.0), (0.0, 0.4, 0.0), (0.2, 0.2, 0.2)])
    if cell_flow:
        sim.control_axis(0, strain_rate=-0.15)
        sim.control_axis(2, strain_rate=-0.2)
        sim.control_shear("xy", 0.4)
    else:
        sim.set_wall_velocity(top, (0.0, 0.0, -1.6))
    top_force = []
    if top is not None:
        sim.run(steps, callback=lambda s: top_force.append(s.wall_forces()[top, 2]), every=steps // 50)
    else:
        sim.run(steps)
    return sim, sim.measure(), max(top_force, default=0.0)


@pytest.mark.parametrize("cell_flow, local_damping", [(True, 0.0), (False, 0.0), (False, 0.3)],
                         ids=["deforming-cell", "moving-wall", "local-damping"])
def test_energy_balance_closes_to_the_integration_error(ellipsoid, cell_flow, local_damping):
    sim, m, top_force = energy_run(ellipsoid, 2e-3, 500, cell_flow, local_damping)
    assert (m["local_damping_dissipation"] > 0) == (local_damping > 0)
    terms = [m["kinetic_energy"], m["elastic_normal_energy"], m["viscous_dissipation"], m["tangential_work"],
             m["gravity_work"], m["boundary_work"]]
    assert m["viscous_dissipation"] > 0 and m["frictional_dissipation"] > 0, "the run must dissipate"
    assert abs(m["boundary_work"]) > 0.01 * max(abs(t) for t in terms), "the boundary must work"
    if not cell_flow:
        assert top_force > 0, "the lid must touch the grains"
    scale = max(abs(t) for t in terms)
    err = abs(m["energy_balance_error"])
    # local damping's work depends on the sign of each velocity component, which flips within steps
    assert err < (1e-2 if local_damping else 3e-3) * scale
    # the error is the integrator's: it falls with the step (first order: the dampers' work is taken
    # at the step's velocity; the elastic parts alone fall as dt^2)
    _, m4, _ = energy_run(ellipsoid, 5e-4, 2000, cell_flow, local_damping)
    assert abs(m4["energy_balance_error"]) < 0.5 * err


def test_divergence_names_the_grains(ellipsoid):
    sim = Simulation(mu=0.4, density=1.0, dt=0.05, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.set_grain_contact(1e3, law="area")
    sim.add_grains(ellipsoid, [(1.0, 3.0, 3.0), (3.2, 3.0, 3.0), (5.0, 5.0, 5.0)],
                   velocities=[(15.0, 0, 0), (-15.0, 0, 0), (0, 0, 0)])
    with pytest.raises(Diverged) as info:
        sim.run(100)
    assert sorted(info.value.particles) == [0, 1]
    assert "grain 0" in str(info.value) or "grain 1" in str(info.value)

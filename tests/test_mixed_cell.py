"""Spheres and level-set grains together in the deforming periodic cell (bodies.mixed).

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

import math

import numpy as np
import pytest

from graindem.bodies.mixed import MC_NCONTACTS
from graindem.engine import Simulation, checkpoint
from graindem.particles import LevelSetGrain

L = 7.0  # the sheared cell's heights must exceed two cutoffs at the largest tilt
Q1 = np.array([math.cos(0.4), 0.0, math.sin(0.4) * 0.6, math.sin(0.4) * 0.8])
OFFSET = 1.35 * np.array([0.3, 1.0, 0.1]) / np.linalg.norm([0.3, 1.0, 0.1])


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=400)


def sheared_pair(grain, centre, shear=5.0, squeeze=-2.0):
    """One grain and one sphere in contact, no gravity, in a cell sheared in xy and compressed in z."""
    sim = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=1e-3, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.2)
    c = np.asarray(centre, dtype=float)
    sim.add_grains(grain, [c], orientations=np.array([Q1]), velocities=[(0.05, 0.1, 0.0)],
                   angular_velocities=[(0.0, 0.0, 0.5)])
    sim.add_particles([c + OFFSET], 0.5, velocities=[(-0.05, -0.1, 0.02)], angular_velocities=[(0.3, 0.0, 0.0)])
    sim.control_shear("xy", shear)
    sim.control_axis(2, strain_rate=squeeze)
    return sim


def test_grain_sphere_pair_across_the_faces_of_a_sheared_cell_feels_the_forces_of_the_middle(ellipsoid):
    middle = sheared_pair(ellipsoid, (3.0, 2.5, 3.0))
    middle.run(40)
    assert middle.mixed.mctl[MC_NCONTACTS] == 1, "the pair must be in contact"
    assert middle.cell_matrix[1, 0] > 0.15 * L, "the cell must have tilted"
    assert middle.box_lengths[2] < 0.93 * L, "the cell must have shrunk along z"
    # the same pair shifted so that its contact lies across the y face (where the image moves by the
    # tilt: Lees-Edwards) and across the x and z faces
    across = sheared_pair(ellipsoid, np.array((3.0, 2.5, 3.0)) + (-3.4, 3.4, 3.35))
    across.run(40)
    assert across.grains.pos[0, 1] > 0.0 and across.pos[0, 1] < L  # both wrapped into the cell
    scale = np.abs(middle.force).max()
    assert scale > 0.0
    for a, b in ((across.force, middle.force), (across.torque, middle.torque),
                 (across.grains.force, middle.grains.force), (across.grains.torque, middle.grains.torque)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(across.stress(), middle.stress(), rtol=0, atol=1e-9 * np.abs(middle.stress()).max())


def test_stress_of_one_grain_sphere_pair_is_its_force_times_its_branch(ellipsoid):
    sim = sheared_pair(ellipsoid, (6.2, 6.0, 3.0))  # the sphere lies across the y face
    sim.run(15)
    assert sim.mixed.mctl[MC_NCONTACTS] == 1
    d = sim.pos[0] - sim.grains.pos[0]
    h = sim.cell_matrix
    frac = np.linalg.solve(h.T, d)  # the minimum image through the cell's vectors (rows of h)
    d = d - h.T @ np.round(frac)
    expected = np.outer(sim.force[0], d) / sim.volume
    np.testing.assert_allclose(sim.stress(), expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert np.trace(sim.stress()) > 0.0, "a repulsive contact is compressive (positive)"


def cell_scene(grain, dt):
    """Three ellipsoids and four spheres colliding with friction and dampers in a fully periodic
    cell compressed along x and z and sheared in xy: every kind pair touches."""
    sim = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=dt, allow_unstable_dt=True, energy_accounting=True,
                     restitution=0.5)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.set_grain_contact(2e3, law="area", damping_ratio=0.1)
    sim.add_grains(grain, [(1.5, 1.5, 0.75), (3.2, 1.6, 0.9), (2.3, 3.3, 1.4)], orientations=np.array([Q1, Q1, Q1]),
                   velocities=[(0.2, 0.0, -0.1), (-0.3, 0.1, 0.0), (0.0, -0.2, 0.3)])
    sim.add_particles([(4.7, 4.0, 2.2), (1.0, 4.5, 5.0), (5.0, 1.5, 4.5), (3.0, 5.5, 0.5)], 0.6,
                      velocities=[(0.1, 0.1, -0.4), (0.3, -0.2, 0.0), (-0.2, 0.2, 0.1), (0.0, 0.3, 0.2)])
    sim.control_axis(0, strain_rate=-0.15)
    sim.control_axis(2, strain_rate=-0.2)
    sim.control_shear("xy", 0.4)
    return sim

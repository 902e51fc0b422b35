"""Level-set grains in `graindem.engine.Simulation`: periodic images and restarts.

References: (1) translation invariance -- a pair of grains in contact across a periodic face must feel
the forces the same pair feels in the middle of the cell (the minimum image is exact; only the rounding
of the shifted coordinates differs, so 1e-9 of the force scale); (2) a run continued from its state
(state_dict -> from_state, and through an HDF5 checkpoint) must equal the uninterrupted run bit for bit.
"""

import math

import numpy as np
import pytest

from graindem.bodies.levelset import GC_NCP
from graindem.engine import Simulation, checkpoint
from graindem.particles import LevelSetGrain

L = 6.0
Q1 = np.array([math.cos(0.4), 0.0, math.sin(0.4) * 0.6, math.sin(0.4) * 0.8])
Q2 = np.array([math.cos(0.9), math.sin(0.9), 0.0, 0.0])
# the second grain's centre from the first's: ~0.14 overlap at these orientations (~30 contact nodes)
OFFSET = 1.55 * np.array([1.0, 0.2, 0.1]) / np.linalg.norm([1.0, 0.2, 0.1])


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=400)


def pair_sim(grain, centre, periodic=(True, True, True), mu=0.4, velocities=None):
    sim = Simulation(mu=mu, density=1.0, dt=1e-3, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=periodic)
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.2)
    c = np.asarray(centre, dtype=float)
    sim.add_grains(grain, [c, c + OFFSET], orientations=np.array([Q1, Q2]), velocities=velocities,
                   angular_velocities=[(0.0, 0.0, 0.5), (0.3, 0.0, 0.0)])
    return sim


def test_pair_across_a_periodic_face_feels_the_forces_of_the_middle(ellipsoid):
    middle = pair_sim(ellipsoid, (2.0, 2.5, 2.5), velocities=[(0.1, 0, 0), (-0.1, 0.05, 0)])
    middle.run(20)
    ref = middle.grains
    assert ref.gctl[GC_NCP] > 10, "the pair must be in contact"
    scale = np.abs(ref.force).max()
    # the same pair shifted so that the first grain crosses the x = 0 face and the contact lies across it
    # (x), and the second grain crosses the y and z faces
    shift = np.array([-2.9, 2.9, 2.85])
    across = pair_sim(ellipsoid, np.array((2.0, 2.5, 2.5)) + shift, velocities=[(0.1, 0, 0), (-0.1, 0.05, 0)])
    across.run(20)
    g = across.grains
    assert g.gctl[GC_NCP] == ref.gctl[GC_NCP]
    np.testing.assert_allclose(g.force, ref.force, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(g.torque, ref.torque, rtol=0, atol=1e-9 * scale)
    # the centres are wrapped into the cell, and are the middle run's shifted by the cell's periods
    d = (g.pos - ref.pos - shift) / L
    np.testing.assert_allclose(d, np.round(d), atol=1e-9)
    assert np.all((g.pos >= 0) & (g.pos < L))


def test_periodic_pair_conserves_momentum(ellipsoid):
    """No gravity, no walls: the pair's momentum through many contacts across the faces stays put."""
    sim = pair_sim(ellipsoid, (-0.8, 2.5, 2.5), velocities=[(0.3, 0.1, 0), (-0.3, 0.05, 0.02)])
    sim.setup()
    p0 = sim.grains.momentum()
    touched = 0
    for _ in range(20):
        sim.run(20)
        touched += sim.grains.gctl[GC_NCP] > 0
        np.testing.assert_allclose(sim.grains.momentum(), p0, atol=1e-12)
    assert touched >= 1, "the grains must meet across the face"



def _run_arrays(sim):
    return {k: v for k, v in sim.state_dict()[0].items() if k.startswith("grain_")}


def test_restart_continues_bit_for_bit(ellipsoid, tmp_path):
    def fresh():
        sim = pair_sim(ellipsoid, (2.0, 2.5, 2.5), periodic=(True, True, False), mu=0.5,
                       velocities=[(0.2, 0, -0.1), (-0.2, 0.05, -0.1)])
        # a floor servo-controlled to a force (boundaries.walls): it rises to the grains and presses them
        sim.add_wall((0, 0, 1.7), (0, 0, 1), force=20.0, servo_gain=0.1, max_speed=2.0)
        return sim

    whole = fresh()
    whole.run(150)
    ref = _run_arrays(whole)

    first = fresh()
    first.run(60)
    arrays, meta = first.state_dict()
    again = Simulation.from_state(arrays, meta)
    again.run(90)
    for k, v in _run_arrays(again).items():
        assert np.array_equal(v, ref[k]), k

    path = tmp_path / "grains.h5"
    checkpoint.save(first, path)
    loaded, _ = checkpoint.load(path)
    loaded.run(90)
    for k, v in _run_arrays(loaded).items():
        assert np.array_equal(v, ref[k]), k
    assert loaded.step_count == whole.step_count == 150
    assert np.array_equal(loaded.walls, whole.walls) and np.any(whole.wall_forces() != 0.0)

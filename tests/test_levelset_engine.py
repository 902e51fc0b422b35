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


def _trilinear_numpy(template, q):
    """phi of the template's grid at body points q (m, 3), and whether each point lies inside the
    grid: the trilinear interpolant of the 8 corners, written out independently of the kernels."""
    h = template.spacing
    phi = template.phi_grid
    u = (q - template.grid_origin) / h
    top = np.array(phi.shape) - 1
    inside = np.all((u >= 0) & (u <= top), axis=1)
    i = np.clip(np.floor(u).astype(int), 0, top - 1)
    f = u - i
    val = np.zeros(len(q))
    for corner in np.ndindex(2, 2, 2):
        c = np.array(corner)
        w = np.prod(np.where(c == 1, f, 1.0 - f), axis=1)
        val += w * phi[i[:, 0] + c[0], i[:, 1] + c[1], i[:, 2] + c[2]]
    return val, inside


def test_culled_node_pass_finds_the_penetrating_nodes_of_a_brute_force_search(ellipsoid):
    """Reference: every node of each grain tried against the other's grid by a numpy trilinear
    interpolant, no culling (within the partner's reach, inside its grid, phi < 0). The engine's node
    pass (culled by node trees and interior boxes, contact.node_tree) must find exactly these nodes,
    grain by grain in template node order, at random poses of two templates. Nodes with |phi| < 1e-12
    (where numpy and the kernel may round to different signs) are not compared."""
    ball = LevelSetGrain.sphere(0.6, spacing=0.1, n_nodes=200)
    rng = np.random.default_rng(7)
    compared = 0
    for _ in range(8):
        q = rng.normal(size=(2, 4))
        q /= np.linalg.norm(q, axis=1)[:, None]
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        # the ball's centre along u at 75-95 % of the touching distance: the ellipsoid's radius along u
        # (in its body frame, 1 / |d / axes|) plus the ball's
        w, x, y, z = q[0]
        rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        touching = 1.0 / np.linalg.norm((rot.T @ u) / np.array([1.0, 0.7, 0.5])) + 0.6
        centre = np.array([3.0, 3.0, 3.0])
        other = centre + rng.uniform(0.75, 0.95) * touching * u
        sim = Simulation(mu=0.4, density=1.0, dt=1e-3, allow_unstable_dt=True, diverge_overlap=1.0,
                         max_initial_overlap=1.0)
        sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
        sim.set_grain_contact(1e3, law="area")
        sim.add_grains(ellipsoid, [centre], orientations=q[:1])
        sim.add_grains(ball, [other], orientations=q[1:])
        sim.setup()
        g = sim.grains
        n = int(g.gctl[GC_NCP])
        found = g.cp_x[:n]
        owner = g.cp_ij[:n, 0]
        expected = []
        ambiguous = []
        for o, p, tmpl_o, tmpl_p in ((0, 1, ellipsoid, ball), (1, 0, ball, ellipsoid)):
            world = g.pos[o] + tmpl_o.nodes @ g.rot[o].T
            body_p = (world - g.pos[p]) @ g.rot[p]
            phi, inside = _trilinear_numpy(tmpl_p, body_p)
            reach = tmpl_p.bounding_radius + 2.0 * tmpl_p.spacing
            near = np.linalg.norm(tmpl_o.nodes - (g.pos[p] - g.pos[o]) @ g.rot[o], axis=1) <= reach
            hit = near & inside & (phi < 0)
            expected.append(world[hit & (np.abs(phi) >= 1e-12)])
            ambiguous.append(world[near & inside & (np.abs(phi) < 1e-12)])
        for o in (0, 1):
            rows = found[owner == o]
            if len(ambiguous[o]):  # drop the rows of ambiguous nodes before comparing
                far = np.min(np.linalg.norm(rows[:, None] - ambiguous[o][None], axis=2), axis=1) > 1e-9
                rows = rows[far]
            assert rows.shape == expected[o].shape
            np.testing.assert_allclose(rows, expected[o], rtol=0, atol=1e-12)
            compared += len(rows)
    assert compared > 300, "the poses must put many nodes in contact"


def test_culled_wall_and_sphere_node_collection_finds_the_nodes_of_a_brute_force_search(ellipsoid):
    """Reference: every node of a posed grain tested by numpy without culling, below a plane
    (height along the inward normal < 0) and inside a sphere (distance to its centre < R). The
    tree-walking collections (contact.levelset_contact.collect_nodes_wall, collect_nodes_in_sphere)
    must give exactly these nodes, in template node order, with the same world points and depths,
    at random poses, planes and spheres cutting the grain."""
    from graindem.contact import levelset_contact as lc
    from graindem.core.layout import N_WALL
    sim = Simulation(mu=0.4, density=1.0, dt=1e-3, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.set_grain_contact(1e3, law="area")
    sim.add_grains(ellipsoid, [(3.0, 3.0, 3.0)])
    sim.setup()
    g = sim.grains
    n_nodes = ellipsoid.n_nodes
    sc = dict(owner=np.zeros(n_nodes, np.int64), other=np.zeros(n_nodes, np.int64),
              hist=np.zeros(n_nodes, np.int64), x=np.zeros((n_nodes, 3)), g=np.zeros((n_nodes, 3)),
              delta=np.zeros(n_nodes), k=np.zeros(n_nodes), e=np.zeros((n_nodes, 3)))
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(12):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        w, x, y, z = q
        g.rot[0] = [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]
        world = g.pos[0] + ellipsoid.nodes @ g.rot[0].T
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        # a plane with inward normal u through a point 0.05-0.3 inside the grain's lowest node along u
        walls = np.zeros((1, N_WALL))
        walls[0, 0:3] = g.pos[0] + (np.min((world - g.pos[0]) @ u) + rng.uniform(0.05, 0.3)) * u
        walls[0, 3:6] = u
        n = lc.collect_nodes_wall(0, 0, g.tmpl, g.t_node_off, g.t_nodes, g.t_areas, g.t_cull, g.pos, g.rot, walls,
                                  lc.LAW_AREA, 1e3, g.hist_off, sc["owner"], sc["other"], sc["hist"], sc["x"],
                                  sc["g"], sc["delta"], sc["k"], 0)
        height = (world - walls[0, 0:3]) @ u
        below = np.flatnonzero(height < 0)
        assert 0 < len(below) < n_nodes
        np.testing.assert_array_equal(sc["hist"][:n], below)
        np.testing.assert_allclose(sc["x"][:n], world[below], rtol=0, atol=1e-12)
        np.testing.assert_allclose(sc["delta"][:n], -height[below], rtol=0, atol=1e-12)
        np.testing.assert_allclose(sc["k"][:n], 1e3 * ellipsoid.areas[below], rtol=1e-15)
        compared += n
        # a sphere of radius 0.3-0.8 reaching 0.05-0.25 past a node, its centre outward along the node's radius
        a = rng.integers(n_nodes)
        R = rng.uniform(0.3, 0.8)
        c = world[a] + (R - rng.uniform(0.05, 0.25)) * (world[a] - g.pos[0]) / np.linalg.norm(world[a] - g.pos[0])
        ex, ey, ez = c - g.pos[0]
        n = lc.collect_nodes_in_sphere(0, 7, ex, ey, ez, R, g.tmpl, g.t_node_off, g.t_nodes, g.t_areas, g.t_cull,
                                       g.pos, g.rot, lc.LAW_AREA, 1e3, g.hist_off, sc["owner"], sc["other"],
                                       sc["hist"], sc["x"], sc["g"], sc["delta"], sc["k"], sc["e"], 0)
        dist = np.linalg.norm(world - c, axis=1)
        inside = np.flatnonzero(dist < R)
        # nodes within rounding of the sphere's surface may fall either way
        sure = np.flatnonzero(np.abs(dist - R) > 1e-12)
        assert 0 < len(inside) < n_nodes
        np.testing.assert_array_equal(np.intersect1d(sc["hist"][:n], sure), np.intersect1d(inside, sure))
        assert np.all(np.diff(sc["hist"][:n]) > 0)
        both = np.intersect1d(sc["hist"][:n], inside)
        rows = np.searchsorted(sc["hist"][:n], both)
        np.testing.assert_allclose(sc["x"][rows], world[both], rtol=0, atol=1e-12)
        np.testing.assert_allclose(sc["delta"][rows], R - dist[both], rtol=0, atol=1e-12)
        np.testing.assert_allclose(sc["g"][rows], (world[both] - c) / dist[both, None], rtol=0, atol=1e-9)
        assert np.all(sc["other"][:n] == 7)
        compared += n
    assert compared > 500, "the planes and spheres must cut many nodes"

"""The "hertz_curvature" law in a run with spheres and level-set grains (bodies.mixed_hertz,
engine.mixed_hertz_loop).

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

import math

import numpy as np
import pytest

from graindem.bodies.mixed import MC_NCONTACTS
from graindem.contact.shape_references import ellipsoid_grain, hertz_elliptic
from graindem.engine import Simulation, checkpoint
from graindem.particles import LevelSetGrain

E, NU = 1e5, 0.3


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=300)


def test_sphere_on_an_ellipsoid_tip_matches_hertz_elliptical_contact():
    """A sphere of radius 2 on the x tip of the ellipsoid (1, 2, 1): tip radii 4 and 1."""
    a, b, c, r_s = 1.0, 2.0, 1.0, 2.0
    grain, centre = ellipsoid_grain(a, b, c, spacing=1.0 / 12)
    A, B = 0.5 * (a / (b * b) + 1.0 / r_s), 0.5 * (a / (c * c) + 1.0 / r_s)
    e_star = E / (2.0 * (1.0 - NU * NU))
    for delta in (1e-3, 1e-2):
        sim = Simulation(mu=0.3, density=1.0, E=E, nu=NU, law="jaeger", dt=1e-5)
        sim.set_box((-6, -6, -6), (6, 6, 6))
        sim.set_grain_contact(law="hertz_curvature")
        sim.add_grains(grain, [(0.0, 0.0, 0.0)], motion="fixed")
        tip = centre + (a, 0.0, 0.0)
        sim.add_particles([tip + (r_s - delta, 0.0, 0.0)], r_s)
        sim.setup()
        P = hertz_elliptic(A, B, e_star, delta)["P"]
        f = sim.force[0]  # the grain-sphere force on the sphere at the start
        assert abs(f[0] / P - 1.0) < 0.03, (delta, f[0], P)
        assert np.hypot(f[1], f[2]) < 1e-3 * P  # along the common normal, the x axis
        np.testing.assert_allclose(sim.grains.force[0], -f, rtol=1e-12)


def collision(big, R_big, R_small):
    """A sphere of radius R_small thrown obliquely, spinning, at a heavy spinning body (a sphere
    particle or a level-set sphere grain of radius R_big); returns the Simulation."""
    sim = Simulation(mu=0.3, density=1.0, E=E, nu=NU, law="jaeger", dt=2e-5)
    heavy = sim.add_material(E, NU, 0.3, 200.0)
    sim.set_box((-4, -4, -4), (4, 4, 4))
    e = np.array([0.6, 0.3, -0.2]) / np.linalg.norm([0.6, 0.3, -0.2])
    kw = dict(velocities=[(0.02, 0.0, -0.01)], angular_velocities=[(0.1, -0.3, 0.2)], material=heavy)
    if big is None:
        sim.add_particles([(0.0, 0.0, 0.0)], R_big, **kw)
    else:
        sim.set_grain_contact(law="hertz_curvature")
        sim.add_grains(big, [(0.0, 0.0, 0.0)], **kw)
    start = (R_big + R_small + 0.01) * e
    sim.add_particles([start], R_small, velocities=[-0.6 * e + (0.0, 0.25, 0.1)], angular_velocities=[(3.0, 1.0, -2.0)])
    sim.setup()
    return sim


def force_on_small(sim):
    """The contact force on the small sphere: (normal along the centres, tangential) vectors."""
    if sim.grains is None:
        c = sim.contact_arrays()
        if len(c["N"]) == 0:
            return np.zeros(3), np.zeros(3)
        # the force on j is N n - T (n from i to j; T in Mindlin's sign convention)
        sign = 1.0 if c["j"][0] == 1 else -1.0
        fn = sign * c["N"][0] * c["normal"][0]
        ft = -sign * c["T"][0]
    else:
        net = sim.grains.contact_network()
        if len(net["i"]) == 0:
            return np.zeros(3), np.zeros(3)
        f = -net["force"][0]  # the force on the grain, reversed
        n = sim.pos[0] - sim.grains.pos[0]
        n /= np.linalg.norm(n)
        fn = (f @ n) * n
        ft = f - fn
    return fn, ft


def test_sphere_on_a_level_set_sphere_matches_the_sphere_engine():
    R_big, R_small = 1.0, 0.5
    grain = LevelSetGrain.sphere(R_big, spacing=R_big / 12)
    runs = {"grain": collision(grain, R_big, R_small), "sphere": collision(None, R_big, R_small)}
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


def energy_scene(ellipsoid, dt=1.25e-4):
    """Three ellipsoids and five spheres thrown about in a walled box under gravity, with friction
    and contact dampers: every kind pair and the walls touch."""
    sim = Simulation(mu=0.5, density=1.0, E=1e6, nu=NU, law="jaeger", gravity=(0.0, 0.0, -9.81), restitution=0.5,
                     energy_accounting=True, dt=dt)
    sim.set_box((-3.2, -2.3, -0.5), (3.2, 2.3, 4.0))
    for point, normal in (((-3.0, 0, 0), (1, 0, 0)), ((3.0, 0, 0), (-1, 0, 0)), ((0, -2.1, 0), (0, 1, 0)),
                          ((0, 2.1, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(point, normal)
    sim.set_grain_contact(law="hertz_curvature", damping_ratio=0.2)
    sim.add_grains(ellipsoid, [(-1.6, -0.8, 0.6), (0.2, 0.9, 0.7), (1.7, -0.6, 0.8)],
                   orientations=[(1, 0, 0, 0), (math.cos(0.4), 0, 0, math.sin(0.4)),
                                 (math.cos(0.2), math.sin(0.2), 0, 0)],
                   velocities=[(0.5, 0.2, 0), (-0.3, -0.2, 0.0), (-0.4, 0.3, 0.1)],
                   angular_velocities=[(0, 0, 1.0), (0.5, 0, 0), (0, 0.5, 0)])
    sim.add_particles([(-1.5, -0.7, 1.6), (-0.6, 0.8, 1.9), (0.4, 0.8, 1.7), (1.6, -0.5, 1.8), (0.5, -1.2, 2.3)],
                      0.4, velocities=[(0.3, 0, 0), (0.2, -0.4, 0), (0, 0.3, -0.5), (-0.5, 0, 0), (0.3, 0.6, 0)])
    return sim


def balance_run(ellipsoid, dt):
    """1.5 s of energy_scene at time step dt: (measure() at the end, grain-sphere contact steps)."""
    sim = energy_scene(ellipsoid, dt)
    touched = []
    sim.run(int(round(1.5 / dt)), callback=lambda s: touched.append(int(s.mixed.mctl[MC_NCONTACTS])), every=10)
    return sim.measure(), sum(touched)


def test_energy_balance_of_a_mixed_hertz_run_closes(ellipsoid):
    """The error falls in proportion to the step (first order: the dampers' work is taken at the
    step's velocity, the spheres' kinetic energy at their half step), so it is the integrator's;
    at dt = 3.1e-5 it is below 3e-3 of the largest term. Every dissipation of the grain-sphere
    contacts exceeds that tolerance, so leaving it out of the balance would fail it."""
    coarse, _ = balance_run(ellipsoid, 1.25e-4)
    m, touched = balance_run(ellipsoid, 3.125e-5)
    assert touched > 20, "the spheres must have touched the grains"
    by_kind = m["contact_energies"]
    terms = [m["kinetic_energy"], m["elastic_normal_energy"], m["tangential_energy"], m["frictional_dissipation"],
             m["viscous_dissipation"], m["gravity_work"], m["boundary_work"]]
    scale = max(abs(t) for t in terms)
    tol = 3e-3 * scale
    assert abs(m["energy_balance_error"]) < tol, (m["energy_balance_error"], scale)
    assert abs(m["energy_balance_error"]) < 0.35 * abs(coarse["energy_balance_error"])
    assert m["gravity_work"] > tol
    gs = by_kind["grain-sphere"]
    assert gs["frictional_dissipation"] > tol and gs["viscous_dissipation"] > tol, gs
    assert m["frictional_dissipation"] == pytest.approx(sum(e["frictional_dissipation"] for e in by_kind.values()))


def test_mixed_hertz_run_restarts_bit_for_bit(ellipsoid, tmp_path):
    ref = energy_scene(ellipsoid)
    ref.run(6000)
    ref.run(1200)
    sim = energy_scene(ellipsoid)
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


def test_bad_grain_sphere_rows_in_a_checkpoint_are_named(ellipsoid, tmp_path):
    sim = energy_scene(ellipsoid)
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

"""Spheres and rigid level-set grains in one Simulation (bodies.mixed, engine.mixed_setup).

References: (1) conservation: in a free collision of a sphere with an ellipsoid grain (no gravity,
no walls) the total linear momentum and the angular momentum about a fixed point are the same
before and after, to round-off (the contact forces are equal and opposite at one point);
(2) the area law's continuum integral: a sphere pressed into a level-set sphere grain feels
F = integral over the grain's surface inside the sphere of k_s (R - |x - c|) n . e dA, evaluated by
quadrature, independent of the nodes; (3) static equilibrium: spheres settled on a fixed bed of
ellipsoids inside walls load the bed and the walls with their weight; (4) a run continued from an
HDF5 checkpoint equals the uninterrupted run bit for bit; (5) translation invariance: a grain-sphere
pair in contact across a periodic face feels the forces of the same pair in the middle of the box
(only the rounding of the shifted coordinates differs); (6) the energy balance: the work of gravity
and of a moving wall equals the change of kinetic energy (both kinds, translational and rotational)
plus the energy stored in the contacts and dissipated by friction and dampers, each term counted
by its own code (sphere laws, grain node contacts, grain-sphere node contacts).
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from graindem.bodies.mixed import MC_NCONTACTS
from graindem.engine import Simulation, checkpoint
from graindem.particles import LevelSetGrain


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=400)


def momenta(sim, about):
    """Total linear momentum and angular momentum about `about` of both kinds."""
    g = sim.grains
    p = g.momentum() + (sim.mass[:, None] * sim.vel).sum(axis=0)
    L = (g.angular_momentum(about) + np.cross(sim.pos - about, sim.mass[:, None] * sim.vel).sum(axis=0)
         + (sim.inertia[:, None] * sim.omega).sum(axis=0))
    return p, L


def collision(ellipsoid, **kw):
    sim = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=1e-3, **kw)
    sim.set_box((-6, -6, -6), (6, 6, 6))
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.1)
    sim.add_grains(ellipsoid, [(0.0, 0.0, 0.0)], orientations=[(math.cos(0.3), 0.2, 0.5, 0.1)],
                   angular_velocities=[(0.0, 0.3, 0.1)], velocities=[(0.05, 0.0, -0.02)])
    sim.add_particles([(1.9, 0.35, 0.25)], 0.5, velocities=[(-0.6, 0.0, 0.05)], angular_velocities=[(0.0, 0.0, 2.0)])
    return sim


def test_free_collision_of_a_sphere_with_an_ellipsoid_conserves_momentum(ellipsoid):
    sim = collision(ellipsoid)
    sim.setup()
    about = np.array([0.7, -1.3, 0.4])
    p0, L0 = momenta(sim, about)
    touched = []
    sim.run(2000, callback=lambda s: touched.append(int(s.mixed.mctl[MC_NCONTACTS])), every=1)
    assert sum(touched) > 10, "the sphere must have hit the grain"
    assert sim.measure()["n_contact_nodes"] == 0, "the bodies must have separated again"
    assert np.linalg.norm(sim.vel[0] - (-0.6, 0.0, 0.05)) > 0.1, "the collision must have changed the sphere's motion"
    p1, L1 = momenta(sim, about)
    np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-13 * np.abs(p0).max())
    np.testing.assert_allclose(L1, L0, rtol=0, atol=1e-13 * np.abs(L0).max())


def periodic_pair(ellipsoid, grain_centre):
    sim = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=1e-3)
    sim.set_box((0, 0, 0), (8, 8, 8), periodic=(True, True, True))
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.2)
    c = np.asarray(grain_centre, dtype=float)
    sim.add_grains(ellipsoid, [c], orientations=[(math.cos(0.05), 0.0, 0.0, math.sin(0.05))],
                   velocities=[(0.05, 0.0, 0.0)], angular_velocities=[(0.0, 0.2, 0.0)])
    sim.add_particles([c + (1.4, 0.1, 0.05)], 0.5, velocities=[(-0.1, 0.02, 0.0)])
    return sim


def test_grain_sphere_pair_across_a_periodic_face_feels_the_forces_of_the_middle(ellipsoid):
    middle = periodic_pair(ellipsoid, (4.0, 4.0, 4.0))
    middle.run(20)
    across = periodic_pair(ellipsoid, (4.0 - 4.6, 4.0 + 3.5, 4.0))  # the contact lies across the x = 0 face
    across.run(20)
    assert middle.measure()["n_sphere_grain_contacts"] == 1
    scale = np.abs(middle.force).max()
    for a, b in ((across.force, middle.force), (across.torque, middle.torque),
                 (across.grains.force, middle.grains.force), (across.grains.torque, middle.grains.torque)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * scale)


def continuum_area_force(k_s, R_grain, R_sphere, d):
    """F = k_s * integral over the grain sphere's surface inside the other sphere of the depth
    R_s - |x - c| times the normal's component along the line of centres (axisymmetric quadrature)."""
    D = R_grain + R_sphere - d  # distance between the centres

    def integrand(theta):  # theta: polar angle on the grain sphere from the line of centres
        x = R_grain * math.sin(theta)
        z = R_grain * math.cos(theta)
        rho = math.hypot(x, D - z)
        depth = R_sphere - rho
        if depth <= 0.0:
            return 0.0
        n_along = (D - z) / rho  # the sphere's gradient at the node, towards the grain's centre
        return k_s * depth * n_along * 2.0 * math.pi * R_grain ** 2 * math.sin(theta)
    # the cap: cos(theta_max) from |x - c| = R_sphere
    cmax = (R_grain ** 2 + D ** 2 - R_sphere ** 2) / (2.0 * R_grain * D)
    return quad(integrand, 0.0, math.acos(min(1.0, cmax)), limit=200)[0]


@pytest.fixture(scope="module")
def sphere_grain():
    return LevelSetGrain.sphere(1.0, spacing=0.05, n_nodes=6000)


@pytest.mark.parametrize("d", [0.06, 0.12])
def test_sphere_pressed_into_a_level_set_sphere_matches_the_area_law_integral(sphere_grain, d):
    """A level-set sphere grain of radius 1 (h = 1/20, 6000 nodes) and a sphere of radius 0.8 at
    overlap d: the normal force within 3 % of the continuum integral (node sampling and the
    surface's O(h^2) placement are the error)."""
    k_s = 1e4
    grain = sphere_grain
    sim = Simulation(density=1.0, E=1e6, nu=0.3, mu=0.0, dt=1e-4, allow_unstable_dt=True)
    sim.set_box((-4, -4, -4), (4, 4, 4))
    sim.set_grain_contact(k_s, law="area")
    sim.add_grains(grain, [(0.0, 0.0, 0.0)], motion="fixed")
    e = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    sim.add_particles([(1.8 - d) * e], 0.8)
    sim.setup()
    ref = continuum_area_force(k_s, 1.0, 0.8, d)
    f_sphere = sim.force[0]  # the grain-sphere force on the sphere at the start
    assert abs(f_sphere @ e / ref - 1.0) < 0.03
    assert np.linalg.norm(f_sphere - (f_sphere @ e) * e) < 0.02 * ref  # along the line of centres
    np.testing.assert_allclose(sim.grains.force[0], -f_sphere, rtol=1e-12)


def settling_bed(ellipsoid):
    """Four spheres dropped on a fixed 3 x 3 bed of lying ellipsoids (top at z = 1) inside four
    side walls and a floor, over the pockets where four ellipsoids meet (narrower than a sphere)."""
    sim = Simulation(mu=0.5, density=1.0, E=1e6, nu=0.3, gravity=(0.0, 0.0, -9.81), local_damping=0.3,
                     restitution=0.3)
    sim.set_box((-3.2, -2.3, -1.0), (3.2, 2.3, 4.0))
    for point, normal in (((-3.0, 0, 0), (1, 0, 0)), ((3.0, 0, 0), (-1, 0, 0)), ((0, -2.1, 0), (0, 1, 0)),
                          ((0, 2.1, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(point, normal)
    sim.set_grain_contact(1e4, law="area", damping_ratio=0.3)
    bed = [(x, y, 0.5) for x in (-2.0, 0.0, 2.0) for y in (-1.4, 0.0, 1.4)]
    sim.add_grains(ellipsoid, bed, motion="fixed")
    sim.add_particles([(-1.05, -0.68, 1.5), (0.97, 0.72, 1.6), (1.02, -0.7, 1.7), (-0.96, 0.71, 1.8)], 0.4)
    return sim


def test_spheres_settle_on_a_bed_of_ellipsoids(ellipsoid):
    sim = settling_bed(ellipsoid)
    sim.setup()
    assert sim.kinds == {"sphere": 4, "levelset": 9}
    sim.run(3000)
    m = sim.measure()
    weight = float(sim.mass.sum()) * 9.81
    assert m["kinetic_energy"] < 1e-6 * weight * 0.4, m["kinetic_energy"]
    assert m["n_sphere_grain_contacts"] >= 4
    # what the spheres push on the bed and the walls balances their weight
    down = float(sim.grains.force[:, 2].sum()) + float(sim.wall_forces()[:, 2].sum())
    assert abs(-down / weight - 1.0) < 0.01
    assert np.all(sim.pos[:, 2] > 0.5)  # held by the bed's pockets, not fallen through them


def test_mixed_run_restarts_bit_for_bit_from_a_checkpoint(ellipsoid, tmp_path):
    ref = settling_bed(ellipsoid)
    ref.run(1000)
    ref.run(300)
    sim = settling_bed(ellipsoid)
    sim.run(1000)
    assert sim.measure()["n_sphere_grain_contacts"] > 0, "the checkpoint must hold node histories in use"
    checkpoint.save(sim, tmp_path / "mixed.h5")
    back, _ = checkpoint.load(tmp_path / "mixed.h5", for_restart=True)
    assert back.kinds == {"sphere": 4, "levelset": 9}
    back.run(300)
    a, meta_a = ref.state_dict()
    b, meta_b = back.state_dict()
    assert meta_b["bodies"] == "mixed" and set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)


def test_mixed_run_writes_both_kinds_to_vtk(ellipsoid, tmp_path):
    import meshio
    sim = settling_bed(ellipsoid)
    sim.run(2500)
    spheres, surfaces, contacts = sim.write_mixed_vtk(str(tmp_path / "mixed"))
    np.testing.assert_array_equal(meshio.read(spheres).points, sim.pos)
    grain = meshio.read(surfaces).point_data["grain"]
    assert set(np.unique(grain)) == set(range(9))
    f = meshio.read(contacts).point_data["force"]
    # the contact nodes' forces on the bed carry the spheres' weight
    assert abs(f[:, 2].sum() / (sim.mass.sum() * -9.81) - 1.0) < 0.01


@pytest.mark.parametrize("change, message", [
    (lambda s: setattr(s, "sort_particles", True), "sort_particles"),
    (lambda s: s.add_particles([(9.0, 9.0, 9.0)], 0.05), "below the spacing .* of the grains' surface nodes"),
])
def test_unsupported_features_of_a_mixed_run_are_refused(ellipsoid, change, message):
    sim = Simulation(density=1.0, E=1e5, nu=0.3, dt=1e-3)
    sim.set_box((0, 0, 0), (12, 12, 12), periodic=(True, True, True))
    sim.set_grain_contact(1e3, law="area")
    sim.add_grains(ellipsoid, [(3.0, 3.0, 3.0)])
    sim.add_particles([(8.0, 8.0, 8.0)], 0.5)
    change(sim)
    with pytest.raises(ValueError, match=message):
        sim.setup()


def test_a_sphere_deep_inside_a_grain_at_start_is_named(ellipsoid):
    sim = Simulation(density=1.0, E=1e5, nu=0.3, dt=1e-3)
    sim.set_box((-5, -5, -5), (5, 5, 5))
    sim.set_grain_contact(1e3, law="area")
    sim.add_grains(ellipsoid, [(2.0, 2.0, 2.0), (0.0, 0.0, 0.0)])
    sim.add_particles([(-3.0, -3.0, -3.0), (0.3, 0.0, 0.0)], 0.5)
    with pytest.raises(ValueError, match="grain 1 lies inside sphere 1 deeper than diverge_overlap"):
        sim.setup()


def energy_scene(ellipsoid, dt=5e-4):
    """Three ellipsoids and six spheres thrown about in a walled box under gravity, with friction,
    contact dampers and a lid moving down onto them: every kind pair and the walls touch."""
    sim = Simulation(mu=0.5, density=1.0, E=1e6, nu=0.3, gravity=(0.0, 0.0, -9.81), restitution=0.5,
                     energy_accounting=True, dt=dt)
    sim.set_box((-3.2, -2.3, -0.5), (3.2, 2.3, 4.0))
    for point, normal in (((-3.0, 0, 0), (1, 0, 0)), ((3.0, 0, 0), (-1, 0, 0)), ((0, -2.1, 0), (0, 1, 0)),
                          ((0, 2.1, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(point, normal)
    lid = sim.add_wall((0, 0, 3.3), (0, 0, -1))
    sim.set_wall_velocity(lid, (0, 0, -1.2))
    sim.set_grain_contact(1e4, law="area", damping_ratio=0.2)
    sim.add_grains(ellipsoid, [(-1.6, -0.8, 0.6), (0.2, 0.9, 0.7), (1.7, -0.6, 0.8)],
                   orientations=[(1, 0, 0, 0), (math.cos(0.4), 0, 0, math.sin(0.4)),
                                 (math.cos(0.2), math.sin(0.2), 0, 0)],
                   velocities=[(0.5, 0.2, 0), (-0.3, -0.2, 0.0), (-0.4, 0.3, 0.1)],
                   angular_velocities=[(0, 0, 1.0), (0.5, 0, 0), (0, 0.5, 0)])
    sim.add_particles([(-1.5, -0.7, 1.6), (-0.6, 0.8, 1.9), (0.4, 0.8, 1.7), (1.6, -0.5, 1.8), (0.5, -1.2, 2.3),
                       (-1.0, 0.2, 2.6)], 0.4,
                      velocities=[(0.3, 0, 0), (0.2, -0.4, 0), (0, 0.3, -0.5), (-0.5, 0, 0), (0.3, 0.6, 0),
                                  (-0.2, -0.1, 0)])
    return sim


def balance_run(ellipsoid, dt):
    """1.5 s of energy_scene at time step dt: measure() at the end."""
    sim = energy_scene(ellipsoid, dt)
    sim.run(int(round(1.5 / dt)))
    return sim.measure()


def test_energy_balance_of_a_mixed_run_closes(ellipsoid):
    """At dt/4 (dt = dt_crit / 5) the error is below 3e-3 of the largest term, the tolerance of
    grains alone (test_levelset_cell), and it falls with the step (first order: the dampers' work
    is taken at the step's velocity, the spheres' kinetic energy at their half step), so it is the
    integrator's. Every dissipation of each kind pair exceeds that tolerance, so leaving any of
    them out of the balance would fail it."""
    coarse = balance_run(ellipsoid, 5e-4)
    m = balance_run(ellipsoid, 1.25e-4)
    by_kind = m["contact_energies"]
    terms = [m["kinetic_energy"], m["elastic_normal_energy"], m["tangential_energy"], m["frictional_dissipation"],
             m["viscous_dissipation"], m["gravity_work"], m["boundary_work"]]
    scale = max(abs(t) for t in terms)
    tol = 3e-3 * scale
    assert abs(m["energy_balance_error"]) < tol, (m["energy_balance_error"], scale)
    assert abs(m["energy_balance_error"]) < 0.5 * abs(coarse["energy_balance_error"])
    assert m["boundary_work"] > tol and m["gravity_work"] > tol  # the lid pressed, the bodies fell
    for kind in ("sphere", "grain", "grain-sphere"):
        assert by_kind[kind]["frictional_dissipation"] > tol, (kind, by_kind[kind])
        assert by_kind[kind]["viscous_dissipation"] > tol, (kind, by_kind[kind])
    # the sums measure() reports are those of the kinds
    assert m["frictional_dissipation"] == pytest.approx(sum(e["frictional_dissipation"] for e in by_kind.values()))


def test_energy_balance_needs_the_spheres_energy_accounting(ellipsoid):
    sim = energy_scene(ellipsoid)
    sim.set_energy_accounting(False)
    sim.run(10)
    assert math.isnan(sim.measure()["energy_balance_error"])


def test_energy_balance_continues_across_a_restart(ellipsoid, tmp_path):
    sim = energy_scene(ellipsoid)
    sim.run(1500)
    assert sim.measure()["contact_energies"]["grain-sphere"]["frictional_dissipation"] > 0.0
    checkpoint.save(sim, tmp_path / "e.h5")
    back, _ = checkpoint.load(tmp_path / "e.h5", for_restart=True)
    assert back.measure()["energy_balance_error"] == sim.measure()["energy_balance_error"]

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
from graindem.bodies.mixed import MC_NCONTACTS
from graindem.engine import Simulation, checkpoint
from graindem.io.checkpoint_check import validate_mixed_state
from graindem.particles import LevelSetGrain
from graindem.verification.mixed_scenes import (balance_tolerance, continuum_area_force, free_collision, momenta,
                                                pressed_sphere, settling_bed, walled_box)


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=400)


def test_free_collision_of_a_sphere_with_an_ellipsoid_conserves_momentum(ellipsoid):
    sim = free_collision(ellipsoid)
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


@pytest.fixture(scope="module")
def sphere_grain():
    return LevelSetGrain.sphere(1.0, spacing=0.05, n_nodes=6000)


@pytest.mark.parametrize("d", [0.06, 0.12])
def test_sphere_pressed_into_a_level_set_sphere_matches_the_area_law_integral(sphere_grain, d):
    """A level-set sphere grain of radius 1 (h = 1/20, 6000 nodes) and a sphere of radius 0.8 at
    overlap d: the normal force within 3 % of the continuum integral (node sampling and the
    surface's O(h^2) placement are the error)."""
    k_s = 1e4
    sim, e = pressed_sphere(sphere_grain, d, k_s)
    ref = continuum_area_force(k_s, 1.0, 0.8, d)
    f_sphere = sim.force[0]  # the grain-sphere force on the sphere at the start
    assert abs(f_sphere @ e / ref - 1.0) < 0.03
    assert np.linalg.norm(f_sphere - (f_sphere @ e) * e) < 0.02 * ref  # along the line of centres
    np.testing.assert_allclose(sim.grains.force[0], -f_sphere, rtol=1e-12)


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
    saved = sim.measure()
    assert saved["n_sphere_grain_contacts"] > 0, "the checkpoint must hold node histories in use"
    checkpoint.save(sim, tmp_path / "mixed.h5")
    back, _ = checkpoint.load(tmp_path / "mixed.h5", for_restart=True)
    assert back.kinds == {"sphere": 4, "levelset": 9}
    loaded = back.measure()  # the contact network of the saved state, before any step
    for key in ("n_contacts", "n_grain_contacts", "n_sphere_grain_contacts", "n_wall_contacts", "n_contact_nodes",
                "coordination", "unbalanced_force_ratio"):
        assert loaded[key] == saved[key], key
    arrays, meta = sim.state_dict()
    for name, value in (("grain_cp_ij", 10**6), ("grain_cp_f", np.nan)):
        damaged = dict(arrays)
        damaged[name] = arrays[name].copy()
        damaged[name][0, 0] = value
        with pytest.raises(ValueError, match=name):
            validate_mixed_state(damaged, meta)
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


def balance_run(ellipsoid, dt):
    """1.5 s of walled_box at time step dt: measure() at the end."""
    sim = walled_box(ellipsoid, dt)
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
    tol = balance_tolerance(m)
    assert abs(m["energy_balance_error"]) < tol, (m["energy_balance_error"], tol)
    assert abs(m["energy_balance_error"]) < 0.5 * abs(coarse["energy_balance_error"])
    assert m["boundary_work"] > tol and m["gravity_work"] > tol  # the lid pressed, the bodies fell
    for kind in ("sphere", "grain", "grain-sphere"):
        assert by_kind[kind]["frictional_dissipation"] > tol, (kind, by_kind[kind])
        assert by_kind[kind]["viscous_dissipation"] > tol, (kind, by_kind[kind])
    # the sums measure() reports are those of the kinds
    assert m["frictional_dissipation"] == pytest.approx(sum(e["frictional_dissipation"] for e in by_kind.values()))


def test_energy_balance_needs_the_spheres_energy_accounting(ellipsoid):
    sim = walled_box(ellipsoid, 5e-4)
    sim.set_energy_accounting(False)
    sim.run(10)
    assert math.isnan(sim.measure()["energy_balance_error"])


def test_energy_balance_continues_across_a_restart(ellipsoid, tmp_path):
    sim = walled_box(ellipsoid, 5e-4)
    sim.run(1500)
    assert sim.measure()["contact_energies"]["grain-sphere"]["frictional_dissipation"] > 0.0
    checkpoint.save(sim, tmp_path / "e.h5")
    back, _ = checkpoint.load(tmp_path / "e.h5", for_restart=True)
    assert back.measure()["energy_balance_error"] == sim.measure()["energy_balance_error"]


def test_spheres_touching_at_start_bring_their_hertz_energy_into_the_balance(ellipsoid):
    """Two spheres and a sphere on the floor start overlapping at rest, with no friction, damping or
    gravity: they spring apart with the Hertz energy of the starting overlaps as kinetic energy,
    2/5 (4/3 E* sqrt(R*)) delta^(5/2) with E* = E / (2 (1 - nu^2)) (one material for spheres and
    walls), R* = R/2 for the pair and R for the wall. The balance started before the first step must
    count that energy: without it the error is the whole of it."""
    E, nu, R, delta = 1e5, 0.3, 0.5, 0.02
    sim = Simulation(mu=0.0, density=1.0, E=E, nu=nu, energy_accounting=True, dt_fraction=0.05)
    sim.set_box((-6, -6, -1), (6, 6, 11))
    sim.add_wall((0, 0, 0), (0, 0, 1))
    sim.set_grain_contact(1e3, law="area")
    sim.add_grains(ellipsoid, [(-4.0, -4.0, 5.0)])
    sim.add_particles([(0.0, 0.0, 5.0), (2 * R - delta, 0.0, 5.0), (3.0, 3.0, R - delta)], R)
    sim.setup()
    estar = E / (2.0 * (1.0 - nu * nu))
    hertz = [0.4 * 4.0 / 3.0 * estar * math.sqrt(rstar) * delta ** 2.5 for rstar in (R / 2, R)]
    assert sim.touching_energy_at_start() == pytest.approx(sum(hertz), rel=1e-12)
    sim.run(2000)
    m = sim.measure()
    assert m["n_contacts"] == 0 and m["n_wall_contacts"] == 0  # all apart again
    assert m["kinetic_energy"] == pytest.approx(sum(hertz), rel=2e-3)
    assert abs(m["energy_balance_error"]) < 2e-3 * sum(hertz), (m["energy_balance_error"], sum(hertz))

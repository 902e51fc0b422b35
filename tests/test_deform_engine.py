"""Deformable grains in `Simulation`: restart in a new process, conservation and the energy balance,
periodic images, Coulomb sliding with the material pair's friction, several templates, deformed
surfaces, the deforming periodic cell (shear, strain rates, stress servo), rigid level-set grains
stepped by the same loop.

References: momentum conservation (equal and opposite node forces), the energy balance (stored +
dissipated - work of the walls and of the cell stays constant; its error falls as dt), Coulomb's law for
a block sliding on a plane (deceleration mu g), the same pair in the middle of a periodic cell (fixed,
and sheared and compressed), the Love-Weber stress of a pair from the grains' own forces and the minimum
image of their centres, the servo's target stress, the analytic stand-in mode at the surface vertices,
the critical steps sqrt(m / k) and 1 / omega of the modal oscillator by hand, the node law's static
equilibrium on a wall (solved by hand from the template's nodes) reached by the rigid level-set loop as well.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from graindem.deform.response import LinearResponse
from graindem.deform.scenes import DeformableTemplate, compaction_sphere
from graindem.engine import Simulation
from graindem.particles import LevelSetGrain

MODAL_MASS = 1e5
MODAL_K = 1e6


@pytest.fixture(scope="module")
def sphere():
    return compaction_sphere(n_nodes=400)


@pytest.fixture(scope="module")
def ball():
    """A rigid level-set sphere of the deformable sphere's size."""
    return LevelSetGrain.sphere(10.0, spacing=1.0, n_nodes=400, progress=False)


@pytest.fixture(scope="module")
def slab():
    return LevelSetGrain.rounded_cuboid(16.0, 8.0, 2.0, 0.5, spacing=1.0, progress=False)


def two_spheres(tpl, offset=0.0, mu=0.0, damping=0.0, modal_damping=None, box=((-40, -40, -40), (40, 40, 40)),
                periodic=(False, False, False), centre=(0.0, 0.0, 0.0), eps=0.0, speed=0.3, gap=0.2):
    sim = Simulation(density=1.0, mu=mu)
    sim.set_box(*box, periodic=periodic)
    c = np.asarray(centre, dtype=np.float64)
    x = 10.0 + gap
    sim.add_deformable_grains(tpl, [c + (-x, -offset, 0.0), c + (x, offset, 0.0)], modal_mass=[[MODAL_MASS]],
                              response=LinearResponse([[MODAL_K]]), modal_damping=modal_damping, eps=[eps],
                              velocities=[[speed, 0, 0], [-speed, 0, 0]])
    sim.set_deformable_contact(1e4, damping=damping, contact="both")
    return sim


def total_energy(sim):
    e = sim.deformable.energies(sim.gravity)
    return e["balance"], e


def test_free_collision_conserves_momentum_and_energy(sphere):
    sim = two_spheres(sphere)
    sim.setup()
    d = sim.deformable
    e0, _ = total_energy(sim)
    p0 = (d.mass[:, None] * d.vel).sum(axis=0)
    peak = 0.0
    for _ in range(30):
        sim.run(10)
        peak = max(peak, d.energies(sim.gravity)["strain"])
        np.testing.assert_allclose((d.mass[:, None] * d.vel).sum(axis=0), p0, atol=1e-12 * d.mass.sum())
    e1, parts = total_energy(sim)
    assert peak > 0.05 * e0                 # the collision loaded the modes
    assert d.vel[0, 0] < 0 < d.vel[1, 0]    # and the spheres bounced apart
    # leapfrog: rates at half steps, so the balance closes to O(omega dt) of what the modes hold
    assert abs(e1 - e0) < 0.01 * e0


def test_rigid_grain_hits_deformable_grain_conserving_momentum(sphere, ball, tmp_path):
    """A rigid level-set grain (add_grains) hits a deformable one off-centre with the pair's friction:
    momentum and angular momentum (orbital plus spin) are conserved to round-off, as equal and opposite
    node forces at one point give; the modes are loaded and the spin changes. Kinds, rows and VTK."""
    sim = Simulation(density=1.0, mu=0.8)
    other = sim.add_material(1e9, 0.3, 0.8, 1.0)
    sim.set_pair_friction(0, other, 0.4)
    sim.set_box((-40, -40, -40), (40, 40, 40))
    assert sim.add_deformable_grains(sphere, [[10.2, 3.0, 0]], modal_mass=[[MODAL_MASS]],
                                     response=LinearResponse([[MODAL_K]]), velocities=[[-0.3, 0, 0]],
                                     material=other).tolist() == [0]
    assert sim.add_grains(ball, [[-10.2, -3.0, 0.5]], velocities=[[0.3, 0.05, 0]],
                          angular_velocities=[[0, 0.01, 0.05]]).tolist() == [0]
    sim.set_deformable_contact(1e4)
    assert sim.kinds == {"levelset": 1, "deformable": 1}
    assert sim.grain_rows("levelset").tolist() == [0] and sim.grain_rows("deformable").tolist() == [1]
    d = sim.deformable
    np.testing.assert_array_equal(d.pos[0], [-10.2, -3.0, 0.5])
    assert d.t_nmodes[d.tmpl].tolist() == [0, 1] and d.mass[0] == pytest.approx(ball.volume, rel=1e-12)

    def momenta():
        return ((d.mass[:, None] * d.vel).sum(axis=0),
                (d.mass[:, None] * np.cross(d.pos, d.vel)).sum(axis=0) + d.angmom.sum(axis=0))

    p0, l0 = momenta()
    scale = float((d.mass * np.linalg.norm(d.vel, axis=1)).sum())
    spin0 = d.omega[0].copy()
    peak = 0.0
    for _ in range(20):
        sim.run(10)
        p, ang = momenta()
        np.testing.assert_allclose(p, p0, rtol=0, atol=1e-14 * scale)
        np.testing.assert_allclose(ang, l0, rtol=0, atol=1e-13 * scale * 40.0)
        peak = max(peak, abs(float(d.eps[0])))
    assert peak > 1e-3, "the collision must load the deformable grain's mode"
    assert np.abs(d.omega[0] - spin0).max() > 1e-3, "friction must change the rigid grain's spin"
    assert d.vel[0, 0] < 0 < d.vel[1, 0], "the grains bounced apart"
    v, f, gid = d.surfaces()
    n_ball = len(ball.surface_vertices)
    np.testing.assert_allclose(v[:n_ball], ball.surface_vertices @ d.rot[0].T + d.pos[0], atol=1e-12)
    assert len(v) == n_ball + len(sphere.surface_vertices) and gid[n_ball] == 1
    d.write_vtk(str(tmp_path / "mix"))
    assert (tmp_path / "mix_surfaces.vtu").stat().st_size > 0


def rest_on_a_wall(slab, kind, steps):
    """The slab (its nodes on the trilinear zero level set) lowered onto a floor wall under gravity, as a
    template without modes in the deformable loop or as a rigid grain in the level-set loop; returns
    (the sim, its bodies, the wall's height, the weight)."""
    sim = Simulation(density=1.0, mu=0.5, gravity=(0, 0, -2.0), dt=0.004, allow_unstable_dt=True)
    sim.set_box((-30, -30, -10), (30, 30, 10))
    sim.add_wall((0, 0, -5.0), (0, 0, 1))
    start = [[0.3, -0.2, -5.0 - slab.nodes[:, 2].min() + 1e-5]]
    if kind == "deformable":
        sim.add_deformable_grains(DeformableTemplate.from_levelset(slab), start, modes=[])
        sim.set_deformable_contact(1e5, damping=1500.0)   # about critical for the slab's face
    else:
        sim.add_grains(slab, start)
        sim.set_grain_contact(1e5, law="area", damping_ratio=0.05)
    sim.run(steps)
    return sim, sim.deformable if kind == "deformable" else sim.grains, -5.0, 2.0 * slab.volume


def node_law_rest(grain, stiffness, weight):
    """The rest of a rigid grain on a floor under the node law, by hand: the nodes' penetrations
    delta_i = c0 + c1 x_i + c2 y_i - z_i (z_i above the lowest node; a tilt by the small angles c1, c2)
    where positive carry k_s a_i delta_i, which sum to the weight with no torque about the centre;
    returns c0, the lowest node's depth below the centre's position at the floor."""
    x, y, z = grain.nodes[:, 0], grain.nodes[:, 1], grain.nodes[:, 2] - grain.nodes[:, 2].min()
    on = z < 1e-3
    for _ in range(20):
        basis = np.stack([np.ones(on.sum()), x[on], y[on]])
        a = grain.areas[on]
        c = np.linalg.solve((basis * a) @ basis.T, [weight / stiffness + np.sum(a * z[on]), np.sum(a * z[on] * x[on]),
                                                    np.sum(a * z[on] * y[on])])
        new = c[0] + c[1] * x + c[2] * y - z > 0.0
        if np.array_equal(new, on):
            return c[0]
        on = new
    raise AssertionError("the contact set did not settle")


def test_grain_at_rest_on_a_wall_in_both_loops_sits_at_the_node_laws_equilibrium(slab):
    """A rigid grain as a deformable template without modes and the same grain in the rigid level-set
    loop come to rest at the node law's static equilibrium (node_law_rest): the wall carries the weight."""
    delta = node_law_rest(slab, 1e5, 2.0 * slab.volume)
    # the rigid loop's damping ratio acts per node contact: it settles more slowly (its tolerances are what
    # is left of its motion; the reference's small-angle tilt holds to ~1e-9)
    for kind, steps, tol, tol_force in (("deformable", 200, 1e-7, 1e-12), ("levelset", 1000, 1e-6, 1e-5)):
        sim, bodies, wall, weight = rest_on_a_wall(slab, kind, steps)
        sunk = wall - slab.nodes[:, 2].min() - bodies.pos[0, 2]
        assert sunk == pytest.approx(delta, rel=tol), kind
        np.testing.assert_allclose(sim.wall_forces()[0], [0, 0, -weight], rtol=0, atol=tol_force * weight)


def closure(e):
    """Stored + dissipated - work from the terms of deformable_energies(), summed here."""
    stored = e["kinetic"] + e["modal_kinetic"] + e["strain"] + e["contact"] + e["tangential_springs"]
    dissipated = e["dissipated_friction"] + e["dissipated_contact_damping"] + e["dissipated_modal_damping"]
    return stored + dissipated + e["gravity_potential"] - e["wall_work"] - e["cell_work"]


def test_energy_balance_closes_with_friction_and_damping(sphere):
    sim = two_spheres(sphere, offset=4.0, mu=0.4, damping=20.0, modal_damping=[[2e3]])
    sim.setup()
    d = sim.deformable
    e0, _ = total_energy(sim)
    start = closure(sim.deformable_energies())
    sim.run(150)
    # measure() in mid-collision: one touching pair (many nodes, both ways), its stress is stress()'s
    m = sim.measure()
    assert m["n_contact_nodes"] >= 2 and m["n_contacts"] == 1 and m["coordination"] == 1.0
    assert m["n_wall_contacts"] == 0
    np.testing.assert_array_equal(m["stress"], sim.stress())
    sim.run(150)
    e1, parts = total_energy(sim)
    m = sim.measure()
    assert m["energy_balance_error"] == pytest.approx(closure(parts) - start, rel=1e-9, abs=1e-12 * e0)
    assert m["kinetic_energy"] == parts["kinetic"] and m["strain_energy"] == parts["strain"]
    dissipated = (parts["dissipated_friction"] + parts["dissipated_contact_damping"]
                  + parts["dissipated_modal_damping"])
    assert parts["dissipated_friction"] > 0.01 * e0 and parts["dissipated_modal_damping"] > 0.003 * e0
    assert dissipated > 0.05 * e0
    # the leapfrog's half-step rates: the balance closes to O(omega dt) of the modal energy (~1 %)
    assert abs(e1 - e0) < 0.015 * e0
    assert np.abs(d.omega).max() > 0        # friction spun the spheres


def test_pair_across_periodic_face_feels_middle_forces(sphere):
    forces = []
    for centre in ((0.0, 0.0, 0.0), (-35.0, 3.0, 0.0)):
        sim = two_spheres(sphere, offset=1.0, eps=0.05, gap=-0.6, box=((-35, -35, -35), (35, 35, 35)),
                          periodic=(True, True, False), centre=centre, speed=0.0)
        sim.run(1)
        forces.append((sim.deformable.force.copy(), sim.deformable.gen.copy()))
    assert np.abs(forces[0][0]).max() > 1.0
    for a, b in zip(*forces):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(a).max())


@pytest.mark.parametrize("floor", ["wall", "grain"])
def test_sliding_decelerates_at_the_material_pairs_mu_g(sphere, slab, floor):
    """A grain sliding on a wall, or on a fixed grain (the slab, a template without modes), decelerates
    at mu g with mu the material pair's (set_pair_friction), not the materials' own 0.9. On the grain the
    slider is the slave ("one"): its nodes meet the slab's flat face (the slab's nodes in the slider's
    level set would add a drag of their normals' tilt)."""
    g, mu, v0 = 1.0, 0.3, 2.0
    sim = Simulation(dt=0.01, allow_unstable_dt=True, density=1.0, mu=0.9, gravity=(0, 0, -g))
    slider = sim.add_material(1e9, 0.3, 0.9, 1.0)
    sim.set_pair_friction(0, slider, mu)
    sim.set_box((-60, -30, -30), (60, 30, 30))
    sim.add_deformable_grains(sphere, [[-8.0, 0, 0.0]], modes=[], velocities=[v0, 0, 0], material=slider,
                              dofs=[True, True, True, False, False, False])
    if floor == "wall":
        sim.add_wall((0, 0, -10.0), (0, 0, 1))
    else:
        sim.add_deformable_grains(DeformableTemplate.from_levelset(slab), [[0, 0, -10.0 - slab.nodes[:, 2].max()]],
                                  modes=[], motion="fixed")
    sim.set_deformable_contact(1e5, damping=2e4, contact="one")   # about critical for one node
    sim.run(100)          # settles onto the floor and slides
    d = sim.deformable
    v1, t1 = d.vel[0, 0], sim.time
    sim.run(300)
    v2, t2 = d.vel[0, 0], sim.time
    assert v2 > 0.5
    assert (v1 - v2) / (t2 - t1) == pytest.approx(mu * g, rel=0.02)


def test_checkpoint_without_the_friction_table_continues_with_its_one_friction(sphere):
    """A checkpoint of a deformable run holding one friction for every pair (dctl[DC_MU], no mu_tab)
    continues as the run with that friction as its material's; set_pair_friction between runs acts."""
    from graindem.bodies.deformable import DC_MU

    def build():
        sim = Simulation(dt=0.01, allow_unstable_dt=True, density=1.0, mu=0.3, gravity=(0, 0, -1.0))
        sim.set_box((-60, -30, -30), (60, 30, 30))
        sim.add_wall((0, 0, -10.0), (0, 0, 1))
        sim.add_deformable_grains(sphere, [[-8.0, 0, 0.0]], modes=[], velocities=[2.0, 0, 0])
        sim.set_deformable_contact(1e5, damping=2e4)
        return sim

    sim = build()
    sim.run(50)
    arrays, meta = sim.state_dict()
    del arrays["deform_mu_tab"], arrays["deform_o_mat"]
    arrays["deform_dctl"][DC_MU] = 0.3
    old = Simulation.from_state(arrays, meta)
    sim.run(50)
    old.run(50)
    np.testing.assert_array_equal(old.deformable.pos, sim.deformable.pos)
    np.testing.assert_array_equal(old.deformable.vel, sim.deformable.vel)
    v = sim.deformable.vel[0, 0]
    sim.set_pair_friction(0, 0, 0.0)
    sim.run(50)
    assert sim.deformable.vel[0, 0] == pytest.approx(v, rel=1e-3), "frictionless: no deceleration"


def test_templates_stored_once_and_critical_step(sphere):
    sim = Simulation(dt_fraction=0.2, density=2.0, mu=0.0, verbose=False)
    sim.set_box((-100, -100, -100), (100, 100, 100))
    response = LinearResponse([[MODAL_K]])
    sim.add_deformable_grains(sphere, [[-50, 0, 0], [0, 0, 0]], modal_mass=[[MODAL_MASS]], response=response)
    sim.add_deformable_grains(sphere, [[50, 0, 0]], modal_mass=[[MODAL_MASS]], response=response)
    sim.add_deformable_grains(sphere, [[0, 50, 0], [0, -50, 0]], modes=[])
    sim.set_deformable_contact(1e4)
    sim.setup()
    d = sim.deformable
    assert d.t_nmodes.tolist() == [1, 0] and d.tmpl.tolist() == [0, 0, 0, 1, 1]
    assert d.t_phi.size == 2 * sphere.phi0.values.size
    # by hand: the modal mass seen at the node moving most, a single node's contact, the modal frequency
    phi_max = np.abs(sphere.modes[0].displacement(sphere.nodes)).max()
    m = min(2.0 * sphere.volume, MODAL_MASS / phi_max ** 2)
    rigid = np.sqrt(m / (1e4 * sphere.node_areas.max()))
    modal = np.sqrt(MODAL_MASS / MODAL_K)
    assert sim.dt_crit == pytest.approx(min(rigid, modal), rel=1e-12)
    assert sim.dt == pytest.approx(0.2 * sim.dt_crit, rel=1e-12)
    assert "dt/dt_crit = 0.200" in sim.last_message


def test_deformed_surface_and_vtk(sphere, tmp_path):
    sim = Simulation(dt=0.01, allow_unstable_dt=True, density=1.0)
    sim.set_box((-30, -30, -30), (30, 30, 30))
    q = np.array([np.cos(0.3), 0.0, np.sin(0.3), 0.0])
    sim.add_deformable_grains(sphere, [[1.0, 2.0, 3.0]], modal_mass=[[MODAL_MASS]],
                              response=LinearResponse([[MODAL_K]]), eps=[0.1], orientations=q)
    sim.set_deformable_contact(1e4)
    sim.setup()
    d = sim.deformable
    v, f, gid = d.surfaces()
    ref = sphere.surface_vertices + 0.1 * sphere.modes[0].displacement(sphere.surface_vertices)
    np.testing.assert_allclose(v, ref @ d.rot[0].T + [1.0, 2.0, 3.0], atol=1e-12)
    d.write_vtk(str(tmp_path / "g"))
    assert (tmp_path / "g_surfaces.vtu").stat().st_size > 0 and (tmp_path / "g_contacts.vtu").exists()


def test_mixed_kinds_and_bad_contact_are_refused(sphere, ball):
    sim = Simulation(density=1.0)
    sim.set_box((-30, -30, -30), (30, 30, 30))
    sim.add_particles([[20.0, 0, 0]], [1.0])
    sim.add_deformable_grains(sphere, [[0.0, 0, 0]], modes=[])
    sim.set_deformable_contact(1e4)
    with pytest.raises(ValueError, match=r"spheres next to deformable grains .* as a shaped grain"):
        sim.setup()
    # the deformable contact governs every grain pair: a level-set law it cannot do, or other settings, is refused
    for law in ({"law": "hertz_curvature"}, {"stiffness": 1e4, "law": "node"}, {"stiffness": 2e4, "law": "area"}):
        both = Simulation(density=1.0)
        both.set_box((-30, -30, -30), (30, 30, 30))
        both.add_deformable_grains(sphere, [[-12.0, 0, 0]], modes=[])
        both.add_grains(ball, [[12.0, 0, 0]])
        both.set_deformable_contact(1e4)
        both.set_grain_contact(**law)
        with pytest.raises(ValueError, match="set_grain_contact .* set_deformable_contact"):
            both.setup()
    both.set_grain_contact(1e4, law="area")   # the same law and settings: accepted
    both.setup()
    assert both.kinds == {"levelset": 1, "deformable": 1}
    with pytest.raises(ValueError, match="kt_ratio"):
        sim.set_deformable_contact(1e4, kt_ratio=0.0)
    damped = Simulation(density=1.0, local_damping=0.5)
    damped.set_box((-30, -30, -30), (30, 30, 30))
    damped.add_deformable_grains(sphere, [[0.0, 0, 0]], modes=[])
    damped.set_deformable_contact(1e4)
    with pytest.raises(ValueError, match="local_damping"):
        damped.setup()
    with pytest.raises(ValueError, match="local_damping"):
        damped.set_local_damping(0.3)
    with pytest.raises(ValueError, match="modal_mass"):
        Simulation().add_deformable_grains(sphere, [[0.0, 0, 0]], modal_mass=[[1.0, 0], [0, 1]],
                                           response=LinearResponse([[1.0]]))


RESTART_SCRIPT = textwrap.dedent("""
    import sys
    from graindem.engine import checkpoint
    sim, _ = checkpoint.load(sys.argv[1], for_restart=True)
    sim.run(int(sys.argv[3]))
    checkpoint.save(sim, sys.argv[2])
""")


def assert_restart_continues_bit_for_bit(folder, m):
    """`folder`/a.h5 continued by m steps in a new process equals `folder`/straight.h5, array for array."""
    from graindem.io.checkpoint import load_checkpoint

    subprocess.run([sys.executable, "-c", RESTART_SCRIPT, str(folder / "a.h5"), str(folder / "restarted.h5"), str(m)],
                   check=True)
    straight, _ = load_checkpoint(folder / "straight.h5")
    restarted, _ = load_checkpoint(folder / "restarted.h5")
    assert set(straight) == set(restarted)
    for name in straight:
        np.testing.assert_array_equal(straight[name], restarted[name], err_msg=name)


def test_restart_in_a_new_process_continues_bit_for_bit(sphere, ball, tmp_path):
    """Deformable grains, a template without modes and a rigid level-set grain (add_grains, of a material
    whose pair friction is set) against each other, moving walls and a cylinder."""
    from graindem.engine import checkpoint

    def build():
        sim = Simulation(dt=0.01, allow_unstable_dt=True, density=1.0, mu=0.3, gravity=(0, 0, -1.0))
        other = sim.add_material(1e9, 0.3, 0.3, 1.0)
        sim.set_pair_friction(0, other, 0.6)
        sim.set_box((-40, -40, -40), (40, 40, 40))
        sim.add_wall((0, 0, -10.4), (0, 0, 1), velocity=(0.0, 0.0, 0.05))
        # a lid servo-controlled to a force (boundaries.walls), pressing the third grain from the start
        sim.add_wall((0, 0, 30.9), (0, 0, -1), force=2000.0, servo_gain=1e-4, max_speed=0.1)
        sim.add_cylinder((0, -14.0, 0), (1, 0, 0), 3.0)
        sim.add_deformable_grains(sphere, [[-10.3, 0, 0], [10.3, 0.5, 0]], modal_mass=[[MODAL_MASS]],
                                  response=LinearResponse([[MODAL_K]]), modal_damping=[[50.0]], eps=[0.01],
                                  velocities=[[0.5, -0.2, 0], [-0.5, 0, 0]])
        sim.add_deformable_grains(sphere, [[0, 0, 21.0]], modes=[], angular_velocities=[0.1, 0.2, 0.0])
        sim.add_grains(ball, [[-10.0, 20.2, 0.0]], velocities=[[0.0, -1.0, 0.0]], material=other)
        sim.set_deformable_contact(1e4, damping=10.0, pullback="corners", pullback_cache=True,
                                   inverse_iterations=1, inverse_method="newton")
        return sim

    n, m = 60, 60
    sim = build()
    sim.run(n)
    checkpoint.save(sim, tmp_path / "a.h5")
    sim.run(m)
    checkpoint.save(sim, tmp_path / "straight.h5")
    d = sim.deformable
    assert int(d.gctl[3]) > 0 and np.any(d.partner >= 0)   # contacts with history
    rigid = slice(int(d.hist_off[0]), int(d.hist_off[1]))   # row 0: the rigid grain, then the deformable ones
    assert np.any(d.partner[rigid] == 1) and np.any(d.partner[rigid] == -2), "the rigid grain touched row 1 and a wall"
    loaded, _ = checkpoint.load(tmp_path / "a.h5", for_restart=True)
    assert loaded.kinds == {"levelset": 1, "deformable": 3}
    assert_restart_continues_bit_for_bit(tmp_path, m)


def test_divergence_names_the_grains(sphere):
    from graindem.engine.simulation import Diverged

    sim = two_spheres(sphere, gap=-0.5, speed=0.0)
    sim.dt_requested = 1.0       # far above the critical step of the node contacts
    sim.allow_unstable_dt = True
    with pytest.raises(Diverged, match=r"deformable grain\(s\) \[0, 1\]") as info:
        sim.run(200)
    assert info.value.particles == [0, 1]


# ---------------------------------------------------------------- the deforming periodic cell
CELL = 100.0
PAIR_OFFSET = np.array([4.0, 19.0, 2.0])


def sheared_pair(tpl, centre):
    """Two deformable spheres pressed together in a periodic cell that shears in xy and shrinks along z."""
    sim = Simulation(density=1.0, mu=0.3, dt=0.01, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (CELL,) * 3, periodic=(True, True, True))
    c = np.asarray(centre, dtype=np.float64)
    u = PAIR_OFFSET / np.linalg.norm(PAIR_OFFSET)
    sim.add_deformable_grains(tpl, [c, c + PAIR_OFFSET], modal_mass=[[MODAL_MASS]],
                              response=LinearResponse([[MODAL_K]]), eps=[0.01], velocities=[0.3 * u + [0.02, 0, 0], -0.3 * u],
                              angular_velocities=[[0, 0, 0.01], [0.01, 0, 0]])
    sim.set_deformable_contact(1e3, damping=5.0)
    sim.control_shear("xy", 0.05)
    sim.control_axis(2, strain_rate=-0.05)
    return sim


def test_pair_across_the_faces_of_a_sheared_compressed_cell_feels_the_middle_forces(sphere):
    """The same pair in the middle and straddling the x, y (Lees-Edwards: the image shifts by the tilt)
    and z faces; its Love-Weber stress is the force on one grain times the branch to the other's image."""
    runs = []
    for centre in ((40.0, 30.0, 50.0), (-1.0, 90.5, 98.0)):
        sim = sheared_pair(sphere, centre)
        sim.run(39)
        h, vol = sim.cell_matrix, sim.volume   # the cell of the last force evaluation (the last step's start)
        sim.deformable.reset_window()
        sim.run(1)
        runs.append((sim, h, vol, sim.deformable.window_means()["position"]))
    (middle, h, vol, x), (across, _, _, x_across) = runs
    ref, d = middle.deformable, across.deformable
    assert int(ref.gctl[3]) > 4, "the pair must be in contact"
    assert h[1, 0] > 1.5 and h[2, 2] < 0.99 * CELL, "the cell must have sheared and shrunk"
    assert x_across[0, 1] > 0.9 * CELL and x_across[1, 1] < 0.1 * CELL, "the pair must straddle the y face"
    scale = np.abs(ref.force).max()
    np.testing.assert_allclose(d.force, ref.force, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(d.torque, ref.torque, rtol=0, atol=1e-9 * scale * 10.0)
    np.testing.assert_allclose(d.gen, ref.gen, rtol=0, atol=1e-9 * np.abs(ref.gen).max())
    for sim, pos in ((middle, x), (across, x_across)):
        # the branch from grain 0 to grain 1's nearest image through the cell's vectors (rows of h)
        b = pos[1] - pos[0]
        b = b - h.T @ np.round(np.linalg.solve(h.T, b))
        expected = np.outer(sim.deformable.force[1], b) / vol
        np.testing.assert_allclose(sim.stress(volume=vol), expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert np.trace(middle.stress()) > 0.0, "a repulsive contact is compressive (positive)"


def cell_collision(tpl, dt, duration=6.0, every=0.05):
    """Two deformable spheres at rest, brought into a frictional, damped collision by the cell's flow
    (shrinking along x, shearing in xy); returns (the largest drift of the energy balance sampled every
    `every`, the final energy terms)."""
    sim = Simulation(density=1.0, mu=0.3, dt=dt, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (CELL,) * 3, periodic=(True, True, True))
    sim.add_deformable_grains(tpl, [(30, 40, 50), (50.6, 43, 50.5)], modal_mass=[[MODAL_MASS]],
                              response=LinearResponse([[MODAL_K]]), modal_damping=[[1e4]])
    sim.set_deformable_contact(1e3, damping=20.0)
    sim.control_axis(0, strain_rate=-0.02)
    sim.control_shear("xy", 0.02)
    e0 = sim.deformable_energies()["balance"]
    worst = 0.0
    for _ in range(int(round(duration / every))):
        sim.run(int(round(every / dt)))
        worst = max(worst, abs(sim.deformable_energies()["balance"] - e0))
    return worst, sim.deformable_energies()


def test_energy_balance_with_the_cells_work_closes_and_converges_with_dt(sphere):
    coarse, e = cell_collision(sphere, 0.01)
    fine, e_fine = cell_collision(sphere, 0.005)
    # the cell's work is the only energy source: it went into motion, modes, friction and damping
    assert e["cell_work"] > 100.0 and e["kinetic"] > 0.5 * e["cell_work"]
    assert e["dissipated_friction"] > 0.1 and e["dissipated_contact_damping"] > 1.0
    assert e["dissipated_modal_damping"] > 1.0
    assert coarse < 0.01 * e["cell_work"]
    # first order (the modal leapfrog's half-step rates): halving dt halves the error
    assert fine < 0.6 * coarse
    assert e_fine["cell_work"] == pytest.approx(e["cell_work"], rel=1e-3)


SERVO_TARGET = 2.0


def test_servo_compresses_an_assembly_to_its_target_stress_and_restarts_bit_for_bit(tmp_path):
    """27 deformable spheres (3 per side: a periodic axis must hold more than two neighbour cutoffs) on a
    loose lattice, compressed by the stress servo on all three axes until the mean stress is the target
    at rest; then driven to a new target along x, checkpointed, and continued in a new process."""
    from graindem.engine import checkpoint

    tpl = compaction_sphere(n_nodes=100)
    spacing = 20.5
    pos = (np.indices((3, 3, 3)).reshape(3, -1).T + 0.5) * spacing
    pos += np.random.default_rng(4).uniform(-0.05, 0.05, pos.shape)
    sim = Simulation(density=1.0, mu=0.3, skin=0.5)
    sim.set_box((0, 0, 0), (3 * spacing,) * 3, periodic=(True, True, True))
    sim.add_deformable_grains(tpl, pos, modal_mass=[[MODAL_MASS]], response=LinearResponse([[1e7]]),
                              modal_damping=[[2e5]])
    sim.set_deformable_contact(1e4, damping=600.0)
    for axis in range(3):
        sim.control_axis(axis, stress=SERVO_TARGET, gain=0.004, max_rate=0.005)
    sim.run(1100)
    sig = sim.stress()
    assert np.trace(sig) / 3.0 == pytest.approx(SERVO_TARGET, rel=0.01)
    np.testing.assert_allclose(np.diag(sig), SERVO_TARGET, rtol=0.02)
    assert np.all(sim.box_lengths < 0.975 * 3 * spacing), "the servo must have compressed the cell"
    e = sim.deformable_energies()
    assert e["kinetic"] < 1e-3 * (e["contact"] + e["strain"]), "the assembly must be at rest"
    assert e["strain"] > 0.0 and e["cell_work"] > 0.0

    # a new target along x: the servo moves the cell again (and its integral term) across the restart
    sim.control_axis(0, stress=1.5 * SERVO_TARGET, gain=0.004, max_rate=0.005, integral_steps=50)
    n = m = 15
    sim.run(n)
    checkpoint.save(sim, tmp_path / "a.h5")
    length = sim.box_lengths[0]
    sim.run(m)
    checkpoint.save(sim, tmp_path / "straight.h5")
    assert sim.box_lengths[0] < length - 1e-4
    assert_restart_continues_bit_for_bit(tmp_path, m)

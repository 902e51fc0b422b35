"""LS-DEM contact and rigid-body dynamics against independent references.

References: the continuum limit of the area-weighted (Winkler) normal law, integrated exactly (quad) or in
closed form; conservation of energy, linear and angular momentum; Euler's equations of a free rigid body
integrated by scipy at tight tolerance; the Coulomb sliding threshold tan(theta) = mu and the sliding
acceleration g (sin theta - mu cos theta).
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp

from graindem.bodies.levelset import GC_NCP
from graindem.engine import Simulation
from graindem.particles import LevelSetGrain

R = 1.0
ODD_QUAT = (0.3, 0.2, 0.5, 0.1)  # a generic orientation: no grid axis lines up with the contact


def winkler_sphere_pair(delta, ks):
    """Exact continuum force of the area law between two spheres of radius R at overlap delta.

    Every surface point of A inside B pushes with traction (ks/2) * depth along B's radial direction, and
    symmetrically for B in A (the 'both' weighting), so F = ks * integral over A's cap of depth * cos.
    """
    d = 2 * R - delta

    def integrand(th):
        rb = math.sqrt(R * R + d * d - 2 * R * d * math.cos(th))
        return (R - rb) * (d - R * math.cos(th)) / rb * 2 * math.pi * R * R * math.sin(th)

    th_max = math.acos(d / (2 * R))
    return ks * quad(integrand, 0.0, th_max, epsabs=0.0, epsrel=1e-12)[0]


def grain_sim(*, dt, stiffness, law="area", mu=0.0, kt_ratio=2.0 / 7.0, damping_ratio=0.0, contact="both",
              gravity=(0.0, 0.0, 0.0), box=20.0):
    """A Simulation of level-set grains in a box of half-width `box` (walls added by the tests)."""
    sim = Simulation(mu=mu, density=1.0, gravity=gravity, dt=dt, allow_unstable_dt=True)
    sim.set_box((-box, -box, -box), (box, box, box))
    sim.set_grain_contact(stiffness, law=law, kt_ratio=kt_ratio, damping_ratio=damping_ratio, contact=contact)
    return sim


def add_grain(sim, grain, position, quaternion=None, velocity=None, angular_velocity=None, density=1.0,
              motion="dynamic"):
    """One grain of its own material (density), with the simulation's friction; returns its index."""
    material = sim.add_material(sim.E, sim.nu, sim.mu, density) if density != 1.0 else 0
    return int(sim.add_grains(grain, [position], orientations=quaternion, velocities=velocity,
                              angular_velocities=angular_velocity, material=material, motion=motion)[0])


def static_force(grain, law, k, delta, wall, contact="both"):
    sim = grain_sim(dt=1.0, law=law, stiffness=k, contact=contact)
    if wall:
        add_grain(sim, grain, (0, 0, R - delta), quaternion=ODD_QUAT)
        sim.add_wall((0, 0, 0), (0, 0, 1))
        sim.setup()
        return sim.grains.force[0, 2]
    add_grain(sim, grain, (0, 0, 0), quaternion=ODD_QUAT)
    add_grain(sim, grain, (2 * R - delta, 0, 0))
    sim.setup()
    f = sim.grains.force
    np.testing.assert_allclose(f[0], -f[1], atol=1e-12)  # action = reaction
    return -f[0, 0]


def test_area_law_converges_to_the_continuum_sphere_contact():
    """Grid refinement (nodes ~ area/h^2): the area-weighted force tends to the exact continuum force.

    Sphere on a plane: F = pi ks R delta^2 exactly (cap integral of ks (delta - R(1 - cos))).
    Two spheres: F from the exact integral above (-> pi ks R* delta^2 for delta << R).
    The level-set sphere is slightly small (the trilinear zero set of a convex distance lies inside it
    by O(h^2)), so the error falls like h^2 / delta: measured 18 %, 7.7 %, 2.2 % at h = R/6, R/9, R/18
    (plane, delta = 0.05 R). Asserted: monotone decrease, and < 3 % at h = R/18 for delta = 0.1 R.
    """
    ks, delta = 1.0, 0.1
    exact_pair = winkler_sphere_pair(delta, ks)
    assert exact_pair == pytest.approx(math.pi * ks * 0.5 * R * delta**2, rel=0.1)  # small-delta limit
    errors_wall, errors_pair = [], []
    for h in (R / 6, R / 9, R / 18):
        g = LevelSetGrain.sphere(R, spacing=h)
        errors_wall.append(abs(static_force(g, "area", ks, delta, True) / (math.pi * ks * R * delta**2) - 1))
        errors_pair.append(abs(static_force(g, "area", ks, delta, False) / exact_pair - 1))
    assert errors_wall[0] > errors_wall[1] > errors_wall[2]
    assert errors_pair[0] > errors_pair[1] > errors_pair[2]
    assert errors_wall[2] < 0.03 and errors_pair[2] < 0.03
    # master/slave ("one": only one grain's nodes, full weight) has the same continuum limit
    assert static_force(g, "area", ks, delta, False, contact="one") / exact_pair == pytest.approx(1.0, abs=0.04)


def test_node_count_area_law_converges_per_node_law_does_not():
    """At a fixed grid, refining the nodes: the area law stays put (within the sampling noise of the
    contact patch), the Kawamoto per-node penalty grows in proportion to the node count."""
    delta, h = 0.1, R / 12
    f_area, f_node = [], []
    counts = (500, 1000, 2000, 4000)
    for n in counts:
        g = LevelSetGrain.sphere(R, spacing=h, n_nodes=n)
        f_area.append(static_force(g, "area", 1.0, delta, True))
        f_node.append(static_force(g, "node", 1.0, delta, True))
    f_area = np.array(f_area) / (math.pi * R * delta**2)
    f_node = np.array(f_node)
    np.testing.assert_allclose(f_area, 1.0, atol=0.04)  # measured 0.975..0.979
    # per-node: force / node count is what stays constant (doubling nodes doubles the force)
    ratio = f_node / np.array(counts)
    np.testing.assert_allclose(ratio / ratio[0], 1.0, atol=0.1)
    assert f_node[-1] / f_node[0] > 6.0


def free_flight_setup():
    return LevelSetGrain.ellipsoid(1.0, 0.6, 0.4, spacing=0.08, n_nodes=600)


def test_frictionless_ellipsoid_collision_conserves_energy_and_momentum():
    e = free_flight_setup()
    sim = grain_sim(dt=2e-4, law="area", stiffness=2e5, mu=0.0, damping_ratio=0.0)
    q = np.array([math.cos(0.3), 0.6 * math.sin(0.3), 0.8 * math.sin(0.3), 0.0])
    add_grain(sim, e, (0, 0, 0), velocity=(0.5, 0.05, 0), angular_velocity=(0, 0, 1.0), density=2.0)
    add_grain(sim, e, (2.3, 0.3, 0.1), quaternion=q, velocity=(-0.5, 0, 0), angular_velocity=(0.5, 0, 0),
              density=1.0)
    sim.setup()
    g = sim.grains
    E0, P0, L0 = g.kinetic_energy(), g.momentum(), g.angular_momentum()
    touched = False
    peak = 0.0
    for _ in range(60):
        sim.run(250)
        touched |= g.gctl[GC_NCP] > 0
        peak = max(peak, g.contact_energy() / E0)
        np.testing.assert_allclose(g.momentum(), P0, atol=1e-12 * np.linalg.norm(P0) + 1e-14)
        np.testing.assert_allclose(g.angular_momentum(), L0, atol=1e-11)
        # during contact: kinetic + penalty energy is conserved (the normal force is a potential gradient)
        assert (g.kinetic_energy() + g.contact_energy()) / E0 == pytest.approx(1.0, abs=2e-3)
    assert touched and peak > 1e-3, "the grains must actually collide"
    assert g.gctl[GC_NCP] == 0, "and separate"
    # after separation: energy error of the velocity-Verlet collision, O(dt^2) (measured ~2e-5)
    assert g.kinetic_energy() / E0 == pytest.approx(1.0, abs=2e-4)


def test_torque_free_tumbling_matches_euler_equations():
    """Spin near the intermediate axis (unstable: it flips); compare with Euler's equations solved by
    scipy (rtol 1e-11). Splitting integrator: error O(dt^2); dt = 1e-3 over t = 10 (the flip is at ~8.5)."""
    e = free_flight_setup()
    sim = grain_sim(dt=1e-3, law="area", stiffness=1.0)
    w0 = np.array([0.05, 2.0, 0.05])  # body = world at t = 0
    add_grain(sim, e, (0, 0, 0), angular_velocity=w0, density=3.0)
    sim.setup()
    g = sim.grains
    I = g.inertia[0].copy()
    L0 = g.angular_momentum().copy()
    E0 = g.kinetic_energy()

    def euler(t, L):  # body-frame angular momentum: dL/dt = L x omega
        return np.cross(L, L / I)

    T = 10.0
    sol = solve_ivp(euler, (0, T), I * w0, rtol=1e-11, atol=1e-13, dense_output=True)
    flipped = False
    for k in range(1, 11):
        sim.run(1000)
        Lb = g.rot[0].T @ g.angmom[0]
        ref = sol.sol(k * 1000 * 1e-3)
        flipped |= ref[1] < 0
        np.testing.assert_allclose(Lb, ref, atol=1e-4 * np.linalg.norm(ref))
        np.testing.assert_allclose(g.angular_momentum(), L0, atol=1e-12 * np.linalg.norm(L0))
        assert g.kinetic_energy() == pytest.approx(E0, rel=1e-5)
    assert flipped, "the run must cover a flip of the intermediate axis"


@pytest.mark.parametrize("ratio,slides", [(0.8, False), (1.25, True)])
def test_sliding_starts_at_tan_theta_equal_mu(ratio, slides):
    """A flat rounded cuboid on a fixed level-set slab (grain-grain friction), gravity tilted by theta.

    tan(theta) = 0.8 mu: it sticks (tangential velocity decays to ~0).
    tan(theta) = 1.25 mu: it slides with a = g (sin theta - mu cos theta).
    """
    mu, g0 = 0.5, 9.81
    theta = math.atan(ratio * mu)
    block = LevelSetGrain.rounded_cuboid(1.0, 1.0, 0.3, 0.1, spacing=0.075, n_nodes=800)
    slab = LevelSetGrain.rounded_cuboid(4.0, 4.0, 0.3, 0.1, spacing=0.075, n_nodes=6000)
    rho = 1.0
    m = rho * block.volume
    A = 4.0  # contact area (flat part 1.8^2 plus rounded rim)
    ks = 2 * m * g0 / (A * 0.01)  # ~0.01 penetration under the weight (both directions at half weight)
    omega = math.sqrt(ks * A / m)
    dt = 0.05 / omega
    sim = grain_sim(dt=dt, law="area", stiffness=ks, mu=mu, damping_ratio=0.5,
                    gravity=(g0 * math.sin(theta), 0.0, -g0 * math.cos(theta)))
    add_grain(sim, slab, (0, 0, -0.3), motion="fixed")
    b = add_grain(sim, block, (-2.0, 0, 0.3 - 0.002), density=rho)
    sim.run(int(0.6 / dt))  # the drop and the tangential rocking it starts die out
    g = sim.grains
    t1, v1, x1 = sim.time, g.vel[b, 0], g.pos[b, 0]
    sim.run(int(0.6 / dt))
    t2, v2, x2 = sim.time, g.vel[b, 0], g.pos[b, 0]
    assert np.all(g.pos[0] == (0, 0, -0.3)), "a fixed grain does not move"
    if slides:
        a_ref = g0 * (math.sin(theta) - mu * math.cos(theta))
        assert (v2 - v1) / (t2 - t1) == pytest.approx(a_ref, rel=0.05)
    else:
        # < 0.1 % of the distance it would slide without friction in the same time
        assert abs(x2 - x1) < 1e-3 * 0.5 * g0 * math.sin(theta) * (t2 - t1) ** 2
    assert abs(g.vel[b, 2]) < 1e-2  # stays on the slab


def test_kinematic_body_follows_its_prescription_and_pushes():
    s = LevelSetGrain.sphere(R, spacing=R / 5, n_nodes=300)
    sim = grain_sim(dt=1e-3, law="area", stiffness=1e3)
    pusher = add_grain(sim, s, (-2.5, 0, 0), velocity=(1.0, 0, 0), angular_velocity=(0, 0, 2.0), motion="kinematic")
    ball = add_grain(sim, s, (0, 0, 0), density=1.0)
    sim.run(1000)
    g = sim.grains
    assert g.pos[pusher] == pytest.approx([-1.5, 0, 0], abs=1e-9)
    # rotated by 2 rad about z: quaternion (cos 1, 0, 0, sin 1)
    assert g.quat[pusher] == pytest.approx([math.cos(1.0), 0, 0, math.sin(1.0)], abs=1e-9)
    assert g.vel[ball, 0] > 0.5  # it was pushed


def test_shear_history_is_dropped_when_a_node_leaves_contact():
    block = LevelSetGrain.rounded_cuboid(1.0, 1.0, 0.3, 0.1, spacing=0.1, n_nodes=300)
    sim = grain_sim(dt=1e-3, law="area", stiffness=1e4, mu=0.5)
    k = add_grain(sim, block, (0, 0, 0.29), velocity=(0.1, 0, 0))
    sim.add_wall((0, 0, 0), (0, 0, 1))
    sim.run(1)
    g = sim.grains
    touching = g.last_step == sim.step_count
    assert touching.any() and np.all(np.linalg.norm(g.shear[touching], axis=1) > 0)
    g.pos[k, 2] = 5.0  # lift it off: no node touches at the next step
    sim.run(1)
    g.pos[k, 2] = 0.29
    g.vel[k] = 0.0
    g.angmom[k] = 0.0
    sim.run(1)
    # back in contact with zero relative velocity: a fresh spring, not the old one
    touching = g.last_step == sim.step_count
    assert touching.any()
    assert np.abs(g.shear[touching]).max() < 1e-6


def test_bad_simulation_input():
    s = LevelSetGrain.sphere(R, spacing=R / 5, n_nodes=100)
    with pytest.raises(ValueError, match="dt"):
        grain_sim(dt=0.0, stiffness=1.0)
    with pytest.raises(ValueError, match="law"):
        grain_sim(dt=1.0, stiffness=1.0, law="hertz")
    with pytest.raises(ValueError, match="stiffness"):
        grain_sim(dt=1.0, stiffness=-1.0)
    with pytest.raises(ValueError, match="damping_ratio"):
        grain_sim(dt=1.0, stiffness=1.0, damping_ratio=2.0)
    sim = grain_sim(dt=1.0, stiffness=1.0)
    with pytest.raises(ValueError, match="density"):
        sim.add_material(70e9, 0.25, 0.5, 0.0)
    with pytest.raises(ValueError, match="motion"):
        sim.add_grains(s, [(0, 0, 0)], motion="floating")
    with pytest.raises(ValueError, match="material"):
        sim.add_grains(s, [(0, 0, 0)], material=3)
    with pytest.raises(ValueError, match="positions"):
        sim.add_grains(s, [(0, 0, np.nan)])
    with pytest.raises(ValueError, match="normal"):
        sim.add_wall((0, 0, 0), (0, 0, 0))

"""Sphere engine core: collisions, restitution, resting contact, neighbour search, input checks.

References: Hertz's impact solution (collision time as a quadrature, independent of the
integrator), conservation of momentum and energy, the requested restitution coefficient, static
equilibrium (a resting sphere carries m g; its overlap is Hertz's (m g / C)^(2/3)), and a
brute-force O(N^2) pair search.
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from graindem.contact import state as S
from graindem.core.layout import ICTL_NPAIRS, ICTL_NREBUILDS
from graindem.engine.simulation import Simulation

E, NU, RHO = 70e9, 0.25, 2500.0
ESTAR = E / (2.0 * (1.0 - NU * NU))


def _pair(law="linear", v=0.1, R=1e-3, dt=2e-8, **kw):
    sim = Simulation(law=law, E=E, nu=NU, mu=0.5, density=RHO, dt=dt, **kw)
    sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01), periodic=(True, True, True))
    sim.add_particles([[-R - 2e-6, 0, 0], [R + 2e-6, 0, 0]], [R, R], velocities=[[v, 0, 0], [-v, 0, 0]])
    sim.setup()
    return sim


def _collide(sim, max_steps=5000):
    """Step until the pair has touched and separated; returns the number of steps in contact."""
    in_contact = 0
    touched = False
    for _ in range(max_steps):
        sim.run(1)
        if sim.pfs[0, S.F_DELTA] > 0.0:
            in_contact += 1
            touched = True
        elif touched:
            return in_contact
    raise AssertionError("the collision did not finish")


@pytest.mark.parametrize("law", ["linear", "mindlin"])
def test_head_on_elastic_collision_conserves_momentum_energy_and_lasts_hertz_time(law):
    v, R = 0.1, 1e-3
    sim = _pair(law, v=v, R=R)
    m = sim.mass[0]
    p0 = (sim.mass[:, None] * sim.vel).sum(axis=0)
    ke0 = sim.measure()["kinetic_energy"]
    n = _collide(sim)
    p1 = (sim.mass[:, None] * sim.vel).sum(axis=0)
    # Pair forces are equal and opposite in the same floating-point operations: momentum to round-off.
    assert np.all(np.abs(p1 - p0) < 1e-15 * m * v)
    ke1 = sim.measure()["kinetic_energy"]
    # Leapfrog with ~450 steps per collision: energy error O((dt/t_c)^2) ~ 1e-5; 1e-4 allowed.
    assert abs(ke1 / ke0 - 1.0) < 1e-4
    # Hertz impact (approach speed 2v, reduced mass m/2): t_c = 2 (dmax / u) int_0^1 (1 - x^2.5)^-1/2 dx
    u = 2.0 * v
    mstar = 0.5 * m
    C = 4.0 / 3.0 * ESTAR * math.sqrt(0.5 * R)
    dmax = (5.0 * mstar * u * u / (4.0 * C)) ** 0.4
    tc = 2.0 * dmax / u * quad(lambda x: (1.0 - x ** 2.5) ** -0.5, 0.0, 1.0, limit=200)[0]
    # counting steps in contact resolves t_c to +-1 step (dt/t_c ~ 1/450): 1 % tolerance
    assert n * sim.dt == pytest.approx(tc, rel=0.01)
    # the contact released its state when it opened
    assert sim.pfs[0, S.F_N] == 0.0 and sim.pist[0, S.I_HEAD] == -1


@pytest.mark.parametrize("e", [0.3, 0.7, 0.95])
def test_viscous_damping_gives_the_requested_restitution(e):
    for v in (0.05, 0.5):  # the damping law makes e independent of the impact speed
        sim = _pair("linear", v=v, restitution=e, dt=1e-8)
        _collide(sim, max_steps=20000)
        e_measured = (sim.vel[1, 0] - sim.vel[0, 0]) / (2.0 * v)
        # the discrete collision (~400-1500 steps) reproduces the continuous ODE to ~0.1 %; 1 % allowed
        assert e_measured == pytest.approx(e, rel=0.01)


def test_sphere_resting_on_a_wall_carries_its_weight_with_the_hertz_overlap():
    R = 1e-3
    g = 9.81
    sim = Simulation(law="mindlin", E=E, nu=NU, mu=0.5, density=RHO, gravity=(0, 0, -g), local_damping=0.5, dt=1e-6)
    sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01))
    sim.add_wall((0, 0, 0), (0, 0, 1))
    sim.add_particles([[0.0, 0.0, R]], [R])
    sim.run(3000)
    m = sim.mass[0]
    fw = sim.wall_forces()[0]
    # static equilibrium: the floor carries the weight (local damping vanishes with the velocity)
    np.testing.assert_allclose(fw, [0.0, 0.0, -m * g], rtol=1e-6, atol=1e-12 * m * g)
    C = 4.0 / 3.0 * ESTAR * math.sqrt(R)  # sphere on a plane: R* = R
    overlap = R - sim.pos[0, 2]
    assert overlap == pytest.approx((m * g / C) ** (2.0 / 3.0), rel=1e-5)
    meas = sim.measure()
    assert meas["n_wall_contacts"] == 1


def _brute_pairs(pos, r, L, periodic, cut_extra):
    d = pos[None, :, :] - pos[:, None, :]
    for k in range(3):
        if periodic[k]:
            d[..., k] -= L[k] * np.floor(d[..., k] / L[k] + 0.5)
    dist = np.sqrt((d ** 2).sum(-1))
    within = dist < r[:, None] + r[None, :] + cut_extra
    i, j = np.nonzero(np.triu(within, 1))
    return set(zip(i.tolist(), j.tolist()))


def _random_packing(n, L, rng, rmin, rmax):
    pos = rng.uniform(0, L, size=(n, 3))
    r = rng.uniform(rmin, rmax, n)
    return pos, r


@pytest.mark.parametrize("periodic", [(True, True, True), (False, True, False)])
def test_cell_list_finds_exactly_the_brute_force_pairs(periodic):
    rng = np.random.default_rng(11)
    L = 0.012
    pos, r = _random_packing(600, L, rng, 0.4e-3, 0.6e-3)
    sim = Simulation(law="linear", E=E, nu=NU, mu=0.3, density=RHO, max_initial_overlap=2.0, diverge_overlap=1.0,
                     dt=1e-7, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=periodic)
    sim.add_particles(pos, r)
    sim.setup()
    m = int(sim.ictl[ICTL_NPAIRS])
    listed = set(zip(sim.pi[:m].tolist(), sim.pj[:m].tolist()))
    assert len(listed) == m  # no duplicates
    brute = _brute_pairs(sim.pos, sim.radius, np.full(3, L), periodic, sim.skin)
    assert listed == brute
    assert len(brute) > 400


def _gas(n, L, rng, rmin, rmax):
    """Non-overlapping random spheres in a periodic cube (random sequential addition)."""
    pos = []
    r = []
    while len(pos) < n:
        x = rng.uniform(0, L, 3)
        ri = rng.uniform(rmin, rmax)
        if pos:
            d = np.asarray(pos) - x
            d -= L * np.floor(d / L + 0.5)
            if np.any(np.sqrt((d ** 2).sum(1)) < np.asarray(r) + ri):
                continue
        pos.append(x)
        r.append(ri)
    return np.array(pos), np.array(r)


def test_neighbour_list_always_holds_every_overlapping_pair_while_moving_in_a_deforming_cell():
    rng = np.random.default_rng(5)
    L = 0.012
    n = 500
    pos, r = _gas(n, L, rng, 0.3e-3, 0.5e-3)
    sim = Simulation(law="jaeger", E=1e7, nu=NU, mu=0.3, density=RHO, restitution=0.8, max_initial_overlap=2.0,
                     diverge_overlap=1.0, dt=2e-6, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, r, velocities=rng.normal(size=(n, 3)) * 0.3)
    sim.control_axis(2, strain_rate=-20.0)
    sim.control_axis(0, strain_rate=10.0)
    sim.setup()
    touching = 0
    for _ in range(20):
        sim.run(20)
        Lnow = sim.box_lengths
        brute = _brute_pairs(sim.pos, sim.radius, Lnow, (True, True, True), 0.0)
        m = int(sim.ictl[ICTL_NPAIRS])
        listed = set(zip(sim.pi[:m].tolist(), sim.pj[:m].tolist()))
        assert brute <= listed
        # every live history point belongs to a live contact row (nothing leaks when pairs leave)
        assert sim.store.n_live == int(sim.pist[:m, S.I_LEN].sum())
        touching += sim.measure()["n_contacts"]
    assert sim.ictl[ICTL_NREBUILDS] > 10 and touching > 50
    # the cell stretches by (1 + rate dt) per step (forward Euler of dL/dt = rate L)
    assert sim.box_lengths[2] / L == pytest.approx((1.0 - 20.0 * sim.dt) ** sim.step_count, rel=1e-12)


def _small(**kw):
    sim = Simulation(**kw)
    sim.set_box((0, 0, 0), (0.01, 0.01, 0.01), periodic=(True, True, True))
    return sim


def test_bad_input_is_refused_with_a_message_naming_the_cause():
    with pytest.raises(ValueError, match="law must be one of"):
        Simulation(law="hooke")
    sim = _small()
    with pytest.raises(ValueError, match="radii must be finite and > 0"):
        sim.add_particles([[0.001, 0.001, 0.001]], [-1e-3])
    with pytest.raises(ValueError, match="density"):
        Simulation(density=-1.0)
    with pytest.raises(ValueError, match="restitution"):
        Simulation(restitution=1.5)
    sim = _small(dt=1e-3)
    sim.add_particles([[0.002, 0.002, 0.002]], [1e-3])
    with pytest.raises(ValueError, match="exceeds the critical time step"):
        sim.setup()
    sim = _small(dt=1e-3, allow_unstable_dt=True)
    sim.add_particles([[0.002, 0.002, 0.002]], [1e-3])
    sim.setup()  # an explicit override is accepted
    assert sim.dt == 1e-3
    sim = _small(max_initial_overlap=0.05)
    sim.add_particles([[0.002, 0.002, 0.002], [0.0039, 0.002, 0.002]], [1e-3, 1e-3])
    with pytest.raises(ValueError, match=r"particles 0 and 1 overlap 0.1"):
        sim.setup()
    sim = Simulation()
    sim.set_box((0, 0, 0), (0.004, 0.02, 0.02), periodic=(True, True, True))
    sim.add_particles([[0.002, 0.002, 0.002]], [1e-3])
    with pytest.raises(ValueError, match="periodic box length along axis 0"):
        sim.setup()


def test_divergence_stops_the_run_and_names_the_contact():
    from graindem.engine.simulation import Diverged
    R = 1e-3
    sim = Simulation(law="linear", E=E, nu=NU, density=RHO, dt=2e-6, allow_unstable_dt=True)
    sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01), periodic=(True, True, True))
    sim.add_particles([[-R - 1e-6, 0, 0], [R + 1e-6, 0, 0]], [R, R], velocities=[[50.0, 0, 0], [-50.0, 0, 0]])
    seen = []
    with pytest.raises(Diverged, match="particles 0 and 1") as info:
        sim.run(1000, on_diverge=lambda s: seen.append(s.step_count) or "ckpt.h5")
    assert info.value.contacts == [(0, 1)] and seen and "ckpt.h5" in str(info.value)

"""The per-law force passes of the engine (kernels.pair_forces / wall_forces dispatch to one compiled
pass per law): each gives the hand-computed force of a single contact.

Reference, derived by hand from the Hertz-Mindlin formulas (contact.hertz's docstring), not from
the code: two spheres (or a sphere and a wall) overlapping by delta carry the normal force
N = 4/3 E* sqrt(R*) delta^(3/2); a tangential slide by ds from an unloaded contact at fixed delta
gives T = k_t ds with k_t = 4 G a / (2 - nu), a = sqrt(R* delta), opposing the motion, for every
law (linear with kt_linear = 0 and mindlin are linear in ds; md_incremental and jaeger start with
that slope and deviate by O(ds / s*), s* = mu N / k_t the slide to gross sliding, here 1e-5 of it).
Forces, torques (lever r - delta/2 about each centre, r - delta for a wall) and the Love-Weber sum
f (x) l follow from statics.
"""

import math

import numpy as np
import pytest

from graindem.boundaries.walls import wall_forces
from graindem.core.exact_sum import new_accumulator
from graindem.core.layout import ACC_STRESS, ACC_WALL, ICTL_LAW, ICTL_NPAIRS, N_CONTACT_LIMBS, N_PRM, PAIR_INDEX
from graindem.engine.history import refresh_live
from graindem.engine.pair_pass import ALL_STRESS_COMPONENTS, N_SC, pair_forces
from graindem.engine.simulation import Simulation

E, NU, MU, RHO = 70e9, 0.25, 0.5, 2500.0
ESTAR = E / (2.0 * (1.0 - NU * NU))
G = E / (2.0 * (1.0 + NU))
LAWS = ("linear", "mindlin", "md_incremental", "jaeger")
# md_incremental and jaeger: T/(k_t ds) = 1 - O(ds/s*) with ds/s* = 1e-5 below; the linear laws exactly
# (up to rounding of the frame rotation, 1e-15)
SLIDE = 1e-5
RTOL = {"linear": 1e-12, "mindlin": 1e-12, "md_incremental": 2e-5, "jaeger": 2e-5}


def _scratch(sim):
    cap = sim.pi.shape[0]
    return np.full(N_PRM, -1.0), np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX)


def _live(sim):
    live = np.empty(sim.pi.shape[0], dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    return live


def _pair_call(sim, prm, sc, act):
    st = sim.store
    sim.force[:] = 0.0
    sim.torque[:] = 0.0
    ok = pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab, sim.cell,
                     sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm, st.pts,
                     st.nxt, st.meta, sim.acc, sim.out, sc, act, _live(sim), sim.stress_limbs, ALL_STRESS_COMPONENTS)
    assert ok


def _wall_call(sim, prm):
    st = sim.store
    sim.force[:] = 0.0
    sim.torque[:] = 0.0
    # the walls' share of the stress sum alone: an empty accumulator in place of the pair pass's
    ok = wall_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab, sim.ctl,
                     sim.ictl, sim.walls, sim.wcand, sim.wfs, sim.wist, sim.wcq, sim.wk, sim.wm, st.pts, st.nxt,
                     st.meta, sim.acc, sim.out, new_accumulator(N_CONTACT_LIMBS),
                     new_accumulator(3 * sim.walls.shape[0]),
                     ALL_STRESS_COMPONENTS)
    assert ok


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _tangent(n):
    t = np.cross(n, [0.3, -0.7, 0.2])
    return t / np.linalg.norm(t)


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("energy", [False, True])
def test_pair_pass_of_each_law_gives_hertz_normal_and_mindlin_tangential_force(law, energy):
    ri, rj = 1.0e-3, 0.6e-3
    delta = 2e-6
    rstar = ri * rj / (ri + rj)
    n = _unit((0.3, -0.5, 0.8))
    sim = Simulation(law=law, E=E, nu=NU, mu=MU, density=RHO, dt=1e-8, energy_accounting=energy)
    sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01), periodic=(True, True, True))
    sim.add_particles([[0.0, 0.0, 0.0], list((ri + rj - delta) * n)], [ri, rj])
    sim.setup()
    # rows may be renumbered at the rebuild (cell order): find them by the order of adding
    i = int(np.flatnonzero(sim.ids == 0)[0])
    j = 1 - i
    if int(sim.pi[0]) != i:
        # the row may hold the pair the other way round: then its normal is -n
        i, j = j, i
        n = -n
    assert int(sim.ictl[ICTL_LAW]) == ["linear", "mindlin", "md_incremental", "jaeger"].index(law)
    prm, sc, act = _scratch(sim)
    sim.vel[:] = 0.0
    sim.omega[:] = 0.0
    # first touch: N only, the frame is made
    _pair_call(sim, prm, sc, act)
    N = 4.0 / 3.0 * ESTAR * math.sqrt(rstar) * delta ** 1.5
    dist = ri + rj - delta
    np.testing.assert_allclose(sim.force[j], N * n, rtol=1e-12, atol=1e-12 * N)
    np.testing.assert_allclose(sim.force[i], -N * n, rtol=1e-12, atol=1e-12 * N)
    np.testing.assert_allclose(sim.torque, 0.0, atol=1e-12 * N * ri)
    stress = sim.acc[ACC_STRESS:ACC_STRESS + 9].reshape(3, 3)
    np.testing.assert_allclose(stress, np.outer(N * n, dist * n), atol=1e-12 * N * dist)
    # j slides along t at fixed overlap for one step: ds = SLIDE * s*
    a = math.sqrt(rstar * delta)
    kt = 4.0 * G * a / (2.0 - NU)
    ds = SLIDE * MU * N / kt
    t = _tangent(n)
    sim.vel[j] = ds / sim.dt * t
    _pair_call(sim, prm, sc, act)
    f_j = N * n - kt * ds * t
    lever_i = ri - 0.5 * delta
    lever_j = rj - 0.5 * delta
    tol = RTOL[law] * kt * ds + 1e-13 * N
    np.testing.assert_allclose(sim.force[j], f_j, atol=tol)
    np.testing.assert_allclose(sim.force[i], -f_j, atol=tol)
    np.testing.assert_allclose(sim.torque[i], -lever_i * np.cross(n, f_j), atol=tol * ri)
    np.testing.assert_allclose(sim.torque[j], -lever_j * np.cross(n, f_j), atol=tol * rj)
    stress = sim.acc[ACC_STRESS:ACC_STRESS + 9].reshape(3, 3)
    np.testing.assert_allclose(stress, np.outer(f_j, dist * n), atol=tol * dist)


@pytest.mark.parametrize("law", LAWS)
def test_wall_pass_of_each_law_gives_hertz_normal_and_mindlin_tangential_force(law):
    r = 1.0e-3
    delta = 3e-6
    sim = Simulation(law=law, E=E, nu=NU, mu=MU, density=RHO, dt=1e-8)
    sim.set_box((-0.01, -0.01, 0.0), (0.01, 0.01, 0.01))
    floor = sim.add_wall((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    sim.add_wall((0.0, 0.0, 0.01), (0.0, 0.0, -1.0))   # a second wall: rows are i * n_walls + w
    sim.add_particles([[1e-3, -2e-3, r - delta]], [r])
    sim.setup()
    prm, _, _ = _scratch(sim)
    sim.vel[:] = 0.0
    sim.omega[:] = 0.0
    _wall_call(sim, prm)
    N = 4.0 / 3.0 * ESTAR * math.sqrt(r) * delta ** 1.5
    up = np.array([0.0, 0.0, 1.0])
    np.testing.assert_allclose(sim.force[0], N * up, atol=1e-12 * N)
    w = floor
    np.testing.assert_allclose(sim.acc[ACC_WALL + 3 * w:ACC_WALL + 3 * w + 3], -N * up, atol=1e-12 * N)
    a = math.sqrt(r * delta)
    kt = 4.0 * G * a / (2.0 - NU)
    ds = SLIDE * MU * N / kt
    t = _unit((0.6, 0.8, 0.0))
    sim.vel[0] = ds / sim.dt * t
    _wall_call(sim, prm)
    f_p = N * up - kt * ds * t          # on the particle: friction opposes its slide
    tol = RTOL[law] * kt * ds + 1e-13 * N
    np.testing.assert_allclose(sim.force[0], f_p, atol=tol)
    # torque about the centre of a force acting at the wall plane, a lever r - delta along -up
    np.testing.assert_allclose(sim.torque[0], np.cross(-(r - delta) * up, f_p), atol=tol * r)
    np.testing.assert_allclose(sim.acc[ACC_WALL + 3 * w:ACC_WALL + 3 * w + 3], -f_p, atol=tol)

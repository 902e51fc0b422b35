"""The pair pass's skip flags (kernels.refresh_live): a row that neither touches nor holds history
is passed over without reading its state, so the flags must follow a contact through every change.

References: Hertz's N = 4/3 E* sqrt(R*) delta^(3/2) and the state an opened contact must have
(zeroed, its history back in the store).
"""

import math

import numpy as np
import pytest

from graindem.contact import state as S
from graindem.contact.store import M_LIVE
from graindem.core.layout import ICTL_NPAIRS, N_PRM, PAIR_INDEX
from graindem.engine.history import refresh_live
from graindem.engine.pair_pass import ALL_STRESS_COMPONENTS, N_SC, pair_forces
from graindem.engine.simulation import Simulation


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


E, NU, MU, RHO = 70e9, 0.25, 0.5, 2500.0
ESTAR = E / (2.0 * (1.0 - NU * NU))


def _pair(sim, prm, sc, act, live):
    st = sim.store
    sim.force[:] = 0.0
    sim.torque[:] = 0.0
    assert pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab, sim.cell,
                       sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm, st.pts,
                       st.nxt, st.meta, sim.acc, sim.out, sc, act, live, sim.stress_limbs, ALL_STRESS_COMPONENTS)


@pytest.mark.parametrize("law,energy", [("mindlin", False), ("jaeger", False), ("jaeger", True)])
def test_skip_flags_follow_a_contact_through_touch_slide_opening_and_touch_again(law, energy):
    ri, rj = 1.0e-3, 0.6e-3
    rstar = ri * rj / (ri + rj)
    n = _unit((0.3, -0.5, 0.8))
    sim = Simulation(law=law, E=E, nu=NU, mu=MU, density=RHO, dt=1e-8, energy_accounting=energy)
    sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01))
    # apart by 1 um: in the neighbour list (skin 0.1 diameters), not touching
    sim.add_particles([[0.0, 0.0, 0.0], list((ri + rj + 1e-6) * n)], [ri, rj])
    sim.setup()
    assert int(sim.ictl[ICTL_NPAIRS]) == 1
    i, j = int(sim.pi[0]), int(sim.pj[0])
    d = sim.pos[j] - sim.pos[i]
    n = d / np.linalg.norm(d)
    cap = sim.pi.shape[0]
    prm, sc, act = np.full(N_PRM, -1.0), np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX)
    live = np.full(cap, 7, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, 1, live)
    assert live[0] == 0
    sim.vel[:] = 0.0
    sim.omega[:] = 0.0
    _pair(sim, prm, sc, act, live)
    assert live[0] == 0 and np.all(sim.force == 0.0)
    # touch: Hertz's normal force, the row turns live
    delta = 2e-6
    sim.pos[j] = sim.pos[i] + (ri + rj - delta) * n
    _pair(sim, prm, sc, act, live)
    N = 4.0 / 3.0 * ESTAR * math.sqrt(rstar) * delta ** 1.5
    np.testing.assert_allclose(sim.force[j], N * n, rtol=1e-12)
    assert live[0] == 1
    # slide at a deeper overlap (jaeger keeps history points), then open: the row is released
    sim.pos[j] = sim.pos[i] + (ri + rj - 2 * delta) * n
    t = _unit(np.cross(n, (0.3, -0.7, 0.2)))
    sim.vel[j] = 1e-3 * t
    _pair(sim, prm, sc, act, live)
    _pair(sim, prm, sc, act, live)
    assert live[0] == 1 and np.linalg.norm(sim.force[j] - np.dot(sim.force[j], n) * n) > 0.0
    sim.vel[:] = 0.0
    sim.pos[j] = sim.pos[i] + (ri + rj + 1e-6) * n
    _pair(sim, prm, sc, act, live)
    assert live[0] == 0
    assert sim.pfs[0, S.F_DELTA] == 0.0 and sim.pfs[0, S.F_TX] == 0.0 and sim.pfs[0, S.F_TY] == 0.0
    assert sim.pist[0, S.I_HEAD] == -1 and sim.store.meta[M_LIVE] == 0
    assert np.all(sim.force == 0.0)
    # a further step apart reads nothing and changes nothing
    before = sim.pfs[0].copy()
    _pair(sim, prm, sc, act, live)
    np.testing.assert_array_equal(sim.pfs[0], before)
    # touching again: a fresh contact, Hertz's force with no tangential part
    sim.pos[j] = sim.pos[i] + (ri + rj - delta) * n
    _pair(sim, prm, sc, act, live)
    np.testing.assert_allclose(sim.force[j], N * n, rtol=1e-12)
    assert live[0] == 1

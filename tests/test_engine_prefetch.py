"""jaeger's force pass prefetches history points of the touching rows ahead once the store holds
PREFETCH_MIN_POINTS points (engine.pair_pass._prefetch_store_ahead). A prefetch is a hint to the cache and
must change nothing.

Reference: the same contacts driven through the same movements with a store below the threshold
(no prefetch): forces, contact rows and every history point must agree bit for bit.
"""

import numpy as np

from graindem.contact import state as S
from graindem.contact.laws import PREFETCH_MIN_POINTS, PREFETCH_TOP
from graindem.core.layout import ICTL_NPAIRS, N_PRM, PAIR_INDEX
from graindem.engine.history import refresh_live
from graindem.engine.pair_pass import ALL_STRESS_COMPONENTS, N_SC, pair_forces
from graindem.engine.simulation import Simulation

N_PAIRS = 40          # more touching rows than PREFETCH_TOP, so hints aim at rows ahead, not only the last
RI, RJ = 1.0e-3, 0.6e-3


def _histories(sim, m):
    """Each row's history points, bottom-up, with their slip flags (independent of point indices)."""
    return [sim.store.points(sim.pist[c, S.I_HEAD]) for c in range(m)]


def _pairs_sim(big_store):
    rng = np.random.default_rng(11)
    sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.5, density=2500.0, dt=1e-8)
    sim.set_box((-0.03, -0.03, -0.03), (0.03, 0.03, 0.03))
    pos, rad = [], []
    for k in range(N_PAIRS):
        centre = np.array([-0.025 + 0.006 * (k % 8), -0.02 + 0.008 * (k // 8), 0.0])
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        pos += [centre, centre + (RI + RJ - 3e-6) * n]
        rad += [RI, RJ]
    sim.add_particles(pos, rad)
    sim.setup()
    if big_store:
        sim.store.ensure_free(2 * PREFETCH_MIN_POINTS)
    return sim


def _drive(sim, steps):
    """Random relative movements (seeded: the same for every call), overlaps wandering by a few
    tenths of a micrometre a step: histories grow and shrink. Returns the longest history seen and
    the fewest touching rows at any step."""
    rng = np.random.default_rng(5)
    cap = sim.pi.shape[0]
    prm, sc, act = np.full(N_PRM, -1.0), np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX)
    live = np.empty(cap, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    st = sim.store
    longest = 0
    fewest_touching = N_PAIRS
    for _ in range(steps):
        sim.vel[:] = rng.normal(scale=20.0, size=sim.vel.shape)
        sim.omega[:] = rng.normal(scale=2e4, size=sim.omega.shape)
        sim.pos += sim.vel * sim.dt
        sim.force[:] = 0.0
        sim.torque[:] = 0.0
        assert pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab,
                           sim.cell, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk,
                           sim.pm, st.pts, st.nxt, st.meta, sim.acc, sim.out, sc, act, live, sim.stress_limbs, ALL_STRESS_COMPONENTS)
        m = int(sim.ictl[ICTL_NPAIRS])
        longest = max(longest, int(sim.pist[:m, S.I_LEN].max()))
        fewest_touching = min(fewest_touching, int(np.count_nonzero(sim.pfs[:m, S.F_DELTA] > 0.0)))
    return longest, fewest_touching


def test_prefetching_jaeger_pass_changes_nothing():
    small, big = _pairs_sim(False), _pairs_sim(True)
    assert small.store.pts.shape[0] < PREFETCH_MIN_POINTS <= big.store.pts.shape[0]
    m = int(small.ictl[ICTL_NPAIRS])
    assert m == int(big.ictl[ICTL_NPAIRS]) == N_PAIRS > PREFETCH_TOP
    longest, fewest_touching = _drive(small, 300)
    assert _drive(big, 300) == (longest, fewest_touching)
    assert longest >= 3                         # the hints below the top point had points to aim at
    assert fewest_touching > PREFETCH_TOP       # and rows ahead to aim at
    for name in ("pos", "force", "torque"):
        assert np.array_equal(getattr(small, name), getattr(big, name)), name
    for name in ("pfs", "pcq"):
        assert np.array_equal(getattr(small, name)[:m], getattr(big, name)[:m]), name
    assert np.array_equal(small.pist[:m, S.I_LEN], big.pist[:m, S.I_LEN])
    assert _histories(small, m) == _histories(big, m)

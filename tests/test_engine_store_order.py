"""The engine's history-store compaction (kernels.compact_store, every ICTL_COMPACT_EVERY steps)
and the orthogonal minimum image by comparisons (core.cell.min_image).

References: the compaction must change indices only, so (1) every contact's history read by
walking the linked stacks in plain Python before and after is the same sequence of points, the
free list then covers exactly the unused indices, and (2) a jaeger run compacting every few steps
ends bit for bit in the state of the same run that never compacts (the law reads values, never
indices). The minimum image is checked against the textbook d - L floor(d / L + 1/2).
"""

import numpy as np

from graindem.contact import state as S
from graindem.contact.store import HOT_POINTS, M_CAPACITY, M_FREE_HEAD, M_LIVE
from graindem.core.cell import min_image
from graindem.core.layout import ICTL_COMPACT_EVERY, ICTL_NPAIRS, ICTL_STEP
from graindem.engine.history import compact_store
from graindem.engine.simulation import Simulation

NU, RHO = 0.25, 2500.0


def _stacks(ist, rows, pts, nxt):
    """Each row's history from the top down: (delta, N, px, py, slip) per point, read in Python."""
    out = []
    for r in range(rows):
        i = int(ist[r, S.I_HEAD])
        points = []
        while i >= 0:
            points.append((*pts[i].tolist(), int(nxt[i]) & 1))
            i = int(nxt[i]) >> 1
        out.append(points)
    return out


def _free_list(nxt, meta):
    free = []
    i = int(meta[M_FREE_HEAD])
    while i >= 0:
        free.append(i)
        i = int(nxt[i]) >> 1
    return free


def _churned_sim(compact_every, steps=300):
    """Jaeger spheres in a cell periodic in x and y between a floor and a descending lid: contacts
    load, slip, unload and open, so histories grow and shrink and the free list gets scattered."""
    rng = np.random.default_rng(11)
    L = 0.0065
    n = 300
    pos = []
    r = []
    while len(pos) < n:
        x = rng.uniform((0.0, 0.0, 0.6e-3), (L, L, L - 0.6e-3))
        ri = rng.uniform(0.35e-3, 0.5e-3)
        if pos:
            d = np.asarray(pos) - x
            d[:, :2] -= L * np.floor(d[:, :2] / L + 0.5)
            if np.any(np.sqrt((d ** 2).sum(1)) < np.asarray(r) + ri):
                continue
        pos.append(x)
        r.append(ri)
    sim = Simulation(law="jaeger", E=1e7, nu=NU, mu=0.4, density=RHO, restitution=0.6, gravity=(0.0, 0.0, -50.0),
                     dt=2e-6, allow_unstable_dt=True, max_initial_overlap=1.0, diverge_overlap=1.0)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, False))
    sim.add_wall((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    sim.add_wall((0.0, 0.0, L), (0.0, 0.0, -1.0), velocity=(0.0, 0.0, -2.0))
    sim.add_particles(np.array(pos), np.array(r), velocities=rng.normal(size=(n, 3)) * 0.5,
                      angular_velocities=rng.normal(size=(n, 3)) * 300.0)
    sim.control_axis(0, strain_rate=-150.0)
    sim.control_axis(1, strain_rate=-150.0)
    sim.setup()
    sim.ictl[ICTL_COMPACT_EVERY] = compact_every
    sim.run(steps)
    return sim


def test_compaction_keeps_every_history_and_leaves_a_sequential_free_list():
    sim = _churned_sim(-1)
    st = sim.store
    m = int(sim.ictl[ICTL_NPAIRS])
    nw_rows = sim.wist.shape[0]
    before_pairs = _stacks(sim.pist, m, st.pts, st.nxt)
    before_walls = _stacks(sim.wist, nw_rows, st.pts, st.nxt)
    live = st.n_live
    # enough history to mean something: long stacks, pair and wall ones, and a scattered free list
    assert live > 500 and max(len(p) for p in before_pairs) >= 10 and sum(len(p) for p in before_walls) > 0
    free_before = _free_list(st.nxt, st.meta)
    assert free_before != sorted(free_before)
    assert compact_store(sim.pist, m, sim.wist, nw_rows, st.pts, st.nxt, st.meta)
    assert _stacks(sim.pist, m, st.pts, st.nxt) == before_pairs
    assert _stacks(sim.wist, nw_rows, st.pts, st.nxt) == before_walls
    assert st.n_live == live
    # live points now fill 0..live-1: the pair rows' points, then the wall rows'; in each set first
    # the top HOT_POINTS points of every stack, rows in order, then the rest of every stack, rows in
    # order; a stack's points consecutive in each region, bottom first
    pos = 0
    for ist, rows in ((sim.pist, m), (sim.wist, nw_rows)):
        lengths = [int(x) for x in ist[:rows, S.I_LEN]]
        hot = pos
        rest = pos + sum(min(n, HOT_POINTS) for n in lengths)
        for row, n in enumerate(lengths):
            k = min(n, HOT_POINTS)
            expected = list(range(rest, rest + n - k)) + list(range(hot, hot + k))
            assert st.chain(int(ist[row, S.I_HEAD])) == expected, row
            hot += k
            rest += n - k
        pos = rest
    assert pos == live
    assert any(n > HOT_POINTS for n in sim.pist[:m, S.I_LEN])   # the rest region is exercised
    assert _free_list(st.nxt, st.meta) == list(range(live, int(st.meta[M_CAPACITY])))


def test_compaction_refuses_a_corrupt_row_and_changes_nothing():
    sim = _churned_sim(-1, steps=150)
    st = sim.store
    m = int(sim.ictl[ICTL_NPAIRS])
    row = int(np.argmax(sim.pist[:m, S.I_LEN]))
    assert sim.pist[row, S.I_LEN] > 1
    sim.pist[row, S.I_LEN] -= 1
    saved = [a.copy() for a in (sim.pist, sim.wist, st.pts, st.nxt, st.meta)]
    assert not compact_store(sim.pist, m, sim.wist, sim.wist.shape[0], st.pts, st.nxt, st.meta)
    for a, b in zip(saved, (sim.pist, sim.wist, st.pts, st.nxt, st.meta)):
        assert np.array_equal(a, b)


def test_a_run_that_compacts_every_few_steps_ends_bit_for_bit_where_the_uncompacted_run_ends():
    plain = _churned_sim(-1)
    compacted = _churned_sim(7)
    assert int(compacted.ictl[ICTL_STEP]) == 300 and plain.store.n_live == compacted.store.n_live > 500
    for name in ("pos", "vel", "omega", "quat", "pfs", "pcq", "wfs", "wcq", "acc"):
        assert np.array_equal(getattr(plain, name), getattr(compacted, name)), name
    m = int(plain.ictl[ICTL_NPAIRS])
    assert np.array_equal(plain.pist[:m, S.I_LEN], compacted.pist[:m, S.I_LEN])
    assert _stacks(plain.pist, m, plain.store.pts, plain.store.nxt) == \
        _stacks(compacted.pist, m, compacted.store.pts, compacted.store.nxt)
    # the compacted run last compacted at step 294: its free list then ran in index order
    assert compacted.store.meta[M_LIVE] == plain.store.meta[M_LIVE]


def test_orthogonal_minimum_image_by_comparisons_equals_the_floor_formula():
    rng = np.random.default_rng(3)
    L = np.array([1.7, 0.9, 2.3])
    for _ in range(2000):
        # |d| < 3/2 L, the kernels' range (wrapped at rebuilds, drifting less than a skin between)
        d = rng.uniform(-1.45, 1.45, 3) * L
        if np.any(np.abs(np.abs(d) - 0.5 * L) < 1e-9 * L):
            continue
        got = min_image(d[0], d[1], d[2], L[0], L[1], L[2], True, True, True)
        ref = d - L * np.floor(d / L + 0.5)
        assert np.array_equal(np.array(got), ref)
        assert np.all(np.abs(np.array(got)) <= 0.5 * L)
    # non-periodic axes pass through
    assert min_image(5.0, -7.0, 9.0, 1.0, 1.0, 1.0, False, False, False) == (5.0, -7.0, 9.0)

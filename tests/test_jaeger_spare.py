"""The store traffic of jaeger.step (a popped point kept as the step's spare and reused by its push)
and the batched kernel's prefetch walk: neither may change a force or corrupt the shared store.

References: the hand-derived nine-step sequence of shared/notes/jaeger-algorithm.md section 8.1
(forces and history lengths), the store's own invariants (every point is free or in exactly one
live stack, counters agree), and, for the prefetch walk (a hint that must not change anything),
the same kernel with the walk switched off.
"""

import numpy as np
import pytest

from graindem.contact import ContactBatch
from graindem.contact import state as S
from graindem.contact.laws import JAEGER, PREFETCH_MIN_POINTS, advance_jaeger, advance_contacts
from graindem.contact.store import M_CAPACITY, M_FREE_HEAD, M_LIVE, M_PEAK

# Section 8.1: R1 = R2 = 2, E = 1.5, nu = 0 (kappa = 1, N = delta^1.5), mu = 0.5; shifts along x.
UNITS = dict(R1=2.0, R2=2.0, E=1.5, nu=0.0, mu=0.5)
NINE_STEPS = [(1, 0.2), (2, 0.5), (3, 0.6), (3.5, 1.2), (4, 1.55), (5, 1.75), (6, 1.85), (6.5, 2.3), (6.5, 1.9)]
NINE_T = [0.2, 0.7485281374, 0.9853006672, 2.5005583607, 3.4369935206, 4.0730614981, 4.4247213550,
          6.0814768831, 4.5755520869]
NINE_LEN = [1, 2, 3, 4, 3, 4, 5, 6, 7]


def check_store(batch):
    """Every point is free or in exactly one live stack, the stacks have their rows' lengths, and
    the counters agree (a leaked or doubly used spare breaks one of these)."""
    st = batch.store
    free = []
    i = int(st.meta[M_FREE_HEAD])
    while i >= 0:
        free.append(i)
        assert len(free) <= st.capacity, "cycle in the free list"
        i = int(st.nxt[i] >> 1)
    live = []
    for c in range(batch.n):
        i, k = int(batch.ist[c, S.I_HEAD]), 0
        while i >= 0:
            live.append(i)
            k += 1
            assert k <= st.capacity, "cycle in a stack"
            i = int(st.nxt[i] >> 1)
        assert k == batch.ist[c, S.I_LEN]
    assert len(set(free)) == len(free) and len(set(live)) == len(live) and set(free).isdisjoint(live)
    assert sorted(free + live) == list(range(st.capacity))
    assert int(st.meta[M_LIVE]) == len(live) <= int(st.meta[M_PEAK]) <= int(st.meta[M_CAPACITY])


def test_nine_steps_in_a_shared_store_interleaved_with_other_contacts():
    """Contact 0 runs section 8.1 (steps 4, 5, 8 and 9 pop one or two points and push one, step 5
    eliminates two segments); contacts 1..5 slip back and forth and unload in between, so the
    free list the spare bypasses is shared and busy. Forces to 1e-9 (the table's 10 digits)."""
    n = 6
    b = ContactBatch("jaeger", n, energy=False, store=None, **UNITS)
    rng = np.random.default_rng(3)
    shift = np.zeros(n)
    for k, (d, s) in enumerate(NINE_STEPS):
        delta = np.concatenate([[d], 2.0 + rng.uniform(-0.5, 0.5, n - 1)])
        target = np.concatenate([[s], rng.uniform(-1.0, 1.0, n - 1)])
        ds = np.zeros((n, 2))
        ds[:, 0] = target - shift
        shift = target
        b.step(delta, ds)
        assert b.fs[0, S.F_TX] == pytest.approx(NINE_T[k], abs=1e-9)
        assert b.fs[0, S.F_N] == pytest.approx(d ** 1.5, rel=1e-14)
        assert b.ist[0, S.I_LEN] == NINE_LEN[k]
        check_store(b)


def test_pure_truncation_frees_the_popped_points():
    """Normal unloading at an unchanged (retraced) shift pops points without pushing one: the
    spare must go back to the free list (section 8.9: an elastic step and its exact reverse)."""
    b = ContactBatch("jaeger", 1, energy=False, **UNITS)
    b.step(np.array([1.0]), np.array([[0.2, 0.0]]))
    b.step(np.array([2.0]), np.array([[0.3, 0.0]]))
    live = int(b.store.meta[M_LIVE])
    b.step(np.array([1.0]), np.array([[-0.3, 0.0]]))       # back to point 1 exactly
    assert b.ist[0, S.I_LEN] == 1 and int(b.store.meta[M_LIVE]) == live - 1
    assert b.fs[0, S.F_TX] == pytest.approx(0.2, abs=1e-14)   # T_1 of the first segment
    check_store(b)
    b.step(np.array([0.0]), np.array([[0.0, 0.0]]))         # separation releases the rest
    assert int(b.store.meta[M_LIVE]) == 0
    check_store(b)


def random_movements(n, steps, seed):
    """DEM-like 2D movements: overlaps wander and half of the steps unload, shifts of the order of
    the cone so that elastic, partial slip and gross sliding all occur; some contacts open."""
    rng = np.random.default_rng(seed)
    delta = 1.0 + 0.2 * rng.standard_normal(n)
    for _ in range(steps):
        delta = delta + 0.05 * rng.standard_normal(n)
        opened = rng.random(n) < 0.02
        yield np.where(opened, 0.0, np.abs(delta)), 0.04 * rng.standard_normal((n, 2))
        delta = np.where(opened, 0.5, delta)


def test_store_stays_consistent_on_random_histories():
    b = ContactBatch("jaeger", 300, energy=False, **UNITS)
    kinds = np.zeros(4)
    for delta, ds in random_movements(b.n, 120, seed=7):
        b.step(delta, ds)
        kinds += np.bincount(b.fs[:, S.F_KIND].astype(np.int64), minlength=4)
        assert np.all(np.hypot(b.fs[:, S.F_TX], b.fs[:, S.F_TY]) <= 0.5 * b.fs[:, S.F_N] * (1 + 1e-12))
    check_store(b)
    # the mix exercised every path: separation, elastic, partial slip, gross sliding
    assert np.all(kinds > 0.01 * kinds.sum()), kinds


def test_prefetch_walk_changes_nothing():
    """The walk aims hints at index -1 (contacts without history, bottoms of stacks) and reads
    nxt[-1]; the same movements with and without it give bit-identical states and stores, also
    for a batch shorter than the prefetch distances and with separated contacts."""
    for n in (3, 200):
        runs = []
        for prefetch in (False, True):
            b = ContactBatch("jaeger", n, energy=False, **UNITS)
            for delta, ds in random_movements(n, 60, seed=11):
                start = 0
                while start < n:
                    b.store.ensure_free(n - start)
                    st = b.store
                    start = advance_jaeger(b.prm, b.fs, b.ist, delta, ds, st.pts, st.nxt, st.meta, start, prefetch)
            runs.append(b)
        a, p = runs
        assert np.array_equal(a.fs, p.fs) and np.array_equal(a.ist, p.ist)
        assert np.array_equal(a.store.pts, p.store.pts) and np.array_equal(a.store.nxt, p.store.nxt)
        assert np.array_equal(a.store.meta, p.store.meta)


def test_large_store_takes_the_prefetch_path_with_the_same_forces():
    """Through the public kernel: a store of PREFETCH_MIN_POINTS points switches the walk on; the
    forces equal those of a small store (where it is off) bit for bit."""
    from graindem.contact.store import HistoryStore

    n = 100
    small = ContactBatch("jaeger", n, energy=False, **UNITS)
    large = ContactBatch("jaeger", n, energy=False, store=HistoryStore(PREFETCH_MIN_POINTS), **UNITS)
    assert small.store.capacity < PREFETCH_MIN_POINTS <= large.store.capacity
    for delta, ds in random_movements(n, 40, seed=5):
        for b in (small, large):
            start = 0
            while start < n:
                b.store.ensure_free(n - start)
                st = b.store
                start = advance_contacts(JAEGER, b.prm, b.fs, b.ist, delta, ds, st.pts, st.nxt, st.meta, start)
        assert np.array_equal(small.fs, large.fs)
    check_store(large)


def test_large_store_arrays_on_huge_page_boundaries():
    """A store of HUGE_PAGE_MIN_POINTS points or more lies on 2 MB boundaries (so that the kernel
    can back it with huge pages; whether it does is the system's choice), in arrays the kernels
    accept as before; growing across the threshold and the checkpoint round trip keep every value."""
    from graindem.contact.store import HUGE_PAGE, HUGE_PAGE_MIN_POINTS, HistoryStore

    small = HistoryStore(1000)
    n = 500
    b = ContactBatch("jaeger", n, energy=False, store=small, **UNITS)
    for delta, ds in random_movements(n, 30, seed=2):
        b.step(delta, ds)
    forces = b.fs.copy()
    live_pts = {}
    for c in range(n):
        i = int(b.ist[c, S.I_HEAD])
        while i >= 0:
            live_pts[i] = (tuple(b.store.pts[i]), int(b.store.nxt[i]))
            i = int(b.store.nxt[i] >> 1)
    assert b.store.capacity < HUGE_PAGE_MIN_POINTS
    b.store.ensure_free(HUGE_PAGE_MIN_POINTS)
    st = b.store
    assert st.capacity >= HUGE_PAGE_MIN_POINTS
    for arr in (st.pts, st.nxt):
        assert arr.ctypes.data % HUGE_PAGE == 0 and arr.flags.c_contiguous and arr.flags.writeable
    assert st.pts.shape == (st.capacity, 4) and st.nxt.shape == (st.capacity,)
    assert st.pts.dtype == np.float64 and st.nxt.dtype == np.int32
    assert all(tuple(st.pts[i]) == p and int(st.nxt[i]) == link for i, (p, link) in live_pts.items())
    check_store(b)
    copy = HistoryStore.from_arrays(**st.state_arrays())
    assert copy.pts.ctypes.data % HUGE_PAGE == 0
    assert np.array_equal(copy.pts, st.pts) and np.array_equal(copy.nxt, st.nxt)
    assert np.array_equal(copy.meta, st.meta)
    # the kernels run on the aligned arrays as on any others: same forces as an unaligned twin
    twin = ContactBatch("jaeger", n, energy=False, **UNITS)
    for delta, ds in random_movements(n, 30, seed=2):
        twin.step(delta, ds)
    assert np.array_equal(twin.fs, forces)
    for delta, ds in random_movements(n, 10, seed=9):
        b.step(delta, ds)
        twin.step(delta, ds)
    assert np.array_equal(twin.fs, b.fs)
    check_store(b)


def test_negative_start_is_rejected_before_work():
    """The prefetch walk indexes rows unsigned (c >= start >= 0): a negative start is refused with a
    clear error, before any contact moves."""
    batch = ContactBatch("jaeger", 3, **UNITS)
    before = batch.fs.copy()
    st = batch.store
    with pytest.raises(ValueError, match="start"):
        advance_contacts(JAEGER, batch.prm, batch.fs, batch.ist, np.full(3, 1.0), np.zeros((3, 2)),
                         st.pts, st.nxt, st.meta, -1)
    assert np.array_equal(batch.fs, before)

"""Tests of the shared history store against a plain Python model of per-contact stacks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graindem.contact.store import (BYTES_PER_POINT, HOT_POINTS, M_CAPACITY, M_FREE_HEAD, M_LIVE, M_PEAK, PT_DELTA,
                                    PT_N, PT_PX, PT_PY, HistoryStore, link_next, link_slip, pop, push, release,
                                    remove_below, set_slip, stack_length)


def free_list(store):
    out = []
    i = int(store.meta[M_FREE_HEAD])
    while i >= 0:
        out.append(i)
        assert len(out) <= store.capacity, "cycle in the free list"
        i = int(store.nxt[i] >> 1)
    return out


def stack(store, head):
    """The stack as a list of (delta, N, px, py, slip), top first."""
    out = []
    while head >= 0:
        out.append((*store.pts[head], bool(link_slip(store.nxt, head))))
        head = int(link_next(store.nxt, head))
    return out


def check_integrity(store, heads):
    """Every index is either free or in exactly one live stack; counters agree."""
    free = free_list(store)
    live = []
    for h in heads:
        i = h
        while i >= 0:
            live.append(i)
            i = int(store.nxt[i] >> 1)
    assert len(set(free)) == len(free) and len(set(live)) == len(live)
    assert set(free).isdisjoint(live)
    assert sorted(free + live) == list(range(store.capacity))
    assert store.n_live == len(live) == int(store.meta[M_LIVE])
    assert store.capacity == len(store.pts) == len(store.nxt) == int(store.meta[M_CAPACITY])


def do_push(store, head, point):
    new = push(store.pts, store.nxt, store.meta, head, *point)
    assert new >= 0
    return int(new)


def test_bytes_per_point_is_36():
    s = HistoryStore(10)
    assert BYTES_PER_POINT == 36
    assert s.pts.dtype == np.float64 and s.pts.shape[1] == 4 and s.nxt.dtype == np.int32
    assert s.pts.itemsize * s.pts.shape[1] + s.nxt.itemsize == BYTES_PER_POINT
    assert s.bytes_allocated == 360 and s.bytes_used == 0


def test_push_pop_release_and_flags():
    s = HistoryStore(8)
    a = b = -1
    a = do_push(s, a, (1.0, 2.0, 0.1, -0.2, False))
    a = do_push(s, a, (3.0, 4.0, 0.5, 0.0, True))
    b = do_push(s, b, (5.0, 6.0, -0.3, 0.4, True))
    assert stack(s, a) == [(3.0, 4.0, 0.5, 0.0, True), (1.0, 2.0, 0.1, -0.2, False)]
    assert stack(s, b) == [(5.0, 6.0, -0.3, 0.4, True)]
    assert stack_length(s.nxt, a) == 2 and stack_length(s.nxt, b) == 1 and stack_length(s.nxt, -1) == 0
    assert s.n_live == 3
    check_integrity(s, [a, b])
    # The slip flag can be changed without disturbing the link, including at the bottom (-1 link).
    set_slip(s.nxt, a, False)
    set_slip(s.nxt, b, False)
    assert stack(s, a)[0][4] is False and link_next(s.nxt, b) == -1
    set_slip(s.nxt, b, True)
    assert link_slip(s.nxt, b) and link_next(s.nxt, b) == -1
    a = int(pop(s.pts, s.nxt, s.meta, a))
    assert stack(s, a) == [(1.0, 2.0, 0.1, -0.2, False)]
    check_integrity(s, [a, b])
    assert release(s.pts, s.nxt, s.meta, a) == -1
    assert release(s.pts, s.nxt, s.meta, -1) == -1
    check_integrity(s, [b])
    assert s.n_live == 1 and s.n_free == 7


def test_remove_below_keeps_top_flag():
    s = HistoryStore(8)
    h = -1
    for k, slip in enumerate([True, False, True]):
        h = do_push(s, h, (float(k), 0.0, 0.0, 0.0, slip))
    remove_below(s.pts, s.nxt, s.meta, h)
    assert [p[0] for p in stack(s, h)] == [2.0, 0.0] and stack(s, h)[0][4] is True
    remove_below(s.pts, s.nxt, s.meta, h)
    assert [p[0] for p in stack(s, h)] == [2.0] and link_next(s.nxt, h) == -1 and link_slip(s.nxt, h)
    remove_below(s.pts, s.nxt, s.meta, h)            # nothing below: no-op
    check_integrity(s, [h])


def test_full_store_refuses_push_and_growth_keeps_stacks():
    s = HistoryStore(4)
    heads = [-1, -1, -1]
    model = [[], [], []]
    rng = np.random.default_rng(0)
    for n in range(200):
        c = n % 3
        point = (float(n), float(rng.random()), float(rng.normal()), float(rng.normal()), bool(n % 2))
        if s.n_free == 0:
            assert push(s.pts, s.nxt, s.meta, heads[c], *point) == -2
            check_integrity(s, heads)         # a refused push changes nothing
            old_live = [stack(s, h) for h in heads]
            assert s.ensure_free(1) is True
            assert [stack(s, h) for h in heads] == old_live
        heads[c] = do_push(s, heads[c], point)
        model[c].insert(0, point)
        check_integrity(s, heads)
    assert [stack(s, h) for h in heads] == model
    assert s.capacity == 256                  # doubling from 4
    assert s.ensure_free(10) is False         # enough free already: no growth
    assert s.ensure_free(s.n_free + 1000) is True and s.n_free >= 1000 + 56
    check_integrity(s, heads)


def test_peak_tracking():
    s = HistoryStore(16)
    h = -1
    for k in range(10):
        h = do_push(s, h, (float(k), 0.0, 0.0, 0.0, False))
    for _ in range(7):
        h = int(pop(s.pts, s.nxt, s.meta, h))
    assert s.n_live == 3 and int(s.meta[M_PEAK]) == 10
    for k in range(4):
        h = do_push(s, h, (float(k), 0.0, 0.0, 0.0, False))
    assert s.n_live == 7 and int(s.meta[M_PEAK]) == 10
    s.ensure_free(100)
    assert int(s.meta[M_PEAK]) == 10
    for k in range(5):
        h = do_push(s, h, (float(k), 0.0, 0.0, 0.0, False))
    assert int(s.meta[M_PEAK]) == 12


def test_checkpoint_roundtrip():
    s = HistoryStore(8)
    h = -1
    for k in range(5):
        h = do_push(s, h, (float(k), 1.0, 2.0, 3.0, k % 2 == 0))
    r = HistoryStore.from_arrays(**s.state_arrays())
    assert stack(r, h) == stack(s, h) and r.capacity == s.capacity and r.n_live == 5
    check_integrity(r, [h])
    h2 = do_push(r, h, (9.0, 9.0, 9.0, 9.0, True))
    assert len(stack(r, h2)) == 6 and len(stack(s, h)) == 5     # independent copies


@pytest.mark.parametrize("capacity", [0, -3])
def test_bad_capacity(capacity):
    with pytest.raises(ValueError, match="capacity"):
        HistoryStore(capacity)


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.booleans()), min_size=1, max_size=150))
def test_random_operations_match_model(ops):
    """Random push/pop/remove_below/release/grow on 5 stacks against Python lists."""
    s = HistoryStore(2)
    heads = [-1] * 5
    model = [[] for _ in range(5)]
    counter = 0
    for op, c, slip in ops:
        if op == 0 or (op in (1, 2) and not model[c]):
            s.ensure_free(1)
            counter += 1
            point = (float(counter), -float(counter), 0.5 * counter, -0.25, slip)
            heads[c] = do_push(s, heads[c], point)
            model[c].insert(0, point)
        elif op == 1:
            heads[c] = int(pop(s.pts, s.nxt, s.meta, heads[c]))
            model[c].pop(0)
        elif op == 2:
            remove_below(s.pts, s.nxt, s.meta, heads[c])
            if len(model[c]) > 1:
                model[c].pop(1)
        else:
            heads[c] = int(release(s.pts, s.nxt, s.meta, heads[c]))
            model[c] = []
        check_integrity(s, heads)
        assert [stack(s, h) for h in heads] == model
    assert int(s.meta[M_PEAK]) >= s.n_live
    assert all(p[PT_DELTA] == -p[PT_N] and p[PT_PX] == 0.5 * p[PT_DELTA] and p[PT_PY] == -0.25
               for m in model for p in m)


def _stacks_with_rows(store, ist):
    return [stack(store, int(h)) for h in ist[:, 0]]


def test_compact_lays_stacks_out_contiguously_and_keeps_them():
    """Scatter stacks through the store by interleaved pushes and pops, compact, and compare with a
    Python model: same points and flags per contact, each stack on consecutive indices (bottom
    first, contacts in row order), every other index free, and the store still works afterwards."""
    rng = np.random.default_rng(5)
    s = HistoryStore(4)
    n = 7
    ist = np.zeros((n, 2), dtype=np.int64)
    ist[:, 0] = -1
    model = [[] for _ in range(n)]
    for counter in range(400):
        c = int(rng.integers(n))
        if model[c] and rng.random() < 0.4:
            ist[c, 0] = int(pop(s.pts, s.nxt, s.meta, ist[c, 0]))
            model[c].pop(0)
        else:
            s.ensure_free(1)
            point = (float(counter), -float(counter), 0.5 * counter, 0.25, bool(rng.random() < 0.5))
            ist[c, 0] = do_push(s, ist[c, 0], point)
            model[c].insert(0, point)
        ist[c, 1] = len(model[c])
    ist[3, :] = (release(s.pts, s.nxt, s.meta, ist[3, 0]), 0)     # one empty contact in the middle
    model[3] = []
    before = _stacks_with_rows(s, ist)
    assert before == model
    heads_before = ist[:, 0].copy()
    pts_id, nxt_id = id(s.pts), id(s.nxt)
    s.compact(ist)
    assert _stacks_with_rows(s, ist) == model
    check_integrity(s, ist[:, 0])
    assert id(s.pts) == pts_id and id(s.nxt) == nxt_id          # rewritten in place
    # the layout: the top HOT_POINTS points of every stack in row order, then the rest of every
    # stack in row order; in each region a stack's points consecutive, bottom first
    hot = 0
    rest = sum(min(len(m), HOT_POINTS) for m in model)
    assert max(len(m) for m in model) > HOT_POINTS
    for c in range(n):
        k = len(model[c])
        if k == 0:
            assert ist[c, 0] == -1
            continue
        idx = []
        i = int(ist[c, 0])
        while i >= 0:
            idx.append(i)
            i = int(link_next(s.nxt, i))
        m = min(k, HOT_POINTS)
        assert idx == list(range(hot + m - 1, hot - 1, -1)) + list(range(rest + k - m - 1, rest - 1, -1))
        hot += m
        rest += k - m
    assert free_list(s) == list(range(rest, s.capacity))
    assert not np.array_equal(heads_before, ist[:, 0])           # the test did scatter the stacks
    # the compacted store keeps working
    ist[0, 0] = do_push(s, ist[0, 0], (1.0, 2.0, 3.0, 4.0, True))
    model[0].insert(0, (1.0, 2.0, 3.0, 4.0, True))
    ist[0, 1] += 1
    assert _stacks_with_rows(s, ist) == model
    check_integrity(s, ist[:, 0])


def test_compact_several_owner_arrays_and_bad_input():
    s = HistoryStore(16)
    a = np.array([[-1, 0], [-1, 0]], dtype=np.int64)
    b = np.array([[-1, 0]], dtype=np.int64)
    for k in range(3):
        a[1, 0] = do_push(s, a[1, 0], (float(k), 0.0, 1.0, 2.0, False))
        b[0, 0] = do_push(s, b[0, 0], (10.0 + k, 0.0, 3.0, 4.0, True))
    a[1, 1] = b[0, 1] = 3
    want_a, want_b = _stacks_with_rows(s, a), _stacks_with_rows(s, b)
    arrays = [x.copy() for x in (s.pts, s.nxt, s.meta)]
    # Owners that do not account for every live point, or lengths that do not match the stacks,
    # are refused before anything changes.
    with pytest.raises(ValueError, match="own every live point"):
        s.compact(a)
    bad = a.copy()
    bad[0, 1], bad[1, 1] = 1, 2
    with pytest.raises(ValueError, match="length differs"):
        s.compact(bad, b)
    with pytest.raises(ValueError, match="int64 state array"):
        s.compact(a.astype(np.int32), b)
    assert all(np.array_equal(x, y) for x, y in zip(arrays, (s.pts, s.nxt, s.meta)))
    s.compact(a, b)
    assert _stacks_with_rows(s, a) == want_a and _stacks_with_rows(s, b) == want_b
    assert sorted([int(a[1, 0]), int(b[0, 0])]) == [2, 5]
    check_integrity(s, [int(a[1, 0]), int(b[0, 0])])


def test_compacting_a_jaeger_batch_does_not_change_results():
    """Two batches through the same DEM-like movements, one compacted every few steps: forces, law
    state and histories stay bit-identical (compaction moves points, never their values)."""
    from graindem.contact import ContactBatch
    from graindem.contact import state as S
    from graindem.demo.contact import MATERIAL, DemLikeMovements
    n = 80
    plain = ContactBatch("jaeger", n, store=HistoryStore(1), **MATERIAL)
    packed = ContactBatch("jaeger", n, store=HistoryStore(1), **MATERIAL)
    moves = DemLikeMovements(n, plain.prm[S.P_RSTAR], plain.prm[S.P_MU], plain.prm[S.P_KAPPA], seed=2,
                             opening_fraction=0.2)
    for step in range(240):
        delta, ds = moves.next_step()
        if step % 7 == 3:
            packed.store.compact(packed.ist)
        plain.step(delta, ds)
        packed.step(delta, ds)
    assert plain.store.n_live > 5 * n                       # long histories were really stored
    np.testing.assert_array_equal(plain.fs.view(np.int64), packed.fs.view(np.int64))
    np.testing.assert_array_equal(plain.ist[:, S.I_LEN], packed.ist[:, S.I_LEN])
    assert _stacks_with_rows(plain.store, plain.ist) == _stacks_with_rows(packed.store, packed.ist)
    check_integrity(packed.store, packed.ist[:, S.I_HEAD])

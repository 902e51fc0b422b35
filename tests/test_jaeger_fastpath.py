"""jaeger.step's fast paths (a superseded top slip segment cut back into the segment below, or
two segments deep; gross sliding on a one-point history; a new elastic segment) against the
general algorithm they short-cut.

Reference: the same step compiled with the fast paths switched off (`jaeger._step(..., False)`),
whose exactness the other jaeger tests establish (closed forms, hand-derived histories). Both run
the same random 3D movement sequences on twin batches, from the same state at every step (rows
and store copied): the history structure (links, free list, counters, lengths, step kinds) must
agree exactly and the values to 1e-12 of their scale (T of mu N). The fast paths evaluate the
general loop's own expressions, so only operations fused or regrouped differently by fastmath
('contract', 'reassoc') separate them, a few units in the last place; a logic error is orders
larger (a leaked spare, found by this test while writing the fast path, changed the links). The
sequences are built so that both fast paths' cases are common (DEM-sized slip steps, half of
them unloading; a quarter of the contacts sliding grossly), and the test checks that they were.
"""

import math

import numpy as np
import pytest

from graindem._jit import njit
from graindem.contact import ContactBatch, jaeger
from graindem.contact import state as S
from graindem.contact.laws import separate


@njit(_nrt=False)
def _advance_fast(prm, fs, ist, delta, ds, pts, nxt, meta, start):
    for c in range(start, delta.shape[0]):
        if meta[0] < 0:
            return c
        if delta[c] > 0.0:
            jaeger.step_outlined(prm, fs, ist, c, delta[c], ds[c, 0], ds[c, 1], pts, nxt, meta)
        else:
            separate(fs, ist, c, pts, nxt, meta)
    return delta.shape[0]


@njit(_nrt=False)
def _advance_general(prm, fs, ist, delta, ds, pts, nxt, meta, start):
    for c in range(start, delta.shape[0]):
        if meta[0] < 0:
            return c
        if delta[c] > 0.0:
            jaeger._step(prm, fs, ist, c, delta[c], ds[c, 0], ds[c, 1], pts, nxt, meta, False)
        else:
            separate(fs, ist, c, pts, nxt, meta)
    return delta.shape[0]


def _advance(kernel, batch, delta, ds):
    start = 0
    while start < batch.n:
        batch.store.ensure_free(batch.n - start)
        st = batch.store
        start = kernel(batch.prm, batch.fs, batch.ist, delta, ds, st.pts, st.nxt, st.meta, start)


def _fast_case_steps(before_fs, before_ist, after_fs, after_ist, delta):
    """How many steps had the outcomes of the fast paths, (supersede and cut, slide from the
    origin, new elastic segment). The first two start from a slip top without truncation below
    it. Supersede and cut: a point below the top, then one point popped and one pushed (same
    length), the new point below strictly inside the old segment below (the cut), partial slip.
    Slide from the origin: a one-point history that stays one point, gross sliding. New elastic
    segment: a loading step that pushes one elastic segment (length + 1, elastic). Supersede two
    and cut: from a slip top with at least two points below it, one point fewer, partial slip
    (this also counts the rarer ties that the general code takes: a lower bound's complement, only
    used to show the case is common)."""
    slip_top = (before_fs[:, jaeger.F_SLIP] != 0.0) & (before_fs[:, jaeger.F_DLOW] < delta) & (delta > 0)
    len_before, len_after = before_ist[:, S.I_LEN], after_ist[:, S.I_LEN]
    kind = after_fs[:, S.F_KIND]
    cut = (slip_top & (len_before >= 2) & (len_after == len_before) & (kind == S.KIND_PARTIAL_SLIP)
           & (after_fs[:, jaeger.F_DLOW] < before_fs[:, jaeger.F_DLOW]))
    slide = slip_top & (len_before == 1) & (len_after == 1) & (kind == S.KIND_GROSS_SLIDING)
    elastic = ((delta > before_fs[:, S.F_DELTA]) & (before_fs[:, S.F_DELTA] > 0) & (len_after == len_before + 1)
               & (kind == S.KIND_ELASTIC) & (after_fs[:, jaeger.F_SLIP] == 0.0))
    two_deep = slip_top & (len_before >= 3) & (len_after == len_before - 1) & (kind == S.KIND_PARTIAL_SLIP)
    return int(cut.sum()), int(slide.sum()), int(elastic.sum()), int(two_deep.sum())


def _resync(src, dst, n):
    """dst := src, rows and store, with room for n pushes in both (no growth inside a step)."""
    src.store.ensure_free(n)
    dst.fs[:] = src.fs
    dst.ist[:] = src.ist
    dst.store.pts = src.store.pts.copy()
    dst.store.nxt = src.store.nxt.copy()
    dst.store.meta = src.store.meta.copy()


def _assert_same_step(a, b, where):
    """Discrete state (history structure, free list, counters, step kind, slip flags) exactly;
    values to 1e-12 of their scale: T of mu N, slopes of mu, elastic shifts of kappa mu delta,
    overlaps and forces relative (the two paths evaluate the same expressions; fastmath may
    contract them into fused multiply-adds differently, a few units in the last place)."""
    mu, kappa = a.prm[S.P_MU], a.prm[S.P_KAPPA]
    assert np.array_equal(a.ist, b.ist), where
    assert np.array_equal(a.store.nxt, b.store.nxt), where
    assert np.array_equal(a.store.meta, b.store.meta), where
    assert np.array_equal(a.fs[:, S.F_KIND], b.fs[:, S.F_KIND]), where
    assert np.array_equal(a.fs[:, jaeger.F_SLIP], b.fs[:, jaeger.F_SLIP]), where
    fa, fb = a.fs, b.fs
    scale_t = mu * fa[:, S.F_N]
    tol = 1e-12
    for slot, scale, name in [(S.F_TX, scale_t, "Tx"), (S.F_TY, scale_t, "Ty"),
                              (jaeger.F_PX, mu, "px"), (jaeger.F_PY, mu, "py"),
                              (jaeger.F_SX, kappa * mu * fa[:, S.F_DELTA], "Sx"),
                              (jaeger.F_SY, kappa * mu * fa[:, S.F_DELTA], "Sy"),
                              (S.F_DELTA, fa[:, S.F_DELTA], "delta"), (S.F_N, fa[:, S.F_N], "N"),
                              (jaeger.F_DLOW, fa[:, S.F_DELTA], "delta_below"),
                              (jaeger.F_NLOW, fa[:, S.F_N], "N_below")]:
        err = np.abs(fa[:, slot] - fb[:, slot])
        assert np.all(err <= tol * scale), f"{where}: {name} differs by {np.max(err / np.maximum(scale, 1e-300)):.3g} of its scale"
    pa, pb = a.store.pts, b.store.pts
    dmax, nmax = np.abs(fa[:, S.F_DELTA]).max(), np.abs(fa[:, S.F_N]).max()
    assert np.all(np.abs(pa[:, 0] - pb[:, 0]) <= tol * dmax), where
    assert np.all(np.abs(pa[:, 1] - pb[:, 1]) <= tol * nmax), where
    assert np.all(np.abs(pa[:, 2:4] - pb[:, 2:4]) <= tol * mu), where


@pytest.mark.parametrize("seed, xi", [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.1)])
def test_fast_path_equals_general_step_on_random_3d_sequences(seed, xi):
    """Random walks of the overlap (loading and unloading, sometimes opening) and of the shift in
    3D (steps of up to ~2 kappa mu d(delta), rotating directions, occasional reversals, repeated
    points and purely normal steps; a quarter of the contacts with shifts beyond the whole reach
    kappa mu delta, gross sliding): from the same state, the fast path must leave the general
    step's state after every step. xi > 0: the new elastic segment's fast path must leave the
    xi-merges to the general code."""
    rng = np.random.default_rng(seed)
    n = 64
    material = dict(R1=1e-3, R2=1.5e-3, E=70e9, nu=0.25, mu=0.4, xi=xi)
    fast = ContactBatch("jaeger", n, energy=False, **material)
    gen = ContactBatch("jaeger", n, energy=False, **material)
    kappa, mu = fast.prm[S.P_KAPPA], fast.prm[S.P_MU]
    delta = rng.uniform(1e-7, 1e-6, n)
    direction = rng.uniform(0.0, 2.0 * math.pi, n)
    sliders = np.arange(n) % 4 == 0
    cut_steps = slide_steps = elastic_steps = two_deep_steps = total = 0
    for k in range(400):
        ddelta = delta * rng.normal(0.0, 0.02, n)
        delta_new = delta + ddelta
        # a few contacts open (and later close again: a fresh history)
        opening = rng.random(n) < 0.01
        delta_new[opening] = -1e-9
        reopen = delta <= 0.0
        delta_new[reopen] = rng.uniform(1e-7, 1e-6, reopen.sum())
        direction += rng.normal(0.0, 0.4, n)
        direction[rng.random(n) < 0.05] += math.pi           # reversals
        size = kappa * mu * np.abs(ddelta) * rng.uniform(0.0, 2.0, n) + kappa * mu * delta * rng.exponential(2e-3, n)
        # a quarter of the contacts slide grossly most of the time (one-point histories)
        size[sliders] = kappa * mu * delta[sliders] * rng.uniform(0.5, 3.0, sliders.sum())
        ds = np.stack([size * np.cos(direction), size * np.sin(direction)], axis=1)
        ds[rng.random(n) < 0.03] = 0.0                       # purely normal steps
        repeat = rng.random(n) < 0.02                        # a repeated point
        delta_new[repeat] = np.where(delta[repeat] > 0.0, delta[repeat], delta_new[repeat])
        ds[repeat] = 0.0
        # Both paths from the same state, every step: a step is compared, not a drifted trajectory.
        _resync(fast, gen, n)
        before_fs, before_ist = fast.fs.copy(), fast.ist.copy()
        _advance(_advance_fast, fast, delta_new, ds)
        _advance(_advance_general, gen, delta_new, ds)
        _assert_same_step(fast, gen, f"seed {seed} step {k}")
        cut, slide, elastic, two_deep = _fast_case_steps(before_fs, before_ist, fast.fs, fast.ist, delta_new)
        cut_steps += cut
        slide_steps += slide
        elastic_steps += elastic
        two_deep_steps += two_deep
        total += n
        delta = delta_new
    # The comparison only means something if the fast paths' cases were common.
    print("fast-path cases", cut_steps / total, slide_steps / total, elastic_steps / total, two_deep_steps / total)
    assert (cut_steps > 0.2 * total and slide_steps > 0.05 * total and elastic_steps > 0.03 * total
            and two_deep_steps > 0.02 * total), (cut_steps, slide_steps, elastic_steps, two_deep_steps, total)
    tn = np.hypot(fast.fs[:, S.F_TX], fast.fs[:, S.F_TY])
    assert np.all(tn <= mu * fast.fs[:, S.F_N] * (1.0 + 1e-12))

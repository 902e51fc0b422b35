"""Upkeep of the history store as the engine uses it: compaction in row order, live flags, reload.

The tangential laws keep per-contact history points in the store (contact.store); these kernels
keep it in the order the passes walk it, and rebuild the laws' state from a checkpoint's
(delta, N, T) when a run restarts with another law or from an older checkpoint layout.
"""

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.laws import contact_step, tangential_energy
from ..contact.rows import load_prm
from ..contact.store import M_CAPACITY, M_FREE_HEAD, M_LIVE, compact_into, thread_free
from ..core.layout import (COMPACT_EVERY, ICTL_COMPACT_EVERY, ICTL_NPAIRS, ICTL_NWCAND, ICTL_STEP, N_PRM,
                           PRM_PAIR)


@njit
def compact_store(pist, npairs, wist, nwrows, pts, nxt, meta):
    """Lay the live history points out in row order: the stacks of pair rows 0..npairs-1, then of
    wall rows 0..nwrows-1, each set as store.compact_into lays it out: the top HOT_POINTS (3)
    points of every stack in one region, then the rest of every stack, a stack's points in each
    consecutive, bottom first (a walk down a stack runs backwards through consecutive points); the
    free points follow in index order, so the next pushes take consecutive points too. Only indices
    change (heads in pist/wist, links in nxt): every point keeps its values and slip flag, so
    results are unchanged.

    The separate region of the top points: a step reads and writes only a stack's top three
    points, which a plain layout leaves at the far end of each stack (~16 points, 500 bytes apart
    in the biaxial test); together they stream (4096-sphere biaxial test, jaeger: x0.98-0.99, the
    same trajectory bit for bit).

    Why: the free list hands out whatever point was freed last, so after some hundred steps a
    contact's points lie scattered through a store several times larger than the L2 cache (the
    4096-sphere biaxial test peaks at ~490 000 points, 18 MB) and each push, pop and walk waits
    for memory. Every 100 steps (compact_on_schedule) it took the jaeger step of that test, from
    a mid-test checkpoint, from ~2.2 to ~1.65 ms. A stack whose length differs from its row's
    I_LEN (corrupt state) leaves everything unchanged and returns False."""
    live = meta[M_LIVE]
    if live == 0:
        return True
    total = 0
    for r in range(npairs):
        total += pist[r, S.I_LEN]
    for r in range(nwrows):
        total += wist[r, S.I_LEN]
    if total != live:
        return False
    new_pts = np.empty((live, pts.shape[1]))
    new_nxt = np.empty(live, dtype=nxt.dtype)
    heads_p = np.empty(npairs, dtype=np.int64)
    heads_w = np.empty(nwrows, dtype=np.int64)
    k = compact_into(nxt, pist[:npairs], pts, new_pts, new_nxt, heads_p, 0)
    if k >= 0:
        k = compact_into(nxt, wist[:nwrows], pts, new_pts, new_nxt, heads_w, k)
    if k != live:
        return False
    for q in range(live):
        for f in range(pts.shape[1]):
            pts[q, f] = new_pts[q, f]
        nxt[q] = new_nxt[q]
    meta[M_FREE_HEAD] = -1
    thread_free(nxt, meta, live, meta[M_CAPACITY])
    for r in range(npairs):
        pist[r, S.I_HEAD] = heads_p[r]
    for r in range(nwrows):
        wist[r, S.I_HEAD] = heads_w[r]
    return True


@njit
def compact_on_schedule(ictl, pist, wist, pts, nxt, meta):
    """compact_store every ictl[ICTL_COMPACT_EVERY] steps (0: COMPACT_EVERY; < 0: never), at step
    counts that are multiples of it, so that a restart lays the store out as the uninterrupted run
    did. The interval: the biaxial test rebuilds its neighbour list only every ~3000 steps, and
    within ~500 steps of a compaction the scattering already costs 15 % of the jaeger step;
    compacting every 100 steps costs ~2 ms per 100 000 live points, 1 % of those 100 steps.
    Called at the end of each step of run_steps (and by the benchmarks' split step loops)."""
    every = ictl[ICTL_COMPACT_EVERY]
    if every == 0:
        every = COMPACT_EVERY
    if every > 0 and meta[M_LIVE] > 0 and ictl[ICTL_STEP] % every == 0:
        compact_store(pist, ictl[ICTL_NPAIRS], wist, ictl[ICTL_NWCAND], pts, nxt, meta)


@njit(_nrt=False)
def refresh_live(pfs, pist, npairs, live):
    """live[c] = 1 for the pair rows that touch or hold history, else 0 (pair_forces' skip flags):
    set from the state at the start of run_steps and after each rebuild, so it never needs saving."""
    for c in range(npairs):
        live[c] = 1 if (pfs[c, S.F_DELTA] > 0.0 or pist[c, S.I_HEAD] >= 0) else 0


@njit
def reload_contacts(law, mtab, fs, ist, nrows, rows_k, rows_m, pts, nxt, meta):
    """Give rows 0..nrows-1 the state of law `law` carrying their current (delta, N, T).

    Each active row is reset to the unloaded origin and driven in one step to its overlap with the
    shift of proportional loading, s = (T/N) kappa delta, which is Mindlin-Deresiewicz's no-slip
    path to that force ratio (exact for the history laws; the incremental laws land near it).
    rows_k, rows_m: the rows' constants and material-pair records (pk, pm or wk, wm). Used when a
    prepared packing changes law.
    """
    prm = np.empty(N_PRM)
    prm[PRM_PAIR] = -1.0
    for c in range(nrows):
        delta = fs[c, S.F_DELTA]
        if not (delta > 0.0):
            continue
        N = fs[c, S.F_N]
        tx = fs[c, S.F_TX]
        ty = fs[c, S.F_TY]
        load_prm(prm, mtab, rows_m[c], rows_k, c)
        contact_step(law, prm, fs, ist, c, 0.0, 0.0, 0.0, pts, nxt, meta)
        kappa = prm[S.P_KAPPA]
        sx = 0.0
        sy = 0.0
        if N > 0.0:
            sx = tx / N * kappa * delta
            sy = ty / N * kappa * delta
        contact_step(law, prm, fs, ist, c, delta, sx, sy, pts, nxt, meta)


@njit
def tangential_energy_sum(law, mtab, fs, ist, nrows, rows_k, rows_m, pts, nxt):
    """Stored tangential energy of rows 0..nrows-1 (laws.tangential_energy with each row's record)."""
    prm = np.empty(N_PRM)
    prm[PRM_PAIR] = -1.0
    total = 0.0
    for c in range(nrows):
        if not (fs[c, S.F_DELTA] > 0.0):
            continue
        load_prm(prm, mtab, rows_m[c], rows_k, c)
        total += tangential_energy(law, prm, fs, ist, c, pts, nxt)
    return total

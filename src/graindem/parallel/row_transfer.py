"""Pair rows travelling between ranks: their contact state, frame and load history as flat arrays.

A row travels as its two bodies' global ids and integer state (ints), its float state and frame
quaternion (floats), and its history (contact.store) as its points bottom-up (pts rows) with their
slip flags. Laid out again, each history takes consecutive points of a fresh store, bottom first,
as the store's compaction lays it out: only the points' indices differ from the sender's store, and
no result depends on those.
"""

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.store import M_FREE_HEAD, M_LIVE, M_PEAK, HistoryStore, thread_free

ROW_INTS = 2 + S.N_ISTATE     # gid_i, gid_j, pist
ROW_FLOATS = S.N_FSTATE + 4   # pfs, pcq


@njit
def read_histories(pist, rows, pts, nxt, out_pts, out_slip):
    """The histories of `rows` one after the other, each bottom-up, into out_pts and out_slip."""
    k = 0
    for a in range(rows.shape[0]):
        c = rows[a]
        h = pist[c, S.I_HEAD]
        q = k + pist[c, S.I_LEN] - 1
        while h >= 0:
            for f in range(4):
                out_pts[q, f] = pts[h, f]
            out_slip[q] = nxt[h] & 1
            h = nxt[h] >> 1
            q -= 1
        k += pist[c, S.I_LEN]
    return k


@njit
def lay_histories(lens, in_pts, in_slip, heads, pts, nxt):
    """Histories of lengths `lens`, stored one after the other bottom-up in in_pts, as consecutive
    stacks from point 0 of a store; heads: each one's top point (-1 for none)."""
    k = 0
    for c in range(lens.shape[0]):
        m = lens[c]
        for a in range(m):
            for f in range(4):
                pts[k + a, f] = in_pts[k + a, f]
            below = k + a - 1 if a > 0 else -1
            nxt[k + a] = (below << 1) | in_slip[k + a]
        heads[c] = k + m - 1 if m > 0 else -1
        k += m
    return k


def pack_rows(gid, pi, pj, pfs, pist, pcq, store, rows):
    """(ints (m, ROW_INTS), floats (m, ROW_FLOATS), points (p, 4), slips (p,)) of pair rows `rows`;
    gid maps the rows' body indices to global ids."""
    rows = np.asarray(rows, dtype=np.int64)
    ints = np.empty((rows.size, ROW_INTS), dtype=np.int64)
    ints[:, 0] = gid[pi[rows]]
    ints[:, 1] = gid[pj[rows]]
    ints[:, 2:] = pist[rows]
    floats = np.concatenate([pfs[rows], pcq[rows]], axis=1)
    npts = int(pist[rows, S.I_LEN].sum())
    pts = np.empty((npts, 4))
    slips = np.empty(npts, dtype=np.int64)
    read_histories(pist, rows, store.pts, store.nxt, pts, slips)
    return ints, floats, pts, slips


def history_slices(ints):
    """Offsets of each packed row's history in the packed points."""
    starts = np.zeros(ints.shape[0] + 1, dtype=np.int64)
    np.cumsum(ints[:, 2 + S.I_LEN], out=starts[1:])
    return starts


def unpack_rows(ints, floats, pts, slips, capacity):
    """(pfs, pist, pcq, store) of packed rows (their order), with capacity >= len(ints) rows (the
    rows past them cleared) and a fresh store holding their histories."""
    pfs = np.empty((capacity, S.N_FSTATE))
    pist = np.empty((capacity, S.N_ISTATE), dtype=np.int64)
    pcq = np.empty((capacity, 4))
    store = HistoryStore(max(1024, 2 * pts.shape[0]))
    unpack_rows_into(ints, floats, pts, slips, pfs, pist, pcq, store, capacity)
    return pfs, pist, pcq, store


def unpack_rows_into(ints, floats, pts, slips, pfs, pist, pcq, store, clear_to):
    """Packed rows into rows 0.. of pfs, pist, pcq (their order), rows len(ints)..clear_to-1
    cleared (no state, no history, the identity frame), and their histories laid out from point 0
    of `store` (which must hold twice their points), every other point of it freed."""
    m = ints.shape[0]
    pfs[m:clear_to] = 0.0
    pist[m:clear_to] = 0
    pist[m:clear_to, S.I_HEAD] = -1
    pcq[m:clear_to] = 0.0
    pcq[m:clear_to, 0] = 1.0
    pfs[:m] = floats[:, :S.N_FSTATE]
    pcq[:m] = floats[:, S.N_FSTATE:]
    pist[:m] = ints[:, 2:]
    total = pts.shape[0]
    heads = np.empty(m, dtype=np.int64)
    lay_histories(np.ascontiguousarray(ints[:, 2 + S.I_LEN]), np.ascontiguousarray(pts),
                  np.ascontiguousarray(slips), heads, store.pts, store.nxt)
    pist[:m, S.I_HEAD] = heads
    store.meta[M_FREE_HEAD] = -1
    thread_free(store.nxt, store.meta, total, store.capacity)
    store.meta[M_LIVE] = total
    store.meta[M_PEAK] = total

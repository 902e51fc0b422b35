"""Pair rows travelling between ranks: their contact state, frame and load history as flat arrays.

A row travels as its two bodies' global ids and integer state (ints), its float state, frame
quaternion and rolling/twisting state (floats; the rolling state has no columns in a run without
it), and its history (contact.store) as its points bottom-up (pts rows) with their
slip flags. Laid out again, each history takes consecutive points of a fresh store, bottom first,
as the store's compaction lays it out: only the points' indices differ from the sender's store, and
no result depends on those.

Wall rows (a sphere against a plane wall, keyed i * n_walls + w in the wall candidates) travel in
the same layout, their first int the sphere's global id and their second -1 - w (is_wall_row), so
that one exchange carries both kinds; unpack_rows_into lays the histories of both into one store.
"""

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.store import M_FREE_HEAD, M_LIVE, M_PEAK, HistoryStore, thread_free

ROW_INTS = 2 + S.N_ISTATE     # gid_i, gid_j, pist
ROW_FLOATS = S.N_FSTATE + 4   # pfs, pcq; then the rows' rolling state (prs), if any


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
def lay_histories(lens, in_pts, in_slip, heads, pts, nxt, start):
    """Histories of lengths `lens`, stored one after the other bottom-up in in_pts, as consecutive
    stacks of a store from its point `start` on; heads: each one's top point (-1 for none)."""
    k = 0
    for c in range(lens.shape[0]):
        m = lens[c]
        for a in range(m):
            for f in range(4):
                pts[start + k + a, f] = in_pts[k + a, f]
            below = start + k + a - 1 if a > 0 else -1
            nxt[start + k + a] = (below << 1) | in_slip[k + a]
        heads[c] = start + k + m - 1 if m > 0 else -1
        k += m
    return k


def pack_rows(gid, pi, pj, pfs, pist, pcq, prs, store, rows):
    """(ints (m, ROW_INTS), floats (m, ROW_FLOATS + rolling columns), points (p, 4), slips (p,)) of
    pair rows `rows`; gid maps the rows' body indices to global ids."""
    rows = np.asarray(rows, dtype=np.int64)
    return _pack(gid[pi[rows]], gid[pj[rows]], pfs, pist, pcq, prs, store, rows)


def pack_wall_rows(gid, wcand, n_walls, wfs, wist, wcq, wrs, store, rows):
    """pack_rows of the wall rows `rows` (keys wcand = i * n_walls + w): the first int the sphere's
    global id gid[i], the second -1 - w."""
    rows = np.asarray(rows, dtype=np.int64)
    i = wcand[rows] // n_walls
    return _pack(gid[i], -1 - (wcand[rows] - i * n_walls), wfs, wist, wcq, wrs, store, rows)


def is_wall_row(ints):
    """Which packed rows are wall rows (pack_wall_rows)."""
    return ints[:, 1] < 0


def wall_of(ints):
    """The wall index of packed wall rows."""
    return -1 - ints[:, 1]


def _pack(first, second, pfs, pist, pcq, prs, store, rows):
    ints = np.empty((rows.size, ROW_INTS), dtype=np.int64)
    ints[:, 0] = first
    ints[:, 1] = second
    ints[:, 2:] = pist[rows]
    floats = np.concatenate([pfs[rows], pcq[rows], prs[rows]], axis=1)
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


def take_rows(ints, floats, pts, slips, order):
    """The packed rows `order` (indices into the rows, in that order), with their histories."""
    starts = history_slices(ints)
    lens = np.diff(starts)[order]
    # each taken row's points: its first point plus 0 .. len - 1
    first = np.repeat(starts[:-1][order], lens)
    offset = np.arange(first.size) - np.repeat(np.cumsum(lens) - lens, lens)
    p = first + offset
    return ints[order], floats[order], pts[p], slips[p]


def join_rows(a, b):
    """Packed rows a followed by packed rows b."""
    if b[0].shape[0] == 0:  # no copy of the pair rows in a run without walls
        return tuple(a)
    return tuple(np.concatenate([x, y]) for x, y in zip(a, b))


def split_wall_rows(ints, floats, pts, slips):
    """(pair rows, wall rows) of packed rows, each (ints, floats, pts, slips) in their order."""
    wall = is_wall_row(ints)
    if not wall.any():  # no copy of the pair rows in a run without walls
        return (ints, floats, pts, slips), take_rows(ints, floats, pts, slips, np.zeros(0, dtype=np.int64))
    return (take_rows(ints, floats, pts, slips, np.flatnonzero(~wall)),
            take_rows(ints, floats, pts, slips, np.flatnonzero(wall)))


def _fill_rows(ints, floats, heads, fs, ist, cq, rs, clear_to):
    m = ints.shape[0]
    S.clear_rows(fs, ist, cq, m, clear_to)
    rs[m:clear_to] = 0.0
    fs[:m] = floats[:, :S.N_FSTATE]
    cq[:m] = floats[:, S.N_FSTATE:ROW_FLOATS]
    rs[:m] = floats[:, ROW_FLOATS:]
    ist[:m] = ints[:, 2:]
    ist[:m, S.I_HEAD] = heads


def unpack_rows_into(pairs, walls, pair_state, wall_state, store, clear_to, wall_clear_to):
    """Packed pair rows `pairs` into rows 0.. of pair_state (pfs, pist, pcq, prs) and packed wall
    rows `walls` into rows 0.. of wall_state (wfs, wist, wcq, wrs), each in their order, the rows past them up
    to clear_to (wall_clear_to) cleared; the histories of both laid out from point 0 of `store`
    (which must hold twice their points), the pairs' first, every other point of it freed."""
    heads = []
    total = 0
    for ints, floats, pts, slips in (pairs, walls):
        h = np.empty(ints.shape[0], dtype=np.int64)
        total += lay_histories(np.ascontiguousarray(ints[:, 2 + S.I_LEN]), np.ascontiguousarray(pts),
                               np.ascontiguousarray(slips), h, store.pts, store.nxt, total)
        heads.append(h)
    _fill_rows(pairs[0], pairs[1], heads[0], *pair_state, clear_to)
    _fill_rows(walls[0], walls[1], heads[1], *wall_state, wall_clear_to)
    store.meta[M_FREE_HEAD] = -1
    thread_free(store.nxt, store.meta, total, store.capacity)
    store.meta[M_LIVE] = total
    store.meta[M_PEAK] = total


def store_capacity(pairs, walls):
    """The history-store capacity unpack_rows_into needs for these packed rows."""
    return max(1024, 2 * (pairs[2].shape[0] + walls[2].shape[0]))


def unpack_rows(pairs, walls, capacity, wall_capacity, rolling_columns):
    """((pfs, pist, pcq, prs), (wfs, wist, wcq, wrs), store): unpack_rows_into fresh arrays of
    `capacity` pair rows and `wall_capacity` wall rows (with `rolling_columns` of rolling state) and
    a fresh store."""
    pair_state = (*S.fresh_rows(capacity), np.zeros((capacity, rolling_columns)))
    wall_state = (*S.fresh_rows(wall_capacity), np.zeros((wall_capacity, rolling_columns)))
    store = HistoryStore(store_capacity(pairs, walls))
    unpack_rows_into(pairs, walls, pair_state, wall_state, store, 0, 0)
    return pair_state, wall_state, store

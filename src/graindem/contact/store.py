"""One store for the equivalent load histories of all contacts (Kuhn 2011, section 3.3).

Master arrays of history points with `next` pointers and a free list threaded through them; each
contact owns a singly linked stack of points (its top is the current state, `next` walks down
towards the origin) whose head lives in the contact's integer state (`state.I_HEAD`).

A point takes 36 bytes, Kuhn's figure: four float64 (delta_i, N_i, p_x, p_y) in `pts` and one int32
link in `nxt`, whose lowest bit carries the slip flag of the segment ending at the point:
    nxt = (next_index << 1) | slip,   next_index = nxt >> 1 (arithmetic),  slip = nxt & 1
(next_index = -1 marks the bottom of a stack; on the free list the flag bit is unused).

The store never overflows: kernels may only push when a free point exists, and callers keep
`ensure_free(n)` ahead of them (each contact step pushes at most one point). Growing doubles the
arrays and threads the new points onto the free list; live indices do not move.

The kernels are compiled with `_nrt=False` (no reference counting of their array arguments): they
allocate nothing and are called from the contact laws' inner loops.
"""

import numpy as np

from .._jit import njit

# meta slots
M_FREE_HEAD = 0   # first free point, -1 if none
M_LIVE = 1        # points in use
M_CAPACITY = 2    # len(pts)
M_PEAK = 3        # largest M_LIVE ever seen
N_META = 4

# pts columns
PT_DELTA = 0
PT_N = 1
PT_PX = 2
PT_PY = 3

BYTES_PER_POINT = 4 * 8 + 4

# A store of at least this many points keeps its arrays on 2 MB boundaries in buffers of at least
# 4 MB, which numpy asks the kernel to back with transparent huge pages. The points of a store are
# read in random order; in 4 kB pages every history step missed the TLB on them (recorded biaxial
# trace, 20 000 contacts, 160 000 points, batched kernel: 62 -> 54 ns per jaeger update). Costs at
# most ~6 MB of address space per array, committed only where touched.
HUGE_PAGE_MIN_POINTS = 1 << 16
HUGE_PAGE = 2 << 20


def _zeros(shape, dtype, huge):
    """np.zeros(shape, dtype), 2 MB-aligned inside a >= 4 MB buffer if `huge` (see HUGE_PAGE_MIN_POINTS)."""
    if not huge:
        return np.zeros(shape, dtype=dtype)
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = np.zeros(max(nbytes, 2 * HUGE_PAGE) + HUGE_PAGE, dtype=np.uint8)
    offset = (-buf.ctypes.data) % HUGE_PAGE
    return buf[offset:offset + nbytes].view(dtype).reshape(shape)


@njit(_nrt=False)
def link_next(nxt, i):
    """Index of the point below point i (-1 at the bottom)."""
    return nxt[i] >> 1


@njit(_nrt=False)
def link_slip(nxt, i):
    """True if the segment ending at point i is a slip segment (|p| = mu exactly)."""
    return (nxt[i] & 1) == 1


@njit(_nrt=False)
def set_slip(nxt, i, slip):
    nxt[i] = ((nxt[i] >> 1) << 1) | (1 if slip else 0)


@njit(_nrt=False)
def push(pts, nxt, meta, head, delta, N, px, py, slip):
    """Put a new point on top of the stack `head`; returns the new head (-2 if the store is full)."""
    i = meta[M_FREE_HEAD]
    if i < 0:
        return -2
    meta[M_FREE_HEAD] = nxt[i] >> 1
    pts[i, PT_DELTA] = delta
    pts[i, PT_N] = N
    pts[i, PT_PX] = px
    pts[i, PT_PY] = py
    nxt[i] = (head << 1) | (1 if slip else 0)
    meta[M_LIVE] += 1
    if meta[M_LIVE] > meta[M_PEAK]:
        meta[M_PEAK] = meta[M_LIVE]
    return i


@njit(_nrt=False)
def pop(pts, nxt, meta, head):
    """Return the top point of stack `head` to the free list; returns the new head."""
    below = nxt[head] >> 1
    nxt[head] = meta[M_FREE_HEAD] << 1
    meta[M_FREE_HEAD] = head
    meta[M_LIVE] -= 1
    return below


@njit(_nrt=False)
def release(pts, nxt, meta, head):
    """Return a whole stack to the free list (a contact that opened)."""
    while head >= 0:
        head = pop(pts, nxt, meta, head)
    return -1


@njit(_nrt=False)
def remove_below(pts, nxt, meta, i):
    """Remove the point directly below point i (i keeps its own slip flag)."""
    j = nxt[i] >> 1
    if j >= 0:
        below = nxt[j] >> 1
        nxt[i] = (below << 1) | (nxt[i] & 1)
        nxt[j] = meta[M_FREE_HEAD] << 1
        meta[M_FREE_HEAD] = j
        meta[M_LIVE] -= 1


@njit(_nrt=False)
def stack_length(nxt, head):
    n = 0
    while head >= 0:
        n += 1
        head = nxt[head] >> 1
    return n


@njit(_nrt=False)
def thread_free(nxt, meta, start, stop):
    """Put points start..stop-1 on the free list (in index order)."""
    first = meta[M_FREE_HEAD]
    for i in range(stop - 1, start - 1, -1):
        nxt[i] = first << 1
        first = i
    meta[M_FREE_HEAD] = first


# Compaction lays out the top HOT_POINTS points of every stack (the points a contact step reads and
# writes: the top, the point below, the one below that) in a region of their own, in row order: a pass
# over the contacts then streams through ~100 bytes per contact instead of touching the far end of
# every contact's whole stack (4096-sphere biaxial test, jaeger: see engine.history.compact_store).
HOT_POINTS = 3


@njit(_nrt=False)
def compact_into(nxt, ist, pts, new_pts, new_nxt, new_heads, pos):
    """Copy the stacks of the rows of `ist` into new_pts/new_nxt from index pos on; new heads go
    to new_heads. Returns the next free index, or -1 if a stack's length differs from its row's
    I_LEN (nothing is then valid).

    Two regions, each in row order: first the top HOT_POINTS points of every stack (the points a
    step reads and writes: the top, the point below it, the one below that), then the rest of
    every stack. Within a region a stack's points are consecutive, bottom first (a walk down runs
    backwards through consecutive points); the lowest hot point links to the highest of its
    stack's rest."""
    hot = 0
    for c in range(ist.shape[0]):
        hot += min(max(ist[c, 1], 0), HOT_POINTS)
    h = pos              # next hot slot
    r = pos + hot        # next slot of the rest
    for c in range(ist.shape[0]):
        length = ist[c, 1]
        m = min(max(length, 0), HOT_POINTS)
        n_rest = length - m
        i = ist[c, 0]
        k = 0            # points copied
        while i >= 0:
            if k >= length:
                return -1
            # the k-th point from the top: hot slot h + m - 1 - k, else rest slot r + n_rest - 1 - (k - m)
            if k < m:
                q = h + m - 1 - k
            else:
                q = r + n_rest - 1 - (k - m)
            below = nxt[i] >> 1
            # the point below is the next slot down in the same region, except below the lowest hot point
            if below < 0:
                nq = -1
            elif k + 1 == m:
                nq = r + n_rest - 1
            else:
                nq = q - 1
            # the four PT_* columns written out: a loop over pts.shape[1] makes the compaction 8-10 %
            # slower (108 500 live points: 1.26-1.49 against 1.19-1.35 ms)
            new_pts[q, 0] = pts[i, 0]
            new_pts[q, 1] = pts[i, 1]
            new_pts[q, 2] = pts[i, 2]
            new_pts[q, 3] = pts[i, 3]
            new_nxt[q] = (nq << 1) | (nxt[i] & 1)
            i = below
            k += 1
        if k != length:
            return -1
        new_heads[c] = h + m - 1 if length > 0 else -1
        h += m
        r += n_rest
    return r


class HistoryStore:
    """The arrays of the shared history store and the Python-side bookkeeping around them.

    Kernels receive `store.pts, store.nxt, store.meta`. Arrays are replaced (not resized in place)
    when the store grows, so fetch them again after calling `ensure_free`.
    """

    def __init__(self, capacity=1024):
        capacity = int(capacity)
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        huge = capacity >= HUGE_PAGE_MIN_POINTS
        self.pts = _zeros((capacity, 4), np.float64, huge)
        self.nxt = _zeros(capacity, np.int32, huge)
        self.meta = np.zeros(N_META, dtype=np.int64)
        self.meta[M_FREE_HEAD] = -1
        self.meta[M_CAPACITY] = capacity
        thread_free(self.nxt, self.meta, 0, capacity)

    @property
    def capacity(self):
        return int(self.meta[M_CAPACITY])

    @property
    def n_live(self):
        return int(self.meta[M_LIVE])

    @property
    def n_free(self):
        return self.capacity - self.n_live

    def ensure_free(self, n):
        """Grow (at least doubling) until n points are free. Live indices do not change."""
        n = int(n)
        if self.n_free >= n:
            return False
        old = self.capacity
        new = max(2 * old, self.n_live + n)
        if new >= 2**30:
            raise MemoryError(f"history store would exceed 2^30 points ({new})")
        huge = new >= HUGE_PAGE_MIN_POINTS
        pts = _zeros((new, 4), np.float64, huge)
        pts[:old] = self.pts
        nxt = _zeros(new, np.int32, huge)
        nxt[:old] = self.nxt
        self.pts, self.nxt = pts, nxt
        self.meta[M_CAPACITY] = new
        thread_free(self.nxt, self.meta, old, new)
        return True

    def compact(self, *ists):
        """Lay every live history out contiguously: the stacks of the rows of `ists` (int state
        arrays, rows (I_HEAD, I_LEN, ...); together they must own every live point), in row order,
        each array's rows as `compact_into` lays them out (the top HOT_POINTS points of every
        stack first, then the rest, each bottom point first); the free points follow, in index order.

        Only indices change: the heads in `ists` are rewritten, every point keeps its values and
        slip flag, so results do not change. Why: the free list hands out whatever point was
        freed last, so after a while a contact's points lie scattered through the store and a
        step that walks them waits for memory on each; laid out in contact order they share
        cache lines and the hardware prefetcher streams them (measured in
        benchmarks/store_locality.py). Call it where contacts are re-ordered anyway (neighbour
        rebuilds), and rarely: it costs 20-40 ns per
        live point (one walk of the scattered store), against a saving of up to ~30 ns per jaeger
        update at 20 000 contacts that fades as the free list scatters new points again (net
        gain only for intervals of ~100+ steps). `pts` and `nxt` are rewritten in place."""
        from .state import I_HEAD, I_LEN
        for k, ist in enumerate(ists):
            if not (isinstance(ist, np.ndarray) and ist.ndim == 2 and ist.shape[1] > I_LEN
                    and ist.dtype == np.int64):
                raise ValueError(f"ists[{k}] must be an int64 state array of shape (n, >= {I_LEN + 1}), "
                                 f"got {getattr(ist, 'dtype', type(ist))} {getattr(ist, 'shape', '')}")
        total = sum(int(ist[:, I_LEN].sum()) for ist in ists)
        if total != self.n_live:
            raise ValueError(f"ists must own every live point: their I_LEN sum to {total}, the store holds "
                             f"{self.n_live} live points")
        new_pts = np.empty((total, self.pts.shape[1]), dtype=self.pts.dtype)
        new_nxt = np.empty(total, dtype=self.nxt.dtype)
        heads = [np.empty(ist.shape[0], dtype=np.int64) for ist in ists]
        pos = 0
        for k, ist in enumerate(ists):
            pos = compact_into(self.nxt, ist, self.pts, new_pts, new_nxt, heads[k], pos)
            if pos < 0:
                raise ValueError(f"ists[{k}]: a history's length differs from its row's I_LEN (corrupt state)")
        self.pts[:pos] = new_pts[:pos]
        self.nxt[:pos] = new_nxt[:pos]
        self.meta[M_FREE_HEAD] = -1
        thread_free(self.nxt, self.meta, pos, self.capacity)
        for ist, h in zip(ists, heads):
            ist[:, I_HEAD] = h

    @property
    def bytes_used(self):
        """Bytes held by live history points (Kuhn's measure)."""
        return self.n_live * BYTES_PER_POINT

    @property
    def bytes_allocated(self):
        return self.capacity * BYTES_PER_POINT

    def history_lengths(self, ist, active=None):
        """Lengths of the histories of the contacts in `ist` (int state rows), optionally masked."""
        from .state import I_LEN
        lengths = ist[:, I_LEN]
        return lengths if active is None else lengths[active]

    def chain(self, head):
        """Indices of the points of the history whose top point is `head`, bottom-up ([] for -1)."""
        idx = []
        i = int(head)
        while i >= 0:
            idx.append(i)
            i = int(link_next(self.nxt, i))
        idx.reverse()
        return idx

    def points(self, head):
        """The history whose top point is `head`, bottom-up, as a tuple of
        (delta, N, px, py, slip) rows: comparable between runs whatever the points' indices."""
        return tuple((*(float(v) for v in self.pts[i]), bool(link_slip(self.nxt, i))) for i in self.chain(head))

    def state_arrays(self):
        """The arrays that define the store, for checkpoints."""
        return {"pts": self.pts, "nxt": self.nxt, "meta": self.meta}

    @classmethod
    def from_arrays(cls, pts, nxt, meta):
        st = cls.__new__(cls)
        pts = np.asarray(pts, dtype=np.float64)
        nxt = np.asarray(nxt, dtype=np.int32)
        huge = pts.shape[0] >= HUGE_PAGE_MIN_POINTS
        st.pts = _zeros(pts.shape, np.float64, huge)
        st.pts[...] = pts
        st.nxt = _zeros(nxt.shape, np.int32, huge)
        st.nxt[...] = nxt
        st.meta = np.array(meta, dtype=np.int64)
        return st

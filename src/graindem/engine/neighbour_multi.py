"""Cell grids by size class: neighbour search that stays linear for wide size distributions.

A single cell list sized by the largest radius puts, at a size ratio R, about R^3 small spheres
in each cell, so every query examines that many. Here the spheres are split into size classes
(class k holds radii in (r_max / 2^(k+1), r_max / 2^k]) and each class gets a periodic grid of
its own whose cells are at least as wide as that class's largest diameter (plus any extra
cutoff), as LAMMPS's `neigh_modify multi` does. A sphere of radius r looks for partners of class
c within r + r_max(c) (+ extra): when r <= r_max(c) that reach fits in one cell, so 27 cells of
O(1) spheres each are examined. Pairs between two classes are therefore searched from the
smaller sphere into the larger class's grid, never the other way round.

Interface:

    classes = SizeClasses(radii, box, extra=0.0)   # class of each sphere, cell grid of each class
    classes.insert(i, position)                      # one sphere into its class's grid (incremental)
    overlaps_any(...)                                # njit: does a trial sphere overlap a stored one?
    pairs_within(positions, radii, box, extra)       # all periodic pairs with gap < extra (i < j)

Each class's cell count is also kept at most about its sphere count, so a class with a few small
spheres does not allocate a fine grid over the whole box.
"""

import math

import numpy as np

from .._jit import njit

CLASS_RATIO = 2.0  # radius ratio spanned by one size class


def size_class_of(radii):
    """Size class of each radius: 0 for (r_max / 2, r_max], 1 for (r_max / 4, r_max / 2], ..."""
    radii = np.asarray(radii, dtype=np.float64)
    k = np.floor(np.log(radii.max() / radii) / math.log(CLASS_RATIO)).astype(np.int64)
    return np.maximum(k, 0)


class SizeClasses:
    """The size classes of a set of spheres in a periodic box and an (initially empty) cell grid
    per class stored as linked lists: head[cell_offset[c] + cell] -> first sphere, nxt[i] -> next.

    extra: a gap added to every reach (a neighbour list's skin); cells are at least
    2 r_max(c) + extra wide.
    """

    def __init__(self, radii, box, extra=0.0, by_size=True):
        radii = np.asarray(radii, dtype=np.float64)
        box = np.asarray(box, dtype=np.float64)
        self.radii = radii
        self.box = box
        self.extra = float(extra)
        # by_size=False: one class, one grid sized by the largest sphere (the plain cell list)
        cls = size_class_of(radii) if by_size else np.zeros(radii.size, dtype=np.int64)
        # renumber the classes present 0, 1, ... in order of decreasing size
        present = np.unique(cls)
        self.cls = np.searchsorted(present, cls).astype(np.int64)
        nc = present.size
        self.class_rmax = np.array([radii[self.cls == c].max() for c in range(nc)])
        count = np.bincount(self.cls, minlength=nc)
        self.ncell = np.zeros((nc, 3), dtype=np.int64)
        volume = float(np.prod(box))
        for c in range(nc):
            # cells no narrower than the class's reach, and not more cells than spheres of the class
            width = max(2.0 * self.class_rmax[c] + self.extra, (volume / count[c]) ** (1.0 / 3.0))
            self.ncell[c] = np.maximum(np.floor(box / width), 1).astype(np.int64)
        self.cell_offset = np.zeros(nc + 1, dtype=np.int64)
        self.cell_offset[1:] = np.cumsum(np.prod(self.ncell, axis=1))
        self.head = np.full(int(self.cell_offset[-1]), -1, dtype=np.int64)
        self.nxt = np.full(radii.size, -1, dtype=np.int64)
        self.class_count = np.zeros(nc, dtype=np.int64)  # spheres inserted so far
        self.cells = np.empty(int(np.prod(self.ncell, axis=1).max()), dtype=np.int64)  # scratch: cells of a query
        self.n_classes = nc

    def arrays(self):
        """The grid arrays in the order the kernels take them."""
        return self.cls, self.class_rmax, self.class_count, self.ncell, self.cell_offset, self.head, self.nxt, self.cells


@njit(fastmath=False)
def cell_of(x, box, ncell, c, cell_offset):
    """Flat index of the cell of class c holding point x (inside [0, box))."""
    idx = cell_offset[c]
    stride = 1
    for a in range(3):
        k = int(math.floor(x[a] / box[a] * ncell[c, a]))  # as _axis_range rounds
        k = min(max(k, 0), ncell[c, a] - 1)
        idx += k * stride
        stride *= ncell[c, a]
    return idx


@njit(fastmath=False)
def insert(i, x, box, cls, class_count, ncell, cell_offset, head, nxt):
    """Put sphere i (at x) into its class's grid."""
    cell = cell_of(x, box, ncell, cls[i], cell_offset)
    class_count[cls[i]] += 1
    nxt[i] = head[cell]
    head[cell] = i


@njit(fastmath=False)
def _axis_range(x, reach, box, n):
    """First cell and number of cells along one axis within `reach` of x (all n when it wraps)."""
    lo = int(math.floor((x - reach) / box * n))
    hi = int(math.floor((x + reach) / box * n))
    if hi - lo + 1 >= n:
        return 0, n
    return lo, hi - lo + 1


@njit(fastmath=False)
def cells_within(x, reach, box, c, ncell, cell_offset, cells):
    """Write into `cells` the flat indices of the cells of class c within `reach` of x (each once,
    wrapping periodically); returns how many."""
    # a relative margin keeps rounding of the cell bounds from losing a partner at the edge
    reach *= 1.0 + 1e-12
    lo0, n0 = _axis_range(x[0], reach, box[0], ncell[c, 0])
    lo1, n1 = _axis_range(x[1], reach, box[1], ncell[c, 1])
    lo2, n2 = _axis_range(x[2], reach, box[2], ncell[c, 2])
    m = 0
    for a in range(n0):
        k0 = (lo0 + a) % ncell[c, 0]
        for b in range(n1):
            k1 = (lo1 + b) % ncell[c, 1]
            for e in range(n2):
                k2 = (lo2 + e) % ncell[c, 2]
                cells[m] = cell_offset[c] + k0 + ncell[c, 0] * (k1 + ncell[c, 1] * k2)
                m += 1
    return m


@njit(fastmath=False)
def distance2(pos, j, x, box):
    """Squared minimum-image distance from x to sphere j: d -= box floor(d / box + 1/2) per axis,
    summed in the order x, y, z (as numpy sums a 3-vector)."""
    d0 = pos[j, 0] - x[0]
    d1 = pos[j, 1] - x[1]
    d2 = pos[j, 2] - x[2]
    d0 -= box[0] * math.floor(d0 / box[0] + 0.5)
    d1 -= box[1] * math.floor(d1 / box[1] + 0.5)
    d2 -= box[2] * math.floor(d2 / box[2] + 0.5)
    return d0 * d0 + d1 * d1 + d2 * d2


@njit(fastmath=False)
def overlaps_any(x, r, pos, radii, box, class_rmax, class_count, ncell, cell_offset, head, nxt, cells):
    """True when a sphere of radius r at x overlaps (periodic minimum image) any stored sphere.

    The test is sqrt(distance2) < r + r_j, which rounds as the same test written with numpy does.
    """
    for c in range(class_rmax.size):
        if class_count[c] == 0:
            continue
        for q in range(cells_within(x, r + class_rmax[c], box, c, ncell, cell_offset, cells)):
            j = head[cells[q]]
            while j >= 0:
                if math.sqrt(distance2(pos, j, x, box)) < r + radii[j]:
                    return True
                j = nxt[j]
    return False


def pairs_within(positions, radii, box, skin=0.0, by_size=True):
    """All pairs (i, j) of spheres in the periodic box `box` (origin 0) whose gap is below `skin`:
    |x_i - x_j| (minimum image) < r_i + r_j + skin. Returns (pi, pj, examined): int64 arrays of the
    pairs, each once, and the number of candidate spheres whose distance was computed.
    by_size=False searches one grid sized by the largest sphere (for comparison)."""
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    box = np.asarray(box, dtype=np.float64)
    pos = positions - box * np.floor(positions / box)  # into [0, box)
    pos = np.where(pos >= box, 0.0, pos)
    grid = SizeClasses(radii, box, extra=skin, by_size=by_size)
    fill_grid(pos, box, *grid.arrays())
    cls, class_rmax, _, ncell, cell_offset, head, nxt, cells = grid.arrays()
    counts = np.zeros(pos.shape[0] + 1, dtype=np.int64)
    examined = _pair_pass(pos, grid.radii, box, float(skin), cls, class_rmax, ncell, cell_offset, head, nxt, cells,
                          counts, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), False)
    start = np.concatenate([[0], np.cumsum(counts[:-1])])
    pi = np.empty(int(start[-1]), dtype=np.int64)
    pj = np.empty_like(pi)
    _pair_pass(pos, grid.radii, box, float(skin), cls, class_rmax, ncell, cell_offset, head, nxt, cells, start,
               pi, pj, True)
    return pi, pj, examined


@njit(fastmath=False)
def fill_grid(pos, box, cls, class_rmax, class_count, ncell, cell_offset, head, nxt, cells):
    """Insert every sphere into its class's grid."""
    for i in range(pos.shape[0]):
        insert(i, pos[i], box, cls, class_count, ncell, cell_offset, head, nxt)


@njit(fastmath=False)
def _pair_pass(pos, radii, box, skin, cls, class_rmax, ncell, cell_offset, head, nxt, cells, slot, pi, pj, write):
    """For each sphere i, its partners j in classes of its own size or larger: a larger class's
    pairs are found from the smaller sphere (its reach fits one cell of the larger class's grid);
    within a class j > i. Counts per i into slot[i] (write False) or writes the pairs from
    slot[i] on (write True). Returns the number of distances computed."""
    examined = 0
    for i in range(pos.shape[0]):
        a = cls[i]
        k = slot[i] if write else 0
        for c in range(a + 1):
            for q in range(cells_within(pos[i], radii[i] + class_rmax[c] + skin, box, c, ncell, cell_offset, cells)):
                j = head[cells[q]]
                while j >= 0:
                    if c < a or j > i:
                        examined += 1
                        rc = radii[i] + radii[j] + skin
                        if distance2(pos, j, pos[i], box) < rc * rc:
                            if write:
                                pi[k] = i
                                pj[k] = j
                            k += 1
                    j = nxt[j]
        if not write:
            slot[i] = k
    return examined

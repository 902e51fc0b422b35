"""Recursive coordinate bisection (RCB) of the bodies into one box per rank.

The box is cut across its longest side (in length, not in fractional units) at the median of the
bodies' coordinates along it, so that the two halves hold bodies in proportion to the ranks they
go to (weights: body counts), and each half again until every rank has a box. Cuts are kept in
fractional coordinates of the cell, so that the boxes follow a cell that changes size or shape (a
box is a parallelepiped of the cell's lattice; in a tilted cell its "lengths" are the cell's
heights, the distances between opposite faces). The same inputs give the same boxes on every
rank: ties in a coordinate are broken by global id.
"""

import numpy as np


class Bisection:
    """The boxes (fractional coordinates, boxes[r] = (lo, hi), each (3,)) of `nparts` ranks from
    the bodies' fractional positions `frac` (n, 3) in [0, 1) and global ids `gid`; lengths: the
    cell's lengths, its heights when it is tilted (which side is longest)."""

    def __init__(self, frac, gid, nparts, lengths):
        frac = np.asarray(frac, dtype=np.float64)
        n = frac.shape[0]
        nparts = int(nparts)
        if n < nparts:
            raise ValueError(f"{nparts} MPI ranks for {n} bodies: the number of ranks must be at most the number "
                             f"of bodies (every rank owns at least one)")
        self.nparts = nparts
        self.lengths = np.asarray(lengths, dtype=np.float64)
        self.boxes = np.zeros((nparts, 2, 3))
        self.nodes = []  # [axis, cut, left, right]; a child < 0 is the leaf of rank -1 - child
        self._split(frac, np.asarray(gid), np.arange(n), np.zeros(3), np.ones(3), 0, nparts)

    def _split(self, frac, gid, idx, lo, hi, first, count):
        if count == 1:
            self.boxes[first, 0] = lo
            self.boxes[first, 1] = hi
            return -1 - first
        axis = int(np.argmax((hi - lo) * self.lengths))
        nleft = count // 2
        order = idx[np.lexsort((gid[idx], frac[idx, axis]))]
        k = len(order) * nleft // count
        if k < nleft or len(order) - k < count - nleft:
            raise ValueError(f"{count} MPI ranks for {len(order)} bodies in one part of the bisection: use fewer ranks")
        cut = 0.5 * (frac[order[k - 1], axis] + frac[order[k], axis])
        left = order[frac[order, axis] < cut]
        right = order[frac[order, axis] >= cut]
        if len(left) < nleft or len(right) < count - nleft:
            raise ValueError(f"the bodies' coordinates along axis {axis} coincide too often to bisect them over "
                             f"{count} MPI ranks: use fewer ranks")
        node = len(self.nodes)
        self.nodes.append([axis, cut, 0, 0])
        hi_left = hi.copy()
        hi_left[axis] = cut
        lo_right = lo.copy()
        lo_right[axis] = cut
        self.nodes[node][2] = self._split(frac, gid, left, lo, hi_left, first, nleft)
        self.nodes[node][3] = self._split(frac, gid, right, lo_right, hi, first + nleft, count - nleft)
        return node

    def owner(self, frac):
        """The rank whose box holds each of the fractional positions `frac` (m, 3)."""
        frac = np.asarray(frac, dtype=np.float64).reshape(-1, 3)
        out = np.zeros(frac.shape[0], dtype=np.int64)
        if self.nparts == 1:
            return out
        stack = [(0, np.arange(frac.shape[0]))]
        while stack:
            node, idx = stack.pop()
            axis, cut, left, right = self.nodes[node]
            below = frac[idx, axis] < cut
            for child, part in ((left, idx[below]), (right, idx[~below])):
                if child < 0:
                    out[part] = -1 - child
                elif part.size:
                    stack.append((child, part))
        return out

    def halo_ranks(self, frac, periodic, halo, tilted=False):
        """(m, nparts) bool: whether each position lies within `halo` (m) of each rank's box,
        through the periodic images of the periodic axes.

        tilted: the cell is tilted and self.lengths are its heights. Its faces are then not
        orthogonal, and the distance to a box is bounded below by the largest of the distances
        across each pair of its faces (a change df of a fractional coordinate is a distance
        df * height across those faces): a position is taken as near when that bound is below
        the halo (with a relative margin of 1e-12 for rounding), which keeps every body within the
        halo and some farther."""
        frac = np.asarray(frac, dtype=np.float64).reshape(-1, 3)
        lo = self.boxes[:, 0][None, :, :]
        hi = self.boxes[:, 1][None, :, :]
        f = frac[:, None, :]
        gap = np.maximum(0.0, np.maximum(lo - f, f - hi))
        for k in range(3):
            if periodic[k]:
                for shift in (-1.0, 1.0):
                    g = np.maximum(0.0, np.maximum(lo[..., k] - (f[..., k] + shift), (f[..., k] + shift) - hi[..., k]))
                    gap[..., k] = np.minimum(gap[..., k], g)
        if tilted:
            return np.max(gap * self.lengths, axis=2) < halo * (1.0 + 1e-12)
        dist2 = np.sum((gap * self.lengths) ** 2, axis=2)
        return dist2 < halo * halo

    def check_thickness(self, halo):
        """Refuse boxes thinner than the halo: a rank's ghosts would then reach past its
        neighbours' boxes, and it would hold more ghosts than bodies of its own. (In a tilted
        cell, self.lengths are its heights: the thickness of a box across each pair of faces.)"""
        width = (self.boxes[:, 1] - self.boxes[:, 0]) * self.lengths
        r, k = np.unravel_index(np.argmin(width), width.shape)
        if width[r, k] < halo:
            raise ValueError(f"the subdomain of MPI rank {r} is {width[r, k]:.4g} m wide along axis {k}, thinner than "
                             f"the halo 2 r_max + skin = {halo:.4g} m: use fewer ranks (or more bodies)")

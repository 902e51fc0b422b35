"""Neighbour pairs through cell grids by size class (engine.neighbour_multi.pairs_within).

Reference: every pair of spheres tested directly (numpy, O(n^2), minimum image). The pair sets
must be equal, for a narrow and a size-ratio-10 distribution, a dense and a loose state, and a box
thin enough that some class grid has fewer than three cells along an axis.
"""

import numpy as np
import pytest

from graindem.engine.neighbour_multi import pairs_within, size_class_of
from graindem.engine.prepare import random_gas
from graindem.particles.size_distribution import MAX_UNIFORM_SPREAD, Lognormal, Uniform


def brute_force_pairs(pos, r, box, skin):
    d = pos[None, :, :] - pos[:, None, :]
    d -= box * np.round(d / box)
    dist = np.sqrt(np.sum(d * d, axis=2))
    i, j = np.nonzero(np.triu(dist < r[:, None] + r[None, :] + skin, k=1))
    return set(zip(i.tolist(), j.tolist()))


@pytest.mark.parametrize("dist, phi, skin, shape", [
    (Uniform(1.0, 0.2), 0.3, 0.2, (1, 1, 1)),
    (Uniform(1.0, MAX_UNIFORM_SPREAD), 0.3, 0.36, (1, 1, 1)),
    (Lognormal(1.0, 0.38), 0.35, 0.1, (2.0, 1.0, 0.5)),
])
def test_pair_set_equals_brute_force(dist, phi, skin, shape):
    rng = np.random.default_rng(8)
    n = 700
    r = dist.sample(n, rng)
    shape = np.array(shape, dtype=float)
    L = (np.sum(4 / 3 * np.pi * r ** 3) / phi / np.prod(shape)) ** (1 / 3) * shape
    pos = random_gas(n, r, L, rng)
    # a denser state: shrink the positions (overlaps allowed) so that many pairs are listed
    for scale in (1.0, 0.8):
        box = L * scale
        p = pos * scale
        want = brute_force_pairs(p, r, box, skin)
        for by_size in (True, False):
            pi, pj, examined = pairs_within(p, r, box, skin, by_size=by_size)
            got = {(min(a, b), max(a, b)) for a, b in zip(pi.tolist(), pj.tolist())}
            assert len(got) == pi.size  # each pair once
            assert got == want
            assert examined < n * (n - 1) // 2
    assert size_class_of(r).max() >= (1 if dist.size_ratio > 2 else 0)

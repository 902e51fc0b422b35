"""The loose random packing (engine.prepare.random_gas) through cell grids by size class.

Reference: random sequential addition written directly (each trial position tested against every
sphere placed before it, numpy, O(n^2)) with the same trial draws. The grids must not change a
single decision: the same positions, and the generator left in the same state. A larger packing
of size ratio 10 is checked for overlaps with scipy's periodic KD-tree.
"""


import numpy as np
import pytest
from scipy.spatial import cKDTree

from graindem.engine.prepare import random_gas
from graindem.particles.size_distribution import MAX_UNIFORM_SPREAD, Lognormal, Uniform


def sequential_addition_reference(radii, box, rng):
    order = np.argsort(-radii)
    pos = np.zeros((radii.size, 3))
    for m, i in enumerate(order):
        placed = order[:m]
        while True:
            x = rng.uniform(0.0, 1.0, 3) * box
            d = pos[placed] - x
            d -= box * np.floor(d / box + 0.5)
            if np.all(np.sqrt(np.sum(d * d, axis=1)) >= radii[i] + radii[placed]):
                break
        pos[i] = x
    return pos


def gas_setup(dist, n, phi, seed):
    rng = np.random.default_rng(seed)
    r = dist.sample(n, rng)
    L = (np.sum(4 / 3 * np.pi * r ** 3) / phi) ** (1 / 3)
    return r, np.array([L, 1.1 * L, 0.9 * L])


@pytest.mark.parametrize("dist, n, phi", [(Uniform(1e-4, 0.2), 150, 0.3), (Uniform(1e-4, MAX_UNIFORM_SPREAD), 400, 0.3),
                                          (Lognormal(1e-4, 0.38), 300, 0.35)])
def test_same_positions_and_generator_state_as_direct_sequential_addition(dist, n, phi):
    r, box = gas_setup(dist, n, phi, 4)
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    ref = sequential_addition_reference(r, box, a)
    got = random_gas(n, r, box, b)
    np.testing.assert_array_equal(got, ref)
    assert a.uniform() == b.uniform()


def test_wide_distribution_has_no_overlap():
    n = 20000
    r, box = gas_setup(Uniform(1.0, MAX_UNIFORM_SPREAD), n, 0.3, 5)
    pos = random_gas(n, r, box, np.random.default_rng(6))
    assert np.all((pos >= 0) & (pos < box))
    pairs = cKDTree(pos, boxsize=box).query_pairs(2 * r.max(), output_type="ndarray")
    d = pos[pairs[:, 0]] - pos[pairs[:, 1]]
    d -= box * np.round(d / box)
    gap = np.linalg.norm(d, axis=1) - r[pairs[:, 0]] - r[pairs[:, 1]]
    assert gap.min() >= 0.0
    # the small spheres did fill in among the large ones: near-contacts of every size pairing exist
    close = pairs[gap < 0.05 * r.min()]
    assert close.size and r[close].min() < 0.2 and r[close].max() > 1.6


def test_impossible_fraction_is_refused(monkeypatch):
    from graindem.engine import prepare
    monkeypatch.setattr(prepare, "MAX_ATTEMPTS", 50)
    r = np.full(200, 1.0)
    L = (np.sum(4 / 3 * np.pi * r ** 3) / 0.6) ** (1 / 3)  # above the random sequential addition limit
    with pytest.raises(ValueError, match="could not place 200 spheres"):
        random_gas(200, r, np.full(3, L), np.random.default_rng(0))

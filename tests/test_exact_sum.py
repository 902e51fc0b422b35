"""core.exact_sum: exact sums of doubles, rounded once; the same for any order and split of the terms.

Reference: math.fsum (Shewchuk's algorithm, correctly rounded), an independent implementation."""

import math

import numpy as np
import pytest

from graindem._jit import njit
from graindem.core.exact_sum import exact_add, exact_value, new_accumulator


@njit
def _add_all(limbs, row, xs):
    for x in xs:
        exact_add(limbs, row, x)


def _exact(xs):
    limbs = new_accumulator(1)
    _add_all(limbs, 0, np.asarray(xs, dtype=np.float64))
    return exact_value(limbs, 0)


def _terms(rng, n, spread):
    return rng.standard_normal(n) * 10.0 ** rng.uniform(-spread, spread, n)


@pytest.mark.parametrize("spread", [0, 5, 40, 300])
def test_value_is_the_correctly_rounded_sum(spread):
    rng = np.random.default_rng(spread)
    for _ in range(20):
        xs = _terms(rng, int(rng.integers(1, 3000)), spread)
        assert _exact(xs) == math.fsum(xs)


def test_cancellation_and_ties():
    # sums whose float sum is wrong in every digit, and exact ties of round-to-even
    cases = [[1e300, 1.0, -1e300], [1e16, 1.0, -1e16, 1e-30], [2.0 ** 53, 1.0], [2.0 ** 53, 1.0, 2.0 ** -60],
             [2.0 ** 53 + 2, 1.0], [-(2.0 ** 53), -1.0, -(2.0 ** -60)], [0.1] * 10, [5e-324, 5e-324],
             [1.7e308, 1e292, -1.7e308], [-0.0], [], [3.0, -3.0]]
    for xs in cases:
        assert _exact(xs) == math.fsum(xs), xs


def test_any_order_and_split_give_the_same_limbs_sum():
    rng = np.random.default_rng(7)
    xs = _terms(rng, 5000, 8)
    whole = new_accumulator(1)
    _add_all(whole, 0, xs)
    parts = new_accumulator(3)
    perm = rng.permutation(xs.size)
    for r, chunk in enumerate(np.array_split(xs[perm], 3)):
        _add_all(parts, r, chunk)
    # integer addition of the parts (what an MPI reduction of the limbs does)
    joined = parts.sum(axis=0, keepdims=True)
    assert exact_value(joined, 0) == exact_value(whole, 0) == math.fsum(xs)
    # reading a value leaves the sum held unchanged
    _add_all(whole, 0, -xs[:10])
    assert exact_value(whole, 0) == math.fsum(xs[10:])

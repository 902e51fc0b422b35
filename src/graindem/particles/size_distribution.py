"""Grain size distributions as users give them, sampled by number (one radius per sphere).

    Uniform(radius_mean, spread)   radii uniform in radius_mean (1 +- spread)
    Lognormal(median, sigma)       ln r normal (median r50 by number, standard deviation sigma),
                                   truncated at +- 3 sigma
    Sieve(diameters, passing)      a sieve curve: % of the mass passing each sieve diameter
    Sieve.from_csv(path)           the same from a CSV of rows "diameter (m), % passing"

Each has .sample(n, rng) -> radii (m), .size_ratio (largest / smallest radius it can give) and
.key() (a JSON-able description, for caches). The preparation of packings is validated for size
ratios up to MAX_SIZE_RATIO = 10; every distribution refuses a wider one with a ValueError.

Sieve curves are mass-based: P(D) is the fraction of the mass in grains of diameter <= D. Between
two sieves the mass is taken as uniform in ln D (the straight line of the usual semi-log gradation
plot). Grains of diameter D carry mass ~ D^3, so the number density follows from the mass density
by a factor D^-3: in the interval [D_k, D_k+1] with mass share dP_k the number share is
    N_k ~ dP_k / ln(D_k+1 / D_k) * (D_k^-3 - D_k+1^-3) / 3,
and inside it D^-3 is uniform between D_k^-3 and D_k+1^-3. Sampling picks the interval with
probability N_k / sum N and then D = (D_k^-3 - V (D_k^-3 - D_k+1^-3))^(-1/3), V uniform in [0, 1):
exact, no binning. A sample of n grains then reproduces the sieve curve when its grains are
weighed (mass fraction below each sieve), which is what tests/test_packing_distributions.py checks.
"""

import math
from pathlib import Path

import numpy as np
from scipy.special import ndtr, ndtri

from ..io.numeric_csv import read_numeric_csv

MAX_SIZE_RATIO = 10.0
LOGNORMAL_TRUNCATION = 3.0  # in standard deviations of ln r
MAX_LOGNORMAL_SIGMA = math.log(MAX_SIZE_RATIO) / (2.0 * LOGNORMAL_TRUNCATION)  # ~0.384

__all__ = ["Uniform", "Lognormal", "Sieve", "MAX_SIZE_RATIO", "MAX_LOGNORMAL_SIGMA", "MAX_UNIFORM_SPREAD"]

MAX_UNIFORM_SPREAD = (MAX_SIZE_RATIO - 1.0) / (MAX_SIZE_RATIO + 1.0)  # (1 + s) / (1 - s) = 10


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


class Uniform:
    """Radii uniform in radius_mean (1 +- spread), 0 <= spread <= 9/11 (size ratio <= 10)."""

    def __init__(self, radius_mean, spread):
        self.radius_mean = _positive("radius_mean", radius_mean)
        if not (0.0 <= spread <= MAX_UNIFORM_SPREAD):
            raise ValueError(f"radius_spread must lie in [0, {MAX_UNIFORM_SPREAD:.6g}] (size ratio "
                             f"(1 + s) / (1 - s) <= {MAX_SIZE_RATIO:g}); got {spread!r}")
        self.spread = float(spread)
        self.size_ratio = (1.0 + self.spread) / (1.0 - self.spread)

    def sample(self, n, rng):
        return self.radius_mean * (1.0 + self.spread * rng.uniform(-1.0, 1.0, n))

    def key(self):
        return {"distribution": "uniform", "radius_mean": self.radius_mean, "spread": self.spread}


class Lognormal:
    """ln r normal with median `median` (by number) and standard deviation `sigma`, truncated at
    +- 3 sigma; 0 < sigma <= ln(10) / 6 ~ 0.384 (size ratio exp(6 sigma) <= 10)."""

    def __init__(self, median, sigma):
        self.median = _positive("radius_median", median)
        if not (0.0 < sigma <= MAX_LOGNORMAL_SIGMA):
            raise ValueError(f"sigma must lie in (0, {MAX_LOGNORMAL_SIGMA:.4g}] (the lognormal truncated at "
                             f"+-{LOGNORMAL_TRUNCATION:g} sigma spans a size ratio exp({2 * LOGNORMAL_TRUNCATION:g} sigma) "
                             f"<= {MAX_SIZE_RATIO:g}); got {sigma!r}")
        self.sigma = float(sigma)
        self.size_ratio = math.exp(2.0 * LOGNORMAL_TRUNCATION * self.sigma)

    def sample(self, n, rng):
        lo = ndtr(-LOGNORMAL_TRUNCATION)
        z = ndtri(lo + rng.uniform(0.0, 1.0, n) * (1.0 - 2.0 * lo))
        return self.median * np.exp(self.sigma * z)

    def key(self):
        return {"distribution": "lognormal", "median": self.median, "sigma": self.sigma}


class Sieve:
    """A mass-based sieve curve: `passing[k]` % of the mass passes the sieve of diameter
    `diameters[k]` (m). Diameters strictly increasing, passing non-decreasing from 0 to 100."""

    def __init__(self, diameters, passing, source="sieve curve"):
        d = np.asarray(diameters, dtype=np.float64).ravel()
        p = np.asarray(passing, dtype=np.float64).ravel()
        self.source = str(source)
        if d.size != p.size or d.size < 2:
            raise ValueError(f"{self.source}: needs at least two rows of diameter, % passing; got {d.size}")
        if not (np.all(np.isfinite(d)) and np.all(d > 0) and np.all(np.diff(d) > 0)):
            raise ValueError(f"{self.source}: diameters must be finite, > 0 and strictly increasing")
        if not (np.all(np.isfinite(p)) and np.all(np.diff(p) >= 0) and p[0] == 0.0 and p[-1] == 100.0):
            raise ValueError(f"{self.source}: % passing must be non-decreasing from 0 (the smallest diameter "
                             f"present) to 100 (the largest); got {p[0]:g} .. {p[-1]:g}")
        # drop the flat ends: the grains lie between the last 0 % and the first 100 % sieve
        first = int(np.flatnonzero(p > 0.0)[0]) - 1
        last = int(np.flatnonzero(p >= 100.0)[0])
        self.diameters = d[first:last + 1]
        self.passing = p[first:last + 1]
        self.size_ratio = float(self.diameters[-1] / self.diameters[0])
        if self.size_ratio > MAX_SIZE_RATIO * (1.0 + 1e-12):
            raise ValueError(f"{self.source}: the grains span diameters {self.diameters[0]:.4g} .. "
                             f"{self.diameters[-1]:.4g} m, a size ratio {self.size_ratio:.3g} above the "
                             f"{MAX_SIZE_RATIO:g} supported")
        inv3 = self.diameters ** -3.0
        share = np.diff(self.passing) / np.log(self.diameters[1:] / self.diameters[:-1]) * (inv3[:-1] - inv3[1:]) / 3.0
        self._number_cdf = np.concatenate([[0.0], np.cumsum(share) / share.sum()])

    @classmethod
    def from_csv(cls, path):
        """Read rows "diameter (m), % passing" (one header line allowed)."""
        path = Path(path)
        data, _ = read_numeric_csv(path, "particles.sieve_csv", "diameter, % passing")
        if data.shape[1] != 2:
            raise ValueError(f"particles.sieve_csv {str(path)!r} must hold rows of 2 numbers (diameter in m, "
                             f"% passing); got {data.shape[1]} columns")
        return cls(data[:, 0], data[:, 1], source=f"particles.sieve_csv {str(path)!r}")

    def sample(self, n, rng):
        u = rng.uniform(0.0, 1.0, n)
        v = rng.uniform(0.0, 1.0, n)
        k = np.clip(np.searchsorted(self._number_cdf, u, side="right") - 1, 0, self.diameters.size - 2)
        lo = self.diameters[k] ** -3.0
        hi = self.diameters[k + 1] ** -3.0
        return 0.5 * (lo - v * (lo - hi)) ** (-1.0 / 3.0)

    def key(self):
        return {"distribution": "sieve", "diameters": self.diameters.tolist(), "passing": self.passing.tolist()}


def from_particles_config(part):
    """The distribution a validated scenario's [particles] section asks for (io.scenario)."""
    dist = part["distribution"]
    if dist == "lognormal":
        return Lognormal(part["radius_median"], part["sigma"])
    if dist == "sieve":
        return Sieve.from_csv(part["sieve_csv"])
    return Uniform(part["radius_mean"], part["radius_spread"])

"""Size distributions (particles.size_distribution) and their scenario keys ([particles]).

References: the closed-form CDFs of scipy.stats (uniform; lognormal conditioned on its +-3 sigma
truncation) through a Kolmogorov-Smirnov distance, and for the sieve curve the curve itself: a
sample drawn by number, weighed (mass ~ D^3), must give the % passing of every sieve and of the
log-midpoints between sieves (straight lines on the semi-log gradation plot).
"""

import math

import numpy as np
import pytest
from scipy import stats

from graindem.io.scenario import validate_scenario
from graindem.particles.size_distribution import (MAX_LOGNORMAL_SIGMA, MAX_UNIFORM_SPREAD, Lognormal, Sieve,
                                                  Uniform, from_particles_config)

N = 20000
# KS distance of a sample of N from its own distribution exceeds 1.95 / sqrt(N) with probability 0.001
KS_TOLERANCE = 1.95 / math.sqrt(N)


def test_uniform_matches_its_closed_form():
    r = Uniform(2e-4, 0.5).sample(N, np.random.default_rng(1))
    assert stats.kstest(r, stats.uniform(loc=1e-4, scale=2e-4).cdf).statistic < KS_TOLERANCE
    assert 1e-4 <= r.min() and r.max() <= 3e-4


def test_lognormal_matches_the_truncated_closed_form():
    median, sigma = 3e-4, 0.35
    r = Lognormal(median, sigma).sample(N, np.random.default_rng(2))
    ref = stats.lognorm(s=sigma, scale=median)
    lo, hi = median * math.exp(-3 * sigma), median * math.exp(3 * sigma)

    def cdf(x):
        return (ref.cdf(np.clip(x, lo, hi)) - ref.cdf(lo)) / (ref.cdf(hi) - ref.cdf(lo))
    assert stats.kstest(r, cdf).statistic < KS_TOLERANCE
    assert r.max() / r.min() <= 10.0
    assert abs(np.median(r) / median - 1.0) < 0.02


def test_sieve_sample_weighed_reproduces_the_mass_based_curve():
    d = np.array([0.1, 0.2, 0.3, 0.5, 0.8, 1.0]) * 1e-3
    p = np.array([0.0, 10.0, 35.0, 70.0, 90.0, 100.0])
    n = 200000
    r = Sieve(d, p).sample(n, np.random.default_rng(3))
    D = 2.0 * r
    mass = D ** 3
    assert D.min() >= d[0] * (1 - 1e-12) and D.max() <= d[-1] * (1 + 1e-12)

    def passing(x):
        return 100.0 * mass[D <= x].sum() / mass.sum()
    # at the sieves and at the log-midpoints (semi-log straight line between sieves)
    mid = np.sqrt(d[:-1] * d[1:])
    expected_mid = 0.5 * (p[:-1] + p[1:])
    # the weighed fraction of 2e5 grains scatters by < 0.3 percentage points here (the heaviest
    # 10 % of the mass are ~ 2000 grains); 1 point is > 3 standard deviations
    for x, want in list(zip(d, p)) + list(zip(mid, expected_mid)):
        assert abs(passing(x) - want) < 1.0, (x, passing(x), want)
    # by number most grains are small: the number median lies far below the mass median
    assert np.median(D) < 0.2e-3


def test_sieve_drops_flat_ends_and_checks_its_size_ratio():
    s = Sieve([0.05e-3, 0.1e-3, 0.5e-3, 1e-3, 2e-3], [0, 0, 40, 100, 100])
    assert s.size_ratio == pytest.approx(10.0)
    with pytest.raises(ValueError, match="size ratio 20"):
        Sieve([0.1e-3, 2e-3], [0, 100])
    with pytest.raises(ValueError, match="from 0"):
        Sieve([0.1e-3, 0.5e-3], [5, 100])


def test_size_ratio_limits():
    assert Uniform(1.0, MAX_UNIFORM_SPREAD).size_ratio == pytest.approx(10.0)
    assert Lognormal(1.0, MAX_LOGNORMAL_SIGMA).size_ratio == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"radius_spread must lie in \[0, 0.818182\]"):
        Uniform(1.0, 0.85)
    with pytest.raises(ValueError, match=r"sigma must lie in \(0, 0.3838\]"):
        Lognormal(1.0, 0.4)


def particles(**keys):
    return validate_scenario({"particles": keys})


def test_scenario_keys_select_the_distribution(tmp_path):
    assert isinstance(from_particles_config(particles()["particles"]), Uniform)
    cfg = particles(distribution="lognormal", radius_median=2e-4, sigma=0.3)["particles"]
    dist = from_particles_config(cfg)
    assert isinstance(dist, Lognormal) and dist.median == 2e-4 and dist.sigma == 0.3
    csv = tmp_path / "sieve.csv"
    csv.write_text("diameter_m,passing_percent\n1e-4,0\n3e-4,50\n6e-4,100\n")
    cfg = particles(distribution="sieve", sieve_csv=str(csv))["particles"]
    assert isinstance(from_particles_config(cfg), Sieve)


@pytest.mark.parametrize("keys, message", [
    ({"radius_spread": 0.9}, r"particles.radius_spread must be a number >= 0 and <= 0.818182"),
    ({"distribution": "lognormal", "sigma": 0.3}, r"particles.radius_median is required"),
    ({"distribution": "lognormal", "radius_median": 1e-4, "sigma": 0.5}, r"particles.sigma must be .*<= 0.383"),
    ({"distribution": "lognormal", "radius_median": 1e-4, "sigma": 0.2, "radius_spread": 0.5},
     r"particles.radius_spread applies to particles.distribution = 'uniform'"),
    ({"sigma": 0.2}, r"particles.sigma applies to particles.distribution = 'lognormal'"),
    ({"distribution": "sieve"}, r"particles.sieve_csv is required"),
    ({"distribution": "sieve", "sieve_csv": "/nonexistent/sieve.csv"}, r"particles.sieve_csv .* does not exist"),
    ({"distribution": "gamma"}, r"particles.distribution must be one of 'uniform', 'lognormal', 'sieve'"),
])
def test_scenario_errors_name_the_key_and_the_range(keys, message):
    with pytest.raises(ValueError, match=message):
        particles(**keys)


def test_scenario_sieve_with_too_wide_a_curve_is_refused(tmp_path):
    csv = tmp_path / "wide.csv"
    csv.write_text("1e-4,0\n5e-4,30\n1.5e-3,100\n")
    with pytest.raises(ValueError, match=r"particles.sieve_csv .*size ratio 15"):
        particles(distribution="sieve", sieve_csv=str(csv))

"""Closed-form Cattaneo–Mindlin–Deresiewicz results: the references the tangential laws are tested,
plotted and benchmarked against. Written with total overlaps (contact-mechanics.md, section 2):
at constant overlap delta, with N = N(delta), kappa = k_n/k_t and the gross-sliding shift
s_g = mu kappa delta.

These are plain numpy functions, deliberately independent of the law kernels.
"""

import numpy as np


def monotonic(s, N, delta, mu, kappa):
    """Cattaneo–Mindlin loading from zero at constant N: T(s) (s may be negative; odd in s)."""
    s = np.asarray(s, dtype=float)
    x = np.clip(np.abs(s) / (mu * kappa * delta), 0.0, 1.0)
    return np.sign(s) * mu * N * (1.0 - (1.0 - x) ** 1.5)


def monotonic_shift(T, N, delta, mu, kappa):
    """Inverse of `monotonic`: the shift at which the force T (|T| < mu N) is reached."""
    T = np.asarray(T, dtype=float)
    return np.sign(T) * mu * kappa * delta * (1.0 - (1.0 - np.abs(T) / (mu * N)) ** (2.0 / 3.0))


def from_turning_point(s, s_turn, T_turn, direction, N, delta, mu, kappa):
    """Mindlin–Deresiewicz unloading (direction = -1) or reloading (+1) at constant N from the
    turning point (s_turn, T_turn): T = T* + d 2 mu N [1 - (1 - d (s - s*)/(2 mu kappa delta))^(3/2)],
    saturating at d mu N once the whole contact slips again."""
    d = float(np.sign(direction))
    s = np.asarray(s, dtype=float)
    x = np.clip(d * (s - s_turn) / (2.0 * mu * kappa * delta), 0.0, 1.0)
    T = T_turn + d * 2.0 * mu * N * (1.0 - (1.0 - x) ** 1.5)
    return np.clip(T, -mu * N, mu * N)


def loop(s_amp, N, delta, mu, kappa, n=200):
    """A full Mindlin–Deresiewicz loop at constant N: loading 0 -> s_amp, unloading to -s_amp,
    reloading to s_amp. Returns (s, T) arrays along the path."""
    s1 = np.linspace(0.0, s_amp, n)
    T1 = monotonic(s1, N, delta, mu, kappa)
    s2 = np.linspace(s_amp, -s_amp, 2 * n)
    T2 = from_turning_point(s2, s_amp, T1[-1], -1, N, delta, mu, kappa)
    s3 = np.linspace(-s_amp, s_amp, 2 * n)
    T3 = from_turning_point(s3, -s_amp, T2[-1], +1, N, delta, mu, kappa)
    return np.concatenate([s1, s2, s3]), np.concatenate([T1, T2, T3])


def loop_dissipation(T_amp, N, delta, mu, kappa):
    """Energy dissipated in one closed Mindlin–Deresiewicz loop between +T_amp and -T_amp at
    constant N (Mindlin & Deresiewicz 1953; Johnson 1985, eq. 7.60):
    W = 9 mu^2 N^2/(10 a G*) [1 - (1 - r)^(5/3) - 5r/6 (1 + (1 - r)^(2/3))], r = T_amp/(mu N).
    With Johnson's 8 G* a = k_t0 = 3N/(2 kappa delta) the prefactor is 24 mu^2 N kappa delta/5."""
    r = T_amp / (mu * N)
    return 24.0 * mu * mu * N * kappa * delta / 5.0 * (
        1.0 - (1.0 - r) ** (5.0 / 3.0) - 5.0 * r / 6.0 * (1.0 + (1.0 - r) ** (2.0 / 3.0)))


def proportional_from_zero(s, delta, N, mu, kappa):
    """Straight line from (0, 0) to (delta, s): T = N s / (kappa delta) if |s| <= mu kappa delta, else mu N sign(s)."""
    s = np.asarray(s, dtype=float)
    return np.where(np.abs(s) <= mu * kappa * delta, N * s / (kappa * delta), np.sign(s) * mu * N)

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


def md_proportional_cycle(N, N0, N1, c, mu, kappa, c_N, unloading=False):
    """Mindlin & Deresiewicz (1953) section 17 (Kuhn 2011, section 4.1), force controlled, one
    tangential direction: preload N0 with T = 0, then T and N increased together with dT/dN = c > mu
    up to N1 (T1 = c (N1 - N0) <= mu N1), then both decreased in the same proportion back to N0,
    so that T = c (N - N0) on both branches. Returns (delta, s, T) at the normal force(s) N
    (N0 <= N <= N1) of the loading branch, or of the unloading branch if `unloading`.

    Derivation (superposition of Cattaneo–Mindlin tractions; p_H(r; d) is the Hertz pressure at
    overlap d, and a tangential traction q p_H(r; d) has resultant q N(d) and displaces its whole
    disc r < a(d) rigidly by kappa q d, the Cattaneo–Mindlin result written with overlaps):
    - Preload: no traction.
    - Loading: because c > mu the tangential load outgrows friction at the edge, so an annulus
      b < r < a slips forward at the limit q = mu p; inside, the region r < b sticks. The traction
          q(r) = mu [p_H(r; delta) - p_H(r; delta_b)]
      equals mu p(r) in the annulus (p_H(r; delta_b) = 0 there), is below mu p(r) inside, and gives
      the stick disc the rigid displacement s = mu kappa (delta - delta_b). Its resultant
      T = mu (N - N_b) = c (N - N0) fixes N_b = N - (c/mu)(N - N0), which decreases as N grows
      (c > mu): the stick disc shrinks monotonically, so no point reverses its slip and the
      assumed state is the actual one while N_b >= 0 (T <= mu N).
    - Unloading from (N1, T1) with dT = c dN < 0: removing tangential load faster than friction
      allows makes the edge slip backwards, q = -mu p in an annulus a* < r < a. Superposing on the
      loading traction at N1 (the part r > a(delta) has left the contact) a reversed correction
      -2 mu [p_H(r; delta) - p_H(r; delta*)] gives
          q(r) = mu p_H(r; delta*) - mu p_H(r; delta_b1) - mu [p_H(r; delta) - p_H(r; delta*)],
      which is -mu p(r) for r > a* and inside the friction limit for r < a*. The resultant
      T = mu (N* - N_b1) - mu (N - N*) = c (N - N0) gives
          N* = [(c + mu) N - c N0 + mu N_b1] / (2 mu),
      with N* = N at N1 and N_b1 <= N* <= N down to N0 (both checked from c > mu, N_b1 <= N0);
      N* grows with N, so the backward slip annulus only widens during unloading. The stick disc
      r < a* displaces by kappa [mu (delta* - delta_b1) - mu (delta - delta*)].
    All overlaps follow from Hertz: delta = (N / c_N)^(2/3).
    """
    N = np.asarray(N, dtype=float)
    if not (c > mu > 0.0):
        raise ValueError(f"c must exceed mu > 0 (section 17 needs slip at the edge); got c={c!r}, mu={mu!r}")
    if not (0.0 <= N0 < N1):
        raise ValueError(f"need 0 <= N0 < N1; got N0={N0!r}, N1={N1!r}")
    if c * (N1 - N0) > mu * N1:
        raise ValueError(f"N1 too large: T1 = c (N1 - N0) = {c * (N1 - N0)!r} exceeds mu N1 = {mu * N1!r}")
    if np.any(N < N0) or np.any(N > N1):
        raise ValueError(f"N must lie in [N0, N1] = [{N0!r}, {N1!r}]")

    def overlap(force):
        return (force / c_N) ** (2.0 / 3.0)

    delta = overlap(N)
    T = c * (N - N0)
    if not unloading:
        N_b = N - c / mu * (N - N0)
        return delta, mu * kappa * (delta - overlap(N_b)), T
    N_b1 = N1 - c / mu * (N1 - N0)
    N_star = ((c + mu) * N - c * N0 + mu * N_b1) / (2.0 * mu)
    s = kappa * mu * (2.0 * overlap(N_star) - overlap(N_b1) - delta)
    return delta, s, T

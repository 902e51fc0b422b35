"""Oblique impact of elastic spheres (Maw, Barber & Fawcett 1976, Wear 38: 101-114), solved without
graindem's tangential laws: the reference of benchmarks/impact_suite.py.

Problem. Two spheres, or a sphere and a plane, meet with normal approach speed v_n1 and relative
tangential velocity w1 of their contact points. As in Maw et al., the tangential tractions do not
change the pressure (Cattaneo-Mindlin), so the normal motion is Hertz's impact and the tangential
motion of the contact points is driven by the Cattaneo-Mindlin-Deresiewicz (CMD) force of the
varying overlap and shift.

Tangential force: the method of dimensionality reduction (MDR; Popov & Hess, "Method of
Dimensionality Reduction in Contact Mechanics and Friction", Springer 2015, tangential contact).
The contact is a row of independent springs on a line at positions x, with normal displacement
delta - x^2/R* (the MDR image of the sphere's profile) and stiffnesses E* dx (normal) and G dx
(tangential, 1/G = (2 - nu1)/(4 G1) + (2 - nu2)/(4 G2)). A spring in contact sticks (its
tangential displacement follows the shift) until its force reaches mu times its normal force, then
slips at that limit; a spring out of contact carries nothing. Summed, the springs give Hertz's N
and the CMD tangential force for any history of overlap and shift along one tangential direction
(the case of Maw et al.), with no memory rules: the springs are the memory. This is a different
representation from graindem's laws (jaeger's equivalent load history, mindlin's incremental
stiffness), so agreement is a test, not a tautology.

Normalisation (Maw et al.; Thornton, Cummins & Cleary 2011). kappa = k_n/k_t (Mindlin's initial
stiffness ratio, (2 - nu)/(2(1 - nu)) for one material), k2 = I/(m R^2) (2/5 for a solid sphere),
chi = (1 + 1/k2)/(2 kappa). Angles: psi = w/(mu kappa v_n), with w the tangential velocity of the
contact points (sphere's minus plane's, or first's minus second's) and v_n the normal speed at that
moment (approach before, separation after). The dimensionless problem depends on psi1 and chi only:
    tau = t v_n1/delta_max, x = delta/delta_max (x'' = -5/4 x^(3/2), x(0) = 0, x'(0) = 1),
    sigma = s/(mu kappa delta_max), d sigma/d tau = psi, d psi/d tau = -5/2 chi f,
    f = T/(mu N_max) = 3/2 integral_0^1 q(xi) d xi, |q(xi)| <= max(x - xi^2, 0),
with xi = |x_spring|/a_max and q the spring's tangential displacement over mu kappa delta_max.
Gross sliding throughout (large psi1) gives psi2 = psi1 - 4 chi.

The normal motion is in closed form (inverse incomplete beta function), the tangential one is
integrated by velocity Verlet on a uniform grid of n_steps over the contact and n_springs springs
at the midpoints of [0, 1]; `oblique_impact` returns psi2 and `converged_psi2` its value at two
resolutions with the difference as the error estimate.
"""

import math

import numpy as np
from scipy.special import beta, betainc, betaincinv

from .._jit import njit

# dimensionless Hertz impact: tau_c = 2 * integral_0^1 dx / sqrt(1 - x^(5/2)) = 4/5 B(2/5, 1/2)
HALF_DURATION = 0.4 * beta(0.4, 0.5)
DURATION = 2.0 * HALF_DURATION
# integral over the impact of (N / N_max) d tau = 8/5 (momentum 2 m v_n1 over N_max delta_max/v_n1)
SOLID_SPHERE_K2 = 0.4


def effective_moduli(E1, nu1, E2=math.inf, nu2=0.0):
    """(E*, G*, kappa) of two elastic bodies (E2 = inf: a rigid plane).
    1/E* = (1 - nu1^2)/E1 + (1 - nu2^2)/E2, 1/G* = (2 - nu1)/G1 + (2 - nu2)/G2 (Johnson's G*,
    Mindlin's k_t = 8 G* a) and kappa = k_n/k_t = 2 E* a/(8 G* a)."""
    for name, value in (("E1", E1), ("E2", E2)):
        if not value > 0.0:
            raise ValueError(f"{name} must be > 0 (inf for a rigid body), got {value!r}")
    for name, value in (("nu1", nu1), ("nu2", nu2)):
        if not (-1.0 < value < 0.5):
            raise ValueError(f"{name} must lie in (-1, 0.5), got {value!r}")
    G1 = E1 / (2.0 * (1.0 + nu1))
    G2 = E2 / (2.0 * (1.0 + nu2))
    estar = 1.0 / ((1.0 - nu1 * nu1) / E1 + (0.0 if math.isinf(E2) else (1.0 - nu2 * nu2) / E2))
    gstar = 1.0 / ((2.0 - nu1) / G1 + (0.0 if math.isinf(E2) else (2.0 - nu2) / G2))
    return estar, gstar, 2.0 * estar / (8.0 * gstar)


def chi_of(kappa, k2=SOLID_SPHERE_K2):
    """Maw's chi = (1 + 1/k2)/(2 kappa) of a sphere (k2 = I/(m R^2)) on a plane or of two identical spheres."""
    return (1.0 + 1.0 / k2) / (2.0 * kappa)


def hertz_impact(m_eff, estar, rstar, v):
    """Closed forms of the elastic Hertz impact at approach speed v (reduced mass m_eff, E*, R*):
    dict of peak_overlap, peak_force, duration (Johnson 1985, section 11.4)."""
    cn = 4.0 / 3.0 * estar * math.sqrt(rstar)
    dmax = (15.0 * m_eff * v * v / (16.0 * estar * math.sqrt(rstar))) ** 0.4
    return {"peak_overlap": dmax, "peak_force": cn * dmax ** 1.5, "duration": DURATION * dmax / v}


def normal_overlap(tau):
    """x(tau) = delta/delta_max of the dimensionless Hertz impact, 0 <= tau <= DURATION, from
    tau(x) = 2/5 B(x^(5/2); 2/5, 1/2) (incomplete beta) and the symmetry of the impact."""
    tau = np.asarray(tau, dtype=float)
    t = np.clip(np.minimum(tau, DURATION - tau), 0.0, HALF_DURATION)
    return betaincinv(0.4, 0.5, t / HALF_DURATION) ** 0.4


def normal_time(x):
    """tau at which the loading half reaches x (inverse of normal_overlap on [0, HALF_DURATION])."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    return HALF_DURATION * betainc(0.4, 0.5, x ** 2.5)


@njit
def spring_update(q, xi, x_old, x_new, dsigma):
    """Move every spring along the straight movement (x_old, sigma) -> (x_new, sigma + dsigma):
    stick, or slip at the limit |q| <= x_new - xi^2 (0 out of contact). A spring that comes into
    contact during the movement, at x = xi^2, takes only the part of dsigma after that point.
    Returns f = T/(mu N_max) = 3/2 mean(q)."""
    total = 0.0
    for i in range(q.shape[0]):
        x_touch = xi[i] * xi[i]
        lim = x_new - x_touch
        if lim <= 0.0:
            q[i] = 0.0
            continue
        if x_old < x_touch:
            v = dsigma * lim / (x_new - x_old)
        else:
            v = q[i] + dsigma
        if v > lim:
            v = lim
        elif v < -lim:
            v = -lim
        q[i] = v
        total += v
    return 1.5 * total / q.shape[0]


@njit
def _verlet(psi1, chi, x, h, xi, q):
    """Velocity Verlet of d sigma/d tau = psi, d psi/d tau = -5/2 chi f over the grid x[k] = x(k h)."""
    psi = psi1
    f = 0.0
    impulse = 0.0
    for k in range(x.shape[0] - 1):
        a = -2.5 * chi * f
        f_new = spring_update(q, xi, x[k], x[k + 1], h * psi + 0.5 * h * h * a)
        psi += 0.5 * h * (a - 2.5 * chi * f_new)
        impulse += 0.5 * h * (f + f_new)
        f = f_new
    return psi, impulse


def spring_positions(n_springs):
    """Midpoints of n_springs equal cells of [0, 1] (xi = |x|/a_max; the row is symmetric)."""
    return (np.arange(n_springs) + 0.5) / n_springs


def _check_resolution(n_steps, n_springs):
    if int(n_steps) != n_steps or n_steps < 2:
        raise ValueError(f"n_steps must be an integer >= 2, got {n_steps!r}")
    if int(n_springs) != n_springs or n_springs < 2:
        raise ValueError(f"n_springs must be an integer >= 2, got {n_springs!r}")


def oblique_impact(psi1, chi, n_steps=4000, n_springs=2000):
    """Normalised rebound angle psi2 for incident psi1 and Maw's chi, and the tangential impulse
    over mu N_max delta_max/v_n1 (in units of 8/5: 1 means mu times the normal impulse)."""
    psi1 = float(psi1)
    chi = float(chi)
    if not math.isfinite(psi1):
        raise ValueError(f"psi1 must be finite, got {psi1!r}")
    if not (chi > 0.0 and math.isfinite(chi)):
        raise ValueError(f"chi must be a finite number > 0, got {chi!r}")
    _check_resolution(n_steps, n_springs)
    h = DURATION / n_steps
    x = normal_overlap(np.arange(n_steps + 1) * h)
    x[-1] = 0.0
    q = np.zeros(int(n_springs))
    psi2, impulse = _verlet(psi1, chi, x, h, spring_positions(int(n_springs)), q)
    return {"psi2": float(psi2), "impulse_over_mu_normal": float(impulse) / 1.6}


def converged_psi2(psi1, chi, n_steps=4000, n_springs=2000):
    """psi2 at (n_steps, n_springs) and at half of both; returns (psi2, |difference|), the
    difference an upper estimate of the error (the error is second order in n_steps and nearly
    independent of n_springs: with 4000 steps and 2000 springs it is ~1e-7)."""
    fine = oblique_impact(psi1, chi, n_steps, n_springs)["psi2"]
    coarse = oblique_impact(psi1, chi, max(2, n_steps // 2), max(2, n_springs // 2))["psi2"]
    return fine, abs(fine - coarse)


def gross_sliding_psi2(psi1, chi):
    """Rigid-body limit: the contact slides throughout, T = mu N, so psi2 = psi1 - 4 chi."""
    return psi1 - 4.0 * chi


def force_along_path(x_path, sigma_path, n_springs=2000):
    """f = T/(mu N(x=1)) after each point of a path of (normalised overlap, normalised shift) that
    starts at (0, 0), each point reached from the previous by a straight movement (quasi-static;
    for checks against the Cattaneo-Mindlin-Deresiewicz closed forms)."""
    x_path = np.asarray(x_path, dtype=float)
    sigma_path = np.asarray(sigma_path, dtype=float)
    if x_path.shape != sigma_path.shape or x_path.ndim != 1:
        raise ValueError("x_path and sigma_path must be 1-D arrays of the same length")
    _check_resolution(2, n_springs)
    xi = spring_positions(int(n_springs))
    q = np.zeros(int(n_springs))
    out = np.empty_like(x_path)
    x_prev = 0.0
    s_prev = 0.0
    for k in range(x_path.size):
        out[k] = spring_update(q, xi, x_prev, x_path[k], sigma_path[k] - s_prev)
        x_prev = x_path[k]
        s_prev = sigma_path[k]
    return out


def sphere_rebound(psi1, chi, v_n, mu, kappa, k2=SOLID_SPHERE_K2, **resolution):
    """Dimensional rebound of a sphere (mass m, radius R, I = k2 m R^2) from a rigid or elastic plane:
    the change of the contact point's tangential velocity is dw = mu kappa v_n (psi2 - psi1), shared
    between translation (dv_t = dw/(1 + 1/k2)) and spin (R d omega = dw/(1 + k2)), where w = v_t + R omega.
    Returns dict psi2, dv_t, R_domega (R times the spin change)."""
    r = oblique_impact(psi1, chi, **resolution)
    dw = mu * kappa * v_n * (r["psi2"] - psi1)
    return {"psi2": r["psi2"], "dv_t": dw / (1.0 + 1.0 / k2), "R_domega": dw / (1.0 + k2)}

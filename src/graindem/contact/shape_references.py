"""Independent references for the curvature contact of shaped grains.

- `ellipsoid_signed_distance`: the exact Euclidean signed distance to an ellipsoid (closest point
  from the root of the Lagrange condition, by bisection), so that a level-set ellipsoid can be built
  without the chord error of a triangulated surface (~0.02 h^2/R, of the order of a DEM overlap).
- `ellipsoid_grain`: a LevelSetGrain sampled from it, with the ellipsoid's centre in the body frame.
- `hertz_elliptic`: Hertz's elliptical contact (Johnson, Contact Mechanics, 1985, §4.2, eqs. 4.39):
  for the gap h = A x^2 + B y^2, the eccentricity e of the contact ellipse solves
      B/A = [E(e)/(1 - e^2) - K(e)] / [K(e) - E(e)]
  and at approach delta: a^2 = delta (K - E) / (A e^2 K), b = a sqrt(1 - e^2), p0 = delta E*/(b K),
  P = 2/3 pi a b p0 (K, E complete elliptic integrals of modulus e; scipy takes m = e^2).
"""

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ellipe, ellipk

__all__ = ["ellipsoid_signed_distance", "ellipsoid_grain", "hertz_elliptic", "elliptic_equivalent_radius"]


def ellipsoid_signed_distance(points, axes):
    """Signed distance (negative inside) from points (m, 3) to the ellipsoid with semi-axes `axes`
    centred at the origin along x, y, z.

    The closest point y_i = a_i^2 p_i / (a_i^2 + t) where t solves sum (a_i p_i / (a_i^2 + t))^2 = 1,
    the unique root in (-min a_i^2, 0) inside and in (0, |a p|) outside (the left side decreases in t).
    Points exactly on the plane of the smallest axis deep inside (the medial disk) are not handled;
    callers offset their grids so that no sample has a zero coordinate.
    """
    p = np.abs(np.atleast_2d(np.asarray(points, dtype=np.float64)))
    a2 = np.asarray(axes, dtype=np.float64) ** 2
    inside = ((p**2 / a2).sum(axis=1)) < 1.0
    lo = np.where(inside, -a2.min(), 0.0)
    hi = np.where(inside, 0.0, np.sqrt((a2 * p**2).sum(axis=1)) + 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            f = ((np.sqrt(a2) * p / (a2 + mid[:, None])) ** 2).sum(axis=1) - 1.0
            pos = f > 0.0
            lo = np.where(pos, mid, lo)
            hi = np.where(pos, hi, mid)
        t = 0.5 * (lo + hi)
        y = a2 * p / (a2 + t[:, None])
    d = np.linalg.norm(p - y, axis=1)
    return np.where(inside, -d, d)


def ellipsoid_grain(a, b, c, spacing, n_nodes=None, margin_cells=5):
    """(grain, centre): a LevelSetGrain of the ellipsoid (a, b, c) sampled from the exact signed
    distance on a grid offset by a fraction of a cell, and the ellipsoid's centre in the grain's
    body frame (the grain puts its body origin at the phi centroid, a whisker away)."""
    from graindem.particles import LevelSetGrain

    axes = np.array([a, b, c], dtype=np.float64)
    h = float(spacing)
    n_half = np.ceil(axes / h).astype(int) + margin_cells
    origin = -n_half * h + 0.3137 * h  # no sample on a symmetry plane (see ellipsoid_signed_distance)
    shape = 2 * n_half + 1
    grids = np.meshgrid(*[origin[d] + h * np.arange(shape[d]) for d in range(3)], indexing="ij")
    pts = np.stack([g.ravel() for g in grids], axis=1)
    phi = ellipsoid_signed_distance(pts, axes).reshape(shape)
    grain = LevelSetGrain(phi, origin, h, n_nodes=n_nodes, name="ellipsoid")
    return grain, grain.grid_origin - origin


def _eccentricity_squared(ratio):
    """e^2 of the Hertz contact ellipse for B/A = ratio >= 1 (0 for a circle)."""
    if ratio < 1.0 + 1e-9:
        return 0.0

    def f(e2):
        K = ellipk(e2)
        E = ellipe(e2)
        return (E / (1.0 - e2) - K) / (K - E) - ratio

    # f -> 1 as e -> 0 and -> inf as e -> 1; below e^2 ~ 1e-6 K - E loses its digits
    lo = 1e-6
    if f(lo) >= 0.0:
        return lo * (ratio - 1.0) / max(f(lo) + ratio - 1.0, 1e-300)  # linear in e^2 near the circle
    return brentq(f, lo, 1.0 - 1e-15, xtol=1e-16, rtol=1e-15, maxiter=200)


def hertz_elliptic(A, B, E_star, delta):
    """Hertz's elliptical contact for the gap A x^2 + B y^2 (A, B > 0) at approach delta >= 0:
    dict with P (normal force), a >= b (semi-axes), e (eccentricity), p0 (peak pressure)."""
    A, B = (float(A), float(B)) if A <= B else (float(B), float(A))
    if not (A > 0.0 and math.isfinite(B)):
        raise ValueError(f"A and B must be finite and > 0, got {A!r}, {B!r}")
    if delta <= 0.0:
        return {"P": 0.0, "a": 0.0, "b": 0.0, "e": 0.0, "p0": 0.0}
    e2 = _eccentricity_squared(B / A)
    if e2 == 0.0:
        R = 1.0 / (A + B)
        a = math.sqrt(R * delta)
        P = 4.0 / 3.0 * E_star * math.sqrt(R) * delta**1.5
        return {"P": P, "a": a, "b": a, "e": 0.0, "p0": 3.0 * P / (2.0 * math.pi * a * a)}
    K = ellipk(e2)
    E = ellipe(e2)
    a = math.sqrt(delta * (K - E) / (A * e2 * K))
    b = a * math.sqrt(1.0 - e2)
    p0 = delta * E_star / (b * K)
    return {"P": 2.0 / 3.0 * math.pi * a * b * p0, "a": a, "b": b, "e": math.sqrt(e2), "p0": p0}


def elliptic_equivalent_radius(A, B):
    """The radius R of the sphere-on-plane contact with the same force law as the elliptical one:
    P = 4/3 E* sqrt(R) delta^(3/2) (independent of delta and E*)."""
    P = hertz_elliptic(A, B, 1.0, 1.0)["P"]
    return (P / (4.0 / 3.0)) ** 2

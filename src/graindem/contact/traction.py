"""Contact tractions from the Jäger equivalent load history (Kuhn 2011, section 4.1, his eq. 21).

Every force in the equivalent history stands for a traction: replacing each normal force N(delta)
by the Hertz pressure p_H(r; delta) turns the history's tangential force into its shear traction.
Segment j (slope p_j, from delta_{j-1} to delta_j) contributes p_j [p_H(r; delta_j) - p_H(r; delta_{j-1})],
so the traction of the current state is

    q(r) = sum_j p_j [p_H(r; delta_j) - p_H(r; delta_{j-1})]          (delta_0 = 0, p_H(r; 0) = 0)

with p_H(r; delta) = k sqrt(max(a(delta)^2 - r^2, 0)), a(delta)^2 = R* delta, k = 2 E* / (pi R*)
(the Hertz pressure p0 sqrt(1 - r^2/a^2) with p0 = 3N/(2 pi a^2) = 2 E* a/(pi R*)). Its resultant
is sum_j p_j (N_j - N_{j-1}) = T because the integral of p_H over the disc is N(delta). The normal
pressure is p(r) = p_H(r; delta_k).

Stick and slip zones. Inside the annulus a(delta_{j-1}) < r < a(delta_j) only segments i >= j carry
traction, and q(r) = sum_{i >= j} p_i w_i(r) with weights w_j = p_H(r; delta_j),
w_i = p_H(r; delta_i) - p_H(r; delta_{i-1}) >= 0 (i > j) summing to p(r): q/p is a convex combination
of slopes with |p_i| <= mu. Hence |q| <= mu p everywhere, with equality exactly where every slope
with positive weight is the same slip slope (|p| = mu). The algorithm merges equal consecutive
slip segments, so in practice the slip zone is the outermost annulus when the top segment is a
slip segment, and the whole contact sticks otherwise; `slip_annuli` applies the general rule.

All functions here are plain numpy over the history arrays and do not touch any contact state.
"""

from dataclasses import dataclass

import numpy as np

from . import state as S


def _check_history(delta, p):
    delta = np.asarray(delta, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64).reshape(-1, 2)
    if delta.ndim != 1 or p.shape[0] != delta.shape[0]:
        raise ValueError(f"delta (k,) and p (k, 2) must describe the same k history points; got {delta.shape}, {p.shape}")
    if delta.size and (not np.all(np.isfinite(delta)) or delta[0] <= 0.0 or np.any(np.diff(delta) <= 0.0)):
        raise ValueError("delta must be finite, > 0 and strictly increasing (history overlaps bottom-up)")
    if not np.all(np.isfinite(p)):
        raise ValueError("p (history slopes) must be finite")
    return delta, p


def _check_radii(r, a):
    r = np.asarray(r, dtype=np.float64)
    if not np.all(np.isfinite(r)) or np.any(r < 0.0) or np.any(r > a * (1.0 + 1e-12)):
        raise ValueError(f"r must lie in [0, a] with a = {a!r} the current contact radius")
    return r


def pressure_coefficient(prm):
    """k in p_H(r; delta) = k sqrt(a^2 - r^2): 2 E*/(pi R*), the same for every overlap."""
    return 2.0 * prm[S.P_ESTAR] / (np.pi * prm[S.P_RSTAR])


def hertz_pressure(prm, r, delta):
    """Hertz normal pressure p_H(r; delta) at radii r (0 outside the contact disc)."""
    r = np.asarray(r, dtype=np.float64)
    a2 = prm[S.P_RSTAR] * max(float(delta), 0.0)
    return pressure_coefficient(prm) * np.sqrt(np.maximum(a2 - r * r, 0.0))


def shear_traction(prm, r, delta, p):
    """Shear traction q(r) (shape (m, 2), Mindlin's sign: its integral over the disc is T) of the
    equivalent history with point overlaps `delta` (k,) bottom-up and segment slopes `p` (k, 2)."""
    delta, p = _check_history(delta, p)
    r = np.asarray(r, dtype=np.float64)
    q = np.zeros(r.shape + (2,))
    lower = np.zeros(r.shape)
    for j in range(delta.size):
        upper = hertz_pressure(prm, r, delta[j])
        q += (upper - lower)[..., None] * p[j]
        lower = upper
    return q


def slip_annuli(prm, delta, p, slip, mu, tol=1e-12):
    """Annuli (r_in, r_out) of the history at the friction limit |q| = mu p, outermost last.

    Annulus j (radii a(delta_{j-1})..a(delta_j)) is at the limit iff every segment i >= j is a slip
    segment with the same slope (within tol mu); see the module docstring for why."""
    delta, p = _check_history(delta, p)
    slip = np.asarray(slip, dtype=bool)
    k = delta.size
    zones = []
    if k == 0 or mu <= 0.0:
        return zones
    rstar = prm[S.P_RSTAR]
    j = k - 1
    while j >= 0 and slip[j] and np.linalg.norm(p[j] - p[k - 1]) <= tol * mu:
        j -= 1
    first = j + 1
    if first < k:
        r_in = np.sqrt(rstar * delta[first - 1]) if first > 0 else 0.0
        zones.append((float(r_in), float(np.sqrt(rstar * delta[k - 1]))))
    return zones


@dataclass
class TractionState:
    """Tractions of one contact at radii r: shear q (m, 2), normal pressure p (m,), `slip` (m,)
    True where r lies in a slip annulus, the list of slip annuli (r_in, r_out) and the contact
    radius a."""
    r: np.ndarray
    q: np.ndarray
    p: np.ndarray
    slip: np.ndarray
    slip_zones: list
    a: float


def tractions(prm, r, delta, p, slip):
    """Shear traction, normal pressure and stick/slip zones of an equivalent history (plain
    arrays, as returned by `SingleContact.history_points`). r must lie in [0, a(delta_k)]."""
    delta, p = _check_history(delta, p)
    a = float(np.sqrt(prm[S.P_RSTAR] * delta[-1])) if delta.size else 0.0
    r = _check_radii(r, a)
    zones = slip_annuli(prm, delta, p, slip, prm[S.P_MU])
    in_slip = np.zeros(r.shape, dtype=bool)
    for r_in, r_out in zones:
        in_slip |= (r >= r_in) & (r <= r_out)
    pressure = hertz_pressure(prm, r, delta[-1]) if delta.size else np.zeros(r.shape)
    return TractionState(r=r, q=shear_traction(prm, r, delta, p), p=pressure, slip=in_slip,
                         slip_zones=zones, a=a)

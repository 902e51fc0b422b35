"""Viscous normal damping of a Hertz contact that gives a requested coefficient of restitution.

The damping force is F_d = -alpha sqrt(m* C) delta^(1/4) v_n (C the Hertz coefficient, m* the
reduced mass, v_n the separating normal velocity). With delta^(1/4) the restitution does not depend
on the impact velocity (Tsuji et al. 1992): scaling delta and time turns the collision into

    x'' = -x^(3/2) - alpha x^(1/4) x',  x(0) = 0, x'(0) = 1,

whose exit velocity -x'(t_end) is the restitution e(alpha). alpha(e) is found by solving that ODE
accurately (scipy) and inverting with a root finder, once per requested e.
"""

import functools
import math

from scipy.integrate import solve_ivp
from scipy.optimize import brentq


def restitution_of(alpha):
    """e(alpha) of the dimensionless damped Hertz collision."""
    def rhs(t, y):
        x = max(y[0], 0.0)
        return [y[1], -x ** 1.5 - alpha * x ** 0.25 * y[1]]

    def leave(t, y):
        return y[0]
    leave.terminal = True
    leave.direction = -1
    sol = solve_ivp(rhs, (0.0, 100.0), [0.0, 1.0], events=leave, rtol=1e-11, atol=1e-13,
                    first_step=1e-6)
    if not sol.t_events[0].size:
        return 0.0  # overdamped: the spheres never leave (they stick)
    return float(-sol.y_events[0][0][1])


@functools.lru_cache(maxsize=64)
def damping_coefficient(restitution):
    """alpha for a requested restitution e in (0, 1]; e = 1 gives 0 (no damping)."""
    e = float(restitution)
    if not math.isfinite(e) or not (0.0 < e <= 1.0):
        raise ValueError(f"restitution must lie in (0, 1], got {restitution!r}")
    if e == 1.0:
        return 0.0
    hi = 1.0
    while restitution_of(hi) > e:
        hi *= 2.0
        if hi > 1e3:
            raise ValueError(f"restitution {e} is too small to reach with viscous damping")
    return float(brentq(lambda a: restitution_of(a) - e, 0.0, hi, xtol=1e-12, rtol=1e-10))


"""Tangential law 'linear': a Cundall–Strack tangential spring with a Coulomb cap.

The spring stores the elastic tangential displacement u (a 2-vector in the contact frame):

    u <- u + ds,   T = k u,   and if |T| > mu N:  u <- u mu N / (k |u|)  (gross sliding, |T| = mu N)

with k = P_KTLIN when it is > 0 (a constant stiffness, the classic Cundall & Strack 1979 spring), or
else Mindlin's no-slip k_t(delta) = P_KTC a(delta) evaluated at the *current* overlap, the
convention of LAMMPS `gran/hertz/history`, where the stored shear history is a displacement and
the force follows the current stiffness (so a normal unloading at fixed u lowers T in proportion
to a). Nothing else: no micro-slip, no memory beyond u.

Private slots: fs[c, F_LAW0] = u_x, fs[c, F_LAW0 + 1] = u_y (m).
"""

import math

from .._jit import njit
from . import state as S
from .hertz import contact_radius, normal_force

U_X = S.F_LAW0
U_Y = S.F_LAW0 + 1

# Beyond this any law saturates at mu N; clipping keeps k * ds finite for absurd increments.
HUGE_INCREMENT = 1e200


@njit
def clean_increment(x):
    """A usable shift increment component: NaN carries no direction (no movement), infinities
    and absurd magnitudes are clipped to a size every law treats as gross sliding."""
    if x != x:
        return 0.0
    if x > HUGE_INCREMENT:
        return HUGE_INCREMENT
    if x < -HUGE_INCREMENT:
        return -HUGE_INCREMENT
    return x


@njit
def scaled_to_length(x, y, length):
    """(x, y) rescaled to Euclidean length `length`, without overflow for huge (x, y)."""
    m = max(abs(x), abs(y))
    if m == 0.0:
        return 0.0, 0.0
    if m == math.inf:
        # Only the infinite components carry the direction.
        x = math.copysign(1.0, x) if abs(x) == math.inf else 0.0
        y = math.copysign(1.0, y) if abs(y) == math.inf else 0.0
        m = 1.0
    xs = x / m
    ys = y / m
    r = math.sqrt(xs * xs + ys * ys)
    return xs / r * length, ys / r * length


# Inlined into the dispatcher: a call boundary that passes the state arrays costs reference
# counting per contact, which measured several times the cost of this kernel's arithmetic.
@njit(inline="always")
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance contact c to overlap `delta` > 0 with shift increment (dsx, dsy)."""
    N = normal_force(prm, delta)
    if prm[S.P_KTLIN] > 0.0:
        k = prm[S.P_KTLIN]
    else:
        k = prm[S.P_KTC] * contact_radius(prm, delta)
    ux = fs[c, U_X] + clean_increment(dsx)
    uy = fs[c, U_Y] + clean_increment(dsy)
    tx = k * ux
    ty = k * uy
    limit = prm[S.P_MU] * N
    kind = S.KIND_ELASTIC
    if math.sqrt(tx * tx + ty * ty) > limit:  # hypot is ~3x slower; this only picks the branch
        # Truncate the spring itself, so reversing the movement unloads from the Coulomb limit.
        tx, ty = scaled_to_length(ux, uy, limit)
        ux = tx / k
        uy = ty / k
        kind = S.KIND_GROSS_SLIDING
    fs[c, U_X] = ux
    fs[c, U_Y] = uy
    fs[c, S.F_DELTA] = delta
    fs[c, S.F_N] = N
    fs[c, S.F_TX] = tx
    fs[c, S.F_TY] = ty
    fs[c, S.F_KIND] = kind

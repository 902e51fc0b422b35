"""Tangential law 'mindlin': the simple incremental-stiffness modified-Mindlin contact.

This is the cheap model Kuhn (2011, section 4 and Table 1) times the Jäger algorithm against, one
that captures a single force reversal and no micro-slip. Each step, in this order:

1. normal unloading (delta' < delta): the stored force is rescaled by k_t(delta')/k_t(delta) = a'/a,
   so T falls to zero as the contact opens (no rescale on normal loading);
2. T <- T + k_t(delta') ds with Mindlin's no-slip stiffness k_t = 4 G a'/(2 - nu) = P_KTC a';
3. Coulomb cap: if |T| > mu N(delta'), T is scaled back to length mu N (gross sliding).

Unlike 'linear' (which stores a displacement and multiplies by the current stiffness) this law
stores the force, so a normal *loading* at a fixed shift leaves T unchanged.

Private slots: none (the state is T itself, in F_TX, F_TY, and the last overlap, F_DELTA).
"""

import math

from .._jit import njit
from . import state as S
from .hertz import contact_radius, normal_force
from .linear import clean_increment, scaled_to_length


# Inlined into the dispatcher: a call boundary that passes the state arrays costs reference
# counting per contact, which measured several times the cost of this kernel's arithmetic.
@njit(inline="always")
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance contact c to overlap `delta` > 0 with shift increment (dsx, dsy)."""
    N = normal_force(prm, delta)
    a = contact_radius(prm, delta)
    tx = fs[c, S.F_TX]
    ty = fs[c, S.F_TY]
    delta_old = fs[c, S.F_DELTA]
    if 0.0 < delta < delta_old:
        ratio = a / contact_radius(prm, delta_old)
        tx *= ratio
        ty *= ratio
    k = prm[S.P_KTC] * a
    tx += k * clean_increment(dsx)
    ty += k * clean_increment(dsy)
    limit = prm[S.P_MU] * N
    kind = S.KIND_ELASTIC
    if math.sqrt(tx * tx + ty * ty) > limit:  # hypot is ~3x slower; this only picks the branch
        tx, ty = scaled_to_length(tx, ty, limit)
        kind = S.KIND_GROSS_SLIDING
    fs[c, S.F_DELTA] = delta
    fs[c, S.F_N] = N
    fs[c, S.F_TX] = tx
    fs[c, S.F_TY] = ty
    fs[c, S.F_KIND] = kind

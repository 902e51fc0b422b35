"""Tangential law 'md_incremental': incremental-stiffness Mindlin–Deresiewicz with turning points.

The comparator for the exact Jäger law: the classic incremental form of the Mindlin & Deresiewicz
(1953) solution used by most DEM codes, after Thornton (1991, J. Phys. D 24:1942), Thornton & Yin
(1991, Powder Technol. 65:153) and, for the displacement-driven reading, Vu-Quoc & Zhang (1999)
and Zhang & Vu-Quoc (2007). It integrates the MD tangent stiffness with one explicit (forward
Euler) step per movement, so it converges to the closed forms as movements are refined and is
visibly approximate for large ones.

Scalar law along the force line (T a signed force, d = +-1 the direction of the current branch,
k_t0 = P_KTC a' Mindlin's no-slip stiffness at the new overlap, N' the new Hertz force,
dN = N' - N):

    dT = k_t0 theta ds_par + d mu dN (1 - theta)                         (Thornton 1991)
    virgin loading (no turning point):  theta^3 = 1 - (d T + mu dN) / (mu N')
    branch from turning point T_k:      theta^3 = 1 - (d (T - T_k) + 2 mu dN) / (2 mu N')

(d = -1 from T_k is Thornton's unloading from T*, d = +1 his reloading from T**; the sign of the
dN term follows the branch direction, his "- only on unloading"). theta is clipped to [0, 1]; if
N grows faster than the tangential demand, |k_t0 ds| <= mu dN, MD give no micro-slip and theta = 1.
At constant N this is exactly dT/ds of the closed forms, T = T_k + d 2 mu N [1 - (1 - x)^(3/2)].

Turning points: when ds_par changes sign the current T is pushed as a turning point and the
branch direction flips. Masing memory is kept for up to four nested turning points: a branch from
T_k that gets back to T_{k-1} closes the inner loop and the path continues on the branch from
T_{k-2}; the first reversal branch (from T_1) joins the virgin curve at -T_1, where MD's unloading
curve meets it tangentially. Deeper nesting drops the oldest point (and then no branch closes onto
the lost one). Following Thornton, every stored turning point moves by -d_k mu dN per step so
that the memory follows a varying N. Coulomb cap: if |T| >= mu N', |T| is set to mu N' (gross
sliding) and all memory is erased (a full slip wipes out the stick-zone history).

2D treatment (after Thornton & Yin 1991): the increment is split into its component ds_par along
the current force line e and the perpendicular rest; the MD branches act on ds_par, the
perpendicular part loads with the initial stiffness k_t0 (the response of a fully stuck contact).
After the step e is turned onto the new force direction (keeping the orientation closest to the
old e, so T may be negative along e) and the turning points are kept as scalars along e. This is
exact for collinear paths and an approximation when the force line rotates; it does not reproduce
the transverse-probe stiffness of Seridi & Dobry or Jäger. Normal unloading is handled only by
the dN term and the Coulomb cap.

Private slots (fs[c, F_LAW0 + i]):
    0, 1  e_x, e_y   unit vector of the force line (0, 0 before the first tangential movement)
    2     d          direction of the current branch along e (+1, -1; 0 when fresh)
    3     depth      number of stored turning points (0 = on the virgin curve)
    4     truncated  1 if older turning points were dropped
    5..8  T_1..T_4   turning points (signed force along e, bottom of the stack first)
"""

import math

from .._jit import njit
from . import state as S
from .hertz import contact_radius, normal_force
from .linear import clean_increment, scaled_to_length

E_X = S.F_LAW0
E_Y = S.F_LAW0 + 1
DIRECTION = S.F_LAW0 + 2
DEPTH = S.F_LAW0 + 3
TRUNCATED = S.F_LAW0 + 4
TURN0 = S.F_LAW0 + 5
MAX_TURNING_POINTS = S.N_FSTATE - TURN0


@njit
def _theta(cube):
    if cube <= 0.0:
        return 0.0
    if cube >= 1.0:
        return 1.0
    return cube ** (1.0 / 3.0)


# Inlined into the dispatcher: a call boundary that passes the state arrays costs reference
# counting per contact, which measured several times the cost of this kernel's arithmetic.
@njit(inline="always")
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance contact c to overlap `delta` > 0 with shift increment (dsx, dsy)."""
    N = normal_force(prm, delta)
    dN = N - fs[c, S.F_N]
    k0 = prm[S.P_KTC] * contact_radius(prm, delta)
    mu = prm[S.P_MU]
    limit = mu * N
    dsx = clean_increment(dsx)
    dsy = clean_increment(dsy)
    tx = fs[c, S.F_TX]
    ty = fs[c, S.F_TY]

    d = fs[c, DIRECTION]
    ex = fs[c, E_X]
    ey = fs[c, E_Y]
    if d == 0.0:
        if dsx == 0.0 and dsy == 0.0:
            # Fresh and not yet sheared: only the normal force changes.
            fs[c, S.F_DELTA] = delta
            fs[c, S.F_N] = N
            fs[c, S.F_KIND] = S.KIND_ELASTIC
            return
        ex, ey = scaled_to_length(dsx, dsy, 1.0)
        d = 1.0
        fs[c, DEPTH] = 0.0
        fs[c, TRUNCATED] = 0.0
    depth = int(fs[c, DEPTH])
    truncated = fs[c, TRUNCATED] != 0.0

    ds_par = dsx * ex + dsy * ey
    perp_x = dsx - ds_par * ex
    perp_y = dsy - ds_par * ey
    t_par = tx * ex + ty * ey
    t_perp_x = tx - t_par * ex
    t_perp_y = ty - t_par * ey

    if ds_par != 0.0 and (ds_par > 0.0) != (d > 0.0):
        # The movement along the force line reversed: the current force is a turning point.
        if depth == MAX_TURNING_POINTS:
            for j in range(MAX_TURNING_POINTS - 1):
                fs[c, TURN0 + j] = fs[c, TURN0 + j + 1]
            truncated = True
        else:
            depth += 1
        fs[c, TURN0 + depth - 1] = t_par
        d = -d

    mu_dN = mu * dN
    kind = S.KIND_ELASTIC
    if dN > 0.0 and k0 * math.hypot(dsx, dsy) <= mu_dN:
        dt_par = k0 * ds_par
    else:
        if limit > 0.0:
            if depth == 0:
                theta = _theta(1.0 - (d * t_par + mu_dN) / limit)
            else:
                theta = _theta(1.0 - (d * (t_par - fs[c, TURN0 + depth - 1]) + 2.0 * mu_dN) / (2.0 * limit))
        else:
            theta = 0.0
        dt_par = k0 * theta * ds_par + d * mu_dN * (1.0 - theta)
        if theta < 1.0 and (ds_par != 0.0 or dN != 0.0):
            kind = S.KIND_PARTIAL_SLIP
    t_par += dt_par
    t_perp_x += k0 * perp_x
    t_perp_y += k0 * perp_y

    # Masing closure: a branch that gets back to the start of the branch before it ends the
    # inner loop; the path continues on the older branch (same direction d).
    while depth > 0:
        if depth >= 2:
            if truncated and depth == 2:
                break
            target = fs[c, TURN0 + depth - 2]
            if d * (t_par - target) >= 0.0:
                depth -= 2
            else:
                break
        else:
            if truncated:
                break
            if d * (t_par + fs[c, TURN0]) >= 0.0:
                depth = 0
            else:
                break

    # Follow a varying N with the memory (Thornton: T* += mu dN, T** -= mu dN).
    sgn = d
    for level in range(depth, 0, -1):
        fs[c, TURN0 + level - 1] -= sgn * mu_dN
        sgn = -sgn

    tx = t_par * ex + t_perp_x
    ty = t_par * ey + t_perp_y
    magnitude = math.hypot(tx, ty)
    if not (magnitude < limit):
        tx, ty = scaled_to_length(tx, ty, limit)
        kind = S.KIND_GROSS_SLIDING
        depth = 0
        truncated = False
        magnitude = limit
    if magnitude > 0.0:
        # Turn the force line onto the new force, keeping the orientation nearest the old one
        # so the signed memory along e stays meaningful.
        nx, ny = scaled_to_length(tx, ty, 1.0)
        if nx * ex + ny * ey < 0.0:
            nx = -nx
            ny = -ny
        ex = nx
        ey = ny
        if kind == S.KIND_GROSS_SLIDING:
            d = 1.0 if tx * ex + ty * ey > 0.0 else -1.0

    fs[c, E_X] = ex
    fs[c, E_Y] = ey
    fs[c, DIRECTION] = d
    fs[c, DEPTH] = depth
    fs[c, TRUNCATED] = 1.0 if truncated else 0.0
    fs[c, S.F_DELTA] = delta
    fs[c, S.F_N] = N
    fs[c, S.F_TX] = tx
    fs[c, S.F_TY] = ty
    fs[c, S.F_KIND] = kind

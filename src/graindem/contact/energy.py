"""Stored elastic energy, tangential work and frictional dissipation of a contact.

Per contact the dispatcher (`laws.contact_step`) keeps two cumulative counters in the shared slots,
both kept across separations:
    F_WORK  tangential work W_t = integral of T . ds done on the contact along its movements (J);
    F_DISS  frictional dissipation D (J).
The normal (Hertz) part is conservative: its stored energy E_n = 2/5 N delta equals the normal work
done since first touch, whatever the path, so it needs no counter. Energy balance: E_t + D = W_t.

Stored tangential energy E_t (computed on demand, O(history length) for jaeger):
* jaeger — the equivalent load history is an admissible no-slip loading path that produces the
  current traction (Jäger), so E_t is the tangential work along it. On segment j,
  S(delta) = S_{j-1} + kappa p_j (delta - delta_{j-1}) and T(delta) = T_{j-1} + p_j (N(delta) - N_{j-1}):
      E_t = kappa sum_j [ p_j . (T_{j-1} - p_j N_{j-1}) (delta_j - delta_{j-1})
                          + |p_j|^2 2/5 (N_j delta_j - N_{j-1} delta_{j-1}) ].
  Independent check (tests/test_energy.py), Clapeyron E_t = 1/2 integral q . u dA: with
  q = sum_i c_i p_H(r; delta_i), c_i = p_i - p_{i+1}, a Hertz-shaped traction c p_H(r; delta_a)
  displaces its disc by kappa c delta_a MINUS a quadratic field that does not depend on delta_a
  (Johnson 1985, section 7.2: q0/a is the same for every a at one R*). The notes' "uniform
  kappa p delta_a" holds only for differences of such tractions, which is all the force algorithm
  needs, but the energy sees the quadratic part: E_t = kappa/2 sum_ij (c_i . c_j) N_lo (delta_hi - delta_lo/5),
  e.g. 2/5 kappa |p|^2 N delta for one segment, not 1/2.
* linear — the spring 1/2 k |u|^2 = |T|^2/(2k), k its stiffness at the current overlap.
* mindlin, md_incremental — incremental laws that store a force and have no energy function; we use
  the no-slip Mindlin spring at the current overlap, |T|^2/(2 k_t(delta)). For them (and for
  `linear` with k = k_t(delta)) a normal movement at fixed shift changes E_t without tangential
  work, so their D = W_t - E_t also contains the laws' own non-conservation and can decrease.

Dissipation of jaeger, integrated along each movement independently of E_t. At fraction t of a
straight movement (delta(t), S(t) = S_k + t ds) the state is the history below the cut delta*(t)
plus one slip segment of direction u(t) to delta(t). Differentiating E_t of that state and the work
T . ds (u' drops out since u . u' = 0; the cut moves as d delta*/dt = (kappa mu delta' - u . ds)/(kappa (mu - p_j . u))):
    dD/dt = mu [N(delta) - N(delta*) - N'(delta*) (delta - delta*)] (u . ds - kappa mu delta')  >= 0,
the force mu (N - N*) of the slip annulus times its slip rate, with the Hertz-curvature correction.
The same expression holds for gross sliding (delta* = 0). Check: monotonic loading at constant N
to gross sliding dissipates kappa mu^2 N delta/5 = W_t - E_t = (3/5 - 2/5) kappa mu^2 N delta.

Integration along one movement (T(t) and dD/dt are those of the single straight movement stopped
at fraction t; `jaeger_probe` evaluates them read-only on the state before the step):
* elastic movements (normal advance inside the cone, or a retrace of the top segment):
  T(t) = T_0 + p (N(delta(t)) - N_0), p = ds/(kappa d delta), so W_t = T_0 . ds + (p . ds)(Nbar - N_0),
  Nbar = 2/5 (N_1 delta_1 - N_0 delta_0)/(delta_1 - delta_0), exactly, and D = 0: elastic cycles
  dissipate nothing.
* DEM-size movements (|ds| <= 5e-2 mu kappa delta and |d delta| <= 5e-2 delta): Simpson's rule, the
  ends from the contact rows before and after the step (the slip power at t = 0+ of an annulus that
  keeps slipping, `jaeger_row_slip_power`) and the mid-point from one probe. Measured: closed MD loop
  at constant N to 1e-10 with 100 movements per branch; wandering 2D DEM-like paths (600 movements
  per load cycle) keep E_t + D = W_t to 1e-3 of sum mu N |ds| (the slip direction turns quickly
  inside a movement that leaves a thin slip annulus; first order in the movement size there).
* larger movements: cut at the kinks of the integrands (`_breakpoints`: delta(t) passing a history
  point, or the cut passing one) and adaptive 3-point Gauss-Legendre on each piece, to WORK_RTOL of
  mu N (|ds| + kappa mu |d delta|). Measured: closed MD loops in one movement per branch to 1e-10,
  random 1D/2D large-step histories E_t + D = W_t to 1e-8 against an independent fine subdivision.
* gross sliding all along the movement (`gross_sliding_keeps`: the history is one slip segment
  and the movement leaves the origin's cone at once): T(t) = mu N(delta(t)) u(t), integrated by
  parts into closed-form terms plus a smooth remainder (composite Gauss-Legendre) on the row
  alone, no probe (`gross_sliding_integrals`; against the
  general integrator and scipy's quad to 1e-9 of mu N (|ds| + kappa mu |d delta|) in the tests).
  On a biaxial test (benchmarks/jaeger_trace.py) a fifth of the steps are of this kind.
* a movement that opens the contact is integrated up to the opening fraction, where force and
  stored energy have fallen to 0 (so everything still stored is dissipated). Force and slip power
  vanish there like (t_end - t)^1.5, a branch point that made the adaptive rule bisect deep (47 us
  per opening on a biaxial trace); the last piece is integrated in u, t = t_end - L u^2, where the
  integrand is smooth (3.8 us; same results to 2.6e-12 of the movement's scale).
* xi > 0 (history compression) changes the elastic shift (a small artificial slip) without counting
  it in D: there E_t + D = W_t holds only to the xi approximation.
Incremental laws: trapezoid rule W_t += (T_0 + T_1) . ds/2 and D = W_t - E_t, O(1); exact where T is
linear along the movement (linear and mindlin below the Coulomb cap at constant overlap).
"""

import math

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._jit import njit
from . import state as S
from .jaeger import F_DLOW, F_NLOW, F_PX, F_PY, F_SLIP, F_SX, F_SY, inside_cone, lower_end_test
from .store import PT_DELTA, PT_N, PT_PX, PT_PY


@njit(_nrt=False)
def hertz_energy(c_n, delta):
    """Hertz elastic energy 2/5 N delta = 2/5 c_n delta^(5/2) (the normal work since first touch);
    0 apart."""
    if delta <= 0.0:
        return 0.0
    return 0.4 * c_n * delta * delta * math.sqrt(delta)


@njit(_nrt=False)
def normal_energy(prm, delta):
    """hertz_energy of a contact row's parameter record."""
    return hertz_energy(prm[S.P_CN], delta)


@njit
def hertz_energy_sum(c_n, delta):
    """The sum of hertz_energy over arrays of rows, in row order."""
    total = 0.0
    for k in range(delta.shape[0]):
        total += hertz_energy(c_n[k], delta[k])
    return total


@njit(_nrt=False)
def jaeger_tangential_energy(prm, fs, ist, c, pts, nxt):
    """E_t of a jaeger contact: the tangential work along its equivalent load history (O(k))."""
    kappa = prm[S.P_KAPPA]
    tx = fs[c, S.F_TX]
    ty = fs[c, S.F_TY]
    i = ist[c, S.I_HEAD]
    e = 0.0
    while i >= 0:
        d_hi = pts[i, PT_DELTA]
        n_hi = pts[i, PT_N]
        px = pts[i, PT_PX]
        py = pts[i, PT_PY]
        below = nxt[i] >> 1
        if below >= 0:
            d_lo = pts[below, PT_DELTA]
            n_lo = pts[below, PT_N]
            tlx = tx - px * (n_hi - n_lo)
            tly = ty - py * (n_hi - n_lo)
        else:
            d_lo = 0.0
            n_lo = 0.0
            tlx = 0.0
            tly = 0.0
        p2 = px * px + py * py
        e += (px * tlx + py * tly) * (d_hi - d_lo) + p2 * (0.4 * (n_hi * d_hi - n_lo * d_lo) - n_lo * (d_hi - d_lo))
        tx = tlx
        ty = tly
        i = below
    return kappa * e


@njit(_nrt=False)
def spring_energy(prm, fs, c, delta, k_const):
    """|T|^2/(2k) with k = k_const if > 0 (the linear law's constant stiffness), else Mindlin's
    no-slip k_t(delta) at the current overlap."""
    if delta <= 0.0:
        return 0.0
    k = k_const if k_const > 0.0 else prm[S.P_KTC] * math.sqrt(prm[S.P_RSTAR] * delta)
    return (fs[c, S.F_TX] ** 2 + fs[c, S.F_TY] ** 2) / (2.0 * k)


@njit(_nrt=False)
def elastic_movement_work(prm, d0, n0, t0x, t0y, d1, n1, dsx, dsy):
    """Exact W_t of a jaeger movement that is elastic all along: T(t) = T_0 + p (N(delta(t)) - N_0),
    p = ds/(kappa (d1 - d0)), d1 != d0."""
    dd = d1 - d0
    nbar = 0.4 * (n1 * d1 - n0 * d0) / dd
    p_dot_ds = (dsx * dsx + dsy * dsy) / (prm[S.P_KAPPA] * dd)
    return t0x * dsx + t0y * dsy + p_dot_ds * (nbar - n0)


@njit(_nrt=False)
def trapezoid_work(t0x, t0y, t1x, t1y, dsx, dsy):
    return 0.5 * ((t0x + t1x) * dsx + (t0y + t1y) * dsy)


@njit(_nrt=False)
def _jaeger_point(prm, pts, nxt, i):
    """(p_x, p_y, slip, delta_below, N_below, below) of history point i."""
    below = nxt[i] >> 1
    if below >= 0:
        return pts[i, PT_PX], pts[i, PT_PY], (nxt[i] & 1) == 1, pts[below, PT_DELTA], pts[below, PT_N], below
    return pts[i, PT_PX], pts[i, PT_PY], (nxt[i] & 1) == 1, 0.0, 0.0, below


@njit(_nrt=False)
def jaeger_probe(prm, fs, ist, c, pts, nxt, delta, dsx, dsy):
    """What a jaeger step of contact c to overlap `delta` > 0 with shift increment (dsx, dsy) would
    give, without changing any state: the same cone test, truncation and cut as `jaeger.step`
    (shared/notes/jaeger-algorithm.md section 4) on local copies of the top point. Returns
    (T_x, T_y, slipping, delta_cut, N_cut, u_x, u_y): the force, whether the step ends with a slip
    segment from the cut delta_cut (N_cut = N(delta_cut); 0 for gross sliding) to `delta`, and
    that segment's direction u."""
    kappa = prm[S.P_KAPPA]
    mu = prm[S.P_MU]
    eps = 1e-12
    n_new = prm[S.P_CN] * delta * math.sqrt(delta)
    eta = eps * kappa * mu * delta
    i = ist[c, S.I_HEAD]
    dk = fs[c, S.F_DELTA]
    nk = fs[c, S.F_N]
    sx = fs[c, F_SX]
    sy = fs[c, F_SY]
    tx = fs[c, S.F_TX]
    ty = fs[c, S.F_TY]
    tgt_x = sx + dsx
    tgt_y = sy + dsy
    if i >= 0:
        # the top point's slope and lower end are in the row: only the link is read from the store
        px, py, slip, dl, nl, below = fs[c, F_PX], fs[c, F_PY], fs[c, F_SLIP] != 0.0, fs[c, F_DLOW], fs[c, F_NLOW], nxt[i] >> 1
    else:
        px, py, slip, dl, nl, below = 0.0, 0.0, False, 0.0, 0.0, -1
        dk = 0.0
        nk = 0.0
        sx = 0.0
        sy = 0.0
        tx = 0.0
        ty = 0.0

    # Normal unloading: truncate at delta (local copies only).
    if delta < dk:
        while i >= 0 and dl >= delta:
            if below >= 0:
                sx -= kappa * px * (dk - dl)
                sy -= kappa * py * (dk - dl)
                tx -= px * (nk - nl)
                ty -= py * (nk - nl)
            else:
                sx = 0.0
                sy = 0.0
                tx = 0.0
                ty = 0.0
            dk = dl
            nk = nl
            i = below
            if i >= 0:
                px, py, slip, dl, nl, below = _jaeger_point(prm, pts, nxt, i)
        if i >= 0 and dk > delta:
            x = dk - delta
            sx -= kappa * px * x
            sy -= kappa * py * x
            tx -= px * (nk - n_new)
            ty -= py * (nk - n_new)
            dk = delta
            nk = n_new

    slipping = False
    ux = 0.0
    uy = 0.0
    d_adv = delta - dk
    rx = tgt_x - sx
    ry = tgt_y - sy
    r2 = rx * rx + ry * ry
    reach = kappa * mu * d_adv + eta
    if inside_cone(r2, reach):
        if d_adv > eps * delta:
            rn = math.sqrt(r2)
            inv = 1.0 / (kappa * d_adv)
            qx = rx * inv
            qy = ry * inv
            qn = rn * inv
            if qn >= mu * (1.0 - 1e-12) and qn > 0.0:      # as jaeger.step (EPS_P)
                qx *= mu / qn
                qy *= mu / qn
            tx += qx * (n_new - nk)
            ty += qy * (n_new - nk)
        elif d_adv > 0.0 and i >= 0:
            tx += px * (n_new - nk)
            ty += py * (n_new - nk)
    else:
        while i >= 0:
            if below >= 0:
                slx = sx - kappa * px * (dk - dl)
                sly = sy - kappa * py * (dk - dl)
                tlx = tx - px * (nk - nl)
                tly = ty - py * (nk - nl)
            else:
                slx = 0.0
                sly = 0.0
                tlx = 0.0
                tly = 0.0
            wx = tgt_x - slx
            wy = tgt_y - sly
            w2 = wx * wx + wy * wy
            reach_low = kappa * mu * (delta - dl)
            superseded, cut_below = lower_end_test(reach_low, eta, w2)
            if cut_below:
                # superseded segment (h_low < -eta) or a cut at its lower end (tie): drop it
                sx = slx
                sy = sly
                tx = tlx
                ty = tly
                dk = dl
                nk = nl
                i = below
                if i >= 0:
                    px, py, slip, dl, nl, below = _jaeger_point(prm, pts, nxt, i)
                if superseded:
                    continue
                break
            d_j = delta - dk
            gx = (tgt_x - sx) / kappa - px * d_j
            gy = (tgt_y - sy) / kappa - py * d_j
            g2 = gx * gx + gy * gy
            a_coef = 0.0 if slip else max(mu * mu - (px * px + py * py), 0.0)
            g_dot = gx * px + gy * py
            q = math.sqrt(g_dot * g_dot + a_coef * g2)
            if g_dot < 0.0:
                z = g2 / (q - g_dot)
                inv_z = (q - g_dot) / g2
            elif a_coef > 0.0:
                z = (g_dot + q) / a_coef
                inv_z = a_coef / (g_dot + q)
            else:
                z = math.inf
                inv_z = 0.0
            x = z - d_j
            if x >= dk - dl:
                sx = slx
                sy = sly
                tx = tlx
                ty = tly
                dk = dl
                nk = nl
                i = below
            elif x > 0.0:
                d_cut = dk - x
                n_cut = prm[S.P_CN] * d_cut * math.sqrt(d_cut)
                sx -= kappa * px * x
                sy -= kappa * py * x
                tx -= px * (nk - n_cut)
                ty -= py * (nk - n_cut)
                dk = d_cut
                nk = n_cut
                # as jaeger.step: the slip slope from the root is p + g/z, of length mu
                qx = px + gx * inv_z
                qy = py + gy * inv_z
                slipping = True
                ux = qx / mu
                uy = qy / mu
                tx += qx * (n_new - nk)
                ty += qy * (n_new - nk)
            break
        if i < 0:
            dk = 0.0
            nk = 0.0
            sx = 0.0
            sy = 0.0
            tx = 0.0
            ty = 0.0
        if delta > dk and not slipping:
            wx = tgt_x - sx
            wy = tgt_y - sy
            wn = math.sqrt(wx * wx + wy * wy)
            if wn == math.inf:
                wn = math.hypot(wx, wy)
            if wn > 0.0:
                slipping = True
                ux = wx / wn
                uy = wy / wn
                tx += mu * ux * (n_new - nk)
                ty += mu * uy * (n_new - nk)
    tmax = mu * n_new
    tn2 = tx * tx + ty * ty
    if tn2 > tmax * tmax:
        scale = tmax / math.sqrt(tn2)
        tx *= scale
        ty *= scale
    return tx, ty, slipping, dk, nk, ux, uy


# Size of a "DEM-size" movement (fraction of mu kappa delta and of delta) below which Simpson's rule
# with O(1) ends and one mid-point probe is used; above it, breakpoints + adaptive Gauss-Legendre
# to WORK_RTOL mu N (|ds| + kappa mu |d delta|), with caps on bisection depth and panels (the
# tolerance trades accuracy against cost: 1e-9 costs ~+15 % over 1e-8 on DEM-like paths).
SMALL_MOVEMENT = 5e-2
WORK_RTOL = 1e-9
MAX_DEPTH = 40
# Panels narrower than this (fraction of the movement) are not split further. Near a contact that
# sits within ~1e-9 of gross sliding (|p| just below mu, e.g. as set by a change of law) the cut
# sweeps a whole segment within ~1e-7 of the movement and its root (A ~ 1e-18) carries ~1e-7 of
# relative rounding noise, far above WORK_RTOL: bisection then ran to MAX_PANELS (milliseconds per
# movement, measured on a biaxial trace). A panel of width h errs by at most ~2 h mu N (|ds| +
# kappa mu |d delta|), so this bounds such a panel's error at 2e-8 of the movement's scale.
MIN_PANEL_WIDTH = 1e-8
MAX_PANELS = 4000
GAUSS3 = 0.5 * math.sqrt(0.6)


@njit(_nrt=False)
def slip_power(prm, delta, d_low, n_low, px, py, wx, wy, d_delta):
    """Frictional power (per unit movement fraction) of a slip annulus whose segment runs from
    d_low (N(d_low) = n_low) to delta with slope p = mu u:
    mu [N(delta) - N(d_low) - N'(d_low) (delta - d_low)] max(u . ds - kappa mu d_delta, 0)."""
    mu = prm[S.P_MU]
    if mu <= 0.0:
        return 0.0
    cn = prm[S.P_CN]
    gap = cn * delta * math.sqrt(delta) - n_low - 1.5 * cn * math.sqrt(d_low) * (delta - d_low)
    speed = (px * wx + py * wy) / mu - prm[S.P_KAPPA] * mu * d_delta
    return mu * max(gap, 0.0) * max(speed, 0.0)


@njit(_nrt=False)
def jaeger_row_slip_power(prm, fs, c, wx, wy, d_delta):
    """slip_power of the top segment of jaeger row c if it is a slip segment, else 0. On the state
    before a movement this is the power at t = 0+ when the annulus keeps slipping (the cone at the
    segment's lower end is left at first order: u . ds > kappa mu d_delta), and 0 otherwise, where
    the new slip annulus starts from zero width; on the state after it, the power at t = 1."""
    if fs[c, F_SLIP] == 0.0 or not (fs[c, S.F_DELTA] > 0.0):
        return 0.0
    return slip_power(prm, fs[c, S.F_DELTA], fs[c, F_DLOW], fs[c, F_NLOW], fs[c, F_PX], fs[c, F_PY],
                      wx, wy, d_delta)


@njit(_nrt=False)
def _rates(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, t):
    """(T . ds, dD/dt) at fraction t of the straight movement (d0, 0) -> (d1, ds), delta(t) > 0.

    Frictional power of the slip annulus (derived in the module docstring):
    dD/dt = mu [N(delta) - N(delta*) - N'(delta*) (delta - delta*)] (u . ds - kappa mu (d1 - d0))."""
    delta = d0 + t * (d1 - d0)
    tx, ty, slipping, d_cut, n_cut, ux, uy = jaeger_probe(prm, fs, ist, c, pts, nxt, delta, t * wx, t * wy)
    g_w = tx * wx + ty * wy
    g_d = 0.0
    if slipping:
        mu = prm[S.P_MU]
        g_d = slip_power(prm, delta, d_cut, n_cut, mu * ux, mu * uy, wx, wy, d1 - d0)
    return g_w, g_d


@njit(_nrt=False)
def jaeger_midpoint(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy):
    """(T_x, T_y, slip power) at the middle of the movement (read-only probe)."""
    delta = 0.5 * (d0 + d1)
    tx, ty, slipping, d_cut, n_cut, ux, uy = jaeger_probe(prm, fs, ist, c, pts, nxt, delta, 0.5 * wx, 0.5 * wy)
    g_d = 0.0
    if slipping:
        mu = prm[S.P_MU]
        g_d = slip_power(prm, delta, d_cut, n_cut, mu * ux, mu * uy, wx, wy, d1 - d0)
    return tx, ty, g_d


@njit(_nrt=False)
def _gauss3(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, a, b, end_t, end_len):
    """Three-point Gauss-Legendre estimates of (W_t, D) over the panel (a, b): of the fraction t
    if end_len == 0; else of u, t = end_t - end_len u^2 (the last piece of an opening movement:
    there force and slip power vanish like (end_t - t)^1.5, a branch point that costs the plain
    rule deep bisection, and in u the integrand is ~u^4, smooth)."""
    m = 0.5 * (a + b)
    h = b - a
    w_sum = 0.0
    q_sum = 0.0
    for node in range(3):
        if node == 0:
            x = m - GAUSS3 * h
            weight = 5.0
        elif node == 1:
            x = m
            weight = 8.0
        else:
            x = m + GAUSS3 * h
            weight = 5.0
        if end_len > 0.0:
            t = end_t - end_len * x * x
            weight *= 2.0 * end_len * x
        else:
            t = x
        w, q = _rates(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, t)
        w_sum += weight * w
        q_sum += weight * q
    return h * w_sum / 18.0, h * q_sum / 18.0


# Gross sliding kept all along a movement (`gross_sliding_integrals`): 3-point Gauss-Legendre on
# GROSS_PANELS_PER_UNIT panels per unit of the movement's relative size, at most GROSS_MAX_SIZE
# (larger movements go to the general integrator). Up to 16 (at most 129 panels, ~1 us) since the
# integration by parts: on a biaxial trace 2 % of the sliding movements exceed 2, and the general
# integrator spent microseconds on each (tests/test_energy.py checks sizes up to 16 against quad).
GROSS_PANELS_PER_UNIT = 8.0
GROSS_MAX_SIZE = 16.0


@njit(_nrt=False)
def gross_sliding_keeps(prm, fs, ist, c, wx, wy, d_delta):
    """True if jaeger contact c is grossly sliding (its history is one slip segment from the origin,
    S_k = kappa mu delta_0 u_0) and the straight movement (d_delta, (wx, wy)) keeps it sliding all
    along: the cone function of the origin, h(t) = kappa mu delta(t) - |S_k + t w|, is concave in
    t and starts at 0, so h'(0) = kappa mu d_delta - u_0 . w <= 0 keeps it <= 0 on [0, 1]."""
    if ist[c, S.I_LEN] != 1 or fs[c, F_SLIP] == 0.0:
        return False
    sx = fs[c, F_SX]
    sy = fs[c, F_SY]
    s0 = math.sqrt(sx * sx + sy * sy)
    return s0 > 0.0 and sx * wx + sy * wy >= prm[S.P_KAPPA] * prm[S.P_MU] * d_delta * s0


@njit(_nrt=False)
def gross_sliding_integrals(prm, d0, d1, sx, sy, wx, wy):
    """(W_t, D, ok) of a movement that slides grossly all along (`gross_sliding_keeps`) from the
    elastic shift (sx, sy) at overlap d0 to d1 > 0 by (wx, wy). There the state at fraction t is one
    slip segment from the origin along u(t) = A(t)/|A(t)|, A(t) = S + t w, so T(t) = mu N(t) u(t) and
    T . w = mu N(t) d|A|/dt. Integrated by parts:
        W_t = mu [N(1) |A(1)| - N(0) |A(0)|] - mu integral N'(t) |A(t)| dt,
    N'(t) = 3/2 c_N (d1 - d0) sqrt(delta(t)): exact but for the last term, a smooth integrand
    (|A| >= kappa mu delta(t) > 0 while sliding) that vanishes at constant overlap, by composite
    3-point Gauss-Legendre on GROSS_PANELS_PER_UNIT panels per unit of the movement's relative size.
    The slip power (module docstring, delta* = 0) is mu N(t) (u(t) . w - kappa mu (d1 - d0)),
    >= 0 all along (`gross_sliding_keeps`), so D = W_t - kappa mu^2 (d1 - d0) integral N dt
    = W_t - 2/5 kappa mu^2 (N(1) d1 - N(0) d0), exactly. No history walk, no probe, no division in
    the integrand. ok = False (nothing computed) for movements larger than GROSS_MAX_SIZE relative
    to |S| and to the overlap: the caller then uses the general integrator."""
    cn = prm[S.P_CN]
    mu = prm[S.P_MU]
    dd = d1 - d0
    s0 = math.sqrt(sx * sx + sy * sy)
    size = math.sqrt(wx * wx + wy * wy) / s0 + abs(dd) / min(d0, d1)
    if not (size <= GROSS_MAX_SIZE):
        return 0.0, 0.0, False
    n0 = cn * d0 * math.sqrt(d0)
    n1 = cn * d1 * math.sqrt(d1)
    ex = sx + wx
    ey = sy + wy
    w_t = mu * (n1 * math.sqrt(ex * ex + ey * ey) - n0 * s0)
    if dd != 0.0:
        panels = 1 + int(GROSS_PANELS_PER_UNIT * size)
        h = 1.0 / panels
        r_sum = 0.0
        for k in range(panels):
            mid = (k + 0.5) * h
            for node in range(3):
                if node == 0:
                    t = mid - GAUSS3 * h
                    weight = 5.0
                elif node == 1:
                    t = mid
                    weight = 8.0
                else:
                    t = mid + GAUSS3 * h
                    weight = 5.0
                ax = sx + t * wx
                ay = sy + t * wy
                r_sum += weight * math.sqrt((d0 + t * dd) * (ax * ax + ay * ay))
        w_t -= mu * 1.5 * cn * dd * r_sum * h / 18.0
    diss = w_t - 0.4 * prm[S.P_KAPPA] * mu * mu * (n1 * d1 - n0 * d0)
    return w_t, diss, True


MAX_BREAKS = 64
BREAKS_SIZE = MAX_BREAKS + 2          # 0, the breakpoints, t_end
STACK_SIZE = (MAX_DEPTH + 2) * 5      # bisection stack: rows of (a, b, est_w, est_d, eps)


@intrinsic
def _stack_buffer(typingctx, size):
    """A float64 scratch buffer of a literal `size` on the stack of the calling kernel, used as a
    pointer (buf[i]). It lets the integrator run without numba's runtime (`_nrt=False`, no
    np.empty), so that the dispatcher calling it needs no reference counting per contact."""
    if not isinstance(size, types.IntegerLiteral):
        return None
    n = size.literal_value

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float64), size=n)

    return types.CPointer(types.float64)(size), codegen


@njit(_nrt=False)
def _add_root(out, first, n, t, t_end):
    if 0.0 < t < t_end and n < MAX_BREAKS:
        out[first + n] = t
        n += 1
    return n


@njit(_nrt=False)
def _breakpoints(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, t_end, out, first):
    """Fractions t in (0, t_end), written to out[first:first + count], where the force or the slip power of the movement has a kink: the
    overlap delta(t) passes a history point (truncation), or the cone of a point, or of the origin,
    is left (the cut passes it: h(delta_i; t) = kappa mu (delta(t) - delta_i) - |S(t) - S_i| = 0, a
    quadratic in t). Points are visited top-down until one whose cone holds over the whole movement
    (h is non-increasing in delta and concave in t, so all lower points hold too). Returns the count."""
    kappa_mu = prm[S.P_KAPPA] * prm[S.P_MU]
    kappa = prm[S.P_KAPPA]
    dd = d1 - d0
    n = 0
    i = ist[c, S.I_HEAD]
    if i < 0:
        return 0
    sk_x = fs[c, F_SX]
    sk_y = fs[c, F_SY]
    d_i = fs[c, S.F_DELTA]
    s_x = sk_x
    s_y = sk_y
    b = kappa_mu * dd
    w2 = wx * wx + wy * wy
    while True:
        # step down to the point below i (the origin after the bottom point)
        px = pts[i, PT_PX]
        py = pts[i, PT_PY]
        below = nxt[i] >> 1
        d_lo = pts[below, PT_DELTA] if below >= 0 else 0.0
        s_x -= kappa * px * (d_i - d_lo)
        s_y -= kappa * py * (d_i - d_lo)
        if below < 0:
            s_x = 0.0
            s_y = 0.0
        d_i = d_lo
        if dd < 0.0 and d1 < d_i < d0:
            n = _add_root(out, first, n, (d_i - d0) / dd, t_end)
        a0 = kappa_mu * (d0 - d_i)
        vx = sk_x - s_x
        vy = sk_y - s_y
        qa = b * b - w2
        qb = 2.0 * (a0 * b - (vx * wx + vy * wy))
        qc = a0 * a0 - (vx * vx + vy * vy)
        h_start = a0 - math.sqrt(vx * vx + vy * vy)
        ex = vx + t_end * wx
        ey = vy + t_end * wy
        h_end = a0 + b * t_end - math.sqrt(ex * ex + ey * ey)
        if qa != 0.0:
            disc = qb * qb - 4.0 * qa * qc
            if disc >= 0.0:
                r = math.sqrt(disc)
                q = -0.5 * (qb + (r if qb >= 0.0 else -r))
                if q != 0.0:
                    for t in (q / qa, qc / q):
                        if a0 + b * t >= 0.0:
                            n = _add_root(out, first, n, t, t_end)
        elif qb != 0.0:
            t = -qc / qb
            if a0 + b * t >= 0.0:
                n = _add_root(out, first, n, t, t_end)
        if below < 0 or (d_i <= min(d0, d1) and h_start > 0.0 and h_end > 0.0):
            break
        i = below
    # sort (few entries)
    for a in range(first + 1, first + n):
        v = out[a]
        j = a - 1
        while j >= first and out[j] > v:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = v
    return n


@njit(_nrt=False)
def jaeger_movement_integrals(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, adaptive=True):
    """(W_t, D) of the jaeger movement from the current state (overlap d0) to overlap d1 with shift
    increment (wx, wy): the tangential work and the frictional dissipation, integrating the force
    and the slip power of that single straight movement stopped at every fraction t (read-only:
    call it before `jaeger.step`). A movement with d1 <= 0 opens the contact at
    t = d0/(d0 - d1), where the force and the stored energy have fallen to 0. The integrands are
    smooth between the breakpoints of `_breakpoints`; each piece is integrated by adaptive
    3-point Gauss-Legendre (bisection) to its share of the tolerance."""
    t_end = 1.0 if d1 > 0.0 else d0 / (d0 - d1)
    d_top = max(d0, d1)
    kappa_mu = prm[S.P_KAPPA] * prm[S.P_MU]
    wn = math.hypot(wx, wy)
    tol = WORK_RTOL * prm[S.P_MU] * prm[S.P_CN] * d_top * math.sqrt(d_top) * (wn + kappa_mu * abs(d1 - d0))
    breaks = _stack_buffer(BREAKS_SIZE)
    nb = _breakpoints(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, t_end, breaks, 1)
    breaks[0] = 0.0
    breaks[nb + 1] = t_end
    stack = _stack_buffer(STACK_SIZE)   # row r at stack[5 r:5 r + 5]
    min_width = MIN_PANEL_WIDTH * t_end
    total_w = 0.0
    total_d = 0.0
    panels = 0
    for piece in range(nb + 1):
        a0 = breaks[piece]
        b0 = breaks[piece + 1]
        if not (b0 > a0):
            continue
        end_len = 0.0
        share = (b0 - a0) / t_end
        if d1 <= 0.0 and piece == nb:
            # the piece ending where the contact opens: integrate in u (see _gauss3)
            end_len = b0 - a0
            a0 = 0.0
            b0 = 1.0
        est_w, est_d = _gauss3(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, a0, b0, t_end, end_len)
        if not adaptive:
            total_w += est_w
            total_d += est_d
            continue
        top = 0
        stack[0] = a0
        stack[1] = b0
        stack[2] = est_w
        stack[3] = est_d
        stack[4] = tol * share
        while top >= 0:
            a = stack[5 * top + 0]
            b = stack[5 * top + 1]
            est_w = stack[5 * top + 2]
            est_d = stack[5 * top + 3]
            eps = stack[5 * top + 4]
            top -= 1
            m = 0.5 * (a + b)
            lw, ld = _gauss3(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, a, m, t_end, end_len)
            rw, rd = _gauss3(prm, fs, ist, c, pts, nxt, d0, d1, wx, wy, m, b, t_end, end_len)
            panels += 1
            if (max(abs(lw + rw - est_w), abs(ld + rd - est_d)) <= eps or top >= MAX_DEPTH - 1
                    or panels >= MAX_PANELS or b - a <= min_width):
                total_w += lw + rw
                total_d += ld + rd
            else:
                top += 1
                stack[5 * top + 0] = m
                stack[5 * top + 1] = b
                stack[5 * top + 2] = rw
                stack[5 * top + 3] = rd
                stack[5 * top + 4] = 0.5 * eps
                top += 1
                stack[5 * top + 0] = a
                stack[5 * top + 1] = m
                stack[5 * top + 2] = lw
                stack[5 * top + 3] = ld
                stack[5 * top + 4] = 0.5 * eps
    return total_w, total_d

"""The registry of tangential laws and the per-contact dispatcher every caller goes through.

A law is a module with one numba kernel

    step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta) -> None

that advances contact `c` from its stored state (rows `fs[c]`, `ist[c]`, see `state`) to the new
total overlap `delta` > 0 along a straight movement whose tangential shift increment, in the
contact frame, is (dsx, dsy). It writes F_DELTA, F_N, F_TX, F_TY and F_KIND of the row and keeps
whatever else it needs in its private slots and, for history laws, in the shared HistoryStore
(`pts, nxt, meta`). It may push at most one history point per call, and only when the store has a
free point (callers guarantee one). Separation is handled here, once, for all laws, and so is the
energy accounting (tangential work F_WORK and frictional dissipation F_DISS, see `energy`).
"""

import math

from .._jit import njit
from . import energy, jaeger, linear, md_incremental, mindlin
from . import state as S
from .store import release

LINEAR = 0
MINDLIN = 1
MD_INCREMENTAL = 2
JAEGER = 3

TANGENTIAL_LAWS = ("linear", "mindlin", "md_incremental", "jaeger")
LAW_IDS = {name: i for i, name in enumerate(TANGENTIAL_LAWS)}
HISTORY_LAWS = ("jaeger",)


def law_id(name):
    """The integer id of a law name, with a clear error for an unknown name."""
    try:
        return LAW_IDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"law must be one of {', '.join(TANGENTIAL_LAWS)}; got {name!r}") from None


@njit
def separate(fs, ist, c, pts, nxt, meta):
    """The contact opened: release its history and zero its state (energy counters are kept)."""
    release(pts, nxt, meta, ist[c, S.I_HEAD])
    ist[c, S.I_HEAD] = -1
    ist[c, S.I_LEN] = 0
    diss = fs[c, S.F_DISS]
    work = fs[c, S.F_WORK]
    for k in range(S.N_FSTATE):
        fs[c, k] = 0.0
    fs[c, S.F_DISS] = diss
    fs[c, S.F_WORK] = work
    fs[c, S.F_KIND] = S.KIND_SEPARATED


@njit
def tangential_energy(law, prm, fs, ist, c, pts, nxt):
    """Stored tangential elastic energy E_t of contact c (see `energy` for each law's definition)."""
    delta = fs[c, S.F_DELTA]
    if not (delta > 0.0):
        return 0.0
    if law == JAEGER:
        return energy.jaeger_tangential_energy(prm, fs, ist, c, pts, nxt)
    if law == LINEAR:
        return energy.spring_energy(prm, fs, c, delta, prm[S.P_KTLIN])
    return energy.spring_energy(prm, fs, c, delta, 0.0)


@njit
def contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance one contact by one movement with the law `law` (an id), and count its tangential
    work (F_WORK) and frictional dissipation (F_DISS): for jaeger both are integrated along the
    movement, independently of the stored energy; for the incremental laws F_DISS = F_WORK - E_t."""
    d0 = fs[c, S.F_DELTA]
    n0 = fs[c, S.F_N]
    t0x = fs[c, S.F_TX]
    t0y = fs[c, S.F_TY]
    wx = linear.clean_increment(dsx)
    wy = linear.clean_increment(dsy)
    if not (delta > 0.0) or not math.isfinite(delta):
        # Opening. jaeger: the single movement integrated up to the opening fraction, where force
        # and stored energy have fallen to 0 (all of it released by slip). Other laws: the force
        # falls linearly to 0 at the opening fraction, and D = W_t since E_t = 0 once open.
        if d0 > 0.0:
            if law == JAEGER:
                d_end = delta if math.isfinite(delta) else 0.0
                w, d = energy.jaeger_movement_integrals(prm, fs, ist, c, pts, nxt, d0, d_end, wx, wy)
                fs[c, S.F_WORK] += w
                fs[c, S.F_DISS] += d
            else:
                frac = d0 / (d0 - delta) if math.isfinite(delta) else 1.0
                fs[c, S.F_WORK] += 0.5 * frac * (t0x * wx + t0y * wy)
                fs[c, S.F_DISS] = fs[c, S.F_WORK]
        separate(fs, ist, c, pts, nxt, meta)
        return
    if law == JAEGER:
        # Work and dissipation (see `energy`): exact (D = 0) for movements elastic all along;
        # Simpson's rule on force and slip power for DEM-size movements (ends from the contact row,
        # mid-point from a read-only probe); larger movements integrated piecewise between the
        # kinks of the integrands, on the state before the step.
        dd = delta - d0
        d_top = max(d0, delta)
        wn = math.hypot(wx, wy)
        kappa_mu = prm[S.P_KAPPA] * prm[S.P_MU]
        elastic_advance = dd >= 0.0 and wn <= kappa_mu * dd
        small = d0 > 0.0 and abs(dd) <= energy.SMALL_MOVEMENT * d_top and wn <= energy.SMALL_MOVEMENT * kappa_mu * d_top
        dlow0 = fs[c, jaeger.F_DLOW]
        q0 = 0.0
        qm = 0.0
        tmx = 0.0
        tmy = 0.0
        w = 0.0
        d = 0.0
        if not elastic_advance:
            if small:
                q0 = energy.jaeger_row_slip_power(prm, fs, c, wx, wy, dd)
                tmx, tmy, qm = energy.jaeger_midpoint(prm, fs, ist, c, pts, nxt, d0, delta, wx, wy)
            else:
                w, d = energy.jaeger_movement_integrals(prm, fs, ist, c, pts, nxt, d0, delta, wx, wy)
        jaeger.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
        elastic = fs[c, S.F_KIND] == S.KIND_ELASTIC
        if elastic and (dd > 0.0 or dlow0 <= delta < d0):
            # a normal advance inside the cone, or a retrace of the top segment
            w = energy.elastic_movement_work(prm, d0, n0, t0x, t0y, delta, fs[c, S.F_N], wx, wy)
            d = 0.0
        elif elastic_advance:
            w = energy.trapezoid_work(t0x, t0y, fs[c, S.F_TX], fs[c, S.F_TY], wx, wy)
        elif small:
            # Simpson's rule: ends from the rows before/after the step, mid-point from the probe
            w = ((t0x + 4.0 * tmx + fs[c, S.F_TX]) * wx + (t0y + 4.0 * tmy + fs[c, S.F_TY]) * wy) / 6.0
            d = 0.0 if elastic else (q0 + 4.0 * qm + energy.jaeger_row_slip_power(prm, fs, c, wx, wy, dd)) / 6.0
        fs[c, S.F_WORK] += w
        fs[c, S.F_DISS] += d
        return
    if law == MINDLIN:
        mindlin.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    elif law == MD_INCREMENTAL:
        md_incremental.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        linear.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    # Incremental laws: trapezoid rule for the work, D = W_t - (their spring energy), O(1).
    fs[c, S.F_WORK] += energy.trapezoid_work(t0x, t0y, fs[c, S.F_TX], fs[c, S.F_TY], wx, wy)
    fs[c, S.F_DISS] = fs[c, S.F_WORK] - tangential_energy(law, prm, fs, ist, c, pts, nxt)


@njit
def advance_contacts(law, prm, fs, ist, delta, ds, pts, nxt, meta, start):
    """Batched kernel: contacts start..n-1 by one movement each (delta[c], ds[c, 0:2]).

    Returns the index of the first contact not advanced: n when all were, earlier when the
    store ran out of free points (the caller grows the store and calls again from there).
    """
    n = delta.shape[0]
    for c in range(start, n):
        if meta[0] < 0:
            return c
        contact_step(law, prm, fs, ist, c, delta[c], ds[c, 0], ds[c, 1], pts, nxt, meta)
    return n


@njit
def tangential_energies(law, prm, fs, ist, pts, nxt, out):
    """Stored tangential energy of every contact into out[c] (read-only on the contact state)."""
    for c in range(fs.shape[0]):
        out[c] = tangential_energy(law, prm, fs, ist, c, pts, nxt)

"""The registry of tangential laws and the per-contact dispatcher every caller goes through.

A law is a module with one numba kernel

    step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta) -> None

that advances contact `c` from its stored state (rows `fs[c]`, `ist[c]`, see `state`) to the new
total overlap `delta` > 0 along a straight movement whose tangential shift increment, in the
contact frame, is (dsx, dsy). It writes F_DELTA, F_N, F_TX, F_TY and F_KIND of the row and keeps
whatever else it needs in its private slots and, for history laws, in the shared HistoryStore
(`pts, nxt, meta`). It may push at most one history point per call, and only when the store has a
free point (callers guarantee one). Separation is handled here, once, for all laws, and so is the
energy accounting (tangential work F_WORK and frictional dissipation F_DISS, see `energy`), which
the parameter slot P_ENERGY switches (1, the default of `contact_params`: count; 0: skip, F_WORK and
F_DISS stay as they are; a record too short to have the slot, e.g. from an older checkpoint, counts).

Speed: the kernels here are compiled with `_nrt=False` (they allocate nothing: the integrator in
`energy` keeps its scratch on the stack). With numba's reference counting, every non-inlined call
that receives the six state arrays increments and decrements each of them, which measured more
than the whole mindlin law.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

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


@njit(_nrt=False)
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


@njit(_nrt=False)
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


@njit(_nrt=False)
def contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance one contact by one movement with the law `law` (an id), and count its tangential
    work (F_WORK) and frictional dissipation (F_DISS) unless prm[P_ENERGY] == 0: for jaeger both
    are integrated along the movement, independently of the stored energy; for the incremental
    laws F_DISS = F_WORK - E_t."""
    if prm.shape[0] > S.P_ENERGY and prm[S.P_ENERGY] == 0.0:
        if not (delta > 0.0) or not math.isfinite(delta):
            separate(fs, ist, c, pts, nxt, meta)
        elif law == JAEGER:
            jaeger.step_outlined(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
        elif law == MINDLIN:
            mindlin.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
        elif law == MD_INCREMENTAL:
            md_incremental.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
        else:
            linear.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
        return
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
        wn = math.sqrt(wx * wx + wy * wy)   # hypot costs ~15 ns a call; it only matters past 1e154
        if wn == math.inf:
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
        if not elastic_advance and energy.gross_sliding_keeps(prm, fs, ist, c, wx, wy, dd):
            # Gross sliding all along: O(1) integrals on the row, no probe of the history.
            w, d, ok = energy.gross_sliding_integrals(prm, d0, delta, fs[c, jaeger.F_SX], fs[c, jaeger.F_SY],
                                                      wx, wy)
            if ok:
                jaeger.step_outlined(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
                fs[c, S.F_WORK] += w
                fs[c, S.F_DISS] += d
                return
        if not elastic_advance:
            if small:
                q0 = energy.jaeger_row_slip_power(prm, fs, c, wx, wy, dd)
                tmx, tmy, qm = energy.jaeger_midpoint(prm, fs, ist, c, pts, nxt, d0, delta, wx, wy)
            else:
                w, d = energy.jaeger_movement_integrals(prm, fs, ist, c, pts, nxt, d0, delta, wx, wy)
        jaeger.step_outlined(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
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


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Ask the CPU to start loading the cache line of arr[idx] (row idx of a 2D array). A hint
    only: no effect on any value, and a valid index is not required (prefetches never fault)."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        inds = [context.cast(builder, args[1], idxty, types.intp)]
        inds += [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer2(context, builder, data=ary.data,
                                        shape=cgutils.unpack_tuple(builder, ary.shape),
                                        strides=cgutils.unpack_tuple(builder, ary.strides),
                                        layout=aryty.layout, inds=inds, wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(arr, idx), codegen


# How many contacts ahead the batched kernel prefetches a contact's top history point, the point
# below it and the one below that (each stage reads the link the previous stage brought in).
# At 20 000 jaeger contacts, time per update: 289 ns without, 221 ns with (8, 4, -), 195 ns with
# (24, 12, 4); on a recorded biaxial trace of 20 000 contacts (16, 8, 3) to (48, 24, 8) are alike
# within the noise.
PREFETCH_TOP = 24
PREFETCH_BELOW = 12
PREFETCH_BELOW2 = 4
# Prefetch only for a store of at least this many points (2.4 MB with the links, about one
# core's L2): below it everything is in cache and the walk is pure overhead. Recorded trace, time
# per update without/with the walk, relative to a kernel without prefetching: 2000 contacts (16 000
# points) 0.84/0.88, 5000 (40 000) equal, 10 000 (80 000) 0.99/0.90, 20 000 (160 000) 1.04/0.89.
PREFETCH_MIN_POINTS = 1 << 16


@njit(_nrt=False, inline="always")
def prefetch_stacks(pts, nxt, meta, h_top, h_below, h_below2):
    """Hint the free point, the top point of the stack headed h_top, the point below the top of
    stack h_below and the one below that of stack h_below2 (each stage reads links an earlier
    stage brought in). Shared by the batched kernel (_prefetch_ahead) and the engine's jaeger force
    pass (engine.pair_pass._prefetch_store_ahead), which differ only in how they find the rows ahead.

    Branch-free: a head of -1 (no history) or a bottom link of -1 only aims a hint at the element
    before the array (a prefetch never faults), and nxt[-1] wraps to a valid element whose value is
    then only used as a hint."""
    _prefetch(pts, meta[0])       # the free point a push without a pop takes
    _prefetch(nxt, meta[0])
    _prefetch(pts, h_top)
    _prefetch(nxt, h_top)
    b = nxt[h_below] >> 1
    _prefetch(pts, b)
    _prefetch(nxt, b)
    b = nxt[nxt[h_below2] >> 1] >> 1
    _prefetch(pts, b)
    _prefetch(nxt, b)


@njit(_nrt=False, inline="always")
def _prefetch_ahead(ist, pts, nxt, meta, c, n):
    """Hint the top three history points of the contacts PREFETCH_TOP, _BELOW and _BELOW2 ahead,
    and the free point (prefetch_stacks).

    Branch-free: tests would mispredict on the many one-point histories of gross sliding (recorded
    biaxial trace at 20 000 contacts: 61 ns an update against 70 with tests). The row indices are
    unsigned (c >= start >= 0, checked by advance_contacts), which spares numba's wraparound
    arithmetic for negative indices (x0.95-0.97 per jaeger update on the same trace); no effect on
    results."""
    prefetch_stacks(pts, nxt, meta, ist[np.uint64(min(c + PREFETCH_TOP, n - 1)), S.I_HEAD],
                     ist[np.uint64(min(c + PREFETCH_BELOW, n - 1)), S.I_HEAD],
                     ist[np.uint64(min(c + PREFETCH_BELOW2, n - 1)), S.I_HEAD])


# Each law without energy accounting has its own loop (a function of its own): in one loop for all
# laws the code of one law changes the register allocation and layout of the others (an edit of
# jaeger alone can make mindlin ~8 % slower). The law kernels are inlined, as in the engine's force
# loop (contact.rows.step_<law>): a call of contact_step (~80 scalar arguments) costs 13-15 ns an
# update, for mindlin 40 % of its time. An opening goes straight to `separate`, as contact_step does
# without energy accounting (calling contact_step there would inline its energy integrators into
# every loop: minutes of compilation).

@njit(_nrt=False, inline="always")
def _advance_with(law_step, prm, fs, ist, delta, ds, pts, nxt, meta, start, prefetch):
    """The batched loop of one law; `law_step` (a law module's inlined `step`) and `prefetch` are
    constants of each wrapper below, so each compiles to a loop of its own law only."""
    n = delta.shape[0]
    for c in range(start, n):
        if meta[0] < 0:
            return c
        if prefetch:
            _prefetch_ahead(ist, pts, nxt, meta, c, n)
        d = delta[c]
        if not (d > 0.0) or not math.isfinite(d):
            separate(fs, ist, c, pts, nxt, meta)
        else:
            law_step(prm, fs, ist, c, d, ds[c, 0], ds[c, 1], pts, nxt, meta)
    return n


@njit(_nrt=False)
def advance_jaeger(prm, fs, ist, delta, ds, pts, nxt, meta, start, prefetch):
    return _advance_with(jaeger.step, prm, fs, ist, delta, ds, pts, nxt, meta, start, prefetch)


@njit(_nrt=False)
def _advance_mindlin(prm, fs, ist, delta, ds, pts, nxt, meta, start):
    return _advance_with(mindlin.step, prm, fs, ist, delta, ds, pts, nxt, meta, start, False)


@njit(_nrt=False)
def _advance_md_incremental(prm, fs, ist, delta, ds, pts, nxt, meta, start):
    return _advance_with(md_incremental.step, prm, fs, ist, delta, ds, pts, nxt, meta, start, False)


@njit(_nrt=False)
def _advance_linear(prm, fs, ist, delta, ds, pts, nxt, meta, start):
    return _advance_with(linear.step, prm, fs, ist, delta, ds, pts, nxt, meta, start, False)


@njit(_nrt=False)
def advance_contacts(law, prm, fs, ist, delta, ds, pts, nxt, meta, start):
    """Batched kernel: contacts start..n-1 by one movement each (delta[c], ds[c, 0:2]).

    Returns the index of the first contact not advanced: n when all were, earlier when the
    store ran out of free points (the caller grows the store and calls again from there).

    jaeger: the history points lie scattered through the shared store, and once the store outgrows
    the core's cache a step that pops or pushes waits for memory on each of them (time per update
    doubled from 200 to 20 000 contacts). So the kernel then prefetches, some contacts ahead, the
    top three points of a contact (hints only: results are unchanged). While the store fits in the
    cache (fewer than PREFETCH_MIN_POINTS points) the prefetch walk is pure overhead and is skipped.
    """
    n = delta.shape[0]
    if start < 0:
        raise ValueError("advance_contacts: start (the first contact to advance) must be >= 0")
    history = law == JAEGER
    prefetch = history and pts.shape[0] >= PREFETCH_MIN_POINTS
    if prm.shape[0] > S.P_ENERGY and prm[S.P_ENERGY] == 0.0:
        if history:
            return advance_jaeger(prm, fs, ist, delta, ds, pts, nxt, meta, start, prefetch)
        if law == MINDLIN:
            return _advance_mindlin(prm, fs, ist, delta, ds, pts, nxt, meta, start)
        if law == MD_INCREMENTAL:
            return _advance_md_incremental(prm, fs, ist, delta, ds, pts, nxt, meta, start)
        return _advance_linear(prm, fs, ist, delta, ds, pts, nxt, meta, start)
    for c in range(start, n):
        if meta[0] < 0:
            return c
        if prefetch:
            _prefetch_ahead(ist, pts, nxt, meta, c, n)
        contact_step(law, prm, fs, ist, c, delta[c], ds[c, 0], ds[c, 1], pts, nxt, meta)
    return n


@njit(_nrt=False)
def tangential_energies(law, prm, fs, ist, pts, nxt, out):
    """Stored tangential energy of every contact into out[c] (read-only on the contact state)."""
    for c in range(fs.shape[0]):
        out[c] = tangential_energy(law, prm, fs, ist, c, pts, nxt)

"""Tangential law 'jaeger': Jäger's exact Cattaneo–Mindlin–Deresiewicz force for arbitrary movements.

Implements shared/notes/jaeger-algorithm.md (sections 4, 5 and 7) on the lean storage of its
section 3: the HistoryStore keeps, per point i >= 1 of the equivalent load history, (delta_i, N_i,
p_i, slip_i); the contact row keeps everything about the top point k that a step needs, so that an
elastic step touches the row and at most one pushed point, and a small slip the row, the top one or
two points and one pushed point. Shifts and forces at lower points are
recovered while descending: S_{i-1} = S_i - kappa p_i (delta_i - delta_{i-1}),
T_{i-1} = T_i - p_i (N_i - N_{i-1}).

Private slots of the contact row (shared slots: F_DELTA = delta_k, F_N = N_k, F_TX/F_TY = T_k):
    F_SX, F_SY   elastic shift S_k of the top point (displacement of the innermost stick zone)
    F_PX, F_PY   slope p_k of the top segment (copy of the store)
    F_SLIP       1.0 if the top segment is a slip segment (copy of the store's flag)
    F_DLOW       delta_{k-1}, overlap of the point below the top (0 for the origin)
    F_NLOW       N_{k-1}
A fresh or separated row (all zeros, I_HEAD = -1, I_LEN = 0) is the unloaded origin, point 0.

Speed: every kernel here is compiled with `_nrt=False` (it allocates nothing; with reference
counting numba wraps each call in increments/decrements of the six array arguments that its pruning
cannot remove in these loops, which makes a call 4x slower), and `step` and its helpers are inlined
into their callers (`inline="always"`; as calls, passing ~50 scalars each, they cost a fifth of an
update). `step` keeps the contact row in local variables and writes it back once: the compiler
cannot know that the store and the row do not overlap, so every store write would otherwise force
the row slots read after it to be loaded again.

Where the time goes (benchmarks/contact_kernel.py, recorded biaxial trace, where 92 % of the steps
slip and half unload): a typical step supersedes the top slip segment (one pop), cuts inside the
segment below (5e) and appends a slip segment. With every contact replaying the same trace column
in lockstep, so that every branch is predicted, a partial-slip step costs 33-38 ns (mindlin 8-9 ns),
while the arithmetic of the typical step alone (its loads, two square roots, two divisions),
straight and branch-free on the same rows, costs ~17.6 ns, as much as mindlin
(`benchmarks/contact_kernel.py --bounds`). So neither mispredictions nor the latency of that chain
bound the step: the bookkeeping around it does (cone tests at both ends, the descent, the store
writes, the merge check, the row write-back: how many instructions, and so how few contacts the
out-of-order window overlaps). Hence:
- the cone tests compare squares (no square root on the slip path); the slope appended after a cut
  is p + g/z (no norm); a cut in a slip segment (two thirds of them) takes z = |g|^2/(-2 kappa G)
  without the square root (the same bits: Q = |G| exactly there); 5e is written with kappa g, so no
  1/kappa; the force after a cut and a push is one multiply-add after N(delta*) (T = u + p N with u
  constant along a segment);
- the moves of the top point on unloading, the choice of the root's form and the descent to the
  point below are written without branches; a popped point is kept as the step's spare and taken by
  its push (no free-list and meta[] traffic through memory between contacts; the store ends bit for
  bit as with pop/push);
- large stores go on huge pages (store.HUGE_PAGE_MIN_POINTS: fewer TLB misses on a large store);
  a scattered store still costs ~13 ns an update there, which is why the engine lays the store out
  afresh every 100 steps;
- fast paths: about 80 % of the trace's steps are one of four cases, taken by straight code entered
  by cheap tests on the row and falling back to the general code (which they never write before
  deciding) otherwise: `_supersede_and_cut` (53 %: the top slip segment superseded, the root inside
  the segment below; the popped top is the point pushed, so head, length and links stay and two
  points are written), `_slide_from_origin` (21 %: gross sliding on a one-point history),
  `_supersede_two_and_cut` (the cut two segments deep, ~7 %; entered from `_supersede_and_cut` once
  segment k-1 is found superseded) and `_new_elastic_segment` (step 4a, ~6 %). They use the general
  code's expressions; results agree to a few ulp (tests/test_jaeger_fastpath.py, from the same state
  every step, on random 3D sequences). Their row values and results pass through `_opaque` so that
  every caller compiles them alike (the energy switch must not change the mechanics by one bit). In
  lockstep the gross-sliding column costs 13.5 ns, as cheap as mindlin; the partial-slip path costs
  about what the general code does with every branch predicted: the fast paths' gain is in the mixed
  trace (fewer mispredicted branches, fewer instructions);
- the rounding guard on |T| <= mu N (`_cap`) is kept a branch: as a select, which LLVM prefers for a
  rarely taken branch, every step would compute its square root and division;
- the row and the store points known to exist are indexed unsigned (numba wraps a signed index
  around for negative values on every access);
- one division instead of two for the root in the fast paths (1/(kappa den num) gives both) is
  slower (x1.035: the longer dependency chain); a prefetch of the points below a top by address
  gains 3-5 % in a compacted store but loses 8-19 % in a scattered one, so laws._prefetch_ahead
  walks the links.

Input per call: the new total overlap delta > 0 and the tangential shift increment (dsx, dsy) in
the contact frame; the target elastic shift is S' = S_k + ds (the dispatcher handles separation).
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .._jit import njit
from . import state as S
from .store import M_FREE_HEAD, M_LIVE, M_PEAK, PT_DELTA, PT_N, PT_PX, PT_PY, remove_below

F_SX = S.F_LAW0
F_SY = S.F_LAW0 + 1
F_PX = S.F_LAW0 + 2
F_PY = S.F_LAW0 + 3
F_SLIP = S.F_LAW0 + 4
F_DLOW = S.F_LAW0 + 5
F_NLOW = S.F_LAW0 + 6

# Tolerances of the spec (section 5): eps sets the shift tie tolerance eta = eps kappa mu delta',
# far above the ~1e-16 rounding noise of the cone function and far below anything physical;
# EPS_P is the slope tolerance of the exact merge.
EPS = 1e-12
EPS_P = 1e-12


@njit(_nrt=False, inline="always")
def _top_of(pts, nxt, head):
    """(p_x, p_y, slip, delta_below, N_below) of the top point `head` of a stack (origin if -1).

    Without branches: a fifth of the contacts of a DEM run slide grossly on a one-point history,
    so whether the top or the point below it is the origin is no pattern a predictor learns.
    Index -1 reads wrap to the last element of the array (valid memory) and are then discarded."""
    link = nxt[head]
    below = link >> 1
    has_top = head >= 0
    has_below = has_top & (below >= 0)
    px = pts[head, PT_PX]
    py = pts[head, PT_PY]
    d_below = pts[below, PT_DELTA]
    n_below = pts[below, PT_N]
    return (px if has_top else 0.0, py if has_top else 0.0, has_top & ((link & 1) == 1),
            d_below if has_below else 0.0, n_below if has_below else 0.0)


@njit(_nrt=False, inline="always")
def _descend(pts, nxt, meta, head, spare, kappa, sx, sy, tx, ty, ux, uy, dk, nk, px, py, dl, nl):
    """Remove the top point: the state moves to the point below (recovered from the top's slope;
    exactly zero at the origin, without the rounding residue of the subtraction). Returns
    (head, spare, sx, sy, tx, ty, ux, uy, dk, nk, px, py, slip, dl, nl) of the new top (u: see
    `step`)."""
    head, spare = _pop_to_spare(nxt, meta, head, spare)
    keep = head >= 0
    sx = sx - kappa * px * (dk - dl) if keep else 0.0
    sy = sy - kappa * py * (dk - dl) if keep else 0.0
    tx = tx - px * (nk - nl) if keep else 0.0
    ty = ty - py * (nk - nl) if keep else 0.0
    bx, by, slip, d_below, n_below = _top_of(pts, nxt, head)
    # T at the point below, T_{k-1} = u + p_k N_{k-1} = u' + p_{k-1} N_{k-1}
    ux = ux + (px - bx) * nl if keep else 0.0
    uy = uy + (py - by) * nl if keep else 0.0
    return head, spare, sx, sy, tx, ty, ux, uy, dl, nl, bx, by, slip, d_below, n_below


@njit(_nrt=False, inline="always")
def _free_point(nxt, meta, i):
    """Put point i on top of the free list (no-op for i < 0)."""
    if i >= 0:
        nxt[i] = meta[M_FREE_HEAD] << 1
        meta[M_FREE_HEAD] = i
        meta[M_LIVE] -= 1


@njit(_nrt=False, inline="always")
def _pop_to_spare(nxt, meta, head, spare):
    """Pop the top point of stack `head` into the step's spare; the previous spare goes to the free
    list. Returns (new head, new spare). The free list then holds exactly what `store.pop` would
    leave once the spare is freed or taken by `_push_reusing`: the store stays bit for bit the same."""
    _free_point(nxt, meta, spare)
    return nxt[head] >> 1, head


@njit(_nrt=False, inline="always")
def _push_reusing(pts, nxt, meta, head, spare, delta, N, px, py, slip):
    """Push a point on stack `head`, into the spare if there is one (no free-list or meta traffic:
    the popped point went nowhere), else from the free list. Returns the new head."""
    if spare >= 0:
        i = spare
    else:
        i = meta[M_FREE_HEAD]
        meta[M_FREE_HEAD] = nxt[i] >> 1
        meta[M_LIVE] += 1
        if meta[M_LIVE] > meta[M_PEAK]:
            meta[M_PEAK] = meta[M_LIVE]
    pts[i, PT_DELTA] = delta
    pts[i, PT_N] = N
    pts[i, PT_PX] = px
    pts[i, PT_PY] = py
    nxt[i] = (head << 1) | (1 if slip else 0)
    return i


@njit(_nrt=False, inline="always")
def inside_cone(r2, reach):
    """|r| <= reach for r2 = |r|^2: compared squared (no square root) where the square keeps its
    range; a reach below ~1e-150 or above ~1e150 would lose it, so such a reach is compared plainly."""
    if 1e-150 < reach < 1e150:
        return r2 <= reach * reach
    return math.sqrt(r2) <= reach


@njit(_nrt=False, inline="always")
def lower_end_test(reach_low, eta, w2):
    """(superseded, cut_below) of the cone function at a segment's lower end, h_low = reach_low -
    |w|: superseded when h_low < -eta, the cut at or below that end when h_low <= eta. Compared
    squared (no square root on the slip path) where the squares keep their range."""
    if 1e-150 < reach_low < 1e150:
        superseded = (reach_low + eta) * (reach_low + eta) < w2
        cut_below = superseded | (reach_low <= eta) | ((reach_low - eta) * (reach_low - eta) <= w2)
    else:
        h_low = reach_low - math.sqrt(w2)
        superseded = h_low < -eta
        cut_below = h_low <= eta
    return superseded, cut_below


@njit(_nrt=False, inline="always")
def _root(kappa, mu, tgt_x, tgt_y, sx, sy, px, py, slip, d_j):
    """5e: the root of the cone function inside the top segment (slope p, upper end S = (sx, sy)),
    z measured from the upper end, d_j = delta - delta_top. Returns (gx, gy, z, 1 / (kappa z)).

    Written with kappa g for the spec's g (no 1/kappa): the root equation
    A w^2 - 2 (kappa g . p) w - |kappa g|^2 = 0 has the root w = kappa z."""
    gx = (tgt_x - sx) - kappa * px * d_j
    gy = (tgt_y - sy) - kappa * py * d_j
    g2 = gx * gx + gy * gy
    g_dot = gx * px + gy * py
    num = g2
    if slip:
        # A = 0: Q = |G| exactly (sqrt of a square), so the root needs no square root:
        # z = |g|^2 / (kappa (Q - G)) = |g|^2 / (-2 kappa G), the same bits as the general
        # form. Two thirds of the cuts of a DEM run are in a slip segment, and the square
        # root sat on the chain of dependent operations that bounds the step.
        den = -2.0 * g_dot
    else:
        a_coef = max(mu * mu - (px * px + py * py), 0.0)
        q = math.sqrt(g_dot * g_dot + a_coef * g2)
        # the cancellation-free form chosen by a select (the sign of G is no pattern)
        g_neg = g_dot < 0.0
        num = g2 if g_neg else g_dot + q
        den = q - g_dot if g_neg else a_coef
    # den = 0 (A = 0 and G >= 0: no root, the caller removes the point) gives z = inf, and 0/0
    # is kept out by the same select.
    z = num / (kappa * den) if den > 0.0 else math.inf
    return gx, gy, z, den / num


@intrinsic
def _opaque(typingctx, x):
    """x itself, but opaque to the optimiser (an empty inline-asm statement; no instruction).

    The fast paths below are single basic blocks inlined into several callers (the batched loop,
    laws.contact_step with its energy code, the engine's force loop). With fastmath's 'reassoc'
    and 'contract' LLVM regroups and fuses a block's sums and products depending on what the
    surrounding code shares with them, so the same source gave results a few ulp apart in
    different callers (tests/test_energy_switch.py demands them bit for bit). Passing the row's
    values, the loaded points, the new slope and the results through this fixes their arithmetic
    whatever the caller. (Also kappa, mu, delta, N: no further effect, but 5 % slower, as they
    can then no longer be shared with the caller.)"""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
        return builder.asm(fnty, "", "=x,0", [args[0]], side_effect=False)

    return types.float64(x), codegen


@intrinsic
def _stays_in_branch(typingctx, x):
    """x itself, through an empty inline-asm statement marked as having side effects: the block
    holding it cannot be executed speculatively. See `_cap`."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
        return builder.asm(fnty, "", "=x,0", [args[0]], side_effect=True)

    return types.float64(x), codegen


@njit(_nrt=False, inline="always")
def _cap(tx, ty, tmax):
    """The rounding guard |T| <= tmax: T is a sum of slopes |p_i| <= mu times positive force
    increments, but after deep normal unloading it is recovered by subtractions from much larger
    forces. The rescale is almost never needed, yet LLVM turned the branch into a select and so
    computed its square root and division on every step (the divider is shared by the step's
    other two or three square roots and two divisions); `_stays_in_branch` keeps it a
    (predictable) branch. Same operations, same results."""
    tn2 = tx * tx + ty * ty
    if tn2 > tmax * tmax:
        scale = _stays_in_branch(tmax / math.sqrt(tn2))
        tx = tx * scale
        ty = ty * scale
    return tx, ty


@njit(_nrt=False, inline="always")
def _supersede_two_and_cut(prm, fs, ist, cu, delta, n_new, kappa, mu, eta, tgt, head, length, bu,
                           below2, unloading, dk, nk, u, p, nl, b, d_b2, s2, pts, nxt, meta):
    """`_supersede_and_cut` one segment deeper (recorded biaxial trace: ~7 % of the steps): the
    top slip segment and segment k-1 are both superseded, the root lies strictly inside segment
    k-2, which is cut there and gets the new slip segment (no merge). Called by
    `_supersede_and_cut` once it has found segment k-1 superseded and a point k-2 below it, with
    its state at the lower end of segment k-1 (S_{k-2} = (s2x, s2y), delta_{k-2} = d_b2). Returns
    False, having written nothing, for any other case.

    What the general code leaves, written directly: the top (moved to delta when unloading) goes
    to the free list, the point k-1 (the general code's spare) takes the new segment, linked to
    k-2 with the slip flag, and k-2 is cut; head k-1, length - 1. (Pairs travel as tuples: a
    call of more than 30 arguments compiles to CALL_FUNCTION_EX, which numba cannot inline.)"""
    tgt_x, tgt_y = tgt
    ux, uy = u
    px, py = p
    bx, by = b
    s2x, s2y = s2
    nk = _opaque(nk)
    b2u = np.uint64(below2)
    link_b2 = nxt[b2u]
    below3 = link_b2 >> 1
    b2x = _opaque(pts[b2u, PT_PX])
    b2y = _opaque(pts[b2u, PT_PY])
    n_b2 = _opaque(pts[b2u, PT_N])
    b2slip = (link_b2 & 1) == 1
    at_origin = below3 < 0
    d_b3 = _opaque(0.0 if at_origin else pts[below3, PT_DELTA])
    dx_b2 = d_b2 - d_b3
    s3x = 0.0 if at_origin else s2x - kappa * b2x * dx_b2
    s3y = 0.0 if at_origin else s2y - kappa * b2y * dx_b2
    wx = tgt_x - s3x
    wy = tgt_y - s3y
    _, cut_below = lower_end_test(kappa * mu * (delta - d_b3), eta, wx * wx + wy * wy)
    if cut_below:
        return False
    d_j = delta - d_b2
    gx, gy, z, inv_w = _root(kappa, mu, tgt_x, tgt_y, s2x, s2y, b2x, b2y, b2slip, d_j)
    x = z - d_j
    qx = _opaque(b2x + gx * inv_w)
    qy = _opaque(b2y + gy * inv_w)
    dp2 = (qx - b2x) * (qx - b2x) + (qy - b2y) * (qy - b2y)
    merges = b2slip & (dp2 <= (EPS_P * mu) * (EPS_P * mu))
    if not ((x > 0.0) & (x < dx_b2)) or merges:
        return False
    d_cut = d_b2 - x
    n_cut = _opaque(_opaque(prm[S.P_CN]) * d_cut * math.sqrt(d_cut))
    hu = np.uint64(head)
    pts[hu, PT_DELTA] = dk
    pts[hu, PT_N] = n_new if unloading else nk
    nxt[hu] = meta[M_FREE_HEAD] << 1
    meta[M_FREE_HEAD] = head
    meta[M_LIVE] -= 1
    pts[b2u, PT_DELTA] = d_cut
    pts[b2u, PT_N] = n_cut
    pts[bu, PT_DELTA] = delta
    pts[bu, PT_N] = n_new
    pts[bu, PT_PX] = qx
    pts[bu, PT_PY] = qy
    nxt[bu] = (below2 << 1) | 1
    ux = ux + (px - bx) * nl
    uy = uy + (py - by) * nl
    ux = ux + (bx - b2x) * n_b2
    uy = uy + (by - b2y) * n_b2
    dd = delta - d_cut
    sx = (s2x - kappa * b2x * x) + kappa * qx * dd
    sy = (s2y - kappa * b2y * x) + kappa * qy * dd
    tx = (ux + qx * n_new) + (b2x - qx) * n_cut
    ty = (uy + qy * n_new) + (b2y - qy) * n_cut
    tx = _opaque(tx)
    ty = _opaque(ty)
    tx, ty = _cap(tx, ty, mu * n_new)
    ist[cu, S.I_HEAD] = np.int64(bu)
    ist[cu, S.I_LEN] = length - 1
    fs[cu, S.F_DELTA] = delta
    fs[cu, S.F_N] = n_new
    fs[cu, S.F_TX] = tx
    fs[cu, S.F_TY] = ty
    fs[cu, S.F_KIND] = S.KIND_PARTIAL_SLIP
    fs[cu, F_SX] = _opaque(sx)
    fs[cu, F_SY] = _opaque(sy)
    fs[cu, F_PX] = qx
    fs[cu, F_PY] = qy
    fs[cu, F_DLOW] = d_cut
    fs[cu, F_NLOW] = n_cut
    return True


@njit(_nrt=False, inline="always")
def _supersede_and_cut(prm, fs, ist, cu, delta, n_new, kappa, mu, eta, tgt_x, tgt_y, head, length, dk, nk,
                       sx, sy, ux, uy, px, py, dl, nl, pts, nxt, meta):
    """The fast path of the most common step of a DEM run (recorded biaxial trace: 53 % of the
    steps): the top k is a slip segment that the step supersedes (cone test at its lower end),
    the root lies strictly inside segment k-1 below it, which is cut there and gets the new slip
    segment, and that segment does not merge with segment k-1. Called for a row whose top is a
    slip segment with a point below it (not the origin) and no truncation (delta_{k-1} < delta).
    Returns False, having written nothing, when the step is any other case: the general code
    then runs from the row as if this had not been called.

    The general code's own expressions (the same helpers), straight: the popped top is the very
    point the push takes, and its link already reads (k-1, slip), so the head, the length and the
    link stay as they are and only the cut point and the pushed point are written; T is rebuilt
    from u; no elastic test at the top: for a slip top, h_top <= h_low (the cone function rises
    down a segment of slope mu at most as fast as its reach), so h_low < -eta implies h_top <
    -eta. tests/test_jaeger_fastpath.py compares it with the general code on random 3D
    sequences."""
    tgt_x = _opaque(tgt_x)
    tgt_y = _opaque(tgt_y)
    dk = _opaque(dk)
    sx = _opaque(sx)
    sy = _opaque(sy)
    ux = _opaque(ux)
    uy = _opaque(uy)
    px = _opaque(px)
    py = _opaque(py)
    dl = _opaque(dl)
    nl = _opaque(nl)
    # the top point moved down to delta when unloading (branch-free, as in the general code)
    unloading = delta < dk
    x_top = dk - delta if unloading else 0.0
    sx -= kappa * px * x_top
    sy -= kappa * py * x_top
    dk = delta if unloading else dk
    # cone test at the top's lower end, S_{k-1} = S_k - kappa p_k (delta_k - delta_{k-1})
    dx_top = dk - dl
    s1x = sx - kappa * px * dx_top
    s1y = sy - kappa * py * dx_top
    wx = tgt_x - s1x
    wy = tgt_y - s1y
    superseded, _ = lower_end_test(kappa * mu * (delta - dl), eta, wx * wx + wy * wy)
    if not superseded:
        return False
    # head and below are points (>= 0) here: unsigned indices skip numba's wraparound arithmetic
    hu = np.uint64(head)
    bu = np.uint64(nxt[hu] >> 1)
    link_b = nxt[bu]
    below2 = link_b >> 1
    bx = _opaque(pts[bu, PT_PX])
    by = _opaque(pts[bu, PT_PY])
    bslip = (link_b & 1) == 1
    at_origin = below2 < 0
    d_b2 = _opaque(0.0 if at_origin else pts[below2, PT_DELTA])
    dx_b = dl - d_b2
    s2x = 0.0 if at_origin else s1x - kappa * bx * dx_b
    s2y = 0.0 if at_origin else s1y - kappa * by * dx_b
    wx = tgt_x - s2x
    wy = tgt_y - s2y
    superseded_b, cut_below = lower_end_test(kappa * mu * (delta - d_b2), eta, wx * wx + wy * wy)
    if cut_below:
        if superseded_b and not at_origin:
            return _supersede_two_and_cut(prm, fs, ist, cu, delta, n_new, kappa, mu, eta, (tgt_x, tgt_y), head,
                                          length, bu, below2, unloading, dk, nk, (ux, uy), (px, py), nl, (bx, by),
                                          d_b2, (s2x, s2y), pts, nxt, meta)
        return False
    d_j = delta - dl
    gx, gy, z, inv_w = _root(kappa, mu, tgt_x, tgt_y, s1x, s1y, bx, by, bslip, d_j)
    x = z - d_j
    qx = _opaque(bx + gx * inv_w)
    qy = _opaque(by + gy * inv_w)
    # the exact merge (section 7) of the new slip segment with a slip segment k-1 of the same slope
    dp2 = (qx - bx) * (qx - bx) + (qy - by) * (qy - by)
    merges = bslip & (dp2 <= (EPS_P * mu) * (EPS_P * mu))
    if not ((x > 0.0) & (x < dx_b)) or merges:
        return False
    d_cut = dl - x
    n_cut = _opaque(_opaque(prm[S.P_CN]) * d_cut * math.sqrt(d_cut))
    pts[bu, PT_DELTA] = d_cut
    pts[bu, PT_N] = n_cut
    pts[hu, PT_DELTA] = delta
    pts[hu, PT_N] = n_new
    pts[hu, PT_PX] = qx
    pts[hu, PT_PY] = qy
    ux = ux + (px - bx) * nl
    uy = uy + (py - by) * nl
    dd = delta - d_cut
    sx = (s1x - kappa * bx * x) + kappa * qx * dd
    sy = (s1y - kappa * by * x) + kappa * qy * dd
    tx = (ux + qx * n_new) + (bx - qx) * n_cut
    ty = (uy + qy * n_new) + (by - qy) * n_cut
    tx = _opaque(tx)
    ty = _opaque(ty)
    tx, ty = _cap(tx, ty, mu * n_new)
    fs[cu, S.F_DELTA] = delta
    fs[cu, S.F_N] = n_new
    fs[cu, S.F_TX] = tx
    fs[cu, S.F_TY] = ty
    fs[cu, S.F_KIND] = S.KIND_PARTIAL_SLIP
    fs[cu, F_SX] = _opaque(sx)
    fs[cu, F_SY] = _opaque(sy)
    fs[cu, F_PX] = qx
    fs[cu, F_PY] = qy
    fs[cu, F_DLOW] = d_cut
    fs[cu, F_NLOW] = n_cut
    return True


@njit(_nrt=False, inline="always")
def _slide_from_origin(fs, cu, delta, n_new, kappa, mu, eta, tgt_x, tgt_y, head, pts):
    """The fast path of gross sliding on a one-point history (recorded biaxial trace: ~1/5 of
    the steps): the only segment is a slip segment, the step supersedes it (cone test at the
    origin), and the history becomes one slip segment from the origin towards the target.
    Called for a row whose top is a slip segment directly on the origin, without truncation.
    Returns False, having written nothing, for any other case (the general code then runs).

    As `_supersede_and_cut`: the popped point is the one pushed, its link (origin, slip) stays,
    so only its values are written; the general code's expressions with the origin's zeros
    (S = 0, T = 0, u = 0, delta_0 = N_0 = 0) folded in."""
    tgt_x = _opaque(tgt_x)
    tgt_y = _opaque(tgt_y)
    w2 = tgt_x * tgt_x + tgt_y * tgt_y
    superseded, _ = lower_end_test(kappa * mu * delta, eta, w2)
    wn = math.sqrt(w2)
    # an absurdly large shift (|w|^2 overflows) goes the general way, which keeps its direction
    if not superseded or wn == math.inf:
        return False
    unit = mu / wn
    qx = _opaque(tgt_x * unit)
    qy = _opaque(tgt_y * unit)
    hu = np.uint64(head)
    pts[hu, PT_DELTA] = delta
    pts[hu, PT_N] = n_new
    pts[hu, PT_PX] = qx
    pts[hu, PT_PY] = qy
    tx = qx * n_new
    ty = qy * n_new
    tx = _opaque(tx)
    ty = _opaque(ty)
    tx, ty = _cap(tx, ty, mu * n_new)
    fs[cu, S.F_DELTA] = delta
    fs[cu, S.F_N] = n_new
    fs[cu, S.F_TX] = tx
    fs[cu, S.F_TY] = ty
    fs[cu, S.F_KIND] = S.KIND_GROSS_SLIDING
    fs[cu, F_SX] = _opaque(kappa * qx * delta)
    fs[cu, F_SY] = _opaque(kappa * qy * delta)
    fs[cu, F_PX] = qx
    fs[cu, F_PY] = qy
    fs[cu, F_DLOW] = 0.0
    fs[cu, F_NLOW] = 0.0
    return True


@njit(_nrt=False, inline="always")
def _new_elastic_segment(prm, fs, ist, cu, delta, n_new, kappa, mu, eta, tgt_x, tgt_y, head, length, dk, nk,
                         sx, sy, ux, uy, px, py, slip, pts, nxt, meta):
    """The fast path of a normal advance inside the cone (recorded biaxial trace: ~6 % of the
    steps): step 4a appends one elastic segment straight to the target, pushed from the free list,
    which does not merge with the top. Called for a loading step (delta > delta_k) without
    truncation. Returns False, having written nothing, for any other case (the target outside the
    cone, a normal advance within the tie tolerance, a slope on the cone, a merge): the general
    code then runs. The general code's expressions with the unloading move (x = 0) and the spare
    (none) folded in; inputs and results pinned by `_opaque` as in `_supersede_and_cut`."""
    tgt_x = _opaque(tgt_x)
    tgt_y = _opaque(tgt_y)
    dk = _opaque(dk)
    nk = _opaque(nk)
    sx = _opaque(sx)
    sy = _opaque(sy)
    ux = _opaque(ux)
    uy = _opaque(uy)
    px = _opaque(px)
    py = _opaque(py)
    d_adv = delta - dk
    rx = tgt_x - sx
    ry = tgt_y - sy
    r2 = rx * rx + ry * ry
    reach = kappa * mu * d_adv + eta
    if not (inside_cone(r2, reach) and d_adv > EPS * delta):
        return False
    rn = math.sqrt(r2)
    inv = 1.0 / (kappa * d_adv)
    qx = _opaque(rx * inv)
    qy = _opaque(ry * inv)
    pn = rn * inv
    # a slope on the cone (a slip segment) or a merge with an elastic top (section 7): general code
    dp2 = (qx - px) * (qx - px) + (qy - py) * (qy - py)
    xi_tol = prm[S.P_XI] * mu
    exact = dp2 <= (EPS_P * mu) * (EPS_P * mu)
    merges = (length >= 1) & (not slip) & (exact | (dp2 < xi_tol * xi_tol))
    if (pn >= mu * (1.0 - EPS_P)) | merges:
        return False
    new_head = _push_reusing(pts, nxt, meta, head, -1, delta, n_new, qx, qy, False)
    sx = sx + kappa * qx * d_adv
    sy = sy + kappa * qy * d_adv
    tx = (ux + qx * n_new) + (px - qx) * nk
    ty = (uy + qy * n_new) + (py - qy) * nk
    tx = _opaque(tx)
    ty = _opaque(ty)
    tx, ty = _cap(tx, ty, mu * n_new)
    ist[cu, S.I_HEAD] = new_head
    ist[cu, S.I_LEN] = length + 1
    fs[cu, S.F_DELTA] = delta
    fs[cu, S.F_N] = n_new
    fs[cu, S.F_TX] = tx
    fs[cu, S.F_TY] = ty
    fs[cu, S.F_KIND] = S.KIND_ELASTIC
    fs[cu, F_SX] = _opaque(sx)
    fs[cu, F_SY] = _opaque(sy)
    fs[cu, F_PX] = qx
    fs[cu, F_PY] = qy
    fs[cu, F_SLIP] = 0.0
    fs[cu, F_DLOW] = dk
    fs[cu, F_NLOW] = nk
    return True


@njit(_nrt=False, inline="always")
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance contact c to total overlap `delta` (> 0) by the shift increment (dsx, dsy).

    The caller guarantees at least one free point in the store; at most one is pushed."""
    _step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta, True)


@njit(_nrt=False)
def step_outlined(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """`step` as a function of its own, for the callers off the hot path (energy accounting in
    laws.contact_step, the engine's wall contacts). numba's inline pass re-reads `step` and every
    helper at each call site it inlines them into: ~25-50 s of compilation per site (numba event
    timings), against a call that costs ~15 ns. This copy is compiled once and cached;
    the `_opaque` pins keep its results bit for bit those of the inlined copies."""
    step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def _step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta, fast_path):
    """`step`; with fast_path False (tests only) always through the general code."""
    if not (math.isfinite(dsx) and math.isfinite(dsy)):
        raise ValueError("jaeger.step: the shift increment (dsx, dsy) must be finite")
    kappa = prm[S.P_KAPPA]
    mu = prm[S.P_MU]
    n_new = prm[S.P_CN] * delta * math.sqrt(delta)
    cu = np.uint64(c)
    # The row's state in locals, written back once at the end: stores into the history store
    # would otherwise force a reload of every row slot read after them (the compiler cannot
    # know that the arrays do not overlap).
    head = ist[cu, S.I_HEAD]
    length = ist[cu, S.I_LEN]
    dk = fs[cu, S.F_DELTA]
    nk = fs[cu, S.F_N]
    tx = fs[cu, S.F_TX]
    ty = fs[cu, S.F_TY]
    # The force on the top segment also as T = u + p N: u is constant along a segment, so moving
    # the top point (unloading, a cut) leaves it alone, and the force of a step that cuts and
    # appends is one multiply-add after N(delta*) instead of four dependent operations (the chain
    # of square root, division, square root bounds a typical step). T itself is still carried
    # for the steps that append nothing: a repeated point must return T bit for bit.
    ux = tx - fs[cu, F_PX] * fs[cu, S.F_N]
    uy = ty - fs[cu, F_PY] * fs[cu, S.F_N]
    sx = fs[cu, F_SX]
    sy = fs[cu, F_SY]
    px = fs[cu, F_PX]
    py = fs[cu, F_PY]
    slip = fs[cu, F_SLIP] != 0.0
    dl = fs[cu, F_DLOW]
    nl = fs[cu, F_NLOW]
    tgt_x = sx + dsx           # target elastic shift S'
    tgt_y = sy + dsy
    eta = EPS * kappa * mu * delta
    # The four most common steps of a DEM run (87 % of the recorded biaxial trace's) in straight
    # code; anything else, or with fast_path False, the general algorithm below.
    if fast_path and (dl < delta):
        if slip:
            if length >= 2:
                if _supersede_and_cut(prm, fs, ist, cu, delta, n_new, kappa, mu, eta, tgt_x, tgt_y, head, length,
                                      dk, nk, sx, sy, ux, uy, px, py, dl, nl, pts, nxt, meta):
                    return
            elif length == 1:
                if _slide_from_origin(fs, cu, delta, n_new, kappa, mu, eta, tgt_x, tgt_y, head, pts):
                    return
        if delta > dk:
            if _new_elastic_segment(prm, fs, ist, cu, delta, n_new, kappa, mu, eta, tgt_x, tgt_y, head, length,
                                    dk, nk, sx, sy, ux, uy, px, py, slip, pts, nxt, meta):
                return
    kind = S.KIND_ELASTIC
    spare = -1                 # the last point popped, kept for the push (see _pop_to_spare)
    append = False             # append a segment of slope (qx, qy), flag qslip, from the top to delta
    qx = 0.0
    qy = 0.0
    qslip = False

    # 3. Normal unloading: truncate the history at delta (dl of the origin is 0 < delta, so at
    # least one point survives once there is one).
    if dl >= delta:
        while dl >= delta:
            (head, spare, sx, sy, tx, ty, ux, uy, dk, nk, px, py, slip, dl, nl) = _descend(
                pts, nxt, meta, head, spare, kappa, sx, sy, tx, ty, ux, uy, dk, nk, px, py, dl, nl)
            length -= 1
    # Move the top point down its segment to delta. Written without a branch on `unloading`
    # (half the steps of a real DEM run unload, in no predictable order): x = dn = 0 leave the
    # state as it is, and the store write then rewrites the top's own values.
    unloading = delta < dk
    x = dk - delta if unloading else 0.0
    dn = nk - n_new if unloading else 0.0
    sx -= kappa * px * x
    sy -= kappa * py * x
    tx -= px * dn
    ty -= py * dn
    dk = delta if unloading else dk
    nk = n_new if unloading else nk
    if head >= 0:
        pts[head, PT_DELTA] = dk
        pts[head, PT_N] = nk

    # 4. Elastic test at the top.
    d_adv = delta - dk
    rx = tgt_x - sx
    ry = tgt_y - sy
    r2 = rx * rx + ry * ry
    reach = kappa * mu * d_adv + eta
    # Compared squared: the slip branch never needs |r| (most real steps slip). The square of a
    if inside_cone(r2, reach):
        if d_adv > EPS * delta:
            # 4a: one new segment straight to the target.
            rn = math.sqrt(r2)
            inv = 1.0 / (kappa * d_adv)
            qx = rx * inv
            qy = ry * inv
            pn = rn * inv
            # A slope within EPS_P of the cone is a slip segment: left elastic, its A = mu^2 - |p|^2
            # would be rounding noise, and the cut inside it (5e) noise too (section 5).
            if pn >= mu * (1.0 - EPS_P):
                if pn > 0.0:
                    qx *= mu / pn
                    qy *= mu / pn
                qslip = True
            append = True
        else:
            # 4b: no normal advance worth a segment; absorb the (<= eta) shift difference.
            if d_adv > 0.0:
                dn = n_new - nk
                tx += px * dn
                ty += py * dn
                dk = delta
                nk = n_new
                pts[head, PT_DELTA] = delta
                pts[head, PT_N] = n_new
            sx = tgt_x
            sy = tgt_y
    else:
        # 5. Slip: cut the history back to the root delta* of the cone function.
        while length > 0:
            # S at the lower end; exactly 0 at the origin (a select, not a branch)
            at_origin = length == 1
            slx = 0.0 if at_origin else sx - kappa * px * (dk - dl)
            sly = 0.0 if at_origin else sy - kappa * py * (dk - dl)
            wx = tgt_x - slx
            wy = tgt_y - sly
            superseded, cut_below = lower_end_test(kappa * mu * (delta - dl), eta, wx * wx + wy * wy)
            if cut_below:
                # 5c (h_low < -eta: superseded) or 5d (a tie: the cut is at delta_{j-1}): remove point j
                (head, spare, sx, sy, tx, ty, ux, uy, dk, nk, px, py, slip, dl, nl) = _descend(
                    pts, nxt, meta, head, spare, kappa, sx, sy, tx, ty, ux, uy, dk, nk, px, py, dl, nl)
                length -= 1
                if superseded:
                    continue
                break
            # 5e: the root lies inside the top segment; z measured from the upper end.
            d_j = delta - dk
            gx, gy, z, inv_w = _root(kappa, mu, tgt_x, tgt_y, sx, sy, px, py, slip, d_j)
            x = z - d_j
            if x >= dk - dl:
                (head, spare, sx, sy, tx, ty, ux, uy, dk, nk, px, py, slip, dl, nl) = _descend(
                    pts, nxt, meta, head, spare, kappa, sx, sy, tx, ty, ux, uy, dk, nk, px, py, dl, nl)
                length -= 1
            elif x > 0.0:
                d_cut = dk - x
                n_cut = prm[S.P_CN] * d_cut * math.sqrt(d_cut)
                sx -= kappa * px * x
                sy -= kappa * py * x
                # (T at the cut is not needed: a push follows, from u)
                dk = d_cut
                nk = n_cut
                pts[head, PT_DELTA] = d_cut
                pts[head, PT_N] = n_cut
                # The slip segment from the root: S' - S(delta*) = kappa (g + p z) has length
                # kappa mu z there, so its slope mu u is p + g / z; no norm to take, and 1/z came
                # with z (the most common partial slip of a real DEM run ends here).
                qx = px + gx * inv_w
                qy = py + gy * inv_w
                qslip = True
                append = True
            break
        # Append the slip segment from the top t towards the target (section 4, end of step 5;
        # with t the origin this is gross sliding, step 6).
        kind = S.KIND_GROSS_SLIDING if length == 0 else S.KIND_PARTIAL_SLIP
        if append:
            pass
        elif delta > dk:
            wx = tgt_x - sx
            wy = tgt_y - sy
            wn = math.sqrt(wx * wx + wy * wy)
            if wn == math.inf:
                wn = math.hypot(wx, wy)      # an absurdly large shift must not lose its direction
            if wn > 0.0:
                unit = mu / wn
                qx = wx * unit
                qy = wy * unit
                qslip = True
            append = True
        else:
            sx = tgt_x
            sy = tgt_y

    if append:
        dd = delta - dk
        # The old top becomes the point below; the merge needs the one below it (kept in the row).
        bx = px
        by = py
        bslip = slip
        d2 = dl
        n2 = nl
        head = _push_reusing(pts, nxt, meta, head, spare, delta, n_new, qx, qy, qslip)
        spare = -1
        length += 1
        dl = dk
        nl = nk
        sx = sx + kappa * qx * dd
        sy = sy + kappa * qy * dd
        # T = u' + q N' with u' = u + (p - q) N_top: grouped so that N_top, the last value to
        # arrive (after a cut), enters in the last operation. A merge below keeps T.
        tx = (ux + qx * n_new) + (px - qx) * nk
        ty = (uy + qy * n_new) + (py - qy) * nk
        dk = delta
        nk = n_new
        px = qx
        py = qy
        slip = qslip
        # 7. Exact merge of equal consecutive segments, and the xi-merge (section 7).
        xi_tol = prm[S.P_XI] * mu
        exact_tol2 = (EPS_P * mu) * (EPS_P * mu)
        while True:
            # One branch, almost never taken, instead of a chain of them: whether the two top
            # segments are both slip ones is no pattern a predictor learns.
            dp2 = (px - bx) * (px - bx) + (py - by) * (py - by)
            exact = dp2 <= exact_tol2
            if not ((length >= 2) & (slip == bslip) & (exact | ((not slip) & (dp2 < xi_tol * xi_tol)))):
                break
            if not exact:
                # xi-merge of two elastic segments: the force-weighted slope keeps every stored T_i
                # and T_k; the elastic shift is re-derived from S_{k-2} (the difference is a tiny
                # artificial slip).
                dn_top = nk - nl
                dn_low = nl - n2
                wsum = dn_top + dn_low
                if wsum > 0.0:
                    mx = (bx * dn_low + px * dn_top) / wsum
                    my = (by * dn_low + py * dn_top) / wsum
                else:
                    mx = px
                    my = py
                if length > 2:
                    s2x = sx - kappa * (px * (dk - dl) + bx * (dl - d2))
                    s2y = sy - kappa * (py * (dk - dl) + by * (dl - d2))
                else:
                    s2x = 0.0
                    s2y = 0.0
                sx = s2x + kappa * mx * (dk - d2)
                sy = s2y + kappa * my * (dk - d2)
                px = mx
                py = my
                pts[head, PT_PX] = mx
                pts[head, PT_PY] = my
            # Remove point k-1: the top now starts at point k-2.
            remove_below(pts, nxt, meta, head)
            length -= 1
            dl = d2
            nl = n2
            if length < 2:
                break
            below = nxt[head] >> 1
            bx = pts[below, PT_PX]
            by = pts[below, PT_PY]
            bslip = (nxt[below] & 1) == 1
            below2 = nxt[below] >> 1
            if below2 >= 0:
                d2 = pts[below2, PT_DELTA]
                n2 = pts[below2, PT_N]
            else:
                d2 = 0.0
                n2 = 0.0

    _free_point(nxt, meta, spare)

    # Rounding guard (see _cap)
    tx, ty = _cap(tx, ty, mu * n_new)
    ist[cu, S.I_HEAD] = head
    ist[cu, S.I_LEN] = length
    fs[cu, S.F_DELTA] = delta
    fs[cu, S.F_N] = n_new
    fs[cu, S.F_TX] = tx
    fs[cu, S.F_TY] = ty
    fs[cu, S.F_KIND] = kind
    fs[cu, F_SX] = sx
    fs[cu, F_SY] = sy
    fs[cu, F_PX] = px
    fs[cu, F_PY] = py
    fs[cu, F_SLIP] = 1.0 if slip else 0.0
    fs[cu, F_DLOW] = dl
    fs[cu, F_NLOW] = nl

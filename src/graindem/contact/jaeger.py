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
cannot remove in these loops, which made a call 4x slower), and `step` and its helpers are inlined
into their callers (`inline="always"`; as calls, passing ~50 scalars each, they cost a fifth of an
update). `step` keeps the contact row in local variables and writes it back once: the compiler
cannot know that the store and the row do not overlap, so every store write would otherwise force
the row slots read after it to be loaded again. Where the time goes (benchmarks/contact_kernel.py,
recorded biaxial trace, where 92 % of the steps slip and half unload): a typical step supersedes the
top slip segment (one pop), cuts inside the segment below (5e) and appends a slip segment; it is
bound by one chain of dependent square roots and divisions (cone test, root z, N(delta*), the new
slope), ~150 cycles of latency by a count of the chain, consistent with the ~55 ns measured per
step (the same at 2000 contacts, where everything is in cache: not memory-bound). Hence: the cone tests compare squares (no square root on the slip path), the
slope appended after a cut inside a segment is p + g/z (no norm, 1/z computed beside z), 1/kappa is
a product, and the move of the top point on unloading is written without a branch (half the steps
unload, in no order a predictor can learn). Together -18 % per jaeger step against session 2's
kernel (bare kernels, same process); the store and prefetching were left as they were (a deeper
free-list prefetch measured nothing).

Input per call: the new total overlap delta > 0 and the tangential shift increment (dsx, dsy) in
the contact frame; the target elastic shift is S' = S_k + ds (the dispatcher handles separation).
"""

import math

from .._jit import njit
from . import state as S
from .store import PT_DELTA, PT_N, PT_PX, PT_PY, pop, push, remove_below

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
    """(p_x, p_y, slip, delta_below, N_below) of the top point `head` of a stack (origin if -1)."""
    if head >= 0:
        link = nxt[head]
        below = link >> 1
        if below >= 0:
            return pts[head, PT_PX], pts[head, PT_PY], (link & 1) == 1, pts[below, PT_DELTA], pts[below, PT_N]
        return pts[head, PT_PX], pts[head, PT_PY], (link & 1) == 1, 0.0, 0.0
    return 0.0, 0.0, False, 0.0, 0.0


@njit(_nrt=False, inline="always")
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance contact c to total overlap `delta` (> 0) by the shift increment (dsx, dsy).

    The caller guarantees at least one free point in the store; at most one is pushed."""
    if not (math.isfinite(dsx) and math.isfinite(dsy)):
        raise ValueError("jaeger.step: the shift increment (dsx, dsy) must be finite")
    kappa = prm[S.P_KAPPA]
    mu = prm[S.P_MU]
    n_new = prm[S.P_CN] * delta * math.sqrt(delta)
    # The row's state in locals, written back once at the end: stores into the history store
    # would otherwise force a reload of every row slot read after them (the compiler cannot
    # know that the arrays do not overlap).
    head = ist[c, S.I_HEAD]
    length = ist[c, S.I_LEN]
    dk = fs[c, S.F_DELTA]
    nk = fs[c, S.F_N]
    tx = fs[c, S.F_TX]
    ty = fs[c, S.F_TY]
    sx = fs[c, F_SX]
    sy = fs[c, F_SY]
    px = fs[c, F_PX]
    py = fs[c, F_PY]
    slip = fs[c, F_SLIP] != 0.0
    dl = fs[c, F_DLOW]
    nl = fs[c, F_NLOW]
    tgt_x = sx + dsx           # target elastic shift S'
    tgt_y = sy + dsy
    eta = EPS * kappa * mu * delta
    kind = S.KIND_ELASTIC
    append = False             # append a segment of slope (qx, qy), flag qslip, from the top to delta
    qx = 0.0
    qy = 0.0
    qslip = False

    # 3. Normal unloading: truncate the history at delta (dl of the origin is 0 < delta, so at
    # least one point survives once there is one).
    if dl >= delta:
        while dl >= delta:
            head = pop(pts, nxt, meta, head)
            length -= 1
            if head >= 0:
                sx -= kappa * px * (dk - dl)
                sy -= kappa * py * (dk - dl)
                tx -= px * (nk - nl)
                ty -= py * (nk - nl)
            else:
                # The origin is known exactly: do not keep the rounding residue of the subtraction.
                sx = 0.0
                sy = 0.0
                tx = 0.0
                ty = 0.0
            dk = dl
            nk = nl
            px, py, slip, dl, nl = _top_of(pts, nxt, head)
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
    # reach below ~1e-150 or above ~1e150 would lose range, so such a reach is compared plainly.
    if 1e-150 < reach < 1e150:
        inside = r2 <= reach * reach
    else:
        inside = math.sqrt(r2) <= reach
    if inside:
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
        inv_kappa = 1.0 / kappa
        while length > 0:
            if length == 1:
                slx = 0.0
                sly = 0.0
            else:
                slx = sx - kappa * px * (dk - dl)
                sly = sy - kappa * py * (dk - dl)
            wx = tgt_x - slx
            wy = tgt_y - sly
            w2 = wx * wx + wy * wy
            # The cone function at the lower end, h_low = reach_low - |w|, compared squared (no
            # square root on the slip path) where the squares keep their range.
            reach_low = kappa * mu * (delta - dl)
            if 1e-150 < reach_low < 1e150:
                superseded = (reach_low + eta) * (reach_low + eta) < w2            # h_low < -eta
                cut_below = superseded or reach_low <= eta or (reach_low - eta) * (reach_low - eta) <= w2
            else:
                h_low = reach_low - math.sqrt(w2)
                superseded = h_low < -eta
                cut_below = h_low <= eta
            if cut_below:
                # 5c (h_low < -eta: superseded) or 5d (a tie: the cut is at delta_{j-1}): remove point j
                head = pop(pts, nxt, meta, head)
                length -= 1
                if head >= 0:
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
                px, py, slip, dl, nl = _top_of(pts, nxt, head)
                if superseded:
                    continue
                break
            # 5e: the root lies inside the top segment; z measured from the upper end.
            d_j = delta - dk
            gx = (tgt_x - sx) * inv_kappa - px * d_j
            gy = (tgt_y - sy) * inv_kappa - py * d_j
            g2 = gx * gx + gy * gy
            if slip:
                a_coef = 0.0
            else:
                a_coef = mu * mu - (px * px + py * py)
                if a_coef < 0.0:
                    a_coef = 0.0
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
                head = pop(pts, nxt, meta, head)
                length -= 1
                if head >= 0:
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
                px, py, slip, dl, nl = _top_of(pts, nxt, head)
            elif x > 0.0:
                d_cut = dk - x
                n_cut = prm[S.P_CN] * d_cut * math.sqrt(d_cut)
                dn = nk - n_cut
                sx -= kappa * px * x
                sy -= kappa * py * x
                tx -= px * dn
                ty -= py * dn
                dk = d_cut
                nk = n_cut
                pts[head, PT_DELTA] = d_cut
                pts[head, PT_N] = n_cut
                # The slip segment from the root: S' - S(delta*) = kappa (g + p z) has length
                # kappa mu z there, so its slope mu u is p + g / z; no norm to take, and 1/z came
                # with z (the most common partial slip of a real DEM run ends here).
                qx = px + gx * inv_z
                qy = py + gy * inv_z
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
        dn = n_new - nk
        # The old top becomes the point below; the merge needs the one below it (kept in the row).
        bx = px
        by = py
        bslip = slip
        d2 = dl
        n2 = nl
        head = push(pts, nxt, meta, head, delta, n_new, qx, qy, qslip)
        length += 1
        dl = dk
        nl = nk
        sx = sx + kappa * qx * dd
        sy = sy + kappa * qy * dd
        tx = tx + qx * dn
        ty = ty + qy * dn
        dk = delta
        nk = n_new
        px = qx
        py = qy
        slip = qslip
        # 7. Exact merge of equal consecutive segments, and the xi-merge (section 7).
        xi_tol = prm[S.P_XI] * mu
        while length >= 2:
            if slip != bslip:
                break
            dp2 = (px - bx) * (px - bx) + (py - by) * (py - by)
            if not (dp2 <= (EPS_P * mu) * (EPS_P * mu)):
                if slip or not (dp2 < xi_tol * xi_tol):
                    break
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

    # Rounding guard: T is a sum of slopes |p_i| <= mu times positive force increments, but after
    # deep normal unloading it is recovered by subtractions from much larger forces.
    tmax = mu * n_new
    tn2 = tx * tx + ty * ty
    if tn2 > tmax * tmax:
        scale = tmax / math.sqrt(tn2)
        tx = tx * scale
        ty = ty * scale
    ist[c, S.I_HEAD] = head
    ist[c, S.I_LEN] = length
    fs[c, S.F_DELTA] = delta
    fs[c, S.F_N] = n_new
    fs[c, S.F_TX] = tx
    fs[c, S.F_TY] = ty
    fs[c, S.F_KIND] = kind
    fs[c, F_SX] = sx
    fs[c, F_SY] = sy
    fs[c, F_PX] = px
    fs[c, F_PY] = py
    fs[c, F_SLIP] = 1.0 if slip else 0.0
    fs[c, F_DLOW] = dl
    fs[c, F_NLOW] = nl

"""Tangential law 'jaeger': Jäger's exact Cattaneo–Mindlin–Deresiewicz force for arbitrary movements.

Implements shared/notes/jaeger-algorithm.md (sections 4, 5 and 7) on the lean storage of its
section 3: the HistoryStore keeps, per point i >= 1 of the equivalent load history, (delta_i, N_i,
p_i, slip_i); the contact row keeps everything about the top point k that a step needs, so that an
elastic step (by far the most common one) touches the row and at most one pushed point, and a small
slip touches the row, the top point and one pushed point. Shifts and forces at lower points are
recovered while descending: S_{i-1} = S_i - kappa p_i (delta_i - delta_{i-1}),
T_{i-1} = T_i - p_i (N_i - N_{i-1}).

Private slots of the contact row (shared slots: F_DELTA = delta_k, F_N = N_k, F_TX/F_TY = T_k):
    F_SX, F_SY   elastic shift S_k of the top point (displacement of the innermost stick zone)
    F_PX, F_PY   slope p_k of the top segment (copy of the store)
    F_SLIP       1.0 if the top segment is a slip segment (copy of the store's flag)
    F_DLOW       delta_{k-1}, overlap of the point below the top (0 for the origin)
    F_NLOW       N_{k-1}
A fresh or separated row (all zeros, I_HEAD = -1, I_LEN = 0) is the unloaded origin, point 0.

Speed (measured on DEM-like movements): every kernel here is compiled
with `_nrt=False` (it allocates nothing; with reference counting numba wraps each call in
increments/decrements of the six array arguments that its pruning cannot remove in these loops,
which made a call 4x slower), and the helpers are inlined at numba-IR level (`inline="always"`):
their calls pass ~50 scalars each and LLVM would not inline them (1.3-1.7x per call). The usual
outcome of the merge check reads nothing from the store (the caller passes the old top's data).
`step` itself is inlined into its callers too: the call boundary (six arrays passed field by field,
an error status checked on return) cost a fifth of an update (benchmarks/contact_kernel.py, energy
accounting off: 134 -> 112 ns on the synthetic mix, 111 -> 87 ns on the recorded biaxial trace).

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
def _load_top_from_store(fs, c, pts, nxt, head):
    """Refill the row's copy of the top point's slope and of the point below it from the store."""
    if head >= 0:
        fs[c, F_PX] = pts[head, PT_PX]
        fs[c, F_PY] = pts[head, PT_PY]
        fs[c, F_SLIP] = 1.0 if (nxt[head] & 1) == 1 else 0.0
        below = nxt[head] >> 1
        if below >= 0:
            fs[c, F_DLOW] = pts[below, PT_DELTA]
            fs[c, F_NLOW] = pts[below, PT_N]
        else:
            fs[c, F_DLOW] = 0.0
            fs[c, F_NLOW] = 0.0
    else:
        fs[c, F_PX] = 0.0
        fs[c, F_PY] = 0.0
        fs[c, F_SLIP] = 0.0
        fs[c, F_DLOW] = 0.0
        fs[c, F_NLOW] = 0.0


@njit(_nrt=False, inline="always")
def _pop_top(prm, fs, ist, c, pts, nxt, meta):
    """Remove the top point k; point k-1 becomes the top with its S and T recovered from point k."""
    kappa = prm[S.P_KAPPA]
    head = ist[c, S.I_HEAD]
    dk = fs[c, S.F_DELTA]
    nk = fs[c, S.F_N]
    dl = fs[c, F_DLOW]
    nl = fs[c, F_NLOW]
    px = fs[c, F_PX]
    py = fs[c, F_PY]
    head = pop(pts, nxt, meta, head)
    ist[c, S.I_HEAD] = head
    ist[c, S.I_LEN] -= 1
    fs[c, S.F_DELTA] = dl
    fs[c, S.F_N] = nl
    if head >= 0:
        fs[c, F_SX] -= kappa * px * (dk - dl)
        fs[c, F_SY] -= kappa * py * (dk - dl)
        fs[c, S.F_TX] -= px * (nk - nl)
        fs[c, S.F_TY] -= py * (nk - nl)
    else:
        # The origin is known exactly: do not keep the rounding residue of the subtraction.
        fs[c, F_SX] = 0.0
        fs[c, F_SY] = 0.0
        fs[c, S.F_TX] = 0.0
        fs[c, S.F_TY] = 0.0
    _load_top_from_store(fs, c, pts, nxt, head)


@njit(_nrt=False, inline="always")
def _push_top(fs, ist, c, pts, nxt, meta, delta, n_new, px, py, slip, sx, sy, tx, ty):
    """Append a point on top (the old top becomes the point below)."""
    head = push(pts, nxt, meta, ist[c, S.I_HEAD], delta, n_new, px, py, slip)
    ist[c, S.I_HEAD] = head
    ist[c, S.I_LEN] += 1
    fs[c, F_DLOW] = fs[c, S.F_DELTA]
    fs[c, F_NLOW] = fs[c, S.F_N]
    fs[c, S.F_DELTA] = delta
    fs[c, S.F_N] = n_new
    fs[c, F_PX] = px
    fs[c, F_PY] = py
    fs[c, F_SLIP] = 1.0 if slip else 0.0
    fs[c, F_SX] = sx
    fs[c, F_SY] = sy
    fs[c, S.F_TX] = tx
    fs[c, S.F_TY] = ty


@njit(_nrt=False, inline="always")
def _move_top_down(fs, ist, c, pts, kappa, delta_new, n_new):
    """Move the top point down its own segment to delta_new (slope and slip flag unchanged)."""
    x = fs[c, S.F_DELTA] - delta_new
    dn = fs[c, S.F_N] - n_new
    px = fs[c, F_PX]
    py = fs[c, F_PY]
    fs[c, F_SX] -= kappa * px * x
    fs[c, F_SY] -= kappa * py * x
    fs[c, S.F_TX] -= px * dn
    fs[c, S.F_TY] -= py * dn
    fs[c, S.F_DELTA] = delta_new
    fs[c, S.F_N] = n_new
    head = ist[c, S.I_HEAD]
    pts[head, PT_DELTA] = delta_new
    pts[head, PT_N] = n_new


@njit(_nrt=False, inline="always")
def _merge(prm, fs, ist, c, pts, nxt, meta, bx, by, bslip, d2, n2):
    """Section 4 step 7 (exact merge of equal consecutive segments) and section 7 (xi-merge).

    (bx, by, bslip) are the slope and slip flag of point k-1 and (d2, n2) the overlap and force of
    point k-2: the caller has them in the row from before its push, so the usual outcome (nothing
    to merge) reads nothing from the store."""
    mu = prm[S.P_MU]
    kappa = prm[S.P_KAPPA]
    xi_tol = prm[S.P_XI] * mu
    while ist[c, S.I_LEN] >= 2:
        slip_top = fs[c, F_SLIP] != 0.0
        if slip_top != bslip:
            return
        px = fs[c, F_PX]
        py = fs[c, F_PY]
        dp = math.sqrt((px - bx) * (px - bx) + (py - by) * (py - by))
        if not (dp <= EPS_P * mu):
            if slip_top or not (dp < xi_tol):
                return
            # xi-merge of two elastic segments: the force-weighted slope keeps every stored T_i
            # and T_k; the elastic shift is re-derived from S_{k-2} (the difference is a tiny
            # artificial slip).
            dk = fs[c, S.F_DELTA]
            d1 = fs[c, F_DLOW]
            dn_top = fs[c, S.F_N] - fs[c, F_NLOW]
            dn_low = fs[c, F_NLOW] - n2
            wsum = dn_top + dn_low
            if wsum > 0.0:
                qx = (bx * dn_low + px * dn_top) / wsum
                qy = (by * dn_low + py * dn_top) / wsum
            else:
                qx = px
                qy = py
            if ist[c, S.I_LEN] > 2:
                s2x = fs[c, F_SX] - kappa * (px * (dk - d1) + bx * (d1 - d2))
                s2y = fs[c, F_SY] - kappa * (py * (dk - d1) + by * (d1 - d2))
            else:
                s2x = 0.0
                s2y = 0.0
            fs[c, F_SX] = s2x + kappa * qx * (dk - d2)
            fs[c, F_SY] = s2y + kappa * qy * (dk - d2)
            fs[c, F_PX] = qx
            fs[c, F_PY] = qy
            head = ist[c, S.I_HEAD]
            pts[head, PT_PX] = qx
            pts[head, PT_PY] = qy
        # Remove point k-1: the top now starts at point k-2.
        head = ist[c, S.I_HEAD]
        remove_below(pts, nxt, meta, head)
        ist[c, S.I_LEN] -= 1
        fs[c, F_DLOW] = d2
        fs[c, F_NLOW] = n2
        if ist[c, S.I_LEN] < 2:
            return
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


@njit(_nrt=False, inline="always")
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance contact c to total overlap `delta` (> 0) by the shift increment (dsx, dsy).

    The caller guarantees at least one free point in the store; at most one is pushed."""
    if not (math.isfinite(dsx) and math.isfinite(dsy)):
        raise ValueError("jaeger.step: the shift increment (dsx, dsy) must be finite")
    kappa = prm[S.P_KAPPA]
    mu = prm[S.P_MU]
    n_new = prm[S.P_CN] * delta * math.sqrt(delta)
    tgt_x = fs[c, F_SX] + dsx           # target elastic shift S'
    tgt_y = fs[c, F_SY] + dsy
    eta = EPS * kappa * mu * delta
    kind = S.KIND_ELASTIC

    # 3. Normal unloading: truncate the history at delta (F_DLOW of the origin is 0 < delta, so
    # at least one point survives once there is one).
    if delta < fs[c, S.F_DELTA]:
        while fs[c, F_DLOW] >= delta:
            _pop_top(prm, fs, ist, c, pts, nxt, meta)
        if fs[c, S.F_DELTA] > delta:
            _move_top_down(fs, ist, c, pts, kappa, delta, n_new)

    # 4. Elastic test at the top.
    d_adv = delta - fs[c, S.F_DELTA]
    rx = tgt_x - fs[c, F_SX]
    ry = tgt_y - fs[c, F_SY]
    rn = math.sqrt(rx * rx + ry * ry)
    if rn <= kappa * mu * d_adv + eta:
        if d_adv > EPS * delta:
            # 4a: one new segment straight to the target.
            inv = 1.0 / (kappa * d_adv)
            px = rx * inv
            py = ry * inv
            pn = rn * inv
            slip = False
            # A slope within EPS_P of the cone is a slip segment: left elastic, its A = mu^2 - |p|^2
            # would be rounding noise, and the cut inside it (5e) noise too (section 5).
            if pn >= mu * (1.0 - EPS_P):
                if pn > 0.0:
                    px *= mu / pn
                    py *= mu / pn
                slip = True
            dn = n_new - fs[c, S.F_N]
            bx, by, bslip = fs[c, F_PX], fs[c, F_PY], fs[c, F_SLIP] != 0.0
            d2, n2 = fs[c, F_DLOW], fs[c, F_NLOW]
            _push_top(fs, ist, c, pts, nxt, meta, delta, n_new, px, py, slip,
                      fs[c, F_SX] + kappa * px * d_adv, fs[c, F_SY] + kappa * py * d_adv,
                      fs[c, S.F_TX] + px * dn, fs[c, S.F_TY] + py * dn)
            _merge(prm, fs, ist, c, pts, nxt, meta, bx, by, bslip, d2, n2)
        else:
            # 4b: no normal advance worth a segment; absorb the (<= eta) shift difference.
            if d_adv > 0.0:
                dn = n_new - fs[c, S.F_N]
                fs[c, S.F_TX] += fs[c, F_PX] * dn
                fs[c, S.F_TY] += fs[c, F_PY] * dn
                fs[c, S.F_DELTA] = delta
                fs[c, S.F_N] = n_new
                head = ist[c, S.I_HEAD]
                pts[head, PT_DELTA] = delta
                pts[head, PT_N] = n_new
            fs[c, F_SX] = tgt_x
            fs[c, F_SY] = tgt_y
    else:
        # 5. Slip: cut the history back to the root delta* of the cone function.
        while True:
            if ist[c, S.I_LEN] == 0:
                break
            dk = fs[c, S.F_DELTA]
            dl = fs[c, F_DLOW]
            px = fs[c, F_PX]
            py = fs[c, F_PY]
            if ist[c, S.I_LEN] == 1:
                slx = 0.0
                sly = 0.0
            else:
                slx = fs[c, F_SX] - kappa * px * (dk - dl)
                sly = fs[c, F_SY] - kappa * py * (dk - dl)
            wx = tgt_x - slx
            wy = tgt_y - sly
            h_low = kappa * mu * (delta - dl) - math.sqrt(wx * wx + wy * wy)
            if h_low < -eta:
                _pop_top(prm, fs, ist, c, pts, nxt, meta)        # 5c: superseded
                continue
            if h_low <= eta:
                _pop_top(prm, fs, ist, c, pts, nxt, meta)        # 5d: cut at delta_{j-1}
                break
            # 5e: the root lies inside the top segment; z measured from the upper end.
            d_j = delta - dk
            gx = (tgt_x - fs[c, F_SX]) / kappa - px * d_j
            gy = (tgt_y - fs[c, F_SY]) / kappa - py * d_j
            g2 = gx * gx + gy * gy
            if fs[c, F_SLIP] != 0.0:
                a_coef = 0.0
            else:
                a_coef = mu * mu - (px * px + py * py)
                if a_coef < 0.0:
                    a_coef = 0.0
            g_dot = gx * px + gy * py
            q = math.sqrt(g_dot * g_dot + a_coef * g2)
            if g_dot < 0.0:
                z = g2 / (q - g_dot)
            elif a_coef > 0.0:
                z = (g_dot + q) / a_coef
            else:
                z = math.inf
            x = z - d_j
            if x >= dk - dl:
                _pop_top(prm, fs, ist, c, pts, nxt, meta)
            elif x > 0.0:
                d_cut = dk - x
                _move_top_down(fs, ist, c, pts, kappa, d_cut, prm[S.P_CN] * d_cut * math.sqrt(d_cut))
            break
        # Append the slip segment from the top t towards the target (section 4, end of step 5;
        # with t the origin this is gross sliding, step 6).
        kind = S.KIND_GROSS_SLIDING if ist[c, S.I_LEN] == 0 else S.KIND_PARTIAL_SLIP
        d_t = fs[c, S.F_DELTA]
        if delta > d_t:
            wx = tgt_x - fs[c, F_SX]
            wy = tgt_y - fs[c, F_SY]
            wn = math.sqrt(wx * wx + wy * wy)
            if wn == math.inf:
                wn = math.hypot(wx, wy)      # an absurdly large shift must not lose its direction
            if wn > 0.0:
                px = mu * wx / wn
                py = mu * wy / wn
                slip = True
            else:
                px = 0.0
                py = 0.0
                slip = False
            dd = delta - d_t
            dn = n_new - fs[c, S.F_N]
            bx, by, bslip = fs[c, F_PX], fs[c, F_PY], fs[c, F_SLIP] != 0.0
            d2, n2 = fs[c, F_DLOW], fs[c, F_NLOW]
            _push_top(fs, ist, c, pts, nxt, meta, delta, n_new, px, py, slip,
                      fs[c, F_SX] + kappa * px * dd, fs[c, F_SY] + kappa * py * dd,
                      fs[c, S.F_TX] + px * dn, fs[c, S.F_TY] + py * dn)
            _merge(prm, fs, ist, c, pts, nxt, meta, bx, by, bslip, d2, n2)
        else:
            fs[c, F_SX] = tgt_x
            fs[c, F_SY] = tgt_y

    # Rounding guard: T is a sum of slopes |p_i| <= mu times positive force increments, but after
    # deep normal unloading it is recovered by subtractions from much larger forces.
    tx = fs[c, S.F_TX]
    ty = fs[c, S.F_TY]
    tmax = mu * n_new
    tn2 = tx * tx + ty * ty
    if tn2 > tmax * tmax:
        scale = tmax / math.sqrt(tn2)
        fs[c, S.F_TX] = tx * scale
        fs[c, S.F_TY] = ty * scale
    fs[c, S.F_DELTA] = delta
    fs[c, S.F_N] = n_new
    fs[c, S.F_KIND] = kind

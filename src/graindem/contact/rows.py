"""One contact row seen by a force pass: its parameter record, its frame turn, its law step and
its rolling/twisting moments.

Shared by the pair pass and the wall pass, which differ only in how they find the row's geometry.
"""

import math

from .._jit import njit
from ..contact import jaeger, linear, md_incremental, mindlin
from ..contact import state as S
from ..contact.frames import frame_init
from ..contact.laws import contact_step
from ..contact.rolling import contact_moment
from ..core.layout import PK_CN, PK_RSTAR, PRM_PAIR
from ..core.rotations import quat_mul


# The force loops take one of these as an argument and inline it (numba inlines a call through an
# argument bound to a global njit function), so that each law's loop is compiled with that law
# alone. Not a constant law id with one branch per law: numba types and lowers every branch before
# LLVM folds the dead ones, which makes the cold compile about five times longer (~310 s, not ~60 s).
# Inlined rather than called: as a call, its ~80 scalar arguments (every array goes as its fields)
# cost a fifth to a quarter of the jaeger step on packing_4000 (benchmarks/vs_lammps.py).
# With `energy` each goes through laws.contact_step, which also integrates the tangential work and
# frictional dissipation (F_WORK, F_DISS); without, straight to the law, which skips that
# bookkeeping (mindlin measured 37 ns per call against 450 ns). `law`: the run-time id (ictl), for
# contact_step: a literal constant there would make numba compile contact_step once per law (~20 s each).
@njit(_nrt=False, inline="always")
def step_linear(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        linear.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def step_mindlin(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        mindlin.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def step_md_incremental(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        md_incremental.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def step_jaeger(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        jaeger.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


# Walls: few contacts, so jaeger's is called rather than inlined (each inlined copy of jaeger.step
# costs ~25-50 s of compilation; the call ~15 ns).
@njit(_nrt=False, inline="always")
def step_jaeger_outlined(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        jaeger.step_outlined(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def load_prm(prm, mtab, p, pk, row):
    """The row's pair record into prm: the material pair's record (only when it changes from the
    last row's) and the row's own R* and Hertz coefficient."""
    if p != prm[PRM_PAIR]:
        for f in range(S.N_PARAM):
            prm[f] = mtab[p, f]
        prm[PRM_PAIR] = p
    prm[S.P_RSTAR] = pk[row, PK_RSTAR]
    prm[S.P_CN] = pk[row, PK_CN]


@njit(_nrt=False, inline="always")
def turn_frame(cq, c, nx, ny, nz, spin_x, spin_y, spin_z, dt, one_product_fewer):
    """frames.frame_update in fewer operations, the same rotation in exact arithmetic; returns the
    new quaternion.

    The tilt from the old normal o to n is t = s (1 + o.n, o x n) with s = 1/|o + n| =
    1/sqrt(2 (1 + o.n)) for unit o, n: one square root both normalises it and projects the spin on
    the mid normal. The twirl is r = (cos h, sin h n). With `one_product_fewer` (a compile-time
    constant) r t is multiplied out, using n.(o x n) = 0 and n x (o x n) = o - (o.n) n, as
    s (cos h (1 + o.n), cos h (o x n) + sin h (o + n)): the frame update on packing_4000 25 -> 19 ns
    per contact. The sheared cell's pass forms r t as a quaternion product instead, which keeps its
    results those of the checkpoints written with it (either form restarts bit for bit in a new
    process since graindem._jit gives every kernel one compiled copy; the cache determinism test
    holds them to it). The new frame (r t) q,
    unit up to rounding, gets one Newton step 1/|q| ~ (3 - |q|^2)/2 (exact to O(eps^2)), so q keeps
    unit length as with the full normalisation."""
    w = cq[c, 0]
    x = cq[c, 1]
    y = cq[c, 2]
    z = cq[c, 3]
    ox = 2.0 * (x * z + w * y)
    oy = 2.0 * (y * z - w * x)
    oz = 1.0 - 2.0 * (x * x + y * y)
    tw = 1.0 + ox * nx + oy * ny + oz * nz
    if tw < 1e-12:
        # the normal flipped within one step: no rigid motion does that, start a fresh frame
        frame_init(cq, c, nx, ny, nz)
        return cq[c, 0], cq[c, 1], cq[c, 2], cq[c, 3]
    s = 1.0 / math.sqrt(2.0 * tw)
    px = ox + nx
    py = oy + ny
    pz = oz + nz
    h = 0.5 * (spin_x * px + spin_y * py + spin_z * pz) * dt * s
    h2 = h * h
    if h2 < 1e-6:
        # a DEM step turns a contact by far less than a milliradian: Taylor terms to round-off
        cw = 1.0 - 0.5 * h2 * (1.0 - h2 / 12.0)
        sw = h * (1.0 - h2 / 6.0 * (1.0 - h2 / 20.0))
    else:
        cw = math.cos(h)
        sw = math.sin(h)
    if one_product_fewer:
        cs = cw * s
        ss = sw * s
        aw = cs * tw
        ax = cs * (oy * nz - oz * ny) + ss * px
        ay = cs * (oz * nx - ox * nz) + ss * py
        az = cs * (ox * ny - oy * nx) + ss * pz
    else:
        aw, ax, ay, az = quat_mul(cw, sw * nx, sw * ny, sw * nz, tw * s, (oy * nz - oz * ny) * s,
                                  (oz * nx - ox * nz) * s, (ox * ny - oy * nx) * s)
    w, x, y, z = quat_mul(aw, ax, ay, az, w, x, y, z)
    g = 1.5 - 0.5 * (w * w + x * x + y * y + z * z)
    w *= g
    x *= g
    y *= g
    z *= g
    cq[c, 0] = w
    cq[c, 1] = x
    cq[c, 2] = y
    cq[c, 3] = z
    return w, x, y, z


@njit(_nrt=False, inline="always")
def rolling_moments(omega, mass, inertia, radius, mtab, rtab, step, dt, fs, cq, pk, pm, rs, torque, i, j, c):
    """The rolling and twisting moments (contact.rolling.contact_moment) of touching row c of
    particles i and j (j < 0: a wall, at rest and of infinite inertia), added to the torques; the
    row's overlap, normal force and frame are those the force pass has just computed."""
    p = pm[c]
    rstar = pk[c, PK_RSTAR]
    a = math.sqrt(rstar * fs[c, S.F_DELTA])
    k_t = mtab[p, S.P_KTLIN] if mtab[p, S.P_KTLIN] > 0.0 else mtab[p, S.P_KTC] * a
    ii = inertia[i]
    ir = ii + mass[i] * radius[i] * radius[i]
    if j >= 0:
        wx = omega[j, 0] - omega[i, 0]
        wy = omega[j, 1] - omega[i, 1]
        wz = omega[j, 2] - omega[i, 2]
        ij = inertia[j]
        jr = ij + mass[j] * radius[j] * radius[j]
        ii = ii * ij / (ii + ij)
        ir = ir * jr / (ir + jr)
    else:
        wx = -omega[i, 0]
        wy = -omega[i, 1]
        wz = -omega[i, 2]
    mx, my, mz = contact_moment(rs, c, rtab[p], step, dt, cq[c, 0], cq[c, 1], cq[c, 2], cq[c, 3], wx, wy, wz,
                                fs[c, S.F_N], a, mtab[p, S.P_KNC] * a, k_t, mtab[p, S.P_MU], rstar, ir, ii)
    torque[i, 0] -= mx
    torque[i, 1] -= my
    torque[i, 2] -= mz
    if j >= 0:
        torque[j, 0] += mx
        torque[j, 1] += my
        torque[j, 2] += mz

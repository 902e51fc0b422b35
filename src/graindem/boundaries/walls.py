"""Plane walls: the wall pass over the candidate (sphere, wall) rows.

A wall is a plane through a point with an inward unit normal, moving with a prescribed velocity.
Its contacts use the same laws, parameter records and history store as sphere pairs (the wall is a
body of infinite radius and mass); the force on each wall is summed for force/stress control.
"""

import math

from .._jit import njit
from ..contact import state as S
from ..contact.frames import frame_init
from ..contact.laws import JAEGER, MD_INCREMENTAL, MINDLIN, contact_step, separate
from ..contact.rows import (load_prm, step_jaeger_outlined, step_linear, step_md_incremental, step_mindlin,
                            turn_frame)
from ..core.layout import (ACC_STRESS, ACC_VISC_WORK, ACC_WALL, CTL_DT, CTL_VISC, ICTL_ENERGY, ICTL_LAW,
                           ICTL_NWALLS, ICTL_NWCAND, OUT_CI, OUT_CJ, PK_DAMP, PK_LIMIT)
from ..core.rotations import quat_rotate


@njit(_nrt=False, inline="always")
def _wall_pass(law_step, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
               wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    """Body of wall_forces with the law's step inlined (one compiled pass per law)."""
    law = ictl[ICTL_LAW]
    energy = ictl[ICTL_ENERGY] != 0
    dt = ctl[CTL_DT]
    visc = ctl[CTL_VISC]
    nw = ictl[ICTL_NWALLS]
    for w in range(nw):
        acc[ACC_WALL + 3 * w] = 0.0
        acc[ACC_WALL + 3 * w + 1] = 0.0
        acc[ACC_WALL + 3 * w + 2] = 0.0
    # the sums in locals (acc may alias the other arrays as far as the compiler knows, so sums
    # kept in acc[] are loaded and stored for every contact), continuing from the pair sums in
    # the same order as before
    s00 = acc[ACC_STRESS + 0]
    s01 = acc[ACC_STRESS + 1]
    s02 = acc[ACC_STRESS + 2]
    s10 = acc[ACC_STRESS + 3]
    s11 = acc[ACC_STRESS + 4]
    s12 = acc[ACC_STRESS + 5]
    s20 = acc[ACC_STRESS + 6]
    s21 = acc[ACC_STRESS + 7]
    s22 = acc[ACC_STRESS + 8]
    visc_work = acc[ACC_VISC_WORK]
    # i = key // nw by a float product (an int64 division per candidate sits on the path to every
    # load of the row, at tens of cycles): (c + 1/2) / nw lies at least 1/(2 nw) from an integer,
    # far beyond the product's rounding error for any row count an array can hold
    inv_nw = 1.0 / nw if nw > 0 else 0.0
    for c in range(ictl[ICTL_NWCAND]):
        key = wcand[c]
        i = int((key + 0.5) * inv_nw)
        w = key - i * nw
        ri = radius[i]
        nx = -walls[w, 3]
        ny = -walls[w, 4]
        nz = -walls[w, 5]
        h = -((pos[i, 0] - walls[w, 0]) * nx + (pos[i, 1] - walls[w, 1]) * ny + (pos[i, 2] - walls[w, 2]) * nz)
        delta = ri - h
        was = wfs[c, S.F_DELTA] > 0.0
        if delta <= 0.0:
            if was or wist[c, S.I_HEAD] >= 0:
                if energy:
                    load_prm(prm, mtab, wm[c], wk, c)
                    contact_step(law, prm, wfs, wist, c, delta, 0.0, 0.0, pts, nxt, meta)
                else:
                    separate(wfs, wist, c, pts, nxt, meta)
            continue
        if not (delta < wk[c, PK_LIMIT]):
            out[OUT_CI] = i
            out[OUT_CJ] = -1 - w
            return False
        # velocity of the wall's contact point relative to the particle's (lever h along n)
        ax = h * (omega[i, 1] * nz - omega[i, 2] * ny)
        ay = h * (omega[i, 2] * nx - omega[i, 0] * nz)
        az = h * (omega[i, 0] * ny - omega[i, 1] * nx)
        vx = walls[w, 6] - vel[i, 0] - ax
        vy = walls[w, 7] - vel[i, 1] - ay
        vz = walls[w, 8] - vel[i, 2] - az
        vn = vx * nx + vy * ny + vz * nz
        if was:
            qw, qx, qy, qz = turn_frame(wcq, c, nx, ny, nz, 0.5 * omega[i, 0], 0.5 * omega[i, 1],
                                        0.5 * omega[i, 2], dt, True)
            dsx, dsy, _ = quat_rotate(qw, -qx, -qy, -qz, (vx - vn * nx) * dt, (vy - vn * ny) * dt,
                                      (vz - vn * nz) * dt)
        else:
            frame_init(wcq, c, nx, ny, nz)
            qw = wcq[c, 0]
            qx = wcq[c, 1]
            qy = wcq[c, 2]
            qz = wcq[c, 3]
            dsx = 0.0
            dsy = 0.0
        load_prm(prm, mtab, wm[c], wk, c)
        law_step(law, energy, prm, wfs, wist, c, delta, dsx, dsy, pts, nxt, meta)
        fn = wfs[c, S.F_N]
        if visc > 0.0:
            fd = -wk[c, PK_DAMP] * math.sqrt(math.sqrt(delta)) * vn
            fn += fd
            visc_work -= fd * vn * dt
        Tx, Ty, Tz = quat_rotate(qw, qx, qy, qz, wfs[c, S.F_TX], wfs[c, S.F_TY], 0.0)
        fx = fn * nx - Tx
        fy = fn * ny - Ty
        fz = fn * nz - Tz
        force[i, 0] -= fx
        force[i, 1] -= fy
        force[i, 2] -= fz
        torque[i, 0] -= h * (ny * fz - nz * fy)
        torque[i, 1] -= h * (nz * fx - nx * fz)
        torque[i, 2] -= h * (nx * fy - ny * fx)
        acc[ACC_WALL + 3 * w] += fx
        acc[ACC_WALL + 3 * w + 1] += fy
        acc[ACC_WALL + 3 * w + 2] += fz
        s00 += fx * h * nx
        s01 += fx * h * ny
        s02 += fx * h * nz
        s10 += fy * h * nx
        s11 += fy * h * ny
        s12 += fy * h * nz
        s20 += fz * h * nx
        s21 += fz * h * ny
        s22 += fz * h * nz
    acc[ACC_STRESS + 0] = s00
    acc[ACC_STRESS + 1] = s01
    acc[ACC_STRESS + 2] = s02
    acc[ACC_STRESS + 3] = s10
    acc[ACC_STRESS + 4] = s11
    acc[ACC_STRESS + 5] = s12
    acc[ACC_STRESS + 6] = s20
    acc[ACC_STRESS + 7] = s21
    acc[ACC_STRESS + 8] = s22
    acc[ACC_VISC_WORK] = visc_work
    return True


# One wall pass per law, each inlining only its own law (fastmath flags as everywhere: see
# _pair_kinematics_sheared).
@njit(_nrt=False)
def _wall_pass_linear(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(step_linear, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def _wall_pass_mindlin(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                       wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(step_mindlin, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def _wall_pass_md_incremental(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                              wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(step_md_incremental, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def _wall_pass_jaeger(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(step_jaeger_outlined, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def wall_forces(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    """Contacts of every particle with every rigid plane wall; returns False on divergence.

    walls rows: point (3), inward unit normal m (3), velocity (3), ... The contact normal points from
    the particle to the wall (n = -m) and the force acts on the wall's plane, at h = r - delta
    from the centre (the sphere takes the whole deformation against a rigid plane).

    Contact rows are the candidates only, packed at the front (see core.layout). Why not one row
    per (particle, wall), row i * n_walls + w: packing_4000's ~900 candidates would spread over
    20 000 rows (2.6 MB of wfs alone), every candidate would miss the cache and the rows would push
    the pair passes' data out of L2 (wall pass 81-87 against 61-62 us per step, whole step 666-720
    against 623-637 us, mindlin). Schema-1 checkpoints without meta["wall_rows"] == "candidates" hold
    that dense layout; Simulation.from_state converts them.
    """
    law = ictl[ICTL_LAW]
    if law == MINDLIN:
        return _wall_pass_mindlin(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                                  wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)
    if law == JAEGER:
        return _wall_pass_jaeger(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                                 wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)
    if law == MD_INCREMENTAL:
        return _wall_pass_md_incremental(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls,
                                         wcand, wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)
    return _wall_pass_linear(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                             wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)

"""Plane walls: the wall pass over the candidate (sphere, wall) rows.

A wall is a plane through a point with an inward unit normal, moving with a prescribed velocity.
Its contacts use the same laws, parameter records and history store as sphere pairs (the wall is a
body of infinite radius and mass). The force on each wall (which the wall's work reads) and the
contacts' share of the stress sum are summed exactly (core.exact_sum), as the pair pass sums its
stress: so they do not depend on the order of the rows, and an MPI run whose ranks hold the rows of
their own spheres adds the ranks' accumulators and gets the serial sums bit for bit.
"""

import math

from .._jit import njit
from ..contact import state as S
from ..contact.frames import frame_init
from ..contact.laws import JAEGER, MD_INCREMENTAL, MINDLIN, contact_step, separate
from ..contact.rows import (load_prm, step_jaeger_outlined, step_linear, step_md_incremental, step_mindlin,
                            turn_frame)
from ..core.exact_sum import exact_add, exact_value
from ..core.layout import (ACC_STRESS, ACC_WALL, CTL_DT, CTL_VISC, ICTL_ENERGY, ICTL_LAW, ICTL_NWALLS,
                           ICTL_NWCAND, LIMB_VISC_WORK, OUT_CI, OUT_CJ, PK_DAMP, PK_LIMIT)
from ..core.rotations import quat_rotate


@njit(_nrt=False, inline="always")
def _wall_pass(law_step, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
               wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want):
    """Body of wall_forces with the law's step inlined (one compiled pass per law)."""
    law = ictl[ICTL_LAW]
    energy = ictl[ICTL_ENERGY] != 0
    dt = ctl[CTL_DT]
    visc = ctl[CTL_VISC]
    nw = ictl[ICTL_NWALLS]
    for r in range(3 * nw):
        for k in range(wall_limbs.shape[1]):
            wall_limbs[r, k] = 0
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = want[0], want[1], want[2], want[3], want[4], want[5], want[6], want[7], want[8]
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
            # added to the pair pass's exact sum of the step's viscous work (pair_pass.viscous_work_sum)
            exact_add(limbs, LIMB_VISC_WORK, -fd * vn * dt)
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
        exact_add(wall_limbs, 3 * w, fx)
        exact_add(wall_limbs, 3 * w + 1, fy)
        exact_add(wall_limbs, 3 * w + 2, fz)
        # the contact's share of the stress sum, f (x) l with l = h n (pair_pass.stress_sum's terms)
        lx = h * nx
        ly = h * ny
        lz = h * nz
        if w0:
            exact_add(limbs, 0, fx * lx)
        if w1:
            exact_add(limbs, 1, fx * ly)
        if w2:
            exact_add(limbs, 2, fx * lz)
        if w3:
            exact_add(limbs, 3, fy * lx)
        if w4:
            exact_add(limbs, 4, fy * ly)
        if w5:
            exact_add(limbs, 5, fy * lz)
        if w6:
            exact_add(limbs, 6, fz * lx)
        if w7:
            exact_add(limbs, 7, fz * ly)
        if w8:
            exact_add(limbs, 8, fz * lz)
    for r in range(3 * nw):
        acc[ACC_WALL + r] = exact_value(wall_limbs, r)
    for k in range(9):
        if want[k]:
            acc[ACC_STRESS + k] = exact_value(limbs, k)
    return True


# One wall pass per law, each inlining only its own law (fastmath flags as everywhere: see
# _pair_kinematics_sheared).
@njit(_nrt=False)
def _wall_pass_linear(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want):
    return _wall_pass(step_linear, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)


@njit(_nrt=False)
def _wall_pass_mindlin(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                       wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want):
    return _wall_pass(step_mindlin, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)


@njit(_nrt=False)
def _wall_pass_md_incremental(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                              wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want):
    return _wall_pass(step_md_incremental, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)


@njit(_nrt=False)
def _wall_pass_jaeger(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want):
    return _wall_pass(step_jaeger_outlined, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)


@njit(_nrt=False)
def wall_forces(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want):
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

    Sums: each wall's force (acc[ACC_WALL + 3 w:+3], the particles' force on it) exactly in
    wall_limbs (3 n_walls rows of core.exact_sum limbs, zeroed here, left holding the sums); the
    contacts' share of the stress sum added exactly into limbs (the pair pass's accumulator,
    pair_pass.stress_sum) for the components marked in want (9,), whose values in acc are then
    rounded afresh; the others keep theirs, as the pair pass leaves them.
    """
    law = ictl[ICTL_LAW]
    if law == MINDLIN:
        return _wall_pass_mindlin(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                                  wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)
    if law == JAEGER:
        return _wall_pass_jaeger(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                                 wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)
    if law == MD_INCREMENTAL:
        return _wall_pass_md_incremental(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls,
                                         wcand, wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs,
                                         want)
    return _wall_pass_linear(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                             wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, limbs, wall_limbs, want)

"""Plane walls: their rows, the servo that drives a wall by a force, and the wall pass over the
candidate (sphere, wall) rows.

A wall is a plane through a point with an inward unit normal, moving with a prescribed velocity,
or along its normal under a servo on the force the grains exert on it (servo_wall_velocity).
Its contacts use the same laws, parameter records and history store as sphere pairs (the wall is a
body of infinite radius and mass). The force on each wall (which the wall's work reads) and the
contacts' share of the stress sum are summed exactly (core.exact_sum), as the pair pass sums its
stress: so they do not depend on the order of the rows, and an MPI run whose ranks hold the rows of
their own spheres adds the ranks' accumulators and gets the serial sums bit for bit.
"""

import math

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.frames import frame_init
from ..contact.laws import JAEGER, MD_INCREMENTAL, MINDLIN, contact_step, separate
from ..contact.rows import (load_prm, step_jaeger_outlined, step_linear, step_md_incremental, step_mindlin,
                            turn_frame)
from ..core.exact_sum import exact_add, exact_add_outer, exact_value
from ..core.layout import (N_WALL, N_WALL_PRESCRIBED, WALL_BUILD, WALL_GAIN, WALL_MAX_SPEED, WALL_MODE,
                           WALL_NORMAL, WALL_POINT, WALL_PRESCRIBED, WALL_SERVO, WALL_TANGENT_VEL, WALL_TARGET,
                           WALL_VEL, ACC_STRESS, ACC_WALL, CTL_DT, CTL_VISC, ICTL_ENERGY, ICTL_LAW, ICTL_NWALLS,
                           ICTL_NWCAND, LIMB_VISC_WORK, OUT_CI, OUT_CJ, PK_DAMP, PK_LIMIT)
from ..core.checks import positive_finite, vec3
from ..core.rotations import quat_rotate

# the wall row's columns live with the other flat-array layouts (core.layout), which the contact
# kernels may import
__all__ = ["wall_row", "servo_columns", "wall_rows", "servo_wall_velocity", "servo_walls", "follow_servo_walls",
           "wall_forces", "N_WALL", "N_WALL_PRESCRIBED", "WALL_BUILD", "WALL_GAIN", "WALL_MAX_SPEED", "WALL_MODE",
           "WALL_NORMAL", "WALL_POINT", "WALL_PRESCRIBED", "WALL_SERVO", "WALL_TANGENT_VEL", "WALL_TARGET",
           "WALL_VEL"]


def wall_row(point, normal, velocity=(0.0, 0.0, 0.0)):
    """A wall moving at a prescribed `velocity` (checked)."""
    p = vec3("point", point)
    n = vec3("normal", normal)
    ln = np.linalg.norm(n)
    if ln == 0.0:
        raise ValueError("normal must be a nonzero vector")
    row = np.zeros(N_WALL)
    row[WALL_POINT:WALL_POINT + 3] = p
    row[WALL_NORMAL:WALL_NORMAL + 3] = n / ln
    row[WALL_VEL:WALL_VEL + 3] = vec3("velocity", velocity)
    row[WALL_BUILD:WALL_BUILD + 3] = p
    return row


def servo_columns(row, force=None, stress=None, area=None, servo_gain=None, max_speed=None):
    """Put `row` (a wall row) under the servo: checked parameters into its servo columns, its velocity's
    normal part cleared (the servo sets it). `force` (N, >= 0): the target normal force the grains
    press the wall with; or `stress` (Pa, >= 0) on `area` (m^2, > 0): the target force stress x area.
    `servo_gain` (m/(N s), > 0), `max_speed` (m/s, > 0). With neither force nor stress the row
    moves at its prescribed velocity (WALL_PRESCRIBED)."""
    if force is None and stress is None:
        for name, value in (("area", area), ("servo_gain", servo_gain), ("max_speed", max_speed)):
            if value is not None:
                raise ValueError(f"{name} applies to a force- or stress-controlled wall: give force or stress too")
        row[WALL_MODE] = WALL_PRESCRIBED
        return row
    if force is not None and stress is not None:
        raise ValueError("give force or stress (with area) for a servo wall, not both")
    if force is not None:
        if area is not None:
            raise ValueError("area applies to a stress-controlled wall (stress = force / area): give stress, not force")
        target = positive_finite("force (target normal force, N)", force, allow_zero=True)
    else:
        if area is None:
            raise ValueError("a stress-controlled wall needs area (m^2, > 0): the target force is stress x area")
        target = (positive_finite("stress (target normal stress, Pa)", stress, allow_zero=True)
                  * positive_finite("area (m^2)", area))
        if not math.isfinite(target):
            raise ValueError(f"stress x area must be finite, got {stress!r} x {area!r}")
    if servo_gain is None:
        raise ValueError("a servo wall needs servo_gain (m/(N s), > 0): its normal speed per newton of force error; "
                         "a fraction (0.05 to 0.5) of 1 / (k_contact dt), k_contact the normal stiffness of the "
                         "contacts the wall carries")
    if max_speed is None:
        raise ValueError("a servo wall needs max_speed (m/s, > 0): the largest normal speed the servo may set")
    gain = positive_finite("servo_gain (m/(N s))", servo_gain)
    vmax = positive_finite("max_speed (m/s)", max_speed)
    m = row[WALL_NORMAL:WALL_NORMAL + 3]
    v = row[WALL_VEL:WALL_VEL + 3]
    vn = float(v @ m)
    if abs(vn) > 1e-12 * max(float(np.linalg.norm(v)), 1e-300):
        raise ValueError(f"velocity of a servo wall must lie in its plane (the servo sets the normal speed); its "
                         f"normal component is {vn!r} m/s")
    row[WALL_MODE] = WALL_SERVO
    row[WALL_TARGET] = target
    row[WALL_GAIN] = gain
    row[WALL_MAX_SPEED] = vmax
    row[WALL_TANGENT_VEL:WALL_TANGENT_VEL + 3] = v - vn * m
    row[WALL_VEL:WALL_VEL + 3] = v - vn * m
    return row


def wall_rows(walls):
    """`walls` as a C-contiguous float64 (n_walls, N_WALL) array: rows of older checkpoints (12
    columns: point, normal, velocity, build point) padded as walls at a prescribed velocity."""
    a = np.asarray(walls, dtype=np.float64)
    a = a.reshape(-1, a.shape[-1] if a.ndim == 2 else N_WALL)
    if a.shape[1] == N_WALL_PRESCRIBED:
        a = np.concatenate([a, np.zeros((a.shape[0], N_WALL - N_WALL_PRESCRIBED))], axis=1)
    if a.shape[1] != N_WALL:
        raise ValueError(f"wall rows must have {N_WALL} (or {N_WALL_PRESCRIBED}) columns, got {a.shape[1]}")
    return np.ascontiguousarray(a)


@njit(_nrt=False)
def servo_wall_velocity(walls, w, fx, fy, fz):
    """The velocity of servo wall w for the coming step, from (fx, fy, fz) the grains' total force on
    it at the step's forces (the one place of the servo law).

    P = -(f . m) is the normal force the grains press the wall with (m the inward normal), P* the
    target: the wall moves along m (towards the grains) at gain (P* - P), limited to max_speed, plus
    its prescribed tangential velocity. A proportional servo (PFC's wall servo, YADE's
    TriaxialStressController) on a massless wall: it stops only where P = P*, so at rest the
    grains press it with the target force exactly; the gain sets how fast the error decays,
    1 - gain k dt per step over contacts of total normal stiffness k (stable for gain k dt < 1)."""
    mx = walls[w, WALL_NORMAL]
    my = walls[w, WALL_NORMAL + 1]
    mz = walls[w, WALL_NORMAL + 2]
    press = -(fx * mx + fy * my + fz * mz)
    speed = walls[w, WALL_GAIN] * (walls[w, WALL_TARGET] - press)
    vmax = walls[w, WALL_MAX_SPEED]
    if speed > vmax:
        speed = vmax
    elif speed < -vmax:
        speed = -vmax
    walls[w, WALL_VEL] = walls[w, WALL_TANGENT_VEL] + speed * mx
    walls[w, WALL_VEL + 1] = walls[w, WALL_TANGENT_VEL + 1] + speed * my
    walls[w, WALL_VEL + 2] = walls[w, WALL_TANGENT_VEL + 2] + speed * mz


@njit(_nrt=False)
def servo_walls(walls, nw, acc, more):
    """servo_wall_velocity for every servo wall, on its force in acc[ACC_WALL + 3 w:+3] plus, when
    `more` is not empty, the force in more[ACC_WALL + 3 w:+3] (an accumulator record of the same
    layout holding the contacts of another body kind)."""
    for w in range(nw):
        if walls[w, WALL_MODE] != WALL_SERVO:
            continue
        fx = acc[ACC_WALL + 3 * w]
        fy = acc[ACC_WALL + 3 * w + 1]
        fz = acc[ACC_WALL + 3 * w + 2]
        if more.shape[0] > 0:
            fx += more[ACC_WALL + 3 * w]
            fy += more[ACC_WALL + 3 * w + 1]
            fz += more[ACC_WALL + 3 * w + 2]
        servo_wall_velocity(walls, w, fx, fy, fz)


@njit(_nrt=False)
def follow_servo_walls(copy, walls, nw):
    """The velocities the servo set in `walls` into the servo walls of `copy` (another body kind's
    copy of the walls, which it moves itself)."""
    for w in range(nw):
        if walls[w, WALL_MODE] == WALL_SERVO:
            for d in range(3):
                copy[w, WALL_VEL + d] = walls[w, WALL_VEL + d]


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
        nx = -walls[w, WALL_NORMAL]
        ny = -walls[w, WALL_NORMAL + 1]
        nz = -walls[w, WALL_NORMAL + 2]
        h = -((pos[i, 0] - walls[w, WALL_POINT]) * nx + (pos[i, 1] - walls[w, WALL_POINT + 1]) * ny
              + (pos[i, 2] - walls[w, WALL_POINT + 2]) * nz)
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
        vx = walls[w, WALL_VEL] - vel[i, 0] - ax
        vy = walls[w, WALL_VEL + 1] - vel[i, 1] - ay
        vz = walls[w, WALL_VEL + 2] - vel[i, 2] - az
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
        exact_add_outer(limbs, fx, fy, fz, h * nx, h * ny, h * nz, w0, w1, w2, w3, w4, w5, w6, w7, w8)
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

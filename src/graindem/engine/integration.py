"""Time integration of the spheres: damping, kick, drift with the cell's affine flow, skin check.

One fused pass over the particles (their data are read once per step), then the orientations are
turned in a loop of their own (core.rotations.turn_by_spin).
"""

import math

from .._jit import njit
from ..core.cell import (CELL_GAMMA, CELL_L, CELL_LBUILD, CELL_LO, CELL_RATE, CELL_SHEAR_RATE, CELL_TILT,
                         CELL_TILT_BUILD, is_sheared)
from ..core.layout import ACC_LOCAL_WORK, CTL_DT, CTL_G, CTL_LOCAL_DAMP, ICTL_N, OUT_PARTICLE
from ..core.rotations import turn_by_spin


@njit(_nrt=False)
def advance_particles(pos, vel, omega, quat, force, torque, mass, inertia, cell, ctl, ictl,
                      pos_build, acc, out):
    """Fused pass: damping, kick, drift (with the cell's flow), force reset, skin check; then the
    orientations (core.rotations.turn_by_spin).

    Returns the largest squared displacement since the last rebuild, relative to the affine
    image of the build position, or -1 if a particle's state is not finite.
    """
    n = ictl[ICTL_N]
    dt = ctl[CTL_DT]
    gx = ctl[CTL_G]
    gy = ctl[CTL_G + 1]
    gz = ctl[CTL_G + 2]
    alpha = ctl[CTL_LOCAL_DAMP]
    lo0 = cell[CELL_LO]
    lo1 = cell[CELL_LO + 1]
    lo2 = cell[CELL_LO + 2]
    e0 = cell[CELL_RATE] * dt
    e1 = cell[CELL_RATE + 1] * dt
    e2 = cell[CELL_RATE + 2] * dt
    # build positions mapped by the cell's stretch since the rebuild
    s0 = cell[CELL_L] * (1.0 + e0) / cell[CELL_LBUILD]
    s1 = cell[CELL_L + 1] * (1.0 + e1) / cell[CELL_LBUILD + 1]
    s2 = cell[CELL_L + 2] * (1.0 + e2) / cell[CELL_LBUILD + 2]
    # shear: x += (L_xy (y - lo) + L_xz (z - lo)) dt, y += L_yz (z - lo) dt, and the cell h <- (I + L dt) h,
    # which keeps every particle's fractional coordinates; f01, f02, f12: the off-diagonal terms of
    # F = h_new h_build^-1, the affine map since the rebuild (all zero for an orthogonal cell)
    g01 = cell[CELL_SHEAR_RATE] * dt
    g02 = cell[CELL_SHEAR_RATE + 1] * dt
    g12 = cell[CELL_SHEAR_RATE + 2] * dt
    Ly = cell[CELL_L + 1]
    Lz = cell[CELL_L + 2]
    xy_new = (1.0 + e0) * cell[CELL_TILT] + g01 * Ly
    xz_new = (1.0 + e0) * cell[CELL_TILT + 1] + g01 * cell[CELL_TILT + 2] + g02 * Lz
    yz_new = (1.0 + e1) * cell[CELL_TILT + 2] + g12 * Lz
    f01 = (xy_new - s0 * cell[CELL_TILT_BUILD]) / cell[CELL_LBUILD + 1]
    f12 = (yz_new - s1 * cell[CELL_TILT_BUILD + 2]) / cell[CELL_LBUILD + 2]
    f02 = (xz_new - s0 * cell[CELL_TILT_BUILD + 1] - f01 * cell[CELL_TILT_BUILD + 2]) / cell[CELL_LBUILD + 2]
    # the orthogonal cell skips the shear terms (a predictable branch: its loop stays as fast as before)
    sheared = is_sheared(cell)
    maxd2 = 0.0
    local_work = 0.0
    for i in range(n):
        m = mass[i]
        fx = force[i, 0] + m * gx
        fy = force[i, 1] + m * gy
        fz = force[i, 2] + m * gz
        tx = torque[i, 0]
        ty = torque[i, 1]
        tz = torque[i, 2]
        if alpha > 0.0:
            # Cundall's local damping opposes each component of the motion by a fraction of |F|
            dfx = -alpha * abs(fx) * math.copysign(1.0, vel[i, 0]) if vel[i, 0] != 0.0 else 0.0
            dfy = -alpha * abs(fy) * math.copysign(1.0, vel[i, 1]) if vel[i, 1] != 0.0 else 0.0
            dfz = -alpha * abs(fz) * math.copysign(1.0, vel[i, 2]) if vel[i, 2] != 0.0 else 0.0
            dtx = -alpha * abs(tx) * math.copysign(1.0, omega[i, 0]) if omega[i, 0] != 0.0 else 0.0
            dty = -alpha * abs(ty) * math.copysign(1.0, omega[i, 1]) if omega[i, 1] != 0.0 else 0.0
            dtz = -alpha * abs(tz) * math.copysign(1.0, omega[i, 2]) if omega[i, 2] != 0.0 else 0.0
            local_work -= (dfx * vel[i, 0] + dfy * vel[i, 1] + dfz * vel[i, 2]
                           + dtx * omega[i, 0] + dty * omega[i, 1] + dtz * omega[i, 2]) * dt
            fx += dfx
            fy += dfy
            fz += dfz
            tx += dtx
            ty += dty
            tz += dtz
        im = dt / m
        vx = vel[i, 0] + fx * im
        vy = vel[i, 1] + fy * im
        vz = vel[i, 2] + fz * im
        ii = dt / inertia[i]
        wx = omega[i, 0] + tx * ii
        wy = omega[i, 1] + ty * ii
        wz = omega[i, 2] + tz * ii
        vel[i, 0] = vx
        vel[i, 1] = vy
        vel[i, 2] = vz
        omega[i, 0] = wx
        omega[i, 1] = wy
        omega[i, 2] = wz
        x = pos[i, 0] + vx * dt + (pos[i, 0] - lo0) * e0
        y = pos[i, 1] + vy * dt + (pos[i, 1] - lo1) * e1
        z = pos[i, 2] + vz * dt + (pos[i, 2] - lo2) * e2
        if sheared:
            x += (pos[i, 1] - lo1) * g01 + (pos[i, 2] - lo2) * g02
            y += (pos[i, 2] - lo2) * g12
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)
                and math.isfinite(wx) and math.isfinite(wy) and math.isfinite(wz)):
            out[OUT_PARTICLE] = i
            return -1.0
        pos[i, 0] = x
        pos[i, 1] = y
        pos[i, 2] = z
        force[i, 0] = 0.0
        force[i, 1] = 0.0
        force[i, 2] = 0.0
        torque[i, 0] = 0.0
        torque[i, 1] = 0.0
        torque[i, 2] = 0.0
        ddx = x - (lo0 + (pos_build[i, 0] - lo0) * s0)
        ddy = y - (lo1 + (pos_build[i, 1] - lo1) * s1)
        if sheared:
            ddx -= (pos_build[i, 1] - lo1) * f01 + (pos_build[i, 2] - lo2) * f02
            ddy -= (pos_build[i, 2] - lo2) * f12
        ddz = z - (lo2 + (pos_build[i, 2] - lo2) * s2)
        d2 = ddx * ddx + ddy * ddy + ddz * ddz
        if d2 > maxd2:
            maxd2 = d2
    turn_by_spin(omega, quat, n, dt)
    acc[ACC_LOCAL_WORK] += local_work
    cell[CELL_TILT] = xy_new
    cell[CELL_TILT + 1] = xz_new
    cell[CELL_TILT + 2] = yz_new
    for k in range(3):
        cell[CELL_L + k] *= 1.0 + cell[CELL_RATE + k] * dt
        cell[CELL_GAMMA + k] += cell[CELL_SHEAR_RATE + k] * dt
    return maxd2

"""The neighbour list: a Verlet list with skin over a cell grid, rebuilt with its contacts carried over.

build_pairs wraps periodic coordinates into the cell, bins the particles into a grid of cells at
least the cutoff (largest diameter + skin) wide (in fractional coordinates once the cell is
sheared), optionally renumbers the particles in cell order (memory locality), and lists every pair
within the cutoff as a half list grouped by the lower index. A pair that was listed before keeps its
contact state (history, frame), found among the old rows grouped by their lower index; a pair that
left releases its history to the store. The candidate wall rows carry theirs over by key. Per-row
constants (effective radius, Hertz coefficient, damping, divergence limit) are set here, once per
rebuild.
"""

import math

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.rolling import released_energy
from ..contact.store import release
from ..core.cell import (CELL_L, CELL_LBUILD, CELL_TILT, CELL_TILT_BUILD, grid_bin_of, is_sheared, min_image,
                         min_image_tilted, wrap_and_grid, wrap_and_grid_tilted)
from ..core.exact_sum import N_LIMBS, exact_add, exact_value
from ..core.layout import (ACC_DISS_RELEASED, CTL_DIVERGE_OVERLAP, CTL_RMAX, CTL_SKIN, CTL_VISC, ICTL_N,
                           ICTL_NMAT, ICTL_NPAIRS, ICTL_NREBUILDS, ICTL_NWALLS, ICTL_NWCAND, ICTL_PERIODIC,
                           ICTL_SORT, PK_CN, PK_DAMP, PK_LIMIT, PK_RSTAR, WALL_BUILD, WALL_NORMAL, WALL_POINT)


@njit
def _permute_rows(a, perm, tmp):
    """a[k] <- a[perm[k]] for the first len(perm) rows of a 2-D array (tmp: scratch as large)."""
    n = perm.shape[0]
    w = a.shape[1]
    for k in range(n):
        p = perm[k]
        for f in range(w):
            tmp[k, f] = a[p, f]
    for k in range(n):
        for f in range(w):
            a[k, f] = tmp[k, f]


@njit
def _permute(a, perm, tmp):
    n = perm.shape[0]
    for k in range(n):
        tmp[k] = a[perm[k]]
    for k in range(n):
        a[k] = tmp[k]


@njit
def _sort_particles(order, n, nw, pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid,
                    pi, pj, npairs, wcand, nwcand):
    """Renumber the particles: new index k is old index order[k]. Carries every per-particle array,
    the particle indices of the pair rows (the pairs keep their orientation, i.e. which particle is
    first, and with it the sign of their stored state) and the keys i * nw + w of the wall rows."""
    inv = np.empty(n, dtype=np.int32)
    for k in range(n):
        inv[order[k]] = k
    tmp = np.empty((n, 4))
    for a in (pos, vel, omega, force, torque):
        _permute_rows(a, order, tmp)
    _permute_rows(quat, order, tmp)
    t1 = np.empty(n)
    _permute(radius, order, t1)
    _permute(mass, order, t1)
    _permute(inertia, order, t1)
    ti = np.empty(n, dtype=np.int64)
    _permute(pmat, order, ti)
    _permute(pid, order, ti)
    for o in range(npairs):
        pi[o] = inv[pi[o]]
        pj[o] = inv[pj[o]]
    for q in range(nwcand):
        i = wcand[q] // nw
        wcand[q] = inv[i] * nw + wcand[q] - i * nw


@njit
def _mix_constants(pk, pm, row, ri, rj, mi_, mj_, mass_i, mass_j, mtab, nmat, visc, limit):
    """Per-row constants of a sphere pair (rj = 0: a wall, R* = r_i, reduced mass m_i):
    R*, the Hertz coefficient 4/3 E* sqrt(R*), the viscous coefficient visc sqrt(m* c_N), the
    overlap that means divergence; pm: the row of the pair's material record in mtab."""
    p = mi_ * nmat + mj_
    if rj > 0.0:
        rstar = ri * rj / (ri + rj)
        mstar = mass_i * mass_j / (mass_i + mass_j)
        rmin = min(ri, rj)
    else:
        rstar = ri
        mstar = mass_i
        rmin = ri
    cn = 4.0 / 3.0 * mtab[p, S.P_ESTAR] * math.sqrt(rstar)
    pk[row, PK_RSTAR] = rstar
    pk[row, PK_CN] = cn
    pk[row, PK_DAMP] = visc * math.sqrt(mstar * cn)
    pk[row, PK_LIMIT] = limit * rmin
    pm[row] = p


@njit(inline="always")
def _clear_row(fs, ist, cq, c):
    """A fresh contact row: no state, no history, the identity frame."""
    for f in range(S.N_FSTATE):
        fs[c, f] = 0.0
    ist[c, S.I_HEAD] = -1
    for f in range(1, S.N_ISTATE):
        ist[c, f] = 0
    cq[c, 0] = 1.0
    cq[c, 1] = 0.0
    cq[c, 2] = 0.0
    cq[c, 3] = 0.0


@njit(inline="always")
def _copy_row(fs, ist, cq, src, to_fs, to_ist, to_cq, dst):
    """Row src's contact state, history reference and frame into row dst of the to_* arrays."""
    for f in range(S.N_FSTATE):
        to_fs[dst, f] = fs[src, f]
    for f in range(S.N_ISTATE):
        to_ist[dst, f] = ist[src, f]
    for f in range(4):
        to_cq[dst, f] = cq[src, f]


@njit
def build_pairs(pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid, mtab, cell, ctl, ictl,
                pstart, pi, pj, pfs, pist, pcq, pk, pm, qi, qj, qfs, qist, qcq, pos_build, pts, nxt, meta, acc,
                walls, wcand, wfs, wist, wcq, wk, wm, prs, wrs, rrel):
    """Rebuild the half neighbour list, carrying contact state over; returns the new pair count.

    With ictl[ICTL_SORT] the particles are first renumbered in cell order (every per-particle
    array, the wall rows and the pairs' particle indices follow), which keeps neighbours close in
    memory. Returns -1 when the pair arrays are too small; the caller grows them and calls again
    (a renumbering already done is harmless: it is a deterministic function of the positions).
    Pairs that leave the list release any history they still hold, and hand their frictional
    dissipation to acc[ACC_DISS_RELEASED] (the build's rows summed exactly, core.exact_sum, and
    added once: the same bits whatever the order of the rows, as an MPI rebuild sums them). The
    rows' rolling/twisting state (prs, wrs: no columns when the run has none) is carried with them;
    a row that leaves hands its dissipation, and the energy its springs still hold, to rrel[0]
    (summed in the same way). A
    row keeps the orientation it was created with (which particle is pi), so rows are grouped by
    the lower index but pi may be the higher one.
    """
    n = ictl[ICTL_N]
    nw = ictl[ICTL_NWALLS]
    nmat = ictl[ICTL_NMAT]
    visc = ctl[CTL_VISC]
    limit = ctl[CTL_DIVERGE_OVERLAP]
    cap = pi.shape[0]
    skin = ctl[CTL_SKIN]
    cutoff = 2.0 * ctl[CTL_RMAX] + skin
    ncell = np.empty(3, dtype=np.int64)
    sheared = is_sheared(cell)
    if sheared:
        wrap_and_grid_tilted(pos, n, cell, ictl[ICTL_PERIODIC:ICTL_PERIODIC + 3], cutoff, ncell)
    else:
        wrap_and_grid(pos, n, cell, ictl[ICTL_PERIODIC:ICTL_PERIODIC + 3], cutoff, ncell)
    mx = ncell[0]
    my = ncell[1]
    mz = ncell[2]
    ncells = mx * my * mz
    cid = np.empty(n, dtype=np.int64)
    count = np.zeros(ncells + 1, dtype=np.int64)
    for i in range(n):
        c = grid_bin_of(pos, i, cell, sheared, mx, my, mz)
        cid[i] = c
        count[c + 1] += 1
    for c in range(ncells):
        count[c + 1] += count[c]
    fill = count[:ncells].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = cid[i]
        members[fill[c]] = i
        fill[c] += 1
    npairs_old = ictl[ICTL_NPAIRS]
    if ictl[ICTL_SORT] != 0:
        _sort_particles(members, n, nw, pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid,
                        pi, pj, npairs_old, wcand, ictl[ICTL_NWCAND])
        for m in range(n):
            members[m] = m
        for i in range(n):
            cid[i] = grid_bin_of(pos, i, cell, sheared, mx, my, mz)
    # old rows grouped by their lower particle index, for the carry-over lookup
    ostart = np.zeros(n + 1, dtype=np.int64)
    for o in range(npairs_old):
        ostart[min(pi[o], pj[o]) + 1] += 1
    for i in range(n):
        ostart[i + 1] += ostart[i]
    ofill = ostart[:n].copy()
    orow = np.empty(max(npairs_old, 1), dtype=np.int64)
    for o in range(npairs_old):
        lo_ = min(pi[o], pj[o])
        orow[ofill[lo_]] = o
        ofill[lo_] += 1
    Lx = cell[CELL_L]
    Ly = cell[CELL_L + 1]
    Lz = cell[CELL_L + 2]
    txy = cell[CELL_TILT]
    txz = cell[CELL_TILT + 1]
    tyz = cell[CELL_TILT + 2]
    perx = ictl[ICTL_PERIODIC] != 0
    pery = ictl[ICTL_PERIODIC + 1] != 0
    perz = ictl[ICTL_PERIODIC + 2] != 0
    # stencils: with fewer than 3 cells along a periodic axis the wrapped offsets would repeat
    lox = -1 if (mx >= 3 or not perx) else 0
    hix = 1 if (mx >= 2 or not perx) else 0
    loy = -1 if (my >= 3 or not pery) else 0
    hiy = 1 if (my >= 2 or not pery) else 0
    loz = -1 if (mz >= 3 or not perz) else 0
    hiz = 1 if (mz >= 2 or not perz) else 0
    carried = np.zeros(npairs_old, dtype=np.bool_)
    nrs = prs.shape[1]
    qrs = np.zeros((cap, nrs))
    newstart = np.empty(n + 1, dtype=np.int64)
    k = 0
    for i in range(n):
        newstart[i] = k
        ci = cid[i]
        cx = ci // (my * mz)
        cy = (ci // mz) % my
        cz = ci % mz
        xi = pos[i, 0]
        yi = pos[i, 1]
        zi = pos[i, 2]
        ri = radius[i]
        o0 = ostart[i]
        o1 = ostart[i + 1]
        for ox in range(lox, hix + 1):
            nx_ = cx + ox
            if perx:
                nx_ %= mx
            elif nx_ < 0 or nx_ >= mx:
                continue
            for oy in range(loy, hiy + 1):
                ny_ = cy + oy
                if pery:
                    ny_ %= my
                elif ny_ < 0 or ny_ >= my:
                    continue
                for oz in range(loz, hiz + 1):
                    nz_ = cz + oz
                    if perz:
                        nz_ %= mz
                    elif nz_ < 0 or nz_ >= mz:
                        continue
                    c = (nx_ * my + ny_) * mz + nz_
                    for m in range(count[c], count[c + 1]):
                        j = members[m]
                        if j <= i:
                            continue
                        dx = pos[j, 0] - xi
                        dy = pos[j, 1] - yi
                        dz = pos[j, 2] - zi
                        if sheared:
                            dx, dy, dz = min_image_tilted(dx, dy, dz, Lx, Ly, Lz, txy, txz, tyz, perx, pery, perz)
                        else:
                            dx, dy, dz = min_image(dx, dy, dz, Lx, Ly, Lz, perx, pery, perz)
                        rc = ri + radius[j] + skin
                        if dx * dx + dy * dy + dz * dz >= rc * rc:
                            continue
                        if k >= cap:
                            return -1
                        found = -1
                        for oo in range(o0, o1):
                            o = orow[oo]
                            if pi[o] + pj[o] - i == j:
                                found = o
                                break
                        if found >= 0:
                            carried[found] = True
                            qi[k] = pi[found]
                            qj[k] = pj[found]
                            _copy_row(pfs, pist, pcq, found, qfs, qist, qcq, k)
                            for f in range(nrs):
                                qrs[k, f] = prs[found, f]
                        else:
                            qi[k] = i
                            qj[k] = j
                            _clear_row(qfs, qist, qcq, k)
                        k += 1
    newstart[n] = k
    # the rows that leave: their frictional dissipation (row 0) and rolling energy (row 1)
    released = np.zeros((2, N_LIMBS), dtype=np.int64)
    for o in range(npairs_old):
        if not carried[o]:
            if pist[o, S.I_HEAD] >= 0:
                release(pts, nxt, meta, pist[o, S.I_HEAD])
            exact_add(released, 0, pfs[o, S.F_DISS])
            if nrs:
                exact_add(released, 1, released_energy(prs, o))
    for c in range(k):
        a = qi[c]
        b = qj[c]
        pi[c] = a
        pj[c] = b
        _copy_row(qfs, qist, qcq, c, pfs, pist, pcq, c)
        for f in range(nrs):
            prs[c, f] = qrs[c, f]
        _mix_constants(pk, pm, c, radius[a], radius[b], pmat[a], pmat[b], mass[a], mass[b], mtab, nmat, visc, limit)
    for i in range(n + 1):
        pstart[i] = newstart[i]
    for i in range(n):
        for d in range(3):
            pos_build[i, d] = pos[i, d]
    for d in range(3):
        cell[CELL_LBUILD + d] = cell[CELL_L + d]
        cell[CELL_TILT_BUILD + d] = cell[CELL_TILT + d]
    # walls: the (particle, wall) pairs near enough to touch before the next rebuild, in key order,
    # each carrying the state of the last build's row with its key; rows that drop out release
    # their history and hand their dissipation to ACC_DISS_RELEASED, as pair rows do
    nc_old = ictl[ICTL_NWCAND]
    old_row = np.full(n * nw, -1, dtype=np.int64)
    for q in range(nc_old):
        old_row[wcand[q]] = q
    ofs = wfs[:nc_old].copy()
    oist = wist[:nc_old].copy()
    ocq = wcq[:nc_old].copy()
    owrs = wrs[:nc_old].copy()
    wcarried = np.zeros(nc_old, dtype=np.bool_)
    nc = 0
    for i in range(n):
        for w in range(nw):
            key = i * nw + w
            h = ((pos[i, 0] - walls[w, WALL_POINT]) * walls[w, WALL_NORMAL]
                 + (pos[i, 1] - walls[w, WALL_POINT + 1]) * walls[w, WALL_NORMAL + 1]
                 + (pos[i, 2] - walls[w, WALL_POINT + 2]) * walls[w, WALL_NORMAL + 2])
            if h < radius[i] + skin:
                o = old_row[key]
                if o >= 0:
                    wcarried[o] = True
                    _copy_row(ofs, oist, ocq, o, wfs, wist, wcq, nc)
                    for f in range(nrs):
                        wrs[nc, f] = owrs[o, f]
                else:
                    _clear_row(wfs, wist, wcq, nc)
                    for f in range(nrs):
                        wrs[nc, f] = 0.0
                wcand[nc] = key
                _mix_constants(wk, wm, nc, radius[i], 0.0, pmat[i], pmat[n + w], mass[i], 0.0, mtab, nmat,
                               visc, limit)
                nc += 1
    for o in range(nc_old):
        if not wcarried[o]:
            if oist[o, S.I_HEAD] >= 0:
                release(pts, nxt, meta, oist[o, S.I_HEAD])
            exact_add(released, 0, ofs[o, S.F_DISS])
            if nrs:
                exact_add(released, 1, released_energy(owrs, o))
    acc[ACC_DISS_RELEASED] += exact_value(released, 0)
    if nrs:
        rrel[0] += exact_value(released, 1)
    for q in range(nc, nc_old):
        _clear_row(wfs, wist, wcq, q)
        for f in range(nrs):
            wrs[q, f] = 0.0
    for w in range(nw):
        for d in range(3):
            walls[w, WALL_BUILD + d] = walls[w, WALL_POINT + d]
    ictl[ICTL_NWCAND] = nc
    ictl[ICTL_NPAIRS] = k
    ictl[ICTL_NREBUILDS] += 1
    return k


@njit
def refresh_constants(radius, mass, pmat, mtab, ctl, ictl, pi, pj, pk, pm, wcand, wk, wm):
    """Recompute the per-row constants of the listed pairs and wall rows (what build_pairs sets):
    after a restart or a change of the material table."""
    nmat = ictl[ICTL_NMAT]
    visc = ctl[CTL_VISC]
    limit = ctl[CTL_DIVERGE_OVERLAP]
    n = ictl[ICTL_N]
    nw = ictl[ICTL_NWALLS]
    for c in range(ictl[ICTL_NPAIRS]):
        a = pi[c]
        b = pj[c]
        _mix_constants(pk, pm, c, radius[a], radius[b], pmat[a], pmat[b], mass[a], mass[b], mtab, nmat, visc, limit)
    for q in range(ictl[ICTL_NWCAND]):
        i = wcand[q] // nw
        _mix_constants(wk, wm, q, radius[i], 0.0, pmat[i], pmat[n + wcand[q] - i * nw], mass[i], 0.0, mtab, nmat,
                       visc, limit)

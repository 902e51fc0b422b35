"""The numba kernels of the sphere engine: neighbour list with carry-over, and the time loop.

Everything a step does runs inside `run_steps`, one njit call for many steps; it returns to
Python only when it is done, when the history store or the pair arrays need to grow, or when the
run diverged (see STATUS_*). Every COMPACT_EVERY steps it lays the history store out afresh in
pair-row order (compact_store: indices only, results unchanged), which keeps the history laws'
pushes, pops and walks in cache. All arrays are plain float64/int64 numpy arrays, except the pair
rows' particle indices and the pair passes' row list (PAIR_INDEX, int32); the layouts:

particles (N rows): pos, vel, omega, force, torque (N, 3); quat (N, 4); radius, mass, inertia (N,);
    pid (N,) the particle's index in the order it was added (rows are renumbered in cell order
    at rebuilds when ictl[ICTL_SORT] is set); pmat (N + n_walls,) the material of each particle,
    then of each wall. `vel` is the velocity relative to the homogeneous (affine) flow of a
    deforming periodic cell.
pairs: half neighbour list grouped by the lower index (CSR offsets `pstart`, N + 1), pair rows
    pi, pj (cap,) PAIR_INDEX, contact state pfs (cap, N_FSTATE), pist (cap, N_ISTATE), frame quaternion pcq (cap, 4);
    a second set of the same shape (q*) is scratch for rebuilds. A row keeps the orientation it was
    made with (normal from pi to pj), so after a renumbering pi may be the higher index.
    Per-row constants pk (cap, N_PK) and material-pair rows pm (cap,) are set at every rebuild.
walls: rows q < ictl[ICTL_NWCAND] of wfs, wist, wcq, wk, wm are the candidate wall contacts: the
    (particle, wall) pairs within r + skin of the wall at the last rebuild, keyed wcand[q] = i * n_walls + w
    (ascending at each rebuild); their state carries over from one rebuild to the next by key. The
    arrays are allocated for n * n_walls rows, of which only the front is used.
    walls rows: point (3), inward unit normal (3), velocity (3), point at the last rebuild (3).
mtab (n_materials^2, state.N_PARAM): the contact record of each material pair (row m1 * n + m2).
cell (float64, CELL_*): box origin and lengths, lengths at the last rebuild, strain rates.
ctl (float64, CTL_*): time step, gravity, damping, skin and the servo of the periodic cell.
ictl (int64, ICTL_*): law id, counts, periodic flags, servo modes.
acc (float64, ACC_*): per-step sums (stress), wall forces and running totals.
out (int64, OUT_*): status and where a divergence was found.

The per-step kernels allocate nothing and are compiled with `_nrt=False`: otherwise numba wraps
their calls to the law and frame kernels in reference-count updates of the array arguments
(measured 12-20 % of the force loop).

Contact parameters: the laws read a state.P_* record. The force loops keep one scratch record
(N_PRM long: the record plus the material pair it holds), copy a material pair's row of mtab into
it only when the pair changes from one contact to the next, and set the two entries that depend on
the radii (R*, 4/3 E* sqrt(R*)) from the row's constants, computed once per rebuild rather than
every step (with the viscous coefficient and the divergence overlap).
"""

import math

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.frames import contact_point_velocity, frame_init
from ..core.cell import (CELL_GAMMA, CELL_INTEGRAL, CELL_L, CELL_LBUILD, CELL_LO, CELL_RATE, CELL_SHEAR_RATE,
                         CELL_TILT, CELL_TILT_BUILD, N_CELL, cell_index, flip_tilts, fractional, min_image,
                         min_image_tilted, is_sheared, tilt_out_of_range)
from ..core.rotations import quat_mul, quat_rotate, turn_by_spin
from ..contact import jaeger, linear, md_incremental, mindlin
from ..contact.laws import (JAEGER, LINEAR, MD_INCREMENTAL, MINDLIN, PREFETCH_BELOW, PREFETCH_BELOW2,
                            PREFETCH_MIN_POINTS, PREFETCH_TOP, prefetch_stacks, contact_step, separate,
                            tangential_energy)
from ..contact.store import M_CAPACITY, M_FREE_HEAD, M_LIVE, compact_into, thread_free, release

# cell

# ctl
CTL_DT = 0
CTL_G = 1            # 3: gravity
CTL_LOCAL_DAMP = 4   # Cundall's local non-viscous damping coefficient (0..1)
CTL_VISC = 5         # viscous normal damping coefficient alpha (from the restitution coefficient)
CTL_SKIN = 6
CTL_DIVERGE_OVERLAP = 7   # an overlap above this fraction of the smaller radius means divergence
CTL_TARGET = 8       # 3: servo target stress per axis (Pa, compression positive)
CTL_GAIN = 11        # 3: servo gain (1/s per relative stress error)
CTL_MAXRATE = 14     # 3: servo strain rate limit (1/s)
CTL_RATE = 17        # 3: prescribed strain rates of strain-controlled axes
CTL_RMAX = 20        # largest radius
CTL_INTEGRAL = 21    # 3: servo integral gain per step (fraction of the proportional gain)
CTL_SHEAR = 24       # 3: prescribed velocity gradients L_xy, L_xz, L_yz (1/s) of a shearing cell
N_CTL = 27

# ictl
ICTL_LAW = 0
ICTL_N = 1
ICTL_NWALLS = 2
ICTL_PERIODIC = 3    # 3 flags
ICTL_MODE = 6        # 3: 0 = strain rate prescribed, 1 = stress servo (periodic axes only)
ICTL_NPAIRS = 9
ICTL_NREBUILDS = 10
ICTL_STEP = 11       # steps done since the start of the simulation
ICTL_NWCAND = 12     # number of (particle, wall) rows near enough to be checked until the next rebuild
ICTL_ENERGY = 13     # 1: count tangential work and frictional dissipation per contact (laws.contact_step)
ICTL_NMAT = 14       # number of materials (the material-pair table mtab has NMAT^2 rows)
ICTL_SORT = 15       # 1: renumber the particles in cell order at every neighbour rebuild
ICTL_COMPACT_EVERY = 16  # steps between compactions of the history store (0: COMPACT_EVERY, < 0: never)
N_ICTL = 17

# default steps between compactions of the history store (compact_store)
COMPACT_EVERY = 100

# dtype of the pair rows' particle indices (pi, pj and their scratch qi, qj) and of the pair passes'
# list of rows (act): half the bytes of int64 on the arrays every pair pass streams through.
# One dtype only: each other dtype would be another full compile of every kernel that takes them.
# Simulation keeps the particle count and the pair capacity within PAIR_INDEX_MAX.
PAIR_INDEX = np.int32
PAIR_INDEX_MAX = np.iinfo(PAIR_INDEX).max

# per-row constants of a pair or wall row (pk, wk), set when the neighbour list is built
PK_RSTAR = 0         # effective radius R*
PK_CN = 1            # Hertz coefficient 4/3 E* sqrt(R*)
PK_DAMP = 2          # viscous normal damping: F_d = -PK_DAMP delta^(1/4) v_n (alpha sqrt(m* c_N))
PK_LIMIT = 3         # an overlap at or above this means the run diverged
N_PK = 4

# the force loops' scratch parameter record: a state.P_* record plus the material pair it holds
PRM_PAIR = S.N_PARAM
N_PRM = S.N_PARAM + 1

# acc
ACC_STRESS = 0       # 9: sum over contacts of f (x) l at the last step (row-major), / V = stress
ACC_DISS_RELEASED = 9   # frictional dissipation carried by contacts that left the neighbour list
ACC_VISC_WORK = 10   # energy removed by viscous normal damping
ACC_LOCAL_WORK = 11  # energy removed by local damping
ACC_BOUNDARY_WORK = 12   # work done on the particles by the deforming cell and the moving walls
ACC_WALL = 13        # 3 * n_walls: total force exerted by the particles on each wall
N_ACC0 = 13

# out
OUT_STATUS = 0
OUT_STEPS = 1
OUT_PARTICLE = 2
OUT_CI = 3
OUT_CJ = 4
N_OUT = 5

STATUS_DONE = 0
STATUS_STORE_LOW = 1
STATUS_PAIRS_FULL = 2
STATUS_DIVERGED = 3


@njit
def _wrap_and_grid(pos, n, cell, ictl, cutoff, ncell):
    """Wrap periodic coordinates into the box and size the cell grid (ncell, 3 ints)."""
    for k in range(3):
        lo = cell[CELL_LO + k]
        L = cell[CELL_L + k]
        if ictl[ICTL_PERIODIC + k] != 0:
            for i in range(n):
                x = pos[i, k]
                if x < lo or x >= lo + L:
                    x -= L * math.floor((x - lo) / L)
                    if x >= lo + L:
                        x -= L
                    pos[i, k] = x
        m = int(L / cutoff)
        if m < 1:
            m = 1
        if m > 1024:
            m = 1024
        ncell[k] = m


@njit
def _wrap_and_grid_tilted(pos, n, cell, ictl, cutoff, ncell):
    """_wrap_and_grid of a sheared cell: flip the tilts, wrap through fractional coordinates (a
    jump across the y face shifts x by the tilt xy: Lees-Edwards), and size the grid by the cell's
    heights (the distances between opposite faces), so that +-1 bin in fractional coordinates
    holds every neighbour within the cutoff."""
    flip_tilts(cell)
    Lx = cell[CELL_L]
    Ly = cell[CELL_L + 1]
    Lz = cell[CELL_L + 2]
    xy = cell[CELL_TILT]
    xz = cell[CELL_TILT + 1]
    yz = cell[CELL_TILT + 2]
    for i in range(n):
        x = pos[i, 0]
        y = pos[i, 1]
        z = pos[i, 2]
        if ictl[ICTL_PERIODIC + 2] != 0:
            k = math.floor((z - cell[CELL_LO + 2]) / Lz)
            z -= k * Lz
            y -= k * yz
            x -= k * xz
        if ictl[ICTL_PERIODIC + 1] != 0:
            _, f1, _ = fractional(x, y, z, cell)
            k = math.floor(f1)
            y -= k * Ly
            x -= k * xy
        if ictl[ICTL_PERIODIC] != 0:
            f0, _, _ = fractional(x, y, z, cell)
            x -= Lx * math.floor(f0)
        pos[i, 0] = x
        pos[i, 1] = y
        pos[i, 2] = z
    vol = Lx * Ly * Lz
    # heights: V / |b x c|, V / |a x c|, V / |a x b|
    bcx = Ly * Lz
    bcy = -xy * Lz
    bcz = xy * yz - Ly * xz
    heights = (vol / math.sqrt(bcx * bcx + bcy * bcy + bcz * bcz), Ly * Lz / math.sqrt(Lz * Lz + yz * yz), Lz)
    for k in range(3):
        m = int(heights[k] / cutoff)
        if m < 1:
            m = 1
        if m > 1024:
            m = 1024
        ncell[k] = m


@njit
def _cell_of(pos, i, cell, sheared, mx, my, mz):
    """Grid bin of particle i: by position, or in a sheared cell by fractional coordinates."""
    if not sheared:
        return (cell_index(pos[i, 0], cell[CELL_LO], cell[CELL_L], mx) * my
                + cell_index(pos[i, 1], cell[CELL_LO + 1], cell[CELL_L + 1], my)) * mz \
            + cell_index(pos[i, 2], cell[CELL_LO + 2], cell[CELL_L + 2], mz)
    f0, f1, f2 = fractional(pos[i, 0], pos[i, 1], pos[i, 2], cell)
    return (cell_index(f0, 0.0, 1.0, mx) * my + cell_index(f1, 0.0, 1.0, my)) * mz + cell_index(f2, 0.0, 1.0, mz)


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
                walls, wcand, wfs, wist, wcq, wk, wm):
    """Rebuild the half neighbour list, carrying contact state over; returns the new pair count.

    With ictl[ICTL_SORT] the particles are first renumbered in cell order (every per-particle
    array, the wall rows and the pairs' particle indices follow), which keeps neighbours close in
    memory. Returns -1 when the pair arrays are too small; the caller grows them and calls again
    (a renumbering already done is harmless: it is a deterministic function of the positions).
    Pairs that leave the list release any history they still hold, and hand their frictional
    dissipation to acc[ACC_DISS_RELEASED]. A row keeps the orientation it was created with (which
    particle is pi), so rows are grouped by the lower index but pi may be the higher one.
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
        _wrap_and_grid_tilted(pos, n, cell, ictl, cutoff, ncell)
    else:
        _wrap_and_grid(pos, n, cell, ictl, cutoff, ncell)
    mx = ncell[0]
    my = ncell[1]
    mz = ncell[2]
    ncells = mx * my * mz
    cid = np.empty(n, dtype=np.int64)
    count = np.zeros(ncells + 1, dtype=np.int64)
    for i in range(n):
        c = _cell_of(pos, i, cell, sheared, mx, my, mz)
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
            cid[i] = _cell_of(pos, i, cell, sheared, mx, my, mz)
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
                        else:
                            qi[k] = i
                            qj[k] = j
                            _clear_row(qfs, qist, qcq, k)
                        k += 1
    newstart[n] = k
    for o in range(npairs_old):
        if not carried[o]:
            if pist[o, S.I_HEAD] >= 0:
                release(pts, nxt, meta, pist[o, S.I_HEAD])
            acc[ACC_DISS_RELEASED] += pfs[o, S.F_DISS]
    for c in range(k):
        a = qi[c]
        b = qj[c]
        pi[c] = a
        pj[c] = b
        _copy_row(qfs, qist, qcq, c, pfs, pist, pcq, c)
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
    wcarried = np.zeros(nc_old, dtype=np.bool_)
    nc = 0
    for i in range(n):
        for w in range(nw):
            key = i * nw + w
            h = ((pos[i, 0] - walls[w, 0]) * walls[w, 3] + (pos[i, 1] - walls[w, 1]) * walls[w, 4]
                 + (pos[i, 2] - walls[w, 2]) * walls[w, 5])
            if h < radius[i] + skin:
                o = old_row[key]
                if o >= 0:
                    wcarried[o] = True
                    _copy_row(ofs, oist, ocq, o, wfs, wist, wcq, nc)
                else:
                    _clear_row(wfs, wist, wcq, nc)
                wcand[nc] = key
                _mix_constants(wk, wm, nc, radius[i], 0.0, pmat[i], pmat[n + w], mass[i], 0.0, mtab, nmat,
                               visc, limit)
                nc += 1
    for o in range(nc_old):
        if not wcarried[o]:
            if oist[o, S.I_HEAD] >= 0:
                release(pts, nxt, meta, oist[o, S.I_HEAD])
            acc[ACC_DISS_RELEASED] += ofs[o, S.F_DISS]
    for q in range(nc, nc_old):
        _clear_row(wfs, wist, wcq, q)
    for w in range(nw):
        for d in range(3):
            walls[w, 9 + d] = walls[w, d]
    ictl[ICTL_NWCAND] = nc
    ictl[ICTL_NPAIRS] = k
    ictl[ICTL_NREBUILDS] += 1
    return k


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
def _step_linear(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        linear.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def _step_mindlin(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        mindlin.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def _step_md_incremental(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        md_incremental.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def _step_jaeger(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        jaeger.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


# Walls: few contacts, so jaeger's is called rather than inlined (each inlined copy of jaeger.step
# costs ~25-50 s of compilation; the call ~15 ns).
@njit(_nrt=False, inline="always")
def _step_jaeger_outlined(law, energy, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    if energy or not (delta > 0.0):
        contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        jaeger.step_outlined(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def _load_prm(prm, mtab, p, pk, row):
    """The row's pair record into prm: the material pair's record (only when it changes from the
    last row's) and the row's own R* and Hertz coefficient."""
    if p != prm[PRM_PAIR]:
        for f in range(S.N_PARAM):
            prm[f] = mtab[p, f]
        prm[PRM_PAIR] = p
    prm[S.P_RSTAR] = pk[row, PK_RSTAR]
    prm[S.P_CN] = pk[row, PK_CN]


@njit(_nrt=False, inline="always")
def _turn_frame(cq, c, nx, ny, nz, spin_x, spin_y, spin_z, dt, one_product_fewer):
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


# scratch columns of the pair loop's first pass, one row per touching pair
SC_NX = 0
SC_NY = 1
SC_NZ = 2
SC_DELTA = 3
SC_VN = 4
SC_DSX = 5
SC_DSY = 6
SC_DIST = 7
N_SC = 8


@njit(_nrt=False, inline="always")
def _row_index(a, k):
    """a[k] of a PAIR_INDEX array (pi, pj, act: never negative) widened by zero extension, which tells
    the compiler the index is not negative: numba then drops its wraparound of negative indices (a
    compare and a select per array indexed, the inlined law's row accesses included): on
    packing_4000 (mindlin) the whole step x0.95 against int64 indices, where int32 indices read
    as they are gain nothing (x1.02). Results are the same bit for bit."""
    return np.int64(np.uint32(a[k]))


@njit(_nrt=False, inline="always")
def _cell_box(cell):
    return (cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2], cell[CELL_RATE], cell[CELL_RATE + 1],
            cell[CELL_RATE + 2], cell[CELL_TILT], cell[CELL_TILT + 1], cell[CELL_TILT + 2], cell[CELL_SHEAR_RATE],
            cell[CELL_SHEAR_RATE + 1], cell[CELL_SHEAR_RATE + 2])


@njit(_nrt=False, inline="always")
def _pair_branch(sheared, box, per, pos, pi, pj, c):
    """The minimum image of x_j - x_i of pair row c."""
    Lx, Ly, Lz, ex, ey, ez, txy, txz, tyz, gxy, gxz, gyz = box
    perx, pery, perz = per
    i = _row_index(pi, c)
    j = _row_index(pj, c)
    dx = pos[j, 0] - pos[i, 0]
    dy = pos[j, 1] - pos[i, 1]
    dz = pos[j, 2] - pos[i, 2]
    if sheared:
        return min_image_tilted(dx, dy, dz, Lx, Ly, Lz, txy, txz, tyz, perx, pery, perz)
    return min_image(dx, dy, dz, Lx, Ly, Lz, perx, pery, perz)


@njit(_nrt=False, inline="always")
def _pair_row_kinematics(sheared, law, energy, dt, box, dx, dy, dz, vel, omega, radius, prm, mtab, pi, pj, pfs, pist,
                         pcq, pk, pm, pts, nxt, meta, out, live, c):
    """Kinematics of pair row c, given its branch vector (dx, dy, dz) (_pair_branch): overlap,
    normal, frame update and shift increment. box: the cell's lengths, strain rates, tilts and
    shear rates (_cell_box; the tuple keeps an inlined call under CPython's 30 positional
    arguments, past which it becomes a *args call that numba cannot inline).

    Returns (status, nx, ny, nz, delta, vn, dsx, dsy, dist): status 1 touching, 0 not touching
    (an opening contact has been released), -1 diverged (out[OUT_CI/CJ] set).

    live[c] != 0 for every row that touches or holds history (refresh_live; kept here): a row that
    neither touches nor is live is passed over without reading its pfs and pist rows, which are
    most of the memory the first pass touches for the half of the rows that do not touch."""
    Lx, Ly, Lz, ex, ey, ez, txy, txz, tyz, gxy, gxz, gyz = box
    i = _row_index(pi, c)
    j = _row_index(pj, c)
    ri = radius[i]
    rj = radius[j]
    rs = ri + rj
    d2 = dx * dx + dy * dy + dz * dz
    if d2 >= rs * rs:
        if live[c] != 0:
            # the same test as without the flags, so results are unchanged
            if pfs[c, S.F_DELTA] > 0.0 or pist[c, S.I_HEAD] >= 0:
                if energy:
                    _load_prm(prm, mtab, pm[c], pk, c)
                    contact_step(law, prm, pfs, pist, c, rs - math.sqrt(d2), 0.0, 0.0, pts, nxt, meta)
                else:
                    separate(pfs, pist, c, pts, nxt, meta)
            # with energy on, the law decides what an opening keeps
            live[c] = 1 if (pfs[c, S.F_DELTA] > 0.0 or pist[c, S.I_HEAD] >= 0) else 0
        return 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    live[c] = 1
    was = pfs[c, S.F_DELTA] > 0.0
    dist = math.sqrt(d2)
    delta = rs - dist
    if not (delta < pk[c, PK_LIMIT]):
        out[OUT_CI] = i
        out[OUT_CJ] = j
        return -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    inv = 1.0 / dist
    nx = dx * inv
    ny = dy * inv
    nz = dz * inv
    vx, vy, vz = contact_point_velocity(vel[i, 0], vel[i, 1], vel[i, 2], omega[i, 0], omega[i, 1], omega[i, 2],
                                        vel[j, 0], vel[j, 1], vel[j, 2], omega[j, 0], omega[j, 1], omega[j, 2],
                                        nx, ny, nz, ri, rj, delta)
    # the homogeneous flow of the cell moves j relative to i by rate (x) branch
    vx += ex * dx
    vy += ey * dy
    vz += ez * dz
    if sheared:
        vx += gxy * dy + gxz * dz
        vy += gyz * dz
    vn = vx * nx + vy * ny + vz * nz
    if was:
        qw, qx, qy, qz = _turn_frame(pcq, c, nx, ny, nz,
                                     0.5 * (omega[i, 0] + omega[j, 0]), 0.5 * (omega[i, 1] + omega[j, 1]),
                                     0.5 * (omega[i, 2] + omega[j, 2]), dt, not sheared)
        dsx, dsy, _ = quat_rotate(qw, -qx, -qy, -qz, (vx - vn * nx) * dt, (vy - vn * ny) * dt,
                                  (vz - vn * nz) * dt)
    else:
        # first touch: the shift counts from the touching point, which lies within this step
        frame_init(pcq, c, nx, ny, nz)
        dsx = 0.0
        dsy = 0.0
    return 1, nx, ny, nz, delta, vn, dsx, dsy, dist


@njit(_nrt=False, inline="always")
def _pair_row_force(law_step, law, energy, visc, dt, force, torque, radius, prm, mtab, pi, pj, pfs, pist, pcq, pk, pm,
                    pts, nxt, meta, c, nx, ny, nz, delta, vn, dsx, dsy):
    """The law and the force and torque sums of touching pair row c; returns the force on j and
    the viscous work of the step."""
    _load_prm(prm, mtab, pm[c], pk, c)
    law_step(law, energy, prm, pfs, pist, c, delta, dsx, dsy, pts, nxt, meta)
    fn = pfs[c, S.F_N]
    visc_work = 0.0
    if visc > 0.0:
        fd = -pk[c, PK_DAMP] * math.sqrt(math.sqrt(delta)) * vn
        fn += fd
        visc_work = -fd * vn * dt
    Tx, Ty, Tz = quat_rotate(pcq[c, 0], pcq[c, 1], pcq[c, 2], pcq[c, 3], pfs[c, S.F_TX], pfs[c, S.F_TY], 0.0)
    i = _row_index(pi, c)
    j = _row_index(pj, c)
    # force on j (on i: the opposite)
    fx = fn * nx - Tx
    fy = fn * ny - Ty
    fz = fn * nz - Tz
    force[j, 0] += fx
    force[j, 1] += fy
    force[j, 2] += fz
    force[i, 0] -= fx
    force[i, 1] -= fy
    force[i, 2] -= fz
    # n x f; torque on i is -(r_i - delta/2) n x f, on j -(r_j - delta/2) n x f
    cx = ny * fz - nz * fy
    cy = nz * fx - nx * fz
    cz = nx * fy - ny * fx
    li = radius[i] - 0.5 * delta
    lj = radius[j] - 0.5 * delta
    torque[i, 0] -= li * cx
    torque[i, 1] -= li * cy
    torque[i, 2] -= li * cz
    torque[j, 0] -= lj * cx
    torque[j, 1] -= lj * cy
    torque[j, 2] -= lj * cz
    return fx, fy, fz, visc_work


# relative margin on the squared contact distance of _select_rows (rounding differences are ~1e-16)
SELECT_MARGIN = 1.0 + 1e-9


@njit(_nrt=False, inline="always")
def _select_rows(sheared, box, per, pos, radius, pi, pj, live, npairs, act, sc):
    """The rows the kinematics must visit (those that may touch, or are live) into act[0:k], with
    their branch vectors in sc[0:k, SC_NX:SC_NZ + 1] (read there rather than computed again);
    returns k.

    Branch-free: whether a row of the neighbour list touches is a coin toss (packing_4000: 6100
    of 13 600 rows), so the test as a branch mispredicted on every other row, ~35 cycles each: a
    scan over the rows with the branch 195 us, without it (this loop) 57 us. Each row's index is
    written and the count advances by the test. The margin makes the selection a superset of the
    rows _pair_row_kinematics finds touching whatever the rounding of d2 here (its own test
    decides), so the physics does not depend on the selection. On packing_4000 the pair loop runs
    x0.92 (mindlin) and x0.94 (jaeger) against a branching scan. The wall candidates scan with a
    branch: a third of them do not touch, too few for the selection to pay (x1.04 measured)."""
    k = 0
    for c in range(npairs):
        dx, dy, dz = _pair_branch(sheared, box, per, pos, pi, pj, c)
        rs = radius[_row_index(pi, c)] + radius[_row_index(pj, c)]
        act[k] = c
        sc[k, SC_NX] = dx
        sc[k, SC_NY] = dy
        sc[k, SC_NZ] = dz
        k += (dx * dx + dy * dy + dz * dz < rs * rs * SELECT_MARGIN) | (live[c] != 0)
    return k


# Compiled twice, once per cell kind, each wrapper inlining the body once with `sheared` a constant:
# the orthogonal cell's loop then has no trace of the shear terms (a run-time flag in the one loop
# cost 5-7 % of the pass). Not both inlined into pair_forces: that build computed different
# rounding when compiled afresh and when loaded from numba's cache, so a run and its restart
# in another process parted after a few thousand steps.
@njit(_nrt=False, inline="always")
def _pair_kinematics(sheared, select, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq,
                     pk, pm, pts, nxt, meta, out, sc, act, live):
    """First pass of the two-pass pair loop; returns the number of touching pairs, or -1 on divergence.

    `select` (a compile-time constant): visit only the rows _select_rows lists (the engine), else
    every row (the reference of tests/test_engine_row_selection.py: the same results bit for bit).
    The touching rows are written over the front of the selected list (never ahead of the read)."""
    law = ictl[ICTL_LAW]
    energy = ictl[ICTL_ENERGY] != 0
    dt = ctl[CTL_DT]
    box = _cell_box(cell)
    per = (ictl[ICTL_PERIODIC] != 0, ictl[ICTL_PERIODIC + 1] != 0, ictl[ICTL_PERIODIC + 2] != 0)
    npairs = ictl[ICTL_NPAIRS]
    if select:
        nvisit = _select_rows(sheared, box, per, pos, radius, pi, pj, live, npairs, act, sc)
    else:
        nvisit = npairs
    na = 0
    for k in range(nvisit):
        if select:
            # read before sc[na] (na <= k) is written below
            c = _row_index(act, k)
            dx = sc[k, SC_NX]
            dy = sc[k, SC_NY]
            dz = sc[k, SC_NZ]
        else:
            c = k
            dx, dy, dz = _pair_branch(sheared, box, per, pos, pi, pj, c)
        st, nx, ny, nz, delta, vn, dsx, dsy, dist = _pair_row_kinematics(
            sheared, law, energy, dt, box, dx, dy, dz, vel, omega, radius, prm, mtab, pi, pj, pfs, pist, pcq, pk, pm,
            pts, nxt, meta, out, live, c)
        if st == 0:
            continue
        if st < 0:
            return -1
        act[na] = c
        sc[na, SC_NX] = nx
        sc[na, SC_NY] = ny
        sc[na, SC_NZ] = nz
        sc[na, SC_DELTA] = delta
        sc[na, SC_VN] = vn
        sc[na, SC_DSX] = dsx
        sc[na, SC_DSY] = dsy
        sc[na, SC_DIST] = dist
        na += 1
    return na


@njit(_nrt=False)
def _pair_kinematics_orthogonal(pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                pts, nxt, meta, out, sc, act, live):
    return _pair_kinematics(False, True, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
                            pcq, pk, pm, pts, nxt, meta, out, sc, act, live)


# Compiled with the usual fastmath flags: graindem._jit makes a freshly compiled and a cached process
# run the same machine code, so a sheared run and its restart in a new process agree bit for bit;
# tests/test_numba_cache_determinism.py (sheared, walled and moving-lid stages) holds them to it.
@njit(_nrt=False)
def _pair_kinematics_sheared(pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                             pts, nxt, meta, out, sc, act, live):
    return _pair_kinematics(True, True, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
                            pcq, pk, pm, pts, nxt, meta, out, sc, act, live)


@njit(_nrt=False, inline="always")
def _no_prefetch(act, a, na, pist, pts, nxt, meta):
    pass


@njit(_nrt=False, inline="always")
def _prefetch_store_ahead(act, a, na, pist, pts, nxt, meta):
    """jaeger's force pass: hint the history points the touching rows PREFETCH_TOP, _BELOW and
    _BELOW2 ahead will read (their top, the point below, the one below that) and the free point,
    as laws._prefetch_ahead does for the batched kernel, and only for a store beyond the L2 cache
    (PREFETCH_MIN_POINTS); the walk itself is laws.prefetch_stacks. Indices unsigned (a < na): no
    wraparound arithmetic.

    Why: on the 4096-sphere biaxial test (jaeger, 131 000-490 000 live points) the force kernel
    runs x0.89-0.92 against the pass without hints (whole step x0.90-0.93; 1000 spheres x0.94);
    hinting only the top point gives less (x1.08 against x1.13 without hints, relative to these
    three), and the distances matter little ((48, 24, 8) and (32, 16, 6) alike)."""
    if pts.shape[0] < PREFETCH_MIN_POINTS:
        return
    last = np.uint64(na - 1)
    prefetch_stacks(pts, nxt, meta, pist[act[min(np.uint64(a + PREFETCH_TOP), last)], S.I_HEAD],
                     pist[act[min(np.uint64(a + PREFETCH_BELOW), last)], S.I_HEAD],
                     pist[act[min(np.uint64(a + PREFETCH_BELOW2), last)], S.I_HEAD])


# `prefetch_ahead`: _prefetch_store_ahead for jaeger, _no_prefetch (no code at all) for the others.
@njit(_nrt=False, inline="always")
def _pair_force_pass(law_step, prefetch_ahead, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq,
                     pk, pm, pts, nxt, meta, acc, sc, act, na):
    """Second pass of the two-pass pair loop: the law and the sums over the touching rows."""
    law = ictl[ICTL_LAW]
    energy = ictl[ICTL_ENERGY] != 0
    dt = ctl[CTL_DT]
    visc = ctl[CTL_VISC]
    # local sums: the arrays may alias as far as the compiler knows, so sums kept in acc[] would
    # be loaded and stored for every contact
    s00 = 0.0
    s01 = 0.0
    s02 = 0.0
    s10 = 0.0
    s11 = 0.0
    s12 = 0.0
    s20 = 0.0
    s21 = 0.0
    s22 = 0.0
    visc_work = 0.0
    for a in range(na):
        prefetch_ahead(act, a, na, pist, pts, nxt, meta)
        c = _row_index(act, a)
        nx = sc[a, SC_NX]
        ny = sc[a, SC_NY]
        nz = sc[a, SC_NZ]
        fx, fy, fz, wv = _pair_row_force(law_step, law, energy, visc, dt, force, torque, radius, prm, mtab, pi, pj, pfs,
                                         pist, pcq, pk, pm, pts, nxt, meta, c, nx, ny, nz, sc[a, SC_DELTA],
                                         sc[a, SC_VN], sc[a, SC_DSX], sc[a, SC_DSY])
        visc_work += wv
        # branch vector l = dist n (the minimum image of x_j - x_i)
        dist = sc[a, SC_DIST]
        dx = dist * nx
        dy = dist * ny
        dz = dist * nz
        s00 += fx * dx
        s01 += fx * dy
        s02 += fx * dz
        s10 += fy * dx
        s11 += fy * dy
        s12 += fy * dz
        s20 += fz * dx
        s21 += fz * dy
        s22 += fz * dz
    _store_pair_sums(acc, s00, s01, s02, s10, s11, s12, s20, s21, s22, visc_work)


@njit(_nrt=False, inline="always")
def _store_pair_sums(acc, s00, s01, s02, s10, s11, s12, s20, s21, s22, visc_work):
    acc[ACC_STRESS + 0] = s00
    acc[ACC_STRESS + 1] = s01
    acc[ACC_STRESS + 2] = s02
    acc[ACC_STRESS + 3] = s10
    acc[ACC_STRESS + 4] = s11
    acc[ACC_STRESS + 5] = s12
    acc[ACC_STRESS + 6] = s20
    acc[ACC_STRESS + 7] = s21
    acc[ACC_STRESS + 8] = s22
    acc[ACC_VISC_WORK] += visc_work


# One force pass per law, each inlining only its own law, so that mindlin's loop does not carry
# jaeger's body and its registers.
@njit(_nrt=False)
def _pair_force_pass_linear(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                            pts, nxt, meta, acc, sc, act, na):
    _pair_force_pass(_step_linear, _no_prefetch, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, acc, sc, act, na)


@njit(_nrt=False)
def _pair_force_pass_mindlin(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                             pts, nxt, meta, acc, sc, act, na):
    _pair_force_pass(_step_mindlin, _no_prefetch, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, acc, sc, act, na)


@njit(_nrt=False)
def _pair_force_pass_md_incremental(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                    pts, nxt, meta, acc, sc, act, na):
    _pair_force_pass(_step_md_incremental, _no_prefetch, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, acc, sc, act, na)


@njit(_nrt=False)
def _pair_force_pass_jaeger(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                            pts, nxt, meta, acc, sc, act, na):
    _pair_force_pass(_step_jaeger, _prefetch_store_ahead, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, acc, sc, act, na)


@njit(_nrt=False)
def pair_forces(pos, vel, omega, force, torque, radius, prm, mtab, cell, ctl, ictl,
                pi, pj, pfs, pist, pcq, pk, pm, pts, nxt, meta, acc, out, sc, act, live):
    """Contact forces of all pairs of the half list; returns False if a contact diverged.

    Two passes: the kinematics of every pair that may touch or holds state (picked first by a
    branch-free selection, _select_rows) (overlap, normal, frame update, shift increment) into
    the scratch rows `sc` of the touching pairs, listed in `act`; then the law and the force sums
    over those, in the pass compiled for the run's law. `live`: refresh_live's flags, kept up to date
    here (a caller outside run_steps sets them with refresh_live first). Each pass's loop body is
    small enough that the processor overlaps the long dependency chains of consecutive contacts
    (frame update; law), which one fused loop does not: with the law specialised, a fused pass
    (kinematics, law, sums per row) is slower for mindlin (637 against 596 us per step on
    packing_4000, x1.05 in the orthogonal cell without sc and act) and jaeger (735 against 706 us).
    """
    law = ictl[ICTL_LAW]
    if is_sheared(cell):
        na = _pair_kinematics_sheared(pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq,
                                      pk, pm, pts, nxt, meta, out, sc, act, live)
    else:
        na = _pair_kinematics_orthogonal(pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
                                         pcq, pk, pm, pts, nxt, meta, out, sc, act, live)
    if na < 0:
        return False
    if law == MINDLIN:
        _pair_force_pass_mindlin(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                 pts, nxt, meta, acc, sc, act, na)
    elif law == JAEGER:
        _pair_force_pass_jaeger(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                pts, nxt, meta, acc, sc, act, na)
    elif law == MD_INCREMENTAL:
        _pair_force_pass_md_incremental(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk,
                                        pm, pts, nxt, meta, acc, sc, act, na)
    else:
        _pair_force_pass_linear(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                pts, nxt, meta, acc, sc, act, na)
    return True


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
                    _load_prm(prm, mtab, wm[c], wk, c)
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
            qw, qx, qy, qz = _turn_frame(wcq, c, nx, ny, nz, 0.5 * omega[i, 0], 0.5 * omega[i, 1],
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
        _load_prm(prm, mtab, wm[c], wk, c)
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
    return _wall_pass(_step_linear, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def _wall_pass_mindlin(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                       wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(_step_mindlin, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def _wall_pass_md_incremental(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                              wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(_step_md_incremental, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)


@njit(_nrt=False)
def _wall_pass_jaeger(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                      wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out):
    return _wall_pass(_step_jaeger_outlined, pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
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


@njit(_nrt=False)
def servo(cell, ctl, ictl, acc):
    """Strain rates of the periodic cell for the next step: prescribed, or servo on stress.

    Also counts the work the cell's deformation does on the assembly, -V sum_k sigma_kk rate_k dt
    (compression positive: shrinking the cell does positive work), by the trapezoid rule.
    """
    vol = cell[CELL_L] * cell[CELL_L + 1] * cell[CELL_L + 2]
    for k in range(3):
        rate_before = cell[CELL_RATE + k]
        if ictl[ICTL_PERIODIC + k] == 0:
            cell[CELL_RATE + k] = 0.0
        elif ictl[ICTL_MODE + k] == 1:
            sigma = acc[ACC_STRESS + 4 * k] / vol
            target = ctl[CTL_TARGET + k]
            lim = ctl[CTL_MAXRATE + k]
            # proportional-integral: the integral removes the steady error of a proportional
            # servo that must follow a steady strain rate (dilatancy in a biaxial test)
            p_term = ctl[CTL_GAIN + k] * (sigma - target) / target
            integral = cell[CELL_INTEGRAL + k] + ctl[CTL_INTEGRAL + k] * p_term
            if integral > lim:
                integral = lim
            elif integral < -lim:
                integral = -lim
            cell[CELL_INTEGRAL + k] = integral
            rate = p_term + integral
            if rate > lim:
                rate = lim
            elif rate < -lim:
                rate = -lim
            cell[CELL_RATE + k] = rate
        else:
            cell[CELL_RATE + k] = ctl[CTL_RATE + k]
        # trapezoid rule: the stress now closes the last step and opens the next one
        acc[ACC_BOUNDARY_WORK] -= 0.5 * acc[ACC_STRESS + 4 * k] * (rate_before + cell[CELL_RATE + k]) * ctl[CTL_DT]
    # off-diagonal velocity gradients L_xy, L_xz, L_yz: prescribed; their share of -V sigma:L dt
    # pairs each with the stress component sum f_a l_b of the same (a, b) = (0, 1), (0, 2), (1, 2)
    for k in range(3):
        before = cell[CELL_SHEAR_RATE + k]
        now = ctl[CTL_SHEAR + k]
        cell[CELL_SHEAR_RATE + k] = now
        if before != 0.0 or now != 0.0:
            acc[ACC_BOUNDARY_WORK] -= 0.5 * acc[ACC_STRESS + (1 if k == 0 else (2 if k == 1 else 5))] * (before + now) * ctl[CTL_DT]


@njit(_nrt=False)
def advance_particles(pos, vel, omega, quat, force, torque, mass, inertia, cell, ctl, ictl,
                      pos_build, acc, out):
    """Fused pass: damping, kick, drift (with the cell's flow), force reset, skin check; then the
    orientations (_turn_orientations).

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


@njit
def compact_store(pist, npairs, wist, nwrows, pts, nxt, meta):
    """Lay the live history points out in row order: the stacks of pair rows 0..npairs-1, then of
    wall rows 0..nwrows-1, each set as store.compact_into lays it out: the top HOT_POINTS (3)
    points of every stack in one region, then the rest of every stack, a stack's points in each
    consecutive, bottom first (a walk down a stack runs backwards through consecutive points); the
    free points follow in index order, so the next pushes take consecutive points too. Only indices
    change (heads in pist/wist, links in nxt): every point keeps its values and slip flag, so
    results are unchanged.

    The separate region of the top points: a step reads and writes only a stack's top three
    points, which a plain layout leaves at the far end of each stack (~16 points, 500 bytes apart
    in the biaxial test); together they stream (4096-sphere biaxial test, jaeger: x0.98-0.99, the
    same trajectory bit for bit).

    Why: the free list hands out whatever point was freed last, so after some hundred steps a
    contact's points lie scattered through a store several times larger than the L2 cache (the
    4096-sphere biaxial test peaks at ~490 000 points, 18 MB) and each push, pop and walk waits
    for memory. Every 100 steps (compact_on_schedule) it took the jaeger step of that test, from
    a mid-test checkpoint, from ~2.2 to ~1.65 ms. A stack whose length differs from its row's
    I_LEN (corrupt state) leaves everything unchanged and returns False."""
    live = meta[M_LIVE]
    if live == 0:
        return True
    total = 0
    for r in range(npairs):
        total += pist[r, S.I_LEN]
    for r in range(nwrows):
        total += wist[r, S.I_LEN]
    if total != live:
        return False
    new_pts = np.empty((live, pts.shape[1]))
    new_nxt = np.empty(live, dtype=nxt.dtype)
    heads_p = np.empty(npairs, dtype=np.int64)
    heads_w = np.empty(nwrows, dtype=np.int64)
    k = compact_into(nxt, pist[:npairs], pts, new_pts, new_nxt, heads_p, 0)
    if k >= 0:
        k = compact_into(nxt, wist[:nwrows], pts, new_pts, new_nxt, heads_w, k)
    if k != live:
        return False
    for q in range(live):
        for f in range(pts.shape[1]):
            pts[q, f] = new_pts[q, f]
        nxt[q] = new_nxt[q]
    meta[M_FREE_HEAD] = -1
    thread_free(nxt, meta, live, meta[M_CAPACITY])
    for r in range(npairs):
        pist[r, S.I_HEAD] = heads_p[r]
    for r in range(nwrows):
        wist[r, S.I_HEAD] = heads_w[r]
    return True


@njit
def compact_on_schedule(ictl, pist, wist, pts, nxt, meta):
    """compact_store every ictl[ICTL_COMPACT_EVERY] steps (0: COMPACT_EVERY; < 0: never), at step
    counts that are multiples of it, so that a restart lays the store out as the uninterrupted run
    did. The interval: the biaxial test rebuilds its neighbour list only every ~3000 steps, and
    within ~500 steps of a compaction the scattering already costs 15 % of the jaeger step;
    compacting every 100 steps costs ~2 ms per 100 000 live points, 1 % of those 100 steps.
    Called at the end of each step of run_steps (and by the benchmarks' split step loops)."""
    every = ictl[ICTL_COMPACT_EVERY]
    if every == 0:
        every = COMPACT_EVERY
    if every > 0 and meta[M_LIVE] > 0 and ictl[ICTL_STEP] % every == 0:
        compact_store(pist, ictl[ICTL_NPAIRS], wist, ictl[ICTL_NWCAND], pts, nxt, meta)


@njit(_nrt=False)
def refresh_live(pfs, pist, npairs, live):
    """live[c] = 1 for the pair rows that touch or hold history, else 0 (pair_forces' skip flags):
    set from the state at the start of run_steps and after each rebuild, so it never needs saving."""
    for c in range(npairs):
        live[c] = 1 if (pfs[c, S.F_DELTA] > 0.0 or pist[c, S.I_HEAD] >= 0) else 0


@njit
def run_steps(nsteps, pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid, mtab,
              cell, ctl, ictl, walls, wcand, pstart, pi, pj, pfs, pist, pcq, pk, pm,
              qi, qj, qfs, qist, qcq, wfs, wist, wcq, wk, wm, pos_build, pts, nxt, meta, acc, out):
    """Advance up to `nsteps` steps; out[OUT_STATUS] says why it returned, out[OUT_STEPS] how far.

    A step: contact forces at the current positions from the movement of the last step, walls,
    servo, then the fused particle pass; a neighbour rebuild when some particle moved (relative to
    the cell's flow) by more than half the skin, counting the cell's own stretch; the history
    store laid out afresh every ICTL_COMPACT_EVERY steps (compact_on_schedule).
    """
    out[OUT_STATUS] = STATUS_DONE
    out[OUT_STEPS] = 0
    out[OUT_PARTICLE] = -1
    out[OUT_CI] = -1
    out[OUT_CJ] = -1
    prm = np.empty(N_PRM)
    prm[PRM_PAIR] = -1.0
    skin = ctl[CTL_SKIN]
    cutoff = 2.0 * ctl[CTL_RMAX] + skin
    nw = ictl[ICTL_NWALLS]
    sc = np.empty((pi.shape[0], N_SC))
    act = np.empty(pi.shape[0], dtype=np.int32)
    live = np.empty(pi.shape[0], dtype=np.uint8)
    refresh_live(pfs, pist, ictl[ICTL_NPAIRS], live)
    for step in range(nsteps):
        if meta[M_CAPACITY] - meta[M_LIVE] < ictl[ICTL_NPAIRS] + ictl[ICTL_N] * nw:
            out[OUT_STATUS] = STATUS_STORE_LOW
            return
        ok = pair_forces(pos, vel, omega, force, torque, radius, prm, mtab, cell, ctl, ictl,
                         pi, pj, pfs, pist, pcq, pk, pm, pts, nxt, meta, acc, out, sc, act, live)
        if ok and nw > 0:
            ok = wall_forces(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                             wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out)
        if not ok:
            out[OUT_STATUS] = STATUS_DIVERGED
            return
        servo(cell, ctl, ictl, acc)
        maxd2 = advance_particles(pos, vel, omega, quat, force, torque, mass, inertia, cell, ctl, ictl,
                                  pos_build, acc, out)
        if maxd2 < 0.0:
            out[OUT_STATUS] = STATUS_DIVERGED
            return
        wmove = 0.0
        for w in range(nw):
            for d in range(3):
                # the wall pushes the particles with -F (F: the particles' force on it)
                acc[ACC_BOUNDARY_WORK] -= acc[ACC_WALL + 3 * w + d] * walls[w, 6 + d] * ctl[CTL_DT]
                walls[w, d] += walls[w, 6 + d] * ctl[CTL_DT]
            # how far the wall moved along its normal since the rebuild
            m = abs((walls[w, 0] - walls[w, 9]) * walls[w, 3] + (walls[w, 1] - walls[w, 10]) * walls[w, 4]
                    + (walls[w, 2] - walls[w, 11]) * walls[w, 5])
            if m > wmove:
                wmove = m
        ictl[ICTL_STEP] += 1
        out[OUT_STEPS] = step + 1
        stretch = 0.0
        for k in range(3):
            s = abs(cell[CELL_L + k] / cell[CELL_LBUILD + k] - 1.0)
            if s > stretch:
                stretch = s
        flip = False
        if is_sheared(cell):
            # |F - I| <= max |F_kk - 1| + |off-diagonal part| (Frobenius); a tilt past half a cell
            # length rebuilds at once, where the tilt flips and the minimum image stays exact
            xy_b = cell[CELL_TILT_BUILD]
            yz_b = cell[CELL_TILT_BUILD + 2]
            f01 = (cell[CELL_TILT] - cell[CELL_L] / cell[CELL_LBUILD] * xy_b) / cell[CELL_LBUILD + 1]
            f12 = (cell[CELL_TILT + 2] - cell[CELL_L + 1] / cell[CELL_LBUILD + 1] * yz_b) / cell[CELL_LBUILD + 2]
            f02 = (cell[CELL_TILT + 1] - cell[CELL_L] / cell[CELL_LBUILD] * cell[CELL_TILT_BUILD + 1]
                   - f01 * yz_b) / cell[CELL_LBUILD + 2]
            stretch += math.sqrt(f01 * f01 + f02 * f02 + f12 * f12)
            flip = tilt_out_of_range(cell)
        if flip or 2.0 * math.sqrt(maxd2) + stretch * cutoff > skin or math.sqrt(maxd2) + wmove > skin:
            if build_pairs(pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid, mtab, cell, ctl,
                           ictl, pstart, pi, pj, pfs, pist, pcq, pk, pm, qi, qj, qfs, qist, qcq, pos_build,
                           pts, nxt, meta, acc, walls, wcand, wfs, wist, wcq, wk, wm) < 0:
                out[OUT_STATUS] = STATUS_PAIRS_FULL
                return
            refresh_live(pfs, pist, ictl[ICTL_NPAIRS], live)
        compact_on_schedule(ictl, pist, wist, pts, nxt, meta)


@njit
def reload_contacts(law, mtab, fs, ist, nrows, rows_k, rows_m, pts, nxt, meta):
    """Give rows 0..nrows-1 the state of law `law` carrying their current (delta, N, T).

    Each active row is reset to the unloaded origin and driven in one step to its overlap with the
    shift of proportional loading, s = (T/N) kappa delta, which is Mindlin-Deresiewicz's no-slip
    path to that force ratio (exact for the history laws; the incremental laws land near it).
    rows_k, rows_m: the rows' constants and material-pair records (pk, pm or wk, wm). Used when a
    prepared packing changes law.
    """
    prm = np.empty(N_PRM)
    prm[PRM_PAIR] = -1.0
    for c in range(nrows):
        delta = fs[c, S.F_DELTA]
        if not (delta > 0.0):
            continue
        N = fs[c, S.F_N]
        tx = fs[c, S.F_TX]
        ty = fs[c, S.F_TY]
        _load_prm(prm, mtab, rows_m[c], rows_k, c)
        contact_step(law, prm, fs, ist, c, 0.0, 0.0, 0.0, pts, nxt, meta)
        kappa = prm[S.P_KAPPA]
        sx = 0.0
        sy = 0.0
        if N > 0.0:
            sx = tx / N * kappa * delta
            sy = ty / N * kappa * delta
        contact_step(law, prm, fs, ist, c, delta, sx, sy, pts, nxt, meta)


@njit
def tangential_energy_sum(law, mtab, fs, ist, nrows, rows_k, rows_m, pts, nxt):
    """Stored tangential energy of rows 0..nrows-1 (laws.tangential_energy with each row's record)."""
    prm = np.empty(N_PRM)
    prm[PRM_PAIR] = -1.0
    total = 0.0
    for c in range(nrows):
        if not (fs[c, S.F_DELTA] > 0.0):
            continue
        _load_prm(prm, mtab, rows_m[c], rows_k, c)
        total += tangential_energy(law, prm, fs, ist, c, pts, nxt)
    return total


"""The pair pass: sphere-sphere contact forces over the listed pair rows.

Two passes per step. The kinematics pass selects the rows whose spheres touch (or whose history
must be released), computes their normal, overlap, normal velocity and tangential shift increment
in the contact frame (turning the frame with the pair's rigid rotation), and writes them into a
scratch row per touching pair (SC_*). The force pass runs the law on those rows only and
accumulates forces, torques, the stress sum and the viscous work. Splitting the two keeps each loop
short enough for the compiler to keep its working set in registers, and lets the force pass
prefetch the history store ahead of the law.

The per-step kernels allocate nothing and are compiled with `_nrt=False`: otherwise numba wraps
their calls to the law and frame kernels in reference-count updates of the array arguments (12-20 %
of the force loop).
"""

import math

import numpy as np

from .._jit import njit
from ..contact import state as S
from ..contact.frames import contact_point_velocity, frame_init
from ..contact.laws import (JAEGER, MD_INCREMENTAL, MINDLIN, PREFETCH_BELOW, PREFETCH_BELOW2,
                            PREFETCH_MIN_POINTS, PREFETCH_TOP, contact_step, prefetch_stacks, separate)
from ..contact.rows import load_prm, step_jaeger, step_linear, step_md_incremental, step_mindlin, turn_frame
from ..core.cell import CELL_L, CELL_RATE, CELL_SHEAR_RATE, CELL_TILT, is_sheared, min_image, min_image_tilted
from ..core.exact_sum import exact_add, exact_add_outer, exact_value
from ..core.layout import (ACC_STRESS, CTL_DT, CTL_VISC, ICTL_ENERGY, ICTL_LAW, ICTL_N, ICTL_NPAIRS, ICTL_PERIODIC,
                           LIMB_VISC_WORK, OUT_CI, OUT_CJ, PK_DAMP, PK_LIMIT)
from ..core.rotations import quat_rotate


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
# the force pass writes each row's force on j over its read kinematics (for stress_sum), and its
# viscous work (for viscous_work_sum)
SC_FX = SC_VN
SC_FY = SC_DSX
SC_FZ = SC_DSY
SC_VISC_WORK = SC_DELTA


@njit(_nrt=False, inline="always")
def _row_index(a, k):
    """a[k] of a PAIR_INDEX array (pi, pj, act: never negative) widened by zero extension, which tells
    the compiler the index is not negative: numba then drops its wraparound of negative indices (a
    compare and a select per array indexed, the inlined law's row accesses included): on
    packing_4000 (mindlin) the whole step x0.95 against int64 indices, where int32 indices read
    as they are gain nothing (x1.02). Results are the same bit for bit."""
    return np.int64(np.uint32(a[k]))


@njit(_nrt=False, inline="always")
def cell_box(cell):
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
    shear rates (cell_box; the tuple keeps an inlined call under CPython's 30 positional
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
                    load_prm(prm, mtab, pm[c], pk, c)
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
        qw, qx, qy, qz = turn_frame(pcq, c, nx, ny, nz,
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
    load_prm(prm, mtab, pm[c], pk, c)
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


# relative margin on the squared contact distance of select_rows (rounding differences are ~1e-16)
SELECT_MARGIN = 1.0 + 1e-9


@njit(_nrt=False, inline="always")
def select_rows(sheared, box, per, pos, radius, pi, pj, live, npairs, act, sc):
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
def pair_kinematics(sheared, select, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq,
                    pk, pm, pts, nxt, meta, out, sc, act, live):
    """First pass of the two-pass pair loop; returns the number of touching pairs, or -1 on divergence.

    `select` (a compile-time constant): visit only the rows select_rows lists (the engine), else
    every row (the reference of tests/test_engine_row_selection.py: the same results bit for bit).
    The touching rows are written over the front of the selected list (never ahead of the read)."""
    law = ictl[ICTL_LAW]
    energy = ictl[ICTL_ENERGY] != 0
    dt = ctl[CTL_DT]
    box = cell_box(cell)
    per = (ictl[ICTL_PERIODIC] != 0, ictl[ICTL_PERIODIC + 1] != 0, ictl[ICTL_PERIODIC + 2] != 0)
    npairs = ictl[ICTL_NPAIRS]
    if select:
        nvisit = select_rows(sheared, box, per, pos, radius, pi, pj, live, npairs, act, sc)
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
    return pair_kinematics(False, True, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
                           pcq, pk, pm, pts, nxt, meta, out, sc, act, live)


# Compiled with the usual fastmath flags: graindem._jit makes a freshly compiled and a cached process
# run the same machine code, so a sheared run and its restart in a new process agree bit for bit;
# tests/test_numba_cache_determinism.py (sheared, walled and moving-lid stages) holds them to it.
@njit(_nrt=False)
def _pair_kinematics_sheared(pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                             pts, nxt, meta, out, sc, act, live):
    return pair_kinematics(True, True, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
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
                     pk, pm, pts, nxt, meta, sc, act, na):
    """Second pass of the two-pass pair loop: the law and the force sums over the touching rows."""
    law = ictl[ICTL_LAW]
    energy = ictl[ICTL_ENERGY] != 0
    dt = ctl[CTL_DT]
    visc = ctl[CTL_VISC]
    for a in range(na):
        prefetch_ahead(act, a, na, pist, pts, nxt, meta)
        c = _row_index(act, a)
        nx = sc[a, SC_NX]
        ny = sc[a, SC_NY]
        nz = sc[a, SC_NZ]
        fx, fy, fz, wv = _pair_row_force(law_step, law, energy, visc, dt, force, torque, radius, prm, mtab, pi, pj, pfs,
                                         pist, pcq, pk, pm, pts, nxt, meta, c, nx, ny, nz, sc[a, SC_DELTA],
                                         sc[a, SC_VN], sc[a, SC_DSX], sc[a, SC_DSY])
        # the row's kinematics are read: its force and viscous work take their place, for the sums
        sc[a, SC_FX] = fx
        sc[a, SC_FY] = fy
        sc[a, SC_FZ] = fz
        sc[a, SC_VISC_WORK] = wv


# pair_forces's `want` for a pass that sums the whole stress tensor
ALL_STRESS_COMPONENTS = np.ones(9, dtype=np.uint8)


@njit(_nrt=False, inline="always")
def stress_sum(sc, act, na, pi, nown, limbs, acc, want):
    """The stress sum over the touching rows, sum of f (x) l (l = dist n, the minimum image of
    x_j - x_i; f the force on j), into acc[ACC_STRESS:+9] (row-major), exactly
    (core.exact_sum): the servo reads it, and summed in floating point its last bits would depend
    on the order of the rows (and on how the compiler reorders the sum). Counted: the rows whose
    sphere i is below nown (all of them in a serial run; on an MPI rank those of its own spheres,
    so that the ranks' accumulators, added, count every row once). limbs: the step's exact contact
    sums (layout.N_CONTACT_LIMBS rows), its first nine left holding the stress sum. Only the
    components marked in want (9,) are summed (an exact addition costs ~20 times a floating-point
    one, and a servo step reads two to four of the nine); the others keep their value in acc and
    their limbs."""
    for r in range(9):
        if want[r]:
            for k in range(limbs.shape[1]):
                limbs[r, k] = 0
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = want[0], want[1], want[2], want[3], want[4], want[5], want[6], want[7], want[8]
    for a in range(na):
        if _row_index(pi, _row_index(act, a)) >= nown:
            continue
        dist = sc[a, SC_DIST]
        dx = dist * sc[a, SC_NX]
        dy = dist * sc[a, SC_NY]
        dz = dist * sc[a, SC_NZ]
        fx = sc[a, SC_FX]
        fy = sc[a, SC_FY]
        fz = sc[a, SC_FZ]
        exact_add_outer(limbs, fx, fy, fz, dx, dy, dz, w0, w1, w2, w3, w4, w5, w6, w7, w8)
    for k in range(9):
        if want[k]:
            acc[ACC_STRESS + k] = exact_value(limbs, k)


@njit(_nrt=False, inline="always")
def viscous_work_sum(sc, act, na, pi, nown, limbs):
    """The viscous work of the touching rows (written by the force pass) into
    limbs[LIMB_VISC_WORK], cleared first, exactly: counted as stress_sum counts its rows (those
    whose sphere i is below nown), so that an MPI rank's share added to the others' is the serial
    sum; the wall pass adds its rows' work to it, and the time loop rounds the step's total once."""
    for k in range(limbs.shape[1]):
        limbs[LIMB_VISC_WORK, k] = 0
    for a in range(na):
        if _row_index(pi, _row_index(act, a)) < nown:
            exact_add(limbs, LIMB_VISC_WORK, sc[a, SC_VISC_WORK])


# One force pass per law, each inlining only its own law, so that mindlin's loop does not carry
# jaeger's body and its registers.
@njit(_nrt=False)
def pair_force_pass_linear(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                           pts, nxt, meta, sc, act, na):
    _pair_force_pass(step_linear, _no_prefetch, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, sc, act, na)


@njit(_nrt=False)
def pair_force_pass_mindlin(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                            pts, nxt, meta, sc, act, na):
    _pair_force_pass(step_mindlin, _no_prefetch, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, sc, act, na)


@njit(_nrt=False)
def pair_force_pass_md_incremental(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                   pts, nxt, meta, sc, act, na):
    _pair_force_pass(step_md_incremental, _no_prefetch, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, sc, act, na)


@njit(_nrt=False)
def pair_force_pass_jaeger(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                           pts, nxt, meta, sc, act, na):
    _pair_force_pass(step_jaeger, _prefetch_store_ahead, force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs,
                     pist, pcq, pk, pm, pts, nxt, meta, sc, act, na)


@njit(_nrt=False)
def pair_forces(pos, vel, omega, force, torque, radius, prm, mtab, cell, ctl, ictl,
                pi, pj, pfs, pist, pcq, pk, pm, pts, nxt, meta, acc, out, sc, act, live, limbs, want):
    """Contact forces of all pairs of the half list; returns False if a contact diverged.

    Two passes: the kinematics of every pair that may touch or holds state (picked first by a
    branch-free selection, select_rows) (overlap, normal, frame update, shift increment) into
    the scratch rows `sc` of the touching pairs, listed in `act`; then the law and the force sums
    over those, in the pass compiled for the run's law; then the
    components of their stress sum marked in want (9,), and with viscous damping their viscous work,
    exact (stress_sum, viscous_work_sum; limbs: the accumulator of the step's contact sums,
    core.exact_sum.new_accumulator(layout.N_CONTACT_LIMBS)). `live`: refresh_live's flags, kept up to date
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
        pair_force_pass_mindlin(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                                pts, nxt, meta, sc, act, na)
    elif law == JAEGER:
        pair_force_pass_jaeger(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                               pts, nxt, meta, sc, act, na)
    elif law == MD_INCREMENTAL:
        pair_force_pass_md_incremental(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk,
                                       pm, pts, nxt, meta, sc, act, na)
    else:
        pair_force_pass_linear(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                               pts, nxt, meta, sc, act, na)
    n_want = 0
    for k in range(9):
        n_want += want[k]
    if n_want > 0:
        stress_sum(sc, act, na, pi, ictl[ICTL_N], limbs, acc, want)
    if ctl[CTL_VISC] > 0.0:
        viscous_work_sum(sc, act, na, pi, ictl[ICTL_N], limbs)
    return True

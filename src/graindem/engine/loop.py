"""The time loop: everything a step does, for many steps, in one njit call.

run_steps returns to Python only when it is done, when the history store or the pair arrays need
to grow, or when the run diverged (layout.STATUS_*). Every COMPACT_EVERY steps it lays the history
store out afresh in pair-row order (history.compact_store: indices only, results unchanged), which
keeps the history laws' pushes, pops and walks in cache.

A step (see run_steps): pair pass, wall pass, rolling pass (runs with rolling resistance), cell
servo, integration, the walls' servo and motion, then a neighbour rebuild when the skin no longer
covers what moved.
"""

import math

import numpy as np

from .._jit import njit
from ..boundaries.servo import servo, stress_components_read
from ..boundaries.walls import WALL_BUILD, WALL_NORMAL, WALL_POINT, WALL_VEL, servo_walls, wall_forces
from ..contact.store import M_CAPACITY, M_LIVE
from ..core.cell import list_is_stale
from ..core.exact_sum import N_LIMBS, exact_value
from ..core.layout import (ACC_BOUNDARY_WORK, ACC_STRESS, ACC_VISC_WORK, ACC_WALL, CTL_DT, CTL_RMAX, CTL_SKIN,
                           CTL_VISC, ICTL_N, ICTL_NPAIRS, ICTL_NWALLS, ICTL_STEP, LIMB_VISC_WORK, N_CONTACT_LIMBS,
                           N_PRM, OUT_CI, OUT_CJ, OUT_PARTICLE, OUT_STATUS, OUT_STEPS, PRM_PAIR, STATUS_DIVERGED,
                           STATUS_DONE, STATUS_PAIRS_FULL, STATUS_STORE_LOW)
from .history import compact_on_schedule, refresh_live
from .integration import advance_particles
from .neighbours import build_pairs
from .pair_pass import N_SC, pair_forces
from .rolling_pass import rolling_pass

# run_steps's `part`: whole steps, or one step in two calls around the stress sum's completion
WHOLE_STEPS = 0
UNTIL_STRESS = 1
AFTER_STRESS = 2
# out[OUT_STATUS] after UNTIL_STRESS (beyond layout's STATUS_*)
STATUS_STRESS_READY = 10
# run_steps's `more` in a run of spheres only: no contacts but theirs
NO_MORE_STRESS = np.zeros(0)


@njit
def run_steps(nsteps, pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid, mtab,
              cell, ctl, ictl, walls, wcand, pstart, pi, pj, pfs, pist, pcq, pk, pm,
              qi, qj, qfs, qist, qcq, wfs, wist, wcq, wk, wm, pos_build, pts, nxt, meta, acc, out,
              rtab, prs, wrs, rrel, more, limbs=None, part=WHOLE_STEPS, wall_limbs=None):
    """Advance up to `nsteps` steps; out[OUT_STATUS] says why it returned, out[OUT_STEPS] how far.

    A step: contact forces at the current positions from the movement of the last step, walls,
    servo, then the fused particle pass; a neighbour rebuild when some particle moved (relative to
    the cell's flow) by more than half the skin, counting the cell's own stretch; the history
    store laid out afresh every ICTL_COMPACT_EVERY steps (compact_on_schedule).

    Rolling/twisting resistance (rolling_pass) when the rows carry rolling state: prs and wrs with
    columns, rtab the material pairs' rolling table, rrel the dissipation of rows that left the
    list; without it prs and wrs have no columns and nothing of it runs.

    more: the accumulator record (layout ACC_*) of contacts these passes do not see (in a run with
    level-set grains, theirs at the same positions), empty in a sphere run: its Love-Weber sum is
    added to the spheres' before the servo reads it, so that the one servo drives the cell on the
    whole assembly's stress, and its wall forces to the spheres' in what the walls' servo reads.

    limbs: the exact accumulator of the step's contact sums, the stress sum and the viscous work
    (layout.LIMB_*; pair_pass.stress_sum, viscous_work_sum; made here when not given), holding the
    last step's sums on return; the step's viscous work is rounded once and added to
    acc[ACC_VISC_WORK] after the wall pass (an MPI rank, which holds a share of it at
    UNTIL_STRESS, puts the total of the ranks in its place). part: WHOLE_STEPS; or, for a step whose
    stress sum is completed outside (an MPI rank adds the ranks' accumulators), UNTIL_STRESS
    (return after the pair pass, out[OUT_STATUS] STATUS_STRESS_READY, out[OUT_STEPS] 0) and then
    AFTER_STRESS (the first step starts after its pair pass, from the forces and the stress sum
    left in force, torque and acc).

    wall_limbs: the exact accumulator of the walls' forces (boundaries.walls.wall_forces; 3 n_walls
    rows, made here when not given), holding the last wall pass's sums on return: an MPI rank adds
    the ranks' accumulators between UNTIL_STRESS and AFTER_STRESS, before the walls' work reads them.
    """
    out[OUT_STATUS] = STATUS_DONE
    out[OUT_STEPS] = 0
    out[OUT_PARTICLE] = -1
    out[OUT_CI] = -1
    out[OUT_CJ] = -1
    prm = np.empty(N_PRM)
    prm[PRM_PAIR] = -1.0
    nw = ictl[ICTL_NWALLS]
    sc = np.empty((pi.shape[0], N_SC))
    act = np.empty(pi.shape[0], dtype=np.int32)
    live = np.empty(pi.shape[0], dtype=np.uint8)
    refresh_live(pfs, pist, ictl[ICTL_NPAIRS], live)
    rolling = prs.shape[1] > 0
    if limbs is None:
        stress_limbs = np.zeros((N_CONTACT_LIMBS, N_LIMBS), dtype=np.int64)
    else:
        stress_limbs = limbs
    if wall_limbs is None:
        wall_sums = np.zeros((3 * nw, N_LIMBS), dtype=np.int64)
    else:
        wall_sums = wall_limbs
    want = np.ones(9, dtype=np.uint8)
    for step in range(nsteps):
        if step > 0 or part != AFTER_STRESS:
            if meta[M_CAPACITY] - meta[M_LIVE] < ictl[ICTL_NPAIRS] + ictl[ICTL_N] * nw:
                out[OUT_STATUS] = STATUS_STORE_LOW
                return
            # all nine components of the exact stress sum cost ~20 % of a step: summed are those the
            # servo reads, and all at the last step, for the caller (a stop within the steps leaves
            # older ones in acc), and in a step completed outside
            if part != WHOLE_STEPS or step == nsteps - 1:
                for c in range(9):
                    want[c] = 1
            else:
                stress_components_read(cell, ctl, ictl, want)
            ok = pair_forces(pos, vel, omega, force, torque, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
                             pcq, pk, pm, pts, nxt, meta, acc, out, sc, act, live, stress_limbs, want)
            if ok and nw > 0:
                ok = wall_forces(pos, vel, omega, force, torque, radius, prm, mtab, ctl, ictl, walls, wcand,
                                 wfs, wist, wcq, wk, wm, pts, nxt, meta, acc, out, stress_limbs, wall_sums, want)
            if not ok:
                out[OUT_STATUS] = STATUS_DIVERGED
                return
            if ctl[CTL_VISC] > 0.0:
                acc[ACC_VISC_WORK] += exact_value(stress_limbs, LIMB_VISC_WORK)
            if part == UNTIL_STRESS:
                out[OUT_STATUS] = STATUS_STRESS_READY
                return
        if rolling:
            rolling_pass(omega, torque, radius, mass, inertia, mtab, rtab, ctl, ictl, pi, pj, pfs, pcq, pk, pm, prs,
                         wcand, wfs, wcq, wk, wm, wrs)
        if more.shape[0] > 0:
            for k in range(9):
                acc[ACC_STRESS + k] += more[ACC_STRESS + k]
        servo(cell, ctl, ictl, acc)
        maxd2 = advance_particles(pos, vel, omega, quat, force, torque, mass, inertia, cell, ctl, ictl,
                                  pos_build, acc, out)
        if maxd2 < 0.0:
            out[OUT_STATUS] = STATUS_DIVERGED
            return
        # the servo walls' velocities from the forces of this step (an MPI rank's: all ranks' sums)
        servo_walls(walls, nw, acc, more)
        for w in range(nw):
            for d in range(3):
                # the wall pushes the particles with -F (F: the particles' force on it)
                acc[ACC_BOUNDARY_WORK] -= acc[ACC_WALL + 3 * w + d] * walls[w, WALL_VEL + d] * ctl[CTL_DT]
                walls[w, WALL_POINT + d] += walls[w, WALL_VEL + d] * ctl[CTL_DT]
        wmove = wall_travel(walls, nw)
        ictl[ICTL_STEP] += 1
        out[OUT_STEPS] = step + 1
        if rebuild_due(cell, ctl, maxd2, wmove):
            if build_pairs(pos, vel, omega, quat, force, torque, radius, mass, inertia, pmat, pid, mtab, cell, ctl,
                           ictl, pstart, pi, pj, pfs, pist, pcq, pk, pm, qi, qj, qfs, qist, qcq, pos_build,
                           pts, nxt, meta, acc, walls, wcand, wfs, wist, wcq, wk, wm, prs, wrs, rrel) < 0:
                out[OUT_STATUS] = STATUS_PAIRS_FULL
                return
            refresh_live(pfs, pist, ictl[ICTL_NPAIRS], live)
        compact_on_schedule(ictl, pist, wist, pts, nxt, meta)


@njit(_nrt=False, inline="always")
def wall_travel(walls, nw):
    """How far the walls moved along their normals since the rebuild (the largest of the nw)."""
    wmove = 0.0
    for w in range(nw):
        m = abs((walls[w, WALL_POINT] - walls[w, WALL_BUILD]) * walls[w, WALL_NORMAL]
                + (walls[w, WALL_POINT + 1] - walls[w, WALL_BUILD + 1]) * walls[w, WALL_NORMAL + 1]
                + (walls[w, WALL_POINT + 2] - walls[w, WALL_BUILD + 2]) * walls[w, WALL_NORMAL + 2])
        if m > wmove:
            wmove = m
    return wmove


@njit(_nrt=False, inline="always")
def rebuild_due(cell, ctl, maxd2, wmove):
    """Whether the neighbour list must be rebuilt after a step: some particle moved (relative to the
    cell's flow; maxd2 its squared displacement since the rebuild) by more than half the skin,
    counting the cell's own stretch and shear since the rebuild, or a wall moved (wmove along its
    normal) by what is left of the skin, or the cell's tilt must flip. An infinite skin: never
    (an MPI rank's steps, whose rebuilds, flips included, are collective: parallel.subdomain)."""
    skin = ctl[CTL_SKIN]
    if skin == math.inf:
        return False
    cutoff = 2.0 * ctl[CTL_RMAX] + skin
    return list_is_stale(cell, math.sqrt(maxd2), cutoff, skin) or math.sqrt(maxd2) + wmove > skin

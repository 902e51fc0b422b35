"""The "hertz_curvature" contact law of rigid level-set grains: one Hertzian contact per pair of
convex grains and per grain and wall, with the local curvature and any of the four tangential laws.

Per contact and step (the physics of `contact.shaped_single`, verified there against Johnson's
elliptical Hertz and the sphere engine's contact):
1. Geometry (`contact.shape_geometry.contact_geometry`): contact point x, normal n (grain i to
   grain j, or grain to wall), overlap delta and principal relative curvatures lam1 <= lam2, by
   Newton steps on the two tricubic spline level sets. Newton starts from the row's last converged
   point carried with grain i (kept while the pair is within the grids' reach, touching or not), or
   else from the deepest surface node of either grain in the other (`shape_geometry.deepest_node`,
   nodes outside the other grain's bounding sphere skipped) when that node lies within
   NEWTON_REACH grid cells of it.
2. Frame and shift by the spheres' rule (`contact.frames`): the frame quaternion turns by tilt and
   the pair's mean spin; the shift increment is the relative velocity of the two material points
   at x, projected on the contact plane, times dt (velocities at the half step, as for spheres);
   in a deforming periodic cell the image of grain j moves relative to grain i with the cell's
   affine flow between the two centres on top of its own velocity (as in `contact.levelset_contact`).
3. Law: `laws.contact_step` on the material pair's parameter record at R* = 1 (`Simulation.
   pair_record`), every force scaled by sqrt(R), R the effective radius of the rule
   (`contact.shape_hertz`, default "elliptic") bounded by curvature_limit x R_ref (R_ref: the
   pair's volume-equivalent R*). In Hertz-Mindlin and Jäger's superposition the displacement
   relations do not involve R and every force is proportional to sqrt(R), so this is the law at R;
   when R changes along the history the history is re-evaluated at the current R (see
   `contact.shaped_single` for what that approximates).
4. Optional normal damping: f_d = -2 zeta sqrt(m_eff k_n) v_n with Hertz's tangent stiffness
   k_n = 3/2 N/delta (a constant coefficient of restitution for each zeta, as the spheres' law).
5. Stress and walls: each contact force adds to the Love-Weber stress and the wall forces in `acc`
   as the node laws' forces do (force on i times the branch from j's image to i; force on a wall
   times the vector from the grain's centre to the contact point), so the cell's servo, the walls'
   work and measure() read them alike. Walls move with their velocities.

Step: `levelset.run_grains`' step (`levelset.start_step`: servo, walls, drift with the cell's affine flow and
local damping, the neighbour rebuild by the same rule, half_kick) with these forces (`run_hertz`).
Friction: the material pair's from the grains' table (LevelSetBodies.mu_tab, `set_friction`).

Rows. Pair rows are parallel to the listed grain pairs and keyed by (i, j) in `hkey`; at a
neighbour rebuild every row is carried to the new position of its pair (`rebuild_rows`), and a row
whose pair left the list gives its history back to the store and its energy counters to `hacc`.
Wall rows: grain g and wall w at row g * W + w. Each row: the law's state (fs, ist, the history in
the shared `HistoryStore`), its frame quaternion, and the record H_* below. All of it is in the
checkpoint, so a restart continues bit for bit.

Energies (`energies`): Hertz normal 2/5 N delta; stored tangential sqrt(R) times the law's energy at
R* = 1 (`laws.tangential_energy`); tangential work and frictional dissipation as the sum over steps
of sqrt(R) times each step's increment of the law's counters (counted only with
Simulation(energy_accounting=True), as for spheres); viscous dissipation.
"""

import math

import numpy as np

from .._jit import njit
from ..contact import shape_geometry as SG
from ..contact import state as S
from ..contact.frames import frame_init, frame_update, from_frame, to_frame
from ..contact.laws import TANGENTIAL_LAWS, law_id, separate, tangential_energy
from ..contact.rows import step_jaeger_outlined, step_linear, step_md_incremental, step_mindlin
from ..contact.levelset_spline import spline_coefficients
from ..contact.shape_hertz import SHAPE_HERTZ, effective_radius, radius_rule
from ..contact.levelset_contact import E_NORMAL, E_SLIDING, E_TANGENT, E_TWORK, E_VISC, add_stress
from ..contact.store import M_CAPACITY, M_LIVE, HistoryStore
from ..core.cell import CELL_L, CELL_RATE, CELL_SHEAR_RATE, CELL_TILT, is_sheared
from ..core.layout import ACC_STRESS, ACC_WALL, CTL_LOCAL_DAMP, WALL_NORMAL, WALL_POINT, WALL_VEL
from .levelset import (GC_BAD_I, GC_BAD_J, GC_NCONTACTS, GC_NCP, GC_NEED, GC_NPAIRS, GC_STATUS, GC_STEP,
                       MOTION_DYNAMIC, STATUS_DIVERGED, STATUS_DONE, STATUS_PAIRS_FULL, half_kick, neighbour_cutoff,
                       node_pair_forces, node_wall_forces, pair_image, pair_mass, rebuild, start_step,
                       update_rotations, walls_half_work)

LAW_NAME = SHAPE_HERTZ
# the law of a material pair (HertzRows.laws)
LAW_NODE = 0      # the grains' node law ("area" or "node", contact.levelset_contact)
LAW_HERTZ = 1     # this law

# a cold start runs Newton only when some surface node lies within this many of A's grid cells of the
# other body (or inside it)
NEWTON_REACH = 2.0

# row record (prow, wrow), float64
H_X = 0       # contact point minus grain i's centre at the last step (Newton's warm start)
H_WARM = 3    # 1.0: H_X is a converged Newton point
H_SCALE = 4   # sqrt(R) of the last step (0: not touching): the row's forces are H_SCALE times the law's
H_R = 5       # effective radius R of the last step
H_DISS = 6    # frictional dissipation (J)
H_WORK = 7    # tangential work (J)
# a node search that found the grains apart: a lower bound of the clearance of every node of either
# grain in the other (0: none), and the pose it holds for (the image vector from i to j, both
# quaternions); see `apart_since_search`
H_GAP = 8
H_E = 9
H_QA = 12
H_QB = 16
N_HROW = 20
# the slack on the motion bound: a spline of a signed distance has |grad phi| within a few per cent of 1
GAP_LIPSCHITZ = 1.25

# what a call of the run kernels does (run_hertz)
MODE_RUN = 0
MODE_FORCES = 1
MODE_FINISH = 2

# accumulators (hacc)
A_DISS = 0    # dissipation of rows whose pair left the neighbour list
A_WORK = 1    # their tangential work
A_VISC = 2    # viscous dissipation of the normal damping
N_HACC = 3


# ----------------------------------------------------------------------------- kernels
@njit
def template_coef(t_coef, t_coef_off, t_coef_shape, t):
    """The spline coefficient array (3-D view) of template t."""
    n = t_coef_shape[t, 0] * t_coef_shape[t, 1] * t_coef_shape[t, 2]
    o = t_coef_off[t]
    return t_coef[o:o + n].reshape((t_coef_shape[t, 0], t_coef_shape[t, 1], t_coef_shape[t, 2]))


@njit
def quat_chord(row, o, q):
    """2 sin(theta/2) of the rotation between the quaternion stored at row[o:o + 4] and q: the
    largest displacement per unit distance from the centre that the rotation gives a point."""
    d = row[o] * q[0] + row[o + 1] * q[1] + row[o + 2] * q[2] + row[o + 3] * q[3]
    return 2.0 * math.sqrt(max(0.0, 1.0 - d * d))


@njit
def apart_since_search(row, c, e0, e1, e2, qA, qB, rhoA, rhoB, plane, threshold):
    """True if no node of either body can have come within `threshold` of the other since the row's
    last node search found them apart (row[c, H_GAP] > 0), so a search now would find them apart
    again. A node of A in B's frame is rot_B^T (rot_A n - e): it moves at most |de| + rho_A chord_A +
    (|e| + rho_A) chord_B, each node's phi by at most that (times the spline's slope); and alike for
    B's nodes in A. plane: B is a wall (it does not turn; e is then A's centre to B's point)."""
    if not (row[c, H_GAP] > 0.0):
        return False
    de2 = (e0 - row[c, H_E]) ** 2 + (e1 - row[c, H_E + 1]) ** 2 + (e2 - row[c, H_E + 2]) ** 2
    cA = quat_chord(row[c], H_QA, qA)
    if plane:
        move = math.sqrt(de2) + rhoA * cA
    else:
        cB = quat_chord(row[c], H_QB, qB)
        en = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        move = math.sqrt(de2) + max(rhoA * cA + (en + rhoA) * cB, rhoB * cB + (en + rhoB) * cA)
    return row[c, H_GAP] - GAP_LIPSCHITZ * move > threshold


@njit
def sphere_clearance(nodes, posO, rotO, posP, reach):
    """The smallest distance beyond P's bounding sphere (radius `reach`) of the nodes of O that lie
    outside it (inf if none): a lower bound of their phi_P, which `deepest_node` does not evaluate."""
    best = np.inf
    r2 = reach * reach
    for k in range(nodes.shape[0]):
        b0 = nodes[k, 0]
        b1 = nodes[k, 1]
        b2 = nodes[k, 2]
        x0 = posO[0] + rotO[0, 0] * b0 + rotO[0, 1] * b1 + rotO[0, 2] * b2 - posP[0]
        x1 = posO[1] + rotO[1, 0] * b0 + rotO[1, 1] * b1 + rotO[1, 2] * b2 - posP[1]
        x2 = posO[2] + rotO[2, 0] * b0 + rotO[2, 1] * b1 + rotO[2, 2] * b2 - posP[2]
        d2 = x0 * x0 + x1 * x1 + x2 * x2
        if d2 > r2:
            best = min(best, math.sqrt(d2) - reach)
    return best


@njit
def row_kinematics(fs, ist, cq, row, c, far, body_a, body_b, reachA2, reachB2, vA, wA, vB, wB, dt, rule, r_limit,
                   max_iter, geom, x0, qA, qB):
    """Geometry, frame turn and shift of row c, the contact of grain A and body B (a grain or a
    plane) (far: the bounding spheres are apart, no geometry); the record of the geometry is left in
    `geom`. body_a = (spline coef, coef origin, h, pos, rot, nodes), body_b = (kind, the same, radius:
    a sphere's, read by shape_geometry only for a BODY_SPHERE).
    Returns (the row needs the law's step, touching, delta, dsx, dsy, sqrt(R), v_n)."""
    cA, oA, hA, posA, rotA, nodesA = body_a
    kindB, cB, oB, hB, posB, rotB, nodesB, radB = body_b
    tol = 1e-6 * hA
    if far:
        row[c, H_WARM] = 0.0
        delta = -np.inf
    else:
        warm = row[c, H_WARM] == 1.0
        if warm:
            for d in range(3):
                x0[d] = posA[d] + row[c, H_X + d]
            SG.contact_geometry(cA, oA, hA, posA, rotA, kindB, cB, oB, hB, posB, rotB, radB, x0, tol, hA, max_iter,
                                geom)
        if not warm or geom[SG.G_FLAG] != SG.GEOM_NEWTON:
            plane = kindB != SG.BODY_LEVELSET
            e0 = posB[0] - posA[0]
            e1 = posB[1] - posA[1]
            e2 = posB[2] - posA[2]
            # every node more than NEWTON_REACH grid cells outside the other body: apart (the surface
            # between nodes dips far less), and Newton would only wander outside the grids
            reach = NEWTON_REACH * hA
            if apart_since_search(row, c, e0, e1, e2, qA, qB, math.sqrt(reachA2), math.sqrt(reachB2), plane, reach):
                SG.no_geometry(geom)
            else:
                best = SG.deepest_node(nodesA, posA, rotA, kindB, cB, oB, hB, posB, rotB, radB, np.inf, x0, reachB2)
                if not plane:
                    best = SG.deepest_node(nodesB, posB, rotB, SG.BODY_LEVELSET, cA, oA, hA, posA, rotA, 0.0, best,
                                           x0, reachA2)
                if best <= reach:
                    row[c, H_GAP] = 0.0
                    SG.contact_geometry(cA, oA, hA, posA, rotA, kindB, cB, oB, hB, posB, rotB, radB, x0, tol, hA,
                                        max_iter, geom)
                else:
                    gap = best
                    if not plane:
                        gap = min(gap, sphere_clearance(nodesA, posA, rotA, posB, math.sqrt(reachB2)),
                                  sphere_clearance(nodesB, posB, rotB, posA, math.sqrt(reachA2)))
                    row[c, H_GAP] = gap if math.isfinite(gap) else 0.0
                    row[c, H_E] = e0
                    row[c, H_E + 1] = e1
                    row[c, H_E + 2] = e2
                    for d in range(4):
                        row[c, H_QA + d] = qA[d]
                        row[c, H_QB + d] = qB[d]
                    SG.no_geometry(geom)
        if geom[SG.G_FLAG] == SG.GEOM_NEWTON:
            row[c, H_WARM] = 1.0
            for d in range(3):
                row[c, H_X + d] = geom[SG.G_X + d] - posA[d]
        else:
            row[c, H_WARM] = 0.0
        delta = geom[SG.G_DELTA]
    touching = delta > 0.0
    if not touching and not (fs[c, S.F_DELTA] > 0.0 or ist[c, S.I_HEAD] >= 0):
        row[c, H_SCALE] = 0.0
        return False, False, delta, 0.0, 0.0, 0.0, 0.0
    nx = geom[SG.G_N]
    ny = geom[SG.G_N + 1]
    nz = geom[SG.G_N + 2]
    vn = 0.0
    dsx = 0.0
    dsy = 0.0
    s = row[c, H_SCALE]  # an opening row: its counters in the units of its last step
    if touching:
        # velocity of B's material point at x relative to A's
        ax = geom[SG.G_RA]
        ay = geom[SG.G_RA + 1]
        az = geom[SG.G_RA + 2]
        bx = geom[SG.G_RB]
        by = geom[SG.G_RB + 1]
        bz = geom[SG.G_RB + 2]
        ux = vB[0] + wB[1] * bz - wB[2] * by - (vA[0] + wA[1] * az - wA[2] * ay)
        uy = vB[1] + wB[2] * bx - wB[0] * bz - (vA[1] + wA[2] * ax - wA[0] * az)
        uz = vB[2] + wB[0] * by - wB[1] * bx - (vA[2] + wA[0] * ay - wA[1] * ax)
        vn = ux * nx + uy * ny + uz * nz
        if fs[c, S.F_DELTA] > 0.0:
            frame_update(cq, c, nx, ny, nz, 0.5 * (wA[0] + wB[0]), 0.5 * (wA[1] + wB[1]), 0.5 * (wA[2] + wB[2]),
                         dt)
            dsx, dsy, _ = to_frame(cq, c, (ux - vn * nx) * dt, (uy - vn * ny) * dt, (uz - vn * nz) * dt)
        else:
            # first touch: the shift counts from the touching point, which lies within this step
            frame_init(cq, c, nx, ny, nz)
        R, _ = effective_radius(rule, geom[SG.G_LAM1], geom[SG.G_LAM2], r_limit)
        s = math.sqrt(R)
        row[c, H_R] = R
    return True, touching, delta, dsx, dsy, s, vn


@njit(inline="always")
def row_law(law_step, law, count, prm, fs, ist, cq, row, c, touching, delta, dsx, dsy, s, vn, zeta, m_eff, dt, geom,
            hacc, energy, pts, nxt, meta):
    """The law's step of row c at R* = 1 (`law_step`, the material pair's record prm) with its
    forces, work and dissipation times s = sqrt(R) (an opening row's: its last step's), the Hertz
    normal energy and the sliding count into `energy`, the normal damping (ratio zeta on the
    reduced mass m_eff) into hacc. Returns (touching, fx, fy, fz): the force on body B (the
    normal of `geom` points from A to B)."""
    d0 = fs[c, S.F_DISS]
    w0 = fs[c, S.F_WORK]
    law_step(law, count, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    row[c, H_DISS] += s * (fs[c, S.F_DISS] - d0)
    row[c, H_WORK] += s * (fs[c, S.F_WORK] - w0)
    if not touching:
        row[c, H_SCALE] = 0.0
        return False, 0.0, 0.0, 0.0
    row[c, H_SCALE] = s
    energy[E_NORMAL] += 0.4 * s * fs[c, S.F_N] * delta
    ft2 = fs[c, S.F_TX] ** 2 + fs[c, S.F_TY] ** 2
    if ft2 >= (prm[S.P_MU] * fs[c, S.F_N] * (1.0 - 1e-9)) ** 2 and fs[c, S.F_N] > 0.0:
        energy[E_SLIDING] += 1.0
    fn = s * fs[c, S.F_N]
    if zeta > 0.0:
        fd = -2.0 * zeta * math.sqrt(m_eff * 1.5 * fn / delta) * vn
        fn += fd
        hacc[A_VISC] -= fd * vn * dt
    tx, ty, tz = from_frame(cq, c, fs[c, S.F_TX], fs[c, S.F_TY], 0.0)
    nx = geom[SG.G_N]
    ny = geom[SG.G_N + 1]
    nz = geom[SG.G_N + 2]
    return True, fn * nx - s * tx, fn * ny - s * ty, fn * nz - s * tz


@njit(inline="always")
def push(force, torque, b, fx, fy, fz, geom, arm):
    """Add the force (fx, fy, fz) at the contact point to body b, with its moment about b's centre
    (lever arm geom[arm:arm + 3], SG.G_RA or SG.G_RB)."""
    force[b, 0] += fx
    force[b, 1] += fy
    force[b, 2] += fz
    ax = geom[arm]
    ay = geom[arm + 1]
    az = geom[arm + 2]
    torque[b, 0] += ay * fz - az * fy
    torque[b, 1] += az * fx - ax * fz
    torque[b, 2] += ax * fy - ay * fx


@njit(inline="always")
def record_point(cp_x, cp_f, cp_ij, n_cp, geom, i, j, fx, fy, fz):
    """Record contact point n_cp (while the arrays last) of grain i and partner j with the force
    (fx, fy, fz) on the partner; returns n_cp + 1."""
    if n_cp < cp_x.shape[0]:
        for d in range(3):
            cp_x[n_cp, d] = geom[SG.G_X + d]
        # the force on the row's grain i, as the area law reports the force on a node's grain
        cp_f[n_cp, 0] = -fx
        cp_f[n_cp, 1] = -fy
        cp_f[n_cp, 2] = -fz
        cp_ij[n_cp, 0] = i
        cp_ij[n_cp, 1] = j
    return n_cp + 1


@njit(inline="always")
def hertz_forces(law_step, count, step, dt, limit, pairs, n_pairs, tmpls, grains, env, lawp, nodes, rows, out):
    """Zero and assemble the forces and moments of every grain, the Love-Weber stress and the wall
    forces (acc, as contact.levelset_contact's node pass books them); returns the number of
    contacts, or -1 when an overlap exceeds `limit` times the smaller bounding radius (gctl[GC_BAD_I/J]
    name the pair). Rows 0..n_pairs-1: the listed grain pairs (j's image through the minimum image
    of the possibly sheared cell, moving with the cell's affine flow relative to i); then grain g
    and wall w at g * W + w. A pair whose material pair has the node law (nodes[0], the table of
    `HertzRows.laws`, 0) takes the node law's forces instead (`levelset.node_pair_forces`,
    `node_wall_forces`: its row stays unused), with the node histories at `step`. The argument
    groups are HertzRows' (see `HertzRows.groups`)."""
    tmpl, t_coef, t_coef_off, t_coef_shape, t_coef_origin, t_h, t_node_off, t_nodes, t_radius = tmpls
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, req, force, torque = grains
    gravity, cell, ctl, ictl, periodic, walls, wall_rot, wmat, acc = env
    law, rule, curvature_limit, max_iter, zeta, mtab, n_mat = lawp
    pfs, pist, pcq, prow, wfs, wist, wcq, wrow, hacc, pts, nxt, meta = rows
    (ltab, n_law, k_node, kt_ratio, zeta_node, both, t_phi, t_phi_off, t_shape, t_origin, t_areas, hist_off, shear,
     partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, mu_tab, t_cull) = nodes
    cp_x, cp_f, cp_ij, energy, gctl = out
    n_grains = pos.shape[0]
    n_walls = walls.shape[0]
    energy[E_NORMAL] = 0.0
    energy[E_TANGENT] = 0.0
    energy[E_SLIDING] = 0.0
    for k in range(9):
        acc[ACC_STRESS + k] = 0.0
    for w in range(n_walls):
        for d in range(3):
            acc[ACC_WALL + 3 * w + d] = 0.0
    Lx, Ly, Lz = cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2]
    txy, txz, tyz = cell[CELL_TILT], cell[CELL_TILT + 1], cell[CELL_TILT + 2]
    sheared = is_sheared(cell)
    r00 = cell[CELL_RATE]
    r11 = cell[CELL_RATE + 1]
    r22 = cell[CELL_RATE + 2]
    r01 = cell[CELL_SHEAR_RATE]
    r02 = cell[CELL_SHEAR_RATE + 1]
    r12 = cell[CELL_SHEAR_RATE + 2]
    for g in range(n_grains):
        for d in range(3):
            force[g, d] = mass[g] * gravity[d] if motion[g] == MOTION_DYNAMIC else 0.0
            torque[g, d] = 0.0
    geom = np.zeros(SG.N_GEOM)
    x0 = np.zeros(3)
    posB = np.zeros(3)
    vB = np.zeros(3)
    zero3 = np.zeros(3)
    n_cp = 0
    n_touch = 0
    for k in range(n_pairs + n_grains * n_walls):
        w = 0
        ex = 0.0
        ey = 0.0
        ez = 0.0
        if k < n_pairs:
            c = k
            i = pairs[c, 0]
            j = pairs[c, 1]
            if motion[i] != MOTION_DYNAMIC and motion[j] != MOTION_DYNAMIC:
                continue
            fs, ist, cq, row = pfs, pist, pcq, prow
            prm = mtab[material[i] * n_mat + material[j]]
            ex, ey, ez = pair_image(pos, i, j, sheared, Lx, Ly, Lz, txy, txz, tyz, periodic)
            r = radius[i] + radius[j]
            far = ex * ex + ey * ey + ez * ez >= r * r
            if ltab[material[i] * n_mat + material[j]] == 0:
                if far:
                    continue
                n_cp, touched = node_pair_forces(i, j, ex, ey, ez, step, dt, tmpl, t_phi, t_phi_off, t_shape, t_origin,
                                                 t_h, t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, vel, omega,
                                                 rot, mass, motion, radius, material, force, torque, cell, walls, n_law,
                                                 k_node, kt_ratio, mu_tab, zeta_node, both, limit, hist_off, shear,
                                                 partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta,
                                                 sc_k, sc_e, cp_x, cp_f, cp_ij, n_cp, energy, acc, gctl)
                if n_cp < 0:
                    return -1
                n_touch += touched
                continue
            posB[0] = pos[i, 0] + ex
            posB[1] = pos[i, 1] + ey
            posB[2] = pos[i, 2] + ez
            # j's image moves with its own velocity plus the cell's flow between the two centres
            vB[0] = vel[j, 0] + r00 * ex + r01 * ey + r02 * ez
            vB[1] = vel[j, 1] + r11 * ey + r12 * ez
            vB[2] = vel[j, 2] + r22 * ez
            tj = tmpl[j]
            kindB = SG.BODY_LEVELSET
            rotB = rot[j]
            qB = quat[j]
            nodesB = t_nodes[t_node_off[tj]:t_node_off[tj + 1]]
            wB = omega[j]
            m_eff = pair_mass(mass, motion, i, j)
            r_ref = req[i] * req[j] / (req[i] + req[j])
            reachB2 = radius[j] ** 2
            deepest = limit * min(t_radius[tmpl[i]], t_radius[tj])
        else:
            c = k - n_pairs
            i = c // n_walls
            w = c - i * n_walls
            j = -2 - w
            fs, ist, cq, row = wfs, wist, wcq, wrow
            prm = mtab[material[i] * n_mat + wmat[w]]
            dist = 0.0
            for d in range(3):
                dist += (pos[i, d] - walls[w, WALL_POINT + d]) * walls[w, WALL_NORMAL + d]
            far = motion[i] != MOTION_DYNAMIC or dist > radius[i]
            if ltab[material[i] * n_mat + wmat[w]] == 0:
                if far:
                    continue
                n_cp, touched = node_wall_forces(i, w, step, dt, tmpl, t_node_off, t_nodes, t_areas, t_radius, t_cull,
                                                 pos, vel, omega, rot, mass, material, force, torque, cell, walls,
                                                 wmat, n_law, k_node, kt_ratio, mu_tab, zeta_node, limit, hist_off,
                                                 shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g,
                                                 sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij, n_cp, energy, acc, gctl)
                if n_cp < 0:
                    return -1
                n_touch += touched
                continue
            tj = tmpl[i]
            for d in range(3):
                posB[d] = walls[w, WALL_POINT + d]
                vB[d] = walls[w, WALL_VEL + d]
            kindB = SG.BODY_PLANE
            rotB = wall_rot[w]
            qB = quat[i]  # a wall does not turn (not read)
            nodesB = t_nodes[0:0]
            wB = zero3
            m_eff = mass[i]
            r_ref = req[i]
            reachB2 = np.inf
            deepest = limit * t_radius[tmpl[i]]
        if far and not (fs[c, S.F_DELTA] > 0.0 or ist[c, S.I_HEAD] >= 0):
            row[c, H_WARM] = 0.0
            row[c, H_SCALE] = 0.0
            continue
        ti = tmpl[i]
        body_a = (template_coef(t_coef, t_coef_off, t_coef_shape, ti), t_coef_origin[ti], t_h[ti], pos[i], rot[i],
                  t_nodes[t_node_off[ti]:t_node_off[ti + 1]])
        body_b = (kindB, template_coef(t_coef, t_coef_off, t_coef_shape, tj), t_coef_origin[tj], t_h[tj], posB, rotB,
                  nodesB, 0.0)
        go, touching, delta, dsx, dsy, s, vn = row_kinematics(fs, ist, cq, row, c, far, body_a, body_b, radius[i] ** 2,
                                                              reachB2, vel[i], omega[i], vB, wB, dt, rule,
                                                              curvature_limit * r_ref, max_iter, geom, x0, quat[i],
                                                              qB)
        if not go:
            continue
        if touching and not (delta < deepest):
            gctl[GC_BAD_I] = i
            gctl[GC_BAD_J] = j
            return -1
        touched, fx, fy, fz = row_law(law_step, law, count, prm, fs, ist, cq, row, c, touching, delta, dsx, dsy, s, vn,
                                      zeta, m_eff, dt, geom, hacc, energy, pts, nxt, meta)
        if not touched:
            continue
        n_touch += 1
        # (fx, fy, fz) is the force on B: grain j, or the wall
        push(force, torque, i, -fx, -fy, -fz, geom, SG.G_RA)
        if j >= 0:
            push(force, torque, j, fx, fy, fz, geom, SG.G_RB)
            # Love-Weber: the force on i (-f) times the branch from j's image to i (-e)
            l0, l1, l2 = ex, ey, ez
        else:
            # the force on the wall times the vector from i's centre to the contact point
            l0, l1, l2 = geom[SG.G_RA], geom[SG.G_RA + 1], geom[SG.G_RA + 2]
            acc[ACC_WALL + 3 * w] += fx
            acc[ACC_WALL + 3 * w + 1] += fy
            acc[ACC_WALL + 3 * w + 2] += fz
        add_stress(acc, fx, fy, fz, l0, l1, l2)
        n_cp = record_point(cp_x, cp_f, cp_ij, n_cp, geom, i, j, fx, fy, fz)
    gctl[GC_NCONTACTS] = n_touch
    return n_cp


@njit
def rebuild_rows(pos, radius, cell, periodic, skin, pairs, pos_build, gctl, hctl, hkey, pfs, pist, pcq, prow, hacc,
                 pts, nxt, meta):
    """The neighbour rebuild (`levelset.rebuild`) with the pair rows carried to their pairs' new
    positions; False (nothing changed but the wrapped centres) if `pairs` must grow."""
    if not rebuild(pos, radius, cell, periodic, skin, pairs, pos_build, gctl):
        return False
    carry_rows(pairs, gctl[GC_NPAIRS], pos.shape[0], hctl, hkey, pfs, pist, pcq, prow, hacc, pts, nxt, meta)
    return True


@njit
def carry_rows(pairs, n_new, key_base, hctl, hkey, pfs, pist, pcq, prow, hacc, pts, nxt, meta):
    """Carry the rows keyed by hkey[:hctl[0]] to the positions of their pairs in the new list
    pairs[:n_new] (key: pair[0] * key_base + pair[1]); a row whose pair left the list gives its
    history back to the store and its counters to hacc, a new pair gets a fresh row."""
    n_old = hctl[0]
    old_keys = np.empty(n_old, dtype=np.int64)
    for c in range(n_old):
        old_keys[c] = hkey[c, 0] * key_base + hkey[c, 1]
    order = np.argsort(old_keys)
    sorted_keys = old_keys[order]
    used = np.zeros(n_old, dtype=np.bool_)
    src = np.full(n_new, -1, dtype=np.int64)
    for k in range(n_new):
        key = pairs[k, 0] * key_base + pairs[k, 1]
        p = np.searchsorted(sorted_keys, key)
        if p < n_old and sorted_keys[p] == key:
            src[k] = order[p]
            used[order[p]] = True
    # rows whose pair left the list: their history back to the store, their counters to hacc
    for c in range(n_old):
        if not used[c]:
            if pfs[c, S.F_DELTA] > 0.0 or pist[c, S.I_HEAD] >= 0:
                separate(pfs, pist, c, pts, nxt, meta)
            hacc[A_DISS] += prow[c, H_DISS]
            hacc[A_WORK] += prow[c, H_WORK]
    nfs = pfs[:n_old].copy()
    nist = pist[:n_old].copy()
    ncq = pcq[:n_old].copy()
    nrow = prow[:n_old].copy()
    for k in range(n_new):
        o = src[k]
        if o >= 0:
            pfs[k] = nfs[o]
            pist[k] = nist[o]
            pcq[k] = ncq[o]
            prow[k] = nrow[o]
        else:
            pfs[k] = 0.0
            pist[k, S.I_HEAD] = -1
            pist[k, S.I_LEN] = 0
            pcq[k] = 0.0
            pcq[k, 0] = 1.0
            prow[k] = 0.0
        hkey[k, 0] = pairs[k, 0]
        hkey[k, 1] = pairs[k, 1]
    hctl[0] = n_new


@njit(inline="always")
def finish_hertz_step(law_step, count, dt, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
    """The second half of a step (as `levelset.finish_step`): forces at the drifted state, the
    walls' second half of work, the second half kick. False if the run diverged (gctl names where)."""
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, req, force, torque = grains
    walls, ctl, acc = env[5], env[2], env[8]
    pairs, pos_build, gctl, hctl, hkey = nbr
    energy = out[3]
    step = gctl[GC_STEP] + 1
    n_cp = hertz_forces(law_step, count, step, dt, limit, pairs, gctl[GC_NPAIRS], tmpls, grains, env, lawp, nodes,
                        rows, out)
    if n_cp < 0:
        gctl[GC_STATUS] = STATUS_DIVERGED
        return False
    gctl[GC_NCP] = n_cp
    walls_half_work(walls, acc, dt)
    half_kick(0.5 * dt, ctl[CTL_LOCAL_DAMP], vel, angmom, omega, rot, mass, inertia, motion, force, torque, energy)
    update_rotations(quat, rot, angmom, inertia, omega, motion)
    gctl[GC_STEP] = step
    return True


@njit(inline="always")
def run_hertz(law_step, count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
    """mode MODE_RUN: advance up to n_steps steps of `levelset.run_grains` (the cell's servo, the
    walls' move, half kick and drift with the cell's affine flow and local damping, the neighbour
    rebuild by the same rule, with the rows carried to their pairs, forces, half kick); returns
    the number completed, gctl[GC_STATUS] saying why (STATUS_PAIRS_FULL: the step in hand has
    drifted, the caller grows `pairs`, rebuilds and calls MODE_FINISH; STATUS_DIVERGED; else done,
    or stopped before a step because the store needs free points). MODE_FORCES: only the forces at
    the current state (returns 1 unless they diverged). MODE_FINISH: the second half of the step in
    hand (returns 1 if done)."""
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, req, force, torque = grains
    gravity, cell, ctl, ictl, periodic, walls, wall_rot, wmat, acc = env
    pfs, pist, pcq, prow, wfs, wist, wcq, wrow, hacc, pts, nxt, meta = rows
    pairs, pos_build, gctl, hctl, hkey = nbr
    energy = out[3]
    gctl[GC_STATUS] = STATUS_DONE
    if mode == MODE_FORCES:
        n_cp = hertz_forces(law_step, count, gctl[GC_STEP], dt, limit, pairs, gctl[GC_NPAIRS], tmpls, grains, env,
                            lawp, nodes, rows, out)
        gctl[GC_NCP] = max(n_cp, 0)
        return 1 if n_cp >= 0 else 0
    if mode == MODE_FINISH:
        return 1 if finish_hertz_step(law_step, count, dt, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                                      out) else 0
    alpha = ctl[CTL_LOCAL_DAMP]
    cutoff = neighbour_cutoff(radius, skin)
    for it in range(n_steps):
        # each row pushes at most one history point a step, and a rebuild lists at most len(hkey) pairs
        if meta[M_CAPACITY] - meta[M_LIVE] < hkey.shape[0] + wfs.shape[0]:
            return it
        ok, stale = start_step(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass, inertia, motion,
                               force, torque, gravity, cell, ctl, ictl, walls, pos_build, energy, acc, gctl)
        if not ok:
            return it
        if stale:
            if not rebuild_rows(pos, radius, cell, periodic, skin, pairs, pos_build, gctl, hctl, hkey, pfs, pist,
                                pcq, prow, hacc, pts, nxt, meta):
                gctl[GC_STATUS] = STATUS_PAIRS_FULL
                return it
        if not finish_hertz_step(law_step, count, dt, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
            return it
    return n_steps


# One entry per tangential law, each passing its step (contact.rows) as a global function to the
# kernels, which are inlined (as an argument of a compiled call it would become a function pointer,
# which numba cannot cache): a run compiles its own law alone (one branch per law would make numba
# lower all four); jaeger's step is called, not inlined (contact.rows.step_jaeger_outlined). The
# same entry computes the forces alone and finishes a step (mode), so each law compiles one kernel.
@njit
def run_hertz_linear(count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
    return run_hertz(step_linear, count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                     out)


@njit
def run_hertz_mindlin(count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
    return run_hertz(step_mindlin, count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                     out)


@njit
def run_hertz_md_incremental(count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
    return run_hertz(step_md_incremental, count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows,
                     nbr, out)


@njit
def run_hertz_jaeger(count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out):
    return run_hertz(step_jaeger_outlined, count, mode, n_steps, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows,
                     nbr, out)


# in TANGENTIAL_LAWS order
LAW_KERNELS = (run_hertz_linear, run_hertz_mindlin, run_hertz_md_incremental, run_hertz_jaeger)


@njit
def row_energies(law, mtab, n_mat, mat_a, mat_b, fs, ist, row, n, pts, nxt, out):
    """Add the rows' Hertz normal energy to out[0], stored tangential energy to out[1], tangential
    work to out[2] and frictional dissipation to out[3] (mat_a, mat_b: the rows' material indices)."""
    for c in range(n):
        out[2] += row[c, H_WORK]
        out[3] += row[c, H_DISS]
        if not (fs[c, S.F_DELTA] > 0.0):
            continue
        s = row[c, H_SCALE]
        prm = mtab[mat_a[c] * n_mat + mat_b[c]]
        out[0] += 0.4 * s * fs[c, S.F_N] * fs[c, S.F_DELTA]
        out[1] += s * tangential_energy(law, prm, fs, ist, c, pts, nxt)


# ----------------------------------------------------------------------------- settings
def contact_settings(tangential, radius_rule_name="elliptic", curvature_limit=10.0, damping_ratio=0.0,
                     newton_iter=30):
    """The grain-contact settings of the law (checked): a dict Simulation.set_grain_contact keeps."""
    if tangential not in TANGENTIAL_LAWS:
        raise ValueError(f"tangential must be one of {', '.join(TANGENTIAL_LAWS)}; got {tangential!r}")
    radius_rule(radius_rule_name)
    cl = float(curvature_limit)
    if not (math.isfinite(cl) and cl > 0.0):
        raise ValueError(f"curvature_limit must be a finite number > 0, got {curvature_limit!r}")
    zeta = float(damping_ratio)
    if not (math.isfinite(zeta) and 0.0 <= zeta <= 1.0):
        raise ValueError(f"damping_ratio must lie in [0, 1], got {damping_ratio!r}")
    if isinstance(newton_iter, bool) or int(newton_iter) != newton_iter or int(newton_iter) < 1:
        raise ValueError(f"newton_iter must be an integer >= 1, got {newton_iter!r}")
    return {"law": LAW_NAME, "tangential": str(tangential), "radius_rule": str(radius_rule_name),
            "curvature_limit": cl, "damping_ratio": zeta, "newton_iter": int(newton_iter)}


def critical_time_step(bodies, contact, mtab, materials, reference_overlap=None):
    """2/omega_max of one contact (normal: Hertz k_n = 2 E* a with the grain's mass; tangential-
    rotational: k_t (1/m + r^2/I_min)) at the largest effective radius the law allows
    (curvature_limit x the volume-equivalent radius) and overlap `reference_overlap` (default 1 % of
    that radius), for the most critical dynamic grain against its stiffest partner material."""
    dyn = bodies.motion == MOTION_DYNAMIC
    if not np.any(dyn):
        return math.inf
    req = equivalent_radii(bodies, materials)
    n_mat = len(materials)
    knc = mtab[:, S.P_KNC].reshape(n_mat, n_mat).max(axis=1)
    ktc = mtab[:, S.P_KTC].reshape(n_mat, n_mat).max(axis=1)
    worst = 0.0
    for g in np.flatnonzero(dyn):
        r_max = contact["curvature_limit"] * req[g]
        d = reference_overlap if reference_overlap is not None else 0.01 * req[g]
        a = math.sqrt(r_max * d)
        m = bodies.mass[g]
        mat = bodies.material[g]
        rb = bodies.radius[g]
        w2 = max(knc[mat] * a / m, ktc[mat] * a * (1.0 / m + rb * rb / bodies.inertia[g].min()))
        worst = max(worst, w2)
    return 2.0 / math.sqrt(worst)


def equivalent_radii(bodies, materials):
    """Volume-equivalent radius of every grain, from its mass and material density (materials:
    rows E, nu, mu, density)."""
    return np.cbrt(3.0 * bodies.mass / (4.0 * math.pi * np.asarray(materials)[bodies.material, 3]))


# ----------------------------------------------------------------------------- the rows of a run
class HertzRows:
    """The contact rows, parameters and spline coefficients of the law on a LevelSetBodies.

    mtab: the material-pair parameter records (Simulation.pair_record, R* = 1), row m1 * M + m2;
    wmat: the walls' material indices; materials: rows E, nu, mu, density; energy: count the
    tangential work and frictional dissipation; laws: the law of each material pair (row m1 * M +
    m2; LAW_HERTZ, or LAW_NODE: the grains' node law, with the settings in contact["node"] of the
    run's settings), default LAW_HERTZ for every pair."""

    STATE = ("hctl", "hkey", "pfs", "pist", "pcq", "prow", "wfs", "wist", "wcq", "wrow", "hacc", "mtab", "wmat",
             "laws", "store_pts", "store_nxt", "store_meta")

    def __init__(self, bodies, mtab, wmat, materials, energy, laws=None):
        mtab = np.array(mtab, dtype=np.float64)
        if np.any(mtab[:, S.P_KTLIN] != 0.0):
            # a constant spring would be scaled by sqrt(R) with the rest of the law
            raise ValueError("kt_linear must be 0 (the Mindlin stiffness) with the hertz_curvature grain law")
        mtab[:, S.P_ENERGY] = 1.0 if energy else 0.0
        self.mtab = mtab
        self.set_friction(bodies.mu_tab)
        self.wmat = np.asarray(wmat, dtype=np.int64).reshape(-1)
        cap = len(bodies.pairs)
        n_w = len(self.wmat) * bodies.n
        self.hctl = np.zeros(1, dtype=np.int64)
        self.hkey = np.zeros((cap, 2), dtype=np.int64)
        self.pfs, self.pist, self.pcq, self.prow = new_rows(cap)
        self.wfs, self.wist, self.wcq, self.wrow = new_rows(n_w)
        self.hacc = np.zeros(N_HACC)
        n_pairs = self.mtab.shape[0]
        self.laws = np.full(n_pairs, LAW_HERTZ, dtype=np.int64) if laws is None else \
            np.ascontiguousarray(laws, dtype=np.int64).reshape(-1)
        if self.laws.shape != (n_pairs,) or not np.all((self.laws == LAW_HERTZ) | (self.laws == LAW_NODE)):
            raise ValueError(f"laws must hold {n_pairs} entries, each {LAW_HERTZ} (hertz_curvature) or {LAW_NODE} "
                             "(the node law)")
        self.store = HistoryStore(max(64, 4 * (cap + n_w)))
        self._derived(bodies, materials)

    @property
    def mixed(self):
        """True if some material pair takes the node law."""
        return bool(np.any(self.laws == LAW_NODE))

    def set_friction(self, mu_tab):
        """The friction of each material pair from the grains' table (LevelSetBodies.mu_tab, (M, M)),
        the one the area and node laws read."""
        self.mtab[:, S.P_MU] = np.asarray(mu_tab, dtype=np.float64).reshape(-1)

    def _derived(self, bodies, materials):
        coefs, origins = [], []
        for t in range(len(bodies.t_h)):
            shape = tuple(int(v) for v in bodies.t_shape[t])
            o = int(bodies.t_phi_off[t])
            phi = bodies.t_phi[o:o + int(np.prod(shape))].reshape(shape)
            cf, org = spline_coefficients(phi, bodies.t_origin[t], bodies.t_h[t])
            coefs.append(cf)
            origins.append(org)
        self.t_coef = np.concatenate([c.ravel() for c in coefs])
        self.t_coef_off = np.cumsum([0] + [c.size for c in coefs])[:-1].astype(np.int64)
        self.t_coef_shape = np.array([c.shape for c in coefs], dtype=np.int64)
        self.t_coef_origin = np.array(origins, dtype=np.float64)
        self.req = equivalent_radii(bodies, materials)
        self.n_mat = int(round(math.sqrt(self.mtab.shape[0])))

    # ------------------------------------------------------------------ running
    def groups(self, bodies, contact, gravity, cell, ctl, ictl, periodic, walls, acc):
        """The kernels' argument groups: (templates, grains, environment, law parameters, rows,
        neighbours, outputs). `walls` is the Simulation's (W, N_WALL) wall array itself: the walls move
        inside a run."""
        b = bodies
        st = self.store
        return ((b.tmpl, self.t_coef, self.t_coef_off, self.t_coef_shape, self.t_coef_origin, b.t_h, b.t_node_off,
                 b.t_nodes, b.t_radius),
                (b.pos, b.vel, b.quat, b.rot, b.angmom, b.omega, b.mass, b.inertia, b.motion, b.radius, b.material,
                 self.req, b.force, b.torque),
                (np.asarray(gravity, dtype=np.float64), cell, ctl, ictl, periodic, walls,
                 wall_rotations(walls[:, WALL_NORMAL:WALL_NORMAL + 3]),
                 self.wmat, acc),
                (law_id(contact["tangential"]), radius_rule(contact["radius_rule"]), float(contact["curvature_limit"]),
                 int(contact["newton_iter"]), float(contact["damping_ratio"]), self.mtab, self.n_mat),
                self._node_group(b, contact),
                (self.pfs, self.pist, self.pcq, self.prow, self.wfs, self.wist, self.wcq, self.wrow, self.hacc, st.pts,
                 st.nxt, st.meta),
                (b.pairs, b.pos_build, b.gctl, self.hctl, self.hkey),
                (b.cp_x, b.cp_f, b.cp_ij, b.energy, b.gctl))

    def _node_group(self, b, contact):
        """The node law's arguments for the pairs that take it (contact["node"]: its settings)."""
        node = contact.get("node")
        if node is None:
            if self.mixed:
                raise ValueError("some material pairs take the node law but the run has no node-law settings "
                                 "(set_grain_contact(law='area', ..., default=False))")
            law, k, kt, zeta, both = 0, 0.0, 0.0, 0.0, True
        else:
            law, k, kt, zeta, both = (int(node["law_code"]), float(node["stiffness"]), float(node["kt_ratio"]),
                                      float(node["damping_ratio"]), node["contact"] == "both")
        return (self.laws, law, k, kt, zeta, both, b.t_phi, b.t_phi_off, b.t_shape, b.t_origin, b.t_areas, b.hist_off,
                b.shear, b.partner, b.last_step, b.sc_owner, b.sc_other, b.sc_hist, b.sc_x, b.sc_g, b.sc_delta, b.sc_k,
                b.sc_e, b.mu_tab, b.t_cull)

    def _law(self, contact):
        """(the kernel of the tangential law, energy accounting on)."""
        return LAW_KERNELS[law_id(contact["tangential"])], bool(self.mtab[0, S.P_ENERGY])

    def grow(self, bodies):
        """Grow the pair rows to the capacity of bodies.pairs and the store to a step's need."""
        cap = len(bodies.pairs)
        if cap > len(self.hkey):
            n = int(self.hctl[0])
            hkey = np.zeros((cap, 2), dtype=np.int64)
            hkey[:n] = self.hkey[:n]
            rows = new_rows(cap)
            for new, old in zip(rows, (self.pfs, self.pist, self.pcq, self.prow)):
                new[:n] = old[:n]
            self.hkey = hkey
            self.pfs, self.pist, self.pcq, self.prow = rows
        self.store.ensure_free(len(self.hkey) + len(self.wfs))

    def ensure_pairs(self, bodies, cell, periodic, skin):
        # the rows first grow to the capacity of bodies.pairs (a caller may have grown it): the
        # rebuild writes a row per listed pair
        self.grow(bodies)
        st = self.store
        while not rebuild_rows(bodies.pos, bodies.radius, cell, periodic, skin, bodies.pairs, bodies.pos_build,
                               bodies.gctl, self.hctl, self.hkey, self.pfs, self.pist, self.pcq, self.prow, self.hacc,
                               st.pts, st.nxt, st.meta):
            bodies.pairs = np.zeros((2 * int(bodies.gctl[GC_NEED]), 2), dtype=np.int64)
            self.grow(bodies)
        self.grow(bodies)

    def carry(self, bodies):
        """Carry the rows to bodies.pairs, a list just rebuilt by `levelset.rebuild` or its like."""
        self.grow(bodies)
        st = self.store
        carry_rows(bodies.pairs, int(bodies.gctl[GC_NPAIRS]), bodies.n, self.hctl, self.hkey, self.pfs, self.pist,
                   self.pcq, self.prow, self.hacc, st.pts, st.nxt, st.meta)

    def forces(self, bodies, dt, gravity, cell, periodic, walls, contact, skin, limit, acc):
        """Forces, stress and wall forces at the current state; False if an overlap exceeds `limit`."""
        self.ensure_pairs(bodies, cell, periodic, skin)
        run, count = self._law(contact)
        no_ctl = (np.zeros(0), np.zeros(0, dtype=np.int64))  # the servo does not run here
        return bool(run(count, MODE_FORCES, 0, dt, skin, limit,
                        *self.groups(bodies, contact, gravity, cell, *no_ctl, periodic, walls, acc)))

    def run(self, bodies, steps, dt, gravity, cell, ctl, ictl, periodic, walls, contact, skin, limit, acc):
        """Advance `steps` steps; returns (steps done, diverged)."""
        b = bodies
        run, count = self._law(contact)
        left = int(steps)
        done = 0
        while left > 0:
            self.grow(b)  # the groups hold the grown arrays
            k = run(count, MODE_RUN, left, dt, skin, limit,
                    *self.groups(b, contact, gravity, cell, ctl, ictl, periodic, walls, acc))
            left -= k
            done += k
            status = int(b.gctl[GC_STATUS])
            if status == STATUS_DIVERGED:
                return done, True
            if status == STATUS_PAIRS_FULL:
                # the step in hand has drifted: list its pairs in longer arrays, then finish it
                b.pairs = np.zeros((2 * int(b.gctl[GC_NEED]), 2), dtype=np.int64)
                self.ensure_pairs(b, cell, periodic, skin)
                if not run(count, MODE_FINISH, 1, dt, skin, limit,
                           *self.groups(b, contact, gravity, cell, ctl, ictl, periodic, walls, acc)):
                    return done, True
                left -= 1
                done += 1
        return done, False

    # ------------------------------------------------------------------ diagnostics
    def energies(self, bodies, contact):
        """{"elastic_normal_energy", "tangential_energy", "tangential_work", "frictional_dissipation",
        "viscous_dissipation"} of the grain contacts (J), at the last force evaluation."""
        out = np.zeros(4)
        law = law_id(contact["tangential"])
        st = self.store
        n = int(self.hctl[0])
        mat = bodies.material
        row_energies(law, self.mtab, self.n_mat, mat[self.hkey[:n, 0]], mat[self.hkey[:n, 1]], self.pfs, self.pist,
                     self.prow, n, st.pts, st.nxt, out)
        n_w = len(self.wmat)
        if n_w:
            row_energies(law, self.mtab, self.n_mat, np.repeat(mat, n_w), np.tile(self.wmat, bodies.n), self.wfs,
                         self.wist, self.wrow, len(self.wfs), st.pts, st.nxt, out)
        d = {"elastic_normal_energy": float(out[0]), "tangential_energy": float(out[1]),
             "tangential_work": float(out[2] + self.hacc[A_WORK]),
             "frictional_dissipation": float(out[3] + self.hacc[A_DISS]),
             "viscous_dissipation": float(self.hacc[A_VISC])}
        if self.mixed:
            # the node law's pairs: their energies in the grains' record (contact.levelset_contact),
            # where the force pass also sums the rows' Hertz normal energy
            e = bodies.energy
            d["elastic_normal_energy"] = float(e[E_NORMAL])
            d["tangential_energy"] += float(e[E_TANGENT])
            d["tangential_work"] += float(e[E_TWORK])
            d["frictional_dissipation"] += float(e[E_TWORK] - e[E_TANGENT])
            d["viscous_dissipation"] += float(e[E_VISC])
        return d

    def contacts(self, bodies):
        """Touching rows: {"pair": (m, 2) grains (j = -1 - w for wall w), "N", "delta", "R"} (N in
        newtons, elastic part)."""
        n = int(self.hctl[0])
        n_w = len(self.wmat)
        pt = self.pfs[:n, S.F_DELTA] > 0.0
        wt = self.wfs[:, S.F_DELTA] > 0.0
        g = np.repeat(np.arange(bodies.n), n_w)
        w = np.tile(np.arange(n_w), bodies.n)
        pair = np.concatenate([self.hkey[:n][pt], np.stack([g[wt], -1 - w[wt]], axis=1)]).astype(np.int64)
        N = np.concatenate([self.prow[:n, H_SCALE][pt] * self.pfs[:n, S.F_N][pt],
                            self.wrow[:, H_SCALE][wt] * self.wfs[:, S.F_N][wt]])
        delta = np.concatenate([self.pfs[:n, S.F_DELTA][pt], self.wfs[:, S.F_DELTA][wt]])
        R = np.concatenate([self.prow[:n, H_R][pt], self.wrow[:, H_R][wt]])
        return {"pair": pair, "N": N, "delta": delta, "R": R}

    # ------------------------------------------------------------------ state
    def state_arrays(self):
        d = {}
        for name in self.STATE:
            if name.startswith("store_"):
                d["grain_hertz_" + name] = np.array(getattr(self.store, name[6:]))
            else:
                d["grain_hertz_" + name] = np.array(getattr(self, name))
        return d

    @classmethod
    def from_state(cls, bodies, arrays, materials):
        arrays = dict(arrays)
        for name in ("grain_hertz_prow", "grain_hertz_wrow"):
            a = arrays.get(name)
            if a is not None and a.ndim == 2 and a.shape[1] == H_GAP:
                # a record without the node search's clearance columns: no clearance kept (the search runs)
                arrays[name] = np.pad(a, ((0, 0), (0, N_HROW - H_GAP)))
        if "grain_hertz_laws" not in arrays:
            n_mat = len(materials)
            arrays["grain_hertz_laws"] = np.full(n_mat * n_mat, LAW_HERTZ, dtype=np.int64)
        validate_state(arrays, bodies, len(materials))
        self = cls.__new__(cls)
        for name in cls.STATE:
            if not name.startswith("store_"):
                setattr(self, name, np.ascontiguousarray(np.array(arrays["grain_hertz_" + name])))
        self.laws = self.laws.astype(np.int64)
        self.store = HistoryStore.from_arrays(arrays["grain_hertz_store_pts"], arrays["grain_hertz_store_nxt"],
                                              arrays["grain_hertz_store_meta"])
        self._derived(bodies, materials)
        return self


def new_rows(n):
    """fresh_rows of the law (contact.state) and their row records."""
    return (*S.fresh_rows(n), np.zeros((n, N_HROW)))


def wall_rotations(normals):
    """(W, 3, 3) rotations whose third column is each wall's unit normal: the pose of a wall as a
    `shape_geometry` plane (solid below the body x-y plane)."""
    n = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    out = np.zeros((len(n), 3, 3))
    for w, (nx, ny, nz) in enumerate(n):
        t1 = SG.tangent_basis(nx, ny, nz)
        out[w, :, 0] = t1[0:3]
        out[w, :, 1] = t1[3:6]
        out[w, :, 2] = (nx, ny, nz)
    return out


def validate_state(arrays, bodies, n_mat, source="checkpoint"):
    """Raise ValueError unless the law's arrays of a checkpoint are present, of consistent shapes,
    finite, and their indices (pair keys, history heads, materials) in range."""
    for name in HertzRows.STATE:
        if "grain_hertz_" + name not in arrays:
            raise ValueError(f"{source}: array 'grain_hertz_{name}' missing (a hertz_curvature grain state)")
    a = {name: np.asarray(arrays["grain_hertz_" + name]) for name in HertzRows.STATE}
    cap = a["hkey"].shape[0] if a["hkey"].ndim == 2 else -1
    n_w = a["wmat"].size * bodies.n
    shapes = {"hctl": (1,), "hkey": (cap, 2), "pfs": (cap, S.N_FSTATE), "pist": (cap, S.N_ISTATE), "pcq": (cap, 4),
              "prow": (cap, N_HROW), "wfs": (n_w, S.N_FSTATE), "wist": (n_w, S.N_ISTATE), "wcq": (n_w, 4),
              "wrow": (n_w, N_HROW), "hacc": (N_HACC,)}
    for name, shape in shapes.items():
        if a[name].shape != shape:
            raise ValueError(f"{source}: array 'grain_hertz_{name}' must have shape {shape}, got {a[name].shape}")
    for name in ("pfs", "pcq", "prow", "wfs", "wcq", "wrow", "hacc", "mtab", "store_pts"):
        if a[name].dtype.kind != "f" or not np.all(np.isfinite(a[name])):
            raise ValueError(f"{source}: array 'grain_hertz_{name}' must hold finite real numbers")
    n = int(a["hctl"][0])
    m = int(round(math.sqrt(a["mtab"].shape[0])))
    if not (0 <= n <= cap) or np.any(a["hkey"][:n] < 0) or np.any(a["hkey"][:n] >= bodies.n):
        raise ValueError(f"{source}: 'grain_hertz_hctl'/'grain_hertz_hkey' must list pairs of grains in [0, "
                         f"{bodies.n - 1}], at most {cap} of them")
    if a["laws"].shape != (m * m,) or not np.all((a["laws"] == LAW_HERTZ) | (a["laws"] == LAW_NODE)):
        raise ValueError(f"{source}: 'grain_hertz_laws' must hold {m * m} entries, each {LAW_HERTZ} or {LAW_NODE}")
    if a["mtab"].shape != (m * m, S.N_PARAM) or m != n_mat or np.any(a["wmat"] < 0) or np.any(a["wmat"] >= m):
        raise ValueError(f"{source}: 'grain_hertz_mtab'/'grain_hertz_wmat' must be the {n_mat} materials' pair "
                         f"records and wall materials in range")
    live = int(a["store_meta"][M_LIVE]) if a["store_meta"].size > M_LIVE else -1
    heads = np.concatenate([a["pist"][:n, S.I_HEAD], a["wist"][:, S.I_HEAD]])
    if a["store_pts"].ndim != 2 or np.any(heads >= a["store_pts"].shape[0]) or np.any(heads < -1) \
            or live != int(a["pist"][:n, S.I_LEN].sum() + a["wist"][:, S.I_LEN].sum()):
        raise ValueError(f"{source}: the rows' history heads and lengths must match the history store")

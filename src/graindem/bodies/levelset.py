"""The rigid level-set body kind: grains of any shape, each a placed copy of a template.

A template (particles.LevelSetGrain) holds a signed-distance grid and surface nodes with area
weights in its principal body frame; its grid and nodes are stored once however many grains use
it (the t_* arrays below, concatenated over templates). A grain holds its pose, velocities and
the friction history of each of its nodes.

Arrays (G grains):
    tmpl (G,) template index; motion (G,) MOTION_*; pos, vel, omega, angmom (world angular
    momentum), force, torque (G, 3); quat (G, 4) body -> world; rot (G, 3, 3) = R(quat); mass (G,);
    inertia (G, 3) principal moments; radius (G,) the reach of the grain's bounding sphere
    (template bounding radius + 2 grid spacings: the grid's margin);
    node history: shear (H, 3), partner (H,), last_step (H,), a slot per grain node, grain g's
    from hist_off[g].
    templates: t_* (grids, nodes, area weights, bounding radii, concatenated over templates) and
    t_cull, the node trees and interior boxes the node pass culls with (contact.node_tree);
    neighbour list: pairs (cap, 2) of grains whose bounding spheres are within the skin,
    pos_build (G, 3) the centres at the last rebuild.

Step (velocity Verlet, all inside run_grains):
  1. the periodic cell's servo (boundaries.servo: strain rates from the stress of the last forces,
     or prescribed; shear rates); walls move by their velocities (a servo wall's set from its force
     of the last forces, boundaries.walls.servo_wall_velocity);
  2. half kick: v += F/m dt/2, L += tau dt/2 (L in world axes); drift: x += v dt plus the cell's
     affine flow L (x - lo) dt (v is the velocity relative to that flow, as for spheres); the
     orientation by core.rotations.free_rotor (exact rotations about the body's principal axes, so
     |L| is conserved exactly in free flight); the cell moves (core.cell.advance_cell);
  3. neighbour list: rebuilt when twice the largest displacement of a centre relative to the
     affine image of its build position, plus the cell's deformation since the build times the
     cutoff, exceeds the skin (the rule of the sphere loop). The bounding sphere is centred at the
     grain's centre of mass, so a rotation never moves it: the translation alone bounds what the
     skin must cover, whatever the spin;
  4. forces: gravity, grain pairs (node-to-level-set, contact.levelset_contact) through the
     minimum image of the (possibly sheared) cell, walls; the stress and the wall forces (with the
     "hertz_curvature" law: one Hertzian contact row per pair, bodies.levelset_hertz, on the same
     step: it calls start_step, rebuild, walls_half_work and half_kick from here);
  5. half kick.
Both half kicks apply Cundall's local damping (Simulation's local_damping) when it is set.
Motions: MOTION_DYNAMIC; MOTION_FIXED (never moves, infinite mass); MOTION_KINEMATIC (moves with its
prescribed velocity and angular velocity whatever the forces; forces on it are still summed, so
the reaction can be read).
"""

import math

import numpy as np

from .._jit import njit
from ..boundaries.servo import servo
from ..boundaries.walls import WALL_NORMAL, WALL_POINT, WALL_VEL, servo_walls
from ..contact import levelset_contact as lc
from ..contact.levelset_contact import E_GRAVITY, E_LOCAL, E_NORMAL, E_SLIDING, E_TANGENT, N_ENERGY
from ..contact.node_tree import culling_arrays
from ..core.cell import (CELL_L, CELL_LBUILD, CELL_LO, CELL_TILT, CELL_TILT_BUILD, advance_cell,
                         list_is_stale, flow_displacement, grid_bin_of, is_sheared, min_image,
                         min_image_tilted, shear_since_build, wrap_and_grid, wrap_and_grid_tilted)
from ..core.layout import ACC_BOUNDARY_WORK, ACC_STRESS, ACC_WALL, CTL_LOCAL_DAMP
from ..core.rotations import free_rotor, quat_matrix, quat_to_matrix, turn_by_world_spin

MOTION_DYNAMIC, MOTION_FIXED, MOTION_KINEMATIC = 0, 1, 2
MOTIONS = {"dynamic": MOTION_DYNAMIC, "fixed": MOTION_FIXED, "kinematic": MOTION_KINEMATIC}

# layout of the int64 control record of run_grains
GC_STEP = 0        # steps done
GC_NPAIRS = 1      # listed pairs
GC_NEED = 2        # pair capacity the last rebuild needed (> capacity: the caller grows `pairs`)
GC_NCP = 3         # contact nodes at the last force evaluation
GC_NREBUILDS = 4
GC_STATUS = 5      # why run_grains returned (STATUS_*)
GC_BAD_I = 6       # diverged: the grain (or the first grain of the pair) that did
GC_BAD_J = 7       # diverged: the second grain of the pair (-1: none; <= -2: wall -2 - value)
GC_NCONTACTS = 8   # grain pairs (and grain-wall pairs) with a contact node at the last force evaluation
N_GC = 9

STATUS_DONE = 0
STATUS_PAIRS_FULL = 1   # the drift of the step is done, its forces wait for a longer pair list
STATUS_DIVERGED = 2


def initial_motion(quat, inertia, motion, vel, omega):
    """World angular momenta R I Rᵀ ω of the dynamic grains (zero for the others); fixed grains' vel
    and omega are set to zero in place."""
    angmom = np.zeros((len(quat), 3))
    for g in range(len(quat)):
        if motion[g] == MOTION_DYNAMIC:
            R = quat_matrix(quat[g])
            angmom[g] = R @ (inertia[g] * (R.T @ omega[g]))
        elif motion[g] == MOTION_FIXED:
            vel[g] = 0.0
            omega[g] = 0.0
    return angmom


@njit
def update_rotations(quat, rot, angmom, inertia, omega, motion):
    """Renormalise the orientations, refresh R(q) and, for dynamic grains, omega = R I^-1 R^T L."""
    R = np.empty((3, 3))
    for g in range(quat.shape[0]):
        n = math.sqrt(quat[g, 0] ** 2 + quat[g, 1] ** 2 + quat[g, 2] ** 2 + quat[g, 3] ** 2)
        for c in range(4):
            quat[g, c] /= n
        quat_to_matrix(quat[g], R)
        for a in range(3):
            for b in range(3):
                rot[g, a, b] = R[a, b]
        if motion[g] == MOTION_DYNAMIC:
            lb0 = R[0, 0] * angmom[g, 0] + R[1, 0] * angmom[g, 1] + R[2, 0] * angmom[g, 2]
            lb1 = R[0, 1] * angmom[g, 0] + R[1, 1] * angmom[g, 1] + R[2, 1] * angmom[g, 2]
            lb2 = R[0, 2] * angmom[g, 0] + R[1, 2] * angmom[g, 1] + R[2, 2] * angmom[g, 2]
            wb0 = lb0 / inertia[g, 0]
            wb1 = lb1 / inertia[g, 1]
            wb2 = lb2 / inertia[g, 2]
            for a in range(3):
                omega[g, a] = R[a, 0] * wb0 + R[a, 1] * wb1 + R[a, 2] * wb2


@njit
def build_grain_pairs(pos, radius, cell, periodic, skin, pairs, split=0):
    """Wrap the centres into the cell and list, as a half list, the grain pairs whose bounding
    spheres lie within `skin` of each other (minimum image), over the grid of bins the sphere list
    uses (core.cell.wrap_and_grid; fractional coordinates once the cell is sheared); returns the
    count (more than len(pairs) means: grow and call again). split > 0 lists only the pairs
    (i, j) with i < split <= j: the bodies of two kinds stacked in one array (bodies.mixed)."""
    n = pos.shape[0]
    rmax = 0.0
    for g in range(n):
        rmax = max(rmax, radius[g])
    cutoff = 2.0 * rmax + skin
    m = np.empty(3, dtype=np.int64)
    sheared = is_sheared(cell)
    if sheared:
        wrap_and_grid_tilted(pos, n, cell, periodic, cutoff, m)
    else:
        wrap_and_grid(pos, n, cell, periodic, cutoff, m)
    nb = m[0] * m[1] * m[2]
    bin_of = np.empty(n, dtype=np.int64)
    count = np.zeros(nb + 1, dtype=np.int64)
    for g in range(n):
        b = grid_bin_of(pos, g, cell, sheared, m[0], m[1], m[2])
        bin_of[g] = b
        count[b + 1] += 1
    for b in range(nb):
        count[b + 1] += count[b]
    order = np.empty(n, dtype=np.int64)
    fill = count[:nb].copy()
    for g in range(n):
        order[fill[bin_of[g]]] = g
        fill[bin_of[g]] += 1
    Lx, Ly, Lz = cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2]
    txy, txz, tyz = cell[CELL_TILT], cell[CELL_TILT + 1], cell[CELL_TILT + 2]
    seen = np.full(nb, -1, dtype=np.int64)
    k = 0
    for i in range(split if split > 0 else n):
        bi = bin_of[i]
        ix = bi // (m[1] * m[2])
        iy = (bi // m[2]) % m[1]
        iz = bi % m[2]
        for dx in range(-1, 2):
            for dy in range(-1, 2):
                for dz in range(-1, 2):
                    cx = ix + dx
                    cy = iy + dy
                    cz = iz + dz
                    if periodic[0]:
                        cx %= m[0]
                    elif cx < 0 or cx >= m[0]:
                        continue
                    if periodic[1]:
                        cy %= m[1]
                    elif cy < 0 or cy >= m[1]:
                        continue
                    if periodic[2]:
                        cz %= m[2]
                    elif cz < 0 or cz >= m[2]:
                        continue
                    b = (cx * m[1] + cy) * m[2] + cz
                    if seen[b] == i:  # fewer than 3 bins on a periodic axis: the same bin twice
                        continue
                    seen[b] = i
                    for t in range(count[b], count[b + 1]):
                        j = order[t]
                        if j <= i or j < split:
                            continue
                        ex, ey, ez = pair_image(pos, i, j, sheared, Lx, Ly, Lz, txy, txz, tyz, periodic)
                        r = radius[i] + radius[j] + skin
                        if ex * ex + ey * ey + ez * ez < r * r:
                            if k < pairs.shape[0]:
                                pairs[k, 0] = i
                                pairs[k, 1] = j
                            k += 1
    return k


@njit(inline="always")
def pair_image(pos, i, j, sheared, Lx, Ly, Lz, txy, txz, tyz, periodic):
    """The minimum image of x_j - x_i (through the tilted cell once it is sheared)."""
    dx = pos[j, 0] - pos[i, 0]
    dy = pos[j, 1] - pos[i, 1]
    dz = pos[j, 2] - pos[i, 2]
    if sheared:
        return min_image_tilted(dx, dy, dz, Lx, Ly, Lz, txy, txz, tyz, periodic[0], periodic[1], periodic[2])
    return min_image(dx, dy, dz, Lx, Ly, Lz, periodic[0], periodic[1], periodic[2])


@njit(inline="always")
def pair_mass(mass, motion, i, j):
    """The reduced mass of grains i and j, a grain that the dynamics does not move counting as
    infinitely heavy (the contact dampers' mass)."""
    if motion[i] == MOTION_DYNAMIC and motion[j] == MOTION_DYNAMIC:
        return mass[i] * mass[j] / (mass[i] + mass[j])
    if motion[i] == MOTION_DYNAMIC:
        return mass[i]
    return mass[j]


@njit(_nrt=False)
def node_pair_forces(i, j, ex, ey, ez, step, dt, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes,
                     t_areas, t_radius, t_cull, pos, vel, omega, rot, mass, motion, radius, material, force, torque,
                     cell, walls, law, k_normal, kt_ratio, mu_tab, zeta, both, limit, hist_off, shear, partner,
                     last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij, n_cp,
                     energy, acc, gctl):
    """The node law's forces of grain pair (i, j), j's image at x_i + (ex, ey, ez), added to the
    forces, stress and energies; returns (the new contact-node count, 1 if the pair touches), the
    count -1 when a node penetrates deeper than `limit` times the smaller bounding radius (gctl
    names the pair)."""
    n_sc = 0
    if both:
        n_sc = lc.collect_nodes_in(i, j, ex, ey, ez, 0.5, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                   t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, rot, law, k_normal, hist_off,
                                   sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
        n_sc = lc.collect_nodes_in(j, i, -ex, -ey, -ez, 0.5, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                   t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, rot, law, k_normal, hist_off,
                                   sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
    elif radius[i] <= radius[j]:
        n_sc = lc.collect_nodes_in(i, j, ex, ey, ez, 1.0, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                   t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, rot, law, k_normal, hist_off,
                                   sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
    else:
        n_sc = lc.collect_nodes_in(j, i, -ex, -ey, -ez, 1.0, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                   t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, rot, law, k_normal, hist_off,
                                   sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
    if n_sc == 0:
        return n_cp, 0
    deepest = limit * min(t_radius[tmpl[i]], t_radius[tmpl[j]])
    for s in range(n_sc):
        if not (sc_delta[s] < deepest):
            gctl[GC_BAD_I] = i
            gctl[GC_BAD_J] = j
            return -1, 0
    m_eff = pair_mass(mass, motion, i, j)
    n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, m_eff, zeta,
                            kt_ratio, mu_tab[material[i], material[j]], dt, step, pos, vel, omega, force,
                            torque, vel, omega, force, torque, 0, shear, partner, last_step, walls, cell, cp_x,
                            cp_f, cp_ij, n_cp, energy, acc)
    return n_cp, 1


@njit(_nrt=False)
def node_wall_forces(g, w, step, dt, tmpl, t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, vel, omega, rot, mass,
                     material, force, torque, cell, walls, wall_mat, law, k_normal, kt_ratio, mu_tab, zeta, limit,
                     hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k,
                     sc_e, cp_x, cp_f, cp_ij, n_cp, energy, acc, gctl):
    """The node law's forces of grain g on wall w, as `node_pair_forces` (the count -1: a node
    deeper than `limit` times the bounding radius)."""
    n_sc = lc.collect_nodes_wall(g, w, tmpl, t_node_off, t_nodes, t_areas, t_cull, pos, rot, walls, law, k_normal,
                                 hist_off, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, 0)
    if n_sc == 0:
        return n_cp, 0
    for s in range(n_sc):
        if not (sc_delta[s] < limit * t_radius[tmpl[g]]):
            gctl[GC_BAD_I] = g
            gctl[GC_BAD_J] = -2 - w
            return -1, 0
    n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, mass[g],
                            zeta, kt_ratio, mu_tab[material[g], wall_mat[w]], dt, step, pos, vel, omega,
                            force, torque, vel, omega, force, torque, 0, shear, partner, last_step, walls,
                            cell, cp_x, cp_f, cp_ij, n_cp, energy, acc)
    return n_cp, 1


@njit(_nrt=False)
def grain_forces(step, dt, pairs, n_pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes,
                 t_areas, t_radius, t_cull, pos, vel, omega, rot, mass, motion, radius, material, force, torque,
                 gravity, cell, periodic, walls, wall_mat, law, k_normal, kt_ratio, mu_tab, zeta, both, limit,
                 hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e,
                 cp_x, cp_f, cp_ij, energy, acc, gctl):
    """Zero and assemble the forces and moments of every grain, the stress and the wall forces;
    returns the number of contact nodes, or -1 when a node penetrates deeper than `limit` times the
    smaller bounding radius (gctl[GC_BAD_I/J] name the pair).

    Pairs go through the minimum image: the nodes of one grain meet the image of the other that
    lies within half a cell, so a pair across a periodic face feels what it would in the middle.
    Friction is the material pair's, mu_tab[material_i, material_j] (walls: their own material)."""
    n_grains = pos.shape[0]
    energy[E_NORMAL] = 0.0
    energy[E_TANGENT] = 0.0
    energy[E_SLIDING] = 0.0
    for k in range(9):
        acc[ACC_STRESS + k] = 0.0
    for w in range(walls.shape[0]):
        for d in range(3):
            acc[ACC_WALL + 3 * w + d] = 0.0
    Lx, Ly, Lz = cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2]
    txy, txz, tyz = cell[CELL_TILT], cell[CELL_TILT + 1], cell[CELL_TILT + 2]
    sheared = is_sheared(cell)
    for g in range(n_grains):
        for d in range(3):
            force[g, d] = mass[g] * gravity[d] if motion[g] == MOTION_DYNAMIC else 0.0
            torque[g, d] = 0.0
    n_cp = 0
    n_touch = 0
    for c in range(n_pairs):
        i = pairs[c, 0]
        j = pairs[c, 1]
        if motion[i] != MOTION_DYNAMIC and motion[j] != MOTION_DYNAMIC:
            continue
        ex, ey, ez = pair_image(pos, i, j, sheared, Lx, Ly, Lz, txy, txz, tyz, periodic)
        r = radius[i] + radius[j]
        if ex * ex + ey * ey + ez * ez >= r * r:
            continue
        n_cp, touched = node_pair_forces(i, j, ex, ey, ez, step, dt, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                         t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, vel, omega, rot, mass,
                                         motion, radius, material, force, torque, cell, walls, law, k_normal,
                                         kt_ratio, mu_tab, zeta, both, limit, hist_off, shear, partner, last_step,
                                         sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f,
                                         cp_ij, n_cp, energy, acc, gctl)
        if n_cp < 0:
            return -1
        n_touch += touched
    for g in range(n_grains):
        if motion[g] != MOTION_DYNAMIC:
            continue
        for w in range(walls.shape[0]):
            dist = 0.0
            for d in range(3):
                dist += (pos[g, d] - walls[w, WALL_POINT + d]) * walls[w, WALL_NORMAL + d]
            if dist > radius[g]:
                continue
            n_cp, touched = node_wall_forces(g, w, step, dt, tmpl, t_node_off, t_nodes, t_areas, t_radius, t_cull, pos,
                                             vel, omega, rot, mass, material, force, torque, cell, walls, wall_mat,
                                             law, k_normal, kt_ratio, mu_tab, zeta, limit, hist_off, shear, partner,
                                             last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e,
                                             cp_x, cp_f, cp_ij, n_cp, energy, acc, gctl)
            if n_cp < 0:
                return -1
            n_touch += touched
    gctl[GC_NCONTACTS] = n_touch
    return n_cp


@njit
def affine_drift2(pos, pos_build, cell):
    """Largest squared displacement of a centre since the last rebuild relative to where the cell's
    affine map since then (F = h h_build^-1) took its build position."""
    lo0, lo1, lo2 = cell[CELL_LO], cell[CELL_LO + 1], cell[CELL_LO + 2]
    s0 = cell[CELL_L] / cell[CELL_LBUILD]
    s1 = cell[CELL_L + 1] / cell[CELL_LBUILD + 1]
    s2 = cell[CELL_L + 2] / cell[CELL_LBUILD + 2]
    f01, f02, f12 = shear_since_build(cell)
    worst = 0.0
    for g in range(pos.shape[0]):
        bx = pos_build[g, 0] - lo0
        by = pos_build[g, 1] - lo1
        bz = pos_build[g, 2] - lo2
        dx = pos[g, 0] - (lo0 + bx * s0 + by * f01 + bz * f02)
        dy = pos[g, 1] - (lo1 + by * s1 + bz * f12)
        dz = pos[g, 2] - (lo2 + bz * s2)
        worst = max(worst, dx * dx + dy * dy + dz * dz)
    return worst


@njit
def rebuild(pos, radius, cell, periodic, skin, pairs, pos_build, gctl):
    """List the pairs (wrapping the centres) and remember the centres and the cell; False if
    `pairs` must grow."""
    k = build_grain_pairs(pos, radius, cell, periodic, skin, pairs)
    gctl[GC_NEED] = k
    if k > pairs.shape[0]:
        return False
    gctl[GC_NPAIRS] = k
    gctl[GC_NREBUILDS] += 1
    for g in range(pos.shape[0]):
        for d in range(3):
            pos_build[g, d] = pos[g, d]
    for d in range(3):
        cell[CELL_LBUILD + d] = cell[CELL_L + d]
        cell[CELL_TILT_BUILD + d] = cell[CELL_TILT + d]
    return True


@njit
def walls_half_work(walls, acc, dt):
    """Half of the walls' work over a step with the forces of one end of it (the trapezoid rule:
    the forces before the step, then those after it); the walls push the grains with -F."""
    for w in range(walls.shape[0]):
        for d in range(3):
            acc[ACC_BOUNDARY_WORK] -= 0.5 * acc[ACC_WALL + 3 * w + d] * walls[w, WALL_VEL + d] * dt


@njit
def move_walls(walls, acc, dt):
    """The walls' first half of work, then their move by their velocities."""
    walls_half_work(walls, acc, dt)
    for w in range(walls.shape[0]):
        for d in range(3):
            walls[w, WALL_POINT + d] += walls[w, WALL_VEL + d] * dt


@njit
def half_kick(hdt, alpha, vel, angmom, omega, rot, mass, inertia, motion, force, torque, energy):
    """v += F/m dt/2, L += tau dt/2 of the dynamic grains, with Cundall's local damping alpha: each
    component of F and tau reduced by alpha |F_k| against the sign of v_k (omega_k). The energy it
    removes goes to energy[E_LOCAL]: the damping force times the kick's mean velocity (v + dv/2,
    omega + domega/2), which is its exact share of the kick's change of kinetic energy (of the
    rotational one to first order in the kick)."""
    if alpha == 0.0:
        for g in range(vel.shape[0]):
            if motion[g] == MOTION_DYNAMIC:
                for d in range(3):
                    vel[g, d] += force[g, d] / mass[g] * hdt
                    angmom[g, d] += torque[g, d] * hdt
        return
    removed = 0.0
    dtq = np.empty(3)
    dL = np.empty(3)
    for g in range(vel.shape[0]):
        if motion[g] != MOTION_DYNAMIC:
            continue
        for d in range(3):
            f = force[g, d]
            df = -alpha * abs(f) * math.copysign(1.0, vel[g, d]) if vel[g, d] != 0.0 else 0.0
            dv = (f + df) / mass[g] * hdt
            removed -= df * (vel[g, d] + 0.5 * dv) * hdt
            vel[g, d] += dv
            t = torque[g, d]
            dtq[d] = -alpha * abs(t) * math.copysign(1.0, omega[g, d]) if omega[g, d] != 0.0 else 0.0
            dL[d] = (t + dtq[d]) * hdt
            angmom[g, d] += dL[d]
        # the kick's change of omega at the current orientation: R I^-1 R^T dL
        for d in range(3):
            dw = 0.0
            for a in range(3):
                lb = rot[g, 0, a] * dL[0] + rot[g, 1, a] * dL[1] + rot[g, 2, a] * dL[2]
                dw += rot[g, d, a] * lb / inertia[g, a]
            removed -= dtq[d] * (omega[g, d] + 0.5 * dw) * hdt
    energy[E_LOCAL] += removed


@njit
def drift_grains(dt, alpha, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, gravity, cell,
                 energy):
    """Half kick and drift of every grain (kick_and_drift); then the cell moves. False if a grain's
    state is not finite."""
    ok = kick_and_drift(dt, alpha, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, gravity,
                        cell, energy)
    advance_cell(cell, dt)
    return ok


@njit
def kick_and_drift(dt, alpha, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, gravity, cell,
                   energy):
    """Half kick and drift of every grain (dynamic: with the cell's affine flow at its strain and
    shear rates, and the free rotor; kinematic: as prescribed); the cell itself does not move
    (drift_grains moves it; in a run with spheres, the sphere step does). False if a grain's state
    is not finite."""
    Lb = np.empty(3)
    R = np.empty((3, 3))
    hdt = 0.5 * dt
    ok = True
    work = 0.0
    half_kick(hdt, alpha, vel, angmom, omega, rot, mass, inertia, motion, force, torque, energy)
    for g in range(pos.shape[0]):
        if motion[g] == MOTION_DYNAMIC:
            # gravity's work over the drift (the affine flow is the cell's, not gravity's)
            work += mass[g] * (gravity[0] * vel[g, 0] + gravity[1] * vel[g, 1] + gravity[2] * vel[g, 2]) * dt
            ux, uy, uz = flow_displacement(cell, pos[g, 0], pos[g, 1], pos[g, 2], dt)
            pos[g, 0] += vel[g, 0] * dt + ux
            pos[g, 1] += vel[g, 1] * dt + uy
            pos[g, 2] += vel[g, 2] * dt + uz
            quat_to_matrix(quat[g], R)
            for a in range(3):
                Lb[a] = R[0, a] * angmom[g, 0] + R[1, a] * angmom[g, 1] + R[2, a] * angmom[g, 2]
            free_rotor(quat[g], Lb, inertia[g], dt)
            # L in world axes is unchanged by a free rotation: Lb only moved with the body
        elif motion[g] == MOTION_KINEMATIC:
            for d in range(3):
                pos[g, d] += vel[g, d] * dt
            turn_by_world_spin(quat[g], omega[g, 0], omega[g, 1], omega[g, 2], dt)
        for d in range(3):
            if not (math.isfinite(pos[g, d]) and math.isfinite(angmom[g, d])):
                ok = False
    energy[E_GRAVITY] += work
    return ok


@njit
def neighbour_cutoff(radius, skin):
    """2 r_max + skin: the largest centre distance the neighbour list covers."""
    rmax = 0.0
    for g in range(radius.shape[0]):
        rmax = max(rmax, radius[g])
    return 2.0 * rmax + skin


@njit
def start_step(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque,
               gravity, cell, ctl, ictl, walls, pos_build, energy, acc, gctl):
    """The first half of a step, whatever the contact law: the cell's servo (on the stress of the
    last forces), the walls' servo (on their forces of the last forces) and move, half kick and
    drift with the cell's flow, the rotations. Returns (ok, stale): not ok if a grain's state is not
    finite (gctl names the status); stale when the skin no longer covers what moved since the last
    rebuild (centres relative to the affine flow, the cell's stretch and tilt)."""
    servo(cell, ctl, ictl, acc)
    servo_walls(walls, walls.shape[0], acc, acc[:0])
    move_walls(walls, acc, dt)
    if not drift_grains(dt, alpha, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque,
                        gravity, cell, energy):
        gctl[GC_STATUS] = STATUS_DIVERGED
        gctl[GC_BAD_I] = -1
        return False, False
    update_rotations(quat, rot, angmom, inertia, omega, motion)
    return True, list_is_stale(cell, math.sqrt(affine_drift2(pos, pos_build, cell)), cutoff, skin)


@njit
def finish_step(dt, alpha, pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes, t_areas,
                t_radius, t_cull, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, force,
                torque, gravity, cell, periodic, walls, wall_mat, law, k_normal, kt_ratio, mu_tab, zeta, both, limit,
                hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e,
                cp_x, cp_f, cp_ij, energy, acc, gctl):
    """The second half of a step: forces at the drifted state, the walls' second half of work,
    the second half kick. False if the run diverged (gctl names where)."""
    step = gctl[GC_STEP] + 1
    n_cp = grain_forces(step, dt, pairs, gctl[GC_NPAIRS], tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                        t_nodes, t_areas, t_radius, t_cull, pos, vel, omega, rot, mass, motion, radius, material, force,
                        torque, gravity, cell, periodic, walls, wall_mat, law, k_normal, kt_ratio, mu_tab, zeta, both,
                        limit, hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g,
                        sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij, energy, acc, gctl)
    if n_cp < 0:
        gctl[GC_STATUS] = STATUS_DIVERGED
        return False
    gctl[GC_NCP] = n_cp
    complete_step(dt, alpha, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, walls, energy, acc,
                  gctl)
    return True


@njit
def complete_step(dt, alpha, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, walls, energy, acc,
                  gctl):
    """The end of a step once its forces are summed: the walls' second half of work, the second
    half kick, the rotations, the step count."""
    walls_half_work(walls, acc, dt)
    half_kick(0.5 * dt, alpha, vel, angmom, omega, rot, mass, inertia, motion, force, torque, energy)
    update_rotations(quat, rot, angmom, inertia, omega, motion)
    gctl[GC_STEP] += 1


@njit
def run_grains(n_steps, dt, skin, limit, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes, t_areas,
               t_radius, t_cull, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, force,
               torque, gravity, cell, ctl, ictl, periodic, walls, wall_mat, law, k_normal, kt_ratio, mu_tab, zeta, both,
               hist_off, shear, partner, last_step, pairs, pos_build, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta,
               sc_k, sc_e, cp_x, cp_f, cp_ij, energy, acc, gctl):
    """Advance up to n_steps steps; returns the number completed. gctl[GC_STATUS] says why it
    returned: STATUS_PAIRS_FULL (the step in hand has drifted; the caller grows `pairs`, rebuilds and
    calls finish_step), STATUS_DIVERGED (gctl[GC_BAD_I/J]), else done.

    A step: the cell's servo (boundaries.servo, on the stress of the last forces); walls move; half
    kick and drift with the cell's flow; the cell moves; a neighbour rebuild when the skin no longer
    covers what moved (centres relative to the affine flow, the cell's stretch and tilt); forces;
    half kick."""
    gctl[GC_STATUS] = STATUS_DONE
    alpha = ctl[CTL_LOCAL_DAMP]
    cutoff = neighbour_cutoff(radius, skin)
    for it in range(n_steps):
        ok, stale = start_step(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass, inertia, motion,
                               force, torque, gravity, cell, ctl, ictl, walls, pos_build, energy, acc, gctl)
        if not ok:
            return it
        if stale:
            if not rebuild(pos, radius, cell, periodic, skin, pairs, pos_build, gctl):
                gctl[GC_STATUS] = STATUS_PAIRS_FULL
                return it
        if not finish_step(dt, alpha, pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes,
                           t_areas, t_radius, t_cull, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius,
                           material, force, torque, gravity, cell, periodic, walls, wall_mat, law, k_normal, kt_ratio,
                           mu_tab, zeta, both, limit, hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist,
                           sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij, energy, acc, gctl):
            return it
    return n_steps


class LevelSetBodies:
    """The rigid level-set grains of a Simulation: templates, grain arrays, node histories, kernels.

    Built by Simulation.setup from the grains added with Simulation.add_grains; `contact` holds the
    node law's settings (Simulation.set_grain_contact)."""

    STATE = ("t_phi", "t_phi_off", "t_shape", "t_origin", "t_h", "t_node_off", "t_nodes", "t_areas", "t_radius",
             "material", "tmpl", "motion", "pos", "vel", "omega", "angmom", "quat", "rot", "force", "torque", "mass",
             "inertia", "radius", "hist_off", "shear", "partner", "last_step", "pairs", "pos_build", "gctl",
             "energy", "mu_tab", "wall_mat", "t_vert", "t_vert_off", "t_face", "t_face_off")
    # arrays older checkpoints lack: the caller sets the friction table; no surfaces for output
    _OPTIONAL = ("mu_tab", "wall_mat", "t_vert", "t_vert_off", "t_face", "t_face_off")
    # arrays that later layouts added or grew, with the value an older checkpoint's run had
    _PADDED = {"energy": N_ENERGY, "gctl": N_GC}

    def __init__(self, templates, batches, materials, mu_tab, wall_mat):
        T = list(templates)
        self.templates = T
        self.t_phi = np.concatenate([t.phi_grid.ravel() for t in T])
        self.t_phi_off = np.cumsum([0] + [t.phi_grid.size for t in T])[:-1].astype(np.int64)
        self.t_shape = np.array([t.grid_shape for t in T], dtype=np.int64)
        self.t_origin = np.array([t.grid_origin for t in T], dtype=np.float64)
        self.t_h = np.array([t.spacing for t in T], dtype=np.float64)
        self.t_node_off = np.cumsum([0] + [t.n_nodes for t in T]).astype(np.int64)
        self.t_nodes = np.ascontiguousarray(np.concatenate([t.nodes for t in T]))
        self.t_areas = np.concatenate([t.areas for t in T])
        self.t_radius = np.array([t.bounding_radius for t in T], dtype=np.float64)
        self._culling()
        # the marching-cubes surfaces, for output (VTK) only
        self.t_vert = np.ascontiguousarray(np.concatenate([t.surface_vertices for t in T]), dtype=np.float64)
        self.t_vert_off = np.cumsum([0] + [len(t.surface_vertices) for t in T]).astype(np.int64)
        self.t_face = np.ascontiguousarray(np.concatenate([t.surface_faces for t in T]), dtype=np.int64)
        self.t_face_off = np.cumsum([0] + [len(t.surface_faces) for t in T]).astype(np.int64)
        self.tmpl = np.concatenate([np.full(len(b["pos"]), b["template"], dtype=np.int64) for b in batches])
        self.motion = np.concatenate([np.full(len(b["pos"]), b["motion"], dtype=np.int64) for b in batches])
        self.material = np.concatenate([np.full(len(b["pos"]), b["material"], dtype=np.int64) for b in batches])
        self.pos = np.ascontiguousarray(np.concatenate([b["pos"] for b in batches]))
        self.vel = np.ascontiguousarray(np.concatenate([b["vel"] for b in batches]))
        self.omega = np.ascontiguousarray(np.concatenate([b["omega"] for b in batches]))
        self.quat = np.ascontiguousarray(np.concatenate([b["quat"] for b in batches]))
        density = materials[self.material, 3]
        self.mass = np.array([T[t].volume for t in self.tmpl]) * density
        self.inertia = np.array([T[t].inertia for t in self.tmpl]) * density[:, None]
        self.radius = self.t_radius[self.tmpl] + 2.0 * self.t_h[self.tmpl]
        G = len(self.pos)
        self.rot = np.zeros((G, 3, 3))
        self.angmom = initial_motion(self.quat, self.inertia, self.motion, self.vel, self.omega)
        n_hist = np.array([T[t].n_nodes for t in self.tmpl], dtype=np.int64)
        self.hist_off = np.concatenate([[0], np.cumsum(n_hist)[:-1]]).astype(np.int64)
        H = int(n_hist.sum())
        self.shear = np.zeros((H, 3))
        self.partner = np.full(H, -1, dtype=np.int64)
        self.last_step = np.full(H, -10, dtype=np.int64)
        self.force = np.zeros((G, 3))
        self.torque = np.zeros((G, 3))
        self.pairs = np.zeros((max(16, 8 * G), 2), dtype=np.int64)
        self.pos_build = np.full((G, 3), np.inf)  # forces a rebuild at the first step
        self.gctl = np.zeros(N_GC, dtype=np.int64)
        self.energy = np.zeros(N_ENERGY)
        self.mu_tab = np.ascontiguousarray(mu_tab, dtype=np.float64)
        self.wall_mat = np.asarray(wall_mat, dtype=np.int64).reshape(-1)
        self.hertz = None  # the rows of the "hertz_curvature" law (bodies.levelset_hertz.HertzRows), if it runs
        self._scratch()
        update_rotations(self.quat, self.rot, self.angmom, self.inertia, self.omega, self.motion)

    def _culling(self):
        # derived from the template arrays (so not in a checkpoint): the node trees and interior boxes
        # that the node pass culls with (contact.node_tree)
        self.t_cull = culling_arrays(self.t_phi, self.t_phi_off, self.t_shape, self.t_origin, self.t_h, self.t_nodes,
                                     self.t_node_off)

    def _scratch(self):
        m = 2 * int(np.max(np.diff(self.t_node_off)))
        self.sc_owner = np.zeros(m, dtype=np.int64)
        self.sc_other = np.zeros(m, dtype=np.int64)
        self.sc_hist = np.zeros(m, dtype=np.int64)
        self.sc_x = np.zeros((m, 3))
        self.sc_g = np.zeros((m, 3))
        self.sc_e = np.zeros((m, 3))
        self.sc_delta = np.zeros(m)
        self.sc_k = np.zeros(m)
        cap = max(100_000, 64 * len(self.pos))
        self.cp_x = np.zeros((cap, 3))
        self.cp_f = np.zeros((cap, 3))
        self.cp_ij = np.zeros((cap, 2), dtype=np.int64)

    @property
    def n(self):
        return len(self.pos)

    def _template_args(self):
        return (self.tmpl, self.t_phi, self.t_phi_off, self.t_shape, self.t_origin, self.t_h, self.t_node_off,
                self.t_nodes, self.t_areas, self.t_radius, self.t_cull)

    def _contact_args(self, c):
        return (c["law_code"], c["stiffness"], c["kt_ratio"], self.mu_tab, c["damping_ratio"], c["contact"] == "both")

    def _scratch_args(self):
        return (self.sc_owner, self.sc_other, self.sc_hist, self.sc_x, self.sc_g, self.sc_delta, self.sc_k,
                self.sc_e, self.cp_x, self.cp_f, self.cp_ij, self.energy)

    def _body_args(self):
        return (self.pos, self.vel, self.quat, self.rot, self.angmom, self.omega, self.mass, self.inertia,
                self.motion, self.radius, self.material, self.force, self.torque)

    def _grow_pairs(self):
        self.pairs = np.zeros((2 * int(self.gctl[GC_NEED]), 2), dtype=np.int64)

    def ensure_pairs(self, cell, periodic, skin):
        while not rebuild(self.pos, self.radius, cell, periodic, skin, self.pairs, self.pos_build, self.gctl):
            self._grow_pairs()

    def _finish(self, dt, alpha, gravity, cell, periodic, walls, contact, limit, acc):
        return finish_step(dt, alpha, self.pairs, *self._template_args(), *self._body_args(), gravity, cell, periodic,
                           walls, self.wall_mat, *self._contact_args(contact), limit, self.hist_off, self.shear,
                           self.partner, self.last_step, *self._scratch_args(), acc, self.gctl)

    def forces(self, dt, gravity, cell, periodic, walls, contact, skin, limit, acc):
        """Forces at the current state (before the first step): a force evaluation whose contact
        histories count as the step before the first."""
        if self.hertz is not None:  # the "hertz_curvature" law: its own pass (bodies.levelset_hertz)
            return self.hertz.forces(self, dt, gravity, cell, periodic, walls, contact, skin, limit, acc)
        self.ensure_pairs(cell, periodic, skin)
        n_cp = grain_forces(
            int(self.gctl[GC_STEP]), dt, self.pairs, int(self.gctl[GC_NPAIRS]), *self._template_args(), self.pos,
            self.vel, self.omega, self.rot, self.mass, self.motion, self.radius, self.material, self.force,
            self.torque, gravity, cell, periodic, walls, self.wall_mat, *self._contact_args(contact), limit,
            self.hist_off, self.shear, self.partner, self.last_step, *self._scratch_args(), acc, self.gctl)
        self.gctl[GC_NCP] = max(n_cp, 0)
        return n_cp >= 0

    def run(self, steps, dt, gravity, cell, ctl, ictl, periodic, walls, contact, skin, limit, acc):
        """Advance `steps` steps; returns (steps done, diverged)."""
        if self.hertz is not None:
            return self.hertz.run(self, steps, dt, gravity, cell, ctl, ictl, periodic, walls, contact, skin, limit,
                                  acc)
        left = int(steps)
        done = 0
        while left > 0:
            k = run_grains(left, dt, skin, limit, *self._template_args(), *self._body_args(), gravity, cell, ctl, ictl,
                           periodic, walls, self.wall_mat, *self._contact_args(contact), self.hist_off, self.shear,
                           self.partner, self.last_step, self.pairs, self.pos_build, *self._scratch_args(), acc,
                           self.gctl)
            left -= k
            done += k
            status = int(self.gctl[GC_STATUS])
            if status == STATUS_DIVERGED:
                return done, True
            if status == STATUS_PAIRS_FULL:
                # the step in hand has drifted: list its pairs in longer arrays, then finish it
                self._grow_pairs()
                self.ensure_pairs(cell, periodic, skin)
                if not self._finish(dt, ctl[CTL_LOCAL_DAMP], gravity, cell, periodic, walls, contact, limit, acc):
                    return done, True
                left -= 1
                done += 1
        return done, False

    # ---------------------------------------------------------------- diagnostics (read-only)
    def kinetic_energy(self):
        """Translational + rotational kinetic energy of the dynamic grains."""
        return rigid_kinetic_energy(self.mass, self.vel, self.rot, self.angmom, self.inertia, self.motion)

    def contact_energy(self):
        """Normal penalty energy sum k_i delta_i^2 / 2 at the last force evaluation."""
        return float(self.energy[E_NORMAL])

    def momentum(self):
        dyn = self.motion == MOTION_DYNAMIC
        return (self.mass[dyn, None] * self.vel[dyn]).sum(axis=0)

    def angular_momentum(self, about=(0.0, 0.0, 0.0)):
        dyn = self.motion == MOTION_DYNAMIC
        o = np.asarray(about, dtype=np.float64)
        orb = np.cross(self.pos[dyn] - o, self.mass[dyn, None] * self.vel[dyn]).sum(axis=0)
        return orb + self.angmom[dyn].sum(axis=0)

    def contact_points(self):
        """(points (m, 3), forces on the node's grain (m, 3)) of the last force evaluation."""
        n = min(int(self.gctl[GC_NCP]), len(self.cp_x))
        return self.cp_x[:n].copy(), self.cp_f[:n].copy()

    def contact_network(self):
        """The contacts of the last force evaluation summed per pair (pair_network)."""
        return pair_network(self.cp_ij, self.cp_f, min(int(self.gctl[GC_NCP]), len(self.cp_x)))

    def surfaces(self):
        """World-frame marching-cubes surfaces of all grains: (vertices, triangles, grain_id)."""
        if getattr(self, "t_vert", None) is None:
            raise ValueError("this checkpoint holds no grain surfaces (written by an older graindem): no VTK surfaces")
        verts, tris, gid = [], [], []
        nv = 0
        for g, t in enumerate(self.tmpl):
            tv = self.t_vert[self.t_vert_off[t]:self.t_vert_off[t + 1]]
            v = tv @ self.rot[g].T + self.pos[g]
            verts.append(v)
            tris.append(self.t_face[self.t_face_off[t]:self.t_face_off[t + 1]] + nv)
            gid.append(np.full(len(v), g))
            nv += len(v)
        return np.concatenate(verts), np.concatenate(tris), np.concatenate(gid)

    def write_vtk(self, prefix):
        """Write `prefix`_surfaces.vtu (grain surfaces) and `prefix`_contacts.vtu (contact points)."""
        return write_surfaces_and_contacts(self, prefix)

    # ---------------------------------------------------------------- state
    def state_arrays(self):
        d = {"grain_" + name: np.array(getattr(self, name)) for name in self.STATE}
        # the contact points of the last force evaluation: measure() and the VTK network of a loaded
        # state read them before its next step computes them again
        n = min(int(self.gctl[GC_NCP]), len(self.cp_x))
        d.update({"grain_cp_x": self.cp_x[:n].copy(), "grain_cp_f": self.cp_f[:n].copy(),
                  "grain_cp_ij": self.cp_ij[:n].copy()})
        if self.hertz is not None:
            d.update(self.hertz.state_arrays())
        return d

    @classmethod
    def from_state(cls, arrays):
        """The grains of a checkpoint (state_arrays); templates are rebuilt from their arrays, so the
        surface meshes (surfaces()) are not available after a restart."""
        self = cls.__new__(cls)
        self.templates = None
        self.hertz = None  # attached by the Simulation when its law is "hertz_curvature"
        for name in self.STATE:
            if "grain_" + name not in arrays and name in cls._OPTIONAL:
                continue
            a = np.ascontiguousarray(np.array(arrays["grain_" + name]))
            if name in cls._PADDED and a.size < cls._PADDED[name]:
                a = np.concatenate([a, np.zeros(cls._PADDED[name] - a.size, dtype=a.dtype)])
            setattr(self, name, a)
        self._culling()
        self._scratch()
        if "grain_cp_x" in arrays:
            n = min(len(arrays["grain_cp_x"]), len(self.cp_x))
            for name in ("cp_x", "cp_f", "cp_ij"):
                getattr(self, name)[:n] = arrays["grain_" + name][:n]
        return self


def rigid_kinetic_energy(mass, vel, rot, angmom, inertia, motion):
    """Translational + rotational kinetic energy of the dynamic grains, ½ m v² + ½ Lbᵀ I⁻¹ Lb with the
    body-frame angular momentum Lb = Rᵀ L."""
    dyn = motion == MOTION_DYNAMIC
    e = 0.5 * np.sum(mass[dyn] * np.sum(vel[dyn] ** 2, axis=1))
    for g in np.flatnonzero(dyn):
        Lb = rot[g].T @ angmom[g]
        e += 0.5 * np.sum(Lb * Lb / inertia[g])
    return float(e)


def pair_network(cp_ij, cp_f, n):
    """The first n recorded node contacts summed per pair: dict of i, j (j <= -2: wall -2 - j), force
    (m, 3) on i, n_nodes (m,). Row k of cp_ij holds the owner of node force cp_f[k] and its partner;
    each node force counts for its owner against its partner, whichever of the two owns it."""
    o = cp_ij[:n, 0]
    p = cp_ij[:n, 1]
    f = cp_f[:n]
    # orient each row as (lower grain, other): the force on the lower one
    swap = (p >= 0) & (p < o)
    i = np.where(swap, p, o)
    j = np.where(swap, o, p)
    f = np.where(swap[:, None], -f, f)
    key = np.stack([i, j], axis=1)
    uniq, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    tot = np.zeros((len(uniq), 3))
    np.add.at(tot, inv.reshape(-1), f)
    return {"i": uniq[:, 0].copy(), "j": uniq[:, 1].copy(), "force": tot, "n_nodes": counts}


def write_surfaces_and_contacts(bodies, prefix):
    """`prefix`_surfaces.vtu (bodies.surfaces(): vertices, triangles, grain per vertex) and
    `prefix`_contacts.vtu (bodies.contact_points(): points and forces); returns the two names."""
    from ..io import vtk

    v, f, gid = bodies.surfaces()
    vtk.write_surface(f"{prefix}_surfaces.vtu", v, f, point_data={"grain": gid})
    x, fc = bodies.contact_points()
    vtk.write_particles(f"{prefix}_contacts.vtu", x, point_data={"force": fc})
    return f"{prefix}_surfaces.vtu", f"{prefix}_contacts.vtu"


def node_contact_time_step(mass, stiffness):
    """sqrt(m / k): the period / 2 pi of a mass m on a spring k (the critical step of a node contact
    is 2 sqrt(m / k); use a fraction of it)."""
    return math.sqrt(float(mass) / float(stiffness))

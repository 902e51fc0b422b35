"""The deformable level-set body kind: grains with rigid and modal degrees of freedom.

A template (deform.scenes.DeformableTemplate) holds the reference level set φ0 on a grid, surface
nodes with area weights, its modes (tabulated on the grid, and at the nodes), the modal mass, damping
and internal response (linear K ε, or a tabulated single-mode F(ε), odd extension); a template with
no modes is a rigid grain. Templates are stored once (the t_* arrays, concatenated, with offsets);
a grain holds its pose, velocities, modal coordinates ε and rates ε̇, and a friction history slot
per node.

Arrays (G grains, T templates, O obstacles):
    per template: t_phi/t_phi_off/t_shape/t_origin/t_h (grids), t_nodes/t_node_off/t_areas (nodes),
    t_radius (reference bounding radius), t_nmodes, t_table/t_table_off (modes on the grid),
    t_nodemodes/t_nodemode_off (modes at the nodes), t_mat_off into t_mlhs/t_mrhs/t_k/t_c (n_m × n_m
    blocks: the damped leapfrog's (M + ½ΔtC)⁻¹ and M − ½ΔtC, the linear stiffness, the damping),
    t_table_resp (1 = tabulated response), t_tab_off into t_tab_eps/t_tab_force/t_tab_slope, t_beta
    (tangent damping C = β dF/dε);
    per grain: tmpl, motion (bodies.levelset.MOTION_*), dof (6 flags: x, y, z translation and
    rotation about the world axes), pos, vel, quat, rot, angmom (world), omega, mass, inertia
    (principal, reference shape), force, torque, eps_off into eps/epsdot/gen, hist_off (one slot per
    node: shear, partner, last_step), node_r (largest deformed node distance now), radius and
    r_build (bounding radius and node_r at the last neighbour rebuild);
    obstacles (planes and infinite cylinders): o_type, o_point, o_dir (plane: inward normal;
    cylinder: axis), o_rad, o_vel, o_force (force on each obstacle), o_mat (material);
    friction: mu_tab (n_materials, n_materials), a contact's mu = mu_tab[material of the grain,
    material of the other grain or obstacle] (the grains' `material`).

Step (leapfrog, all inside `run_deformable`):
  1. node kinematics: deformed node positions x = c + R (X + Σ ε Φ(X)) and velocities;
  2. neighbour list (bodies.levelset.build_grain_pairs over bounding spheres with skin): rebuilt when
     some grain's drift relative to the cell's affine flow, plus the growth of its deformed radius,
     plus half the cell's stretch and tilt since the last rebuild times the cutoff exceeds half the
     skin (or a tilt must flip), so the bounding radius covers the deformed shape between rebuilds;
  3. forces at the start of the step: gravity, nodes against obstacles, grain pairs through the
     minimum image of the (possibly sheared) periodic cell (the slave's nodes in the master's
     pulled-back level set, contact.deformable_contact; both ways with weight ½ or the lower index as
     slave), each contact adding to both bodies' force, torque (deformed lever arms) and generalized
     force Φᵀ Rᵀ f, and to the Love–Weber stress sum acc[ACC_STRESS];
  4. the periodic cell's strain and shear rates for the step (boundaries.servo: prescribed, or the
     stress servo on the stress just summed; it books the cell's work in acc[ACC_BOUNDARY_WORK]);
     the servo walls' velocities (boundaries.walls.servo_wall_velocity, on their forces just summed)
     and the obstacles' work over the step (their force times the velocity of step 7);
  5. window sums for records (obstacle forces and positions, ε, centres);
  6. kick and drift: (M + ½ΔtC) ε̇⁺ = (M − ½ΔtC) ε̇⁻ + Δt (F_ε − F_int(ε)), ε += Δt ε̇⁺; v += Δt F/m,
     x += Δt v + L (x − lo) Δt (velocities are relative to the cell's affine flow L, as for the other
     kinds); L += Δt τ and the exact free rotation (core.rotations.free_rotor) over Δt; the cell moves
     (core.cell.advance_cell);
  7. obstacles move by Δt × (this step's velocity factor) × o_vel.
"""

import math

import numpy as np

from .._jit import njit
from ..contact import deformable_contact as dc
from ..boundaries.servo import servo
from ..boundaries.walls import WALL_MODE, WALL_SERVO, WALL_VEL, servo_wall_velocity
from ..contact.levelset_contact import add_stress, coulomb_node_spring
from ..core.cell import (CELL_L, CELL_TILT, advance_cell, list_is_stale, flow_displacement, flow_velocity,
                         is_sheared)
from ..core.layout import ACC_STRESS
from ..core.rotations import free_rotor, quat_to_matrix, turn_by_world_spin
from .levelset import (GC_NCP, GC_NEED, GC_NPAIRS, GC_STEP, MOTION_DYNAMIC, MOTION_FIXED, MOTION_KINEMATIC, N_GC,
                       affine_drift2, initial_motion, neighbour_cutoff, pair_image, pair_network, rebuild,
                       rigid_kinetic_energy, update_rotations, write_surfaces_and_contacts)

PLANE = 0
CYLINDER = 1
SURFACE_ARRAYS = ("t_svert", "t_svert_off", "t_sface", "t_sface_off", "t_smodes")

# float settings record
DC_KS = 0        # normal penalty per unit area
DC_CS = 1        # normal damping per unit area
DC_KT = 2        # tangential / normal stiffness ratio
DC_MU = 3        # the one friction of every pair in a checkpoint without `mu_tab` (the kernels read mu_tab)
DC_TIME = 4      # simulated time
DC_SKIN = 5
N_DC = 6
# int settings record
DI_ITER = 0      # refinements of the pull-back's inverse map
DI_NEWTON = 1    # 1: Newton steps, 0: fixed-point iterations
DI_CACHE = 2     # 1: corner-wise pull-back values cached once per step and grain
DI_POINT = 3     # 1: point-wise pull-back, 0: corner-wise
DI_BOTH = 4      # 1: both ways with weight 1/2, 0: the lower index is the slave
N_DI = 5
# energy record: states now, and sums since the start
E_CONTACT = 0        # normal penalty energy, sum a k_s delta^2 / 2 (now)
E_SPRING = 1         # tangential springs, sum k_t |s|^2 / 2 (now)
E_TANGENT_WORK = 2   # work done against the tangential forces (springs + slip + their damping)
E_CONTACT_DAMPING = 3  # dissipated by the normal contact damping
E_MODAL_DAMPING = 4  # dissipated by the modal damping
E_WALL_WORK = 5      # work of the moving obstacles on the grains
N_E = 6


@njit(inline="always")
def _point_force(g, fx, fy, fz, lx, ly, lz, force, torque):
    force[g, 0] += fx
    force[g, 1] += fy
    force[g, 2] += fz
    torque[g, 0] += ly * fz - lz * fy
    torque[g, 1] += lz * fx - lx * fz
    torque[g, 2] += lx * fy - ly * fx


@njit(inline="always")
def _node_generalized_force(g, k, n_nodes, nm, mo, e0, fx, fy, fz, rot, t_nodemodes, gen):
    """gen += Φ(X_k)ᵀ Rᵀ f for node k of grain g (its template's node modes from offset mo)."""
    f0 = rot[g, 0, 0] * fx + rot[g, 1, 0] * fy + rot[g, 2, 0] * fz
    f1 = rot[g, 0, 1] * fx + rot[g, 1, 1] * fy + rot[g, 2, 1] * fz
    f2 = rot[g, 0, 2] * fx + rot[g, 1, 2] * fy + rot[g, 2, 2] * fz
    for m in range(nm):
        q = mo + (m * n_nodes + k) * 3
        gen[e0 + m] += t_nodemodes[q] * f0 + t_nodemodes[q + 1] * f1 + t_nodemodes[q + 2] * f2


@njit(inline="always")
def _record_contact(n_cp, s, xw, fx, fy, fz, owner, other, cp_x, cp_f, cp_ij):
    """Keep contact point n_cp (node s of grain `owner` against `other`: a grain, or obstacle -2 - other)
    and its force for output, while there is room; returns n_cp + 1."""
    if n_cp < cp_x.shape[0]:
        cp_ij[n_cp, 0] = owner
        cp_ij[n_cp, 1] = other
        for d in range(3):
            cp_x[n_cp, d] = xw[s, d]
        cp_f[n_cp, 0] = fx
        cp_f[n_cp, 1] = fy
        cp_f[n_cp, 2] = fz
    return n_cp + 1


@njit
def node_kinematics(t_nodes, t_node_off, t_nmodes, t_nodemodes, t_nodemode_off, tmpl, pos, vel, omega, rot, eps,
                    epsdot, eps_off, hist_off, xw, vw, node_r):
    """Deformed node positions xw and velocities vw (world), and each grain's largest node distance."""
    for g in range(pos.shape[0]):
        t = tmpl[g]
        nm = t_nmodes[t]
        a0 = t_node_off[t]
        n_nodes = t_node_off[t + 1] - a0
        e0 = eps_off[g]
        mo = t_nodemode_off[t]
        worst = 0.0
        for k in range(n_nodes):
            bx = t_nodes[a0 + k, 0]
            by = t_nodes[a0 + k, 1]
            bz = t_nodes[a0 + k, 2]
            ux = 0.0
            uy = 0.0
            uz = 0.0
            for m in range(nm):
                q = mo + (m * n_nodes + k) * 3
                bx += eps[e0 + m] * t_nodemodes[q]
                by += eps[e0 + m] * t_nodemodes[q + 1]
                bz += eps[e0 + m] * t_nodemodes[q + 2]
                ux += epsdot[e0 + m] * t_nodemodes[q]
                uy += epsdot[e0 + m] * t_nodemodes[q + 1]
                uz += epsdot[e0 + m] * t_nodemodes[q + 2]
            lx = rot[g, 0, 0] * bx + rot[g, 0, 1] * by + rot[g, 0, 2] * bz
            ly = rot[g, 1, 0] * bx + rot[g, 1, 1] * by + rot[g, 1, 2] * bz
            lz = rot[g, 2, 0] * bx + rot[g, 2, 1] * by + rot[g, 2, 2] * bz
            s = hist_off[g] + k
            xw[s, 0] = pos[g, 0] + lx
            xw[s, 1] = pos[g, 1] + ly
            xw[s, 2] = pos[g, 2] + lz
            worst = max(worst, lx * lx + ly * ly + lz * lz)
            vw[s, 0] = vel[g, 0] + omega[g, 1] * lz - omega[g, 2] * ly + (
                rot[g, 0, 0] * ux + rot[g, 0, 1] * uy + rot[g, 0, 2] * uz)
            vw[s, 1] = vel[g, 1] + omega[g, 2] * lx - omega[g, 0] * lz + (
                rot[g, 1, 0] * ux + rot[g, 1, 1] * uy + rot[g, 1, 2] * uz)
            vw[s, 2] = vel[g, 2] + omega[g, 0] * ly - omega[g, 1] * lx + (
                rot[g, 2, 0] * ux + rot[g, 2, 1] * uy + rot[g, 2, 2] * uz)
        node_r[g] = math.sqrt(worst)


@njit(inline="always")
def _node_contact(hk, partner_id, step, dt, weight, area, delta, nx, ny, nz, vrx, vry, vrz, mu, dctl,
                  shear, partner, last_step, energy):
    """Force (normal + Coulomb with friction coefficient `mu`, the material pair's) on the slave node of
    one contact; updates its history and the energy record. Returns (fx, fy, fz, in_contact)."""
    ks = dctl[DC_KS]
    cs = dctl[DC_CS]
    vn = vrx * nx + vry * ny + vrz * nz
    mag = weight * area * (ks * delta - cs * vn)
    if mag <= 0.0:
        return 0.0, 0.0, 0.0, False
    energy[E_CONTACT] += 0.5 * weight * area * ks * delta * delta
    energy[E_CONTACT_DAMPING] += weight * area * cs * vn * vn * dt
    fx = mag * nx
    fy = mag * ny
    fz = mag * nz
    if mu > 0.0:
        tx = vrx - vn * nx
        ty = vry - vn * ny
        tz = vrz - vn * nz
        kt = dctl[DC_KT] * weight * area * ks
        ct = dctl[DC_KT] * weight * area * cs
        ftx, fty, ftz, _, _ = coulomb_node_spring(shear, partner, last_step, hk, partner_id, step, nx, ny, nz, tx,
                                                  ty, tz, dt, kt, ct, mu * mag)
        energy[E_SPRING] += 0.5 * kt * (shear[hk, 0] ** 2 + shear[hk, 1] ** 2 + shear[hk, 2] ** 2)
        energy[E_TANGENT_WORK] -= (ftx * tx + fty * ty + ftz * tz) * dt
        fx += ftx
        fy += fty
        fz += ftz
    partner[hk] = partner_id
    last_step[hk] = step
    return fx, fy, fz, True


@njit
def deformable_forces(step, dt, factor, pairs, n_pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                      t_areas, t_radius, t_nmodes, t_table, t_table_off, t_nodemodes, t_nodemode_off, pos, vel,
                      omega, rot, mass, motion, material, eps, epsdot, eps_off, gen, hist_off, xw, vw, node_r, force,
                      torque, gravity, cell, periodic, o_type, o_point, o_dir, o_rad, o_vel, o_force, o_mat, mu_tab,
                      dctl, dictl, shear, partner, last_step, pb_value, pb_stamp, pb_off, mode_ref, cp_x, cp_f, cp_ij,
                      energy, acc):
    """Zero and assemble forces, torques and generalized forces, and the Love-Weber stress sum
    acc[ACC_STRESS:ACC_STRESS + 9] (the servo's input); returns the number of contact nodes.

    Pairs meet through the minimum image of the (possibly sheared) cell; a node's velocity relative
    to its partner's image loses the cell's flow between the two centres (velocities are relative
    to that flow). Stress (compression positive): the force on the slave node times the branch from
    the master's image to the slave's centre; an obstacle node adds the force on the obstacle times
    the vector from the grain's centre to the node (contact.levelset_contact's convention). Friction:
    mu_tab[material of the grain, material of the grain or obstacle (o_mat)] (the material pair's)."""
    n_grains = pos.shape[0]
    energy[E_CONTACT] = 0.0
    energy[E_SPRING] = 0.0
    for g in range(n_grains):
        for d in range(3):
            force[g, d] = mass[g] * gravity[d] if motion[g] == MOTION_DYNAMIC else 0.0
            torque[g, d] = 0.0
    gen[:] = 0.0
    o_force[:, :] = 0.0
    for c in range(9):
        acc[ACC_STRESS + c] = 0.0
    n_cp = 0
    # ---- nodes against obstacles
    for g in range(n_grains):
        t = tmpl[g]
        nm = t_nmodes[t]
        a0 = t_node_off[t]
        n_nodes = t_node_off[t + 1] - a0
        mo = t_nodemode_off[t]
        e0 = eps_off[g]
        for o in range(o_type.shape[0]):
            # no node of a grain whose centre is further than its deformed radius can touch
            cx = pos[g, 0] - o_point[o, 0]
            cy = pos[g, 1] - o_point[o, 1]
            cz = pos[g, 2] - o_point[o, 2]
            if o_type[o] == PLANE:
                clear = cx * o_dir[o, 0] + cy * o_dir[o, 1] + cz * o_dir[o, 2]
            else:
                along = cx * o_dir[o, 0] + cy * o_dir[o, 1] + cz * o_dir[o, 2]
                clear = math.sqrt((cx - along * o_dir[o, 0]) ** 2 + (cy - along * o_dir[o, 1]) ** 2
                                  + (cz - along * o_dir[o, 2]) ** 2) - o_rad[o]
            if clear > node_r[g]:
                continue
            for k in range(n_nodes):
                s = hist_off[g] + k
                rx = xw[s, 0] - o_point[o, 0]
                ry = xw[s, 1] - o_point[o, 1]
                rz = xw[s, 2] - o_point[o, 2]
                if o_type[o] == PLANE:
                    nx = o_dir[o, 0]
                    ny = o_dir[o, 1]
                    nz = o_dir[o, 2]
                    phi = rx * nx + ry * ny + rz * nz
                else:
                    along = rx * o_dir[o, 0] + ry * o_dir[o, 1] + rz * o_dir[o, 2]
                    px = rx - along * o_dir[o, 0]
                    py = ry - along * o_dir[o, 1]
                    pz = rz - along * o_dir[o, 2]
                    dist = math.sqrt(px * px + py * py + pz * pz)
                    phi = dist - o_rad[o]
                    if phi >= 0.0 or dist < 1e-300:
                        continue
                    nx = px / dist
                    ny = py / dist
                    nz = pz / dist
                if phi >= 0.0:
                    continue
                wvx = factor * o_vel[o, 0]
                wvy = factor * o_vel[o, 1]
                wvz = factor * o_vel[o, 2]
                fx, fy, fz, on = _node_contact(s, -2 - o, step, dt, 1.0, t_areas[a0 + k], -phi, nx, ny, nz,
                                               vw[s, 0] - wvx, vw[s, 1] - wvy, vw[s, 2] - wvz,
                                               mu_tab[material[g], o_mat[o]], dctl, shear, partner, last_step,
                                               energy)
                if not on:
                    continue
                _point_force(g, fx, fy, fz, xw[s, 0] - pos[g, 0], xw[s, 1] - pos[g, 1], xw[s, 2] - pos[g, 2],
                             force, torque)
                o_force[o, 0] -= fx
                o_force[o, 1] -= fy
                o_force[o, 2] -= fz
                add_stress(acc, -fx, -fy, -fz, xw[s, 0] - pos[g, 0], xw[s, 1] - pos[g, 1], xw[s, 2] - pos[g, 2])
                _node_generalized_force(g, k, n_nodes, nm, mo, e0, fx, fy, fz, rot, t_nodemodes, gen)
                n_cp = _record_contact(n_cp, s, xw, fx, fy, fz, g, -2 - o, cp_x, cp_f, cp_ij)
    # ---- grain pairs: nodes of the slave in the master's deformed level set
    n_iter = dictl[DI_ITER]
    newton = dictl[DI_NEWTON] != 0
    use_cache = dictl[DI_CACHE] != 0
    pointwise = dictl[DI_POINT] != 0
    n_ways = 2 if dictl[DI_BOTH] != 0 else 1
    weight = 1.0 / n_ways
    Lx, Ly, Lz = cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2]
    txy, txz, tyz = cell[CELL_TILT], cell[CELL_TILT + 1], cell[CELL_TILT + 2]
    sheared = is_sheared(cell)
    for q in range(n_pairs):
        for way in range(n_ways):
            sg = pairs[q, way]
            mg = pairs[q, 1 - way]
            ts = tmpl[sg]
            tm = tmpl[mg]
            # the master's centre as the slave sees it (minimum image)
            ex, ey, ez = pair_image(pos, sg, mg, sheared, Lx, Ly, Lz, txy, txz, tyz, periodic)
            flx, fly, flz = flow_velocity(cell, ex, ey, ez)
            mcx = pos[sg, 0] + ex
            mcy = pos[sg, 1] + ey
            mcz = pos[sg, 2] + ez
            h = t_h[tm]
            inv_h = 1.0 / h
            # a slave node further from the master's centre than its furthest deformed node (plus a cell
            # for the surface between nodes) cannot be inside it
            reach = min(t_radius[tm] + 2.0 * h, node_r[mg] + h)
            if ex * ex + ey * ey + ez * ez > (reach + node_r[sg]) ** 2:
                continue
            nx_, ny_, nz_ = t_shape[tm, 0], t_shape[tm, 1], t_shape[tm, 2]
            ox, oy, oz = t_origin[tm, 0], t_origin[tm, 1], t_origin[tm, 2]
            size = nx_ * ny_ * nz_
            phi0 = t_phi[t_phi_off[tm]:t_phi_off[tm] + size].reshape((nx_, ny_, nz_))
            nmm = t_nmodes[tm]
            table = t_table[t_table_off[tm]:t_table_off[tm] + nmm * size * 3].reshape((nmm, nx_, ny_, nz_, 3))
            em = eps_off[mg]
            eps_m = eps[em:em + nmm]
            if use_cache and nmm > 0:
                cache = pb_value[pb_off[mg]:pb_off[mg] + size].reshape((nx_, ny_, nz_))
                stamp = pb_stamp[pb_off[mg]:pb_off[mg] + size].reshape((nx_, ny_, nz_))
                now = step + 1
            else:
                cache = pb_value[0:8].reshape((2, 2, 2))
                stamp = pb_stamp[0:8].reshape((2, 2, 2))
                now = 0
            nms = t_nmodes[ts]
            a0 = t_node_off[ts]
            n_nodes_s = t_node_off[ts + 1] - a0
            mos = t_nodemode_off[ts]
            es = eps_off[sg]
            for k in range(n_nodes_s):
                s = hist_off[sg] + k
                dx = xw[s, 0] - mcx
                dy = xw[s, 1] - mcy
                dz = xw[s, 2] - mcz
                if dx * dx + dy * dy + dz * dz > reach * reach:
                    continue
                # into the master's body frame
                px = rot[mg, 0, 0] * dx + rot[mg, 1, 0] * dy + rot[mg, 2, 0] * dz
                py = rot[mg, 0, 1] * dx + rot[mg, 1, 1] * dy + rot[mg, 2, 1] * dz
                pz = rot[mg, 0, 2] * dx + rot[mg, 1, 2] * dy + rot[mg, 2, 2] * dz
                refx = px
                refy = py
                refz = pz
                have_ref = False
                if nmm > 0 and pointwise:
                    phi, gx, gy, gz, refx, refy, refz = dc.pointwise_phi(phi0, table, eps_m, ox, oy, oz, h, px, py,
                                                                         pz, n_iter, newton)
                    if phi >= 0.0:
                        continue
                    # the chain rule only for nodes in contact
                    gx, gy, gz = dc.pointwise_gradient(table, eps_m, ox, oy, oz, h, refx, refy, refz, gx, gy, gz)
                    have_ref = True
                elif nmm > 0:
                    phi, gx, gy, gz = dc.pullback_phi(phi0, table, eps_m, ox, oy, oz, h, px, py, pz, n_iter,
                                                      newton, cache, stamp, now)
                else:
                    phi, gx, gy, gz = dc.plain_phi(phi0, ox, oy, oz, h, px, py, pz)
                if phi >= 0.0:
                    continue
                gn = math.sqrt(gx * gx + gy * gy + gz * gz)
                if gn < 1e-300:
                    continue
                gx /= gn
                gy /= gn
                gz /= gn
                # outward normal of the master, world frame
                nx = rot[mg, 0, 0] * gx + rot[mg, 0, 1] * gy + rot[mg, 0, 2] * gz
                ny = rot[mg, 1, 0] * gx + rot[mg, 1, 1] * gy + rot[mg, 1, 2] * gz
                nz = rot[mg, 2, 0] * gx + rot[mg, 2, 1] * gy + rot[mg, 2, 2] * gz
                # the master's material point: the pull-back of the contact point, and its modal velocity
                if nmm > 0 and not have_ref:
                    ubx, uby, ubz = dc.displacement_at(table, eps_m, ox, oy, oz, inv_h, px, py, pz)
                    refx, refy, refz = dc.inverse_map(table, eps_m, ox, oy, oz, inv_h, px, py, pz, ubx, uby, ubz,
                                                      n_iter, newton)
                mvx = 0.0
                mvy = 0.0
                mvz = 0.0
                for m in range(nmm):
                    umx, umy, umz = dc.mode_at(table, m, ox, oy, oz, inv_h, nx_, ny_, nz_, refx, refy, refz)
                    mode_ref[m, 0] = umx
                    mode_ref[m, 1] = umy
                    mode_ref[m, 2] = umz
                    mvx += epsdot[em + m] * umx
                    mvy += epsdot[em + m] * umy
                    mvz += epsdot[em + m] * umz
                vmx = vel[mg, 0] + omega[mg, 1] * dz - omega[mg, 2] * dy + (
                    rot[mg, 0, 0] * mvx + rot[mg, 0, 1] * mvy + rot[mg, 0, 2] * mvz)
                vmy = vel[mg, 1] + omega[mg, 2] * dx - omega[mg, 0] * dz + (
                    rot[mg, 1, 0] * mvx + rot[mg, 1, 1] * mvy + rot[mg, 1, 2] * mvz)
                vmz = vel[mg, 2] + omega[mg, 0] * dy - omega[mg, 1] * dx + (
                    rot[mg, 2, 0] * mvx + rot[mg, 2, 1] * mvy + rot[mg, 2, 2] * mvz)
                fx, fy, fz, on = _node_contact(s, mg, step, dt, weight, t_areas[a0 + k], -phi, nx, ny, nz,
                                               vw[s, 0] - vmx - flx, vw[s, 1] - vmy - fly, vw[s, 2] - vmz - flz,
                                               mu_tab[material[sg], material[mg]], dctl, shear, partner, last_step,
                                               energy)
                if not on:
                    continue
                _point_force(sg, fx, fy, fz, xw[s, 0] - pos[sg, 0], xw[s, 1] - pos[sg, 1], xw[s, 2] - pos[sg, 2],
                             force, torque)
                _node_generalized_force(sg, k, n_nodes_s, nms, mos, es, fx, fy, fz, rot, t_nodemodes, gen)
                _point_force(mg, -fx, -fy, -fz, dx, dy, dz, force, torque)
                f0 = -(rot[mg, 0, 0] * fx + rot[mg, 1, 0] * fy + rot[mg, 2, 0] * fz)
                f1 = -(rot[mg, 0, 1] * fx + rot[mg, 1, 1] * fy + rot[mg, 2, 1] * fz)
                f2 = -(rot[mg, 0, 2] * fx + rot[mg, 1, 2] * fy + rot[mg, 2, 2] * fz)
                for m in range(nmm):
                    gen[em + m] += mode_ref[m, 0] * f0 + mode_ref[m, 1] * f1 + mode_ref[m, 2] * f2
                add_stress(acc, fx, fy, fz, -ex, -ey, -ez)
                n_cp = _record_contact(n_cp, s, xw, fx, fy, fz, sg, mg, cp_x, cp_f, cp_ij)
    return n_cp


@njit
def internal_force(t, e0, eps, t_nmodes, t_mat_off, t_k, t_table_resp, t_tab_off, t_tab_eps, t_tab_force,
                   t_tab_slope, fint):
    """F_int(ε) of grain's modes into fint[:n_m]; returns the tangent slope of a tabulated response."""
    nm = t_nmodes[t]
    if t_table_resp[t] != 0:
        e = eps[e0]
        a = abs(e)
        lo = t_tab_off[t]
        n = t_tab_off[t + 1] - lo
        idx = np.searchsorted(t_tab_eps[lo:lo + n], a, side="right") - 1
        if idx > n - 2:
            idx = n - 2
        val = t_tab_force[lo + idx] + t_tab_slope[lo + idx] * (a - t_tab_eps[lo + idx])
        fint[0] = val if e >= 0 else -val
        return t_tab_slope[lo + idx]
    mo = t_mat_off[t]
    for a in range(nm):
        v = 0.0
        for b in range(nm):
            v += t_k[mo + a * nm + b] * eps[e0 + b]
        fint[a] = v
    return 0.0


@njit
def advance(dt, tmpl, motion, dof, pos, vel, quat, angmom, omega, force, torque, mass, inertia, eps, epsdot, gen,
            eps_off, t_nmodes, t_mat_off, t_mlhs, t_mrhs, t_k, t_c, t_table_resp, t_tab_off, t_tab_eps, t_tab_force,
            t_tab_slope, t_beta, cell, energy):
    """Kick and drift of every grain's modes, translation and rotation (module docstring, step 6); a
    dynamic grain's centre drifts with its velocity plus the cell's affine flow."""
    Lb = np.empty(3)
    R = np.empty((3, 3))
    fint = np.zeros(max(1, t_nmodes.max()))
    rhs = np.zeros(max(1, t_nmodes.max()))
    for g in range(pos.shape[0]):
        t = tmpl[g]
        nm = t_nmodes[t]
        e0 = eps_off[g]
        if nm > 0:
            slope = internal_force(t, e0, eps, t_nmodes, t_mat_off, t_k, t_table_resp, t_tab_off, t_tab_eps,
                                   t_tab_force, t_tab_slope, fint)
            mo = t_mat_off[t]
            if t_table_resp[t] != 0 and t_beta[t] > 0.0:
                # C = β K_t(ε): the scalar damped leapfrog with the current tangent (t_mrhs holds M)
                cm = t_beta[t] * slope
                mm = t_mrhs[mo]
                old = epsdot[e0]
                epsdot[e0] = ((mm - 0.5 * dt * cm) * old + dt * (gen[e0] - fint[0])) / (mm + 0.5 * dt * cm)
                mid = 0.5 * (old + epsdot[e0])
                energy[E_MODAL_DAMPING] += cm * mid * mid * dt
                eps[e0] += dt * epsdot[e0]
            else:
                for a in range(nm):
                    v = 0.0
                    for b in range(nm):
                        v += t_mrhs[mo + a * nm + b] * epsdot[e0 + b]
                    rhs[a] = v + dt * (gen[e0 + a] - fint[a])
                for a in range(nm):
                    v = 0.0
                    for b in range(nm):
                        v += t_mlhs[mo + a * nm + b] * rhs[b]
                    fint[a] = v   # the new rates, kept aside until the dissipation is summed
                for a in range(nm):
                    ma = 0.5 * (epsdot[e0 + a] + fint[a])
                    for b in range(nm):
                        mb = 0.5 * (epsdot[e0 + b] + fint[b])
                        energy[E_MODAL_DAMPING] += ma * t_c[mo + a * nm + b] * mb * dt
                for a in range(nm):
                    epsdot[e0 + a] = fint[a]
                    eps[e0 + a] += dt * epsdot[e0 + a]
        if motion[g] == MOTION_FIXED:
            continue
        if motion[g] == MOTION_KINEMATIC:
            for d in range(3):
                pos[g, d] += vel[g, d] * dt
            turn_by_world_spin(quat[g], omega[g, 0], omega[g, 1], omega[g, 2], dt)
            continue
        ux, uy, uz = flow_displacement(cell, pos[g, 0], pos[g, 1], pos[g, 2], dt)
        for d in range(3):
            if dof[g, d]:
                vel[g, d] += dt * force[g, d] / mass[g]
            angmom[g, d] = angmom[g, d] + dt * torque[g, d] if dof[g, 3 + d] else 0.0
        for d in range(3):
            pos[g, d] += dt * vel[g, d]
        # the flow's share apart, so that a fixed cell's drift rounds as the plain x += Δt v
        pos[g, 0] += ux
        pos[g, 1] += uy
        pos[g, 2] += uz
        quat_to_matrix(quat[g], R)
        for a in range(3):
            Lb[a] = R[0, a] * angmom[g, 0] + R[1, a] * angmom[g, 1] + R[2, a] * angmom[g, 2]
        free_rotor(quat[g], Lb, inertia[g], dt)


@njit
def run_deformable(n_steps, dt, factors, tmpl, motion, dof, t_phi, t_phi_off, t_shape, t_origin, t_h, t_nodes,
                   t_node_off, t_areas, t_radius, t_nmodes, t_table, t_table_off, t_nodemodes, t_nodemode_off,
                   t_mat_off, t_mlhs, t_mrhs, t_k, t_c, t_table_resp, t_tab_off, t_tab_eps, t_tab_force, t_tab_slope,
                   t_beta, pos, vel, quat, rot, angmom, omega, mass, inertia, force, torque, eps, epsdot, gen,
                   eps_off, hist_off, shear, partner, last_step, xw, vw, node_r, radius, r_build, pairs, pos_build,
                   gravity, cell, ctl, ictl, acc, periodic, walls, o_type, o_point, o_dir, o_rad, o_vel, o_force, o_mat,
                   material, mu_tab, dctl, dictl, pb_value, pb_stamp, pb_off, mode_ref, cp_x, cp_f, cp_ij, energy,
                   acc_ofor, acc_opos, acc_eps, acc_pos, acc_t, gctl):
    """Advance up to n_steps steps (obstacle velocity factor factors[it] in step it); returns the
    number done (fewer when `pairs` must grow: the caller grows it and calls again). `walls`: the
    Simulation's wall rows, obstacles 0..len(walls)-1: a servo wall's velocity is set in it and in
    o_vel each step (boundaries.walls.servo_wall_velocity, on the obstacle's force of the step)."""
    n_grains = pos.shape[0]
    for it in range(n_steps):
        step = gctl[GC_STEP]
        node_kinematics(t_nodes, t_node_off, t_nmodes, t_nodemodes, t_nodemode_off, tmpl, pos, vel, omega, rot, eps,
                        epsdot, eps_off, hist_off, xw, vw, node_r)
        worst = 0.0
        drift2 = affine_drift2(pos, pos_build, cell)
        for g in range(n_grains):
            worst = max(worst, node_r[g] - r_build[g])
        # a deformed grain's growth since the build counts as a move of its centre
        if list_is_stale(cell, math.sqrt(drift2) + max(worst, 0.0), neighbour_cutoff(radius, dctl[DC_SKIN]),
                         dctl[DC_SKIN]):
            for g in range(n_grains):
                radius[g] = node_r[g] + 2.0 * t_h[tmpl[g]]
            if not rebuild(pos, radius, cell, periodic, dctl[DC_SKIN], pairs, pos_build, gctl):
                return it
            for g in range(n_grains):
                r_build[g] = node_r[g]
            # the rebuild may have wrapped centres into the cell
            node_kinematics(t_nodes, t_node_off, t_nmodes, t_nodemodes, t_nodemode_off, tmpl, pos, vel, omega, rot,
                            eps, epsdot, eps_off, hist_off, xw, vw, node_r)
        factor = factors[it]
        gctl[GC_NCP] = deformable_forces(
            step, dt, factor, pairs, gctl[GC_NPAIRS], tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_areas,
            t_radius, t_nmodes, t_table, t_table_off, t_nodemodes, t_nodemode_off, pos, vel, omega, rot, mass,
            motion, material, eps, epsdot, eps_off, gen, hist_off, xw, vw, node_r, force, torque, gravity, cell,
            periodic, o_type, o_point, o_dir, o_rad, o_vel, o_force, o_mat, mu_tab, dctl, dictl, shear, partner,
            last_step, pb_value, pb_stamp, pb_off, mode_ref, cp_x, cp_f, cp_ij, energy, acc)
        # the cell's strain rates for this step: prescribed, or the servo's on the stress just summed
        servo(cell, ctl, ictl, acc)
        # the servo walls' velocities for this step, on their forces just summed
        for o in range(walls.shape[0]):
            if walls[o, WALL_MODE] == WALL_SERVO:
                servo_wall_velocity(walls, o, o_force[o, 0], o_force[o, 1], o_force[o, 2])
                for d in range(3):
                    o_vel[o, d] = walls[o, WALL_VEL + d]
        # the obstacles' work over the step: the grains' force on them at its start, the velocity of its move
        for o in range(o_type.shape[0]):
            energy[E_WALL_WORK] -= dt * factor * (o_force[o, 0] * o_vel[o, 0] + o_force[o, 1] * o_vel[o, 1]
                                                  + o_force[o, 2] * o_vel[o, 2])
        # window sums of the state the forces were evaluated at (records are window means)
        for o in range(o_type.shape[0]):
            for d in range(3):
                acc_ofor[o, d] += o_force[o, d]
                acc_opos[o, d] += o_point[o, d]
        for e in range(eps.shape[0]):
            acc_eps[e] += eps[e]
        for g in range(n_grains):
            for d in range(3):
                acc_pos[g, d] += pos[g, d]
        acc_t[0] += dctl[DC_TIME]
        acc_t[1] += 1.0
        advance(dt, tmpl, motion, dof, pos, vel, quat, angmom, omega, force, torque, mass, inertia, eps, epsdot, gen,
                eps_off, t_nmodes, t_mat_off, t_mlhs, t_mrhs, t_k, t_c, t_table_resp, t_tab_off, t_tab_eps,
                t_tab_force, t_tab_slope, t_beta, cell, energy)
        advance_cell(cell, dt)
        update_rotations(quat, rot, angmom, inertia, omega, motion)
        for o in range(o_type.shape[0]):
            for d in range(3):
                o_point[o, d] += dt * factor * o_vel[o, d]
        dctl[DC_TIME] += dt
        gctl[GC_STEP] = step + 1
    return n_steps


class DeformableBodies:
    """The deformable grains of a Simulation: templates, grain arrays, node histories, obstacles.

    Built by the Simulation from the grains added with `Simulation.add_deformable_grains`; the contact
    settings come from `Simulation.set_deformable_contact`."""

    TEMPLATE = ("t_phi", "t_phi_off", "t_shape", "t_origin", "t_h", "t_nodes", "t_node_off", "t_areas", "t_radius",
                "t_nmodes", "t_table", "t_table_off", "t_nodemodes", "t_nodemode_off", "t_mat_off", "t_mass", "t_k",
                "t_c", "t_table_resp", "t_tab_off", "t_tab_eps", "t_tab_force", "t_tab_slope", "t_tab_energy",
                "t_beta", "t_volume", "t_svert", "t_svert_off", "t_sface", "t_sface_off", "t_smodes")
    GRAINS = ("tmpl", "motion", "dof", "material", "pos", "vel", "quat", "rot", "angmom", "omega", "mass", "inertia",
              "force", "torque", "eps", "epsdot", "gen", "eps_off", "hist_off", "shear", "partner", "last_step",
              "node_r", "radius", "r_build", "pairs", "pos_build", "o_type", "o_point", "o_dir", "o_rad", "o_vel",
              "o_force", "o_mat", "mu_tab", "dctl", "dictl", "energy", "acc_ofor", "acc_opos", "acc_eps", "acc_pos",
              "acc_t", "gctl")
    STATE = TEMPLATE + GRAINS
    # arrays a checkpoint written before the per-pair friction table lacks (from_state fills them)
    LATER = ("o_mat", "mu_tab")

    def __init__(self, templates, batches, densities, obstacles, contact, mu_tab):
        """`obstacles`: (type, point, direction, radius, velocity, material) per obstacle; `mu_tab`
        (n_materials, n_materials): the friction of each material pair."""
        T = list(templates)
        self.templates = T
        phis = [np.ascontiguousarray(t["phi"], dtype=np.float64) for t in T]
        self.t_phi = np.concatenate([p.ravel() for p in phis])
        self.t_phi_off = _offsets([p.size for p in phis])[:-1]
        self.t_shape = np.array([p.shape for p in phis], dtype=np.int64)
        self.t_origin = np.array([t["origin"] for t in T], dtype=np.float64).reshape(-1, 3)
        self.t_h = np.array([t["spacing"] for t in T], dtype=np.float64)
        self.t_nodes = np.ascontiguousarray(np.concatenate([t["nodes"] for t in T]), dtype=np.float64)
        self.t_node_off = _offsets([len(t["nodes"]) for t in T])
        self.t_areas = np.concatenate([t["areas"] for t in T]).astype(np.float64)
        self.t_radius = np.array([np.linalg.norm(t["nodes"], axis=1).max() for t in T])
        self.t_nmodes = np.array([t["table"].shape[0] for t in T], dtype=np.int64)
        self.t_table = np.concatenate([t["table"].ravel() for t in T] + [np.zeros(0)]).astype(np.float64)
        self.t_table_off = _offsets([t["table"].size for t in T])[:-1]
        self.t_nodemodes = np.concatenate([t["node_modes"].ravel() for t in T] + [np.zeros(0)]).astype(np.float64)
        self.t_nodemode_off = _offsets([t["node_modes"].size for t in T])[:-1]
        self.t_mat_off = _offsets([t["modal_mass"].size for t in T])[:-1]
        self.t_mass = _flat([t["modal_mass"] for t in T])
        self.t_k = _flat([t["stiffness"] for t in T])
        self.t_c = _flat([t["damping"] for t in T])
        self.t_table_resp = np.array([t["tabulated"] for t in T], dtype=np.int64)
        self.t_tab_off = _offsets([len(t["tab_eps"]) for t in T])
        self.t_tab_eps = _flat([t["tab_eps"] for t in T])
        self.t_tab_force = _flat([t["tab_force"] for t in T])
        self.t_tab_slope = _flat([t["tab_slope"] for t in T])
        self.t_tab_energy = _flat([t["tab_energy"] for t in T])
        self.t_beta = np.array([t["beta"] for t in T], dtype=np.float64)
        self.t_volume = np.array([t["volume"] for t in T], dtype=np.float64)
        # the surface meshes and their modes at the vertices (deformed surfaces, also after a restart)
        self.t_svert = np.concatenate([t["surface_vertices"] for t in T]).astype(np.float64).reshape(-1, 3)
        self.t_svert_off = _offsets([len(t["surface_vertices"]) for t in T])
        self.t_sface = np.concatenate([t["surface_faces"] for t in T]).astype(np.int64).reshape(-1, 3)
        self.t_sface_off = _offsets([len(t["surface_faces"]) for t in T])
        self.t_smodes = _flat([t["surface_modes"] for t in T])
        self.tmpl = np.concatenate([np.full(len(b["pos"]), b["template"], dtype=np.int64) for b in batches])
        self.motion = np.concatenate([np.full(len(b["pos"]), b["motion"], dtype=np.int64) for b in batches])
        self.material = np.concatenate([np.full(len(b["pos"]), b["material"], dtype=np.int64) for b in batches])
        self.dof = np.ascontiguousarray(np.concatenate([b["dof"] for b in batches]).astype(np.int64))
        self.pos = np.ascontiguousarray(np.concatenate([b["pos"] for b in batches]))
        self.vel = np.ascontiguousarray(np.concatenate([b["vel"] for b in batches]))
        self.omega = np.ascontiguousarray(np.concatenate([b["omega"] for b in batches]))
        self.quat = np.ascontiguousarray(np.concatenate([b["quat"] for b in batches]))
        density = np.concatenate([np.full(len(b["pos"]), densities[b["material"]]) for b in batches])
        self.mass = self.t_volume[self.tmpl] * density
        self.inertia = np.array([T[t]["inertia"] for t in self.tmpl], dtype=np.float64).reshape(-1, 3) * density[:, None]
        G = len(self.pos)
        nm = self.t_nmodes[self.tmpl]
        self.eps_off = _offsets(nm.tolist())[:-1]
        self.eps = np.concatenate([b["eps"] for b in batches]).astype(np.float64)
        self.epsdot = np.concatenate([b["epsdot"] for b in batches]).astype(np.float64)
        self.gen = np.zeros_like(self.eps)
        self.rot = np.zeros((G, 3, 3))
        self.angmom = initial_motion(self.quat, self.inertia, self.motion, self.vel, self.omega)
        n_nodes = np.diff(self.t_node_off)[self.tmpl]
        self.hist_off = _offsets(n_nodes.tolist())[:-1]
        H = int(n_nodes.sum())
        self.shear = np.zeros((H, 3))
        self.partner = np.full(H, -1, dtype=np.int64)
        self.last_step = np.full(H, -10, dtype=np.int64)
        self.force = np.zeros((G, 3))
        self.torque = np.zeros((G, 3))
        self.node_r = np.zeros(G)
        self.radius = np.zeros(G)
        self.r_build = np.zeros(G)
        self.pairs = np.zeros((max(16, 8 * G), 2), dtype=np.int64)
        self.pos_build = np.full((G, 3), np.inf)  # a rebuild at the first step
        self.gctl = np.zeros(N_GC, dtype=np.int64)
        no = len(obstacles)
        self.o_type = np.array([o[0] for o in obstacles], dtype=np.int64).reshape(no)
        self.o_point = np.array([o[1] for o in obstacles], dtype=np.float64).reshape(no, 3)
        self.o_dir = np.array([o[2] for o in obstacles], dtype=np.float64).reshape(no, 3)
        self.o_rad = np.array([o[3] for o in obstacles], dtype=np.float64).reshape(no)
        self.o_vel = np.array([o[4] for o in obstacles], dtype=np.float64).reshape(no, 3)
        self.o_force = np.zeros((no, 3))
        self.o_mat = np.array([o[5] for o in obstacles], dtype=np.int64).reshape(no)
        self.mu_tab = np.ascontiguousarray(mu_tab, dtype=np.float64)
        self.dctl = np.zeros(N_DC)
        self.dctl[DC_KS] = contact["stiffness"]
        self.dctl[DC_CS] = contact["damping"]
        self.dctl[DC_KT] = contact["kt_ratio"]
        self.dictl = np.zeros(N_DI, dtype=np.int64)
        self.dictl[DI_ITER] = contact["inverse_iterations"]
        self.dictl[DI_NEWTON] = contact["inverse_method"] == "newton"
        self.dictl[DI_CACHE] = contact["pullback_cache"]
        self.dictl[DI_POINT] = contact["pullback"] == "point"
        self.dictl[DI_BOTH] = contact["contact"] == "both"
        self.energy = np.zeros(N_E)
        self.reset_window()
        update_rotations(self.quat, self.rot, self.angmom, self.inertia, self.omega, self.motion)
        self._scratch()

    def _scratch(self):
        """Work arrays rebuilt from the state (never part of it)."""
        H = len(self.shear)
        self.xw = np.zeros((H, 3))
        self.vw = np.zeros((H, 3))
        self.mode_ref = np.zeros((max(1, int(self.t_nmodes.max())), 3))
        self.cp_x = np.zeros((max(1000, H), 3))
        self.cp_f = np.zeros((max(1000, H), 3))
        self.cp_ij = np.zeros((max(1000, H), 2), dtype=np.int64)
        if self.dictl[DI_CACHE]:
            sizes = self.t_shape.prod(axis=1)[self.tmpl]
            self.pb_off = _offsets(sizes.tolist())[:-1]
            total = max(8, int(sizes.sum()))
        else:
            self.pb_off = np.zeros(len(self.pos), dtype=np.int64)
            total = 8
        self.pb_value = np.zeros(total)
        self.pb_stamp = np.zeros(total, dtype=np.int64)

    def reset_window(self):
        self.acc_ofor = np.zeros_like(self.o_point)
        self.acc_opos = np.zeros_like(self.o_point)
        self.acc_eps = np.zeros_like(self.eps)
        self.acc_pos = np.zeros_like(self.pos)
        self.acc_t = np.zeros(2)

    def modal_factors(self, dt):
        """The damped leapfrog's (M + ½ΔtC)⁻¹ and M − ½ΔtC per template, flat (t_mat_off); with a
        tangent damping the scalar M is kept and C applied at the current tangent in the kernel."""
        lhs, rhs = [], []
        for t in range(len(self.t_nmodes)):
            n = int(self.t_nmodes[t])
            a = int(self.t_mat_off[t])
            M = self.t_mass[a:a + n * n].reshape(n, n)
            C = self.t_c[a:a + n * n].reshape(n, n)
            lhs.append(np.linalg.inv(M + 0.5 * dt * C).ravel() if n else np.zeros(0))
            rhs.append((M - 0.5 * dt * C).ravel())
        return _flat(lhs), _flat(rhs)

    @property
    def n(self):
        return len(self.pos)

    def run(self, steps, dt, factors, gravity, cell, ctl, ictl, acc, periodic, walls):
        """Advance `steps` steps; factors[i]: the obstacles' velocity factor of step i; `walls` the
        Simulation's wall rows (run_deformable)."""
        mlhs, mrhs = self.modal_factors(dt)
        done = 0
        while done < steps:
            n = run_deformable(
                steps - done, dt, factors[done:], self.tmpl, self.motion, self.dof, self.t_phi, self.t_phi_off,
                self.t_shape, self.t_origin, self.t_h, self.t_nodes, self.t_node_off, self.t_areas, self.t_radius,
                self.t_nmodes, self.t_table, self.t_table_off, self.t_nodemodes, self.t_nodemode_off, self.t_mat_off,
                mlhs, mrhs, self.t_k, self.t_c, self.t_table_resp, self.t_tab_off, self.t_tab_eps, self.t_tab_force,
                self.t_tab_slope, self.t_beta, self.pos, self.vel, self.quat, self.rot, self.angmom, self.omega,
                self.mass, self.inertia, self.force, self.torque, self.eps, self.epsdot, self.gen, self.eps_off,
                self.hist_off, self.shear, self.partner, self.last_step, self.xw, self.vw, self.node_r, self.radius,
                self.r_build, self.pairs, self.pos_build, gravity, cell, ctl, ictl, acc, periodic, walls, self.o_type,
                self.o_point, self.o_dir, self.o_rad, self.o_vel, self.o_force, self.o_mat, self.material, self.mu_tab,
                self.dctl, self.dictl, self.pb_value, self.pb_stamp, self.pb_off, self.mode_ref, self.cp_x, self.cp_f,
                self.cp_ij, self.energy, self.acc_ofor,
                self.acc_opos, self.acc_eps, self.acc_pos, self.acc_t, self.gctl)
            done += n
            if done < steps:
                self.pairs = np.zeros((2 * int(self.gctl[GC_NEED]), 2), dtype=np.int64)

    # ---------------------------------------------------------------- diagnostics (read-only)
    def window_means(self, reset=True):
        """Means over the steps since the last reset of: time, obstacle forces and positions, ε per
        grain (list of arrays), centres; the state each step's forces were evaluated at."""
        n = self.acc_t[1]
        if n == 0:
            raise ValueError("no step since the last window reset")
        out = {"t": self.acc_t[0] / n, "obstacle_force": self.acc_ofor / n, "obstacle_position": self.acc_opos / n,
               "eps": self.acc_eps / n, "position": self.acc_pos / n}
        if reset:
            self.reset_window()
        return out

    def eps_of(self, g):
        """Modal coordinates of grain g (a view)."""
        a = int(self.eps_off[g])
        return self.eps[a:a + int(self.t_nmodes[self.tmpl[g]])]

    def kinetic_energy(self):
        """Translational + rotational kinetic energy of the dynamic grains (reference inertia)."""
        return rigid_kinetic_energy(self.mass, self.vel, self.rot, self.angmom, self.inertia, self.motion)

    def _block(self, name, t):
        n = int(self.t_nmodes[t])
        a = int(self.t_mat_off[t])
        return getattr(self, name)[a:a + n * n].reshape(n, n)

    def modal_energies(self):
        """(modal kinetic ½ ε̇ᵀMε̇, strain energy U(ε)) summed over the grains."""
        kin = 0.0
        strain = 0.0
        for g in range(self.n):
            t = int(self.tmpl[g])
            n = int(self.t_nmodes[t])
            if n == 0:
                continue
            a = int(self.eps_off[g])
            e = self.eps[a:a + n]
            v = self.epsdot[a:a + n]
            kin += 0.5 * v @ self._block("t_mass", t) @ v
            if self.t_table_resp[t]:
                lo, hi = int(self.t_tab_off[t]), int(self.t_tab_off[t + 1])
                x = abs(float(e[0]))
                te = self.t_tab_eps[lo:hi]
                i = min(int(np.searchsorted(te, x, side="right")) - 1, hi - lo - 2)
                d = x - te[i]
                strain += (self.t_tab_energy[lo + i] + self.t_tab_force[lo + i] * d
                           + 0.5 * self.t_tab_slope[lo + i] * d * d)
            else:
                strain += 0.5 * e @ self._block("t_k", t) @ e
        return float(kin), float(strain)

    def energies(self, gravity, cell_work=0.0):
        """Energy terms: kinetic (translation + rotation, velocities relative to the cell's flow),
        modal kinetic and strain, contact (normal penalty and tangential springs, at the last force
        evaluation), dissipated by contact damping, by friction (tangential work not stored in the
        springs) and by modal damping, the work of the moving obstacles, the work `cell_work` of the
        deforming periodic cell (Simulation.deformable_energies passes it), the gravity potential;
        `balance` = stored + dissipated - work, constant up to the time-integration error."""
        mk, strain = self.modal_energies()
        dyn = self.motion == MOTION_DYNAMIC
        e = self.energy
        out = {"kinetic": self.kinetic_energy(), "modal_kinetic": mk, "strain": strain,
               "contact": float(e[E_CONTACT]), "tangential_springs": float(e[E_SPRING]),
               "dissipated_contact_damping": float(e[E_CONTACT_DAMPING]),
               "dissipated_friction": float(e[E_TANGENT_WORK] - e[E_SPRING]),
               "dissipated_modal_damping": float(e[E_MODAL_DAMPING]), "wall_work": float(e[E_WALL_WORK]),
               "cell_work": float(cell_work),
               "gravity_potential": float(-np.sum(self.mass[dyn] * (self.pos[dyn] @ np.asarray(gravity))))}
        out["balance"] = (out["kinetic"] + mk + strain + out["contact"] + e[E_TANGENT_WORK]
                          + out["dissipated_contact_damping"] + out["dissipated_modal_damping"]
                          + out["gravity_potential"] - out["wall_work"] - out["cell_work"])
        return out

    def contact_points(self):
        """(points (m, 3), forces on the node's grain (m, 3)) of the last force evaluation."""
        n = min(int(self.gctl[GC_NCP]), len(self.cp_x))
        return self.cp_x[:n].copy(), self.cp_f[:n].copy()

    def contact_network(self):
        """The contacts of the last force evaluation summed per pair: i, j (j <= -2: obstacle -2 - j),
        force on i, n_nodes (bodies.levelset.pair_network); a pair touching both ways counts once."""
        return pair_network(self.cp_ij, self.cp_f, min(int(self.gctl[GC_NCP]), len(self.cp_x)))

    def surfaces(self):
        """World-frame deformed surfaces of all grains: (vertices, triangles, grain id per vertex).
        A template's surface mesh is deformed by its modes at its vertices (t_smodes)."""
        verts, tris, gid = [], [], []
        nv = 0
        for g, t in enumerate(self.tmpl):
            a, b = int(self.t_svert_off[t]), int(self.t_svert_off[t + 1])
            v = self.t_svert[a:b].copy()
            nm = int(self.t_nmodes[t])
            if nm:
                # the template's modes at its vertices follow the earlier templates' in t_smodes
                o = 3 * int(np.sum(self.t_nmodes[:t] * np.diff(self.t_svert_off)[:t]))
                v = v + np.tensordot(self.eps_of(g), self.t_smodes[o:o + 3 * nm * (b - a)].reshape(nm, b - a, 3),
                                     axes=(0, 0))
            v = v @ self.rot[g].T + self.pos[g]
            verts.append(v)
            tris.append(self.t_sface[self.t_sface_off[t]:self.t_sface_off[t + 1]] + nv)
            gid.append(np.full(len(v), g))
            nv += len(v)
        return np.concatenate(verts), np.concatenate(tris), np.concatenate(gid)

    def write_vtk(self, prefix):
        """Write `prefix`_surfaces.vtu (deformed grain surfaces) and `prefix`_contacts.vtu."""
        if self.t_svert is None:
            raise ValueError("this checkpoint holds no surface meshes (written by an older graindem): no VTK "
                             "surfaces")
        write_surfaces_and_contacts(self, prefix)

    # ---------------------------------------------------------------- state
    def state_arrays(self):
        return {"deform_" + name: np.array(getattr(self, name)) for name in self.STATE
                if getattr(self, name) is not None}

    @classmethod
    def from_state(cls, arrays):
        self = cls.__new__(cls)
        self.templates = None
        for name in cls.STATE:
            if name in SURFACE_ARRAYS and "deform_" + name not in arrays:   # older checkpoints: none
                setattr(self, name, None)
                continue
            if name in cls.LATER and "deform_" + name not in arrays:
                continue
            setattr(self, name, np.ascontiguousarray(np.array(arrays["deform_" + name])))
        if "deform_mu_tab" not in arrays:   # one friction for every pair
            m = int(self.material.max()) + 1 if self.material.size else 1
            self.mu_tab = np.full((m, m), float(self.dctl[DC_MU]))
            self.o_mat = np.zeros(len(self.o_type), dtype=np.int64)
        self._scratch()
        return self


def _offsets(sizes):
    return np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))]).astype(np.int64)


def _flat(blocks):
    return np.concatenate([np.asarray(b, dtype=np.float64).ravel() for b in blocks] + [np.zeros(0)])

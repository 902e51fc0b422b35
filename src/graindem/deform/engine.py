"""A small deformable LS-DEM engine: grains with rigid and modal degrees of freedom, node-to-level-set
contact with analytic rigid obstacles (moving planes and cylinders) and between grains, whose deformed
level sets are remapped on demand (semi-Lagrangian, the seed's choice, §3.1.3).

All grains share one `DeformableTemplate` (geometry, modes). The whole time loop runs inside one numba
function over flat arrays; Python only prepares arrays and reads the records.

Contact (penalty, area-weighted as Feldfogel et al.): a slave node at world point x with penetration
δ = −φ_master(x) > 0 gets f = a_k (k_s δ − c_s v_n) n (clamped at >= 0, no adhesion), n the master's
outward unit normal, v_n the normal relative velocity. Between two grains either both directions are
evaluated with weight ½ (each grain's nodes probe the other's deformed level set), or only the first
grain of each pair is the slave (master/slave, as the seed), with weight 1.

Generalized forces: F_εα = Σ Φ_α(X)·(Rᵀ f) with X the body-frame reference position of the material
point loaded: the node's own X for a slave; for the master, the pull-back X = x_b − u(x_b) of the
contact point x_b (body frame), consistent with the remapped level set. Torques use deformed lever
arms. Rigid dynamics: leapfrog; rotation by the explicit Euler equations in the body frame and the
exact exponential map of ω Δt. Modal dynamics: damped leapfrog (M + ½ΔtC) v⁺ = (M − ½ΔtC) v⁻ + Δt (F_ε −
F_int(ε)); F_int is linear (K ε) or a tabulated single-mode F(ε) (odd extension); C is constant or, for a
tabulated response, β dF/dε at the current ε (``tangent_damping``).
"""

from dataclasses import dataclass, field

import numpy as np

from graindem._jit import njit
from graindem.core.rotations import matrix_turned_by_world_spin
from graindem.core.grid import trilinear
from graindem.deform.modes import tabulate_modes

PLANE = 0
CYLINDER = 1


@njit
def _mode_at(table, m, ox, oy, oz, inv_h, nx, ny, nz, px, py, pz):
    """Trilinear value of mode m of the node table at body point p: (ux, uy, uz).

    Returned as scalars: an array here was a heap allocation per call, two calls per contact and mode.
    """
    gx = (px - ox) * inv_h
    gy = (py - oy) * inv_h
    gz = (pz - oz) * inv_h
    i = min(max(int(np.floor(gx)), 0), nx - 2)
    j = min(max(int(np.floor(gy)), 0), ny - 2)
    k = min(max(int(np.floor(gz)), 0), nz - 2)
    tx = gx - i
    ty = gy - j
    tz = gz - k
    ux = 0.0
    uy = 0.0
    uz = 0.0
    for a in range(2):
        wa = tx if a == 1 else 1.0 - tx
        for b in range(2):
            wb = ty if b == 1 else 1.0 - ty
            for d in range(2):
                wd = tz if d == 1 else 1.0 - tz
                w = wa * wb * wd
                ux += w * table[m, i + a, j + b, k + d, 0]
                uy += w * table[m, i + a, j + b, k + d, 1]
                uz += w * table[m, i + a, j + b, k + d, 2]
    return ux, uy, uz


# The small per-query helpers below are inlined into their callers at numba's level: called as
# functions, each passes its arrays as multi-field structs, and the point-wise query spent a quarter
# of its time on that (measured 263 → 195 ns per query; 27-sphere step 2.0 → 1.5× the rigid one).
@njit(inline="always")
def displacement_at(table, eps, ox, oy, oz, inv_h, px, py, pz):
    """u(p) = Σ_m ε_m Φ_m(p), Φ trilinear in the node table (n_modes, nx, ny, nz, 3)."""
    n_modes, nx, ny, nz, _ = table.shape
    gx = (px - ox) * inv_h
    gy = (py - oy) * inv_h
    gz = (pz - oz) * inv_h
    i = min(max(int(np.floor(gx)), 0), nx - 2)
    j = min(max(int(np.floor(gy)), 0), ny - 2)
    k = min(max(int(np.floor(gz)), 0), nz - 2)
    tx = gx - i
    ty = gy - j
    tz = gz - k
    ux = 0.0
    uy = 0.0
    uz = 0.0
    for a in range(2):
        wa = tx if a == 1 else 1.0 - tx
        for b in range(2):
            wb = ty if b == 1 else 1.0 - ty
            for d in range(2):
                w = wa * wb * (tz if d == 1 else 1.0 - tz)
                for m in range(n_modes):
                    we = w * eps[m]
                    ux += we * table[m, i + a, j + b, k + d, 0]
                    uy += we * table[m, i + a, j + b, k + d, 1]
                    uz += we * table[m, i + a, j + b, k + d, 2]
    return ux, uy, uz


@njit(inline="always")
def displacement_and_gradient(table, eps, ox, oy, oz, inv_h, px, py, pz):
    """u(p) and its gradient ∂u_i/∂x_j of the trilinear mode field, from the same 8 corner loads.

    Returns (ux, uy, uz, J00, J01, J02, J10, J11, J12, J20, J21, J22), the gradient of p's own cell.
    """
    n_modes, nx, ny, nz, _ = table.shape
    gx = (px - ox) * inv_h
    gy = (py - oy) * inv_h
    gz = (pz - oz) * inv_h
    i = min(max(int(np.floor(gx)), 0), nx - 2)
    j = min(max(int(np.floor(gy)), 0), ny - 2)
    k = min(max(int(np.floor(gz)), 0), nz - 2)
    tx = gx - i
    ty = gy - j
    tz = gz - k
    ux = 0.0
    uy = 0.0
    uz = 0.0
    j00 = 0.0
    j01 = 0.0
    j02 = 0.0
    j10 = 0.0
    j11 = 0.0
    j12 = 0.0
    j20 = 0.0
    j21 = 0.0
    j22 = 0.0
    for a in range(2):
        wa = tx if a == 1 else 1.0 - tx
        da = inv_h if a == 1 else -inv_h
        for b in range(2):
            wb = ty if b == 1 else 1.0 - ty
            db = inv_h if b == 1 else -inv_h
            for d in range(2):
                wd = tz if d == 1 else 1.0 - tz
                dd = inv_h if d == 1 else -inv_h
                w = wa * wb * wd
                w0 = da * wb * wd
                w1 = wa * db * wd
                w2 = wa * wb * dd
                for m in range(n_modes):
                    e = eps[m]
                    vx = e * table[m, i + a, j + b, k + d, 0]
                    vy = e * table[m, i + a, j + b, k + d, 1]
                    vz = e * table[m, i + a, j + b, k + d, 2]
                    ux += w * vx
                    uy += w * vy
                    uz += w * vz
                    j00 += w0 * vx
                    j01 += w1 * vx
                    j02 += w2 * vx
                    j10 += w0 * vy
                    j11 += w1 * vy
                    j12 += w2 * vy
                    j20 += w0 * vz
                    j21 += w1 * vz
                    j22 += w2 * vz
    return ux, uy, uz, j00, j01, j02, j10, j11, j12, j20, j21, j22


@njit(inline="always")
def _deformation_adjugate(a00, a01, a02, a10, a11, a12, a20, a21, a22):
    """Adjugate and determinant of F = I + ∇u from the gradient entries a_ij: F^{-1} = adj(F) / det F,
    by cofactors (3 × 3, no pivoting needed while det > 0, i.e. no inverted element)."""
    a00 += 1.0
    a11 += 1.0
    a22 += 1.0
    c00 = a11 * a22 - a12 * a21
    c01 = a02 * a21 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c10 = a12 * a20 - a10 * a22
    c11 = a00 * a22 - a02 * a20
    c12 = a02 * a10 - a00 * a12
    c20 = a10 * a21 - a11 * a20
    c21 = a01 * a20 - a00 * a21
    c22 = a00 * a11 - a01 * a10
    det = a00 * c00 + a01 * c10 + a02 * c20
    return c00, c01, c02, c10, c11, c12, c20, c21, c22, det


@njit(inline="always")
def inverse_map(table, eps, ox, oy, oz, inv_h, cx, cy, cz, u0x, u0y, u0z, n_iter, newton):
    """Reference point X of the deformed point c, i.e. X + u(X) = c, starting from the seed's
    first-order pull-back X0 = c − u0 (u0 = u(c)).

    ``newton`` False: n_iter fixed-point iterations X ← c − u(X) (linear, rate |∇u|); True: n_iter
    Newton steps with the Jacobian I + ∇u of the trilinear cell the iterate is in (quadratic within a
    cell; across a cell face ∇u jumps, so a step can land slightly short: measured at ε = 0.16 of the
    FEM mode, 1 / 2 / 3 steps leave 3e-3 / 1e-7 / 1e-14 voxel, 4 fixed-point iterations 2e-3).
    """
    if not newton:
        ux = u0x
        uy = u0y
        uz = u0z
        for _ in range(n_iter):
            ux, uy, uz = displacement_at(table, eps, ox, oy, oz, inv_h, cx - ux, cy - uy, cz - uz)
        return cx - ux, cy - uy, cz - uz
    xx = cx - u0x
    xy = cy - u0y
    xz = cz - u0z
    for _ in range(n_iter):
        ux, uy, uz, a00, a01, a02, a10, a11, a12, a20, a21, a22 = displacement_and_gradient(
            table, eps, ox, oy, oz, inv_h, xx, xy, xz)
        rx = xx + ux - cx
        ry = xy + uy - cy
        rz = xz + uz - cz
        # (I + ∇u) δ = r by the adjugate
        c00, c01, c02, c10, c11, c12, c20, c21, c22, det = _deformation_adjugate(
            a00, a01, a02, a10, a11, a12, a20, a21, a22)
        if not det > 1e-12:
            break
        inv_det = 1.0 / det
        xx -= (c00 * rx + c01 * ry + c02 * rz) * inv_det
        xy -= (c10 * rx + c11 * ry + c12 * rz) * inv_det
        xz -= (c20 * rx + c21 * ry + c22 * rz) * inv_det
    return xx, xy, xz


@njit
def pullback_phi(phi0, table, eps, ox, oy, oz, h, px, py, pz, n_iter, newton, cache, stamp, now):
    """Semi-Lagrangian φ and ∇φ (body frame) of the deformed grain at body point p.

    Each corner x_c of p's cell is pulled back to X with X + u(X) = x_c (`inverse_map`; n_iter = 0 is
    the seed's eq. 47, X = x_c − u(x_c)). A corner's value depends on the node and ε only, so with
    ``now`` > 0 it is computed once per step (``stamp`` holds the step it was computed in) and read
    back from ``cache`` by every later query of the same step: still on demand, no grid-wide update.
    """
    nx, ny, nz = phi0.shape
    n_modes = table.shape[0]
    inv_h = 1.0 / h
    gx = (px - ox) * inv_h
    gy = (py - oy) * inv_h
    gz = (pz - oz) * inv_h
    i = min(max(int(np.floor(gx)), 0), nx - 2)
    j = min(max(int(np.floor(gy)), 0), ny - 2)
    k = min(max(int(np.floor(gz)), 0), nz - 2)
    tx = gx - i
    ty = gy - j
    tz = gz - k
    # the corner loop is written out here, not delegated to a per-corner function: numba passes every
    # array argument as a multi-field struct, and eight such calls per query cost several times the
    # first-order pull-back itself (measured 1.26 µs against 0.15 µs per query)
    value = 0.0
    dx = 0.0
    dy = 0.0
    dz = 0.0
    for corner in range(8):
        a = corner >> 2
        b = (corner >> 1) & 1
        d = corner & 1
        ci = i + a
        cj = j + b
        ck = k + d
        if now > 0 and stamp[ci, cj, ck] == now:
            v = cache[ci, cj, ck]
        else:
            ux = 0.0
            uy = 0.0
            uz = 0.0
            for m in range(n_modes):
                e = eps[m]
                ux += e * table[m, ci, cj, ck, 0]
                uy += e * table[m, ci, cj, ck, 1]
                uz += e * table[m, ci, cj, ck, 2]
            cx = ox + h * ci
            cy = oy + h * cj
            cz = oz + h * ck
            qx, qy, qz = inverse_map(table, eps, ox, oy, oz, inv_h, cx, cy, cz, ux, uy, uz, n_iter, newton)
            v = trilinear(phi0.reshape(-1), 0, phi0.shape[0], phi0.shape[1], phi0.shape[2], ox, oy, oz, h, qx, qy, qz)[0]
            if now > 0:
                cache[ci, cj, ck] = v
                stamp[ci, cj, ck] = now
        wx = tx if a == 1 else 1.0 - tx
        wy = ty if b == 1 else 1.0 - ty
        wz = tz if d == 1 else 1.0 - tz
        sx = inv_h if a == 1 else -inv_h
        sy = inv_h if b == 1 else -inv_h
        sz = inv_h if d == 1 else -inv_h
        value += wx * wy * wz * v
        dx += sx * wy * wz * v
        dy += wx * sy * wz * v
        dz += wx * wy * sz * v
    return value, dx, dy, dz


@njit(inline="always")
def pointwise_phi(phi0, table, eps, ox, oy, oz, h, px, py, pz, n_iter, newton):
    """Semi-Lagrangian φ at body point p pulled back as a point: X + u(X) = p (`inverse_map` from the
    seed's X0 = p − u(p)), φ(p) = φ0(X). One inversion and one φ0 interpolation per query where the
    corner-wise remap (`pullback_phi`) needs eight of each, and no interpolation of remapped values
    across p's cell: with the exact inverse this is φ0∘X itself.

    Returns (φ, ∂φ0/∂X at X, X): the gradient is in the reference frame; `pointwise_gradient` maps it
    to ∇φ(p) only where a caller needs it (in the engine: only for nodes found in contact).
    """
    inv_h = 1.0 / h
    ux, uy, uz = displacement_at(table, eps, ox, oy, oz, inv_h, px, py, pz)
    qx, qy, qz = inverse_map(table, eps, ox, oy, oz, inv_h, px, py, pz, ux, uy, uz, n_iter, newton)
    value, gx, gy, gz = _plain_phi(phi0, ox, oy, oz, h, qx, qy, qz)
    return value, gx, gy, gz, qx, qy, qz


@njit(inline="always")
def pointwise_gradient(table, eps, ox, oy, oz, h, qx, qy, qz, gx, gy, gz):
    """∇φ(p) = (I + ∇u(X))^{-T} ∇φ0(X) (chain rule of φ = φ0∘X with X' = (I + ∇u)^{-1}), with ∇u of the
    trilinear cell X lies in. Returns the zero vector where I + ∇u is singular or inverted."""
    _, _, _, a00, a01, a02, a10, a11, a12, a20, a21, a22 = displacement_and_gradient(
        table, eps, ox, oy, oz, 1.0 / h, qx, qy, qz)
    # F^{-T} g = adj(F)^T g / det F
    c00, c01, c02, c10, c11, c12, c20, c21, c22, det = _deformation_adjugate(
        a00, a01, a02, a10, a11, a12, a20, a21, a22)
    if not det > 1e-12:
        return 0.0, 0.0, 0.0
    inv_det = 1.0 / det
    return ((c00 * gx + c10 * gy + c20 * gz) * inv_det, (c01 * gx + c11 * gy + c21 * gz) * inv_det,
            (c02 * gx + c12 * gy + c22 * gz) * inv_det)


@njit(inline="always")
def _plain_phi(phi0, ox, oy, oz, h, px, py, pz):
    """Rigid grain: trilinear φ0 and its gradient at body point p."""
    value, dx, dy, dz, _ = trilinear(phi0.reshape(-1), 0, phi0.shape[0], phi0.shape[1], phi0.shape[2],
                                     ox, oy, oz, h, px, py, pz)
    return value, dx, dy, dz


@njit
def _apply(g, f, lx, ly, lz, force, torque):
    force[g, 0] += f[0]
    force[g, 1] += f[1]
    force[g, 2] += f[2]
    torque[g, 0] += ly * f[2] - lz * f[1]
    torque[g, 1] += lz * f[0] - lx * f[2]
    torque[g, 2] += lx * f[1] - ly * f[0]


@njit
def run_kernel(n_steps, dt, record_every,
               pos, vel, rot, omega, eps, epsdot, mass, inertia, fixed, free_dof,
               phi0, origin, h, table, nodes_ref, node_modes, areas, bound_radius,
               m_lhs_inv, m_rhs, k_lin, tab_eps, tab_force, tab_slope, use_table,
               ks, cs, otype, opoint, odir, orad, ovel, pairs, n_ways, ramp_time, t0, deformable,
               n_iter, newton, use_cache, pointwise, tangent_damping, wall_factor,
               rec_t, rec_ofor, rec_eps, rec_opos, rec_pos):
    n_grains = pos.shape[0]
    n_nodes = nodes_ref.shape[0]
    # a rigid run (the cost baseline) is the same loop with no modes and plain φ0 queries
    n_modes = table.shape[0] if deformable else 0
    n_obst = otype.shape[0]
    nx, ny, nz = phi0.shape
    inv_h = 1.0 / h
    force = np.zeros((n_grains, 3))
    torque = np.zeros((n_grains, 3))
    gen = np.zeros((n_grains, n_modes))
    ofor = np.zeros((n_obst, 3))
    xw = np.zeros((n_grains, n_nodes, 3))     # deformed node positions, world
    vw = np.zeros((n_grains, n_nodes, 3))     # node velocities, world
    fb = np.zeros(3)
    acc_ofor = np.zeros((n_obst, 3))
    acc_opos = np.zeros((n_obst, 3))
    acc_eps = np.zeros((n_grains, table.shape[0]))
    acc_pos = np.zeros((n_grains, 3))
    acc_t = 0.0
    n_acc = 0
    n_rec = 0
    # Φ_m at the master's material point of the current contact: read for its velocity and again for
    # the generalized force
    mode_at_ref = np.zeros((max(n_modes, 1), 3))
    # per-grain lazy cache of the pulled-back corner values (see pullback_phi); stamps are step + 1
    if use_cache and deformable:
        pb_value = np.empty((n_grains, nx, ny, nz))
        pb_stamp = np.zeros((n_grains, nx, ny, nz), dtype=np.int64)
    else:
        pb_value = np.empty((1, 2, 2, 2))
        pb_stamp = np.zeros((1, 2, 2, 2), dtype=np.int64)
    for step in range(n_steps):
        # obstacles: constant velocity, or the smooth profile v (1 − cos 2πt/T) (same mean speed, zero
        # velocity and acceleration-free start and end) that avoids the impact of a sudden start, or a
        # prescribed travel. The contact damping sees this step's actual velocity factor · ovel (it saw
        # the nominal ovel before: a spurious a c_s (v − v_actual) in every wall contact, large while
        # the ramp or a schedule moves the walls much slower than ovel)
        factor = 1.0
        if wall_factor.shape[0] > 0:
            # a prescribed travel s(t) (DeformableScene's ``motion``): this step's share of it
            factor = wall_factor[step]
        elif ramp_time > 0.0:
            tm = t0 + (step + 0.5) * dt
            factor = 1.0 - np.cos(2.0 * np.pi * tm / ramp_time) if tm < ramp_time else 0.0
        # ---- node kinematics
        node_radius = 0.0
        for g in range(n_grains):
            for k in range(n_nodes):
                bx = nodes_ref[k, 0]
                by = nodes_ref[k, 1]
                bz = nodes_ref[k, 2]
                vx = 0.0
                vy = 0.0
                vz = 0.0
                for m in range(n_modes):
                    bx += eps[g, m] * node_modes[m, k, 0]
                    by += eps[g, m] * node_modes[m, k, 1]
                    bz += eps[g, m] * node_modes[m, k, 2]
                    vx += epsdot[g, m] * node_modes[m, k, 0]
                    vy += epsdot[g, m] * node_modes[m, k, 1]
                    vz += epsdot[g, m] * node_modes[m, k, 2]
                lx = rot[g, 0, 0] * bx + rot[g, 0, 1] * by + rot[g, 0, 2] * bz
                ly = rot[g, 1, 0] * bx + rot[g, 1, 1] * by + rot[g, 1, 2] * bz
                lz = rot[g, 2, 0] * bx + rot[g, 2, 1] * by + rot[g, 2, 2] * bz
                xw[g, k, 0] = pos[g, 0] + lx
                xw[g, k, 1] = pos[g, 1] + ly
                xw[g, k, 2] = pos[g, 2] + lz
                node_radius = max(node_radius, lx * lx + ly * ly + lz * lz)
                vw[g, k, 0] = vel[g, 0] + omega[g, 1] * lz - omega[g, 2] * ly + (
                    rot[g, 0, 0] * vx + rot[g, 0, 1] * vy + rot[g, 0, 2] * vz)
                vw[g, k, 1] = vel[g, 1] + omega[g, 2] * lx - omega[g, 0] * lz + (
                    rot[g, 1, 0] * vx + rot[g, 1, 1] * vy + rot[g, 1, 2] * vz)
                vw[g, k, 2] = vel[g, 2] + omega[g, 0] * ly - omega[g, 1] * lx + (
                    rot[g, 2, 0] * vx + rot[g, 2, 1] * vy + rot[g, 2, 2] * vz)
        node_radius = np.sqrt(node_radius)
        force[:, :] = 0.0
        torque[:, :] = 0.0
        gen[:, :] = 0.0
        ofor[:, :] = 0.0
        # ---- grain nodes against analytic obstacles
        for g in range(n_grains):
            for o in range(n_obst):
                # no node of a grain whose centre is further than its bounding radius can touch
                cx = pos[g, 0] - opoint[o, 0]
                cy = pos[g, 1] - opoint[o, 1]
                cz = pos[g, 2] - opoint[o, 2]
                if otype[o] == PLANE:
                    clear = cx * odir[o, 0] + cy * odir[o, 1] + cz * odir[o, 2]
                else:
                    along = cx * odir[o, 0] + cy * odir[o, 1] + cz * odir[o, 2]
                    clear = np.sqrt((cx - along * odir[o, 0]) ** 2 + (cy - along * odir[o, 1]) ** 2
                                    + (cz - along * odir[o, 2]) ** 2) - orad[o]
                if clear > node_radius:
                    continue
                for k in range(n_nodes):
                    rx = xw[g, k, 0] - opoint[o, 0]
                    ry = xw[g, k, 1] - opoint[o, 1]
                    rz = xw[g, k, 2] - opoint[o, 2]
                    if otype[o] == PLANE:
                        nxo = odir[o, 0]
                        nyo = odir[o, 1]
                        nzo = odir[o, 2]
                        phi = rx * nxo + ry * nyo + rz * nzo
                    else:
                        along = rx * odir[o, 0] + ry * odir[o, 1] + rz * odir[o, 2]
                        px = rx - along * odir[o, 0]
                        py = ry - along * odir[o, 1]
                        pz = rz - along * odir[o, 2]
                        dist = np.sqrt(px * px + py * py + pz * pz)
                        phi = dist - orad[o]
                        if phi >= 0.0 or dist < 1e-300:
                            continue
                        nxo = px / dist
                        nyo = py / dist
                        nzo = pz / dist
                    if phi >= 0.0:
                        continue
                    vn = ((vw[g, k, 0] - factor * ovel[o, 0]) * nxo + (vw[g, k, 1] - factor * ovel[o, 1]) * nyo
                          + (vw[g, k, 2] - factor * ovel[o, 2]) * nzo)
                    mag = areas[k] * (ks * (-phi) - cs * vn)
                    if mag <= 0.0:
                        continue
                    fb[0] = mag * nxo
                    fb[1] = mag * nyo
                    fb[2] = mag * nzo
                    _apply(g, fb, xw[g, k, 0] - pos[g, 0], xw[g, k, 1] - pos[g, 1], xw[g, k, 2] - pos[g, 2],
                           force, torque)
                    ofor[o, 0] -= fb[0]
                    ofor[o, 1] -= fb[1]
                    ofor[o, 2] -= fb[2]
                    # body-frame force for the generalized force
                    f0 = rot[g, 0, 0] * fb[0] + rot[g, 1, 0] * fb[1] + rot[g, 2, 0] * fb[2]
                    f1 = rot[g, 0, 1] * fb[0] + rot[g, 1, 1] * fb[1] + rot[g, 2, 1] * fb[2]
                    f2 = rot[g, 0, 2] * fb[0] + rot[g, 1, 2] * fb[1] + rot[g, 2, 2] * fb[2]
                    for m in range(n_modes):
                        gen[g, m] += node_modes[m, k, 0] * f0 + node_modes[m, k, 1] * f1 + node_modes[m, k, 2] * f2
        # ---- grain against grain: nodes of s in the deformed level set of m, both ways, weight ½
        pair_weight = 1.0 / n_ways
        for q in range(pairs.shape[0]):
            for way in range(n_ways):
                s = pairs[q, way]
                mg = pairs[q, 1 - way]
                # a slave node further from the master's centre than the master's furthest deformed node
                # (plus a cell for the surface between nodes) cannot be inside it
                reach = min(bound_radius + 2.0 * h, node_radius + h)
                for k in range(n_nodes):
                    dx = xw[s, k, 0] - pos[mg, 0]
                    dy = xw[s, k, 1] - pos[mg, 1]
                    dz = xw[s, k, 2] - pos[mg, 2]
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
                    if deformable and pointwise:
                        phi, gx, gy, gz, refx, refy, refz = pointwise_phi(
                            phi0, table, eps[mg], origin[0], origin[1], origin[2], h, px, py, pz, n_iter, newton)
                        if phi >= 0.0:
                            continue
                        # the chain rule only for nodes in contact
                        gx, gy, gz = pointwise_gradient(table, eps[mg], origin[0], origin[1], origin[2], h,
                                                        refx, refy, refz, gx, gy, gz)
                        have_ref = True
                    elif deformable:
                        if use_cache:
                            phi, gx, gy, gz = pullback_phi(phi0, table, eps[mg], origin[0], origin[1],
                                                            origin[2], h, px, py, pz, n_iter, newton,
                                                            pb_value[mg], pb_stamp[mg], step + 1)
                        else:
                            phi, gx, gy, gz = pullback_phi(phi0, table, eps[mg], origin[0], origin[1],
                                                            origin[2], h, px, py, pz, n_iter, newton,
                                                            pb_value[0], pb_stamp[0], 0)
                    else:
                        phi, gx, gy, gz = _plain_phi(phi0, origin[0], origin[1], origin[2], h, px, py, pz)
                    if phi >= 0.0:
                        continue
                    gn = np.sqrt(gx * gx + gy * gy + gz * gz)
                    if gn < 1e-300:
                        continue
                    gx /= gn
                    gy /= gn
                    gz /= gn
                    # outward normal of the master in the world frame
                    nxo = rot[mg, 0, 0] * gx + rot[mg, 0, 1] * gy + rot[mg, 0, 2] * gz
                    nyo = rot[mg, 1, 0] * gx + rot[mg, 1, 1] * gy + rot[mg, 1, 2] * gz
                    nzo = rot[mg, 2, 0] * gx + rot[mg, 2, 1] * gy + rot[mg, 2, 2] * gz
                    # master material point: pull-back of the contact point (the point-wise remap has it
                    # already), its modal velocity
                    if n_modes > 0 and not have_ref:
                        ubx, uby, ubz = displacement_at(table, eps[mg], origin[0], origin[1], origin[2], inv_h,
                                                        px, py, pz)
                        refx, refy, refz = inverse_map(table, eps[mg], origin[0], origin[1], origin[2], inv_h,
                                                       px, py, pz, ubx, uby, ubz, n_iter, newton)
                    mvx = 0.0
                    mvy = 0.0
                    mvz = 0.0
                    for m in range(n_modes):
                        umx, umy, umz = _mode_at(table, m, origin[0], origin[1], origin[2], inv_h, nx, ny, nz,
                                                 refx, refy, refz)
                        mode_at_ref[m, 0] = umx
                        mode_at_ref[m, 1] = umy
                        mode_at_ref[m, 2] = umz
                        mvx += epsdot[mg, m] * umx
                        mvy += epsdot[mg, m] * umy
                        mvz += epsdot[mg, m] * umz
                    vmx = vel[mg, 0] + omega[mg, 1] * dz - omega[mg, 2] * dy + (
                        rot[mg, 0, 0] * mvx + rot[mg, 0, 1] * mvy + rot[mg, 0, 2] * mvz)
                    vmy = vel[mg, 1] + omega[mg, 2] * dx - omega[mg, 0] * dz + (
                        rot[mg, 1, 0] * mvx + rot[mg, 1, 1] * mvy + rot[mg, 1, 2] * mvz)
                    vmz = vel[mg, 2] + omega[mg, 0] * dy - omega[mg, 1] * dx + (
                        rot[mg, 2, 0] * mvx + rot[mg, 2, 1] * mvy + rot[mg, 2, 2] * mvz)
                    vn = (vw[s, k, 0] - vmx) * nxo + (vw[s, k, 1] - vmy) * nyo + (vw[s, k, 2] - vmz) * nzo
                    mag = pair_weight * areas[k] * (ks * (-phi) - cs * vn)
                    if mag <= 0.0:
                        continue
                    fb[0] = mag * nxo
                    fb[1] = mag * nyo
                    fb[2] = mag * nzo
                    _apply(s, fb, xw[s, k, 0] - pos[s, 0], xw[s, k, 1] - pos[s, 1], xw[s, k, 2] - pos[s, 2],
                           force, torque)
                    f0 = rot[s, 0, 0] * fb[0] + rot[s, 1, 0] * fb[1] + rot[s, 2, 0] * fb[2]
                    f1 = rot[s, 0, 1] * fb[0] + rot[s, 1, 1] * fb[1] + rot[s, 2, 1] * fb[2]
                    f2 = rot[s, 0, 2] * fb[0] + rot[s, 1, 2] * fb[1] + rot[s, 2, 2] * fb[2]
                    for m in range(n_modes):
                        gen[s, m] += node_modes[m, k, 0] * f0 + node_modes[m, k, 1] * f1 + node_modes[m, k, 2] * f2
                    fb[0] = -fb[0]
                    fb[1] = -fb[1]
                    fb[2] = -fb[2]
                    _apply(mg, fb, dx, dy, dz, force, torque)
                    f0 = rot[mg, 0, 0] * fb[0] + rot[mg, 1, 0] * fb[1] + rot[mg, 2, 0] * fb[2]
                    f1 = rot[mg, 0, 1] * fb[0] + rot[mg, 1, 1] * fb[1] + rot[mg, 2, 1] * fb[2]
                    f2 = rot[mg, 0, 2] * fb[0] + rot[mg, 1, 2] * fb[1] + rot[mg, 2, 2] * fb[2]
                    for m in range(n_modes):
                        gen[mg, m] += mode_at_ref[m, 0] * f0 + mode_at_ref[m, 1] * f1 + mode_at_ref[m, 2] * f2
        # ---- record: everything averaged over the steps since the previous record (a low-pass that
        # removes contact-scale ringing from a quasi-static reading, with forces, ε and positions taken
        # over the same window so that they stay mutually consistent)
        for o in range(n_obst):
            for c in range(3):
                acc_ofor[o, c] += ofor[o, c]
                acc_opos[o, c] += opoint[o, c]
        for g in range(n_grains):
            for m in range(n_modes):
                acc_eps[g, m] += eps[g, m]
            for c in range(3):
                acc_pos[g, c] += pos[g, c]
        acc_t += t0 + step * dt
        n_acc += 1
        if step % record_every == 0 and n_rec < rec_t.shape[0]:
            rec_t[n_rec] = acc_t / n_acc
            for o in range(n_obst):
                for c in range(3):
                    rec_ofor[n_rec, o, c] = acc_ofor[o, c] / n_acc
                    rec_opos[n_rec, o, c] = acc_opos[o, c] / n_acc
            for g in range(n_grains):
                for m in range(n_modes):
                    rec_eps[n_rec, g, m] = acc_eps[g, m] / n_acc
                for c in range(3):
                    rec_pos[n_rec, g, c] = acc_pos[g, c] / n_acc
            acc_ofor[:, :] = 0.0
            acc_opos[:, :] = 0.0
            acc_eps[:, :] = 0.0
            acc_pos[:, :] = 0.0
            acc_t = 0.0
            n_acc = 0
            n_rec += 1
        # ---- integrate
        for g in range(n_grains):
            # modal: internal force, damped leapfrog
            fint = np.zeros(n_modes)
            if use_table and n_modes > 0:
                e = eps[g, 0]
                a = abs(e)
                idx = np.searchsorted(tab_eps, a, side="right") - 1
                if idx > tab_slope.shape[0] - 1:
                    idx = tab_slope.shape[0] - 1
                val = tab_force[idx] + tab_slope[idx] * (a - tab_eps[idx])
                fint[0] = val if e >= 0 else -val
                if tangent_damping > 0.0:
                    # C = β K_t(ε): the scalar damped leapfrog with the current tangent (m_rhs holds M)
                    cm = tangent_damping * tab_slope[idx]
                    mm = m_rhs[0, 0]
                    epsdot[g, 0] = (((mm - 0.5 * dt * cm) * epsdot[g, 0] + dt * (gen[g, 0] - fint[0]))
                                    / (mm + 0.5 * dt * cm))
                    eps[g, 0] += dt * epsdot[g, 0]
            else:
                for a in range(n_modes):
                    for b in range(n_modes):
                        fint[a] += k_lin[a, b] * eps[g, b]
            if not (use_table and n_modes > 0 and tangent_damping > 0.0):
                rhs = np.zeros(n_modes)
                for a in range(n_modes):
                    for b in range(n_modes):
                        rhs[a] += m_rhs[a, b] * epsdot[g, b]
                    rhs[a] += dt * (gen[g, a] - fint[a])
                for a in range(n_modes):
                    v = 0.0
                    for b in range(n_modes):
                        v += m_lhs_inv[a, b] * rhs[b]
                    epsdot[g, a] = v
                for a in range(n_modes):
                    eps[g, a] += dt * epsdot[g, a]
            if fixed[g]:
                continue
            for c in range(3):
                if free_dof[g, c]:
                    vel[g, c] += dt * force[g, c] / mass[g]
                pos[g, c] += dt * vel[g, c]
            # rotation: Euler's equations in the body frame
            tb = np.zeros(3)
            wb = np.zeros(3)
            for a in range(3):
                for c in range(3):
                    tb[a] += rot[g, c, a] * torque[g, c]
                    wb[a] += rot[g, c, a] * omega[g, c]
            iw0 = inertia[g, 0] * wb[0]
            iw1 = inertia[g, 1] * wb[1]
            iw2 = inertia[g, 2] * wb[2]
            wb[0] += dt * (tb[0] - (wb[1] * iw2 - wb[2] * iw1)) / inertia[g, 0]
            wb[1] += dt * (tb[1] - (wb[2] * iw0 - wb[0] * iw2)) / inertia[g, 1]
            wb[2] += dt * (tb[2] - (wb[0] * iw1 - wb[1] * iw0)) / inertia[g, 2]
            wn = np.zeros(3)
            for a in range(3):
                for c in range(3):
                    wn[a] += rot[g, a, c] * wb[c]
            for a in range(3):
                if not free_dof[g, 3 + a]:
                    wn[a] = 0.0
            omega[g, 0] = wn[0]
            omega[g, 1] = wn[1]
            omega[g, 2] = wn[2]
            rot[g] = matrix_turned_by_world_spin(rot[g].copy(), wn[0], wn[1], wn[2], dt)
        for o in range(n_obst):
            for c in range(3):
                opoint[o, c] += dt * factor * ovel[o, c]
    return n_rec


@dataclass
class Obstacle:
    """An analytic rigid body moving at constant velocity: a plane (point, inward normal) or an
    infinite cylinder (axis point, axis direction, radius); grains must stay on φ > 0."""

    kind: int
    point: np.ndarray
    direction: np.ndarray
    radius: float = 0.0
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @classmethod
    def plane(cls, point, normal, velocity=(0, 0, 0)):
        n = np.asarray(normal, float)
        if not np.linalg.norm(n) > 0:
            raise ValueError("normal must be a non-zero vector")
        return cls(PLANE, np.asarray(point, float), n / np.linalg.norm(n), 0.0, np.asarray(velocity, float))

    @classmethod
    def cylinder(cls, point, axis, radius, velocity=(0, 0, 0)):
        a = np.asarray(axis, float)
        if not np.linalg.norm(a) > 0:
            raise ValueError("axis must be a non-zero vector")
        if not radius > 0:
            raise ValueError(f"radius must be > 0, got {radius}")
        return cls(CYLINDER, np.asarray(point, float), a / np.linalg.norm(a), float(radius),
                   np.asarray(velocity, float))


class DeformableScene:
    """Grains of one template + analytic obstacles + candidate grain pairs; `run` advances in numba.

    ``modal_mass``, ``modal_damping`` (n_modes × n_modes) and ``response`` (a `LinearResponse` or a
    single-mode `TabulatedForce`) are per grain (shared). ``density`` sets the rigid mass and inertia.

    Pull-back of a master's level set (grain–grain contacts): ``inverse_iterations`` refinements of
    the seed's first-order X = x − u(x), by fixed-point iteration (``inverse_method="fixed_point"``) or
    Newton steps with the trilinear field's Jacobian (``"newton"``); ``pullback_cache`` computes each
    grid node's pulled-back value once per step and grain (lazily, on first use) and reuses it.
    ``pullback="point"`` pulls the query point itself back instead of its cell's 8 corners
    (`pointwise_phi`; one inversion per query, the normal by the chain rule, no cache).
    Obstacle motion: constant velocity, the smooth ramp over ``ramp_time``, or ``motion``: a callable
    s(t) (vectorized over t, time units) giving each obstacle's displacement as velocity × s(t).
    """

    def __init__(self, template, positions, modal_mass, response, modal_damping=None, density=1.0,
                 contact_stiffness=1e5, contact_damping=0.0, obstacles=(), pairs=(), fixed=None,
                 both_ways=True, ramp_time=0.0, deformable=True, inverse_iterations=0, free_dofs=None,
                 tangent_damping=0.0, inverse_method="fixed_point", pullback_cache=False, motion=None,
                 pullback="corners"):
        from graindem.deform.response import LinearResponse, TabulatedForce

        self.template = template
        n_modes = len(template.modes)
        # a copy: run() moves the grains in place and must not move the caller's array
        self.pos = np.array(np.atleast_2d(np.asarray(positions, float)), order="C")
        n = self.pos.shape[0]
        if not contact_stiffness > 0:
            raise ValueError(f"contact_stiffness must be > 0, got {contact_stiffness}")
        if contact_damping < 0:
            raise ValueError(f"contact_damping must be >= 0, got {contact_damping}")
        if not density > 0:
            raise ValueError(f"density must be > 0, got {density}")
        self.vel = np.zeros((n, 3))
        self.rot = np.ascontiguousarray(np.broadcast_to(np.eye(3), (n, 3, 3)).copy())
        self.omega = np.zeros((n, 3))
        self.eps = np.zeros((n, n_modes))
        self.epsdot = np.zeros((n, n_modes))
        self.mass = np.full(n, density * template.volume)
        self.inertia = np.ascontiguousarray(np.broadcast_to(density * template.inertia, (n, 3)).copy())
        self.fixed = np.zeros(n, dtype=np.bool_) if fixed is None else np.asarray(fixed, dtype=np.bool_)
        # per grain: which of (x, y, z translation, x, y, z rotation, world axes) evolve; a frozen
        # DOF keeps its initial (zero) velocity
        self.free_dof = np.ones((n, 6), dtype=np.bool_)
        if free_dofs is not None:
            self.free_dof[:] = np.asarray(free_dofs, dtype=np.bool_).reshape(-1, 6)
        self.modal_mass = np.atleast_2d(np.asarray(modal_mass, float))
        self.modal_damping = (np.zeros((n_modes, n_modes)) if modal_damping is None
                              else np.atleast_2d(np.asarray(modal_damping, float)))
        if self.modal_mass.shape != (n_modes, n_modes) or self.modal_damping.shape != (n_modes, n_modes):
            raise ValueError(f"modal_mass and modal_damping must be {n_modes} x {n_modes}")
        self.response = response
        if isinstance(response, TabulatedForce):
            if n_modes != 1:
                raise ValueError("a TabulatedForce response needs a single-mode template")
            self._use_table = True
            self._tab = (response.eps_table, response.force_table, response.slopes)
            self._k = np.zeros((1, 1))
        elif isinstance(response, LinearResponse):
            self._use_table = False
            self._tab = (np.zeros(2), np.zeros(2), np.zeros(1))
            self._k = response.stiffness
        else:
            raise ValueError("response must be a LinearResponse or a TabulatedForce")
        self.ks = float(contact_stiffness)
        self.cs = float(contact_damping)
        self.obstacles = list(obstacles)
        self.pairs = np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))
        self.table = np.ascontiguousarray(tabulate_modes(template.modes, template.phi0))
        if getattr(template, "node_mode_values", None) is not None:
            self.node_modes = np.ascontiguousarray(template.node_mode_values, dtype=np.float64)
        else:
            self.node_modes = np.ascontiguousarray(np.stack([m.displacement(template.nodes)
                                                             for m in template.modes]))
        self.bound_radius = float(np.linalg.norm(template.nodes, axis=1).max())
        self.n_ways = 2 if both_ways else 1
        if ramp_time < 0:
            raise ValueError(f"ramp_time must be >= 0, got {ramp_time}")
        self.ramp_time = float(ramp_time)
        self.deformable = bool(deformable)
        if int(inverse_iterations) != inverse_iterations or inverse_iterations < 0:
            raise ValueError(f"inverse_iterations must be an integer >= 0, got {inverse_iterations}")
        self.inverse_iterations = int(inverse_iterations)
        if inverse_method not in ("fixed_point", "newton"):
            raise ValueError(f"inverse_method must be 'fixed_point' or 'newton', got {inverse_method!r}")
        self.inverse_method = inverse_method
        self.pullback_cache = bool(pullback_cache)
        if pullback not in ("corners", "point"):
            raise ValueError(f"pullback must be 'corners' or 'point', got {pullback!r}")
        if pullback == "point" and self.pullback_cache:
            raise ValueError("pullback_cache applies to pullback='corners' only (a point-wise pull-back has "
                             "no grid node values to reuse)")
        self.pullback = pullback
        if motion is not None and not callable(motion):
            raise ValueError("motion must be a callable s(t) (obstacle displacement = velocity × s(t)) or None")
        if motion is not None and ramp_time > 0:
            raise ValueError("give ramp_time or motion, not both")
        self.motion = motion
        # stiffness-proportional modal damping with the state-dependent stiffness (seed Table 2): C(ε) =
        # tangent_damping · dF/dε of a tabulated response, in place of the constant modal_damping
        if not tangent_damping >= 0:
            raise ValueError(f"tangent_damping must be >= 0, got {tangent_damping}")
        if tangent_damping > 0 and not self._use_table:
            raise ValueError("tangent_damping needs a TabulatedForce response")
        if tangent_damping > 0 and np.any(self.modal_damping != 0):
            raise ValueError("give modal_damping or tangent_damping, not both")
        self.tangent_damping = float(tangent_damping)
        self.time = 0.0

    def _obstacle_arrays(self):
        no = len(self.obstacles)
        otype = np.array([o.kind for o in self.obstacles], dtype=np.int64).reshape(no)
        opoint = np.array([o.point for o in self.obstacles], dtype=float).reshape(no, 3)
        odir = np.array([o.direction for o in self.obstacles], dtype=float).reshape(no, 3)
        orad = np.array([o.radius for o in self.obstacles], dtype=float).reshape(no)
        ovel = np.array([o.velocity for o in self.obstacles], dtype=float).reshape(no, 3)
        return otype, opoint, odir, orad, ovel

    def critical_step(self, beta=0.2, contact_area=None):
        """min of the rigid step β√(m/k_c) and the modal step β/ω_max (their §3.3).

        k_c = k_s × ``contact_area`` is the stiffness of one contact patch (default: the largest node
        area, i.e. a single node; pass the expected patch area for flat contacts), m the smaller of the
        grain mass and the modal mass seen at the node moving most per unit ε (M / max|Φ|²).
        """
        from graindem.deform.dynamics import modal_critical_step

        area = self.template.node_areas.max() if contact_area is None else float(contact_area)
        if not area > 0:
            raise ValueError(f"contact_area must be > 0, got {contact_area}")
        k_contact = self.ks * area
        phi_max = np.abs(self.node_modes).max()
        m_modal = np.linalg.eigvalsh(self.modal_mass).min() / max(phi_max, 1e-300) ** 2
        dt_modal = modal_critical_step(self.modal_mass, self.response.max_tangent(), beta)
        dt_rigid = beta * np.sqrt(min(self.mass.min(), m_modal) / k_contact)
        self.critical_steps = {"rigid": float(dt_rigid), "modal": float(dt_modal), "beta": beta}
        return min(dt_rigid, dt_modal)

    def run(self, n_steps, dt, record_every=100):
        if not dt > 0 or n_steps < 0:
            raise ValueError("dt must be > 0 and n_steps >= 0")
        otype, opoint, odir, orad, ovel = self._obstacle_arrays()
        n_rec = n_steps // record_every + 1
        n = self.pos.shape[0]
        nm = self.eps.shape[1]
        rec_t = np.zeros(n_rec)
        rec_ofor = np.zeros((n_rec, len(self.obstacles), 3))
        rec_opos = np.zeros((n_rec, len(self.obstacles), 3))
        rec_eps = np.zeros((n_rec, n, nm))
        rec_pos = np.zeros((n_rec, n, 3))
        lhs = self.modal_mass + 0.5 * dt * self.modal_damping
        m_lhs_inv = np.linalg.inv(lhs)
        m_rhs = self.modal_mass - 0.5 * dt * self.modal_damping
        tpl = self.template
        if self.motion is None:
            wall_factor = np.zeros(0)
        else:
            # exact differences of s(t): the obstacles end exactly at velocity × s(t_end)
            s_t = np.asarray(self.motion(self.time + dt * np.arange(n_steps + 1)), dtype=np.float64)
            wall_factor = np.ascontiguousarray(np.diff(s_t) / dt)
        count = run_kernel(int(n_steps), float(dt), int(record_every), self.pos, self.vel, self.rot, self.omega,
                           self.eps, self.epsdot, self.mass, self.inertia, self.fixed, self.free_dof,
                           tpl.phi0.values, tpl.phi0.origin, tpl.phi0.spacing, self.table,
                           np.ascontiguousarray(tpl.nodes), self.node_modes, np.ascontiguousarray(tpl.node_areas),
                           self.bound_radius, m_lhs_inv, m_rhs, np.ascontiguousarray(self._k),
                           self._tab[0], self._tab[1], self._tab[2], self._use_table, self.ks, self.cs,
                           otype, opoint, odir, orad, ovel, self.pairs, self.n_ways, self.ramp_time, self.time,
                           self.deformable, self.inverse_iterations, self.inverse_method == "newton",
                           self.pullback_cache, self.pullback == "point", self.tangent_damping, wall_factor,
                           rec_t, rec_ofor, rec_eps, rec_opos, rec_pos)
        for o, p in zip(self.obstacles, opoint):
            o.point = p.copy()
        self.time += n_steps * dt
        return {"t": rec_t[:count], "obstacle_force": rec_ofor[:count], "eps": rec_eps[:count],
                "obstacle_position": rec_opos[:count], "position": rec_pos[:count]}

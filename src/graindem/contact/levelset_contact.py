"""Node-to-level-set contact for LS-DEM (Kawamoto et al. 2016; Feldfogel et al. 2024), numba kernels.

Geometry. A surface node of grain O (world point x) is taken into grain P's body frame; phi_P there is
the trilinear interpolant of the 8 surrounding grid values (graindem.core.grid) and g = grad phi_P (of the same interpolant,
rotated to the world frame). phi_P < 0 is a penetration delta = -phi_P.

Normal force on O at x:  f_n = k_i delta g - c_i v_n n,  n = g/|g|.
    k_i delta g = -d/dx (k_i phi_P^2 / 2): the normal force is the gradient of a penalty energy, so a
    frictionless undamped collision conserves energy up to the time-integration error (with n instead
    of g it would not: the trilinear |g| is 1 only to O(h)).
    law "node" (Kawamoto): k_i = k_n, a stiffness per node [N/m]. The total force grows with the number
        of nodes in the contact patch, so it has no limit as the surface is refined.
    law "area" (Feldfogel): k_i = k_s a_i with a_i the node's area weight and k_s a stiffness per unit
        area [Pa/m] (a Winkler foundation): sum_i k_s a_i delta_i -> integral of k_s delta dA, which
        converges under refinement. For two spheres at overlap d this is F = pi k_s R* d^2 for d << R*.
    Both directions (O = A in P = B, and O = B in P = A) count half each, so "both" and "one"
    (only the nodes of the grain with the smaller bounding radius, ties to the lower index) share the
    same continuum limit.

Damping "as for spheres": the pair is a linear oscillator of stiffness K = sum of the k_i of its
penetrating nodes (both directions), so c_pair = 2 zeta sqrt(m_eff K) and each node takes
c_i = c_pair k_i / K. zeta = 0 is elastic.

Tangential (Coulomb with per-node history). Each grain node owns one shear slot: the spring vector s,
the partner (grain index, or -2 - wall index) and the step it was last in contact. The slot carries on
only if the same partner held it at the previous step; otherwise (the node left contact, or changed
partner) it restarts at zero. Carried springs are rotated with the contact: the component along the new
normal is removed and the length restored. s += v_t dt; f_t = -k_t,i s - c_t,i v_t with
k_t,i = kt_ratio k_i, c_t,i = kt_ratio c_i; if |f_t| > mu |f_n| then f_t is scaled to mu |f_n| and s
reset to the spring that gives it (LAMMPS style). One slot per node: a node touching two partners at
once keeps the history of the one seen last.

Walls are planes x . n_w = p_w . n_w (n_w pointing into the domain), phi_w = n_w . (x - p_w), probed by
every node of a grain with full weight (walls have no nodes); a wall moves with its prescribed velocity.

Kinematics in a deforming periodic cell: velocities are the bodies' own (peculiar) velocities, as for
spheres; the cell's affine flow moves a body's centre x with L (x - lo) on top of them (L the cell's
velocity gradient: strain rates on the diagonal, shear rates above it). The relative velocity of a
node of o against the image of p at e (centre of p's image minus centre of o) therefore gains
-L e, the flow's velocity difference between the two centres; the image's own velocity is p's.

Stress (Love-Weber, compression positive): each node force f on o adds f (x) (-e) (the force on o
times the branch vector from p's image to o) to acc[ACC_STRESS]; a wall node adds (-f) (x) (x - x_o)
(the force on the wall times the vector from o's centre to the node), as the sphere passes do.

Energies (the `energy` array, E_*): E_NORMAL and E_TANGENT are the penalty energies sum k_i delta_i^2 / 2
and sum k_t,i |s_i|^2 / 2 of the last force evaluation; E_VISC accumulates the work of the normal
dampers, E_TWORK the work the relative motion does against the tangential forces (trapezoid rule in
the spring force, so a sticking elastic spring stores exactly what it receives; the dampers at the
step's velocity): what of it is not
stored in the springs now (E_TWORK - E_TANGENT) was dissipated by Coulomb sliding, the tangential
dampers and springs released when a node left its contact.
"""

import math

from .._jit import njit
from ..core.cell import flow_velocity
from ..core.grid import trilinear
from ..core.layout import ACC_STRESS, ACC_WALL, WALL_NORMAL, WALL_POINT, WALL_VEL

LAW_NODE = 0
LAW_AREA = 1
LAWS = {"node": LAW_NODE, "area": LAW_AREA}

# the energy array (see the module docstring); E_GRAVITY and E_LOCAL are the bodies' own (work of
# gravity, energy removed by local damping)
E_NORMAL, E_TANGENT, E_VISC, E_TWORK, E_SLIDING, E_GRAVITY, E_LOCAL = 0, 1, 2, 3, 4, 5, 6
N_ENERGY = 7


def node_contact_energies(energy):
    """The energies (J) an `energy` array holds, by name: elastic_normal_energy,
    tangential_energy, tangential_work, frictional_dissipation (= tangential work not stored in
    the springs), viscous_dissipation."""
    return {"elastic_normal_energy": float(energy[E_NORMAL]), "tangential_energy": float(energy[E_TANGENT]),
            "frictional_dissipation": float(energy[E_TWORK] - energy[E_TANGENT]),
            "tangential_work": float(energy[E_TWORK]), "viscous_dissipation": float(energy[E_VISC])}


@njit
def query_points(phi, off, nx, ny, nz, ox, oy, oz, h, pts, out):
    """phi and gradient at many body points (benchmarks and tests of the kernel itself).

    out[m, 4] = (phi, gx, gy, gz), with core.grid's rule outside the grid.
    """
    for m in range(pts.shape[0]):
        v, gx, gy, gz, _ = trilinear(phi, off, nx, ny, nz, ox, oy, oz, h, pts[m, 0], pts[m, 1], pts[m, 2])
        out[m, 0] = v
        out[m, 1] = gx
        out[m, 2] = gy
        out[m, 3] = gz


@njit(_nrt=False)
def collect_nodes_in(o, p, ex, ey, ez, weight, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                     t_nodes, t_areas, t_radius, t_cull, pos, rot, law, k_normal, hist_off, sc_owner, sc_other,
                     sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc):
    """Append the nodes of grain o that penetrate grain p to the scratch arrays, in the order of o's
    template nodes; returns the new count.

    (ex, ey, ez): the centre of p (the image that touches o, in a periodic cell) minus the centre of o;
    it is stored with each node (sc_e) so that apply_scratch takes p's lever arms from that image.
    t_cull: the templates' culling arrays (contact.node_tree.culling_arrays): o's node tree is walked
    against p's bounding sphere and p's interior box, and only the nodes of the leaves that meet
    both are tried, each by the exact tests (bounding sphere, inside p's grid, phi_p < 0)."""
    to = tmpl[o]
    tp = tmpl[p]
    reach = t_radius[tp] + 2.0 * t_h[tp]
    reach2 = reach * reach
    nx, ny, nz = t_shape[tp, 0], t_shape[tp, 1], t_shape[tp, 2]
    ox, oy, oz = t_origin[tp, 0], t_origin[tp, 1], t_origin[tp, 2]
    h = t_h[tp]
    off = t_phi_off[tp]
    # the node loop works in o's body frame: cull by distance to p's centre there, then map each
    # surviving node into p's frame with one matrix M = R_p^T R_o and offset t = R_p^T (x_o - x_p)
    cx = rot[o, 0, 0] * ex + rot[o, 1, 0] * ey + rot[o, 2, 0] * ez
    cy = rot[o, 0, 1] * ex + rot[o, 1, 1] * ey + rot[o, 2, 1] * ez
    cz = rot[o, 0, 2] * ex + rot[o, 1, 2] * ey + rot[o, 2, 2] * ez
    m00 = rot[p, 0, 0] * rot[o, 0, 0] + rot[p, 1, 0] * rot[o, 1, 0] + rot[p, 2, 0] * rot[o, 2, 0]
    m01 = rot[p, 0, 0] * rot[o, 0, 1] + rot[p, 1, 0] * rot[o, 1, 1] + rot[p, 2, 0] * rot[o, 2, 1]
    m02 = rot[p, 0, 0] * rot[o, 0, 2] + rot[p, 1, 0] * rot[o, 1, 2] + rot[p, 2, 0] * rot[o, 2, 2]
    m10 = rot[p, 0, 1] * rot[o, 0, 0] + rot[p, 1, 1] * rot[o, 1, 0] + rot[p, 2, 1] * rot[o, 2, 0]
    m11 = rot[p, 0, 1] * rot[o, 0, 1] + rot[p, 1, 1] * rot[o, 1, 1] + rot[p, 2, 1] * rot[o, 2, 1]
    m12 = rot[p, 0, 1] * rot[o, 0, 2] + rot[p, 1, 1] * rot[o, 1, 2] + rot[p, 2, 1] * rot[o, 2, 2]
    m20 = rot[p, 0, 2] * rot[o, 0, 0] + rot[p, 1, 2] * rot[o, 1, 0] + rot[p, 2, 2] * rot[o, 2, 0]
    m21 = rot[p, 0, 2] * rot[o, 0, 1] + rot[p, 1, 2] * rot[o, 1, 1] + rot[p, 2, 2] * rot[o, 2, 1]
    m22 = rot[p, 0, 2] * rot[o, 0, 2] + rot[p, 1, 2] * rot[o, 1, 2] + rot[p, 2, 2] * rot[o, 2, 2]
    tx = -(rot[p, 0, 0] * ex + rot[p, 1, 0] * ey + rot[p, 2, 0] * ez)
    ty = -(rot[p, 0, 1] * ex + rot[p, 1, 1] * ey + rot[p, 2, 1] * ez)
    tz = -(rot[p, 0, 2] * ex + rot[p, 1, 2] * ey + rot[p, 2, 2] * ez)
    tree_off, tree, link, tree_node, box = t_cull
    lox, loy, loz = box[tp, 0], box[tp, 1], box[tp, 2]
    hix, hiy, hiz = box[tp, 3], box[tp, 4], box[tp, 5]
    ulx, uly, ulz = (lox - ox) / h, (loy - oy) / h, (loz - oz) / h
    uhx, uhy, uhz = (hix - ox) / h, (hiy - oy) / h, (hiz - oz) / h
    first = n_sc
    base = t_node_off[to]
    r = tree_off[to]
    while r < tree_off[to + 1]:
        # a row's sphere (centre c_r, radius rho) in o's frame: its nodes lie within rho of c_r, and
        # M is a rotation, so they lie within rho of M c_r + t in p's frame as well
        px = tree[r, 0]
        py = tree[r, 1]
        pz = tree[r, 2]
        rho = tree[r, 3]
        dx = px - cx
        dy = py - cy
        dz = pz - cz
        lim = reach + rho
        qx = m00 * px + m01 * py + m02 * pz + tx
        qy = m10 * px + m11 * py + m12 * pz + ty
        qz = m20 * px + m21 * py + m22 * pz + tz
        if (dx * dx + dy * dy + dz * dz > lim * lim or qx + rho < lox or qx - rho > hix or qy + rho < loy
                or qy - rho > hiy or qz + rho < loz or qz - rho > hiz):
            r = link[r, 0]
            continue
        for k in range(link[r, 1], link[r, 2]):
            a = base + tree_node[k]
            bx = t_nodes[a, 0]
            by = t_nodes[a, 1]
            bz = t_nodes[a, 2]
            dx = bx - cx
            dy = by - cy
            dz = bz - cz
            if dx * dx + dy * dy + dz * dz > reach2:
                continue
            qx = m00 * bx + m01 * by + m02 * bz + tx
            qy = m10 * bx + m11 * by + m12 * bz + ty
            qz = m20 * bx + m21 * by + m22 * bz + tz
            # the box test in grid units, on the very coordinates the trilinear lookup computes
            if ((qx - ox) / h < ulx or (qx - ox) / h > uhx or (qy - oy) / h < uly or (qy - oy) / h > uhy
                    or (qz - oz) / h < ulz or (qz - oz) / h > uhz):
                continue
            val, gx, gy, gz, inside = trilinear(t_phi, off, nx, ny, nz, ox, oy, oz, h, qx, qy, qz)
            # a node outside p's grid is not in contact with p: the grid's margin holds every penetration
            if not inside or val >= 0.0:
                continue
            wx = pos[o, 0] + rot[o, 0, 0] * bx + rot[o, 0, 1] * by + rot[o, 0, 2] * bz
            wy = pos[o, 1] + rot[o, 1, 0] * bx + rot[o, 1, 1] * by + rot[o, 1, 2] * bz
            wz = pos[o, 2] + rot[o, 2, 0] * bx + rot[o, 2, 1] * by + rot[o, 2, 2] * bz
            s = n_sc
            sc_owner[s] = o
            sc_other[s] = p
            sc_hist[s] = hist_off[o] + tree_node[k]
            sc_x[s, 0] = wx
            sc_x[s, 1] = wy
            sc_x[s, 2] = wz
            sc_g[s, 0] = rot[p, 0, 0] * gx + rot[p, 0, 1] * gy + rot[p, 0, 2] * gz
            sc_g[s, 1] = rot[p, 1, 0] * gx + rot[p, 1, 1] * gy + rot[p, 1, 2] * gz
            sc_g[s, 2] = rot[p, 2, 0] * gx + rot[p, 2, 1] * gy + rot[p, 2, 2] * gz
            sc_delta[s] = -val
            sc_e[s, 0] = ex
            sc_e[s, 1] = ey
            sc_e[s, 2] = ez
            if law == LAW_AREA:
                sc_k[s] = weight * k_normal * t_areas[a]
            else:
                sc_k[s] = weight * k_normal
            n_sc += 1
        r += 1
    # the tree visits the nodes in its own order; the forces are summed in the template's
    sort_rows_by_node(first, n_sc, sc_hist, sc_x, sc_g, sc_delta, sc_k)
    return n_sc


@njit(_nrt=False, inline="always")
def sort_rows_by_node(first, end, sc_hist, sc_x, sc_g, sc_delta, sc_k):
    """Order the scratch rows first .. end - 1 of one grain pair direction by node (sc_hist; insertion
    sort: a direction holds a few rows). Owner, partner and branch (sc_owner, sc_other, sc_e) are
    the same in all of them."""
    for s in range(first + 1, end):
        key = sc_hist[s]
        if sc_hist[s - 1] <= key:
            continue
        x0, x1, x2 = sc_x[s, 0], sc_x[s, 1], sc_x[s, 2]
        g0, g1, g2 = sc_g[s, 0], sc_g[s, 1], sc_g[s, 2]
        delta = sc_delta[s]
        k = sc_k[s]
        t = s
        while t > first and sc_hist[t - 1] > key:
            sc_hist[t] = sc_hist[t - 1]
            for d in range(3):
                sc_x[t, d] = sc_x[t - 1, d]
                sc_g[t, d] = sc_g[t - 1, d]
            sc_delta[t] = sc_delta[t - 1]
            sc_k[t] = sc_k[t - 1]
            t -= 1
        sc_hist[t] = key
        sc_x[t, 0], sc_x[t, 1], sc_x[t, 2] = x0, x1, x2
        sc_g[t, 0], sc_g[t, 1], sc_g[t, 2] = g0, g1, g2
        sc_delta[t] = delta
        sc_k[t] = k


@njit(_nrt=False)
def collect_nodes_wall(o, w, tmpl, t_node_off, t_nodes, t_areas, t_cull, pos, rot, walls, law, k_normal, hist_off,
                       sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, n_sc):
    """Append the nodes of grain o below wall w (a row of the Simulation's walls: point, inward
    normal, velocity) to the scratch arrays, in the order of o's template nodes; returns the new
    count. o's node tree (t_cull, as in collect_nodes_in) is walked against the wall's half-space: a
    row whose sphere lies wholly above the plane is skipped with its subtree (the sphere's margin,
    contact.node_tree.SPHERE_MARGIN, covers the rounding of its centre's height)."""
    to = tmpl[o]
    nx, ny, nz = walls[w, WALL_NORMAL], walls[w, WALL_NORMAL + 1], walls[w, WALL_NORMAL + 2]
    tree_off, tree, link, tree_node, _ = t_cull
    first = n_sc
    base = t_node_off[to]
    r = tree_off[to]
    while r < tree_off[to + 1]:
        rx, ry, rz = tree[r, 0], tree[r, 1], tree[r, 2]
        height = ((pos[o, 0] + rot[o, 0, 0] * rx + rot[o, 0, 1] * ry + rot[o, 0, 2] * rz - walls[w, WALL_POINT]) * nx
                  + (pos[o, 1] + rot[o, 1, 0] * rx + rot[o, 1, 1] * ry + rot[o, 1, 2] * rz
                     - walls[w, WALL_POINT + 1]) * ny
                  + (pos[o, 2] + rot[o, 2, 0] * rx + rot[o, 2, 1] * ry + rot[o, 2, 2] * rz
                     - walls[w, WALL_POINT + 2]) * nz)
        if height > tree[r, 3]:
            r = link[r, 0]
            continue
        for k in range(link[r, 1], link[r, 2]):
            a = base + tree_node[k]
            bx = t_nodes[a, 0]
            by = t_nodes[a, 1]
            bz = t_nodes[a, 2]
            wx = pos[o, 0] + rot[o, 0, 0] * bx + rot[o, 0, 1] * by + rot[o, 0, 2] * bz
            wy = pos[o, 1] + rot[o, 1, 0] * bx + rot[o, 1, 1] * by + rot[o, 1, 2] * bz
            wz = pos[o, 2] + rot[o, 2, 0] * bx + rot[o, 2, 1] * by + rot[o, 2, 2] * bz
            val = ((wx - walls[w, WALL_POINT]) * nx + (wy - walls[w, WALL_POINT + 1]) * ny
                   + (wz - walls[w, WALL_POINT + 2]) * nz)
            if val >= 0.0:
                continue
            s = n_sc
            sc_owner[s] = o
            sc_other[s] = -2 - w
            sc_hist[s] = hist_off[o] + tree_node[k]
            sc_x[s, 0] = wx
            sc_x[s, 1] = wy
            sc_x[s, 2] = wz
            sc_g[s, 0] = nx
            sc_g[s, 1] = ny
            sc_g[s, 2] = nz
            sc_delta[s] = -val
            sc_k[s] = full_weight_stiffness(law, k_normal, t_areas[a])
            n_sc += 1
        r += 1
    sort_rows_by_node(first, n_sc, sc_hist, sc_x, sc_g, sc_delta, sc_k)
    return n_sc


@njit(inline="always")
def full_weight_stiffness(law, k_normal, area):
    """A node's stiffness against a partner without nodes (a wall, a sphere): k_s times its area
    (law "area") or k_n (law "node")."""
    return k_normal * area if law == LAW_AREA else k_normal


@njit(_nrt=False)
def collect_nodes_in_sphere(o, code, ex, ey, ez, R, tmpl, t_node_off, t_nodes, t_areas, t_cull, pos, rot, law,
                            k_normal, hist_off, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc):
    """Append the nodes of grain o inside a sphere of radius R centred at x_o + (ex, ey, ez) (the
    image that touches o) to the scratch arrays, in the order of o's template nodes; returns the
    new count. The sphere's level set is analytic, phi(x) = |x - c| - R, its gradient the unit
    vector (x - c) / |x - c|; every node counts with full weight (the sphere has no nodes), as
    against a wall. `code` is the sphere's history partner (apply_scratch: the grain count plus its
    index). o's node tree (t_cull, as in collect_nodes_in) is walked against the sphere: a row whose
    sphere does not meet it is skipped with its subtree."""
    to = tmpl[o]
    # the centre in o's body frame: nodes farther from it than R cannot touch
    cx = rot[o, 0, 0] * ex + rot[o, 1, 0] * ey + rot[o, 2, 0] * ez
    cy = rot[o, 0, 1] * ex + rot[o, 1, 1] * ey + rot[o, 2, 1] * ez
    cz = rot[o, 0, 2] * ex + rot[o, 1, 2] * ey + rot[o, 2, 2] * ez
    tree_off, tree, link, tree_node, _ = t_cull
    first = n_sc
    base = t_node_off[to]
    r = tree_off[to]
    while r < tree_off[to + 1]:
        dx = tree[r, 0] - cx
        dy = tree[r, 1] - cy
        dz = tree[r, 2] - cz
        lim = R + tree[r, 3]
        if dx * dx + dy * dy + dz * dz > lim * lim:
            r = link[r, 0]
            continue
        for k in range(link[r, 1], link[r, 2]):
            a = base + tree_node[k]
            bx = t_nodes[a, 0] - cx
            by = t_nodes[a, 1] - cy
            bz = t_nodes[a, 2] - cz
            d2 = bx * bx + by * by + bz * bz
            if d2 >= R * R or d2 == 0.0:
                continue
            d = math.sqrt(d2)
            s = n_sc
            sc_owner[s] = o
            sc_other[s] = code
            sc_hist[s] = hist_off[o] + tree_node[k]
            # world node and gradient: the body-frame offset from the centre, rotated
            gx = rot[o, 0, 0] * bx + rot[o, 0, 1] * by + rot[o, 0, 2] * bz
            gy = rot[o, 1, 0] * bx + rot[o, 1, 1] * by + rot[o, 1, 2] * bz
            gz = rot[o, 2, 0] * bx + rot[o, 2, 1] * by + rot[o, 2, 2] * bz
            sc_x[s, 0] = pos[o, 0] + ex + gx
            sc_x[s, 1] = pos[o, 1] + ey + gy
            sc_x[s, 2] = pos[o, 2] + ez + gz
            sc_g[s, 0] = gx / d
            sc_g[s, 1] = gy / d
            sc_g[s, 2] = gz / d
            sc_delta[s] = R - d
            sc_e[s, 0] = ex
            sc_e[s, 1] = ey
            sc_e[s, 2] = ez
            sc_k[s] = full_weight_stiffness(law, k_normal, t_areas[a])
            n_sc += 1
        r += 1
    # the rows of one sphere share sc_e, which the sort therefore need not move
    sort_rows_by_node(first, n_sc, sc_hist, sc_x, sc_g, sc_delta, sc_k)
    return n_sc


@njit(inline="always")
def coulomb_node_spring(shear, partner, last_step, hk, p, step, nx, ny, nz, t0, t1, t2, dt, kt, ct, limit):
    """Tangential force of a node's Coulomb spring (module docstring): the spring of history slot hk
    carries on if partner p held it at the previous step (turned onto the plane of the normal n, its
    length kept), else restarts at 0; s += v_t dt; f_t = -k_t s - c_t v_t capped at `limit` (mu f_n)
    with s reset to the spring that gives the cap. Writes the spring back; returns (f_t, the
    tangential work of the step, 1.0 if the cap applied else 0.0). The work counts the spring part
    -k_t s by the trapezoid rule between the carried and the new spring, and the damper part -c_t v_t
    (unscaled by the cap: f_t = -k_t s - c_t v_t with s the spring kept) at the step's velocity."""
    if partner[hk] == p and last_step[hk] == step - 1:
        s0, s1, s2 = shear[hk, 0], shear[hk, 1], shear[hk, 2]
        old = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
        sn = s0 * nx + s1 * ny + s2 * nz
        s0 -= sn * nx
        s1 -= sn * ny
        s2 -= sn * nz
        new = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
        if new > 0.0:
            scale = old / new
            s0 *= scale
            s1 *= scale
            s2 *= scale
    else:
        s0, s1, s2 = 0.0, 0.0, 0.0
    fo0 = -kt * s0
    fo1 = -kt * s1
    fo2 = -kt * s2
    s0 += t0 * dt
    s1 += t1 * dt
    s2 += t2 * dt
    ft0 = -kt * s0 - ct * t0
    ft1 = -kt * s1 - ct * t1
    ft2 = -kt * s2 - ct * t2
    ftm = math.sqrt(ft0 * ft0 + ft1 * ft1 + ft2 * ft2)
    slid = 0.0
    if ftm > limit:
        scale = limit / ftm if ftm > 0.0 else 0.0
        ft0 *= scale
        ft1 *= scale
        ft2 *= scale
        slid = 1.0
        if kt > 0.0:
            s0 = -(ft0 + ct * t0) / kt
            s1 = -(ft1 + ct * t1) / kt
            s2 = -(ft2 + ct * t2) / kt
    shear[hk, 0] = s0
    shear[hk, 1] = s1
    shear[hk, 2] = s2
    work = (0.5 * ((kt * s0 - fo0) * t0 + (kt * s1 - fo1) * t1 + (kt * s2 - fo2) * t2)
            + ct * (t0 * t0 + t1 * t1 + t2 * t2)) * dt
    return ft0, ft1, ft2, work, slid


@njit(inline="always")
def add_stress(acc, g0, g1, g2, l0, l1, l2):
    """Add a contact's g (x) l to the Love-Weber sum acc[ACC_STRESS:ACC_STRESS + 9] (row-major)."""
    acc[ACC_STRESS + 0] += g0 * l0
    acc[ACC_STRESS + 1] += g0 * l1
    acc[ACC_STRESS + 2] += g0 * l2
    acc[ACC_STRESS + 3] += g1 * l0
    acc[ACC_STRESS + 4] += g1 * l1
    acc[ACC_STRESS + 5] += g1 * l2
    acc[ACC_STRESS + 6] += g2 * l0
    acc[ACC_STRESS + 7] += g2 * l1
    acc[ACC_STRESS + 8] += g2 * l2


@njit(_nrt=False)
def apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, m_eff, zeta, kt_ratio,
                  mu, dt, step, pos, vel, omega, force, torque, vel_p, omega_p, force_p, torque_p, p_base, shear,
                  partner, last_step, walls, cell, cp_x, cp_f, cp_ij, n_cp, energy, acc):
    """Forces of the penetrating nodes in the scratch arrays (one grain pair, one grain-wall pair or
    one grain-sphere pair).

    sc_other >= 0 is the partner body p - p_base of the arrays vel_p, omega_p, force_p, torque_p
    (another grain: the grains' own arrays and p_base = 0; a sphere: the spheres' arrays, p_base the
    grain count, so that a node's history partner p names grains and spheres apart); <= -2 encodes
    wall -2 - w (its normal replaces the level-set gradient, its velocity is subtracted). Adds the
    stress, the wall forces and the energies (module docstring).
    """
    if n_sc == 0:
        return n_cp
    K = 0.0
    for s in range(n_sc):
        K += sc_k[s]
    c_pair = 2.0 * zeta * math.sqrt(m_eff * K)
    for s in range(n_sc):
        o = sc_owner[s]
        p = sc_other[s]
        w = -2 - p  # the wall, when p < 0
        k_i = sc_k[s]
        c_i = c_pair * k_i / K
        gx, gy, gz = sc_g[s, 0], sc_g[s, 1], sc_g[s, 2]
        gn = math.sqrt(gx * gx + gy * gy + gz * gz)
        if gn == 0.0:
            continue
        nx, ny, nz = gx / gn, gy / gn, gz / gn
        x0, x1, x2 = sc_x[s, 0], sc_x[s, 1], sc_x[s, 2]
        # relative velocity of o's material point at x with respect to p's
        r0 = x0 - pos[o, 0]
        r1 = x1 - pos[o, 1]
        r2 = x2 - pos[o, 2]
        v0 = vel[o, 0] + omega[o, 1] * r2 - omega[o, 2] * r1
        v1 = vel[o, 1] + omega[o, 2] * r0 - omega[o, 0] * r2
        v2 = vel[o, 2] + omega[o, 0] * r1 - omega[o, 1] * r0
        q0 = 0.0
        q1 = 0.0
        q2 = 0.0
        e0 = sc_e[s, 0]
        e1 = sc_e[s, 1]
        e2 = sc_e[s, 2]
        b = p - p_base
        if p >= 0:
            q0 = r0 - e0
            q1 = r1 - e1
            q2 = r2 - e2
            v0 -= vel_p[b, 0] + omega_p[b, 1] * q2 - omega_p[b, 2] * q1
            v1 -= vel_p[b, 1] + omega_p[b, 2] * q0 - omega_p[b, 0] * q2
            v2 -= vel_p[b, 2] + omega_p[b, 0] * q1 - omega_p[b, 1] * q0
            # the cell's flow between the two centres
            u0, u1, u2 = flow_velocity(cell, e0, e1, e2)
            v0 -= u0
            v1 -= u1
            v2 -= u2
        else:
            v0 -= walls[w, WALL_VEL]
            v1 -= walls[w, WALL_VEL + 1]
            v2 -= walls[w, WALL_VEL + 2]
        vn = v0 * nx + v1 * ny + v2 * nz
        t0 = v0 - vn * nx
        t1 = v1 - vn * ny
        t2 = v2 - vn * nz
        delta = sc_delta[s]
        energy[E_NORMAL] += 0.5 * k_i * delta * delta
        f0 = k_i * delta * gx - c_i * vn * nx
        f1 = k_i * delta * gy - c_i * vn * ny
        f2 = k_i * delta * gz - c_i * vn * nz
        fn = f0 * nx + f1 * ny + f2 * nz
        if fn < 0.0:  # damping may not pull the grains together
            f0 -= fn * nx
            f1 -= fn * ny
            f2 -= fn * nz
            fn = 0.0
        # work of the normal damping: the force beyond the elastic k delta g against v
        energy[E_VISC] -= ((f0 - k_i * delta * gx) * v0 + (f1 - k_i * delta * gy) * v1
                           + (f2 - k_i * delta * gz) * v2) * dt
        hk = sc_hist[s]
        if mu > 0.0:
            kt = kt_ratio * k_i
            ft0, ft1, ft2, work, slid = coulomb_node_spring(shear, partner, last_step, hk, p, step, nx, ny, nz, t0, t1,
                                                            t2, dt, kt, kt_ratio * c_i, mu * fn)
            energy[E_SLIDING] += slid
            energy[E_TANGENT] += 0.5 * kt * (shear[hk, 0] ** 2 + shear[hk, 1] ** 2 + shear[hk, 2] ** 2)
            energy[E_TWORK] += work
            f0 += ft0
            f1 += ft1
            f2 += ft2
        partner[hk] = p
        last_step[hk] = step
        force[o, 0] += f0
        force[o, 1] += f1
        force[o, 2] += f2
        torque[o, 0] += r1 * f2 - r2 * f1
        torque[o, 1] += r2 * f0 - r0 * f2
        torque[o, 2] += r0 * f1 - r1 * f0
        if p >= 0:
            force_p[b, 0] -= f0
            force_p[b, 1] -= f1
            force_p[b, 2] -= f2
            torque_p[b, 0] -= q1 * f2 - q2 * f1
            torque_p[b, 1] -= q2 * f0 - q0 * f2
            torque_p[b, 2] -= q0 * f1 - q1 * f0
            # f on o (x) the branch from p's image to o
            l0, l1, l2 = -e0, -e1, -e2
            g0, g1, g2 = f0, f1, f2
        else:
            # the force on the wall (x) the vector from o's centre to the node
            l0, l1, l2 = r0, r1, r2
            g0, g1, g2 = -f0, -f1, -f2
            acc[ACC_WALL + 3 * w] += g0
            acc[ACC_WALL + 3 * w + 1] += g1
            acc[ACC_WALL + 3 * w + 2] += g2
        add_stress(acc, g0, g1, g2, l0, l1, l2)
        if n_cp < cp_x.shape[0]:
            cp_x[n_cp, 0] = x0
            cp_x[n_cp, 1] = x1
            cp_x[n_cp, 2] = x2
            cp_f[n_cp, 0] = f0
            cp_f[n_cp, 1] = f1
            cp_f[n_cp, 2] = f2
            cp_ij[n_cp, 0] = o
            cp_ij[n_cp, 1] = p
        n_cp += 1
    return n_cp

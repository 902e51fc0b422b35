"""Spheres and rigid level-set grains in one run: their contacts and the step that advances both.

The two kinds keep their own arrays, passes and integrators (spheres: engine.loop.run_steps,
unchanged; grains: bodies.levelset), and this module adds what joins them:

- **Grain-sphere contacts**: a Verlet list with skin over the bounding spheres of both kinds, built
  by the grains' builder (levelset.build_grain_pairs with the two kinds stacked in one array and
  only the cross pairs listed), rebuilt when a centre of either kind moved more than half the skin
  since the last build. Each listed pair whose bounding spheres overlap is a node-to-level-set
  contact: the grain's surface nodes against the sphere's analytic level set |x - c| - R
  (contact.levelset_contact.collect_nodes_in_sphere), with the grains' node law ("area" or
  "node"), damping and per-node Coulomb spring, the material pair's friction, forces and torques
  to both bodies, the stress and energies in the grains' records (apply_scratch). A node's history
  partner is the grain count plus the sphere's index, so grain and sphere partners stay apart.
- **The cell**, periodic or walled, fixed or deforming under the stress servo and shear, is one
  for both kinds: the sphere step's servo drives it on the whole assembly's Love-Weber sum (the
  spheres' own, plus the grains' and the grain-sphere contacts' at the same positions, passed to
  engine.loop.run_steps as its `more`), books its work, and moves it once per step; both
  kinds drift with its affine flow. The sphere list keeps its build record in the cell
  (CELL_LBUILD, CELL_TILT_BUILD); the grains' list and the grain-sphere list each keep their own
  (a record of REC_N floats: the lengths and tilts at their last build) and rebuild by the rule of
  the sphere loop (twice the largest move relative to the affine flow plus the cell's stretch and
  tilt since that build times the cutoff, or a tilt flip).
- **The step** (engine.mixed_loop.run_mixed, which calls the sphere loop), the same dt for both
  kinds. Both integrators are the leapfrog: a sphere's velocity is stored at the half step, a
  grain's at the full step (velocity Verlet), and both take forces at the same positions:
    0. spheres: one step of engine.loop.run_steps (sphere-sphere and sphere-wall forces added to
       the grain-sphere forces already in their force arrays, the servo, kick, drift, the cell's
       move, walls, rebuild);
    1. grains: the first half of their step (half kick with the forces of the last step, drift
       with the cell's flow of this step, rotation; kick_and_drift; their copy of the walls moves);
    2. the grains' own list, when stale;
    3. the grain-sphere list, when stale;
    4. forces at the new positions: grains (gravity, grain pairs, walls), then the grain-sphere
       contacts, which add to the grains' forces and to the spheres' (consumed by step 0 of the
       next step); the grains' second half kick.
  A phase that needs longer arrays returns to Python (MC_STATUS, MC_PHASE), which grows them and
  resumes the step at that phase; phases are idempotent up to where they stopped.
  Momentum is exchanged through equal and opposite forces at the same contact point, so linear and
  angular momentum (both kinds' velocities at the half step) are conserved to round-off.

Not offered for a mixed run (Simulation refuses it at setup): renumbering spheres
(`sort_particles`: the grain-sphere list and histories hold sphere indices), adaptive dt,
deformable grains, spheres smaller than the grains' node spacing (the nodes would not resolve them).

With the "hertz_curvature" grain law the grain pairs and the grain-sphere pairs of the material
pairs that take it are Hertzian rows instead (bodies.levelset_hertz, bodies.mixed_hertz; the step:
engine.mixed_hertz_loop), on the same cell, fixed or deforming.
"""

import math

import numpy as np

from .._jit import njit
from ..boundaries.walls import wall_rows
from ..contact import levelset_contact as lc
from ..core.cell import (CELL_L, CELL_LBUILD, CELL_TILT, CELL_TILT_BUILD, list_is_stale, is_sheared,
                         min_image, min_image_tilted)
from ..core.grid import trilinear
from .levelset import (GC_BAD_I, GC_NCP, GC_NPAIRS, GC_STATUS, MOTION_DYNAMIC, STATUS_DIVERGED, affine_drift2,
                       build_grain_pairs, grain_forces, kick_and_drift, move_walls, rebuild, update_rotations)

# the int64 control record of the mixed step
MC_STATUS = 0      # why engine.mixed_loop.run_mixed returned (its STATUS_*)
MC_PHASE = 1       # the phase to resume the interrupted step at
MC_STALE = 2       # the grains' list was stale at phase 0 of the step in hand
MC_NPAIRS = 3      # listed grain-sphere pairs
MC_NEED = 4        # the pair capacity the last grain-sphere rebuild needed
MC_NREBUILDS = 5
MC_BAD_GRAIN = 6   # diverged: the grain and sphere of the contact
MC_BAD_SPHERE = 7
MC_NCONTACTS = 8   # grain-sphere pairs with a contact node at the last force evaluation
N_MC = 9

# a list's build record: the cell's lengths (REC_L, 3) and tilts (REC_TILT, 3) at its last build
REC_L = 0
REC_TILT = 3
REC_N = 6

# the values mixed_forces leaves in mctl[MC_STATUS] when a contact diverged
MC_GRAIN_DIVERGED = 4     # the grains' record (gctl) names where
MC_SG_DIVERGED = 5        # MC_BAD_GRAIN, MC_BAD_SPHERE name the contact



@njit
def cell_since(cell, record):
    """The cell as a list built at `record` sees it: a copy holding that build's lengths and tilts
    where the spheres' list keeps its own (CELL_LBUILD, CELL_TILT_BUILD)."""
    view = cell.copy()
    for d in range(3):
        view[CELL_LBUILD + d] = record[REC_L + d]
        view[CELL_TILT_BUILD + d] = record[REC_TILT + d]
    return view


@njit
def remember_cell(view, cell, record):
    """After a rebuild on `view` (a copy of the cell): its lengths and tilts into `record`; a tilt
    the rebuild flipped (the same lattice of images) is flipped in the cell too."""
    for d in range(3):
        record[REC_L + d] = view[CELL_L + d]
        record[REC_TILT + d] = view[CELL_TILT + d]
        cell[CELL_TILT + d] = view[CELL_TILT + d]


@njit
def list_stale(pos, pos_build, cell, record, cutoff, skin):
    """The sphere loop's rebuild rule for a list built at `record`: twice the largest move of a
    centre relative to the cell's affine flow, plus the cell's stretch and tilt since the build
    times the cutoff, exceeds the skin, or a tilt must flip."""
    view = cell_since(cell, record)
    return list_is_stale(view, math.sqrt(affine_drift2(pos, pos_build, view)), cutoff, skin)


@njit
def rebuild_grain_list(pos, radius, cell, periodic, skin, pairs, pos_build, gctl, record):
    """The grains' own list (levelset.rebuild) with its build record kept apart from the spheres';
    False if `pairs` must grow."""
    view = cell.copy()
    if not rebuild(pos, radius, view, periodic, skin, pairs, pos_build, gctl):
        return False
    remember_cell(view, cell, record)
    return True


@njit
def start_grain_step(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque,
                     gravity, cell, walls, pos_build, record, energy, acc, gctl):
    """The grains' first half of a step in a run with spheres, after the sphere step has run the
    servo and moved the cell: their walls' move, half kick and drift with the cell's flow of this
    step, the rotations. Returns (ok, stale) as levelset.start_step does."""
    move_walls(walls, acc, dt)
    if not kick_and_drift(dt, alpha, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque,
                          gravity, cell, energy):
        gctl[GC_STATUS] = STATUS_DIVERGED
        gctl[GC_BAD_I] = -1
        return False, False
    update_rotations(quat, rot, angmom, inertia, omega, motion)
    return True, list_stale(pos, pos_build, cell, record, cutoff, skin)


@njit
def rebuild_sphere_grain_pairs(g_pos, g_radius, s_pos, s_radius, cell, periodic, skin, pairs, g_build, s_build,
                               record, mctl):
    """List the (grain, grain count + sphere) pairs whose bounding spheres lie within the skin
    (levelset.build_grain_pairs over both kinds stacked, cross pairs only) and remember the
    centres and the cell (`record`); False if `pairs` must grow."""
    G = g_pos.shape[0]
    N = s_pos.shape[0]
    both = np.empty((G + N, 3))
    rad = np.empty(G + N)
    for g in range(G):
        both[g] = g_pos[g]
        rad[g] = g_radius[g]
    for s in range(N):
        both[G + s] = s_pos[s]
        rad[G + s] = s_radius[s]
    view = cell.copy()
    k = build_grain_pairs(both, rad, view, periodic, skin, pairs, G)
    mctl[MC_NEED] = k
    if k > pairs.shape[0]:
        return False
    mctl[MC_NPAIRS] = k
    mctl[MC_NREBUILDS] += 1
    g_build[:] = g_pos
    s_build[:] = s_pos
    remember_cell(view, cell, record)
    return True


@njit
def sphere_grain_cutoff(g_radius, s_radius, skin):
    """The largest centre distance the grain-sphere list covers."""
    return g_radius.max() + s_radius.max() + skin


@njit
def sphere_grain_stale(g_pos, g_build, s_pos, s_build, cell, record, cutoff, skin):
    """list_stale over the centres of both kinds."""
    return (list_stale(g_pos, g_build, cell, record, cutoff, skin)
            or list_stale(s_pos, s_build, cell, record, cutoff, skin))


@njit
def sphere_branch(g_pos, g, s_pos, s, cell, periodic, sheared):
    """The branch from grain g's centre to the nearest image of sphere s: the minimum image
    through the cell, tilted when `sheared` (core.cell.is_sheared)."""
    dx = s_pos[s, 0] - g_pos[g, 0]
    dy = s_pos[s, 1] - g_pos[g, 1]
    dz = s_pos[s, 2] - g_pos[g, 2]
    if sheared:
        return min_image_tilted(dx, dy, dz, cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2], cell[CELL_TILT],
                                cell[CELL_TILT + 1], cell[CELL_TILT + 2], periodic[0], periodic[1], periodic[2])
    return min_image(dx, dy, dz, cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2], periodic[0], periodic[1],
                     periodic[2])


@njit
def sphere_grain_forces(step, dt, pairs, n_pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes,
                        t_areas, t_radius, t_cull, g_pos, g_vel, g_omega, g_rot, g_mass, g_motion, g_radius, g_material,
                        g_force, g_torque, s_pos, s_vel, s_omega, s_radius, s_mass, s_material, s_force, s_torque,
                        cell, periodic, walls, law, k_normal, kt_ratio, mu_tab, zeta, limit, hist_off, shear, partner,
                        last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij,
                        n_cp, energy, acc, mctl):
    """Add the forces of the grain-sphere contacts to both kinds (module docstring); returns the
    count of contact points (n_cp on entry plus these), or -1 when the sphere sinks deeper into the
    grain than `limit` times the smaller of the grain's and the sphere's radius (mctl names the
    pair): a node deeper in the sphere, or the sphere's centre closer to the grain's surface, read
    from the grain's level set, than its radius less that depth (a sphere sunk into a grain, which
    the grain's nodes alone would not see)."""
    G = g_pos.shape[0]
    sheared = is_sheared(cell)
    # `energy` is the grain-sphere contacts' own record: what they store now, what they did so far
    energy[lc.E_NORMAL] = 0.0
    energy[lc.E_TANGENT] = 0.0
    energy[lc.E_SLIDING] = 0.0
    n_touch = 0
    for c in range(n_pairs):
        g = pairs[c, 0]
        code = pairs[c, 1]
        s = code - G
        ex, ey, ez = sphere_branch(g_pos, g, s_pos, s, cell, periodic, sheared)
        r = g_radius[g] + s_radius[s]
        if ex * ex + ey * ey + ez * ez >= r * r:
            continue
        deepest = limit * min(t_radius[tmpl[g]], s_radius[s])
        t = tmpl[g]
        bx = g_rot[g, 0, 0] * ex + g_rot[g, 1, 0] * ey + g_rot[g, 2, 0] * ez
        by = g_rot[g, 0, 1] * ex + g_rot[g, 1, 1] * ey + g_rot[g, 2, 1] * ez
        bz = g_rot[g, 0, 2] * ex + g_rot[g, 1, 2] * ey + g_rot[g, 2, 2] * ez
        phi_c, _, _, _, inside = trilinear(t_phi, t_phi_off[t], t_shape[t, 0], t_shape[t, 1], t_shape[t, 2],
                                           t_origin[t, 0], t_origin[t, 1], t_origin[t, 2], t_h[t], bx, by, bz)
        if inside and not (s_radius[s] - phi_c < deepest):
            mctl[MC_BAD_GRAIN] = g
            mctl[MC_BAD_SPHERE] = s
            return -1
        n_sc = lc.collect_nodes_in_sphere(g, code, ex, ey, ez, s_radius[s], tmpl, t_node_off, t_nodes, t_areas,
                                          t_cull, g_pos, g_rot, law, k_normal, hist_off, sc_owner, sc_other, sc_hist,
                                          sc_x, sc_g, sc_delta, sc_k, sc_e, 0)
        if n_sc == 0:
            continue
        for k in range(n_sc):
            if not (sc_delta[k] < deepest):
                mctl[MC_BAD_GRAIN] = g
                mctl[MC_BAD_SPHERE] = s
                return -1
        n_touch += 1
        if g_motion[g] == MOTION_DYNAMIC:
            m_eff = g_mass[g] * s_mass[s] / (g_mass[g] + s_mass[s])
        else:
            m_eff = s_mass[s]
        n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, m_eff, zeta,
                                kt_ratio, mu_tab[g_material[g], s_material[s]], dt, step, g_pos, g_vel, g_omega,
                                g_force, g_torque, s_vel, s_omega, s_force, s_torque, G, shear, partner, last_step,
                                walls, cell, cp_x, cp_f, cp_ij, n_cp, energy, acc)
    mctl[MC_NCONTACTS] = n_touch
    return n_cp


@njit
def mixed_forces(step, dt, limit, tpl, gb, gc, gh, gs, g_pairs, gravity, cell, periodic, g_walls, wall_mat, g_acc, gctl,
                 s_pos, s_vel, s_omega, s_radius, s_mass, s_material, s_force, s_torque, sg_pairs, sg_energy, mctl):
    """Forces at the current positions, counted as step `step` by the node histories: the
    grains' own (gravity, grain pairs, walls; levelset.grain_forces), then the grain-sphere
    contacts, whose energies go to `sg_energy` (levelset_contact.E_*). False if a contact
    diverged (gctl or mctl names it)."""
    tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes, t_areas, t_radius, t_cull = tpl
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, force, torque = gb
    law, k_normal, kt_ratio, mu_tab, zeta, both = gc
    hist_off, shear, partner, last_step = gh
    sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij, energy = gs
    n_cp = grain_forces(step, dt, g_pairs, gctl[GC_NPAIRS], tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                        t_nodes, t_areas, t_radius, t_cull, pos, vel, omega, rot, mass, motion, radius, material, force,
                        torque, gravity, cell, periodic, g_walls, wall_mat, law, k_normal, kt_ratio, mu_tab, zeta, both,
                        limit, hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta,
                        sc_k, sc_e, cp_x, cp_f, cp_ij, energy, g_acc, gctl)
    if n_cp < 0:
        mctl[MC_STATUS] = MC_GRAIN_DIVERGED
        return False
    n_cp = sphere_grain_forces(step, dt, sg_pairs, mctl[MC_NPAIRS], tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                               t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, vel, omega, rot, mass, motion,
                               radius, material, force, torque, s_pos, s_vel, s_omega, s_radius, s_mass, s_material,
                               s_force, s_torque, cell, periodic, g_walls, law, k_normal, kt_ratio, mu_tab, zeta, limit,
                               hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta,
                               sc_k, sc_e, cp_x, cp_f, cp_ij, n_cp, sg_energy, g_acc, mctl)
    if n_cp < 0:
        mctl[MC_STATUS] = MC_SG_DIVERGED
        return False
    gctl[GC_NCP] = n_cp  # the grains' contact points, grain-sphere ones included (contact_network)
    return True


def sphere_grain_time_step(grains, contact, s_radius, s_mass, s_inertia):
    """2 / omega_max of the stiffest grain-sphere node contact: every node of a grain template
    that can lie inside the sphere at once (area law: k_s times the smaller of the template's area
    and the sphere's, a convex surface inside a ball having less area than the ball; node law: k_n
    per node) on the pair's reduced mass, and the nodes' tangential springs (kt_ratio k) on the
    sphere's rolling inertia (1/m + R^2/I); the smallest over templates and sphere sizes."""
    g = grains
    worst = math.inf
    kt = contact["kt_ratio"]
    for t in np.unique(g.tmpl):
        a, b = g.t_node_off[t], g.t_node_off[t + 1]
        of_t = g.tmpl == t
        dyn = of_t & (g.motion == MOTION_DYNAMIC)
        m_g = float(g.mass[dyn].min()) if np.any(dyn) else math.inf
        if contact["law"] == "area":
            K = contact["stiffness"] * np.minimum(float(g.t_areas[a:b].sum()), 4.0 * math.pi * s_radius ** 2)
        else:
            K = contact["stiffness"] * float(b - a) * np.ones_like(s_radius)
        m_eff = s_mass * m_g / (s_mass + m_g) if math.isfinite(m_g) else s_mass
        w2 = np.maximum(K / m_eff, kt * K * (1.0 / s_mass + s_radius ** 2 / s_inertia))
        worst = min(worst, float(2.0 / np.sqrt(w2.max())))
    return worst


class SphereGrainCoupling:
    """The state that joins the spheres and the grains of a mixed run: the grain-sphere pair list
    (pairs (cap, 2) of grain, grain count + sphere), the centres at its last build, the control
    record, the grains' own copies of the walls and of the accumulators (stress, wall forces,
    boundary work: each kind's passes zero and fill their own), and `energy`
    (levelset_contact.E_*): the grain-sphere contacts' energies and, in E_GRAVITY, gravity's work
    on the spheres (engine.mixed_loop; the sphere loop does not count it)."""

    STATE = ("pairs", "g_build", "s_build", "mctl", "grain_walls", "grain_acc", "energy", "grain_record",
             "sg_record")

    def __init__(self, n_grains, n_spheres, walls, n_acc):
        self.pairs = np.zeros((max(16, 4 * (n_grains + n_spheres)), 2), dtype=np.int64)
        self.g_build = np.full((n_grains, 3), np.inf)
        self.s_build = np.full((n_spheres, 3), np.inf)
        self.mctl = np.zeros(N_MC, dtype=np.int64)
        self.grain_walls = np.array(walls, dtype=np.float64)
        self.grain_acc = np.zeros(n_acc)
        self.energy = np.zeros(lc.N_ENERGY)
        # the build records (REC_*) of the grains' own list and of the grain-sphere list
        self.grain_record = np.zeros(REC_N)
        self.sg_record = np.zeros(REC_N)

    def ensure_grain_pairs(self, grains, cell, periodic, skin):
        """Rebuild the grains' own list now, growing it as needed."""
        while not rebuild_grain_list(grains.pos, grains.radius, cell, periodic, skin, grains.pairs, grains.pos_build,
                                     grains.gctl, self.grain_record):
            grains._grow_pairs()

    def ensure_pairs(self, grains, s_pos, s_radius, cell, periodic, skin):
        """Rebuild the grain-sphere list now, growing it as needed."""
        while not rebuild_sphere_grain_pairs(grains.pos, grains.radius, s_pos, s_radius, cell, periodic, skin,
                                             self.pairs, self.g_build, self.s_build, self.sg_record, self.mctl):
            self.grow()

    def grow(self):
        self.pairs = np.zeros((2 * int(self.mctl[MC_NEED]), 2), dtype=np.int64)

    def state_arrays(self):
        return {"mixed_" + name: np.array(getattr(self, name)) for name in self.STATE}

    @classmethod
    def from_state(cls, arrays, cell):
        """The coupling of a checkpoint; `cell` its cell array (the lists' build records of layouts
        that lack them: the box did not deform in such runs, so its lengths and tilts now)."""
        self = cls.__new__(cls)
        for name in cls.STATE:
            if "mixed_" + name not in arrays and name == "energy":  # older layouts: no energies booked
                self.energy = np.zeros(lc.N_ENERGY)
            elif "mixed_" + name not in arrays and name in ("grain_record", "sg_record"):
                setattr(self, name, np.concatenate([cell[CELL_L:CELL_L + 3], cell[CELL_TILT:CELL_TILT + 3]]))
            else:
                setattr(self, name, np.ascontiguousarray(np.array(arrays["mixed_" + name])))
        self.grain_walls = wall_rows(self.grain_walls)
        return self

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
    neighbour list: pairs (cap, 2) of grains whose bounding spheres are within the skin,
    pos_build (G, 3) the centres at the last rebuild.

Step (velocity Verlet, all inside run_grains):
  1. half kick: v += F/m dt/2, L += tau dt/2 (L in world axes);
  2. drift: x += v dt; the orientation by core.rotations.free_rotor (exact rotations about the
     body's principal axes, so |L| is conserved exactly in free flight);
  3. neighbour list: rebuilt when some grain's centre moved by more than half the skin since the
     last rebuild. The bounding sphere is centred at the grain's centre of mass, so a rotation never
     moves it: the translation alone bounds what the skin must cover, whatever the spin;
  4. forces: gravity, grain pairs (node-to-level-set, contact.levelset_contact) through the
     minimum image of the periodic cell (core.cell), walls; with the "hertz_curvature" law the
     whole step runs in bodies.levelset_hertz instead (one Hertzian contact row per pair), which
     reuses kick_drift, kick and rebuild from here;
  5. half kick.
Motions: MOTION_DYNAMIC; MOTION_FIXED (never moves, infinite mass); MOTION_KINEMATIC (moves with its
prescribed velocity and angular velocity whatever the forces; forces on it are still summed, so
the reaction can be read).
"""

import math

import numpy as np

from .._jit import njit
from ..contact import levelset_contact as lc
from ..core.cell import CELL_L, CELL_LO, cell_index, min_image
from ..core.rotations import free_rotor, quat_matrix, quat_to_matrix, turn_by_world_spin

MOTION_DYNAMIC, MOTION_FIXED, MOTION_KINEMATIC = 0, 1, 2
MOTIONS = {"dynamic": MOTION_DYNAMIC, "fixed": MOTION_FIXED, "kinematic": MOTION_KINEMATIC}

# layout of the int64 control record of run_grains
GC_STEP = 0        # steps done
GC_NPAIRS = 1      # listed pairs
GC_NEED = 2        # pair capacity the last rebuild needed (> capacity: the caller grows `pairs`)
GC_NCP = 3         # contact nodes at the last force evaluation
GC_NREBUILDS = 4
N_GC = 5


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
def wrap_into_cell(pos, cell, periodic):
    """Bring the centres on periodic axes into [lo, lo + L) (orthogonal cell)."""
    for k in range(3):
        if periodic[k]:
            lo = cell[CELL_LO + k]
            L = cell[CELL_L + k]
            for g in range(pos.shape[0]):
                x = pos[g, k]
                if x < lo or x >= lo + L:
                    x -= L * math.floor((x - lo) / L)
                    if x >= lo + L:
                        x -= L
                    pos[g, k] = x


@njit
def build_grain_pairs(pos, radius, cell, periodic, skin, pairs):
    """Half list of the grain pairs whose bounding spheres lie within `skin` of each other (minimum
    image on periodic axes), over a grid of bins at least the cutoff wide; returns the count (more
    than len(pairs) means: grow and call again)."""
    n = pos.shape[0]
    rmax = 0.0
    for g in range(n):
        rmax = max(rmax, radius[g])
    cutoff = 2.0 * rmax + skin
    m = np.empty(3, dtype=np.int64)
    for k in range(3):
        m[k] = max(1, min(64, int(cell[CELL_L + k] / cutoff)))
    nb = m[0] * m[1] * m[2]
    bin_of = np.empty(n, dtype=np.int64)
    count = np.zeros(nb + 1, dtype=np.int64)
    for g in range(n):
        b = (cell_index(pos[g, 0], cell[CELL_LO], cell[CELL_L], m[0]) * m[1]
             + cell_index(pos[g, 1], cell[CELL_LO + 1], cell[CELL_L + 1], m[1])) * m[2] \
            + cell_index(pos[g, 2], cell[CELL_LO + 2], cell[CELL_L + 2], m[2])
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
    seen = np.full(nb, -1, dtype=np.int64)
    k = 0
    for i in range(n):
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
                        if j <= i:
                            continue
                        ex, ey, ez = min_image(pos[j, 0] - pos[i, 0], pos[j, 1] - pos[i, 1], pos[j, 2] - pos[i, 2],
                                               Lx, Ly, Lz, periodic[0], periodic[1], periodic[2])
                        r = radius[i] + radius[j] + skin
                        if ex * ex + ey * ey + ez * ez < r * r:
                            if k < pairs.shape[0]:
                                pairs[k, 0] = i
                                pairs[k, 1] = j
                            k += 1
    return k


@njit
def grain_forces(step, dt, pairs, n_pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes,
                 t_areas, t_radius, pos, vel, omega, rot, mass, motion, radius, force, torque, gravity, cell,
                 periodic, wall_point, wall_normal, law, k_normal, kt_ratio, mu, zeta, both, hist_off, shear,
                 partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f,
                 energy):
    """Zero and assemble the forces and moments of every grain; returns the number of contact nodes.

    Pairs go through the minimum image: the nodes of one grain meet the image of the other that
    lies within half a cell, so a pair across a periodic face feels what it would in the middle."""
    n_grains = pos.shape[0]
    energy[0] = 0.0
    Lx, Ly, Lz = cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2]
    for g in range(n_grains):
        for d in range(3):
            force[g, d] = mass[g] * gravity[d] if motion[g] == MOTION_DYNAMIC else 0.0
            torque[g, d] = 0.0
    n_cp = 0
    for c in range(n_pairs):
        i = pairs[c, 0]
        j = pairs[c, 1]
        if motion[i] != MOTION_DYNAMIC and motion[j] != MOTION_DYNAMIC:
            continue
        ex, ey, ez = min_image(pos[j, 0] - pos[i, 0], pos[j, 1] - pos[i, 1], pos[j, 2] - pos[i, 2],
                               Lx, Ly, Lz, periodic[0], periodic[1], periodic[2])
        r = radius[i] + radius[j]
        if ex * ex + ey * ey + ez * ez >= r * r:
            continue
        n_sc = 0
        if both:
            n_sc = lc.collect_nodes_in(i, j, ex, ey, ez, 0.5, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                       t_node_off, t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off,
                                       sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
            n_sc = lc.collect_nodes_in(j, i, -ex, -ey, -ez, 0.5, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                       t_node_off, t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off,
                                       sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
        elif radius[i] <= radius[j]:
            n_sc = lc.collect_nodes_in(i, j, ex, ey, ez, 1.0, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                       t_node_off, t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off,
                                       sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
        else:
            n_sc = lc.collect_nodes_in(j, i, -ex, -ey, -ez, 1.0, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                       t_node_off, t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off,
                                       sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, n_sc)
        if n_sc == 0:
            continue
        if motion[i] == MOTION_DYNAMIC and motion[j] == MOTION_DYNAMIC:
            m_eff = mass[i] * mass[j] / (mass[i] + mass[j])
        elif motion[i] == MOTION_DYNAMIC:
            m_eff = mass[i]
        else:
            m_eff = mass[j]
        n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, m_eff, zeta,
                                kt_ratio, mu, dt, step, pos, vel, omega, force, torque, shear, partner,
                                last_step, wall_normal, cp_x, cp_f, n_cp, energy)
    for g in range(n_grains):
        if motion[g] != MOTION_DYNAMIC:
            continue
        for w in range(wall_point.shape[0]):
            dist = 0.0
            for d in range(3):
                dist += (pos[g, d] - wall_point[w, d]) * wall_normal[w, d]
            if dist > radius[g]:
                continue
            n_sc = lc.collect_nodes_wall(g, w, tmpl, t_node_off, t_nodes, t_areas, pos, rot, wall_point,
                                         wall_normal, law, k_normal, hist_off, sc_owner, sc_other, sc_hist,
                                         sc_x, sc_g, sc_delta, sc_k, 0)
            n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, mass[g],
                                    zeta, kt_ratio, mu, dt, step, pos, vel, omega, force, torque, shear,
                                    partner, last_step, wall_normal, cp_x, cp_f, n_cp, energy)
    return n_cp


@njit
def max_drift2(pos, pos_build, cell, periodic):
    """Largest squared displacement of a centre since the last rebuild (minimum image)."""
    Lx, Ly, Lz = cell[CELL_L], cell[CELL_L + 1], cell[CELL_L + 2]
    worst = 0.0
    for g in range(pos.shape[0]):
        dx, dy, dz = min_image(pos[g, 0] - pos_build[g, 0], pos[g, 1] - pos_build[g, 1], pos[g, 2] - pos_build[g, 2],
                               Lx, Ly, Lz, periodic[0], periodic[1], periodic[2])
        worst = max(worst, dx * dx + dy * dy + dz * dz)
    return worst


@njit
def rebuild(pos, radius, cell, periodic, skin, pairs, pos_build, gctl):
    """Wrap the centres, list the pairs and remember where the centres were; False if `pairs` must grow."""
    wrap_into_cell(pos, cell, periodic)
    k = build_grain_pairs(pos, radius, cell, periodic, skin, pairs)
    gctl[GC_NEED] = k
    if k > pairs.shape[0]:
        return False
    gctl[GC_NPAIRS] = k
    gctl[GC_NREBUILDS] += 1
    for g in range(pos.shape[0]):
        for d in range(3):
            pos_build[g, d] = pos[g, d]
    return True


@njit
def kick_drift(dt, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, Lb, R):
    """Steps 1-2 of a step: half kick, drift and the rotations; Lb (3,), R (3, 3) are scratch."""
    hdt = 0.5 * dt
    for g in range(pos.shape[0]):
        if motion[g] == MOTION_DYNAMIC:
            for d in range(3):
                vel[g, d] += force[g, d] / mass[g] * hdt
                angmom[g, d] += torque[g, d] * hdt
                pos[g, d] += vel[g, d] * dt
            quat_to_matrix(quat[g], R)
            for a in range(3):
                Lb[a] = R[0, a] * angmom[g, 0] + R[1, a] * angmom[g, 1] + R[2, a] * angmom[g, 2]
            free_rotor(quat[g], Lb, inertia[g], dt)
            # L in world axes is unchanged by a free rotation: Lb only moved with the body
        elif motion[g] == MOTION_KINEMATIC:
            for d in range(3):
                pos[g, d] += vel[g, d] * dt
            turn_by_world_spin(quat[g], omega[g, 0], omega[g, 1], omega[g, 2], dt)
    update_rotations(quat, rot, angmom, inertia, omega, motion)


@njit
def kick(dt, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque):
    """Step 5 of a step: the second half kick and the rotations."""
    hdt = 0.5 * dt
    for g in range(vel.shape[0]):
        if motion[g] == MOTION_DYNAMIC:
            for d in range(3):
                vel[g, d] += force[g, d] / mass[g] * hdt
                angmom[g, d] += torque[g, d] * hdt
    update_rotations(quat, rot, angmom, inertia, omega, motion)


@njit
def run_grains(n_steps, dt, skin, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes, t_areas,
               t_radius, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, force, torque, gravity,
               cell, periodic, wall_point, wall_normal, law, k_normal, kt_ratio, mu, zeta, both, hist_off, shear,
               partner, last_step, pairs, pos_build, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e,
               cp_x, cp_f, energy, gctl):
    """Advance up to n_steps steps; returns the number done (fewer when `pairs` must grow: the caller
    grows it and calls again, the step in hand is redone from its start)."""
    Lb = np.empty(3)
    R = np.empty((3, 3))
    half_skin2 = 0.25 * skin * skin
    for it in range(n_steps):
        if max_drift2(pos, pos_build, cell, periodic) > half_skin2:
            if not rebuild(pos, radius, cell, periodic, skin, pairs, pos_build, gctl):
                return it
        step = gctl[GC_STEP] + 1
        kick_drift(dt, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, Lb, R)
        gctl[GC_NCP] = grain_forces(step, dt, pairs, gctl[GC_NPAIRS], tmpl, t_phi, t_phi_off, t_shape, t_origin,
                                    t_h, t_node_off, t_nodes, t_areas, t_radius, pos, vel, omega, rot, mass, motion,
                                    radius, force, torque, gravity, cell, periodic, wall_point, wall_normal, law,
                                    k_normal, kt_ratio, mu, zeta, both, hist_off, shear, partner, last_step,
                                    sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, cp_x, cp_f,
                                    energy)
        kick(dt, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque)
        gctl[GC_STEP] = step
    return n_steps


class LevelSetBodies:
    """The rigid level-set grains of a Simulation: templates, grain arrays, node histories, kernels.

    Built by Simulation.setup from the grains added with Simulation.add_grains; `contact` holds the
    node law's settings (Simulation.set_grain_contact)."""

    STATE = ("t_phi", "t_phi_off", "t_shape", "t_origin", "t_h", "t_node_off", "t_nodes", "t_areas", "t_radius",
             "material", "tmpl", "motion", "pos", "vel", "omega", "angmom", "quat", "rot", "force", "torque", "mass",
             "inertia", "radius", "hist_off", "shear", "partner", "last_step", "pairs", "pos_build", "gctl",
             "energy")

    def __init__(self, templates, batches, materials):
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
        self.angmom = np.zeros((G, 3))
        for g in range(G):
            if self.motion[g] == MOTION_DYNAMIC:
                R = quat_matrix(self.quat[g])
                self.angmom[g] = R @ (self.inertia[g] * (R.T @ self.omega[g]))
            elif self.motion[g] == MOTION_FIXED:
                self.vel[g] = 0.0
                self.omega[g] = 0.0
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
        self.energy = np.zeros(1)
        self.hertz = None  # the rows of the "hertz_curvature" law (bodies.levelset_hertz.HertzRows), if it runs
        self._scratch()
        update_rotations(self.quat, self.rot, self.angmom, self.inertia, self.omega, self.motion)

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
        self.cp_x = np.zeros((100_000, 3))
        self.cp_f = np.zeros((100_000, 3))

    @property
    def n(self):
        return len(self.pos)

    def _template_args(self):
        return (self.tmpl, self.t_phi, self.t_phi_off, self.t_shape, self.t_origin, self.t_h, self.t_node_off,
                self.t_nodes, self.t_areas, self.t_radius)

    def _contact_args(self, c):
        return (c["law_code"], c["stiffness"], c["kt_ratio"], c["mu"], c["damping_ratio"], c["contact"] == "both")

    def _scratch_args(self):
        return (self.sc_owner, self.sc_other, self.sc_hist, self.sc_x, self.sc_g, self.sc_delta, self.sc_k,
                self.sc_e, self.cp_x, self.cp_f, self.energy)

    def ensure_pairs(self, cell, periodic, skin):
        while not rebuild(self.pos, self.radius, cell, periodic, skin, self.pairs, self.pos_build, self.gctl):
            self.pairs = np.zeros((2 * int(self.gctl[GC_NEED]), 2), dtype=np.int64)

    def forces(self, dt, gravity, cell, periodic, walls, contact, skin):
        """Forces at the current state (before the first step, and after a restart that lost them)."""
        if self.hertz is not None:  # the "hertz_curvature" law: its own pass (bodies.levelset_hertz)
            return self.hertz.forces(self, dt, gravity, cell, periodic, walls, contact, skin)
        self.ensure_pairs(cell, periodic, skin)
        self.gctl[GC_NCP] = grain_forces(
            int(self.gctl[GC_STEP]), dt, self.pairs, int(self.gctl[GC_NPAIRS]), *self._template_args(), self.pos,
            self.vel, self.omega, self.rot, self.mass, self.motion, self.radius, self.force, self.torque, gravity,
            cell, periodic, *_wall_planes(walls), *self._contact_args(contact), self.hist_off, self.shear,
            self.partner, self.last_step, *self._scratch_args())

    def run(self, steps, dt, gravity, cell, periodic, walls, contact, skin):
        if self.hertz is not None:
            return self.hertz.run(self, steps, dt, gravity, cell, periodic, walls, contact, skin)
        left = int(steps)
        while left > 0:
            done = run_grains(left, dt, skin, *self._template_args(), self.pos, self.vel, self.quat, self.rot,
                              self.angmom, self.omega, self.mass, self.inertia, self.motion, self.radius, self.force,
                              self.torque, gravity, cell, periodic, *_wall_planes(walls),
                              *self._contact_args(contact), self.hist_off, self.shear, self.partner,
                              self.last_step, self.pairs, self.pos_build, *self._scratch_args(), self.gctl)
            left -= done
            if left > 0 and self.gctl[GC_NEED] > len(self.pairs):
                self.pairs = np.zeros((2 * int(self.gctl[GC_NEED]), 2), dtype=np.int64)

    # ---------------------------------------------------------------- diagnostics (read-only)
    def kinetic_energy(self):
        """Translational + rotational kinetic energy of the dynamic grains."""
        dyn = self.motion == MOTION_DYNAMIC
        e = 0.5 * np.sum(self.mass[dyn] * np.sum(self.vel[dyn] ** 2, axis=1))
        for g in np.flatnonzero(dyn):
            Lb = self.rot[g].T @ self.angmom[g]
            e += 0.5 * np.sum(Lb * Lb / self.inertia[g])
        return float(e)

    def contact_energy(self):
        """Normal penalty energy sum k_i delta_i^2 / 2 at the last force evaluation."""
        return float(self.energy[0])

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

    def surfaces(self):
        """World-frame marching-cubes surfaces of all grains: (vertices, triangles, grain_id)."""
        verts, tris, gid = [], [], []
        nv = 0
        for g, t in enumerate(self.tmpl):
            T = self.templates[t]
            v = T.surface_vertices @ self.rot[g].T + self.pos[g]
            verts.append(v)
            tris.append(T.surface_faces + nv)
            gid.append(np.full(len(v), g))
            nv += len(v)
        return np.concatenate(verts), np.concatenate(tris), np.concatenate(gid)

    def write_vtk(self, prefix):
        """Write `prefix`_surfaces.vtu (grain surfaces) and `prefix`_contacts.vtu (contact points)."""
        from ..io import vtk

        v, f, gid = self.surfaces()
        vtk.write_surface(f"{prefix}_surfaces.vtu", v, f, point_data={"grain": gid})
        x, fc = self.contact_points()
        vtk.write_particles(f"{prefix}_contacts.vtu", x, point_data={"force": fc})

    # ---------------------------------------------------------------- state
    def state_arrays(self):
        d = {"grain_" + name: np.array(getattr(self, name)) for name in self.STATE}
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
            setattr(self, name, np.ascontiguousarray(np.array(arrays["grain_" + name])))
        self._scratch()
        return self


def _wall_planes(walls):
    """(points, inward normals) of the Simulation's wall rows (shaped grains see them as fixed planes)."""
    w = np.asarray(walls).reshape(-1, 12)
    return np.ascontiguousarray(w[:, 0:3]), np.ascontiguousarray(w[:, 3:6])


def node_contact_time_step(mass, stiffness):
    """sqrt(m / k): the period / 2 pi of a mass m on a spring k (the critical step of a node contact
    is 2 sqrt(m / k); use a fraction of it)."""
    return math.sqrt(float(mass) / float(stiffness))

"""A small level-set DEM simulation: rigid grains of any shape, planar walls, node-to-level-set contact.

    sim = LevelSetSimulation(dt=1e-5, law="area", stiffness=1e9, mu=0.5, damping_ratio=0.1)
    g = sim.add_grain(LevelSetGrain.ellipsoid(2e-3, 1e-3, 1e-3), position=(0, 0, 5e-3), density=2500)
    sim.add_wall(point=(0, 0, 0), normal=(0, 0, 1))
    sim.run(1000)

Step (velocity Verlet; the whole loop runs inside one numba function):
  1. half kick: v += F/m dt/2, L += tau dt/2 (L = world angular momentum);
  2. drift: x += v dt; orientation by the symmetric free-rotor splitting about the body principal axes
     (x: dt/2, y: dt/2, z: dt, y: dt/2, x: dt/2; Dullweber, Leimkuhler & McLachlan 1997): each sub-step is
     an exact rotation about one body axis, so |L| and L itself are conserved exactly in free flight and
     the energy error stays bounded (symplectic, time-reversible);
  3. broad phase: bounding spheres (max node radius + 2 h) hashed into a cell list (cell = largest
     bounding diameter), candidate pairs by overlap of the spheres; grains vs walls by plane distance;
  4. narrow phase and forces (graindem.contact.levelset_contact); gravity;
  5. half kick.
Grain kinds: "dynamic"; "fixed" (never moves, infinite mass); "kinematic" (moves with its prescribed
velocity and angular velocity whatever the forces, e.g. an indenter; forces on it are still recorded,
so the reaction can be read).
Contact frames: every contact point is the node position; the reaction acts on the other grain at the same
point, so forces and moments balance exactly (linear and angular momentum are conserved to round-off).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from ..contact import levelset_contact as lc
from ..core.rotations import free_rotor, quat_matrix, quat_to_matrix, turn_by_world_spin

KIND_DYNAMIC, KIND_FIXED, KIND_KINEMATIC = 0, 1, 2
KINDS = {"dynamic": KIND_DYNAMIC, "fixed": KIND_FIXED, "kinematic": KIND_KINEMATIC}


@njit
def _update_rotations(quat, rot, angmom, inertia, omega, kind):
    R = np.empty((3, 3))
    for g in range(quat.shape[0]):
        n = math.sqrt(quat[g, 0] ** 2 + quat[g, 1] ** 2 + quat[g, 2] ** 2 + quat[g, 3] ** 2)
        for c in range(4):
            quat[g, c] /= n
        quat_to_matrix(quat[g], R)
        for a in range(3):
            for b in range(3):
                rot[g, a, b] = R[a, b]
        if kind[g] == KIND_DYNAMIC:
            # omega = R I^-1 R^T L
            lb0 = R[0, 0] * angmom[g, 0] + R[1, 0] * angmom[g, 1] + R[2, 0] * angmom[g, 2]
            lb1 = R[0, 1] * angmom[g, 0] + R[1, 1] * angmom[g, 1] + R[2, 1] * angmom[g, 2]
            lb2 = R[0, 2] * angmom[g, 0] + R[1, 2] * angmom[g, 1] + R[2, 2] * angmom[g, 2]
            wb0 = lb0 / inertia[g, 0]
            wb1 = lb1 / inertia[g, 1]
            wb2 = lb2 / inertia[g, 2]
            for a in range(3):
                omega[g, a] = R[a, 0] * wb0 + R[a, 1] * wb1 + R[a, 2] * wb2


@njit
def _broad_phase(pos, radius, n_grains, pairs):
    """Candidate pairs (i < j) whose bounding spheres overlap, via a hashed cell list.

    Returns the count; if it exceeds len(pairs) the caller grows the buffer and calls again.
    """
    rmax = 0.0
    for g in range(n_grains):
        rmax = max(rmax, radius[g])
    cell = 2.0 * rmax
    if cell <= 0.0:
        return 0
    nb = 1
    while nb < 2 * n_grains:
        nb *= 2
    ci = np.empty((n_grains, 3), dtype=np.int64)
    key = np.empty(n_grains, dtype=np.int64)
    for g in range(n_grains):
        for d in range(3):
            ci[g, d] = int(math.floor(pos[g, d] / cell))
        key[g] = ((ci[g, 0] * 73856093) ^ (ci[g, 1] * 19349663) ^ (ci[g, 2] * 83492791)) & (nb - 1)
    order = np.argsort(key)
    start = np.full(nb + 1, -1, dtype=np.int64)
    count = np.zeros(nb, dtype=np.int64)
    for g in range(n_grains):
        count[key[g]] += 1
    head = np.zeros(nb + 1, dtype=np.int64)
    for b in range(nb):
        head[b + 1] = head[b] + count[b]
    n = 0
    for i in range(n_grains):
        for dx in range(-1, 2):
            for dy in range(-1, 2):
                for dz in range(-1, 2):
                    cx = ci[i, 0] + dx
                    cy = ci[i, 1] + dy
                    cz = ci[i, 2] + dz
                    b = ((cx * 73856093) ^ (cy * 19349663) ^ (cz * 83492791)) & (nb - 1)
                    for t in range(head[b], head[b + 1]):
                        j = order[t]
                        if j <= i:
                            continue
                        # buckets are shared by hash collisions: keep j only from its own cell
                        if ci[j, 0] != cx or ci[j, 1] != cy or ci[j, 2] != cz:
                            continue
                        r = radius[i] + radius[j]
                        d2 = 0.0
                        for d in range(3):
                            e = pos[j, d] - pos[i, d]
                            d2 += e * e
                        if d2 < r * r:
                            if n < pairs.shape[0]:
                                pairs[n, 0] = i
                                pairs[n, 1] = j
                            n += 1
    return n


@njit
def _compute_forces(step, dt, pairs, n_pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                    t_nodes, t_areas, t_radius, pos, vel, omega, rot, mass, kind, radius, force, torque,
                    gravity, wall_point, wall_normal, law, k_normal, kt_ratio, mu, zeta, both, hist_off,
                    shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k,
                    cp_x, cp_f, energy):
    """Zero and assemble forces and moments of every grain; returns the number of contact nodes."""
    n_grains = pos.shape[0]
    energy[0] = 0.0
    for g in range(n_grains):
        for d in range(3):
            force[g, d] = mass[g] * gravity[d] if kind[g] == KIND_DYNAMIC else 0.0
            torque[g, d] = 0.0
    n_cp = 0
    for c in range(n_pairs):
        i = pairs[c, 0]
        j = pairs[c, 1]
        if kind[i] != KIND_DYNAMIC and kind[j] != KIND_DYNAMIC:
            continue
        n_sc = 0
        if both:
            n_sc = lc.collect_nodes_in(i, j, 0.5, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                                        t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off, sc_owner,
                                        sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, n_sc)
            n_sc = lc.collect_nodes_in(j, i, 0.5, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                                        t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off, sc_owner,
                                        sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, n_sc)
        else:
            o, p = (i, j) if radius[i] <= radius[j] else (j, i)
            n_sc = lc.collect_nodes_in(o, p, 1.0, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off,
                                        t_nodes, t_areas, t_radius, pos, rot, law, k_normal, hist_off, sc_owner,
                                        sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, n_sc)
        if n_sc == 0:
            continue
        if kind[i] == KIND_DYNAMIC and kind[j] == KIND_DYNAMIC:
            m_eff = mass[i] * mass[j] / (mass[i] + mass[j])
        elif kind[i] == KIND_DYNAMIC:
            m_eff = mass[i]
        else:
            m_eff = mass[j]
        n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, m_eff, zeta,
                                 kt_ratio, mu, dt, step, pos, vel, omega, force, torque, shear, partner,
                                 last_step, wall_normal, cp_x, cp_f, n_cp, energy)
    for g in range(n_grains):
        if kind[g] != KIND_DYNAMIC:
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
            n_cp = lc.apply_scratch(n_sc, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, mass[g],
                                     zeta, kt_ratio, mu, dt, step, pos, vel, omega, force, torque, shear,
                                     partner, last_step, wall_normal, cp_x, cp_f, n_cp, energy)
    return n_cp


@njit
def _run(n_steps, step0, dt, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h, t_node_off, t_nodes, t_areas,
         t_radius, pos, vel, quat, rot, angmom, omega, mass, inertia, kind, radius, force, torque, gravity,
         wall_point, wall_normal, law, k_normal, kt_ratio, mu, zeta, both, hist_off, shear, partner, last_step,
         pairs, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, cp_x, cp_f, energy, counters):
    """Advance n_steps; returns the number of steps done (fewer if the pair buffer must grow).

    counters: [contact nodes at the last step, candidate pairs at the last step, needed pair capacity].
    """
    n_grains = pos.shape[0]
    Lb = np.empty(3)
    R = np.empty((3, 3))
    hdt = 0.5 * dt
    for it in range(n_steps):
        step = step0 + it + 1
        for g in range(n_grains):
            if kind[g] == KIND_DYNAMIC:
                for d in range(3):
                    vel[g, d] += force[g, d] / mass[g] * hdt
                    angmom[g, d] += torque[g, d] * hdt
                    pos[g, d] += vel[g, d] * dt
                quat_to_matrix(quat[g], R)
                for a in range(3):
                    Lb[a] = R[0, a] * angmom[g, 0] + R[1, a] * angmom[g, 1] + R[2, a] * angmom[g, 2]
                free_rotor(quat[g], Lb, inertia[g], dt)
            elif kind[g] == KIND_KINEMATIC:
                for d in range(3):
                    pos[g, d] += vel[g, d] * dt
                turn_by_world_spin(quat[g], omega[g, 0], omega[g, 1], omega[g, 2], dt)
        _update_rotations(quat, rot, angmom, inertia, omega, kind)
        n_pairs = _broad_phase(pos, radius, n_grains, pairs)
        if n_pairs > pairs.shape[0]:
            counters[2] = n_pairs
            # undo nothing: the caller grows the buffer and recomputes forces for this configuration
            return it + 1
        counters[1] = n_pairs
        counters[0] = _compute_forces(step, dt, pairs, n_pairs, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                                      t_node_off, t_nodes, t_areas, t_radius, pos, vel, omega, rot, mass, kind,
                                      radius, force, torque, gravity, wall_point, wall_normal, law, k_normal,
                                      kt_ratio, mu, zeta, both, hist_off, shear, partner, last_step, sc_owner,
                                      sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, cp_x, cp_f, energy)
        for g in range(n_grains):
            if kind[g] == KIND_DYNAMIC:
                for d in range(3):
                    vel[g, d] += force[g, d] / mass[g] * hdt
                    angmom[g, d] += torque[g, d] * hdt
        _update_rotations(quat, rot, angmom, inertia, omega, kind)
    return n_steps


def _vec3(name, value):
    v = np.asarray(value, dtype=np.float64).reshape(-1)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    return v


class LevelSetSimulation:
    """Rigid level-set grains with walls (see the module docstring).

    Parameters
    ----------
    dt : time step [s], > 0.
    law : "area" (Feldfogel: stiffness in Pa/m, traction per unit node area) or "node" (Kawamoto: N/m per
        node).
    stiffness : k_s (area) or k_n (node), > 0.
    mu : Coulomb friction coefficient, >= 0.
    kt_ratio : tangential / normal node stiffness, > 0 (default 2/7... any value in (0, 10]).
    damping_ratio : zeta in [0, 1] of each contact treated as a linear oscillator.
    contact : "both" (every grain's nodes in the other's level set, half weight each) or "one" (only the
        nodes of the grain with the smaller bounding radius).
    gravity : 3-vector [m/s^2].
    """

    def __init__(self, *, dt, law="area", stiffness, mu=0.0, kt_ratio=2.0 / 7.0, damping_ratio=0.0,
                 contact="both", gravity=(0.0, 0.0, 0.0), contact_point_capacity=100_000):
        dt = float(dt)
        if not math.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be a finite number > 0, got {dt!r}")
        if law not in lc.LAWS:
            raise ValueError(f"law must be one of {sorted(lc.LAWS)}, got {law!r}")
        k = float(stiffness)
        if not math.isfinite(k) or k <= 0:
            raise ValueError(f"stiffness must be a finite number > 0, got {stiffness!r}")
        mu = float(mu)
        if not math.isfinite(mu) or mu < 0:
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        kt_ratio = float(kt_ratio)
        if not math.isfinite(kt_ratio) or not (0 < kt_ratio <= 10):
            raise ValueError(f"kt_ratio must lie in (0, 10], got {kt_ratio!r}")
        zeta = float(damping_ratio)
        if not math.isfinite(zeta) or not (0 <= zeta <= 1):
            raise ValueError(f"damping_ratio must lie in [0, 1], got {damping_ratio!r}")
        if contact not in ("both", "one"):
            raise ValueError(f"contact must be 'both' or 'one', got {contact!r}")
        self.dt, self.law, self.stiffness, self.mu, self.kt_ratio, self.zeta = dt, law, k, mu, kt_ratio, zeta
        self.contact = contact
        self.gravity = _vec3("gravity", gravity)
        self.templates = []
        self._tmpl_index = {}
        self._grains = []  # (template index, pos, quat, vel, omega, density, kind)
        self._walls = []
        self.step_count = 0
        self.time = 0.0
        self._built = False
        self._cp_capacity = int(contact_point_capacity)

    # ---------------------------------------------------------- scene
    def add_grain(self, template, position, *, quaternion=(1.0, 0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
                  angular_velocity=(0.0, 0.0, 0.0), density=1.0, kind="dynamic"):
        """Add a grain (a LevelSetGrain template placed at `position`); returns its index."""
        if self._built:
            raise ValueError("add_grain must be called before the first run()")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        density = float(density)
        if not math.isfinite(density) or density <= 0:
            raise ValueError(f"density must be a finite number > 0, got {density!r}")
        q = np.asarray(quaternion, dtype=np.float64).reshape(-1)
        if q.shape != (4,) or not np.all(np.isfinite(q)) or np.linalg.norm(q) == 0:
            raise ValueError(f"quaternion must be 4 finite numbers, not all zero, got {quaternion!r}")
        key = id(template)
        if key not in self._tmpl_index:
            self._tmpl_index[key] = len(self.templates)
            self.templates.append(template)
        self._grains.append((self._tmpl_index[key], _vec3("position", position), q / np.linalg.norm(q),
                             _vec3("velocity", velocity), _vec3("angular_velocity", angular_velocity), density,
                             KINDS[kind]))
        return len(self._grains) - 1

    def add_wall(self, point, normal):
        """Plane through `point`, `normal` pointing into the region where grains live."""
        if self._built:
            raise ValueError("add_wall must be called before the first run()")
        n = _vec3("normal", normal)
        if np.linalg.norm(n) == 0:
            raise ValueError("normal must be non-zero")
        self._walls.append((_vec3("point", point), n / np.linalg.norm(n)))
        return len(self._walls) - 1

    def _build(self):
        T = self.templates
        if not self._grains:
            raise ValueError("add at least one grain before run()")
        self.t_phi = np.concatenate([t.phi_grid.ravel() for t in T])
        self.t_phi_off = np.cumsum([0] + [t.phi_grid.size for t in T])[:-1].astype(np.int64)
        self.t_shape = np.array([t.grid_shape for t in T], dtype=np.int64)
        self.t_origin = np.array([t.grid_origin for t in T], dtype=np.float64)
        self.t_h = np.array([t.spacing for t in T], dtype=np.float64)
        self.t_node_off = np.cumsum([0] + [t.n_nodes for t in T]).astype(np.int64)
        self.t_nodes = np.ascontiguousarray(np.concatenate([t.nodes for t in T]))
        self.t_areas = np.concatenate([t.areas for t in T])
        self.t_radius = np.array([t.bounding_radius for t in T], dtype=np.float64)
        G = len(self._grains)
        self.tmpl = np.array([g[0] for g in self._grains], dtype=np.int64)
        self.pos = np.array([g[1] for g in self._grains])
        self.quat = np.array([g[2] for g in self._grains])
        self.vel = np.array([g[3] for g in self._grains])
        self.kind = np.array([g[6] for g in self._grains], dtype=np.int64)
        dens = np.array([g[5] for g in self._grains])
        self.mass = np.array([T[t].volume for t in self.tmpl]) * dens
        self.inertia = np.array([T[t].inertia for t in self.tmpl]) * dens[:, None]
        self.radius = self.t_radius[self.tmpl] + 2.0 * self.t_h[self.tmpl]
        self.rot = np.zeros((G, 3, 3))
        self.omega = np.array([g[4] for g in self._grains])
        self.angmom = np.zeros((G, 3))
        for g in range(G):
            if self.kind[g] == KIND_DYNAMIC:
                R = quat_matrix(self.quat[g])
                self.angmom[g] = R @ (self.inertia[g] * (R.T @ self.omega[g]))
            elif self.kind[g] == KIND_FIXED:
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
        self.wall_point = np.array([w[0] for w in self._walls]).reshape(-1, 3)
        self.wall_normal = np.array([w[1] for w in self._walls]).reshape(-1, 3)
        self.pairs = np.zeros((max(16, 8 * G), 2), dtype=np.int64)
        m = 2 * int(max(t.n_nodes for t in T))
        self.sc_owner = np.zeros(m, dtype=np.int64)
        self.sc_other = np.zeros(m, dtype=np.int64)
        self.sc_hist = np.zeros(m, dtype=np.int64)
        self.sc_x = np.zeros((m, 3))
        self.sc_g = np.zeros((m, 3))
        self.sc_delta = np.zeros(m)
        self.sc_k = np.zeros(m)
        self.cp_x = np.zeros((self._cp_capacity, 3))
        self.cp_f = np.zeros((self._cp_capacity, 3))
        self.energy = np.zeros(1)
        self.counters = np.zeros(3, dtype=np.int64)
        self._law_code = lc.LAWS[self.law]
        self._built = True
        _update_rotations(self.quat, self.rot, self.angmom, self.inertia, self.omega, self.kind)
        self._forces()

    def _args(self):
        return (self.tmpl, self.t_phi, self.t_phi_off, self.t_shape, self.t_origin, self.t_h, self.t_node_off,
                self.t_nodes, self.t_areas, self.t_radius)

    def _forces(self):
        while True:
            n = _broad_phase(self.pos, self.radius, len(self.pos), self.pairs)
            if n <= len(self.pairs):
                break
            self.pairs = np.zeros((2 * n, 2), dtype=np.int64)
        self.counters[1] = n
        self.counters[0] = _compute_forces(
            self.step_count, self.dt, self.pairs, n, *self._args(), self.pos, self.vel, self.omega, self.rot,
            self.mass, self.kind, self.radius, self.force, self.torque, self.gravity, self.wall_point,
            self.wall_normal, self._law_code, self.stiffness, self.kt_ratio, self.mu, self.zeta,
            self.contact == "both", self.hist_off, self.shear, self.partner, self.last_step, self.sc_owner,
            self.sc_other, self.sc_hist, self.sc_x, self.sc_g, self.sc_delta, self.sc_k, self.cp_x, self.cp_f,
            self.energy)

    # ---------------------------------------------------------- running
    def run(self, n_steps):
        """Advance n_steps time steps."""
        if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 0:
            raise ValueError(f"n_steps must be an integer >= 0, got {n_steps!r}")
        if not self._built:
            self._build()
        left = int(n_steps)
        while left > 0:
            done = _run(left, self.step_count, self.dt, *self._args(), self.pos, self.vel, self.quat, self.rot,
                        self.angmom, self.omega, self.mass, self.inertia, self.kind, self.radius, self.force,
                        self.torque, self.gravity, self.wall_point, self.wall_normal, self._law_code,
                        self.stiffness, self.kt_ratio, self.mu, self.zeta, self.contact == "both",
                        self.hist_off, self.shear, self.partner, self.last_step, self.pairs, self.sc_owner,
                        self.sc_other, self.sc_hist, self.sc_x, self.sc_g, self.sc_delta, self.sc_k, self.cp_x,
                        self.cp_f, self.energy, self.counters)
            self.step_count += done
            self.time += done * self.dt
            left -= done
            if self.counters[2] > len(self.pairs):
                # the step's drift is done; grow the pair buffer, then finish it (forces + second kick)
                self.pairs = np.zeros((2 * int(self.counters[2]), 2), dtype=np.int64)
                self.counters[2] = 0
                self._forces()
                hdt = 0.5 * self.dt
                dyn = self.kind == KIND_DYNAMIC
                self.vel[dyn] += self.force[dyn] / self.mass[dyn, None] * hdt
                self.angmom[dyn] += self.torque[dyn] * hdt
                _update_rotations(self.quat, self.rot, self.angmom, self.inertia, self.omega, self.kind)

    def set_kinematic_velocity(self, grain, velocity=None, angular_velocity=None):
        """Prescribe the velocity / angular velocity of a kinematic grain (world frame)."""
        if not self._built:
            self._build()
        if self.kind[grain] != KIND_KINEMATIC:
            raise ValueError(f"grain {grain} is not kinematic")
        if velocity is not None:
            self.vel[grain] = _vec3("velocity", velocity)
        if angular_velocity is not None:
            self.omega[grain] = _vec3("angular_velocity", angular_velocity)

    # ---------------------------------------------------------- diagnostics (read-only)
    def ensure_built(self):
        if not self._built:
            self._build()

    def kinetic_energy(self):
        """Translational + rotational kinetic energy of the dynamic grains."""
        self.ensure_built()
        dyn = self.kind == KIND_DYNAMIC
        e = 0.5 * np.sum(self.mass[dyn] * np.sum(self.vel[dyn] ** 2, axis=1))
        for g in np.flatnonzero(dyn):
            Lb = self.rot[g].T @ self.angmom[g]
            e += 0.5 * np.sum(Lb * Lb / self.inertia[g])
        return float(e)

    def contact_energy(self):
        """Normal penalty energy sum k_i delta_i^2 / 2 at the last force evaluation."""
        return float(self.energy[0])

    def momentum(self):
        self.ensure_built()
        dyn = self.kind == KIND_DYNAMIC
        return (self.mass[dyn, None] * self.vel[dyn]).sum(axis=0)

    def angular_momentum(self, about=(0.0, 0.0, 0.0)):
        """Total angular momentum of the dynamic grains about a point."""
        self.ensure_built()
        o = _vec3("about", about)
        dyn = self.kind == KIND_DYNAMIC
        orb = np.cross(self.pos[dyn] - o, self.mass[dyn, None] * self.vel[dyn]).sum(axis=0)
        return orb + self.angmom[dyn].sum(axis=0)

    def contact_points(self):
        """(points (m, 3), forces on the node's grain (m, 3)) of the last force evaluation."""
        self.ensure_built()
        n = min(int(self.counters[0]), len(self.cp_x))
        return self.cp_x[:n].copy(), self.cp_f[:n].copy()

    def surfaces(self):
        """World-frame marching-cubes surfaces of all grains: (vertices, triangles, grain_id)."""
        self.ensure_built()
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


def critical_time_step(mass, stiffness):
    """sqrt(m / k): the period / 2 pi of a mass m on a spring k; use a fraction (0.1-0.2) of it."""
    return math.sqrt(float(mass) / float(stiffness))

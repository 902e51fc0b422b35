"""The "hertz_curvature" law for the grain-sphere contacts of a run with spheres and level-set grains.

A grain-sphere pair whose material pair takes the law (the grain's material with the sphere's,
`HertzRows.laws`) is one Hertzian contact row, the rows of the grains' own pairs
(`bodies.levelset_hertz`) with the sphere as body B of the geometry: its level set is the analytic
|x - c| - R (`contact.shape_geometry.BODY_SPHERE`), so Newton's point is where the grain's outward
normal points at the sphere's centre, the overlap is R minus the grain's level set at the centre
along that normal, and the relative curvatures are the grain's principal curvatures there plus 1/R
in both directions. Everything else is the grain-grain row's (`levelset_hertz.row_kinematics`,
`row_law`): the warm start, the node search when cold (every surface node of the grain against the
sphere's exact distance: a sphere at least a node spacing wide cannot slip between nodes
undetected), the frame quaternion turned by tilt and the mean spin, the shift from the relative
velocity of the two material points, the tangential law at R* = 1 scaled by sqrt(R) with R the
radius rule's, bounded by curvature_limit x R_ref (R_ref: the volume-equivalent radius of the grain
in series with the sphere's), the normal damping on the pair's reduced mass, the material pair's
record and friction (the grains' `HertzRows.mtab`).

Pairs whose material pair takes the node law go, in the same force pass, to the node-to-level-set
contacts of `bodies.mixed.sphere_grain_forces` (listed first, so that its zeroing of the
grain-sphere energy record comes before the rows add theirs).

Rows are parallel to the grain-sphere pair list (`SphereGrainCoupling.pairs`) and keyed by (grain,
grain count + sphere); at each rebuild of that list they are carried to their pairs' new positions
(`levelset_hertz.carry_rows`). Their histories live in a store of their own (`SphereGrainHertz.
store`), all of it in the checkpoint (arrays "sg_hertz_*"), so a restart continues bit for bit.
Energies: the rows add their Hertz normal energy and sliding count to the grain-sphere record
(`SphereGrainCoupling.energy`) at each force evaluation; their tangential energy, work and
dissipation are read from the rows (`SphereGrainHertz.energies`).
"""

import math

import numpy as np

from .._jit import njit
from ..contact import levelset_contact as lc
from ..contact import shape_geometry as SG
from ..contact import state as S
from ..contact.laws import law_id
from ..contact.store import HistoryStore
from ..core.cell import CELL_RATE, CELL_SHEAR_RATE, is_sheared
from .levelset import MOTION_DYNAMIC
from .levelset_hertz import (A_DISS, A_VISC, A_WORK, H_SCALE, H_WARM, LAW_NODE, N_HACC, N_HROW, carry_rows, new_rows,
                             push, record_point, row_energies, row_kinematics, row_law, template_coef)
from .mixed import MC_BAD_GRAIN, MC_BAD_SPHERE, MC_NCONTACTS, sphere_branch, sphere_grain_forces


@njit(inline="always")
def sphere_grain_hertz_forces(law_step, count, step, dt, limit, sg_pairs, n_pairs, tmpls, grains, lawp, nodes, spheres,
                              sgrows, cell, periodic, walls, acc, cp_x, cp_f, cp_ij, n_cp, sg_energy, node_pairs, mctl):
    """Add the forces of the grain-sphere contacts to both kinds (module docstring): the node-law
    pairs by `mixed.sphere_grain_forces`, then the rows. Returns the count of contact points (n_cp
    on entry plus these), or -1 when a contact diverged (mctl names the pair: a row's overlap
    beyond `limit` times the smaller of the grain's and the sphere's radius, or the node pass's
    rule). Argument groups: the grains' HertzRows groups (tmpls, grains, lawp, nodes), spheres =
    (pos, vel, omega, radius, mass, material, force, torque), sgrows = SphereGrainHertz.rows()."""
    tmpl, t_coef, t_coef_off, t_coef_shape, t_coef_origin, t_h, t_node_off, t_nodes, t_radius = tmpls
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, req, force, torque = grains
    law, rule, curvature_limit, max_iter, zeta, mtab, n_mat = lawp
    (ltab, n_law, k_node, kt_ratio, zeta_node, both, t_phi, t_phi_off, t_shape, t_origin, t_areas, hist_off, shear,
     partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g, sc_delta, sc_k, sc_e, mu_tab, t_cull) = nodes
    s_pos, s_vel, s_omega, s_radius, s_mass, s_material, s_force, s_torque = spheres
    fs, ist, cq, row, hacc, pts, nxt, meta = sgrows
    G = pos.shape[0]
    n_node = 0
    for c in range(n_pairs):
        if ltab[material[sg_pairs[c, 0]] * n_mat + s_material[sg_pairs[c, 1] - G]] == LAW_NODE:
            node_pairs[n_node, 0] = sg_pairs[c, 0]
            node_pairs[n_node, 1] = sg_pairs[c, 1]
            n_node += 1
    n_cp = sphere_grain_forces(step, dt, node_pairs, n_node, tmpl, t_phi, t_phi_off, t_shape, t_origin, t_h,
                               t_node_off, t_nodes, t_areas, t_radius, t_cull, pos, vel, omega, rot, mass, motion,
                               radius, material, force, torque, s_pos, s_vel, s_omega, s_radius, s_mass, s_material,
                               s_force, s_torque, cell, periodic, walls, n_law, k_node, kt_ratio, mu_tab, zeta_node,
                               limit, hist_off, shear, partner, last_step, sc_owner, sc_other, sc_hist, sc_x, sc_g,
                               sc_delta, sc_k, sc_e, cp_x, cp_f, cp_ij, n_cp, sg_energy, acc, mctl)
    if n_cp < 0:
        return -1
    sheared = is_sheared(cell)
    r00, r11, r22 = cell[CELL_RATE], cell[CELL_RATE + 1], cell[CELL_RATE + 2]
    r01, r02, r12 = cell[CELL_SHEAR_RATE], cell[CELL_SHEAR_RATE + 1], cell[CELL_SHEAR_RATE + 2]
    geom = np.zeros(SG.N_GEOM)
    x0 = np.zeros(3)
    posB = np.zeros(3)
    vB = np.zeros(3)
    eye = np.eye(3)
    n_touch = 0
    for c in range(n_pairs):
        g = sg_pairs[c, 0]
        code = sg_pairs[c, 1]
        s = code - G
        mat_pair = material[g] * n_mat + s_material[s]
        if ltab[mat_pair] == LAW_NODE:
            continue
        ex, ey, ez = sphere_branch(pos, g, s_pos, s, cell, periodic, sheared)
        R = s_radius[s]
        r = radius[g] + R
        far = ex * ex + ey * ey + ez * ez >= r * r
        if far and not (fs[c, S.F_DELTA] > 0.0 or ist[c, S.I_HEAD] >= 0):
            row[c, H_WARM] = 0.0
            row[c, H_SCALE] = 0.0
            continue
        posB[0] = pos[g, 0] + ex
        posB[1] = pos[g, 1] + ey
        posB[2] = pos[g, 2] + ez
        # the sphere's image moves with its own velocity plus the cell's flow between the two centres
        vB[0] = s_vel[s, 0] + r00 * ex + r01 * ey + r02 * ez
        vB[1] = s_vel[s, 1] + r11 * ey + r12 * ez
        vB[2] = s_vel[s, 2] + r22 * ez
        t = tmpl[g]
        coef = template_coef(t_coef, t_coef_off, t_coef_shape, t)
        body_a = (coef, t_coef_origin[t], t_h[t], pos[g], rot[g], t_nodes[t_node_off[t]:t_node_off[t + 1]])
        # the sphere: its analytic distance (the spline arguments are not read), no nodes, no turn
        body_b = (SG.BODY_SPHERE, coef, t_coef_origin[t], t_h[t], posB, eye, t_nodes[0:0], R)
        r_ref = req[g] * R / (req[g] + R)
        go, touching, delta, dsx, dsy, sq, vn = row_kinematics(fs, ist, cq, row, c, far, body_a, body_b,
                                                               radius[g] ** 2, np.inf, vel[g], omega[g], vB,
                                                               s_omega[s], dt, rule, curvature_limit * r_ref,
                                                               max_iter, geom, x0, quat[g], quat[g])
        if not go:
            continue
        if touching and not (delta < limit * min(t_radius[t], R)):
            mctl[MC_BAD_GRAIN] = g
            mctl[MC_BAD_SPHERE] = s
            return -1
        if motion[g] == MOTION_DYNAMIC:
            m_eff = mass[g] * s_mass[s] / (mass[g] + s_mass[s])
        else:
            m_eff = s_mass[s]
        touched, fx, fy, fz = row_law(law_step, law, count, mtab[mat_pair], fs, ist, cq, row, c, touching, delta, dsx,
                                      dsy, sq, vn, zeta, m_eff, dt, geom, hacc, sg_energy, pts, nxt, meta)
        if not touched:
            continue
        n_touch += 1
        # (fx, fy, fz) is the force on the sphere
        push(force, torque, g, -fx, -fy, -fz, geom, SG.G_RA)
        push(s_force, s_torque, s, fx, fy, fz, geom, SG.G_RB)
        # Love-Weber: the force on the grain (-f) times the branch from the sphere's image to it (-e)
        lc.add_stress(acc, fx, fy, fz, ex, ey, ez)
        n_cp = record_point(cp_x, cp_f, cp_ij, n_cp, geom, g, code, fx, fy, fz)
    mctl[MC_NCONTACTS] += n_touch
    return n_cp


def sphere_grain_hertz_time_step(grains, contact, mtab, materials, s_radius, s_mass, s_inertia, s_material,
                                 reference_overlap=None):
    """2/omega_max of the stiffest grain-sphere Hertz row (as `levelset_hertz.critical_time_step`):
    normal k_n = 2 E* a with a = sqrt(R_max d) at the largest radius the law allows
    (curvature_limit x the series volume-equivalent radius) and overlap d (default 1 % of it), on
    the pair's reduced mass, and the tangential stiffness on the sphere's rolling inertia."""
    g = grains
    dyn = g.motion == MOTION_DYNAMIC
    req = np.cbrt(3.0 * g.mass / (4.0 * math.pi * np.asarray(materials)[g.material, 3]))
    n_mat = len(materials)
    worst = 0.0
    for mg in np.unique(g.material):
        of = g.material == mg
        rg = float(req[of].max())
        m_g = float(g.mass[of & dyn].min()) if np.any(of & dyn) else math.inf
        for ms in np.unique(s_material):
            prm = mtab[mg * n_mat + ms]
            sel = s_material == ms
            R = s_radius[sel]
            r_max = contact["curvature_limit"] * rg * R / (rg + R)
            d = reference_overlap if reference_overlap is not None else 0.01 * r_max
            a = np.sqrt(r_max * d)
            m_eff = s_mass[sel] * m_g / (s_mass[sel] + m_g) if math.isfinite(m_g) else s_mass[sel]
            w2 = np.maximum(prm[S.P_KNC] * a / m_eff,
                            prm[S.P_KTC] * a * (1.0 / s_mass[sel] + R ** 2 / s_inertia[sel]))
            worst = max(worst, float(w2.max()))
    return 2.0 / math.sqrt(worst) if worst > 0.0 else math.inf


class SphereGrainHertz:
    """The rows of the grain-sphere contacts that take the "hertz_curvature" law (module
    docstring): keys (cap, 2) of grain, grain count + sphere, parallel to the grain-sphere pair
    list; the law's state (fs, ist, the history in `store`), frame quaternions cq, records row
    (levelset_hertz.H_*), the counters of rows whose pair left the list (hacc, levelset_hertz.A_*),
    and node_pairs, the scratch list of the pairs that take the node law."""

    STATE = ("hctl", "hkey", "fs", "ist", "cq", "row", "hacc", "store_pts", "store_nxt", "store_meta")

    def __init__(self, capacity):
        self.hctl = np.zeros(1, dtype=np.int64)
        self.hkey = np.zeros((0, 2), dtype=np.int64)
        self.fs, self.ist, self.cq, self.row = new_rows(0)
        self.hacc = np.zeros(N_HACC)
        self.store = HistoryStore(max(64, 4 * capacity))
        self.grow(capacity)

    def grow(self, capacity):
        """Rows for `capacity` pairs (the pair list's length) and a store with room for a step."""
        if capacity > len(self.hkey):
            n = int(self.hctl[0])
            hkey = np.zeros((capacity, 2), dtype=np.int64)
            hkey[:n] = self.hkey[:n]
            rows = new_rows(capacity)
            for new, old in zip(rows, (self.fs, self.ist, self.cq, self.row)):
                new[:n] = old[:n]
            self.hkey = hkey
            self.fs, self.ist, self.cq, self.row = rows
        self.node_pairs = np.zeros((len(self.hkey), 2), dtype=np.int64)
        self.store.ensure_free(len(self.hkey))

    def carry(self, pairs, n_pairs, key_base):
        """Carry the rows to a freshly built pair list pairs[:n_pairs] (keys: grain * key_base +
        grain count + sphere)."""
        self.grow(len(pairs))
        fs, ist, cq, row, hacc, pts, nxt, meta = self.rows()
        carry_rows(pairs, n_pairs, key_base, self.hctl, self.hkey, fs, ist, cq, row, hacc, pts, nxt, meta)

    def rows(self):
        st = self.store
        return self.fs, self.ist, self.cq, self.row, self.hacc, st.pts, st.nxt, st.meta

    def energies(self, grains, s_material, contact, mtab, node_energy):
        """The grain-sphere contacts' {"elastic_normal_energy", "tangential_energy",
        "tangential_work", "frictional_dissipation", "viscous_dissipation"} (J): the node-law
        pairs' record `node_energy` (which holds the rows' normal energy too) plus the rows'."""
        n = int(self.hctl[0])
        out = np.zeros(4)
        n_mat = int(round(math.sqrt(mtab.shape[0])))
        st = self.store
        row_energies(law_id(contact["tangential"]), mtab, n_mat, grains.material[self.hkey[:n, 0]],
                     np.asarray(s_material)[self.hkey[:n, 1] - grains.n], self.fs, self.ist, self.row, n, st.pts,
                     st.nxt, out)
        d = lc.node_contact_energies(node_energy)
        d["tangential_energy"] += float(out[1])
        d["tangential_work"] += float(out[2] + self.hacc[A_WORK])
        d["frictional_dissipation"] += float(out[3] + self.hacc[A_DISS])
        d["viscous_dissipation"] += float(self.hacc[A_VISC])
        return d

    def state_arrays(self):
        d = {}
        for name in self.STATE:
            src = self.store if name.startswith("store_") else self
            d["sg_hertz_" + name] = np.array(getattr(src, name[6:] if name.startswith("store_") else name))
        return d

    @classmethod
    def from_state(cls, arrays, n_grains, n_spheres, source="checkpoint"):
        """The rows of a checkpoint (state_arrays), checked: present, consistent shapes, finite,
        keys and history heads in range."""
        for name in cls.STATE:
            if "sg_hertz_" + name not in arrays:
                raise ValueError(f"{source}: array 'sg_hertz_{name}' missing (the grain-sphere rows of a "
                                 "hertz_curvature mixed run)")
        a = {name: np.ascontiguousarray(np.array(arrays["sg_hertz_" + name])) for name in cls.STATE}
        cap = a["hkey"].shape[0] if a["hkey"].ndim == 2 else -1
        shapes = {"hctl": (1,), "hkey": (cap, 2), "fs": (cap, S.N_FSTATE), "ist": (cap, S.N_ISTATE),
                  "cq": (cap, 4), "row": (cap, N_HROW), "hacc": (N_HACC,)}
        for name, shape in shapes.items():
            if a[name].shape != shape:
                raise ValueError(f"{source}: array 'sg_hertz_{name}' must have shape {shape}, got {a[name].shape}")
        for name in ("fs", "cq", "row", "hacc", "store_pts"):
            if a[name].dtype.kind != "f" or not np.all(np.isfinite(a[name])):
                raise ValueError(f"{source}: array 'sg_hertz_{name}' must hold finite real numbers")
        n = int(a["hctl"][0])
        keys = a["hkey"][:n]
        if not (0 <= n <= cap) or np.any(keys[:, 0] < 0) or np.any(keys[:, 0] >= n_grains) \
                or np.any(keys[:, 1] < n_grains) or np.any(keys[:, 1] >= n_grains + n_spheres):
            raise ValueError(f"{source}: 'sg_hertz_hctl'/'sg_hertz_hkey' must list at most {cap} pairs of a grain "
                             f"in [0, {n_grains - 1}] and {n_grains} + a sphere in [0, {n_spheres - 1}]")
        heads = a["ist"][:n, S.I_HEAD]
        if a["store_pts"].ndim != 2 or np.any(heads >= a["store_pts"].shape[0]) or np.any(heads < -1):
            raise ValueError(f"{source}: the grain-sphere rows' history heads must lie in the history store")
        self = cls.__new__(cls)
        for name in cls.STATE:
            if not name.startswith("store_"):
                setattr(self, name, a[name])
        self.store = HistoryStore.from_arrays(a["store_pts"], a["store_nxt"], a["store_meta"])
        self.node_pairs = np.zeros((cap, 2), dtype=np.int64)
        return self

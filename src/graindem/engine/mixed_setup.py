"""Spheres and rigid level-set grains in one `Simulation`: set-up, run, readings, state.

`Simulation` inherits these methods (`MixedBodies`); the kernels and the joining state are in
`bodies.mixed`. A run is mixed when it has both `add_particles` and `add_grains`: the spheres keep
the arrays, passes and checkpoint layout of a sphere run, the grains theirs (`grains`, the `grain_*`
arrays), and `mixed` (bodies.mixed.SphereGrainCoupling) holds the grain-sphere pair list, the
grains' copies of the walls and of the accumulators. Both kinds share the time step (the smallest
of the spheres', the grains' and the grain-sphere contacts' critical steps), gravity, local
damping, the walls and the cell (periodic or not; fixed, or deformed by the stress servo and
shear, bodies.mixed).
"""

import math

import numpy as np

from ..boundaries.servo import pending_cell_work
from ..bodies.levelset import GC_BAD_I, GC_BAD_J, GC_NCP, GC_NREBUILDS, GC_STEP, MOTION_DYNAMIC, LevelSetBodies
from ..bodies.levelset_hertz import LAW_NAME as HERTZ_CURVATURE, HertzRows
from ..bodies.mixed import (MC_BAD_GRAIN, MC_BAD_SPHERE, MC_NPAIRS, MC_NREBUILDS, MC_PHASE, MC_STATUS,
                            SphereGrainCoupling, mixed_forces, sphere_grain_time_step)
from ..bodies.mixed_hertz import SphereGrainHertz, sphere_grain_hertz_time_step
from ..contact import state as S
from ..contact.laws import law_id
from ..contact import rolling as RL
from ..contact.levelset_contact import E_GRAVITY, E_LOCAL, E_SLIDING, node_contact_energies
from ..core.exact_sum import new_accumulator
from .loop import WHOLE_STEPS
from .mixed_hertz_loop import MIXED_HERTZ_KERNELS, MODE_FORCES, MODE_RUN
from .mixed_loop import (PHASE_START, STATUS_DONE, STATUS_GRAIN_DIVERGED, STATUS_GRAIN_PAIRS_FULL,
                         STATUS_SG_DIVERGED, STATUS_SG_PAIRS_FULL, run_mixed)
from ..core.layout import (ACC_BOUNDARY_WORK, ACC_STRESS, ACC_WALL, CTL_DT, ICTL_NPAIRS, N_ACC0, OUT_STATUS,
                           STATUS_DIVERGED, STATUS_PAIRS_FULL)

class MixedBodies:
    """The mixed run's methods of `Simulation` (module docstring)."""

    def _refuse_in_mixed_run(self):
        """Clear errors for what a run of spheres and level-set grains does not offer."""
        what = "in a run with spheres and level-set grains"
        c = self.grain_contact
        if c is None:
            raise ValueError("level-set grains need their contact: call set_grain_contact first")
        if self.sort_particles:
            raise ValueError(f"sort_particles=True is not supported {what} (the grain-sphere contacts hold the "
                             "spheres' indices)")
        if self.adaptive_dt:
            raise ValueError(f"adaptive_dt is not supported {what}; give dt or dt_fraction")

    def _setup_mixed(self):
        """setup() of a run with spheres and level-set grains."""
        self._refuse_in_mixed_run()
        if not self._box_set:
            raise ValueError("no domain: call set_box first")
        grains = LevelSetBodies(self._grain_templates, self._grain_batches, self.materials,
                                self._grain_mu_table(), np.array(self._wall_materials, dtype=np.int64))
        self.grain_contact, laws = self._grain_run_contact()
        if laws is not None:
            grains.hertz = self._hertz_rows(grains, laws)
        # the grains' nodes resolve a sphere only if it spans a node spacing (sqrt of the mean node area)
        spacing = max(math.sqrt(float(grains.t_areas[a:b].mean()))
                      for a, b in zip(grains.t_node_off[:-1], grains.t_node_off[1:]))
        r_min = float(min(r.min() for r in self._radii))
        if r_min < spacing:
            raise ValueError(f"sphere radius {r_min:.4g} m is below the spacing {spacing:.4g} m of the grains' surface "
                             "nodes (sqrt of the mean node area): the nodes cannot resolve so small a sphere; give "
                             "the grain templates more nodes (n_nodes) or use larger spheres")
        self._setup_spheres(rmax_cell=float(grains.radius.max()))
        self.grains = grains
        self.mixed = SphereGrainCoupling(grains.n, self.n, self.walls, N_ACC0 + 3 * self.walls.shape[0])
        self.mixed.hertz = None if grains.hertz is None else SphereGrainHertz(len(self.mixed.pairs))
        self.mixed.ensure_grain_pairs(grains, self.cell, self.periodic, self.skin)
        if grains.hertz is not None:
            grains.hertz.carry(grains)
        self.mixed.ensure_pairs(grains, self.pos, self.radius, self.cell, self.periodic, self.skin)
        if self.mixed.hertz is not None:
            self.mixed.hertz.carry(self.mixed.pairs, int(self.mixed.mctl[MC_NPAIRS]), grains.n + self.n)
        self.dt_crit = self._mixed_critical_time_step()
        dt = self._time_step()
        self.ctl[CTL_DT] = dt
        # the forces of the first step: the histories count them as the step before it
        if not self._mixed_forces(int(grains.gctl[GC_STEP])):
            raise ValueError(self._mixed_divergence_text("at start"))
        self.ready = True
        self.energy_start = self._mixed_energy_total() + self.touching_energy_at_start()
        self.message(f"graindem: {self.n} spheres and {grains.n} level-set grains of "
                     f"{len(set(grains.tmpl.tolist()))} template(s), laws {self.law_name} (spheres) and "
                     f"{self.grain_contact['law']} (grains, grain-sphere), dt = {dt:.4g} s, "
                     f"dt_crit = {self.dt_crit:.4g} s, dt/dt_crit = {dt / self.dt_crit:.3f}")

    def _mixed_critical_time_step(self):
        """The smallest of the spheres' (Hertz), the grains' node contacts' and the grain-sphere
        contacts' (bodies.mixed.sphere_grain_time_step) critical steps."""
        g, c = self.grains, self.grain_contact
        if g.hertz is None:
            return min(self.sphere_critical_time_step(), self._grain_critical_time_step(),
                       sphere_grain_time_step(g, c, self.radius, self.mass, self.inertia))
        dt = sphere_grain_hertz_time_step(g, c, g.hertz.mtab, self.materials, self.radius, self.mass, self.inertia,
                                          self.pmat[:self.n], self.reference_overlap)
        if c.get("node") is not None:
            dt = min(dt, sphere_grain_time_step(g, c["node"], self.radius, self.mass, self.inertia))
        return min(self.sphere_critical_time_step(), self._grain_critical_time_step(), dt)

    def _grain_args(self):
        g = self.grains
        return (g._template_args(), g._body_args(), g._contact_args(self.grain_contact),
                (g.hist_off, g.shear, g.partner, g.last_step), g._scratch_args())

    def _mixed_forces(self, step):
        g, m = self.grains, self.mixed
        if g.hertz is not None:
            return bool(self._run_mixed_hertz(MODE_FORCES, 0, PHASE_START))
        tpl, gb, gc, gh, gs = self._grain_args()
        return mixed_forces(step, self.dt, self.diverge_overlap, tpl, gb, gc, gh, gs, g.pairs, self.gravity, self.cell,
                            self.periodic, m.grain_walls, g.wall_mat, m.grain_acc, g.gctl, self.pos, self.vel,
                            self.omega, self.radius, self.mass, self.pmat[:self.n], self.force, self.torque, m.pairs,
                            m.energy, m.mctl)

    def _sphere_args(self):
        st = self.store
        return (self.pos, self.vel, self.omega, self.quat, self.force, self.torque, self.radius, self.mass,
                self.inertia, self.pmat, self.pid, self.mtab, self.cell, self.ctl, self.ictl, self.walls, self.wcand,
                self.pstart, self.pi, self.pj, self.pfs, self.pist, self.pcq, self.pk, self.pm, self.qi, self.qj,
                self.qfs, self.qist, self.qcq, self.wfs, self.wist, self.wcq, self.wk, self.wm, self.pos_build,
                st.pts, st.nxt, st.meta, self.acc, self.out, self.rolling_pairs.reshape(-1, RL.N_ROLL_PARAM),
                self.prs, self.wrs, self.rrel, self.mixed.grain_acc, self.stress_limbs,
                WHOLE_STEPS, new_accumulator(3 * self.walls.shape[0]))

    def _mixed_advance(self, n, on_diverge):
        """Advance n steps of both kinds, growing arrays and resuming interrupted steps."""
        g, m = self.grains, self.mixed
        nw = self.walls.shape[0]
        done = 0
        phase = PHASE_START
        while done < n:
            self.store.ensure_free(int(self.ictl[ICTL_NPAIRS]) + self.n * nw + 1024)
            if g.hertz is not None:
                done += self._run_mixed_hertz(MODE_RUN, n - done, phase)
            else:
                tpl, gb, gc, gh, gs = self._grain_args()
                done += run_mixed(n - done, phase, self.dt, self.skin, self.diverge_overlap, tpl, gb, gc, gh, gs,
                                  g.pairs, g.pos_build, m.grain_record, self.gravity, self.cell, self.periodic, self.ctl,
                                  m.grain_walls, g.wall_mat, m.grain_acc, g.gctl, self._sphere_args(),
                                  self.pmat[:self.n], m.pairs, m.g_build, m.s_build, m.sg_record, m.energy, m.mctl)
            status = int(m.mctl[MC_STATUS])
            phase = int(m.mctl[MC_PHASE]) if status != STATUS_DONE else PHASE_START
            if status == STATUS_GRAIN_PAIRS_FULL:
                g._grow_pairs()
            elif status == STATUS_SG_PAIRS_FULL:
                m.grow()
            elif status == STATUS_GRAIN_DIVERGED:
                self._grains_diverged(on_diverge)
            elif status == STATUS_SG_DIVERGED:
                self._sphere_grain_diverged(on_diverge)
            elif status != STATUS_DONE:  # the spheres' step stopped: run_steps's out record says why
                sphere_status = int(self.out[OUT_STATUS])
                if sphere_status == STATUS_DIVERGED:
                    self._diverged(on_diverge)
                elif sphere_status == STATUS_PAIRS_FULL:
                    self._grow_pairs()
                    self._rebuild()
                # store low: the next call starts with a larger store
        return n

    def _run_mixed_hertz(self, mode, n, phase):
        """One call of the "hertz_curvature" mixed kernel (engine.mixed_hertz_loop) of the run's
        tangential law, after growing the rows and stores to the pair lists and a step's need."""
        g, m = self.grains, self.mixed
        g.hertz.grow(g)
        m.hertz.grow(len(m.pairs))
        run = MIXED_HERTZ_KERNELS[law_id(self.grain_contact["tangential"])]
        groups = g.hertz.groups(g, self.grain_contact, self.gravity, self.cell, self.ctl, self.ictl, self.periodic,
                                m.grain_walls, m.grain_acc)
        count = bool(g.hertz.mtab[0, S.P_ENERGY])
        return run(count, mode, n, phase, self.dt, self.skin, self.diverge_overlap, *groups, self._sphere_args(),
                   m.grain_record, m.pairs, m.g_build, m.s_build, m.sg_record, m.hertz.rows(), m.hertz.hkey,
                   m.hertz.hctl, m.energy, m.hertz.node_pairs, m.mctl)

    def _run_mixed(self, steps, callback, every, phase, stops, on_diverge):
        self._run_in_chunks(steps, callback, every, phase, stops, lambda chunk: self._mixed_advance(chunk, on_diverge))

    def _mixed_divergence_text(self, when):
        m = self.mixed.mctl
        if int(m[MC_STATUS]) == STATUS_SG_DIVERGED:
            return (f"{when}: a node of grain {int(m[MC_BAD_GRAIN])} lies inside sphere {int(m[MC_BAD_SPHERE])} "
                    f"deeper than diverge_overlap = {self.diverge_overlap} of the smaller radius")
        return (f"{when}: a node of grain {int(self.grains.gctl[GC_BAD_I])} penetrates "
                f"{self._grain_partner(int(self.grains.gctl[GC_BAD_J]))} deeper than diverge_overlap = "
                f"{self.diverge_overlap} of the smaller bounding radius")

    def _sphere_grain_diverged(self, on_diverge):
        from .simulation import Diverged
        self.out[OUT_STATUS] = STATUS_DIVERGED
        m = self.mixed.mctl
        msg = "run diverged " + self._mixed_divergence_text(f"at step {self.step_count}") + \
              " (time step too large or energy blow-up)"
        ckpt = on_diverge(self) if on_diverge is not None else None
        if ckpt is not None:
            msg += f"; checkpoint written to {ckpt}"
        raise Diverged(msg, [int(m[MC_BAD_GRAIN]), int(m[MC_BAD_SPHERE])],
                       [(int(m[MC_BAD_GRAIN]), int(m[MC_BAD_SPHERE]))], ckpt)

    # ---------------------------------------------------------------- readings
    def _mixed_wall_forces(self):
        nw = self.walls.shape[0]
        a = self.acc[ACC_WALL:ACC_WALL + 3 * nw] + self.mixed.grain_acc[ACC_WALL:ACC_WALL + 3 * nw]
        return a.reshape(nw, 3)

    def _sphere_grain_contacts(self):
        """The grain-sphere contacts of the last force evaluation summed per pair: grain, sphere,
        force on the grain (m, 3), contact nodes."""
        net = self.grains.contact_network()
        G = self.grains.n
        sg = net["j"] >= G
        return {"grain": net["i"][sg], "sphere": net["j"][sg] - G, "force": net["force"][sg],
                "n_nodes": net["n_nodes"][sg]}

    def _mixed_measure(self):
        """measure() of a mixed run: the spheres' readings with the grains' and the grain-sphere
        contacts' added (stress, contacts, energies); unbalanced_force_ratio is the larger of the
        two kinds' (each counts the grain-sphere forces on its bodies)."""
        g = self.grains
        sgc = self._sphere_grain_contacts()
        s = self._sphere_measure(extra_force=self.force, extra_contacts=sgc["force"])
        net = g.contact_network()
        grain_pairs = (net["j"] >= 0) & (net["j"] < g.n)
        n_gw = int((net["j"] < 0).sum())
        n_sg = len(sgc["grain"])
        dyn = g.motion == MOTION_DYNAMIC
        fmean = float(np.mean(np.linalg.norm(net["force"], axis=1))) if len(net["i"]) else 0.0
        g_unbalanced = (float(np.mean(np.linalg.norm(g.force[dyn], axis=1))) / fmean
                        if fmean > 0.0 and np.any(dyn) else 0.0 if not np.any(dyn) else float("inf"))
        solid = float(np.sum(4.0 / 3.0 * math.pi * self.radius ** 3)) + float(np.sum(
            g.mass[dyn] / self.materials[g.material[dyn], 3]))
        n_c = s["n_contacts"] + int(grain_pairs.sum()) + n_sg
        n_cp = int(g.gctl[GC_NCP])
        by_kind = self._mixed_contact_energies(s)
        contact = {k: sum(e[k] for e in by_kind.values()) for k in by_kind["sphere"]}
        s.update({
            "unbalanced_force_ratio": max(s["unbalanced_force_ratio"], g_unbalanced),
            "void_ratio": self.volume / solid - 1.0, "n_contacts": n_c,
            "n_sphere_grain_contacts": n_sg, "n_grain_contacts": int(grain_pairs.sum()),
            "coordination": 2.0 * n_c / max(self.n + int(dyn.sum()), 1),
            "n_wall_contacts": s["n_wall_contacts"] + n_gw, "n_contact_nodes": n_cp,
            "kinetic_energy": s["kinetic_energy"] + g.kinetic_energy(), **contact, "contact_energies": by_kind,
            "local_damping_dissipation": s["local_damping_dissipation"] + float(g.energy[E_LOCAL]),
            "gravity_work": self._mixed_gravity_work(), "boundary_work": self._mixed_boundary_work(),
            "energy_balance_error": (self._mixed_energy_total(s) - self.energy_start if self.energy_accounting
                                     else math.nan),
            "grain_sliding_fraction": (float(g.energy[E_SLIDING] + self.mixed.energy[E_SLIDING]) / n_cp if n_cp
                                       else 0.0),
            "n_rebuilds": s["n_rebuilds"] + int(g.gctl[GC_NREBUILDS]) + int(self.mixed.mctl[MC_NREBUILDS]),
        })
        return s

    def _mixed_contact_energies(self, s=None):
        """The contacts' energies (J) by kind pair: "sphere" (sphere pairs and sphere-wall
        contacts, the sphere laws' own; from `s`, the spheres' measure), "grain" (grain pairs and
        grain-wall contacts) and "grain-sphere" (their node contacts), each with
        elastic_normal_energy, tangential_energy, frictional_dissipation, tangential_work and
        viscous_dissipation. The spheres count their frictional dissipation and tangential work
        only with set_energy_accounting(True)."""
        s = self._sphere_measure() if s is None else s
        spheres = {k: s[k] for k in ("elastic_normal_energy", "tangential_energy", "frictional_dissipation",
                                     "tangential_work", "viscous_dissipation")}
        g, m = self.grains, self.mixed
        sg = (node_contact_energies(m.energy) if m.hertz is None else
              m.hertz.energies(g, self.pmat[:self.n], self.grain_contact, g.hertz.mtab, m.energy))
        return {"sphere": spheres, "grain": self._grain_contact_energies(), "grain-sphere": sg}

    def _mixed_gravity_work(self):
        """Gravity's work on the grains and on the spheres since the start."""
        return float(self.grains.energy[E_GRAVITY] + self.mixed.energy[E_GRAVITY])

    def _mixed_boundary_work(self):
        """The walls' work on the spheres and on the grains, and the cell's on both, since the
        start. The sphere step's servo books the cell's work on the whole assembly (its stress sum
        holds both kinds' contacts) by the trapezoid rule; the closing half of the last step is
        added here (boundaries.servo.pending_cell_work)."""
        return (float(self.acc[ACC_BOUNDARY_WORK] + self.mixed.grain_acc[ACC_BOUNDARY_WORK])
                + pending_cell_work(self.acc, self.cell, self.dt))

    def _mixed_energy_total(self, s=None):
        """Kinetic (translational and rotational, both kinds) + stored in the contacts + dissipated
        (friction, dampers, local damping, rolling resistance) - work of gravity and of the walls:
        constant while the energy balance closes (measure()'s energy_balance_error). The spheres'
        kinetic energy is at their half step (leapfrog) and their contacts' energies at the forces
        of their last step: both agree with the grains' full-step values to O(dt), and exactly at
        rest. s: the spheres' measure, if at hand."""
        s = self._sphere_measure() if s is None else s
        stored_or_lost = 0.0
        for e in self._mixed_contact_energies(s).values():
            stored_or_lost += (e["elastic_normal_energy"] + e["tangential_energy"] + e["frictional_dissipation"]
                               + e["viscous_dissipation"])
        return (s["kinetic_energy"] + self.grains.kinetic_energy() + stored_or_lost + s["local_damping_dissipation"]
                + float(self.grains.energy[E_LOCAL]) + s["rolling_energy"] + s["rolling_dissipation"]
                - self._mixed_gravity_work() - self._mixed_boundary_work())

    def _mixed_stress(self, V):
        """The spheres' Love-Weber sum plus the grains' (grain pairs, walls, grain-sphere contacts)."""
        return self._sphere_stress(V) + self.mixed.grain_acc[ACC_STRESS:ACC_STRESS + 9].reshape(3, 3) / V

    def write_mixed_vtk(self, prefix):
        """`prefix`_spheres.vtu (centres with radius and velocity), `prefix`_surfaces.vtu (the posed
        grain surfaces) and `prefix`_contacts.vtu (the grains' contact nodes, grain-sphere included,
        with their forces); returns the three names."""
        from ..io import vtk
        spheres = vtk.write_particles(f"{prefix}_spheres.vtu", self.pos,
                                      point_data={"radius": self.radius, "velocity": self.vel})
        return (str(spheres),) + tuple(self.grains.write_vtk(prefix))

    # ---------------------------------------------------------------- state
    def _mixed_state_dict(self):
        d, meta = self._sphere_state_dict()
        d.update(self.grains.state_arrays())
        d.update(self.mixed.state_arrays())
        if self.mixed.hertz is not None:
            d.update(self.mixed.hertz.state_arrays())
        meta["bodies"] = "mixed"
        meta["grain_contact"] = dict(self.grain_contact)
        meta["energy_start"] = self.energy_start
        return d, meta

    def _attach_mixed_state(self, arrays, meta):
        """The grains and the grain-sphere state of a mixed checkpoint, on a Simulation rebuilt
        from its sphere arrays."""
        self.grains = LevelSetBodies.from_state(arrays)
        self.grain_contact = dict(meta["grain_contact"])
        self.mixed = SphereGrainCoupling.from_state(arrays, self.cell)
        self.mixed.hertz = None
        if self.grain_contact.get("law") == HERTZ_CURVATURE:
            self.grains.hertz = HertzRows.from_state(self.grains, arrays, self.materials)
            self.mixed.hertz = SphereGrainHertz.from_state(arrays, self.grains.n, self.n)
        self.energy_start = float(meta.get("energy_start", math.nan))
        return self

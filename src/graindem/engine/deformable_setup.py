"""The deformable body kind's face on `Simulation`: adding grains, their contact, cylinders, a
prescribed obstacle travel, set-up, the run, the critical time step, state and checkpoints.

`Simulation` inherits these methods (`DeformableGrains`); the kernels and arrays are in
`bodies.deformable`. Obstacles of deformable grains are the Simulation's planar walls (add_wall; they
move at their velocity, or under the wall servo) followed by its cylinders (add_cylinder), in that order (`obstacle_row`).

Rigid level-set grains (`add_grains`) in a run with deformable grains are stepped by the same loop as
templates without modes (`rigid_template_record`): rows 0..n_r-1 of `deformable` are the rigid grains in
the order added, the deformable grains follow (`grain_rows`). One loop, one neighbour list, one set of
obstacles and one cell then serve both kinds, and the deformable contact (`set_deformable_contact`)
governs every grain pair and grain-obstacle pair.
"""

import math
from pathlib import Path

import numpy as np

from ..bodies.deformable import CYLINDER, DC_SKIN, PLANE, SURFACE_ARRAYS, DeformableBodies
from ..bodies.levelset import GC_NCP, GC_NREBUILDS, GC_STEP, MOTION_DYNAMIC
from ..bodies.levelset_hertz import LAW_NAME as HERTZ_CURVATURE
from ..contact.shape_hertz import SHAPE_AREA
from ..core.layout import (ACC_WALL, CTL_DT, CTL_G, CTL_SKIN, ICTL_NWALLS, ICTL_PERIODIC, ICTL_STEP, N_ACC0, N_CTL,
                           N_ICTL)
from ..core.checks import per_body_rows, positive_finite, vec3
from ..boundaries.walls import N_WALL, WALL_MODE, WALL_SERVO, wall_rows

PULLBACKS = ("point", "corners")
INVERSE_METHODS = ("newton", "fixed_point")


def _square_matrix(name, a, n):
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    if a.shape != (n, n) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a finite {n} x {n} matrix (one row per mode), got shape {a.shape}")
    return a


def rigid_template_record(grain):
    """The arrays the engine keeps of a rigid level-set grain's template (particles.LevelSetGrain): a
    template without modes of the deformable loop (template_record's layout)."""
    from ..deform.scenes import DeformableTemplate

    return template_record(DeformableTemplate.from_levelset(grain), None, None, None, None, 0.0)


def template_record(template, modes, modal_mass, response, modal_damping, tangent_damping):
    """The arrays the engine keeps of one deformable template (bodies.deformable: t_* arrays).

    `template`: a deform.scenes.DeformableTemplate (level set φ0 on a grid, nodes with areas, volume,
    inertia, surface mesh, modes); `modes`: None (the template's), a list of deform.modes.Mode, a
    fem.modefile.ModeSet or the path of a mode file (tabulated on the template's grid by the file's
    own interpolation); `response`: deform.response.LinearResponse or a single-mode TabulatedForce;
    `modal_damping` a constant C, or `tangent_damping` β of C = β dF/dε (tabulated response only)."""
    from ..deform.modes import GridMode, tabulate_modes
    from ..deform.response import LinearResponse, TabulatedForce
    from ..fem.modefile import ModeSet, read_mode_file

    grid = template.phi0
    nodes = np.ascontiguousarray(template.nodes, dtype=np.float64)
    surface = np.asarray(template.surface_vertices, dtype=np.float64)
    node_values = None
    if modes is None:
        modes = list(template.modes)
        node_values = getattr(template, "node_mode_values", None)
    elif isinstance(modes, (str, Path)) or isinstance(modes, ModeSet):
        mode_set = read_mode_file(modes) if not isinstance(modes, ModeSet) else modes
        values = mode_set.evaluate(grid.node_positions().reshape(-1, 3))
        modes = [GridMode(v.reshape(grid.shape + (3,)), grid.origin, grid.spacing) for v in values]
        node_values = mode_set.evaluate(nodes)
    else:
        modes = list(modes)
    n = len(modes)
    table = np.ascontiguousarray(tabulate_modes(modes, grid)) if n else np.zeros((0,) + grid.shape + (3,))
    if node_values is None:
        node_values = np.stack([m.displacement(nodes) for m in modes]) if n else np.zeros((0, len(nodes), 3))
    node_values = np.ascontiguousarray(node_values, dtype=np.float64)
    surface_modes = np.stack([m.displacement(surface) for m in modes]) if n else np.zeros((0,) + surface.shape)
    rec = {"phi": grid.values, "origin": grid.origin, "spacing": float(grid.spacing), "nodes": nodes,
           "areas": np.asarray(template.node_areas, dtype=np.float64), "volume": float(template.volume),
           "inertia": np.asarray(template.inertia, dtype=np.float64), "table": table, "node_modes": node_values,
           "surface_vertices": surface, "surface_faces": np.asarray(template.surface_faces, dtype=np.int64),
           "surface_modes": surface_modes, "tab_eps": np.zeros(0), "tab_force": np.zeros(0),
           "tab_slope": np.zeros(0), "tab_energy": np.zeros(0), "tabulated": 0, "beta": 0.0}
    if n == 0:
        rec.update(modal_mass=np.zeros((0, 0)), stiffness=np.zeros((0, 0)), damping=np.zeros((0, 0)),
                   max_tangent=np.zeros((0, 0)))
        return rec
    rec["modal_mass"] = _square_matrix("modal_mass", modal_mass, n)
    if np.linalg.eigvalsh(rec["modal_mass"]).min() <= 0:
        raise ValueError("modal_mass must be positive definite")
    rec["damping"] = np.zeros((n, n)) if modal_damping is None else _square_matrix("modal_damping", modal_damping, n)
    beta = float(tangent_damping)
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"tangent_damping must be a finite number >= 0, got {tangent_damping!r}")
    if isinstance(response, TabulatedForce):
        if n != 1:
            raise ValueError(f"a TabulatedForce response needs a single-mode template, got {n} modes")
        rec.update(stiffness=np.zeros((1, 1)), tabulated=1, tab_eps=response.eps_table,
                   tab_force=response.force_table, tab_slope=np.append(response.slopes, response.slopes[-1]),
                   tab_energy=response.energy_table)
    elif isinstance(response, LinearResponse):
        if response.stiffness.shape != (n, n):
            raise ValueError(f"response stiffness must be {n} x {n}, got {response.stiffness.shape}")
        rec["stiffness"] = response.stiffness
        if beta > 0:
            raise ValueError("tangent_damping needs a TabulatedForce response")
    else:
        raise ValueError("response must be a LinearResponse or a TabulatedForce")
    if beta > 0 and np.any(rec["damping"] != 0):
        raise ValueError("give modal_damping or tangent_damping, not both")
    rec["beta"] = beta
    rec["max_tangent"] = response.max_tangent()
    return rec


class DeformableGrains:
    """Methods of `Simulation` for deformable level-set grains (see the module docstring)."""

    def _init_deformable(self):
        self._deform_templates = []
        self._deform_keys = []
        self._deform_batches = []
        self._cylinders = []
        self.deform_contact = None
        self.deformable = None
        self._travel = None
        self._n_levelset = 0   # rigid level-set grains stepped by the deformable loop (its first rows)

    def add_deformable_grains(self, template, positions, modal_mass=None, response=None, modes=None,
                              modal_damping=None, tangent_damping=0.0, orientations=None, velocities=None,
                              angular_velocities=None, eps=None, eps_rate=None, material=0, motion="dynamic",
                              dofs=None):
        """Add deformable grains, each a copy of `template` (deform.scenes.DeformableTemplate) at
        `positions` (m, 3); `modes`, `modal_mass` (n x n), `response`, `modal_damping` or
        `tangent_damping` as `template_record` says (a template with no modes is a rigid grain).
        Templates are stored once per (template, modal data). `eps`, `eps_rate`: initial modal
        coordinates and rates (n, or (m, n)); `dofs`: six flags (x, y, z translation, rotation about x,
        y, z) a frozen one keeps its velocity at zero; motion "dynamic", "fixed" or "kinematic".
        Returns the grains' indices among the deformable grains: their rows in `deformable` are
        `grain_rows("deformable")[indices]` (the rigid level-set grains of add_grains come first)."""
        self._check_not_ready()
        batch = self._shaped_batch(positions, orientations, velocities, angular_velocities, material, motion)
        m = len(batch["pos"])
        # the objects themselves are kept (compared by identity): an id() alone could be reused by a new
        # object once the first is collected
        key = (template, modes, response, np.asarray(modal_mass, dtype=np.float64).tobytes(),
               np.asarray(modal_damping if modal_damping is not None else 0.0, dtype=np.float64).tobytes(),
               float(tangent_damping))
        same = [k for k, old in enumerate(self._deform_keys)
                if all(a is b for a, b in zip(old[:3], key[:3])) and old[3:] == key[3:]]
        if same:
            index = same[0]
        else:
            self._deform_templates.append(template_record(template, modes, modal_mass, response, modal_damping,
                                                          tangent_damping))
            self._deform_keys.append(key)
            index = len(self._deform_templates) - 1
        n = self._deform_templates[index]["table"].shape[0]

        d = np.ones((m, 6), dtype=bool) if dofs is None else np.broadcast_to(np.asarray(dofs, dtype=bool), (m, 6))
        first = sum(len(b["pos"]) for b in self._deform_batches)
        self._deform_batches.append(dict(
            batch, template=index, dof=np.array(d),
            eps=per_body_rows("eps", eps, m, n, np.zeros(n)).ravel() if n else np.zeros(0),
            epsdot=per_body_rows("eps_rate", eps_rate, m, n, np.zeros(n)).ravel() if n else np.zeros(0)))
        return np.arange(first, first + m)

    def add_cylinder(self, point, axis, radius, velocity=(0.0, 0.0, 0.0), material=0):
        """An infinite rigid cylinder (axis through `point`, direction `axis`, `radius`) that grains stay
        outside of, moving at `velocity`, of `material` (the friction of its contacts is the material
        pair's, as a wall's); returns its index among the cylinders (`obstacle_row`)."""
        self._check_not_ready()
        mat = self._check_material_index(material)
        p = vec3("point", point)
        a = vec3("axis", axis)
        if not np.linalg.norm(a) > 0:
            raise ValueError("axis must be a non-zero vector")
        r = positive_finite("radius", radius)
        self._cylinders.append((CYLINDER, p, a / np.linalg.norm(a), r, vec3("velocity", velocity), mat))
        return len(self._cylinders) - 1

    def obstacle_row(self, kind, index):
        """Row of wall (`kind` "wall") or cylinder `index` in the deformable grains' obstacle arrays."""
        if kind == "wall":
            return int(index)
        if kind == "cylinder":
            return len(self._walls) + int(index)
        raise ValueError(f"kind must be 'wall' or 'cylinder', got {kind!r}")

    def set_wall_motion(self, travel):
        """Obstacles of deformable grains move by velocity x (travel(t) - travel(t_now)) from now on:
        `travel` a vectorized callable s(t) (time units; e.g. deform.validation.WallSchedule), None for
        constant velocity. A callable is not part of a checkpoint: set it again after a restart."""
        if travel is not None and not callable(travel):
            raise ValueError("travel must be a callable s(t) (obstacle displacement = velocity x s(t)) or None")
        if travel is not None and self._servo_wall_indices():
            raise ValueError(self._travel_with_servo())
        self._travel = None if travel is None else (travel, self.time if self.ready else 0.0,
                                                   self.step_count if self.ready else 0)

    def _servo_wall_indices(self):
        walls = self.walls if self.ready else self._walls
        return [w for w in range(len(walls)) if walls[w][WALL_MODE] == WALL_SERVO]

    def _travel_with_servo(self):
        return ("a travel schedule (set_wall_motion) scales every obstacle's velocity, and a servo wall's normal speed "
                "is the servo's own: give set_wall_motion(None) with force- or stress-controlled walls "
                f"(servo walls {self._servo_wall_indices()})")

    def set_deformable_contact(self, stiffness, damping=0.0, kt_ratio=2.0 / 7.0, contact="both", pullback="point",
                               inverse_iterations=1, inverse_method="newton", pullback_cache=False,
                               contact_area=None):
        """Node contact of deformable grains (contact.deformable_contact): penalty `stiffness` k_s per
        unit area, normal `damping` c_s per unit area, tangential stiffness ratio `kt_ratio` (friction:
        the material pair's); `contact` "both" (each grain's nodes in the other, weight 1/2) or "one" (the
        lower index is the slave); the master's pull-back `pullback` "point" or "corners" (with
        `pullback_cache`), `inverse_iterations` refinements by `inverse_method` ("newton" or
        "fixed_point"); `contact_area`: the patch area of the stiffest expected contact for the
        critical time step (default: the largest node area). The friction coefficient of a contact is
        its material pair's (pair_record: set_pair_friction, or the smaller of the two materials'),
        a wall's or cylinder's material with the grain's for an obstacle. In a run with deformable
        grains this contact governs every grain pair, rigid level-set grains (add_grains) included."""
        k = positive_finite("stiffness", stiffness)
        c = positive_finite("damping", damping, allow_zero=True)
        kt_ratio = float(kt_ratio)
        if not math.isfinite(kt_ratio) or not (0 < kt_ratio <= 10):
            raise ValueError(f"kt_ratio must lie in (0, 10], got {kt_ratio!r}")
        if contact not in ("both", "one"):
            raise ValueError(f"contact must be 'both' or 'one', got {contact!r}")
        if pullback not in PULLBACKS:
            raise ValueError(f"pullback must be one of {PULLBACKS}, got {pullback!r}")
        if inverse_method not in INVERSE_METHODS:
            raise ValueError(f"inverse_method must be one of {INVERSE_METHODS}, got {inverse_method!r}")
        if int(inverse_iterations) != inverse_iterations or inverse_iterations < 0:
            raise ValueError(f"inverse_iterations must be an integer >= 0, got {inverse_iterations!r}")
        if pullback == "point" and pullback_cache:
            raise ValueError("pullback_cache applies to pullback='corners' only (a point-wise pull-back has no grid "
                             "node values to reuse)")
        area = None if contact_area is None else positive_finite("contact_area", contact_area)
        self.deform_contact = {"stiffness": k, "damping": c, "kt_ratio": kt_ratio, "contact": contact,
                               "pullback": pullback, "inverse_iterations": int(inverse_iterations),
                               "inverse_method": inverse_method, "pullback_cache": bool(pullback_cache),
                               "contact_area": area}

    def grain_rows(self, kind):
        """Rows in `deformable` (its per-grain arrays: pos, quat, vel, ...) of the grains of `kind`
        ("levelset": added with add_grains, "deformable": with add_deformable_grains), each kind in the
        order added; in a run with deformable grains the rigid level-set grains come first."""
        self.setup()
        if self.deformable is None:
            raise ValueError("grain_rows applies to a run with deformable grains (rigid grains alone: sim.grains)")
        if kind == "levelset":
            return np.arange(self._n_levelset)
        if kind == "deformable":
            return np.arange(self._n_levelset, self.deformable.n)
        raise ValueError(f"kind must be 'levelset' or 'deformable', got {kind!r}")

    def _check_grain_contact_with_deformable(self):
        """The deformable contact governs every grain pair: refuse level-set contact settings it would not honour."""
        area = self._grain_law_settings.get(SHAPE_AREA)
        c = self.deform_contact
        why = None
        if self._grain_law_settings.get(HERTZ_CURVATURE) is not None or self._pair_shape_law:
            why = "the law 'hertz_curvature' (set_grain_contact / set_pair_shape_law)"
        elif area is not None and area["law"] != "area":
            why = f"the law {area['law']!r} (a stiffness per node)"
        elif area is not None and (area["stiffness"] != c["stiffness"] or area["kt_ratio"] != c["kt_ratio"]
                                   or area["contact"] != c["contact"] or area["damping_ratio"] != 0.0):
            why = "other settings than set_deformable_contact's"
        if why is not None:
            raise ValueError(f"set_grain_contact gives the rigid level-set grains {why}, but in a run with deformable "
                             "grains the deformable contact (set_deformable_contact: area law, k_s per unit area, "
                             "Coulomb node springs) governs every grain pair: drop set_grain_contact, or give it "
                             "law='area' with set_deformable_contact's stiffness, kt_ratio and contact and "
                             "damping_ratio=0")

    def _deformable_loop_grains(self):
        """(template records, batches, number of rigid grains) of the deformable loop: the rigid
        level-set grains' templates and grains first (templates without modes, all degrees of freedom
        free), then the deformable ones."""
        rigid = [rigid_template_record(t) for t in self._grain_templates]
        batches = [dict(b, dof=np.ones((len(b["pos"]), 6), dtype=bool), eps=np.zeros(0), epsdot=np.zeros(0))
                   for b in self._grain_batches]
        batches += [dict(b, template=b["template"] + len(rigid)) for b in self._deform_batches]
        return rigid + self._deform_templates, batches, sum(len(b["pos"]) for b in self._grain_batches)

    def _setup_deformable(self):
        """setup() of a run of deformable grains, with rigid level-set grains or without (no spheres)."""
        if self._positions:
            raise ValueError("spheres next to deformable grains in one run are not supported: add each sphere as a "
                             "shaped grain instead, a rigid one (add_grains with "
                             "particles.LevelSetGrain.sphere(radius)) or a deformable template without modes "
                             "(add_deformable_grains(..., modes=[]))")
        if self.deform_contact is None:
            raise ValueError("deformable grains need their contact: call set_deformable_contact first")
        self._check_grain_contact_with_deformable()
        if not self._box_set:
            raise ValueError("no domain: call set_box first")
        if self.local_damping != 0.0:
            raise ValueError(f"local_damping = {self.local_damping} is not applied to deformable grains: give 0 and "
                             "damp them by the contact damping (set_deformable_contact) and the modal damping")
        self.walls = wall_rows(np.array(self._walls, dtype=np.float64).reshape(-1, N_WALL))
        if self._travel is not None and self._servo_wall_indices():
            raise ValueError(self._travel_with_servo())
        obstacles = [(PLANE, w[0:3], w[3:6], 0.0, w[6:9], m) for w, m in zip(self.walls, self._wall_materials)]
        obstacles += list(self._cylinders)
        templates, batches, self._n_levelset = self._deformable_loop_grains()
        self.deformable = DeformableBodies(templates, batches, self.materials[:, 3], obstacles, self.deform_contact,
                                           self._grain_mu_table())
        d = self.deformable
        d.node_r[:] = d.t_radius[d.tmpl]
        rmax = float((d.t_radius + 2.0 * d.t_h).max())
        self.skin = self.skin if self.skin is not None else 0.2 * rmax
        d.dctl[DC_SKIN] = self.skin
        self._new_cell(2.0 * rmax + self.skin)
        self._check_shear_heights()
        self.ctl = np.zeros(N_CTL)
        self.ctl[CTL_G:CTL_G + 3] = self.gravity
        self.ctl[CTL_SKIN] = self.skin
        self.ictl = np.zeros(N_ICTL, dtype=np.int64)
        self.ictl[ICTL_PERIODIC:ICTL_PERIODIC + 3] = self.periodic
        self.ictl[ICTL_NWALLS] = self.walls.shape[0]
        self._push_control()   # control_axis / control_shear: the cell's strain rates or stress servo
        # the accumulators of the shared state layout: the stress sum the servo reads, the cell's work,
        # the walls' forces (the obstacles' own work is the kind's energy record E_WALL_WORK)
        self.acc = np.zeros(N_ACC0 + 3 * self.walls.shape[0])
        self.n = 0
        self.dt_crit = self._deformable_critical_time_step()
        dt = self._time_step()
        self.ctl[CTL_DT] = dt
        self.ready = True
        self.energy_start = self._deformable_energy_total()
        crit = self.deformable_critical_steps
        rigid = f"{self._n_levelset} rigid level-set and " if self._n_levelset else ""
        self.message(f"graindem: {rigid}{d.n - self._n_levelset} deformable grains of {len(d.t_nmodes)} template(s) "
                     f"({int(d.t_nmodes[d.tmpl].sum())} modal coordinates), dt = {dt:.4g}, dt_crit = {self.dt_crit:.4g} "
                     f"(contact {crit['rigid']:.4g}, modal {crit['modal']:.4g}), dt/dt_crit = {dt / self.dt_crit:.3f}")

    def _deformable_critical_time_step(self):
        """min over templates of √(m / k_c) (a node contact patch k_c = k_s × contact area, m the smaller
        of the grain mass and the modal mass seen at the node moving most per unit ε, M / max|Φ|²) and
        1 / ω_max of the modes with their stiffest tangent (their §3.3; dt = dt_fraction × this)."""
        from ..deform.dynamics import modal_critical_step

        d = self.deformable
        c = self.deform_contact
        rigid = modal = math.inf
        for t, rec in enumerate(d.templates):
            grains = d.tmpl == t
            if not np.any(grains):
                continue
            area = float(rec["areas"].max()) if c["contact_area"] is None else c["contact_area"]
            m = float(d.mass[grains].min())
            if rec["table"].shape[0]:
                phi_max = max(float(np.abs(rec["node_modes"]).max()), 1e-300)
                m = min(m, float(np.linalg.eigvalsh(rec["modal_mass"]).min()) / phi_max ** 2)
                modal = min(modal, float(modal_critical_step(rec["modal_mass"], rec["max_tangent"], 1.0)))
            rigid = min(rigid, math.sqrt(m / (c["stiffness"] * area)))
        self.deformable_critical_steps = {"rigid": rigid, "modal": modal}
        return min(rigid, modal)

    def _travel_factors(self, n):
        """Velocity factor of each of the next n steps: 1, or the exact differences of the travel."""
        if self._travel is None:
            return np.ones(n)
        travel, t_set, step_set = self._travel
        k = self.step_count - step_set + np.arange(n + 1)
        s = np.asarray(travel(t_set + self.dt * k), dtype=np.float64)
        return np.ascontiguousarray(np.diff(s) / self.dt)

    def _check_deformable(self, on_diverge):
        """Raise Diverged naming the grains whose state is not finite or whose deformed nodes reach
        more than twice their template's radius from the centre (a modal blow-up)."""
        from .simulation import Diverged

        d = self.deformable
        finite = np.isfinite(d.pos).all(axis=1) & np.isfinite(d.vel).all(axis=1) & np.isfinite(d.angmom).all(axis=1)
        finite &= np.array([np.isfinite(d.eps_of(g)).all() for g in range(d.n)], dtype=bool)
        swollen = ~(d.node_r <= 2.0 * d.t_radius[d.tmpl])
        bad = np.flatnonzero(~finite | swollen)
        if bad.size == 0:
            return
        rows = f" (rows of `deformable`; rows < {self._n_levelset} are rigid level-set grains)" if self._n_levelset else ""
        msg = (f"run diverged at step {self.step_count}: deformable grain(s) {bad[:20].tolist()}{rows} have a "
               "non-finite state or nodes beyond twice their radius (time step too large for the contact or modal "
               "stiffness?)")
        ckpt = on_diverge(self) if on_diverge is not None else None
        if ckpt is not None:
            msg += f"; checkpoint written to {ckpt}"
        raise Diverged(msg, bad[:20].tolist(), (), ckpt)

    def _run_deformable(self, steps, callback, every, phase, stops, on_diverge=None):
        import time
        t0 = time.perf_counter()
        done = 0
        d = self.deformable
        n_walls = len(self.walls)
        while done < steps:
            chunk = min(steps - done, stops.chunk_limit())
            if every is not None:
                chunk = min(chunk, every - (self.step_count - phase) % every)
            stops.start_chunk()
            d.o_vel[:n_walls] = self.walls[:, 6:9]   # set_wall_velocity acts from the next step on
            d.run(chunk, self.dt, self._travel_factors(chunk), self.gravity, self.cell, self.ctl, self.ictl, self.acc,
                  self.periodic, self.walls)
            self.walls[:, 0:3] = d.o_point[:n_walls]
            self.acc[ACC_WALL:ACC_WALL + 3 * n_walls] = d.o_force[:n_walls].ravel()
            done += chunk
            self.ictl[ICTL_STEP] = d.gctl[GC_STEP]
            self._check_deformable(on_diverge)
            self._check_cell_heights()
            if callback is not None and every is not None and (self.step_count - phase) % every == 0:
                callback(self)
            stops.after_chunk(chunk, self.step_count)
        self.timing["run_s"] += time.perf_counter() - t0
        self.timing["steps"] += steps

    def deformable_energies(self):
        """The deformable grains' energy terms (DeformableBodies.energies) with the periodic cell's work
        on them (`cell_work`, booked by the servo: -V σ:L dt summed, the last step's closing half
        included) in the balance."""
        self.setup()
        return self.deformable.energies(self.gravity, self._grain_boundary_work())

    def _deformable_energy_total(self):
        """DeformableBodies.energies' balance: stored + dissipated - work, constant while the energy
        balance closes (measure()'s energy_balance_error is its change since the set-up)."""
        return float(self.deformable_energies()["balance"])

    def _deformable_measure(self):
        """measure() of a run of deformable grains: the keys of the other kinds where they mean the
        same, the energies of `deformable_energies` (one formula each) and the modal ones. A touching
        grain pair counts once (its node contacts summed, both ways), obstacles in n_wall_contacts;
        the void ratio takes the grains' reference volumes; sliding is not recorded per node (nan)."""
        d = self.deformable
        e = self.deformable_energies()
        net = d.contact_network()
        pair = net["j"] >= 0
        n_c = int(pair.sum())
        dyn = d.motion == MOTION_DYNAMIC
        solid = float(np.sum(d.t_volume[d.tmpl]))
        sig = self.stress()
        strain = np.log(self.box_lengths / self.L0)
        fmean = float(np.mean(np.linalg.norm(net["force"], axis=1))) if len(net["i"]) else 0.0
        # d.force holds the contact forces and gravity of the last evaluation: the net force per grain
        unbalanced = float(np.mean(np.linalg.norm(d.force[dyn], axis=1))) / fmean if fmean > 0.0 else math.inf
        return {
            "step": self.step_count, "time": self.time, "unbalanced_force_ratio": unbalanced,
            "stress": sig, "pressure": float(np.trace(sig) / 3.0),
            "strain": strain, "volumetric_strain": float(strain.sum()), "shear_strain": self.shear_strain,
            "void_ratio": self.volume / solid - 1.0, "n_contacts": n_c,
            "coordination": 2.0 * n_c / max(int(dyn.sum()), 1), "n_wall_contacts": int((~pair).sum()),
            "n_contact_nodes": int(d.gctl[GC_NCP]), "sliding_fraction": math.nan,
            "kinetic_energy": e["kinetic"], "modal_kinetic_energy": e["modal_kinetic"], "strain_energy": e["strain"],
            "elastic_normal_energy": e["contact"], "tangential_energy": e["tangential_springs"],
            "tangential_work": e["tangential_springs"] + e["dissipated_friction"],
            "frictional_dissipation": e["dissipated_friction"], "viscous_dissipation": e["dissipated_contact_damping"],
            "modal_damping_dissipation": e["dissipated_modal_damping"], "local_damping_dissipation": 0.0,
            "gravity_potential": e["gravity_potential"], "wall_work": e["wall_work"], "cell_work": e["cell_work"],
            "boundary_work": e["wall_work"] + e["cell_work"],
            "energy_balance_error": e["balance"] - self.energy_start,
            "mean_history_length": 0.0, "max_history_length": 0, "store_bytes": 0, "store_bytes_allocated": 0,
            "n_rebuilds": int(d.gctl[GC_NREBUILDS]), "dt_over_dt_crit": self.dt / self.dt_crit,
        }

    def _deformable_state_dict(self):
        d, meta = self._kind_state("deformable")
        d.update(self.deformable.state_arrays())
        meta["deform_contact"] = dict(self.deform_contact)
        meta["critical_steps"] = dict(self.deformable_critical_steps)
        meta["energy_start"] = self.energy_start
        meta["levelset_grains"] = int(self._n_levelset)   # rows 0..n-1 of the grain arrays are rigid level-set grains
        return d, meta

    @classmethod
    def _deformable_from_state(cls, arrays, meta, verbose):
        needed = tuple("deform_" + a for a in DeformableBodies.STATE
                       if a not in DeformableBodies.LATER and a not in SURFACE_ARRAYS)
        missing = [n for n in cls.GRAIN_ARRAYS + needed if n not in arrays]
        if missing or not isinstance(meta.get("deform_contact"), dict):
            raise ValueError(f"checkpoint of deformable grains lacks {missing or ['metadata deform_contact']}")
        sim = cls._kind_from_state(arrays, meta, verbose)
        sim.deformable = DeformableBodies.from_state(arrays)
        sim.deform_contact = dict(meta["deform_contact"])
        sim.deformable_critical_steps = dict(meta["critical_steps"])
        sim.energy_start = float(meta.get("energy_start", math.nan))
        sim._n_levelset = int(meta.get("levelset_grains", 0))
        return sim


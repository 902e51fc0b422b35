"""`Simulation`: the Python face of the sphere engine (build, add particles, choose a law, run, read).

    sim = Simulation(law="mindlin", E=70e9, nu=0.25, mu=0.5, density=2500.0)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(positions, radii)
    sim.run(1000)
    sim.measure()            # stress, void ratio, coordination, energies, history lengths ...

Units SI. Stress is compression-positive. Materials: the constructor's E, nu, mu, density are
material 0; `add_material` adds more, particles and walls name theirs (default 0), and each pair of
materials gets its record by the usual mixing (`pair_record`), friction overridable per pair
(`set_pair_friction`), rolling and twisting resistance likewise (`rolling=`, `twisting=`,
`set_rolling`, `set_pair_rolling`: contact.rolling). The pair-dependent Hertz quantities (R*,
4/3 E* sqrt(R*)) are set per pair row when the neighbour list is built (engine.neighbours).
All state lives in numpy arrays (`state_dict()`), which is what checkpoints hold; output reads
copies and never changes state.
"""

import math

import numpy as np

from ..boundaries.servo import pending_cell_work
from ..boundaries.walls import (N_WALL, WALL_MODE, WALL_NORMAL, WALL_POINT, WALL_PRESCRIBED, WALL_SERVO, WALL_VEL,
                                servo_columns, wall_row, wall_rows)
from ..contact import rolling as RL
from ..contact import state as S
from ..contact.hertz import check_material, contact_params
from ..contact.laws import law_id
from ..contact.energy import hertz_energy_sum
from ..bodies.levelset import (GC_BAD_I, GC_BAD_J, GC_NCP, GC_NREBUILDS, GC_STEP, MOTION_DYNAMIC, MOTIONS,
                               LevelSetBodies, node_contact_time_step)
from ..contact.levelset_contact import (E_GRAVITY, E_LOCAL, E_SLIDING, LAWS as LEVELSET_LAWS,
                                        node_contact_energies)
from ..bodies.levelset_hertz import LAW_HERTZ, LAW_NAME as HERTZ_CURVATURE, LAW_NODE, HertzRows
from ..contact.shape_hertz import SHAPE_AREA, SHAPE_LAWS
from ..bodies.levelset_hertz import contact_settings as hertz_contact_settings
from ..bodies.levelset_hertz import critical_time_step as hertz_critical_time_step
from ..contact.store import HistoryStore, BYTES_PER_POINT
from ..core.cell import (CELL_GAMMA, CELL_L, CELL_LBUILD, CELL_LO, CELL_TILT, N_CELL,
                         cell_heights, minimum_image)
from ..core.layout import (ACC_BOUNDARY_WORK, ACC_DISS_RELEASED, ACC_LOCAL_WORK, ACC_STRESS, ACC_VISC_WORK, ACC_WALL,
                           CTL_DIVERGE_OVERLAP, CTL_DT, CTL_G, CTL_GAIN, CTL_INTEGRAL, CTL_LOCAL_DAMP,
                           CTL_MAXRATE, CTL_RATE, CTL_RMAX, CTL_SHEAR, CTL_SKIN, CTL_TARGET, CTL_VISC,
                           ICTL_ENERGY, ICTL_LAW, ICTL_MODE, ICTL_N, ICTL_NMAT, ICTL_NPAIRS, ICTL_NREBUILDS,
                           ICTL_NWALLS, ICTL_NWCAND, ICTL_PERIODIC, ICTL_SORT, ICTL_STEP, N_ACC0,
                           N_CONTACT_LIMBS, N_CTL, N_ICTL, N_OUT, N_PK, OUT_CI, OUT_CJ, OUT_PARTICLE, OUT_STATUS,
                           OUT_STEPS, PAIR_INDEX, PAIR_INDEX_MAX, PK_CN, STATUS_DIVERGED, STATUS_PAIRS_FULL)
from ..core.rotations import rotate_rows
from .damping import damping_coefficient
from .deformable_setup import DeformableGrains
from .mixed_setup import MixedBodies
from ..core.checks import per_body_rows, positive_finite, vec3
from .history import reload_contacts, tangential_energy_sum
from .loop import NO_MORE_STRESS, WHOLE_STEPS, run_steps
from ..core.exact_sum import new_accumulator
from .neighbours import build_pairs, refresh_constants
from ..parallel.world import world

SCHEMA_VERSION = 1
ROLLING_ARRAYS = RL.ENGINE_ARRAYS


class Diverged(RuntimeError):
    """The run went unstable; `particles` and `contacts` name where (see the message)."""

    def __init__(self, message, particles=(), contacts=(), checkpoint=None):
        super().__init__(message)
        self.particles = list(particles)
        self.contacts = list(contacts)
        self.checkpoint = checkpoint


_vec3 = vec3
_pos_finite = positive_finite


class Simulation(DeformableGrains, MixedBodies):
    """A DEM simulation of spheres of one material.

    law: one of TANGENTIAL_LAWS. E (Pa), nu, mu, density (kg/m^3), xi (Jaeger approximation),
    kt_linear (linear law's tangential stiffness, N/m; 0 = Mindlin's k_t).
    restitution: None (no viscous damping) or e in (0, 1]: viscous normal damping for dynamic runs.
    local_damping: Cundall's non-viscous damping fraction in [0, 1) for quasi-static runs.
    dt: time step (s); None = dt_fraction * dt_crit. A dt above dt_crit raises unless
    allow_unstable_dt. reference_overlap: overlap (m) at which dt_crit is evaluated when it exceeds
    the largest current overlap (default 1 % of the smallest radius).
    skin: Verlet skin (m), default 0.1 * largest diameter. max_initial_overlap: largest allowed
    overlap at start as a fraction of the smaller radius. diverge_overlap: an overlap above this
    fraction of the smaller radius during a run means the run diverged. energy_accounting: count
    each contact's tangential work and frictional dissipation (laws.contact_step; slower, and
    the only way measure()'s frictional_dissipation is filled; a run with spheres and level-set
    grains reports energy_balance_error only with it, NaN without).
    Materials: E, nu, mu, density are material 0; add_material adds more, add_particles and
    add_wall take a material index, set_pair_friction overrides a pair's friction (pair_record).
    sort_particles: renumber the particles in cell order at every neighbour rebuild (faster for
    large N: neighbours sit close in memory). Every per-particle array (pos, vel, ...) is then in the
    current order and `ids` gives each row's index in the order the particles were added.
    rolling: None (off) or {"mu_r": rolling friction coefficient >= 0, "damping": dashpot damping
    ratio in [0, 1] (default 0), "stiffness": rolling stiffness N m/rad > 0 (default None: Ai et
    al.'s 2.25 k_n mu_r^2 R*^2)}: the elastic-plastic rolling spring of Ai et al. (2011, type C;
    LAMMPS `rolling sds`), limiting moment mu_r R* N. A number is read as mu_r.
    twisting: None/False (off), True, or {"damping": ratio in [0, 1]}: Marshall's (2009) twisting
    spring k_t a^2/2, limiting moment 2/3 mu a N. Both for every pair of materials (set_pair_rolling
    changes one pair); their state is in the contact rows (see contact.rolling).
    """

    def __init__(self, law="mindlin", E=70e9, nu=0.25, mu=0.5, density=2500.0, xi=0.0, kt_linear=0.0,
                 restitution=None, local_damping=0.0, gravity=(0.0, 0.0, 0.0), dt=None, dt_fraction=0.2,
                 allow_unstable_dt=False, reference_overlap=None, skin=None, max_initial_overlap=0.05,
                 diverge_overlap=0.5, energy_accounting=False, verbose=False, adaptive_dt=False,
                 adaptive_dt_interval=100, sort_particles=False, rolling=None, twisting=None):
        self.law_name = str(law)
        self.law = law_id(law)
        self.E, self.nu, self.mu, self.xi = check_material(E, nu, mu, xi)
        self.kt_linear = float(kt_linear)
        self.prm = contact_params(1.0, 1.0, self.E, self.nu, self.mu, self.xi, self.kt_linear)
        self.density = _pos_finite("density", density)
        self.materials = np.array([[self.E, self.nu, self.mu, self.density]])
        self.mu_pair = np.full((1, 1), -1.0)  # per-pair friction overrides (< 0: mixed from the two)
        self.rolling_pairs = rolling_record(rolling, twisting)[None, None, :].copy()  # (m, m, RL.N_ROLL_PARAM)
        self.sort_particles = bool(sort_particles)
        self._materials_of = []
        self._wall_materials = []
        if restitution is None:
            self.restitution = None
            self.visc = 0.0
        else:
            self.restitution = float(restitution)
            self.visc = damping_coefficient(self.restitution)
        local_damping = float(local_damping)
        if not (0.0 <= local_damping < 1.0):
            raise ValueError(f"local_damping must lie in [0, 1), got {local_damping!r}")
        self.local_damping = local_damping
        self.gravity = _vec3("gravity", gravity)
        if dt is not None:
            dt = _pos_finite("dt", dt)
        self.dt_requested = dt
        dt_fraction = float(dt_fraction)
        if not (0.0 < dt_fraction <= 1.0):
            raise ValueError(f"dt_fraction must lie in (0, 1], got {dt_fraction!r}")
        self.dt_fraction = dt_fraction
        self.allow_unstable_dt = bool(allow_unstable_dt)
        self.adaptive_dt = False
        self.adaptive_dt_interval = 100
        self._time_offset = 0.0  # sum over dt changes of step * (dt_old - dt_new): keeps `time` exact
        if adaptive_dt:
            self.set_adaptive_dt(True, adaptive_dt_interval)
        self.reference_overlap = None if reference_overlap is None else _pos_finite("reference_overlap", reference_overlap)
        self.skin = None if skin is None else _pos_finite("skin", skin)
        self.max_initial_overlap = _pos_finite("max_initial_overlap", max_initial_overlap, allow_zero=True)
        d = float(diverge_overlap)
        if not (0.0 < d <= 1.0):
            raise ValueError(f"diverge_overlap must lie in (0, 1], got {diverge_overlap!r}")
        self.diverge_overlap = d
        self.verbose = verbose
        self.energy_accounting = bool(energy_accounting)
        self._positions = []
        self._radii = []
        self._vel = []
        self._omega = []
        self.box_lo = np.zeros(3)
        self.box_hi = np.ones(3)
        self.periodic = np.zeros(3, dtype=bool)
        self._box_set = False
        self._walls = []
        self.mode = np.zeros(3, dtype=np.int64)
        self.rate = np.zeros(3)
        self.target = np.ones(3)
        self.gain = np.zeros(3)
        self.maxrate = np.zeros(3)
        self.integral = np.zeros(3)
        self.shear = np.zeros(3)  # prescribed velocity gradients L_xy, L_xz, L_yz (control_shear)
        self.ready = False
        self.timing = {"run_s": 0.0, "steps": 0}
        # the exact accumulator of the step's contact sums: the stress sum, the viscous work (layout.LIMB_*)
        self.stress_limbs = new_accumulator(N_CONTACT_LIMBS)
        self._grain_templates = []
        self._grain_batches = []
        self.grain_contact = None
        self._grain_law_settings = {}  # shape law ("area", "hertz_curvature") -> its settings (set_grain_contact)
        self._pair_shape_law = {}  # (m1, m2), m1 <= m2 -> shape law (set_pair_shape_law)
        self.grains = None
        self.mixed = None  # a run with spheres and level-set grains: engine.mixed_setup
        self._init_deformable()  # deformable grains: engine.deformable_setup

    # ---------------------------------------------------------------- building
    def set_box(self, lo, hi, periodic=(False, False, False)):
        """The domain: a box lo..hi; periodic axes wrap (and may deform, see control_axis)."""
        self._check_not_ready()
        lo = _vec3("lo", lo)
        hi = _vec3("hi", hi)
        if np.any(hi <= lo):
            raise ValueError(f"box hi must exceed lo on every axis, got lo={lo}, hi={hi}")
        self.box_lo, self.box_hi = lo, hi
        self.periodic = np.array([bool(p) for p in periodic], dtype=bool)
        if self.periodic.shape != (3,):
            raise ValueError("periodic must be three booleans")
        self._box_set = True

    def add_wall(self, point, normal, velocity=(0.0, 0.0, 0.0), material=0, force=None, stress=None, area=None,
                 servo_gain=None, max_speed=None):
        """A rigid plane through `point` whose unit `normal` points into the domain; returns its index.
        `material`: index of the wall's material (see add_material).

        The wall moves at `velocity`; or, given `force` (N) or `stress` (Pa) with `area` (m^2), its
        normal motion is servo-controlled so that the grains press it with that force (stress x
        area), at a speed `servo_gain` (m/(N s)) x the force error up to `max_speed` (m/s), while
        `velocity` (then in the wall's plane) stays its tangential velocity
        (boundaries.walls.servo_wall_velocity; docs/guide/boundaries.md on choosing the gain)."""
        self._check_not_ready()
        row = servo_columns(wall_row(point, normal, velocity), force, stress, area, servo_gain, max_speed)
        self._wall_materials.append(self._check_material_index(material))
        self._walls.append(row)
        return len(self._walls) - 1

    def control_wall(self, wall, force=None, stress=None, area=None, servo_gain=None, max_speed=None,
                     velocity=(0.0, 0.0, 0.0)):
        """Drive wall `wall` from now on by the servo on `force` or `stress` x `area` (add_wall's
        parameters), with the tangential `velocity`; set_wall_velocity returns it to a prescribed
        velocity."""
        w = self._wall_index(wall)
        walls = self.walls if self.ready else self._walls
        row = wall_row(walls[w][WALL_POINT:WALL_POINT + 3], walls[w][WALL_NORMAL:WALL_NORMAL + 3], velocity)
        if force is None and stress is None:
            raise ValueError("control_wall needs force (N) or stress (Pa, with area); set_wall_velocity sets a "
                             "prescribed velocity")
        row = servo_columns(row, force, stress, area, servo_gain, max_speed)
        self._set_wall_motion(w, row)

    def _wall_index(self, wall):
        nw = self.walls.shape[0] if self.ready else len(self._walls)
        if isinstance(wall, bool) or int(wall) != wall or not 0 <= int(wall) < nw:
            raise ValueError(f"wall must be an index in [0, {nw - 1}], got {wall!r}")
        return int(wall)

    def _set_wall_motion(self, w, row):
        """The velocity and servo columns of `row` into wall w (and the grains' copy in a mixed run)."""
        cols = slice(WALL_VEL, WALL_VEL + 3)
        servo = slice(WALL_MODE, N_WALL)
        if self.ready:
            targets = [self.walls] + ([self.mixed.grain_walls] if self.mixed is not None else [])
            if self.deformable is not None and row[WALL_MODE] == WALL_SERVO and self._travel is not None:
                raise ValueError(self._travel_with_servo())
            for a in targets:
                a[w, cols] = row[cols]
                a[w, servo] = row[servo]
        else:
            self._walls[w][cols] = row[cols]
            self._walls[w][servo] = row[servo]

    def add_material(self, E, nu, mu, density):
        """A further material (E Pa, nu, friction mu, density kg/m^3); returns its index (the
        constructor's material is 0). Pairs mix as in `pair_record`."""
        self._check_not_ready()
        E, nu, mu, _ = check_material(E, nu, mu)
        density = _pos_finite("density", density)
        self.materials = np.vstack([self.materials, [E, nu, mu, density]])
        m = self.materials.shape[0]
        mp = np.full((m, m), -1.0)
        mp[:m - 1, :m - 1] = self.mu_pair
        self.mu_pair = mp
        rp = np.empty((m, m, RL.N_ROLL_PARAM))
        rp[:] = self.rolling_pairs[0, 0]  # a new material's pairs get material 0's rolling settings
        rp[:m - 1, :m - 1] = self.rolling_pairs
        self.rolling_pairs = rp
        return m - 1

    def set_pair_friction(self, m1, m2, mu):
        """Friction coefficient of contacts between materials m1 and m2 (either order), replacing
        the default min(mu_1, mu_2)."""
        a = self._check_material_index(m1, "m1")
        b = self._check_material_index(m2, "m2")
        mu = float(mu)
        if not math.isfinite(mu) or mu < 0.0:
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        self.mu_pair[a, b] = mu
        self.mu_pair[b, a] = mu
        if self.ready:
            self._update_mtab()

    def set_material_friction(self, material, mu):
        """Friction coefficient of one material (pairs without an override take the smaller mu of the two)."""
        m = self._check_material_index(material)
        mu = float(mu)
        if not math.isfinite(mu) or mu < 0.0:
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        self.materials[m, 2] = mu
        if m == 0:
            self.mu = mu
            self.prm[S.P_MU] = mu
        if self.ready:
            self._update_mtab()

    def set_rolling(self, rolling=None, twisting=None):
        """Rolling and twisting resistance for every pair of materials (the constructor's `rolling`
        and `twisting`; None turns one off); per-pair settings are replaced. May be called between
        runs: contacts keep their springs."""
        self.rolling_pairs[:] = rolling_record(rolling, twisting)
        self._rolling_changed()

    def set_pair_rolling(self, m1, m2, rolling=None, twisting=None):
        """Rolling and twisting resistance of contacts between materials m1 and m2 (either order),
        as the constructor's `rolling` and `twisting` (None: off for this pair)."""
        a = self._check_material_index(m1, "m1")
        b = self._check_material_index(m2, "m2")
        rec = rolling_record(rolling, twisting)
        self.rolling_pairs[a, b] = rec
        self.rolling_pairs[b, a] = rec
        self._rolling_changed()

    def rolling_record(self, m1, m2):
        """The rolling table row (contact.rolling.RP_*) of materials m1 and m2."""
        return self.rolling_pairs[self._check_material_index(m1, "m1"), self._check_material_index(m2, "m2")].copy()

    @property
    def rolling_on(self):
        """True when some pair of materials has rolling or twisting resistance."""
        rp = self.rolling_pairs
        return bool(np.any(rp[..., RL.RP_MU_R] > 0.0) or np.any(rp[..., RL.RP_TWIST] != 0.0))

    def _rolling_changed(self):
        """A run that turns rolling resistance on gets rolling state rows (unloaded springs)."""
        if self.ready and self.rolling_on and self.prs.shape[1] == 0:
            self.prs = np.zeros((self.pi.shape[0], RL.N_ROLL_STATE))
            self.wrs = np.zeros((self.wfs.shape[0], RL.N_ROLL_STATE))

    def _check_material_index(self, m, name="material"):
        try:
            k = int(m)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a material index in [0, {self.materials.shape[0] - 1}], got {m!r}")
        if k != m or not (0 <= k < self.materials.shape[0]):
            raise ValueError(f"{name} must be a material index in [0, {self.materials.shape[0] - 1}], got {m!r}")
        return k

    def pair_record(self, m1, m2):
        """The contact parameter record (state.P_*) of materials m1 and m2, R* = 1 (kernels set
        R* and the Hertz coefficient per pair). Mixing: 1/E* = (1 - nu1^2)/E1 + (1 - nu2^2)/E2,
        1/G* = (2 - nu1)/G1 + (2 - nu2)/G2 (Mindlin's k_t = 8 G* a), kappa = 2 E*/(8 G*), friction
        min(mu1, mu2) unless set by set_pair_friction. One material: exactly hertz.contact_params."""
        a = self._check_material_index(m1, "m1")
        b = self._check_material_index(m2, "m2")
        E1, nu1, mu1, _ = self.materials[a]
        E2, nu2, mu2, _ = self.materials[b]
        mu = self.mu_pair[a, b]
        if mu < 0.0:
            mu = min(mu1, mu2)
        energy = bool(self.prm[S.P_ENERGY])
        if E1 == E2 and nu1 == nu2:
            return contact_params(1.0, 1.0, E1, nu1, mu, self.xi, self.kt_linear, energy=energy)
        rec = contact_params(1.0, 1.0, E1, nu1, mu, self.xi, self.kt_linear, energy=energy)
        estar = 1.0 / ((1.0 - nu1 * nu1) / E1 + (1.0 - nu2 * nu2) / E2)
        G1 = E1 / (2.0 * (1.0 + nu1))
        G2 = E2 / (2.0 * (1.0 + nu2))
        gstar = 1.0 / ((2.0 - nu1) / G1 + (2.0 - nu2) / G2)
        kappa = 2.0 * estar / (8.0 * gstar)
        # the Poisson ratio and shear modulus a single material with this kappa and k_t would have
        nu = (2.0 - 2.0 * kappa) / (1.0 - 2.0 * kappa)
        rec[S.P_ESTAR] = estar
        rec[S.P_CN] = 4.0 / 3.0 * estar
        rec[S.P_KNC] = 2.0 * estar
        rec[S.P_KTC] = 8.0 * gstar
        rec[S.P_KAPPA] = kappa
        rec[S.P_NU] = nu
        rec[S.P_G] = 8.0 * gstar * (2.0 - nu) / 4.0
        return rec

    def _update_mtab(self):
        """The material-pair table the kernels read (row m1 * n_materials + m2), and the per-row
        constants that depend on it."""
        if self.deformable is not None:
            self.deformable.mu_tab[:] = self._grain_mu_table()
            return
        if self.grains is not None:
            self.grains.mu_tab[:] = self._grain_mu_table()
            if self.grains.hertz is not None:
                self.grains.hertz.set_friction(self.grains.mu_tab)
            if self.mixed is None:
                return
        m = self.materials.shape[0]
        tab = np.zeros((m * m, S.N_PARAM))
        for a in range(m):
            for b in range(m):
                tab[a * m + b] = self.pair_record(a, b)
        self.mtab = tab
        if self.ready or getattr(self, "pk", None) is not None:
            self.ictl[ICTL_NMAT] = m
            refresh_constants(self.radius, self.mass, self.pmat, self.mtab, self.ctl, self.ictl, self.pi, self.pj,
                              self.pk, self.pm, self.wcand, self.wk, self.wm)

    @property
    def ids(self):
        """ids[k]: the index (in the order of add_particles) of the particle in row k."""
        self.setup()
        return self.pid.copy()

    def add_particles(self, positions, radii, velocities=None, angular_velocities=None, material=0):
        """Add spheres (positions (n, 3) m, radii (n,) m > 0); `material`: one index for all or one
        per particle (see add_material)."""
        self._check_not_ready()
        pos = np.asarray(positions, dtype=np.float64)
        if pos.ndim != 2 or pos.shape[1] != 3:
            raise ValueError(f"positions must have shape (n, 3), got {pos.shape}")
        r = np.broadcast_to(np.asarray(radii, dtype=np.float64), (pos.shape[0],)).copy()
        if not np.all(np.isfinite(pos)):
            raise ValueError("positions must be finite")
        if not np.all(np.isfinite(r)) or np.any(r <= 0.0):
            bad = np.flatnonzero(~(np.isfinite(r) & (r > 0.0)))
            raise ValueError(f"radii must be finite and > 0; particle(s) {bad[:10].tolist()} have {r[bad[:10]].tolist()}")
        v = np.zeros_like(pos) if velocities is None else np.asarray(velocities, dtype=np.float64).reshape(pos.shape)
        w = np.zeros_like(pos) if angular_velocities is None else np.asarray(angular_velocities, dtype=np.float64).reshape(pos.shape)
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(w))):
            raise ValueError("velocities and angular_velocities must be finite")
        try:
            mat = np.broadcast_to(np.asarray(material), (pos.shape[0],))
        except ValueError:
            raise ValueError(f"material must be one index or one per particle ({pos.shape[0]}), got shape "
                             f"{np.shape(material)}") from None
        for x in np.unique(mat):
            self._check_material_index(x)
        mat = mat.astype(np.int64)
        self._materials_of.append(mat)
        self._positions.append(pos.copy())
        self._radii.append(r)
        self._vel.append(v.copy())
        self._omega.append(w.copy())

    def add_grains(self, template, positions, orientations=None, velocities=None, angular_velocities=None,
                   material=0, motion="dynamic"):
        """Add rigid level-set grains, each a copy of `template` (particles.LevelSetGrain; its grid and
        nodes are stored once however many grains use it) at `positions` (m, 3), with unit quaternions
        `orientations` (m, 4; default identity), velocities and angular velocities (world axes), the
        density of `material`; motion "dynamic", "fixed" or "kinematic" (moves as prescribed).
        Returns the grains' indices in `grains` (the order they were added). With add_particles
        as well the run holds both kinds (engine.mixed_setup). With add_deformable_grains as well
        the deformable loop steps both kinds (engine.deformable_setup): the grains are then rows
        `grain_rows("levelset")` of `deformable` (the same indices), and their contacts follow
        set_deformable_contact."""
        self._check_not_ready()
        batch = self._shaped_batch(positions, orientations, velocities, angular_velocities, material, motion)
        for k, t in enumerate(self._grain_templates):
            if t is template:
                index = k
                break
        else:
            index = len(self._grain_templates)
            self._grain_templates.append(template)
        first = sum(len(b["pos"]) for b in self._grain_batches)
        self._grain_batches.append(dict(batch, template=index))
        return np.arange(first, first + len(batch["pos"]))

    def _shaped_batch(self, positions, orientations, velocities, angular_velocities, material, motion):
        """The checked per-grain arrays of a batch of shaped grains (rigid or deformable): pos, unit
        quat, vel, omega (m rows each), material and motion code."""
        pos = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
        m = len(pos)
        if m == 0 or not np.all(np.isfinite(pos)):
            raise ValueError("positions must be a non-empty (m, 3) array of finite numbers")
        if motion not in MOTIONS:
            raise ValueError(f"motion must be one of {sorted(MOTIONS)}, got {motion!r}")
        self._check_material_index(material)
        q = per_body_rows("orientations", orientations, m, 4, (1.0, 0.0, 0.0, 0.0))
        norm = np.linalg.norm(q, axis=1)
        if np.any(norm == 0.0):
            raise ValueError("orientations must be non-zero quaternions")
        return {"pos": pos, "quat": q / norm[:, None],
                "vel": per_body_rows("velocities", velocities, m, 3, (0.0, 0.0, 0.0)),
                "omega": per_body_rows("angular_velocities", angular_velocities, m, 3, (0.0, 0.0, 0.0)),
                "material": int(material), "motion": MOTIONS[motion]}

    def set_grain_contact(self, stiffness=None, law="area", kt_ratio=2.0 / 7.0, damping_ratio=0.0, contact="both",
                          tangential=None, radius_rule="elliptic", curvature_limit=10.0, default=True):
        """The node-to-level-set contact of the level-set grains (contact.levelset_contact): law "area"
        (stiffness k_s per unit area, Pa/m) or "node" (k_n per node, N/m); tangential/normal node
        stiffness kt_ratio in (0, 10]; damping_ratio in [0, 1] of each contact as a linear oscillator;
        contact "both" (each grain's nodes in the other's level set, half weight each) or "one". The
        friction coefficient is the material pair's (pair_record). In a run with deformable grains
        their contact (set_deformable_contact) governs every grain pair: these settings must then
        be absent or equal to it (law "area", its stiffness, kt_ratio and contact, damping_ratio 0).
        law "hertz_curvature" (bodies.levelset_hertz): one Hertzian contact per convex grain pair and
        grain-wall pair, E and nu of the material pair, effective radius from the local curvatures
        (radius_rule, bounded by curvature_limit x the volume-equivalent R*), tangential law
        `tangential` (default: the Simulation's law; xi and kt_linear as for spheres), normal damping
        ratio damping_ratio; no stiffness (it comes from the materials).
        default: this law is the shape law of every material pair that set_pair_shape_law does not
        name (shape law "area" for the node laws "area" and "node", "hertz_curvature"); False only
        keeps its settings for the pairs set_pair_shape_law gives it."""
        if not isinstance(default, bool):
            raise ValueError(f"default must be True or False, got {default!r}")
        if law == HERTZ_CURVATURE:
            if stiffness is not None:
                raise ValueError("stiffness must be None for law 'hertz_curvature' (the materials' E and nu set it)")
            settings = hertz_contact_settings(self.law_name if tangential is None else tangential, radius_rule,
                                              curvature_limit, damping_ratio)
            self._grain_law_settings[HERTZ_CURVATURE] = settings
            if default:
                self.grain_contact = settings
            return
        if law not in LEVELSET_LAWS:
            raise ValueError(f"law must be one of {sorted(LEVELSET_LAWS)}, got {law!r}")
        k = _pos_finite("stiffness", stiffness)
        kt_ratio = float(kt_ratio)
        if not math.isfinite(kt_ratio) or not (0 < kt_ratio <= 10):
            raise ValueError(f"kt_ratio must lie in (0, 10], got {kt_ratio!r}")
        zeta = float(damping_ratio)
        if not math.isfinite(zeta) or not (0 <= zeta <= 1):
            raise ValueError(f"damping_ratio must lie in [0, 1], got {damping_ratio!r}")
        if contact not in ("both", "one"):
            raise ValueError(f"contact must be 'both' or 'one', got {contact!r}")
        settings = {"law": law, "law_code": LEVELSET_LAWS[law], "stiffness": k, "kt_ratio": kt_ratio,
                    "damping_ratio": zeta, "contact": contact, "mu": self.mu}
        self._grain_law_settings[SHAPE_AREA] = settings
        if default:
            self.grain_contact = settings

    def set_pair_shape_law(self, m1, m2, law):
        """The contact law of level-set grains of materials m1 and m2 (either order; a grain and a
        wall: the grain's and the wall's material): "area" (the node law set by set_grain_contact
        with law "area" or "node") or "hertz_curvature", replacing the default law of
        set_grain_contact for this pair. Both laws' settings must be given to set_grain_contact
        (one of them with default=False). Before the first run."""
        self._check_not_ready()
        a = self._check_material_index(m1, "m1")
        b = self._check_material_index(m2, "m2")
        if law not in SHAPE_LAWS:
            raise ValueError(f"law must be one of {', '.join(SHAPE_LAWS)}; got {law!r}")
        self._pair_shape_law[(min(a, b), max(a, b))] = law

    def _shape_law_table(self):
        """(the law of each material pair, row m1 * M + m2: levelset_hertz.LAW_HERTZ or LAW_NODE;
        whether a pair of materials in use takes each law)."""
        m = self.materials.shape[0]
        default = SHAPE_AREA if self.grain_contact["law"] in LEVELSET_LAWS else HERTZ_CURVATURE
        code = {SHAPE_AREA: LAW_NODE, HERTZ_CURVATURE: LAW_HERTZ}
        tab = np.full((m, m), code[default], dtype=np.int64)
        for (a, b), law in self._pair_shape_law.items():
            tab[a, b] = tab[b, a] = code[law]
        # the materials that can touch a grain: grains', walls' and, in a mixed run, the spheres'
        used = np.unique(np.concatenate([[b["material"] for b in self._grain_batches],
                                         np.asarray(self._wall_materials, dtype=np.int64).reshape(-1),
                                         *self._materials_of]))
        sub = tab[np.ix_(used, used)]
        return tab.reshape(-1), bool(np.any(sub == LAW_HERTZ)), bool(np.any(sub == LAW_NODE))

    def _grain_run_contact(self):
        """The grain-contact settings of the run and its material pairs' laws (None: one node law
        for every pair): the "hertz_curvature" settings, with the node law's in ["node"] when some
        pair of materials in use takes it."""
        laws, hertz, node = self._shape_law_table()
        if not hertz:
            if self._grain_law_settings.get(SHAPE_AREA) is None:
                raise ValueError("no material pair takes the law 'hertz_curvature' and the node law has no settings: "
                                 "call set_grain_contact(stiffness, law='area')")
            return self._grain_law_settings[SHAPE_AREA], None
        settings = self._grain_law_settings.get(HERTZ_CURVATURE)
        if settings is None:
            raise ValueError("set_pair_shape_law gives some material pairs the law 'hertz_curvature': call "
                             "set_grain_contact(law='hertz_curvature', default=False) for its settings")
        settings = dict(settings)
        if node:
            if self._grain_law_settings.get(SHAPE_AREA) is None:
                raise ValueError("set_pair_shape_law gives some material pairs the law 'area': call "
                                 "set_grain_contact(stiffness, law='area', default=False) for its settings")
            settings["node"] = dict(self._grain_law_settings[SHAPE_AREA])
        return settings, laws

    def _grain_mu_table(self):
        """(n_materials, n_materials): the friction of each material pair (pair_record), what the
        grains' contacts read."""
        m = self.materials.shape[0]
        return np.array([[self.pair_record(a, b)[S.P_MU] for b in range(m)] for a in range(m)])

    def _hertz_rows(self, grains, laws):
        """The "hertz_curvature" law's rows and material-pair records (R* = 1) of `grains`, kept in
        the checkpoint (laws: the law of each material pair, _shape_law_table)."""
        m = self.materials.shape[0]
        mtab = np.array([self.pair_record(a, b) for a in range(m) for b in range(m)])
        # the law scales the record's forces by sqrt(R): it needs R* = 1 in both the normal
        # coefficient and the tangential stiffness, where pair_record's one-material record is that
        # of two unit spheres (R* = 1/2) and its mixed record has P_CN at R* = 1, P_RSTAR at 1/2
        mtab[:, S.P_RSTAR] = 1.0
        mtab[:, S.P_CN] = 4.0 / 3.0 * mtab[:, S.P_ESTAR]
        return HertzRows(grains, mtab, self._wall_materials, self.materials, self.energy_accounting, laws)

    def _setup_grains(self):
        """setup() of a run of level-set grains (no spheres)."""
        if self.grain_contact is None:
            raise ValueError("level-set grains need their contact: call set_grain_contact first")
        if not self._box_set:
            raise ValueError("no domain: call set_box first")
        self.grain_contact, laws = self._grain_run_contact()
        self.grains = LevelSetBodies(self._grain_templates, self._grain_batches, self.materials,
                                     self._grain_mu_table(), np.array(self._wall_materials, dtype=np.int64))
        g = self.grains
        if laws is not None:
            g.hertz = self._hertz_rows(g, laws)
        rmax = float(g.radius.max())
        self.skin = self.skin if self.skin is not None else 0.2 * rmax
        self._new_cell(2.0 * rmax + self.skin)
        self._check_shear_heights()
        self.walls = wall_rows(np.array(self._walls, dtype=np.float64).reshape(-1, N_WALL))
        nw = self.walls.shape[0]
        self.ctl = np.zeros(N_CTL)
        self.ctl[CTL_G:CTL_G + 3] = self.gravity
        self.ctl[CTL_SKIN] = self.skin
        self.ctl[CTL_DIVERGE_OVERLAP] = self.diverge_overlap
        self.ctl[CTL_RMAX] = rmax
        self.ctl[CTL_LOCAL_DAMP] = self.local_damping
        self.ictl = np.zeros(N_ICTL, dtype=np.int64)
        self.ictl[ICTL_PERIODIC:ICTL_PERIODIC + 3] = self.periodic
        self.ictl[ICTL_NWALLS] = nw
        self._push_control()
        self.acc = np.zeros(N_ACC0 + 3 * nw)
        self.out = np.zeros(N_OUT, dtype=np.int64)
        self.n = 0
        self.dt_crit = self._grain_critical_time_step()
        dt = self._time_step()
        self.ctl[CTL_DT] = dt
        if not g.forces(dt, self.gravity, self.cell, self.periodic, self.walls, self.grain_contact, self.skin,
                        self.diverge_overlap, self.acc):
            i, j = int(g.gctl[GC_BAD_I]), int(g.gctl[GC_BAD_J])
            raise ValueError(f"grain {i} penetrates {self._grain_partner(j)} deeper than diverge_overlap = "
                             f"{self.diverge_overlap} of the smaller bounding radius at start")
        self.energy_start = self._grain_energy_total()
        self.ready = True
        self.message(f"graindem: {g.n} level-set grains of {len(set(g.tmpl.tolist()))} template(s), law "
                     f"{self.grain_contact['law']}, dt = {dt:.4g} s, dt_crit = {self.dt_crit:.4g} s, "
                     f"dt/dt_crit = {dt / self.dt_crit:.3f}")

    @staticmethod
    def _grain_partner(j):
        return f"grain {j}" if j >= 0 else f"wall {-2 - j}"

    def _new_cell(self, cutoff):
        """The cell record of the box (checked against the neighbour cutoff); returns its lengths."""
        L = self.box_hi - self.box_lo
        for k in range(3):
            if self.periodic[k] and L[k] <= 2.0 * cutoff:
                raise ValueError(f"periodic box length along axis {k} ({L[k]:.4g} m) must exceed twice the "
                                 f"neighbour cutoff 2*(2 r_max + skin) = {2 * cutoff:.4g} m")
        self.cell = np.zeros(N_CELL)
        self.cell[CELL_LO:CELL_LO + 3] = self.box_lo
        self.cell[CELL_L:CELL_L + 3] = L
        self.cell[CELL_LBUILD:CELL_LBUILD + 3] = L
        self.L0 = L.copy()
        return L

    def _time_step(self):
        """The requested dt, or dt_fraction * dt_crit; a dt above dt_crit is refused unless allowed."""
        if self.dt_requested is None:
            return self.dt_fraction * self.dt_crit
        dt = self.dt_requested
        if dt > self.dt_crit and not self.allow_unstable_dt:
            raise ValueError(f"dt = {dt:.4g} s exceeds the critical time step {self.dt_crit:.4g} s "
                             f"(dt/dt_crit = {dt / self.dt_crit:.3g}); lower dt or pass allow_unstable_dt=True")
        return dt

    def _grain_critical_time_step(self):
        """2 sqrt(m / K) of the stiffest node contact the lightest grain can have: every node of its
        template in contact (area law: K = k_s times its surface area; node law: k_n per node), with
        half its mass (two such grains) -- a bound, so dt below it is stable for any patch."""
        g = self.grains
        c = self.grain_contact
        if g.hertz is not None:
            dt = hertz_critical_time_step(g, c, g.hertz.mtab, self.materials, self.reference_overlap)
            if c.get("node") is None:
                return dt
            return min(dt, self._node_critical_time_step(c["node"]))
        return self._node_critical_time_step(c)

    def _node_critical_time_step(self, c):
        """The node law's part of _grain_critical_time_step (c: its settings)."""
        g = self.grains
        dyn = g.motion == MOTION_DYNAMIC
        if not np.any(dyn):
            return math.inf
        worst = math.inf
        for t in np.unique(g.tmpl[dyn]):
            a, b = g.t_node_off[t], g.t_node_off[t + 1]
            K = c["stiffness"] * (float(g.t_areas[a:b].sum()) if c["law"] == "area" else float(b - a))
            m = float(g.mass[dyn & (g.tmpl == t)].min())
            worst = min(worst, 2.0 * node_contact_time_step(0.5 * m, K))
        return worst

    def _run_grains(self, steps, callback, every, phase, stops, on_diverge):
        def advance(chunk):
            k, diverged = self.grains.run(chunk, self.dt, self.gravity, self.cell, self.ctl, self.ictl, self.periodic,
                                          self.walls, self.grain_contact, self.skin, self.diverge_overlap, self.acc)
            self.ictl[ICTL_STEP] = self.grains.gctl[GC_STEP]
            if diverged:
                self._grains_diverged(on_diverge)
            self._check_cell_heights()
            return k
        self._run_in_chunks(steps, callback, every, phase, stops, advance)

    def _run_in_chunks(self, steps, callback, every, phase, stops, advance):
        """The chunk loop of the runs with shaped grains: `advance(chunk)` makes the steps (and
        returns how many), callback(self) whenever the step count minus `phase` is a multiple of
        `every`, stop requests honoured between chunks."""
        import time
        t0 = time.perf_counter()
        done = 0
        try:
            while done < steps:
                chunk = min(steps - done, stops.chunk_limit())
                if every is not None:
                    chunk = min(chunk, every - (self.step_count - phase) % every)
                stops.start_chunk()
                done += advance(chunk)
                if callback is not None and every is not None and (self.step_count - phase) % every == 0:
                    callback(self)
                stops.after_chunk(chunk, self.step_count)
        finally:
            self.timing["run_s"] += time.perf_counter() - t0
        self.timing["steps"] += steps

    def _check_cell_heights(self):
        """A periodic cell compressed or sheared until its heights (distances between opposite
        faces) fall to twice the neighbour cutoff no longer has a unique minimum image: stop."""
        h = self.cell_matrix
        vol = abs(np.linalg.det(h))
        cutoff = 2.0 * self._largest_bounding_radius() + self.skin
        for k in range(3):
            height = vol / np.linalg.norm(np.cross(h[(k + 1) % 3], h[(k + 2) % 3]))
            if self.periodic[k] and height <= 2.0 * cutoff:
                raise ValueError(f"at step {self.step_count} the periodic cell's height along axis {k} is "
                                 f"{height:.4g} m, not above twice the neighbour cutoff 2*(2 r_max + skin) = "
                                 f"{2 * cutoff:.4g} m: the minimum image is no longer unique; use more grains")

    def _grains_diverged(self, on_diverge):
        g = self.grains
        self.out[OUT_STATUS] = STATUS_DIVERGED
        step = self.step_count + 1
        i, j = int(g.gctl[GC_BAD_I]), int(g.gctl[GC_BAD_J])
        if i >= 0:
            particles = [i] + ([j] if j >= 0 else [])
            contacts = [(i, j)]
            what = "the contact point of grain" if g.hertz is not None else "a node of grain"
            msg = (f"run diverged at step {step}: {what} {i} penetrates {self._grain_partner(j)} deeper "
                   f"than diverge_overlap = {self.diverge_overlap} of the smaller bounding radius (time step too "
                   "large or energy blow-up)")
        else:
            bad = np.flatnonzero(~(np.isfinite(g.pos).all(axis=1) & np.isfinite(g.angmom).all(axis=1)))
            particles, contacts = [int(x) for x in bad[:20]], []
            msg = f"run diverged at step {step}: grain(s) {particles} have a non-finite position or angular momentum"
        ckpt = on_diverge(self) if on_diverge is not None else None
        if ckpt is not None:
            msg += f"; checkpoint written to {ckpt}"
        raise Diverged(msg, particles, contacts, ckpt)

    def set_wall_velocity(self, wall, velocity):
        """Move wall `wall` at `velocity` (m/s) from now on (rigid translation; a servo wall's servo
        is switched off)."""
        w = self._wall_index(wall)
        row = np.zeros(N_WALL)
        row[WALL_VEL:WALL_VEL + 3] = _vec3("velocity", velocity)
        row[WALL_MODE] = WALL_PRESCRIBED
        self._set_wall_motion(w, row)

    def wall_positions(self):
        """(n_walls, 3): a point of each wall now."""
        self.setup()
        return self.walls[:, WALL_POINT:WALL_POINT + 3].copy()

    def control_axis(self, axis, strain_rate=None, stress=None, gain=None, max_rate=None, integral_steps=0):
        """Drive a periodic axis by a strain rate (1/s; > 0 stretches) or by a stress servo.

        stress: target (Pa, compression positive); gain (1/s) sets the strain rate per relative
        stress error, max_rate (1/s) clips it. integral_steps > 0 adds an integral term with that
        time constant in steps (it removes the steady error when the axis must keep moving).
        """
        axis = int(axis)
        if axis not in (0, 1, 2):
            raise ValueError(f"axis must be 0, 1 or 2, got {axis}")
        if not self.periodic[axis]:
            raise ValueError(f"axis {axis} is not periodic: only periodic axes deform")
        if (strain_rate is None) == (stress is None):
            raise ValueError("give exactly one of strain_rate or stress")
        if strain_rate is not None:
            r = float(strain_rate)
            if not math.isfinite(r):
                raise ValueError(f"strain_rate must be finite, got {strain_rate!r}")
            self.mode[axis] = 0
            self.rate[axis] = r
        else:
            self.mode[axis] = 1
            self.target[axis] = _pos_finite("stress", stress)
            self.gain[axis] = _pos_finite("gain", 1.0 if gain is None else gain)
            self.maxrate[axis] = _pos_finite("max_rate", 1.0 if max_rate is None else max_rate)
            ist = float(integral_steps)
            if not (ist >= 0.0 and math.isfinite(ist)):
                raise ValueError(f"integral_steps must be a finite number >= 0, got {integral_steps!r}")
            self.integral[axis] = 0.0 if ist == 0.0 else 1.0 / ist
        if self.ready:
            self._push_control()

    SHEAR_PLANES = ("xy", "xz", "yz")

    def control_shear(self, plane, strain_rate):
        """Shear the periodic cell homogeneously: the affine flow gets the velocity gradient
        L_ab = strain_rate (1/s) for plane "ab" in ("xy", "xz", "yz"): the velocity along a grows
        with the coordinate along b (simple shear u_x = strain_rate * y for "xy"), i.e. the
        engineering shear strain rate gamma_dot. The cell is the upper-triangular matrix whose rows
        are the cell vectors (Lx, 0, 0), (xy, Ly, 0), (xz, yz, Lz); a tilt that passes half a cell
        length is flipped back by an equivalent choice of cell vectors, like LAMMPS. Only these
        three planes (the upper triangle of L) are offered, which keeps the cell triangular; for
        the opposite sense use a negative rate or relabel the axes. Both axes of the plane must be
        periodic. Diagonal components stay with control_axis (rate or stress servo);
        strain_rate=0 stops the shear (the tilt stays)."""
        name = str(plane)
        if name not in self.SHEAR_PLANES:
            raise ValueError(f"plane must be one of {self.SHEAR_PLANES} (flow axis, then gradient axis), got {plane!r}")
        k = self.SHEAR_PLANES.index(name)
        axes = ("xyz".index(name[0]), "xyz".index(name[1]))
        for a in axes:
            if not self.periodic[a]:
                raise ValueError(f"plane {name!r}: axis {'xyz'[a]} is not periodic; shear needs both axes of the "
                                 "plane periodic (set_box periodic=...)")
        try:
            r = float(strain_rate)
        except (TypeError, ValueError):
            raise ValueError(f"strain_rate must be a finite number (1/s), got {strain_rate!r}")
        if not math.isfinite(r):
            raise ValueError(f"strain_rate must be a finite number (1/s), got {strain_rate!r}")
        self.shear[k] = r
        if self.ready:
            self._check_shear_heights()
            self._push_control()

    def _largest_bounding_radius(self):
        """The largest bounding radius of the run's bodies (the neighbour cutoff's 2 r_max + skin)."""
        if self.grains is not None:
            return float(self.grains.radius.max())
        if self.deformable is not None:
            d = self.deformable
            # a deformed grain's radius at the last rebuild, or its template's before the first
            return float(max(d.radius.max(), (d.t_radius + 2.0 * d.t_h)[d.tmpl].max()))
        return float(self.radius.max())

    def _check_shear_heights(self):
        """A sheared cell's heights (distances between opposite faces) shrink with the tilt; with
        every tilt at its flip limit of half a cell length they must still exceed twice the neighbour
        cutoff, or the minimum image would not be unique."""
        if not np.any(self.shear != 0.0):
            return
        L = self.cell[CELL_L:CELL_L + 3] if self.ready else self.box_hi - self.box_lo
        cutoff = 2.0 * self._largest_bounding_radius() + self.skin
        worst = np.inf * np.ones(3)
        lim = [0.5 * L[0] if self.shear[0] != 0 or self.shear[1] != 0 else 0.0,
               0.5 * L[0] if self.shear[1] != 0 or self.shear[0] != 0 else 0.0,
               0.5 * L[1] if self.shear[2] != 0 else 0.0]
        for sx in (-1, 1):
            for sz in (-1, 1):
                for syz in (-1, 1):
                    worst = np.minimum(worst, cell_heights(L, (sx * lim[0], sz * lim[1], syz * lim[2])))
        for k in range(3):
            if self.periodic[k] and worst[k] <= 2.0 * cutoff:
                raise ValueError(f"a sheared cell's height along axis {k} falls to {worst[k]:.4g} m at the largest "
                                 f"tilt (half a cell length); it must exceed twice the neighbour cutoff "
                                 f"2*(2 r_max + skin) = {2 * cutoff:.4g} m: use a larger cell")

    @property
    def cell_matrix(self):
        """(3, 3): the periodic cell's vectors as rows (upper-triangular h^T: a, b, c)."""
        self.setup()
        h = np.zeros((3, 3))
        L = self.box_lengths
        t = self.cell[CELL_TILT:CELL_TILT + 3]
        h[0, 0], h[1, 1], h[2, 2] = L
        h[1, 0], h[2, 0], h[2, 1] = t
        return h

    @property
    def shear_strain(self):
        """Accumulated shear strains (integral of L_xy, L_xz, L_yz dt), not reset by tilt flips."""
        return self.cell[CELL_GAMMA:CELL_GAMMA + 3].copy() if self.ready else np.zeros(3)

    def _push_control(self):
        self.ictl[ICTL_MODE:ICTL_MODE + 3] = self.mode
        self.ctl[CTL_RATE:CTL_RATE + 3] = self.rate
        self.ctl[CTL_TARGET:CTL_TARGET + 3] = self.target
        self.ctl[CTL_GAIN:CTL_GAIN + 3] = self.gain
        self.ctl[CTL_MAXRATE:CTL_MAXRATE + 3] = self.maxrate
        self.ctl[CTL_INTEGRAL:CTL_INTEGRAL + 3] = self.integral
        self.ctl[CTL_SHEAR:CTL_SHEAR + 3] = self.shear

    def set_friction(self, mu):
        """Give every material and every pair the friction coefficient mu (e.g. raise it after a
        frictionless preparation); per-pair overrides are dropped."""
        mu = float(mu)
        if not math.isfinite(mu) or mu < 0.0:
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        self.mu = mu
        self.prm[S.P_MU] = mu
        self.materials[:, 2] = mu
        self.mu_pair[:] = -1.0
        if self.ready:
            self._update_mtab()

    def set_law(self, law, xi=None):
        """Switch the tangential law (and optionally xi). Every active contact keeps its overlap and
        is reloaded into the new law along the proportional (no-slip) path to its current force
        ratio (see kernels.reload_contacts); run a short relaxation afterwards."""
        lid = law_id(law)
        if xi is not None:
            xi = float(xi)
            if not math.isfinite(xi) or xi < 0.0:
                raise ValueError(f"xi must be a finite number >= 0, got {xi!r}")
            self.xi = xi
            self.prm[S.P_XI] = xi
        self.law_name = str(law)
        self.law = lid
        if not self.ready:
            return
        self._update_mtab()
        self.ictl[ICTL_LAW] = lid
        m = int(self.ictl[ICTL_NPAIRS])
        nwc = int(self.ictl[ICTL_NWCAND])
        self.store.ensure_free(m + nwc + 1)
        st = self.store
        reload_contacts(lid, self.mtab, self.pfs, self.pist, m, self.pk, self.pm, st.pts, st.nxt, st.meta)
        if self.walls.shape[0]:
            reload_contacts(lid, self.mtab, self.wfs, self.wist, nwc, self.wk, self.wm, st.pts, st.nxt, st.meta)

    def set_energy_accounting(self, on):
        """Count tangential work and frictional dissipation per contact from now on (slower)."""
        self.energy_accounting = bool(on)
        if self.ready:
            self.ictl[ICTL_ENERGY] = int(self.energy_accounting)

    def set_local_damping(self, value):
        value = float(value)
        if not (0.0 <= value < 1.0):
            raise ValueError(f"local_damping must lie in [0, 1), got {value!r}")
        if value != 0.0 and (self.deformable is not None or self._deform_batches):
            raise ValueError("local_damping is not applied to deformable grains: damp them by the contact damping "
                             "(set_deformable_contact) and the modal damping (add_deformable_grains)")
        self.local_damping = value
        if self.ready:
            self.ctl[CTL_LOCAL_DAMP] = value

    def set_adaptive_dt(self, on, interval=100):
        """Keep dt = dt_fraction * dt_crit as contacts stiffen (Kuhn 2011, section 4.2): every
        `interval` steps (at step counts that are multiples of it, so a restart repeats the same
        updates) dt_crit is re-evaluated from the current largest overlap and dt reset to the
        fraction of it. Not compatible with an explicit dt."""
        on = bool(on)
        interval = int(interval)
        if interval < 1:
            raise ValueError(f"adaptive_dt_interval must be an integer >= 1, got {interval}")
        if on and self.dt_requested is not None:
            raise ValueError("adaptive_dt keeps dt = dt_fraction * dt_crit: it cannot be combined with an explicit dt")
        self.adaptive_dt = on
        self.adaptive_dt_interval = interval
        self._dt_announced = self.dt if getattr(self, "ready", False) else None

    def adapt_dt(self, crit=None):
        """Set dt = dt_fraction * dt_crit now (what adaptive_dt does every adaptive_dt_interval steps).
        crit: dt_crit when it is known (a decomposed run computes it from the overlaps of all ranks),
        else critical_time_step()."""
        if crit is None:
            crit = self.critical_time_step()
        old = self.dt
        new = self.dt_fraction * crit
        self.dt_crit = crit
        if new == old:
            return
        self._time_offset += self.step_count * (old - new)
        self.ctl[CTL_DT] = new
        last = getattr(self, "_dt_announced", None) or old
        # announce changes of 1 % or more since the last announced dt, not every small update
        if abs(new / last - 1.0) >= 0.01:
            self._dt_announced = new
            self.message(f"graindem: step {self.step_count}: dt = {new:.4g} s (was {last:.4g} s), "
                         f"dt_crit = {crit:.4g} s, dt/dt_crit = {self.dt_fraction:.3f}")

    def _check_not_ready(self):
        if self.ready:
            raise RuntimeError("the simulation has started; build it completely before the first run")

    # ---------------------------------------------------------------- setup
    def setup(self):
        """Allocate the state, validate the assembly and the time step, build the neighbour list."""
        if self.ready:
            return
        if self._deform_batches:
            return self._setup_deformable()
        if self._grain_batches:
            if self._positions:
                return self._setup_mixed()
            return self._setup_grains()
        self._setup_spheres()
        self.dt_crit = self.critical_time_step()
        dt = self._time_step()
        self.ctl[CTL_DT] = dt
        self.ready = True
        self.message(f"graindem: {self.n} spheres, law {self.law_name}, dt = {dt:.4g} s, "
                     f"dt_crit = {self.dt_crit:.4g} s, dt/dt_crit = {dt / self.dt_crit:.3f}")

    def _setup_spheres(self, rmax_cell=0.0):
        """The spheres' arrays, cell, control records, history store and neighbour list (setup()
        without the time step); rmax_cell: a larger bounding radius of other bodies in the run,
        which the periodic box must hold too."""
        if not self._positions:
            raise ValueError("no particles: call add_particles first")
        if not self._box_set:
            raise ValueError("no domain: call set_box first")
        pos = np.concatenate(self._positions)
        r = np.concatenate(self._radii)
        n = len(r)
        if n > PAIR_INDEX_MAX:
            raise ValueError(f"number of particles must be at most {PAIR_INDEX_MAX} (the pair rows hold "
                             f"particle indices as {np.dtype(PAIR_INDEX).name}), got {n}")
        self.n = n
        self.pos = np.ascontiguousarray(pos)
        self.vel = np.ascontiguousarray(np.concatenate(self._vel))
        self.omega = np.ascontiguousarray(np.concatenate(self._omega))
        self.quat = np.zeros((n, 4))
        self.quat[:, 0] = 1.0
        self.force = np.zeros((n, 3))
        self.torque = np.zeros((n, 3))
        self.radius = r
        self.pid = np.arange(n, dtype=np.int64)
        self.pmat = np.concatenate([np.concatenate(self._materials_of),
                                    np.array(self._wall_materials, dtype=np.int64)]).astype(np.int64)
        self.mass = self.materials[self.pmat[:n], 3] * 4.0 / 3.0 * math.pi * r ** 3
        self.inertia = 0.4 * self.mass * r * r
        rmax = float(r.max())
        skin = self.skin if self.skin is not None else 0.2 * max(rmax, rmax_cell)
        self.skin = skin
        self._new_cell(2.0 * max(rmax, rmax_cell) + skin)
        self._check_shear_heights()
        self.walls = wall_rows(np.array(self._walls, dtype=np.float64).reshape(-1, N_WALL))
        nw = self.walls.shape[0]
        self.ctl = np.zeros(N_CTL)
        self.ctl[CTL_G:CTL_G + 3] = self.gravity
        self.ctl[CTL_LOCAL_DAMP] = self.local_damping
        self.ctl[CTL_VISC] = self.visc
        self.ctl[CTL_SKIN] = skin
        self.ctl[CTL_DIVERGE_OVERLAP] = self.diverge_overlap
        self.ctl[CTL_RMAX] = rmax
        self.ictl = np.zeros(N_ICTL, dtype=np.int64)
        self.ictl[ICTL_LAW] = self.law
        self.ictl[ICTL_N] = n
        self.ictl[ICTL_NWALLS] = nw
        self.ictl[ICTL_PERIODIC:ICTL_PERIODIC + 3] = self.periodic
        self.ictl[ICTL_ENERGY] = int(self.energy_accounting)
        self.ictl[ICTL_SORT] = int(self.sort_particles)
        self._push_control()
        self.acc = np.zeros(N_ACC0 + 3 * nw)
        self.out = np.zeros(N_OUT, dtype=np.int64)
        self.store = HistoryStore(1024)
        cap = min(max(1024, 8 * n), PAIR_INDEX_MAX)
        self._alloc_pairs(cap)
        self.pstart = np.zeros(n + 1, dtype=np.int64)
        self._alloc_wall_rows(n * nw)
        self.rrel = np.zeros(1)
        self.pos_build = self.pos.copy()
        self._update_mtab()
        self.ictl[ICTL_NMAT] = self.materials.shape[0]
        self._rebuild()
        self._check_initial_overlaps()

    def message(self, text):
        self.last_message = text
        if self.verbose:
            print(text, flush=True)

    @property
    def dt(self):
        return float(self.ctl[CTL_DT])

    def _grow_pairs(self):
        """Double the pair arrays (keeping the listed rows), up to the row count PAIR_INDEX can number."""
        cap = self.pi.shape[0]
        if cap >= PAIR_INDEX_MAX:
            raise ValueError(f"pair capacity must be at most {PAIR_INDEX_MAX} rows (the pair passes number rows "
                             f"as {np.dtype(PAIR_INDEX).name}); the neighbour list needs more")
        self._alloc_pairs(min(2 * cap, PAIR_INDEX_MAX), keep=int(self.ictl[ICTL_NPAIRS]))

    def _alloc_pairs(self, cap, keep=0):
        old = getattr(self, "pi", None)
        arrays = {}
        if old is None:
            self.prs = np.zeros((0, RL.N_ROLL_STATE if self.rolling_on else 0))
        for name, shape, dtype in (("pi", (cap,), PAIR_INDEX), ("pj", (cap,), PAIR_INDEX),
                                   ("pfs", (cap, S.N_FSTATE), np.float64),
                                   ("pist", (cap, S.N_ISTATE), np.int64), ("pcq", (cap, 4), np.float64),
                                   ("pk", (cap, N_PK), np.float64), ("pm", (cap,), np.int64),
                                   ("prs", (cap, self.prs.shape[1]), np.float64)):
            a = np.zeros(shape, dtype=dtype)
            if old is not None and keep:
                a[:keep] = getattr(self, name)[:keep]
            arrays[name] = a
        for name, a in arrays.items():
            setattr(self, name, a)
            if name not in ("pk", "pm", "prs"):
                setattr(self, "q" + name[1:], np.zeros_like(a))

    def _alloc_wall_rows(self, capacity):
        """Fresh wall-row arrays for `capacity` rows (at least the spheres times the walls: every key
        the build may list), with the pair rows' rolling-state width."""
        self.wfs, self.wist, self.wcq = S.fresh_rows(capacity)
        self.wcand = np.zeros(max(capacity, 1), dtype=np.int64)
        self.wk = np.zeros((capacity, N_PK))
        self.wm = np.zeros(capacity, dtype=np.int64)
        self.wrs = np.zeros((capacity, self.prs.shape[1]))

    def _rebuild(self):
        while True:
            k = build_pairs(self.pos, self.vel, self.omega, self.quat, self.force, self.torque, self.radius,
                            self.mass, self.inertia, self.pmat, self.pid, self.mtab, self.cell, self.ctl, self.ictl,
                            self.pstart, self.pi, self.pj, self.pfs, self.pist, self.pcq, self.pk, self.pm,
                            self.qi, self.qj, self.qfs, self.qist, self.qcq, self.pos_build,
                            self.store.pts, self.store.nxt, self.store.meta, self.acc,
                            self.walls, self.wcand, self.wfs, self.wist, self.wcq, self.wk, self.wm,
                            self.prs, self.wrs, self.rrel)
            if k >= 0:
                return
            self._grow_pairs()

    def _pair_geometry(self):
        """Branch vectors l = x_j - x_i (minimum image) and overlaps of the listed pairs (copies)."""
        m = int(self.ictl[ICTL_NPAIRS])
        i = self.pi[:m]
        j = self.pj[:m]
        d = self.pos[j] - self.pos[i]
        # the kernels' minimum image (tilts are 0 unless sheared)
        d = minimum_image(d, self.cell[CELL_L:CELL_L + 3], self.cell[CELL_TILT:CELL_TILT + 3], self.periodic)
        dist = np.sqrt((d * d).sum(axis=1))
        return i, j, d, dist, self.radius[i] + self.radius[j] - dist

    def touching_energy_at_start(self):
        """Hertz energy 2/5 c_n delta^(5/2) (J) of the sphere pairs and sphere-wall contacts that overlap
        in the current positions before their first force pass: their rows hold no force until a step
        computes one, so measure()'s contact energy counts them only from then on, and an energy
        balance started before the first step adds this to its start."""
        m = int(self.ictl[ICTL_NPAIRS])
        energy = hertz_energy_sum(np.ascontiguousarray(self.pk[:m, PK_CN]), self._pair_geometry()[4])
        nw = self.walls.shape[0]
        if nw:
            rows = np.arange(int(self.ictl[ICTL_NWCAND]))
            delta = self._wall_overlaps(self.wcand[rows] // nw, self.wcand[rows] % nw)
            energy += hertz_energy_sum(np.ascontiguousarray(self.wk[rows, PK_CN]), delta)
        return energy

    def _wall_heights(self, i, w):
        """Heights of spheres i above walls w (arrays) along the walls' inward normals."""
        return np.einsum("ij,ij->i", self.pos[i] - self.walls[w, WALL_POINT:WALL_POINT + 3],
                         self.walls[w, WALL_NORMAL:WALL_NORMAL + 3])

    def _wall_overlaps(self, i, w):
        """Overlaps (radius minus distance to the plane) of spheres i with walls w (arrays)."""
        h = self._wall_heights(i, w)
        return self.radius[i] - h

    def _check_initial_overlaps(self):
        i, j, d, dist, delta = self._pair_geometry()
        frac = delta / np.minimum(self.radius[i], self.radius[j])
        bad = np.flatnonzero(frac > self.max_initial_overlap)
        if bad.size:
            b = bad[np.argmax(frac[bad])]
            raise ValueError(f"{bad.size} particle pair(s) overlap by more than max_initial_overlap = "
                             f"{self.max_initial_overlap} of the smaller radius at start; worst: particles "
                             f"{int(i[b])} and {int(j[b])} overlap {frac[b]:.3g}")
        every = np.arange(self.n)
        for w in range(self.walls.shape[0]):
            frac = self._wall_overlaps(every, np.full(self.n, w)) / self.radius
            bad = np.flatnonzero(frac > self.max_initial_overlap)
            if bad.size:
                raise ValueError(f"{bad.size} particle(s) overlap wall {w} by more than max_initial_overlap = "
                                 f"{self.max_initial_overlap} of their radius at start; worst: particle "
                                 f"{int(bad[np.argmax(frac[bad])])}")

    def critical_time_step(self):
        """2/omega_max of one contact: normal (Hertz k_n, reduced mass) and tangential-rotational
        (k_t with the translational and rotational inertia of both spheres), at the larger of the
        largest current overlap and the reference overlap, for the most critical particle size.
        With adaptive_dt on, at the largest current overlap alone (the reference overlap only when
        no pair overlaps): the step then follows the actual stiffness both ways. Level-set grains:
        the bound of their node contacts (see _grain_critical_time_step); both: the smallest of the
        spheres', the grains' and the grain-sphere contacts' (_mixed_critical_time_step). Deformable
        grains: their set-up's contact and modal bound (_deformable_critical_time_step)."""
        if self.mixed is not None:
            return self._mixed_critical_time_step()
        if self.grains is not None:
            return self._grain_critical_time_step()
        if self.deformable is not None:   # the contact and modal bounds of their set-up
            return min(self.deformable_critical_steps.values())
        return self.sphere_critical_time_step()

    def sphere_critical_time_step(self, dmax=None):
        """critical_time_step() of spheres; dmax: the largest overlap of the listed pairs (negative
        when none touches), computed from them when None (a decomposed run passes that of all ranks)."""
        if dmax is None:
            i, j, d, dist, delta = self._pair_geometry()
            dmax = float(delta.max()) if delta.size else 0.0
        ref = self.reference_overlap if self.reference_overlap is not None else 0.01 * float(self.radius.min())
        dref = dmax if (self.adaptive_dt and dmax > 0.0) else max(dmax, ref)
        r = self.radius
        m = self.mass
        a = np.sqrt(0.5 * r * dref)
        # each particle against the stiffest partner material present (walls included)
        nm = self.materials.shape[0]
        present = np.unique(self.pmat)
        tab = self.mtab.reshape(nm, nm, S.N_PARAM)[:, present]
        mat = self.pmat[:self.n]
        kn = tab[:, :, S.P_KNC].max(axis=1)[mat] * a
        kt = tab[:, :, S.P_KTC].max(axis=1)[mat] * a
        w2 = np.maximum(2.0 * kn / m, 2.0 * kt * (1.0 / m + r * r / self.inertia))
        return float(2.0 / math.sqrt(w2.max()))

    # ---------------------------------------------------------------- running
    def run(self, steps, callback=None, every=None, on_diverge=None, phase=0):
        """Advance `steps` steps. callback(sim) is called whenever the step count minus `phase`
        is a multiple of `every` (reads only).

        on_diverge(sim) is called (e.g. to write a checkpoint) before Diverged is raised.
        SIGINT/SIGTERM stop the run at the end of a step with engine.interrupts.RunStopped (a
        KeyboardInterrupt); the state is then complete and can be saved to continue exactly.
        """
        # kernel chunks bounded in time, so that stop requests are honoured between them
        from .interrupts import StopRequests
        with StopRequests(self.max_chunk_steps) as stops:
            return self._run_chunks(steps, callback, every, on_diverge, phase, stops)

    # None: chunks of ~engine.interrupts.CHUNK_SECONDS; an int fixes the steps per kernel call
    max_chunk_steps = None
    # under an MPI launcher with several ranks (parallel.subdomain): the ranks' boxes are bisected
    # again every this many neighbour rebuilds
    mpi_rebalance_every = 10

    def _run_chunks(self, steps, callback, every, on_diverge, phase, stops):
        import time
        steps = int(steps)
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        self.setup()
        if every is not None:
            every = int(every)
            if every < 1:
                raise ValueError(f"every must be >= 1, got {every}")
        comm = world()
        if comm is not None and (self.grains is not None or self.deformable is not None):
            raise ValueError("level-set and deformable grains do not run decomposed over MPI ranks yet: run them on "
                             "one rank (see docs/parallel-mpi.md)")
        if self.mixed is not None:
            return self._run_mixed(steps, callback, every, phase, stops, on_diverge)
        if self.grains is not None:
            return self._run_grains(steps, callback, every, phase, stops, on_diverge)
        if self.deformable is not None:
            return self._run_deformable(steps, callback, every, phase, stops, on_diverge)
        if comm is not None:
            from ..parallel.subdomain import run_decomposed
            return run_decomposed(self, comm, steps, callback, every, phase, stops,
                                  diverged=lambda: self._diverged(on_diverge))
        done = 0
        t0 = time.perf_counter()
        while done < steps:
            chunk = min(steps - done, stops.chunk_limit())
            if every is not None:
                chunk = min(chunk, every - (int(self.ictl[ICTL_STEP]) - phase) % every)
            if self.adaptive_dt:
                step = int(self.ictl[ICTL_STEP])
                if step % self.adaptive_dt_interval == 0:
                    self.adapt_dt()
                chunk = min(chunk, self.adaptive_dt_interval - step % self.adaptive_dt_interval)
            self.store.ensure_free(int(self.ictl[ICTL_NPAIRS]) + self.n * self.walls.shape[0] + 1024)
            st = self.store
            stops.start_chunk()
            run_steps(chunk, self.pos, self.vel, self.omega, self.quat, self.force, self.torque,
                      self.radius, self.mass, self.inertia, self.pmat, self.pid, self.mtab, self.cell, self.ctl,
                      self.ictl, self.walls, self.wcand, self.pstart, self.pi, self.pj, self.pfs, self.pist,
                      self.pcq, self.pk, self.pm, self.qi, self.qj, self.qfs, self.qist, self.qcq,
                      self.wfs, self.wist, self.wcq, self.wk, self.wm,
                      self.pos_build, st.pts, st.nxt, st.meta, self.acc, self.out,
                      self.rolling_pairs.reshape(-1, RL.N_ROLL_PARAM), self.prs, self.wrs, self.rrel, NO_MORE_STRESS,
                      self.stress_limbs, WHOLE_STEPS, new_accumulator(3 * self.walls.shape[0]))
            done += int(self.out[OUT_STEPS])
            status = int(self.out[OUT_STATUS])
            if status == STATUS_PAIRS_FULL:
                self._grow_pairs()
                self._rebuild()
            elif status == STATUS_DIVERGED:
                self.timing["run_s"] += time.perf_counter() - t0
                self._diverged(on_diverge)
            if callback is not None and every is not None and (int(self.ictl[ICTL_STEP]) - phase) % every == 0:
                callback(self)
            stops.after_chunk(int(self.out[OUT_STEPS]), int(self.ictl[ICTL_STEP]))
        self.timing["run_s"] += time.perf_counter() - t0
        self.timing["steps"] += steps

    def _diverged(self, on_diverge):
        # particles are named by their index in the order they were added (rows may be renumbered)
        ids = self.pid
        p = int(self.out[OUT_PARTICLE])
        p = int(ids[p]) if p >= 0 else p
        ci, cj = int(self.out[OUT_CI]), int(self.out[OUT_CJ])
        ci = int(ids[ci]) if ci >= 0 else ci
        cj = int(ids[cj]) if cj >= 0 else cj
        particles, contacts = [], []
        step = int(self.ictl[ICTL_STEP])
        if p >= 0:
            particles.append(p)
            msg = f"run diverged at step {step}: particle {p} has a non-finite position or spin"
        else:
            particles = [ci] + ([cj] if cj >= 0 else [])
            what = f"particles {ci} and {cj}" if cj >= 0 else f"particle {ci} and wall {-1 - cj}"
            contacts.append((ci, cj))
            msg = (f"run diverged at step {step}: the contact of {what} overlaps more than "
                   f"diverge_overlap = {self.diverge_overlap} of the radius (time step too large or energy blow-up)")
        bad_v = ids[np.flatnonzero(~np.isfinite(self.vel).all(axis=1))]
        if bad_v.size:
            particles.extend(int(x) for x in bad_v[:20] if int(x) not in particles)
        ckpt = on_diverge(self) if on_diverge is not None else None
        if ckpt is not None:
            msg += f"; checkpoint written to {ckpt}"
        raise Diverged(msg, particles, contacts, ckpt)

    # ---------------------------------------------------------------- reading
    @property
    def step_count(self):
        return int(self.ictl[ICTL_STEP]) if self.ready else 0

    @property
    def time(self):
        return self.step_count * self.dt + self._time_offset if self.ready else 0.0

    @property
    def kinds(self):
        """{body kind: count} of the bodies in the run ("sphere", "levelset", "deformable"; spheres and
        level-set grains in a mixed run, level-set and deformable grains in a run with both)."""
        self.setup()
        if self.mixed is not None:
            return {"sphere": self.n, "levelset": self.grains.n}
        if self.deformable is not None:
            n_r = self._n_levelset
            n = self.deformable.n
            return {"levelset": n_r, "deformable": n - n_r} if n_r else {"deformable": n}
        return {"levelset": self.grains.n} if self.grains is not None else {"sphere": self.n}

    @property
    def n_bodies(self):
        return sum(self.kinds.values())

    @property
    def box_lengths(self):
        return self.cell[CELL_L:CELL_L + 3].copy()

    @property
    def volume(self):
        return float(np.prod(self.box_lengths))

    def wall_forces(self):
        """(n_walls, 3): force exerted by the particles on each wall at the last step."""
        nw = self.walls.shape[0]
        if self.mixed is not None:
            return self._mixed_wall_forces()
        return self.acc[ACC_WALL:ACC_WALL + 3 * nw].reshape(nw, 3).copy()

    def contact_arrays(self):
        """Active sphere-sphere contacts: dict of i, j, normal (m,3), N, T (global, m x 3), branch, overlap, kind."""
        i, j, d, dist, delta = self._pair_geometry()
        m = int(self.ictl[ICTL_NPAIRS])
        act = self.pfs[:m, S.F_DELTA] > 0.0
        n = d[act] / dist[act, None]
        q = self.pcq[:m][act]
        tl = np.zeros((act.sum(), 3))
        tl[:, 0] = self.pfs[:m, S.F_TX][act]
        tl[:, 1] = self.pfs[:m, S.F_TY][act]
        T = rotate_rows(q, tl)
        return {"i": i[act].copy(), "j": j[act].copy(), "normal": n, "N": self.pfs[:m, S.F_N][act].copy(),
                "T": T, "branch": d[act], "overlap": delta[act], "kind": self.pfs[:m, S.F_KIND][act].astype(int),
                "history_length": self.pist[:m, S.I_LEN][act].copy(), "row": np.flatnonzero(act)}

    def wall_contact_arrays(self):
        nw = self.walls.shape[0]
        nwc = int(self.ictl[ICTL_NWCAND])
        rows = np.flatnonzero(self.wfs[:nwc, S.F_DELTA] > 0.0)
        key = self.wcand[rows]
        i = key // max(nw, 1)
        w = key % max(nw, 1)
        tl = np.zeros((rows.size, 3))
        tl[:, 0] = self.wfs[rows, S.F_TX]
        tl[:, 1] = self.wfs[rows, S.F_TY]
        T = rotate_rows(self.wcq[rows], tl)
        normal = -self.walls[w, WALL_NORMAL:WALL_NORMAL + 3]
        h = self._wall_heights(i, w)
        return {"i": i, "wall": w, "normal": normal, "N": self.wfs[rows, S.F_N].copy(), "T": T, "h": h,
                "overlap": self.radius[i] - h, "kind": self.wfs[rows, S.F_KIND].astype(int),
                "history_length": self.wist[rows, S.I_LEN].copy()}

    def stress(self, volume=None):
        """Love-Weber stress (Pa, compression positive) of the elastic contact forces:
        sigma = (1/V) [sum_pairs f_ij (x) l_ij + sum_wall contacts f_(i->wall) (x) h n].
        Level-set grains: the same sum over their node contacts at the last force evaluation (the
        node force times the branch vector between the two centres; walls: times the vector from
        the grain's centre to the node), contact.levelset_contact. Deformable grains: the same sum
        over their node contacts (cylinders as walls), bodies.deformable, evaluated at the start of
        the last step (their forces come before the step's drift), over the volume now."""
        V = self.volume if volume is None else float(volume)
        if self.mixed is not None:
            return self._mixed_stress(V)
        if self.grains is not None or self.deformable is not None:
            self.setup()
            return self.acc[ACC_STRESS:ACC_STRESS + 9].reshape(3, 3) / V
        return self._sphere_stress(V)

    def _sphere_stress(self, V):
        c = self.contact_arrays()
        f = c["N"][:, None] * c["normal"] - c["T"]
        s = f.T @ c["branch"]
        if self.walls.shape[0]:
            wc = self.wall_contact_arrays()
            fw = wc["N"][:, None] * wc["normal"] - wc["T"]
            s += fw.T @ (wc["h"][:, None] * wc["normal"])
        return s / V

    def tangential_energy(self):
        """Stored tangential elastic energy of all contacts (each law's definition, contact.energy)."""
        m = int(self.ictl[ICTL_NPAIRS])
        st = self.store
        e = tangential_energy_sum(self.law, self.mtab, self.pfs, self.pist, m, self.pk, self.pm, st.pts, st.nxt)
        if self.walls.shape[0]:
            e += tangential_energy_sum(self.law, self.mtab, self.wfs, self.wist, int(self.ictl[ICTL_NWCAND]),
                                       self.wk, self.wm, st.pts, st.nxt)
        return float(e)

    def _grain_contact_energies(self):
        """The energies of the grains' contacts (J): elastic_normal_energy, tangential_energy,
        tangential_work (= tangential_energy + frictional_dissipation), frictional_dissipation,
        viscous_dissipation; the node laws' from contact.levelset_contact, the "hertz_curvature"
        law's from its rows (HertzRows.energies)."""
        g = self.grains
        if g.hertz is not None:
            return g.hertz.energies(g, self.grain_contact)
        return node_contact_energies(g.energy)

    def _grain_energy_total(self, contact=None):
        """Kinetic + contact elastic + dissipated - work of gravity and boundaries of a grain run:
        constant while the energy balance closes (measure()'s energy_balance_error)."""
        e = self.grains.energy
        c = self._grain_contact_energies() if contact is None else contact
        return (self.grains.kinetic_energy() + c["elastic_normal_energy"] + c["viscous_dissipation"]
                + c["tangential_work"] + float(e[E_LOCAL]) - float(e[E_GRAVITY]) - self._grain_boundary_work())

    def _grain_boundary_work(self):
        """Work of the walls and of the cell's deformation on the grains up to the last forces. The
        servo books the cell's work by the trapezoid rule when the next step starts; the half that
        closes the last step (its strain rates with the stress now) is added here."""
        return float(self.acc[ACC_BOUNDARY_WORK]) + pending_cell_work(self.acc, self.cell, self.dt)

    def _grain_measure(self):
        g = self.grains
        e = g.energy
        net = g.contact_network()
        pair = net["j"] >= 0
        n_c = int(pair.sum())
        dyn = g.motion == MOTION_DYNAMIC
        solid = float(np.sum(g.mass[dyn] / self.materials[g.material[dyn], 3]))
        sig = self.stress()
        strain = np.log(self.box_lengths / self.L0)
        fmean = float(np.mean(np.linalg.norm(net["force"], axis=1))) if len(net["i"]) else 0.0
        # g.force holds contact forces plus gravity: the net force on each grain
        unbalanced = (float(np.mean(np.linalg.norm(g.force[dyn], axis=1))) / fmean if fmean > 0.0 else float("inf"))
        n_cp = int(g.gctl[GC_NCP])
        ce = self._grain_contact_energies()
        total = self._grain_energy_total(ce)
        store = g.hertz.store if g.hertz is not None else None
        return {
            "step": self.step_count, "time": self.time, "unbalanced_force_ratio": unbalanced,
            "stress": sig, "pressure": float(np.trace(sig) / 3.0),
            "strain": strain, "volumetric_strain": float(strain.sum()), "shear_strain": self.shear_strain,
            "void_ratio": self.volume / solid - 1.0 if solid > 0 else float("inf"), "n_contacts": n_c,
            "coordination": 2.0 * n_c / max(int(dyn.sum()), 1), "n_wall_contacts": int((~pair).sum()),
            "n_contact_nodes": n_cp, "sliding_fraction": float(e[E_SLIDING]) / n_cp if n_cp else 0.0,
            "kinetic_energy": g.kinetic_energy(),
            **{k: ce[k] for k in ("elastic_normal_energy", "tangential_energy", "frictional_dissipation",
                                  "tangential_work", "viscous_dissipation")},
            "local_damping_dissipation": float(e[E_LOCAL]),
            "gravity_work": float(e[E_GRAVITY]), "boundary_work": self._grain_boundary_work(),
            "energy_balance_error": total - self.energy_start,
            "mean_history_length": 0.0, "max_history_length": 0,
            "store_bytes": store.n_live * BYTES_PER_POINT if store is not None else 0,
            "store_bytes_allocated": store.bytes_allocated if store is not None else 0,
            "n_rebuilds": int(g.gctl[GC_NREBUILDS]), "dt_over_dt_crit": self.dt / self.dt_crit,
        }

    def measure(self):
        """Measurements of the current state (never changes the state)."""
        if self.deformable is not None or self._deform_batches:
            self.setup()
            return self._deformable_measure()
        if self.grains is not None or self._grain_batches:
            self.setup()
            if self.mixed is not None:
                return self._mixed_measure()
            return self._grain_measure()
        return self._sphere_measure()

    def _sphere_measure(self, extra_force=None, extra_contacts=None):
        """measure() of the spheres; extra_force (n, 3): forces on them from other bodies (summed
        into their net forces), extra_contacts (m, 3): those contacts' forces (counted in the mean
        contact force)."""
        c = self.contact_arrays()
        sig = self.stress()
        n_c = int(c["N"].size)
        vs = float(np.sum(4.0 / 3.0 * math.pi * self.radius ** 3))
        V = self.volume
        ke = 0.5 * float(np.sum(self.mass[:, None] * self.vel ** 2)) + 0.5 * float(np.sum(self.inertia[:, None] * self.omega ** 2))
        # Hertz energy 2/5 N delta at the overlap the force was computed for (the positions have
        # drifted since; at DEM steps that changes delta by a few per cent)
        en = 0.4 * float(np.sum(c["N"] * self.pfs[c["row"], S.F_DELTA]))
        m = int(self.ictl[ICTL_NPAIRS])
        act = self.pfs[:m, S.F_DELTA] > 0.0
        wfs = self.wfs[:int(self.ictl[ICTL_NWCAND])]
        wact = wfs[:, S.F_DELTA] > 0.0
        if self.walls.shape[0]:
            wc = self.wall_contact_arrays()
            en += 0.4 * float(np.sum(wfs[:, S.F_N] * wfs[:, S.F_DELTA]))
        lengths = np.concatenate([self.pist[:m, S.I_LEN][act], self.wist[:wfs.shape[0], S.I_LEN][wact]])
        e_roll, d_roll = self.rolling_energies(act, wact)
        tmag = np.linalg.norm(c["T"], axis=1)
        mu_rows = self.mtab[self.pm[c["row"]], S.P_MU]
        sliding = np.sum(tmag >= mu_rows * c["N"] * (1.0 - 1e-9)) if n_c else 0
        strain = np.log(self.box_lengths / self.L0)
        diss = float(np.sum(self.pfs[:m, S.F_DISS]) + np.sum(wfs[:, S.F_DISS]) + self.acc[ACC_DISS_RELEASED])
        work_t = float(np.sum(self.pfs[:m, S.F_WORK][act]) + np.sum(wfs[:, S.F_WORK][wact]))
        # mean |net contact force| per particle over mean |contact force|: the usual measure of
        # static equilibrium (0 at rest; ~1 in free collisions). Rattlers count with zero net force.
        fnet = np.zeros((self.n, 3))
        fc = c["N"][:, None] * c["normal"] - c["T"]
        np.add.at(fnet, c["j"], fc)
        np.add.at(fnet, c["i"], -fc)
        fmean = float(np.mean(np.linalg.norm(fc, axis=1))) if n_c else 0.0
        if self.walls.shape[0]:
            fw = wc["N"][:, None] * wc["normal"] - wc["T"]
            np.add.at(fnet, wc["i"], -fw)
            if wc["N"].size:
                fmean = (fmean * n_c + float(np.sum(np.linalg.norm(fw, axis=1)))) / (n_c + wc["N"].size)
        fnet += self.mass[:, None] * self.gravity
        if extra_force is not None:
            fnet += extra_force
            n_x = len(extra_contacts)
            if n_x:
                n_all = n_c + (wc["N"].size if self.walls.shape[0] else 0)
                fmean = (fmean * n_all + float(np.sum(np.linalg.norm(extra_contacts, axis=1)))) / (n_all + n_x)
        unbalanced = float(np.mean(np.linalg.norm(fnet, axis=1))) / fmean if fmean > 0.0 else float("inf")
        return {
            "step": self.step_count, "time": self.time, "unbalanced_force_ratio": unbalanced,
            "stress": sig, "pressure": float(np.trace(sig) / 3.0),
            "strain": strain, "volumetric_strain": float(strain.sum()),
            "shear_strain": self.shear_strain,
            "void_ratio": V / vs - 1.0, "n_contacts": n_c,
            "coordination": 2.0 * n_c / self.n,
            "n_wall_contacts": int(wact.sum()),
            "sliding_fraction": float(sliding) / n_c if n_c else 0.0,
            "kinetic_energy": ke, "elastic_normal_energy": en,
            # hooks filled by the laws that count them (F_DISS, F_WORK); 0 for laws that do not
            "frictional_dissipation": diss, "tangential_work": work_t,
            "tangential_energy": self.tangential_energy(),
            # rolling/twisting springs (contact.rolling): stored in touching contacts, dissipated
            "rolling_energy": e_roll, "rolling_dissipation": d_roll,
            "boundary_work": float(self.acc[ACC_BOUNDARY_WORK]),
            "viscous_dissipation": float(self.acc[ACC_VISC_WORK]),
            "local_damping_dissipation": float(self.acc[ACC_LOCAL_WORK]),
            "mean_history_length": float(lengths.mean()) if lengths.size else 0.0,
            "max_history_length": int(lengths.max()) if lengths.size else 0,
            "store_bytes": self.store.n_live * BYTES_PER_POINT,
            "store_bytes_allocated": self.store.bytes_allocated,
            "n_rebuilds": int(self.ictl[ICTL_NREBUILDS]),
            "dt_over_dt_crit": self.dt / self.critical_time_step(),
        }

    def rolling_energies(self, act=None, wact=None):
        """(stored, dissipated) energy of the rolling and twisting springs and dashpots (J): stored
        in the touching contacts' springs; dissipated by all contacts, those that left the
        neighbour list included."""
        if getattr(self, "prs", None) is None or self.prs.shape[1] == 0:
            return 0.0, 0.0
        m = int(self.ictl[ICTL_NPAIRS])
        nwc = int(self.ictl[ICTL_NWCAND])
        act = self.pfs[:m, S.F_DELTA] > 0.0 if act is None else act
        wact = self.wfs[:nwc, S.F_DELTA] > 0.0 if wact is None else wact
        e, d = RL.energy_sums(self.prs, act)
        we, wd = RL.energy_sums(self.wrs, wact)
        return e + we, d + wd + float(self.rrel[0])

    # ---------------------------------------------------------------- state
    ARRAYS = ("pos", "vel", "omega", "quat", "force", "torque", "radius", "mass", "inertia", "prm", "cell",
              "ctl", "ictl", "walls", "wcand", "pstart", "pi", "pj", "pfs", "pist", "pcq", "wfs", "wist", "wcq",
              "pos_build", "acc", "L0", "pmat", "pid", "materials", "mu_pair")
    # arrays added after schema 1 was first written, and their values in older checkpoints
    _LATER_ARRAYS = ("pmat", "pid", "materials", "mu_pair")

    def state_dict(self):
        """Every array that influences the next step, plus the settings (copies)."""
        self.setup()
        if self.mixed is not None:
            return self._mixed_state_dict()
        if self.grains is not None:
            return self._grain_state_dict()
        if self.deformable is not None:
            return self._deformable_state_dict()
        return self._sphere_state_dict()

    def _sphere_state_dict(self):
        d = {name: np.array(getattr(self, name)) for name in self.ARRAYS}
        for name, a in self.store.state_arrays().items():
            d["store_" + name] = np.array(a)
        if self.prs.shape[1]:
            for name in ROLLING_ARRAYS:
                d[name] = np.array(getattr(self, name))
        meta = {"schema_version": SCHEMA_VERSION, "law": self.law_name, "E": self.E, "nu": self.nu,
                "mu": self.mu, "xi": self.xi, "kt_linear": self.kt_linear, "density": self.density,
                "restitution": self.restitution, "local_damping": self.local_damping,
                "diverge_overlap": self.diverge_overlap, "skin": self.skin,
                "periodic": [bool(p) for p in self.periodic], "box_lo": self.box_lo.tolist(),
                "box_hi": self.box_hi.tolist(), "dt_crit": self.dt_crit,
                "mode": self.mode.tolist(), "rate": self.rate.tolist(), "target": self.target.tolist(),
                "gain": self.gain.tolist(), "maxrate": self.maxrate.tolist(),
                "integral": self.integral.tolist(), "shear": self.shear.tolist(), "dt_fraction": self.dt_fraction,
                "adaptive_dt": self.adaptive_dt, "adaptive_dt_interval": self.adaptive_dt_interval,
                "time_offset": self._time_offset, "reference_overlap": self.reference_overlap,
                "wall_rows": "candidates"}
        return d, meta

    GRAIN_ARRAYS = ("cell", "ctl", "ictl", "walls", "L0", "materials", "mu_pair", "acc")
    CONTROL_META = ("mode", "rate", "target", "gain", "maxrate", "integral", "shear")

    def _kind_state(self, bodies):
        """The arrays GRAIN_ARRAYS and the metadata a run of shaped grains (`bodies` kind) shares."""
        d = {name: np.array(getattr(self, name)) for name in self.GRAIN_ARRAYS}
        meta = {"schema_version": SCHEMA_VERSION, "bodies": bodies, "law": self.law_name, "E": self.E,
                "nu": self.nu, "mu": self.mu, "density": self.density, "skin": self.skin,
                "periodic": [bool(p) for p in self.periodic], "box_lo": self.box_lo.tolist(),
                "box_hi": self.box_hi.tolist(), "dt_crit": self.dt_crit,
                "diverge_overlap": self.diverge_overlap,
                **{name: getattr(self, name).tolist() for name in self.CONTROL_META}}
        return d, meta

    @classmethod
    def _kind_from_state(cls, arrays, meta, verbose):
        """A ready Simulation with the arrays and settings `_kind_state` wrote (the bodies still to add)."""
        sim = cls(law=meta["law"], E=meta["E"], nu=meta["nu"], mu=meta["mu"], density=meta["density"],
                  diverge_overlap=meta.get("diverge_overlap", 0.5), verbose=verbose)
        for name in cls.GRAIN_ARRAYS:
            if name == "acc" and name not in arrays:  # older layouts: no stress, walls or work booked
                sim.acc = np.zeros(N_ACC0 + 3 * wall_rows(arrays["walls"]).shape[0])
                continue
            setattr(sim, name, np.ascontiguousarray(np.array(arrays[name])))
        sim.walls = wall_rows(sim.walls)
        sim.periodic = np.array(meta["periodic"], dtype=bool)
        sim.box_lo = np.array(meta["box_lo"])
        sim.box_hi = np.array(meta["box_hi"])
        sim._box_set = True
        sim.skin = meta["skin"]
        sim.dt_crit = meta["dt_crit"]
        sim.gravity = sim.ctl[CTL_G:CTL_G + 3].copy()
        sim.local_damping = float(sim.ctl[CTL_LOCAL_DAMP])
        for name in cls.CONTROL_META:
            if name in meta:
                setattr(sim, name, np.array(meta[name], dtype=getattr(sim, name).dtype))
        sim.out = np.zeros(N_OUT, dtype=np.int64)
        sim.n = 0
        sim.ready = True
        return sim

    def _grain_state_dict(self):
        d, meta = self._kind_state("levelset")
        d.update(self.grains.state_arrays())
        meta["grain_contact"] = dict(self.grain_contact)
        meta["energy_start"] = self.energy_start
        return d, meta

    @classmethod
    def _grains_from_state(cls, arrays, meta, verbose):
        sim = cls._kind_from_state(arrays, meta, verbose)
        sim.grains = LevelSetBodies.from_state(arrays)
        sim.grain_contact = dict(meta["grain_contact"])
        if sim.grain_contact.get("law") == HERTZ_CURVATURE:
            sim.grains.hertz = HertzRows.from_state(sim.grains, arrays, sim.materials)
        if not hasattr(sim.grains, "mu_tab"):  # older layouts: the friction of the material pairs
            sim.grains.mu_tab = sim._grain_mu_table()
            sim.grains.wall_mat = np.zeros(sim.walls.shape[0], dtype=np.int64)
        sim.energy_start = float(meta.get("energy_start", sim._grain_energy_total()))
        return sim

    @classmethod
    def from_state(cls, arrays, meta, verbose=False):
        from ..io.checkpoint_check import validate_state  # before anything runs
        if isinstance(meta, dict) and meta.get("bodies") == "deformable":
            if int(meta.get("schema_version", -1)) != SCHEMA_VERSION:
                raise ValueError(f"checkpoint schema_version {meta.get('schema_version')!r} is not {SCHEMA_VERSION}")
            return cls._deformable_from_state(arrays, meta, verbose)
        validate_state(arrays, meta)
        if int(meta.get("schema_version", -1)) != SCHEMA_VERSION:
            raise ValueError(f"checkpoint schema_version {meta.get('schema_version')!r} is not {SCHEMA_VERSION}")
        if meta.get("bodies") == "levelset":
            return cls._grains_from_state(arrays, meta, verbose)
        sim = cls._spheres_from_state(arrays, meta, verbose)
        if meta.get("bodies") == "mixed":
            sim._attach_mixed_state(arrays, meta)
        return sim

    @classmethod
    def _spheres_from_state(cls, arrays, meta, verbose):
        sim = cls(law=meta["law"], E=meta["E"], nu=meta["nu"], mu=meta["mu"], density=meta["density"],
                  xi=meta["xi"], kt_linear=meta["kt_linear"], restitution=meta["restitution"],
                  local_damping=meta["local_damping"], diverge_overlap=meta["diverge_overlap"], verbose=verbose)
        for name in cls.ARRAYS:
            if name in cls._LATER_ARRAYS and name not in arrays:
                continue
            a = np.asarray(arrays[name])
            setattr(sim, name, np.ascontiguousarray(a.copy()))
        sim.walls = wall_rows(sim.walls)
        # schema-1 checkpoints may hold int64 pair indices: the kernels are compiled for one dtype (PAIR_INDEX)
        n_rows = sim.pi.shape[0]
        if n_rows > PAIR_INDEX_MAX or int(sim.ictl[ICTL_N]) > PAIR_INDEX_MAX:
            raise ValueError(f"checkpoint has {n_rows} pair rows and {int(sim.ictl[ICTL_N])} particles; each must be "
                             f"at most {PAIR_INDEX_MAX}")
        sim.pi = sim.pi.astype(PAIR_INDEX)
        sim.pj = sim.pj.astype(PAIR_INDEX)
        # control records only ever grow at their ends: pad older ones with zeros
        for name, size in (("cell", N_CELL), ("ctl", N_CTL), ("ictl", N_ICTL)):
            a = getattr(sim, name)
            if a.size < size:
                setattr(sim, name, np.concatenate([a, np.zeros(size - a.size, dtype=a.dtype)]))
        sim.energy_accounting = bool(sim.ictl[ICTL_ENERGY])
        sim.store = HistoryStore.from_arrays(arrays["store_pts"], arrays["store_nxt"], arrays["store_meta"])
        sim.n = int(sim.ictl[ICTL_N])
        sim.periodic = np.array(meta["periodic"], dtype=bool)
        sim.box_lo = np.array(meta["box_lo"])
        sim.box_hi = np.array(meta["box_hi"])
        sim._box_set = True
        sim.skin = meta["skin"]
        sim.dt_crit = meta["dt_crit"]
        sim.mode = np.array(meta["mode"], dtype=np.int64)
        sim.rate = np.array(meta["rate"])
        sim.target = np.array(meta["target"])
        sim.gain = np.array(meta["gain"])
        sim.maxrate = np.array(meta["maxrate"])
        sim.integral = np.array(meta["integral"])
        sim.shear = np.array(meta.get("shear", [0.0, 0.0, 0.0]))
        # keys added after schema 1 was first written: older checkpoints ran at a fixed dt
        sim.dt_fraction = float(meta.get("dt_fraction", sim.dt_fraction))
        sim.adaptive_dt = bool(meta.get("adaptive_dt", False))
        sim.adaptive_dt_interval = int(meta.get("adaptive_dt_interval", 100))
        sim._time_offset = float(meta.get("time_offset", 0.0))
        sim.reference_overlap = meta.get("reference_overlap")  # dt_crit of measure() and adaptive_dt
        for name in ("pi", "pj", "pfs", "pist", "pcq"):
            setattr(sim, "q" + name[1:], np.zeros_like(getattr(sim, name)))
        n, nw = sim.n, sim.walls.shape[0]
        if "pmat" not in arrays:  # one material: the constructor's, for particles and walls
            sim.pmat = np.zeros(n + nw, dtype=np.int64)
            sim.pid = np.arange(n, dtype=np.int64)
        if sim.ictl[ICTL_NMAT] == 0:
            sim.ictl[ICTL_NMAT] = sim.materials.shape[0]
        cap = sim.pi.shape[0]
        sim.pk = np.zeros((cap, N_PK))
        sim.pm = np.zeros(cap, dtype=np.int64)
        if meta.get("wall_rows") != "candidates":
            sim.wfs, sim.wist, sim.wcq = _wall_rows_from_dense_arrays(sim.wfs, sim.wist, sim.wcq, sim.wcand,
                                                                      int(sim.ictl[ICTL_NWCAND]), sim.acc)
        sim.wk = np.zeros((n * nw, N_PK))
        sim.wm = np.zeros(n * nw, dtype=np.int64)
        nmat = sim.materials.shape[0]
        if "prs" in arrays:
            for name in ROLLING_ARRAYS:
                setattr(sim, name, np.ascontiguousarray(np.array(arrays[name], dtype=np.float64)))
        else:
            sim.rolling_pairs = np.zeros((nmat, nmat, RL.N_ROLL_PARAM))
            sim.prs = np.zeros((cap, 0))
            sim.wrs = np.zeros((n * nw, 0))
            sim.rrel = np.zeros(1)
        sim._update_mtab()
        sim.out = np.zeros(N_OUT, dtype=np.int64)
        sim.mu = float(sim.prm[S.P_MU])
        sim.gravity = sim.ctl[CTL_G:CTL_G + 3].copy()
        sim.ready = True
        return sim


def rolling_record(rolling=None, twisting=None):
    """The rolling table row (contact.rolling.RP_*) of Simulation's `rolling` and `twisting`
    settings, checked: rolling None/False, a number (mu_r) or {"mu_r", "damping", "stiffness"};
    twisting None/False, True or {"damping"}."""
    rec = np.zeros(RL.N_ROLL_PARAM)
    if rolling is not None and rolling is not False:
        if isinstance(rolling, (int, float)) and not isinstance(rolling, bool):
            rolling = {"mu_r": rolling}
        if not isinstance(rolling, dict):
            raise ValueError(f"rolling must be None, a number (mu_r) or a dict with keys mu_r, damping, stiffness; "
                             f"got {rolling!r}")
        unknown = set(rolling) - {"mu_r", "damping", "stiffness"}
        if unknown or "mu_r" not in rolling:
            raise ValueError(f"rolling must have the key mu_r and optionally damping, stiffness; got keys "
                             f"{sorted(rolling)}")
        rec[RL.RP_MU_R] = _pos_finite("rolling mu_r", rolling["mu_r"], allow_zero=True)
        rec[RL.RP_ETA_R] = _ratio("rolling damping", rolling.get("damping", 0.0))
        if rolling.get("stiffness") is not None:
            rec[RL.RP_KR] = _pos_finite("rolling stiffness (N m/rad)", rolling["stiffness"])
    if twisting is not None and twisting is not False:
        if twisting is True:
            twisting = {}
        if not isinstance(twisting, dict) or set(twisting) - {"damping"}:
            raise ValueError(f"twisting must be None, False, True or a dict with the key damping; got {twisting!r}")
        rec[RL.RP_TWIST] = 1.0
        rec[RL.RP_ETA_T] = _ratio("twisting damping", twisting.get("damping", 0.0))
    return rec


def _ratio(name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not (0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return value


def _wall_rows_from_dense_arrays(wfs, wist, wcq, wcand, nwc, acc):
    """Schema-1 checkpoints without meta["wall_rows"] == "candidates" keep one wall row per (particle,
    wall), row i * n_walls + w: move the candidates' rows (keys wcand[:nwc]) to the front, in the same order, and hand the
    dissipation left in the other rows (contacts that had opened) to ACC_DISS_RELEASED."""
    keys = wcand[:nwc]
    fs, ist, cq = S.fresh_rows(wfs.shape[0])
    fs[:nwc] = wfs[keys]
    ist[:nwc] = wist[keys]
    cq[:nwc] = wcq[keys]
    dropped = np.ones(wfs.shape[0], dtype=bool)
    dropped[keys] = False
    acc[ACC_DISS_RELEASED] += float(np.sum(wfs[dropped, S.F_DISS]))
    return fs, ist, cq

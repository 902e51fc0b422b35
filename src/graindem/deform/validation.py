"""The seed's three validations (§4.1, §4.2, Appendix C), runnable at any loading rate.

Each function returns the measured curve, the reference curve and the error metrics; the benchmark
`benchmarks/deformable_validation.py` writes them out, the tests run reduced versions.

Units are the seed's voxel units. Readings and choices that the seed leaves open are stated where they
are made (mode normalization, which force the Appendix B table is, contact stiffness).
"""

import numpy as np

from graindem.deform.response import APPENDIX_B_EPS, APPENDIX_B_FORCE, LinearResponse, TabulatedForce
from graindem.deform.scenes import BEAM_HALF, SPHERE_RADIUS, bending_beam, compaction_sphere

TABLE1 = {"modal_stiffness": 1e4, "modal_mass": 1e4, "modal_damping": 2e4, "max_indentation": 5.0}


#: load levels of the FEM run behind the validation's compaction mode: the Appendix B points, then on to
#: 1.5 × their end, where the mode is taken (see `fem_compaction_mode_file`)
MODE_EPS_FACTOR = 1.5


def fem_compaction_mode_file(path, mesh_size=1.0, mode_eps_factor=MODE_EPS_FACTOR, eps_max=0.16, progress=False):
    """Run graindem's six-wall FEM (E = 100, ν = 0.3, R = 10) and write the single compaction mode to
    ``path`` (coordinate "relative": each pole moves inward by R per unit ε).

    The mode is the displacement at ε = ``mode_eps_factor`` × ``eps_max``, not at ``eps_max``: scaled
    down from ε_m, a mode has its contact patch flat at ε_m (rim fixed, pole moving by R per unit ε),
    so a node-based reduced contact near ε_m spreads over patch nodes whose modal weight Φ·n falls to
    0 at the rim, and the walls carry up to 3× the generalized force / (6R) (measured: +160 to +330 %
    at ε = 0.16 with the mode at 0.16). Taking ε_m beyond the simulated range keeps the reduced cap
    curved (its normal profile scaled by 1 − ε/ε_m ≥ 1/3 for the default factor), so the pole node stays
    ahead of its neighbours over the whole range. Returns the `CompactionResult`. progress: show a
    progress line per load level (the extraction takes minutes at fine meshes).
    """
    from graindem.fem import write_mode_file
    from graindem.fem.cli import surface_triangles
    from graindem.fem.compaction import SEED_TABLE_EPS, compact_sphere, compaction_mode_set
    from graindem.io.progress import Progress

    if not mode_eps_factor >= 1.0:
        raise ValueError(f"mode_eps_factor must be >= 1, got {mode_eps_factor}")
    mode_eps = round(mode_eps_factor * eps_max, 6)
    extra = np.linspace(eps_max, mode_eps, max(2, int(np.ceil((mode_eps - eps_max) / 0.02)) + 1))[1:]
    levels = np.concatenate([SEED_TABLE_EPS[1:][SEED_TABLE_EPS[1:] <= eps_max], extra])
    with Progress(len(levels), desc="FEM load levels", quiet=not progress, unit="level") as bar:
        result = compact_sphere(SPHERE_RADIUS, 100.0, 0.3, eps=levels, mesh_size=mesh_size, progress=bar.update)
    modes = compaction_mode_set(result, coordinate="relative", mode_eps=levels[-1])
    modes.surface = surface_triangles(modes.tets)
    write_mode_file(path, modes)
    return result


class WallSchedule:
    """Wall travel u(t) of a compaction validation: monotone from 0 to ``u_end``.

    ``kind="constant"``: the smooth profile u(t) = u_end (t/T − sin(2πt/T)/2π) with mean speed
    ``speed`` (T = u_end / speed; zero speed and acceleration at both ends).
    ``kind="geometric"``: constant logarithmic rate, u(t) = u0 e^{t/τ} from u(0) = u0 (the set-up
    starts from the equilibrium at u0: ``ramp_in=False``), or u0 e^{(t − τ)/τ} preceded by the
    straight start u = u0 t/τ over [0, τ] from rest (``ramp_in=True``; its speed u0/τ joins the
    exponential's), until the speed u/τ reaches ``speed``; from there on constant ``speed`` to u_end.

    The wall speed is proportional to the travel: with a tangent modal damping C = β dF/dε the viscous
    share of the force is ≈ p β ε̇/ε = p β/τ (F ∝ ε^p), and the inertial share ü/(ω² u) = 1/(ωτ)², both
    constant as ε → 0 instead of growing like 1/ε (constant speed) or 6/(ωt)² (the smooth ramp's start).
    In the 27-sphere packing the inertial share dominates (measured ∝ 1/τ², docs/deformable-status.md).
    """

    def __init__(self, kind, u_end, speed, tau=None, u0=None, ramp_in=True):
        if kind not in ("constant", "geometric"):
            raise ValueError(f"kind must be 'constant' or 'geometric', got {kind!r}")
        if not u_end > 0:
            raise ValueError(f"u_end must be > 0, got {u_end}")
        if not speed > 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        self.kind = kind
        self.u_end = float(u_end)
        self.speed = float(speed)
        if kind == "constant":
            self.total_time = self.u_end / self.speed
            return
        if tau is None or not tau > 0:
            raise ValueError(f"tau must be > 0 for a geometric schedule, got {tau}")
        if u0 is None or not 0 < u0 < u_end:
            raise ValueError(f"u0 must lie in (0, u_end) for a geometric schedule, got {u0}")
        self.tau = float(tau)
        self.u0 = float(u0)
        self.ramp_in = bool(ramp_in)
        self.t_start = self.tau if self.ramp_in else 0.0
        # travel where the exponential's speed u/τ reaches the constant speed (capped at the end)
        self.u_switch = min(max(self.tau * self.speed, self.u0), self.u_end)
        self.t_switch = self.t_start + self.tau * np.log(self.u_switch / self.u0)
        self.total_time = self.t_switch + (self.u_end - self.u_switch) / self.speed

    def travel(self, t):
        """u(t), vectorized; u_end after the total time."""
        t = np.asarray(t, dtype=np.float64)
        if self.kind == "constant":
            x = np.clip(t / self.total_time, 0.0, 1.0)
            return self.u_end * (x - np.sin(2 * np.pi * x) / (2 * np.pi))
        tau = self.tau
        start = self.u0 * np.clip(t, 0.0, None) / tau
        expo = self.u0 * np.exp((np.clip(t, self.t_start, self.t_switch) - self.t_start) / tau)
        lin = self.u_switch + self.speed * (t - self.t_switch)
        u = np.where(t < self.t_start, start, np.where(t < self.t_switch, expo, lin))
        return np.minimum(u, self.u_end)

    def __call__(self, t):
        return self.travel(t)

    def describe(self):
        if self.kind == "constant":
            return {"kind": "constant", "u_end": self.u_end, "mean_speed": self.speed,
                    "total_time": self.total_time}
        return {"kind": "geometric", "u_end": self.u_end, "speed": self.speed, "tau": self.tau, "u0": self.u0,
                "ramp_in": self.ramp_in,
                "u_switch": self.u_switch, "t_switch": self.t_switch, "total_time": self.total_time}


def _check_rate(rate):
    if not rate > 0:
        raise ValueError(f"rate must be > 0, got {rate}")


def deformable_simulation(template, positions, modal_mass, response, planes=(), cylinders=(), dt=None, beta=0.2,
                          modal_damping=None, tangent_damping=0.0, contact_stiffness=1e5, contact_damping=0.0,
                          contact="both", pullback="point", inverse_iterations=0, inverse_method="fixed_point",
                          pullback_cache=False, dofs=None, eps=None, eps_rate=None, velocities=None, travel=None,
                          contact_area=None, modes=None, motion="dynamic", mu=0.0, gravity=(0.0, 0.0, 0.0),
                          periodic_cell=None):
    """A set-up `Simulation` of deformable grains of one template (density 1) and rigid obstacles.

    ``planes``: (point, inward normal, velocity) each; ``cylinders``: (point, axis, radius, velocity);
    obstacle rows are the planes, then the cylinders. ``travel``: obstacle displacement = velocity x
    travel(t) (None: constant velocity). ``dt`` None: ``beta`` x the critical step; a given ``dt`` is
    taken as it is. The other arguments as `Simulation.add_deformable_grains` and
    `Simulation.set_deformable_contact` name them; the box holds everything with a margin, or is the
    fully periodic cell ``periodic_cell`` = (lo, hi)."""
    from graindem.engine import Simulation

    positions = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    points = [positions] + [np.asarray(p[0], dtype=np.float64).reshape(1, 3) for p in list(planes) + list(cylinders)]
    reach = float(np.linalg.norm(template.nodes, axis=1).max()) + 10.0 * template.phi0.spacing
    sim = Simulation(dt=dt, dt_fraction=beta, allow_unstable_dt=dt is not None, density=1.0, mu=mu, gravity=gravity)
    if periodic_cell is not None:
        sim.set_box(*periodic_cell, periodic=(True, True, True))
    else:
        sim.set_box(np.min(np.concatenate(points), axis=0) - 2.0 * reach,
                    np.max(np.concatenate(points), axis=0) + 2.0 * reach)
    for point, normal, velocity in planes:
        sim.add_wall(point, normal, velocity)
    for point, axis, radius, velocity in cylinders:
        sim.add_cylinder(point, axis, radius, velocity)
    sim.add_deformable_grains(template, positions, modal_mass=modal_mass, response=response, modes=modes,
                              modal_damping=modal_damping, tangent_damping=tangent_damping, eps=eps, eps_rate=eps_rate,
                              velocities=velocities, dofs=dofs, motion=motion)
    sim.set_deformable_contact(contact_stiffness, damping=contact_damping, contact=contact, pullback=pullback,
                               inverse_iterations=inverse_iterations, inverse_method=inverse_method,
                               pullback_cache=pullback_cache, contact_area=contact_area)
    sim.set_wall_motion(travel)
    sim.setup()
    return sim


def run_scene(template, positions, modal_mass, response, total_time=1.0, beta=0.2, n_records=200, **kwargs):
    """`deformable_simulation` run for ``total_time`` at the largest step dt = total_time / n <= ``beta``
    x the critical step, with records: (``n_records`` or so) window means over the steps since the
    previous one, the first the initial step alone: t, obstacle_force (force on each obstacle),
    obstacle_position, eps (record, grain, mode), position. Returns (records, sim, dt, n_steps,
    critical_steps) with critical_steps the contact and modal steps times ``beta``."""
    probe = deformable_simulation(template, positions, modal_mass, response, beta=beta, **kwargs)
    n_steps = int(np.ceil(total_time / probe.dt))
    dt = total_time / n_steps
    critical = {k: beta * v for k, v in probe.deformable_critical_steps.items()}
    critical["beta"] = beta
    sim = deformable_simulation(template, positions, modal_mass, response, dt=dt, beta=beta, **kwargs)
    every = max(1, n_steps // n_records)
    records = []

    def record(s):
        records.append(s.deformable.window_means())

    sim.run(1)
    record(sim)
    sim.run(n_steps, callback=record, every=every, phase=1)
    n = len(np.atleast_2d(positions))
    out = {key: np.array([r[key] for r in records]) for key in ("t", "obstacle_force", "obstacle_position", "position")}
    out["eps"] = np.array([r["eps"] for r in records]).reshape(len(records), n, -1)
    return out, sim, dt, n_steps, critical


def three_point_bending(rate=0.01, max_indentation=5.0, contact_stiffness=1e6, contact_damping=2e4,
                        support_radius=2.0, indenter_radius=2.0, beta=0.2, n_records=200, template=None):
    """Three-point bending of the Table 1 beam by a rigid cylinder indenter moving at ``rate`` (voxel per
    time unit) on two rigid cylinder supports under the end edges (where the mode vanishes).

    The beam's rigid motion is restricted to vertical translation: by symmetry the other rigid DOFs stay
    at rest in the ideal problem, but frictionless supports leave the horizontal ones neutrally stable,
    and round-off makes the beam drift along x (observed: half a node spacing), moving the support
    contacts off the edge where the mode vanishes.

    Returns delta (indenter displacement), force (indenter reaction), eps, the fitted normalized slope
    F̂/δ̂ (eq. 52 with K_g = Table 1 modal stiffness, δ0 = max indentation) and the step count.
    """
    _check_rate(rate)
    if not max_indentation > 0:
        raise ValueError(f"max_indentation must be > 0, got {max_indentation}")
    tpl = bending_beam() if template is None else template
    hx, hz = BEAM_HALF[0], BEAM_HALF[2]
    axis = (0.0, 1.0, 0.0)
    cylinders = [((-hx, 0.0, -hz - support_radius), axis, support_radius, (0.0, 0.0, 0.0)),
                 ((hx, 0.0, -hz - support_radius), axis, support_radius, (0.0, 0.0, 0.0)),
                 ((0.0, 0.0, hz + indenter_radius), axis, indenter_radius, (0.0, 0.0, -rate))]
    k_g = TABLE1["modal_stiffness"]
    out, sim, dt, n_steps, critical = run_scene(
        tpl, [[0.0, 0.0, 0.0]], [[TABLE1["modal_mass"]]], LinearResponse([[k_g]]), cylinders=cylinders,
        total_time=max_indentation / rate, beta=beta, n_records=n_records, modal_damping=[[TABLE1["modal_damping"]]],
        contact_stiffness=contact_stiffness, contact_damping=contact_damping,
        dofs=[False, False, True, False, False, False])
    delta = -(out["obstacle_position"][:, 2, 2] - (hz + indenter_radius))
    force = out["obstacle_force"][:, 2, 2]
    eps = out["eps"][:, 0, 0]
    d_hat = delta / max_indentation
    f_hat = force / (k_g * max_indentation)
    use = d_hat > 0.2   # past the contact settling; slope of a straight-line fit
    slope, intercept = np.polyfit(d_hat[use], f_hat[use], 1)
    secant = f_hat[-1] / d_hat[-1]
    return {"delta": delta, "force": force, "eps": eps, "slope": float(slope), "intercept": float(intercept),
            "secant_slope": float(secant), "dt": dt, "critical_steps": critical,
            "n_steps": n_steps, "K_g": k_g,
            "delta0": max_indentation, "rate": rate}


def appendix_b_response(radius=SPHERE_RADIUS):
    """U'(ε) for ε = δ/R: the table read as the reaction of ONE wall (validation notes: reproduced by
    a six-wall FEM with E = 100, ν = 0.3). With the mode normalized so each pole moves inward by R per
    unit ε, the generalized force of the six walls is Σ_walls R F_wall, so U'(ε) = 6 R F_table(ε)."""
    return TabulatedForce(APPENDIX_B_EPS, APPENDIX_B_FORCE, force_scale=6.0 * radius)


def single_sphere_compaction(rate=0.0004, eps_max=0.16, mode_file=None, contact_stiffness=1e5,
                             modal_mass=1e5, damping_ratio=0.2, contact_damping=None, beta=0.3,
                             n_records=200, template=None, damping_law="tangent", schedule="constant", tau=None,
                             eps0=None, start="equilibrium"):
    """Six rigid frictionless walls close on the Table 2 sphere at ``rate`` (wall speed in ε per time
    unit times R: each wall moves inward by R·eps_max over eps_max/rate time units).

    ``schedule="constant"``: the walls follow the smooth profile u(t) = u_max (t/T − sin(2πt/T)/2π)
    (mean speed as given, no impact at the start); ``"geometric"``: `WallSchedule` with time constant
    ``tau`` from ε = ``eps0`` up to the speed R·rate, then at that speed; ``start="equilibrium"``
    begins on the quasi-static path: walls at R(1 − eps0) moving at R eps0/τ, the sphere compacted to
    eps0 at the rate eps0/τ (the reduced model's equilibrium there up to the penalty penetration),
    "rest" with the walls touching, everything at rest, and a straight ramp-in to R eps0 over τ.
    Modal damping is stiffness-proportional (Table 2), C = β K_t with β = 2ζ/ω_t at the table's largest
    tangent; ``damping_law`` "tangent" uses the current tangent K_t(ε) (the
    state-dependent stiffness of Table 2), "constant" the largest one throughout (then the viscous
    force β K_t,max ε̇ is a sizeable part of the small generalized force at small ε).
    ``contact_stiffness``: penalty per unit area; the reduced curve converges to the node-contact
    limit as it grows (measured in docs/deformable-status.md). Returns eps (generalized coordinate), the
    per-wall reactions, their mean and the reference F_table(eps) at the simulated eps.
    """
    _check_rate(rate)
    tpl = compaction_sphere(mode_file) if template is None else template
    r = SPHERE_RADIUS
    response = appendix_b_response(r)
    c, beta_t = modal_damping_for(response, modal_mass, damping_ratio, damping_law)
    plan = _wall_schedule(schedule, r * eps_max, rate * r, tau, eps0, r, start)
    e0 = plan["eps_start"]
    walls = box_walls(r * (1.0 - e0))
    mass = 1.0 * tpl.volume
    if contact_damping is None:
        # about critical for the rigid translation against one wall's contact at the final patch size
        contact_damping = 2.0 * np.sqrt(contact_stiffness * mass / (np.pi * (0.5 * r) ** 2))
    # flat contacts: at the largest load the contact radius is about R/2 (validation notes)
    out, sim, dt, n_steps, critical = run_scene(
        tpl, [[0.0, 0.0, 0.0]], [[modal_mass]], response, planes=walls, total_time=plan["total_time"], beta=beta,
        n_records=n_records, modal_damping=c, tangent_damping=beta_t, contact_stiffness=contact_stiffness,
        contact_damping=contact_damping, eps=[e0], eps_rate=[plan["eps_rate_start"]], travel=plan["travel"],
        contact_area=np.pi * (0.5 * r) ** 2)
    eps = out["eps"][:, 0, 0]
    # reaction of each wall along its own inward normal
    per_wall = np.stack([-(out["obstacle_force"][:, w] @ walls[w][1]) for w in range(6)], axis=1)
    force = per_wall.mean(axis=1)
    reference = np.interp(eps, APPENDIX_B_EPS, APPENDIX_B_FORCE)
    wall_disp = -(out["obstacle_position"][:, 0, 0] - r)
    return {"eps": eps, "force": force, "per_wall": per_wall, "reference": reference,
            "wall_displacement": wall_disp, "dt": dt, "critical_steps": critical,
            "n_steps": n_steps, "rate": rate, "contact_stiffness": contact_stiffness,
            "mode_source": tpl.mode_source, "schedule": plan["describe"], "sim": sim}


def _wall_schedule(kind, u_end, speed, tau, eps0, length, start="equilibrium"):
    """The obstacles' travel s(t) (displacement = unit velocity along the inward normal x s(t)) for either schedule
    (``eps0`` is the geometric start in ε, the travel u0 = ``length`` · eps0; ``start`` "equilibrium":
    the set-up begins compacted to eps0, "rest": untouched, with the straight ramp-in)."""
    if start not in ("equilibrium", "rest"):
        raise ValueError(f"start must be 'equilibrium' or 'rest', got {start!r}")
    if kind == "constant":
        if tau is not None or eps0 is not None:
            raise ValueError("tau and eps0 apply to schedule='geometric' only")
        plan = WallSchedule("constant", u_end, speed)
        return {"travel": plan, "eps_start": 0.0,
                "eps_rate_start": 0.0,
                "total_time": plan.total_time, "describe": plan.describe()}
    if kind != "geometric":
        raise ValueError(f"schedule must be 'constant' or 'geometric', got {kind!r}")
    if eps0 is None or not eps0 > 0:
        raise ValueError(f"eps0 must be > 0 for schedule='geometric', got {eps0}")
    plan = WallSchedule("geometric", u_end, speed, tau=tau, u0=length * eps0, ramp_in=start == "rest")
    # the equilibrium start is also moving along the quasi-static path: ε̇ = ε0/τ, as the walls
    return {"travel": plan, "total_time": plan.total_time,
            "eps_start": 0.0 if start == "rest" else float(eps0),
            "eps_rate_start": 0.0 if start == "rest" else min(plan.u0 / plan.tau, plan.speed) / length,
            "describe": plan.describe()}


def box_walls(half):
    """Six planes (point, inward normal, unit velocity along it) at ±``half`` on the axes, in the order
    +x, −x, +y, −y, +z, −z; with a travel s(t) each moves inward by s(t)."""
    walls = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            point = np.zeros(3)
            point[axis] = sign * half
            normal = np.zeros(3)
            normal[axis] = -sign
            walls.append((point, normal, normal.copy()))
    return walls


def modal_damping_for(response, modal_mass, damping_ratio, damping_law):
    """(constant C matrix or None, β of C = β K_t(ε)) for ζ = damping_ratio at the largest tangent."""
    if damping_law not in ("tangent", "constant"):
        raise ValueError(f"damping_law must be 'tangent' or 'constant', got {damping_law!r}")
    if not damping_ratio >= 0:
        raise ValueError(f"damping_ratio must be >= 0, got {damping_ratio}")
    kt = response.max_tangent()
    beta_t = 2.0 * damping_ratio / np.sqrt(kt[0, 0] / modal_mass)
    if damping_law == "constant":
        return beta_t * kt, 0.0
    return None, beta_t


def relative_error(measured, reference, floor_fraction=0.05):
    """|measured − reference| / reference where reference > floor_fraction · max(reference)."""
    measured = np.asarray(measured)
    reference = np.asarray(reference)
    use = reference > floor_fraction * reference.max()
    return np.abs(measured[use] - reference[use]) / reference[use]


def assembly27(rate=0.0004, eps_max=0.16, mode_file=None, contact_stiffness=1e5, modal_mass=1e5,
               damping_ratio=0.2, contact_damping=None, beta=0.3, n_records=200, template=None,
               inverse_iterations=1, n_side=3, damping_law="tangent", rotations=False, inverse_method="newton",
               pullback_cache=True, schedule="constant", tau=None, eps0=None, start="equilibrium", pullback="point"):
    """n_side³ spheres (27 by default) in a cubic packing (touching), six walls each moving inward by
    u_w = n_side R ε (eq. 70 with ε = δ/R): the force on one wall against n_side² F_table(u_w/(n_side R))
    (eq. 59 per wall: 9 F_int(u_w/3) for 27 spheres).

    ``rotations=False`` keeps the spheres from rotating, as the bending validation keeps the beam from
    sliding: by symmetry they stay unrotated in the ideal problem, but the frictionless contacts leave
    rotation neutrally stable and the small torques of the discretized contacts (normals of the
    trilinear level set not through the centre) turn the spheres slowly, moving the mode's poles off the
    contact axes; measured in a 2×2×2 packing: the slower the loading, the more wall travel fails to
    compact the spheres at small loads (ε̄/(u_w/2R) = 0.988, 0.935, 0.831 at u_w = 0.17 for rates 8e-4,
    4e-4, 2e-4).

    Sphere–sphere contact goes through the neighbour's deformed level set (semi-Lagrangian remap);
    ``inverse_iterations`` refines the seed's first-order pull-back (0 = the seed's eq. 47), which at
    16 % compaction misplaces the deformed pole by 0.41 voxel (a quarter of the indentation); with the
    mode continued linearly outside the sphere (`compaction_sphere`), one Newton step
    (``inverse_method="newton"``, default) puts the pole at the exact inverse's φ (< 1e-14 apart) and
    leaves < 0.004 voxel near the surface (4 fixed-point iterations: 0.002, at twice the cost);
    ``pullback_cache`` computes each pulled-back grid node once per step (``pullback="corners"``, the
    seed's remap of the query cell's corners); ``pullback="point"`` inverts the query point itself (one
    inversion per query, no cache: ``pullback_cache`` is not used). ``schedule``, ``tau`` and
    ``eps0``, ``start`` as in `single_sphere_compaction` (ε of one sphere: the travel is u_w = n_side R ε;
    the equilibrium start compacts every sphere to eps0 and moves the centres in by the same factor).
    """
    _check_rate(rate)
    tpl = compaction_sphere(mode_file) if template is None else template
    r = SPHERE_RADIUS
    response = appendix_b_response(r)
    c, beta_t = modal_damping_for(response, modal_mass, damping_ratio, damping_law)
    if int(n_side) != n_side or n_side < 1:
        raise ValueError(f"n_side must be an integer >= 1, got {n_side}")
    grid = (np.arange(n_side) - 0.5 * (n_side - 1)) * 2 * r
    lattice = [(a, b, c) for a in range(n_side) for b in range(n_side) for c in range(n_side)]
    positions = np.array([[grid[a], grid[b], grid[c]] for a, b, c in lattice])
    n_pairs = 3 * n_side * n_side * (n_side - 1)
    plan = _wall_schedule(schedule, n_side * r * eps_max, n_side * rate * r, tau, eps0, n_side * r, start)
    e0 = plan["eps_start"]
    positions = positions * (1.0 - e0)
    walls = box_walls(n_side * r * (1.0 - e0))
    mass = 1.0 * tpl.volume
    if contact_damping is None:
        contact_damping = 2.0 * np.sqrt(contact_stiffness * mass / (np.pi * (0.5 * r) ** 2))
    # master/slave between spheres (lower index is the slave), wall schedule as single sphere; on the
    # quasi-static path: every sphere compacted at ε̇ = ε0/τ, centres x = x_lattice (1 − ε) moving in
    out, sim, dt, n_steps, critical = run_scene(
        tpl, positions, [[modal_mass]], response, planes=walls, total_time=plan["total_time"], beta=beta,
        n_records=n_records, modal_damping=c, tangent_damping=beta_t, contact_stiffness=contact_stiffness,
        contact_damping=contact_damping, contact="one", pullback=pullback, inverse_iterations=inverse_iterations,
        inverse_method=inverse_method, pullback_cache=bool(pullback_cache) and pullback == "corners",
        dofs=[True, True, True] + [bool(rotations)] * 3, eps=[e0], eps_rate=[plan["eps_rate_start"]],
        velocities=-positions / (1.0 - e0) * plan["eps_rate_start"], travel=plan["travel"],
        contact_area=np.pi * (0.5 * r) ** 2)
    u_w = -(out["obstacle_position"][:, 0, 0] - n_side * r)
    per_wall = np.stack([-(out["obstacle_force"][:, w] @ walls[w][1]) for w in range(6)], axis=1)
    f_w = per_wall.mean(axis=1)
    reference = n_side ** 2 * np.interp(u_w / (n_side * r), APPENDIX_B_EPS, APPENDIX_B_FORCE)
    # the same relation at the modal level: the spheres' mean generalized displacement instead of the
    # kinematic ε = u_w/(n R) (which also absorbs the penalty compliance of 2n contacts per row)
    eps_mean = out["eps"][:, :, 0].mean(axis=1)
    reference_modal = n_side ** 2 * np.interp(eps_mean, APPENDIX_B_EPS, APPENDIX_B_FORCE)
    return {"u_w": u_w, "F_w": f_w, "per_wall": per_wall, "reference": reference,
            "reference_modal": reference_modal, "eps": out["eps"][:, :, 0],
            "dt": dt, "critical_steps": critical, "n_steps": n_steps, "rate": rate,
            "n_pairs": n_pairs, "mode_source": tpl.mode_source, "contact_stiffness": contact_stiffness,
            "inverse_iterations": inverse_iterations, "inverse_method": inverse_method,
            "pullback_cache": bool(pullback_cache) and pullback == "corners", "pullback": pullback,
            "schedule": plan["describe"],
            "sim": sim}


def quasi_static_compaction(template, wall_eps, contact_stiffness=1e5, response=None):
    """The single-sphere compaction of the reduced model solved as a sequence of equilibria, without
    dynamics: for each wall indentation δ = R·``wall_eps`` (six frictionless walls at ±(R − δ) on the
    axes) minimize U(ε) + Σ_walls Σ_nodes ½ k_s a_k ⟨pen_k⟩² over the modal coordinate ε and the
    translation c (both enter pen_k linearly, U is convex: one minimum), with the same node
    kinematics x_k = X_k + εΦ(X_k) + c and the same area-weighted penalty as the deformable grains of `Simulation`.

    It is what the dynamic runs must reproduce once slow enough, and it isolates the model (mode,
    nodes, penalty) from the time integration. Returns eps, per-wall reactions (n, 6) and their mean.
    """
    from scipy.optimize import minimize

    wall_eps = np.atleast_1d(np.asarray(wall_eps, dtype=np.float64))
    if np.any(~np.isfinite(wall_eps)) or np.any(wall_eps < 0) or np.any(wall_eps >= 1):
        raise ValueError(f"wall_eps must lie in [0, 1), got {wall_eps}")
    if not contact_stiffness > 0:
        raise ValueError(f"contact_stiffness must be > 0, got {contact_stiffness}")
    r = SPHERE_RADIUS
    response = appendix_b_response(r) if response is None else response
    nodes = np.asarray(template.nodes, dtype=np.float64)
    areas = np.asarray(template.node_areas, dtype=np.float64)
    if template.node_mode_values is not None:
        phi = np.asarray(template.node_mode_values[0], dtype=np.float64)
    else:
        phi = template.modes[0].displacement(nodes)
    dirs = np.concatenate([np.eye(3), -np.eye(3)])[[0, 3, 1, 4, 2, 5]]
    ks = float(contact_stiffness)
    z = np.zeros(4)
    eps_out, forces = [], []
    for d in wall_eps * r:
        def energy(z, d=d):
            x = nodes + z[0] * phi + z[1:]
            e = response.energy([z[0]])
            g = np.zeros(4)
            g[0] = response.force([z[0]])[0]
            for w in dirs:
                pen = x @ w - (r - d)
                on = pen > 0
                f = ks * areas[on] * pen[on]
                e += 0.5 * np.sum(f * pen[on])
                g[0] += np.sum(f * (phi[on] @ w))
                g[1:] += f.sum() * w
            return e, g
        z = minimize(energy, z, jac=True, method="L-BFGS-B",
                     options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000}).x
        x = nodes + z[0] * phi + z[1:]
        forces.append([np.sum(ks * areas * np.maximum(x @ w - (r - d), 0.0)) for w in dirs])
        eps_out.append(z[0])
    forces = np.array(forces)
    return {"wall_eps": wall_eps, "eps": np.array(eps_out), "per_wall": forces, "force": forces.mean(axis=1)}

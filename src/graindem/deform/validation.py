"""The seed's three validations (§4.1, §4.2, Appendix C), runnable at any loading rate.

Each function returns the measured curve, the reference curve and the error metrics; the benchmark
`benchmarks/deformable_validation.py` writes them out, the tests run reduced versions.

Units are the seed's voxel units. Readings and choices that the seed leaves open are stated where they
are made (mode normalization, which force the Appendix B table is, contact stiffness).
"""

import numpy as np

from graindem.deform.dynamics import damping_matrix
from graindem.deform.engine import DeformableScene, Obstacle
from graindem.deform.response import APPENDIX_B_EPS, APPENDIX_B_FORCE, LinearResponse, TabulatedForce
from graindem.deform.scenes import BEAM_HALF, SPHERE_RADIUS, bending_beam, compaction_sphere

TABLE1 = {"modal_stiffness": 1e4, "modal_mass": 1e4, "modal_damping": 2e4, "max_indentation": 5.0}


def _check_rate(rate):
    if not rate > 0:
        raise ValueError(f"rate must be > 0, got {rate}")


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
    obstacles = [Obstacle.cylinder((-hx, 0.0, -hz - support_radius), axis, support_radius),
                 Obstacle.cylinder((hx, 0.0, -hz - support_radius), axis, support_radius),
                 Obstacle.cylinder((0.0, 0.0, hz + indenter_radius), axis, indenter_radius,
                                   velocity=(0.0, 0.0, -rate))]
    k_g = TABLE1["modal_stiffness"]
    scene = DeformableScene(tpl, [[0.0, 0.0, 0.0]], [[TABLE1["modal_mass"]]], LinearResponse([[k_g]]),
                            modal_damping=[[TABLE1["modal_damping"]]], density=1.0,
                            contact_stiffness=contact_stiffness, contact_damping=contact_damping,
                            obstacles=obstacles, free_dofs=[False, False, True, False, False, False])
    dt = scene.critical_step(beta)
    total_time = max_indentation / rate
    n_steps = int(np.ceil(total_time / dt))
    dt = total_time / n_steps
    every = max(1, n_steps // n_records)
    out = scene.run(n_steps + 1, dt, record_every=every)
    delta = -(out["obstacle_position"][:, 2, 2] - (hz + indenter_radius))
    force = out["obstacle_force"][:, 2, 2]
    eps = out["eps"][:, 0, 0]
    d_hat = delta / max_indentation
    f_hat = force / (k_g * max_indentation)
    use = d_hat > 0.2   # past the contact settling; slope of a straight-line fit
    slope, intercept = np.polyfit(d_hat[use], f_hat[use], 1)
    secant = f_hat[-1] / d_hat[-1]
    return {"delta": delta, "force": force, "eps": eps, "slope": float(slope), "intercept": float(intercept),
            "secant_slope": float(secant), "dt": dt, "critical_steps": scene.critical_steps,
            "n_steps": n_steps, "K_g": k_g,
            "delta0": max_indentation, "rate": rate}


def appendix_b_response(radius=SPHERE_RADIUS):
    """U'(ε) for ε = δ/R: the table read as the reaction of ONE wall (validation notes: reproduced by
    a six-wall FEM with E = 100, ν = 0.3). With the mode normalized so each pole moves inward by R per
    unit ε, the generalized force of the six walls is Σ_walls R F_wall, so U'(ε) = 6 R F_table(ε)."""
    return TabulatedForce(APPENDIX_B_EPS, APPENDIX_B_FORCE, force_scale=6.0 * radius)


def single_sphere_compaction(rate=0.0004, eps_max=0.16, mode_file=None, contact_stiffness=2e4,
                             modal_mass=1e5, damping_ratio=0.2, contact_damping=None, beta=0.3,
                             n_records=200, template=None):
    """Six rigid frictionless walls close on the Table 2 sphere at ``rate`` (wall speed in ε per time
    unit times R: each wall moves inward by R·eps_max over eps_max/rate time units).

    The walls follow the smooth profile u(t) = u_max (t/T − sin(2πt/T)/2π) (mean speed as given, no
    impact at the start). Modal damping is stiffness-proportional (Table 2), C = 2ζ/ω_t · K_t with K_t
    the table's largest tangent (ζ is larger at the softer start). Returns eps (generalized coordinate), the per-wall reactions, their mean and the reference
    F_table(eps) at the simulated eps.
    """
    _check_rate(rate)
    tpl = compaction_sphere(mode_file) if template is None else template
    r = SPHERE_RADIUS
    response = appendix_b_response(r)
    kt = response.max_tangent()
    omega_t = np.sqrt(kt[0, 0] / modal_mass)
    c = 2.0 * damping_ratio / omega_t * kt
    speed = rate * r
    walls = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            point = np.zeros(3)
            point[axis] = sign * r
            normal = np.zeros(3)
            normal[axis] = -sign
            walls.append(Obstacle.plane(point, normal, velocity=normal * speed))
    mass = 1.0 * tpl.volume
    if contact_damping is None:
        # about critical for the rigid translation against one wall's contact at the final patch size
        contact_damping = 2.0 * np.sqrt(contact_stiffness * mass / (np.pi * (0.5 * r) ** 2))
    total_time = eps_max / rate
    scene = DeformableScene(tpl, [[0.0, 0.0, 0.0]], [[modal_mass]], response, modal_damping=c,
                            contact_stiffness=contact_stiffness, contact_damping=contact_damping,
                            obstacles=walls, ramp_time=total_time)
    # flat contacts: at the largest load the contact radius is about R/2 (validation notes)
    dt = scene.critical_step(beta, contact_area=np.pi * (0.5 * r) ** 2)
    total_time = eps_max / rate
    n_steps = int(np.ceil(total_time / dt))
    dt = total_time / n_steps
    every = max(1, n_steps // n_records)
    out = scene.run(n_steps + 1, dt, record_every=every)
    eps = out["eps"][:, 0, 0]
    # reaction of each wall along its own inward normal
    per_wall = np.stack([-(out["obstacle_force"][:, w] @ walls[w].direction) for w in range(6)], axis=1)
    force = per_wall.mean(axis=1)
    reference = np.interp(eps, APPENDIX_B_EPS, APPENDIX_B_FORCE)
    wall_disp = -(out["obstacle_position"][:, 0, 0] - r)
    return {"eps": eps, "force": force, "per_wall": per_wall, "reference": reference,
            "wall_displacement": wall_disp, "dt": dt, "critical_steps": scene.critical_steps,
            "n_steps": n_steps, "rate": rate,
            "mode_source": tpl.mode_source, "scene": scene}


def relative_error(measured, reference, floor_fraction=0.05):
    """|measured − reference| / reference where reference > floor_fraction · max(reference)."""
    measured = np.asarray(measured)
    reference = np.asarray(reference)
    use = reference > floor_fraction * reference.max()
    return np.abs(measured[use] - reference[use]) / reference[use]


def assembly27(rate=0.0004, eps_max=0.16, mode_file=None, contact_stiffness=2e4, modal_mass=1e5,
               damping_ratio=0.2, contact_damping=None, beta=0.3, n_records=200, template=None,
               inverse_iterations=2, n_side=3):
    """n_side³ spheres (27 by default) in a cubic packing (touching), six walls each moving inward by
    u_w = n_side R ε (eq. 70 with ε = δ/R): the force on one wall against n_side² F_table(u_w/(n_side R))
    (eq. 59 per wall: 9 F_int(u_w/3) for 27 spheres).

    Sphere–sphere contact goes through the neighbour's deformed level set (semi-Lagrangian remap);
    ``inverse_iterations`` refines the seed's first-order pull-back (0 = the seed's eq. 47), which at
    16 % compaction misplaces the deformed surface by a sizeable fraction of the indentation.
    """
    _check_rate(rate)
    tpl = compaction_sphere(mode_file) if template is None else template
    r = SPHERE_RADIUS
    response = appendix_b_response(r)
    kt = response.max_tangent()
    omega_t = np.sqrt(kt[0, 0] / modal_mass)
    c = 2.0 * damping_ratio / omega_t * kt
    if int(n_side) != n_side or n_side < 1:
        raise ValueError(f"n_side must be an integer >= 1, got {n_side}")
    grid = (np.arange(n_side) - 0.5 * (n_side - 1)) * 2 * r
    lattice = [(a, b, c) for a in range(n_side) for b in range(n_side) for c in range(n_side)]
    positions = np.array([[grid[a], grid[b], grid[c]] for a, b, c in lattice])
    index = {key: i for i, key in enumerate(lattice)}
    pairs = []
    for key, i in index.items():
        for axis in range(3):
            nb = list(key)
            nb[axis] += 1
            j = index.get(tuple(nb))
            if j is not None:
                pairs.append((i, j))
    speed = n_side * rate * r
    walls = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            point = np.zeros(3)
            point[axis] = sign * n_side * r
            normal = np.zeros(3)
            normal[axis] = -sign
            walls.append(Obstacle.plane(point, normal, velocity=normal * speed))
    mass = 1.0 * tpl.volume
    if contact_damping is None:
        contact_damping = 2.0 * np.sqrt(contact_stiffness * mass / (np.pi * (0.5 * r) ** 2))
    total_time = eps_max / rate
    # master/slave between spheres (lower index is the slave), smooth wall profile as single sphere
    scene = DeformableScene(tpl, positions, [[modal_mass]], response, modal_damping=c,
                            contact_stiffness=contact_stiffness, contact_damping=contact_damping,
                            obstacles=walls, pairs=pairs, both_ways=False, ramp_time=total_time,
                            inverse_iterations=inverse_iterations)
    dt = scene.critical_step(beta, contact_area=np.pi * (0.5 * r) ** 2)
    total_time = eps_max / rate
    n_steps = int(np.ceil(total_time / dt))
    dt = total_time / n_steps
    every = max(1, n_steps // n_records)
    out = scene.run(n_steps + 1, dt, record_every=every)
    u_w = -(out["obstacle_position"][:, 0, 0] - n_side * r)
    per_wall = np.stack([-(out["obstacle_force"][:, w] @ walls[w].direction) for w in range(6)], axis=1)
    f_w = per_wall.mean(axis=1)
    reference = n_side ** 2 * np.interp(u_w / (n_side * r), APPENDIX_B_EPS, APPENDIX_B_FORCE)
    # the same relation at the modal level: the spheres' mean generalized displacement instead of the
    # kinematic ε = u_w/(n R) (which also absorbs the penalty compliance of 2n contacts per row)
    eps_mean = out["eps"][:, :, 0].mean(axis=1)
    reference_modal = n_side ** 2 * np.interp(eps_mean, APPENDIX_B_EPS, APPENDIX_B_FORCE)
    return {"u_w": u_w, "F_w": f_w, "per_wall": per_wall, "reference": reference,
            "reference_modal": reference_modal, "eps": out["eps"][:, :, 0],
            "dt": dt, "critical_steps": scene.critical_steps, "n_steps": n_steps, "rate": rate,
            "n_pairs": len(pairs), "mode_source": tpl.mode_source,
            "inverse_iterations": inverse_iterations,
            "scene": scene}

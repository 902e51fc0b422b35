"""Scenario `biaxial` (loading.kind "biaxial" or "isotropic") of deformable grains
(`particles.kind = "deformable"`): elastic spheres with a compaction mode in the periodic cell,
prepared isotropically under the cell's stress servo, then tested by scenarios.biaxial.

Templates: for each of `grains.size_classes` sizes (quantiles of the radii drawn from the size
distribution of [particles]; a grain takes the class nearest its radius in ln(radius),
levelset_biaxial.size_classes) one sphere of deform.scenes.compaction_sphere at that radius with
`deformable.nodes` surface nodes and its one compaction mode: the analytic stand-in, or the mode of
the FEM mode file `deformable.mode_file` scaled to the radius. The modal mass and stiffness are the
mode's generalized mass and stiffness (deform.modes: M = ∫ρ Φ·Φ dV, K = ∫ C:E(Φ):E(Φ) dV with
[material] density, E and nu), the modal damping C = 2 ζ √(K M) with ζ = `deformable.modal_damping_ratio`.

Contact (contact.deformable_contact, both ways with weight 1/2): penalty `grains.stiffness` per unit
area (default: a contact carrying p d² penetrates `grains.overlap` d, levelset_biaxial.default_stiffness
of the area law, whose sphere limit F = π k_s R* δ² the node penalty shares), normal damping per unit
area c_s = 2 ζ √(k_s m / (2 A)) (ζ = `grains.damping_ratio`: the pair's relative motion, reduced mass
m / 2 of the mean grain, on a patch A = π (R/2)²), tangential ratio `grains.kt_ratio`, friction
[material] mu (the preparation's loading.preparation_mu first), the pull-back `deformable.pullback`
refined `deformable.inverse_iterations` times.

Preparation (levelset_biaxial.prepare_isotropically without local damping, which deformable grains do
not take: the contact and modal damping settle them): the grains start on a simple cubic lattice of
their bounding spheres in a periodic cell, and the servo drives the three axes to the confining stress.
"""

import math

import numpy as np

from ..core.rotations import random_quaternions
from .levelset_biaxial import cubic_lattice, default_stiffness, load_or_prepare, size_classes

EXTRA_KEY = "deformable_packing"
QUADRATURE_CELLS = 40   # quadrature points per radius for the modal mass and stiffness
SURFACE_VERTICES = 1000  # vertices of a grain's surface mesh in the VTK output


def modal_matrices(template, radius, density, E, nu, damping_ratio):
    """(M, K, C) of a template's modes: generalized mass and stiffness by quadrature over the grain
    (QUADRATURE_CELLS points per radius), C = 2 ζ √(K M) for its one mode."""
    from ..deform.modes import generalized_mass, generalized_stiffness

    bounds = (np.full(3, -1.05 * radius), np.full(3, 1.05 * radius))
    h = radius / QUADRATURE_CELLS
    M = generalized_mass(template.modes, template.phi0, density, bounds=bounds, quad_spacing=h)
    K = generalized_stiffness(template.modes, template.phi0, E, nu, bounds=bounds, quad_spacing=h)
    C = 2.0 * damping_ratio * np.sqrt(K * M)
    return M, K, C


def contact_damping(stiffness, radius, density, damping_ratio):
    """c_s per unit area for a pair of grains of `radius` (module docstring)."""
    area = math.pi * (0.5 * radius) ** 2
    mass = density * 4.0 / 3.0 * math.pi * radius ** 3
    return 2.0 * damping_ratio * math.sqrt(stiffness * mass / (2.0 * area))


def build_assembly(config, mu_prep):
    """A Simulation of the scenario's deformable grains on a loose lattice in a periodic cell (not yet
    run), and None (deformable grains take [material] only)."""
    from ..deform.response import LinearResponse
    from ..deform.scenes import compaction_sphere
    from ..engine.simulation import Simulation
    from ..particles.size_distribution import from_particles_config

    part, g, dcfg, mat, load, sim_cfg = (config["particles"], config["grains"], config["deformable"],
                                         config["material"], config["loading"], config["simulation"])
    rng = np.random.default_rng(sim_cfg["seed"])
    n = part["n"]
    radii = np.asarray(from_particles_config(part).sample(n, rng), dtype=float)
    classes, which = size_classes(radii, g["size_classes"])
    sim = Simulation(mu=mu_prep, density=mat["density"], E=mat["E"], nu=mat["nu"],
                     dt_fraction=sim_cfg["dt_fraction"] or 0.2, dt=sim_cfg["dt"],
                     allow_unstable_dt=sim_cfg["allow_dt_above_critical"])
    # the lattice of the largest spheres, 1 % apart
    pos, L = cubic_lattice(n, 2.02 * float(classes.max()), rng)
    quat = random_quaternions(rng, n)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
    mean_radius = float(np.mean(radii))
    stiffness = g["stiffness"] or default_stiffness("area", load["confining_stress"], mean_radius, g["overlap"])
    sim.set_deformable_contact(stiffness, damping=contact_damping(stiffness, mean_radius, mat["density"],
                                                                  g["damping_ratio"]),
                               kt_ratio=g["kt_ratio"], pullback=dcfg["pullback"],
                               inverse_iterations=dcfg["inverse_iterations"],
                               contact_area=math.pi * (0.5 * float(classes.min())) ** 2)
    for k, r in enumerate(classes):
        sel = which == k
        if not np.any(sel):
            continue
        tpl = compaction_sphere(dcfg["mode_file"], radius=float(r), n_nodes=dcfg["nodes"],
                                surface_vertices=SURFACE_VERTICES, progress=False)
        M, K, C = modal_matrices(tpl, float(r), mat["density"], mat["E"], mat["nu"], dcfg["modal_damping_ratio"])
        sim.add_deformable_grains(tpl, pos[sel], modal_mass=M, response=LinearResponse(K), modal_damping=C,
                                  orientations=quat[sel])
    return sim, None


def packing_key(config):
    """What the prepared assembly depends on (a cached packing is reused only for the same key)."""
    s = config["simulation"]
    return {"particles": config["particles"], "grains": config["grains"], "deformable": config["deformable"],
            "material": config["material"], "seed": s["seed"], "dt": s["dt"], "dt_fraction": s["dt_fraction"],
            "pressure": config["loading"]["confining_stress"], "mu_prep": config["loading"]["preparation_mu"]}


def prepared_deformable(config, cache=None, announce=None):
    """The scenario's deformable grains compressed isotropically to the confining stress (module
    docstring), loaded from `cache` (a checkpoint) when it holds the same assembly, else prepared and
    saved there."""
    return load_or_prepare(config, cache, EXTRA_KEY, packing_key(config), build_assembly, "deformable grains",
                           lambda sim: sim.last_message, announce, local_damping=0.0)

"""Scenario `biaxial` (loading.kind "biaxial" or "isotropic") of a mixture: spheres and shaped
level-set grains in the periodic cell, prepared isotropically under the cell's stress servo.

The bodies are those of the mixture's pile (scenarios.mixed_pile.draw_bodies: `particles.n`
spheres of the size distribution of [particles], `grains.n` or `grains.number_fraction` shaped
grains of size `grains.size_ratio` times the spheres' mean radius, the grains of material
`grains.material`). They start on a loose simple cubic lattice of sites 1.01 times the largest
bounding diameter apart (mixed_pile.lattice_spacing), the kinds shuffled over the sites, grains
randomly oriented, in a fully periodic cubic cell without gravity. Sphere pairs: Hertz with the tangential law
`contact.law`; grain pairs and grain-sphere pairs: the node-to-level-set law `grains.law` with
`grains.stiffness` (default: a contact carrying p d^2 penetrates `grains.overlap` d, p the
confining stress, d twice the grains' size; levelset_biaxial.default_stiffness).

Preparation (levelset_biaxial.compress_to): the servo drives the three axes to the confining stress
at the preparation friction with local damping 0.7 until the pressure is within 2 % of it and the
mean net force per body is below 5 % of the mean contact force at two checks in a row (or for
`grains.preparation_steps` steps); then the friction is restored. The test itself is
scenarios.biaxial.start_test / run_test, as for spheres and for grains alone: one servo drives the
cell on the stress of every contact (sphere pairs, grain pairs, grain-sphere pairs).
"""

import numpy as np

from .levelset_biaxial import cubic_lattice, default_stiffness, load_or_prepare, packing_key
from .mixed_pile import add_bodies, draw_bodies, lattice_spacing

EXTRA_KEY = "mixture_packing"


def build_assembly(config, mu_prep):
    """A Simulation of the scenario's spheres and grains on a loose lattice in a periodic cell
    (not yet run), and the further materials."""
    from ..core.rotations import random_quaternions
    from ..engine.prepare import add_materials
    from ..engine.simulation import Simulation

    g, mat, load, sim_cfg = config["grains"], config["material"], config["loading"], config["simulation"]
    rng = np.random.default_rng(sim_cfg["seed"])
    radii, size, templates, shape_of = draw_bodies(config, rng)
    n_s, n_g = len(radii), len(shape_of)
    n = n_s + n_g
    pos, L = cubic_lattice(n, lattice_spacing(radii, templates), rng)
    contact = config["contact"]
    restitution = mat["restitution"] if mat["restitution"] < 1.0 else None
    sim = Simulation(law=contact["law"], xi=contact["xi"], E=mat["E"], nu=mat["nu"], mu=mu_prep,
                     density=mat["density"], restitution=restitution, dt_fraction=sim_cfg["dt_fraction"] or 0.2,
                     dt=sim_cfg["dt"], allow_unstable_dt=sim_cfg["allow_dt_above_critical"])
    more = config.get("materials") or {}
    materials = {k: list(v) for k, v in more.items()} if more.get("E") else None
    s_material = add_materials(sim, materials, n_s, rng=rng, mu_prep=mu_prep)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
    def area_stiffness():
        return g["stiffness"] or default_stiffness(g["law"], load["confining_stress"], size, g["overlap"])
    add_bodies(sim, config, area_stiffness, templates, shape_of, pos[n_s:], random_quaternions(rng, n_g), pos[:n_s],
               radii, s_material)
    return sim, materials


def prepared_mixture(config, cache=None, announce=None):
    """The scenario's mixture compressed isotropically to the confining stress (module
    docstring), loaded from `cache` (a checkpoint) when it holds the same assembly, else prepared
    and saved there."""
    key = dict(packing_key(config), contact={k: config["contact"][k] for k in ("law", "xi")})
    return load_or_prepare(config, cache, EXTRA_KEY, key, build_assembly, "mixture", lambda sim: sim.last_message,
                           announce)



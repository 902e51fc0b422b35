"""Scenario `pile` of a mixture: spheres and shaped level-set grains settling under gravity in a walled box.

    graindem run examples/mixed_pile.toml --out DIR [--steps N]
    graindem run --restart DIR/checkpoint.h5 --out DIR2 [--steps N]

A scenario file with `particles.kind = "mixture"` and `simulation.scenario = "pile"` (io.scenario
holds the keys). The bodies: `particles.n` spheres with radii drawn from the size distribution of
[particles] (materials as for spheres alone: [material], [materials] and materials.fraction), and
`grains.n` shaped grains (or `grains.number_fraction` of all bodies) of the shapes of [grains], each
of size `grains.size_ratio` times the spheres' mean radius, of material `grains.material`. They
start on a loose simple cubic lattice of sites 2.02 times the largest bounding radius apart, the
kinds shuffled over the sites, with random orientations, in a box of a floor and four side walls
(`boundary.box`, or a square base under the lattice and a height holding it), and fall under
gravity (`boundary.gravity`, along -z) onto the floor and among each other.

Contacts: sphere pairs Hertz with the tangential law `contact.law`; grain pairs and grain-sphere
pairs by `contact.shape_law` (and materials.hertz_curvature_pairs, area_pairs, each pair's law
read for the grain's material with the other body's; levelset_biaxial.set_shape_laws): "area", the
node-to-level-set law `grains.law` with `grains.stiffness` (default: a contact carrying p d^2
penetrates `grains.overlap` d, p the weight of the pile on its base, d twice the grains' size;
levelset_biaxial.default_stiffness), or "hertz_curvature", Hertz with the local curvature (a
sphere's: 1/R) and the tangential law `contact.law`; damping `grains.damping_ratio`; local damping
`material.damping`, viscous damping of the sphere contacts from `material.restitution`. Energy
accounting is on, so each row holds the energy balance's error.

Outputs: series.csv (every output_interval steps), checkpoint.h5 (every checkpoint_interval steps and
at the end), summary.json (n_particles, kinds, steps, steps_per_s, the energies, the pile's height),
VTK of both kinds (write_mixed_vtk) every vtk_interval steps if output.vtk. A restart continues bit
for bit.
"""

import json
import math
import uuid
from pathlib import Path

import numpy as np

SCENARIO = "pile"
EXTRA_KEY = "mixed_pile"
LATTICE_GAP = 1.01    # lattice spacing over the largest bounding diameter
SERIES = ("step", "time", "kinetic_energy", "n_contacts", "n_sphere_grain_contacts", "n_wall_contacts",
          "top", "sphere_mean_z", "grain_mean_z", "energy_balance_error")


def is_config(config):
    """True if a validated scenario config is a mixture's pile."""
    return config["particles"]["kind"] == "mixture" and config["simulation"]["scenario"] == SCENARIO


def body_counts(config):
    """(spheres, shaped grains) of a validated config."""
    n_s = config["particles"]["n"]
    g = config["grains"]
    if g["n"] is not None:
        return n_s, g["n"]
    return n_s, max(1, round(g["number_fraction"] / (1.0 - g["number_fraction"]) * n_s))


def draw_bodies(config, rng):
    """(the spheres' radii, the grains' size, the grain templates [(shape, size, LevelSetGrain)],
    each grain's shape index) of a validated mixture config."""
    from ..particles.size_distribution import from_particles_config
    from .levelset_biaxial import build_templates

    g = config["grains"]
    n_s, n_g = body_counts(config)
    radii = np.asarray(from_particles_config(config["particles"]).sample(n_s, rng), dtype=float)
    size = g["size_ratio"] * float(radii.mean())
    templates, _ = build_templates(dict(g, size_classes=1), np.array([size]))
    n_shapes = len(g["shapes"])
    shares = np.asarray(g["fractions"] or [1.0 / n_shapes] * n_shapes, dtype=float)
    shape_of = rng.choice(n_shapes, size=n_g, p=shares / shares.sum())
    return radii, size, templates, shape_of


def lattice_spacing(radii, templates):
    """The loose start's site spacing: LATTICE_GAP times the largest bounding diameter."""
    return 2.0 * LATTICE_GAP * max(float(radii.max()), max(t.bounding_radius for _, _, t in templates))


def add_bodies(sim, config, area_stiffness, templates, shape_of, g_pos, quat, s_pos, radii, s_material):
    """The grains' contact laws (levelset_biaxial.set_shape_laws; area_stiffness() gives the area
    law's stiffness) and both kinds' bodies."""
    from .levelset_biaxial import set_shape_laws
    g = config["grains"]
    set_shape_laws(sim, config, area_stiffness)
    for k in range(len(templates)):
        sel = shape_of == k
        if np.any(sel):
            sim.add_grains(templates[k][2], g_pos[sel], orientations=quat[sel], material=g["material"])
    sim.add_particles(s_pos, radii, material=s_material)


def build(config):
    """The Simulation of a validated mixture config, set up and ready to run."""
    from ..core.rotations import random_quaternions
    from ..engine.prepare import add_materials, restore_friction
    from ..engine.simulation import Simulation
    from .levelset_biaxial import default_stiffness

    g, mat, sim_cfg, bnd = config["grains"], config["material"], config["simulation"], config["boundary"]
    rng = np.random.default_rng(sim_cfg["seed"])
    radii, size, templates, shape_of = draw_bodies(config, rng)
    n_s, n_g = len(radii), len(shape_of)
    n_shapes = len(templates)
    # the loose lattice: sites of the largest bounding diameter, kinds shuffled over them
    a = lattice_spacing(radii, templates)
    n = n_s + n_g
    if bnd["box"] is not None:
        Lx, Ly, Lz = bnd["box"]
        mx, my = int(Lx // a), int(Ly // a)
        if mx < 1 or my < 1:
            raise ValueError(f"boundary.box = {bnd['box']} is narrower than one lattice site ({a:.4g} m, the "
                             "largest body's bounding diameter)")
        layers = math.ceil(n / (mx * my))
        if layers * a > Lz:
            raise ValueError(f"boundary.box = {bnd['box']} does not hold the loose start: {n} bodies need "
                             f"{layers} layers of {a:.4g} m on a {mx} x {my} base; make the box taller or wider")
    else:
        mx = my = max(1, math.ceil(n ** (1.0 / 3.0) - 1e-9))
        layers = math.ceil(n / (mx * my))
        Lx, Ly, Lz = mx * a, my * a, (layers + 1) * a
    sites = np.stack(np.meshgrid(np.arange(mx), np.arange(my), np.arange(layers), indexing="ij"),
                     axis=-1).reshape(-1, 3)
    sites = sites[np.argsort(sites[:, 2], kind="stable")][:n]  # the lowest layers first
    pos = (sites + 0.5) * a
    order = rng.permutation(n)
    s_pos, g_pos = pos[order[:n_s]], pos[order[n_s:]]
    contact = config["contact"]
    restitution = mat["restitution"] if mat["restitution"] < 1.0 else None
    sim = Simulation(law=contact["law"], xi=contact["xi"], E=mat["E"], nu=mat["nu"], mu=mat["mu"],
                     density=mat["density"], restitution=restitution, local_damping=mat["damping"],
                     dt_fraction=sim_cfg["dt_fraction"] or 0.2, dt=sim_cfg["dt"],
                     allow_unstable_dt=sim_cfg["allow_dt_above_critical"], energy_accounting=True,
                     gravity=(0.0, 0.0, -bnd["gravity"]))
    more = config.get("materials") or {}
    materials = {k: list(v) for k, v in more.items()} if more.get("E") else None
    s_material = add_materials(sim, materials, n_s, rng=rng)
    restore_friction(sim, mat["mu"], materials)  # the materials' pair friction
    sim.set_box((0.0, 0.0, 0.0), (Lx, Ly, Lz))
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((Lx, 0, 0), (-1, 0, 0)),
                          ((0, 0, 0), (0, 1, 0)), ((0, Ly, 0), (0, -1, 0))):
        sim.add_wall(point, normal)
    # the pile's weight on its base, for the default stiffness
    solid = float(np.sum(4.0 / 3.0 * math.pi * radii ** 3)) + sum(
        float(np.sum(shape_of == k)) * templates[k][2].volume for k in range(n_shapes))
    pressure = max(bnd["gravity"], 1e-3) * mat["density"] * solid / (Lx * Ly)
    add_bodies(sim, config, lambda: g["stiffness"] or default_stiffness(g["law"], pressure, size, g["overlap"]),
               templates, shape_of, g_pos, random_quaternions(rng, n_g), s_pos, radii, s_material)
    sim.setup()
    return sim


def _measured_row(sim):
    """(the series row of SERIES, measure())."""
    m = sim.measure()
    g = sim.grains
    top = max(float((sim.pos[:, 2] + sim.radius).max()), float((g.pos[:, 2] + g.radius).max()))
    return [sim.step_count, sim.time, m["kinetic_energy"], m["n_contacts"], m["n_sphere_grain_contacts"],
            m["n_wall_contacts"], top, float(sim.pos[:, 2].mean()), float(g.pos[:, 2].mean()),
            m["energy_balance_error"]], m


def _drive(sim, state, out, steps, quiet):
    """Run `steps` steps with rows, checkpoints and VTK; then the final checkpoint and summary."""
    from ..engine.cli import run_with_series
    from ..io.outputs import atomic_write_text

    config = state["config"]
    sim_cfg = config["simulation"]
    out = Path(out)
    start = state["start_step"]
    vtk_every = (sim_cfg["vtk_interval"] or sim_cfg["output_interval"]) if config["output"]["vtk"] else 0

    def vtk(s, done):
        if vtk_every and done % vtk_every == 0:
            (out / "vtk").mkdir(exist_ok=True)
            s.write_mixed_vtk(str(out / "vtk" / f"pile_{done:08d}"))

    seconds = run_with_series(sim, state, out, steps, quiet, EXTRA_KEY, SERIES, lambda s: _measured_row(s)[0],
                              "mixed pile", shown=("kinetic_energy",), on_output=vtk)
    row, m = _measured_row(sim)
    r = dict(zip(SERIES, row))
    summary = {"scenario": SCENARIO, "n_particles": int(sim.n_bodies), "kinds": dict(sim.kinds),
               "steps": sim.step_count - start, "steps_this_run": int(steps),
               "steps_per_s": steps / seconds if seconds > 0 and steps else None, "dt": sim.dt, "dt_crit": sim.dt_crit,
               **{k: r[k] for k in ("kinetic_energy", "n_contacts", "n_sphere_grain_contacts", "top",
                                    "sphere_mean_z", "grain_mean_z", "energy_balance_error")},
               "gravity_work": m["gravity_work"], "run_id": state["run_id"]}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, default=float))
    if not quiet:
        print(f"{summary['kinds']}, {summary['steps']} steps, {summary['steps_per_s'] or 0:.0f} steps/s, kinetic "
              f"energy {r['kinetic_energy']:.4g} J, pile top {r['top']:.4g} m; wrote {out / 'summary.json'}",
              flush=True)
    return summary


def run_config(config, out, steps=None, quiet=False):
    """`graindem run FILE` for a mixture: build, run `steps` (default: the file's)."""
    from ..engine.cli import prepare_output_folder

    out = prepare_output_folder(out)
    sim = build(config)
    sim.verbose = not quiet
    if not quiet:
        print(sim.last_message, flush=True)
    state = {"config": config, "run_id": uuid.uuid4().hex, "start_step": sim.step_count}
    n = config["simulation"]["steps"] if steps is None else int(steps)
    return _drive(sim, state, out, n, quiet)


def is_checkpoint(path):
    """True if the checkpoint at `path` holds a run of this scenario."""
    from ..engine.checkpoint import holds_extra

    return holds_extra(path, EXTRA_KEY)


def restart(checkpoint_path, out, steps=None, quiet=False):
    """Continue a run of this scenario from its checkpoint for `steps` more steps (default: to its end)."""
    from ..engine.cli import resume_scenario

    sim, state, out, n = resume_scenario(checkpoint_path, out, EXTRA_KEY, steps, quiet)
    sim.verbose = not quiet
    return _drive(sim, state, out, n, quiet)

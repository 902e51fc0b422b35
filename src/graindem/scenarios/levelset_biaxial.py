"""Scenario `biaxial` with rigid level-set grains: the assembly a `particles.kind = "levelset"`
scenario file describes, generated and prepared isotropically under the cell's stress servo.

Templates: for each shape of [grains] (ellipsoid, superquadric, a mesh file, a voxel image) and
each of `size_classes` sizes, one particles.LevelSetGrain (grid and nodes stored once however many
grains use it). Grain sizes are drawn from the size distribution of [particles]; a grain's size is
the largest semi-axis of an analytic shape, the bounding radius of a mesh or voxel grain; each
grain takes the class (a quantile of the drawn sizes) nearest its size in ln(size).

Preparation: the grains start on a simple cubic lattice of their bounding spheres with random
orientations, in a periodic cell, and are compressed by the stress servo on all three axes to the
confining stress at the preparation friction, with local damping 0.7, until the pressure is within 2 % of it and the mean
net force per grain is below 5 % of the mean contact force at two checks in a row (or at
`grains.preparation_steps`); then the friction is restored. The test itself is
scenarios.biaxial.start_test / run_test, as for spheres.

Contact law (`contact.shape_law`): "area", the node-to-level-set law of `grains.law` with
`grains.stiffness`; or "hertz_curvature" (bodies.levelset_hertz), Hertz with the local curvatures
from the materials' E and nu, the tangential law `contact.law` (xi `contact.xi`), the effective-radius
rule `contact.shape_radius_rule` and bound `contact.shape_curvature_limit`, normal damping ratio
`grains.damping_ratio`.

Default stiffness (area law): a contact carrying p d^2 (p the confining stress, d the mean size,
twice the mean radius) between two grains of radius R penetrates `overlap` d, taking the sphere
limit of the area law F = pi k_s R* delta^2 with R* = R / 2 (contact.levelset_contact).
"""

import math
from pathlib import Path

import numpy as np

from ..core.cell import CELL_RATE
from ..core.rotations import random_quaternions
from ..engine import checkpoint
from ..engine.prepare import add_materials, restore_friction
from ..io.progress import PreparationProgress
from ..io.scenario import shape_laws_used

CHECK_EVERY = 250           # steps between settling checks
STRAIN_PER_STEP = 1e-4      # the servo's largest strain per step while the assembly is loose
GAIN_FLOOR = 1e-3           # the smallest servo gain compress_to lowers to, relative to its start
PRESSURE_TOLERANCE = 0.02
UNBALANCED_TOLERANCE = 0.05
PREPARATION_DAMPING = 0.7   # Cundall's local damping while the assembly is compressed (as for spheres)


def default_stiffness(law, pressure, radius, overlap):
    """The grains' contact stiffness at which a contact carrying p d^2 (d = 2 radius) penetrates
    overlap * d: area law k_s = F / (pi R* delta^2), R* = radius / 2; node law: k_n = F / delta
    per node of a patch of ~10 nodes (a guide only: the node law's force grows with the nodes)."""
    d = 2.0 * radius
    force = pressure * d * d
    delta = overlap * d
    if law == "area":
        return force / (math.pi * 0.5 * radius * delta * delta)
    return force / (10.0 * delta)


def size_classes(radii, k):
    """(class radii: k quantiles of `radii`, the class of each radius: the nearest in ln(radius))."""
    classes = np.quantile(radii, (np.arange(k) + 0.5) / k)
    which = np.argmin(np.abs(np.log(radii)[:, None] - np.log(classes)[None, :]), axis=1)
    return classes, which


def build_templates(grains_cfg, radii):
    """[(shape, class radius, LevelSetGrain)] for every shape and size class, and the class of each
    radius in `radii` (the drawn sizes)."""
    from ..particles import LevelSetGrain
    classes, which = size_classes(radii, grains_cfg["size_classes"])
    axes = np.asarray(grains_cfg["axes"], dtype=float)
    axes = axes / axes.max()
    nodes = grains_cfg["nodes"]
    out = []
    for shape in grains_cfg["shapes"]:
        for r in classes:
            if shape in ("ellipsoid", "superquadric"):
                semi = r * axes
                h = semi.min() / grains_cfg["grid_cells"]
                if shape == "ellipsoid":
                    t = LevelSetGrain.ellipsoid(*semi, spacing=h, n_nodes=nodes)
                else:
                    t = LevelSetGrain.superquadric(*semi, *grains_cfg["exponents"], spacing=h, n_nodes=nodes)
            elif shape == "mesh":
                unit = LevelSetGrain.from_mesh(grains_cfg["mesh_file"], n_nodes=nodes)
                t = LevelSetGrain.from_mesh(grains_cfg["mesh_file"], n_nodes=nodes, scale=r / unit.bounding_radius)
            else:
                image = _voxel_image(grains_cfg["voxel_file"])
                unit = LevelSetGrain.from_voxels(image, 1.0, n_nodes=nodes)
                t = LevelSetGrain.from_voxels(image, r / unit.bounding_radius, n_nodes=nodes)
            out.append((shape, float(r), t))
    return out, which


def _voxel_image(path):
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"grains.voxel_file {str(p)!r} does not exist")
    try:
        return np.load(p, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ValueError(f"grains.voxel_file {str(p)!r} is not a NumPy .npy array: {exc}") from None


def cubic_lattice(n, spacing, rng):
    """(positions (n, 3), side L): n sites drawn at random (rng) from the smallest simple cubic
    lattice of m^3 >= n sites `spacing` apart, cell-centred in the cube [0, L)^3 with L = m * spacing."""
    m = math.ceil(n ** (1.0 / 3.0) - 1e-9)
    sites = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    return (sites[rng.permutation(len(sites))[:n]] + 0.5) * spacing, m * spacing


def build_assembly(config, mu_prep):
    """A Simulation of the scenario's grains on a loose lattice in a periodic cell (not yet run)."""
    from ..engine.simulation import Simulation
    from ..particles.size_distribution import from_particles_config
    part, g, mat, load, sim_cfg = (config["particles"], config["grains"], config["material"], config["loading"],
                                   config["simulation"])
    rng = np.random.default_rng(sim_cfg["seed"])
    n = part["n"]
    radii = np.asarray(from_particles_config(part).sample(n, rng), dtype=float)
    templates, size_class = build_templates(g, radii)
    n_shapes = len(g["shapes"])
    shares = np.asarray(g["fractions"] or [1.0 / n_shapes] * n_shapes, dtype=float)
    shape_of = rng.choice(n_shapes, size=n, p=shares / shares.sum())
    template_of = shape_of * g["size_classes"] + size_class
    contact = config["contact"]
    laws = shape_laws_used(config)
    hertz = "hertz_curvature" in laws
    # the Hertz law's materials and tangential law; the area law's stiffness is grains.stiffness
    elastic = dict(E=mat["E"], nu=mat["nu"], law=contact["law"], xi=contact["xi"]) if hertz else {}
    sim = Simulation(mu=mu_prep, density=mat["density"], dt_fraction=sim_cfg["dt_fraction"] or 0.2,
                     dt=sim_cfg["dt"], allow_unstable_dt=sim_cfg["allow_dt_above_critical"], **elastic)
    more = config.get("materials") or {}
    materials = {k: list(v) for k, v in more.items()} if more.get("E") else None
    material_of = add_materials(sim, materials, n, rng=rng, mu_prep=mu_prep)
    # the lattice of bounding spheres (a grain lies within its bounding radius of its centre)
    pos, L = cubic_lattice(n, 2.02 * max(t.bounding_radius for _, _, t in templates), rng)
    quat = random_quaternions(rng, n)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
    mean_radius = float(np.mean(radii))
    set_shape_laws(sim, config, lambda: g["stiffness"] or default_stiffness(g["law"], load["confining_stress"],
                                                                         mean_radius, g["overlap"]))
    for t in range(len(templates)):
        for mt in np.unique(material_of):
            sel = (template_of == t) & (material_of == mt)
            if np.any(sel):
                sim.add_grains(templates[t][2], pos[sel], orientations=quat[sel], material=int(mt))
    return sim, materials


def set_shape_laws(sim, config, area_stiffness):
    """The contact laws of the scenario's level-set grains on `sim` (before its grains are added):
    contact.shape_law for every material pair, the laws materials.hertz_curvature_pairs and
    materials.area_pairs give to chosen pairs; "hertz_curvature" with grains.damping_ratio and the
    shape_* settings, "area" with grains.law and the stiffness area_stiffness() returns."""
    g, contact = config["grains"], config["contact"]
    more = config.get("materials") or {}
    laws = shape_laws_used(config)
    default = contact["shape_law"]
    if "hertz_curvature" in laws:
        sim.set_grain_contact(law="hertz_curvature", damping_ratio=g["damping_ratio"],
                              radius_rule=contact["shape_radius_rule"], curvature_limit=contact["shape_curvature_limit"],
                              default=default == "hertz_curvature")
    if "area" in laws:
        sim.set_grain_contact(area_stiffness(), law=g["law"], kt_ratio=g["kt_ratio"], damping_ratio=g["damping_ratio"],
                              default=default == "area")
    for law in ("hertz_curvature", "area"):
        pairs = more.get(f"{law}_pairs") or []
        for t in range(0, len(pairs), 2):
            sim.set_pair_shape_law(int(pairs[t]), int(pairs[t + 1]), law)


def packing_key(config):
    """What the prepared assembly depends on (a cached packing is reused only for the same key)."""
    keep = {"particles": config["particles"], "grains": config["grains"], "material": config["material"],
            "materials": config.get("materials"), "seed": config["simulation"]["seed"],
            "dt": config["simulation"]["dt"], "dt_fraction": config["simulation"]["dt_fraction"],
            "pressure": config["loading"]["confining_stress"], "mu_prep": config["loading"]["preparation_mu"]}
    contact = config["contact"]
    if shape_laws_used(config) != {"area"}:
        keep["contact"] = {k: contact[k] for k in ("shape_law", "shape_radius_rule", "shape_curvature_limit", "law",
                                                    "xi")}
    return keep


def compress_to(sim, pressure, max_steps, progress=None):
    """Drive the three axes of the periodic cell by the stress servo towards `pressure` until the
    pressure is within PRESSURE_TOLERANCE of it and the mean net force per grain below
    UNBALANCED_TOLERANCE of the mean contact force at two checks in a row, or for max_steps steps;
    returns (settled, the last measure()). The servo stays on. `progress(sim, m)` is called at
    every check.

    The servo's gain starts at STRAIN_PER_STEP per unit relative stress error, which compresses a
    loose assembly quickly. Once a contact network carries the load, the contacts' dashpots add a
    stress proportional to the cell's rate, and at that gain the servo's answer to it overshoots:
    the cell then expands and shrinks at alternate steps at its largest rate and never settles. So
    the last step of every check is taken alone, and when some axis on the servo reversed its rate
    between the last two steps, the gain is halved (down to GAIN_FLOOR of the start)."""
    rate = STRAIN_PER_STEP / sim.dt
    gain = rate
    for k in range(3):
        sim.control_axis(k, stress=pressure, gain=gain, max_rate=rate)
    good = 0
    end = sim.step_count + max_steps
    m = sim.measure()
    while good < 2 and sim.step_count < end:
        steps = min(CHECK_EVERY, end - sim.step_count)
        if steps > 1:
            sim.run(steps - 1)
        before = sim.cell[CELL_RATE:CELL_RATE + 3].copy()
        sim.run(1)
        after = sim.cell[CELL_RATE:CELL_RATE + 3]
        if np.any(before * after < 0.0) and gain > GAIN_FLOOR * rate:
            gain *= 0.5
            for k in range(3):
                sim.control_axis(k, stress=pressure, gain=gain, max_rate=rate)
        m = sim.measure()
        if progress is not None:
            progress(sim, m)
        ok = (abs(m["pressure"] / pressure - 1.0) < PRESSURE_TOLERANCE
              and m["unbalanced_force_ratio"] < UNBALANCED_TOLERANCE)
        good = good + 1 if ok else 0
    return good >= 2, m


def prepare_isotropically(sim, config, materials, what, bodies, announce=None, local_damping=PREPARATION_DAMPING):
    """Compress a set-up assembly isotropically to loading.confining_stress under the cell's servo
    at `local_damping` (compress_to, at most grains.preparation_steps steps), then
    restore the friction of [material] and `materials` and stop the servo; `what` and `bodies` name
    the assembly in the progress line and in the announced result. Returns whether it settled."""
    pressure = config["loading"]["confining_stress"]
    sim.set_local_damping(local_damping)
    limit = config["grains"]["preparation_steps"]
    with PreparationProgress(pressure, quiet=announce is None, desc=f"preparing the {what}") as progress:
        settled, m = compress_to(sim, pressure, limit, progress=progress.callback)
    restore_friction(sim, config["material"]["mu"], materials)
    for k in range(3):
        sim.control_axis(k, strain_rate=0.0)
    if announce:
        state = "settled" if settled else f"not settled within grains.preparation_steps = {limit}"
        announce(f"prepared {bodies} at {pressure:.4g} Pa in {sim.step_count} steps ({state}): "
                 f"pressure {m['pressure']:.4g} Pa, void ratio {m['void_ratio']:.3f}, "
                 f"coordination {m['coordination']:.2f}, unbalanced force ratio {m['unbalanced_force_ratio']:.3g}")
    return settled


def prepared_grains(config, cache=None, announce=None):
    """The scenario's grains compressed isotropically to the confining stress (module docstring),
    loaded from `cache` (a checkpoint) when it holds the same assembly, else prepared and saved there."""
    def describe(sim):
        g = sim.grains
        return (f"{g.n} level-set grains of {len(np.unique(g.tmpl))} template(s), "
                f"{int(np.diff(g.t_node_off).min())}-{int(np.diff(g.t_node_off).max())} nodes each; "
                f"dt = {sim.dt:.4g} s, dt_crit = {sim.dt_crit:.4g} s, dt/dt_crit = {sim.dt / sim.dt_crit:.3f}")

    return load_or_prepare(config, cache, "grain_packing", packing_key(config), build_assembly, "grains", describe,
                           announce)


def load_or_prepare(config, cache, extra_key, key, build, kind, describe, announce,
                    local_damping=PREPARATION_DAMPING):
    """The assembly `build(config, mu)` makes, compressed isotropically (prepare_isotropically at
    `local_damping`), loaded from checkpoint `cache` when its extra[`extra_key`] equals `key`, else
    prepared and saved there. kind: the words of the messages ("grains", "mixture", ...);
    describe(sim): the line announced after setup."""
    sim = checkpoint.load_if_same(cache, extra_key, key)
    if sim is not None:
        if announce:
            announce(f"reusing the prepared {kind} {cache}")
        return sim
    sim, materials = build(config, config["loading"]["preparation_mu"])
    sim.setup()
    if announce:
        announce(describe(sim))
    names = {"sphere": "spheres", "levelset": "grains", "deformable": "deformable grains"}
    bodies = " and ".join(f"{v} {names[k]}" for k, v in sim.kinds.items())
    settled = prepare_isotropically(sim, config, materials, kind, bodies, announce, local_damping)
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        checkpoint.save(sim, cache, extra={extra_key: key, "settled": settled})
    return sim


def write_vtk(sim, out, index, pvd_grains=None, pvd_contacts=None):
    """VTK frame `index` of a grain run: the grains as posed (deformable ones: deformed) surface
    meshes (grains_*.vtu) and the
    contact network (contacts_*.vtu: a line per touching pair, from a centre to the image of the
    other, with the pair's summed node force and node count); in a run with spheres also the
    spheres (spheres_*.vtu: centres with radius and velocity; the grains' network holds the grain
    pairs)."""
    from ..io.vtk import write_contacts, write_particles, write_surface
    vdir = Path(out) / "vtk"
    vdir.mkdir(parents=True, exist_ok=True)
    g = sim.grains if sim.grains is not None else sim.deformable   # the same surfaces and network
    v, f, gid = g.surfaces()
    surf = write_surface(vdir / f"grains_{index:06d}.vtu", v, f, point_data={"grain": gid})
    net = g.contact_network()
    pair = (net["j"] >= 0) & (net["j"] < g.n)
    i, j = net["i"][pair], net["j"][pair]
    if sim.mixed is not None:
        write_particles(vdir / f"spheres_{index:06d}.vtu", sim.pos, {"radius": sim.radius, "velocity": sim.vel})
    from ..core.cell import minimum_image
    branch = minimum_image(g.pos[j] - g.pos[i], sim.box_lengths, sim.cell_matrix[[1, 2, 2], [0, 0, 1]], sim.periodic)
    force = net["force"][pair]
    write_contacts(vdir / f"contacts_{index:06d}.vtu", g.pos, np.column_stack([i, j]),
                   {"force_on_i": force, "force_magnitude": np.linalg.norm(force, axis=1),
                    "nodes": net["n_nodes"][pair].astype(np.int64)}, branch=branch, compression=None)
    if pvd_grains is not None:
        pvd_grains.add(sim.time, vdir / f"grains_{index:06d}.vtu")
        pvd_contacts.add(sim.time, vdir / f"contacts_{index:06d}.vtu")
    return surf

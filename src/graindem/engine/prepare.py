"""Assembly preparation: a dense random packing of spheres by isotropic compression.

A loose random gas (random sequential addition) in a periodic cube is compressed by the stress
servo of the periodic cell on all three axes to the target pressure, with friction lowered during
compression (the standard way to reach a dense state; mu_prep = 0 gives the densest) and Cundall's
local damping to drain the kinetic energy. When the pressure holds at the target and the assembly
is at rest, friction is raised to its final value. The result is a `Simulation` ready to use and
to save (`checkpoint.save`).

The loose gas is placed by random sequential addition through cell grids by size class (linear in
the number of spheres for size ratios up to 10). For wide size distributions the spheres smaller
than half the largest one are made heavier while the packing is prepared (preparation_mass_factor),
so that the time step is not set by the smallest sphere; the true masses are put back at the end.
"""

import math

import numpy as np

from .._jit import njit
from ..particles.size_distribution import Uniform
from .neighbour_multi import SizeClasses, insert, overlaps_any
from .interrupts import RunStopped
from .simulation import Simulation


MAX_ATTEMPTS = 100000  # trial positions per sphere before random_gas gives up
PROGRESS_FROM = 50000  # random_gas shows a progress line from this many spheres on


def random_gas(n, radii, box, rng, progress=None):
    """Non-overlapping random positions for spheres of the given radii in a periodic box.

    Random sequential addition, largest sphere first (the big ones are the hardest to place): each
    sphere takes the first of uniformly drawn trial positions (rng.uniform(0, 1, 3) * box per
    trial) that overlaps no sphere placed before it. Overlap tests go through a cell grid per size
    class (neighbour_multi), so each trial examines O(1) spheres and the whole placement takes time
    linear in n for any size ratio. The trials are drawn in batches; `rng` is left as if each trial
    had been drawn on its own. progress: show a progress line (default: from PROGRESS_FROM spheres).
    """
    from ..io.progress import Progress
    radii = np.asarray(radii, dtype=np.float64)
    box = np.asarray(box, dtype=np.float64)
    n = int(n)
    order = np.argsort(-radii)
    pos = np.zeros((n, 3))
    grid = SizeClasses(radii, box)
    show = n >= PROGRESS_FROM if progress is None else bool(progress)
    k = tried = 0
    with Progress(n, desc="placing spheres", quiet=not show, unit="sphere") as bar:
        while k < n:
            rows = int(min(65536, max(256, 2 * (n - k))))
            state = _rng_state(rng)
            draws = rng.uniform(0.0, 1.0, (rows, 3))
            k_new, used, tried, failed = place_spheres(order, k, tried, radii, box, draws, pos, MAX_ATTEMPTS,
                                                       *grid.arrays())
            if used < rows:  # rewind the generator to just after the last trial used
                _set_rng_state(rng, state)
                rng.uniform(0.0, 1.0, (used, 3))
            bar.update(int(k_new - k))
            k = k_new
            if failed:
                raise ValueError(f"could not place {n} spheres without overlap: lower the solid fraction")
    return pos


def _rng_state(rng):
    return rng.bit_generator.state if hasattr(rng, "bit_generator") else rng.get_state()


def _set_rng_state(rng, state):
    if hasattr(rng, "bit_generator"):
        rng.bit_generator.state = state
    else:
        rng.set_state(state)


@njit(fastmath=False)
def place_spheres(order, k, tried, radii, box, draws, pos, max_attempts, cls, class_rmax, class_count, ncell,
                  cell_offset, head, nxt, cells):
    """Place spheres order[k:] one after the other from the trial positions `draws` (fractions of
    box) until they or the draws run out; `tried`: trials already spent on sphere order[k].
    Returns (next k, draws used, trials spent on sphere order[k], failed)."""
    used = 0
    x = np.empty(3)
    while k < order.size:
        if used == draws.shape[0]:
            return k, used, tried, False
        i = order[k]
        for a in range(3):
            x[a] = draws[used, a] * box[a]
        used += 1
        tried += 1
        if not overlaps_any(x, radii[i], pos, radii, box, class_rmax, class_count, ncell, cell_offset, head, nxt,
                            cells):
            pos[i] = x
            insert(i, x, box, cls, class_count, ncell, cell_offset, head, nxt)
            k += 1
            tried = 0
        elif tried >= max_attempts:
            return k, used, tried, True
    return k, used, tried, False


def prepare_packing(n, radius=1e-4, radius_spread=0.2, pressure=100e3, law="mindlin", E=70e9, nu=0.25,
                    density=2650.0, mu=0.5, mu_prep=0.1, xi=0.0, seed=0, solid_fraction0=0.3,
                    strain_per_step=2e-5, local_damping=0.7, max_steps=200000, tolerance=0.005,
                    dt_fraction=0.25, check_every=500, unbalanced=1e-3, callback=None, verbose=False,
                    dt=None, allow_unstable_dt=False, restitution=None, materials=None, distribution=None,
                    resume=None):
    """A dense isotropically compressed periodic packing at `pressure` (Pa); returns a Simulation.

    radius: mean radius (m); radius_spread: radii uniform in radius*(1 +- spread), at most 9/11
    (size ratio 10). distribution: instead of those two, a size distribution of
    particles.size_distribution (Uniform, Lognormal, Sieve) the radii are drawn from.
    strain_per_step: the servo's largest strain increment per step (quasi-static control).
    Stops when the pressure is within `tolerance` of the target and the unbalanced force ratio
    (measure()) is below `unbalanced` at two successive checks, or raises RuntimeError after max_steps.
    materials: further materials (see `add_materials`); E, nu, density, mu above are material 0.

    A stop request (SIGINT, SIGTERM: engine.interrupts.RunStopped) ends the compression at the end of
    a step; the RunStopped carries `preparation`, the state to continue from (`resume=` that dict,
    with the same other arguments, continues exactly as the uninterrupted preparation would have).
    """
    n = int(n)
    if n < 8:
        raise ValueError(f"n must be >= 8, got {n}")
    if distribution is None:
        if not (radius > 0.0 and math.isfinite(radius)):
            raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
        distribution = Uniform(radius, radius_spread)
    if not (pressure > 0.0 and math.isfinite(pressure)):
        raise ValueError(f"pressure must be a finite number > 0, got {pressure!r}")
    if not (0.0 < solid_fraction0 < 0.5):
        raise ValueError(f"solid_fraction0 must lie in (0, 0.5), got {solid_fraction0!r}")
    if resume is None:
        sim, true_mass, true_inertia, scaled = _compressed_gas(
            n, distribution, pressure, law, E, nu, density, mu, mu_prep, xi, seed, solid_fraction0, strain_per_step,
            local_damping, dt_fraction, verbose, dt, allow_unstable_dt, restitution, materials)
        good = 0
    else:
        sim, good = resume["sim"], int(resume["good"])
        true_mass, true_inertia, scaled = resume["true_mass"], resume["true_inertia"], bool(resume["scaled"])
    try:
        while sim.step_count < max_steps:
            # whole check intervals counted from the start, so that a resumed preparation checks at the
            # steps the uninterrupted one did
            sim.run(check_every - sim.step_count % check_every)
            m = sim.measure()
            if callback is not None:
                callback(sim, m)
            calm = m["unbalanced_force_ratio"] < unbalanced
            if abs(m["pressure"] / pressure - 1.0) < tolerance and calm:
                good += 1
                if good >= 2:
                    break
            else:
                good = 0
        else:
            m = sim.measure()
            raise RuntimeError(f"the packing did not settle at {pressure} Pa within {max_steps} steps "
                               f"(pressure {m['pressure']:.4g} Pa, unbalanced force ratio "
                               f"{m['unbalanced_force_ratio']:.3g})")
    except RunStopped as exc:
        exc.preparation = {"sim": sim, "good": good, "true_mass": true_mass, "true_inertia": true_inertia,
                           "scaled": scaled}
        raise
    if scaled:  # rows may have been renumbered: pid names each row's original sphere
        sim = with_masses(sim, true_mass[sim.pid], true_inertia[sim.pid])
    restore_friction(sim, mu, materials)
    for k in range(3):
        sim.control_axis(k, strain_rate=0.0)
    return sim


MASS_SCALING_BELOW = 0.5  # spheres smaller than this fraction of the largest radius are made heavier


def _compressed_gas(n, distribution, pressure, law, E, nu, density, mu, mu_prep, xi, seed, solid_fraction0,
                    strain_per_step, local_damping, dt_fraction, verbose, dt, allow_unstable_dt, restitution,
                    materials):
    """The loose gas of prepare_packing under its isotropic stress servo: (sim, true masses, true
    inertias, whether the masses are scaled for the preparation)."""
    rng = np.random.default_rng(seed)
    r = distribution.sample(n, rng)
    vs = float(np.sum(4.0 / 3.0 * math.pi * r ** 3))
    L = (vs / solid_fraction0) ** (1.0 / 3.0)
    pos = random_gas(n, r, np.full(3, L), rng)
    # time step at the overlap of a contact carrying ~ 20 p d^2 (a generous bound on the
    # largest contact force of a packing at pressure p)
    from ..contact.hertz import contact_params
    prm = contact_params(r.min(), r.min(), E, nu, mu, xi)
    fmax = 20.0 * pressure * (2.0 * r.max()) ** 2
    overlap = (fmax / prm[0]) ** (2.0 / 3.0)
    sim = Simulation(law=law, E=E, nu=nu, mu=mu_prep, density=density, xi=xi, local_damping=local_damping,
                     dt_fraction=dt_fraction, reference_overlap=overlap, verbose=verbose, dt=dt,
                     allow_unstable_dt=allow_unstable_dt, restitution=restitution)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
    # a generator of its own: the radii and positions stay those of a one-material packing
    mats = add_materials(sim, materials, n, np.random.default_rng([seed, 1]), mu_prep)
    sim.add_particles(pos, r, material=mats)
    sim.setup()
    true_mass, true_inertia = sim.mass.copy(), sim.inertia.copy()
    factor = preparation_mass_factor(sim.radius)
    scaled = dt is None and bool(np.any(factor > 1.0))
    if scaled:
        sim = with_masses(sim, true_mass * factor, true_inertia * factor)
    max_rate = strain_per_step / sim.dt
    for k in range(3):
        sim.control_axis(k, stress=pressure, gain=max_rate, max_rate=max_rate)
    return sim, true_mass, true_inertia, scaled


def preparation_mass_factor(radii):
    """Factor on each sphere's mass and moment of inertia while a packing is prepared.

    The critical time step of a sphere of radius r is ~ sqrt(m / k_n) with m ~ r^3 and the Hertz
    stiffness k_n ~ sqrt(r delta) at a common reference overlap, so it scales as r^(5/4): at a
    size ratio of 9 the smallest sphere alone cuts the step 15-fold against the largest, and the
    servo's strain per step (and the settling, set by the large grains) then needs that many more
    steps. The preparation only seeks a static equilibrium, which does not depend on the masses,
    so spheres below r_ref = MASS_SCALING_BELOW * r_max get their mass (and moment of inertia)
    multiplied by (r_ref / r)^(5/2), which gives them the critical step of a sphere of radius
    r_ref; spheres within a factor 2 of the largest keep theirs (factor 1: such packings are
    prepared exactly as without scaling). The true masses are put back before the packing is
    returned.
    """
    radii = np.asarray(radii, dtype=np.float64)
    return np.maximum(1.0, (MASS_SCALING_BELOW * radii.max() / radii) ** 2.5)


def with_masses(sim, mass, inertia):
    """The simulation `sim` continued with other particle masses and moments of inertia (rows in
    the simulation's current order), dt reset to dt_fraction of the critical step they give."""
    arrays, meta = sim.state_dict()
    arrays["mass"] = np.ascontiguousarray(mass, dtype=np.float64)
    arrays["inertia"] = np.ascontiguousarray(inertia, dtype=np.float64)
    new = Simulation.from_state(arrays, meta, verbose=sim.verbose)
    new.adapt_dt()
    return new


def add_materials(sim, materials, n, rng=None, mu_prep=None, material_of=None):
    """Add the further materials of `materials` to `sim` and return each of n spheres' material.

    materials: None, or a dict with lists "E", "nu", "density", "mu" (materials 1, 2, ...), optional
    "fraction" (share of the n spheres per further material, assigned at random with `rng`) and
    "pair_friction" (triples m1, m2, mu, applied by restore_friction). material_of: the spheres'
    materials given explicitly instead of by fraction. mu_prep: the friction every material gets
    now (a preparation's lowered friction), else its own.
    """
    mats = np.zeros(n, dtype=np.int64)
    if not materials:
        if material_of is not None and np.any(np.asarray(material_of) != 0):
            raise ValueError("particle materials other than 0 need [materials] defining them")
        return mats
    for k in range(len(materials["E"])):
        sim.add_material(materials["E"][k], materials["nu"][k], materials["mu"][k] if mu_prep is None else mu_prep,
                         materials["density"][k])
    if material_of is not None:
        return np.asarray(material_of, dtype=np.int64)
    shares = materials.get("fraction") or []
    counts = [int(round(f * n)) for f in shares]
    if sum(counts) > n:
        raise ValueError(f"materials.fraction asks for {sum(counts)} of {n} spheres")
    labels = np.concatenate([np.full(c, k + 1, dtype=np.int64) for k, c in enumerate(counts)] + [mats[:0]])
    mats[:labels.size] = labels
    return (rng if rng is not None else np.random.default_rng(0)).permutation(mats)


def restore_friction(sim, mu, materials):
    """After a preparation at lowered friction: material 0 gets mu, the further materials their own,
    and the chosen pairs theirs."""
    sim.set_friction(mu)
    if not materials:
        return
    for k, m in enumerate(materials["mu"]):
        sim.set_material_friction(k + 1, m)
    pf = materials.get("pair_friction") or []
    for t in range(0, len(pf), 3):
        sim.set_pair_friction(int(pf[t]), int(pf[t + 1]), pf[t + 2])

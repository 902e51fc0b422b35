"""Scenario `biaxial` (Kuhn 2011, section 4.2): plane-strain compression of a dense sphere packing.

A dense periodic assembly (prepared by isotropic compression, `engine.prepare`) is compressed
along `axis` at a constant strain rate to `total_strain` (engineering, 4 % in Kuhn's test) while
the stress along `stress_axis` is held at the confining stress by the cell's servo and the third
axis keeps zero strain (plane strain). Any tangential law by name.

Material (a quartz-like sand, our choice; Kuhn does not list his): G = 29 GPa and nu = 0.15
(quartz's polycrystal values, so E = 2 G (1 + nu) = 66.7 GPa), density 2650 kg/m^3, mu = 0.5,
radii 0.15 mm +- 20 % (uniform), confining stress 100 kPa. Under quasi-static loading the stress
ratio and dilatancy depend on the stiffness only through p/E, so the grain size only scales time.

Outputs in the results folder: series.csv/.jsonl/.json (stress, strains, void ratio, contacts,
sliding fraction, history lengths, store memory, energies per output interval), VTK particles and
contact networks (particles.pvd, contacts.pvd), plots (stress_strain.png, volume.png,
history.png), checkpoint.h5 at the end (and on failure), summary.json.
"""

import json
import math
import time
from pathlib import Path

import numpy as np

from ..engine import checkpoint
from ..engine.interrupts import RunStopped
from ..engine.prepare import prepare_packing
from ..io.progress import PreparationProgress
from ..particles.size_distribution import Uniform

QUARTZ = {"E": 2.0 * 29e9 * 1.15, "nu": 0.15, "density": 2650.0, "mu": 0.5}
RADIUS = 1.5e-4
SPREAD = 0.2
PRESSURE = 100e3

SERIES_COLUMNS = ["step", "time", "strain_axial", "strain_lateral", "strain_volumetric", "stress_xx", "stress_yy",
                  "stress_zz", "stress_ratio", "pressure", "void_ratio", "contacts", "coordination",
                  "sliding_fraction", "mean_history_length", "max_history_length", "store_bytes",
                  "kinetic_energy", "elastic_energy", "frictional_dissipation", "unbalanced_force_ratio"]


def prepared_packing(n, seed=0, pressure=PRESSURE, cache=None, radius=RADIUS, spread=SPREAD, material=QUARTZ,
                     mu_prep=0.1, announce=None, dt_fraction=0.25, dt=None, allow_unstable_dt=False, restitution=None,
                     materials=None, distribution=None):
    """The dense packing for a biaxial test, loaded from `cache` (a checkpoint path) when it exists,
    else prepared (isotropic compression, friction mu_prep) and saved there. mu_prep = 0.1 gives solid
    fraction ~0.61 (medium dense, a stress plateau rather than a peak); frictionless compression gives
    ~0.63 and a distinct peak but creeps for long before it settles (docs/history-length.md). materials: further
    materials (engine.prepare.add_materials); `material` is material 0."""
    if isinstance(distribution, Uniform):  # the radius/spread form and the cache key it has always had
        radius, spread, distribution = distribution.radius_mean, distribution.spread, None
    key = {"n": n, "seed": seed, "pressure": pressure, "radius": radius, "spread": spread,
           "material": dict(material), "mu_prep": mu_prep, "dt_fraction": dt_fraction, "dt": dt,
           "restitution": restitution}
    if materials:
        key["materials"] = materials
    if distribution is not None:
        key["distribution"] = distribution.key()
    sim = checkpoint.load_if_same(cache, "packing", key)
    if sim is not None:
        if announce:
            announce(f"reusing the prepared packing {cache}")
        return sim
    partial = None if cache is None else Path(cache).with_name(Path(cache).stem + ".partial.h5")
    resume = _interrupted_preparation(partial, key)
    if resume is not None and announce:
        announce(f"continuing the interrupted preparation {partial} from step {resume['sim'].step_count}")
    t0 = time.perf_counter()
    progress = PreparationProgress(pressure, quiet=announce is None,
                                    start=0 if resume is None else resume["sim"].step_count)
    try:
        with progress:
            sim = prepare_packing(n, radius=radius, radius_spread=spread, pressure=pressure, law="mindlin",
                                  E=material["E"], nu=material["nu"], density=material["density"],
                                  mu=material["mu"], mu_prep=mu_prep, seed=seed, dt_fraction=dt_fraction, dt=dt,
                                  allow_unstable_dt=allow_unstable_dt, restitution=restitution, materials=materials,
                                  distribution=distribution, resume=resume, callback=progress.callback)
    except RunStopped as exc:
        state = getattr(exc, "preparation", None)
        if partial is None or state is None:
            raise
        p = state
        checkpoint.save(p["sim"], partial, extra={"packing": key, "preparation": {
            "good": p["good"], "scaled": p["scaled"], "true_mass": p["true_mass"].tolist(),
            "true_inertia": p["true_inertia"].tolist()}})
        raise RunStopped(exc.signal, exc.step, f"{exc}; the preparation so far is in {partial}, and the same "
                         "command continues it") from None
    if announce:
        m = sim.measure()
        announce(f"prepared {n} spheres at {pressure:.4g} Pa in {sim.step_count} steps "
                 f"({time.perf_counter() - t0:.1f} s): void ratio {m['void_ratio']:.3f}, "
                 f"coordination {m['coordination']:.2f}")
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        checkpoint.save(sim, cache, extra={"packing": key})
        if partial.exists():
            partial.unlink()
    return sim


def _interrupted_preparation(partial, key):
    """The state of an interrupted preparation of the same packing saved in `partial`, or None."""
    if partial is None or not partial.exists():
        return None
    sim, extra = checkpoint.load(partial)
    if not extra or extra.get("packing") != key or "preparation" not in extra:
        return None
    p = extra["preparation"]
    # JSON keeps every float64 exactly (shortest round-trip repr)
    return {"sim": sim, "good": int(p["good"]), "scaled": bool(p["scaled"]),
            "true_mass": np.array(p["true_mass"], dtype=np.float64),
            "true_inertia": np.array(p["true_inertia"], dtype=np.float64)}


def start_test(sim, law, xi=0.0, steps=40000, total_strain=0.04, axis=2, stress_axis=0, pressure=PRESSURE,
               local_damping=0.1):
    """Set a prepared packing up for the biaxial test; returns the test's own state (JSON-able)."""
    if axis == stress_axis or axis not in (0, 1, 2) or stress_axis not in (0, 1, 2):
        raise ValueError(f"axis and stress_axis must be two different axes in 0..2, got {axis}, {stress_axis}")
    if not (0.0 < total_strain < 1.0):
        raise ValueError(f"total_strain must lie in (0, 1), got {total_strain!r}")
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if sim.grains is None and sim.deformable is None:  # shaped grains keep their node law
        sim.set_law(law, xi=xi)
    sim.set_local_damping(local_damping)
    # the cell stretches by (1 + rate dt) per step: this rate ends exactly at total_strain
    rate = math.expm1(math.log1p(-total_strain) / steps) / sim.dt
    third = 3 - axis - stress_axis
    # dilatancy makes the lateral strain rate exceed the axial one: the servo may move 5x as fast,
    # saturating at a 10 % stress error
    sim.control_axis(axis, strain_rate=rate)
    sim.control_axis(third, strain_rate=0.0)
    sim.control_axis(stress_axis, stress=pressure, gain=50.0 * abs(rate), max_rate=5.0 * abs(rate),
                     integral_steps=200)
    return {"law": law, "xi": xi, "steps": steps, "total_strain": total_strain, "axis": axis,
            "stress_axis": stress_axis, "pressure": pressure, "L0": sim.box_lengths.tolist(),
            "start_step": sim.step_count}


def dt_line(sim):
    """The time step against the critical one at the current contacts (what a user checks first)."""
    crit = sim.critical_time_step()
    return f"dt = {sim.dt:.4g} s, dt_crit = {crit:.4g} s, dt/dt_crit = {sim.dt / crit:.3f}"


def series_row(sim, test, m=None):
    m = sim.measure() if m is None else m
    L0 = np.array(test["L0"])
    L = sim.box_lengths
    eng = 1.0 - L / L0  # engineering compressive strains
    sig = m["stress"]
    a = test["axis"]
    s = test["stress_axis"]
    vol = 1.0 - np.prod(L / L0)
    return {"step": sim.step_count - test["start_step"], "time": sim.time, "strain_axial": float(eng[a]),
            "strain_lateral": float(eng[s]), "strain_volumetric": float(vol),
            "stress_xx": float(sig[0, 0]), "stress_yy": float(sig[1, 1]), "stress_zz": float(sig[2, 2]),
            "stress_ratio": float(sig[a, a] / sig[s, s]) if sig[s, s] != 0 else float("nan"),
            "pressure": m["pressure"], "void_ratio": m["void_ratio"], "contacts": m["n_contacts"],
            "coordination": m["coordination"], "sliding_fraction": m["sliding_fraction"],
            "mean_history_length": m["mean_history_length"], "max_history_length": m["max_history_length"],
            "store_bytes": m["store_bytes"], "kinetic_energy": m["kinetic_energy"],
            "elastic_energy": m["elastic_normal_energy"], "frictional_dissipation": m["frictional_dissipation"],
            "unbalanced_force_ratio": m["unbalanced_force_ratio"]}


def write_vtk(sim, out, index, pvd_particles=None, pvd_contacts=None):
    """VTK frame `index`: the particles and the contact network (level-set and deformable grains:
    their surfaces, scenarios.levelset_biaxial.write_vtk)."""
    from ..io.vtk import write_contacts, write_particles
    if sim.grains is not None or sim.deformable is not None:
        from .levelset_biaxial import write_vtk as write_grain_vtk
        return write_grain_vtk(sim, out, index, pvd_particles, pvd_contacts)
    out = Path(out)
    vdir = out / "vtk"
    vdir.mkdir(parents=True, exist_ok=True)
    c = sim.contact_arrays()
    # the engine clears forces after each step: rebuild the net contact force from the contacts
    fc = c["N"][:, None] * c["normal"] - c["T"]
    force = np.zeros_like(sim.pos)
    np.add.at(force, c["j"], fc)
    np.add.at(force, c["i"], -fc)
    p = write_particles(vdir / f"particles_{index:06d}.vtu", sim.pos,
                        {"radius": sim.radius, "velocity": sim.vel, "angular_velocity": sim.omega,
                         "force": force})
    write_contacts(vdir / f"contacts_{index:06d}.vtu", sim.pos, np.column_stack([c["i"], c["j"]]),
                   {"normal_force": c["N"], "tangential_force": c["T"],
                    "tangential_force_magnitude": np.linalg.norm(c["T"], axis=1),
                    "history_length": c["history_length"].astype(np.int64)},
                   branch=c["branch"], compression=None)
    if pvd_particles is not None:
        pvd_particles.add(sim.time, vdir / f"particles_{index:06d}.vtu")
        pvd_contacts.add(sim.time, vdir / f"contacts_{index:06d}.vtu")
    return p


def run_test(sim, test, out=None, steps=None, output_interval=1000, vtk_interval=0, quiet=True, announce=None,
             resume=False, write_checkpoint=True, checkpoint_interval=0):
    """Run (or continue) the biaxial test for `steps` steps (default: to the end); returns the rows.
    checkpoint_interval > 0 also saves out/checkpoint.h5 (atomically) at every multiple of it."""
    from ..io.progress import Progress
    from ..io.timeseries import TimeSeriesWriter
    from ..io.vtk import PVDCollection
    done = sim.step_count - test["start_step"]
    steps = test["steps"] - done if steps is None else int(steps)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    rows = []
    writer = pvd_p = pvd_c = None
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        writer = TimeSeriesWriter(out / "series", SERIES_COLUMNS,
                                  resume_after=("step", done) if resume else None)
        if vtk_interval:
            shaped = sim.grains is not None or sim.deformable is not None
            pvd_p = PVDCollection(out / ("grains.pvd" if shaped else "particles.pvd"), resume=resume)
            pvd_c = PVDCollection(out / "contacts.pvd", resume=resume)
    if done == 0 and not resume:
        row = series_row(sim, test)
        rows.append(row)
        if writer is not None:
            writer.append(row)
    progress = Progress(steps, desc=f"biaxial {test['law']}", quiet=quiet)

    def on_diverge(s):
        if out is None:
            return None
        return str(checkpoint.save(s, out / "diverged.h5", extra={"biaxial": test}))

    def every(s):
        k = s.step_count - test["start_step"]
        if k % output_interval == 0:
            row = series_row(s, test)
            rows.append(row)
            if writer is not None:
                writer.append(row)
            if pvd_p is not None and k % vtk_interval < output_interval:
                write_vtk(s, out, k, pvd_p, pvd_c)
            progress.update(int(output_interval), strain=row["strain_axial"], ratio=row["stress_ratio"],
                            contacts=row["contacts"], history=row["mean_history_length"])
        # after the row: a run killed later restarts from here with its series complete up to k
        if checkpoint_interval and k % checkpoint_interval == 0 and out is not None:
            checkpoint.save(s, out / "checkpoint.h5", extra={"biaxial": test})
    try:
        cadence = math.gcd(output_interval, checkpoint_interval) if checkpoint_interval else output_interval
        sim.run(steps, callback=every, every=cadence, on_diverge=on_diverge, phase=test["start_step"])
    finally:
        progress.close()
        if writer is not None:
            writer.close()
    if out is not None:
        if write_checkpoint:
            checkpoint.save(sim, out / "checkpoint.h5", extra={"biaxial": test})
        if pvd_p is None:
            write_vtk(sim, out, sim.step_count - test["start_step"])
    return rows, progress.rate


def plot_results(series, out, label, announce=None):
    from ..io.plots import new_figure, save_figure
    out = Path(out)
    fig, ax = new_figure()
    ax.plot(100 * np.asarray(series["strain_axial"]), series["stress_ratio"], label=label)
    ax.set_xlabel("axial strain (%)")
    ax.set_ylabel("stress ratio sigma_axial / sigma_lateral")
    ax.legend()
    save_figure(fig, out / "stress_strain.png", announce=announce)
    fig, ax = new_figure()
    ax.plot(100 * np.asarray(series["strain_axial"]), 100 * np.asarray(series["strain_volumetric"]), label=label)
    ax.set_xlabel("axial strain (%)")
    ax.set_ylabel("volumetric strain (%, compression > 0)")
    ax.legend()
    save_figure(fig, out / "volume.png", announce=announce)
    fig, axes = new_figure(1, 2, width=10)
    axes[0].plot(100 * np.asarray(series["strain_axial"]), series["mean_history_length"], label="mean")
    axes[0].plot(100 * np.asarray(series["strain_axial"]), series["max_history_length"], label="max")
    axes[0].set_xlabel("axial strain (%)")
    axes[0].set_ylabel("history length (points per contact)")
    axes[0].legend()
    axes[1].plot(100 * np.asarray(series["strain_axial"]), series["contacts"])
    axes[1].set_xlabel("axial strain (%)")
    axes[1].set_ylabel("contacts")
    save_figure(fig, out / "history.png", announce=announce)


def summarize(rows, law, n, steps, steps_per_s, kinds=None):
    """The test's summary; kinds: {kind name: count} (default: n spheres)."""
    kinds = {"sphere": int(n)} if kinds is None else kinds
    if not rows or np.all(np.isnan([r["stress_ratio"] for r in rows])):
        # a restart that ran no output step into a fresh folder (e.g. past the test's end)
        return {"law": law, "n_particles": int(n), "kinds": kinds, "steps": int(steps), "peak_stress_ratio": None,
                "peak_strain": None, "mean_contacts": None, "mean_history_length": None,
                "max_mean_history_length": None, "strain_at_max_mean_history": None, "max_store_bytes": None,
                "final_void_ratio": None, "steps_per_s": float(steps_per_s)}
    ratio = np.array([r["stress_ratio"] for r in rows])
    k = int(np.nanargmax(ratio))
    hist = np.array([r["mean_history_length"] for r in rows])
    kh = int(np.argmax(hist))
    return {"law": law, "n_particles": int(n), "kinds": kinds, "steps": int(steps),
            "peak_stress_ratio": float(ratio[k]), "peak_strain": float(rows[k]["strain_axial"]),
            "mean_contacts": float(np.mean([r["contacts"] for r in rows[1:] or rows])),
            "mean_history_length": float(np.mean([r["mean_history_length"] for r in rows[1:] or rows])),
            # Kuhn's Table 1 quotes the mean at the moment of maximum memory, not the time mean
            "max_mean_history_length": float(hist[kh]),
            "strain_at_max_mean_history": float(rows[kh]["strain_axial"]),
            "max_store_bytes": int(max(r["store_bytes"] for r in rows)),
            "final_void_ratio": float(rows[-1]["void_ratio"]),
            "steps_per_s": float(steps_per_s)}


def run_demo(out, n=512, steps=20000, law="jaeger", announce=print):
    """The default demonstration: a small biaxial test (a few minutes) with plots, VTK and summary.json."""
    from ..io.timeseries import read_timeseries
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sim = prepared_packing(n, seed=1, cache=out / "packing.h5", announce=announce)
    test = start_test(sim, law, steps=steps)
    if announce:
        announce(f"biaxial test, law {law}: {n} spheres, {steps} steps to "
                 f"{100 * test['total_strain']:.0f} % axial strain; {dt_line(sim)}")
    rows, rate = run_test(sim, test, out=out, output_interval=max(steps // 100, 1),
                          vtk_interval=max(steps // 10, 1), quiet=announce is None)
    plot_results(read_timeseries(out / "series.csv"), out, law, announce=announce)
    summary = summarize(rows, law, n, steps, rate)
    summary["runtime_s"] = time.perf_counter() - t0
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if announce:
        announce(f"peak stress ratio {summary['peak_stress_ratio']:.3f} at {100 * summary['peak_strain']:.2f} % "
                 f"strain; {summary['mean_contacts']:.0f} contacts; {rate:.0f} steps/s; wrote {out / 'summary.json'}")
    return summary

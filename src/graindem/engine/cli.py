"""`graindem run`: run a scenario file, or continue a run from its checkpoint.

    graindem run SCENARIO.toml --out DIR [--steps N]
    graindem run --restart DIR/checkpoint.h5 --out DIR [--steps N]

A mixture of spheres and shaped grains (particles.kind = "mixture") runs the biaxial (or
isotropic) test in the periodic cell (its packing prepared by scenarios.mixed_biaxial), or the pile
scenario of scenarios.mixed_pile, with its own outputs. Deformable grains (particles.kind =
"deformable") run the biaxial or isotropic test in the periodic cell (scenarios.deformable_biaxial);
a file of simulation.scenario = "deformable_compaction" has that scenario's own schema and driver.

The results folder gets series.csv/.jsonl/.json, VTK files (particles.pvd, contacts.pvd), PNG
plots, checkpoint.h5 (everything needed to continue bit for bit) and summary.json. The prepared
packing is kept as DIR/packing.h5 and reused by later runs into the same folder with the same
particle settings (or, with particles.file, the same CSV). simulation.checkpoint_interval adds
periodic checkpoints (the same file, replaced atomically); --adaptive-dt (simulation.adaptive_dt)
keeps dt at dt_fraction of the current critical step. A run that goes unstable writes
DIR/diverged.h5 and exits with status 3 (diverged.h5 holds the half-finished step: it is for
inspection, `--restart` refuses it).

Faults: the results folder is checked writable (with room for the checkpoint) before any work;
SIGINT or SIGTERM stop the run at the end of a step, write checkpoint.h5 and flushed series, and
exit with status 130 (`--restart` then continues bit for bit); a full disk, an unwritable folder
or an exhausted history store stop the run with a checkpoint where one can still be written, and
otherwise leave the last good checkpoint intact (every checkpoint is replaced atomically).

Run identity: a scenario run draws a run id, kept in its checkpoints and in DIR/run.json;
restarting into a folder whose series belong to another run is refused.
"""

import json
import sys
import time
import uuid
from pathlib import Path

# files graindem writes into a results folder atomically (their leftover temporaries are removed)
OUTPUT_FILES = ("checkpoint.h5", "diverged.h5", "packing.h5", "series.json", "summary.json", "run.json",
                "series.csv", "series.jsonl", "particles.pvd", "grains.pvd", "contacts.pvd")
RUN_FILE = "run.json"
# bytes a checkpoint needs per particle, an upper estimate (state, ~8 pair rows, history points)
CHECKPOINT_BYTES_PER_PARTICLE = 8192


def add_arguments(parser):
    parser.add_argument("scenario", nargs="?", help="scenario file (TOML); see README for the format")
    parser.add_argument("--out", required=True, help="results folder")
    parser.add_argument("--steps", type=int, default=None, help="time steps to run (default: the scenario's)")
    parser.add_argument("--restart", default=None, help="continue from this checkpoint instead of a scenario")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument("--adaptive-dt", action="store_true",
                        help="keep dt at dt_fraction of the current critical step (simulation.adaptive_dt)")


def prepare_output_folder(out, need_bytes=0):
    """Check `out` writable with `need_bytes` free and remove temporaries a killed writer left."""
    from ..io.outputs import check_output_folder, remove_stale_temp_files
    out = check_output_folder(out, what="--out", need_bytes=need_bytes)
    remove_stale_temp_files(out, OUTPUT_FILES)
    return out


def resume_scenario(checkpoint_path, out, tag, steps=None, quiet=False):
    """(sim, state, out, n) to continue the scenario saved under extra[tag] of a checkpoint: the
    Simulation, the scenario's state, the prepared results folder and the steps to run (`steps`, or
    what is left of the scenario's simulation.steps)."""
    from . import checkpoint
    out = prepare_output_folder(out)
    sim, extra = checkpoint.load(checkpoint_path, for_restart=True)
    state = extra[tag]
    done = sim.step_count - state["start_step"]
    n = max(0, state["config"]["simulation"]["steps"] - done) if steps is None else int(steps)
    if not quiet:
        print(f"restarting from {checkpoint_path} at step {done}", flush=True)
    return sim, state, out, n


def run_with_series(sim, state, out, steps, quiet, tag, columns, row_of, desc, shown=(), on_output=None):
    """Run `steps` steps of a scenario whose settings are state["config"]: at every
    simulation.output_interval steps (counted from state["start_step"]) a row of out/series.csv
    (`columns`, the values row_of(sim); appended to an existing series), the progress line (with the
    columns named in `shown`), on_output(sim, steps done) and, at every
    simulation.checkpoint_interval steps and at the end, out/checkpoint.h5 with extra[tag] = state.
    Returns the seconds the steps took."""
    import csv
    from . import checkpoint
    from ..io.progress import Progress
    sim_cfg = state["config"]["simulation"]
    series = Path(out) / "series.csv"
    new = not series.exists()
    start = state["start_step"]
    every, ckpt = sim_cfg["output_interval"], sim_cfg["checkpoint_interval"]
    with open(series, "a", newline="") as fh:
        writer = csv.writer(fh)
        if new:
            writer.writerow(columns)
        progress = Progress(int(steps), desc=desc, quiet=quiet)
        first = sim.step_count

        def output(s):
            row = row_of(s)
            writer.writerow([f"{v:.10g}" if isinstance(v, float) else v for v in row])
            fh.flush()
            progress.update(s.step_count - first - progress.n, **{k: row[columns.index(k)] for k in shown})
            if on_output is not None:
                on_output(s, s.step_count - start)
            if ckpt and (s.step_count - start) % ckpt == 0:
                checkpoint.save(s, Path(out) / "checkpoint.h5", extra={tag: state})

        t0 = time.perf_counter()
        with progress:
            sim.run(steps, callback=output, every=every, phase=start)
            progress.update(sim.step_count - first - progress.n)
        seconds = time.perf_counter() - t0
    checkpoint.save(sim, Path(out) / "checkpoint.h5", extra={tag: state})
    return seconds


def _write_run_identity(out, run_id):
    from .. import __version__
    from ..io.outputs import atomic_write_text
    atomic_write_text(Path(out) / RUN_FILE, json.dumps({"run_id": run_id, "graindem_version": __version__}) + "\n")


def read_run_identity(out):
    """The run id recorded in folder `out` (None if it records none)."""
    path = Path(out) / RUN_FILE
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        return doc["run_id"] if isinstance(doc, dict) and isinstance(doc.get("run_id"), str) else None
    except (OSError, ValueError):
        return None


def _save_state(sim, test, out):
    """Write out/checkpoint.h5 from a state that is complete (validated first, so a damaged state
    never replaces the last good checkpoint). Returns its path, or None with the reason."""
    from ..io.checkpoint_check import validate_state
    from . import checkpoint
    try:
        arrays, meta = sim.state_dict()
        validate_state(arrays, meta, source="the state to save")
        return checkpoint.save(sim, Path(out) / "checkpoint.h5", extra={"biaxial": test}), None
    except (ValueError, OSError, MemoryError) as exc:
        return None, str(exc)


def drive_test(sim, test, out, **kwargs):
    """B.run_test with the faults of a long run turned into a checkpoint and a one-line message."""
    from ..scenarios import biaxial as B
    from .interrupts import RunStopped
    out = Path(out)
    restart_hint = f"continue with: graindem run --restart {out / 'checkpoint.h5'} --out {out}"
    try:
        return B.run_test(sim, test, out=out, **kwargs)
    except RunStopped as exc:
        path, why = _save_state(sim, test, out)
        where = f"checkpoint written to {path}; {restart_hint}" if path else f"no checkpoint written ({why})"
        raise RunStopped(exc.signal, exc.step, f"{exc}; {where}") from None
    except MemoryError as exc:
        # the history store could not grow: the state is the end of a complete step, save it
        step = sim.step_count - test["start_step"]
        path, why = _save_state(sim, test, out)
        tail = (f"checkpoint of step {step} written to {path}; {restart_hint}" if path else
                f"no new checkpoint ({why}); the last good checkpoint in {out} is intact")
        raise RunFailed(f"the run stopped at step {step} of the test: out of memory: {exc}; {tail}") from exc
    except OSError as exc:
        # an output could not be written: no new checkpoint (its series row may be missing or torn);
        # the last one, written after a complete row, stays as it was (checkpoints replace atomically)
        from ..io.outputs import is_disk_full
        from ..core import layout as K
        from .simulation import Diverged
        step = sim.step_count - test["start_step"]
        what = "disk full" if is_disk_full(exc) else f"cannot write: {exc.strerror or exc}"
        if int(sim.out[K.OUT_STATUS]) == K.STATUS_DIVERGED:  # the report outlives a failed diverged.h5
            raise Diverged(f"run diverged at step {step} of the test; writing {out / 'diverged.h5'} failed "
                           f"({what}); the last good checkpoint {out / 'checkpoint.h5'} is intact") from exc
        raise RunFailed(f"the run stopped at step {step} of the test: {what} ({exc.filename or out}); the last "
                        f"good checkpoint {out / 'checkpoint.h5'} is intact; free space and {restart_hint}") from exc


class RunFailed(RuntimeError):
    """A run stopped by a fault outside its input (disk, memory); the message says what was saved."""


def _announce(quiet):
    return None if quiet else (lambda msg: print(msg, flush=True))


def run_scenario(config, out, steps=None, quiet=False):
    """Run a validated scenario config (io.scenario) into folder `out`; returns the summary dict."""
    from ..particles.size_distribution import from_particles_config
    from ..scenarios import biaxial as B
    sim_cfg = config["simulation"]
    if sim_cfg["scenario"] != "biaxial":
        raise ValueError(f"simulation.scenario = {sim_cfg['scenario']!r} is not run by `graindem run` "
                         "(it runs 'biaxial'); use that scenario's own command")
    levelset = config["particles"]["kind"] == "levelset"
    mixture = config["particles"]["kind"] == "mixture"
    deformable = config["particles"]["kind"] == "deformable"
    if config["boundary"]["kind"] != "periodic":
        raise ValueError("boundary.kind must be 'periodic' for the biaxial scenario (walls are not supported there yet)")
    load = config["loading"]
    if load["kind"] == "none":
        raise ValueError("loading.kind = 'none' has nothing to run in the biaxial scenario; use 'biaxial' or 'isotropic'")
    from ..io.scenario import refuse_unused_keys
    refuse_unused_keys(config)
    mat = config["material"]
    part = config["particles"]
    announce = _announce(quiet)
    # particles for the free-space estimate (a CSV row holds at least ~20 characters)
    n_guess = part["n"] if not part["file"] else max(1, Path(part["file"]).stat().st_size // 20
                                                    if Path(part["file"]).is_file() else 1)
    out = prepare_output_folder(out, need_bytes=2 * CHECKPOINT_BYTES_PER_PARTICLE * n_guess + (1 << 20))
    t0 = time.perf_counter()
    material = {"E": mat["E"], "nu": mat["nu"], "density": mat["density"], "mu": mat["mu"]}
    more = config.get("materials") or {}
    materials = {k: list(v) for k, v in more.items()} if more.get("E") else None
    restitution = mat["restitution"] if mat["restitution"] < 1.0 else None
    if levelset:
        from ..scenarios.levelset_biaxial import prepared_grains
        sim = prepared_grains(config, cache=out / "packing.h5", announce=announce)
    elif mixture:
        from ..scenarios.mixed_biaxial import prepared_mixture
        sim = prepared_mixture(config, cache=out / "packing.h5", announce=announce)
    elif deformable:
        from ..scenarios.deformable_biaxial import prepared_deformable
        sim = prepared_deformable(config, cache=out / "packing.h5", announce=announce)
    elif part["file"]:
        sim = packing_from_file(part["file"], config["boundary"]["box"], material, load["confining_stress"],
                                materials=materials,
                                cache=out / "packing.h5", mu_prep=load["preparation_mu"],
                                dt_fraction=sim_cfg["dt_fraction"] or 0.2, dt=sim_cfg["dt"],
                                allow_unstable_dt=sim_cfg["allow_dt_above_critical"], restitution=restitution,
                                max_initial_overlap=part["max_initial_overlap"], announce=announce)
    else:
        sim = B.prepared_packing(part["n"], seed=sim_cfg["seed"], pressure=load["confining_stress"],
                                 cache=out / "packing.h5", radius=part["radius_mean"], spread=part["radius_spread"],
                                 material=material, mu_prep=load["preparation_mu"], announce=announce,
                                 dt_fraction=sim_cfg["dt_fraction"] or 0.2, dt=sim_cfg["dt"],
                                 allow_unstable_dt=sim_cfg["allow_dt_above_critical"], restitution=restitution,
                                 materials=materials, distribution=from_particles_config(part))
    sim.verbose = announce is not None  # dt changes of the adaptive step are announced through sim.message
    if sim_cfg["adaptive_dt"]:
        sim.set_adaptive_dt(True, sim_cfg["adaptive_dt_interval"])
        if sim.step_count % sim.adaptive_dt_interval == 0:
            # the update the run would make at its first step, made before the test fixes its
            # strain rate from dt (a restart repeats it: same state, same value)
            sim.adapt_dt()
    nsteps = sim_cfg["steps"]  # the test's length (sets the strain rate); `steps` is how far to run now
    run_steps = nsteps if steps is None else int(steps)
    law = config["contact"]["law"]
    if levelset:
        shape_law = config["contact"]["shape_law"]
        law = config["grains"]["law"] if shape_law == "area" else f"{shape_law} ({law})"
    elif mixture:
        law = f"{law} (spheres), {config['grains']['law']} (grains, grain-sphere)"
    elif deformable:
        law = f"deformable node penalty ({config['deformable']['pullback']} pull-back)"
    if load["kind"] == "isotropic":
        summary = {"law": law, "n_particles": sim.n_bodies, "kinds": sim.kinds, "steps": sim.step_count,
                   **{k: v for k, v in sim.measure().items() if k in ("pressure", "void_ratio", "coordination",
                                                                        "n_contacts")}}
        from ..io.outputs import atomic_write_text
        atomic_write_text(out / "summary.json", json.dumps(summary, indent=2))
        return summary
    total_strain = load["total_strain"]
    if load["strain_rate"] is not None:
        total_strain = 1.0 - __import__("math").exp(-load["strain_rate"] * nsteps * sim.dt)
    test = B.start_test(sim, law, xi=config["contact"]["xi"], steps=nsteps,
                        total_strain=total_strain, axis=load["axis"], stress_axis=load["stress_axis"],
                        pressure=load["confining_stress"], local_damping=mat["damping"])
    if not deformable:   # deformable grains take no rolling resistance (refused in the file)
        apply_rolling(sim, config["contact"], config.get("materials"))
    if load["shear_rate"] is not None:
        for plane, rate in zip(sim.SHEAR_PLANES, load["shear_rate"]):
            if rate != 0.0:
                sim.control_shear(plane, strain_rate=rate)
    test["config"] = config
    test["run_id"] = uuid.uuid4().hex
    _write_run_identity(out, test["run_id"])
    if announce:
        announce(B.dt_line(sim))
        names = {"sphere": "spheres", "levelset": "level-set grains", "deformable": "deformable grains"}
        what = ", ".join(f"{v} {names[k]}" for k, v in sim.kinds.items())
        announce(f"biaxial test, law {test['law']}: {what}, {nsteps} steps to "
                 f"{100 * total_strain:.2f} % axial strain")
    rows, rate = drive_test(sim, test, out, steps=run_steps, output_interval=sim_cfg["output_interval"],
                        vtk_interval=(sim_cfg["vtk_interval"] or sim_cfg["output_interval"]) if config["output"]["vtk"] else 0,
                        quiet=quiet, checkpoint_interval=sim_cfg["checkpoint_interval"])
    return _finish(sim, test, out, rate, t0, announce, config)


def apply_rolling(sim, contact, materials):
    """The scenario's rolling and twisting resistance ([contact] rolling_*, twisting_*; per pair
    materials.pair_rolling_friction), from the start of the test on (the preparation runs without)."""
    rolling = None
    if contact["rolling_friction"] > 0.0:
        rolling = {"mu_r": contact["rolling_friction"], "damping": contact["rolling_damping"],
                   "stiffness": contact["rolling_stiffness"]}
    twisting = {"damping": contact["twisting_damping"]} if contact["twisting"] else None
    sim.set_rolling(rolling, twisting)
    pr = (materials or {}).get("pair_rolling_friction") or []
    for t in range(0, len(pr), 3):
        pair = None if pr[t + 2] == 0.0 else {"mu_r": pr[t + 2], "damping": contact["rolling_damping"],
                                               "stiffness": contact["rolling_stiffness"]}
        sim.set_pair_rolling(int(pr[t]), int(pr[t + 1]), pair, twisting)


def read_packing_csv(path, with_materials=False):
    """(positions (n, 3), radii (n,)) from a CSV of x,y,z,r rows (m); one header line is allowed.
    An optional fifth column gives each sphere's material index; with_materials=True also returns
    them (zeros without that column)."""
    import numpy as np
    from ..io.numeric_csv import read_numeric_csv
    path = Path(path)
    data, skip = read_numeric_csv(path, "particles.file", "x,y,z,r")
    if data.shape[0] == 0 or data.shape[1] not in (4, 5):
        raise ValueError(f"particles.file {str(path)!r} must hold rows of 4 numbers x,y,z,r (and optionally a "
                         f"fifth, the material index); got shape {data.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(data), axis=1) | (data[:, 3] <= 0.0))
    if bad.size:
        raise ValueError(f"particles.file {str(path)!r}: line {int(bad[0]) + 1 + skip} must have finite x,y,z "
                         f"and r > 0; got {data[bad[0]].tolist()}")
    mats = np.zeros(data.shape[0], dtype=np.int64)
    if data.shape[1] == 5:
        col = data[:, 4]
        bad = np.flatnonzero((col != np.round(col)) | (col < 0))
        if bad.size:
            raise ValueError(f"particles.file {str(path)!r}: line {int(bad[0]) + 1 + skip}: the fifth column must be "
                             f"a material index (an integer >= 0); got {col[bad[0]]!r}")
        mats = col.astype(np.int64)
    if with_materials:
        return data[:, :3].copy(), data[:, 3].copy(), mats
    return data[:, :3].copy(), data[:, 3].copy()


def packing_from_file(path, box, material, pressure, cache=None, mu_prep=0.0, dt_fraction=0.2, dt=None,
                      allow_unstable_dt=False, restitution=None, max_initial_overlap=0.05, announce=None,
                      strain_per_step=2e-5, tolerance=0.005, unbalanced=1e-3, check_every=500, max_steps=200000,
                      materials=None):
    """A periodic packing read from a CSV (read_packing_csv), brought to the isotropic `pressure` by
    the cell's stress servo as engine.prepare does for random packings, cached in `cache`.

    box: cell edge lengths (m), the cell spanning [0, box); None: the spheres' bounding box.
    """
    import hashlib
    import numpy as np
    from ..contact.hertz import contact_params
    from ..engine import checkpoint
    from ..engine.simulation import Simulation
    from ..engine.prepare import add_materials, restore_friction
    from ..io.progress import PreparationProgress
    pos, r, mats = read_packing_csv(path, with_materials=True)
    nmat = 1 + (len(materials["E"]) if materials else 0)
    if mats.size and mats.max() >= nmat:
        raise ValueError(f"particles.file {str(path)!r}: material index {int(mats.max())} is not defined "
                         f"(materials 0..{nmat - 1}: [material] and the lists of [materials])")
    want = {"file_sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(), "box": box,
            "material": dict(material), "pressure": pressure, "mu_prep": mu_prep, "dt_fraction": dt_fraction,
            "dt": dt, "restitution": restitution}
    if materials:
        want["materials"] = materials
    sim = checkpoint.load_if_same(cache, "packing_file", want)
    if sim is not None:
        if announce:
            announce(f"reusing the packing {cache} prepared from {path}")
        return sim
    if box is None:
        lo = (pos - r[:, None]).min(axis=0)
        L = (pos + r[:, None]).max(axis=0) - lo
        pos = pos - lo
    else:
        L = np.asarray(box, dtype=np.float64)
    pos = np.mod(pos, L)  # periodic cell [0, L): wrap spheres given outside it
    # dt at the overlap of a contact carrying ~ 20 p d^2, as engine.prepare does
    prm = contact_params(r.min(), r.min(), material["E"], material["nu"], material["mu"], 0.0)
    overlap = (20.0 * pressure * (2.0 * r.max()) ** 2 / prm[0]) ** (2.0 / 3.0)
    sim = Simulation(law="mindlin", E=material["E"], nu=material["nu"], mu=mu_prep, density=material["density"],
                     local_damping=0.7, dt_fraction=dt_fraction, dt=dt, allow_unstable_dt=allow_unstable_dt,
                     restitution=restitution, reference_overlap=overlap, max_initial_overlap=max_initial_overlap)
    sim.set_box((0.0, 0.0, 0.0), L, periodic=(True, True, True))
    sim.add_particles(pos, r, material=add_materials(sim, materials, len(r), mu_prep=mu_prep, material_of=mats))
    sim.setup()
    rate = strain_per_step / sim.dt
    for k in range(3):
        sim.control_axis(k, stress=pressure, gain=rate, max_rate=rate)
    good = 0
    bar = PreparationProgress(pressure, quiet=announce is None, desc="bringing the packing to the pressure")
    with bar:
        while good < 2:
            if sim.step_count >= max_steps:
                m = sim.measure()
                raise RuntimeError(f"the packing from {path} did not settle at {pressure} Pa within {max_steps} "
                                   f"steps (pressure {m['pressure']:.4g} Pa)")
            sim.run(check_every)
            m = sim.measure()
            bar.callback(sim, m)
            ok = abs(m["pressure"] / pressure - 1.0) < tolerance and m["unbalanced_force_ratio"] < unbalanced
            good = good + 1 if ok else 0
    restore_friction(sim, material["mu"], materials)
    for k in range(3):
        sim.control_axis(k, strain_rate=0.0)
    if announce:
        announce(f"brought {sim.n} spheres from {path} to {pressure:.4g} Pa in {sim.step_count} steps: "
                 f"void ratio {m['void_ratio']:.3f}, coordination {m['coordination']:.2f}")
    if cache is not None:
        checkpoint.save(sim, cache, extra={"packing_file": want})
    return sim


def _finish(sim, test, out, rate, t0, announce, config):
    from ..io.timeseries import read_timeseries
    from ..scenarios import biaxial as B
    series = read_timeseries(out / "series.csv")
    rows = [dict(zip(series.keys(), vals)) for vals in zip(*series.values())]
    if config is None or config["output"]["plots"]:
        B.plot_results(series, out, test["law"], announce=announce)
    summary = B.summarize(rows, test["law"], sim.n_bodies, sim.step_count - test["start_step"], rate, kinds=sim.kinds)
    summary["runtime_s"] = time.perf_counter() - t0
    from ..io.outputs import atomic_write_text
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2))
    if announce and summary["peak_stress_ratio"] is None:
        announce(f"no output step in this run ({rate:.0f} steps/s); wrote {out / 'summary.json'}")
    elif announce:
        announce(f"peak stress ratio {summary['peak_stress_ratio']:.3f}; {summary['mean_contacts']:.0f} contacts; "
                 f"{rate:.0f} steps/s; wrote {out / 'summary.json'}")
    return summary


def restart(checkpoint_path, out, steps=None, quiet=False):
    """Continue the biaxial run saved in `checkpoint_path` for `steps` more steps (default: to its end)."""
    from ..engine import checkpoint
    announce = _announce(quiet)
    t0 = time.perf_counter()
    size = Path(checkpoint_path).stat().st_size if Path(checkpoint_path).exists() else 0
    out = prepare_output_folder(out, need_bytes=3 * size + (1 << 20))
    sim, extra = checkpoint.load(checkpoint_path, for_restart=True)
    if not extra or "biaxial" not in extra:
        raise ValueError(f"{checkpoint_path} holds no biaxial run to continue (a prepared packing? run a scenario)")
    test = extra["biaxial"]
    config = test.get("config")
    resume = (out / "series.csv").exists()
    folder_run = read_run_identity(out)
    if resume and folder_run != test.get("run_id"):
        raise ValueError(f"--out {str(out)!r} holds the series of another run (run id {folder_run}) than the "
                         f"checkpoint {str(checkpoint_path)!r} (run id {test.get('run_id')}); restart into an empty "
                         "folder or the run's own one")
    if not resume:
        test["run_id"] = test.get("run_id") or uuid.uuid4().hex
        _write_run_identity(out, test["run_id"])
    sim.verbose = announce is not None
    vtk_interval = 0
    output_interval = 1000
    checkpoint_interval = 0
    if config is not None:
        output_interval = config["simulation"]["output_interval"]
        checkpoint_interval = config["simulation"].get("checkpoint_interval") or 0
        if config["output"]["vtk"]:
            vtk_interval = config["simulation"]["vtk_interval"] or output_interval
    if announce:
        announce(f"restarting from {checkpoint_path} at step {sim.step_count - test['start_step']} of the test")
    rows, rate = drive_test(sim, test, out, steps=steps, output_interval=output_interval,
                        vtk_interval=vtk_interval, quiet=quiet, resume=resume, checkpoint_interval=checkpoint_interval)
    return _finish(sim, test, out, rate, t0, announce, config)


def run(args):
    """`graindem run`: returns 0, or 2 for bad arguments; other failures raise (graindem.cli maps
    them to exit codes: bad input 2, divergence 3, interrupt 130, disk/memory 1)."""
    from .interrupts import StopRequests
    from ..io.scenario import apply_overrides, load_scenario
    if (args.scenario is None) == (args.restart is None):
        print("graindem run: give a scenario file or --restart CHECKPOINT (one of them)", file=sys.stderr)
        return 2
    if args.restart is not None and args.adaptive_dt:
        print("graindem run: --adaptive-dt applies to a scenario run; a restart keeps the checkpoint's setting",
              file=sys.stderr)
        return 2
    if args.steps is not None and args.steps < 0:
        print(f"graindem run: --steps must be >= 0, got {args.steps}", file=sys.stderr)
        return 2
    with StopRequests():  # SIGINT/SIGTERM from here on stop at the end of a step (engine.interrupts)
        # ---- deformable grains: scenarios.deformable_compaction has its own schema and driver
        from ..scenarios import deformable_compaction as deformable
        if args.restart is not None and deformable.is_checkpoint(args.restart):
            deformable.restart(args.restart, args.out, steps=args.steps, quiet=args.quiet)
            return 0
        if args.scenario is not None and deformable.is_scenario_file(args.scenario):
            if args.adaptive_dt:
                print("graindem run: --adaptive-dt does not apply to deformable grains", file=sys.stderr)
                return 2
            deformable.run_file(args.scenario, args.out, steps=args.steps, quiet=args.quiet)
            return 0
        # ---- end of deformable grains
        from ..scenarios import mixed_pile
        if args.restart is not None:
            if mixed_pile.is_checkpoint(args.restart):
                mixed_pile.restart(args.restart, args.out, steps=args.steps, quiet=args.quiet)
            else:
                restart(args.restart, args.out, steps=args.steps, quiet=args.quiet)
        else:
            config = load_scenario(args.scenario)
            if args.adaptive_dt:
                config = apply_overrides(config, {"simulation.adaptive_dt": True})
            if mixed_pile.is_config(config):
                mixed_pile.run_config(config, args.out, steps=args.steps, quiet=args.quiet)
            else:
                run_scenario(config, args.out, steps=args.steps, quiet=args.quiet)
    return 0
